//! A set-associative, write-back, write-allocate cache of line tags (no
//! data: the hart holds the data; this only decides hit or miss).

use crate::desc::{CacheConfig, Replacement};

/// The tag of an empty way (no line number reaches it).
const INVALID: u64 = u64::MAX;

/// Outcome of one access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub hit: bool,
    /// Line address (byte address of the line) of a dirty line evicted to make room.
    pub writeback: Option<u64>,
}

/// Hit and miss counts of one cache, split by reads and writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CacheCounts {
    pub read_accesses: u64,
    pub read_misses: u64,
    pub write_accesses: u64,
    pub write_misses: u64,
    pub writebacks: u64,
}

/// Saved as [`CacheState`] (tags, stamps and dirty bits in arrays of their
/// own, as this was first laid out), so snapshots keep their form.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
#[serde(into = "CacheState", try_from = "CacheState")]
pub struct Cache {
    line_shift: u32,
    set_mask: u64,
    ways: usize,
    /// Per set, its ways' tags (line numbers; INVALID for an empty way),
    /// then their stamps: twice the clock at the last use (LRU) or the
    /// fill (FIFO, random), plus the dirty bit; 0 exactly for an empty
    /// way, so every filled way's (at least 2, and no two alike) orders
    /// after it. A search reads one run of 2 × ways words: one host cache
    /// line for four ways.
    sets: Vec<u64>,
    /// Per set, the way used last: a hit there changes no replacement state
    /// (it is already the most recent), so it needs no search.
    mru: Vec<u8>,
    clock: u64,
    replacement: Replacement,
    rng: u64,
    pub counts: CacheCounts,
}

/// A cache as a snapshot holds it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct CacheState {
    line_shift: u32,
    set_mask: u64,
    ways: usize,
    /// Line numbers, `ways` per set; INVALID = empty.
    tags: Vec<u64>,
    stamps: Vec<u64>,
    dirty: Vec<bool>,
    mru: Vec<u8>,
    clock: u64,
    replacement: Replacement,
    rng: u64,
    counts: CacheCounts,
}

impl From<Cache> for CacheState {
    fn from(c: Cache) -> Self {
        let n = c.mru.len() * c.ways;
        let (mut tags, mut stamps, mut dirty) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for set in c.sets.chunks_exact(2 * c.ways) {
            let (t, st) = set.split_at(c.ways);
            tags.extend_from_slice(t);
            dirty.extend(st.iter().map(|&s| s & 1 == 1));
            stamps.extend(st.iter().map(|&s| s >> 1));
        }
        CacheState {
            line_shift: c.line_shift,
            set_mask: c.set_mask,
            ways: c.ways,
            tags,
            stamps,
            dirty,
            mru: c.mru,
            clock: c.clock,
            replacement: c.replacement,
            rng: c.rng,
            counts: c.counts,
        }
    }
}

impl TryFrom<CacheState> for Cache {
    type Error = String;
    /// A saved cache whose arrays fit its own shape (whether that shape is
    /// the machine's is the restorer's question). An empty way's stamp is
    /// taken as 0 whatever was saved (before this layout, emptying a cache
    /// kept its stamps; an empty way was chosen before any filled one all
    /// the same).
    fn try_from(s: CacheState) -> Result<Self, String> {
        let n = usize::try_from(s.set_mask)
            .ok()
            .and_then(|m| m.checked_add(1))
            .filter(|n| n.is_power_of_two());
        let lines = n.and_then(|n| n.checked_mul(s.ways));
        let fits = s.line_shift < 64
            && (1..=64).contains(&s.ways)
            && n == Some(s.mru.len())
            && lines
                .is_some_and(|l| l == s.tags.len() && l == s.stamps.len() && l == s.dirty.len())
            && s.mru.iter().all(|&w| (w as usize) < s.ways);
        if !fits {
            return Err(format!(
                "a saved cache of {} ways does not fit its own arrays ({} tags, {} sets)",
                s.ways,
                s.tags.len(),
                s.mru.len()
            ));
        }
        let mut sets = Vec::with_capacity(2 * s.tags.len());
        for ((tags, stamps), dirty) in s
            .tags
            .chunks_exact(s.ways)
            .zip(s.stamps.chunks_exact(s.ways))
            .zip(s.dirty.chunks_exact(s.ways))
        {
            sets.extend_from_slice(tags);
            sets.extend(tags.iter().zip(stamps).zip(dirty).map(|((&t, &st), &d)| {
                if t == INVALID {
                    0
                } else {
                    st << 1 | d as u64
                }
            }));
        }
        Ok(Cache {
            line_shift: s.line_shift,
            set_mask: s.set_mask,
            ways: s.ways,
            sets,
            mru: s.mru,
            clock: s.clock,
            replacement: s.replacement,
            rng: s.rng,
            counts: s.counts,
        })
    }
}

