//! `hartscope study FILE`: run a scenario's variants, store the runs, write the report.

use std::path::PathBuf;

use clap::Args;
use hs_lab::study::{default_out, run_study, StudyOptions};
use hs_lab::{Context, Scenario};

#[derive(Args, Debug)]
pub struct StudyArgs {
    /// Scenario file (studies/NAME.toml).
    pub file: PathBuf,
    /// Where report.md, report.html and the run artefacts go; default studies/results/<study>/ beside the file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Variants run at once (each in its own thread); default: the number of cores.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Run every variant N times and report whether console bytes and counts matched.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Results database; default ~/.local/share/hartscope/results.db.
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Only validate the scenario file, run nothing.
    #[arg(long)]
    pub check: bool,
    /// Set a workload environment variable in every variant (over the file's
    /// values), e.g. `--env ITERATIONS=30000` for a study's full scale.
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Run only these variants (comma-separated names), in the file's order.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Stop a run that has not finished after this much guest time (over `workload.max_guest_seconds`).
    #[arg(long)]
    pub max_guest_seconds: Option<f64>,
    /// How runs start, replacing the study's `[study] boot`: `each` (every run boots
    /// from reset), `shared` (runs with the same guest and machine boot once, snapshotted
    /// at the first phase marker and cached), `fast-forward` (the same, the boot on the
    /// atomic model; each run goes on under its own model, caches cold).
    #[arg(long, value_parser = parse_boot)]
    pub boot: Option<hs_lab::shared_boot::BootMode>,
}

fn parse_boot(s: &str) -> Result<hs_lab::shared_boot::BootMode, String> {
    hs_lab::shared_boot::BootMode::parse(s)
        .ok_or_else(|| format!("{s:?}: give `each`, `shared` or `fast-forward`"))
}

pub fn run(args: StudyArgs) -> Result<i32, String> {
    let mut scenario =
        Scenario::load(&args.file, &Context::from_env()).map_err(|e| e.to_string())?;
    let overrides = args
        .env
        .iter()
        .map(|kv| match kv.split_once('=') {
            Some((k, v))
                if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                Ok((k.to_string(), v.to_string()))
            }
            _ => Err(format!(
                "--env `{kv}`: expected KEY=VALUE with KEY of letters, digits and `_`"
            )),
        })
        .collect::<Result<Vec<_>, String>>()?;
    scenario
        .override_run(&overrides, &args.only, args.max_guest_seconds)
        .map_err(|e| e.to_string())?;
    if args.check {
        println!(
            "{}: valid, {} variants ({})",
            args.file.display(),
            scenario.variants.len(),
            scenario
                .variants
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(0);
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if jobs == 0 {
        return Err("--jobs must be at least 1".into());
    }
    let opts = StudyOptions {
        out: args.out.unwrap_or_else(|| default_out(&scenario)),
        jobs,
        repeat: args.repeat,
        db: args.db.unwrap_or_else(hs_lab::store::default_path),
        interrupt: Some(crate::sigint::install()),
        boot: args.boot,
    };
    eprintln!(
        "hartscope study: {} — {} variants × {} run(s), {} at a time; results in {}",
        scenario.name,
        scenario.variants.len(),
        opts.repeat,
        jobs,
        opts.db.display()
    );
    let progress = |line: &str| eprintln!("hartscope study: {line}");
    let outcome = run_study(&scenario, &opts, &progress).map_err(|e| e.to_string())?;
    let ids: Vec<String> = outcome.run_ids.iter().map(|i| i.to_string()).collect();
    println!("stored runs {} (batch {})", ids.join(", "), outcome.batch);
    println!("report: {}", outcome.report_md.display());
    println!("report: {}", outcome.report_html.display());
    for c in &outcome.checks {
        println!(
            "{:<8} {} [{}]: {}",
            c.status.as_str(),
            c.name,
            c.variant,
            c.detail
        );
    }
    if !outcome.failed.is_empty() {
        let total = outcome.run_ids.len() + outcome.failed.len();
        for f in &outcome.failed {
            eprintln!(
                "hartscope study: {} failed (stored as failed run {}): {}",
                f.run_name(),
                f.id,
                f.reason
            );
        }
        eprintln!(
            "hartscope study: {} of {total} run(s) failed; the report names them with their console's last lines (`hartscope history` lists them too)",
            outcome.failed.len()
        );
        if outcome.not_run.is_empty() {
            return Ok(1);
        }
    }
    if !outcome.not_run.is_empty() {
        eprintln!(
            "hartscope study: interrupted (Ctrl-C): the report covers the {} finished run(s), stored as above; not run or not finished: {}",
            outcome.run_ids.len(),
            outcome.not_run.join(", ")
        );
        return Ok(130);
    }
    Ok(0)
}
