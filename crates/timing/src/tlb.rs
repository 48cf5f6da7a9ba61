//! A fully associative, LRU TLB of pages of any size, and a direct-mapped
//! second-level TLB.
//!
//! Entries are keyed by the virtual page (the hooks give the model each
//! access's virtual address, and the pc for fetches). They carry no address
//! space: the TLBs are flushed on `sfence.vma` and `satp` writes, as the
//! hart's own is. The page size comes from the hart's page walks (see
//! `inorder`).

// (`repr(C)`: translated code reads and writes entries, see `InlineTlb`)
#[derive(Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
#[repr(C)]
struct Entry {
    /// Page base | 1 (0 = empty).
    base: u64,
    /// Page offset bits (size - 1).
    mask: u64,
    stamp: u64,
}

/// Slots of the direct-mapped index from 4 KiB page number to entry.
const INDEX: usize = 256;
// (`InlineTlb` says 256: translated code indexes by the page number's low byte)
const _: () = assert!(INDEX == 256);

/// One of the two most recently used entries, with the test for it:
/// `va | mask == span` exactly when the entry holds `va` (an empty entry,
/// or no second one: never). Kept beside the entries so translated code
/// tests both with loads at fixed offsets and, on a hit in the second,
/// swaps the two records (see `InlineTlb`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(C)]
pub(crate) struct Recent {
    pub(crate) mask: u64,
    pub(crate) span: u64,
    /// Its index in `entries`.
    entry: u64,
}

// (the inline contract's 24-byte records)
const _: () = assert!(std::mem::size_of::<Recent>() == 24);

impl Recent {
    fn of(entries: &[Entry], i: usize, none: bool) -> Recent {
        let e = &entries[i];
        if none || e.base == 0 {
            return Recent {
                mask: u64::MAX,
                span: 0,
                entry: i as u64,
            };
        }
        Recent {
            mask: e.mask,
            span: (e.base & !1) | e.mask,
            entry: i as u64,
        }
    }
    #[inline(always)]
    fn holds(&self, va: u64) -> bool {
        va | self.mask == self.span
    }
}

/// A fully associative TLB with exact LRU replacement.
///
/// The LRU order is the two entries in `recent` (most recent first), then
/// the others by their stamps, newest first. A hit in the second of the
/// two only swaps them (the usual case after the most recent: code going
/// back and forth between its stack and one data page), so it is cheap
/// enough to be done inline by translated code; the two stamps are
/// brought up to date (`settle`) only before the order below them matters.
pub struct Tlb {
    entries: Vec<Entry>,
    clock: u64,
    pub(crate) recent: [Recent; 2],
    /// A hint, not state: which entry held each 4 KiB page when last looked
    /// up (checked before use, so a stale hint only costs a search).
    index: [u16; INDEX],
    pub accesses: u64,
    pub misses: u64,
}

/// What a snapshot keeps of a [`Tlb`] (`recent`'s tests are derived).
#[derive(serde::Serialize, serde::Deserialize)]
struct SavedTlb<'a> {
    entries: std::borrow::Cow<'a, [Entry]>,
    clock: u64,
    /// The most recently used entry.
    last: usize,
    /// The second most recently used (`last` when there is none). Absent
    /// from snapshots made before it was kept, whose stamps give it.
    #[serde(default = "SavedTlb::unknown")]
    prev: usize,
    #[serde(with = "hs_snapshot::state::array")]
    index: [u16; INDEX],
    accesses: u64,
    misses: u64,
}

impl SavedTlb<'_> {
    fn unknown() -> usize {
        usize::MAX
    }
}

impl serde::Serialize for Tlb {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        SavedTlb {
            entries: std::borrow::Cow::Borrowed(&self.entries),
            clock: self.clock,
            last: self.last(),
            prev: self.prev(),
            index: self.index,
            accesses: self.accesses,
            misses: self.misses,
        }
        .serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Tlb {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let s = SavedTlb::deserialize(d)?;
        let entries = s.entries.into_owned();
        let n = entries.len();
        if n == 0 || s.last >= n || (s.prev >= n && s.prev != SavedTlb::unknown()) {
            return Err(D::Error::custom(format!(
                "a TLB of {n} entries with most recent entries {} and {}",
                s.last, s.prev
            )));
        }
        let prev = if s.prev == SavedTlb::unknown() {
            // (stamps were exact then: the newest after `last`)
            (0..n)
                .filter(|&i| i != s.last && entries[i].base != 0)
                .max_by_key(|&i| entries[i].stamp)
                .unwrap_or(s.last)
        } else {
            s.prev
        };
        let mut t = Tlb {
            recent: [Recent::of(&entries, s.last, false); 2],
            entries,
            clock: s.clock,
            index: s.index,
            accesses: s.accesses,
            misses: s.misses,
        };
        t.recent[1].entry = prev as u64;
        t.refresh_recent();
        Ok(t)
    }
}

