//! Inter-processor interrupts as the timeline saw them: each software
//! interrupt one hart raised on another (`IpiSent`, the CLINT `msip` write)
//! paired with the target taking a machine software interrupt
//! (`IpiReceived`), and what the machine's `[ipi]` knob did in between
//! (its `Instant` marks "IPI released …").
//!
//! Pairing, for a send from hart F to hart T at cycle S: T's next
//! software-interrupt trap at or after S took it — except in a run where the
//! knob held no IPI (no release marks), when F < T and T took a software
//! interrupt within one quantum before S: that trap took it, counted as 0
//! cycles. Harts run in turns of one quantum in index order, each on its own
//! clock, so a target that runs after the sender in a turn sees an
//! undelayed bit at the start of its run, at a cycle of its own before the
//! sender's clock reached the write. A held IPI is never seen before its
//! send, so in a run with holds that rule is off. MSIP is one bit, so one
//! trap can take several sends.

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
    pub fn from_events(events: &[Event], quantum: u64) -> IpiLatencies {
        use std::collections::BTreeMap;
        let mut out = IpiLatencies::default();
        let mut traps: BTreeMap<u16, Vec<u64>> = BTreeMap::new();
        let mut releases: BTreeMap<u16, Vec<u64>> = BTreeMap::new();
        for e in events {
            match &e.kind {
                EventKind::IpiReceived { .. } => traps.entry(e.hart).or_default().push(e.cycle),
                EventKind::Instant { label } if label.starts_with(RELEASE_MARK) => {
                    releases.entry(e.hart).or_default().push(e.cycle);
                    out.released_at_tick += label.contains("timer tick") as usize;
                }
                _ => {}
            }
        }
        traps.values_mut().chain(releases.values_mut()).for_each(|v| v.sort_unstable());
        let first_from = |v: Option<&Vec<u64>>, c: u64| v.and_then(|v| v.get(v.partition_point(|&x| x < c)).copied());
        for e in events {
            let EventKind::IpiSent { to } = e.kind else { continue };
            if to == e.hart {
                continue;
            }
            out.sent += 1;
            let s = e.cycle;
            let next = first_from(traps.get(&to), s);
            let same_turn = releases.is_empty()
                && e.hart < to
                && first_from(traps.get(&to), s.saturating_sub(quantum)).is_some_and(|t| t < s);
            match next {
                _ if same_turn => out.latencies.push(0),
                Some(t) => out.latencies.push(t - s),
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
        // Delivered: hart 1 runs after hart 0 in a turn and takes the IPI "before" the send.
        let delivered = vec![
            e(1, 95, EventKind::IpiReceived { from: None }),
            e(0, 100, EventKind::IpiSent { to: 1 }),
            // a self-IPI is not counted
            e(0, 150, EventKind::IpiSent { to: 0 }),
            // hart 1 → hart 0: hart 0 already ran this turn, so it takes it later
            e(1, 200, EventKind::IpiSent { to: 0 }),
            e(0, 10_005, EventKind::IpiReceived { from: None }),
            // a trap more than a quantum before is not this send's: never taken
            e(0, 50_000, EventKind::IpiSent { to: 1 }),
        ];
        let l = IpiLatencies::from_events(&delivered, 10_000);
        assert_eq!((l.sent, l.untaken, l.released_at_tick), (3, 1, 0));
        assert_eq!(l.latencies, vec![0, 9_805]);
        assert_eq!(l.percentile(0.0), Some(0));
        assert_eq!(l.percentile(99.0), Some(9_805));
        assert_eq!(IpiLatencies::default().percentile(50.0), None);
        assert!(!excerpt_worthy(&delivered[2]) && excerpt_worthy(&delivered[1]));

        // Held: a send 5,000 cycles after the target's last trap waits for its release.
        let delay = |c| e(1, c, EventKind::Instant { label: "IPI released: [ipi] delay over after 100000 cycles".into() });
        let tick = EventKind::Instant { label: "IPI released at this hart's timer tick after 3999800 cycles".into() };
        let held = vec![
            e(0, 6_000_000, EventKind::IpiSent { to: 1 }),
            delay(6_100_000),
            e(1, 6_100_000, EventKind::IpiReceived { from: None }),
            e(0, 6_105_000, EventKind::IpiSent { to: 1 }),
            delay(6_205_000),
            e(1, 6_205_000, EventKind::IpiReceived { from: None }),
            e(1, 6_300_000, EventKind::IpiSent { to: 0 }),
            e(0, 10_300_000, tick),
            e(0, 10_300_000, EventKind::IpiReceived { from: None }),
        ];
        let l = IpiLatencies::from_events(&held, 10_000);
        assert_eq!((l.sent, l.untaken, l.released_at_tick), (3, 0, 1));
        assert_eq!(l.latencies, vec![100_000, 100_000, 4_000_000]);
        assert!(excerpt_worthy(&held[1]) && excerpt_worthy(&held[7]));
    }
}
