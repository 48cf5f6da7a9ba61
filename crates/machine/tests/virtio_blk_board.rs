//! virtio-blk as a configured board device (`[board.NAME] kind =
//! "virtio-blk"`): its window and interrupt from the board, its own
//! `virtio,mmio` device-tree node, completions through the board's event
//! queue. Then random queue set-ups, descriptor chains, available rings and
//! register traffic in guest RAM: no host panic, bounded, the same counters
//! twice, the image file untouched.

use std::path::{Path, PathBuf};

use hs_bus::{Access, GuestRam, SystemBus};
use hs_devices::virtio_blk::{DESC_F_NEXT, DESC_F_WRITE, T_DISCARD, T_IN, T_OUT, T_WRITE_ZEROES};
use hs_devices::{Clock, Prop};
use hs_machine::layout::{DRAM_BASE, PLATFORM_BASE};
use hs_machine::Board;

const RAM_SIZE: u64 = 1 << 20;
const DESC: u64 = DRAM_BASE + 0x1000;
const AVAIL: u64 = DRAM_BASE + 0x2000;
const USED: u64 = DRAM_BASE + 0x3000;
const REGION: u64 = DRAM_BASE + 0x8000;

struct Files {
    dir: PathBuf,
}
impl Files {
    fn new(tag: &str) -> Files {
        let dir = std::env::temp_dir().join(format!("hs-vblk-board-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Files { dir }
    }
}
impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn image_bytes() -> Vec<u8> {
    (0..64 * 512u64)
        .map(|i| (i * 13 + (i >> 9)) as u8)
        .collect()
}

/// A board with the disk of a machine description written to `f.dir`.
fn board(f: &Files) -> (Board, GuestRam, PathBuf) {
    let img = f.dir.join("disk.img");
    if !img.exists() {
        std::fs::write(&img, image_bytes()).unwrap();
    }
    let desc = f.dir.join("m.toml");
    std::fs::write(
        &desc,
        format!("[board.vda]\nkind = \"virtio-blk\"\nfile = \"{}\"\nlatency-ns = 1000\nbandwidth-mibps = 500\n", img.display()),
    )
    .unwrap();
    let ram = GuestRam::new(DRAM_BASE, RAM_SIZE).unwrap();
    let mut b = Board::new(
        1,
        Clock {
            hz: 1_000_000_000,
            cycles_per_tick: 100,
        },
        &ram,
        5,
    )
    .unwrap();
    for d in hs_machine::load_devices(&desc).unwrap() {
        b.plug(hs_devices::resources::plug(&d).ok().unwrap())
            .unwrap();
    }
    (b, ram, img)
}

fn run_to(b: &mut Board, t: u64) -> u64 {
    let fired = b.fire_events_through(t, 1_000_000);
    assert!(fired < 1_000_000, "device events never end");
    fired
}

fn desc(ram: &GuestRam, i: u64, addr: u64, len: u32, flags: u16, next: u16) {
    let mut d = [0u8; 16];
    d[0..8].copy_from_slice(&addr.to_le_bytes());
    d[8..12].copy_from_slice(&len.to_le_bytes());
    d[12..14].copy_from_slice(&flags.to_le_bytes());
    d[14..16].copy_from_slice(&next.to_le_bytes());
    assert!(ram.write_bytes(DESC + 16 * i, &d));
}

fn header(ram: &GuestRam, at: u64, t: u32, sector: u64) {
    let mut h = [0u8; 16];
    h[0..4].copy_from_slice(&t.to_le_bytes());
    h[8..16].copy_from_slice(&sector.to_le_bytes());
    assert!(ram.write_bytes(at, &h));
}

/// Reset, negotiate, set up queue 0 (`size` entries at the given rings), DRIVER_OK.
fn setup(b: &mut Board, base: u64, now: u64, size: u32, rings: [u64; 3]) {
    let acc = Access { hart: 0, now };
    let w = |b: &mut Board, off: u64, v: u64| {
        let _ = b.mmio_write(acc, base + off, 4, v);
    };
    w(b, 0x70, 0);
    w(b, 0x70, 3);
    w(b, 0x24, 1);
    w(b, 0x20, 1);
    w(b, 0x70, 11);
    w(b, 0x30, 0);
    w(b, 0x38, size as u64);
    for (off, a) in [0x80, 0x90, 0xa0].into_iter().zip(rings) {
        w(b, off, a & 0xffff_ffff);
        w(b, off + 4, a >> 32);
    }
    w(b, 0x44, 1);
    w(b, 0x70, 15);
}

fn stats(b: &Board) -> Vec<(String, u64)> {
    b.device_stats()
        .into_iter()
        .filter(|s| s.name.starts_with("vda."))
        .map(|s| (s.name, s.value))
        .collect()
}

fn stat(b: &Board, name: &str) -> u64 {
    stats(b)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
        .unwrap()
}

#[test]
fn a_configured_disk_gets_a_window_a_line_and_its_own_node_and_serves_a_read() {
    let f = Files::new("dt");
    let (mut b, ram, _) = board(&f);
    let id = b.find("vda").unwrap();
    let g = b.grant(id).unwrap().clone();
    assert_eq!(
        (g.base, g.size, g.irqs.clone()),
        (PLATFORM_BASE, 0x1000, vec![64])
    );
    let ctx = b.fdt_ctx(vec![]);
    let nodes: Vec<_> = b.fdt_nodes(&ctx).into_iter().flatten().collect();
    let (_, n) = nodes
        .iter()
        .find(|(_, n)| n.name == format!("virtio_mmio@{:x}", PLATFORM_BASE))
        .expect("the disk's node");
    assert_eq!(n.get("compatible"), Some(&Prop::Str("virtio,mmio".into())));
    assert_eq!(n.get("interrupts"), Some(&Prop::U32s(vec![64])));
    let acc = Access { hart: 0, now: 100 };
    assert_eq!(b.mmio_read(acc, g.base + 8, 4), Ok(2), "device ID 2");
    // One read of sector 2 through the board.
    setup(&mut b, g.base, 100, 16, [DESC, AVAIL, USED]);
    header(&ram, REGION, T_IN, 2);
    desc(&ram, 0, REGION, 16, DESC_F_NEXT, 1);
    desc(&ram, 1, REGION + 0x100, 512, DESC_F_NEXT | DESC_F_WRITE, 2);
    desc(&ram, 2, REGION + 0x40, 1, DESC_F_WRITE, 0);
    assert!(
        ram.write(AVAIL + 4, 2, 0)
            && ram.write(AVAIL + 2, 2, 1)
            && ram.write(REGION + 0x40, 1, 0xff)
    );
    // Enable source 64 for hart 0 S-mode, priority 1.
    b.mmio_write(acc, hs_machine::layout::PLIC_BASE + 4 * 64, 4, 1)
        .unwrap();
    b.mmio_write(acc, hs_machine::layout::PLIC_BASE + 0x2080 + 8, 4, 1)
        .unwrap();
    let eff = b.mmio_write(acc, g.base + 0x50, 4, 0).unwrap();
    assert!(
        eff.irq_changed,
        "a scheduled completion ends the hart's slice"
    );
    let due = b.events.next_cycle().unwrap();
    // 1 µs + 512 B at 500 MiB/s (976 ns) at 1 GHz.
    assert_eq!(due, 100 + 1000 + 976);
    assert_eq!(b.irq_bits(0, due - 1) & (1 << 9), 0);
    run_to(&mut b, due);
    assert_eq!(ram.read(REGION + 0x40, 1), Some(0), "status OK");
    assert_eq!(ram.read(USED + 2, 2), Some(1));
    let mut got = vec![0u8; 512];
    assert!(ram.read_bytes(REGION + 0x100, &mut got));
    assert_eq!(got, image_bytes()[1024..1536]);
    assert_eq!(
        b.irq_bits(0, due) & (1 << 9),
        1 << 9,
        "the PLIC raised SEIP"
    );
    assert_eq!(
        (
            stat(&b, "vda.reads"),
            stat(&b, "vda.bytes_read"),
            stat(&b, "vda.busy_cycles")
        ),
        (1, 512, 1976)
    );
}

#[derive(Debug)]
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Random queue configurations, descriptors, available-ring entries,
/// request headers, well-formed requests and register accesses. Returns
/// the disk's counters, the used index and the overlay's hash.
fn fuzz(f: &Files, seed: u64, ops: usize) -> Vec<(String, u64)> {
    let (mut b, ram, _) = board(f);
    let base = b.grant(b.find("vda").unwrap()).unwrap().base;
    let mut rng = Rng(seed | 1);
    let mut now = 0u64;
    let mut avail_idx = 0u16;
    setup(&mut b, base, now, 16, [DESC, AVAIL, USED]);
    for _ in 0..ops {
        now += rng.below(5000);
        run_to(&mut b, now);
        let acc = Access { hart: 0, now };
        let addr = |r: &mut Rng| match r.below(6) {
            0 => r.next(),
            1 => DRAM_BASE + RAM_SIZE - r.below(64),
            _ => REGION + r.below(0x4000),
        };
        match rng.below(12) {
            // A random descriptor.
            0 | 1 => {
                let i = rng.below(20);
                let a = addr(&mut rng);
                let len = match rng.below(4) {
                    0 => rng.next() as u32,
                    1 => 1,
                    2 => 16,
                    _ => 512 * rng.below(4) as u32,
                };
                let flags = if rng.below(4) == 0 {
                    rng.next() as u16
                } else {
                    rng.below(4) as u16
                };
                let next = if rng.below(4) == 0 {
                    rng.next() as u16
                } else {
                    rng.below(16) as u16
                };
                if i < 16 {
                    desc(&ram, i, a, len, flags, next);
                }
            }
            // An available-ring entry, and the index moved (mostly by one).
            2 | 3 => {
                let head = if rng.below(4) == 0 {
                    rng.next() as u16
                } else {
                    rng.below(16) as u16
                };
                assert!(ram.write(AVAIL + 4 + 2 * (avail_idx % 16) as u64, 2, head as u64));
                avail_idx = avail_idx.wrapping_add(if rng.below(8) == 0 {
                    rng.next() as u16
                } else {
                    1
                });
                assert!(ram.write(AVAIL + 2, 2, avail_idx as u64));
                if rng.below(8) == 0 {
                    assert!(ram.write(AVAIL, 2, rng.below(2)));
                }
            }
            // A request header somewhere in the region.
            4 => {
                let t = [
                    T_IN,
                    T_OUT,
                    4,
                    8,
                    T_DISCARD,
                    T_WRITE_ZEROES,
                    rng.next() as u32,
                ][rng.below(7) as usize];
                let sector = if rng.below(4) == 0 {
                    rng.next()
                } else {
                    rng.below(70)
                };
                header(&ram, REGION + rng.below(0x100) * 16, t, sector);
            }
            // A well-formed request at descriptors 0..3 (a discard /
            // write-zeroes carries one random range).
            5 | 6 => {
                let t =
                    [T_IN, T_OUT, T_IN, T_OUT, T_DISCARD, T_WRITE_ZEROES][rng.below(6) as usize];
                header(&ram, REGION, t, rng.below(66));
                let mut n = 512 * (1 + rng.below(4)) as u32;
                if t == T_DISCARD || t == T_WRITE_ZEROES {
                    let mut r = [0u8; 16];
                    r[0..8].copy_from_slice(&rng.below(70).to_le_bytes());
                    r[8..12].copy_from_slice(&(rng.below(12) as u32).to_le_bytes());
                    r[12..16].copy_from_slice(
                        &(rng.below(3) as u32 * (t - T_DISCARD) / 2).to_le_bytes(),
                    );
                    assert!(ram.write_bytes(REGION + 0x1000, &r));
                    n = 16;
                }
                desc(&ram, 0, REGION, 16, DESC_F_NEXT, 1);
                desc(
                    &ram,
                    1,
                    REGION + 0x1000,
                    n,
                    DESC_F_NEXT | if t == T_IN { DESC_F_WRITE } else { 0 },
                    2,
                );
                desc(&ram, 2, REGION + 0x40, 1, DESC_F_WRITE, 0);
                assert!(ram.write(AVAIL + 4 + 2 * (avail_idx % 16) as u64, 2, 0));
                avail_idx = avail_idx.wrapping_add(1);
                assert!(ram.write(AVAIL + 2, 2, avail_idx as u64));
                let _ = b.mmio_write(acc, base + 0x50, 4, 0);
            }
            // Kick (mostly queue 0).
            7 | 8 => {
                let q = if rng.below(8) == 0 { rng.below(4) } else { 0 };
                let _ = b.mmio_write(acc, base + 0x50, 4, q);
            }
            // A new queue set-up: a random size and random ring addresses, or the good ones.
            9 => {
                let size =
                    [0, 1, 2, 8, 12, 16, 256, 1000, rng.next() as u32][rng.below(9) as usize];
                let rings = if rng.below(2) == 0 {
                    [DESC, AVAIL, USED]
                } else {
                    [addr(&mut rng), addr(&mut rng), addr(&mut rng)]
                };
                setup(&mut b, base, now, size, rings);
                avail_idx = 0;
                assert!(ram.write(AVAIL + 2, 2, 0));
                assert!(ram.write(USED + 2, 2, 0));
            }
            // Any register, any width, just past the window too.
            _ => {
                let mut off = rng.below(0x1010);
                let mut size = 1u8 << rng.below(4);
                if rng.below(2) == 0 {
                    (off, size) = (off & !3, 4);
                }
                if rng.below(2) == 0 {
                    let _ = b.mmio_read(acc, base + off, size);
                } else {
                    let _ = b.mmio_write(
                        acc,
                        base + off,
                        size,
                        if rng.below(2) == 0 {
                            rng.below(16)
                        } else {
                            rng.next()
                        },
                    );
                }
            }
        }
    }
    run_to(&mut b, now + 1_000_000_000);
    assert!(b.events.is_empty(), "every completion was delivered");
    let mut out = stats(&b);
    out.push(("used_idx".into(), ram.read(USED + 2, 2).unwrap()));
    out
}

#[test]
fn random_queues_and_chains_end_and_repeat_and_leave_the_image_alone() {
    let f = Files::new("fuzz");
    let img_path = f.dir.join("disk.img");
    for seed in [1u64, 0x5eed, 0xdead_beef, 42] {
        let a = fuzz(&f, seed, 5000);
        assert_eq!(
            a,
            fuzz(&f, seed, 5000),
            "seed {seed:#x}: the same traffic gives the same counters"
        );
        eprintln!("seed {seed:#x}: {a:?}");
        let get = |n: &str| a.iter().find(|(k, _)| k == n).map(|(_, v)| *v).unwrap();
        assert!(
            get("vda.reads") > 0 && get("vda.writes") > 0,
            "seed {seed:#x}: requests were served: {a:?}"
        );
        assert!(
            get("vda.discards") > 0 && get("vda.write_zeroes") > 0 && get("vda.bytes_zeroed") > 0,
            "seed {seed:#x}: {a:?}"
        );
        assert!(
            get("vda.bad_queues") > 0,
            "seed {seed:#x}: malformed queues were found: {a:?}"
        );
        assert!(get("vda.overlay_blocks") > 0, "seed {seed:#x}: {a:?}");
        assert_eq!(
            std::fs::read(&img_path).unwrap(),
            image_bytes(),
            "seed {seed:#x}: the image file is unchanged"
        );
    }
}

#[test]
fn a_bad_image_is_an_error_when_the_description_is_loaded() {
    let f = Files::new("bad");
    let odd = f.dir.join("odd.img");
    std::fs::write(&odd, [0u8; 700]).unwrap();
    let desc = f.dir.join("m.toml");
    let check = |file: &Path, want: &str| {
        std::fs::write(
            &desc,
            format!(
                "[board.disk]\nkind = \"virtio-blk\"\nfile = \"{}\"\n",
                file.display()
            ),
        )
        .unwrap();
        let e = hs_machine::load_devices(&desc).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "machine description {}: key `board.disk.file`: ",
                desc.display()
            )),
            "{e}"
        );
        assert!(e.contains(want), "{e}");
    };
    check(
        &odd,
        "is 700 bytes, not a positive whole number of 512-byte sectors",
    );
    check(&f.dir.join("missing.img"), "cannot open the disk image");
}
