//! Where the sampler's samples go: the simulating thread only copies what
//! it read from the hart into a batch; a second thread shares each call
//! stack with the equal ones before it and keeps the samples, as perf's
//! ring buffer hands the kernel's samples to a reader on another CPU.
//!
//! Interning a stack is a hash-table lookup that mostly misses the host's
//! caches, and keeping ~80 bytes a sample faults in fresh memory; both
//! were a third of what sampling cost the simulation. Batches are handled
//! in the order they were filled, so the samples, and which of them share
//! a stack, are the same whichever thread does the work and however the
//! two threads interleave.

use std::collections::HashSet;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use hs_observe::{FastHash, Privilege, Sample, Task};

/// Samples a batch holds before it is handed over: small enough to stay
/// in the host's caches, large enough that handing over is rare.
const BATCH: usize = 1024;

/// Samples the store is made for at the start (address space only until
/// used: about 80 MiB for a million).
const SAMPLES_RESERVED: usize = 1 << 20;

/// `Taken::frames` of a sample whose stack is its hart's last sample's.
const SAME_STACK: u32 = u32::MAX;

/// A sample as the hart gave it: its stack is `frames` return addresses
/// in the batch's frame list, or the hart's last ([`SAME_STACK`]).
struct Taken {
    hart: u16,
    privilege: Privilege,
    frames: u32,
    cycle: u64,
    pc: u64,
    satp: u64,
    task: Option<Task>,
}

#[derive(Default)]
struct Batch {
    taken: Vec<Taken>,
    /// The stacks of `taken`, one after another.
    frames: Vec<u64>,
}

impl Batch {
    fn with_capacity() -> Batch {
        Batch {
            taken: Vec::with_capacity(BATCH),
            frames: Vec::with_capacity(BATCH * 16),
        }
    }
}

/// The samples made so far, each distinct stack kept once.
struct Kept {
    samples: Vec<Sample>,
    /// Each distinct call stack once: samples share them (a boot's
    /// 770,000 samples hold a few tens of thousands of stacks), which
    /// saves an allocation per sample and most of the memory.
    stacks: HashSet<Arc<[u64]>, FastHash>,
    /// Per hart, its last sample's stack: the next sample repeats it more
    /// often than not (55% of a boot's), and comparing with it is cheaper
    /// than a lookup among all stacks.
    last_stack: Vec<Arc<[u64]>>,
}

impl Kept {
    fn new(reserve: usize) -> Kept {
        Kept {
            samples: Vec::with_capacity(reserve),
            stacks: HashSet::default(),
            last_stack: Vec::new(),
        }
    }

    /// The shared copy of `stack`, sampled on hart `h`.
    fn intern(&mut self, h: usize, stack: &[u64]) -> Arc<[u64]> {
        if let Some(last) = self.last_stack.get(h).filter(|l| ***l == *stack) {
            return last.clone();
        }
        let s = match self.stacks.get(stack) {
            Some(s) => s.clone(),
            None => {
                let s: Arc<[u64]> = stack.into();
                self.stacks.insert(s.clone());
                s
            }
        };
        if self.last_stack.len() <= h {
            self.last_stack.resize(h + 1, Arc::from([]));
        }
        self.last_stack[h] = s.clone();
        s
    }

    /// Make the batch's samples; it is left empty for reuse.
    fn add(&mut self, b: &mut Batch) {
        let mut at = 0;
        for t in b.taken.drain(..) {
            let h = t.hart as usize;
            let stack = match self.last_stack.get(h) {
                Some(last) if t.frames == SAME_STACK => last.clone(),
                _ => {
                    let n = t.frames as usize;
                    at += n;
                    self.intern(h, &b.frames[at - n..at])
                }
            };
            self.samples.push(Sample {
                hart: t.hart,
                cycle: t.cycle,
                pc: t.pc,
                privilege: t.privilege,
                satp: t.satp,
                stack,
                task: t.task,
            });
        }
        b.frames.clear();
    }
}

