//! The SPI network study (`studies/spi-net-irq.toml`, the Openmoko seed)
//! end to end at a small scale (16 x 8 KiB instead of 64 x 8 KiB), every
//! variant twice:
//!
//! * every byte the peer sent reaches ttcp in every variant;
//! * the study's own checks decide the seed's direction (async > direct >
//!   polled in throughput, the reverse in system time, a polled frame
//!   waiting longer for the driver): each must come out PASS or FAIL, none
//!   NOT RUN — and the verdicts are printed so a FAIL is visible;
//! * the profile split by the study's groups is in the report;
//! * each variant's two runs are identical (the report's repeats table).
//!
//! The polled and async variants are kernel patch series built
//! incrementally on the kept build tree (under a minute each).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn spi_net_irq_study_runs_all_three_drivers_and_repeats_exactly() {
    if let Err(e) = hs_guest::find("custom") {
        panic!("{e}");
    }
    let dir = std::env::temp_dir().join(format!("hs-spi-net-irq-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out_dir = dir.join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_hartscope"))
        .arg("study")
        .arg(root().join("studies/spi-net-irq.toml"))
        .args(["--env", "COUNT=16", "--jobs", "2", "--repeat", "2", "--db"])
        .arg(dir.join("results.db"))
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let verdicts: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("PASS") || l.starts_with("FAIL") || l.starts_with("NOT RUN"))
        .collect();
    // 3 workload checks, 3 "every byte", 5 directions.
    assert_eq!(verdicts.len(), 11, "{stdout}");
    for v in &verdicts {
        assert!(!v.starts_with("NOT RUN"), "{v}\n{stdout}");
        if v.contains("every byte")
            || v.contains("the stock driver too")
            || v.contains("the asynchronous one")
            || v.contains("runs to its end")
        {
            assert!(v.starts_with("PASS"), "{v}\n{stdout}");
        }
    }
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    for section in [
        "## Throughput and system time (the seed's table)",
        "## Where the receive window's profile samples went",
        "| SPI transfer |",
        "| interrupt entry |",
    ] {
        assert!(md.contains(section), "no `{section}` in the report:\n{md}");
    }
    // The repeats table says every variant's two runs matched.
    let repeats = md
        .split("## Repeats")
        .nth(1)
        .unwrap_or_else(|| panic!("no repeats section:\n{md}"));
    for v in ["polled", "direct", "async"] {
        let line = repeats
            .lines()
            .find(|l| l.starts_with(&format!("| {v} ")))
            .unwrap_or_else(|| panic!("no repeats row for {v}:\n{repeats}"));
        assert!(line.contains("identical"), "{line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
