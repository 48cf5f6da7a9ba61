//! Running one variant: the initramfs with its workload, the machine, and
//! the run record made from what the machine observed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hs_guest::{ImageDir, KernelSymbols};
use hs_machine::{BootFile, BootImages, Machine, MachineConfig, StopReason};
use hs_observe::export::{stats_txt, HotFunctions};
use hs_observe::{HartCounts, Observations, PhaseRecorder, StatBlock, Symbolizer, SymbolTable, Unit};

use crate::error::{io_err, LabError, Result};
use crate::record::*;
use crate::scenario::{merge_cmdline, Scenario, Variant};

/// Label of the stretch before the guest's first phase marker.
pub const BOOT_PHASE: &str = "boot to first marker";
/// Longest slice one hart runs before the next gets its turn (as `hartscope boot`).
pub const QUANTUM: u64 = 10_000;
pub const TIMING: &str = "atomic (1 cycle per instruction; the in-order timing model is not part of this build yet)";

/// A variant with its image resolved and its initramfs built: ready to run
/// any number of times, from any thread.
pub struct Prepared {
    pub variant: Variant,
    pub image: ImageDir,
    pub manifest: serde_json::Value,
    pub bootargs: String,
    pub initrd: Vec<u8>,
    pub initrd_sha256: String,
}

/// Build the variant's initramfs: the image's own plus the workload with
/// the variant's environment exported at the top of `run.sh`.
pub fn prepare(variant: &Variant, image: &ImageDir, scratch: &Path) -> Result<Prepared> {
    let img_err = |message: String| LabError::Image { image: variant.image.clone(), message };
    let manifest_path = image.dir.join("manifest.json");
    let manifest_text = std::fs::read_to_string(&manifest_path).map_err(io_err("read", &manifest_path))?;
    let manifest: serde_json::Value =
        serde_json::from_str(&manifest_text).map_err(|e| img_err(format!("{} is not JSON ({e})", manifest_path.display())))?;
    let staged = scratch.join(format!("workload-{}", variant.name));
    let _ = std::fs::remove_dir_all(&staged);
    stage_workload(&variant.workload, &staged, &variant.env)?;
    let initrd = hs_guest::workload_initrd(image, &staged).map_err(|e| img_err(e.to_string()));
    let _ = std::fs::remove_dir_all(&staged);
    let initrd = initrd?;
    Ok(Prepared {
        variant: variant.clone(),
        image: image.clone(),
        manifest,
        bootargs: merge_cmdline(&image.default_append, &variant.append),
        initrd_sha256: crate::sha256_hex(&initrd),
        initrd,
    })
}

/// Copy the workload directory to `to`, prefixing `run.sh` with `export`
/// lines for `env` (after a `#!` line if it has one).
pub fn stage_workload(from: &Path, to: &Path, env: &BTreeMap<String, String>) -> Result<()> {
    copy_tree(from, to)?;
    if env.is_empty() {
        return Ok(());
    }
    let run = to.join("run.sh");
    let text = std::fs::read_to_string(&run).map_err(io_err("read", &run))?;
    let mut exports = String::from("# exported by the study (hartscope lab)\n");
    for (k, v) in env {
        exports.push_str(&format!("export {k}='{}'\n", v.replace('\'', "'\\''")));
    }
    let out = match text.strip_prefix("#!") {
        Some(_) => {
            let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
            format!("{first}\n{exports}{rest}")
        }
        None => format!("{exports}{text}"),
    };
    std::fs::write(&run, out).map_err(io_err("write", &run))
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).map_err(io_err("create directory", to))?;
    for e in std::fs::read_dir(from).map_err(io_err("list", from))? {
        let e = e.map_err(io_err("list", from))?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let meta = std::fs::symlink_metadata(&src).map_err(io_err("inspect", &src))?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&src).map_err(io_err("read link", &src))?;
            std::os::unix::fs::symlink(&target, &dst).map_err(io_err("create link", &dst))?;
        } else if meta.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            // fs::copy keeps the permission bits, so executables stay executable.
            std::fs::copy(&src, &dst).map_err(io_err("copy", &src))?;
        }
    }
    Ok(())
}

/// What a finished run hands back: the record and the raw console bytes.
pub struct Finished {
    pub record: RunRecord,
    pub console: Vec<u8>,
}

