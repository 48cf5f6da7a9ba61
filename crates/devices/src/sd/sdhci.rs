//! The host controller: SD Host Controller Standard registers (version
//! 3.00) as the Synopsys DesignWare Mobile Storage Host Controller presents
//! them, with PIO through the buffer data port, SDMA and 32-bit ADMA2.
//!
//! **Time.** Everything the card bus does takes SD-clock time at the
//! divider the driver programmed in Clock Control: a command is 48 bits out,
//! 8 clocks of turnaround, the 48- or 136-bit response and 8 clocks before
//! the next; a data block is `512 × 8 / width + 16 (CRC) + 2` clocks on a
//! 1- or 4-bit bus. A read command's first block also waits the card's
//! access latency; a write ends with the card's programming busy time.
//! The controller buffers two blocks: on a read the card stops (read wait)
//! while both are full — PIO waits for the hart to drain them through the
//! data port, DMA moves each block to memory as it arrives. The hart runs
//! on meanwhile; completions come through the board's event queue.
//!
//! **Errors the guest sees.** A command the card does not answer (or sent
//! with the SD clock off or the bus unpowered) ends in Command Timeout; a
//! data command the card refused (out of range, write-protected) ends in
//! Data Timeout; a block the card failed to program in Data CRC Error (the
//! card's CRC status); an ADMA2 descriptor that is not valid, a table or
//! buffer outside memory, or a table whose length does not match the block
//! count in ADMA Error with the ADMA Error Status register set; an SDMA
//! buffer outside memory in Data End Bit Error (the standard defines no
//! SDMA bus error; this is the model's choice and the driver fails the
//! request with -EILSEQ). None of them reaches the host.

use std::collections::VecDeque;

use super::card::{DataPhase, Response, SdCard, BLOCK_LEN};
use crate::dma::DmaMemory;
use crate::{BadAccess, Clock, DevCtx, Stat, WriteEffect};
use hs_bus::IrqLine;

/// Register window size (the standard's 256 bytes and the DesignWare
/// vendor area behind them).
pub const SIZE: u64 = 0x1000;

// Register offsets.
pub const SDMA_ADDRESS: u64 = 0x00;
pub const BLOCK_SIZE: u64 = 0x04;
pub const BLOCK_COUNT: u64 = 0x06;
pub const ARGUMENT: u64 = 0x08;
pub const TRANSFER_MODE: u64 = 0x0c;
pub const COMMAND: u64 = 0x0e;
pub const RESPONSE: u64 = 0x10;
pub const BUFFER: u64 = 0x20;
pub const PRESENT_STATE: u64 = 0x24;
pub const HOST_CONTROL: u64 = 0x28;
pub const POWER_CONTROL: u64 = 0x29;
pub const CLOCK_CONTROL: u64 = 0x2c;
pub const TIMEOUT_CONTROL: u64 = 0x2e;
pub const SOFTWARE_RESET: u64 = 0x2f;
pub const INT_STATUS: u64 = 0x30;
pub const ERR_STATUS: u64 = 0x32;
pub const INT_ENABLE: u64 = 0x34;
pub const ERR_ENABLE: u64 = 0x36;
pub const INT_SIGNAL: u64 = 0x38;
pub const ERR_SIGNAL: u64 = 0x3a;
pub const AUTO_CMD_STATUS: u64 = 0x3c;
pub const HOST_CONTROL2: u64 = 0x3e;
pub const CAPABILITIES: u64 = 0x40;
pub const CAPABILITIES_1: u64 = 0x44;
pub const ADMA_ERROR: u64 = 0x54;
pub const ADMA_ADDRESS: u64 = 0x58;
/// DesignWare: offset of vendor area 1 (`P_VENDOR_SPECIFIC_AREA`).
pub const VENDOR_AREA1_PTR: u64 = 0xe8;
pub const VENDOR_AREA1: u64 = 0x500;
pub const SLOT_INT_STATUS: u64 = 0xfc;
pub const HOST_VERSION: u64 = 0xfe;

// Transfer mode bits.
pub const TRNS_DMA: u16 = 1 << 0;
pub const TRNS_BLK_CNT_EN: u16 = 1 << 1;
pub const TRNS_AUTO_CMD12: u16 = 1 << 2;
pub const TRNS_AUTO_CMD23: u16 = 1 << 3;
pub const TRNS_READ: u16 = 1 << 4;
pub const TRNS_MULTI: u16 = 1 << 5;

// Command register bits.
pub const CMD_RESP_MASK: u16 = 3;
pub const CMD_RESP_NONE: u16 = 0;
pub const CMD_RESP_LONG: u16 = 1;
pub const CMD_RESP_SHORT: u16 = 2;
pub const CMD_RESP_SHORT_BUSY: u16 = 3;
pub const CMD_DATA: u16 = 1 << 5;

// Present state bits.
pub const PS_CMD_INHIBIT: u32 = 1 << 0;
pub const PS_DATA_INHIBIT: u32 = 1 << 1;
pub const PS_DAT_ACTIVE: u32 = 1 << 2;
pub const PS_WRITE_ACTIVE: u32 = 1 << 8;
pub const PS_READ_ACTIVE: u32 = 1 << 9;
pub const PS_SPACE_AVAILABLE: u32 = 1 << 10;
pub const PS_DATA_AVAILABLE: u32 = 1 << 11;
pub const PS_CARD_PRESENT: u32 = 1 << 16;
pub const PS_CARD_STABLE: u32 = 1 << 17;
pub const PS_CARD_DETECT: u32 = 1 << 18;
pub const PS_WRITE_ENABLED: u32 = 1 << 19;
pub const PS_DAT_LEVEL: u32 = 0xf << 20;
pub const PS_CMD_LEVEL: u32 = 1 << 24;

// Normal interrupt status bits.
pub const INT_CMD_COMPLETE: u16 = 1 << 0;
pub const INT_XFER_COMPLETE: u16 = 1 << 1;
pub const INT_DMA: u16 = 1 << 3;
pub const INT_BUF_WRITE_READY: u16 = 1 << 4;
pub const INT_BUF_READ_READY: u16 = 1 << 5;
pub const INT_CARD_INSERT: u16 = 1 << 6;
pub const INT_ERROR: u16 = 1 << 15;

// Error interrupt status bits.
pub const ERR_CMD_TIMEOUT: u16 = 1 << 0;
pub const ERR_DATA_TIMEOUT: u16 = 1 << 4;
pub const ERR_DATA_CRC: u16 = 1 << 5;
pub const ERR_DATA_END_BIT: u16 = 1 << 6;
pub const ERR_AUTO_CMD: u16 = 1 << 8;
pub const ERR_ADMA: u16 = 1 << 9;

// Software reset bits.
pub const RESET_ALL: u8 = 1;
pub const RESET_CMD: u8 = 2;
pub const RESET_DATA: u8 = 4;

