//! The SSI, the AXI DMA and a sink wired the way a board would wire them,
//! driven with the register sequences Linux's spi-dw (+ spi-dw-dma) and
//! dw-axi-dmac drivers issue for a spidev write.

use hs_devices::dma::axi::{self, AxiDma, AxiDmaConfig};
use hs_devices::dma::{MasterBus, VecMemory};
use hs_devices::lines::HandshakeWires;
use hs_devices::spi::dw_ssi::{self as ssi, DwSsi, SsiConfig};
use hs_devices::spi::{SinkFrame, SinkLog, SpiSink};
use hs_devices::WireIrq;

const RAM: u64 = 0x8000_0000;
const SSI_BASE: u64 = 0x1004_0000;
const TX_HS: u32 = 1;
const RX_HS: u32 = 0;
const CH: u64 = 0;

struct Rig {
    ram: VecMemory,
    ssi: DwSsi,
    dma: AxiDma,
    ssi_irq: WireIrq,
    dma_irq: WireIrq,
    log: SinkLog,
    /// (cycle, level) of every change of the DMA interrupt output.
    dma_irq_edges: Vec<(u64, bool)>,
    /// Cycle of the last device event served.
    time: u64,
}

impl Rig {
    fn new() -> Self {
        Self::with_answer(0)
    }
    /// A rig whose sink shifts back `miso` on every frame.
    fn with_answer(miso: u16) -> Self {
        let wires = HandshakeWires::new(8);
        let ssi_irq = WireIrq::new();
        let dma_irq = WireIrq::new();
        let mut ssi = DwSsi::new(
            "spi0",
            SsiConfig::default(),
            Some(Box::new(ssi_irq.clone())),
            Some(Box::new(wires.line(TX_HS))),
            Some(Box::new(wires.line(RX_HS))),
        );
        let sink = SpiSink::new(0, 10_000_000).answering(miso);
        let log = sink.log();
        ssi.attach(0, Box::new(sink));
        let dma = AxiDma::new(
            "dma0",
            AxiDmaConfig::default(),
            Box::new(dma_irq.clone()),
            Box::new(wires),
        );
        Self {
            ram: VecMemory::new(RAM, 0x10000),
            ssi,
            dma,
            ssi_irq,
            dma_irq,
            log,
            dma_irq_edges: Vec::new(),
            time: 0,
        }
    }

    /// The machine's event loop: serve the earliest device event until `limit`.
    fn run(&mut self, limit: u64) {
        self.run_while(limit, |_| true);
    }
    /// Same, stopping early once `go` says so (checked after each event).
    fn run_while(&mut self, limit: u64, go: impl Fn(&Self) -> bool) {
        for _ in 0..100_000 {
            if !go(self) {
                break;
            }
            let t = match [self.ssi.next_event(), self.dma.next_event()]
                .into_iter()
                .flatten()
                .min()
            {
                Some(t) if t <= limit => t,
                _ => break,
            };
            self.ssi.advance(t);
            let mut bus = MasterBus::new(&mut self.ram).window(SSI_BASE, ssi::SIZE, &mut self.ssi);
            self.dma.advance(t, &mut bus);
            self.note(t);
            self.time = t;
        }
    }
    fn note(&mut self, t: u64) {
        let level = self.dma_irq.is_high();
        if self.dma_irq_edges.last().map_or(level, |e| e.1) != level
            || (level && self.dma_irq_edges.is_empty())
        {
            self.dma_irq_edges.push((t, level));
        }
    }

    fn sw(&mut self, off: u64, v: u64, now: u64) {
        self.run(now);
        self.ssi.write(off, 4, v, now).unwrap();
    }
    fn sr(&mut self, off: u64, now: u64) -> u64 {
        self.run(now);
        self.ssi.read(off, 4, now).unwrap()
    }
    fn dw(&mut self, off: u64, v: u64, now: u64) {
        self.run(now);
        self.dma.write(off, 4, v, now).unwrap();
        self.note(now);
    }
    fn dr(&mut self, off: u64, now: u64) -> u64 {
        self.run(now);
        self.dma.read(off, 4, now).unwrap()
    }

