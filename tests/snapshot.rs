//! Snapshot and restore (issue 17). A run that goes on from a snapshot
//! gives the same console bytes and the same counts, from the cut on, as
//! the run that never stopped — on 1 and 4 harts, on the atomic and the
//! in-order model. The snapshot is taken at the workload's first phase
//! marker, after Linux has booted, so the restored run does the workload only.
//!
//! What may differ, by design: host times; counters the observation layer
//! keeps (traps by cause, system calls) for the phases begun before the
//! cut (a restored run observes from the cut); and the time of a system
//! call in flight at the cut (its entry was not observed).

use crate::support;

use support::*;

const CUT: &str = "shell banner";

struct Run {
    console: Vec<u8>,
    stats: serde_json::Value,
    stderr: String,
}

fn run(args: &[&str], dir: &Scratch, stats: &str) -> Run {
    let path = dir.path(stats);
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--stats-json", path.to_str().unwrap()]);
    let out = hartscope(&all, dir, BOOT_DEADLINE);
    assert_workload_finished(&out, 0);
    Run {
        console: out.stdout,
        stats: guest_stats(&std::fs::read_to_string(&path).unwrap()),
        stderr: out.stderr,
    }
}

/// The run's summary without the observation layer's counters.
fn summary(s: &serde_json::Value) -> serde_json::Value {
    let mut s = s.clone();
    s.as_object_mut().unwrap().remove("stats");
    s
}

/// Phase `i`'s counters by name, leaving out the times of system calls.
fn phase_stats(s: &serde_json::Value, i: usize) -> Vec<(String, String)> {
    s["stats"]["phases"][i]["stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["name"].as_str().unwrap().to_string(),
                x["value"].to_string(),
            )
        })
        .filter(|(n, _)| !n.contains("syscallCycles") && !n.contains("syscallMeanCycles"))
        .collect()
}

fn boot_args<'a>(smp: &'a str, machine: Option<&'a str>, workload: &'a str) -> Vec<&'a str> {
    let mut a = vec![
        "boot",
        "--image",
        "debian",
        "--smp",
        smp,
        "--workload",
        workload,
    ];
    if let Some(m) = machine {
        a.extend(["--machine", m]);
    }
    a
}

/// Run the workload whole, writing a snapshot at [`CUT`] on the way, then
/// go on from the snapshot; both must agree from the cut on.
fn cut_and_restore(name: &str, smp: usize, machine: Option<&str>) -> (Scratch, Run, Run) {
    let _ = image("debian");
    let dir = Scratch::new(&format!("snapshot-{name}"));
    let workload = root().join("guest/workloads/p87-shell");
    let machine = machine.map(|m| root().join(m).to_str().unwrap().to_string());
    let smp = smp.to_string();
    let snap = dir.path("cut.snap");
    let mut whole = boot_args(&smp, machine.as_deref(), workload.to_str().unwrap());
    whole.extend([
        "--snapshot-at",
        CUT,
        "--snapshot-out",
        snap.to_str().unwrap(),
        "--continue-after-snapshot",
    ]);
    let a = run(&whole, &dir, "whole.json");
    assert!(a.stderr.contains("snapshot at cycle"), "{}", a.stderr);
    let c = run(
        &["boot", "--restore", snap.to_str().unwrap()],
        &dir,
        "restored.json",
    );
    assert!(
        c.stderr.contains("timing model warm"),
        "the same model description keeps its state: {}",
        c.stderr
    );

    // Console: the restored run prints exactly what the whole run printed after the cut.
    let (whole_text, rest_text) = (
        String::from_utf8_lossy(&a.console),
        String::from_utf8_lossy(&c.console),
    );
    assert!(
        rest_text.contains("p87 workload done") && !rest_text.contains("Linux version"),
        "the restored run did the workload, not the boot:\n{rest_text}"
    );
    assert!(
        a.console.ends_with(&c.console),
        "the restored run's console is not the end of the whole run's:\n--- whole (last 600 bytes)\n{}\n--- restored (last 600 bytes)\n{}",
        &whole_text[whole_text.len().saturating_sub(600)..],
        &rest_text[rest_text.len().saturating_sub(600)..]
    );

    // Counts: cycles, instructions, phases, devices, per hart (host-side
    // slow-path counters too: the host caches are rebuilt as they were).
    let diffs = json_differences(&summary(&a.stats), &summary(&c.stats), 10);
    assert!(
        diffs.is_empty(),
        "counts differ after a restore:\n{}",
        diffs.join("\n")
    );
    assert_eq!(
        a.stats["harts"].as_array().unwrap().len(),
        smp.parse::<usize>().unwrap()
    );

    // Observed counters of every phase begun after the cut.
    let phases = a.stats["phases"].as_array().unwrap();
    let cut = phases.iter().position(|p| p["label"] == CUT).unwrap();
    // (stats phases start with the boot phase: marker k is stats phase k + 1)
    let first = cut + 2;
    assert!(
        phases.len() + 1 - first >= 5,
        "few phases after the cut: {}",
        phases.len()
    );
    for i in first..=phases.len() {
        let (x, y) = (phase_stats(&a.stats, i), phase_stats(&c.stats, i));
        assert!(x.len() > 20, "phase {i} has few counters: {x:?}");
        let differ: Vec<_> = x.iter().filter(|s| !y.contains(s)).take(5).collect();
        assert!(
            differ.is_empty(),
            "phase {i}: whole run has {differ:?}; restored: {y:?}"
        );
    }
    (dir, a, c)
}

