//! virtio-net through its backend interface, with a scripted wire in place
//! of the peer: frames the driver posts go out at the link rate and come
//! back as the wire sent them; a malformed queue is DEVICE_NEEDS_RESET;
//! and random descriptor tables and rings never panic the host and repeat
//! exactly.

use crate::wire;

use hs_devices::virtio_mmio::{NeedsReset, QueueConfig, VirtioBackend};
use hs_devices::virtio_net::{VirtioNet, HDR_LEN, RX, TX};
use hs_devices::virtqueue::{DESC_F_NEXT, DESC_F_WRITE};
use hs_devices::{DevCtx, GuestRam, Scheduler};
use proptest::prelude::*;
use wire::Echo;

const RAM: u64 = 0x8000_0000;
const HZ: u64 = 1_000_000_000;

#[derive(Default)]
struct Rec(Vec<u64>);
impl Scheduler for Rec {
    fn schedule(&mut self, cycle: u64, _token: u64) {
        self.0.push(cycle);
    }
}

/// Queue `i` at a fixed place: table, available and used rings.
fn queue(i: u64, size: u16) -> QueueConfig {
    let base = RAM + 0x1_0000 * (i + 1);
    QueueConfig {
        size,
        ready: true,
        desc: base,
        driver: base + 0x4000,
        device: base + 0x8000,
    }
}

fn put_desc(ram: &GuestRam, q: &QueueConfig, i: u16, addr: u64, len: u32, flags: u16, next: u16) {
    let mut d = [0u8; 16];
    d[0..8].copy_from_slice(&addr.to_le_bytes());
    d[8..12].copy_from_slice(&len.to_le_bytes());
    d[12..14].copy_from_slice(&flags.to_le_bytes());
    d[14..16].copy_from_slice(&next.to_le_bytes());
    assert!(ram.write_bytes(q.desc + 16 * i as u64, &d));
}

/// Make chain `head` available at ring position `pos`.
fn offer(ram: &GuestRam, q: &QueueConfig, pos: u16, head: u16) {
    assert!(ram.write(q.driver + 4 + 2 * (pos % q.size) as u64, 2, head as u64));
    assert!(ram.write(q.driver + 2, 2, pos.wrapping_add(1) as u64));
}

fn used_idx(ram: &GuestRam, q: &QueueConfig) -> u16 {
    ram.read(q.device + 2, 2).unwrap() as u16
}

struct Rig {
    ram: GuestRam,
    net: VirtioNet,
    wire: Echo,
    ev: Rec,
}

impl Rig {
    fn new() -> Rig {
        let ram = GuestRam::new(RAM, 1 << 20).unwrap();
        let wire = Echo {
            delay: 10_000,
            ..Echo::default()
        };
        let mut net = VirtioNet::new(
            ram.clone(),
            [2, 0, 0, 0, 0, 1],
            Box::new(wire.clone()),
            1_000_000_000,
            HZ,
        );
        net.activate(1 << 32);
        Rig {
            ram,
            net,
            wire,
            ev: Rec::default(),
        }
    }
    fn notify(&mut self, now: u64, i: u16) -> Result<u32, NeedsReset> {
        let mut ctx = DevCtx::new(0, now, &mut self.ev);
        self.net.notify(&mut ctx, i, &queue(i as u64, 16))
    }
    fn event(&mut self, now: u64) -> Result<u32, NeedsReset> {
        let mut ctx = DevCtx::new(0, now, &mut self.ev);
        self.net.event(&mut ctx, 0, &[queue(0, 16), queue(1, 16)])
    }
}

