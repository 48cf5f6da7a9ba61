//! Building a machine and running it.
//!
//! Time: every hart keeps its own cycle count. The machine advances in
//! slices; a slice ends at the earliest of (start + quantum, the next device
//! event, the next timer deadline of any hart, the cycle limit). Within a
//! slice the harts run one after another in index order, each up to the
//! slice end, so the interleaving — and everything the guest sees — is the
//! same on every run. A hart that idles (WFI, nothing pending) is moved to
//! the slice end without executing; when every hart idles, the next slice
//! ends at the next event instead of after a quantum, so idle guest time
//! costs no host time.

use std::collections::VecDeque;
use std::path::Path;
use std::time::{Duration, Instant};

use hs_bus::GuestRam;
use hs_core::{Exit, Hart, HartConfig, MarkerCall};
use hs_devices::{
    Clock, DeviceConfig, GoldfishRtc, IpiPolicy, Plug, Rom, Stat, StopRequest, Syscon, Uart16550,
    VirtioMmio, Want,
};
use hs_timing::{Atomic, TimingModel};
use serde::Serialize;

use crate::board::{Board, DevId};
use crate::dtb::{self, DtbParams};
use crate::error::MachineError;
use crate::layout::*;
use crate::loader::{self, BootImages, BootPlan, HtifSymbols};
use crate::markers::{GuestView, MarkerLog};

/// A virtio device type plugged into one of the eight virtio-mmio slots.
pub struct VirtioDevice {
    /// Slot 0..8 (base 0x1000_1000 + 0x1000·slot, PLIC source 1 + slot).
    pub slot: usize,
    /// Builds the backend; it keeps the RAM handle for its queues.
    pub make: Box<dyn FnOnce(&GuestRam) -> Box<dyn hs_devices::VirtioBackend>>,
}

pub struct MachineConfig {
    pub harts: usize,
    pub ram_bytes: u64,
    /// Simulated core clock; a multiple of the 10 MHz timebase.
    pub hz: u64,
    /// Longest slice a hart runs before the next one gets its turn, in cycles.
    pub quantum: u64,
    pub images: BootImages,
    pub bootargs: String,
    /// RTC time at cycle 0, seconds since the Unix epoch.
    pub rtc_epoch_secs: u64,
    /// Seed of `/chosen/rng-seed`.
    pub rng_seed: u64,
    /// Stop once guest time reaches this many cycles.
    pub max_cycles: Option<u64>,
    /// Copy console output to the host's stdout as it appears.
    pub echo_console: bool,
    /// Keep console output in memory ([`Machine::console_output`]).
    pub capture_console: bool,
    /// Optional devices named by configuration (`[board.NAME]` of a
    /// machine description), added after the QEMU `virt` devices.
    pub devices: Vec<DeviceConfig>,
    /// Devices added by code (tests, tools), after the configured ones.
    pub plugs: Vec<Plug>,
    /// Filled virtio slots; the others show "no device".
    pub virtio_devices: Vec<VirtioDevice>,
    /// What happens to a software interrupt one hart raises on another
    /// (the machine description's `[ipi]`).
    pub ipi: IpiPolicy,
}

impl Default for MachineConfig {
    fn default() -> Self {
        Self {
            harts: 1,
            ram_bytes: 512 << 20,
            hz: DEFAULT_HZ,
            quantum: 10_000,
            images: BootImages::default(),
            bootargs: String::new(),
            rtc_epoch_secs: hs_devices::rtc::DEFAULT_EPOCH_SECS,
            rng_seed: 0,
            max_cycles: None,
            echo_console: false,
            capture_console: true,
            devices: Vec::new(),
            plugs: Vec::new(),
            virtio_devices: Vec::new(),
            ipi: IpiPolicy::Deliver,
        }
    }
}

/// Where a running machine is, for a progress line.
#[derive(Clone, Debug)]
pub struct Progress {
    pub cycles: u64,
    pub guest_seconds: f64,
    /// Instructions retired by all harts so far.
    pub instret: u64,
    /// Host seconds the machine has run.
    pub host_seconds: f64,
    /// Label of the latest phase marker.
    pub phase: Option<String>,
}

/// Why the machine stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum StopReason {
    /// The guest powered off through the syscon.
    PowerOff,
    /// The guest asked for a reboot, which this machine does not do.
    Reboot,
    /// The guest powered off reporting failure through the syscon.
    Fail(u16),
    /// A bare-metal program wrote its exit code to HTIF `tohost`.
    HtifExit(u64),
    /// Every hart waits for an interrupt and nothing is scheduled to raise one.
    AllIdle,
    /// Guest time reached `max_cycles`.
    CycleLimit,
    /// The console user quit (Ctrl-A x).
    UserQuit,
    /// A hart stopped for a reason of its own.
    HartStop,
    /// The guest kernel panicked (its console said `Kernel panic - not
    /// syncing`); [`Machine::guest_panic`] has the line.
    GuestPanic,
    /// The host user interrupted the run (SIGINT, [`Machine::set_interrupt_flag`]).
    Interrupted,
    /// The phase marker [`Machine::set_snapshot_at`] named retired; the
    /// machine stands between two slices, ready to be snapshotted, and
    /// `run` goes on from there if called again.
    SnapshotPoint,
    /// A hart did nothing but trap at one place for [`STUCK_SLICES`] slices:
    /// code that is not a program for this machine (or a broken one).
    TrapStorm {
        hart: usize,
        cause: u64,
        pc: u64,
        tvec: u64,
    },
}

