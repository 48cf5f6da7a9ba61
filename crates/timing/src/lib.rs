//! Timing models: how many cycles each retired instruction costs.
//!
//! The hart calls these hooks at fixed points of execution. Every method has
//! a default that costs nothing, and the hart is generic over the model, so
//! the [`Atomic`] model (one cycle per instruction) compiles to the same code
//! as an emulator without hooks.
//!
//! [`InOrder`] is the parameterised in-order model; a machine description
//! ([`MachineDesc`], a TOML file) selects and configures a model.

pub mod bpred;
pub mod cache;
pub mod desc;
pub mod inorder;
pub mod stats;
pub mod tlb;

/// Tests' random numbers: xorshift64 from `seed`, `rnd(n)` below `n`.
#[cfg(test)]
pub(crate) fn test_rng(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut x = seed;
    move |n| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    }
}

pub use bpred::JumpHint;
pub use desc::{DescError, InOrderConfig, IpiDesc, MachineDesc, ModelDesc};
pub use inorder::{InOrder, InOrderFactory};
pub use stats::{event, ModelStats, Stat, CYCLE_STATES};

/// Coarse instruction class, enough to price an instruction. (One byte:
/// translated code stores it, see [`InlineHooks::last_class`].)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[repr(u8)]
pub enum InsnClass {
    Alu,
    Branch,
    Jump,
    Load,
    Store,
    Amo,
    Mul,
    Div,
    FpAdd,
    FpMul,
    FpDiv,
    FpSqrt,
    FpFma,
    FpMisc,
    Csr,
    Fence,
    FenceI,
    SfenceVma,
    Ecall,
    Xret,
    Wfi,
    System,
}

/// The registers an instruction reads and writes, for models that track
/// dependencies (the pipelined in-order model). Registers are numbered 1–31
/// (x1–x31) and 32–63 (f0–f31); [`Operands::NONE`] marks an unused slot (x0
/// is never a dependency). Decided once when the instruction is decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operands {
    pub dst: u8,
    /// Sources; for loads, stores, AMOs and `jalr` `src[0]` is the address
    /// base, for stores `src[1]` the data.
    pub src: [u8; 3],
    /// [`Operands::WIDE`]: double-precision FP or a 64-bit divide (slower
    /// than the single/word forms).
    pub flags: u8,
}

impl Operands {
    pub const NONE: u8 = 0xff;
    pub const WIDE: u8 = 1;
    /// No registers read or written.
    pub const EMPTY: Operands = Operands {
        dst: Operands::NONE,
        src: [Operands::NONE; 3],
        flags: 0,
    };
    /// An integer register number as an operand (x0 is none).
    pub fn x(r: u8) -> u8 {
        if r == 0 || r > 31 {
            Operands::NONE
        } else {
            r
        }
    }
    /// A floating-point register number as an operand.
    pub fn f(r: u8) -> u8 {
        32 + (r & 31)
    }
}

/// What [`TimingModel::insn`] returns for an instruction that issues in the
/// same cycle as the one before it (a dual-issue pair): −1 in two's
/// complement, taking back the cycle the hart charges every instruction.
/// The hart adds hook results with wrapping arithmetic, so an instruction's
/// total (1 + its hooks) is never below zero.
pub const ISSUED_WITH_PREVIOUS: u64 = u64::MAX;

/// Kind of a data memory access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemKind {
    Load,
    Store,
    /// Page-table walker access.
    Walk,
    /// Instruction fetch. The hart reports fetches through
    /// [`TimingModel::fetch`]; models use this kind internally (e.g. when a
    /// fetch goes to a cache).
    Fetch,
}

/// Full details of a trap, reported right after [`TimingModel::trap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrapInfo {
    /// Exception code or interrupt number.
    pub cause: u64,
    pub interrupt: bool,
    /// pc of the trapping instruction / the interrupted pc.
    pub epc: u64,
    pub tval: u64,
    /// Privilege before the trap (0 U, 1 S, 3 M).
    pub from: u8,
    /// Privilege of the handler.
    pub to: u8,
    /// x17 at the trap (the syscall number for an ecall from U).
    pub a7: u64,
}

