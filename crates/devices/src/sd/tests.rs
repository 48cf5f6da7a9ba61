//! The controller and card driven through registers the way Linux's SDHCI
//! core drives them: identification, bus width and clock, then reads and
//! writes by PIO, SDMA and ADMA2, and the errors a guest can provoke.

use super::card::SdCard;
use super::sdhci::*;
use super::test_image::Img;
use crate::disk::Disk;
use crate::dma::{DmaMemory, VecMemory};
use crate::{Clock, DevCtx, Scheduler, Signal};

const RAM: u64 = 0x8000_0000;
const HZ: u64 = 1_000_000_000;
const BASE_HZ: u64 = 100_000_000;

#[derive(Default)]
struct Rec(Option<u64>);
impl Scheduler for Rec {
    fn schedule(&mut self, cycle: u64, _token: u64) {
        self.0 = Some(cycle);
    }
}

struct Host {
    c: Sdhci,
    mem: VecMemory,
    ev: Rec,
    now: u64,
    irq: Signal,
    rca: u32,
    _img: Img,
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[2])
        .collect()
}

impl Host {
    fn new(blocks: u64, timing: CardTiming) -> Host {
        let img = Img::zeros(&format!("ctl{}", rand_tag()), blocks * 512);
        std::fs::write(img.path(), pattern(blocks as usize * 512)).unwrap();
        let card = SdCard::new(Disk::open(img.path(), false).unwrap(), false, 1).unwrap();
        let irq = Signal::new();
        let c = Sdhci::new(
            "sd0",
            SdhciConfig {
                base_hz: BASE_HZ,
                high_speed: true,
                timing,
            },
            Clock {
                hz: HZ,
                cycles_per_tick: 100,
            },
            Box::new(irq.clone()),
            Some(card),
        );
        Host {
            c,
            mem: VecMemory::new(RAM, 4 << 20),
            ev: Rec::default(),
            now: 0,
            irq,
            rca: 0,
            _img: img,
        }
    }

    fn rd(&mut self, off: u64, size: u8) -> u64 {
        self.now += 10;
        let mut ctx = DevCtx::new(0, self.now, &mut self.ev);
        ctx.master = Some(&mut self.mem as &mut dyn DmaMemory);
        self.c.mmio_read(&mut ctx, off, size).unwrap()
    }
    fn wr(&mut self, off: u64, size: u8, v: u64) {
        self.now += 10;
        let mut ctx = DevCtx::new(0, self.now, &mut self.ev);
        ctx.master = Some(&mut self.mem as &mut dyn DmaMemory);
        self.c.mmio_write(&mut ctx, off, size, v).unwrap();
    }
    /// Let simulated time run to the device's next event.
    fn tick(&mut self) -> bool {
        let Some(at) = self.ev.0.take() else {
            return false;
        };
        self.now = self.now.max(at);
        let mut ctx = DevCtx::new(0, self.now, &mut self.ev);
        ctx.master = Some(&mut self.mem as &mut dyn DmaMemory);
        self.c.on_event(&mut ctx);
        true
    }
    /// Wait (as an interrupt handler would) until a status bit in `mask` is
    /// set or an error is; returns (normal, error) status and clears them.
    fn wait(&mut self, mask: u16) -> (u16, u16) {
        for _ in 0..100_000 {
            let nis = self.rd(INT_STATUS, 2) as u16;
            if nis & (mask | INT_ERROR) != 0 {
                assert!(
                    self.irq.is_high(),
                    "status {nis:#x} without the interrupt line"
                );
                let eis = self.rd(ERR_STATUS, 2) as u16;
                self.wr(
                    INT_STATUS,
                    4,
                    ((eis as u64) << 16) | (nis & (mask | INT_ERROR)) as u64,
                );
                return (nis, eis);
            }
            if !self.tick() {
                panic!("nothing pending while waiting for {mask:#x} (status {nis:#x})");
            }
        }
        panic!("timed out waiting for {mask:#x}");
    }

