//! Running one variant: the initramfs with its workload, the machine, and
//! the run record made from what the machine observed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hs_guest::{ImageDir, KernelSymbols};
use hs_machine::hs_timing::{Atomic, InOrderFactory, MachineDesc, ModelDesc, TimingModel};
use hs_machine::{
    BootFile, BootImages, GuestSymbols, KernelSymbolSource, Machine, MachineConfig, ObserveOptions,
    Observing, SamplerConfig, StopReason, SymbolSources,
};
use hs_observe::export::{
    chrome_trace, flamegraph_svg, fold, folded_text, stats_txt, FlamegraphOptions, FoldOptions,
    HotFunctions,
};
use hs_observe::{Observations, Symbolizer, Unit};

use crate::error::{io_err, LabError, Result};
use crate::record::*;
use crate::scenario::{merge_cmdline, Scenario, Variant};
use crate::shared_boot::Start;

/// Label of the stretch before the guest's first phase marker.
pub use hs_machine::BOOT_PHASE;
/// Longest slice one hart runs before the next gets its turn (as `hartscope boot`).
pub const QUANTUM: u64 = 10_000;
/// The timing model of a run without a machine description.
pub const ATOMIC: &str = "atomic (one cycle per instruction)";

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
    let img_err = |message: String| LabError::Image {
        image: variant.image.clone(),
        message,
    };
    let manifest_path = image.dir.join("manifest.json");
    let manifest_text =
        std::fs::read_to_string(&manifest_path).map_err(io_err("read", &manifest_path))?;
    let manifest: serde_json::Value = serde_json::from_str(&manifest_text)
        .map_err(|e| img_err(format!("{} is not JSON ({e})", manifest_path.display())))?;
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

/// Where a run's artefacts go and what may stop it early.
#[derive(Clone, Copy)]
struct Outputs<'a> {
    artefacts_dir: &'a Path,
    interrupt: Option<&'static std::sync::atomic::AtomicBool>,
    /// A shared boot to go on from (None: boot from reset).
    start: Option<&'a Start>,
}

/// Boot the variant, run the workload to its end and make the record.
/// `artefacts_dir` receives the console text, `stats.txt`, the profile
/// (hot.md, folded stacks, flamegraph), the timeline (trace.json) and the
/// guest's channels. Any stop other than a reported workload exit is an error.
pub fn execute(
    p: &Prepared,
    scenario: &Scenario,
    repeat: u32,
    artefacts_dir: &Path,
    interrupt: Option<&'static std::sync::atomic::AtomicBool>,
    start: Option<&Start>,
) -> Result<Finished> {
    let (model, ipi, devices) = machine_parts(&p.variant)?;
    let out = Outputs {
        artefacts_dir,
        interrupt,
        start,
    };
    match model {
        ModelDesc::Atomic => execute_with(p, scenario, repeat, out, devices, ipi, |_| Atomic),
        ModelDesc::InOrder(cfg) => {
            let harts = InOrderFactory::new(&cfg);
            execute_with(p, scenario, repeat, out, devices, ipi, |_| harts.build())
        }
    }
}

/// The variant's timing model, IPI policy and board devices (from its machine description).
pub(crate) fn machine_parts(
    v: &Variant,
) -> Result<(
    ModelDesc,
    hs_machine::hs_devices::IpiPolicy,
    Vec<hs_machine::hs_devices::DeviceConfig>,
)> {
    let run_err = |message: String| LabError::Run {
        variant: v.name.clone(),
        message,
    };
    let (model, ipi) = match &v.machine_desc {
        Some(path) => {
            let d = MachineDesc::load(path).map_err(|e| run_err(e.to_string()))?;
            (d.model, hs_machine::ipi_policy(d.ipi))
        }
        None => (ModelDesc::Atomic, Default::default()),
    };
    let devices = match &v.machine_desc {
        Some(path) => hs_machine::load_devices(path).map_err(|e| run_err(e.to_string()))?,
        None => Vec::new(),
    };
    Ok((model, ipi, devices))
}