/// Hooks called by the hart. Those returning `u64` return extra cycles to
/// charge: an instruction costs 1 + the sum of what its hooks returned
/// (wrapping: `insn` may return [`ISSUED_WITH_PREVIOUS`]), and
/// `Hart::cycle()`, `mcycle`, `cycle` and `time` follow that.
///
/// Order per instruction: `fetch`, `insn`, then whatever it does (`mem`,
/// `branch`, `csr`/`csr_write`, `wfi`, `xret`, or `trap` + `trap_info` when
/// it faults). Page-table walks report each PTE read and A/D write as
/// `mem(va, pte, 8, MemKind::Walk, false)` before the access they serve.
/// Interrupts call `trap` + `trap_info` between instructions.
/// Number of [`InsnClass`]es.
pub const INSN_CLASSES: usize = InsnClass::System as usize + 1;

/// A model's own fast paths for `fetch`, `insn` and `mem`, described as
/// data so translated code can take them without a call (the model's
/// fields named by byte offsets from the model's own address). Each is
/// exact: where its condition holds, the hook would return the cost given
/// and change only what is named here. The model's tests check that
/// (`InOrder`'s: against its hooks, by its saved state).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineHooks {
    /// `fetch(_, pa, _)` returns 0 and changes nothing while
    /// `pa & fetch_line_mask` equals the u64 at `fetch_last_line`, which
    /// it never does while a walk is pending (the u64 at `walk_pending`
    /// is not 0): one test covers both. Any `fetch` leaves that word so
    /// that a next fetch from its line passes, and `mem` of a load or
    /// store leaves no walk pending (it completes the walk that served
    /// it); `insn` of an inlined class, `mem` of a load or store and
    /// `branch`, `jump` and `direct_jump` never change the line, so after
    /// a fetch, a walk and the access it served a fetch from the same
    /// line passes again.
    pub fetch_line_mask: u64,
    pub fetch_last_line: usize,
    pub walk_pending: usize,
    /// `insn(_, class, _)` of a class with `Some(c)` here returns `c`; it
    /// adds 1 to the u64 at `insn_counts + 8 * class` and stores the
    /// class (a byte) at `last_class`, nothing else. `None`: call it.
    pub insn_cost: [Option<u64>; INSN_CLASSES],
    pub insn_counts: usize,
    pub last_class: usize,
    /// `mem(va, pa, _, Load | Store, false)` returns `mem_cost` and adds 1
    /// to the u64 at `mem_counts + 16 * translating + 8 * store` (the byte
    /// at `mem_translating`, 0 or 1), nothing else, while the u64 at
    /// `walk_pending` is 0; translating is 0 or the D-TLB's most recent
    /// entry holds `va` (see [`InlineTlb`]); and, with `line = pa >>
    /// mem_shift`, the u64 `k` at `mem_keys + 8 * (line & mem_key_mask)` is
    /// `2 * line + 1` for a store, `k | 1` is for a load (the line is the
    /// most recent way of its L1 set; a store needs it dirty).
    ///
    /// Where instead (no walk pending, translating) another D-TLB entry
    /// holds `va` and [`InlineTlb`]'s hit finds it, that hit's update is
    /// what `mem` would do first (its whole LRU update): after it, the
    /// above holds as written, and `mem` is called as before.
    ///
    /// A passing shortcut changes nothing it tests, and neither do the
    /// other shortcuts here, `insn` of an inlined class, `branch`, `jump`
    /// or `direct_jump`: so after a load or store whose shortcut passed,
    /// an access to the same line (a load, or a store after a store)
    /// passes it too until a `fetch` or `mem` hook runs (translated code
    /// relies on that, and tests a later access's line alone).
    pub mem_shift: u8,
    pub mem_tlb: InlineTlb,
    pub mem_keys: usize,
    pub mem_key_mask: u64,
    pub mem_translating: usize,
    pub mem_counts: usize,
    pub mem_cost: u64,
    /// Where the D-TLB test above holds but the key does not, and the
    /// line is in another way of its set (or, for a store, in the most
    /// recent way but clean): that hit's update, which [`InlineL1`]
    /// describes, is what `mem` would do first; after it, the above holds
    /// as written. None: the model's L1D is not one it describes.
    pub mem_any_way: Option<InlineL1>,
    /// A fetch from a new line, where the model has that shortcut (see
    /// [`InlineFetch`]; None: `fetch` is called).
    pub fetch_new_line: Option<InlineFetch>,
    /// The conditional branch's two-bit-counter step, when the model's
    /// predictor is one (see [`InlineBranch`]).
    pub branch: Option<InlineBranch>,
    /// A `jal` that links no return address, where the BTB predicted it
    /// (see [`InlineJump`]; None: `direct_jump` is called).
    pub direct_jump: Option<InlineJump>,
    /// A `jalr`'s jump: a return the return-address stack predicts, a
    /// plain jump or a call (see [`InlineJalr`]; None: `jump` is called).
    pub jalr: Option<InlineJalr>,
    /// `divide` changes nothing (the divider's latency does not depend on
    /// the operands): translated code need not call it.
    pub divide_inert: bool,
}

