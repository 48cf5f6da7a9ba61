//! virtio-blk (virtio device ID 2) behind the virtio-mmio transport
//! ([`crate::virtio_mmio`]), backed by a raw disk image file.
//!
//! **Queue.** One split virtqueue (at most [`QUEUE_MAX`] entries) walked from
//! guest RAM. Every index, length, address and chain is checked when the
//! driver kicks the queue: a queue whose rings or descriptor table are not
//! in RAM or misaligned, a size that is not a power of two, an available
//! index more than a queue ahead, a descriptor index past the table, a chain
//! longer than the queue (a loop), an indirect descriptor (not offered), a
//! buffer outside RAM, a device-readable buffer after a device-writable one,
//! more requests outstanding than the queue has entries, or a chain without
//! a writable byte for the status: the device refuses the queue
//! ([`NeedsReset`]: the transport sets `DEVICE_NEEDS_RESET`). A well-formed
//! chain with a bad request — a header shorter than 16 bytes, a data length
//! that is not whole sectors, sectors past the end of the disk, a write to a
//! read-only disk, a host I/O error — completes with `VIRTIO_BLK_S_IOERR`;
//! an unknown type with `VIRTIO_BLK_S_UNSUPP`.
//!
//! **Requests.** `IN`, `OUT`, `FLUSH`, `GET_ID`, `DISCARD`, `WRITE_ZEROES`
//! (both make their ranges read as zeros; in the overlay a whole 4 KiB block
//! becomes a zero block that holds no data). Features offered: `VERSION_1`
//! (by the transport), `SIZE_MAX`, `SEG_MAX`, `BLK_SIZE`, `FLUSH`,
//! `DISCARD`, `WRITE_ZEROES`, and `RO` for a read-only disk. No indirect
//! descriptors, no event index, one queue.
//!
//! **Time.** Simulated, never the host clock: the device serves requests one
//! after another, each taking `latency-ns + bytes / bandwidth-mibps` of
//! guest time (DISCARD and WRITE_ZEROES: `latency-ns` only) from when the device is free (a request queued behind another
//! starts when that one ends). The request is read from the queue at the
//! kick; its data is moved, its status written and its used-ring entry
//! published when it completes, through the transport's event, so the hart
//! runs on meanwhile. Requests complete in the order they were made
//! available, and one interrupt covers every request completing at that
//! cycle (none when the driver set `VIRTQ_AVAIL_F_NO_INTERRUPT`).
//!
//! **Backing store** ([`Disk`]): a raw image file whose size is a whole
//! number of 512-byte sectors. By default writes go to a copy-on-write
//! overlay in host memory (sparse, per 4 KiB block) and the file is opened
//! read-only, so a run never changes it and a killed run loses nothing;
//! `write-through = true` writes the file itself.
//!
//! Configuration (`[board.NAME]` of a machine description):
//! `kind = "virtio-blk"`, `file = "PATH"` (required; relative to the working
//! directory), `write-through` (default false), `read-only` (default false),
//! `latency-ns` (default 20000), `bandwidth-mibps` (default 1000),
//! `serial` (up to 20 bytes, default the device name).

use std::collections::VecDeque;

use hs_bus::GuestRam;

use crate::resources::{Attach, DeviceConfig, Kind, ParamError, Params, Plug, Want};
use crate::virtio_mmio::{
    self, NeedsReset, QueueConfig, VirtioBackend, VirtioMmio, INT_USED_BUFFER,
};
use crate::virtqueue::{self, gather, scatter, Chain, Ring, Seg};
use crate::{Clock, DevCtx, Stat};

/// The configuration kind.
pub const KIND: Kind = Kind {
    name: "virtio-blk",
    plug,
};

pub const DEVICE_ID: u32 = 2;
pub use crate::disk::{Disk, DiskSpec, BLOCK, SECTOR};
/// Largest queue the device offers.
pub const QUEUE_MAX: u16 = 256;
/// Segments per request the driver may use (the header and status take two
/// more descriptors; without indirect descriptors a request must fit the ring).
pub const SEG_MAX: u32 = QUEUE_MAX as u32 - 2;
/// Largest segment.
pub const SIZE_MAX: u32 = 1 << 20;

