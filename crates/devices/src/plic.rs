//! Platform-level interrupt controller (SiFive PLIC, `riscv,plic0`), laid
//! out as QEMU's `virt`: 96 level-triggered sources, two contexts per hart
//! (context 2h = hart h M-mode, 2h+1 = hart h S-mode), 3 priority bits.
//!
//! A source is pending while its line is high and it is not claimed; a
//! context's output is raised when an enabled pending source has a priority
//! above the context's threshold. Routing therefore follows the enable bits
//! only, which is what Linux's `smp_affinity` writes change.

use crate::fdt::{FdtCtx, FdtNode, Placement};
use crate::{BadAccess, DevCtx, Device, Grant, Note, Stat, WireIrq, WriteEffect};

/// Highest source number (sources are 1..=NUM_SOURCES; 0 means "none").
pub const NUM_SOURCES: u32 = 96;
const WORDS: usize = (NUM_SOURCES as usize + 1).div_ceil(32);
pub const PRIORITY_MASK: u32 = 7;
pub const PRIORITY_BASE: u64 = 0x00_0000;
pub const PENDING_BASE: u64 = 0x00_1000;
pub const ENABLE_BASE: u64 = 0x00_2000;
pub const ENABLE_STRIDE: u64 = 0x80;
pub const CONTEXT_BASE: u64 = 0x20_0000;
pub const CONTEXT_STRIDE: u64 = 0x1000;
pub const SIZE: u64 = 0x60_0000;
/// Contexts that fit in the window.
pub const MAX_CONTEXTS: usize = ((SIZE - CONTEXT_BASE) / CONTEXT_STRIDE) as usize;

type Bits = [u32; WORDS];

fn bit(bits: &Bits, src: u32) -> bool {
    bits[(src / 32) as usize] & (1 << (src % 32)) != 0
}
fn set_bit(bits: &mut Bits, src: u32, on: bool) {
    let w = &mut bits[(src / 32) as usize];
    if on {
        *w |= 1 << (src % 32)
    } else {
        *w &= !(1 << (src % 32))
    }
}
/// Bits that name real sources (1..=NUM_SOURCES) in word `w`.
fn valid_mask(w: usize) -> u32 {
    let mut m = 0u32;
    for b in 0..32u32 {
        let src = w as u32 * 32 + b;
        if (1..=NUM_SOURCES).contains(&src) {
            m |= 1 << b;
        }
    }
    m
}

#[derive(serde::Serialize, serde::Deserialize)]
pub struct Plic {
    harts: usize,
    priority: Vec<u32>,
    level: Bits,
    claimed: Bits,
    enable: Vec<Bits>,
    threshold: Vec<u32>,
    #[serde(skip)]
    lines: Vec<(u32, WireIrq)>,
    output: Vec<bool>,
    stat_claims: Vec<u64>,
    stat_empty_claims: Vec<u64>,
    stat_source_claims: Vec<u64>,
    stat_completes: u64,
}

/// The PLIC's registers, and the level of every device line into it (the
/// wires are the board's; their levels are state).
impl crate::Persist for Plic {
    fn save(&self) -> Result<Vec<u8>, String> {
        let levels: Vec<bool> = self.lines.iter().map(|(_, w)| w.is_high()).collect();
        hs_snapshot::state::encode(&(self, levels))
    }
    fn restore(&mut self, data: &[u8]) -> Result<(), String> {
        let (mut fresh, levels): (Plic, Vec<bool>) = hs_snapshot::state::decode(data)?;
        let ctxs = self.threshold.len();
        let lens_ok = fresh.priority.len() == self.priority.len()
            && fresh.enable.len() == ctxs
            && fresh.threshold.len() == ctxs
            && fresh.output.len() == ctxs
            && fresh.stat_claims.len() == ctxs
            && fresh.stat_empty_claims.len() == ctxs
            && fresh.stat_source_claims.len() == self.stat_source_claims.len();
        if levels.len() != self.lines.len() || fresh.harts != self.harts || !lens_ok {
            return Err(format!(
                "the snapshot's PLIC has {} lines for {} harts; this machine's has {} for {}",
                levels.len(),
                fresh.harts,
                self.lines.len(),
                self.harts
            ));
        }
        for ((_, wire), high) in self.lines.iter().zip(levels) {
            hs_bus::IrqLine::set_level(wire, high);
        }
        std::mem::swap(&mut fresh.lines, &mut self.lines);
        *self = fresh;
        Ok(())
    }
}

