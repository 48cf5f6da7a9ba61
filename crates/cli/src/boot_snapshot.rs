//! `boot --snapshot-at LABEL --snapshot-out FILE` and `boot --restore FILE`
//! (issue 17): what of the command line a snapshot keeps, and how a
//! restoring command line is merged with it.

use std::path::Path;

use hs_machine::hs_timing::TimingModel;
use hs_machine::{Machine, TimingRestore};
use hs_snapshot::Snapshot;
use sha2::{Digest, Sha256};

use crate::cmd_boot::BootArgs;

/// The section holding the command line that built the machine.
const ARGS_SECTION: &str = "boot.args";
/// The disk images the machine's drives read, as they were (path, size,
/// modification time): a restore refuses a changed image, whose blocks the
/// saved overlay no longer matches.
const DRIVES_SECTION: &str = "boot.drives";

fn drive_files(args: &BootArgs) -> Vec<(String, u64, u64)> {
    args.drive
        .iter()
        .filter_map(|spec| {
            let path = spec.split(',').find_map(|kv| kv.strip_prefix("file="))?;
            let meta = std::fs::metadata(path).ok()?;
            let mtime = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as u64);
            Some((path.to_string(), meta.len(), mtime))
        })
        .collect()
}

/// Names the timing model: `atomic`, or the machine description's file
/// name and content hash (state is restored only under the same one).
pub fn model_id(machine: Option<&Path>) -> Result<String, String> {
    let Some(path) = machine else {
        return Ok("atomic".into());
    };
    let data = std::fs::read(path)
        .map_err(|e| format!("--machine: cannot read {}: {e}", path.display()))?;
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    Ok(format!("{name} sha256:{:.16x}", Sha256::digest(&data)))
}

/// The command line to rebuild the snapshot's machine with: everything
/// that shaped the machine from the snapshot, what to observe and write
/// from `cur`. `--machine` from `cur` replaces the snapshot's (another
/// timing model; the board it describes must be the same).
pub fn restored_args(cur: BootArgs, path: &Path) -> Result<(BootArgs, Snapshot), String> {
    let snap = Snapshot::read(path).map_err(|e| e.to_string())?;
    let saved = snap.sections.get(ARGS_SECTION).ok_or_else(|| {
        format!(
            "snapshot {}: it holds no `{ARGS_SECTION}` section (not made by `boot --snapshot-out`)",
            path.display()
        )
    })?;
    let saved: BootArgs = hs_snapshot::state::decode(saved)
        .map_err(|e| format!("snapshot {}: its command line: {e}", path.display()))?;
    if let Some(files) = snap.sections.get(DRIVES_SECTION) {
        let then: Vec<(String, u64, u64)> = hs_snapshot::state::decode(files)
            .map_err(|e| format!("snapshot {}: its drives: {e}", path.display()))?;
        let now = drive_files(&saved);
        if let Some((file, ..)) = then.iter().find(|f| !now.contains(f)) {
            return Err(format!(
                "snapshot {}: the disk image `{file}` has changed (or gone) since the snapshot was taken",
                path.display()
            ));
        }
    }
    let args = BootArgs {
        // what built the machine
        image: saved.image,
        bios: saved.bios,
        kernel: saved.kernel,
        initrd: saved.initrd,
        append: saved.append,
        smp: saved.smp,
        mem: saved.mem,
        workload: saved.workload,
        mhz: saved.mhz,
        quantum: saved.quantum,
        drive: saved.drive,
        machine: cur.machine.or(saved.machine),
        // what this run does and writes
        max_cycles: cur.max_cycles.or(saved.max_cycles),
        restore: cur.restore,
        cold_timing: cur.cold_timing,
        snapshot_at: cur.snapshot_at,
        snapshot_out: cur.snapshot_out,
        continue_after_snapshot: cur.continue_after_snapshot,
        ..cur
    };
    Ok((args, snap))
}

/// Put the snapshot's state into a freshly built `machine` and say how.
pub fn restore<T: TimingModel>(
    machine: &mut Machine<T>,
    snap: &Snapshot,
    args: &BootArgs,
    model: &str,
) -> Result<(), String> {
    let path = args.restore.as_deref().unwrap_or(Path::new("?"));
    let t0 = std::time::Instant::now();
    let how = machine
        .restore(snap, model, !args.cold_timing)
        .map_err(|e| format!("cannot restore {}: {e}", path.display()))?;
    let phase = machine
        .markers()
        .phases
        .last()
        .map_or(hs_machine::BOOT_PHASE.to_string(), |p| {
            format!("`{}`", p.label)
        });
    let timing = match how {
        TimingRestore::Warm => {
            "timing model warm (its caches, TLBs and predictor as saved)".to_string()
        }
        TimingRestore::Cold(why) => format!("timing model cold: {why}"),
    };
    eprintln!(
        "hartscope: restored {} at cycle {} (phase {phase}) in {:.2} s; {timing}",
        path.display(),
        machine.now(),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Write the machine as it stands, with the command line that built it.
pub fn write<T: TimingModel>(
    machine: &Machine<T>,
    args: &BootArgs,
    model: &str,
) -> Result<(), String> {
    let Some(out) = args.snapshot_out.as_deref() else {
        return Ok(());
    };
    let t0 = std::time::Instant::now();
    let mut snap = machine.snapshot(model).map_err(|e| e.to_string())?;
    let saved = BootArgs {
        restore: None,
        snapshot_at: None,
        snapshot_out: None,
        continue_after_snapshot: false,
        ..args.clone()
    };
    let encoded = hs_snapshot::state::encode(&saved)?;
    snap.sections.insert(ARGS_SECTION.into(), encoded);
    snap.sections.insert(
        DRIVES_SECTION.into(),
        hs_snapshot::state::encode(&drive_files(args))?,
    );
    snap.write_atomic(out).map_err(|e| e.to_string())?;
    let size = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "hartscope: snapshot at cycle {} written to {} ({:.1} MB, {} of {} RAM pages stored) in {:.2} s; go on from it with `hartscope boot --restore {}`",
        machine.now(),
        out.display(),
        size as f64 / 1e6,
        snap.pages.len(),
        snap.ram_size / hs_snapshot::PAGE as u64,
        t0.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(())
}
