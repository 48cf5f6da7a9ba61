//! Observed runs: what to record (samples, timeline events, instruction
//! traces, counters), the machine-side bookkeeping that goes with the
//! [`Observing`] model wrapper, and the [`Observations`] record a run
//! produces. Nothing here changes what the guest sees: a sample deadline
//! ends a `run` call early, and the hart then resumes exactly where it was
//! (its LR reservation and pending checks kept).

use std::collections::BTreeMap;
use std::sync::Arc;

use hs_bus::SystemBus;
use hs_core::{Exit, Hart, Pause};
use hs_observe::{
    cause_name, syscall_name, syscall_number, Event, EventKind, HartCounts, ItraceLine, LineAccess,
    Observations, PhaseRecorder, StatBlock, SymbolOffset, TaskLayout, Unit, UserIdentifier,
};
use hs_timing::{ModelStats, TimingModel, CYCLE_STATES};

use crate::board::{BoardCounts, BoardLog};
use crate::machine::{Machine, MachineConfig};
use crate::observing::{
    privilege, HartRecorder, HartTally, Observing, StepKind, TraceStep, TraceTrigger, CAUSE_BUCKETS,
};
use crate::sampler::{Sampler, SamplerConfig, SpaceMark};
use crate::symbols::GuestSymbols;
use crate::task::TaskReader;
use crate::MachineError;

/// Label of the stretch before the first phase marker.
pub const BOOT_PHASE: &str = "boot to first marker";
/// Default most instruction-trace lines.
pub const DEFAULT_ITRACE_LIMIT: u64 = 200_000;
/// Default most timeline events kept (per hart, and for the board).
pub const DEFAULT_MAX_EVENTS: usize = 2_000_000;

/// Errors in observation options; each names the option at fault.
#[derive(Debug, thiserror::Error)]
pub enum ObserveSetupError {
    #[error("--itrace {spec:?}: {reason}")]
    ItraceSpec { spec: String, reason: String },
    #[error("{0}")]
    Symbols(#[from] hs_observe::ObserveError),
    #[error("cannot write {path}: {source}")]
    Write {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Machine(#[from] MachineError),
}

/// What opens an instruction-trace window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ItraceWindow {
    /// From an `ecall` from U with this number to the return to U.
    Syscall { number: u64 },
    /// From the phase marker with this label to the next phase marker.
    Phase { label: String },
}

/// `--itrace`: which windows, how many, and at most how many lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItraceSpec {
    pub window: ItraceWindow,
    /// Windows to trace (syscall windows: the first `count` calls).
    pub count: u32,
    /// Most lines (instructions) in all.
    pub limit: u64,
    /// Syscall windows open only inside phases with this label.
    pub within: Option<String>,
    /// Syscall windows: calls let pass (per hart) before the first traced
    /// one, so a warm, steady-state call is traced rather than the first.
    pub skip: u32,
}

impl ItraceSpec {
    /// `syscall=NAME|NUMBER[,count=N][,limit=LINES][,in=PHASE]` or
    /// `phase=LABEL[,limit=LINES]`. Labels may contain commas: `in=` takes
    /// the rest of the spec, and from `phase=` only a trailing `,limit=N`
    /// is split off.
    pub fn parse(spec: &str) -> Result<ItraceSpec, ObserveSetupError> {
        let bad = |reason: String| ObserveSetupError::ItraceSpec {
            spec: spec.to_string(),
            reason,
        };
        let num = |key: &str, v: &str| -> Result<u64, ObserveSetupError> {
            v.parse::<u64>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| bad(format!("{key}={v} is not a positive number")))
        };
        if let Some(rest) = spec.strip_prefix("phase=") {
            let (label, limit) = match rest.rsplit_once(",limit=") {
                Some((l, n)) => (l, num("limit", n)?),
                None => (rest, DEFAULT_ITRACE_LIMIT),
            };
            if label.is_empty() {
                return Err(bad("the phase label is empty".into()));
            }
            return Ok(ItraceSpec {
                window: ItraceWindow::Phase {
                    label: label.to_string(),
                },
                count: 1,
                limit,
                within: None,
                skip: 0,
            });
        }
        let (spec_head, within) = match spec.split_once(",in=") {
            Some((h, w)) if !w.is_empty() => (h, Some(w.to_string())),
            Some(_) => return Err(bad("in= needs a phase label".into())),
            None => (spec, None),
        };
        let mut parts = spec_head.split(',');
        let first = parts.next().unwrap_or("");
        let Some(call) = first.strip_prefix("syscall=") else {
            return Err(bad(
                "expected syscall=NAME[,count=N][,limit=LINES] or phase=LABEL[,limit=LINES]".into(),
            ));
        };
        let number = match call.parse::<u64>() {
            Ok(n) => n,
            Err(_) => syscall_number(call)
                .ok_or_else(|| bad(format!("`{call}` is not a riscv64 Linux system call")))?,
        };
        let mut out = ItraceSpec {
            window: ItraceWindow::Syscall { number },
            count: 1,
            limit: DEFAULT_ITRACE_LIMIT,
            within,
            skip: 0,
        };
        for p in parts {
            match p.split_once('=') {
                Some(("count", v)) => out.count = num("count", v)?.min(u32::MAX as u64) as u32,
                Some(("limit", v)) => out.limit = num("limit", v)?,
                Some(("skip", v)) => {
                    out.skip = v
                        .parse::<u32>()
                        .map_err(|_| bad(format!("skip={v} is not a number of calls")))?
                }
                _ => {
                    return Err(bad(format!(
                        "unknown part `{p}` (expected count=N, skip=N, limit=LINES or in=PHASE)"
                    )))
                }
            }
        }
        Ok(out)
    }

    /// How the spec reads back, for captions.
    pub fn describe(&self) -> String {
        match &self.window {
            ItraceWindow::Syscall { number } => {
                let name = syscall_name(*number).map_or(number.to_string(), str::to_string);
                let within = self
                    .within
                    .as_ref()
                    .map_or(String::new(), |w| format!(",in={w}"));
                let skip = if self.skip > 0 {
                    format!(",skip={}", self.skip)
                } else {
                    String::new()
                };
                format!(
                    "syscall={name},count={}{skip},limit={}{within}",
                    self.count, self.limit
                )
            }
            ItraceWindow::Phase { label } => format!("phase={label},limit={}", self.limit),
        }
    }
}

/// What an observed machine records besides counts.
#[derive(Clone, Debug, Default)]
pub struct ObserveOptions {
    /// Keep timeline events (traps, syscalls, IPIs, idle spans, switches).
    pub events: bool,
    /// Most events kept per hart (0: [`DEFAULT_MAX_EVENTS`]).
    pub max_events: usize,
    pub itrace: Option<ItraceSpec>,
}

