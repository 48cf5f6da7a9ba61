//! Which Linux task a hart runs, read from the guest kernel itself.
//!
//! RISC-V Linux keeps the current `task_struct *` in `tp` while a hart runs
//! in the kernel (S-mode) and in `sscratch` while it runs a user program
//! (the trap entry swaps the two). In M-mode OpenSBI leaves both as they were
//! except at the very edges of its trap handler, where `tp` briefly holds
//! its own (physical, lower-half) pointer; the same two registers are read
//! there, and failing both the hart is charged to the task it last ran — the
//! task the firmware call or interrupt is serving. The task's `pid`, `tgid` and
//! `comm` are read from guest memory through the hart's page table as the
//! kernel sees it, at offsets the kernel's BTF gives ([`TaskLayout`]).
//!
//! The few instructions of the trap entry before the swap hold the user's
//! `tp` in S-mode; a candidate pointer must be a kernel (upper-half),
//! aligned address whose fields read back sanely, else the other register
//! (and then the last task seen) is used. The idle task (pid 0) is
//! `swapper/N` for hart N, as perf names it per CPU. Nothing here runs
//! unless a sample is taken or a timeline asks for task switches.

use hs_core::{Hart, Priv, View};
use hs_observe::{Task, TaskLayout};
use hs_timing::TimingModel;

/// `sscratch`'s CSR number.
const CSR_SSCRATCH: u16 = 0x140;
/// Largest pid Linux hands out (`PID_MAX_LIMIT`, 4 million on 64-bit).
const PID_MAX: u32 = 4 << 20;

/// A task as last read: where, what it was named, and its `comm` bytes
/// as read (up to the layout's length).
struct LastTask {
    ptr: u64,
    task: Task,
    raw: [u8; TaskLayout::MAX_COMM as usize],
}

/// Reads task identities; remembers each hart's last task for M-mode.
pub struct TaskReader {
    layout: TaskLayout,
    /// Per hart: the last task read in S or U mode.
    last: Vec<Option<LastTask>>,
    /// Per hart: the task last reported as switched to (timeline).
    reported: Vec<Option<Task>>,
}

impl TaskReader {
    pub fn new(layout: TaskLayout, harts: usize) -> TaskReader {
        TaskReader {
            layout,
            last: (0..harts).map(|_| None).collect(),
            reported: vec![None; harts],
        }
    }

    pub fn layout(&self) -> TaskLayout {
        self.layout
    }

    /// The task on hart `h` now (M-mode: the one it last ran in S or U).
    pub fn current<T: TimingModel>(&mut self, h: usize, hart: &Hart<T>) -> Option<Task> {
        let found = match hart.priv_mode() {
            // The firmware (OpenSBI) swaps its own pointer into `tp` only for
            // the first and last instructions of its trap handler, so in M-mode
            // `tp` or `sscratch` usually still names the task being served.
            Priv::Machine | Priv::Supervisor => {
                // Before the MMU is on, tp holds what early boot put there.
                if hart.satp() >> 60 == 0 {
                    return None;
                }
                self.read(h, hart, hart.x(4))
                    .or_else(|| self.read(h, hart, hart.csr(CSR_SSCRATCH).unwrap_or(0)))
            }
            Priv::User => self.read(h, hart, hart.csr(CSR_SSCRATCH).unwrap_or(0)),
        };
        match found {
            Some(t) => Some(t),
            None => self.last.get(h)?.as_ref().map(|l| l.task.clone()),
        }
    }

    /// The task on hart `h` if it differs from the one last reported by
    /// this function (M-mode and unreadable moments report nothing).
    pub fn switched<T: TimingModel>(&mut self, h: usize, hart: &Hart<T>) -> Option<Task> {
        if hart.priv_mode() == Priv::Machine {
            return None;
        }
        let now = self.current(h, hart)?;
        let slot = self.reported.get_mut(h)?;
        if slot.as_ref() == Some(&now) {
            return None;
        }
        *slot = Some(now.clone());
        Some(now)
    }

