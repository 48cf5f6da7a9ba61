//! The DesignWare SSI (with an spidev sink), the AXI DMA and the GPIO as
//! configured board devices (`machines/atomic-spi.toml`): wired only through
//! board wires, the DMA moving data through the board's master view, time
//! through the board's event queue, device-tree nodes from their grants.
//! Then random MMIO traffic and random descriptor chains at the same board
//! devices: no panic, bounded, the same twice.

use std::path::Path;

use hs_bus::{Access, GuestRam, SystemBus};
use hs_devices::dma::axi;
use hs_devices::dma::board::AxiDmaDevice;
use hs_devices::spi::board::SsiDevice;
use hs_devices::spi::dw_ssi as ssi;
use hs_devices::{Clock, Prop};
use hs_machine::layout::DRAM_BASE;
use hs_machine::Board;

const RAM_SIZE: u64 = 1 << 20;

fn machine_file() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../machines/atomic-spi.toml")
}

/// A one-hart board with the devices of `machines/atomic-spi.toml`, added
/// the way the machine adds them (devices that refer to others last).
fn board() -> (Board, GuestRam) {
    let ram = GuestRam::new(DRAM_BASE, RAM_SIZE).unwrap();
    let mut b = Board::new(
        1,
        Clock {
            hz: 1_000_000_000,
            cycles_per_tick: 100,
        },
        &ram,
        5,
    )
    .unwrap();
    let mut plugs: Vec<_> = hs_machine::load_devices(&machine_file())
        .unwrap()
        .iter()
        .map(|d| hs_devices::resources::plug(d).ok().unwrap())
        .collect();
    plugs.sort_by_key(|p| !p.want.refers_to.is_empty());
    for p in plugs {
        b.plug(p).unwrap();
    }
    b.check_references().unwrap();
    (b, ram)
}

fn base(b: &Board, name: &str) -> u64 {
    b.grant(b.find(name).unwrap()).unwrap().base
}

/// The machine's loop: serve every device event due by `t`, in time order.
fn run_to(b: &mut Board, t: u64) -> u64 {
    let fired = b.fire_events_through(t, 1_000_000);
    assert!(fired < 1_000_000, "device events never end");
    fired
}

struct Drv {
    b: Board,
    ram: GuestRam,
    spi: u64,
    dma: u64,
}

impl Drv {
    fn new() -> Self {
        let (b, ram) = board();
        let (spi, dma) = (base(&b, "spi0"), base(&b, "dma0"));
        Self { b, ram, spi, dma }
    }
    fn w(&mut self, addr: u64, v: u64, now: u64) {
        run_to(&mut self.b, now);
        self.b
            .mmio_write(Access { hart: 0, now }, addr, 4, v)
            .unwrap();
    }
    fn r(&mut self, addr: u64, now: u64) -> u64 {
        run_to(&mut self.b, now);
        self.b.mmio_read(Access { hart: 0, now }, addr, 4).unwrap()
    }
    fn ch(&self, reg: u64) -> u64 {
        self.dma + axi::CH_BASE + reg
    }
    fn dma_irq(&self) -> bool {
        self.b
            .device::<AxiDmaDevice>(self.b.find("dma0").unwrap())
            .unwrap()
            .dma()
            .irq_level()
    }
}

