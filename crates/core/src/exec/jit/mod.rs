//! The translating engine ([`Engine::Translated`]): a block of the block
//! cache that has run [`TRANSLATE_AFTER`] times is compiled to x86-64 (see [`emit`])
//! and from then on runs as host code; cold blocks stay with the block
//! interpreter. A timing model's per-instruction hooks are either skipped
//! ([`TimingModel::hooks_skippable`]: the atomic model) or called by the
//! translated code as the interpreter calls them, with the model's own
//! shortcuts inline ([`TimingModel::hooks_inlinable`]: the single-issue
//! in-order model); a model that offers neither (the pipelined one, a
//! model recording every instruction) stays with the interpreter: what
//! its hooks see must not depend on which engine ran.
//!
//! What a translated block does is the interpreter's block semantics
//! exactly: the same ops (decoded once, by the block cache), the same
//! TLB fast path for loads and stores (the same entries, so translated
//! code reaches only the guest RAM the TLB maps, as the interpreter does),
//! everything else through the interpreter's own [`Hart::execute`], and
//! chaining between blocks under the same conditions (budget, `checks`).
//! With a check log on, translated code logs every step, so
//! `hs_machine::lockstep` compares it against the reference engine.
//!
//! Compiled code is keyed by the block's first op in the cache's arena,
//! which is only reused after the arena is emptied: emptying it (a flush,
//! a full arena) drops every translation; dropping one page's blocks
//! leaves their code unreachable, like their ops.

#[cfg(target_arch = "x86_64")]
mod emit;

use std::time::Instant;

use hs_bus::SystemBus;
use hs_isa::Insn;
use hs_timing::{InlineHooks, JumpHint, MemKind, TimingModel};

use super::reference::CheckKind;
use super::semantics::Flow;
use super::{Blocks, Engine, Op};
use crate::mmu::KIND_LOAD;
use crate::{Exit, Hart};

/// Runs of a block before it is translated, unless
/// [`Hart::set_translate_after`] chose another count. Translating a block
/// takes about 4–5 µs, what a few hundred runs of a short block save over
/// the interpreter: on the debian P87 boot 16 translated 64,000 blocks in
/// 0.27 s, 256 translates 9,000 in 0.05 s, and the boot is about 15%
/// faster (128 and 512 were as fast as 256).
pub const TRANSLATE_AFTER: u32 = 256;
/// The same for a hooked model (the in-order one), whose translated code
/// is larger (its hooks' tests and calls) and saves less per run: on that
/// boot 1,024 took 5 % less host CPU than 256 (medians of 5 interleaved
/// runs, 4.16 s against 4.38 s), 128 6 % more, 4,096 as much as 1,024.
pub const TRANSLATE_AFTER_HOOKED: u32 = 1024;
/// A slot with this bit holds the offset of the block's code.
const COMPILED: u32 = 1 << 31;
/// Executable memory per block cache (the harts of a machine share one:
/// see `Hart::share_code_with`), filled as a ring: after a reset new code
/// goes on where the dropped code ended, and only a full region starts
/// again from its beginning (so code is written over code that ran only
/// that much translating later: see `sync_core`).
const REGION_BYTES: usize = 64 << 20;
/// The region's first bytes hold the routines every block shares
/// ([`emit::Runtime`]); the ring of blocks' code starts after them.
const RUNTIME_BYTES: usize = 4096;
/// Ops copied for the helpers (fixed capacity: their addresses are in code).
const OP_COPIES: usize = 1 << 18;

/// What translated code and its helpers share, in the hart: the cycle
/// count and next pc on exit, the block pc, the data TLB's load row and
/// generation (refreshed after every helper), and the exit of a block a
/// helper ended.
#[repr(C)]
#[derive(Default)]
pub(crate) struct JitFrame {
    cyc: u64,
    pc: u64,
    base_pc: u64,
    row: u64,
    gen: u64,
    /// the block's physical address (for the hooks of helper-run ops)
    base_pa: u64,
    /// the cycle count up to which the timing model has been told of
    /// every instruction (see `TimingModel::skipped`)
    seen: u64,
    /// the run's budget: chaining stops when the cycle count reaches it
    limit: u64,
    /// the link cell of the exit the block left by (0: none), for
    /// `exec_translated` to fill (see `emit`'s chaining)
    link: u64,
    /// the bus the block was entered with (for helper calls)
    bus: u64,
    /// the fetch stamp the running block was entered under (a block that
    /// jumps to its own start goes on while it holds, see `emit`)
    stamp: u64,
    /// this hart's first level of the block cache (code may be shared
    /// between harts: link cells hold offsets into it)
    vcache: u64,
    /// the jit's slots and their number, for `jalr`'s chaining in code
    slots: u64,
    slots_len: u64,
    /// the timing model's branch counter table (`InlineBranch`), asked
    /// for each time translated code is entered
    bp_table: u64,
    /// the timing model's BTB (`InlineJump`), asked for as `bp_table` is
    btb_table: u64,
    /// the timing model's return-address stack (`InlineJalr`), asked
    /// for as `bp_table` is
    ras_stack: u64,
    /// the timing model's I-TLB and D-TLB entries (`InlineTlb`), asked
    /// for as `bp_table` is
    tlb_entries: [u64; 2],
    /// the timing model's L1I's and L1D's sets and most recent ways
    /// (`InlineL1`), asked for as `bp_table` is
    l1_sets: [[u64; 2]; 2],
    /// a host address in guest RAM plus this is its physical address
    /// (the same for the hart's life; set before code is translated)
    host_to_pa: u64,
    /// by `2 * counter + taken` (`InlineBranch`): the counter after it,
    /// the cycles it costs, then whether it mispredicted (a byte each),
    /// for translated code to look up (filled before a block is
    /// translated)
    bp_steps: [u8; 24],
    /// hooked models: the data line (virtual address >> the L1D's line
    /// shift) of the last load or store whose shortcut passed in the
    /// running block, or `u64::MAX` once a hook or the interpreter may
    /// have run since (see `emit`'s same-line accesses). Read only where
    /// the running block wrote it.
    last_line: u64,
    exit: Option<Exit>,
}