/// Slices in a row a hart may spend trapping at the same place, with at
/// least every other instruction a trap, before the run is stopped.
pub const STUCK_SLICES: u32 = 64;

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::PowerOff => write!(f, "the guest powered off"),
            StopReason::Reboot => write!(
                f,
                "the guest requested a reboot (not supported: stopped instead)"
            ),
            StopReason::Fail(c) => write!(f, "the guest powered off reporting failure code {c}"),
            StopReason::HtifExit(c) => write!(f, "the program exited with code {c} through HTIF"),
            StopReason::AllIdle => write!(
                f,
                "every hart is waiting for an interrupt and none can arrive"
            ),
            StopReason::CycleLimit => write!(f, "the cycle limit was reached"),
            StopReason::UserQuit => write!(f, "the console user quit"),
            StopReason::HartStop => write!(f, "a hart stopped"),
            StopReason::GuestPanic => write!(f, "the guest kernel panicked"),
            StopReason::Interrupted => write!(f, "interrupted by the user (Ctrl-C)"),
            StopReason::SnapshotPoint => write!(f, "the snapshot point was reached"),
            StopReason::TrapStorm { hart, cause, pc, tvec } => write!(
                f,
                "hart {hart} makes no progress: it traps again and again at pc {pc:#x} (cause {cause}, trap vector {tvec:#x}); is this a program for this machine?"
            ),
        }
    }
}

/// Console input polled by the machine (interactive mode only: the one
/// host-timed input).
pub enum InputEvent {
    Nothing,
    Bytes(Vec<u8>),
    Quit,
}

pub trait ConsoleInput {
    /// Return what the user typed; may block up to `wait` when the guest is idle.
    fn poll(&mut self, wait: Option<Duration>) -> InputEvent;
}

#[derive(Clone, Debug, Serialize)]
pub struct HartSummary {
    pub hart: usize,
    pub cycles: u64,
    pub instret: u64,
    /// Host time spent inside this hart's `run` calls.
    pub host_seconds: f64,
    /// This hart's instructions per host second spent on it, in millions.
    pub mips: f64,
    /// The hart's slow-path counters (block decodes, flushes, walks, traps).
    pub blocks_decoded: u64,
    pub block_flushes: u64,
    pub page_walks: u64,
    /// Code pages whose decoded blocks a store (or DMA) made the hart drop.
    pub code_invalidations: u64,
    /// Host memory the contents of the hart's block cache (its
    /// translation cache) take at the end, in bytes.
    pub block_cache_bytes: u64,
    /// The translating engine: blocks translated to host code, the host
    /// memory their translations take at the end, the host time spent
    /// translating and its share of this hart's host time.
    pub translated_blocks: u64,
    pub translation_bytes: u64,
    pub translation_seconds: f64,
    pub translation_share: f64,
    /// Instructions the block interpreter retired (under the translating
    /// engine, those of blocks not yet hot; the rest ran translated).
    pub interpreted_instret: u64,
    /// TLB flushes, whole or of one page, and of those the page flushes.
    pub tlb_flushes: u64,
    pub tlb_page_flushes: u64,
    pub exceptions: u64,
    pub interrupts: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunSummary {
    pub stop: Option<String>,
    pub cycles: u64,
    pub instret: u64,
    pub host_seconds: f64,
    /// Guest instructions (all harts) per host second, in millions.
    pub mips: f64,
    pub guest_seconds: f64,
    pub harts: Vec<HartSummary>,
    pub exit_status: Option<i64>,
    pub phases: Vec<crate::markers::Phase>,
    /// Host seconds into the run at each phase marker (wall time of the
    /// simulator, not guest time: what a benchmark of one phase divides by).
    pub phase_host_seconds: Vec<f64>,
    pub unknown_markers: u64,
    pub bad_markers: u64,
    /// Device counters, `name -> value`, sorted by name.
    pub devices: std::collections::BTreeMap<String, u64>,
}

impl RunSummary {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}

/// Guest time never goes past this cycle (about 290 years at 1 GHz).
const TIME_HORIZON: u64 = u64::MAX / 2;
/// Most console output kept in memory when capturing.
pub const MAX_CAPTURE: usize = 256 << 20;
/// How often (in slices) a busy machine polls console input.
const INPUT_POLL_SLICES: u64 = 64;
/// Longest host wait for console input while the guest idles.
const IDLE_INPUT_WAIT: Duration = Duration::from_millis(20);

/// Per hart: (instret, exceptions, trap place) at a slice's end, and how
/// many slices in a row it only trapped there.
pub(crate) type ProgressMark = ((u64, u64, [u64; 4]), u32);

pub struct Machine<T: TimingModel = Atomic> {
    pub(crate) ram: GuestRam,
    pub(crate) harts: Vec<Hart<T>>,
    pub(crate) board: Board,
    plan: BootPlan,
    pub(crate) dtb: Vec<u8>,
    /// Nothing has run yet: RAM holds only what the loader put there.
    pub(crate) fresh: bool,
    /// SHA-256 of the device tree without the PMU's events (see `with_timing`).
    pub(crate) board_sha256: String,
    pub(crate) clock: Clock,
    pub(crate) quantum: u64,
    max_cycles: Option<u64>,
    /// Start of the current slice (all harts have reached it).
    pub(crate) now: u64,
    pub(crate) idle: Vec<bool>,
    /// Cycles each hart has spent asleep in `wfi` (always kept: busy cycles,
    /// and so CPI, must not depend on whether the run is observed).
    pub(crate) idle_cycles: Vec<u64>,
    /// `idle_cycles` at each phase marker, in marker order.
    pub(crate) phase_idle: Vec<Vec<u64>>,
    /// What an idle hart saw when it went idle; it must run again once this changes.
    pub(crate) idle_sig: Vec<(u64, bool)>,
    pub(crate) stop: Option<StopReason>,
    /// Set from outside (a signal handler) to end the run at the next slice.
    interrupt: Option<&'static std::sync::atomic::AtomicBool>,
    /// Called about once a second of host time while running; it draws a
    /// progress line on stderr, which the machine erases before echoing
    /// console output and when the run ends.
    on_progress: Option<Box<dyn FnMut(&Progress)>>,
    progress_shown: bool,
    /// Per hart: (instret, exceptions, trap place) at the last slice's end
    /// and how many slices in a row it only trapped there.
    pub(crate) progress: Vec<ProgressMark>,
    pub(crate) markers: MarkerLog,
    htif: Option<HtifSymbols>,
    echo: bool,
    capture: bool,
    pub(crate) console: Vec<u8>,
    pub(crate) console_dropped: u64,
    /// Watches the console for a kernel panic.
    pub(crate) panic: PanicWatch,
    input: Option<Box<dyn ConsoleInput>>,
    pub(crate) input_queue: VecDeque<u8>,
    pub(crate) slices: u64,
    host_time: Duration,
    /// When the current `run` call began (host time of a phase marker is
    /// `host_time` plus the time since).
    run_started: Option<Instant>,
    /// Host seconds into the run at each phase marker, in phase order.
    pub(crate) phase_host: Vec<f64>,
    /// Stop between slices once a phase with this label begins.
    snapshot_at: Option<String>,
    /// Or once any phase begins.
    snapshot_at_first: bool,
    /// That phase began during the current slice.
    snapshot_due: bool,
    hart_host_time: Vec<Duration>,
    /// Sampling and observation bookkeeping (None: a plain run).
    pub(crate) obs: Option<Box<crate::observation::MachineObs>>,
    /// Reaches the recorder inside an [`crate::Observing`] model.
    pub(crate) rec_of: Option<fn(&mut T) -> &mut crate::observing::HartRecorder>,
}

impl Machine<Atomic> {
    pub fn new(cfg: MachineConfig) -> Result<Self, MachineError> {
        Self::with_timing(cfg, |_| Atomic)
    }
}

struct HartView<'a, T: TimingModel>(&'a Hart<T>);
impl<T: TimingModel> GuestView for HartView<'_, T> {
    fn read_virt(&self, va: u64, buf: &mut [u8]) -> Result<(), ()> {
        self.0.read_virt(va, buf)
    }
}

