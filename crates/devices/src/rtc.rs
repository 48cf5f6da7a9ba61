//! Goldfish RTC (`google,goldfish-rtc`): nanoseconds since the Unix epoch
//! and one alarm. Guest time is a fixed, configurable epoch plus simulated
//! time; the host clock is never read.

use crate::fdt::{FdtCtx, FdtNode, Placement};
use crate::{BadAccess, Clock, DevCtx, Device, Grant, IrqLine, Stat, WriteEffect};

pub const SIZE: u64 = 0x1000;
/// 2026-01-01T00:00:00Z.
pub const DEFAULT_EPOCH_SECS: u64 = 1_767_225_600;

const TIME_LOW: u64 = 0x00;
const TIME_HIGH: u64 = 0x04;
const ALARM_LOW: u64 = 0x08;
const ALARM_HIGH: u64 = 0x0c;
const IRQ_ENABLED: u64 = 0x10;
const CLEAR_ALARM: u64 = 0x14;
const ALARM_STATUS: u64 = 0x18;
const CLEAR_INTERRUPT: u64 = 0x1c;
const ALARM_TOKEN: u64 = 0;

#[derive(serde::Serialize, serde::Deserialize)]
pub struct GoldfishRtc {
    #[serde(skip)]
    clock: Clock,
    #[serde(skip)]
    irq: Box<dyn IrqLine>,
    epoch_ns: u64,
    /// Added (wrapping) to epoch + simulated time; set by guest writes.
    offset_ns: u64,
    time_high_latch: u32,
    alarm: u64,
    alarm_running: bool,
    irq_enabled: bool,
    irq_pending: bool,
    stat_alarms: u64,
    stat_time_reads: u64,
}

crate::persist_by_serde!(GoldfishRtc, keep: [clock, irq]);

impl GoldfishRtc {
    pub fn new(clock: Clock, epoch_secs: u64, irq: Box<dyn IrqLine>) -> Self {
        Self {
            clock,
            irq,
            epoch_ns: epoch_secs.saturating_mul(1_000_000_000),
            offset_ns: 0,
            time_high_latch: 0,
            alarm: 0,
            alarm_running: false,
            irq_enabled: false,
            irq_pending: false,
            stat_alarms: 0,
            stat_time_reads: 0,
        }
    }

    /// Guest wall-clock time in ns at simulated cycle `now`.
    pub fn time_ns(&self, now: u64) -> u64 {
        self.epoch_ns
            .wrapping_add(self.offset_ns)
            .wrapping_add(self.clock.cycles_to_ns(now))
    }

    fn update_irq(&mut self) {
        self.irq.set_level(self.irq_pending && self.irq_enabled);
    }

    fn fire(&mut self) {
        self.alarm_running = false;
        self.irq_pending = true;
        self.stat_alarms += 1;
        self.update_irq();
    }

    fn arm(&mut self, ctx: &mut DevCtx) {
        let now_ns = self.time_ns(ctx.now);
        if self.alarm <= now_ns {
            self.fire();
            return;
        }
        self.alarm_running = true;
        let wait = self.clock.ns_to_cycles(self.alarm - now_ns);
        // One token: re-arming moves the pending callback.
        ctx.events
            .schedule(ctx.now.saturating_add(wait.max(1)), ALARM_TOKEN);
    }

    fn set_time(&mut self, ctx: &mut DevCtx, new_ns: u64) {
        let cur = self.time_ns(ctx.now);
        self.offset_ns = self.offset_ns.wrapping_add(new_ns.wrapping_sub(cur));
        if self.alarm_running {
            self.arm(ctx);
        }
    }
}

impl Device for GoldfishRtc {
    crate::persistent!();
    fn name(&self) -> String {
        "rtc".into()
    }
    fn size(&self) -> u64 {
        SIZE
    }

    fn read(&mut self, ctx: &mut DevCtx, offset: u64, size: u8) -> Result<u64, BadAccess> {
        if size != 4 || offset & 3 != 0 {
            return Err(BadAccess);
        }
        let v = match offset {
            TIME_LOW => {
                self.stat_time_reads += 1;
                let t = self.time_ns(ctx.now);
                self.time_high_latch = (t >> 32) as u32;
                t as u32
            }
            TIME_HIGH => self.time_high_latch,
            ALARM_LOW => self.alarm as u32,
            ALARM_HIGH => (self.alarm >> 32) as u32,
            IRQ_ENABLED => self.irq_enabled as u32,
            ALARM_STATUS => self.alarm_running as u32,
            _ => 0,
        };
        Ok(v as u64)
    }

    fn write(
        &mut self,
        ctx: &mut DevCtx,
        offset: u64,
        size: u8,
        val: u64,
    ) -> Result<WriteEffect, BadAccess> {
        if size != 4 || offset & 3 != 0 {
            return Err(BadAccess);
        }
        let v = val as u32 as u64;
        match offset {
            TIME_LOW => {
                let cur = self.time_ns(ctx.now);
                self.set_time(ctx, (cur & !0xffff_ffff) | v);
            }
            TIME_HIGH => {
                let cur = self.time_ns(ctx.now);
                self.set_time(ctx, (cur & 0xffff_ffff) | (v << 32));
            }
            // Writing the low half arms the alarm (the driver writes high first).
            ALARM_LOW => {
                self.alarm = (self.alarm & !0xffff_ffff) | v;
                self.arm(ctx);
            }
            ALARM_HIGH => self.alarm = (self.alarm & 0xffff_ffff) | (v << 32),
            IRQ_ENABLED => {
                self.irq_enabled = v & 1 != 0;
                self.update_irq();
            }
            CLEAR_ALARM => self.alarm_running = false,
            CLEAR_INTERRUPT => {
                self.irq_pending = false;
                self.update_irq();
            }
            _ => {}
        }
        Ok(WriteEffect {
            irq_changed: true,
            stop: false,
        })
    }

