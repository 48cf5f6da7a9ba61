//! The devices of one machine behind its physical address map, and the
//! [`SystemBus`] the harts call for every access outside RAM.
//!
//! The board hands out resources: [`Board::add`] takes what a device asks
//! for ([`Want`]: a register window, interrupt lines, a phandle), allocates
//! it (a checked half-open window in the map — at a fixed address or in the
//! platform window —, PLIC sources, the next phandle), builds the device
//! from the result ([`Attach`]) and keeps the [`Grant`] the device writes its
//! device-tree node from. The PLIC and CLINT are the board's own interrupt
//! fabric; every other device is reached only through the [`Device`] trait.

use std::collections::BTreeMap;

use hs_bus::{Access, BusFault, GuestRam, IrqLine, Signal, SystemBus, WriteEffect};
use hs_devices::dma::{DmaFault, DmaMemory};
use hs_devices::{
    Attach, Clint, Clock, Console, DevCtx, Device, DeviceMap, FdtCtx, FdtNode, Grant, IrqWant,
    Note, NoteSink, Placement, Plic, Plug, Scheduler, Signals, StopRequest, Want, Window,
};

use crate::error::MachineError;
use crate::events::EventQueue;
use crate::layout::*;

/// Which device a map range or an event belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Target {
    Plic,
    Clint,
    /// Index into the board's devices ([`DevId`]).
    Dev(u16),
}

/// A device added to the board, in add order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DevId(pub u16);

/// Routes a device's timer requests into the machine's queue, tagged with its target.
struct TargetScheduler<'a> {
    queue: &'a mut EventQueue<(Target, u64)>,
    target: Target,
    scheduled: bool,
}