impl<T: TimingModel> Machine<T> {
    /// Build the board, load the images and reset the harts; `timing(h)` gives hart h its model.
    pub fn with_timing(
        mut cfg: MachineConfig,
        timing: impl Fn(usize) -> T,
    ) -> Result<Self, MachineError> {
        if cfg.harts == 0 || cfg.harts > MAX_HARTS {
            return Err(MachineError::BadSmp(cfg.harts));
        }
        if cfg.hz == 0 || !cfg.hz.is_multiple_of(TIMEBASE_HZ) {
            return Err(MachineError::BadFrequency(cfg.hz));
        }
        if cfg.quantum == 0 {
            return Err(MachineError::BadQuantum(cfg.quantum));
        }
        if cfg.ram_bytes == 0 || !cfg.ram_bytes.is_multiple_of(4096) || cfg.ram_bytes > MAX_RAM {
            return Err(MachineError::BadRamSize(cfg.ram_bytes));
        }
        let clock = Clock {
            hz: cfg.hz,
            cycles_per_tick: cfg.hz / TIMEBASE_HZ,
        };
        let ram = GuestRam::new(DRAM_BASE, cfg.ram_bytes)?;
        let (mut board, rom) = build_board(&mut cfg, clock, &ram)?;
        board.check_references()?;
        board.clint.set_ipi_policy(cfg.ipi);

        // The DTB's size does not depend on the values in it, so measure it
        // with placeholders, place everything, then build it for real.
        let fctx = board.fdt_ctx(dtb::phandles(cfg.harts).1);
        let nodes = board.fdt_nodes(&fctx);
        let stdout_path = board.console_path(&fctx).unwrap_or_default();
        let mut params = DtbParams {
            harts: cfg.harts,
            ram_base: DRAM_BASE,
            ram_size: cfg.ram_bytes,
            bootargs: cfg.bootargs.clone(),
            initrd: cfg.images.initrd.as_ref().map(|_| (0, 0)),
            stdout_path,
            rng_seed: cfg.rng_seed,
            isa: hs_core::ISA_STRING.to_string(),
            isa_extensions: hs_core::ISA_EXTENSIONS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            mmu_type: "riscv,sv48".into(),
            hpm_events: timing(0).hpm_events().to_vec(),
        };
        let size_guess = dtb::build(&params, &nodes)?.len() as u64;
        let plan = loader::plan(&cfg.images, cfg.ram_bytes, size_guess)?;
        params.initrd = plan.initrd;
        let dtb = dtb::build(&params, &nodes)?;
        // The board as a snapshot must find it again: the device tree
        // without the timing model's PMU events (which another model may
        // count differently on the same board).
        let board_sha256 = {
            use sha2::Digest;
            let board = DtbParams {
                hpm_events: Vec::new(),
                ..params.clone()
            };
            format!("{:x}", sha2::Sha256::digest(dtb::build(&board, &nodes)?))
        };
        if dtb.len() as u64 != size_guess {
            return Err(MachineError::Fdt(format!(
                "blob size changed from {size_guess} to {}",
                dtb.len()
            )));
        }

        for seg in &plan.segments {
            if !ram.write_bytes(seg.addr, &seg.data) {
                return Err(MachineError::Fdt(format!(
                    "segment at {:#x} escaped RAM after planning",
                    seg.addr
                )));
            }
        }
        if !ram.write_bytes(plan.dtb_addr, &dtb) {
            return Err(MachineError::Fdt(format!(
                "blob at {:#x} escaped RAM after planning",
                plan.dtb_addr
            )));
        }
        let mut rom_bytes = vec![0u8; (FW_DYNAMIC_INFO_ADDR - MROM_BASE) as usize];
        rom_bytes.extend(loader::fw_dynamic_info(plan.kernel_start, 0));
        if let Some(r) = board.device_mut::<Rom>(rom) {
            *r = Rom::new("mrom", MROM_SIZE, rom_bytes);
        }

        let mut harts = Vec::with_capacity(cfg.harts);
        for h in 0..cfg.harts {
            let hc = HartConfig {
                hart_id: h as u64,
                cycles_per_tick: clock.cycles_per_tick,
            };
            let mut hart = Hart::new(hc, ram.clone(), timing(h));
            hart.reset(plan.entry);
            hart.set_x(10, h as u64); // a0: hart id
            hart.set_x(11, plan.dtb_addr); // a1: device tree
            hart.set_x(12, FW_DYNAMIC_INFO_ADDR); // a2: fw_dynamic_info
            if let Some(first) = harts.first() {
                // one copy of the code every hart runs (harts whose models
                // translate differently keep their own)
                hart.share_code_with(first);
            }
            harts.push(hart);
        }

        Ok(Self {
            htif: plan.htif,
            ram,
            idle: vec![false; cfg.harts],
            idle_cycles: vec![0; cfg.harts],
            phase_idle: Vec::new(),
            idle_sig: vec![(0, false); cfg.harts],
            harts,
            board,
            plan,
            dtb,
            fresh: true,
            board_sha256,
            clock,
            quantum: cfg.quantum,
            max_cycles: cfg.max_cycles,
            now: 0,
            stop: None,
            interrupt: None,
            on_progress: None,
            progress_shown: false,
            progress: vec![((0, 0, [0; 4]), 0); cfg.harts],
            markers: MarkerLog::default(),
            echo: cfg.echo_console,
            capture: cfg.capture_console,
            console: Vec::new(),
            console_dropped: 0,
            panic: PanicWatch::default(),
            input: None,
            input_queue: VecDeque::new(),
            slices: 0,
            host_time: Duration::ZERO,
            run_started: None,
            phase_host: Vec::new(),
            snapshot_at: None,
            snapshot_at_first: false,
            snapshot_due: false,
            hart_host_time: vec![Duration::ZERO; cfg.harts],
            obs: None,
            rec_of: None,
        })
    }