    /// The task at `ptr`, if it is a plausible `task_struct`; remembered
    /// as hart `h`'s last task.
    fn read<T: TimingModel>(&mut self, h: usize, hart: &Hart<T>, ptr: u64) -> Option<Task> {
        if ptr >> 63 != 1 || ptr & 7 != 0 {
            return None;
        }
        let l = self.layout;
        let mut view = hart.page_reader(View::Kernel);
        let mut word = |off: u32| -> Option<u32> {
            Some(u32::from_le_bytes(
                view.bytes(ptr.checked_add(off as u64)?)?,
            ))
        };
        let (tid, pid) = (word(l.pid)?, word(l.tgid)?);
        let mut raw = [0u8; TaskLayout::MAX_COMM as usize];
        let raw = &mut raw[..l.comm_len as usize];
        let comm = ptr.checked_add(l.comm as u64)?;
        // (Linux's TASK_COMM_LEN: a copy of fixed length)
        if raw.len() == 16 {
            raw.copy_from_slice(&view.bytes::<16>(comm)?);
        } else {
            view.read(comm, raw)?;
        }
        // The task this hart ran last time (the usual case), its bytes
        // unchanged: what was checked and named then holds now.
        if let Some(Some(last)) = self.last.get(h) {
            if last.ptr == ptr
                && last.task.pid == pid
                && last.task.tid == tid
                && last.raw[..raw.len()] == *raw
            {
                return Some(last.task.clone());
            }
        }
        self.read_new(h, ptr, pid, tid, raw)
    }

    /// A task other than hart `h`'s last, or its name changed: checked,
    /// named and remembered. Out of line: most samples find the last task,
    /// and the code a sample runs is kept small.
    #[cold]
    #[inline(never)]
    fn read_new(&mut self, h: usize, ptr: u64, pid: u32, tid: u32, raw: &[u8]) -> Option<Task> {
        if tid > PID_MAX || pid > PID_MAX || (tid == 0) != (pid == 0) {
            return None;
        }
        let name = comm_name(raw)?;
        // Idle: the kernel names it `swapper` until the scheduler starts,
        // then `swapper/CPU` by its own CPU number; name it by the hart, as
        // the sample's CPU column is.
        let comm = if tid == 0 {
            format!("swapper/{h}").into()
        } else {
            match self.last.get(h) {
                // the same name as before: share it
                Some(Some(last)) if last.task.tid != 0 && last.task.comm.as_bytes() == name => {
                    last.task.comm.clone()
                }
                _ => String::from_utf8_lossy(name).into(),
            }
        };
        let t = Task { pid, tid, comm };
        if let Some(slot) = self.last.get_mut(h) {
            let mut keep = [0u8; TaskLayout::MAX_COMM as usize];
            keep[..raw.len()].copy_from_slice(raw);
            *slot = Some(LastTask {
                ptr,
                task: t.clone(),
                raw: keep,
            });
        }
        Some(t)
    }
}