/// The machine the variant boots: its images, workload, command line and board.
pub(crate) fn machine_config(
    p: &Prepared,
    devices: Vec<hs_machine::hs_devices::DeviceConfig>,
    ipi: hs_machine::hs_devices::IpiPolicy,
) -> Result<MachineConfig> {
    let v = &p.variant;
    let run_err = |message: String| LabError::Run {
        variant: v.name.clone(),
        message,
    };
    let read = |what, path: &Path| BootFile::read(what, path).map_err(|e| run_err(e.to_string()));
    Ok(MachineConfig {
        harts: v.harts,
        ram_bytes: v.memory_bytes,
        hz: v.mhz * 1_000_000,
        quantum: v.quantum,
        images: BootImages {
            firmware: Some(read("firmware", &p.image.firmware)?),
            kernel: Some(read("kernel", &p.image.kernel)?),
            initrd: Some(BootFile::from_bytes(
                format!(
                    "{} + workload {}",
                    p.image.initrd.display(),
                    v.workload.display()
                ),
                p.initrd.clone(),
            )),
        },
        bootargs: p.bootargs.clone(),
        devices,
        ipi,
        max_cycles: v.max_cycles,
        echo_console: false,
        capture_console: true,
        ..MachineConfig::default()
    })
}

/// The files that name the guest's code in `image` (its firmware, kernel,
/// BusyBox and workload programs, and the kernel's BTF); `hartscope boot`
/// drops what its explicit `--bios` or `--kernel` replace.
pub fn symbol_sources(image: &ImageDir, kernel_physical: Option<(u64, u64)>) -> SymbolSources {
    let kernel = match &image.symbols {
        KernelSymbols::Vmlinux(p) => KernelSymbolSource::Elf(p.clone()),
        KernelSymbols::Kallsyms(p) => {
            let captured = image.dir.join("kallsyms-modules");
            KernelSymbolSource::Kallsyms {
                path: p.clone(),
                captured_modules: captured.is_file().then_some(captured),
            }
        }
    };
    let mut user_binaries = vec![image.busybox.clone()];
    if let Ok(dir) = std::fs::read_dir(image.dir.join("programs")) {
        let mut progs: Vec<PathBuf> = dir
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        progs.sort();
        user_binaries.extend(progs);
    }
    SymbolSources {
        firmware_elf: image.firmware_elf.clone(),
        firmware_base: hs_machine::layout::DRAM_BASE,
        kernel: Some(kernel),
        kernel_physical,
        user_binaries,
        btf: image.btf.clone(),
    }
}

fn execute_with<M: TimingModel>(
    p: &Prepared,
    scenario: &Scenario,
    repeat: u32,
    out: Outputs,
    devices: Vec<hs_machine::hs_devices::DeviceConfig>,
    ipi: hs_machine::hs_devices::IpiPolicy,
    model: impl Fn(usize) -> M,
) -> Result<Finished> {
    // (only a machine built to trace looks for a trace per instruction)
    if scenario.itrace.is_some() {
        execute_observed::<M, true>(p, scenario, repeat, out, devices, ipi, model)
    } else {
        execute_observed::<M, false>(p, scenario, repeat, out, devices, ipi, model)
    }
}

