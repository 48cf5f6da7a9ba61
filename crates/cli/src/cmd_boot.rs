//! `hartscope boot`: boot a guest image (or QEMU-style explicit files) on
//! the simulated board, with an interactive console or a scripted workload.
//!
//! QEMU's own flags work too, also without the subcommand:
//! `hartscope -bios none -kernel prog.elf`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use hs_machine::hs_timing::{Atomic, TimingModel};
use hs_machine::reports::{chrome_trace_json, itrace_report, write_profile};
use hs_machine::{
    BootFile, BootImages, ConsoleInput, GuestSymbols, InputEvent, ItraceSpec, Machine,
    MachineConfig, ObserveOptions, Observing, SamplerConfig, StopReason, SymbolSources,
};
use hs_observe::Observations;

/// Firmware QEMU itself boots when no `-bios` is given.
const QEMU_DEFAULT_BIOS: &str = "/usr/share/qemu/opensbi-riscv64-generic-fw_dynamic.bin";
const DEFAULT_IMAGE: &str = "debian";
const DEFAULT_RAM_MIB: u64 = 512;
/// Ctrl-A, QEMU's console escape.
const ESCAPE: u8 = 0x01;

/// (serde: a snapshot keeps the command line that built its machine;
/// options added since read as their defaults.)
#[derive(Args, Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct BootArgs {
    /// Guest image to boot (see `hartscope guest build`); default `debian` unless -kernel is given.
    #[arg(long)]
    pub image: Option<String>,
    /// Firmware file, or `none` to run the kernel bare metal (QEMU: -bios).
    #[arg(long)]
    pub bios: Option<String>,
    /// Kernel Image or ELF file (QEMU: -kernel).
    #[arg(long)]
    pub kernel: Option<PathBuf>,
    /// Initial ramdisk (QEMU: -initrd).
    #[arg(long)]
    pub initrd: Option<PathBuf>,
    /// Kernel command line; with --image it is added to the image's own.
    #[arg(long, allow_hyphen_values = true)]
    pub append: Option<String>,
    /// Number of harts (QEMU: -smp N or -smp cpus=N).
    #[arg(long, value_parser = parse_smp, default_value = "1")]
    pub smp: usize,
    /// RAM size: 512, 512M, 2G (MiB when no unit, as QEMU); default 512M.
    #[arg(short = 'm', long = "memory", value_parser = parse_mem)]
    pub mem: Option<u64>,
    /// Accepted for QEMU compatibility: the console is always the terminal.
    #[arg(long)]
    pub nographic: bool,
    /// Run this script (or directory with run.sh) through the guest agent and exit with its status.
    #[arg(long)]
    pub workload: Option<PathBuf>,
    /// Stop once guest time reaches this many cycles (exit status 124). With
    /// --workload the default is 600 s of guest time, so an endless workload ends.
    #[arg(long)]
    pub max_cycles: Option<u64>,
    /// Write run statistics (cycles, instret, host seconds, MIPS, per hart) to this JSON file,
    /// with the counters of --stats-txt under "stats".
    #[arg(long)]
    pub stats_json: Option<PathBuf>,
    /// Write gem5-style counters (one block per phase, then the total): cycles, instret, CPI,
    /// traps by cause, interrupts by PLIC source and hart, IPIs, syscalls by number, context switches.
    #[arg(long)]
    pub stats_txt: Option<PathBuf>,
    /// Sample every hart every --sample-period cycles and write hot.md, folded.txt and
    /// flamegraph.svg (and, with --perf-script, perf.script) into this directory.
    #[arg(long)]
    pub profile: Option<PathBuf>,
    /// With --profile: also write perf.script, `perf script` text with a line per frame of
    /// every sample, for Perfetto, speedscope or stackcollapse-perf.pl (570 MB for the
    /// debian P87 boot, 1.6 GB on the in-order model: writing it took longer than the
    /// run). folded.txt holds the same stacks, counted. Without it, a perf.script already
    /// in the directory is removed, so that it cannot pass for this run's.
    #[arg(long, requires = "profile")]
    pub perf_script: bool,
    /// With --profile: no perf.script. The default since perf.script became opt-in
    /// (--perf-script); accepted so that earlier command lines still run.
    #[arg(long, requires = "profile", conflicts_with = "perf_script")]
    pub no_perf_script: bool,
    /// Cycles between two samples of one hart.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub sample_period: u64,
    /// Start sampling at the first phase marker with this label (default: from reset).
    #[arg(long)]
    pub profile_from: Option<String>,
    /// With --profile: write `annotate-NAME.txt` there, a `perf annotate` of kernel function
    /// NAME (its instructions as they stand in guest memory, the samples taken at each, and
    /// the source lines where the kernel has line tables). Repeatable.
    #[arg(long, value_name = "NAME")]
    pub annotate: Vec<String>,
    /// Instruction trace of a window: `syscall=NAME[,count=N][,limit=LINES]` (from the ecall to
    /// the return to user) or `phase=LABEL[,limit=LINES]` (from that phase marker to the next).
    #[arg(long)]
    pub itrace: Option<String>,
    /// Write the instruction trace here instead of to stdout after the run.
    #[arg(long)]
    pub itrace_out: Option<PathBuf>,
    /// Write a Chrome trace-event JSON timeline (one track per hart; opens in Perfetto).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Write the guest's SEND marker channels as files under this directory.
    #[arg(long)]
    pub channels_dir: Option<PathBuf>,
    /// Simulated core clock in MHz (a multiple of 10).
    #[arg(long, default_value_t = 1000)]
    pub mhz: u64,
    /// Longest slice one hart runs before the next gets a turn, in cycles.
    #[arg(long, default_value_t = 10_000)]
    pub quantum: u64,
    /// Machine description (TOML) choosing and configuring the timing model,
    /// e.g. machines/inorder.toml; default: the atomic model (one cycle per instruction).
    #[arg(long)]
    pub machine: Option<PathBuf>,
    /// A virtio-blk disk, QEMU-style (QEMU: -drive): `file=PATH,format=raw,if=virtio`
    /// [`,readonly=on`] [`,snapshot=off` writes the file; by default writes go to
    /// an in-memory copy-on-write overlay and the file is never changed]. Repeatable.
    #[arg(long)]
    pub drive: Vec<String>,
    /// Stop at the end of the slice in which the phase marker LABEL retires
    /// and write the whole machine to --snapshot-out (go on from it with --restore).
    #[arg(long, value_name = "LABEL", requires = "snapshot_out")]
    pub snapshot_at: Option<String>,
    /// Where --snapshot-at writes the snapshot.
    #[arg(long, value_name = "FILE", requires = "snapshot_at")]
    pub snapshot_out: Option<PathBuf>,
    /// With --snapshot-at: keep running after writing the snapshot (the run
    /// is the one it would have been without it), instead of stopping there.
    #[arg(long, requires = "snapshot_at")]
    pub continue_after_snapshot: bool,
    /// Go on from a snapshot, on the machine it was taken on (image, kernel command line,
    /// harts, memory, devices and clock come from it). --machine may name another timing
    /// model for the same board (its caches then start cold: fast-forward, then measure).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["image", "bios", "kernel", "initrd", "append", "mem", "workload", "drive"])]
    pub restore: Option<PathBuf>,
    /// With --restore: start the timing model's caches, TLBs and predictor empty even
    /// when the snapshot holds them.
    #[arg(long, requires = "restore")]
    pub cold_timing: bool,
    /// Differential check of the execution engines: run a second machine
    /// alike on the reference engine (every instruction decoded afresh, no
    /// block cache) in lockstep and stop at the first difference in steps,
    /// registers, CSRs, counts or console output, naming its pc and
    /// instruction (exit status 3). Slow: meant for tests and CI.
    #[arg(long, conflicts_with_all = ["restore", "snapshot_at", "profile", "trace", "itrace"])]
    pub engine_check: bool,
    /// Decoded instructions each hart's block cache holds before it is
    /// emptied and refilled (as QEMU's tb-size; default 1048576, taken
    /// between 1024 and 16777216). A host cache: the guest's output and
    /// every count are the same at any size; only host time and memory
    /// change (reported per hart as block_cache_bytes in --stats-json).
    #[arg(long, value_name = "OPS")]
    pub block_cache_ops: Option<usize>,
    /// Execution engine: `translated` (the default: blocks that ran
    /// --translate-after times run as x86-64 code, the rest interpreted;
    /// on the atomic and the single-issue in-order model, and on other
    /// hosts or models the same as `blocks`) or `blocks` (the block
    /// interpreter only). The guest's output and every count are the same
    /// on either.
    #[arg(long, value_name = "ENGINE", value_parser = ["translated", "blocks"])]
    pub engine: Option<String>,
    /// Runs of a block before the translating engine translates it (default
    /// 256, 1024 on the in-order model; taken between 1 and 65536; 1
    /// translates every block, for checks). A block at an address whose
    /// block was translated before (by any hart, its page unwritten since)
    /// is translated on its first run.
    #[arg(long, value_name = "RUNS")]
    pub translate_after: Option<u32>,
    /// Name each translated block in /tmp/perf-PID.map (hart and guest
    /// pc, as QEMU's -perfmap), so `perf record` on the host attributes
    /// translated code to guest addresses. A host aid: no count changes.
    #[arg(long)]
    pub perf_map: bool,
}