    pub fn dtb(&self) -> &[u8] {
        &self.dtb
    }
    pub fn plan(&self) -> &BootPlan {
        &self.plan
    }
    pub fn ram(&self) -> &GuestRam {
        &self.ram
    }
    pub fn harts(&self) -> &[Hart<T>] {
        &self.harts
    }
    pub fn harts_mut(&mut self) -> &mut [Hart<T>] {
        &mut self.harts
    }
    pub fn board(&self) -> &Board {
        &self.board
    }
    pub fn board_mut(&mut self) -> &mut Board {
        &mut self.board
    }
    pub fn clock(&self) -> Clock {
        self.clock
    }
    pub fn markers(&self) -> &MarkerLog {
        &self.markers
    }
    /// The guest kernel's panic line, once its console printed one.
    pub fn guest_panic(&self) -> Option<&str> {
        self.panic.line.as_deref()
    }
    /// The last (up to 12) non-empty console lines, whether or not the
    /// console is captured.
    pub fn console_last_lines(&self) -> Vec<String> {
        self.panic.recent.iter().cloned().collect()
    }

    /// Captured console output (when capture is on).
    pub fn console_output(&self) -> &[u8] {
        &self.console
    }
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.stop
    }
    /// Guest time at the start of the current slice.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Poll `input` for console bytes (interactive use).
    pub fn set_console_input(&mut self, input: Box<dyn ConsoleInput>) {
        self.input = Some(input);
    }
    /// Queue bytes for the UART receiver; they enter as the FIFO has room.
    pub fn push_console_input(&mut self, bytes: &[u8]) {
        self.input_queue.extend(bytes);
    }

    /// End the run at the next slice boundary (at most one quantum of
    /// guest time later) once `flag` is set, with [`StopReason::Interrupted`].
    pub fn set_interrupt_flag(&mut self, flag: &'static std::sync::atomic::AtomicBool) {
        self.interrupt = Some(flag);
    }

    /// Call `f` about once a second of host time while [`Machine::run`]
    /// runs. `f` draws one line on stderr without a newline; the machine
    /// erases it before it echoes console output and when the run ends.
    pub fn set_progress(&mut self, f: Box<dyn FnMut(&Progress)>) {
        self.on_progress = Some(f);
    }

    /// Run until the machine stops.
    pub fn run(&mut self) -> StopReason {
        self.fresh = false;
        if self.stop == Some(StopReason::SnapshotPoint) {
            self.stop = None;
        }
        let started = Instant::now();
        self.run_started = Some(started);
        let mut last_report = started;
        while self.stop.is_none() {
            if self
                .interrupt
                .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
            {
                self.stop = Some(StopReason::Interrupted);
                break;
            }
            self.run_slice();
            // Host time is read every 64 slices only: a progress line must
            // not slow the run it reports on.
            if self.on_progress.is_some() && self.slices.is_multiple_of(64) {
                let t = Instant::now();
                if t.duration_since(last_report) >= Duration::from_secs(1) {
                    last_report = t;
                    let p = Progress {
                        cycles: self.now,
                        guest_seconds: self.now as f64 / self.clock.hz.max(1) as f64,
                        instret: self.harts.iter().map(|h| h.instret()).sum(),
                        host_seconds: (self.host_time + t.duration_since(started)).as_secs_f64(),
                        phase: self.markers.phases.last().map(|p| p.label.clone()),
                    };
                    if let Some(f) = self.on_progress.as_mut() {
                        f(&p);
                        self.progress_shown = true;
                    }
                }
            }
        }
        self.flush_console();
        self.erase_progress();
        self.host_time += started.elapsed();
        self.run_started = None;
        self.stop.unwrap_or(StopReason::HartStop)
    }

    /// One slice for a differential check (`crate::lockstep`): what `run`
    /// does around a slice, without progress lines. The stop reason, once
    /// the machine stops.
    pub(crate) fn lockstep_slice(&mut self) -> Option<StopReason> {
        self.fresh = false;
        if self.stop.is_none()
            && self
                .interrupt
                .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
        {
            self.stop = Some(StopReason::Interrupted);
        }
        if self.stop.is_none() {
            let t0 = Instant::now();
            self.run_slice();
            self.host_time += t0.elapsed();
        }
        if self.stop.is_some() {
            self.flush_console();
        }
        self.stop
    }

    /// Earliest future cycle at which something raises an interrupt.
    /// Deadlines centuries away (a guest writing a huge compare value) count
    /// as never, so time cannot be driven to overflow.
    fn next_deadline(&self) -> Option<u64> {
        let mut next = self.board.events.next_cycle().filter(|&d| d < TIME_HORIZON);
        for (h, hart) in self.harts.iter().enumerate() {
            let timers = [
                self.board.clint.timer_deadline(h),
                hart.next_timer_cycle(),
                self.board.clint.ipi_deadline(h),
            ];
            for d in timers.into_iter().flatten() {
                if d > self.now && d < TIME_HORIZON {
                    next = Some(next.map_or(d, |n| n.min(d)));
                }
            }
        }
        next
    }

    /// The inputs that decide whether hart `h` can leave WFI: platform
    /// interrupt bits and whether its own (Sstc) timer has fired.
    fn wake_signature(&self, h: usize) -> (u64, bool) {
        let c = self.harts[h].cycle();
        (
            self.board.irq_bits(h, c),
            self.harts[h].next_timer_cycle().is_some_and(|d| d <= c),
        )
    }

    fn run_slice(&mut self) {
        self.board.sync_inputs(0, self.now);
        self.board.plic.update();
        let all_idle = (0..self.harts.len())
            .all(|h| self.idle[h] && self.wake_signature(h) == self.idle_sig[h]);
        let deadline = self.next_deadline();
        if all_idle {
            // Interactive only: while the guest idles, wait for the user at
            // most as long as the guest would (idle guest time then passes
            // no faster than wall-clock time).
            let gap = deadline.map_or(IDLE_INPUT_WAIT, |d| {
                let secs = (d - self.now) as f64 / self.clock.hz as f64;
                Duration::from_secs_f64(secs).min(IDLE_INPUT_WAIT)
            });
            self.poll_input(Some(gap));
            if self.stop.is_some() {
                return;
            }
        } else if self.slices.is_multiple_of(INPUT_POLL_SLICES) {
            self.poll_input(None);
        }
        let fed = self.feed_uart();

        let quantum_end = if all_idle && !fed {
            None
        } else {
            Some(self.now.saturating_add(self.quantum))
        };
        let mut end = match (quantum_end, deadline) {
            (Some(q), Some(d)) => q.min(d),
            (Some(q), None) => q,
            (None, Some(d)) => d,
            (None, None) if self.input.is_some() => self.now.saturating_add(self.quantum),
            (None, None) => {
                self.stop = Some(StopReason::AllIdle);
                return;
            }
        };
        if let Some(max) = self.max_cycles {
            if self.now >= max {
                self.stop = Some(StopReason::CycleLimit);
                return;
            }
            end = end.min(max);
        }
        if let Some(t) = self.panic.deadline {
            if self.now >= t {
                self.stop = Some(StopReason::GuestPanic);
                return;
            }
            end = end.min(t);
        }
        if self.now >= TIME_HORIZON {
            self.stop = Some(StopReason::AllIdle);
            return;
        }
        end = end.clamp(self.now + 1, TIME_HORIZON);

        for h in 0..self.harts.len() {
            if self.harts[h].cycle() >= end {
                continue;
            }
            // A hart asleep in wfi whose wake-up inputs have not changed stays
            // asleep: running it would only take a spurious wake-up through
            // the guest's idle loop and back into wfi, every slice.
            if self.idle[h]
                && self.wake_signature(h) == self.idle_sig[h]
                && self
                    .board
                    .irq_change_after(h, self.harts[h].cycle())
                    .is_none_or(|t| t >= end)
            {
                let from = self.harts[h].cycle();
                self.harts[h].advance_to(end);
                self.note_idle(h, from, end);
                continue;
            }
            let slice_t0 = self.obs.is_some().then(Instant::now);
            // After a stop for a sample nothing outside the hart changed:
            // it keeps the interrupt bits it had and resumes, exactly as in
            // an unsampled run.
            let mut deliver = true;
            let mut resume = false;
            // The interrupt bits the hart was last given.
            let mut given = 0u64;
            loop {
                if deliver {
                    let cycle = self.harts[h].cycle();
                    if let Some(r) = self.board.clint.settle_ipi(h, cycle) {
                        self.obs_ipi_release(h, cycle, r);
                    }
                    let bits = self.board.irq_bits(h, cycle);
                    self.harts[h].set_platform_irqs(bits);
                    self.board.note_delivered(h, bits);
                    given = bits;
                }
                deliver = true;
                let resuming = std::mem::take(&mut resume);
                let observed = self.obs.is_some();
                // An IPI another hart sent later in this slice: run up to it.
                let rises = self
                    .board
                    .irq_change_after(h, self.harts[h].cycle())
                    .filter(|&t| t < end);
                let limit = rises.unwrap_or(end);
                let until = if observed {
                    self.run_until(h, limit)
                } else {
                    limit
                };
                if observed {
                    self.obs_before_run(h);
                }
                // (host time is read once per run for a plain run; an observed
                // run may end at every sample (with an instruction trace), so
                // it is read once per slice instead)
                let t0 = (!observed).then(Instant::now);
                let exit = if observed && self.samples_in_run() {
                    self.run_sampled(h, until, resuming)
                } else if resuming {
                    self.harts[h].resume(&mut self.board, until)
                } else {
                    self.harts[h].run(&mut self.board, until)
                };
                // The IPI knob holds an IPI only for a hart with a timer armed.
                self.board
                    .clint
                    .note_own_timer(h, self.harts[h].next_timer_cycle());
                if let Some(t0) = t0 {
                    self.hart_host_time[h] += t0.elapsed();
                }
                if observed {
                    self.obs_after_run(h);
                }
                self.poll_htif();
                match exit {
                    Exit::Budget => {
                        // (a sample deadline may end a run before the slice does)
                        self.idle[h] = false;
                        deliver = rises.is_some_and(|t| self.harts[h].cycle() >= t);
                        resume = !deliver;
                    }
                    Exit::Idle => {
                        // Bits that changed during the run (an IPI the knob
                        // released, a line another device raised) were never
                        // given to the hart: run it again with them rather
                        // than let it sleep past them.
                        let c = self.harts[h].cycle();
                        if let Some(r) = self.board.clint.settle_ipi(h, c) {
                            self.obs_ipi_release(h, c, r);
                        }
                        if self.board.irq_bits(h, c) != given {
                            self.idle[h] = false;
                            continue;
                        }
                        self.idle[h] = true;
                        self.idle_sig[h] = self.wake_signature(h);
                        let from = self.harts[h].cycle();
                        self.harts[h].advance_to(limit);
                        self.note_idle(h, from, limit);
                        if rises.is_none() {
                            break;
                        }
                    }
                    Exit::IrqCheck => {
                        self.idle[h] = false;
                        // This hart may just have armed a timer inside the slice.
                        if let Some(d) = self.next_deadline() {
                            end = end.min(d.max(self.harts[h].cycle() + 1));
                        }
                    }
                    Exit::Marker(m) => self.handle_marker(h, m),
                    Exit::Stop => {
                        self.stop = Some(match self.board.stop_request() {
                            Some(StopRequest::PowerOff) => StopReason::PowerOff,
                            Some(StopRequest::Reset) => StopReason::Reboot,
                            Some(StopRequest::Fail(c)) => StopReason::Fail(c),
                            None => StopReason::HartStop,
                        });
                    }
                }
                if self.stop.is_some() || self.harts[h].cycle() >= end {
                    break;
                }
            }
            if let Some(t0) = slice_t0 {
                self.hart_host_time[h] += t0.elapsed();
            }
            if self.stop.is_some() {
                return;
            }
        }
        self.now = end;
        self.board.fire_events(end);
        self.flush_console();
        self.slices += 1;
        self.check_progress();
        if std::mem::take(&mut self.snapshot_due) && self.stop.is_none() {
            self.stop = Some(StopReason::SnapshotPoint);
        }
    }

    /// Stop (with [`StopReason::SnapshotPoint`]) at the end of the slice in
    /// which the next phase marker labelled `label` retires: the first point
    /// after it at which the machine can be snapshotted.
    pub fn set_snapshot_at(&mut self, label: &str) {
        self.snapshot_at = Some(label.to_string());
    }

    /// As [`Machine::set_snapshot_at`], at the next phase marker whatever its label.
    pub fn set_snapshot_at_first(&mut self) {
        self.snapshot_at_first = true;
    }

    /// Hart `h` slept in `wfi` from `from` to `to`.
    fn note_idle(&mut self, h: usize, from: u64, to: u64) {
        self.idle_cycles[h] += to.saturating_sub(from);
        if self.obs.is_some() {
            self.obs_idle(h, from, to);
        }
    }

    /// Cycles each hart has slept in `wfi`, and the same at each phase marker.
    pub(crate) fn idle_cycles(&self) -> (&[u64], &[Vec<u64>]) {
        (&self.idle_cycles, &self.phase_idle)
    }

    fn handle_marker(&mut self, h: usize, m: MarkerCall) {
        let cycles = self.harts.iter().map(|x| x.cycle()).collect();
        let instret = self.harts.iter().map(|x| x.instret()).collect();
        let phases = self.markers.phases.len();
        self.markers
            .handle(m.op, m.args, h, &HartView(&self.harts[h]), cycles, instret);
        if self.markers.phases.len() > phases {
            let label = self.markers.phases.last().map(|p| p.label.as_str());
            if self.snapshot_at_first
                || (self.snapshot_at.is_some() && self.snapshot_at.as_deref() == label)
            {
                self.snapshot_at = None;
                self.snapshot_at_first = false;
                self.snapshot_due = true;
            }
            let now = self.host_time + self.run_started.map_or(Duration::ZERO, |t| t.elapsed());
            self.phase_host.push(now.as_secs_f64());
            self.phase_idle.push(self.idle_cycles.clone());
        }
        if self.obs.is_some() && self.markers.phases.len() > phases {
            if let Some(p) = self.markers.phases.last() {
                let (cycle, label) = (p.cycle, p.label.clone());
                self.obs_phase(h, cycle, &label);
            }
        }
    }

    /// Stop a hart that only traps at one place (issue 10: random bytes as
    /// a kernel ran forever). Linux never does this: it retires far more
    /// instructions than it takes exceptions, and never at one pc for long.
    fn check_progress(&mut self) {
        for h in 0..self.harts.len() {
            let hart = &self.harts[h];
            let (instret, exc) = (hart.instret(), hart.stats().exceptions);
            // The last traps' places, M-mode's and S-mode's: (epc, cause) each.
            let csr = |n| hart.csr(n).unwrap_or(0);
            let place = [csr(0x341), csr(0x342), csr(0x141), csr(0x142)];
            let ((i0, e0, p0), n) = self.progress[h];
            let traps = exc - e0;
            let stuck = traps > 0 && traps * 2 >= (instret - i0) && place == p0;
            let n = if stuck { n + 1 } else { 0 };
            self.progress[h] = ((instret, exc, place), n);
            if n >= STUCK_SLICES && self.stop.is_none() {
                // Report the mode that took the last trap: S if its cause is set and M's is not.
                let s_mode = place[1] == 0 && place[3] != 0;
                let (pc, cause, tvec) = if s_mode {
                    (place[2], place[3], csr(0x105))
                } else {
                    (place[0], place[1], csr(0x305))
                };
                self.stop = Some(StopReason::TrapStorm {
                    hart: h,
                    cause,
                    pc,
                    tvec,
                });
            }
        }
    }

    /// Move queued console input into the UART as far as it has room; true if any moved.
    fn feed_uart(&mut self) -> bool {
        let Some(console) = self.board.console() else {
            return false;
        };
        let room = console.rx_room();
        if room == 0 || self.input_queue.is_empty() {
            return false;
        }
        for _ in 0..room.min(self.input_queue.len()) {
            if let Some(b) = self.input_queue.pop_front() {
                console.receive(b);
            }
        }
        self.board.plic.update();
        self.idle.iter_mut().for_each(|i| *i = false);
        true
    }

    fn poll_input(&mut self, wait: Option<Duration>) {
        let Some(input) = self.input.as_mut() else {
            return;
        };
        match input.poll(wait) {
            InputEvent::Nothing => {}
            InputEvent::Bytes(b) => self.input_queue.extend(b),
            InputEvent::Quit => self.stop = Some(StopReason::UserQuit),
        }
    }

    fn emit_console(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if self.panic.feed(bytes) && self.panic.deadline.is_none() {
            // Let the kernel finish its report (the backtrace and the
            // `---[ end Kernel panic` line), then stop: a panicked kernel
            // never powers off by itself.
            self.panic.deadline = Some(self.now.saturating_add(self.clock.hz / 10));
        }
        if self.panic.ended {
            self.stop = Some(StopReason::GuestPanic);
        }
        if self.echo {
            use std::io::Write;
            self.erase_progress();
            let mut out = std::io::stdout().lock();
            // A closed stdout must not stop the guest; the capture still has it.
            let _ = out.write_all(bytes).and_then(|_| out.flush());
        }
        if self.capture {
            // The guest decides how much it prints; keep a bounded amount.
            let room = MAX_CAPTURE.saturating_sub(self.console.len());
            self.console
                .extend_from_slice(&bytes[..bytes.len().min(room)]);
            self.console_dropped += bytes.len().saturating_sub(room) as u64;
        }
    }

    /// Erase the progress line, if one is on the terminal.
    fn erase_progress(&mut self) {
        if std::mem::take(&mut self.progress_shown) {
            eprint!("\r\x1b[K");
        }
    }

    fn flush_console(&mut self) {
        let out = match self.board.console() {
            Some(c) if c.has_output() => c.take_output(),
            _ => return,
        };
        self.emit_console(&out);
    }

    /// Spike's host-target interface: the program writes a command to
    /// `tohost`; we execute it, clear `tohost` and acknowledge in `fromhost`.
    fn poll_htif(&mut self) {
        let Some(sym) = self.htif else { return };
        let Some(cmd) = self.ram.read(sym.tohost, 8) else {
            return;
        };
        if cmd == 0 {
            return;
        }
        let (dev, op, payload) = (cmd >> 56, (cmd >> 48) & 0xff, cmd & ((1 << 48) - 1));
        self.ram.write(sym.tohost, 8, 0);
        let mut reply = None;
        match (dev, op) {
            (0, 0) if payload & 1 == 1 => {
                self.flush_console();
                self.stop = Some(StopReason::HtifExit(payload >> 1));
            }
            (0, 0) => {
                // Proxied syscall: payload points at [num, a0, a1, a2, ...].
                let rd = |i: u64| self.ram.read(payload + 8 * i, 8);
                let ret = match (rd(0), rd(1), rd(2), rd(3)) {
                    (Some(64), Some(1 | 2), Some(buf), Some(len)) => {
                        let mut data = vec![0u8; len.min(1 << 20) as usize];
                        if self.ram.read_bytes(buf, &mut data) {
                            self.flush_console();
                            self.emit_console(&data);
                            data.len() as u64
                        } else {
                            (-14i64) as u64 // EFAULT
                        }
                    }
                    (Some(93), Some(code), _, _) => {
                        self.flush_console();
                        self.stop = Some(StopReason::HtifExit(code));
                        0
                    }
                    _ => (-38i64) as u64, // ENOSYS
                };
                self.ram.write(payload, 8, ret);
                reply = Some(1);
            }
            (1, 1) => {
                self.flush_console();
                self.emit_console(&[payload as u8]);
                reply = Some((1 << 56) | (1 << 48) | 0x100 | (payload & 0xff));
            }
            _ => reply = Some((dev << 56) | (op << 48)),
        }
        if let (Some(v), Some(fh)) = (reply, sym.fromhost) {
            self.ram.write(fh, 8, v);
        }
    }

    /// All device counters plus the board's own.
    pub fn device_stats(&self) -> Vec<Stat> {
        let mut v = Vec::new();
        let b = &self.board;
        v.push(Stat::new("bus.mmio_reads", b.stat_mmio_reads, "MMIO reads"));
        v.push(Stat::new(
            "bus.mmio_writes",
            b.stat_mmio_writes,
            "MMIO writes",
        ));
        v.push(Stat::new(
            "bus.unmapped",
            b.stat_unmapped,
            "accesses to unmapped addresses",
        ));
        v.push(Stat::new(
            "bus.bad_access",
            b.stat_bad_access,
            "accesses a device refused",
        ));
        v.push(Stat::new(
            "console.capture_dropped",
            self.console_dropped,
            "console bytes beyond the capture limit",
        ));
        v.extend(b.device_stats());
        v
    }

    pub fn summary(&self) -> RunSummary {
        let secs = self.host_time.as_secs_f64();
        let rate = |n: u64| {
            if secs > 0.0 {
                n as f64 / secs / 1e6
            } else {
                0.0
            }
        };
        let harts: Vec<HartSummary> = self
            .harts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let hs = self.hart_host_time[i].as_secs_f64();
                let mips = if hs > 0.0 {
                    h.instret() as f64 / hs / 1e6
                } else {
                    0.0
                };
                let st = h.stats();
                let tr = h.translation_stats();
                let tr_s = tr.nanos as f64 * 1e-9;
                HartSummary {
                    hart: i,
                    cycles: h.cycle(),
                    instret: h.instret(),
                    host_seconds: hs,
                    mips,
                    blocks_decoded: st.blocks_decoded,
                    block_flushes: st.block_flushes,
                    page_walks: st.page_walks,
                    code_invalidations: st.code_invalidations,
                    block_cache_bytes: h.block_cache_bytes() as u64,
                    translated_blocks: tr.blocks,
                    translation_bytes: tr.bytes,
                    translation_seconds: tr_s,
                    translation_share: if hs > 0.0 { tr_s / hs } else { 0.0 },
                    interpreted_instret: tr.interpreted,
                    tlb_flushes: st.tlb_flushes,
                    tlb_page_flushes: st.tlb_page_flushes,
                    exceptions: st.exceptions,
                    interrupts: st.interrupts,
                }
            })
            .collect();
        let instret = harts.iter().map(|h| h.instret).sum();
        let cycles = harts
            .iter()
            .map(|h| h.cycles)
            .max()
            .unwrap_or(0)
            .max(self.now);
        RunSummary {
            stop: self.stop.map(|s| s.to_string()),
            cycles,
            instret,
            host_seconds: secs,
            mips: rate(instret),
            guest_seconds: cycles as f64 / self.clock.hz as f64,
            harts,
            exit_status: self.markers.exit_status,
            phases: self.markers.phases.clone(),
            phase_host_seconds: self.phase_host.clone(),
            unknown_markers: self.markers.unknown,
            bad_markers: self.markers.bad,
            devices: self
                .device_stats()
                .into_iter()
                .map(|s| (s.name, s.value))
                .collect(),
        }
    }

    /// Write every SEND channel under `dir`.
    pub fn write_channels(&self, dir: &Path) -> Result<Vec<std::path::PathBuf>, MachineError> {
        self.markers.write_channels(dir)
    }
}

