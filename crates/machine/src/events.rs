//! Timed callbacks: ordered by cycle, ties broken by insertion order, so two
//! runs of the same machine fire the same events in the same order.
//!
//! Each event has a key (device slot + token). Scheduling a key that is
//! already pending moves it: a device re-arming its timer never piles up
//! stale entries, so the guest cannot grow the queue without bound.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

#[derive(Debug)]
pub struct EventQueue<K: Copy + Eq + Hash> {
    /// (cycle, insertion sequence) → key. Only this map is ever iterated.
    order: BTreeMap<(u64, u64), K>,
    /// key → its position in `order`, for replacement (lookups only).
    pending: HashMap<K, (u64, u64)>,
    next_seq: u64,
}

impl<K: Copy + Eq + Hash> Default for EventQueue<K> {
    fn default() -> Self {
        Self {
            order: BTreeMap::new(),
            pending: HashMap::new(),
            next_seq: 0,
        }
    }
}

impl<K: Copy + Eq + Hash> EventQueue<K> {
    pub fn new() -> Self {
        Self::default()
    }
    /// Schedule `key` at `cycle`, replacing a pending event with the same key.
    pub fn push(&mut self, cycle: u64, key: K) {
        if let Some(old) = self.pending.remove(&key) {
            self.order.remove(&old);
        }
        let pos = (cycle, self.next_seq);
        self.next_seq += 1;
        self.order.insert(pos, key);
        self.pending.insert(key, pos);
    }
    /// Cycle of the earliest event.
    pub fn next_cycle(&self) -> Option<u64> {
        self.order.keys().next().map(|&(c, _)| c)
    }
    /// Remove and return the earliest event if it is due at or before `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<(u64, K)> {
        let (&(cycle, seq), _) = self.order.iter().next()?;
        if cycle > now {
            return None;
        }
        let key = self.order.remove(&(cycle, seq))?;
        self.pending.remove(&key);
        Some((cycle, key))
    }
    pub fn len(&self) -> usize {
        self.order.len()
    }
    /// Every pending event with its place in the order, for a snapshot.
    pub fn entries(&self) -> Vec<((u64, u64), K)> {
        self.order.iter().map(|(p, k)| (*p, *k)).collect()
    }
    /// A queue holding what [`EventQueue::entries`] gave (a key given twice
    /// keeps its later place, as a re-armed event would).
    pub fn from_entries(entries: Vec<((u64, u64), K)>) -> Self {
        let mut q = Self::default();
        for (pos, key) in entries {
            if let Some(old) = q.pending.insert(key, pos) {
                q.order.remove(&old);
            }
            if let Some(other) = q.order.insert(pos, key) {
                if other != key {
                    q.pending.remove(&other); // two events at one place: the later one stays
                }
            }
            q.next_seq = q.next_seq.max(pos.1.saturating_add(1));
        }
        q
    }
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_by_cycle_then_insertion() {
        let mut q = EventQueue::new();
        q.push(50, "c");
        q.push(10, "a");
        q.push(50, "d");
        q.push(10, "b");
        q.push(99, "e");
        assert_eq!(q.next_cycle(), Some(10));
        assert_eq!(q.pop_due(9), None);
        let mut got = Vec::new();
        while let Some((c, x)) = q.pop_due(60) {
            got.push((c, x));
        }
        assert_eq!(got, vec![(10, "a"), (10, "b"), (50, "c"), (50, "d")]);
        assert_eq!(q.len(), 1);
    }

    #[test]
    fn rescheduling_a_key_moves_it() {
        let mut q = EventQueue::new();
        for c in (0..1000).rev() {
            q.push(1000 + c, "timer");
        }
        assert_eq!(q.len(), 1, "re-arming never piles up entries");
        assert_eq!(q.next_cycle(), Some(1000));
        q.push(5, "other");
        q.push(7, "timer");
        assert_eq!(q.pop_due(100), Some((5, "other")));
        assert_eq!(q.pop_due(100), Some((7, "timer")));
        assert!(q.is_empty());
    }
}
