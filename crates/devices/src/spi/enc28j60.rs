//! Microchip ENC28J60: a 10BASE-T Ethernet controller on SPI (the Openmoko
//! study's network module stands in as this chip, which Linux's stock
//! `enc28j60` driver binds to in 6.1 and 6.12: `microchip,enc28j60`).
//!
//! What the driver needs, after the datasheet (DS39662) and
//! `drivers/net/ethernet/microchip/enc28j60.c`:
//!
//! * the SPI instruction set: read/write control register (a dummy byte
//!   first for MAC and MII registers), read/write buffer memory, bit field
//!   set/clear (ETH registers only), system reset;
//! * four register banks chosen by `ECON1.BSEL` plus the five common
//!   registers; the PHY behind `MIREGADR`/`MICMD`/`MIWR`/`MIRD` with
//!   `MISTAT.BUSY` for 10.24 µs per access;
//! * the 8 KiB buffer: a receive ring `ERXST..=ERXND` that the chip fills
//!   with `next pointer, status vector, frame, FCS` (padded to an even
//!   address) and never past `ERXRDPT`; `EPKTCNT` and `ECON2.PKTDEC`;
//!   transmission of `ETXST+1..=ETXND` (a control byte at `ETXST`) when
//!   `ECON1.TXRTS` rises, with the 7-byte status vector after `ETXND`;
//! * the interrupt flags and the active-low INT pin (the driver asks for a
//!   falling edge; it drops `EIE.INTIE` while it works, so a new edge comes
//!   when flags are still pending as it sets it again).
//!
//! Time is the simulated cycle of each SPI frame. The wire runs at 10 Mbit/s
//! half duplex: a frame takes (preamble 8 + data padded to 60 + FCS 4) bytes
//! plus a 96-bit gap. Not modelled: the DMA checksum engine (`ECON1.DMAST`
//! with `CSUMEN` reports 0), pattern-match and hash filters (`PMEN`, `HTEN`
//! accept nothing extra), power-save timing, collisions and flow control.

use std::collections::BTreeMap;

use super::SpiPeripheral;
use crate::fdt::FdtNode;
use crate::{Signal, Stat};

pub const COMPATIBLE: &str = "microchip,enc28j60";
/// Buffer memory.
pub const MEM_SIZE: usize = 0x2000;
/// `EREVID` of B7 silicon.
pub const REV_ID: u8 = 0x06;
/// Wire rate.
pub const LINK_BPS: u64 = 10_000_000;
/// Longest frame the chip takes or sends, FCS included (`MAMXFL` as Linux sets it).
pub const MAX_FRAME: usize = 1518;
/// A PHY register access keeps `MISTAT.BUSY` set this long.
pub const PHY_ACCESS_NS: u64 = 10_240;

pub use crate::ether::EthernetLink;

/// Where the chip's INT pin goes, for the device tree.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IntPin {
    /// The GPIO device (its port node is the interrupt controller).
    pub gpio: String,
    pub line: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Enc28j60Config {
    pub core_hz: u64,
    /// `spi-max-frequency` (the datasheet allows 20 MHz).
    pub max_hz: u32,
    /// `local-mac-address`.
    pub mac: [u8; 6],
    pub int: Option<IntPin>,
}

// SPI opcodes (top three bits of the first byte).
const OP_RCR: u8 = 0;
const OP_RBM: u8 = 1;
const OP_WCR: u8 = 2;
const OP_WBM: u8 = 3;
const OP_BFS: u8 = 4;
const OP_BFC: u8 = 5;
const OP_SRC: u8 = 7;

// Common registers (every bank).
const EIE: u8 = 0x1B;
const EIR: u8 = 0x1C;
const ESTAT: u8 = 0x1D;
const ECON2: u8 = 0x1E;
const ECON1: u8 = 0x1F;
// Bank 0.
const ERDPTL: u8 = 0x00;
const EWRPTL: u8 = 0x02;
const ETXSTL: u8 = 0x04;
const ETXNDL: u8 = 0x06;
const ERXSTL: u8 = 0x08;
const ERXNDL: u8 = 0x0A;
const ERXRDPTL: u8 = 0x0C;
const ERXWRPTL: u8 = 0x0E;
const EDMASTL: u8 = 0x10;
const EDMANDL: u8 = 0x12;
const EDMADSTL: u8 = 0x14;
// Bank 1.
const ERXFCON: u8 = 0x18;
const EPKTCNT: u8 = 0x19;
// Bank 2.
const MACON1: u8 = 0x00;
const MICMD: u8 = 0x12;
const MIREGADR: u8 = 0x14;
const MIWRL: u8 = 0x16;
const MIWRH: u8 = 0x17;
const MIRDL: u8 = 0x18;
const MIRDH: u8 = 0x19;
// Bank 3.
const MISTAT: u8 = 0x0A;
const EREVID: u8 = 0x12;