/// `direct_jump(pc, target, JumpHint::Plain, _)` (a `jal` whose rd is
/// neither x1 nor x5) where the 16 bytes at `table + 16 * ((pc >> 1) &
/// index_mask)` (`table`: what [`TimingModel::inline_jump_table`] returns)
/// are the u64s `pc | 1` and `target` (the BTB entry predicting it): it
/// adds 1 to the u64 at `jumps` and `cost` to the u64 at `cycles`, and
/// returns `cost`. Nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineJump {
    pub index_mask: u64,
    pub jumps: usize,
    pub cycles: usize,
    pub cost: u64,
}

/// A `jalr`'s `jump` hook, as translated code takes it (offsets as
/// [`InlineHooks`]'s; `stack`: what [`TimingModel::inline_return_stack`]
/// returns; `n` and `top`: the u64s at `ras_len` and `ras_top`, `top`
/// below `depth` whenever `n` is not 0).
///
/// A return, `jump(pc, target, JumpHint::Return, _)` (a `jalr` that links
/// nothing, through x1 or x5), where `n` is not 0 and the u64 at `stack +
/// 8 * top` is `target`: it stores `n - 1` at `ras_len` and `top - 1` at
/// `ras_top` (`depth - 1` when `top` is 0), adds 1 to the u64s at `jumps`
/// and `returns` and `cost` to the u64 at `cycles`, and returns `cost`.
/// Nothing else.
///
/// Every plain jump or call, `jump(pc, target, JumpHint::Plain | Call,
/// link)`, with the BTB entry at `table + 16 * ((pc >> 1) & index_mask)`
/// (as [`InlineJump`] describes it): a hit when it holds `pc | 1` and
/// `target`; the entry then holds them whatever it held. It adds 1 to the
/// u64 at `jumps`; a call then pushes: with `t` = `top + 1` (0 when that
/// is `depth`) it stores `t` at `ras_top`, `link` at `stack + 8 * t` and
/// `min(n + 1, depth)` at `ras_len`, and adds 1 to the u64 at `calls`. A
/// hit adds `cost` to the u64 at `cycles` and returns it; a miss adds 1 to
/// the u64 at `mispredicts` and `mispredict` to the u64 at `cycles`, and
/// returns `mispredict`. Nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineJalr {
    pub ras_top: usize,
    pub ras_len: usize,
    pub depth: u64,
    pub jumps: usize,
    pub returns: usize,
    pub calls: usize,
    pub mispredicts: usize,
    pub cycles: usize,
    pub cost: u64,
    pub mispredict: u64,
}

