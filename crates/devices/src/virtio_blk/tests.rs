use super::*;
use crate::virtio_mmio::{VirtioMmio, STATUS_NEEDS_RESET};
use crate::{Device, ParamValue, Scheduler, WireIrq};
use std::path::{Path, PathBuf};

const RAM_BASE: u64 = 0x8000_0000;
const RAM_SIZE: u64 = 1 << 20;
const DESC: u64 = RAM_BASE + 0x1000;
const AVAIL: u64 = RAM_BASE + 0x2000;
const USED: u64 = RAM_BASE + 0x3000;
const BUF: u64 = RAM_BASE + 0x10000;
const QSIZE: u16 = 16;
const HZ: u64 = 1_000_000_000;

/// A scratch image file, removed when dropped.
struct Img(PathBuf);
impl Img {
    fn new(tag: &str, bytes: &[u8]) -> Img {
        let p = std::env::temp_dir().join(format!("hs-vblk-{}-{tag}.img", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        Img(p)
    }
    fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.0).unwrap()
    }
}
impl Drop for Img {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Byte `i` of the test pattern.
fn pat(i: u64) -> u8 {
    (i.wrapping_mul(7) ^ (i >> 9)) as u8
}
fn pattern(len: u64) -> Vec<u8> {
    (0..len).map(pat).collect()
}

#[derive(Default)]
struct Rec(Vec<(u64, u64)>);
impl Scheduler for Rec {
    fn schedule(&mut self, cycle: u64, token: u64) {
        self.0.retain(|&(_, t)| t != token);
        self.0.push((cycle, token));
    }
}

/// A driver on the host side: the transport with the disk behind it, guest
/// RAM, the event queue and the interrupt line.
struct Drv {
    d: VirtioMmio,
    ram: GuestRam,
    irq: WireIrq,
    ev: Rec,
    now: u64,
    /// Next free descriptor (descriptors are handed out round-robin).
    next_desc: u16,
    avail_idx: u16,
    used_seen: u16,
}

fn timing() -> Timing {
    Timing {
        latency_ns: 10_000,
        bandwidth_mibps: 100,
    }
}

impl Drv {
    fn new(img: &Img, write_through: bool, read_only: bool) -> Drv {
        let ram = GuestRam::new(RAM_BASE, RAM_SIZE).unwrap();
        let disk = Disk::open(&img.0, write_through).unwrap();
        let blk = VirtioBlk::new(
            disk,
            read_only,
            "hs-test-serial",
            timing(),
            ram.clone(),
            Clock {
                hz: HZ,
                cycles_per_tick: 100,
            },
        );
        let irq = WireIrq::new();
        let d = VirtioMmio::new(0, Box::new(irq.clone()), Some(Box::new(blk))).named("vda");
        let mut drv = Drv {
            d,
            ram,
            irq,
            ev: Rec::default(),
            now: 1000,
            next_desc: 0,
            avail_idx: 0,
            used_seen: 0,
        };
        drv.setup(QSIZE, DESC, AVAIL, USED);
        drv
    }
    fn rd(&mut self, off: u64, size: u8) -> u64 {
        let mut ev = std::mem::take(&mut self.ev);
        let v = self
            .d
            .read(&mut DevCtx::new(0, self.now, &mut ev), off, size)
            .unwrap();
        self.ev = ev;
        v
    }
    fn wr(&mut self, off: u64, v: u32) {
        let mut ev = std::mem::take(&mut self.ev);
        self.d
            .write(&mut DevCtx::new(0, self.now, &mut ev), off, 4, v as u64)
            .unwrap();
        self.ev = ev;
    }
    fn setup(&mut self, size: u16, desc: u64, avail: u64, used: u64) {
        self.wr(0x70, 0);
        self.wr(0x70, 1 | 2);
        self.wr(0x24, 1);
        self.wr(0x20, 1);
        self.wr(0x24, 0);
        self.wr(0x20, (F_SEG_MAX | F_BLK_SIZE | F_FLUSH) as u32);
        self.wr(0x70, 1 | 2 | 8);
        self.wr(0x30, 0);
        self.wr(0x38, size as u32);
        for (off, a) in [(0x80, desc), (0x90, avail), (0xa0, used)] {
            self.wr(off, a as u32);
            self.wr(off + 4, (a >> 32) as u32);
        }
        self.wr(0x44, 1);
        self.wr(0x70, 1 | 2 | 8 | 4);
        self.next_desc = 0;
        self.avail_idx = 0;
        self.used_seen = 0;
    }
    fn status(&mut self) -> u32 {
        self.rd(0x70, 4) as u32
    }
    fn blk(&self) -> &VirtioBlk {
        self.d
            .backend()
            .and_then(|b| b.as_any().downcast_ref::<VirtioBlk>())
            .unwrap()
    }
    /// Write descriptors for `chain` ((addr, len, write) each), put the head
    /// in the available ring. Returns the head.
    fn offer(&mut self, chain: &[(u64, u32, bool)]) -> u16 {
        let idx: Vec<u16> = (0..chain.len())
            .map(|k| (self.next_desc + k as u16) % QSIZE)
            .collect();
        self.next_desc = (self.next_desc + chain.len() as u16) % QSIZE;
        for (k, &(addr, len, write)) in chain.iter().enumerate() {
            let last = k + 1 == chain.len();
            let flags = if write { DESC_F_WRITE } else { 0 } | if last { 0 } else { DESC_F_NEXT };
            let next = if last { 0 } else { idx[k + 1] };
            self.put_desc(idx[k], addr, len, flags, next);
        }
        self.push_avail(idx[0]);
        idx[0]
    }
    fn put_desc(&mut self, i: u16, addr: u64, len: u32, flags: u16, next: u16) {
        let mut d = [0u8; 16];
        d[0..8].copy_from_slice(&addr.to_le_bytes());
        d[8..12].copy_from_slice(&len.to_le_bytes());
        d[12..14].copy_from_slice(&flags.to_le_bytes());
        d[14..16].copy_from_slice(&next.to_le_bytes());
        assert!(self.ram.write_bytes(DESC + 16 * i as u64, &d));
    }
    fn push_avail(&mut self, head: u16) {
        assert!(self.ram.write(
            AVAIL + 4 + 2 * (self.avail_idx % QSIZE) as u64,
            2,
            head as u64
        ));
        self.avail_idx = self.avail_idx.wrapping_add(1);
        assert!(self.ram.write(AVAIL + 2, 2, self.avail_idx as u64));
    }
    fn kick(&mut self) {
        self.wr(0x50, 0);
    }
    /// Fire due events up to `t` in order; returns how many fired.
    fn run_to(&mut self, t: u64) -> usize {
        let mut n = 0;
        loop {
            self.ev.0.sort();
            let Some(&(c, tok)) = self.ev.0.first() else {
                break;
            };
            if c > t {
                break;
            }
            self.ev.0.remove(0);
            self.now = self.now.max(c);
            let mut ev = std::mem::take(&mut self.ev);
            self.d.event(&mut DevCtx::new(0, c, &mut ev), tok);
            self.ev = ev;
            n += 1;
            assert!(n < 100_000, "events never end");
        }
        n
    }
    /// Fire every event (time moves to the last one).
    fn run_all(&mut self) {
        self.run_to(u64::MAX);
    }
    fn used_idx(&self) -> u16 {
        self.ram.read(USED + 2, 2).unwrap() as u16
    }
    /// (id, len) of used entries not yet seen.
    fn used(&mut self) -> Vec<(u32, u32)> {
        let mut v = Vec::new();
        while self.used_seen != self.used_idx() {
            let at = USED + 4 + 8 * (self.used_seen % QSIZE) as u64;
            v.push((
                self.ram.read(at, 4).unwrap() as u32,
                self.ram.read(at + 4, 4).unwrap() as u32,
            ));
            self.used_seen = self.used_seen.wrapping_add(1);
        }
        v
    }
    fn header(&self, at: u64, t: u32, sector: u64) {
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&t.to_le_bytes());
        h[8..16].copy_from_slice(&sector.to_le_bytes());
        assert!(self.ram.write_bytes(at, &h));
    }
    fn byte(&self, at: u64) -> u8 {
        self.ram.read(at, 1).unwrap() as u8
    }
    fn bytes(&self, at: u64, n: usize) -> Vec<u8> {
        let mut b = vec![0u8; n];
        assert!(self.ram.read_bytes(at, &mut b));
        b
    }
    /// One request: header at BUF, data at BUF+0x100 (`len` bytes, device-
    /// writable for IN/GET_ID), status right after the data. Runs it to
    /// completion; returns (status, used len).
    fn request(&mut self, t: u32, sector: u64, len: u32) -> (u8, u32) {
        self.header(BUF, t, sector);
        let data = BUF + 0x100;
        let status = data + len as u64;
        assert!(self.ram.write(status, 1, 0xee));
        let write = !matches!(t, T_OUT | T_DISCARD | T_WRITE_ZEROES);
        let mut chain = vec![(BUF, 16, false)];
        if len > 0 {
            chain.push((data, len, write));
        }
        chain.push((status, 1, true));
        self.offer(&chain);
        self.kick();
        self.run_all();
        let used = self.used();
        assert_eq!(used.len(), 1, "one completion");
        (self.byte(status), used[0].1)
    }
    fn stat(&self, name: &str) -> u64 {
        self.d
            .stats()
            .into_iter()
            .find(|s| s.name == format!("vda.{name}"))
            .map(|s| s.value)
            .unwrap()
    }
}