pub const DEFAULT_LATENCY_NS: u64 = 20_000;
pub const DEFAULT_BANDWIDTH_MIBPS: u64 = 1000;

// Feature bits.
pub const F_SIZE_MAX: u64 = 1 << 1;
pub const F_SEG_MAX: u64 = 1 << 2;
pub const F_RO: u64 = 1 << 5;
pub const F_BLK_SIZE: u64 = 1 << 6;
pub const F_FLUSH: u64 = 1 << 9;
pub const F_DISCARD: u64 = 1 << 13;
pub const F_WRITE_ZEROES: u64 = 1 << 14;

// Request types and status values.
pub const T_IN: u32 = 0;
pub const T_OUT: u32 = 1;
pub const T_FLUSH: u32 = 4;
pub const T_GET_ID: u32 = 8;
pub const T_DISCARD: u32 = 11;
pub const T_WRITE_ZEROES: u32 = 13;
/// `flags` of a discard / write-zeroes range: the device may deallocate.
pub const WRITE_ZEROES_FLAG_UNMAP: u32 = 1;
/// Ranges one DISCARD / WRITE_ZEROES request may carry (`max_discard_seg`,
/// `max_write_zeroes_seg`).
pub const MAX_ZERO_SEGS: u32 = 32;
/// Sectors one range may cover (`max_discard_sectors`,
/// `max_write_zeroes_sectors`): 1 GiB, bounding the host work per request.
pub const MAX_ZERO_SECTORS: u32 = 1 << 21;
/// `discard_sector_alignment`: the overlay's 4 KiB block, in sectors.
pub const DISCARD_ALIGNMENT: u32 = (BLOCK / SECTOR) as u32;
pub const S_OK: u8 = 0;
pub const S_IOERR: u8 = 1;
pub const S_UNSUPP: u8 = 2;
/// Bytes of the `GET_ID` answer.
pub const ID_BYTES: usize = 20;

pub use crate::virtqueue::{AVAIL_F_NO_INTERRUPT, DESC_F_INDIRECT, DESC_F_NEXT, DESC_F_WRITE};

/// Bytes of the device configuration space (`struct virtio_blk_config` up to
/// `write_zeroes_may_unmap`); reads beyond it are 0.
pub const CONFIG_SIZE: usize = 0x3c;

/// Host-side copy granule when data moves between the disk and guest RAM.
const CHUNK: usize = 64 * 1024;

/// Timing knobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Timing {
    /// Cost of every request, in guest nanoseconds.
    pub latency_ns: u64,
    /// Data rate in MiB per guest second (≥ 1).
    pub bandwidth_mibps: u64,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            latency_ns: DEFAULT_LATENCY_NS,
            bandwidth_mibps: DEFAULT_BANDWIDTH_MIBPS,
        }
    }
}

impl Timing {
    /// Guest nanoseconds a request moving `bytes` takes.
    pub fn cost_ns(&self, bytes: u64) -> u64 {
        let per =
            (bytes as u128 * 1_000_000_000) / (self.bandwidth_mibps.max(1) as u128 * (1 << 20));
        self.latency_ns
            .saturating_add(per.min(u64::MAX as u128) as u64)
    }
}

/// A request taken from the available ring, waiting for its completion cycle.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Pending {
    done: u64,
    head: u16,
    /// The queue as it was when the request was taken.
    queue: QueueConfig,
    /// Device-readable buffers (header, then OUT data), in chain order.
    readable: Vec<Seg>,
    /// Device-writable buffers (IN data, then the status byte last).
    writable: Vec<Seg>,
    /// The 16-byte header, if the readable part holds one.
    header: Option<(u32, u64)>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Counters {
    requests: u64,
    reads: u64,
    writes: u64,
    flushes: u64,
    get_ids: u64,
    unsupported: u64,
    ioerrs: u64,
    host_errors: u64,
    bytes_read: u64,
    bytes_written: u64,
    discards: u64,
    write_zeroes: u64,
    bytes_zeroed: u64,
    bad_queues: u64,
    interrupts_suppressed: u64,
    busy_cycles: u64,
}

