//! Small signal traits between devices that must never name each other.
//!
//! The DMA handshake follows the DesignWare convention: a peripheral drives a
//! *request* per handshake interface (a burst request when its FIFO crossed
//! the watermark, a single request when at least one item can move) and the
//! DMA controller answers with an *acknowledge* after each transfer. The
//! peripheral only sees [`DmaRequestLine`]; the controller only sees
//! [`DmaHandshake`], indexed by the handshake number the board assigned. The
//! board wires the two with [`HandshakeWires`] (or its own implementation).
//!
//! Levels carry the simulated cycle at which they last changed, so the
//! controller can start a burst at the exact cycle a request rose even when
//! it is asked later (see [`DmaHandshake::request`]).

use std::cell::RefCell;
use std::rc::Rc;

/// The state of one handshake interface's request lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DmaRequest {
    /// `dma_req`: a whole burst (the controller's MSIZE items) can move.
    pub burst: bool,
    /// `dma_single`: at least one item can move.
    pub single: bool,
}

impl DmaRequest {
    pub const NONE: DmaRequest = DmaRequest {
        burst: false,
        single: false,
    };
    pub fn any(self) -> bool {
        self.burst || self.single
    }
}

/// A peripheral's output towards the DMA controller for one direction.
pub trait DmaRequestLine {
    /// Drive the request lines to `req` from simulated cycle `now` on.
    fn set_request(&self, req: DmaRequest, now: u64);
}

/// The DMA controller's side: requests of every handshake interface.
pub trait DmaHandshake {
    /// Current request of handshake interface `hs` and the cycle it was last
    /// driven to that value. Unknown interfaces never request.
    fn request(&self, hs: u32) -> (DmaRequest, u64);
    /// The controller finished a transfer for `hs` (`last`: end of block).
    fn ack(&self, hs: u32, last: bool);
}

#[derive(Clone, Copy, Debug, Default)]
struct Wire {
    req: DmaRequest,
    since: u64,
    acks: u64,
    last_acks: u64,
}

#[derive(Debug, Default)]
struct WiresInner {
    wires: Vec<Wire>,
    /// Bumped on every level change: a board can tell that the controller's
    /// `next_event` may have changed without asking it.
    generation: u64,
}

/// Shared handshake wires: hand [`HandshakeWires::line`] to peripherals and
/// a clone of the whole bundle to the DMA controller. Single host thread,
/// like [`crate::WireIrq`]; cloning gives another handle on the same wires.
#[derive(Clone, Debug, Default)]
pub struct HandshakeWires(Rc<RefCell<WiresInner>>);

impl HandshakeWires {
    /// `count` handshake interfaces, numbered `0..count`.
    pub fn new(count: u32) -> Self {
        let inner = WiresInner {
            wires: vec![Wire::default(); count as usize],
            generation: 0,
        };
        Self(Rc::new(RefCell::new(inner)))
    }
    /// The request output for handshake interface `hs` (a peripheral holds it).
    pub fn line(&self, hs: u32) -> HandshakeLine {
        HandshakeLine {
            wires: self.clone(),
            hs,
        }
    }
    /// Number of level changes so far.
    pub fn generation(&self) -> u64 {
        self.0.borrow().generation
    }
    /// Acknowledges given on `hs` (all, and those with `last` set).
    pub fn acks(&self, hs: u32) -> (u64, u64) {
        self.0
            .borrow()
            .wires
            .get(hs as usize)
            .map_or((0, 0), |w| (w.acks, w.last_acks))
    }
}

impl DmaHandshake for HandshakeWires {
    fn request(&self, hs: u32) -> (DmaRequest, u64) {
        self.0
            .borrow()
            .wires
            .get(hs as usize)
            .map_or((DmaRequest::NONE, 0), |w| (w.req, w.since))
    }
    fn ack(&self, hs: u32, last: bool) {
        if let Some(w) = self.0.borrow_mut().wires.get_mut(hs as usize) {
            w.acks += 1;
            w.last_acks += last as u64;
        }
    }
}

/// One handshake interface's request output (see [`HandshakeWires::line`]).
#[derive(Clone, Debug)]
pub struct HandshakeLine {
    wires: HandshakeWires,
    hs: u32,
}

impl HandshakeLine {
    pub fn handshake(&self) -> u32 {
        self.hs
    }
}

impl DmaRequestLine for HandshakeLine {
    fn set_request(&self, req: DmaRequest, now: u64) {
        let mut inner = self.wires.0.borrow_mut();
        let WiresInner { wires, generation } = &mut *inner;
        if let Some(w) = wires.get_mut(self.hs as usize) {
            if w.req != req {
                w.req = req;
                w.since = now;
                *generation += 1;
            }
        }
    }
}

