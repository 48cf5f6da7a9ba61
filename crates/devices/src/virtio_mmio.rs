//! virtio-mmio transport, version 2 (`virtio,mmio`). A slot without a
//! backend shows device ID 0 ("no device"), so Linux probes and skips it.
//! A backend ([`VirtioBackend`]) plugs in a device type (block, net, ...);
//! the transport keeps the common registers: feature negotiation, queue
//! configuration, status, interrupt status/acknowledge, config generation.

use crate::fdt::{FdtCtx, FdtNode, Placement};
use crate::Grant;
use crate::{BadAccess, DevCtx, Device, IrqLine, Stat, WriteEffect};

pub const SIZE: u64 = 0x1000;
pub const MAGIC: u32 = 0x7472_6976; // "virt"
pub const VENDOR: u32 = 0x554d_4551; // "QEMU", as QEMU's slots report
pub const VERSION: u32 = 2;
/// Interrupt status bits.
pub const INT_USED_BUFFER: u32 = 1;
pub const INT_CONFIG_CHANGE: u32 = 2;
/// Status register: the device cannot continue.
pub const STATUS_NEEDS_RESET: u32 = 0x40;
const CONFIG_BASE: u64 = 0x100;

/// Where the driver put one virtqueue (guest physical addresses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueueConfig {
    pub size: u16,
    pub ready: bool,
    pub desc: u64,
    pub driver: u64,
    pub device: u64,
}

/// The driver broke the device's rules (a malformed queue): the transport
/// sets `DEVICE_NEEDS_RESET` and raises a configuration-change interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NeedsReset;

