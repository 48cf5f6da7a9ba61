//! The hart: registers, CSRs, privilege modes, traps, MMU, execution.
