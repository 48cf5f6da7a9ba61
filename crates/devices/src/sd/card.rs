//! An SDHC/SDXC memory card on an SD bus: the card side of every command
//! the Linux MMC core sends an SD card (Physical Layer Simplified
//! Specification 3.01, sections 4.7 and 5), with its registers (OCR, CID,
//! CSD 2.0, SCR, SD status, switch status) and its data in a [`Disk`].
//!
//! The card only answers; it keeps no time. The host controller
//! ([`super::sdhci`]) asks it for a [`Reply`] to each command and moves the
//! data blocks a reply announces through [`SdCard::read_data`] and
//! [`SdCard::write_block`], charging bus time itself.
//!
//! A command the card does not know, or that is not legal in its state,
//! gets no response (the host sees a command timeout), as on real cards;
//! SDIO (CMD5, CMD52) and MMC (CMD1) probes end the same way, which is how
//! the Linux core learns this is an SD memory card. A read or write of
//! blocks past the end sets `OUT_OF_RANGE` in the response and sends no
//! data (the host sees a data timeout).

use crate::disk::Disk;

/// Bytes of a data block (SDHC/SDXC: fixed).
pub const BLOCK_LEN: usize = 512;
/// Capacity granule of a CSD 2.0 card: C_SIZE counts 512 KiB units.
pub const CAPACITY_UNIT: u64 = 512 * 1024;

// Card status (R1) bits.
pub const R1_OUT_OF_RANGE: u32 = 1 << 31;
pub const R1_ADDRESS_ERROR: u32 = 1 << 30;
pub const R1_BLOCK_LEN_ERROR: u32 = 1 << 29;
pub const R1_ERASE_SEQ_ERROR: u32 = 1 << 28;
pub const R1_WP_VIOLATION: u32 = 1 << 26;
pub const R1_ILLEGAL_COMMAND: u32 = 1 << 22;
pub const R1_ERROR: u32 = 1 << 19;
pub const R1_READY_FOR_DATA: u32 = 1 << 8;
pub const R1_APP_CMD: u32 = 1 << 5;

/// OCR: card power-up done (busy bit clear), card capacity status (SDHC),
/// and the 2.7–3.6 V window.
pub const OCR_READY: u32 = 1 << 31;
pub const OCR_CCS: u32 = 1 << 30;
pub const OCR_VOLTAGES: u32 = 0x00ff_8000;

/// Card states (`CURRENT_STATE` of R1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum State {
    Idle = 0,
    Ready = 1,
    Ident = 2,
    Stby = 3,
    Tran = 4,
    Data = 5,
    Rcv = 6,
    Prg = 7,
    Dis = 8,
}

/// A response as the card sends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Response {
    /// No response: the host's command times out.
    None,
    /// A 48-bit response: its 32 content bits (R1, R3, R6, R7).
    Short(u32),
    /// A 136-bit response (R2): bits 127:0 with the CRC in bits 7:1.
    Long(u128),
}

/// The data phase a command starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataPhase {
    None,
    /// The card sends these bytes (a register read: SCR, SD status, switch status).
    Bytes(Vec<u8>),
    /// The card sends 512-byte blocks from this block address on.
    ReadBlocks {
        start: u64,
        multi: bool,
    },
    /// The card takes 512-byte blocks for this block address on.
    WriteBlocks {
        start: u64,
        multi: bool,
    },
}

/// The card's answer to one command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub response: Response,
    /// R1b: the card holds DAT0 busy after the response (erase, stop, select).
    pub busy: bool,
    pub data: DataPhase,
}

impl Reply {
    fn none() -> Self {
        Reply {
            response: Response::None,
            busy: false,
            data: DataPhase::None,
        }
    }
    fn short(v: u32) -> Self {
        Reply {
            response: Response::Short(v),
            busy: false,
            data: DataPhase::None,
        }
    }
}

/// Counters the host reports as statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CardCounters {
    pub commands: u64,
    pub app_commands: u64,
    pub unanswered: u64,
    pub blocks_read: u64,
    pub blocks_written: u64,
    pub erases: u64,
    pub io_errors: u64,
}