/// Offsets and addresses the emitter builds code from.
pub(super) struct Layout {
    /// rbx, while a block runs, is the hart's address plus this; every
    /// hart offset here is from rbx
    rebase: i32,
    x: i32,
    f_cyc: i32,
    f_pc: i32,
    f_base_pc: i32,
    f_row: i32,
    f_gen: i32,
    f_base_pa: i32,
    f_limit: i32,
    f_link: i32,
    f_bus: i32,
    f_stamp: i32,
    f_vcache: i32,
    f_slots: i32,
    f_slots_len: i32,
    f_bp_table: i32,
    f_btb_table: i32,
    f_ras_stack: i32,
    /// the I-TLB's entries, then the D-TLB's
    f_tlb_entries: [i32; 2],
    /// the L1I's sets and most recent ways, then the L1D's
    f_l1_sets: [[i32; 2]; 2],
    f_bp_steps: i32,
    f_host_to_pa: i32,
    f_last_line: i32,
    /// the executable region (mapped before any code is emitted)
    region: u64,
    /// where the code being emitted will be installed
    code_at: u64,
    /// the shared routines (all 0 while they are emitted)
    rt: emit::Runtime,
    checks: i32,
    fetch_stamp: i32,
    /// the first level of the block cache (see `Blocks::vcache_layout`)
    vcache: (u32, u32, [i32; 4]),
    op_helper: usize,
    mem_helper: usize,
    log_helper: usize,
    log: bool,
    /// the model's hooks, when translated code calls them
    hooks: Option<Hooks>,
    /// the block's physical address (its low 12 bits are the same
    /// wherever it runs from)
    block_pa: u64,
}

/// What translated code needs to call a hooked model's hooks (see
/// `emit`): the model's shortcuts and where its fields are in the hart,
/// the hart's `stall`, and the hook helpers.
pub(super) struct Hooks {
    inline: InlineHooks,
    /// the model's offset in the hart
    model: i32,
    stall: i32,
    fetch: usize,
    mem: usize,
    branch: usize,
    jump: usize,
    direct_jump: usize,
}

/// Translated code: an executable region, and per block (by its first
/// op's arena index) either how often it ran or where its code starts.
///
/// The region is one piece of memory mapped twice: executable and read-only
/// where code runs (every address in code — jumps, link cells — is in this
/// view), writable and not executable where code is copied and link cells
/// are filled. No page of the process is writable and executable at once,
/// so a stray host write cannot become host code.
pub(crate) struct Jit {
    /// the executable view
    region: *mut u8,
    /// the writable view of the same memory
    region_w: *mut u8,
    /// the host refused the region: blocks stay interpreted, not asked again
    refused: bool,
    /// where the next block's code goes
    used: usize,
    /// where the code of the translations in use begins: a reset leaves
    /// the region's offset where it was, so new code goes over old only
    /// when the region wraps (see `sync_core`)
    epoch: usize,
    /// code was written since this core last serialized (see [`sync_core`])
    unsynced: bool,
    slots: Vec<u32>,
    ops: Vec<Op>,
    /// bytes from a block's code to where a chained jump enters it
    chain_entry: usize,
    /// the shared routines at the region's start, once written, and the
    /// model's shortcuts they were written for
    runtime: Option<(Option<InlineHooks>, emit::Runtime)>,
    /// The op helper the code calls (it names the bus type), whether it
    /// logs and whether it calls the model's hooks: code built for
    /// another is dropped.
    key: (usize, bool, bool),
    pub flushes: u64,
    /// `/tmp/perf-PID.map`, when asked for (see [`Hart::set_perf_map`]),
    /// and the name prefix of this hart's blocks in it
    perf_map: Option<(std::fs::File, String)>,
}

impl Jit {
    pub fn new() -> Self {
        Jit {
            region: std::ptr::null_mut(),
            region_w: std::ptr::null_mut(),
            refused: false,
            used: RUNTIME_BYTES,
            epoch: RUNTIME_BYTES,
            unsynced: false,
            slots: Vec::new(),
            ops: Vec::new(),
            chain_entry: 0,
            runtime: None,
            key: (0, false, false),
            flushes: 0,
            perf_map: None,
        }
    }

    /// Drop every translation (the arena was emptied, or code must change).
    pub fn reset(&mut self) {
        if self.used != self.epoch || !self.ops.is_empty() {
            self.flushes += 1;
        }
        self.epoch = self.used;
        self.slots.clear();
        self.ops.clear();
    }

    /// Host memory translations take: code and op copies in use.
    pub fn bytes(&self) -> usize {
        (self.used - self.epoch) + self.ops.len() * std::mem::size_of::<Op>() + self.slots.len() * 4
    }

    /// Count a run of the block at arena index `start` if that run leaves
    /// it cold (not translated, and short of `hot`): the interpreter then
    /// chains into it itself, counting it as the run loop would
    /// ([`Jit::code_or_heat`]). False, with nothing counted, when the run
    /// loop must see the block (translated, turning hot, or past `slots`).
    #[inline(always)]
    pub(super) fn stays_cold(&mut self, start: usize, hot: u32) -> bool {
        match self.slots.get_mut(start) {
            // (a translated block's slot has `COMPILED` set, above any `hot`)
            Some(s) if *s + 1 < hot => {
                *s += 1;
                true
            }
            _ => false,
        }
    }

