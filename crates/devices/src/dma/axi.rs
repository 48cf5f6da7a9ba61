//! DesignWare AXI DMA controller (`snps,axi-dma-1.01a`) with up to 8
//! channels (the "8-channel" register map Linux picks for `dma-channels ≤
//! 8`), as Linux's `dw-axi-dmac-platform` (6.1 and 6.12) drives it.
//!
//! * Common registers: ID, COMPVER, CFG (DMAC_EN, INT_EN), CHEN (enable,
//!   suspend, abort bits with their write enables), INTSTATUS, the COMMON_*
//!   interrupt registers (stored; no common errors are generated), RESET.
//! * Per channel (at 0x100 + 0x100 × n): SAR, DAR, BLOCK_TS, CTL, CFG, LLP,
//!   STATUS, SWHSSRC/DST, INTSTATUS_ENA, INTSTATUS, INTSIGNAL_ENA, INTCLEAR.
//!   An event sets its INTSTATUS bit only if enabled in INTSTATUS_ENA; the
//!   interrupt output is high while CFG.INT_EN and some channel has a status
//!   bit that INTSIGNAL_ENA passes.
//! * Transfers: single block from the registers (both multi-block types
//!   contiguous) or a linked list (both LL): 64-byte LLIs read from memory at
//!   `LLP & !0x3f`, written back with LLI_VALID cleared and the block size in
//!   `status_lo`. Block size is `(BLOCK_TS + 1) << SRC_TR_WIDTH` bytes. Memory
//!   sides move in bulk; a peripheral side moves items of its transfer width
//!   at its address (no increment). With a peripheral, a burst of MSIZE items
//!   moves on a burst request, and one item on a single request once fewer
//!   than MSIZE remain (the DW "single transaction region"). Mem-to-mem moves
//!   MSIZE-item chunks as fast as the timing allows. Peripheral-as-flow-
//!   controller modes are run with the DMAC as flow controller.
//! * Completion: BLOCK_TRF at the end of a block whose CTL.IOC_BlkTfr is set,
//!   DMA_TRF at the end of the last block (LLI_LAST, or the single block);
//!   the channel's CHEN bit is clear by then (Linux checks).
//! * Errors end the transfer (channel disabled) with a status bit: LLI read
//!   fault (LLI_RD_DEC/SLV), source or destination fault (SRC/DST_DEC/SLV),
//!   LLI write-back fault (LLI_WR_DEC/SLV), INVALID for an LLI without
//!   LLI_VALID, a block larger than `block_size`, a length the destination
//!   width does not divide, a revisited LLI (a loop) or a chain longer than
//!   `max_blocks`; MULTIBLKTYPE for unsupported multi-block types; WRONCHEN
//!   for a write to a running channel's set-up registers (the write is
//!   dropped).
//! * Time: an LLI fetch costs `lli_fetch_cycles`; a chunk costs
//!   `item_cycles` per item of the narrower side. Data moves at the chunk's
//!   start; the next chunk (or the completion) comes when its cost has
//!   elapsed. [`AxiDma::next_event`] / [`AxiDma::advance`] drive it; one
//!   `advance` call does at most [`MAX_STEPS`] steps, so no guest programming
//!   keeps the host in one call for long.

use std::collections::{BTreeSet, VecDeque};

use super::bus::{DmaFault, DmaMemory};
use crate::fdt::{FdtNode, Placement};
use crate::lines::{DmaHandshake, DmaRequest};
use crate::{BadAccess, IrqLine, Stat};

/// Register window: common block + 8 channel blocks, rounded to a page.
pub const SIZE: u64 = 0x1000;
pub const MAX_CHANNELS: u32 = 8;
/// `COMPVER`: "101*" (component 1.01a).
pub const COMPVER_ID: u32 = 0x3130_312a;
/// Steps (LLI fetches, chunks, completions) one `advance` call performs at most.
pub const MAX_STEPS: usize = 4096;

pub const DMAC_ID: u64 = 0x000;
pub const DMAC_COMPVER: u64 = 0x008;
pub const DMAC_CFG: u64 = 0x010;
pub const DMAC_CHEN: u64 = 0x018;
pub const DMAC_CHSUSPREG: u64 = 0x020;
pub const DMAC_CHABORTREG: u64 = 0x028;
pub const DMAC_INTSTATUS: u64 = 0x030;
pub const DMAC_COMMON_INTCLEAR: u64 = 0x038;
pub const DMAC_COMMON_INTSTATUS_ENA: u64 = 0x040;
pub const DMAC_COMMON_INTSIGNAL_ENA: u64 = 0x048;
pub const DMAC_COMMON_INTSTATUS: u64 = 0x050;
pub const DMAC_RESET: u64 = 0x058;

pub const CH_BASE: u64 = 0x100;
pub const CH_STRIDE: u64 = 0x100;
pub const CH_SAR: u64 = 0x000;
pub const CH_DAR: u64 = 0x008;
pub const CH_BLOCK_TS: u64 = 0x010;
pub const CH_CTL: u64 = 0x018;
pub const CH_CFG: u64 = 0x020;
pub const CH_LLP: u64 = 0x028;
pub const CH_STATUS: u64 = 0x030;
pub const CH_SWHSSRC: u64 = 0x038;
pub const CH_SWHSDST: u64 = 0x040;
pub const CH_BLK_TFR_RESUMEREQ: u64 = 0x048;
pub const CH_AXI_ID: u64 = 0x050;
pub const CH_AXI_QOS: u64 = 0x058;
pub const CH_INTSTATUS_ENA: u64 = 0x080;
pub const CH_INTSTATUS: u64 = 0x088;
pub const CH_INTSIGNAL_ENA: u64 = 0x090;
pub const CH_INTCLEAR: u64 = 0x098;

pub const CFG_DMAC_EN: u64 = 1 << 0;
pub const CFG_INT_EN: u64 = 1 << 1;

// Channel interrupt status bits.
pub const IRQ_BLOCK_TRF: u32 = 1 << 0;
pub const IRQ_DMA_TRF: u32 = 1 << 1;
pub const IRQ_SRC_DEC_ERR: u32 = 1 << 5;
pub const IRQ_DST_DEC_ERR: u32 = 1 << 6;
pub const IRQ_SRC_SLV_ERR: u32 = 1 << 7;
pub const IRQ_DST_SLV_ERR: u32 = 1 << 8;
pub const IRQ_LLI_RD_DEC_ERR: u32 = 1 << 9;
pub const IRQ_LLI_WR_DEC_ERR: u32 = 1 << 10;
pub const IRQ_LLI_RD_SLV_ERR: u32 = 1 << 11;
pub const IRQ_LLI_WR_SLV_ERR: u32 = 1 << 12;
pub const IRQ_INVALID_ERR: u32 = 1 << 13;
pub const IRQ_MULTIBLKTYPE_ERR: u32 = 1 << 14;
pub const IRQ_WRONCHEN_ERR: u32 = 1 << 19;
pub const IRQ_SUSPENDED: u32 = 1 << 29;
pub const IRQ_DISABLED: u32 = 1 << 30;
pub const IRQ_ABORTED: u32 = 1 << 31;
/// Linux's `DWAXIDMAC_IRQ_ALL_ERR`.
pub const IRQ_ALL_ERR: u32 = 0x003f_7fe0;

// CTL fields.
const CTL_SINC_NOINC: u64 = 1 << 4;
const CTL_DINC_NOINC: u64 = 1 << 6;
const CTL_IOC_BLKTFR: u64 = 1 << 58;
pub const CTL_LLI_LAST: u64 = 1 << 62;
pub const CTL_LLI_VALID: u64 = 1 << 63;

/// An LLI in memory (little endian, 64 bytes, 64-byte aligned).
pub const LLI_SIZE: usize = 64;
const LLI_CTL_HI: u64 = 0x24;
const LLI_STATUS_LO: u64 = 0x30;

/// Events kept for the host's timeline before the oldest are dropped.
pub const TRACE_LEN: usize = 4096;