impl Cache {
    /// Same geometry and policy (a snapshot's cache fits this one).
    pub(crate) fn same_shape(&self, o: &Cache) -> bool {
        (self.line_shift, self.set_mask, self.ways, self.replacement)
            == (o.line_shift, o.set_mask, o.ways, o.replacement)
            && o.sets.len() == self.sets.len()
            && o.mru.len() == self.mru.len()
    }
    pub fn new(cfg: &CacheConfig) -> Self {
        let (sets, ways) = (cfg.sets() as usize, cfg.ways as usize);
        let mut set = vec![INVALID; ways];
        set.resize(2 * ways, 0);
        Cache {
            line_shift: cfg.line.trailing_zeros(),
            set_mask: cfg.sets() - 1,
            ways,
            sets: set.repeat(sets),
            mru: vec![0; sets],
            clock: 0,
            replacement: cfg.replacement,
            rng: 0x9e37_79b9_7f4a_7c15,
            counts: CacheCounts::default(),
        }
    }

    #[inline(always)]
    pub fn line_shift(&self) -> u32 {
        self.line_shift
    }

    /// Number of sets.
    pub fn sets(&self) -> usize {
        self.set_mask as usize + 1
    }

    /// The set of line number `line` (address >> line shift).
    #[inline(always)]
    pub fn set_of(&self, line: u64) -> usize {
        (line & self.set_mask) as usize
    }

    /// Where set `set`'s tags start in `sets` (its stamps follow them).
    #[inline(always)]
    fn base(&self, set: usize) -> usize {
        set * self.ways * 2
    }

    /// The most recently used way of set `set` as one word: its line
    /// number times two plus its dirty bit, or u64::MAX when the way is
    /// empty (no line number reaches 2^63). An access to that line hits it
    /// and, a load or a store to a dirty line, changes nothing but the
    /// counts.
    #[inline(always)]
    pub fn mru_key(&self, set: usize) -> u64 {
        let i = self.base(set) + self.mru[set] as usize;
        let tag = self.sets[i];
        if tag == INVALID {
            return u64::MAX;
        }
        tag << 1 | self.sets[i + self.ways] & 1
    }

    /// An access that hits the most recently used way of its set (the
    /// common case, with no replacement state to change); false, having
    /// done nothing, otherwise.
    #[inline(always)]
    pub fn mru_hit(&mut self, line: u64, write: bool) -> bool {
        let set = self.set_of(line);
        let i = self.base(set) + self.mru[set] as usize;
        if self.sets[i] != line {
            return false;
        }
        self.sets[i + self.ways] |= write as u64;
        if write {
            self.counts.write_accesses += 1;
        } else {
            self.counts.read_accesses += 1;
        }
        true
    }

    /// An access to line number `line` that hits, in any way, making the
    /// replacement update `access` makes but counting nothing (the caller
    /// counts it); false, having done nothing, on a miss.
    #[inline]
    pub fn hit_uncounted(&mut self, line: u64, write: bool) -> bool {
        let set = self.set_of(line);
        let i = self.base(set) + self.mru[set] as usize;
        if self.sets[i] == line {
            self.sets[i + self.ways] |= write as u64;
            return true;
        }
        // (the 4-way search needs few registers; with the others here
        // every call, a most-recent-way hit too, saved and restored five)
        if self.ways == 4 {
            return self.search::<4, false>(line, set, write).hit;
        }
        self.hit_uncounted_other(line, set, write)
    }

    /// [`Cache::hit_uncounted`]'s search of a set of other than 4 ways.
    #[inline(never)]
    fn hit_uncounted_other(&mut self, line: u64, set: usize, write: bool) -> bool {
        match self.ways {
            8 => self.search::<8, false>(line, set, write).hit,
            _ => self.search::<0, false>(line, set, write).hit,
        }
    }

