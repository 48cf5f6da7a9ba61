//! The sampling profiler on the P87 shell workload: the hot-functions table
//! names real kernel functions (trap entry, `n_tty_write`, `memset`/`memcpy`)
//! and real BusyBox functions, user address spaces are recognised, stacks
//! are unwound, and `--profile DIR` writes the four files.

use crate::observe_support;
use crate::support;

use hs_machine::hs_timing::Atomic;
use hs_machine::{ObserveOptions, SamplerConfig};
use hs_observe::export::HotFunctions;
use hs_observe::Privilege;
use observe_support::*;

/// Well-known BusyBox (and its static libc) functions the shell session runs.
const BUSYBOX_NAMES: &[&str] = &[
    "find_applet_by_name",
    "readtoken1",
    "evaltree",
    "strlen",
    "memcpy",
    "memset",
    "strcspn",
    "__vfprintf_internal",
    "_int_malloc",
    "__strchrnul",
    "xmalloc",
    "parse_command",
];

fn check_hot(hot: &HotFunctions, run: &Run) {
    let kernel = |s: &str| hot.samples_in(s, "kernel");
    assert!(kernel("handle_exception") > 0, "trap entry not sampled");
    assert!(kernel("n_tty_write") > 0, "n_tty_write not sampled");
    assert!(
        kernel("memset") + kernel("memcpy") > 0,
        "neither memset nor memcpy sampled in the kernel"
    );
    let busybox: Vec<&str> = hot
        .rows
        .iter()
        .filter(|r| r.place == "busybox")
        .map(|r| r.symbol.as_str())
        .collect();
    let known: Vec<&&str> = BUSYBOX_NAMES
        .iter()
        .filter(|n| busybox.contains(n))
        .collect();
    assert!(known.len() >= 3, "BusyBox functions sampled: {busybox:?}");

    // User samples land in a recognised binary, not in [unknown].
    let places = hot.places();
    let user: u64 = run
        .record
        .samples
        .iter()
        .filter(|s| s.privilege == Privilege::User)
        .count() as u64;
    let unknown = places
        .iter()
        .find(|(p, _)| p == "[unknown]")
        .map_or(0, |p| p.1);
    assert!(user > 100, "{user} user samples");
    assert!(
        unknown * 20 < user,
        "{unknown} of {user} user samples in no known binary"
    );

    // Stacks: kernel samples are unwound through frame pointers, and BusyBox
    // samples keep at least the caller in `ra` now and then.
    let deep = run
        .record
        .samples
        .iter()
        .filter(|s| s.privilege == Privilege::Supervisor && s.stack.len() >= 3)
        .count();
    assert!(
        deep * 4
            > run
                .record
                .samples
                .iter()
                .filter(|s| s.privilege == Privilege::Supervisor)
                .count(),
        "few kernel stacks"
    );
    assert!(run
        .record
        .samples
        .iter()
        .any(|s| s.privilege == Privilege::User && !s.stack.is_empty()));
    for s in &run.record.samples {
        assert!(s.stack.len() <= SamplerConfig::default().max_depth);
    }
}

fn profile_p87(image_name: &str) {
    let opts = ObserveOptions::default();
    let run = run_with(
        image_name,
        &workload("p87-shell"),
        1,
        &opts,
        Some(SamplerConfig::default()),
        |_| Atomic,
    );
    let rec = &run.record;
    assert_eq!(rec.sample_period, 1024);
    // Every 1024th cycle of the hart is a deadline: sampled, merged into the
    // sample a long block took, or skipped as wfi idle time.
    let n = rec.samples.len() as u64;
    let merged = stat(&rec.total, "system.samplesMerged");
    let idle = stat(&rec.total, "system.samplesIdleSkipped");
    assert_eq!(stat(&rec.total, "system.samplesDropped"), 0);
    assert_eq!(
        n + merged + idle,
        stat(&rec.total, "system.cpu0.cycles") / 1024,
        "{n} + {merged} + {idle}"
    );
    assert!(
        merged * 100 < n,
        "{merged} merged deadlines for {n} samples"
    );
    let hot = HotFunctions::compute(&rec.samples, run.symbols.symbolizer(), rec.sample_period);
    check_hot(&hot, &run);
}

#[test]
fn debian_p87_profile_names_kernel_and_busybox_functions() {
    profile_p87("debian");
}

#[test]
fn custom_p87_profile_names_kernel_and_busybox_functions() {
    profile_p87("custom");
}

