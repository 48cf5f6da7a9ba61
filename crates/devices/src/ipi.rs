//! The IPI knob: what happens to a software interrupt one hart raises on
//! another through the CLINT's `msip` registers (`[ipi]` of a machine
//! description).
//!
//! - [`IpiPolicy::Deliver`]: the target sees its `msip` bit at once (the
//!   default; the machine's usual interleaving applies).
//! - [`IpiPolicy::Delay`]: the target sees it `N` cycles after the write.
//! - [`IpiPolicy::DropUntilTick`]: the target does not see it until its own
//!   timer interrupt is pending (the CLINT's `mtimecmp`, or the hart's Sstc
//!   `stimecmp`); then it does. A sleeping hart therefore wakes only at its
//!   next tick — the Fiasco.OC rev 38 SMP bug of the Genode Pandaboard
//!   article, on purpose. The IPI is never lost: a target with no timer
//!   armed at all (a hart OpenSBI holds stopped, or one whose tick was
//!   switched off) has no tick to wait for, so it sees the IPI at once
//!   (counted apart); otherwise OpenSBI's hart start and remote fences, which
//!   wait for the target, would hang.
//!
//! Only a write by one hart to another hart's `msip` is an IPI; a hart's
//! write to its own `msip` is never held. The register keeps the written
//! bit either way (reads show it); what is held is the bit's effect on the
//! target's `mip.MSIP`. Everything is decided from guest cycles, so a run
//! is as deterministic with the knob as without it.

/// What the machine does with a cross-hart software interrupt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum IpiPolicy {
    #[default]
    Deliver,
    /// The target sees the interrupt this many cycles after the write.
    Delay(u64),
    /// The target sees it once its timer interrupt is pending.
    DropUntilTick,
}

impl IpiPolicy {
    /// The description's spelling (`deliver`, `delay`, `drop-until-tick`).
    pub fn mode_name(&self) -> &'static str {
        match self {
            IpiPolicy::Deliver => "deliver",
            IpiPolicy::Delay(_) => "delay",
            IpiPolicy::DropUntilTick => "drop-until-tick",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Hold {
    /// Visible from this cycle on.
    Until(u64),
    /// Visible once the target's timer interrupt is pending.
    UntilTick,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Held {
    /// The sender's cycle at the write.
    since: u64,
    hold: Hold,
}

/// How a held IPI ended (for the caller's timeline).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// Its delay ran out.
    Delayed { held_cycles: u64 },
    /// The target's timer interrupt became pending.
    AtTick { held_cycles: u64 },
    /// The target has no timer armed (no tick would ever come).
    NoTimer { held_cycles: u64 },
}

/// Per-hart hold state of the software interrupts, and the knob's counters.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct IpiGate {
    policy: IpiPolicy,
    held: Vec<Option<Held>>,
    /// Each hart's own (Sstc) timer deadline, as the machine last saw it.
    sstc: Vec<Option<u64>>,
    pub stat_cross: u64,
    pub stat_delayed: u64,
    pub stat_held_for_tick: u64,
    pub stat_released_at_tick: u64,
    pub stat_passed_no_timer: u64,
    pub stat_held_cycles: u64,
    pub stat_held_max_cycles: u64,
}

impl IpiGate {
    pub fn new(harts: usize, policy: IpiPolicy) -> Self {
        Self {
            policy,
            held: vec![None; harts],
            sstc: vec![None; harts],
            stat_cross: 0,
            stat_delayed: 0,
            stat_held_for_tick: 0,
            stat_released_at_tick: 0,
            stat_passed_no_timer: 0,
            stat_held_cycles: 0,
            stat_held_max_cycles: 0,
        }
    }

    /// A restored gate is for `harts` harts (its per-hart lists are that long).
    pub(crate) fn fits(&self, harts: usize) -> bool {
        self.held.len() == harts && self.sstc.len() == harts
    }

    pub fn policy(&self) -> IpiPolicy {
        self.policy
    }