    /// spi-dw probe (hw_init + DMA burst set-up) and dw-axi-dmac probe.
    fn probe(&mut self) {
        self.sw(ssi::SSIENR, 0, 0);
        self.sw(ssi::IMR, 0, 0);
        self.sr(ssi::ICR, 0);
        self.sw(ssi::SER, 0, 0);
        self.sw(ssi::SSIENR, 1, 0);
        let mut fifo = 1;
        while fifo < 256 {
            self.sw(ssi::TXFTLR, fifo, 0);
            if self.sr(ssi::TXFTLR, 0) != fifo {
                break;
            }
            fifo += 1;
        }
        self.sw(ssi::TXFTLR, 0, 0);
        assert_eq!(fifo, 7);
        let (txburst, rxburst) = (fifo / 2, fifo / 2);
        self.sw(ssi::DMARDLR, rxburst - 1, 0);
        self.sw(ssi::DMATDLR, txburst, 0);
        self.dw(axi::DMAC_CFG, axi::CFG_DMAC_EN | axi::CFG_INT_EN, 0);
        for n in 0..8 {
            self.dw(ch(n, axi::CH_INTSTATUS_ENA), 0, 0);
            let v = (self.dr(axi::DMAC_CHEN, 0) & !(1 << n)) | 1 << (8 + n);
            self.dw(axi::DMAC_CHEN, v, 0);
        }
    }

    /// spidev write of `data` (8 bits per word, 10 MHz) through DMA, as 6.1
    /// does it; returns the cycle the driver saw the DMA completion.
    fn dma_write(&mut self, data: &[u8], t0: u64, buf: u64, lli_at: u64) -> u64 {
        assert!(data.len() > 7 && data.len() & 3 == 0);
        self.ram.put(buf, data);
        // set_cs(true), transfer_one, dma_setup.
        self.sw(ssi::SER, 1, t0);
        self.sw(ssi::SSIENR, 0, t0);
        self.sw(ssi::CTRLR0, 0x07, t0);
        self.sw(ssi::BAUDR, 10, t0);
        let imr = self.sr(ssi::IMR, t0);
        self.sw(ssi::IMR, imr & !0xff, t0);
        self.sw(ssi::DMACR, ssi::DMACR_TDMAE as u64, t0);
        let imr = self.sr(ssi::IMR, t0);
        self.sw(ssi::IMR, imr | ssi::INT_TXOI as u64, t0);
        self.sw(ssi::SSIENR, 1, t0);
        // prep_slave_sg: one LLI, 32-bit memory items, 8-bit device items, MSIZE 4.
        let ctl: u64 = 2 << 8 | 1 << 6 | 1 << 14 | 1 << 18 | axi::CTL_LLI_VALID | axi::CTL_LLI_LAST;
        let mut lli = [0u8; 64];
        lli[0..8].copy_from_slice(&buf.to_le_bytes());
        lli[8..16].copy_from_slice(&(SSI_BASE + ssi::DR).to_le_bytes());
        lli[16..20].copy_from_slice(&((data.len() as u32 >> 2) - 1).to_le_bytes());
        lli[32..40].copy_from_slice(&ctl.to_le_bytes());
        self.ram.put(lli_at, &lli);
        // axi_chan_block_xfer_start.
        let t1 = t0 + 100;
        let cfg = self.dr(axi::DMAC_CFG, t1);
        self.dw(axi::DMAC_CFG, cfg | axi::CFG_DMAC_EN, t1);
        self.dw(ch(CH, axi::CH_CFG), 0xf, t1);
        self.dw(ch(CH, axi::CH_CFG) + 4, 1 | (TX_HS as u64) << 12, t1);
        self.dw(ch(CH, axi::CH_LLP), lli_at, t1);
        self.dw(ch(CH, axi::CH_LLP) + 4, 0, t1);
        let irqs = (axi::IRQ_DMA_TRF | axi::IRQ_ALL_ERR) as u64;
        self.dw(ch(CH, axi::CH_INTSIGNAL_ENA), irqs, t1);
        self.dw(
            ch(CH, axi::CH_INTSTATUS_ENA),
            irqs | axi::IRQ_SUSPENDED as u64,
            t1,
        );
        let chen = self.dr(axi::DMAC_CHEN, t1);
        self.dw(axi::DMAC_CHEN, chen | 1 << CH | 1 << (8 + CH), t1);
        // Wait for the DMA interrupt, then the handler.
        let edges = self.dma_irq_edges.len();
        self.run_while(t1 + 1_000_000, |r| !r.dma_irq.is_high());
        let raised = self.dma_irq_edges[edges..]
            .iter()
            .find(|e| e.1)
            .expect("DMA interrupt")
            .0;
        let cfg = self.dr(axi::DMAC_CFG, raised);
        self.dw(axi::DMAC_CFG, cfg & !axi::CFG_INT_EN, raised);
        let st = self.dr(ch(CH, axi::CH_INTSTATUS), raised);
        assert_eq!(st as u32, axi::IRQ_DMA_TRF);
        self.dw(ch(CH, axi::CH_INTCLEAR), st, raised);
        assert_eq!(
            self.dr(axi::DMAC_CHEN, raised) & 1 << CH,
            0,
            "idle when DMA_TRF is seen"
        );
        self.dw(axi::DMAC_CFG, cfg, raised);
        raised
    }

