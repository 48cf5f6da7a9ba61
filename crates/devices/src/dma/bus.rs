//! What a DMA controller sees as a bus master: guest RAM and the register
//! windows of peripherals (a FIFO data register), all through one checked
//! trait. Every address and length is checked; a miss is a [`DmaFault`] the
//! controller turns into a channel error status, never a host fault.

use hs_bus::GuestRam;

/// Why a bus-master access failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmaFault {
    /// Nothing at this address for the whole length (AXI DECERR).
    Decode(u64),
    /// A peripheral refused the access width or offset (AXI SLVERR).
    Slave(u64),
}

/// Memory as seen by a DMA master. `now` is the simulated cycle of the
/// access (peripherals behind it run their clocks up to it).
pub trait DmaMemory {
    fn dma_read(&mut self, addr: u64, buf: &mut [u8], now: u64) -> Result<(), DmaFault>;
    fn dma_write(&mut self, addr: u64, data: &[u8], now: u64) -> Result<(), DmaFault>;
}

impl DmaMemory for GuestRam {
    fn dma_read(&mut self, addr: u64, buf: &mut [u8], _now: u64) -> Result<(), DmaFault> {
        if self.read_bytes(addr, buf) {
            Ok(())
        } else {
            Err(DmaFault::Decode(addr))
        }
    }
    fn dma_write(&mut self, addr: u64, data: &[u8], _now: u64) -> Result<(), DmaFault> {
        // write_bytes notes stores to code pages, so harts drop stale decodes.
        if self.write_bytes(addr, data) {
            Ok(())
        } else {
            Err(DmaFault::Decode(addr))
        }
    }
}

/// Plain memory in a `Vec` at a base address (tests, tools).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VecMemory {
    pub base: u64,
    pub data: Vec<u8>,
}

impl VecMemory {
    pub fn new(base: u64, size: usize) -> Self {
        Self {
            base,
            data: vec![0; size],
        }
    }
    fn range(&self, addr: u64, len: usize) -> Option<std::ops::Range<usize>> {
        let off = addr.checked_sub(self.base)?;
        let end = off.checked_add(len as u64)?;
        (end <= self.data.len() as u64).then_some(off as usize..end as usize)
    }
    /// Copy `bytes` in at `addr` (panics outside: for test set-up only).
    pub fn put(&mut self, addr: u64, bytes: &[u8]) {
        let r = self
            .range(addr, bytes.len())
            .expect("VecMemory::put outside memory");
        self.data[r].copy_from_slice(bytes);
    }
    /// The bytes at `addr..addr+len` (panics outside: for test checks only).
    pub fn get(&self, addr: u64, len: usize) -> &[u8] {
        let r = self
            .range(addr, len)
            .expect("VecMemory::get outside memory");
        &self.data[r]
    }
}

impl DmaMemory for VecMemory {
    fn dma_read(&mut self, addr: u64, buf: &mut [u8], _now: u64) -> Result<(), DmaFault> {
        let r = self.range(addr, buf.len()).ok_or(DmaFault::Decode(addr))?;
        buf.copy_from_slice(&self.data[r]);
        Ok(())
    }
    fn dma_write(&mut self, addr: u64, data: &[u8], _now: u64) -> Result<(), DmaFault> {
        let r = self.range(addr, data.len()).ok_or(DmaFault::Decode(addr))?;
        self.data[r].copy_from_slice(data);
        Ok(())
    }
}

/// A register window reachable by a DMA master (a peripheral's FIFO data
/// register). Same shape as a hart's access: offset, width, simulated cycle.
pub trait DmaTarget {
    fn target_read(&mut self, offset: u64, size: u8, now: u64) -> Option<u64>;
    fn target_write(&mut self, offset: u64, size: u8, val: u64, now: u64) -> bool;
}

/// RAM plus peripheral windows, built by the board for the duration of one
/// DMA `advance` call (the DMA engine itself never names a peripheral).
/// Window ranges are half-open `[base, base+size)`; accesses to a window
/// must be 1, 2, 4 or 8 bytes inside it.
pub struct MasterBus<'a, M: DmaMemory + ?Sized> {
    pub mem: &'a mut M,
    pub windows: Vec<(u64, u64, &'a mut dyn DmaTarget)>,
}

impl<'a, M: DmaMemory + ?Sized> MasterBus<'a, M> {
    pub fn new(mem: &'a mut M) -> Self {
        Self {
            mem,
            windows: Vec::new(),
        }
    }
    pub fn window(mut self, base: u64, size: u64, dev: &'a mut dyn DmaTarget) -> Self {
        self.windows.push((base, size, dev));
        self
    }
    /// The window holding `addr`: (index, offset).
    fn find(&self, addr: u64) -> Option<(usize, u64)> {
        self.windows
            .iter()
            .enumerate()
            .find_map(|(i, (base, size, _))| {
                let off = addr.checked_sub(*base)?;
                (off < *size).then_some((i, off))
            })
    }
    fn check(&self, i: usize, off: u64, len: usize, addr: u64) -> Result<u8, DmaFault> {
        let size = self.windows[i].1;
        if !matches!(len, 1 | 2 | 4 | 8) || off + len as u64 > size {
            return Err(DmaFault::Slave(addr));
        }
        Ok(len as u8)
    }
}

