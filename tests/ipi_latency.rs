//! `studies/ipi-latency.toml`, scaled down (40 round trips instead of 200),
//! end to end on the `debian` image, each variant twice: the seed's
//! direction holds (delivered IPIs: microseconds; IPIs held until the
//! target's timer tick: about a tick), the timeline shows the cause, and the
//! repeats are identical (console, cycles, phases and the CLINT's IPI
//! counters). An image that is not built fails the test with the command
//! that builds it. Wall time here: 55 to 95 s of test time (2 cores, shared with other builds).

use std::path::{Path, PathBuf};
use std::process::Command;

fn studies() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../studies")
        .canonicalize()
        .unwrap()
}

/// The study file with fewer rounds and its relative paths made absolute.
fn scaled_study(dir: &Path) -> PathBuf {
    let s = studies();
    let text = std::fs::read_to_string(s.join("ipi-latency.toml")).unwrap();
    let mut scaled = text.clone();
    for (from, to) in [
        ("ROUNDS = \"200\"", "ROUNDS = \"40\"".to_string()),
        (
            "\"ipiping pipe: 200 round trips\"",
            "\"ipiping pipe: 40 round trips\"".to_string(),
        ),
        // 50 rounds (10 warm-up) of two held IPIs each.
        (
            "op = \">=\"\nvalue = 400",
            "op = \">=\"\nvalue = 80".to_string(),
        ),
        (
            "\"../machines/",
            format!(
                "\"{}/",
                s.join("../machines").canonicalize().unwrap().display()
            ),
        ),
        (
            "\"workloads/ipi-latency\"",
            format!("\"{}\"", s.join("workloads/ipi-latency").display()),
        ),
    ] {
        assert!(
            scaled.contains(from),
            "studies/ipi-latency.toml no longer has {from:?}: update this test"
        );
        scaled = scaled.replace(from, &to);
    }
    let path = dir.join("ipi-latency.toml");
    std::fs::write(&path, scaled).unwrap();
    path
}

/// `NAME VALUE UNIT` lines of a run's `metrics` channel.
fn metric(out: &Path, variant: &str, name: &str) -> f64 {
    let text = std::fs::read_to_string(out.join(variant).join("channels").join("metrics")).unwrap();
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("{variant}: no {name} in\n{text}"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn held_ipis_turn_microsecond_round_trips_into_timer_ticks() {
    if let Err(e) = hs_guest::find("debian") {
        panic!("{e}");
    }
    let dir = std::env::temp_dir().join(format!("hs-ipi-latency-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let study = scaled_study(&dir);
    let out_dir = dir.join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_hartscope"))
        .arg("study")
        .arg(&study)
        .arg("--db")
        .arg(dir.join("results.db"))
        .arg("--out")
        .arg(&out_dir)
        .args(["--jobs", "2", "--repeat", "2"])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let checks: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("PASS") || l.starts_with("FAIL") || l.starts_with("NOT RUN"))
        .collect();
    assert_eq!(
        checks.len(),
        3 + 13,
        "3 workload checks and the study's 13: {stdout}"
    );
    for c in &checks {
        assert!(c.starts_with("PASS"), "{c}\n{stdout}");
    }

    // The direction, from what the guest measured.
    let (a, b, c) = (
        metric(&out_dir, "A", "rtt_us.p50"),
        metric(&out_dir, "B", "rtt_us.p50"),
        metric(&out_dir, "C", "rtt_us.p50"),
    );
    assert!(a < 200.0, "delivered: {a} µs");
    assert!(
        (2_000.0..12_000.0).contains(&b),
        "held until the 4 ms tick: {b} µs"
    );
    assert!(b > 50.0 * a, "A {a} µs, B {b} µs");
    assert!(
        c > a + 150.0 && c < b,
        "a 100 µs delay each way: A {a}, C {c}, B {b}"
    );
    assert_eq!(metric(&out_dir, "A", "rounds"), 40.0);

    // The cause, from hartscope's own observations.
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    for s in [
        "## Guest-reported values",
        "| `rtt_us.p50` | us |",
        "## Cross-hart IPIs",
        "### B: timeline from the first IPI of phase `ipiping pipe`",
    ] {
        assert!(md.contains(s), "report.md has {s:?}:\n{md}");
    }
    assert!(
        md.contains("IPI released at this hart's timer tick"),
        "the excerpt shows the release at the tick:\n{md}"
    );
    for v in ["A", "B", "C"] {
        assert!(
            md.contains(&format!("| {v} | 2 | identical in every run |")),
            "{v} is deterministic:\n{md}"
        );
    }
    // The knob's own counters are the same in both runs of a variant too.
    let clint = |dir: &str| -> Vec<String> {
        let stats = std::fs::read_to_string(out_dir.join(dir).join("stats.txt")).unwrap();
        stats
            .lines()
            .filter(|l| l.starts_with("system.dev.clint."))
            .map(str::to_string)
            .collect()
    };
    for (v, r) in [("A", "A-r1"), ("B", "B-r1"), ("C", "C-r1")] {
        let (first, again) = (clint(v), clint(r));
        assert!(first.len() >= 11, "{v}: {first:?}");
        assert_eq!(
            first, again,
            "{v}: the CLINT counters differ between repeats"
        );
    }
    let held = |dir: &str| -> u64 {
        let line = clint(dir)
            .into_iter()
            .find(|l| l.starts_with("system.dev.clint.ipis_held_for_tick "))
            .unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    assert!(
        held("B") >= 80 && held("A") == 0 && held("C") == 0,
        "A {} B {} C {}",
        held("A"),
        held("B"),
        held("C")
    );
    let trace = std::fs::read_to_string(out_dir.join("B").join("trace.json")).unwrap();
    assert!(
        trace.contains("IPI released at this hart's timer tick"),
        "B's timeline marks the releases"
    );
    let trace_a = std::fs::read_to_string(out_dir.join("A").join("trace.json")).unwrap();
    assert!(!trace_a.contains("IPI released"), "A's knob holds nothing");
    let _ = std::fs::remove_dir_all(&dir);
}
