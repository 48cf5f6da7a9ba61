//! `hartscope study`: build what the variants need, run them in parallel,
//! store each completed run, and write the report from the stored runs.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use hs_guest::ImageDir;

use crate::error::{io_err, LabError, Result};
use crate::report::{self, CheckResult, FailedRunSummary, RepeatOutcome, ReportInput, ReportRun};
use crate::run::{self, Finished, Prepared};
use crate::scenario::Scenario;
use crate::store::{NewRun, Store};

pub struct StudyOptions {
    /// Where report.md, report.html and the run artefacts go.
    pub out: PathBuf,
    pub jobs: usize,
    /// Runs per variant (1: no repeats).
    pub repeat: u32,
    pub db: PathBuf,
    /// Set by the caller's Ctrl-C handler: running runs stop at their next
    /// slice, no new run starts, and the report covers the finished runs.
    pub interrupt: Option<&'static AtomicBool>,
    /// Replaces the scenario's `[study] boot`.
    pub boot: Option<crate::shared_boot::BootMode>,
}

pub struct StudyOutcome {
    pub batch: String,
    /// Ids of the stored runs, in completion order.
    pub run_ids: Vec<i64>,
    pub report_md: PathBuf,
    pub report_html: PathBuf,
    pub checks: Vec<CheckResult>,
    /// Runs not run or not finished because the study was interrupted.
    pub not_run: Vec<String>,
    /// Runs the guest made fail, stored as failed runs and named in the report.
    pub failed: Vec<FailedRunSummary>,
}

/// `studies/results/<study>/` next to the scenario's `studies/` directory.
pub fn default_out(scenario: &Scenario) -> PathBuf {
    let dir = scenario
        .path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    dir.join("results").join(&scenario.name)
}