impl Tlb {
    /// Same number of entries, with the index hints in range.
    pub(crate) fn same_shape(&self, o: &Tlb) -> bool {
        o.entries.len() == self.entries.len()
            && o.index
                .iter()
                .all(|&i| (i as usize) < o.entries.len().max(1))
    }
    pub fn new(n: usize) -> Self {
        let entries = vec![Entry::default(); n.max(1)];
        Tlb {
            recent: [Recent::of(&entries, 0, true); 2],
            entries,
            clock: 0,
            index: [0; INDEX],
            accesses: 0,
            misses: 0,
        }
    }

    #[inline(always)]
    fn matches(e: &Entry, va: u64) -> bool {
        (va & !e.mask) | 1 == e.base
    }

    fn last(&self) -> usize {
        self.recent[0].entry as usize
    }
    fn prev(&self) -> usize {
        self.recent[1].entry as usize
    }

    /// Whether one of the two most recent entries holds `va`: a hit there
    /// changes nothing but the access count and, in the second, the order
    /// of the two, which this makes (so that it is then the most recent).
    #[inline(always)]
    fn touch_recent(&mut self, va: u64) -> bool {
        if self.recent[0].holds(va) {
            return true;
        }
        if self.recent[1].holds(va) {
            self.recent.swap(0, 1);
            return true;
        }
        false
    }

    /// Rebuild the two tests from the entries they name (after anything
    /// that changed an entry, and after a restore).
    pub(crate) fn refresh_recent(&mut self) {
        let (last, prev) = (self.last(), self.prev());
        self.recent = [
            Recent::of(&self.entries, last, false),
            Recent::of(&self.entries, prev, prev == last),
        ];
    }

    /// Offset of the access count in a `Tlb`.
    pub(crate) fn accesses_offset() -> usize {
        std::mem::offset_of!(Tlb, accesses)
    }

    /// The TLB's [`crate::InlineTlb`], for one `at` bytes into its model.
    pub(crate) fn inline(&self, at: usize) -> crate::InlineTlb {
        use std::mem::offset_of;
        crate::InlineTlb {
            recent: at + offset_of!(Tlb, recent),
            index: at + offset_of!(Tlb, index),
            clock: at + offset_of!(Tlb, clock),
            entries: self.entries.len(),
        }
    }

    /// Where the entries are (see [`crate::InlineTlb`]); they move only
    /// when the TLB is replaced (a restore).
    pub(crate) fn entries_addr(&mut self) -> u64 {
        self.entries.as_mut_ptr() as u64
    }

    /// Give the two most recent entries stamps newer than all others, in
    /// their order (hits in them do not keep their stamps up to date).
    fn settle(&mut self) {
        let (last, prev) = (self.last(), self.prev());
        if prev != last {
            self.entries[prev].stamp = self.clock + 1;
            self.entries[last].stamp = self.clock + 2;
            self.clock += 2;
        }
    }

    /// Entry `i` was just used: it becomes the most recent.
    fn promote(&mut self, i: usize) {
        let last = self.last();
        if i == last {
            return;
        }
        if i == self.prev() {
            self.recent.swap(0, 1);
            return;
        }
        self.settle();
        // (no entry changed since both records were built: the first is
        // the entry it names, as it stands)
        debug_assert!(self.recent[0] == Recent::of(&self.entries, last, false));
        self.make_most_recent(i);
    }

    /// Entry `i` becomes the most recent and the most recent the second
    /// (the two's stamps already settled). The second record is the first
    /// as it was: a caller that changed an entry rebuilds both after
    /// (`refresh_recent`).
    fn make_most_recent(&mut self, i: usize) {
        self.clock += 1;
        self.entries[i].stamp = self.clock;
        self.recent = [Recent::of(&self.entries, i, false), self.recent[0]];
    }

