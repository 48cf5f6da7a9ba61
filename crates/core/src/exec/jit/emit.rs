//! x86-64 code for one block of [`Op`]s: integer ALU ops (products and
//! divisions too), `fence`, branches, jumps, loads and stores inline
//! (loads and stores through the hart's
//! software TLB, exactly its fast path); every other op, and every TLB
//! miss, through one call into the interpreter's own definition of the
//! instruction ([`super::Layout::op_helper`]).
//!
//! Registers while a block runs (callee-saved, so helper calls keep them):
//! rbx the hart (`Layout::rebase` bytes into it), r13 the cycle count at the last sync (ops retired since
//! then are counted at translation time, `pending`), r15 the load row of
//! the data TLB. The block's virtual pc, the bus and the TLB generation
//! bits are read from the frame where needed. A helper may change the TLB,
//! the data context or anything else; r15 is reloaded after each call.
//!
//! Guest registers live in the hart (`x`), and within a block also in six
//! caller-saved host registers ([`RegCache`]): an op reads its sources
//! from there (loading them on first use) and leaves its result there,
//! written back to the hart only when the register is evicted, before any
//! call out (a helper reads and writes the hart's registers) and at every
//! exit. Out-of-line paths (a TLB miss, a taken branch) carry the cache's
//! state at their branch-off point, so they write back exactly what the
//! straight line would have, and reload what it expects after the call.
//!
//! A block leaves by `exit_at` (a static target: chained through a link
//! cell), `loop_or_exit` (a jump to its own first op: round again) or
//! `indirect_exit` (`jalr`: chained through the block cache's first level
//! and the jit's slots), each under the run loop's conditions. A static
//! exit tests them inline (about 20 host instructions and 100 bytes: the
//! commonest way between two hot blocks); the indirect exit's tests, the
//! exits that do not chain and the epilogue are written once per region
//! ([`Runtime`]) and called or jumped to, so a block's code is otherwise
//! mostly its own ops and more of the hot blocks fit the host's
//! instruction cache.
//!
//! The block returns 0 or 1 with the frame's cycle count and next pc set
//! (it ran to its end, or jumped), or 2 when a helper ended it at a trap
//! (the hart's own state is then final).
//!
//! With a timing model that has per-instruction hooks ([`super::Hooks`]),
//! every inline op calls them as the interpreter's block loop does —
//! `fetch`, `insn`, then `mem`, `branch` or `jump` — taking the model's own
//! shortcuts ([`hs_timing::InlineHooks`]) inline where they hold: a fetch
//! from the line fetched last (or a new line in any way of its L1I set,
//! the hit's replacement update made), a class's fixed `insn` cost and
//! counter, a load or store hitting the D-TLB entry that hit last and
//! the most recent way of its L1 set, or another way, whose update is
//! then made (for an access likely on the line of the one before it in
//! the block, only that line compared with the one the frame keeps: see
//! `hook_mem`), a conditional branch's two-bit-counter step.
//! Everything else is a call that
//! keeps the register cache (the hooks read no guest register). r13 plus
//! `pending` is then the cycle count (each op's 1 and every cost known at
//! translation time; costs a call returns are added to r13); the hart's
//! `stall` and the model's counters lag by what is [`Owed`], settled
//! before anything that reads them and at every exit.

// dynasm's `Rq(r)` and `Rd(r)` expand to `r.into()` on our u8 registers.
#![allow(clippy::useless_conversion)]

use dynasmrt::x64::X64Relocation;
use dynasmrt::{dynasm, DynamicLabel, DynasmApi, DynasmLabelApi, VecAssembler};
use hs_isa::Insn;
use hs_timing::JumpHint;

use super::super::{Op, SINK};
use super::Layout;

/// Bytes from the data TLB's load row to its store row (same context).
pub(super) const STORE_ROW_DELTA: i32 = 4 * (crate::mmu::TLB_SIZE as i32) * 16;

/// Host registers that cache guest registers: rdi, rdx, r8–r11 (caller-
/// saved), rbp, r12, r14 (callee-saved, restored by the epilogue). Every
/// call out writes them back first and forgets or reloads them after.
const CACHE_REGS: [u8; 9] = [7, 2, 8, 9, 10, 11, 5, 12, 14];

/// Host addresses of the routines every block shares, at the start of
/// the region (see [`Emitter::runtime`]).
#[derive(Clone, Copy, Default, PartialEq, Debug)]
pub(super) struct Runtime {
    /// A static exit that does not chain (see `exit_at`); jumped to, not
    /// called. In: rax the cycle count, rdx the next pc, rcx the exit's
    /// link cell. Sets the frame's cycle count, pc and link and returns 0
    /// from the block.
    pub exit_static: u64,
    /// In: rax the cycle count (the frame's pc set). Sets the frame's
    /// cycle count; returns with rcx the code of the block the run loop
    /// would chain into (the frame and r13 as it is entered), else
    /// `ret0`. The caller jumps to rcx.
    pub exit_indirect: u64,
    /// The epilogue: returns eax from the block.
    pub ret: u64,
    /// The epilogue returning 0.
    pub ret0: u64,
    /// With a model's new-line fetch shortcut ([`hs_timing::InlineFetch`];
    /// else 0). In: rax the physical address of the line fetched, not
    /// the last one. Where the shortcut holds it makes the shortcut's
    /// change, adds its cost to the cycle count (r13) and the stall, as
    /// a site adds a hook's, and returns with ZF set; else with ZF
    /// clear, having changed nothing but what an I-TLB hit in another
    /// entry changes (its LRU update, which the hook makes first; see
    /// `tlb_by_index`). Clobbers rax, rcx.
    pub fetch_line: u64,
    /// With a model's hooks: its data-access shortcut (the `mem_*` fields
    /// of [`hs_timing::InlineHooks`]), written once for loads (`[0]`) and
    /// once for stores (`[1]`) instead of at every access, whose straight
    /// line it would otherwise lengthen by about 80 bytes and its stubs
    /// by about 110. In: rax the guest virtual address, rsi the host
    /// address. Returns with ZF set when the shortcut holds: not
    /// translating or the D-TLB's most recent entry holds the address
    /// (else the second most recent does, or the entry the index names,
    /// `tlb_by_index`, and the model's LRU update is made), and the line
    /// is its L1 set's most recent way (dirty, for a store); else with ZF
    /// clear. Clobbers rax, rcx.
    pub mem_line: [u64; 2],
    /// `mem_line`, first writing the address's line (`rax >> mem_shift`)
    /// to the frame's `last_line`: for an access a later one of its block
    /// is tested against (see [`Emitter::hook_mem`]). Clobbers rax, rcx.
    pub mem_line_keep: [u64; 2],
    /// Returns with ZF set at once (the shortcut holding, as `hook_mem`
    /// says why) when the address's line is the frame's `last_line`,
    /// else is `mem_line_keep`. Clobbers rax, rcx.
    pub mem_line_same: [u64; 2],
    /// With a model's hooks: for the I-TLB (`[0]`) and the D-TLB (`[1]`),
    /// a hit in the entry the index names, neither of the two most recent
    /// holding the address ([`hs_timing::InlineTlb`]). In: rcx the
    /// virtual address. Makes the hit's update and returns with ZF set;
    /// else, having changed nothing, with ZF clear. Clobbers rcx.
    pub tlb_by_index: [u64; 2],
    /// With a model's inline branch step ([`hs_timing::InlineBranch`],
    /// when it fits this code's immediates; else 0): the step, written once
    /// instead of at every conditional branch (about 95 bytes each). In:
    /// al the outcome (0 or 1; the rest of rax anything), esi the pc's
    /// bits of the counter index (`(pc >> 1) & index_mask`). Returns the
    /// cycles in rax and the outcome in ecx's low bit. Clobbers rsi.
    pub branch_step: u64,
    /// With a model's inline return ([`hs_timing::InlineJalr`], when
    /// its depth and cost fit; else 0): a `ret`'s stack pop, written once.
    /// In: the frame's pc the return's target. Where the stack predicts
    /// it, makes the shortcut's change and returns with ZF set and rax its
    /// cost; else with ZF clear, having changed nothing. Clobbers rax,
    /// rcx, rsi.
    pub return_step: u64,
    /// With `return_step` and the model's BTB (`InlineJump`, its slot in
    /// the pc's page offset): a plain `jalr`'s whole `jump` hook
    /// ([`hs_timing::InlineJalr`]), and a call's at `jalr_call` (the
    /// push, then on as `jalr_plain`), written once. In: the frame's pc
    /// the target, rdx the tag (`pc | 1`), edi the BTB entry's offset in
    /// its table (16 times its slot), for a call rcx the link. Returns the
    /// cost in rax. Clobbers rcx, rsi, rdi.
    pub jalr_plain: u64,
    pub jalr_call: u64,
}

impl Runtime {
    /// Each routine's name and address (0: not written), for the perf map.
    pub(super) fn named(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("ret0", self.ret0),
            ("ret", self.ret),
            ("exit_static", self.exit_static),
            ("exit_indirect", self.exit_indirect),
            ("fetch_line", self.fetch_line),
            ("mem_load_same", self.mem_line_same[0]),
            ("mem_load_keep", self.mem_line_keep[0]),
            ("mem_load", self.mem_line[0]),
            ("mem_store_same", self.mem_line_same[1]),
            ("mem_store_keep", self.mem_line_keep[1]),
            ("mem_store", self.mem_line[1]),
            ("itlb_by_index", self.tlb_by_index[0]),
            ("dtlb_by_index", self.tlb_by_index[1]),
            ("branch_step", self.branch_step),
            ("return_step", self.return_step),
            ("jalr_plain", self.jalr_plain),
            ("jalr_call", self.jalr_call),
        ]
    }
}

/// Which guest register each cache register holds, whether it changed
/// since it was loaded, and when it was last used (for eviction).
#[derive(Clone, Copy, Default)]
struct Slot {
    guest: Option<u8>,
    dirty: bool,
    used: u32,
}

/// The register cache's state at one point of the emitted code.
#[derive(Clone, Copy, Default)]
struct RegCache {
    slots: [Slot; CACHE_REGS.len()],
    clock: u32,
}

impl RegCache {
    fn find(&self, g: u8) -> Option<usize> {
        self.slots.iter().position(|s| s.guest == Some(g))
    }
}

/// What an exit stub needs: where it starts, the ops retired on the way
/// (including the one that exits) and the target's offset from the block pc.
struct Taken {
    label: DynamicLabel,
    /// the register cache where the branch leaves the straight line
    regs: RegCache,
    retired: i32,
    /// what is owed where the branch leaves the straight line
    owed: Owed,
    target_off: i64,
    /// the op to log (a check log is kept)
    log_op: Option<u64>,
}

/// A TLB miss (or page-crossing access): the op runs in the interpreter.
struct Slow {
    label: DynamicLabel,
    back: DynamicLabel,
    pending: i32,
    /// `pending` and what is owed where the straight line goes on
    /// (`back`); (pending + 1, nothing) unless the model is hooked
    after: (i32, Owed),
    /// what is owed before the op
    owed: Owed,
    op: u64,
    /// written back before the call (the cache before the op)
    before: RegCache,
    /// reloaded after it (the cache the straight line has after the op)
    regs_after: RegCache,
    /// the frame's `last_line` is forgotten after it (see `line_in_use`)
    forget: bool,
}

/// Hooked models: what translated code owes the hart and the model at a
/// point of its straight line, known at translation time and added where
/// it is settled: before anything that may read it, and at every exit.
/// (Adding a counter once per block instead of once per op keeps store-
/// to-load chains through memory out of the straight line.) The model's
/// `insn` counters, `last_class` and `mem` shortcut counters are read by
/// none of the hooks translated code calls between settlements
/// ([`hs_timing::InlineHooks`]), except `last_class` by `branch` and the
/// jumps, which is stored before them.
#[derive(Clone, Copy, Default)]
struct Owed {
    /// cycles to the hart's `stall`
    stall: i32,
    /// ops by class, to the `insn` counters
    classes: [u16; hs_timing::INSN_CLASSES],
    /// the class of the last op, to `last_class`
    last_class: Option<u8>,
    /// loads and stores that took (or, on the straight line, are taken
    /// to have taken) the `mem` shortcut
    same_line: [u16; 2],
    /// conditional branches stepped inline, to the model's branch counter
    branches: u16,
}

/// A hook the inline shortcut did not cover: called with the register
/// cache kept (and rsi, the access's host address, where `keep_rsi`).
struct HookCall {
    label: DynamicLabel,
    back: DynamicLabel,
    regs: RegCache,
    keep_rsi: bool,
    kind: HookKind,
    /// the frame's `last_line` is forgotten after it (see `line_in_use`)
    forget: bool,
}

enum HookKind {
    /// `fetch` of the op at this byte of its block, this long (`off |
    /// len << 16`); `routine_tried` when the site called the new-line
    /// routine ([`Runtime::fetch_line`]) already
    Fetch { off_len: u32, routine_tried: bool },
    /// `mem` of a load or store: the address is `x[base] + imm` (base the
    /// host register holding it), `size | store << 8`
    Mem { base: u8, imm: i32, size_kind: u32 },
}

/// Hooked models: how a load's or store's shortcut test uses the
/// frame's `last_line` (see [`Emitter::hook_mem`]).
#[derive(Clone, Copy, Default)]
struct SameLine {
    /// a later access of the block is tested against this one's line:
    /// written to `last_line` when the shortcut passes
    keep: bool,
    /// likely on the line of the access before it (same base register,
    /// unchanged, offsets less than a line apart, and a load or a store
    /// after a store): tested against `last_line` first
    test: bool,
}

/// The plan of [`SameLine`]s for a block's ops.
fn same_line_plan(ops: &[Op], line_bytes: i64) -> Vec<SameLine> {
    let mut plan = vec![SameLine::default(); ops.len()];
    // the access before: its op, base register, offset and kind
    let mut last: Option<(usize, u8, i32, bool)> = None;
    for (j, op) in ops.iter().enumerate() {
        if let Some((base, imm, store)) = access_of(&op.insn) {
            if let Some((i, b, at, stored)) = last {
                if b == base && (imm as i64 - at as i64).abs() < line_bytes && (stored || !store) {
                    plan[i].keep = true;
                    plan[j].test = true;
                }
            }
            last = Some((j, base, imm, store));
        }
        if last.is_some_and(|(_, b, _, _)| op.ops.dst == b) {
            last = None;
        }
    }
    plan
}

