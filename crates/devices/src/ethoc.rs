//! The OpenCores 10/100 Ethernet MAC (`opencores,ethoc`), with its buffer
//! descriptors and packet buffers in the device's own memory, a generic PHY
//! on its MDIO bus ([`crate::mii`]) and the deterministic peer at the far end
//! of its wire.
//!
//! Why this NIC: Linux's stock `ethoc` driver binds to it from the device
//! tree alone (built into the `custom` kernel; Debian's 6.12 does not build
//! it), QEMU models it too (`opencores_eth`), and with a second memory
//! resource every descriptor and packet byte lives in the device's window —
//! so a user-space driver that maps the window through UIO owns the NIC
//! without knowing a single physical address. Packet data crosses as
//! uncached device accesses, as on the seed's boards.
//!
//! **Window.** Registers at 0x000–0x054, 128 buffer descriptors (status,
//! address) at 0x400–0x7ff, and `buffer-kib` of packet memory at
//! [`BUF_OFFSET`]. The device tree gives both as `reg` entries; Linux's
//! driver splits the packet memory into 1536-byte buffers, at most 128.
//!
//! **Transmit.** Descriptors `0..TX_BD_NUM` are sent in order from the
//! first after TXEN is set: a descriptor marked READY goes onto the wire at
//! the link rate (one frame at a time); when its last bit has left, READY is
//! cleared and TXF is raised if the descriptor asks (IRQ). A descriptor whose
//! length is not a frame (under 14 bytes, over PACKETLEN's maximum) or whose
//! address is neither packet memory nor RAM ends with underrun (UR) and TXE.
//!
//! **Receive.** Descriptors `TX_BD_NUM..128` take frames in order from the
//! first after RXEN is set. A frame that passes the address filter
//! (own address, broadcast unless BRO, multicast through the hash, anything
//! under PRO) goes into the next EMPTY descriptor with its FCS, EMPTY is
//! cleared and RXF raised; with no EMPTY descriptor the frame is lost and
//! BUSY is raised, as the real MAC does — it has no deeper FIFO.
//!
//! **Interrupt.** INT_SOURCE records events whether masked or not (writes
//! of ones clear them); the line is high while `INT_SOURCE & INT_MASK`.
//!
//! ```toml
//! [board.eth0]
//! kind = "ethoc"
//! link-mbps = 100          # the MAC is 10/100; the PHY reports 100 full duplex
//! buffer-kib = 96          # packet memory: 64 buffers, 32 transmit + 32 receive
//! driver = "kernel"        # or "uio": compatible "generic-uio" (boot with
//!                          # uio_pdrv_genirq.of_id=generic-uio), for a user-space driver
//! # and the wire keys of ether::WireConfig: mac, peer-latency-ns, peer-tcp-*
//! ```

use std::collections::VecDeque;

use crate::ether::{wire_cycles, EthernetLink, WireConfig};
use crate::fdt::{FdtCtx, FdtNode, Placement};
use crate::mii::Phy;
use crate::resources::{Attach, DeviceConfig, Kind, ParamError, Params, Plug, Want};
use crate::{BadAccess, DevCtx, Device, Grant, IrqLine, Stat, WriteEffect};

pub const KIND: Kind = Kind {
    name: "ethoc",
    plug,
};

pub const MODER: u64 = 0x00;
pub const INT_SOURCE: u64 = 0x04;
pub const INT_MASK: u64 = 0x08;
pub const IPGT: u64 = 0x0c;
pub const IPGR1: u64 = 0x10;
pub const IPGR2: u64 = 0x14;
pub const PACKETLEN: u64 = 0x18;
pub const COLLCONF: u64 = 0x1c;
pub const TX_BD_NUM: u64 = 0x20;
pub const CTRLMODER: u64 = 0x24;
pub const MIIMODER: u64 = 0x28;
pub const MIICOMMAND: u64 = 0x2c;
pub const MIIADDRESS: u64 = 0x30;
pub const MIITX_DATA: u64 = 0x34;
pub const MIIRX_DATA: u64 = 0x38;
pub const MIISTATUS: u64 = 0x3c;
pub const MAC_ADDR0: u64 = 0x40;
pub const MAC_ADDR1: u64 = 0x44;
pub const ETH_HASH0: u64 = 0x48;
pub const ETH_HASH1: u64 = 0x4c;
pub const ETH_TXCTRL: u64 = 0x50;
/// Registers end here; descriptors start at [`BD_BASE`].
pub const REGS_END: u64 = 0x54;
pub const BD_BASE: u64 = 0x400;
pub const NUM_BD: usize = 128;
/// Register and descriptor window (the first `reg` entry).
pub const REGS_SIZE: u64 = 0x800;
/// Packet memory's offset in the device's window (the second `reg` entry).
pub const BUF_OFFSET: u64 = 0x1_0000;