    /// The block at arena index `start`: its code, or whether it just
    /// became hot (counting this run). On its first run a block `was_hot`
    /// names (one translated before at its address, by any hart, its page
    /// unwritten since) is hot at once: it would otherwise be interpreted
    /// through the same warm-up again.
    #[inline(always)]
    fn code_or_heat(
        &mut self,
        start: usize,
        arena_len: usize,
        hot: u32,
        was_hot: impl FnOnce() -> bool,
    ) -> Result<*const u8, bool> {
        if start >= self.slots.len() {
            self.slots.resize(arena_len.max(start + 1), 0);
        }
        let s = &mut self.slots[start];
        if *s & COMPILED != 0 {
            // SAFETY: the offset was stored by `install`, inside the region.
            return Ok(unsafe { self.region.add((*s & !COMPILED) as usize) });
        }
        if *s < hot {
            *s += 1;
            if *s == 1 && start != 0 && was_hot() {
                *s = hot;
            }
            return Err(*s == hot && start != 0);
        }
        Err(false)
    }

    /// Map the region's two views if they are not yet; false if they
    /// cannot be (blocks then stay interpreted, and the user is told once
    /// a process why the run is slower than it should be).
    fn ensure_region(&mut self) -> bool {
        if self.region.is_null() {
            if self.refused {
                return false;
            }
            match map_twice(REGION_BYTES) {
                Ok((x, w)) => (self.region, self.region_w) = (x, w),
                Err(e) => {
                    self.refused = true;
                    static TOLD: std::sync::Once = std::sync::Once::new();
                    TOLD.call_once(|| {
                        eprintln!(
                            "hartscope: the host refused memory for translated code ({e}); \
                             blocks stay interpreted (same results, slower)"
                        )
                    });
                    return false;
                }
            }
        }
        true
    }

    /// Write `bytes` at offset `at` of the region (through its writable view).
    ///
    /// # Safety
    /// `at..at + bytes.len()` lies in the region, and no translated code
    /// runs meanwhile.
    unsafe fn write_code(&mut self, at: usize, bytes: &[u8]) {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.region_w.add(at), bytes.len());
    }

    /// Write the shared routines `code` (at `rt`, for the model's
    /// shortcuts `written_for`; chained jumps enter a block `chain_entry`
    /// bytes into its code) at the region's start.
    fn install_runtime(
        &mut self,
        code: &[u8],
        rt: emit::Runtime,
        chain_entry: usize,
        written_for: Option<InlineHooks>,
    ) -> emit::Runtime {
        assert!(
            code.len() <= RUNTIME_BYTES,
            "the jit's shared routines outgrew their space"
        );
        // SAFETY: in bounds (asserted); no translated code runs while
        // code is written, and none that calls the old routines is left.
        unsafe { self.write_code(0, code) };
        self.unsynced = true;
        self.chain_entry = chain_entry;
        self.runtime = Some((written_for, rt));
        if let Some((file, name)) = &mut self.perf_map {
            use std::io::Write;
            // (each routine by name, so a host profile tells them apart;
            // a routine runs to the next one's start or the code's end)
            let at = self.region as u64;
            let mut starts = rt.named();
            starts.retain(|&(_, a)| a != 0);
            starts.sort_by_key(|&(_, a)| a);
            let ends = starts
                .iter()
                .skip(1)
                .map(|&(_, a)| a)
                .chain([at + code.len() as u64]);
            for (&(what, from), to) in starts.iter().zip(ends) {
                let _ = writeln!(file, "{from:x} {:x} {name}runtime:{what}", to - from);
            }
        }
        rt
    }

    /// Copy `code` into the region for the block at `start` (guest `pc`);
    /// false when the region is full.
    fn install(&mut self, start: usize, code: &[u8], pc: u64) -> bool {
        let at = self.used;
        if at + code.len() > REGION_BYTES {
            return false;
        }
        // SAFETY: in bounds of the region (checked above); no translated
        // code runs while a block is installed.
        unsafe { self.write_code(at, code) };
        self.unsynced = true;
        self.used = (at + code.len() + 15) & !15;
        self.slots[start] = COMPILED | at as u32;
        if let Some((file, name)) = &mut self.perf_map {
            use std::io::Write;
            // (a failed write loses names for the host profile, nothing else)
            let host = self.region as usize + at;
            let _ = writeln!(file, "{host:x} {:x} {name}{pc:#x}", code.len());
        }
        true
    }
}

impl Drop for Jit {
    fn drop(&mut self) {
        if !self.region.is_null() {
            // SAFETY: both views were mapped by `ensure_region` with this length.
            unsafe {
                libc::munmap(self.region.cast(), REGION_BYTES);
                libc::munmap(self.region_w.cast(), REGION_BYTES);
            }
        }
    }
}

/// Make this core fetch afresh what was written to the region since it
/// last ran translated code. The code is written through the region's
/// writable view, another linear address than the one it runs from, and
/// for that case the x86 manuals ask for a serializing instruction before
/// the new code runs (Intel SDM vol. 3, "Handling Self- and
/// Cross-Modifying Code": a processor's check of writes against
/// instructions it already fetched may go by linear address). Without it,
/// a Sapphire Rapids VM ran stale instructions where a reset had put new
/// code over old (the host faulted, SIGSEGV, within minutes of a boot
/// that empties the region often), while the EPYC hosts never did. With
/// it, one run of that boot in six still faulted the same way (perhaps
/// after the thread moved to another core, which Linux does not always
/// serialize), so a reset no longer puts new code over old either: the
/// region is a ring ([`REGION_BYTES`]).
#[inline(never)]
fn sync_core() {
    #[cfg(target_arch = "x86_64")]
    if has_serialize() {
        serialize();
    } else {
        iret_to_self();
    }
}

/// Whether this core has the `serialize` instruction (CPUID leaf 7, EDX
/// bit 14), asked once a process.
#[cfg(target_arch = "x86_64")]
fn has_serialize() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        std::arch::x86_64::__cpuid(0).eax >= 7
            && std::arch::x86_64::__cpuid_count(7, 0).edx & (1 << 14) != 0
    })
}

