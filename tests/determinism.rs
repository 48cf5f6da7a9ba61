//! Determinism: the same workload run twice (at the same time, so host
//! scheduling differs between them) gives byte-identical console output and
//! identical guest counts: cycles, instret in total and per hart, phases,
//! device counters. Only the host-time fields may differ.

use crate::support;

use support::*;

struct Run {
    console: Vec<u8>,
    stats: serde_json::Value,
}

fn run_p87(image_name: &str, smp: usize, dir: &Scratch, n: usize) -> Run {
    let workload = root().join("guest/workloads/p87-shell");
    let stats = dir.path(&format!("stats-{n}.json"));
    let out = hartscope(
        &[
            "boot",
            "--image",
            image_name,
            "--smp",
            &smp.to_string(),
            "--workload",
            workload.to_str().unwrap(),
            "--stats-json",
            stats.to_str().unwrap(),
        ],
        dir,
        BOOT_DEADLINE,
    );
    assert_workload_finished(&out, 0);
    Run {
        console: out.stdout,
        stats: guest_stats(&std::fs::read_to_string(&stats).unwrap()),
    }
}

fn twice_identical(image_name: &str, smp: usize) {
    let _ = image(image_name);
    let dir = Scratch::new(&format!("determinism-{image_name}-{smp}"));
    let (a, b) = std::thread::scope(|s| {
        let first = s.spawn(|| run_p87(image_name, smp, &dir, 1));
        let second = s.spawn(|| run_p87(image_name, smp, &dir, 2));
        (first.join().unwrap(), second.join().unwrap())
    });

    if a.console != b.console {
        let (x, y) = (
            String::from_utf8_lossy(&a.console),
            String::from_utf8_lossy(&b.console),
        );
        let line = x
            .lines()
            .zip(y.lines())
            .position(|(p, q)| p != q)
            .unwrap_or(x.lines().count().min(y.lines().count()));
        panic!(
            "console output differs first at line {} ({} vs {} bytes):\n  run 1: {:?}\n  run 2: {:?}",
            line + 1,
            a.console.len(),
            b.console.len(),
            x.lines().nth(line),
            y.lines().nth(line)
        );
    }
    let diffs = json_differences(&a.stats, &b.stats, 10);
    assert!(
        diffs.is_empty(),
        "guest counts differ between two runs:\n{}",
        diffs.join("\n")
    );

    // The comparison covered real work, not two empty records.
    let s = &a.stats;
    assert!(s["cycles"].as_u64().unwrap() > 10_000_000, "{s}");
    let harts = s["harts"].as_array().unwrap();
    assert_eq!(harts.len(), smp);
    assert!(harts
        .iter()
        .all(|h| h["instret"].as_u64().unwrap() > 0 && h["cycles"].as_u64().unwrap() > 0));
    let phases: Vec<&str> = s["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["label"].as_str().unwrap())
        .collect();
    for label in ["init", "shell banner", "ash loop", "final marker"] {
        assert!(
            phases.contains(&label),
            "phase `{label}` missing from {phases:?}"
        );
    }
    assert!(String::from_utf8_lossy(&a.console).contains("p87 workload done"));
}

#[test]
fn debian_p87_on_2_harts_twice_identical() {
    twice_identical("debian", 2);
}

#[test]
fn custom_p87_on_4_harts_twice_identical() {
    twice_identical("custom", 4);
}

#[test]
fn host_time_fields_are_the_only_ones_ignored() {
    let a = guest_stats(
        r#"{"cycles":5,"host_seconds":1.0,"phase_host_seconds":[0.2],"mips":3.0,"harts":[{"instret":2,"host_seconds":0.5,"mips":4.0}]}"#,
    );
    let b = guest_stats(
        r#"{"cycles":5,"host_seconds":9.0,"phase_host_seconds":[0.7],"mips":1.0,"harts":[{"instret":3,"host_seconds":0.1,"mips":2.0}]}"#,
    );
    assert_eq!(
        json_differences(&a, &b, 10),
        vec![".harts[0].instret: 2 vs 3".to_string()]
    );
}