    /// dw_spi_dma_wait_tx_done + set_cs(false): poll SR.TFE, then BUSY.
    fn finish(&mut self, from: u64) -> u64 {
        let mut t = from;
        while self.sr(ssi::SR, t) as u32 & ssi::SR_TFE == 0 {
            t += 100;
        }
        while self.sr(ssi::SR, t) as u32 & ssi::SR_BUSY != 0 {
            t += 100;
        }
        self.sw(ssi::DMACR, 0, t);
        self.sw(ssi::SER, 0, t);
        t
    }
}

fn ch(n: u64, reg: u64) -> u64 {
    axi::CH_BASE + n * axi::CH_STRIDE + reg
}

const DATA: [u8; 8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef];

#[test]
fn eight_byte_dma_write_reaches_the_sink_with_exact_times() {
    let mut rig = Rig::new();
    rig.probe();
    let irq_at = rig.dma_write(&DATA, 10_000, RAM + 0x1000, RAM + 0x2000);
    // CHEN at 10_100; LLI fetch 20 cycles; two 4-byte bursts of 16 cycles
    // each (the second as soon as TXFLR is back at DMATDLR = 3).
    assert_eq!(irq_at, 10_152, "DMA_TRF when the last burst is in the FIFO");
    use axi::{DmaEvent, DmaEventKind::*};
    let ev = |cycle, kind| DmaEvent {
        cycle,
        channel: CH as u8,
        kind,
    };
    let trace = rig.dma.take_trace();
    // The probe's channel disables (all idle) left no events.
    assert_eq!(
        trace,
        vec![ev(10_100, Started), ev(10_152, BlockDone), ev(10_152, Done)]
    );
    let f = rig.log.frames();
    assert_eq!(
        (f.len(), f[0].start, f[0].bytes.len()),
        (1, 10_120, 0),
        "CS is down, no byte has arrived yet"
    );
    let done = rig.finish(irq_at);
    assert!((16_520..16_620).contains(&done), "wire idle at {done}");
    let frames = rig.log.frames();
    assert_eq!(frames.len(), 1, "one chip-select frame");
    let f: &SinkFrame = &frames[0];
    assert_eq!(f.bytes, DATA);
    assert_eq!(f.start, 10_120);
    // 10 MHz SCLK at a 1 GHz core: 800 cycles a byte, back to back.
    let expect: Vec<u64> = (1..=8).map(|k| 10_120 + 800 * k).collect();
    assert_eq!(f.byte_times, expect);
    assert_eq!(f.end, 16_520);
    // TR mode with no RX DMA: the 8th received byte overflowed the 7-deep
    // RX FIFO (masked: IMR only has TXOI, as spi-dw-dma sets it up).
    assert_eq!(
        rig.sr(ssi::RISR, done) as u32 & ssi::INT_RXOI,
        ssi::INT_RXOI
    );
    assert!(!rig.ssi_irq.is_high());
    assert!(!rig.dma_irq.is_high());
    // LLI written back with LLI_VALID clear.
    let hi = u32::from_le_bytes(rig.ram.get(RAM + 0x2000 + 0x24, 4).try_into().unwrap());
    assert_eq!(hi >> 31, 0);
    // A second write one period later gives a second frame; the period is
    // what the sink's interval statistics show.
    let irq2 = rig.dma_write(&[0xff; 8], 1_010_000, RAM + 0x1000, RAM + 0x2000);
    assert_eq!(irq2, 1_010_152);
    rig.finish(irq2);
    let st = rig.log.frame_intervals().unwrap();
    assert_eq!((st.count, st.min, st.jitter()), (1, 1_000_000, 0));
    assert_eq!(rig.log.regroup(8).len(), 2);
}

