//! DesignWare APB GPIO (`snps,dw-apb-gpio`, Linux `gpio-dwapb`): one port
//! (A) of up to 32 lines with data and direction registers, the external
//! port register the driver reads line levels from, and port A's interrupt
//! block (enable, mask, level/edge type, polarity, both-edge, status, raw
//! status, end-of-interrupt) combined onto one interrupt line.
//!
//! Host side: every change of a level the GPIO drives on an output line is
//! recorded as a [`GpioChange`] (simulated cycle of the write, line, level);
//! input lines are driven by the host ([`DwApbGpio::set_input`]) or by other
//! devices through the board wires `NAME.inI`; output levels also appear on
//! the wires `NAME.outI`. Edges are counted on the wires, so a pulse shorter
//! than the time between two samples still latches an edge interrupt.
//!
//! Not modelled: debounce (the register is kept; inputs act at once), the
//! level-sensitive synchronisation delay (`LS_SYNC` is kept), ports B-D
//! (their registers read 0), hardware-controlled mode (`SWPORTA_CTL` reads 0).
//!
//! Configuration (`[board.NAME]` of a machine description):
//! `kind = "dw-apb-gpio"`, `ngpios = 1..32` (default 32).

use crate::fdt::{FdtCtx, FdtNode, Placement};
use crate::resources::{Attach, DeviceConfig, Kind, ParamError, Params, Plug, Want};
use crate::{BadAccess, DevCtx, Device, Grant, IrqLine, Signal, Stat, WriteEffect};

/// The configuration kind.
pub const KIND: Kind = Kind {
    name: "dw-apb-gpio",
    plug,
};

/// Register window (the databook's registers end at 0x78).
pub const SIZE: u64 = 0x100;
pub const MAX_LINES: u32 = 32;
/// Most output changes kept; later ones are counted only.
pub const MAX_CHANGES: usize = 1 << 20;

pub const SWPORTA_DR: u64 = 0x00;
pub const SWPORTA_DDR: u64 = 0x04;
pub const SWPORTA_CTL: u64 = 0x08;
pub const INTEN: u64 = 0x30;
pub const INTMASK: u64 = 0x34;
pub const INTTYPE_LEVEL: u64 = 0x38;
pub const INT_POLARITY: u64 = 0x3c;
pub const INTSTATUS: u64 = 0x40;
pub const RAW_INTSTATUS: u64 = 0x44;
pub const DEBOUNCE: u64 = 0x48;
pub const PORTA_EOI: u64 = 0x4c;
pub const EXT_PORTA: u64 = 0x50;
pub const LS_SYNC: u64 = 0x60;
pub const ID_CODE: u64 = 0x64;
pub const INT_BOTHEDGE: u64 = 0x68;
pub const VER_ID_CODE: u64 = 0x6c;
pub const CONFIG_REG2: u64 = 0x70;
pub const CONFIG_REG1: u64 = 0x74;
/// Component version "2.14*", as the databook encodes it.
const VERSION: u32 = 0x3231_342a;

/// One change of a level the GPIO drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GpioChange {
    /// Simulated cycle of the register write that changed it.
    pub cycle: u64,
    pub line: u8,
    pub level: bool,
}

#[derive(serde::Serialize, serde::Deserialize)]
pub struct DwApbGpio {
    name: String,
    ngpios: u32,
    /// Bits of the lines that exist.
    mask: u32,
    #[serde(skip)]
    irq: Box<dyn IrqLine>,
    irq_level: bool,
    dr: u32,
    ddr: u32,
    inten: u32,
    intmask: u32,
    /// 1: edge-sensitive, 0: level-sensitive.
    inttype_level: u32,
    /// 1: active high / rising edge.
    int_polarity: u32,
    int_bothedge: u32,
    debounce: u32,
    ls_sync: u32,
    /// Levels driven onto the pins from outside (host, other devices).
    input: u32,
    /// Pin levels (`EXT_PORTA`): outputs where DDR is set, inputs elsewhere.
    pad: u32,
    /// Latched edge interrupts, cleared by `PORTA_EOI`.
    edges: u32,
    /// Board wires (the board restores their levels and edge counts).
    #[serde(skip)]
    in_wires: Vec<Signal>,
    /// (rises, falls) of each input wire when last sampled.
    in_seen: Vec<(u64, u64)>,
    #[serde(skip)]
    out_wires: Vec<Signal>,
    changes: Vec<GpioChange>,
    stat_changes: u64,
    stat_dropped: u64,
    stat_irqs: u64,
    stat_edges: u64,
    stat_ignored: u64,
}

