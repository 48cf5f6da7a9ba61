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
