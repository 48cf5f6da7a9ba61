//! The SD-card study (`studies/sd-block.toml`, the Genode/Pandaboard seed)
//! end to end at a small scale (64 KiB per transfer instead of 1 MiB),
//! every variant twice:
//!
//! * every variant's workload runs to its end and reports a rate for every
//!   block size, read and write (the report's two tables have no gaps);
//! * the study's checks decide the seed's directions: each comes out PASS
//!   or FAIL, none NOT RUN, and the verdicts are printed so a FAIL shows;
//! * each variant's two runs are identical (the report's repeats table).

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn sd_block_study_runs_every_mode_and_repeats_exactly() {
    if let Err(e) = hs_guest::find("custom") {
        panic!("{e}");
    }
    let dir = std::env::temp_dir().join(format!("hs-sd-block-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out_dir = dir.join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_hartscope"))
        .arg("study")
        .arg(root().join("studies/sd-block.toml"))
        .args([
            "--env",
            "SIZE_KIB=64",
            "--jobs",
            "2",
            "--repeat",
            "2",
            "--db",
        ])
        .arg(dir.join("results.db"))
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    print!("{stdout}");
    let verdicts: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("PASS") || l.starts_with("FAIL") || l.starts_with("NOT RUN"))
        .collect();
    // 6 workload checks and the study's 9 directions.
    assert_eq!(verdicts.len(), 15, "{stdout}");
    for v in &verdicts {
        assert!(!v.starts_with("NOT RUN"), "{v}\n{stdout}");
        if v.contains("runs to its end") {
            assert!(v.starts_with("PASS"), "{v}\n{stdout}");
        }
    }
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    for table in [
        "## Read throughput by block size",
        "## Write throughput by block size",
    ] {
        let body = md
            .split(table)
            .nth(1)
            .unwrap_or_else(|| panic!("no `{table}` in the report:\n{md}"));
        let rows: Vec<&str> = body
            .lines()
            .filter(|l| l.starts_with("| ") && l.as_bytes().get(2).is_some_and(u8::is_ascii_digit))
            .take(7)
            .collect();
        assert_eq!(rows.len(), 7, "{table}:\n{body}");
        for r in rows {
            // block size and six variants, every cell a number
            let cells: Vec<&str> = r.trim_matches('|').split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 7, "{r}");
            for c in &cells[1..] {
                assert!(
                    c.replace(',', "").parse::<f64>().is_ok_and(|v| v > 0.0),
                    "{r}"
                );
            }
        }
    }
    let repeats = md
        .split("## Repeats")
        .nth(1)
        .unwrap_or_else(|| panic!("no repeats section:\n{md}"));
    for v in ["adma", "sdma", "pio", "adma-1bit", "pio-1bit", "virtio-blk"] {
        let line = repeats
            .lines()
            .find(|l| l.starts_with(&format!("| {v} ")))
            .unwrap_or_else(|| panic!("no repeats row for {v}:\n{repeats}"));
        assert!(line.contains("identical"), "{line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
