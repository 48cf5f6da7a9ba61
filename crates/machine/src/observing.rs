//! [`Observing<M>`]: a timing model that forwards every hook to `M` (and
//! returns `M`'s cycles unchanged) while recording what only the hart's hooks
//! can see: traps with their causes, system calls, `satp` writes, and — in
//! an active window — one record per instruction.
//!
//! Cycle accounting: an instruction costs 1 + what its hooks returned
//! (`hs_timing`'s rule). The hart tells the recorder where its clock
//! stands (`clock`) before every hook the recorder stamps (traps, `xret`,
//! `csr_write`), so counting and the timeline keep no running count.
//! An instruction trace needs every instruction's cycles: while one is
//! armed the recorder keeps its own cursor instead, `fetch` closing the
//! previous instruction and opening the next. An interrupt (or a fetch
//! fault, which has no `fetch`) costs the hart 1 cycle plus the trap
//! hook's; the recorder books it as a pseudo-instruction. The machine
//! re-synchronises the cursor with `Hart::cycle()` before every `run`, so
//! idle fast-forwards between runs need no hook.
//!
//! Whether a trace can be armed at all is part of the type
//! (`Observing<M, true>`): the per-instruction hooks of the usual
//! `Observing<M>` then compile to forwarding alone, with no test for a
//! trace (on the in-order debian P87 boot those tests cost 7–10%).

use std::collections::BTreeMap;

use hs_bus::GuestRam;
use hs_observe::{Event, EventKind, LineAccess, LineTouch, Privilege, StallCause};
use hs_timing::{InsnClass, JumpHint, MemKind, Operands, TimingModel, TrapInfo};

/// `satp`'s CSR number.
pub const CSR_SATP: u16 = 0x180;
/// Trap causes kept apart in the tallies (0..=15, the standard ones);
/// higher ones share the last bucket.
pub const CAUSE_BUCKETS: usize = 17;
/// Size of the cache lines the instruction trace reports.
pub const TRACE_LINE_BYTES: u64 = 64;

/// Counts of one hart, cumulative since reset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HartTally {
    /// Exceptions by cause (ecalls included); the last bucket holds causes ≥ 16.
    pub exceptions: [u64; CAUSE_BUCKETS],
    /// Interrupts by cause.
    pub interrupts: [u64; CAUSE_BUCKETS],
    /// System calls (`ecall` from U) by number (`a7`).
    pub syscalls: BTreeMap<u64, u64>,
    /// Cycles from each call's `ecall` to the end of its return to U, by
    /// number (a call that blocks includes the time others ran meanwhile).
    pub syscall_cycles: BTreeMap<u64, u64>,
    /// `satp` writes: address-space (context) switches.
    pub satp_writes: u64,
    /// `wfi` instructions executed.
    pub wfi: u64,
    /// `mret`/`sret` retired.
    pub xrets: u64,
}

impl HartTally {
    /// `self - earlier`, per counter (saturating: counters only grow).
    pub fn since(&self, earlier: &HartTally) -> HartTally {
        let mut d = self.clone();
        for i in 0..CAUSE_BUCKETS {
            d.exceptions[i] = d.exceptions[i].saturating_sub(earlier.exceptions[i]);
            d.interrupts[i] = d.interrupts[i].saturating_sub(earlier.interrupts[i]);
        }
        for (n, c) in d.syscalls.iter_mut() {
            *c = c.saturating_sub(earlier.syscalls.get(n).copied().unwrap_or(0));
        }
        d.syscalls.retain(|_, c| *c > 0);
        for (n, c) in d.syscall_cycles.iter_mut() {
            *c = c.saturating_sub(earlier.syscall_cycles.get(n).copied().unwrap_or(0));
        }
        d.syscall_cycles.retain(|_, c| *c > 0);
        d.satp_writes = d.satp_writes.saturating_sub(earlier.satp_writes);
        d.wfi = d.wfi.saturating_sub(earlier.wfi);
        d.xrets = d.xrets.saturating_sub(earlier.xrets);
        d
    }

    pub fn syscall_total(&self) -> u64 {
        self.syscalls.values().sum()
    }
}

fn bucket(cause: u64) -> usize {
    (cause as usize).min(CAUSE_BUCKETS - 1)
}

pub(crate) fn privilege(p: u8) -> Privilege {
    match p {
        0 => Privilege::User,
        1 => Privilege::Supervisor,
        _ => Privilege::Machine,
    }
}

/// What kind of step an instruction-trace record stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepKind {
    Insn,
    /// An interrupt taken between instructions (1 cycle + the trap's cost).
    Interrupt,
    /// A fetch that faulted before any instruction was read.
    FetchFault,
}

const ST_FETCH: usize = 0;
const ST_MEM: usize = 1;
const ST_WALK: usize = 2;
const ST_MMIO: usize = 3;
const ST_BRANCH: usize = 4;
const ST_SERIAL: usize = 5;
const ST_MULDIV: usize = 6;
const ST_TRAP: usize = 7;
/// Extra execute latency of an ALU or FP instruction.
const ST_EXEC: usize = 8;

