//! The study report's instruction-trace sections (`study.itrace`): the
//! traced window of every run side by side, its cycles by function and by
//! stall cause, the costliest lines, and for each variant the trace lines
//! whose cost moved against the baseline — what `perf annotate` and an
//! instruction trace showed the seed's authors.

use std::collections::BTreeMap;

use hs_observe::ItraceLine;

use crate::doc::{Block, Table};
use crate::report::{delta, thousands, ReportRun};

/// Lines shown in the "moved" and "costliest" tables.
const TOP_LINES: usize = 20;
/// Source lines shown side by side.
const TOP_SOURCE_LINES: usize = 25;

fn count(v: u64) -> String {
    thousands(v.min(i64::MAX as u64) as i64)
}

fn function(l: &ItraceLine) -> String {
    l.symbol
        .as_ref()
        .map_or_else(|| "[unknown]".to_string(), |s| s.name.clone())
}

fn place(l: &ItraceLine) -> String {
    match &l.symbol {
        Some(s) => format!("{}+{:#x}", s.name, s.offset),
        None => format!("{:#x}", l.pc),
    }
}

/// One instruction of the trace as the "moved" table matches it: a patch
/// shifts offsets, so lines are matched by function, instruction text and
/// occurrence (the n-th `ld a5,8(a0)` in `sys_getppid`), not by address.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct LineKey {
    function: String,
    disasm: String,
    nth: usize,
}

struct LineCost {
    place: String,
    cycles: u64,
    stall: String,
}

fn keyed(lines: &[ItraceLine]) -> BTreeMap<LineKey, LineCost> {
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for l in lines {
        let f = function(l);
        let n = seen.entry((f.clone(), l.disasm.clone())).or_default();
        out.insert(
            LineKey {
                function: f,
                disasm: l.disasm.clone(),
                nth: *n,
            },
            LineCost {
                place: place(l),
                cycles: l.cycles,
                stall: l.stall.as_str().to_string(),
            },
        );
        *n += 1;
    }
    out
}

