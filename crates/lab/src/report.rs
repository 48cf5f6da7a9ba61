//! Reports over stored runs: result table, phases, cycle shape, hot
//! functions, syscalls and interrupts, counters, honest status, provenance.
//! A section whose data this build does not collect is not drawn empty: it
//! says NOT RUN and why, in the section and in the honest-status table.

use std::collections::{BTreeMap, BTreeSet};

use hs_observe::{EventKind, Phase};

use crate::doc::{Block, Chart, Table};
use crate::metric::{Format, Metric, Missing, NO_PROFILER, NO_TIMELINE, NO_TIMING_MODEL};
use crate::record::RunRecord;
use crate::run::BOOT_PHASE;
use crate::scenario::{Check, CheckKind, PivotTable, Rhs, TableUnit};

/// A stored run as a report column.
#[derive(Clone, Debug)]
pub struct ReportRun {
    pub id: i64,
    pub batch: String,
    pub record: RunRecord,
}

/// Whether repeats of one variant matched.
#[derive(Clone, Debug, PartialEq)]
pub struct RepeatOutcome {
    pub variant: String,
    pub runs: u32,
    /// What differed between repeats (empty: all identical).
    pub differences: Vec<String>,
}

pub struct ReportInput {
    pub title: String,
    pub description: String,
    /// The first run is the baseline every delta is taken against.
    pub runs: Vec<ReportRun>,
    pub headline: Vec<Metric>,
    pub checks: Vec<Check>,
    /// The study's own rows × variants tables (`[[tables]]`).
    pub tables: Vec<PivotTable>,
    /// Empty when each variant ran once.
    pub repeats: Vec<RepeatOutcome>,
    /// Runs the study did not finish (interrupted), as `variant (repeat N)`.
    pub not_run: Vec<String>,
    /// Runs the guest made fail (stored as failed runs).
    pub failed: Vec<FailedRunSummary>,
}

/// A run the guest made fail, as the report names it.
#[derive(Clone, Debug, PartialEq)]
pub struct FailedRunSummary {
    /// Its id in the results store.
    pub id: i64,
    pub variant: String,
    pub repeat: u32,
    pub reason: String,
    pub cycles: u64,
    /// The console's last lines.
    pub console_tail: Vec<String>,
}

impl FailedRunSummary {
    pub fn new(id: i64, f: &crate::store::FailedRun) -> FailedRunSummary {
        FailedRunSummary {
            id,
            variant: f.variant.clone(),
            repeat: f.repeat,
            reason: f.reason.clone(),
            cycles: f.cycles,
            console_tail: f.console_tail(12),
        }
    }

