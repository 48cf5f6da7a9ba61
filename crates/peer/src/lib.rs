//! The far end of a NIC's wire: an Ethernet link in simulated time and a
//! real TCP/IP stack (`smoltcp`) that answers ARP and ping and runs
//! ttcp-style services, so a network study is byte-for-byte repeatable.
//!
//! **Why smoltcp**: a complete, widely used IPv4/TCP stack that owns no
//! threads, sockets or clock. It is polled with a timestamp we give it, so
//! it runs in simulated time and is deterministic given its random seed
//! (fixed here). It needs no host networking at all.
//!
//! **Time**: every call takes the simulated core cycle; smoltcp's clock is
//! that cycle in microseconds at the core clock. A frame from the guest
//! reaches the peer `latency` after its last bit left the NIC; a frame from
//! the peer leaves when the line towards the guest is free, takes
//! (8 preamble + max(len, 60) + 4 FCS) bytes + a 96-bit gap at the link
//! rate, and arrives `latency` later. Frames are handed over without FCS.
//!
//! The peer's TCP uses Reno congestion control (smoltcp's `socket-tcp-reno`).
//!
//! The peer is `10.0.2.2/24` with MAC `52:54:00:12:35:02` by default (the
//! addresses QEMU's user networking gives its host side); the guest is
//! expected at `10.0.2.15`.

use std::collections::VecDeque;

use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{self, Device, DeviceCapabilities, Medium};
use smoltcp::socket::{tcp, udp};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr, IpEndpoint, Ipv4Address};

mod state;

/// The FNV-1a 64 of a byte stream (what the services fingerprint).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fnv(pub u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Byte `i` of what a TCP source sends: a 251-byte cycle (a prime, so it
/// never lines up with buffer or segment sizes).
pub fn pattern_byte(i: u64) -> u8 {
    (i % 251) as u8
}

/// FNV-1a 64 of the first `n` bytes of the source's pattern.
pub fn pattern_fnv(n: u64) -> u64 {
    let mut f = Fnv::default();
    let block: Vec<u8> = (0..251u64).map(pattern_byte).collect();
    let mut left = n;
    while left > 0 {
        let k = left.min(251) as usize;
        f.feed(&block[..k]);
        left -= k as u64;
    }
    f.0
}

/// A service the peer runs.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Service {
    /// Accept connections on `port`, one after another, and send each bytes of the pattern
    /// ([`pattern_byte`]), then close (ttcp -t towards the guest): `bytes`
    /// of them, or with `None` as many as the client asks for in its first
    /// 8 bytes (a big-endian count; `ttcp -c` sends it), so the workload
    /// chooses the size.
    TcpSource { port: u16, bytes: Option<u64> },
    /// Accept connections on `port`, one after another, and read each
    /// until it closes (ttcp -r).
    TcpSink { port: u16 },
    /// On a 12-byte request datagram (8-byte big-endian count, 4-byte
    /// big-endian size: `ttcp -u -c` sends it) send that many datagrams of
    /// that size, the pattern running on across them, as fast as the line
    /// takes them (never more than [`UDP_AHEAD`] frames queued on it), then
    /// [`UDP_END_MARKERS`] one-byte datagrams that mark the end.
    UdpSource { port: u16 },
    /// Take datagrams on `port` and fingerprint their payloads in arrival
    /// order; datagrams of 4 bytes or fewer mark an end (ttcp's convention)
    /// and are not counted.
    UdpSink { port: u16 },
}

/// Frames a UDP source keeps queued on the line at most.
pub const UDP_AHEAD: u64 = 4;
/// One-byte datagrams after a UDP source's last.
pub const UDP_END_MARKERS: u64 = 4;

impl Service {
    pub fn port(&self) -> u16 {
        match self {
            Service::TcpSource { port, .. }
            | Service::TcpSink { port }
            | Service::UdpSource { port }
            | Service::UdpSink { port } => *port,
        }
    }
    fn is_udp(&self) -> bool {
        matches!(self, Service::UdpSource { .. } | Service::UdpSink { .. })
    }
    /// Statistic name prefix.
    fn stat_name(&self) -> String {
        match self {
            Service::TcpSource { port, .. } => format!("peer.tcp_source{port}"),
            Service::TcpSink { port } => format!("peer.tcp_sink{port}"),
            Service::UdpSource { port } => format!("peer.udp_source{port}"),
            Service::UdpSink { port } => format!("peer.udp_sink{port}"),
        }
    }
}

