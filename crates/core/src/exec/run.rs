//! The run loop and the block engine: between blocks, interrupts, the
//! cycle budget, code changes and counter overflow are looked at; a block
//! runs its cached ops back to back and chains into the next block while
//! nothing needs looking at.

use hs_bus::SystemBus;
use hs_timing::TimingModel;

use super::reference::CheckKind;
use super::semantics::Flow;
use super::{Engine, Op};
use crate::trap::{Trap, CAUSE_EXIT};
use crate::{Exit, Hart, CHECK_CODE, CHECK_IRQ};

/// Cycles between two checks for hpm counter overflow while one is watched.
const HPM_CHECK: u64 = 256;

/// An observer that looks at a hart at cycles of its choosing while the
/// hart runs (a sampling profiler), without ending the run: the hart is
/// then exactly where a run ending at that cycle would have left it, and
/// goes on exactly as that run's `resume` would have.
pub trait Pause<T: TimingModel> {
    /// The first cycle to pause at (`u64::MAX`: none), asked as a run starts.
    fn first(&mut self, hart: &Hart<T>) -> u64;
    /// The hart reached the cycle asked for, at a block boundary: look at
    /// it and give the next cycle to pause at.
    fn pause(&mut self, hart: &Hart<T>) -> u64;
}

/// No pauses: a plain run.
pub struct NoPause;

impl<T: TimingModel> Pause<T> for NoPause {
    #[inline(always)]
    fn first(&mut self, _: &Hart<T>) -> u64 {
        u64::MAX
    }
    #[inline(always)]
    fn pause(&mut self, _: &Hart<T>) -> u64 {
        u64::MAX
    }
}

impl<T: TimingModel> Hart<T> {
    /// Start a slice: run until `cycle() >= until_cycle` or another exit.
    ///
    /// Other harts and DMA may have run since this hart last did, so code
    /// changes and interrupt lines are looked at first, and an LR
    /// reservation does not survive (a store another hart made to the
    /// reserved address in between must make the next SC fail).
    pub fn run<B: SystemBus>(&mut self, bus: &mut B, until_cycle: u64) -> Exit {
        self.run_pausing(bus, until_cycle, &mut NoPause)
    }

    /// [`Hart::run`], letting `pause` look at the hart whenever it reaches
    /// the cycle `pause` asks for, without ending the run.
    pub fn run_pausing<B: SystemBus, P: Pause<T>>(
        &mut self,
        bus: &mut B,
        until_cycle: u64,
        pause: &mut P,
    ) -> Exit {
        self.checks |= CHECK_CODE | CHECK_IRQ;
        self.reservation = None;
        // (another hart sharing this one's code may have dropped blocks)
        self.refresh_stamp();
        self.resume_pausing(bus, until_cycle, pause)
    }

    /// Go on with a slice a caller ended early only to look at the hart
    /// (a sample): nothing outside the hart ran in between, so it continues
    /// exactly as if `run` had not returned — the reservation, pending
    /// checks and the next counter-overflow check all carry over.
    pub fn resume<B: SystemBus>(&mut self, bus: &mut B, until_cycle: u64) -> Exit {
        self.resume_pausing(bus, until_cycle, &mut NoPause)
    }

