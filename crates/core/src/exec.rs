//! The run loop: decoded-block cache, block execution and the integer,
//! atomic and system instruction semantics.

use std::collections::HashMap;

use hs_bus::SystemBus;
use hs_isa::{decode, insn_len, AmoOp, Insn};
use hs_timing::{InsnClass, JumpHint, Operands, TimingModel};

use crate::csr::*;
use crate::mmu::*;
use crate::trap::*;
use crate::{Exit, Hart, MarkerCall, Priv, CHECK_CODE, CHECK_IRQ};

/// One cached instruction: decoded form, raw bits (for `mtval`), length,
/// byte offset from the start of its block (so pc = block pc + off), and
/// its timing class and registers (decided once here, not per execution).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Op {
    pub insn: Insn,
    pub bits: u32,
    pub len: u8,
    pub class: InsnClass,
    pub off: u16,
    pub ops: Operands,
}

#[derive(Clone, Copy, Default)]
struct BlockEntry {
    pa: u64,
    gen: u32,
    start: u32,
    n: u32,
}

/// First-level lookup by virtual pc. `stamp` captures everything the
/// pc → block mapping depends on: the TLB generation (no flush since),
/// the fetch context and the block-cache generation.
#[derive(Clone, Copy, Default)]
struct VEntry {
    pc: u64,
    stamp: u64,
    start: u32,
    n: u32,
    pa: u64,
}

const TABLE_BITS: u32 = 15;
const VCACHE_BITS: u32 = 14;
const MAX_BLOCK_INSNS: usize = 64;
/// The arena is reset when it holds this many ops (blocks evicted from the
/// direct-mapped table leave garbage behind).
const ARENA_LIMIT: usize = 1 << 20;

/// A block cache's contents as [`Hart::save_blocks`] describes them.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct BlocksSaved {
    /// (slot, physical address) of each live second-level entry.
    table: Vec<(u32, u64)>,
    /// (pc, physical address, fetch context) of each live first-level entry.
    vcache: Vec<(u64, u64, u8)>,
    page_slots: Vec<(u64, Vec<u32>)>,
    /// Ops in the arena.
    arena: usize,
    code_gen_seen: u64,
}

/// Decoded blocks keyed by physical address. `ops[0]` is a scratch slot for
/// instructions that cannot be cached (page-crossing, PMP-split pages).
///
/// Invalidation is per page where possible: `page_slots` lists the table
/// slots holding blocks of each page, and a write to a code page clears
/// just those (plus the whole virtual-pc level, which refills from the
/// table without decoding).
pub(crate) struct Blocks {
    vcache: Box<[VEntry]>,
    table: Box<[BlockEntry]>,
    ops: Vec<Op>,
    /// Generation of `table` entries (bumped by a full flush).
    pub gen: u32,
    /// Generation of `vcache` entries (bumped by any invalidation).
    pub vgen: u32,
    pub code_gen_seen: u64,
    page_slots: HashMap<u64, Vec<u32>>,
}

impl Blocks {
    pub fn new() -> Self {
        let scratch = Op {
            insn: Insn::Illegal(0),
            bits: 0,
            len: 2,
            class: InsnClass::System,
            off: 0,
            ops: Operands::EMPTY,
        };
        Blocks {
            vcache: vec![VEntry::default(); 1 << VCACHE_BITS].into_boxed_slice(),
            table: vec![BlockEntry::default(); 1 << TABLE_BITS].into_boxed_slice(),
            ops: vec![scratch],
            gen: 1,
            vgen: 1,
            code_gen_seen: 0,
            page_slots: HashMap::new(),
        }
    }
    pub fn flush(&mut self) {
        self.ops.truncate(1);
        self.page_slots.clear();
        self.gen = self.gen.wrapping_add(1);
        if self.gen == 0 {
            self.table.fill(BlockEntry::default());
            self.gen = 1;
        }
        self.bump_vgen();
    }
    fn bump_vgen(&mut self) {
        self.vgen = self.vgen.wrapping_add(1);
        if self.vgen == 0 {
            self.vcache.fill(VEntry::default());
            self.vgen = 1;
        }
    }
    /// Drop the blocks decoded from the page at `page` (its ops stay in the
    /// arena as garbage until the next full flush).
    pub fn invalidate_page(&mut self, page: u64) {
        if let Some(slots) = self.page_slots.remove(&page) {
            for s in slots {
                let e = &mut self.table[s as usize];
                if e.pa & !0xfff == page {
                    *e = BlockEntry::default();
                }
            }
            self.bump_vgen();
        }
    }
    #[inline(always)]
    fn vslot(pc: u64) -> usize {
        ((pc >> 1) as usize) & ((1 << VCACHE_BITS) - 1)
    }
    #[inline(always)]
    fn slot(pa: u64) -> usize {
        (((pa >> 1) ^ (pa >> (TABLE_BITS + 1))) as usize) & ((1 << TABLE_BITS) - 1)
    }
}

/// Index of the sink register: hot-path instructions whose rd is x0 are
/// cached with rd = SINK, so their handlers write unconditionally and x0
/// stays zero without a fix-up on every write.
pub(crate) const SINK: u8 = 32;

/// Redirect writes to x0 into the sink register (cached copies only).
fn sink_rd0(insn: Insn) -> Insn {
    use Insn::*;
    macro_rules! sink {
        ($insn:expr; $($v:ident),*) => {
            match $insn {
                $( $v { rd: 0, rs1, imm } => $v { rd: SINK, rs1, imm }, )*
                other => other,
            }
        };
    }
    macro_rules! sink_r {
        ($insn:expr; $($v:ident),*) => {
            match $insn {
                $( $v { rd: 0, rs1, rs2 } => $v { rd: SINK, rs1, rs2 }, )*
                other => other,
            }
        };
    }
    let insn = match insn {
        Lui { rd: 0, imm } => Lui { rd: SINK, imm },
        Auipc { rd: 0, imm } => Auipc { rd: SINK, imm },
        Jal { rd: 0, imm } => Jal { rd: SINK, imm },
        other => other,
    };
    let insn = sink!(insn;
        Jalr, Lb, Lh, Lw, Ld, Lbu, Lhu, Lwu, Addi, Slti, Sltiu, Xori, Ori, Andi, Slli, Srli, Srai, Addiw, Slliw, Srliw,
        Sraiw
    );
    sink_r!(insn;
        Add, Sub, Sll, Slt, Sltu, Xor, Srl, Sra, Or, And, Addw, Subw, Sllw, Srlw, Sraw, Mul, Mulh, Mulhsu, Mulhu, Div,
        Divu, Rem, Remu, Mulw, Divw, Divuw, Remw, Remuw
    )
}

