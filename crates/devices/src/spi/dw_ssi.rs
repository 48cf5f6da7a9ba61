//! DesignWare APB SSI (`snps,dw-apb-ssi`) as a SPI master, with the
//! register behaviour Linux's `spi-dw-core`, `spi-dw-mmio` and `spi-dw-dma`
//! (6.1 and 6.12) rely on.
//!
//! * FIFO depth is discovered by the driver writing `TXFTLR` = 1, 2, … until
//!   the value no longer sticks: a threshold ≥ the depth is not written, as
//!   on the chip. The default depth is [`FIFO_DEPTH`] = 7, the only depth
//!   for which an 8-byte write takes the DMA path *and* the AXI DMA's fixed
//!   4-item bursts fit: `dw_spi_can_dma` needs `len > fifo_len` (so depth ≤
//!   7), and `spi-dw-dma` sets `DMATDLR = fifo_len / 2`, so a burst request
//!   comes with `depth - depth/2` free entries, which must be ≥ 4 (the
//!   `DWAXIDMAC_BURST_TRANS_LEN_4` the AXI driver always programs), so
//!   depth ≥ 7.
//! * Time: a frame of `n` bits takes `n × SCKDV / ssi_clk` seconds, turned
//!   into simulated core cycles; frames go back to back while the TX FIFO
//!   has data. A word leaves the TX FIFO when its frame starts, arrives at
//!   the peripheral (and its answer in the RX FIFO) when the frame ends.
//!   [`DwSsi::next_event`] is the end of the frame on the wire.
//! * Chip select is native: asserted (for the `SER` bits) when a transfer
//!   starts, released when the TX FIFO runs dry, as the real controller does.
//!   Per-frame toggling with `SCPH = 0` is not modelled.
//! * Transfer modes TR, TO, RO (`CTRLR1` frames after a dummy write) and
//!   EEPROM read; loopback (`SRL`) feeds TX back to RX without driving the
//!   peripherals. Motorola SPI frames only (`FRF` is stored, not used).
//! * Interrupts TXE, TXO, RXU, RXO, RXF (RISR, IMR, ISR, the clear
//!   registers). The output is optional here, but stock `spi-dw-mmio`
//!   (6.1 and 6.12) calls `platform_get_irq` and fails its probe (-ENXIO)
//!   without an `interrupts` property: the core's polled path
//!   (`dws->irq == IRQ_NOTCONNECTED`) is only reached from the Baikal-T1
//!   glue, so a polled variant needs a kernel patch.
//! * DMA handshake: TX request (burst when `TXFLR ≤ DMATDLR`, single when not
//!   full) and RX request (burst when `RXFLR ≥ DMARDLR + 1`, single when not
//!   empty) through [`DmaRequestLine`]s, gated by `DMACR` and `SSIENR`.
//! * Disabling (`SSIENR = 0`) halts the shifter, empties both FIFOs and
//!   clears the overflow/underflow latches (a TX-only DMA transfer overflows
//!   the RX FIFO in TR mode; the next transfer starts with the chip disabled,
//!   so a later polled transfer does not report a stale RXO).

use std::collections::{BTreeMap, VecDeque};

use super::SpiPeripheral;
use crate::dma::bus::DmaTarget;
use crate::fdt::{FdtNode, Placement};
use crate::lines::{DmaRequest, DmaRequestLine};
use crate::{BadAccess, IrqLine, Stat};

/// Register window size.
pub const SIZE: u64 = 0x100;
/// Default FIFO depth (see the module documentation for why 7).
pub const FIFO_DEPTH: u32 = 7;
/// `VERSION` ("3.23*"): an APB SSI with 16-bit frames (DFS in CTRLR0[3:0]).
pub const VERSION_ID: u32 = 0x3332_332a;

pub const CTRLR0: u64 = 0x00;
pub const CTRLR1: u64 = 0x04;
pub const SSIENR: u64 = 0x08;
pub const MWCR: u64 = 0x0c;
pub const SER: u64 = 0x10;
pub const BAUDR: u64 = 0x14;
pub const TXFTLR: u64 = 0x18;
pub const RXFTLR: u64 = 0x1c;
pub const TXFLR: u64 = 0x20;
pub const RXFLR: u64 = 0x24;
pub const SR: u64 = 0x28;
pub const IMR: u64 = 0x2c;
pub const ISR: u64 = 0x30;
pub const RISR: u64 = 0x34;
pub const TXOICR: u64 = 0x38;
pub const RXOICR: u64 = 0x3c;
pub const RXUICR: u64 = 0x40;
pub const MSTICR: u64 = 0x44;
pub const ICR: u64 = 0x48;
pub const DMACR: u64 = 0x4c;
pub const DMATDLR: u64 = 0x50;
pub const DMARDLR: u64 = 0x54;
pub const IDR: u64 = 0x58;
pub const VERSION: u64 = 0x5c;
/// First of the 36 aliases of the data register (0x60..=0xec).
pub const DR: u64 = 0x60;
pub const DR_END: u64 = 0xf0;
pub const RX_SAMPLE_DLY: u64 = 0xf0;

pub const SR_BUSY: u32 = 1 << 0;
pub const SR_TFNF: u32 = 1 << 1;
pub const SR_TFE: u32 = 1 << 2;
pub const SR_RFNE: u32 = 1 << 3;
pub const SR_RFF: u32 = 1 << 4;

pub const INT_TXEI: u32 = 1 << 0;
pub const INT_TXOI: u32 = 1 << 1;
pub const INT_RXUI: u32 = 1 << 2;
pub const INT_RXOI: u32 = 1 << 3;
pub const INT_RXFI: u32 = 1 << 4;
pub const INT_MSTI: u32 = 1 << 5;
const INT_ALL: u32 = 0x3f;

pub const DMACR_RDMAE: u32 = 1 << 0;
pub const DMACR_TDMAE: u32 = 1 << 1;

const CTRLR0_MASK: u32 = 0xffff;
const CTRLR0_SRL: u32 = 1 << 11;
pub const TMOD_TR: u32 = 0;
pub const TMOD_TO: u32 = 1;
pub const TMOD_RO: u32 = 2;
pub const TMOD_EEPROM: u32 = 3;

/// Build-time parameters of one controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SsiConfig {
    /// Simulated core cycles per second (the machine's clock).
    pub core_hz: u64,
    /// `ssi_clk`, the controller's input clock: SCLK = ssi_clk / SCKDV. It is
    /// the `clock-frequency` of the fixed clock the node points at (Linux's
    /// `max_freq`).
    pub ssi_clk_hz: u64,
    /// TX and RX FIFO depth, 2..=256.
    pub fifo_depth: u32,
    /// Native chip selects, 1..=16.
    pub num_cs: u32,
    /// Value of `IDR`.
    pub id: u32,
}