/// What a channel did, for the host's timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum DmaEventKind {
    /// The channel was enabled (CHEN).
    Started,
    /// A block finished.
    BlockDone,
    /// The transfer finished (DMA_TRF).
    Done,
    /// The transfer ended early: disabled, aborted or an error (status bit).
    Stopped(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DmaEvent {
    pub cycle: u64,
    pub channel: u8,
    pub kind: DmaEventKind,
}

/// Build-time parameters (mirrored in the device-tree node).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AxiDmaConfig {
    /// Channels, 1..=8 (`dma-channels`).
    pub channels: u32,
    /// AXI master interfaces, 1 or 2 (`snps,dma-masters`).
    pub masters: u32,
    /// Master data width as log2(bytes), 0..=6 (`snps,data-width`).
    pub data_width: u32,
    /// Largest block in source items, per channel (`snps,block-size`).
    pub block_size: u32,
    /// LLIs one transfer may run through before it ends in an error.
    pub max_blocks: u32,
    /// Cycles to fetch one LLI.
    pub lli_fetch_cycles: u64,
    /// Cycles per item moved (of the narrower side).
    pub item_cycles: u64,
    /// Frequency of the fixed clock the node points at (core-clk, cfgr-clk).
    pub clk_hz: u64,
    /// Value of `DMAC_ID`.
    pub id: u32,
}

impl Default for AxiDmaConfig {
    fn default() -> Self {
        Self {
            channels: 8,
            masters: 1,
            data_width: 3,
            block_size: 4096,
            max_blocks: 1024,
            lli_fetch_cycles: 20,
            item_cycles: 4,
            clk_hz: 100_000_000,
            id: 0,
        }
    }
}

/// What the controller's device-tree node refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AxiDmaFdt {
    /// Phandle of this controller (clients' `dmas` point at it).
    pub phandle: u32,
    pub interrupt_parent: u32,
    pub irq: u32,
    /// Phandle given to the fixed clock node this controller writes.
    pub clock: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Phase {
    Idle,
    FetchLli,
    Transfer,
    BlockEnd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Src,
    Dst,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Chan {
    sar: u64,
    dar: u64,
    block_ts: u64,
    ctl: u64,
    cfg: u64,
    llp: u64,
    swhs_src: u64,
    swhs_dst: u64,
    swhs_since: [u64; 2],
    axi_id: u64,
    axi_qos: u64,
    int_ena: u32,
    int_stat: u32,
    sig_ena: u32,
    phase: Phase,
    suspended: bool,
    ready: u64,
    linked: bool,
    last: bool,
    lli_addr: u64,
    remaining: u64,
    block_bytes: u64,
    visited: BTreeSet<u64>,
    stat_transfers: u64,
    stat_blocks: u64,
    stat_bytes: u64,
    stat_errors: u64,
}

impl Chan {
    fn new() -> Self {
        Self {
            sar: 0,
            dar: 0,
            block_ts: 0,
            ctl: 0,
            cfg: 0,
            llp: 0,
            swhs_src: 0,
            swhs_dst: 0,
            swhs_since: [0; 2],
            axi_id: 0,
            axi_qos: 0,
            int_ena: 0,
            int_stat: 0,
            sig_ena: 0,
            phase: Phase::Idle,
            suspended: false,
            ready: 0,
            linked: false,
            last: false,
            lli_addr: 0,
            remaining: 0,
            block_bytes: 0,
            visited: BTreeSet::new(),
            stat_transfers: 0,
            stat_blocks: 0,
            stat_bytes: 0,
            stat_errors: 0,
        }
    }
    fn enabled(&self) -> bool {
        self.phase != Phase::Idle
    }
    fn tt_fc(&self) -> u64 {
        (self.cfg >> 32) & 7
    }
    /// Is this side of the transfer a peripheral (handshaking)?
    fn is_per(&self, side: Side) -> bool {
        let per = match self.tt_fc() {
            0 => (false, false),
            1 | 6 => (false, true),
            2 | 4 => (true, false),
            _ => (true, true),
        };
        if side == Side::Src {
            per.0
        } else {
            per.1
        }
    }
    fn hw_handshake(&self, side: Side) -> bool {
        let bit = if side == Side::Src { 35 } else { 36 };
        self.cfg & (1 << bit) == 0
    }
    fn per_number(&self, side: Side) -> u32 {
        let pos = if side == Side::Src { 39 } else { 44 };
        ((self.cfg >> pos) & 0xf) as u32
    }
    fn priority(&self) -> u32 {
        ((self.cfg >> 49) & 7) as u32
    }
    fn width(&self, side: Side) -> u32 {
        let pos = if side == Side::Src { 8 } else { 11 };
        ((self.ctl >> pos) & 7).min(6) as u32
    }
    fn msize(&self, side: Side) -> u64 {
        let pos = if side == Side::Src { 14 } else { 18 };
        let enc = ((self.ctl >> pos) & 0xf).min(9);
        if enc == 0 {
            1
        } else {
            1 << (enc + 1)
        }
    }
    fn increments(&self, side: Side) -> bool {
        let bit = if side == Side::Src {
            CTL_SINC_NOINC
        } else {
            CTL_DINC_NOINC
        };
        self.ctl & bit == 0
    }
    /// The side that paces the transfer, its item size and burst length.
    fn unit(&self) -> (Side, u64, u64) {
        let side = if self.is_per(Side::Dst) {
            Side::Dst
        } else {
            Side::Src
        };
        (side, 1 << self.width(side), self.msize(side))
    }
}

/// The controller.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct AxiDma {
    name: String,
    cfg: AxiDmaConfig,
    #[serde(skip)]
    irq: Box<dyn IrqLine>,
    /// The request wires (the board's; it restores their levels).
    #[serde(skip, default = "no_handshake")]
    hs: Box<dyn DmaHandshake>,
    now: u64,
    dmac_cfg: u64,
    common_stat_ena: u64,
    common_sig_ena: u64,
    common_stat: u64,
    chans: Vec<Chan>,
    irq_level: bool,
    stat_irqs: u64,
    stat_lli_fetches: u64,
    trace: VecDeque<DmaEvent>,
    trace_dropped: u64,
}

/// A stand-in while a state is decoded (the machine's wires are kept).
fn no_handshake() -> Box<dyn DmaHandshake> {
    Box::new(crate::lines::SignalHandshake::default())
}

crate::persist_checked!(AxiDma, keep: [irq, hs]);

impl AxiDma {
    /// A saved controller belongs here: same name and configuration.
    pub(crate) fn fits(&self, saved: &Self) -> Result<(), String> {
        crate::same(
            "DMA controller",
            &(&saved.name, saved.cfg),
            &(&self.name, self.cfg),
        )?;
        if saved.chans.len() != self.chans.len() {
            return Err(format!(
                "the snapshot's DMA controller has {} channels for {} configured",
                saved.chans.len(),
                saved.cfg.channels
            ));
        }
        Ok(())
    }
    /// Move the machine's ties from `old` into this (restored) controller.
    pub(crate) fn keep_ties(&mut self, old: &mut Self) {
        std::mem::swap(&mut self.irq, &mut old.irq);
        std::mem::swap(&mut self.hs, &mut old.hs);
    }

