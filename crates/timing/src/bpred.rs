//! Branch prediction: a bimodal, gshare or TAGE direction predictor for
//! conditional branches, a BTB for jump targets and a return-address stack.
//!
//! TAGE (`kind = "tage"`, after Seznec and Michaud, JILP 2006) keeps a
//! bimodal base table and a few tagged tables, each indexed and tagged by
//! the pc hashed with the global history of its own length (lengths grow
//! geometrically). The longest table whose tag matches provides the
//! prediction; a misprediction allocates an entry in a longer table whose
//! usefulness counter is zero. Everything is fixed and deterministic: the
//! hashes are xor folds, allocation takes the shortest free table, and the
//! usefulness counters age on a fixed count of branches.
//!
//! Calls and returns are told apart the way RISC-V hardware does it: by the
//! register operands of `jal`/`jalr` (the unprivileged spec's return-address
//! stack hints, [`JumpHint::of`]), with x1 and x5 as link registers. A
//! return takes its predicted target from the stack; when the stack is empty
//! (overflowed, or a context switch popped past what it holds) the BTB
//! predicts it like any other indirect jump.

use crate::desc::{BpredConfig, PredictorKind, MAX_TAGE_HISTORY, MAX_TAGE_TABLES};

/// Conditional branches between two agings of the usefulness counters
/// (Seznec and Michaud: every 256 K branches, the high and the low bit of
/// every counter cleared in turn).
const U_AGING_PERIOD: u64 = 1 << 18;
/// Words of global history kept (bit 0 of word 0 is the newest outcome).
const GHIST_WORDS: usize = MAX_TAGE_HISTORY as usize / 64 + 1;

/// A global history of `len` bits xor-folded to `width` bits, kept
/// incrementally: a bit of age `a` sits at bit `a % width`.
#[derive(Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
struct Folded {
    comp: u32,
    len: u32,
    width: u32,
}

impl Folded {
    fn new(len: u32, width: u32) -> Self {
        Folded {
            comp: 0,
            len,
            width,
        }
    }

    /// `new` entered the history; `out` is the bit that just left this
    /// length (now of age `len`).
    #[inline(always)]
    fn push(&mut self, new: u64, out: u64) {
        let mut c = (self.comp << 1) | new as u32;
        c ^= (out as u32) << (self.len % self.width);
        c ^= c >> self.width;
        self.comp = c & ((1 << self.width) - 1);
    }
}

/// One tagged table of a TAGE predictor.
#[derive(serde::Serialize, serde::Deserialize)]
struct Tagged {
    /// Three-bit counters: taken when 4 or more.
    ctr: Vec<u8>,
    tag: Vec<u16>,
    /// Two-bit usefulness counters.
    u: Vec<u8>,
    index: Folded,
    tag0: Folded,
    tag1: Folded,
}

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