/// Blocks end at jumps and system instructions but run on through
/// conditional branches (a taken branch leaves the block early).
fn ends_block(i: &Insn) -> bool {
    use Insn::*;
    i.ends_block()
        && !matches!(
            i,
            Beq { .. } | Bne { .. } | Blt { .. } | Bge { .. } | Bltu { .. } | Bgeu { .. }
        )
}

pub(crate) fn class_of(i: &Insn) -> InsnClass {
    use Insn::*;
    match i {
        Jal { .. } | Jalr { .. } => InsnClass::Jump,
        Beq { .. } | Bne { .. } | Blt { .. } | Bge { .. } | Bltu { .. } | Bgeu { .. } => {
            InsnClass::Branch
        }
        Lb { .. }
        | Lh { .. }
        | Lw { .. }
        | Ld { .. }
        | Lbu { .. }
        | Lhu { .. }
        | Lwu { .. }
        | Flw { .. }
        | Fld { .. } => InsnClass::Load,
        Sb { .. } | Sh { .. } | Sw { .. } | Sd { .. } | Fsw { .. } | Fsd { .. } => InsnClass::Store,
        LrW { .. } | LrD { .. } | ScW { .. } | ScD { .. } | AmoW { .. } | AmoD { .. } => {
            InsnClass::Amo
        }
        Mul { .. } | Mulh { .. } | Mulhsu { .. } | Mulhu { .. } | Mulw { .. } => InsnClass::Mul,
        Div { .. }
        | Divu { .. }
        | Rem { .. }
        | Remu { .. }
        | Divw { .. }
        | Divuw { .. }
        | Remw { .. }
        | Remuw { .. } => InsnClass::Div,
        Fma { .. } => InsnClass::FpFma,
        Fp { op, .. } => {
            use hs_isa::FpOp::*;
            match op {
                FaddS | FsubS | FaddD | FsubD => InsnClass::FpAdd,
                FmulS | FmulD => InsnClass::FpMul,
                FdivS | FdivD => InsnClass::FpDiv,
                FsqrtS | FsqrtD => InsnClass::FpSqrt,
                _ => InsnClass::FpMisc,
            }
        }
        Csrrw { .. }
        | Csrrs { .. }
        | Csrrc { .. }
        | Csrrwi { .. }
        | Csrrsi { .. }
        | Csrrci { .. } => InsnClass::Csr,
        Fence { .. } => InsnClass::Fence,
        FenceI => InsnClass::FenceI,
        SfenceVma { .. } => InsnClass::SfenceVma,
        Ecall | Ebreak => InsnClass::Ecall,
        Mret | Sret => InsnClass::Xret,
        Wfi => InsnClass::Wfi,
        Illegal(_) | Marker { .. } => InsnClass::System,
        _ => InsnClass::Alu,
    }
}

/// The registers `i` reads and writes (before `sink_rd0`: x0 is no
/// register), for timing models that track dependencies.
pub(crate) fn operands_of(i: &Insn) -> Operands {
    use Insn::*;
    let x = Operands::x;
    let f = Operands::f;
    let n = Operands::NONE;
    let op = |dst: u8, a: u8, b: u8, c: u8, wide: bool| Operands {
        dst,
        src: [a, b, c],
        flags: if wide { Operands::WIDE } else { 0 },
    };
    match *i {
        Lui { rd, .. } | Auipc { rd, .. } | Jal { rd, .. } => op(x(rd), n, n, n, false),
        Jalr { rd, rs1, .. }
        | Lb { rd, rs1, .. }
        | Lh { rd, rs1, .. }
        | Lw { rd, rs1, .. }
        | Ld { rd, rs1, .. }
        | Lbu { rd, rs1, .. }
        | Lhu { rd, rs1, .. }
        | Lwu { rd, rs1, .. }
        | Addi { rd, rs1, .. }
        | Slti { rd, rs1, .. }
        | Sltiu { rd, rs1, .. }
        | Xori { rd, rs1, .. }
        | Ori { rd, rs1, .. }
        | Andi { rd, rs1, .. }
        | Slli { rd, rs1, .. }
        | Srli { rd, rs1, .. }
        | Srai { rd, rs1, .. }
        | Addiw { rd, rs1, .. }
        | Slliw { rd, rs1, .. }
        | Srliw { rd, rs1, .. }
        | Sraiw { rd, rs1, .. }
        | LrW { rd, rs1, .. }
        | LrD { rd, rs1, .. }
        | Csrrw { rd, rs1, .. }
        | Csrrs { rd, rs1, .. }
        | Csrrc { rd, rs1, .. } => op(x(rd), x(rs1), n, n, false),
        Csrrwi { rd, .. } | Csrrsi { rd, .. } | Csrrci { rd, .. } => op(x(rd), n, n, n, false),
        Beq { rs1, rs2, .. }
        | Bne { rs1, rs2, .. }
        | Blt { rs1, rs2, .. }
        | Bge { rs1, rs2, .. }
        | Bltu { rs1, rs2, .. }
        | Bgeu { rs1, rs2, .. }
        | Sb { rs1, rs2, .. }
        | Sh { rs1, rs2, .. }
        | Sw { rs1, rs2, .. }
        | Sd { rs1, rs2, .. }
        | SfenceVma { rs1, rs2 } => op(n, x(rs1), x(rs2), n, false),
        Fsw { rs1, rs2, .. } | Fsd { rs1, rs2, .. } => op(n, x(rs1), f(rs2), n, false),
        Flw { rd, rs1, .. } | Fld { rd, rs1, .. } => op(f(rd), x(rs1), n, n, false),
        Div { rd, rs1, rs2 }
        | Divu { rd, rs1, rs2 }
        | Rem { rd, rs1, rs2 }
        | Remu { rd, rs1, rs2 } => op(x(rd), x(rs1), x(rs2), n, true),
        Add { rd, rs1, rs2 }
        | Sub { rd, rs1, rs2 }
        | Sll { rd, rs1, rs2 }
        | Slt { rd, rs1, rs2 }
        | Sltu { rd, rs1, rs2 }
        | Xor { rd, rs1, rs2 }
        | Srl { rd, rs1, rs2 }
        | Sra { rd, rs1, rs2 }
        | Or { rd, rs1, rs2 }
        | And { rd, rs1, rs2 }
        | Addw { rd, rs1, rs2 }
        | Subw { rd, rs1, rs2 }
        | Sllw { rd, rs1, rs2 }
        | Srlw { rd, rs1, rs2 }
        | Sraw { rd, rs1, rs2 }
        | Mul { rd, rs1, rs2 }
        | Mulh { rd, rs1, rs2 }
        | Mulhsu { rd, rs1, rs2 }
        | Mulhu { rd, rs1, rs2 }
        | Mulw { rd, rs1, rs2 }
        | Divw { rd, rs1, rs2 }
        | Divuw { rd, rs1, rs2 }
        | Remw { rd, rs1, rs2 }
        | Remuw { rd, rs1, rs2 }
        | ScW { rd, rs1, rs2, .. }
        | ScD { rd, rs1, rs2, .. }
        | AmoW { rd, rs1, rs2, .. }
        | AmoD { rd, rs1, rs2, .. } => op(x(rd), x(rs1), x(rs2), n, false),
        Fma {
            dbl,
            rd,
            rs1,
            rs2,
            rs3,
            ..
        } => op(f(rd), f(rs1), f(rs2), f(rs3), dbl),
        Fp {
            op: o,
            rd,
            rs1,
            rs2,
            ..
        } => {
            let d = if o.rd_is_int() { x(rd) } else { f(rd) };
            let a = if o.rs1_is_int() { x(rs1) } else { f(rs1) };
            let b = if o.sources() > 1 { f(rs2) } else { n };
            op(d, a, b, n, o.is_double())
        }
        _ => Operands::EMPTY,
    }
}

