//! Execution, split by job:
//!
//! * [`predecode`]: what is decided once when an instruction is decoded
//!   (its [`Op`]);
//! * [`cache`]: the decoded-block cache (lookup, decode, invalidation,
//!   snapshot);
//! * [`semantics`]: what each instruction does, one definition that every
//!   engine calls;
//! * [`run`]: the run loop and the block engine that runs cached blocks;
//! * [`jit`]: the translating engine, hot blocks compiled to host code;
//! * [`reference`]: a single-step engine that decodes every instruction
//!   afresh, the reference the block engine is checked against (see
//!   [`Engine`]).

mod cache;
mod jit;
mod predecode;
mod reference;
mod run;
mod semantics;

use hs_isa::Insn;
use hs_timing::{InsnClass, Operands};

pub(crate) use cache::{Blocks, BlocksSaved};
pub use cache::{BLOCK_CACHE_OPS_MAX, BLOCK_CACHE_OPS_MIN};
pub(crate) use jit::JitFrame;
pub use jit::{TranslationStats, TRANSLATE_AFTER, TRANSLATE_AFTER_HOOKED};
#[cfg(test)]
pub(crate) use predecode::operands_of;
pub use reference::{CheckKind, CheckRecord, Engine};
pub use run::{NoPause, Pause};

/// One decoded instruction: decoded form, raw bits (for `mtval`), length,
/// byte offset from the start of its block (so pc = block pc + off), and
/// its timing class and registers (decided once, not per execution).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Op {
    pub insn: Insn,
    pub bits: u32,
    pub len: u8,
    pub class: InsnClass,
    pub off: u16,
    pub ops: Operands,
}

/// Index of the sink register: hot-path instructions whose rd is x0 are
/// decoded with rd = SINK, so their handlers write unconditionally and x0
/// stays zero without a fix-up on every write.
pub(crate) const SINK: u8 = 32;

#[inline(always)]
pub(crate) fn sext32(v: u64) -> u64 {
    v as i32 as i64 as u64
}