/// Boot the variant, run the workload to its end and make the record.
/// `artefacts_dir` receives the console text, `stats.txt` and the guest's
/// channels. Any stop other than a reported workload exit is an error.
pub fn execute(p: &Prepared, scenario: &Scenario, repeat: u32, artefacts_dir: &Path) -> Result<Finished> {
    let v = &p.variant;
    let run_err = |message: String| LabError::Run { variant: v.name.clone(), message };
    let started_at = crate::timestamp::now_rfc3339();
    let read = |what, path: &Path| BootFile::read(what, path).map_err(|e| run_err(e.to_string()));
    let cfg = MachineConfig {
        harts: v.harts,
        ram_bytes: v.memory_bytes,
        hz: v.mhz * 1_000_000,
        quantum: QUANTUM,
        images: BootImages {
            firmware: Some(read("firmware", &p.image.firmware)?),
            kernel: Some(read("kernel", &p.image.kernel)?),
            initrd: Some(BootFile::from_bytes(format!("{} + workload {}", p.image.initrd.display(), v.workload.display()), p.initrd.clone())),
        },
        bootargs: p.bootargs.clone(),
        max_cycles: v.max_cycles,
        echo_console: false,
        capture_console: true,
        ..MachineConfig::default()
    };
    let mut machine = Machine::new(cfg).map_err(|e| run_err(e.to_string()))?;
    let stop = machine.run();
    let console = machine.console_output().to_vec();
    let exit_status = machine.markers().exit_status;
    match (stop, exit_status) {
        (StopReason::PowerOff, Some(_)) => {}
        (StopReason::CycleLimit, _) => {
            return Err(run_err(format!(
                "the guest did not finish within workload.max_guest_seconds ({} cycles); nothing was stored",
                v.max_cycles.unwrap_or(0)
            )))
        }
        (other, None) => {
            return Err(run_err(format!("the guest stopped ({other}) without reporting the workload's exit status; nothing was stored{}", tail(&console))))
        }
        (other, Some(_)) => return Err(run_err(format!("the machine stopped unexpectedly ({other}); nothing was stored"))),
    }

    let summary = machine.summary();
    let observations = observations(&machine, summary.cycles);
    let profile = profile(&observations, &p.image).map_err(run_err)?;
    let counters = Counters {
        cycles: summary.cycles,
        instret: summary.instret,
        guest_seconds: summary.guest_seconds,
        host_seconds: summary.host_seconds,
        mips: summary.mips,
        harts: summary.harts.iter().map(|h| HartCounters { hart: h.hart, cycles: h.cycles, instret: h.instret }).collect(),
        devices: summary.devices.clone(),
        unknown_markers: summary.unknown_markers,
        bad_markers: summary.bad_markers,
    };

    std::fs::create_dir_all(artefacts_dir).map_err(io_err("create directory", artefacts_dir))?;
    let mut artefacts = Vec::new();
    let mut write = |kind: &str, name: &str, data: &[u8]| -> Result<()> {
        let path = artefacts_dir.join(name);
        std::fs::write(&path, data).map_err(io_err("write", &path))?;
        artefacts.push(Artefact { kind: kind.into(), path: path.display().to_string() });
        Ok(())
    };
    write("console", "console.txt", &console)?;
    write("stats", "stats.txt", stats_txt(&observations.phase_stats, &observations.total).as_bytes())?;
    if !machine.markers().channels.is_empty() {
        let dir = artefacts_dir.join("channels");
        let _ = std::fs::remove_dir_all(&dir);
        machine.write_channels(&dir).map_err(|e| run_err(e.to_string()))?;
        artefacts.push(Artefact { kind: "channels".into(), path: dir.display().to_string() });
    }

    let record = RunRecord {
        study: scenario.name.clone(),
        variant: v.name.clone(),
        repeat,
        scenario: ScenarioSource {
            path: scenario.path.display().to_string(),
            sha256: scenario.sha256.clone(),
            text: scenario.text.clone(),
        },
        hartscope_version: crate::VERSION.to_string(),
        image: ImageInfo { name: p.image.name.clone(), manifest: p.manifest.clone() },
        machine: MachineInfo {
            harts: v.harts,
            memory_bytes: v.memory_bytes,
            mhz: v.mhz,
            quantum: QUANTUM,
            bootargs: p.bootargs.clone(),
            timing: TIMING.into(),
            description: None,
        },
        workload: WorkloadInfo { dir: v.workload.display().to_string(), env: v.env.clone(), initrd_sha256: p.initrd_sha256.clone() },
        console: ConsoleInfo {
            bytes: console.len() as u64,
            sha256: crate::sha256_hex(&console),
            text: String::from_utf8_lossy(&console).into_owned(),
        },
        exit_status,
        stop: stop.to_string(),
        counters,
        observations,
        profile,
        artefacts,
        started_at,
        finished_at: crate::timestamp::now_rfc3339(),
    };
    Ok(Finished { record, console })
}