#[test]
fn polled_pio_write_of_an_eight_byte_frame_splits_at_the_fifo() {
    // spi-dw-core's dw_spi_poll_transfer (dws->irq == IRQ_NOTCONNECTED: a
    // patched spi-dw-mmio; the stock one requires an interrupt), no DMA.
    let mut rig = Rig::new();
    rig.probe();
    let t0 = 50_000;
    rig.sw(ssi::SER, 1, t0);
    rig.sw(ssi::SSIENR, 0, t0);
    rig.sw(ssi::CTRLR0, 0x07, t0);
    rig.sw(ssi::BAUDR, 10, t0);
    rig.sw(ssi::IMR, 0, t0);
    rig.sw(ssi::SSIENR, 1, t0);
    let (mut tx_len, mut rx_len, mut t, mut sent) = (8usize, 8usize, t0, 0usize);
    while rx_len > 0 {
        // dw_writer: min(tx_len, room, fifo - (rx_len - tx_len)).
        let room = 7 - rig.sr(ssi::TXFLR, t) as usize;
        let n = tx_len.min(room).min(7 - (rx_len - tx_len));
        for _ in 0..n {
            rig.sw(ssi::DR, DATA[sent] as u64, t);
            sent += 1;
            t += 10;
        }
        tx_len -= n;
        // spi_delay_exec: 8 SCK periods per outstanding word.
        t += 800 * (rx_len - tx_len) as u64;
        let avail = rig.sr(ssi::RXFLR, t) as usize;
        for _ in 0..avail.min(rx_len) {
            rig.sr(ssi::DR, t);
        }
        rx_len -= avail.min(rx_len);
        assert_eq!(
            rig.sr(ssi::RISR, t) as u32 & (ssi::INT_RXOI | ssi::INT_RXUI | ssi::INT_TXOI),
            0
        );
    }
    rig.sw(ssi::SER, 0, t);
    assert_eq!(rig.log.bytes(), DATA);
    let frames = rig.log.frames();
    assert_eq!(
        frames.iter().map(|f| f.bytes.len()).collect::<Vec<_>>(),
        vec![7, 1],
        "native CS drops between refills"
    );
    assert_eq!(frames[0].byte_times[0], t0 + 800);
    assert_eq!(rig.log.regroup(8)[0].1, DATA.to_vec());
    assert!(rig.dma_irq_edges.is_empty());
}

/// Sink frames, DMA interrupt edges, SSI and DMA counters, RAM.
type Record = (
    Vec<SinkFrame>,
    Vec<(u64, bool)>,
    Vec<u64>,
    Vec<u64>,
    Vec<u8>,
);

fn record(rig: &Rig) -> Record {
    (
        rig.log.frames(),
        rig.dma_irq_edges.clone(),
        rig.ssi.stats().iter().map(|s| s.value).collect(),
        rig.dma.stats().iter().map(|s| s.value).collect(),
        rig.ram.data.clone(),
    )
}

#[test]
fn same_inputs_give_identical_records() {
    let go = || {
        let mut rig = Rig::new();
        rig.probe();
        let mut t = 10_000;
        for k in 0..5u8 {
            let data: Vec<u8> = (0..12).map(|i| i * 17 + k).collect();
            let irq = rig.dma_write(&data, t, RAM + 0x1000 + 0x100 * k as u64, RAM + 0x3000);
            t = rig.finish(irq) + 123_457;
        }
        record(&rig)
    };
    let a = go();
    let b = go();
    assert_eq!(a, b);
    assert_eq!(a.0.len(), 5);
    assert!(a.0.iter().all(|f| f.bytes.len() == 12));
}

impl Rig {
    /// `axi_chan_block_xfer_start` for channel `n` (LL both sides).
    fn start_channel(&mut self, n: u64, cfg_hi: u64, lli_at: u64, t: u64) {
        let cfg = self.dr(axi::DMAC_CFG, t);
        self.dw(axi::DMAC_CFG, cfg | axi::CFG_DMAC_EN, t);
        self.dw(ch(n, axi::CH_CFG), 0xf, t);
        self.dw(ch(n, axi::CH_CFG) + 4, cfg_hi, t);
        self.dw(ch(n, axi::CH_LLP), lli_at, t);
        self.dw(ch(n, axi::CH_LLP) + 4, 0, t);
        let irqs = (axi::IRQ_DMA_TRF | axi::IRQ_ALL_ERR) as u64;
        self.dw(ch(n, axi::CH_INTSIGNAL_ENA), irqs, t);
        self.dw(
            ch(n, axi::CH_INTSTATUS_ENA),
            irqs | axi::IRQ_SUSPENDED as u64,
            t,
        );
        let chen = self.dr(axi::DMAC_CHEN, t);
        self.dw(axi::DMAC_CHEN, chen | 1 << n | 1 << (8 + n), t);
    }
}