/// Counters at one phase boundary.
#[derive(Clone, Debug)]
pub(crate) struct Snapshot {
    tallies: Vec<HartTally>,
    board: BoardCounts,
    idle: Vec<u64>,
    /// The timing model's own counters per hart (None: it keeps none).
    model: Vec<Option<ModelStats>>,
}

/// The machine's side of an observed run.
pub(crate) struct MachineObs {
    pub sampler: Option<Sampler>,
    /// Reads which task each hart runs (when the kernel's layout is known).
    pub tasks: Option<TaskReader>,
    pub itrace: Option<ItraceSpec>,
    events: bool,
    max_events: usize,
    pub machine_events: Vec<Event>,
    pub events_dropped: u64,
    /// Cycles each hart spent idle in `wfi`.
    /// Index in `machine_events` of each hart's last idle span (to merge).
    last_idle: Vec<Option<usize>>,
    pub snapshots: Vec<Snapshot>,
    /// Phases up to this index began before a restored snapshot's cut (or
    /// hold it): nothing observed them whole, so they get no observed counters.
    pub unobserved_phases: usize,
    /// The machine's time when observation began (0, or a restore's cut).
    pub observed_from: u64,
    /// A phase trace window is open.
    phase_window_open: bool,
}

impl MachineObs {
    fn new(harts: usize) -> MachineObs {
        MachineObs {
            sampler: None,
            tasks: None,
            itrace: None,
            events: false,
            max_events: DEFAULT_MAX_EVENTS,
            machine_events: Vec::new(),
            events_dropped: 0,
            last_idle: vec![None; harts],
            snapshots: Vec::new(),
            unobserved_phases: 0,
            observed_from: 0,
            phase_window_open: false,
        }
    }

    /// Hart `h` stopped, or paused at a sample deadline: sample it if it
    /// reached one, and note a task switch for the timeline.
    fn look<T: TimingModel>(&mut self, h: usize, hart: &Hart<T>) {
        if let Some(s) = self.sampler.as_mut() {
            s.after_run(h, hart, self.tasks.as_mut());
        }
        if self.events {
            if let Some(task) = self.tasks.as_mut().and_then(|t| t.switched(h, hart)) {
                let kind = EventKind::TaskSwitch {
                    pid: task.pid,
                    tid: task.tid,
                    comm: task.comm.to_string(),
                };
                self.push(Event {
                    hart: h as u16,
                    cycle: hart.cycle(),
                    kind,
                });
            }
        }
    }

    fn push(&mut self, e: Event) {
        if !self.events {
            return;
        }
        if self.machine_events.len() < self.max_events {
            self.machine_events.push(e);
        } else {
            self.events_dropped += 1;
        }
    }
}

/// The sampler of hart `h`, looking at it from inside a run: the hart
/// pauses at each sample deadline exactly where a run ending there would
/// have stopped, and the sample and the task-switch check are what the end
/// of such a run does.
struct SampleLook<'a> {
    h: usize,
    obs: &'a mut MachineObs,
}

impl<T: TimingModel> Pause<T> for SampleLook<'_> {
    fn first(&mut self, _: &Hart<T>) -> u64 {
        self.obs
            .sampler
            .as_ref()
            .map_or(u64::MAX, |s| s.deadline(self.h))
    }
    fn pause(&mut self, hart: &Hart<T>) -> u64 {
        self.obs.look(self.h, hart);
        self.first(hart)
    }
}

fn recorder<M, const TRACE: bool>(t: &mut Observing<M, TRACE>) -> &mut HartRecorder {
    &mut t.rec
}

impl<M: TimingModel, const TRACE: bool> Machine<Observing<M, TRACE>> {
    /// A machine whose harts' models are wrapped in [`Observing`]: counts
    /// always, plus what `opts` asks for (an instruction trace only with
    /// `TRACE`).
    pub fn with_observing(
        cfg: MachineConfig,
        opts: &ObserveOptions,
        inner: impl Fn(usize) -> M,
    ) -> Result<Self, MachineError> {
        if opts.itrace.is_some() && !TRACE {
            return Err(MachineError::TraceNotBuilt);
        }
        let mut m = Machine::with_timing(cfg, |h| Observing::wrap(inner(h), h as u16))?;
        let harts = m.harts.len();
        let max_events = if opts.max_events == 0 {
            DEFAULT_MAX_EVENTS
        } else {
            opts.max_events
        };
        let ram = m.ram().clone();
        let trigger = opts.itrace.as_ref().map(|s| match &s.window {
            ItraceWindow::Syscall { number } => {
                (TraceTrigger::Syscall { number: *number }, s.count)
            }
            ItraceWindow::Phase { .. } => (TraceTrigger::Phase, 0),
        });
        for hart in m.harts.iter_mut() {
            if opts.events {
                hart.timing.rec.record_events(max_events);
            }
            if let (Some((t, windows)), Some(spec)) = (&trigger, &opts.itrace) {
                hart.timing
                    .rec
                    .arm_itrace(t.clone(), *windows, spec.limit, ram.clone());
                if let Some(it) = hart.timing.rec.itrace.as_deref_mut() {
                    it.allowed = spec.within.is_none();
                    it.skip_left = spec.skip;
                }
            }
        }
        let mut obs = m
            .obs
            .take()
            .unwrap_or_else(|| Box::new(MachineObs::new(harts)));
        obs.events = opts.events;
        obs.max_events = max_events;
        obs.itrace = opts.itrace.clone();
        m.obs = Some(obs);
        m.rec_of = Some(recorder::<M, TRACE>);
        m.board.log = Some(Box::new(BoardLog {
            keep_events: opts.events,
            max_events,
            ..BoardLog::default()
        }));
        Ok(m)
    }
}

impl<T: TimingModel> Machine<T> {
    /// Sample every hart every `cfg.period` cycles; `ident` recognises user
    /// binaries (may be empty). Works with any timing model.
    pub fn enable_sampling(&mut self, cfg: SamplerConfig, ident: Arc<UserIdentifier>) {
        let harts = self.harts.len();
        let obs = self
            .obs
            .get_or_insert_with(|| Box::new(MachineObs::new(harts)));
        obs.sampler = Some(Sampler::new(cfg, harts, ident));
    }

