//! A split virtqueue as a device walks it in guest RAM (virtio 1.x,
//! section 2.7), shared by every virtio device.
//!
//! Everything the driver wrote is checked before it is used: the rings and
//! table must lie in RAM at their alignments with a power-of-two size no
//! larger than the device offers; the available index may run at most one
//! queue ahead; a descriptor index must be inside the table, a chain no
//! longer than the queue (else it loops), no indirect descriptors (not
//! offered), every buffer in RAM, and no device-readable buffer after a
//! device-writable one. Any violation is [`NeedsReset`] (the transport sets
//! `DEVICE_NEEDS_RESET`), never a host fault.

use hs_bus::GuestRam;

use crate::virtio_mmio::{NeedsReset, QueueConfig};

// Descriptor flags.
pub const DESC_F_NEXT: u16 = 1;
pub const DESC_F_WRITE: u16 = 2;
pub const DESC_F_INDIRECT: u16 = 4;
/// `avail.flags`: the driver does not want an interrupt.
pub const AVAIL_F_NO_INTERRUPT: u16 = 1;

/// One guest buffer of a chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Seg {
    pub addr: u64,
    pub len: u32,
}

/// A descriptor chain taken from the available ring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chain {
    pub head: u16,
    /// Device-readable buffers, in chain order.
    pub readable: Vec<Seg>,
    /// Device-writable buffers, in chain order.
    pub writable: Vec<Seg>,
}

impl Chain {
    pub fn readable_len(&self) -> u64 {
        self.readable.iter().map(|s| s.len as u64).sum()
    }
    pub fn writable_len(&self) -> u64 {
        self.writable.iter().map(|s| s.len as u64).sum()
    }
}

/// The device's side of one queue: where it is in the available ring and
/// the used ring.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ring {
    pub last_avail: u16,
    pub used_idx: u16,
}

fn in_ram(ram: &GuestRam, addr: u64, len: u64) -> bool {
    len == 0 || ram.contains(addr, len)
}

fn read_u16(ram: &GuestRam, addr: u64) -> Result<u16, NeedsReset> {
    ram.read(addr, 2).map(|v| v as u16).ok_or(NeedsReset)
}

/// The queue's rings and table are where a driver may put them.
pub fn check_queue(ram: &GuestRam, q: &QueueConfig, queue_max: u16) -> Result<(), NeedsReset> {
    let n = q.size as u64;
    let ok = q.size != 0
        && q.size.is_power_of_two()
        && q.size <= queue_max
        && q.desc.is_multiple_of(16)
        && q.driver.is_multiple_of(2)
        && q.device.is_multiple_of(4)
        && in_ram(ram, q.desc, 16 * n)
        && in_ram(ram, q.driver, 6 + 2 * n)
        && in_ram(ram, q.device, 6 + 8 * n);
    if ok {
        Ok(())
    } else {
        Err(NeedsReset)
    }
}

impl Ring {
    /// Chains the driver made available and the device has not taken
    /// (checked: never more than the queue holds).
    pub fn available(&self, ram: &GuestRam, q: &QueueConfig) -> Result<u16, NeedsReset> {
        let avail_idx = read_u16(ram, q.driver + 2)?;
        let new = avail_idx.wrapping_sub(self.last_avail);
        if new > q.size {
            return Err(NeedsReset);
        }
        Ok(new)
    }

    /// Take the next available chain, if any.
    pub fn pop(&mut self, ram: &GuestRam, q: &QueueConfig) -> Result<Option<Chain>, NeedsReset> {
        if self.available(ram, q)? == 0 {
            return Ok(None);
        }
        let slot = self.last_avail % q.size;
        let head = read_u16(ram, q.driver + 4 + 2 * slot as u64)?;
        let chain = walk(ram, q, head)?;
        self.last_avail = self.last_avail.wrapping_add(1);
        Ok(Some(chain))
    }