    /// Access the line holding byte address `pa`.
    #[inline]
    pub fn access(&mut self, pa: u64, write: bool) -> Outcome {
        let line = pa >> self.line_shift;
        let set = self.set_of(line);
        if write {
            self.counts.write_accesses += 1;
        } else {
            self.counts.read_accesses += 1;
        }
        let i = self.base(set) + self.mru[set] as usize;
        if self.sets[i] == line {
            self.sets[i + self.ways] |= write as u64;
            return Outcome {
                hit: true,
                writeback: None,
            };
        }
        self.access_search(line, set, write)
    }

    /// Access the line holding byte address `pa`, which `hit_uncounted`
    /// just found absent, nothing having changed this cache since: the
    /// miss `access` would take, without looking for the line again.
    #[inline(always)]
    pub fn access_absent(&mut self, pa: u64, write: bool) -> Outcome {
        match self.ways {
            4 => self.absent_by_ways::<4>(pa, write),
            8 => self.absent_by_ways::<8>(pa, write),
            _ => self.absent_by_ways::<0>(pa, write),
        }
    }

    /// [`Cache::access_absent`] for `W` ways (0: the cache's own count),
    /// one copy each, so that the common associativities save no more
    /// host registers than their own code uses.
    #[inline(never)]
    fn absent_by_ways<const W: usize>(&mut self, pa: u64, write: bool) -> Outcome {
        let line = pa >> self.line_shift;
        debug_assert!(!self.contains(pa));
        if write {
            self.counts.write_accesses += 1;
        } else {
            self.counts.read_accesses += 1;
        }
        let set = self.set_of(line);
        self.fill::<W>(line, set, write)
    }

    /// An access that missed the MRU way, for the common associativities
    /// with a search of fixed length (unrolled, no bounds checks).
    #[inline(always)]
    fn access_search(&mut self, line: u64, set: usize, write: bool) -> Outcome {
        match self.ways {
            4 => self.search_by_ways::<4>(line, set, write),
            8 => self.search_by_ways::<8>(line, set, write),
            _ => self.search_by_ways::<0>(line, set, write),
        }
    }

    /// [`Cache::access_search`] for `W` ways, one copy each (as
    /// [`Cache::absent_by_ways`]).
    #[inline(never)]
    fn search_by_ways<const W: usize>(&mut self, line: u64, set: usize, write: bool) -> Outcome {
        self.search::<W, true>(line, set, write)
    }

    /// The way of set `set` holding `line` takes the access, else (`FILL`)
    /// a victim does: the first empty way, else by the policy; without
    /// `FILL` a miss changes nothing. `W` ways (0: the cache's own count).
    /// Each pass over the set has no branch on what it finds (which way
    /// hits is data the host cannot predict; a mispredicted early exit was
    /// once most of this function's time), and the victim pass runs only
    /// on a miss.
    #[inline(always)]
    fn search<const W: usize, const FILL: bool>(
        &mut self,
        line: u64,
        set: usize,
        write: bool,
    ) -> Outcome {
        let ways = if W == 0 { self.ways } else { W };
        let base = set * ways * 2;
        let (tags, stamps) = self.sets[base..base + 2 * ways].split_at_mut(ways);
        let hit = way_holding(tags, line);
        if hit != usize::MAX {
            self.clock += 1;
            let dirty = stamps[hit] & 1 | write as u64;
            stamps[hit] = if self.replacement == Replacement::Lru {
                self.clock << 1 | dirty
            } else {
                stamps[hit] | dirty
            };
            self.mru[set] = hit as u8;
            return Outcome {
                hit: true,
                writeback: None,
            };
        }
        if !FILL {
            return Outcome {
                hit: false,
                writeback: None,
            };
        }
        self.fill::<W>(line, set, write)
    }

    /// A miss in set `set` (the line is in none of its ways): a victim
    /// takes the line, the first empty way, else by the policy.
    #[inline(always)]
    fn fill<const W: usize>(&mut self, line: u64, set: usize, write: bool) -> Outcome {
        let ways = if W == 0 { self.ways } else { W };
        let base = set * ways * 2;
        let (tags, stamps) = self.sets[base..base + 2 * ways].split_at_mut(ways);
        self.clock += 1;
        if write {
            self.counts.write_misses += 1;
        } else {
            self.counts.read_misses += 1;
        }
        let (mut victim, oldest) = oldest_way(stamps);
        // random replacement takes only an empty way by the pass
        if oldest != 0 && self.replacement == Replacement::Random {
            // xorshift64 from a fixed seed: the same victims every run
            let mut x = self.rng;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.rng = x;
            victim = (x % ways as u64) as usize;
        }
        // (an empty way's stamp is 0: never dirty)
        let writeback = (stamps[victim] & 1 == 1).then(|| tags[victim] << self.line_shift);
        self.counts.writebacks += writeback.is_some() as u64;
        tags[victim] = line;
        stamps[victim] = self.clock << 1 | write as u64;
        self.mru[set] = victim as u8;
        Outcome {
            hit: false,
            writeback,
        }
    }

