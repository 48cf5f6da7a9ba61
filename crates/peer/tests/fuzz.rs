//! Random frames from the guest against the peer: whatever the guest puts
//! on the wire (garbage, truncated headers, bad checksums, giants) the peer
//! never panics, counts what it drops, and answers the same way every time.

use hs_peer::{Peer, PeerConfig, Service};
use proptest::prelude::*;

fn frame() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // anything at all
        prop::collection::vec(any::<u8>(), 0..1600),
        // addressed to the peer, IPv4 or ARP ethertype, random payload
        (
            prop::sample::select(vec![[0x08u8, 0x00], [0x08, 0x06]]),
            prop::collection::vec(any::<u8>(), 0..200)
        )
            .prop_map(|(et, body)| {
                let mut f = vec![0x52, 0x54, 0x00, 0x12, 0x35, 0x02, 0x02, 0, 0, 0, 0, 0x10];
                f.extend_from_slice(&et);
                f.extend(body);
                f
            }),
    ]
}

fn run(frames: &[(u64, Vec<u8>)]) -> (Vec<(u64, Vec<u8>)>, Vec<(String, u64, &'static str)>) {
    let mut cfg = PeerConfig::new(1_000_000_000);
    cfg.services = vec![
        Service::TcpSource {
            port: 5001,
            bytes: None,
        },
        Service::TcpSink { port: 5002 },
    ];
    let mut p = Peer::new(cfg);
    let mut out = Vec::new();
    let mut t = 0;
    for (dt, f) in frames {
        t += dt;
        p.send(f.clone(), t);
        while let Some(g) = p.recv(t) {
            out.push((t, g));
        }
    }
    t += 1_000_000_000;
    p.advance(t);
    while let Some(g) = p.recv(t) {
        out.push((t, g));
    }
    (out, p.stats())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn random_frames_never_panic_and_repeat_exactly(
        frames in prop::collection::vec((0..2_000_000u64, frame()), 0..40)
    ) {
        let (a_out, a_stats) = run(&frames);
        let (b_out, b_stats) = run(&frames);
        let malformed = frames.iter().filter(|(_, f)| f.len() < 14 || f.len() > 1514).count() as u64;
        let got = a_stats.iter().find(|s| s.0 == "peer.malformed").unwrap().1;
        prop_assert_eq!(got, malformed);
        prop_assert_eq!(a_out, b_out);
        prop_assert_eq!(a_stats, b_stats);
    }
}