    fn cmd(&mut self, index: u16, arg: u32, flags: u16) -> Result<u32, u16> {
        self.wr(ARGUMENT, 4, arg as u64);
        self.wr(COMMAND, 2, ((index << 8) | flags) as u64);
        let (_, eis) = self.wait(INT_CMD_COMPLETE);
        if eis != 0 {
            self.wr(SOFTWARE_RESET, 1, RESET_CMD as u64);
            return Err(eis);
        }
        let r = self.rd(RESPONSE, 4) as u32;
        if flags & CMD_RESP_MASK == CMD_RESP_SHORT_BUSY {
            // R1b: the busy ends with transfer complete (MMC_CAP_WAIT_WHILE_BUSY).
            let (nis, e) = self.wait(INT_XFER_COMPLETE);
            assert_eq!((nis & INT_XFER_COMPLETE, e), (INT_XFER_COMPLETE, 0));
        }
        Ok(r)
    }
    const R1: u16 = CMD_RESP_SHORT | 0x18;
    const R1B: u16 = CMD_RESP_SHORT_BUSY | 0x18;

    fn set_clock(&mut self, hz: u64) {
        let div = if hz >= BASE_HZ {
            0
        } else {
            BASE_HZ.div_ceil(2 * hz)
        };
        let v = ((div & 0xff) << 8) | (((div >> 8) & 3) << 6) | 1;
        self.wr(CLOCK_CONTROL, 2, v);
        assert_ne!(self.rd(CLOCK_CONTROL, 2) & 2, 0, "internal clock stable");
        self.wr(CLOCK_CONTROL, 2, v | 4);
    }

    /// Linux's order: reset, power, 400 kHz, probe SDIO/SD, identify,
    /// select, 4-bit, high speed.
    fn init(&mut self, four_bit: bool) {
        self.wr(SOFTWARE_RESET, 1, RESET_ALL as u64);
        assert_eq!(self.rd(SOFTWARE_RESET, 1), 0);
        self.wr(INT_ENABLE, 4, 0xffff_ffff);
        self.wr(INT_SIGNAL, 4, 0xffff_ffff);
        self.wr(POWER_CONTROL, 1, 0x0f);
        self.set_clock(400_000);
        self.wr(TIMEOUT_CONTROL, 1, 0xe);
        assert_eq!(self.cmd(52, 0, Self::R1), Err(ERR_CMD_TIMEOUT), "no SDIO");
        assert_eq!(
            self.cmd(0, 0, CMD_RESP_NONE),
            Ok(0),
            "CMD0 completes without a response"
        );
        assert_eq!(self.cmd(8, 0x1aa, Self::R1).unwrap(), 0x1aa);
        assert_eq!(self.cmd(5, 0, CMD_RESP_SHORT), Err(ERR_CMD_TIMEOUT));
        loop {
            self.cmd(55, 0, Self::R1).unwrap();
            let ocr = self.cmd(41, 0x40ff_8000, CMD_RESP_SHORT).unwrap();
            if ocr & (1 << 31) != 0 {
                break;
            }
        }
        self.cmd(2, 0, CMD_RESP_LONG | 0x08).unwrap();
        let r6 = self.cmd(3, 0, Self::R1).unwrap();
        self.rca = r6 & 0xffff_0000;
        self.cmd(9, self.rca, CMD_RESP_LONG | 0x08).unwrap();
        // The CSD's C_SIZE as Linux reads it from the registers (bits 127:8
        // of the response shifted down by 8).
        let r: Vec<u32> = (0..4)
            .map(|i| self.rd(RESPONSE + 4 * i, 4) as u32)
            .collect();
        let csd =
            ((r[3] as u128) << 96 | (r[2] as u128) << 64 | (r[1] as u128) << 32 | r[0] as u128)
                << 8;
        let c_size = (csd >> 48) & 0x3f_ffff;
        assert_eq!((c_size + 1) << 10, self.c.card().unwrap().blocks() as u128);
        self.cmd(7, self.rca, Self::R1B).unwrap();
        if four_bit {
            self.cmd(55, self.rca, Self::R1).unwrap();
            self.cmd(6, 2, Self::R1).unwrap();
            self.wr(HOST_CONTROL, 1, CTRL_4BIT as u64);
        }
        self.set_clock(25_000_000);
    }

