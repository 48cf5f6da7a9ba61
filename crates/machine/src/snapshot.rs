//! Snapshot and restore of a whole machine (issue 17): taken between two
//! slices, where every hart has reached the slice's end and nothing is in
//! flight, so a restored machine runs its next slice exactly as the machine
//! that never stopped would.
//!
//! Sections: `machine` (time, idle bookkeeping, the marker log, console
//! capture, the harts' architectural state), `fingerprint` (what must match
//! for the restore to make sense), `board` and `dev.NAME` (the board, see
//! [`Board::save`](crate::Board::save)), and `timing.N` / `timing.model`
//! when the timing model keeps state (caches, predictor, counters).
//! Observation (samples, timeline, the counters of the `Observing` wrapper)
//! is not state: a restored run observes from the cut on.

use std::collections::VecDeque;

use hs_core::{Hart, HartState};
use hs_snapshot::Snapshot;
use hs_timing::TimingModel;
use serde::{Deserialize, Serialize};

use crate::error::MachineError;
use crate::machine::{Machine, PanicWatch, ProgressMark};
use crate::markers::MarkerLog;

/// What the machine itself keeps (the board and the harts' models are
/// sections of their own).
#[derive(Serialize, Deserialize)]
struct MachineState {
    now: u64,
    idle: Vec<bool>,
    idle_cycles: Vec<u64>,
    phase_idle: Vec<Vec<u64>>,
    idle_sig: Vec<(u64, bool)>,
    progress: Vec<ProgressMark>,
    markers: MarkerLog,
    console: Vec<u8>,
    console_dropped: u64,
    panic: PanicWatch,
    input_queue: VecDeque<u8>,
    slices: u64,
    phase_host: Vec<f64>,
    harts: Vec<HartState>,
    /// RAM's code-page tracking: flagged pages, generation, write log.
    code: (Vec<u64>, u64, Vec<u64>),
}

/// What shaped the machine: a snapshot restores only onto a machine that
/// agrees on all of it. The device tree carries the harts, RAM, devices,
/// their addresses and lines, the timer rate and the kernel command line;
/// it is hashed without the PMU's event list, which is the timing model's
/// (a snapshot may go on under another model: the guest keeps the list it
/// booted with).
#[derive(Serialize, Deserialize, PartialEq, Eq)]
struct Fingerprint {
    harts: usize,
    ram_bytes: u64,
    hz: u64,
    quantum: u64,
    dtb_sha256: String,
}

/// Whether a restore put the timing model's state back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimingRestore {
    /// Caches, TLBs, predictor and counters as they were.
    Warm,
    /// The model starts empty, for this reason.
    Cold(String),
}

fn err(m: impl Into<String>) -> MachineError {
    MachineError::Snapshot(m.into())
}

fn section<'a>(s: &'a Snapshot, name: &str) -> Result<&'a [u8], MachineError> {
    s.sections
        .get(name)
        .map(Vec::as_slice)
        .ok_or_else(|| err(format!("the snapshot has no `{name}` section")))
}

impl<T: TimingModel> Machine<T> {
    fn fingerprint(&self) -> Fingerprint {
        Fingerprint {
            harts: self.harts.len(),
            ram_bytes: self.ram.size(),
            hz: self.clock.hz,
            quantum: self.quantum,
            dtb_sha256: self.board_sha256.clone(),
        }
    }

