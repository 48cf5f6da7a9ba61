//! `hartscope bench` end to end at a small size (the `custom` image, one
//! repetition, few cpubound rounds): it runs both sides, prints the tables
//! and writes the same figures as JSON; without QEMU it says so and still
//! reports hartscope's own figures.

use crate::support;

use std::process::Command;
use std::time::Duration;

use support::*;

const DEADLINE: Duration = Duration::from_secs(600);

fn read_json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn bench_runs_hartscope_and_qemu_side_by_side() {
    let _ = image("custom");
    let dir = Scratch::new("bench");
    let json = dir.path("bench.json");
    let out = hartscope(
        &[
            "bench",
            "--image",
            "custom",
            "--smp",
            "1",
            "--repeat",
            "1",
            "--rounds",
            "20",
            "--disk-mib",
            "8",
            "--net-mib",
            "4",
            "--json",
            json.to_str().unwrap(),
        ],
        &dir,
        DEADLINE,
    );
    assert_eq!(out.code(), Some(0), "{}", out.tail());
    let text = out.stdout_text();
    assert!(text.contains("QEMU: QEMU emulator version"), "{text}");
    assert_eq!(
        text.matches("hartscope/QEMU wall time, median of the paired runs: ")
            .count(),
        2,
        "{text}"
    );
    assert!(
        text.contains("bare metal rather than inside Linux"),
        "the choice is explained:\n{text}"
    );

    let v = read_json(&json);
    assert_eq!(v["image"], "custom");
    // (the tests' build has no profile: build.rs must not claim one)
    let build = v["build"].as_str().unwrap_or_default();
    assert!(build.starts_with("without a profile"), "{build}");
    assert!(
        text.contains(&format!("hartscope build: {build}\n")),
        "{text}"
    );
    assert_eq!(v["smp"], 1);
    for section in ["linux_boot", "cpubound"] {
        let s = &v[section];
        let runs = s["runs"]
            .as_array()
            .unwrap_or_else(|| panic!("{section}: no runs in {v}"));
        assert_eq!(runs.len(), 1);
        let r = &runs[0];
        assert!(r["hartscope"]["wall_s"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["hartscope"]["mips"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["qemu"]["wall_s"].as_f64().unwrap() > 0.0, "{r}");
        let ratio = r["ratio"].as_f64().unwrap();
        let expected =
            r["hartscope"]["wall_s"].as_f64().unwrap() / r["qemu"]["wall_s"].as_f64().unwrap();
        assert!(
            (ratio - expected).abs() < 1e-9,
            "ratio is hartscope wall / QEMU wall: {r}"
        );
        assert!(r["cpu_ratio"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(
            s["median"]["ratio"], r["ratio"],
            "one run: the median is that run"
        );
    }
    // 20 rounds of ~5.6 million instructions each.
    let instret = v["cpubound"]["runs"][0]["hartscope"]["instret"]
        .as_u64()
        .unwrap();
    assert!(
        (100_000_000..130_000_000).contains(&instret),
        "cpubound instructions: {instret}"
    );
    // The count from an untimed run with its stats; the timed runs write
    // none (as QEMU's), so their MIPS are the count over their wall time.
    let cpubound = &v["cpubound"];
    let command = cpubound["hartscope_command"].as_str().unwrap_or_default();
    assert!(
        command.contains("cpubound.elf") && !command.contains("--stats-json"),
        "the timed command: {command}"
    );
    let timed = &cpubound["runs"][0]["hartscope"];
    let by_wall = instret as f64 / timed["wall_s"].as_f64().unwrap() / 1e6;
    assert!(
        (timed["mips"].as_f64().unwrap() - by_wall).abs() < 1e-6 * by_wall,
        "cpubound MIPS are its count over its wall time: {timed}"
    );
    assert!(
        text.contains("one more, untimed run with --stats-json"),
        "the choice is explained:\n{text}"
    );
    assert!(
        v["cpubound"]["median"]["qemu_mips_estimate"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    // The disk: 8 MiB read on both sides, MiB per host second.
    let d = &v["disk_read"];
    assert_eq!(d["mib"], 8, "{d}");
    let run = &d["runs"][0];
    assert!(
        run[0].as_f64().unwrap() > 0.0 && run[1].as_f64().unwrap() > 0.0,
        "{d}"
    );
    assert!(
        text.contains("## Sequential read of a 8 MiB virtio-blk disk"),
        "{text}"
    );
    // The network: 4 MiB received over TCP on both sides, the bytes
    // checked (a run whose FNV-1a differs fails the bench).
    let n = &v["net_receive"];
    assert_eq!(n["mib"], 4, "{n}");
    let run = &n["runs"][0];
    assert!(
        run[0].as_f64().unwrap() > 0.0 && run[1].as_f64().unwrap() > 0.0,
        "{n}"
    );
    assert!(
        text.contains("## TCP receive of 4 MiB over virtio-net"),
        "{text}"
    );
    // The models table: the boot on atomic and in-order, plain and
    // sampled; a sampled mode is set against its plain mode.
    let m = &v["models"];
    let modes: Vec<&str> = m["median"]
        .as_array()
        .unwrap_or_else(|| panic!("no models table in {v}"))
        .iter()
        .map(|x| x["mode"].as_str().unwrap())
        .collect();
    assert_eq!(
        modes,
        [
            "atomic",
            "atomic + profile",
            "in-order",
            "in-order + profile"
        ],
        "{m}"
    );
    for (i, x) in m["median"].as_array().unwrap().iter().enumerate() {
        assert!(x["mips"].as_f64().unwrap() > 0.0, "{x}");
        assert!(x["run_s"].as_f64().unwrap() > 0.0, "{x}");
        let r = &m["runs"][0][i];
        let expected = (i % 2 == 1)
            .then(|| r["run_s"].as_f64().unwrap() / m["runs"][0][i - 1]["run_s"].as_f64().unwrap());
        // (within rounding: JSON numbers are read back to the nearest
        // few ulps)
        match (x["run_vs_plain"].as_f64(), expected) {
            (Some(got), Some(want)) => assert!((got - want).abs() < 1e-9, "{m}"),
            (got, want) => assert_eq!(got, want, "{m}"),
        }
        // one repetition: each range is that repetition's figure
        let lo_hi = |v: &serde_json::Value| (v[0].as_f64(), v[1].as_f64());
        let mips = x["mips"].as_f64();
        assert_eq!(lo_hi(&x["mips_range"]), (mips, mips), "{x}");
        let ratio = x["run_vs_plain"].as_f64();
        assert_eq!(lo_hi(&x["run_vs_plain_range"]), (ratio, ratio), "{x}");
    }
    assert!(text.contains("| in-order + profile |"), "{text}");
}

#[test]
fn bench_without_qemu_reports_hartscope_alone() {
    let _ = image("custom");
    let dir = Scratch::new("bench-no-qemu");
    // A PATH holding only the bare-metal compiler: no QEMU to be found.
    let bin = dir.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let gcc = Command::new("sh")
        .args(["-c", "command -v riscv64-unknown-elf-gcc"])
        .output()
        .unwrap();
    let gcc = String::from_utf8(gcc.stdout).unwrap();
    assert!(
        !gcc.trim().is_empty(),
        "riscv64-unknown-elf-gcc is not installed (Debian package gcc-riscv64-unknown-elf)"
    );
    std::os::unix::fs::symlink(gcc.trim(), bin.join("riscv64-unknown-elf-gcc")).unwrap();
    let json = dir.path("bench.json");
    let started = std::time::Instant::now();
    let out = Command::new(HARTSCOPE)
        .args([
            "bench",
            "--image",
            "custom",
            "--smp",
            "1",
            "--repeat",
            "1",
            "--rounds",
            "5",
            "--disk-mib",
            "0",
            "--net-mib",
            "0",
            "--no-models",
            "--json",
        ])
        .arg(&json)
        .env("PATH", &bin)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(started.elapsed() < DEADLINE);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stdout.contains("qemu-system-riscv64 is not installed"),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("QEMU not run: no ratio").count(),
        2,
        "{stdout}"
    );
    let v = read_json(&json);
    assert!(
        v["qemu_version"].is_null() && v["qemu_not_run"].is_string(),
        "{v}"
    );
    assert!(v["models"].is_null(), "--no-models: {v}");
    for section in ["linux_boot", "cpubound"] {
        let r = &v[section]["runs"][0];
        assert!(r["hartscope"]["mips"].as_f64().unwrap() > 0.0, "{r}");
        assert!(
            r["qemu"].is_null() && r["ratio"].is_null() && r["cpu_ratio"].is_null(),
            "{r}"
        );
    }
}
