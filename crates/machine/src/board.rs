//! The devices of one machine behind its physical address map, and the
//! [`SystemBus`] the harts call for every access outside RAM.

use hs_bus::{Access, BusFault, SystemBus, WriteEffect};
use hs_devices::{
    Clint, DevCtx, Device, DeviceMap, GoldfishRtc, Placement, FdtCtx, FdtNode, Plic, Rom, Scheduler, Syscon,
    Uart16550, VirtioMmio,
};

use crate::events::EventQueue;

/// Which device a map range belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    Rom,
    Syscon,
    Rtc,
    Clint,
    Plic,
    Uart,
    Virtio(u8),
    Extra(u16),
}

/// Every device of the board, by kind, so the machine can reach the ones it
/// drives (CLINT/PLIC for interrupts, UART for the console, syscon for stop).
pub struct Devices {
    pub rom: Rom,
    pub syscon: Syscon,
    pub rtc: GoldfishRtc,
    pub clint: Clint,
    pub plic: Plic,
    pub uart: Uart16550,
    pub virtio: Vec<VirtioMmio>,
    pub extra: Vec<Box<dyn Device>>,
}

impl Devices {
    /// The device in `slot`. Slots come from the map built with these
    /// devices, so the indices are valid.
    pub fn get(&mut self, slot: Slot) -> &mut dyn Device {
        match slot {
            Slot::Rom => &mut self.rom,
            Slot::Syscon => &mut self.syscon,
            Slot::Rtc => &mut self.rtc,
            Slot::Clint => &mut self.clint,
            Slot::Plic => &mut self.plic,
            Slot::Uart => &mut self.uart,
            Slot::Virtio(i) => &mut self.virtio[i as usize],
            Slot::Extra(i) => &mut *self.extra[i as usize],
        }
    }
    pub fn get_ref(&self, slot: Slot) -> &dyn Device {
        match slot {
            Slot::Rom => &self.rom,
            Slot::Syscon => &self.syscon,
            Slot::Rtc => &self.rtc,
            Slot::Clint => &self.clint,
            Slot::Plic => &self.plic,
            Slot::Uart => &self.uart,
            Slot::Virtio(i) => &self.virtio[i as usize],
            Slot::Extra(i) => &*self.extra[i as usize],
        }
    }
}

/// Routes a device's timer requests into the machine's queue, tagged with its slot.
struct SlotScheduler<'a> {
    queue: &'a mut EventQueue<(Slot, u64)>,
    slot: Slot,
    scheduled: bool,
}

impl Scheduler for SlotScheduler<'_> {
    fn schedule(&mut self, cycle: u64, token: u64) {
        self.queue.push(cycle, (self.slot, token));
        self.scheduled = true;
    }
}

/// What the board saw for observations: PLIC claims (which source an
/// external interrupt was for) and CLINT `msip` writes (IPIs).
#[derive(Clone, Debug, Default)]
pub struct BoardLog {
    /// Keep the individual claims and IPIs (for the timeline), not only counts.
    pub keep_events: bool,
    /// Most claims/IPIs kept; later ones are counted only.
    pub max_events: usize,
    /// `(hart, cycle, source)` of every non-empty claim, in order.
    pub claims: Vec<(u16, u64, u32)>,
    /// `(sender, cycle, target)` of every `msip` write that raised a bit.
    pub ipis: Vec<(u16, u64, u16)>,
    pub counts: BoardCounts,
}

/// Cumulative counts of [`BoardLog`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BoardCounts {
    /// Claims by (claiming hart, source).
    pub claims: std::collections::BTreeMap<(u16, u32), u64>,
    /// IPIs sent by each hart.
    pub ipis_sent: std::collections::BTreeMap<u16, u64>,
    /// IPIs raised on each hart.
    pub ipis_raised: std::collections::BTreeMap<u16, u64>,
}

impl BoardCounts {
    /// `self - earlier`, per key.
    pub fn since(&self, earlier: &BoardCounts) -> BoardCounts {
        fn sub<K: Ord + Clone>(a: &std::collections::BTreeMap<K, u64>, b: &std::collections::BTreeMap<K, u64>) -> std::collections::BTreeMap<K, u64> {
            a.iter()
                .map(|(k, v)| (k.clone(), v.saturating_sub(b.get(k).copied().unwrap_or(0))))
                .filter(|(_, v)| *v > 0)
                .collect()
        }
        BoardCounts {
            claims: sub(&self.claims, &earlier.claims),
            ipis_sent: sub(&self.ipis_sent, &earlier.ipis_sent),
            ipis_raised: sub(&self.ipis_raised, &earlier.ipis_raised),
        }
    }
}

impl BoardLog {
    fn claim(&mut self, hart: usize, cycle: u64, source: u32) {
        let hart = hart as u16;
        *self.counts.claims.entry((hart, source)).or_default() += 1;
        if self.keep_events && self.claims.len() < self.max_events {
            self.claims.push((hart, cycle, source));
        }
    }

    fn ipi(&mut self, from: usize, cycle: u64, to: usize) {
        let (from, to) = (from as u16, to as u16);
        *self.counts.ipis_sent.entry(from).or_default() += 1;
        *self.counts.ipis_raised.entry(to).or_default() += 1;
        if self.keep_events && self.ipis.len() < self.max_events {
            self.ipis.push((from, cycle, to));
        }
    }
}

pub struct Board {
    pub map: DeviceMap<Slot>,
    pub devs: Devices,
    pub events: EventQueue<(Slot, u64)>,
    /// Platform interrupt bits each hart was last given (`mip` layout).
    delivered: Vec<u64>,
    pub stat_unmapped: u64,
    pub stat_bad_access: u64,
    pub stat_mmio_reads: u64,
    pub stat_mmio_writes: u64,
    /// Claim and IPI log, when the run is observed.
    pub log: Option<Box<BoardLog>>,
}

