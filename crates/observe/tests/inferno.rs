//! Validation against a tool nobody here wrote: `inferno-collapse-perf`
//! (the `inferno` crate's port of FlameGraph's `stackcollapse-perf.pl`)
//! reading this crate's `perf script` text must give the same stacks as
//! its folded stacks. The tool weighs each sample by its period, so its
//! counts are the folded counts times the period.
//!
//! The tool is found as `$INFERNO_COLLAPSE_PERF`, on `PATH`, or in
//! `$CARGO_HOME/bin` (`scripts/setup-host.sh` installs it with
//! `cargo install inferno`); when it is nowhere, the test says so and
//! checks nothing.

use crate::common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use common::*;
use hs_observe::export::{fold, perf_script, FoldOptions};
use hs_observe::Task;

/// Where `inferno-collapse-perf` is, if anywhere.
pub fn collapse_tool() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("INFERNO_COLLAPSE_PERF") {
        return Some(PathBuf::from(p));
    }
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    dirs.extend(cargo_home.map(|c| c.join("bin")));
    dirs.into_iter()
        .map(|d| d.join("inferno-collapse-perf"))
        .find(|p| p.is_file())
}

#[test]
fn inferno_collapse_perf_reads_our_perf_script_as_our_folded_stacks() {
    // scripts/setup-host.sh installs it; a check that silently skips is no check.
    let tool = collapse_tool().expect(
        "inferno-collapse-perf is not installed: run scripts/setup-host.sh (cargo install inferno)",
    );
    let mut samples = samples();
    let task = |pid, tid, comm: &str| {
        Some(Task {
            pid,
            tid,
            comm: comm.into(),
        })
    };
    samples[0].task = task(300, 301, "sh");
    samples[2].task = task(0, 0, "swapper/1");
    samples[4].task = task(302, 302, "my prog");
    let sym = symbolizer();
    let script = perf_script(&samples, &sym, GUEST_HZ, PERIOD).unwrap();
    let dir = std::env::temp_dir().join(format!("hs-inferno-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("perf.script");
    std::fs::write(&path, &script).unwrap();
    let out = Command::new(&tool)
        .arg("--kernel")
        .arg(&path)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs = parse_folded(&String::from_utf8(out.stdout).unwrap(), PERIOD);
    let ours: BTreeMap<String, u64> = fold(
        &samples,
        &sym,
        FoldOptions {
            include_comm: true,
            annotate_kernel: true,
        },
    )
    .into_iter()
    .collect();
    assert_eq!(theirs, ours, "perf.script:\n{script}");
    assert!(
        ours.keys().any(|k| k.starts_with("my_prog;")),
        "a comm with a space is one frame"
    );
}

/// `stack count` lines, counts divided by `period` (each must divide).
pub fn parse_folded(text: &str, period: u64) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let (stack, n) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("no count: {line}"));
        let n: u64 = n.parse().unwrap_or_else(|_| panic!("bad count: {line}"));
        assert_eq!(n % period, 0, "{line}");
        *m.entry(stack.to_string()).or_default() += n / period;
    }
    m
}
