//! The DesignWare AXI DMA controller as a board device (`kind = "dw-axi-dmac"`).
//!
//! ```toml
//! [board.dma0]
//! kind = "dw-axi-dmac"
//! clock = "dma_clk"        # a `fixed-clock` device: core-clk and cfgr-clk (required)
//! channels = 8             # 1..8 (default 8)
//! block-size = 4096        # largest block in items, 1..0x200000 (default 4096)
//! lli-fetch-cycles = 20    # core cycles to read one linked-list item (default 20)
//! item-cycles = 4          # core cycles per item moved (default 4)
//! ```
//!
//! The board makes it a bus master ([`crate::Want::bus_master`]): every call
//! it gets carries [`crate::DevCtx::master`], guest RAM plus the other
//! devices' windows (a peripheral's FIFO data register), through which
//! [`AxiDma::advance`] moves data. Before every register access the
//! controller runs up to the access's cycle, so registers are exact; after
//! every access, event and change of a board wire it schedules
//! [`AxiDma::next_event`] in the board's event queue. Handshake interface
//! `N` is the pair of board wires `NAME.hsN` (burst request, acknowledged
//! on it) and `NAME.hsN.single` ([`crate::lines::handshake_wire_names`]),
//! driven by a peripheral that names this controller in its configuration.
//!
//! Statistics: the model's counters (`NAME.transfers`, `.blocks`, `.bytes`,
//! `.errors`, `.lli_fetches`, `.irqs`) plus `NAME.trace_done` and
//! `NAME.trace_stopped` (channel completions and early stops seen in the
//! event trace) and `NAME.last_done_cycle`.

use super::axi::{self, AxiDma, AxiDmaConfig, AxiDmaFdt, DmaEvent, DmaEventKind};
use crate::fdt::{FdtCtx, FdtNode, Placement};
use crate::lines::{handshake_wire_names, SignalHandshake, SignalRequestLine};
use crate::resources::{Attach, DeviceConfig, Kind, ParamError, Params, Plug, Want};
use crate::spi::board::HANDSHAKES;
use crate::{BadAccess, DevCtx, Device, Grant, Stat, WriteEffect};

pub const KIND: Kind = Kind {
    name: "dw-axi-dmac",
    plug,
};

/// Events of the trace kept on the board device (the model's own trace is
/// drained into it after every call).
const KEEP_EVENTS: usize = 4096;

/// Validated configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaBoardConfig {
    pub clock: String,
    pub model: AxiDmaConfig,
}

/// Validate a `[board.NAME] kind = "dw-axi-dmac"` table.
pub fn parse(cfg: &DeviceConfig) -> Result<DmaBoardConfig, ParamError> {
    let mut p = Params::new(cfg);
    let clock = p.string("clock")?.ok_or_else(|| ParamError {
        key: "clock".into(),
        message: "is missing (name a `fixed-clock` device: the controller's core-clk and cfgr-clk)"
            .into(),
    })?;
    let d = AxiDmaConfig::default();
    let model = AxiDmaConfig {
        channels: p.int("channels", d.channels as i64, 1, axi::MAX_CHANNELS as i64)? as u32,
        block_size: p.int("block-size", d.block_size as i64, 1, 0x20_0000)? as u32,
        lli_fetch_cycles: p.int("lli-fetch-cycles", d.lli_fetch_cycles as i64, 1, 1_000_000)?
            as u64,
        item_cycles: p.int("item-cycles", d.item_cycles as i64, 1, 1_000_000)? as u64,
        ..d
    };
    p.finish()?;
    Ok(DmaBoardConfig { clock, model })
}

fn plug(cfg: &DeviceConfig) -> Result<Plug, ParamError> {
    let c = parse(cfg)?;
    let name = cfg.name.clone();
    let want = Want::new(name.clone())
        .mmio(axi::SIZE)
        .irqs(1)
        .phandle()
        .listens()
        .bus_master()
        .refers_to(c.clock.clone());
    Ok(Plug::new(want, move |a: &mut Attach| {
        Box::new(AxiDmaDevice::attach(&name, c, a))
    }))
}

/// The controller on the board.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct AxiDmaDevice {
    dma: AxiDma,
    clock: String,
    trace: Vec<DmaEvent>,
    trace_done: u64,
    trace_stopped: u64,
    last_done: u64,
}

impl crate::Persist for AxiDmaDevice {
    fn save(&self) -> Result<Vec<u8>, String> {
        hs_snapshot::state::encode(self)
    }
    fn restore(&mut self, data: &[u8]) -> Result<(), String> {
        let mut fresh: AxiDmaDevice = hs_snapshot::state::decode(data)?;
        self.dma.fits(&fresh.dma)?;
        crate::same("DMA controller's clock", &fresh.clock, &self.clock)?;
        fresh.dma.keep_ties(&mut self.dma);
        *self = fresh;
        Ok(())
    }
}

impl AxiDmaDevice {
    pub fn attach(name: &str, cfg: DmaBoardConfig, a: &mut Attach) -> Self {
        let ifaces = (0..HANDSHAKES as u32)
            .map(|hs| {
                let (b, s) = handshake_wire_names(name, hs);
                SignalRequestLine {
                    burst: a.signal(&b),
                    single: a.signal(&s),
                }
            })
            .collect();
        let model = AxiDmaConfig {
            clk_hz: a.clock_rate(&cfg.clock).unwrap_or(cfg.model.clk_hz),
            ..cfg.model
        };
        let dma = AxiDma::new(name, model, a.irq(0), Box::new(SignalHandshake { ifaces }));
        Self {
            dma,
            clock: cfg.clock,
            trace: Vec::new(),
            trace_done: 0,
            trace_stopped: 0,
            last_done: 0,
        }
    }

