//! `hartscope bench`: hartscope and QEMU side by side on the same inputs.
//!
//! Two measurements, each repeated and interleaved (hartscope, QEMU,
//! hartscope, ...) so the noise of a shared machine hits both alike:
//! a Linux boot of a guest image with a fixed workload to power-off, and
//! the bare-metal build of `guest/workloads/cpubound.c`. It prints figures;
//! it never judges them.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

const QEMU: &str = "qemu-system-riscv64";
const BARE_CC: &str = "riscv64-unknown-elf-gcc";
/// Longest any single run may take before the bench gives up on it.
const RUN_TIMEOUT: Duration = Duration::from_secs(900);
const AGENT_STATUS: &str = "hartscope-agent: workload exited with status ";

const WHY_COUNTED_APART: &str = "hartscope's instruction count comes from one more, untimed run \
with --stats-json (the program is deterministic: the same count every run, and the same console \
checksum, checked), so that the timed runs, like QEMU's, write no statistics: on an EPYC host asking \
for them made this program's run 1.48 times as long (median of 15 interleaved pairs) for the same host \
instructions, a placement effect of the host's (docs/engine-speed.md, 12-06); its MIPS are then by \
wall time, start-up included";

const WHY_BARE_METAL: &str = "bare metal rather than inside Linux: the program is then the whole run, \
so nothing has to be subtracted (a Linux boot takes seconds and varies on a shared machine by more than \
the program's own time); both sides execute the same ELF and therefore the same instructions, so QEMU's \
MIPS is hartscope's instruction count over QEMU's wall time";

#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// Guest image to boot (see `hartscope guest build`).
    #[arg(long, default_value = "debian")]
    pub image: String,
    /// Number of harts for the Linux boot (QEMU gets the same -smp).
    #[arg(long, default_value_t = 2)]
    pub smp: usize,
    /// RAM size for the Linux boot: 512, 512M, 2G (MiB when no unit).
    #[arg(short = 'm', long = "memory", default_value = "512M", value_parser = parse_mib)]
    pub mem_mib: u64,
    /// Repetitions of each measurement; medians are reported.
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Workload of the Linux boot (script or directory with run.sh); default the P87 shell session.
    #[arg(long)]
    pub workload: Option<PathBuf>,
    /// Rounds of the bare-metal cpubound program (300: about 1.7 billion instructions).
    #[arg(long, default_value_t = 300)]
    pub rounds: u32,
    /// MiB the disk benchmark reads sequentially from a virtio-blk disk
    /// (0: skip it).
    #[arg(long, default_value_t = 64)]
    pub disk_mib: u64,
    /// MiB the network benchmark receives over virtio-net with TCP (0: skip
    /// it): from the network peer under hartscope, from a host TCP server
    /// through QEMU's user networking.
    #[arg(long, default_value_t = 16)]
    pub net_mib: u64,
    /// Machine description of the in-order rows of the models table
    /// (default: the repository's machines/inorder.toml).
    #[arg(long)]
    pub inorder_machine: Option<PathBuf>,
    /// Skip the models table (the Linux boot on the atomic and in-order
    /// models, each plain and sampled).
    #[arg(long)]
    pub no_models: bool,
    /// Also write the figures as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// This binary's build, as `build.rs` found its compiler flags.
const BUILD: &str = if cfg!(pgo) {
    "optimised with a profile of its own runs (PGO, scripts/build-pgo.sh)"
} else {
    "without a profile of its own runs (no PGO; `make bench` builds one with it)"
};

fn parse_mib(s: &str) -> Result<u64, String> {
    let bad = || format!("`{s}` is not a memory size in whole MiB (e.g. 512, 512M, 2G)");
    let t = s.trim_end_matches(['B', 'b']).trim_end_matches('i');
    let (num, shift) = match t.chars().last() {
        Some('M' | 'm') => (&t[..t.len() - 1], 0),
        Some('G' | 'g') => (&t[..t.len() - 1], 10),
        _ => (t, 0),
    };
    let n: u64 = num.parse().map_err(|_| bad())?;
    n.checked_shl(shift)
        .filter(|&v| v > 0 && v >> shift == n)
        .ok_or_else(bad)
}