    /// Offset in a `Cache` of its count of read accesses.
    pub(crate) fn read_accesses_offset() -> usize {
        std::mem::offset_of!(Cache, counts) + std::mem::offset_of!(CacheCounts, read_accesses)
    }

    /// The hit in any way that translated code makes itself (see
    /// [`crate::InlineL1`]), where this cache is one it describes: four
    /// ways, LRU. The clock's offset in a `Cache`.
    pub(crate) fn inline_any_way(&self) -> Option<usize> {
        (self.ways == 4 && self.replacement == Replacement::Lru)
            .then_some(std::mem::offset_of!(Cache, clock))
    }

    /// Where the sets and the most recent ways are ([`crate::InlineL1`]);
    /// they move only when the cache is replaced (a restore).
    pub(crate) fn sets_addr(&mut self) -> [u64; 2] {
        [self.sets.as_mut_ptr() as u64, self.mru.as_mut_ptr() as u64]
    }

    /// Drop every line (dirty ones are written back without cost).
    pub fn invalidate_all(&mut self) {
        for set in self.sets.chunks_exact_mut(2 * self.ways) {
            let (tags, stamps) = set.split_at_mut(self.ways);
            tags.fill(INVALID);
            stamps.fill(0);
        }
    }

    /// Whether the line holding `pa` is present (no state change).
    pub fn contains(&self, pa: u64) -> bool {
        let line = pa >> self.line_shift;
        let base = self.base(self.set_of(line));
        self.sets[base..base + self.ways].contains(&line)
    }

    /// The cache as a snapshot holds it.
    #[cfg(test)]
    pub(crate) fn state(&self) -> CacheState {
        self.clone().into()
    }
}

/// The way of a set's `tags` holding `line`, or usize::MAX.
#[inline(always)]
fn way_holding(tags: &[u64], line: u64) -> usize {
    let mut hit = usize::MAX;
    for (w, &t) in tags.iter().enumerate() {
        hit = if t == line { w } else { hit };
    }
    hit
}

/// The victim by stamp and its stamp: an empty way (stamp 0) before every
/// filled one, filled ones by stamp (ties, only among empty ways: the
/// first).
#[inline(always)]
fn oldest_way(stamps: &[u64]) -> (usize, u64) {
    let (mut victim, mut oldest) = (0, u64::MAX);
    for (w, &stamp) in stamps.iter().enumerate() {
        let older = stamp < oldest;
        victim = if older { w } else { victim };
        oldest = if older { stamp } else { oldest };
    }
    (victim, oldest)
}

/// Sets whose most recent way [`MruKeys`] copies; a cache with more sets
/// keeps no copy (its test then never holds).
pub const MRU_KEYS: usize = 512;

/// A copy of each set's [`Cache::mru_key`], kept up to date by its owner
/// after every access that may change it, so a hit there is one load at a
/// fixed place (for a model's fast paths and translated code's test of
/// them, see `InlineHooks`).
#[repr(C)]
pub struct MruKeys {
    pub(crate) keys: [u64; MRU_KEYS],
    /// Clears a line number to its index in `keys` (0 when not kept).
    pub(crate) mask: u64,
    kept: bool,
}

impl MruKeys {
    pub fn new(c: &Cache) -> Self {
        let kept = c.sets() <= MRU_KEYS;
        let mut k = MruKeys {
            keys: [u64::MAX; MRU_KEYS],
            mask: if kept { c.set_mask } else { 0 },
            kept,
        };
        k.rebuild(c);
        k
    }

    /// Whether an access to line number `line` hits its set's most recent
    /// way and changes nothing there (a read, or a write to a dirty line).
    #[inline(always)]
    pub fn holds(&self, line: u64, write: bool) -> bool {
        let key = self.keys[(line & self.mask) as usize];
        let want = line << 1 | 1;
        if write {
            key == want
        } else {
            key | 1 == want
        }
    }