/// The virtio-blk device: queue handling, timing, and the [`Disk`].
#[derive(serde::Serialize, serde::Deserialize)]
pub struct VirtioBlk {
    #[serde(skip)]
    ram: GuestRam,
    #[serde(skip)]
    clock: Clock,
    timing: Timing,
    #[serde(skip)]
    disk: Disk,
    read_only: bool,
    serial: [u8; ID_BYTES],
    driver_features: u64,
    ring: Ring,
    inflight: VecDeque<Pending>,
    /// Cycle at which the device finishes the last request it accepted.
    busy_until: u64,
    c: Counters,
}

/// The queue state and counters; the disk's overlay rides along beside them.
impl crate::Persist for VirtioBlk {
    fn save(&self) -> Result<Vec<u8>, String> {
        let disk = String::from_utf8(self.disk.save()?).map_err(|e| e.to_string())?;
        hs_snapshot::state::encode(&(self, disk))
    }
    fn restore(&mut self, data: &[u8]) -> Result<(), String> {
        let (mut fresh, disk): (VirtioBlk, String) = hs_snapshot::state::decode(data)?;
        self.disk.restore(disk.as_bytes())?;
        std::mem::swap(&mut fresh.ram, &mut self.ram);
        std::mem::swap(&mut fresh.clock, &mut self.clock);
        std::mem::swap(&mut fresh.disk, &mut self.disk);
        *self = fresh;
        Ok(())
    }
}

impl VirtioBlk {
    pub fn new(
        disk: Disk,
        read_only: bool,
        serial: &str,
        timing: Timing,
        ram: GuestRam,
        clock: Clock,
    ) -> Self {
        let mut id = [0u8; ID_BYTES];
        let s = serial.as_bytes();
        let n = s.len().min(ID_BYTES);
        id[..n].copy_from_slice(&s[..n]);
        Self {
            ram,
            clock,
            timing,
            disk,
            read_only,
            serial: id,
            driver_features: 0,
            ring: Ring::default(),
            inflight: VecDeque::new(),
            busy_until: 0,
            c: Counters::default(),
        }
    }

    pub fn disk(&self) -> &Disk {
        &self.disk
    }
    /// Requests taken and not yet completed.
    pub fn outstanding(&self) -> usize {
        self.inflight.len()
    }
    /// Features the driver accepted at `DRIVER_OK`.
    pub fn driver_features(&self) -> u64 {
        self.driver_features
    }

    fn config_bytes(&self) -> [u8; CONFIG_SIZE] {
        let mut c = [0u8; CONFIG_SIZE];
        c[0x00..0x08].copy_from_slice(&(self.disk.len() / SECTOR).to_le_bytes());
        c[0x08..0x0c].copy_from_slice(&SIZE_MAX.to_le_bytes());
        c[0x0c..0x10].copy_from_slice(&SEG_MAX.to_le_bytes());
        // geometry (0x10..0x14) unused: no VIRTIO_BLK_F_GEOMETRY.
        c[0x14..0x18].copy_from_slice(&(SECTOR as u32).to_le_bytes());
        // topology, writeback, num_queues: their features are not offered; 0.
        c[0x24..0x28].copy_from_slice(&MAX_ZERO_SECTORS.to_le_bytes());
        c[0x28..0x2c].copy_from_slice(&MAX_ZERO_SEGS.to_le_bytes());
        c[0x2c..0x30].copy_from_slice(&DISCARD_ALIGNMENT.to_le_bytes());
        c[0x30..0x34].copy_from_slice(&MAX_ZERO_SECTORS.to_le_bytes());
        c[0x34..0x38].copy_from_slice(&MAX_ZERO_SEGS.to_le_bytes());
        c[0x38] = 1; // write_zeroes_may_unmap
        c
    }