    /// Name the task of every sample, and (with timeline events) record
    /// each hart's task switches, reading the guest kernel's `task_struct`
    /// at the offsets `layout` gives. Works with any timing model.
    pub fn enable_task_identity(&mut self, layout: TaskLayout) {
        let harts = self.harts.len();
        let obs = self
            .obs
            .get_or_insert_with(|| Box::new(MachineObs::new(harts)));
        obs.tasks = Some(TaskReader::new(layout, harts));
    }

    /// Physical `[start, end)` of the loaded kernel image, if any.
    pub fn kernel_extent(&self) -> Option<(u64, u64)> {
        let plan = self.plan();
        let seg = plan
            .segments
            .iter()
            .find(|s| plan.kernel_start != 0 && s.addr == plan.kernel_start)?;
        Some((seg.addr, seg.addr + seg.mem_size.max(seg.data.len() as u64)))
    }

    /// The sampler, when sampling.
    pub fn sampler(&self) -> Option<&Sampler> {
        self.obs.as_ref().and_then(|o| o.sampler.as_ref())
    }

    /// Which binary ran in which user address space, as sampling found it.
    pub fn space_marks(&self) -> &[SpaceMark] {
        self.sampler().map_or(&[], |s| &s.marks)
    }

    /// The budget for the next `run` of hart `h`: `end`, or earlier for a
    /// sample when samples end runs (see [`Machine::samples_in_run`]).
    #[inline]
    pub(crate) fn run_until(&self, h: usize, end: u64) -> u64 {
        match self.obs.as_deref().and_then(|o| o.sampler.as_ref()) {
            Some(s) if !self.samples_in_run() => {
                end.min(s.deadline(h).max(self.harts[h].cycle() + 1))
            }
            _ => end,
        }
    }

    pub(crate) fn obs_before_run(&mut self, h: usize) {
        if let Some(f) = self.rec_of {
            let (cycle, prv) = (self.harts[h].cycle(), self.harts[h].priv_mode() as u8);
            f(&mut self.harts[h].timing).sync(cycle, prv);
        }
    }

    pub(crate) fn obs_after_run(&mut self, h: usize) {
        if let Some(f) = self.rec_of {
            let cycle = self.harts[h].cycle();
            f(&mut self.harts[h].timing).settle(cycle);
            self.enforce_itrace_limits();
        }
        if let Some(obs) = self.obs.as_deref_mut() {
            obs.look(h, &self.harts[h]);
        }
    }

    /// Whether the sampler looks at each hart from inside its runs
    /// ([`SampleLook`]) rather than ending a run at each sample: always,
    /// except while an instruction trace may be recorded (a trace closes
    /// its step and checks its limits where a run ends).
    pub(crate) fn samples_in_run(&self) -> bool {
        self.obs
            .as_deref()
            .is_some_and(|o| o.sampler.is_some() && o.itrace.is_none())
    }

    /// Run hart `h` (`resuming`: go on with a run ended early) with the
    /// sampler looking at it at each of its sample deadlines.
    pub(crate) fn run_sampled(&mut self, h: usize, until: u64, resuming: bool) -> Exit {
        fn go<T: TimingModel, B: SystemBus, P: Pause<T>>(
            hart: &mut Hart<T>,
            bus: &mut B,
            until: u64,
            resuming: bool,
            pause: &mut P,
        ) -> Exit {
            if resuming {
                hart.resume_pausing(bus, until, pause)
            } else {
                hart.run_pausing(bus, until, pause)
            }
        }
        let (hart, board) = (&mut self.harts[h], &mut self.board);
        match self.obs.as_deref_mut() {
            Some(obs) => go(hart, board, until, resuming, &mut SampleLook { h, obs }),
            None => go(hart, board, until, resuming, &mut hs_core::NoPause),
        }
    }

    /// Syscall windows: stop every hart once `count` windows or `limit`
    /// lines were reached in all.
    fn enforce_itrace_limits(&mut self) {
        let Some(f) = self.rec_of else { return };
        let Some((syscall, count, limit)) =
            self.obs.as_ref().and_then(|o| o.itrace.as_ref()).map(|s| {
                (
                    matches!(s.window, ItraceWindow::Syscall { .. }),
                    s.count as u64,
                    s.limit,
                )
            })
        else {
            return;
        };
        let (mut windows, mut lines) = (0u64, 0u64);
        for hart in self.harts.iter_mut() {
            if let Some(it) = f(&mut hart.timing).itrace.as_deref() {
                windows += it.windows_opened as u64;
                lines += it.steps.len() as u64;
            }
        }
        let windows_done = syscall && windows >= count;
        if windows_done || lines >= limit {
            for hart in self.harts.iter_mut() {
                if let Some(it) = f(&mut hart.timing).itrace.as_deref_mut() {
                    it.windows_left = 0;
                    if lines >= limit && it.active {
                        it.active = false;
                        it.truncated = true;
                    }
                }
            }
        }
    }

    /// The IPI knob stopped hiding hart `h`'s software interrupt at `cycle`:
    /// a mark on the timeline, so the trace shows why the IPI came late.
    pub(crate) fn obs_ipi_release(&mut self, h: usize, cycle: u64, r: hs_devices::IpiRelease) {
        let Some(obs) = self.obs.as_deref_mut() else {
            return;
        };
        let label = match r {
            hs_devices::IpiRelease::Delayed { held_cycles } => {
                format!("IPI released: [ipi] delay over after {held_cycles} cycles")
            }
            hs_devices::IpiRelease::AtTick { held_cycles } => {
                format!("IPI released at this hart's timer tick after {held_cycles} cycles ([ipi] drop-until-tick)")
            }
            hs_devices::IpiRelease::NoTimer { held_cycles } => {
                format!("IPI released after {held_cycles} cycles: this hart's timer was switched off ([ipi] drop-until-tick)")
            }
        };
        obs.push(Event {
            hart: h as u16,
            cycle,
            kind: EventKind::Instant { label },
        });
    }

    /// Hart `h` idled in `wfi` from `from` to `to`.
    pub(crate) fn obs_idle(&mut self, h: usize, from: u64, to: u64) {
        let Some(obs) = self.obs.as_deref_mut() else {
            return;
        };
        if let Some(s) = obs.sampler.as_mut() {
            s.skip_idle(h, to);
        }
        if to <= from {
            return;
        }
        // Merge with the previous span when the hart never left idle.
        if let Some(i) = obs.last_idle[h] {
            if let Some(Event {
                kind: EventKind::WfiIdle { end_cycle },
                ..
            }) = obs.machine_events.get_mut(i)
            {
                if *end_cycle == from {
                    *end_cycle = to;
                    return;
                }
            }
        }
        if obs.events {
            obs.last_idle[h] = Some(obs.machine_events.len());
        }
        obs.push(Event {
            hart: h as u16,
            cycle: from,
            kind: EventKind::WfiIdle { end_cycle: to },
        });
    }