// Host control: 4-bit bus; DMA select.
pub const CTRL_4BIT: u8 = 1 << 1;
pub const CTRL_DMA_MASK: u8 = 3 << 3;
pub const CTRL_ADMA32: u8 = 2 << 3;
pub const CTRL_ADMA64: u8 = 3 << 3;

// Capabilities.
pub const CAN_DO_ADMA2: u32 = 1 << 19;
pub const CAN_DO_HISPD: u32 = 1 << 21;
pub const CAN_DO_SDMA: u32 = 1 << 22;
pub const CAN_VDD_330: u32 = 1 << 24;

// ADMA2 descriptor attributes.
pub const ADMA_VALID: u16 = 1 << 0;
pub const ADMA_END: u16 = 1 << 1;
pub const ADMA_INT: u16 = 1 << 2;
pub const ADMA_ACT_MASK: u16 = 3 << 4;
pub const ADMA_ACT_TRAN: u16 = 2 << 4;
pub const ADMA_ACT_LINK: u16 = 3 << 4;
/// ADMA Error Status: the state the engine stopped in, and length mismatch.
pub const ADMA_ERR_ST_FDS: u8 = 1;
pub const ADMA_ERR_ST_TFR: u8 = 3;
pub const ADMA_ERR_LEN_MISMATCH: u8 = 1 << 2;
/// Descriptors without data (NOP, LINK) the engine follows in a row before
/// it calls the table a loop and stops with an ADMA error.
pub const ADMA_MAX_EMPTY: u32 = 1024;

/// Blocks the controller's buffer holds.
pub const BUFFER_BLOCKS: usize = 2;

/// Card-side timing, in guest nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CardTiming {
    /// From a read command's response to its first block (the card's access time).
    pub read_latency_ns: u64,
    /// Programming busy after the last block of a write.
    pub write_busy_ns: u64,
    /// Busy after an erase (CMD38).
    pub erase_busy_ns: u64,
}

impl Default for CardTiming {
    fn default() -> Self {
        CardTiming {
            read_latency_ns: 100_000,
            write_busy_ns: 250_000,
            erase_busy_ns: 1_000_000,
        }
    }
}

/// Static facts of one controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SdhciConfig {
    /// The controller's base clock (the `core` clock), Hz.
    pub base_hz: u64,
    pub high_speed: bool,
    pub timing: CardTiming,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Dir {
    Read,
    Write,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Engine {
    Pio,
    Sdma {
        addr: u64,
        boundary: u64,
        paused: bool,
    },
    Adma(Adma),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Adma {
    /// Next descriptor to fetch.
    desc: u64,
    /// The current transfer descriptor's buffer and bytes left in it.
    addr: u64,
    left: u32,
    /// The current descriptor asks for an interrupt when it is done.
    int: bool,
    /// The descriptor with END was consumed.
    ended: bool,
    desc_size: u64,
}

/// Where a data phase's bytes come from (reads) or go (writes) on the card side.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum CardData {
    Bytes(Vec<u8>),
    Blocks { next: u64, multi: bool },
}

/// One data phase in progress.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Transfer {
    dir: Dir,
    card: CardData,
    blksz: usize,
    /// Blocks to move (None: until CMD12; only with block count disabled).
    total: Option<u32>,
    /// Blocks that have crossed the card bus.
    on_bus: u32,
    /// Blocks handed to the hart or memory (reads) / taken from them (writes).
    moved: u32,
    engine: Engine,
    /// PIO: blocks waiting in the buffer (reads: for the hart; writes: for the bus).
    buffer: VecDeque<Vec<u8>>,
    /// PIO: bytes of the front block already read / of the block being written.
    pio_pos: usize,
    pio_block: Vec<u8>,
    /// The block on the bus ends at this cycle.
    bus_until: Option<u64>,
    /// A write: the block on the bus.
    inflight: Vec<u8>,
    /// The bus may carry the next block from this cycle (command end, read
    /// latency, previous block).
    bus_from: u64,
    /// The bus stopped for want of room (reads) or data (writes); it starts
    /// again at the access that gives it.
    stalled: bool,
    /// SDMA paused at a boundary in the middle of a block: the bytes of a
    /// read still to store, or of a write already fetched.
    sdma_part: Vec<u8>,
    auto_cmd12: bool,
    /// Every block is across; transfer complete at this cycle (after the
    /// card's busy time and any auto CMD12).
    finishing: Option<u64>,
    /// The cycle the phase waits for (None: it waits for the hart — a
    /// buffer to drain or fill, an SDMA address — not for time).
    wake: Option<u64>,
}

/// A command on the CMD line.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct PendingCmd {
    done_at: u64,
    response: Response,
    /// The driver asked for no response: complete without one.
    no_response: bool,
    /// R1b: transfer complete after `busy_ns` more.
    busy_ns: u64,
}

/// The one event token: everything the controller waits for is re-derived
/// from its state at each call, so a stale call does nothing.
const TOKEN_DATA: u64 = 1;

#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Counters {
    commands: u64,
    cmd_timeouts: u64,
    data_timeouts: u64,
    crc_errors: u64,
    adma_errors: u64,
    dma_errors: u64,
    blocks_read: u64,
    blocks_written: u64,
    pio_bytes: u64,
    dma_bytes: u64,
    adma_descriptors: u64,
    sdma_pauses: u64,
    interrupts: u64,
    bus_cycles: u64,
    pio_misses: u64,
}

/// An SDHCI host controller with one slot.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Sdhci {
    name: String,
    cfg: SdhciConfig,
    #[serde(skip)]
    clock: Clock,
    #[serde(skip)]
    irq: Box<dyn IrqLine>,
    irq_level: bool,
    /// The card's state; its disk's overlay is saved beside it.
    card: Option<SdCard>,
    /// Plain-storage image of the standard registers; dynamic ones are computed.
    #[serde(with = "hs_snapshot::state::array")]
    regs: [u8; 0x100],
    #[serde(with = "hs_snapshot::state::array")]
    vendor: [u8; 0x100],
    nis: u16,
    eis: u16,
    resp: [u32; 4],
    cmd: Option<PendingCmd>,
    /// R1b busy (no data phase) ends at this cycle.
    busy_until: Option<u64>,
    data: Option<Transfer>,
    /// A data command the card refused: Data Timeout at this cycle.
    data_timeout_at: Option<u64>,
    adma_error: u8,
    counters: Counters,
    /// The cycle being served (bus-master accesses carry it).
    now: u64,
}

fn rd16(r: &[u8], off: u64) -> u16 {
    u16::from_le_bytes([r[off as usize], r[off as usize + 1]])
}
fn rd32(r: &[u8], off: u64) -> u32 {
    u32::from_le_bytes(r[off as usize..off as usize + 4].try_into().unwrap())
}

