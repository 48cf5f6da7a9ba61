//! virtio-net (virtio device ID 1) behind the virtio-mmio transport, with
//! the deterministic network peer (`hs_peer`) at the far end of its wire.
//!
//! **Features.** `VERSION_1` (by the transport), `MAC`, `STATUS` (the link
//! is always up). No checksum or segmentation offload, no mergeable receive
//! buffers, no control queue, one queue pair: queue 0 receives, queue 1
//! transmits. Every buffer starts with the 12-byte `virtio_net_hdr_v1`
//! (all zero on receive: no offload; ignored on transmit).
//!
//! **Transmit.** A kick takes every available chain (checked by
//! [`crate::virtqueue`]: a malformed queue or chain sets
//! `DEVICE_NEEDS_RESET`); the frame after the header goes onto the wire one
//! after another at the link rate (`link-mbps`), reaches the peer when its
//! last bit has left, and its buffer is then returned used. A frame shorter
//! than an Ethernet header or longer than 1514 bytes is counted and
//! dropped (the buffer is still returned), as a NIC drops a runt.
//!
//! **Receive.** Frames from the peer arrive at their wire times; each goes
//! into the next available receive chain (header, then the frame). With no
//! receive buffer posted, up to [`RX_BACKLOG`] frames wait; more are
//! dropped and counted, as a NIC's FIFO overflows. A chain too small for a
//! frame gets the part that fits and the frame counts as truncated.
//!
//! Configuration (`[board.NAME]`): `kind = "virtio-net"` and the wire keys
//! of [`WireConfig`] (`link-mbps` defaults to 1000 here).

use std::collections::VecDeque;

use hs_bus::GuestRam;

use crate::ether::{wire_cycles, EthernetLink, WireConfig};
use crate::resources::{Attach, DeviceConfig, Kind, ParamError, Params, Plug, Want};
use crate::virtio_mmio::{
    self, NeedsReset, QueueConfig, VirtioBackend, VirtioMmio, INT_USED_BUFFER,
};
use crate::virtqueue::{self, gather, scatter, Chain, Ring};
use crate::{DevCtx, Stat};

pub const KIND: Kind = Kind {
    name: "virtio-net",
    plug,
};

pub const DEVICE_ID: u32 = 1;
pub const F_MAC: u64 = 1 << 5;
pub const F_STATUS: u64 = 1 << 16;
/// `status` field: the link is up.
pub const S_LINK_UP: u16 = 1;
/// Bytes of `virtio_net_hdr_v1` (VERSION_1 without mergeable buffers).
pub const HDR_LEN: usize = 12;
pub const QUEUE_MAX: u16 = 256;
pub const RX: u16 = 0;
pub const TX: u16 = 1;
/// Frames held while the driver has no receive buffer posted.
pub const RX_BACKLOG: usize = 256;
/// Largest frame without FCS (1500 bytes of payload).
pub const MAX_FRAME: usize = 1514;

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Counters {
    tx_frames: u64,
    tx_bytes: u64,
    tx_dropped: u64,
    rx_frames: u64,
    rx_bytes: u64,
    rx_dropped: u64,
    rx_truncated: u64,
    rx_waited: u64,
    bad_queues: u64,
    interrupts_suppressed: u64,
}

/// A frame on its way out: its buffer returns when its last bit has left.
#[derive(serde::Serialize, serde::Deserialize)]
struct TxPending {
    done: u64,
    head: u16,
    frame: Option<Vec<u8>>,
}

#[derive(serde::Serialize, serde::Deserialize)]
pub struct VirtioNet {
    #[serde(skip)]
    ram: GuestRam,
    mac: [u8; 6],
    /// Saved beside the device, in its own section.
    #[serde(skip, default = "crate::ether::no_link")]
    link: Box<dyn EthernetLink>,
    /// Cycles per byte-time of the link, as a rate (bits per second).
    link_bps: u64,
    core_hz: u64,
    rx: Ring,
    tx: Ring,
    tx_pending: VecDeque<TxPending>,
    /// The wire is busy sending until this cycle.
    tx_free: u64,
    backlog: VecDeque<Vec<u8>>,
    active: bool,
    c: Counters,
}

/// The device's rings, frames in flight and backlog, and the state of
/// what is on its wire beside them.
impl crate::Persist for VirtioNet {
    fn save(&self) -> Result<Vec<u8>, String> {
        let link = crate::ether::save_link(self.link.as_ref())?;
        hs_snapshot::state::encode(&(self, link))
    }
    fn restore(&mut self, data: &[u8]) -> Result<(), String> {
        let (mut fresh, link): (VirtioNet, String) = hs_snapshot::state::decode(data)?;
        crate::same(
            "virtio-net device (MAC, link bit/s, core Hz)",
            &(fresh.mac, fresh.link_bps, fresh.core_hz),
            &(self.mac, self.link_bps, self.core_hz),
        )?;
        crate::ether::restore_link(self.link.as_mut(), &link)?;
        std::mem::swap(&mut fresh.ram, &mut self.ram);
        std::mem::swap(&mut fresh.link, &mut self.link);
        *self = fresh;
        Ok(())
    }
}

