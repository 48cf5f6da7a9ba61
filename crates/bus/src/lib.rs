//! Guest physical memory and the interface a hart uses to reach everything
//! that is not RAM.
//!
//! * [`GuestRam`] is one contiguous block of DRAM shared by all harts and
//!   DMA-capable devices of one machine. All accesses are bounds-checked; the
//!   harts' fast paths may take host pointers through [`GuestRam::host_ptr`]
//!   after checking [`GuestRam::contains`].
//! * [`SystemBus`] is what a hart calls for a physical access outside RAM.
//!   The machine implements it (device map, CLINT, PLIC, ...). It is a generic
//!   parameter of the hart's run loop, so there is no dynamic dispatch on the
//!   RAM fast path.
//! * [`IrqLine`] is a level-triggered interrupt output; a UART raises its line
//!   without knowing that a PLIC is behind it.

use std::cell::Cell;
use std::rc::Rc;

pub mod ram;
pub use ram::GuestRam;

/// Who is accessing the bus and when: devices whose registers depend on
/// time (CLINT `mtime`, the RTC, a UART pacing its transmitter) read `now`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Index of the hart (0-based, equals its `mhartid`).
    pub hart: usize,
    /// The hart's local time in cycles when it issues the access.
    pub now: u64,
}

/// Why a physical access outside RAM failed. The hart turns every variant
/// into a guest access-fault trap; nothing here is a host error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BusFault {
    /// No device or memory at this physical address.
    #[error("no device at physical address {0:#x}")]
    Unmapped(u64),
    /// A device exists but does not accept this access width or offset.
    #[error("device at {0:#x} rejects a {1}-byte access")]
    BadAccess(u64, u8),
}

/// Outcome of an MMIO write that the hart must react to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct WriteEffect {
    /// Interrupt state of some hart may have changed (PLIC enable/claim,
    /// CLINT msip/mtimecmp, a device raising its line): the hart should end
    /// its slice so the machine re-evaluates pending interrupts.
    pub irq_changed: bool,
    /// The machine asked to stop (power-off, reset, HTIF exit).
    pub stop: bool,
}

/// The physical address space beyond RAM, as seen by a hart.
pub trait SystemBus {
    /// Read `size` (1, 2, 4 or 8) bytes at physical address `pa`, zero-extended.
    fn mmio_read(&mut self, acc: Access, pa: u64, size: u8) -> Result<u64, BusFault>;
    /// Write the low `size` bytes of `val` at physical address `pa`.
    fn mmio_write(&mut self, acc: Access, pa: u64, size: u8, val: u64)
        -> Result<WriteEffect, BusFault>;
}

/// A level-triggered interrupt output of a device.
pub trait IrqLine {
    fn set_level(&self, high: bool);
}

/// The simplest line: a shared boolean the interrupt controller polls.
/// Cloning gives another handle on the same wire.
#[derive(Clone, Default, Debug)]
pub struct WireIrq(Rc<Cell<bool>>);

impl WireIrq {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn is_high(&self) -> bool {
        self.0.get()
    }
}

impl IrqLine for WireIrq {
    fn set_level(&self, high: bool) {
        self.0.set(high)
    }
}