#[test]
fn atomic_1_hart_restores_exactly_and_the_snapshot_changes_nothing() {
    let (dir, a, _) = cut_and_restore("atomic-1", 1, None);
    // Writing a snapshot on the way did not change the run.
    let workload = root().join("guest/workloads/p87-shell");
    let plain = run(
        &boot_args("1", None, workload.to_str().unwrap()),
        &dir,
        "plain.json",
    );
    assert_eq!(
        plain.console, a.console,
        "a snapshot on the way changed the console"
    );
    let diffs = json_differences(&summary(&plain.stats), &summary(&a.stats), 10);
    assert!(
        diffs.is_empty(),
        "a snapshot on the way changed counts:\n{}",
        diffs.join("\n")
    );

    // Fast-forward, then measure: the atomic snapshot goes on under the in-order model.
    let snap = dir.path("cut.snap");
    let inorder = root().join("machines/inorder.toml");
    let d = run(
        &[
            "boot",
            "--restore",
            snap.to_str().unwrap(),
            "--machine",
            inorder.to_str().unwrap(),
        ],
        &dir,
        "switched.json",
    );
    assert!(d.stderr.contains("timing model cold"), "{}", d.stderr);
    // The same guest output, but for the kernel's timestamps (guest time runs slower).
    let untimed = |c: &[u8]| -> String {
        String::from_utf8_lossy(c)
            .lines()
            .map(|l| match (l.starts_with('['), l.find("] ")) {
                (true, Some(i)) => &l[i + 2..],
                _ => l,
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        untimed(&a.console).ends_with(&untimed(&d.console)) && d.console.len() > 1000,
        "another timing model, another guest output:\n{}",
        untimed(&d.console)
    );
    // CPI from the cut on (the boot before it ran on the atomic model in both).
    let cpi = |s: &serde_json::Value| {
        let cut = s["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["label"] == CUT)
            .unwrap();
        let c = s["cycles"].as_f64().unwrap() - cut["cycles"][0].as_f64().unwrap();
        let i = s["instret"].as_f64().unwrap() - cut["instret"][0].as_f64().unwrap();
        c / i
    };
    assert!(
        cpi(&d.stats) > cpi(&a.stats) + 0.5,
        "the in-order model charges more than one cycle an instruction after the switch: {} vs {}",
        cpi(&d.stats),
        cpi(&a.stats)
    );
}

#[test]
fn atomic_4_harts_restore_exactly() {
    cut_and_restore("atomic-4", 4, None);
}

#[test]
fn inorder_1_hart_restores_exactly_with_its_caches() {
    cut_and_restore("inorder-1", 1, Some("machines/inorder.toml"));
}

#[test]
fn inorder_4_harts_restore_exactly_with_their_caches() {
    cut_and_restore("inorder-4", 4, Some("machines/inorder.toml"));
}

#[test]
fn bad_snapshots_are_one_sentence_and_nothing_runs() {
    let dir = Scratch::new("snapshot-bad");
    let path = dir.path("junk.snap");
    std::fs::write(&path, b"HSSNAP\r\n\x01\x00\x00\x00garbage").unwrap();
    let out = hartscope(
        &["boot", "--restore", path.to_str().unwrap()],
        &dir,
        BOOT_DEADLINE,
    );
    assert_ne!(out.code(), Some(0));
    assert!(
        out.stderr.contains("junk.snap") && out.stderr.trim().lines().count() == 1,
        "{}",
        out.stderr
    );
    let missing = dir.path("none.snap");
    let out = hartscope(
        &["boot", "--restore", missing.to_str().unwrap()],
        &dir,
        BOOT_DEADLINE,
    );
    assert_ne!(out.code(), Some(0));
    assert!(out.stderr.contains("none.snap"), "{}", out.stderr);
    // The machine is the snapshot's: options that would build another are refused.
    let out = hartscope(
        &[
            "boot",
            "--restore",
            path.to_str().unwrap(),
            "--append",
            "quiet",
        ],
        &dir,
        BOOT_DEADLINE,
    );
    assert_ne!(out.code(), Some(0));
    assert!(out.stderr.contains("--append"), "{}", out.stderr);
}
