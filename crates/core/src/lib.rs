//! The hart: registers, CSRs, privilege modes, traps, MMU, execution.
//!
//! One [`Hart`] is an RV64IMAFDC hart with Zicsr, Zifencei, Zicntr, Zihpm
//! (counters 3..31 count what the timing model reports for the event
//! written to `mhpmeventN`), Sstc, M/S/U modes, Sv39/Sv48 (A/D set by
//! hardware) and 16 PMP entries. It runs until a cycle budget or an event
//! the machine must handle; see [`Hart::run`] and [`Exit`].
//!
//! How it is fast:
//! * Decoded blocks, cached by physical address (`exec::cache`) in a cache
//!   the harts of a machine share ([`Hart::share_code_with`]), with a
//!   first level of each hart's own keyed by virtual pc. Blocks run
//!   through conditional branches and end at jumps, system instructions,
//!   64 instructions or the page end. Interrupts, the budget and code
//!   changes are checked between blocks only.
//! * A software TLB per access kind and translation context (U, S, S+SUM,
//!   M) holding host addresses for RAM pages; PMP is checked when an entry
//!   is filled (pages PMP splits are never cached). Flushing is O(1).
//! * Code changes: every store to a page holding decoded code goes through
//!   `GuestRam::note_store` (the store TLB's entries of such pages carry
//!   `mmu::TLB_CODE`, which keeps those stores off the fast paths, whose
//!   only test is the tag's); the hart drops the blocks of just the written
//!   pages (using `GuestRam::code_write`), on `fence.i` or before its next
//!   block, whichever comes first (the first hart sharing the cache to look
//!   drops them for all: the others' first levels empty at their next look).
//!
//! LR/SC: a hart holds at most one reservation (a physical address). It is
//! dropped whenever `run` starts a slice, so a store by another hart or by
//! DMA, which can only happen between slices, always makes a later SC
//! fail. `resume` (after a stop that only looked at the hart) keeps it.
//! Misaligned LR raises load-address-misaligned, misaligned SC/AMO
//! store/AMO-address-misaligned; ordinary misaligned accesses are performed
//! (also across pages; device accesses must be aligned).
//!
//! Instruction fetch from anything but RAM is an instruction access fault.

mod csr;
mod exec;
mod fp;
mod mem;
mod mmu;
mod pmp;
mod state;
#[cfg(test)]
mod tests;
mod trap;

use hs_bus::GuestRam;
pub use hs_timing::{Atomic, TimingModel, TrapInfo};

pub use exec::{
    CheckKind, CheckRecord, Engine, NoPause, Pause, TranslationStats, BLOCK_CACHE_OPS_MAX,
    BLOCK_CACHE_OPS_MIN, TRANSLATE_AFTER, TRANSLATE_AFTER_HOOKED,
};
pub use pmp::PMP_ENTRIES;
pub use state::HartState;
pub use trap::{
    CAUSE_BREAKPOINT, CAUSE_FETCH_ACCESS, CAUSE_FETCH_PAGE_FAULT, CAUSE_ILLEGAL_INSN,
    CAUSE_LOAD_ACCESS, CAUSE_LOAD_PAGE_FAULT, CAUSE_MACHINE_ECALL, CAUSE_MISALIGNED_FETCH,
    CAUSE_MISALIGNED_LOAD, CAUSE_MISALIGNED_STORE, CAUSE_STORE_ACCESS, CAUSE_STORE_PAGE_FAULT,
    CAUSE_SUPERVISOR_ECALL, CAUSE_USER_ECALL,
};

/// ISA string the device tree advertises (`riscv,isa`).
pub const ISA_STRING: &str = "rv64imafdc_zicntr_zicsr_zifencei_zihpm_sscofpmf_sstc";
/// Extension names for `riscv,isa-extensions`.
pub const ISA_EXTENSIONS: &[&str] = &[
    "i", "m", "a", "f", "d", "c", "zicntr", "zicsr", "zifencei", "zihpm", "sscofpmf", "sstc",
];

/// Static configuration of one hart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HartConfig {
    pub hart_id: u64,
    /// `time` CSR = cycle / cycles_per_tick.
    pub cycles_per_tick: u64,
}