impl Default for SsiConfig {
    fn default() -> Self {
        Self {
            core_hz: 1_000_000_000,
            ssi_clk_hz: 100_000_000,
            fifo_depth: FIFO_DEPTH,
            num_cs: 4,
            id: 0,
        }
    }
}

/// What the controller's device-tree node refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SsiFdt {
    /// Phandle of the interrupt controller.
    pub interrupt_parent: u32,
    /// Interrupt number; `None` writes no `interrupts` (stock spi-dw-mmio
    /// then fails to probe; only a patched kernel polls).
    pub irq: Option<u32>,
    /// Phandle given to the fixed clock node this controller writes.
    pub clock: u32,
    /// DMA channels (`dmas`, `dma-names`); `None` keeps transfers in PIO.
    pub dma: Option<SsiDmaFdt>,
}

/// The DMA controller and handshake numbers of the SSI's two requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SsiDmaFdt {
    pub controller: u32,
    pub tx_handshake: u32,
    pub rx_handshake: u32,
}

#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
struct Shift {
    word: u16,
    bits: u8,
    end: u64,
    cs: u32,
    /// The received word goes to the RX FIFO.
    receive: bool,
}

#[derive(serde::Serialize, serde::Deserialize)]
pub struct DwSsi {
    name: String,
    cfg: SsiConfig,
    #[serde(skip)]
    irq: Option<Box<dyn IrqLine>>,
    /// Board wires (the board restores their levels); what was last
    /// driven on them is `req_tx` / `req_rx`.
    #[serde(skip)]
    dma_tx: Option<Box<dyn DmaRequestLine>>,
    #[serde(skip)]
    dma_rx: Option<Box<dyn DmaRequestLine>>,
    /// Saved beside the controller, each in its own section.
    #[serde(skip)]
    peripherals: Vec<Option<Box<dyn SpiPeripheral>>>,
    now: u64,
    ctrlr0: u32,
    ctrlr1: u32,
    enabled: bool,
    mwcr: u32,
    ser: u32,
    baudr: u32,
    txftlr: u32,
    rxftlr: u32,
    imr: u32,
    latched: u32,
    dmacr: u32,
    dmatdlr: u32,
    dmardlr: u32,
    rx_sample_dly: u32,
    tx: VecDeque<u16>,
    rx: VecDeque<u16>,
    shift: Option<Shift>,
    /// Chip selects currently asserted.
    active_cs: u32,
    /// Chip selects driven by a GPIO line (`cs-gpios`, active low) instead
    /// of the native one, which drops whenever the TX FIFO runs dry.
    /// Board wires.
    #[serde(skip)]
    gpio_cs: Vec<Option<crate::Signal>>,
    /// Peripherals their GPIO chip select currently selects.
    gpio_selected: u32,
    /// Receive-only frames still to clock (RO and the EEPROM read phase).
    rx_only_left: u32,
    /// EEPROM mode: the TX phase has started and not yet turned around.
    eeprom_tx: bool,
    irq_level: bool,
    req_tx: DmaRequest,
    req_rx: DmaRequest,
    stat_frames: u64,
    stat_transfers: u64,
    stat_txo: u64,
    stat_rxo: u64,
    stat_rxu: u64,
    stat_irqs: u64,
    stat_ignored_writes: u64,
}

/// The controller's registers, FIFOs and shifter, and each peripheral's
/// state beside them (by chip select).
impl crate::Persist for DwSsi {
    fn save(&self) -> Result<Vec<u8>, String> {
        let peripherals = self
            .peripherals
            .iter()
            .enumerate()
            .map(|(cs, p)| match p {
                Some(p) => {
                    let st = p.state().ok_or_else(|| {
                        format!("the peripheral on chip select {cs} has no save/restore")
                    })?;
                    crate::nested_save(st).map(Some)
                }
                None => Ok(None),
            })
            .collect::<Result<Vec<_>, String>>()?;
        hs_snapshot::state::encode(&(self, peripherals))
    }
    fn restore(&mut self, data: &[u8]) -> Result<(), String> {
        let (mut fresh, saved): (DwSsi, Vec<Option<String>>) = hs_snapshot::state::decode(data)?;
        crate::same(
            "SPI controller",
            &(&fresh.name, fresh.cfg),
            &(&self.name, self.cfg),
        )?;
        let theirs: Vec<bool> = saved.iter().map(Option::is_some).collect();
        let mine: Vec<bool> = self.peripherals.iter().map(Option::is_some).collect();
        crate::same("SPI controller's chip selects in use", &theirs, &mine)?;
        // Each peripheral in turn; a refusal puts back the ones done.
        let mut done: Vec<(usize, Vec<u8>)> = Vec::new();
        for (cs, s) in saved.iter().enumerate() {
            let (Some(s), Some(p)) = (s, self.peripherals[cs].as_mut()) else {
                continue;
            };
            let st = p
                .state_mut()
                .ok_or_else(|| format!("the peripheral on chip select {cs} has no save/restore"))?;
            let before = st.save()?;
            if let Err(e) = st.restore(s.as_bytes()) {
                for (cs, b) in done {
                    if let Some(st) = self.peripherals[cs].as_mut().and_then(|p| p.state_mut()) {
                        let _ = st.restore(&b);
                    }
                }
                return Err(format!("chip select {cs}: {e}"));
            }
            done.push((cs, before));
        }
        std::mem::swap(&mut fresh.irq, &mut self.irq);
        std::mem::swap(&mut fresh.dma_tx, &mut self.dma_tx);
        std::mem::swap(&mut fresh.dma_rx, &mut self.dma_rx);
        std::mem::swap(&mut fresh.peripherals, &mut self.peripherals);
        std::mem::swap(&mut fresh.gpio_cs, &mut self.gpio_cs);
        *self = fresh;
        Ok(())
    }
}

impl DwSsi {
    /// Every peripheral has save/restore (else a snapshot is refused).
    pub fn persistent(&self) -> bool {
        self.peripherals
            .iter()
            .flatten()
            .all(|p| p.state().is_some())
    }