/// `fetch(pc, pa, _)` of a line other than the last one fetched (see
/// [`InlineHooks::fetch_line_mask`]), while the u64 at
/// [`InlineHooks::walk_pending`] is 0; translating (the byte at
/// [`InlineHooks::mem_translating`]) is 0 or the I-TLB's most recent entry
/// holds `pc` (see [`InlineTlb`]: where another entry holds it and the
/// hit there finds it, its update is what `fetch` does first, and then
/// this holds); and, with `line = pa >> shift`, the u64 `k` at `keys + 8 *
/// (line & key_mask)` has `k | 1 == 2 * line + 1` (the line is the most
/// recent way of its L1 set): it stores `pa &` the line mask at
/// `fetch_last_line`, adds 1 to the u64 at `reads` and, translating, to
/// the u64 at `tlb_accesses`, `cost` to the u64 at `cycles`, and returns
/// `cost`. Nothing else.
///
/// Where the I-TLB test holds but the key does not, and the line is in
/// another way of its set: that hit's update, which `any_way` describes
/// ([`InlineL1`]; None: the model's L1I is not one it describes), is what
/// `fetch` does first; after it, the above holds as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineFetch {
    pub shift: u8,
    pub tlb: InlineTlb,
    pub keys: usize,
    pub key_mask: u64,
    pub reads: usize,
    pub tlb_accesses: usize,
    pub cycles: usize,
    pub cost: u64,
    pub any_way: Option<InlineL1>,
}

/// A four-way LRU L1 whose most-recent-way keys [`InlineHooks`] (the
/// L1D) or [`InlineFetch`] (the L1I) describes, as translated code finds a line in any way and makes the
/// hit's update (offsets from the model, as `InlineHooks`'s).
///
/// At the two addresses [`TimingModel::inline_l1_sets`] gives for it:
/// the sets, 64 bytes each (set `s = line & mask`, the index of its
/// keys, `mem_key_mask` or [`InlineFetch::key_mask`]):
/// four u64 tags (line numbers), then the four ways' u64 stamps (twice
/// the clock at their last use, plus 1 when dirty); and a byte per set,
/// its most recent way. `clock` is a u64.
///
/// A hit in way `w` (its tag is `line`): when `w` is the most recent
/// way, a store sets its stamp's dirty bit; else the clock goes up by 1,
/// the way's stamp becomes twice the clock plus its dirty bit (set by a
/// store), and `w` becomes the most recent way. Then the set's key is
/// `2 * line` plus the way's dirty bit. That is the hit's whole update
/// (the access is the shortcut's to count, as it says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineL1 {
    pub clock: usize,
}

/// A fully associative LRU TLB as translated code tests and updates it
/// (offsets from the model, as [`InlineHooks`]'s).
///
/// Two 24-byte records at `recent`, the most recent entry's first, are
/// each the u64s `mask`, `span` and `entry` (an entry's number): a record
/// holds `va` when `va | mask == span`, and then a hit in the first
/// changes nothing. The entries are `entries` 24-byte records of the u64s
/// `base`, `mask` and `stamp`, at the address
/// [`TimingModel::inline_tlb_entries`] gives; entry `e` holds `va` when
/// `(va & !mask) | 1 == base`. `index` is 256 u16 hints, one per `(va >>
/// 12) % 256`; `clock` is a u64.
///
/// A hit in neither record, where the second holds `va`: the two records
/// swap, and that is the hit's whole update. Else, where the entry `i`
/// the hint for `va` names (`i < entries`) holds it: if the two records
/// name different entries, the second's entry's stamp becomes `clock +
/// 1`, the first's `clock + 2`, and the clock `clock + 2`; then the clock
/// goes up by 1 and entry `i`'s stamp becomes it, the first record is
/// copied to the second, and the first becomes `{mask, (base & !1) |
/// mask, i}` of entry `i`: that is the hit's whole update. (The access
/// count is the shortcut's to add, as it says.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineTlb {
    pub recent: usize,
    pub index: usize,
    pub clock: usize,
    pub entries: usize,
}

impl InlineJalr {
    /// The same fields inside a struct that holds theirs `at` bytes in.
    pub fn moved(self, at: usize) -> InlineJalr {
        InlineJalr {
            ras_top: at + self.ras_top,
            ras_len: at + self.ras_len,
            jumps: at + self.jumps,
            returns: at + self.returns,
            calls: at + self.calls,
            mispredicts: at + self.mispredicts,
            cycles: at + self.cycles,
            ..self
        }
    }
}