/// Privilege mode.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Priv {
    User = 0,
    Supervisor = 1,
    Machine = 3,
}

impl Priv {
    /// From an xPP field; the reserved value 2 maps to User (least privilege).
    pub(crate) fn from_bits(b: u64) -> Priv {
        match b & 3 {
            3 => Priv::Machine,
            1 => Priv::Supervisor,
            _ => Priv::User,
        }
    }
}

/// A marker HINT (see docs/markers.md) that retired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkerCall {
    /// imm - 0x480.
    pub op: u16,
    /// a0..a3 at retirement.
    pub args: [u64; 4],
}

/// Why `run` returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Reached `until_cycle`.
    Budget,
    /// Executed WFI and no interrupt is pending; machine may fast-forward.
    Idle,
    /// The marker HINT retired (pc already advanced).
    Marker(MarkerCall),
    /// An MMIO write reported irq_changed; machine re-evaluates interrupts now.
    IrqCheck,
    /// An MMIO write reported stop.
    Stop,
}

/// Counters of the hart's internal slow paths (for tuning and reports;
/// none of them is guest-visible).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HartStats {
    /// Blocks decoded (block-cache misses).
    pub blocks_decoded: u64,
    /// Whole block-cache flushes (fence.i, stores to code pages, arena full).
    pub block_flushes: u64,
    /// Page-table walks (software-TLB misses that needed translation).
    pub page_walks: u64,
    /// Exceptions taken.
    pub exceptions: u64,
    /// Interrupts taken.
    pub interrupts: u64,
    /// TLB flushes (sfence.vma, satp, PMP or MXR changes), whole or of
    /// one page.
    pub tlb_flushes: u64,
    /// Of those, the flushes of one page (`sfence.vma` with an address).
    #[serde(default)]
    pub tlb_page_flushes: u64,
    /// Code pages whose blocks were dropped because the page was written.
    pub code_invalidations: u64,
}

/// `Hart::checks`: interrupt inputs or enables may have changed.
pub(crate) const CHECK_IRQ: u8 = 1;
/// `Hart::checks`: a store may have hit a page holding decoded code.
pub(crate) const CHECK_CODE: u8 = 2;

/// One RISC-V hart.
pub struct Hart<T: TimingModel = Atomic> {
    pub timing: T,
    /// x0..x31, then the write sink for cached rd = x0 (see `exec::SINK`);
    /// 256 slots so any u8 index is in bounds without a check.
    x: [u64; 256],
    pc: u64,
    /// Local time in cycles.
    cycle: u64,
    /// Cycles in which nothing retired (idle, traps, timing-model stalls);
    /// instret = cycle - stall.
    stall: u64,
    /// While a system, atomic or FP instruction executes (`exec_rare`):
    /// the cycle it began at and what its `fetch` and `insn` charged (added
    /// when it retires), for [`TimingModel::clock`].
    insn_start: u64,
    insn_extra: u64,
    prv: Priv,
    fetch_ctx: usize,
    data_ctx: usize,
    tlb: Box<mmu::Tlb>,
    /// The RAM's `code_marks` when store entries were last flagged
    /// against code pages (see `Hart::flag_code_stores`).
    code_marks_seen: u64,
    blocks: exec::Blocks,
    ram: GuestRam,
    ram_base: u64,
    ram_host: *mut u8,
    f: [u64; 32],
    csr: csr::Csrs,
    pmp: pmp::Pmp,
    cfg: HartConfig,
    stimecmp_cycle: u64,
    /// LR reservation (physical address).
    reservation: Option<u64>,
    /// Cycle of the run loop's next look for hpm counter overflow (MAX:
    /// no counter is watched); kept here so `resume` goes on exactly.
    hpm_check_at: u64,
    /// Set by an instruction that retires and must end the run.
    exit: Option<Exit>,
    /// Work the run loop must do before the next block (CHECK_* bits).
    checks: u8,
    /// Everything the virtual-pc block lookup depends on (see `refresh_stamp`).
    fetch_stamp: u64,
    stats: HartStats,
    /// Which engine runs instructions (see `exec::reference`).
    engine: Engine,
    /// Per-step records for a differential check; None normally.
    check_log: Option<Vec<CheckRecord>>,
    /// What translated code and its helpers share (see `exec::jit`).
    jit_frame: exec::JitFrame,
}