    /// A controller named `name` (`spi0`), with an optional interrupt output
    /// and optional DMA request outputs (TX, RX).
    pub fn new(
        name: impl Into<String>,
        cfg: SsiConfig,
        irq: Option<Box<dyn IrqLine>>,
        dma_tx: Option<Box<dyn DmaRequestLine>>,
        dma_rx: Option<Box<dyn DmaRequestLine>>,
    ) -> Self {
        let cfg = SsiConfig {
            core_hz: cfg.core_hz.max(1),
            ssi_clk_hz: cfg.ssi_clk_hz.max(1),
            fifo_depth: cfg.fifo_depth.clamp(2, 256),
            num_cs: cfg.num_cs.clamp(1, 16),
            id: cfg.id,
        };
        let mut s = Self {
            name: name.into(),
            cfg,
            irq,
            dma_tx,
            dma_rx,
            peripherals: (0..cfg.num_cs).map(|_| None).collect(),
            now: 0,
            ctrlr0: 0x7,
            ctrlr1: 0,
            enabled: false,
            mwcr: 0,
            ser: 0,
            baudr: 0,
            txftlr: 0,
            rxftlr: 0,
            imr: INT_ALL,
            latched: 0,
            dmacr: 0,
            dmatdlr: 0,
            dmardlr: 0,
            rx_sample_dly: 0,
            tx: VecDeque::new(),
            rx: VecDeque::new(),
            shift: None,
            active_cs: 0,
            gpio_cs: (0..cfg.num_cs).map(|_| None).collect(),
            gpio_selected: 0,
            rx_only_left: 0,
            eeprom_tx: false,
            irq_level: false,
            req_tx: DmaRequest::NONE,
            req_rx: DmaRequest::NONE,
            stat_frames: 0,
            stat_transfers: 0,
            stat_txo: 0,
            stat_rxo: 0,
            stat_rxu: 0,
            stat_irqs: 0,
            stat_ignored_writes: 0,
        };
        s.update(0);
        s
    }

    /// Drive chip select `cs` from a GPIO output wire (active low) instead
    /// of the native one: a device whose commands span several transfers of
    /// one message (an ENC28J60's opcode, then its data) needs it, since the
    /// native select drops between them as the FIFO empties.
    pub fn set_gpio_cs(&mut self, cs: u32, wire: crate::Signal) -> bool {
        match self.gpio_cs.get_mut(cs as usize) {
            Some(slot) => {
                *slot = Some(wire);
                true
            }
            None => false,
        }
    }

    /// Follow the GPIO chip-select wires at cycle `now`.
    pub fn sample_gpio_cs(&mut self, now: u64) {
        self.advance(now);
        let t = self.now;
        for (i, w) in self.gpio_cs.iter().enumerate() {
            let Some(w) = w else { continue };
            let bit = 1u32 << i;
            let asserted = !w.is_high();
            if asserted == (self.gpio_selected & bit != 0) {
                continue;
            }
            self.gpio_selected ^= bit;
            if let Some(p) = self.peripherals[i].as_mut() {
                if asserted {
                    p.select(t);
                } else {
                    p.deselect(t);
                }
            }
        }
    }

    /// Chip selects that follow SER (not a GPIO wire).
    fn native_mask(&self) -> u32 {
        self.gpio_cs
            .iter()
            .enumerate()
            .filter(|(_, w)| w.is_none())
            .fold(0, |m, (i, _)| m | 1 << i)
            | !((1u32 << self.gpio_cs.len().min(31)) - 1)
    }

    /// Statistics of the attached peripherals, each under `NAME.csN`.
    pub fn peripheral_stats(&self) -> Vec<Stat> {
        self.peripherals
            .iter()
            .enumerate()
            .filter_map(|(cs, p)| p.as_ref().map(|p| (cs, p)))
            .flat_map(|(cs, p)| p.peripheral_stats(&format!("{}.cs{cs}", self.name)))
            .collect()
    }