/// The QEMU `virt` devices at their fixed addresses and PLIC sources, then
/// the configured devices, then the plugged ones. Returns the board and the
/// boot ROM's id (its contents are written once the images are placed).
/// Public so a fuzz target drives exactly the board a run gets.
pub fn build_board(
    cfg: &mut MachineConfig,
    clock: Clock,
    ram: &GuestRam,
) -> Result<(Board, DevId), MachineError> {
    let mut board = Board::new(cfg.harts, clock, ram, dtb::first_device_phandle(cfg.harts))?;
    let rom = board.add(Want::new("mrom").mmio_at(MROM_BASE, MROM_SIZE), |_| {
        Box::new(Rom::new("mrom", MROM_SIZE, Vec::new()))
    })?;
    board.add(
        Want::new("syscon")
            .mmio_at(SYSCON_BASE, hs_devices::syscon::SIZE)
            .phandle(),
        |_| Box::new(Syscon::new()),
    )?;
    let epoch = cfg.rtc_epoch_secs;
    board.add(
        Want::new("rtc")
            .mmio_at(RTC_BASE, hs_devices::rtc::SIZE)
            .irq_at(RTC_IRQ),
        |a| Box::new(GoldfishRtc::new(a.clock, epoch, a.irq(0))),
    )?;
    board.add(
        Want::new("uart0")
            .mmio_at(UART0_BASE, hs_devices::uart::SIZE)
            .irq_at(UART0_IRQ),
        |a| Box::new(Uart16550::new(a.irq(0))),
    )?;
    let mut backends: Vec<Option<Box<dyn hs_devices::VirtioBackend>>> =
        (0..VIRTIO_COUNT).map(|_| None).collect();
    for d in std::mem::take(&mut cfg.virtio_devices) {
        match backends.get_mut(d.slot) {
            Some(b @ None) => *b = Some((d.make)(ram)),
            Some(Some(_)) => {
                return Err(MachineError::Wiring(format!(
                    "virtio slot {} is given two devices",
                    d.slot
                )))
            }
            None => {
                return Err(MachineError::Wiring(format!(
                    "virtio slot {} does not exist (slots are 0 to {})",
                    d.slot,
                    VIRTIO_COUNT - 1
                )))
            }
        }
    }
    for (i, backend) in backends.into_iter().enumerate() {
        let want = Want::new(format!("virtio{i}"))
            .mmio_at(
                VIRTIO_BASE + VIRTIO_STRIDE * i as u64,
                hs_devices::virtio_mmio::SIZE,
            )
            .irq_at(VIRTIO_IRQ_BASE + i as u32);
        board.add(want, |a| Box::new(VirtioMmio::new(i, a.irq(0), backend)))?;
    }
    let mut plugs = Vec::new();
    for d in std::mem::take(&mut cfg.devices) {
        let plug = hs_devices::resources::plug(&d)
            .map_err(|e| MachineError::Wiring(format!("device `{}`: {e}", d.name)))?;
        if plug.want.name != d.name {
            return Err(MachineError::Wiring(format!(
                "device `{}`: its kind named it `{}`",
                d.name, plug.want.name
            )));
        }
        plugs.push(plug);
    }
    // Devices that refer to others (clocks, DMA controllers) come after those
    // that do not, so a consumer is built knowing its clock's rate.
    plugs.sort_by_key(|p| !p.want.refers_to.is_empty());
    for plug in plugs {
        board.plug(plug)?;
    }
    for p in std::mem::take(&mut cfg.plugs) {
        board.plug(p)?;
    }
    Ok((board, rom))
}

