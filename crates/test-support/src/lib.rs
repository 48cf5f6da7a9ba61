//! What tests in several crates share, in one place:
//!
//! * [`asm`]: a tiny RV64 assembler and an ELF64 writer, so a bare-metal
//!   test program needs no cross toolchain;
//! * [`isa`]: finding and building the bare-metal ISA programs of
//!   `tests/isa` with the cross compiler.

pub mod asm;
pub mod isa;