    /// Put `dev` on chip select `cs` (false if there is no such chip select).
    pub fn attach(&mut self, cs: u32, dev: Box<dyn SpiPeripheral>) -> bool {
        match self.peripherals.get_mut(cs as usize) {
            Some(slot) => {
                *slot = Some(dev);
                true
            }
            None => false,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn config(&self) -> SsiConfig {
        self.cfg
    }
    pub fn size(&self) -> u64 {
        SIZE
    }
    /// Level of the interrupt output.
    pub fn irq_level(&self) -> bool {
        self.irq_level
    }

    /// Cycle of the next thing this device does on its own (end of the
    /// frame on the wire), if anything.
    pub fn next_event(&self) -> Option<u64> {
        let own = self.shift.map(|s| s.end);
        self.peripherals
            .iter()
            .flatten()
            .filter_map(|p| p.next_event())
            .chain(own)
            .min()
    }

    /// Run the wire up to cycle `now`: finish every frame ending by then and
    /// start the ones that follow back to back.
    pub fn advance(&mut self, now: u64) {
        while let Some(s) = self.shift {
            if s.end > now {
                break;
            }
            self.now = self.now.max(s.end);
            self.finish_frame(s);
        }
        self.now = self.now.max(now);
        for p in self.peripherals.iter_mut().flatten() {
            p.advance(self.now);
        }
        self.update(self.now);
    }

    /// Register read of `size` (1, 2, 4) bytes at `offset` at cycle `now`.
    pub fn read(&mut self, offset: u64, size: u8, now: u64) -> Result<u64, BadAccess> {
        if !matches!(size, 1 | 2 | 4) || offset & (size as u64 - 1) != 0 || offset >= SIZE {
            return Err(BadAccess);
        }
        let is_dr = (DR..DR_END).contains(&offset);
        if is_dr && offset & 3 != 0 {
            return Err(BadAccess);
        }
        self.advance(now);
        let word = offset & !3;
        let v = self.read_reg(word);
        self.update(self.now);
        Ok(((v as u64) >> ((offset % 4) * 8)) & crate::width_mask(size))
    }

    /// Register write of the low `size` (1, 2, 4) bytes of `val` at cycle
    /// `now`. A narrow write to a register (word-aligned) writes the whole
    /// register zero-extended, like an APB bus without byte strobes.
    pub fn write(&mut self, offset: u64, size: u8, val: u64, now: u64) -> Result<(), BadAccess> {
        if !matches!(size, 1 | 2 | 4) || offset & 3 != 0 || offset >= SIZE {
            return Err(BadAccess);
        }
        self.advance(now);
        self.write_reg(offset, (val & crate::width_mask(size)) as u32);
        self.update(self.now);
        Ok(())
    }

    fn depth(&self) -> usize {
        self.cfg.fifo_depth as usize
    }
    fn tmod(&self) -> u32 {
        (self.ctrlr0 >> 8) & 3
    }
    fn bits(&self) -> u8 {
        ((self.ctrlr0 & 0xf) as u8 + 1).max(4)
    }
    fn word_mask(&self) -> u16 {
        (((1u32 << self.bits()) - 1) & 0xffff) as u16
    }
    fn cs_mask(&self) -> u32 {
        (1u32 << self.cfg.num_cs) - 1
    }

    /// Simulated cycles one frame of `bits` takes at the programmed divider.
    pub fn frame_cycles(&self, bits: u8) -> u64 {
        let num = bits as u128 * self.baudr as u128 * self.cfg.core_hz as u128;
        num.div_ceil(self.cfg.ssi_clk_hz as u128)
            .clamp(1, u64::MAX as u128) as u64
    }

    fn raw_status(&self) -> u32 {
        let mut r = self.latched;
        if self.enabled && self.tx.len() <= self.txftlr as usize {
            r |= INT_TXEI;
        }
        if self.rx.len() > self.rxftlr as usize {
            r |= INT_RXFI;
        }
        r
    }

    fn status(&self) -> u32 {
        let mut sr = 0;
        if self.shift.is_some() || self.rx_only_left > 0 {
            sr |= SR_BUSY;
        }
        if self.tx.len() < self.depth() {
            sr |= SR_TFNF;
        }
        if self.tx.is_empty() {
            sr |= SR_TFE;
        }
        if !self.rx.is_empty() {
            sr |= SR_RFNE;
        }
        if self.rx.len() >= self.depth() {
            sr |= SR_RFF;
        }
        sr
    }

    fn read_reg(&mut self, reg: u64) -> u32 {
        match reg {
            CTRLR0 => self.ctrlr0,
            CTRLR1 => self.ctrlr1,
            SSIENR => self.enabled as u32,
            MWCR => self.mwcr,
            SER => self.ser,
            BAUDR => self.baudr,
            TXFTLR => self.txftlr,
            RXFTLR => self.rxftlr,
            TXFLR => self.tx.len() as u32,
            RXFLR => self.rx.len() as u32,
            SR => self.status(),
            IMR => self.imr,
            ISR => self.raw_status() & self.imr,
            RISR => self.raw_status(),
            TXOICR => self.take(INT_TXOI),
            RXOICR => self.take(INT_RXOI),
            RXUICR => self.take(INT_RXUI),
            MSTICR => self.take(INT_MSTI),
            ICR => self.take(INT_TXOI | INT_RXOI | INT_RXUI | INT_MSTI),
            DMACR => self.dmacr,
            DMATDLR => self.dmatdlr,
            DMARDLR => self.dmardlr,
            IDR => self.cfg.id,
            VERSION => VERSION_ID,
            RX_SAMPLE_DLY => self.rx_sample_dly,
            r if (DR..DR_END).contains(&r) => match self.rx.pop_front() {
                Some(w) => w as u32,
                None => {
                    self.latched |= INT_RXUI;
                    self.stat_rxu += 1;
                    0
                }
            },
            _ => 0,
        }
    }

    /// Read-to-clear: returns whether any of `bits` was latched.
    fn take(&mut self, bits: u32) -> u32 {
        let was = self.latched & bits != 0;
        self.latched &= !bits;
        was as u32
    }

    fn write_reg(&mut self, reg: u64, v: u32) {
        let depth = self.cfg.fifo_depth;
        let t = self.now;
        match reg {
            // Writable only while disabled, as on the chip.
            CTRLR0 | CTRLR1 | BAUDR | MWCR if self.enabled => self.stat_ignored_writes += 1,
            CTRLR0 => self.ctrlr0 = v & CTRLR0_MASK,
            CTRLR1 => self.ctrlr1 = v & 0xffff,
            BAUDR => self.baudr = v & 0xfffe,
            MWCR => self.mwcr = v & 7,
            SSIENR => self.set_enabled(v & 1 != 0, t),
            SER => {
                self.ser = v & self.cs_mask();
                self.try_start(t);
            }
            // A threshold at or above the depth is not written (this is how
            // the driver finds the depth).
            TXFTLR | RXFTLR | DMATDLR | DMARDLR if v >= depth => self.stat_ignored_writes += 1,
            TXFTLR => self.txftlr = v,
            RXFTLR => self.rxftlr = v,
            DMATDLR => self.dmatdlr = v,
            DMARDLR => self.dmardlr = v,
            IMR => self.imr = v & INT_ALL,
            DMACR => self.dmacr = v & 3,
            RX_SAMPLE_DLY => self.rx_sample_dly = v & 0xff,
            r if (DR..DR_END).contains(&r) => self.push_tx(v as u16, t),
            _ => {}
        }
    }

    fn push_tx(&mut self, word: u16, t: u64) {
        if !self.enabled {
            self.stat_ignored_writes += 1;
            return;
        }
        if self.tx.len() >= self.depth() {
            self.latched |= INT_TXOI;
            self.stat_txo += 1;
            return;
        }
        self.tx.push_back(word & self.word_mask());
        self.try_start(t);
    }

    fn set_enabled(&mut self, on: bool, t: u64) {
        if on == self.enabled {
            return;
        }
        self.enabled = on;
        if !on {
            self.shift = None;
            self.tx.clear();
            self.rx.clear();
            self.rx_only_left = 0;
            self.eeprom_tx = false;
            self.latched = 0;
            self.release_cs(t);
        } else {
            self.try_start(t);
        }
    }

    fn release_cs(&mut self, t: u64) {
        let cs = std::mem::take(&mut self.active_cs) & self.native_mask();
        for (i, p) in self.peripherals.iter_mut().enumerate() {
            if cs & (1 << i) != 0 {
                if let Some(p) = p {
                    p.deselect(t);
                }
            }
        }
    }

    /// Start the next frame at cycle `t` if the controller can; release chip
    /// select if the transfer has run dry.
    fn try_start(&mut self, t: u64) {
        if self.shift.is_some() {
            return;
        }
        let can = self.enabled && self.baudr != 0 && self.ser != 0;
        let next = if !can {
            None
        } else {
            match self.tmod() {
                TMOD_TR | TMOD_TO => self.tx.pop_front().map(|w| (w, self.tmod() == TMOD_TR)),
                TMOD_RO => {
                    if self.rx_only_left == 0 && self.tx.pop_front().is_some() {
                        self.rx_only_left = self.ctrlr1 + 1;
                    }
                    (self.rx_only_left > 0).then(|| {
                        self.rx_only_left -= 1;
                        (0, true)
                    })
                }
                _ /* TMOD_EEPROM */ => {
                    if let Some(w) = self.tx.pop_front() {
                        self.eeprom_tx = true;
                        Some((w, false))
                    } else {
                        if self.eeprom_tx {
                            self.eeprom_tx = false;
                            self.rx_only_left = self.ctrlr1 + 1;
                        }
                        (self.rx_only_left > 0).then(|| {
                            self.rx_only_left -= 1;
                            (0, true)
                        })
                    }
                }
            }
        };
        let Some((word, receive)) = next else {
            if self.active_cs != 0 {
                self.release_cs(t);
            }
            return;
        };
        if self.active_cs != self.ser {
            self.release_cs(t);
            self.active_cs = self.ser;
            self.stat_transfers += 1;
            let loopback = self.ctrlr0 & CTRLR0_SRL != 0;
            let native = self.active_cs & self.native_mask();
            for (i, p) in self.peripherals.iter_mut().enumerate() {
                if native & (1 << i) != 0 && !loopback {
                    if let Some(p) = p {
                        p.select(t);
                    }
                }
            }
        }
        let bits = self.bits();
        let end = t.saturating_add(self.frame_cycles(bits));
        self.shift = Some(Shift {
            word,
            bits,
            end,
            cs: self.active_cs,
            receive,
        });
    }

    fn finish_frame(&mut self, s: Shift) {
        let t = s.end;
        self.shift = None;
        self.stat_frames += 1;
        let miso = if self.ctrlr0 & CTRLR0_SRL != 0 {
            s.word
        } else {
            let mut m = 0u16;
            // A GPIO-selected device also needs its wire asserted.
            let cs = s.cs & (self.native_mask() | self.gpio_selected);
            for (i, p) in self.peripherals.iter_mut().enumerate() {
                if cs & (1 << i) != 0 {
                    if let Some(p) = p {
                        m |= p.exchange(s.word, s.bits, t);
                    }
                }
            }
            m
        };
        if s.receive {
            if self.rx.len() >= self.depth() {
                self.latched |= INT_RXOI;
                self.stat_rxo += 1;
            } else {
                self.rx.push_back(miso & self.word_mask());
            }
        }
        self.try_start(t);
        self.update(t);
    }

    /// Re-derive the interrupt output and DMA requests after a change.
    fn update(&mut self, t: u64) {
        let level = self.raw_status() & self.imr != 0;
        if level != self.irq_level {
            if level {
                self.stat_irqs += 1;
            }
            self.irq_level = level;
            if let Some(irq) = &self.irq {
                irq.set_level(level);
            }
        }
        let depth = self.depth();
        let tx = if self.enabled && self.dmacr & DMACR_TDMAE != 0 {
            DmaRequest {
                burst: self.tx.len() <= self.dmatdlr as usize,
                single: self.tx.len() < depth,
            }
        } else {
            DmaRequest::NONE
        };
        let rx = if self.enabled && self.dmacr & DMACR_RDMAE != 0 {
            DmaRequest {
                burst: self.rx.len() > self.dmardlr as usize,
                single: !self.rx.is_empty(),
            }
        } else {
            DmaRequest::NONE
        };
        if tx != self.req_tx {
            self.req_tx = tx;
            if let Some(l) = &self.dma_tx {
                l.set_request(tx, t);
            }
        }
        if rx != self.req_rx {
            self.req_rx = rx;
            if let Some(l) = &self.dma_rx {
                l.set_request(rx, t);
            }
        }
    }

    /// Device-tree nodes: the controller under `/soc` (with its attached
    /// peripherals as children) and the fixed clock it runs from.
    pub fn fdt_nodes(&self, base: u64, r: &SsiFdt) -> Vec<(Placement, FdtNode)> {
        self.fdt_nodes_with(base, r, &BTreeMap::new())
    }

    /// [`Self::fdt_nodes`], with the phandles of the board's devices for
    /// peripherals whose nodes refer to them.
    pub fn fdt_nodes_with(
        &self,
        base: u64,
        r: &SsiFdt,
        phandles: &BTreeMap<String, u32>,
    ) -> Vec<(Placement, FdtNode)> {
        let clock = FdtNode::new(format!("{}-clk", self.name))
            .str("compatible", "fixed-clock")
            .u32("#clock-cells", 0)
            .u32(
                "clock-frequency",
                self.cfg.ssi_clk_hz.min(u32::MAX as u64) as u32,
            )
            .u32("phandle", r.clock);
        let mut node = FdtNode::new(format!("spi@{base:x}"))
            .str("compatible", "snps,dw-apb-ssi")
            .reg(base, SIZE);
        if let Some(irq) = r.irq {
            node = node
                .u32("interrupt-parent", r.interrupt_parent)
                .u32("interrupts", irq);
        }
        node = node
            .u32("clocks", r.clock)
            .u32("num-cs", self.cfg.num_cs)
            .u32("reg-io-width", 4)
            .u32("#address-cells", 1)
            .u32("#size-cells", 0);
        if let Some(d) = r.dma {
            node = node
                .u32s(
                    "dmas",
                    vec![d.controller, d.rx_handshake, d.controller, d.tx_handshake],
                )
                .strs("dma-names", &["rx", "tx"]);
        }
        for (cs, p) in self.peripherals.iter().enumerate() {
            if let Some(child) = p
                .as_ref()
                .and_then(|p| p.fdt_node_with(cs as u32, phandles))
            {
                node = node.child(child);
            }
        }
        vec![(Placement::Root, clock), (Placement::Soc, node)]
    }

    pub fn stats(&self) -> Vec<Stat> {
        let n = &self.name;
        vec![
            Stat::new(
                format!("{n}.frames"),
                self.stat_frames,
                "data frames shifted on the wire",
            ),
            Stat::new(
                format!("{n}.transfers"),
                self.stat_transfers,
                "chip-select assertions",
            ),
            Stat::new(
                format!("{n}.tx_overflows"),
                self.stat_txo,
                "writes to a full TX FIFO (TXOI)",
            ),
            Stat::new(
                format!("{n}.rx_overflows"),
                self.stat_rxo,
                "frames lost to a full RX FIFO (RXOI)",
            ),
            Stat::new(
                format!("{n}.rx_underflows"),
                self.stat_rxu,
                "reads of an empty RX FIFO (RXUI)",
            ),
            Stat::new(
                format!("{n}.irqs"),
                self.stat_irqs,
                "rising edges of the interrupt output",
            ),
            Stat::new(
                format!("{n}.ignored_writes"),
                self.stat_ignored_writes,
                "register writes the chip ignores",
            ),
        ]
    }
}

impl DmaTarget for DwSsi {
    fn target_read(&mut self, offset: u64, size: u8, now: u64) -> Option<u64> {
        self.read(offset, size, now).ok()
    }
    fn target_write(&mut self, offset: u64, size: u8, val: u64, now: u64) -> bool {
        self.write(offset, size, val, now).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lines::{DmaHandshake, HandshakeWires};
    use crate::spi::{SinkLog, SpiSink};
    use crate::WireIrq;

    /// 1 GHz core, 100 MHz ssi_clk, depth 7, 4 chip selects; a sink on CS 0.
    fn ssi() -> (DwSsi, WireIrq, HandshakeWires, SinkLog) {
        let irq = WireIrq::new();
        let wires = HandshakeWires::new(2);
        let mut s = DwSsi::new(
            "spi0",
            SsiConfig::default(),
            Some(Box::new(irq.clone())),
            Some(Box::new(wires.line(1))),
            Some(Box::new(wires.line(0))),
        );
        let sink = SpiSink::new(0, 25_000_000);
        let log = sink.log();
        assert!(s.attach(0, Box::new(sink)));
        (s, irq, wires, log)
    }

    fn w(s: &mut DwSsi, off: u64, v: u64, now: u64) {
        s.write(off, 4, v, now).unwrap();
    }
    fn r(s: &mut DwSsi, off: u64, now: u64) -> u64 {
        s.read(off, 4, now).unwrap()
    }

    /// What `dw_spi_hw_init` does at probe (6.1 and 6.12).
    fn probe(s: &mut DwSsi) -> (u32, u32, bool) {
        // dw_spi_reset_chip
        w(s, SSIENR, 0, 0);
        let imr = r(s, IMR, 0);
        w(s, IMR, imr & !0xff, 0);
        r(s, ICR, 0);
        w(s, SER, 0, 0);
        w(s, SSIENR, 1, 0);
        assert_eq!(r(s, VERSION, 0) as u32, VERSION_ID);
        // 6.12: num-cs auto-detection through SER.
        w(s, SER, 0xffff, 0);
        let num_cs = (r(s, SER, 0) as u32).count_ones();
        w(s, SER, 0, 0);
        // FIFO depth: write TXFTLR until it no longer sticks.
        let mut fifo = 1;
        while fifo < 256 {
            w(s, TXFTLR, fifo, 0);
            if r(s, TXFTLR, 0) != fifo {
                break;
            }
            fifo += 1;
        }
        w(s, TXFTLR, 0, 0);
        // DFS field detection (PSSI).
        let tmp = r(s, CTRLR0, 0);
        w(s, SSIENR, 0, 0);
        w(s, CTRLR0, 0xffff_ffff, 0);
        let cr0 = r(s, CTRLR0, 0);
        w(s, CTRLR0, tmp, 0);
        w(s, SSIENR, 1, 0);
        (
            if fifo == 1 { 0 } else { fifo as u32 },
            num_cs,
            cr0 & 0xf == 0,
        )
    }

    #[test]
    fn probe_discovers_depth_chip_selects_and_16_bit_frames() {
        let (mut s, irq, _, _) = ssi();
        let (fifo, num_cs, dfs32) = probe(&mut s);
        assert_eq!(
            fifo, FIFO_DEPTH,
            "8-byte writes must exceed the FIFO (dw_spi_can_dma: len > fifo_len)"
        );
        assert_eq!(num_cs, 4);
        assert!(!dfs32, "DFS lives in CTRLR0[3:0]: bits_per_word 4..16");
        assert_eq!(r(&mut s, CTRLR0, 0), 0x7, "CTRLR0 restored");
        assert!(!irq.is_high(), "all interrupts masked after reset_chip");
        // spi-dw-dma's burst set-up: DMARDLR = fifo/2 - 1, DMATDLR = fifo/2.
        w(&mut s, DMARDLR, 2, 0);
        w(&mut s, DMATDLR, 3, 0);
        assert_eq!((r(&mut s, DMARDLR, 0), r(&mut s, DMATDLR, 0)), (2, 3));
        w(&mut s, DMATDLR, 7, 0);
        assert_eq!(r(&mut s, DMATDLR, 0), 3, "a level >= depth is not written");
    }

    #[test]
    fn set_up_registers_only_change_while_disabled() {
        let (mut s, _, _, _) = ssi();
        w(&mut s, SSIENR, 1, 0);
        w(&mut s, CTRLR0, 0x0f, 0);
        w(&mut s, BAUDR, 8, 0);
        w(&mut s, CTRLR1, 5, 0);
        assert_eq!(
            (
                r(&mut s, CTRLR0, 0),
                r(&mut s, BAUDR, 0),
                r(&mut s, CTRLR1, 0)
            ),
            (7, 0, 0)
        );
        w(&mut s, SSIENR, 0, 0);
        w(&mut s, BAUDR, 0x1_0007, 0);
        assert_eq!(r(&mut s, BAUDR, 0), 6, "SCKDV is even and 16 bits");
        w(&mut s, CTRLR0, 0x0f, 0);
        assert_eq!(r(&mut s, CTRLR0, 0), 0xf);
        assert!(
            s.read(SR, 8, 0).is_err()
                && s.read(SR + 1, 2, 0).is_err()
                && s.write(SR + 2, 2, 0, 0).is_err()
        );
        assert_eq!(
            s.read(VERSION + 3, 1, 0),
            Ok(0x33),
            "narrow reads see the register's bytes"
        );
        assert!(s.read(SIZE, 4, 0).is_err());
    }

    /// spi-dw-core's polled transfer (`IRQ_NOTCONNECTED`, reachable with a
    /// patched spi-dw-mmio): write up to the FIFO, wait, read back, check RISR.
    #[test]
    fn polled_pio_write_reaches_the_sink_at_the_wire_time() {
        let (mut s, irq, _, log) = ssi();
        probe(&mut s);
        w(&mut s, SER, 1, 1000); // set_cs(true)
        w(&mut s, SSIENR, 0, 1000);
        w(&mut s, CTRLR0, 0x07, 1000); // 8 bits, TR, mode 0
        w(&mut s, BAUDR, 10, 1000); // 100 MHz / 10 = 10 MHz: 800 cycles per byte
        let imr = r(&mut s, IMR, 1000);
        w(&mut s, IMR, imr & !0xff, 1000);
        w(&mut s, SSIENR, 1, 1000);
        let data = [0xdeu8, 0xad, 0xbe, 0xef];
        for (i, b) in data.iter().enumerate() {
            s.write(DR, 4, *b as u64, 2000 + i as u64).unwrap();
        }
        assert_eq!(s.next_event(), Some(2800));
        assert_eq!(r(&mut s, SR, 2001) as u32 & SR_BUSY, SR_BUSY);
        assert_eq!(r(&mut s, TXFLR, 2004), 3, "first byte is on the wire");
        // After the driver's delay the four answers are in the RX FIFO.
        assert_eq!(r(&mut s, RXFLR, 5199), 3);
        assert_eq!(r(&mut s, RXFLR, 5200), 4);
        for _ in 0..4 {
            assert_eq!(r(&mut s, DR, 5300), 0, "the sink answers zeros");
        }
        assert_eq!(
            r(&mut s, RISR, 5300) as u32 & (INT_RXOI | INT_RXUI | INT_TXOI),
            0
        );
        assert_eq!(r(&mut s, SR, 5300) as u32, SR_TFNF | SR_TFE);
        w(&mut s, SER, 0, 5400);
        let f = log.frames();
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].bytes, data);
        assert_eq!(f[0].start, 2000);
        assert_eq!(f[0].byte_times, vec![2800, 3600, 4400, 5200]);
        assert!(!irq.is_high());
        assert_eq!(s.frame_cycles(8), 800, "bytes x 8 / f_sck");
    }

    /// Every register at `now`, read in order (the data register pops the
    /// RX FIFO and the clear registers clear: both devices see the same reads).
    fn all_regs(s: &mut DwSsi, now: u64) -> Vec<u64> {
        (0..SIZE).step_by(4).map(|o| r(s, o, now)).collect()
    }

    #[test]
    fn a_restored_controller_and_sink_go_on_as_the_saved_ones() {
        use crate::Persist;
        let (mut s, irq, _, log) = ssi();
        probe(&mut s);
        w(&mut s, SSIENR, 0, 0);
        w(&mut s, CTRLR0, 0x07, 0);
        w(&mut s, BAUDR, 10, 0);
        w(&mut s, IMR, (INT_TXOI | INT_RXFI) as u64, 0);
        w(&mut s, RXFTLR, 2, 0);
        w(&mut s, DMATDLR, 3, 0);
        w(&mut s, DMACR, 3, 0);
        w(&mut s, SSIENR, 1, 0);
        w(&mut s, SER, 1, 0);
        for i in 0..8 {
            w(&mut s, DR, 0x30 + i, 100); // the 8th overflows
        }
        // Mid-transfer: a frame on the wire, words in both FIFOs.
        s.advance(2_500);
        assert!(s.shift.is_some() && !s.tx.is_empty() && !s.rx.is_empty());
        let saved = s.save().unwrap();

        let (mut t, irq2, _, log2) = ssi();
        irq2.set_level(irq.is_high()); // the board's PLIC keeps line levels
        t.restore(&saved).unwrap();
        assert_eq!(t.save().unwrap(), saved);
        assert_eq!(log2.frames(), log.frames(), "the sink's record is back");
        assert_eq!(t.next_event(), s.next_event());
        assert_eq!(all_regs(&mut t, 2_600), all_regs(&mut s, 2_600));
        for d in [&mut s, &mut t] {
            w(d, DR, 0x55, 3_000);
            d.advance(9_000);
            w(d, SER, 0, 9_100);
            w(d, SER, 1, 9_200);
            w(d, DR, 0x66, 9_300);
            d.advance(20_000);
        }
        assert_eq!(all_regs(&mut t, 20_000), all_regs(&mut s, 20_000));
        assert_eq!(t.stats(), s.stats());
        assert_eq!(log2.frames(), log.frames());
        assert_eq!(log.frames().len(), 2);
        assert_eq!(irq2.is_high(), irq.is_high());
    }

    #[test]
    fn a_controller_refuses_garbage_other_sections_and_peripherals_without_state() {
        use crate::Persist;
        let (mut s, _, _, _) = ssi();
        let saved = s.save().unwrap();
        for bad in [&b"nonsense"[..], b"[]", b"[{}, []]"] {
            assert!(s.restore(bad).is_err());
        }
        let e = s
            .restore(&crate::Syscon::new().save().unwrap())
            .unwrap_err();
        assert!(!e.is_empty());
        // Another chip select layout.
        let mut bare = DwSsi::new("spi0", SsiConfig::default(), None, None, None);
        let e = bare.restore(&saved).unwrap_err();
        assert!(e.contains("chip selects in use"), "{e}");
        // A peripheral without save/restore: the snapshot is refused by name.
        struct Mute;
        impl SpiPeripheral for Mute {
            fn select(&mut self, _: u64) {}
            fn exchange(&mut self, _: u16, _: u8, _: u64) -> u16 {
                0
            }
            fn deselect(&mut self, _: u64) {}
        }
        s.attach(2, Box::new(Mute));
        assert!(!s.persistent());
        let e = s.save().unwrap_err();
        assert!(e.contains("chip select 2"), "{e}");
    }

    #[test]
    fn native_chip_select_drops_when_the_fifo_runs_dry() {
        // An 8-byte polled write with a 7-deep FIFO: the driver writes 7,
        // waits, then writes the 8th after the wire went idle.
        let (mut s, _, _, log) = ssi();
        probe(&mut s);
        w(&mut s, SER, 1, 0);
        w(&mut s, SSIENR, 0, 0);
        w(&mut s, BAUDR, 10, 0);
        w(&mut s, SSIENR, 1, 0);
        for i in 0..7 {
            w(&mut s, DR, i, 100);
        }
        assert_eq!(r(&mut s, TXFLR, 100), 6);
        for _ in 0..7 {
            r(&mut s, DR, 6000);
        }
        w(&mut s, DR, 7, 7000);
        s.advance(10_000);
        let f = log.frames();
        assert_eq!(f.len(), 2, "CS released between the two bursts");
        assert_eq!((f[0].bytes.len(), f[1].bytes.len()), (7, 1));
        assert_eq!(f[1].byte_times, vec![7800]);
        assert_eq!(log.regroup(8), vec![(7800, (0..8).collect())]);
    }

    #[test]
    fn interrupts_latch_mask_and_clear() {
        let (mut s, irq, _, _) = ssi();
        probe(&mut s);
        // Disabled controller: FIFO writes are dropped.
        w(&mut s, SSIENR, 0, 0);
        w(&mut s, DR, 1, 0);
        assert_eq!(r(&mut s, TXFLR, 0), 0);
        w(&mut s, SSIENR, 1, 0); // SER = 0: nothing leaves the FIFO
        for i in 0..8 {
            w(&mut s, DR, i, 10);
        }
        assert_eq!(r(&mut s, TXFLR, 10), 7);
        assert_eq!(
            r(&mut s, RISR, 10) as u32 & INT_TXOI,
            INT_TXOI,
            "8th write overflowed"
        );
        assert!(!irq.is_high(), "masked");
        w(&mut s, IMR, INT_TXOI as u64, 10);
        assert!(irq.is_high());
        assert_eq!(r(&mut s, ISR, 10) as u32, INT_TXOI);
        assert_eq!(r(&mut s, TXOICR, 10), 1);
        assert_eq!(r(&mut s, TXOICR, 10), 0);
        assert!(!irq.is_high());
        r(&mut s, DR, 11);
        assert_eq!(r(&mut s, RISR, 11) as u32 & INT_RXUI, INT_RXUI);
        assert_eq!(r(&mut s, ICR, 11), 1);
        assert_eq!(r(&mut s, RISR, 11) as u32 & INT_RXUI, 0);
        // TX-empty threshold: TXEI while TXFLR <= TXFTLR.
        w(&mut s, TXFTLR, 3, 20);
        w(&mut s, RXFTLR, 1, 20);
        w(&mut s, IMR, (INT_TXEI | INT_RXFI) as u64, 20);
        assert!(!irq.is_high());
        w(&mut s, BAUDR, 0, 20); // ignored: enabled
        w(&mut s, SER, 1, 30); // SCKDV is 0: SCLK off, still nothing moves
        assert_eq!(s.next_event(), None);
        w(&mut s, SSIENR, 0, 40);
        assert_eq!(
            (r(&mut s, TXFLR, 40), r(&mut s, RISR, 40)),
            (0, 0),
            "disable empties FIFOs and latches"
        );
        w(&mut s, BAUDR, 2, 40); // 50 MHz: 160 cycles per byte
        w(&mut s, SSIENR, 1, 40);
        assert!(irq.is_high(), "empty FIFO is below the TX threshold");
        for i in 0..5 {
            w(&mut s, DR, i, 50);
        }
        assert!(!irq.is_high(), "TXFLR 4 > 3");
        s.advance(210);
        assert!(irq.is_high(), "TXFLR 3 once the second frame starts");
        assert_eq!(r(&mut s, ISR, 210) as u32, INT_TXEI);
        s.advance(370);
        assert_eq!(
            r(&mut s, ISR, 370) as u32,
            INT_TXEI | INT_RXFI,
            "two frames received, RXFTLR 1"
        );
    }

    #[test]
    fn dma_requests_follow_fifo_levels() {
        let (mut s, _, wires, _) = ssi();
        probe(&mut s);
        w(&mut s, DMATDLR, 3, 0);
        w(&mut s, DMARDLR, 1, 0);
        assert_eq!(wires.request(1).0, DmaRequest::NONE, "TDMAE off");
        w(&mut s, DMACR, (DMACR_TDMAE | DMACR_RDMAE) as u64, 100);
        assert_eq!(
            wires.request(1),
            (
                DmaRequest {
                    burst: true,
                    single: true
                },
                100
            )
        );
        assert_eq!(wires.request(0).0, DmaRequest::NONE);
        for i in 0..4 {
            w(&mut s, DR, i, 200); // SER is 0: stays in the FIFO
        }
        assert_eq!(
            wires.request(1),
            (
                DmaRequest {
                    burst: false,
                    single: true
                },
                200
            )
        );
        for i in 0..3 {
            w(&mut s, DR, i, 300);
        }
        assert_eq!(wires.request(1).0, DmaRequest::NONE, "full");
        w(&mut s, SSIENR, 0, 400);
        w(&mut s, BAUDR, 10, 400);
        w(&mut s, SER, 1, 400);
        w(&mut s, SSIENR, 1, 400);
        assert_eq!(
            wires.request(1).0,
            DmaRequest {
                burst: true,
                single: true
            },
            "disable emptied it"
        );
        w(&mut s, DR, 0x55, 500);
        w(&mut s, DR, 0x66, 500);
        s.advance(1300);
        assert_eq!(
            wires.request(0),
            (
                DmaRequest {
                    burst: false,
                    single: true
                },
                1300
            )
        );
        s.advance(2100);
        assert_eq!(
            wires.request(0),
            (
                DmaRequest {
                    burst: true,
                    single: true
                },
                2100
            ),
            "RXFLR 2 > DMARDLR 1"
        );
        w(&mut s, DMACR, 0, 2200);
        assert_eq!(
            (wires.request(0).0, wires.request(1).0),
            (DmaRequest::NONE, DmaRequest::NONE)
        );
    }

    #[test]
    fn receive_only_eeprom_and_loopback_modes() {
        let (mut s, _, _, log) = ssi();
        probe(&mut s);
        // RO: one dummy write clocks NDF+1 frames.
        w(&mut s, SSIENR, 0, 0);
        w(&mut s, CTRLR0, (TMOD_RO << 8 | 7) as u64, 0);
        w(&mut s, CTRLR1, 2, 0);
        w(&mut s, BAUDR, 2, 0);
        w(&mut s, SER, 1, 0);
        w(&mut s, SSIENR, 1, 0);
        w(&mut s, DR, 0xff, 100);
        s.advance(100 + 3 * 160);
        assert_eq!(r(&mut s, RXFLR, 580), 3);
        assert_eq!(s.next_event(), None);
        assert_eq!(log.frames()[0].bytes, vec![0, 0, 0], "clocks zeros out");
        // EEPROM read: send the command, then receive NDF+1.
        w(&mut s, SSIENR, 0, 600);
        w(&mut s, CTRLR0, (TMOD_EEPROM << 8 | 7) as u64, 600);
        w(&mut s, CTRLR1, 1, 600);
        w(&mut s, SSIENR, 1, 600);
        w(&mut s, DR, 0x03, 700);
        w(&mut s, DR, 0x10, 700);
        s.advance(700 + 4 * 160);
        assert_eq!(
            r(&mut s, RXFLR, 1340),
            2,
            "only the read phase lands in the RX FIFO"
        );
        assert_eq!(log.frames()[1].bytes, vec![0x03, 0x10, 0, 0]);
        // Loopback: TX comes back, the peripheral sees nothing.
        w(&mut s, SSIENR, 0, 1400);
        w(&mut s, CTRLR0, (CTRLR0_SRL | 7) as u64, 1400);
        w(&mut s, SSIENR, 1, 1400);
        w(&mut s, DR, 0xa5, 1500);
        s.advance(1660);
        assert_eq!(r(&mut s, DR, 1660), 0xa5);
        assert_eq!(log.frames().len(), 2);
        // 16-bit frames.
        w(&mut s, SSIENR, 0, 1700);
        w(&mut s, CTRLR0, 0xf, 1700);
        w(&mut s, SSIENR, 1, 1700);
        w(&mut s, DR, 0x1_beef, 1700);
        assert_eq!(s.next_event(), Some(1700 + 320));
        s.advance(2100);
        assert_eq!(log.frames()[2].bytes, vec![0xbe, 0xef]);
    }

    #[test]
    fn device_tree_node_with_and_without_interrupt_and_dma() {
        let (s, _, _, _) = ssi();
        let polled = SsiFdt {
            interrupt_parent: 3,
            irq: None,
            clock: 9,
            dma: None,
        };
        let nodes = s.fdt_nodes(0x1004_0000, &polled);
        assert_eq!(nodes.len(), 2);
        let (pc, clk) = &nodes[0];
        assert_eq!(*pc, Placement::Root);
        assert_eq!(
            clk.get("clock-frequency"),
            Some(&crate::fdt::Prop::U32(100_000_000))
        );
        assert_eq!(clk.get("phandle"), Some(&crate::fdt::Prop::U32(9)));
        let (p, n) = &nodes[1];
        assert_eq!(*p, Placement::Soc);
        assert_eq!(n.name, "spi@10040000");
        assert_eq!(
            n.get("compatible"),
            Some(&crate::fdt::Prop::Str("snps,dw-apb-ssi".into()))
        );
        assert!(n.get("interrupts").is_none() && n.get("dmas").is_none());
        assert_eq!(n.get("clocks"), Some(&crate::fdt::Prop::U32(9)));
        assert_eq!(n.get("num-cs"), Some(&crate::fdt::Prop::U32(4)));
        assert_eq!(n.children.len(), 1);
        assert_eq!(n.children[0].name, "spidev@0");
        let full = SsiFdt {
            irq: Some(12),
            dma: Some(SsiDmaFdt {
                controller: 7,
                tx_handshake: 1,
                rx_handshake: 0,
            }),
            ..polled
        };
        let n = &s.fdt_nodes(0x1004_0000, &full)[1].1;
        assert_eq!(n.get("interrupts"), Some(&crate::fdt::Prop::U32(12)));
        assert_eq!(n.get("interrupt-parent"), Some(&crate::fdt::Prop::U32(3)));
        assert_eq!(
            n.get("dmas"),
            Some(&crate::fdt::Prop::U32s(vec![7, 0, 7, 1]))
        );
        assert_eq!(
            n.get("dma-names"),
            Some(&crate::fdt::Prop::Strs(vec!["rx".into(), "tx".into()]))
        );
    }
}