impl Scheduler for TargetScheduler<'_> {
    fn schedule(&mut self, cycle: u64, token: u64) {
        self.queue.push(cycle, (self.target, token));
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
        fn sub<K: Ord + Clone>(
            a: &std::collections::BTreeMap<K, u64>,
            b: &std::collections::BTreeMap<K, u64>,
        ) -> std::collections::BTreeMap<K, u64> {
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

impl NoteSink for BoardLog {
    fn note(&mut self, hart: usize, cycle: u64, note: Note) {
        match note {
            Note::Claim { source } => self.claim(hart, cycle, source),
            Note::Ipi { target } => self.ipi(hart, cycle, target),
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

/// The board's own part of a snapshot.
#[derive(serde::Serialize, serde::Deserialize)]
struct BoardState {
    signals: (u64, BTreeMap<String, [u64; 6]>),
    seen_generation: u64,
    events: Vec<((u64, u64), (Target, u64))>,
    delivered: Vec<u64>,
    counts: [u64; 4],
}

pub struct Board {
    map: DeviceMap<Target>,
    /// The interrupt controller every device line goes to.
    pub plic: Plic,
    pub clint: Clint,
    plic_grant: Grant,
    clint_grant: Grant,
    devs: Vec<Box<dyn Device>>,
    grants: Vec<Grant>,
    by_name: BTreeMap<String, Target>,
    /// Devices that asked to hear about signal changes.
    listeners: Vec<u16>,
    /// Devices that move data as bus masters (they get [`DevCtx::master`]).
    masters: Vec<bool>,
    /// (device, device it refers to), checked by [`Board::check_references`].
    references: Vec<(String, String)>,
    /// The first device with a console side.
    console: Option<usize>,
    signals: Signals,
    /// `signals.generation()` when the listeners last sampled.
    seen_generation: u64,
    /// PLIC sources given out, with the device that has each.
    irqs: BTreeMap<u32, String>,
    next_phandle: u32,
    ram: GuestRam,
    clock: Clock,
    pub events: EventQueue<(Target, u64)>,
    /// Platform interrupt bits each hart was last given (`mip` layout).
    delivered: Vec<u64>,
    pub stat_unmapped: u64,
    pub stat_bad_access: u64,
    pub stat_mmio_reads: u64,
    pub stat_mmio_writes: u64,
    /// Claim and IPI log, when the run is observed.
    pub log: Option<Box<BoardLog>>,
}

/// Size alignment of a window placed by the board: a power of two, at least a page.
fn window_align(size: u64) -> u64 {
    size.checked_next_power_of_two()
        .unwrap_or(1 << 63)
        .max(0x1000)
}

impl Board {
    /// A board with its interrupt fabric (PLIC and CLINT at QEMU `virt`'s
    /// addresses) for `harts` harts; phandles start at `first_phandle`
    /// (the CPUs have the ones below). The PLIC takes the first phandle.
    pub fn new(
        harts: usize,
        clock: Clock,
        ram: &GuestRam,
        first_phandle: u32,
    ) -> Result<Self, MachineError> {
        let mut map = DeviceMap::new();
        map.insert("clint", CLINT_BASE, hs_devices::clint::SIZE, Target::Clint)?;
        map.insert("plic", PLIC_BASE, hs_devices::plic::SIZE, Target::Plic)?;
        let grant = |name: &str, base, size, phandle| Grant {
            name: name.into(),
            base,
            size,
            irqs: Vec::new(),
            phandle,
        };
        let b = Self {
            map,
            plic: Plic::new(harts),
            clint: Clint::new(harts, clock),
            plic_grant: grant(
                "plic",
                PLIC_BASE,
                hs_devices::plic::SIZE,
                Some(first_phandle),
            ),
            clint_grant: grant("clint", CLINT_BASE, hs_devices::clint::SIZE, None),
            devs: Vec::new(),
            grants: Vec::new(),
            by_name: BTreeMap::from([
                ("plic".to_string(), Target::Plic),
                ("clint".to_string(), Target::Clint),
            ]),
            listeners: Vec::new(),
            masters: Vec::new(),
            references: Vec::new(),
            console: None,
            signals: Signals::new(),
            seen_generation: 0,
            irqs: BTreeMap::new(),
            next_phandle: first_phandle + 1,
            ram: ram.clone(),
            clock,
            events: EventQueue::new(),
            delivered: vec![0; harts],
            stat_unmapped: 0,
            stat_bad_access: 0,
            stat_mmio_reads: 0,
            stat_mmio_writes: 0,
            log: None,
        };
        for (name, base, end, _) in b.map.ranges() {
            b.check_ram(name, base, end)?;
        }
        Ok(b)
    }

    /// RAM is not on the device map (harts reach it directly), but no device may sit over it.
    fn check_ram(&self, name: &str, base: u64, end: u64) -> Result<(), MachineError> {
        let (ram_base, ram_end) = (self.ram.base(), self.ram.base() + self.ram.size());
        if base < ram_end && ram_base < end {
            return Err(hs_devices::MapError::Overlap {
                a: name.to_string(),
                a_base: base,
                a_end: end,
                b: "dram".into(),
                b_base: ram_base,
                b_end: ram_end,
            }
            .into());
        }
        Ok(())
    }

    /// First aligned free window of `size` bytes in the platform window.
    fn place(&self, name: &str, size: u64) -> Result<u64, MachineError> {
        let align = window_align(size);
        let mut at = PLATFORM_BASE.next_multiple_of(align);
        while at
            .checked_add(size)
            .is_some_and(|end| end <= PLATFORM_BASE + PLATFORM_SIZE)
        {
            let end = at + size;
            match self.map.ranges().find(|&(_, b, e, _)| b < end && at < e) {
                None => return Ok(at),
                Some((_, _, e, _)) => at = e.next_multiple_of(align),
            }
        }
        Err(MachineError::Wiring(format!(
            "device `{name}`: no free {size:#x}-byte window is left in the platform window [{PLATFORM_BASE:#x}..{:#x})",
            PLATFORM_BASE + PLATFORM_SIZE
        )))
    }

    fn take_irq(&mut self, name: &str, want: IrqWant) -> Result<u32, MachineError> {
        let src = match want {
            IrqWant::At(src) => {
                if !(1..=hs_devices::plic::NUM_SOURCES).contains(&src) {
                    return Err(MachineError::Wiring(format!("device `{name}`: the PLIC has no source {src}")));
                }
                if let Some(owner) = self.irqs.get(&src) {
                    return Err(MachineError::Wiring(format!("device `{name}`: PLIC source {src} is already given to `{owner}`")));
                }
                src
            }
            IrqWant::Any => (PLATFORM_IRQ_FIRST..=PLATFORM_IRQ_LAST).find(|s| !self.irqs.contains_key(s)).ok_or_else(|| {
                MachineError::Wiring(format!(
                    "device `{name}`: every platform interrupt line (PLIC sources {PLATFORM_IRQ_FIRST} to {PLATFORM_IRQ_LAST}) is taken"
                ))
            })?,
        };
        self.irqs.insert(src, name.to_string());
        Ok(src)
    }

    /// Allocate what `want` asks for, build the device with it and map it.
    /// Nothing is allocated when the request is refused.
    pub fn add(
        &mut self,
        want: Want,
        make: impl FnOnce(&mut Attach) -> Box<dyn Device>,
    ) -> Result<DevId, MachineError> {
        let name = want.name.clone();
        if name.is_empty() || self.by_name.contains_key(&name) {
            return Err(MachineError::Wiring(format!(
                "two devices are called `{name}` (names must be unique and not empty)"
            )));
        }
        let (base, size) = match want.window {
            None => (0, 0),
            Some(Window::At { base, size }) => (base, size),
            Some(Window::Anywhere { size }) if size > 0 => (self.place(&name, size)?, size),
            Some(Window::Anywhere { size }) => {
                return Err(hs_devices::MapError::BadRange {
                    name,
                    base: 0,
                    size,
                }
                .into())
            }
        };
        let id = u16::try_from(self.devs.len())
            .map_err(|_| MachineError::Wiring("too many devices".into()))?;
        if let Some(end) = base.checked_add(size).filter(|_| size > 0) {
            self.check_ram(&name, base, end)?;
        }
        let mut irqs = Vec::new();
        for w in &want.irqs {
            match self.take_irq(&name, *w) {
                Ok(src) => irqs.push(src),
                Err(e) => {
                    irqs.iter().for_each(|s| {
                        self.irqs.remove(s);
                    });
                    return Err(e);
                }
            }
        }
        if want.window.is_some() {
            if let Err(e) = self.map.insert(&name, base, size, Target::Dev(id)) {
                irqs.iter().for_each(|s| {
                    self.irqs.remove(s);
                });
                return Err(e.into());
            }
        }
        let mut lines: Vec<Box<dyn IrqLine>> = Vec::new();
        for &src in &irqs {
            let line = self
                .plic
                .connect(src)
                .ok_or_else(|| MachineError::Wiring(format!("the PLIC has no source {src}")))?;
            lines.push(Box::new(line));
        }
        let phandle = want.phandle.then(|| {
            self.next_phandle += 1;
            self.next_phandle - 1
        });
        let grant = Grant {
            name: name.clone(),
            base,
            size,
            irqs,
            phandle,
        };
        let rates = self
            .devs
            .iter()
            .filter_map(|d| Some((d.name(), d.clock_rate()?)))
            .collect();
        let mut dev = {
            let mut a = Attach::new(&grant, lines, &self.ram, self.clock, &mut self.signals);
            a.rates = rates;
            make(&mut a)
        };
        if want.listens {
            self.listeners.push(id);
        }
        if self.console.is_none() && dev.console().is_some() {
            self.console = Some(id as usize);
        }
        self.references
            .extend(want.refers_to.iter().map(|r| (name.clone(), r.clone())));
        self.masters.push(want.master);
        self.devs.push(dev);
        self.grants.push(grant);
        self.by_name.insert(name, Target::Dev(id));
        Ok(DevId(id))
    }

    /// Add a device described by a [`Plug`].
    pub fn plug(&mut self, p: Plug) -> Result<DevId, MachineError> {
        self.add(p.want, p.make)
    }

    /// The device `id` as its own type.
    pub fn device<T: 'static>(&self, id: DevId) -> Option<&T> {
        self.devs.get(id.0 as usize)?.as_any().downcast_ref()
    }
    pub fn device_mut<T: 'static>(&mut self, id: DevId) -> Option<&mut T> {
        self.devs
            .get_mut(id.0 as usize)?
            .as_any_mut()
            .downcast_mut()
    }
    /// The device called `name`.
    pub fn find(&self, name: &str) -> Option<DevId> {
        match self.by_name.get(name)? {
            Target::Dev(i) => Some(DevId(*i)),
            _ => None,
        }
    }
    /// What device `id` was given.
    pub fn grant(&self, id: DevId) -> Option<&Grant> {
        self.grants.get(id.0 as usize)
    }
    /// The board wire called `name` (the host may drive a device input, or
    /// watch an output, through it). Call [`Board::sync_inputs`] after driving it.
    pub fn signal(&mut self, name: &str) -> Signal {
        self.signals.get(name)
    }
    /// Names of the board's wires.
    pub fn signal_names(&self) -> Vec<String> {
        self.signals.names().map(str::to_string).collect()
    }

    /// Every device that cannot be snapshotted, by name.
    pub fn unsaveable(&self) -> Vec<String> {
        self.devs
            .iter()
            .filter(|d| d.state().is_none())
            .map(|d| d.name())
            .collect()
    }

    /// The board's state as snapshot sections: its own (`board`: wires,
    /// pending device events, what each hart was last given, counters) and
    /// one per device (`dev.NAME`). Refuses a board holding a device
    /// without save/restore, by name.
    pub fn save(&self, out: &mut BTreeMap<String, Vec<u8>>) -> Result<(), MachineError> {
        let refused = self.unsaveable();
        if !refused.is_empty() {
            return Err(MachineError::Snapshot(format!(
                "device{} {} ha{} no save/restore yet, so this machine cannot be snapshotted",
                if refused.len() == 1 { "" } else { "s" },
                refused
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                if refused.len() == 1 { "s" } else { "ve" },
            )));
        }
        let fail = |name: &str, e: String| MachineError::Snapshot(format!("device `{name}`: {e}"));
        let own = BoardState {
            signals: self.signals.save(),
            seen_generation: self.seen_generation,
            events: self.events.entries(),
            delivered: self.delivered.clone(),
            counts: [
                self.stat_unmapped,
                self.stat_bad_access,
                self.stat_mmio_reads,
                self.stat_mmio_writes,
            ],
        };
        out.insert(
            "board".into(),
            hs_snapshot::state::encode(&own).map_err(|e| fail("board", e))?,
        );
        use hs_devices::Persist;
        out.insert(
            "dev.plic".into(),
            self.plic.save().map_err(|e| fail("plic", e))?,
        );
        out.insert(
            "dev.clint".into(),
            self.clint.save().map_err(|e| fail("clint", e))?,
        );
        for (d, g) in self.devs.iter().zip(&self.grants) {
            let st = d.state().expect("checked above");
            out.insert(
                format!("dev.{}", g.name),
                st.save().map_err(|e| fail(&g.name, e))?,
            );
        }
        Ok(())
    }

    /// Put back what [`Board::save`] wrote, on a board built the same way.
    pub fn restore(&mut self, sections: &BTreeMap<String, Vec<u8>>) -> Result<(), MachineError> {
        let fail = |name: &str, e: String| MachineError::Snapshot(format!("device `{name}`: {e}"));
        let get = |name: &str| {
            sections.get(&format!("dev.{name}")).ok_or_else(|| {
                fail(
                    name,
                    "the snapshot has no state for it (taken on another board?)".into(),
                )
            })
        };
        let theirs = sections
            .keys()
            .filter_map(|k| k.strip_prefix("dev."))
            .count();
        if theirs != self.devs.len() + 2 {
            return Err(MachineError::Snapshot(format!(
                "the snapshot holds {theirs} devices; this board has {} (taken on another board?)",
                self.devs.len() + 2
            )));
        }
        let own: BoardState = sections
            .get("board")
            .ok_or_else(|| fail("board", "missing from the snapshot".into()))
            .and_then(|b| hs_snapshot::state::decode(b).map_err(|e| fail("board", e)))?;
        if own.delivered.len() != self.delivered.len() {
            return Err(MachineError::Snapshot(format!(
                "the snapshot is of {} harts; this machine has {}",
                own.delivered.len(),
                self.delivered.len()
            )));
        }
        for (_, (t, _)) in &own.events {
            if let Target::Dev(i) = t {
                if *i as usize >= self.devs.len() {
                    return Err(fail(
                        "board",
                        format!("an event is for device {i}, which this board lacks"),
                    ));
                }
            }
        }
        let mut devs = std::mem::take(&mut self.devs);
        let restored = (|| {
            for (d, g) in devs.iter_mut().zip(&self.grants) {
                let data = get(&g.name)?;
                let st = d
                    .state_mut()
                    .ok_or_else(|| fail(&g.name, "it has no save/restore".into()))?;
                st.restore(data).map_err(|e| fail(&g.name, e))?;
            }
            Ok::<(), MachineError>(())
        })();
        self.devs = devs;
        restored?;
        use hs_devices::Persist;
        self.plic
            .restore(get("plic")?)
            .map_err(|e| fail("plic", e))?;
        self.clint
            .restore(get("clint")?)
            .map_err(|e| fail("clint", e))?;
        let (generation, wires) = &own.signals;
        self.signals
            .restore(*generation, wires)
            .map_err(|e| fail("board", e))?;
        self.seen_generation = own.seen_generation;
        self.events = EventQueue::from_entries(own.events);
        self.delivered = own.delivered;
        [
            self.stat_unmapped,
            self.stat_bad_access,
            self.stat_mmio_reads,
            self.stat_mmio_writes,
        ] = own.counts;
        Ok(())
    }

    /// Let listening devices sample their inputs if any wire changed, then
    /// re-evaluate the PLIC. `hart`/`now` are those of the access or event
    /// that may have changed a wire.
    pub fn sync_inputs(&mut self, hart: usize, now: u64) {
        if self.signals.generation() == self.seen_generation {
            return;
        }
        // A listener's own outputs may move other wires: settle, boundedly.
        for _ in 0..8 {
            self.seen_generation = self.signals.generation();
            for &i in &self.listeners {
                let mut sched = TargetScheduler {
                    queue: &mut self.events,
                    target: Target::Dev(i),
                    scheduled: false,
                };
                let mut ctx = DevCtx::new(hart, now, &mut sched);
                self.devs[i as usize].inputs_changed(&mut ctx);
            }
            if self.signals.generation() == self.seen_generation {
                break;
            }
        }
        self.plic.update();
    }

    /// The console device (the first device with a console side).
    pub fn console(&mut self) -> Option<&mut dyn Console> {
        self.devs.get_mut(self.console?)?.console()
    }

    /// Every device another one refers to exists and has a phandle.
    pub fn check_references(&self) -> Result<(), MachineError> {
        let phandles = self.fdt_ctx(Vec::new()).phandles;
        for (from, to) in &self.references {
            if !phandles.contains_key(to) {
                let why = if self.by_name.contains_key(to) {
                    "has no phandle"
                } else {
                    "is not on the board"
                };
                return Err(MachineError::Wiring(format!(
                    "device `{from}` refers to `{to}`, which {why}"
                )));
            }
        }
        Ok(())
    }

    /// Device-tree path of the console's node (for `/chosen/stdout-path`).
    pub fn console_path(&mut self, ctx: &FdtCtx) -> Option<String> {
        let i = self.console?;
        let nodes = self.devs[i].fdt_nodes(&self.grants[i], ctx);
        nodes
            .into_iter()
            .find(|(p, _)| *p == Placement::Soc)
            .map(|(_, n)| format!("/soc/{}", n.name))
    }

    /// The first stop (power-off, reset) the guest asked any device for.
    pub fn stop_request(&self) -> Option<StopRequest> {
        self.devs.iter().find_map(|d| d.stop_request())
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
        let now = ((self.plic.seip(hart) as u64) << 9) | ((self.plic.meip(hart) as u64) << 11);
        self.delivered.get(hart).is_some_and(|d| d & EXT != now)
    }

    /// `mip` bits the platform drives for `hart` at its cycle `now`.
    pub fn irq_bits(&self, hart: usize, now: u64) -> u64 {
        ((self.clint.msip_pending(hart, now) as u64) << 3)
            | ((self.clint.mtip(hart, now) as u64) << 7)
            | ((self.plic.seip(hart) as u64) << 9)
            | ((self.plic.meip(hart) as u64) << 11)
    }

    /// The next cycle after `now` at which `hart`'s interrupt bits change
    /// because another hart, ahead of it in the slice, sent it an IPI then.
    pub fn irq_change_after(&self, hart: usize, now: u64) -> Option<u64> {
        self.clint.msip_rises_after(hart, now)
    }

    fn target_ref(&self, t: Target) -> (&dyn Device, &Grant) {
        match t {
            Target::Plic => (&self.plic, &self.plic_grant),
            Target::Clint => (&self.clint, &self.clint_grant),
            Target::Dev(i) => (&*self.devs[i as usize], &self.grants[i as usize]),
        }
    }

    /// Every device in address order, then those without a window in add order.
    fn in_order(&self) -> Vec<Target> {
        let mut v: Vec<Target> = self.map.ranges().map(|(_, _, _, t)| t).collect();
        v.extend(
            (0..self.devs.len())
                .filter(|&i| self.grants[i].size == 0)
                .map(|i| Target::Dev(i as u16)),
        );
        v
    }

    /// Run every device callback due at or before `now`.
    /// Fire every device event due by cycle `t`, in time order, at most
    /// `limit` of them (a device whose events never end is the caller's to
    /// report); returns how many fired. Tests and fuzz targets drive a board
    /// without harts this way.
    pub fn fire_events_through(&mut self, t: u64, limit: u64) -> u64 {
        let mut fired = 0;
        while fired < limit {
            match self.events.next_cycle() {
                Some(c) if c <= t => self.fire_events(c),
                _ => break,
            }
            fired += 1;
        }
        fired
    }

    pub fn fire_events(&mut self, now: u64) {
        let mut fired = false;
        while let Some((cycle, (target, token))) = self.events.pop_due(now) {
            match target {
                Target::Dev(i) => {
                    self.call_dev(i, 0, cycle, false, |d, ctx| d.event(ctx, token));
                }
                _ => {
                    let mut sched = TargetScheduler {
                        queue: &mut self.events,
                        target,
                        scheduled: false,
                    };
                    let mut ctx = DevCtx::new(0, cycle, &mut sched);
                    match target {
                        Target::Plic => self.plic.event(&mut ctx, token),
                        _ => self.clint.event(&mut ctx, token),
                    }
                }
            }
            fired = true;
            self.sync_inputs(0, cycle);
        }
        if fired {
            self.plic.update();
        }
    }

    /// Call device `i` with a context for `hart` at cycle `now` (with the
    /// observation log if `notes`); a bus master also gets [`DevCtx::master`],
    /// the board's view of RAM and the other devices. Returns what `f`
    /// returned and whether the device scheduled an event.
    fn call_dev<R>(
        &mut self,
        i: u16,
        hart: usize,
        now: u64,
        notes: bool,
        f: impl FnOnce(&mut dyn Device, &mut DevCtx) -> R,
    ) -> (R, bool) {
        let idx = i as usize;
        let target = Target::Dev(i);
        if !self.masters[idx] {
            let mut sched = TargetScheduler {
                queue: &mut self.events,
                target,
                scheduled: false,
            };
            let mut ctx = DevCtx::new(hart, now, &mut sched);
            if notes {
                ctx.notes = self.log.as_deref_mut().map(|l| l as &mut dyn NoteSink);
            }
            let r = f(&mut *self.devs[idx], &mut ctx);
            return (r, sched.scheduled);
        }
        // The master is taken out while it runs, so its view can reach every
        // other device; an access to its own window is refused (DECERR).
        let mut dev = std::mem::replace(&mut self.devs[idx], Box::new(Vacant));
        let mut deferred = Vec::new();
        let (r, scheduled) = {
            let mut view = MasterView {
                ram: &self.ram,
                map: &self.map,
                devs: &mut self.devs,
                me: i,
                hart,
                deferred: &mut deferred,
            };
            let mut sched = TargetScheduler {
                queue: &mut self.events,
                target,
                scheduled: false,
            };
            let mut ctx = DevCtx::new(hart, now, &mut sched);
            if notes {
                ctx.notes = self.log.as_deref_mut().map(|l| l as &mut dyn NoteSink);
            }
            ctx.master = Some(&mut view);
            let r = f(&mut *dev, &mut ctx);
            (r, sched.scheduled)
        };
        let scheduled = scheduled || !deferred.is_empty();
        self.devs[idx] = dev;
        for (cycle, t, token) in deferred {
            self.events.push(cycle, (t, token));
        }
        (r, scheduled)
    }

    /// Phandles and facts every node may refer to.
    pub fn fdt_ctx(&self, cpu_intc: Vec<u32>) -> FdtCtx {
        let mut phandles = BTreeMap::new();
        for g in std::iter::once(&self.plic_grant).chain(&self.grants) {
            if let Some(p) = g.phandle {
                phandles.insert(g.name.clone(), p);
            }
        }
        FdtCtx {
            cpu_intc,
            interrupt_parent: self.plic_grant.phandle(),
            phandles,
        }
    }

    /// Device-tree nodes of every device, in address order.
    pub fn fdt_nodes(&self, ctx: &FdtCtx) -> Vec<Vec<(Placement, FdtNode)>> {
        self.in_order()
            .into_iter()
            .map(|t| {
                let (d, g) = self.target_ref(t);
                d.fdt_nodes(g, ctx)
            })
            .collect()
    }

    /// Counters of every device, in address order, and the PLIC source each
    /// interrupt line was given (`NAME.plic_source`, `NAME.plic_source1`, …),
    /// so a reader of the timeline can tell which device an interrupt came from.
    pub fn device_stats(&self) -> Vec<hs_devices::Stat> {
        let mut v: Vec<hs_devices::Stat> = self
            .in_order()
            .into_iter()
            .flat_map(|t| self.target_ref(t).0.stats())
            .collect();
        for g in &self.grants {
            for (i, &src) in g.irqs.iter().enumerate() {
                let name = if i == 0 {
                    format!("{}.plic_source", g.name)
                } else {
                    format!("{}.plic_source{i}", g.name)
                };
                v.push(hs_devices::Stat::new(
                    name,
                    src as u64,
                    "PLIC source the board gave this interrupt line",
                ));
            }
        }
        v
    }

    /// `(name, base, end)` of every mapped window, in address order.
    pub fn windows(&self) -> Vec<(String, u64, u64)> {
        self.map
            .ranges()
            .map(|(n, b, e, _)| (n.to_string(), b, e))
            .collect()
    }
}

/// Stands in for a bus master while it runs (see [`Board::call_dev`]).
struct Vacant;

impl Device for Vacant {
    fn name(&self) -> String {
        String::new()
    }
    fn size(&self) -> u64 {
        0
    }
    fn read(&mut self, _: &mut DevCtx, _: u64, _: u8) -> Result<u64, hs_devices::BadAccess> {
        Err(hs_devices::BadAccess)
    }
    fn write(
        &mut self,
        _: &mut DevCtx,
        _: u64,
        _: u8,
        _: u64,
    ) -> Result<WriteEffect, hs_devices::BadAccess> {
        Err(hs_devices::BadAccess)
    }
    fn fdt_nodes(&self, _: &Grant, _: &FdtCtx) -> Vec<(Placement, FdtNode)> {
        Vec::new()
    }
    fn stats(&self) -> Vec<hs_devices::Stat> {
        Vec::new()
    }
}

/// Collects the events devices schedule while a bus master reaches them.
struct Deferred<'a> {
    out: &'a mut Vec<(u64, Target, u64)>,
    target: Target,
}

impl Scheduler for Deferred<'_> {
    fn schedule(&mut self, cycle: u64, token: u64) {
        self.out.push((cycle, self.target, token));
    }
}

/// What a bus master (a DMA controller) sees: guest RAM, then every device
/// window on the map except the interrupt controllers and its own. The one
/// adapter between the board and `hs_devices::dma::DmaMemory`; a miss is a
/// decode error, a refused width or offset a slave error, never a host fault.
struct MasterView<'a> {
    ram: &'a GuestRam,
    map: &'a DeviceMap<Target>,
    devs: &'a mut Vec<Box<dyn Device>>,
    me: u16,
    hart: usize,
    deferred: &'a mut Vec<(u64, Target, u64)>,
}