#[test]
fn identity_features_and_config_space_as_linux_reads_them() {
    let img = Img::new("cfg", &pattern(64 * 512));
    let mut d = Drv::new(&img, false, false);
    assert_eq!(d.rd(0x8, 4), 2, "device ID 2 (block)");
    d.wr(0x14, 0);
    let lo = d.rd(0x10, 4);
    assert_eq!(
        lo,
        F_SIZE_MAX | F_SEG_MAX | F_BLK_SIZE | F_FLUSH | F_DISCARD | F_WRITE_ZEROES
    );
    assert_eq!(lo & F_RO, 0);
    d.wr(0x14, 1);
    assert_eq!(d.rd(0x10, 4), 1, "VERSION_1");
    assert_eq!(d.rd(0x34, 4), QUEUE_MAX as u64);
    // capacity as two 32-bit reads (virtio_mmio's vm_get of a u64), and as bytes.
    assert_eq!(d.rd(0x100, 4) | (d.rd(0x104, 4) << 32), 64);
    assert_eq!(d.rd(0x100, 1), 64);
    assert_eq!(d.rd(0x101, 2), 0);
    assert_eq!(d.rd(0x108, 4), SIZE_MAX as u64, "size_max");
    assert_eq!(d.rd(0x10c, 4), SEG_MAX as u64, "seg_max");
    assert_eq!(d.rd(0x114, 4), 512, "blk_size");
    assert_eq!(d.rd(0x120, 1), 0, "writeback (no CONFIG_WCE)");
    assert_eq!(
        d.rd(0x124, 4),
        MAX_ZERO_SECTORS as u64,
        "max_discard_sectors"
    );
    assert_eq!(d.rd(0x128, 4), MAX_ZERO_SEGS as u64, "max_discard_seg");
    assert_eq!(d.rd(0x12c, 4), 8, "discard_sector_alignment: 4 KiB");
    assert_eq!(
        d.rd(0x130, 4),
        MAX_ZERO_SECTORS as u64,
        "max_write_zeroes_sectors"
    );
    assert_eq!(d.rd(0x134, 4), MAX_ZERO_SEGS as u64, "max_write_zeroes_seg");
    assert_eq!(d.rd(0x138, 1), 1, "write_zeroes_may_unmap");
    assert_eq!(d.rd(0x1f8, 8), 0, "past the structure");
    let img_ro = Img::new("cfg-ro", &pattern(512));
    let mut r = Drv::new(&img_ro, false, true);
    r.wr(0x14, 0);
    assert_eq!(r.rd(0x10, 4) & F_RO, F_RO, "RO offered on a read-only disk");
}

