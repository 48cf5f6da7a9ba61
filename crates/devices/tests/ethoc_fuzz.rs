//! The OpenCores Ethernet MAC through its registers, as Linux's `ethoc` and
//! the user-space driver use them, with a scripted wire in place of the
//! peer: a frame goes out at the link rate and comes back into a receive
//! buffer with its FCS; a full ring raises BUSY; the address filter; bad
//! descriptors end in an error status; and random register, descriptor and
//! packet-memory traffic never panics the host and repeats exactly.

use crate::wire;

use hs_devices::ether::WireConfig;
use hs_devices::ethoc::*;
use hs_devices::{DevCtx, Device, IrqLine, Scheduler, WireIrq};
use proptest::prelude::*;
use wire::Echo;

const HZ: u64 = 1_000_000_000;
const BASE: u64 = 0x4000_0000;
const MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];

#[derive(Default)]
struct Rec(Option<u64>);
impl Scheduler for Rec {
    fn schedule(&mut self, cycle: u64, _token: u64) {
        self.0 = Some(cycle);
    }
}

struct Bench {
    nic: Ethoc,
    irq: WireIrq,
    wire: Echo,
    sched: Rec,
    now: u64,
}

impl Bench {
    fn new(delay: u64) -> Self {
        let wire = Echo {
            delay,
            ..Echo::default()
        };
        let irq = WireIrq::new();
        let cfg = EthocConfig {
            wire: WireConfig {
                mac: MAC,
                link_mbps: 100,
                latency_ns: 0,
                tcp_source: None,
                tcp_sink: None,
                udp_source: None,
                udp_sink: None,
                tcp_buffer_kib: 16,
            },
            buffer_bytes: 96 * 1024,
            uio: false,
        };
        let line: Box<dyn IrqLine> = Box::new(irq.clone());
        let nic = Ethoc::new("eth0", cfg, BASE, line, Box::new(wire.clone()), HZ);
        Bench {
            nic,
            irq,
            wire,
            sched: Rec::default(),
            now: 0,
        }
    }
    fn rd(&mut self, off: u64) -> u32 {
        let mut ctx = DevCtx::new(0, self.now, &mut self.sched);
        self.nic.read(&mut ctx, off, 4).expect("register read") as u32
    }
    fn wr(&mut self, off: u64, v: u32) {
        let mut ctx = DevCtx::new(0, self.now, &mut self.sched);
        self.nic
            .write(&mut ctx, off, 4, v as u64)
            .expect("register write");
    }
    fn put(&mut self, at: u64, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            let mut ctx = DevCtx::new(0, self.now, &mut self.sched);
            self.nic
                .write(&mut ctx, BUF_OFFSET + at + i as u64, 1, *b as u64)
                .unwrap();
        }
    }
    fn get(&mut self, at: u64, len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| {
                let mut ctx = DevCtx::new(0, self.now, &mut self.sched);
                self.nic
                    .read(&mut ctx, BUF_OFFSET + at + i as u64, 1)
                    .unwrap() as u8
            })
            .collect()
    }
    /// Run scheduled events up to `until`.
    fn run_to(&mut self, until: u64) {
        while let Some(at) = self.sched.0.take() {
            if at > until {
                self.sched.0 = Some(at);
                break;
            }
            self.now = at;
            let mut ctx = DevCtx::new(0, at, &mut self.sched);
            self.nic.event(&mut ctx, 0);
        }
        self.now = self.now.max(until);
    }
    /// What Linux's ethoc_init_ring + ethoc_reset do: 4 transmit and 4
    /// receive descriptors over buffers 1536 bytes apart.
    fn linux_open(&mut self) {
        self.wr(TX_BD_NUM, 4);
        for i in 0..8u32 {
            let stat = if i < 4 {
                TX_BD_IRQ | if i == 3 { TX_BD_WRAP } else { 0 }
            } else {
                RX_BD_EMPTY | RX_BD_IRQ | if i == 7 { RX_BD_WRAP } else { 0 }
            };
            let addr = (BASE + BUF_OFFSET) as u32 + i * 1536;
            self.wr(BD_BASE + 8 * i as u64, stat);
            self.wr(BD_BASE + 8 * i as u64 + 4, addr);
        }
        self.wr(INT_SOURCE, INT_ALL);
        self.wr(INT_MASK, INT_ALL);
        let m = self.rd(MODER);
        self.wr(MODER, m | MODER_RXEN | MODER_TXEN);
    }
    fn send(&mut self, bd: u64, frame: &[u8]) {
        self.put(bd * 1536, frame);
        let stat = self.rd(BD_BASE + 8 * bd) & (TX_BD_IRQ | TX_BD_WRAP);
        self.wr(
            BD_BASE + 8 * bd,
            stat | TX_BD_READY | (frame.len() as u32) << 16,
        );
    }
    fn stat(&self, name: &str) -> u64 {
        self.nic
            .stats()
            .iter()
            .find(|s| s.name == format!("eth0.{name}"))
            .map(|s| s.value)
            .unwrap_or_else(|| panic!("no statistic eth0.{name}"))
    }
}