const EIE_INTIE: u8 = 0x80;
const EIR_PKTIF: u8 = 0x40;
const EIR_DMAIF: u8 = 0x20;
const EIR_LINKIF: u8 = 0x10;
const EIR_TXIF: u8 = 0x08;
const EIR_TXERIF: u8 = 0x02;
const EIR_RXERIF: u8 = 0x01;
const ESTAT_INT: u8 = 0x80;
const ESTAT_TXABRT: u8 = 0x02;
const ESTAT_CLKRDY: u8 = 0x01;
const ECON2_AUTOINC: u8 = 0x80;
const ECON2_PKTDEC: u8 = 0x40;
const ECON2_PWRSV: u8 = 0x20;
const ECON1_TXRST: u8 = 0x80;
const ECON1_RXRST: u8 = 0x40;
const ECON1_DMAST: u8 = 0x20;
const ECON1_CSUMEN: u8 = 0x10;
const ECON1_TXRTS: u8 = 0x08;
const ECON1_RXEN: u8 = 0x04;
const MACON1_MARXEN: u8 = 0x01;
const MICMD_MIIRD: u8 = 0x01;
const MISTAT_BUSY: u8 = 0x01;
const ERXFCON_UCEN: u8 = 0x80;
const ERXFCON_MCEN: u8 = 0x02;
const ERXFCON_BCEN: u8 = 0x01;

// PHY registers.
const PHCON1: usize = 0x00;
const PHSTAT1: usize = 0x01;
const PHHID1: usize = 0x02;
const PHHID2: usize = 0x03;
const PHSTAT2: usize = 0x11;
const PHIR: usize = 0x13;
const PHCON1_PRST: u16 = 0x8000;
const PHCON1_PDPXMD: u16 = 0x0100;
const PHSTAT2_LSTAT: u16 = 1 << 10;
const PHSTAT2_DPXSTAT: u16 = 1 << 9;

/// What the bytes after the opcode mean, within one chip-select frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Spi {
    /// Chip select released, or the next byte is an opcode.
    Opcode,
    /// Reading a control register; `dummy` while a MAC/MII register's dummy
    /// byte is still to come.
    ReadReg {
        addr: u8,
        dummy: bool,
    },
    ReadBuf,
    WriteReg(u8),
    WriteBuf,
    SetBits(u8),
    ClearBits(u8),
    /// The command is complete (or invalid): further bytes do nothing.
    Ignore,
}

/// A frame being shifted onto the wire.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Sending {
    done: u64,
    frame: Vec<u8>,
}

/// The chip, on one chip select.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Enc28j60 {
    name: String,
    cfg: Enc28j60Config,
    banks: [[u8; 0x1B]; 4],
    eie: u8,
    eir: u8,
    estat: u8,
    econ2: u8,
    econ1: u8,
    phy: [u16; 0x20],
    mem: Vec<u8>,
    /// Hardware receive write pointer (`ERXWRPT`).
    rx_wr: u16,
    pktcnt: u8,
    mii_busy_until: u64,
    sending: Option<Sending>,
    spi: Spi,
    /// Saved beside the chip's state, in its own section.
    #[serde(skip)]
    link: Option<Box<dyn EthernetLink>>,
    /// A board wire (the board restores its level).
    #[serde(skip)]
    int_pin: Option<Signal>,
    now: u64,
    // Statistics.
    stat_commands: u64,
    stat_bad_commands: u64,
    stat_buf_read: u64,
    stat_buf_written: u64,
    stat_tx_frames: u64,
    stat_tx_bytes: u64,
    stat_tx_errors: u64,
    stat_rx_frames: u64,
    stat_rx_bytes: u64,
    stat_rx_filtered: u64,
    stat_rx_overruns: u64,
    stat_rx_disabled: u64,
    stat_rx_bad: u64,
    stat_int_asserts: u64,
    /// Frames in the ring: (address of the entry, arrival cycle, cycle the
    /// driver started reading it), oldest first.
    in_ring: std::collections::VecDeque<(u16, u64, Option<u64>)>,
    /// Arrival -> the driver reads the entry / frees it (PKTDEC), in cycles.
    lat_read: Latency,
    lat_free: Latency,
    /// One frame followed from the wire to its release (the Nth received).
    trace: FrameTrace,
}

/// The path of one received frame through the chip and its driver, in
/// cycles: arrival on the wire, the driver's next read of EIR (it learns of
/// the frame: an interrupt's work or a poll), its first read of the frame's
/// ring entry (the status vector), and PKTDEC releasing it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FrameTrace {
    /// Which received frame (1-based) is followed.
    pub nth: u64,
    pub entry: Option<u16>,
    pub arrival: Option<u64>,
    pub eir_read: Option<u64>,
    pub header_read: Option<u64>,
    pub freed: Option<u64>,
}

/// The frame [`FrameTrace`] follows by default: well after ARP and the
/// TCP handshake, inside the transfer.
pub const TRACE_FRAME: u64 = 100;

/// Count, sum and maximum of a latency, in cycles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Latency {
    pub count: u64,
    pub sum: u64,
    pub max: u64,
}

impl Latency {
    fn add(&mut self, cycles: u64) {
        self.count += 1;
        self.sum += cycles;
        self.max = self.max.max(cycles);
    }
    pub fn mean(&self) -> u64 {
        self.sum.checked_div(self.count).unwrap_or(0)
    }
}

fn word(b: &[u8; 0x1B], lo: u8) -> u16 {
    u16::from_le_bytes([b[lo as usize], b[lo as usize + 1]]) & 0x1FFF
}