    /// Whether one of the two most recent entries holds `va`, or the entry
    /// the index names for its 4 KiB page (how most other hits are found):
    /// `lookup`'s hit without its search, making its LRU update (as
    /// `InlineTlb` describes it) but not counting it. False, having done
    /// nothing, otherwise.
    #[inline(always)]
    pub fn recent_or_indexed(&mut self, va: u64) -> bool {
        if self.touch_recent(va) {
            return true;
        }
        let slot = (va >> 12) as usize % INDEX;
        let i = self.index[slot] as usize;
        match self.entries.get(i) {
            Some(e) if Self::matches(e, va) => {
                self.promote(i);
                true
            }
            _ => false,
        }
    }

    /// [`Tlb::recent_or_indexed`], counted: `lookup`'s hit, without its
    /// search. False, having done nothing, otherwise.
    #[inline(always)]
    pub fn quick_hit(&mut self, va: u64) -> bool {
        let hit = self.recent_or_indexed(va);
        self.accesses += hit as u64;
        hit
    }

    /// Look `va` up; true on a hit.
    #[inline]
    pub fn lookup(&mut self, va: u64) -> bool {
        self.accesses += 1;
        if self.touch_recent(va) {
            return true;
        }
        let slot = (va >> 12) as usize % INDEX;
        let hint = self.index[slot] as usize;
        let found = if hint < self.entries.len() && Self::matches(&self.entries[hint], va) {
            Some(hint)
        } else {
            self.entries.iter().position(|e| Self::matches(e, va))
        };
        if let Some(i) = found {
            self.promote(i);
            self.index[slot] = i as u16;
            return true;
        }
        self.misses += 1;
        false
    }

    /// Fill the page holding `va`, `1 << shift` bytes large, replacing the
    /// first empty entry, else the least recently used.
    pub fn fill(&mut self, va: u64, shift: u32) {
        self.settle();
        let mask = (1u64 << shift) - 1;
        let mut v = 0;
        for (i, e) in self.entries.iter().enumerate() {
            if e.base == 0 {
                v = i;
                break;
            }
            if e.stamp < self.entries[v].stamp {
                v = i;
            }
        }
        self.entries[v] = Entry {
            base: (va & !mask) | 1,
            mask,
            stamp: self.entries[v].stamp,
        };
        // (settled above; where the victim was the most recent entry itself,
        // an empty one or the only one, `refresh_recent` leaves no second)
        self.make_most_recent(v);
        self.refresh_recent();
        self.index[(va >> 12) as usize % INDEX] = v as u16;
    }

    pub fn flush(&mut self) {
        self.entries.fill(Entry::default());
        self.refresh_recent();
    }
}

/// A direct-mapped second-level TLB (the U74's 512-entry L2 TLB), looked
/// up after a first-level miss: indexed by the 4 KiB virtual page number,
/// one entry per slot, any page size. A page larger than 4 KiB is filled at
/// the slot of the page number that missed, so another part of it misses
/// once more; the manual does not say how the core indexes large pages.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct L2Tlb {
    slots: Vec<Entry>,
    pub accesses: u64,
    pub misses: u64,
}

impl L2Tlb {
    pub fn new(n: usize) -> Self {
        L2Tlb {
            slots: vec![Entry::default(); n.max(1)],
            accesses: 0,
            misses: 0,
        }
    }

    pub(crate) fn same_shape(&self, o: &L2Tlb) -> bool {
        o.slots.len() == self.slots.len()
            && o.slots
                .iter()
                .all(|e| e.base == 0 || (e.mask + 1).is_power_of_two())
    }

    fn slot(&self, va: u64) -> usize {
        (va >> 12) as usize % self.slots.len()
    }

    /// Look `va` up: the page shift of the entry that holds it, or None.
    pub fn lookup(&mut self, va: u64) -> Option<u32> {
        self.accesses += 1;
        let e = &self.slots[self.slot(va)];
        if e.base != 0 && Tlb::matches(e, va) {
            return Some((e.mask + 1).trailing_zeros());
        }
        self.misses += 1;
        None
    }