/// The last console lines, to explain a failed run.
fn tail(console: &[u8]) -> String {
    let text = String::from_utf8_lossy(console);
    let last: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    match last.last() {
        Some(l) => format!("; the console's last line: {:?}", l.trim()),
        None => "; the console stayed empty".to_string(),
    }
}

/// The machine's observations as a record: phases from the guest's
/// markers (the time before the first one is [`BOOT_PHASE`]), and counters
/// for the run and per phase.
pub fn observations<T: hs_timing::TimingModel>(machine: &Machine<T>, end_cycle: u64) -> Observations {
    let counts = |cycles: &[u64], instret: &[u64]| -> Vec<HartCounts> {
        cycles.iter().zip(instret).enumerate().map(|(h, (&c, &i))| HartCounts { hart: h as u16, cycles: c, instret: i }).collect()
    };
    let harts = machine.harts();
    let zero = vec![0; harts.len()];
    let mut rec = PhaseRecorder::new();
    rec.mark(0, BOOT_PHASE, &counts(&zero, &zero));
    for p in &machine.markers().phases {
        rec.mark(p.cycle, &p.label, &counts(&p.cycles, &p.instret));
    }
    let end: Vec<u64> = harts.iter().map(|h| h.cycle()).collect();
    let end_instret: Vec<u64> = harts.iter().map(|h| h.instret()).collect();
    let phases = rec.finish(end_cycle, &counts(&end, &end_instret));

    let summary = machine.summary();
    let mut total = StatBlock::new("total");
    // Names are fixed ASCII and descriptions non-empty: these adds cannot fail.
    let _ = total.add_u64("system.cycles", summary.cycles, Unit::Cycle, "Machine cycles from reset to the end of the run");
    let _ = total.add_u64("system.instret", summary.instret, Unit::Count, "Instructions retired by all harts");
    for h in &summary.harts {
        let p = format!("system.cpu{}", h.hart);
        let _ = total.add_u64(&format!("{p}.cycles"), h.cycles, Unit::Cycle, "Cycles of the hart");
        let _ = total.add_u64(&format!("{p}.instret"), h.instret, Unit::Count, "Instructions retired");
        let _ = total.add_ratio(&format!("{p}.cpi"), h.cycles, h.instret, Unit::CyclePerCount, "Cycles per instruction");
        let _ = total.add_u64(&format!("{p}.exceptions"), h.exceptions, Unit::Count, "Synchronous traps taken (ecalls included)");
        let _ = total.add_u64(&format!("{p}.interrupts"), h.interrupts, Unit::Count, "Interrupts taken");
        let _ = total.add_u64(&format!("{p}.pageWalks"), h.page_walks, Unit::Count, "Page-table walks");
        let _ = total.add_u64(&format!("{p}.tlbFlushes"), h.tlb_flushes, Unit::Count, "TLB flushes");
    }
    for (name, v) in &summary.devices {
        // A device counter whose name is not a valid stat name stays in the record's counters only.
        let _ = total.add_u64(&format!("system.dev.{name}"), *v, Unit::Count, "Device counter");
    }
    let phase_stats = phases
        .iter()
        .map(|ph| {
            let mut b = StatBlock::for_phase(ph);
            for h in &ph.harts {
                let p = format!("system.cpu{}", h.hart);
                let _ = b.add_u64(&format!("{p}.cycles"), h.cycles, Unit::Cycle, "Cycles of the hart in the phase");
                let _ = b.add_u64(&format!("{p}.instret"), h.instret, Unit::Count, "Instructions retired in the phase");
                let _ = b.add_ratio(&format!("{p}.cpi"), h.cycles, h.instret, Unit::CyclePerCount, "Cycles per instruction");
            }
            b
        })
        .collect();
    Observations {
        guest_hz: machine.clock().hz,
        sample_period: 0,
        total,
        phase_stats,
        phases,
        samples: Vec::new(),
        events: Vec::new(),
        itrace: Vec::new(),
    }
}