#[inline(always)]
fn sext32(v: u64) -> u64 {
    v as i32 as i64 as u64
}

/// Cycles between two checks for hpm counter overflow while one is watched.
const HPM_CHECK: u64 = 256;

impl<T: TimingModel> Hart<T> {
    /// Run until `cycle() >= until_cycle` or another exit.
    pub fn run<B: SystemBus>(&mut self, bus: &mut B, until_cycle: u64) -> Exit {
        // other harts and DMA may have written code since our last slice
        self.checks |= CHECK_CODE | CHECK_IRQ;
        // one compare per block covers both the budget and the Sstc timer
        let mut limit = until_cycle.min(self.stimecmp_cycle);
        let exit = loop {
            if self.cycle >= limit || self.checks != 0 {
                if self.cycle >= until_cycle {
                    break Exit::Budget;
                }
                self.checks &= !CHECK_IRQ;
                if let Some(irq) = self.interrupt_to_take() {
                    self.stats.interrupts += 1;
                    self.cycle += 1;
                    self.stall = self.stall.wrapping_add(1);
                    self.take_trap(irq, true, 0);
                }
                if self.checks & CHECK_CODE != 0 {
                    self.checks &= !CHECK_CODE;
                    self.drop_written_code();
                }
                limit = until_cycle.min(self.stimecmp_cycle);
                if self.csr.hpm_watch != 0 {
                    // Sscofpmf: look for counter overflow every HPM_CHECK
                    // cycles (the interrupt's skid is at most that).
                    self.check_hpm_overflow();
                    limit = limit.min(self.cycle + HPM_CHECK);
                }
            }
            let (start, n, pa) = match self.fetch_block() {
                Ok(b) => b,
                Err(t) => {
                    self.cycle += 1;
                    self.stall = self.stall.wrapping_add(1);
                    self.take_trap(t.cause, false, t.tval);
                    continue;
                }
            };
            if let Some(e) = self.exec_block(bus, start, n, pa, limit) {
                break e;
            }
        };
        // LR/SC reservations do not survive the end of a slice: another
        // hart (or DMA) may store to the reserved address before we resume.
        self.reservation = None;
        exit
    }

    /// What the block cache holds, for a snapshot. A host cache, but its
    /// contents show through: a virtual-pc hit skips translation (so what
    /// it holds decides which page walks the hart makes and reports to the
    /// timing model), a code write drops blocks only of pages that have
    /// some, and a full arena flushes everything. A restored hart decodes
    /// the same blocks again and starts with the same cache.
    pub(crate) fn save_blocks(&self) -> BlocksSaved {
        let b = &self.blocks;
        let live = self.tlb.gen_bits | b.vgen as u64;
        let mut page_slots: Vec<(u64, Vec<u32>)> =
            b.page_slots.iter().map(|(p, v)| (*p, v.clone())).collect();
        page_slots.sort();
        BlocksSaved {
            table: b
                .table
                .iter()
                .enumerate()
                .filter(|(_, e)| e.gen == b.gen && e.start != 0)
                .map(|(i, e)| (i as u32, e.pa))
                .collect(),
            vcache: b
                .vcache
                .iter()
                .filter(|v| v.stamp & !(3 << 40) == live && v.start != 0)
                .map(|v| (v.pc, v.pa, ((v.stamp >> 40) & 3) as u8))
                .collect(),
            page_slots,
            arena: b.ops.len(),
            code_gen_seen: b.code_gen_seen,
        }
    }

    /// Rebuild what [`Hart::save_blocks`] described, on a flushed cache.
    /// An entry that no longer decodes (or names a slot it cannot be in) is
    /// left out: the cache is then less full than it was, never wrong.
    pub(crate) fn restore_blocks(&mut self, saved: &BlocksSaved) {
        let mut by_pa: HashMap<u64, (u32, u32)> = HashMap::new();
        let mut decode = |h: &mut Self, pc: u64, pa: u64| -> Option<(u32, u32)> {
            if let Some(&d) = by_pa.get(&pa) {
                return Some(d);
            }
            // Never let the arena fill (its flush would leave the entries
            // made so far pointing past its end), and never take the
            // uncached single-instruction path (it translates and times).
            if h.blocks.ops.len() + MAX_BLOCK_INSNS > ARENA_LIMIT {
                return None;
            }
            let len = insn_len(h.ram.read(pa, 2)? as u16) as u64;
            if (pa & 0xfff) + len > 0x1000 {
                return None;
            }
            match h.decode_block(pc, pa) {
                Ok((start, n, _)) if start != 0 => {
                    by_pa.insert(pa, (start as u32, n as u32));
                    Some((start as u32, n as u32))
                }
                _ => None,
            }
        };
        for &(slot, pa) in &saved.table {
            if slot as usize == Blocks::slot(pa) {
                decode(self, pa, pa);
            }
        }
        for &(pc, pa, ctx) in &saved.vcache {
            if ctx > 3 {
                continue;
            }
            let Some((start, n)) = decode(self, pc, pa) else {
                continue;
            };
            let stamp = self.tlb.gen_bits | ((ctx as u64) << 40) | self.blocks.vgen as u64;
            self.blocks.vcache[Blocks::vslot(pc)] = VEntry {
                pc,
                stamp,
                start,
                n,
                pa,
            };
        }
        // The table as it was: decoding for the first level may have put
        // blocks in slots that held others (or nothing).
        let gen = self.blocks.gen;
        self.blocks.table.fill(BlockEntry::default());
        for &(slot, pa) in &saved.table {
            if let (true, Some(&(start, n))) = (slot as usize == Blocks::slot(pa), by_pa.get(&pa)) {
                self.blocks.table[slot as usize] = BlockEntry { pa, gen, start, n };
            }
        }
        let slots = self.blocks.table.len() as u32;
        self.blocks.page_slots = saved
            .page_slots
            .iter()
            .map(|(p, v)| (*p, v.iter().copied().filter(|&s| s < slots).collect()))
            .collect();
        // Every entry lies inside the arena (checked, not assumed: the run
        // loop follows them without bounds checks).
        let ops = self.blocks.ops.len() as u64;
        let inside = |start: u32, n: u32| start != 0 && start as u64 + n as u64 <= ops;
        for v in self.blocks.vcache.iter_mut() {
            if !inside(v.start, v.n) {
                *v = VEntry::default();
            }
        }
        for e in self.blocks.table.iter_mut() {
            if !inside(e.start, e.n) {
                *e = BlockEntry::default();
            }
        }
        // The arena as full as it was, so it fills (and is flushed) when it did.
        let scratch = self.blocks.ops[0];
        let want = saved.arena.min(ARENA_LIMIT + MAX_BLOCK_INSNS);
        while self.blocks.ops.len() < want {
            self.blocks.ops.push(scratch);
        }
        self.blocks.code_gen_seen = saved.code_gen_seen;
    }

