//! Helpers of the observation tests (`tests/observe_*.rs`): boot a guest
//! image with a workload on an observed machine in this process, so a test
//! can look at the `Observations` record itself.
#![allow(dead_code)] // each test file uses a different part

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hs_machine::hs_core::Engine;
use hs_machine::hs_timing::{InOrder, InOrderFactory, MachineDesc, ModelDesc, TimingModel};
use hs_machine::{
    BootFile, BootImages, GuestSymbols, KernelSymbolSource, Machine, MachineConfig, ObserveOptions,
    Observing, SamplerConfig, StopReason, SymbolSources,
};
use hs_observe::{Observations, UserIdentifier};

// (the same items as the acceptance helpers', so both globs may be used)
pub use crate::support::{image, root as repo};

pub fn workload(name: &str) -> PathBuf {
    repo().join("guest/workloads").join(name)
}

/// The files that name the image's code.
pub fn symbol_sources(img: &hs_guest::ImageDir, kernel: Option<(u64, u64)>) -> SymbolSources {
    let kernel_src = match &img.symbols {
        hs_guest::KernelSymbols::Vmlinux(p) => KernelSymbolSource::Elf(p.clone()),
        hs_guest::KernelSymbols::Kallsyms(p) => {
            let m = img.dir.join("kallsyms-modules");
            KernelSymbolSource::Kallsyms {
                path: p.clone(),
                captured_modules: m.is_file().then_some(m),
            }
        }
    };
    let mut user = vec![img.busybox.clone()];
    let mut progs: Vec<PathBuf> = std::fs::read_dir(img.dir.join("programs"))
        .expect("programs directory")
        .map(|e| e.unwrap().path())
        .collect();
    progs.sort();
    user.extend(progs);
    SymbolSources {
        firmware_elf: img.firmware_elf.clone(),
        firmware_base: hs_machine::layout::DRAM_BASE,
        kernel: Some(kernel_src),
        kernel_physical: kernel,
        user_binaries: user,
        btf: img.btf.clone(),
    }
}

pub fn config(img: &hs_guest::ImageDir, work: &Path, harts: usize) -> MachineConfig {
    let read = |what, p: &Path| BootFile::read(what, p).unwrap_or_else(|e| panic!("{e}"));
    let initrd = hs_guest::workload_initrd(img, work).unwrap_or_else(|e| panic!("{e}"));
    MachineConfig {
        harts,
        images: BootImages {
            firmware: Some(read("firmware", &img.firmware)),
            kernel: Some(read("kernel", &img.kernel)),
            initrd: Some(BootFile::from_bytes("initrd + workload", initrd)),
        },
        bootargs: img.default_append.clone(),
        echo_console: false,
        capture_console: true,
        // Generous: a debian boot with a workload is about 2.3 billion cycles.
        max_cycles: Some(20_000_000_000),
        ..MachineConfig::default()
    }
}

/// What a finished observed run left.
pub struct Run {
    pub record: Observations,
    pub symbols: GuestSymbols,
    pub console: String,
    pub exit_status: Option<i64>,
    pub cycle_mismatches: u64,
    pub tallies: Vec<hs_machine::HartTally>,
}

/// Boot `image_name` with `work` on `harts` harts, models from `model`,
/// observed as `opts` says, sampled when `sampling` is given; the workload
/// must finish with status 0.
pub fn run_with<M: TimingModel>(
    image_name: &str,
    work: &Path,
    harts: usize,
    opts: &ObserveOptions,
    sampling: Option<SamplerConfig>,
    model: impl Fn(usize) -> M,
) -> Run {
    run_on_engine(
        image_name,
        work,
        harts,
        opts,
        sampling,
        model,
        Engine::default(),
    )
}

/// [`run_with`] (which runs the default engine, as `boot` does) with
/// every hart on `engine`.
pub fn run_on_engine<M: TimingModel>(
    image_name: &str,
    work: &Path,
    harts: usize,
    opts: &ObserveOptions,
    sampling: Option<SamplerConfig>,
    model: impl Fn(usize) -> M,
    engine: Engine,
) -> Run {
    let boot = Boot {
        image_name,
        work,
        harts,
        opts,
        sampling,
        engine,
    };
    // (as `boot` does: only a machine built to trace looks for a trace)
    if opts.itrace.is_some() {
        run_built::<M, true>(boot, model)
    } else {
        run_built::<M, false>(boot, model)
    }
}

/// What [`run_on_engine`] boots, handed to [`run_built`] whichever way
/// the machine is built.
struct Boot<'a> {
    image_name: &'a str,
    work: &'a Path,
    harts: usize,
    opts: &'a ObserveOptions,
    sampling: Option<SamplerConfig>,
    engine: Engine,
}

fn run_built<M: TimingModel, const TRACE: bool>(boot: Boot<'_>, model: impl Fn(usize) -> M) -> Run {
    let img = image(boot.image_name);
    let mut m = Machine::<Observing<M, TRACE>>::with_observing(
        config(&img, boot.work, boot.harts),
        boot.opts,
        model,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    for h in m.harts_mut() {
        h.set_engine(boot.engine);
    }
    let mut symbols = GuestSymbols::load(&symbol_sources(&img, m.kernel_extent()))
        .unwrap_or_else(|e| panic!("{e}"));
    let sampled = boot.sampling.is_some();
    if let Some(s) = boot.sampling {
        m.enable_sampling(s, symbols.identifier());
    }
    if let Some(layout) = symbols
        .task_layout()
        .filter(|_| sampled || boot.opts.events)
    {
        m.enable_task_identity(layout);
    }
    let stop = m.run();
    let console = String::from_utf8_lossy(m.console_output()).into_owned();
    assert_eq!(
        stop,
        StopReason::PowerOff,
        "the guest did not power off; console tail:\n{}",
        tail(&console)
    );
    assert_eq!(
        m.markers().exit_status,
        Some(0),
        "workload failed; console tail:\n{}",
        tail(&console)
    );
    let modules = m.markers().channels.get("modules").map(|c| c.data.clone());
    symbols
        .apply_run_modules(modules.as_deref())
        .unwrap_or_else(|e| panic!("{e}"));
    symbols.add_space_marks(m.space_marks());
    let cycle_mismatches = m.cycle_mismatches();
    let tallies = m.tallies();
    let record = m.take_observations(Some(&symbols));
    Run {
        record,
        symbols,
        console,
        exit_status: m.markers().exit_status,
        cycle_mismatches,
        tallies,
    }
}

/// Sampling with the image's binaries but no identifier (for tests that
/// build the identifier themselves).
pub fn no_binaries() -> Arc<UserIdentifier> {
    Arc::new(UserIdentifier::default())
}

/// The in-order model of `machines/inorder.toml`, one per hart, sharing its L2.
pub fn inorder() -> impl Fn(usize) -> InOrder {
    let desc =
        MachineDesc::load(&repo().join("machines/inorder.toml")).unwrap_or_else(|e| panic!("{e}"));
    let ModelDesc::InOrder(cfg) = desc.model else {
        panic!("machines/inorder.toml does not describe the in-order model")
    };
    let factory = InOrderFactory::new(&cfg);
    move |_| factory.build()
}

pub fn tail(console: &str) -> String {
    let lines: Vec<&str> = console.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// A stat of a block as an integer (panics naming the stat when absent).
pub fn stat(block: &hs_observe::StatBlock, name: &str) -> u64 {
    block
        .get(name)
        .unwrap_or_else(|| panic!("stat {name} missing from block {:?}", block.label))
        .value
        .as_f64() as u64
}
