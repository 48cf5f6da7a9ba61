//! The DesignWare APB SSI as a board device (`kind = "dw-apb-ssi"`), with
//! the SPI peripherals on its chip selects configured in child tables.
//!
//! ```toml
//! [board.spi0]
//! kind = "dw-apb-ssi"
//! clock = "spi_clk"        # a `fixed-clock` device: ssi_clk, Linux's max_freq (required)
//! dma = "dma0"             # a `dw-axi-dmac` device: `dmas`/`dma-names` (optional: PIO only)
//! dma-rx = 0               # handshake interfaces of the RX and TX requests (defaults 0, 1)
//! dma-tx = 1
//! interrupt = true         # an `interrupts` property and a PLIC line (default true)
//! fifo-depth = 7           # 2..256 (default 7: see docs/spi-dma.md)
//! num-cs = 4               # native chip selects, 1..16 (default 4)
//!
//! [board.spi0.cs0]         # the peripheral on chip select 0
//! kind = "spidev-sink"     # records every frame; Linux binds spidev to it
//! max-hz = 10_000_000      # its spi-max-frequency (default 10 MHz)
//! ```
//!
//! Time: the controller's frames end at [`DwSsi::next_event`]; the device
//! schedules that cycle through the board's event queue after every access
//! and event, so the wire runs (and its interrupt and DMA requests move) at
//! the simulated cycle the frame ends. DMA requests go out on the board wires
//! `DMA.hsN` / `DMA.hsN.single` ([`crate::lines::handshake_wire_names`]); the
//! controller never names the DMA device's type.
//!
//! Statistics: the controller's counters (`NAME.frames`, …) and, per sink,
//! `NAME.csN.frames`, `.bytes`, `.last8` (the last 8 bytes received,
//! big-endian), `.fnv1a` (FNV-1a 64 of every byte in order), `.first_cycle`,
//! `.last_cycle` — the host reads a run's sink record from these
//! (`--stats-json`).

use super::dw_ssi::{self, DwSsi, SsiConfig, SsiDmaFdt, SsiFdt};
use super::enc28j60::{Enc28j60, Enc28j60Config, IntPin};
use super::{SinkLog, SpiSink};
use crate::ether::parse_mac;
use crate::fdt::{FdtCtx, FdtNode, Placement};
use crate::lines::{handshake_wire_names, SignalRequestLine};
use crate::resources::{Attach, DeviceConfig, Kind, ParamError, Params, Plug, Want};
use crate::{BadAccess, DevCtx, Device, Grant, Stat, WriteEffect};

pub const KIND: Kind = Kind {
    name: "dw-apb-ssi",
    plug,
};

/// Handshake interfaces a DMA controller has (the AXI DMA's 4-bit `SRC_PER`/`DST_PER`).
pub const HANDSHAKES: i64 = 16;

/// Configuration of one SSI, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SsiBoardConfig {
    pub clock: String,
    /// DMA controller name and the (rx, tx) handshake interfaces.
    pub dma: Option<(String, u32, u32)>,
    pub interrupt: bool,
    pub fifo_depth: u32,
    pub num_cs: u32,
    /// `(chip select, spi-max-frequency)` of each sink.
    pub sinks: Vec<(u32, u32)>,
    /// ENC28J60 network chips.
    pub chips: Vec<Enc28j60Board>,
    /// `(chip select, GPIO device, line)` of chip selects driven by a GPIO
    /// output (`cs-gpio`, `cs-line`; active low, Linux's `cs-gpios`).
    pub gpio_cs: Vec<(u32, String, u32)>,
}

/// An ENC28J60 on a chip select (`kind = "enc28j60"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enc28j60Board {
    pub cs: u32,
    pub max_hz: u32,
    pub mac: [u8; 6],
    /// `int-gpio` / `int-line`: the INT pin's GPIO input.
    pub int: Option<IntPin>,
    /// `peer = true`: the deterministic network peer on the chip's wire.
    pub peer: Option<PeerBoard>,
}