    pub fn new(
        name: impl Into<String>,
        cfg: AxiDmaConfig,
        irq: Box<dyn IrqLine>,
        hs: Box<dyn DmaHandshake>,
    ) -> Self {
        let cfg = AxiDmaConfig {
            channels: cfg.channels.clamp(1, MAX_CHANNELS),
            masters: cfg.masters.clamp(1, 2),
            data_width: cfg.data_width.min(6),
            block_size: cfg.block_size.clamp(1, 0x20_0000),
            max_blocks: cfg.max_blocks.max(1),
            lli_fetch_cycles: cfg.lli_fetch_cycles.max(1),
            item_cycles: cfg.item_cycles.max(1),
            ..cfg
        };
        let mut d = Self {
            name: name.into(),
            cfg,
            irq,
            hs,
            now: 0,
            dmac_cfg: 0,
            common_stat_ena: 0,
            common_sig_ena: 0,
            common_stat: 0,
            chans: (0..cfg.channels).map(|_| Chan::new()).collect(),
            irq_level: false,
            stat_irqs: 0,
            stat_lli_fetches: 0,
            trace: VecDeque::new(),
            trace_dropped: 0,
        };
        d.update_irq();
        d
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn config(&self) -> AxiDmaConfig {
        self.cfg
    }
    pub fn size(&self) -> u64 {
        SIZE
    }
    pub fn irq_level(&self) -> bool {
        self.irq_level
    }

    fn note(&mut self, cycle: u64, channel: usize, kind: DmaEventKind) {
        if self.trace.len() >= TRACE_LEN {
            self.trace.pop_front();
            self.trace_dropped += 1;
        }
        self.trace.push_back(DmaEvent {
            cycle,
            channel: channel as u8,
            kind,
        });
    }

    /// Take the channel events recorded since the last call (at most
    /// [`TRACE_LEN`]; see [`AxiDma::trace_dropped`]).
    pub fn take_trace(&mut self) -> Vec<DmaEvent> {
        self.trace.drain(..).collect()
    }

    /// Events dropped because the host did not take them in time.
    pub fn trace_dropped(&self) -> u64 {
        self.trace_dropped
    }

    fn reset(&mut self) {
        self.dmac_cfg = 0;
        self.common_stat_ena = 0;
        self.common_sig_ena = 0;
        self.common_stat = 0;
        for c in &mut self.chans {
            let stats = (c.stat_transfers, c.stat_blocks, c.stat_bytes, c.stat_errors);
            *c = Chan::new();
            (c.stat_transfers, c.stat_blocks, c.stat_bytes, c.stat_errors) = stats;
        }
        self.update_irq();
    }

    // ---- registers -------------------------------------------------------

    /// Register read of 4 or 8 bytes (aligned) at `offset`, at cycle `now`.
    /// Registers show the state as of the last [`AxiDma::advance`].
    pub fn read(&mut self, offset: u64, size: u8, now: u64) -> Result<u64, BadAccess> {
        if !matches!(size, 4 | 8) || offset & (size as u64 - 1) != 0 || offset >= SIZE {
            return Err(BadAccess);
        }
        self.now = self.now.max(now);
        let v = self.read64(offset & !7);
        Ok(if size == 8 {
            v
        } else {
            (v >> ((offset & 4) * 8)) & 0xffff_ffff
        })
    }

    /// Register write of 4 or 8 bytes (aligned) at `offset`, at cycle `now`.
    pub fn write(&mut self, offset: u64, size: u8, val: u64, now: u64) -> Result<(), BadAccess> {
        if !matches!(size, 4 | 8) || offset & (size as u64 - 1) != 0 || offset >= SIZE {
            return Err(BadAccess);
        }
        self.now = self.now.max(now);
        let (val, mask) = match (size, offset & 4) {
            (8, _) => (val, u64::MAX),
            (_, 0) => (val & 0xffff_ffff, 0xffff_ffff),
            _ => ((val & 0xffff_ffff) << 32, 0xffff_ffff_0000_0000),
        };
        self.write64(offset & !7, val, mask);
        self.update_irq();
        Ok(())
    }

    fn chen(&self) -> u64 {
        let mut v = 0;
        for (i, c) in self.chans.iter().enumerate() {
            if c.enabled() {
                v |= 1 << i;
            }
            if c.suspended {
                v |= 1 << (16 + i);
            }
        }
        v
    }

    fn read64(&self, off: u64) -> u64 {
        if off < CH_BASE {
            return match off {
                DMAC_ID => self.cfg.id as u64,
                DMAC_COMPVER => COMPVER_ID as u64,
                DMAC_CFG => self.dmac_cfg,
                DMAC_CHEN => self.chen(),
                DMAC_INTSTATUS => {
                    let mut v = 0;
                    for (i, c) in self.chans.iter().enumerate() {
                        if c.int_stat & c.sig_ena != 0 {
                            v |= 1 << i;
                        }
                    }
                    if self.common_stat & self.common_sig_ena != 0 {
                        v |= 1 << 16;
                    }
                    v
                }
                DMAC_COMMON_INTSTATUS_ENA => self.common_stat_ena,
                DMAC_COMMON_INTSIGNAL_ENA => self.common_sig_ena,
                DMAC_COMMON_INTSTATUS => self.common_stat,
                _ => 0,
            };
        }
        let Some((i, reg)) = self.chan_reg(off) else {
            return 0;
        };
        let c = &self.chans[i];
        match reg {
            CH_SAR => c.sar,
            CH_DAR => c.dar,
            CH_BLOCK_TS => c.block_ts,
            CH_CTL => c.ctl,
            CH_CFG => c.cfg,
            CH_LLP => c.llp,
            CH_STATUS => c.block_bytes.saturating_sub(c.remaining) & 0x3f_ffff,
            CH_SWHSSRC => c.swhs_src,
            CH_SWHSDST => c.swhs_dst,
            CH_AXI_ID => c.axi_id,
            CH_AXI_QOS => c.axi_qos,
            CH_INTSTATUS_ENA => c.int_ena as u64,
            CH_INTSTATUS => c.int_stat as u64,
            CH_INTSIGNAL_ENA => c.sig_ena as u64,
            _ => 0,
        }
    }

    fn chan_reg(&self, off: u64) -> Option<(usize, u64)> {
        let i = ((off - CH_BASE) / CH_STRIDE) as usize;
        (i < self.chans.len()).then_some((i, (off - CH_BASE) % CH_STRIDE))
    }

    fn write64(&mut self, off: u64, val: u64, mask: u64) {
        let now = self.now;
        let merge = |old: u64| (old & !mask) | (val & mask);
        if off < CH_BASE {
            match off {
                DMAC_CFG => {
                    let was = self.dmac_cfg & CFG_DMAC_EN != 0;
                    self.dmac_cfg = merge(self.dmac_cfg) & 3;
                    if !was && self.dmac_cfg & CFG_DMAC_EN != 0 {
                        // Channels enabled while the DMAC was off start now.
                        for c in &mut self.chans {
                            c.ready = c.ready.max(now);
                        }
                    }
                }
                DMAC_CHEN => self.write_chen(val & mask, now),
                DMAC_COMMON_INTCLEAR => self.common_stat &= !(val & mask),
                DMAC_COMMON_INTSTATUS_ENA => {
                    self.common_stat_ena = merge(self.common_stat_ena) & 0x1_ffff
                }
                DMAC_COMMON_INTSIGNAL_ENA => {
                    self.common_sig_ena = merge(self.common_sig_ena) & 0x1_ffff
                }
                DMAC_RESET if val & mask & 1 != 0 => self.reset(),
                _ => {}
            }
            return;
        }
        let Some((i, reg)) = self.chan_reg(off) else {
            return;
        };
        let c = &mut self.chans[i];
        let setup = matches!(
            reg,
            CH_SAR | CH_DAR | CH_BLOCK_TS | CH_CTL | CH_CFG | CH_LLP
        );
        if setup && c.enabled() {
            Self::raise(c, IRQ_WRONCHEN_ERR);
            return;
        }
        match reg {
            CH_SAR => c.sar = merge(c.sar),
            CH_DAR => c.dar = merge(c.dar),
            CH_BLOCK_TS => c.block_ts = merge(c.block_ts) & 0x3f_ffff,
            CH_CTL => c.ctl = merge(c.ctl),
            CH_CFG => c.cfg = merge(c.cfg),
            CH_LLP => c.llp = merge(c.llp) & !0x3e,
            CH_SWHSSRC | CH_SWHSDST => {
                let (reg_v, k) = if reg == CH_SWHSSRC {
                    (&mut c.swhs_src, 0)
                } else {
                    (&mut c.swhs_dst, 1)
                };
                let v = val & mask;
                // Bits 0 (REQ), 2 (SGLREQ), 4 (LST), each with its write enable above it.
                let mut changed = false;
                for bit in [0u32, 2, 4] {
                    if v & (1 << (bit + 1)) != 0 {
                        let new = (*reg_v & !(1 << bit)) | (v & (1 << bit));
                        changed |= new != *reg_v;
                        *reg_v = new;
                    }
                }
                if changed {
                    c.swhs_since[k] = now;
                }
            }
            CH_AXI_ID => c.axi_id = merge(c.axi_id),
            CH_AXI_QOS => c.axi_qos = merge(c.axi_qos),
            CH_INTSTATUS_ENA => c.int_ena = merge(c.int_ena as u64) as u32,
            CH_INTSIGNAL_ENA => c.sig_ena = merge(c.sig_ena as u64) as u32,
            CH_INTCLEAR => c.int_stat &= !((val & mask) as u32),
            _ => {}
        }
    }

    fn write_chen(&mut self, v: u64, now: u64) {
        for i in 0..self.chans.len() {
            if v & (1 << (8 + i)) != 0 {
                if v & (1 << i) != 0 {
                    self.enable(i, now);
                } else if self.chans[i].enabled() {
                    self.stop(i, IRQ_DISABLED, now);
                }
            }
            if v & (1 << (24 + i)) != 0 {
                let c = &mut self.chans[i];
                let susp = v & (1 << (16 + i)) != 0;
                if susp && !c.suspended {
                    Self::raise(c, IRQ_SUSPENDED);
                }
                c.suspended = susp;
                c.ready = c.ready.max(now);
            }
            if v & (1 << (40 + i)) != 0 && v & (1 << (32 + i)) != 0 && self.chans[i].enabled() {
                self.stop(i, IRQ_ABORTED, now);
            }
        }
    }

    /// Record an event in a channel's status if enabled there.
    fn raise(c: &mut Chan, bit: u32) {
        c.int_stat |= bit & c.int_ena;
        if bit & IRQ_ALL_ERR != 0 {
            c.stat_errors += 1;
        }
    }

    fn stop(&mut self, i: usize, bit: u32, t: u64) {
        let c = &mut self.chans[i];
        c.phase = Phase::Idle;
        c.visited.clear();
        Self::raise(c, bit);
        self.note(t, i, DmaEventKind::Stopped(bit));
    }

    fn enable(&mut self, i: usize, now: u64) {
        let c = &mut self.chans[i];
        if c.enabled() {
            return;
        }
        c.ready = now;
        c.visited.clear();
        c.remaining = 0;
        c.block_bytes = 0;
        let (src_t, dst_t) = (c.cfg & 3, (c.cfg >> 2) & 3);
        match (src_t, dst_t) {
            (3, 3) => {
                c.linked = true;
                c.phase = Phase::FetchLli;
                self.note(now, i, DmaEventKind::Started);
            }
            (0, 0) => {
                c.linked = false;
                c.last = true;
                c.phase = Phase::Transfer;
                self.note(now, i, DmaEventKind::Started);
                if let Err(bit) = self.load_block(i) {
                    self.stop(i, bit, now);
                }
            }
            _ => {
                Self::raise(c, IRQ_MULTIBLKTYPE_ERR);
                self.note(now, i, DmaEventKind::Stopped(IRQ_MULTIBLKTYPE_ERR));
            }
        }
    }

    /// Check the channel's block registers and start the block.
    fn load_block(&mut self, i: usize) -> Result<(), u32> {
        let max = self.cfg.block_size as u64;
        let c = &mut self.chans[i];
        let items = (c.block_ts & 0x3f_ffff) + 1;
        if items > max {
            return Err(IRQ_INVALID_ERR);
        }
        let bytes = items << c.width(Side::Src);
        // The pacing side moves whole items: a destination peripheral must
        // get a whole number of its items.
        let (_, unit, _) = c.unit();
        if bytes & (unit - 1) != 0 {
            return Err(IRQ_INVALID_ERR);
        }
        c.block_bytes = bytes;
        c.remaining = bytes;
        Ok(())
    }

    // ---- time ------------------------------------------------------------

    /// Request state of a peripheral side: (request, since).
    fn side_request(&self, c: &Chan, side: Side) -> (DmaRequest, u64) {
        if c.hw_handshake(side) {
            self.hs.request(c.per_number(side))
        } else {
            let (v, k) = if side == Side::Src {
                (c.swhs_src, 0)
            } else {
                (c.swhs_dst, 1)
            };
            (
                DmaRequest {
                    burst: v & 1 != 0,
                    single: v & 4 != 0,
                },
                c.swhs_since[k],
            )
        }
    }

    /// Earliest cycle channel `i` can take its next step, if it can.
    fn chan_ready(&self, i: usize) -> Option<u64> {
        let c = &self.chans[i];
        if c.phase == Phase::Idle || c.suspended || self.dmac_cfg & CFG_DMAC_EN == 0 {
            return None;
        }
        if c.phase != Phase::Transfer {
            return Some(c.ready);
        }
        let (_, unit, msize) = c.unit();
        let burst = c.remaining / unit >= msize;
        let mut t = c.ready;
        for side in [Side::Src, Side::Dst] {
            if c.is_per(side) {
                let (req, since) = self.side_request(c, side);
                let ok = if burst && side == c.unit().0 {
                    req.burst
                } else {
                    req.any()
                };
                if !ok {
                    return None;
                }
                t = t.max(since);
            }
        }
        Some(t)
    }

    /// Cycle of the next thing the controller does on its own, if anything.
    /// Depends on the handshake requests: ask again after a peripheral on
    /// the handshake changed (see `HandshakeWires::generation`).
    pub fn next_event(&self) -> Option<u64> {
        (0..self.chans.len())
            .filter_map(|i| self.chan_ready(i))
            .min()
    }

    /// Run every channel step due by cycle `now`, moving data through `mem`
    /// (RAM and the peripherals' windows, as the board builds it).
    pub fn advance(&mut self, now: u64, mem: &mut dyn DmaMemory) {
        for _ in 0..MAX_STEPS {
            let next = (0..self.chans.len())
                .filter_map(|i| {
                    self.chan_ready(i)
                        .map(|t| (t, std::cmp::Reverse(self.chans[i].priority()), i))
                })
                .filter(|&(t, _, _)| t <= now)
                .min();
            let Some((t, _, i)) = next else { break };
            self.step(i, t, mem);
            self.update_irq();
        }
        self.now = self.now.max(now);
        self.update_irq();
    }

    fn step(&mut self, i: usize, t: u64, mem: &mut dyn DmaMemory) {
        match self.chans[i].phase {
            Phase::Idle => {}
            Phase::FetchLli => {
                if let Err(bit) = self.fetch_lli(i, t, mem) {
                    self.stop(i, bit, t);
                }
            }
            Phase::Transfer => {
                if let Err(bit) = self.move_chunk(i, t, mem) {
                    self.stop(i, bit, t);
                }
            }
            Phase::BlockEnd => {
                if let Err(bit) = self.end_block(i, t, mem) {
                    self.stop(i, bit, t);
                }
            }
        }
    }

    fn fetch_lli(&mut self, i: usize, t: u64, mem: &mut dyn DmaMemory) -> Result<(), u32> {
        let max_blocks = self.cfg.max_blocks as usize;
        let fetch = self.cfg.lli_fetch_cycles;
        let c = &mut self.chans[i];
        let addr = c.llp & !0x3f;
        if c.visited.len() >= max_blocks || c.visited.contains(&addr) {
            return Err(IRQ_INVALID_ERR);
        }
        let mut b = [0u8; LLI_SIZE];
        mem.dma_read(addr, &mut b, t).map_err(|f| match f {
            DmaFault::Decode(_) => IRQ_LLI_RD_DEC_ERR,
            DmaFault::Slave(_) => IRQ_LLI_RD_SLV_ERR,
        })?;
        self.stat_lli_fetches += 1;
        let q = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]));
        let ctl = q(0x20);
        if ctl & CTL_LLI_VALID == 0 {
            return Err(IRQ_INVALID_ERR);
        }
        c.visited.insert(addr);
        c.sar = q(0x00);
        c.dar = q(0x08);
        c.block_ts = q(0x10) & 0x3f_ffff;
        c.llp = q(0x18) & !0x3e;
        c.ctl = ctl;
        c.lli_addr = addr;
        c.last = ctl & CTL_LLI_LAST != 0;
        c.phase = Phase::Transfer;
        c.ready = t.saturating_add(fetch);
        self.load_block(i)
    }

    fn move_chunk(&mut self, i: usize, t: u64, mem: &mut dyn DmaMemory) -> Result<(), u32> {
        let item_cycles = self.cfg.item_cycles;
        let c = &self.chans[i];
        let (pace, unit, msize) = c.unit();
        let items = if c.remaining / unit >= msize {
            msize
        } else {
            1
        };
        let n = (items * unit).min(c.remaining);
        let (sw, dw) = (1u64 << c.width(Side::Src), 1u64 << c.width(Side::Dst));
        let mut buf = vec![0u8; n as usize];
        // Source.
        let (src_per, src_inc) = (c.is_per(Side::Src), c.increments(Side::Src));
        let mut sar = c.sar;
        let src_err = |f: DmaFault| match f {
            DmaFault::Decode(_) => IRQ_SRC_DEC_ERR,
            DmaFault::Slave(_) => IRQ_SRC_SLV_ERR,
        };
        if src_per || !src_inc {
            for chunk in buf.chunks_mut(sw as usize) {
                mem.dma_read(sar, chunk, t).map_err(src_err)?;
                if src_inc {
                    sar = sar.wrapping_add(chunk.len() as u64);
                }
            }
        } else {
            mem.dma_read(sar, &mut buf, t).map_err(src_err)?;
            sar = sar.wrapping_add(n);
        }
        // Destination.
        let c = &self.chans[i];
        let (dst_per, dst_inc) = (c.is_per(Side::Dst), c.increments(Side::Dst));
        let mut dar = c.dar;
        let dst_err = |f: DmaFault| match f {
            DmaFault::Decode(_) => IRQ_DST_DEC_ERR,
            DmaFault::Slave(_) => IRQ_DST_SLV_ERR,
        };
        if dst_per || !dst_inc {
            for chunk in buf.chunks(dw as usize) {
                mem.dma_write(dar, chunk, t).map_err(dst_err)?;
                if dst_inc {
                    dar = dar.wrapping_add(chunk.len() as u64);
                }
            }
        } else {
            mem.dma_write(dar, &buf, t).map_err(dst_err)?;
            dar = dar.wrapping_add(n);
        }
        let c = &mut self.chans[i];
        c.sar = sar;
        c.dar = dar;
        c.remaining -= n;
        c.stat_bytes += n;
        let beats = n.div_ceil(sw.min(dw)).max(1);
        c.ready = t.saturating_add(item_cycles.saturating_mul(beats));
        let last = c.remaining == 0;
        if last {
            c.phase = Phase::BlockEnd;
        }
        // Acknowledge the peripheral side(s).
        for side in [Side::Src, Side::Dst] {
            let c = &mut self.chans[i];
            if !c.is_per(side) {
                continue;
            }
            if c.hw_handshake(side) {
                let per = c.per_number(side);
                self.hs.ack(per, last && side == pace);
            } else if side == Side::Src {
                c.swhs_src &= !5;
            } else {
                c.swhs_dst &= !5;
            }
        }
        Ok(())
    }

    fn end_block(&mut self, i: usize, t: u64, mem: &mut dyn DmaMemory) -> Result<(), u32> {
        let c = &mut self.chans[i];
        c.stat_blocks += 1;
        if c.ctl & CTL_IOC_BLKTFR != 0 {
            Self::raise(c, IRQ_BLOCK_TRF);
        }
        if c.linked {
            // Write back CTL (LLI_VALID cleared) and the block size.
            let ctl_hi = ((c.ctl & !CTL_LLI_VALID) >> 32) as u32;
            let status = (c.block_bytes & 0x3f_ffff) as u32;
            let wb_err = |f: DmaFault| match f {
                DmaFault::Decode(_) => IRQ_LLI_WR_DEC_ERR,
                DmaFault::Slave(_) => IRQ_LLI_WR_SLV_ERR,
            };
            mem.dma_write(c.lli_addr + LLI_CTL_HI, &ctl_hi.to_le_bytes(), t)
                .map_err(wb_err)?;
            mem.dma_write(c.lli_addr + LLI_STATUS_LO, &status.to_le_bytes(), t)
                .map_err(wb_err)?;
        }
        if c.linked && !c.last {
            c.phase = Phase::FetchLli;
            c.ready = t;
            self.note(t, i, DmaEventKind::BlockDone);
            return Ok(());
        }
        c.phase = Phase::Idle;
        c.visited.clear();
        c.stat_transfers += 1;
        Self::raise(c, IRQ_DMA_TRF);
        self.note(t, i, DmaEventKind::BlockDone);
        self.note(t, i, DmaEventKind::Done);
        Ok(())
    }

    fn update_irq(&mut self) {
        let pending = self.chans.iter().any(|c| c.int_stat & c.sig_ena != 0)
            || self.common_stat & self.common_sig_ena != 0;
        let level = self.dmac_cfg & CFG_INT_EN != 0 && pending;
        if level != self.irq_level {
            if level {
                self.stat_irqs += 1;
            }
            self.irq_level = level;
            self.irq.set_level(level);
        }
    }

    // ---- description -------------------------------------------------------

    /// Device-tree nodes: the controller under `/soc` and the fixed clock it
    /// runs from (used for both `core-clk` and `cfgr-clk`).
    pub fn fdt_nodes(&self, base: u64, r: &AxiDmaFdt) -> Vec<(Placement, FdtNode)> {
        let n = self.cfg.channels;
        let clock = FdtNode::new(format!("{}-clk", self.name))
            .str("compatible", "fixed-clock")
            .u32("#clock-cells", 0)
            .u32(
                "clock-frequency",
                self.cfg.clk_hz.min(u32::MAX as u64) as u32,
            )
            .u32("phandle", r.clock);
        let node = FdtNode::new(format!("dma-controller@{base:x}"))
            .str("compatible", "snps,axi-dma-1.01a")
            .reg(base, SIZE)
            .u32("interrupt-parent", r.interrupt_parent)
            .u32("interrupts", r.irq)
            .u32s("clocks", vec![r.clock, r.clock])
            .strs("clock-names", &["core-clk", "cfgr-clk"])
            .u32("#dma-cells", 1)
            .u32("dma-channels", n)
            .u32("snps,dma-masters", self.cfg.masters)
            .u32("snps,data-width", self.cfg.data_width)
            .u32s("snps,block-size", vec![self.cfg.block_size; n as usize])
            .u32s("snps,priority", (0..n).collect())
            .u32("snps,axi-max-burst-len", 16)
            .u32("phandle", r.phandle);
        vec![(Placement::Root, clock), (Placement::Soc, node)]
    }

    pub fn stats(&self) -> Vec<Stat> {
        let n = &self.name;
        let sum = |f: fn(&Chan) -> u64| self.chans.iter().map(f).sum::<u64>();
        vec![
            Stat::new(
                format!("{n}.transfers"),
                sum(|c| c.stat_transfers),
                "DMA transfers completed (DMA_TRF)",
            ),
            Stat::new(
                format!("{n}.blocks"),
                sum(|c| c.stat_blocks),
                "blocks completed",
            ),
            Stat::new(format!("{n}.bytes"), sum(|c| c.stat_bytes), "bytes moved"),
            Stat::new(
                format!("{n}.errors"),
                sum(|c| c.stat_errors),
                "transfers ended by an error status",
            ),
            Stat::new(
                format!("{n}.lli_fetches"),
                self.stat_lli_fetches,
                "linked-list items read",
            ),
            Stat::new(
                format!("{n}.irqs"),
                self.stat_irqs,
                "rising edges of the interrupt output",
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dma::bus::VecMemory;
    use crate::lines::{DmaRequestLine, HandshakeWires};
    use crate::WireIrq;

    const RAM: u64 = 0x8000_0000;

    fn dma() -> (AxiDma, WireIrq, HandshakeWires) {
        let irq = WireIrq::new();
        let wires = HandshakeWires::new(4);
        let d = AxiDma::new(
            "dma0",
            AxiDmaConfig::default(),
            Box::new(irq.clone()),
            Box::new(wires.clone()),
        );
        (d, irq, wires)
    }
    fn ch(n: u64, reg: u64) -> u64 {
        CH_BASE + n * CH_STRIDE + reg
    }
    fn w32(d: &mut AxiDma, off: u64, v: u64, now: u64) {
        d.write(off, 4, v, now).unwrap();
    }
    fn r32(d: &mut AxiDma, off: u64) -> u64 {
        d.read(off, 4, 0).unwrap()
    }

    /// An LLI as Linux's `dw_axi_dma_set_hw_desc` builds it.
    fn lli(m: &mut VecMemory, at: u64, sar: u64, dar: u64, bts: u32, ctl: u64, llp: u64) {
        let mut b = [0u8; 64];
        b[0..8].copy_from_slice(&sar.to_le_bytes());
        b[8..16].copy_from_slice(&dar.to_le_bytes());
        b[16..20].copy_from_slice(&bts.to_le_bytes());
        b[24..32].copy_from_slice(&llp.to_le_bytes());
        b[32..40].copy_from_slice(&ctl.to_le_bytes());
        m.put(at, &b);
    }
    /// Memcpy CTL: 32-bit items both sides, MSIZE 4, increments.
    const MEMCPY_CTL: u64 = 2 << 8 | 2 << 11 | 1 << 14 | 1 << 18;

    /// `axi_chan_block_xfer_start` for channel `n` (LL both sides).
    fn start(d: &mut AxiDma, n: u64, cfg_hi: u64, llp: u64, now: u64) {
        let cfg = r32(d, DMAC_CFG);
        w32(d, DMAC_CFG, cfg | CFG_DMAC_EN, now);
        w32(d, ch(n, CH_CFG), 0xf, now);
        w32(d, ch(n, CH_CFG) + 4, cfg_hi, now);
        w32(d, ch(n, CH_LLP), llp & 0xffff_ffff, now);
        w32(d, ch(n, CH_LLP) + 4, llp >> 32, now);
        let irqs = (IRQ_DMA_TRF | IRQ_ALL_ERR) as u64;
        w32(d, ch(n, CH_INTSIGNAL_ENA), irqs, now);
        w32(d, ch(n, CH_INTSTATUS_ENA), irqs | IRQ_SUSPENDED as u64, now);
        let chen = r32(d, DMAC_CHEN);
        w32(d, DMAC_CHEN, chen | 1 << n | 1 << (8 + n), now);
    }

    fn run(d: &mut AxiDma, m: &mut VecMemory, limit: u64) -> Vec<u64> {
        let mut times = Vec::new();
        for _ in 0..10_000 {
            match d.next_event() {
                Some(t) if t <= limit => {
                    d.advance(t, m);
                    times.push(t);
                }
                _ => break,
            }
        }
        times
    }

    /// Every register of the common block and the channels.
    fn all_regs(d: &mut AxiDma) -> Vec<u64> {
        (0..SIZE)
            .step_by(8)
            .map(|o| d.read(o, 8, 0).unwrap())
            .collect()
    }

    #[test]
    fn a_restored_controller_goes_on_as_the_saved_one() {
        use crate::Persist;
        let (mut d, irq, _) = dma();
        let mut m = VecMemory::new(RAM, 0x4000);
        let src: Vec<u8> = (0..0x800u32).map(|i| (i * 7) as u8).collect();
        m.put(RAM + 0x1000, &src);
        // Two blocks of 256 words, the first asking for a block interrupt.
        lli(
            &mut m,
            RAM,
            RAM + 0x1000,
            RAM + 0x2000,
            255,
            MEMCPY_CTL | CTL_LLI_VALID | CTL_IOC_BLKTFR,
            RAM + 0x40,
        );
        lli(
            &mut m,
            RAM + 0x40,
            RAM + 0x1400,
            RAM + 0x2400,
            255,
            MEMCPY_CTL | CTL_LLI_VALID | CTL_LLI_LAST,
            0,
        );
        w32(&mut d, ch(2, CH_INTSTATUS_ENA), IRQ_BLOCK_TRF as u64, 0);
        start(&mut d, 0, 0, RAM, 10);
        start(&mut d, 2, 0, RAM, 10); // the same chain again on another channel
        w32(&mut d, DMAC_CFG, CFG_DMAC_EN | CFG_INT_EN, 10);
        run(&mut d, &mut m, 1_500);
        let before = all_regs(&mut d);
        assert_ne!(before[(DMAC_CHEN / 8) as usize] & 0xff, 0, "mid-transfer");
        let saved = d.save().unwrap();

        let (mut e, irq2, _) = dma();
        irq2.set_level(irq.is_high());
        e.restore(&saved).unwrap();
        assert_eq!(e.save().unwrap(), saved);
        assert_eq!(all_regs(&mut e), before);
        assert_eq!(e.next_event(), d.next_event());
        let mut m2 = VecMemory::new(RAM, 0x4000);
        m2.put(RAM, m.get(RAM, 0x4000));
        let times = run(&mut d, &mut m, u64::MAX);
        assert_eq!(run(&mut e, &mut m2, u64::MAX), times);
        assert_eq!(m2.get(RAM, 0x4000), m.get(RAM, 0x4000));
        assert_eq!(m.get(RAM + 0x2000, 0x800), &src[..]);
        assert_eq!(all_regs(&mut e), all_regs(&mut d));
        assert_eq!(e.stats(), d.stats());
        assert_eq!(e.take_trace(), d.take_trace());
        assert_eq!(irq2.is_high(), irq.is_high());
    }

    #[test]
    fn a_controller_refuses_garbage_and_other_configurations() {
        use crate::Persist;
        let (mut d, _, _) = dma();
        let few = AxiDma::new(
            "dma0",
            AxiDmaConfig {
                channels: 2,
                ..AxiDmaConfig::default()
            },
            Box::new(WireIrq::new()),
            Box::new(HandshakeWires::new(4)),
        );
        let e = d.restore(&few.save().unwrap()).unwrap_err();
        assert!(e.contains("channels: 2"), "{e}");
        let mut text = String::from_utf8(d.save().unwrap()).unwrap();
        text = text.replacen("\"chans\":[", "\"chans\":[{\"sar\":1},", 1);
        assert!(d.restore(text.as_bytes()).is_err());
        for bad in [&b"0"[..], b"{\"name\":\"dma0\"}", b"\x00"] {
            assert!(d.restore(bad).is_err());
        }
        assert_eq!(r32(&mut d, DMAC_COMPVER) as u32, COMPVER_ID);
    }

    #[test]
    fn probe_reads_ids_and_disables_channels() {
        let (mut d, irq, _) = dma();
        assert_eq!(r32(&mut d, DMAC_COMPVER) as u32, COMPVER_ID);
        // axi_dma_resume + axi_dma_hw_init
        w32(&mut d, DMAC_CFG, CFG_DMAC_EN | CFG_INT_EN, 0);
        for n in 0..8 {
            w32(&mut d, ch(n, CH_INTSTATUS_ENA), 0, 0);
            let v = (r32(&mut d, DMAC_CHEN) & !(1 << n)) | 1 << (8 + n);
            w32(&mut d, DMAC_CHEN, v, 0);
        }
        assert_eq!(r32(&mut d, DMAC_CHEN), 0);
        assert!(!irq.is_high());
        assert!(d.read(DMAC_CFG, 2, 0).is_err() && d.read(DMAC_CFG + 4, 8, 0).is_err());
        assert_eq!(
            d.read(ch(9, CH_SAR), 8, 0),
            Ok(0),
            "beyond the channels reads as zero"
        );
        assert!(d.read(SIZE, 4, 0).is_err());
    }

    #[test]
    fn linked_list_memcpy_completes_with_write_back_and_interrupt() {
        let (mut d, irq, _) = dma();
        let mut m = VecMemory::new(RAM, 0x4000);
        let src: Vec<u8> = (0..96u8).collect();
        m.put(RAM + 0x1000, &src);
        // Three blocks of 32 bytes (8 x 32-bit items), the last one LAST.
        for k in 0..3u64 {
            let last = if k == 2 { CTL_LLI_LAST } else { 0 };
            let next = if k == 2 { 0 } else { RAM + 0x40 * (k + 1) };
            let ctl = MEMCPY_CTL | CTL_LLI_VALID | last | if k == 0 { CTL_IOC_BLKTFR } else { 0 };
            lli(
                &mut m,
                RAM + 0x40 * k,
                RAM + 0x1000 + 32 * k,
                RAM + 0x2000 + 32 * k,
                7,
                ctl,
                next,
            );
        }
        w32(&mut d, DMAC_CFG, CFG_INT_EN, 0);
        start(&mut d, 2, 0, RAM, 1000);
        w32(
            &mut d,
            ch(2, CH_INTSTATUS_ENA),
            (IRQ_DMA_TRF | IRQ_BLOCK_TRF | IRQ_ALL_ERR) as u64,
            1000,
        );
        assert_eq!(r32(&mut d, DMAC_CHEN), 1 << 2);
        let times = run(&mut d, &mut m, u64::MAX);
        // Per block: LLI fetch 20 cycles, two 4-item chunks of 16 cycles;
        // a block's end and the next fetch fall in the same advance.
        assert_eq!(
            times,
            vec![1000, 1020, 1036, 1052, 1072, 1088, 1104, 1124, 1140, 1156]
        );
        assert_eq!(m.get(RAM + 0x2000, 96), &src[..]);
        assert_eq!(r32(&mut d, DMAC_CHEN), 0, "idle before DMA_TRF is seen");
        assert_eq!(
            r32(&mut d, ch(2, CH_INTSTATUS)) as u32,
            IRQ_DMA_TRF | IRQ_BLOCK_TRF
        );
        assert!(irq.is_high());
        assert_eq!(r32(&mut d, DMAC_INTSTATUS), 1 << 2);
        // Write-back: LLI_VALID cleared, block size in status_lo.
        let hi = u32::from_le_bytes(m.get(RAM + 0x40 + 0x24, 4).try_into().unwrap());
        assert_eq!(hi as u64, ((MEMCPY_CTL | CTL_LLI_VALID) >> 32) & !(1 << 31));
        assert_eq!(m.get(RAM + 0x40 + 0x30, 4), &[32, 0, 0, 0]);
        assert_eq!(r32(&mut d, ch(2, CH_LLP)), 0);
        // The handler: INT_EN off, read + clear, INT_EN on.
        w32(&mut d, DMAC_CFG, CFG_DMAC_EN, 2000);
        assert!(!irq.is_high());
        let st = r32(&mut d, ch(2, CH_INTSTATUS));
        w32(&mut d, ch(2, CH_INTCLEAR), st, 2000);
        w32(&mut d, DMAC_CFG, CFG_DMAC_EN | CFG_INT_EN, 2000);
        assert!(!irq.is_high());
        assert_eq!(d.stats()[2].value, 96);
    }

    #[test]
    fn single_block_from_registers_and_gating() {
        let (mut d, irq, _) = dma();
        let mut m = VecMemory::new(RAM, 0x1000);
        m.put(RAM, &[7; 16]);
        w32(&mut d, ch(0, CH_SAR), RAM, 0);
        w32(&mut d, ch(0, CH_DAR), RAM + 0x100, 0);
        w32(&mut d, ch(0, CH_BLOCK_TS), 15, 0);
        w32(&mut d, ch(0, CH_CTL), 0, 0); // byte items, MSIZE 1
        w32(&mut d, ch(0, CH_INTSTATUS_ENA), 0xffff_ffff, 0);
        w32(&mut d, ch(0, CH_INTSIGNAL_ENA), IRQ_DMA_TRF as u64, 0);
        w32(&mut d, DMAC_CHEN, 0x101, 10);
        assert_eq!(d.next_event(), None, "DMAC_EN off: nothing runs");
        w32(&mut d, DMAC_CFG, CFG_DMAC_EN, 20);
        assert_eq!(d.next_event(), Some(20), "starts when the DMAC is enabled");
        // Writing a running channel's set-up registers is refused.
        w32(&mut d, ch(0, CH_SAR), 0, 30);
        assert_eq!(r32(&mut d, ch(0, CH_SAR)), RAM);
        assert_eq!(r32(&mut d, ch(0, CH_INTSTATUS)) as u32, IRQ_WRONCHEN_ERR);
        w32(&mut d, ch(0, CH_INTCLEAR), 0xffff_ffff, 30);
        // Suspend holds it; resume lets it finish.
        w32(&mut d, DMAC_CHEN, 1 << 16 | 1 << 24, 30);
        assert_eq!(r32(&mut d, DMAC_CHEN), 1 | 1 << 16);
        assert_eq!(r32(&mut d, ch(0, CH_INTSTATUS)) as u32, IRQ_SUSPENDED);
        assert_eq!(d.next_event(), None);
        w32(&mut d, DMAC_CHEN, 1 << 24, 40);
        let times = run(&mut d, &mut m, u64::MAX);
        assert_eq!(times.len(), 17, "16 single-byte chunks and the completion");
        assert_eq!(*times.last().unwrap(), 40 + 16 * 4);
        assert_eq!(r32(&mut d, ch(0, CH_STATUS)), 16, "completed block size");
        assert_eq!(m.get(RAM + 0x100, 16), &[7; 16]);
        assert!(!irq.is_high(), "INT_EN off");
        w32(&mut d, DMAC_CFG, CFG_DMAC_EN | CFG_INT_EN, 200);
        assert!(irq.is_high());
        w32(&mut d, DMAC_RESET, 1, 300);
        assert!(!irq.is_high());
        assert_eq!((r32(&mut d, DMAC_CFG), r32(&mut d, ch(0, CH_SAR))), (0, 0));
    }

    #[test]
    fn memory_to_peripheral_waits_for_requests() {
        let (mut d, _, wires) = dma();
        let mut m = VecMemory::new(RAM, 0x1000);
        m.put(RAM + 0x100, &[1, 2, 3, 4, 5, 6]);
        // 6 bytes as 1-byte items to a "peripheral" that is plain memory
        // here (no increment), handshake 3, MSIZE 4.
        let ctl = CTL_LLI_VALID | CTL_LLI_LAST | CTL_DINC_NOINC | 1 << 14 | 1 << 18;
        lli(&mut m, RAM, RAM + 0x100, RAM + 0x200, 5, ctl, 0);
        start(&mut d, 0, 1 | 3 << 12, RAM, 0);
        assert_eq!(d.next_event(), Some(0));
        d.advance(0, &mut m); // fetch
        assert_eq!(d.next_event(), None, "no request yet");
        let line = wires.line(3);
        line.set_request(
            DmaRequest {
                burst: false,
                single: true,
            },
            50,
        );
        assert_eq!(
            d.next_event(),
            None,
            "6 left >= MSIZE 4: needs a burst request"
        );
        line.set_request(
            DmaRequest {
                burst: true,
                single: true,
            },
            60,
        );
        assert_eq!(d.next_event(), Some(60));
        d.advance(60, &mut m);
        assert_eq!(m.get(RAM + 0x200, 1), &[4], "4 items to the same address");
        line.set_request(
            DmaRequest {
                burst: false,
                single: true,
            },
            70,
        );
        assert_eq!(
            d.next_event(),
            Some(76),
            "2 left: single requests, after the burst's 16 cycles"
        );
        run(&mut d, &mut m, u64::MAX);
        assert_eq!(m.get(RAM + 0x200, 1), &[6]);
        assert_eq!(wires.acks(3), (3, 1));
        assert_eq!(r32(&mut d, ch(0, CH_INTSTATUS)) as u32, IRQ_DMA_TRF);
    }

    #[test]
    fn software_handshake_requests_through_swhs_registers() {
        let (mut d, _, _) = dma();
        let mut m = VecMemory::new(RAM, 0x1000);
        m.put(RAM + 0x100, &[9, 8, 7, 6, 5]);
        // 5 bytes mem-to-per, destination on software handshake, MSIZE 4.
        let ctl = CTL_LLI_VALID | CTL_LLI_LAST | CTL_DINC_NOINC | 1 << 18;
        lli(&mut m, RAM, RAM + 0x100, RAM + 0x200, 4, ctl, 0);
        start(&mut d, 3, 1 | 1 << 4, RAM, 0);
        d.advance(0, &mut m);
        assert_eq!(d.next_event(), None);
        // REQ without its write enable does nothing.
        w32(&mut d, ch(3, CH_SWHSDST), 1, 100);
        assert_eq!(d.next_event(), None);
        w32(&mut d, ch(3, CH_SWHSDST), 0b11, 100);
        assert_eq!(r32(&mut d, ch(3, CH_SWHSDST)), 1);
        assert_eq!(d.next_event(), Some(100));
        d.advance(100, &mut m);
        assert_eq!(m.get(RAM + 0x200, 1), &[6], "a burst of 4");
        assert_eq!(r32(&mut d, ch(3, CH_SWHSDST)), 0, "request consumed");
        w32(&mut d, ch(3, CH_SWHSDST), 0b1100, 200); // single request
        run(&mut d, &mut m, u64::MAX);
        assert_eq!(m.get(RAM + 0x200, 1), &[5]);
        assert_eq!(r32(&mut d, ch(3, CH_INTSTATUS)) as u32, IRQ_DMA_TRF);
    }

    fn expect_error(build: impl Fn(&mut VecMemory) -> u64, bit: u32) {
        let (mut d, irq, _) = dma();
        let mut m = VecMemory::new(RAM, 0x1000);
        let llp = build(&mut m);
        w32(&mut d, DMAC_CFG, CFG_INT_EN, 0);
        start(&mut d, 1, 0, llp, 0);
        run(&mut d, &mut m, u64::MAX);
        assert_eq!(r32(&mut d, ch(1, CH_INTSTATUS)) as u32, bit);
        assert_eq!(r32(&mut d, DMAC_CHEN), 0, "channel stopped");
        assert_eq!(d.next_event(), None);
        assert!(irq.is_high());
    }

    #[test]
    fn bad_descriptors_end_in_error_status() {
        let ok = MEMCPY_CTL | CTL_LLI_VALID;
        // LLP outside RAM.
        expect_error(|_| 0x4000_0000, IRQ_LLI_RD_DEC_ERR);
        // LLI straddling the end of RAM.
        expect_error(|_| RAM + 0xfc0 + 0x40, IRQ_LLI_RD_DEC_ERR);
        // All-zero LLI (no LLI_VALID).
        expect_error(|_| RAM, IRQ_INVALID_ERR);
        // Loop: the LLI points at itself and is not LAST.
        expect_error(
            |m| {
                lli(m, RAM, RAM + 0x800, RAM + 0x900, 0, ok, RAM);
                RAM
            },
            IRQ_INVALID_ERR,
        );
        // Two-LLI cycle.
        expect_error(
            |m| {
                lli(m, RAM, RAM + 0x800, RAM + 0x900, 0, ok, RAM + 0x40);
                lli(m, RAM + 0x40, RAM + 0x800, RAM + 0x900, 0, ok, RAM);
                RAM
            },
            IRQ_INVALID_ERR,
        );
        // Source and destination outside RAM.
        expect_error(
            |m| {
                lli(m, RAM, 0x10, RAM + 0x900, 0, ok | CTL_LLI_LAST, 0);
                RAM
            },
            IRQ_SRC_DEC_ERR,
        );
        expect_error(
            |m| {
                lli(m, RAM, RAM, RAM + 0xffe, 0, ok | CTL_LLI_LAST, 0);
                RAM
            },
            IRQ_DST_DEC_ERR,
        );
        // Block larger than snps,block-size.
        expect_error(
            |m| {
                lli(m, RAM, RAM, RAM, 4096, ok | CTL_LLI_LAST, 0);
                RAM
            },
            IRQ_INVALID_ERR,
        );
        // Destination peripheral width that does not divide the block: 1
        // byte item source, 4-byte peripheral items.
        let (mut d, _, _) = dma();
        let mut m = VecMemory::new(RAM, 0x1000);
        lli(
            &mut m,
            RAM,
            RAM,
            RAM + 0x100,
            2,
            CTL_LLI_VALID | CTL_LLI_LAST | 2 << 11,
            0,
        );
        start(&mut d, 0, 1, RAM, 0);
        run(&mut d, &mut m, u64::MAX);
        assert_eq!(r32(&mut d, ch(0, CH_INTSTATUS)) as u32, IRQ_INVALID_ERR);
        // Mixed multi-block types.
        let (mut d, _, _) = dma();
        w32(&mut d, ch(0, CH_INTSTATUS_ENA), 0xffff_ffff, 0);
        w32(&mut d, ch(0, CH_CFG), 0b0111, 0);
        w32(&mut d, DMAC_CHEN, 0x101, 0);
        assert_eq!(
            r32(&mut d, ch(0, CH_INTSTATUS)) as u32,
            IRQ_MULTIBLKTYPE_ERR
        );
        assert_eq!(r32(&mut d, DMAC_CHEN), 0);
    }

    #[test]
    fn too_long_chain_is_cut_at_max_blocks() {
        let irq = WireIrq::new();
        let cfg = AxiDmaConfig {
            max_blocks: 5,
            ..AxiDmaConfig::default()
        };
        let mut d = AxiDma::new(
            "dma0",
            cfg,
            Box::new(irq.clone()),
            Box::new(HandshakeWires::new(1)),
        );
        let mut m = VecMemory::new(RAM, 0x1000);
        for k in 0..10u64 {
            lli(
                &mut m,
                RAM + 0x40 * k,
                RAM + 0x800,
                RAM + 0x900,
                0,
                MEMCPY_CTL | CTL_LLI_VALID,
                RAM + 0x40 * (k + 1),
            );
        }
        w32(&mut d, DMAC_CFG, CFG_INT_EN, 0);
        start(&mut d, 0, 0, RAM, 0);
        run(&mut d, &mut m, u64::MAX);
        assert_eq!(r32(&mut d, ch(0, CH_INTSTATUS)) as u32, IRQ_INVALID_ERR);
        assert_eq!(
            d.stats()[1].value,
            5,
            "five blocks ran before the sixth LLI was refused"
        );
        let trace = d.take_trace();
        assert_eq!(trace.len(), 1 + 5 + 1);
        assert_eq!(trace[0].kind, DmaEventKind::Started);
        assert_eq!(trace[6].kind, DmaEventKind::Stopped(IRQ_INVALID_ERR));
        assert!(d.take_trace().is_empty());
        assert!(irq.is_high());
    }

    #[test]
    fn device_tree_node_satisfies_the_probe() {
        let (d, _, _) = dma();
        let nodes = d.fdt_nodes(
            0x1005_0000,
            &AxiDmaFdt {
                phandle: 7,
                interrupt_parent: 3,
                irq: 13,
                clock: 8,
            },
        );
        let n = &nodes[1].1;
        use crate::fdt::Prop;
        assert_eq!(n.name, "dma-controller@10050000");
        assert_eq!(
            n.get("compatible"),
            Some(&Prop::Str("snps,axi-dma-1.01a".into()))
        );
        assert_eq!(n.get("#dma-cells"), Some(&Prop::U32(1)));
        assert_eq!(n.get("dma-channels"), Some(&Prop::U32(8)));
        assert_eq!(n.get("snps,dma-masters"), Some(&Prop::U32(1)));
        assert_eq!(n.get("snps,data-width"), Some(&Prop::U32(3)));
        assert_eq!(n.get("snps,block-size"), Some(&Prop::U32s(vec![4096; 8])));
        assert_eq!(n.get("snps,priority"), Some(&Prop::U32s((0..8).collect())));
        assert_eq!(
            n.get("clock-names"),
            Some(&Prop::Strs(vec!["core-clk".into(), "cfgr-clk".into()]))
        );
        assert_eq!(n.get("clocks"), Some(&Prop::U32s(vec![8, 8])));
        assert_eq!(n.get("phandle"), Some(&Prop::U32(7)));
        assert_eq!(n.get("interrupts"), Some(&Prop::U32(13)));
        assert_eq!(
            nodes[0].1.get("compatible"),
            Some(&Prop::Str("fixed-clock".into()))
        );
    }
}