    /// Take every newly available request from queue `q` (at cycle `now`).
    fn take(&mut self, now: u64, q: &QueueConfig) -> Result<bool, NeedsReset> {
        virtqueue::check_queue(&self.ram, q, QUEUE_MAX)?;
        let new = self.ring.available(&self.ram, q)?;
        if self.inflight.len() + new as usize > q.size as usize {
            return Err(NeedsReset);
        }
        for _ in 0..new {
            let Some(Chain {
                head,
                readable,
                writable,
            }) = self.ring.pop(&self.ram, q)?
            else {
                break;
            };
            let wtotal: u64 = writable.iter().map(|s| s.len as u64).sum();
            if wtotal == 0 {
                // Nowhere to put the status.
                return Err(NeedsReset);
            }
            let rtotal: u64 = readable.iter().map(|s| s.len as u64).sum();
            let header = if rtotal >= 16 {
                let mut h = [0u8; 16];
                gather(&self.ram, &readable, 0, &mut h)?;
                let t = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
                let sector = u64::from_le_bytes(h[8..16].try_into().unwrap_or_default());
                Some((t, sector))
            } else {
                None
            };
            let bytes = match header {
                Some((T_IN, _)) => wtotal - 1,
                Some((T_OUT, _)) => rtotal - 16,
                _ => 0,
            };
            let cost = self.clock.ns_to_cycles(self.timing.cost_ns(bytes));
            let start = self.busy_until.max(now);
            let done = start.saturating_add(cost);
            self.c.busy_cycles += done - start;
            self.busy_until = done;
            self.inflight.push_back(Pending {
                done,
                head,
                queue: *q,
                readable,
                writable,
                header,
            });
            self.c.requests += 1;
        }
        Ok(new > 0)
    }

    /// Serve `p`: move its data, return (status, bytes written to the guest
    /// before the status byte).
    fn serve(&mut self, p: &Pending) -> Result<(u8, u64), NeedsReset> {
        let wtotal: u64 = p.writable.iter().map(|s| s.len as u64).sum();
        let rtotal: u64 = p.readable.iter().map(|s| s.len as u64).sum();
        let Some((t, sector)) = p.header else {
            self.c.ioerrs += 1;
            return Ok((S_IOERR, 0));
        };
        let range_ok = |len: u64, disk: &Disk| {
            len.is_multiple_of(SECTOR)
                && sector
                    .checked_mul(SECTOR)
                    .and_then(|o| o.checked_add(len))
                    .is_some_and(|end| end <= disk.len())
        };
        match t {
            T_IN => {
                self.c.reads += 1;
                let len = wtotal - 1;
                if !range_ok(len, &self.disk) {
                    self.c.ioerrs += 1;
                    return Ok((S_IOERR, 0));
                }
                let mut buf = vec![0u8; CHUNK.min(len as usize)];
                let mut done = 0u64;
                while done < len {
                    let n = (len - done).min(CHUNK as u64) as usize;
                    if self
                        .disk
                        .read(sector * SECTOR + done, &mut buf[..n])
                        .is_err()
                    {
                        self.c.host_errors += 1;
                        self.c.ioerrs += 1;
                        return Ok((S_IOERR, done));
                    }
                    scatter(&self.ram, &p.writable, done, &buf[..n])?;
                    done += n as u64;
                }
                self.c.bytes_read += len;
                Ok((S_OK, len))
            }
            T_OUT => {
                self.c.writes += 1;
                let len = rtotal - 16;
                if self.read_only || !range_ok(len, &self.disk) {
                    self.c.ioerrs += 1;
                    return Ok((S_IOERR, 0));
                }
                let mut buf = vec![0u8; CHUNK.min(len as usize)];
                let mut done = 0u64;
                while done < len {
                    let n = (len - done).min(CHUNK as u64) as usize;
                    gather(&self.ram, &p.readable, 16 + done, &mut buf[..n])?;
                    if self.disk.write(sector * SECTOR + done, &buf[..n]).is_err() {
                        self.c.host_errors += 1;
                        self.c.ioerrs += 1;
                        return Ok((S_IOERR, 0));
                    }
                    done += n as u64;
                }
                self.c.bytes_written += len;
                Ok((S_OK, 0))
            }
            T_FLUSH => {
                self.c.flushes += 1;
                if self.disk.flush().is_err() {
                    self.c.host_errors += 1;
                    self.c.ioerrs += 1;
                    return Ok((S_IOERR, 0));
                }
                Ok((S_OK, 0))
            }
            T_GET_ID => {
                self.c.get_ids += 1;
                let n = (wtotal - 1).min(ID_BYTES as u64);
                let id = self.serial;
                scatter(&self.ram, &p.writable, 0, &id[..n as usize])?;
                Ok((S_OK, n))
            }
            T_DISCARD | T_WRITE_ZEROES => {
                let discard = t == T_DISCARD;
                if discard {
                    self.c.discards += 1;
                } else {
                    self.c.write_zeroes += 1;
                }
                let status = self.zero_ranges(p, rtotal - 16, discard)?;
                match status {
                    S_IOERR => self.c.ioerrs += 1,
                    S_UNSUPP => self.c.unsupported += 1,
                    _ => {}
                }
                Ok((status, 0))
            }
            _ => {
                self.c.unsupported += 1;
                Ok((S_UNSUPP, 0))
            }
        }
    }

