//! `hartscope validate --suite DIR`: hold a machine description against real
//! hardware. DIR is a checkout of github.com/darchr/riscv-validation (never
//! copied into this repository): its `microbench-vertical` benchmarks are
//! built with the suite's own Makefile and the cross compiler, run one after
//! another as Linux processes in one boot, each counted by `hsperfstat`
//! (guest/validate/hsperfstat.c) the way `perf stat` counted it on the
//! HiFive Unmatched, and compared with the board's and gem5's figures from
//! the suite's own tables (hs_lab::validate writes the report).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use hs_lab::validate;

use crate::cmd_boot::write_atomically;

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// A checkout of https://github.com/darchr/riscv-validation (or a suite in its layout).
    #[arg(long)]
    pub suite: PathBuf,
    /// Machine description to validate.
    #[arg(long, default_value = "machines/u74.toml")]
    pub machine: PathBuf,
    /// Guest image the benchmarks run on.
    #[arg(long, default_value = "debian")]
    pub image: String,
    /// Where report.md, report.html, results.csv and console.txt go.
    #[arg(long, default_value = "studies/results/u74-validation")]
    pub out: PathBuf,
    /// Only these benchmarks (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Cross compiler (the suite's Makefile gets it as CC_RISCV).
    #[arg(long, default_value = "riscv64-linux-gnu-gcc")]
    pub cc: String,
    /// Simulated core clock in MHz (the Unmatched runs its U74s at 1200).
    #[arg(long, default_value_t = 1200)]
    pub mhz: u32,
}

/// The suite's tables, relative to its root.
const BOARD: &str = "gem5_Workshop_ISCA2023/csvs/perf_VRG_microbenchmarks.csv";
const GEM5_TUNED: &str = "gem5_Workshop_ISCA2023/csvs/gem5_new_config_VRG_microbenchmarks.csv";
const GEM5_ORIGINAL: &str =
    "gem5_Workshop_ISCA2023/csvs/gem5_original_config_VRG_microbenchmarks.csv";
const BENCHES: &str = "microbench-vertical";
/// A benchmark whose build here executes this much more or less than the
/// board's binary did is a different program: reported apart.
const SAME_PROGRAM: f64 = 0.25;

/// A temporary directory removed when dropped.
struct Scratch(PathBuf);
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run_tool(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: cannot start {:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr).to_string()
            + &String::from_utf8_lossy(&out.stdout);
        return Err(format!(
            "{what} failed ({}):\n{}",
            out.status,
            last_lines(&text, 6)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).to_string())
}

/// The last `n` lines of `text`, for error messages.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The suite's commit, as `git` sees the checkout.
fn suite_commit(suite: &Path) -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(suite)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    // a directory inside some other repository (a test suite here) has no commit of its own
    let top = git(&["rev-parse", "--show-toplevel"]).map(PathBuf::from);
    let own = match (
        top.and_then(|t| t.canonicalize().ok()),
        suite.canonicalize().ok(),
    ) {
        (Some(t), Some(s)) => t == s,
        _ => false,
    };
    if !own {
        return "unknown (not a git checkout)".into();
    }
    match git(&["rev-parse", "HEAD"]) {
        Some(c) => match git(&["status", "--porcelain"]) {
            Some(s) if !s.is_empty() => format!("{c} (with local changes)"),
            _ => c,
        },
        None => "unknown (not a git checkout)".into(),
    }
}

