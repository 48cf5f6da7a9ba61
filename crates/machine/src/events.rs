//! Timed callbacks: ordered by cycle, ties broken by insertion order, so two
//! runs of the same machine fire the same events in the same order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Debug)]
struct Entry<T> {
    cycle: u64,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.cycle, self.seq) == (other.cycle, other.seq)
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.cycle, self.seq).cmp(&(other.cycle, other.seq))
    }
}

#[derive(Debug)]
pub struct EventQueue<T> {
    heap: BinaryHeap<Reverse<Entry<T>>>,
    next_seq: u64,
}

impl<T> Default for EventQueue<T> {
    fn default() -> Self {
        Self { heap: BinaryHeap::new(), next_seq: 0 }
    }
}

impl<T> EventQueue<T> {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn push(&mut self, cycle: u64, item: T) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(Entry { cycle, seq, item }));
    }
    /// Cycle of the earliest event.
    pub fn next_cycle(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse(e)| e.cycle)
    }
    /// Remove and return the earliest event if it is due at or before `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<(u64, T)> {
        if self.next_cycle()? > now {
            return None;
        }
        self.heap.pop().map(|Reverse(e)| (e.cycle, e.item))
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
}