impl VirtioNet {
    pub fn new(
        ram: GuestRam,
        mac: [u8; 6],
        link: Box<dyn EthernetLink>,
        link_bps: u64,
        core_hz: u64,
    ) -> Self {
        VirtioNet {
            ram,
            mac,
            link,
            link_bps,
            core_hz,
            rx: Ring::default(),
            tx: Ring::default(),
            tx_pending: VecDeque::new(),
            tx_free: 0,
            backlog: VecDeque::new(),
            active: false,
            c: Counters::default(),
        }
    }

    fn wire_cycles(&self, len: usize) -> u64 {
        wire_cycles(len, self.link_bps, self.core_hz)
    }

    fn queue(queues: &[QueueConfig], i: u16) -> QueueConfig {
        queues.get(i as usize).copied().unwrap_or_default()
    }

    /// Take the transmit queue's new chains onto the wire.
    fn take_tx(&mut self, now: u64, q: &QueueConfig) -> Result<(), NeedsReset> {
        virtqueue::check_queue(&self.ram, q, QUEUE_MAX)?;
        while let Some(Chain { head, readable, .. }) = self.tx.pop(&self.ram, q)? {
            let total: u64 = readable.iter().map(|s| s.len as u64).sum();
            let len = total.saturating_sub(HDR_LEN as u64) as usize;
            let frame = if total < HDR_LEN as u64 || !(14..=MAX_FRAME).contains(&len) {
                self.c.tx_dropped += 1;
                None
            } else {
                let mut f = vec![0u8; len];
                gather(&self.ram, &readable, HDR_LEN as u64, &mut f)?;
                Some(f)
            };
            let start = self.tx_free.max(now);
            let done = start + frame.as_ref().map_or(0, |f| self.wire_cycles(f.len()));
            self.tx_free = done;
            self.tx_pending.push_back(TxPending { done, head, frame });
        }
        Ok(())
    }

    /// Everything due by `now`: sent frames' buffers back, arrived frames
    /// into receive buffers. Returns interrupt status bits.
    fn run(&mut self, now: u64, queues: &[QueueConfig]) -> Result<u32, NeedsReset> {
        let mut used = [false; 2];
        let txq = Self::queue(queues, TX);
        while self.tx_pending.front().is_some_and(|p| p.done <= now) {
            let Some(p) = self.tx_pending.pop_front() else {
                break;
            };
            if let Some(f) = p.frame {
                self.c.tx_frames += 1;
                self.c.tx_bytes += f.len() as u64;
                self.link.send(f, p.done);
            }
            if !txq.ready {
                return Err(NeedsReset);
            }
            self.tx.push_used(&self.ram, &txq, p.head, 0)?;
            used[TX as usize] = true;
        }
        while let Some(f) = self.link.recv(now) {
            if self.backlog.len() >= RX_BACKLOG {
                self.c.rx_dropped += 1;
            } else {
                self.backlog.push_back(f);
            }
        }
        let rxq = Self::queue(queues, RX);
        if rxq.ready && !self.backlog.is_empty() {
            virtqueue::check_queue(&self.ram, &rxq, QUEUE_MAX)?;
            while !self.backlog.is_empty() {
                let Some(chain) = self.rx.pop(&self.ram, &rxq)? else {
                    self.c.rx_waited += 1;
                    break;
                };
                let f = self.backlog.pop_front().unwrap_or_default();
                let room = chain.writable_len() as usize;
                let mut buf = vec![0u8; HDR_LEN];
                buf[10..12].copy_from_slice(&1u16.to_le_bytes()); // num_buffers
                buf.extend_from_slice(&f);
                if buf.len() > room {
                    self.c.rx_truncated += 1;
                    buf.truncate(room);
                }
                scatter(&self.ram, &chain.writable, 0, &buf)?;
                self.rx
                    .push_used(&self.ram, &rxq, chain.head, buf.len() as u32)?;
                self.c.rx_frames += 1;
                self.c.rx_bytes += f.len() as u64;
                used[RX as usize] = true;
            }
        }
        let mut irq = false;
        for (i, q) in [rxq, txq].iter().enumerate() {
            if used[i] {
                if virtqueue::interrupt_suppressed(&self.ram, q) {
                    self.c.interrupts_suppressed += 1;
                } else {
                    irq = true;
                }
            }
        }
        Ok(if irq { INT_USED_BUFFER } else { 0 })
    }