/// Indexes of a step's cycles-by-cause array.
fn stall_cause(i: usize) -> StallCause {
    match i {
        ST_FETCH => StallCause::Fetch,
        ST_MEM => StallCause::Mem,
        ST_WALK => StallCause::Walker,
        ST_MMIO => StallCause::Mmio,
        ST_BRANCH => StallCause::Branch,
        ST_SERIAL => StallCause::Serialize,
        ST_MULDIV => StallCause::MulDiv,
        ST_TRAP => StallCause::Trap,
        _ => StallCause::Other("execute".to_string()),
    }
}

/// One traced step, before symbolisation.
#[derive(Clone, Debug)]
pub struct TraceStep {
    /// Which window (0-based, per hart) it belongs to.
    pub window: u32,
    pub kind: StepKind,
    pub cycle: u64,
    pub pc: u64,
    /// Physical address the instruction was fetched from.
    pub pa: u64,
    /// Raw instruction bits (low 16 for a compressed one), read at `pa`.
    pub bits: u32,
    pub len: u8,
    pub prv: u8,
    /// Cycles the step cost, base cost included (set when it closes).
    pub cycles: u64,
    /// Extra cycles by cause (see `stall_cause`).
    pub(crate) stall: [u64; 9],
    /// Cache lines touched, with what each access cost.
    pub lines: Vec<(u64, LineAccess, u64)>,
    /// For user-mode steps: the 64 code bytes around `pc`, so the binary can
    /// be recognised later (the address space may be gone by then).
    pub code: Option<Box<[u8; 64]>>,
}

impl TraceStep {
    /// The cause that cost the most extra cycles beyond `base` (what every
    /// instruction pays for that cause, e.g. a pipeline stage charged in
    /// the fetch hook); `None` when nothing did.
    pub fn stall(&self, base: &[u64; 9]) -> StallCause {
        let over = |i: usize| self.stall[i].saturating_sub(base[i]);
        let best = (0..9)
            .max_by_key(|&i| (over(i), std::cmp::Reverse(i)))
            .unwrap_or(0);
        if over(best) == 0 {
            StallCause::None
        } else {
            stall_cause(best)
        }
    }

    /// The lines touched; an access is a hit when it cost no more than
    /// `cheapest[kind]` (the cheapest access of its kind in the trace).
    pub fn touches(&self, cheapest: &dyn Fn(LineAccess) -> u64) -> Vec<LineTouch> {
        self.lines
            .iter()
            .map(|&(line, access, cost)| LineTouch {
                line,
                access,
                hit: cost <= cheapest(access),
            })
            .collect()
    }
}

/// What opens an instruction-trace window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceTrigger {
    /// From an `ecall` from U with this number to the next return to U.
    Syscall { number: u64 },
    /// Opened and closed by the machine at phase markers.
    Phase,
}

/// The U-mode instruction being executed while a syscall trigger waits: if
/// it turns out to be the `ecall`, it becomes the window's first step.
#[derive(Clone, Copy, Debug, Default)]
struct Pending {
    start: u64,
    pc: u64,
    pa: u64,
    len: u8,
    stall: [u64; 9],
}

/// Instruction-trace state of one hart.
pub(crate) struct Itrace {
    trigger: TraceTrigger,
    ram: GuestRam,
    pub active: bool,
    /// Windows may open (an `in=PHASE` restriction is met).
    pub allowed: bool,
    /// Phase windows: open / close once this hart's clock reaches the cycle
    /// (harts run a slice one after another, so at a marker the others
    /// stand at different times).
    pub open_at: Option<u64>,
    pub close_at: Option<u64>,
    /// Close the window once the open step closes (it was the `sret`).
    close_after: bool,
    /// Syscall windows this hart may still open.
    pub windows_left: u32,
    pub windows_opened: u32,
    /// Matching calls still to let pass before the first window opens.
    pub skip_left: u32,
    /// Steps this hart may still record.
    pub budget: u64,
    pub truncated: bool,
    pending: Option<Pending>,
    cur: Option<TraceStep>,
    pub steps: Vec<TraceStep>,
}

impl Itrace {
    fn new(trigger: TraceTrigger, windows: u32, budget: u64, ram: GuestRam) -> Itrace {
        Itrace {
            trigger,
            ram,
            active: false,
            allowed: true,
            open_at: None,
            close_at: None,
            close_after: false,
            windows_left: windows,
            windows_opened: 0,
            skip_left: 0,
            budget,
            truncated: false,
            pending: None,
            cur: None,
            steps: Vec::new(),
        }
    }

    /// Open a step; `bits` is the trap cause for interrupt and fault steps
    /// (an instruction's bits are read from RAM at `pa`).
    #[allow(clippy::too_many_arguments)]
    fn start_step(
        &mut self,
        kind: StepKind,
        cycle: u64,
        pc: u64,
        pa: u64,
        len: u8,
        prv: u8,
        bits: u32,
    ) {
        let bits = match kind {
            StepKind::Insn => self.ram.read(pa, len.clamp(2, 4)).unwrap_or(0) as u32,
            _ => bits,
        };
        let code = if prv == 0 && kind == StepKind::Insn {
            let mut b = Box::new([0u8; 64]);
            self.ram.read_bytes(pa & !63, &mut b[..]).then_some(b)
        } else {
            None
        };
        self.cur = Some(TraceStep {
            window: self.windows_opened.saturating_sub(1),
            kind,
            cycle,
            pc,
            pa,
            bits,
            len,
            prv,
            cycles: 0,
            stall: [0; 9],
            lines: Vec::new(),
            code,
        });
    }