/// The controller's registers and data phase, the card's state, and the
/// card's disk overlay beside them.
impl crate::Persist for Sdhci {
    fn save(&self) -> Result<Vec<u8>, String> {
        let disk = match &self.card {
            Some(c) => Some(String::from_utf8(c.disk().save()?).map_err(|e| e.to_string())?),
            None => None,
        };
        hs_snapshot::state::encode(&(self, disk))
    }
    fn restore(&mut self, data: &[u8]) -> Result<(), String> {
        let (mut fresh, disk): (Sdhci, Option<String>) = hs_snapshot::state::decode(data)?;
        crate::same(
            "SD host controller",
            &(&fresh.name, fresh.cfg),
            &(&self.name, self.cfg),
        )?;
        match (self.card.as_mut(), fresh.card.as_mut(), disk) {
            (None, None, None) => {}
            (Some(mine), Some(theirs), Some(disk)) => {
                // The last step that can fail: nothing changed before it.
                mine.disk_mut().restore(disk.as_bytes())?;
                std::mem::swap(mine.disk_mut(), theirs.disk_mut());
            }
            _ => {
                return Err(format!(
                    "the snapshot's SD slot and this machine's `{}` differ in holding a card",
                    self.name
                ))
            }
        }
        std::mem::swap(&mut fresh.clock, &mut self.clock);
        std::mem::swap(&mut fresh.irq, &mut self.irq);
        *self = fresh;
        Ok(())
    }
}

impl Sdhci {
    pub fn new(
        name: &str,
        cfg: SdhciConfig,
        clock: Clock,
        irq: Box<dyn IrqLine>,
        card: Option<SdCard>,
    ) -> Self {
        Sdhci {
            name: name.to_string(),
            cfg,
            clock,
            irq,
            irq_level: false,
            card,
            regs: [0; 0x100],
            vendor: [0; 0x100],
            nis: 0,
            eis: 0,
            resp: [0; 4],
            cmd: None,
            busy_until: None,
            data: None,
            data_timeout_at: None,
            adma_error: 0,
            counters: Counters::default(),
            now: 0,
        }
    }

    pub fn card(&self) -> Option<&SdCard> {
        self.card.as_ref()
    }

    fn r16(&self, off: u64) -> u16 {
        rd16(&self.regs, off)
    }

    fn capabilities(&self) -> u32 {
        let base_mhz = (self.cfg.base_hz / 1_000_000).min(255) as u32;
        // Timeout clock 50 MHz (unit: MHz), base clock, 512-byte blocks,
        // ADMA2, SDMA, 3.3 V, high speed if configured.
        (1 << 7)
            | 50
            | (base_mhz << 8)
            | CAN_DO_ADMA2
            | CAN_DO_SDMA
            | CAN_VDD_330
            | if self.cfg.high_speed { CAN_DO_HISPD } else { 0 }
    }

    /// SD clock in Hz (0: stopped).
    fn sd_hz(&self) -> u64 {
        let c = self.r16(CLOCK_CONTROL);
        if c & 0b101 != 0b101 {
            return 0;
        }
        let n = ((c >> 8) & 0xff) as u64 | (((c >> 6) & 3) as u64) << 8;
        if n == 0 {
            self.cfg.base_hz
        } else {
            self.cfg.base_hz / (2 * n)
        }
    }

    fn bus_width(&self) -> u64 {
        if self.regs[HOST_CONTROL as usize] & CTRL_4BIT != 0 {
            4
        } else {
            1
        }
    }

    /// Core cycles for `clocks` SD clocks.
    fn sd_cycles(&self, clocks: u64) -> u64 {
        let hz = self.sd_hz().max(1);
        (clocks as u128 * self.clock.hz as u128).div_ceil(hz as u128) as u64
    }

    fn ns(&self, ns: u64) -> u64 {
        self.clock.ns_to_cycles(ns)
    }

    fn block_cycles(&self, bytes: usize) -> u64 {
        self.sd_cycles(bytes as u64 * 8 / self.bus_width() + 18)
    }

    /// Data timeout from Timeout Control: 2^(13+n) cycles of the 50 MHz timeout clock.
    fn data_timeout_cycles(&self) -> u64 {
        let n = (self.regs[TIMEOUT_CONTROL as usize] & 0xf).min(14) as u32;
        self.ns((1u64 << (13 + n)) * 20)
    }

    fn present_state(&self) -> u32 {
        let mut s = PS_DAT_LEVEL | PS_CMD_LEVEL;
        if self.card.is_some() {
            s |= PS_CARD_PRESENT | PS_CARD_STABLE | PS_CARD_DETECT | PS_WRITE_ENABLED;
        }
        if self.cmd.is_some() {
            s |= PS_CMD_INHIBIT;
        }
        if self.data.is_some() || self.busy_until.is_some() || self.data_timeout_at.is_some() {
            s |= PS_DATA_INHIBIT | PS_DAT_ACTIVE;
        }
        if let Some(t) = &self.data {
            match t.dir {
                Dir::Read => {
                    s |= PS_READ_ACTIVE;
                    if t.engine == Engine::Pio && !t.buffer.is_empty() {
                        s |= PS_DATA_AVAILABLE;
                    }
                }
                Dir::Write => {
                    s |= PS_WRITE_ACTIVE;
                    if self.pio_space(t) {
                        s |= PS_SPACE_AVAILABLE;
                    }
                }
            }
        }
        s
    }

    /// A PIO write may take another block from the hart.
    fn pio_space(&self, t: &Transfer) -> bool {
        t.engine == Engine::Pio
            && t.dir == Dir::Write
            && t.buffer.len() < BUFFER_BLOCKS
            && t.total.is_none_or(|n| t.moved < n)
    }

    fn raise(&mut self, bits: u16) {
        self.nis |= bits & self.r16(INT_ENABLE) & !INT_ERROR;
    }

    fn error(&mut self, bits: u16) {
        self.eis |= bits & self.r16(ERR_ENABLE);
    }

    fn update_irq(&mut self) {
        let nis = self.nis_value();
        let level = (nis & self.r16(INT_SIGNAL)) != 0 || (self.eis & self.r16(ERR_SIGNAL)) != 0;
        if level && !self.irq_level {
            self.counters.interrupts += 1;
        }
        if level != self.irq_level {
            self.irq_level = level;
            self.irq.set_level(level);
        }
    }

    fn nis_value(&self) -> u16 {
        self.nis | if self.eis != 0 { INT_ERROR } else { 0 }
    }

    fn read_reg(&self, off: u64) -> u8 {
        let word = |v: u32, base: u64| (v >> ((off - base) * 8)) as u8;
        match off {
            0x10..=0x1f => word(self.resp[((off - 0x10) / 4) as usize], off & !3),
            0x24..=0x27 => word(self.present_state(), PRESENT_STATE),
            0x30..=0x31 => word(self.nis_value() as u32, INT_STATUS),
            0x32..=0x33 => word(self.eis as u32, ERR_STATUS),
            0x40..=0x43 => word(self.capabilities(), CAPABILITIES),
            0x44..=0x47 => 0,
            0x54 => self.adma_error,
            0xe8..=0xeb => word(VENDOR_AREA1 as u32, VENDOR_AREA1_PTR),
            0xfc..=0xfd => word(self.irq_level as u32, SLOT_INT_STATUS),
            0xfe..=0xff => word(0x0002, HOST_VERSION), // spec 3.00, vendor 0
            0x2f => 0,                                 // resets complete at once
            _ => self.regs[off as usize],
        }
    }