/// QEMU flags that take a value and their `boot` spelling.
const QEMU_VALUE_FLAGS: &[&str] = &["-bios", "-kernel", "-initrd", "-append", "-smp", "-drive"];
const QEMU_FLAGS: &[&str] = &["-nographic"];

/// QEMU options hartscope does not take: a run that asked for them would
/// not be the run the user meant, so they are refused by name.
const QEMU_UNSUPPORTED: &[&str] = &[
    "cpu",
    "device",
    "netdev",
    "nic",
    "serial",
    "monitor",
    "display",
    "chardev",
    "object",
    "accel",
    "icount",
    "rtc",
    "global",
    "fsdev",
    "virtfs",
    "usb",
    "vga",
    "gdb",
    "s",
    "S",
    "d",
    "D",
    "no-reboot",
    "no-shutdown",
    "snapshot",
    "loadvm",
    "hda",
    "hdb",
    "cdrom",
    "sd",
    "mtdblock",
    "boot",
    "name",
    "uuid",
    "k",
    "audio",
    "net",
    "machine",
    "M",
];

/// Turn QEMU-style single-dash flags into `boot` options, inserting the
/// `boot` subcommand when the command line starts with a QEMU flag.
/// `-machine virt` / `-M virt` (this is QEMU's virt board) are dropped;
/// another machine, a QEMU option hartscope does not take, or one of
/// hartscope's own options written with one dash (`-max-cycles`, which
/// clap would read as `-m ax-cycles`) is an error naming the option.
pub fn qemu_style_args(args: impl IntoIterator<Item = OsString>) -> Result<Vec<OsString>, String> {
    let mut it = args.into_iter();
    let mut out: Vec<OsString> = it.next().into_iter().collect();
    let rest: Vec<OsString> = it.collect();
    let first = rest.first().and_then(|a| a.to_str()).unwrap_or("");
    let starts_qemu = QEMU_VALUE_FLAGS.contains(&first)
        || QEMU_FLAGS.contains(&first)
        || first == "-m"
        || first == "-machine"
        || first == "-M";
    if !(starts_qemu || first == "boot") {
        out.extend(rest);
        return Ok(out);
    }
    if starts_qemu {
        out.push("boot".into());
    }
    let own: Vec<String> = boot_long_options();
    let mut i = 0;
    while i < rest.len() {
        let a = rest[i].to_str().unwrap_or("");
        if QEMU_VALUE_FLAGS.contains(&a) {
            out.push(format!("-{a}").into());
            if let Some(v) = rest.get(i + 1) {
                out.push(v.clone());
            }
            i += 2;
            continue;
        }
        if a == "-machine" || a == "-M" {
            let v = rest.get(i + 1).and_then(|v| v.to_str()).unwrap_or("");
            let board = v.split(',').next().unwrap_or("");
            if board != "virt" {
                return Err(format!(
                    "{a} {v}: hartscope is QEMU's `virt` board only (drop {a}, or give `{a} virt`)"
                ));
            }
            i += 2;
            continue;
        }
        if QEMU_FLAGS.contains(&a) {
            out.push(format!("-{a}").into());
            i += 1;
            continue;
        }
        if let Some(name) = a
            .strip_prefix('-')
            .filter(|n| !n.starts_with('-') && n.len() >= 2)
        {
            let bare = name.split('=').next().unwrap_or(name);
            if own.iter().any(|o| o == bare) {
                return Err(format!(
                    "`{a}`: hartscope's own options take two dashes (`--{name}`)"
                ));
            }
            if QEMU_UNSUPPORTED.contains(&bare) {
                return Err(format!(
                    "`{a}` is a QEMU option hartscope does not take (its QEMU-style options: {}, -m, -nographic, -machine virt; see `hartscope boot --help`)",
                    QEMU_VALUE_FLAGS.join(", ")
                ));
            }
        } else if QEMU_UNSUPPORTED.contains(&a.trim_start_matches('-')) && a.len() == 2 {
            return Err(format!(
                "`{a}` is a QEMU option hartscope does not take (see `hartscope boot --help`)"
            ));
        }
        out.push(rest[i].clone());
        i += 1;
    }
    Ok(out)
}

