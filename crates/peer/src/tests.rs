use super::*;
use smoltcp::socket::{icmp, udp};
use smoltcp::wire::{Icmpv4Packet, Icmpv4Repr};

const HZ: u64 = 1_000_000_000;

/// A second smoltcp stack standing in for the guest, on the other end of
/// the peer's wire (frames handed over at their cycles).
struct Guest {
    iface: Interface,
    sockets: SocketSet<'static>,
    q: Queues,
    /// Where the last `run` stopped (cycles).
    t: u64,
}

impl Guest {
    fn new() -> Self {
        let mut q = Queues::default();
        let mut c = Config::new(EthernetAddress([0x02, 0, 0, 0, 0, 0x10]).into());
        c.random_seed = 7;
        let mut iface = Interface::new(c, &mut q, Instant::from_micros(0));
        iface.update_ip_addrs(|a| {
            let _ = a.push(IpCidr::new(IpAddress::v4(10, 0, 2, 15), 24));
        });
        Self {
            iface,
            sockets: SocketSet::new(Vec::new()),
            q,
            t: 0,
        }
    }
}

/// Run both ends in 10 µs steps from where the last run stopped until
/// cycle `until` or `done` says so; the cycle it stopped at.
fn run(
    peer: &mut Peer,
    g: &mut Guest,
    until: u64,
    mut done: impl FnMut(&mut Guest) -> bool,
) -> u64 {
    let mut t = g.t;
    while t < until {
        t += 10_000;
        while let Some(f) = peer.recv(t) {
            g.q.rx.push_back(f);
        }
        let ts = Instant::from_micros((t / 1000) as i64);
        g.iface.poll(ts, &mut g.q, &mut g.sockets);
        for f in std::mem::take(&mut g.q.tx) {
            peer.send(f, t);
        }
        if done(g) {
            g.t = t;
            return t;
        }
    }
    g.t = t;
    t
}

#[test]
fn ping_is_answered_after_arp_with_the_wire_time_in_the_round_trip() {
    let mut peer = Peer::new(PeerConfig::new(HZ));
    let mut g = Guest::new();
    let rx = icmp::PacketBuffer::new(vec![icmp::PacketMetadata::EMPTY; 4], vec![0; 1024]);
    let tx = icmp::PacketBuffer::new(vec![icmp::PacketMetadata::EMPTY; 4], vec![0; 1024]);
    let h = g.sockets.add(icmp::Socket::new(rx, tx));
    g.sockets
        .get_mut::<icmp::Socket>(h)
        .bind(icmp::Endpoint::Ident(0x1234))
        .unwrap();
    let mut sent = false;
    let end = run(&mut peer, &mut g, 50_000_000, |g| {
        let s = g.sockets.get_mut::<icmp::Socket>(h);
        if !sent && s.can_send() {
            let repr = Icmpv4Repr::EchoRequest {
                ident: 0x1234,
                seq_no: 1,
                data: b"hartscope",
            };
            let buf = s
                .send(repr.buffer_len(), IpAddress::v4(10, 0, 2, 2))
                .unwrap();
            repr.emit(&mut Icmpv4Packet::new_unchecked(buf), &Default::default());
            sent = true;
        }
        if s.can_recv() {
            let (data, _) = s.recv().unwrap();
            let p = Icmpv4Packet::new_checked(data).unwrap();
            let r = Icmpv4Repr::parse(&p, &Default::default()).unwrap();
            return matches!(
                r,
                Icmpv4Repr::EchoReply {
                    seq_no: 1,
                    data: b"hartscope",
                    ..
                }
            );
        }
        false
    });
    assert!(end < 50_000_000, "no echo reply");
    let st = peer.stats();
    let get = |n: &str| st.iter().find(|s| s.0 == n).unwrap().1;
    // ARP request + echo request in, ARP reply + echo reply out.
    assert!(
        get("peer.frames_in") >= 2 && get("peer.frames_out") >= 2,
        "{st:?}"
    );
}