crate::persist_checked!(DwApbGpio, keep: [irq, in_wires, out_wires]);

fn plug(cfg: &DeviceConfig) -> Result<Plug, ParamError> {
    let mut p = Params::new(cfg);
    let ngpios = p.int("ngpios", MAX_LINES as i64, 1, MAX_LINES as i64)? as u32;
    p.finish()?;
    let name = cfg.name.clone();
    let want = Want::new(name.clone())
        .mmio(SIZE)
        .irqs(1)
        .phandle()
        .listens();
    Ok(Plug::new(want, move |a: &mut Attach| {
        Box::new(DwApbGpio::attach(&name, ngpios, a))
    }))
}

impl DwApbGpio {
    /// A GPIO with `ngpios` lines raising `irq`, sampling `inputs` and
    /// driving `outputs` (wire i for line i; missing wires are not connected).
    pub fn new(
        name: &str,
        ngpios: u32,
        irq: Box<dyn IrqLine>,
        inputs: Vec<Signal>,
        outputs: Vec<Signal>,
    ) -> Self {
        let ngpios = ngpios.clamp(1, MAX_LINES);
        let mask = if ngpios == 32 {
            u32::MAX
        } else {
            (1u32 << ngpios) - 1
        };
        let in_seen = inputs.iter().map(|w| (w.rises(), w.falls())).collect();
        let mut g = Self {
            name: name.to_string(),
            ngpios,
            mask,
            irq,
            irq_level: false,
            dr: 0,
            ddr: 0,
            inten: 0,
            intmask: 0,
            inttype_level: 0,
            int_polarity: 0,
            int_bothedge: 0,
            debounce: 0,
            ls_sync: 0,
            input: 0,
            pad: 0,
            edges: 0,
            in_wires: inputs,
            in_seen,
            out_wires: outputs,
            changes: Vec::new(),
            stat_changes: 0,
            stat_dropped: 0,
            stat_irqs: 0,
            stat_edges: 0,
            stat_ignored: 0,
        };
        g.input = g.wire_levels();
        g.pad = g.input & g.mask;
        g.update_irq();
        g
    }

    /// Built by the board: line i samples wire `NAME.inI` and drives `NAME.outI`.
    pub fn attach(name: &str, ngpios: u32, a: &mut Attach) -> Self {
        let n = ngpios.clamp(1, MAX_LINES);
        let inputs = (0..n).map(|i| a.signal(&format!("{name}.in{i}"))).collect();
        let outputs = (0..n)
            .map(|i| a.signal(&format!("{name}.out{i}")))
            .collect();
        Self::new(name, n, a.irq(0), inputs, outputs)
    }

    pub fn ngpios(&self) -> u32 {
        self.ngpios
    }
    /// Every change of a driven level so far, in order.
    pub fn changes(&self) -> &[GpioChange] {
        &self.changes
    }
    /// Pin levels as `EXT_PORTA` shows them.
    pub fn levels(&self) -> u32 {
        self.pad
    }
    /// Level of the interrupt output.
    pub fn irq_level(&self) -> bool {
        self.irq_level
    }

    /// A saved GPIO belongs here: same name and lines.
    fn fits(&self, saved: &Self) -> Result<(), String> {
        crate::same(
            "GPIO",
            &(&saved.name, saved.ngpios),
            &(&self.name, self.ngpios),
        )?;
        if saved.mask != self.mask || saved.in_seen.len() != self.in_wires.len() {
            return Err(format!(
                "the snapshot's GPIO `{}` has mask {:#x} and {} input wires; this machine's {:#x} and {}",
                saved.name,
                saved.mask,
                saved.in_seen.len(),
                self.mask,
                self.in_wires.len()
            ));
        }
        Ok(())
    }

    /// The host drives input `line` to `level` (ignored for lines that do
    /// not exist). `now` is the cycle it happens at.
    pub fn set_input(&mut self, line: u32, level: bool, now: u64) {
        if line >= self.ngpios {
            return;
        }
        let bit = 1u32 << line;
        let input = if level {
            self.input | bit
        } else {
            self.input & !bit
        };
        self.apply(input, 0, 0, now);
    }