    /// DISCARD / WRITE_ZEROES: `len` bytes of 16-byte ranges (sector, sector
    /// count, flags) after the header. Every range is checked before any is
    /// applied; both make the ranges read as zeros (a discard may, and here
    /// does).
    fn zero_ranges(&mut self, p: &Pending, len: u64, discard: bool) -> Result<u8, NeedsReset> {
        if self.read_only || len == 0 || !len.is_multiple_of(16) || len / 16 > MAX_ZERO_SEGS as u64
        {
            return Ok(S_IOERR);
        }
        let mut ranges = Vec::new();
        for k in 0..len / 16 {
            let mut r = [0u8; 16];
            gather(&self.ram, &p.readable, 16 + 16 * k, &mut r)?;
            let sector = u64::from_le_bytes(r[0..8].try_into().unwrap_or_default());
            let num = u32::from_le_bytes([r[8], r[9], r[10], r[11]]);
            let flags = u32::from_le_bytes([r[12], r[13], r[14], r[15]]);
            let allowed = if discard { 0 } else { WRITE_ZEROES_FLAG_UNMAP };
            if flags & !allowed != 0 {
                return Ok(S_UNSUPP);
            }
            let off = sector.checked_mul(SECTOR);
            let bytes = num as u64 * SECTOR;
            if num > MAX_ZERO_SECTORS
                || off
                    .and_then(|o| o.checked_add(bytes))
                    .is_none_or(|end| end > self.disk.len())
            {
                return Ok(S_IOERR);
            }
            ranges.push((sector * SECTOR, bytes));
        }
        for (off, bytes) in ranges {
            if self.disk.zero(off, bytes).is_err() {
                self.c.host_errors += 1;
                return Ok(S_IOERR);
            }
            self.c.bytes_zeroed += bytes;
        }
        Ok(S_OK)
    }

    /// Complete every request due at `now` on `queues[0]`.
    fn complete(&mut self, ctx: &mut DevCtx, queues: &[QueueConfig]) -> Result<u32, NeedsReset> {
        let mut completed = 0u32;
        let result = (|| {
            while self.inflight.front().is_some_and(|p| p.done <= ctx.now) {
                let Some(p) = self.inflight.pop_front() else {
                    break;
                };
                let q = queues.first().copied().unwrap_or_default();
                if q != p.queue || !q.ready {
                    // The queue was moved under an outstanding request.
                    return Err(NeedsReset);
                }
                let (status, written) = self.serve(&p)?;
                let wtotal: u64 = p.writable.iter().map(|s| s.len as u64).sum();
                scatter(&self.ram, &p.writable, wtotal - 1, &[status])?;
                let used_len = (written + 1).min(u32::MAX as u64) as u32;
                self.ring.push_used(&self.ram, &q, p.head, used_len)?;
                completed += 1;
            }
            Ok(())
        })();
        if result.is_err() {
            self.c.bad_queues += 1;
            self.inflight.clear();
        }
        if let Some(p) = self.inflight.front() {
            ctx.events.schedule(p.done, 0);
        }
        result?;
        if completed == 0 {
            return Ok(0);
        }
        let q = queues.first().copied().unwrap_or_default();
        if virtqueue::interrupt_suppressed(&self.ram, &q) {
            self.c.interrupts_suppressed += 1;
            Ok(0)
        } else {
            Ok(INT_USED_BUFFER)
        }
    }
}