/// [`execute_with`] on harts whose models are wrapped in
/// [`Observing`] (`TRACE`: built to trace instructions).
fn execute_observed<M: TimingModel, const TRACE: bool>(
    p: &Prepared,
    scenario: &Scenario,
    repeat: u32,
    out: Outputs,
    devices: Vec<hs_machine::hs_devices::DeviceConfig>,
    ipi: hs_machine::hs_devices::IpiPolicy,
    model: impl Fn(usize) -> M,
) -> Result<Finished> {
    let v = &p.variant;
    let run_err = |message: String| LabError::Run {
        variant: v.name.clone(),
        message,
    };
    let started_at = crate::timestamp::now_rfc3339();
    let cfg = machine_config(p, devices, ipi)?;
    let options = ObserveOptions {
        events: scenario.timeline,
        max_events: 0,
        itrace: scenario.itrace.clone(),
    };
    let mut machine = Machine::<Observing<M, TRACE>>::with_observing(cfg, &options, model)
        .map_err(|e| run_err(e.to_string()))?;
    // (the kernel's symbols are read on another thread during the run)
    let pending = GuestSymbols::load_pending(&symbol_sources(&p.image, machine.kernel_extent()))
        .map_err(|e| run_err(format!("symbols: {e}")))?;
    if scenario.sample_period > 0 {
        machine.enable_sampling(
            SamplerConfig {
                period: scenario.sample_period,
                ..SamplerConfig::default()
            },
            pending.identifier(),
        );
    }
    if let Some(layout) = pending
        .task_layout()
        .filter(|_| scenario.sample_period > 0 || scenario.timeline)
    {
        machine.enable_task_identity(layout);
    }
    if let Some(flag) = out.interrupt {
        machine.set_interrupt_flag(flag);
    }
    let artefacts_dir = out.artefacts_dir;
    let shared_boot = match out.start {
        Some(start) => {
            let model = crate::shared_boot::model_id(v.machine_desc_text.as_deref());
            let how = machine
                .restore(&start.snapshot, &model, true)
                .map_err(|e| run_err(format!("going on from the shared boot: {e}")))?;
            let mut info = start.info.clone();
            info.timing = match how {
                hs_machine::TimingRestore::Warm => "warm".into(),
                hs_machine::TimingRestore::Cold(why) => format!("cold: {why}"),
            };
            Some(info)
        }
        None => None,
    };
    let stop = machine.run();
    let console = machine.console_output().to_vec();
    let exit_status = machine.markers().exit_status;
    // A stop the guest caused is kept as a failed run with its console; only
    // Ctrl-C leaves nothing (the user asked for the run to go away).
    let failure = match (stop, exit_status) {
        (StopReason::PowerOff, Some(_)) => None,
        (StopReason::Interrupted, _) => {
            return Err(LabError::Interrupted {
                variant: v.name.clone(),
            })
        }
        (StopReason::CycleLimit, _) => Some(format!(
            "the guest did not finish within workload.max_guest_seconds ({} cycles)",
            v.max_cycles.unwrap_or(0)
        )),
        (StopReason::GuestPanic, _) => Some(format!(
            "the guest kernel panicked ({})",
            machine.guest_panic().unwrap_or("Kernel panic")
        )),
        (other, None) => Some(format!(
            "the guest stopped ({other}) without reporting the workload's exit status"
        )),
        (other, Some(_)) => Some(format!("the machine stopped unexpectedly ({other})")),
    };
    if let Some(reason) = failure {
        return Err(LabError::GuestFailed(Box::new(crate::store::FailedRun {
            study: scenario.name.clone(),
            variant: v.name.clone(),
            repeat,
            started_at,
            finished_at: crate::timestamp::now_rfc3339(),
            image: v.image.clone(),
            bootargs: p.bootargs.clone(),
            harts: v.harts,
            stop: stop.to_string(),
            reason,
            cycles: machine.summary().cycles,
            console,
        })));
    }

    let guest_metrics = match machine
        .markers()
        .channels
        .get(crate::guest_metrics::CHANNEL)
    {
        Some(c) => crate::guest_metrics::parse(&c.data).map_err(run_err)?,
        None => Default::default(),
    };
    let summary = machine.summary();
    let modules = machine
        .markers()
        .channels
        .get("modules")
        .map(|c| c.data.clone());
    let mut symbols = pending
        .finish()
        .map_err(|e| run_err(format!("symbols: {e}")))?;
    symbols
        .apply_run_modules(modules.as_deref())
        .map_err(|e| run_err(format!("symbols: {e}")))?;
    symbols.add_space_marks(machine.space_marks());
    // Counters, per phase and in all: the timing model's (cycle shape, memory stalls) included.
    let mut observations = machine.take_observations(Some(&symbols));
    let counters = Counters {
        cycles: summary.cycles,
        instret: summary.instret,
        guest_seconds: summary.guest_seconds,
        host_seconds: summary.host_seconds,
        mips: summary.mips,
        harts: summary
            .harts
            .iter()
            .map(|h| HartCounters {
                hart: h.hart,
                cycles: h.cycles,
                instret: h.instret,
            })
            .collect(),
        devices: summary.devices.clone(),
        unknown_markers: summary.unknown_markers,
        bad_markers: summary.bad_markers,
    };
    // Slow-path counters of the interpreter, and device counters, as stats too.
    for h in &summary.harts {
        let pre = format!("system.cpu{}", h.hart);
        let _ = observations.total.add_u64(
            &format!("{pre}.pageWalks"),
            h.page_walks,
            Unit::Count,
            "Page-table walks",
        );
        let _ = observations.total.add_u64(
            &format!("{pre}.tlbFlushes"),
            h.tlb_flushes,
            Unit::Count,
            "TLB flushes",
        );
    }
    for (name, v) in &summary.devices {
        // A device counter whose name is not a valid stat name stays in the record's counters only.
        let _ = observations.total.add_u64(
            &format!("system.dev.{name}"),
            *v,
            Unit::Count,
            "Device counter",
        );
    }

    std::fs::create_dir_all(artefacts_dir).map_err(io_err("create directory", artefacts_dir))?;
    let mut artefacts = Vec::new();
    let mut write = |kind: &str, name: &str, data: &[u8]| -> Result<()> {
        let path = artefacts_dir.join(name);
        std::fs::write(&path, data).map_err(io_err("write", &path))?;
        artefacts.push(Artefact {
            kind: kind.into(),
            path: path.display().to_string(),
        });
        Ok(())
    };
    write("console", "console.txt", &console)?;
    write(
        "stats",
        "stats.txt",
        stats_txt(&observations.phase_stats, &observations.total).as_bytes(),
    )?;
    let profile = profile(
        &observations,
        &symbols,
        scenario.profile_from.as_deref(),
        scenario.profile_to.as_deref(),
    )
    .map_err(run_err)?;
    let mut profile = profile;
    // the profile window's samples (its groups, tasks and files)
    let window = profile
        .as_ref()
        .map(|p| window_samples(&observations, p.from_cycle, p.to_cycle))
        .unwrap_or_default();
    if let Some(prof) = profile.as_mut() {
        if !scenario.groups.is_empty() {
            prof.groups = group_counts(&window, &symbols, &scenario.groups);
        }
        prof.tasks = task_counts(&window);
    }
    if let Some(prof) = &profile {
        let sym = symbols.symbolizer();
        let title = format!("{} {} ({})", scenario.name, v.name, prof.window);
        let mut md = format!("# Hot functions — {title}\n\n");
        let hot = HotFunctions::compute(&window, sym, observations.sample_period);
        md.push_str(&hot.to_markdown_by_place(&title, 30));
        md.push('\n');
        md.push_str(&hot.to_markdown_by_task_and_hart(30));
        md.push('\n');
        md.push_str(&hot.to_markdown_children(30));
        write("profile", "hot.md", md.as_bytes())?;
        let folded = fold(
            &window,
            sym,
            FoldOptions {
                include_comm: true,
                annotate_kernel: true,
            },
        );
        write(
            "folded stacks",
            "folded.txt",
            folded_text(&folded).as_bytes(),
        )?;
        let opts = FlamegraphOptions {
            title: format!("{title} — {} samples", window.len()),
            ..FlamegraphOptions::default()
        };
        write(
            "flamegraph",
            "flamegraph.svg",
            flamegraph_svg(&folded, &opts).as_bytes(),
        )?;
    }
    if let Some(spec) = &scenario.itrace {
        write(
            "instruction trace",
            "itrace.txt",
            hs_machine::reports::itrace_report(&observations, spec).as_bytes(),
        )?;
    }
    if !observations.events.is_empty() {
        let json = chrome_trace(
            &observations.events,
            &observations.phases,
            observations.guest_hz,
        )
        .map_err(|e| run_err(e.to_string()))?;
        write("timeline (Chrome trace)", "trace.json", json.as_bytes())?;
    }
    if !machine.markers().channels.is_empty() {
        let dir = artefacts_dir.join("channels");
        let _ = std::fs::remove_dir_all(&dir);
        machine
            .write_channels(&dir)
            .map_err(|e| run_err(e.to_string()))?;
        artefacts.push(Artefact {
            kind: "channels".into(),
            path: dir.display().to_string(),
        });
    }
    // Raw samples are summarised in the profile (and the folded stacks):
    // hundreds of thousands of stacks would swamp the results database.
    let samples_taken = observations.samples.len();
    observations.samples.clear();
    if samples_taken > 0 {
        let _ = observations.total.add_u64(
            "system.samplesStored",
            0,
            Unit::Count,
            "Raw samples kept in the run record (summarised in the profile)",
        );
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
        image: ImageInfo {
            name: p.image.name.clone(),
            manifest: p.manifest.clone(),
        },
        machine: MachineInfo {
            harts: v.harts,
            memory_bytes: v.memory_bytes,
            mhz: v.mhz,
            quantum: v.quantum,
            bootargs: p.bootargs.clone(),
            timing: v
                .machine_desc_text
                .clone()
                .unwrap_or_else(|| ATOMIC.to_string()),
            description: v.machine_desc.as_ref().map(|d| d.display().to_string()),
        },
        workload: WorkloadInfo {
            dir: v.workload.display().to_string(),
            env: v.env.clone(),
            initrd_sha256: p.initrd_sha256.clone(),
        },
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
        guest_metrics,
        artefacts,
        shared_boot,
        started_at,
        finished_at: crate::timestamp::now_rfc3339(),
    };
    Ok(Finished { record, console })
}