/// Names of the board wires of handshake interface `hs` of the DMA
/// controller `dma`: `dma.hsN` carries the burst request (`dma_req`) and
/// counts the controller's acknowledgements, `dma.hsN.single` the single
/// request (`dma_single`).
pub fn handshake_wire_names(dma: &str, hs: u32) -> (String, String) {
    (format!("{dma}.hs{hs}"), format!("{dma}.hs{hs}.single"))
}

/// A peripheral's request output on two board wires (see
/// [`handshake_wire_names`]); each change carries its cycle.
#[derive(Clone, Debug)]
pub struct SignalRequestLine {
    pub burst: hs_bus::Signal,
    pub single: hs_bus::Signal,
}

impl DmaRequestLine for SignalRequestLine {
    fn set_request(&self, req: DmaRequest, now: u64) {
        self.burst.set_level_at(req.burst, now);
        self.single.set_level_at(req.single, now);
    }
}

/// A DMA controller's handshake interfaces on board wires, indexed by
/// handshake number (see [`handshake_wire_names`]).
#[derive(Clone, Debug, Default)]
pub struct SignalHandshake {
    pub ifaces: Vec<SignalRequestLine>,
}

impl DmaHandshake for SignalHandshake {
    fn request(&self, hs: u32) -> (DmaRequest, u64) {
        match self.ifaces.get(hs as usize) {
            Some(l) => {
                let req = DmaRequest {
                    burst: l.burst.is_high(),
                    single: l.single.is_high(),
                };
                (req, l.burst.changed_at().max(l.single.changed_at()))
            }
            None => (DmaRequest::NONE, 0),
        }
    }
    fn ack(&self, hs: u32, _last: bool) {
        if let Some(l) = self.ifaces.get(hs as usize) {
            hs_bus::DmaAck::ack(&l.burst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn board_wires_carry_requests_with_their_cycle() {
        let (b, s) = (hs_bus::Signal::new(), hs_bus::Signal::new());
        let line = SignalRequestLine {
            burst: b.clone(),
            single: s.clone(),
        };
        let hs = SignalHandshake {
            ifaces: vec![
                SignalRequestLine {
                    burst: hs_bus::Signal::new(),
                    single: hs_bus::Signal::new(),
                },
                line.clone(),
            ],
        };
        assert_eq!(hs.request(1), (DmaRequest::NONE, 0));
        line.set_request(
            DmaRequest {
                burst: false,
                single: true,
            },
            300,
        );
        line.set_request(
            DmaRequest {
                burst: true,
                single: true,
            },
            500,
        );
        assert_eq!(
            hs.request(1),
            (
                DmaRequest {
                    burst: true,
                    single: true
                },
                500
            )
        );
        line.set_request(
            DmaRequest {
                burst: true,
                single: true,
            },
            800,
        );
        assert_eq!(hs.request(1).1, 500, "the same level keeps its time");
        hs.ack(1, true);
        hs.ack(7, true);
        assert_eq!((b.acks(), hs.request(9)), (1, (DmaRequest::NONE, 0)));
        assert_eq!(
            handshake_wire_names("dma0", 2),
            ("dma0.hs2".to_string(), "dma0.hs2.single".to_string())
        );
    }

    #[test]
    fn lines_carry_level_and_change_time() {
        let wires = HandshakeWires::new(4);
        let tx = wires.line(1);
        let ctl: Box<dyn DmaHandshake> = Box::new(wires.clone());
        assert_eq!(ctl.request(1), (DmaRequest::NONE, 0));
        let g0 = wires.generation();
        tx.set_request(
            DmaRequest {
                burst: true,
                single: true,
            },
            500,
        );
        assert_eq!(
            ctl.request(1),
            (
                DmaRequest {
                    burst: true,
                    single: true
                },
                500
            )
        );
        // Driving the same level again keeps the original change time.
        tx.set_request(
            DmaRequest {
                burst: true,
                single: true,
            },
            900,
        );
        assert_eq!(ctl.request(1).1, 500);
        assert_eq!(wires.generation(), g0 + 1);
        ctl.ack(1, false);
        ctl.ack(1, true);
        assert_eq!(wires.acks(1), (2, 1));
        // Out-of-range numbers are inert, never a panic.
        assert_eq!(ctl.request(99), (DmaRequest::NONE, 0));
        ctl.ack(99, true);
        wires.line(77).set_request(
            DmaRequest {
                burst: true,
                single: false,
            },
            1,
        );
        assert_eq!(wires.acks(99), (0, 0));
    }
}