/// An SD memory card.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct SdCard {
    /// Saved by its owner beside the card ([`Disk::save`]).
    #[serde(skip)]
    disk: Disk,
    read_only: bool,
    state: State,
    rca: u16,
    /// The previous command was CMD55: this one is an application command.
    app: bool,
    /// ACMD41 calls with a voltage window before the card reports ready
    /// (real cards take a few; Linux polls).
    power_up_polls: u32,
    ready: bool,
    wide_bus: bool,
    high_speed: bool,
    erase_start: Option<u64>,
    erase_end: Option<u64>,
    /// Blocks written by the last write command (ACMD22).
    written: u32,
    /// Status bits reported once by the next response (errors of the last command).
    pending_status: u32,
    cid: u128,
    pub counters: CardCounters,
}

/// Bits `[hi:lo]` of `v` set to `val`.
fn put(v: &mut u128, hi: u32, lo: u32, val: u128) {
    let width = hi - lo + 1;
    let mask = if width == 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    };
    *v = (*v & !(mask << lo)) | ((val & mask) << lo);
}

/// CRC7 of a register's first 15 bytes, shifted into bits 7:1 with the end bit.
fn crc7_byte(reg: u128) -> u128 {
    let bytes = reg.to_be_bytes();
    let mut crc: u8 = 0;
    for &b in &bytes[..15] {
        for i in (0..8).rev() {
            let bit = (b >> i) & 1;
            let top = (crc >> 6) & 1;
            crc = (crc << 1) & 0x7f;
            if bit ^ top == 1 {
                crc ^= 0x09;
            }
        }
    }
    ((crc as u128) << 1) | 1
}

impl SdCard {
    /// A card holding `disk`, whose size must be a whole number of 512 KiB
    /// (CSD 2.0 counts capacity in those units). `serial` is the CID's PSN.
    pub fn new(disk: Disk, read_only: bool, serial: u32) -> Result<SdCard, String> {
        if !disk.len().is_multiple_of(CAPACITY_UNIT) {
            return Err(format!(
                "the SD card image `{}` is {} bytes; an SDHC card's capacity is a whole number of 512 KiB (pad it, e.g. with `truncate -s`)",
                disk.path().display(),
                disk.len()
            ));
        }
        let mut cid = 0u128;
        put(&mut cid, 127, 120, 0x48); // MID
        put(&mut cid, 119, 104, u16::from_be_bytes(*b"HS") as u128); // OID
        put(
            &mut cid,
            103,
            64,
            u64::from_be_bytes(*b"\0\0\0HSSD0") as u128,
        ); // PNM
        put(&mut cid, 63, 56, 0x10); // PRV 1.0
        put(&mut cid, 55, 24, serial as u128); // PSN
        put(&mut cid, 19, 8, (26 << 4) | 11); // MDT: 2026-11
        cid |= crc7_byte(cid);
        Ok(SdCard {
            disk,
            read_only,
            state: State::Idle,
            rca: 0,
            app: false,
            power_up_polls: 2,
            ready: false,
            wide_bus: false,
            high_speed: false,
            erase_start: None,
            erase_end: None,
            written: 0,
            pending_status: 0,
            cid,
            counters: CardCounters::default(),
        })
    }

    pub fn disk(&self) -> &Disk {
        &self.disk
    }
    pub(crate) fn disk_mut(&mut self) -> &mut Disk {
        &mut self.disk
    }
    pub fn state(&self) -> State {
        self.state
    }
    /// The card drives DAT[3:0] (ACMD6 chose 4 bits).
    pub fn wide_bus(&self) -> bool {
        self.wide_bus
    }
    /// CMD6 switched the card to high speed (50 MHz).
    pub fn high_speed(&self) -> bool {
        self.high_speed
    }
    /// 512-byte blocks of the card.
    pub fn blocks(&self) -> u64 {
        self.disk.len() / BLOCK_LEN as u64
    }

    /// Card status for R1: the current state, ready-for-data, APP_CMD and
    /// the error bits of the last command (cleared once reported).
    fn status(&mut self) -> u32 {
        let s = ((self.state as u32) << 9)
            | R1_READY_FOR_DATA
            | if self.app { R1_APP_CMD } else { 0 }
            | self.pending_status;
        self.pending_status = 0;
        s
    }

