//! Core-local interruptor (SiFive CLINT, `riscv,clint0`): per-hart software
//! interrupt (`msip`) and timer compare (`mtimecmp`) registers, and `mtime`.
//!
//! `mtime` is not stored: it is the accessing hart's cycle count divided by
//! `cycles_per_tick`, the same quantity the hart's `time` CSR shows. For the
//! same reason writes to `mtime` are refused silently (counted): moving it
//! would make `mtime` and `time` disagree.

use crate::fdt::{FdtCtx, FdtNode, Placement};
use crate::ipi::{IpiGate, IpiPolicy, Release};
use crate::{BadAccess, Clock, DevCtx, Device, Grant, Note, Stat, WriteEffect};

pub const MSIP_BASE: u64 = 0x0000;
pub const MTIMECMP_BASE: u64 = 0x4000;
pub const MTIME: u64 = 0xbff8;
pub const SIZE: u64 = 0x1_0000;
/// Harts the register layout has room for (msip: 4 bytes each below 0x4000).
pub const MAX_HARTS: usize = 4095;

#[derive(serde::Serialize, serde::Deserialize)]
pub struct Clint {
    #[serde(skip)]
    clock: Clock,
    msip: Vec<bool>,
    /// Per hart: the cycle of the write that set its msip. Harts run one
    /// after another through a slice, so a hart that sends an IPI at cycle T
    /// may have run ahead of its target; the target sees the bit only from T
    /// on (never before it was sent).
    msip_at: Vec<u64>,
    mtimecmp: Vec<u64>,
    ipi: IpiGate,
    stat_msip_writes: u64,
    stat_mtimecmp_writes: u64,
    stat_mtime_reads: u64,
    stat_mtime_writes_ignored: u64,
}

/// Registers, IPI gate and counters; the clock and the IPI policy are the
/// machine's (a snapshot under another policy is refused, not converted).
impl crate::Persist for Clint {
    fn save(&self) -> Result<Vec<u8>, String> {
        hs_snapshot::state::encode(self)
    }
    fn restore(&mut self, data: &[u8]) -> Result<(), String> {
        let mut fresh: Clint = hs_snapshot::state::decode(data)?;
        let harts = self.msip.len();
        let lens = [fresh.msip.len(), fresh.msip_at.len(), fresh.mtimecmp.len()];
        if lens.iter().any(|&l| l != harts) || !fresh.ipi.fits(harts) {
            return Err(format!("the saved CLINT is not for {harts} harts"));
        }
        if fresh.ipi.policy() != self.ipi.policy() {
            return Err(format!(
                "the snapshot's IPI policy is {:?}; this machine's is {:?}",
                fresh.ipi.policy(),
                self.ipi.policy()
            ));
        }
        fresh.clock = self.clock;
        *self = fresh;
        Ok(())
    }
}

impl Clint {
    pub fn new(harts: usize, clock: Clock) -> Self {
        let harts = harts.min(MAX_HARTS);
        Self {
            clock,
            msip: vec![false; harts],
            msip_at: vec![0; harts],
            // Reset value is unspecified; "never" keeps MTIP low until firmware programs it.
            mtimecmp: vec![u64::MAX; harts],
            ipi: IpiGate::new(harts, IpiPolicy::Deliver),
            stat_msip_writes: 0,
            stat_mtimecmp_writes: 0,
            stat_mtime_reads: 0,
            stat_mtime_writes_ignored: 0,
        }
    }

    pub fn harts(&self) -> usize {
        self.msip.len()
    }

    /// What the CLINT does with IPIs from now on (the `[ipi]` knob).
    pub fn set_ipi_policy(&mut self, policy: IpiPolicy) {
        self.ipi = IpiGate::new(self.msip.len(), policy);
    }

    pub fn ipi_policy(&self) -> IpiPolicy {
        self.ipi.policy()
    }

    /// `hart`'s msip register bit (what a read shows).
    pub fn msip(&self, hart: usize) -> bool {
        self.msip.get(hart).copied().unwrap_or(false)
    }