/// A load's or store's base register, offset and kind (store), for the
/// ones translated inline.
fn access_of(insn: &Insn) -> Option<(u8, i32, bool)> {
    use Insn::*;
    match *insn {
        Lb { rs1, imm, .. }
        | Lh { rs1, imm, .. }
        | Lw { rs1, imm, .. }
        | Ld { rs1, imm, .. }
        | Lbu { rs1, imm, .. }
        | Lhu { rs1, imm, .. }
        | Lwu { rs1, imm, .. } => Some((rs1, imm, false)),
        Sb { rs1, imm, .. } | Sh { rs1, imm, .. } | Sw { rs1, imm, .. } | Sd { rs1, imm, .. } => {
            Some((rs1, imm, true))
        }
        _ => None,
    }
}

/// How [`Emitter::op`] emitted an op.
enum Emitted {
    /// inline, the block going on after it
    Inline,
    /// as a call of the interpreter's definition (which also logs it)
    Helper,
    /// inline, ending the block (a jump)
    Jumped,
}

/// Whether the step at `2 * counter + taken` mispredicted: the
/// counter's high bit (its prediction) is not the outcome.
fn mispredicted(i: usize) -> bool {
    (i >> 2) != (i & 1)
}

/// A conditional branch's step as translated code looks it up, by
/// `2 * counter + taken` (see `InlineBranch`): the counter after it
/// (bytes 0-7), the cycles it costs (bytes 8-15), then 1 where it
/// mispredicted (bytes 16-23).
pub(super) fn branch_steps(b: &hs_timing::InlineBranch) -> [u8; 24] {
    let mut t = [0u8; 24];
    for i in 0..8 {
        t[i] = hs_timing::BRANCH_NEXT[i];
        t[8 + i] = match (mispredicted(i), i & 1) {
            (true, _) => b.mispredict,
            (false, 1) => b.taken_penalty,
            _ => 0,
        } as u8;
        t[16 + i] = mispredicted(i) as u8;
    }
    t
}

/// Whether the model's inline return fits the shared routine's immediates.
fn return_fits(r: &hs_timing::InlineJalr) -> bool {
    (1..=i32::MAX as u64).contains(&r.depth) && r.cost <= i32::MAX as u64
}

/// Whether the model's branch step fits the shared routine's immediates.
fn branch_fits(b: &hs_timing::InlineBranch) -> bool {
    let fits = |v: u64| v <= i32::MAX as u64;
    fits(b.index_mask) && fits(b.history_mask) && b.mispredict <= 0xff && b.taken_penalty <= 0xff
}

/// `op QWORD [rbx + disp], imm` (or `[rbx + rax + disp]`, `with_rax`),
/// `imm` sign-extended: the group-1 form with an 8-bit immediate (opcode
/// 0x83, `ext` the op: 0 add, 2 adc, 5 sub, 7 cmp), written out since the
/// assembler encodes a runtime immediate of a memory operand with four
/// bytes. The bytes and how many of them are used.
fn qword_imm8(ext: u8, with_rax: bool, disp: i32, imm: i8) -> ([u8; 9], usize) {
    // REX.W, 0x83, ModRM (mod 10: disp32; reg: ext; rm: rbx, or 100 for
    // a SIB byte of scale 1, index rax, base rbx)
    let mut b = [0u8; 9];
    b[0] = 0x48;
    b[1] = 0x83;
    let mut n = 3;
    if with_rax {
        b[2] = 0x84 | ext << 3;
        b[3] = 0x03;
        n = 4;
    } else {
        b[2] = 0x83 | ext << 3;
    }
    b[n..n + 4].copy_from_slice(&disp.to_le_bytes());
    b[n + 4] = imm as u8;
    (b, n + 5)
}

/// `lea d, [s + disp]` for 64-bit host registers `d` and `s`, with a
/// one-byte displacement where it fits: written out since the assembler
/// gives a runtime base register a SIB byte and four bytes of
/// displacement (8 bytes where 4 do). The bytes and how many are used.
fn lea_disp(d: u8, s: u8, disp: i32) -> ([u8; 8], usize) {
    let short = disp == disp as i8 as i32;
    let mut b = [0u8; 8];
    // REX.W with R and B extending ModRM's reg and rm; 0x8d; ModRM with
    // mod 01 (disp8) or 10 (disp32); rsp and r12 as a base need a SIB
    // byte (0x24: no index, that base)
    b[0] = 0x48 | (d >> 3 & 1) << 2 | (s >> 3 & 1);
    b[1] = 0x8d;
    b[2] = if short { 0x40 } else { 0x80 } | (d & 7) << 3 | (s & 7);
    let mut n = 3;
    if s & 7 == 4 {
        b[3] = 0x24;
        n = 4;
    }
    if short {
        b[n] = disp as u8;
        n += 1;
    } else {
        b[n..n + 4].copy_from_slice(&disp.to_le_bytes());
        n += 4;
    }
    (b, n)
}

pub(super) struct Emitter<'a> {
    a: VecAssembler<X64Relocation>,
    lay: &'a Layout,
    /// ops retired since r13 was last synced
    pending: i32,
    taken: Vec<Taken>,
    slow: Vec<Slow>,
    /// link cells of the static exits (see `exit_at`)
    cells: Vec<DynamicLabel>,
    /// where a chained jump enters (after the prologue's pushes)
    chain_entry: usize,
    /// the first op's code (r13 and r15 loaded, no guest register cached)
    top: DynamicLabel,
    /// guest registers in host registers, at the current point
    regs: RegCache,
    /// hooked models: what the code owes the hart and the model here
    owed: Owed,
    /// hooked models: the I-line (low 12 bits of its physical address)
    /// the last fetch was from, when only inline ops (and loads' and
    /// stores' slow paths) ran since: a fetch from it then passes the
    /// model's shortcut for certain
    fetched_line: Option<u64>,
    hook_calls: Vec<HookCall>,
    /// hooked models: the block's [`SameLine`] plan, and the op being
    /// emitted
    plan: Vec<SameLine>,
    op_index: usize,
    /// hooked models: whether the frame's `last_line` was written on this
    /// straight line since the block began or a helper ran (each hook
    /// and interpreter call since then resets it at run time), and if so
    /// whether by a store (its line is then dirty)
    last_line: Option<bool>,
}

/// `op`'s address (a stable copy the helpers read), for the op at `i`.
pub(super) type OpAddr<'b> = &'b dyn Fn(usize) -> u64;

impl<'a> Emitter<'a> {
    pub(super) fn new(lay: &'a Layout) -> Self {
        // (calls and jumps into the runtime are encoded against where the
        // code will be installed)
        let mut a = VecAssembler::new(lay.code_at as usize);
        let top = a.new_dynamic_label();
        Emitter {
            a,
            lay,
            pending: 0,
            taken: Vec::new(),
            slow: Vec::new(),
            cells: Vec::new(),
            chain_entry: 0,
            top,
            regs: RegCache::default(),
            owed: Owed::default(),
            fetched_line: None,
            hook_calls: Vec::new(),
            plan: Vec::new(),
            op_index: 0,
            last_line: None,
        }
    }

    fn x(&self, r: u8) -> i32 {
        self.lay.x + 8 * r as i32
    }

    /// Host register `r` = guest register `g` (x0 to x31 sit at one-byte
    /// displacements from rbx, see `Layout::rebase`).
    fn load_x(&mut self, r: u8, g: u8) {
        let d = self.x(g);
        if d == d as i8 as i32 {
            dynasm!(self.a ; .arch x64 ; mov Rq(r), QWORD [BYTE rbx + d as i8]);
        } else {
            dynasm!(self.a ; .arch x64 ; mov Rq(r), QWORD [rbx + d]);
        }
    }

    /// Guest register `g` (or the sink) = host register `r`.
    fn store_x(&mut self, g: u8, r: u8) {
        let d = self.x(g);
        if d == d as i8 as i32 {
            dynasm!(self.a ; .arch x64 ; mov QWORD [BYTE rbx + d as i8], Rq(r));
        } else {
            dynasm!(self.a ; .arch x64 ; mov QWORD [rbx + d], Rq(r));
        }
    }

    /// Host register `r` += `v`, in the shortest form (nothing for 0).
    fn add_imm(&mut self, r: u8, v: i32) {
        if v == 0 {
        } else if v == v as i8 as i32 {
            dynasm!(self.a ; .arch x64 ; add Rq(r), BYTE v as i8);
        } else {
            dynasm!(self.a ; .arch x64 ; add Rq(r), v);
        }
    }

    /// The u64 at `[rbx + at]` += `n`, in the shortest form.
    fn add_mem(&mut self, at: i32, n: i32) {
        if n == n as i8 as i32 {
            self.qword_imm8(0, false, at, n as i8);
        } else {
            dynasm!(self.a ; .arch x64 ; add QWORD [rbx + at], n);
        }
    }

    /// `op QWORD [rbx + disp], imm` in its short form (see [`qword_imm8`]).
    fn qword_imm8(&mut self, ext: u8, with_rax: bool, disp: i32, imm: i8) {
        let (bytes, n) = qword_imm8(ext, with_rax, disp, imm);
        for &b in &bytes[..n] {
            self.a.push(b);
        }
    }

    /// A jump's link (the block's pc + `link`) into guest register `rd`
    /// (registers flushed); none for x0: nothing reads the sink.
    fn write_link(&mut self, rd: u8, link: i64) {
        if rd != 0 {
            self.block_pc_plus(0, link);
            self.store_x(rd, 0);
        }
    }

    /// Host register `r` = the block's pc + `off`.
    fn block_pc_plus(&mut self, r: u8, off: i64) {
        let f = self.lay.f_base_pc;
        if off == off as i32 as i64 {
            dynasm!(self.a ; .arch x64 ; mov Rq(r), QWORD [rbx + f]);
            self.add_imm(r, off as i32);
        } else {
            dynasm!(self.a ; .arch x64 ; mov Rq(r), QWORD off ; add Rq(r), QWORD [rbx + f]);
        }
    }

    /// Host register `d` = host register `s` + `v` (a plain move for 0).
    /// Flags are clobbered when `d` is `s`.
    fn lea_imm(&mut self, d: u8, s: u8, v: i32) {
        if d == s {
            self.add_imm(d, v);
        } else if v == 0 {
            dynasm!(self.a ; .arch x64 ; mov Rq(d), Rq(s));
        } else {
            let (bytes, n) = lea_disp(d, s, v);
            for &b in &bytes[..n] {
                self.a.push(b);
            }
        }
    }

    /// The whole block and where a chained jump enters it; `None` if the
    /// assembler refused something (the block then stays interpreted).
    pub(super) fn block(mut self, ops: &[Op], op_addr: OpAddr) -> Option<(Vec<u8>, usize)> {
        self.prologue();
        if let Some(h) = &self.lay.hooks {
            self.plan = same_line_plan(ops, 1 << h.inline.mem_shift);
        }
        let mut ended = false;
        for (i, op) in ops.iter().enumerate() {
            self.op_index = i;
            match self.op(op, op_addr(i)) {
                Emitted::Jumped => {
                    ended = true;
                    break;
                }
                // a helper logs the ops it runs; inline ones log here,
                // with the registers written back for the log to read and
                // the cache kept (so checked code caches as unchecked does)
                Emitted::Inline if self.lay.log => {
                    let regs = self.regs;
                    self.store_dirty(&regs);
                    // (the call needs rsp 16-byte aligned, as at entry)
                    let pad = (CACHE_REGS.len() % 2 * 8) as i32;
                    for &r in &CACHE_REGS {
                        dynasm!(self.a ; .arch x64 ; push Rq(r));
                    }
                    dynasm!(self.a ; .arch x64 ; sub rsp, pad);
                    self.log(op_addr(i), self.pending);
                    dynasm!(self.a ; .arch x64 ; add rsp, pad);
                    for &r in CACHE_REGS.iter().rev() {
                        dynasm!(self.a ; .arch x64 ; pop Rq(r));
                    }
                }
                _ => {}
            }
        }
        if !ended {
            // ran to its end: the next pc is the one after the last op
            let last = ops.last()?;
            let off = last.off as i64 + last.len as i64;
            let regs = self.regs;
            self.store_dirty(&regs);
            self.settle_owed();
            self.exit_at(self.pending, off);
        }
        self.stubs();
        let entry = self.chain_entry;
        self.a.finalize().ok().map(|code| (code, entry))
    }

    fn prologue(&mut self) {
        let lay = self.lay;
        dynasm!(self.a
            ; .arch x64
            ; push rbx
            ; push rbp
            ; push r12
            ; push r13
            ; push r14
            ; push r15
            ; sub rsp, 8
            ; lea rbx, [rdi + lay.rebase]
            ; mov QWORD [rbx + lay.f_bus], rsi
            ; mov r13, QWORD [rbx + lay.f_cyc]
        );
        // (a chained jump comes with r13 set)
        self.chain_entry = self.a.offset().0;
        dynasm!(self.a
            ; .arch x64
            ; mov r15, QWORD [rbx + lay.f_row]
            ; =>self.top
        );
    }

