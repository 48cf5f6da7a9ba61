//! Cycles per `getppid` (the `nullsys` workload) and the instruction trace
//! of one call, and how the two relate:
//!
//! * one loop iteration = the traced entry/exit path (from the `ecall` to
//!   the `sret`, every instruction with its cycles) + the user-side loop
//!   (the gap between two traced calls);
//! * the median time between two `getppid` entries is exactly that;
//! * the per-call figure (phase cycles / calls) adds whatever else the
//!   hart did during the phase (timer interrupts, kernel threads), so it is
//!   at least the iteration and, on the lean `custom` kernel, within 5 % of it.

use crate::observe_support;
use crate::support;

use hs_machine::hs_timing::Atomic;
use hs_machine::reports::{itrace_report, trace_windows};
use hs_machine::{ItraceSpec, ObserveOptions};
use hs_observe::{EventKind, ItraceLine, Privilege};
use observe_support::*;

const LOOP: &str = "nullsys getppid loop";
const GETPPID: u64 = 173;

/// Window checks shared by both images: starts with the user `ecall`,
/// ends with the `sret` back to user, no gaps, every line named.
fn check_window(lines: &[ItraceLine], getppid_symbol: &str) {
    let first = lines.first().expect("an empty window");
    let last = lines.last().unwrap();
    assert_eq!(
        (first.privilege, first.disasm.as_str()),
        (Privilege::User, "ecall"),
        "{first:?}"
    );
    assert_eq!(
        first.symbol.as_ref().map(|s| s.name.as_str()),
        Some("syscall"),
        "the ecall is in libc's syscall()"
    );
    assert_eq!(
        (last.privilege, last.disasm.as_str()),
        (Privilege::Supervisor, "sret"),
        "{last:?}"
    );
    for w in lines.windows(2) {
        assert_eq!(
            w[0].cycle + w[0].cycles,
            w[1].cycle,
            "lines are back to back: {:?} then {:?}",
            w[0],
            w[1]
        );
        assert!(w[0].cycles >= 1);
    }
    let names: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.symbol.as_ref().map(|s| s.name.as_str()))
        .collect();
    assert_eq!(
        names.len(),
        lines.len(),
        "every traced instruction is named"
    );
    assert!(
        names.contains(&"handle_exception"),
        "trap entry missing: {names:?}"
    );
    assert!(
        names.contains(&getppid_symbol),
        "{getppid_symbol} missing: {names:?}"
    );
}

#[test]
fn custom_getppid_trace_adds_up_to_the_cycles_per_call() {
    let spec = ItraceSpec::parse(&format!("syscall=getppid,count=2,in={LOOP}")).unwrap();
    let opts = ObserveOptions {
        events: true,
        max_events: 0,
        itrace: Some(spec.clone()),
    };
    let run = run_with("custom", &workload("nullsys-run"), 1, &opts, None, |_| {
        Atomic
    });
    assert_eq!(
        run.cycle_mismatches, 0,
        "the recorder's cycle accounting matches the hart's"
    );
    let rec = &run.record;

    // The per-call figure.
    let i = rec
        .phases
        .iter()
        .position(|p| p.label == LOOP)
        .expect("loop phase");
    let phase = &rec.phases[i];
    let block = &rec.phase_stats[i];
    let calls = stat(block, "system.syscalls.getppid");
    assert_eq!(calls, 100_000);
    let per_call = phase.cycles() as f64 / calls as f64;

    // Two windows in the loop, the same path, `gap` cycles of user code apart.
    let windows = trace_windows(&rec.itrace);
    assert_eq!(windows.len(), 2, "{windows:?}");
    for w in &windows {
        assert!(w.first_cycle >= phase.start_cycle && w.end_cycle <= phase.end_cycle);
        assert_eq!(w.cycles, w.end_cycle - w.first_cycle);
    }
    assert_eq!(
        windows[0].cycles, windows[1].cycles,
        "the same path costs the same on the atomic model"
    );
    let n0 = windows[0].lines;
    check_window(&rec.itrace[..n0], "sys_getppid");
    check_window(&rec.itrace[n0..], "sys_getppid");
    let path = windows[0].cycles;
    let gap = windows[1].first_cycle - windows[0].end_cycle;
    assert!(
        gap > 0 && gap < 64,
        "user-side loop overhead of {gap} cycles"
    );

    // Median time between two getppid entries = path + gap, exactly.
    let mut entries: Vec<u64> = rec
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Syscall { number: GETPPID }))
        .filter(|e| e.cycle >= phase.start_cycle && e.cycle < phase.end_cycle)
        .map(|e| e.cycle)
        .collect();
    assert_eq!(entries.len() as u64, calls);
    let mut gaps: Vec<u64> = entries.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_unstable();
    let median = gaps[gaps.len() / 2];
    assert_eq!(
        median,
        path + gap,
        "median iteration = traced path ({path}) + user loop ({gap})"
    );
    entries.clear();

    // The per-call figure is the iteration plus what else ran in the phase.
    assert!(per_call >= median as f64, "{per_call} < {median}");
    assert!(
        per_call < median as f64 * 1.05,
        "per call {per_call:.1} vs iteration {median}: more than 5 % of other work"
    );
    // The mean time inside the call is the traced path plus interrupts taken inside calls.
    let inside = block
        .get("system.syscallMeanCycles.getppid")
        .unwrap()
        .value
        .as_f64();
    assert!(
        inside >= path as f64 && inside < path as f64 * 1.05,
        "mean {inside:.1} vs traced {path}"
    );

    // The report: the trace, the windows with their sums, an annotated summary.
    let text = itrace_report(rec, &spec);
    assert!(
        text.contains(&format!(
            "| 1 | 0 | {} | {} | {n0} | {path} |",
            windows[0].first_cycle, windows[0].end_cycle
        )),
        "{text}"
    );
    assert!(
        text.contains("## Cycles by function") && text.contains("Disassembly of sys_getppid"),
        "{text}"
    );
}