fn frame(dst: [u8; 6], len: usize) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&[0x52, 0x54, 0, 0x12, 0x35, 2, 0x08, 0x00]);
    f.extend((0..len - 14).map(|i| i as u8));
    f
}

#[test]
fn a_frame_leaves_at_the_link_rate_and_comes_back_with_its_fcs() {
    let mut b = Bench::new(5_000);
    assert_eq!(b.rd(MODER), 0xa000, "reset value: PAD and CRC");
    // The configured address is in the MAC registers, as Linux reads it.
    assert_eq!(b.rd(MAC_ADDR1), 0x5254);
    assert_eq!(b.rd(MAC_ADDR0), 0x0012_3456);
    b.linux_open();
    let f = frame(MAC, 100);
    b.send(0, &f);
    assert!(!b.irq.is_high());
    // (8 preamble + 100 + 4 FCS) * 8 + 96 gap = 992 bits: 9920 ns at 100 Mbit/s.
    b.run_to(9_919);
    assert!(b.wire.sent.borrow().is_empty());
    assert_ne!(b.rd(BD_BASE) & TX_BD_READY, 0, "still sending");
    b.run_to(9_920);
    assert_eq!(b.wire.sent.borrow()[0], (9_920, f.clone()));
    assert_eq!(b.rd(BD_BASE) & TX_BD_READY, 0);
    assert_eq!(b.rd(INT_SOURCE) & INT_TXF, INT_TXF);
    assert!(b.irq.is_high());
    b.wr(INT_SOURCE, INT_TXF);
    assert!(!b.irq.is_high(), "writing ones clears the source");
    // The echo arrives in the first receive descriptor (index TX_BD_NUM).
    b.run_to(20_000);
    let rx = b.rd(BD_BASE + 8 * 4);
    assert_eq!(rx & RX_BD_EMPTY, 0);
    assert_eq!(rx >> 16, 104, "length with the FCS");
    let got = b.get(4 * 1536, 104);
    assert_eq!(&got[..100], &f[..]);
    assert_eq!(got[100..], crc32(&f).to_le_bytes());
    assert_eq!(b.rd(INT_SOURCE) & INT_RXF, INT_RXF);
    assert_eq!((b.stat("tx_frames"), b.stat("rx_frames")), (1, 1));
}

#[test]
fn with_no_empty_descriptor_a_frame_is_lost_and_busy_raised() {
    let mut b = Bench::new(1);
    b.linux_open();
    for i in 0..5u64 {
        b.send(i % 4, &frame(MAC, 60));
        b.run_to(b.now + 20_000);
    }
    assert_eq!(b.stat("rx_frames"), 4);
    assert_eq!(b.stat("rx_busy"), 1);
    assert_ne!(b.rd(INT_SOURCE) & INT_BUSY, 0);
    // The ring wrapped: transmit descriptor 0 was used twice.
    assert_eq!(b.stat("tx_frames"), 5);
}

#[test]
fn the_address_filter_takes_own_broadcast_and_hashed_multicast() {
    let mut b = Bench::new(1);
    b.linux_open();
    let other = [0x52, 0x54, 0, 0, 0, 9];
    let mcast = [0x01, 0x00, 0x5e, 0, 0, 1];
    for (i, dst) in [other, [0xff; 6], mcast].into_iter().enumerate() {
        b.send(i as u64, &frame(dst, 64));
        b.run_to(b.now + 20_000);
    }
    assert_eq!(b.stat("rx_frames"), 1, "broadcast only");
    assert_eq!(b.stat("rx_filtered"), 2);
    let bit = (crc32(&mcast) >> 26) & 0x3f;
    b.wr(
        if bit >= 32 { ETH_HASH1 } else { ETH_HASH0 },
        1 << (bit & 31),
    );
    b.send(3, &frame(mcast, 64));
    b.run_to(b.now + 20_000);
    assert_eq!(b.stat("rx_frames"), 2, "multicast through the hash");
}