#[test]
fn read_completes_after_the_modelled_latency_with_the_file_bytes() {
    let img = Img::new("read", &pattern(64 * 512));
    let mut d = Drv::new(&img, false, false);
    d.header(BUF, T_IN, 3);
    let (data, status) = (BUF + 0x1000, BUF + 0x3000);
    // The data in two segments, as Linux's scatterlists give it.
    let head = d.offer(&[
        (BUF, 16, false),
        (data, 1024, true),
        (data + 0x1000, 1024, true),
        (status, 1, true),
    ]);
    d.kick();
    assert_eq!(d.used_idx(), 0, "nothing completes at the kick");
    assert!(!d.irq.is_high());
    let expect = 1000
        + Clock {
            hz: HZ,
            cycles_per_tick: 100,
        }
        .ns_to_cycles(timing().cost_ns(2048));
    assert_eq!(
        d.ev.0,
        [(expect, 0)],
        "one completion event, latency + bytes / bandwidth later"
    );
    assert_eq!(d.run_to(expect - 1), 0);
    assert_eq!(d.run_to(expect), 1);
    assert_eq!(d.used(), [(head as u32, 2049)]);
    assert_eq!(d.byte(status), S_OK);
    let mut want = pattern(64 * 512)[3 * 512..3 * 512 + 2048].to_vec();
    assert_eq!(d.bytes(data, 1024), want[..1024]);
    assert_eq!(d.bytes(data + 0x1000, 1024), want.split_off(1024));
    assert!(d.irq.is_high(), "used-buffer interrupt");
    assert_eq!(d.rd(0x60, 4), 1);
    assert_eq!(
        (d.stat("reads"), d.stat("bytes_read"), d.stat("requests")),
        (1, 2048, 1)
    );
    // 10 µs + 2048 B at 100 MiB/s = 10 µs + 19.53 µs.
    assert_eq!(d.stat("busy_cycles"), 10_000 + 19_531);
}