impl VirtioBackend for VirtioBlk {
    crate::persistent!();
    fn device_id(&self) -> u32 {
        DEVICE_ID
    }
    fn device_features(&self) -> u64 {
        F_SIZE_MAX
            | F_SEG_MAX
            | F_BLK_SIZE
            | F_FLUSH
            | F_DISCARD
            | F_WRITE_ZEROES
            | if self.read_only { F_RO } else { 0 }
    }
    fn num_queues(&self) -> u16 {
        1
    }
    fn queue_max(&self) -> u16 {
        QUEUE_MAX
    }
    fn config_read(&mut self, offset: u64, size: u8) -> u64 {
        let c = self.config_bytes();
        let mut v = [0u8; 8];
        for (i, b) in v.iter_mut().enumerate().take(size.min(8) as usize) {
            if let Some(x) = offset.checked_add(i as u64).and_then(|o| c.get(o as usize)) {
                *b = *x;
            }
        }
        u64::from_le_bytes(v)
    }
    fn config_write(&mut self, _offset: u64, _size: u8, _val: u64) {
        // Every field is read-only (no VIRTIO_BLK_F_CONFIG_WCE).
    }
    fn activate(&mut self, driver_features: u64) {
        self.driver_features = driver_features;
    }
    fn notify(
        &mut self,
        ctx: &mut DevCtx,
        index: u16,
        queue: &QueueConfig,
    ) -> Result<u32, NeedsReset> {
        if index != 0 {
            return Ok(0);
        }
        let was_idle = self.inflight.is_empty();
        let taken = self.take(ctx.now, queue);
        // Requests taken before a bad one still complete.
        if was_idle {
            if let Some(p) = self.inflight.front() {
                ctx.events.schedule(p.done, 0);
            }
        }
        match taken {
            Ok(_) => Ok(0),
            Err(e) => {
                self.c.bad_queues += 1;
                Err(e)
            }
        }
    }
    fn event(
        &mut self,
        ctx: &mut DevCtx,
        _token: u64,
        queues: &[QueueConfig],
    ) -> Result<u32, NeedsReset> {
        self.complete(ctx, queues)
    }
    fn reset(&mut self) {
        self.driver_features = 0;
        self.ring = Ring::default();
        self.inflight.clear();
    }
    fn stats(&self, n: &str) -> Vec<Stat> {
        let c = &self.c;
        vec![
            Stat::new(
                format!("{n}.requests"),
                c.requests,
                "requests taken from the available ring",
            ),
            Stat::new(format!("{n}.reads"), c.reads, "IN requests served"),
            Stat::new(format!("{n}.writes"), c.writes, "OUT requests served"),
            Stat::new(format!("{n}.flushes"), c.flushes, "FLUSH requests served"),
            Stat::new(format!("{n}.get_ids"), c.get_ids, "GET_ID requests served"),
            Stat::new(
                format!("{n}.unsupported"),
                c.unsupported,
                "requests answered VIRTIO_BLK_S_UNSUPP",
            ),
            Stat::new(
                format!("{n}.ioerrs"),
                c.ioerrs,
                "requests answered VIRTIO_BLK_S_IOERR",
            ),
            Stat::new(
                format!("{n}.host_errors"),
                c.host_errors,
                "host I/O errors on the image file (answered IOERR)",
            ),
            Stat::new(
                format!("{n}.bytes_read"),
                c.bytes_read,
                "bytes the guest read",
            ),
            Stat::new(
                format!("{n}.bytes_written"),
                c.bytes_written,
                "bytes the guest wrote",
            ),
            Stat::new(
                format!("{n}.discards"),
                c.discards,
                "DISCARD requests served",
            ),
            Stat::new(
                format!("{n}.write_zeroes"),
                c.write_zeroes,
                "WRITE_ZEROES requests served",
            ),
            Stat::new(
                format!("{n}.bytes_zeroed"),
                c.bytes_zeroed,
                "bytes made zero by DISCARD / WRITE_ZEROES",
            ),
            Stat::new(
                format!("{n}.bad_queues"),
                c.bad_queues,
                "malformed queues or chains (device set DEVICE_NEEDS_RESET)",
            ),
            Stat::new(
                format!("{n}.irqs_suppressed"),
                c.interrupts_suppressed,
                "completions without an interrupt (VIRTQ_AVAIL_F_NO_INTERRUPT)",
            ),
            Stat::new(
                format!("{n}.busy_cycles"),
                c.busy_cycles,
                "cycles the device spent serving requests",
            ),
            Stat::new(
                format!("{n}.overlay_blocks"),
                self.disk.overlay_blocks(),
                "4 KiB blocks in the copy-on-write overlay",
            ),
            Stat::new(
                format!("{n}.overlay_fnv1a"),
                self.disk.overlay_fnv1a(),
                "FNV-1a 64 of the overlay (block index, then bytes)",
            ),
        ]
    }
}