/// The `serialize` instruction (0f 01 e8), where [`has_serialize`]:
/// about 45-85 ns on the Sapphire Rapids VM.
#[cfg(target_arch = "x86_64")]
fn serialize() {
    // SAFETY: only called where the core has the instruction, which
    // changes no register, flag or memory.
    unsafe { std::arch::asm!(".byte 0x0f, 0x01, 0xe8", options(nostack, preserves_flags)) };
}

/// An `iretq` to the next instruction, serializing on every x86-64 core
/// (what Linux's `sync_core` did before `serialize`): about 150 ns on
/// the Sapphire Rapids VM, where `cpuid` (a VM exit) took 2,000-2,300.
#[cfg(target_arch = "x86_64")]
fn iret_to_self() {
    // SAFETY: builds the frame `iretq` pops (ss, rsp as it was, rflags,
    // cs, rip of the label) from the current values, so it returns to
    // the label with every register, flag and the stack as they were.
    unsafe {
        std::arch::asm!(
            "mov {t:e}, ss",
            "push {t}",
            "push rsp",
            "add qword ptr [rsp], 8",
            "pushfq",
            "mov {t:e}, cs",
            "push {t}",
            "lea {t}, [rip + 2f]",
            "push {t}",
            "iretq",
            "2:",
            t = out(reg) _,
        )
    };
}

/// `len` bytes of fresh shared memory mapped twice: (executable and
/// read-only, writable and not executable). Only touched pages take memory.
///
/// First as anonymous shared memory, whose second view `mremap` makes:
/// the host's `perf` names code in anonymous memory (`/dev/zero` in the
/// process's maps) from `/tmp/perf-PID.map` (`--perf-map`), but code in a
/// file mapping (a `memfd` is one) only from that file. Where that is
/// refused, a `memfd` mapped twice.
fn map_twice(len: usize) -> std::io::Result<(*mut u8, *mut u8)> {
    match map_twice_anonymous(len) {
        Ok(views) => Ok(views),
        Err(_) => map_twice_memfd(len),
    }
}

/// [`map_twice`] from anonymous shared memory.
fn map_twice_anonymous(len: usize) -> std::io::Result<(*mut u8, *mut u8)> {
    // SAFETY: plain system calls on mappings made here; each is checked,
    // and what was made is undone when a later step fails.
    unsafe {
        let w = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if w == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        // (an old size of 0: a second mapping of the same shared pages)
        let x = libc::mremap(w, 0, len, libc::MREMAP_MAYMOVE);
        if x == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error();
            libc::munmap(w, len);
            return Err(e);
        }
        if libc::mprotect(x, len, libc::PROT_READ | libc::PROT_EXEC) != 0 {
            let e = std::io::Error::last_os_error();
            libc::munmap(x, len);
            libc::munmap(w, len);
            return Err(e);
        }
        Ok((x.cast::<u8>(), w.cast::<u8>()))
    }
}

/// [`map_twice`] from a `memfd`.
fn map_twice_memfd(len: usize) -> std::io::Result<(*mut u8, *mut u8)> {
    // SAFETY: plain system calls on a descriptor owned here; each mapping
    // is checked, and undone if the other fails.
    unsafe {
        let fd = libc::memfd_create(c"hartscope-jit".as_ptr(), libc::MFD_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let map = |prot| {
            let p = libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0);
            if p == libc::MAP_FAILED {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(p.cast::<u8>())
            }
        };
        let views = (|| {
            if libc::ftruncate(fd, len as libc::off_t) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let x = map(libc::PROT_READ | libc::PROT_EXEC)?;
            map(libc::PROT_READ | libc::PROT_WRITE)
                .map(|w| (x, w))
                .inspect_err(|_| {
                    libc::munmap(x.cast(), len);
                })
        })();
        libc::close(fd);
        views
    }
}

/// What the translating engine did on one hart (host figures only: a
/// restored hart starts with no translations).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TranslationStats {
    /// Blocks translated to host code.
    pub blocks: u64,
    /// Host memory translations take now: code, op copies, slots.
    pub bytes: u64,
    /// Host time spent translating, in nanoseconds.
    pub nanos: u64,
    /// Times every translation was dropped (arena or region emptied).
    pub flushes: u64,
    /// Instructions the block interpreter retired, whichever engine was
    /// chosen: under the translating engine, those of blocks not (yet)
    /// translated, the rest having run as translated code (ops translated
    /// code hands to the interpreter's definition one at a time are not
    /// counted here). What the translator leaves on the slower path.
    pub interpreted: u64,
}

impl<T: TimingModel> Hart<T> {
    /// Translate a block once it has run `runs` times (1..=65,536;
    /// default [`TRANSLATE_AFTER`], [`TRANSLATE_AFTER_HOOKED`] for a
    /// hooked model). A host choice: results are the same
    /// whatever it is; 1 translates every cached block (for checks).
    /// Drops every translation.
    pub fn set_translate_after(&mut self, runs: u32) {
        self.blocks.hot = runs.clamp(1, 1 << 16);
        self.blocks.jit.reset();
    }

    /// Name every block translated from now on in `/tmp/perf-PID.map`
    /// (as QEMU's `-perfmap`), as `name` and the guest pc it was entered
    /// at, so host `perf report` shows translated code by guest address.
    pub fn set_perf_map(&mut self, name: &str) -> std::io::Result<()> {
        let path = format!("/tmp/perf-{}.map", std::process::id());
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        // (harts that share code share its names: the first hart's)
        if self.blocks.jit.perf_map.is_none() {
            self.blocks.jit.perf_map = Some((file, name.to_string()));
        }
        Ok(())
    }

    /// What the translating engine did on this hart.
    pub fn translation_stats(&self) -> TranslationStats {
        let b = &self.blocks;
        TranslationStats {
            blocks: b.translated,
            bytes: b.jit.bytes() as u64,
            nanos: b.translate_nanos,
            flushes: b.jit.flushes,
            interpreted: b.interpreted,
        }
    }