/// The peer on a NIC's wire (`hs_peer`): 10.0.2.2, link rate the NIC's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerBoard {
    /// `peer-latency-ns`: one-way propagation delay (default 5 µs).
    pub latency_ns: u64,
    /// `peer-tcp-source`: port of a TCP source whose size the client asks.
    pub tcp_source: Option<u16>,
    /// `peer-tcp-sink`: port of a TCP sink.
    pub tcp_sink: Option<u16>,
}

fn err(key: &str, message: impl Into<String>) -> ParamError {
    ParamError {
        key: key.into(),
        message: message.into(),
    }
}

/// Validate a `[board.NAME] kind = "dw-apb-ssi"` table.
pub fn parse(cfg: &DeviceConfig) -> Result<SsiBoardConfig, ParamError> {
    let mut p = Params::new(cfg);
    let keys = p.keys();
    let clock = p.string("clock")?.ok_or_else(|| {
        err(
            "clock",
            "is missing (name a `fixed-clock` device: the controller's ssi_clk)",
        )
    })?;
    let dma_name = p.string("dma")?;
    let rx = p.int("dma-rx", 0, 0, HANDSHAKES - 1)? as u32;
    let tx = p.int("dma-tx", 1, 0, HANDSHAKES - 1)? as u32;
    let dma = match dma_name {
        Some(d) if rx == tx => return Err(err("dma-tx", format!("{tx} is also `dma-rx` (the two requests need their own handshake interfaces on `{d}`)"))),
        Some(d) => Some((d, rx, tx)),
        None => {
            if let Some(k) = ["dma-rx", "dma-tx"].into_iter().find(|k| keys.contains(k)) {
                return Err(err(k, "needs `dma` (the DMA controller the handshake interfaces belong to)"));
            }
            None
        }
    };
    let interrupt = p.bool("interrupt", true)?;
    let fifo_depth = p.int("fifo-depth", dw_ssi::FIFO_DEPTH as i64, 2, 256)? as u32;
    let num_cs = p.int("num-cs", 4, 1, 16)? as u32;
    let mut sinks = Vec::new();
    let mut chips = Vec::new();
    let mut gpio_cs = Vec::new();
    let mut children: Vec<&str> = keys
        .iter()
        .filter_map(|k| k.split_once('.').map(|(c, _)| c))
        .collect();
    children.dedup();
    for child in children {
        let cs = child
            .strip_prefix("cs")
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|n| child == format!("cs{n}"));
        let Some(cs) = cs else {
            return Err(err(
                child,
                "is not a child table of a `dw-apb-ssi` device (chip selects are `cs0`, `cs1`, …)",
            ));
        };
        if cs >= num_cs {
            return Err(err(
                child,
                format!("chip select {cs} does not exist (`num-cs` is {num_cs})"),
            ));
        }
        let key = |f: &str| keys.iter().find(|k| **k == format!("{child}.{f}")).copied();
        let kind = match key("kind") {
            Some(k) => p.string(k)?,
            None => None,
        };
        if let Some(k) = key("cs-gpio") {
            let gpio = p.string(k)?.unwrap_or_default();
            let line = int_at(&mut p, key("cs-line"), 0, 0, 31)? as u32;
            gpio_cs.push((cs, gpio, line));
        } else if let Some(k) = key("cs-line") {
            return Err(err(
                k,
                "needs `cs-gpio` (the GPIO device whose output drives this chip select)",
            ));
        }
        match kind.as_deref() {
            Some("spidev-sink") => {
                let hz = int_at(&mut p, key("max-hz"), 10_000_000, 1, u32::MAX as i64)? as u32;
                sinks.push((cs, hz));
            }
            Some("enc28j60") => {
                // The datasheet allows 20 MHz; the Openmoko seed's bus ran at 12.
                let hz = int_at(&mut p, key("max-hz"), 12_000_000, 1, 20_000_000)? as u32;
                let mac = match key("mac") {
                    Some(k) => {
                        let text = p.string(k)?.unwrap_or_default();
                        parse_mac(&text).ok_or_else(|| {
                            err(k, format!("`{text}` is not a unicast MAC address like \"02:00:00:00:00:01\""))
                        })?
                    }
                    None => [0x02, 0, 0, 0, 0, 0x10 + cs as u8],
                };
                let int = match key("int-gpio") {
                    Some(k) => {
                        let gpio = p.string(k)?.unwrap_or_default();
                        let line = int_at(&mut p, key("int-line"), 0, 0, 31)? as u32;
                        Some(IntPin { gpio, line })
                    }
                    None => {
                        if let Some(k) = key("int-line") {
                            return Err(err(k, "needs `int-gpio` (the GPIO device the INT pin is wired to)"));
                        }
                        None
                    }
                };
                let peer = match key("peer") {
                    Some(k) => p.bool(k, false)?,
                    None => false,
                };
                let latency_ns = int_at(&mut p, key("peer-latency-ns"), 5_000, 0, 1_000_000_000)? as u64;
                let tcp_source = match key("peer-tcp-source") {
                    Some(k) => Some(int_at(&mut p, Some(k), 5001, 1, 65535)? as u16),
                    None => None,
                };
                let tcp_sink = match key("peer-tcp-sink") {
                    Some(k) => Some(int_at(&mut p, Some(k), 5002, 1, 65535)? as u16),
                    None => None,
                };
                if !peer {
                    if let Some(k) = ["peer-latency-ns", "peer-tcp-source", "peer-tcp-sink"]
                        .into_iter()
                        .find_map(&key)
                    {
                        return Err(err(k, "needs `peer = true` (the network peer it configures)"));
                    }
                }
                if tcp_source.is_some() && tcp_source == tcp_sink {
                    return Err(err(key("peer-tcp-sink").unwrap_or("peer-tcp-sink"), "is the TCP source's port too"));
                }
                let peer = peer.then_some(PeerBoard { latency_ns, tcp_source, tcp_sink });
                chips.push(Enc28j60Board { cs, max_hz: hz, mac, int, peer });
            }
            Some(other) => {
                return Err(err(
                    &format!("{child}.kind"),
                    format!("`{other}` is not an SPI peripheral kind (known: \"spidev-sink\", \"enc28j60\")"),
                ))
            }
            None => {
                return Err(err(
                    &format!("{child}.kind"),
                    "is missing (which peripheral is on this chip select?)",
                ))
            }
        }
    }
    p.finish()?;
    Ok(SsiBoardConfig {
        clock,
        dma,
        interrupt,
        fifo_depth,
        num_cs,
        sinks,
        chips,
        gpio_cs,
    })
}

