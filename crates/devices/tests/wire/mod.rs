//! A scripted far end of a NIC's wire for the NIC tests: it records every
//! frame the NIC sent and echoes it back `delay` cycles later.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use hs_devices::ether::EthernetLink;

/// A wire whose far end echoes every frame `delay` cycles after it left.
#[derive(Clone, Default)]
pub struct Echo {
    pub delay: u64,
    pub queue: Rc<RefCell<VecDeque<(u64, Vec<u8>)>>>,
    pub sent: Rc<RefCell<Vec<(u64, Vec<u8>)>>>,
}
impl EthernetLink for Echo {
    fn send(&mut self, frame: Vec<u8>, now: u64) {
        self.sent.borrow_mut().push((now, frame.clone()));
        self.queue.borrow_mut().push_back((now + self.delay, frame));
    }
    fn recv(&mut self, now: u64) -> Option<Vec<u8>> {
        let mut q = self.queue.borrow_mut();
        match q.front() {
            Some((t, _)) if *t <= now => q.pop_front().map(|(_, f)| f),
            _ => None,
        }
    }
    fn next_event(&self) -> Option<u64> {
        self.queue.borrow().front().map(|(t, _)| *t)
    }
}