    fn wire_levels(&self) -> u32 {
        self.in_wires
            .iter()
            .enumerate()
            .fold(0, |acc, (i, w)| acc | ((w.is_high() as u32) << i))
    }

    fn raw_status(&self) -> u32 {
        let active_level = !(self.pad ^ self.int_polarity) & !self.inttype_level;
        self.inten & !self.ddr & self.mask & ((active_level) | (self.edges & self.inttype_level))
    }

    fn status(&self) -> u32 {
        self.raw_status() & !self.intmask
    }

    fn update_irq(&mut self) {
        let level = self.status() != 0;
        if level && !self.irq_level {
            self.stat_irqs += 1;
        }
        self.irq_level = level;
        self.irq.set_level(level);
    }

    /// Latch edge interrupts for `rising`/`falling` transitions of input pins.
    fn latch(&mut self, rising: u32, falling: u32) {
        let sensitive = self.inten & self.inttype_level & !self.ddr & self.mask;
        let both = self.int_bothedge;
        let want = (rising & (self.int_polarity | both)) | (falling & (!self.int_polarity | both));
        let new = want & sensitive & !self.edges;
        self.stat_edges += new.count_ones() as u64;
        self.edges |= want & sensitive;
    }

    /// Recompute the pins after `input` (and the registers) changed; extra
    /// edges seen on wires come in `rising`/`falling`. Records output changes.
    fn apply(&mut self, input: u32, rising: u32, falling: u32, now: u64) {
        let old_pad = self.pad;
        self.input = input & self.mask;
        self.pad = ((self.dr & self.ddr) | (self.input & !self.ddr)) & self.mask;
        let changed = old_pad ^ self.pad;
        self.latch((changed & self.pad) | rising, (changed & old_pad) | falling);
        // Record levels the GPIO drives: lines that are outputs now and whose level moved.
        let mut rec = changed & self.ddr;
        while rec != 0 {
            let line = rec.trailing_zeros();
            rec &= rec - 1;
            let level = self.pad & (1 << line) != 0;
            self.stat_changes += 1;
            if self.changes.len() < MAX_CHANGES {
                self.changes.push(GpioChange {
                    cycle: now,
                    line: line as u8,
                    level,
                });
            } else {
                self.stat_dropped += 1;
            }
        }
        // Output wires follow the driven level (low when the line is an input).
        let driven = self.dr & self.ddr;
        for (i, w) in self.out_wires.iter().enumerate() {
            hs_bus::GpioLine::set_level(w, driven & (1 << i) != 0);
        }
        // Interrupt configuration only exists for inputs: a line turned to an
        // output loses its latched edge.
        self.edges &= self.inten & self.inttype_level & !self.ddr;
        self.update_irq();
    }

    fn reg(&self, offset: u64) -> u32 {
        match offset {
            SWPORTA_DR => self.dr,
            SWPORTA_DDR => self.ddr,
            INTEN => self.inten,
            INTMASK => self.intmask,
            INTTYPE_LEVEL => self.inttype_level,
            INT_POLARITY => self.int_polarity,
            INTSTATUS => self.status(),
            RAW_INTSTATUS => self.raw_status(),
            DEBOUNCE => self.debounce,
            EXT_PORTA => self.pad,
            LS_SYNC => self.ls_sync,
            INT_BOTHEDGE => self.int_bothedge,
            VER_ID_CODE => VERSION,
            CONFIG_REG2 => self.ngpios - 1,
            // 32-bit APB, one port, single-control ports, port A interrupts,
            // debounce, encoded parameters, ID, 32-bit ID, both-edge type.
            CONFIG_REG1 => {
                0x2 | 0xf << 4 | 1 << 12 | 1 << 13 | 1 << 14 | 1 << 15 | 31 << 16 | 1 << 21
            }
            _ => 0, // SWPORTA_CTL, ports B-D, EOI (write-only), ID_CODE, reserved
        }
    }
}

impl Device for DwApbGpio {
    crate::persistent!();
    fn name(&self) -> String {
        self.name.clone()
    }
    fn size(&self) -> u64 {
        SIZE
    }

    fn read(&mut self, _ctx: &mut DevCtx, offset: u64, size: u8) -> Result<u64, BadAccess> {
        if size != 4 || !offset.is_multiple_of(4) || offset >= SIZE {
            return Err(BadAccess);
        }
        Ok(self.reg(offset) as u64)
    }

