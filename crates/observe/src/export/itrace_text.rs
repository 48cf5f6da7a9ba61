//! Instruction traces as text, and a `perf annotate`-style view of where a
//! function's cycles went, instruction by instruction.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::itrace::{ItraceLine, StallCause};
use crate::symbols::UNKNOWN;

fn symbol_text(l: &ItraceLine) -> String {
    match &l.symbol {
        Some(s) => format!("{}+{:#x}", s.name, s.offset),
        None => UNKNOWN.to_string(),
    }
}

/// One line per instruction:
/// `hart cycle priv pc symbol+off cycles stall disassembly | lines`,
/// where each touched line is `I|L|S|W:address:hit|miss`.
pub fn itrace_text(lines: &[ItraceLine]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>4} {:>14} P {:>16} {:<36} {:>6} {:<9} {:<32} | lines",
        "hart", "cycle", "pc", "symbol", "cycles", "stall", "instruction"
    );
    for l in lines {
        let touched: Vec<String> = l
            .lines
            .iter()
            .map(|t| {
                format!(
                    "{}:{:x}:{}",
                    t.access.letter(),
                    t.line,
                    if t.hit { "hit" } else { "miss" }
                )
            })
            .collect();
        let row = format!(
            "{:>4} {:>14} {} {:>16x} {:<36} {:>6} {:<9} {:<32} | {}{}",
            l.hart,
            l.cycle,
            l.privilege.letter(),
            l.pc,
            symbol_text(l),
            l.cycles,
            l.stall.as_str(),
            l.disasm.replace(|c: char| c.is_control(), " "),
            touched.join(" "),
            l.source
                .as_ref()
                .map_or(String::new(), |f| format!(" @ {f}"))
        );
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

#[derive(Default)]
struct PcStats<'a> {
    offset: u64,
    disasm: &'a str,
    source: Option<&'a str>,
    cycles: u64,
    executions: u64,
    stall_cycles: BTreeMap<&'a StallCause, u64>,
}

/// For each instruction of `symbol` seen in the trace: its share of the
/// function's cycles, cycles, executions, the stall cause that cost it the
/// most cycles, and the disassembly. `None` if the trace never ran `symbol`.
pub fn annotate(lines: &[ItraceLine], symbol: &str) -> Option<String> {
    let mut by_pc: BTreeMap<u64, PcStats<'_>> = BTreeMap::new();
    for l in lines {
        let Some(s) = l.symbol.as_ref().filter(|s| s.name == symbol) else {
            continue;
        };
        let e = by_pc.entry(l.pc).or_default();
        if e.executions == 0 {
            e.offset = s.offset;
            e.disasm = &l.disasm;
            e.source = l.source.as_deref();
        }
        e.cycles += l.cycles;
        e.executions += 1;
        if l.stall != StallCause::None {
            *e.stall_cycles.entry(&l.stall).or_default() += l.cycles;
        }
    }
    if by_pc.is_empty() {
        return None;
    }
    let total: u64 = by_pc.values().map(|p| p.cycles).sum();
    let executed: u64 = by_pc.values().map(|p| p.executions).sum();
    let mut out = String::new();
    let _ = writeln!(
        out,
        " Percent |   Cycles |  Execs | Stall     | Disassembly of {symbol} ({total} cycles, {executed} instructions retired)"
    );
    out.push_str("---------+----------+--------+-----------+------------------------------------------------\n");
    let mut last_source = None;
    for (pc, p) in &by_pc {
        // As perf annotate does: the source line above the instructions it became.
        if p.source.is_some() && p.source != last_source {
            let _ = writeln!(
                out,
                "         :          :        :           : {}",
                p.source.unwrap_or("")
            );
            last_source = p.source;
        }
        // Most costly cause; ties go to the first in enum order.
        let stall = p
            .stall_cycles
            .iter()
            .fold(None::<(&StallCause, u64)>, |best, (c, &n)| match best {
                Some((_, m)) if m >= n => best,
                _ => Some((c, n)),
            })
            .map_or("-", |(c, _)| c.as_str());
        let pct = if total == 0 {
            0.0
        } else {
            p.cycles as f64 * 100.0 / total as f64
        };
        let _ = writeln!(
            out,
            "{pct:>8.2} | {:>8} | {:>6} | {:<9} | {pc:16x} <+{:#x}>: {}",
            p.cycles,
            p.executions,
            stall,
            p.offset,
            p.disasm.replace(|c: char| c.is_control(), " ")
        );
    }
    Some(out)
}