    pub fn csd(&self) -> u128 {
        let mut csd = 0u128;
        put(&mut csd, 127, 126, 1); // CSD_STRUCTURE 2.0
        put(&mut csd, 119, 112, 0x0e); // TAAC 1 ms
        put(&mut csd, 111, 104, 0); // NSAC
        put(&mut csd, 103, 96, if self.high_speed { 0x5a } else { 0x32 }); // TRAN_SPEED
        put(&mut csd, 95, 84, 0x5b5); // CCC: classes 0, 2, 4, 5, 7, 8, 10
        put(&mut csd, 83, 80, 9); // READ_BL_LEN 512
        let c_size = (self.disk.len() / CAPACITY_UNIT).saturating_sub(1);
        put(&mut csd, 69, 48, c_size as u128);
        put(&mut csd, 46, 46, 1); // ERASE_BLK_EN: erase in 512-byte units
        put(&mut csd, 45, 39, 0x7f); // SECTOR_SIZE
        put(&mut csd, 28, 26, 2); // R2W_FACTOR
        put(&mut csd, 25, 22, 9); // WRITE_BL_LEN 512
        if self.read_only {
            put(&mut csd, 12, 12, 1); // TMP_WRITE_PROTECT
        }
        csd | crc7_byte(csd)
    }

    /// SCR: SD spec 2.00, 1- and 4-bit bus, erased data reads as 0, no CMD23.
    pub fn scr(&self) -> [u8; 8] {
        let scr: u64 = (2 << 56) // SD_SPEC 2.00
            | (2 << 52) // SD_SECURITY: none
            | (0b0101 << 48); // SD_BUS_WIDTHS: 1 and 4 bits
        scr.to_be_bytes()
    }

    /// The 512-bit SD status (ACMD13): bus width and the rest zero
    /// (AU_SIZE 0: not defined, which Linux accepts).
    fn sd_status(&self) -> Vec<u8> {
        let mut s = vec![0u8; 64];
        s[0] = if self.wide_bus { 0b10 << 6 } else { 0 };
        s
    }

    /// CMD6's 512-bit status: group 1 offers default and high speed; mode 1
    /// switches when `set` (only function 0 or 1 of group 1 changes anything).
    fn switch(&mut self, arg: u32) -> Vec<u8> {
        let set = arg >> 31 == 1;
        let mut s = vec![0u8; 64];
        s[0..2].copy_from_slice(&100u16.to_be_bytes()); // max current, mA
                                                        // Function support of groups 6..1 (bits 495:400): group 1 supports
                                                        // functions 0 and 1, every other group function 0.
        for g in 0..6 {
            s[2 + g * 2 + 1] = 1;
        }
        s[13] = 0b11;
        // Selection results (bits 399:376): 0xF means "no change requested".
        let mut result = [0u8; 6];
        for (g, r) in result.iter_mut().enumerate() {
            let want = ((arg >> (g * 4)) & 0xf) as u8;
            *r = match (g, want) {
                (_, 0xf) => {
                    if g == 0 {
                        self.high_speed as u8
                    } else {
                        0
                    }
                }
                (0, 0) | (0, 1) => {
                    if set {
                        self.high_speed = want == 1;
                    }
                    want
                }
                (_, 0) => 0,
                _ => 0xf, // unsupported function
            };
        }
        // Groups 6..1 packed in bits 399:376, group 6 first.
        let packed: u32 = result
            .iter()
            .enumerate()
            .fold(0, |acc, (g, r)| acc | ((*r as u32) << (g * 4)));
        s[14] = (packed >> 16) as u8;
        s[15] = (packed >> 8) as u8;
        s[16] = packed as u8;
        s[17] = 1; // data structure version 1
        s
    }

    /// Back to the idle state (GO_IDLE_STATE, or bus power removed).
    pub fn power_off(&mut self) {
        self.state = State::Idle;
        self.ready = false;
        self.power_up_polls = 2;
        self.wide_bus = false;
        self.high_speed = false;
        self.rca = 0;
        self.app = false;
        self.erase_start = None;
        self.erase_end = None;
    }

    /// The card's reply to command `index` with `arg`.
    pub fn command(&mut self, index: u8, arg: u32) -> Reply {
        self.counters.commands += 1;
        let app = std::mem::replace(&mut self.app, false);
        if app {
            self.counters.app_commands += 1;
            if let Some(r) = self.app_command(index, arg) {
                return r;
            }
            // Not an application command: the card runs it as a normal one.
        }
        let r = self.normal_command(index, arg);
        if r.response == Response::None {
            self.counters.unanswered += 1;
        }
        r
    }