    /// A phase marker was accepted: snapshot the counters, mark the
    /// timeline, open or close a phase trace window.
    /// The machine was restored from a snapshot: observation starts here.
    /// Phases already begun are known (their cycles and instructions) but
    /// were not observed whole, so they stand at this point's counters and
    /// get none of their own; the sampler starts (or keeps waiting for its
    /// phase) from the harts' new clocks.
    pub(crate) fn obs_restored(&mut self) {
        let Some(mut obs) = self.obs.take() else {
            return;
        };
        let cycles: Vec<u64> = self.harts.iter().map(|x| x.cycle()).collect();
        let labels: Vec<String> = self
            .markers()
            .phases
            .iter()
            .map(|p| p.label.clone())
            .collect();
        if let Some(s) = obs.sampler.as_mut() {
            for l in &labels {
                s.phase(l, &cycles);
            }
            s.restart(&cycles);
        }
        let here = Snapshot {
            tallies: self.tallies(),
            board: self
                .board
                .log
                .as_ref()
                .map(|l| l.counts.clone())
                .unwrap_or_default(),
            idle: self.idle_cycles().0.to_vec(),
            model: self.harts.iter().map(|x| x.timing.model_stats()).collect(),
        };
        obs.snapshots = vec![here; labels.len()];
        obs.unobserved_phases = labels.len();
        obs.observed_from = self.now();
        self.obs = Some(obs);
    }

    pub(crate) fn obs_phase(&mut self, h: usize, cycle: u64, label: &str) {
        let Some(mut obs) = self.obs.take() else {
            return;
        };
        let f = self.rec_of;
        let idle = self.idle_cycles().0.to_vec();
        let tallies: Vec<HartTally> = match f {
            Some(f) => self
                .harts
                .iter_mut()
                .map(|x| f(&mut x.timing).tally.clone())
                .collect(),
            None => Vec::new(),
        };
        let board = self
            .board
            .log
            .as_ref()
            .map(|l| l.counts.clone())
            .unwrap_or_default();
        if let Some(s) = obs.sampler.as_mut() {
            let cycles: Vec<u64> = self.harts.iter().map(|x| x.cycle()).collect();
            s.phase(label, &cycles);
        }
        let model = self.harts.iter().map(|x| x.timing.model_stats()).collect();
        obs.snapshots.push(Snapshot {
            tallies,
            board,
            idle: idle.clone(),
            model,
        });
        obs.push(Event {
            hart: h as u16,
            cycle,
            kind: EventKind::PhaseMarker {
                label: label.to_string(),
            },
        });
        if let (Some(f), Some(want)) = (f, obs.itrace.as_ref().and_then(|s| s.within.as_ref())) {
            let allowed = label == want;
            for hart in self.harts.iter_mut() {
                if let Some(it) = f(&mut hart.timing).itrace.as_deref_mut() {
                    it.allowed = allowed;
                }
            }
        }
        if let (Some(f), Some(ItraceWindow::Phase { label: want })) =
            (f, obs.itrace.as_ref().map(|s| &s.window))
        {
            let open = label == want && !obs.phase_window_open;
            let close = obs.phase_window_open;
            // Harts that have not reached the marker's time yet open (or
            // close) when they do; the others at once (what they ran of
            // this slice before the marker is not traced).
            for hart in self.harts.iter_mut() {
                let now = hart.cycle();
                if let Some(it) = f(&mut hart.timing).itrace.as_deref_mut() {
                    if close {
                        if now >= cycle {
                            it.active = false;
                            it.open_at = None;
                        } else {
                            it.close_at = Some(cycle);
                        }
                    }
                    if open && !it.truncated {
                        if now >= cycle {
                            it.active = true;
                            it.windows_opened += 1;
                        } else {
                            it.open_at = Some(cycle);
                        }
                    }
                }
            }
            obs.phase_window_open = open;
        }
        self.obs = Some(obs);
    }

    /// Recorder accounting errors over all harts (0: the instruction-trace
    /// cycles match `Hart::cycle()` exactly).
    pub fn cycle_mismatches(&mut self) -> u64 {
        let Some(f) = self.rec_of else { return 0 };
        self.harts
            .iter_mut()
            .map(|h| f(&mut h.timing).cycle_mismatches)
            .sum()
    }

    /// Per-hart counts since reset (empty unless the harts are [`Observing`]).
    pub fn tallies(&mut self) -> Vec<HartTally> {
        let Some(f) = self.rec_of else {
            return Vec::new();
        };
        self.harts
            .iter_mut()
            .map(|h| f(&mut h.timing).tally.clone())
            .collect()
    }