    /// Publish `head` as used with `len` bytes written.
    pub fn push_used(
        &mut self,
        ram: &GuestRam,
        q: &QueueConfig,
        head: u16,
        len: u32,
    ) -> Result<(), NeedsReset> {
        let slot = self.used_idx % q.size;
        let mut elem = [0u8; 8];
        elem[0..4].copy_from_slice(&(head as u32).to_le_bytes());
        elem[4..8].copy_from_slice(&len.to_le_bytes());
        if !ram.write_bytes(q.device + 4 + 8 * slot as u64, &elem) {
            return Err(NeedsReset);
        }
        self.used_idx = self.used_idx.wrapping_add(1);
        if !ram.write(q.device + 2, 2, self.used_idx as u64) {
            return Err(NeedsReset);
        }
        Ok(())
    }
}

/// The driver asked for no interrupt on this queue (`VIRTQ_AVAIL_F_NO_INTERRUPT`).
pub fn interrupt_suppressed(ram: &GuestRam, q: &QueueConfig) -> bool {
    ram.read(q.driver, 2)
        .is_some_and(|f| f as u16 & AVAIL_F_NO_INTERRUPT != 0)
}

/// Walk the chain starting at descriptor `head`.
pub fn walk(ram: &GuestRam, q: &QueueConfig, head: u16) -> Result<Chain, NeedsReset> {
    let (mut readable, mut writable) = (Vec::new(), Vec::new());
    let mut i = head;
    for _ in 0..q.size {
        if i >= q.size {
            return Err(NeedsReset);
        }
        let mut d = [0u8; 16];
        if !ram.read_bytes(q.desc + 16 * i as u64, &mut d) {
            return Err(NeedsReset);
        }
        let addr = u64::from_le_bytes(d[0..8].try_into().unwrap_or_default());
        let len = u32::from_le_bytes(d[8..12].try_into().unwrap_or_default());
        let flags = u16::from_le_bytes([d[12], d[13]]);
        let next = u16::from_le_bytes([d[14], d[15]]);
        if flags & DESC_F_INDIRECT != 0 || !in_ram(ram, addr, len as u64) {
            return Err(NeedsReset);
        }
        if flags & DESC_F_WRITE != 0 {
            writable.push(Seg { addr, len });
        } else if writable.is_empty() {
            readable.push(Seg { addr, len });
        } else {
            // A device-readable buffer after a device-writable one.
            return Err(NeedsReset);
        }
        if flags & DESC_F_NEXT == 0 {
            return Ok(Chain {
                head,
                readable,
                writable,
            });
        }
        i = next;
    }
    // More descriptors than the queue has: a loop.
    Err(NeedsReset)
}

/// Copy `buf.len()` bytes starting `skip` bytes into the concatenation of `segs`.
pub fn gather(
    ram: &GuestRam,
    segs: &[Seg],
    mut skip: u64,
    buf: &mut [u8],
) -> Result<(), NeedsReset> {
    let mut done = 0usize;
    for s in segs {
        if done == buf.len() {
            break;
        }
        let len = s.len as u64;
        if skip >= len {
            skip -= len;
            continue;
        }
        let n = ((len - skip) as usize).min(buf.len() - done);
        if !ram.read_bytes(s.addr + skip, &mut buf[done..done + n]) {
            return Err(NeedsReset);
        }
        done += n;
        skip = 0;
    }
    if done == buf.len() {
        Ok(())
    } else {
        Err(NeedsReset)
    }
}

/// Copy `data` to `skip` bytes into the concatenation of `segs`.
pub fn scatter(ram: &GuestRam, segs: &[Seg], mut skip: u64, data: &[u8]) -> Result<(), NeedsReset> {
    let mut done = 0usize;
    for s in segs {
        if done == data.len() {
            break;
        }
        let len = s.len as u64;
        if skip >= len {
            skip -= len;
            continue;
        }
        let n = ((len - skip) as usize).min(data.len() - done);
        if !ram.write_bytes(s.addr + skip, &data[done..done + n]) {
            return Err(NeedsReset);
        }
        done += n;
        skip = 0;
    }
    if done == data.len() {
        Ok(())
    } else {
        Err(NeedsReset)
    }
}