/// A virtio device type behind the transport.
pub trait VirtioBackend: crate::AsAny {
    /// Virtio device ID (2 = block, 1 = net, ...); never 0.
    fn device_id(&self) -> u32;
    /// Offered feature bits (bit 32, VIRTIO_F_VERSION_1, is added by the transport).
    fn device_features(&self) -> u64;
    /// Number of virtqueues.
    fn num_queues(&self) -> u16;
    /// Largest queue size the device supports.
    fn queue_max(&self) -> u16;
    /// Device-specific configuration space.
    fn config_read(&mut self, offset: u64, size: u8) -> u64;
    fn config_write(&mut self, offset: u64, size: u8, val: u64);
    /// The driver finished negotiating (`DRIVER_OK`) with these features.
    fn activate(&mut self, _driver_features: u64) {}
    /// The driver kicked queue `index`. Returns interrupt status bits to
    /// raise (e.g. [`INT_USED_BUFFER`]).
    fn notify(
        &mut self,
        ctx: &mut DevCtx,
        index: u16,
        queue: &QueueConfig,
    ) -> Result<u32, NeedsReset>;
    /// A scheduled completion is due (see [`DevCtx::events`]); same return as `notify`.
    fn event(
        &mut self,
        _ctx: &mut DevCtx,
        _token: u64,
        _queues: &[QueueConfig],
    ) -> Result<u32, NeedsReset> {
        Ok(0)
    }
    /// The driver reset the device.
    fn reset(&mut self) {}
    /// The backend's own counters, named `PREFIX.counter`.
    fn stats(&self, _prefix: &str) -> Vec<Stat> {
        Vec::new()
    }
    /// Its state for a snapshot, as [`Device::state`]; None: a transport
    /// holding it cannot be snapshotted.
    fn state(&self) -> Option<&dyn crate::Persist> {
        None
    }
    fn state_mut(&mut self) -> Option<&mut dyn crate::Persist> {
        None
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
pub struct VirtioMmio {
    /// Name for statistics (`virtioN` for the fixed slots, the board name otherwise).
    name: String,
    #[serde(skip)]
    irq: Box<dyn IrqLine>,
    #[serde(skip)]
    backend: Option<Box<dyn VirtioBackend>>,
    device_features_sel: u32,
    driver_features: u64,
    driver_features_sel: u32,
    queue_sel: u32,
    queues: Vec<QueueConfig>,
    interrupt_status: u32,
    status: u32,
    config_generation: u32,
    stat_notifies: u64,
    stat_interrupts: u64,
}

/// The transport's registers, and the backend's state beside them.
impl crate::Persist for VirtioMmio {
    fn save(&self) -> Result<Vec<u8>, String> {
        let backend = match &self.backend {
            Some(b) => {
                let st = b.state().ok_or("its backend has no save/restore")?;
                Some(String::from_utf8(st.save()?).map_err(|e| e.to_string())?)
            }
            None => None,
        };
        hs_snapshot::state::encode(&(self, backend))
    }
    fn restore(&mut self, data: &[u8]) -> Result<(), String> {
        let (mut fresh, backend): (VirtioMmio, Option<String>) = hs_snapshot::state::decode(data)?;
        match (&mut self.backend, backend) {
            (None, None) => {}
            (Some(b), Some(saved)) => b
                .state_mut()
                .ok_or("its backend has no save/restore")?
                .restore(saved.as_bytes())?,
            (mine, _) => {
                return Err(format!(
                    "the snapshot's slot {} a device; this machine's {}",
                    if mine.is_some() { "has no" } else { "holds" },
                    if mine.is_some() { "does" } else { "is empty" }
                ))
            }
        }
        if fresh.queues.len() != self.queues.len() {
            return Err(format!(
                "{} queues saved for a device with {}",
                fresh.queues.len(),
                self.queues.len()
            ));
        }
        std::mem::swap(&mut fresh.irq, &mut self.irq);
        std::mem::swap(&mut fresh.backend, &mut self.backend);
        *self = fresh;
        Ok(())
    }
}

impl VirtioMmio {
    /// Slot `index` (naming only), raising `irq`.
    pub fn new(
        index: usize,
        irq: Box<dyn IrqLine>,
        backend: Option<Box<dyn VirtioBackend>>,
    ) -> Self {
        let nq = backend.as_ref().map_or(0, |b| b.num_queues() as usize);
        Self {
            name: format!("virtio{index}"),
            irq,
            backend,
            device_features_sel: 0,
            driver_features: 0,
            driver_features_sel: 0,
            queue_sel: 0,
            queues: vec![QueueConfig::default(); nq],
            interrupt_status: 0,
            status: 0,
            config_generation: 0,
            stat_notifies: 0,
            stat_interrupts: 0,
        }
    }

    /// Call it `name` in statistics (a board device named by configuration).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The backend, to be downcast by its owner (a test, a tool).
    pub fn backend(&self) -> Option<&dyn VirtioBackend> {
        self.backend.as_deref()
    }

    /// The driver-visible status register (e.g. [`STATUS_NEEDS_RESET`]).
    pub fn status(&self) -> u32 {
        self.status
    }

    pub fn device_id(&self) -> u32 {
        self.backend.as_ref().map_or(0, |b| b.device_id())
    }

    fn features(&self) -> u64 {
        self.backend
            .as_ref()
            .map_or(0, |b| b.device_features() | (1 << 32))
    }

    fn reset(&mut self) {
        self.driver_features = 0;
        self.queue_sel = 0;
        self.queues
            .iter_mut()
            .for_each(|q| *q = QueueConfig::default());
        self.interrupt_status = 0;
        self.status = 0;
        if let Some(b) = self.backend.as_mut() {
            b.reset();
        }
        self.irq.set_level(false);
    }

    fn raise(&mut self, result: Result<u32, NeedsReset>) {
        match result {
            Ok(0) => {}
            Ok(bits) => {
                self.interrupt_status |= bits & (INT_USED_BUFFER | INT_CONFIG_CHANGE);
                self.stat_interrupts += 1;
            }
            Err(NeedsReset) => {
                self.status |= STATUS_NEEDS_RESET;
                self.interrupt_status |= INT_CONFIG_CHANGE;
                self.stat_interrupts += 1;
            }
        }
        self.irq.set_level(self.interrupt_status != 0);
    }

    fn queue(&mut self) -> Option<&mut QueueConfig> {
        self.queues.get_mut(self.queue_sel as usize)
    }
}

fn set_lo(v: &mut u64, x: u32) {
    *v = (*v & !0xffff_ffff) | x as u64;
}
fn set_hi(v: &mut u64, x: u32) {
    *v = (*v & 0xffff_ffff) | ((x as u64) << 32);
}

impl Device for VirtioMmio {
    /// An empty slot, or one whose backend has save/restore.
    fn state(&self) -> Option<&dyn crate::Persist> {
        match &self.backend {
            Some(b) => b.state().map(|_| self as &dyn crate::Persist),
            None => Some(self),
        }
    }
    fn state_mut(&mut self) -> Option<&mut dyn crate::Persist> {
        if self.backend.as_ref().is_some_and(|b| b.state().is_none()) {
            return None;
        }
        Some(self)
    }
    fn name(&self) -> String {
        self.name.clone()
    }
    fn size(&self) -> u64 {
        SIZE
    }

    fn read(&mut self, _ctx: &mut DevCtx, offset: u64, size: u8) -> Result<u64, BadAccess> {
        if offset >= CONFIG_BASE {
            if !crate::size_ok(size) {
                return Err(BadAccess);
            }
            return Ok(match self.backend.as_mut() {
                Some(b) => b.config_read(offset - CONFIG_BASE, size) & crate::width_mask(size),
                None => 0,
            });
        }
        if size != 4 || offset & 3 != 0 {
            return Err(BadAccess);
        }
        let present = self.backend.is_some();
        let q = self.queues.get(self.queue_sel as usize).copied();
        let v: u32 = match offset {
            0x000 => MAGIC,
            0x004 => VERSION,
            0x008 => self.device_id(),
            0x00c => VENDOR,
            _ if !present => 0,
            0x010 => match self.device_features_sel {
                0 => self.features() as u32,
                1 => (self.features() >> 32) as u32,
                _ => 0,
            },
            0x034 => q.map_or(0, |_| {
                self.backend.as_ref().map_or(0, |b| b.queue_max() as u32)
            }),
            0x044 => q.map_or(0, |q| q.ready as u32),
            0x060 => self.interrupt_status,
            0x070 => self.status,
            0x080 => q.map_or(0, |q| q.desc as u32),
            0x084 => q.map_or(0, |q| (q.desc >> 32) as u32),
            0x090 => q.map_or(0, |q| q.driver as u32),
            0x094 => q.map_or(0, |q| (q.driver >> 32) as u32),
            0x0a0 => q.map_or(0, |q| q.device as u32),
            0x0a4 => q.map_or(0, |q| (q.device >> 32) as u32),
            0x0fc => self.config_generation,
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
        let before = self.interrupt_status;
        if offset >= CONFIG_BASE {
            if !crate::size_ok(size) {
                return Err(BadAccess);
            }
            if let Some(b) = self.backend.as_mut() {
                b.config_write(offset - CONFIG_BASE, size, val);
            }
            return Ok(WriteEffect::default());
        }
        if size != 4 || offset & 3 != 0 {
            return Err(BadAccess);
        }
        if self.backend.is_none() {
            return Ok(WriteEffect::default());
        }
        let v = val as u32;
        match offset {
            0x014 => self.device_features_sel = v,
            0x020 => match self.driver_features_sel {
                0 => set_lo(&mut self.driver_features, v),
                1 => set_hi(&mut self.driver_features, v),
                _ => {}
            },
            0x024 => self.driver_features_sel = v,
            0x030 => self.queue_sel = v,
            0x038 => {
                let max = self.backend.as_ref().map_or(0, |b| b.queue_max());
                if let Some(q) = self.queue() {
                    // Sizes above the maximum are clamped: the device never
                    // reads past what it advertised.
                    q.size = (v.min(max as u32)) as u16;
                }
            }
            0x044 => {
                if let Some(q) = self.queue() {
                    q.ready = v & 1 != 0;
                }
            }
            0x050 => {
                self.stat_notifies += 1;
                let index = v as u16;
                if let (Some(q), Some(b)) = (
                    self.queues.get(index as usize).copied(),
                    self.backend.as_mut(),
                ) {
                    if q.ready && self.status & STATUS_NEEDS_RESET == 0 {
                        let r = b.notify(ctx, index, &q);
                        self.raise(r);
                    }
                }
            }
            0x064 => {
                self.interrupt_status &= !v;
                self.irq.set_level(self.interrupt_status != 0);
            }
            0x070 => {
                if v == 0 {
                    self.reset();
                } else {
                    let newly_ok = v & 4 != 0 && self.status & 4 == 0;
                    self.status = v & 0xff;
                    if newly_ok {
                        let f = self.driver_features;
                        if let Some(b) = self.backend.as_mut() {
                            b.activate(f);
                        }
                    }
                }
            }
            0x080 => {
                if let Some(q) = self.queue() {
                    set_lo(&mut q.desc, v)
                }
            }
            0x084 => {
                if let Some(q) = self.queue() {
                    set_hi(&mut q.desc, v)
                }
            }
            0x090 => {
                if let Some(q) = self.queue() {
                    set_lo(&mut q.driver, v)
                }
            }
            0x094 => {
                if let Some(q) = self.queue() {
                    set_hi(&mut q.driver, v)
                }
            }
            0x0a0 => {
                if let Some(q) = self.queue() {
                    set_lo(&mut q.device, v)
                }
            }
            0x0a4 => {
                if let Some(q) = self.queue() {
                    set_hi(&mut q.device, v)
                }
            }
            _ => {}
        }
        Ok(WriteEffect {
            irq_changed: before != self.interrupt_status,
            stop: false,
        })
    }

    fn event(&mut self, ctx: &mut DevCtx, token: u64) {
        if let Some(b) = self.backend.as_mut() {
            let r = b.event(ctx, token, &self.queues);
            self.raise(r);
        }
    }

    fn fdt_nodes(&self, g: &Grant, ctx: &FdtCtx) -> Vec<(Placement, FdtNode)> {
        let node = FdtNode::new(g.node_name("virtio_mmio"))
            .u32s("interrupts", g.irqs.clone())
            .u32("interrupt-parent", ctx.interrupt_parent)
            .reg(g.base, g.size)
            .str("compatible", "virtio,mmio");
        vec![(Placement::Soc, node)]
    }

    fn stats(&self) -> Vec<Stat> {
        if self.backend.is_none() {
            return Vec::new();
        }
        let n = self.name();
        vec![
            Stat::new(
                format!("{n}.notifies"),
                self.stat_notifies,
                "queue notifications from the driver",
            ),
            Stat::new(
                format!("{n}.interrupts"),
                self.stat_interrupts,
                "interrupts raised",
            ),
            Stat::new(
                format!("{n}.needs_reset"),
                (self.status & STATUS_NEEDS_RESET != 0) as u64,
                "1 while the device is in the error state (DEVICE_NEEDS_RESET)",
            ),
        ]
        .into_iter()
        .chain(
            self.backend
                .as_ref()
                .map(|b| b.stats(&n))
                .unwrap_or_default(),
        )
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NoScheduler, WireIrq};

    fn rd(d: &mut VirtioMmio, off: u64) -> u32 {
        d.read(&mut DevCtx::new(0, 0, &mut NoScheduler), off, 4)
            .unwrap() as u32
    }
    fn wr(d: &mut VirtioMmio, off: u64, v: u32) {
        d.write(&mut DevCtx::new(0, 0, &mut NoScheduler), off, 4, v as u64)
            .unwrap();
    }

    #[test]
    fn empty_slot_reads_as_no_device() {
        let mut d = VirtioMmio::new(0, Box::new(WireIrq::new()), None);
        assert_eq!(rd(&mut d, 0), MAGIC);
        assert_eq!(rd(&mut d, 4), 2);
        assert_eq!(rd(&mut d, 8), 0);
        wr(&mut d, 0x70, 0xf);
        assert_eq!(rd(&mut d, 0x70), 0);
        assert_eq!(rd(&mut d, 0x34), 0);
    }

    /// Records kicks; answers every kick on queue 0 with a used buffer and
    /// fails on queue 1.
    struct Probe(Vec<QueueConfig>);
    impl VirtioBackend for Probe {
        fn device_id(&self) -> u32 {
            42
        }
        fn device_features(&self) -> u64 {
            0b101
        }
        fn num_queues(&self) -> u16 {
            2
        }
        fn queue_max(&self) -> u16 {
            64
        }
        fn config_read(&mut self, offset: u64, _size: u8) -> u64 {
            0x1000 + offset
        }
        fn config_write(&mut self, _offset: u64, _size: u8, _val: u64) {}
        fn notify(
            &mut self,
            _ctx: &mut DevCtx,
            index: u16,
            q: &QueueConfig,
        ) -> Result<u32, NeedsReset> {
            self.0.push(*q);
            if index == 0 {
                Ok(INT_USED_BUFFER)
            } else {
                Err(NeedsReset)
            }
        }
    }

    #[test]
    fn backend_queue_setup_notify_and_interrupts() {
        let irq = WireIrq::new();
        let mut d = VirtioMmio::new(3, Box::new(irq.clone()), Some(Box::new(Probe(Vec::new()))));
        assert_eq!(rd(&mut d, 8), 42);
        wr(&mut d, 0x14, 1);
        assert_eq!(rd(&mut d, 0x10), 1, "VERSION_1 offered");
        wr(&mut d, 0x14, 0);
        assert_eq!(rd(&mut d, 0x10), 0b101);
        wr(&mut d, 0x30, 0);
        assert_eq!(rd(&mut d, 0x34), 64);
        wr(&mut d, 0x38, 1000);
        wr(&mut d, 0x80, 0x8000_1000);
        wr(&mut d, 0x84, 0x1);
        wr(&mut d, 0x44, 1);
        assert_eq!(rd(&mut d, 0x84), 1);
        wr(&mut d, 0x50, 0);
        assert!(irq.is_high());
        assert_eq!(rd(&mut d, 0x60), INT_USED_BUFFER);
        wr(&mut d, 0x64, INT_USED_BUFFER);
        assert!(!irq.is_high());
        wr(&mut d, 0x30, 7);
        assert_eq!(rd(&mut d, 0x34), 0, "queue that does not exist");
        wr(&mut d, 0x50, 1); // queue 1 not ready: ignored
        assert!(!irq.is_high());
        wr(&mut d, 0x30, 1);
        wr(&mut d, 0x44, 1);
        wr(&mut d, 0x50, 1);
        assert_eq!(rd(&mut d, 0x70) & STATUS_NEEDS_RESET, STATUS_NEEDS_RESET);
        assert_eq!(
            d.read(&mut DevCtx::new(0, 0, &mut NoScheduler), 0x108, 2),
            Ok(0x1008)
        );
        wr(&mut d, 0x70, 0);
        assert_eq!(rd(&mut d, 0x70), 0);
        assert!(!irq.is_high());
        wr(&mut d, 0x30, 0);
        assert_eq!(rd(&mut d, 0x44), 0, "reset clears queues");
    }
}
