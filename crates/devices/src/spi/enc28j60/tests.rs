use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use super::*;

/// A wire whose far end is a script: frames arrive at given cycles, frames
/// sent are recorded with their cycle.
#[derive(Default)]
struct Script {
    incoming: VecDeque<(u64, Vec<u8>)>,
    sent: Rc<RefCell<Vec<(u64, Vec<u8>)>>>,
}

impl EthernetLink for Script {
    fn send(&mut self, frame: Vec<u8>, now: u64) {
        self.sent.borrow_mut().push((now, frame));
    }
    fn recv(&mut self, now: u64) -> Option<Vec<u8>> {
        match self.incoming.front() {
            Some((t, _)) if *t <= now => self.incoming.pop_front().map(|(_, f)| f),
            _ => None,
        }
    }
    fn next_event(&self) -> Option<u64> {
        self.incoming.front().map(|(t, _)| *t)
    }
}

const MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x10];

/// The chip at 1 GHz with a scripted wire; `t` is the SPI time cursor.
struct Rig {
    chip: Enc28j60,
    pin: Signal,
    sent: Rc<RefCell<Vec<(u64, Vec<u8>)>>>,
    t: u64,
}

impl Rig {
    fn new(incoming: Vec<(u64, Vec<u8>)>) -> Self {
        let pin = Signal::new();
        let cfg = Enc28j60Config {
            core_hz: 1_000_000_000,
            max_hz: 12_000_000,
            mac: MAC,
            int: Some(IntPin {
                gpio: "gpio0".into(),
                line: 3,
            }),
        };
        let mut chip = Enc28j60::new("spi0.cs0", cfg, Some(pin.clone()));
        let script = Script {
            incoming: incoming.into(),
            ..Default::default()
        };
        let sent = script.sent.clone();
        chip.connect(Box::new(script));
        Self {
            chip,
            pin,
            sent,
            t: 100,
        }
    }
    /// One chip-select frame: bytes out, bytes back (a byte per 1 µs).
    fn xfer(&mut self, out: &[u8]) -> Vec<u8> {
        self.chip.select(self.t);
        let back = out
            .iter()
            .map(|&b| {
                self.t += 1000;
                self.chip.exchange(b as u16, 8, self.t) as u8
            })
            .collect();
        self.chip.deselect(self.t);
        back
    }
    fn bank(&mut self, b: u8) {
        self.xfer(&[0xA0 | 0x1F, 0x03]);
        self.xfer(&[0x80 | 0x1F, b]);
    }
    fn wcr(&mut self, bank: u8, addr: u8, v: u8) {
        self.bank(bank);
        self.xfer(&[0x40 | addr, v]);
    }
    fn rcr(&mut self, bank: u8, addr: u8) -> u8 {
        self.bank(bank);
        if is_mac_mii(bank as usize, addr) {
            self.xfer(&[addr, 0, 0])[2]
        } else {
            self.xfer(&[addr, 0])[1]
        }
    }
    fn w16(&mut self, bank: u8, lo: u8, v: u16) {
        self.wcr(bank, lo, v as u8);
        self.wcr(bank, lo + 1, (v >> 8) as u8);
    }
    fn r16(&mut self, bank: u8, lo: u8) -> u16 {
        self.rcr(bank, lo) as u16 | (self.rcr(bank, lo + 1) as u16) << 8
    }
    fn write_mem(&mut self, at: u16, data: &[u8]) {
        self.w16(0, EWRPTL, at);
        let mut out = vec![0x7A];
        out.extend_from_slice(data);
        self.xfer(&out);
    }
    fn read_mem(&mut self, at: u16, n: usize) -> Vec<u8> {
        self.w16(0, ERDPTL, at);
        let mut out = vec![0x3A];
        out.resize(n + 1, 0);
        self.xfer(&out)[1..].to_vec()
    }
    fn phy_read(&mut self, r: u8) -> u16 {
        self.wcr(2, MIREGADR, r);
        self.wcr(2, MICMD, MICMD_MIIRD);
        self.t += 11_000;
        self.wcr(2, MICMD, 0);
        self.r16(2, MIRDL)
    }
    /// What Linux's enc28j60_hw_init + hw_enable leave: rings, filters,
    /// MAC address, interrupts, reception on.
    fn linux_init(&mut self) {
        self.xfer(&[0xFF]);
        self.w16(0, ERXSTL, 0x0000);
        self.w16(0, ERXRDPTL, 0x19FF);
        self.w16(0, ERXNDL, 0x19FF);
        self.w16(0, ETXSTL, 0x1A00);
        self.w16(0, ETXNDL, 0x1FFF);
        self.wcr(1, ERXFCON, ERXFCON_UCEN | 0x20 | ERXFCON_BCEN);
        self.wcr(2, MACON1, MACON1_MARXEN | 0x0C);
        for (reg, b) in [
            (0x04u8, MAC[0]),
            (0x05, MAC[1]),
            (0x02, MAC[2]),
            (0x03, MAC[3]),
            (0x00, MAC[4]),
            (0x01, MAC[5]),
        ] {
            self.wcr(3, reg, b);
        }
        self.xfer(&[0x40 | EIE, EIE_INTIE | 0x40 | 0x10 | 0x08 | 0x02 | 0x01]);
        self.xfer(&[0x80 | ECON1, ECON1_RXEN]);
    }
}