    fn dma_select(&mut self, sel: u8) {
        let v = self.rd(HOST_CONTROL, 1) as u8;
        self.wr(HOST_CONTROL, 1, ((v & !CTRL_DMA_MASK) | sel) as u64);
    }

    /// A multi-block read of `n` blocks from `lba` by PIO, as
    /// `sdhci_transfer_pio` does; the bytes and the cycles it took.
    fn read_pio(&mut self, lba: u32, n: u16) -> (Vec<u8>, u64) {
        let t0 = self.now;
        self.wr(BLOCK_SIZE, 2, 512);
        self.wr(BLOCK_COUNT, 2, n as u64);
        let multi = if n > 1 {
            TRNS_MULTI | TRNS_BLK_CNT_EN
        } else {
            0
        };
        self.wr(TRANSFER_MODE, 2, (TRNS_READ | multi) as u64);
        let op = if n > 1 { 18 } else { 17 };
        self.wr(ARGUMENT, 4, lba as u64);
        self.wr(COMMAND, 2, ((op << 8) | Self::R1 | CMD_DATA) as u64);
        let (_, e) = self.wait(INT_CMD_COMPLETE);
        assert_eq!(e, 0);
        let mut out = Vec::new();
        let mut left = n;
        while left > 0 {
            let (_, e) = self.wait(INT_BUF_READ_READY);
            assert_eq!(e, 0);
            while left > 0 && self.rd(PRESENT_STATE, 4) as u32 & PS_DATA_AVAILABLE != 0 {
                for _ in 0..128 {
                    out.extend_from_slice(&(self.rd(BUFFER, 4) as u32).to_le_bytes());
                }
                left -= 1;
            }
        }
        let (_, e) = self.wait(INT_XFER_COMPLETE);
        assert_eq!(e, 0);
        if n > 1 {
            self.cmd(12, 0, Self::R1B).unwrap();
        }
        (out, self.now - t0)
    }

    /// A DMA transfer (read or write) of `n` blocks at `lba` with the
    /// buffer at `buf`, SDMA boundary 4 KiB; returns the error status (0 on
    /// success) and the cycles it took.
    fn dma(
        &mut self,
        read: bool,
        lba: u32,
        n: u16,
        buf: u64,
        adma_table: Option<u64>,
    ) -> (u16, u64) {
        let t0 = self.now;
        match adma_table {
            Some(t) => {
                self.dma_select(CTRL_ADMA32);
                self.wr(ADMA_ADDRESS, 4, t);
            }
            None => {
                self.dma_select(0);
                self.wr(SDMA_ADDRESS, 4, buf);
            }
        }
        self.wr(BLOCK_SIZE, 2, 512); // boundary 4 KiB (field 0)
        self.wr(BLOCK_COUNT, 2, n as u64);
        let multi = if n > 1 {
            TRNS_MULTI | TRNS_BLK_CNT_EN
        } else {
            0
        };
        let dir = if read { TRNS_READ } else { 0 };
        self.wr(TRANSFER_MODE, 2, (TRNS_DMA | dir | multi) as u64);
        let op = match (read, n > 1) {
            (true, false) => 17,
            (true, true) => 18,
            (false, false) => 24,
            (false, true) => 25,
        };
        self.wr(ARGUMENT, 4, lba as u64);
        self.wr(COMMAND, 2, ((op << 8) | Self::R1 | CMD_DATA) as u64);
        let (_, e) = self.wait(INT_CMD_COMPLETE);
        assert_eq!(e, 0);
        loop {
            let (nis, e) = self.wait(INT_XFER_COMPLETE | INT_DMA);
            if e != 0 {
                self.wr(SOFTWARE_RESET, 1, (RESET_CMD | RESET_DATA) as u64);
                if n > 1 {
                    let _ = self.cmd(12, 0, Self::R1B);
                }
                return (e, self.now - t0);
            }
            if nis & INT_DMA != 0 && adma_table.is_none() {
                // sdhci_data_irq: the next boundary after what moved so far.
                let a = self.rd(SDMA_ADDRESS, 4);
                let _ = a;
                let next = SDMA_NEXT.with(|c| c.get());
                let next = if next == 0 {
                    (buf & !4095) + 4096
                } else {
                    next + 4096
                };
                SDMA_NEXT.with(|c| c.set(next));
                self.wr(SDMA_ADDRESS, 4, next);
            }
            if nis & INT_XFER_COMPLETE != 0 {
                break;
            }
        }
        SDMA_NEXT.with(|c| c.set(0));
        if n > 1 {
            self.cmd(12, 0, Self::R1B).unwrap();
        }
        (0, self.now - t0)
    }

