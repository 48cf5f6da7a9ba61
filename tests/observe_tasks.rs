//! Task identity read from the guest kernel (debian image, P87 shell
//! workload on 2 harts): samples of the shell window name the shell `sh`
//! and its children with real pids, idle is `swapper/N` on hart N, user
//! samples never belong to kernel threads, and the timeline records each
//! hart's task switches. Through the binary, `inferno-collapse-perf`
//! reading perf.script gives exactly folded.txt's stacks.

use crate::observe_support;
use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

use hs_machine::hs_timing::Atomic;
use hs_machine::{ObserveOptions, SamplerConfig};
use hs_observe::export::HotFunctions;
use hs_observe::{EventKind, Privilege};
use observe_support::*;

const SHELL_WINDOW: &str = "shell banner";

#[test]
fn debian_p87_samples_and_switches_name_tasks_from_the_kernel() {
    let opts = ObserveOptions {
        events: true,
        ..ObserveOptions::default()
    };
    let sampling = SamplerConfig {
        from_phase: Some(SHELL_WINDOW.into()),
        ..SamplerConfig::default()
    };
    let run = run_with(
        "debian",
        &workload("p87-shell"),
        2,
        &opts,
        Some(sampling),
        |_| Atomic,
    );
    let samples = &run.record.samples;
    assert!(
        samples.len() > 5_000,
        "{} samples in the shell window",
        samples.len()
    );

    // Every sample of the window knows its task (the kernel runs by then).
    let unnamed = samples.iter().filter(|s| s.task.is_none()).count();
    assert_eq!(unnamed, 0, "{unnamed} samples without a task");
    let task = |s: &hs_observe::Sample| s.task.clone().unwrap();

    // The shell and its children: `sh` with pids above init's, in user mode too.
    let sh: Vec<_> = samples.iter().filter(|s| &*task(s).comm == "sh").collect();
    assert!(sh.len() > 500, "{} samples of sh", sh.len());
    assert!(sh.iter().all(|s| task(s).pid > 1));
    assert!(
        sh.iter().any(|s| s.privilege == Privilege::User),
        "sh never sampled in user mode"
    );
    let sh_pids: BTreeSet<u32> = sh.iter().map(|s| task(s).pid).collect();
    assert!(
        sh_pids.len() > 5,
        "the shell forks a child per command: pids {sh_pids:?}"
    );

    // Idle is pid 0, named by its hart; nothing else is pid 0.
    let mut idle_harts = BTreeSet::new();
    for s in samples {
        let t = task(s);
        assert_eq!(t.pid == 0, t.tid == 0, "{t:?}");
        if t.pid == 0 {
            assert_eq!(
                &*t.comm,
                format!("swapper/{}", s.hart).as_str(),
                "idle on hart {}",
                s.hart
            );
            assert_ne!(s.privilege, Privilege::User);
            idle_harts.insert(s.hart);
        }
        // A thread's process id is its group leader's, never above its own.
        assert!(t.pid <= t.tid, "{t:?}");
        // Kernel threads never run user code: sscratch named the right task.
        if s.privilege == Privilege::User {
            assert!(
                !t.comm.starts_with("kworker")
                    && !t.comm.starts_with("swapper")
                    && !t.comm.starts_with("ksoftirqd"),
                "{t:?}"
            );
        }
    }
    assert_eq!(
        idle_harts,
        BTreeSet::from([0, 1]),
        "both harts idle between commands"
    );

    // hot.md's split by task agrees.
    let hot = HotFunctions::compute(samples, run.symbols.symbolizer(), run.record.sample_period);
    assert_eq!(hot.samples_of_comm("sh"), sh.len() as u64);
    assert_eq!(hot.harts.len(), 2);

    // The timeline: each hart's task switches, never the same task twice in a row.
    let mut per_hart: BTreeMap<u16, Vec<(u32, u32, String)>> = BTreeMap::new();
    for e in &run.record.events {
        if let EventKind::TaskSwitch { pid, tid, comm } = &e.kind {
            per_hart
                .entry(e.hart)
                .or_default()
                .push((*pid, *tid, comm.clone()));
        }
    }
    assert_eq!(per_hart.keys().copied().collect::<Vec<_>>(), vec![0, 1]);
    for (h, list) in &per_hart {
        assert!(list.len() > 20, "hart {h}: {} switches", list.len());
        assert!(
            list.windows(2).all(|w| w[0] != w[1]),
            "hart {h} repeats a task"
        );
        assert!(
            list.iter().any(|t| t.2 == format!("swapper/{h}")),
            "hart {h} never idles"
        );
    }
    assert!(
        per_hart.values().flatten().any(|t| t.2 == "sh" && t.0 > 1),
        "sh never switched in"
    );
}