    fn next_event(&self) -> Option<u64> {
        [
            self.tx_pending.front().map(|p| p.done),
            self.link.next_event(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn schedule(&self, ctx: &mut DevCtx) {
        if let Some(at) = self.next_event() {
            ctx.events.schedule(at.max(ctx.now + 1), 0);
        }
    }

    fn fail(&mut self) -> NeedsReset {
        self.c.bad_queues += 1;
        self.tx_pending.clear();
        NeedsReset
    }
}

impl VirtioBackend for VirtioNet {
    /// Only with a wire that has save/restore (the peer has).
    fn state(&self) -> Option<&dyn crate::Persist> {
        self.link.state().map(|_| self as &dyn crate::Persist)
    }
    fn state_mut(&mut self) -> Option<&mut dyn crate::Persist> {
        self.link.state()?;
        Some(self)
    }
    fn device_id(&self) -> u32 {
        DEVICE_ID
    }
    fn device_features(&self) -> u64 {
        F_MAC | F_STATUS
    }
    fn num_queues(&self) -> u16 {
        2
    }
    fn queue_max(&self) -> u16 {
        QUEUE_MAX
    }
    fn config_read(&mut self, offset: u64, size: u8) -> u64 {
        let mut c = [0u8; 8];
        c[..6].copy_from_slice(&self.mac);
        c[6..8].copy_from_slice(&S_LINK_UP.to_le_bytes());
        let mut v = [0u8; 8];
        for (i, b) in v.iter_mut().enumerate().take(size.min(8) as usize) {
            if let Some(x) = offset.checked_add(i as u64).and_then(|o| c.get(o as usize)) {
                *b = *x;
            }
        }
        u64::from_le_bytes(v)
    }
    fn config_write(&mut self, _offset: u64, _size: u8, _val: u64) {
        // The MAC is read-only without VIRTIO_NET_F_CTRL_MAC_ADDR.
    }
    fn activate(&mut self, _driver_features: u64) {
        self.active = true;
    }
    fn notify(
        &mut self,
        ctx: &mut DevCtx,
        index: u16,
        queue: &QueueConfig,
    ) -> Result<u32, NeedsReset> {
        if index == TX && self.take_tx(ctx.now, queue).is_err() {
            return Err(self.fail());
        }
        // A new receive buffer may take a waiting frame at the next event.
        if index == RX && !self.backlog.is_empty() {
            ctx.events.schedule(ctx.now + 1, 0);
        }
        self.schedule(ctx);
        Ok(0)
    }
    fn event(
        &mut self,
        ctx: &mut DevCtx,
        _token: u64,
        queues: &[QueueConfig],
    ) -> Result<u32, NeedsReset> {
        let r = if self.active {
            self.run(ctx.now, queues)
        } else {
            // Before DRIVER_OK nothing is delivered; the peer still runs.
            while self.link.recv(ctx.now).is_some() {
                self.c.rx_dropped += 1;
            }
            Ok(0)
        };
        let r = r.map_err(|_| self.fail());
        self.schedule(ctx);
        r
    }
    fn reset(&mut self) {
        self.rx = Ring::default();
        self.tx = Ring::default();
        self.tx_pending.clear();
        self.backlog.clear();
        self.active = false;
    }
    fn stats(&self, n: &str) -> Vec<Stat> {
        let c = &self.c;
        let mut v = vec![
            Stat::new(
                format!("{n}.tx_frames"),
                c.tx_frames,
                "frames sent onto the wire",
            ),
            Stat::new(
                format!("{n}.tx_bytes"),
                c.tx_bytes,
                "bytes of those frames (no header, no FCS)",
            ),
            Stat::new(
                format!("{n}.tx_dropped"),
                c.tx_dropped,
                "transmit buffers that held no valid frame",
            ),
            Stat::new(
                format!("{n}.rx_frames"),
                c.rx_frames,
                "frames put into receive buffers",
            ),
            Stat::new(format!("{n}.rx_bytes"), c.rx_bytes, "bytes of those frames"),
            Stat::new(
                format!("{n}.rx_dropped"),
                c.rx_dropped,
                "frames dropped: backlog full or driver not ready",
            ),
            Stat::new(
                format!("{n}.rx_truncated"),
                c.rx_truncated,
                "frames cut to a receive chain too small",
            ),
            Stat::new(
                format!("{n}.rx_waited"),
                c.rx_waited,
                "times frames waited for a receive buffer",
            ),
            Stat::new(
                format!("{n}.bad_queues"),
                c.bad_queues,
                "malformed queues (DEVICE_NEEDS_RESET)",
            ),
            Stat::new(
                format!("{n}.interrupts_suppressed"),
                c.interrupts_suppressed,
                "completions without an interrupt (VIRTQ_AVAIL_F_NO_INTERRUPT)",
            ),
        ];
        v.extend(self.link.stats(n));
        v
    }
}

fn plug(cfg: &DeviceConfig) -> Result<Plug, ParamError> {
    let mut p = Params::new(cfg);
    let c = WireConfig::parse(&mut p, 1000)?;
    p.finish()?;
    let name = cfg.name.clone();
    let want = Want::new(name.clone()).mmio(virtio_mmio::SIZE).irqs(1);
    Ok(Plug::new(want, move |a: &mut Attach| {
        let hz = a.clock.hz;
        let net = VirtioNet::new(a.ram.clone(), c.mac, Box::new(c.peer(hz)), c.link_bps(), hz);
        Box::new(VirtioMmio::new(0, a.irq(0), Some(Box::new(net))).named(name))
    }))
}
