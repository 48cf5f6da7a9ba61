//! Branch prediction: a bimodal or gshare direction predictor for
//! conditional branches, a BTB for jump targets and a return-address stack.
//!
//! Calls and returns are told apart the way RISC-V hardware does it: by the
//! register operands of `jal`/`jalr` (the unprivileged spec's return-address
//! stack hints, [`JumpHint::of`]), with x1 and x5 as link registers. A
//! return takes its predicted target from the stack; when the stack is empty
//! (overflowed, or a context switch popped past what it holds) the BTB
//! predicts it like any other indirect jump.

use crate::desc::{BpredConfig, PredictorKind};

/// What a jump's register operands say about the return-address stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JumpHint {
    /// Neither push nor pop (`j`, `jr a5`, tail calls).
    Plain,
    /// Push the return address (`call`, `jal ra`, `jalr ra, a5`).
    Call,
    /// Pop the predicted target (`ret`, `jr t0`).
    Return,
    /// Pop, then push (`jalr x1, x5` / `jalr x5, x1`: a coroutine swap).
    ReturnCall,
}

impl JumpHint {
    /// The hint of a jump writing `rd` and, for `jalr`, reading `rs1`
    /// (Table 2.1 of the RISC-V unprivileged specification).
    #[inline(always)]
    pub fn of(rd: u8, rs1: Option<u8>) -> JumpHint {
        let link = |r: u8| r == 1 || r == 5;
        match (link(rd), rs1.map(link).unwrap_or(false)) {
            (false, false) => JumpHint::Plain,
            (false, true) => JumpHint::Return,
            (true, false) => JumpHint::Call,
            (true, true) if Some(rd) == rs1 => JumpHint::Call,
            (true, true) => JumpHint::ReturnCall,
        }
    }
}

#[derive(Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
struct BtbEntry {
    /// pc | 1 (0 = empty).
    tag: u64,
    target: u64,
}

/// Prediction counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BpredCounts {
    pub cond_branches: u64,
    pub cond_mispredicts: u64,
    /// Every jump: calls, returns, direct and indirect.
    pub jumps: u64,
    pub jump_mispredicts: u64,
    /// Jumps hinted as calls (they push).
    pub calls: u64,
    /// Jumps hinted as returns (they pop).
    pub returns: u64,
    /// Returns whose target was not the one predicted (from the stack, or
    /// from the BTB when the stack was empty).
    pub return_mispredicts: u64,
    /// Returns that found the stack empty.
    pub ras_underflows: u64,
    /// Direct jumps (`jal`) the BTB did not predict, redirected at decode
    /// (not mispredictions: see [`Predictor::direct_jump`]).
    pub decode_redirects: u64,
}

#[derive(serde::Serialize, serde::Deserialize)]
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
    /// `[bpred] ras_circular`: underflows pop stale entries.
    ras_circular: bool,
    pub counts: BpredCounts,
}