    /// `variant` or `variant (repeat N)`.
    pub fn run_name(&self) -> String {
        if self.repeat == 0 {
            self.variant.clone()
        } else {
            format!("{} (repeat {})", self.variant, self.repeat + 1)
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Pass,
    Fail,
    NotRun,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::NotRun => "NOT RUN",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct CheckResult {
    pub name: String,
    pub variant: String,
    pub status: Status,
    pub detail: String,
}

/// `1234567` → `1,234,567`.
pub fn thousands(v: i64) -> String {
    let digits = v.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0 {
        format!("-{out}")
    } else {
        out
    }
}

fn count(v: u64) -> String {
    thousands(v.min(i64::MAX as u64) as i64)
}

pub fn format_value(v: f64, f: Format) -> String {
    match f {
        Format::Count => thousands(v.round() as i64),
        Format::Ratio => format!("{v:.4}"),
        Format::Seconds => format!("{v:.6}"),
        Format::Auto if v.fract() == 0.0 && v.abs() < 9e18 => thousands(v as i64),
        Format::Auto => format!("{v:.4}"),
    }
}

/// `+1.29%`, `-100.00%`; `new` when the baseline is zero and this is not.
pub fn delta(base: f64, v: f64) -> String {
    if base == v {
        "0.00%".into()
    } else if base == 0.0 {
        "new".into()
    } else {
        format!("{:+.2}%", (v - base) / base.abs() * 100.0)
    }
}

impl ReportInput {
    /// Column names: the variant, or `variant #id` when a name repeats.
    fn labels(&self) -> Vec<String> {
        self.runs
            .iter()
            .map(|r| {
                let same = self
                    .runs
                    .iter()
                    .filter(|o| o.record.variant == r.record.variant)
                    .count();
                if same > 1 {
                    format!("{} #{}", r.record.variant, r.id)
                } else {
                    r.record.variant.clone()
                }
            })
            .collect()
    }

    fn run_of(&self, variant: &str) -> Result<&ReportRun, String> {
        let found: Vec<&ReportRun> = self
            .runs
            .iter()
            .filter(|r| r.record.variant == variant)
            .collect();
        match found.len() {
            1 => Ok(found[0]),
            0 => Err(format!("variant {variant} is not among the reported runs")),
            _ => Err(format!(
                "variant {variant} appears in more than one reported run"
            )),
        }
    }

    pub fn evaluate(&self) -> Vec<CheckResult> {
        let mut out = Vec::new();
        for r in &self.runs {
            let rec = &r.record;
            let (status, detail) = match rec.exit_status {
                Some(0) => (Status::Pass, format!("exit status 0; {}", rec.stop)),
                Some(s) => (Status::Fail, format!("exit status {s}")),
                None => (Status::Fail, "no exit status reported".into()),
            };
            out.push(CheckResult {
                name: "workload runs to its end".into(),
                variant: rec.variant.clone(),
                status,
                detail,
            });
        }
        for f in &self.failed {
            out.push(CheckResult {
                name: "workload runs to its end".into(),
                variant: f.run_name(),
                status: Status::Fail,
                detail: format!("run {} failed: {}", f.id, f.reason),
            });
        }
        for c in &self.checks {
            out.push(self.evaluate_check(c));
        }
        out
    }

    fn evaluate_check(&self, c: &Check) -> CheckResult {
        let result = |status, detail: String| CheckResult {
            name: c.name.clone(),
            variant: c.variant.clone(),
            status,
            detail,
        };
        let run = match self.run_of(&c.variant) {
            Ok(r) => r,
            Err(why) => {
                let why = match self.failed.iter().find(|f| f.variant == c.variant) {
                    Some(f) => format!("run {} of {} failed: {}", f.id, c.variant, f.reason),
                    None => why,
                };
                return result(Status::NotRun, why);
            }
        };
        match &c.kind {
            CheckKind::ConsoleContains(text) => {
                if run.record.console.text.contains(text.as_str()) {
                    result(Status::Pass, format!("console output contains {text:?}"))
                } else {
                    result(
                        Status::Fail,
                        format!(
                            "{text:?} is not in the {} bytes of console output",
                            count(run.record.console.bytes)
                        ),
                    )
                }
            }
            CheckKind::Compare {
                metric,
                op,
                rhs,
                factor,
            } => {
                let value = |r: &ReportRun| metric.value(&r.record);
                let missing = |m: Missing| match m {
                    Missing::NotCollected(why) => result(Status::NotRun, why),
                    Missing::Absent(why) => result(Status::Fail, why),
                };
                let a = match value(run) {
                    Ok(v) => v,
                    Err(m) => return missing(m),
                };
                let f = metric.format();
                let (b, b_text) = match rhs {
                    Rhs::Value(v) => (*v, format_value(*v, f)),
                    Rhs::Variant(other) => {
                        let o = match self.run_of(other) {
                            Ok(o) => o,
                            Err(why) => return result(Status::NotRun, why),
                        };
                        match value(o) {
                            Ok(v) => (v, format!("{} in {other}", format_value(v, f))),
                            Err(m) => return missing(m),
                        }
                    }
                    Rhs::Metric { variant, metric: m } => {
                        let o = match variant {
                            Some(v) => match self.run_of(v) {
                                Ok(o) => o,
                                Err(why) => return result(Status::NotRun, why),
                            },
                            None => run,
                        };
                        match m.value(&o.record) {
                            Ok(v) => (
                                v,
                                format!(
                                    "{} (`{m}`{})",
                                    format_value(v, m.format()),
                                    variant
                                        .as_ref()
                                        .map(|v| format!(" in {v}"))
                                        .unwrap_or_default()
                                ),
                            ),
                            Err(m) => return missing(m),
                        }
                    }
                };
                let (b, b_text) = if *factor != 1.0 {
                    (
                        b * factor,
                        format!("{factor} × {b_text} = {}", format_value(b * factor, f)),
                    )
                } else {
                    (b, b_text)
                };
                let detail = format!(
                    "{metric}: {} in {} {} {b_text}",
                    format_value(a, f),
                    c.variant,
                    op.symbol()
                );
                result(
                    if op.holds(a, b) {
                        Status::Pass
                    } else {
                        Status::Fail
                    },
                    detail,
                )
            }
        }
    }
}

/// Phases keyed by (label, occurrence), so repeated labels pair up in order.
fn phase_keys(phases: &[Phase]) -> Vec<((String, usize), &Phase)> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    phases
        .iter()
        .map(|p| {
            let n = seen.entry(&p.label).or_default();
            *n += 1;
            ((p.label.clone(), *n), p)
        })
        .collect()
}

fn shape_of(rec: &RunRecord) -> Vec<(String, u64)> {
    let mut states: Vec<(String, u64)> = Vec::new();
    for s in rec.observations.total.stats() {
        let Some(rest) = s.name.strip_prefix("system.cpu") else {
            continue;
        };
        let Some((_, state)) = rest.split_once(".cycleShape.") else {
            continue;
        };
        let v = s.value.as_f64().max(0.0).round() as u64;
        match states.iter_mut().find(|(n, _)| n == state) {
            Some((_, t)) => *t += v,
            None => states.push((state.to_string(), v)),
        }
    }
    states
}

fn syscalls(rec: &RunRecord) -> BTreeMap<u64, u64> {
    let mut m = BTreeMap::new();
    for e in &rec.observations.events {
        if let EventKind::Syscall { number } = e.kind {
            *m.entry(number).or_default() += 1;
        }
    }
    m
}

fn interrupts(rec: &RunRecord) -> BTreeMap<(u64, Option<u32>), u64> {
    let mut m = BTreeMap::new();
    for e in &rec.observations.events {
        if let EventKind::Interrupt { cause, plic_source } = e.kind {
            *m.entry((cause, plic_source)).or_default() += 1;
        }
    }
    m
}

/// The runs the guest made fail: why, and the console's last lines.
fn failed_runs(input: &ReportInput, b: &mut Vec<Block>) {
    b.push(Block::Heading(2, "Failed runs".into()));
    b.push(Block::Para(format!(
        "{} run(s) did not finish: the guest made them fail. Each is stored as a failed run (`hartscope history` lists it) with its whole console, but has no counts: the tables below leave it out, and a check on a variant without a finished run says NOT RUN.",
        input.failed.len()
    )));
    let mut t = Table::new(
        &["run", "variant", "stopped at cycle", "why"],
        &[true, false, true, false],
    );
    for f in &input.failed {
        t.row(vec![
            f.id.to_string(),
            f.run_name(),
            count(f.cycles),
            f.reason.clone(),
        ]);
    }
    b.push(Block::Table(t));
    for f in &input.failed {
        b.push(Block::Para(format!(
            "{} (run {}), the console's last lines:",
            f.run_name(),
            f.id
        )));
        b.push(Block::Pre(if f.console_tail.is_empty() {
            "(the console stayed empty)".into()
        } else {
            f.console_tail.join("\n")
        }));
    }
}

/// Build the whole report.
pub fn build(input: &ReportInput) -> Vec<Block> {
    let labels = input.labels();
    let runs = &input.runs;
    let mut b = Vec::new();
    b.push(Block::Heading(1, input.title.clone()));
    if !input.description.is_empty() {
        b.push(Block::Para(input.description.clone()));
    }
    if !input.not_run.is_empty() {
        b.push(Block::Para(format!(
            "**Interrupted (Ctrl-C)**: this report covers the runs that finished. Not run or not finished: {}. Checks on a variant without a run say NOT RUN.",
            input.not_run.join(", ")
        )));
    }
    if !input.failed.is_empty() {
        failed_runs(input, &mut b);
    }
    if runs.is_empty() {
        b.push(Block::Para("No runs to report.".into()));
        return b;
    }
    let base = &labels[0];
    let mut runs_t = Table::new(
        &[
            "variant",
            "run",
            "image",
            "harts",
            "memory",
            "kernel command line",
            "guest time",
            "exit",
        ],
        &[false, true, false, true, true, false, true, true],
    );
    for (r, l) in runs.iter().zip(&labels) {
        let rec = &r.record;
        runs_t.row(vec![
            l.clone(),
            r.id.to_string(),
            rec.image.name.clone(),
            rec.machine.harts.to_string(),
            format!("{} MiB", rec.machine.memory_bytes >> 20),
            format!("`{}`", rec.machine.bootargs),
            format!("{:.6} s", rec.counters.guest_seconds),
            rec.exit_status.map_or("-".into(), |s| s.to_string()),
        ]);
    }
    b.push(Block::Table(runs_t));
    let statuses = input.evaluate();
    let mut not_run: Vec<(String, String)> = Vec::new();

    // Result table
    b.push(Block::Heading(2, "Result".into()));
    let mut headers = vec!["metric".to_string()];
    let mut right = vec![false];
    for (i, l) in labels.iter().enumerate() {
        headers.push(l.clone());
        right.push(true);
        if i > 0 {
            headers.push(format!("Δ {l} vs {base}"));
            right.push(true);
        }
    }
    let headline: Vec<Metric> = if input.headline.is_empty() {
        vec![Metric::Cycles, Metric::Instret, Metric::Cpi]
    } else {
        input.headline.clone()
    };
    let mut result = Table {
        headers,
        right,
        rows: Vec::new(),
    };
    let mut unavailable: Vec<(String, Vec<String>)> = Vec::new();
    let mut relative = Chart {
        title: format!("headline metrics, % of {base}"),
        unit: format!("% of {base}"),
        series: labels.clone(),
        categories: Vec::new(),
        stacked: false,
    };
    for m in &headline {
        let values: Vec<Result<f64, Missing>> = runs.iter().map(|r| m.value(&r.record)).collect();
        let mut row = vec![format!("`{m}`")];
        for (i, v) in values.iter().enumerate() {
            row.push(match v {
                Ok(v) => format_value(*v, m.format()),
                Err(Missing::NotCollected(_)) => "not collected".into(),
                Err(Missing::Absent(_)) => "absent".into(),
            });
            if i > 0 {
                row.push(match (&values[0], v) {
                    (Ok(a), Ok(v)) => delta(*a, *v),
                    _ => "-".into(),
                });
            }
        }
        result.row(row);
        if let Some(Err(e)) = values.iter().find(|v| v.is_err()) {
            let why = e.reason().to_string();
            match unavailable.iter_mut().find(|(w, _)| *w == why) {
                Some((_, ms)) => ms.push(format!("`{m}`")),
                None => unavailable.push((why, vec![format!("`{m}`")])),
            }
        }
        // Relative to the baseline, so metrics of any scale share one chart.
        if let (Some(Ok(base)), true) = (values.first(), values.iter().all(|v| v.is_ok())) {
            if *base > 0.0 {
                let pct = values
                    .iter()
                    .map(|v| (v.as_ref().unwrap_or(&0.0) / base * 1000.0).round() / 10.0)
                    .collect();
                relative.categories.push((m.to_string(), pct));
            }
        }
    }
    b.push(Block::Table(result));
    if !unavailable.is_empty() {
        let parts: Vec<String> = unavailable
            .iter()
            .map(|(why, ms)| format!("{}: {why}", ms.join(", ")))
            .collect();
        b.push(Block::Para(format!("Not available: {}.", parts.join("; "))));
    }
    if runs.len() > 1 && !relative.categories.is_empty() {
        b.push(Block::Chart(relative));
    }
    b.extend(crate::report_guest::guest_metrics(runs, &labels));
    b.extend(crate::report_guest::ipis(runs, &labels));

    b.extend(pivot_tables(input, &labels));
    b.extend(wake_paths(input, &labels, &headline));

    // Phases
    b.push(Block::Heading(2, "Phases".into()));
    for (r, l) in runs.iter().zip(&labels) {
        let rec = &r.record;
        b.push(Block::Heading(
            3,
            format!(
                "{l}: {} phases, {} cycles",
                rec.observations.phases.len(),
                count(rec.counters.cycles)
            ),
        ));
        let mut t = Table::new(
            &["#", "phase", "cycles", "share", "instret", "CPI"],
            &[true, false, true, true, true, true],
        );
        for p in &rec.observations.phases {
            t.row(vec![
                p.index.to_string(),
                p.label.clone(),
                count(p.cycles()),
                share(p.cycles(), rec.counters.cycles),
                count(p.instret()),
                p.cpi().map_or("-".into(), |c| format!("{c:.2}")),
            ]);
        }
        b.push(Block::Table(t));
    }
    if runs.len() > 1 {
        b.push(Block::Heading(3, "Phase by phase".into()));
        let keyed: Vec<Vec<((String, usize), &Phase)>> = runs
            .iter()
            .map(|r| phase_keys(&r.record.observations.phases))
            .collect();
        let mut order: Vec<(String, usize)> = Vec::new();
        for k in &keyed {
            for (key, _) in k {
                if !order.contains(key) {
                    order.push(key.clone());
                }
            }
        }
        let mut headers = vec!["phase".to_string()];
        let mut right = vec![false];
        for (i, l) in labels.iter().enumerate() {
            headers.push(format!("{l} cycles"));
            right.push(true);
            if i > 0 {
                headers.push(format!("Δ {l}"));
                right.push(true);
            }
        }
        let mut t = Table {
            headers,
            right,
            rows: Vec::new(),
        };
        let mut chart = Chart {
            title: "cycles per phase (after boot)".into(),
            unit: "cycles".into(),
            series: labels.clone(),
            categories: Vec::new(),
            stacked: false,
        };
        for key in &order {
            let cycles: Vec<Option<u64>> = keyed
                .iter()
                .map(|k| k.iter().find(|(kk, _)| kk == key).map(|(_, p)| p.cycles()))
                .collect();
            let name = if key.1 > 1 {
                format!("{} ({})", key.0, key.1)
            } else {
                key.0.clone()
            };
            let mut row = vec![name.clone()];
            for (i, c) in cycles.iter().enumerate() {
                row.push(c.map_or("-".into(), count));
                if i > 0 {
                    row.push(match (cycles[0], c) {
                        (Some(a), Some(v)) => delta(a as f64, *v as f64),
                        _ => "-".into(),
                    });
                }
            }
            t.row(row);
            if key.0 != BOOT_PHASE {
                chart
                    .categories
                    .push((name, cycles.iter().map(|c| c.unwrap_or(0) as f64).collect()));
            }
        }
        let mut total = vec!["**total**".to_string()];
        for (i, r) in runs.iter().enumerate() {
            total.push(count(r.record.counters.cycles));
            if i > 0 {
                total.push(delta(
                    runs[0].record.counters.cycles as f64,
                    r.record.counters.cycles as f64,
                ));
            }
        }
        t.row(total);
        b.push(Block::Table(t));
        if !chart.categories.is_empty() {
            b.push(Block::Chart(chart));
        }
    }

    // Cycle shape
    b.push(Block::Heading(2, "Cycle shape".into()));
    let shapes: Vec<Vec<(String, u64)>> = runs.iter().map(|r| shape_of(&r.record)).collect();
    if shapes.iter().all(|s| s.is_empty()) {
        b.push(Block::Para(format!("NOT RUN: {NO_TIMING_MODEL}.")));
        not_run.push(("cycle-shape chart".into(), NO_TIMING_MODEL.into()));
    } else {
        let mut states: Vec<String> = Vec::new();
        for s in &shapes {
            for (n, _) in s {
                if !states.contains(n) {
                    states.push(n.clone());
                }
            }
        }
        let mut headers = vec!["state".to_string()];
        let mut right = vec![false];
        for l in &labels {
            headers.push(format!("{l} cycles"));
            headers.push(format!("{l} share"));
            right.extend([true, true]);
        }
        let mut t = Table {
            headers,
            right,
            rows: Vec::new(),
        };
        for st in &states {
            let mut row = vec![st.clone()];
            for s in &shapes {
                let total: u64 = s.iter().map(|(_, v)| v).sum();
                let v = s.iter().find(|(n, _)| n == st).map_or(0, |(_, v)| *v);
                row.push(count(v));
                row.push(share(v, total));
            }
            t.row(row);
        }
        b.push(Block::Table(t));
        b.push(Block::Chart(Chart {
            title: "cycle shape".into(),
            unit: "cycles".into(),
            series: states.clone(),
            categories: labels
                .iter()
                .zip(&shapes)
                .map(|(l, s)| {
                    (
                        l.clone(),
                        states
                            .iter()
                            .map(|st| {
                                s.iter()
                                    .find(|(n, _)| n == st)
                                    .map_or(0.0, |(_, v)| *v as f64)
                            })
                            .collect(),
                    )
                })
                .collect(),
            stacked: true,
        }));
    }

    // Hot functions
    b.push(Block::Heading(2, "Hot functions".into()));
    if runs.iter().all(|r| r.record.profile.is_none()) {
        b.push(Block::Para(format!("NOT RUN: {NO_PROFILER}.")));
        not_run.push(("hot-functions profile".into(), NO_PROFILER.into()));
    } else {
        const TOP: usize = 15;
        let mut symbols: Vec<String> = Vec::new();
        for (r, l) in runs.iter().zip(&labels) {
            match &r.record.profile {
                None => b.push(Block::Para(format!("{l}: no samples ({NO_PROFILER})."))),
                Some(p) => {
                    b.push(Block::Heading(
                        3,
                        format!(
                            "{l}: {} samples, one every {} cycles ({})",
                            count(p.total_samples),
                            count(p.period),
                            p.window
                        ),
                    ));
                    let mut t = Table::new(
                        &["#", "symbol", "where", "samples", "share"],
                        &[true, false, false, true, true],
                    );
                    for (i, row) in p.rows.iter().take(TOP).enumerate() {
                        t.row(vec![
                            (i + 1).to_string(),
                            row.symbol.clone(),
                            row.place.clone(),
                            count(row.samples),
                            share(row.samples, p.total_samples),
                        ]);
                        if !symbols.contains(&row.symbol) {
                            symbols.push(row.symbol.clone());
                        }
                    }
                    if p.rows.len() > TOP {
                        let rest: u64 = p.rows[TOP..].iter().map(|r| r.samples).sum();
                        t.row(vec![
                            (TOP + 1).to_string(),
                            "(remaining)".into(),
                            "".into(),
                            count(rest),
                            share(rest, p.total_samples),
                        ]);
                    }
                    b.push(Block::Table(t));
                    if !p.phases.is_empty() {
                        b.push(Block::Para(format!(
                            "{l}, hot symbols per phase (every phase with samples, the profile window or not):"
                        )));
                        let mut t = Table::new(
                            &["phase", "samples", "hottest symbols (share of the phase)"],
                            &[false, true, false],
                        );
                        for ph in &p.phases {
                            let top: Vec<String> = ph
                                .rows
                                .iter()
                                .map(|r| {
                                    format!(
                                        "{} ({}) {}",
                                        r.symbol,
                                        r.place,
                                        share(r.samples, ph.samples)
                                    )
                                })
                                .collect();
                            t.row(vec![ph.label.clone(), count(ph.samples), top.join(", ")]);
                        }
                        b.push(Block::Table(t));
                    }
                    for n in &p.notes {
                        b.push(Block::Para(format!("Note: {n}.")));
                    }
                }
            }
        }
        // Symbols the study asks about appear even when they are not hot (or vanished).
        for m in headline
            .iter()
            .chain(input.checks.iter().filter_map(|c| match &c.kind {
                CheckKind::Compare { metric, .. } => Some(metric),
                _ => None,
            }))
        {
            if let Metric::Samples { symbol } = m {
                if !symbols.contains(symbol) {
                    symbols.push(symbol.clone());
                }
            }
        }
        if runs.len() > 1 {
            b.push(Block::Heading(3, "Per-symbol deltas".into()));
            let mut headers = vec!["symbol".to_string()];
            let mut right = vec![false];
            for (i, l) in labels.iter().enumerate() {
                headers.push(l.clone());
                right.push(true);
                if i > 0 {
                    headers.push(format!("Δ {l}"));
                    right.push(true);
                }
            }
            let mut t = Table {
                headers,
                right,
                rows: Vec::new(),
            };
            for s in &symbols {
                let v: Vec<Option<u64>> = runs
                    .iter()
                    .map(|r| r.record.profile.as_ref().map(|p| p.samples_of(s)))
                    .collect();
                let mut row = vec![s.clone()];
                for (i, x) in v.iter().enumerate() {
                    row.push(x.map_or("-".into(), count));
                    if i > 0 {
                        row.push(match (v[0], x) {
                            (Some(a), Some(x)) => delta(a as f64, *x as f64),
                            _ => "-".into(),
                        });
                    }
                }
                t.row(row);
            }
            b.push(Block::Table(t));
        }
    }

    b.extend(crate::report_itrace::itrace_sections(runs, &labels));

    // Syscalls and interrupts
    b.push(Block::Heading(2, "System calls and interrupts".into()));
    let sys: Vec<BTreeMap<u64, u64>> = runs.iter().map(|r| syscalls(&r.record)).collect();
    let irq: Vec<BTreeMap<(u64, Option<u32>), u64>> =
        runs.iter().map(|r| interrupts(&r.record)).collect();
    if sys.iter().all(|m| m.is_empty()) && irq.iter().all(|m| m.is_empty()) {
        b.push(Block::Para(format!(
            "NOT RUN: {NO_TIMELINE}. Trap totals per hart are in the counters below."
        )));
        not_run.push(("syscall and interrupt tables".into(), NO_TIMELINE.into()));
    } else {
        let numbers: BTreeSet<u64> = sys.iter().flat_map(|m| m.keys().copied()).collect();
        b.push(Block::Table(compare_table(
            "system call",
            &labels,
            numbers.iter().map(|n| {
                let name = match hs_observe::syscall_name(*n) {
                    Some(s) => format!("{s} ({n})"),
                    None => n.to_string(),
                };
                (
                    name,
                    sys.iter().map(|m| m.get(n).copied().unwrap_or(0)).collect(),
                )
            }),
            count,
            count_change,
        )));
        let keys: BTreeSet<(u64, Option<u32>)> =
            irq.iter().flat_map(|m| m.keys().copied()).collect();
        b.push(Block::Table(compare_table(
            "interrupt",
            &labels,
            keys.iter().map(|k| {
                let mut name = hs_observe::cause_name(true, k.0)
                    .map_or(format!("cause {}", k.0), str::to_string);
                if let Some(src) = k.1 {
                    name.push_str(&format!(", PLIC source {src}"));
                }
                (
                    name,
                    irq.iter().map(|m| m.get(k).copied().unwrap_or(0)).collect(),
                )
            }),
            count,
            count_change,
        )));
    }

    // Counters: every run-total counter that is not zero everywhere.
    b.push(Block::Heading(2, "Counters".into()));
    let mut names: Vec<String> = Vec::new();
    for r in runs {
        for s in r.record.observations.total.stats() {
            if !names.contains(&s.name) {
                names.push(s.name.clone());
            }
        }
    }
    let mut same = 0;
    let rows: Vec<(String, Vec<Option<f64>>)> = names
        .iter()
        .filter_map(|n| {
            let vals: Vec<Option<f64>> = runs
                .iter()
                .map(|r| r.record.observations.total.get(n).map(|s| s.value.as_f64()))
                .collect();
            if vals
                .iter()
                .all(|v| v.is_none_or(|x| x == 0.0 || x.is_nan()))
            {
                return None;
            }
            // With several runs, the counters that moved are the interesting ones.
            if runs.len() > 1 && vals.iter().all(|v| *v == vals[0]) {
                same += 1;
                return None;
            }
            Some((n.clone(), vals))
        })
        .collect();
    if same > 0 {
        b.push(Block::Para(format!("Counters that differ between the runs; {same} more are equal in every run (all are in each run's `stats.txt`).")));
    }
    let t = compare_table(
        "counter",
        &labels,
        rows.into_iter(),
        |v: Option<f64>| {
            v.map_or("-".into(), |x| {
                if x.fract() == 0.0 {
                    thousands(x as i64)
                } else {
                    format!("{x:.4}")
                }
            })
        },
        |first, v| match (first, v) {
            (Some(a), Some(x)) => delta(a, x),
            _ => "-".into(),
        },
    );
    b.push(Block::Table(t));

    // Repeats
    if !input.repeats.is_empty() {
        b.push(Block::Heading(2, "Repeats".into()));
        let mut t = Table::new(
            &["variant", "runs", "console bytes and counts"],
            &[false, true, false],
        );
        for r in &input.repeats {
            t.row(vec![
                r.variant.clone(),
                r.runs.to_string(),
                if r.differences.is_empty() {
                    "identical in every run".into()
                } else {
                    format!("differ: {}", r.differences.join(", "))
                },
            ]);
        }
        b.push(Block::Table(t));
    }

    // Honest status
    b.push(Block::Heading(2, "Honest status".into()));
    let mut t = Table::new(
        &["check", "variant", "status", "detail"],
        &[false, false, false, false],
    );
    for s in &statuses {
        t.row(vec![
            s.name.clone(),
            s.variant.clone(),
            s.status.as_str().into(),
            s.detail.clone(),
        ]);
    }
    if input.repeats.is_empty() {
        t.row(vec![
            "console bytes and counts identical across repeats".into(),
            "all".into(),
            "NOT RUN".into(),
            "one run per variant (use --repeat N)".into(),
        ]);
    } else {
        for r in &input.repeats {
            let ok = r.differences.is_empty();
            t.row(vec![
                "console bytes and counts identical across repeats".into(),
                r.variant.clone(),
                if ok { "PASS" } else { "FAIL" }.into(),
                if ok {
                    format!("{} runs", r.runs)
                } else {
                    format!("{} differ", r.differences.join(", "))
                },
            ]);
        }
    }
    for (what, why) in &not_run {
        t.row(vec![
            what.clone(),
            "all".into(),
            "NOT RUN".into(),
            why.clone(),
        ]);
    }
    b.push(Block::Table(t));

    // Console
    b.push(Block::Heading(2, "Console".into()));
    let mut t = Table::new(&["variant", "bytes", "sha256"], &[false, true, false]);
    for (r, l) in runs.iter().zip(&labels) {
        t.row(vec![
            l.clone(),
            count(r.record.console.bytes),
            format!("`{}`", r.record.console.sha256),
        ]);
    }
    b.push(Block::Table(t));
    for (r, l) in runs.iter().zip(&labels) {
        let lines: Vec<&str> = r.record.console.text.lines().collect();
        let from = lines.len().saturating_sub(6);
        b.push(Block::Para(format!(
            "{l}, last {} lines:",
            lines.len() - from
        )));
        b.push(Block::Pre(
            lines[from..]
                .iter()
                .map(|l| l.trim_end_matches('\r'))
                .collect::<Vec<_>>()
                .join("\n"),
        ));
    }

    // Provenance
    b.push(Block::Heading(2, "Provenance".into()));
    let mut t = Table::new(
        &[
            "variant",
            "run",
            "batch",
            "started",
            "finished",
            "hartscope",
            "scenario sha256",
            "image",
            "recipe",
            "kernel",
            "machine",
            "workload env",
            "initrd sha256",
        ],
        &[false; 13],
    );
    for (r, l) in runs.iter().zip(&labels) {
        let rec = &r.record;
        let m = &rec.machine;
        t.row(vec![
            l.clone(),
            r.id.to_string(),
            r.batch.clone(),
            rec.started_at.clone(),
            rec.finished_at.clone(),
            rec.hartscope_version.clone(),
            format!("`{}`", short(&rec.scenario.sha256)),
            rec.image.name.clone(),
            format!("`{}`", short(rec.image.recipe_hash())),
            rec.image.kernel_release().to_string(),
            format!(
                "{} harts, {} MiB, {} MHz, quantum {}; timing: {}",
                m.harts,
                m.memory_bytes >> 20,
                m.mhz,
                m.quantum,
                m.timing
            ),
            if rec.workload.env.is_empty() {
                "-".into()
            } else {
                rec.workload
                    .env
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            },
            format!("`{}`", short(&rec.workload.initrd_sha256)),
        ]);
    }
    b.push(Block::Table(t));
    // Runs that went on from a shared boot (`[study] boot`) name its snapshot.
    let shared: Vec<_> = runs
        .iter()
        .zip(&labels)
        .filter_map(|(r, l)| r.record.shared_boot.as_ref().map(|s| (l, s)))
        .collect();
    if !shared.is_empty() {
        b.push(Block::Para(
            "These runs did not boot themselves: each went on from a snapshot of a shared boot, cut at the guest's first phase marker (what was observed before the cut is not in their profiles or observed counters; cycles and instructions are whole).".into(),
        ));
        let mut t = Table::new(
            &[
                "variant",
                "snapshot",
                "cut at",
                "boot model",
                "timing after the cut",
                "from the cache",
            ],
            &[false, false, false, false, false, false],
        );
        for (l, s) in shared {
            t.row(vec![
                l.clone(),
                format!("`{}`", short(&s.key)),
                format!("phase `{}`, cycle {}", s.phase, thousands(s.cycle as i64)),
                s.boot_model.clone(),
                s.timing.clone(),
                if s.cached { "yes" } else { "no" }.into(),
            ]);
        }
        b.push(Block::Table(t));
    }
    let mut seen = BTreeSet::new();
    for r in runs {
        let img = &r.record.image;
        if !seen.insert((img.name.clone(), img.recipe_hash().to_string())) {
            continue;
        }
        b.push(Block::Para(format!(
            "Image `{}` (recipe `{}`), packages:",
            img.name,
            short(img.recipe_hash())
        )));
        let mut t = Table::new(&["package", "version", "sha256", "role"], &[false; 4]);
        for (n, v, s, role) in img.packages() {
            t.row(vec![
                n,
                v,
                if s.is_empty() {
                    "-".into()
                } else {
                    format!("`{}`", short(&s))
                },
                role,
            ]);
        }
        b.push(Block::Table(t));
        for why in img.unverified() {
            b.push(Block::Para(format!(
                "**Not verified against a signed index:** {why}"
            )));
        }
    }
    let mut t = Table::new(&["variant", "artefact", "path"], &[false; 3]);
    for (r, l) in runs.iter().zip(&labels) {
        for a in &r.record.artefacts {
            t.row(vec![l.clone(), a.kind.clone(), format!("`{}`", a.path)]);
        }
    }
    if !t.rows.is_empty() {
        b.push(Block::Table(t));
    }
    b
}

/// The study's `[[tables]]`: one metric, rows × variants, with a chart.
fn pivot_tables(input: &ReportInput, labels: &[String]) -> Vec<Block> {
    let mut b = Vec::new();
    for t in &input.tables {
        b.push(Block::Heading(2, t.title.clone()));
        let mut headers = vec![t.row_header.clone()];
        headers.extend(labels.iter().map(|l| format!("{l} ({})", t.unit.name())));
        let right = std::iter::once(false)
            .chain(labels.iter().map(|_| true))
            .collect();
        let mut table = Table {
            headers,
            right,
            rows: Vec::new(),
        };
        let mut chart = Chart {
            title: t.title.clone(),
            unit: t.unit.name().into(),
            series: labels.to_vec(),
            categories: Vec::new(),
            stacked: false,
        };
        let mut missing: Vec<String> = Vec::new();
        for (row, m) in &t.rows {
            let mut cells = vec![row.clone()];
            let mut values = Vec::new();
            for r in &input.runs {
                let v = m
                    .value(&r.record)
                    .map(|v| in_unit(v, t.unit, r.record.machine.mhz));
                cells.push(match &v {
                    Ok(v) if matches!(t.unit, TableUnit::Cycles | TableUnit::Count) => {
                        format_value(*v, m.format())
                    }
                    Ok(v) => format!("{v:.3}"),
                    Err(e) => {
                        if !missing.contains(&e.reason().to_string()) {
                            missing.push(e.reason().to_string());
                        }
                        "absent".into()
                    }
                });
                values.push(v.unwrap_or(0.0));
            }
            table.row(cells);
            chart.categories.push((row.clone(), values));
        }
        b.push(Block::Para(format!(
            "Each cell is `{}` with the row's name for `{{row}}`.",
            t.template
        )));
        b.push(Block::Table(table));
        if !missing.is_empty() {
            b.push(Block::Para(format!("Absent: {}.", missing.join("; "))));
        }
        b.push(Block::Chart(chart));
    }
    b
}

/// A cycle count in the table's unit of guest time at `mhz`.
fn in_unit(cycles: f64, unit: TableUnit, mhz: u64) -> f64 {
    match unit {
        TableUnit::Cycles | TableUnit::Count => cycles,
        TableUnit::Micros => cycles / mhz.max(1) as f64,
        TableUnit::Millis => cycles / mhz.max(1) as f64 / 1000.0,
    }
}

/// For every `wake[DEVICE:SYSCALL@PHASE]` metric the study names: where the
/// time from the device's interrupt to the caller's return went, per variant,
/// and one path (the median remote one) laid out on the timeline.
fn wake_paths(input: &ReportInput, labels: &[String], headline: &[Metric]) -> Vec<Block> {
    let mut keys: Vec<(String, String, Option<String>)> = Vec::new();
    let table_metrics = input
        .tables
        .iter()
        .flat_map(|t| t.rows.iter().map(|(_, m)| m));
    for m in headline.iter().chain(table_metrics) {
        if let Metric::Wake {
            device,
            syscall,
            phase,
            ..
        } = m
        {
            let k = (device.clone(), syscall.clone(), phase.clone());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    let mut b = Vec::new();
    if keys.is_empty() {
        return b;
    }
    b.push(Block::Heading(2, "Interrupt to wake-up paths".into()));
    b.push(Block::Para(
        "Each row: the calls during which the device interrupted, from the timeline. `irq → return` is from the \
         interrupt to the caller's return to user mode. For calls whose interrupt was taken on another hart \
         (remote), that time splits into the interrupt hart's work until it sends the caller's hart an IPI, the \
         IPI's delivery, and the caller's hart from taking the IPI to the return."
            .into(),
    ));
    let mut t = Table::new(
        &[
            "variant",
            "device:call@phase",
            "calls",
            "remote",
            "irq → return (cycles)",
            "(µs)",
            "irq → IPI sent",
            "IPI → taken",
            "taken → return",
        ],
        &[false, false, true, true, true, true, true, true, true],
    );
    // Median remote path of each variant that has remote paths, slowest first in the report.
    let mut examples: Vec<(String, String, crate::paths::WakePath, u64)> = Vec::new();
    for (device, syscall, phase) in &keys {
        for (r, l) in input.runs.iter().zip(labels) {
            let name = format!(
                "{device}:{syscall}{}",
                phase.as_ref().map(|p| format!("@{p}")).unwrap_or_default()
            );
            let paths = match crate::paths::wake_paths(&r.record, device, syscall, phase.as_deref())
            {
                Ok(p) => p,
                Err(e) => {
                    t.row(vec![
                        l.clone(),
                        name,
                        "-".into(),
                        "-".into(),
                        e.reason().into(),
                        "".into(),
                        "".into(),
                        "".into(),
                        "".into(),
                    ]);
                    continue;
                }
            };
            let mean = |v: Vec<u64>| {
                if v.is_empty() {
                    None
                } else {
                    Some(v.iter().sum::<u64>() as f64 / v.len() as f64)
                }
            };
            let cell = |v: Option<f64>| v.map_or("-".to_string(), |v| thousands(v.round() as i64));
            let remote: Vec<&crate::paths::WakePath> =
                paths.iter().filter(|p| p.remote()).collect();
            let all = mean(paths.iter().map(|p| p.irq_to_return()).collect());
            let sent = mean(
                remote
                    .iter()
                    .filter_map(|p| Some(p.ipi_sent? - p.irq))
                    .collect(),
            );
            let taken = mean(
                remote
                    .iter()
                    .filter_map(|p| Some(p.ipi_received? - p.ipi_sent?))
                    .collect(),
            );
            let back = mean(
                remote
                    .iter()
                    .filter_map(|p| Some(p.span.exit - p.ipi_received?))
                    .collect(),
            );
            let mhz = r.record.machine.mhz.max(1) as f64;
            t.row(vec![
                l.clone(),
                name,
                paths.len().to_string(),
                format!("{}", remote.len()),
                cell(all),
                all.map_or("-".into(), |c| format!("{:.2}", c / mhz)),
                cell(sent),
                cell(taken),
                cell(back),
            ]);
            if !remote.is_empty() && !examples.iter().any(|e| &e.0 == l) {
                let mut sorted: Vec<&&crate::paths::WakePath> = remote.iter().collect();
                sorted.sort_by_key(|p| p.irq_to_return());
                examples.push((
                    l.clone(),
                    syscall.clone(),
                    **sorted[sorted.len() / 2],
                    r.record.machine.mhz,
                ));
            }
        }
    }
    b.push(Block::Table(t));
    // The fastest and the slowest variant's median remote path.
    examples.sort_by_key(|e| e.2.irq_to_return());
    if examples.len() > 2 {
        examples.drain(1..examples.len() - 1);
    }
    for (label, syscall, p, mhz) in examples {
        let run = input
            .runs
            .iter()
            .zip(labels)
            .find(|(_, l)| **l == label)
            .map(|(r, _)| r);
        if let Some(run) = run {
            b.push(Block::Heading(
                3,
                format!("One remote `{syscall}` on the timeline ({label}: its median remote path)"),
            ));
            b.push(Block::Pre(timeline_excerpt(&run.record, &p, mhz)));
            b.push(Block::Para(
                "Traps, IPIs and returns are at their exact cycle; a task switch (`now running`) is noticed at the end of the \
                 run slice it happened in, so it can show up to one slice late."
                    .into(),
            ));
        }
    }
    b
}

/// The events of the harts on a wake-up path during the call, with time
/// from the `ecall`.
fn timeline_excerpt(rec: &RunRecord, p: &crate::paths::WakePath, mhz: u64) -> String {
    use hs_observe::EventKind as K;
    let harts = [p.span.hart, p.irq_hart];
    let mut out = format!("{:>10}  {:>10}  {:<6} event\n", "cycle", "µs", "hart");
    let during: Vec<&hs_observe::Event> = rec
        .observations
        .events
        .iter()
        .filter(|e| e.cycle >= p.span.enter && e.cycle <= p.span.exit && harts.contains(&e.hart))
        .collect();
    // Idle stretches the machine recorded slice by slice, merged.
    let mut merged: Vec<hs_observe::Event> = Vec::new();
    for e in during {
        if let K::WfiIdle { end_cycle } = e.kind {
            if let Some(prev) = merged.iter_mut().rev().find(|m| m.hart == e.hart) {
                if let K::WfiIdle {
                    end_cycle: prev_end,
                } = &mut prev.kind
                {
                    if *prev_end == e.cycle {
                        *prev_end = end_cycle;
                        continue;
                    }
                }
            }
        }
        merged.push(e.clone());
    }
    for e in &merged {
        let what = match &e.kind {
            K::Syscall { number } => format!(
                "ecall: {} ({number})",
                hs_observe::syscall_name(*number).unwrap_or("?")
            ),
            K::SyscallReturn => "return to user mode".into(),
            K::Interrupt { cause, plic_source } => {
                let mut s = hs_observe::cause_name(true, *cause)
                    .map_or(format!("interrupt {cause}"), str::to_string);
                if let Some(src) = plic_source {
                    s.push_str(&format!(" (PLIC source {src})"));
                }
                s
            }
            K::IpiSent { to } => format!("IPI sent to hart {to}"),
            K::IpiReceived { .. } => "IPI taken".into(),
            K::WfiIdle { end_cycle } => format!(
                "idle in wfi until +{}",
                end_cycle.saturating_sub(p.span.enter)
            ),
            K::TaskSwitch { pid, comm, .. } => format!("now running {comm} ({pid})"),
            K::Exception { cause, .. } => hs_observe::cause_name(false, *cause)
                .map_or(format!("exception {cause}"), str::to_string),
            K::ContextSwitch { .. } => "satp written".into(),
            K::PhaseMarker { label } => format!("phase `{label}`"),
            K::Instant { label } => label.clone(),
        };
        let dt = e.cycle - p.span.enter;
        out.push_str(&format!(
            "{:>10}  {:>10.2}  {:<6} {what}\n",
            format!("+{dt}"),
            dt as f64 / mhz.max(1) as f64,
            e.hart
        ));
    }
    out
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(16)]
}

fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// A count's change from the first run's, as a percentage.
fn count_change(first: u64, v: u64) -> String {
    delta(first as f64, v as f64)
}

/// A table of one row per name and, per run, its value and (after the
/// first run) its change from the first run's.
fn compare_table<V: Copy>(
    what: &str,
    labels: &[String],
    rows: impl Iterator<Item = (String, Vec<V>)>,
    cell: impl Fn(V) -> String,
    change: impl Fn(V, V) -> String,
) -> Table {
    let mut headers = vec![what.to_string()];
    let mut right = vec![false];
    for (i, l) in labels.iter().enumerate() {
        headers.push(l.clone());
        right.push(true);
        if i > 0 {
            headers.push(format!("Δ {l}"));
            right.push(true);
        }
    }
    let mut t = Table {
        headers,
        right,
        rows: Vec::new(),
    };
    for (name, vals) in rows {
        let mut row = vec![name];
        for (i, &v) in vals.iter().enumerate() {
            row.push(cell(v));
            if i > 0 {
                row.push(change(vals[0], v));
            }
        }
        t.row(row);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(thousands(222_825_777), "222,825,777");
        assert_eq!(thousands(-1234), "-1,234");
        assert_eq!(delta(68_361_945.0, 67_266_772.0), "-1.60%");
        assert_eq!(delta(264.0, 0.0), "-100.00%");
        assert_eq!(delta(0.0, 5.0), "new");
        assert_eq!(delta(0.0, 0.0), "0.00%");
        assert_eq!(format_value(2.56151, Format::Ratio), "2.5615");
    }
}