    /// Machine software interrupt pending for `hart` as seen at its cycle
    /// `now`: set, and set at or before `now`.
    pub fn msip_at(&self, hart: usize, now: u64) -> bool {
        self.msip(hart) && self.msip_at.get(hart).is_some_and(|&t| t <= now)
    }

    /// The cycle after `now` at which `hart`'s msip becomes visible, if it
    /// was set by a hart that had run ahead of it.
    pub fn msip_rises_after(&self, hart: usize, now: u64) -> Option<u64> {
        let t = *self.msip_at.get(hart)?;
        (self.msip(hart) && t > now).then_some(t)
    }

    /// Machine software interrupt pending for `hart` at its cycle `now`:
    /// the msip bit as [`Clint::msip_at`] sees it, unless the IPI knob
    /// still hides it.
    pub fn msip_pending(&self, hart: usize, now: u64) -> bool {
        self.msip_at(hart, now)
            && !self.ipi.hides(
                hart,
                now,
                self.mtip(hart, now),
                self.timer_deadline(hart).is_some(),
            )
    }

    /// End a hold of `hart`'s IPI that is due at `now` (called just before
    /// the hart is given its interrupt bits); says how it ended.
    pub fn settle_ipi(&mut self, hart: usize, now: u64) -> Option<Release> {
        let (mtip, armed) = (self.mtip(hart, now), self.timer_deadline(hart).is_some());
        self.ipi.settle(hart, now, mtip, armed)
    }

    /// Cycle at which a delayed IPI becomes visible to `hart`, if one waits.
    pub fn ipi_deadline(&self, hart: usize) -> Option<u64> {
        self.ipi.deadline(hart)
    }

    /// `hart`'s own (Sstc) timer deadline as it stopped running (`None`: not armed).
    pub fn note_own_timer(&mut self, hart: usize, deadline: Option<u64>) {
        self.ipi.note_own_timer(hart, deadline);
    }

    /// Machine timer interrupt pending for `hart` at its cycle `now`.
    pub fn mtip(&self, hart: usize, now: u64) -> bool {
        self.mtimecmp
            .get(hart)
            .is_some_and(|&cmp| self.clock.ticks(now) >= cmp)
    }

    /// Cycle at which `hart`'s MTIP rises, if it ever does.
    pub fn timer_deadline(&self, hart: usize) -> Option<u64> {
        match self.mtimecmp.get(hart) {
            Some(&u64::MAX) | None => None,
            Some(&cmp) => Some(self.clock.tick_to_cycle(cmp)),
        }
    }

    pub fn mtimecmp(&self, hart: usize) -> Option<u64> {
        self.mtimecmp.get(hart).copied()
    }
}

/// Split an access into (64-bit register index, shift, mask) for registers
/// that are 64 bits wide and accept aligned 4- and 8-byte accesses.
fn reg64(offset: u64, size: u8) -> Result<(u64, u32, u64), BadAccess> {
    match size {
        8 if offset & 7 == 0 => Ok((offset / 8, 0, u64::MAX)),
        4 if offset & 3 == 0 => Ok((offset / 8, (offset % 8) as u32 * 8, 0xffff_ffff)),
        _ => Err(BadAccess),
    }
}

impl Device for Clint {
    crate::persistent!();
    fn name(&self) -> String {
        "clint".into()
    }
    fn size(&self) -> u64 {
        SIZE
    }

    fn read(&mut self, ctx: &mut DevCtx, offset: u64, size: u8) -> Result<u64, BadAccess> {
        if offset < MTIMECMP_BASE {
            if size != 4 || offset & 3 != 0 {
                return Err(BadAccess);
            }
            return Ok(self.msip((offset / 4) as usize) as u64);
        }
        let (_, shift, mask) = reg64(offset, size)?;
        if offset >= MTIME {
            self.stat_mtime_reads += 1;
            return Ok((self.clock.ticks(ctx.now) >> shift) & mask);
        }
        let hart = ((offset - MTIMECMP_BASE) / 8) as usize;
        Ok(self.mtimecmp.get(hart).map_or(0, |v| (v >> shift) & mask))
    }