// (two u64s in this order: `InlineJump` describes them so)
#[derive(Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
#[repr(C)]
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
    /// `kind = "tage"`: the tagged tables, shortest history first (empty
    /// otherwise; `counters` is then the base table, indexed by pc alone).
    #[serde(default)]
    tagged: Vec<Tagged>,
    #[serde(default)]
    tag_mask: u16,
    /// TAGE's global history of conditional outcomes.
    #[serde(default)]
    ghist: [u64; GHIST_WORDS],
    /// Four-bit counter: trust the alternate prediction over a newly
    /// allocated (weak, not yet useful) provider when 8 or more.
    #[serde(default)]
    use_alt: u8,
    /// Conditional branches seen by TAGE (ages the usefulness counters).
    #[serde(default)]
    tick: u64,
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
            && self.tag_mask == o.tag_mask
            && o.use_alt <= 15
            && self.tagged.len() == o.tagged.len()
            && self.tagged.iter().zip(&o.tagged).all(|(a, b)| {
                let fold = |x: &Folded, y: &Folded| {
                    (x.len, x.width) == (y.len, y.width) && y.comp >> y.width == 0
                };
                fold(&a.index, &b.index)
                    && fold(&a.tag0, &b.tag0)
                    && fold(&a.tag1, &b.tag1)
                    && b.ctr.len() == a.ctr.len()
                    && b.tag.len() == a.tag.len()
                    && b.u.len() == a.u.len()
                    && b.ctr.iter().all(|&c| c <= 7)
                    && b.u.iter().all(|&u| u <= 3)
                    && b.tag.iter().all(|&t| t & !self.tag_mask == 0)
            })
    }
    pub fn new(cfg: &BpredConfig) -> Self {
        Predictor {
            counters: vec![1; cfg.entries], // weakly not taken
            index_mask: cfg.entries as u64 - 1,
            history: 0,
            history_mask: match cfg.kind {
                // TAGE's base table is bimodal; its histories are `ghist`
                PredictorKind::Bimodal | PredictorKind::Tage => 0,
                PredictorKind::Gshare => (1u64 << cfg.history_bits) - 1,
            },
            btb: vec![BtbEntry::default(); cfg.btb_entries],
            btb_mask: cfg.btb_entries as u64 - 1,
            ras: vec![0; cfg.ras_depth],
            ras_top: 0,
            ras_len: 0,
            ras_circular: cfg.ras_circular,
            tagged: match (cfg.kind, cfg.tage) {
                (PredictorKind::Tage, Some(t)) => (0..t.tables)
                    .map(|i| {
                        let len = t.history_length(i, cfg.history_bits);
                        let index_bits = t.entries.trailing_zeros();
                        Tagged {
                            ctr: vec![3; t.entries],
                            tag: vec![0; t.entries],
                            u: vec![0; t.entries],
                            index: Folded::new(len, index_bits),
                            tag0: Folded::new(len, t.tag_bits),
                            tag1: Folded::new(len, t.tag_bits - 1),
                        }
                    })
                    .collect(),
                _ => Vec::new(),
            },
            tag_mask: cfg.tage.map_or(0, |t| ((1u32 << t.tag_bits) - 1) as u16),
            ghist: [0; GHIST_WORDS],
            use_alt: 8,
            tick: 0,
            counts: BpredCounts::default(),
        }
    }

    /// [`crate::InlineBranch`] of this predictor, its offsets from the
    /// predictor (`fetch_cycles` and the costs are the caller's): a
    /// gshare or bimodal table whose history fits in its index (so the
    /// fold is the history itself); None for TAGE.
    pub(crate) fn inline_branch(&self) -> Option<crate::InlineBranch> {
        use std::mem::offset_of;
        let plain = self.tagged.is_empty()
            && self.history_mask & !self.index_mask == 0
            && self.counters.len() as u64 == self.index_mask + 1;
        plain.then(|| crate::InlineBranch {
            history: offset_of!(Predictor, history),
            history_mask: self.history_mask,
            index_mask: self.index_mask,
            branches: offset_of!(Predictor, counts) + offset_of!(BpredCounts, cond_branches),
            mispredicts: offset_of!(Predictor, counts) + offset_of!(BpredCounts, cond_mispredicts),
            fetch_cycles: 0,
            mispredict: 0,
            taken_penalty: 0,
        })
    }

    /// The counter table `inline_branch` describes.
    pub(crate) fn counter_table(&mut self) -> u64 {
        self.counters.as_mut_ptr() as u64
    }

    /// The predictor's part of an [`crate::InlineJump`] (a plain jump's
    /// BTB hit changes only the jump count; offsets from the predictor,
    /// the model's cycles and cost left for the model to fill in).
    pub(crate) fn inline_jump(&self) -> crate::InlineJump {
        use std::mem::offset_of;
        crate::InlineJump {
            index_mask: self.btb_mask,
            jumps: offset_of!(Predictor, counts) + offset_of!(BpredCounts, jumps),
            cycles: 0,
            cost: 0,
        }
    }

    /// The predictor's part of an [`crate::InlineJalr`] (None without
    /// a return-address stack).
    pub(crate) fn inline_jalr(&self) -> Option<crate::InlineJalr> {
        use std::mem::offset_of;
        let count = |c: usize| offset_of!(Predictor, counts) + c;
        (!self.ras.is_empty()).then(|| crate::InlineJalr {
            ras_top: offset_of!(Predictor, ras_top),
            ras_len: offset_of!(Predictor, ras_len),
            depth: self.ras.len() as u64,
            jumps: count(offset_of!(BpredCounts, jumps)),
            returns: count(offset_of!(BpredCounts, returns)),
            calls: count(offset_of!(BpredCounts, calls)),
            mispredicts: count(offset_of!(BpredCounts, jump_mispredicts)),
            cycles: 0,
            cost: 0,
            mispredict: 0,
        })
    }

    /// The return-address stack `inline_jalr` describes.
    pub(crate) fn ras_stack(&mut self) -> u64 {
        self.ras.as_mut_ptr() as u64
    }

    /// The BTB `inline_jump` describes.
    pub(crate) fn btb_table(&mut self) -> u64 {
        self.btb.as_mut_ptr() as u64
    }

    /// The history length of each tagged table (empty unless TAGE).
    pub fn tage_history_lengths(&self) -> impl Iterator<Item = u32> + '_ {
        self.tagged.iter().map(|t| t.index.len)
    }

    /// A conditional branch resolved; true if it was predicted correctly.
    #[inline]
    pub fn branch(&mut self, pc: u64, taken: bool) -> bool {
        if !self.tagged.is_empty() {
            return self.tage_branch(pc, taken);
        }
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

    /// [`Predictor::branch`] of a TAGE predictor: look up, update, allocate
    /// on a misprediction, age, then shift the outcome into the history.
    fn tage_branch(&mut self, pc: u64, taken: bool) -> bool {
        self.counts.cond_branches += 1;
        let n = self.tagged.len();
        let p = pc >> 1;
        let mut idx = [0usize; MAX_TAGE_TABLES];
        let mut tag = [0u16; MAX_TAGE_TABLES];
        let mut provider = None;
        let mut alt = None;
        for (i, t) in self.tagged.iter().enumerate() {
            let bits = t.index.width;
            idx[i] = ((p ^ (p >> bits) ^ t.index.comp as u64) & ((1 << bits) - 1)) as usize;
            tag[i] =
                ((p ^ t.tag0.comp as u64 ^ ((t.tag1.comp as u64) << 1)) as u16) & self.tag_mask;
        }
        for i in (0..n).rev() {
            if self.tagged[i].tag[idx[i]] == tag[i] {
                if provider.is_none() {
                    provider = Some(i);
                } else {
                    alt = Some(i);
                    break;
                }
            }
        }
        let b = (p & self.index_mask) as usize;
        let base_pred = self.counters[b] >= 2;
        let alt_pred = alt.map_or(base_pred, |j| self.tagged[j].ctr[idx[j]] >= 4);
        let (predicted, provider_pred) = match provider {
            Some(i) => {
                let t = &self.tagged[i];
                let (c, u) = (t.ctr[idx[i]], t.u[idx[i]]);
                let pp = c >= 4;
                let newly = (c == 3 || c == 4) && u == 0;
                if newly && pp != alt_pred {
                    // which of the two a new entry should defer to is learnt
                    self.use_alt = if alt_pred == taken {
                        (self.use_alt + 1).min(15)
                    } else {
                        self.use_alt.saturating_sub(1)
                    };
                }
                (
                    if newly && self.use_alt >= 8 {
                        alt_pred
                    } else {
                        pp
                    },
                    pp,
                )
            }
            None => (base_pred, base_pred),
        };
        if predicted != taken {
            // allocate in the shortest longer table with a useless entry;
            // if none, make them all a little less useful
            let start = provider.map_or(0, |i| i + 1);
            match (start..n).find(|&j| self.tagged[j].u[idx[j]] == 0) {
                Some(j) => {
                    let t = &mut self.tagged[j];
                    t.tag[idx[j]] = tag[j];
                    t.ctr[idx[j]] = if taken { 4 } else { 3 };
                }
                None => {
                    for j in start..n {
                        let u = &mut self.tagged[j].u[idx[j]];
                        *u = u.saturating_sub(1);
                    }
                }
            }
            self.counts.cond_mispredicts += 1;
        }
        match provider {
            Some(i) => {
                let t = &mut self.tagged[i];
                let c = &mut t.ctr[idx[i]];
                *c = if taken {
                    (*c + 1).min(7)
                } else {
                    c.saturating_sub(1)
                };
                if provider_pred != alt_pred {
                    let u = &mut t.u[idx[i]];
                    *u = if provider_pred == taken {
                        (*u + 1).min(3)
                    } else {
                        u.saturating_sub(1)
                    };
                }
            }
            None => {
                let c = &mut self.counters[b];
                *c = if taken {
                    (*c + 1).min(3)
                } else {
                    c.saturating_sub(1)
                };
            }
        }
        self.tick += 1;
        if self.tick.is_multiple_of(U_AGING_PERIOD) {
            // clear the high bit, then next time the low bit, of every counter
            let keep = if (self.tick / U_AGING_PERIOD) % 2 == 1 {
                1
            } else {
                2
            };
            for t in &mut self.tagged {
                t.u.iter_mut().for_each(|u| *u &= keep);
            }
        }
        self.push_history(taken);
        predicted == taken
    }

    /// Shift a conditional outcome into TAGE's global history and its folds.
    #[inline(always)]
    fn push_history(&mut self, taken: bool) {
        let g = &mut self.ghist;
        for w in (1..GHIST_WORDS).rev() {
            g[w] = (g[w] << 1) | (g[w - 1] >> 63);
        }
        g[0] = (g[0] << 1) | taken as u64;
        let bit = |age: u32| (g[age as usize / 64] >> (age % 64)) & 1;
        for t in &mut self.tagged {
            let out = bit(t.index.len);
            t.index.push(taken as u64, out);
            t.tag0.push(taken as u64, out);
            t.tag1.push(taken as u64, out);
        }
    }

    /// The global history xor-folded to the index width (a history longer
    /// than the index is folded in, as predictors with long histories do).
    #[inline(always)]
    fn folded_history(&self) -> u64 {
        // (the mask is 2^k - 1: its width without a population count,
        // which x86-64's baseline has no instruction for)
        let bits = 64 - self.index_mask.leading_zeros();
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

    // The circular stack's neighbours of the top, wrapping by a compare: a
    // `%` by the run-time depth is a division on every call and return.
    fn ras_below(&self) -> usize {
        if self.ras_top == 0 {
            self.ras.len() - 1
        } else {
            self.ras_top - 1
        }
    }

    fn ras_above(&self) -> usize {
        if self.ras_top + 1 >= self.ras.len() {
            0
        } else {
            self.ras_top + 1
        }
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
            self.ras_top = self.ras_below();
            return (t != 0).then_some(t);
        }
        let t = self.ras[self.ras_top];
        self.ras_len -= 1;
        self.ras_top = self.ras_below();
        Some(t)
    }

    fn push(&mut self, link: u64) {
        self.ras_top = self.ras_above();
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
            self.pop()
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
            tage: None,
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

    use crate::desc::TageConfig;

    /// A TAGE of 2,560 + 4 x 64 x 13 = 5,888 bits: 256 base counters,
    /// four 64-entry tables with 8-bit tags, histories 4, 10, 25 and 64.
    fn tage_cfg() -> BpredConfig {
        BpredConfig {
            history_bits: 64,
            tage: Some(TageConfig {
                tables: 4,
                entries: 64,
                tag_bits: 8,
                min_history: 4,
            }),
            ..cfg(PredictorKind::Tage, 64)
        }
    }

    /// A loop branch taken `period - 1` times, then not taken once.
    fn loop_exits(p: &mut Predictor, periods: usize, period: usize) -> Vec<usize> {
        (0..periods)
            .map(|_| {
                (0..period)
                    .filter(|&i| !p.branch(0x1234, i + 1 < period))
                    .count()
            })
            .collect()
    }

    #[test]
    fn tage_histories_grow_geometrically() {
        let p = Predictor::new(&tage_cfg());
        assert_eq!(
            p.tage_history_lengths().collect::<Vec<_>>(),
            [4, 10, 25, 64]
        );
    }

    #[test]
    fn folded_histories_equal_a_direct_fold_of_the_history() {
        let mut p = Predictor::new(&tage_cfg());
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for n in 0..300 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            p.push_history(x & 1 == 1);
            for t in &p.tagged {
                for f in [t.index, t.tag0, t.tag1] {
                    let mut direct = 0u32;
                    for age in 0..f.len.min(n + 1) {
                        let b = (p.ghist[age as usize / 64] >> (age % 64)) & 1;
                        direct ^= (b as u32) << (age % f.width);
                    }
                    assert_eq!(f.comp, direct, "len {} width {} after {n}", f.len, f.width);
                }
            }
        }
    }

    #[test]
    fn tage_learns_a_loop_exit_beyond_what_a_gshare_of_its_size_sees() {
        // period 30: only a history of 30 or more outcomes tells the exit
        // from the iterations before it (29 taken in a row either way)
        let t = tage_cfg();
        let mut tage = Predictor::new(&t);
        let misses = loop_exits(&mut tage, 100, 30);
        assert_eq!(misses[50..].iter().sum::<usize>(), 0, "{misses:?}");
        // gshare of about the same state or more (2,048 or 4,096 counters:
        // 4,096 or 8,192 bits), with histories of 11, 12 or 22 bits: it sees
        // all-taken before the exit and mispredicts it every time
        for (entries, history_bits) in [(2048, 11), (4096, 12), (4096, 22)] {
            let g = BpredConfig {
                entries,
                ..cfg(PredictorKind::Gshare, history_bits)
            };
            assert!(2 * entries as u64 >= t.direction_bits() * 2 / 3);
            let mut gshare = Predictor::new(&g);
            let misses = loop_exits(&mut gshare, 100, 30);
            assert_eq!(misses[50..], [1; 50], "gshare {entries}/{history_bits}");
        }
        // and a loop the base table alone catches costs TAGE nothing more
        let mut tage = Predictor::new(&t);
        let wrong = (0..100).filter(|_| !tage.branch(0x2468, true)).count();
        assert_eq!(wrong, 1);
    }

    #[test]
    fn a_tage_misprediction_allocates_in_the_shortest_table() {
        let mut p = Predictor::new(&tage_cfg());
        let allocated = |p: &Predictor| -> Vec<usize> {
            p.tagged
                .iter()
                .map(|t| t.ctr.iter().filter(|&&c| c != 3).count())
                .collect()
        };
        // the base table starts weakly not taken: a taken branch misses
        assert!(!p.branch(0x1234, true));
        assert_eq!(allocated(&p), [1, 0, 0, 0]);
        // a not-taken branch is predicted by the base table: nothing allocated
        assert!(p.branch(0x3456, false));
        assert_eq!(allocated(&p), [1, 0, 0, 0]);
        assert_eq!(p.counts.cond_mispredicts, 1);
    }

    #[test]
    fn with_no_useless_entry_tage_ages_the_candidates_instead() {
        let mut p = Predictor::new(&tage_cfg());
        for t in &mut p.tagged {
            t.u.iter_mut().for_each(|u| *u = 2);
        }
        assert!(!p.branch(0x1234, true));
        let sums: Vec<u32> = p
            .tagged
            .iter()
            .map(|t| t.u.iter().map(|&u| u as u32).sum())
            .collect();
        // one entry in each table went from 2 to 1; none was allocated
        assert_eq!(sums, [127, 127, 127, 127]);
        assert!(p.tagged.iter().all(|t| t.ctr.iter().all(|&c| c == 3)));
    }

    #[test]
    fn tage_is_deterministic_and_its_state_round_trips() {
        let run = |p: &mut Predictor| {
            let mut x = 12345u64;
            for _ in 0..20000 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let pc = 0x1000 + ((x >> 33) % 64) * 4;
                p.branch(pc, !(x >> 40).is_multiple_of(3));
            }
            p.counts
        };
        let mut a = Predictor::new(&tage_cfg());
        let mut b = Predictor::new(&tage_cfg());
        let ca = run(&mut a);
        assert_eq!(ca, run(&mut b));
        assert!(ca.cond_mispredicts > 0 && ca.cond_mispredicts < ca.cond_branches);
        let saved = hs_snapshot::state::encode(&a).unwrap();
        let mut c: Predictor = hs_snapshot::state::decode(&saved).unwrap();
        assert!(a.same_shape(&c));
        // the restored predictor goes on exactly as the original
        assert_eq!(run(&mut a), run(&mut c));
        let gshare = Predictor::new(&cfg(PredictorKind::Gshare, 8));
        assert!(!a.same_shape(&gshare) && !gshare.same_shape(&a));
        let mut bad: Predictor = hs_snapshot::state::decode(&saved).unwrap();
        bad.tagged[2].u[5] = 4;
        assert!(!a.same_shape(&bad));
    }
}