/// Whose view of guest memory a [`PageReader`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// As a load at the hart's current privilege ([`Hart::read_virt`]).
    Current,
    /// The supervisor's, through the current `satp` whatever the privilege
    /// ([`Hart::read_kernel_virt`]).
    Kernel,
}

/// Reads guest virtual memory as [`Hart::read_virt`] or
/// [`Hart::read_kernel_virt`] do (no A/D update, no TLB fill, no trap),
/// translating each page once: an observer walking a call stack or a
/// `task_struct` reads many small pieces of one or two pages.
pub struct PageReader<'h, T: TimingModel> {
    hart: &'h Hart<T>,
    view: View,
    /// The page last translated: its virtual page number and the host
    /// address of its first byte (4 KiB of guest RAM, checked when found).
    /// `u64::MAX` is no page number, so the reader starts with none.
    page: (u64, *const u8),
}

impl<T: TimingModel> PageReader<'_, T> {
    /// Host address of `va`'s byte if `len` bytes from it lie in one page
    /// of RAM; None if the page is unmapped or not RAM, or for a read
    /// across pages (`Some(None)`), which takes the slow path.
    ///
    /// Inline, with the page change out of line: a stack walk reads a
    /// frame record or two per page, so the call and its saved registers
    /// would cost more than the test.
    #[inline(always)]
    fn in_page(&mut self, va: u64, len: usize) -> Option<Option<*const u8>> {
        let off = (va & 0xfff) as usize;
        if off + len > 4096 {
            return Some(None);
        }
        if va >> 12 != self.page.0 {
            self.turn_to(va)?;
        }
        // SAFETY: `off + len` lies inside the page, which is guest RAM; the
        // hart (borrowed for the reader's life) keeps that RAM mapped.
        Some(Some(unsafe { self.page.1.add(off) }))
    }

    /// Make `va`'s page the one last translated; None if it is unmapped
    /// or not RAM.
    #[inline(never)]
    fn turn_to(&mut self, va: u64) -> Option<()> {
        let pa = match self.view {
            View::Current => self.hart.peek_ram_page(va),
            View::Kernel => self.hart.peek_kernel_ram_page(va),
        }?;
        // (peek_*_ram_page checked that the whole page is RAM)
        self.page = (va >> 12, self.hart.ram.host_ptr(pa) as *const u8);
        Some(())
    }

    /// Fill `buf` from `va`; None if any byte is unmapped or not RAM.
    pub fn read(&mut self, va: u64, buf: &mut [u8]) -> Option<()> {
        match self.in_page(va, buf.len())? {
            // SAFETY: `in_page` vouched for `buf.len()` bytes at `p`; `buf`
            // is a host buffer, not guest RAM.
            Some(p) => unsafe { std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), buf.len()) },
            None => {
                let r = match self.view {
                    View::Current => self.hart.read_virt(va, buf),
                    View::Kernel => self.hart.read_kernel_virt(va, buf),
                };
                r.ok()?
            }
        }
        Some(())
    }

    /// The `N` bytes at `va`, copied inline when they lie in one page
    /// (`read`'s copy of a length known only at run time is a `memcpy`
    /// call: most of reading a `task_struct`'s ids at every sample).
    #[inline]
    pub fn bytes<const N: usize>(&mut self, va: u64) -> Option<[u8; N]> {
        let mut b = [0u8; N];
        match self.in_page(va, N)? {
            // SAFETY: `in_page` vouched for `N` bytes at `p`.
            Some(p) => b = unsafe { (p as *const [u8; N]).read_unaligned() },
            None => self.read(va, &mut b)?,
        }
        Some(b)
    }

    /// The little-endian words at `va` and `va + 8` (a frame record: one
    /// page lookup when both lie in one page).
    #[inline]
    pub fn u64_pair(&mut self, va: u64) -> Option<(u64, u64)> {
        match self.in_page(va, 16)? {
            // SAFETY: `in_page` vouched for 16 bytes at `p`.
            Some(p) => unsafe {
                let w = p as *const u64;
                Some((
                    u64::from_le(w.read_unaligned()),
                    u64::from_le(w.add(1).read_unaligned()),
                ))
            },
            None => self.u64_pair_across(va),
        }
    }

    /// [`Self::u64_pair`] of a record that crosses a page (rare: out of line).
    #[inline(never)]
    fn u64_pair_across(&mut self, va: u64) -> Option<(u64, u64)> {
        Some((self.u64(va)?, self.u64(va.checked_add(8)?)?))
    }

    /// The little-endian word at `va`.
    #[inline]
    pub fn u64(&mut self, va: u64) -> Option<u64> {
        match self.in_page(va, 8)? {
            // SAFETY: `in_page` vouched for 8 bytes at `p`.
            Some(p) => Some(u64::from_le(unsafe { (p as *const u64).read_unaligned() })),
            None => {
                let mut b = [0u8; 8];
                self.read(va, &mut b)?;
                Some(u64::from_le_bytes(b))
            }
        }
    }
}

