//! PC samples with their call stacks.

use serde::{Deserialize, Serialize};
use std::hash::{BuildHasherDefault, Hasher};
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

impl Sample {
    /// The address space the sample was taken in, as resolvers name it.
    pub fn address_space(&self) -> crate::symbols::AddressSpace {
        crate::symbols::AddressSpace {
            hart: self.hart,
            cycle: self.cycle,
            satp: self.satp,
        }
    }
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

/// A hasher for keys no adversary chooses (call stacks, symbol names):
/// rustc's FxHash step. A stack is hashed once per sample where it is
/// taken and again where it is named, and SipHash's resistance to chosen
/// keys buys nothing for return addresses.
#[derive(Default)]
pub struct FastHasher(u64);

/// Hash maps and sets with [`FastHasher`].
pub type FastHash = BuildHasherDefault<FastHasher>;

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}