#[test]
fn device_tree_refers_to_the_clocks_and_the_dma_controller_by_phandle() {
    let (b, _) = board();
    let ctx = b.fdt_ctx(vec![]);
    let nodes: Vec<_> = b.fdt_nodes(&ctx).into_iter().flatten().collect();
    let find = |prefix: &str| {
        nodes
            .iter()
            .find(|(_, n)| n.name.starts_with(prefix))
            .map(|(_, n)| n.clone())
            .unwrap()
    };
    let (spi, dma) = (find("spi@"), find("dma-controller@"));
    let ph = |n: &str| ctx.phandle(n).unwrap();
    assert_eq!(
        spi.get("compatible"),
        Some(&Prop::Str("snps,dw-apb-ssi".into()))
    );
    assert_eq!(spi.get("clocks"), Some(&Prop::U32(ph("spi_clk"))));
    assert_eq!(
        spi.get("dmas"),
        Some(&Prop::U32s(vec![ph("dma0"), 0, ph("dma0"), 1]))
    );
    assert!(spi.get("dma-names").is_some() && spi.get("interrupts").is_some());
    assert_eq!(
        spi.children[0].get("compatible"),
        Some(&Prop::Str("rohm,dh2228fv".into()))
    );
    assert_eq!(
        spi.children[0].get("spi-max-frequency"),
        Some(&Prop::U32(10_000_000))
    );
    assert_eq!(
        dma.get("clocks"),
        Some(&Prop::U32s(vec![ph("dma_clk"), ph("dma_clk")]))
    );
    assert_eq!(dma.get("phandle"), Some(&Prop::U32(ph("dma0"))));
    // The clocks are the configured fixed-clock devices, written once each.
    let clocks: Vec<&str> = nodes
        .iter()
        .filter(|(_, n)| n.get("compatible") == Some(&Prop::Str("fixed-clock".into())))
        .map(|(_, n)| n.name.as_str())
        .collect();
    assert_eq!(clocks, ["clock-dma_clk", "clock-spi_clk"]);
    // Windows and lines from the platform range, nothing hard-coded.
    let g = |n: &str| b.grant(b.find(n).unwrap()).unwrap().clone();
    assert_eq!(
        (
            g("gpio0").irqs.clone(),
            g("dma0").irqs.clone(),
            g("spi0").irqs.clone()
        ),
        (vec![64], vec![65], vec![66])
    );
    assert!(g("dma0").base >= hs_machine::layout::PLATFORM_BASE && g("spi0").size == ssi::SIZE);
}