    /// Close the open step at cycle `end`; end the window if it was asked to.
    fn finish_step(&mut self, end: u64) {
        if let Some(mut s) = self.cur.take() {
            s.cycles = end.saturating_sub(s.cycle);
            if self.budget == 0 {
                self.truncated = true;
                self.active = false;
                self.windows_left = 0;
            } else {
                self.budget -= 1;
                self.steps.push(s);
            }
        }
        if self.close_after {
            self.close_after = false;
            self.active = false;
        }
    }

    fn stall(&mut self, which: usize, c: u64) {
        if let Some(s) = self.cur.as_mut() {
            s.stall[which] += c;
        } else if let Some(p) = self.pending.as_mut() {
            p.stall[which] += c;
        }
    }

    fn touch(&mut self, pa: u64, access: LineAccess, cost: u64) {
        if let Some(s) = self.cur.as_mut() {
            let line = pa & !(TRACE_LINE_BYTES - 1);
            match s.lines.iter_mut().find(|t| t.0 == line && t.1 == access) {
                Some(t) => t.2 = t.2.max(cost),
                None => s.lines.push((line, access, cost)),
            }
        }
    }
}

/// Everything one hart's hooks recorded.
pub struct HartRecorder {
    hart: u16,
    /// Start cycle of the instruction being executed.
    start: u64,
    /// Cycles accounted so far (the current instruction's included).
    cursor: u64,
    /// Cost of the trap hook just called (booked by `trap_info`).
    trap_extra: u64,
    prv: u8,
    /// The system call in progress: number and the cycle of its `ecall`.
    in_syscall: Option<(u64, u64)>,
    /// An instruction trace is armed (checked on the hot path).
    tracing: bool,
    pub tally: HartTally,
    events: Option<Vec<Event>>,
    max_events: usize,
    pub events_dropped: u64,
    pub(crate) itrace: Option<Box<Itrace>>,
    /// Runs whose end the cursor did not match `Hart::cycle()` (a hook the
    /// recorder does not account for; 0 means the trace cycles are exact).
    pub cycle_mismatches: u64,
}

impl HartRecorder {
    pub fn new(hart: u16) -> HartRecorder {
        HartRecorder {
            hart,
            start: 0,
            cursor: 0,
            trap_extra: 0,
            prv: 3,
            in_syscall: None,
            tracing: false,
            tally: HartTally::default(),
            events: None,
            max_events: 0,
            events_dropped: 0,
            itrace: None,
            cycle_mismatches: 0,
        }
    }

    /// Keep timeline events, at most `max` (the rest are counted as dropped).
    pub fn record_events(&mut self, max: usize) {
        self.events = Some(Vec::new());
        self.max_events = max;
    }

    pub(crate) fn arm_itrace(
        &mut self,
        trigger: TraceTrigger,
        windows: u32,
        budget: u64,
        ram: GuestRam,
    ) {
        self.itrace = Some(Box::new(Itrace::new(trigger, windows, budget, ram)));
        self.tracing = true;
    }

    /// Before `run`: where the hart stands (time passed outside hooks).
    pub fn sync(&mut self, cycle: u64, prv: u8) {
        self.start = cycle;
        self.cursor = cycle;
        self.prv = prv;
    }

    /// After `run`: close the traced step and check the accounting.
    pub fn settle(&mut self, cycle: u64) {
        if let Some(it) = self.itrace.as_deref_mut() {
            it.pending = None;
            if it.cur.is_some() {
                it.finish_step(self.cursor);
            }
        }
        if self.tracing && self.cursor != cycle {
            self.cycle_mismatches += 1;
        }
        self.cursor = cycle;
    }

    pub fn events(&self) -> &[Event] {
        self.events.as_deref().unwrap_or(&[])
    }

    pub fn take_events(&mut self) -> Vec<Event> {
        self.events.as_mut().map(std::mem::take).unwrap_or_default()
    }

    pub(crate) fn push_event(&mut self, cycle: u64, kind: EventKind) {
        if let Some(ev) = self.events.as_mut() {
            if ev.len() < self.max_events {
                ev.push(Event {
                    hart: self.hart,
                    cycle,
                    kind,
                });
            } else {
                self.events_dropped += 1;
            }
        }
    }

    #[inline(always)]
    fn on_fetch(&mut self, pc: u64, pa: u64, len: u8, c: u64) {
        if self.tracing {
            self.fetch_traced(pc, pa, len, c);
        }
    }

    // The traced paths are out of line and cold: in the hart's loop, an
    // untraced run's hooks are then a flag test each.
    #[cold]
    #[inline(never)]
    fn fetch_traced(&mut self, pc: u64, pa: u64, len: u8, c: u64) {
        self.start = self.cursor;
        self.cursor += 1 + c;
        let (start, prv) = (self.start, self.prv);
        let Some(it) = self.itrace.as_deref_mut() else {
            return;
        };
        it.pending = None;
        if it.cur.is_some() {
            it.finish_step(start);
        }
        if it.open_at.is_some_and(|c| start >= c) {
            it.open_at = None;
            it.active = !it.truncated;
            it.windows_opened += 1;
        }
        if it.close_at.is_some_and(|c| start >= c) {
            it.close_at = None;
            it.active = false;
        }
        if it.active {
            it.start_step(StepKind::Insn, start, pc, pa, len, prv, 0);
            it.touch(pa, LineAccess::Fetch, c);
            it.stall(ST_FETCH, c);
        } else if prv == 0 && it.allowed && it.windows_left > 0 && it.trigger != TraceTrigger::Phase
        {
            let mut p = Pending {
                start,
                pc,
                pa,
                len,
                stall: [0; 9],
            };
            p.stall[ST_FETCH] = c;
            it.pending = Some(p);
        }
    }