impl<M: DmaMemory + ?Sized> DmaMemory for MasterBus<'_, M> {
    fn dma_read(&mut self, addr: u64, buf: &mut [u8], now: u64) -> Result<(), DmaFault> {
        let Some((i, off)) = self.find(addr) else {
            return self.mem.dma_read(addr, buf, now);
        };
        let size = self.check(i, off, buf.len(), addr)?;
        let v = self.windows[i]
            .2
            .target_read(off, size, now)
            .ok_or(DmaFault::Slave(addr))?;
        buf.copy_from_slice(&v.to_le_bytes()[..buf.len()]);
        Ok(())
    }
    fn dma_write(&mut self, addr: u64, data: &[u8], now: u64) -> Result<(), DmaFault> {
        let Some((i, off)) = self.find(addr) else {
            return self.mem.dma_write(addr, data, now);
        };
        let size = self.check(i, off, data.len(), addr)?;
        let mut b = [0u8; 8];
        b[..data.len()].copy_from_slice(data);
        if self.windows[i]
            .2
            .target_write(off, size, u64::from_le_bytes(b), now)
        {
            Ok(())
        } else {
            Err(DmaFault::Slave(addr))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Reg(Vec<(u64, u8, u64, u64)>);
    impl DmaTarget for Reg {
        fn target_read(&mut self, offset: u64, size: u8, _now: u64) -> Option<u64> {
            (offset == 0x60).then_some(0x1122_3344_5566_7788 & crate::width_mask(size))
        }
        fn target_write(&mut self, offset: u64, size: u8, val: u64, now: u64) -> bool {
            self.0.push((offset, size, val, now));
            offset == 0x60
        }
    }

    #[test]
    fn every_address_and_length_is_checked() {
        let mut m = VecMemory::new(0x8000_0000, 64);
        let mut b = [0u8; 8];
        assert_eq!(m.dma_read(0x8000_0038, &mut b, 0), Ok(()));
        assert_eq!(
            m.dma_read(0x8000_0039, &mut b, 0),
            Err(DmaFault::Decode(0x8000_0039))
        );
        assert_eq!(
            m.dma_read(0x7fff_ffff, &mut b[..1], 0),
            Err(DmaFault::Decode(0x7fff_ffff))
        );
        assert_eq!(
            m.dma_write(u64::MAX - 2, &b, 0),
            Err(DmaFault::Decode(u64::MAX - 2))
        );
        let ram = GuestRam::new(0x8000_0000, 4096).unwrap();
        let mut r = ram.clone();
        assert_eq!(r.dma_write(0x8000_0ffc, &[1, 2, 3, 4], 0), Ok(()));
        assert_eq!(
            r.dma_write(0x8000_0ffd, &[1, 2, 3, 4], 0),
            Err(DmaFault::Decode(0x8000_0ffd))
        );
        assert_eq!(ram.read(0x8000_0ffc, 4), Some(0x0403_0201));
    }

    #[test]
    fn windows_route_to_registers_by_offset() {
        let mut m = VecMemory::new(0x8000_0000, 64);
        let mut reg = Reg(Vec::new());
        {
            let mut bus = MasterBus::new(&mut m).window(0x1004_0000, 0x100, &mut reg);
            assert_eq!(bus.dma_write(0x1004_0060, &[0xab], 77), Ok(()));
            assert_eq!(
                bus.dma_write(0x1004_0064, &[1, 2], 78),
                Err(DmaFault::Slave(0x1004_0064))
            );
            assert_eq!(
                bus.dma_write(0x1004_0060, &[1, 2, 3], 79),
                Err(DmaFault::Slave(0x1004_0060))
            );
            assert_eq!(
                bus.dma_write(0x1004_00fe, &[1, 2, 3, 4], 79),
                Err(DmaFault::Slave(0x1004_00fe))
            );
            let mut b = [0u8; 2];
            assert_eq!(bus.dma_read(0x1004_0060, &mut b, 80), Ok(()));
            assert_eq!(b, [0x88, 0x77]);
            assert_eq!(bus.dma_write(0x8000_0000, &[9; 4], 81), Ok(()));
            assert_eq!(
                bus.dma_write(0x9000_0000, &[9; 4], 81),
                Err(DmaFault::Decode(0x9000_0000))
            );
        }
        assert_eq!(reg.0, vec![(0x60, 1, 0xab, 77), (0x64, 2, 0x0201, 78)]);
        assert_eq!(m.get(0x8000_0000, 4), &[9; 4]);
    }
}