    /// Runs of a block before it is translated on this hart.
    #[inline(always)]
    pub(super) fn jit_hot(&self) -> u32 {
        match self.blocks.hot {
            0 if self.timing.hooks_skippable() => TRANSLATE_AFTER,
            0 => TRANSLATE_AFTER_HOOKED,
            chosen => chosen,
        }
    }

    /// Whether hot blocks run as translated code.
    #[inline(always)]
    pub(super) fn translating(&self) -> bool {
        self.engine == Engine::Translated
            && (self.timing.hooks_skippable() || self.timing.hooks_inlinable())
    }

    /// Run the block at `start` (and the blocks it chains into) translated
    /// where translated, interpreted where not; `Some` when the run loop
    /// must return. Chains exactly as the interpreter's `leave`.
    pub(super) fn exec_translated<B: SystemBus>(
        &mut self,
        bus: &mut B,
        mut start: usize,
        mut n: usize,
        mut pa: u64,
        limit: u64,
    ) -> Option<Exit> {
        let log = self.check_log.is_some();
        let hooked = !self.timing.hooks_skippable();
        let key = (jit_op::<T, B, true> as *const () as usize, log, hooked);
        if self.blocks.jit.key != key {
            let jit = &mut self.blocks.jit;
            jit.reset();
            jit.key = key;
        }
        let hot = self.jit_hot();
        loop {
            let arena = self.blocks.arena_len();
            let ram = &self.ram;
            match self
                .blocks
                .jit
                .code_or_heat(start, arena, hot, || ram.is_hot_code(pa))
            {
                Ok(code) => {
                    self.jit_frame.cyc = self.cycle;
                    self.jit_frame.seen = self.cycle;
                    self.jit_frame.base_pc = self.pc;
                    self.jit_frame.base_pa = pa;
                    self.jit_frame.limit = limit;
                    self.jit_frame.link = 0;
                    self.jit_frame.stamp = self.fetch_stamp;
                    let slots = &self.blocks.jit.slots;
                    self.jit_frame.slots = slots.as_ptr() as u64;
                    self.jit_frame.slots_len = slots.len() as u64;
                    // (only a restore replaces the table: never while
                    // translated code runs, so not after helpers)
                    self.jit_frame.bp_table = self.timing.inline_branch_table();
                    self.jit_frame.btb_table = self.timing.inline_jump_table();
                    self.jit_frame.ras_stack = self.timing.inline_return_stack();
                    self.jit_frame.tlb_entries = self.timing.inline_tlb_entries();
                    self.jit_frame.l1_sets = self.timing.inline_l1_sets();
                    self.jit_refresh_frame();
                    // SAFETY: code `emit` built for this hart type and bus
                    // type (the key), entered with the hart and bus it
                    // expects; it touches guest RAM only through TLB
                    // entries, and the hart only at offsets of `Layout`.
                    let f: extern "sysv64" fn(*mut Hart<T>, *mut B) -> u64 =
                        unsafe { std::mem::transmute(code) };
                    if self.blocks.jit.unsynced {
                        self.blocks.jit.unsynced = false;
                        sync_core();
                    }
                    if f(self, bus) == 2 {
                        return self.jit_frame.exit.take();
                    }
                    self.cycle = self.jit_frame.cyc;
                    self.pc = self.jit_frame.pc;
                    self.jit_link();
                    let k = self.cycle - self.jit_frame.seen;
                    if k != 0 && !hooked {
                        self.timing.skipped(k);
                    }
                }
                Err(hot) => {
                    if hot && self.jit_compile::<B>(start, n, pa) {
                        continue;
                    }
                    let r = if log {
                        self.exec_block_logged(bus, start, n, pa, limit)
                    } else {
                        self.exec_block::<B, false>(bus, start, n, pa, limit)
                    };
                    if r.is_some() {
                        return r;
                    }
                }
            }
            if self.cycle < limit && self.checks == 0 {
                if let Some((s, m, p)) = self.blocks.lookup(self.pc, self.fetch_stamp) {
                    (start, n, pa) = (s, m, p);
                    continue;
                }
            }
            return None;
        }
    }