/// `--profile DIR --perf-script` through the binary: hot.md split by place,
/// perf script text, folded stacks and a flamegraph, all naming the same
/// functions.
#[test]
fn profile_directory_through_the_binary() {
    let _ = image("custom");
    let dir = support::Scratch::new("observe-profile");
    let prof = dir.path("prof");
    let work = workload("p87-shell");
    // the P87 boot on `custom` profiled into `prof`, with `extra` arguments
    let boot = |extra: &[&str]| {
        let mut args = vec![
            "boot",
            "--image",
            "custom",
            "--workload",
            work.to_str().unwrap(),
            "--profile",
            prof.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = support::hartscope(&args, &dir, support::BOOT_DEADLINE);
        support::assert_workload_finished(&out, 0);
    };
    boot(&["--perf-script"]);
    let read =
        |n: &str| std::fs::read_to_string(prof.join(n)).unwrap_or_else(|e| panic!("{n}: {e}"));
    let hot = read("hot.md");
    for section in [
        "| where | samples | share |",
        "### kernel — ",
        "### busybox — ",
    ] {
        assert!(
            hot.contains(section),
            "`{section}` missing from hot.md:\n{hot}"
        );
    }
    assert!(
        hot.contains("| n_tty_write |") || hot.contains(" more symbols) |"),
        "{hot}"
    );

    let script = read("perf.script");
    let summaries = ["hot.md", "folded.txt", "flamegraph.svg"];
    let before = summaries.map(read);
    let blocks: Vec<&str> = script
        .split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .collect();
    assert!(
        blocks.len() > 1000,
        "{} samples in perf.script",
        blocks.len()
    );
    for b in blocks.iter().take(2000) {
        let mut lines = b.lines();
        let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        assert_eq!(header.len(), 6, "{b}");
        assert_eq!((header[4], header[5]), ("1024", "cycles:"), "{b}");
        for f in lines {
            assert!(f.starts_with('\t') && f.ends_with(')'), "frame line {f:?}");
        }
    }
    assert!(script.contains("n_tty_write+0x") && script.contains("(busybox)"));

    // Without --perf-script (the default): the same reports but that one,
    // and no stale copy.
    boot(&[]);
    assert!(!prof.join("perf.script").exists(), "perf.script is left");
    for (n, was) in summaries.iter().zip(&before) {
        assert!(read(n) == *was, "{n} differs without perf.script");
    }

    let folded = read("folded.txt");
    let mut total = 0u64;
    for l in folded.lines() {
        let (stack, count) = l
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("folded line {l:?}"));
        assert!(!stack.is_empty());
        total += count.parse::<u64>().unwrap();
    }
    assert_eq!(
        total as usize,
        blocks.len(),
        "folded stacks count every sample once"
    );
    assert!(folded.contains("n_tty_write_[k]"));

    let svg = read("flamegraph.svg");
    assert!(svg.starts_with("<?xml") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("n_tty_write"));
    // Its title names the window (here the whole run, as no --profile-from
    // was given), and it is interactive in a browser.
    let heading = format!(">custom — the whole run — {} samples</text>", blocks.len());
    assert!(svg.contains(&heading), "no `{heading}` in the flame graph");
    assert!(
        svg.contains("<script type=\"text/ecmascript\">") && svg.contains(">Reset zoom</text>"),
        "the flame graph has no zoom script"
    );
    assert!(
        hot.starts_with("# Hot functions — custom — the whole run\n"),
        "{hot}"
    );
}

/// Profiling observes a run without changing its figures (issue 10: the
/// phase table's CPI was 1.00 with `--profile` and 1.50 without, for the
/// same cycles and instructions, because idle time in `wfi` was only
/// counted when the run was observed).
#[test]
fn the_phase_table_is_the_same_with_and_without_profiling() {
    let _ = image("custom");
    let dir = support::Scratch::new("observe-same-phases");
    let work = workload("nullsys-run");
    let table = |extra: &[&str]| {
        let mut args = vec![
            "boot",
            "--image",
            "custom",
            "--workload",
            work.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = support::hartscope(&args, &dir, support::BOOT_DEADLINE);
        support::assert_workload_finished(&out, 0);
        let rows: Vec<String> = out
            .stderr
            .lines()
            .filter(|l| l.starts_with("| ") && l.as_bytes().get(2).is_some_and(u8::is_ascii_digit))
            .map(str::to_string)
            .collect();
        assert!(rows.len() >= 3, "{}", out.stderr);
        rows
    };
    let prof = dir.path("prof");
    let plain = table(&[]);
    let profiled = table(&["--profile", prof.to_str().unwrap()]);
    assert_eq!(plain, profiled);
    // Idle time is not busy time: the last phase (the workload ending while
    // the shell waits) is near CPI 1 on the atomic model either way.
    let last = plain.last().unwrap();
    let cpi: f64 = last
        .trim_matches('|')
        .split('|')
        .next_back()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(cpi < 1.02, "{last}");
}