    /// An instruction's hook charged `c`: only a trace needs it (the
    /// clock the hart gives covers the rest).
    #[inline(always)]
    fn add(&mut self, c: u64, stall: usize) {
        if self.tracing {
            self.advance(c, stall);
        }
    }

    /// Move the cursor by `c` charged for `stall`.
    #[cold]
    #[inline(never)]
    fn advance(&mut self, c: u64, stall: usize) {
        if c == hs_timing::ISSUED_WITH_PREVIOUS {
            // the second of a dual-issue pair: it takes back its cycle
            self.cursor = self.cursor.wrapping_add(c);
        } else if c != 0 {
            self.cursor += c;
            if self.tracing {
                if let Some(it) = self.itrace.as_deref_mut() {
                    it.stall(stall, c);
                }
            }
        }
    }

    #[inline(always)]
    fn on_mem(&mut self, pa: u64, kind: MemKind, mmio: bool, c: u64) {
        if self.tracing {
            self.mem_traced(pa, kind, mmio, c);
        }
    }

    /// A traced memory access: its cost, and the line it touched.
    #[cold]
    #[inline(never)]
    fn mem_traced(&mut self, pa: u64, kind: MemKind, mmio: bool, c: u64) {
        let stall = match (mmio, kind) {
            (true, _) => ST_MMIO,
            (false, MemKind::Load | MemKind::Store) => ST_MEM,
            (false, MemKind::Walk) => ST_WALK,
            (false, MemKind::Fetch) => ST_FETCH,
        };
        self.advance(c, stall);
        if mmio {
            return;
        }
        let access = match kind {
            MemKind::Load => LineAccess::Load,
            MemKind::Store => LineAccess::Store,
            MemKind::Walk => LineAccess::Walk,
            MemKind::Fetch => LineAccess::Fetch,
        };
        if let Some(it) = self.itrace.as_deref_mut() {
            it.touch(pa, access, c);
        }
    }

    fn on_trap_info(&mut self, t: &TrapInfo) {
        let c = std::mem::take(&mut self.trap_extra);
        // Interrupts and fetch faults (causes 1 and 12: no instruction was
        // fetched, so no `fetch` hook ran) cost the hart 1 + the trap's cost
        // between instructions.
        let between = t.interrupt || matches!(t.cause, 1 | 12);
        if between {
            self.start = self.cursor;
            self.cursor += 1 + c;
        } else {
            self.cursor += c;
        }
        let at = self.start;
        if self.tracing {
            let prv = self.prv;
            if let Some(it) = self.itrace.as_deref_mut() {
                if between {
                    it.pending = None;
                    if it.cur.is_some() {
                        it.finish_step(at);
                    }
                    if it.active {
                        let kind = if t.interrupt {
                            StepKind::Interrupt
                        } else {
                            StepKind::FetchFault
                        };
                        it.start_step(kind, at, t.epc, 0, 0, prv, t.cause as u32);
                    }
                }
                it.stall(ST_TRAP, c);
            }
        }
        let b = bucket(t.cause);
        if t.interrupt {
            self.tally.interrupts[b] += 1;
            self.push_event(
                at,
                EventKind::Interrupt {
                    cause: t.cause,
                    plic_source: None,
                },
            );
            if t.cause == 3 {
                self.push_event(at, EventKind::IpiReceived { from: None });
            }
        } else {
            self.tally.exceptions[b] += 1;
            if t.cause == 8 && t.from == 0 {
                *self.tally.syscalls.entry(t.a7).or_default() += 1;
                self.in_syscall = Some((t.a7, at));
                self.push_event(at, EventKind::Syscall { number: t.a7 });
                if self.tracing {
                    self.maybe_open_syscall_window(t.a7);
                }
            } else {
                self.push_event(
                    at,
                    EventKind::Exception {
                        cause: t.cause,
                        tval: t.tval,
                        target: privilege(t.to),
                    },
                );
            }
        }
        self.prv = t.to;
    }

    fn maybe_open_syscall_window(&mut self, number: u64) {
        let Some(it) = self.itrace.as_deref_mut() else {
            return;
        };
        if it.active || it.windows_left == 0 || it.trigger != (TraceTrigger::Syscall { number }) {
            return;
        }
        let Some(p) = it.pending.take() else { return };
        if it.skip_left > 0 {
            it.skip_left -= 1;
            return;
        }
        it.windows_left -= 1;
        it.windows_opened += 1;
        it.active = true;
        // The ecall becomes the window's first step, with the costs its
        // placeholder collected (fetch, class, trap).
        it.start_step(StepKind::Insn, p.start, p.pc, p.pa, p.len, 0, 0);
        if let Some(s) = it.cur.as_mut() {
            s.stall = p.stall;
        }
        it.touch(p.pa, LineAccess::Fetch, p.stall[ST_FETCH]);
    }