/// spi-dw + spi-dw-dma + dw-axi-dmac (6.1) for an 8-byte spidev write:
/// the DMA pulls the bytes from RAM into the SSI's data register through the
/// board, paced by the SSI's request on the board wire `dma0.hs1`.
#[test]
fn eight_byte_dma_write_reaches_the_sink_through_the_board() {
    let mut d = Drv::new();
    let s = d.spi;
    // Probe: hw_init, FIFO depth, DMA thresholds; DMA controller on.
    d.w(s + ssi::SSIENR, 0, 0);
    d.w(s + ssi::IMR, 0, 0);
    d.w(s + ssi::SSIENR, 1, 0);
    let mut fifo = 1;
    while fifo < 256 {
        d.w(s + ssi::TXFTLR, fifo, 0);
        if d.r(s + ssi::TXFTLR, 0) != fifo {
            break;
        }
        fifo += 1;
    }
    assert_eq!(fifo, 7, "the configured FIFO depth");
    d.w(s + ssi::TXFTLR, 0, 0);
    d.w(s + ssi::DMARDLR, fifo / 2 - 1, 0);
    d.w(s + ssi::DMATDLR, fifo / 2, 0);
    d.w(d.dma + axi::DMAC_CFG, axi::CFG_DMAC_EN | axi::CFG_INT_EN, 0);
    // Transfer: 8 bytes at RAM+0x1000, one LLI at RAM+0x2000.
    let (buf, lli_at, t0) = (DRAM_BASE + 0x1000, DRAM_BASE + 0x2000, 10_000);
    assert!(d.ram.write_bytes(buf, b"ABCDEFGH"));
    d.w(s + ssi::SER, 1, t0);
    d.w(s + ssi::SSIENR, 0, t0);
    d.w(s + ssi::CTRLR0, 0x07, t0);
    d.w(s + ssi::BAUDR, 10, t0);
    d.w(s + ssi::DMACR, ssi::DMACR_TDMAE as u64, t0);
    d.w(s + ssi::IMR, ssi::INT_TXOI as u64, t0);
    d.w(s + ssi::SSIENR, 1, t0);
    let ctl: u64 = 2 << 8 | 1 << 6 | 1 << 14 | 1 << 18 | axi::CTL_LLI_VALID | axi::CTL_LLI_LAST;
    let mut lli = [0u8; 64];
    lli[0..8].copy_from_slice(&buf.to_le_bytes());
    lli[8..16].copy_from_slice(&(s + ssi::DR).to_le_bytes());
    lli[16..20].copy_from_slice(&1u32.to_le_bytes());
    lli[32..40].copy_from_slice(&ctl.to_le_bytes());
    assert!(d.ram.write_bytes(lli_at, &lli));
    let t1 = t0 + 100;
    d.w(d.ch(axi::CH_CFG), 0xf, t1);
    d.w(d.ch(axi::CH_CFG) + 4, 1 | 1 << 12, t1); // mem→per, DST_PER = handshake 1 (TX)
    d.w(d.ch(axi::CH_LLP), lli_at, t1);
    d.w(d.ch(axi::CH_LLP) + 4, 0, t1);
    let irqs = (axi::IRQ_DMA_TRF | axi::IRQ_ALL_ERR) as u64;
    d.w(d.ch(axi::CH_INTSIGNAL_ENA), irqs, t1);
    d.w(d.ch(axi::CH_INTSTATUS_ENA), irqs, t1);
    d.w(d.dma + axi::DMAC_CHEN, 1 | 1 << 8, t1);
    // The board serves the events: LLI at +20, two 4-byte bursts, DMA_TRF.
    let mut t = t1;
    while !d.dma_irq() {
        t = d.b.events.next_cycle().expect("the DMA has a next step");
        run_to(&mut d.b, t);
        assert!(t < t1 + 10_000, "no DMA completion");
    }
    assert_eq!(
        t, 10_152,
        "DMA_TRF when the last burst is in the FIFO (as the model alone)"
    );
    assert_eq!(d.r(d.ch(axi::CH_INTSTATUS), t) as u32, axi::IRQ_DMA_TRF);
    d.w(d.ch(axi::CH_INTCLEAR), axi::IRQ_DMA_TRF as u64, t);
    assert!(!d.dma_irq());
    // The wire drains at 800 cycles a byte; poll BUSY as the driver does.
    while d.r(s + ssi::SR, t) as u32 & (ssi::SR_BUSY | ssi::SR_TFE) != ssi::SR_TFE {
        t += 100;
    }
    d.w(s + ssi::SER, 0, t);
    let id = d.b.find("spi0").unwrap();
    let log = d.b.device::<SsiDevice>(id).unwrap().sink(0).unwrap();
    let f = log.frames();
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].bytes, b"ABCDEFGH");
    assert_eq!(
        f[0].byte_times,
        (1..=8).map(|k| 10_120 + 800 * k).collect::<Vec<_>>()
    );
    let stats: std::collections::BTreeMap<String, u64> =
        d.b.device_stats()
            .into_iter()
            .map(|s| (s.name, s.value))
            .collect();
    assert_eq!(stats["spi0.cs0.bytes"], 8);
    assert_eq!(stats["spi0.cs0.last8"], u64::from_be_bytes(*b"ABCDEFGH"));
    assert_eq!(stats["spi0.cs0.fnv1a"], hs_devices::spi::fnv1a(b"ABCDEFGH"));
    assert_eq!(
        (
            stats["dma0.transfers"],
            stats["dma0.bytes"],
            stats["dma0.errors"]
        ),
        (1, 8, 0)
    );
    assert_eq!(
        (stats["dma0.trace_done"], stats["dma0.last_done_cycle"]),
        (1, 10_152)
    );
    // The acknowledgements went back on the board wire of handshake 1.
    assert_eq!(d.b.signal("dma0.hs1").acks(), 2);
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Random MMIO traffic at the configured GPIO, SSI and DMA (any offset in
/// and just past their windows, any width) and random linked-list chains in
/// RAM that point at RAM, at the SSI's data register, at other devices and
/// at nothing. Returns the device counters at the end.
fn fuzz(seed: u64, ops: usize) -> Vec<(String, u64)> {
    let (mut b, ram) = board();
    let mut rng = Rng(seed | 1);
    let targets = [base(&b, "gpio0"), base(&b, "spi0"), base(&b, "dma0")];
    let spi_dr = targets[1] + ssi::DR;
    let region = DRAM_BASE + 0x4_0000;
    let mut now = 0u64;
    for _ in 0..ops {
        now += rng.below(3000);
        run_to(&mut b, now);
        match rng.below(10) {
            // A random descriptor: pointers into RAM, the SSI, elsewhere.
            0 => {
                let at = region + rng.below(64) * 64;
                let mut lli = [0u8; 64];
                for q in lli.chunks_mut(8) {
                    q.copy_from_slice(&rng.next().to_le_bytes());
                }
                let ptr = |r: &mut Rng| match r.below(4) {
                    0 => spi_dr,
                    1 => region + r.below(0x2000),
                    2 => r.next(),
                    _ => DRAM_BASE + RAM_SIZE - r.below(16),
                };
                lli[0..8].copy_from_slice(&ptr(&mut rng).to_le_bytes());
                lli[8..16].copy_from_slice(&ptr(&mut rng).to_le_bytes());
                lli[16..24].copy_from_slice(&rng.below(64).to_le_bytes());
                let next = if rng.below(2) == 0 {
                    region + rng.below(64) * 64
                } else {
                    rng.next()
                };
                lli[24..32].copy_from_slice(&next.to_le_bytes());
                let mut ctl = rng.next() | axi::CTL_LLI_VALID;
                if rng.below(3) == 0 {
                    ctl |= axi::CTL_LLI_LAST;
                }
                lli[32..40].copy_from_slice(&ctl.to_le_bytes());
                assert!(ram.write_bytes(at, &lli));
            }
            // Point a channel at the chain and start it.
            1 => {
                let c = targets[2] + axi::CH_BASE + rng.below(8) * axi::CH_STRIDE;
                let acc = Access { hart: 0, now };
                let _ = b.mmio_write(acc, c + axi::CH_LLP, 8, region + rng.below(64) * 64);
                let _ = b.mmio_write(
                    acc,
                    c + axi::CH_CFG,
                    8,
                    rng.next() & !(0xf << 39) | (rng.below(2) << 44),
                );
                let _ = b.mmio_write(acc, targets[2] + axi::DMAC_CFG, 4, 3);
                let _ = b.mmio_write(acc, targets[2] + axi::DMAC_CHEN, 4, 0xffff);
            }
            _ => {
                let k = rng.below(3) as usize;
                let (t, window) = (targets[k], [0x100, ssi::SIZE, axi::SIZE][k]);
                let mut off = rng.below(window + 16);
                let mut size = 1u8 << rng.below(4);
                if rng.below(2) == 0 {
                    // Mostly what drivers do: aligned 32-bit accesses.
                    (off, size) = (off & !3, 4);
                }
                let acc = Access { hart: 0, now };
                if rng.below(2) == 0 {
                    let _ = b.mmio_read(acc, t + off, size);
                } else {
                    let v = if rng.below(4) == 0 {
                        rng.below(8)
                    } else {
                        rng.next()
                    };
                    let _ = b.mmio_write(acc, t + off, size, v);
                }
            }
        }
    }
    run_to(&mut b, now + 100_000_000);
    b.device_stats()
        .into_iter()
        .map(|s| (s.name, s.value))
        .collect()
}

#[test]
fn random_traffic_at_the_board_devices_ends_and_repeats() {
    for seed in [1u64, 0x5eed, 0xdead_beef] {
        let a = fuzz(seed, 4000);
        assert_eq!(
            a,
            fuzz(seed, 4000),
            "seed {seed:#x}: the same traffic gives the same counters"
        );
        eprintln!("seed {seed:#x}: {a:?}");
        let get = |n: &str| a.iter().find(|(k, _)| k == n).map(|(_, v)| *v).unwrap();
        // The traffic reached every device through the board.
        assert!(get("dma0.lli_fetches") > 0, "seed {seed:#x}: {a:?}");
        assert!(
            get("spi0.ignored_writes") + get("spi0.frames") > 0,
            "seed {seed:#x}: {a:?}"
        );
        assert!(
            get("gpio0.ignored_writes") + get("gpio0.output_changes") > 0,
            "seed {seed:#x}: {a:?}"
        );
    }
}