    /// Fill the page holding `va`, `1 << shift` bytes large.
    pub fn fill(&mut self, va: u64, shift: u32) {
        let mask = (1u64 << shift) - 1;
        let i = self.slot(va);
        self.slots[i] = Entry {
            base: (va & !mask) | 1,
            mask,
            stamp: 0,
        };
    }

    pub fn flush(&mut self) {
        self.slots.fill(Entry::default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_within_the_page_size_and_evicts_lru() {
        let mut t = Tlb::new(2);
        assert!(!t.lookup(0x8000_1234));
        t.fill(0x8000_1234, 12);
        assert!(t.lookup(0x8000_1fff) && !t.lookup(0x8000_2000));
        t.fill(0x8020_0000, 21); // a 2 MiB page
        assert!(t.lookup(0x803f_fff8));
        assert!(t.lookup(0x8000_1000)); // 4K page now MRU
        t.fill(0x9000_0000, 12); // evicts the 2 MiB page
        assert!(!t.lookup(0x8020_0000) && t.lookup(0x8000_1000) && t.lookup(0x9000_0abc));
        t.flush();
        assert!(!t.lookup(0x8000_1000));
        assert_eq!((t.accesses, t.misses), (9, 4));
    }

    /// Everything a TLB holds, the index hints included.
    type State = (Vec<(u64, u64, u64)>, u64, [Recent; 2], Vec<u16>, u64, u64);
    fn state(t: &Tlb) -> State {
        let e = t
            .entries
            .iter()
            .map(|e| (e.base, e.mask, e.stamp))
            .collect();
        (e, t.clock, t.recent, t.index.to_vec(), t.accesses, t.misses)
    }

    #[test]
    fn a_quick_hit_is_exactly_a_lookups_hit() {
        // the model's way (quick_hit, else lookup) against lookup alone
        let (mut quick, mut plain) = (Tlb::new(8), Tlb::new(8));
        let (mut x, mut by_index) = (0x2545_f491_4f6c_dd1du64, 0);
        for step in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // 12 pages of 4 KiB and 2 of 2 MiB, some sharing an index slot
            let page = x % 14;
            let (va, shift) = if page < 12 {
                (
                    0x8000_0000 + (page % 6) * 0x1000 + (page / 6) * 0x10_0000,
                    12,
                )
            } else {
                (
                    0x4000_0000 + (page - 12) * 0x20_0000 + (x >> 40) % 0x20_0000,
                    21,
                )
            };
            let va = va | (x >> 20) & 0xff8;
            assert_eq!(
                quick.recent[0].holds(va),
                Tlb::matches(&quick.entries[quick.last()], va),
                "step {step}: {va:#x}"
            );
            let recent = quick.recent[0].holds(va) || quick.recent[1].holds(va);
            let q = quick.quick_hit(va);
            by_index += (q && !recent) as u32;
            let hit = q || quick.lookup(va);
            assert_eq!(hit, plain.lookup(va), "step {step}: {va:#x}");
            if !hit {
                quick.fill(va, shift);
                plain.fill(va, shift);
            }
            if x % 997 == 0 {
                quick.flush();
                plain.flush();
            }
            assert!(state(&quick) == state(&plain), "step {step}: {va:#x}");
        }
        assert!(by_index > 1000, "only {by_index} hits found by the index");
    }

    /// The LRU a TLB is meant to be, written plainly: each entry's time
    /// of last use, a fill taking the first empty entry, else the one
    /// used longest ago.
    struct PlainLru {
        slots: Vec<Option<(u64, u64, u64)>>,
        now: u64,
    }

    impl PlainLru {
        fn find(&mut self, va: u64) -> bool {
            self.now += 1;
            for (base, mask, used) in self.slots.iter_mut().flatten() {
                if va & !*mask == *base {
                    *used = self.now;
                    return true;
                }
            }
            false
        }
        fn fill(&mut self, va: u64, shift: u32) -> usize {
            self.now += 1;
            let mask = (1u64 << shift) - 1;
            let v = self
                .slots
                .iter()
                .position(|s| s.is_none())
                .unwrap_or_else(|| {
                    (0..self.slots.len())
                        .min_by_key(|&i| self.slots[i].map_or(0, |s| s.2))
                        .unwrap()
                });
            self.slots[v] = Some((va & !mask, mask, self.now));
            v
        }
    }

    #[test]
    fn hits_in_the_two_most_recent_keep_the_order_of_a_plain_lru() {
        // Every way of hitting (the inline pair test, quick_hit, lookup),
        // fills and flushes, on TLBs of 1 to 6 entries: the same hits and
        // the same entry replaced as an LRU that stamps every use.
        let mut rnd = crate::test_rng(0x853c_49e6_748f_ea9bu64);
        let mut second_hits = 0;
        for n in 1..=6usize {
            let mut t = Tlb::new(n);
            let mut lru = PlainLru {
                slots: vec![None; n],
                now: 0,
            };
            for step in 0..40_000 {
                // a working set of n + 2 pages, mostly two of them in turn
                let page = if rnd(4) != 0 {
                    rnd(2)
                } else {
                    rnd(n as u64 + 2)
                };
                let (va, shift) = if page == 3 {
                    (0x4000_0000 + rnd(0x20_0000), 21)
                } else {
                    (0x8000_0000 + page * 0x1000 + rnd(0x1000), 12)
                };
                let was_second = t.recent[1].holds(va) && !t.recent[0].holds(va);
                let hit = match rnd(3) {
                    0 => t.touch_recent(va) || t.lookup(va),
                    1 => t.quick_hit(va) || t.lookup(va),
                    _ => t.lookup(va),
                };
                second_hits += was_second as u32;
                assert_eq!(hit, lru.find(va), "{n} entries, step {step}: {va:#x}");
                if !hit {
                    t.fill(va, shift);
                    let v = lru.fill(va, shift);
                    assert_eq!(t.last(), v, "{n} entries, step {step}: the entry replaced");
                }
                // the pair's tests are its entries'
                assert!(t.recent[0].holds(va), "{n} entries, step {step}");
                if rnd(5_000) == 0 {
                    t.flush();
                    lru.slots.fill(None);
                }
            }
        }
        assert!(
            second_hits > 10_000,
            "only {second_hits} hits in the second"
        );
    }

    #[test]
    fn a_saved_tlb_comes_back_the_same_and_an_old_one_finds_its_second() {
        let mut t = Tlb::new(4);
        for va in [0x1000, 0x2000, 0x3000, 0x1000, 0x4000, 0x2000] {
            if !t.lookup(va) {
                t.fill(va, 12);
            }
        }
        assert!(t.touch_recent(0x4000)); // the second: now the first
        let json = serde_json::to_string(&t).unwrap();
        let back: Tlb = serde_json::from_str(&json).unwrap();
        assert!(state(&back) == state(&t));
        // a snapshot from before `prev` was kept: exact stamps name it
        let mut old: serde_json::Value = serde_json::from_str(&json).unwrap();
        old.as_object_mut().unwrap().remove("prev");
        t.settle();
        old["entries"] = serde_json::to_value(&t.entries).unwrap();
        old["clock"] = t.clock.into();
        let back: Tlb = serde_json::from_value(old.clone()).unwrap();
        assert_eq!((back.last(), back.prev()), (t.last(), t.prev()));
        // an entry out of range is refused, not trusted
        old["last"] = 9.into();
        let e = serde_json::from_value::<Tlb>(old)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("4 entries"), "{e}");
    }

    #[test]
    fn the_second_level_is_direct_mapped_by_4k_page_number() {
        let mut t = L2Tlb::new(4);
        assert_eq!(t.lookup(0x1000), None);
        t.fill(0x1234, 12);
        assert_eq!(t.lookup(0x1ff8), Some(12));
        // 0x5000 has the same slot (page 5 % 4 == 1): it replaces page 1
        t.fill(0x5000, 12);
        assert_eq!((t.lookup(0x1000), t.lookup(0x5008)), (None, Some(12)));
        // a 2 MiB page lives in the slot of the page that missed
        t.fill(0x4020_3000, 21);
        assert_eq!(t.lookup(0x4020_3ff0), Some(21));
        assert_eq!(t.lookup(0x4020_0000), None); // slot 0: never filled
        t.flush();
        assert_eq!(t.lookup(0x4020_3ff0), None);
        assert_eq!((t.accesses, t.misses), (7, 4));
    }
}