    fn write(
        &mut self,
        ctx: &mut DevCtx,
        offset: u64,
        size: u8,
        val: u64,
    ) -> Result<WriteEffect, BadAccess> {
        if size != 4 || !offset.is_multiple_of(4) || offset >= SIZE {
            return Err(BadAccess);
        }
        let v = val as u32 & self.mask;
        match offset {
            SWPORTA_DR => self.dr = v,
            SWPORTA_DDR => self.ddr = v,
            INTEN => self.inten = v,
            INTMASK => self.intmask = v,
            INTTYPE_LEVEL => self.inttype_level = v,
            INT_POLARITY => self.int_polarity = v,
            INT_BOTHEDGE => self.int_bothedge = v,
            DEBOUNCE => self.debounce = v,
            PORTA_EOI => self.edges &= !v,
            LS_SYNC => self.ls_sync = v & 1,
            _ => self.stat_ignored += 1,
        }
        self.apply(self.input, 0, 0, ctx.now);
        Ok(WriteEffect {
            irq_changed: true,
            stop: false,
        })
    }

    fn inputs_changed(&mut self, ctx: &mut DevCtx) {
        let (mut rising, mut falling) = (0u32, 0u32);
        let mut input = self.input;
        let mut moved = false;
        for (i, w) in self.in_wires.iter().enumerate() {
            let seen = (w.rises(), w.falls());
            if seen == self.in_seen[i] {
                continue;
            }
            moved = true;
            let bit = 1u32 << i;
            if seen.0 != self.in_seen[i].0 {
                rising |= bit;
            }
            if seen.1 != self.in_seen[i].1 {
                falling |= bit;
            }
            input = if w.is_high() {
                input | bit
            } else {
                input & !bit
            };
            self.in_seen[i] = seen;
        }
        if moved {
            self.apply(input, rising, falling, ctx.now);
        }
    }

    fn fdt_nodes(&self, g: &Grant, ctx: &FdtCtx) -> Vec<(Placement, FdtNode)> {
        let mut port = FdtNode::new("gpio-port@0")
            .str("compatible", "snps,dw-apb-gpio-port")
            .empty("gpio-controller")
            .u32("#gpio-cells", 2)
            .u32("ngpios", self.ngpios)
            .u32("reg", 0);
        if !g.irqs.is_empty() {
            port = port
                .empty("interrupt-controller")
                .u32("#interrupt-cells", 2)
                .u32("interrupt-parent", ctx.interrupt_parent)
                .u32s("interrupts", g.irqs.clone());
        }
        // The port is both the gpio-controller and the interrupt-controller
        // that consumers (`gpios`, `interrupt-parent`) refer to: the
        // device's phandle goes there.
        if let Some(p) = g.phandle {
            port = port.u32("phandle", p);
        }
        let node = FdtNode::new(g.node_name("gpio"))
            .str("compatible", "snps,dw-apb-gpio")
            .reg(g.base, g.size)
            .u32("#address-cells", 1)
            .u32("#size-cells", 0);
        vec![(Placement::Soc, node.child(port))]
    }

