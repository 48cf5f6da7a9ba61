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

/// What names a firmware or kernel sample in every view: its hart,
/// privilege, pc, stack and task, the last two by identity (a sampler keeps
/// one copy of each distinct stack, and consecutive samples of a task share
/// its name).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct NamedAlike {
    hart: u16,
    privilege: u8,
    pc: u64,
    stack: (usize, usize),
    comm: (usize, usize),
    pid: u32,
    tid: u32,
}

/// `samples` as (sample, how many samples it stands for): samples that every
/// view names alike counted once, in the order each first appears.
///
/// A firmware sample, or a kernel one whose callers are all upper-half
/// addresses, with its task read from the guest kernel, is named by its
/// hart, privilege, pc, stack and task alone, so the samples a hot loop
/// leaves (2.2 million in the in-order P87 boot) need naming once each with
/// their count. A user sample, one with no task, or a kernel one whose
/// stack runs into lower-half addresses (user code, or before paging) is
/// named through the address space at its time and stands alone. Equal
/// stacks or names held in two copies count apart here; the views merge
/// them by value.
pub fn coalesce(samples: &[Sample]) -> Vec<(&Sample, u64)> {
    let mut out: Vec<(&Sample, u64)> = Vec::new();
    let mut index: std::collections::HashMap<NamedAlike, usize, FastHash> = Default::default();
    for s in samples {
        // (a kernel stack's frame in the lower half may be user code, named
        // through the address space: only the upper half is kernel alone)
        let named_alone = match s.privilege {
            Privilege::Machine => true,
            Privilege::Supervisor => s.stack.iter().all(|a| a >> 63 == 1),
            Privilege::User => false,
        };
        let key = match &s.task {
            Some(t) if named_alone => Some(NamedAlike {
                hart: s.hart,
                privilege: s.privilege as u8,
                pc: s.pc,
                stack: (s.stack.as_ptr() as usize, s.stack.len()),
                comm: (t.comm.as_ptr() as usize, t.comm.len()),
                pid: t.pid,
                tid: t.tid,
            }),
            _ => None,
        };
        match key {
            None => out.push((s, 1)),
            Some(k) => match index.entry(k) {
                std::collections::hash_map::Entry::Occupied(e) => out[*e.get()].1 += 1,
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(out.len());
                    out.push((s, 1));
                }
            },
        }
    }
    out
}
