//! The reference engine and the record both engines keep for a
//! differential check.
//!
//! The reference decodes every instruction afresh from guest memory and
//! runs it through the same [`Hart::execute`] as the block engine, with no
//! block cache. It delimits its "blocks" by the block engine's rules
//! (taken branch or jump, a block-ending instruction, 64 instructions, the
//! page end, a page-crossing instruction alone), because the run loop looks
//! at interrupts and the budget only between blocks: with other boundaries
//! an interrupt would land on another instruction. What the two can differ
//! in is exactly what the cache adds: stale ops after a store to the
//! running block's own code, a missed invalidation, a wrong chain.
//!
//! With a check log switched on ([`Hart::set_check_log`]), either engine
//! appends one [`CheckRecord`] per retired instruction, trap, interrupt and
//! fetch fault; two harts' logs compared in order give the first
//! divergence (`hs_machine::lockstep` does this for whole machines).

use hs_bus::SystemBus;
use hs_isa::insn_len;
use hs_timing::{Operands, TimingModel};

use super::cache::MAX_BLOCK_INSNS;
use super::predecode::ends_block;
use super::semantics::Flow;
use super::Op;
use crate::mmu::*;
use crate::trap::*;
use crate::{Exit, Hart};

/// Which engine runs a hart's instructions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    /// Decoded-block cache with chaining.
    Blocks,
    /// The block cache, with hot blocks translated to host code (the
    /// default, fastest; where the timing model has per-instruction hooks
    /// or the host is not x86-64, the same as [`Engine::Blocks`]).
    #[default]
    Translated,
    /// One instruction at a time, decoded afresh each time (slow; the
    /// reference for `--engine-check`).
    Reference,
}

/// What a [`CheckRecord`] records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckKind {
    /// The instruction retired.
    Retired,
    /// The instruction raised this exception (it did not retire).
    Exception(u64),
    /// This interrupt was taken before the instruction at `pc`.
    Interrupt(u64),
    /// Fetching the instruction at `pc` raised this exception.
    FetchFault(u64),
}

/// One step of a hart as a differential check compares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckRecord {
    pub kind: CheckKind,
    pub pc: u64,
    /// The instruction's bits (0 for interrupts and fetch faults).
    pub bits: u32,
    /// The register the instruction wrote (0–31 x, 32–63 f, 255 none) and
    /// its value afterwards.
    pub dst: u8,
    pub value: u64,
    /// The hart's cycle and instret counts afterwards.
    pub cycle: u64,
    pub instret: u64,
}

impl<T: TimingModel> Hart<T> {
    /// Choose the engine (from the next block on; the result is the same).
    pub fn set_engine(&mut self, engine: Engine) {
        self.engine = engine;
    }
    pub fn engine(&self) -> Engine {
        self.engine
    }
    /// Start (or stop) keeping a [`CheckRecord`] per step. Slows the block
    /// engine down; meant for differential checks only.
    pub fn set_check_log(&mut self, on: bool) {
        self.check_log = on.then(Vec::new);
    }
    /// The records kept since the last call.
    pub fn take_check_log(&mut self) -> Vec<CheckRecord> {
        match self.check_log.as_mut() {
            Some(v) => std::mem::take(v),
            None => Vec::new(),
        }
    }

    /// Log a step if a log is kept (cycle and instret from `cyc`, the
    /// caller's cycle count, and `self.stall`).
    #[inline(never)]
    pub(crate) fn log_step(&mut self, kind: CheckKind, pc: u64, op: Option<&Op>, cyc: u64) {
        let Some(log) = self.check_log.as_mut() else {
            return;
        };
        let (bits, dst) = match (kind, op) {
            (CheckKind::Retired, Some(op)) => (op.bits, op.ops.dst),
            (_, Some(op)) => (op.bits, Operands::NONE),
            (_, None) => (0, Operands::NONE),
        };
        let value = match dst {
            0..=31 => self.x[dst as usize],
            32..=63 => self.f[(dst - 32) as usize],
            _ => 0,
        };
        log.push(CheckRecord {
            kind,
            pc,
            bits,
            dst,
            value,
            cycle: cyc,
            instret: cyc.wrapping_sub(self.stall),
        });
    }