    fn normal_command(&mut self, index: u8, arg: u32) -> Reply {
        use State::*;
        let addressed = (arg >> 16) as u16 == self.rca;
        match (index, self.state) {
            (0, _) => {
                self.power_off();
                Reply::none()
            }
            // SEND_IF_COND: 2.7–3.6 V (VHS 1) and the check pattern echoed.
            (8, Idle) if (arg >> 8) & 0xf == 1 => Reply::short(arg & 0xfff),
            (2, Ready) => {
                self.state = Ident;
                Reply {
                    response: Response::Long(self.cid),
                    busy: false,
                    data: DataPhase::None,
                }
            }
            (3, Ident | Stby) => {
                self.state = Stby;
                self.rca = 0x4853u16.wrapping_add(self.rca); // "HS", then on
                let st = self.status();
                // R6: RCA, then status bits 23, 22, 19 and 12:0.
                let packed = ((st >> 8) & 0xc000) | ((st >> 6) & 0x2000) | (st & 0x1fff);
                Reply::short(((self.rca as u32) << 16) | packed)
            }
            (9, Stby) if addressed => Reply {
                response: Response::Long(self.csd()),
                busy: false,
                data: DataPhase::None,
            },
            (10, Stby) if addressed => Reply {
                response: Response::Long(self.cid),
                busy: false,
                data: DataPhase::None,
            },
            (7, Stby) if addressed => {
                let st = self.status();
                self.state = Tran;
                Reply {
                    response: Response::Short(st),
                    busy: true,
                    data: DataPhase::None,
                }
            }
            (7, Tran | Data | Prg) if !addressed => {
                self.state = Stby;
                Reply::none()
            }
            (13, Stby | Tran | Data | Rcv | Prg | Dis) if addressed => Reply::short(self.status()),
            (15, _) if self.state != Idle && addressed => {
                self.state = Dis; // GO_INACTIVE_STATE: never answers again
                Reply::none()
            }
            (16, Tran) => {
                if arg as usize != BLOCK_LEN {
                    self.pending_status |= R1_BLOCK_LEN_ERROR;
                }
                Reply::short(self.status())
            }
            (6, Tran) => {
                let st = self.status();
                Reply {
                    response: Response::Short(st),
                    busy: false,
                    data: DataPhase::Bytes(self.switch(arg)),
                }
            }
            (12, Data | Rcv) => {
                self.state = Tran;
                let st = self.status();
                Reply {
                    response: Response::Short(st),
                    busy: true,
                    data: DataPhase::None,
                }
            }
            (17 | 18, Tran) => {
                let start = arg as u64;
                if start >= self.blocks() {
                    self.pending_status |= R1_OUT_OF_RANGE;
                    return Reply::short(self.status());
                }
                let st = self.status();
                self.state = Data;
                Reply {
                    response: Response::Short(st),
                    busy: false,
                    data: DataPhase::ReadBlocks {
                        start,
                        multi: index == 18,
                    },
                }
            }
            (24 | 25, Tran) => {
                let start = arg as u64;
                if start >= self.blocks() {
                    self.pending_status |= R1_OUT_OF_RANGE;
                    return Reply::short(self.status());
                }
                if self.read_only {
                    self.pending_status |= R1_WP_VIOLATION;
                    return Reply::short(self.status());
                }
                let st = self.status();
                self.state = Rcv;
                self.written = 0;
                Reply {
                    response: Response::Short(st),
                    busy: false,
                    data: DataPhase::WriteBlocks {
                        start,
                        multi: index == 25,
                    },
                }
            }
            (32, Tran) => {
                self.erase_start = Some(arg as u64);
                self.erase_end = None;
                Reply::short(self.status())
            }
            (33, Tran) if self.erase_start.is_some() => {
                self.erase_end = Some(arg as u64);
                Reply::short(self.status())
            }
            (38, Tran) => {
                let st = self.status();
                match (self.erase_start.take(), self.erase_end.take()) {
                    (Some(a), Some(b)) if a <= b && b < self.blocks() && !self.read_only => {
                        self.counters.erases += 1;
                        let off = a * BLOCK_LEN as u64;
                        let len = (b - a + 1) * BLOCK_LEN as u64;
                        if self.disk.zero(off, len).is_err() {
                            self.counters.io_errors += 1;
                            self.pending_status |= R1_ERROR;
                        }
                    }
                    (Some(_), Some(_)) => self.pending_status |= R1_OUT_OF_RANGE,
                    _ => self.pending_status |= R1_ERASE_SEQ_ERROR,
                }
                Reply {
                    response: Response::Short(st),
                    busy: true,
                    data: DataPhase::None,
                }
            }
            (55, s) if s != Dis && (s == Idle || addressed) => {
                self.app = true;
                Reply::short(self.status())
            }
            _ => Reply::none(),
        }
    }