impl<T: TimingModel> Hart<T> {
    pub fn new(cfg: HartConfig, ram: GuestRam, timing: T) -> Self {
        let ram_host = ram.host_ptr(ram.base());
        let mut h = Hart {
            timing,
            x: [0; 256],
            pc: 0,
            cycle: 0,
            stall: 0,
            insn_start: 0,
            insn_extra: 0,
            prv: Priv::Machine,
            fetch_ctx: mmu::CTX_M,
            data_ctx: mmu::CTX_M,
            tlb: mmu::Tlb::new(),
            code_marks_seen: ram.code_marks(),
            blocks: exec::Blocks::new(),
            ram_base: ram.base(),
            ram,
            ram_host,
            f: [0; 32],
            csr: csr::Csrs::reset(),
            pmp: pmp::Pmp::default(),
            cfg,
            stimecmp_cycle: u64::MAX,
            reservation: None,
            hpm_check_at: u64::MAX,
            exit: None,
            checks: CHECK_IRQ | CHECK_CODE,
            fetch_stamp: 0,
            stats: HartStats::default(),
            engine: Engine::default(),
            check_log: None,
            jit_frame: exec::JitFrame::default(),
        };
        h.reset(0);
        h
    }

    /// M-mode, registers and CSRs at their reset values, caches empty. The
    /// hart's local time (`cycle`, `instret`) keeps running.
    pub fn reset(&mut self, pc: u64) {
        self.x = [0; 256];
        self.f = [0; 32];
        self.pc = pc;
        self.prv = Priv::Machine;
        self.csr = csr::Csrs::reset();
        self.csr.mcycle_off = 0u64.wrapping_sub(self.cycle); // mcycle restarts at 0
        self.csr.minstret_off = 0u64.wrapping_sub(self.instret());
        self.reset_hpm();
        self.pmp = pmp::Pmp::default();
        self.reservation = None;
        self.exit = None;
        self.tlb.flush();
        self.flush_blocks();
        self.update_stimecmp_cycle();
        self.update_modes();
        self.checks |= CHECK_IRQ | CHECK_CODE;
    }

