//! The peer in a snapshot. smoltcp's interface and sockets (sequence
//! numbers, timers, the congestion window, its random generator) cannot be
//! read out or set, so the peer keeps what it was given since it was made —
//! the frames from the guest with their cycles, and the cycles it was run
//! to — and a restore builds a new peer from the same configuration and
//! gives it the same again. smoltcp is deterministic (fixed seed, time is
//! what we pass it), so the new peer is the old one, down to its next
//! random number. The restore then checks that the replay reproduced
//! everything the peer shows outside smoltcp (queues, times, counters,
//! services) and refuses the snapshot if not.
//!
//! Cost: the history grows with the bytes the guest sends (a frame is kept
//! as it came, once), and a restore runs the stack through it again.
//! Frames towards the guest are not inputs: those still on the wire are
//! saved as they are.
//!
//! Runs of [`Peer::advance`] with no frame between them are one entry: two
//! runs to `a` then `b` leave the peer as one run to `max(a, b)` does (each
//! event is served at its own cycle either way).

use std::collections::VecDeque;
use std::fmt::Write as _;

use hs_snapshot::state::{decode, encode, Persist};
use serde::{Deserialize, Serialize};

use crate::Peer;

/// A frame as a snapshot holds it: a hex string (a JSON array of numbers
/// would take twice the room).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Frame(pub Vec<u8>);

impl Serialize for Frame {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = String::with_capacity(self.0.len() * 2);
        for b in &self.0 {
            let _ = write!(t, "{b:02x}");
        }
        s.serialize_str(&t)
    }
}

impl<'de> Deserialize<'de> for Frame {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let t = String::deserialize(d)?;
        if t.len() % 2 != 0 {
            return Err(D::Error::custom("a frame's hex has an odd length"));
        }
        (0..t.len())
            .step_by(2)
            .map(|i| {
                t.get(i..i + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| D::Error::custom(format!("`{t:.16}…` is not hex")))
            })
            .collect::<Result<Vec<u8>, _>>()
            .map(Frame)
    }
}

/// One thing the peer was given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Input {
    /// [`Peer::send`] of a well-formed frame at this cycle.
    Send(u64, Frame),
    /// [`Peer::send`] of a frame it refused (only counted).
    Malformed,
    /// [`Peer::advance`] (or [`Peer::recv`]) to this cycle.
    Advance(u64),
}

/// Record a run to `now`: merged into a run just before it.
pub(crate) fn note_advance(inputs: &mut Vec<Input>, now: u64) {
    match inputs.last_mut() {
        Some(Input::Advance(t)) => *t = (*t).max(now),
        _ => inputs.push(Input::Advance(now)),
    }
}

#[derive(Serialize, Deserialize)]
struct Saved {
    config: crate::PeerConfig,
    inputs: Vec<Input>,
    /// Frames on their way to the guest: (arrival cycle, frame).
    outbound: Vec<(u64, Frame)>,
    /// What the replay must reproduce ([`Peer::digest`]).
    digest: String,
}

impl Peer {
    /// Everything the peer shows outside smoltcp, as text: a replay that
    /// reproduces it has rebuilt this peer.
    fn digest(&self) -> String {
        let mut d = format!(
            "now {} line_free {} poll_at {:?} inbound {:?} smoltcp_tx {} stats {:?}",
            self.now,
            self.line_free,
            self.poll_at,
            self.inbound
                .iter()
                .map(|(t, f)| (*t, f.len()))
                .collect::<Vec<_>>(),
            self.queues.tx.len() + self.queues.rx.len(),
            self.stats().iter().map(|(_, v, _)| *v).collect::<Vec<_>>(),
        );
        for r in &self.services {
            let _ = write!(
                d,
                "; {:?} {:?} fnv {:x} sent {} done {} counted {} request {:?} udp {:?} markers {}",
                r.service,
                r.record,
                r.fnv.0,
                r.sent,
                r.done,
                r.counted,
                r.request,
                r.udp_job.map(|(e, n, s)| (e.to_string(), n, s)),
                r.markers
            );
        }
        d
    }

    fn apply(&mut self, input: &Input) {
        match input {
            Input::Send(at, f) => self.send(f.0.clone(), *at),
            Input::Malformed => {
                self.inputs.push(Input::Malformed);
                self.stat_malformed += 1;
            }
            Input::Advance(at) => self.advance(*at),
        }
    }
}

impl Persist for Peer {
    fn save(&self) -> Result<Vec<u8>, String> {
        encode(&Saved {
            config: self.cfg.clone(),
            inputs: self.inputs.clone(),
            outbound: self
                .outbound
                .iter()
                .map(|(t, f)| (*t, Frame(f.clone())))
                .collect(),
            digest: self.digest(),
        })
    }

    fn restore(&mut self, data: &[u8]) -> Result<(), String> {
        let saved: Saved = decode(data)?;
        if saved.config != self.cfg {
            return Err(format!(
                "the snapshot's network peer was configured {:?}; this machine's is {:?}",
                saved.config, self.cfg
            ));
        }
        let mut fresh = Peer::new(self.cfg.clone());
        for i in &saved.inputs {
            fresh.apply(i);
        }
        // Frames the NIC already took are gone from the saved queue: what
        // is left must be the replay's last ones.
        let kept: VecDeque<(u64, Vec<u8>)> =
            saved.outbound.into_iter().map(|(t, f)| (t, f.0)).collect();
        let taken = fresh.outbound.len().checked_sub(kept.len());
        let tail_matches = taken.is_some_and(|n| fresh.outbound.iter().skip(n).eq(kept.iter()));
        if !tail_matches || fresh.digest() != saved.digest {
            return Err(
                "replaying the network peer's history did not rebuild the peer the snapshot holds (a snapshot of another build or a damaged section)"
                    .into(),
            );
        }
        fresh.outbound = kept;
        *self = fresh;
        Ok(())
    }
}