/// A UDP socket bound to `port` with room for 64 datagrams each way.
fn bound_udp_socket(port: u16) -> udp::Socket<'static> {
    let buf = || udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 64], vec![0u8; 64 * 1536]);
    let mut sock = udp::Socket::new(buf(), buf());
    let _ = sock.bind(port);
    sock
}

/// A TCP socket listening on `port` with `buffer`-byte socket buffers.
fn listening_socket(buffer: usize, port: u16) -> tcp::Socket<'static> {
    let rx = tcp::SocketBuffer::new(vec![0; buffer]);
    let tx = tcp::SocketBuffer::new(vec![0; buffer]);
    let mut sock = tcp::Socket::new(rx, tx);
    // A sender that backs off as a real host's TCP does: without
    // congestion control smoltcp sends the whole receive window
    // at once, the wire's queue builds up, and its 10 ms minimum
    // RTO fires spuriously (a 16 MiB transfer went out 2-5 times).
    sock.set_congestion_control(tcp::CongestionControl::Reno);
    let _ = sock.listen(port);
    sock
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PeerConfig {
    pub core_hz: u64,
    pub mac: [u8; 6],
    pub ip: [u8; 4],
    pub prefix: u8,
    /// Link rate, bits per second (both directions).
    pub link_bps: u64,
    /// One-way propagation latency, nanoseconds.
    pub latency_ns: u64,
    pub services: Vec<Service>,
    /// TCP socket buffers, bytes (16 KiB: with smoltcp's 10 ms minimum
    /// RTO a larger send window queued on a slow receiver's wire long
    /// enough to time out and resend the same data several times over).
    pub tcp_buffer: usize,
}

impl PeerConfig {
    pub fn new(core_hz: u64) -> Self {
        Self {
            core_hz,
            mac: [0x52, 0x54, 0x00, 0x12, 0x35, 0x02],
            ip: [10, 0, 2, 2],
            prefix: 24,
            link_bps: 10_000_000,
            latency_ns: 5_000,
            services: Vec::new(),
            tcp_buffer: 16 * 1024,
        }
    }
}

/// What a service did on its latest connection (and how many it took),
/// for statistics and checks.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ServiceRecord {
    pub bytes: u64,
    pub fnv: u64,
    pub first_cycle: u64,
    pub last_cycle: u64,
    pub connections: u64,
    /// UDP: datagrams sent or taken (end markers not counted).
    pub datagrams: u64,
}

struct Running {
    service: Service,
    handle: SocketHandle,
    record: ServiceRecord,
    fnv: Fnv,
    sent: u64,
    done: bool,
    /// This connection was counted in `record.connections`.
    counted: bool,
    /// The client's request so far (a source without a fixed size).
    request: Vec<u8>,
    /// A UDP source's client, datagram count and size, and markers sent.
    udp_job: Option<(IpEndpoint, u64, usize)>,
    markers: u64,
}

impl Running {
    /// A UDP source has datagrams or end markers left to send.
    fn udp_pending(&self) -> bool {
        matches!(self.udp_job, Some((_, count, _)) if self.sent < count || self.markers < UDP_END_MARKERS)
    }
}