    /// Translate the `n` ops at arena index `start`; false if it could
    /// not be (then it stays interpreted).
    #[inline(never)]
    fn jit_compile<B: SystemBus>(&mut self, start: usize, n: usize, pa: u64) -> bool {
        if !cfg!(target_arch = "x86_64") {
            return false;
        }
        if !self.blocks.jit.ensure_region() {
            return false;
        }
        let t0 = Instant::now();
        let ops: Vec<Op> = (start..start + n)
            // SAFETY: `fetch_block` gave an in-bounds range.
            .map(|i| unsafe { *self.blocks.ops_ptr().add(i) })
            .collect();
        // (the model's shortcuts, asked once: what the block's code and the
        // shared routines are written for; see `Jit::runtime`)
        let inline = if self.blocks.jit.key.2 {
            self.timing.inline_hooks()
        } else {
            None
        };
        let hot = self.jit_hot();
        let jit = &mut self.blocks.jit;
        if jit.ops.capacity() == 0 {
            jit.ops.reserve_exact(OP_COPIES);
        }
        let wrap = jit.used + 64 * 1024 > REGION_BYTES;
        // (the shared routines take the model's shortcuts as it described
        // them; that does not change while the jit lives, but if it did
        // they would be written again, with no code left that calls the
        // old ones)
        let moved = jit.runtime.is_some_and(|(hooks, _)| hooks != inline);
        if moved {
            jit.runtime = None;
        }
        if jit.ops.len() + n > OP_COPIES || (wrap && jit.used != jit.epoch) || moved {
            let key = jit.key;
            let slots = jit.slots.len();
            jit.reset();
            jit.key = key;
            jit.slots.resize(slots, hot - 1);
        }
        if wrap {
            // (nothing translated is in use now: start the region again)
            (jit.used, jit.epoch) = (RUNTIME_BYTES, RUNTIME_BYTES);
        }
        let first = jit.ops.len();
        jit.ops.extend_from_slice(&ops);
        let copies = jit.ops.as_ptr();
        let op_addr = |i: usize| unsafe { copies.add(first + i) } as u64;
        // rbx points `rebase` bytes into the hart, so that the guest
        // registers, read and written most, sit at one-byte displacements
        let rebase = std::mem::offset_of!(Hart<T>, x) as i32 + 128;
        let at = |off: usize| off as i32 - rebase;
        let frame = std::mem::offset_of!(Hart<T>, jit_frame);
        let mut lay = Layout {
            rebase,
            x: at(std::mem::offset_of!(Hart<T>, x)),
            f_cyc: at(frame + std::mem::offset_of!(JitFrame, cyc)),
            f_pc: at(frame + std::mem::offset_of!(JitFrame, pc)),
            f_base_pc: at(frame + std::mem::offset_of!(JitFrame, base_pc)),
            f_row: at(frame + std::mem::offset_of!(JitFrame, row)),
            f_gen: at(frame + std::mem::offset_of!(JitFrame, gen)),
            f_base_pa: at(frame + std::mem::offset_of!(JitFrame, base_pa)),
            f_limit: at(frame + std::mem::offset_of!(JitFrame, limit)),
            f_link: at(frame + std::mem::offset_of!(JitFrame, link)),
            f_bus: at(frame + std::mem::offset_of!(JitFrame, bus)),
            f_stamp: at(frame + std::mem::offset_of!(JitFrame, stamp)),
            f_vcache: at(frame + std::mem::offset_of!(JitFrame, vcache)),
            f_slots: at(frame + std::mem::offset_of!(JitFrame, slots)),
            f_slots_len: at(frame + std::mem::offset_of!(JitFrame, slots_len)),
            f_bp_table: at(frame + std::mem::offset_of!(JitFrame, bp_table)),
            f_btb_table: at(frame + std::mem::offset_of!(JitFrame, btb_table)),
            f_ras_stack: at(frame + std::mem::offset_of!(JitFrame, ras_stack)),
            f_tlb_entries: [0, 8]
                .map(|i| at(frame + std::mem::offset_of!(JitFrame, tlb_entries) + i)),
            f_l1_sets: [[0, 8], [16, 24]]
                .map(|c| c.map(|i| at(frame + std::mem::offset_of!(JitFrame, l1_sets) + i))),
            f_bp_steps: at(frame + std::mem::offset_of!(JitFrame, bp_steps)),
            f_host_to_pa: at(frame + std::mem::offset_of!(JitFrame, host_to_pa)),
            f_last_line: at(frame + std::mem::offset_of!(JitFrame, last_line)),
            region: self.blocks.jit.region as u64,
            code_at: self.blocks.jit.region as u64,
            rt: emit::Runtime::default(),
            checks: at(std::mem::offset_of!(Hart<T>, checks)),
            fetch_stamp: at(std::mem::offset_of!(Hart<T>, fetch_stamp)),
            vcache: Blocks::vcache_layout(),
            op_helper: if self.blocks.jit.key.1 {
                jit_op::<T, B, true> as *const () as usize
            } else {
                jit_op::<T, B, false> as *const () as usize
            },
            mem_helper: jit_op::<T, B, false> as *const () as usize,
            log_helper: jit_log::<T> as *const () as usize,
            log: self.blocks.jit.key.1,
            hooks: if self.blocks.jit.key.2 {
                // (a hooked model without shortcuts: stays interpreted)
                let Some(inline) = inline else {
                    return false;
                };
                Some(Hooks {
                    inline,
                    model: at(std::mem::offset_of!(Hart<T>, timing)),
                    stall: at(std::mem::offset_of!(Hart<T>, stall)),
                    fetch: jit_fetch::<T> as *const () as usize,
                    mem: jit_mem::<T> as *const () as usize,
                    branch: jit_branch::<T> as *const () as usize,
                    jump: jit_jump::<T> as *const () as usize,
                    direct_jump: jit_direct_jump::<T> as *const () as usize,
                })
            } else {
                None
            },
            block_pa: pa,
        };
        self.jit_prepare_frame(lay.hooks.as_ref().map(|h| &h.inline));
        #[cfg(target_arch = "x86_64")]
        let code = {
            let jit = &mut self.blocks.jit;
            let rt = match jit.runtime {
                Some((_, rt)) => Some(rt),
                None => emit::Emitter::new(&lay)
                    .runtime()
                    .map(|(code, rt, entry)| jit.install_runtime(&code, rt, entry, inline)),
            };
            rt.and_then(|rt| {
                lay.rt = rt;
                lay.code_at = jit.region as u64 + jit.used as u64;
                emit::Emitter::new(&lay).block(&ops, &op_addr)
            })
        };
        #[cfg(not(target_arch = "x86_64"))]
        let code: Option<(Vec<u8>, usize)> = {
            let _ = (&lay, &op_addr);
            None
        };
        let jit = &mut self.blocks.jit;
        let ok = match code {
            Some((code, entry)) => {
                jit.chain_entry = entry;
                jit.install(start, &code, self.pc)
            }
            None => false,
        };
        if ok {
            self.blocks.translated += 1;
            self.ram.note_hot_code(pa);
        }
        self.blocks.translate_nanos += t0.elapsed().as_nanos() as u64;
        ok
    }

