//! Snapshots of the NICs with the deterministic peer on their wire: a NIC
//! restored mid-exchange (a frame on the wire, answers in the rings) goes
//! on exactly as the saved one, peer included; a NIC on a wire without
//! save/restore is refused.

use crate::wire;

use hs_devices::ether::WireConfig;
use hs_devices::ethoc::*;
use hs_devices::virtio_mmio::{QueueConfig, VirtioBackend};
use hs_devices::virtio_net::{VirtioNet, HDR_LEN, RX, TX};
use hs_devices::virtqueue::{DESC_F_NEXT, DESC_F_WRITE};
use hs_devices::{DevCtx, Device, GuestRam, IrqLine, Scheduler, Stat, WireIrq};

const HZ: u64 = 1_000_000_000;
const RAM: u64 = 0x8000_0000;
const BASE: u64 = 0x4000_0000;
const MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];

#[derive(Default)]
struct Rec(Vec<u64>);
impl Scheduler for Rec {
    fn schedule(&mut self, cycle: u64, _token: u64) {
        self.0.push(cycle);
    }
}

fn wire_config() -> WireConfig {
    WireConfig {
        mac: MAC,
        link_mbps: 100,
        latency_ns: 2_000,
        tcp_source: None,
        tcp_sink: None,
        udp_source: None,
        udp_sink: None,
        tcp_buffer_kib: 16,
    }
}

/// An ARP request for the peer's 10.0.2.2 from 10.0.2.15.
fn arp_request() -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&MAC);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
    f.extend_from_slice(&MAC);
    f.extend_from_slice(&[10, 0, 2, 15, 0, 0, 0, 0, 0, 0, 10, 0, 2, 2]);
    f
}

fn stat(stats: &[Stat], name: &str) -> u64 {
    stats.iter().find(|s| s.name == name).map_or(0, |s| s.value)
}

// ---- virtio-net ----