impl MasterView<'_> {
    /// The device window holding `[addr, addr+len)`, and the offset.
    fn find(&self, addr: u64, len: usize) -> Result<(u16, u64, u8), DmaFault> {
        match self.map.lookup(addr, len as u64) {
            Some((Target::Dev(j), off)) if j != self.me => {
                if !matches!(len, 1 | 2 | 4 | 8) {
                    return Err(DmaFault::Slave(addr));
                }
                Ok((j, off, len as u8))
            }
            _ => Err(DmaFault::Decode(addr)),
        }
    }
}

impl DmaMemory for MasterView<'_> {
    fn dma_read(&mut self, addr: u64, buf: &mut [u8], now: u64) -> Result<(), DmaFault> {
        if self.ram.read_bytes(addr, buf) {
            return Ok(());
        }
        let (j, off, size) = self.find(addr, buf.len())?;
        let mut sched = Deferred {
            out: self.deferred,
            target: Target::Dev(j),
        };
        let mut ctx = DevCtx::new(self.hart, now, &mut sched);
        let v = self.devs[j as usize]
            .read(&mut ctx, off, size)
            .map_err(|_| DmaFault::Slave(addr))?;
        buf.copy_from_slice(&v.to_le_bytes()[..buf.len()]);
        Ok(())
    }
    fn dma_write(&mut self, addr: u64, data: &[u8], now: u64) -> Result<(), DmaFault> {
        // write_bytes notes stores to code pages, so harts drop stale decodes.
        if self.ram.write_bytes(addr, data) {
            return Ok(());
        }
        let (j, off, size) = self.find(addr, data.len())?;
        let mut b = [0u8; 8];
        b[..data.len()].copy_from_slice(data);
        let mut sched = Deferred {
            out: self.deferred,
            target: Target::Dev(j),
        };
        let mut ctx = DevCtx::new(self.hart, now, &mut sched);
        self.devs[j as usize]
            .write(&mut ctx, off, size, u64::from_le_bytes(b))
            .map(|_| ())
            .map_err(|_| DmaFault::Slave(addr))
    }
}

