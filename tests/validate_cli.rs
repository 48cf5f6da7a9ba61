//! `hartscope validate` end to end on a small suite of our own in the
//! layout of darchr/riscv-validation (tests/validation-suite; its CSV
//! figures are invented test data): the suite's Makefile builds, one boot
//! on machines/u74.toml counts each benchmark as `perf stat` would, the
//! report pairs the counts with the tables — and twice gives the same bytes.

use crate::support;

use std::path::{Path, PathBuf};

use support::*;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

fn validate(s: &Scratch, suite: &Path, out: &str) -> Output {
    let machine = repo("machines/u74.toml");
    hartscope(
        &[
            "validate",
            "--suite",
            suite.to_str().unwrap(),
            "--machine",
            machine.to_str().unwrap(),
            "--out",
            s.path(out).to_str().unwrap(),
        ],
        s,
        BOOT_DEADLINE,
    )
}

/// (instructions, cycles, branches, misses) of one benchmark in results.csv.
fn counts(csv: &str, name: &str) -> [f64; 4] {
    let line = csv
        .lines()
        .find(|l| l.starts_with(&format!("{name},")))
        .unwrap_or_else(|| panic!("{name} in results.csv:\n{csv}"));
    let v: Vec<f64> = line
        .split(',')
        .skip(1)
        .take(4)
        .map(|c| c.parse().unwrap())
        .collect();
    [v[0], v[1], v[2], v[3]]
}

#[test]
fn validate_counts_each_benchmark_as_perf_stat_would_and_repeats_exactly() {
    image("debian");
    let s = Scratch::new("validate");
    let suite = repo("tests/validation-suite");
    let out = validate(&s, &suite, "first");
    assert_eq!(out.code(), Some(0), "{}", out.tail());
    let csv = std::fs::read_to_string(s.path("first/results.csv")).unwrap();
    // CLoop: 4,000,000 loop instructions and 2,000,000 conditional branches,
    // plus the static C runtime and exec/exit in the kernel (~tens of thousands)
    let [i, c, b, m] = counts(&csv, "CLoop");
    assert!((4.0e6..4.6e6).contains(&i), "CLoop instructions {i}");
    assert!(
        (2.0e6..2.3e6).contains(&b),
        "CLoop branches {b} (conditional only on the U74)"
    );
    assert!(m < 0.02 * b, "a counted loop is predicted: {m} misses");
    let ipc = i / c;
    assert!((0.3..2.0).contains(&ipc), "CLoop IPC {ipc}");
    // MChase: every step a dependent load that misses the L1: far below 1 IPC
    let [mi, mc, ..] = counts(&csv, "MChase");
    assert!(
        mi / mc < ipc / 2.0,
        "MChase IPC {} against CLoop {ipc}",
        mi / mc
    );
    let report = std::fs::read_to_string(s.path("first/report.md")).unwrap();
    for want in [
        "| CLoop | calibration |",
        "| MChase | validation |",
        "| hartscope | all | 2 |",
        "| gem5 tuned | all | 2 |",
        "## Branches and branch misses",
    ] {
        assert!(report.contains(want), "report lacks `{want}`:\n{report}");
    }
    assert!(
        report.contains("not a git checkout") || report.contains("at commit "),
        "{report}"
    );
    assert!(s.path("first/report.html").is_file() && s.path("first/console.txt").is_file());
    // the same run again: the same counts and the same report
    let again = validate(&s, &suite, "second");
    assert_eq!(again.code(), Some(0), "{}", again.tail());
    assert_eq!(
        csv,
        std::fs::read_to_string(s.path("second/results.csv")).unwrap()
    );
    let strip_host_time = |r: &str| {
        r.lines()
            .filter(|l| !l.contains("host time"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let report2 = std::fs::read_to_string(s.path("second/report.md")).unwrap();
    assert_eq!(strip_host_time(&report), strip_host_time(&report2));
}

#[test]
fn a_suite_that_is_not_one_is_refused_in_one_sentence() {
    let s = Scratch::new("validate-bad");
    let out = validate(&s, &s.path("nowhere"), "out");
    assert_eq!(out.code(), Some(1), "{}", out.tail());
    assert!(
        out.stderr
            .contains("microbench-vertical/Makefile is missing"),
        "{}",
        out.stderr
    );
    // the layout, but one of the tables missing
    let suite = s.path("suite");
    std::fs::create_dir_all(suite.join("microbench-vertical")).unwrap();
    std::fs::write(suite.join("microbench-vertical/Makefile"), "RISCV:\n").unwrap();
    let out = validate(&s, &suite, "out");
    assert_eq!(out.code(), Some(1), "{}", out.tail());
    assert!(
        out.stderr
            .contains("perf_VRG_microbenchmarks.csv is missing"),
        "{}",
        out.stderr
    );
    // a table with a bad cell names the file and the line
    let csvs = suite.join("gem5_Workshop_ISCA2023/csvs");
    std::fs::create_dir_all(&csvs).unwrap();
    for f in [
        "perf_VRG_microbenchmarks.csv",
        "gem5_new_config_VRG_microbenchmarks.csv",
        "gem5_original_config_VRG_microbenchmarks.csv",
    ] {
        std::fs::write(
            csvs.join(f),
            "Benchmark,Instructions,Cycles,Seconds,Branches,Branch-misses\nCLoop,100,oops,1,1,1\n",
        )
        .unwrap();
    }
    let out = validate(&s, &suite, "out");
    assert_eq!(out.code(), Some(1), "{}", out.tail());
    assert!(
        out.stderr.contains("line 2: cycles `oops` is not a count"),
        "{}",
        out.stderr
    );
    assert!(!s.path("out").exists(), "nothing written on bad input");
}