impl Predictor {
    /// Same table sizes and stack, with the stack pointers in range.
    pub(crate) fn same_shape(&self, o: &Predictor) -> bool {
        (
            self.index_mask,
            self.history_mask,
            self.btb_mask,
            self.ras_circular,
        ) == (o.index_mask, o.history_mask, o.btb_mask, o.ras_circular)
            && o.counters.len() == self.counters.len()
            && o.counters.iter().all(|&c| c <= 3)
            && o.btb.len() == self.btb.len()
            && o.ras.len() == self.ras.len()
            && o.ras_top < o.ras.len().max(1)
            && o.ras_len <= o.ras.len()
    }
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
            ras_circular: cfg.ras_circular,
            counts: BpredCounts::default(),
        }
    }

    /// A conditional branch resolved; true if it was predicted correctly.
    #[inline]
    pub fn branch(&mut self, pc: u64, taken: bool) -> bool {
        self.counts.cond_branches += 1;
        // bimodal keeps no history (its mask is 0), so the xor is a no-op there
        let idx = (pc >> 1) ^ self.folded_history();
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

    /// The global history xor-folded to the index width (a history longer
    /// than the index is folded in, as predictors with long histories do).
    #[inline(always)]
    fn folded_history(&self) -> u64 {
        let bits = self.index_mask.count_ones();
        let mut h = self.history;
        let mut f = 0;
        while h != 0 {
            f ^= h & self.index_mask;
            h >>= bits.max(1);
        }
        f
    }

    fn btb_slot(&self, pc: u64) -> usize {
        ((pc >> 1) & self.btb_mask) as usize
    }

    fn pop(&mut self) -> Option<u64> {
        if self.ras_len == 0 {
            self.counts.ras_underflows += 1;
            if !self.ras_circular {
                return None;
            }
            // a circular stack without valid bits: an underflow reads
            // whatever the slot below still holds (deep recursion returns
            // to the same few sites, so this is often right)
            let t = self.ras[self.ras_top];
            self.ras_top = (self.ras_top + self.ras.len() - 1) % self.ras.len();
            return (t != 0).then_some(t);
        }
        let t = self.ras[self.ras_top];
        self.ras_len -= 1;
        self.ras_top = (self.ras_top + self.ras.len() - 1) % self.ras.len();
        Some(t)
    }

    fn push(&mut self, link: u64) {
        self.ras_top = (self.ras_top + 1) % self.ras.len();
        self.ras[self.ras_top] = link;
        self.ras_len = (self.ras_len + 1).min(self.ras.len());
    }

    /// A `jal` whose target decode computes: as [`Predictor::jump`], but a
    /// BTB miss is a decode redirect, counted apart from mispredictions.
    pub fn direct_jump(&mut self, pc: u64, target: u64, hint: JumpHint, link: u64) -> bool {
        let hit = self.jump(pc, target, hint, link);
        if !hit {
            self.counts.jump_mispredicts -= 1;
            self.counts.decode_redirects += 1;
        }
        hit
    }

    /// A jump at `pc` went to `target`; `link` is the address after it (what
    /// a call pushes). True if its target was predicted correctly.
    pub fn jump(&mut self, pc: u64, target: u64, hint: JumpHint, link: u64) -> bool {
        self.counts.jumps += 1;
        let is_return = matches!(hint, JumpHint::Return | JumpHint::ReturnCall);
        let from_stack = if is_return {
            self.counts.returns += 1;
            let t = self.pop();
            t
        } else {
            None
        };
        let s = self.btb_slot(pc);
        let hit = match from_stack {
            Some(t) => t == target,
            None => self.btb[s].tag == pc | 1 && self.btb[s].target == target,
        };
        // returns that the stack predicted do not need a BTB entry
        if from_stack.is_none() {
            self.btb[s] = BtbEntry {
                tag: pc | 1,
                target,
            };
        }
        if matches!(hint, JumpHint::Call | JumpHint::ReturnCall) {
            self.counts.calls += 1;
            self.push(link);
        }
        if !hit {
            self.counts.jump_mispredicts += 1;
            self.counts.return_mispredicts += is_return as u64;
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
            direct_miss_penalty: None,
            ras_circular: false,
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
    fn hints_follow_the_specification_table() {
        use JumpHint::*;
        assert_eq!(JumpHint::of(0, None), Plain); // j
        assert_eq!(JumpHint::of(1, None), Call); // jal ra
        assert_eq!(JumpHint::of(5, None), Call); // jal t0 (millicode call)
        assert_eq!(JumpHint::of(0, Some(1)), Return); // ret
        assert_eq!(JumpHint::of(0, Some(5)), Return); // jr t0
        assert_eq!(JumpHint::of(0, Some(15)), Plain); // jr a5
        assert_eq!(JumpHint::of(1, Some(15)), Call); // jalr a5
        assert_eq!(JumpHint::of(1, Some(1)), Call); // jalr ra, ra: push only
        assert_eq!(JumpHint::of(1, Some(5)), ReturnCall);
        assert_eq!(JumpHint::of(5, Some(1)), ReturnCall);
        assert_eq!(JumpHint::of(10, Some(11)), Plain);
    }

    #[test]
    fn returns_are_predicted_from_the_first_call() {
        let mut p = Predictor::new(&cfg(PredictorKind::Bimodal, 0));
        // call at 0x100 (4 bytes) to 0x800; ret at 0x810 back to 0x104
        let round = |p: &mut Predictor| {
            (
                p.jump(0x100, 0x800, JumpHint::Call, 0x104),
                p.jump(0x810, 0x104, JumpHint::Return, 0x814),
            )
        };
        assert_eq!(round(&mut p), (false, true)); // cold BTB for the call; the stack knows the return
        assert_eq!(round(&mut p), (true, true));
        // a second caller (compressed jal at 0x204) of the same function
        assert!(
            !p.jump(0x204, 0x800, JumpHint::Call, 0x206),
            "a new call site is cold in the BTB"
        );
        assert!(p.jump(0x810, 0x206, JumpHint::Return, 0x814));
        assert_eq!(
            (
                p.counts.returns,
                p.counts.return_mispredicts,
                p.counts.calls
            ),
            (3, 0, 3)
        );
        // a plain jump never pushes; a return to somewhere else mispredicts
        assert_eq!(
            (
                p.jump(0x300, 0x400, JumpHint::Plain, 0x304),
                p.jump(0x300, 0x400, JumpHint::Plain, 0x304)
            ),
            (false, true)
        );
        assert_eq!(p.ras_len, 0);
        p.jump(0x100, 0x800, JumpHint::Call, 0x104);
        assert!(
            !p.jump(0x810, 0x900, JumpHint::Return, 0x814),
            "longjmp-like return"
        );
        assert_eq!(p.counts.return_mispredicts, 1);
    }

    #[test]
    fn an_empty_stack_falls_back_to_the_btb() {
        let mut p = Predictor::new(&cfg(PredictorKind::Bimodal, 0));
        // a return with nothing pushed (e.g. after a context switch)
        assert!(!p.jump(0x810, 0x104, JumpHint::Return, 0x814));
        assert!(
            p.jump(0x810, 0x104, JumpHint::Return, 0x814),
            "the BTB learned it"
        );
        assert_eq!(p.counts.ras_underflows, 2);
    }

    #[test]
    fn a_coroutine_swap_pops_then_pushes() {
        let mut p = Predictor::new(&cfg(PredictorKind::Bimodal, 0));
        p.jump(0x100, 0x800, JumpHint::Call, 0x104);
        // jalr x5, x1 at 0x820: returns to 0x104 and pushes 0x824
        assert!(p.jump(0x820, 0x104, JumpHint::ReturnCall, 0x824));
        assert!(p.jump(0x200, 0x824, JumpHint::Return, 0x204));
        assert_eq!(p.ras_len, 0);
    }

    #[test]
    fn a_deep_call_chain_overflows_the_stack() {
        let mut p = Predictor::new(&cfg(PredictorKind::Bimodal, 0));
        // chain of 6 calls (depth 4 stack), then 6 returns
        let run = |p: &mut Predictor| {
            for d in 0..6u64 {
                p.jump(
                    0x100 + 4 * d,
                    0x1000 + 0x100 * d,
                    JumpHint::Call,
                    0x104 + 4 * d,
                );
            }
            (0..6u64)
                .rev()
                .filter(|&d| p.jump(0x1020 + 0x102 * d, 0x100 + 4 * d + 4, JumpHint::Return, 0))
                .count()
        };
        assert_eq!(
            run(&mut p),
            4,
            "only the 4 innermost returns are on the stack"
        );
        // the 2 outer returns found the stack empty and taught the BTB
        assert_eq!(run(&mut p), 6);
    }

    #[test]
    fn a_direct_jump_the_btb_missed_is_a_decode_redirect_not_a_mispredict() {
        let mut p = Predictor::new(&cfg(PredictorKind::Bimodal, 0));
        assert!(!p.direct_jump(0x100, 0x800, JumpHint::Plain, 0x104));
        assert!(p.direct_jump(0x100, 0x800, JumpHint::Plain, 0x104));
        assert_eq!(
            (p.counts.decode_redirects, p.counts.jump_mispredicts),
            (1, 0)
        );
        // an indirect jump the BTB missed is a misprediction
        assert!(!p.jump(0x200, 0x900, JumpHint::Plain, 0x204));
        assert_eq!(
            (p.counts.decode_redirects, p.counts.jump_mispredicts),
            (1, 1)
        );
        assert_eq!(p.counts.jumps, 3);
    }

    #[test]
    fn a_circular_return_stack_predicts_deep_recursion_from_stale_entries() {
        let deep = |circular: bool| {
            let mut p = Predictor::new(&BpredConfig {
                ras_circular: circular,
                ..cfg(PredictorKind::Bimodal, 0)
            });
            // 20 nested calls from one site (depth 4 stack), then 20 returns to it
            for _ in 0..20 {
                p.jump(0x100, 0x100, JumpHint::Call, 0x104);
            }
            let hits = (0..20)
                .filter(|_| p.jump(0x180, 0x104, JumpHint::Return, 0))
                .count();
            (hits, p.counts.ras_underflows)
        };
        assert_eq!(deep(true), (20, 16));
        // without: the BTB predicts the underflows (its entry for 0x180 is learnt after the first)
        assert_eq!(deep(false), (19, 16));
    }
}