/// One finished child process: wall time and the CPU time it used (all its threads).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Timing {
    pub wall_s: f64,
    pub cpu_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct HartscopeRun {
    pub wall_s: f64,
    pub cpu_s: f64,
    /// Guest instructions per second of hartscope's own host time (from its
    /// stats; for the bare-metal program, of its wall time: see
    /// `WHY_COUNTED_APART`).
    pub mips: f64,
    pub instret: u64,
    pub cycles: u64,
    pub guest_s: f64,
    /// Host time inside the harts' runs (`host_seconds` of its stats):
    /// wall time without start-up and report writing.
    pub run_s: f64,
    /// Instructions the block interpreter retired, all harts (their
    /// `interpreted_instret`): the rest ran as translated code.
    pub interpreted: u64,
    /// Samples the sampler kept (`system.samples`; 0 unsampled).
    pub samples: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Pair {
    pub hartscope: HartscopeRun,
    pub qemu: Option<Timing>,
    /// hartscope wall / QEMU wall.
    pub ratio: Option<f64>,
    /// hartscope CPU / QEMU CPU: steadier than wall time when other work shares the host.
    pub cpu_ratio: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Medians {
    pub hartscope_wall_s: f64,
    pub hartscope_mips: f64,
    pub qemu_wall_s: Option<f64>,
    /// For the bare-metal program: hartscope's instruction count / QEMU's median wall time.
    pub qemu_mips_estimate: Option<f64>,
    /// Median of the per-repetition ratios hartscope wall / QEMU wall.
    pub ratio: Option<f64>,
    /// Median of the per-repetition ratios hartscope CPU / QEMU CPU.
    pub cpu_ratio: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Section {
    pub what: String,
    pub hartscope_command: String,
    pub qemu_command: Option<String>,
    pub runs: Vec<Pair>,
    pub median: Medians,
    pub note: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// How this hartscope was built: with a profile of its own runs
    /// (`scripts/build-pgo.sh`, what `make bench` measures) or without.
    pub build: String,
    pub image: String,
    pub smp: usize,
    pub mem_mib: u64,
    pub repeat: usize,
    pub workload: String,
    /// `qemu-system-riscv64 --version` when QEMU ran.
    pub qemu_version: Option<String>,
    /// Why QEMU was not run, when it was not.
    pub qemu_not_run: Option<String>,
    pub load_average_before: Option<String>,
    pub load_average_after: Option<String>,
    pub linux_boot: Section,
    pub cpubound: Option<Section>,
    /// Why the CPU-bound program was not measured, when it was not.
    pub cpubound_not_measured: Option<String>,
    pub disk_read: Option<ThroughputSection>,
    pub net_receive: Option<ThroughputSection>,
    pub models: Option<ModelsSection>,
}

/// hartscope alone on the Linux boot (QEMU has neither a timing model
/// nor a guest sampler): the atomic and in-order models, each plain and
/// with `--profile`, interleaved per repetition.
#[derive(Clone, Debug, Serialize)]
pub struct ModelsSection {
    pub what: String,
    pub inorder_machine: String,
    /// The sampler's period (`--sample-period`, cycles of each hart).
    pub sample_period: u64,
    /// Per repetition, one run per mode (in `MODES` order).
    pub runs: Vec<Vec<ModeRun>>,
    pub median: Vec<ModeMedian>,
    pub note: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct ModeRun {
    pub mode: String,
    pub wall_s: f64,
    /// Host time inside the harts' runs (`host_seconds` of the stats):
    /// simulation and sampling, without start-up or report writing.
    pub run_s: f64,
    pub mips: f64,
    pub instret: u64,
    /// Of `instret`, those the block interpreter retired.
    pub interpreted: u64,
    /// Samples kept (0 for a plain mode).
    pub samples: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ModeMedian {
    pub mode: String,
    pub wall_s: f64,
    pub run_s: f64,
    pub mips: f64,
    /// The lowest and highest MIPS of the repetitions.
    pub mips_range: (f64, f64),
    /// For a sampled mode: median over repetitions of its run time over
    /// the plain mode's run time (the sampler's cost while simulating).
    pub run_vs_plain: Option<f64>,
    /// The lowest and highest of those ratios.
    pub run_vs_plain_range: Option<(f64, f64)>,
    /// The same for wall time (adds symbol loading and report writing).
    pub wall_vs_plain: Option<f64>,
    /// For a sampled mode: median over repetitions of the run time it
    /// added to the plain mode's, in host nanoseconds a sample. The ratio
    /// above grows when the plain run gets faster; this does not, so it
    /// is the figure a change to the sampler moves.
    pub host_ns_per_sample: Option<f64>,
    /// Median share of the instructions the block interpreter retired
    /// (where translated code did not run them): what the engine left
    /// on its slower path.
    pub interpreted_share: Option<f64>,
}

/// The models table's modes: (name, in-order?, sampled?).
const MODES: [(&str, bool, bool); 4] = [
    ("atomic", false, false),
    ("atomic + profile", false, true),
    ("in-order", true, false),
    ("in-order + profile", true, true),
];
/// The sampler's period in the models table (`boot`'s default).
const MODES_SAMPLE_PERIOD: u64 = 1024;

/// A device-throughput benchmark (virtio-blk reads, virtio-net TCP
/// receive): how fast each simulator moves the data, in MiB per second of
/// host time.
#[derive(Clone, Debug, Serialize)]
pub struct ThroughputSection {
    pub what: String,
    pub mib: u64,
    pub hartscope_command: String,
    pub qemu_command: Option<String>,
    /// (hartscope MiB/s, QEMU MiB/s) per repetition.
    pub runs: Vec<(f64, Option<f64>)>,
    pub hartscope_mibps: f64,
    pub qemu_mibps: Option<f64>,
    pub note: String,
}

/// The disk benchmark's guest side: the read between two phase markers
/// (hartscope's host time at each), and coreutils dd's own figure (under
/// QEMU's TCG the guest clock follows the host's).
const DISK_RUN: &str = "i=0\nwhile [ ! -b /dev/vda ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done\n\
hsmark phase \"disk read\"\n\
/usr/bin/dd if=/dev/vda of=/dev/null bs=1M iflag=direct 2>&1 | sed -n 's/.* copied, \\([0-9.e+-]*\\) s,.*/bench-seconds: \\1/p'\n\
hsmark phase \"disk done\"\n";

/// The network benchmark's guest side (PORT and COUNT filled in): ttcp asks
/// 10.0.2.2 for COUNT x 8 KiB; its timed transfer is the phase `net
/// receive` (ended by its own `ttcp done`), and it prints its own figure
/// and the FNV-1a of what arrived.
const NET_RUN: &str = "ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0\n\
ttcp -c 10.0.2.2 -p PORT -l 8192 -n COUNT -P 'net receive' | sed -n 's/^ttcp-r: [0-9]* bytes in \\([0-9.]*\\) s = .*/bench-seconds: \\1/p; s/^ttcp-r: fnv1a /bench-fnv: /p'\n";

/// A scratch directory removed when the bench ends.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn run(args: BenchArgs) -> Result<i32, String> {
    if args.repeat == 0 {
        return Err("--repeat 0: give at least one repetition".into());
    }
    if args.rounds == 0 {
        return Err("--rounds 0: give at least one round".into());
    }
    if args.smp == 0 || args.smp > hs_machine::layout::MAX_HARTS {
        return Err(format!(
            "--smp {}: this machine supports 1 to {} harts",
            args.smp,
            hs_machine::layout::MAX_HARTS
        ));
    }
    let image = hs_guest::find(&args.image).map_err(|e| e.to_string())?;
    let guest_dir = hs_guest::Builder::from_env().guest_dir;
    let workload = args
        .workload
        .clone()
        .unwrap_or_else(|| guest_dir.join("workloads/p87-shell"));
    let me = std::env::current_exe()
        .map_err(|e| format!("cannot find the hartscope executable: {e}"))?;

    let scratch =
        Scratch(std::env::temp_dir().join(format!("hartscope-bench-{}", std::process::id())));
    std::fs::create_dir_all(&scratch.0)
        .map_err(|e| format!("cannot create {}: {e}", scratch.0.display()))?;
    let initrd = scratch.0.join("initrd");
    let initrd_bytes = hs_guest::workload_initrd(&image, &workload).map_err(|e| e.to_string())?;
    std::fs::write(&initrd, initrd_bytes)
        .map_err(|e| format!("cannot write {}: {e}", initrd.display()))?;

    let qemu = qemu_version();
    let load_before = load_average();
    eprintln!(
        "hartscope bench: image `{}`, --smp {}, -m {}M, workload {}, {} repetition(s); QEMU: {}",
        args.image,
        args.smp,
        args.mem_mib,
        workload.display(),
        args.repeat,
        qemu.as_deref().unwrap_or_else(|e| e)
    );

    let linux_boot = bench_linux(
        &args,
        &me,
        &image,
        &workload,
        &initrd,
        qemu.is_ok(),
        &scratch.0,
    )?;
    let cpubound = bench_cpubound(&args, &me, &guest_dir, qemu.is_ok(), &scratch.0);
    let disk_read = if args.disk_mib > 0 {
        Some(bench_disk(&args, &me, &image, qemu.is_ok(), &scratch.0)?)
    } else {
        None
    };
    let net_receive = if args.net_mib > 0 {
        Some(bench_net(&args, &me, &image, qemu.is_ok(), &scratch.0)?)
    } else {
        None
    };
    let models = if args.no_models {
        None
    } else {
        Some(bench_models(&args, &me, &guest_dir, &workload, &scratch.0)?)
    };
    let report = BenchReport {
        build: BUILD.to_string(),
        image: args.image.clone(),
        smp: args.smp,
        mem_mib: args.mem_mib,
        repeat: args.repeat,
        workload: workload.display().to_string(),
        qemu_version: qemu.as_ref().ok().cloned(),
        qemu_not_run: qemu.as_ref().err().cloned(),
        load_average_before: load_before,
        load_average_after: load_average(),
        linux_boot,
        cpubound_not_measured: cpubound.as_ref().err().cloned(),
        cpubound: cpubound.ok(),
        disk_read,
        net_receive,
        models,
    };
    print!("{}", render(&report));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| format!("cannot encode the figures: {e}"))?;
        std::fs::write(path, text + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(0)
}

fn bench_models(
    args: &BenchArgs,
    me: &Path,
    guest_dir: &Path,
    workload: &Path,
    scratch: &Path,
) -> Result<ModelsSection, String> {
    let machine = match &args.inorder_machine {
        Some(m) => m.clone(),
        None => guest_dir
            .parent()
            .unwrap_or(guest_dir)
            .join("machines/inorder.toml"),
    };
    if !machine.is_file() {
        return Err(format!(
            "{}: no such machine description for the models table (give --inorder-machine, or --no-models)",
            machine.display()
        ));
    }
    let stats = scratch.join("models-stats.json");
    let profile = scratch.join("models-profile");
    let command = |inorder: bool, sampled: bool| {
        let mut hs = hartscope_boot(me, args, args.smp, workload, &stats);
        if inorder {
            hs.arg("--machine").arg(&machine);
        }
        if sampled {
            hs.arg("--profile")
                .arg(&profile)
                .args(["--sample-period", &MODES_SAMPLE_PERIOD.to_string()]);
        }
        hs
    };
    let mut runs = Vec::new();
    for rep in 1..=args.repeat {
        let mut row = Vec::new();
        for (mode, inorder, sampled) in MODES {
            eprintln!("hartscope bench: models {rep}/{}: {mode}", args.repeat);
            let console = scratch.join("models-console.txt");
            let mut hs = command(inorder, sampled);
            let t = timed(&mut hs, &console, &scratch.join("models-stderr.txt"))?;
            agent_status(&console)
                .ok_or_else(|| run_failed(&format!("hartscope ({mode})"), &console))?;
            let h = hartscope_run(t, &stats)?;
            row.push(ModeRun {
                mode: mode.into(),
                wall_s: h.wall_s,
                run_s: h.run_s,
                mips: h.mips,
                instret: h.instret,
                interpreted: h.interpreted,
                samples: h.samples,
            });
        }
        runs.push(row);
    }
    let median = models_medians(&runs);
    Ok(ModelsSection {
        what: format!(
            "Models: Linux boot of image `{}` with workload {}, hartscope alone",
            args.image,
            workload.display()
        ),
        inorder_machine: machine.display().to_string(),
        sample_period: MODES_SAMPLE_PERIOD,
        runs,
        median,
        note: "QEMU has neither a timing model nor a guest sampler, so nothing to pair with. \
               `run s` is the host time inside the harts' runs (simulation and sampling); wall time \
               adds start-up, the symbol tables a profile loads and writing its reports. A sampled \
               mode's ratios are to the plain mode of the same model, per repetition."
            .into(),
    })
}

/// Per mode (in `MODES` order), medians over the repetitions `runs`, and
/// the range of MIPS and of a sampled mode's ratios: on a shared host one
/// repetition moves by several per cent, which the median alone hides.
fn models_medians(runs: &[Vec<ModeRun>]) -> Vec<ModeMedian> {
    let of = |i: usize, f: &dyn Fn(&ModeRun) -> f64| -> Vec<f64> {
        runs.iter().filter_map(|r| r.get(i)).map(f).collect()
    };
    let range = |v: &[f64]| -> Option<(f64, f64)> {
        let lo = v.iter().copied().reduce(f64::min)?;
        Some((lo, v.iter().copied().reduce(f64::max)?))
    };
    MODES
        .iter()
        .enumerate()
        .map(|(i, &(mode, _, sampled))| {
            // a sampled mode follows its plain one
            let ratios = |f: &dyn Fn(&ModeRun) -> f64| -> Vec<f64> {
                if !sampled || i == 0 {
                    return Vec::new();
                }
                runs.iter()
                    .filter_map(|r| Some(f(r.get(i)?) / f(r.get(i - 1)?)))
                    .collect()
            };
            let run_ratios = ratios(&|r| r.run_s);
            let per_sample: Vec<f64> = if !sampled || i == 0 {
                Vec::new()
            } else {
                runs.iter()
                    .filter_map(|r| {
                        let (plain, s) = (r.get(i - 1)?, r.get(i)?);
                        (s.samples > 0).then(|| (s.run_s - plain.run_s) * 1e9 / s.samples as f64)
                    })
                    .collect()
            };
            let mips = of(i, &|r| r.mips);
            ModeMedian {
                mode: mode.into(),
                wall_s: median(of(i, &|r| r.wall_s)).unwrap_or(0.0),
                run_s: median(of(i, &|r| r.run_s)).unwrap_or(0.0),
                mips: median(mips.clone()).unwrap_or(0.0),
                mips_range: range(&mips).unwrap_or((0.0, 0.0)),
                run_vs_plain: median(run_ratios.clone()),
                run_vs_plain_range: range(&run_ratios),
                wall_vs_plain: median(ratios(&|r| r.wall_s)),
                host_ns_per_sample: median(per_sample),
                interpreted_share: median(of(i, &|r| {
                    r.interpreted as f64 / r.instret.max(1) as f64
                })),
            }
        })
        .collect()
}

/// hartscope's stats JSON at `stats`.
fn read_stats(stats: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(stats)
        .map_err(|e| format!("cannot read hartscope's stats {}: {e}", stats.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("hartscope's stats {} are not JSON: {e}", stats.display()))
}

fn bench_linux(
    args: &BenchArgs,
    me: &Path,
    image: &hs_guest::ImageDir,
    workload: &Path,
    initrd: &Path,
    with_qemu: bool,
    scratch: &Path,
) -> Result<Section, String> {
    let stats = scratch.join("boot-stats.json");
    let mut hs = hartscope_boot(me, args, args.smp, workload, &stats);
    let boot = hs_guest::qemu::QemuBoot {
        firmware: &image.firmware,
        kernel: &image.kernel,
        initrd,
        append: &image.default_append,
        smp: args.smp as u32,
        memory_mib: args.mem_mib as u32,
        timeout: RUN_TIMEOUT,
        console_log: scratch.join("qemu-console.txt"),
        disk: None,
        user_net: false,
    };
    let mut runs = Vec::new();
    for rep in 1..=args.repeat {
        eprintln!(
            "hartscope bench: Linux boot {rep}/{}: hartscope",
            args.repeat
        );
        let console = scratch.join("hartscope-console.txt");
        let t = timed(&mut hs, &console, &scratch.join("hartscope-stderr.txt"))?;
        let status = agent_status(&console).ok_or_else(|| run_failed("hartscope", &console))?;
        let h = hartscope_run(t, &stats)?;
        let q = if with_qemu {
            eprintln!("hartscope bench: Linux boot {rep}/{}: QEMU", args.repeat);
            let log = boot.console_log.clone();
            let t = timed(&mut boot.command(), &log, &scratch.join("qemu-stderr.txt"))?;
            match agent_status(&log) {
                Some(s) if s == status => Some(t),
                Some(s) => {
                    return Err(format!(
                        "the workload exited with status {status} on hartscope but {s} on QEMU"
                    ))
                }
                None => return Err(run_failed("QEMU", &log)),
            }
        } else {
            None
        };
        runs.push(pair(h, q));
    }
    Ok(Section {
        what: format!("Linux boot of image `{}` with workload {} to power-off", args.image, workload.display()),
        hartscope_command: show(&hs),
        qemu_command: with_qemu.then(|| show(&boot.command())),
        median: medians(&runs, false),
        runs,
        note: "same firmware, kernel, initrd + workload, append, -smp and -m on both; QEMU (TCG) runs one host \
               thread per hart, so with -smp > 1 its CPU time can exceed its wall time"
            .into(),
    })
}

fn bench_cpubound(
    args: &BenchArgs,
    me: &Path,
    guest_dir: &Path,
    with_qemu: bool,
    scratch: &Path,
) -> Result<Section, String> {
    let elf = build_bare_cpubound(guest_dir, args.rounds, scratch)?;
    // The instruction count from one untimed run asked for its stats; the
    // timed runs ask for no output file, as QEMU's do (see
    // WHY_COUNTED_APART).
    let stats = scratch.join("cpubound-stats.json");
    let boot = || {
        let mut c = Command::new(me);
        c.args(["boot", "--bios", "none", "--kernel"]).arg(&elf);
        c
    };
    let mut hs = boot();
    let mut counting = boot();
    counting.arg("--stats-json").arg(&stats);
    // a hartscope run's timing and the checksum it printed
    let run = |cmd: &mut Command, name: &str| -> Result<(Timing, String), String> {
        let out = scratch.join(format!("cpubound-{name}.txt"));
        let err = scratch.join(format!("cpubound-{name}-stderr.txt"));
        let t = timed(cmd, &out, &err)?;
        let sum = checksum_line(&out).ok_or_else(|| run_failed("hartscope (cpubound)", &out))?;
        Ok((t, sum))
    };
    eprintln!("hartscope bench: cpubound: counting");
    let (t, counted_sum) = run(&mut counting, "counting")?;
    let counted = hartscope_run(t, &stats)?;
    let mut qemu = Command::new(QEMU);
    qemu.args([
        "-M",
        "spike",
        "-bios",
        "none",
        "-nographic",
        "-monitor",
        "none",
        "-kernel",
    ])
    .arg(&elf);
    let mut runs = Vec::new();
    for rep in 1..=args.repeat {
        eprintln!("hartscope bench: cpubound {rep}/{}: hartscope", args.repeat);
        let (t, mine) = run(&mut hs, "hartscope")?;
        if mine != counted_sum {
            return Err(format!(
                "cpubound printed `{mine}` on a timed run but `{counted_sum}` on the counting one"
            ));
        }
        let h = timed_as_counted(t, &counted);
        let q = if with_qemu {
            eprintln!("hartscope bench: cpubound {rep}/{}: QEMU", args.repeat);
            let out = scratch.join("cpubound-qemu.txt");
            let t = timed(&mut qemu, &out, &scratch.join("cpubound-qemu-stderr.txt"))?;
            match checksum_line(&out) {
                Some(theirs) if theirs == mine => Some(t),
                Some(theirs) => {
                    return Err(format!(
                        "cpubound printed `{mine}` on hartscope but `{theirs}` on QEMU"
                    ))
                }
                None => return Err(run_failed("QEMU (cpubound)", &out)),
            }
        } else {
            None
        };
        runs.push(pair(h, q));
    }
    Ok(Section {
        what: format!(
            "guest/workloads/cpubound.c, {} rounds, bare metal (-bios none), one hart",
            args.rounds
        ),
        hartscope_command: show(&hs),
        qemu_command: with_qemu.then(|| show(&qemu)),
        median: medians(&runs, true),
        runs,
        note: format!("{WHY_BARE_METAL}; {WHY_COUNTED_APART}"),
    })
}

/// A timed run of a program whose counts `counted` (a run of the same
/// program asked for its stats) gave: its MIPS by its wall time, which
/// is its run time too (it wrote no stats to say otherwise).
fn timed_as_counted(t: Timing, counted: &HartscopeRun) -> HartscopeRun {
    HartscopeRun {
        wall_s: t.wall_s,
        cpu_s: t.cpu_s,
        mips: counted.instret as f64 / t.wall_s / 1e6,
        run_s: t.wall_s,
        ..counted.clone()
    }
}

/// One side-by-side throughput measurement: the same image and workload
/// under hartscope (`hartscope`, its stats JSON at `stats`) and QEMU
/// (`qemu`); the workload prints `bench-seconds: S` (its own clock) and,
/// optionally, `bench-fnv: HEX`, which must then equal `fnv`.
struct ThroughputRun<'a> {
    what: String,
    /// Scratch file names start with this.
    tag: &'a str,
    mib: u64,
    hartscope: Command,
    stats: PathBuf,
    /// hartscope's phase labels around the transfer.
    from: &'a str,
    to: &'a str,
    qemu: hs_guest::qemu::QemuBoot<'a>,
    fnv: Option<u64>,
    note: &'a str,
}

fn bench_throughput(
    mut t: ThroughputRun,
    repeat: usize,
    with_qemu: bool,
    scratch: &Path,
) -> Result<ThroughputSection, String> {
    let mib = t.mib as f64;
    let mut runs = Vec::new();
    for rep in 1..=repeat {
        eprintln!("hartscope bench: {} {rep}/{repeat}: hartscope", t.tag);
        let console = scratch.join(format!("{}-hartscope-console.txt", t.tag));
        let err = scratch.join(format!("{}-hartscope-stderr.txt", t.tag));
        timed(&mut t.hartscope, &console, &err)?;
        let v = read_stats(&t.stats)?;
        let at = |label: &str| {
            let i = v["phases"]
                .as_array()?
                .iter()
                .position(|p| p["label"] == label)?;
            v["phase_host_seconds"][i].as_f64()
        };
        let who = format!("hartscope ({})", t.tag);
        let h = match (at(t.from), at(t.to), bench_figures(&console, t.fnv)) {
            (Some(a), Some(b), Some(_)) if b > a => mib / (b - a),
            _ => return Err(run_failed(&who, &console)),
        };
        let q = if with_qemu {
            eprintln!("hartscope bench: {} {rep}/{repeat}: QEMU", t.tag);
            let log = t.qemu.console_log.clone();
            let err = scratch.join(format!("{}-qemu-stderr.txt", t.tag));
            timed(&mut t.qemu.command(), &log, &err)?;
            match bench_figures(&log, t.fnv) {
                Some(s) if s > 0.0 => Some(mib / s),
                _ => return Err(run_failed(&format!("QEMU ({})", t.tag), &log)),
            }
        } else {
            None
        };
        runs.push((h, q));
    }
    let hartscope_mibps = median(runs.iter().map(|r| r.0).collect()).unwrap_or(0.0);
    let qemu_mibps = median(runs.iter().filter_map(|r| r.1).collect());
    Ok(ThroughputSection {
        what: t.what,
        mib: t.mib,
        hartscope_command: show(&t.hartscope),
        qemu_command: with_qemu.then(|| show(&t.qemu.command())),
        runs,
        hartscope_mibps,
        qemu_mibps,
        note: t.note.into(),
    })
}

/// A workload initrd for `run_sh` in `scratch/NAME`.
fn workload_initrd(
    image: &hs_guest::ImageDir,
    scratch: &Path,
    name: &str,
    run_sh: &str,
) -> Result<(PathBuf, PathBuf), String> {
    let wl = scratch.join(format!("{name}-workload"));
    std::fs::create_dir_all(&wl).map_err(|e| format!("cannot create {}: {e}", wl.display()))?;
    std::fs::write(wl.join("run.sh"), run_sh)
        .map_err(|e| format!("cannot write the {name} workload: {e}"))?;
    let initrd = scratch.join(format!("{name}-initrd"));
    let bytes = hs_guest::workload_initrd(image, &wl).map_err(|e| e.to_string())?;
    std::fs::write(&initrd, bytes)
        .map_err(|e| format!("cannot write {}: {e}", initrd.display()))?;
    Ok((wl, initrd))
}

/// `hartscope boot` of the bench's image on `smp` harts with `wl`, stats to `stats`.
fn hartscope_boot(me: &Path, args: &BenchArgs, smp: usize, wl: &Path, stats: &Path) -> Command {
    let mut hs = Command::new(me);
    hs.args([
        "boot",
        "--image",
        &args.image,
        "--smp",
        &smp.to_string(),
        "-m",
        &format!("{}M", args.mem_mib),
    ])
    .arg("--workload")
    .arg(wl)
    .arg("--stats-json")
    .arg(stats);
    hs
}

fn bench_disk(
    args: &BenchArgs,
    me: &Path,
    image: &hs_guest::ImageDir,
    with_qemu: bool,
    scratch: &Path,
) -> Result<ThroughputSection, String> {
    let (wl, initrd) = workload_initrd(image, scratch, "disk", DISK_RUN)?;
    // Data, not zeros (a device or page path that special-cased zeros
    // would flatter either side): a fixed xorshift stream.
    let disk = scratch.join("disk.img");
    let mut data = vec![0u8; (args.disk_mib << 20) as usize];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for chunk in data.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    std::fs::write(&disk, &data).map_err(|e| format!("cannot write {}: {e}", disk.display()))?;
    drop(data);
    let stats = scratch.join("disk-stats.json");
    let mut hs = hartscope_boot(me, args, 1, &wl, &stats);
    hs.arg("-drive")
        .arg(format!("file={},format=raw,if=virtio", disk.display()));
    let qemu = hs_guest::qemu::QemuBoot {
        firmware: &image.firmware,
        kernel: &image.kernel,
        initrd: &initrd,
        append: &image.default_append,
        smp: 1,
        memory_mib: args.mem_mib as u32,
        timeout: RUN_TIMEOUT,
        console_log: scratch.join("disk-qemu-console.txt"),
        disk: Some(&disk),
        user_net: false,
    };
    bench_throughput(
        ThroughputRun {
            what: format!("Sequential read of a {} MiB virtio-blk disk", args.disk_mib),
            tag: "disk read",
            mib: args.disk_mib,
            hartscope: hs,
            stats,
            from: "disk read",
            to: "disk done",
            qemu,
            fnv: None,
            note: "one hart; coreutils dd reads the whole virtio-blk disk with 1 MiB O_DIRECT requests. hartscope: \
                   MiB over the host seconds between the phase markers around dd (its stats' phase_host_seconds); \
                   QEMU: MiB over dd's own elapsed time (TCG without icount: the guest clock follows the host's)",
        },
        args.repeat,
        with_qemu,
        scratch,
    )
}

/// A host TCP source for QEMU's user networking, speaking the network
/// peer's protocol: a client's first 8 bytes (big-endian) say how many
/// bytes of the peer's pattern to send, then the server closes.
fn host_tcp_source() -> Result<u16, String> {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot listen on a host TCP port for QEMU: {e}"))?;
    let port = listener
        .local_addr()
        .map_err(|e| format!("cannot read the host TCP port: {e}"))?
        .port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { continue };
            let mut req = [0u8; 8];
            if c.read_exact(&mut req).is_err() {
                continue;
            }
            let mut left = u64::from_be_bytes(req);
            let mut at = 0u64;
            let mut buf = vec![0u8; 64 << 10];
            while left > 0 {
                let n = left.min(buf.len() as u64) as usize;
                for (i, b) in buf[..n].iter_mut().enumerate() {
                    *b = hs_peer::pattern_byte(at + i as u64);
                }
                if c.write_all(&buf[..n]).is_err() {
                    break;
                }
                at += n as u64;
                left -= n as u64;
            }
        }
    });
    Ok(port)
}

fn bench_net(
    args: &BenchArgs,
    me: &Path,
    image: &hs_guest::ImageDir,
    with_qemu: bool,
    scratch: &Path,
) -> Result<ThroughputSection, String> {
    let port = if with_qemu { host_tcp_source()? } else { 5001 };
    let count = args.net_mib * 128;
    let run_sh = NET_RUN
        .replace("PORT", &port.to_string())
        .replace("COUNT", &count.to_string());
    let (wl, initrd) = workload_initrd(image, scratch, "net", &run_sh)?;
    // The peer on a wire fast enough never to be the bound: 10 Gbit/s,
    // 1 us away, 64 KiB TCP buffers.
    let machine = scratch.join("net-machine.toml");
    std::fs::write(
        &machine,
        format!(
            "model = \"atomic\"\ndescription = \"bench: virtio-net, 10 Gbit/s to the network peer\"\n\n\
             [board.net0]\nkind = \"virtio-net\"\nlink-mbps = 10000\npeer-latency-ns = 1000\n\
             peer-tcp-source = {port}\npeer-tcp-buffer-kib = 64\n"
        ),
    )
    .map_err(|e| format!("cannot write {}: {e}", machine.display()))?;
    let stats = scratch.join("net-stats.json");
    let mut hs = hartscope_boot(me, args, 1, &wl, &stats);
    hs.arg("--machine").arg(&machine);
    let qemu = hs_guest::qemu::QemuBoot {
        firmware: &image.firmware,
        kernel: &image.kernel,
        initrd: &initrd,
        append: &image.default_append,
        smp: 1,
        memory_mib: args.mem_mib as u32,
        timeout: RUN_TIMEOUT,
        console_log: scratch.join("net-qemu-console.txt"),
        disk: None,
        user_net: true,
    };
    bench_throughput(
        ThroughputRun {
            what: format!("TCP receive of {} MiB over virtio-net", args.net_mib),
            tag: "net receive",
            mib: args.net_mib,
            hartscope: hs,
            stats,
            from: "net receive",
            to: "ttcp done",
            qemu,
            fnv: Some(hs_peer::pattern_fnv(args.net_mib << 20)),
            note: "one hart; the guest's ttcp asks 10.0.2.2 for the bytes and checks them (FNV-1a equal on both sides). \
                   hartscope: the network peer at 10 Gbit/s, MiB over the host seconds of ttcp's timed transfer (its phase); \
                   QEMU: user networking (slirp) to a TCP server in this process, MiB over ttcp's own time \
                   (TCG without icount: the guest clock follows the host's)",
        },
        args.repeat,
        with_qemu,
        scratch,
    )
}

/// The seconds the workload reported (`bench-seconds: S`), if its
/// `bench-fnv: HEX` line matches `fnv` when one is expected.
fn bench_figures(console: &Path, fnv: Option<u64>) -> Option<f64> {
    let text = std::fs::read_to_string(console).ok()?;
    let line = |key: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key).map(str::trim))
    };
    if let Some(want) = fnv {
        let got = u64::from_str_radix(line("bench-fnv: ")?, 16).ok()?;
        if got != want {
            return None;
        }
    }
    line("bench-seconds: ")?.parse().ok()
}