    /// Everything the run observed. Takes the samples, events and trace out
    /// of the machine. `symbols` names instruction-trace PCs (kernel,
    /// firmware, user binaries); without it they stay unnamed.
    pub fn take_observations(&mut self, symbols: Option<&GuestSymbols>) -> Observations {
        let n = self.harts.len();
        let end_cycle = self
            .harts
            .iter()
            .map(|h| h.cycle())
            .max()
            .unwrap_or(0)
            .max(self.now());
        let (idle_now, phase_idle) = self.idle_cycles();
        let (idle_now, phase_idle) = (idle_now.to_vec(), phase_idle.to_vec());
        let busy = |cycles: &[u64], idle: &[u64], instret: &[u64]| -> Vec<HartCounts> {
            (0..cycles.len())
                .map(|h| HartCounts {
                    hart: h as u16,
                    cycles: cycles[h].saturating_sub(idle.get(h).copied().unwrap_or(0)),
                    instret: instret.get(h).copied().unwrap_or(0),
                })
                .collect()
        };

        // Phases (busy cycles per hart: idle time is not the hart's work).
        let snaps: Vec<Snapshot> = self
            .obs
            .as_ref()
            .map(|o| o.snapshots.clone())
            .unwrap_or_default();
        let mut rec = PhaseRecorder::new();
        rec.mark(0, BOOT_PHASE, &busy(&vec![0; n], &vec![0; n], &vec![0; n]));
        let markers = self.markers().phases.clone();
        for (i, p) in markers.iter().enumerate() {
            let idle = phase_idle.get(i).cloned().unwrap_or_else(|| vec![0; n]);
            rec.mark(p.cycle, &p.label, &busy(&p.cycles, &idle, &p.instret));
        }
        let cycles_now: Vec<u64> = self.harts.iter().map(|h| h.cycle()).collect();
        let instret_now: Vec<u64> = self.harts.iter().map(|h| h.instret()).collect();
        let phases = rec.finish(end_cycle, &busy(&cycles_now, &idle_now, &instret_now));

        // Counters: cumulative now, and at each phase boundary.
        let tallies = self.tallies();
        let board_now = self
            .board
            .log
            .as_ref()
            .map(|l| l.counts.clone())
            .unwrap_or_default();
        let observed = self.rec_of.is_some();
        let model_now: Vec<Option<ModelStats>> =
            self.harts.iter().map(|h| h.timing.model_stats()).collect();
        let start = Snapshot {
            tallies: vec![HartTally::default(); tallies.len()],
            board: BoardCounts::default(),
            idle: vec![0; n],
            model: vec![None; n],
        };
        let end = Snapshot {
            tallies: tallies.clone(),
            board: board_now.clone(),
            idle: idle_now.clone(),
            model: model_now,
        };
        let mut bounds = vec![start];
        bounds.extend(snaps.iter().cloned());
        bounds.push(end.clone());
        // Per-phase counters need a snapshot at every marker (a machine that
        // was not observed from reset has none).
        let per_phase = snaps.len() == markers.len();
        // Phases a restored run did not see whole (see `obs_restored`).
        let unobserved = self.obs.as_ref().map_or(0, |o| o.unobserved_phases);

        let summary = self.summary();
        let mut total = StatBlock::new("total");
        let _ = total.add_u64(
            "system.cycles",
            summary.cycles,
            Unit::Cycle,
            "Machine cycles from reset to the end of the run",
        );
        let _ = total.add_u64(
            "system.instret",
            summary.instret,
            Unit::Count,
            "Instructions retired by all harts",
        );
        for h in 0..n {
            let p = format!("system.cpu{h}");
            let (c, i) = (cycles_now[h], instret_now[h]);
            let _ = total.add_u64(
                &format!("{p}.cycles"),
                c,
                Unit::Cycle,
                "Cycles of the hart, idle included",
            );
            let _ = total.add_u64(
                &format!("{p}.idleCycles"),
                idle_now[h],
                Unit::Cycle,
                "Cycles idle in wfi",
            );
            let _ = total.add_u64(
                &format!("{p}.instret"),
                i,
                Unit::Count,
                "Instructions retired",
            );
            let _ = total.add_ratio(
                &format!("{p}.cpi"),
                c - idle_now[h].min(c),
                i,
                Unit::CyclePerCount,
                "Busy cycles per instruction",
            );
        }
        add_model_stats(&mut total, &end, &bounds[0]);
        if observed {
            let from = self.obs.as_ref().map_or(0, |o| o.observed_from);
            if from > 0 {
                let _ = total.add_u64(
                    "observation.startCycle",
                    from,
                    Unit::Cycle,
                    "Cycle from which the counters below count (the run went on from a snapshot)",
                );
            }
            add_counts(&mut total, &end, &bounds[0]);
        }
        let phase_stats = phases
            .iter()
            .enumerate()
            .map(|(i, ph)| {
                let mut b = StatBlock::for_phase(ph);
                for hc in &ph.harts {
                    let p = format!("system.cpu{}", hc.hart);
                    let _ = b.add_u64(
                        &format!("{p}.cycles"),
                        hc.cycles,
                        Unit::Cycle,
                        "Busy cycles of the hart in the phase",
                    );
                    let _ = b.add_u64(
                        &format!("{p}.instret"),
                        hc.instret,
                        Unit::Count,
                        "Instructions retired in the phase",
                    );
                    let _ = b.add_ratio(
                        &format!("{p}.cpi"),
                        hc.cycles,
                        hc.instret,
                        Unit::CyclePerCount,
                        "Busy cycles per instruction",
                    );
                }
                let per_phase = per_phase && (unobserved == 0 || i > unobserved);
                if let (true, Some(a), Some(z)) = (per_phase, bounds.get(i), bounds.get(i + 1)) {
                    add_model_stats(&mut b, z, a);
                }
                if observed && per_phase {
                    if let (Some(a), Some(z)) = (bounds.get(i), bounds.get(i + 1)) {
                        add_counts(&mut b, z, a);
                        let calls: u64 = z
                            .tallies
                            .iter()
                            .zip(&a.tallies)
                            .map(|(z, a)| z.since(a).syscall_total())
                            .sum();
                        let _ = b.add_ratio(
                            "system.cyclesPerSyscall",
                            ph.cycles(),
                            calls,
                            Unit::CyclePerCount,
                            "Phase cycles per system call made in it",
                        );
                    }
                }
                b
            })
            .collect();

        // Timeline: hart events, board claims and IPIs, machine events.
        let mut events: Vec<Event> = Vec::new();
        let mut dropped = 0;
        if let Some(f) = self.rec_of {
            for hart in self.harts.iter_mut() {
                let r = f(&mut hart.timing);
                dropped += r.events_dropped;
                events.extend(r.take_events());
            }
        }
        if let Some(log) = self.board.log.as_deref_mut() {
            attach_plic_sources(&mut events, &log.claims);
            for &(from, cycle, to) in &log.ipis {
                events.push(Event {
                    hart: from,
                    cycle,
                    kind: EventKind::IpiSent { to },
                });
            }
            log.claims.clear();
            log.ipis.clear();
        }
        if let Some(obs) = self.obs.as_deref_mut() {
            dropped += obs.events_dropped;
            events.append(&mut obs.machine_events);
            obs.last_idle.iter_mut().for_each(|i| *i = None);
        }
        events.sort_by_key(|e| (e.cycle, e.hart));
        if dropped > 0 {
            let _ = total.add_u64(
                "system.eventsDropped",
                dropped,
                Unit::Count,
                "Timeline events beyond the limit (not kept)",
            );
        }

        // Samples.
        let (samples, period) = match self.obs.as_deref_mut().and_then(|o| o.sampler.as_mut()) {
            Some(s) => {
                let _ = total.add_u64(
                    "system.samples",
                    s.kept() as u64,
                    Unit::Count,
                    "Samples kept",
                );
                let _ = total.add_u64(
                    "system.samplesDropped",
                    s.dropped,
                    Unit::Count,
                    "Samples beyond the limit (not kept)",
                );
                let _ = total.add_u64(
                    "system.samplesIdleSkipped",
                    s.idle_skipped,
                    Unit::Count,
                    "Sample deadlines in wfi idle time (not sampled)",
                );
                let _ = total.add_u64(
                    "system.samplesMerged",
                    s.overshot,
                    Unit::Count,
                    "Sample deadlines one block ran past after an earlier one (one sample stands for both)",
                );
                (s.take_samples(), s.period())
            }
            None => (Vec::new(), 0),
        };

        // Instruction trace.
        let mut steps: Vec<(u16, TraceStep)> = Vec::new();
        let mut truncated = false;
        if let Some(f) = self.rec_of {
            for (h, hart) in self.harts.iter_mut().enumerate() {
                if let Some(it) = f(&mut hart.timing).itrace.as_deref_mut() {
                    truncated |= it.truncated;
                    steps.extend(
                        std::mem::take(&mut it.steps)
                            .into_iter()
                            .map(|s| (h as u16, s)),
                    );
                }
            }
        }
        let itrace = itrace_lines(
            &mut steps,
            self.obs.as_ref().and_then(|o| o.itrace.as_ref()),
            symbols,
        );
        if truncated {
            let _ = total.add_u64(
                "system.itraceTruncated",
                1,
                Unit::Count,
                "The instruction trace reached its line limit",
            );
        }

        Observations {
            guest_hz: self.clock().hz,
            sample_period: period,
            total,
            phase_stats,
            phases,
            samples,
            events,
            itrace,
        }
    }
}

