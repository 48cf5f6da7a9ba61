//! A fully associative, LRU TLB of pages of any size.
//!
//! The hooks give the model physical addresses only (and the pc for
//! fetches), so entries are keyed by the physical page: within one address
//! space a physical page has one virtual mapping in the common case, and
//! the TLB is flushed on `sfence.vma` and `satp` writes as the hart's own
//! is. The page size comes from the hart's page walks (see `inorder`).

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

#[derive(serde::Serialize, serde::Deserialize)]
pub struct Tlb {
    entries: Vec<Entry>,
    clock: u64,
    /// The entry that hit last (exact for LRU: it is already the most recent).
    last: usize,
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
            index: [0; INDEX],
            accesses: 0,
            misses: 0,
        }
    }

    #[inline(always)]
    fn matches(e: &Entry, pa: u64) -> bool {
        (pa & !e.mask) | 1 == e.base
    }

    /// A lookup that hits the entry that hit last; false, having done
    /// nothing, otherwise.
    #[inline(always)]
    pub fn last_hit(&mut self, pa: u64) -> bool {
        if Self::matches(&self.entries[self.last], pa) {
            self.accesses += 1;
            return true;
        }
        false
    }

    /// Look `pa` up; true on a hit.
    #[inline]
    pub fn lookup(&mut self, pa: u64) -> bool {
        self.accesses += 1;
        if Self::matches(&self.entries[self.last], pa) {
            return true;
        }
        self.clock += 1;
        let slot = (pa >> 12) as usize % INDEX;
        let hint = self.index[slot] as usize;
        let found = if hint < self.entries.len() && Self::matches(&self.entries[hint], pa) {
            Some(hint)
        } else {
            self.entries.iter().position(|e| Self::matches(e, pa))
        };
        if let Some(i) = found {
            self.entries[i].stamp = self.clock;
            self.last = i;
            self.index[slot] = i as u16;
            return true;
        }
        self.misses += 1;
        false
    }

    /// Fill the page holding `pa`, `1 << shift` bytes large, replacing the LRU entry.
    pub fn fill(&mut self, pa: u64, shift: u32) {
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
            base: (pa & !mask) | 1,
            mask,
            stamp: self.clock,
        };
        self.last = v;
        self.index[(pa >> 12) as usize % INDEX] = v as u16;
    }

    pub fn flush(&mut self) {
        self.entries.fill(Entry::default());
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
}
