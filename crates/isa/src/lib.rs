//! RISC-V instruction decoding (RV64GC, compressed expanded), disassembly, CSR numbers.
//!
//! [`decode`] turns the bytes at a pc into an [`Insn`] plus its length; 16-bit
//! compressed forms expand to the same base-ISA variants, so the executor
//! never sees a `c.` instruction. [`disasm`] prints GNU objdump's
//! `-M no-aliases` syntax.

pub mod csr;
mod decode;
mod disasm;
mod insn;

pub use decode::{decode, decode16, decode32, insn_len};
pub use disasm::{disasm, fpr_name, gpr_name, Disasm};
pub use insn::{AmoOp, FmaOp, FpOp, Insn};

/// The marker HINT (`docs/markers.md`): `slti x0, x0, imm` with imm in
/// `MARKER_IMM_FIRST..=MARKER_IMM_LAST`; `Insn::Marker::op` is `imm - MARKER_IMM_FIRST`.
pub const MARKER_IMM_FIRST: u16 = 0x480;
pub const MARKER_IMM_LAST: u16 = 0x48f;
/// `op` of a PHASE marker (a0 = label pointer, a1 = label length).
pub const MARKER_PHASE: u16 = 0;
/// `op` of an EXIT marker (a0 = exit status).
pub const MARKER_EXIT: u16 = 1;
/// `op` of a SEND marker (a0 = data, a1 = len, a2 = channel name, a3 = name len).
pub const MARKER_SEND: u16 = 2;