    /// The block just left by an exit with a link cell: if the run loop
    /// would chain into a translated block there, point the cell at it
    /// (its pc's first-level entry, its arena index, its code), so next
    /// time the exit jumps there itself (after the same checks: budget,
    /// `checks`, and that entry mapping the pc to that block).
    #[inline(always)]
    fn jit_link(&mut self) {
        let cell = std::mem::take(&mut self.jit_frame.link);
        if cell == 0 || self.cycle >= self.jit_frame.limit || self.checks != 0 {
            return;
        }
        let Some((s, _, _)) = self.blocks.lookup(self.pc, self.fetch_stamp) else {
            return;
        };
        let jit = &self.blocks.jit;
        let Some(&slot) = jit.slots.get(s) else {
            return;
        };
        if slot & COMPILED == 0 {
            return;
        }
        let entry = jit.region as u64 + (slot & !COMPILED) as u64 + jit.chain_entry as u64;
        let mut filled = [0u8; 24];
        filled[..8].copy_from_slice(&Blocks::ventry_offset(self.pc).to_ne_bytes());
        filled[8..16].copy_from_slice(&(s as u64).to_ne_bytes());
        filled[16..].copy_from_slice(&entry.to_ne_bytes());
        // SAFETY: `cell` is a link cell of code in the region (32 bytes;
        // see `emit`), and no translated code runs now.
        unsafe {
            let jit = &mut self.blocks.jit;
            jit.write_code(cell as usize - jit.region as usize, &filled)
        };
    }

    /// Fill the frame's parts that stay as they are for the hart's life
    /// (the model's branch steps, guest RAM's host offset, its first
    /// level's address): before the hart translates, or runs code another
    /// hart translated. `inline`: the model's shortcuts, as the code is
    /// written for them (the caller has asked the model already).
    pub(crate) fn jit_prepare_frame(&mut self, inline: Option<&InlineHooks>) {
        self.jit_frame.vcache = self.blocks.vcache_addr();
        if let Some(b) = inline.and_then(|h| h.branch) {
            self.jit_frame.bp_steps = emit::branch_steps(&b);
        }
        self.jit_frame.host_to_pa = self.host_to_pa(0);
    }

    fn jit_refresh_frame(&mut self) {
        self.jit_frame.row = &self.tlb.e[KIND_LOAD][self.data_ctx & 3][0] as *const _ as u64;
        self.jit_frame.gen = self.tlb.gen_bits;
    }

    /// One op the translated code does not inline, by the interpreter's
    /// definition: 0 it retired and the block goes on, 1 it jumped (the
    /// frame's pc set), 2 it trapped (the hart's state is final).
    #[inline(always)]
    fn jit_run_op<B: SystemBus, const LOG: bool>(&mut self, bus: &mut B, op: &Op) -> u64 {
        let base = self.jit_frame.base_pc;
        let pc = base.wrapping_add(op.off as u64);
        let mut cyc = self.jit_frame.cyc;
        let k = cyc - self.jit_frame.seen;
        if k != 0 && self.timing.hooks_skippable() {
            self.timing.skipped(k);
        }
        // what the interpreter's block loop charges before an op
        let extra = self
            .timing
            .fetch(pc, self.jit_frame.base_pa + op.off as u64, op.len)
            .wrapping_add(self.timing.insn(pc, op.class, op.ops));
        let start = cyc;
        let r = match self.execute(bus, op, base, &mut cyc, extra) {
            Flow::Next => 0,
            Flow::Jump(t) => {
                self.jit_frame.pc = t;
                1
            }
            Flow::Trap(t) => {
                self.cycle = cyc;
                self.jit_frame.exit = self.end_at_trap(t, op, pc, extra, start);
                self.jit_refresh_frame();
                return 2;
            }
        };
        cyc = cyc.wrapping_add(1).wrapping_add(extra);
        self.stall = self.stall.wrapping_add(extra);
        self.jit_frame.seen = cyc;
        if LOG {
            self.log_step(CheckKind::Retired, pc, Some(op), cyc);
        }
        self.jit_frame.cyc = cyc;
        self.jit_refresh_frame();
        r
    }
}

/// Translated code's call into [`Hart::jit_run_op`] (`LOG`: log it).
extern "sysv64" fn jit_op<T: TimingModel, B: SystemBus, const LOG: bool>(
    h: *mut Hart<T>,
    bus: *mut B,
    op: *const Op,
) -> u64 {
    // SAFETY: called only by translated code that `exec_translated`
    // entered with these two (exclusively borrowed there), and `op` is
    // one of the jit's op copies, which outlive the code.
    let (h, bus, op) = unsafe { (&mut *h, &mut *bus, &*op) };
    h.jit_run_op::<B, LOG>(bus, op)
}

/// The flag of [`jit_fetch`]'s `off_len` for a line the shortcut found
/// absent.
pub(super) const FETCH_ABSENT: u64 = 1 << 24;

/// Translated code's `fetch` hook of the op at byte `off_len & 0xffff` of
/// its block, `(off_len >> 16) & 0xff` bytes long (the model's shortcut
/// did not hold), plus [`FETCH_ABSENT`] where the shortcut found the line
/// in no way of its set (see `TimingModel::fetch_absent`). (Arguments
/// rather than the op: its copy is likely out of the host's caches.)
extern "sysv64" fn jit_fetch<T: TimingModel>(h: *mut Hart<T>, off_len: u64) -> u64 {
    // SAFETY: as `jit_op`.
    let h = unsafe { &mut *h };
    let off = off_len & 0xffff;
    let pc = h.jit_frame.base_pc.wrapping_add(off);
    let pa = h.jit_frame.base_pa.wrapping_add(off);
    let len = (off_len >> 16) as u8;
    if off_len & FETCH_ABSENT != 0 {
        return h.timing.fetch_absent(pc, pa, len);
    }
    h.timing.fetch(pc, pa, len)
}

/// The flag of [`jit_mem`]'s `size_kind` for a line the shortcut found
/// absent.
pub(super) const MEM_ABSENT: u64 = 512;