/// The long option names of `boot` (`max-cycles`, `stats-json`, ...).
fn boot_long_options() -> Vec<String> {
    use clap::CommandFactory;
    #[derive(clap::Parser)]
    struct Probe {
        #[command(flatten)]
        args: BootArgs,
    }
    Probe::command()
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect()
}

/// The board device a `-drive` option names: `driveN`, a `virtio-blk` with
/// the file, checked now (a missing or mis-sized file is an error before the run).
pub fn drive_device(n: usize, spec: &str) -> Result<hs_machine::hs_devices::DeviceConfig, String> {
    use hs_machine::hs_devices::{DeviceConfig, ParamValue};
    let err = |m: String| format!("-drive {spec}: {m}");
    let mut cfg = DeviceConfig::new(format!("drive{n}"), "virtio-blk");
    let mut file = None;
    for part in spec.split(',') {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| err(format!("`{part}` is not KEY=VALUE")))?;
        let on = |v: &str| match v {
            "on" | "true" | "yes" => Ok(true),
            "off" | "false" | "no" => Ok(false),
            _ => Err(err(format!("`{k}` is `{v}`, not on or off"))),
        };
        match k {
            "file" => file = Some(v.to_string()),
            "format" if v == "raw" => {}
            "format" => return Err(err(format!("format `{v}` is not supported (only raw)"))),
            "if" if v == "virtio" => {}
            "if" => return Err(err(format!("interface `{v}` is not supported (only virtio)"))),
            "media" if v == "disk" => {}
            "readonly" => cfg = cfg.with("read-only", ParamValue::Bool(on(v)?)),
            "snapshot" => cfg = cfg.with("write-through", ParamValue::Bool(!on(v)?)),
            "serial" => cfg = cfg.with("serial", ParamValue::Str(v.to_string())),
            _ => return Err(err(format!("`{k}={v}` is not supported (file, format=raw, if=virtio, readonly, snapshot, serial)"))),
        }
    }
    let file = file.ok_or_else(|| err("`file=PATH` is missing".into()))?;
    cfg = cfg.with("file", ParamValue::Str(file));
    hs_machine::hs_devices::resources::plug(&cfg).map_err(|e| err(e.to_string()))?;
    Ok(cfg)
}

fn parse_smp(s: &str) -> Result<usize, String> {
    let first = s.split(',').next().unwrap_or("");
    let n = first.strip_prefix("cpus=").unwrap_or(first);
    n.parse()
        .map_err(|_| format!("`{s}` is not a number of harts (e.g. 4 or cpus=4)"))
}

fn parse_mem(s: &str) -> Result<u64, String> {
    let v = s.strip_prefix("size=").unwrap_or(s);
    let v = v.trim_end_matches(['B', 'b']).trim_end_matches('i');
    let (num, unit) = match v.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => v.split_at(i),
        None => (v, "M"),
    };
    let shift = match unit.to_ascii_uppercase().as_str() {
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("`{s}` is not a memory size (e.g. 512, 512M, 2G)")),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a memory size (e.g. 512, 512M, 2G)"))?;
    n.checked_shl(shift)
        .filter(|b| b >> shift == n)
        .ok_or_else(|| format!("memory size `{s}` is too large"))
}

/// What to load, resolved from an image and/or explicit files.
#[derive(Clone)]
pub struct Resolved {
    images: BootImages,
    bootargs: String,
    /// Optional devices the machine description names (`[board.NAME]`).
    devices: Vec<hs_machine::hs_devices::DeviceConfig>,
    /// The description's `[ipi]` knob.
    ipi: hs_machine::hs_devices::IpiPolicy,
}

fn resolve(args: &BootArgs) -> Result<Resolved, String> {
    let image_name = args
        .image
        .clone()
        .or_else(|| args.kernel.is_none().then(|| DEFAULT_IMAGE.to_string()));
    let image = image_name
        .as_deref()
        .map(hs_guest::find)
        .transpose()
        .map_err(|e| e.to_string())?;
    if args.workload.is_some() && image.is_none() {
        return Err(
            "--workload needs a guest image (--image NAME): the image's agent runs it".into(),
        );
    }
    let read = |what, p: &Path| BootFile::read(what, p).map_err(|e| e.to_string());

    let firmware = match args.bios.as_deref() {
        Some("none") => None,
        Some(path) => Some(read("firmware", Path::new(path))?),
        None => match &image {
            Some(img) => Some(read("firmware", &img.firmware)?),
            None if Path::new(QEMU_DEFAULT_BIOS).is_file() => {
                Some(read("firmware", Path::new(QEMU_DEFAULT_BIOS))?)
            }
            None => {
                return Err(format!(
                "no firmware: {QEMU_DEFAULT_BIOS} is not installed; give -bios FILE or -bios none"
            ))
            }
        },
    };
    let kernel = match (&args.kernel, &image) {
        (Some(k), _) => Some(read("kernel", k)?),
        (None, Some(img)) => Some(read("kernel", &img.kernel)?),
        (None, None) => None,
    };
    let initrd = match (&args.initrd, &image, &args.workload) {
        (Some(_), _, Some(_)) => return Err("give either -initrd or --workload, not both".into()),
        (Some(p), _, None) => Some(read("initrd", p)?),
        (None, Some(img), Some(w)) => {
            let data = hs_guest::workload_initrd(img, w).map_err(|e| e.to_string())?;
            Some(BootFile::from_bytes(
                format!("{} + workload {}", img.initrd.display(), w.display()),
                data,
            ))
        }
        (None, Some(img), None) => Some(read("initrd", &img.initrd)?),
        (None, None, _) => None,
    };
    let mut bootargs = image
        .as_ref()
        .map(|i| i.default_append.clone())
        .unwrap_or_default();
    if let Some(extra) = &args.append {
        if !bootargs.is_empty() {
            bootargs.push(' ');
        }
        bootargs.push_str(extra);
    }
    Ok(Resolved {
        images: BootImages {
            firmware,
            kernel,
            initrd,
        },
        bootargs,
        devices: Vec::new(),
        ipi: Default::default(),
    })
}