fn frame(dst: [u8; 6], len: usize, seed: u8) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x99, 0x08, 0x00]);
    f.extend((0..len - 14).map(|i| seed.wrapping_add(i as u8)));
    f
}

#[test]
fn reset_values_and_the_dummy_byte_of_mac_registers() {
    let mut r = Rig::new(vec![]);
    assert_eq!(r.rcr(3, EREVID), REV_ID);
    assert_eq!(r.rcr(0, ESTAT) & ESTAT_CLKRDY, ESTAT_CLKRDY);
    assert_eq!(r.r16(0, ERXNDL), 0x1FFF);
    r.wcr(2, MACON1, 0x0D);
    // A MAC register answers on the third byte; the second is the dummy.
    r.bank(2);
    assert_eq!(r.xfer(&[MACON1, 0, 0]), vec![0, 0, 0x0D]);
    // Bit field set on a MAC register is refused and counted.
    r.xfer(&[0x80 | MACON1, 0x02]);
    assert_eq!(r.rcr(2, MACON1), 0x0D);
    assert_eq!(r.chip.stat_bad_commands, 1);
    // The INT pin idles high (active low).
    assert!(r.pin.is_high());
}

#[test]
fn buffer_memory_autoincrements_and_the_phy_answers_through_the_mii() {
    let mut r = Rig::new(vec![]);
    r.write_mem(0x1A00, b"hello");
    assert_eq!(r.read_mem(0x1A00, 5), b"hello");
    assert_eq!(r.r16(0, EWRPTL), 0x1A05);
    assert_eq!(r.phy_read(PHHID1 as u8), 0x0083);
    assert_eq!(r.phy_read(PHHID2 as u8), 0x1400);
    assert_ne!(r.phy_read(PHSTAT2 as u8) & PHSTAT2_LSTAT, 0, "link up");
    // MISTAT.BUSY for 10.24 µs after a PHY command.
    r.wcr(2, MIREGADR, 0x14);
    r.wcr(2, MIWRL, 0x76);
    r.wcr(2, MIWRH, 0x34);
    assert_eq!(r.rcr(3, MISTAT) & MISTAT_BUSY, MISTAT_BUSY);
    r.t += 11_000;
    assert_eq!(r.rcr(3, MISTAT) & MISTAT_BUSY, 0);
    assert_eq!(r.phy_read(0x14), 0x3476);
}