#[test]
fn a_frame_goes_out_at_the_link_rate_and_comes_back_into_a_receive_buffer() {
    let mut r = Rig::new();
    let (rxq, txq) = (queue(RX as u64, 16), queue(TX as u64, 16));
    // Transmit: header and frame in two descriptors.
    let frame: Vec<u8> = (0..100u8).collect();
    assert!(r.ram.write_bytes(RAM + 0x5_0000, &[0u8; HDR_LEN]));
    assert!(r.ram.write_bytes(RAM + 0x5_1000, &frame));
    put_desc(
        &r.ram,
        &txq,
        0,
        RAM + 0x5_0000,
        HDR_LEN as u32,
        DESC_F_NEXT,
        1,
    );
    put_desc(&r.ram, &txq, 1, RAM + 0x5_1000, 100, 0, 0);
    offer(&r.ram, &txq, 0, 0);
    // A receive buffer of 2 KiB.
    put_desc(&r.ram, &rxq, 0, RAM + 0x6_0000, 2048, DESC_F_WRITE, 0);
    offer(&r.ram, &rxq, 0, 0);
    assert_eq!(r.notify(1000, TX), Ok(0));
    // (8 + 100 + 4) * 8 + 96 bits at 1 Gbit/s = 992 ns.
    let done = *r.ev.0.iter().min().unwrap();
    assert_eq!(done, 1000 + 992);
    assert_eq!(r.event(done), Ok(hs_devices::virtio_mmio::INT_USED_BUFFER));
    assert_eq!(used_idx(&r.ram, &txq), 1);
    assert_eq!(r.wire.sent.borrow()[0], (done, frame.clone()));
    // The echo arrives 10 us later, into the posted buffer, after a zero header.
    assert_eq!(
        r.event(done + 10_000),
        Ok(hs_devices::virtio_mmio::INT_USED_BUFFER)
    );
    assert_eq!(used_idx(&r.ram, &rxq), 1);
    let len = r.ram.read(rxq.device + 8, 4).unwrap();
    assert_eq!(len, (HDR_LEN + 100) as u64);
    let mut got = vec![0u8; HDR_LEN + 100];
    assert!(r.ram.read_bytes(RAM + 0x6_0000, &mut got));
    assert_eq!(&got[HDR_LEN..], &frame[..]);
    assert_eq!(u16::from_le_bytes([got[10], got[11]]), 1, "num_buffers");
}

#[test]
fn malformed_queues_need_a_reset_and_runts_are_dropped() {
    let mut r = Rig::new();
    let txq = queue(TX as u64, 16);
    // A chain that loops.
    put_desc(&r.ram, &txq, 0, RAM + 0x5_0000, 64, DESC_F_NEXT, 0);
    offer(&r.ram, &txq, 0, 0);
    assert_eq!(r.notify(0, TX), Err(NeedsReset));
    // Fresh device: a runt (header only) is dropped but its buffer returns.
    let mut r = Rig::new();
    put_desc(&r.ram, &txq, 0, RAM + 0x5_0000, HDR_LEN as u32 + 4, 0, 0);
    offer(&r.ram, &txq, 0, 0);
    assert_eq!(r.notify(0, TX), Ok(0));
    r.event(1).unwrap();
    assert_eq!(used_idx(&r.ram, &txq), 1);
    assert!(r.wire.sent.borrow().is_empty());
    let st = r.net.stats("n");
    assert_eq!(
        st.iter().find(|s| s.name == "n.tx_dropped").unwrap().value,
        1
    );
    // An available index more than a queue ahead.
    let mut r = Rig::new();
    assert!(r.ram.write(txq.driver + 2, 2, 40));
    assert_eq!(r.notify(0, TX), Err(NeedsReset));
}

#[derive(Debug, Clone)]
enum Op {
    Desc {
        q: u8,
        i: u8,
        addr: u32,
        len: u16,
        flags: u8,
        next: u8,
    },
    Offer {
        q: u8,
        pos: u8,
        head: u8,
    },
    Notify(u8),
    Event(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..2u8, 0..20u8, 0..0x10_0000u32, 0..2100u16, 0..8u8, 0..20u8)
            .prop_map(|(q, i, addr, len, flags, next)| Op::Desc { q, i, addr, len, flags, next }),
        3 => (0..2u8, any::<u8>(), 0..20u8).prop_map(|(q, pos, head)| Op::Offer { q, pos, head }),
        2 => (0..3u8).prop_map(Op::Notify),
        2 => any::<u16>().prop_map(Op::Event),
    ]
}

fn session(ops: &[Op]) -> (Vec<String>, Vec<(String, u64)>, Vec<(u64, Vec<u8>)>) {
    let mut r = Rig::new();
    let mut log = Vec::new();
    let mut now = 0u64;
    for op in ops {
        match *op {
            Op::Desc {
                q,
                i,
                addr,
                len,
                flags,
                next,
            } => {
                let qc = queue(q as u64, 16);
                put_desc(
                    &r.ram,
                    &qc,
                    i as u16 % 16,
                    RAM + addr as u64,
                    len as u32,
                    flags as u16,
                    next as u16,
                );
            }
            Op::Offer { q, pos, head } => {
                offer(&r.ram, &queue(q as u64, 16), pos as u16, head as u16)
            }
            Op::Notify(i) => log.push(format!("{:?}", r.notify(now, i as u16))),
            Op::Event(dt) => {
                now += dt as u64;
                log.push(format!("{:?}", r.event(now)));
            }
        }
    }
    let stats = r
        .net
        .stats("n")
        .into_iter()
        .map(|s| (s.name, s.value))
        .collect();
    let sent = r.wire.sent.borrow().clone();
    (log, stats, sent)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_rings_never_fault_and_repeat_exactly(ops in prop::collection::vec(op(), 1..120)) {
        prop_assert_eq!(session(&ops), session(&ops));
    }
}