    fn write(
        &mut self,
        ctx: &mut DevCtx,
        offset: u64,
        size: u8,
        val: u64,
    ) -> Result<WriteEffect, BadAccess> {
        if offset < MTIMECMP_BASE {
            if size != 4 || offset & 3 != 0 {
                return Err(BadAccess);
            }
            self.stat_msip_writes += 1;
            let target = (offset / 4) as usize;
            let deadline = self.timer_deadline(target);
            if let Some(bit) = self.msip.get_mut(target) {
                let was = *bit;
                *bit = val & 1 != 0;
                if *bit && !was {
                    self.msip_at[target] = ctx.now;
                }
                if *bit {
                    ctx.note(Note::Ipi { target });
                    if !was {
                        self.ipi.raised(ctx.hart, target, ctx.now, deadline);
                    }
                } else {
                    self.ipi.cleared(target);
                }
            }
            return Ok(WriteEffect {
                irq_changed: true,
                stop: false,
            });
        }
        let (_, shift, mask) = reg64(offset, size)?;
        if offset >= MTIME {
            self.stat_mtime_writes_ignored += 1;
            return Ok(WriteEffect::default());
        }
        let hart = ((offset - MTIMECMP_BASE) / 8) as usize;
        if let Some(cmp) = self.mtimecmp.get_mut(hart) {
            *cmp = (*cmp & !(mask << shift)) | ((val & mask) << shift);
            self.stat_mtimecmp_writes += 1;
        }
        Ok(WriteEffect {
            irq_changed: true,
            stop: false,
        })
    }

    fn fdt_nodes(&self, g: &Grant, ctx: &FdtCtx) -> Vec<(Placement, FdtNode)> {
        // Per hart: machine software (3) and machine timer (7) interrupts.
        let ext = ctx.cpu_intc.iter().flat_map(|&ph| [ph, 3, ph, 7]).collect();
        let node = FdtNode::new(g.node_name("clint"))
            .u32s("interrupts-extended", ext)
            .reg(g.base, g.size)
            .strs("compatible", &["sifive,clint0", "riscv,clint0"]);
        vec![(Placement::Soc, node)]
    }

