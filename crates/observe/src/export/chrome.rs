//! Chrome trace-event JSON (the format Perfetto and `chrome://tracing`
//! open): one track per hart, a track of phases, duration slices for `wfi`
//! idle spans and system calls, instants for traps and markers, and flow
//! arrows from each IPI send to the receive that consumed it. Beside each
//! hart's track, a `hart N tasks` track shows which Linux task ran (one
//! slice per task switch, named by `comm`). It is a track of its own
//! because switches are noticed at slice ends, so its slices need not nest
//! with the hart's system-call slices.
//!
//! Size: a hart that wakes from `wfi` only to take an interrupt and sleep
//! again (a timer tick, an IPI it only acknowledges) would draw one idle
//! slice per wake. Consecutive idle spans of one hart whose gap is at most
//! [`IDLE_MERGE_GAP_NS`] and holds nothing but traps (no system call, IPI,
//! task switch, context switch or marker on that hart) become one `wfi
//! idle` slice; its `args` keep what the merge hides: `wakes` (gaps
//! merged) and `idle_us` (the time actually idle, so busy time =
//! `dur - idle_us`). The traps in the gaps stay as instants inside the
//! slice. The JSON is written without indentation.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::text::cycles_to_ps;
use crate::error::{ObserveError, Result};
use crate::event::{cause_name, syscall_name, Event, EventKind};
use crate::phase::Phase;

/// Process holding one thread per hart (`tid` = hart + 1).
const HARTS_PID: u32 = 1;
/// Process holding the phase track.
const PHASES_PID: u32 = 2;
const PHASES_TID: u32 = 1;

fn hart_tid(hart: u16) -> u32 {
    // tid 0 means "no thread" to some trace readers.
    hart as u32 + 1
}

/// The track of the tasks hart `hart` ran.
fn tasks_tid(hart: u16) -> u32 {
    TASKS_TID_BASE + hart as u32
}
const TASKS_TID_BASE: u32 = 100_000;

/// The longest busy gap (guest nanoseconds) between two idle spans of a
/// hart that still merges them into one slice.
pub const IDLE_MERGE_GAP_NS: u64 = 20_000;

/// A hart's idle spans after merging: `(start, end, idle cycles, wakes)`,
/// keyed by the index of the first span's event.
fn merged_idle(
    events: &[Event],
    order: &[usize],
    hz: u64,
) -> BTreeMap<usize, (u64, u64, u64, u64)> {
    let max_gap = (IDLE_MERGE_GAP_NS as u128 * hz as u128 / 1_000_000_000) as u64;
    let mut done = BTreeMap::new();
    // hart -> (first event, start, end, idle, wakes, blocked since end)
    let mut open: BTreeMap<u16, (usize, u64, u64, u64, u64, bool)> = BTreeMap::new();
    for &i in order {
        let e = &events[i];
        match e.kind {
            EventKind::WfiIdle { end_cycle } => {
                let end = end_cycle.max(e.cycle);
                let len = end - e.cycle;
                match open.get_mut(&e.hart) {
                    Some(o) if !o.5 && e.cycle >= o.2 && e.cycle - o.2 <= max_gap => {
                        o.2 = end;
                        o.3 += len;
                        o.4 += 1;
                    }
                    _ => {
                        if let Some(o) = open.insert(e.hart, (i, e.cycle, end, len, 0, false)) {
                            done.insert(o.0, (o.1, o.2, o.3, o.4));
                        }
                    }
                }
            }
            // Traps alone do not end a merge: they stay as instants.
            EventKind::Exception { .. } | EventKind::Interrupt { .. } => {}
            _ => {
                if let Some(o) = open.get_mut(&e.hart) {
                    o.5 = true;
                }
            }
        }
    }
    for (_, o) in open {
        done.insert(o.0, (o.1, o.2, o.3, o.4));
    }
    done
}