/// The thread that keeps the samples, and the way batches go to it and
/// come back empty.
struct Keeper {
    to: Sender<Batch>,
    back: Receiver<Batch>,
    handle: JoinHandle<Kept>,
}

/// The samples of one sampler: taken on the simulating thread, kept on
/// another (see the module docs).
pub(crate) struct SampleStore {
    filling: Batch,
    /// Per hart, its last sample's stack (the keeper's `last_stack`):
    /// a repeat is sent as [`SAME_STACK`], not copied again.
    last: Vec<Option<Vec<u64>>>,
    keeper: Option<Keeper>,
    /// Samples taken so far (all are kept).
    taken: usize,
    reserve: usize,
}

impl SampleStore {
    /// A store expecting at most `max` samples.
    pub(crate) fn new(max: usize) -> SampleStore {
        SampleStore {
            filling: Batch::default(),
            last: Vec::new(),
            keeper: None,
            taken: 0,
            reserve: max.min(SAMPLES_RESERVED),
        }
    }

    /// Samples taken so far.
    pub(crate) fn len(&self) -> usize {
        self.taken
    }

    /// Add a sample whose stack is `stack`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push(
        &mut self,
        hart: u16,
        privilege: Privilege,
        cycle: u64,
        pc: u64,
        satp: u64,
        stack: &[u64],
        task: Option<Task>,
    ) {
        let h = hart as usize;
        if self.filling.taken.capacity() == 0 || self.last.len() <= h {
            self.start(h);
        }
        let frames = match &mut self.last[h] {
            Some(last) if last[..] == *stack => SAME_STACK,
            last => {
                let l = last.get_or_insert_with(Vec::new);
                l.clear();
                l.extend_from_slice(stack);
                self.filling.frames.extend_from_slice(stack);
                stack.len() as u32
            }
        };
        self.filling.taken.push(Taken {
            hart,
            privilege,
            frames,
            cycle,
            pc,
            satp,
            task,
        });
        self.taken += 1;
        if self.filling.taken.len() >= BATCH {
            self.hand_over();
        }
    }

    /// Ready for hart `h`'s first sample or a batch's first: out of line,
    /// like handing a batch over, so that the code a sample runs stays
    /// small (at a sample every thousand cycles, the host's instruction
    /// cache holds little of it between two).
    #[cold]
    #[inline(never)]
    fn start(&mut self, h: usize) {
        if self.filling.taken.capacity() == 0 {
            self.filling = self.empty_batch();
        }
        if self.last.len() <= h {
            self.last.resize(h + 1, None);
        }
    }

    /// An empty batch: one the keeper is done with, else a new one.
    fn empty_batch(&mut self) -> Batch {
        self.keeper
            .as_ref()
            .and_then(|k| k.back.try_recv().ok())
            .unwrap_or_else(Batch::with_capacity)
    }

    /// Send the batch being filled to the keeper, starting it if need be.
    #[cold]
    #[inline(never)]
    fn hand_over(&mut self) {
        let batch = std::mem::take(&mut self.filling);
        let reserve = self.reserve;
        let keeper = self.keeper.get_or_insert_with(|| {
            let (to, from) = channel::<Batch>();
            let (give_back, back) = channel::<Batch>();
            let handle = std::thread::Builder::new()
                .name("hs-samples".into())
                .spawn(move || {
                    let mut kept = Kept::new(reserve);
                    for mut b in from {
                        kept.add(&mut b);
                        // (the sampler may be gone: then nobody reuses it)
                        let _ = give_back.send(b);
                    }
                    kept
                })
                .expect("the host could not start the sample-keeping thread");
            Keeper { to, back, handle }
        });
        if let Err(e) = keeper.to.send(batch) {
            // The keeper only stops receiving when it panicked: that
            // panic is reported where the samples are taken out.
            drop(e);
        }
    }

    /// Every sample taken so far, in the order taken; the store starts
    /// again empty.
    pub(crate) fn take(&mut self) -> Vec<Sample> {
        let mut rest = std::mem::take(&mut self.filling);
        self.taken = 0;
        self.last.clear();
        let mut kept = match self.keeper.take() {
            Some(k) => {
                drop(k.to);
                match k.handle.join() {
                    Ok(kept) => kept,
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            None => Kept::new(rest.taken.len()),
        };
        kept.add(&mut rest);
        kept.samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack_of(i: usize) -> Vec<u64> {
        // 7 distinct stacks of 0 to 6 frames, in a pattern that repeats
        // a hart's last stack and returns to older ones
        let k = (i * 5 + i / 3) % 7;
        (0..k as u64).map(|f| 0x1000 * (k as u64 + 1) + f).collect()
    }

    #[test]
    fn samples_come_out_in_order_each_distinct_stack_kept_once() {
        let mut s = SampleStore::new(1 << 20);
        let n = 3 * BATCH + 17;
        for i in 0..n {
            let task = (i % 4 == 0).then(|| Task {
                pid: i as u32,
                tid: i as u32 + 1,
                comm: "t".into(),
            });
            s.push(
                (i % 2) as u16,
                Privilege::Supervisor,
                i as u64 * 10,
                0x8000 + i as u64,
                7,
                &stack_of(i),
                task,
            );
        }
        assert_eq!(s.len(), n);
        let out = s.take();
        assert_eq!(out.len(), n);
        let mut first: Vec<Option<Arc<[u64]>>> = vec![None; 7];
        for (i, x) in out.iter().enumerate() {
            assert_eq!(
                (x.hart, x.cycle, x.pc, x.satp),
                ((i % 2) as u16, i as u64 * 10, 0x8000 + i as u64, 7)
            );
            assert_eq!(&*x.stack, &stack_of(i)[..]);
            assert_eq!(
                x.task.as_ref().map(|t| t.pid),
                (i % 4 == 0).then_some(i as u32)
            );
            // equal stacks are one allocation, across batches and harts
            let k = stack_of(i).len();
            let f = first[k].get_or_insert_with(|| x.stack.clone());
            assert!(Arc::ptr_eq(f, &x.stack), "sample {i}");
        }
        // the store starts again, empty
        assert_eq!((s.len(), s.take().len()), (0, 0));
        s.push(0, Privilege::Machine, 1, 2, 0, &[], None);
        let again = s.take();
        assert_eq!(
            (again.len(), again[0].cycle, again[0].stack.len()),
            (1, 1, 0)
        );
    }

    #[test]
    fn a_repeated_stack_is_sent_once_and_taking_starts_afresh() {
        let mut s = SampleStore::new(1 << 20);
        for i in 0..3 {
            s.push(1, Privilege::Supervisor, i, 0, 0, &[7, 8], None);
        }
        // the two repeats went as markers: one stack's frames in the batch
        assert_eq!(s.filling.frames, [7, 8]);
        assert_eq!(s.filling.taken[2].frames, SAME_STACK);
        let out = s.take();
        assert!(out.iter().all(|x| *x.stack == [7, 8]), "{out:?}");
        // after taking, the keeper's last stacks are gone: a repeat of the
        // last stack is sent whole again
        s.push(1, Privilege::Supervisor, 9, 0, 0, &[7, 8], None);
        assert_eq!(s.filling.taken[0].frames, 2);
        assert_eq!(*s.take()[0].stack, [7, 8]);
    }

    #[test]
    fn a_hart_repeating_its_stack_shares_it() {
        let mut k = Kept::new(0);
        let a = k.intern(0, &[1, 2, 3]);
        let b = k.intern(1, &[1, 2, 3]); // another hart: found among all stacks
        let c = k.intern(0, &[1, 2]);
        let d = k.intern(0, &[1, 2, 3]); // not hart 0's last: found among all
        let e = k.intern(0, &[1, 2, 3]); // hart 0's last
        assert!(Arc::ptr_eq(&a, &b) && Arc::ptr_eq(&a, &d) && Arc::ptr_eq(&a, &e));
        assert_eq!((&*a, &*c), (&[1u64, 2, 3][..], &[1u64, 2][..]));
        assert_eq!(k.stacks.len(), 2);
        assert!(k.intern(0, &[]).is_empty());
    }
}