    /// The machine as it stands between slices. `model` names the timing
    /// model's description (its state is restored only under the same
    /// one). Refuses a machine holding a device without save/restore.
    pub fn snapshot(&self, model: &str) -> Result<Snapshot, MachineError> {
        let mut snap = Snapshot::default();
        self.board.save(&mut snap.sections)?;
        let state = MachineState {
            now: self.now,
            idle: self.idle.clone(),
            idle_cycles: self.idle_cycles.clone(),
            phase_idle: self.phase_idle.clone(),
            idle_sig: self.idle_sig.clone(),
            progress: self.progress.clone(),
            markers: self.markers.clone(),
            console: self.console.clone(),
            console_dropped: self.console_dropped,
            panic: self.panic.clone(),
            input_queue: self.input_queue.clone(),
            slices: self.slices,
            phase_host: self.phase_host.clone(),
            harts: self.harts.iter().map(|h| h.save_state()).collect(),
            code: self.ram.code_state(),
        };
        let enc =
            |name: &str, r: Result<Vec<u8>, String>| r.map_err(|e| err(format!("{name}: {e}")));
        snap.sections.insert(
            "machine".into(),
            enc("machine", hs_snapshot::state::encode(&state))?,
        );
        snap.sections.insert(
            "fingerprint".into(),
            enc(
                "fingerprint",
                hs_snapshot::state::encode(&self.fingerprint()),
            )?,
        );
        let timing: Option<Vec<Vec<u8>>> = self
            .harts
            .iter()
            .enumerate()
            .map(|(h, hart)| hart.timing.save_state(h == 0))
            .collect::<Option<Result<_, String>>>()
            .transpose()
            .map_err(|e| err(format!("the timing model: {e}")))?;
        if let Some(states) = timing {
            snap.sections
                .insert("timing.model".into(), model.as_bytes().to_vec());
            for (h, data) in states.into_iter().enumerate() {
                snap.sections.insert(format!("timing.{h}"), data);
            }
        }
        snap.set_ram(self.ram.base(), self.ram_bytes());
        Ok(snap)
    }

    /// Page-aligned `[start, end)` of everything the loader wrote to RAM.
    fn loaded_pages(&self) -> Vec<(u64, u64)> {
        let plan = self.plan();
        let page = |a: u64| a & !0xfff;
        let mut r: Vec<(u64, u64)> = plan
            .segments
            .iter()
            .map(|s| (page(s.addr), page(s.addr + s.data.len() as u64 + 0xfff)))
            .collect();
        r.push((
            page(plan.dtb_addr),
            page(plan.dtb_addr + self.dtb.len() as u64 + 0xfff),
        ));
        r
    }

    /// Guest RAM as bytes.
    fn ram_bytes(&self) -> &[u8] {
        // SAFETY: the RAM mapping is `size` bytes long and lives as long as
        // `self.ram`; nothing writes it while the machine is borrowed.
        unsafe {
            std::slice::from_raw_parts(self.ram.host_ptr(self.ram.base()), self.ram.size() as usize)
        }
    }