/// Builds the bare-metal cpubound ELF into `scratch`.
fn build_bare_cpubound(guest_dir: &Path, rounds: u32, scratch: &Path) -> Result<PathBuf, String> {
    let src = guest_dir.join("workloads/cpubound.c");
    let ld = guest_dir.join("workloads/cpubound-bare.ld");
    let elf = scratch.join("cpubound.elf");
    let out = Command::new(BARE_CC)
        .args([
            "-DCPUBOUND_BARE_METAL",
            &format!("-DDEFAULT_ROUNDS={rounds}"),
            "-O2",
            "-march=rv64gc",
            "-mabi=lp64d",
        ])
        .args([
            "-mcmodel=medany",
            "-ffreestanding",
            "-fno-builtin",
            "-fno-tree-loop-distribute-patterns",
        ])
        .args([
            "-nostdlib",
            "-nostartfiles",
            "-static",
            "-Wl,--no-warn-rwx-segments",
            "-T",
        ])
        .arg(&ld)
        .arg(&src)
        .arg("-lgcc")
        .arg("-o")
        .arg(&elf)
        .output()
        .map_err(|e| {
            format!("cannot run {BARE_CC} (install Debian package gcc-riscv64-unknown-elf): {e}")
        })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err
            .lines()
            .find(|l| l.contains("error"))
            .unwrap_or_else(|| err.lines().next().unwrap_or(""));
        return Err(format!(
            "{} does not build for bare metal: {first}",
            src.display()
        ));
    }
    Ok(elf)
}