impl Plic {
    /// A PLIC for `harts` harts (two contexts each), clamped to what the
    /// register window can address.
    pub fn new(harts: usize) -> Self {
        let harts = harts.min(MAX_CONTEXTS / 2);
        let ctxs = harts * 2;
        Self {
            harts,
            priority: vec![0; NUM_SOURCES as usize + 1],
            level: [0; WORDS],
            claimed: [0; WORDS],
            enable: vec![[0; WORDS]; ctxs],
            threshold: vec![0; ctxs],
            lines: Vec::new(),
            output: vec![false; ctxs],
            stat_claims: vec![0; ctxs],
            stat_empty_claims: vec![0; ctxs],
            stat_source_claims: vec![0; NUM_SOURCES as usize + 1],
            stat_completes: 0,
        }
    }

    /// A new interrupt line feeding `source` (1..=96). Several lines on one
    /// source are OR-ed. `None` for a source number the PLIC does not have.
    pub fn connect(&mut self, source: u32) -> Option<WireIrq> {
        if !(1..=NUM_SOURCES).contains(&source) {
            return None;
        }
        let wire = WireIrq::new();
        self.lines.push((source, wire.clone()));
        Some(wire)
    }

    /// Sample the input lines and recompute every context's output.
    pub fn update(&mut self) {
        let mut level = [0u32; WORDS];
        for (src, wire) in &self.lines {
            if wire.is_high() {
                set_bit(&mut level, *src, true);
            }
        }
        self.level = level;
        for ctx in 0..self.output.len() {
            self.output[ctx] = self.best(ctx).is_some();
        }
    }

    /// Machine external interrupt (context 2h) of `hart`, as of the last update.
    pub fn meip(&self, hart: usize) -> bool {
        self.output.get(2 * hart).copied().unwrap_or(false)
    }
    /// Supervisor external interrupt (context 2h+1) of `hart`.
    pub fn seip(&self, hart: usize) -> bool {
        self.output.get(2 * hart + 1).copied().unwrap_or(false)
    }

    fn pending_word(&self, w: usize) -> u32 {
        self.level[w] & !self.claimed[w] & valid_mask(w)
    }

    /// Highest-priority (lowest id on ties) claimable source for `ctx`.
    fn best(&self, ctx: usize) -> Option<u32> {
        let mut best: Option<(u32, u32)> = None;
        for w in 0..WORDS {
            let mut cand = self.pending_word(w) & self.enable[ctx][w];
            while cand != 0 {
                let src = w as u32 * 32 + cand.trailing_zeros();
                cand &= cand - 1;
                let prio = self.priority[src as usize];
                if prio > self.threshold[ctx] && !matches!(best, Some((_, p)) if prio <= p) {
                    best = Some((src, prio));
                }
            }
        }
        best.map(|(src, _)| src)
    }

    fn claim(&mut self, ctx: usize) -> u32 {
        self.update();
        match self.best(ctx) {
            Some(src) => {
                set_bit(&mut self.claimed, src, true);
                self.stat_claims[ctx] += 1;
                self.stat_source_claims[src as usize] += 1;
                self.update();
                src
            }
            None => {
                self.stat_empty_claims[ctx] += 1;
                0
            }
        }
    }

    fn complete(&mut self, src: u32) {
        if (1..=NUM_SOURCES).contains(&src) && bit(&self.claimed, src) {
            set_bit(&mut self.claimed, src, false);
            self.stat_completes += 1;
        }
        self.update();
    }

    fn contexts(&self) -> usize {
        self.output.len()
    }
}

impl Device for Plic {
    crate::persistent!();
    fn name(&self) -> String {
        "plic".into()
    }
    fn size(&self) -> u64 {
        SIZE
    }