    pub fn x(&self, r: usize) -> u64 {
        self.x[r & 31]
    }
    pub fn set_x(&mut self, r: usize, v: u64) {
        if r & 31 != 0 {
            self.x[r & 31] = v;
        }
    }
    /// Floating-point register `r` as raw bits (singles are NaN-boxed).
    pub fn f(&self, r: usize) -> u64 {
        self.f[r & 31]
    }
    pub fn pc(&self) -> u64 {
        self.pc
    }
    pub fn set_pc(&mut self, pc: u64) {
        self.pc = pc;
    }
    pub fn priv_mode(&self) -> Priv {
        self.prv
    }
    /// `satp` as it stands (an observer's shortcut for `csr(SATP)`).
    #[inline]
    pub fn satp(&self) -> u64 {
        self.csr.satp
    }
    /// Local time in cycles (mcycle).
    pub fn cycle(&self) -> u64 {
        self.cycle
    }
    /// Instructions retired. (`stall` goes below zero, wrapping, when a
    /// dual-issue model retires more than one instruction a cycle.)
    pub fn instret(&self) -> u64 {
        self.cycle.wrapping_sub(self.stall)
    }
    /// Idle fast-forward: time passes, nothing retires.
    pub fn advance_to(&mut self, cycle: u64) {
        if cycle > self.cycle {
            self.stall = self.stall.wrapping_add(cycle - self.cycle);
            self.cycle = cycle;
        }
    }
    /// Platform-driven pending bits in `mip` layout: MSIP(1<<3), MTIP(1<<7), SEIP(1<<9), MEIP(1<<11).
    pub fn set_platform_irqs(&mut self, bits: u64) {
        self.csr.mip_platform = bits & csr::MIP_PLATFORM;
        self.checks |= CHECK_IRQ;
    }
    /// Earliest cycle at which this hart's own timer (Sstc stimecmp) fires, if armed.
    pub fn next_timer_cycle(&self) -> Option<u64> {
        (self.csr.stce() && self.stimecmp_cycle != u64::MAX).then_some(self.stimecmp_cycle)
    }
    /// Read guest virtual memory through the current translation (as the
    /// current privilege would for a load, no A/D update, no trap). Err if
    /// any byte is unmapped or not RAM.
    pub fn read_virt(&self, va: u64, buf: &mut [u8]) -> Result<(), ()> {
        let mut done = 0usize;
        while done < buf.len() {
            let a = va.wrapping_add(done as u64);
            let chunk = ((4096 - (a & 0xfff)) as usize).min(buf.len() - done);
            if self.tlb_peek(a, self.data_ctx, &mut buf[done..done + chunk]) {
                done += chunk;
                continue;
            }
            let pa = self.translate_peek(a, mmu::KIND_LOAD).ok_or(())?;
            if !self.ram.read_bytes(pa, &mut buf[done..done + chunk]) {
                return Err(());
            }
            done += chunk;
        }
        Ok(())
    }
    /// A reader of guest virtual memory for an observer (see [`PageReader`]).
    pub fn page_reader(&self, view: View) -> PageReader<'_, T> {
        PageReader {
            hart: self,
            view,
            page: (u64::MAX, std::ptr::null()),
        }
    }
    /// Read guest virtual memory as the supervisor sees it through the
    /// current `satp`, whatever the hart's privilege now (no A/D update, no
    /// trap): the kernel's view, e.g. of a `task_struct` while the hart runs
    /// a user program or the firmware. Err if translation is off or any
    /// byte is unmapped or not RAM.
    #[allow(clippy::result_unit_err)] // as `read_virt`: readable or not is all a caller learns
    pub fn read_kernel_virt(&self, va: u64, buf: &mut [u8]) -> Result<(), ()> {
        if self.csr.satp >> 60 == 0 {
            return Err(());
        }
        let mut done = 0usize;
        while done < buf.len() {
            let a = va.wrapping_add(done as u64);
            let chunk = ((4096 - (a & 0xfff)) as usize).min(buf.len() - done);
            if self.tlb_peek(a, mmu::CTX_S, &mut buf[done..done + chunk]) {
                done += chunk;
                continue;
            }
            let w = self
                .walk(
                    a,
                    mmu::KIND_LOAD,
                    mmu::CTX_S,
                    false,
                    &mut mmu::WalkTrace::default(),
                )
                .map_err(|_| ())?;
            if !self
                .pmp
                .check(w.pa, chunk as u64, Priv::Supervisor, pmp::Perm::Read)
                || !self.ram.read_bytes(w.pa, &mut buf[done..done + chunk])
            {
                return Err(());
            }
            done += chunk;
        }
        Ok(())
    }
    /// Slow-path counters since creation.
    pub fn stats(&self) -> HartStats {
        self.stats
    }
    /// Observation: read any CSR without side effects (None if not implemented).
    pub fn csr(&self, num: u16) -> Option<u64> {
        self.csr_peek(num)
    }

    /// Tell the timing model where the clock stands inside the system
    /// instruction being executed (see [`TimingModel::clock`]).
    pub(crate) fn tell_clock(&mut self) {
        let now = self.cycle.wrapping_add(1).wrapping_add(self.insn_extra);
        self.timing.clock(self.insn_start, now);
    }

    #[inline(always)]
    pub(crate) fn charge(&mut self, extra: u64) {
        self.cycle += extra;
        self.stall = self.stall.wrapping_add(extra);
    }

    /// Recompute `fetch_stamp` after a TLB flush, a fetch-context change or
    /// a block-cache flush.
    #[inline]
    pub(crate) fn refresh_stamp(&mut self) {
        self.blocks.sync();
        self.fetch_stamp =
            self.tlb.gen_bits | ((self.fetch_ctx as u64) << 40) | self.blocks.vgen as u64;
    }

    pub(crate) fn flush_blocks(&mut self) {
        self.stats.block_flushes += 1;
        self.blocks.flush();
        self.refresh_stamp();
    }

    /// Drop decoded blocks of every page written since we last looked (all
    /// blocks if the RAM's write log no longer reaches back that far).
    pub(crate) fn drop_written_code(&mut self) {
        let now = self.ram.code_generation();
        let seen = self.blocks.code_gen_seen;
        if now == seen {
            return;
        }
        self.blocks.code_gen_seen = now;
        if now - seen > hs_bus::ram::CODE_WRITE_LOG as u64 {
            self.flush_blocks();
            return;
        }
        for gen in seen + 1..=now {
            match self.ram.code_write(gen) {
                Some(page) => self.blocks.invalidate_page(page),
                None => {
                    self.flush_blocks();
                    return;
                }
            }
        }
        self.stats.code_invalidations += now - seen;
        self.refresh_stamp();
    }

    /// A slow path wrote RAM: make the run loop compare code generations.
    #[inline]
    pub(crate) fn note_ram_write(&mut self) {
        if self.ram.code_generation() != self.blocks.code_gen_seen {
            self.checks |= CHECK_CODE;
        }
    }

    pub(crate) fn set_priv(&mut self, p: Priv) {
        if self.csr.hpm_mode_filter {
            // Sscofpmf mode filtering: counters stop or resume at the switch.
            self.hpm_rebase(|h| h.prv = p);
        } else {
            self.prv = p;
        }
        self.checks |= CHECK_IRQ;
    }
}