#[test]
fn requests_queue_behind_each_other_and_suppressed_interrupts_stay_low() {
    let img = Img::new("queue", &pattern(64 * 512));
    let mut d = Drv::new(&img, false, false);
    d.header(BUF, T_IN, 0);
    d.header(BUF + 0x20, T_FLUSH, 0);
    d.offer(&[
        (BUF, 16, false),
        (BUF + 0x1000, 512, true),
        (BUF + 0x40, 1, true),
    ]);
    d.offer(&[(BUF + 0x20, 16, false), (BUF + 0x41, 1, true)]);
    assert!(d.ram.write(AVAIL, 2, AVAIL_F_NO_INTERRUPT as u64));
    d.kick();
    let c = Clock {
        hz: HZ,
        cycles_per_tick: 100,
    };
    let t1 = 1000 + c.ns_to_cycles(timing().cost_ns(512));
    let t2 = t1 + c.ns_to_cycles(timing().cost_ns(0));
    assert_eq!(d.run_to(t1), 1);
    assert_eq!(d.used().len(), 1);
    assert_eq!(d.ev.0, [(t2, 0)], "the flush waits for the read");
    assert_eq!(d.run_to(t2), 1);
    assert_eq!(d.used().len(), 1);
    assert_eq!((d.byte(BUF + 0x40), d.byte(BUF + 0x41)), (S_OK, S_OK));
    assert!(!d.irq.is_high(), "the driver asked for no interrupts");
    assert_eq!(d.stat("irqs_suppressed"), 2);
    assert_eq!(d.stat("flushes"), 1);
}

#[test]
fn writes_land_in_the_overlay_and_never_in_the_file() {
    let orig = pattern(9 * 512); // the last 4 KiB block is partial
    let img = Img::new("cow", &orig);
    let mut d = Drv::new(&img, false, false);
    let data: Vec<u8> = (0..1024u32).map(|i| (i * 3 + 1) as u8).collect();
    assert!(d.ram.write_bytes(BUF + 0x100, &data));
    assert_eq!(
        d.request(T_OUT, 7, 1024),
        (S_OK, 1),
        "sectors 7-8: spans blocks 0 and 1"
    );
    assert_eq!(img.bytes(), orig, "the file is unchanged");
    assert_eq!(d.stat("overlay_blocks"), 2);
    let mut want = orig.clone();
    want[7 * 512..9 * 512].copy_from_slice(&data);
    // Read everything back through the device.
    assert_eq!(d.request(T_IN, 0, 9 * 512), (S_OK, 9 * 512 + 1));
    assert_eq!(d.bytes(BUF + 0x100, 9 * 512), want);
    let disk = d.blk().disk();
    let blocks: Vec<u64> = disk.overlay().map(|(b, _)| b).collect();
    assert_eq!(blocks, [0, 1]);
    let mut b1 = vec![0u8; 4096];
    b1[..512].copy_from_slice(&want[8 * 512..]);
    assert_eq!(
        disk.overlay().nth(1).unwrap().1,
        &b1[..],
        "block 1: the sector, zeros past the end of the file"
    );
    assert_ne!(d.stat("overlay_fnv1a"), 0);
}