    /// Chain into the block at the block pc + `off` with `retired` more
    /// ops counted, if the run loop would (the guest registers already
    /// written back), else return 0 through [`Runtime::exit_static`].
    ///
    /// Each such exit has a link cell: the offset of the first-level
    /// entry of the pc it last went to (in the running hart's first level:
    /// harts sharing the code have one each), the arena index of that pc's
    /// block and the address a chained jump enters its code (0, an index
    /// no entry holds, 0 until `Hart::jit_link` fills it, after the exit
    /// returned once). The exit jumps itself exactly when the run
    /// loop would chain into the cell's block: the budget not reached, no
    /// `checks`, and the first level mapping the pc, under the current
    /// stamp, to that block (an entry holding the pc is the pc's own
    /// slot). So a cell never needs invalidating: a stale one fails the
    /// test. The test is inline, so that a chained exit is one line of
    /// loads and compares ending in a jump of its own.
    fn exit_at(&mut self, retired: i32, off: i64) {
        let lay = self.lay;
        let cell = self.a.new_dynamic_label();
        self.cells.push(cell);
        let fail = lay.rt.exit_static as usize;
        // (the first level's fields sit at one-byte offsets)
        let [vpc, vstamp, vstart, _] = lay.vcache.2.map(|o| o as i8);
        self.lea_imm(0, 13, retired);
        self.block_pc_plus(2, off);
        dynasm!(self.a
            ; .arch x64
            ; lea rcx, [=>cell]
            ; cmp rax, QWORD [rbx + lay.f_limit]
            ; jae BYTE >fail
            ; cmp BYTE [rbx + lay.checks], 0
            ; jne BYTE >fail
            ; mov r8, QWORD [rcx]
            ; add r8, QWORD [rbx + lay.f_vcache]
            ; cmp rdx, QWORD [BYTE r8 + vpc]
            ; jne BYTE >fail
            ; mov rsi, QWORD [rbx + lay.fetch_stamp]
            ; cmp rsi, QWORD [BYTE r8 + vstamp]
            ; jne BYTE >fail
            ; mov r9d, DWORD [BYTE r8 + vstart]
            ; cmp r9, QWORD [rcx + 8]
            ; jne BYTE >fail
        );
        self.chain_enter();
        dynasm!(self.a
            ; .arch x64
            ; mov r13, rax
            ; jmp QWORD [rcx + 16]
            ; fail:
            ; jmp extern fail
        );
    }

    /// With the cycle count in rax and the next pc in rdx: go to `fail`
    /// unless the run loop would chain (the budget not reached, no
    /// `checks`, the first level mapping the pc under the current stamp);
    /// then r8 is that first-level entry and rsi the stamp.
    fn chain_test(&mut self, fail: DynamicLabel) {
        let lay = self.lay;
        let (vmask, vsize, [vpc, vstamp, _, _]) = lay.vcache;
        dynasm!(self.a
            ; .arch x64
            ; cmp rax, QWORD [rbx + lay.f_limit]
            ; jae =>fail
            ; cmp BYTE [rbx + lay.checks], 0
            ; jne =>fail
            ; mov r8, rdx
            ; shr r8, 1
            ; and r8d, vmask as i32
            ; imul r8d, r8d, vsize as i32
            ; add r8, QWORD [rbx + lay.f_vcache]
            ; cmp QWORD [r8 + vpc], rdx
            ; jne =>fail
            ; mov rsi, QWORD [rbx + lay.fetch_stamp]
            ; cmp QWORD [r8 + vstamp], rsi
            ; jne =>fail
        );
    }

    /// After the chain test passed: the frame as the block of entry r8
    /// (pc rdx) is entered under stamp rsi (the caller then sets r13 and
    /// jumps to its code).
    fn chain_enter(&mut self) {
        let lay = self.lay;
        let vpa = lay.vcache.2[3] as i8;
        dynasm!(self.a
            ; .arch x64
            ; mov QWORD [rbx + lay.f_stamp], rsi
            ; mov rsi, QWORD [BYTE r8 + vpa]
            ; mov QWORD [rbx + lay.f_base_pa], rsi
            ; mov QWORD [rbx + lay.f_base_pc], rdx
        );
    }

    /// A jump back to the block's own first op (a loop): the run loop would
    /// chain into this block again when the budget is not reached, nothing
    /// is to be looked at and the first level still maps the pc to it, which
    /// it does while the fetch stamp is the one the block was entered under
    /// (only the run loop fills the first level, and whatever empties it or
    /// changes the mapping changes the stamp). Then go on at the first op
    /// with `retired` more cycles, else exit as `exit_at`. The guest
    /// registers are written back.
    fn loop_or_exit(&mut self, retired: i32) {
        let lay = self.lay;
        let exit = self.a.new_dynamic_label();
        self.lea_imm(0, 13, retired);
        dynasm!(self.a
            ; .arch x64
            ; cmp rax, QWORD [rbx + lay.f_limit]
            ; jae =>exit
            ; cmp BYTE [rbx + lay.checks], 0
            ; jne =>exit
            ; mov rcx, QWORD [rbx + lay.fetch_stamp]
            ; cmp rcx, QWORD [rbx + lay.f_stamp]
            ; jne =>exit
            ; mov r13, rax
            ; jmp =>self.top
            ; =>exit
        );
        self.exit_at(retired, 0);
    }

    /// After a `jalr` (frame's pc set): chain into the target's translated
    /// code where the run loop would (as `exit_at`, with the target's slot
    /// read from the jit's slots instead of a link cell), else return 0.
    fn indirect_exit(&mut self, retired: i32) {
        let to = self.lay.rt.exit_indirect as usize;
        self.lea_imm(0, 13, retired);
        dynasm!(self.a
            ; .arch x64
            ; call extern to
            ; jmp rcx
        );
    }

    /// The routines every block of the region shares ([`Runtime`]), for
    /// the region's start (`Layout::code_at`); with their addresses and
    /// the bytes from a block's code to where a chained jump enters it.
    pub(super) fn runtime(mut self) -> Option<(Vec<u8>, Runtime, usize)> {
        let lay = self.lay;
        let chain_entry = {
            let mut probe = Emitter::new(lay);
            probe.prologue();
            probe.chain_entry
        };
        let base = lay.code_at;
        let fail_indirect = self.a.new_dynamic_label();
        let ret0 = self.a.new_dynamic_label();
        let here = |e: &Self| base + e.a.offset().0 as u64;
        let exit_static = here(&self);
        dynasm!(self.a
            ; .arch x64
            ; mov QWORD [rbx + lay.f_cyc], rax
            ; mov QWORD [rbx + lay.f_pc], rdx
            ; mov QWORD [rbx + lay.f_link], rcx
        );
        let ret0_at = here(&self);
        dynasm!(self.a ; .arch x64 ; =>ret0 ; xor eax, eax);
        let ret_at = here(&self);
        dynasm!(self.a
            ; .arch x64
            ; add rsp, 8
            ; pop r15
            ; pop r14
            ; pop r13
            ; pop r12
            ; pop rbp
            ; pop rbx
            ; ret
            ; .align 16
        );
        let vstart = lay.vcache.2[2];
        let entry = lay.region.wrapping_add(chain_entry as u64);
        let exit_indirect = here(&self);
        dynasm!(self.a
            ; .arch x64
            ; mov QWORD [rbx + lay.f_cyc], rax
            ; mov rdx, QWORD [rbx + lay.f_pc]
        );
        self.chain_test(fail_indirect);
        dynasm!(self.a
            ; .arch x64
            ; mov ecx, DWORD [r8 + vstart]
            ; cmp rcx, QWORD [rbx + lay.f_slots_len]
            ; jae =>fail_indirect
            ; mov r9, QWORD [rbx + lay.f_slots]
            ; mov ecx, DWORD [r9 + rcx * 4]
            ; test ecx, super::COMPILED as i32
            ; jz =>fail_indirect
            ; and ecx, !super::COMPILED as i32
            ; mov r9, QWORD entry as i64
            ; add rcx, r9
        );
        self.chain_enter();
        dynasm!(self.a
            ; .arch x64
            ; mov r13, rax
            ; ret
            ; =>fail_indirect
            ; lea rcx, [=>ret0]
            ; ret
        );
        let mut tlb_by_index = [0; 2];
        let tlb_by_index_labels = [self.a.new_dynamic_label(), self.a.new_dynamic_label()];
        if let Some(h) = lay.hooks.as_ref() {
            let tlbs = [
                h.inline.fetch_new_line.map(|f| f.tlb),
                Some(h.inline.mem_tlb),
            ];
            for (d, tlb) in tlbs.iter().enumerate() {
                if let Some(tlb) = tlb {
                    dynasm!(self.a ; .arch x64 ; .align 16 ; =>tlb_by_index_labels[d]);
                    tlb_by_index[d] = here(&self);
                    self.tlb_by_index_routine(h.model, tlb, lay.f_tlb_entries[d]);
                }
            }
        }
        let fetch_line = match lay.hooks.as_ref() {
            Some(h) if h.inline.fetch_new_line.is_some() => {
                dynasm!(self.a ; .arch x64 ; .align 16);
                let at = here(&self);
                self.fetch_line_routine(tlb_by_index_labels[0]);
                at
            }
            _ => 0,
        };
        let (mut mem_line, mut mem_line_keep, mut mem_line_same) = ([0; 2], [0; 2], [0; 2]);
        if let Some(h) = lay.hooks.as_ref() {
            let shift = h.inline.mem_shift as i8;
            for store in 0..2 {
                let kept = self.a.new_dynamic_label();
                dynasm!(self.a ; .arch x64 ; .align 16);
                mem_line_same[store] = here(&self);
                dynasm!(self.a
                    ; .arch x64
                    ; mov rcx, rax
                    ; shr rcx, shift
                    ; cmp rcx, QWORD [rbx + lay.f_last_line]
                    ; jne =>kept
                    ; ret
                );
                mem_line_keep[store] = here(&self);
                dynasm!(self.a
                    ; .arch x64
                    ; mov rcx, rax
                    ; shr rcx, shift
                    ; =>kept
                    ; mov QWORD [rbx + lay.f_last_line], rcx
                );
                mem_line[store] = here(&self);
                self.mem_line_routine(store == 1, tlb_by_index_labels[1]);
            }
        }
        let branch_step = match lay.hooks.as_ref().and_then(|h| h.inline.branch) {
            Some(b) if branch_fits(&b) => {
                dynasm!(self.a ; .arch x64 ; .align 16);
                let at = here(&self);
                self.branch_step_routine(&b);
                at
            }
            _ => 0,
        };
        let return_step = match lay.hooks.as_ref().and_then(|h| h.inline.jalr) {
            Some(r) if return_fits(&r) => {
                dynasm!(self.a ; .arch x64 ; .align 16);
                let at = here(&self);
                self.return_step_routine(&r);
                at
            }
            _ => 0,
        };
        let (mut jalr_plain, mut jalr_call) = (0, 0);
        if let Some(h) = lay.hooks.as_ref() {
            if let (Some(r), Some(j)) = (h.inline.jalr, h.inline.direct_jump) {
                if return_fits(&r) && r.mispredict <= i32::MAX as u64 && j.index_mask < 0x800 {
                    dynasm!(self.a ; .arch x64 ; .align 16);
                    jalr_call = here(&self);
                    self.push_routine(&r);
                    jalr_plain = here(&self);
                    self.jalr_plain_routine(&r);
                }
            }
        }
        let rt = Runtime {
            exit_static,
            exit_indirect,
            ret: ret_at,
            ret0: ret0_at,
            fetch_line,
            mem_line,
            mem_line_keep,
            mem_line_same,
            tlb_by_index,
            branch_step,
            return_step,
            jalr_plain,
            jalr_call,
        };
        self.a.finalize().ok().map(|code| (code, rt, chain_entry))
    }

    /// [`Runtime::fetch_line`]: the tests and changes of
    /// [`hs_timing::InlineFetch`], written once. (A block never crosses a
    /// page, so its first pc's page is every op's: the I-TLB test reads
    /// the frame's block pc.)
    fn fetch_line_routine(&mut self, itlb_by_index: DynamicLabel) {
        let h = self.lay.hooks.as_ref().expect("hooked");
        let (ih, t) = (&h.inline, h.model);
        let f = ih.fetch_new_line.expect("a new-line shortcut");
        let tr = t + ih.mem_translating as i32;
        let recent = t + f.tlb.recent as i32;
        let keys = t + f.keys as i32;
        let (shift, mask) = (f.shift as i8, f.key_mask as i32);
        let base_pc = self.lay.f_base_pc;
        let (line, other, fail) = (
            self.a.new_dynamic_label(),
            self.a.new_dynamic_label(),
            self.a.new_dynamic_label(),
        );
        self.qword_imm8(7, false, t + ih.walk_pending as i32, 0);
        dynasm!(self.a
            ; .arch x64
            ; jne =>fail
            // (the record first, as in `mem_line_routine`)
            ; mov rcx, QWORD [rbx + base_pc]
            ; or rcx, QWORD [rbx + recent]
            ; cmp rcx, QWORD [rbx + recent + 8]
            ; je =>line
            ; cmp BYTE [rbx + tr], 0
            ; jne =>other
            ; =>line
        );
        self.mru_key_test(shift, mask, keys, true);
        let (hit, any_way) = (self.a.new_dynamic_label(), self.a.new_dynamic_label());
        match f.any_way {
            Some(_) => dynasm!(self.a ; .arch x64 ; jne =>any_way),
            None => dynasm!(self.a ; .arch x64 ; jne =>fail),
        }
        dynasm!(self.a
            ; .arch x64
            ; =>hit
            ; shr rax, 1
            ; shl rax, shift
            ; mov QWORD [rbx + t + ih.fetch_last_line as i32], rax
        );
        self.qword_imm8(0, false, t + f.reads as i32, 1);
        dynasm!(self.a
            ; .arch x64
            ; movzx ecx, BYTE [rbx + tr]
            ; add QWORD [rbx + t + f.tlb_accesses as i32], rcx
        );
        if f.cost != 0 {
            // (the cycles here, not at each site: a hit then costs the
            // site nothing after the call)
            let cost = f.cost as i32;
            dynasm!(self.a
                ; .arch x64
                ; add QWORD [rbx + t + f.cycles as i32], cost
                ; add r13, cost
                ; add QWORD [rbx + h.stall], cost
            );
        }
        dynasm!(self.a
            ; .arch x64
            ; cmp eax, eax
            ; =>fail
            ; ret
        );
        if let Some(l1) = f.any_way {
            dynasm!(self.a ; .arch x64 ; =>any_way);
            self.l1_any_way(0, &l1, keys, mask, false, |e| {
                dynasm!(e.a ; .arch x64 ; jmp =>hit);
            });
        }
        dynasm!(self.a ; .arch x64 ; =>other);
        self.tlb_second_or_index(
            recent,
            |e| dynasm!(e.a ; .arch x64 ; mov rcx, QWORD [rbx + base_pc]),
            itlb_by_index,
            line,
        );
    }