impl InlineL1 {
    /// The same cache inside a struct that holds it `at` bytes in.
    pub fn moved(self, at: usize) -> InlineL1 {
        InlineL1 {
            clock: at + self.clock,
        }
    }
}

impl InlineTlb {
    /// The same TLB inside a wrapper whose model is `at` bytes in.
    pub fn moved(self, at: usize) -> InlineTlb {
        InlineTlb {
            recent: at + self.recent,
            index: at + self.index,
            clock: at + self.clock,
            ..self
        }
    }
}

/// `branch(pc, taken, _)` while the byte at [`InlineHooks::last_class`] is
/// `InsnClass::Branch` (a conditional branch's `insn` ran last), with `h`
/// the u64 at `history`, `i = ((pc >> 1) ^ h) & index_mask` and `c` the
/// byte at `table + i` (`table`: what [`TimingModel::inline_branch_table`]
/// returns): it stores `BRANCH_NEXT[2c + taken]` there, `(2h + taken) &
/// history_mask` at `history`, adds 1 to the u64 at `branches` and, when
/// `c >= 2` is not `taken` (a misprediction), 1 to the u64 at
/// `mispredicts`; it returns `mispredict` then, else `taken_penalty` if
/// taken, else 0, and adds that to the u64 at `fetch_cycles`. Nothing
/// else. Masks and costs are the model's for its life; the table is
/// `index_mask + 1` bytes, each at most 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineBranch {
    pub history: usize,
    pub history_mask: u64,
    pub index_mask: u64,
    pub branches: usize,
    pub mispredicts: usize,
    pub fetch_cycles: usize,
    pub mispredict: u64,
    pub taken_penalty: u64,
}

/// A two-bit counter after an outcome, by `2 * counter + taken`:
/// saturating up when taken, down when not.
pub const BRANCH_NEXT: [u8; 8] = [0, 1, 0, 2, 1, 3, 2, 3];