fn put_lli(ram: &mut VecMemory, at: u64, sar: u64, dar: u64, bts: u32, ctl: u64) {
    let mut b = [0u8; 64];
    b[0..8].copy_from_slice(&sar.to_le_bytes());
    b[8..16].copy_from_slice(&dar.to_le_bytes());
    b[16..20].copy_from_slice(&bts.to_le_bytes());
    b[32..40].copy_from_slice(&ctl.to_le_bytes());
    ram.put(at, &b);
}

/// A full-duplex DMA transfer longer than the FIFO: the RX channel is
/// peripheral-to-memory on the SSI's RX request. With the depth of 7 the
/// driver sets DMARDLR = 2 (burst request at 3 entries) while the AXI
/// driver always programs 4-item bursts, so the 4th read of a burst finds
/// the RX FIFO empty: RX underflow, which spi-dw-dma unmasks and reports.
/// This is what the two stock drivers do on such a FIFO; the study's
/// spidev writes are TX-only and unaffected.
#[test]
fn full_duplex_dma_longer_than_the_fifo_underflows_rx() {
    let mut rig = Rig::with_answer(0x5a);
    rig.probe();
    let t0 = 20_000;
    rig.ram.put(RAM + 0x1000, &DATA);
    rig.sw(ssi::SER, 1, t0);
    rig.sw(ssi::SSIENR, 0, t0);
    rig.sw(ssi::CTRLR0, 0x07, t0);
    rig.sw(ssi::BAUDR, 10, t0);
    rig.sw(ssi::IMR, 0, t0);
    rig.sw(ssi::DMACR, (ssi::DMACR_TDMAE | ssi::DMACR_RDMAE) as u64, t0);
    rig.sw(
        ssi::IMR,
        (ssi::INT_TXOI | ssi::INT_RXUI | ssi::INT_RXOI) as u64,
        t0,
    );
    rig.sw(ssi::SSIENR, 1, t0);
    let last = axi::CTL_LLI_VALID | axi::CTL_LLI_LAST;
    // RX: DR (8-bit items, no increment) to memory (32-bit), 8 items, MSIZE 4.
    put_lli(
        &mut rig.ram,
        RAM + 0x2040,
        SSI_BASE + ssi::DR,
        RAM + 0x3000,
        7,
        2 << 11 | 1 << 4 | 1 << 14 | 1 << 18 | last,
    );
    // TX as in the write test.
    put_lli(
        &mut rig.ram,
        RAM + 0x2000,
        RAM + 0x1000,
        SSI_BASE + ssi::DR,
        1,
        2 << 8 | 1 << 6 | 1 << 14 | 1 << 18 | last,
    );
    rig.start_channel(1, 2 | (RX_HS as u64) << 7, RAM + 0x2040, t0 + 100); // rx first
    rig.start_channel(0, 1 | (TX_HS as u64) << 12, RAM + 0x2000, t0 + 100);
    rig.run_while(t0 + 100_000, |r| !r.ssi_irq.is_high());
    assert!(rig.ssi_irq.is_high());
    // Read without serving further events: the state at the first burst.
    assert_eq!(rig.ssi.read(ssi::ISR, 4, 0).unwrap() as u32, ssi::INT_RXUI);
    assert_eq!(
        rig.log.frames()[0].byte_times,
        [20_920, 21_720, 22_520],
        "burst when 3 answers are in"
    );
    // 3 real reads, then a read of the empty FIFO (0).
    assert_eq!(rig.ram.get(RAM + 0x3000, 4), &[0x5a, 0x5a, 0x5a, 0]);
    // Left alone, the same happens on the second burst; the DMA itself
    // sees nothing wrong and completes both channels.
    rig.run(t0 + 100_000);
    assert_eq!(
        rig.ram.get(RAM + 0x3000, 8),
        &[0x5a, 0x5a, 0x5a, 0, 0x5a, 0x5a, 0x5a, 0]
    );
    assert_eq!(rig.log.bytes(), DATA);
    let dma: Vec<u64> = rig.dma.stats().iter().map(|s| s.value).collect();
    assert_eq!(
        dma[..4],
        [2, 2, 16, 0],
        "two transfers, 16 bytes, no DMA error"
    );
    assert_eq!(rig.ssi.stats()[4].value, 2, "two RX underflows");
}