#[test]
fn a_transmitted_frame_leaves_after_its_wire_time_and_raises_txif() {
    let mut r = Rig::new(vec![]);
    r.linux_init();
    let f = frame([0x02, 0, 0, 0, 0, 0x99], 100, 7);
    r.w16(0, ETXSTL, 0x1A00);
    r.w16(0, ETXNDL, 0x1A00 + f.len() as u16);
    r.write_mem(0x1A00, &[0]);
    r.write_mem(0x1A01, &f);
    r.xfer(&[0x80 | ECON1, ECON1_TXRTS]);
    let start = r.t;
    assert!(r.pin.is_high());
    let done = r.chip.next_event().expect("a frame on the wire");
    // (8 + 100 + 4) bytes + 96 bits at 10 Mbit/s = 99.2 µs at 1 GHz.
    assert_eq!(done - start, 99_200);
    r.chip.run_to(done);
    assert_eq!(r.sent.borrow().as_slice(), &[(done, f.clone())]);
    assert!(!r.pin.is_high(), "TXIF pulls INT low");
    r.t = done + 10;
    assert_eq!(r.rcr(0, ECON1) & ECON1_TXRTS, 0);
    assert_eq!(r.rcr(0, EIR) & EIR_TXIF, EIR_TXIF);
    // Status vector after ETXND: byte count and TXDONE.
    let tsv = r.read_mem(0x1A01 + f.len() as u16, 7);
    assert_eq!(u16::from_le_bytes([tsv[0], tsv[1]]), 100);
    assert_eq!(tsv[2] & 0x80, 0x80);
    r.xfer(&[0xA0 | EIR, EIR_TXIF]);
    assert!(r.pin.is_high());
    assert_eq!(r.chip.stat_tx_frames, 1);
}

#[test]
fn received_frames_fill_the_ring_with_status_vectors_and_wrap() {
    let a = frame(MAC, 60, 1);
    let c = frame(MAC, 1000, 4);
    let b = frame([0xFF; 6], 1000, 2);
    let other = frame([0x02, 0, 0, 0, 0, 0x55], 60, 3);
    let mut r = Rig::new(vec![
        (2_000_000, a.clone()),
        (2_100_000, other),
        (2_200_000, c.clone()),
        (5_000_000, b.clone()),
    ]);
    r.linux_init();
    // A small ring, so the last frame wraps at ERXND.
    r.w16(0, ERXSTL, 0x0000);
    r.w16(0, ERXNDL, 0x04FF);
    r.w16(0, ERXRDPTL, 0x04FF);
    assert_eq!(r.chip.next_event(), Some(2_000_000));
    r.t = 2_300_000;
    assert_eq!(
        r.rcr(1, EPKTCNT),
        2,
        "the frame for another station is filtered"
    );
    assert_eq!(r.chip.stat_rx_filtered, 1);
    assert!(!r.pin.is_high());
    let h = r.read_mem(0, 6);
    let next = u16::from_le_bytes([h[0], h[1]]);
    assert_eq!(u16::from_le_bytes([h[2], h[3]]) as usize, a.len() + 4);
    assert_eq!(h[4] & 0x80, 0x80, "RXOK");
    assert_eq!(next, 70);
    assert_eq!(r.read_mem(6, a.len()), a);
    let fcs_bytes = r.read_mem(6 + a.len() as u16, 4);
    assert_eq!(u32::from_le_bytes(fcs_bytes.try_into().unwrap()), fcs(&a));
    let h = r.read_mem(next, 6);
    let next = u16::from_le_bytes([h[0], h[1]]);
    assert_eq!(next, 70 + 1010);
    assert_eq!(r.read_mem(70 + 6, c.len()), c);
    // The driver frees both (ERXRDPT one below the next packet, PKTDEC twice).
    r.w16(0, ERXRDPTL, next - 1);
    r.xfer(&[0x80 | ECON2, ECON2_PKTDEC]);
    r.xfer(&[0x80 | ECON2, ECON2_PKTDEC]);
    assert_eq!(r.rcr(1, EPKTCNT), 0);
    assert_eq!(r.rcr(0, EIR) & EIR_PKTIF, 0);
    assert!(r.pin.is_high());
    // Both were read (first byte of their entry) and freed after they arrived.
    assert_eq!((r.chip.lat_read.count, r.chip.lat_free.count), (2, 2));
    // The second received frame (c) followed step by step: arrival, EIR,
    // status vector, PKTDEC, in that order.
    let _ = r.chip.trace;
    assert!(r.chip.lat_read.max > 0 && r.chip.lat_free.mean() >= r.chip.lat_read.mean());
    // The broadcast frame wraps from 0x04FF to 0x0000; AUTOINC reads follow.
    r.t = 5_100_000;
    assert_eq!(r.rcr(1, EPKTCNT), 1);
    let h = r.read_mem(next, 6);
    assert_eq!(u16::from_le_bytes([h[0], h[1]]), (1080 + 1010) - 1280);
    assert_eq!(u16::from_le_bytes([h[2], h[3]]) as usize, b.len() + 4);
    assert_eq!(h[5] & 0x02, 0x02, "broadcast");
    assert_eq!(r.read_mem(next + 6, b.len()), b);
}