/// An integer key that may be absent (then `default`).
fn int_at<'a>(
    p: &mut Params<'a>,
    key: Option<&'a str>,
    default: i64,
    lo: i64,
    hi: i64,
) -> Result<i64, ParamError> {
    match key {
        Some(k) => p.int(k, default, lo, hi),
        None => Ok(default),
    }
}

/// `aa:bb:cc:dd:ee:ff`, unicast (a multicast station address is refused).
fn plug(cfg: &DeviceConfig) -> Result<Plug, ParamError> {
    let c = parse(cfg)?;
    let name = cfg.name.clone();
    let mut want = Want::new(name.clone())
        .mmio(dw_ssi::SIZE)
        .phandle()
        .refers_to(c.clock.clone());
    if c.interrupt {
        want = want.irqs(1);
    }
    if let Some((d, _, _)) = &c.dma {
        want = want.refers_to(d.clone());
    }
    for g in c.chips.iter().filter_map(|c| c.int.as_ref()) {
        want = want.refers_to(g.gpio.clone());
    }
    for (_, g, _) in &c.gpio_cs {
        want = want.refers_to(g.clone());
    }
    if !c.gpio_cs.is_empty() {
        want = want.listens();
    }
    Ok(Plug::new(want, move |a: &mut Attach| {
        Box::new(SsiDevice::attach(&name, c, a))
    }))
}

