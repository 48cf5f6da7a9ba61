//! `hartscope history` and `hartscope compare` over the results store.

use std::fmt::Write;

use crate::error::Result;
use crate::metric::{Format, Metric};
use crate::report::{delta, format_value, ReportInput, ReportRun};
use crate::scenario::report_view;
use crate::store::{HistoryRow, Store};

/// The runs as a ladder, newest first: each rung's headline metric and its
/// change from the previous (older) run of the same study.
pub fn ladder(rows: &[HistoryRow]) -> String {
    if rows.is_empty() {
        return "no runs stored\n".into();
    }
    let headers = [
        "run",
        "finished",
        "study",
        "variant",
        "exit",
        "headline metric",
        "value",
        "Δ previous",
    ];
    let mut table: Vec<Vec<String>> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let fmt = |v: f64| {
            let f = r
                .headline_metric
                .as_deref()
                .and_then(|m| m.parse::<Metric>().ok())
                .map_or(Format::Count, |m| m.format());
            format_value(v, f)
        };
        let previous = rows[i + 1..]
            .iter()
            .find(|o| o.study == r.study && o.headline_metric == r.headline_metric);
        let d = match (previous, r.headline_value) {
            (Some(p), Some(v)) => match p.headline_value {
                Some(pv) => format!("{} (vs run {})", delta(pv, v), p.id),
                None => "-".into(),
            },
            _ => "-".into(),
        };
        let variant = if r.repeat > 0 {
            format!("{} (repeat {})", r.variant, r.repeat + 1)
        } else {
            r.variant.clone()
        };
        // A failed run has no value, so no delta: its failure is spelled out below the table.
        let (exit, metric, value, d) = if r.failure.is_some() {
            ("FAILED".into(), "-".into(), "-".into(), "-".into())
        } else {
            (
                r.exit_status.map_or("-".into(), |s| s.to_string()),
                r.headline_metric.clone().unwrap_or_else(|| "-".into()),
                r.headline_value.map_or("-".into(), fmt),
                d,
            )
        };
        table.push(vec![
            r.id.to_string(),
            r.finished_at.clone(),
            r.study.clone(),
            variant,
            exit,
            metric,
            value,
            d,
        ]);
    }
    let widths: Vec<usize> = (0..headers.len())
        .map(|c| {
            table
                .iter()
                .map(|r| r[c].chars().count())
                .chain([headers[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(c, s)| {
                let pad = widths[c].saturating_sub(s.chars().count());
                // Numbers right-aligned, text left-aligned.
                if matches!(c, 0 | 4 | 6) {
                    format!("{}{s}", " ".repeat(pad))
                } else {
                    format!("{s}{}", " ".repeat(pad))
                }
            })
            .collect();
        let _ = writeln!(out, "{}", parts.join("  ").trim_end());
    };
    line(headers.to_vec(), &mut out);
    line(
        widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str)
            .collect(),
        &mut out,
    );
    for r in &table {
        line(r.iter().map(String::as_str).collect(), &mut out);
    }
    for r in rows.iter().filter(|r| r.failure.is_some()) {
        let _ = writeln!(
            out,
            "\nrun {} ({}/{}) FAILED after {} cycles: {}",
            r.id,
            r.study,
            r.variant,
            crate::report::thousands(r.cycles as i64),
            r.failure.as_deref().unwrap_or_default()
        );
        for l in &r.console_tail {
            let _ = writeln!(out, "    | {l}");
        }
    }
    out
}

/// Two (or more) stored runs side by side, with the first run's scenario
/// deciding the headline metrics and checks.
pub fn compare(store: &Store, ids: &[i64]) -> Result<ReportInput> {
    let mut runs = Vec::new();
    for &id in ids {
        let s = store.get(id)?;
        runs.push(ReportRun {
            id: s.id,
            batch: s.batch,
            record: s.record,
        });
    }
    let (headline, checks, tables, note) = match runs.first() {
        Some(r) => match report_view(&r.record.scenario.text) {
            Ok((h, c, t)) => (h, c, t, String::new()),
            Err(why) => (Vec::new(), Vec::new(), Vec::new(), format!(" (the stored scenario of run {} no longer parses: {why}; default metrics shown)", r.id)),
        },
        None => (Vec::new(), Vec::new(), Vec::new(), String::new()),
    };
    let studies: Vec<String> = runs
        .iter()
        .map(|r| format!("run {} ({}/{})", r.id, r.record.study, r.record.variant))
        .collect();
    Ok(ReportInput {
        title: format!(
            "Compare: {}",
            ids.iter()
                .map(|i| format!("run {i}"))
                .collect::<Vec<_>>()
                .join(" vs ")
        ),
        description: format!(
            "Stored runs side by side: {}. Deltas are against the first{note}.",
            studies.join(", ")
        ),
        runs,
        headline,
        checks,
        tables,
        repeats: Vec::new(),
        not_run: Vec::new(),
        failed: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: i64, study: &str, variant: &str, v: Option<f64>) -> HistoryRow {
        HistoryRow {
            id,
            study: study.into(),
            variant: variant.into(),
            repeat: 0,
            finished_at: format!("2026-01-0{id}T00:00:00Z"),
            exit_status: Some(0),
            cycles: 1,
            headline_metric: Some("cycles".into()),
            headline_value: v,
            failure: None,
            console_tail: Vec::new(),
        }
    }

    #[test]
    fn ladder_deltas_are_to_the_previous_run_of_the_same_study() {
        let rows = vec![
            row(4, "s", "B", Some(90.0)),
            row(3, "t", "A", Some(5.0)),
            row(2, "s", "A", Some(100.0)),
            row(1, "s", "A", None),
        ];
        let text = ladder(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("run  finished"), "{text}");
        assert!(lines[2].ends_with("90  -10.00% (vs run 2)"), "{text}");
        assert!(
            lines[3].ends_with("5  -"),
            "another study has no previous rung: {text}"
        );
        assert!(lines[4].ends_with("100  -"), "{text}");
        assert_eq!(ladder(&[]), "no runs stored\n");
    }

    #[test]
    fn a_failed_run_is_a_rung_without_value_and_its_console_follows() {
        let mut failed = row(3, "s", "B", None);
        failed.exit_status = None;
        failed.headline_metric = None;
        failed.failure = Some("the guest kernel panicked (Kernel panic - not syncing: x)".into());
        failed.console_tail = vec!["[ 1.0] end Kernel panic - not syncing: x".into()];
        let rows = vec![
            row(4, "s", "A", Some(90.0)),
            failed,
            row(2, "s", "A", Some(100.0)),
        ];
        let text = ladder(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[2].ends_with("-10.00% (vs run 2)"),
            "the delta skips the failed run: {text}"
        );
        assert!(lines[3].contains("FAILED"), "{text}");
        let cells: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(cells[4..], ["FAILED", "-", "-", "-"], "{text}");
        assert!(
            text.contains(
                "run 3 (s/B) FAILED after 1 cycles: the guest kernel panicked (Kernel panic"
            ),
            "{text}"
        );
        assert!(
            text.contains("    | [ 1.0] end Kernel panic - not syncing: x"),
            "{text}"
        );
    }
}
