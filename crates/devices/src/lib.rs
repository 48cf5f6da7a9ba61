//! Platform devices: CLINT, PLIC, UART 16550, syscon, RTC, virtio-mmio,
//! DesignWare SSI (SPI) and AXI DMA.
//!
//! Every device sees offsets into its own window, never absolute addresses;
//! the [`DeviceMap`] turns a physical address into (device, offset). Each
//! device owns its registers, the device-tree node describing it and its
//! statistics. Anything the guest writes ends in a register value, an error
//! status or a refused access ([`BadAccess`]), never a host panic.

pub mod clint;
pub mod dma;
pub mod fdt;
pub mod lines;
pub mod map;
pub mod plic;
pub mod rom;
pub mod rtc;
pub mod spi;
pub mod syscon;
pub mod uart;
pub mod virtio_mmio;

pub use clint::Clint;
pub use fdt::{FdtCtx, FdtNode, Placement, Prop};
pub use map::{DeviceMap, MapError};
pub use plic::Plic;
pub use rom::Rom;
pub use rtc::GoldfishRtc;
pub use syscon::{Syscon, SysconRequest};
pub use uart::Uart16550;
pub use virtio_mmio::{VirtioBackend, VirtioMmio};

pub use hs_bus::{Access, IrqLine, WireIrq, WriteEffect};

/// How guest time relates to simulated cycles. Every device that shows time
/// derives it from the cycle count of the access, never from the host clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    /// Simulated core cycles per guest second.
    pub hz: u64,
    /// Cycles per tick of `mtime` / the `time` CSR.
    pub cycles_per_tick: u64,
}

impl Clock {
    /// Nanoseconds of guest time after `cycle` cycles.
    pub fn cycles_to_ns(&self, cycle: u64) -> u64 {
        ((cycle as u128 * 1_000_000_000) / self.hz.max(1) as u128).min(u64::MAX as u128) as u64
    }
    /// First cycle at which `ns` nanoseconds of guest time have passed.
    pub fn ns_to_cycles(&self, ns: u64) -> u64 {
        let c = (ns as u128 * self.hz as u128).div_ceil(1_000_000_000);
        c.min(u64::MAX as u128) as u64
    }
    /// `mtime` ticks after `cycle` cycles.
    pub fn ticks(&self, cycle: u64) -> u64 {
        cycle / self.cycles_per_tick.max(1)
    }
    /// First cycle at which `mtime` reaches `tick`.
    pub fn tick_to_cycle(&self, tick: u64) -> u64 {
        tick.saturating_mul(self.cycles_per_tick.max(1))
    }
}

/// The device refuses this access (width or offset): the hart raises an
/// access fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadAccess;

/// Something that can arrange for a device's [`Device::event`] to be called
/// at a later cycle. The machine's event queue implements it.
pub trait Scheduler {
    /// Call the device back with `token` at `cycle`. Scheduling a token
    /// that is still pending moves it (a device re-arms, never piles up).
    fn schedule(&mut self, cycle: u64, token: u64);
}

/// A scheduler that drops requests, for devices used outside a machine.
pub struct NoScheduler;
impl Scheduler for NoScheduler {
    fn schedule(&mut self, _cycle: u64, _token: u64) {}
}

/// What a device sees of the access it is serving.
pub struct DevCtx<'a> {
    /// Accessing hart (0-based).
    pub hart: usize,
    /// The accessing hart's time in cycles, or the event's cycle.
    pub now: u64,
    pub events: &'a mut dyn Scheduler,
}

impl<'a> DevCtx<'a> {
    pub fn new(hart: usize, now: u64, events: &'a mut dyn Scheduler) -> Self {
        Self { hart, now, events }
    }
}

/// One named counter of a device, in gem5's `name value # description` shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    pub name: String,
    pub value: u64,
    pub desc: &'static str,
}

impl Stat {
    pub fn new(name: impl Into<String>, value: u64, desc: &'static str) -> Self {
        Self { name: name.into(), value, desc }
    }
}

/// A memory-mapped device.
pub trait Device {
    /// Short name used in statistics and error messages (`uart0`, `plic`).
    fn name(&self) -> String;
    /// Size of the register window in bytes.
    fn size(&self) -> u64;
    /// Read `size` (1, 2, 4, 8) bytes at `offset` (< `self.size()`).
    fn read(&mut self, ctx: &mut DevCtx, offset: u64, size: u8) -> Result<u64, BadAccess>;
    /// Write the low `size` bytes of `val` at `offset`. `irq_changed` in
    /// the result is a hint; the machine re-samples interrupt lines anyway.
    fn write(&mut self, ctx: &mut DevCtx, offset: u64, size: u8, val: u64)
        -> Result<WriteEffect, BadAccess>;
    /// A callback scheduled through [`DevCtx::events`] is due.
    fn event(&mut self, _ctx: &mut DevCtx, _token: u64) {}
    /// Device-tree nodes describing this device mapped at `base`.
    fn fdt_nodes(&self, base: u64, ctx: &FdtCtx) -> Vec<(Placement, FdtNode)>;
    /// Current counters.
    fn stats(&self) -> Vec<Stat>;
}

/// Access widths a hart can issue.
pub(crate) fn size_ok(size: u8) -> bool {
    matches!(size, 1 | 2 | 4 | 8)
}

/// Mask of the low `size` bytes.
pub(crate) fn width_mask(size: u8) -> u64 {
    if size >= 8 {
        u64::MAX
    } else {
        (1u64 << (size as u32 * 8)) - 1
    }
}