/// Where two of the per-hart fields translated code and the run loop store
/// to and load from on every block (the cycle count, the stall, the
/// pending checks, the fetch stamp, the guest registers and the translated
/// code's frame) sit a multiple of 4 KiB apart in `Hart<T>`, named; None
/// if no two do. An x86 host takes a load as waiting on an unrelated store
/// to the same low 12 address bits ("4K aliasing"): with the hart's cycle
/// count and stall exactly 4 KiB past the frame's pc and block pc, the
/// in-order P87 boot ran about 10 % and the atomic one about 35 % slower
/// (docs/engine-speed.md, 12-06). Public so that the machine can check
/// the hart types it builds (its models wrap the timing model).
#[doc(hidden)]
pub fn hot_fields_alias<T: TimingModel>() -> Option<String> {
    use std::mem::{offset_of, size_of};
    let frame = offset_of!(Hart<T>, jit_frame);
    let x = offset_of!(Hart<T>, x);
    let mut hot: Vec<(String, usize)> = vec![
        ("cycle".into(), offset_of!(Hart<T>, cycle)),
        ("stall".into(), offset_of!(Hart<T>, stall)),
        ("checks".into(), offset_of!(Hart<T>, checks)),
        ("fetch_stamp".into(), offset_of!(Hart<T>, fetch_stamp)),
    ];
    hot.extend(
        (0..size_of::<exec::JitFrame>() / 8).map(|i| (format!("frame+{}", 8 * i), frame + 8 * i)),
    );
    hot.extend((0..32).map(|i| (format!("x{i}"), x + 8 * i)));
    for (i, (a, pa)) in hot.iter().enumerate() {
        for (b, pb) in &hot[i + 1..] {
            let d = pa.abs_diff(*pb);
            // (8-byte fields: the low 12 bits of two accesses overlap)
            let near = d % 4096 < 8 || d % 4096 > 4096 - 8;
            if d >= 4096 && near {
                return Some(format!(
                    "{a} (at {pa}) and {b} (at {pb}) are {d} bytes apart in the hart"
                ));
            }
        }
    }
    None
}
