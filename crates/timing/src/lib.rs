//! Timing models: how many cycles each retired instruction costs.
//!
//! The hart calls these hooks at fixed points of execution. Every method has
//! a default that costs nothing, and the hart is generic over the model, so
//! the [`Atomic`] model (one cycle per instruction) compiles to the same code
//! as an emulator without hooks.

/// Coarse instruction class, enough to price an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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

/// Kind of a data memory access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemKind {
    Load,
    Store,
    /// Page-table walker access.
    Walk,
    /// Instruction fetch (once per decoded block entry or per instruction, as the hart reports).
    Fetch,
}

/// Hooks called by the hart. Each returns extra cycles to charge beyond the
/// one cycle every instruction costs.
pub trait TimingModel {
    /// Before executing an instruction of this class at `pc`.
    #[inline(always)]
    fn insn(&mut self, _pc: u64, _class: InsnClass) -> u64 {
        0
    }
    /// A memory access at physical address `pa`; `mmio` when it left RAM.
    #[inline(always)]
    fn mem(&mut self, _pa: u64, _size: u8, _kind: MemKind, _mmio: bool) -> u64 {
        0
    }
    /// A conditional branch or jump resolved; `taken` and its `target`.
    #[inline(always)]
    fn branch(&mut self, _pc: u64, _taken: bool, _target: u64) -> u64 {
        0
    }
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
}

/// One cycle per instruction, nothing else: the fastest model.
#[derive(Clone, Copy, Debug, Default)]
pub struct Atomic;

impl TimingModel for Atomic {}