#[test]
fn a_tcp_source_delivers_its_pattern_intact_and_the_same_every_time() {
    let bytes = 300_000u64;
    let go = || {
        let mut cfg = PeerConfig::new(HZ);
        cfg.services = vec![Service::TcpSource {
            port: 5001,
            bytes: None,
        }];
        let mut peer = Peer::new(cfg);
        let mut g = Guest::new();
        let rx = tcp::SocketBuffer::new(vec![0; 65536]);
        let tx = tcp::SocketBuffer::new(vec![0; 4096]);
        let h = g.sockets.add(tcp::Socket::new(rx, tx));
        let cx = g.iface.context();
        g.sockets
            .get_mut::<tcp::Socket>(h)
            .connect(cx, (IpAddress::v4(10, 0, 2, 2), 5001), 40000)
            .unwrap();
        let mut got = Vec::new();
        let mut asked = false;
        let end = run(&mut peer, &mut g, 5_000_000_000, |g| {
            let s = g.sockets.get_mut::<tcp::Socket>(h);
            if !asked && s.can_send() {
                // The client names the size, as ttcp -c does.
                s.send_slice(&bytes.to_be_bytes()).unwrap();
                asked = true;
            }
            while s.can_recv() {
                s.recv(|b| {
                    got.extend_from_slice(b);
                    (b.len(), ())
                })
                .unwrap();
            }
            !s.may_recv() && got.len() as u64 == bytes
        });
        (end, got, peer.records())
    };
    let (end, got, records) = go();
    assert_eq!(got.len() as u64, bytes, "the stream was cut short");
    assert!(got
        .iter()
        .enumerate()
        .all(|(i, &b)| b == pattern_byte(i as u64)));
    let mut f = Fnv::default();
    f.feed(&got);
    assert_eq!(records[0].1.fnv, f.0);
    assert_eq!(records[0].1.bytes, bytes);
    // 10 Mbit/s bounds it: 300 kB take at least 0.24 s of wire time.
    assert!(end >= 240_000_000, "faster than the wire: {end} cycles");
    // Deterministic: the same cycles and records again.
    let (end2, _, records2) = go();
    assert_eq!((end, records), (end2, records2));
}

#[test]
fn a_tcp_sink_takes_the_stream_and_closes_after_the_sender_does() {
    let mut cfg = PeerConfig::new(HZ);
    cfg.services = vec![Service::TcpSink { port: 5002 }];
    let mut peer = Peer::new(cfg);
    let mut g = Guest::new();
    let rx = tcp::SocketBuffer::new(vec![0; 4096]);
    let tx = tcp::SocketBuffer::new(vec![0; 16384]);
    let h = g.sockets.add(tcp::Socket::new(rx, tx));
    let cx = g.iface.context();
    g.sockets
        .get_mut::<tcp::Socket>(h)
        .connect(cx, (IpAddress::v4(10, 0, 2, 2), 5002), 40001)
        .unwrap();
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    let mut sent = 0;
    let mut closed = false;
    run(&mut peer, &mut g, 5_000_000_000, |g| {
        let s = g.sockets.get_mut::<tcp::Socket>(h);
        while sent < data.len() && s.can_send() {
            sent += s.send_slice(&data[sent..]).unwrap();
        }
        if sent == data.len() && !closed {
            s.close();
            closed = true;
        }
        // The peer's FIN came back: the sender's half-close was answered.
        closed && matches!(s.state(), tcp::State::TimeWait | tcp::State::Closed)
    });
    let s = g.sockets.get::<tcp::Socket>(h);
    assert!(
        matches!(s.state(), tcp::State::TimeWait | tcp::State::Closed),
        "the sink never closed its side: the sender is in {:?}",
        s.state()
    );
    let mut f = Fnv::default();
    f.feed(&data);
    assert_eq!(peer.records()[0].1.bytes, data.len() as u64);
    assert_eq!(peer.records()[0].1.fnv, f.0);
    // The sink listens again: a second connection is taken and counted.
    let rx = tcp::SocketBuffer::new(vec![0; 4096]);
    let tx = tcp::SocketBuffer::new(vec![0; 16384]);
    let h2 = g.sockets.add(tcp::Socket::new(rx, tx));
    let cx = g.iface.context();
    g.sockets
        .get_mut::<tcp::Socket>(h2)
        .connect(cx, (IpAddress::v4(10, 0, 2, 2), 5002), 40002)
        .unwrap();
    let mut sent = false;
    let until = g.t + 5_000_000_000;
    let t = run(&mut peer, &mut g, until, |g| {
        let s = g.sockets.get_mut::<tcp::Socket>(h2);
        if !sent && s.can_send() {
            s.send_slice(&data[..1000]).unwrap();
            s.close();
            sent = true;
        }
        sent && matches!(s.state(), tcp::State::TimeWait | tcp::State::Closed)
    });
    assert!(t < until, "the second connection did not finish");
    let r = &peer.records()[0].1;
    assert_eq!((r.connections, r.bytes), (2, 1000));
}