    /// Go on from `snap`, taken on a machine built the same way. The
    /// timing model's state comes back when `keep_timing` and the snapshot
    /// was taken under the same model description (`model`); otherwise the
    /// model starts cold, and the result says why. On an error the machine
    /// must not be run (it may be half restored).
    pub fn restore(
        &mut self,
        snap: &Snapshot,
        model: &str,
        keep_timing: bool,
    ) -> Result<TimingRestore, MachineError> {
        let theirs: Fingerprint = hs_snapshot::state::decode(section(snap, "fingerprint")?)
            .map_err(|e| err(format!("fingerprint: {e}")))?;
        let mine = self.fingerprint();
        if theirs != mine {
            let what = if theirs.harts != mine.harts {
                format!("{} harts, this machine {}", theirs.harts, mine.harts)
            } else if theirs.ram_bytes != mine.ram_bytes {
                format!(
                    "{} MiB of RAM, this machine {}",
                    theirs.ram_bytes >> 20,
                    mine.ram_bytes >> 20
                )
            } else if theirs.hz != mine.hz {
                format!(
                    "a {} MHz clock, this machine {}",
                    theirs.hz / 1_000_000,
                    mine.hz / 1_000_000
                )
            } else if theirs.quantum != mine.quantum {
                format!(
                    "a quantum of {} cycles, this machine {}",
                    theirs.quantum, mine.quantum
                )
            } else {
                "another device tree (another kernel command line, board or device)".to_string()
            };
            return Err(err(format!("it was taken on a machine with {what}")));
        }
        let state: MachineState = hs_snapshot::state::decode(section(snap, "machine")?)
            .map_err(|e| err(format!("machine: {e}")))?;
        let n = self.harts.len();
        let lens = [
            state.idle.len(),
            state.idle_cycles.len(),
            state.idle_sig.len(),
            state.progress.len(),
            state.harts.len(),
        ];
        if lens.iter().any(|&l| l != n) || state.phase_idle.iter().any(|p| p.len() != n) {
            return Err(err(format!("machine: its per-hart lists are not {n} long")));
        }
        if snap.ram_base != self.ram.base() {
            return Err(err(format!(
                "its RAM starts at {:#x}; this machine's at {:#x}",
                snap.ram_base,
                self.ram.base()
            )));
        }
        // Check everything that can be checked before anything changes.
        let timing = self.timing_plan(snap, model, keep_timing)?;
        // SAFETY: as `ram_bytes`; the harts hold no references into RAM
        // across this call (their host caches are dropped below).
        let ram = unsafe {
            std::slice::from_raw_parts_mut(
                self.ram.host_ptr(self.ram.base()),
                self.ram.size() as usize,
            )
        };
        // A machine that has not run holds only what the loader wrote.
        let (base, loaded) = (self.ram.base(), self.loaded_pages());
        snap.restore_ram_where(ram, |i| {
            !self.fresh
                || loaded
                    .iter()
                    .any(|&(a, b)| (a..b).contains(&(base + i * 4096)))
        })
        .map_err(err)?;
        self.board.restore(&snap.sections)?;
        for (h, (hart, hs)) in self.harts.iter_mut().zip(&state.harts).enumerate() {
            hart.restore_state(hs)
                .map_err(|e| err(format!("hart {h}: {e}")))?;
        }
        Hart::restore_shared_code(&mut self.harts, &state.harts);
        // (after the harts: decoding their blocks again flags pages as code)
        let (pages, gen, log) = &state.code;
        self.ram
            .restore_code_state(pages, *gen, log)
            .map_err(|e| err(format!("machine: {e}")))?;
        if timing == TimingRestore::Warm {
            for (h, hart) in self.harts.iter_mut().enumerate() {
                hart.timing
                    .restore_state(section(snap, &format!("timing.{h}"))?, h == 0)
                    .map_err(|e| err(format!("hart {h}'s timing model: {e}")))?;
            }
        }
        self.now = state.now;
        self.idle = state.idle;
        self.idle_cycles = state.idle_cycles;
        self.phase_idle = state.phase_idle;
        self.idle_sig = state.idle_sig;
        self.progress = state.progress;
        self.markers = state.markers;
        self.console = state.console;
        self.console_dropped = state.console_dropped;
        self.panic = state.panic;
        self.input_queue = state.input_queue;
        self.slices = state.slices;
        self.phase_host = state.phase_host;
        self.stop = None;
        self.fresh = false;
        self.obs_restored();
        Ok(timing)
    }

    /// Whether the timing state can come back (Warm), or why not.
    fn timing_plan(
        &self,
        snap: &Snapshot,
        model: &str,
        keep_timing: bool,
    ) -> Result<TimingRestore, MachineError> {
        let Some(saved) = snap.sections.get("timing.model") else {
            return Ok(TimingRestore::Cold(
                "the snapshot holds no timing-model state".into(),
            ));
        };
        if !keep_timing {
            return Ok(TimingRestore::Cold(
                "asked to start the timing model cold".into(),
            ));
        }
        if saved.as_slice() != model.as_bytes() {
            return Ok(TimingRestore::Cold(format!(
                "the snapshot was taken under another timing model ({})",
                String::from_utf8_lossy(saved)
            )));
        }
        for h in 0..self.harts.len() {
            section(snap, &format!("timing.{h}"))?;
        }
        Ok(TimingRestore::Warm)
    }
}