    fn write_reg(&mut self, off: u64, v: u8) {
        match off {
            0x10..=0x1f | 0x24..=0x27 | 0x40..=0x4f | 0xe8..=0xeb | 0xfc..=0xff => {}
            0x30..=0x31 => self.nis &= !((v as u16) << ((off - INT_STATUS) * 8)),
            0x32..=0x33 => self.eis &= !((v as u16) << ((off - ERR_STATUS) * 8)),
            0x54 => self.adma_error = v & 7,
            // Clock control: the internal clock is stable as soon as it is enabled.
            0x2c => self.regs[0x2c] = (v & !2) | if v & 1 != 0 { 2 } else { 0 },
            _ => self.regs[off as usize] = v,
        }
    }

    /// Read `size` bytes at `off` of the data port.
    fn data_port_read(&mut self, size: u8) -> u64 {
        let mut v = 0u64;
        for i in 0..size as u64 {
            v |= (self.pio_read_byte() as u64) << (i * 8);
        }
        v
    }

    fn pio_read_byte(&mut self) -> u8 {
        let Some(t) = self.data.as_mut() else {
            self.counters.pio_misses += 1;
            return 0;
        };
        if t.engine != Engine::Pio || t.dir != Dir::Read || t.buffer.is_empty() {
            self.counters.pio_misses += 1;
            return 0;
        }
        let b = t.buffer[0][t.pio_pos];
        t.pio_pos += 1;
        self.counters.pio_bytes += 1;
        if t.pio_pos == t.blksz {
            t.buffer.pop_front();
            t.pio_pos = 0;
            t.moved += 1;
            if !t.buffer.is_empty() {
                self.raise(INT_BUF_READ_READY);
            }
        }
        b
    }

    fn pio_write_byte(&mut self, b: u8) {
        let space = self.data.as_ref().is_some_and(|t| self.pio_space(t));
        let Some(t) = self.data.as_mut().filter(|_| space) else {
            self.counters.pio_misses += 1;
            return;
        };
        t.pio_block.push(b);
        self.counters.pio_bytes += 1;
        if t.pio_block.len() == t.blksz {
            let blk = std::mem::take(&mut t.pio_block);
            t.buffer.push_back(blk);
            t.moved += 1;
        }
    }

    fn reset(&mut self, bits: u8) {
        if bits & RESET_ALL != 0 {
            self.regs = [0; 0x100];
            self.vendor = [0; 0x100];
            self.nis = 0;
            self.eis = 0;
            self.resp = [0; 4];
            self.adma_error = 0;
        }
        if bits & (RESET_ALL | RESET_CMD) != 0 {
            self.cmd = None;
            self.nis &= !INT_CMD_COMPLETE;
            self.eis &= !0x000f;
        }
        if bits & (RESET_ALL | RESET_DATA) != 0 {
            self.abort_data();
            self.nis &= !(INT_XFER_COMPLETE | INT_DMA | INT_BUF_READ_READY | INT_BUF_WRITE_READY);
            self.eis &= !0x0270;
        }
    }

    fn abort_data(&mut self) {
        if let Some(t) = self.data.take() {
            if let (Some(card), CardData::Blocks { multi, .. }) = (self.card.as_mut(), &t.card) {
                card.data_done(*multi);
            }
        }
        self.busy_until = None;
        self.data_timeout_at = None;
    }

    /// The driver wrote the command register's high byte: send the command.
    fn issue_command(&mut self, now: u64) {
        let cmdreg = self.r16(COMMAND);
        let index = (cmdreg >> 8) as u8 & 0x3f;
        let resp_type = cmdreg & CMD_RESP_MASK;
        let has_data = cmdreg & CMD_DATA != 0;
        let arg = rd32(&self.regs, ARGUMENT);
        self.counters.commands += 1;
        if self.cmd.is_some()
            || (has_data || resp_type == CMD_RESP_SHORT_BUSY) && self.dat_busy() && index != 12
        {
            // The driver issued a command while the line was inhibited: the
            // standard leaves it undefined; the controller drops it.
            self.error(ERR_CMD_TIMEOUT);
            self.counters.cmd_timeouts += 1;
            return;
        }
        let stopping_write = index == 12
            && self
                .card
                .as_ref()
                .is_some_and(|c| c.state() == super::card::State::Rcv);
        let powered = self.regs[POWER_CONTROL as usize] & 1 != 0;
        let clocked = powered && self.sd_hz() != 0;
        let reply = match (self.card.as_mut(), clocked) {
            (Some(card), true) => Some(card.command(index, arg)),
            _ => None,
        };
        let response = reply.as_ref().map_or(Response::None, |r| r.response);
        // A command sent without a response type (CMD0) completes once sent.
        let no_response = resp_type == CMD_RESP_NONE && clocked && self.card.is_some();
        let resp_bits = match response {
            Response::None => 64, // Ncr: the controller gives up after 64 clocks
            Response::Short(_) => 48,
            Response::Long(_) => 136,
        };
        let done_at = now + self.sd_cycles(48 + 8 + resp_bits + 8);
        let mut busy_ns = 0;
        if resp_type == CMD_RESP_SHORT_BUSY {
            busy_ns = match index {
                38 => self.cfg.timing.erase_busy_ns,
                12 if stopping_write => self.cfg.timing.write_busy_ns,
                _ => 0,
            };
        }
        // A CMD12 ends the data phase at once: the card stops sending.
        if index == 12 {
            self.data = None;
            self.data_timeout_at = None;
        }
        self.cmd = Some(PendingCmd {
            done_at: if no_response {
                now + self.sd_cycles(48 + 8)
            } else {
                done_at
            },
            response,
            no_response,
            busy_ns,
        });
        if resp_type == CMD_RESP_SHORT_BUSY && !matches!(response, Response::None) {
            self.busy_until = Some(u64::MAX); // set at the response
        }
        if has_data && !matches!(response, Response::None) {
            let data = reply.map(|r| r.data).unwrap_or(DataPhase::None);
            self.start_data(data, done_at);
        }
    }

    fn dat_busy(&self) -> bool {
        self.data.is_some() || self.busy_until.is_some() || self.data_timeout_at.is_some()
    }