/// Fill each external interrupt's PLIC source from the first claim its hart
/// made after it (and before that hart's next external interrupt).
fn attach_plic_sources(events: &mut [Event], claims: &[(u16, u64, u32)]) {
    events.sort_by_key(|e| (e.cycle, e.hart));
    let mut by_hart: std::collections::BTreeMap<u16, Vec<(u64, u32)>> =
        std::collections::BTreeMap::new();
    for &(h, c, s) in claims {
        by_hart.entry(h).or_default().push((c, s));
    }
    let mut next: std::collections::BTreeMap<u16, usize> = std::collections::BTreeMap::new();
    // Walk interrupts in time order per hart; claims are in time order too.
    let irq_idx: Vec<usize> = (0..events.len())
        .filter(|&i| matches!(events[i].kind, EventKind::Interrupt { cause: 9 | 11, .. }))
        .collect();
    for (k, &i) in irq_idx.iter().enumerate() {
        let hart = events[i].hart;
        let start = events[i].cycle;
        let limit = irq_idx[k + 1..]
            .iter()
            .find(|&&j| events[j].hart == hart)
            .map(|&j| events[j].cycle);
        let Some(list) = by_hart.get(&hart) else {
            continue;
        };
        let pos = next.entry(hart).or_insert(0);
        while *pos < list.len() && list[*pos].0 < start {
            *pos += 1;
        }
        if let Some(&(c, src)) = list.get(*pos) {
            if !matches!(limit, Some(l) if c >= l) {
                if let EventKind::Interrupt { plic_source, .. } = &mut events[i].kind {
                    *plic_source = Some(src);
                }
                *pos += 1;
            }
        }
    }
}

/// Short stat-name part for a trap cause.
fn cause_key(interrupt: bool, cause: usize) -> String {
    let name = if interrupt {
        match cause {
            1 => "supervisorSoftware",
            3 => "machineSoftware",
            5 => "supervisorTimer",
            7 => "machineTimer",
            9 => "supervisorExternal",
            11 => "machineExternal",
            _ => "",
        }
    } else {
        match cause {
            0 => "misalignedFetch",
            1 => "fetchAccessFault",
            2 => "illegalInstruction",
            3 => "breakpoint",
            4 => "misalignedLoad",
            5 => "loadAccessFault",
            6 => "misalignedStore",
            7 => "storeAccessFault",
            8 => "ecallFromU",
            9 => "ecallFromS",
            11 => "ecallFromM",
            12 => "fetchPageFault",
            13 => "loadPageFault",
            15 => "storePageFault",
            _ => "",
        }
    };
    match (name, cause) {
        ("", c) if c == CAUSE_BUCKETS - 1 => format!("cause{c}AndAbove"),
        ("", c) => format!("cause{c}"),
        (n, _) => n.to_string(),
    }
}

fn syscall_key(n: u64) -> String {
    syscall_name(n).map_or(format!("nr{n}"), str::to_string)
}

/// The timing model's counters between two snapshots: the cycle shape as
/// `system.cpuN.cycleShape.STATE`, memory stall cycles as
/// `system.cpuN.memStallCycles`, the rest as `system.cpuN.model.NAME`.
fn add_model_stats(b: &mut StatBlock, z: &Snapshot, a: &Snapshot) {
    for (h, now) in z.model.iter().enumerate() {
        let Some(now) = now else { continue };
        let before = a.model.get(h).and_then(|m| m.as_ref());
        let pre = format!("system.cpu{h}");
        for st in &now.stats {
            let value = st
                .value
                .saturating_sub(before.and_then(|m| m.get(st.name)).unwrap_or(0));
            let unit = if st.unit == "cycles" {
                Unit::Cycle
            } else {
                Unit::Count
            };
            let name = match st.name {
                "cycles.mem_stall" => format!("{pre}.memStallCycles"),
                n if CYCLE_STATES.contains(&n) => {
                    format!("{pre}.cycleShape.{}", &n["cycles.".len()..])
                }
                n => format!("{pre}.model.{n}"),
            };
            let _ = b.add_u64(&name, value, unit, st.desc);
        }
    }
}