    /// Find or decode the block at `pc`: (first op index, op count).
    #[inline(always)]
    fn fetch_block(&mut self) -> Result<(usize, usize, u64), Trap> {
        let pc = self.pc;
        let v = &self.blocks.vcache[Blocks::vslot(pc)];
        if v.pc == pc && v.stamp == self.fetch_stamp {
            return Ok((v.start as usize, v.n as usize, v.pa));
        }
        let r = self.fetch_block_miss();
        if let Ok((start, n, pa)) = r {
            if start != 0 {
                let stamp = self.fetch_stamp;
                self.blocks.vcache[Blocks::vslot(pc)] = VEntry {
                    pc,
                    stamp,
                    start: start as u32,
                    n: n as u32,
                    pa,
                };
            }
        }
        r
    }

    #[inline(never)]
    fn fetch_block_miss(&mut self) -> Result<(usize, usize, u64), Trap> {
        let pc = self.pc;
        let vpn = pc >> 12;
        let e = self.tlb.e[KIND_FETCH][self.fetch_ctx & 3][(vpn as usize) & (TLB_SIZE - 1)];
        if e.tag != vpn | self.tlb.gen_bits {
            return self.fetch_block_slow();
        }
        let pa = self.host_to_pa(pc.wrapping_add(e.addend));
        let b = self.blocks.table[Blocks::slot(pa)];
        if b.pa == pa && b.gen == self.blocks.gen {
            return Ok((b.start as usize, b.n as usize, pa));
        }
        self.decode_block(pc, pa)
    }

    #[inline(never)]
    fn fetch_block_slow(&mut self) -> Result<(usize, usize, u64), Trap> {
        let pc = self.pc;
        let pa = self.translate(pc, 2, KIND_FETCH)?;
        if !self.ram.contains(pa, 2) {
            // executing from devices is not supported
            return Err(Trap::new(CAUSE_FETCH_ACCESS, pc));
        }
        let vpn = pc >> 12;
        let e = self.tlb.e[KIND_FETCH][self.fetch_ctx & 3][(vpn as usize) & (TLB_SIZE - 1)];
        if e.tag == vpn | self.tlb.gen_bits {
            return self.decode_block(pc, pa);
        }
        // PMP splits this page: one checked instruction at a time
        self.single_op(pc, pa)
    }

    /// Decode one instruction into the scratch slot (not cached).
    fn single_op(&mut self, pc: u64, pa: u64) -> Result<(usize, usize, u64), Trap> {
        let prv = if self.fetch_ctx == CTX_U {
            Priv::User
        } else if self.fetch_ctx == CTX_M {
            Priv::Machine
        } else {
            Priv::Supervisor
        };
        if !self.pmp.check(pa, 2, prv, crate::pmp::Perm::Exec) {
            return Err(Trap::new(CAUSE_FETCH_ACCESS, pc));
        }
        let lo = self
            .ram
            .read(pa, 2)
            .ok_or(Trap::new(CAUSE_FETCH_ACCESS, pc))?;
        let mut word = lo as u32;
        if insn_len(lo as u16) == 4 {
            let pc2 = pc.wrapping_add(2);
            let pa2 = if pc2 & 0xfff == 0 {
                self.translate(pc2, 2, KIND_FETCH)?
            } else {
                pa + 2
            };
            if !self.pmp.check(pa2, 2, prv, crate::pmp::Perm::Exec) {
                return Err(Trap::new(CAUSE_FETCH_ACCESS, pc2));
            }
            let hi = self
                .ram
                .read(pa2, 2)
                .ok_or(Trap::new(CAUSE_FETCH_ACCESS, pc2))?;
            word |= (hi as u32) << 16;
        }
        let (insn, len) = decode(word);
        self.blocks.ops[0] = Op {
            insn: sink_rd0(insn),
            bits: word,
            len,
            class: class_of(&insn),
            off: 0,
            ops: operands_of(&insn),
        };
        Ok((0, 1, pa))
    }

    #[inline(never)]
    fn decode_block(&mut self, pc: u64, pa: u64) -> Result<(usize, usize, u64), Trap> {
        if self.blocks.ops.len() > ARENA_LIMIT {
            self.flush_blocks();
        }
        let page_end = (pa | 0xfff) + 1;
        let start = self.blocks.ops.len();
        let mut a = pa;
        loop {
            let Some(lo) = self.ram.read(a, 2) else { break };
            let len = insn_len(lo as u16) as u64;
            if a + len > page_end {
                if a == pa {
                    return self.single_op(pc, pa); // first instruction crosses the page
                }
                break;
            }
            let word = if len == 4 {
                self.ram.read(a, 4).unwrap_or(0) as u32
            } else {
                lo as u32
            };
            let (insn, l) = decode(word);
            self.blocks.ops.push(Op {
                insn: sink_rd0(insn),
                bits: word,
                len: l,
                class: class_of(&insn),
                off: (a - pa) as u16,
                ops: operands_of(&insn),
            });
            a += len;
            if ends_block(&insn)
                || self.blocks.ops.len() - start >= MAX_BLOCK_INSNS
                || a >= page_end
            {
                break;
            }
        }
        let n = self.blocks.ops.len() - start;
        self.stats.blocks_decoded += 1;
        if n == 0 {
            return Err(Trap::new(CAUSE_FETCH_ACCESS, pc));
        }
        self.ram.mark_code(pa);
        let slot = Blocks::slot(pa);
        self.blocks.table[slot] = BlockEntry {
            pa,
            gen: self.blocks.gen,
            start: start as u32,
            n: n as u32,
        };
        self.blocks
            .page_slots
            .entry(pa & !0xfff)
            .or_default()
            .push(slot as u32);
        Ok((start, n, pa))
    }

