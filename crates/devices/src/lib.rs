//! Platform devices: CLINT, PLIC, UART 16550, syscon, RTC, virtio-mmio, and
//! the optional devices a configuration names ([`KINDS`]: fixed clocks, the
//! DesignWare APB GPIO, the DesignWare APB SSI with its SPI peripherals, the
//! DesignWare AXI DMA controller, virtio-blk disks and the DesignWare MSHC
//! SD host controller with its card, virtio-net and the OpenCores Ethernet
//! MAC with the network peer).
//!
//! Every device sees offsets into its own window, never absolute addresses;
//! the [`DeviceMap`] turns a physical address into (device, offset). Each
//! device owns its registers, the device-tree node describing it and its
//! statistics. Anything the guest writes ends in a register value, an error
//! status or a refused access ([`BadAccess`]), never a host panic.

pub mod clint;
pub mod clock;
pub mod disk;
pub mod dma;
pub mod ether;
pub mod ethoc;
pub mod fdt;
pub mod gpio;
pub mod ipi;
pub mod lines;
pub mod map;
pub mod mii;
pub mod plic;
pub mod resources;
pub mod rom;
pub mod rtc;
pub mod sd;
pub mod spi;
pub mod syscon;
pub mod uart;
pub mod virtio_blk;
pub mod virtio_mmio;
pub mod virtio_net;
pub mod virtqueue;

pub use clint::Clint;
pub use fdt::{FdtCtx, FdtNode, Placement, Prop};
pub use ipi::{IpiPolicy, Release as IpiRelease};
pub use map::{DeviceMap, MapError};
pub use plic::Plic;
pub use resources::{
    Attach, DeviceConfig, Grant, IrqWant, Kind, ParamError, ParamValue, Params, Plug, Signals,
    Want, Window,
};
pub use rom::Rom;
pub use rtc::GoldfishRtc;
pub use syscon::Syscon;
pub use uart::Uart16550;
pub use virtio_mmio::{VirtioBackend, VirtioMmio};

pub use hs_bus::{
    Access, DmaAck, DmaRequest, GpioLine, GuestRam, IrqLine, Signal, WireIrq, WriteEffect,
};
pub use hs_snapshot::persist_by_serde;
pub use hs_snapshot::state::Persist;

/// Every kind of optional device a configuration (`[board.NAME] kind =
/// "..."`) can name. Adding a device kind is its file plus one line here.
pub const KINDS: &[Kind] = &[
    clock::KIND,
    gpio::KIND,
    spi::board::KIND,
    dma::board::KIND,
    virtio_blk::KIND,
    sd::KIND,
    virtio_net::KIND,
    ethoc::KIND,
];

/// How guest time relates to simulated cycles. Every device that shows time
/// derives it from the cycle count of the access, never from the host clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

/// Something a device did that observers want to know about (the
/// timeline, per-hart interrupt counts). Devices report these themselves;
/// the board never decodes another device's registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Note {
    /// An interrupt controller handed `source` to the accessing hart (a claim).
    Claim { source: u32 },
    /// The accessing hart raised a software interrupt on `target` (an IPI).
    Ipi { target: usize },
}

/// Receives [`Note`]s with the hart and cycle of the access that caused them.
pub trait NoteSink {
    fn note(&mut self, hart: usize, cycle: u64, note: Note);
}

/// What a device sees of the access it is serving.
pub struct DevCtx<'a> {
    /// Accessing hart (0-based).
    pub hart: usize,
    /// The accessing hart's time in cycles, or the event's cycle.
    pub now: u64,
    pub events: &'a mut dyn Scheduler,
    /// Where [`DevCtx::note`] goes (None: nobody is observing).
    pub notes: Option<&'a mut dyn NoteSink>,
    /// Guest RAM and the other devices' windows, for a device that asked to
    /// be a bus master ([`Want::bus_master`]); None otherwise.
    pub master: Option<&'a mut dyn dma::DmaMemory>,
}

impl<'a> DevCtx<'a> {
    pub fn new(hart: usize, now: u64, events: &'a mut dyn Scheduler) -> Self {
        Self {
            hart,
            now,
            events,
            notes: None,
            master: None,
        }
    }
    /// Report `note` for the access being served.
    pub fn note(&mut self, note: Note) {
        if let Some(sink) = self.notes.as_deref_mut() {
            sink.note(self.hart, self.now, note);
        }
    }
}

/// The host side of a console device (a UART): bytes the guest sent, and
/// room for bytes the user typed.
pub trait Console {
    /// How many input bytes the receiver can take now without overrun.
    fn rx_room(&self) -> usize;
    /// A byte arrives on the receive line.
    fn receive(&mut self, byte: u8);
    /// Has transmitted bytes not yet taken.
    fn has_output(&self) -> bool;
    /// Take the bytes transmitted since the last call.
    fn take_output(&mut self) -> Vec<u8>;
}