impl SystemBus for Board {
    fn mmio_read(&mut self, acc: Access, pa: u64, size: u8) -> Result<u64, BusFault> {
        let Some((target, off)) = self.map.lookup(pa, size as u64) else {
            self.stat_unmapped += 1;
            return Err(BusFault::Unmapped(pa));
        };
        self.stat_mmio_reads += 1;
        let r = match target {
            Target::Dev(i) => {
                self.call_dev(i, acc.hart, acc.now, true, |d, ctx| d.read(ctx, off, size))
                    .0
            }
            _ => {
                let mut sched = TargetScheduler {
                    queue: &mut self.events,
                    target,
                    scheduled: false,
                };
                let mut ctx = DevCtx::new(acc.hart, acc.now, &mut sched);
                ctx.notes = self.log.as_deref_mut().map(|l| l as &mut dyn NoteSink);
                match target {
                    Target::Plic => self.plic.read(&mut ctx, off, size),
                    _ => self.clint.read(&mut ctx, off, size),
                }
            }
        };
        if target != Target::Clint {
            // A read can lower a line (RBR drains the FIFO, a claim takes a source).
            self.sync_inputs(acc.hart, acc.now);
            self.plic.update();
        }
        r.map_err(|_| {
            self.stat_bad_access += 1;
            BusFault::BadAccess(pa, size)
        })
    }

