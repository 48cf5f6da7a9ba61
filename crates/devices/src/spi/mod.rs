//! SPI: the DesignWare APB SSI controller ([`dw_ssi::DwSsi`]) and the
//! peripherals on its chip selects ([`SpiPeripheral`], [`SpiSink`]).
//!
//! A peripheral sees what a device on the wires would: chip select
//! asserted, one frame exchanged per data word (at the simulated cycle its
//! last bit is clocked), chip select released. It never sees the
//! controller's registers.

pub mod board;
pub mod dw_ssi;
pub mod enc28j60;
pub mod sink;

pub use dw_ssi::{DwSsi, SsiConfig, SsiDmaFdt, SsiFdt};
pub use sink::{fnv1a, IntervalStats, SinkFrame, SinkLog, SinkSummary, SpiSink};

use std::collections::BTreeMap;

use crate::fdt::FdtNode;
use crate::Stat;

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
    /// The same, for a device whose node refers to others (`phandles` by
    /// device name, e.g. the GPIO its interrupt pin is wired to).
    fn fdt_node_with(&self, cs: u32, _phandles: &BTreeMap<String, u32>) -> Option<FdtNode> {
        self.fdt_node(cs)
    }
    /// Cycle the device next does something on its own (a device with a
    /// life off the SPI wires: a network chip receiving frames), if any.
    fn next_event(&self) -> Option<u64> {
        None
    }
    /// Run the device's own activity up to cycle `now`.
    fn advance(&mut self, _now: u64) {}
    /// The device's statistics, named under `prefix`.
    fn peripheral_stats(&self, _prefix: &str) -> Vec<Stat> {
        Vec::new()
    }
    /// Its state for a snapshot, as [`crate::Device::state`]; None: a
    /// controller holding it cannot be snapshotted.
    fn state(&self) -> Option<&dyn crate::Persist> {
        None
    }
    fn state_mut(&mut self) -> Option<&mut dyn crate::Persist> {
        None
    }
}