    fn start_data(&mut self, phase: DataPhase, cmd_end: u64) {
        let tmode = self.r16(TRANSFER_MODE);
        let dir = if tmode & TRNS_READ != 0 {
            Dir::Read
        } else {
            Dir::Write
        };
        let blksz = (self.r16(BLOCK_SIZE) & 0xfff) as usize;
        let blkcnt = self.r16(BLOCK_COUNT) as u32;
        let (card, ok) = match phase {
            DataPhase::Bytes(b) => (CardData::Bytes(b), dir == Dir::Read),
            DataPhase::ReadBlocks { start, multi } => (
                CardData::Blocks { next: start, multi },
                dir == Dir::Read && blksz == BLOCK_LEN,
            ),
            DataPhase::WriteBlocks { start, multi } => (
                CardData::Blocks { next: start, multi },
                dir == Dir::Write && blksz == BLOCK_LEN,
            ),
            DataPhase::None => (CardData::Bytes(Vec::new()), false),
        };
        let multi = tmode & TRNS_MULTI != 0;
        let total = if !multi {
            Some(1)
        } else if tmode & TRNS_BLK_CNT_EN != 0 {
            Some(blkcnt)
        } else {
            None
        };
        if !ok || blksz == 0 || total == Some(0) {
            // The card sends nothing the controller can take: no data
            // arrives and the data timeout counter runs out.
            if let (Some(c), CardData::Blocks { multi, .. }) = (self.card.as_mut(), &card) {
                c.data_done(*multi);
            }
            self.data_timeout_at = Some(cmd_end + self.data_timeout_cycles());
            return;
        }
        let engine = if tmode & TRNS_DMA == 0 {
            Engine::Pio
        } else {
            match self.regs[HOST_CONTROL as usize] & CTRL_DMA_MASK {
                0 => {
                    let b = (self.r16(BLOCK_SIZE) >> 12) & 7;
                    Engine::Sdma {
                        addr: rd32(&self.regs, SDMA_ADDRESS) as u64,
                        boundary: 4096 << b,
                        paused: false,
                    }
                }
                sel => Engine::Adma(Adma {
                    desc: if sel == CTRL_ADMA64 {
                        u64::from_le_bytes(self.regs[0x58..0x60].try_into().unwrap())
                    } else {
                        rd32(&self.regs, ADMA_ADDRESS) as u64
                    },
                    addr: 0,
                    left: 0,
                    int: false,
                    ended: false,
                    desc_size: if sel == CTRL_ADMA64 { 12 } else { 8 },
                }),
            }
        };
        let auto_cmd12 = multi && tmode & (TRNS_AUTO_CMD12 | TRNS_AUTO_CMD23) == TRNS_AUTO_CMD12;
        if tmode & TRNS_AUTO_CMD23 != 0 && tmode & TRNS_AUTO_CMD12 == 0 {
            // Auto CMD23 needs a card that supports CMD23, which this card's
            // SCR does not offer: the controller reports the auto command failed.
            self.regs[AUTO_CMD_STATUS as usize] |= 1 << 1;
            self.error(ERR_AUTO_CMD);
        }
        let first_from = if dir == Dir::Read {
            cmd_end + self.ns(self.cfg.timing.read_latency_ns)
        } else {
            cmd_end
        };
        self.data = Some(Transfer {
            dir,
            card,
            blksz,
            total,
            on_bus: 0,
            moved: 0,
            engine,
            buffer: VecDeque::new(),
            pio_pos: 0,
            pio_block: Vec::new(),
            bus_until: None,
            inflight: Vec::new(),
            bus_from: first_from,
            stalled: false,
            sdma_part: Vec::new(),
            auto_cmd12,
            finishing: None,
            wake: Some(first_from),
        });
    }

    /// Complete the command on the CMD line if its time has come.
    fn finish_command(&mut self, now: u64) {
        let Some(c) = self.cmd else { return };
        if c.done_at > now {
            return;
        }
        self.cmd = None;
        match c.response {
            _ if c.no_response => self.raise(INT_CMD_COMPLETE),
            Response::None => {
                self.counters.cmd_timeouts += 1;
                self.error(ERR_CMD_TIMEOUT);
                // A command with data the card did not take: no data phase.
                self.busy_until = None;
            }
            Response::Short(v) => {
                self.resp[0] = v;
                self.raise(INT_CMD_COMPLETE);
            }
            Response::Long(v) => {
                // The registers hold bits 127:8 of the response (no CRC).
                let r = v >> 8;
                for i in 0..4 {
                    self.resp[i] = (r >> (32 * i)) as u32;
                }
                self.raise(INT_CMD_COMPLETE);
            }
        }
        if self.busy_until == Some(u64::MAX) {
            self.busy_until = Some(c.done_at + self.ns(c.busy_ns));
        }
        if self.data.is_some() {
            self.start_write_ready();
        }
    }

    /// A write's buffer is open for the hart as soon as the command is answered.
    fn start_write_ready(&mut self) {
        if let Some(t) = &self.data {
            if t.dir == Dir::Write && t.engine == Engine::Pio && t.moved == 0 && t.buffer.is_empty()
            {
                self.raise(INT_BUF_WRITE_READY);
            }
        }
    }
}

/// What one step of the data phase did.
enum Flow {
    /// Something changed; try again at the same time.
    Again,
    /// Nothing more until a later cycle or an access.
    Wait,
    /// The data phase is over (completed or failed).
    End,
}

/// Why a DMA move stopped.
enum DmaStop {
    /// SDMA reached its boundary: the bytes moved so far.
    Paused(usize),
    Adma(u8),
    Bus,
}

impl Sdhci {
    /// Run the data phase and the DAT-line timers up to `now`.
    fn run_data(&mut self, now: u64, mem: &mut Option<&mut dyn DmaMemory>) {
        if let Some(t) = self.busy_until {
            if t <= now {
                self.busy_until = None;
                self.raise(INT_XFER_COMPLETE);
            }
        }
        if let Some(t) = self.data_timeout_at {
            if t <= now {
                self.data_timeout_at = None;
                self.counters.data_timeouts += 1;
                self.error(ERR_DATA_TIMEOUT);
            }
        }
        if self.cmd.is_some_and(|c| c.done_at > now) {
            return; // the data phase starts with the response
        }
        // Bounded: each step moves at least one block or ends the phase.
        for _ in 0..(1 << 20) {
            let Some(mut t) = self.data.take() else {
                return;
            };
            let flow = self.step(&mut t, now, mem);
            match flow {
                Flow::End => {
                    if let (Some(card), CardData::Blocks { multi, .. }) =
                        (self.card.as_mut(), &t.card)
                    {
                        card.data_done(*multi);
                    }
                    return;
                }
                Flow::Wait => {
                    self.data = Some(t);
                    return;
                }
                Flow::Again => self.data = Some(t),
            }
        }
    }

    fn fail(&mut self, err: u16) -> Flow {
        self.error(err);
        Flow::End
    }

    fn adma_fail(&mut self, state: u8) -> Flow {
        self.adma_error = state;
        self.counters.adma_errors += 1;
        self.fail(ERR_ADMA)
    }