    fn on_xret(&mut self, to: u8, c: u64) {
        self.advance(c, ST_SERIAL);
        self.tally.xrets += 1;
        self.prv = to;
        if to != 0 {
            return;
        }
        if let Some((number, at)) = self.in_syscall.take() {
            *self.tally.syscall_cycles.entry(number).or_default() += self.cursor.saturating_sub(at);
            // (stamped where the `sret` ends, as the duration above and an
            // instruction trace's window: the return's cost is the call's)
            self.push_event(self.cursor, EventKind::SyscallReturn);
            if let Some(it) = self.itrace.as_deref_mut() {
                if it.active && matches!(it.trigger, TraceTrigger::Syscall { .. }) {
                    it.close_after = true;
                }
            }
        }
    }

    fn on_csr_write(&mut self, csr: u16, value: u64) {
        if csr == CSR_SATP {
            self.tally.satp_writes += 1;
            self.push_event(self.start, EventKind::ContextSwitch { satp: value });
        }
    }
}

/// A timing model wrapper that records observations (see the module docs).
/// `TRACE`: an instruction trace may be armed (`HartRecorder::arm_itrace`).
pub struct Observing<M, const TRACE: bool = false> {
    pub inner: M,
    pub rec: Box<HartRecorder>,
}

impl<M> Observing<M> {
    /// A wrapper that cannot trace instructions.
    pub fn new(inner: M, hart: u16) -> Observing<M> {
        Self::wrap(inner, hart)
    }
}

impl<M, const TRACE: bool> Observing<M, TRACE> {
    pub fn wrap(inner: M, hart: u16) -> Self {
        Observing {
            inner,
            rec: Box::new(HartRecorder::new(hart)),
        }
    }

    /// A trace is armed (never, unless `TRACE`).
    #[inline(always)]
    fn tracing(&self) -> bool {
        TRACE && self.rec.tracing
    }
}