#[test]
fn a_udp_source_sends_what_was_asked_at_the_line_rate_and_a_sink_takes_it() {
    let mut cfg = PeerConfig::new(HZ);
    cfg.services = vec![
        Service::UdpSource { port: 5003 },
        Service::UdpSink { port: 5004 },
    ];
    let mut peer = Peer::new(cfg);
    let mut g = Guest::new();
    let buf =
        || udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 256], vec![0u8; 256 * 1536]);
    let h = g.sockets.add(udp::Socket::new(buf(), buf()));
    g.sockets.get_mut::<udp::Socket>(h).bind(40003).unwrap();
    let (count, size) = (100u64, 1000usize);
    let src = IpEndpoint::new(IpAddress::v4(10, 0, 2, 2), 5003);
    let mut req = count.to_be_bytes().to_vec();
    req.extend_from_slice(&(size as u32).to_be_bytes());
    g.sockets
        .get_mut::<udp::Socket>(h)
        .send_slice(&req, src)
        .unwrap();
    let mut got = Vec::new();
    let mut markers = 0;
    let end = run(&mut peer, &mut g, 2_000_000_000, |g| {
        let s = g.sockets.get_mut::<udp::Socket>(h);
        while let Ok((d, _)) = s.recv() {
            if d.len() <= 4 {
                markers += 1;
            } else {
                got.extend_from_slice(d);
            }
        }
        markers == UDP_END_MARKERS
    });
    assert_eq!(got.len(), count as usize * size, "datagrams lost");
    assert!(got
        .iter()
        .enumerate()
        .all(|(i, &b)| b == pattern_byte(i as u64)));
    let r = &peer.records()[0].1;
    assert_eq!((r.datagrams, r.bytes), (count, got.len() as u64));
    assert_eq!(r.fnv, pattern_fnv(got.len() as u64));
    // 10 Mbit/s paces it: 100 frames of 1042 bytes take at least 85 ms.
    assert!(end >= 85_000_000, "faster than the wire: {end} cycles");
    // The sink: ten datagrams, then a marker that is not counted.
    let sink = IpEndpoint::new(IpAddress::v4(10, 0, 2, 2), 5004);
    for i in 0..10u8 {
        g.sockets
            .get_mut::<udp::Socket>(h)
            .send_slice(&[i; 600], sink)
            .unwrap();
    }
    g.sockets
        .get_mut::<udp::Socket>(h)
        .send_slice(&[0], sink)
        .unwrap();
    let until = g.t + 100_000_000;
    run(&mut peer, &mut g, until, |_| false);
    let r = &peer.records()[1].1;
    assert_eq!((r.datagrams, r.bytes), (10, 6000));
    let mut f = Fnv::default();
    for i in 0..10u8 {
        f.feed(&[i; 600]);
    }
    assert_eq!(r.fnv, f.0);
}

#[test]
fn malformed_frames_are_counted_not_taken() {
    let mut peer = Peer::new(PeerConfig::new(HZ));
    peer.send(vec![0; 10], 0);
    peer.send(vec![0; 2000], 0);
    peer.send(vec![0xff; 60], 0); // a well-formed runt of garbage: smoltcp drops it
    peer.advance(1_000_000);
    let st = peer.stats();
    let get = |n: &str| st.iter().find(|s| s.0 == n).unwrap().1;
    assert_eq!(get("peer.malformed"), 2);
    assert_eq!(get("peer.frames_in"), 1);
}

#[test]
fn the_pattern_fingerprint_matches_a_direct_hash() {
    let mut f = Fnv::default();
    let data: Vec<u8> = (0..1000u64).map(pattern_byte).collect();
    f.feed(&data);
    assert_eq!(pattern_fnv(1000), f.0);
    assert_eq!(pattern_fnv(0), Fnv::default().0);
}

/// What the guest's side did to the peer and what came back, in order.
#[derive(Debug, PartialEq)]
enum Step {
    Recv(u64, Option<Vec<u8>>),
    Send(u64, Vec<u8>),
}

/// [`run`], recording every call into the peer and its answer.
fn run_recorded(peer: &mut Peer, g: &mut Guest, until: u64, steps: &mut Vec<Step>) {
    let mut t = g.t;
    while t < until {
        t += 10_000;
        loop {
            let f = peer.recv(t);
            steps.push(Step::Recv(t, f.clone()));
            let Some(f) = f else { break };
            g.q.rx.push_back(f);
        }
        let ts = Instant::from_micros((t / 1000) as i64);
        g.iface.poll(ts, &mut g.q, &mut g.sockets);
        for f in std::mem::take(&mut g.q.tx) {
            steps.push(Step::Send(t, f.clone()));
            peer.send(f, t);
        }
    }
    g.t = t;
}

