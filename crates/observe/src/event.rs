//! Timeline events: what happened on which hart at which cycle.

use serde::{Deserialize, Serialize};

use crate::sample::Privilege;

/// One timeline event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub hart: u16,
    /// Machine cycle at which it happened (the start, for spans).
    pub cycle: u64,
    pub kind: EventKind,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A synchronous exception taken into `target` mode.
    Exception { cause: u64, tval: u64, target: Privilege },
    /// An interrupt taken; `plic_source` when an external interrupt's source
    /// is known (from the claim that followed).
    Interrupt { cause: u64, plic_source: Option<u32> },
    /// This hart raised a software interrupt on hart `to`.
    IpiSent { to: u16 },
    /// This hart took a software interrupt; `from` when the machine knows it.
    IpiReceived { from: Option<u16> },
    /// The hart sat in `wfi` from `cycle` until `end_cycle`.
    WfiIdle { end_cycle: u64 },
    /// An `ecall` from U-mode (a Linux system call) with its number.
    Syscall { number: u64 },
    /// The return to U-mode that ends the last system call on this hart.
    SyscallReturn,
    /// `satp` was written: a new address space (context switch).
    ContextSwitch { satp: u64 },
    /// The guest marked the start of a phase.
    PhaseMarker { label: String },
    /// Anything else worth a mark on the timeline.
    Instant { label: String },
}

/// Name of a RISC-V trap cause (privileged spec, table 3.6).
pub fn cause_name(interrupt: bool, cause: u64) -> Option<&'static str> {
    let name = if interrupt {
        match cause {
            1 => "supervisor software interrupt",
            3 => "machine software interrupt",
            5 => "supervisor timer interrupt",
            7 => "machine timer interrupt",
            9 => "supervisor external interrupt",
            11 => "machine external interrupt",
            _ => return None,
        }
    } else {
        match cause {
            0 => "instruction address misaligned",
            1 => "instruction access fault",
            2 => "illegal instruction",
            3 => "breakpoint",
            4 => "load address misaligned",
            5 => "load access fault",
            6 => "store/AMO address misaligned",
            7 => "store/AMO access fault",
            8 => "environment call from U-mode",
            9 => "environment call from S-mode",
            11 => "environment call from M-mode",
            12 => "instruction page fault",
            13 => "load page fault",
            15 => "store/AMO page fault",
            _ => return None,
        }
    };
    Some(name)
}

/// Name of a riscv64 Linux system call (the asm-generic numbering); only
/// the common ones, since a name is a convenience and the number is kept.
pub fn syscall_name(number: u64) -> Option<&'static str> {
    Some(match number {
        17 => "getcwd",
        23 => "dup",
        24 => "dup3",
        25 => "fcntl",
        29 => "ioctl",
        34 => "mkdirat",
        35 => "unlinkat",
        48 => "faccessat",
        49 => "chdir",
        56 => "openat",
        57 => "close",
        59 => "pipe2",
        61 => "getdents64",
        62 => "lseek",
        63 => "read",
        64 => "write",
        65 => "readv",
        66 => "writev",
        67 => "pread64",
        68 => "pwrite64",
        72 => "pselect6",
        73 => "ppoll",
        78 => "readlinkat",
        79 => "newfstatat",
        80 => "fstat",
        93 => "exit",
        94 => "exit_group",
        96 => "set_tid_address",
        98 => "futex",
        99 => "set_robust_list",
        101 => "nanosleep",
        113 => "clock_gettime",
        115 => "clock_nanosleep",
        124 => "sched_yield",
        129 => "kill",
        134 => "rt_sigaction",
        135 => "rt_sigprocmask",
        139 => "rt_sigreturn",
        160 => "uname",
        172 => "getpid",
        173 => "getppid",
        174 => "getuid",
        175 => "geteuid",
        176 => "getgid",
        177 => "getegid",
        178 => "gettid",
        214 => "brk",
        215 => "munmap",
        220 => "clone",
        221 => "execve",
        222 => "mmap",
        226 => "mprotect",
        233 => "madvise",
        260 => "wait4",
        261 => "prlimit64",
        278 => "getrandom",
        291 => "statx",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(cause_name(true, 5), Some("supervisor timer interrupt"));
        assert_eq!(cause_name(false, 8), Some("environment call from U-mode"));
        assert_eq!(cause_name(false, 10), None);
        assert_eq!(syscall_name(173), Some("getppid"));
        assert_eq!(syscall_name(64), Some("write"));
        assert_eq!(syscall_name(100_000), None);
    }

    #[test]
    fn event_json_shape() {
        let e = Event { hart: 1, cycle: 10, kind: EventKind::Syscall { number: 64 } };
        let j = serde_json::to_string(&e).unwrap();
        assert_eq!(j, r#"{"hart":1,"cycle":10,"kind":{"type":"syscall","number":64}}"#);
        assert_eq!(serde_json::from_str::<Event>(&j).unwrap(), e);
    }
}