/// The profile's window: from phase `from` (default: the first marker, so
/// boot is left out) to the start of phase `to` (default: the end of the
/// run). A label the run never reached is an error naming the key, so a
/// misspelt label cannot turn into a silently empty or whole-run profile.
pub fn profile(
    obs: &Observations,
    symbols: &GuestSymbols,
    from: Option<&str>,
    to: Option<&str>,
) -> std::result::Result<Option<Profile>, String> {
    let seen = || {
        let l: Vec<&str> = obs.phases.iter().map(|p| p.label.as_str()).collect();
        if l.is_empty() {
            "no phase markers at all".to_string()
        } else {
            format!("phases seen: {}", l.join(", "))
        }
    };
    let (from_cycle, from_text) = match from {
        Some(label) => match obs.phases.iter().find(|p| p.label == label) {
            Some(p) => (p.start_cycle, format!("from phase `{label}`")),
            None => {
                return Err(format!(
                    "study.profile_from: the run never reached phase `{label}` ({})",
                    seen()
                ))
            }
        },
        None => match obs.phases.get(1) {
            Some(p) => (p.start_cycle, format!("from phase `{}`", p.label)),
            None => (0, "from the start".to_string()),
        },
    };
    let (to_cycle, to_text) = match to {
        Some(label) => match obs
            .phases
            .iter()
            .find(|p| p.label == label && p.start_cycle >= from_cycle)
        {
            Some(p) => (Some(p.start_cycle), format!("to phase `{label}`")),
            None => {
                return Err(format!(
                    "study.profile_to: phase `{label}` never began after the profile's start ({})",
                    seen()
                ))
            }
        },
        None => (None, "to the end".to_string()),
    };
    if obs.samples.is_empty() {
        return Ok(None);
    }
    let window_samples = window_samples(obs, from_cycle, to_cycle);
    let mut p = profile_with(&window_samples, obs.sample_period, symbols.symbolizer());
    p.from_cycle = from_cycle;
    p.to_cycle = to_cycle;
    p.window = if from.is_none() && to.is_none() && from_cycle > 0 {
        format!("{from_text} {to_text}; boot left out")
    } else {
        format!("{from_text} {to_text}")
    };
    p.phases = phase_profiles(obs, symbols);
    p.notes.extend(symbols.notes.iter().cloned());
    Ok(Some(p))
}

