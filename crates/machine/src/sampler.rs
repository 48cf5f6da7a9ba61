//! The sampling profiler: every `period` cycles of a hart, the machine stops
//! it (its `run` budget is the next sample deadline) and records the PC,
//! privilege, `satp` and a frame-pointer call stack.
//!
//! Stacks: RISC-V frame pointers keep the return address at `fp - 8` and
//! the caller's frame pointer at `fp - 16`. Kernel chains (S-mode) follow
//! Linux's own unwinder, including its leaf-function rule; user chains
//! (U-mode) keep only links whose return address follows a call instruction
//! in the recognised binary, since BusyBox is built without frame pointers.
//! M-mode samples carry no stack. Time a hart spends idle in `wfi` is not
//! sampled (its clock is stopped, as for perf's `cycles` event).
//!
//! User binaries: every program of an image is a static non-PIE ELF at the
//! same address, so the address space's binary is recognised from the 64
//! code bytes around the sampled PC, compared with each candidate's file
//! bytes. The answer is cached per root page table and re-checked against
//! the cached binary on every user sample (a root table can be reused by a
//! later process); a change is recorded as a new [`SpaceMark`].

use std::collections::BTreeMap;
use std::sync::Arc;

use hs_core::{Hart, Priv, View};
use hs_observe::{satp_root, Privilege, Sample, UserIdentifier};
use hs_timing::TimingModel;

use crate::sample_store::SampleStore;
use crate::task::TaskReader;

/// Sampling options.
#[derive(Clone, Debug)]
pub struct SamplerConfig {
    /// Cycles between two samples of one hart.
    pub period: u64,
    /// Most return addresses kept per sample.
    pub max_depth: usize,
    /// Samples kept in all; later ones are counted, not kept.
    pub max_samples: usize,
    /// Start sampling at the first phase marker with this label (None: at reset).
    pub from_phase: Option<String>,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            period: 1024,
            max_depth: 32,
            max_samples: 8_000_000,
            from_phase: None,
        }
    }
}

/// From `cycle` on, the address space with this `satp` runs `binary`
/// (an index into the identifier's binaries; `None`: none of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpaceMark {
    pub satp: u64,
    pub cycle: u64,
    pub binary: Option<usize>,
}

/// Largest distance from `sp` a frame pointer may be: a kernel stack is
/// 16 KiB (32 KiB with KASAN), a user stack grows to 8 MiB by default.
const KERNEL_STACK_SPAN: u64 = 64 << 10;
const USER_STACK_SPAN: u64 = 8 << 20;

pub struct Sampler {
    cfg: SamplerConfig,
    next: Vec<u64>,
    /// The samples taken (kept on a second thread).
    store: SampleStore,
    /// Samples not kept because `max_samples` was reached.
    pub dropped: u64,
    /// Sample deadlines that fell into `wfi` idle time.
    pub idle_skipped: u64,
    /// Deadlines passed while one block ran past them (one sample is taken).
    pub overshot: u64,
    ident: Arc<UserIdentifier>,
    spaces: BTreeMap<u64, Option<usize>>,
    pub marks: Vec<SpaceMark>,
    /// The stack buffer, kept between samples: one made on the host stack
    /// at each sample was zeroed there (a 520-byte `memset` a sample),
    /// although nothing reads what it has not written.
    frames: Frames,
}

impl Sampler {
    pub fn new(cfg: SamplerConfig, harts: usize, ident: Arc<UserIdentifier>) -> Sampler {
        let period = cfg.period.max(1);
        let first = if cfg.from_phase.is_some() {
            u64::MAX
        } else {
            period
        };
        Sampler {
            cfg: SamplerConfig { period, ..cfg },
            next: vec![first; harts],
            store: SampleStore::new(cfg.max_samples),
            dropped: 0,
            idle_skipped: 0,
            overshot: 0,
            ident,
            spaces: BTreeMap::new(),
            marks: Vec::new(),
            frames: Frames::default(),
        }
    }

    /// Samples taken so far.
    pub fn kept(&self) -> usize {
        self.store.len()
    }