/// Hot functions of the run's samples, named with the image's kernel and
/// firmware symbols. User-space samples stay `[unknown]` until the runs
/// carry process maps.
pub fn profile(obs: &Observations, image: &ImageDir) -> std::result::Result<Option<Profile>, String> {
    if obs.samples.is_empty() {
        return Ok(None);
    }
    let mut sym = Symbolizer::new();
    let kernel = match &image.symbols {
        KernelSymbols::Vmlinux(p) => SymbolTable::from_elf_file(p),
        KernelSymbols::Kallsyms(p) => SymbolTable::from_kallsyms_file(p),
    };
    sym.set_kernel(kernel.map_err(|e| format!("kernel symbols: {e}"))?);
    if let Some(fw) = &image.firmware_elf {
        sym.set_firmware(SymbolTable::from_elf_file(fw).map_err(|e| format!("firmware symbols: {e}"))?);
    }
    Ok(Some(profile_with(obs, &sym)))
}

pub fn profile_with<R: hs_observe::UserResolver>(obs: &Observations, sym: &Symbolizer<R>) -> Profile {
    let hot = HotFunctions::compute(&obs.samples, sym, obs.sample_period);
    let user = obs.samples.iter().filter(|s| s.privilege == hs_observe::Privilege::User).count();
    let mut notes = Vec::new();
    if user > 0 {
        notes.push(format!("{user} user-mode samples are not named: the runs carry no process maps yet"));
    }
    Profile {
        period: hot.period,
        total_samples: hot.total_samples,
        rows: hot.rows.into_iter().map(|r| ProfileRow { symbol: r.symbol, place: r.place, samples: r.samples }).collect(),
        notes,
    }
}

/// Where a variant's artefacts go: `OUT/VARIANT/` for the first run, `OUT/VARIANT-rN/` for repeats.
pub fn artefacts_dir(out: &Path, variant: &str, repeat: u32) -> PathBuf {
    if repeat == 0 {
        out.join(variant)
    } else {
        out.join(format!("{variant}-r{repeat}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_goes_to_the_top_of_run_sh() {
        let base = std::env::temp_dir().join(format!("hs-lab-stage-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let src = base.join("src");
        std::fs::create_dir_all(src.join("data")).unwrap();
        std::fs::write(src.join("run.sh"), "#!/bin/sh\necho $WORD\n").unwrap();
        std::fs::write(src.join("data/x.txt"), "x").unwrap();
        let env = BTreeMap::from([("WORD".to_string(), "it's".to_string())]);
        stage_workload(&src, &base.join("out"), &env).unwrap();
        let run = std::fs::read_to_string(base.join("out/run.sh")).unwrap();
        assert_eq!(run, "#!/bin/sh\n# exported by the study (hartscope lab)\nexport WORD='it'\\''s'\necho $WORD\n");
        assert_eq!(std::fs::read_to_string(base.join("out/data/x.txt")).unwrap(), "x");
        // The original is untouched.
        assert_eq!(std::fs::read_to_string(src.join("run.sh")).unwrap(), "#!/bin/sh\necho $WORD\n");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn profile_names_kernel_and_firmware_samples() {
        use hs_observe::{Privilege, Sample};
        let mut sym = Symbolizer::new();
        sym.set_kernel(SymbolTable::from_ranges(
            "vmlinux",
            [(0xffff_ffff_8000_0000, 0xffff_ffff_8000_0100, "n_tty_write".to_string()), (0xffff_ffff_8000_0100, 0xffff_ffff_8000_0200, "hvc_push".to_string())],
        ));
        sym.set_firmware(SymbolTable::from_ranges("fw_jump.elf", [(0x8000_0000, 0x8000_1000, "sbi_ecall_handler".to_string())]));
        let s = |pc, privilege| Sample { hart: 0, cycle: 0, pc, privilege, satp: 0, stack: vec![] };
        let obs = Observations {
            guest_hz: 1,
            sample_period: 1024,
            samples: vec![
                s(0xffff_ffff_8000_0010, Privilege::Supervisor),
                s(0xffff_ffff_8000_0020, Privilege::Supervisor),
                s(0xffff_ffff_8000_0110, Privilege::Supervisor),
                s(0x8000_0004, Privilege::Machine),
                s(0x1_0000, Privilege::User),
            ],
            ..Observations::default()
        };
        let p = profile_with(&obs, &sym);
        assert_eq!((p.period, p.total_samples), (1024, 5));
        assert_eq!(p.rows[0], ProfileRow { symbol: "n_tty_write".into(), place: "kernel".into(), samples: 2 });
        assert_eq!(p.samples_of("sbi_ecall_handler"), 1);
        assert_eq!(p.samples_of("hvc_push"), 1);
        assert_eq!(p.notes.len(), 1, "the user sample is reported as not named");
    }
}
