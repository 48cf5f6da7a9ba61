//! Branch prediction: a bimodal or gshare direction predictor for
//! conditional branches, a BTB for jump targets and a return-address stack.
//!
//! The hooks do not say whether a jump is a call or a return. A jump whose
//! target is the top of the return-address stack is taken as a return; a
//! jump becomes a known call site (it pushes its return address from then
//! on) once some jump has returned to the address just after it. So the
//! first return from each call site mispredicts, as a cold predictor would.

use crate::desc::{BpredConfig, PredictorKind};

#[derive(Clone, Copy, Default)]
struct BtbEntry {
    /// pc | 1 (0 = empty).
    tag: u64,
    target: u64,
    /// A known call site: its length (2 or 4; 0 = not a call).
    call_len: u8,
}

/// Prediction counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BpredCounts {
    pub cond_branches: u64,
    pub cond_mispredicts: u64,
    pub jumps: u64,
    pub jump_mispredicts: u64,
    pub returns: u64,
}

pub struct Predictor {
    counters: Vec<u8>,
    index_mask: u64,
    history: u64,
    history_mask: u64,
    btb: Vec<BtbEntry>,
    btb_mask: u64,
    ras: Vec<u64>,
    /// Entries in use (wraps: the oldest return addresses are overwritten).
    ras_top: usize,
    ras_len: usize,
    pub counts: BpredCounts,
}

impl Predictor {
    pub fn new(cfg: &BpredConfig) -> Self {
        Predictor {
            counters: vec![1; cfg.entries], // weakly not taken
            index_mask: cfg.entries as u64 - 1,
            history: 0,
            history_mask: match cfg.kind {
                PredictorKind::Bimodal => 0,
                PredictorKind::Gshare => (1u64 << cfg.history_bits) - 1,
            },
            btb: vec![BtbEntry::default(); cfg.btb_entries],
            btb_mask: cfg.btb_entries as u64 - 1,
            ras: vec![0; cfg.ras_depth],
            ras_top: 0,
            ras_len: 0,
            counts: BpredCounts::default(),
        }
    }

    /// A conditional branch resolved; true if it was predicted correctly.
    #[inline]
    pub fn branch(&mut self, pc: u64, taken: bool) -> bool {
        self.counts.cond_branches += 1;
        // bimodal keeps no history (its mask is 0), so the xor is a no-op there
        let idx = (pc >> 1) ^ self.history;
        let c = &mut self.counters[(idx & self.index_mask) as usize];
        let predicted = *c >= 2;
        if taken {
            *c = (*c + 1).min(3);
        } else {
            *c = c.saturating_sub(1);
        }
        self.history = ((self.history << 1) | taken as u64) & self.history_mask;
        if predicted != taken {
            self.counts.cond_mispredicts += 1;
        }
        predicted == taken
    }

    fn btb_slot(&self, pc: u64) -> usize {
        ((pc >> 1) & self.btb_mask) as usize
    }

    /// A jump at `pc` went to `target`; true if predicted correctly.
    pub fn jump(&mut self, pc: u64, target: u64) -> bool {
        self.counts.jumps += 1;
        if self.ras_len > 0 && self.ras[self.ras_top] == target {
            self.ras_len -= 1;
            self.ras_top = (self.ras_top + self.ras.len() - 1) % self.ras.len();
            self.counts.returns += 1;
            return true;
        }
        // a return the stack did not know: learn the call site before it
        // (a jump 4 or 2 bytes before the return address)
        for back in [4u64, 2] {
            let call_pc = target.wrapping_sub(back);
            let s = self.btb_slot(call_pc);
            let e = &mut self.btb[s];
            if e.tag == call_pc | 1 {
                e.call_len = back as u8;
                break;
            }
        }
        let s = self.btb_slot(pc);
        let e = self.btb[s];
        let known = e.tag == pc | 1;
        let hit = known && e.target == target;
        let call_len = if known { e.call_len } else { 0 };
        self.btb[s] = BtbEntry { tag: pc | 1, target, call_len };
        if call_len != 0 {
            self.ras_top = (self.ras_top + 1) % self.ras.len();
            self.ras[self.ras_top] = pc.wrapping_add(call_len as u64);
            self.ras_len = (self.ras_len + 1).min(self.ras.len());
        }
        if !hit {
            self.counts.jump_mispredicts += 1;
        }
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(kind: PredictorKind, history_bits: u32) -> BpredConfig {
        BpredConfig {
            kind,
            entries: 256,
            history_bits,
            btb_entries: 64,
            ras_depth: 4,
            mispredict_penalty: 3,
            taken_penalty: 1,
        }
    }

    #[test]
    fn bimodal_learns_a_biased_branch_and_misses_an_alternating_one() {
        let mut p = Predictor::new(&cfg(PredictorKind::Bimodal, 0));
        let wrong = (0..100).filter(|_| !p.branch(0x1000, true)).count();
        assert_eq!(wrong, 1); // weakly not taken at first
        let mut p = Predictor::new(&cfg(PredictorKind::Bimodal, 0));
        let wrong = (0..100).filter(|i| !p.branch(0x1000, i % 2 == 0)).count();
        assert!(wrong >= 50, "{wrong}");
    }

    #[test]
    fn gshare_learns_an_alternating_branch() {
        let mut p = Predictor::new(&cfg(PredictorKind::Gshare, 4));
        let wrong = (0..200).filter(|i| !p.branch(0x1000, i % 2 == 0)).count();
        assert!(wrong < 10, "{wrong}");
    }

    #[test]
    fn returns_predicted_once_the_call_site_is_known() {
        let mut p = Predictor::new(&cfg(PredictorKind::Bimodal, 0));
        // call at 0x100 (4 bytes) to 0x800; ret at 0x810 back to 0x104
        let round = |p: &mut Predictor| (p.jump(0x100, 0x800), p.jump(0x810, 0x104));
        assert_eq!(round(&mut p), (false, false)); // cold BTB; the return teaches the call site
        assert_eq!(round(&mut p), (true, true)); // the call now pushes
        assert_eq!(p.counts.returns, 1);
        // a second caller (compressed jal at 0x204) of the same function
        let r2 = |p: &mut Predictor| (p.jump(0x204, 0x800), p.jump(0x810, 0x206));
        assert_eq!(r2(&mut p), (false, false));
        assert_eq!(r2(&mut p), (true, true));
        assert_eq!(round(&mut p), (true, true));
        // a plain jump is not a call: it never pushes
        assert_eq!((p.jump(0x300, 0x400), p.jump(0x300, 0x400)), (false, true));
        assert_eq!(p.ras_len, 0);
    }

    #[test]
    fn a_deep_call_chain_overflows_the_stack() {
        let mut p = Predictor::new(&cfg(PredictorKind::Bimodal, 0));
        // chain of 6 calls (depth 4 stack), then 6 returns; run twice to learn
        let run = |p: &mut Predictor| {
            for d in 0..6u64 {
                p.jump(0x100 + 4 * d, 0x1000 + 0x100 * d);
            }
            (0..6u64).rev().filter(|&d| p.jump(0x1000 + 0x100 * d + 0x20, 0x100 + 4 * d + 4)).count()
        };
        run(&mut p);
        run(&mut p);
        assert_eq!(run(&mut p), 4, "only the 4 innermost returns are on the stack");
    }
}