    /// After an access to `line` in `c`.
    #[inline(always)]
    pub fn refresh(&mut self, c: &Cache, line: u64) {
        if self.kept {
            let set = c.set_of(line);
            self.keys[set] = c.mru_key(set);
        }
    }

    /// After anything else that changed `c` (a flush, a restore).
    pub fn rebuild(&mut self, c: &Cache) {
        if self.kept {
            for set in 0..c.sets() {
                self.keys[set] = c.mru_key(set);
            }
        }
    }

    /// Offset of the copy in an `MruKeys`, and the index mask.
    pub(crate) fn layout(&self) -> (usize, u64) {
        (std::mem::offset_of!(MruKeys, keys), self.mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(size: u64, ways: u64, line: u64, replacement: Replacement) -> CacheConfig {
        CacheConfig {
            size,
            ways,
            line,
            latency: 1,
            replacement,
        }
    }

    /// The search as first written (early exits, on the saved form's
    /// arrays), for comparison.
    fn reference_search(c: &mut CacheState, line: u64, set_index: usize, write: bool) -> Outcome {
        let base = set_index * c.ways;
        c.clock += 1;
        let set = base..base + c.ways;
        if let Some(w) = c.tags[set.clone()].iter().position(|&t| t == line) {
            let i = base + w;
            if c.replacement == Replacement::Lru {
                c.stamps[i] = c.clock;
            }
            c.dirty[i] |= write;
            c.mru[set_index] = w as u8;
            return Outcome {
                hit: true,
                writeback: None,
            };
        }
        if write {
            c.counts.write_misses += 1;
        } else {
            c.counts.read_misses += 1;
        }
        let victim = match c.tags[set.clone()].iter().position(|&t| t == INVALID) {
            Some(w) => base + w,
            None => match c.replacement {
                Replacement::Lru | Replacement::Fifo => {
                    let mut v = base;
                    for i in set {
                        if c.stamps[i] < c.stamps[v] {
                            v = i;
                        }
                    }
                    v
                }
                Replacement::Random => {
                    // xorshift64 from a fixed seed: the same victims every run
                    let mut x = c.rng;
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    c.rng = x;
                    base + (x % c.ways as u64) as usize
                }
            },
        };
        let writeback =
            (c.tags[victim] != INVALID && c.dirty[victim]).then(|| c.tags[victim] << c.line_shift);
        if writeback.is_some() {
            c.counts.writebacks += 1;
        }
        c.tags[victim] = line;
        c.stamps[victim] = c.clock;
        c.dirty[victim] = write;
        c.mru[set_index] = (victim - base) as u8;
        Outcome {
            hit: false,
            writeback,
        }
    }

    /// `Cache::access` with the reference search.
    fn reference_access(c: &mut CacheState, pa: u64, write: bool) -> Outcome {
        let line = pa >> c.line_shift;
        let set_index = (line & c.set_mask) as usize;
        if write {
            c.counts.write_accesses += 1;
        } else {
            c.counts.read_accesses += 1;
        }
        let i = set_index * c.ways + c.mru[set_index] as usize;
        if c.tags[i] == line {
            c.dirty[i] |= write;
            return Outcome {
                hit: true,
                writeback: None,
            };
        }
        reference_search(c, line, set_index, write)
    }

    /// The reference's emptying, as first written (stamps kept).
    fn reference_invalidate_all(c: &mut CacheState) {
        c.tags.fill(INVALID);
        c.dirty.fill(false);
    }

    /// What the cache's state must equal: the reference's, an empty way's
    /// stamp (which never decides anything) aside.
    fn normalised(c: &CacheState) -> CacheState {
        let mut c = c.clone();
        for (t, s) in c.tags.iter().zip(c.stamps.iter_mut()) {
            if *t == INVALID {
                *s = 0;
            }
        }
        c
    }

    #[test]
    fn the_branch_free_search_decides_as_the_early_exits_did() {
        for replacement in [Replacement::Lru, Replacement::Fifo, Replacement::Random] {
            for ways in [1, 2, 3, 4, 8, 16] {
                let shape = cfg(ways * 4 * 64, ways, 64, replacement);
                let mut c = Cache::new(&shape);
                let mut r = c.state();
                let mut x = 0x9e37_79b9_7f4a_7c15u64;
                let mut misses = 0;
                for step in 0..20_000 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // lines over 3x the cache, more often the low ones
                    let pa = (x % (ways * 12)) * (x >> 60) / 15 * 64;
                    let write = x >> 40 & 3 == 0;
                    let o = c.access(pa, write);
                    assert_eq!(
                        o,
                        reference_access(&mut r, pa, write),
                        "{replacement:?} {ways} ways, step {step}"
                    );
                    misses += !o.hit as u32;
                    if step % 5_000 == 4_999 {
                        c.invalidate_all();
                        reference_invalidate_all(&mut r);
                    }
                    assert!(
                        c.state() == normalised(&r),
                        "{replacement:?} {ways} ways, step {step}"
                    );
                }
                assert!(
                    misses > 1_000 && misses < 19_000,
                    "{replacement:?} {ways}: {misses} misses"
                );
            }
        }
    }

    /// A snapshot holds the cache in its first layout's form: saved and
    /// restored, a cache goes on exactly as one never saved; a state saved
    /// by that layout after emptying (stamps kept) restores with the
    /// empty ways' stamps as 0; arrays that do not fit their own shape are
    /// refused in a sentence, not a panic.
    #[test]
    fn a_saved_cache_goes_on_as_it_was_and_a_misfit_is_refused() {
        let shape = cfg(64 * 4 * 8, 4, 64, Replacement::Lru);
        let (mut a, mut rnd) = (Cache::new(&shape), crate::test_rng(7));
        let step =
            |c: &mut Cache, rnd: &mut dyn FnMut(u64) -> u64| c.access(rnd(64) << 6, rnd(2) == 1);
        for _ in 0..500 {
            step(&mut a, &mut rnd);
        }
        let json = serde_json::to_string(&a).unwrap();
        assert!(
            json.contains("\"tags\"") && json.contains("\"dirty\"") && !json.contains("\"sets\"")
        );
        let mut b: Cache = serde_json::from_str(&json).unwrap();
        let (mut ra, mut rb) = (crate::test_rng(9), crate::test_rng(9));
        for _ in 0..2_000 {
            assert_eq!(step(&mut a, &mut ra), step(&mut b, &mut rb));
            assert!(a.state() == b.state());
        }

        let mut old = a.state();
        reference_invalidate_all(&mut old);
        assert!(old.stamps.iter().any(|&s| s != 0));
        let c = Cache::try_from(old.clone()).unwrap();
        assert!(c.state() == normalised(&old));

        let mut bad = old.clone();
        bad.tags.pop();
        let e = serde_json::from_str::<Cache>(&serde_json::to_string(&bad).unwrap())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("does not fit its own arrays"), "{e}");
        let mut bad = old;
        bad.mru[3] = 4;
        assert!(Cache::try_from(bad).is_err());
    }

