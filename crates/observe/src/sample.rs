//! PC samples with their call stacks.

use serde::{Deserialize, Serialize};
use std::sync::Arc;

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

/// A Linux task, as the guest kernel's `task_struct` names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Task {
    /// Process id: the thread group's id (`tgid`), perf's `pid`.
    pub pid: u32,
    /// Thread id: the kernel's `pid`, perf's `tid`.
    pub tid: u32,
    /// `comm` (at most 15 bytes in Linux); idle is `swapper/N`. Shared:
    /// consecutive samples of one task hold the same name.
    pub comm: Arc<str>,
}

impl Task {
    /// The idle task (pid 0) of a CPU.
    pub fn is_idle(&self) -> bool {
        self.tid == 0
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
    /// Shared: a sampler keeps one copy of each distinct stack.
    pub stack: Arc<[u64]>,
    /// The task on the hart, read from the guest kernel (in M-mode: the
    /// last task the hart ran in S or U mode); `None` when unknown (before
    /// the kernel runs, or without the kernel's BTF).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
}