/// `inferno-collapse-perf`, if installed (see `crates/observe/tests/inferno.rs`).
fn collapse_tool() -> Option<PathBuf> {
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

fn folded(text: &str, divide_by: u64) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for l in text.lines().filter(|l| !l.is_empty()) {
        let (stack, n) = l
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("folded line {l:?}"));
        let n: u64 = n.parse().unwrap_or_else(|_| panic!("folded line {l:?}"));
        assert_eq!(n % divide_by, 0, "{l}");
        *m.entry(stack.to_string()).or_default() += n / divide_by;
    }
    m
}

/// Through the binary: perf.script headers carry real tasks, and a stack
/// collapser nobody here wrote turns perf.script into folded.txt's stacks.
#[test]
fn perf_script_tasks_and_inferno_agree_through_the_binary() {
    let _ = image("debian");
    let dir = support::Scratch::new("observe-tasks");
    let prof = dir.path("prof");
    let work = workload("p87-shell");
    let out = support::hartscope(
        &[
            "boot",
            "--image",
            "debian",
            "--smp",
            "2",
            "--workload",
            work.to_str().unwrap(),
            "--profile",
            prof.to_str().unwrap(),
            "--profile-from",
            SHELL_WINDOW,
            "--perf-script",
        ],
        &dir,
        support::BOOT_DEADLINE,
    );
    support::assert_workload_finished(&out, 0);
    let script = std::fs::read_to_string(prof.join("perf.script")).unwrap();
    let mut comms: BTreeMap<String, u64> = BTreeMap::new();
    for block in script.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let header = block.lines().next().unwrap();
        let f: Vec<&str> = header.split_whitespace().collect();
        let (pid, tid) = f[1].split_once('/').unwrap_or_else(|| panic!("{header}"));
        let (pid, tid): (u32, u32) = (pid.parse().unwrap(), tid.parse().unwrap());
        let cpu = f[2].trim_matches(|c| c == '[' || c == ']');
        if pid == 0 {
            assert_eq!(
                f[0],
                format!("swapper/{}", cpu.parse::<u32>().unwrap()),
                "{header}"
            );
        }
        assert!(pid <= tid, "{header}");
        *comms.entry(f[0].to_string()).or_default() += 1;
    }
    for c in ["sh", "swapper/0", "swapper/1", "hsmark"] {
        assert!(
            comms.contains_key(c),
            "no `{c}` samples in perf.script: {comms:?}"
        );
    }
    let hot = std::fs::read_to_string(prof.join("hot.md")).unwrap();
    assert!(
        hot.contains("### By task") && hot.contains("### By hart") && hot.contains("| sh |"),
        "{hot}"
    );

    let ours = folded(
        &std::fs::read_to_string(prof.join("folded.txt")).unwrap(),
        1,
    );
    assert!(
        ours.keys().any(|k| k.starts_with("sh;")),
        "no stack rooted at sh"
    );
    // scripts/setup-host.sh installs it; a check that silently skips is no check.
    let tool = collapse_tool().expect(
        "inferno-collapse-perf is not installed: run scripts/setup-host.sh (cargo install inferno)",
    );
    let out = Command::new(&tool)
        .arg("--kernel")
        .arg(prof.join("perf.script"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs = folded(&String::from_utf8(out.stdout).unwrap(), 1024);
    assert_eq!(theirs.len(), ours.len(), "distinct stacks");
    let differ: Vec<_> = ours
        .iter()
        .filter(|(k, v)| theirs.get(*k) != Some(v))
        .take(5)
        .collect();
    assert!(differ.is_empty(), "stacks that differ (ours): {differ:?}");
}