    /// The machine tells the gate each hart's own timer deadline (`None`:
    /// not armed) whenever the hart stops running.
    pub fn note_own_timer(&mut self, hart: usize, deadline: Option<u64>) {
        if let Some(s) = self.sstc.get_mut(hart) {
            *s = deadline;
        }
    }

    /// Hart `from` raised `target`'s msip bit (it was clear) at cycle `now`.
    /// `clint_deadline` is the target's `mtimecmp` deadline, if armed.
    pub fn raised(&mut self, from: usize, target: usize, now: u64, clint_deadline: Option<u64>) {
        if from == target || target >= self.held.len() {
            return;
        }
        self.stat_cross += 1;
        let hold = match self.policy {
            IpiPolicy::Deliver => return,
            IpiPolicy::Delay(0) => return,
            IpiPolicy::Delay(n) => {
                self.stat_delayed += 1;
                Hold::Until(now.saturating_add(n))
            }
            IpiPolicy::DropUntilTick => {
                if clint_deadline.is_none() && self.sstc[target].is_none() {
                    self.stat_passed_no_timer += 1;
                    return;
                }
                self.stat_held_for_tick += 1;
                Hold::UntilTick
            }
        };
        self.held[target] = Some(Held { since: now, hold });
    }

    /// `target`'s msip bit was cleared: nothing is held for it any more.
    pub fn cleared(&mut self, target: usize) {
        if let Some(h) = self.held.get_mut(target) {
            *h = None;
        }
    }

    /// Would a held IPI for `hart` be visible at its cycle `now`?
    /// `mtip` is whether its CLINT timer interrupt is pending then.
    fn due(&self, hart: usize, now: u64, mtip: bool, clint_armed: bool) -> Option<Release> {
        let h = self.held.get(hart).copied().flatten()?;
        let held_cycles = now.saturating_sub(h.since);
        match h.hold {
            Hold::Until(c) if now >= c => Some(Release::Delayed { held_cycles }),
            Hold::Until(_) => None,
            Hold::UntilTick => {
                let own = self.sstc[hart];
                if mtip || own.is_some_and(|d| d <= now) {
                    Some(Release::AtTick { held_cycles })
                } else if !clint_armed && own.is_none() {
                    Some(Release::NoTimer { held_cycles })
                } else {
                    None
                }
            }
        }
    }

    /// Is `hart`'s msip bit hidden from it at `now`?
    pub fn hides(&self, hart: usize, now: u64, mtip: bool, clint_armed: bool) -> bool {
        self.held.get(hart).copied().flatten().is_some()
            && self.due(hart, now, mtip, clint_armed).is_none()
    }

    /// End `hart`'s hold if it is due at `now` (the machine calls this just
    /// before it gives the hart its interrupt bits), counting how long it lasted.
    pub fn settle(
        &mut self,
        hart: usize,
        now: u64,
        mtip: bool,
        clint_armed: bool,
    ) -> Option<Release> {
        let r = self.due(hart, now, mtip, clint_armed)?;
        self.held[hart] = None;
        let held = match r {
            Release::Delayed { held_cycles } => held_cycles,
            Release::AtTick { held_cycles } => {
                self.stat_released_at_tick += 1;
                held_cycles
            }
            Release::NoTimer { held_cycles } => {
                self.stat_passed_no_timer += 1;
                held_cycles
            }
        };
        self.stat_held_cycles += held;
        self.stat_held_max_cycles = self.stat_held_max_cycles.max(held);
        Some(r)
    }