pub const MODER_RXEN: u32 = 1 << 0;
pub const MODER_TXEN: u32 = 1 << 1;
pub const MODER_BRO: u32 = 1 << 3;
pub const MODER_PRO: u32 = 1 << 5;
pub const MODER_LOOP: u32 = 1 << 7;
pub const MODER_HUGE: u32 = 1 << 14;
/// MODER after reset: padding and CRC generation on.
pub const MODER_RESET_VALUE: u32 = 0xa000;

pub const INT_TXF: u32 = 1 << 0;
pub const INT_TXE: u32 = 1 << 1;
pub const INT_RXF: u32 = 1 << 2;
pub const INT_RXE: u32 = 1 << 3;
pub const INT_BUSY: u32 = 1 << 4;
pub const INT_ALL: u32 = 0x7f;

pub const TX_BD_UR: u32 = 1 << 8;
pub const TX_BD_PAD: u32 = 1 << 12;
pub const TX_BD_WRAP: u32 = 1 << 13;
pub const TX_BD_IRQ: u32 = 1 << 14;
pub const TX_BD_READY: u32 = 1 << 15;
/// Status bits the MAC reports on a sent frame (cleared when it starts).
const TX_BD_STATS: u32 = 0x01ff;

pub const RX_BD_TL: u32 = 1 << 3;
pub const RX_BD_OR: u32 = 1 << 6;
pub const RX_BD_WRAP: u32 = 1 << 13;
pub const RX_BD_IRQ: u32 = 1 << 14;
pub const RX_BD_EMPTY: u32 = 1 << 15;
const RX_BD_STATS: u32 = 0x01ff;

pub const MIICOMMAND_READ: u32 = 1 << 1;
pub const MIICOMMAND_WRITE: u32 = 1 << 2;

/// MDIO address of the PHY.
pub const PHY_ADDRESS: u8 = 1;
/// The smallest frame on the wire without FCS.
const MIN_FRAME: usize = 60;

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Counters {
    tx_frames: u64,
    tx_bytes: u64,
    tx_errors: u64,
    rx_frames: u64,
    rx_bytes: u64,
    rx_busy: u64,
    rx_filtered: u64,
    rx_disabled: u64,
    rx_errors: u64,
    mdio: u64,
}

/// The frame on the wire now: its descriptor finishes when its last bit
/// has left.
#[derive(serde::Serialize, serde::Deserialize)]
struct Sending {
    bd: usize,
    done: u64,
    /// None: the descriptor did not hold a frame (it ends with underrun).
    frame: Option<Vec<u8>>,
}

/// A validated `[board.NAME] kind = "ethoc"` table.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EthocConfig {
    pub wire: WireConfig,
    pub buffer_bytes: u64,
    /// Bound by a user-space driver through UIO rather than `ethoc`.
    pub uio: bool,
}