impl Board {
    pub fn new(map: DeviceMap<Slot>, devs: Devices, harts: usize) -> Self {
        Self {
            map,
            devs,
            events: EventQueue::new(),
            delivered: vec![0; harts],
            stat_unmapped: 0,
            stat_bad_access: 0,
            stat_mmio_reads: 0,
            stat_mmio_writes: 0,
            log: None,
        }
    }

    /// Record what `hart` was told by `set_platform_irqs`.
    pub fn note_delivered(&mut self, hart: usize, bits: u64) {
        if let Some(d) = self.delivered.get_mut(hart) {
            *d = bits;
        }
    }

    /// Do the PLIC's outputs for `hart` differ from what it was last told?
    /// (A claim read lowers SEIP without an exit; the next write catches it.)
    fn external_stale(&self, hart: usize) -> bool {
        const EXT: u64 = (1 << 9) | (1 << 11);
        let now = ((self.devs.plic.seip(hart) as u64) << 9) | ((self.devs.plic.meip(hart) as u64) << 11);
        self.delivered.get(hart).is_some_and(|d| d & EXT != now)
    }

    /// `mip` bits the platform drives for `hart` at its cycle `now`.
    pub fn irq_bits(&self, hart: usize, now: u64) -> u64 {
        let d = &self.devs;
        ((d.clint.msip(hart) as u64) << 3)
            | ((d.clint.mtip(hart, now) as u64) << 7)
            | ((d.plic.seip(hart) as u64) << 9)
            | ((d.plic.meip(hart) as u64) << 11)
    }

    /// Run every device callback due at or before `now`.
    pub fn fire_events(&mut self, now: u64) {
        let mut fired = false;
        while let Some((cycle, (slot, token))) = self.events.pop_due(now) {
            let mut sched = SlotScheduler { queue: &mut self.events, slot, scheduled: false };
            let mut ctx = DevCtx::new(0, cycle, &mut sched);
            self.devs.get(slot).event(&mut ctx, token);
            fired = true;
        }
        if fired {
            self.devs.plic.update();
        }
    }

    /// Device-tree nodes of every mapped device, in address order.
    pub fn fdt_nodes(&self, ctx: &FdtCtx) -> Vec<Vec<(Placement, FdtNode)>> {
        self.map.ranges().map(|(_, base, _, slot)| self.devs.get_ref(slot).fdt_nodes(base, ctx)).collect()
    }
}

impl SystemBus for Board {
    fn mmio_read(&mut self, acc: Access, pa: u64, size: u8) -> Result<u64, BusFault> {
        let Some((slot, off)) = self.map.lookup(pa, size as u64) else {
            self.stat_unmapped += 1;
            return Err(BusFault::Unmapped(pa));
        };
        self.stat_mmio_reads += 1;
        let mut sched = SlotScheduler { queue: &mut self.events, slot, scheduled: false };
        let mut ctx = DevCtx::new(acc.hart, acc.now, &mut sched);
        let r = self.devs.get(slot).read(&mut ctx, off, size);
        if let (Some(log), Slot::Plic, Ok(source)) = (self.log.as_deref_mut(), slot, &r) {
            let claim_reg = off >= hs_devices::plic::CONTEXT_BASE
                && (off - hs_devices::plic::CONTEXT_BASE) % hs_devices::plic::CONTEXT_STRIDE == 4;
            if claim_reg && *source != 0 {
                log.claim(acc.hart, acc.now, *source as u32);
            }
        }
        if !matches!(slot, Slot::Clint | Slot::Rom) {
            // A read can lower a line (RBR drains the FIFO, a claim takes a source).
            self.devs.plic.update();
        }
        r.map_err(|_| {
            self.stat_bad_access += 1;
            BusFault::BadAccess(pa, size)
        })
    }

    fn mmio_write(&mut self, acc: Access, pa: u64, size: u8, val: u64) -> Result<WriteEffect, BusFault> {
        let Some((slot, off)) = self.map.lookup(pa, size as u64) else {
            self.stat_unmapped += 1;
            return Err(BusFault::Unmapped(pa));
        };
        self.stat_mmio_writes += 1;
        if let (Some(log), Slot::Clint) = (self.log.as_deref_mut(), slot) {
            let msip = off < hs_devices::clint::MTIMECMP_BASE && off % 4 == 0 && size == 4;
            if msip && val & 1 == 1 && (off / 4) < self.devs.clint.harts() as u64 {
                log.ipi(acc.hart, acc.now, (off / 4) as usize);
            }
        }
        let mut sched = SlotScheduler { queue: &mut self.events, slot, scheduled: false };
        let mut ctx = DevCtx::new(acc.hart, acc.now, &mut sched);
        let r = self.devs.get(slot).write(&mut ctx, off, size, val);
        // A new device event may fall inside the current slice: make the
        // hart stop so the machine can end the slice at it.
        let scheduled = sched.scheduled;
        let mut eff = r.map_err(|_| {
            self.stat_bad_access += 1;
            BusFault::BadAccess(pa, size)
        })?;
        if !matches!(slot, Slot::Clint | Slot::Rom) {
            // Devices reach harts only through the PLIC: compare its outputs
            // for the writing hart with what that hart last saw. Other harts
            // pick up changes when their turn comes.
            self.devs.plic.update();
            eff.irq_changed = self.external_stale(acc.hart) || scheduled;
        }
        Ok(eff)
    }
}
