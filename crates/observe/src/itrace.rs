//! Instruction-trace records: one per retired instruction of a traced window.

use serde::{Deserialize, Serialize};

use crate::sample::Privilege;

/// Why an instruction took more than its base cost.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StallCause {
    /// No stall beyond the base cost.
    None,
    /// Instruction fetch (I-cache miss, fetch from slow memory).
    Fetch,
    /// Data access (D-cache miss, memory latency).
    Mem,
    /// Page-table walk.
    Walker,
    /// MMIO access to a device.
    Mmio,
    /// Branch or jump misprediction.
    Branch,
    /// Serialising instruction (CSR write, fence, `sret`, ...).
    Serialize,
    /// Multi-cycle multiply or divide.
    MulDiv,
    /// Trap entry.
    Trap,
    /// A cause the timing model names itself.
    Other(String),
}

impl StallCause {
    pub fn as_str(&self) -> &str {
        match self {
            StallCause::None => "-",
            StallCause::Fetch => "fetch",
            StallCause::Mem => "mem",
            StallCause::Walker => "walker",
            StallCause::Mmio => "mmio",
            StallCause::Branch => "branch",
            StallCause::Serialize => "serialize",
            StallCause::MulDiv => "muldiv",
            StallCause::Trap => "trap",
            StallCause::Other(s) => s,
        }
    }
}

/// Which kind of access touched a cache line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineAccess {
    Fetch,
    Load,
    Store,
    Walk,
}

impl LineAccess {
    pub fn letter(self) -> char {
        match self {
            LineAccess::Fetch => 'I',
            LineAccess::Load => 'L',
            LineAccess::Store => 'S',
            LineAccess::Walk => 'W',
        }
    }
}

/// One cache line an instruction touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineTouch {
    /// Physical address of the line (aligned to the line size).
    pub line: u64,
    pub access: LineAccess,
    pub hit: bool,
}

/// A symbol name with the offset of an address inside it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SymbolOffset {
    pub name: String,
    pub offset: u64,
}

/// One retired instruction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItraceLine {
    pub hart: u16,
    /// Cycle at which the instruction started.
    pub cycle: u64,
    pub pc: u64,
    pub privilege: Privilege,
    /// `None` when the PC is outside every known symbol.
    pub symbol: Option<SymbolOffset>,
    /// Disassembly, e.g. `sd ra,8(sp)`.
    pub disasm: String,
    /// Cycles charged to the instruction, base cost included.
    pub cycles: u64,
    pub stall: StallCause,
    pub lines: Vec<LineTouch>,
    /// `file:line` from the kernel's line tables (kernel lines of an image
    /// whose `vmlinux` has DWARF; `None` elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}