    /// Cycle at which a delayed IPI for `hart` becomes visible, if one waits.
    pub fn deadline(&self, hart: usize) -> Option<u64> {
        match self.held.get(hart).copied().flatten()?.hold {
            Hold::Until(c) => Some(c),
            Hold::UntilTick => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deliver_and_zero_delay_hold_nothing() {
        for p in [IpiPolicy::Deliver, IpiPolicy::Delay(0)] {
            let mut g = IpiGate::new(2, p);
            g.raised(0, 1, 100, Some(5_000));
            assert!(!g.hides(1, 100, false, true), "{p:?}");
            assert_eq!(g.settle(1, 100, false, true), None);
            assert_eq!(
                (g.stat_cross, g.stat_delayed, g.stat_held_for_tick),
                (1, 0, 0)
            );
        }
    }

    #[test]
    fn a_delay_ends_after_n_cycles_of_the_senders_clock() {
        let mut g = IpiGate::new(2, IpiPolicy::Delay(700));
        g.raised(1, 0, 1_000, None);
        assert_eq!(g.deadline(0), Some(1_700));
        assert!(g.hides(0, 1_699, false, false));
        assert_eq!(g.settle(0, 1_699, false, false), None);
        assert!(!g.hides(0, 1_700, false, false));
        assert_eq!(
            g.settle(0, 1_750, false, false),
            Some(Release::Delayed { held_cycles: 750 })
        );
        assert_eq!(g.deadline(0), None);
        assert_eq!(
            (g.stat_delayed, g.stat_held_cycles, g.stat_held_max_cycles),
            (1, 750, 750)
        );
    }

    #[test]
    fn own_writes_are_not_ipis() {
        let mut g = IpiGate::new(2, IpiPolicy::DropUntilTick);
        g.raised(1, 1, 10, Some(1_000));
        assert!(!g.hides(1, 10, false, true));
        assert_eq!(g.stat_cross, 0);
    }

    #[test]
    fn drop_until_tick_waits_for_the_clint_or_the_sstc_timer() {
        let mut g = IpiGate::new(3, IpiPolicy::DropUntilTick);
        // CLINT timer armed: hidden until MTIP is pending, however long.
        g.raised(0, 1, 100, Some(4_000_000));
        assert!(g.hides(1, 3_999_999, false, true));
        assert_eq!(g.settle(1, 3_999_999, false, true), None);
        assert_eq!(
            g.deadline(1),
            None,
            "a tick hold has no deadline of its own: the timer's ends the slice"
        );
        assert_eq!(
            g.settle(1, 4_000_000, true, true),
            Some(Release::AtTick {
                held_cycles: 3_999_900
            })
        );
        assert!(!g.hides(1, 4_000_000, false, true));
        // Sstc timer: the machine reports it; pending once the hart reaches it.
        g.note_own_timer(2, Some(9_000));
        g.raised(0, 2, 5_000, None);
        assert!(g.hides(2, 8_999, false, false));
        assert_eq!(
            g.settle(2, 9_000, false, false),
            Some(Release::AtTick { held_cycles: 4_000 })
        );
        assert_eq!(
            (
                g.stat_held_for_tick,
                g.stat_released_at_tick,
                g.stat_held_max_cycles
            ),
            (2, 2, 3_999_900)
        );
    }

    #[test]
    fn no_timer_means_no_hold_so_nothing_waits_forever() {
        let mut g = IpiGate::new(2, IpiPolicy::DropUntilTick);
        // A stopped hart (OpenSBI's HSM wait): no timer anywhere.
        g.raised(0, 1, 50, None);
        assert!(!g.hides(1, 50, false, false));
        assert_eq!(g.stat_passed_no_timer, 1);
        // Held while a timer was armed, then the tick was switched off.
        g.note_own_timer(1, Some(1_000_000));
        g.raised(0, 1, 60, None);
        assert!(g.hides(1, 70, false, false));
        g.note_own_timer(1, None);
        assert!(!g.hides(1, 80, false, false));
        assert_eq!(
            g.settle(1, 80, false, false),
            Some(Release::NoTimer { held_cycles: 20 })
        );
        assert_eq!(g.stat_passed_no_timer, 2);
    }

    #[test]
    fn clearing_the_bit_drops_the_hold() {
        let mut g = IpiGate::new(2, IpiPolicy::Delay(1_000));
        g.raised(0, 1, 0, None);
        g.cleared(1);
        assert!(!g.hides(1, 1, false, false));
        assert_eq!(g.deadline(1), None);
    }
}
