//! What every Ethernet NIC model shares: the wire to whatever is at its far
//! end ([`EthernetLink`], implemented by the deterministic peer) and MAC
//! address parsing for configuration keys.

use crate::Stat;

/// The far end of a NIC's wire: a wire with whatever sits on it.
pub trait EthernetLink {
    /// A frame (destination address to payload, no FCS) whose last bit left
    /// the NIC at cycle `now`.
    fn send(&mut self, frame: Vec<u8>, now: u64);
    /// The next frame whose last bit has reached the NIC by cycle `now`.
    fn recv(&mut self, now: u64) -> Option<Vec<u8>>;
    /// The cycle the link next has something for the NIC or must run.
    fn next_event(&self) -> Option<u64>;
    /// Statistics of the link and what is on it.
    fn stats(&self, _prefix: &str) -> Vec<Stat> {
        Vec::new()
    }
}

/// The deterministic peer (`hs_peer`) as the far end of the wire.
impl EthernetLink for hs_peer::Peer {
    fn send(&mut self, frame: Vec<u8>, now: u64) {
        hs_peer::Peer::send(self, frame, now)
    }
    fn recv(&mut self, now: u64) -> Option<Vec<u8>> {
        hs_peer::Peer::recv(self, now)
    }
    fn next_event(&self) -> Option<u64> {
        hs_peer::Peer::next_event(self)
    }
    fn stats(&self, prefix: &str) -> Vec<Stat> {
        hs_peer::Peer::stats(self)
            .into_iter()
            .map(|(n, v, d)| Stat::new(format!("{prefix}.{n}"), v, d))
            .collect()
    }
}

/// `52:54:00:12:34:56`: six hex pairs, a unicast address, not all zero.
pub fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let parts: Vec<u8> = text
        .split(':')
        .map(|h| {
            (h.len() == 2)
                .then(|| u8::from_str_radix(h, 16).ok())
                .flatten()
        })
        .collect::<Option<_>>()?;
    let mac: [u8; 6] = parts.try_into().ok()?;
    (mac[0] & 1 == 0 && mac != [0; 6]).then_some(mac)
}