    fn step(&mut self, t: &mut Transfer, now: u64, mem: &mut Option<&mut dyn DmaMemory>) -> Flow {
        // A block on the bus arrives (read) or has been sent (write).
        t.wake = None;
        if let Some(end) = t.bus_until {
            if end > now {
                t.wake = Some(end);
                return Flow::Wait;
            }
            t.bus_until = None;
            t.bus_from = end;
            t.on_bus += 1;
            return match t.dir {
                Dir::Read => self.block_arrived(t, mem),
                Dir::Write => {
                    let blk = std::mem::take(&mut t.inflight);
                    if let CardData::Blocks { next, .. } = &mut t.card {
                        let lba = *next;
                        *next += 1;
                        let ok = blk.len() == BLOCK_LEN
                            && self
                                .card
                                .as_mut()
                                .is_some_and(|c| c.write_block(lba, blk[..].try_into().unwrap()));
                        if !ok {
                            self.counters.crc_errors += 1;
                            return self.fail(ERR_DATA_CRC);
                        }
                    }
                    self.counters.blocks_written += 1;
                    if t.engine == Engine::Pio
                        && self.pio_space(t)
                        && t.buffer.len() == BUFFER_BLOCKS - 1
                    {
                        // The buffer had been full: the hart may write again.
                        self.raise(INT_BUF_WRITE_READY);
                    }
                    Flow::Again
                }
            };
        }
        if let Some(f) = t.finishing {
            if f > now {
                t.wake = Some(f);
                return Flow::Wait;
            }
            self.raise(INT_XFER_COMPLETE);
            return Flow::End;
        }
        // SDMA paused in the middle of a read block: store the rest first.
        if t.dir == Dir::Read && !t.sdma_part.is_empty() {
            if matches!(t.engine, Engine::Sdma { paused: true, .. }) {
                t.stalled = true;
                return Flow::Wait;
            }
            let part = std::mem::take(&mut t.sdma_part);
            return match self.dma_store(t, &part, mem) {
                Ok(()) => {
                    t.moved += 1;
                    Flow::Again
                }
                Err(e) => self.dma_stopped(t, e, &part),
            };
        }
        let all_across = t.total.is_some_and(|n| t.on_bus >= n);
        if all_across {
            let drained = t.total.is_some_and(|n| t.moved >= n);
            if !drained {
                return Flow::Wait; // PIO: the hart still has blocks to read
            }
            let mut end = t.bus_from;
            if t.dir == Dir::Read && t.engine == Engine::Pio {
                end = end.max(now);
            }
            let multi = matches!(t.card, CardData::Blocks { multi: true, .. });
            if t.dir == Dir::Write && (!multi || t.auto_cmd12) {
                end += self.ns(self.cfg.timing.write_busy_ns);
            }
            if t.auto_cmd12 {
                end += self.sd_cycles(48 + 8 + 48 + 8);
                if let Some(card) = self.card.as_mut() {
                    if let Response::Short(v) = card.command(12, 0).response {
                        self.resp[3] = v;
                    }
                }
            }
            t.finishing = Some(end);
            return Flow::Again;
        }
        // Start the next block on the bus.
        if t.bus_from > now {
            t.wake = Some(t.bus_from);
            return Flow::Wait;
        }
        match t.dir {
            Dir::Read => {
                let room = match t.engine {
                    Engine::Pio => t.buffer.len() < BUFFER_BLOCKS,
                    Engine::Sdma { paused, .. } => !paused,
                    Engine::Adma(_) => true,
                };
                if !room {
                    t.stalled = true;
                    return Flow::Wait;
                }
            }
            Dir::Write => {
                let block = match t.engine {
                    Engine::Pio => t.buffer.pop_front(),
                    _ => match self.dma_fetch(t, mem) {
                        Ok(b) => b,
                        Err(f) => return f,
                    },
                };
                let Some(block) = block else {
                    t.stalled = true;
                    return Flow::Wait;
                };
                t.inflight = block;
            }
        }
        let start = if std::mem::take(&mut t.stalled) {
            t.bus_from.max(now)
        } else {
            t.bus_from
        };
        let cycles = self.block_cycles(t.blksz);
        self.counters.bus_cycles += cycles;
        t.bus_until = Some(start + cycles);
        Flow::Again
    }

    /// A read block reached the controller: into the buffer (PIO) or memory (DMA).
    fn block_arrived(&mut self, t: &mut Transfer, mem: &mut Option<&mut dyn DmaMemory>) -> Flow {
        let blk = match &mut t.card {
            CardData::Bytes(b) => {
                let mut blk = vec![0u8; t.blksz];
                let n = b.len().min(t.blksz);
                blk[..n].copy_from_slice(&b[..n]);
                b.drain(..n);
                blk
            }
            CardData::Blocks { next, .. } => {
                let mut blk = [0u8; BLOCK_LEN];
                let lba = *next;
                *next += 1;
                if !self
                    .card
                    .as_mut()
                    .is_some_and(|c| c.read_block(lba, &mut blk))
                {
                    // The card stops sending: the controller's data timeout.
                    self.counters.data_timeouts += 1;
                    return self.fail(ERR_DATA_TIMEOUT);
                }
                blk.to_vec()
            }
        };
        self.counters.blocks_read += 1;
        match t.engine {
            Engine::Pio => {
                t.buffer.push_back(blk);
                if t.buffer.len() == 1 {
                    self.raise(INT_BUF_READ_READY);
                }
                Flow::Again
            }
            _ => match self.dma_store(t, &blk, mem) {
                Ok(()) => {
                    t.moved += 1;
                    Flow::Again
                }
                Err(e) => self.dma_stopped(t, e, &blk),
            },
        }
    }

    fn dma_stopped(&mut self, t: &mut Transfer, e: DmaStop, data: &[u8]) -> Flow {
        match e {
            DmaStop::Paused(n) => {
                t.sdma_part = data[n..].to_vec();
                if t.sdma_part.is_empty() {
                    t.moved += 1; // paused exactly at the block's end
                }
                t.stalled = true;
                self.counters.sdma_pauses += 1;
                self.raise(INT_DMA);
                Flow::Wait
            }
            DmaStop::Adma(state) => self.adma_fail(state),
            DmaStop::Bus => {
                self.counters.dma_errors += 1;
                self.fail(ERR_DATA_END_BIT)
            }
        }
    }

    /// Whether more of the transfer follows `t.moved` blocks plus `extra` bytes.
    fn more_follows(t: &Transfer, moved_bytes: usize) -> bool {
        match t.total {
            Some(n) => (t.moved as usize) * t.blksz + moved_bytes < n as usize * t.blksz,
            None => true,
        }
    }

    /// Store read data through the DMA engine.
    fn dma_store(
        &mut self,
        t: &mut Transfer,
        data: &[u8],
        mem: &mut Option<&mut dyn DmaMemory>,
    ) -> Result<(), DmaStop> {
        let Some(m) = mem.as_deref_mut() else {
            return Err(DmaStop::Bus);
        };
        let mut done = 0;
        while done < data.len() {
            let (addr, len) = self.dma_span(t, m, data.len() - done, done)?;
            m.dma_write(addr, &data[done..done + len], self.now)
                .map_err(|_| match t.engine {
                    Engine::Adma(_) => DmaStop::Adma(ADMA_ERR_ST_TFR),
                    _ => DmaStop::Bus,
                })?;
            self.counters.dma_bytes += len as u64;
            done += len;
            self.dma_advance(t, len, done, data.len())?;
        }
        Ok(())
    }