#[test]
fn write_through_changes_the_file_and_flush_syncs_it() {
    let orig = pattern(16 * 512);
    let img = Img::new("wt", &orig);
    let mut d = Drv::new(&img, true, false);
    assert!(d.ram.write_bytes(BUF + 0x100, &[0x5a; 512]));
    assert_eq!(d.request(T_OUT, 2, 512), (S_OK, 1));
    assert_eq!(d.request(T_FLUSH, 0, 0), (S_OK, 1));
    let mut want = orig;
    want[1024..1536].fill(0x5a);
    assert_eq!(img.bytes(), want);
    assert_eq!(d.stat("overlay_blocks"), 0);
}

#[test]
fn bad_requests_complete_with_an_error_status() {
    let img = Img::new("badreq", &pattern(8 * 512));
    let mut d = Drv::new(&img, false, false);
    assert_eq!(d.request(T_IN, 8, 512), (S_IOERR, 1), "past the end");
    assert_eq!(d.request(T_IN, 7, 1024), (S_IOERR, 1), "straddles the end");
    assert_eq!(
        d.request(T_IN, u64::MAX / 256, 512),
        (S_IOERR, 1),
        "sector * 512 overflows"
    );
    assert_eq!(d.request(T_IN, 0, 100), (S_IOERR, 1), "not whole sectors");
    assert_eq!(d.request(T_OUT, 0, 100), (S_IOERR, 1));
    assert_eq!(d.request(T_OUT, 8, 512), (S_IOERR, 1));
    assert_eq!(d.request(99, 0, 0), (S_UNSUPP, 1));
    assert_eq!(d.request(T_IN, 0, 0), (S_OK, 1), "an empty read is fine");
    // GET_ID: 20 bytes of serial.
    assert_eq!(d.request(T_GET_ID, 0, 20), (S_OK, 21));
    assert_eq!(&d.bytes(BUF + 0x100, 20)[..14], b"hs-test-serial");
    assert_eq!(&d.bytes(BUF + 0x100, 20)[14..], &[0; 6]);
    // A header shorter than 16 bytes.
    assert!(d.ram.write(BUF + 0x200, 1, 0xee));
    d.offer(&[(BUF, 8, false), (BUF + 0x200, 1, true)]);
    d.kick();
    d.run_all();
    assert_eq!(d.byte(BUF + 0x200), S_IOERR);
    assert_eq!(d.used().len(), 1);
    assert_eq!(d.stat("ioerrs"), 7);
    assert_eq!(d.stat("unsupported"), 1);
    assert_eq!(
        d.status() & STATUS_NEEDS_RESET,
        0,
        "request errors do not break the queue"
    );
    // Read-only: writes fail, reads work.
    let mut r = Drv::new(&img, false, true);
    assert_eq!(r.request(T_OUT, 0, 512), (S_IOERR, 1));
    assert_eq!(r.request(T_IN, 0, 512), (S_OK, 513));
    assert_eq!(r.stat("overlay_blocks"), 0);
}