/// A UDP source's turn: take a request, then send what the line has room
/// for. True if it sent anything.
fn udp_source(sock: &mut udp::Socket, r: &mut Running, now: u64, mut room: u64) -> bool {
    let mut moved = false;
    while let Ok((req, meta)) = sock.recv() {
        if req.len() == 12 && !r.udp_pending() {
            let count = u64::from_be_bytes(req[..8].try_into().expect("8 bytes"));
            let size = u32::from_be_bytes(req[8..].try_into().expect("4 bytes")) as usize;
            if (5..=1472).contains(&size) {
                r.udp_job = Some((meta.endpoint, count, size));
                r.sent = 0;
                r.markers = 0;
                r.fnv = Fnv::default();
                r.record = ServiceRecord {
                    connections: r.record.connections + 1,
                    ..ServiceRecord::default()
                };
            }
        }
    }
    let Some((to, count, size)) = r.udp_job else {
        return false;
    };
    while room > 0 && r.sent < count && sock.can_send() {
        let start = r.sent * size as u64;
        let Ok(buf) = sock.send(size, to) else { break };
        for (i, b) in buf.iter_mut().enumerate() {
            *b = pattern_byte(start + i as u64);
        }
        r.fnv.feed(buf);
        if r.sent == 0 {
            r.record.first_cycle = now;
        }
        r.sent += 1;
        r.record.datagrams = r.sent;
        r.record.bytes = r.sent * size as u64;
        r.record.fnv = r.fnv.0;
        r.record.last_cycle = now;
        room -= 1;
        moved = true;
    }
    while room > 0 && r.sent >= count && r.markers < UDP_END_MARKERS && sock.can_send() {
        if sock.send_slice(&[0], to).is_err() {
            break;
        }
        r.markers += 1;
        room -= 1;
        moved = true;
    }
    moved
}

/// A UDP sink's turn: fingerprint what arrived. True if anything did.
fn udp_sink(sock: &mut udp::Socket, r: &mut Running, now: u64) -> bool {
    let mut moved = false;
    while let Ok((data, _)) = sock.recv() {
        moved = true;
        if data.len() <= 4 {
            continue;
        }
        if r.record.datagrams == 0 {
            r.record.first_cycle = now;
        }
        r.fnv.feed(data);
        r.record.datagrams += 1;
        r.record.bytes += data.len() as u64;
        r.record.fnv = r.fnv.0;
        r.record.last_cycle = now;
    }
    moved
}

/// Frames queued between the wire and smoltcp.
#[derive(Default)]
struct Queues {
    rx: VecDeque<Vec<u8>>,
    tx: Vec<Vec<u8>>,
}

struct RxTok(Vec<u8>);
struct TxTok<'a>(&'a mut Vec<Vec<u8>>);

impl phy::RxToken for RxTok {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl phy::TxToken for TxTok<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut buf = vec![0u8; len];
        let r = f(&mut buf);
        self.0.push(buf);
        r
    }
}

impl Device for Queues {
    type RxToken<'a> = RxTok;
    type TxToken<'a> = TxTok<'a>;
    fn receive(&mut self, _t: Instant) -> Option<(RxTok, TxTok<'_>)> {
        let f = self.rx.pop_front()?;
        Some((RxTok(f), TxTok(&mut self.tx)))
    }
    fn transmit(&mut self, _t: Instant) -> Option<TxTok<'_>> {
        Some(TxTok(&mut self.tx))
    }
    fn capabilities(&self) -> DeviceCapabilities {
        let mut c = DeviceCapabilities::default();
        c.medium = Medium::Ethernet;
        c.max_transmission_unit = 1514;
        c
    }
}

/// The wire and the peer on it.
pub struct Peer {
    cfg: PeerConfig,
    iface: Interface,
    sockets: SocketSet<'static>,
    queues: Queues,
    services: Vec<Running>,
    /// Frames from the guest on their way: (arrival cycle, frame).
    inbound: VecDeque<(u64, Vec<u8>)>,
    /// Frames towards the guest: (arrival cycle, frame).
    outbound: VecDeque<(u64, Vec<u8>)>,
    /// The line towards the guest is busy until this cycle.
    line_free: u64,
    /// smoltcp wants to be polled at this cycle.
    poll_at: Option<u64>,
    now: u64,
    stat_frames_in: u64,
    stat_bytes_in: u64,
    stat_frames_out: u64,
    stat_bytes_out: u64,
    stat_malformed: u64,
    /// Everything the peer was given since it was made, for a snapshot
    /// (see [`state`]).
    inputs: Vec<state::Input>,
}

