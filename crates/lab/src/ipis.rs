//! Inter-processor interrupts as the timeline saw them: each software
//! interrupt one hart raised on another (`IpiSent`, the CLINT `msip` write)
//! paired with the target taking a machine software interrupt
//! (`IpiReceived`), and what the machine's `[ipi]` knob did in between
//! (its `Instant` marks "IPI released …").
//!
//! Pairing: a send to hart T at cycle S was taken by T's first
//! software-interrupt trap at or after S. The machine shows a target an IPI
//! only from the cycle it was sent (a target that ran ahead sees it at its
//! next turn: late, never early), so no trap before S can be this send's.
//! MSIP is one bit, so one trap can take several sends.

use hs_observe::{Event, EventKind};

/// The label prefix of the machine's mark when the knob releases an IPI.
pub const RELEASE_MARK: &str = "IPI released";

/// Cross-hart IPIs of one run and how long each took to be taken.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IpiLatencies {
    /// Cross-hart sends on the timeline.
    pub sent: usize,
    /// Cycles from each taken send to the trap that took it, sorted.
    pub latencies: Vec<u64>,
    /// Sends no later trap took (the run ended first).
    pub untaken: usize,
    /// Knob releases on the timeline that came with the target's timer tick.
    pub released_at_tick: usize,
}

impl IpiLatencies {
    /// `events` in cycle order, as a run's observations keep them.
    pub fn from_events(events: &[Event]) -> IpiLatencies {
        use std::collections::BTreeMap;
        let mut out = IpiLatencies::default();
        let mut traps: BTreeMap<u16, Vec<u64>> = BTreeMap::new();
        for e in events {
            match &e.kind {
                EventKind::IpiReceived { .. } => traps.entry(e.hart).or_default().push(e.cycle),
                EventKind::Instant { label }
                    if label.starts_with(RELEASE_MARK) && label.contains("timer tick") =>
                {
                    out.released_at_tick += 1
                }
                _ => {}
            }
        }
        traps.values_mut().for_each(|v| v.sort_unstable());
        let first_from = |v: Option<&Vec<u64>>, c: u64| {
            v.and_then(|v| v.get(v.partition_point(|&x| x < c)).copied())
        };
        for e in events {
            let EventKind::IpiSent { to } = e.kind else {
                continue;
            };
            if to == e.hart {
                continue;
            }
            out.sent += 1;
            match first_from(traps.get(&to), e.cycle) {
                Some(t) => out.latencies.push(t - e.cycle),
                None => out.untaken += 1,
            }
        }
        out.latencies.sort_unstable();
        out
    }

    /// Nearest-rank percentile (0 < p ≤ 100) of the latencies, in cycles.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        if self.latencies.is_empty() {
            return None;
        }
        let n = self.latencies.len();
        let rank = ((p / 100.0 * n as f64).ceil() as usize).clamp(1, n);
        Some(self.latencies[rank - 1])
    }
}

/// Which events the report's IPI excerpt shows: cross-hart sends, knob
/// releases, software and timer interrupts taken, idle spans.
pub fn excerpt_worthy(e: &Event) -> bool {
    match &e.kind {
        EventKind::IpiSent { to } => *to != e.hart,
        EventKind::IpiReceived { .. } | EventKind::WfiIdle { .. } => true,
        EventKind::Interrupt { cause, .. } => matches!(cause, 1 | 5 | 7),
        EventKind::Instant { label } => label.starts_with(RELEASE_MARK),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(hart: u16, cycle: u64, kind: EventKind) -> Event {
        Event { hart, cycle, kind }
    }

    #[test]
    fn sends_pair_with_the_targets_next_trap() {
        let delay = |c| {
            e(
                1,
                c,
                EventKind::Instant {
                    label: "IPI released: [ipi] delay over after 100000 cycles".into(),
                },
            )
        };
        let tick = EventKind::Instant {
            label: "IPI released at this hart's timer tick after 3999800 cycles".into(),
        };
        let ev = vec![
            // a trap before the send is not its trap
            e(1, 95, EventKind::IpiReceived { from: None }),
            e(0, 100, EventKind::IpiSent { to: 1 }),
            e(1, 2_100, EventKind::IpiReceived { from: None }),
            // a self-IPI is not counted
            e(0, 150, EventKind::IpiSent { to: 0 }),
            // two sends, one trap (MSIP is one bit)
            e(1, 3_000, EventKind::IpiSent { to: 0 }),
            e(1, 3_500, EventKind::IpiSent { to: 0 }),
            e(0, 10_000, EventKind::IpiReceived { from: None }),
            // delayed
            e(0, 6_000_000, EventKind::IpiSent { to: 1 }),
            delay(6_100_000),
            e(1, 6_100_000, EventKind::IpiReceived { from: None }),
            // held until the tick
            e(1, 6_300_000, EventKind::IpiSent { to: 0 }),
            e(0, 10_300_000, tick),
            e(0, 10_300_000, EventKind::IpiReceived { from: None }),
            // never taken
            e(0, 11_000_000, EventKind::IpiSent { to: 1 }),
        ];
        let l = IpiLatencies::from_events(&ev);
        assert_eq!((l.sent, l.untaken, l.released_at_tick), (6, 1, 1));
        assert_eq!(l.latencies, vec![2_000, 6_500, 7_000, 100_000, 4_000_000]);
        assert_eq!(l.percentile(0.0), Some(2_000));
        assert_eq!(l.percentile(50.0), Some(7_000));
        assert_eq!(l.percentile(99.0), Some(4_000_000));
        assert_eq!(IpiLatencies::default().percentile(50.0), None);
        assert!(
            !excerpt_worthy(&ev[3])
                && excerpt_worthy(&ev[1])
                && excerpt_worthy(&ev[8])
                && excerpt_worthy(&ev[11])
        );
    }
}