/// The controller on the board.
pub struct SsiDevice {
    ssi: DwSsi,
    cfg: SsiBoardConfig,
    /// Host-side records of the sinks, by chip select.
    sinks: Vec<(u32, SinkLog)>,
}

impl SsiDevice {
    /// Built by the board: ssi_clk is the named clock's rate (100 MHz if the
    /// clock is missing; the board then refuses the machine anyway).
    pub fn attach(name: &str, cfg: SsiBoardConfig, a: &mut Attach) -> Self {
        let ssi_clk_hz = a.clock_rate(&cfg.clock).unwrap_or(100_000_000);
        let sc = SsiConfig {
            core_hz: a.clock.hz,
            ssi_clk_hz,
            fifo_depth: cfg.fifo_depth,
            num_cs: cfg.num_cs,
            id: 0,
        };
        let irq = cfg.interrupt.then(|| a.irq(0));
        let line = |a: &mut Attach, dma: &str, hs: u32| -> Box<dyn crate::lines::DmaRequestLine> {
            let (b, s) = handshake_wire_names(dma, hs);
            Box::new(SignalRequestLine {
                burst: a.signal(&b),
                single: a.signal(&s),
            })
        };
        let (tx, rx) = match &cfg.dma {
            Some((d, rx, tx)) => (Some(line(a, d, *tx)), Some(line(a, d, *rx))),
            None => (None, None),
        };
        let mut ssi = DwSsi::new(name, sc, irq, tx, rx);
        let mut sinks = Vec::new();
        for &(cs, hz) in &cfg.sinks {
            let sink = SpiSink::new(cs, hz);
            sinks.push((cs, sink.log()));
            ssi.attach(cs, Box::new(sink));
        }
        for chip in &cfg.chips {
            // INT is active low: the chip drives the GPIO input wire high at reset.
            let pin = chip
                .int
                .as_ref()
                .map(|i| a.signal(&format!("{}.in{}", i.gpio, i.line)));
            let c = Enc28j60Config {
                core_hz: a.clock.hz,
                max_hz: chip.max_hz,
                mac: chip.mac,
                int: chip.int.clone(),
            };
            let mut dev = Enc28j60::new(&format!("{name}.cs{}", chip.cs), c, pin);
            if let Some(pb) = &chip.peer {
                let mut pc = hs_peer::PeerConfig::new(a.clock.hz);
                pc.link_bps = super::enc28j60::LINK_BPS;
                pc.latency_ns = pb.latency_ns;
                if let Some(port) = pb.tcp_source {
                    pc.services
                        .push(hs_peer::Service::TcpSource { port, bytes: None });
                }
                if let Some(port) = pb.tcp_sink {
                    pc.services.push(hs_peer::Service::TcpSink { port });
                }
                dev.connect(Box::new(hs_peer::Peer::new(pc)));
            }
            ssi.attach(chip.cs, Box::new(dev));
        }
        for (cs, gpio, line) in &cfg.gpio_cs {
            ssi.set_gpio_cs(*cs, a.signal(&format!("{gpio}.out{line}")));
        }
        Self { ssi, cfg, sinks }
    }

    pub fn ssi(&self) -> &DwSsi {
        &self.ssi
    }
    /// The record of the sink on chip select `cs`.
    pub fn sink(&self, cs: u32) -> Option<SinkLog> {
        self.sinks
            .iter()
            .find(|(c, _)| *c == cs)
            .map(|(_, l)| l.clone())
    }