fn queue(i: u64) -> QueueConfig {
    let base = RAM + 0x1_0000 * (i + 1);
    QueueConfig {
        size: 16,
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

fn offer(ram: &GuestRam, q: &QueueConfig, pos: u16, head: u16) {
    assert!(ram.write(q.driver + 4 + 2 * (pos % q.size) as u64, 2, head as u64));
    assert!(ram.write(q.driver + 2, 2, pos.wrapping_add(1) as u64));
}

struct Net {
    ram: GuestRam,
    net: VirtioNet,
    ev: Rec,
    tx_pos: u16,
}

impl Net {
    fn new() -> Net {
        let ram = GuestRam::new(RAM, 1 << 20).unwrap();
        let peer = wire_config().peer(HZ);
        let mut net = VirtioNet::new(ram.clone(), MAC, Box::new(peer), 100_000_000, HZ);
        net.activate(1 << 32);
        Net {
            ram,
            net,
            ev: Rec::default(),
            tx_pos: 0,
        }
    }
    /// Eight 2 KiB receive buffers.
    fn post_rx(&mut self) {
        let q = queue(RX as u64);
        for i in 0..8u16 {
            put_desc(
                &self.ram,
                &q,
                i,
                RAM + 0x6_0000 + 0x800 * i as u64,
                2048,
                DESC_F_WRITE,
                0,
            );
            offer(&self.ram, &q, i, i);
        }
    }
    fn send(&mut self, now: u64, frame: &[u8]) {
        let q = queue(TX as u64);
        let (h, d) = (2 * self.tx_pos, 2 * self.tx_pos + 1);
        let at = RAM + 0x5_0000 + 0x800 * self.tx_pos as u64;
        assert!(self.ram.write_bytes(at, &[0u8; HDR_LEN]));
        assert!(self.ram.write_bytes(at + 0x100, frame));
        put_desc(&self.ram, &q, h, at, HDR_LEN as u32, DESC_F_NEXT, d);
        put_desc(&self.ram, &q, d, at + 0x100, frame.len() as u32, 0, 0);
        offer(&self.ram, &q, self.tx_pos, h);
        self.tx_pos += 1;
        let mut ctx = DevCtx::new(0, now, &mut self.ev);
        self.net.notify(&mut ctx, TX, &q).unwrap();
    }
    /// Serve every event due by `until`, in time order; the interrupts.
    fn run_to(&mut self, until: u64) -> Vec<(u64, u32)> {
        let mut irqs = Vec::new();
        loop {
            self.ev.0.sort_unstable();
            self.ev.0.dedup();
            let Some(&t) = self.ev.0.first().filter(|&&t| t <= until) else {
                break;
            };
            self.ev.0.remove(0);
            let mut ctx = DevCtx::new(0, t, &mut self.ev);
            irqs.push((
                t,
                self.net.event(&mut ctx, 0, &[queue(0), queue(1)]).unwrap(),
            ));
        }
        irqs
    }
    fn memory(&self) -> Vec<u8> {
        let mut m = vec![0u8; 1 << 20];
        assert!(self.ram.read_bytes(RAM, &mut m));
        m
    }
}

#[test]
fn a_restored_virtio_net_and_its_peer_go_on_as_the_saved_ones() {
    let mut a = Net::new();
    a.post_rx();
    a.send(1_000, &arp_request());
    a.run_to(100_000);
    assert_eq!(
        stat(&a.net.stats("n"), "n.rx_frames"),
        1,
        "the peer answered"
    );
    a.send(100_000, &arp_request()); // on the wire at the snapshot
    let saved = VirtioBackend::state(&a.net).unwrap().save().unwrap();

    let mut b = Net::new();
    assert!(b.ram.write_bytes(RAM, &a.memory()));
    b.ev.0 = a.ev.0.clone();
    b.tx_pos = a.tx_pos;
    VirtioBackend::state_mut(&mut b.net)
        .unwrap()
        .restore(&saved)
        .unwrap();
    assert_eq!(VirtioBackend::state(&b.net).unwrap().save().unwrap(), saved);
    assert_eq!(b.net.stats("n"), a.net.stats("n"));
    let mut irqs = Vec::new();
    for n in [&mut a, &mut b] {
        let mut i = n.run_to(200_000);
        n.send(200_000, &arp_request());
        i.extend(n.run_to(400_000));
        irqs.push(i);
    }
    assert_eq!(irqs[0], irqs[1]);
    assert_eq!(stat(&a.net.stats("n"), "n.rx_frames"), 3);
    assert_eq!(b.net.stats("n"), a.net.stats("n"));
    assert!(b.memory() == a.memory(), "the rings and buffers differ");
}

#[test]
fn virtio_net_refuses_a_scripted_wire_and_garbage() {
    let ram = GuestRam::new(RAM, 1 << 16).unwrap();
    let scripted = VirtioNet::new(ram, MAC, Box::new(wire::Echo::default()), 1, HZ);
    assert!(VirtioBackend::state(&scripted).is_none());
    let mut n = Net::new();
    let st = VirtioBackend::state_mut(&mut n.net).unwrap();
    for bad in [&b"[]"[..], b"[{}, \"\"]", b"{\"mac\":[1]}", b"\xff"] {
        assert!(st.restore(bad).is_err());
    }
}

// ---- ethoc ----

struct Mac {
    nic: Ethoc,
    irq: WireIrq,
    ev: Rec,
    now: u64,
}

impl Mac {
    fn new() -> Mac {
        let cfg = EthocConfig {
            wire: wire_config(),
            buffer_bytes: 96 * 1024,
            uio: false,
        };
        let irq = WireIrq::new();
        let line: Box<dyn IrqLine> = Box::new(irq.clone());
        let peer = cfg.wire.peer(HZ);
        let nic = Ethoc::new("eth0", cfg, BASE, line, Box::new(peer), HZ);
        Mac {
            nic,
            irq,
            ev: Rec::default(),
            now: 0,
        }
    }
    fn rd(&mut self, off: u64, size: u8) -> u64 {
        let mut ctx = DevCtx::new(0, self.now, &mut self.ev);
        self.nic.read(&mut ctx, off, size).unwrap()
    }
    fn wr(&mut self, off: u64, size: u8, v: u64) {
        let mut ctx = DevCtx::new(0, self.now, &mut self.ev);
        self.nic.write(&mut ctx, off, size, v).unwrap();
    }
    /// Linux's ring: 4 transmit and 4 receive descriptors, 1536 bytes apart.
    fn open(&mut self) {
        self.wr(TX_BD_NUM, 4, 4);
        for i in 0..8u64 {
            let stat = if i < 4 {
                TX_BD_IRQ | if i == 3 { TX_BD_WRAP } else { 0 }
            } else {
                RX_BD_EMPTY | RX_BD_IRQ | if i == 7 { RX_BD_WRAP } else { 0 }
            };
            self.wr(BD_BASE + 8 * i, 4, stat as u64);
            self.wr(BD_BASE + 8 * i + 4, 4, BASE + BUF_OFFSET + i * 1536);
        }
        self.wr(INT_MASK, 4, INT_ALL as u64);
        let m = self.rd(MODER, 4);
        self.wr(MODER, 4, m | (MODER_RXEN | MODER_TXEN) as u64);
    }
    fn send(&mut self, bd: u64, f: &[u8]) {
        for (i, b) in f.iter().enumerate() {
            self.wr(BUF_OFFSET + bd * 1536 + i as u64, 1, *b as u64);
        }
        let keep = self.rd(BD_BASE + 8 * bd, 4) as u32 & (TX_BD_IRQ | TX_BD_WRAP);
        let stat = keep | TX_BD_READY | (f.len() as u32) << 16;
        self.wr(BD_BASE + 8 * bd, 4, stat as u64);
    }
    fn run_to(&mut self, until: u64) {
        loop {
            self.ev.0.sort_unstable();
            self.ev.0.dedup();
            let Some(&t) = self.ev.0.first().filter(|&&t| t <= until) else {
                break;
            };
            self.ev.0.remove(0);
            self.now = self.now.max(t);
            let mut ctx = DevCtx::new(0, t, &mut self.ev);
            self.nic.event(&mut ctx, 0);
        }
        self.now = self.now.max(until);
    }
    /// Registers, descriptors, the receive buffers, counters, interrupt.
    fn seen(&mut self) -> (Vec<u64>, Vec<u64>, Vec<Stat>, bool) {
        let regs = (0..REGS_END)
            .step_by(4)
            .chain((0..16).map(|i| BD_BASE + 4 * i))
            .map(|o| self.rd(o, 4))
            .collect();
        let bufs = (0..4 * 1536 / 8)
            .map(|i| self.rd(BUF_OFFSET + 4 * 1536 + 8 * i, 8))
            .collect();
        (regs, bufs, self.nic.stats(), self.irq.is_high())
    }
}

#[test]
fn a_restored_ethoc_and_its_peer_go_on_as_the_saved_ones() {
    let mut a = Mac::new();
    a.open();
    a.send(0, &arp_request());
    a.run_to(100_000);
    assert_eq!(
        stat(&a.nic.stats(), "eth0.rx_frames"),
        1,
        "the peer answered"
    );
    a.wr(INT_SOURCE, 4, INT_ALL as u64);
    a.send(1, &arp_request()); // on the wire at the snapshot
    a.run_to(101_000);
    let saved = a.nic.state().unwrap().save().unwrap();

    let mut b = Mac::new();
    b.irq.set_level(a.irq.is_high());
    b.ev.0 = a.ev.0.clone();
    b.now = a.now;
    b.nic.state_mut().unwrap().restore(&saved).unwrap();
    assert_eq!(b.nic.state().unwrap().save().unwrap(), saved);
    assert_eq!(b.seen(), a.seen());
    for m in [&mut a, &mut b] {
        m.run_to(200_000);
        m.send(2, &arp_request());
        m.run_to(400_000);
    }
    let after = a.seen();
    assert_eq!(stat(&after.2, "eth0.rx_frames"), 3);
    assert_eq!(b.seen(), after);
}

#[test]
fn ethoc_refuses_another_configuration_and_garbage() {
    let a = Mac::new();
    let saved = a.nic.state().unwrap().save().unwrap();
    let cfg = EthocConfig {
        wire: wire_config(),
        buffer_bytes: 48 * 1024,
        uio: false,
    };
    let peer = cfg.wire.peer(HZ);
    let mut small = Ethoc::new(
        "eth0",
        cfg,
        BASE,
        Box::new(WireIrq::new()),
        Box::new(peer),
        HZ,
    );
    let e = small.state_mut().unwrap().restore(&saved).unwrap_err();
    assert!(e.contains("buffer_bytes"), "{e}");
    let mut b = Mac::new();
    for bad in [&b"[1]"[..], b"", b"[{}, \"{}\"]"] {
        assert!(b.nic.state_mut().unwrap().restore(bad).is_err());
    }
    let scripted = Ethoc::new(
        "eth0",
        EthocConfig {
            wire: wire_config(),
            buffer_bytes: 96 * 1024,
            uio: false,
        },
        BASE,
        Box::new(WireIrq::new()),
        Box::new(wire::Echo::default()),
        HZ,
    );
    assert!(scripted.state().is_none());
}
