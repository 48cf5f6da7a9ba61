//! PC samples with their call stacks.

use serde::{Deserialize, Serialize};

/// RISC-V privilege mode a hart was in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Privilege {
    #[serde(rename = "U")]
    User,
    #[serde(rename = "S")]
    Supervisor,
    #[serde(rename = "M")]
    Machine,
}

impl Privilege {
    /// One-letter name: `U`, `S` or `M`.
    pub fn letter(self) -> char {
        match self {
            Privilege::User => 'U',
            Privilege::Supervisor => 'S',
            Privilege::Machine => 'M',
        }
    }
}

/// One periodic sample of a hart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    pub hart: u16,
    /// Machine cycle at which the sample was taken.
    pub cycle: u64,
    pub pc: u64,
    pub privilege: Privilege,
    /// The hart's `satp` at that moment: selects the user address space.
    pub satp: u64,
    /// Caller return addresses, innermost first (the PC itself is not here).
    pub stack: Vec<u64>,
}