    /// [`Hart::resume`] with a [`Pause`].
    pub fn resume_pausing<B: SystemBus, P: Pause<T>>(
        &mut self,
        bus: &mut B,
        until_cycle: u64,
        pause: &mut P,
    ) -> Exit {
        // (another hart may have decoded code from a page this one stores to)
        self.flag_code_stores();
        // (a pause is always ahead: a run makes progress)
        let mut pause_at = pause.first(self).max(self.cycle + 1);
        // one compare per block covers the budget, the pause, the Sstc
        // timer and the next counter-overflow check
        let mut limit = until_cycle
            .min(pause_at)
            .min(self.stimecmp_cycle)
            .min(self.hpm_check_at);
        loop {
            if self.cycle >= limit || self.checks != 0 {
                // Here a run ending at the pause cycle would have returned;
                // after the look, go on as its `resume` would have.
                if self.cycle >= pause_at {
                    pause_at = pause.pause(self).max(self.cycle + 1);
                    limit = until_cycle
                        .min(pause_at)
                        .min(self.stimecmp_cycle)
                        .min(self.hpm_check_at);
                    continue;
                }
                if self.cycle >= until_cycle {
                    return Exit::Budget;
                }
                self.checks &= !CHECK_IRQ;
                if let Some(irq) = self.interrupt_to_take() {
                    self.stats.interrupts += 1;
                    self.timing.clock(self.cycle, self.cycle);
                    self.cycle += 1;
                    self.stall = self.stall.wrapping_add(1);
                    let pc = self.pc;
                    self.take_trap(irq, true, 0);
                    self.log_step(CheckKind::Interrupt(irq), pc, None, self.cycle);
                }
                if self.checks & CHECK_CODE != 0 {
                    self.checks &= !CHECK_CODE;
                    self.drop_written_code();
                }
                self.hpm_check_at = u64::MAX;
                if self.csr.hpm_watch != 0 {
                    // Sscofpmf: look for counter overflow every HPM_CHECK
                    // cycles (the interrupt's skid is at most that).
                    self.check_hpm_overflow();
                    self.hpm_check_at = self.cycle + HPM_CHECK;
                }
                limit = until_cycle
                    .min(pause_at)
                    .min(self.stimecmp_cycle)
                    .min(self.hpm_check_at);
            }
            let r = match self.engine {
                Engine::Translated if self.translating() => self
                    .fetch_block()
                    .map(|(start, n, pa)| self.exec_translated(bus, start, n, pa, limit)),
                Engine::Blocks | Engine::Translated => self.fetch_block().map(|(start, n, pa)| {
                    if self.check_log.is_none() {
                        self.exec_block::<B, false>(bus, start, n, pa, limit)
                    } else {
                        self.exec_block_logged(bus, start, n, pa, limit)
                    }
                }),
                Engine::Reference => self.exec_reference_block(bus),
            };
            match r {
                Ok(None) => {}
                Ok(Some(e)) => return e,
                Err(t) => {
                    // an instruction-fetch fault: nothing retires
                    self.timing.clock(self.cycle, self.cycle);
                    self.cycle += 1;
                    self.stall = self.stall.wrapping_add(1);
                    let pc = self.pc;
                    self.take_trap(t.cause, false, t.tval);
                    self.log_step(CheckKind::FetchFault(t.cause), pc, None, self.cycle);
                }
            }
        }
    }