    #[test]
    fn lru_keeps_the_recently_used_line() {
        // 2 sets x 2 ways x 64 B: lines 0, 2, 4 all map to set 0
        let mut c = Cache::new(&cfg(256, 2, 64, Replacement::Lru));
        assert!(!c.access(0, false).hit);
        assert!(!c.access(128, false).hit);
        assert!(c.access(0, false).hit); // 0 is now MRU
        assert!(!c.access(256, false).hit); // evicts 128
        assert!(c.contains(0) && !c.contains(128) && c.contains(256));
        assert!(!c.access(64, false).hit && c.contains(0)); // other set untouched
        assert_eq!(c.counts.read_accesses, 5);
        assert_eq!(c.counts.read_misses, 4);
    }

    #[test]
    fn fifo_evicts_the_oldest_fill_even_if_used() {
        let mut c = Cache::new(&cfg(256, 2, 64, Replacement::Fifo));
        c.access(0, false);
        c.access(128, false);
        assert!(c.access(0, false).hit);
        c.access(256, false); // evicts 0, the first filled
        assert!(!c.contains(0) && c.contains(128));
    }

    /// `hit_uncounted` is `access`'s hit, counts aside, and a miss
    /// changes nothing: for every policy and the unrolled and general
    /// associativities, a cache asked it first (and `access_absent` on a
    /// miss) ends each step in the state of one only asked `access`.
    #[test]
    fn a_hit_uncounted_is_accesss_hit_without_its_count() {
        for replacement in [Replacement::Lru, Replacement::Fifo, Replacement::Random] {
            for ways in [2, 4, 8] {
                let shape = cfg(64 * 4 * ways, ways, 64, replacement);
                let (mut a, mut b) = (Cache::new(&shape), Cache::new(&shape));
                let mut rnd = crate::test_rng(0x2545_f491_4f6c_dd1d);
                let (mut hits, mut misses) = (0, 0);
                for step in 0..20_000 {
                    let (line, write) = (rnd(6 * ways), rnd(2) == 1);
                    let o = b.access(line << 6, write);
                    if a.hit_uncounted(line, write) {
                        hits += 1;
                        assert!(o.hit, "step {step}: a hit where access missed");
                        if write {
                            a.counts.write_accesses += 1;
                        } else {
                            a.counts.read_accesses += 1;
                        }
                    } else {
                        // (the miss taken without looking again)
                        misses += 1;
                        assert_eq!(a.access_absent(line << 6, write), o, "step {step}");
                    }
                    assert!(
                        a.state() == b.state(),
                        "step {step}: {replacement:?}, {ways} ways"
                    );
                }
                assert!(hits > 1000 && misses > 1000, "{hits} hits, {misses} misses");
            }
        }
    }