    fn stats(&self) -> Vec<Stat> {
        let n = &self.name;
        vec![
            Stat::new(
                format!("{n}.output_changes"),
                self.stat_changes,
                "changes of a level driven on an output line",
            ),
            Stat::new(
                format!("{n}.output_changes_dropped"),
                self.stat_dropped,
                "output changes beyond the record limit",
            ),
            Stat::new(
                format!("{n}.edges"),
                self.stat_edges,
                "edge interrupts latched",
            ),
            Stat::new(
                format!("{n}.irqs"),
                self.stat_irqs,
                "rising edges of the interrupt line",
            ),
            Stat::new(
                format!("{n}.ignored_writes"),
                self.stat_ignored,
                "writes to read-only or absent registers",
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoScheduler;

    fn gpio(n: u32) -> (DwApbGpio, Signal, Vec<Signal>, Vec<Signal>) {
        let irq = Signal::new();
        let ins: Vec<Signal> = (0..n).map(|_| Signal::new()).collect();
        let outs: Vec<Signal> = (0..n).map(|_| Signal::new()).collect();
        (
            DwApbGpio::new("gpio0", n, Box::new(irq.clone()), ins.clone(), outs.clone()),
            irq,
            ins,
            outs,
        )
    }
    fn wr(g: &mut DwApbGpio, now: u64, off: u64, v: u32) {
        g.write(&mut DevCtx::new(0, now, &mut NoScheduler), off, 4, v as u64)
            .unwrap();
    }
    fn rd(g: &mut DwApbGpio, off: u64) -> u32 {
        g.read(&mut DevCtx::new(0, 0, &mut NoScheduler), off, 4)
            .unwrap() as u32
    }
    fn drive(g: &mut DwApbGpio, w: &Signal, level: bool, now: u64) {
        hs_bus::GpioLine::set_level(w, level);
        g.inputs_changed(&mut DevCtx::new(0, now, &mut NoScheduler));
    }

    #[test]
    fn outputs_are_recorded_with_their_cycle_and_read_back_on_ext_port() {
        let (mut g, _, _, outs) = gpio(8);
        wr(&mut g, 10, SWPORTA_DR, 0b101); // still inputs: nothing driven
        assert!(g.changes().is_empty());
        wr(&mut g, 20, SWPORTA_DDR, 0b011); // lines 0 and 1 drive 1 and 0
        wr(&mut g, 30, SWPORTA_DR, 0b010);
        wr(&mut g, 40, SWPORTA_DR, 0b010); // no change
        assert_eq!(
            g.changes(),
            &[
                GpioChange {
                    cycle: 20,
                    line: 0,
                    level: true
                },
                GpioChange {
                    cycle: 30,
                    line: 0,
                    level: false
                },
                GpioChange {
                    cycle: 30,
                    line: 1,
                    level: true
                },
            ]
        );
        assert_eq!(rd(&mut g, EXT_PORTA), 0b010);
        assert_eq!(rd(&mut g, SWPORTA_DR), 0b010);
        assert!(!outs[0].is_high() && outs[1].is_high() && !outs[2].is_high());
        // Bits above ngpios do not exist.
        wr(&mut g, 50, SWPORTA_DDR, 0xffff_ffff);
        assert_eq!(rd(&mut g, SWPORTA_DDR), 0xff);
        assert_eq!(rd(&mut g, CONFIG_REG2), 7);
    }

    #[test]
    fn level_interrupts_follow_the_pin_polarity_and_mask() {
        let (mut g, irq, ins, _) = gpio(32);
        wr(&mut g, 0, INT_POLARITY, 1 << 3); // line 3 active high, line 4 active low
        wr(&mut g, 0, INTEN, (1 << 3) | (1 << 4));
        assert_eq!(rd(&mut g, RAW_INTSTATUS), 1 << 4, "line 4 is low: active");
        assert!(irq.is_high());
        drive(&mut g, &ins[4], true, 5);
        assert_eq!(rd(&mut g, INTSTATUS), 0);
        assert!(!irq.is_high());
        g.set_input(3, true, 6);
        assert_eq!(rd(&mut g, INTSTATUS), 1 << 3);
        wr(&mut g, 7, INTMASK, 1 << 3);
        assert_eq!(
            (rd(&mut g, INTSTATUS), rd(&mut g, RAW_INTSTATUS)),
            (0, 1 << 3),
            "masked: raw only"
        );
        assert!(!irq.is_high());
        wr(&mut g, 8, INTMASK, 0);
        wr(&mut g, 8, PORTA_EOI, 1 << 3); // EOI does not clear a level interrupt
        assert!(irq.is_high());
        wr(&mut g, 9, SWPORTA_DDR, 1 << 3); // an output takes no interrupts
        assert!(!irq.is_high());
    }

    #[test]
    fn edge_interrupts_latch_until_eoi_and_catch_short_pulses() {
        let (mut g, irq, ins, _) = gpio(32);
        wr(&mut g, 0, INTTYPE_LEVEL, 0b111);
        wr(&mut g, 0, INT_POLARITY, 0b001); // line 0 rising, line 1 falling
        wr(&mut g, 0, INT_BOTHEDGE, 0b100); // line 2 both
        wr(&mut g, 0, INTEN, 0b111);
        assert!(!irq.is_high(), "no edge yet");
        // A pulse on line 0 between two samples still latches.
        hs_bus::GpioLine::set_level(&ins[0], true);
        hs_bus::GpioLine::set_level(&ins[0], false);
        g.inputs_changed(&mut DevCtx::new(0, 3, &mut NoScheduler));
        assert_eq!(rd(&mut g, INTSTATUS), 0b001);
        assert_eq!(rd(&mut g, EXT_PORTA), 0, "the level is back low");
        wr(&mut g, 4, PORTA_EOI, 0b001);
        assert!(!irq.is_high());
        drive(&mut g, &ins[1], true, 5); // rising on a falling-edge line: nothing
        assert_eq!(rd(&mut g, INTSTATUS), 0);
        drive(&mut g, &ins[1], false, 6);
        assert_eq!(rd(&mut g, INTSTATUS), 0b010);
        drive(&mut g, &ins[2], true, 7);
        drive(&mut g, &ins[2], false, 8);
        assert_eq!(rd(&mut g, INTSTATUS), 0b110);
        wr(&mut g, 9, PORTA_EOI, 0b110);
        assert_eq!(rd(&mut g, INTSTATUS), 0);
        // Disabling a line drops its latched edge.
        drive(&mut g, &ins[0], true, 10);
        assert!(irq.is_high());
        wr(&mut g, 11, INTEN, 0b110);
        wr(&mut g, 11, INTEN, 0b111);
        assert!(!irq.is_high());
    }

    #[test]
    fn refuses_narrow_accesses_and_keeps_driver_visible_constants() {
        let (mut g, _, _, _) = gpio(32);
        let mut s = NoScheduler;
        let mut c = DevCtx::new(0, 0, &mut s);
        assert_eq!(g.read(&mut c, 0, 1), Err(BadAccess));
        assert_eq!(g.read(&mut c, 2, 4), Err(BadAccess));
        assert_eq!(g.write(&mut c, SIZE, 4, 0), Err(BadAccess));
        assert_eq!(g.read(&mut c, VER_ID_CODE, 4), Ok(0x3231_342a));
        assert_eq!(g.read(&mut c, CONFIG_REG2, 4), Ok(31));
        g.write(&mut c, EXT_PORTA, 4, 0xffff).unwrap();
        assert_eq!(
            g.read(&mut c, EXT_PORTA, 4),
            Ok(0),
            "EXT_PORTA is read-only"
        );
        assert_eq!(g.stats()[4].value, 1);
    }

    #[test]
    fn device_tree_has_the_port_child_the_driver_reads() {
        let (g, _, _, _) = gpio(8);
        let grant = Grant {
            name: "gpio0".into(),
            base: 0x400_0000,
            size: SIZE,
            irqs: vec![64],
            phandle: Some(9),
        };
        let ctx = FdtCtx {
            interrupt_parent: 3,
            ..FdtCtx::default()
        };
        let nodes = g.fdt_nodes(&grant, &ctx);
        let (place, n) = &nodes[0];
        assert_eq!((*place, n.name.as_str()), (Placement::Soc, "gpio@4000000"));
        assert_eq!(
            n.get("compatible"),
            Some(&crate::Prop::Str("snps,dw-apb-gpio".into()))
        );
        let port = &n.children[0];
        assert_eq!(
            port.get("compatible"),
            Some(&crate::Prop::Str("snps,dw-apb-gpio-port".into()))
        );
        assert_eq!(port.get("ngpios"), Some(&crate::Prop::U32(8)));
        assert_eq!(port.get("interrupts"), Some(&crate::Prop::U32s(vec![64])));
        assert_eq!(port.get("interrupt-parent"), Some(&crate::Prop::U32(3)));
        assert!(
            port.get("gpio-controller").is_some() && port.get("interrupt-controller").is_some()
        );
        // Consumers refer to the port: the phandle is there, not on the parent.
        assert_eq!(port.get("phandle"), Some(&crate::Prop::U32(9)));
        assert_eq!(n.get("phandle"), None);
    }

    /// Every register, the output record, the counters and the interrupt.
    fn seen(g: &mut DwApbGpio) -> (Vec<u32>, Vec<GpioChange>, Vec<Stat>, bool) {
        let regs = (0..SIZE).step_by(4).map(|o| rd(g, o)).collect();
        (regs, g.changes().to_vec(), g.stats(), g.irq_level())
    }

    /// What the guest and the wires do after the snapshot.
    fn go_on(g: &mut DwApbGpio, ins: &[Signal]) {
        // The pulse on line 3 from before the snapshot is sampled now.
        g.inputs_changed(&mut DevCtx::new(0, 100, &mut NoScheduler));
        wr(g, 110, SWPORTA_DR, 0b10);
        drive(g, &ins[2], false, 120);
        wr(g, 130, PORTA_EOI, 0b0100);
        drive(g, &ins[2], true, 140);
        g.set_input(5, true, 150);
    }

    #[test]
    fn a_restored_gpio_reads_and_goes_on_as_the_saved_one() {
        use crate::Persist;
        let (mut g, irq, ins, outs) = gpio(8);
        wr(&mut g, 10, SWPORTA_DDR, 0b0011);
        wr(&mut g, 20, SWPORTA_DR, 0b01);
        wr(&mut g, 21, INTTYPE_LEVEL, 0b1100);
        wr(&mut g, 22, INT_POLARITY, 0b0100);
        wr(&mut g, 23, INT_BOTHEDGE, 0b1000);
        wr(&mut g, 24, INTEN, 0b11_1100);
        wr(&mut g, 25, DEBOUNCE, 0b1);
        wr(&mut g, 26, LS_SYNC, 1);
        wr(&mut g, 27, INTMASK, 0b10_0000);
        drive(&mut g, &ins[2], true, 30); // latches line 2's rising edge
        g.set_input(4, true, 40);
        // A pulse on line 3 the GPIO has not sampled yet: only its wire knows.
        hs_bus::GpioLine::set_level(&ins[3], true);
        hs_bus::GpioLine::set_level(&ins[3], false);
        let saved = g.save().unwrap();
        let before = seen(&mut g);
        assert_ne!(before.0[(INTSTATUS / 4) as usize], 0);

        let (mut h, irq2, ins2, outs2) = gpio(8);
        // The board puts its wires back; the device its own state.
        let mine = ins.iter().chain(&outs).chain([&irq]);
        for (a, b) in mine.zip(ins2.iter().chain(&outs2).chain([&irq2])) {
            b.restore(a.save());
        }
        h.restore(&saved).unwrap();
        assert_eq!(seen(&mut h), before);
        assert_eq!(h.save().unwrap(), saved);

        go_on(&mut g, &ins);
        go_on(&mut h, &ins2);
        let after = seen(&mut g);
        assert_ne!(after, before);
        assert_eq!(seen(&mut h), after);
        assert_eq!(
            (irq.is_high(), outs[1].is_high()),
            (irq2.is_high(), outs2[1].is_high())
        );
    }

    #[test]
    fn a_gpio_refuses_garbage_and_another_devices_state() {
        use crate::Persist;
        let (mut g, _, _, _) = gpio(8);
        let (wide, _, _, _) = gpio(16);
        let e = g.restore(&wide.save().unwrap()).unwrap_err();
        assert!(e.contains("16"), "{e}");
        let e = g
            .restore(&crate::Syscon::new().save().unwrap())
            .unwrap_err();
        assert!(e.contains("missing field"), "{e}");
        assert!(g.restore(b"\xff\x00").is_err());
        assert!(g.restore(b"").is_err());
        wr(&mut g, 0, SWPORTA_DDR, 1);
        assert_eq!(rd(&mut g, SWPORTA_DDR), 1, "still working after refusals");
    }

    #[test]
    fn configuration_is_validated() {
        use crate::ParamValue;
        let cfg = DeviceConfig::new("gpio0", "dw-apb-gpio").with("ngpios", ParamValue::Int(33));
        assert_eq!(
            crate::resources::plug(&cfg).err().unwrap().to_string(),
            "key `ngpios`: 33 is out of range (1 to 32)"
        );
        let cfg = DeviceConfig::new("gpio0", "dw-apb-gpio").with("lines", ParamValue::Int(3));
        assert_eq!(
            crate::resources::plug(&cfg).err().unwrap().to_string(),
            "key `lines`: is not a key of a `dw-apb-gpio` device"
        );
        let p = crate::resources::plug(&DeviceConfig::new("g", "dw-apb-gpio"))
            .ok()
            .unwrap();
        assert_eq!(
            (
                p.want.name.as_str(),
                p.want.irqs.len(),
                p.want.phandle,
                p.want.listens
            ),
            ("g", 1, true, true)
        );
    }
}