/// Counts between two snapshots, per hart and for the machine.
fn add_counts(b: &mut StatBlock, z: &Snapshot, a: &Snapshot) {
    let harts = z.tallies.len();
    let board = z.board.since(&a.board);
    let mut all = HartTally::default();
    let mut ctx = 0;
    for h in 0..harts {
        let d = z.tallies[h].since(a.tallies.get(h).unwrap_or(&HartTally::default()));
        let p = format!("system.cpu{h}");
        let idle = z
            .idle
            .get(h)
            .copied()
            .unwrap_or(0)
            .saturating_sub(a.idle.get(h).copied().unwrap_or(0));
        let _ = b.add_u64(
            &format!("{p}.idleCycles"),
            idle,
            Unit::Cycle,
            "Cycles idle in wfi",
        );
        for (kind, arr, interrupt) in [
            ("exceptions", &d.exceptions, false),
            ("interrupts", &d.interrupts, true),
        ] {
            let total: u64 = arr.iter().sum();
            let what = if interrupt {
                "Interrupts taken"
            } else {
                "Exceptions taken (ecalls included)"
            };
            let _ = b.add_u64(&format!("{p}.{kind}"), total, Unit::Count, what);
            for (c, &v) in arr.iter().enumerate().filter(|(_, v)| **v > 0) {
                let desc = match cause_name(interrupt, c as u64) {
                    Some(n) => format!("{what}: {n}"),
                    None => format!("{what}: cause {c}"),
                };
                let _ = b.add_u64(
                    &format!("{p}.{kind}.{}", cause_key(interrupt, c)),
                    v,
                    Unit::Count,
                    &desc,
                );
            }
        }
        for (&(hart, src), &v) in board
            .claims
            .iter()
            .filter(|((hart, _), _)| *hart as usize == h)
        {
            let _ = b.add_u64(
                &format!("system.cpu{hart}.interrupts.plic.source{src}"),
                v,
                Unit::Count,
                &format!("External interrupts of PLIC source {src} claimed by the hart"),
            );
        }
        let sent = board.ipis_sent.get(&(h as u16)).copied().unwrap_or(0);
        let raised = board.ipis_raised.get(&(h as u16)).copied().unwrap_or(0);
        let _ = b.add_u64(
            &format!("{p}.ipis.sent"),
            sent,
            Unit::Count,
            "IPIs the hart sent (CLINT msip writes)",
        );
        let _ = b.add_u64(
            &format!("{p}.ipis.received"),
            raised,
            Unit::Count,
            "IPIs raised on the hart",
        );
        let _ = b.add_u64(
            &format!("{p}.syscalls"),
            d.syscall_total(),
            Unit::Count,
            "System calls (ecall from U)",
        );
        for (&n, &v) in &d.syscalls {
            let _ = b.add_u64(
                &format!("{p}.syscalls.{}", syscall_key(n)),
                v,
                Unit::Count,
                &format!("System call {n}"),
            );
        }
        for (&n, &v) in &d.syscall_cycles {
            let _ = b.add_u64(
                &format!("{p}.syscallCycles.{}", syscall_key(n)),
                v,
                Unit::Cycle,
                &format!("Cycles from the ecall to the return to U of system call {n}"),
            );
        }
        let _ = b.add_u64(
            &format!("{p}.contextSwitches"),
            d.satp_writes,
            Unit::Count,
            "satp writes (address-space switches)",
        );
        let _ = b.add_u64(
            &format!("{p}.wfi"),
            d.wfi,
            Unit::Count,
            "wfi instructions executed",
        );
        ctx += d.satp_writes;
        for i in 0..CAUSE_BUCKETS {
            all.exceptions[i] += d.exceptions[i];
            all.interrupts[i] += d.interrupts[i];
        }
        for (&n, &v) in &d.syscalls {
            *all.syscalls.entry(n).or_default() += v;
        }
        for (&n, &v) in &d.syscall_cycles {
            *all.syscall_cycles.entry(n).or_default() += v;
        }
    }
    let _ = b.add_u64(
        "system.exceptions",
        all.exceptions.iter().sum(),
        Unit::Count,
        "Exceptions taken by all harts",
    );
    let _ = b.add_u64(
        "system.interrupts",
        all.interrupts.iter().sum(),
        Unit::Count,
        "Interrupts taken by all harts",
    );
    let mut by_source: std::collections::BTreeMap<u32, u64> = std::collections::BTreeMap::new();
    for (&(_, src), &v) in &board.claims {
        *by_source.entry(src).or_default() += v;
    }
    for (src, v) in by_source {
        let _ = b.add_u64(
            &format!("system.interrupts.plic.source{src}"),
            v,
            Unit::Count,
            &format!("Claims of PLIC source {src}, all harts"),
        );
    }
    let _ = b.add_u64(
        "system.ipis",
        board.ipis_sent.values().sum(),
        Unit::Count,
        "IPIs sent by all harts",
    );
    let _ = b.add_u64(
        "system.syscalls",
        all.syscall_total(),
        Unit::Count,
        "System calls by all harts",
    );
    for (&n, &v) in &all.syscalls {
        let _ = b.add_u64(
            &format!("system.syscalls.{}", syscall_key(n)),
            v,
            Unit::Count,
            &format!("System call {n}, all harts"),
        );
    }
    for (&n, &v) in &all.syscall_cycles {
        let key = syscall_key(n);
        let _ = b.add_u64(
            &format!("system.syscallCycles.{key}"),
            v,
            Unit::Cycle,
            &format!("Cycles in system call {n} (ecall to return), all harts"),
        );
        let calls = all.syscalls.get(&n).copied().unwrap_or(0);
        let _ = b.add_ratio(
            &format!("system.syscallMeanCycles.{key}"),
            v,
            calls,
            Unit::CyclePerCount,
            &format!("Mean cycles from the ecall to the return to U of system call {n}"),
        );
    }
    let _ = b.add_u64(
        "system.contextSwitches",
        ctx,
        Unit::Count,
        "satp writes by all harts",
    );
}