    /// Execute `n` ops starting at `start`; `Some` when the run loop must return.
    ///
    /// The instruction match sits directly in the loop so each arm either
    /// continues with the next op or leaves the block itself.
    ///
    /// A taken branch or jump whose target block is in the virtual-pc cache
    /// chains straight into it, unless the run loop has work (`checks`) or
    /// `limit` (budget or Sstc deadline) is reached.
    fn exec_block<B: SystemBus>(
        &mut self,
        bus: &mut B,
        start: usize,
        n: usize,
        block_pa: u64,
        limit: u64,
    ) -> Option<Exit> {
        use Insn::*;
        debug_assert!(n > 0 && start + n <= self.blocks.ops.len());
        // SAFETY (for the pointer arithmetic here and the reads below):
        // `fetch_block` returned an in-bounds range, and nothing that runs
        // while a block executes reallocates `ops`: decoding happens between
        // blocks, and `fence.i` (which may truncate the arena, keeping its
        // allocation) ends its block.
        let ops = self.blocks.ops.as_ptr();
        let mut p = unsafe { ops.add(start) };
        let mut end = unsafe { p.add(n) };
        let mut block_pa = block_pa;
        // pc and the cycle count live in registers while the block runs;
        // `self.cycle` is synced around every slow path that may read it.
        let mut base_pc = self.pc;
        let mut cyc = self.cycle;
        let (trap, op, extra) = 'run: loop {
            let op: &Op = unsafe { &*p };
            p = unsafe { p.add(1) };
            // computed where used, so straight-line ALU ops never pay for them
            macro_rules! pc {
                () => {
                    base_pc.wrapping_add(op.off as u64)
                };
            }
            macro_rules! next {
                () => {
                    pc!().wrapping_add(op.len as u64)
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
                }};
            }
            // leave the block at `target` (taken branch, jump, xRET)
            macro_rules! jump {
                ($target:expr) => {{
                    let t = $target;
                    retire!();
                    if cyc < limit && self.checks == 0 {
                        let v = &self.blocks.vcache[Blocks::vslot(t)];
                        if v.pc == t && v.stamp == self.fetch_stamp {
                            // SAFETY: as above; the stamp proves the entry
                            // belongs to the current arena generation.
                            p = unsafe { ops.add(v.start as usize) };
                            end = unsafe { p.add(v.n as usize) };
                            base_pc = t;
                            block_pa = v.pa;
                            continue 'run;
                        }
                    }
                    self.cycle = cyc;
                    self.pc = t;
                    return None;
                }};
            }
            macro_rules! tri {
                ($e:expr) => {
                    match $e {
                        Ok(v) => v,
                        Err(t) => break 'run (t, op, extra),
                    }
                };
            }
            macro_rules! alu_i {
                ($rd:expr, $rs1:expr, $imm:expr, |$a:ident, $b:ident| $e:expr) => {{
                    let $a = self.rx($rs1);
                    let $b = $imm as i64 as u64;
                    self.wxs($rd, $e);
                }};
            }
            macro_rules! alu_r {
                ($rd:expr, $rs1:expr, $rs2:expr, |$a:ident, $b:ident| $e:expr) => {{
                    let $a = self.rx($rs1);
                    let $b = self.rx($rs2);
                    self.wxs($rd, $e);
                }};
            }
            // divides also tell the timing model their operands (early-out dividers)
            macro_rules! div_r {
                ($rd:expr, $rs1:expr, $rs2:expr, $word:expr, $signed:expr, |$a:ident, $b:ident| $e:expr) => {{
                    let (x, y) = (self.rx($rs1), self.rx($rs2));
                    let mag = |v: u64| match ($word, $signed) {
                        (true, true) => (v as i32).unsigned_abs() as u64,
                        (true, false) => v as u32 as u64,
                        (false, true) => (v as i64).unsigned_abs(),
                        (false, false) => v,
                    };
                    self.timing.divide(mag(x), mag(y), $word);
                    alu_r!($rd, $rs1, $rs2, |$a, $b| $e)
                }};
            }
            macro_rules! addr {
                ($rs1:expr, $imm:expr) => {
                    self.rx($rs1).wrapping_add($imm as i64 as u64)
                };
            }
            macro_rules! br {
                ($cond:expr, $imm:expr) => {{
                    let target = pc!().wrapping_add($imm as i64 as u64);
                    let taken = $cond;
                    let extra = self.timing.branch(pc!(), taken, target);
                    cyc += extra;
                    self.stall = self.stall.wrapping_add(extra);
                    if taken {
                        jump!(target);
                    }
                }};
            }
            match op.insn {
                Addi { rd, rs1, imm } => alu_i!(rd, rs1, imm, |a, b| a.wrapping_add(b)),
                Lui { rd, imm } => self.wxs(rd, imm as i64 as u64),
                Auipc { rd, imm } => self.wxs(rd, pc!().wrapping_add(imm as i64 as u64)),
                Jal { rd, imm } => {
                    let t = pc!().wrapping_add(imm as i64 as u64);
                    let extra =
                        self.timing
                            .direct_jump(pc!(), t, JumpHint::of(rd as u8, None), next!());
                    cyc += extra;
                    self.stall = self.stall.wrapping_add(extra);
                    self.wxs(rd, next!());
                    jump!(t);
                }
                Jalr { rd, rs1, imm } => {
                    let t = addr!(rs1, imm) & !1;
                    let extra = self.timing.jump(
                        pc!(),
                        t,
                        JumpHint::of(rd as u8, Some(rs1 as u8)),
                        next!(),
                    );
                    cyc += extra;
                    self.stall = self.stall.wrapping_add(extra);
                    self.wxs(rd, next!());
                    jump!(t);
                }
                Beq { rs1, rs2, imm } => br!(self.rx(rs1) == self.rx(rs2), imm),
                Bne { rs1, rs2, imm } => br!(self.rx(rs1) != self.rx(rs2), imm),
                Blt { rs1, rs2, imm } => br!((self.rx(rs1) as i64) < self.rx(rs2) as i64, imm),
                Bge { rs1, rs2, imm } => br!((self.rx(rs1) as i64) >= self.rx(rs2) as i64, imm),
                Bltu { rs1, rs2, imm } => br!(self.rx(rs1) < self.rx(rs2), imm),
                Bgeu { rs1, rs2, imm } => br!(self.rx(rs1) >= self.rx(rs2), imm),

                Lb { rd, rs1, imm } => {
                    let v = tri!(self.load_c::<B, 1>(bus, addr!(rs1, imm), &mut cyc));
                    self.wxs(rd, v as i8 as i64 as u64)
                }
                Lh { rd, rs1, imm } => {
                    let v = tri!(self.load_c::<B, 2>(bus, addr!(rs1, imm), &mut cyc));
                    self.wxs(rd, v as i16 as i64 as u64)
                }
                Lw { rd, rs1, imm } => {
                    let v = tri!(self.load_c::<B, 4>(bus, addr!(rs1, imm), &mut cyc));
                    self.wxs(rd, sext32(v))
                }
                Ld { rd, rs1, imm } => {
                    let v = tri!(self.load_c::<B, 8>(bus, addr!(rs1, imm), &mut cyc));
                    self.wxs(rd, v)
                }
                Lbu { rd, rs1, imm } => {
                    let v = tri!(self.load_c::<B, 1>(bus, addr!(rs1, imm), &mut cyc));
                    self.wxs(rd, v)
                }
                Lhu { rd, rs1, imm } => {
                    let v = tri!(self.load_c::<B, 2>(bus, addr!(rs1, imm), &mut cyc));
                    self.wxs(rd, v)
                }
                Lwu { rd, rs1, imm } => {
                    let v = tri!(self.load_c::<B, 4>(bus, addr!(rs1, imm), &mut cyc));
                    self.wxs(rd, v)
                }
                Sb { rs1, rs2, imm } => {
                    tri!(self.store_c::<B, 1>(bus, addr!(rs1, imm), self.rx(rs2), &mut cyc))
                }
                Sh { rs1, rs2, imm } => {
                    tri!(self.store_c::<B, 2>(bus, addr!(rs1, imm), self.rx(rs2), &mut cyc))
                }
                Sw { rs1, rs2, imm } => {
                    tri!(self.store_c::<B, 4>(bus, addr!(rs1, imm), self.rx(rs2), &mut cyc))
                }
                Sd { rs1, rs2, imm } => {
                    tri!(self.store_c::<B, 8>(bus, addr!(rs1, imm), self.rx(rs2), &mut cyc))
                }

                Slti { rd, rs1, imm } => {
                    alu_i!(rd, rs1, imm, |a, b| ((a as i64) < b as i64) as u64)
                }
                Sltiu { rd, rs1, imm } => alu_i!(rd, rs1, imm, |a, b| (a < b) as u64),
                Xori { rd, rs1, imm } => alu_i!(rd, rs1, imm, |a, b| a ^ b),
                Ori { rd, rs1, imm } => alu_i!(rd, rs1, imm, |a, b| a | b),
                Andi { rd, rs1, imm } => alu_i!(rd, rs1, imm, |a, b| a & b),
                Slli { rd, rs1, imm } => alu_i!(rd, rs1, imm, |a, b| a << (b & 63)),
                Srli { rd, rs1, imm } => alu_i!(rd, rs1, imm, |a, b| a >> (b & 63)),
                Srai { rd, rs1, imm } => {
                    alu_i!(rd, rs1, imm, |a, b| ((a as i64) >> (b & 63)) as u64)
                }
                Addiw { rd, rs1, imm } => alu_i!(rd, rs1, imm, |a, b| sext32(a.wrapping_add(b))),
                Slliw { rd, rs1, imm } => alu_i!(rd, rs1, imm, |a, b| sext32(a << (b & 31))),
                Srliw { rd, rs1, imm } => {
                    alu_i!(rd, rs1, imm, |a, b| sext32(((a as u32) >> (b & 31)) as u64))
                }
                Sraiw { rd, rs1, imm } => {
                    alu_i!(rd, rs1, imm, |a, b| ((a as i32) >> (b & 31)) as i64 as u64)
                }

                Add { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, |a, b| a.wrapping_add(b)),
                Sub { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, |a, b| a.wrapping_sub(b)),
                Sll { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, |a, b| a << (b & 63)),
                Slt { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, |a, b| ((a as i64) < b as i64) as u64),
                Sltu { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, |a, b| (a < b) as u64),
                Xor { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, |a, b| a ^ b),
                Srl { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, |a, b| a >> (b & 63)),
                Sra { rd, rs1, rs2 } => {
                    alu_r!(rd, rs1, rs2, |a, b| ((a as i64) >> (b & 63)) as u64)
                }
                Or { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, |a, b| a | b),
                And { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, |a, b| a & b),
                Addw { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, |a, b| sext32(a.wrapping_add(b))),
                Subw { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, |a, b| sext32(a.wrapping_sub(b))),
                Sllw { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, |a, b| sext32(a << (b & 31))),
                Srlw { rd, rs1, rs2 } => {
                    alu_r!(rd, rs1, rs2, |a, b| sext32(((a as u32) >> (b & 31)) as u64))
                }
                Sraw { rd, rs1, rs2 } => {
                    alu_r!(rd, rs1, rs2, |a, b| ((a as i32) >> (b & 31)) as i64 as u64)
                }

                Mul { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, |a, b| a.wrapping_mul(b)),
                Mulh { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, |a, b| ((a as i64 as i128
                    * b as i64 as i128)
                    >> 64)
                    as u64),
                Mulhsu { rd, rs1, rs2 } => {
                    alu_r!(
                        rd,
                        rs1,
                        rs2,
                        |a, b| ((a as i64 as i128).wrapping_mul(b as i128) >> 64) as u64
                    )
                }
                Mulhu { rd, rs1, rs2 } => {
                    alu_r!(rd, rs1, rs2, |a, b| ((a as u128 * b as u128) >> 64) as u64)
                }
                Div { rd, rs1, rs2 } => div_r!(rd, rs1, rs2, false, true, |a, b| if b == 0 {
                    u64::MAX
                } else {
                    (a as i64).wrapping_div(b as i64) as u64
                }),
                Divu { rd, rs1, rs2 } => {
                    div_r!(rd, rs1, rs2, false, false, |a, b| if b == 0 {
                        u64::MAX
                    } else {
                        a / b
                    })
                }
                Rem { rd, rs1, rs2 } => {
                    div_r!(rd, rs1, rs2, false, true, |a, b| if b == 0 {
                        a
                    } else {
                        (a as i64).wrapping_rem(b as i64) as u64
                    })
                }
                Remu { rd, rs1, rs2 } => {
                    div_r!(rd, rs1, rs2, false, false, |a, b| if b == 0 {
                        a
                    } else {
                        a % b
                    })
                }
                Mulw { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, |a, b| sext32(a.wrapping_mul(b))),
                Divw { rd, rs1, rs2 } => div_r!(rd, rs1, rs2, true, true, |a, b| {
                    let (a, b) = (a as i32, b as i32);
                    if b == 0 {
                        u64::MAX
                    } else {
                        a.wrapping_div(b) as i64 as u64
                    }
                }),
                Divuw { rd, rs1, rs2 } => div_r!(rd, rs1, rs2, true, false, |a, b| {
                    let (a, b) = (a as u32, b as u32);
                    if b == 0 {
                        u64::MAX
                    } else {
                        sext32((a / b) as u64)
                    }
                }),
                Remw { rd, rs1, rs2 } => div_r!(rd, rs1, rs2, true, true, |a, b| {
                    let (a, b) = (a as i32, b as i32);
                    if b == 0 {
                        a as i64 as u64
                    } else {
                        a.wrapping_rem(b) as i64 as u64
                    }
                }),
                Remuw { rd, rs1, rs2 } => div_r!(rd, rs1, rs2, true, false, |a, b| {
                    let (a, b) = (a as u32, b as u32);
                    if b == 0 {
                        sext32(a as u64)
                    } else {
                        sext32((a % b) as u64)
                    }
                }),

                Fence { .. } => {}
                Illegal(_)
                | Csrrw { .. }
                | Csrrs { .. }
                | Csrrc { .. }
                | Csrrwi { .. }
                | Csrrsi { .. }
                | Csrrci { .. }
                | FenceI
                | Ecall
                | Ebreak
                | Mret
                | Sret
                | Wfi
                | SfenceVma { .. }
                | Marker { .. }
                | LrW { .. }
                | LrD { .. }
                | ScW { .. }
                | ScD { .. }
                | AmoW { .. }
                | AmoD { .. }
                | Flw { .. }
                | Fld { .. }
                | Fsw { .. }
                | Fsd { .. }
                | Fma { .. }
                | Fp { .. } => {
                    self.cycle = cyc;
                    let r = self.exec_rare(bus, op, pc!());
                    cyc = self.cycle;
                    let t = tri!(r);
                    if t != next!() {
                        jump!(t);
                    }
                }
            }
            retire!();
            if p == end {
                self.cycle = cyc;
                self.pc = next!();
                return None;
            }
        };
        let pc = base_pc.wrapping_add(op.off as u64);
        let extra_cycles = extra.wrapping_add(1);
        self.cycle = cyc;
        if trap.cause == CAUSE_EXIT {
            // the instruction retired; the machine must act now
            self.cycle = self.cycle.wrapping_add(extra_cycles);
            self.stall = self.stall.wrapping_add(extra);
            self.pc = pc.wrapping_add(op.len as u64);
            return Some(self.exit.take().unwrap_or(Exit::IrqCheck));
        }
        // the faulting instruction does not retire but takes time
        self.cycle = self.cycle.wrapping_add(extra_cycles);
        self.stall = self.stall.wrapping_add(extra_cycles);
        self.pc = pc;
        self.take_trap(trap.cause, false, trap.tval);
        self.exit.take()
    }

    // The register file has 256 slots so a u8 index needs neither a mask
    // nor a bounds check; decoded fields are < 32 and the sink is 32.
    #[inline(always)]
    fn rx(&self, r: u8) -> u64 {
        self.x[r as usize]
    }
    #[inline(always)]
    fn wx(&mut self, r: u8, v: u64) {
        self.x[r as usize] = v;
        self.x[0] = 0;
    }
    /// Hot-path write: rd is never 0 here (see [`SINK`]).
    #[inline(always)]
    fn wxs(&mut self, r: u8, v: u64) {
        self.x[r as usize] = v;
    }

    /// System, atomic and floating-point instructions.
    #[inline(never)]
    fn exec_rare<B: SystemBus>(&mut self, bus: &mut B, op: &Op, pc: u64) -> Result<u64, Trap> {
        use Insn::*;
        let next = pc.wrapping_add(op.len as u64);
        let ill = Trap::illegal(op.bits);
        match op.insn {
            Illegal(_) => return Err(ill),
            Csrrw { rd, rs1, csr } => {
                let v = self.csr_op(csr, 0, self.rx(rs1), true, op.bits)?;
                self.wx(rd, v);
            }
            Csrrs { rd, rs1, csr } => {
                let v = self.csr_op(csr, 1, self.rx(rs1), rs1 != 0, op.bits)?;
                self.wx(rd, v);
            }
            Csrrc { rd, rs1, csr } => {
                let v = self.csr_op(csr, 2, self.rx(rs1), rs1 != 0, op.bits)?;
                self.wx(rd, v);
            }
            Csrrwi { rd, uimm, csr } => {
                let v = self.csr_op(csr, 0, uimm as u64, true, op.bits)?;
                self.wx(rd, v);
            }
            Csrrsi { rd, uimm, csr } => {
                let v = self.csr_op(csr, 1, uimm as u64, uimm != 0, op.bits)?;
                self.wx(rd, v);
            }
            Csrrci { rd, uimm, csr } => {
                let v = self.csr_op(csr, 2, uimm as u64, uimm != 0, op.bits)?;
                self.wx(rd, v);
            }
            // every store to a code page is logged by GuestRam, so dropping
            // the blocks of written pages is all fence.i has to do
            FenceI => self.drop_written_code(),
            Ecall => {
                let cause = match self.prv {
                    Priv::User => CAUSE_USER_ECALL,
                    Priv::Supervisor => CAUSE_SUPERVISOR_ECALL,
                    Priv::Machine => CAUSE_MACHINE_ECALL,
                };
                return Err(Trap::new(cause, 0));
            }
            Ebreak => return Err(Trap::new(CAUSE_BREAKPOINT, pc)),
            Mret => {
                if self.prv != Priv::Machine {
                    return Err(ill);
                }
                let from = self.prv;
                self.do_mret();
                let extra = self.timing.xret(self.pc, from as u8, self.prv as u8);
                self.charge(extra);
                return Ok(self.pc);
            }
            Sret => {
                if self.prv == Priv::User
                    || (self.prv == Priv::Supervisor && self.csr.mstatus & MSTATUS_TSR != 0)
                {
                    return Err(ill);
                }
                let from = self.prv;
                self.do_sret();
                let extra = self.timing.xret(self.pc, from as u8, self.prv as u8);
                self.charge(extra);
                return Ok(self.pc);
            }
            Wfi => {
                if self.prv == Priv::User
                    || (self.prv == Priv::Supervisor && self.csr.mstatus & MSTATUS_TW != 0)
                {
                    return Err(ill);
                }
                self.timing.wfi(pc);
                if self.pending_enabled() == 0 {
                    self.exit = Some(Exit::Idle);
                    return Err(Trap::exit());
                }
            }
            SfenceVma { .. } => {
                if self.prv == Priv::User
                    || (self.prv == Priv::Supervisor && self.csr.mstatus & MSTATUS_TVM != 0)
                {
                    return Err(ill);
                }
                self.tlb_flush();
            }
            Marker { op: m } => {
                self.exit = Some(Exit::Marker(MarkerCall {
                    op: m,
                    args: [self.x[10], self.x[11], self.x[12], self.x[13]],
                }));
                return Err(Trap::exit());
            }
            LrW { rd, rs1, .. } => {
                let v = self.load_reserved(bus, self.rx(rs1), 4)?;
                self.wx(rd, sext32(v));
            }
            LrD { rd, rs1, .. } => {
                let v = self.load_reserved(bus, self.rx(rs1), 8)?;
                self.wx(rd, v);
            }
            ScW { rd, rs1, rs2, .. } => {
                let r = self.store_conditional(bus, self.rx(rs1), 4, self.rx(rs2))?;
                self.wx(rd, r);
            }
            ScD { rd, rs1, rs2, .. } => {
                let r = self.store_conditional(bus, self.rx(rs1), 8, self.rx(rs2))?;
                self.wx(rd, r);
            }
            AmoW {
                op: aop,
                rd,
                rs1,
                rs2,
                ..
            } => {
                let v = self.amo(bus, aop, self.rx(rs1), 4, self.rx(rs2))?;
                self.wx(rd, sext32(v));
            }
            AmoD {
                op: aop,
                rd,
                rs1,
                rs2,
                ..
            } => {
                let v = self.amo(bus, aop, self.rx(rs1), 8, self.rx(rs2))?;
                self.wx(rd, v);
            }
            Flw { .. } | Fld { .. } | Fsw { .. } | Fsd { .. } | Fma { .. } | Fp { .. } => {
                self.exec_fp(bus, op)?
            }
            // `exec` handles every other variant; refuse rather than skip if one slips through
            _ => return Err(ill),
        }
        if self.exit.is_some() {
            return Err(Trap::exit());
        }
        Ok(next)
    }

    fn load_reserved<B: SystemBus>(&mut self, bus: &mut B, va: u64, n: u64) -> Result<u64, Trap> {
        if va & (n - 1) != 0 {
            return Err(Trap::new(CAUSE_MISALIGNED_LOAD, va));
        }
        let pa = self.translate(va, n, KIND_LOAD)?;
        let v = self
            .phys_read(bus, va, pa, n)
            .map_err(|_| access_fault(KIND_LOAD, va))?;
        self.reservation = Some(pa);
        Ok(v)
    }

    fn store_conditional<B: SystemBus>(
        &mut self,
        bus: &mut B,
        va: u64,
        n: u64,
        v: u64,
    ) -> Result<u64, Trap> {
        if va & (n - 1) != 0 {
            return Err(Trap::new(CAUSE_MISALIGNED_STORE, va));
        }
        let pa = self.translate(va, n, KIND_STORE)?;
        let ok = self.reservation == Some(pa);
        self.reservation = None;
        if !ok {
            return Ok(1);
        }
        self.phys_write(bus, va, pa, n, v)
            .map_err(|_| access_fault(KIND_STORE, va))?;
        Ok(0)
    }

    fn amo<B: SystemBus>(
        &mut self,
        bus: &mut B,
        op: AmoOp,
        va: u64,
        n: u64,
        src: u64,
    ) -> Result<u64, Trap> {
        if va & (n - 1) != 0 {
            return Err(Trap::new(CAUSE_MISALIGNED_STORE, va));
        }
        let pa = self.translate(va, n, KIND_STORE)?;
        // phys_read and phys_write report the two halves to the timing model
        let old = self
            .phys_read(bus, va, pa, n)
            .map_err(|_| access_fault(KIND_STORE, va))?;
        let (a, b) = if n == 4 {
            (sext32(old), sext32(src))
        } else {
            (old, src)
        };
        let new = match op {
            AmoOp::Swap => b,
            AmoOp::Add => a.wrapping_add(b),
            AmoOp::Xor => a ^ b,
            AmoOp::And => a & b,
            AmoOp::Or => a | b,
            AmoOp::Min => (a as i64).min(b as i64) as u64,
            AmoOp::Max => (a as i64).max(b as i64) as u64,
            AmoOp::Minu => {
                if n == 4 {
                    (a as u32).min(b as u32) as u64
                } else {
                    a.min(b)
                }
            }
            AmoOp::Maxu => {
                if n == 4 {
                    (a as u32).max(b as u32) as u64
                } else {
                    a.max(b)
                }
            }
        };
        self.phys_write(bus, va, pa, n, new)
            .map_err(|_| access_fault(KIND_STORE, va))?;
        Ok(old)
    }
}