/// Runs `cmd` with stdout to `out` and stderr to `err`, timing it; a
/// non-zero exit is not an error here (the caller checks the output).
fn timed(cmd: &mut Command, out: &Path, err: &Path) -> Result<Timing, String> {
    let open =
        |p: &Path| File::create(p).map_err(|e| format!("cannot create {}: {e}", p.display()));
    let program = cmd.get_program().to_string_lossy().into_owned();
    let cpu_before = children_cpu_seconds();
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(open(out)?)
        .stderr(open(err)?)
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() > RUN_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{program} did not finish within {} s; its output is in {}",
                    RUN_TIMEOUT.as_secs(),
                    out.display()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(format!("cannot wait for {program}: {e}")),
        }
    }
    let wall_s = started.elapsed().as_secs_f64();
    Ok(Timing {
        wall_s,
        cpu_s: children_cpu_seconds() - cpu_before,
    })
}

/// User + system time of all waited-for children so far.
fn children_cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}

fn hartscope_run(t: Timing, stats: &Path) -> Result<HartscopeRun, String> {
    let v = read_stats(stats)?;
    let num = |k: &str| v.get(k).and_then(serde_json::Value::as_f64);
    let field = |k: &str| {
        num(k).ok_or_else(|| format!("hartscope's stats {} have no number `{k}`", stats.display()))
    };
    Ok(HartscopeRun {
        wall_s: t.wall_s,
        cpu_s: t.cpu_s,
        mips: field("mips")?,
        instret: v
            .get("instret")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0),
        cycles: v
            .get("cycles")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0),
        guest_s: field("guest_seconds")?,
        run_s: field("host_seconds")?,
        interpreted: v
            .get("harts")
            .and_then(serde_json::Value::as_array)
            .map_or(0, |harts| {
                harts
                    .iter()
                    .filter_map(|h| h.get("interpreted_instret")?.as_u64())
                    .sum()
            }),
        samples: total_stat(&v, "system.samples").unwrap_or(0),
    })
}