    /// An application command (after CMD55); None when `index` is not one.
    fn app_command(&mut self, index: u8, arg: u32) -> Option<Reply> {
        use State::*;
        // The status in an ACMD's response has APP_CMD set.
        self.app = true;
        let r = match (index, self.state) {
            (41, Idle) => {
                if arg & OCR_VOLTAGES != 0 {
                    if self.power_up_polls == 0 {
                        self.ready = true;
                    } else {
                        self.power_up_polls -= 1;
                    }
                }
                let ocr = OCR_VOLTAGES | if self.ready { OCR_READY | OCR_CCS } else { 0 };
                if self.ready {
                    self.state = Ready;
                }
                self.app = false;
                Reply::short(ocr)
            }
            (6, Tran) => {
                match arg & 3 {
                    0 => self.wide_bus = false,
                    2 => self.wide_bus = true,
                    _ => self.pending_status |= R1_ILLEGAL_COMMAND,
                }
                Reply::short(self.status())
            }
            (13, Tran) => {
                let st = self.status();
                Reply {
                    response: Response::Short(st),
                    busy: false,
                    data: DataPhase::Bytes(self.sd_status()),
                }
            }
            (22, Tran) => {
                let st = self.status();
                Reply {
                    response: Response::Short(st),
                    busy: false,
                    data: DataPhase::Bytes(self.written.to_be_bytes().to_vec()),
                }
            }
            (23, Tran) | (42, Tran) => Reply::short(self.status()),
            (51, Tran) => {
                let st = self.status();
                Reply {
                    response: Response::Short(st),
                    busy: false,
                    data: DataPhase::Bytes(self.scr().to_vec()),
                }
            }
            _ => {
                self.app = false;
                return None;
            }
        };
        self.app = false;
        Some(r)
    }

    /// Block `lba` for a read; None past the end or on a host I/O error
    /// (the card stops sending).
    pub fn read_block(&mut self, lba: u64, buf: &mut [u8; BLOCK_LEN]) -> bool {
        if lba >= self.blocks() {
            self.pending_status |= R1_OUT_OF_RANGE;
            return false;
        }
        if self.disk.read(lba * BLOCK_LEN as u64, buf).is_err() {
            self.counters.io_errors += 1;
            self.pending_status |= R1_ERROR;
            return false;
        }
        self.counters.blocks_read += 1;
        true
    }

    /// Program block `lba`; false past the end or on a host I/O error (the
    /// card reports a CRC status error for it).
    pub fn write_block(&mut self, lba: u64, data: &[u8; BLOCK_LEN]) -> bool {
        if lba >= self.blocks() {
            self.pending_status |= R1_OUT_OF_RANGE;
            return false;
        }
        if self.disk.write(lba * BLOCK_LEN as u64, data).is_err() {
            self.counters.io_errors += 1;
            self.pending_status |= R1_ERROR;
            return false;
        }
        self.written = self.written.wrapping_add(1);
        self.counters.blocks_written += 1;
        true
    }

