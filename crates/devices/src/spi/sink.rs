//! A write-only SPI device that records every frame with its simulated
//! arrival time (the seed study's LED matrix), so the host can show frame
//! times and jitter. Linux binds `spidev` to it through its device-tree
//! node, whose compatible is one `spidev_dt_ids` lists in both 6.1 and 6.12.

use std::cell::RefCell;
use std::rc::Rc;

use super::SpiPeripheral;
use crate::fdt::FdtNode;

/// Compatible of the sink's DT node: in `spidev_dt_ids` of Linux 6.1 and
/// 6.12 (6.11 added "rohm,bh2228fv" and kept this one on purpose).
pub const SPIDEV_COMPATIBLE: &str = "rohm,dh2228fv";

/// One chip-select assertion: the bytes received while it was held.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SinkFrame {
    /// Chip select the sink sits on.
    pub cs: u32,
    /// Cycle chip select was asserted.
    pub start: u64,
    /// Cycle the last byte arrived (or `start` if none did).
    pub end: u64,
    /// Received data; a word wider than 8 bits is stored most significant
    /// byte first (wire order).
    pub bytes: Vec<u8>,
    /// Arrival cycle of each byte.
    pub byte_times: Vec<u64>,
}

/// Minimum, maximum and mean of the gaps between consecutive arrivals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntervalStats {
    pub count: usize,
    pub min: u64,
    pub max: u64,
    pub mean: u64,
}

impl IntervalStats {
    /// `max - min`: the jitter of the period.
    pub fn jitter(&self) -> u64 {
        self.max - self.min
    }
    fn of(times: &[u64]) -> Option<Self> {
        let gaps: Vec<u64> = times
            .windows(2)
            .map(|w| w[1].saturating_sub(w[0]))
            .collect();
        let (&min, &max) = (gaps.iter().min()?, gaps.iter().max()?);
        let mean = (gaps.iter().map(|&g| g as u128).sum::<u128>() / gaps.len() as u128) as u64;
        Some(Self {
            count: gaps.len(),
            min,
            max,
            mean,
        })
    }
}

/// Counts and fingerprints of a sink's record (what its statistics show).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SinkSummary {
    /// Chip-select frames that carried at least one byte.
    pub frames: u64,
    pub bytes: u64,
    /// The last (up to) 8 bytes received, big-endian: `ABCDEFGH` is 0x4142434445464748.
    pub last8: u64,
    /// FNV-1a (64-bit) of every byte received, in order.
    pub fnv1a: u64,
    /// Arrival cycle of the first and the last byte (0 if none).
    pub first_cycle: u64,
    pub last_cycle: u64,
}

/// FNV-1a, 64-bit, of `bytes` (the fingerprint in [`SinkSummary::fnv1a`]).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Shared handle on what a sink received (the host keeps one, the sink
/// itself is owned by the controller).
#[derive(Clone, Debug, Default)]
pub struct SinkLog(Rc<RefCell<Vec<SinkFrame>>>);

impl SinkLog {
    /// All frames so far (closed ones and the one in progress, if any).
    pub fn frames(&self) -> Vec<SinkFrame> {
        self.0.borrow().clone()
    }
    /// Counts and fingerprints of everything received so far.
    pub fn summary(&self) -> SinkSummary {
        let log = self.0.borrow();
        let mut s = SinkSummary {
            fnv1a: fnv1a(&[]),
            ..SinkSummary::default()
        };
        for f in log.iter().filter(|f| !f.bytes.is_empty()) {
            s.frames += 1;
            for (&b, &t) in f.bytes.iter().zip(&f.byte_times) {
                if s.bytes == 0 {
                    s.first_cycle = t;
                }
                s.bytes += 1;
                s.last8 = (s.last8 << 8) | b as u64;
                s.fnv1a = (s.fnv1a ^ b as u64).wrapping_mul(0x0100_0000_01b3);
                s.last_cycle = t;
            }
        }
        s
    }
    /// Every byte received, in order.
    pub fn bytes(&self) -> Vec<u8> {
        self.0
            .borrow()
            .iter()
            .flat_map(|f| f.bytes.iter().copied())
            .collect()
    }
    /// The byte stream cut into `n`-byte application frames, each with the
    /// arrival cycle of its last byte (for a device that latches every `n`
    /// bytes whatever chip select did in between). A short tail is left out.
    pub fn regroup(&self, n: usize) -> Vec<(u64, Vec<u8>)> {
        if n == 0 {
            return Vec::new();
        }
        let log = self.0.borrow();
        let all: Vec<(u8, u64)> = log
            .iter()
            .flat_map(|f| f.bytes.iter().copied().zip(f.byte_times.iter().copied()))
            .collect();
        all.chunks_exact(n)
            .map(|c| (c[n - 1].1, c.iter().map(|&(b, _)| b).collect()))
            .collect()
    }
    /// Gaps between the arrival cycles of consecutive chip-select frames.
    pub fn frame_intervals(&self) -> Option<IntervalStats> {
        let ends: Vec<u64> = self
            .0
            .borrow()
            .iter()
            .filter(|f| !f.bytes.is_empty())
            .map(|f| f.end)
            .collect();
        IntervalStats::of(&ends)
    }
    /// Gaps between the arrival cycles of consecutive `n`-byte frames.
    pub fn regrouped_intervals(&self, n: usize) -> Option<IntervalStats> {
        let ends: Vec<u64> = self.regroup(n).iter().map(|(t, _)| *t).collect();
        IntervalStats::of(&ends)
    }
}

/// The sink device. Shifts back `miso` on every frame.
pub struct SpiSink {
    cs: u32,
    max_hz: u32,
    miso: u16,
    selected: bool,
    log: SinkLog,
}