/// Recognises a Linux kernel panic in console output, across writes.
#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct PanicWatch {
    /// The current (unfinished) console line, bounded.
    partial: Vec<u8>,
    /// The first panic line seen.
    line: Option<String>,
    /// The kernel printed the end of its panic report.
    ended: bool,
    /// Cycle at which the run stops if the report never ends.
    deadline: Option<u64>,
    /// The last lines printed (what a panic message shows).
    recent: VecDeque<String>,
}

impl PanicWatch {
    const MARK: &'static str = "Kernel panic - not syncing";

    /// Feed console bytes; true once a panic line has been seen.
    fn feed(&mut self, bytes: &[u8]) -> bool {
        for &b in bytes {
            if b != b'\n' {
                if self.partial.len() < 512 {
                    self.partial.push(b);
                }
                continue;
            }
            let text = String::from_utf8_lossy(&self.partial)
                .trim_end()
                .to_string();
            self.partial.clear();
            if !text.trim().is_empty() {
                if self.recent.len() == 12 {
                    self.recent.pop_front();
                }
                self.recent.push_back(text.clone());
            }
            if let Some(at) = text.find(Self::MARK) {
                if text[..at].contains("---[ end ") {
                    self.ended = self.line.is_some() || {
                        self.line = Some(text[at..].trim_end_matches(" ]---").to_string());
                        true
                    };
                } else if self.line.is_none() {
                    self.line = Some(text[at..].to_string());
                }
            }
        }
        self.line.is_some()
    }
}

#[cfg(test)]
mod panic_watch_tests {
    use super::PanicWatch;

    #[test]
    fn a_panic_line_is_found_across_writes_and_its_report_end_too() {
        let mut w = PanicWatch::default();
        assert!(!w.feed(b"[    1.0] ok\n[    2.0] Kernel pan"));
        assert!(w.feed(b"ic - not syncing: sysrq triggered crash\nCPU: 0 PID: 1\n"));
        assert_eq!(
            w.line.as_deref(),
            Some("Kernel panic - not syncing: sysrq triggered crash")
        );
        assert_eq!(w.recent.back().map(String::as_str), Some("CPU: 0 PID: 1"));
        assert!(!w.ended);
        w.feed(b"---[ end Kernel panic - not syncing: sysrq triggered crash ]---\n");
        assert!(w.ended);
        // A line that only mentions a panic in passing is not one.
        let mut q = PanicWatch::default();
        assert!(!q.feed(b"echo no Kernel-panic here\n"));
    }
}