    /// A shortcut routine's TLB test after the most recent entry did not
    /// hold the virtual address (`va` sets rcx to it): where the second
    /// most recent does, the two records swap (inline: the usual case,
    /// code going back and forth between two pages); else the entry the
    /// index names, through `by_index` ([`Runtime::tlb_by_index`]). Either
    /// way on to `line`; else returns with ZF clear. Clobbers rcx.
    fn tlb_second_or_index(
        &mut self,
        recent: i32,
        va: impl Fn(&mut Self),
        by_index: DynamicLabel,
        line: DynamicLabel,
    ) {
        let index = self.a.new_dynamic_label();
        va(self);
        dynasm!(self.a
            ; .arch x64
            ; or rcx, QWORD [rbx + recent + 24]
            ; cmp rcx, QWORD [rbx + recent + 32]
            ; jne =>index
            // the swap: the records' first 16 bytes through two SSE
            // registers, their last 8 through rcx and a third (no code
            // that calls a routine keeps anything in them: they are
            // caller-saved, and blocks call into Rust)
            ; movups xmm0, [rbx + recent]
            ; movups xmm1, [rbx + recent + 24]
            ; movups [rbx + recent], xmm1
            ; movups [rbx + recent + 24], xmm0
            ; mov rcx, QWORD [rbx + recent + 16]
            ; movq xmm2, QWORD [rbx + recent + 40]
            ; mov QWORD [rbx + recent + 40], rcx
            ; movq QWORD [rbx + recent + 16], xmm2
            ; jmp =>line
            ; =>index
        );
        va(self);
        dynasm!(self.a
            ; .arch x64
            ; call =>by_index
            ; je =>line
            ; ret
        );
    }

    /// [`Runtime::tlb_by_index`] of the TLB `tlb` describes (its model `t`
    /// bytes from rbx, its entries' address in the frame at `f_entries`).
    fn tlb_by_index_routine(&mut self, t: i32, tlb: &hs_timing::InlineTlb, f_entries: i32) {
        // (not r0 and r1: dynasm reads those as registers)
        let (first, second) = (t + tlb.recent as i32, t + tlb.recent as i32 + 24);
        let (index, clock) = (t + tlb.index as i32, t + tlb.clock as i32);
        let (settled, none) = (self.a.new_dynamic_label(), self.a.new_dynamic_label());
        // the entry the index names for the 4 KiB page (rdi), if it holds
        // the address: it becomes the most recent
        dynasm!(self.a
            ; .arch x64
            ; push rax
            ; push rdx
            ; push rdi
            ; mov edx, ecx
            ; shr edx, 12
            ; movzx edx, dl
            ; movzx edx, WORD [rbx + index + rdx * 2]
            ; cmp edx, tlb.entries as i32
            ; jae =>none
            ; lea rax, [rdx + rdx * 2]
            ; mov rdi, QWORD [rbx + f_entries]
            ; lea rdi, [rdi + rax * 8]
            ; mov rax, QWORD [rdi + 8]
            ; not rax
            ; and rax, rcx
            ; or rax, 1
            ; cmp rax, QWORD [rdi]
            ; jne =>none
            // the two records' stamps settled (when they name two entries)
            ; mov rax, QWORD [rbx + first + 16]
            ; mov rcx, QWORD [rbx + second + 16]
            ; cmp rax, rcx
            ; je =>settled
            ; lea rax, [rax + rax * 2]
            ; shl rax, 3
            ; add rax, QWORD [rbx + f_entries]
            ; lea rcx, [rcx + rcx * 2]
            ; shl rcx, 3
            ; add rcx, QWORD [rbx + f_entries]
            ; push rdx
            ; mov rdx, QWORD [rbx + clock]
            ; add rdx, 1
            ; mov QWORD [rcx + 16], rdx
            ; add rdx, 1
            ; mov QWORD [rax + 16], rdx
            ; mov QWORD [rbx + clock], rdx
            ; pop rdx
            ; =>settled
            ; mov rax, QWORD [rbx + clock]
            ; add rax, 1
            ; mov QWORD [rbx + clock], rax
            ; mov QWORD [rdi + 16], rax
        );
        for at in [0, 8, 16] {
            dynasm!(self.a
                ; .arch x64
                ; mov rax, QWORD [rbx + first + at]
                ; mov QWORD [rbx + second + at], rax
            );
        }
        dynasm!(self.a
            ; .arch x64
            ; mov rax, QWORD [rdi + 8]
            ; mov QWORD [rbx + first], rax
            ; mov rcx, QWORD [rdi]
            ; and rcx, -2
            ; or rcx, rax
            ; mov QWORD [rbx + first + 8], rcx
            ; mov QWORD [rbx + first + 16], rdx
            ; pop rdi
            ; pop rdx
            ; pop rax
            ; cmp eax, eax
            ; ret
            ; =>none
            ; pop rdi
            ; pop rdx
            ; pop rax
            // (rsp is never 0: ZF clear)
            ; test rsp, rsp
            ; ret
        );
    }

    /// With the physical address in rax: ZF set when its line is the
    /// most recent way of its set by the model's copy of the keys at
    /// `keys` (dirty or not when `clean_ok`, else dirty); rax is then the
    /// key (line number times two plus one). Clobbers rcx.
    fn mru_key_test(&mut self, shift: i8, mask: i32, keys: i32, clean_ok: bool) {
        dynasm!(self.a
            ; .arch x64
            ; shr rax, shift
            ; mov ecx, eax
            ; and ecx, mask
            ; lea rax, [rax + rax + 1]
            ; mov rcx, QWORD [rbx + keys + rcx * 8]
        );
        if clean_ok {
            dynasm!(self.a ; .arch x64 ; or rcx, 1);
        }
        dynasm!(self.a ; .arch x64 ; cmp rcx, rax);
    }

    /// A shortcut routine's tail where the key test of L1 `c` (0 the
    /// L1I, 1 the L1D) failed, rax `2 * line + 1`: a hit in any way of the
    /// set, as [`hs_timing::InlineL1`] says, makes its update (the key
    /// then holds) and goes on as `hit` writes with rax as it was; a miss
    /// changes nothing and returns with ZF clear. Clobbers rax, rcx (rdx,
    /// a cache register, is kept on the stack).
    fn l1_any_way(
        &mut self,
        c: usize,
        l1: &hs_timing::InlineL1,
        keys: i32,
        key_mask: i32,
        store: bool,
        hit: impl Fn(&mut Self),
    ) {
        let t = self.lay.hooks.as_ref().map_or(0, |h| h.model);
        let [sets, mru] = self.lay.f_l1_sets[c];
        let clock = t + l1.clock as i32;
        let ways: Vec<DynamicLabel> = (0..4).map(|_| self.a.new_dynamic_label()).collect();
        // rcx: the set's four tags (then their stamps); rdx: the line
        dynasm!(self.a
            ; .arch x64
            ; push rdx
            ; mov rdx, rax
            ; shr rdx, 1
            ; mov ecx, edx
            ; and ecx, key_mask
            ; shl ecx, 6
            ; add rcx, QWORD [rbx + sets]
        );
        for (w, &l) in ways.iter().enumerate() {
            dynasm!(self.a ; .arch x64 ; cmp rdx, QWORD [rcx + 8 * w as i32] ; je =>l);
        }
        // (a miss: ZF clear from the last compare; CF set says the line
        // is absent, see `stubs`)
        dynasm!(self.a ; .arch x64 ; pop rdx ; stc ; ret);
        let done = self.a.new_dynamic_label();
        for (w, &l) in ways.iter().enumerate() {
            let stamp = 32 + 8 * w as i32;
            let recent = self.a.new_dynamic_label();
            dynasm!(self.a
                ; .arch x64
                ; =>l
                ; mov eax, edx
                ; and eax, key_mask
                ; add rax, QWORD [rbx + mru]
                ; cmp BYTE [rax], w as i8
                ; je =>recent
                // another way: it becomes the most recent, stamped with
                // the clock's next tick (and its dirty bit)
                ; mov BYTE [rax], w as i8
                ; mov rax, QWORD [rbx + clock]
                ; add rax, 1
                ; mov QWORD [rbx + clock], rax
                ; add rax, rax
            );
            if store {
                dynasm!(self.a ; .arch x64 ; or rax, 1);
            } else {
                dynasm!(self.a
                    ; .arch x64
                    ; mov rdx, QWORD [rcx + stamp]
                    ; and edx, 1
                    ; or rax, rdx
                    ; mov rdx, QWORD [rcx + 8 * w as i32]
                );
            }
            dynasm!(self.a
                ; .arch x64
                ; mov QWORD [rcx + stamp], rax
                ; =>recent
            );
            if store {
                // (the most recent way, clean: now dirty)
                dynasm!(self.a ; .arch x64 ; or QWORD [rcx + stamp], 1);
            }
            // rcx: the way's stamp, for the key's dirty bit
            dynasm!(self.a ; .arch x64 ; add rcx, stamp ; jmp =>done);
        }
        // the set's key: twice the line plus the dirty bit
        dynasm!(self.a
            ; .arch x64
            ; =>done
            ; mov rax, QWORD [rcx]
            ; and eax, 1
            ; lea rax, [rax + rdx * 2]
            ; mov ecx, edx
            ; and ecx, key_mask
            ; mov QWORD [rbx + keys + rcx * 8], rax
            ; lea rax, [rdx + rdx + 1]
            ; pop rdx
        );
        hit(self);
    }

    /// [`Runtime::mem_line`] for a load or a store.
    fn mem_line_routine(&mut self, store: bool, dtlb_by_index: DynamicLabel) {
        let h = self.lay.hooks.as_ref().expect("hooked");
        let (ih, t) = (&h.inline, h.model);
        let shift = ih.mem_shift as i8;
        let to_pa = self.lay.f_host_to_pa;
        let (tr, recent, keys) = (
            t + ih.mem_translating as i32,
            t + ih.mem_tlb.recent as i32,
            t + ih.mem_keys as i32,
        );
        let key_mask = ih.mem_key_mask as i32;
        let (line, other) = (self.a.new_dynamic_label(), self.a.new_dynamic_label());
        // (untranslated accesses take the line test whatever the
        // record holds, so the record is tested first: one test fewer
        // where it holds, the usual case)
        dynasm!(self.a
            ; .arch x64
            ; mov rcx, rax
            ; or rcx, QWORD [rbx + recent]
            ; cmp rcx, QWORD [rbx + recent + 8]
            ; je =>line
            ; cmp BYTE [rbx + tr], 0
            ; jne =>other
            ; =>line
            ; mov rax, QWORD [rbx + to_pa]
            ; add rax, rsi
        );
        self.mru_key_test(shift, key_mask, keys, !store);
        if let Some(l1) = ih.mem_any_way {
            let any_way = self.a.new_dynamic_label();
            dynasm!(self.a ; .arch x64 ; jne =>any_way ; ret ; =>any_way);
            self.l1_any_way(1, &l1, keys, key_mask, store, |e| {
                dynasm!(e.a ; .arch x64 ; cmp eax, eax ; ret);
            });
        } else {
            dynasm!(self.a ; .arch x64 ; ret);
        }
        dynasm!(self.a
            ; .arch x64
            // another entry: when it holds the address it becomes the
            // most recent, then the line is tested
            ; =>other
        );
        self.tlb_second_or_index(
            recent,
            |e| dynasm!(e.a ; .arch x64 ; mov rcx, rax),
            dtlb_by_index,
            line,
        );
    }

    /// Store every dirty cached register of `regs` to the hart.
    fn store_dirty(&mut self, regs: &RegCache) {
        for (i, s) in regs.slots.iter().enumerate() {
            if let (Some(g), true) = (s.guest, s.dirty) {
                self.store_x(g, CACHE_REGS[i]);
            }
        }
    }

    /// Load every cached register of `regs` from the hart.
    fn reload(&mut self, regs: &RegCache) {
        for (i, s) in regs.slots.iter().enumerate() {
            if let Some(g) = s.guest {
                self.load_x(CACHE_REGS[i], g);
            }
        }
    }

    /// Write back and forget every cached register (before a call that
    /// may read or write the hart's registers).
    fn flush_regs(&mut self) {
        let regs = self.regs;
        self.store_dirty(&regs);
        self.regs = RegCache::default();
    }

    /// A slot for guest register `g`: the least recently used (written
    /// back first when dirty).
    fn claim(&mut self, g: u8) -> usize {
        let i = (0..CACHE_REGS.len())
            .min_by_key(|&i| (self.regs.slots[i].guest.is_some(), self.regs.slots[i].used))
            .unwrap_or(0);
        let old = self.regs.slots[i];
        if let (Some(e), true) = (old.guest, old.dirty) {
            self.store_x(e, CACHE_REGS[i]);
        }
        self.regs.slots[i] = Slot {
            guest: Some(g),
            dirty: false,
            used: 0,
        };
        i
    }

    fn touch(&mut self, i: usize) {
        self.regs.clock += 1;
        self.regs.slots[i].used = self.regs.clock;
    }

    /// The host register holding source register `g` (loaded if needed).
    fn src(&mut self, g: u8) -> u8 {
        let i = match self.regs.find(g) {
            Some(i) => i,
            None => {
                let i = self.claim(g);
                self.load_x(CACHE_REGS[i], g);
                i
            }
        };
        self.touch(i);
        CACHE_REGS[i]
    }

    /// Set destination register `rd` from rax (x0: to the sink, never
    /// cached, as the predecoder arranges for these ops anyway).
    fn set_rd(&mut self, rd: u8) {
        if rd == 0 {
            self.store_x(SINK, 0);
            return;
        }
        let i = self.regs.find(rd).unwrap_or_else(|| self.claim(rd));
        self.touch(i);
        self.regs.slots[i].dirty = true;
        let r = CACHE_REGS[i];
        dynasm!(self.a ; .arch x64 ; mov Rq(r), rax);
    }

    /// The host register for destination `rd`, to compute its new value
    /// in (x0 writes the sink, as `set_rd`): marked written, loaded with
    /// nothing.
    fn dst(&mut self, rd: u8) -> u8 {
        let g = if rd == 0 { SINK } else { rd };
        let i = self.regs.find(g).unwrap_or_else(|| self.claim(g));
        self.touch(i);
        self.regs.slots[i].dirty = true;
        CACHE_REGS[i]
    }

    /// Write the cycle count (`retired` ops past r13) to the frame.
    fn sync(&mut self, retired: i32) {
        let lay = self.lay;
        self.lea_imm(0, 13, retired);
        dynasm!(self.a ; .arch x64 ; mov QWORD [rbx + lay.f_cyc], rax);
    }