/// Progress lines go to `progress` (any thread may call it).
pub fn run_study(
    scenario: &Scenario,
    opts: &StudyOptions,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<StudyOutcome> {
    let mut store = Store::open(&opts.db)?;
    let jobs = opts.jobs.max(1);
    let repeat = opts.repeat.max(1);
    std::fs::create_dir_all(&opts.out).map_err(io_err("create directory", &opts.out))?;

    // Images, shared through the cache; built one at a time (a kernel build uses every core).
    type ImageKey = (String, Option<PathBuf>, Option<PathBuf>);
    let key = |v: &crate::scenario::Variant| -> ImageKey {
        (v.image.clone(), v.patches.clone(), v.config.clone())
    };
    let mut images: BTreeMap<ImageKey, ImageDir> = BTreeMap::new();
    for v in &scenario.variants {
        if images.contains_key(&key(v)) {
            continue;
        }
        let mut say = |line: &str| progress(&format!("image: {line}"));
        let img = if v.patches.is_none() && v.config.is_none() {
            hs_guest::build(&v.image, &mut say).map_err(|e| LabError::Image {
                image: v.image.clone(),
                message: e.to_string(),
            })?
        } else {
            crate::derive::build_derived(
                &v.image,
                v.patches.as_deref(),
                v.config.as_deref(),
                &mut say,
            )?
        };
        images.insert(key(v), img);
    }

    let scratch = opts.out.join(format!(".scratch-{}", std::process::id()));
    let prepared: Result<Vec<Prepared>> = scenario
        .variants
        .iter()
        .map(|v| run::prepare(v, &images[&key(v)], &scratch))
        .collect();
    let _ = std::fs::remove_dir_all(&scratch);
    let prepared = prepared?;

    // Shared boots: one per distinct boot, before any run needs it.
    let boot_mode = opts.boot.unwrap_or(scenario.boot);
    let mut starts: Vec<Option<std::sync::Arc<crate::shared_boot::Start>>> = Vec::new();
    if boot_mode != crate::shared_boot::BootMode::Each {
        let mut by_key: BTreeMap<String, std::sync::Arc<crate::shared_boot::Start>> =
            BTreeMap::new();
        for p in &prepared {
            let key = crate::shared_boot::boot_key(p, boot_mode)?;
            let start = match by_key.get(&key) {
                Some(s) => s.clone(),
                None => {
                    let say = |l: &str| progress(&format!("{}: {l}", p.variant.name));
                    let (s, key) = crate::shared_boot::shared_boot(p, boot_mode, &say)?;
                    let s = std::sync::Arc::new(s);
                    by_key.insert(key, s.clone());
                    s
                }
            };
            starts.push(Some(start));
        }
    } else {
        starts.resize_with(prepared.len(), || None);
    }

    let batch = format!("{}-{}", crate::timestamp::now_rfc3339(), std::process::id());
    let queue: Mutex<VecDeque<(usize, u32)>> = Mutex::new(
        (0..repeat)
            .flat_map(|r| (0..prepared.len()).map(move |v| (v, r)))
            .collect(),
    );
    let running: Mutex<BTreeMap<String, Instant>> = Mutex::new(BTreeMap::new());
    let (tx, rx) = mpsc::channel::<(usize, u32, Result<Finished>, Duration)>();
    let headline = scenario
        .headline
        .first()
        .cloned()
        .unwrap_or(crate::metric::Metric::Cycles);

    let mut run_ids = Vec::new();
    let mut failures = Vec::new();
    let mut failed: Vec<FailedRunSummary> = Vec::new();
    let mut stored: BTreeMap<(usize, u32), i64> = BTreeMap::new();
    let total = prepared.len() * repeat as usize;
    let interrupted = || opts.interrupt.is_some_and(|f| f.load(Ordering::Relaxed));
    let name_of = |vi: usize, r: u32| {
        let v = &prepared[vi].variant.name;
        if r == 0 {
            v.clone()
        } else {
            format!("{v} (repeat {})", r + 1)
        }
    };
    let mut not_run: Vec<(usize, u32)> = Vec::new();
    std::thread::scope(|s| {
        for _ in 0..jobs.min(total) {
            let tx = tx.clone();
            let (queue, running, prepared, starts) = (&queue, &running, &prepared, &starts);
            s.spawn(move || loop {
                if interrupted() {
                    break;
                }
                let next = queue.lock().map(|mut q| q.pop_front()).unwrap_or(None);
                let Some((vi, r)) = next else { break };
                let p = &prepared[vi];
                let name = if r == 0 {
                    p.variant.name.clone()
                } else {
                    format!("{} (repeat {})", p.variant.name, r + 1)
                };
                progress(&format!(
                    "{name}: booting `{}` on {} hart(s), kernel command line `{}`",
                    p.variant.image, p.variant.harts, p.bootargs
                ));
                if let Ok(mut m) = running.lock() {
                    m.insert(name.clone(), Instant::now());
                }
                let t0 = Instant::now();
                let dir = run::artefacts_dir(&opts.out, &p.variant.name, r);
                // A panic in one run must not take the others (or their stored results) down.
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run::execute(p, scenario, r, &dir, opts.interrupt, starts[vi].as_deref())
                }))
                .unwrap_or_else(|_| {
                    Err(LabError::Run {
                        variant: p.variant.name.clone(),
                        message: "the emulator panicked; nothing was stored".into(),
                    })
                });
                if let Ok(mut m) = running.lock() {
                    m.remove(&name);
                }
                if tx.send((vi, r, result, t0.elapsed())).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        loop {
            match rx.recv_timeout(Duration::from_secs(10)) {
                Ok((vi, r, result, took)) => {
                    let p = &prepared[vi];
                    match result {
                        Ok(f) => {
                            let rec = &f.record;
                            let value = headline.value(rec).ok().map(|v| (headline.to_string(), v));
                            match store.insert(&NewRun {
                                batch: &batch,
                                record: rec,
                                console: &f.console,
                                headline: value,
                            }) {
                                Ok(id) => {
                                    progress(&format!(
                                        "{}{}: done ({} of {total}), run {id}: exit status {}, {} phases, {} cycles ({:.6} s guest) in {:.1} s host",
                                        p.variant.name,
                                        if r > 0 { format!(" (repeat {})", r + 1) } else { String::new() },
                                        run_ids.len() + 1,
                                        rec.exit_status.unwrap_or(-1),
                                        rec.observations.phases.len(),
                                        report::thousands(rec.counters.cycles as i64),
                                        rec.counters.guest_seconds,
                                        took.as_secs_f64()
                                    ));
                                    run_ids.push(id);
                                    stored.insert((vi, r), id);
                                }
                                Err(e) => failures.push(e.to_string()),
                            }
                        }
                        Err(LabError::GuestFailed(f)) => match store.insert_failed(&batch, &f) {
                            Ok(id) => {
                                progress(&format!(
                                    "{}: failed, stored as failed run {id} ({} of {total}): {}",
                                    name_of(vi, r),
                                    run_ids.len() + failed.len() + 1,
                                    LabError::GuestFailed(f.clone())
                                ));
                                failed.push(FailedRunSummary::new(id, &f));
                            }
                            Err(e) => failures.push(format!(
                                "{}; it could not be stored as a failed run: {e}",
                                LabError::GuestFailed(f)
                            )),
                        },
                        Err(LabError::Interrupted { .. }) => {
                            progress(&format!("{}: interrupted, not stored", name_of(vi, r)));
                            not_run.push((vi, r));
                        }
                        Err(e) => {
                            progress(&format!("{}: failed: {e}", p.variant.name));
                            failures.push(e.to_string());
                        }
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Ok(m) = running.lock() {
                        for (name, since) in m.iter() {
                            progress(&format!(
                                "{name}: running for {:.0} s host",
                                since.elapsed().as_secs_f64()
                            ));
                        }
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
    });
    if interrupted() {
        if let Ok(q) = queue.lock() {
            not_run.extend(q.iter().copied());
        }
    }
    not_run.sort();
    let not_run: Vec<String> = not_run.iter().map(|&(vi, r)| name_of(vi, r)).collect();
    if !failures.is_empty() {
        return Err(LabError::Run {
            variant: "(study)".into(),
            message: format!(
                "{} of {total} runs failed, so no report was written: {}",
                failures.len(),
                failures.join("; ")
            ),
        });
    }

    // The report is made from what the store holds, exactly as `compare` would
    // (after an interrupt: the variants whose first run finished).
    let mut runs = Vec::new();
    for vi in 0..prepared.len() {
        let Some(&id) = stored.get(&(vi, 0)) else {
            continue;
        };
        let got = store.get(id)?;
        runs.push(ReportRun {
            id: got.id,
            batch: got.batch,
            record: got.record,
        });
    }
    let mut repeats = Vec::new();
    if repeat > 1 {
        for (vi, p) in prepared.iter().enumerate() {
            // Every repeat of the variant finished (not so after an interrupt).
            let Some(ids) = (0..repeat)
                .map(|r| stored.get(&(vi, r)).copied())
                .collect::<Option<Vec<i64>>>()
            else {
                continue;
            };
            let first = store.get(ids[0])?.record;
            let mut differences: Vec<String> = Vec::new();
            for &id in &ids[1..] {
                for d in first.differences(&store.get(id)?.record) {
                    if !differences.contains(&d) {
                        differences.push(d);
                    }
                }
            }
            repeats.push(RepeatOutcome {
                variant: p.variant.name.clone(),
                runs: repeat,
                differences,
            });
        }
    }
    let input = ReportInput {
        title: format!("Study: {}", scenario.name),
        description: scenario.description.clone(),
        runs,
        headline: scenario.headline.clone(),
        checks: scenario.checks.clone(),
        tables: scenario.tables.clone(),
        repeats,
        not_run: not_run.clone(),
        failed: failed.clone(),
    };
    let (report_md, report_html) = write_report(&input, &opts.out)?;
    Ok(StudyOutcome {
        batch,
        run_ids,
        report_md,
        report_html,
        checks: input.evaluate(),
        not_run,
        failed,
    })
}

/// Write `report.md` and `report.html` into `out` (each replaced whole).
pub fn write_report(input: &ReportInput, out: &Path) -> Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(out).map_err(io_err("create directory", out))?;
    let blocks = report::build(input);
    let md = out.join("report.md");
    let html = out.join("report.html");
    write_atomically(&md, crate::doc::markdown(&blocks).as_bytes())?;
    write_atomically(&html, crate::doc::html(&input.title, &blocks).as_bytes())?;
    Ok((md, html))
}

fn write_atomically(path: &Path, data: &[u8]) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    std::fs::write(&tmp, data)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            LabError::Io {
                action: "write",
                path: path.to_path_buf(),
                source: e,
            }
        })
}