/// Translated code's `mem` hook of a load or store that the TLB mapped
/// to `host` (in guest RAM) from `va`; `size_kind` is its size, plus 256
/// for a store, plus [`MEM_ABSENT`] where the model's shortcut found the
/// line in no way of its set (see `TimingModel::mem_absent`).
extern "sysv64" fn jit_mem<T: TimingModel>(
    h: *mut Hart<T>,
    host: u64,
    va: u64,
    size_kind: u64,
) -> u64 {
    // SAFETY: as `jit_op`.
    let h = unsafe { &mut *h };
    let kind = if size_kind & 256 != 0 {
        MemKind::Store
    } else {
        MemKind::Load
    };
    let pa = h.host_to_pa(host);
    if size_kind & MEM_ABSENT != 0 {
        return h.timing.mem_absent(va, pa, size_kind as u8, kind);
    }
    h.timing.mem(va, pa, size_kind as u8, kind, false)
}

/// Translated code's `branch` hook of the conditional branch at byte
/// `off` of its block, to `imm` bytes from it: its cycles doubled, plus
/// `taken`.
extern "sysv64" fn jit_branch<T: TimingModel>(
    h: *mut Hart<T>,
    off: u64,
    imm: i64,
    taken: u64,
) -> u64 {
    // SAFETY: as `jit_op`.
    let h = unsafe { &mut *h };
    let pc = h.jit_frame.base_pc.wrapping_add(off);
    let target = pc.wrapping_add(imm as u64);
    let c = h.timing.branch(pc, taken != 0, target);
    c << 1 | (taken & 1)
}

/// Translated code's `direct_jump` hook of the `jal` `op`.
extern "sysv64" fn jit_direct_jump<T: TimingModel>(
    h: *mut Hart<T>,
    _bus: *mut u8,
    op: *const Op,
) -> u64 {
    // SAFETY: as `jit_op`.
    let (h, op) = unsafe { (&mut *h, &*op) };
    let pc = h.jit_frame.base_pc.wrapping_add(op.off as u64);
    let Insn::Jal { rd, imm } = op.insn else {
        unreachable!("jit_direct_jump of a non-jal op")
    };
    let target = pc.wrapping_add(imm as i64 as u64);
    let link = pc.wrapping_add(op.len as u64);
    h.timing
        .direct_jump(pc, target, JumpHint::of(rd, None), link)
}

/// Translated code's `jump` hook of the `jalr` `op` (its target in the
/// frame's pc).
extern "sysv64" fn jit_jump<T: TimingModel>(h: *mut Hart<T>, _bus: *mut u8, op: *const Op) -> u64 {
    // SAFETY: as `jit_op`.
    let (h, op) = unsafe { (&mut *h, &*op) };
    let pc = h.jit_frame.base_pc.wrapping_add(op.off as u64);
    let Insn::Jalr { rd, rs1, .. } = op.insn else {
        unreachable!("jit_jump of a non-jalr op")
    };
    let link = pc.wrapping_add(op.len as u64);
    h.timing
        .jump(pc, h.jit_frame.pc, JumpHint::of(rd, Some(rs1)), link)
}

/// Translated code's check-log record of an inline op (cycle count in
/// the frame).
extern "sysv64" fn jit_log<T: TimingModel>(h: *mut Hart<T>, _bus: *mut u8, op: *const Op) -> u64 {
    // SAFETY: as `jit_op`.
    let (h, op) = unsafe { (&mut *h, &*op) };
    let pc = h.jit_frame.base_pc.wrapping_add(op.off as u64);
    h.log_step(CheckKind::Retired, pc, Some(op), h.jit_frame.cyc);
    h.jit_refresh_frame();
    0
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use crate::mmu::{Tlb, TlbEntry, KIND_LOAD, KIND_STORE};

    /// Both ways of serializing the core return where they were called,
    /// with the stack, registers and flags the code around them uses.
    #[test]
    fn serializing_the_core_returns_as_it_was() {
        let mut sum = 0u64;
        for i in 0..1000u64 {
            let before = [i, i * 3, i ^ 0x55];
            super::iret_to_self();
            if super::has_serialize() {
                super::serialize();
            }
            super::sync_core();
            sum = sum.wrapping_add(std::hint::black_box(before).iter().sum::<u64>());
        }
        assert_eq!(
            sum,
            (0..1000u64).map(|i| i + i * 3 + (i ^ 0x55)).sum::<u64>()
        );
    }

    /// A reset drops the translations but not the place in the region:
    /// new code goes after the old, never over it, until the region is
    /// full; what is in use is only the new code. Blocks' code starts
    /// after the shared routines.
    #[test]
    fn a_reset_puts_new_code_after_the_old() {
        let mut jit = super::Jit::new();
        assert!(jit.ensure_region());
        jit.slots.resize(4, 0);
        let ret = [0xc3u8; 100];
        assert!(jit.install(1, &ret, 0x8000_0000));
        assert_eq!(jit.slots[1] & !super::COMPILED, super::RUNTIME_BYTES as u32);
        let after = jit.used;
        assert_eq!(after, super::RUNTIME_BYTES + 112);
        jit.reset();
        assert_eq!(jit.bytes(), 0);
        jit.slots.resize(4, 0);
        assert!(jit.install(2, &ret, 0x8000_0100));
        assert_eq!(jit.slots[2] & !super::COMPILED, after as u32);
        assert_eq!(jit.bytes(), 112 + 4 * 4);
        assert_eq!(jit.flushes, 1);
    }

    /// Translated code finds a TLB entry as (tag, addend) at 16 bytes an
    /// entry, and the store row at a fixed distance from the load row.
    #[test]
    fn translated_code_finds_the_tlb_where_it_is() {
        assert_eq!(std::mem::size_of::<TlbEntry>(), 16);
        assert_eq!(std::mem::offset_of!(TlbEntry, tag), 0);
        assert_eq!(std::mem::offset_of!(TlbEntry, addend), 8);
        let t = Tlb::new();
        for ctx in 0..4 {
            let load = &t.e[KIND_LOAD][ctx][0] as *const TlbEntry as isize;
            let store = &t.e[KIND_STORE][ctx][0] as *const TlbEntry as isize;
            assert_eq!(store - load, super::emit::STORE_ROW_DELTA as isize);
        }
    }
}