    /// Call `f(hart, bus, arg)`, then reload what a helper may change.
    fn call(&mut self, f: usize, arg: u64) {
        let lay = self.lay;
        dynasm!(self.a
            ; .arch x64
            ; lea rdi, [rbx - lay.rebase]
            ; mov rsi, QWORD [rbx + lay.f_bus]
            ; mov rdx, QWORD arg as i64
            ; mov rax, QWORD f as i64
            ; call rax
            ; mov r15, QWORD [rbx + lay.f_row]
        );
    }

    /// Append a check-log record for `op` with `retired` ops past r13
    /// (the record's instret reads the hart's stall: brought up to date).
    fn log(&mut self, op: u64, retired: i32) {
        self.settle_owed();
        self.sync(retired);
        self.call(self.lay.log_helper, op);
    }

    /// Add what `o` owes (`sign` -1: take it back, after a helper that
    /// did the op itself; `last_class` is then left as the helper set it).
    fn settle(&mut self, o: &Owed, sign: i32) {
        let Some(h) = &self.lay.hooks else {
            return;
        };
        let (ih, t, st) = (&h.inline, h.model, h.stall);
        if o.stall != 0 {
            let n = sign * o.stall;
            self.add_mem(st, n);
        }
        for (class, &n) in o.classes.iter().enumerate() {
            if n != 0 {
                let at = t + (ih.insn_counts + 8 * class) as i32;
                let n = sign * n as i32;
                self.add_mem(at, n);
            }
        }
        if o.same_line != [0, 0] {
            let tr = t + ih.mem_translating as i32;
            dynasm!(self.a ; .arch x64 ; movzx eax, BYTE [rbx + tr] ; shl eax, 4);
            for (store, &n) in o.same_line.iter().enumerate() {
                if n != 0 {
                    let at = t + (ih.mem_counts + 8 * store) as i32;
                    let n = sign * n as i32;
                    if n == n as i8 as i32 {
                        self.qword_imm8(0, true, at, n as i8);
                    } else {
                        dynasm!(self.a ; .arch x64 ; add QWORD [rbx + rax + at], n);
                    }
                }
            }
        }
        if o.branches != 0 {
            if let Some(b) = &ih.branch {
                let at = t + b.branches as i32;
                let n = sign * o.branches as i32;
                self.add_mem(at, n);
            }
        }
        if let (Some(class), true) = (o.last_class, sign > 0) {
            let at = t + ih.last_class as i32;
            dynasm!(self.a ; .arch x64 ; mov BYTE [rbx + at], class as i8);
        }
    }

    /// Settle what the straight line owes here; it then owes nothing.
    fn settle_owed(&mut self) {
        let o = std::mem::take(&mut self.owed);
        self.settle(&o, 1);
    }

    /// Store the last op's class where the model keeps it (before a hook
    /// that reads it).
    fn store_last_class(&mut self) {
        let (Some(h), Some(class)) = (&self.lay.hooks, self.owed.last_class) else {
            return;
        };
        let at = h.model + h.inline.last_class as i32;
        dynasm!(self.a ; .arch x64 ; mov BYTE [rbx + at], class as i8);
        self.owed.last_class = None;
    }

    /// Cycles a hook call returned (in rax): to the cycle count and stall.
    fn add_dynamic(&mut self) {
        if let Some(h) = &self.lay.hooks {
            let st = h.stall;
            dynasm!(self.a ; .arch x64 ; add r13, rax ; add QWORD [rbx + st], rax);
        }
    }

    /// eax: `flag` (one bit) where al, set from a shortcut routine's CF,
    /// says the line is absent, else 0 — for the caller to or into a
    /// hook's argument.
    fn absent_flag(&mut self, flag: u64) {
        let bit = flag.trailing_zeros() as i8;
        dynasm!(self.a ; .arch x64 ; movzx eax, al ; shl eax, bit);
    }

    /// Call `f(hart, rsi, rdx, rcx)` keeping the register cache `regs`
    /// (and rsi when `keep_rsi`): the caller-saved host registers holding
    /// a guest register are pushed around it. `args` sets rsi, rdx and
    /// rcx (rdi is set to the hart after it). The result is in rax.
    fn kept_call(
        &mut self,
        regs: &RegCache,
        keep_rsi: bool,
        f: usize,
        args: impl FnOnce(&mut Self),
    ) {
        let mut saved: Vec<u8> = (0..6)
            .filter(|&i| regs.slots[i].guest.is_some())
            .map(|i| CACHE_REGS[i])
            .collect();
        if keep_rsi {
            saved.push(6);
        }
        for &r in &saved {
            dynasm!(self.a ; .arch x64 ; push Rq(r));
        }
        // (rsp 16-byte aligned at the call, as on the straight line)
        let pad = (saved.len() % 2 * 8) as i32;
        if pad != 0 {
            dynasm!(self.a ; .arch x64 ; sub rsp, pad);
        }
        args(self);
        let rebase = self.lay.rebase;
        dynasm!(self.a
            ; .arch x64
            ; lea rdi, [rbx - rebase]
            ; mov rax, QWORD f as i64
            ; call rax
        );
        if pad != 0 {
            dynasm!(self.a ; .arch x64 ; add rsp, pad);
        }
        for &r in saved.iter().rev() {
            dynasm!(self.a ; .arch x64 ; pop Rq(r));
        }
    }

    /// Hooked: the op's `fetch` (nothing when it is from the line an
    /// inline op fetched last: the shortcut holds for certain; else the
    /// shortcut's test inline and the hook when it fails).
    fn hook_fetch(&mut self, op: &Op, keep_rsi: bool) {
        let Some(h) = self.lay.hooks.as_ref() else {
            return;
        };
        let (ih, t) = (&h.inline, h.model);
        // (the low 12 bits of a block's physical address are its pc's,
        // whichever page it runs from; lines are at most a page)
        let pa = self.lay.block_pa.wrapping_add(op.off as u64) & 0xfff;
        let line = pa & ih.fetch_line_mask;
        let lines_known = ih.fetch_line_mask | 0xfff == u64::MAX;
        if lines_known && self.fetched_line == Some(line) {
            return;
        }
        // Another line of this block was fetched last (only inline ops
        // and loads' and stores' slow paths ran since, which fetch
        // nothing new): the model's last line is that one, or has the
        // pending walk's bit, so the test below would fail for certain
        // and the site goes to the new-line routine at once.
        let routine = self.lay.rt.fetch_line;
        let known_new = lines_known && self.fetched_line.is_some() && routine != 0;
        self.fetched_line = Some(line);
        let (label, back) = (self.a.new_dynamic_label(), self.a.new_dynamic_label());
        let last = t + ih.fetch_last_line as i32;
        // (a translated block runs from the one physical address it was
        // decoded at: the block cache maps an address to its block)
        let line_pa = self.lay.block_pa.wrapping_add(op.off as u64) & ih.fetch_line_mask;
        if line_pa == line_pa as u32 as u64 {
            dynasm!(self.a ; .arch x64 ; mov eax, line_pa as i32);
        } else {
            dynasm!(self.a ; .arch x64 ; mov rax, QWORD line_pa as i64);
        }
        if known_new {
            dynasm!(self.a
                ; .arch x64
                ; call extern routine as usize
                ; jnz =>label
                ; =>back
            );
        } else {
            // (a pending walk keeps the word unequal to every line)
            dynasm!(self.a
                ; .arch x64
                ; cmp rax, QWORD [rbx + last]
                ; jne =>label
                ; =>back
            );
        }
        let forget = self.line_in_use();
        self.hook_calls.push(HookCall {
            forget,
            label,
            back,
            regs: self.regs,
            keep_rsi,
            kind: HookKind::Fetch {
                off_len: op.off as u32 | (op.len as u32) << 16,
                routine_tried: known_new,
            },
        });
    }

    /// Hooked: the op's `insn` (its class's counter and fixed cost).
    fn hook_insn(&mut self, op: &Op) {
        let Some(h) = self.lay.hooks.as_ref() else {
            return;
        };
        let class = op.class as u8;
        let cost = h.inline.insn_cost[class as usize].unwrap_or(0) as i32;
        self.owed.classes[class as usize] += 1;
        self.owed.last_class = Some(class);
        self.pending += cost;
        self.owed.stall += cost;
    }

    /// Hooked: a load's or store's `mem` (rsi its host address, `base`
    /// the host register holding the address register): the shortcut's
    /// shared test, the hook when it fails. (No walk is pending: the op's
    /// fetch just ran, and leaves none.)
    fn hook_mem(&mut self, base: u8, imm: i32, size: i32, store: bool) {
        let Some(h) = self.lay.hooks.as_ref() else {
            return;
        };
        let cost = h.inline.mem_cost as i32;
        let plan = self.plan.get(self.op_index).copied().unwrap_or_default();
        let rt = &self.lay.rt;
        let routine = if plan.test && self.last_line.is_some_and(|dirty| dirty || !store) {
            // Likely the line of the last access whose shortcut passed,
            // with nothing since that could have changed what it tested
            // (a passing shortcut changes nothing, and every hook and
            // interpreter call since resets `last_line`): then the same
            // page, the D-TLB's most recent entry, and the same line, the
            // most recent way of its set (dirty after a store), so the
            // shortcut holds and the routine takes it on that test alone.
            self.last_line = Some(store);
            rt.mem_line_same[store as usize]
        } else if plan.keep {
            self.last_line = Some(store);
            rt.mem_line_keep[store as usize]
        } else {
            rt.mem_line[store as usize]
        } as usize;
        let (label, back) = (self.a.new_dynamic_label(), self.a.new_dynamic_label());
        // the shortcut's tests, shared (see `Runtime::mem_line`)
        self.lea_imm(0, base, imm);
        dynasm!(self.a
            ; .arch x64
            ; call extern routine
            ; jne =>label
            ; =>back
        );
        let forget = self.line_in_use();
        self.hook_calls.push(HookCall {
            forget,
            label,
            back,
            regs: self.regs,
            keep_rsi: true,
            kind: HookKind::Mem {
                base,
                imm,
                size_kind: size as u32 | (store as u32) << 8,
            },
        });
        self.owed.same_line[store as usize] += 1;
        self.pending += cost;
        self.owed.stall += cost;
    }

    /// Whether a later access of the block may be tested against the
    /// frame's `last_line` as it is here or as the current op writes it:
    /// a hook or interpreter call here must then forget it.
    fn line_in_use(&self) -> bool {
        let plan = self.plan.get(self.op_index).copied().unwrap_or_default();
        self.last_line.is_some() || plan.keep || plan.test
    }

    /// At run time, after a hook or the interpreter ran (where `forget`):
    /// no line is known to pass the data shortcut (see `hook_mem`).
    fn forget_line(&mut self, forget: bool) {
        if forget && self.lay.hooks.is_some() {
            let at = self.lay.f_last_line;
            dynasm!(self.a ; .arch x64 ; mov QWORD [rbx + at], -1);
        }
    }

    /// The interpreter's definition of the op, retiring (and logging) it.
    fn helper_op(&mut self, addr: u64) -> Emitted {
        let lay = self.lay;
        // (it may change anything the data shortcut tests)
        self.last_line = None;
        self.flush_regs();
        self.settle_owed();
        let p = self.pending;
        self.sync(p);
        self.call(lay.op_helper, addr);
        dynasm!(self.a
            ; .arch x64
            ; mov r13, QWORD [rbx + lay.f_cyc]
            ; test eax, eax
            ; jnz extern lay.rt.ret as usize
        );
        self.pending = 0;
        // (the op may have changed what the next fetch finds)
        self.fetched_line = None;
        Emitted::Helper
    }

    /// Hooked: an ALU op's `fetch` and `insn`, before it.
    fn hooks_before(&mut self, op: &Op) {
        self.hook_fetch(op, false);
        self.hook_insn(op);
    }