    pub fn dma(&self) -> &AxiDma {
        &self.dma
    }
    /// Channel events so far (the first [`KEEP_EVENTS`]).
    pub fn trace(&self) -> &[DmaEvent] {
        &self.trace
    }

    /// Run the controller up to `ctx.now` through the board's master view.
    fn advance(&mut self, ctx: &mut DevCtx) {
        if let Some(mem) = ctx.master.as_deref_mut() {
            self.dma.advance(ctx.now, mem);
        }
        for e in self.dma.take_trace() {
            match e.kind {
                DmaEventKind::Done => {
                    self.trace_done += 1;
                    self.last_done = e.cycle;
                }
                DmaEventKind::Stopped(_) => self.trace_stopped += 1,
                _ => {}
            }
            if self.trace.len() < KEEP_EVENTS {
                self.trace.push(e);
            }
        }
    }

    /// Ask the board to call back at the next step, never before `not_before`.
    fn reschedule(&self, ctx: &mut DevCtx, not_before: u64) {
        if let Some(t) = self.dma.next_event() {
            ctx.events.schedule(t.max(not_before), 0);
        }
    }
}

impl Device for AxiDmaDevice {
    crate::persistent!();
    fn name(&self) -> String {
        self.dma.name().to_string()
    }
    fn size(&self) -> u64 {
        axi::SIZE
    }
    fn read(&mut self, ctx: &mut DevCtx, offset: u64, size: u8) -> Result<u64, BadAccess> {
        self.advance(ctx);
        let r = self.dma.read(offset, size, ctx.now);
        self.reschedule(ctx, ctx.now);
        r
    }
    fn write(
        &mut self,
        ctx: &mut DevCtx,
        offset: u64,
        size: u8,
        val: u64,
    ) -> Result<WriteEffect, BadAccess> {
        self.advance(ctx);
        let r = self.dma.write(offset, size, val, ctx.now);
        self.reschedule(ctx, ctx.now);
        r.map(|_| WriteEffect {
            irq_changed: true,
            stop: false,
        })
    }
    fn event(&mut self, ctx: &mut DevCtx, _token: u64) {
        self.advance(ctx);
        // One advance does a bounded number of steps: what is left comes
        // back strictly later, so the board's event loop always moves on.
        self.reschedule(ctx, ctx.now + 1);
    }
    fn inputs_changed(&mut self, ctx: &mut DevCtx) {
        // A request moved: the next step may be due earlier (even at the
        // cycle the request rose, before this call's `now`).
        self.reschedule(ctx, 0);
    }
    fn fdt_nodes(&self, g: &Grant, ctx: &FdtCtx) -> Vec<(Placement, FdtNode)> {
        let r = AxiDmaFdt {
            phandle: g.phandle(),
            interrupt_parent: ctx.interrupt_parent,
            irq: g.irqs.first().copied().unwrap_or(0),
            clock: ctx.phandle(&self.clock).unwrap_or(0),
        };
        // The model also writes a clock node of its own; on the board the
        // clock is the configured `fixed-clock` device.
        self.dma
            .fdt_nodes(g.base, &r)
            .into_iter()
            .filter(|(p, _)| *p == Placement::Soc)
            .collect()
    }
    fn stats(&self) -> Vec<Stat> {
        let mut v = self.dma.stats();
        let n = self.dma.name();
        v.push(Stat::new(
            format!("{n}.trace_done"),
            self.trace_done,
            "channel transfers completed, from the event trace",
        ));
        v.push(Stat::new(
            format!("{n}.trace_stopped"),
            self.trace_stopped,
            "channel transfers ended early (disable, abort, error)",
        ));
        v.push(Stat::new(
            format!("{n}.last_done_cycle"),
            self.last_done,
            "cycle of the latest completed transfer",
        ));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ParamValue;

    #[test]
    fn configuration_is_validated_naming_the_key() {
        let ok = DeviceConfig::new("dma0", "dw-axi-dmac")
            .with("clock", ParamValue::Str("c".into()))
            .with("channels", ParamValue::Int(2));
        let c = parse(&ok).unwrap();
        assert_eq!(
            (c.clock.as_str(), c.model.channels, c.model.block_size),
            ("c", 2, 4096)
        );
        let p = crate::resources::plug(&ok).ok().unwrap();
        assert!(p.want.master && p.want.listens && p.want.phandle && p.want.irqs.len() == 1);
        assert_eq!(p.want.refers_to, vec!["c".to_string()]);
        let e = |c: DeviceConfig| crate::resources::plug(&c).err().unwrap().to_string();
        assert_eq!(
            e(DeviceConfig::new("d", "dw-axi-dmac")),
            "key `clock`: is missing (name a `fixed-clock` device: the controller's core-clk and cfgr-clk)"
        );
        assert_eq!(
            e(ok.clone().with("channels", ParamValue::Int(9))),
            "key `channels`: 9 is out of range (1 to 8)"
        );
        assert_eq!(
            e(ok.with("burst", ParamValue::Int(9))),
            "key `burst`: is not a key of a `dw-axi-dmac` device"
        );
    }
}