/// The sections; nothing when no run carries a trace.
pub fn itrace_sections(runs: &[ReportRun], labels: &[String]) -> Vec<Block> {
    let traces: Vec<&[ItraceLine]> = runs
        .iter()
        .map(|r| r.record.observations.itrace.as_slice())
        .collect();
    if traces.iter().all(|t| t.is_empty()) {
        return Vec::new();
    }
    let mut b = vec![Block::Heading(2, "Instruction trace".into())];
    b.push(Block::Para(
        "The traced window of every run (`study.itrace`), one line per retired instruction with the cycles the timing model charged it (1 + its hooks' extra cycles) and the stall cause that cost the most; each run's full trace, with per-line cache lines touched and an annotated view, is its `itrace.txt`.".into(),
    ));

    // Summary: instructions, cycles, and the stall causes' shares.
    let mut causes: Vec<String> = Vec::new();
    for t in &traces {
        for l in t.iter() {
            let c = l.stall.as_str().to_string();
            if !causes.contains(&c) {
                causes.push(c);
            }
        }
    }
    causes.sort();
    let mut headers = vec![
        "variant".to_string(),
        "instructions".into(),
        "cycles".into(),
        "Δ cycles".into(),
    ];
    headers.extend(causes.iter().map(|c| format!("cycles with stall `{c}`")));
    let mut t = Table {
        right: headers.iter().enumerate().map(|(i, _)| i > 0).collect(),
        headers,
        rows: Vec::new(),
    };
    let base_cycles: u64 = traces[0].iter().map(|l| l.cycles).sum();
    for (tr, l) in traces.iter().zip(labels) {
        let cycles: u64 = tr.iter().map(|l| l.cycles).sum();
        let mut row = vec![
            l.clone(),
            count(tr.len() as u64),
            count(cycles),
            if tr.is_empty() {
                "-".into()
            } else {
                delta(base_cycles as f64, cycles as f64)
            },
        ];
        for c in &causes {
            let s: u64 = tr
                .iter()
                .filter(|x| x.stall.as_str() == c)
                .map(|x| x.cycles)
                .sum();
            row.push(count(s));
        }
        t.rows.push(row);
    }
    b.push(Block::Table(t));

    // Cycles by function, variants side by side (baseline's order first).
    b.push(Block::Heading(
        3,
        "Cycles by function in the traced window".into(),
    ));
    let per: Vec<BTreeMap<String, (u64, u64)>> = traces
        .iter()
        .map(|tr| {
            let mut m: BTreeMap<String, (u64, u64)> = BTreeMap::new();
            for l in tr.iter() {
                let e = m.entry(function(l)).or_default();
                e.0 += l.cycles;
                e.1 += 1;
            }
            m
        })
        .collect();
    let mut names: Vec<String> = Vec::new();
    for m in &per {
        let mut v: Vec<(&String, &(u64, u64))> = m.iter().collect();
        v.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| a.0.cmp(b.0)));
        for (n, _) in v {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    let mut headers = vec!["function".to_string()];
    for l in labels {
        headers.push(format!("{l} cycles (insns)"));
    }
    let mut t = Table {
        right: headers.iter().enumerate().map(|(i, _)| i > 0).collect(),
        headers,
        rows: Vec::new(),
    };
    for n in &names {
        let mut row = vec![format!("`{n}`")];
        for m in &per {
            row.push(m.get(n).map_or("-".into(), |(c, i)| {
                format!("{} ({})", count(*c), count(*i))
            }));
        }
        t.rows.push(row);
    }
    b.push(Block::Table(t));

    // Source lines (kernels whose vmlinux has line tables), variants side by side.
    let by_source: Vec<BTreeMap<&str, (u64, u64)>> = traces
        .iter()
        .map(|tr| {
            let mut m: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
            for l in tr.iter() {
                if let Some(src) = l.source.as_deref() {
                    let e = m.entry(src).or_default();
                    e.0 += l.cycles;
                    e.1 += 1;
                }
            }
            m
        })
        .collect();
    if by_source.iter().any(|m| !m.is_empty()) {
        b.push(Block::Heading(
            3,
            "Cycles by source line in the traced window".into(),
        ));
        b.push(Block::Para(format!(
            "From the kernel's DWARF line tables (an inlined function's lines under its own file), as `perf annotate` places instructions; the {TOP_SOURCE_LINES} dearest lines of any variant, cycles (instructions). Variants whose kernel has no line tables (Debian's) show `-`."
        )));
        let mut all: BTreeMap<&str, u64> = BTreeMap::new();
        for m in &by_source {
            for (k, v) in m {
                let e = all.entry(k).or_default();
                *e = (*e).max(v.0);
            }
        }
        let mut keys: Vec<(&str, u64)> = all.into_iter().collect();
        keys.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let mut headers = vec!["source line".to_string()];
        headers.extend(labels.iter().cloned());
        let mut t = Table {
            right: headers.iter().enumerate().map(|(i, _)| i > 0).collect(),
            headers,
            rows: Vec::new(),
        };
        for (k, _) in keys.into_iter().take(TOP_SOURCE_LINES) {
            let mut row = vec![format!("`{k}`")];
            for m in &by_source {
                row.push(m.get(k).map_or("-".into(), |(c, i)| {
                    format!("{} ({})", count(*c), count(*i))
                }));
            }
            t.rows.push(row);
        }
        b.push(Block::Table(t));
    }

    // The baseline's costliest lines.
    if !traces[0].is_empty() {
        b.push(Block::Heading(3, format!("Costliest lines: {}", labels[0])));
        let mut v: Vec<&ItraceLine> = traces[0].iter().collect();
        v.sort_by(|a, b| b.cycles.cmp(&a.cycles).then(a.cycle.cmp(&b.cycle)));
        let mut t = Table::new(
            &["line", "instruction", "cycles", "stall", "cache lines"],
            &[false, false, true, false, false],
        );
        for l in v.into_iter().take(TOP_LINES) {
            let lines: Vec<String> = l
                .lines
                .iter()
                .map(|x| {
                    format!(
                        "{}:{:#x}:{}",
                        x.access.letter(),
                        x.line,
                        if x.hit { "hit" } else { "miss" }
                    )
                })
                .collect();
            t.row(vec![
                format!("`{}`", place(l)),
                format!("`{}`", l.disasm),
                count(l.cycles),
                l.stall.as_str().to_string(),
                lines.join(" "),
            ]);
        }
        b.push(Block::Table(t));
    }

    // Per variant: the lines whose cost moved.
    let base = keyed(traces[0]);
    for (i, (tr, l)) in traces.iter().zip(labels).enumerate().skip(1) {
        if tr.is_empty() || traces[0].is_empty() {
            continue;
        }
        let other = keyed(tr);
        let mut moved: Vec<(i64, String, String, String, String, String)> = Vec::new();
        let (mut only_base, mut only_other) = ((0usize, 0u64), (0usize, 0u64));
        for (k, bc) in &base {
            match other.get(k) {
                Some(oc) if oc.cycles != bc.cycles => moved.push((
                    oc.cycles as i64 - bc.cycles as i64,
                    format!("`{}`", bc.place),
                    format!("`{}`", k.disasm),
                    format!("{} ({})", count(bc.cycles), bc.stall),
                    format!("{} ({})", count(oc.cycles), oc.stall),
                    format!("{:+}", oc.cycles as i64 - bc.cycles as i64),
                )),
                Some(_) => {}
                None => {
                    only_base.0 += 1;
                    only_base.1 += bc.cycles;
                    moved.push((
                        -(bc.cycles as i64),
                        format!("`{}`", bc.place),
                        format!("`{}`", k.disasm),
                        format!("{} ({})", count(bc.cycles), bc.stall),
                        "gone".into(),
                        format!("{:+}", -(bc.cycles as i64)),
                    ));
                }
            }
        }
        for (k, oc) in &other {
            if !base.contains_key(k) {
                only_other.0 += 1;
                only_other.1 += oc.cycles;
                moved.push((
                    oc.cycles as i64,
                    format!("`{}`", oc.place),
                    format!("`{}`", k.disasm),
                    "new".into(),
                    format!("{} ({})", count(oc.cycles), oc.stall),
                    format!("{:+}", oc.cycles as i64),
                ));
            }
        }
        let other_cycles: u64 = tr.iter().map(|l| l.cycles).sum();
        b.push(Block::Heading(
            3,
            format!("Trace lines whose cost moved: {l} against {}", labels[0]),
        ));
        // Where the difference sits, by function and by stall cause.
        let mut by_fn: BTreeMap<String, i64> = BTreeMap::new();
        let mut by_cause: BTreeMap<String, i64> = BTreeMap::new();
        for (sign, t) in [(-1i64, traces[0]), (1, *tr)] {
            for x in t.iter() {
                *by_fn.entry(function(x)).or_default() += sign * x.cycles as i64;
                *by_cause.entry(x.stall.as_str().to_string()).or_default() +=
                    sign * x.cycles as i64;
            }
        }
        let biggest = |m: BTreeMap<String, i64>| -> String {
            let mut v: Vec<(String, i64)> = m.into_iter().filter(|(_, d)| *d != 0).collect();
            v.sort_by(|a, b| b.1.abs().cmp(&a.1.abs()).then_with(|| a.0.cmp(&b.0)));
            let parts: Vec<String> = v
                .iter()
                .take(4)
                .map(|(n, d)| format!("`{n}` {d:+}"))
                .collect();
            if parts.is_empty() {
                "none".into()
            } else {
                parts.join(", ")
            }
        };
        b.push(Block::Para(format!(
            "Where the {:+} cycles are — by function: {}; by stall cause: {}.",
            other_cycles as i64 - base_cycles as i64,
            biggest(by_fn),
            biggest(by_cause),
        )));
        b.push(Block::Para(format!(
            "Lines are matched by function, instruction and occurrence (a patch shifts offsets). {} of the baseline's lines are gone ({} cycles), {} are new ({} cycles); the window went from {} to {} cycles ({}). The {} largest moves, by size:",
            only_base.0,
            count(only_base.1),
            only_other.0,
            count(only_other.1),
            count(base_cycles),
            count(other_cycles),
            delta(base_cycles as f64, other_cycles as f64),
            TOP_LINES.min(moved.len()),
        )));
        if moved.is_empty() {
            b.push(Block::Para(format!(
                "No line of {l}'s trace costs differently from {}.",
                labels[0]
            )));
            continue;
        }
        moved.sort_by(|a, b| b.0.abs().cmp(&a.0.abs()).then_with(|| a.1.cmp(&b.1)));
        let mut t = Table::new(
            &[
                "line (baseline place)",
                "instruction",
                &format!("{} cycles (stall)", labels[0]),
                &format!("{l} cycles (stall)"),
                "Δ cycles",
            ],
            &[false, false, true, true, true],
        );
        for m in moved.into_iter().take(TOP_LINES) {
            t.row(vec![m.1, m.2, m.3, m.4, m.5]);
        }
        let _ = i;
        b.push(Block::Table(t));
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use hs_observe::{Privilege, StallCause, SymbolOffset};

    fn line(name: &str, offset: u64, disasm: &str, cycles: u64) -> ItraceLine {
        ItraceLine {
            hart: 0,
            cycle: offset,
            pc: 0x1000 + offset,
            privilege: Privilege::Supervisor,
            symbol: Some(SymbolOffset {
                name: name.into(),
                offset,
            }),
            disasm: disasm.into(),
            cycles,
            stall: if cycles > 1 {
                StallCause::Mem
            } else {
                StallCause::None
            },
            lines: vec![],
            source: None,
        }
    }

    #[test]
    fn moved_lines_match_by_text_and_occurrence_not_offset() {
        let a = vec![
            line("f", 0, "ld a5,8(a0)", 10),
            line("f", 4, "ld a5,8(a0)", 3),
            line("f", 8, "csrw sstatus,a1", 7),
        ];
        // the patch removed the CSR write, and shifted the loads by 2
        let b2 = vec![
            line("f", 2, "ld a5,8(a0)", 10),
            line("f", 6, "ld a5,8(a0)", 1),
        ];
        let ka = keyed(&a);
        let kb = keyed(&b2);
        assert_eq!(ka.len(), 3);
        let k1 = LineKey {
            function: "f".into(),
            disasm: "ld a5,8(a0)".into(),
            nth: 1,
        };
        assert_eq!((ka[&k1].cycles, kb[&k1].cycles), (3, 1));
        assert_eq!(kb[&k1].place, "f+0x6");
    }
}