/// Each malformed queue or chain puts the device in NEEDS_RESET; a reset
/// and a fresh set-up make it work again.
#[test]
fn malformed_chains_and_queues_set_needs_reset() {
    let img = Img::new("badq", &pattern(8 * 512));
    type Case = (&'static str, fn(&mut Drv));
    let cases: &[Case] = &[
        ("loop", |d| {
            d.put_desc(0, BUF, 16, DESC_F_NEXT, 1);
            d.put_desc(1, BUF + 0x40, 1, DESC_F_NEXT | DESC_F_WRITE, 0);
            d.push_avail(0);
        }),
        ("next index past the table", |d| {
            d.put_desc(0, BUF, 16, DESC_F_NEXT, QSIZE);
            d.push_avail(0);
        }),
        ("head index past the table", |d| d.push_avail(QSIZE + 3)),
        ("buffer outside RAM", |d| {
            d.offer(&[
                (BUF, 16, false),
                (RAM_BASE + RAM_SIZE - 8, 512, true),
                (BUF + 0x40, 1, true),
            ]);
        }),
        ("buffer wrapping the address space", |d| {
            d.offer(&[
                (BUF, 16, false),
                (u64::MAX - 4, 512, true),
                (BUF + 0x40, 1, true),
            ]);
        }),
        ("readable after writable", |d| {
            d.offer(&[
                (BUF, 16, false),
                (BUF + 0x100, 512, true),
                (BUF + 0x40, 1, false),
            ]);
        }),
        ("no status byte", |d| {
            d.offer(&[(BUF, 16, false), (BUF + 0x100, 512, false)]);
        }),
        ("indirect descriptor", |d| {
            d.put_desc(0, BUF, 16, DESC_F_INDIRECT, 0);
            d.push_avail(0);
        }),
        ("avail index more than a queue ahead", |d| {
            assert!(d.ram.write(AVAIL + 2, 2, QSIZE as u64 + 1));
        }),
        ("queue size not a power of two", |d| {
            d.setup(12, DESC, AVAIL, USED)
        }),
        ("used ring outside RAM", |d| {
            d.setup(QSIZE, DESC, AVAIL, RAM_BASE + RAM_SIZE - 16)
        }),
        ("misaligned descriptor table", |d| {
            d.setup(QSIZE, DESC + 8, AVAIL, USED)
        }),
    ];
    for (what, f) in cases {
        let mut d = Drv::new(&img, false, false);
        f(&mut d);
        d.kick();
        d.run_all();
        assert_eq!(
            d.status() & STATUS_NEEDS_RESET,
            STATUS_NEEDS_RESET,
            "{what}"
        );
        assert_eq!(
            d.rd(0x60, 4) & 2,
            2,
            "{what}: configuration-change interrupt"
        );
        assert!(d.irq.is_high(), "{what}");
        assert_eq!(d.stat("bad_queues"), 1, "{what}");
        assert_eq!(d.stat("needs_reset"), 1, "{what}");
        assert!(d.ev.0.len() <= 1, "{what}");
        // Reset and set up again: the device works.
        d.setup(QSIZE, DESC, AVAIL, USED);
        assert_eq!(d.status() & STATUS_NEEDS_RESET, 0);
        assert_eq!(
            d.request(T_IN, 1, 512),
            (S_OK, 513),
            "{what}: works after a reset"
        );
        assert_eq!(d.bytes(BUF + 0x100, 512), pattern(1024)[512..]);
    }
}

#[test]
fn more_outstanding_requests_than_queue_entries_is_refused() {
    let img = Img::new("over", &pattern(8 * 512));
    let mut d = Drv::new(&img, false, false);
    d.header(BUF, T_FLUSH, 0);
    // The driver re-offers the same two descriptors 17 times before any completes.
    d.put_desc(0, BUF, 16, DESC_F_NEXT, 1);
    d.put_desc(1, BUF + 0x40, 1, DESC_F_WRITE, 0);
    for _ in 0..QSIZE {
        d.push_avail(0);
    }
    d.kick();
    assert_eq!(d.blk().outstanding(), QSIZE as usize);
    d.push_avail(0);
    d.kick();
    assert_eq!(d.status() & STATUS_NEEDS_RESET, STATUS_NEEDS_RESET);
    d.run_all();
    assert_eq!(d.blk().outstanding(), 0);
}

#[test]
fn the_same_requests_give_the_same_bytes_and_counters() {
    let orig = pattern(32 * 512);
    let img = Img::new("det", &orig);
    let run = || {
        let mut d = Drv::new(&img, false, false);
        let mut seen = Vec::new();
        for k in 0..20u64 {
            let data: Vec<u8> = (0..512u64).map(|i| (i ^ (k * 31)) as u8).collect();
            assert!(d.ram.write_bytes(BUF + 0x100, &data));
            let r = d.request(T_OUT, (k * 5) % 32, 512);
            seen.push((r, d.now));
            let r = d.request(T_IN, (k * 3) % 31, 1024);
            seen.push((r, d.now));
            seen.push((
                (0, 0),
                d.bytes(BUF + 0x100, 1024).iter().map(|&b| b as u64).sum(),
            ));
        }
        let overlay: Vec<(u64, Vec<u8>)> = d
            .blk()
            .disk()
            .overlay()
            .map(|(b, v)| (b, v.to_vec()))
            .collect();
        let stats: Vec<(String, u64)> =
            d.d.stats().into_iter().map(|s| (s.name, s.value)).collect();
        (seen, overlay, stats, d.ev.0.clone())
    };
    let a = run();
    assert_eq!(a, run());
    assert_eq!(img.bytes(), orig);
}

#[test]
fn disk_reads_mix_overlay_blocks_and_file_runs() {
    let orig = pattern(40 * 512);
    let img = Img::new("mix", &orig);
    let mut disk = Disk::open(&img.0, false).unwrap();
    disk.write(4096 + 100, &[1, 2, 3]).unwrap();
    disk.write(3 * 4096 + 4000, &[9; 200]).unwrap();
    let mut want = orig.clone();
    want[4196..4199].copy_from_slice(&[1, 2, 3]);
    want[3 * 4096 + 4000..3 * 4096 + 4200].fill(9);
    for (off, len) in [
        (0u64, 40 * 512),
        (4000, 5000),
        (4196, 3),
        (12000, 8000),
        (20479, 1),
    ] {
        let mut b = vec![0u8; len];
        disk.read(off, &mut b).unwrap();
        assert_eq!(
            b,
            want[off as usize..off as usize + len],
            "read {off}+{len}"
        );
    }
    assert_eq!(disk.overlay_blocks(), 3);
    let mut b = [0u8; 2];
    assert!(disk.read(40 * 512 - 1, &mut b).is_err());
    assert!(disk.write(40 * 512, &[0]).is_err());
    assert!(disk.read(u64::MAX, &mut b).is_err());
    assert_eq!(img.bytes(), orig);
}

#[test]
fn configuration_errors_name_the_key_and_the_file() {
    let img = Img::new("conf", &pattern(4 * 512));
    let odd = Img::new("odd", &pattern(1000));
    let file = |p: &Path| ParamValue::Str(p.display().to_string());
    let cfg = |f: ParamValue| DeviceConfig::new("vda", "virtio-blk").with("file", f);
    let err = |c: DeviceConfig| crate::resources::plug(&c).err().unwrap().to_string();
    assert!(crate::resources::plug(&cfg(file(&img.0))).is_ok());
    assert_eq!(
        err(DeviceConfig::new("vda", "virtio-blk")),
        "key `file`: is missing (the raw disk image this device reads; or `blank-mib = N` for a blank disk)"
    );
    let missing = std::env::temp_dir().join("hs-vblk-does-not-exist.img");
    let e = err(cfg(file(&missing)));
    assert!(
        e.starts_with(&format!(
            "key `file`: cannot open the disk image `{}`: ",
            missing.display()
        )),
        "{e}"
    );
    assert_eq!(
        err(cfg(file(&odd.0))),
        format!("key `file`: the disk image `{}` is 1000 bytes, not a positive whole number of 512-byte sectors", odd.0.display())
    );
    let e = err(cfg(file(std::env::temp_dir().as_path())));
    assert!(
        e.contains("is not a regular file") || e.contains("cannot open"),
        "{e}"
    );
    assert_eq!(
        err(cfg(file(&img.0))
            .with("write-through", ParamValue::Bool(true))
            .with("read-only", ParamValue::Bool(true))),
        "key `write-through`: cannot be true on a `read-only` disk"
    );
    assert_eq!(
        err(cfg(file(&img.0)).with("latency-ns", ParamValue::Int(-1))),
        "key `latency-ns`: -1 is out of range (0 to 1000000000)"
    );
    assert_eq!(
        err(cfg(file(&img.0)).with("bandwidth-mibps", ParamValue::Int(0))),
        "key `bandwidth-mibps`: 0 is out of range (1 to 1048576)"
    );
    assert_eq!(
        err(cfg(file(&img.0)).with("serial", ParamValue::Str("x".repeat(21)))),
        format!("key `serial`: `{}` is longer than 20 bytes", "x".repeat(21))
    );
    assert_eq!(
        err(cfg(file(&img.0)).with("wrte-through", ParamValue::Bool(true))),
        "key `wrte-through`: is not a key of a `virtio-blk` device"
    );
    let p = crate::resources::plug(&cfg(file(&img.0))).ok().unwrap();
    assert_eq!(p.want, Want::new("vda").mmio(virtio_mmio::SIZE).irqs(1));
}

/// Write `ranges` (sector, count, flags) as a DISCARD / WRITE_ZEROES payload
/// at BUF+0x100 and run the request; (status, used len).
fn zero_request(d: &mut Drv, t: u32, ranges: &[(u64, u32, u32)]) -> (u8, u32) {
    let mut payload = Vec::new();
    for &(sector, n, flags) in ranges {
        payload.extend(sector.to_le_bytes());
        payload.extend(n.to_le_bytes());
        payload.extend(flags.to_le_bytes());
    }
    assert!(d.ram.write_bytes(BUF + 0x100, &payload));
    d.request(t, 0, payload.len() as u32)
}

#[test]
fn discard_and_write_zeroes_make_ranges_read_as_zeros() {
    let orig = pattern(64 * 512);
    let img = Img::new("zero", &orig);
    let mut d = Drv::new(&img, false, false);
    // Discard blocks 1-2 whole (sectors 8..24), write-zeroes sectors 30..33
    // (the end of block 3 and the start of block 4), with UNMAP.
    assert_eq!(zero_request(&mut d, T_DISCARD, &[(8, 16, 0)]), (S_OK, 1));
    assert_eq!(
        zero_request(&mut d, T_WRITE_ZEROES, &[(30, 3, WRITE_ZEROES_FLAG_UNMAP)]),
        (S_OK, 1)
    );
    let mut want = orig.clone();
    want[8 * 512..24 * 512].fill(0);
    want[30 * 512..33 * 512].fill(0);
    assert_eq!(d.request(T_IN, 0, 64 * 512), (S_OK, 64 * 512 + 1));
    assert_eq!(d.bytes(BUF + 0x100, 64 * 512), want);
    let blocks: Vec<u64> = d.blk().disk().overlay().map(|(b, _)| b).collect();
    assert_eq!(blocks, [1, 2, 3, 4]);
    // A write into a zero block starts from zeros, not from the file.
    assert!(d.ram.write_bytes(BUF + 0x100, &[7u8; 512]));
    assert_eq!(d.request(T_OUT, 9, 512), (S_OK, 1));
    assert_eq!(d.request(T_IN, 8, 1024), (S_OK, 1025));
    let mut b = vec![0u8; 512];
    b.extend([7u8; 512]);
    assert_eq!(d.bytes(BUF + 0x100, 1024), b);
    assert_eq!(img.bytes(), orig, "the file is unchanged");
    assert_eq!(
        (
            d.stat("discards"),
            d.stat("write_zeroes"),
            d.stat("bytes_zeroed")
        ),
        (1, 1, 19 * 512)
    );
    // Refused: flags a discard may not carry, reserved write-zeroes flags,
    // ranges past the end or too long, payloads not whole ranges, too many
    // ranges, nothing on a read-only disk.
    assert_eq!(
        zero_request(&mut d, T_DISCARD, &[(0, 1, WRITE_ZEROES_FLAG_UNMAP)]),
        (S_UNSUPP, 1)
    );
    assert_eq!(
        zero_request(&mut d, T_WRITE_ZEROES, &[(0, 1, 2)]),
        (S_UNSUPP, 1)
    );
    assert_eq!(zero_request(&mut d, T_DISCARD, &[(60, 8, 0)]), (S_IOERR, 1));
    assert_eq!(
        zero_request(&mut d, T_DISCARD, &[(0, 1, 0), (u64::MAX / 4, 1, 0)]),
        (S_IOERR, 1),
        "checked before any is applied"
    );
    assert_eq!(
        zero_request(&mut d, T_DISCARD, &[(0, MAX_ZERO_SECTORS + 1, 0)]),
        (S_IOERR, 1)
    );
    assert_eq!(
        zero_request(
            &mut d,
            T_DISCARD,
            &vec![(0, 1, 0); MAX_ZERO_SEGS as usize + 1]
        ),
        (S_IOERR, 1)
    );
    assert_eq!(d.request(T_DISCARD, 0, 8), (S_IOERR, 1), "half a range");
    assert_eq!(d.request(T_DISCARD, 0, 0), (S_IOERR, 1), "no range");
    assert_eq!(d.request(T_IN, 0, 512), (S_OK, 513));
    assert_eq!(
        d.bytes(BUF + 0x100, 512),
        orig[..512],
        "sector 0 was never zeroed"
    );
    let mut r = Drv::new(&img, false, true);
    assert_eq!(
        zero_request(&mut r, T_WRITE_ZEROES, &[(0, 8, 0)]),
        (S_IOERR, 1)
    );
    assert_eq!(r.stat("overlay_blocks"), 0);
    // Writing through: the file gets the zeros.
    let mut w = Drv::new(&img, true, false);
    assert_eq!(
        zero_request(&mut w, T_WRITE_ZEROES, &[(1, 2, 0), (40, 1, 0)]),
        (S_OK, 1)
    );
    let mut want = orig;
    want[512..1536].fill(0);
    want[40 * 512..41 * 512].fill(0);
    assert_eq!(img.bytes(), want);
}