/// Every output path is checked before the first instruction runs, so a
/// bad path cannot throw a finished run away: a file output must not be a
/// directory and its directory must exist; a directory output must not be
/// a file.
fn check_output_paths(args: &BootArgs) -> Result<(), String> {
    let files = [
        ("--stats-json", &args.stats_json),
        ("--stats-txt", &args.stats_txt),
        ("--trace", &args.trace),
        ("--itrace-out", &args.itrace_out),
    ];
    for (flag, path) in files {
        let Some(path) = path else { continue };
        if path.is_dir() {
            return Err(format!(
                "{flag}: `{}` is a directory (give a file to write)",
                path.display()
            ));
        }
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(dir) = parent {
            if !dir.is_dir() {
                return Err(format!(
                    "{flag}: the directory `{}` does not exist (nothing was run)",
                    dir.display()
                ));
            }
        }
    }
    let dirs = [
        ("--profile", &args.profile),
        ("--channels-dir", &args.channels_dir),
    ];
    for (flag, path) in dirs {
        if let Some(path) = path {
            if path.exists() && !path.is_dir() {
                return Err(format!(
                    "{flag}: `{}` is a file, not a directory",
                    path.display()
                ));
            }
        }
    }
    Ok(())
}

pub fn run(args: BootArgs) -> Result<i32, String> {
    check_output_paths(&args)?;
    if let Some(out) = &args.snapshot_out {
        let dir = out.parent().filter(|p| !p.as_os_str().is_empty());
        if out.is_dir() || dir.is_some_and(|d| !d.is_dir()) {
            return Err(format!(
                "--snapshot-out: `{}` is a directory or in a directory that does not exist (nothing was run)",
                out.display()
            ));
        }
    }
    let read_started = std::time::Instant::now();
    let (args, snap) = match args.restore.clone() {
        Some(path) => {
            if args.smp != 1 || args.mhz != 1000 || args.quantum != 10_000 {
                return Err("--restore: the harts, clock and quantum are the snapshot's; leave out --smp, --mhz and --quantum".into());
            }
            let (a, s) = crate::boot_snapshot::restored_args(args, &path)?;
            eprintln!(
                "hartscope: read and checked {} ({} sections, {} RAM pages) in {:.2} s",
                path.display(),
                s.sections.len(),
                s.pages.len(),
                read_started.elapsed().as_secs_f64()
            );
            (a, Some(s))
        }
        None => (args, None),
    };
    let snap = snap.as_ref();
    let mut r = resolve(&args)?;
    let model = match &args.machine {
        Some(path) => {
            r.devices = hs_machine::load_devices(path).map_err(|e| e.to_string())?;
            let desc = hs_timing::MachineDesc::load(path).map_err(|e| e.to_string())?;
            r.ipi = hs_machine::ipi_policy(desc.ipi);
            desc.model
        }
        None => hs_timing::ModelDesc::Atomic,
    };
    for (n, spec) in args.drive.iter().enumerate() {
        r.devices.push(drive_device(n, spec)?);
    }
    let model_id = crate::boot_snapshot::model_id(args.machine.as_deref())?;
    match model {
        hs_timing::ModelDesc::Atomic => boot(&args, r, |_| Atomic, |_| Atomic, snap, &model_id),
        hs_timing::ModelDesc::InOrder(cfg) => {
            let harts = hs_timing::InOrderFactory::new(&cfg);
            // The reference machine of --engine-check gets models of its
            // own: the harts of one factory share their L2.
            let reference = hs_timing::InOrderFactory::new(&cfg);
            boot(
                &args,
                r,
                |_| harts.build(),
                |_| reference.build(),
                snap,
                &model_id,
            )
        }
    }
}

/// Exit status of a run whose --engine-check found a divergence.
pub const ENGINE_CHECK_FAILED: i32 = 3;

/// What the run records beyond its summary.
struct Observed {
    options: ObserveOptions,
    itrace: Option<ItraceSpec>,
    /// Counters need the `Observing` wrapper; sampling alone does not.
    wrap: bool,
}

fn observed(args: &BootArgs) -> Result<Observed, String> {
    let itrace = args
        .itrace
        .as_deref()
        .map(ItraceSpec::parse)
        .transpose()
        .map_err(|e| e.to_string())?;
    let wrap = args.trace.is_some()
        || itrace.is_some()
        || args.stats_txt.is_some()
        || args.stats_json.is_some();
    let options = ObserveOptions {
        events: args.trace.is_some(),
        max_events: 0,
        itrace: itrace.clone(),
    };
    Ok(Observed {
        options,
        itrace,
        wrap,
    })
}

/// The files that name the guest's code: the image's, unless explicit
/// files replace its firmware or kernel.
fn symbol_sources(args: &BootArgs, machine_kernel: Option<(u64, u64)>) -> Option<SymbolSources> {
    let name = args
        .image
        .clone()
        .or_else(|| args.kernel.is_none().then(|| DEFAULT_IMAGE.to_string()))?;
    let img = hs_guest::find(&name).ok()?;
    let mut sources = hs_lab::run::symbol_sources(&img, machine_kernel);
    if args.bios.is_some() {
        sources.firmware_elf = None;
    }
    if args.kernel.is_some() {
        sources.kernel = None;
        sources.btf = None;
    }
    Some(sources)
}

/// Boot with `model(h)` as hart h's timing model (wrapped for observation
/// when counters, a timeline or a trace are asked for); with
/// --engine-check, `reference_model(h)` for the reference machine's (no
/// state may be shared between the two machines).
/// `restore`: the snapshot to go on from; `model_id` names the timing model
/// (see [`crate::boot_snapshot::model_id`]).
pub fn boot<M: TimingModel>(
    args: &BootArgs,
    r: Resolved,
    model: impl Fn(usize) -> M,
    reference_model: impl Fn(usize) -> M,
    restore: Option<&hs_snapshot::Snapshot>,
    model_id: &str,
) -> Result<i32, String> {
    let obs = observed(args)?;
    // the engine check compares console output as both machines capture it
    let reference_cfg = || MachineConfig {
        echo_console: false,
        capture_console: true,
        ..machine_config(args, r.clone())
    };
    let mut cfg = machine_config(args, r.clone());
    cfg.capture_console |= args.engine_check;
    if obs.wrap {
        let cfgs = (cfg, args.engine_check.then(reference_cfg));
        let models = (model, reference_model);
        // (only a machine built to trace looks for a trace per instruction)
        if obs.options.itrace.is_some() {
            boot_observed::<M, true>(args, &obs, cfgs, models, restore, model_id)
        } else {
            boot_observed::<M, false>(args, &obs, cfgs, models, restore, model_id)
        }
    } else {
        let mut machine = Machine::with_timing(cfg, model).map_err(|e| e.to_string())?;
        if let Some(s) = restore {
            crate::boot_snapshot::restore(&mut machine, s, args, model_id)?;
        }
        let reference = args
            .engine_check
            .then(|| Machine::with_timing(reference_cfg(), reference_model))
            .transpose()
            .map_err(|e| e.to_string())?;
        finish(args, &obs, machine, reference, model_id)
    }
}

