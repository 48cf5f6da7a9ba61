//! Markdown fragments the lab assembles into reports: the phase table and
//! the cycle-shape table.

use std::fmt::Write;

use super::text::{md_cell, percent, thousands};
use crate::phase::Phase;
use crate::stats::StatBlock;

/// `| # | phase | cycles | share | instret | CPI |`, shares of `run_cycles`.
pub fn phase_table(phases: &[Phase], run_cycles: u64) -> String {
    let mut out =
        String::from("| # | phase | cycles | share | instret | CPI |\n|--:|:--|--:|--:|--:|--:|\n");
    for p in phases {
        let cpi = p.cpi().map_or("-".to_string(), |c| format!("{c:.2}"));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            p.index,
            md_cell(&p.label),
            thousands(p.cycles()),
            percent(p.cycles(), run_cycles),
            thousands(p.instret()),
            cpi
        );
    }
    out
}

/// Where a run's cycles went, by pipeline state (fetch, execute, mem, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CycleShape {
    pub label: String,
    pub total_cycles: u64,
    pub states: Vec<(String, u64)>,
}

impl CycleShape {
    /// States from the integer stats named `prefix` + state
    /// (e.g. `system.cpu0.cycleShape.`), in block order.
    pub fn from_stats(
        label: &str,
        block: &StatBlock,
        prefix: &str,
        total_cycles: u64,
    ) -> CycleShape {
        let states = block
            .with_prefix(prefix)
            .map(|(state, s)| (state.to_string(), s.value.as_f64().max(0.0).round() as u64))
            .collect();
        CycleShape {
            label: label.to_string(),
            total_cycles,
            states,
        }
    }

    /// `| # | state | share | cycles |`, shares of the total cycles.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "**{}** — {} cycles\n",
            md_cell(&self.label),
            thousands(self.total_cycles)
        );
        out.push_str("| # | state | share | cycles |\n|--:|:--|--:|--:|\n");
        for (i, (state, cycles)) in self.states.iter().enumerate() {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                i + 1,
                md_cell(state),
                percent(*cycles, self.total_cycles),
                thousands(*cycles)
            );
        }
        out
    }
}
