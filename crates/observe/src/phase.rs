//! Phases: the stretches of a run between guest phase markers.

use serde::{Deserialize, Serialize};

/// What one hart did during a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HartCounts {
    pub hart: u16,
    /// Cycles the hart was not idle in `wfi`.
    pub cycles: u64,
    /// Instructions retired.
    pub instret: u64,
}

/// A phase of a run, `[start_cycle, end_cycle)` of machine time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phase {
    /// 1-based position in the run.
    pub index: u32,
    /// The label the guest gave the phase marker.
    pub label: String,
    pub start_cycle: u64,
    pub end_cycle: u64,
    pub harts: Vec<HartCounts>,
}

impl Phase {
    /// Machine cycles from start to end (zero if the bounds are reversed).
    pub fn cycles(&self) -> u64 {
        self.end_cycle.saturating_sub(self.start_cycle)
    }

    /// Instructions retired by all harts.
    pub fn instret(&self) -> u64 {
        self.harts.iter().map(|h| h.instret).sum()
    }

    /// Busy cycles of all harts.
    pub fn hart_cycles(&self) -> u64 {
        self.harts.iter().map(|h| h.cycles).sum()
    }

    /// Cycles per instruction over all harts; `None` when nothing retired.
    pub fn cpi(&self) -> Option<f64> {
        ratio(self.hart_cycles(), self.instret())
    }

    /// CPI of one hart; `None` if the hart is absent or retired nothing.
    pub fn hart_cpi(&self, hart: u16) -> Option<f64> {
        let h = self.harts.iter().find(|h| h.hart == hart)?;
        ratio(h.cycles, h.instret)
    }

    /// This phase's share of a run of `run_cycles` (0.0..=1.0 when the
    /// phase lies inside the run); `None` for an empty run.
    pub fn share_of(&self, run_cycles: u64) -> Option<f64> {
        ratio(self.cycles(), run_cycles)
    }
}

fn ratio(num: u64, den: u64) -> Option<f64> {
    (den != 0).then(|| num as f64 / den as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_values() {
        let p = Phase {
            index: 1,
            label: "echo".into(),
            start_cycle: 100,
            end_cycle: 350,
            harts: vec![
                HartCounts { hart: 0, cycles: 250, instret: 100 },
                HartCounts { hart: 1, cycles: 50, instret: 0 },
            ],
        };
        assert_eq!(p.cycles(), 250);
        assert_eq!(p.cpi(), Some(3.0));
        assert_eq!(p.hart_cpi(0), Some(2.5));
        assert_eq!(p.hart_cpi(1), None);
        assert_eq!(p.hart_cpi(7), None);
        assert_eq!(p.share_of(1000), Some(0.25));
        assert_eq!(p.share_of(0), None);
    }
}
