//! Two report sections that appear only when a run has their data: the
//! values the guest measured and sent ([`crate::guest_metrics`]), and the
//! cross-hart IPIs of the timeline ([`crate::ipis`]) with an excerpt that
//! shows when each was sent, released and taken.

use hs_observe::{cause_name, Event, EventKind};

use crate::doc::{Block, Chart, Table};
use crate::guest_metrics::time_unit_ns;
use crate::ipis::{excerpt_worthy, IpiLatencies};
use crate::report::{thousands, ReportRun};

/// How many timeline events the IPI excerpt of one run shows.
const EXCERPT: usize = 14;

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 9e15 {
        thousands(v as i64)
    } else {
        format!("{v:.3}")
    }
}

/// "Guest-reported values": every `metrics` value, per run, with its time
/// in cycles; a chart of the time values. Nothing when no run has any.
pub fn guest_metrics(runs: &[ReportRun], labels: &[String]) -> Vec<Block> {
    let mut names: Vec<String> = Vec::new();
    for r in runs {
        for n in r.record.guest_metrics.keys() {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    if names.is_empty() {
        return Vec::new();
    }
    let mut b = vec![Block::Heading(2, "Guest-reported values".into())];
    b.push(Block::Para(
        "What the workload measured itself (guest time) and sent on its `metrics` channel; a time is also shown in core cycles at the run's clock. Metrics `guest[NAME]` and `guest[NAME].cycles`.".into(),
    ));
    let mut headers = vec!["value".to_string(), "unit".to_string()];
    let mut right = vec![false, false];
    for l in labels {
        headers.push(l.clone());
        headers.push(format!("{l} cycles"));
        right.extend([true, true]);
    }
    let mut t = Table {
        headers,
        right,
        rows: Vec::new(),
    };
    let mut chart_unit: Option<String> = None;
    let mut chart = Chart {
        title: String::new(),
        unit: String::new(),
        series: labels.to_vec(),
        categories: Vec::new(),
        stacked: false,
    };
    for n in &names {
        let unit = runs
            .iter()
            .find_map(|r| r.record.guest_metrics.get(n))
            .map(|v| v.unit.clone())
            .unwrap_or_default();
        let mut row = vec![format!("`{n}`"), unit.clone()];
        for r in runs {
            match r.record.guest_metrics.get(n) {
                Some(v) => {
                    row.push(num(v.value));
                    row.push(match v.ns_per_unit() {
                        Some(ns) => thousands(
                            (v.value * ns * r.record.machine.mhz as f64 / 1e3).round() as i64,
                        ),
                        None => "-".into(),
                    });
                }
                None => row.extend(["-".to_string(), "-".to_string()]),
            }
        }
        t.row(row);
        // One chart of the values in the first time unit met.
        if time_unit_ns(&unit).is_some() && chart_unit.as_deref().is_none_or(|u| u == unit) {
            chart_unit = Some(unit.clone());
            let vals = runs
                .iter()
                .map(|r| {
                    r.record
                        .guest_metrics
                        .get(n)
                        .filter(|v| v.unit == unit)
                        .map_or(0.0, |v| v.value)
                })
                .collect();
            chart.categories.push((n.clone(), vals));
        }
    }
    b.push(Block::Table(t));
    if let Some(u) = chart_unit {
        chart.title = format!("guest-reported times ({u})");
        chart.unit = u;
        b.push(Block::Chart(chart));
    }
    b
}

fn describe(e: &Event) -> String {
    match &e.kind {
        EventKind::IpiSent { to } => format!("sends an IPI to hart {to} (msip write)"),
        EventKind::IpiReceived { .. } => "takes the machine software interrupt (the IPI)".into(),
        EventKind::Interrupt { cause, .. } => format!(
            "takes the {}",
            cause_name(true, *cause).unwrap_or("interrupt")
        ),
        EventKind::Instant { label } => label.clone(),
        _ => String::new(),
    }
}

/// "Cross-hart IPIs": per run, how many, the send → taken latency
/// distribution, the knob's counters, and a timeline excerpt. Nothing when
/// no run has a cross-hart IPI on its timeline.
pub fn ipis(runs: &[ReportRun], labels: &[String]) -> Vec<Block> {
    let lat: Vec<IpiLatencies> = runs
        .iter()
        .map(|r| IpiLatencies::from_events(&r.record.observations.events))
        .collect();
    if lat.iter().all(|l| l.sent == 0) {
        return Vec::new();
    }
    let mut b = vec![Block::Heading(2, "Cross-hart IPIs".into())];
    b.push(Block::Para(format!(
        "From the timeline: every software interrupt one hart raised on another (CLINT `msip` write, here OpenSBI's on Linux's behalf) and the target's machine software-interrupt trap that took it. {} Metrics `ipi_latency[…]`; the `clint.*` rows are the machine's `[ipi]` knob counters.",
        "Each send is paired with the target's first software-interrupt trap at or after it (one trap may take several sends: MSIP is one bit); an IPI that wakes a hart without a trap (OpenSBI's stopped-hart wait polls `mip`) pairs with a later trap."
    )));
    let mut headers = vec!["".to_string()];
    let mut right = vec![false];
    for l in labels {
        headers.push(l.clone());
        right.push(true);
    }
    let mut t = Table {
        headers,
        right,
        rows: Vec::new(),
    };
    let mut row = |name: &str, f: &dyn Fn(usize) -> String| {
        let mut r = vec![name.to_string()];
        r.extend((0..runs.len()).map(f));
        t.row(r);
    };
    row("cross-hart IPIs sent", &|i| thousands(lat[i].sent as i64));
    row("taken by the target", &|i| {
        thousands(lat[i].latencies.len() as i64)
    });
    row("not taken before the run ended", &|i| {
        thousands(lat[i].untaken as i64)
    });
    for (name, p) in [
        ("min", 0.0),
        ("median", 50.0),
        ("p90", 90.0),
        ("p99", 99.0),
        ("max", 100.0),
    ] {
        row(&format!("send → taken, {name}, cycles"), &|i| {
            lat[i]
                .percentile(p)
                .map_or("-".into(), |v| thousands(v as i64))
        });
        row(&format!("send → taken, {name}, µs"), &|i| {
            lat[i].percentile(p).map_or("-".into(), |v| {
                format!("{:.3}", v as f64 / runs[i].record.machine.mhz as f64)
            })
        });
    }
    row(
        "knob releases at the target's timer tick (timeline)",
        &|i| thousands(lat[i].released_at_tick as i64),
    );
    for c in [
        "clint.ipis_cross",
        "clint.ipis_delayed",
        "clint.ipis_held_for_tick",
        "clint.ipis_released_at_tick",
        "clint.ipis_passed_no_timer",
        "clint.ipi_held_max_cycles",
    ] {
        row(&format!("`{c}`"), &|i| {
            runs[i]
                .record
                .counters
                .devices
                .get(c)
                .map_or("-".into(), |v| thousands(*v as i64))
        });
    }
    b.push(Block::Table(t));
    b.push(Block::Chart(Chart {
        title: "send → taken, cycles".into(),
        unit: "cycles".into(),
        series: labels.to_vec(),
        categories: [
            ("median", 50.0),
            ("p90", 90.0),
            ("p99", 99.0),
            ("max", 100.0),
        ]
        .iter()
        .map(|(n, p)| {
            (
                n.to_string(),
                lat.iter()
                    .map(|l| l.percentile(*p).unwrap_or(0) as f64)
                    .collect(),
            )
        })
        .collect(),
        stacked: false,
    }));

    // The excerpt: in the phase with the most cross-hart sends per cycle
    // (at least four) of the first run that has one, and in the phase of
    // that name in every other run, so the variants show the same moment
    // (a knob that holds IPIs stretches that phase, and another phase can
    // then have the higher rate); a run without sends in it takes its own
    // busiest phase. From the phase's first send on; a hart's consecutive
    // wfi spans (it re-checks at every turn) are one row.
    fn cross(e: &Event) -> bool {
        matches!(e.kind, EventKind::IpiSent { to } if to != e.hart)
    }
    fn sends_in(obs: &hs_observe::Observations, p: &hs_observe::Phase) -> usize {
        obs.events
            .iter()
            .filter(|e| cross(e) && e.cycle >= p.start_cycle && e.cycle < p.end_cycle)
            .count()
    }
    fn busiest(obs: &hs_observe::Observations) -> Option<&hs_observe::Phase> {
        let rate = |p: &hs_observe::Phase| {
            let n = sends_in(obs, p);
            if n < 4 {
                0
            } else {
                (n as u128 * 1_000_000_000 / p.cycles().max(1) as u128) as u64
            }
        };
        obs.phases
            .iter()
            .filter(|p| rate(p) > 0)
            .max_by_key(|p| (rate(p), std::cmp::Reverse(p.start_cycle)))
    }
    let shown = runs
        .iter()
        .find_map(|r| busiest(&r.record.observations))
        .map(|p| p.label.clone());
    for (r, l) in runs.iter().zip(labels) {
        let obs = &r.record.observations;
        let same = shown.as_deref().and_then(|name| {
            obs.phases
                .iter()
                .find(|p| p.label == name && sends_in(obs, p) > 0)
        });
        let Some(p) = same.or_else(|| busiest(obs)) else {
            continue;
        };
        let Some(first) = obs
            .events
            .iter()
            .position(|e| cross(e) && e.cycle >= p.start_cycle && e.cycle < p.end_cycle)
        else {
            continue;
        };
        // (cycle, hart, what, end of a wfi row)
        let mut rows: Vec<(u64, u16, String, Option<u64>)> = Vec::new();
        for e in obs.events[first..].iter().filter(|e| excerpt_worthy(e)) {
            if let EventKind::WfiIdle { end_cycle } = e.kind {
                if let Some(last) = rows.iter_mut().rev().find(|row| row.1 == e.hart) {
                    if let Some(end) = last.3.as_mut() {
                        *end = end_cycle;
                        continue;
                    }
                }
                if rows.len() == EXCERPT {
                    break;
                }
                rows.push((e.cycle, e.hart, String::new(), Some(end_cycle)));
                continue;
            }
            if rows.len() == EXCERPT {
                break;
            }
            rows.push((e.cycle, e.hart, describe(e), None));
        }
        // A release comes before the trap it lets happen at the same cycle.
        rows.sort_by_key(|row| (row.0, row.1, !row.2.starts_with(crate::ipis::RELEASE_MARK)));
        let mut t = Table::new(
            &["cycle", "µs into the phase", "hart", "event"],
            &[true, true, true, false],
        );
        let mhz = r.record.machine.mhz as f64;
        for (cycle, hart, what, end) in rows {
            let what = match end {
                Some(end) => format!(
                    "sleeps in wfi until cycle {} ({:.3} µs)",
                    thousands(end as i64),
                    end.saturating_sub(cycle) as f64 / mhz
                ),
                None => what,
            };
            t.row(vec![
                thousands(cycle as i64),
                format!("{:.3}", cycle.saturating_sub(p.start_cycle) as f64 / mhz),
                hart.to_string(),
                what,
            ]);
        }
        b.push(Block::Heading(
            3,
            format!("{l}: timeline from the first IPI of phase `{}`", p.label),
        ));
        b.push(Block::Table(t));
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest_metrics::GuestValue;
    use crate::report::{ReportInput, ReportRun};

    fn run(variant: &str, rtt_us: f64, ipi_at: u64) -> ReportRun {
        let mut record =
            crate::testdata::run(variant, 50_000_000, &[("ipiping pipe", 40_000_000)], true);
        record.guest_metrics.insert(
            "rtt_us.p50".into(),
            GuestValue {
                value: rtt_us,
                unit: "us".into(),
            },
        );
        record.guest_metrics.insert(
            "rounds".into(),
            GuestValue {
                value: 200.0,
                unit: "count".into(),
            },
        );
        let start = record.observations.phases[1].start_cycle;
        let ev = &mut record.observations.events;
        for i in 0..4 {
            let at = start + 1_000 + i * 10_000_000;
            ev.push(Event {
                hart: 0,
                cycle: at,
                kind: EventKind::IpiSent { to: 1 },
            });
            ev.push(Event {
                hart: 1,
                cycle: at + 1,
                kind: EventKind::WfiIdle {
                    end_cycle: at + ipi_at / 2,
                },
            });
            ev.push(Event {
                hart: 1,
                cycle: at + ipi_at / 2,
                kind: EventKind::WfiIdle {
                    end_cycle: at + ipi_at,
                },
            });
            ev.push(Event {
                hart: 1,
                cycle: at + ipi_at,
                kind: EventKind::IpiReceived { from: None },
            });
        }
        ev.sort_by_key(|e| (e.cycle, e.hart));
        ReportRun {
            id: 1,
            batch: "b".into(),
            record,
        }
    }

    /// Every variant's excerpt shows the phase the first run's busiest
    /// phase is named after, even where held IPIs stretched that phase so
    /// that another one sends at a higher rate; a run with no send in it
    /// falls back to its own busiest phase.
    #[test]
    fn every_excerpt_shows_the_phase_the_first_run_picked() {
        let mut drop = run("drop", 6_012.25, 4_000_000);
        let mut quiet = run("quiet", 31.5, 2_000);
        for r in [&mut drop, &mut quiet] {
            let obs = &mut r.record.observations;
            let end = obs.phases.last().unwrap().end_cycle;
            obs.phases.push(hs_observe::Phase {
                index: obs.phases.len() as u32 + 1,
                label: "ipiping done".into(),
                start_cycle: end,
                end_cycle: end + 2_000_000,
                harts: vec![],
            });
            for i in 0..8 {
                obs.events.push(Event {
                    hart: 1,
                    cycle: end + 100 + i * 1_000,
                    kind: EventKind::IpiSent { to: 0 },
                });
            }
        }
        // `quiet` sent nothing in its pipe phase
        let pipe = quiet.record.observations.phases[1].clone();
        quiet
            .record
            .observations
            .events
            .retain(|e| e.cycle < pipe.start_cycle || e.cycle >= pipe.end_cycle);
        let runs = vec![run("deliver", 31.5, 2_000), drop, quiet];
        let labels: Vec<String> = ["deliver", "drop", "quiet"].map(String::from).into();
        let md = crate::doc::markdown(&ipis(&runs, &labels));
        for v in ["deliver", "drop"] {
            assert!(
                md.contains(&format!(
                    "### {v}: timeline from the first IPI of phase `ipiping pipe`"
                )),
                "{md}"
            );
        }
        assert!(
            md.contains("### quiet: timeline from the first IPI of phase `ipiping done`"),
            "{md}"
        );
    }

    #[test]
    fn sections_show_guest_values_in_cycles_and_ipi_latencies() {
        let input = ReportInput {
            title: "t".into(),
            description: String::new(),
            runs: vec![
                run("deliver", 31.5, 2_000),
                run("drop", 6_012.25, 4_000_000),
            ],
            headline: vec![],
            checks: vec![],
            tables: vec![],
            repeats: vec![],
            not_run: Vec::new(),
            failed: Vec::new(),
        };
        let md = crate::doc::markdown(&crate::report::build(&input));
        assert!(md.contains("## Guest-reported values"), "{md}");
        assert!(
            md.contains("| `rtt_us.p50` | us | 31.500 | 31,500 | 6012.250 | 6,012,250 |"),
            "{md}"
        );
        assert!(
            md.contains("| `rounds` | count | 200 | - | 200 | - |"),
            "{md}"
        );
        assert!(md.contains("## Cross-hart IPIs"), "{md}");
        assert!(
            md.contains("| send → taken, median, cycles | 2,000 | 4,000,000 |"),
            "{md}"
        );
        assert!(
            md.contains("| send → taken, median, µs | 2.000 | 4000.000 |"),
            "{md}"
        );
        assert!(md.contains("sends an IPI to hart 1"), "{md}");
        assert!(
            md.contains("### drop: timeline from the first IPI of phase `ipiping pipe`"),
            "{md}"
        );
        assert!(
            md.contains(
                "| 10,001,001 | 1.001 | 1 | sleeps in wfi until cycle 14,001,000 (3999.999 µs) |"
            ),
            "two wfi spans are one row:\n{md}"
        );
        // Runs without either kind of data get neither section.
        let plain = ReportInput {
            runs: vec![ReportRun {
                id: 1,
                batch: "b".into(),
                record: crate::testdata::run("A", 10, &[("x", 5)], true),
            }],
            ..input
        };
        let md = crate::doc::markdown(&crate::report::build(&plain));
        assert!(!md.contains("Guest-reported") && !md.contains("Cross-hart IPIs"));
    }
}
