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

/// Turns phase markers plus cumulative per-hart counters into [`Phase`]s:
/// the machine calls [`PhaseRecorder::mark`] when a hart executes a phase
/// marker and [`PhaseRecorder::finish`] when the run ends.
#[derive(Clone, Debug, Default)]
pub struct PhaseRecorder {
    open: Option<(String, u64, Vec<HartCounts>)>,
    done: Vec<Phase>,
}

impl PhaseRecorder {
    pub fn new() -> PhaseRecorder {
        PhaseRecorder::default()
    }

    /// A phase named `label` starts at `cycle`; `totals` are the harts'
    /// counters since reset at that moment. Closes the previous phase.
    pub fn mark(&mut self, cycle: u64, label: &str, totals: &[HartCounts]) {
        self.close(cycle, totals);
        self.open = Some((label.to_string(), cycle, totals.to_vec()));
    }

    /// Close the last phase at `cycle` and return all phases in order.
    pub fn finish(mut self, cycle: u64, totals: &[HartCounts]) -> Vec<Phase> {
        self.close(cycle, totals);
        self.done
    }

    /// Phases closed so far.
    pub fn phases(&self) -> &[Phase] {
        &self.done
    }

    fn close(&mut self, cycle: u64, totals: &[HartCounts]) {
        let Some((label, start, at_start)) = self.open.take() else {
            return;
        };
        let harts = totals
            .iter()
            .map(|now| {
                let before = at_start.iter().find(|h| h.hart == now.hart);
                HartCounts {
                    hart: now.hart,
                    cycles: now.cycles.saturating_sub(before.map_or(0, |b| b.cycles)),
                    instret: now.instret.saturating_sub(before.map_or(0, |b| b.instret)),
                }
            })
            .collect();
        self.done.push(Phase {
            index: self.done.len() as u32 + 1,
            label,
            start_cycle: start,
            end_cycle: cycle.max(start),
            harts,
        });
    }
}

fn ratio(num: u64, den: u64) -> Option<f64> {
    (den != 0).then(|| num as f64 / den as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorder_makes_phases_from_markers_and_counter_snapshots() {
        let c = |hart, cycles, instret| HartCounts {
            hart,
            cycles,
            instret,
        };
        let mut r = PhaseRecorder::new();
        r.mark(100, "boot", &[c(0, 90, 40), c(1, 10, 5)]);
        assert!(r.phases().is_empty());
        r.mark(500, "echo", &[c(0, 480, 200), c(1, 30, 9)]);
        assert_eq!(r.phases().len(), 1);
        let phases = r.finish(600, &[c(0, 570, 230), c(1, 30, 9), c(2, 7, 3)]);
        assert_eq!(
            phases,
            vec![
                Phase {
                    index: 1,
                    label: "boot".into(),
                    start_cycle: 100,
                    end_cycle: 500,
                    harts: vec![c(0, 390, 160), c(1, 20, 4)]
                },
                // A hart absent from the start snapshot counts from zero.
                Phase {
                    index: 2,
                    label: "echo".into(),
                    start_cycle: 500,
                    end_cycle: 600,
                    harts: vec![c(0, 90, 30), c(1, 0, 0), c(2, 7, 3)]
                },
            ]
        );
        assert_eq!(PhaseRecorder::new().finish(10, &[]), vec![]);
    }

    #[test]
    fn derived_values() {
        let p = Phase {
            index: 1,
            label: "echo".into(),
            start_cycle: 100,
            end_cycle: 350,
            harts: vec![
                HartCounts {
                    hart: 0,
                    cycles: 250,
                    instret: 100,
                },
                HartCounts {
                    hart: 1,
                    cycles: 50,
                    instret: 0,
                },
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