    /// Emit one op; how (see [`Emitted`]).
    fn op(&mut self, op: &Op, addr: u64) -> Emitted {
        use Insn::*;
        let lay = self.lay;
        if let Some(h) = &lay.hooks {
            // a class whose `insn` is not a fixed cost: the helper calls it
            if h.inline.insn_cost[op.class as usize].is_none() {
                return self.helper_op(addr);
            }
        }
        // (results are computed in rax and moved to rd's host register:
        // register moves cost next to nothing on current x86 cores)
        macro_rules! alu_i {
            ($rd:expr, $rs1:expr, $($body:tt)*) => {{
                self.hooks_before(op);
                let r1 = self.src($rs1);
                dynasm!(self.a ; .arch x64 ; mov rax, Rq(r1) ; $($body)*);
                self.set_rd($rd);
                self.pending += 1;
            }};
        }
        macro_rules! alu_r {
            ($rd:expr, $rs1:expr, $rs2:expr, $($body:tt)*) => {{
                self.hooks_before(op);
                let r1 = self.src($rs1);
                let r2 = self.src($rs2);
                dynasm!(self.a ; .arch x64 ; mov rax, Rq(r1) ; mov rcx, Rq(r2) ; $($body)*);
                self.set_rd($rd);
                self.pending += 1;
            }};
        }
        // in rd's own host register where the op allows: `d` is it,
        // holding rs1 (the result is written there)
        macro_rules! alu_i_at {
            ($rd:expr, $rs1:expr, |$d:ident| $($body:tt)*) => {{
                self.hooks_before(op);
                let r1 = self.src($rs1);
                let $d = self.dst($rd);
                if $d != r1 {
                    dynasm!(self.a ; .arch x64 ; mov Rq($d), Rq(r1));
                }
                dynasm!(self.a ; .arch x64 ; $($body)*);
                self.pending += 1;
            }};
        }
        // `d op= s` with d rd's host register holding rs1 and s rs2's; when
        // rd's register is rs2's, `commutes` ops take rs1 as s, others go
        // through rax
        macro_rules! alu_r_at {
            ($rd:expr, $rs1:expr, $rs2:expr, $commutes:expr, |$d:ident, $s:ident| $($body:tt)*) => {{
                self.hooks_before(op);
                let r1 = self.src($rs1);
                let r2 = self.src($rs2);
                let d = self.dst($rd);
                if d == r2 && d != r1 {
                    if $commutes {
                        let ($d, $s) = (d, r1);
                        dynasm!(self.a ; .arch x64 ; $($body)*);
                    } else {
                        let ($d, $s) = (0u8, r2);
                        dynasm!(self.a ; .arch x64 ; mov rax, Rq(r1) ; $($body)* ; mov Rq(d), rax);
                    }
                } else {
                    if d != r1 {
                        dynasm!(self.a ; .arch x64 ; mov Rq(d), Rq(r1));
                    }
                    let ($d, $s) = (d, r2);
                    dynasm!(self.a ; .arch x64 ; $($body)*);
                }
                self.pending += 1;
            }};
        }
        let off = op.off as i64;
        match op.insn {
            Addi { rd, rs1, imm } => {
                self.hooks_before(op);
                let r1 = self.src(rs1);
                let d = self.dst(rd);
                self.lea_imm(d, r1, imm);
                self.pending += 1;
            }
            Slti { rd, rs1, imm } => alu_i!(rd, rs1, cmp rax, imm ; setl al ; movzx eax, al),
            Sltiu { rd, rs1, imm } => alu_i!(rd, rs1, cmp rax, imm ; setb al ; movzx eax, al),
            Xori { rd, rs1, imm } => alu_i_at!(rd, rs1, |d| xor Rq(d), imm),
            Ori { rd, rs1, imm } => alu_i_at!(rd, rs1, |d| or Rq(d), imm),
            Andi { rd, rs1, imm } => alu_i_at!(rd, rs1, |d| and Rq(d), imm),
            Slli { rd, rs1, imm } => alu_i_at!(rd, rs1, |d| shl Rq(d), (imm & 63) as i8),
            Srli { rd, rs1, imm } => alu_i_at!(rd, rs1, |d| shr Rq(d), (imm & 63) as i8),
            Srai { rd, rs1, imm } => alu_i_at!(rd, rs1, |d| sar Rq(d), (imm & 63) as i8),
            Addiw { rd, rs1, imm } => alu_i!(rd, rs1, add eax, imm ; movsxd rax, eax),
            Slliw { rd, rs1, imm } => alu_i!(rd, rs1, shl eax, (imm & 31) as i8 ; movsxd rax, eax),
            Srliw { rd, rs1, imm } => alu_i!(rd, rs1, shr eax, (imm & 31) as i8 ; movsxd rax, eax),
            Sraiw { rd, rs1, imm } => alu_i!(rd, rs1, sar eax, (imm & 31) as i8 ; movsxd rax, eax),
            Lui { rd, imm } => {
                self.hooks_before(op);
                dynasm!(self.a ; .arch x64 ; mov rax, QWORD imm as i64);
                self.set_rd(rd);
                self.pending += 1;
            }
            Auipc { rd, imm } => {
                self.hooks_before(op);
                self.block_pc_plus(0, off + imm as i64);
                self.set_rd(rd);
                self.pending += 1;
            }
            Add { rd, rs1, rs2 } => alu_r_at!(rd, rs1, rs2, true, |d, s| add Rq(d), Rq(s)),
            Sub { rd, rs1, rs2 } => alu_r_at!(rd, rs1, rs2, false, |d, s| sub Rq(d), Rq(s)),
            Xor { rd, rs1, rs2 } => alu_r_at!(rd, rs1, rs2, true, |d, s| xor Rq(d), Rq(s)),
            Or { rd, rs1, rs2 } => alu_r_at!(rd, rs1, rs2, true, |d, s| or Rq(d), Rq(s)),
            And { rd, rs1, rs2 } => alu_r_at!(rd, rs1, rs2, true, |d, s| and Rq(d), Rq(s)),
            Sll { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, shl rax, cl),
            Srl { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, shr rax, cl),
            Sra { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, sar rax, cl),
            Slt { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, cmp rax, rcx ; setl al ; movzx eax, al),
            Sltu { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, cmp rax, rcx ; setb al ; movzx eax, al),
            Addw { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, add eax, ecx ; movsxd rax, eax),
            Subw { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, sub eax, ecx ; movsxd rax, eax),
            Sllw { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, shl eax, cl ; movsxd rax, eax),
            Srlw { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, shr eax, cl ; movsxd rax, eax),
            Sraw { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, sar eax, cl ; movsxd rax, eax),
            Mul { rd, rs1, rs2 } => alu_r_at!(rd, rs1, rs2, true, |d, s| imul Rq(d), Rq(s)),
            Mulw { rd, rs1, rs2 } => alu_r!(rd, rs1, rs2, imul eax, ecx ; movsxd rax, eax),
            // the product's high half is rdx's (a cache register: kept
            // on the stack)
            Mulh { rd, rs1, rs2 } => {
                alu_r!(rd, rs1, rs2, push rdx ; imul rcx ; mov rax, rdx ; pop rdx)
            }
            Mulhu { rd, rs1, rs2 } => {
                alu_r!(rd, rs1, rs2, push rdx ; mul rcx ; mov rax, rdx ; pop rdx)
            }
            Div { rd, rs1, rs2 }
            | Divu { rd, rs1, rs2 }
            | Rem { rd, rs1, rs2 }
            | Remu { rd, rs1, rs2 }
            | Divw { rd, rs1, rs2 }
            | Divuw { rd, rs1, rs2 }
            | Remw { rd, rs1, rs2 }
            | Remuw { rd, rs1, rs2 } => return self.divide(op, addr, (rd, rs1, rs2)),
            // (one memory and one hart: a fence orders nothing here, and
            // the interpreter's does nothing but retire)
            Fence { .. } => {
                self.hooks_before(op);
                self.pending += 1;
            }

            Beq { rs1, rs2, imm } => self.branch(op, addr, (rs1, rs2), imm, 0),
            Bne { rs1, rs2, imm } => self.branch(op, addr, (rs1, rs2), imm, 1),
            Blt { rs1, rs2, imm } => self.branch(op, addr, (rs1, rs2), imm, 2),
            Bge { rs1, rs2, imm } => self.branch(op, addr, (rs1, rs2), imm, 3),
            Bltu { rs1, rs2, imm } => self.branch(op, addr, (rs1, rs2), imm, 4),
            Bgeu { rs1, rs2, imm } => self.branch(op, addr, (rs1, rs2), imm, 5),
            Jal { rd, imm } => {
                let link = off + op.len as i64;
                self.hooks_before(op);
                self.flush_regs();
                self.write_link(rd, link);
                if let Some(h) = &lay.hooks {
                    let f = h.direct_jump;
                    self.store_last_class();
                    match self.inline_jump(rd) {
                        Some(j) => self.direct_jump_step(op, imm, &j, f, addr),
                        None => {
                            self.call(f, addr);
                            self.add_dynamic();
                        }
                    }
                }
                let retired = self.pending + 1;
                if lay.log {
                    self.log(addr, retired);
                }
                self.settle_owed();
                if off + imm as i64 == 0 {
                    self.loop_or_exit(retired);
                } else {
                    self.exit_at(retired, off + imm as i64);
                }
                return Emitted::Jumped;
            }
            Jalr { rd, rs1, imm } => {
                // the target first: rd may be rs1
                let link = off + op.len as i64;
                self.hooks_before(op);
                self.flush_regs();
                self.load_x(1, rs1);
                if imm != 0 {
                    dynasm!(self.a ; .arch x64 ; add rcx, imm);
                }
                dynasm!(self.a
                    ; .arch x64
                    ; and rcx, -2
                    ; mov QWORD [rbx + lay.f_pc], rcx
                );
                self.write_link(rd, link);
                if let Some(h) = &lay.hooks {
                    // (the hook reads the target from the frame's pc)
                    let f = h.jump;
                    self.store_last_class();
                    // (the registers are flushed: the routines' may go)
                    let rt = &lay.rt;
                    match JumpHint::of(rd, Some(rs1)) {
                        JumpHint::Return if rt.return_step != 0 => {
                            let done = self.a.new_dynamic_label();
                            dynasm!(self.a
                                ; .arch x64
                                ; call extern rt.return_step as usize
                                ; je =>done
                            );
                            self.call(f, addr);
                            dynasm!(self.a ; .arch x64 ; =>done);
                        }
                        hint @ (JumpHint::Plain | JumpHint::Call) if rt.jalr_plain != 0 => {
                            // (the routines are written only with the BTB's)
                            let j = h.inline.direct_jump.expect("the BTB's shortcut");
                            self.jalr_step(op, &j, hint == JumpHint::Call, link)
                        }
                        _ => self.call(f, addr),
                    }
                    self.add_dynamic();
                }
                let retired = self.pending + 1;
                if lay.log {
                    self.log(addr, retired);
                }
                self.settle_owed();
                self.indirect_exit(retired);
                return Emitted::Jumped;
            }

            Lb { rd, rs1, imm } => self.load(op, addr, rd, rs1, imm, 1, true),
            Lh { rd, rs1, imm } => self.load(op, addr, rd, rs1, imm, 2, true),
            Lw { rd, rs1, imm } => self.load(op, addr, rd, rs1, imm, 4, true),
            Ld { rd, rs1, imm } => self.load(op, addr, rd, rs1, imm, 8, false),
            Lbu { rd, rs1, imm } => self.load(op, addr, rd, rs1, imm, 1, false),
            Lhu { rd, rs1, imm } => self.load(op, addr, rd, rs1, imm, 2, false),
            Lwu { rd, rs1, imm } => self.load(op, addr, rd, rs1, imm, 4, false),
            Sb { rs1, rs2, imm } => self.store(op, addr, rs1, rs2, imm, 1),
            Sh { rs1, rs2, imm } => self.store(op, addr, rs1, rs2, imm, 2),
            Sw { rs1, rs2, imm } => self.store(op, addr, rs1, rs2, imm, 4),
            Sd { rs1, rs2, imm } => self.store(op, addr, rs1, rs2, imm, 8),

            _ => return self.helper_op(addr),
        }
        Emitted::Inline
    }

    /// A conditional branch.
    fn branch(&mut self, op: &Op, addr: u64, (rs1, rs2): (u8, u8), imm: i32, cond: u8) {
        let label = self.a.new_dynamic_label();
        self.hooks_before(op);
        let r1 = self.src(rs1);
        let r2 = self.src(rs2);
        dynasm!(self.a ; .arch x64 ; cmp Rq(r1), Rq(r2));
        if let Some(h) = &self.lay.hooks {
            // the outcome to the `branch` hook, which returns its cycles
            // doubled plus the outcome
            let f = h.branch;
            match cond {
                0 => dynasm!(self.a ; .arch x64 ; sete al),
                1 => dynasm!(self.a ; .arch x64 ; setne al),
                2 => dynasm!(self.a ; .arch x64 ; setl al),
                3 => dynasm!(self.a ; .arch x64 ; setge al),
                4 => dynasm!(self.a ; .arch x64 ; setb al),
                _ => dynasm!(self.a ; .arch x64 ; setae al),
            }
            if let Some(b) = self.inline_branch(op) {
                // (the routine widens the outcome, adds its cycles and
                // leaves the outcome in the flags: the site is short)
                self.branch_step(op, &b);
                dynasm!(self.a ; .arch x64 ; jnz =>label);
            } else {
                dynasm!(self.a ; .arch x64 ; movzx eax, al);
                self.store_last_class();
                let regs = self.regs;
                let off = op.off as i32;
                self.kept_call(&regs, false, f, |e| {
                    dynasm!(e.a
                        ; .arch x64
                        ; mov ecx, eax
                        ; mov esi, off
                        ; mov rdx, QWORD imm as i64
                    );
                });
                dynasm!(self.a
                    ; .arch x64
                    ; mov ecx, eax
                    ; shr rax, 1
                );
                self.add_dynamic();
                dynasm!(self.a ; .arch x64 ; test cl, 1 ; jnz =>label);
            }
        } else {
            match cond {
                0 => dynasm!(self.a ; .arch x64 ; je =>label),
                1 => dynasm!(self.a ; .arch x64 ; jne =>label),
                2 => dynasm!(self.a ; .arch x64 ; jl =>label),
                3 => dynasm!(self.a ; .arch x64 ; jge =>label),
                4 => dynasm!(self.a ; .arch x64 ; jb =>label),
                _ => dynasm!(self.a ; .arch x64 ; jae =>label),
            }
        }
        self.pending += 1;
        self.taken.push(Taken {
            label,
            regs: self.regs,
            retired: self.pending,
            owed: self.owed,
            target_off: op.off as i64 + imm as i64,
            log_op: self.lay.log.then_some(addr),
        });
    }