#[cfg(test)]
mod restore_tests {
    use super::*;
    use hs_bus::GuestRam;

    /// A snapshot naming more blocks than the arena holds (and naming some
    /// twice) restores what fits: no live entry points past the arena's end,
    /// which the run loop would follow without a bounds check.
    #[test]
    fn restored_blocks_never_point_past_the_arena() {
        const BASE: u64 = 0x8000_0000;
        const SIZE: u64 = 8 << 20;
        let ram = GuestRam::new(BASE, SIZE).unwrap();
        for a in (0..SIZE).step_by(4) {
            ram.write(BASE + a, 4, 0x13); // nop: blocks of 64 instructions
        }
        let cfg = crate::HartConfig {
            hart_id: 0,
            cycles_per_tick: 100,
        };
        let mut h = Hart::new(cfg, ram, hs_timing::Atomic);
        let blocks: Vec<(u64, u64, u8)> = (0..SIZE / 256)
            .map(|i| (BASE + i * 256, BASE + i * 256, 1))
            .collect();
        let mut vcache = blocks.clone();
        vcache.extend(blocks.iter().map(|&(pc, pa, _)| (pc, pa, 3)));
        let saved = BlocksSaved {
            table: blocks
                .iter()
                .map(|&(_, pa, _)| (Blocks::slot(pa) as u32, pa))
                .collect(),
            vcache,
            page_slots: Vec::new(),
            arena: 0,
            code_gen_seen: 0,
        };
        h.flush_blocks();
        h.restore_blocks(&saved);
        let ops = h.blocks.ops.len() as u64;
        assert!(ops <= (ARENA_LIMIT + MAX_BLOCK_INSNS) as u64, "{ops} ops");
        let live = h.tlb.gen_bits | h.blocks.vgen as u64;
        let mut n = 0;
        for v in h.blocks.vcache.iter() {
            if v.stamp & !(3 << 40) == live && v.start != 0 {
                n += 1;
                assert!(
                    v.start as u64 + v.n as u64 <= ops,
                    "an entry points past the arena"
                );
            }
        }
        for e in h.blocks.table.iter() {
            if e.gen == h.blocks.gen && e.start != 0 {
                assert!(
                    e.start as u64 + e.n as u64 <= ops,
                    "a table entry points past the arena"
                );
            }
        }
        assert!(n >= 64, "some blocks were restored ({n})");
    }
}