/// `comm` up to its NUL; None unless it is printable ASCII (a wrong pointer
/// reads garbage).
fn comm_name(raw: &[u8]) -> Option<&[u8]> {
    let end = raw.iter().position(|&b| b == 0)?;
    let name = &raw[..end];
    if name.is_empty() || !name.iter().all(|&b| (0x20..0x7f).contains(&b)) {
        return None;
    }
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hs_bus::{Access, BusFault, GuestRam, SystemBus, WriteEffect};
    use hs_core::HartConfig;
    use hs_timing::Atomic;
    use std::sync::Arc;

    const RAM: u64 = 0x8000_0000;
    /// Kernel virtual base: a 1 GiB page at this address maps RAM.
    const KVA: u64 = 0xffff_ffc0_0000_0000;
    const LAYOUT: TaskLayout = TaskLayout {
        pid: 0x10,
        tgid: 0x14,
        comm: 0x20,
        comm_len: 16,
        size: 0x100,
    };

    struct NoDevices;
    impl SystemBus for NoDevices {
        fn mmio_read(&mut self, _: Access, pa: u64, _: u8) -> Result<u64, BusFault> {
            Err(BusFault::Unmapped(pa))
        }
        fn mmio_write(
            &mut self,
            _: Access,
            pa: u64,
            _: u8,
            _: u64,
        ) -> Result<WriteEffect, BusFault> {
            Err(BusFault::Unmapped(pa))
        }
    }

    fn csrw(csr: u32, rs: u32) -> u32 {
        0x73 | 1 << 12 | rs << 15 | csr << 20
    }

    /// A task_struct at RAM offset `off`; returns its kernel address.
    fn task(ram: &GuestRam, off: u64, tid: u32, pid: u32, comm: &[u8]) -> u64 {
        ram.write(RAM + off + 0x10, 4, tid as u64);
        ram.write(RAM + off + 0x14, 4, pid as u64);
        let mut c = [0u8; 16];
        c[..comm.len()].copy_from_slice(comm);
        ram.write_bytes(RAM + off + 0x20, &c);
        KVA + off
    }

    /// A hart that sets up Sv39 (RAM at `KVA` for the kernel, identity
    /// mapped for code), then `mret`s to `mode` (1 S, 0 U) at RAM+0x100
    /// with `tp` and `sscratch` as given, where a `wfi` ends the first run;
    /// the next run `ecall`s back to M, which loops at RAM+0x200.
    fn machine(mode: u64, tp: u64, sscratch: u64) -> (Hart<Atomic>, GuestRam) {
        let ram = GuestRam::new(RAM, 0x10000).unwrap();
        let root = RAM + 0x1000;
        ram.write(
            root + 8 * ((KVA >> 30) & 0x1ff),
            8,
            (RAM >> 12) << 10 | 0xc7,
        );
        let user = if mode == 0 { 0x10 } else { 0 };
        ram.write(root + 8 * 2, 8, (RAM >> 12) << 10 | 0xcf | user);
        let prog = [
            csrw(0x3b0, 5),
            csrw(0x3a0, 6),
            csrw(0x180, 7),
            csrw(0x140, 28),
            csrw(0x300, 10),
            csrw(0x341, 11),
            csrw(0x305, 12),
            0x3020_0073,
        ];
        for (i, w) in prog.iter().enumerate() {
            ram.write(RAM + 4 * i as u64, 4, *w as u64);
        }
        // wfi ends the run (U-mode may not wfi: it loops instead).
        ram.write(RAM + 0x100, 4, if mode == 0 { 0x6f } else { 0x1050_0073 });
        ram.write(RAM + 0x104, 4, 0x73); // ecall
        ram.write(RAM + 0x200, 4, 0x6f); // j .
        let mut h = Hart::new(
            HartConfig {
                hart_id: 0,
                cycles_per_tick: 100,
            },
            ram.clone(),
            Atomic,
        );
        h.reset(RAM);
        for (r, v) in [
            (5, u64::MAX >> 10),
            (6, 0x1f),
            (7, 8 << 60 | root >> 12),
            (28, sscratch),
            (10, mode << 11),
            (11, RAM + 0x100),
            (12, RAM + 0x200),
            (4, tp),
        ] {
            h.set_x(r, v);
        }
        (h, ram)
    }

    #[test]
    fn kernel_mode_reads_tp_and_firmware_keeps_the_last_task() {
        let (mut h, ram) = machine(1, KVA + 0x4000, 0);
        let a = task(&ram, 0x4000, 17, 12, b"kworker/0:1");
        assert_eq!(a, KVA + 0x4000);
        let mut r = TaskReader::new(LAYOUT, 1);
        // M-mode at reset: nothing seen yet.
        assert_eq!(r.current(0, &h), None);
        h.run(&mut NoDevices, 100);
        assert_eq!(h.priv_mode(), Priv::Supervisor);
        let want = Task {
            pid: 12,
            tid: 17,
            comm: "kworker/0:1".into(),
        };
        assert_eq!(r.current(0, &h), Some(want.clone()));
        assert_eq!(r.switched(0, &h), Some(want.clone()));
        assert_eq!(r.switched(0, &h), None, "reported once");
        // The ecall reaches M-mode (the firmware): the task stays charged.
        h.run(&mut NoDevices, 100);
        assert_eq!(
            (h.priv_mode(), h.csr(0x342)),
            (Priv::Machine, Some(9)),
            "ecall from S"
        );
        assert_eq!(r.current(0, &h), Some(want.clone()));
        assert_eq!(r.switched(0, &h), None, "M-mode reports no switch");
        // tp still names the task in the firmware: a reader that never saw
        // the hart in S-mode (a profile window opening mid-call) finds it.
        assert_eq!(TaskReader::new(LAYOUT, 1).current(0, &h), Some(want));
    }

    #[test]
    fn user_mode_and_the_trap_entry_window_use_sscratch() {
        // U-mode: tp is the program's thread pointer, sscratch the task.
        let (mut h, ram) = machine(0, 0x3f_fff0_0000, KVA + 0x5000);
        task(&ram, 0x5000, 301, 300, b"sh");
        h.run(&mut NoDevices, 100);
        assert_eq!(h.priv_mode(), Priv::User);
        let mut r = TaskReader::new(LAYOUT, 1);
        assert_eq!(
            r.current(0, &h),
            Some(Task {
                pid: 300,
                tid: 301,
                comm: "sh".into()
            })
        );

        // S-mode before the entry swaps tp and sscratch: tp is still the user's.
        let (mut h, ram) = machine(1, 0x3f_fff0_0000, KVA + 0x5000);
        task(&ram, 0x5000, 301, 300, b"sh");
        h.run(&mut NoDevices, 100);
        assert_eq!(r.current(0, &h).map(|t| t.comm), Some("sh".into()));

        // tp in the kernel half but not a task (garbage comm): sscratch wins.
        let (mut h, ram) = machine(1, KVA + 0x6000, KVA + 0x5000);
        task(&ram, 0x5000, 301, 300, b"sh");
        task(&ram, 0x6000, 5, 5, &[0xff, 0x01]);
        h.run(&mut NoDevices, 100);
        assert_eq!(r.current(0, &h).map(|t| t.tid), Some(301));
    }

    #[test]
    fn idle_is_pid_zero_and_implausible_ids_are_refused() {
        let (mut h, ram) = machine(1, KVA + 0x4000, 0);
        task(&ram, 0x4000, 0, 0, b"swapper");
        h.run(&mut NoDevices, 100);
        let mut r = TaskReader::new(LAYOUT, 1);
        let idle = r.current(0, &h).unwrap();
        assert!(idle.is_idle());
        assert_eq!(
            &*idle.comm, "swapper/0",
            "named by the hart, whatever the kernel calls it yet"
        );
        // A thread id of 0 with a process id that is not: not a task.
        task(&ram, 0x4000, 0, 9, b"odd");
        let mut fresh = TaskReader::new(LAYOUT, 1);
        assert_eq!(fresh.current(0, &h), None);
        // ... but a reader that saw the idle task keeps it.
        assert_eq!(r.current(0, &h), Some(idle));
        // A comm without a NUL in its 16 bytes is refused too.
        task(&ram, 0x4000, 3, 3, b"0123456789abcdef");
        assert_eq!(fresh.current(0, &h), None);
    }

    #[test]
    fn a_task_changed_in_place_is_read_again() {
        let (mut h, ram) = machine(1, KVA + 0x4000, 0);
        task(&ram, 0x4000, 17, 12, b"sh");
        h.run(&mut NoDevices, 100);
        let mut r = TaskReader::new(LAYOUT, 1);
        let t = |tid, pid, comm: &str| {
            Some(Task {
                pid,
                tid,
                comm: comm.into(),
            })
        };
        assert_eq!(r.current(0, &h), t(17, 12, "sh"));
        // the same task_struct: exec renames it, a new thread reuses it
        task(&ram, 0x4000, 17, 12, b"ls");
        assert_eq!(r.current(0, &h), t(17, 12, "ls"));
        task(&ram, 0x4000, 18, 12, b"ls");
        let ls = r.current(0, &h);
        assert_eq!(ls, t(18, 12, "ls"));
        // bytes after the NUL changed, the name did not: the name is shared
        ram.write_bytes(RAM + 0x4000 + 0x20 + 3, b"junk");
        let again = r.current(0, &h).unwrap();
        assert_eq!(Some(&again), ls.as_ref());
        assert!(Arc::ptr_eq(&again.comm, &ls.unwrap().comm));
        // a name that is no longer a name: the last task stays charged
        ram.write_bytes(RAM + 0x4000 + 0x20, &[0xff; 16]);
        assert_eq!(r.current(0, &h), t(18, 12, "ls"));
        assert_eq!(TaskReader::new(LAYOUT, 1).current(0, &h), None);
    }
}