/// [`boot`] with the models wrapped in [`Observing`] (`TRACE`: built to
/// trace instructions); the reference machine's config and model are the
/// pairs' second halves.
fn boot_observed<M: TimingModel, const TRACE: bool>(
    args: &BootArgs,
    obs: &Observed,
    (cfg, reference_cfg): (MachineConfig, Option<MachineConfig>),
    (model, reference_model): (impl Fn(usize) -> M, impl Fn(usize) -> M),
    restore: Option<&hs_snapshot::Snapshot>,
    model_id: &str,
) -> Result<i32, String> {
    let mut machine = Machine::<Observing<M, TRACE>>::with_observing(cfg, &obs.options, model)
        .map_err(|e| e.to_string())?;
    if let Some(s) = restore {
        crate::boot_snapshot::restore(&mut machine, s, args, model_id)?;
    }
    let reference = reference_cfg
        .map(|c| Machine::<Observing<M, TRACE>>::with_observing(c, &obs.options, reference_model))
        .transpose()
        .map_err(|e| e.to_string())?;
    finish(args, obs, machine, reference, model_id)
}

fn machine_config(args: &BootArgs, r: Resolved) -> MachineConfig {
    MachineConfig {
        harts: args.smp,
        ram_bytes: args.mem.unwrap_or(DEFAULT_RAM_MIB << 20),
        hz: args.mhz.saturating_mul(1_000_000),
        quantum: args.quantum,
        images: r.images,
        bootargs: r.bootargs,
        devices: r.devices,
        ipi: r.ipi,
        max_cycles: args.max_cycles.or_else(|| {
            args.workload.is_some().then(|| {
                DEFAULT_WORKLOAD_GUEST_SECONDS.saturating_mul(args.mhz.saturating_mul(1_000_000))
            })
        }),
        echo_console: true,
        capture_console: false,
        ..MachineConfig::default()
    }
}