/// Through the binary, on the Debian kernel: `--itrace syscall=getppid,count=1`
/// traces the first call (the shell's, during boot), and the stats and the
/// summary line give the per-call figure. Debian's kernel keeps running
/// crypto self-tests in kernel threads while the loop runs, so there the
/// per-call figure is well above one traced call; the test checks the
/// relation (figure ≥ traced path) and the numbers' consistency.
#[test]
fn debian_getppid_trace_and_figure_through_the_binary() {
    let _ = image("debian");
    let dir = support::Scratch::new("observe-nullsys-debian");
    let (trace, stats) = (dir.path("getppid.itrace"), dir.path("stats.txt"));
    let work = workload("nullsys-run");
    let out = support::hartscope(
        &[
            "boot",
            "--image",
            "debian",
            "--workload",
            work.to_str().unwrap(),
            "--itrace",
            "syscall=getppid,count=1",
            "--itrace-out",
            trace.to_str().unwrap(),
            "--stats-txt",
            stats.to_str().unwrap(),
        ],
        &dir,
        support::BOOT_DEADLINE,
    );
    support::assert_workload_finished(&out, 0);
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(
        text.starts_with("# hartscope instruction trace: syscall=getppid,count=1"),
        "{text}"
    );
    // One window: its row in the windows table, and lines from ecall to sret.
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("| 1 | 0 | "))
        .collect();
    assert_eq!(rows.len(), 1, "{text}");
    let cols: Vec<u64> = rows[0]
        .trim_matches('|')
        .split('|')
        .map(|c| c.trim().parse().unwrap())
        .collect();
    let (first, end, lines, sum) = (cols[2], cols[3], cols[4], cols[5]);
    assert_eq!(sum, end - first);
    let header = text
        .lines()
        .position(|l| l.trim_start().starts_with("hart") && l.contains("instruction"))
        .expect("column header");
    let body: Vec<&str> = text.lines().skip(header + 1).take(lines as usize).collect();
    assert!(
        body[0].contains(" U ") && body[0].contains("ecall"),
        "{}",
        body[0]
    );
    assert!(body.last().unwrap().contains(" S ") && body.last().unwrap().contains("sret"));
    assert!(body.iter().any(|l| l.contains("handle_exception+0x0")));
    assert!(body.iter().any(|l| l.contains("__riscv_sys_getppid+0x0")));
    let cycles: u64 = body
        .iter()
        .map(|l| l.split_whitespace().nth(5).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(cycles, sum, "per-instruction cycles add up to the window");

    let st = std::fs::read_to_string(&stats).unwrap();
    let block = st
        .split("Begin Simulation Statistics")
        .find(|b| b.contains(LOOP))
        .expect("loop phase block");
    let value = |name: &str| -> f64 {
        let line = block
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing"));
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    assert_eq!(value("system.syscalls.getppid"), 100_000.0);
    let per_call = value("phase.cycles") / 100_000.0;
    assert!(
        per_call >= sum as f64,
        "per call {per_call} below one traced call {sum}"
    );
    assert!(value("system.syscallMeanCycles.getppid") >= sum as f64);
    let line = format!("{:.1} cycles per getppid", per_call);
    assert!(
        out.stderr.contains(&line),
        "summary line `{line}` missing:\n{}",
        out.stderr
    );
}

/// `--annotate` on the `custom` kernel (built with line tables): the
/// function's instructions as they stand in guest memory, the samples taken
/// at each and the source lines above them; and a warm call's trace
/// (`skip=`) whose kernel lines carry their source line. A name that is not
/// a kernel function is refused before the guest runs.
#[test]
fn custom_annotate_and_source_lines_through_the_binary() {
    let _ = image("custom");
    let dir = support::Scratch::new("observe-nullsys-annotate");
    let (prof, trace) = (dir.path("prof"), dir.path("getppid.itrace"));
    let work = workload("nullsys-run");
    let spec = format!("syscall=getppid,skip=500,in={LOOP}");
    let out = support::hartscope(
        &[
            "boot",
            "--image",
            "custom",
            "--workload",
            work.to_str().unwrap(),
            "--profile",
            prof.to_str().unwrap(),
            "--profile-from",
            LOOP,
            "--annotate",
            "sys_getppid",
            "--itrace",
            &spec,
            "--itrace-out",
            trace.to_str().unwrap(),
        ],
        &dir,
        support::BOOT_DEADLINE,
    );
    support::assert_workload_finished(&out, 0);
    // The flame graph's title names the profile's window as studies do.
    let svg = std::fs::read_to_string(prof.join("flamegraph.svg")).unwrap();
    let heading = format!(">custom — from phase `{LOOP}` to the end — ");
    assert!(svg.contains(&heading), "no `{heading}` in the flame graph");
    let text = std::fs::read_to_string(prof.join("annotate-sys_getppid.txt")).unwrap();
    assert!(
        text.starts_with(" Percent | Samples | Disassembly of sys_getppid"),
        "{text}"
    );
    assert!(
        text.contains(": kernel/sys.c:"),
        "source lines from the line tables:\n{text}"
    );
    // "(…; N of M samples, …)": N is the sum of the per-instruction column.
    let n: u64 = text
        .split("; ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .expect("the sample count in the header");
    let per_insn: u64 = text
        .lines()
        .filter(|l| l.contains(" <+0x"))
        .map(|l| l.split('|').nth(1).unwrap().trim().parse::<u64>().unwrap())
        .sum();
    assert!(
        n > 0,
        "no samples in sys_getppid during the getppid loop:\n{text}"
    );
    assert_eq!(per_insn, n);
    assert!(
        text.lines().any(|l| l.contains("jalr zero,0(ra)")),
        "the function's return is disassembled"
    );

    let t = std::fs::read_to_string(&trace).unwrap();
    assert!(
        t.starts_with("# hartscope instruction trace: syscall=getppid,count=1,skip=500,"),
        "{t}"
    );
    assert!(
        t.lines()
            .any(|l| l.contains("handle_exception+0x0")
                && l.contains("@ arch/riscv/kernel/entry.S:")),
        "{t}"
    );
    assert!(
        t.lines()
            .any(|l| l.contains("sys_getppid+0x") && l.contains("@ kernel/sys.c:")),
        "{t}"
    );

    // A typo costs no run: refused before the guest starts.
    let out = support::hartscope(
        &[
            "boot",
            "--image",
            "custom",
            "--workload",
            work.to_str().unwrap(),
            "--profile",
            prof.to_str().unwrap(),
            "--annotate",
            "no_such_function_xyz",
        ],
        &dir,
        std::time::Duration::from_secs(60),
    );
    let err = &out.stderr;
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("--annotate no_such_function_xyz: no kernel function of that name"),
        "{err}"
    );
    assert!(!err.contains("MIPS"), "the guest must not have run: {err}");
}