    /// The samples taken so far, in the order taken; later ones start a
    /// new list.
    pub fn take_samples(&mut self) -> Vec<Sample> {
        self.store.take()
    }

    pub fn period(&self) -> u64 {
        self.cfg.period
    }

    /// The cycle at which hart `h` must stop next.
    pub fn deadline(&self, h: usize) -> u64 {
        self.next.get(h).copied().unwrap_or(u64::MAX)
    }

    /// After hart `h` ran: take a sample if it reached its deadline, with
    /// the hart's task when `tasks` can read it.
    pub fn after_run<T: TimingModel>(
        &mut self,
        h: usize,
        hart: &Hart<T>,
        tasks: Option<&mut TaskReader>,
    ) {
        let now = hart.cycle();
        let Some(next) = self.next.get(h).copied() else {
            return;
        };
        if now < next || next == u64::MAX {
            return;
        }
        // (a deadline is nearly always passed by less than a period)
        let late = now - next;
        let missed = if late < self.cfg.period {
            0
        } else {
            late / self.cfg.period
        };
        self.overshot += missed;
        self.next[h] = next + (missed + 1) * self.cfg.period;
        if self.store.len() >= self.cfg.max_samples {
            self.dropped += 1;
            return;
        }
        self.take(h, hart, tasks);
    }

    /// A phase marker: start sampling if it is the one waited for. `cycles`
    /// are the harts' clocks at that moment.
    pub fn phase(&mut self, label: &str, cycles: &[u64]) {
        if self.cfg.from_phase.as_deref() == Some(label) {
            self.cfg.from_phase = None;
            for (n, c) in self.next.iter_mut().zip(cycles) {
                *n = c + self.cfg.period;
            }
        }
    }

    /// The harts' clocks jumped to `cycles` (a restored snapshot): the
    /// next samples are one period on from there, not the time in between.
    pub fn restart(&mut self, cycles: &[u64]) {
        for (n, c) in self.next.iter_mut().zip(cycles) {
            if *n != u64::MAX {
                *n = c.saturating_add(self.cfg.period);
            }
        }
    }

    /// Hart `h` idled (clock stopped) up to `to`: no samples for that time.
    pub fn skip_idle(&mut self, h: usize, to: u64) {
        if let Some(next) = self.next.get_mut(h) {
            if to >= *next && *next != u64::MAX {
                let n = (to - *next) / self.cfg.period + 1;
                self.idle_skipped += n;
                *next += n * self.cfg.period;
            }
        }
    }

    /// Sample hart `h` as it stands: its stack and task are read now,
    /// the rest of the work is the store's.
    fn take<T: TimingModel>(&mut self, h: usize, hart: &Hart<T>, tasks: Option<&mut TaskReader>) {
        let pc = hart.pc();
        let satp = hart.satp();
        let max = self.cfg.max_depth.min(MAX_DEPTH);
        // (a user sample's binary first: identifying it changes the sampler)
        let binary = match hart.priv_mode() {
            Priv::User => self.identify(hart, satp, pc),
            _ => None,
        };
        let stack = &mut self.frames;
        stack.n = 0;
        let privilege = match hart.priv_mode() {
            Priv::Machine => Privilege::Machine,
            Priv::Supervisor => {
                kernel_stack(hart, satp >> 60 != 0, max, stack);
                Privilege::Supervisor
            }
            Priv::User => {
                if let Some(b) = binary.and_then(|i| self.ident.binaries().get(i)) {
                    user_stack(hart, b, max, stack);
                }
                Privilege::User
            }
        };
        let task = tasks.and_then(|t| t.current(h, hart));
        self.store.push(
            h as u16,
            privilege,
            hart.cycle(),
            pc,
            satp,
            self.frames.as_slice(),
            task,
        );
    }