    /// Fetch one write block through the DMA engine (None: paused, wait).
    fn dma_fetch(
        &mut self,
        t: &mut Transfer,
        mem: &mut Option<&mut dyn DmaMemory>,
    ) -> Result<Option<Vec<u8>>, Flow> {
        if matches!(t.engine, Engine::Sdma { paused: true, .. }) {
            return Ok(None);
        }
        let Some(m) = mem.as_deref_mut() else {
            self.counters.dma_errors += 1;
            return Err(self.fail(ERR_DATA_END_BIT));
        };
        let mut blk = std::mem::take(&mut t.sdma_part);
        while blk.len() < t.blksz {
            let want = t.blksz - blk.len();
            let now = self.now;
            let step = self
                .dma_span(t, m, want, blk.len())
                .and_then(|(addr, len)| {
                    let mut buf = vec![0u8; len];
                    m.dma_read(addr, &mut buf, now)
                        .map_err(|_| match t.engine {
                            Engine::Adma(_) => DmaStop::Adma(ADMA_ERR_ST_TFR),
                            _ => DmaStop::Bus,
                        })?;
                    Ok(buf)
                });
            let buf = match step {
                Ok(b) => b,
                Err(e) => return Err(self.dma_stopped(t, e, &[])),
            };
            let len = buf.len();
            blk.extend_from_slice(&buf);
            self.counters.dma_bytes += len as u64;
            let have = blk.len();
            if let Err(e) = self.dma_advance(t, len, have, t.blksz) {
                if let DmaStop::Paused(_) = e {
                    t.sdma_part = blk;
                    t.stalled = true;
                    self.counters.sdma_pauses += 1;
                    self.raise(INT_DMA);
                    return Ok(None);
                }
                return Err(self.dma_stopped(t, e, &[]));
            }
        }
        t.moved += 1;
        Ok(Some(blk))
    }

    /// The memory span the engine moves next: at most `want` bytes.
    fn dma_span(
        &mut self,
        t: &mut Transfer,
        m: &mut dyn DmaMemory,
        want: usize,
        _done: usize,
    ) -> Result<(u64, usize), DmaStop> {
        match &mut t.engine {
            Engine::Pio => Err(DmaStop::Bus),
            Engine::Sdma { addr, boundary, .. } => {
                let to_boundary = (*boundary - (*addr % *boundary)) as usize;
                Ok((*addr, want.min(to_boundary)))
            }
            Engine::Adma(a) => {
                let mut empty = 0;
                while a.left == 0 {
                    if a.ended {
                        return Err(DmaStop::Adma(ADMA_ERR_ST_TFR | ADMA_ERR_LEN_MISMATCH));
                    }
                    empty += 1;
                    if empty > ADMA_MAX_EMPTY {
                        return Err(DmaStop::Adma(ADMA_ERR_ST_FDS));
                    }
                    let mut d = [0u8; 12];
                    let n = a.desc_size as usize;
                    m.dma_read(a.desc, &mut d[..n], self.now)
                        .map_err(|_| DmaStop::Adma(ADMA_ERR_ST_FDS))?;
                    self.counters.adma_descriptors += 1;
                    let attr = u16::from_le_bytes([d[0], d[1]]);
                    let len = u16::from_le_bytes([d[2], d[3]]);
                    let addr = if n == 12 {
                        u64::from_le_bytes(d[4..12].try_into().unwrap())
                    } else {
                        u32::from_le_bytes(d[4..8].try_into().unwrap()) as u64
                    };
                    if attr & ADMA_VALID == 0 {
                        return Err(DmaStop::Adma(ADMA_ERR_ST_FDS));
                    }
                    a.ended = attr & ADMA_END != 0;
                    match attr & ADMA_ACT_MASK {
                        ADMA_ACT_TRAN => {
                            a.addr = addr;
                            a.left = if len == 0 { 65536 } else { len as u32 };
                            a.int = attr & ADMA_INT != 0;
                            a.desc += n as u64;
                        }
                        ADMA_ACT_LINK => a.desc = addr,
                        _ => {
                            a.desc += n as u64;
                            if attr & ADMA_INT != 0 {
                                self.nis |= INT_DMA & rd16(&self.regs, INT_ENABLE);
                            }
                        }
                    }
                }
                Ok((a.addr, want.min(a.left as usize)))
            }
        }
    }

    /// `len` bytes moved at the engine's address; `done` of `whole` in this block.
    fn dma_advance(
        &mut self,
        t: &mut Transfer,
        len: usize,
        done: usize,
        whole: usize,
    ) -> Result<(), DmaStop> {
        let more = Self::more_follows(t, done) || done < whole;
        match &mut t.engine {
            Engine::Pio => Ok(()),
            Engine::Sdma {
                addr,
                boundary,
                paused,
            } => {
                *addr += len as u64;
                if *addr % *boundary == 0 && more {
                    *paused = true;
                    return Err(DmaStop::Paused(done));
                }
                Ok(())
            }
            Engine::Adma(a) => {
                a.addr += len as u64;
                a.left -= len as u32;
                if a.left == 0 && a.int {
                    self.nis |= INT_DMA & rd16(&self.regs, INT_ENABLE);
                }
                Ok(())
            }
        }
    }

    fn next_event(&self) -> Option<u64> {
        let mut times = vec![
            self.cmd.map(|c| c.done_at),
            self.busy_until.filter(|&t| t != u64::MAX),
            self.data_timeout_at,
        ];
        if let Some(t) = &self.data {
            times.push(t.wake);
        }
        times.into_iter().flatten().min()
    }

    /// Bring everything up to `ctx.now`, set the interrupt line and ask to
    /// be called at the next thing that happens.
    fn pump(&mut self, ctx: &mut DevCtx) {
        let now = ctx.now;
        self.now = now;
        self.finish_command(now);
        {
            let mut mem: Option<&mut dyn DmaMemory> = match ctx.master.as_mut() {
                Some(m) => Some(&mut **m),
                None => None,
            };
            self.run_data(now, &mut mem);
        }
        // A command completing may open a write's buffer.
        self.finish_command(now);
        self.update_irq();
        if let Some(at) = self.next_event() {
            ctx.events.schedule(at.max(now + 1), TOKEN_DATA);
        }
    }