/// The interrupt-driven PIO path (an SSI node with `interrupts` and no
/// `dmas`, 6.1 and 6.12): `dw_spi_irq_setup`, then the handler on each
/// interrupt, for an 8-byte write through a 7-deep FIFO.
#[test]
fn interrupt_driven_pio_write_of_eight_bytes() {
    let mut rig = Rig::new();
    rig.probe();
    let t0 = 30_000;
    rig.sw(ssi::SER, 1, t0);
    rig.sw(ssi::SSIENR, 0, t0);
    rig.sw(ssi::CTRLR0, 0x07, t0);
    rig.sw(ssi::BAUDR, 10, t0);
    rig.sw(ssi::IMR, 0, t0);
    rig.sw(ssi::SSIENR, 1, t0);
    let (mut tx_len, mut rx_len, mut sent) = (8u64, 8u64, 0usize);
    // dw_spi_irq_setup: level = min(fifo/2, tx_len).
    rig.sw(ssi::TXFTLR, 3, t0);
    rig.sw(ssi::RXFTLR, 2, t0);
    let imr = ssi::INT_TXEI | ssi::INT_TXOI | ssi::INT_RXUI | ssi::INT_RXOI | ssi::INT_RXFI;
    rig.sw(ssi::IMR, imr as u64, t0);
    let mut irq_times = Vec::new();
    let mut t = t0;
    while rx_len > 0 {
        // Wait for the interrupt line; the handler runs 500 cycles later.
        rig.run_while(t + 1_000_000, |r| !r.ssi_irq.is_high());
        assert!(
            rig.ssi_irq.is_high(),
            "interrupt expected with {rx_len} bytes to go"
        );
        t = rig.time.max(t) + 500;
        irq_times.push(t);
        let isr = rig.sr(ssi::ISR, t) as u32;
        assert_eq!(
            isr & (ssi::INT_TXOI | ssi::INT_RXUI | ssi::INT_RXOI),
            0,
            "no FIFO error"
        );
        // dw_reader
        let n = rig.sr(ssi::RXFLR, t).min(rx_len);
        for _ in 0..n {
            rig.sr(ssi::DR, t);
        }
        rx_len -= n;
        if rx_len == 0 {
            rig.sw(ssi::IMR, 0, t);
            break;
        } else if rx_len <= rig.sr(ssi::RXFTLR, t) {
            rig.sw(ssi::RXFTLR, rx_len - 1, t);
        }
        if isr & ssi::INT_TXEI != 0 {
            // dw_writer
            let room = 7 - rig.sr(ssi::TXFLR, t);
            let n = tx_len.min(room).min(7 - (rx_len - tx_len));
            for _ in 0..n {
                rig.sw(ssi::DR, DATA[sent] as u64, t);
                sent += 1;
            }
            tx_len -= n;
            if tx_len == 0 {
                let imr = rig.sr(ssi::IMR, t);
                rig.sw(ssi::IMR, imr & !(ssi::INT_TXEI as u64), t);
            }
        }
        assert!(irq_times.len() < 20);
    }
    rig.sw(ssi::SER, 0, t);
    assert_eq!(rig.log.bytes(), DATA);
    assert!(!rig.ssi_irq.is_high());
    // First interrupt at once (empty FIFO below TXFTLR): the writer fills 7
    // (first byte out at once). TXFLR falls to 3 when the 4th byte starts
    // (3 frames later): the handler reads 3 answers and writes the 8th,
    // before the FIFO runs dry, so chip select stays down for all 8 bytes.
    assert_eq!(irq_times[..2], [t0 + 500, t0 + 500 + 3 * 800 + 500]);
    let f = rig.log.frames();
    assert_eq!(f.len(), 1);
    let expect: Vec<u64> = (1..=8).map(|k| t0 + 500 + 800 * k).collect();
    assert_eq!(f[0].byte_times, expect, "back to back");
}