    fn stats(&self) -> Vec<Stat> {
        vec![
            Stat::new(
                "clint.msip_writes",
                self.stat_msip_writes,
                "writes to msip registers (IPIs sent)",
            ),
            Stat::new(
                "clint.mtimecmp_writes",
                self.stat_mtimecmp_writes,
                "writes to mtimecmp registers",
            ),
            Stat::new("clint.mtime_reads", self.stat_mtime_reads, "reads of mtime"),
            Stat::new(
                "clint.mtime_writes_ignored",
                self.stat_mtime_writes_ignored,
                "refused writes to mtime",
            ),
            Stat::new(
                "clint.ipis_cross",
                self.ipi.stat_cross,
                "msip bits raised by another hart (IPIs)",
            ),
            Stat::new(
                "clint.ipis_delayed",
                self.ipi.stat_delayed,
                "IPIs the [ipi] knob delayed by a fixed number of cycles",
            ),
            Stat::new(
                "clint.ipis_held_for_tick",
                self.ipi.stat_held_for_tick,
                "IPIs the [ipi] knob held until the target's timer interrupt",
            ),
            Stat::new(
                "clint.ipis_released_at_tick",
                self.ipi.stat_released_at_tick,
                "held IPIs the target saw only once its timer interrupt was pending",
            ),
            Stat::new(
                "clint.ipis_passed_no_timer",
                self.ipi.stat_passed_no_timer,
                "IPIs passed at once because the target had no timer armed",
            ),
            Stat::new(
                "clint.ipi_held_cycles",
                self.ipi.stat_held_cycles,
                "cycles IPIs were hidden from their targets, in all",
            ),
            Stat::new(
                "clint.ipi_held_max_cycles",
                self.ipi.stat_held_max_cycles,
                "longest time one IPI was hidden from its target",
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoScheduler;

    const CLK: Clock = Clock {
        hz: 1_000_000_000,
        cycles_per_tick: 100,
    };

    fn ctx(hart: usize, now: u64, s: &mut NoScheduler) -> DevCtx<'_> {
        DevCtx::new(hart, now, s)
    }

    #[test]
    fn mtime_comes_from_the_accessing_harts_cycle() {
        let mut c = Clint::new(2, CLK);
        let mut s = NoScheduler;
        assert_eq!(c.read(&mut ctx(0, 12_345, &mut s), MTIME, 8), Ok(123));
        assert_eq!(c.read(&mut ctx(1, 99, &mut s), MTIME, 8), Ok(0));
        let big = (5u64 << 32) * 100 + 700;
        assert_eq!(c.read(&mut ctx(0, big, &mut s), MTIME, 4), Ok(7));
        assert_eq!(c.read(&mut ctx(0, big, &mut s), MTIME + 4, 4), Ok(5));
        // Writes to mtime are refused and do not move time.
        c.write(&mut ctx(0, 0, &mut s), MTIME, 8, 1 << 40).unwrap();
        assert_eq!(c.read(&mut ctx(0, 12_345, &mut s), MTIME, 8), Ok(123));
    }

    #[test]
    fn mtimecmp_halves_and_mtip() {
        let mut c = Clint::new(2, CLK);
        let mut s = NoScheduler;
        assert!(!c.mtip(1, u64::MAX));
        assert_eq!(c.timer_deadline(1), None);
        // OpenSBI on RV32-style halves: high first, then low.
        c.write(&mut ctx(0, 0, &mut s), MTIMECMP_BASE + 8 + 4, 4, 0)
            .unwrap();
        c.write(&mut ctx(0, 0, &mut s), MTIMECMP_BASE + 8, 4, 50)
            .unwrap();
        assert_eq!(c.mtimecmp(1), Some(50));
        assert_eq!(c.timer_deadline(1), Some(5000));
        assert!(!c.mtip(1, 4999));
        assert!(c.mtip(1, 5000));
        assert!(!c.mtip(0, 5000), "other hart unaffected");
        c.write(&mut ctx(0, 0, &mut s), MTIMECMP_BASE, 8, 7)
            .unwrap();
        assert_eq!(c.read(&mut ctx(0, 0, &mut s), MTIMECMP_BASE, 8), Ok(7));
        assert_eq!(
            c.read(&mut ctx(0, 0, &mut s), MTIMECMP_BASE + 2, 4),
            Err(BadAccess)
        );
    }

    #[test]
    fn an_ipi_is_seen_only_from_the_cycle_it_was_sent() {
        let mut c = Clint::new(2, CLK);
        let mut s = NoScheduler;
        c.write(&mut ctx(0, 500, &mut s), 4, 4, 1).unwrap();
        assert!(
            !c.msip_at(1, 499),
            "hart 1 behind the sender does not see it yet"
        );
        assert_eq!(c.msip_rises_after(1, 499), Some(500));
        assert!(c.msip_at(1, 500) && c.msip_at(1, 900));
        assert_eq!(c.msip_rises_after(1, 500), None);
        // A second write while pending keeps the first send time.
        c.write(&mut ctx(0, 700, &mut s), 4, 4, 1).unwrap();
        assert!(c.msip_at(1, 600));
        c.write(&mut ctx(1, 800, &mut s), 4, 4, 0).unwrap();
        assert!(!c.msip_at(1, 900) && c.msip_rises_after(1, 0).is_none());
    }

    #[test]
    fn msip_bit0_only_and_per_hart() {
        let mut c = Clint::new(3, CLK);
        let mut s = NoScheduler;
        let e = c.write(&mut ctx(0, 0, &mut s), 8, 4, 0xffff_ffff).unwrap();
        assert!(e.irq_changed);
        assert!(c.msip(2) && !c.msip(0) && !c.msip(1));
        assert_eq!(c.read(&mut ctx(0, 0, &mut s), 8, 4), Ok(1));
        c.write(&mut ctx(0, 0, &mut s), 8, 4, 2).unwrap();
        assert!(!c.msip(2));
        // A hart that does not exist reads as zero and ignores writes.
        c.write(&mut ctx(0, 0, &mut s), 4 * 100, 4, 1).unwrap();
        assert_eq!(c.read(&mut ctx(0, 0, &mut s), 4 * 100, 4), Ok(0));
        assert_eq!(c.read(&mut ctx(0, 0, &mut s), 0, 8), Err(BadAccess));
    }

    #[test]
    fn drop_until_tick_hides_a_cross_hart_msip_until_the_targets_timer() {
        let mut c = Clint::new(2, CLK);
        c.set_ipi_policy(IpiPolicy::DropUntilTick);
        let mut s = NoScheduler;
        // Hart 1's tick at mtime 40 = cycle 4000.
        c.write(&mut ctx(1, 0, &mut s), MTIMECMP_BASE + 8, 8, 40)
            .unwrap();
        // Hart 0 raises hart 1's msip at cycle 100: the register shows it, hart 1 does not see it.
        c.write(&mut ctx(0, 100, &mut s), 4, 4, 1).unwrap();
        assert!(c.msip(1));
        assert_eq!(c.read(&mut ctx(1, 200, &mut s), 4, 4), Ok(1));
        assert!(!c.msip_pending(1, 3_999));
        assert_eq!(c.settle_ipi(1, 3_999), None);
        assert!(c.msip_pending(1, 4_000), "visible once the tick is pending");
        assert_eq!(
            c.settle_ipi(1, 4_000),
            Some(Release::AtTick { held_cycles: 3_900 })
        );
        // Latched: the timer being re-armed does not hide it again.
        c.write(&mut ctx(1, 4_010, &mut s), MTIMECMP_BASE + 8, 8, 80)
            .unwrap();
        assert!(c.msip_pending(1, 4_020));
        c.write(&mut ctx(1, 4_030, &mut s), 4, 4, 0).unwrap();
        assert!(!c.msip_pending(1, 4_040));
        // A hart's write to its own msip is not an IPI: never held.
        c.write(&mut ctx(1, 4_050, &mut s), 4, 4, 1).unwrap();
        assert!(c.msip_pending(1, 4_050));
        let st: std::collections::BTreeMap<String, u64> =
            c.stats().into_iter().map(|s| (s.name, s.value)).collect();
        assert_eq!(st["clint.ipis_cross"], 1);
        assert_eq!(st["clint.ipis_held_for_tick"], 1);
        assert_eq!(st["clint.ipis_released_at_tick"], 1);
        assert_eq!(st["clint.ipi_held_cycles"], 3_900);
    }

    #[test]
    fn delay_shows_the_bit_n_cycles_after_the_write() {
        let mut c = Clint::new(2, CLK);
        c.set_ipi_policy(IpiPolicy::Delay(500));
        let mut s = NoScheduler;
        c.write(&mut ctx(1, 1_000, &mut s), 0, 4, 1).unwrap();
        assert_eq!(c.ipi_deadline(0), Some(1_500));
        assert!(!c.msip_pending(0, 1_499));
        assert!(c.msip_pending(0, 1_500));
        // Deliver (the default) shows it from the cycle it was sent.
        let mut d = Clint::new(2, CLK);
        d.write(&mut ctx(1, 1_000, &mut s), 0, 4, 1).unwrap();
        assert!(!d.msip_pending(0, 999) && d.msip_pending(0, 1_000));
        assert_eq!(d.ipi_deadline(0), None);
    }
}