    /// The binary running in this address space, re-checked at `pc`.
    /// (Out of line, as `user_stack`: a kernel sample, most of them, runs
    /// none of it, and the code a sample runs is kept small.)
    #[inline(never)]
    fn identify<T: TimingModel>(&mut self, hart: &Hart<T>, satp: u64, pc: u64) -> Option<usize> {
        if self.ident.is_empty() {
            return None;
        }
        let base = pc & !63;
        let mut code = [0u8; 64];
        let root = satp_root(satp);
        let cached = self.spaces.get(&root).copied();
        if hart.read_virt(base, &mut code).is_err() {
            return cached.flatten();
        }
        if let Some(Some(b)) = cached {
            if self.ident.binaries()[b].matches(base, &code) {
                return Some(b);
            }
        }
        let found = self.ident.identify(base, &code);
        if cached != Some(found) {
            self.spaces.insert(root, found);
            self.marks.push(SpaceMark {
                satp,
                cycle: hart.cycle(),
                binary: found,
            });
        }
        found
    }
}

/// Most frames a sample keeps (whatever the configuration asks).
pub const MAX_DEPTH: usize = 64;

/// Return addresses collected on the host stack (no allocation, and no
/// clearing: a sample takes 11 frames on average of the 64 it may).
struct Frames {
    addrs: [std::mem::MaybeUninit<u64>; MAX_DEPTH],
    /// The first `n` of `addrs` are written.
    n: usize,
}

impl Default for Frames {
    fn default() -> Self {
        Frames {
            addrs: [std::mem::MaybeUninit::uninit(); MAX_DEPTH],
            n: 0,
        }
    }
}

impl Frames {
    fn len(&self) -> usize {
        self.n
    }
    fn push(&mut self, a: u64) {
        if self.n < MAX_DEPTH {
            self.addrs[self.n].write(a);
            self.n += 1;
        }
    }
    fn as_slice(&self) -> &[u64] {
        // SAFETY: the first `n` addresses are written (`push`), and
        // `MaybeUninit<u64>` has `u64`'s layout.
        unsafe { std::slice::from_raw_parts(self.addrs.as_ptr().cast::<u64>(), self.n) }
    }
}

/// The S-mode call chain, as Linux's `walk_stackframe` finds it. `paging`:
/// kernel addresses are the upper half (before `satp` is set they are
/// physical and anything goes).
fn kernel_stack<T: TimingModel>(hart: &Hart<T>, paging: bool, max: usize, out: &mut Frames) {
    let sp = hart.x(2);
    let ra_reg = hart.x(1);
    // a kernel address has the top bit set (anything does before paging)
    let top = if paging { 1u64 << 63 } else { 0 };
    let kernel = |a: u64| a & top == top && a != 0;
    // a frame pointer: a kernel address, 8-aligned, with a record below it
    let frame_pointer = |fp: u64| fp & (top | 7) == top && fp >= 16;
    let mut fp = hart.x(8);
    if max == 0 || !frame_pointer(fp) {
        return;
    }
    let mut reader = hart.page_reader(View::Current);
    // The first frame alone may be a leaf's, which saves only fp: `fp - 8`
    // then holds the caller's frame pointer (a stack address) and the
    // return address is still in ra.
    let Some((saved_fp, saved_ra)) = reader.u64_pair(fp - 16) else {
        return;
    };
    let leaf = saved_ra >= sp && saved_ra - sp < KERNEL_STACK_SPAN && saved_ra & 7 == 0;
    let (mut ra, mut next) = if leaf {
        (ra_reg, saved_ra)
    } else {
        (saved_ra, saved_fp)
    };
    let mut crossed = false;
    loop {
        if !kernel(ra) {
            break;
        }
        out.push(ra);
        // Frames move up the stack; one jump elsewhere is the switch from
        // the IRQ stack back to the task stack.
        if next <= fp {
            if crossed {
                break;
            }
            crossed = true;
        }
        fp = next;
        if out.len() >= max || !frame_pointer(fp) {
            break;
        }
        let Some((saved_fp, saved_ra)) = reader.u64_pair(fp - 16) else {
            break;
        };
        (ra, next) = (saved_ra, saved_fp);
    }
}