impl EthocConfig {
    pub fn parse(cfg: &DeviceConfig) -> Result<Self, ParamError> {
        let mut p = Params::new(cfg);
        let wire = WireConfig::parse(&mut p, 100)?;
        // At least 4 buffers (the driver refuses fewer), at most the 128
        // the descriptors can address.
        let kib = p.int("buffer-kib", 96, 6, 192)? as u64;
        let uio = match p.string("driver")?.as_deref() {
            None | Some("kernel") => false,
            Some("uio") => true,
            Some(other) => {
                return Err(ParamError {
                    key: "driver".into(),
                    message: format!(
                        "`{other}` is not a driver choice (\"kernel\": Linux's ethoc, \"uio\": uio_pdrv_genirq)"
                    ),
                })
            }
        };
        p.finish()?;
        Ok(EthocConfig {
            wire,
            buffer_bytes: kib * 1024,
            uio,
        })
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
pub struct Ethoc {
    name: String,
    cfg: EthocConfig,
    /// Physical address of the window (descriptors hold physical addresses).
    base: u64,
    #[serde(skip)]
    irq: Box<dyn IrqLine>,
    regs: [u32; (REGS_END / 4) as usize],
    /// (status, address) of each descriptor.
    #[serde(with = "hs_snapshot::state::array")]
    bd: [[u32; 2]; NUM_BD],
    buf: Vec<u8>,
    phy: Phy,
    /// Saved beside the MAC, in its own section.
    #[serde(skip, default = "crate::ether::no_link")]
    link: Box<dyn EthernetLink>,
    core_hz: u64,
    tx_next: usize,
    rx_next: usize,
    sending: Option<Sending>,
    /// Frames to take in at this event: from the wire, or looped back.
    arrived: VecDeque<Vec<u8>>,
    c: Counters,
}

/// The MAC's registers, descriptors, packet memory and frame in flight,
/// and the state of what is on its wire beside them.
impl crate::Persist for Ethoc {
    fn save(&self) -> Result<Vec<u8>, String> {
        let link = crate::ether::save_link(self.link.as_ref())?;
        hs_snapshot::state::encode(&(self, link))
    }
    fn restore(&mut self, data: &[u8]) -> Result<(), String> {
        let (mut fresh, link): (Ethoc, String) = hs_snapshot::state::decode(data)?;
        crate::same(
            "OpenCores Ethernet MAC",
            &(&fresh.name, &fresh.cfg, fresh.base, fresh.core_hz),
            &(&self.name, &self.cfg, self.base, self.core_hz),
        )?;
        if fresh.buf.len() != self.buf.len()
            || fresh.tx_next >= NUM_BD
            || fresh.rx_next >= NUM_BD
            || fresh.sending.as_ref().is_some_and(|s| s.bd >= NUM_BD)
        {
            return Err(format!(
                "the snapshot's `{}` has {} bytes of packet memory (this one {}) or a descriptor index past {NUM_BD}",
                fresh.name,
                fresh.buf.len(),
                self.buf.len()
            ));
        }
        crate::ether::restore_link(self.link.as_mut(), &link)?;
        std::mem::swap(&mut fresh.irq, &mut self.irq);
        std::mem::swap(&mut fresh.link, &mut self.link);
        *self = fresh;
        Ok(())
    }
}

impl Ethoc {
    pub fn new(
        name: &str,
        cfg: EthocConfig,
        base: u64,
        irq: Box<dyn IrqLine>,
        link: Box<dyn EthernetLink>,
        core_hz: u64,
    ) -> Self {
        let buf = vec![0; cfg.buffer_bytes as usize];
        let mut e = Ethoc {
            name: name.to_string(),
            cfg,
            base,
            irq,
            regs: [0; (REGS_END / 4) as usize],
            bd: [[0; 2]; NUM_BD],
            buf,
            phy: Phy::new(PHY_ADDRESS),
            link,
            core_hz,
            tx_next: 0,
            rx_next: 0,
            sending: None,
            arrived: VecDeque::new(),
            c: Counters::default(),
        };
        e.reset_registers();
        e
    }

    /// Register values after reset (the OpenCores specification's), with
    /// the configured address already in MAC_ADDR0/1 as a boot loader
    /// would leave it.
    fn reset_registers(&mut self) {
        self.regs = [0; (REGS_END / 4) as usize];
        let m = self.cfg.wire.mac;
        self.set(MODER, MODER_RESET_VALUE);
        self.set(IPGT, 0x12);
        self.set(IPGR1, 0x0c);
        self.set(IPGR2, 0x12);
        self.set(PACKETLEN, 0x0040_0600);
        self.set(COLLCONF, 0x000f_003f);
        self.set(TX_BD_NUM, 0x40);
        self.set(MIIMODER, 0x64);
        self.set(MAC_ADDR0, u32::from_be_bytes([m[2], m[3], m[4], m[5]]));
        self.set(MAC_ADDR1, u32::from(m[0]) << 8 | u32::from(m[1]));
    }

    fn reg(&self, off: u64) -> u32 {
        self.regs[(off / 4) as usize]
    }
    fn set(&mut self, off: u64, v: u32) {
        self.regs[(off / 4) as usize] = v;
    }

    fn tx_count(&self) -> usize {
        (self.reg(TX_BD_NUM) as usize).min(NUM_BD)
    }

    fn mac(&self) -> [u8; 6] {
        let a0 = self.reg(MAC_ADDR0).to_be_bytes();
        let a1 = self.reg(MAC_ADDR1);
        [(a1 >> 8) as u8, a1 as u8, a0[0], a0[1], a0[2], a0[3]]
    }

    fn update_irq(&self) {
        self.irq
            .set_level(self.reg(INT_SOURCE) & self.reg(INT_MASK) & INT_ALL != 0);
    }

    fn raise(&mut self, bits: u32) {
        let v = self.reg(INT_SOURCE) | bits;
        self.set(INT_SOURCE, v);
    }

    /// Where a descriptor's physical address range lies in packet memory.
    fn in_buffer(&self, addr: u32, len: usize) -> Option<usize> {
        let start = (addr as u64).checked_sub(self.base + BUF_OFFSET)?;
        (start + len as u64 <= self.buf.len() as u64).then_some(start as usize)
    }

    /// Read a frame from packet memory or, through the bus, from RAM.
    fn fetch(&self, ctx: &mut DevCtx, addr: u32, len: usize) -> Option<Vec<u8>> {
        if let Some(at) = self.in_buffer(addr, len) {
            return Some(self.buf[at..at + len].to_vec());
        }
        let mut v = vec![0; len];
        let m = ctx.master.as_deref_mut()?;
        m.dma_read(addr as u64, &mut v, ctx.now).ok().map(|_| v)
    }

    fn store(&mut self, ctx: &mut DevCtx, addr: u32, data: &[u8]) -> bool {
        if let Some(at) = self.in_buffer(addr, data.len()) {
            self.buf[at..at + data.len()].copy_from_slice(data);
            return true;
        }
        match ctx.master.as_deref_mut() {
            Some(m) => m.dma_write(addr as u64, data, ctx.now).is_ok(),
            None => false,
        }
    }

    /// Put the next READY transmit descriptor on the wire if the MAC is idle.
    fn start_tx(&mut self, ctx: &mut DevCtx) {
        if self.sending.is_some() || self.reg(MODER) & MODER_TXEN == 0 {
            return;
        }
        let i = self.tx_next;
        if i >= self.tx_count() {
            return;
        }
        let stat = self.bd[i][0];
        if stat & TX_BD_READY == 0 {
            return;
        }
        let len = (stat >> 16) as usize;
        let max = if self.reg(MODER) & MODER_HUGE != 0 {
            0xffff
        } else {
            (self.reg(PACKETLEN) & 0xffff) as usize
        };
        // The FCS the MAC appends counts against PACKETLEN's maximum.
        let frame = if len < 14 || len + 4 > max {
            None
        } else {
            self.fetch(ctx, self.bd[i][1], len).map(|mut f| {
                if stat & TX_BD_PAD != 0 && f.len() < MIN_FRAME {
                    f.resize(MIN_FRAME, 0);
                }
                f
            })
        };
        let wire = frame.as_ref().map_or(0, |f| {
            wire_cycles(f.len(), self.cfg.wire.link_bps(), self.core_hz)
        });
        self.sending = Some(Sending {
            bd: i,
            done: ctx.now + wire.max(1),
            frame,
        });
    }

    /// The frame on the wire has left by `now`: finish its descriptor.
    fn finish_tx(&mut self, now: u64) -> bool {
        let Some(s) = self.sending.take_if(|s| s.done <= now) else {
            return false;
        };
        let mut stat = self.bd[s.bd][0] & !(TX_BD_READY | TX_BD_STATS);
        let ok = s.frame.is_some();
        if let Some(f) = s.frame {
            self.c.tx_frames += 1;
            self.c.tx_bytes += f.len() as u64;
            if self.reg(MODER) & MODER_LOOP != 0 {
                self.arrived.push_back(f);
            } else {
                self.link.send(f, s.done);
            }
        } else {
            self.c.tx_errors += 1;
            stat |= TX_BD_UR;
        }
        self.bd[s.bd][0] = stat;
        if stat & TX_BD_IRQ != 0 {
            self.raise(if ok { INT_TXF } else { INT_TXE });
        }
        let wrap = stat & TX_BD_WRAP != 0 || s.bd + 1 >= self.tx_count();
        self.tx_next = if wrap { 0 } else { s.bd + 1 };
        true
    }

    fn accepts(&self, f: &[u8]) -> bool {
        let moder = self.reg(MODER);
        if moder & MODER_PRO != 0 {
            return true;
        }
        let dst = &f[..6];
        if dst == [0xff; 6] {
            return moder & MODER_BRO == 0;
        }
        if dst[0] & 1 != 0 {
            let bit = (crc32(dst) >> 26) & 0x3f;
            let hash = if bit >= 32 {
                self.reg(ETH_HASH1)
            } else {
                self.reg(ETH_HASH0)
            };
            return hash & (1 << (bit & 31)) != 0;
        }
        dst == self.mac()
    }

    /// A frame has arrived whole: into the next empty receive descriptor.
    fn receive(&mut self, ctx: &mut DevCtx, mut f: Vec<u8>) {
        if self.reg(MODER) & MODER_RXEN == 0 {
            self.c.rx_disabled += 1;
            return;
        }
        // The sender's MAC padded it on the wire.
        if f.len() < MIN_FRAME {
            f.resize(MIN_FRAME, 0);
        }
        if !self.accepts(&f) {
            self.c.rx_filtered += 1;
            return;
        }
        let first = self.tx_count();
        let i = self.rx_next.max(first);
        if i >= NUM_BD || self.bd[i][0] & RX_BD_EMPTY == 0 {
            self.c.rx_busy += 1;
            self.raise(INT_BUSY);
            return;
        }
        let fcs = crc32(&f).to_le_bytes();
        let total = f.len() + 4;
        f.extend_from_slice(&fcs);
        let mut stat = self.bd[i][0] & !(RX_BD_EMPTY | RX_BD_STATS) & 0xffff;
        let max = (self.reg(PACKETLEN) & 0xffff) as usize;
        if self.reg(MODER) & MODER_HUGE == 0 && total > max {
            stat |= RX_BD_TL;
            f.truncate(max);
        }
        let addr = self.bd[i][1];
        if self.store(ctx, addr, &f) {
            if stat & RX_BD_TL == 0 {
                self.c.rx_frames += 1;
                self.c.rx_bytes += total as u64 - 4;
            } else {
                self.c.rx_errors += 1;
            }
        } else {
            stat |= RX_BD_OR;
            self.c.rx_errors += 1;
        }
        self.bd[i][0] = stat | (total.min(0xffff) as u32) << 16;
        if stat & RX_BD_IRQ != 0 {
            self.raise(if stat & (RX_BD_TL | RX_BD_OR) == 0 {
                INT_RXF
            } else {
                INT_RXE
            });
        }
        let wrap = stat & RX_BD_WRAP != 0 || i + 1 >= NUM_BD;
        self.rx_next = if wrap { first } else { i + 1 };
    }

    /// Everything due by `ctx.now`, then the next event.
    fn run(&mut self, ctx: &mut DevCtx) {
        while self.finish_tx(ctx.now) {
            self.start_tx(ctx);
        }
        while let Some(f) = self.link.recv(ctx.now) {
            self.arrived.push_back(f);
        }
        while let Some(f) = self.arrived.pop_front() {
            self.receive(ctx, f);
        }
        self.start_tx(ctx);
        self.update_irq();
        let next = [
            self.sending.as_ref().map(|s| s.done),
            self.link.next_event(),
        ]
        .into_iter()
        .flatten()
        .min();
        if let Some(at) = next {
            ctx.events.schedule(at.max(ctx.now + 1), 0);
        }
    }

    fn write_reg(&mut self, ctx: &mut DevCtx, off: u64, v: u32) {
        match off {
            MODER => {
                let old = self.reg(MODER);
                if v & MODER_TXEN != 0 && old & MODER_TXEN == 0 {
                    self.tx_next = 0;
                }
                if v & MODER_RXEN != 0 && old & MODER_RXEN == 0 {
                    self.rx_next = self.tx_count();
                }
                self.set(MODER, v & 0x1_ffff);
            }
            INT_SOURCE => {
                let s = self.reg(INT_SOURCE) & !v;
                self.set(INT_SOURCE, s);
            }
            INT_MASK => self.set(INT_MASK, v & INT_ALL),
            // Values above 0x80 are not taken (the specification's rule).
            TX_BD_NUM if v > NUM_BD as u32 => {}
            MIICOMMAND => {
                self.set(MIICOMMAND, v & 7);
                let a = self.reg(MIIADDRESS);
                let (phy, reg) = ((a & 0x1f) as u8, ((a >> 8) & 0x1f) as u8);
                if v & MIICOMMAND_READ != 0 {
                    self.c.mdio += 1;
                    self.set(MIIRX_DATA, self.phy.read(phy, reg) as u32);
                }
                if v & MIICOMMAND_WRITE != 0 {
                    self.c.mdio += 1;
                    self.phy.write(phy, reg, self.reg(MIITX_DATA) as u16);
                }
            }
            // Read-only: MDIO completes at once, the link never fails.
            MIIRX_DATA | MIISTATUS => {}
            _ => self.set(off, v),
        }
        self.run(ctx);
    }
}

/// The Ethernet FCS (CRC-32, reflected, as transmitted least significant
/// byte first); its top six bits of a destination address pick the
/// multicast hash bit.
pub fn crc32(data: &[u8]) -> u32 {
    let mut c = 0xffff_ffffu32;
    for &b in data {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xedb8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

impl Device for Ethoc {
    /// Only with a wire that has save/restore (the peer has).
    fn state(&self) -> Option<&dyn crate::Persist> {
        self.link.state().map(|_| self as &dyn crate::Persist)
    }
    fn state_mut(&mut self) -> Option<&mut dyn crate::Persist> {
        self.link.state()?;
        Some(self)
    }
    fn name(&self) -> String {
        self.name.clone()
    }
    fn size(&self) -> u64 {
        BUF_OFFSET + self.buf.len() as u64
    }
    fn read(&mut self, _ctx: &mut DevCtx, off: u64, size: u8) -> Result<u64, BadAccess> {
        if off >= BUF_OFFSET {
            // Packet memory: any width, byte-addressed.
            let at = (off - BUF_OFFSET) as usize;
            let n = size as usize;
            if !crate::size_ok(size) || at + n > self.buf.len() {
                return Err(BadAccess);
            }
            let mut v = [0u8; 8];
            v[..n].copy_from_slice(&self.buf[at..at + n]);
            return Ok(u64::from_le_bytes(v));
        }
        if size != 4 || !off.is_multiple_of(4) {
            return Err(BadAccess);
        }
        Ok(match off {
            o if o < REGS_END => self.reg(o) as u64,
            o if (BD_BASE..REGS_SIZE).contains(&o) => {
                let i = ((o - BD_BASE) / 8) as usize;
                self.bd[i][((o - BD_BASE) % 8 / 4) as usize] as u64
            }
            o if o < REGS_SIZE => 0,
            _ => return Err(BadAccess),
        })
    }
    fn write(
        &mut self,
        ctx: &mut DevCtx,
        off: u64,
        size: u8,
        val: u64,
    ) -> Result<WriteEffect, BadAccess> {
        if off >= BUF_OFFSET {
            let at = (off - BUF_OFFSET) as usize;
            let n = size as usize;
            if !crate::size_ok(size) || at + n > self.buf.len() {
                return Err(BadAccess);
            }
            self.buf[at..at + n].copy_from_slice(&val.to_le_bytes()[..n]);
            return Ok(WriteEffect::default());
        }
        if size != 4 || !off.is_multiple_of(4) {
            return Err(BadAccess);
        }
        let v = val as u32;
        match off {
            o if o < REGS_END => self.write_reg(ctx, o, v),
            o if (BD_BASE..REGS_SIZE).contains(&o) => {
                let i = ((o - BD_BASE) / 8) as usize;
                self.bd[i][((o - BD_BASE) % 8 / 4) as usize] = v;
                // A READY transmit descriptor or an EMPTY receive one may
                // let the MAC go on.
                self.run(ctx);
            }
            o if o < REGS_SIZE => {}
            _ => return Err(BadAccess),
        }
        Ok(WriteEffect {
            irq_changed: true,
            stop: false,
        })
    }
    fn event(&mut self, ctx: &mut DevCtx, _token: u64) {
        self.run(ctx);
    }
    fn fdt_nodes(&self, g: &Grant, ctx: &FdtCtx) -> Vec<(Placement, FdtNode)> {
        let buf = g.base + BUF_OFFSET;
        let len = self.buf.len() as u64;
        let compatible = if self.cfg.uio {
            "generic-uio"
        } else {
            "opencores,ethoc"
        };
        let node = FdtNode::new(g.node_name("ethernet"))
            .str("compatible", compatible)
            .u32s(
                "reg",
                vec![
                    (g.base >> 32) as u32,
                    g.base as u32,
                    0,
                    REGS_SIZE as u32,
                    (buf >> 32) as u32,
                    buf as u32,
                    (len >> 32) as u32,
                    len as u32,
                ],
            )
            .u32("interrupt-parent", ctx.interrupt_parent)
            .u32s("interrupts", g.irqs.clone());
        vec![(Placement::Soc, node)]
    }
    fn stats(&self) -> Vec<Stat> {
        let n = &self.name;
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
                "bytes of those frames (no FCS)",
            ),
            Stat::new(
                format!("{n}.tx_errors"),
                c.tx_errors,
                "transmit descriptors that held no frame (underrun)",
            ),
            Stat::new(
                format!("{n}.rx_frames"),
                c.rx_frames,
                "frames put into receive buffers",
            ),
            Stat::new(
                format!("{n}.rx_bytes"),
                c.rx_bytes,
                "bytes of those frames (no FCS)",
            ),
            Stat::new(
                format!("{n}.rx_busy"),
                c.rx_busy,
                "frames lost: no empty receive descriptor (BUSY)",
            ),
            Stat::new(
                format!("{n}.rx_filtered"),
                c.rx_filtered,
                "frames the address filter refused",
            ),
            Stat::new(
                format!("{n}.rx_disabled"),
                c.rx_disabled,
                "frames that arrived with the receiver off",
            ),
            Stat::new(
                format!("{n}.rx_errors"),
                c.rx_errors,
                "frames too long or with a buffer address outside memory",
            ),
            Stat::new(
                format!("{n}.mdio"),
                c.mdio,
                "MDIO reads and writes of the PHY",
            ),
        ];
        v.extend(self.link.stats(n));
        v
    }
}

fn plug(cfg: &DeviceConfig) -> Result<Plug, ParamError> {
    let c = EthocConfig::parse(cfg)?;
    let name = cfg.name.clone();
    let want = Want::new(name.clone())
        .mmio(BUF_OFFSET + c.buffer_bytes)
        .irqs(1)
        .bus_master();
    Ok(Plug::new(want, move |a: &mut Attach| {
        let hz = a.clock.hz;
        let peer = c.wire.peer(hz);
        let base = a.grant.base;
        let irq = a.irq(0);
        Box::new(Ethoc::new(&name, c.clone(), base, irq, Box::new(peer), hz))
    }))
}