    /// An ADMA2 table at `table` covering `len` bytes at `buf` in `chunk`-byte descriptors.
    fn adma_table(&mut self, table: u64, buf: u64, len: usize, chunk: usize) {
        let mut d = Vec::new();
        let mut off = 0;
        while off < len {
            let n = chunk.min(len - off);
            let last = off + n == len;
            let attr = ADMA_VALID | ADMA_ACT_TRAN | if last { ADMA_END } else { 0 };
            d.extend_from_slice(&attr.to_le_bytes());
            d.extend_from_slice(&(n as u16).to_le_bytes());
            d.extend_from_slice(&((buf + off as u64) as u32).to_le_bytes());
            off += n;
        }
        self.mem.put(table, &d);
    }

    fn image(&self) -> Vec<u8> {
        let card = self.c.card().unwrap();
        let mut v = vec![0u8; card.disk().len() as usize];
        card.disk().read(0, &mut v).unwrap();
        v
    }
}

thread_local! {
    static SDMA_NEXT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn rand_tag() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[test]
fn identification_leaves_card_selected_at_4_bit() {
    let mut h = Host::new(4096, CardTiming::default());
    h.init(true);
    let card = h.c.card().unwrap();
    assert!(card.wide_bus());
    assert_eq!(card.state(), super::card::State::Tran);
    let st = h.c.stats();
    let get = |n: &str| st.iter().find(|s| s.name == n).unwrap().value;
    assert_eq!(get("sd0.sd_hz"), 25_000_000);
    assert_eq!(get("sd0.bus_width"), 4);
    assert!(get("sd0.cmd_timeouts") >= 2);
}

#[test]
fn pio_read_returns_the_image_bytes() {
    let mut h = Host::new(4096, CardTiming::default());
    h.init(true);
    let (data, _) = h.read_pio(100, 8);
    assert_eq!(data, h.image()[100 * 512..108 * 512]);
    let (one, _) = h.read_pio(7, 1);
    assert_eq!(one, h.image()[7 * 512..8 * 512]);
}

#[test]
fn sdma_and_adma_reads_land_in_memory() {
    let mut h = Host::new(4096, CardTiming::default());
    h.init(true);
    // SDMA from an unaligned start crosses two 4 KiB boundaries.
    let buf = RAM + 0x1_0200;
    assert_eq!(h.dma(true, 10, 16, buf, None).0, 0);
    assert_eq!(h.mem.get(buf, 16 * 512), &h.image()[10 * 512..26 * 512]);
    // ADMA2 with descriptors smaller than a block.
    let buf = RAM + 0x4_0000;
    h.adma_table(RAM + 0x1000, buf, 8 * 512, 300);
    assert_eq!(h.dma(true, 50, 8, buf, Some(RAM + 0x1000)).0, 0);
    assert_eq!(h.mem.get(buf, 8 * 512), &h.image()[50 * 512..58 * 512]);
    let st = h.c.stats();
    let get = |n: &str| st.iter().find(|s| s.name == n).unwrap().value;
    assert_eq!(
        get("sd0.sdma_pauses"),
        2,
        "8 KiB from 0x1_0200 crosses 0x1_1000 and 0x1_2000"
    );
    assert_eq!(
        get("sd0.adma_descriptors"),
        (8 * 512usize).div_ceil(300) as u64
    );
}

#[test]
fn writes_by_every_mode_reach_the_overlay_not_the_file() {
    let mut h = Host::new(4096, CardTiming::default());
    h.init(true);
    let before = h._img.bytes();
    let data = vec![0x5au8; 4 * 512];
    let buf = RAM + 0x2_0000;
    h.mem.put(buf, &data);
    assert_eq!(h.dma(false, 200, 4, buf, None).0, 0);
    h.adma_table(RAM + 0x1000, buf, 4 * 512, 4096);
    assert_eq!(h.dma(false, 300, 4, buf, Some(RAM + 0x1000)).0, 0);
    // PIO write of two blocks.
    h.wr(BLOCK_SIZE, 2, 512);
    h.wr(BLOCK_COUNT, 2, 2);
    h.wr(TRANSFER_MODE, 2, (TRNS_MULTI | TRNS_BLK_CNT_EN) as u64);
    h.wr(ARGUMENT, 4, 400);
    h.wr(COMMAND, 2, ((25 << 8) | Host::R1 | CMD_DATA) as u64);
    h.wait(INT_CMD_COMPLETE);
    let mut written = 0;
    while written < 2 {
        h.wait(INT_BUF_WRITE_READY);
        while written < 2 && h.rd(PRESENT_STATE, 4) as u32 & PS_SPACE_AVAILABLE != 0 {
            for _ in 0..128 {
                h.wr(BUFFER, 4, 0xa5a5_a5a5);
            }
            written += 1;
        }
    }
    assert_eq!(h.wait(INT_XFER_COMPLETE).1, 0);
    h.cmd(12, 0, Host::R1B).unwrap();
    let img = h.image();
    assert!(img[200 * 512..204 * 512].iter().all(|&b| b == 0x5a));
    assert!(img[300 * 512..304 * 512].iter().all(|&b| b == 0x5a));
    assert!(img[400 * 512..402 * 512].iter().all(|&b| b == 0xa5));
    assert_eq!(h._img.bytes(), before, "the card's image file is unchanged");
}

#[test]
fn four_bit_bus_and_dma_are_faster_for_large_reads() {
    let t = CardTiming::default();
    let time = |four: bool, pio: bool| {
        let mut h = Host::new(4096, t);
        h.init(four);
        if pio {
            h.read_pio(0, 64).1
        } else {
            h.dma(true, 0, 64, RAM + 0x10000, None).1
        }
    };
    let (pio1, pio4, dma1, dma4) = (
        time(false, true),
        time(true, true),
        time(false, false),
        time(true, false),
    );
    // 64 blocks at 25 MHz: 1-bit 4114 clocks a block, 4-bit 1042.
    assert!(dma1 > 3 * dma4, "1-bit {dma1} vs 4-bit {dma4} cycles");
    assert!(pio4 > dma4, "PIO {pio4} vs DMA {dma4} cycles");
    assert!(pio1 > pio4);
}

#[test]
fn guest_errors_end_in_error_status() {
    let mut h = Host::new(2048, CardTiming::default());
    h.init(true);
    // ADMA: a descriptor without the valid bit.
    h.mem.put(RAM + 0x1000, &[0u8; 8]);
    let (e, _) = h.dma(true, 0, 2, RAM + 0x8000, Some(RAM + 0x1000));
    assert_eq!(e, ERR_ADMA);
    assert_eq!(
        h.rd(ADMA_ERROR, 1) as u8 & 3,
        1,
        "stopped fetching a descriptor"
    );
    // ADMA: the table is outside memory.
    let (e, _) = h.dma(true, 0, 2, RAM, Some(0x10));
    assert_eq!(e, ERR_ADMA);
    // ADMA: the table ends before the blocks do.
    h.adma_table(RAM + 0x1000, RAM + 0x8000, 512, 512);
    let (e, _) = h.dma(true, 0, 2, RAM + 0x8000, Some(RAM + 0x1000));
    assert_eq!(e, ERR_ADMA);
    assert_ne!(h.rd(ADMA_ERROR, 1) as u8 & ADMA_ERR_LEN_MISMATCH, 0);
    // ADMA: a LINK to itself loops without data.
    let mut d = Vec::new();
    d.extend_from_slice(&(ADMA_VALID | ADMA_ACT_LINK).to_le_bytes());
    d.extend_from_slice(&0u16.to_le_bytes());
    d.extend_from_slice(&((RAM + 0x1000) as u32).to_le_bytes());
    h.mem.put(RAM + 0x1000, &d);
    let (e, _) = h.dma(true, 0, 2, RAM + 0x8000, Some(RAM + 0x1000));
    assert_eq!(e, ERR_ADMA);
    // SDMA into nothing.
    let (e, _) = h.dma(true, 0, 1, 0x1000, None);
    assert_eq!(e, ERR_DATA_END_BIT);
    // A read past the end: the card refuses, the data phase times out.
    h.wr(BLOCK_SIZE, 2, 512);
    h.wr(BLOCK_COUNT, 2, 1);
    h.wr(TRANSFER_MODE, 2, TRNS_READ as u64);
    h.wr(ARGUMENT, 4, 5000);
    h.wr(COMMAND, 2, ((17 << 8) | Host::R1 | CMD_DATA) as u64);
    let (_, e) = h.wait(INT_CMD_COMPLETE);
    assert_eq!(e, 0);
    assert_ne!(h.rd(RESPONSE, 4) as u32 & super::card::R1_OUT_OF_RANGE, 0);
    let (_, e) = h.wait(INT_XFER_COMPLETE);
    assert_eq!(e, ERR_DATA_TIMEOUT);
    h.wr(SOFTWARE_RESET, 1, (RESET_CMD | RESET_DATA) as u64);
    // After all that, a normal read still works.
    let (data, _) = h.read_pio(3, 2);
    assert_eq!(data, h.image()[3 * 512..5 * 512]);
}

#[test]
fn the_same_session_twice_gives_the_same_cycles_and_counts() {
    let run = || {
        let mut h = Host::new(2048, CardTiming::default());
        h.init(true);
        let a = h.read_pio(1, 5).1;
        let b = h.dma(true, 9, 9, RAM + 0x3_0100, None).1;
        h.adma_table(RAM + 0x1000, RAM + 0x4_0000, 3 * 512, 1000);
        let c = h.dma(false, 20, 3, RAM + 0x4_0000, Some(RAM + 0x1000)).1;
        let stats: Vec<(String, u64)> =
            h.c.stats().into_iter().map(|s| (s.name, s.value)).collect();
        (a, b, c, h.now, stats)
    };
    assert_eq!(run(), run());
}

#[test]
fn register_accesses_outside_the_window_are_refused() {
    let mut h = Host::new(2048, CardTiming::default());
    let mut ctx = DevCtx::new(0, 0, &mut h.ev);
    assert!(h.c.mmio_read(&mut ctx, SIZE - 2, 4).is_err());
    assert!(h.c.mmio_write(&mut ctx, SIZE, 1, 0).is_err());
    assert!(h.c.mmio_read(&mut ctx, 0, 3).is_err());
    // The vendor area pointer the DesignWare glue reads at probe.
    assert_eq!(
        h.c.mmio_read(&mut ctx, VENDOR_AREA1_PTR, 4).unwrap(),
        VENDOR_AREA1
    );
    assert_eq!(h.c.mmio_read(&mut ctx, HOST_VERSION, 2).unwrap(), 2);
}

/// The host with the same guest memory, time and pending event as `h`,
/// and its controller restored from `saved` (the board keeps the line).
fn restored_copy(h: &Host, saved: &[u8]) -> Host {
    use crate::Persist;
    let mut g = Host::new(1024, CardTiming::default());
    g.irq.restore(h.irq.save());
    g.c.restore(saved).unwrap();
    g.mem = h.mem.clone();
    g.now = h.now;
    g.ev.0 = h.ev.0;
    g.rca = h.rca;
    g
}

#[test]
fn a_restored_controller_and_card_go_on_as_the_saved_ones() {
    use crate::Persist;
    let mut h = Host::new(1024, CardTiming::default());
    h.init(true);
    // Blocks 8..12 rewritten by SDMA: they live in the disk's overlay.
    let new: Vec<u8> = (0..4 * 512).map(|i| (i % 13) as u8).collect();
    h.mem.put(RAM + 0x8000, &new);
    assert_eq!(h.dma(false, 8, 4, RAM + 0x8000, None).0, 0);
    // Then a PIO read stopped half way through its first block.
    h.wr(BLOCK_SIZE, 2, 512);
    h.wr(BLOCK_COUNT, 2, 3);
    h.wr(
        TRANSFER_MODE,
        2,
        (TRNS_READ | TRNS_MULTI | TRNS_BLK_CNT_EN) as u64,
    );
    h.wr(ARGUMENT, 4, 7);
    h.wr(COMMAND, 2, ((18 << 8) | Host::R1 | CMD_DATA) as u64);
    assert_eq!(h.wait(INT_CMD_COMPLETE).1, 0);
    assert_eq!(h.wait(INT_BUF_READ_READY).1, 0);
    let mut got: Vec<u32> = (0..64).map(|_| h.rd(BUFFER, 4) as u32).collect();
    let saved = h.c.save().unwrap();

    let mut g = restored_copy(&h, &saved);
    assert_eq!(g.c.save().unwrap(), saved);
    let mut got2 = got.clone();
    for (host, out) in [(&mut h, &mut got), (&mut g, &mut got2)] {
        out.extend((0..64).map(|_| host.rd(BUFFER, 4) as u32));
        for _ in 0..2 {
            assert_eq!(host.wait(INT_BUF_READ_READY).1, 0);
            out.extend((0..128).map(|_| host.rd(BUFFER, 4) as u32));
        }
        assert_eq!(host.wait(INT_XFER_COMPLETE).1, 0);
        host.cmd(12, 0, Host::R1B).unwrap();
    }
    assert_eq!(got2, got);
    let bytes: Vec<u8> = got.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(
        &bytes[512..],
        &new[..1024],
        "blocks 8 and 9 from the overlay"
    );
    assert_eq!((g.now, g.c.stats()), (h.now, h.c.stats()));
    assert_eq!(g.read_pio(10, 2), h.read_pio(10, 2));
    assert_eq!(g.c.save().unwrap(), h.c.save().unwrap());
}

#[test]
fn a_controller_refuses_garbage_and_another_card() {
    use crate::Persist;
    let mut h = Host::new(1024, CardTiming::default());
    let saved = h.c.save().unwrap();
    let mut big = Host::new(2048, CardTiming::default());
    let e = big.c.restore(&saved).unwrap_err();
    assert!(e.contains("bytes"), "{e}");
    let mut empty = Sdhci::new(
        "sd0",
        SdhciConfig {
            base_hz: BASE_HZ,
            high_speed: true,
            timing: CardTiming::default(),
        },
        Clock {
            hz: HZ,
            cycles_per_tick: 100,
        },
        Box::new(Signal::new()),
        None,
    );
    let e = empty.restore(&saved).unwrap_err();
    assert!(e.contains("holding a card"), "{e}");
    for bad in [&b"[]"[..], b"[{}, null]", b"nul"] {
        assert!(h.c.restore(bad).is_err());
    }
    h.init(true);
    assert_eq!(h.read_pio(0, 1).0, h.image()[..512]);
}