/// The U-mode call chain: the return address in `ra` when it is not stale,
/// then frame-pointer links, each checked to follow a call in `bin`.
#[inline(never)]
fn user_stack<T: TimingModel>(
    hart: &Hart<T>,
    bin: &hs_observe::UserBinary,
    max: usize,
    out: &mut Frames,
) {
    let pc = hart.pc();
    let sp = hart.x(2);
    let ra = hart.x(1);
    let table = bin.table();
    let function_of = |a: u64| table.lookup_symbol(a).map(|s| s.start);
    // `ra` inside the sampled function is the return from an earlier call
    // the function made, not its caller.
    let ra_fresh = bin.follows_call(ra) && function_of(ra.wrapping_sub(1)) != function_of(pc);
    if ra_fresh && max > 0 {
        out.push(ra);
    }
    let mut fp = hart.x(8);
    let mut reader = hart.page_reader(View::Current);
    let mut first = true;
    while out.len() < max && fp & 7 == 0 && fp > sp && fp - sp <= USER_STACK_SPAN {
        let Some((saved_fp, saved_ra)) = reader.u64_pair(fp - 16) else {
            break;
        };
        if !bin.follows_call(saved_ra) {
            break;
        }
        // With a fresh `ra`, the first frame's saved ra is that same caller.
        if !(first && ra_fresh && saved_ra == ra) {
            out.push(saved_ra);
        }
        first = false;
        if saved_fp <= fp {
            break;
        }
        fp = saved_fp;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hs_bus::GuestRam;
    use hs_core::HartConfig;
    use hs_observe::{SymbolTable, UserBinary};
    use hs_timing::Atomic;

    const RAM: u64 = 0x8000_0000;

    /// A hart in M-mode (addresses are physical) over a small RAM.
    fn hart() -> (Hart<Atomic>, GuestRam) {
        let ram = GuestRam::new(RAM, 0x10000).unwrap();
        let h = Hart::new(
            HartConfig {
                hart_id: 0,
                cycles_per_tick: 100,
            },
            ram.clone(),
            Atomic,
        );
        (h, ram)
    }

    /// A frame record at `fp`: the caller's fp at fp-16, the return address at fp-8.
    fn frame(ram: &GuestRam, fp: u64, prev_fp: u64, ra: u64) {
        ram.write(fp - 16, 8, prev_fp);
        ram.write(fp - 8, 8, ra);
    }

    fn unwind(h: &Hart<Atomic>) -> Vec<u64> {
        let mut f = Frames::default();
        kernel_stack(h, false, 32, &mut f);
        f.as_slice().to_vec()
    }

    #[test]
    fn kernel_chain_follows_frame_pointers() {
        let (mut h, ram) = hart();
        let (fp0, fp1, fp2) = (RAM + 0x8100, RAM + 0x8200, RAM + 0x8300);
        frame(&ram, fp0, fp1, 0xa000);
        frame(&ram, fp1, fp2, 0xb000);
        frame(&ram, fp2, 0, 0xc000);
        h.set_x(2, RAM + 0x80f0);
        h.set_x(8, fp0);
        h.set_x(1, 0xd000);
        assert_eq!(unwind(&h), vec![0xa000, 0xb000, 0xc000]);

        // A leaf saved only fp: fp-8 holds a stack address, the caller is in ra.
        frame(&ram, fp0, 0x1234, fp1);
        assert_eq!(unwind(&h), vec![0xd000, 0xb000, 0xc000]);

        // A frame pointing at itself ends (one jump back is allowed, for the
        // switch from the IRQ stack to the task stack).
        frame(&ram, fp0, fp0, 0xa000);
        assert_eq!(unwind(&h), vec![0xa000, 0xa000]);
        // Misaligned or unmapped frame pointers stop at once.
        h.set_x(8, fp0 + 4);
        assert!(unwind(&h).is_empty());
        h.set_x(8, 0x1000_0000);
        assert!(unwind(&h).is_empty());
        // Depth is bounded.
        let mut f = Frames::default();
        h.set_x(8, fp1);
        kernel_stack(&h, false, 1, &mut f);
        assert_eq!(f.as_slice(), &[0xb000]);
    }

    #[test]
    fn user_chain_keeps_only_links_that_follow_a_call() {
        let (mut h, ram) = hart();
        // a: jal ra (0x10000), c.jalr a5 (0x10004), nop; b: nops.
        let mut code = Vec::new();
        code.extend(0x008000efu32.to_le_bytes());
        code.extend(0x9782u16.to_le_bytes());
        code.extend(0x0001u16.to_le_bytes());
        code.extend([0x13, 0, 0, 0, 0x13, 0, 0, 0]);
        let table = SymbolTable::from_ranges(
            "prog",
            [
                (0x10000, 0x10008, "a".to_string()),
                (0x10008, 0x10010, "b".to_string()),
            ],
        );
        let bin = UserBinary::from_parts(table, vec![(0x10000, code)]);
        let (sp, fp, fp2) = (RAM + 0x9000, RAM + 0x9020, RAM + 0x9040);
        frame(&ram, fp, fp2, 0x10004);
        frame(&ram, fp2, 0, 0x10006);
        h.set_pc(0x1000c);
        h.set_x(2, sp);
        h.set_x(8, fp);
        h.set_x(1, 0x10004);
        let run = |h: &Hart<Atomic>| {
            let mut f = Frames::default();
            user_stack(h, &bin, 8, &mut f);
            f.as_slice().to_vec()
        };
        // ra is fresh (it returns into a, the sample is in b) and equals the
        // first frame's saved ra, which is not repeated.
        assert_eq!(run(&h), vec![0x10004, 0x10006]);
        // A stale ra (inside the sampled function) is left out.
        h.set_pc(0x10002);
        assert_eq!(run(&h), vec![0x10004, 0x10006]);
        h.set_x(1, 0x10006);
        assert_eq!(run(&h), vec![0x10004, 0x10006]);
        // Without frame pointers s0 holds data: a link not after a call ends the chain.
        h.set_pc(0x1000c);
        h.set_x(1, 0x1000a);
        frame(&ram, fp, fp2, 0x1000a);
        assert!(run(&h).is_empty());
    }

    #[test]
    fn deadlines_are_sampled_merged_or_skipped_as_idle() {
        let (mut h, _) = hart();
        let mut s = Sampler::new(
            SamplerConfig {
                period: 100,
                ..SamplerConfig::default()
            },
            1,
            Arc::new(UserIdentifier::default()),
        );
        assert_eq!(s.deadline(0), 100);
        h.advance_to(99);
        s.after_run(0, &h, None);
        assert_eq!(s.kept(), 0);
        h.advance_to(250);
        s.after_run(0, &h, None);
        assert_eq!((s.kept(), s.overshot, s.deadline(0)), (1, 1, 300));
        let taken = s.take_samples();
        assert_eq!(
            (taken.len(), taken[0].cycle, taken[0].privilege),
            (1, 250, Privilege::Machine)
        );
        s.skip_idle(0, 650);
        assert_eq!((s.idle_skipped, s.deadline(0)), (4, 700));
        s.skip_idle(0, 690);
        assert_eq!(s.idle_skipped, 4);

        // Waiting for a phase: nothing until the marker.
        let mut w = Sampler::new(
            SamplerConfig {
                period: 100,
                from_phase: Some("go".into()),
                ..SamplerConfig::default()
            },
            1,
            Arc::new(UserIdentifier::default()),
        );
        w.skip_idle(0, 10_000);
        w.after_run(0, &h, None);
        assert!(w.kept() == 0 && w.idle_skipped == 0);
        w.phase("other", &[250]);
        assert_eq!(w.deadline(0), u64::MAX);
        w.phase("go", &[250]);
        assert_eq!(w.deadline(0), 350);

        // The sample limit counts what it drops.
        let mut l = Sampler::new(
            SamplerConfig {
                period: 10,
                max_samples: 1,
                ..SamplerConfig::default()
            },
            1,
            Arc::new(UserIdentifier::default()),
        );
        l.after_run(0, &h, None);
        h.advance_to(300);
        l.after_run(0, &h, None);
        assert_eq!((l.kept(), l.dropped), (1, 1));
        assert_eq!(l.take_samples().len(), 1);
    }
}