/// The whole run's counter `name` in `boot --stats-json`'s output (its
/// `stats.total.stats` list); None when the run did not count it.
fn total_stat(v: &serde_json::Value, name: &str) -> Option<u64> {
    v.pointer("/stats/total/stats")?
        .as_array()?
        .iter()
        .find(|s| s.get("name").and_then(serde_json::Value::as_str) == Some(name))?
        .get("value")?
        .as_u64()
}

fn pair(hartscope: HartscopeRun, qemu: Option<Timing>) -> Pair {
    let ratio = qemu.map(|q| hartscope.wall_s / q.wall_s);
    let cpu_ratio = qemu
        .filter(|q| q.cpu_s > 0.0)
        .map(|q| hartscope.cpu_s / q.cpu_s);
    Pair {
        hartscope,
        qemu,
        ratio,
        cpu_ratio,
    }
}

pub fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn medians(runs: &[Pair], estimate_qemu_mips: bool) -> Medians {
    let hs_wall = median(runs.iter().map(|r| r.hartscope.wall_s).collect()).unwrap_or(0.0);
    let qemu_wall = median(
        runs.iter()
            .filter_map(|r| r.qemu.map(|q| q.wall_s))
            .collect(),
    );
    let instret = runs.first().map_or(0, |r| r.hartscope.instret);
    Medians {
        hartscope_wall_s: hs_wall,
        hartscope_mips: median(runs.iter().map(|r| r.hartscope.mips).collect()).unwrap_or(0.0),
        qemu_wall_s: qemu_wall,
        qemu_mips_estimate: qemu_wall
            .filter(|_| estimate_qemu_mips)
            .map(|w| instret as f64 / w / 1e6),
        ratio: median(runs.iter().filter_map(|r| r.ratio).collect()),
        cpu_ratio: median(runs.iter().filter_map(|r| r.cpu_ratio).collect()),
    }
}