pub trait TimingModel {
    /// True when `fetch`, `insn`, `mem`, `branch`, `jump`, `direct_jump`
    /// and `divide` charge nothing and record nothing (so skipping them
    /// changes no count): the translating engine then runs hot blocks as
    /// host code without calling them. A wrapping model leaves it false.
    const INSN_HOOKS_FREE: bool = false;
    /// Whether those hooks may be skipped now (a wrapping model may say no
    /// while it records every instruction); skipped instructions are then
    /// reported through [`TimingModel::skipped`].
    #[inline(always)]
    fn hooks_skippable(&self) -> bool {
        Self::INSN_HOOKS_FREE
    }
    /// Whether translated code may run now calling `fetch`, `insn`, `mem`,
    /// `branch`, `jump`, `direct_jump` and `divide` as the interpreter
    /// does, taking the shortcuts of [`TimingModel::inline_hooks`] where
    /// they hold (cheap: asked before every block). A wrapping model says
    /// no while it records every instruction.
    #[inline(always)]
    fn hooks_inlinable(&self) -> bool {
        false
    }
    /// The shortcuts (see [`InlineHooks`]); `Some` whenever
    /// [`TimingModel::hooks_inlinable`] may say yes, the same for the
    /// model's life (translated code keeps the offsets).
    fn inline_hooks(&self) -> Option<InlineHooks> {
        None
    }
    /// The address of the counter table [`InlineBranch`] describes (0
    /// when there is none): valid until the model is next restored or
    /// replaced, so translated code asks each time it is entered.
    fn inline_branch_table(&mut self) -> u64 {
        0
    }
    /// The address of the BTB [`InlineJump`] describes (0 when there is
    /// none), valid as [`TimingModel::inline_branch_table`]'s is.
    fn inline_jump_table(&mut self) -> u64 {
        0
    }
    /// The address of the return-address stack [`InlineJalr`]
    /// describes (0 when there is none), valid as
    /// [`TimingModel::inline_branch_table`]'s is.
    fn inline_return_stack(&mut self) -> u64 {
        0
    }
    /// The addresses of the I-TLB's and the D-TLB's entries that
    /// [`InlineTlb`] describes (0 where there are none), valid as
    /// [`TimingModel::inline_branch_table`]'s is.
    fn inline_tlb_entries(&mut self) -> [u64; 2] {
        [0, 0]
    }
    /// The addresses of the L1I's and then the L1D's sets and most
    /// recent ways that [`InlineL1`] describes (0 where there are none),
    /// valid as
    /// [`TimingModel::inline_branch_table`]'s is.
    fn inline_l1_sets(&mut self) -> [[u64; 2]; 2] {
        [[0, 0]; 2]
    }
    /// `n` instructions retired, one cycle each, without their `fetch`,
    /// `insn`, `mem`, `branch`, `jump`, `direct_jump` or `divide` calls
    /// (only while [`TimingModel::hooks_skippable`]); called before the
    /// next hook, so a model that counts instructions stays exact.
    #[inline(always)]
    fn skipped(&mut self, _n: u64) {}
    /// Every instruction, before `insn()`: its virtual pc, physical address
    /// and length (2 or 4).
    #[inline(always)]
    fn fetch(&mut self, _pc: u64, _pa: u64, _len: u8) -> u64 {
        0
    }
    /// `fetch(pc, pa, len)` from a line other than the last, where
    /// translated code found, as [`InlineHooks`] describes it (only with
    /// its `fetch_new_line`'s `any_way`), no walk pending, the I-TLB's
    /// test holding (its update made) and the line in no way of its L1I
    /// set: the same, without looking for the line again.
    #[inline(always)]
    fn fetch_absent(&mut self, pc: u64, pa: u64, len: u8) -> u64 {
        self.fetch(pc, pa, len)
    }
    /// Before executing an instruction of this class at `pc`, reading and
    /// writing the registers in `ops`.
    #[inline(always)]
    fn insn(&mut self, _pc: u64, _class: InsnClass, _ops: Operands) -> u64 {
        0
    }
    /// A memory access at virtual address `va` (equal to `pa` when the hart
    /// does not translate; for a page-walk access, the address being
    /// translated) and physical address `pa`; `mmio` when it left RAM.
    /// TLBs are tagged by `va`: many virtual pages may share one physical
    /// page (the kernel's zero page behind untouched memory).
    #[inline(always)]
    fn mem(&mut self, _va: u64, _pa: u64, _size: u8, _kind: MemKind, _mmio: bool) -> u64 {
        0
    }
    /// `mem(va, pa, size, kind, false)` of a load or store where
    /// translated code found, as [`InlineHooks`] describes it (only with
    /// its `mem_any_way`), no walk pending, the D-TLB's test holding (its
    /// update made) and the line in no way of its L1D set: the same,
    /// without looking for the line again.
    #[inline(always)]
    fn mem_absent(&mut self, va: u64, pa: u64, size: u8, kind: MemKind) -> u64 {
        self.mem(va, pa, size, kind, false)
    }
    /// A conditional branch resolved; `taken` and its `target`.
    #[inline(always)]
    fn branch(&mut self, _pc: u64, _taken: bool, _target: u64) -> u64 {
        0
    }
    /// A `jal`/`jalr` to `target`; `hint` is what its registers say about
    /// the return-address stack and `link` the address after it. Models
    /// without a return-address stack may treat it as a taken branch.
    #[inline(always)]
    fn jump(&mut self, pc: u64, target: u64, _hint: JumpHint, _link: u64) -> u64 {
        self.branch(pc, true, target)
    }
    /// A `jal` (its target in the instruction itself, so a core knows it at
    /// decode); otherwise as [`TimingModel::jump`].
    #[inline(always)]
    fn direct_jump(&mut self, pc: u64, target: u64, hint: JumpHint, link: u64) -> u64 {
        self.jump(pc, target, hint, link)
    }
    /// An integer divide or remainder (right after its `insn`): its
    /// operands, as the signed magnitudes or unsigned values the operation
    /// uses (`word`: the 32-bit form), for dividers whose latency depends
    /// on them.
    #[inline(always)]
    fn divide(&mut self, _dividend: u64, _divisor: u64, _word: bool) {}
    /// Where the hart's clock stands, for an observer that stamps what the
    /// next hooks report; called before `trap` (then `trap_info`), `xret`
    /// and `csr_write`. `start`: the cycle the current instruction began
    /// at (an interrupt's or a fetch fault's: the cycle it is taken at);
    /// `now`: `start` plus the instruction's 1 and all its hooks charged so
    /// far (an interrupt or fetch fault, which is no instruction: `start`).
    /// Observers learn the time here instead of adding up every
    /// instruction's costs themselves.
    #[inline(always)]
    fn clock(&mut self, _start: u64, _now: u64) {}
    /// A trap was taken (exception or interrupt).
    #[inline(always)]
    fn trap(&mut self, _cause: u64, _interrupt: bool) -> u64 {
        0
    }
    /// A CSR was accessed; `write` when it was modified.
    #[inline(always)]
    fn csr(&mut self, _csr: u16, _write: bool) -> u64 {
        0
    }
    /// Full details of a trap, right after `trap()`.
    #[inline(always)]
    fn trap_info(&mut self, _t: &TrapInfo) {}
    /// mret/sret retired: the new pc and the privileges before/after.
    #[inline(always)]
    fn xret(&mut self, _new_pc: u64, _from: u8, _to: u8) -> u64 {
        0
    }
    /// A CSR write that took effect (after WARL legalisation; `value` is
    /// what the CSR reads back). `satp` writes are context switches.
    #[inline(always)]
    fn csr_write(&mut self, _csr: u16, _value: u64) {}
    /// WFI executed at `pc` (whether or not the hart then idles).
    #[inline(always)]
    fn wfi(&mut self, _pc: u64) {}
    /// Value of hardware performance counter `index` (3..=31) for
    /// `mhpmcounterN`/`hpmcounterN` reads; `event` is the value last
    /// written to `mhpmeventN`. The hart adds its own offset (so guest
    /// writes to the counter work) and freezes it under `mcountinhibit`;
    /// the model only has to return a monotonic count of `event`.
    #[inline(always)]
    fn hpm_counter(&self, _index: u16, _event: u64) -> u64 {
        0
    }
    /// The events (`event::*` selectors) this model counts on the hpm
    /// counters; the device tree advertises exactly these to OpenSBI, so
    /// `perf stat` says `<not supported>` for the rest instead of 0.
    fn hpm_events(&self) -> &'static [u64] {
        &[]
    }
    /// The model's own counters (cycle shape, caches, TLBs, predictor), for
    /// reports; `None` when it keeps none (Atomic: every cycle is one
    /// instruction in execute). A wrapping model forwards this.
    fn model_stats(&self) -> Option<ModelStats> {
        None
    }
    /// What the model has learnt and counted (caches, TLBs, predictor,
    /// issue state, counters), for a snapshot; `shared`: also the state
    /// all harts share (given for one hart only). None: the model has no
    /// save/restore, and a restored run starts it cold. A wrapping model
    /// forwards this.
    fn save_state(&self, _shared: bool) -> Option<Result<Vec<u8>, String>> {
        None
    }
    /// Go on from what [`TimingModel::save_state`] gave, for a model built
    /// from the same description.
    fn restore_state(&mut self, _data: &[u8], _shared: bool) -> Result<(), String> {
        Err("this timing model has no save/restore".into())
    }
}

/// One cycle per instruction, nothing else: the fastest model.
#[derive(Clone, Copy, Debug, Default)]
pub struct Atomic;

/// Atomic learns and counts nothing: its state is empty.
impl TimingModel for Atomic {
    const INSN_HOOKS_FREE: bool = true;
    fn save_state(&self, _shared: bool) -> Option<Result<Vec<u8>, String>> {
        Some(Ok(Vec::new()))
    }
    fn restore_state(&mut self, data: &[u8], _shared: bool) -> Result<(), String> {
        if data.is_empty() {
            Ok(())
        } else {
            Err("the state is not the atomic model's (which has none)".into())
        }
    }
}