impl<M: TimingModel, const TRACE: bool> TimingModel for Observing<M, TRACE> {
    // Not free while an instruction trace records each instruction;
    // skippable otherwise (the hart's `clock` then gives the time).
    #[inline(always)]
    fn hooks_skippable(&self) -> bool {
        self.inner.hooks_skippable() && !self.tracing()
    }
    #[inline(always)]
    fn hooks_inlinable(&self) -> bool {
        self.inner.hooks_inlinable() && !self.tracing()
    }
    fn inline_hooks(&self) -> Option<hs_timing::InlineHooks> {
        // the inner model's fields, seen from this wrapper
        let at = std::mem::offset_of!(Self, inner);
        self.inner.inline_hooks().map(|h| hs_timing::InlineHooks {
            fetch_last_line: at + h.fetch_last_line,
            walk_pending: at + h.walk_pending,
            insn_counts: at + h.insn_counts,
            last_class: at + h.last_class,
            mem_tlb: h.mem_tlb.moved(at),
            mem_keys: at + h.mem_keys,
            mem_translating: at + h.mem_translating,
            mem_counts: at + h.mem_counts,
            mem_any_way: h.mem_any_way.map(|l| l.moved(at)),
            fetch_new_line: h.fetch_new_line.map(|f| hs_timing::InlineFetch {
                tlb: f.tlb.moved(at),
                keys: at + f.keys,
                reads: at + f.reads,
                tlb_accesses: at + f.tlb_accesses,
                any_way: f.any_way.map(|l| l.moved(at)),
                cycles: at + f.cycles,
                ..f
            }),
            branch: h.branch.map(|b| hs_timing::InlineBranch {
                history: at + b.history,
                branches: at + b.branches,
                mispredicts: at + b.mispredicts,
                fetch_cycles: at + b.fetch_cycles,
                ..b
            }),
            direct_jump: h.direct_jump.map(|j| hs_timing::InlineJump {
                jumps: at + j.jumps,
                cycles: at + j.cycles,
                ..j
            }),
            jalr: h.jalr.map(|r| r.moved(at)),
            ..h
        })
    }
    #[inline(always)]
    fn inline_branch_table(&mut self) -> u64 {
        self.inner.inline_branch_table()
    }
    #[inline(always)]
    fn inline_jump_table(&mut self) -> u64 {
        self.inner.inline_jump_table()
    }
    #[inline(always)]
    fn inline_return_stack(&mut self) -> u64 {
        self.inner.inline_return_stack()
    }
    #[inline(always)]
    fn inline_tlb_entries(&mut self) -> [u64; 2] {
        self.inner.inline_tlb_entries()
    }
    #[inline(always)]
    fn inline_l1_sets(&mut self) -> [[u64; 2]; 2] {
        self.inner.inline_l1_sets()
    }
    #[inline(always)]
    fn skipped(&mut self, n: u64) {
        self.inner.skipped(n);
    }
    #[inline(always)]
    fn clock(&mut self, start: u64, now: u64) {
        self.inner.clock(start, now);
        // (a trace keeps its own cursor; `settle` checks it at each run's end)
        if !self.tracing() {
            self.rec.start = start;
            self.rec.cursor = now;
        }
    }
    #[inline(always)]
    fn fetch(&mut self, pc: u64, pa: u64, len: u8) -> u64 {
        let c = self.inner.fetch(pc, pa, len);
        if TRACE {
            self.rec.on_fetch(pc, pa, len, c);
        }
        c
    }
    fn fetch_absent(&mut self, pc: u64, pa: u64, len: u8) -> u64 {
        let c = self.inner.fetch_absent(pc, pa, len);
        if TRACE {
            self.rec.on_fetch(pc, pa, len, c);
        }
        c
    }
    #[inline(always)]
    fn insn(&mut self, pc: u64, class: InsnClass, ops: Operands) -> u64 {
        let c = self.inner.insn(pc, class, ops);
        if !TRACE {
            return c;
        }
        let stall = match class {
            InsnClass::Mul | InsnClass::Div | InsnClass::FpDiv | InsnClass::FpSqrt => ST_MULDIV,
            InsnClass::Load | InsnClass::Store | InsnClass::Amo => ST_MEM,
            InsnClass::Branch | InsnClass::Jump => ST_BRANCH,
            InsnClass::Csr
            | InsnClass::Fence
            | InsnClass::FenceI
            | InsnClass::SfenceVma
            | InsnClass::Ecall
            | InsnClass::Xret
            | InsnClass::Wfi
            | InsnClass::System => ST_SERIAL,
            _ => ST_EXEC,
        };
        self.rec.add(c, stall);
        c
    }
    #[inline(always)]
    fn mem(&mut self, va: u64, pa: u64, size: u8, kind: MemKind, mmio: bool) -> u64 {
        let c = self.inner.mem(va, pa, size, kind, mmio);
        if TRACE {
            self.rec.on_mem(pa, kind, mmio, c);
        }
        c
    }
    fn mem_absent(&mut self, va: u64, pa: u64, size: u8, kind: MemKind) -> u64 {
        let c = self.inner.mem_absent(va, pa, size, kind);
        if TRACE {
            self.rec.on_mem(pa, kind, false, c);
        }
        c
    }
    #[inline(always)]
    fn branch(&mut self, pc: u64, taken: bool, target: u64) -> u64 {
        let c = self.inner.branch(pc, taken, target);
        if TRACE {
            self.rec.add(c, ST_BRANCH);
        }
        c
    }
    #[inline(always)]
    fn jump(&mut self, pc: u64, target: u64, hint: JumpHint, link: u64) -> u64 {
        let c = self.inner.jump(pc, target, hint, link);
        if TRACE {
            self.rec.add(c, ST_BRANCH);
        }
        c
    }
    #[inline(always)]
    fn divide(&mut self, dividend: u64, divisor: u64, word: bool) {
        self.inner.divide(dividend, divisor, word)
    }
    #[inline(always)]
    fn direct_jump(&mut self, pc: u64, target: u64, hint: JumpHint, link: u64) -> u64 {
        let c = self.inner.direct_jump(pc, target, hint, link);
        if TRACE {
            self.rec.add(c, ST_BRANCH);
        }
        c
    }
    #[inline(always)]
    fn trap(&mut self, cause: u64, interrupt: bool) -> u64 {
        let c = self.inner.trap(cause, interrupt);
        self.rec.trap_extra = c;
        c
    }
    #[inline(always)]
    fn csr(&mut self, csr: u16, write: bool) -> u64 {
        let c = self.inner.csr(csr, write);
        if TRACE {
            self.rec.add(c, ST_SERIAL);
        }
        c
    }
    fn trap_info(&mut self, t: &TrapInfo) {
        self.inner.trap_info(t);
        self.rec.on_trap_info(t);
    }
    fn xret(&mut self, new_pc: u64, from: u8, to: u8) -> u64 {
        let c = self.inner.xret(new_pc, from, to);
        self.rec.on_xret(to, c);
        c
    }
    fn csr_write(&mut self, csr: u16, value: u64) {
        self.inner.csr_write(csr, value);
        self.rec.on_csr_write(csr, value);
    }
    fn wfi(&mut self, pc: u64) {
        self.inner.wfi(pc);
        self.rec.tally.wfi += 1;
    }
    fn hpm_counter(&self, index: u16, event: u64) -> u64 {
        self.inner.hpm_counter(index, event)
    }
    fn hpm_events(&self) -> &'static [u64] {
        self.inner.hpm_events()
    }
    fn model_stats(&self) -> Option<hs_timing::ModelStats> {
        self.inner.model_stats()
    }
    fn save_state(&self, shared: bool) -> Option<Result<Vec<u8>, String>> {
        self.inner.save_state(shared)
    }
    fn restore_state(&mut self, data: &[u8], shared: bool) -> Result<(), String> {
        self.inner.restore_state(data, shared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hs_timing::Atomic;

    /// The harts the machine runs wrap their model in `Observing` (every
    /// `boot` with statistics, every lab run), so theirs is the layout the
    /// timed boots have: no two hot fields a multiple of 4 KiB apart (see
    /// `hs_core::hot_fields_alias`), with or without a trace built in.
    #[test]
    fn observed_harts_hot_fields_do_not_alias_modulo_4_kib() {
        use hs_core::hot_fields_alias;
        use hs_timing::InOrder;
        assert_eq!(hot_fields_alias::<Observing<Atomic>>(), None);
        assert_eq!(hot_fields_alias::<Observing<InOrder>>(), None);
        assert_eq!(hot_fields_alias::<Observing<Atomic, true>>(), None);
        assert_eq!(hot_fields_alias::<Observing<InOrder, true>>(), None);
    }

    /// A model that charges what the test tells it to, per hook.
    #[derive(Default)]
    struct Costs {
        fetch: u64,
        load: u64,
        trap: u64,
        xret: u64,
    }
    impl TimingModel for Costs {
        fn fetch(&mut self, _pc: u64, _pa: u64, _len: u8) -> u64 {
            self.fetch
        }
        fn mem(&mut self, _va: u64, _pa: u64, _size: u8, kind: MemKind, _mmio: bool) -> u64 {
            if kind == MemKind::Load {
                self.load
            } else {
                0
            }
        }
        fn trap(&mut self, _cause: u64, _interrupt: bool) -> u64 {
            self.trap
        }
        fn xret(&mut self, _pc: u64, _from: u8, _to: u8) -> u64 {
            self.xret
        }
    }

    const RAM: u64 = 0x8000_0000;

    fn ecall(epc: u64) -> TrapInfo {
        TrapInfo {
            cause: 8,
            interrupt: false,
            epc,
            tval: 0,
            from: 0,
            to: 1,
            a7: 173,
        }
    }

    /// ecall (U) → two S instructions, one a load that misses → sret → U,
    /// starting at cycle `t` with the costs of [`costs`], the hart's clock
    /// given where a hart gives it.
    fn syscall<const TRACE: bool>(m: &mut Observing<Costs, TRACE>, t: u64) {
        m.fetch(0x1000, RAM + 0x1000, 4);
        m.insn(0x1000, InsnClass::Ecall, Operands::EMPTY);
        m.clock(t, t + 1);
        m.trap(8, false);
        m.trap_info(&ecall(0x1000));
        m.fetch(0xffff_0000, RAM + 0x2000, 4);
        m.insn(0xffff_0000, InsnClass::Load, Operands::EMPTY);
        m.mem(RAM + 0x3008, RAM + 0x3008, 8, MemKind::Load, false);
        m.fetch(0xffff_0004, RAM + 0x2004, 4);
        m.insn(0xffff_0004, InsnClass::Xret, Operands::EMPTY);
        m.clock(t + 12, t + 13);
        m.xret(0x1004, 1, 0);
        m.fetch(0x1004, RAM + 0x1004, 4);
    }

    /// The costs [`syscall`] is timed for: ecall 1+3, load 1+7, sret 1+2.
    fn costs() -> Costs {
        Costs {
            fetch: 0,
            load: 7,
            trap: 3,
            xret: 2,
        }
    }

    #[test]
    fn the_harts_clock_stamps_what_happened_and_counts_it() {
        let mut m = Observing::new(costs(), 0);
        m.rec.record_events(100);
        m.rec.sync(100, 0);
        syscall(&mut m, 100);

        let t = &m.rec.tally;
        assert_eq!((t.exceptions[8], t.syscalls[&173], t.xrets), (1, 1, 1));
        assert_eq!(
            t.syscall_cycles[&173],
            4 + 8 + 3,
            "ecall start to the end of sret"
        );
        let kinds: Vec<&EventKind> = m.rec.events().iter().map(|e| &e.kind).collect();
        assert_eq!(
            kinds,
            vec![
                &EventKind::Syscall { number: 173 },
                &EventKind::SyscallReturn
            ]
        );
        // the call spans the ecall's start to the sret's end, as its cycles
        assert_eq!(
            (m.rec.events()[0].cycle, m.rec.events()[1].cycle),
            (100, 115)
        );
        assert_eq!(
            m.rec.events()[1].cycle - m.rec.events()[0].cycle,
            t.syscall_cycles[&173]
        );
    }

    #[test]
    fn interrupts_satp_writes_and_fetch_faults() {
        let mut m = Observing::new(
            Costs {
                trap: 5,
                ..Costs::default()
            },
            2,
        );
        m.rec.record_events(100);
        m.rec.sync(0, 1);
        m.fetch(0xffff_0000, RAM, 4);
        // An interrupt between instructions (after that one's 1): 1 + the trap's 5.
        m.clock(1, 1);
        m.trap(9, true);
        m.trap_info(&TrapInfo {
            cause: 9,
            interrupt: true,
            epc: 0xffff_0004,
            tval: 0,
            from: 1,
            to: 1,
            a7: 0,
        });
        m.fetch(0xffff_1000, RAM + 0x1000, 2);
        m.clock(7, 8);
        m.csr_write(CSR_SATP, 0x8000_0000_0000_1234);
        // A fetch page fault: no fetch hook, 1 + 5.
        m.clock(8, 8);
        m.trap(12, false);
        m.trap_info(&TrapInfo {
            cause: 12,
            interrupt: false,
            epc: 0x4000,
            tval: 0x4000,
            from: 0,
            to: 1,
            a7: 0,
        });
        assert_eq!(m.rec.cursor, 1 + 6 + 1 + 6);
        assert_eq!(
            (
                m.rec.tally.interrupts[9],
                m.rec.tally.exceptions[12],
                m.rec.tally.satp_writes
            ),
            (1, 1, 1)
        );
        let ev = m.rec.events();
        assert_eq!(
            ev[0],
            Event {
                hart: 2,
                cycle: 1,
                kind: EventKind::Interrupt {
                    cause: 9,
                    plic_source: None
                }
            }
        );
        assert_eq!(
            ev[1],
            Event {
                hart: 2,
                cycle: 7,
                kind: EventKind::ContextSwitch {
                    satp: 0x8000_0000_0000_1234
                }
            }
        );
        assert_eq!(ev[2].cycle, 8);
        assert!(matches!(
            ev[2].kind,
            EventKind::Exception {
                cause: 12,
                target: Privilege::Supervisor,
                ..
            }
        ));
        // The event limit drops and counts.
        let mut small = Observing::new(Atomic, 0);
        small.rec.record_events(1);
        small.csr_write(CSR_SATP, 1);
        small.csr_write(CSR_SATP, 2);
        assert_eq!((small.rec.events().len(), small.rec.events_dropped), (1, 1));
    }

    #[test]
    fn syscall_window_from_ecall_to_sret() {
        let ram = GuestRam::new(RAM, 0x10000).unwrap();
        ram.write(RAM + 0x1000, 4, 0x0000_0073); // ecall
        ram.write(RAM + 0x2004, 4, 0x1020_0073); // sret
        let mut m = Observing::<_, true>::wrap(costs(), 0);
        m.rec
            .arm_itrace(TraceTrigger::Syscall { number: 173 }, 1, 100, ram);
        m.rec.sync(100, 0);
        // A different call opens nothing.
        m.fetch(0x0ff0, RAM + 0x0ff0, 4);
        m.trap(8, false);
        m.trap_info(&TrapInfo {
            a7: 64,
            ..ecall(0x0ff0)
        });
        m.xret(0x0ff4, 1, 0);
        syscall(&mut m, 106);
        // The step after the sret closed the window; a second getppid opens no other.
        syscall(&mut m, 122);
        // A trace keeps its own cursor, 1 + the hooks' costs per
        // instruction: ecall 1+3 and sret 2, two calls of 16 each (the
        // last one's next instruction included).
        assert_eq!(m.rec.cursor, 100 + 6 + 16 + 16);
        m.rec.settle(m.rec.cursor);
        assert_eq!(m.rec.cycle_mismatches, 0);
        let it = m.rec.itrace.as_deref().unwrap();
        assert_eq!((it.windows_opened, it.active), (1, false));
        let steps: Vec<(u64, u64, StallCause, u32)> = it
            .steps
            .iter()
            .map(|s| (s.pc, s.cycles, s.stall(&[0; 9]), s.bits))
            .collect();
        assert_eq!(
            steps,
            vec![
                (0x1000, 4, StallCause::Trap, 0x73),
                (0xffff_0000, 8, StallCause::Mem, 0),
                (0xffff_0004, 3, StallCause::Serialize, 0x1020_0073),
            ]
        );
        let s = &it.steps[1];
        assert_eq!(
            s.lines,
            vec![
                (RAM + 0x2000, LineAccess::Fetch, 0),
                (RAM + 0x3000, LineAccess::Load, 7)
            ]
        );
        let cheapest = |a: LineAccess| if a == LineAccess::Load { 1 } else { 0 };
        assert_eq!(
            s.touches(&cheapest),
            vec![
                LineTouch {
                    line: RAM + 0x2000,
                    access: LineAccess::Fetch,
                    hit: true
                },
                LineTouch {
                    line: RAM + 0x3000,
                    access: LineAccess::Load,
                    hit: false
                },
            ]
        );
        // A cost every instruction pays is not a stall.
        let mut base = [0; 9];
        base[ST_MEM] = 7;
        assert_eq!(s.stall(&base), StallCause::None);
        assert!(
            it.steps[0].code.is_some() && it.steps[1].code.is_none(),
            "user steps keep their code bytes"
        );
        // Back to back, starting where the ecall started.
        assert_eq!(it.steps[0].cycle + 4, it.steps[1].cycle);
        // A run the trace's cursor does not end with (a hook it missed) is counted.
        m.rec.sync(200, 0);
        m.rec.settle(201);
        assert_eq!(m.rec.cycle_mismatches, 1);
    }

    #[test]
    fn phase_windows_follow_the_machine_and_the_budget_truncates() {
        let ram = GuestRam::new(RAM, 0x10000).unwrap();
        let mut m = Observing::<_, true>::wrap(Atomic, 0);
        m.rec.arm_itrace(TraceTrigger::Phase, 0, 3, ram);
        m.rec.sync(0, 1);
        m.fetch(0x10, RAM, 4);
        m.rec.itrace.as_deref_mut().unwrap().active = true; // the machine saw the marker
        for i in 0..5 {
            m.fetch(0x14 + 4 * i, RAM + 4 + 4 * i, 4);
        }
        m.rec.settle(6);
        let it = m.rec.itrace.as_deref().unwrap();
        assert_eq!(it.steps.len(), 3);
        assert!(it.truncated && !it.active);
        assert_eq!(
            it.steps.iter().map(|s| s.pc).collect::<Vec<_>>(),
            vec![0x14, 0x18, 0x1c]
        );
    }

    #[test]
    fn tallies_subtract() {
        let mut a = HartTally::default();
        a.exceptions[8] = 3;
        a.syscalls.insert(64, 2);
        a.syscall_cycles.insert(64, 100);
        let mut b = a.clone();
        b.exceptions[8] = 5;
        b.syscalls.insert(64, 2);
        b.syscalls.insert(63, 1);
        b.syscall_cycles.insert(63, 40);
        let d = b.since(&a);
        assert_eq!(d.exceptions[8], 2);
        assert_eq!(d.syscalls, BTreeMap::from([(63, 1)]));
        assert_eq!(d.syscall_cycles, BTreeMap::from([(63, 40)]));
        assert_eq!(d.syscall_total(), 1);
    }
}