/// What a `[board.NAME] kind = "virtio-blk"` table asks for, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlkConfig {
    pub disk: DiskSpec,
    pub read_only: bool,
    pub timing: Timing,
    pub serial: String,
}

impl BlkConfig {
    /// Read and check `cfg`'s keys, and open the image once (so a missing,
    /// unreadable or mis-sized file is found when the description is loaded).
    pub fn parse(cfg: &DeviceConfig) -> Result<BlkConfig, ParamError> {
        let mut p = Params::new(cfg);
        let disk = DiskSpec::parse(&mut p)?;
        let write_through = disk.writes_through();
        let read_only = p.bool("read-only", false)?;
        let latency_ns = p.int("latency-ns", DEFAULT_LATENCY_NS as i64, 0, 1_000_000_000)? as u64;
        let bandwidth_mibps = p.int(
            "bandwidth-mibps",
            DEFAULT_BANDWIDTH_MIBPS as i64,
            1,
            1 << 20,
        )? as u64;
        let serial = p.string("serial")?.unwrap_or_else(|| cfg.name.clone());
        p.finish()?;
        if serial.len() > ID_BYTES {
            return Err(ParamError {
                key: "serial".into(),
                message: format!("`{serial}` is longer than {ID_BYTES} bytes"),
            });
        }
        if write_through && read_only {
            return Err(ParamError {
                key: "write-through".into(),
                message: "cannot be true on a `read-only` disk".into(),
            });
        }
        Ok(BlkConfig {
            disk,
            read_only,
            timing: Timing {
                latency_ns,
                bandwidth_mibps,
            },
            serial,
        })
    }

    /// The device: a virtio-mmio transport anywhere in the platform window
    /// with one interrupt line, this disk behind it.
    pub fn plug(self, name: &str) -> Result<Plug, ParamError> {
        let disk = self.disk.open().map_err(|message| ParamError {
            key: self.disk.key().into(),
            message,
        })?;
        let want = Want::new(name).mmio(virtio_mmio::SIZE).irqs(1);
        let name = name.to_string();
        Ok(Plug::new(want, move |a: &mut Attach| {
            let blk = VirtioBlk::new(
                disk,
                self.read_only,
                &self.serial,
                self.timing,
                a.ram.clone(),
                a.clock,
            );
            Box::new(VirtioMmio::new(0, a.irq(0), Some(Box::new(blk))).named(name))
        }))
    }
}

fn plug(cfg: &DeviceConfig) -> Result<Plug, ParamError> {
    BlkConfig::parse(cfg)?.plug(&cfg.name)
}

#[cfg(test)]
mod tests;