    /// `cs-gpios`: one `<&gpio line GPIO_ACTIVE_LOW>` per GPIO-driven chip
    /// select, `<0>` (native) for the others.
    fn with_cs_gpios(&self, node: FdtNode, ctx: &FdtCtx) -> FdtNode {
        if self.cfg.gpio_cs.is_empty() {
            return node;
        }
        let last = self.cfg.gpio_cs.iter().map(|g| g.0).max().unwrap_or(0);
        let mut cells = Vec::new();
        for cs in 0..=last {
            match self.cfg.gpio_cs.iter().find(|g| g.0 == cs) {
                Some((_, gpio, line)) => cells.extend([ctx.phandle(gpio).unwrap_or(0), *line, 1]),
                None => cells.push(0),
            }
        }
        node.u32s("cs-gpios", cells)
    }

    fn reschedule(&self, ctx: &mut DevCtx) {
        if let Some(t) = self.ssi.next_event() {
            ctx.events.schedule(t, 0);
        }
    }
}

impl Device for SsiDevice {
    /// The controller with its peripherals (the sinks' records are shared
    /// with `sinks`: the sinks restore them in place).
    fn state(&self) -> Option<&dyn crate::Persist> {
        self.ssi
            .persistent()
            .then_some(&self.ssi as &dyn crate::Persist)
    }
    fn state_mut(&mut self) -> Option<&mut dyn crate::Persist> {
        if !self.ssi.persistent() {
            return None;
        }
        Some(&mut self.ssi)
    }
    fn name(&self) -> String {
        self.ssi.name().to_string()
    }
    fn size(&self) -> u64 {
        dw_ssi::SIZE
    }
    fn read(&mut self, ctx: &mut DevCtx, offset: u64, size: u8) -> Result<u64, BadAccess> {
        let r = self.ssi.read(offset, size, ctx.now);
        self.reschedule(ctx);
        r
    }
    fn write(
        &mut self,
        ctx: &mut DevCtx,
        offset: u64,
        size: u8,
        val: u64,
    ) -> Result<WriteEffect, BadAccess> {
        self.ssi.write(offset, size, val, ctx.now)?;
        self.reschedule(ctx);
        Ok(WriteEffect {
            irq_changed: true,
            stop: false,
        })
    }
    fn event(&mut self, ctx: &mut DevCtx, _token: u64) {
        self.ssi.advance(ctx.now);
        self.reschedule(ctx);
    }
    fn inputs_changed(&mut self, ctx: &mut DevCtx) {
        self.ssi.sample_gpio_cs(ctx.now);
        self.reschedule(ctx);
    }
    fn fdt_nodes(&self, g: &Grant, ctx: &FdtCtx) -> Vec<(Placement, FdtNode)> {
        let dma = self.cfg.dma.as_ref().map(|(d, rx, tx)| SsiDmaFdt {
            controller: ctx.phandle(d).unwrap_or(0),
            tx_handshake: *tx,
            rx_handshake: *rx,
        });
        let r = SsiFdt {
            interrupt_parent: ctx.interrupt_parent,
            irq: g.irqs.first().copied(),
            clock: ctx.phandle(&self.cfg.clock).unwrap_or(0),
            dma,
        };
        // The model also writes a clock node of its own; on the board the
        // clock is the configured `fixed-clock` device.
        self.ssi
            .fdt_nodes_with(g.base, &r, &ctx.phandles)
            .into_iter()
            .filter(|(p, _)| *p == Placement::Soc)
            .map(|(p, n)| (p, self.with_cs_gpios(n.u32("phandle", g.phandle()), ctx)))
            .collect()
    }
    fn stats(&self) -> Vec<Stat> {
        let mut v = self.ssi.stats();
        v.extend(self.ssi.peripheral_stats());
        let n = self.ssi.name();
        for (cs, log) in &self.sinks {
            let s = log.summary();
            let k = |f: &str| format!("{n}.cs{cs}.{f}");
            v.push(Stat::new(
                k("frames"),
                s.frames,
                "chip-select frames the sink received bytes in",
            ));
            v.push(Stat::new(k("bytes"), s.bytes, "bytes the sink received"));
            v.push(Stat::new(
                k("last8"),
                s.last8,
                "the last 8 bytes the sink received, big-endian",
            ));
            v.push(Stat::new(
                k("fnv1a"),
                s.fnv1a,
                "FNV-1a 64 of every byte the sink received, in order",
            ));
            v.push(Stat::new(
                k("first_cycle"),
                s.first_cycle,
                "arrival cycle of the sink's first byte",
            ));
            v.push(Stat::new(
                k("last_cycle"),
                s.last_cycle,
                "arrival cycle of the sink's last byte",
            ));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ParamValue;

    fn cfg() -> DeviceConfig {
        DeviceConfig::new("spi0", "dw-apb-ssi")
            .with("clock", ParamValue::Str("spi_clk".into()))
            .with("dma", ParamValue::Str("dma0".into()))
            .with("cs0.kind", ParamValue::Str("spidev-sink".into()))
            .with("cs0.max-hz", ParamValue::Int(25_000_000))
    }
    fn msg(c: DeviceConfig) -> String {
        crate::resources::plug(&c).err().unwrap().to_string()
    }

    #[test]
    fn configuration_with_a_sink_child_table() {
        let c = parse(&cfg()).unwrap();
        assert_eq!(c.dma, Some(("dma0".into(), 0, 1)));
        assert_eq!(
            (c.interrupt, c.fifo_depth, c.num_cs, c.sinks.clone()),
            (true, 7, 4, vec![(0, 25_000_000)])
        );
        let p = crate::resources::plug(&cfg()).ok().unwrap();
        assert_eq!(
            p.want.refers_to,
            vec!["spi_clk".to_string(), "dma0".to_string()]
        );
        assert_eq!(
            (p.want.irqs.len(), p.want.phandle, p.want.master),
            (1, true, false)
        );
        let p = crate::resources::plug(&cfg().with("interrupt", ParamValue::Bool(false)))
            .ok()
            .unwrap();
        assert!(p.want.irqs.is_empty());
    }

    #[test]
    fn errors_name_the_key() {
        let no_clock = DeviceConfig::new("spi0", "dw-apb-ssi");
        assert_eq!(
            msg(no_clock),
            "key `clock`: is missing (name a `fixed-clock` device: the controller's ssi_clk)"
        );
        assert_eq!(msg(cfg().with("dma-tx", ParamValue::Int(0))), "key `dma-tx`: 0 is also `dma-rx` (the two requests need their own handshake interfaces on `dma0`)");
        let mut c = cfg();
        c.params.remove("dma");
        assert_eq!(
            msg(c.with("dma-rx", ParamValue::Int(2))),
            "key `dma-rx`: needs `dma` (the DMA controller the handshake interfaces belong to)"
        );
        assert_eq!(
            msg(cfg().with("cs4.kind", ParamValue::Str("spidev-sink".into()))),
            "key `cs4`: chip select 4 does not exist (`num-cs` is 4)"
        );
        assert_eq!(
            msg(cfg().with("cs1.kind", ParamValue::Str("flash".into()))),
            "key `cs1.kind`: `flash` is not an SPI peripheral kind (known: \"spidev-sink\", \"enc28j60\")"
        );
        assert_eq!(
            msg(cfg().with("cs1.max-hz", ParamValue::Int(5))),
            "key `cs1.kind`: is missing (which peripheral is on this chip select?)"
        );
        assert_eq!(
            msg(cfg().with("cs0.mode", ParamValue::Int(3))),
            "key `cs0.mode`: is not a key of a `dw-apb-ssi` device"
        );
        assert_eq!(msg(cfg().with("port.x", ParamValue::Int(3))), "key `port`: is not a child table of a `dw-apb-ssi` device (chip selects are `cs0`, `cs1`, …)");
        assert_eq!(
            msg(cfg().with("fifo-depth", ParamValue::Int(1))),
            "key `fifo-depth`: 1 is out of range (2 to 256)"
        );
    }
}
