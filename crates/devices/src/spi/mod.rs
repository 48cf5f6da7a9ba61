//! SPI: the DesignWare APB SSI controller ([`dw_ssi::DwSsi`]) and the
//! peripherals on its chip selects ([`SpiPeripheral`], [`SpiSink`]).
//!
//! A peripheral sees what a device on the wires would: chip select
//! asserted, one frame exchanged per data word (at the simulated cycle its
//! last bit is clocked), chip select released. It never sees the
//! controller's registers.

pub mod board;
pub mod dw_ssi;
pub mod sink;

pub use dw_ssi::{DwSsi, SsiConfig, SsiDmaFdt, SsiFdt};
pub use sink::{fnv1a, IntervalStats, SinkFrame, SinkLog, SinkSummary, SpiSink};

use crate::fdt::FdtNode;

/// A device on one chip select of an SPI controller.
pub trait SpiPeripheral {
    /// Chip select asserted at cycle `now`.
    fn select(&mut self, now: u64);
    /// One frame of `bits` (4..=16) bits: `mosi` was shifted out, the return
    /// value is what the device shifted back on MISO. `now` is the cycle the
    /// last bit was clocked (the frame's arrival time).
    fn exchange(&mut self, mosi: u16, bits: u8, now: u64) -> u16;
    /// Chip select released at cycle `now`.
    fn deselect(&mut self, now: u64);
    /// Device-tree child node describing this device on chip select `cs`
    /// (placed under the controller's node), if it has one.
    fn fdt_node(&self, _cs: u32) -> Option<FdtNode> {
        None
    }
}