/// The agent's exit-status line in a console log.
fn agent_status(console: &Path) -> Option<i64> {
    let text = String::from_utf8_lossy(&std::fs::read(console).ok()?).replace('\r', "");
    let status = text
        .lines()
        .find_map(|l| l.trim().strip_prefix(AGENT_STATUS))?
        .trim()
        .parse()
        .ok()?;
    text.contains("reboot: Power down").then_some(status)
}

fn checksum_line(out: &Path) -> Option<String> {
    let text = std::fs::read_to_string(out).ok()?;
    text.lines()
        .find(|l| l.starts_with("cpubound: "))
        .map(|l| l.trim().to_string())
}

fn run_failed(who: &str, log: &Path) -> String {
    let text = std::fs::read(log)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no output)")
        .trim()
        .to_string();
    format!("the {who} run did not finish its workload; its output ended with: {last}")
}

fn qemu_version() -> Result<String, String> {
    match Command::new(QEMU).arg("--version").stdin(Stdio::null()).output() {
        Ok(o) if o.status.success() => {
            Ok(String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or(QEMU).trim().to_string())
        }
        Ok(_) => Err(format!("{QEMU} --version failed: QEMU not run, hartscope's figures alone")),
        Err(_) => Err(format!(
            "{QEMU} is not installed (Debian package qemu-system-misc): QEMU not run, hartscope's figures alone"
        )),
    }
}

fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(
        text.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    )
}

fn show(cmd: &Command) -> String {
    let mut parts = vec![cmd.get_program().to_string_lossy().into_owned()];
    parts.extend(cmd.get_args().map(|a| {
        let a = a.to_string_lossy();
        if a.is_empty() || a.contains(' ') {
            format!("'{a}'")
        } else {
            a.into_owned()
        }
    }));
    parts.join(" ")
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |x| format!("{x:.digits$}"))
}

/// The report as Markdown tables.
pub fn render(r: &BenchReport) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "# hartscope bench\n\nimage `{}`, --smp {}, -m {}M, {} repetition(s), interleaved\n",
        r.image, r.smp, r.mem_mib, r.repeat
    ));
    s.push_str(&format!("hartscope build: {}\n", r.build));
    if let Some(v) = r.qemu_version.as_ref().or(r.qemu_not_run.as_ref()) {
        s.push_str(&format!("QEMU: {v}\n"));
    }
    if let (Some(a), Some(b)) = (&r.load_average_before, &r.load_average_after) {
        s.push_str(&format!(
            "host load average: {a} before, {b} after (a shared machine: compare side by side)\n"
        ));
    }
    s.push_str(&section(&r.linux_boot, false));
    if let Some(sec) = &r.cpubound {
        s.push_str(&section(sec, true));
    }
    if let Some(why) = &r.cpubound_not_measured {
        s.push_str(&format!("\n## CPU-bound program\n\nnot measured: {why}\n"));
    }
    for d in [&r.disk_read, &r.net_receive].into_iter().flatten() {
        s.push_str(&format!(
            "\n## {}, MiB per host second\n\nhartscope: `{}`\n",
            d.what, d.hartscope_command
        ));
        if let Some(q) = &d.qemu_command {
            s.push_str(&format!("QEMU:      `{q}`\n"));
        }
        s.push_str(&format!(
            "{}\n\n| run | hartscope MiB/s | QEMU MiB/s |\n|--:|--:|--:|\n",
            d.note
        ));
        for (i, (h, q)) in d.runs.iter().enumerate() {
            s.push_str(&format!("| {} | {h:.1} | {} |\n", i + 1, fmt_opt(*q, 1)));
        }
        s.push_str(&format!(
            "| median | {:.1} | {} |\n",
            d.hartscope_mibps,
            fmt_opt(d.qemu_mibps, 1)
        ));
    }
    if let Some(m) = &r.models {
        s.push_str(&models_table(m));
    }
    s
}

fn models_table(m: &ModelsSection) -> String {
    let mut s = format!(
        "\n## {}\n\nin-order machine: `{}`; sampling every {} cycles of each hart\n{}\n\n",
        m.what, m.inorder_machine, m.sample_period, m.note
    );
    s.push_str(
        "| mode | wall s | run s | MIPS | MIPS range | run vs plain | run vs plain range | host ns a sample | wall vs plain | interpreted |\n",
    );
    s.push_str("|--|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for x in &m.median {
        let (lo, hi) = x.mips_range;
        s.push_str(&format!(
            "| {} | {:.2} | {:.2} | {:.1} | {lo:.1}–{hi:.1} | {} | {} | {} | {} | {} |\n",
            x.mode,
            x.wall_s,
            x.run_s,
            x.mips,
            fmt_opt(x.run_vs_plain, 3),
            x.run_vs_plain_range
                .map_or("–".to_string(), |(lo, hi)| format!("{lo:.3}–{hi:.3}")),
            fmt_opt(x.host_ns_per_sample, 0),
            fmt_opt(x.wall_vs_plain, 2),
            x.interpreted_share
                .map_or("–".to_string(), |f| format!("{:.1} %", 100.0 * f))
        ));
    }
    s.push_str(&format!(
        "(medians of {} repetition(s); the ranges are their lowest and highest; `host ns a sample`: \
         the run time sampling added, over the samples kept; `interpreted`: \
         the share of instructions the block interpreter retired, the rest translated)\n",
        m.runs.len()
    ));
    s
}