/// The samples split by the study's groups: each goes to the first group
/// a frame of its stack matches, from the leaf outwards; `other` last.
pub fn group_counts(
    samples: &[hs_observe::Sample],
    symbols: &GuestSymbols,
    groups: &[crate::scenario::ProfileGroup],
) -> Vec<crate::record::GroupCount> {
    let sym = symbols.symbolizer();
    let mut counts = vec![0u64; groups.len() + 1];
    let mut resolver = hs_observe::StackResolver::new(sym);
    for s in samples {
        let r = resolver.resolve(s);
        let g = r
            .frames
            .iter()
            .find_map(|f| {
                let (place, symbol) = (f.where_name(), f.symbol.unwrap_or(""));
                groups.iter().position(|g| g.matches(place, symbol))
            })
            .unwrap_or(groups.len());
        counts[g] += 1;
    }
    groups
        .iter()
        .map(|g| g.name.clone())
        .chain(std::iter::once("other".to_string()))
        .zip(counts)
        .map(|(name, samples)| crate::record::GroupCount { name, samples })
        .collect()
}

/// The samples of each task by `comm` (in name order), split by the
/// mode they were taken in; M-mode (firmware) samples and samples that
/// name no task are not counted.
pub fn task_counts(samples: &[hs_observe::Sample]) -> Vec<crate::record::TaskCount> {
    use hs_observe::Privilege;
    let mut by_comm: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for s in samples {
        let Some(t) = &s.task else { continue };
        let c = by_comm.entry(&t.comm).or_default();
        match s.privilege {
            Privilege::Supervisor => c.0 += 1,
            Privilege::User => c.1 += 1,
            Privilege::Machine => {}
        }
    }
    by_comm
        .into_iter()
        .map(|(comm, (kernel, user))| crate::record::TaskCount {
            comm: comm.to_string(),
            kernel,
            user,
        })
        .collect()
}

