//! Shared boots (issue 17): runs that would boot the same guest on the
//! same machine boot it once. The boot runs to the guest's first phase
//! marker and is snapshotted there (and kept in the cache, keyed by all
//! that shaped it, so the next study run skips it); every run then goes on
//! from the snapshot. With `fast-forward` the boot runs on the atomic model
//! and each run goes on under its own timing model from the cut, its
//! caches and predictor cold; otherwise the boot runs under the runs' own
//! model and they go on warm, exactly as if they had booted themselves
//! (apart from what was observed before the cut: see `Machine::restore`).

use std::path::PathBuf;
use std::sync::Arc;

use hs_machine::hs_timing::{Atomic, InOrderFactory, ModelDesc, TimingModel};
use hs_machine::{Machine, StopReason};
use hs_snapshot::Snapshot;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{io_err, LabError, Result};
use crate::run::{machine_config, machine_parts, Prepared};

/// How a study's runs start (`[study] boot`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BootMode {
    /// Every run boots from reset.
    #[default]
    Each,
    /// Runs with the same guest and machine share one boot, under their own model.
    Shared,
    /// Runs with the same guest and board share one boot on the atomic
    /// model; each goes on under its own model, cold.
    FastForward,
}

impl BootMode {
    pub fn parse(s: &str) -> Option<BootMode> {
        match s {
            "each" => Some(BootMode::Each),
            "shared" => Some(BootMode::Shared),
            "fast-forward" => Some(BootMode::FastForward),
            _ => None,
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            BootMode::Each => "each",
            BootMode::Shared => "shared",
            BootMode::FastForward => "fast-forward",
        }
    }
}

/// A booted machine to go on from.
pub struct Start {
    pub snapshot: Arc<Snapshot>,
    pub info: SharedBootInfo,
}

/// What a run that went on from a shared boot records about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedBootInfo {
    /// The snapshot's key (the hash of everything that shaped the boot).
    pub key: String,
    /// The phase marker the boot was cut at, and the machine's cycle there.
    pub phase: String,
    pub cycle: u64,
    /// The timing model the boot ran under.
    pub boot_model: String,
    /// `warm`, or `cold: why`.
    pub timing: String,
    /// The snapshot came from the cache (no boot ran in this study run).
    pub cached: bool,
}

/// Names a timing model for snapshot purposes: `atomic`, or the hash of
/// the machine description's text.
pub fn model_id(desc_text: Option<&str>) -> String {
    match desc_text {
        None => "atomic".into(),
        Some(t) => format!("description sha256:{:.16x}", Sha256::digest(t.as_bytes())),
    }
}

/// The boot this run would share, as a key: the hartscope binary, the
/// images, the kernel command line, the workload, the machine and the
/// description the boot runs under (in fast-forward, only its board).
pub fn boot_key(p: &Prepared, mode: BootMode) -> Result<String> {
    let v = &p.variant;
    let mut h = Sha256::new();
    h.update(exe_sha256().map_err(|message| LabError::Run {
        variant: v.name.clone(),
        message,
    })?);
    for file in [p.image.firmware.as_path(), p.image.kernel.as_path()] {
        let data = std::fs::read(file).map_err(io_err("read", file))?;
        h.update(Sha256::digest(&data));
    }
    h.update(p.initrd_sha256.as_bytes());
    h.update(p.bootargs.as_bytes());
    h.update(format!("{} {} {} {}", v.harts, v.memory_bytes, v.mhz, v.quantum).as_bytes());
    let (_, ipi, devices) = machine_parts(v)?;
    h.update(format!("{ipi:?} {devices:?}").as_bytes());
    // A device backed by a file (a disk image): the file as it is now, by
    // size and modification time (a changed image must not reuse the boot).
    for d in &devices {
        for value in d.params.values() {
            if let hs_machine::hs_devices::ParamValue::Str(path) = value {
                if let Ok(meta) = std::fs::metadata(path) {
                    let mtime = meta
                        .modified()
                        .ok()
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                    h.update(format!("{path} {} {mtime:?}", meta.len()).as_bytes());
                }
            }
        }
    }
    h.update(format!("max cycles {:?}", v.max_cycles).as_bytes());
    if mode == BootMode::Shared {
        h.update(model_id(v.machine_desc_text.as_deref()).as_bytes());
    }
    h.update(hs_snapshot::VERSION.to_le_bytes());
    Ok(format!("{:x}", h.finalize()))
}

/// The running hartscope binary's hash, read once: a snapshot made by
/// another build is not used (the simulation may have changed).
fn exe_sha256() -> std::result::Result<[u8; 32], String> {
    static DIGEST: std::sync::OnceLock<std::result::Result<[u8; 32], String>> =
        std::sync::OnceLock::new();
    DIGEST
        .get_or_init(|| {
            let exe = std::env::current_exe().map_err(|e| {
                format!("cannot find the hartscope binary to key its snapshot: {e}")
            })?;
            let data = std::fs::read(&exe)
                .map_err(|e| format!("cannot read {} to key its snapshot: {e}", exe.display()))?;
            Ok(Sha256::digest(&data).into())
        })
        .clone()
}