#[test]
fn a_full_ring_drops_frames_and_flags_rxerif() {
    let frames: Vec<_> = (0..8)
        .map(|i| (1_000_000 + i * 200_000, frame(MAC, 1000, i as u8)))
        .collect();
    let mut r = Rig::new(frames);
    r.linux_init();
    r.t = 3_000_000;
    // 0x1A00 bytes hold six 1010-byte entries; ERXRDPT never moved.
    assert_eq!(r.rcr(1, EPKTCNT), 6);
    assert_eq!(r.chip.stat_rx_overruns, 2);
    assert_eq!(r.rcr(0, EIR) & EIR_RXERIF, EIR_RXERIF);
    let wr = r.r16(0, ERXWRPTL);
    assert_eq!(wr as usize, 6 * 1010);
}

#[test]
fn frames_wait_for_reception_to_be_enabled_and_junk_commands_do_nothing() {
    let mut r = Rig::new(vec![(500_000, frame(MAC, 60, 9))]);
    r.t = 1_000_000;
    assert_eq!(r.rcr(1, EPKTCNT), 0);
    assert_eq!(r.chip.stat_rx_disabled, 1);
    // Opcode 6 and a buffer opcode with the wrong argument are refused.
    r.xfer(&[0xC0, 1, 2, 3]);
    r.xfer(&[0x20, 1]);
    assert_eq!(r.chip.stat_bad_commands, 2);
    assert_eq!(r.chip.stat_buf_read, 0);
}

#[test]
fn the_device_tree_node_names_the_gpio_edge() {
    let r = Rig::new(vec![]);
    let mut ph = BTreeMap::new();
    ph.insert("gpio0".to_string(), 7u32);
    let n = format!("{:?}", r.chip.node(0, &ph));
    assert!(n.contains("microchip,enc28j60"), "{n}");
    assert!(n.contains("interrupts"), "{n}");
}

#[test]
fn one_frame_is_followed_from_the_wire_to_its_release() {
    let f = frame(MAC, 100, 5);
    let mut r = Rig::new(vec![
        (1_000_000, f.clone()),
        (1_100_000, frame(MAC, 100, 6)),
    ]);
    r.chip.trace.nth = 2;
    r.linux_init();
    r.t = 1_200_000;
    // The driver's loop: EIR, EPKTCNT, then each entry's header, PKTDEC.
    r.xfer(&[EIR, 0]);
    let first = u16::from_le_bytes(r.read_mem(0, 2).try_into().unwrap());
    r.xfer(&[0x80 | ECON2, ECON2_PKTDEC]);
    r.read_mem(first, 6);
    r.xfer(&[0x80 | ECON2, ECON2_PKTDEC]);
    let t = r.chip.trace;
    assert_eq!(t.arrival, Some(1_100_000));
    let (e, h, fr) = (
        t.eir_read.unwrap(),
        t.header_read.unwrap(),
        t.freed.unwrap(),
    );
    assert!(1_100_000 < e && e < h && h < fr, "{t:?}");
    let st = r.chip.stats("c");
    let get = |n: &str| st.iter().find(|s| s.name == n).map(|s| s.value);
    assert_eq!(get("c.trace.frame"), Some(2));
    assert_eq!(get("c.trace.freed_after"), Some(fr - 1_100_000));
}

