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
//!   without knowing that a PLIC is behind it. [`GpioLine`], [`DmaRequest`]
//!   and [`DmaAck`] are the other wires devices use to signal one another
//!   (a GPIO pin, a peripheral's DMA handshake request and the controller's
//!   acknowledgement); [`Signal`] is a shared wire that implements them all.

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
    fn mmio_write(
        &mut self,
        acc: Access,
        pa: u64,
        size: u8,
        val: u64,
    ) -> Result<WriteEffect, BusFault>;
}

/// A level-triggered interrupt output of a device.
pub trait IrqLine {
    fn set_level(&self, high: bool);
}

/// An unconnected line: what a device's line is while its state is being
/// restored, before the machine's own line is put back.
impl Default for Box<dyn IrqLine> {
    fn default() -> Self {
        Box::new(WireIrq::new())
    }
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

/// A general-purpose digital wire driven by a device (a GPIO output pin, a
/// chip's interrupt pin wired to a GPIO input).
pub trait GpioLine {
    fn set_level(&self, high: bool);
}

/// A peripheral's DMA handshake request to a DMA controller channel: high
/// while the peripheral wants a transfer (as `dma_req` of the DesignWare
/// handshake interface); `last` marks the final burst of a block.
pub trait DmaRequest {
    fn set_request(&self, active: bool, last: bool);
}

/// The DMA controller's acknowledgement back to the peripheral: one call per
/// transfer it completed on that handshake interface.
pub trait DmaAck {
    fn ack(&self);
}

#[derive(Default, Debug)]
struct SignalState {
    level: Cell<bool>,
    last: Cell<bool>,
    rises: Cell<u64>,
    falls: Cell<u64>,
    acks: Cell<u64>,
    /// Simulated cycle of the last level change made with a time
    /// ([`Signal::set_level_at`]); 0 until then.
    changed_at: Cell<u64>,
    /// Shared by every signal of one board: bumped on any change, so the
    /// board learns cheaply that some device input may have moved.
    generation: Rc<Cell<u64>>,
}

/// A shared wire between two devices (or a device and the host). Cloning
/// gives another handle on the same wire. It keeps its level and counts its
/// edges and acknowledgements, so a device sampling it late still sees every
/// edge that happened (an edge-triggered GPIO input cannot miss a pulse).
#[derive(Clone, Default, Debug)]
pub struct Signal(Rc<SignalState>);

impl Signal {
    /// A wire on its own.
    pub fn new() -> Self {
        Self::default()
    }
    /// A wire whose changes bump `generation` (the board's change counter).
    pub fn with_generation(generation: Rc<Cell<u64>>) -> Self {
        Self(Rc::new(SignalState {
            generation,
            ..SignalState::default()
        }))
    }
    pub fn is_high(&self) -> bool {
        self.0.level.get()
    }
    /// Rising edges so far.
    pub fn rises(&self) -> u64 {
        self.0.rises.get()
    }
    /// Falling edges so far.
    pub fn falls(&self) -> u64 {
        self.0.falls.get()
    }
    /// Acknowledgements so far ([`DmaAck`]).
    pub fn acks(&self) -> u64 {
        self.0.acks.get()
    }
    /// The `last` flag of the latest [`DmaRequest::set_request`].
    pub fn is_last(&self) -> bool {
        self.0.last.get()
    }
    /// Cycle of the last change made through [`Signal::set_level_at`].
    pub fn changed_at(&self) -> u64 {
        self.0.changed_at.get()
    }
    /// Everything the wire holds but the board's change counter, for a
    /// snapshot: level, last flag, rises, falls, acks, time of the last change.
    pub fn save(&self) -> [u64; 6] {
        let s = &self.0;
        [
            s.level.get() as u64,
            s.last.get() as u64,
            s.rises.get(),
            s.falls.get(),
            s.acks.get(),
            s.changed_at.get(),
        ]
    }
    /// Put back what [`Signal::save`] gave (the board restores its change
    /// counter itself).
    pub fn restore(&self, v: [u64; 6]) {
        let s = &self.0;
        s.level.set(v[0] != 0);
        s.last.set(v[1] != 0);
        s.rises.set(v[2]);
        s.falls.set(v[3]);
        s.acks.set(v[4]);
        s.changed_at.set(v[5]);
    }
    /// Drive the level to `high` at simulated cycle `now` (a change records
    /// `now`, so a device sampling the wire later knows when it moved).
    pub fn set_level_at(&self, high: bool, now: u64) {
        if self.0.level.get() != high {
            self.0.changed_at.set(now);
        }
        self.drive(high)
    }
    fn drive(&self, high: bool) {
        let s = &self.0;
        if s.level.get() != high {
            s.level.set(high);
            let n = if high { &s.rises } else { &s.falls };
            n.set(n.get() + 1);
            s.generation.set(s.generation.get().wrapping_add(1));
        }
    }
}

impl IrqLine for Signal {
    fn set_level(&self, high: bool) {
        self.drive(high)
    }
}

impl GpioLine for Signal {
    fn set_level(&self, high: bool) {
        self.drive(high)
    }
}

impl DmaRequest for Signal {
    fn set_request(&self, active: bool, last: bool) {
        self.0.last.set(last);
        self.drive(active)
    }
}

impl DmaAck for Signal {
    fn ack(&self) {
        let s = &self.0;
        s.acks.set(s.acks.get() + 1);
        s.generation.set(s.generation.get().wrapping_add(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_counts_edges_and_bumps_the_shared_generation() {
        let gen = Rc::new(Cell::new(0));
        let a = Signal::with_generation(gen.clone());
        let b = a.clone();
        GpioLine::set_level(&a, true);
        GpioLine::set_level(&a, true); // no change: no edge
        assert!(b.is_high());
        GpioLine::set_level(&a, false);
        GpioLine::set_level(&a, true);
        assert_eq!((b.rises(), b.falls(), gen.get()), (2, 1, 3));
        DmaAck::ack(&b);
        assert_eq!((a.acks(), gen.get()), (1, 4));
        DmaRequest::set_request(&a, false, true);
        assert!(!b.is_high() && b.is_last());
        b.set_level_at(true, 700);
        b.set_level_at(true, 900); // no change: the time stays
        assert_eq!((a.is_high(), a.changed_at(), a.rises()), (true, 700, 3));
    }
}