impl Peer {
    pub fn new(cfg: PeerConfig) -> Self {
        let mut queues = Queues::default();
        let mut config = Config::new(EthernetAddress(cfg.mac).into());
        config.random_seed = 0x6861_7274_7363_6f70; // fixed: runs repeat exactly
        let mut iface = Interface::new(config, &mut queues, Instant::from_micros(0));
        iface.update_ip_addrs(|a| {
            let [a0, a1, a2, a3] = cfg.ip;
            let _ = a.push(IpCidr::new(IpAddress::v4(a0, a1, a2, a3), cfg.prefix));
        });
        let mut sockets = SocketSet::new(Vec::new());
        let services = cfg
            .services
            .iter()
            .map(|s| {
                let handle = if s.is_udp() {
                    sockets.add(bound_udp_socket(s.port()))
                } else {
                    sockets.add(listening_socket(cfg.tcp_buffer, s.port()))
                };
                Running {
                    service: s.clone(),
                    handle,
                    record: ServiceRecord::default(),
                    fnv: Fnv::default(),
                    sent: 0,
                    done: false,
                    counted: false,
                    request: Vec::new(),
                    udp_job: None,
                    markers: 0,
                }
            })
            .collect();
        let mut p = Self {
            cfg,
            iface,
            sockets,
            queues,
            services,
            inbound: VecDeque::new(),
            outbound: VecDeque::new(),
            line_free: 0,
            poll_at: Some(0),
            now: 0,
            stat_frames_in: 0,
            stat_bytes_in: 0,
            stat_frames_out: 0,
            stat_bytes_out: 0,
            stat_malformed: 0,
            inputs: Vec::new(),
        };
        p.poll(0);
        p
    }

    pub fn config(&self) -> &PeerConfig {
        &self.cfg
    }

    fn ns_to_cycles(&self, ns: u64) -> u64 {
        ((ns as u128 * self.cfg.core_hz as u128).div_ceil(1_000_000_000)) as u64
    }
    fn instant(&self, cycle: u64) -> Instant {
        Instant::from_micros((cycle as u128 * 1_000_000 / self.cfg.core_hz.max(1) as u128) as i64)
    }
    fn cycle_of(&self, t: Instant) -> u64 {
        ((t.total_micros().max(0) as u128 * self.cfg.core_hz as u128).div_ceil(1_000_000)) as u64
    }
    /// Cycles a frame of `len` bytes (no FCS) occupies the line.
    pub fn wire_cycles(&self, len: usize) -> u64 {
        let bits = (8 + len.max(60) + 4) as u64 * 8 + 96;
        ((bits as u128 * self.cfg.core_hz as u128).div_ceil(self.cfg.link_bps.max(1) as u128))
            as u64
    }

    /// A frame from the guest whose last bit left its NIC at cycle `now`.
    pub fn send(&mut self, frame: Vec<u8>, now: u64) {
        if frame.len() < 14 || frame.len() > 1514 {
            self.inputs.push(state::Input::Malformed);
            self.stat_malformed += 1;
            return;
        }
        self.inputs
            .push(state::Input::Send(now, state::Frame(frame.clone())));
        let at = now + self.ns_to_cycles(self.cfg.latency_ns);
        // Frames keep their order on the wire.
        let at = self.inbound.back().map_or(at, |(t, _)| at.max(*t));
        self.inbound.push_back((at, frame));
    }

    /// The next frame for the guest whose last bit has arrived by `now`.
    pub fn recv(&mut self, now: u64) -> Option<Vec<u8>> {
        self.advance(now);
        match self.outbound.front() {
            Some((t, _)) if *t <= now => self.outbound.pop_front().map(|(_, f)| f),
            _ => None,
        }
    }

    /// The cycle the peer next has a frame for the guest or must run.
    pub fn next_event(&self) -> Option<u64> {
        [
            self.outbound.front().map(|f| f.0),
            self.inbound.front().map(|f| f.0),
            self.poll_at,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Run the peer up to cycle `now`: frames from the guest are taken at
    /// their arrival cycles, smoltcp's timers fire at theirs.
    pub fn advance(&mut self, now: u64) {
        state::note_advance(&mut self.inputs, now);
        loop {
            let next_in = self.inbound.front().map(|f| f.0).filter(|&t| t <= now);
            let next_poll = self.poll_at.filter(|&t| t <= now);
            let t = match (next_in, next_poll) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(t) => t,
                    None => break,
                },
            };
            while let Some((at, _)) = self.inbound.front() {
                if *at > t {
                    break;
                }
                let (_, f) = self.inbound.pop_front().expect("checked");
                self.stat_frames_in += 1;
                self.stat_bytes_in += f.len() as u64;
                self.queues.rx.push_back(f);
            }
            self.poll(t.max(self.now));
        }
        self.now = self.now.max(now);
    }

