//! Everything one run observed, in one serialisable value.

use serde::{Deserialize, Serialize};

use crate::error::{ObserveError, Result};
use crate::event::Event;
use crate::itrace::ItraceLine;
use crate::phase::Phase;
use crate::sample::Sample;
use crate::stats::StatBlock;

/// The observations of one run; reports are views of it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Observations {
    /// Guest clock in cycles per second: converts cycles to time.
    pub guest_hz: u64,
    /// Cycles between two samples of one hart (0 when not sampling).
    pub sample_period: u64,
    /// Counters for the whole run.
    pub total: StatBlock,
    /// Counters per phase, in phase order.
    pub phase_stats: Vec<StatBlock>,
    pub phases: Vec<Phase>,
    pub samples: Vec<Sample>,
    pub events: Vec<Event>,
    pub itrace: Vec<ItraceLine>,
}

impl Observations {
    /// Check the values exporters divide by.
    pub fn validate(&self) -> Result<()> {
        if self.guest_hz == 0 {
            return Err(ObserveError::ZeroFrequency);
        }
        if !self.samples.is_empty() && self.sample_period == 0 {
            return Err(ObserveError::ZeroSamplePeriod);
        }
        Ok(())
    }

    /// Cycles from the first phase's start to the last phase's end.
    pub fn phased_cycles(&self) -> u64 {
        match (self.phases.first(), self.phases.last()) {
            (Some(a), Some(b)) => b.end_cycle.saturating_sub(a.start_cycle),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKind;
    use crate::itrace::{LineAccess, LineTouch, StallCause, SymbolOffset};
    use crate::phase::HartCounts;
    use crate::sample::Privilege;
    use crate::stats::Unit;

    fn record() -> Observations {
        let phase = Phase {
            index: 1,
            label: "echo".into(),
            start_cycle: 10,
            end_cycle: 30,
            harts: vec![HartCounts {
                hart: 0,
                cycles: 20,
                instret: 8,
            }],
        };
        let mut total = StatBlock::new("total");
        total
            .add_u64("system.cpu0.cycles", 20, Unit::Cycle, "Cycles")
            .unwrap();
        total
            .add_f64("system.cpu0.cpi", 2.5, Unit::CyclePerCount, "CPI")
            .unwrap();
        Observations {
            guest_hz: 10_000_000,
            sample_period: 1024,
            phase_stats: vec![StatBlock::for_phase(&phase)],
            total,
            phases: vec![phase],
            samples: vec![Sample {
                hart: 0,
                cycle: 12,
                pc: 0x10,
                privilege: Privilege::User,
                satp: 8,
                stack: vec![0x20].into(),
                task: None,
            }],
            events: vec![Event {
                hart: 0,
                cycle: 11,
                kind: EventKind::IpiReceived { from: None },
            }],
            itrace: vec![ItraceLine {
                hart: 0,
                cycle: 13,
                pc: 0x10,
                privilege: Privilege::User,
                symbol: Some(SymbolOffset {
                    name: "main".into(),
                    offset: 0,
                }),
                disasm: "addi a0,a0,1".into(),
                cycles: 4,
                stall: StallCause::Other("custom".into()),
                lines: vec![LineTouch {
                    line: 0x80000000,
                    access: LineAccess::Fetch,
                    hit: false,
                }],
                source: None,
            }],
        }
    }

    #[test]
    fn round_trips_through_json() {
        let r = record();
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<Observations>(&json).unwrap(), r);
        assert_eq!(r.phased_cycles(), 20);
    }

    #[test]
    fn validation_names_the_bad_field() {
        assert!(record().validate().is_ok());
        let r = Observations {
            guest_hz: 0,
            ..record()
        };
        assert_eq!(
            r.validate().unwrap_err().to_string(),
            "guest frequency (guest_hz) must be greater than zero"
        );
        let r = Observations {
            sample_period: 0,
            ..record()
        };
        assert!(matches!(r.validate(), Err(ObserveError::ZeroSamplePeriod)));
    }
}
