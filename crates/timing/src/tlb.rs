//! A fully associative, LRU TLB of pages of any size, and a direct-mapped
//! second-level TLB.
//!
//! Entries are keyed by the virtual page (the hooks give the model each
//! access's virtual address, and the pc for fetches). They carry no address
//! space: the TLBs are flushed on `sfence.vma` and `satp` writes, as the
//! hart's own is. The page size comes from the hart's page walks (see
//! `inorder`).

#[derive(Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
struct Entry {
    /// Page base | 1 (0 = empty).
    base: u64,
    /// Page offset bits (size - 1).
    mask: u64,
    stamp: u64,
}

/// Slots of the direct-mapped index from 4 KiB page number to entry.
const INDEX: usize = 256;

/// The entry that hit last, as one test: `va | mask == span` exactly when
/// it holds `va` (an empty entry: never). A copy kept beside `last`, so
/// translated code tests it with two loads at fixed offsets (see
/// `InlineHooks::mem_tlb_mask`).
#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct LastSpan {
    pub(crate) mask: u64,
    pub(crate) span: u64,
}

impl LastSpan {
    const EMPTY: LastSpan = LastSpan {
        mask: u64::MAX,
        span: 0,
    };
    fn of(e: &Entry) -> LastSpan {
        if e.base == 0 {
            return LastSpan::EMPTY;
        }
        LastSpan {
            mask: e.mask,
            span: (e.base & !1) | e.mask,
        }
    }
}

impl Default for LastSpan {
    fn default() -> Self {
        LastSpan::EMPTY
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
pub struct Tlb {
    entries: Vec<Entry>,
    clock: u64,
    /// The entry that hit last (exact for LRU: it is already the most recent).
    last: usize,
    /// `last`'s entry as one test (derived: rebuilt by `refresh_last`).
    #[serde(skip)]
    pub(crate) last_span: LastSpan,
    /// A hint, not state: which entry held each 4 KiB page when last looked
    /// up (checked before use, so a stale hint only costs a search).
    #[serde(with = "hs_snapshot::state::array")]
    index: [u16; INDEX],
    pub accesses: u64,
    pub misses: u64,
}

impl Tlb {
    /// Same number of entries, with `last` and the index hints in range.
    pub(crate) fn same_shape(&self, o: &Tlb) -> bool {
        o.entries.len() == self.entries.len()
            && o.last < o.entries.len().max(1)
            && o.index
                .iter()
                .all(|&i| (i as usize) < o.entries.len().max(1))
    }
    pub fn new(n: usize) -> Self {
        Tlb {
            entries: vec![Entry::default(); n.max(1)],
            clock: 0,
            last: 0,
            last_span: LastSpan::EMPTY,
            index: [0; INDEX],
            accesses: 0,
            misses: 0,
        }
    }

    #[inline(always)]
    fn matches(e: &Entry, va: u64) -> bool {
        (va & !e.mask) | 1 == e.base
    }

    /// Whether the entry that hit last holds `va` (no state change): a
    /// hit there changes nothing but the access count.
    #[inline(always)]
    pub fn last_holds(&self, va: u64) -> bool {
        va | self.last_span.mask == self.last_span.span
    }

    #[inline(always)]
    fn set_last(&mut self, i: usize) {
        self.last = i;
        self.last_span = LastSpan::of(&self.entries[i]);
    }

    /// Byte offsets of `last_span`'s mask and span in a `Tlb`.
    pub(crate) fn last_span_offsets() -> (usize, usize) {
        use std::mem::offset_of;
        let at = offset_of!(Tlb, last_span);
        (
            at + offset_of!(LastSpan, mask),
            at + offset_of!(LastSpan, span),
        )
    }

    /// Rebuild what is derived from the entries (after a restore).
    pub(crate) fn refresh_last(&mut self) {
        self.set_last(self.last);
    }

    /// A lookup that hits the entry that hit last; false, having done
    /// nothing, otherwise.
    #[inline(always)]
    pub fn last_hit(&mut self, va: u64) -> bool {
        if self.last_holds(va) {
            self.accesses += 1;
            return true;
        }
        false
    }

    /// A lookup that hits the last entry, or the entry the index names
    /// for `va`'s 4 KiB page (how most other hits are found): `lookup`'s
    /// hit, without its search. False, having done nothing, otherwise.
    #[inline(always)]
    pub fn quick_hit(&mut self, va: u64) -> bool {
        if self.last_hit(va) {
            return true;
        }
        let slot = (va >> 12) as usize % INDEX;
        let i = self.index[slot] as usize;
        match self.entries.get_mut(i) {
            Some(e) if Self::matches(e, va) => {
                self.accesses += 1;
                self.clock += 1;
                e.stamp = self.clock;
                self.set_last(i);
                true
            }
            _ => false,
        }
    }

    /// Look `va` up; true on a hit.
    #[inline]
    pub fn lookup(&mut self, va: u64) -> bool {
        self.accesses += 1;
        if Self::matches(&self.entries[self.last], va) {
            return true;
        }
        self.clock += 1;
        let slot = (va >> 12) as usize % INDEX;
        let hint = self.index[slot] as usize;
        let found = if hint < self.entries.len() && Self::matches(&self.entries[hint], va) {
            Some(hint)
        } else {
            self.entries.iter().position(|e| Self::matches(e, va))
        };
        if let Some(i) = found {
            self.entries[i].stamp = self.clock;
            self.set_last(i);
            self.index[slot] = i as u16;
            return true;
        }
        self.misses += 1;
        false
    }

    /// Fill the page holding `va`, `1 << shift` bytes large, replacing the LRU entry.
    pub fn fill(&mut self, va: u64, shift: u32) {
        self.clock += 1;
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
            stamp: self.clock,
        };
        self.set_last(v);
        self.index[(va >> 12) as usize % INDEX] = v as u16;
    }

    pub fn flush(&mut self) {
        self.entries.fill(Entry::default());
        self.last_span = LastSpan::EMPTY;
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
    fn state(t: &Tlb) -> (Vec<(u64, u64, u64)>, u64, usize, Vec<u16>, u64, u64) {
        let e = t
            .entries
            .iter()
            .map(|e| (e.base, e.mask, e.stamp))
            .collect();
        (e, t.clock, t.last, t.index.to_vec(), t.accesses, t.misses)
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
                quick.last_holds(va),
                Tlb::matches(&quick.entries[quick.last], va),
                "step {step}: {va:#x}"
            );
            let last = quick.last_hit(va);
            let q = last || quick.quick_hit(va);
            by_index += (q && !last) as u32;
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