    fn poll(&mut self, at: u64) {
        self.now = self.now.max(at);
        let ts = self.instant(self.now);
        // Poll until quiet: services may queue data that smoltcp then sends.
        for _ in 0..64 {
            let changed = self.iface.poll(ts, &mut self.queues, &mut self.sockets);
            let moved = self.run_services();
            if changed == smoltcp::iface::PollResult::None && !moved {
                break;
            }
        }
        for f in std::mem::take(&mut self.queues.tx) {
            let start = self.now.max(self.line_free);
            let done = start + self.wire_cycles(f.len());
            self.line_free = done;
            let arrive = done + self.ns_to_cycles(self.cfg.latency_ns);
            self.stat_frames_out += 1;
            self.stat_bytes_out += f.len() as u64;
            self.outbound.push_back((arrive, f));
        }
        self.poll_at = self
            .iface
            .poll_at(ts, &self.sockets)
            .map(|t| self.cycle_of(t).max(self.now + 1));
        // A UDP source with datagrams left goes on when the line is free.
        if self.services.iter().any(Running::udp_pending) {
            let at = self.line_free.max(self.now + 1);
            self.poll_at = Some(self.poll_at.map_or(at, |p| p.min(at)));
        }
    }

    /// Feed the sources and drain the sinks; true if any moved data.
    fn run_services(&mut self) -> bool {
        let now = self.now;
        let mut moved = false;
        // A UDP source may queue this many more frames on the line now.
        let room = self.udp_room();
        for r in &mut self.services {
            match r.service {
                Service::UdpSource { .. } => {
                    moved |=
                        udp_source(self.sockets.get_mut::<udp::Socket>(r.handle), r, now, room);
                    continue;
                }
                Service::UdpSink { .. } => {
                    moved |= udp_sink(self.sockets.get_mut::<udp::Socket>(r.handle), r, now);
                    continue;
                }
                _ => {}
            }
            // A finished connection makes way for the next: a fresh socket
            // listens again (the old one's TIME-WAIT is dropped; nothing is
            // lost on this wire, so no stray segment can need it).
            let state = self.sockets.get::<tcp::Socket>(r.handle).state();
            if r.done && matches!(state, tcp::State::Closed | tcp::State::TimeWait) {
                self.sockets.remove(r.handle);
                r.handle = self
                    .sockets
                    .add(listening_socket(self.cfg.tcp_buffer, r.service.port()));
                r.done = false;
                r.counted = false;
                r.sent = 0;
                r.request.clear();
                r.fnv = Fnv::default();
            }
            let sock = self.sockets.get_mut::<tcp::Socket>(r.handle);
            if sock.is_active() && !r.counted {
                // The record describes the latest connection.
                let connections = r.record.connections + 1;
                r.record = ServiceRecord {
                    connections,
                    ..ServiceRecord::default()
                };
                r.counted = true;
            }
            match r.service {
                Service::TcpSource { bytes, .. } => {
                    if r.done || !sock.may_send() {
                        continue;
                    }
                    let bytes = match bytes {
                        Some(b) => b,
                        None => {
                            while r.request.len() < 8 && sock.can_recv() {
                                let want = 8 - r.request.len();
                                let req = &mut r.request;
                                let _ = sock.recv(|buf| {
                                    let k = buf.len().min(want);
                                    req.extend_from_slice(&buf[..k]);
                                    (k, ())
                                });
                            }
                            if r.request.len() < 8 {
                                continue;
                            }
                            u64::from_be_bytes(r.request[..8].try_into().expect("8 bytes"))
                        }
                    };
                    while r.sent < bytes && sock.can_send() {
                        let start = r.sent;
                        let n = sock
                            .send(|buf| {
                                let k = buf
                                    .len()
                                    .min((bytes - start).min(usize::MAX as u64) as usize);
                                for (i, b) in buf[..k].iter_mut().enumerate() {
                                    *b = pattern_byte(start + i as u64);
                                }
                                (k, k)
                            })
                            .unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        if r.sent == 0 {
                            r.record.first_cycle = now;
                        }
                        r.sent += n as u64;
                        r.record.bytes = r.sent;
                        r.record.last_cycle = now;
                        moved = true;
                    }
                    if r.sent >= bytes {
                        sock.close();
                        r.done = true;
                        r.record.fnv = pattern_fnv(bytes);
                    }
                }
                Service::UdpSource { .. } | Service::UdpSink { .. } => {}
                Service::TcpSink { .. } => {
                    while sock.can_recv() {
                        let fnv = &mut r.fnv;
                        let n = sock
                            .recv(|buf| {
                                fnv.feed(buf);
                                (buf.len(), buf.len())
                            })
                            .unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        if r.record.bytes == 0 {
                            r.record.first_cycle = now;
                        }
                        r.record.bytes += n as u64;
                        r.record.last_cycle = now;
                        r.record.fnv = r.fnv.0;
                        moved = true;
                    }
                    // The sender closed and everything it sent was read
                    // (not merely "cannot receive": that is true during
                    // the handshake too, and closing there sent a FIN
                    // before any data).
                    if sock.state() == tcp::State::CloseWait && !sock.can_recv() && !r.done {
                        sock.close();
                        r.done = true;
                    }
                }
            }
        }
        moved
    }