    fn read(&mut self, dctx: &mut DevCtx, offset: u64, size: u8) -> Result<u64, BadAccess> {
        if size != 4 || offset & 3 != 0 {
            return Err(BadAccess);
        }
        let v = if offset < PENDING_BASE {
            self.priority
                .get((offset / 4) as usize)
                .copied()
                .unwrap_or(0)
        } else if offset < ENABLE_BASE {
            let w = ((offset - PENDING_BASE) / 4) as usize;
            if w < WORDS {
                self.update();
                self.pending_word(w)
            } else {
                0
            }
        } else if offset < CONTEXT_BASE {
            let ctx = ((offset - ENABLE_BASE) / ENABLE_STRIDE) as usize;
            let w = ((offset - ENABLE_BASE) % ENABLE_STRIDE / 4) as usize;
            match self.enable.get(ctx) {
                Some(bits) if w < WORDS => bits[w],
                _ => 0,
            }
        } else {
            let ctx = ((offset - CONTEXT_BASE) / CONTEXT_STRIDE) as usize;
            match (offset - CONTEXT_BASE) % CONTEXT_STRIDE {
                0 if ctx < self.contexts() => self.threshold[ctx],
                4 if ctx < self.contexts() => {
                    let source = self.claim(ctx);
                    if source != 0 {
                        dctx.note(Note::Claim { source });
                    }
                    source
                }
                _ => 0,
            }
        };
        Ok(v as u64)
    }

    fn write(
        &mut self,
        _ctx: &mut DevCtx,
        offset: u64,
        size: u8,
        val: u64,
    ) -> Result<WriteEffect, BadAccess> {
        if size != 4 || offset & 3 != 0 {
            return Err(BadAccess);
        }
        let val = val as u32;
        if offset < PENDING_BASE {
            let src = (offset / 4) as usize;
            if (1..=NUM_SOURCES as usize).contains(&src) {
                self.priority[src] = val & PRIORITY_MASK;
            }
        } else if offset < ENABLE_BASE {
            // Pending bits are read-only.
        } else if offset < CONTEXT_BASE {
            let ctx = ((offset - ENABLE_BASE) / ENABLE_STRIDE) as usize;
            let w = ((offset - ENABLE_BASE) % ENABLE_STRIDE / 4) as usize;
            if let Some(bits) = self.enable.get_mut(ctx) {
                if w < WORDS {
                    bits[w] = val & valid_mask(w);
                }
            }
        } else {
            let ctx = ((offset - CONTEXT_BASE) / CONTEXT_STRIDE) as usize;
            match (offset - CONTEXT_BASE) % CONTEXT_STRIDE {
                0 if ctx < self.contexts() => self.threshold[ctx] = val & PRIORITY_MASK,
                4 if ctx < self.contexts() => self.complete(val),
                _ => {}
            }
        }
        self.update();
        Ok(WriteEffect {
            irq_changed: true,
            stop: false,
        })
    }

    fn fdt_nodes(&self, g: &Grant, ctx: &FdtCtx) -> Vec<(Placement, FdtNode)> {
        // Per hart: M-mode external (11) then S-mode external (9), matching contexts 2h, 2h+1.
        let ext = ctx
            .cpu_intc
            .iter()
            .take(self.harts)
            .flat_map(|&ph| [ph, 11, ph, 9])
            .collect();
        let node = FdtNode::new(g.node_name("plic"))
            .u32("phandle", g.phandle())
            .u32("riscv,ndev", NUM_SOURCES)
            .reg(g.base, g.size)
            .u32s("interrupts-extended", ext)
            .empty("interrupt-controller")
            .strs("compatible", &["sifive,plic-1.0.0", "riscv,plic0"])
            .u32("#address-cells", 0)
            .u32("#interrupt-cells", 1);
        vec![(Placement::Soc, node)]
    }

