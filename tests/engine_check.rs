//! `boot --engine-check`: the block engine and the reference engine (every
//! instruction decoded afresh) run in lockstep. A Linux boot with the P87
//! workload on two harts, and every bare-metal ISA program of `tests/isa` on
//! the atomic and the in-order model, must run to the end with both
//! agreeing; the checked boot gives the console output and guest counts of
//! a plain run. (The checker's failure side, a divergence
//! found and named by its pc, is `crates/machine/tests/lockstep.rs`.)

use crate::support;

use std::path::Path;
use std::time::Duration;

use support::*;

const AGREED: &str = "engine check: the translating engine and the reference agreed to the end";

#[test]
fn a_linux_boot_agrees_under_the_engine_check() {
    let _ = image("debian");
    let dir = Scratch::new("engine-check-linux");
    let workload = root().join("guest/workloads/p87-shell");
    let run = |check: bool, n: usize| {
        let stats = dir.path(&format!("stats-{n}.json"));
        let mut args = vec![
            "boot",
            "--image",
            "debian",
            "--smp",
            "2",
            "--workload",
            workload.to_str().unwrap(),
            "--stats-json",
            stats.to_str().unwrap(),
        ];
        if check {
            // every block translated on its first run: the plain run
            // translates only hot ones, and both must give the same counts
            args.extend(["--engine-check", "--translate-after", "1"]);
        }
        let out = hartscope(&args, &dir, BOOT_DEADLINE);
        assert_workload_finished(&out, 0);
        assert_eq!(out.stderr.contains(AGREED), check, "{}", out.tail());
        let json = std::fs::read_to_string(&stats).unwrap();
        let raw: serde_json::Value = serde_json::from_str(&json).unwrap();
        let sum = |key: &str| -> u64 {
            let harts = raw["harts"].as_array().unwrap();
            harts.iter().map(|h| h[key].as_u64().unwrap()).sum()
        };
        let blocks = (sum("translated_blocks"), sum("blocks_decoded"));
        (out.stdout, guest_stats(&json), blocks)
    };
    let (plain_console, plain, (plain_translated, _)) = run(false, 1);
    let (checked_console, checked, (checked_translated, checked_decoded)) = run(true, 2);
    // both ran translated code; the checked run translated (nearly) every
    // block it decoded, the plain run only hot ones
    assert!(
        plain_translated > 1_000
            && checked_translated > 2 * plain_translated
            && checked_translated * 10 >= checked_decoded * 9,
        "translated blocks: plain {plain_translated}, checked {checked_translated} \
         of {checked_decoded} decoded"
    );
    assert!(plain_console == checked_console, "console output differs");
    let diffs = json_differences(&plain, &checked, 10);
    assert!(
        diffs.is_empty(),
        "guest counts differ:\n{}",
        diffs.join("\n")
    );
    assert!(plain["instret"].as_u64().unwrap() > 100_000_000, "{plain}");
}

/// The in-order model on four harts, its block cache churning (1,024
/// instructions, emptied tens of thousands of times) and every block
/// translated on its first run (translated code calling the model's hooks,
/// its shortcuts inline): the engine agrees with the reference step by
/// step, cycle counts included, and the run gives the console output and
/// every guest and model count of a plain run with the default cache and
/// only hot blocks translated. What a host cache holds must never show in
/// results (the ground a translating engine stands on).
#[test]
fn a_linux_boot_on_the_inorder_model_agrees_on_four_harts_whatever_the_block_cache() {
    let _ = image("debian");
    let dir = Scratch::new("engine-check-inorder");
    let workload = root().join("guest/workloads/p87-shell");
    let machine = root().join("machines/inorder.toml");
    let run = |check: bool| {
        let stats = dir.path(&format!("stats-{check}.json"));
        let mut args = vec![
            "boot",
            "--image",
            "debian",
            "--smp",
            "4",
            "--machine",
            machine.to_str().unwrap(),
            "--workload",
            workload.to_str().unwrap(),
            "--stats-json",
            stats.to_str().unwrap(),
        ];
        if check {
            args.extend([
                "--engine-check",
                "--block-cache-ops",
                "1024",
                "--translate-after",
                "1",
            ]);
        }
        let out = hartscope(&args, &dir, BOOT_DEADLINE);
        assert_workload_finished(&out, 0);
        assert_eq!(out.stderr.contains(AGREED), check, "{}", out.tail());
        let json = std::fs::read_to_string(&stats).unwrap();
        let raw: serde_json::Value = serde_json::from_str(&json).unwrap();
        let translated: u64 = raw["harts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["translated_blocks"].as_u64().unwrap())
            .sum();
        let mut counts = guest_stats(&json);
        // the block cache's own counters, and the software TLB's walks
        let mut flushes = 0;
        for h in counts["harts"].as_array_mut().unwrap() {
            let h = h.as_object_mut().unwrap();
            flushes += h["block_flushes"].as_u64().unwrap();
            for host in [
                "blocks_decoded",
                "block_flushes",
                "page_walks",
                "block_cache_bytes",
            ] {
                assert!(h.remove(host).is_some(), "no {host} in --stats-json");
            }
        }
        (out.stdout, counts, flushes, translated)
    };
    let (plain_console, plain, plain_flushes, plain_translated) = run(false);
    let (checked_console, checked, checked_flushes, checked_translated) = run(true);
    assert!(
        checked_flushes > 100 * plain_flushes.max(1),
        "the small cache was emptied {checked_flushes} times, the default {plain_flushes}"
    );
    assert!(
        plain_translated > 1_000 && checked_translated > 10 * plain_translated,
        "translated blocks: plain {plain_translated}, checked {checked_translated}"
    );
    assert!(plain_console == checked_console, "console output differs");
    let diffs = json_differences(&plain, &checked, 10);
    assert!(
        diffs.is_empty(),
        "guest or model counts differ:\n{}",
        diffs.join("\n")
    );
    let stats = plain["stats"].to_string();
    assert!(
        stats.contains("itlb.accesses"),
        "the in-order model's counts are compared"
    );
}

#[test]
fn the_isa_programs_agree_under_the_engine_check() {
    let isa = root().join("tests/isa");
    let srcs = programs(&isa);
    assert!(srcs.len() >= 20, "found {} ISA programs", srcs.len());
    let dir = Scratch::new("engine-check-isa");
    let mut failures = Vec::new();
    for src in &srcs {
        let rel = src.strip_prefix(&isa).unwrap();
        let rel = Path::new("engine-check").join(rel);
        let elf = match build_isa_program(src, &rel, src.parent().unwrap()) {
            Ok(e) => e,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        // on the atomic model and on the in-order one (its caches,
        // predictor and walker make cycles depend on every access),
        // translating every block on its first run
        let inorder = root().join("machines/inorder.toml");
        for machine in [None, Some(inorder.to_str().unwrap())] {
            let mut args = vec![
                "-bios",
                "none",
                "-kernel",
                elf.to_str().unwrap(),
                "-m",
                "64M",
                "--engine-check",
            ];
            if let Some(m) = machine {
                args.extend(["--machine", m]);
            }
            args.extend(["--translate-after", "1"]);
            let out = hartscope(&args, &dir, Duration::from_secs(300));
            let model = machine.map_or("atomic", |_| "in-order");
            if out.code() == Some(0) && out.stderr.contains(AGREED) {
                eprintln!("ok   {} ({model})", rel.display());
            } else {
                failures.push(format!(
                    "{} ({model}): exit {:?}: {}",
                    rel.display(),
                    out.code(),
                    out.tail()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