    /// Execute `n` ops starting at `start`; `Some` when the run loop must return.
    ///
    /// [`Hart::execute`] is inlined into the loop, so each instruction's arm
    /// either continues with the next op or leaves the block itself.
    ///
    /// A block that ends (taken branch, jump, or its last op) chains straight
    /// into the next one if the virtual-pc cache holds it, unless the run
    /// loop has work (`checks`) or `limit` (budget or Sstc deadline) is
    /// reached: exactly what the run loop would do, without going there.
    /// When hot blocks are translated, only into a block that stays cold
    /// (its run counted here, as the run loop counts it).
    ///
    /// `LOG`: keep a [`CheckRecord`] per instruction (a second copy of this
    /// function, used only by differential checks).
    pub(super) fn exec_block<B: SystemBus, const LOG: bool>(
        &mut self,
        bus: &mut B,
        start: usize,
        n: usize,
        block_pa: u64,
        limit: u64,
    ) -> Option<Exit> {
        debug_assert!(n > 0 && start + n <= self.blocks.arena_len());
        // SAFETY (for the pointer arithmetic here and the reads below):
        // `fetch_block` returned an in-bounds range, and nothing that runs
        // while a block executes reallocates `ops`: decoding happens between
        // blocks, and `fence.i` (which may truncate the arena, keeping its
        // allocation) ends its block.
        let ops = self.blocks.ops_ptr();
        let mut p = unsafe { ops.add(start) };
        let mut end = unsafe { p.add(n) };
        // the current block's first op: what ran of it is counted when the
        // block is left (a subtraction a block, not an add an instruction)
        let mut first = p;
        let hot = self.jit_hot();
        macro_rules! count {
            ($ops:expr) => {
                // SAFETY: `first` and `p` point into the same arena range.
                self.blocks.interpreted += unsafe { p.offset_from(first) } as u64 - $ops
            };
        }
        let mut block_pa = block_pa;
        // pc and the cycle count live in registers while the block runs;
        // `self.cycle` is synced around every slow path that may read it.
        let mut base_pc = self.pc;
        let mut cyc = self.cycle;
        let (trap, op, extra, start) = 'run: loop {
            let op: &Op = unsafe { &*p };
            p = unsafe { p.add(1) };
            // computed where used, so straight-line ALU ops never pay for them
            macro_rules! pc {
                () => {
                    base_pc.wrapping_add(op.off as u64)
                };
            }
            // wrapping: `insn` returns -1 for the second of a dual-issue pair
            let extra = self
                .timing
                .fetch(pc!(), block_pa + op.off as u64, op.len)
                .wrapping_add(self.timing.insn(pc!(), op.class, op.ops));
            macro_rules! retire {
                () => {{
                    cyc = cyc.wrapping_add(1).wrapping_add(extra);
                    self.stall = self.stall.wrapping_add(extra);
                    if LOG {
                        self.log_step(CheckKind::Retired, pc!(), Some(op), cyc);
                    }
                }};
            }
            // Go on at `t` after the block's last instruction retired: chain
            // into the block cached for `t` when the run loop has nothing
            // to do (it would only look the block up itself), else return.
            macro_rules! leave {
                ($target:expr) => {{
                    let t = $target;
                    if cyc < limit && self.checks == 0 {
                        if let Some((s, n, pa)) = self
                            .blocks
                            .lookup(t, self.fetch_stamp)
                            // (translating, only into a block this run
                            // leaves cold, counted as the caller would: a
                            // translated or new-hot one is the caller's)
                            .filter(|&(s, _, _)| {
                                !self.translating() || self.blocks.jit.stays_cold(s, hot)
                            })
                        {
                            // SAFETY: as above; the stamp proves the entry
                            // belongs to the current arena generation.
                            count!(0);
                            p = unsafe { ops.add(s) };
                            end = unsafe { p.add(n) };
                            first = p;
                            base_pc = t;
                            block_pa = pa;
                            continue 'run;
                        }
                    }
                    count!(0);
                    self.cycle = cyc;
                    self.pc = t;
                    return None;
                }};
            }
            let start = cyc;
            match self.execute(bus, op, base_pc, &mut cyc, extra) {
                Flow::Next => {}
                // a taken branch, jump or xRET ends the block
                Flow::Jump(t) => {
                    retire!();
                    leave!(t)
                }
                Flow::Trap(t) => {
                    // (the op that trapped retires only when it is an exit)
                    count!((t.cause != CAUSE_EXIT) as u64);
                    break 'run (t, op, extra, start);
                }
            }
            retire!();
            if p == end {
                // the block ran to its end (64 instructions, the page end
                // or a block-ending instruction that did not jump)
                leave!(pc!().wrapping_add(op.len as u64))
            }
        };
        self.cycle = cyc;
        self.end_at_trap(trap, op, base_pc.wrapping_add(op.off as u64), extra, start)
    }

    /// `exec_block` keeping a check log, out of line so the run loop holds
    /// one copy of the interpreter only.
    #[inline(never)]
    pub(super) fn exec_block_logged<B: SystemBus>(
        &mut self,
        bus: &mut B,
        start: usize,
        n: usize,
        block_pa: u64,
        limit: u64,
    ) -> Option<Exit> {
        self.exec_block::<B, true>(bus, start, n, block_pa, limit)
    }

    /// Finish a block at `op` (at `pc`) that raised `trap`; `self.cycle` is
    /// the count before it (with what `op` charged before it trapped),
    /// `extra` its timing charge, `start` the cycle it began at.
    pub(super) fn end_at_trap(
        &mut self,
        trap: Trap,
        op: &Op,
        pc: u64,
        extra: u64,
        start: u64,
    ) -> Option<Exit> {
        let extra_cycles = extra.wrapping_add(1);
        if trap.cause == CAUSE_EXIT {
            // the instruction retired; the machine must act now
            self.cycle = self.cycle.wrapping_add(extra_cycles);
            self.stall = self.stall.wrapping_add(extra);
            self.pc = pc.wrapping_add(op.len as u64);
            self.log_step(CheckKind::Retired, pc, Some(op), self.cycle);
            return Some(self.exit.take().unwrap_or(Exit::IrqCheck));
        }
        // the faulting instruction does not retire but takes time
        self.cycle = self.cycle.wrapping_add(extra_cycles);
        self.stall = self.stall.wrapping_add(extra_cycles);
        self.pc = pc;
        self.timing.clock(start, self.cycle);
        self.take_trap(trap.cause, false, trap.tval);
        self.log_step(CheckKind::Exception(trap.cause), pc, Some(op), self.cycle);
        self.exit.take()
    }
}