    #[test]
    fn dirty_lines_are_written_back_on_eviction() {
        let mut c = Cache::new(&cfg(64, 1, 64, Replacement::Lru));
        assert_eq!(
            c.access(0x1000, true),
            Outcome {
                hit: false,
                writeback: None
            }
        );
        assert_eq!(
            c.access(0x2000, false),
            Outcome {
                hit: false,
                writeback: Some(0x1000)
            }
        );
        assert_eq!(
            c.access(0x3000, false),
            Outcome {
                hit: false,
                writeback: None
            }
        );
        assert_eq!(c.counts.writebacks, 1);
        assert_eq!((c.counts.write_accesses, c.counts.write_misses), (1, 1));
    }

    #[test]
    fn random_replacement_is_the_same_every_time() {
        let run = || {
            let mut c = Cache::new(&cfg(1024, 4, 64, Replacement::Random));
            (0..1000u64)
                .filter(|i| c.access((i * 7919) % 8192 * 64, false).hit)
                .count()
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn a_cyclic_sweep_larger_than_the_cache_always_misses_under_lru() {
        let mut c = Cache::new(&cfg(4096, 4, 64, Replacement::Lru));
        for round in 0..3 {
            let hits = (0..128u64).filter(|i| c.access(i * 64, false).hit).count();
            assert_eq!(hits, 0, "round {round}");
        }
        let mut c = Cache::new(&cfg(4096, 4, 64, Replacement::Lru));
        for _ in 0..2 {
            (0..64u64).for_each(|i| {
                c.access(i * 64, false);
            });
        }
        assert_eq!(
            c.counts.read_misses, 64,
            "a sweep that fits misses only the first time"
        );
    }

    /// `MruKeys::holds` is exactly "the line is its set's most recent way,
    /// and a write finds it dirty" (what `mru_hit` takes without changing
    /// anything but the counts), kept by `refresh` after each access; a
    /// cache with more sets than it copies never holds.
    #[test]
    fn the_most_recent_way_copies_say_what_the_cache_holds() {
        for replacement in [Replacement::Lru, Replacement::Fifo, Replacement::Random] {
            let mut c = Cache::new(&cfg(1024, 2, 64, replacement));
            let mut k = MruKeys::new(&c);
            let mut x = 0x2545_f491_4f6c_dd1du64;
            let (mut held, mut not) = (0, 0);
            for step in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let (line, write) = (x % 40, x >> 40 & 1 == 1);
                let (s, set) = (c.state(), c.set_of(line));
                let i = set * s.ways + s.mru[set] as usize;
                let truth = s.tags[i] == line && (!write || s.dirty[i]);
                assert_eq!(k.holds(line, write), truth, "step {step}: {replacement:?}");
                held += truth as u32;
                not += !truth as u32;
                c.access(line << 6, write);
                k.refresh(&c, line);
            }
            assert!(held > 1000 && not > 1000, "{held} held, {not} not");
        }
        let big = Cache::new(&cfg(64 * 2 * 2 * MRU_KEYS as u64, 2, 64, Replacement::Lru));
        let mut c = big;
        let k = MruKeys::new(&c);
        c.access(0, false);
        assert!(c.mru_hit(0, false));
        assert!(!k.holds(0, false), "more sets than copied: never holds");
    }
}
