//! Inter-processor interrupts as the timeline saw them: each software
//! interrupt one hart raised on another (`IpiSent`, the CLINT `msip` write)
//! paired with the target taking a machine software interrupt
//! (`IpiReceived`), and what the machine's `[ipi]` knob did in between
//! (its `Instant` marks "IPI released …").
//!
//! Pairing: a send to hart H is taken by H's first software-interrupt trap
//! at or after the send's cycle less one scheduling quantum. Harts run in
//! turns of one quantum, each on its own clock, so a target that runs after
//! the sender in a turn can take the interrupt at a cycle of its own a
//! little before the sender's clock reached the write; such a pair counts
//! as 0 cycles. MSIP is one bit, so one trap can take several sends.

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
    pub fn from_events(events: &[Event], quantum: u64) -> IpiLatencies {
        let mut received: std::collections::BTreeMap<u16, Vec<u64>> = Default::default();
        let mut out = IpiLatencies::default();
        for e in events {
            match &e.kind {
                EventKind::IpiReceived { .. } => received.entry(e.hart).or_default().push(e.cycle),
                EventKind::Instant { label } if label.starts_with(RELEASE_MARK) && label.contains("timer tick") => {
                    out.released_at_tick += 1
                }
                _ => {}
            }
        }
        received.values_mut().for_each(|v| v.sort_unstable());
        for e in events {
            let EventKind::IpiSent { to } = e.kind else { continue };
            if to == e.hart {
                continue;
            }
            out.sent += 1;
            let taken = received.get(&to).and_then(|r| {
                let from = e.cycle.saturating_sub(quantum);
                r.get(r.partition_point(|&c| c < from)).copied()
            });
            match taken {
                Some(r) => out.latencies.push(r.saturating_sub(e.cycle)),
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
        let tick = EventKind::Instant { label: "IPI released at this hart's timer tick after 10 cycles".into() };
        let ev = vec![
            // hart 1 runs after hart 0 in a turn: it takes the IPI "before" the send.
            e(1, 95, EventKind::IpiReceived { from: None }),
            e(0, 100, EventKind::IpiSent { to: 1 }),
            // a self-IPI is not counted
            e(0, 150, EventKind::IpiSent { to: 0 }),
            // held until the tick at 4,000,000
            e(1, 200, EventKind::IpiSent { to: 0 }),
            e(0, 4_000_000, tick),
            e(0, 4_000_000, EventKind::IpiReceived { from: None }),
            // never taken
            e(0, 5_000_000, EventKind::IpiSent { to: 1 }),
        ];
        let l = IpiLatencies::from_events(&ev, 10);
        assert_eq!(l.sent, 3);
        assert_eq!(l.latencies, vec![0, 3_999_800]);
        assert_eq!(l.untaken, 1);
        assert_eq!(l.released_at_tick, 1);
        assert_eq!(l.percentile(50.0), Some(0));
        assert_eq!(l.percentile(99.0), Some(3_999_800));
        assert_eq!(IpiLatencies::default().percentile(50.0), None);
        assert!(!excerpt_worthy(&ev[2]) && excerpt_worthy(&ev[1]) && excerpt_worthy(&ev[4]));
    }
}