/// Turn recorded steps into trace lines: syscall windows beyond `count`
/// (harts may open some in the same slice) are dropped, then every line is
/// named and disassembled.
fn itrace_lines(
    steps: &mut Vec<(u16, TraceStep)>,
    spec: Option<&ItraceSpec>,
    symbols: Option<&GuestSymbols>,
) -> Vec<ItraceLine> {
    let Some(spec) = spec else { return Vec::new() };
    // Windows in the order they started, across harts.
    let mut starts: Vec<(u64, u16, u32)> = Vec::new();
    for (h, s) in steps.iter() {
        if !starts.iter().any(|&(_, hh, w)| hh == *h && w == s.window) {
            starts.push((s.cycle, *h, s.window));
        }
    }
    starts.sort();
    let keep: Vec<(u16, u32)> = match spec.window {
        ItraceWindow::Syscall { .. } => starts
            .iter()
            .take(spec.count as usize)
            .map(|&(_, h, w)| (h, w))
            .collect(),
        ItraceWindow::Phase { .. } => starts.iter().map(|&(_, h, w)| (h, w)).collect(),
    };
    steps.retain(|(h, s)| keep.contains(&(*h, s.window)));
    steps.sort_by_key(|(h, s)| (s.cycle, *h));
    steps.truncate(spec.limit as usize);
    // What every instruction pays per cause (a pipeline stage the model
    // charges in a hook) is not a stall; an access is a hit when it cost no
    // more than the cheapest access of its kind in the trace.
    let mut base = [u64::MAX; 9];
    let mut cheapest: BTreeMap<LineAccess, u64> = BTreeMap::new();
    for (_, s) in steps.iter().filter(|(_, s)| s.kind == StepKind::Insn) {
        for (b, &c) in base.iter_mut().zip(&s.stall) {
            *b = (*b).min(c);
        }
        for &(_, a, c) in &s.lines {
            let e = cheapest.entry(a).or_insert(c);
            *e = (*e).min(c);
        }
    }
    if steps.is_empty() {
        base = [0; 9];
    }
    let cheapest = |a: LineAccess| cheapest.get(&a).copied().unwrap_or(0);
    steps
        .iter()
        .map(|(h, s)| {
            let disasm = match s.kind {
                StepKind::Insn => {
                    let (insn, _) = hs_isa::decode(s.bits);
                    hs_isa::disasm(&insn, s.pc)
                }
                StepKind::Interrupt => match cause_name(true, s.bits as u64) {
                    Some(n) => format!("<{n}>"),
                    None => format!("<interrupt {}>", s.bits),
                },
                StepKind::FetchFault => "<instruction fetch fault>".to_string(),
            };
            let symbol = symbols
                .and_then(|g| g.name_step(*h, s))
                .map(|(name, offset)| SymbolOffset { name, offset });
            ItraceLine {
                hart: *h,
                cycle: s.cycle,
                pc: s.pc,
                privilege: privilege(s.prv),
                symbol,
                disasm,
                cycles: s.cycles,
                stall: s.stall(&base),
                lines: s.touches(&cheapest),
                source: match (s.kind, s.prv) {
                    (StepKind::Insn, 1) => symbols.and_then(|g| g.kernel_source_line(s.pc)),
                    _ => None,
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An instruction trace needs a machine built to trace: one built
    /// without is refused (its hooks would never look for the trace), one
    /// built with it has every hart's trace armed.
    #[test]
    fn only_a_machine_built_to_trace_takes_an_itrace() {
        use crate::{BootFile, BootImages};
        use hs_timing::Atomic;
        let cfg = || MachineConfig {
            harts: 2,
            images: BootImages {
                firmware: Some(BootFile::from_bytes("fw.bin", vec![0x13; 64])),
                kernel: None,
                initrd: None,
            },
            ..MachineConfig::default()
        };
        let opts = ObserveOptions {
            itrace: Some(ItraceSpec::parse("syscall=getppid,count=1").unwrap()),
            ..ObserveOptions::default()
        };
        let untraced = Machine::<Observing<Atomic>>::with_observing(cfg(), &opts, |_| Atomic);
        assert!(matches!(untraced, Err(MachineError::TraceNotBuilt)));
        let plain = ObserveOptions::default();
        let m = Machine::<Observing<Atomic>>::with_observing(cfg(), &plain, |_| Atomic)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(m.harts().iter().all(|h| h.timing.rec.itrace.is_none()));
        let m = Machine::<Observing<Atomic, true>>::with_observing(cfg(), &opts, |_| Atomic)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(m.harts().iter().all(|h| h.timing.rec.itrace.is_some()));
    }

    #[test]
    fn itrace_specs() {
        let s = ItraceSpec::parse("syscall=getppid,count=1").unwrap();
        assert_eq!(
            s,
            ItraceSpec {
                window: ItraceWindow::Syscall { number: 173 },
                count: 1,
                limit: DEFAULT_ITRACE_LIMIT,
                within: None,
                skip: 0,
            }
        );
        let s = ItraceSpec::parse("syscall=getppid,skip=1000,in=loop").unwrap();
        assert_eq!(
            (s.skip, s.describe().as_str()),
            (
                1000,
                "syscall=getppid,count=1,skip=1000,limit=200000,in=loop"
            )
        );
        assert!(ItraceSpec::parse("syscall=getppid,skip=-1").is_err());
        let s = ItraceSpec::parse("syscall=getppid,count=2,in=nullsys getppid loop").unwrap();
        assert_eq!(
            (s.count, s.within.as_deref()),
            (2, Some("nullsys getppid loop"))
        );
        assert_eq!(
            s.describe(),
            "syscall=getppid,count=2,limit=200000,in=nullsys getppid loop"
        );
        assert!(ItraceSpec::parse("syscall=getppid,in=").is_err());
        let s = ItraceSpec::parse("syscall=64,count=3,limit=500").unwrap();
        assert_eq!(
            (s.window, s.count, s.limit),
            (ItraceWindow::Syscall { number: 64 }, 3, 500)
        );
        assert_eq!(
            ItraceSpec::parse("syscall=write").unwrap().describe(),
            "syscall=write,count=1,limit=200000"
        );
        let s = ItraceSpec::parse("phase=ls /bin, /usr,limit=10").unwrap();
        assert_eq!(
            (s.window, s.limit),
            (
                ItraceWindow::Phase {
                    label: "ls /bin, /usr".into()
                },
                10
            )
        );
        let e = ItraceSpec::parse("syscall=frobnicate")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--itrace \"syscall=frobnicate\": `frobnicate` is not a riscv64 Linux system call"
        );
        assert!(ItraceSpec::parse("syscall=read,count=0").is_err());
        assert!(ItraceSpec::parse("syscall=read,color=red").is_err());
        assert!(ItraceSpec::parse("phase=").is_err());
        assert!(ItraceSpec::parse("everything").is_err());
    }

    #[test]
    fn plic_sources_come_from_the_following_claim_of_the_same_hart() {
        let irq = |hart, cycle| Event {
            hart,
            cycle,
            kind: EventKind::Interrupt {
                cause: 9,
                plic_source: None,
            },
        };
        let mut events = vec![irq(0, 100), irq(1, 105), irq(0, 200), irq(0, 300)];
        // hart 0 claims 10 after its first irq, hart 1 claims 1; hart 0's second
        // irq claims nothing before its third, which claims 11.
        let claims = vec![(0, 110, 10), (1, 107, 1), (0, 320, 11), (0, 330, 12)];
        attach_plic_sources(&mut events, &claims);
        let src: Vec<Option<u32>> = events
            .iter()
            .map(|e| match e.kind {
                EventKind::Interrupt { plic_source, .. } => plic_source,
                _ => None,
            })
            .collect();
        assert_eq!(src, vec![Some(10), Some(1), None, Some(11)]);
    }

    #[test]
    fn cause_keys_are_stat_names() {
        for interrupt in [false, true] {
            for c in 0..CAUSE_BUCKETS {
                hs_observe::stats::check_stat_name(&format!(
                    "system.cpu0.x.{}",
                    cause_key(interrupt, c)
                ))
                .unwrap();
            }
        }
        assert_eq!(cause_key(false, 13), "loadPageFault");
        assert_eq!(cause_key(true, 5), "supervisorTimer");
        assert_eq!(cause_key(false, 15), "storePageFault");
        assert_eq!(cause_key(false, 16), "cause16AndAbove");
        assert_eq!(syscall_key(173), "getppid");
        assert_eq!(syscall_key(9999), "nr9999");
    }
}