#[test]
fn bad_descriptors_end_in_an_error_status_not_a_host_fault() {
    let mut b = Bench::new(1);
    b.linux_open();
    // A length that is no frame.
    b.wr(BD_BASE, TX_BD_IRQ | TX_BD_READY | 5 << 16);
    b.run_to(100);
    assert_ne!(b.rd(BD_BASE) & TX_BD_UR, 0);
    assert_ne!(b.rd(INT_SOURCE) & INT_TXE, 0);
    // An address outside packet memory, with no bus to reach RAM through.
    b.wr(BD_BASE + 12, 0x1000);
    b.put(1536, &frame(MAC, 64));
    b.wr(BD_BASE + 8, TX_BD_IRQ | TX_BD_READY | 64 << 16);
    b.run_to(200);
    assert_ne!(b.rd(BD_BASE + 8) & TX_BD_UR, 0);
    assert_eq!(b.stat("tx_errors"), 2);
    // A receive buffer outside memory: overrun status and RXE.
    b.wr(BD_BASE + 8 * 4 + 4, 0xffff_fff0);
    b.wr(BD_BASE + 16, TX_BD_IRQ);
    b.send(2, &frame(MAC, 64));
    b.run_to(50_000);
    assert_ne!(b.rd(BD_BASE + 8 * 4) & RX_BD_OR, 0);
    assert_ne!(b.rd(INT_SOURCE) & INT_RXE, 0);
    // Accesses the registers refuse: wrong width, past the window.
    let mut ctx = DevCtx::new(0, 0, &mut b.sched);
    assert!(b.nic.read(&mut ctx, MODER, 2).is_err());
    assert!(b.nic.read(&mut ctx, BUF_OFFSET + 96 * 1024, 1).is_err());
    assert!(b.nic.read(&mut ctx, BUF_OFFSET + 96 * 1024 - 4, 8).is_err());
}

#[test]
fn mdio_reaches_a_phy_at_address_one_with_the_link_up() {
    let mut b = Bench::new(1);
    let mdio_read = |b: &mut Bench, phy: u32, reg: u32| {
        b.wr(MIIADDRESS, phy | reg << 8);
        b.wr(MIICOMMAND, MIICOMMAND_READ);
        assert_eq!(b.rd(MIISTATUS) & 2, 0, "never busy");
        b.rd(MIIRX_DATA)
    };
    assert_eq!(mdio_read(&mut b, 0, 1), 0xffff, "nobody at address 0");
    assert_eq!(mdio_read(&mut b, 1, 1) & 0x24, 0x24, "link up, negotiated");
    assert_eq!(b.stat("mdio"), 2);
}

#[derive(Clone, Debug)]
enum Op {
    Reg(u64, u32),
    Bd(u8, bool, u32),
    Buf(u32, u8, u64),
    Read(u32, u8),
    Wait(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u64..0x16, any::<u32>()).prop_map(|(r, v)| Op::Reg(r * 4, v)),
        (0u8..128, any::<bool>(), any::<u32>()).prop_map(|(i, a, v)| Op::Bd(i, a, v)),
        (
            0u32..0x20000,
            prop_oneof![Just(1u8), Just(2), Just(4), Just(8), Just(3)],
            any::<u64>()
        )
            .prop_map(|(o, s, v)| Op::Buf(o, s, v)),
        (0u32..0x30000, prop_oneof![Just(1u8), Just(4), Just(8)]).prop_map(|(o, s)| Op::Read(o, s)),
        (0u32..50_000).prop_map(Op::Wait),
    ]
}

/// Apply `ops`; returns every statistic and the final registers.
fn session(ops: &[Op]) -> (Vec<(String, u64)>, Vec<u32>) {
    let mut b = Bench::new(3_000);
    b.linux_open();
    for o in ops {
        let mut ctx = DevCtx::new(0, b.now, &mut b.sched);
        match *o {
            Op::Reg(off, v) => {
                let _ = b.nic.write(&mut ctx, off, 4, v as u64);
            }
            Op::Bd(i, addr, v) => {
                let off = BD_BASE + 8 * i as u64 + if addr { 4 } else { 0 };
                // Keep a third of the addresses inside packet memory.
                let v = if addr && v % 3 == 0 {
                    (BASE + BUF_OFFSET) as u32 + v % (96 * 1024)
                } else {
                    v
                };
                let _ = b.nic.write(&mut ctx, off, 4, v as u64);
            }
            Op::Buf(off, size, v) => {
                let _ = b.nic.write(&mut ctx, BUF_OFFSET + off as u64, size, v);
            }
            Op::Read(off, size) => {
                let _ = b.nic.read(&mut ctx, off as u64, size);
            }
            Op::Wait(c) => b.run_to(b.now + c as u64),
        }
    }
    b.run_to(b.now + 1_000_000);
    let stats = b
        .nic
        .stats()
        .into_iter()
        .map(|s| (s.name, s.value))
        .collect();
    let regs = (0..0x15).map(|r| b.rd(r * 4)).collect();
    (stats, regs)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn random_traffic_never_panics_and_repeats(ops in proptest::collection::vec(op(), 0..120)) {
        let a = session(&ops);
        let b = session(&ops);
        prop_assert_eq!(a, b);
    }
}