/// Snapshots kept in the cache (each is 50–150 MB; another build of
/// hartscope makes new ones, so old ones are only ever garbage).
const KEEP_SNAPSHOTS: usize = 8;

/// Delete the oldest cached snapshots (by modification time) beyond `keep`.
fn prune_cache(keep: usize) {
    let Ok(dir) = std::fs::read_dir(cache_dir()) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = dir
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "snap"))
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    files.sort();
    let excess = files.len().saturating_sub(keep);
    for (_, p) in files.into_iter().take(excess) {
        let _ = std::fs::remove_file(p);
    }
}

fn cache_dir() -> PathBuf {
    hs_guest::Builder::from_env().cache.join("snapshots")
}

/// The snapshot for `p`'s boot: from the cache, or boot now and keep it.
pub fn shared_boot(
    p: &Prepared,
    mode: BootMode,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(Start, String)> {
    let key = boot_key(p, mode)?;
    let boot_model = match mode {
        BootMode::FastForward => model_id(None),
        _ => model_id(p.variant.machine_desc_text.as_deref()),
    };
    let path = cache_dir().join(format!("{key}.snap"));
    let (snapshot, cached) =
        match Snapshot::read(&path) {
            Ok(s) => {
                // (used now: the last to be pruned)
                let _ = std::fs::File::options()
                    .append(true)
                    .open(&path)
                    .and_then(|f| f.set_modified(std::time::SystemTime::now()));
                progress(&format!("shared boot: from the cache ({})", path.display()));
                (s, true)
            }
            Err(e) => {
                if path.exists() {
                    progress(&format!(
                        "shared boot: the cached snapshot is unusable ({e}); booting again"
                    ));
                }
                progress(&format!(
                "shared boot: booting `{}` once on {} hart(s) ({} model) to the first phase marker",
                p.variant.image,
                p.variant.harts,
                if mode == BootMode::FastForward { "atomic" } else { "the runs' own" }
            ));
                let s = boot_to_first_marker(p, mode, &boot_model)?;
                std::fs::create_dir_all(cache_dir())
                    .map_err(io_err("create directory", &cache_dir()))?;
                prune_cache(KEEP_SNAPSHOTS - 1);
                s.write_atomic(&path).map_err(|e| LabError::Run {
                    variant: p.variant.name.clone(),
                    message: e.to_string(),
                })?;
                (s, false)
            }
        };
    let (phase, cycle) = cut_of(&snapshot).unwrap_or_default();
    let info = SharedBootInfo {
        key: key.clone(),
        phase,
        cycle,
        boot_model,
        timing: String::new(),
        cached,
    };
    Ok((
        Start {
            snapshot: Arc::new(snapshot),
            info,
        },
        key,
    ))
}

/// The phase and cycle a snapshot was cut at (from its `cut` section).
fn cut_of(s: &Snapshot) -> Option<(String, u64)> {
    hs_snapshot::state::decode(s.sections.get("cut")?).ok()
}

fn boot_to_first_marker(p: &Prepared, mode: BootMode, model: &str) -> Result<Snapshot> {
    let v = &p.variant;
    let (desc, ipi, devices) = machine_parts(v)?;
    let desc = if mode == BootMode::FastForward {
        ModelDesc::Atomic
    } else {
        desc
    };
    let cfg = machine_config(p, devices, ipi)?;
    match desc {
        ModelDesc::Atomic => boot_with(p, cfg, model, |_| Atomic),
        ModelDesc::InOrder(c) => {
            let harts = InOrderFactory::new(&c);
            boot_with(p, cfg, model, |_| harts.build())
        }
    }
}

fn boot_with<M: TimingModel>(
    p: &Prepared,
    cfg: hs_machine::MachineConfig,
    model_id: &str,
    model: impl Fn(usize) -> M,
) -> Result<Snapshot> {
    let fail = |message: String| LabError::Run {
        variant: p.variant.name.clone(),
        message: format!("shared boot: {message}"),
    };
    let mut machine = Machine::with_timing(cfg, model).map_err(|e| fail(e.to_string()))?;
    machine.set_snapshot_at_first();
    let stop = machine.run();
    if stop != StopReason::SnapshotPoint {
        return Err(fail(format!(
            "the guest stopped ({stop}) before its first phase marker"
        )));
    }
    let mut snap = machine
        .snapshot(model_id)
        .map_err(|e| fail(e.to_string()))?;
    let label = machine
        .markers()
        .phases
        .last()
        .map(|p| p.label.clone())
        .unwrap_or_default();
    let cut = hs_snapshot::state::encode(&(label, machine.now())).map_err(fail)?;
    snap.sections.insert("cut".into(), cut);
    Ok(snap)
}