#[derive(Serialize)]
struct TraceEvent {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'static str>,
    ph: &'static str,
    ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: u32,
    tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'static str>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    args: BTreeMap<&'static str, serde_json::Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Trace {
    trace_events: Vec<TraceEvent>,
    display_time_unit: &'static str,
}

struct Clock {
    hz: u64,
}

impl Clock {
    fn us(&self, cycle: u64) -> f64 {
        cycles_to_ps(cycle, self.hz) as f64 / 1e6
    }
    fn dur(&self, start: u64, end: u64) -> f64 {
        (cycles_to_ps(end, self.hz) - cycles_to_ps(start.min(end), self.hz)) as f64 / 1e6
    }
}

fn meta(name: &str, pid: u32, tid: u32, key: &'static str, value: serde_json::Value) -> TraceEvent {
    TraceEvent {
        name: name.to_string(),
        cat: None,
        ph: "M",
        ts: 0.0,
        dur: None,
        pid,
        tid,
        s: None,
        id: None,
        bp: None,
        args: BTreeMap::from([(key, value)]),
    }
}

fn slice(name: String, cat: &'static str, ts: f64, dur: f64, pid: u32, tid: u32) -> TraceEvent {
    TraceEvent {
        name,
        cat: Some(cat),
        ph: "X",
        ts,
        dur: Some(dur),
        pid,
        tid,
        s: None,
        id: None,
        bp: None,
        args: BTreeMap::new(),
    }
}

fn instant(name: String, cat: &'static str, ts: f64, tid: u32) -> TraceEvent {
    TraceEvent {
        name,
        cat: Some(cat),
        ph: "i",
        ts,
        dur: None,
        pid: HARTS_PID,
        tid,
        s: Some("t"),
        id: None,
        bp: None,
        args: BTreeMap::new(),
    }
}

fn syscall_label(number: u64) -> String {
    match syscall_name(number) {
        Some(n) => format!("syscall {n} ({number})"),
        None => format!("syscall {number}"),
    }
}

fn trap_label(kind: &str, interrupt: bool, cause: u64) -> String {
    match cause_name(interrupt, cause) {
        Some(n) => format!("{kind}: {n}"),
        None => format!("{kind}: cause {cause}"),
    }
}

/// One slice per task a hart ran, from its switch to the hart's next one
/// (or the end of the trace); a switch to the task already running (which
/// the recorder does not emit) extends the slice.
fn task_slices(
    events: &[Event],
    order: &[usize],
    last_cycle: u64,
    clock: &Clock,
    out: &mut Vec<TraceEvent>,
) {
    let mut running: BTreeMap<u16, (u64, u32, u32, &str)> = BTreeMap::new();
    let emit = |out: &mut Vec<TraceEvent>,
                hart: u16,
                (start, pid, tid, comm): (u64, u32, u32, &str),
                end: u64| {
        let mut e = slice(
            comm.to_string(),
            "task",
            clock.us(start),
            clock.dur(start, end),
            HARTS_PID,
            tasks_tid(hart),
        );
        e.args.insert("pid", pid.into());
        e.args.insert("tid", tid.into());
        out.push(e);
    };
    for &i in order {
        let e = &events[i];
        if let EventKind::TaskSwitch { pid, tid, comm } = &e.kind {
            if let Some(prev) = running.get(&e.hart).copied() {
                if (prev.1, prev.2, prev.3) == (*pid, *tid, comm.as_str()) {
                    continue;
                }
                emit(out, e.hart, prev, e.cycle);
            }
            running.insert(e.hart, (e.cycle, *pid, *tid, comm.as_str()));
        }
    }
    for (hart, prev) in running {
        emit(out, hart, prev, last_cycle);
    }
}

/// Render events and phases as a Chrome trace; `guest_hz` turns cycles into
/// microseconds. Events may come in any order: they are ordered by cycle
/// (stably, so simultaneous events keep their recorded order).
pub fn chrome_trace(events: &[Event], phases: &[Phase], guest_hz: u64) -> Result<String> {
    if guest_hz == 0 {
        return Err(ObserveError::ZeroFrequency);
    }
    let clock = Clock { hz: guest_hz };
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by_key(|&i| events[i].cycle);
    let last_cycle = events
        .iter()
        .map(|e| match e.kind {
            EventKind::WfiIdle { end_cycle } => end_cycle.max(e.cycle),
            _ => e.cycle,
        })
        .chain(phases.iter().map(|p| p.end_cycle))
        .max()
        .unwrap_or(0);

    let mut harts: BTreeSet<u16> = events.iter().map(|e| e.hart).collect();
    harts.extend(phases.iter().flat_map(|p| p.harts.iter().map(|h| h.hart)));

    let mut out = Vec::new();
    out.push(meta(
        "process_name",
        HARTS_PID,
        0,
        "name",
        "hartscope guest".into(),
    ));
    out.push(meta(
        "process_sort_index",
        HARTS_PID,
        0,
        "sort_index",
        1.into(),
    ));
    let with_tasks: BTreeSet<u16> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::TaskSwitch { .. }))
        .map(|e| e.hart)
        .collect();
    for &h in &harts {
        out.push(meta(
            "thread_name",
            HARTS_PID,
            hart_tid(h),
            "name",
            format!("hart {h}").into(),
        ));
        out.push(meta(
            "thread_sort_index",
            HARTS_PID,
            hart_tid(h),
            "sort_index",
            (2 * h as u64).into(),
        ));
        if with_tasks.contains(&h) {
            out.push(meta(
                "thread_name",
                HARTS_PID,
                tasks_tid(h),
                "name",
                format!("hart {h} tasks").into(),
            ));
            out.push(meta(
                "thread_sort_index",
                HARTS_PID,
                tasks_tid(h),
                "sort_index",
                (2 * h as u64 + 1).into(),
            ));
        }
    }
    task_slices(events, &order, last_cycle, &clock, &mut out);
    if !phases.is_empty() {
        out.push(meta("process_name", PHASES_PID, 0, "name", "phases".into()));
        out.push(meta(
            "process_sort_index",
            PHASES_PID,
            0,
            "sort_index",
            0.into(),
        ));
        out.push(meta(
            "thread_name",
            PHASES_PID,
            PHASES_TID,
            "name",
            "phases".into(),
        ));
    }
    for p in phases {
        let mut e = slice(
            format!("{}. {}", p.index, p.label),
            "phase",
            clock.us(p.start_cycle),
            clock.dur(p.start_cycle, p.end_cycle),
            PHASES_PID,
            PHASES_TID,
        );
        e.args.insert("cycles", p.cycles().into());
        e.args.insert("instret", p.instret().into());
        out.push(e);
    }

    // IPI flows: each receive consumes every earlier unconsumed send aimed
    // at its hart (from the named sender, when known). MSIP is one bit, so
    // several sends may wake one receive.
    let mut pending: BTreeMap<u16, Vec<(usize, u16)>> = BTreeMap::new();
    let mut flows_into: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let mut flow_id_of_send: BTreeMap<usize, u64> = BTreeMap::new();
    for &i in &order {
        let e = &events[i];
        match e.kind {
            EventKind::IpiSent { to } => pending.entry(to).or_default().push((i, e.hart)),
            EventKind::IpiReceived { from } => {
                let list = pending.entry(e.hart).or_default();
                let (taken, kept): (Vec<_>, Vec<_>) = list
                    .drain(..)
                    .partition(|&(_, src)| from.is_none_or(|f| f == src));
                *list = kept;
                for (send, _) in taken {
                    flow_id_of_send.insert(send, flow_id_of_send.len() as u64 + 1);
                    flows_into.entry(i).or_default().push(send);
                }
            }
            _ => {}
        }
    }

    // Syscall slices run from the ecall to the return to U-mode on the same
    // hart; a context switch first means the task blocked, so the slice ends
    // there (slices on one track must nest).
    let mut open: BTreeMap<u16, (u64, u64)> = BTreeMap::new();
    let close = |out: &mut Vec<TraceEvent>,
                 hart: u16,
                 (start, number): (u64, u64),
                 end: u64,
                 ended_by: &str| {
        let mut e = slice(
            syscall_label(number),
            "syscall",
            clock.us(start),
            clock.dur(start, end),
            HARTS_PID,
            hart_tid(hart),
        );
        e.args.insert("number", number.into());
        e.args.insert("ended_by", ended_by.into());
        out.push(e);
    };

    let idle = merged_idle(events, &order, guest_hz);
    let one_cycle_after = |c: u64| clock.dur(c, c.saturating_add(1));
    for &i in &order {
        let e = &events[i];
        let tid = hart_tid(e.hart);
        let ts = clock.us(e.cycle);
        match &e.kind {
            EventKind::Exception {
                cause,
                tval,
                target,
            } => {
                let mut ev = instant(trap_label("exception", false, *cause), "trap", ts, tid);
                ev.args.insert("cause", (*cause).into());
                ev.args.insert("tval", format!("{tval:#x}").into());
                ev.args.insert("target", target.letter().to_string().into());
                out.push(ev);
            }
            EventKind::Interrupt { cause, plic_source } => {
                let mut ev = instant(trap_label("interrupt", true, *cause), "irq", ts, tid);
                ev.args.insert("cause", (*cause).into());
                if let Some(src) = plic_source {
                    ev.args.insert("plic_source", (*src).into());
                }
                out.push(ev);
            }
            EventKind::IpiSent { to } => {
                let dur = one_cycle_after(e.cycle);
                out.push(slice(
                    format!("IPI to hart {to}"),
                    "ipi",
                    ts,
                    dur,
                    HARTS_PID,
                    tid,
                ));
                if let Some(&id) = flow_id_of_send.get(&i) {
                    out.push(TraceEvent {
                        name: "IPI".into(),
                        cat: Some("ipi"),
                        ph: "s",
                        ts,
                        dur: None,
                        pid: HARTS_PID,
                        tid,
                        s: None,
                        id: Some(id),
                        bp: None,
                        args: BTreeMap::new(),
                    });
                }
            }
            EventKind::IpiReceived { from } => {
                let name = match from {
                    Some(f) => format!("IPI from hart {f}"),
                    None => "IPI received".to_string(),
                };
                out.push(slice(
                    name,
                    "ipi",
                    ts,
                    one_cycle_after(e.cycle),
                    HARTS_PID,
                    tid,
                ));
                for send in flows_into.get(&i).into_iter().flatten() {
                    out.push(TraceEvent {
                        name: "IPI".into(),
                        cat: Some("ipi"),
                        ph: "f",
                        ts,
                        dur: None,
                        pid: HARTS_PID,
                        tid,
                        s: None,
                        id: flow_id_of_send.get(send).copied(),
                        bp: Some("e"),
                        args: BTreeMap::new(),
                    });
                }
            }
            EventKind::WfiIdle { .. } => {
                // A span merged into an earlier one draws nothing itself.
                if let Some(&(start, end, idle_cycles, wakes)) = idle.get(&i) {
                    let mut ev = slice(
                        "wfi idle".into(),
                        "idle",
                        clock.us(start),
                        clock.dur(start, end),
                        HARTS_PID,
                        tid,
                    );
                    if wakes > 0 {
                        ev.args.insert("wakes", wakes.into());
                        ev.args.insert("idle_us", clock.dur(0, idle_cycles).into());
                    }
                    out.push(ev);
                }
            }
            EventKind::Syscall { number } => {
                if let Some(prev) = open.insert(e.hart, (e.cycle, *number)) {
                    close(&mut out, e.hart, prev, e.cycle, "next syscall");
                }
            }
            EventKind::SyscallReturn => {
                // A return with no open call belongs to one cut by a switch.
                if let Some(prev) = open.remove(&e.hart) {
                    close(&mut out, e.hart, prev, e.cycle, "return");
                }
            }
            EventKind::ContextSwitch { satp } => {
                if let Some(prev) = open.remove(&e.hart) {
                    close(&mut out, e.hart, prev, e.cycle, "context switch");
                }
                let mut ev = instant("context switch".into(), "sched", ts, tid);
                ev.args.insert("satp", format!("{satp:#x}").into());
                out.push(ev);
            }
            EventKind::PhaseMarker { label } => {
                out.push(instant(format!("phase: {label}"), "marker", ts, tid));
            }
            EventKind::Instant { label } => {
                out.push(instant(label.clone(), "mark", ts, tid));
            }
            // (drawn by `task_slices`)
            EventKind::TaskSwitch { .. } => {}
        }
    }
    for (hart, prev) in std::mem::take(&mut open) {
        close(&mut out, hart, prev, last_cycle, "end of trace");
    }

    let trace = Trace {
        trace_events: out,
        display_time_unit: "ns",
    };
    serde_json::to_string(&trace).map_err(|e| ObserveError::Json {
        what: "the Chrome trace",
        reason: e.to_string(),
    })
}