pub fn run(args: ValidateArgs) -> Result<i32, String> {
    let suite = &args.suite;
    if !suite.join(BENCHES).join("Makefile").is_file() {
        return Err(format!(
            "--suite {}: not a riscv-validation checkout ({BENCHES}/Makefile is missing)",
            suite.display()
        ));
    }
    let table = |rel: &str| {
        let p = suite.join(rel);
        if !p.is_file() {
            return Err(format!("--suite {}: {rel} is missing", suite.display()));
        }
        validate::read_table(&p)
    };
    let board = table(BOARD)?;
    let gem5_tuned = table(GEM5_TUNED)?;
    let gem5_original = table(GEM5_ORIGINAL)?;
    let desc = hs_timing::MachineDesc::load(&args.machine).map_err(|e| e.to_string())?;
    let image = hs_guest::find(&args.image).map_err(|e| e.to_string())?;
    run_tool(Command::new(&args.cc).arg("--version"), "the cross compiler").map_err(|_| {
        format!(
            "--cc: the cross compiler `{}` cannot run (on Debian: apt-get install gcc-riscv64-linux-gnu)",
            args.cc
        )
    })?;
    let commit = suite_commit(suite);

    let scratch =
        Scratch(std::env::temp_dir().join(format!("hartscope-validate-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&scratch.0);
    std::fs::create_dir_all(&scratch.0)
        .map_err(|e| format!("cannot create {}: {e}", scratch.0.display()))?;
    let build = scratch.0.join("suite");
    run_tool(
        Command::new("cp")
            .arg("-a")
            .arg(suite.join(BENCHES))
            .arg(&build),
        "copying the suite",
    )?;
    eprintln!(
        "validate: building {BENCHES} of {} ({commit}) with {}",
        suite.display(),
        args.cc
    );
    run_tool(
        Command::new("make")
            .arg("-C")
            .arg(&build)
            .arg("RISCV")
            .arg(format!("CC_RISCV={}", args.cc))
            .arg("-j2"),
        "building the suite (its own Makefile, target RISCV)",
    )?;
    let mut names: Vec<String> = std::fs::read_dir(&build)
        .map_err(|e| format!("cannot list {}: {e}", build.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("bench.RISCV").is_file())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(format!(
            "--suite {}: the build produced no bench.RISCV",
            suite.display()
        ));
    }
    if !args.only.is_empty() {
        if let Some(bad) = args.only.iter().find(|n| !names.contains(n)) {
            return Err(format!(
                "--only: `{bad}` is not a benchmark of the suite ({})",
                names.join(", ")
            ));
        }
        names.retain(|n| args.only.contains(n));
    }

    // The workload: hsperfstat, the benchmarks (stripped: symbols are never
    // loaded, so the counts are the same) and a script running each in turn.
    let wl = scratch.0.join("workload");
    std::fs::create_dir_all(wl.join("bench"))
        .map_err(|e| format!("cannot create {}: {e}", wl.display()))?;
    let guest_dir = hs_guest::Builder::from_env().guest_dir;
    run_tool(
        Command::new(&args.cc)
            .args(["-O2", "-static", "-o"])
            .arg(wl.join("hsperfstat"))
            .arg("-I")
            .arg(guest_dir.join("hsmark"))
            .arg(guest_dir.join("validate/hsperfstat.c")),
        "building hsperfstat",
    )?;
    let strip = args.cc.strip_suffix("gcc").map(|p| format!("{p}strip"));
    let mut script = String::from("cd /workload\n");
    for n in &names {
        let from = build.join(n).join("bench.RISCV");
        let to = wl.join("bench").join(n);
        let stripped = strip.as_ref().is_some_and(|s| {
            Command::new(s)
                .arg("-o")
                .arg(&to)
                .arg(&from)
                .status()
                .is_ok_and(|st| st.success())
        });
        if !stripped {
            std::fs::copy(&from, &to)
                .map_err(|e| format!("cannot copy {}: {e}", from.display()))?;
        }
        script.push_str(&format!("./hsperfstat {n} ./bench/{n}\n"));
    }
    std::fs::write(wl.join("run.sh"), &script).map_err(|e| format!("cannot write run.sh: {e}"))?;

    eprintln!(
        "validate: running {} benchmarks on {} ({}), image {}, {} MHz",
        names.len(),
        args.machine.display(),
        desc.description,
        args.image,
        args.mhz
    );
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the hartscope binary: {e}"))?;
    let started = std::time::Instant::now();
    let stats_json = scratch.0.join("stats.json");
    let out = Command::new(exe)
        .args(["boot", "--image", &args.image, "--machine"])
        .arg(&args.machine)
        .args(["--mhz", &args.mhz.to_string(), "--workload"])
        .arg(&wl)
        .arg("--stats-json")
        .arg(&stats_json)
        .output()
        .map_err(|e| format!("cannot start the boot: {e}"))?;
    let host_seconds = started.elapsed().as_secs_f64();
    let console = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "the benchmark run did not finish ({}): {}\n{}",
            out.status,
            err.lines().last().unwrap_or(""),
            last_lines(&console, 8)
        ));
    }
    let measured = validate::parse_console(&console);
    // hartscope's own counters per benchmark phase (the report's last table)
    let observed = std::fs::read(&stats_json)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .map(|v| validate::observed_from_stats(&v))
        .unwrap_or_default();
    for n in &names {
        match measured.get(n) {
            None => {
                return Err(format!(
                    "benchmark {n} printed no hsperfstat line (console in the boot's output)"
                ))
            }
            Some(m) if m.status != 0 => {
                return Err(format!("benchmark {n} exited with status {}", m.status))
            }
            _ => {}
        }
    }
    let mut apart = BTreeMap::new();
    for (n, m) in &measured {
        if let (Some(i), Some(b)) = (m.instructions, board.get(n)) {
            let ratio = i / b.instructions;
            if (ratio - 1.0).abs() > SAME_PROGRAM {
                apart.insert(
                    n.clone(),
                    format!("executes {ratio:.2}× the board's instructions, so the binary built here is not the program the board ran"),
                );
            }
        }
    }
    // only what ran is compared (a --only run reports its own benchmarks)
    let board: BTreeMap<String, validate::Counts> = board
        .into_iter()
        .filter(|(n, _)| names.contains(n))
        .collect();
    let provenance = vec![
        format!("Suite: {} at commit {commit} (https://github.com/darchr/riscv-validation); benchmarks built by its `{BENCHES}` Makefile with `{}` (`CC_RISCV`).", suite.display(), args.cc),
        format!("Board: {BOARD} (perf stat on a HiFive Unmatched, SiFive U74 at 1.2 GHz). gem5: {GEM5_TUNED} (tuned to the board) and {GEM5_ORIGINAL} (before tuning) — the figures of the riscv-validation project, gem5 workshop at ISCA 2023."),
        format!(
            "hartscope: machine {} ({}), image {} ({}), {} MHz, one boot, host time {host_seconds:.1} s.",
            args.machine.display(),
            desc.description,
            args.image,
            image.dir.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default(),
            args.mhz
        ),
    ];
    let inputs = validate::Inputs {
        board: &board,
        gem5_tuned: &gem5_tuned,
        gem5_original: &gem5_original,
        measured: &measured,
        observed: &observed,
        apart: &apart,
        provenance: &provenance,
    };
    let blocks = validate::report(&inputs);
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;
    write_atomically(
        &args.out.join("report.md"),
        hs_lab::doc::markdown(&blocks).as_bytes(),
    )?;
    write_atomically(
        &args.out.join("report.html"),
        hs_lab::doc::html("U74 validation", &blocks).as_bytes(),
    )?;
    write_atomically(
        &args.out.join("results.csv"),
        validate::results_csv(&measured).as_bytes(),
    )?;
    write_atomically(&args.out.join("console.txt"), console.as_bytes())?;
    let [ours, tuned, _] = validate::headline(&inputs);
    for (set, (o, t)) in ["all", "calibration", "validation"]
        .iter()
        .zip(ours.iter().zip(tuned.iter()))
    {
        println!(
            "{set:<12} hartscope mean |ln IPC ratio| {:.3}, {} of {} within ±15%   (gem5 tuned {:.3}, {} of {})",
            o.mean_log_error, o.within_15, o.n, t.mean_log_error, t.within_15, t.n
        );
    }
    println!("report: {}", args.out.join("report.md").display());
    Ok(0)
}