fn section(sec: &Section, bare: bool) -> String {
    let mut s = format!("\n## {}\n\n", sec.what);
    s.push_str(&format!("hartscope: `{}`\n", sec.hartscope_command));
    if let Some(q) = &sec.qemu_command {
        s.push_str(&format!("QEMU:      `{q}`\n"));
    }
    s.push_str(&format!("{}\n\n", sec.note));
    s.push_str("| run | hartscope wall s | hartscope CPU s | hartscope MIPS | guest s | QEMU wall s | QEMU CPU s | wall ratio | CPU ratio |\n");
    s.push_str("|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (i, p) in sec.runs.iter().enumerate() {
        let h = &p.hartscope;
        s.push_str(&format!(
            "| {} | {:.2} | {:.2} | {:.1} | {:.3} | {} | {} | {} | {} |\n",
            i + 1,
            h.wall_s,
            h.cpu_s,
            h.mips,
            h.guest_s,
            fmt_opt(p.qemu.map(|q| q.wall_s), 2),
            fmt_opt(p.qemu.map(|q| q.cpu_s), 2),
            fmt_opt(p.ratio, 2),
            fmt_opt(p.cpu_ratio, 2)
        ));
    }
    let m = &sec.median;
    s.push_str(&format!(
        "| median | {:.2} | | {:.1} | | {} | | {} | {} |\n\n",
        m.hartscope_wall_s,
        m.hartscope_mips,
        fmt_opt(m.qemu_wall_s, 2),
        fmt_opt(m.ratio, 2),
        fmt_opt(m.cpu_ratio, 2)
    ));
    match (m.ratio, m.cpu_ratio) {
        (Some(ratio), cpu) => s.push_str(&format!(
            "hartscope/QEMU wall time, median of the paired runs: {ratio:.2} (CPU time: {})\n",
            fmt_opt(cpu, 2)
        )),
        (None, _) => s.push_str("QEMU not run: no ratio\n"),
    }
    if bare {
        if let Some(q) = m.qemu_mips_estimate {
            let instret = sec.runs.first().map_or(0, |r| r.hartscope.instret);
            s.push_str(&format!(
                "{instret} instructions: hartscope {:.1} MIPS, QEMU about {q:.1} MIPS (that count over its median wall time)\n",
                m.hartscope_mips
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_models_table_gives_medians_and_ranges_per_repetition() {
        // three repetitions; run seconds chosen so each sampled ratio is known
        let run = |mode: &str, run_s: f64| ModeRun {
            mode: mode.into(),
            wall_s: run_s + 1.0,
            run_s,
            mips: 100.0 / run_s,
            instret: 100,
            // (the share falls as the run gets faster: 10 % to 40 %)
            interpreted: (100.0 / run_s) as u64 / 2 - 10,
            // a million samples in a sampled mode
            samples: if mode.ends_with("profile") {
                1_000_000
            } else {
                0
            },
        };
        let rep = |plain: f64, sampled: f64| {
            vec![
                run("atomic", 1.0),
                run("atomic + profile", 1.0),
                run("in-order", plain),
                run("in-order + profile", sampled),
            ]
        };
        let runs = vec![rep(2.0, 2.4), rep(4.0, 4.4), rep(2.5, 2.5)];
        let m = models_medians(&runs);
        assert_eq!(m.len(), 4);
        assert_eq!((m[0].run_vs_plain, m[0].run_vs_plain_range), (None, None));
        assert_eq!((m[2].run_vs_plain, m[2].run_vs_plain_range), (None, None));
        let r = &m[3];
        assert_eq!(r.mode, "in-order + profile");
        // ratios 1.2, 1.1, 1.0: the median is the middle one, not the
        // ratio of the medians (2.5 / 2.5)
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(r.run_vs_plain.unwrap(), 1.1), "{r:?}");
        let (lo, hi) = r.run_vs_plain_range.unwrap();
        assert!(close(lo, 1.0) && close(hi, 1.2), "{r:?}");
        // 0.4, 0.4 and 0 s added over a million samples: 400, 400, 0 ns;
        // a plain mode has no figure
        let ns = r.host_ns_per_sample.unwrap();
        assert!((ns - 400.0).abs() < 1e-6, "{r:?}");
        assert!(
            (m[1].host_ns_per_sample.unwrap()).abs() < 1e-6,
            "{:?}",
            m[1]
        );
        assert_eq!(m[2].host_ns_per_sample, None);
        assert!(
            close(m[2].mips, 40.0) && m[2].mips_range == (25.0, 50.0),
            "{:?}",
            m[2]
        );
        let text = models_table(&ModelsSection {
            what: "w".into(),
            inorder_machine: "m".into(),
            sample_period: 1024,
            runs: runs.clone(),
            median: m,
            note: "n".into(),
        });
        assert!(
            text.contains(
                "| in-order + profile | 3.50 | 2.50 | 40.0 | 22.7–41.7 | 1.100 | 1.000–1.200 | 400 | 1.08 | 10.0 % |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "| atomic | 2.00 | 1.00 | 100.0 | 100.0–100.0 | – | – | – | – | 40.0 % |"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_sample_count_is_read_from_the_whole_runs_counters() {
        let v = serde_json::json!({"stats": {"phases": [], "total": {"label": "t", "stats": [
            {"name": "system.contextSwitches", "unit": "count", "value": 115},
            {"name": "system.samples", "unit": "count", "value": 2222947},
            {"name": "system.samplesDropped", "unit": "count", "value": 3},
        ]}}});
        assert_eq!(total_stat(&v, "system.samples"), Some(2_222_947));
        assert_eq!(total_stat(&v, "system.samplesDropped"), Some(3));
        assert_eq!(total_stat(&v, "system.samplesMerged"), None);
        assert_eq!(
            total_stat(&serde_json::json!({"mips": 1.0}), "system.samples"),
            None
        );
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn memory_sizes_in_mib() {
        assert_eq!(parse_mib("512"), Ok(512));
        assert_eq!(parse_mib("512M"), Ok(512));
        assert_eq!(parse_mib("2G"), Ok(2048));
        assert_eq!(parse_mib("1GiB"), Ok(1024));
        assert!(parse_mib("0").is_err());
        assert!(parse_mib("lots").is_err());
        assert!(parse_mib("99999999999999999G").is_err());
    }

    fn run_of(wall: f64, qemu: Option<f64>) -> Pair {
        let h = HartscopeRun {
            wall_s: wall,
            cpu_s: wall,
            mips: 100.0 * wall,
            instret: 1_000_000_000,
            cycles: 1,
            guest_s: 1.0,
            run_s: wall,
            interpreted: 0,
            samples: 0,
        };
        pair(
            h,
            qemu.map(|w| Timing {
                wall_s: w,
                cpu_s: w,
            }),
        )
    }

    #[test]
    fn ratio_is_the_median_of_paired_runs() {
        let runs = vec![
            run_of(10.0, Some(5.0)),
            run_of(12.0, Some(4.0)),
            run_of(30.0, Some(20.0)),
        ];
        let m = medians(&runs, true);
        assert_eq!(m.hartscope_wall_s, 12.0);
        assert_eq!(m.qemu_wall_s, Some(5.0));
        assert_eq!(m.ratio, Some(2.0), "ratios 2, 3, 1.5");
        assert_eq!(
            m.cpu_ratio,
            Some(2.0),
            "CPU time equals wall time in these runs"
        );
        assert_eq!(m.qemu_mips_estimate, Some(200.0), "1e9 instructions in 5 s");
        let alone = medians(&[run_of(10.0, None)], true);
        assert_eq!(
            (alone.qemu_wall_s, alone.ratio, alone.qemu_mips_estimate),
            (None, None, None)
        );
    }

    /// A run's interpreted count is every hart's, from the stats hartscope
    /// wrote (fails when one hart's is left out or another field is read).
    #[test]
    fn a_runs_interpreted_count_sums_its_harts() {
        let (dir, stats) = unit_file(
            "stats",
            r#"{"mips": 250.0, "instret": 1000, "cycles": 3000, "guest_seconds": 0.5,
                "host_seconds": 2.0, "harts": [
                  {"hart": 0, "instret": 600, "translated_blocks": 9, "interpreted_instret": 60},
                  {"hart": 1, "instret": 400, "translated_blocks": 7, "interpreted_instret": 45}]}"#,
        );
        let t = Timing {
            wall_s: 3.0,
            cpu_s: 2.5,
        };
        let h = hartscope_run(t, &stats).unwrap();
        assert_eq!((h.instret, h.interpreted, h.run_s), (1000, 105, 2.0));
        // (an unsampled run counts no samples)
        assert_eq!(h.samples, 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file holding `text` in a directory of this test's own (`name`):
    /// the directory, to remove, and the file.
    fn unit_file(name: &str, text: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("hs-bench-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("file");
        std::fs::write(&file, text).unwrap();
        (dir, file)
    }

    #[test]
    fn agent_status_needs_the_power_down() {
        let (dir, log) = unit_file(
            "console",
            "x\r\nhartscope-agent: workload exited with status 3\r\n",
        );
        assert_eq!(agent_status(&log), None, "no power-off yet");
        std::fs::write(
            &log,
            "hartscope-agent: workload exited with status 3\r\n[ 1.0] reboot: Power down\r\n",
        )
        .unwrap();
        assert_eq!(agent_status(&log), Some(3));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