/// `reference`: with --engine-check, the machine alike that runs the
/// reference engine in lockstep with `machine`.
fn finish<T: TimingModel>(
    args: &BootArgs,
    obs: &Observed,
    mut machine: Machine<T>,
    mut reference: Option<Machine<T>>,
    model_id: &str,
) -> Result<i32, String> {
    if let Some(label) = &args.snapshot_at {
        machine.set_snapshot_at(label);
    }
    if let Some(ops) = args.block_cache_ops {
        if !(hs_machine::hs_core::BLOCK_CACHE_OPS_MIN..=hs_machine::hs_core::BLOCK_CACHE_OPS_MAX)
            .contains(&ops)
        {
            return Err(format!(
                "--block-cache-ops {ops}: a block cache holds between {} and {} instructions",
                hs_machine::hs_core::BLOCK_CACHE_OPS_MIN,
                hs_machine::hs_core::BLOCK_CACHE_OPS_MAX
            ));
        }
        for m in std::iter::once(&mut machine).chain(reference.as_mut()) {
            for h in m.harts_mut() {
                h.set_block_cache_ops(ops);
            }
        }
    }
    if let Some(runs) = args.translate_after {
        if !(1..=65_536).contains(&runs) {
            return Err(format!(
                "--translate-after {runs}: a block is translated after between 1 and 65536 runs"
            ));
        }
    }
    for m in std::iter::once(&mut machine).chain(reference.as_mut()) {
        for h in m.harts_mut() {
            if args.engine.as_deref() == Some("blocks") {
                h.set_engine(hs_machine::hs_core::Engine::Blocks);
            }
            if let Some(runs) = args.translate_after {
                h.set_translate_after(runs);
            }
        }
    }
    if args.perf_map {
        for (i, h) in machine.harts_mut().iter_mut().enumerate() {
            h.set_perf_map(&format!("hart{i}@")).map_err(|e| {
                format!(
                    "--perf-map: cannot open /tmp/perf-{}.map: {e}",
                    std::process::id()
                )
            })?;
        }
    }
    // (the kernel's symbols are read on another thread during the run:
    // nothing before its end needs them but --annotate's check)
    let mut pending = if args.profile.is_some() || obs.itrace.is_some() || args.trace.is_some() {
        let sources = symbol_sources(args, machine.kernel_extent());
        match sources.map(|s| GuestSymbols::load_pending(&s)).transpose() {
            Ok(s) => s,
            Err(e) => return Err(format!("symbols: {e}")),
        }
    } else {
        None
    };
    // (what the run needs of them, whether or not --annotate finishes them now)
    let identifier = pending.as_ref().map(|p| p.identifier());
    let task_layout = pending.as_ref().and_then(|p| p.task_layout());
    let mut symbols = None;
    if !args.annotate.is_empty() {
        if args.profile.is_none() {
            return Err("--annotate needs --profile DIR (the samples it counts, and where annotate-NAME.txt goes)".into());
        }
        let Some(p) = pending.take() else {
            return Err(
                "--annotate: this run has no guest symbols (give --image or a kernel ELF)".into(),
            );
        };
        let s = symbols.insert(p.finish().map_err(|e| format!("symbols: {e}"))?);
        for name in &args.annotate {
            hs_machine::reports::check_annotatable(s, name)?;
        }
    }
    if args.profile.is_some() {
        let ident = identifier.unwrap_or_default();
        let cfg = SamplerConfig {
            period: args.sample_period,
            from_phase: args.profile_from.clone(),
            ..SamplerConfig::default()
        };
        machine.enable_sampling(cfg, ident);
    }
    // Tasks are named for samples and for the timeline's task tracks.
    if let Some(layout) = task_layout {
        if args.profile.is_some() || args.trace.is_some() {
            machine.enable_task_identity(layout);
        }
    }

    // Ctrl-C ends the run at the next slice with its outputs written (a
    // second Ctrl-C kills at once: the handler is reset after the first).
    machine.set_interrupt_flag(crate::sigint::install());
    // A progress line for a workload run on a terminal (quiet when stderr
    // goes to a file or pipe; an interactive session has its own screen).
    // SAFETY: isatty only inspects the descriptor.
    if args.workload.is_some() && unsafe { libc::isatty(2) } == 1 {
        machine.set_progress(Box::new(|p| {
            let mips = if p.host_seconds > 0.0 {
                p.instret as f64 / p.host_seconds / 1e6
            } else {
                0.0
            };
            eprint!(
                "\r\x1b[Khartscope: {:.3} s guest, phase `{}`, {:.0} MIPS",
                p.guest_seconds,
                p.phase.as_deref().unwrap_or(hs_machine::BOOT_PHASE),
                mips
            );
        }));
    }
    let mut run = |machine: &mut Machine<T>| {
        if let Some(r) = reference.as_mut() {
            // no console input: both machines must see the same
            return match hs_machine::lockstep(machine, r) {
                Ok(stop) => {
                    eprintln!("\nhartscope: engine check: the translating engine and the reference agreed to the end");
                    Ok(stop)
                }
                Err(d) => Err(d),
            };
        }
        Ok(if args.workload.is_some() {
            machine.run()
        } else {
            let _terminal = RawTerminal::enter();
            machine.set_console_input(Box::new(StdinInput::new()));
            machine.run()
        })
    };
    let mut stop = match run(&mut machine) {
        Ok(s) => s,
        Err(d) => {
            eprintln!("\nhartscope: engine check: {d}");
            return Ok(ENGINE_CHECK_FAILED);
        }
    };
    // (before anything is written: a kernel symbol file that does not
    // parse leaves no outputs, as when it was read before the run)
    let mut symbols = match pending {
        Some(p) => Some(p.finish().map_err(|e| format!("symbols: {e}"))?),
        None => symbols,
    };
    if stop == StopReason::SnapshotPoint {
        crate::boot_snapshot::write(&machine, args, model_id)?;
        if args.continue_after_snapshot {
            stop = run(&mut machine).map_err(|d| d.to_string())?;
        }
    }
    let summary = machine.summary();
    if let Some(dir) = &args.channels_dir {
        machine.write_channels(dir).map_err(|e| e.to_string())?;
    }
    eprintln!(
        "\nhartscope: {stop} after {} cycles ({:.6} s guest), {} instructions in {:.2} s host ({:.1} MIPS)",
        summary.cycles, summary.guest_seconds, summary.instret, summary.host_seconds, summary.mips
    );

    if let Some(s) = symbols.as_mut() {
        let modules = machine
            .markers()
            .channels
            .get("modules")
            .map(|c| c.data.clone());
        s.apply_run_modules(modules.as_deref())
            .map_err(|e| format!("symbols: {e}"))?;
        s.add_space_marks(machine.space_marks());
    }
    let record = machine.take_observations(symbols.as_ref());
    if !record
        .phases
        .iter()
        .all(|p| p.label == hs_machine::BOOT_PHASE)
    {
        eprintln!(
            "\n{}",
            hs_observe::export::phase_table(
                &record.phases,
                record.phases.last().map_or(0, |p| p.end_cycle)
            )
        );
        if obs.wrap {
            eprint!("{}", syscall_lines(&record));
        }
    }
    write_outputs(args, obs, &record, symbols.as_ref(), &summary)?;
    if let Some(label) = &args.profile_from {
        // The sampler waited for this label; if it never came the profile
        // is empty, which must not pass for a measurement.
        if !record.phases.iter().any(|p| &p.label == label) {
            let seen: Vec<&str> = record.phases.iter().map(|p| p.label.as_str()).collect();
            return Err(format!(
                "--profile-from: the run never reached phase `{label}` (phases seen: {}), so the profile has no samples; the other outputs were written",
                seen.join(", ")
            ));
        }
    }
    if let (Some(dir), Some(s)) = (&args.profile, symbols.as_ref()) {
        for name in &args.annotate {
            let text =
                hs_machine::reports::annotate_kernel_function(&record, s, machine.ram(), name)?;
            let safe: String = name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            let path = dir.join(format!("annotate-{safe}.txt"));
            write_atomically(&path, text.as_bytes())?;
            eprintln!(
                "hartscope: annotation of {name} written to {}",
                path.display()
            );
        }
    }
    if machine.cycle_mismatches() > 0 && obs.itrace.is_some() {
        eprintln!("hartscope: note: the trace's cycle accounting missed {} run(s); per-instruction cycles may not add up", machine.cycle_mismatches());
    }

    if stop == StopReason::GuestPanic {
        // Outputs above are written; say why the run ended, with the
        // console's last lines, and exit with the panic's own code.
        let lines = machine.console_last_lines();
        let last = lines[lines.len().saturating_sub(8)..].join("\n  ");
        eprintln!(
            "hartscope: the guest kernel panicked: {}\n  (the console's last lines:)\n  {last}",
            machine.guest_panic().unwrap_or("Kernel panic")
        );
        return Ok(EXIT_GUEST_PANIC);
    }
    if stop == StopReason::Interrupted {
        eprintln!(
            "hartscope: interrupted (Ctrl-C) after {} cycles ({:.3} s of guest time); the statistics, profile and trace asked for were written up to there",
            machine.now(),
            machine.now() as f64 / (args.mhz.max(1) as f64 * 1e6)
        );
        return Ok(EXIT_INTERRUPTED);
    }
    if stop == StopReason::CycleLimit {
        // The same status with or without a workload (as `timeout` exits).
        let cycles = machine.now();
        let default = args.max_cycles.is_none() && args.workload.is_some();
        eprintln!(
            "hartscope: the run reached its cycle limit, {cycles} cycles ({:.3} s of guest time){}",
            cycles as f64 / (args.mhz.max(1) as f64 * 1e6),
            if default {
                format!(", before the workload finished: the default limit for --workload is {DEFAULT_WORKLOAD_GUEST_SECONDS} s of guest time; give --max-cycles N to change it")
            } else if args.workload.is_some() {
                " (--max-cycles), before the workload finished".to_string()
            } else {
                " (--max-cycles)".to_string()
            }
        );
        return Ok(EXIT_CYCLE_LIMIT);
    }
    if let (StopReason::SnapshotPoint, Some(label)) = (stop, args.snapshot_at.as_ref()) {
        if args.snapshot_out.is_some() {
            return Ok(0);
        }
        return Err(format!(
            "stopped at phase `{label}` with nowhere to write the snapshot"
        ));
    }
    if args.workload.is_some() {
        return match machine.markers().exit_status {
            Some(status) => Ok((status & 0xff) as i32),
            None => Err(format!(
                "the guest stopped ({stop}) without reporting the workload's exit status"
            )),
        };
    }
    match stop {
        StopReason::PowerOff | StopReason::UserQuit => Ok(0),
        StopReason::HtifExit(code) => Ok((code & 0xff) as i32),
        StopReason::Fail(code) => Err(format!("the guest reported failure code {code}")),
        StopReason::CycleLimit => Ok(EXIT_CYCLE_LIMIT),
        other => Err(format!("the machine stopped: {other}")),
    }
}

/// Exit status of `boot` when the guest kernel panicked.
pub const EXIT_GUEST_PANIC: i32 = 3;
/// Exit status of `boot` when the user interrupted it (128 + SIGINT, as a shell reports).
pub const EXIT_INTERRUPTED: i32 = 130;
/// Exit status of `boot` when the run reached its cycle limit (as `timeout`).
pub const EXIT_CYCLE_LIMIT: i32 = 124;
/// Guest seconds a `boot --workload` may run without `--max-cycles`.
pub const DEFAULT_WORKLOAD_GUEST_SECONDS: u64 = 600;