/// Samples taken in `[from, to)` (cycles of the sampled hart).
pub fn window_samples(obs: &Observations, from: u64, to: Option<u64>) -> Vec<hs_observe::Sample> {
    obs.samples
        .iter()
        .filter(|s| s.cycle >= from && to.is_none_or(|t| s.cycle < t))
        .cloned()
        .collect()
}

/// The hottest symbols of each phase with samples.
fn phase_profiles(obs: &Observations, symbols: &GuestSymbols) -> Vec<PhaseProfile> {
    const TOP: usize = 5;
    obs.phases
        .iter()
        .filter_map(|ph| {
            let samples = window_samples(obs, ph.start_cycle, Some(ph.end_cycle));
            if samples.is_empty() {
                return None;
            }
            let p = profile_with(&samples, obs.sample_period, symbols.symbolizer());
            Some(PhaseProfile {
                label: ph.label.clone(),
                samples: p.total_samples,
                rows: p.rows.into_iter().take(TOP).collect(),
            })
        })
        .collect()
}

pub fn profile_with<R: hs_observe::UserResolver>(
    samples: &[hs_observe::Sample],
    period: u64,
    sym: &Symbolizer<R>,
) -> Profile {
    let hot = HotFunctions::compute(samples, sym, period);
    let unknown_user = hot
        .rows
        .iter()
        .filter(|r| r.place == hs_observe::symbols::UNKNOWN)
        .map(|r| r.samples)
        .sum::<u64>();
    let mut notes = Vec::new();
    if unknown_user > 0 {
        notes.push(format!(
            "{unknown_user} user-mode samples ran in no binary the image knows"
        ));
    }
    Profile {
        period: hot.period,
        total_samples: hot.total_samples,
        rows: hot
            .rows
            .into_iter()
            .map(|r| ProfileRow {
                symbol: r.symbol,
                place: r.place,
                samples: r.samples,
            })
            .collect(),
        notes,
        from_cycle: 0,
        window: "the whole run".into(),
        to_cycle: None,
        phases: Vec::new(),
        groups: Vec::new(),
        tasks: Vec::new(),
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
        assert_eq!(
            std::fs::read_to_string(base.join("out/data/x.txt")).unwrap(),
            "x"
        );
        // The original is untouched.
        assert_eq!(
            std::fs::read_to_string(src.join("run.sh")).unwrap(),
            "#!/bin/sh\necho $WORD\n"
        );
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn an_images_symbol_sources_name_busybox_then_its_programs_in_order() {
        let base = std::env::temp_dir().join(format!("hs-lab-symbols-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("programs/sub")).unwrap();
        // (six, made out of name order: whatever order a file system
        // lists them in, hardly ever sorted by chance)
        let programs = ["delta", "alpha", "foxtrot", "charlie", "echo", "bravo"];
        for p in programs.map(|p| format!("programs/{p}")) {
            std::fs::write(base.join(p), "x").unwrap();
        }
        for p in ["kallsyms", "kallsyms-modules"] {
            std::fs::write(base.join(p), "x").unwrap();
        }
        let image = ImageDir {
            name: "t".into(),
            dir: base.clone(),
            firmware: base.join("fw_jump.bin"),
            fw_dynamic: base.join("fw_dynamic.bin"),
            firmware_elf: Some(base.join("fw_jump.elf")),
            kernel: base.join("Image"),
            initrd: base.join("initrd"),
            symbols: KernelSymbols::Kallsyms(base.join("kallsyms")),
            busybox: base.join("busybox"),
            btf: Some(base.join("btf")),
            default_append: String::new(),
            manifest: base.join("manifest.json"),
        };
        let s = symbol_sources(&image, Some((0x8020_0000, 0x8120_0000)));
        // BusyBox first, then the programs by name; a directory is no program
        assert_eq!(
            s.user_binaries,
            ["busybox", "alpha", "bravo", "charlie", "delta", "echo", "foxtrot"].map(|p| match p {
                "busybox" => base.join(p),
                _ => base.join("programs").join(p),
            })
        );
        match &s.kernel {
            Some(KernelSymbolSource::Kallsyms {
                path,
                captured_modules,
            }) => {
                assert_eq!(path, &base.join("kallsyms"));
                assert_eq!(captured_modules, &Some(base.join("kallsyms-modules")));
            }
            other => panic!("kernel symbols from {other:?}"),
        }
        assert_eq!(
            (s.firmware_elf, s.btf, s.kernel_physical),
            (
                Some(base.join("fw_jump.elf")),
                Some(base.join("btf")),
                Some((0x8020_0000, 0x8120_0000))
            )
        );
        // without a capture of the modules, none is named
        std::fs::remove_file(base.join("kallsyms-modules")).unwrap();
        assert!(matches!(
            symbol_sources(&image, None).kernel,
            Some(KernelSymbolSource::Kallsyms {
                captured_modules: None,
                ..
            })
        ));
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn task_counts_split_each_tasks_samples_by_mode() {
        use hs_observe::{Privilege, Sample, Task};
        let sample = |comm: Option<&str>, privilege| Sample {
            hart: 0,
            cycle: 0,
            pc: 0,
            privilege,
            satp: 0,
            stack: std::sync::Arc::from([]),
            task: comm.map(|c| Task {
                pid: 7,
                tid: 7,
                comm: c.into(),
            }),
        };
        let samples = [
            sample(Some("ttcp"), Privilege::Supervisor),
            sample(Some("ttcp"), Privilege::User),
            sample(Some("ttcp"), Privilege::Supervisor),
            sample(Some("ttcp"), Privilege::Machine),
            sample(Some("kworker/0:1"), Privilege::Supervisor),
            sample(None, Privilege::Supervisor),
        ];
        let counts: Vec<(String, u64, u64)> = task_counts(&samples)
            .into_iter()
            .map(|t| (t.comm, t.kernel, t.user))
            .collect();
        assert_eq!(
            counts,
            [
                ("kworker/0:1".to_string(), 1, 0),
                ("ttcp".to_string(), 2, 1)
            ]
        );
    }

    #[test]
    fn profile_names_kernel_and_firmware_samples() {
        use hs_observe::{Privilege, Sample, SymbolTable};
        let mut sym = Symbolizer::new();
        sym.set_kernel(SymbolTable::from_ranges(
            "vmlinux",
            [
                (
                    0xffff_ffff_8000_0000,
                    0xffff_ffff_8000_0100,
                    "n_tty_write".to_string(),
                ),
                (
                    0xffff_ffff_8000_0100,
                    0xffff_ffff_8000_0200,
                    "hvc_push".to_string(),
                ),
            ],
        ));
        sym.set_firmware(SymbolTable::from_ranges(
            "fw_jump.elf",
            [(0x8000_0000, 0x8000_1000, "sbi_ecall_handler".to_string())],
        ));
        let s = |pc, privilege| Sample {
            hart: 0,
            cycle: 0,
            pc,
            privilege,
            satp: 0,
            stack: vec![].into(),
            task: None,
        };
        let samples = vec![
            s(0xffff_ffff_8000_0010, Privilege::Supervisor),
            s(0xffff_ffff_8000_0020, Privilege::Supervisor),
            s(0xffff_ffff_8000_0110, Privilege::Supervisor),
            s(0x8000_0004, Privilege::Machine),
            s(0x1_0000, Privilege::User),
        ];
        let p = profile_with(&samples, 1024, &sym);
        assert_eq!((p.period, p.total_samples), (1024, 5));
        assert_eq!(
            p.rows[0],
            ProfileRow {
                symbol: "n_tty_write".into(),
                place: "kernel".into(),
                samples: 2
            }
        );
        assert_eq!(p.samples_of("sbi_ecall_handler"), 1);
        assert_eq!(p.samples_of("hvc_push"), 1);
        assert_eq!(
            p.notes.len(),
            1,
            "the user sample in no known binary is reported"
        );
    }
}