    /// One block's worth of instructions by the reference engine, from
    /// `self.pc`; `Some` when the run loop must return. A fetch fault of
    /// the first instruction is returned as `Err` for the run loop to take,
    /// as the block engine's `fetch_block` does.
    #[inline(never)]
    pub(super) fn exec_reference_block<B: SystemBus>(
        &mut self,
        bus: &mut B,
    ) -> Result<Option<Exit>, Trap> {
        let block_pc = self.pc;
        // Translate the block's start as the block engine does on a miss;
        // every later instruction lies in the same page.
        let block_pa = self.translate(block_pc, 2, KIND_FETCH)?;
        if !self.ram.contains(block_pa, 2) {
            return Err(Trap::new(CAUSE_FETCH_ACCESS, block_pc));
        }
        // PMP splits the page: one checked instruction, as `single_op`.
        let split = !self.fetch_tlb_holds(block_pc);
        // Stores to this page must be noticed as code writes, as they are
        // for a page the block engine decoded.
        self.ram.mark_code(block_pa);
        self.flag_code_stores();
        let page_end = (block_pa | 0xfff) + 1;
        let mut cyc = self.cycle;
        let mut n = 0usize;
        let mut off = 0u64;
        loop {
            let pc = block_pc.wrapping_add(off);
            let pa = block_pa + off;
            // decode afresh, by `decode_block`'s rules
            let op = {
                let lo = self.ram.read(pa, 2);
                let len = lo.map_or(2, |lo| insn_len(lo as u16) as u64);
                if n == 0 && (split || pa + len > page_end) {
                    self.cycle = cyc;
                    let op = self.fetch_single(pc, pa)?;
                    cyc = self.cycle;
                    op
                } else {
                    match lo {
                        Some(lo) if pa + len <= page_end => {
                            let word = if len == 4 {
                                self.ram.read(pa, 4).unwrap_or(0) as u32
                            } else {
                                lo as u32
                            };
                            Op::decoded(word, off as u16)
                        }
                        // nothing to run: a fetch fault, as `decode_block`
                        _ if n == 0 => return Err(Trap::new(CAUSE_FETCH_ACCESS, pc)),
                        // the block engine's block ends before this one
                        _ => {
                            self.cycle = cyc;
                            self.pc = pc;
                            return Ok(None);
                        }
                    }
                }
            };
            let extra = self
                .timing
                .fetch(pc, pa, op.len)
                .wrapping_add(self.timing.insn(pc, op.class, op.ops));
            let next = pc.wrapping_add(op.len as u64);
            let start = cyc;
            let flow = self.execute(bus, &op, block_pc, &mut cyc, extra);
            if let Flow::Trap(t) = flow {
                self.cycle = cyc;
                return Ok(self.end_at_trap(t, &op, pc, extra, start));
            }
            cyc = cyc.wrapping_add(1).wrapping_add(extra);
            self.stall = self.stall.wrapping_add(extra);
            self.log_step(CheckKind::Retired, pc, Some(&op), cyc);
            n += 1;
            off += op.len as u64;
            let target = match flow {
                Flow::Jump(t) => Some(t),
                _ => None,
            };
            if target.is_some()
                || split
                || ends_block(&op.insn)
                || n >= MAX_BLOCK_INSNS
                || pa + op.len as u64 >= page_end
            {
                self.cycle = cyc;
                self.pc = target.unwrap_or(next);
                return Ok(None);
            }
        }
    }
}

impl<T: TimingModel> Hart<T> {
    /// How this hart's architectural state differs from `other`'s: one
    /// line per differing register, CSR or count (empty when equal). Host
    /// caches and slow-path counters are not state and are not compared.
    pub fn arch_diff<U: TimingModel>(&self, other: &Hart<U>) -> Vec<String> {
        let mut out = Vec::new();
        let mut cmp = |what: String, a: u64, b: u64| {
            if a != b {
                out.push(format!("{what}: {a:#x} != {b:#x}"));
            }
        };
        cmp("pc".into(), self.pc, other.pc);
        cmp("privilege".into(), self.prv as u64, other.prv as u64);
        cmp("cycle".into(), self.cycle, other.cycle);
        cmp("instret".into(), self.instret(), other.instret());
        for r in 1..32 {
            cmp(hs_isa::gpr_name(r as u8).into(), self.x[r], other.x[r]);
        }
        for r in 0..32 {
            cmp(hs_isa::fpr_name(r as u8).into(), self.f[r], other.f[r]);
        }
        cmp(
            "LR reservation".into(),
            self.reservation.map_or(u64::MAX, |a| a),
            other.reservation.map_or(u64::MAX, |a| a),
        );
        for num in 0..4096u16 {
            let (a, b) = (self.csr_peek(num), other.csr_peek(num));
            if a != b {
                let name = hs_isa::csr::csr_name(num)
                    .map_or_else(|| format!("csr {num:#x}"), |n| n.to_string());
                cmp(name, a.unwrap_or(u64::MAX), b.unwrap_or(u64::MAX));
            }
        }
        out
    }
}