/// Per phase: system calls made and cycles per call (for `nullsys`, the
/// cost of one `getppid`).
fn syscall_lines(record: &Observations) -> String {
    let mut out = String::new();
    for (p, b) in record.phases.iter().zip(&record.phase_stats) {
        let calls = b
            .get("system.syscalls")
            .map_or(0, |s| s.value.as_f64() as u64);
        if calls == 0 {
            continue;
        }
        let top = b
            .with_prefix("system.syscalls.")
            .max_by(|a, b| a.1.value.as_f64().total_cmp(&b.1.value.as_f64()))
            .map(|(name, s)| (name.to_string(), s.value.as_f64() as u64));
        let per = p.cycles() as f64 / calls as f64;
        let name = top.as_ref().map(|t| t.0.clone()).unwrap_or_default();
        let n = top.as_ref().map_or(0, |t| t.1);
        let inside = b
            .get(&format!("system.syscallMeanCycles.{name}"))
            .map(|s| s.value.as_f64());
        let line = match inside {
            Some(k) if n * 100 >= calls * 99 => format!(
                "phase {} ({}): {n} {name} calls ({calls} system calls in all): {:.1} cycles per {name} ({} phase cycles / {n}); {k:.1} cycles from ecall to return to user\n",
                p.index,
                p.label,
                p.cycles() as f64 / n as f64,
                p.cycles()
            ),
            _ => format!("phase {} ({}): {calls} system calls, {per:.1} cycles per call\n", p.index, p.label),
        };
        out.push_str(&line);
    }
    out
}

/// Everything the options asked to be written.
fn write_outputs(
    args: &BootArgs,
    obs: &Observed,
    record: &Observations,
    symbols: Option<&GuestSymbols>,
    summary: &hs_machine::machine::RunSummary,
) -> Result<(), String> {
    if let Some(path) = &args.stats_json {
        let mut json = serde_json::to_value(summary)
            .map_err(|e| format!("cannot encode the run summary: {e}"))?;
        if let Some(map) = json.as_object_mut() {
            let stats = serde_json::json!({ "phases": record.phase_stats, "total": record.total });
            map.insert("stats".into(), stats);
        }
        let text = serde_json::to_string_pretty(&json)
            .map_err(|e| format!("cannot encode the run summary: {e}"))?;
        write_atomically(path, text.as_bytes())?;
    }
    if let Some(path) = &args.stats_txt {
        write_atomically(
            path,
            hs_observe::export::stats_txt(&record.phase_stats, &record.total).as_bytes(),
        )?;
    }
    if let Some(path) = &args.trace {
        let json = chrome_trace_json(record).map_err(|e| e.to_string())?;
        write_atomically(path, json.as_bytes())?;
    }
    if let Some(dir) = &args.profile {
        let empty;
        let syms = match symbols {
            Some(s) => s,
            None => {
                empty = GuestSymbols::load(&SymbolSources::default()).map_err(|e| e.to_string())?;
                &empty
            }
        };
        // The window in the title, in the studies' words (the sampler
        // starts at --profile-from's marker and runs to the end).
        let window = match &args.profile_from {
            Some(label) => format!("from phase `{label}` to the end"),
            None => "the whole run".to_string(),
        };
        let image = args.image.as_deref().unwrap_or("hartscope run");
        let title = format!("{image} — {window}");
        write_profile(dir, record, syms, &title, args.perf_script).map_err(|e| e.to_string())?;
        eprintln!(
            "hartscope: profile of {} samples written to {}",
            record.samples.len(),
            dir.display()
        );
    }
    if let Some(spec) = &obs.itrace {
        let text = itrace_report(record, spec);
        match &args.itrace_out {
            Some(path) => write_atomically(path, text.as_bytes())?,
            None => print!("{text}"),
        }
    }
    Ok(())
}

/// Write `path` through a temporary file and a rename, so readers never see half a file.
pub(crate) fn write_atomically(path: &Path, data: &[u8]) -> Result<(), String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "stats".into());
    let tmp = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    std::fs::write(&tmp, data)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write {}: {e}", path.display())
        })
}

/// Puts the controlling terminal in raw input mode (no line editing, no
/// echo, no signals: Ctrl-C goes to the guest) and restores it on drop.
/// Output processing is kept so the guest's `\n` still starts a new line.
struct RawTerminal {
    saved: Option<libc::termios>,
}

impl RawTerminal {
    fn enter() -> Self {
        // SAFETY: plain termios calls on fd 0 with a zeroed struct.
        unsafe {
            if libc::isatty(0) != 1 {
                return Self { saved: None };
            }
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut t) != 0 {
                return Self { saved: None };
            }
            let saved = t;
            t.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG | libc::IEXTEN);
            t.c_iflag &= !(libc::IXON | libc::ICRNL | libc::BRKINT | libc::INPCK | libc::ISTRIP);
            t.c_cc[libc::VMIN] = 1;
            t.c_cc[libc::VTIME] = 0;
            libc::tcsetattr(0, libc::TCSANOW, &t);
            Self { saved: Some(saved) }
        }
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        if let Some(t) = self.saved {
            // SAFETY: restores the attributes read in enter().
            unsafe { libc::tcsetattr(0, libc::TCSANOW, &t) };
        }
    }
}

/// Console input from stdin, with QEMU's Ctrl-A escapes: Ctrl-A x quits,
/// Ctrl-A Ctrl-A sends one Ctrl-A.
struct StdinInput {
    escape: bool,
    eof: bool,
}

impl StdinInput {
    fn new() -> Self {
        Self {
            escape: false,
            eof: false,
        }
    }

    fn filter(&mut self, raw: &[u8]) -> InputEvent {
        let mut out = Vec::with_capacity(raw.len());
        for &b in raw {
            if self.escape {
                self.escape = false;
                match b {
                    b'x' | b'X' => return InputEvent::Quit,
                    ESCAPE => out.push(ESCAPE),
                    _ => {}
                }
            } else if b == ESCAPE {
                self.escape = true;
            } else {
                out.push(b);
            }
        }
        if out.is_empty() {
            InputEvent::Nothing
        } else {
            InputEvent::Bytes(out)
        }
    }
}

