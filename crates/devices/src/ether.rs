//! What every Ethernet NIC model shares: the wire to whatever is at its far
//! end ([`EthernetLink`], implemented by the deterministic peer) and MAC
//! address parsing for configuration keys.

use crate::resources::{ParamError, Params};
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
    /// The state of the link and what is on it, for a snapshot; None: a NIC
    /// on this link cannot be snapshotted.
    fn state(&self) -> Option<&dyn crate::Persist> {
        None
    }
    fn state_mut(&mut self) -> Option<&mut dyn crate::Persist> {
        None
    }
}

/// No wire: what a NIC holds while its state is decoded, before its own
/// wire is put back.
pub(crate) fn no_link() -> Box<dyn EthernetLink> {
    struct Unplugged;
    impl EthernetLink for Unplugged {
        fn send(&mut self, _frame: Vec<u8>, _now: u64) {}
        fn recv(&mut self, _now: u64) -> Option<Vec<u8>> {
            None
        }
        fn next_event(&self) -> Option<u64> {
            None
        }
    }
    Box::new(Unplugged)
}

/// A NIC's link in its snapshot section: the link's own section, or an
/// error if the link has none.
pub(crate) fn save_link(link: &dyn EthernetLink) -> Result<String, String> {
    crate::nested_save(
        link.state()
            .ok_or("the far end of its wire has no save/restore")?,
    )
}

/// Put back what [`save_link`] gave.
pub(crate) fn restore_link(link: &mut dyn EthernetLink, saved: &str) -> Result<(), String> {
    link.state_mut()
        .ok_or("the far end of its wire has no save/restore")?
        .restore(saved.as_bytes())
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
    fn state(&self) -> Option<&dyn crate::Persist> {
        Some(self)
    }
    fn state_mut(&mut self) -> Option<&mut dyn crate::Persist> {
        Some(self)
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

/// Cycles a frame of `len` bytes (no FCS) occupies a wire of `bps` bits per
/// second: preamble, padding to the minimum size, FCS and the inter-frame
/// gap included.
pub fn wire_cycles(len: usize, bps: u64, core_hz: u64) -> u64 {
    let bits = (8 + len.max(60) + 4) as u64 * 8 + 96;
    (bits as u128 * core_hz as u128).div_ceil(bps.max(1) as u128) as u64
}

/// The keys every NIC on the board shares: its address, its wire and the
/// deterministic peer at the wire's far end.
///
/// `mac`, `link-mbps`, `peer-latency-ns` (default 5000), `peer-tcp-source`
/// / `peer-tcp-sink` / `peer-udp-source` / `peer-udp-sink` (ports of the
/// peer's ttcp-style services; default none), `peer-tcp-buffer-kib` (the
/// peer's TCP socket buffers, default 16). The guest is expected at
/// 10.0.2.15/24, the peer is 10.0.2.2.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WireConfig {
    pub mac: [u8; 6],
    pub link_mbps: u64,
    pub latency_ns: u64,
    pub tcp_source: Option<u16>,
    pub tcp_sink: Option<u16>,
    pub udp_source: Option<u16>,
    pub udp_sink: Option<u16>,
    pub tcp_buffer_kib: u64,
}

/// The MAC a NIC has when its table names none (QEMU's default).
pub const DEFAULT_MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];

impl WireConfig {
    /// Read the shared keys; the caller reads its own and calls `finish`.
    pub fn parse(p: &mut Params, default_mbps: i64) -> Result<WireConfig, ParamError> {
        let mac = match p.string("mac")? {
            None => DEFAULT_MAC,
            Some(t) => parse_mac(&t).ok_or_else(|| ParamError {
                key: "mac".into(),
                message: format!(
                    "`{t}` is not a unicast MAC address (six hex pairs, e.g. 52:54:00:12:34:56)"
                ),
            })?,
        };
        let link_mbps = p.int("link-mbps", default_mbps, 1, 100_000)? as u64;
        let latency_ns = p.int("peer-latency-ns", 5_000, 0, 1_000_000_000)? as u64;
        let port = |p: &mut Params, k| -> Result<Option<u16>, ParamError> {
            Ok(match p.int(k, 0, 0, 65535)? {
                0 => None,
                v => Some(v as u16),
            })
        };
        let tcp_source = port(p, "peer-tcp-source")?;
        let tcp_sink = port(p, "peer-tcp-sink")?;
        if tcp_source.is_some() && tcp_source == tcp_sink {
            return Err(ParamError {
                key: "peer-tcp-sink".into(),
                message: "is the TCP source's port too".into(),
            });
        }
        let udp_source = port(p, "peer-udp-source")?;
        let udp_sink = port(p, "peer-udp-sink")?;
        if udp_source.is_some() && udp_source == udp_sink {
            return Err(ParamError {
                key: "peer-udp-sink".into(),
                message: "is the UDP source's port too".into(),
            });
        }
        let tcp_buffer_kib = p.int("peer-tcp-buffer-kib", 16, 1, 1024)? as u64;
        Ok(WireConfig {
            mac,
            link_mbps,
            latency_ns,
            tcp_source,
            tcp_sink,
            udp_source,
            udp_sink,
            tcp_buffer_kib,
        })
    }

    pub fn link_bps(&self) -> u64 {
        self.link_mbps * 1_000_000
    }

    /// The peer this NIC's wire leads to.
    pub fn peer(&self, core_hz: u64) -> hs_peer::Peer {
        let mut pc = hs_peer::PeerConfig::new(core_hz);
        pc.link_bps = self.link_bps();
        pc.latency_ns = self.latency_ns;
        pc.tcp_buffer = self.tcp_buffer_kib as usize * 1024;
        if let Some(port) = self.tcp_source {
            pc.services
                .push(hs_peer::Service::TcpSource { port, bytes: None });
        }
        if let Some(port) = self.tcp_sink {
            pc.services.push(hs_peer::Service::TcpSink { port });
        }
        if let Some(port) = self.udp_source {
            pc.services.push(hs_peer::Service::UdpSource { port });
        }
        if let Some(port) = self.udp_sink {
            pc.services.push(hs_peer::Service::UdpSink { port });
        }
        hs_peer::Peer::new(pc)
    }
}

/// An ARP request from `mac` at 10.0.2.15 for the peer's 10.0.2.2: what a
/// NIC test sends to get the peer talking.
#[cfg(test)]
pub(crate) fn arp_request(mac: [u8; 6]) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&mac);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
    f.extend_from_slice(&mac);
    f.extend_from_slice(&[10, 0, 2, 15]);
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&[10, 0, 2, 2]);
    f
}