    /// A division or remainder op as the interpreter makes it: by zero
    /// the quotient is all ones and the remainder the dividend, the
    /// signed overflow (the least value by -1) gives the dividend and 0 —
    /// cases x86's divide instructions fault on, so they never reach
    /// them. A model whose `divide` is not inert gets the interpreter's op.
    fn divide(&mut self, op: &Op, addr: u64, (rd, rs1, rs2): (u8, u8, u8)) -> Emitted {
        use Insn::*;
        // (`word`: of the low 32 bits, the result sign-extended; `rem`:
        // the remainder)
        if self
            .lay
            .hooks
            .as_ref()
            .is_some_and(|h| !h.inline.divide_inert)
        {
            return self.helper_op(addr);
        }
        let (word, signed, rem) = match op.insn {
            Div { .. } => (false, true, false),
            Divu { .. } => (false, false, false),
            Rem { .. } => (false, true, true),
            Remu { .. } => (false, false, true),
            Divw { .. } => (true, true, false),
            Divuw { .. } => (true, false, false),
            Remw { .. } => (true, true, true),
            _ => (true, false, true),
        };
        self.hooks_before(op);
        let r1 = self.src(rs1);
        let r2 = self.src(rs2);
        let (zero, minus_one, done) = (
            self.a.new_dynamic_label(),
            self.a.new_dynamic_label(),
            self.a.new_dynamic_label(),
        );
        if word {
            dynasm!(self.a ; .arch x64 ; mov eax, Rd(r1) ; mov ecx, Rd(r2) ; test ecx, ecx);
        } else {
            dynasm!(self.a ; .arch x64 ; mov rax, Rq(r1) ; mov rcx, Rq(r2) ; test rcx, rcx);
        }
        dynasm!(self.a ; .arch x64 ; jz =>zero);
        if signed {
            if word {
                dynasm!(self.a ; .arch x64 ; cmp ecx, -1);
            } else {
                dynasm!(self.a ; .arch x64 ; cmp rcx, -1);
            }
            dynasm!(self.a ; .arch x64 ; je =>minus_one);
        }
        // (rdx, a cache register, kept on the stack; the quotient in rax,
        // the remainder in rdx)
        dynasm!(self.a ; .arch x64 ; push rdx);
        match (word, signed) {
            (false, true) => dynasm!(self.a ; .arch x64 ; cqo ; idiv rcx),
            (false, false) => dynasm!(self.a ; .arch x64 ; xor edx, edx ; div rcx),
            (true, true) => dynasm!(self.a ; .arch x64 ; cdq ; idiv ecx),
            (true, false) => dynasm!(self.a ; .arch x64 ; xor edx, edx ; div ecx),
        }
        if rem {
            dynasm!(self.a ; .arch x64 ; mov rax, rdx);
        }
        dynasm!(self.a ; .arch x64 ; pop rdx ; jmp =>done);
        if signed {
            // by -1: the negation (the least value stays itself), and no
            // remainder
            dynasm!(self.a ; .arch x64 ; =>minus_one);
            match (word, rem) {
                (_, true) => dynasm!(self.a ; .arch x64 ; xor eax, eax),
                (true, false) => dynasm!(self.a ; .arch x64 ; neg eax),
                (false, false) => dynasm!(self.a ; .arch x64 ; neg rax),
            }
            dynasm!(self.a ; .arch x64 ; jmp =>done);
        }
        // by zero: all ones, or the dividend (in rax already)
        dynasm!(self.a ; .arch x64 ; =>zero);
        if !rem {
            dynasm!(self.a ; .arch x64 ; mov rax, -1);
        }
        dynasm!(self.a ; .arch x64 ; =>done);
        if word {
            dynasm!(self.a ; .arch x64 ; movsxd rax, eax);
        }
        self.set_rd(rd);
        self.pending += 1;
        Emitted::Inline
    }

    /// The model's inline counter step for the conditional branch `op`
    /// (its `insn` just ran, so the model's last class is `Branch`), if
    /// it has one whose masks and costs fit this code's immediates.
    fn inline_branch(&self, op: &Op) -> Option<hs_timing::InlineBranch> {
        let b = self.lay.hooks.as_ref()?.inline.branch?;
        (op.class == hs_timing::InsnClass::Branch && branch_fits(&b)).then_some(b)
    }

    /// The model's inline BTB hit for a `jal` linking into `rd`, if it has
    /// one and the jump is not a call (a call pushes the return-address
    /// stack: the hook does that).
    fn inline_jump(&self, rd: u8) -> Option<hs_timing::InlineJump> {
        let j = self.lay.hooks.as_ref()?.inline.direct_jump?;
        // (the BTB slot is then a constant: see below)
        (rd != 1 && rd != 5 && j.index_mask < 0x800 && j.cost <= i32::MAX as u64).then_some(j)
    }

    /// `(pc >> 1) & mask` of `op`'s pc, for a mask below 0x800: it reads
    /// only the pc's page offset, which is the block's physical
    /// address's, so it is known at translation time.
    fn pc_index(&self, op: &Op, mask: u64) -> u64 {
        debug_assert!(mask < 0x800);
        (self.lay.block_pa.wrapping_add(op.off as u64) >> 1) & mask
    }

    /// A plain or call `jalr`'s `jump` hook as [`Runtime::jalr_plain`]
    /// or [`Runtime::jalr_call`] makes it (the target in the frame's pc;
    /// `link`: the link's offset from the block's pc).
    fn jalr_step(&mut self, op: &Op, j: &hs_timing::InlineJump, call: bool, link: i64) {
        let slot = self.pc_index(op, j.index_mask);
        dynasm!(self.a ; .arch x64 ; mov edi, 16 * slot as i32);
        self.block_pc_plus(2, op.off as i64 + 1);
        let routine = if call {
            self.block_pc_plus(1, link);
            self.lay.rt.jalr_call
        } else {
            self.lay.rt.jalr_plain
        };
        dynasm!(self.a ; .arch x64 ; call extern routine as usize);
    }

    /// A plain `jal`'s `direct_jump` hook (`f`) behind the BTB test of
    /// `InlineJump`: a hit is counted here, its cost with the straight
    /// line's (`pending` and the owed stall); a miss calls the hook and
    /// adds what it returns beyond that cost. Uses only rax and rsi
    /// besides the call.
    fn direct_jump_step(
        &mut self,
        op: &Op,
        imm: i32,
        j: &hs_timing::InlineJump,
        f: usize,
        addr: u64,
    ) {
        let t = self.lay.hooks.as_ref().map_or(0, |h| h.model);
        let entry = 16 * self.pc_index(op, j.index_mask) as i32;
        let (f_base_pc, f_table) = (self.lay.f_base_pc, self.lay.f_btb_table);
        let (miss, done) = (self.a.new_dynamic_label(), self.a.new_dynamic_label());
        dynasm!(self.a
            ; .arch x64
            ; mov rsi, QWORD [rbx + f_table]
            // the tag: pc | 1, that is pc + 1 (a pc is even)
            ; mov rax, QWORD [rbx + f_base_pc]
            ; add rax, op.off as i32 + 1
            ; cmp rax, QWORD [rsi + entry]
            ; jne =>miss
            // the target: pc + imm
            ; add rax, imm - 1
            ; cmp rax, QWORD [rsi + entry + 8]
            ; jne =>miss
        );
        self.qword_imm8(0, false, t + j.jumps as i32, 1);
        let cost = j.cost as i32;
        if cost == cost as i8 as i32 {
            self.qword_imm8(0, false, t + j.cycles as i32, cost as i8);
        } else {
            dynasm!(self.a ; .arch x64 ; add QWORD [rbx + t + j.cycles as i32], cost);
        }
        // a hit's cost is known here: counted with the straight line's
        // (settled at the exit), and a miss adds what the hook returns
        // beyond it
        dynasm!(self.a
            ; .arch x64
            ; jmp =>done
            ; =>miss
        );
        self.call(f, addr);
        if cost != 0 {
            dynasm!(self.a ; .arch x64 ; sub rax, cost);
        }
        self.add_dynamic();
        dynasm!(self.a ; .arch x64 ; =>done);
        self.pending += cost;
        self.owed.stall += cost;
    }

    /// The `branch` hook's counter step (see `InlineBranch`), with the
    /// outcome in al: adds the cycles to the count and the stall, and
    /// leaves the outcome in ecx's low bit and the zero flag (clear when
    /// taken). Uses only rax, rcx and rsi (no cached register): the pc's
    /// index bits here, the step in the shared routine.
    fn branch_step(&mut self, op: &Op, b: &hs_timing::InlineBranch) {
        let f_base_pc = self.lay.f_base_pc;
        if b.index_mask < 0x800 {
            let pc_bits = self.pc_index(op, b.index_mask);
            dynasm!(self.a ; .arch x64 ; mov esi, pc_bits as i32);
        } else {
            dynasm!(self.a
                ; .arch x64
                ; mov rsi, QWORD [rbx + f_base_pc]
                ; add rsi, op.off as i32
                ; shr rsi, 1
            );
        }
        let routine = self.lay.rt.branch_step as usize;
        dynasm!(self.a ; .arch x64 ; call extern routine);
        self.owed.branches += 1;
    }

    /// [`Runtime::branch_step`]: the counter's step, the mispredict and
    /// fetch counts, the history's shift, the cycles added where every
    /// hook's are (written once here rather than at each branch).
    fn branch_step_routine(&mut self, b: &hs_timing::InlineBranch) {
        let t = self.lay.hooks.as_ref().map_or(0, |h| h.model);
        let (hist, misses, fetch) = (
            t + b.history as i32,
            t + b.mispredicts as i32,
            t + b.fetch_cycles as i32,
        );
        let (f_table, steps) = (self.lay.f_bp_table, self.lay.f_bp_steps);
        dynasm!(self.a
            ; .arch x64
            // rsi: the counter's address
            ; xor rsi, QWORD [rbx + hist]
            ; and rsi, b.index_mask as i32
            ; add rsi, QWORD [rbx + f_table]
            // ecx: 2 * counter + taken (a counter is at most 3; the mask
            // keeps the look-ups below inside their eight bytes whatever
            // it is, and drops whatever rax holds above al, the outcome:
            // a sum's low bits depend on its terms' low bits alone)
            ; movzx ecx, BYTE [rsi]
            ; lea ecx, [rax + rcx * 2]
            ; and ecx, 7
            ; movzx eax, BYTE [rbx + rcx + steps + 16]
            ; add QWORD [rbx + misses], rax
            ; movzx eax, BYTE [rbx + rcx + steps]
            ; mov BYTE [rsi], al
            ; movzx eax, BYTE [rbx + rcx + steps + 8]
            ; add QWORD [rbx + fetch], rax
            // the outcome into the history
            ; and ecx, 1
            ; mov rsi, QWORD [rbx + hist]
            ; lea rsi, [rcx + rsi * 2]
        );
        if b.history_mask < 0x80 {
            dynasm!(self.a ; .arch x64 ; and esi, BYTE b.history_mask as i8);
        } else {
            dynasm!(self.a ; .arch x64 ; and rsi, b.history_mask as i32);
        }
        dynasm!(self.a ; .arch x64 ; mov QWORD [rbx + hist], rsi);
        // the cycles, as at any hook's site, then the outcome's flag
        self.add_dynamic();
        dynasm!(self.a ; .arch x64 ; test cl, 1 ; ret);
    }

    /// [`Runtime::return_step`]: the pop of `InlineJalr`, its counts
    /// and its cost (added to the count and the stall by the site).
    fn return_step_routine(&mut self, r: &hs_timing::InlineJalr) {
        let t = self.lay.hooks.as_ref().map_or(0, |h| h.model);
        let (top, len) = (t + r.ras_top as i32, t + r.ras_len as i32);
        let (f_pc, f_stack) = (self.lay.f_pc, self.lay.f_ras_stack);
        let (miss, kept) = (self.a.new_dynamic_label(), self.a.new_dynamic_label());
        self.qword_imm8(7, false, len, 0);
        dynasm!(self.a
            ; .arch x64
            ; je =>miss
            ; mov rax, QWORD [rbx + top]
            ; mov rsi, QWORD [rbx + f_stack]
            ; mov rcx, QWORD [rbx + f_pc]
            ; cmp rcx, QWORD [rsi + rax * 8]
            ; jne =>miss
            // the pop: one entry fewer, the top one below (wrapping)
            ; sub rax, 1
            ; jnc =>kept
            ; mov eax, r.depth as i32 - 1
            ; =>kept
            ; mov QWORD [rbx + top], rax
        );
        self.qword_imm8(5, false, len, 1);
        self.qword_imm8(0, false, t + r.jumps as i32, 1);
        self.qword_imm8(0, false, t + r.returns as i32, 1);
        let cost = r.cost as i32;
        if cost != 0 {
            dynasm!(self.a ; .arch x64 ; add QWORD [rbx + t + r.cycles as i32], cost);
        }
        dynasm!(self.a
            ; .arch x64
            ; mov eax, cost
            ; cmp eax, eax
            ; ret
            ; =>miss
            // (rsp is never 0: ZF clear)
            ; test rsp, rsp
            ; ret
        );
    }

    /// The push of `InlineJalr` and its count (rcx the link; clobbers
    /// rax, rsi), going on into what follows.
    fn push_routine(&mut self, r: &hs_timing::InlineJalr) {
        let t = self.lay.hooks.as_ref().map_or(0, |h| h.model);
        let (top, len) = (t + r.ras_top as i32, t + r.ras_len as i32);
        let depth = r.depth as i32;
        let within = self.a.new_dynamic_label();
        dynasm!(self.a
            ; .arch x64
            // the top one above (wrapping), the link there
            ; mov rax, QWORD [rbx + top]
            ; add rax, 1
            ; cmp rax, depth
            ; jb =>within
            ; xor eax, eax
            ; =>within
            ; mov QWORD [rbx + top], rax
            ; mov rsi, QWORD [rbx + self.lay.f_ras_stack]
            ; mov QWORD [rsi + rax * 8], rcx
            // one entry more, up to the depth (carry: below it)
            ; mov rax, QWORD [rbx + len]
            ; cmp rax, depth
            ; adc rax, 0
            ; mov QWORD [rbx + len], rax
        );
        self.qword_imm8(0, false, t + r.calls as i32, 1);
    }

    /// [`Runtime::jalr_plain`]: the BTB's test and update, the counts
    /// and the cost of `InlineJalr`'s plain jump.
    fn jalr_plain_routine(&mut self, r: &hs_timing::InlineJalr) {
        let t = self.lay.hooks.as_ref().map_or(0, |h| h.model);
        let (f_pc, f_table) = (self.lay.f_pc, self.lay.f_btb_table);
        let miss = self.a.new_dynamic_label();
        self.qword_imm8(0, false, t + r.jumps as i32, 1);
        dynasm!(self.a
            ; .arch x64
            ; mov rsi, QWORD [rbx + f_table]
            ; add rsi, rdi
            ; mov rcx, QWORD [rbx + f_pc]
            // a hit: both words equal (their differences or'ed are 0)
            ; mov rax, rdx
            ; xor rax, QWORD [rsi]
            ; mov rdi, rcx
            ; xor rdi, QWORD [rsi + 8]
            ; mov QWORD [rsi], rdx
            ; mov QWORD [rsi + 8], rcx
            ; or rax, rdi
            ; jnz =>miss
        );
        let (cost, missed) = (r.cost as i32, r.mispredict as i32);
        dynasm!(self.a
            ; .arch x64
            ; add QWORD [rbx + t + r.cycles as i32], cost
            ; mov eax, cost
            ; ret
            ; =>miss
        );
        self.qword_imm8(0, false, t + r.mispredicts as i32, 1);
        dynasm!(self.a
            ; .arch x64
            ; add QWORD [rbx + t + r.cycles as i32], missed
            ; mov eax, missed
            ; ret
        );
    }