    fn stats(&self) -> Vec<Stat> {
        let mut v = vec![Stat::new(
            "plic.completes",
            self.stat_completes,
            "claims completed",
        )];
        for ctx in 0..self.contexts() {
            let (hart, mode) = (ctx / 2, if ctx % 2 == 0 { 'm' } else { 's' });
            v.push(Stat::new(
                format!("plic.hart{hart}.{mode}.claims"),
                self.stat_claims[ctx],
                "interrupts claimed by this context",
            ));
            v.push(Stat::new(
                format!("plic.hart{hart}.{mode}.empty_claims"),
                self.stat_empty_claims[ctx],
                "claims that found nothing pending",
            ));
        }
        for (src, &n) in self.stat_source_claims.iter().enumerate() {
            if n > 0 {
                v.push(Stat::new(
                    format!("plic.source{src}.claims"),
                    n,
                    "times this source was claimed",
                ));
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{IrqLine, NoScheduler};

    fn rd(p: &mut Plic, off: u64) -> u32 {
        p.read(&mut DevCtx::new(0, 0, &mut NoScheduler), off, 4)
            .unwrap() as u32
    }
    fn wr(p: &mut Plic, off: u64, v: u32) {
        p.write(&mut DevCtx::new(0, 0, &mut NoScheduler), off, 4, v as u64)
            .unwrap();
    }
    fn enable(ctx: u64) -> u64 {
        ENABLE_BASE + ENABLE_STRIDE * ctx
    }
    fn claim(ctx: u64) -> u64 {
        CONTEXT_BASE + CONTEXT_STRIDE * ctx + 4
    }

    #[test]
    fn routing_follows_enables() {
        let mut p = Plic::new(2);
        let uart = p.connect(10).unwrap();
        wr(&mut p, 4 * 10, 1);
        wr(&mut p, enable(3), 1 << 10); // hart 1, S-mode
        uart.set_level(true);
        p.update();
        assert!(p.seip(1) && !p.seip(0) && !p.meip(0) && !p.meip(1));
        // Move the interrupt to hart 0 as smp_affinity would.
        wr(&mut p, enable(3), 0);
        wr(&mut p, enable(1), 1 << 10);
        assert!(p.seip(0) && !p.seip(1));
        assert_eq!(rd(&mut p, claim(3)), 0, "hart 1 no longer gets it");
        assert_eq!(rd(&mut p, claim(1)), 10);
    }

    #[test]
    fn claim_complete_level_semantics() {
        let mut p = Plic::new(1);
        let a = p.connect(5).unwrap();
        let b = p.connect(7).unwrap();
        wr(&mut p, 4 * 5, 1);
        wr(&mut p, 4 * 7, 3);
        wr(&mut p, enable(1), (1 << 5) | (1 << 7));
        a.set_level(true);
        b.set_level(true);
        p.update();
        assert_eq!(rd(&mut p, PENDING_BASE), (1 << 5) | (1 << 7));
        assert_eq!(rd(&mut p, claim(1)), 7, "higher priority first");
        assert_eq!(
            rd(&mut p, PENDING_BASE),
            1 << 5,
            "claimed source is not pending"
        );
        assert_eq!(rd(&mut p, claim(1)), 5);
        assert!(!p.seip(0), "both in flight");
        assert_eq!(rd(&mut p, claim(1)), 0);
        // Line still high at completion: pending again (level-triggered).
        wr(&mut p, claim(1), 7);
        assert!(p.seip(0));
        assert_eq!(rd(&mut p, claim(1)), 7);
        b.set_level(false);
        wr(&mut p, claim(1), 7);
        wr(&mut p, claim(1), 5);
        a.set_level(false);
        p.update();
        assert!(!p.seip(0));
    }

    #[test]
    fn threshold_priority_zero_and_ties() {
        let mut p = Plic::new(1);
        let lines: Vec<_> = [3, 4].iter().map(|&s| p.connect(s).unwrap()).collect();
        wr(&mut p, enable(0), (1 << 3) | (1 << 4));
        for l in &lines {
            l.set_level(true);
        }
        p.update();
        assert!(!p.meip(0), "priority 0 never interrupts");
        wr(&mut p, 4 * 3, 2);
        wr(&mut p, 4 * 4, 2);
        assert!(p.meip(0));
        wr(&mut p, CONTEXT_BASE, 2);
        assert!(!p.meip(0), "threshold masks priority <= threshold");
        assert_eq!(rd(&mut p, CONTEXT_BASE), 2);
        wr(&mut p, CONTEXT_BASE, 1);
        assert_eq!(rd(&mut p, claim(0)), 3, "ties go to the lower id");
        wr(&mut p, 4 * 3, 0xffff_ffff);
        assert_eq!(rd(&mut p, 4 * 3), 7, "3 priority bits");
    }

    #[test]
    fn unbacked_bits_read_zero() {
        let mut p = Plic::new(1);
        wr(&mut p, enable(0), 0xffff_ffff);
        assert_eq!(
            rd(&mut p, enable(0)),
            0xffff_fffe,
            "source 0 does not exist"
        );
        wr(&mut p, enable(0) + 12, 0xffff_ffff);
        assert_eq!(
            rd(&mut p, enable(0) + 12),
            1,
            "only source 96 exists in word 3"
        );
        wr(&mut p, 0, 5);
        assert_eq!(rd(&mut p, 0), 0);
        assert_eq!(rd(&mut p, claim(5)), 0, "context of a missing hart");
        assert!(p.connect(0).is_none() && p.connect(97).is_none());
        assert_eq!(
            p.read(&mut DevCtx::new(0, 0, &mut NoScheduler), 0, 8),
            Err(BadAccess)
        );
    }
}