    fn stats_list(&self) -> Vec<Stat> {
        let n = &self.name;
        let c = &self.counters;
        let mut v = vec![
            Stat::new(
                format!("{n}.commands"),
                c.commands,
                "commands the driver issued",
            ),
            Stat::new(
                format!("{n}.cmd_timeouts"),
                c.cmd_timeouts,
                "commands ended in Command Timeout (no response)",
            ),
            Stat::new(
                format!("{n}.data_timeouts"),
                c.data_timeouts,
                "data phases ended in Data Timeout",
            ),
            Stat::new(
                format!("{n}.crc_errors"),
                c.crc_errors,
                "write blocks the card did not program (Data CRC Error)",
            ),
            Stat::new(
                format!("{n}.adma_errors"),
                c.adma_errors,
                "transfers stopped by an ADMA error",
            ),
            Stat::new(
                format!("{n}.dma_errors"),
                c.dma_errors,
                "SDMA transfers stopped by a bus error",
            ),
            Stat::new(
                format!("{n}.blocks_read"),
                c.blocks_read,
                "blocks the card sent",
            ),
            Stat::new(
                format!("{n}.blocks_written"),
                c.blocks_written,
                "blocks sent to the card",
            ),
            Stat::new(
                format!("{n}.pio_bytes"),
                c.pio_bytes,
                "bytes through the buffer data port",
            ),
            Stat::new(
                format!("{n}.pio_misses"),
                c.pio_misses,
                "data port accesses with no data or room (read 0 / dropped)",
            ),
            Stat::new(
                format!("{n}.dma_bytes"),
                c.dma_bytes,
                "bytes moved by SDMA or ADMA2",
            ),
            Stat::new(
                format!("{n}.adma_descriptors"),
                c.adma_descriptors,
                "ADMA2 descriptors fetched",
            ),
            Stat::new(
                format!("{n}.sdma_pauses"),
                c.sdma_pauses,
                "SDMA stops at a buffer boundary",
            ),
            Stat::new(
                format!("{n}.interrupts"),
                c.interrupts,
                "rising edges of the interrupt line",
            ),
            Stat::new(
                format!("{n}.bus_cycles"),
                c.bus_cycles,
                "core cycles the DAT lines carried blocks",
            ),
            Stat::new(
                format!("{n}.sd_hz"),
                self.sd_hz(),
                "SD clock the driver set, Hz",
            ),
            Stat::new(
                format!("{n}.bus_width"),
                self.bus_width(),
                "DAT lines the driver set",
            ),
        ];
        if let Some(card) = &self.card {
            let k = &card.counters;
            v.extend([
                Stat::new(
                    format!("{n}.card.commands"),
                    k.commands,
                    "commands the card received",
                ),
                Stat::new(
                    format!("{n}.card.app_commands"),
                    k.app_commands,
                    "of which application commands (after CMD55)",
                ),
                Stat::new(
                    format!("{n}.card.unanswered"),
                    k.unanswered,
                    "commands the card did not answer",
                ),
                Stat::new(
                    format!("{n}.card.blocks_read"),
                    k.blocks_read,
                    "blocks read from the card's image",
                ),
                Stat::new(
                    format!("{n}.card.blocks_written"),
                    k.blocks_written,
                    "blocks written to the card's image (overlay)",
                ),
                Stat::new(
                    format!("{n}.card.erases"),
                    k.erases,
                    "erase commands (CMD38) done",
                ),
                Stat::new(
                    format!("{n}.card.io_errors"),
                    k.io_errors,
                    "host I/O errors on the image",
                ),
                Stat::new(
                    format!("{n}.card.overlay_fnv1a"),
                    card.disk().overlay_fnv1a(),
                    "FNV-1a of the copy-on-write overlay (0: nothing written)",
                ),
            ]);
        }
        v
    }
}

impl Sdhci {
    /// Register read (`size` 1, 2, 4 or 8 bytes at `off`).
    pub fn mmio_read(&mut self, ctx: &mut DevCtx, off: u64, size: u8) -> Result<u64, BadAccess> {
        if !crate::size_ok(size) || off.checked_add(size as u64).is_none_or(|e| e > SIZE) {
            return Err(BadAccess);
        }
        self.pump(ctx);
        let v = if (BUFFER..BUFFER + 4).contains(&off) {
            let v = self.data_port_read(size);
            self.note_room(ctx.now);
            v
        } else {
            let mut v = 0u64;
            for i in 0..size as u64 {
                let o = off + i;
                let b = if o < 0x100 {
                    self.read_reg(o)
                } else if (VENDOR_AREA1..VENDOR_AREA1 + 0x100).contains(&o) {
                    self.vendor[(o - VENDOR_AREA1) as usize]
                } else {
                    0
                };
                v |= (b as u64) << (i * 8);
            }
            v
        };
        self.pump(ctx);
        Ok(v)
    }

    /// Register write.
    pub fn mmio_write(
        &mut self,
        ctx: &mut DevCtx,
        off: u64,
        size: u8,
        val: u64,
    ) -> Result<WriteEffect, BadAccess> {
        if !crate::size_ok(size) || off.checked_add(size as u64).is_none_or(|e| e > SIZE) {
            return Err(BadAccess);
        }
        self.pump(ctx);
        if (BUFFER..BUFFER + 4).contains(&off) {
            for i in 0..size as u64 {
                self.pio_write_byte((val >> (i * 8)) as u8);
            }
            self.note_room(ctx.now);
        } else {
            let mut touched_cmd = false;
            let mut touched_sdma = false;
            let mut reset = 0u8;
            let was_powered = self.regs[POWER_CONTROL as usize] & 1 != 0;
            for i in 0..size as u64 {
                let o = off + i;
                let b = (val >> (i * 8)) as u8;
                if o < 0x100 {
                    self.write_reg(o, b);
                    touched_cmd |= o == COMMAND + 1;
                    touched_sdma |= o == SDMA_ADDRESS + 3;
                    if o == SOFTWARE_RESET {
                        reset = b;
                    }
                } else if (VENDOR_AREA1..VENDOR_AREA1 + 0x100).contains(&o) {
                    self.vendor[(o - VENDOR_AREA1) as usize] = b;
                }
            }
            if reset != 0 {
                self.reset(reset);
            }
            if was_powered && self.regs[POWER_CONTROL as usize] & 1 == 0 {
                // Bus power off: the card loses its state.
                if let Some(c) = self.card.as_mut() {
                    c.power_off();
                }
                self.abort_data();
            }
            if touched_sdma {
                self.resume_sdma(ctx.now);
            }
            if touched_cmd {
                self.issue_command(ctx.now);
            }
        }
        self.pump(ctx);
        Ok(WriteEffect::default())
    }

    /// The hart took a block out of the buffer or put one in: a stalled bus
    /// goes on from now.
    fn note_room(&mut self, now: u64) {
        if let Some(t) = self.data.as_mut() {
            if t.stalled {
                t.bus_from = t.bus_from.max(now);
            }
        }
    }

    /// The driver wrote the SDMA address's top byte: a paused SDMA goes on there.
    fn resume_sdma(&mut self, now: u64) {
        let new = rd32(&self.regs, SDMA_ADDRESS) as u64;
        if let Some(t) = self.data.as_mut() {
            if let Engine::Sdma { addr, paused, .. } = &mut t.engine {
                if *paused {
                    *addr = new;
                    *paused = false;
                    t.bus_from = t.bus_from.max(now);
                }
            }
        }
    }

    pub fn on_event(&mut self, ctx: &mut DevCtx) {
        self.pump(ctx);
    }

    pub fn stats(&self) -> Vec<Stat> {
        self.stats_list()
    }

    /// The interrupt line's level.
    pub fn irq_level(&self) -> bool {
        self.irq_level
    }
}