impl ConsoleInput for StdinInput {
    fn poll(&mut self, wait: Option<Duration>) -> InputEvent {
        if self.eof {
            if let Some(w) = wait {
                std::thread::sleep(w);
            }
            return InputEvent::Nothing;
        }
        let timeout = wait.map_or(0, |w| w.as_millis().min(i32::MAX as u128) as i32);
        let mut fds = libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut fds, 1, timeout) };
        if ready <= 0 || fds.revents & (libc::POLLIN | libc::POLLHUP) == 0 {
            return InputEvent::Nothing;
        }
        let mut buf = [0u8; 256];
        // SAFETY: reads into a stack buffer of the given length.
        let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            self.eof = true;
            return InputEvent::Nothing;
        }
        self.filter(&buf[..n as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn qemu_flags_become_boot_options() {
        assert_eq!(
            qemu_style_args(os(&[
                "hartscope",
                "-bios",
                "none",
                "-kernel",
                "p.elf",
                "-smp",
                "2",
                "-m",
                "64M",
                "-nographic"
            ]))
            .unwrap(),
            os(&[
                "hartscope",
                "boot",
                "--bios",
                "none",
                "--kernel",
                "p.elf",
                "--smp",
                "2",
                "-m",
                "64M",
                "--nographic"
            ])
        );
        assert_eq!(
            qemu_style_args(os(&[
                "hartscope",
                "boot",
                "-append",
                "-kernel",
                "-initrd",
                "rd"
            ]))
            .unwrap(),
            os(&["hartscope", "boot", "--append", "-kernel", "--initrd", "rd"]),
            "a flag's value is never rewritten"
        );
        assert_eq!(
            qemu_style_args(os(&["hartscope", "guest", "build"])).unwrap(),
            os(&["hartscope", "guest", "build"])
        );
        assert_eq!(
            qemu_style_args(os(&[
                "hartscope",
                "-kernel",
                "k",
                "-drive",
                "file=d.img,format=raw,if=virtio"
            ]))
            .unwrap(),
            os(&[
                "hartscope",
                "boot",
                "--kernel",
                "k",
                "--drive",
                "file=d.img,format=raw,if=virtio"
            ])
        );
        // QEMU's habits: -machine virt / -M virt are this board; anything
        // else, and hartscope's own options with one dash, are named errors.
        assert_eq!(
            qemu_style_args(os(&[
                "hartscope",
                "-machine",
                "virt",
                "-kernel",
                "k",
                "-M",
                "virt,aia=none"
            ]))
            .unwrap(),
            os(&["hartscope", "boot", "--kernel", "k"])
        );
        let err = |v: &[&str]| qemu_style_args(os(v)).unwrap_err();
        assert_eq!(
            err(&["hartscope", "-M", "sifive_u", "-kernel", "k"]),
            "-M sifive_u: hartscope is QEMU's `virt` board only (drop -M, or give `-M virt`)"
        );
        assert_eq!(
            err(&["hartscope", "boot", "-max-cycles", "5"]),
            "`-max-cycles`: hartscope's own options take two dashes (`--max-cycles`)"
        );
        assert!(
            err(&["hartscope", "-kernel", "k", "-device", "virtio-net-device"])
                .starts_with("`-device` is a QEMU option hartscope does not take")
        );
        assert!(err(&["hartscope", "-kernel", "k", "-s"]).starts_with("`-s` is a QEMU option"));
        // Values are never read as options.
        assert_eq!(
            qemu_style_args(os(&["hartscope", "boot", "-append", "-machine"])).unwrap(),
            os(&["hartscope", "boot", "--append", "-machine"])
        );
    }

    #[test]
    fn drives_as_qemu_spells_them() {
        use hs_machine::hs_devices::ParamValue;
        let img = std::env::temp_dir().join(format!("hs-drive-{}.img", std::process::id()));
        std::fs::write(&img, vec![0u8; 4096]).unwrap();
        let spec = format!("file={},format=raw,if=virtio,readonly=on", img.display());
        let d = drive_device(1, &spec).unwrap();
        assert_eq!((d.name.as_str(), d.kind.as_str()), ("drive1", "virtio-blk"));
        assert_eq!(d.params.get("read-only"), Some(&ParamValue::Bool(true)));
        let d = drive_device(0, &format!("file={},snapshot=off", img.display())).unwrap();
        assert_eq!(d.params.get("write-through"), Some(&ParamValue::Bool(true)));
        assert_eq!(
            drive_device(0, "format=raw").unwrap_err(),
            "-drive format=raw: `file=PATH` is missing"
        );
        let e = drive_device(0, &format!("file={},format=qcow2", img.display())).unwrap_err();
        assert!(
            e.ends_with("format `qcow2` is not supported (only raw)"),
            "{e}"
        );
        let e = drive_device(0, &format!("file={},if=scsi", img.display())).unwrap_err();
        assert!(
            e.ends_with("interface `scsi` is not supported (only virtio)"),
            "{e}"
        );
        let e = drive_device(0, "file=/nonexistent/disk.img").unwrap_err();
        assert!(e.starts_with("-drive file=/nonexistent/disk.img: key `file`: cannot open the disk image `/nonexistent/disk.img`"), "{e}");
        std::fs::write(&img, vec![0u8; 1000]).unwrap();
        let e = drive_device(0, &format!("file={}", img.display())).unwrap_err();
        assert!(
            e.ends_with("is 1000 bytes, not a positive whole number of 512-byte sectors"),
            "{e}"
        );
        std::fs::remove_file(&img).unwrap();
    }

    #[test]
    fn sizes_and_counts_as_qemu_spells_them() {
        assert_eq!(parse_mem("512"), Ok(512 << 20));
        assert_eq!(parse_mem("512M"), Ok(512 << 20));
        assert_eq!(parse_mem("2G"), Ok(2 << 30));
        assert_eq!(parse_mem("size=1GiB"), Ok(1 << 30));
        assert_eq!(parse_mem("64k"), Ok(64 << 10));
        assert!(parse_mem("lots").is_err());
        assert!(parse_mem("99999999999T").is_err());
        assert_eq!(parse_smp("4"), Ok(4));
        assert_eq!(parse_smp("cpus=2,sockets=1"), Ok(2));
        assert!(parse_smp("many").is_err());
    }

    #[test]
    fn ctrl_a_escapes() {
        let mut i = StdinInput::new();
        assert!(matches!(i.filter(b"ls\r"), InputEvent::Bytes(b) if b == b"ls\r"));
        assert!(matches!(i.filter(&[ESCAPE]), InputEvent::Nothing));
        assert!(matches!(i.filter(&[ESCAPE]), InputEvent::Bytes(b) if b == [ESCAPE]));
        assert!(matches!(i.filter(&[b'a', ESCAPE, b'x']), InputEvent::Quit));
    }

    #[test]
    fn stats_file_is_replaced_whole() {
        let dir = std::env::temp_dir().join(format!("hs-boot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("stats.json");
        write_atomically(&p, b"{\"a\":1}").unwrap();
        write_atomically(&p, b"{\"b\":2}").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{\"b\":2}");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no temporary left behind"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(write_atomically(&dir.join("missing/x.json"), b"")
            .unwrap_err()
            .starts_with("cannot write "));
    }
}