    fn mmio_write(
        &mut self,
        acc: Access,
        pa: u64,
        size: u8,
        val: u64,
    ) -> Result<WriteEffect, BusFault> {
        let Some((target, off)) = self.map.lookup(pa, size as u64) else {
            self.stat_unmapped += 1;
            return Err(BusFault::Unmapped(pa));
        };
        self.stat_mmio_writes += 1;
        let (r, scheduled) = match target {
            Target::Dev(i) => self.call_dev(i, acc.hart, acc.now, true, |d, ctx| {
                d.write(ctx, off, size, val)
            }),
            _ => {
                let mut sched = TargetScheduler {
                    queue: &mut self.events,
                    target,
                    scheduled: false,
                };
                let mut ctx = DevCtx::new(acc.hart, acc.now, &mut sched);
                ctx.notes = self.log.as_deref_mut().map(|l| l as &mut dyn NoteSink);
                let r = match target {
                    Target::Plic => self.plic.write(&mut ctx, off, size, val),
                    _ => self.clint.write(&mut ctx, off, size, val),
                };
                (r, sched.scheduled)
            }
        };
        // A new device event may fall inside the current slice: make the
        // hart stop so the machine can end the slice at it.
        let mut eff = r.map_err(|_| {
            self.stat_bad_access += 1;
            BusFault::BadAccess(pa, size)
        })?;
        if target != Target::Clint {
            // Devices reach harts only through the PLIC: compare its outputs
            // for the writing hart with what that hart last saw. Other harts
            // pick up changes when their turn comes.
            self.sync_inputs(acc.hart, acc.now);
            self.plic.update();
            eff.irq_changed = self.external_stale(acc.hart) || scheduled;
        }
        Ok(eff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hs_devices::{BadAccess, Stat, WriteEffect};

    /// A device with a register that raises its first interrupt line and
    /// drives the wire `out` with bit 1.
    struct Probe {
        irq: Box<dyn IrqLine>,
        out: Signal,
        input: Signal,
        seen: u64,
    }
    impl Device for Probe {
        fn name(&self) -> String {
            "probe".into()
        }
        fn size(&self) -> u64 {
            0x10
        }
        fn read(&mut self, _: &mut DevCtx, _: u64, _: u8) -> Result<u64, BadAccess> {
            Ok(self.seen)
        }
        fn write(
            &mut self,
            _: &mut DevCtx,
            _: u64,
            _: u8,
            v: u64,
        ) -> Result<WriteEffect, BadAccess> {
            self.irq.set_level(v & 1 != 0);
            hs_bus::GpioLine::set_level(&self.out, v & 2 != 0);
            Ok(WriteEffect::default())
        }
        fn fdt_nodes(&self, g: &Grant, ctx: &FdtCtx) -> Vec<(Placement, FdtNode)> {
            let mut n = FdtNode::new(g.node_name("probe"))
                .reg(g.base, g.size)
                .u32s("interrupts", g.irqs.clone());
            if let Some(p) = ctx.phandle("clk") {
                n = n.u32("clocks", p);
            }
            vec![(Placement::Soc, n)]
        }
        fn stats(&self) -> Vec<Stat> {
            Vec::new()
        }
        fn inputs_changed(&mut self, _: &mut DevCtx) {
            self.seen = self.input.rises();
        }
    }

    fn probe(a: &mut Attach, input: &str) -> Box<dyn Device> {
        Box::new(Probe {
            irq: a.irq(0),
            out: a.signal("probe.out"),
            input: a.signal(input),
            seen: 0,
        })
    }

    fn board() -> Board {
        let ram = GuestRam::new(DRAM_BASE, 1 << 20).unwrap();
        Board::new(
            2,
            Clock {
                hz: 1_000_000_000,
                cycles_per_tick: 100,
            },
            &ram,
            5,
        )
        .unwrap()
    }

    #[test]
    fn add_allocates_windows_lines_and_phandles() {
        let mut b = board();
        let clk = b
            .add(Want::new("clk").phandle(), |a| probe(a, "x"))
            .unwrap();
        let p0 = b
            .add(Want::new("p0").mmio(0x10).irqs(1).phandle(), |a| {
                probe(a, "x")
            })
            .unwrap();
        let p1 = b
            .add(Want::new("p1").mmio(0x2000).irqs(2), |a| probe(a, "x"))
            .unwrap();
        assert_eq!(
            b.grant(clk).unwrap(),
            &Grant {
                name: "clk".into(),
                base: 0,
                size: 0,
                irqs: vec![],
                phandle: Some(6)
            }
        );
        let g0 = b.grant(p0).unwrap().clone();
        let g1 = b.grant(p1).unwrap().clone();
        assert_eq!(
            (g0.base, g0.size, g0.irqs.clone(), g0.phandle),
            (PLATFORM_BASE, 0x10, vec![64], Some(7))
        );
        assert_eq!(
            (g1.base, g1.irqs.clone(), g1.phandle),
            (PLATFORM_BASE + 0x2000, vec![65, 66], None),
            "size-aligned after p0"
        );
        assert_eq!(b.fdt_ctx(vec![]).phandle("clk"), Some(6));
        assert_eq!(b.fdt_ctx(vec![]).interrupt_parent, 5);
        let names: Vec<String> = b.windows().into_iter().map(|w| w.0).collect();
        assert_eq!(names, ["clint", "p0", "p1", "plic"]);
        // The window-less device still describes itself, after the mapped ones.
        let nodes = b.fdt_nodes(&b.fdt_ctx(vec![]));
        assert_eq!(nodes.len(), 5);
        assert_eq!(nodes[1][0].1.get("clocks"), Some(&hs_devices::Prop::U32(6)));
        assert_eq!(nodes[4][0].1.name, "probe@0");
    }

    #[test]
    fn references_must_name_a_device_with_a_phandle() {
        let mut b = board();
        b.add(Want::new("user").mmio(0x10).refers_to("clk"), |a| {
            probe(a, "x")
        })
        .unwrap();
        assert_eq!(
            b.check_references().err().unwrap().to_string(),
            "board wiring: device `user` refers to `clk`, which is not on the board"
        );
        b.add(Want::new("clk"), |a| probe(a, "x")).unwrap();
        assert_eq!(
            b.check_references().err().unwrap().to_string(),
            "board wiring: device `user` refers to `clk`, which has no phandle"
        );
        let mut b = board();
        b.add(Want::new("user").mmio(0x10).refers_to("clk"), |a| {
            probe(a, "x")
        })
        .unwrap();
        b.add(Want::new("clk").phandle(), |a| probe(a, "x"))
            .unwrap();
        assert!(
            b.check_references().is_ok(),
            "a reference may name a device added later"
        );
    }

    #[test]
    fn refusals_name_the_device_and_give_nothing_away() {
        let mut b = board();
        b.add(
            Want::new("uart0").mmio_at(0x1000_0000, 0x100).irq_at(10),
            |a| probe(a, "x"),
        )
        .unwrap();
        let e = b
            .add(
                Want::new("u2").mmio_at(0x1000_00f0, 0x100).irq_at(11),
                |a| probe(a, "x"),
            )
            .err()
            .unwrap();
        assert_eq!(e.to_string(), "device map: device `u2` [0x100000f0..0x100001f0) overlaps device `uart0` [0x10000000..0x10000100)");
        // Source 11 was given back when the window was refused.
        b.add(
            Want::new("rtc").mmio_at(0x10_1000, 0x1000).irq_at(11),
            |a| probe(a, "x"),
        )
        .unwrap();
        let e = b
            .add(Want::new("u3").mmio(0x100).irq_at(10), |a| probe(a, "x"))
            .err()
            .unwrap();
        assert_eq!(
            e.to_string(),
            "board wiring: device `u3`: PLIC source 10 is already given to `uart0`"
        );
        let e = b
            .add(Want::new("uart0").mmio(0x100), |a| probe(a, "x"))
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("two devices are called `uart0`"),
            "{e}"
        );
        let e = b
            .add(Want::new("big").mmio(PLATFORM_SIZE + 1), |a| probe(a, "x"))
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("no free 0x2000001-byte window"),
            "{e}"
        );
        let e = b
            .add(Want::new("ram").mmio_at(DRAM_BASE, 0x1000), |a| {
                probe(a, "x")
            })
            .err()
            .unwrap();
        assert!(e.to_string().contains("overlaps device `dram`"), "{e}");
        let e = b
            .add(Want::new("q").irq_at(97), |a| probe(a, "x"))
            .err()
            .unwrap();
        assert_eq!(
            e.to_string(),
            "board wiring: device `q`: the PLIC has no source 97"
        );
        for i in 0..32 {
            b.add(Want::new(format!("n{i}")).irqs(1), |a| probe(a, "x"))
                .unwrap();
        }
        let e = b
            .add(Want::new("n32").irqs(1), |a| probe(a, "x"))
            .err()
            .unwrap();
        assert!(
            e.to_string()
                .contains("every platform interrupt line (PLIC sources 64 to 95) is taken"),
            "{e}"
        );
    }

