//! IEEE-754 arithmetic exactly as RISC-V F/D define it.