impl SpiSink {
    /// A sink on chip select `cs` that claims `max_hz` as its maximum clock
    /// (`spi-max-frequency`, which caps what spidev will ask for).
    pub fn new(cs: u32, max_hz: u32) -> Self {
        Self {
            cs,
            max_hz,
            miso: 0,
            selected: false,
            log: SinkLog::default(),
        }
    }
    /// Shift back `miso` on every frame (default 0).
    pub fn answering(mut self, miso: u16) -> Self {
        self.miso = miso;
        self
    }
    /// The handle the host reads frames from.
    pub fn log(&self) -> SinkLog {
        self.log.clone()
    }
}

/// A sink in a snapshot: its settings and its record.
#[derive(serde::Serialize, serde::Deserialize)]
struct SavedSink {
    cs: u32,
    max_hz: u32,
    miso: u16,
    selected: bool,
    frames: Vec<SinkFrame>,
}

/// The record is shared with the host's [`SinkLog`] handles: a restore
/// puts the frames back into it, so those handles see them.
impl crate::Persist for SpiSink {
    fn save(&self) -> Result<Vec<u8>, String> {
        hs_snapshot::state::encode(&SavedSink {
            cs: self.cs,
            max_hz: self.max_hz,
            miso: self.miso,
            selected: self.selected,
            frames: self.log.frames(),
        })
    }
    fn restore(&mut self, data: &[u8]) -> Result<(), String> {
        let s: SavedSink = hs_snapshot::state::decode(data)?;
        crate::same(
            "SPI sink (chip select, max-hz)",
            &(s.cs, s.max_hz),
            &(self.cs, self.max_hz),
        )?;
        if s.frames.iter().any(|f| f.bytes.len() != f.byte_times.len()) {
            return Err("a frame of the snapshot's SPI sink has bytes without times".into());
        }
        self.miso = s.miso;
        self.selected = s.selected;
        *self.log.0.borrow_mut() = s.frames;
        Ok(())
    }
}

impl SpiPeripheral for SpiSink {
    fn state(&self) -> Option<&dyn crate::Persist> {
        Some(self)
    }
    fn state_mut(&mut self) -> Option<&mut dyn crate::Persist> {
        Some(self)
    }
    fn select(&mut self, now: u64) {
        self.selected = true;
        let frame = SinkFrame {
            cs: self.cs,
            start: now,
            end: now,
            bytes: Vec::new(),
            byte_times: Vec::new(),
        };
        self.log.0.borrow_mut().push(frame);
    }

    fn exchange(&mut self, mosi: u16, bits: u8, now: u64) -> u16 {
        if !self.selected {
            // A controller never clocks an unselected device; be robust anyway.
            self.select(now);
        }
        let mut log = self.log.0.borrow_mut();
        if let Some(f) = log.last_mut() {
            if bits > 8 {
                f.bytes.push((mosi >> 8) as u8);
                f.byte_times.push(now);
            }
            f.bytes.push(mosi as u8);
            f.byte_times.push(now);
            f.end = now;
        }
        self.miso
    }

    fn deselect(&mut self, _now: u64) {
        self.selected = false;
    }

    fn fdt_node(&self, cs: u32) -> Option<FdtNode> {
        Some(
            FdtNode::new(format!("spidev@{cs:x}"))
                .str("compatible", SPIDEV_COMPATIBLE)
                .u32("reg", cs)
                .u32("spi-max-frequency", self.max_hz),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_bytes_regrouping_and_jitter() {
        let mut s = SpiSink::new(0, 10_000_000);
        let log = s.log();
        for (k, start) in [1000u64, 2000, 3010].into_iter().enumerate() {
            s.select(start);
            for i in 0..4u64 {
                s.exchange((k as u16) << 4 | i as u16, 8, start + 100 * (i + 1));
            }
            s.deselect(start + 450);
        }
        let f = log.frames();
        assert_eq!(f.len(), 3);
        assert_eq!(f[1].bytes, vec![0x10, 0x11, 0x12, 0x13]);
        assert_eq!((f[1].start, f[1].end), (2000, 2400));
        assert_eq!(f[2].byte_times, vec![3110, 3210, 3310, 3410]);
        let st = log.frame_intervals().unwrap();
        assert_eq!(
            (st.count, st.min, st.max, st.mean, st.jitter()),
            (2, 1000, 1010, 1005, 10)
        );
        let g = log.regroup(8);
        assert_eq!(
            g.len(),
            1,
            "12 bytes give one 8-byte frame and a dropped tail"
        );
        assert_eq!(g[0], (2400, vec![0, 1, 2, 3, 0x10, 0x11, 0x12, 0x13]));
        assert!(log.regrouped_intervals(8).is_none());
        assert_eq!(log.bytes().len(), 12);
        let sum = log.summary();
        assert_eq!(
            (sum.frames, sum.bytes, sum.first_cycle, sum.last_cycle),
            (3, 12, 1100, 3410)
        );
        assert_eq!(sum.last8, 0x1011_1213_2021_2223);
        assert_eq!(sum.fnv1a, fnv1a(&log.bytes()));
        assert_eq!(
            fnv1a(b"a"),
            0xaf63_dc4c_8601_ec8c,
            "the published FNV-1a 64 test vector"
        );
        // 16-bit words arrive most significant byte first.
        s.select(5000);
        s.exchange(0xbeef, 16, 5100);
        assert_eq!(log.frames()[3].bytes, vec![0xbe, 0xef]);
        let n = s.fdt_node(2).unwrap();
        assert_eq!(n.name, "spidev@2");
        assert_eq!(
            n.get("compatible"),
            Some(&crate::fdt::Prop::Str(SPIDEV_COMPATIBLE.into()))
        );
        assert_eq!(n.get("reg"), Some(&crate::fdt::Prop::U32(2)));
    }
}