/// The same calls again; what the peer answers.
fn replay(peer: &mut Peer, steps: &[Step]) -> Vec<Step> {
    steps
        .iter()
        .map(|s| match s {
            Step::Recv(t, _) => Step::Recv(*t, peer.recv(*t)),
            Step::Send(t, f) => {
                peer.send(f.clone(), *t);
                Step::Send(*t, f.clone())
            }
        })
        .collect()
}

#[test]
fn a_restored_peer_continues_a_tcp_transfer_byte_for_byte() {
    use hs_snapshot::state::Persist;
    let mut cfg = PeerConfig::new(HZ);
    cfg.services = vec![
        Service::TcpSource {
            port: 5001,
            bytes: None,
        },
        Service::UdpSink { port: 5004 },
    ];
    let mut peer = Peer::new(cfg.clone());
    let mut g = Guest::new();
    let rx = tcp::SocketBuffer::new(vec![0; 65536]);
    let tx = tcp::SocketBuffer::new(vec![0; 4096]);
    let h = g.sockets.add(tcp::Socket::new(rx, tx));
    let cx = g.iface.context();
    g.sockets
        .get_mut::<tcp::Socket>(h)
        .connect(cx, (IpAddress::v4(10, 0, 2, 2), 5001), 40000)
        .unwrap();
    let mut asked = false;
    let mut got = 0usize;
    // Into the middle of the transfer: a window in flight, frames on the wire.
    run(&mut peer, &mut g, 60_000_000, |g| {
        let s = g.sockets.get_mut::<tcp::Socket>(h);
        if !asked && s.can_send() {
            s.send_slice(&200_000u64.to_be_bytes()).unwrap();
            asked = true;
        }
        while s.can_recv() {
            got += s.recv(|b| (b.len(), b.len())).unwrap();
        }
        false
    });
    assert!(got > 10_000 && got < 200_000, "mid-transfer: {got} bytes");
    let saved = peer.save().unwrap();
    // The original goes on; every call into it and every answer is kept.
    let mut steps = Vec::new();
    let mut g2 = g;
    for _ in 0..40 {
        let until = g2.t + 5_000_000;
        run_recorded(&mut peer, &mut g2, until, &mut steps);
        let s = g2.sockets.get_mut::<tcp::Socket>(h);
        while s.can_recv() {
            got += s.recv(|b| (b.len(), b.len())).unwrap();
        }
    }
    assert!(steps.iter().filter(|s| matches!(s, Step::Send(..))).count() > 20);
    assert!(
        got > 150_000,
        "the transfer went on after the save: {got} bytes"
    );
    // A peer built the same way and restored answers the same calls with
    // the same frames at the same cycles.
    let mut again = Peer::new(cfg);
    again.restore(&saved).unwrap();
    assert_eq!(again.save().unwrap(), saved, "save of a restored peer");
    let answers = replay(&mut again, &steps);
    assert!(answers == steps, "the restored peer answered differently");
    assert_eq!(again.records(), peer.records());
    assert_eq!(again.stats(), peer.stats());
    assert_eq!(again.next_event(), peer.next_event());
    assert_eq!(again.save().unwrap(), peer.save().unwrap());
}

#[test]
fn a_peer_refuses_a_foreign_or_damaged_section() {
    use hs_snapshot::state::Persist;
    let mut peer = Peer::new(PeerConfig::new(HZ));
    peer.send(vec![0xff; 60], 10);
    peer.send(vec![0; 3], 20);
    peer.advance(1_000_000);
    let saved = peer.save().unwrap();
    let mut other_cfg = PeerConfig::new(HZ);
    other_cfg.latency_ns = 7;
    let mut other = Peer::new(other_cfg);
    let e = other.restore(&saved).unwrap_err();
    assert!(e.contains("configured"), "{e}");
    let mut p = Peer::new(PeerConfig::new(HZ));
    for bad in [&b"garbage"[..], b"{}", b"[1,2]", br#"{"level":3}"#] {
        assert!(p.restore(bad).is_err());
    }
    // A history that does not lead to the saved state: refused.
    let text = String::from_utf8(saved.clone()).unwrap();
    let tampered = text.replacen(r#""Advance":1000000}"#, r#""Advance":999999}"#, 1);
    assert_ne!(tampered, text);
    let e = p.restore(tampered.as_bytes()).unwrap_err();
    assert!(e.contains("did not rebuild"), "{e}");
    let bad_hex = text.replacen("ffff", "fzff", 1);
    let e = p.restore(bad_hex.as_bytes()).unwrap_err();
    assert!(e.contains("inputs"), "{e}");
    // Refusals changed nothing; the good section still restores.
    p.restore(&saved).unwrap();
    assert_eq!(p.stats(), peer.stats());
}
