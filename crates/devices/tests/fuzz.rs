//! Random register traffic against every device: whatever the guest
//! writes, a device answers or refuses the access, and never panics.

use hs_devices::*;
use proptest::prelude::*;

#[derive(Default)]
struct Sched(Vec<(u64, u64)>);
impl Scheduler for Sched {
    fn schedule(&mut self, cycle: u64, token: u64) {
        self.0.push((cycle, token));
    }
}

const CLK: Clock = Clock {
    hz: 1_000_000_000,
    cycles_per_tick: 100,
};

/// A backend that fails every other kick, to exercise both outcomes.
struct Flaky(u64);
impl VirtioBackend for Flaky {
    fn device_id(&self) -> u32 {
        2
    }
    fn device_features(&self) -> u64 {
        1
    }
    fn num_queues(&self) -> u16 {
        2
    }
    fn queue_max(&self) -> u16 {
        256
    }
    fn config_read(&mut self, offset: u64, _size: u8) -> u64 {
        offset.wrapping_mul(0x0101_0101_0101_0101)
    }
    fn config_write(&mut self, _offset: u64, _size: u8, _val: u64) {}
    fn notify(
        &mut self,
        _ctx: &mut DevCtx,
        _index: u16,
        _q: &virtio_mmio::QueueConfig,
    ) -> Result<u32, virtio_mmio::NeedsReset> {
        self.0 += 1;
        if self.0 & 1 == 0 {
            Ok(virtio_mmio::INT_USED_BUFFER)
        } else {
            Err(virtio_mmio::NeedsReset)
        }
    }
}

fn devices() -> (Vec<Box<dyn Device>>, Plic) {
    let mut plic = Plic::new(4);
    let uart = Uart16550::new(Box::new(plic.connect(10).unwrap()));
    let rtc = GoldfishRtc::new(
        CLK,
        rtc::DEFAULT_EPOCH_SECS,
        Box::new(plic.connect(11).unwrap()),
    );
    let v = VirtioMmio::new(0, Box::new(plic.connect(1).unwrap()), None);
    let devs: Vec<Box<dyn Device>> = vec![
        Box::new(Clint::new(4, CLK)),
        Box::new(Plic::new(4)),
        Box::new(uart),
        Box::new(rtc),
        Box::new(Syscon::new()),
        Box::new(v),
        Box::new(Rom::new("mrom", 0xf000, vec![0xaa; 64])),
        Box::new(VirtioMmio::new(
            1,
            Box::new(plic.connect(2).unwrap()),
            Some(Box::new(Flaky(0))),
        )),
        // The CLINT with the IPI knob holding or delaying cross-hart msip writes.
        Box::new(clint_with(IpiPolicy::Delay(1000))),
        Box::new(clint_with(IpiPolicy::DropUntilTick)),
    ];
    (devs, plic)
}

fn clint_with(policy: IpiPolicy) -> Clint {
    let mut c = Clint::new(4, CLK);
    c.set_ipi_policy(policy);
    c
}

#[derive(Debug, Clone)]
struct Op {
    dev: usize,
    write: bool,
    offset: u64,
    size: u8,
    val: u64,
    hart: usize,
    now: u64,
    event: bool,
}

fn op() -> impl Strategy<Value = Op> {
    (
        0usize..10,
        any::<bool>(),
        prop_oneof![
            0u64..0x200,
            0u64..0x10_000,
            0x1f_0000u64..0x21_0000,
            any::<u64>()
        ],
        prop_oneof![Just(1u8), Just(2), Just(4), Just(8), 0u8..=16],
        prop_oneof![any::<u64>(), 0u64..0x100, Just(0x5555), Just(0x7777)],
        0usize..6,
        any::<u64>(),
        prop::bool::weighted(0.05),
    )
        .prop_map(|(dev, write, offset, size, val, hart, now, event)| Op {
            dev,
            write,
            offset,
            size,
            val,
            hart,
            now,
            event,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]
    #[test]
    fn random_register_traffic_never_panics(ops in prop::collection::vec(op(), 1..200)) {
        let (mut devs, mut plic) = devices();
        let mut sched = Sched::default();
        for o in ops {
            let d = &mut devs[o.dev];
            // The map only hands a device offsets inside its window.
            let offset = o.offset % d.size();
            let mut ctx = DevCtx::new(o.hart, o.now, &mut sched);
            if o.event {
                d.event(&mut ctx, o.val);
            } else if o.write {
                let _ = d.write(&mut ctx, offset, o.size, o.val);
            } else if let Ok(v) = d.read(&mut ctx, offset, o.size) {
                if o.size < 8 && (1..=8).contains(&o.size) {
                    prop_assert!(v >> (o.size as u32 * 8) == 0, "{} returned {v:#x} for a {}-byte read", d.name(), o.size);
                }
            }
            plic.update();
        }
        // What the machine asks the knob between runs must not panic either.
        let mut clints = 0;
        for d in &mut devs {
            if let Some(c) = (**d).as_any_mut().downcast_mut::<Clint>() {
                clints += 1;
                for h in 0..6 {
                    let _ = c.settle_ipi(h, u64::MAX / 2);
                    let _ = c.msip_at(h, 0);
                }
            }
        }
        prop_assert_eq!(clints, 3, "the three CLINTs are reached");
        for d in &devs {
            let _ = d.stats();
        }
    }
}