/// Ethernet FCS (CRC-32, reflected, as sent on the wire least significant byte first).
pub fn fcs(frame: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in frame {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Whether a register of bank `bank` at `addr` is a MAC or MII register
/// (read with a dummy byte first, not reachable by bit field set/clear).
fn is_mac_mii(bank: usize, addr: u8) -> bool {
    match bank {
        2 => addr <= 0x19,
        3 => addr <= 0x05 || addr == MISTAT,
        _ => false,
    }
}

impl Enc28j60 {
    pub fn new(name: &str, cfg: Enc28j60Config, int_pin: Option<Signal>) -> Self {
        let mut c = Self {
            name: name.to_string(),
            cfg,
            banks: [[0; 0x1B]; 4],
            eie: 0,
            eir: 0,
            estat: 0,
            econ2: 0,
            econ1: 0,
            phy: [0; 0x20],
            mem: vec![0; MEM_SIZE],
            rx_wr: 0,
            pktcnt: 0,
            mii_busy_until: 0,
            sending: None,
            spi: Spi::Opcode,
            link: None,
            int_pin,
            now: 0,
            stat_commands: 0,
            stat_bad_commands: 0,
            stat_buf_read: 0,
            stat_buf_written: 0,
            stat_tx_frames: 0,
            stat_tx_bytes: 0,
            stat_tx_errors: 0,
            stat_rx_frames: 0,
            stat_rx_bytes: 0,
            stat_rx_filtered: 0,
            stat_rx_overruns: 0,
            stat_rx_disabled: 0,
            stat_rx_bad: 0,
            stat_int_asserts: 0,
            in_ring: Default::default(),
            lat_read: Latency::default(),
            lat_free: Latency::default(),
            trace: FrameTrace {
                nth: TRACE_FRAME,
                ..Default::default()
            },
        };
        c.reset();
        c
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Connect the wire.
    pub fn connect(&mut self, link: Box<dyn EthernetLink>) {
        self.link = Some(link);
    }
    pub fn link(&self) -> Option<&dyn EthernetLink> {
        self.link.as_deref()
    }

    /// Power-on / system reset values (datasheet register summary).
    fn reset(&mut self) {
        self.banks = [[0; 0x1B]; 4];
        let b0 = &mut self.banks[0];
        b0[ERDPTL as usize] = 0xFA;
        b0[ERDPTL as usize + 1] = 0x05;
        b0[ERXNDL as usize] = 0xFF;
        b0[ERXNDL as usize + 1] = 0x1F;
        b0[ERXRDPTL as usize] = 0xFA;
        b0[ERXRDPTL as usize + 1] = 0x05;
        self.banks[1][ERXFCON as usize] = ERXFCON_UCEN | 0x20 | ERXFCON_BCEN;
        self.banks[2][0x09] = 0x37; // MACLCON2
        self.banks[2][0x0A] = 0x00; // MAMXFL = 0x0600
        self.banks[2][0x0B] = 0x06;
        self.eie = 0;
        self.eir = 0;
        self.estat = ESTAT_CLKRDY;
        self.econ2 = ECON2_AUTOINC;
        self.econ1 = 0;
        self.phy = [0; 0x20];
        self.phy[PHHID1] = 0x0083;
        self.phy[PHHID2] = 0x1400;
        self.phy[0x14] = 0x3422; // PHLCON
        self.rx_wr = 0;
        self.pktcnt = 0;
        self.in_ring.clear();
        self.sending = None;
        self.update_int();
    }

    fn bank(&self) -> usize {
        (self.econ1 & 3) as usize
    }
    fn reg16(&self, bank: usize, lo: u8) -> u16 {
        word(&self.banks[bank], lo)
    }
    fn set_reg16(&mut self, bank: usize, lo: u8, v: u16) {
        let [l, h] = v.to_le_bytes();
        self.banks[bank][lo as usize] = l;
        self.banks[bank][lo as usize + 1] = h & 0x1F;
    }
    fn rx_start(&self) -> u16 {
        self.reg16(0, ERXSTL)
    }
    fn rx_end(&self) -> u16 {
        self.reg16(0, ERXNDL)
    }

    /// Flags as the guest reads them: `PKTIF` follows the packet count.
    fn eir_now(&self) -> u8 {
        let pkt = if self.pktcnt > 0 { EIR_PKTIF } else { 0 };
        (self.eir & !EIR_PKTIF) | pkt
    }
    fn int_asserted(&self) -> bool {
        self.eie & EIE_INTIE != 0 && self.eir_now() & self.eie & 0x7B != 0
    }
    /// Drive the INT pin (active low) from the flags.
    fn update_int(&mut self) {
        let asserted = self.int_asserted();
        if asserted {
            self.estat |= ESTAT_INT;
        } else {
            self.estat &= !ESTAT_INT;
        }
        if let Some(pin) = &self.int_pin {
            if pin.is_high() == asserted {
                if asserted {
                    self.stat_int_asserts += 1;
                }
                pin.set_level_at(!asserted, self.now);
            }
        }
    }

    fn read_reg(&mut self, addr: u8) -> u8 {
        let bank = self.bank();
        match addr {
            EIE => self.eie,
            EIR => {
                if self.trace.arrival.is_some() && self.trace.eir_read.is_none() {
                    self.trace.eir_read = Some(self.now);
                }
                self.eir_now()
            }
            ESTAT => self.estat,
            ECON2 => self.econ2,
            ECON1 => self.econ1,
            _ => match (bank, addr) {
                (0, a) if a == ERXWRPTL || a == ERXWRPTL + 1 => {
                    self.rx_wr.to_le_bytes()[(a - ERXWRPTL) as usize]
                }
                (1, EPKTCNT) => self.pktcnt,
                (3, MISTAT) => {
                    if self.now < self.mii_busy_until {
                        MISTAT_BUSY
                    } else {
                        0
                    }
                }
                (3, EREVID) => REV_ID,
                (b, a) => self.banks[b][a as usize],
            },
        }
    }

    fn write_reg(&mut self, addr: u8, v: u8) {
        let bank = self.bank();
        match addr {
            EIE => self.eie = v,
            // PKTIF follows EPKTCNT, LINKIF is cleared by reading PHIR.
            EIR => {
                let w = EIR_DMAIF | EIR_TXIF | EIR_TXERIF | EIR_RXERIF;
                self.eir = (self.eir & !w) | (v & w);
            }
            ESTAT => {
                let w = ESTAT_TXABRT | 0x10;
                self.estat = (self.estat & !w) | (v & w);
            }
            ECON2 => self.write_econ2(v),
            ECON1 => self.write_econ1(v),
            _ => {
                if matches!((bank, addr), (0, a) if a == ERXWRPTL || a == ERXWRPTL + 1)
                    || matches!(
                        (bank, addr),
                        (1, EPKTCNT) | (3, MISTAT) | (3, EREVID) | (2, MIRDL) | (2, MIRDH)
                    )
                {
                    return; // read-only
                }
                self.banks[bank][addr as usize] = v;
                match (bank, addr) {
                    // Programming the ring start moves the write pointer there.
                    (0, a) if a == ERXSTL || a == ERXSTL + 1 => self.rx_wr = self.rx_start(),
                    (2, MICMD) if v & MICMD_MIIRD != 0 => {
                        let r = self.banks[2][MIREGADR as usize] as usize & 0x1F;
                        let val = self.phy_read(r);
                        self.set_reg16(2, MIRDL, 0);
                        self.banks[2][MIRDL as usize] = val as u8;
                        self.banks[2][MIRDH as usize] = (val >> 8) as u8;
                        self.mii_busy_until = self.now + self.ns_to_cycles(PHY_ACCESS_NS);
                    }
                    (2, MIWRH) => {
                        let r = self.banks[2][MIREGADR as usize] as usize & 0x1F;
                        let val = u16::from_le_bytes([
                            self.banks[2][MIWRL as usize],
                            self.banks[2][MIWRH as usize],
                        ]);
                        self.phy_write(r, val);
                        self.mii_busy_until = self.now + self.ns_to_cycles(PHY_ACCESS_NS);
                    }
                    _ => {}
                }
            }
        }
        self.update_int();
    }

    fn write_econ2(&mut self, v: u8) {
        if v & ECON2_PKTDEC != 0 {
            self.pktcnt = self.pktcnt.saturating_sub(1);
            if let Some((at, arrived, _)) = self.in_ring.pop_front() {
                self.lat_free.add(self.now.saturating_sub(arrived));
                if self.trace.entry == Some(at) && self.trace.arrival == Some(arrived) {
                    self.trace.freed = Some(self.now);
                }
            }
        }
        self.econ2 = v & !ECON2_PKTDEC;
        // Power save stops the oscillator: CLKRDY drops until it is left.
        if self.econ2 & ECON2_PWRSV != 0 {
            self.estat &= !ESTAT_CLKRDY;
        } else {
            self.estat |= ESTAT_CLKRDY;
        }
    }

    fn write_econ1(&mut self, v: u8) {
        let old = self.econ1;
        self.econ1 = v;
        if v & ECON1_TXRST != 0 {
            // Transmit logic held in reset: a frame on the way is lost.
            if self.sending.take().is_some() {
                self.stat_tx_errors += 1;
            }
            self.econ1 &= !ECON1_TXRTS;
        }
        if v & ECON1_RXRST != 0 {
            self.pktcnt = 0;
            self.in_ring.clear();
            self.rx_wr = self.rx_start();
            self.econ1 &= !ECON1_RXEN;
        }
        if v & ECON1_DMAST != 0 {
            self.dma();
            self.econ1 &= !ECON1_DMAST;
        }
        let rts = self.econ1 & ECON1_TXRTS != 0;
        if rts && old & ECON1_TXRTS == 0 && v & ECON1_TXRST == 0 {
            self.start_tx();
        } else if !rts && self.sending.take().is_some() {
            // Cleared by the driver mid-frame: aborted.
            self.estat |= ESTAT_TXABRT;
            self.stat_tx_errors += 1;
        }
    }

    /// The DMA copy engine (`CSUMEN` clear): `EDMAST..=EDMAND` to `EDMADST`,
    /// wrapping in the receive ring as the chip does. Done at once.
    fn dma(&mut self) {
        if self.econ1 & ECON1_CSUMEN == 0 {
            let (st, nd, mut dst) = (
                self.reg16(0, EDMASTL),
                self.reg16(0, EDMANDL),
                self.reg16(0, EDMADSTL),
            );
            let mut src = st;
            for _ in 0..MEM_SIZE {
                self.mem[dst as usize] = self.mem[src as usize];
                dst = (dst + 1) & 0x1FFF;
                if src == nd {
                    break;
                }
                src = self.ring_next(src);
            }
        }
        self.eir |= EIR_DMAIF;
    }

    fn phy_read(&mut self, r: usize) -> u16 {
        match r {
            PHSTAT1 => 0x1800 | 0x0004, // PFDPX | PHDPX capabilities, link up (latched)
            PHSTAT2 => {
                let dpx = if self.phy[PHCON1] & PHCON1_PDPXMD != 0 {
                    PHSTAT2_DPXSTAT
                } else {
                    0
                };
                PHSTAT2_LSTAT | dpx
            }
            PHIR => {
                let v = self.phy[PHIR];
                self.phy[PHIR] = 0;
                self.eir &= !EIR_LINKIF;
                v
            }
            _ => self.phy[r],
        }
    }

    fn phy_write(&mut self, r: usize, v: u16) {
        match r {
            PHCON1 if v & PHCON1_PRST != 0 => {
                let (id1, id2) = (self.phy[PHHID1], self.phy[PHHID2]);
                self.phy = [0; 0x20];
                self.phy[PHHID1] = id1;
                self.phy[PHHID2] = id2;
                self.phy[0x14] = 0x3422;
            }
            PHSTAT1 | PHHID1 | PHHID2 | PHSTAT2 | PHIR => {}
            _ => self.phy[r] = v,
        }
    }

    fn ns_to_cycles(&self, ns: u64) -> u64 {
        ((ns as u128 * self.cfg.core_hz as u128).div_ceil(1_000_000_000)) as u64
    }
    /// Cycles the wire is busy with a frame of `len` bytes (no FCS).
    fn wire_cycles(&self, len: usize) -> u64 {
        let bits = (8 + len.max(60) + 4) as u64 * 8 + 96;
        (bits as u128 * self.cfg.core_hz as u128).div_ceil(LINK_BPS as u128) as u64
    }

    fn start_tx(&mut self) {
        let (st, nd) = (self.reg16(0, ETXSTL), self.reg16(0, ETXNDL));
        let len = nd as usize + 1 - (st as usize + 1).min(nd as usize + 1);
        if nd <= st || len + 4 > MAX_FRAME {
            // Nothing to send, or a giant: the chip reports a transmit error.
            self.stat_tx_errors += 1;
            self.econ1 &= !ECON1_TXRTS;
            self.estat |= ESTAT_TXABRT;
            self.eir |= EIR_TXERIF;
            self.write_tsv(nd, len, false);
            self.update_int();
            return;
        }
        let frame = self.mem[st as usize + 1..=nd as usize].to_vec();
        let done = self.now + self.wire_cycles(len);
        self.sending = Some(Sending { done, frame });
    }

    /// The transmit status vector, after `ETXND` (wrapping at the end of memory).
    fn write_tsv(&mut self, nd: u16, len: usize, ok: bool) {
        let on_wire = (len.max(60) + 4) as u16;
        let mut tsv = [0u8; 7];
        tsv[0..2].copy_from_slice(&(len as u16).to_le_bytes());
        if ok {
            tsv[2] |= 0x80; // TXDONE
        } else {
            tsv[3] |= 0x40; // giant
        }
        tsv[4..6].copy_from_slice(&on_wire.to_le_bytes());
        for (i, b) in tsv.iter().enumerate() {
            self.mem[(nd as usize + 1 + i) & 0x1FFF] = *b;
        }
    }

    fn finish_tx(&mut self, s: Sending) {
        let nd = self.reg16(0, ETXNDL);
        let len = s.frame.len();
        self.write_tsv(nd, len, true);
        self.stat_tx_frames += 1;
        self.stat_tx_bytes += len as u64;
        if let Some(l) = self.link.as_mut() {
            l.send(s.frame, s.done);
        }
        self.econ1 &= !ECON1_TXRTS;
        self.eir |= EIR_TXIF;
        self.update_int();
    }

    /// The address after `p` in the receive ring (or plain memory outside it).
    fn ring_next(&self, p: u16) -> u16 {
        if p == self.rx_end() && self.rx_start() <= self.rx_end() {
            self.rx_start()
        } else {
            (p + 1) & 0x1FFF
        }
    }

    fn accept(&self, frame: &[u8]) -> bool {
        let filter = self.banks[1][ERXFCON as usize];
        if filter & (ERXFCON_UCEN | ERXFCON_MCEN | ERXFCON_BCEN | 0x1C) == 0 {
            return true; // promiscuous (CRCEN alone still passes good frames)
        }
        let dst = &frame[0..6];
        let mac = self.mac();
        (filter & ERXFCON_UCEN != 0 && dst == mac)
            || (filter & ERXFCON_BCEN != 0 && dst == [0xFF; 6])
            || (filter & ERXFCON_MCEN != 0 && dst[0] & 1 != 0 && dst != [0xFF; 6])
    }

    /// The station address as programmed: the datasheet's MAADR1 (bank 3,
    /// 0x04) is the first byte on the wire; Linux's header numbers them from 0.
    pub fn mac(&self) -> [u8; 6] {
        let b = &self.banks[3];
        [b[0x04], b[0x05], b[0x02], b[0x03], b[0x00], b[0x01]]
    }

    /// A frame from the wire, complete at cycle `self.now`.
    fn receive(&mut self, frame: Vec<u8>) {
        if frame.len() < 14 || frame.len() + 4 > MAX_FRAME {
            self.stat_rx_bad += 1;
            return;
        }
        if self.econ1 & ECON1_RXEN == 0 || self.banks[2][MACON1 as usize] & MACON1_MARXEN == 0 {
            self.stat_rx_disabled += 1;
            return;
        }
        if !self.accept(&frame) {
            self.stat_rx_filtered += 1;
            return;
        }
        let (st, nd) = (self.rx_start(), self.rx_end());
        let rd = self.reg16(0, ERXRDPTL);
        if st > nd || !(st..=nd).contains(&self.rx_wr) {
            self.stat_rx_bad += 1;
            self.eir |= EIR_RXERIF;
            self.update_int();
            return;
        }
        let size = nd as usize - st as usize + 1;
        let count = frame.len() + 4; // with FCS
        let need = 6 + count + (6 + count) % 2;
        let wr = self.rx_wr as usize;
        let rd = rd.clamp(st, nd) as usize;
        // Free bytes before the write pointer would reach ERXRDPT.
        let free = if wr >= rd { size - (wr - rd) } else { rd - wr } - 1;
        if self.pktcnt == 255 || need > free {
            self.stat_rx_overruns += 1;
            self.eir |= EIR_RXERIF;
            self.update_int();
            return;
        }
        let next = st as usize + (wr - st as usize + need) % size;
        let mut status: u16 = 0x0080; // RXOK (bit 23 of the vector)
        if frame[0..6] == [0xFF; 6] {
            status |= 0x0200;
        } else if frame[0] & 1 != 0 {
            status |= 0x0100;
        }
        let mut bytes = Vec::with_capacity(need);
        bytes.extend_from_slice(&(next as u16).to_le_bytes());
        bytes.extend_from_slice(&(count as u16).to_le_bytes());
        bytes.extend_from_slice(&status.to_le_bytes());
        bytes.extend_from_slice(&frame);
        bytes.extend_from_slice(&fcs(&frame).to_le_bytes());
        self.in_ring.push_back((self.rx_wr, self.now, None));
        if self.stat_rx_frames + 1 == self.trace.nth {
            self.trace.entry = Some(self.rx_wr);
            self.trace.arrival = Some(self.now);
        }
        let mut p = self.rx_wr;
        for b in bytes {
            self.mem[p as usize] = b;
            p = self.ring_next(p);
        }
        self.rx_wr = next as u16;
        self.pktcnt += 1;
        self.stat_rx_frames += 1;
        self.stat_rx_bytes += frame.len() as u64;
        self.update_int();
    }

    /// Run the chip and its wire up to cycle `now`.
    pub fn run_to(&mut self, now: u64) {
        loop {
            let tx = self.sending.as_ref().map(|s| s.done).filter(|&t| t <= now);
            if let Some(t) = tx {
                self.now = self.now.max(t);
                let s = self.sending.take().expect("checked");
                self.finish_tx(s);
                continue;
            }
            let Some(link) = self.link.as_mut() else {
                break;
            };
            match link.next_event() {
                Some(t) if t <= now => {
                    self.now = self.now.max(t);
                    let at = self.now;
                    match self.link.as_mut().and_then(|l| l.recv(at)) {
                        Some(f) => self.receive(f),
                        None => {
                            // The link ran its own timers; stop if it did not move on.
                            if self.link.as_ref().and_then(|l| l.next_event()) == Some(t) {
                                break;
                            }
                        }
                    }
                }
                _ => break,
            }
        }
        self.now = self.now.max(now);
    }

    pub fn next_event(&self) -> Option<u64> {
        let tx = self.sending.as_ref().map(|s| s.done);
        let link = self.link.as_ref().and_then(|l| l.next_event());
        match (tx, link) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn read_buf(&mut self) -> u8 {
        let p = self.reg16(0, ERDPTL);
        let now = self.now;
        if let Some(e) = self.in_ring.iter_mut().find(|e| e.0 == p && e.2.is_none()) {
            e.2 = Some(now);
            self.lat_read.add(now.saturating_sub(e.1));
            if self.trace.entry == Some(p) && self.trace.header_read.is_none() {
                self.trace.header_read = Some(now);
            }
        }
        let v = self.mem[p as usize];
        if self.econ2 & ECON2_AUTOINC != 0 {
            let n = self.ring_next(p);
            self.set_reg16(0, ERDPTL, n);
        }
        self.stat_buf_read += 1;
        v
    }

    fn write_buf(&mut self, v: u8) {
        let p = self.reg16(0, EWRPTL);
        self.mem[p as usize] = v;
        if self.econ2 & ECON2_AUTOINC != 0 {
            self.set_reg16(0, EWRPTL, (p + 1) & 0x1FFF);
        }
        self.stat_buf_written += 1;
    }

    pub fn stats(&self, prefix: &str) -> Vec<Stat> {
        let k = |f: &str| format!("{prefix}.{f}");
        let mut v = vec![
            Stat::new(
                k("commands"),
                self.stat_commands,
                "SPI instructions the chip decoded",
            ),
            Stat::new(
                k("bad_commands"),
                self.stat_bad_commands,
                "SPI instructions refused (unknown opcode, bit set/clear on a MAC/MII register)",
            ),
            Stat::new(
                k("buffer_bytes_read"),
                self.stat_buf_read,
                "bytes read from the packet buffer over SPI",
            ),
            Stat::new(
                k("buffer_bytes_written"),
                self.stat_buf_written,
                "bytes written to the packet buffer over SPI",
            ),
            Stat::new(
                k("tx_frames"),
                self.stat_tx_frames,
                "frames sent on the wire",
            ),
            Stat::new(
                k("tx_bytes"),
                self.stat_tx_bytes,
                "bytes of the frames sent (no FCS)",
            ),
            Stat::new(
                k("tx_errors"),
                self.stat_tx_errors,
                "transmissions aborted or refused",
            ),
            Stat::new(
                k("rx_frames"),
                self.stat_rx_frames,
                "frames written to the receive ring",
            ),
            Stat::new(
                k("rx_bytes"),
                self.stat_rx_bytes,
                "bytes of the frames received (no FCS)",
            ),
            Stat::new(
                k("rx_filtered"),
                self.stat_rx_filtered,
                "frames the address filter dropped",
            ),
            Stat::new(
                k("rx_overruns"),
                self.stat_rx_overruns,
                "frames dropped: receive ring full or 255 packets pending",
            ),
            Stat::new(
                k("rx_disabled"),
                self.stat_rx_disabled,
                "frames dropped while reception was off",
            ),
            Stat::new(
                k("rx_bad"),
                self.stat_rx_bad,
                "frames dropped: runt, giant or a ring the driver misprogrammed",
            ),
            Stat::new(
                k("int_asserts"),
                self.stat_int_asserts,
                "times the INT pin was pulled low",
            ),
            Stat::new(
                k("rx_seen_cycles_mean"),
                self.lat_read.mean(),
                "mean cycles from a frame's arrival to the driver reading its ring entry",
            ),
            Stat::new(
                k("rx_seen_cycles_max"),
                self.lat_read.max,
                "longest such wait, cycles",
            ),
            Stat::new(
                k("rx_freed_cycles_mean"),
                self.lat_free.mean(),
                "mean cycles from a frame's arrival to the driver freeing it (PKTDEC)",
            ),
            Stat::new(
                k("rx_freed_cycles_max"),
                self.lat_free.max,
                "longest such wait, cycles",
            ),
        ];
        // One frame's path, as cycles after its arrival (absent steps: none).
        let t = &self.trace;
        let after = |x: Option<u64>| match (t.arrival, x) {
            (Some(a), Some(x)) => Some(x.saturating_sub(a)),
            _ => None,
        };
        if let Some(a) = t.arrival {
            v.push(Stat::new(
                k("trace.frame"),
                t.nth,
                "the received frame followed (1-based)",
            ));
            v.push(Stat::new(
                k("trace.arrival_cycle"),
                a,
                "cycle its last bit arrived from the wire",
            ));
            for (name, x, d) in [
                (
                    "trace.eir_read_after",
                    after(t.eir_read),
                    "cycles from arrival to the driver's next read of EIR (it learns of the frame)",
                ),
                (
                    "trace.header_read_after",
                    after(t.header_read),
                    "cycles from arrival to the driver reading its status vector",
                ),
                (
                    "trace.freed_after",
                    after(t.freed),
                    "cycles from arrival to PKTDEC releasing it",
                ),
            ] {
                if let Some(x) = x {
                    v.push(Stat::new(k(name), x, d));
                }
            }
        }
        if let Some(l) = &self.link {
            v.extend(l.stats(prefix));
        }
        v
    }

    /// The device-tree child node; `phandles` names the GPIO's.
    pub fn node(&self, cs: u32, phandles: &BTreeMap<String, u32>) -> FdtNode {
        let mut n = FdtNode::new(format!("ethernet@{cs}"))
            .str("compatible", COMPATIBLE)
            .u32("reg", cs)
            .u32("spi-max-frequency", self.cfg.max_hz)
            .prop(
                "local-mac-address",
                crate::fdt::Prop::Bytes(self.cfg.mac.to_vec()),
            );
        if let Some(pin) = &self.cfg.int {
            if let Some(&p) = phandles.get(&pin.gpio) {
                // IRQ_TYPE_EDGE_FALLING: the driver's request_irq passes no
                // trigger and says level triggers do not work.
                n = n
                    .u32("interrupt-parent", p)
                    .u32s("interrupts", vec![pin.line, 2]);
            }
        }
        n
    }
}

/// The chip's registers, buffer memory and counters, and the state of
/// what is on its wire beside them.
impl crate::Persist for Enc28j60 {
    fn save(&self) -> Result<Vec<u8>, String> {
        let link = match &self.link {
            Some(l) => Some(crate::ether::save_link(l.as_ref())?),
            None => None,
        };
        hs_snapshot::state::encode(&(self, link))
    }
    fn restore(&mut self, data: &[u8]) -> Result<(), String> {
        let (mut fresh, link): (Enc28j60, Option<String>) = hs_snapshot::state::decode(data)?;
        crate::same(
            "ENC28J60",
            &(&fresh.name, &fresh.cfg),
            &(&self.name, &self.cfg),
        )?;
        if fresh.mem.len() != MEM_SIZE || fresh.rx_wr as usize >= MEM_SIZE {
            return Err(format!(
                "the snapshot's ENC28J60 `{}` has {} bytes of buffer memory and its write pointer at {:#x}",
                fresh.name,
                fresh.mem.len(),
                fresh.rx_wr
            ));
        }
        match (&mut self.link, link) {
            (None, None) => {}
            (Some(l), Some(saved)) => crate::ether::restore_link(l.as_mut(), &saved)?,
            (mine, _) => {
                return Err(format!(
                    "the snapshot's ENC28J60 `{}` {} a network peer; this machine's {}",
                    self.name,
                    if mine.is_some() { "has no" } else { "has" },
                    if mine.is_some() { "has" } else { "has none" }
                ))
            }
        }
        std::mem::swap(&mut fresh.link, &mut self.link);
        std::mem::swap(&mut fresh.int_pin, &mut self.int_pin);
        *self = fresh;
        Ok(())
    }
}

impl SpiPeripheral for Enc28j60 {
    /// A chip with no wire, or one whose wire has save/restore.
    fn state(&self) -> Option<&dyn crate::Persist> {
        match &self.link {
            Some(l) if l.state().is_none() => None,
            _ => Some(self),
        }
    }
    fn state_mut(&mut self) -> Option<&mut dyn crate::Persist> {
        if self.link.as_ref().is_some_and(|l| l.state().is_none()) {
            return None;
        }
        Some(self)
    }
    fn select(&mut self, now: u64) {
        self.run_to(now);
        self.spi = Spi::Opcode;
    }

    fn exchange(&mut self, mosi: u16, _bits: u8, now: u64) -> u16 {
        self.run_to(now);
        let b = mosi as u8;
        let out = match self.spi {
            Spi::Opcode => {
                self.stat_commands += 1;
                let (op, arg) = (b >> 5, b & 0x1F);
                self.spi = match op {
                    OP_RCR => Spi::ReadReg {
                        addr: arg,
                        dummy: arg < EIE && is_mac_mii(self.bank(), arg),
                    },
                    OP_RBM if arg == 0x1A => Spi::ReadBuf,
                    OP_WCR => Spi::WriteReg(arg),
                    OP_WBM if arg == 0x1A => Spi::WriteBuf,
                    OP_BFS | OP_BFC if arg < EIE && is_mac_mii(self.bank(), arg) => {
                        self.stat_bad_commands += 1;
                        Spi::Ignore
                    }
                    OP_BFS => Spi::SetBits(arg),
                    OP_BFC => Spi::ClearBits(arg),
                    OP_SRC if arg == 0x1F => {
                        self.reset();
                        Spi::Ignore
                    }
                    _ => {
                        self.stat_bad_commands += 1;
                        Spi::Ignore
                    }
                };
                0
            }
            Spi::ReadReg { addr, dummy: true } => {
                self.spi = Spi::ReadReg { addr, dummy: false };
                0
            }
            Spi::ReadReg { addr, dummy: false } => self.read_reg(addr),
            Spi::ReadBuf => self.read_buf(),
            Spi::WriteReg(addr) => {
                self.write_reg(addr, b);
                self.spi = Spi::Ignore;
                0
            }
            Spi::WriteBuf => {
                self.write_buf(b);
                0
            }
            Spi::SetBits(addr) => {
                let v = self.read_reg(addr) | b;
                self.write_reg(addr, v);
                self.spi = Spi::Ignore;
                0
            }
            Spi::ClearBits(addr) => {
                // EIR's PKTIF is not a stored bit: clear only what is stored.
                let cur = if addr == EIR {
                    self.eir
                } else {
                    self.read_reg(addr)
                };
                self.write_reg(addr, cur & !b);
                self.spi = Spi::Ignore;
                0
            }
            Spi::Ignore => 0,
        };
        out as u16
    }

    fn deselect(&mut self, now: u64) {
        self.run_to(now);
        self.spi = Spi::Opcode;
    }

    fn next_event(&self) -> Option<u64> {
        Enc28j60::next_event(self)
    }

    fn advance(&mut self, now: u64) {
        self.run_to(now);
    }

    fn fdt_node_with(&self, cs: u32, phandles: &BTreeMap<String, u32>) -> Option<FdtNode> {
        Some(self.node(cs, phandles))
    }

    fn peripheral_stats(&self, prefix: &str) -> Vec<Stat> {
        self.stats(prefix)
    }
}

#[cfg(test)]
mod tests;