    /// With the guest address in rsi: jump to a new slow stub unless the
    /// load (or store, `row_delta`) TLB row maps the page and the `n` bytes
    /// stay in it; rsi is then the host address. The stub writes back
    /// `before`'s registers and reloads the current ones.
    fn translate(&mut self, addr: u64, before: RegCache, n: i32, row_delta: i32) -> DynamicLabel {
        let slow = self.a.new_dynamic_label();
        let back = self.a.new_dynamic_label();
        let lay = self.lay;
        // (the tag compared is the last byte's page: an access crossing
        // into the next page finds the entry of its first page, whose tag
        // differs in the page number's low bits, and takes the slow path)
        if n == 1 {
            dynasm!(self.a ; .arch x64 ; mov rax, rsi);
        } else {
            dynasm!(self.a ; .arch x64 ; lea rax, [BYTE rsi + (n - 1) as i8]);
        }
        dynasm!(self.a
            ; .arch x64
            ; shr rax, 12
            ; mov ecx, esi
            ; shr ecx, 8
            ; and ecx, ((crate::mmu::TLB_SIZE - 1) << 4) as i32
            ; or rax, QWORD [rbx + lay.f_gen]
        );
        if row_delta == 0 {
            dynasm!(self.a
                ; .arch x64
                ; cmp rax, QWORD [r15 + rcx]
                ; jne =>slow
                ; add rsi, QWORD [r15 + rcx + 8]
            );
        } else {
            dynasm!(self.a
                ; .arch x64
                ; cmp rax, QWORD [r15 + rcx + row_delta]
                ; jne =>slow
                ; add rsi, QWORD [r15 + rcx + row_delta + 8]
            );
        }
        let forget = self.line_in_use();
        self.slow.push(Slow {
            forget,
            label: slow,
            back,
            pending: self.pending,
            after: (self.pending + 1, Owed::default()),
            owed: self.owed,
            op: addr,
            before,
            regs_after: self.regs,
        });
        back
    }

    /// rsi = x[rs1] + imm; the host register holding rs1.
    fn address(&mut self, rs1: u8, imm: i32) -> u8 {
        let r1 = self.src(rs1);
        self.lea_imm(6, r1, imm);
        r1
    }

    /// Hooked: a load's or store's hooks, after its TLB test passed (so a
    /// TLB miss leaves them all to the interpreter's definition): rsi the
    /// host address, `r1` the host register of the address register.
    fn hooks_of_access(&mut self, op: &Op, r1: u8, imm: i32, n: i32, store: bool) {
        if self.lay.hooks.is_none() {
            return;
        }
        self.hook_fetch(op, true);
        self.hook_insn(op);
        self.hook_mem(r1, imm, n, store);
    }

    /// Hooked: where the straight line goes on after a load or store, for
    /// its slow path to rejoin. A fetch from the op's line still passes
    /// after either path (the interpreter's fetch, a walk and the access
    /// leave it so: see `InlineHooks`), so it is not tested again.
    fn access_done(&mut self) {
        if self.lay.hooks.is_none() {
            return;
        }
        let after = (self.pending, self.owed);
        if let Some(s) = self.slow.last_mut() {
            s.after = after;
        }
    }

    fn load(&mut self, op: &Op, addr: u64, rd: u8, rs1: u8, imm: i32, n: i32, signed: bool) {
        let r1 = self.address(rs1, imm);
        let before = self.regs;
        // rd's host register is claimed before the TLB check, so the slow
        // path reloads it with what the interpreter loaded
        let slot = (rd != 0).then(|| {
            let i = self.regs.find(rd).unwrap_or_else(|| self.claim(rd));
            self.touch(i);
            i
        });
        let back = self.translate(addr, before, n, 0);
        self.hooks_of_access(op, r1, imm, n, false);
        // straight into rd's host register (rax for x0, written to the sink)
        let r = slot.map_or(0, |i| CACHE_REGS[i]);
        match (n, signed) {
            (1, true) => dynasm!(self.a ; .arch x64 ; movsx Rq(r), BYTE [rsi]),
            (1, false) => dynasm!(self.a ; .arch x64 ; movzx Rd(r), BYTE [rsi]),
            (2, true) => dynasm!(self.a ; .arch x64 ; movsx Rq(r), WORD [rsi]),
            (2, false) => dynasm!(self.a ; .arch x64 ; movzx Rd(r), WORD [rsi]),
            (4, true) => dynasm!(self.a ; .arch x64 ; movsxd Rq(r), DWORD [rsi]),
            (4, false) => dynasm!(self.a ; .arch x64 ; mov Rd(r), DWORD [rsi]),
            _ => dynasm!(self.a ; .arch x64 ; mov Rq(r), QWORD [rsi]),
        }
        match slot {
            Some(i) => self.regs.slots[i].dirty = true,
            None => self.set_rd(rd),
        }
        dynasm!(self.a ; .arch x64 ; =>back);
        self.pending += 1;
        self.access_done();
    }

    fn store(&mut self, op: &Op, addr: u64, rs1: u8, rs2: u8, imm: i32, n: i32) {
        let r1 = self.address(rs1, imm);
        let r2 = self.src(rs2);
        let back = self.translate(addr, self.regs, n, STORE_ROW_DELTA);
        self.hooks_of_access(op, r1, imm, n, true);
        match n {
            // (through cl: not every cache register has a byte form without REX)
            1 => dynasm!(self.a ; .arch x64 ; mov rcx, Rq(r2) ; mov BYTE [rsi], cl),
            2 => dynasm!(self.a ; .arch x64 ; mov WORD [rsi], Rw(r2)),
            4 => dynasm!(self.a ; .arch x64 ; mov DWORD [rsi], Rd(r2)),
            _ => dynasm!(self.a ; .arch x64 ; mov QWORD [rsi], Rq(r2)),
        }
        // (a store entry of a page flagged as code fails the TLB test: the
        // interpreter does that store, and tells the block cache)
        dynasm!(self.a ; .arch x64 ; =>back);
        self.pending += 1;
        self.access_done();
    }

    /// The out-of-line paths, after the block's straight line.
    fn stubs(&mut self) {
        let lay = self.lay;
        for t in std::mem::take(&mut self.taken) {
            dynasm!(self.a ; .arch x64 ; =>t.label);
            self.store_dirty(&t.regs);
            self.owed = t.owed;
            if let Some(op) = t.log_op {
                self.log(op, t.retired);
            }
            self.settle_owed();
            if t.target_off == 0 {
                self.loop_or_exit(t.retired);
            } else {
                self.exit_at(t.retired, t.target_off);
            }
        }
        for s in std::mem::take(&mut self.slow) {
            // the interpreter runs the op (walk, MMIO, page crossing,
            // fault) and retires it; back on the straight line r13 counts
            // it among `pending + 1`
            dynasm!(self.a ; .arch x64 ; =>s.label);
            self.store_dirty(&s.before);
            self.settle(&s.owed, 1);
            self.sync(s.pending);
            self.call(lay.mem_helper, s.op);
            dynasm!(self.a
                ; .arch x64
                ; mov r13, QWORD [rbx + lay.f_cyc]
                ; sub r13, s.after.0
                ; test eax, eax
                ; jnz extern lay.rt.ret as usize
            );
            // (the straight line settles what it owes later, as if the
            // op had run there)
            self.settle(&s.after.1, -1);
            self.reload(&s.regs_after);
            self.forget_line(s.forget);
            dynasm!(self.a ; .arch x64 ; jmp =>s.back);
        }
        if let Some(h) = &lay.hooks {
            let (fetch, mem) = (h.fetch, h.mem);
            for c in std::mem::take(&mut self.hook_calls) {
                dynasm!(self.a ; .arch x64 ; =>c.label);
                match c.kind {
                    HookKind::Fetch {
                        off_len,
                        routine_tried,
                    } => {
                        // (rax: the line's address, from the test; a hit
                        // in the routine added its cycles there)
                        let shared = lay.rt.fetch_line as usize;
                        if shared != 0 && !routine_tried {
                            dynasm!(self.a
                                ; .arch x64
                                ; call extern shared
                                ; jz =>c.back
                            );
                        }
                        // with the any-way search the routine (which ran
                        // when there is one) returns CF set where the
                        // line is absent: the hook need not look again
                        let absent = shared != 0
                            && lay.hooks.as_ref().is_some_and(|h| {
                                h.inline.fetch_new_line.is_some_and(|f| f.any_way.is_some())
                            });
                        if absent {
                            dynasm!(self.a ; .arch x64 ; setc al);
                        }
                        self.kept_call(&c.regs, c.keep_rsi, fetch, |e| {
                            dynasm!(e.a ; .arch x64 ; mov esi, off_len as i32);
                            if absent {
                                e.absent_flag(super::FETCH_ABSENT);
                                dynasm!(e.a ; .arch x64 ; or esi, eax);
                            }
                        });
                        // (a walk for the fetch reads through the L1D)
                        self.forget_line(c.forget);
                    }
                    HookKind::Mem {
                        base,
                        imm,
                        size_kind,
                    } => {
                        let h = lay.hooks.as_ref().expect("hooked");
                        let cost = h.inline.mem_cost as i32;
                        // with the any-way search the routine returns CF
                        // set where the line is absent (else clear): the
                        // hook need not look for it again
                        let absent = h.inline.mem_any_way.is_some();
                        if absent {
                            dynasm!(self.a ; .arch x64 ; setc al);
                        }
                        // (rsi, the host address, is the hook's too)
                        self.kept_call(&c.regs, true, mem, |e| {
                            dynasm!(e.a
                                ; .arch x64
                                ; lea rdx, [Rq(base) + imm]
                                ; mov ecx, size_kind as i32
                            );
                            if absent {
                                e.absent_flag(super::MEM_ABSENT);
                                dynasm!(e.a ; .arch x64 ; or ecx, eax);
                            }
                        });
                        // the straight line counts the shortcut's cost
                        // and use, taken back here
                        dynasm!(self.a ; .arch x64 ; sub rax, cost);
                        self.add_dynamic();
                        let h = lay.hooks.as_ref().expect("hooked");
                        let tr = h.model + h.inline.mem_translating as i32;
                        let at =
                            h.model + (h.inline.mem_counts + 8 * (size_kind >> 8) as usize) as i32;
                        dynasm!(self.a
                            ; .arch x64
                            ; movzx eax, BYTE [rbx + tr]
                            ; shl eax, 4
                        );
                        self.qword_imm8(5, true, at, 1);
                        self.forget_line(c.forget);
                        dynasm!(self.a ; .arch x64 ; jmp =>c.back);
                        continue;
                    }
                }
                self.add_dynamic();
                dynasm!(self.a ; .arch x64 ; jmp =>c.back);
            }
        }
        dynasm!(self.a ; .arch x64 ; .align 16);
        // the link cells, unfilled (see `exit_at`)
        // (first-level offset 0 and an arena index no entry holds)
        for cell in std::mem::take(&mut self.cells) {
            dynasm!(self.a
                ; .arch x64
                ; =>cell
                ; .u64 0
                ; .u64 u64::MAX
                ; .u64 0
                ; .u64 0
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{lea_disp, qword_imm8};

    #[test]
    fn leas_with_short_displacements_are_encoded_as_objdump_reads_them() {
        // each checked with `objdump -D -b binary -mi386:x86-64`
        let cases: [(u8, u8, i32, &[u8]); 8] = [
            // lea rsi,[r8+0x9]
            (6, 8, 9, &[0x49, 0x8d, 0x70, 0x09]),
            // lea rax,[r13+0x5] (an exit's cycle count)
            (0, 13, 5, &[0x49, 0x8d, 0x45, 0x05]),
            // lea rax,[r13+0x100]
            (0, 13, 256, &[0x49, 0x8d, 0x85, 0x00, 0x01, 0, 0]),
            // lea rax,[rdi-0x10]
            (0, 7, -16, &[0x48, 0x8d, 0x47, 0xf0]),
            // lea rsi,[r12+0x8]
            (6, 12, 8, &[0x49, 0x8d, 0x74, 0x24, 0x08]),
            // lea r10,[rbp+0x7f]
            (10, 5, 127, &[0x4c, 0x8d, 0x55, 0x7f]),
            // lea rsi,[r14+0x80]
            (6, 14, 128, &[0x49, 0x8d, 0xb6, 0x80, 0, 0, 0]),
            // lea rax,[r12-0x800]
            (
                0,
                12,
                -0x800,
                &[0x49, 0x8d, 0x84, 0x24, 0x00, 0xf8, 0xff, 0xff],
            ),
        ];
        for (d, s, disp, want) in cases {
            let (b, n) = lea_disp(d, s, disp);
            assert_eq!(&b[..n], want, "lea {d}, [{s} + {disp}]");
        }
    }

    #[test]
    fn short_immediates_of_qword_memory_operands_are_encoded_as_objdump_reads_them() {
        // each checked with `objdump -D -b binary -mi386:x86-64`
        let cases: [(u8, bool, i32, i8, &[u8]); 5] = [
            // add QWORD PTR [rbx+0x1a10], 0x5
            (
                0,
                false,
                0x1a10,
                5,
                &[0x48, 0x83, 0x83, 0x10, 0x1a, 0, 0, 0x05],
            ),
            // add QWORD PTR [rbx+rax*1+0x1ab8], -1
            (
                0,
                true,
                0x1ab8,
                -1,
                &[0x48, 0x83, 0x84, 0x03, 0xb8, 0x1a, 0, 0, 0xff],
            ),
            // adc QWORD PTR [rbx+0x6f8], 0x0
            (
                2,
                false,
                0x6f8,
                0,
                &[0x48, 0x83, 0x93, 0xf8, 0x06, 0, 0, 0x00],
            ),
            // sub QWORD PTR [rbx+rax*1+0x1ab8], 0x1
            (
                5,
                true,
                0x1ab8,
                1,
                &[0x48, 0x83, 0xac, 0x03, 0xb8, 0x1a, 0, 0, 0x01],
            ),
            // cmp QWORD PTR [rbx+0x19e0], 0x0
            (
                7,
                false,
                0x19e0,
                0,
                &[0x48, 0x83, 0xbb, 0xe0, 0x19, 0, 0, 0x00],
            ),
        ];
        for (ext, with_rax, disp, imm, want) in cases {
            let (b, n) = qword_imm8(ext, with_rax, disp, imm);
            assert_eq!(&b[..n], want, "op /{ext}, rax index {with_rax}");
        }
    }
}