/// The rig with the deterministic peer on the wire instead of a script.
fn rig_with_peer() -> Rig {
    let mut r = Rig::new(vec![]);
    let mut pc = hs_peer::PeerConfig::new(1_000_000_000);
    pc.link_bps = LINK_BPS;
    r.chip.connect(Box::new(hs_peer::Peer::new(pc)));
    r
}

/// Ask the peer for its address (an ARP request from the chip).
fn send_arp(r: &mut Rig) {
    let f = crate::ether::arp_request(MAC);
    r.w16(0, ETXSTL, 0x1A00);
    r.w16(0, ETXNDL, 0x1A00 + f.len() as u16);
    r.write_mem(0x1A00, &[0]);
    r.write_mem(0x1A01, &f);
    r.xfer(&[0x80 | ECON1, ECON1_RXEN | ECON1_TXRTS]);
}

/// What the driver would see: registers of every bank, the ring, counters
/// (the peer's among them), the INT pin.
fn seen(r: &mut Rig) -> (Vec<u8>, Vec<u8>, Vec<crate::Stat>, bool) {
    let mut regs = Vec::new();
    for bank in 0..4u8 {
        for addr in 0..0x1Fu8 {
            regs.push(r.rcr(bank, addr));
        }
    }
    let ring = r.read_mem(0, 256);
    (regs, ring, r.chip.stats("eth"), r.pin.is_high())
}

#[test]
fn a_restored_chip_and_its_peer_go_on_as_the_saved_ones() {
    use crate::Persist;
    let mut a = rig_with_peer();
    a.linux_init();
    send_arp(&mut a);
    a.t += 200_000; // the request went out, the reply is in the ring
    a.chip.run_to(a.t);
    assert_eq!(a.rcr(1, EPKTCNT), 1, "the peer answered");
    send_arp(&mut a); // a second request on the wire at the snapshot
    assert!(a.chip.sending.is_some());
    let saved = a.chip.save().unwrap();

    let mut b = rig_with_peer();
    b.pin.restore(a.pin.save()); // a board wire: the board puts it back
    b.chip.restore(&saved).unwrap();
    b.t = a.t;
    assert_eq!(b.chip.save().unwrap(), saved);
    assert_eq!(b.chip.next_event(), a.chip.next_event());
    assert_eq!(seen(&mut b), seen(&mut a));
    for r in [&mut a, &mut b] {
        r.t += 300_000;
        r.chip.run_to(r.t);
        r.xfer(&[0x80 | ECON2, ECON2_PKTDEC | ECON2_AUTOINC]);
        send_arp(r);
        r.t += 300_000;
        r.chip.run_to(r.t);
    }
    let after = seen(&mut a);
    assert_eq!(seen(&mut b), after);
    let pkts = after.2.iter().find(|s| s.name == "eth.rx_frames").unwrap();
    assert_eq!(pkts.value, 3, "three answers from the peer");
}

#[test]
fn a_chip_refuses_garbage_and_a_wire_without_save_restore() {
    use crate::Persist;
    let scripted = Rig::new(vec![]);
    assert!(SpiPeripheral::state(&scripted.chip).is_none());
    let mut c = rig_with_peer();
    assert!(SpiPeripheral::state(&c.chip).is_some());
    let saved = c.chip.save().unwrap();
    let mut bare = Enc28j60::new("spi0.cs0", c.chip.cfg.clone(), None);
    let e = bare.restore(&saved).unwrap_err();
    assert!(e.contains("network peer"), "{e}");
    let mut other = Enc28j60::new("spi1.cs0", c.chip.cfg.clone(), None);
    let e = other.restore(&bare.save().unwrap()).unwrap_err();
    assert!(e.contains("spi1.cs0"), "{e}");
    for bad in [&b"{"[..], b"[null, null]", b"\"x\""] {
        assert!(c.chip.restore(bad).is_err());
    }
    c.linux_init();
    assert_eq!(c.rcr(0, ECON1) & ECON1_RXEN, ECON1_RXEN);
}