    #[test]
    fn devices_signal_through_named_wires_and_the_plic() {
        let mut b = board();
        let a = b
            .add(Want::new("a").mmio(0x10).irqs(1), |at| probe(at, "none"))
            .unwrap();
        let l = b
            .add(Want::new("l").mmio(0x10).irqs(1).listens(), |at| {
                probe(at, "probe.out")
            })
            .unwrap();
        let (ga, gl) = (b.grant(a).unwrap().base, b.grant(l).unwrap().base);
        let acc = Access { hart: 0, now: 7 };
        // Enable source 64 for hart 0 S-mode, priority 1.
        b.mmio_write(acc, PLIC_BASE + 4 * 64, 4, 1).unwrap();
        b.mmio_write(acc, PLIC_BASE + 0x2080 + 8, 4, 1).unwrap();
        b.log = Some(Box::new(BoardLog {
            keep_events: true,
            max_events: 10,
            ..BoardLog::default()
        }));
        // `a` drives its wire high: `l` (listening) sees the edge; `a`'s line reaches the PLIC.
        b.mmio_write(acc, ga, 4, 3).unwrap();
        assert_eq!(b.mmio_read(acc, gl, 4), Ok(1));
        assert_eq!(b.irq_bits(0, 7), 1 << 9);
        // The claim and an IPI are noted by the devices themselves.
        assert_eq!(
            b.mmio_read(
                Access { hart: 0, now: 9 },
                PLIC_BASE + 0x20_0000 + 0x1000 + 4,
                4
            ),
            Ok(64)
        );
        b.mmio_write(Access { hart: 1, now: 11 }, CLINT_BASE, 4, 1)
            .unwrap();
        let log = b.log.as_ref().unwrap();
        assert_eq!(log.claims, [(0, 9, 64)]);
        assert_eq!(log.ipis, [(1, 11, 0)]);
        // The host drives a wire: the listener sees it at the next sync.
        hs_bus::GpioLine::set_level(&b.signal("probe.out"), false);
        hs_bus::GpioLine::set_level(&b.signal("probe.out"), true);
        b.sync_inputs(0, 20);
        assert_eq!(b.device::<Probe>(l).unwrap().seen, 2);
        assert!(b.signal_names().contains(&"probe.out".to_string()));
    }
}