    /// Frames a UDP source may add to the line now: [`UDP_AHEAD`] less those
    /// still queued on it (the line is busy until `line_free`) or waiting
    /// in smoltcp's output.
    fn udp_room(&self) -> u64 {
        let frame = self.wire_cycles(1514).max(1);
        let on_line = self.line_free.saturating_sub(self.now).div_ceil(frame);
        UDP_AHEAD.saturating_sub(on_line + self.queues.tx.len() as u64)
    }

    /// What each service did, in configuration order.
    pub fn records(&self) -> Vec<(Service, ServiceRecord)> {
        self.services
            .iter()
            .map(|r| (r.service.clone(), r.record.clone()))
            .collect()
    }

    /// Statistics as (name, value, description).
    pub fn stats(&self) -> Vec<(String, u64, &'static str)> {
        let mut v = vec![
            (
                "peer.frames_in".to_string(),
                self.stat_frames_in,
                "frames the peer took from the wire",
            ),
            (
                "peer.bytes_in".to_string(),
                self.stat_bytes_in,
                "bytes of those frames (no FCS)",
            ),
            (
                "peer.frames_out".to_string(),
                self.stat_frames_out,
                "frames the peer put on the wire",
            ),
            (
                "peer.bytes_out".to_string(),
                self.stat_bytes_out,
                "bytes of those frames (no FCS)",
            ),
            (
                "peer.malformed".to_string(),
                self.stat_malformed,
                "frames from the guest dropped: shorter than a header or longer than 1514 bytes",
            ),
        ];
        for (s, r) in self.records() {
            let name = s.stat_name();
            if s.is_udp() {
                v.push((
                    format!("{name}.datagrams"),
                    r.datagrams,
                    "datagrams sent or taken (end markers not counted)",
                ));
            }
            v.push((
                format!("{name}.bytes"),
                r.bytes,
                "bytes the service sent or received",
            ));
            v.push((format!("{name}.fnv1a"), r.fnv, "FNV-1a 64 of those bytes"));
            v.push((
                format!("{name}.first_cycle"),
                r.first_cycle,
                "cycle of the first byte",
            ));
            v.push((
                format!("{name}.last_cycle"),
                r.last_cycle,
                "cycle of the last byte",
            ));
            if !s.is_udp() {
                v.push((
                    format!("{name}.connections"),
                    r.connections,
                    "connections accepted",
                ));
            }
        }
        v
    }
}

/// The peer's address as smoltcp writes it (for tests and messages).
pub fn ip_text(ip: [u8; 4]) -> String {
    Ipv4Address::new(ip[0], ip[1], ip[2], ip[3]).to_string()
}

#[cfg(test)]
mod tests;