/// What the guest asked the machine to do through a power-control device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum StopRequest {
    PowerOff,
    Reset,
    /// Power off reporting a failure with this code.
    Fail(u16),
}

/// Lets the board hand a device back to its owner as its own type.
pub trait AsAny {
    fn as_any(&self) -> &dyn std::any::Any;
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any;
}

impl<T: std::any::Any> AsAny for T {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
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
        Self {
            name: name.into(),
            value,
            desc,
        }
    }
}

/// A memory-mapped device.
pub trait Device: AsAny {
    /// Short name used in statistics and error messages (`uart0`, `plic`).
    fn name(&self) -> String;
    /// Size of the register window in bytes.
    fn size(&self) -> u64;
    /// Read `size` (1, 2, 4, 8) bytes at `offset` (< `self.size()`).
    fn read(&mut self, ctx: &mut DevCtx, offset: u64, size: u8) -> Result<u64, BadAccess>;
    /// Write the low `size` bytes of `val` at `offset`. `irq_changed` in
    /// the result is a hint; the machine re-samples interrupt lines anyway.
    fn write(
        &mut self,
        ctx: &mut DevCtx,
        offset: u64,
        size: u8,
        val: u64,
    ) -> Result<WriteEffect, BadAccess>;
    /// A callback scheduled through [`DevCtx::events`] is due.
    fn event(&mut self, _ctx: &mut DevCtx, _token: u64) {}
    /// Device-tree nodes describing this device, from what the board gave it.
    fn fdt_nodes(&self, grant: &Grant, ctx: &FdtCtx) -> Vec<(Placement, FdtNode)>;
    /// Current counters.
    fn stats(&self) -> Vec<Stat>;
    /// A board wire changed; a device that asked to listen ([`Want::listens`])
    /// samples its inputs here.
    fn inputs_changed(&mut self, _ctx: &mut DevCtx) {}
    /// Rate in Hz, if this device is a clock other devices run from.
    fn clock_rate(&self) -> Option<u64> {
        None
    }
    /// The host side of this device, if it is a console.
    fn console(&mut self) -> Option<&mut dyn Console> {
        None
    }
    /// What the guest asked for, if this device controls power and it did.
    fn stop_request(&self) -> Option<StopRequest> {
        None
    }
    /// This device's state for a snapshot ([`persistent!`]); None: it has
    /// no save/restore, and a snapshot of a machine holding it is refused
    /// by the device's name.
    fn state(&self) -> Option<&dyn Persist> {
        None
    }
    fn state_mut(&mut self) -> Option<&mut dyn Persist> {
        None
    }
}

/// The two [`Device::state`] methods of a device that is its own [`Persist`].
#[macro_export]
macro_rules! persistent {
    () => {
        fn state(&self) -> Option<&dyn $crate::Persist> {
            Some(self)
        }
        fn state_mut(&mut self) -> Option<&mut dyn $crate::Persist> {
            Some(self)
        }
    };
}

/// [`Persist`] for a serde type whose restore first asks the type's
/// `fn fits(&self, saved: &Self) -> Result<(), String>` whether the saved
/// value belongs on this machine (configuration, sizes the ties imply),
/// then keeps the listed ties and replaces the rest.
#[macro_export]
macro_rules! persist_checked {
    ($ty:ty, keep: [$($keep:ident),* $(,)?]) => {
        impl $crate::Persist for $ty {
            fn save(&self) -> Result<Vec<u8>, String> {
                hs_snapshot::state::encode(self)
            }
            fn restore(&mut self, data: &[u8]) -> Result<(), String> {
                #[allow(unused_mut)]
                let mut fresh: $ty = hs_snapshot::state::decode(data)?;
                self.fits(&fresh)?;
                $(std::mem::swap(&mut fresh.$keep, &mut self.$keep);)*
                *self = fresh;
                Ok(())
            }
        }
    };
}

/// Another owner's section (JSON) as a string inside this one's.
pub(crate) fn nested_save(p: &dyn Persist) -> Result<String, String> {
    String::from_utf8(p.save()?).map_err(|e| e.to_string())
}

/// `what` of the snapshot's device against this machine's: equal, or an
/// error naming both.
pub(crate) fn same<T: PartialEq + std::fmt::Debug>(
    what: &str,
    saved: &T,
    mine: &T,
) -> Result<(), String> {
    if saved == mine {
        Ok(())
    } else {
        Err(format!(
            "the snapshot's {what} is {saved:?}; this machine's is {mine:?}"
        ))
    }
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