    /// The data phase ended (all blocks, or the host gave up): a
    /// single-block command returns to `tran` by itself; a multi-block one
    /// waits for CMD12.
    pub fn data_done(&mut self, multi: bool) {
        if !multi && matches!(self.state, State::Data | State::Rcv) {
            self.state = State::Tran;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::sd::test_image::Img;

    fn card(blocks: u64) -> (SdCard, Img) {
        let f = Img::zeros("card", blocks * 512);
        let d = Disk::open(f.path(), false).unwrap();
        (SdCard::new(d, false, 7).unwrap(), f)
    }

    /// The Linux MMC core's SD initialisation, command by command.
    fn init(c: &mut SdCard) -> u16 {
        assert_eq!(c.command(0, 0).response, Response::None);
        assert_eq!(c.command(52, 0).response, Response::None); // SDIO reset
        assert_eq!(c.command(8, 0x1aa).response, Response::Short(0x1aa));
        assert_eq!(c.command(5, 0).response, Response::None); // SDIO probe
        let mut polls = 0;
        loop {
            let Response::Short(r) = c.command(55, 0).response else {
                panic!("CMD55 unanswered")
            };
            assert_ne!(r & R1_APP_CMD, 0);
            let Response::Short(ocr) = c.command(41, 0x40ff_8000).response else {
                panic!("ACMD41 unanswered")
            };
            polls += 1;
            if ocr & OCR_READY != 0 {
                assert_ne!(ocr & OCR_CCS, 0);
                break;
            }
            assert!(polls < 10);
        }
        assert!(matches!(c.command(2, 0).response, Response::Long(_)));
        let Response::Short(r6) = c.command(3, 0).response else {
            panic!()
        };
        let rca = (r6 >> 16) as u16;
        assert!(matches!(
            c.command(9, (rca as u32) << 16).response,
            Response::Long(_)
        ));
        let r = c.command(7, (rca as u32) << 16);
        assert!(r.busy);
        assert_eq!(c.state(), State::Tran);
        rca
    }

    #[test]
    fn linux_init_sequence_reaches_transfer_state() {
        let (mut c, _f) = card(2048);
        let rca = init(&mut c);
        c.command(55, (rca as u32) << 16);
        let r = c.command(51, 0);
        let DataPhase::Bytes(scr) = r.data else {
            panic!()
        };
        assert_eq!(scr[0] & 0xf, 2, "SD spec 2.00");
        assert_eq!(scr[1] & 0xf, 0b0101, "1 and 4 bit");
        c.command(55, (rca as u32) << 16);
        c.command(6, 2);
        assert!(c.wide_bus());
        let r = c.command(6, 0x80ff_fff1);
        let DataPhase::Bytes(st) = r.data else {
            panic!()
        };
        assert_eq!(st[16] & 0xf, 1, "group 1 switched to high speed");
        assert!(c.high_speed());
        let Response::Short(s) = c.command(13, (rca as u32) << 16).response else {
            panic!()
        };
        assert_eq!((s >> 9) & 0xf, State::Tran as u32);
    }

    #[test]
    fn csd_capacity_decodes_as_linux_does() {
        let (mut c, _f) = card(4096); // 2 MiB
        init(&mut c);
        let csd = c.csd();
        let c_size = (csd >> 48) & ((1 << 22) - 1);
        // Linux: capacity = (1 + C_SIZE) << 10 sectors.
        assert_eq!((1 + c_size) << 10, 4096);
        assert_eq!(csd >> 126, 1);
    }

    #[test]
    fn out_of_range_read_is_reported_not_served() {
        let (mut c, _f) = card(1024);
        init(&mut c);
        let r = c.command(17, 5000);
        assert_eq!(r.data, DataPhase::None);
        let Response::Short(s) = c.command(13, (c.rca as u32) << 16).response else {
            panic!()
        };
        assert_eq!(
            s & R1_OUT_OF_RANGE,
            0,
            "reported once, by the failing command's response"
        );
        let r = c.command(18, 1023);
        assert!(matches!(
            r.data,
            DataPhase::ReadBlocks {
                start: 1023,
                multi: true
            }
        ));
        let mut b = [0u8; BLOCK_LEN];
        assert!(c.read_block(1023, &mut b));
        assert!(!c.read_block(1024, &mut b));
    }

    #[test]
    fn write_then_read_back_through_the_overlay() {
        let (mut c, f) = card(1024);
        init(&mut c);
        assert!(matches!(
            c.command(24, 3).data,
            DataPhase::WriteBlocks { .. }
        ));
        let data = [0xa5u8; BLOCK_LEN];
        assert!(c.write_block(3, &data));
        c.data_done(false);
        let mut b = [0u8; BLOCK_LEN];
        assert!(c.read_block(3, &mut b));
        assert_eq!(b, data);
        let on_disk = std::fs::read(f.path()).unwrap();
        assert!(on_disk.iter().all(|&x| x == 0), "the image is untouched");
    }

    #[test]
    fn unknown_and_out_of_state_commands_get_no_response() {
        let (mut c, _f) = card(1024);
        assert_eq!(c.command(17, 0).response, Response::None); // idle: no reads
        assert_eq!(c.command(1, 0).response, Response::None); // MMC's SEND_OP_COND
        assert_eq!(c.command(63, 0).response, Response::None);
        assert_eq!(c.counters.unanswered, 3);
    }

    #[test]
    fn image_size_must_be_whole_capacity_units() {
        let f = Img::zeros("odd", 512 * 3);
        let d = Disk::open(f.path(), false).unwrap();
        let e = SdCard::new(d, false, 1).err().unwrap();
        assert!(e.contains("whole number of 512 KiB"), "{e}");
    }
}