    fn event(&mut self, ctx: &mut DevCtx, token: u64) {
        if token != ALARM_TOKEN || !self.alarm_running {
            return; // cleared since it was scheduled
        }
        if self.time_ns(ctx.now) >= self.alarm {
            self.fire();
        } else {
            self.arm(ctx);
        }
    }

    fn fdt_nodes(&self, g: &Grant, ctx: &FdtCtx) -> Vec<(Placement, FdtNode)> {
        let node = FdtNode::new(g.node_name("rtc"))
            .u32s("interrupts", g.irqs.clone())
            .u32("interrupt-parent", ctx.interrupt_parent)
            .reg(g.base, g.size)
            .str("compatible", "google,goldfish-rtc");
        vec![(Placement::Soc, node)]
    }

    fn stats(&self) -> Vec<Stat> {
        vec![
            Stat::new("rtc.time_reads", self.stat_time_reads, "reads of TIME_LOW"),
            Stat::new("rtc.alarms", self.stat_alarms, "alarms fired"),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Scheduler, WireIrq};

    const CLK: Clock = Clock {
        hz: 1_000_000_000,
        cycles_per_tick: 100,
    };

    #[derive(Default)]
    struct Rec(Vec<(u64, u64)>);
    impl Scheduler for Rec {
        fn schedule(&mut self, cycle: u64, token: u64) {
            self.0.push((cycle, token));
        }
    }

    fn rd(r: &mut GoldfishRtc, now: u64, off: u64) -> u64 {
        r.read(&mut DevCtx::new(0, now, &mut Rec::default()), off, 4)
            .unwrap()
    }

    #[test]
    fn time_is_epoch_plus_simulated_time() {
        let mut r = GoldfishRtc::new(CLK, DEFAULT_EPOCH_SECS, Box::new(WireIrq::new()));
        let now = 2_500_000_000; // 2.5 s at 1 GHz
        let lo = rd(&mut r, now, TIME_LOW);
        let hi = rd(&mut r, now + 1_000_000_000, TIME_HIGH); // latched: later reads do not tear
        let t = (hi << 32) | lo;
        assert_eq!(t, DEFAULT_EPOCH_SECS * 1_000_000_000 + 2_500_000_000);
        // The driver sets time high then low.
        let mut ev = Rec::default();
        let target: u64 = 1_000_000_000_000_000_000;
        r.write(
            &mut DevCtx::new(0, now, &mut ev),
            TIME_HIGH,
            4,
            target >> 32,
        )
        .unwrap();
        r.write(
            &mut DevCtx::new(0, now, &mut ev),
            TIME_LOW,
            4,
            target & 0xffff_ffff,
        )
        .unwrap();
        assert_eq!(r.time_ns(now), target);
        assert_eq!(r.time_ns(now + 1000), target + 1000);
    }

    #[test]
    fn alarm_fires_through_the_event_queue() {
        let irq = WireIrq::new();
        let mut r = GoldfishRtc::new(CLK, 0, Box::new(irq.clone()));
        let mut ev = Rec::default();
        let mut c = DevCtx::new(0, 1000, &mut ev);
        r.write(&mut c, IRQ_ENABLED, 4, 1).unwrap();
        r.write(&mut c, ALARM_HIGH, 4, 0).unwrap();
        r.write(&mut c, ALARM_LOW, 4, 5000).unwrap();
        assert_eq!(r.read(&mut c, ALARM_STATUS, 4), Ok(1));
        assert_eq!(ev.0, vec![(5000, ALARM_TOKEN)]);
        assert!(!irq.is_high());
        let mut ev2 = Rec::default();
        r.event(&mut DevCtx::new(0, 5000, &mut ev2), ALARM_TOKEN);
        assert!(irq.is_high());
        assert_eq!(rd(&mut r, 5000, ALARM_STATUS), 0);
        r.write(&mut DevCtx::new(0, 5000, &mut ev2), CLEAR_INTERRUPT, 4, 1)
            .unwrap();
        assert!(!irq.is_high());
        // A cleared alarm's event is stale and does nothing.
        let mut c = DevCtx::new(0, 6000, &mut ev2);
        r.write(&mut c, ALARM_LOW, 4, 9000).unwrap();
        r.write(&mut c, CLEAR_ALARM, 4, 1).unwrap();
        r.event(&mut DevCtx::new(0, 9000, &mut ev2), ALARM_TOKEN);
        assert!(!irq.is_high());
        // An alarm in the past fires at once.
        r.write(&mut DevCtx::new(0, 9000, &mut ev2), ALARM_LOW, 4, 10)
            .unwrap();
        assert!(irq.is_high());
    }
}
