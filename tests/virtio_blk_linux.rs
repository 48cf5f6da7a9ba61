//! virtio-blk under stock Linux: two disks made on the host — one given
//! QEMU-style (`-drive file=…,format=raw,if=virtio`, copy-on-write), one
//! named by a machine description (`[board.ro0] kind = "virtio-blk"`,
//! `read-only = true`) — on
//!
//! * `debian` (6.12; `virtio_mmio` and `virtio_blk` loaded by the agent) and
//! * `custom` (6.1 with `VIRTIO_BLK=y`).
//!
//! The guest lists `/proc/partitions` and each disk's serial (GET_ID),
//! read-only flag and size; compares the whole writable disk with a copy of
//! the image shipped in the workload (`cmp`), dumps one sector for the host
//! to compare, writes one 4 KiB block, syncs, drops the page cache and reads
//! it back, discards 64 KiB and 4.5 KiB (`blkdiscard`) and reads zeros back, and tries to write the read-only disk. The host then checks
//! that the copy-on-write overlay holds exactly the guest's block (its
//! FNV-1a in the run's statistics), that both image files are byte-identical
//! to before, and that a second run gives the same disk counters.

use crate::support;

use support::*;

const SECTORS: u64 = 4096; // 2 MiB
const BLOCK: u64 = 12; // the 4 KiB block the guest writes (sectors 96..104)
const DUMP_SECTOR: u64 = 5;

/// The writable disk: every 512-byte sector says which it is, then a mix.
fn disk_bytes() -> Vec<u8> {
    let mut v = Vec::with_capacity((SECTORS * 512) as usize);
    for s in 0..SECTORS {
        let mut sec = format!("hartscope sector {s:06}\n").into_bytes();
        sec.extend((sec.len() as u64..512).map(|i| ((i * 31) ^ (s * 7) ^ (s >> 8)) as u8));
        v.extend(sec);
    }
    v
}

fn ro_bytes() -> Vec<u8> {
    (0..64 * 512u64).map(|i| (i % 251) as u8).collect()
}

/// The 4 KiB the guest writes.
fn new_block() -> Vec<u8> {
    (0..4096u64)
        .map(|i| (0xa5 ^ (i * 3) ^ (i >> 7)) as u8)
        .collect()
}

fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

const RUN: &str = r#"echo "partitions-begin"
sed 's/^/part:/' /proc/partitions
rw=; ro=
for d in /sys/block/vd*; do
    n=$(basename $d)
    echo "disk:$n serial=$(cat $d/serial) ro=$(cat $d/ro) size=$(cat $d/size)"
    [ "$(cat $d/serial)" = drive0 ] && rw=/dev/$n
    [ "$(cat $d/serial)" = ro0 ] && ro=/dev/$n
done
echo "rw:$rw ro:$ro"
cmp $rw /workload/disk.bin && echo "read:match"
dd if=$rw bs=512 skip=5 count=1 2>/dev/null | od -An -v -tx1 | tr -d ' \n' | sed 's/^/sector5:/'
echo
dd if=/workload/block.bin of=$rw bs=4096 seek=12 count=1 conv=fsync 2>/dev/null && echo "write:ok"
sync
echo 3 > /proc/sys/vm/drop_caches 2>/dev/null && echo "dropped-caches"
dd if=$rw bs=4096 skip=12 count=1 2>/dev/null | cmp - /workload/block.bin && echo "readback:match"
dd if=$rw bs=4096 skip=11 count=1 2>/dev/null | cmp - /workload/before.bin && echo "neighbour:unchanged"
n=$(basename $rw)
echo "discard-max:$(cat /sys/block/$n/queue/discard_max_bytes) zeroes-max:$(cat /sys/block/$n/queue/write_zeroes_max_bytes)"
blkdiscard -o 1048576 -l 65536 $rw && echo "discard:ok"
dd if=$rw bs=65536 skip=16 count=1 2>/dev/null | cmp - /workload/zero64k.bin && echo "discarded:zeros"
blkdiscard -o 1572864 -l 4608 $rw && echo "discard2:ok"
dd if=$rw bs=512 skip=3072 count=10 2>/dev/null | cmp - /workload/zeroed.bin && echo "zeroed:match"
dd if=/workload/block.bin of=$ro bs=4096 count=1 conv=fsync 2>/dev/null || echo "ro-write:refused"
cmp $ro /workload/ro.bin && echo "ro-read:match"
exit 0
"#;

struct Run {
    console: String,
    disks: serde_json::Value,
}

fn run(image_name: &str, dir: &Scratch, tag: &str) -> Run {
    let wl = dir.path(&format!("wl-{tag}"));
    std::fs::create_dir_all(&wl).unwrap();
    let disk = disk_bytes();
    std::fs::write(wl.join("run.sh"), RUN).unwrap();
    std::fs::write(wl.join("disk.bin"), &disk).unwrap();
    std::fs::write(wl.join("block.bin"), new_block()).unwrap();
    std::fs::write(
        wl.join("before.bin"),
        &disk[(BLOCK as usize - 1) * 4096..BLOCK as usize * 4096],
    )
    .unwrap();
    std::fs::write(wl.join("ro.bin"), ro_bytes()).unwrap();
    std::fs::write(wl.join("zero64k.bin"), [0u8; 65536]).unwrap();
    let mut zeroed = vec![0u8; 9 * 512];
    zeroed.extend(&disk[3081 * 512..3082 * 512]);
    std::fs::write(wl.join("zeroed.bin"), zeroed).unwrap();
    let img = dir.write(&format!("{tag}-disk.img"), &disk);
    let ro = dir.write(&format!("{tag}-ro.img"), ro_bytes());
    let desc = dir.write(
        &format!("{tag}.toml"),
        format!(
            "model = \"atomic\"\ndescription = \"atomic with a read-only virtio-blk disk\"\n\n[board.ro0]\nkind = \"virtio-blk\"\nfile = \"{}\"\nread-only = true\n",
            ro.display()
        ),
    );
    let stats = dir.path(&format!("{tag}.json"));
    let drive = format!("file={},format=raw,if=virtio", img.display());
    let out = hartscope(
        &[
            "boot",
            "--image",
            image_name,
            "--machine",
            desc.to_str().unwrap(),
            "-drive",
            &drive,
            "--workload",
            wl.to_str().unwrap(),
            "--stats-json",
            stats.to_str().unwrap(),
        ],
        dir,
        BOOT_DEADLINE,
    );
    assert_workload_finished(&out, 0);
    assert_eq!(
        std::fs::read(&img).unwrap(),
        disk,
        "the -drive image file is byte-identical after the run"
    );
    assert_eq!(
        std::fs::read(&ro).unwrap(),
        ro_bytes(),
        "the read-only image file is byte-identical after the run"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let disks: serde_json::Map<String, serde_json::Value> = json["devices"]
        .as_object()
        .expect("devices in the stats")
        .iter()
        .filter(|(k, _)| k.starts_with("drive0.") || k.starts_with("ro0."))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Run {
        console: out.stdout_text(),
        disks: serde_json::Value::Object(disks),
    }
}

fn has(console: &str, line: &str) -> bool {
    console.lines().any(|l| l.trim_end() == line)
}

fn check(r: &Run) {
    let (c, d) = (&r.console, &r.disks);
    // Both disks in /proc/partitions, with their sizes in KiB.
    let parts: Vec<Vec<&str>> = c
        .lines()
        .filter_map(|l| l.strip_prefix("part:"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let size_of = |serial: &str| {
        let line = c
            .lines()
            .find(|l| l.starts_with("disk:") && l.contains(&format!(" serial={serial} ")))?;
        Some(line["disk:".len()..].split_whitespace().next()?.to_string())
    };
    let rw =
        size_of("drive0").unwrap_or_else(|| panic!("no disk with serial drive0 (GET_ID):\n{c}"));
    let ro = size_of("ro0").unwrap_or_else(|| panic!("no disk with serial ro0:\n{c}"));
    assert!(rw.starts_with("vd") && ro.starts_with("vd"), "{rw} {ro}");
    assert!(
        parts
            .iter()
            .any(|p| p.len() == 4 && p[3] == rw && p[2] == (SECTORS / 2).to_string()),
        "{rw} not in /proc/partitions with {} KiB:\n{c}",
        SECTORS / 2
    );
    assert!(
        parts
            .iter()
            .any(|p| p.len() == 4 && p[3] == ro && p[2] == "32"),
        "{ro} not in /proc/partitions:\n{c}"
    );
    assert!(
        has(c, &format!("disk:{rw} serial=drive0 ro=0 size={SECTORS}")),
        "{c}"
    );
    assert!(
        has(c, &format!("disk:{ro} serial=ro0 ro=1 size=64")),
        "the read-only disk shows ro=1:\n{c}"
    );
    // Reads: the whole disk, and one sector's exact bytes on the host side.
    assert!(
        has(c, "read:match"),
        "the guest read back something else than the image:\n{c}"
    );
    let hex: String = disk_bytes()
        [(DUMP_SECTOR * 512) as usize..(DUMP_SECTOR * 512 + 512) as usize]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(
        has(c, &format!("sector5:{hex}")),
        "sector 5 as the guest read it differs:\n{c}"
    );
    // The write: in the guest, then in the overlay, never in the file.
    assert!(
        has(c, "write:ok") && has(c, "readback:match") && has(c, "neighbour:unchanged"),
        "{c}"
    );
    assert!(has(c, "ro-write:refused") && has(c, "ro-read:match"), "{c}");
    // Two discards: 1 MiB + 64 KiB (blocks 256..272), and sectors
    // 3072..3081 (block 384 whole, the first sector of block 385). BusyBox's
    // blkdiscard has no -z, so WRITE_ZEROES is left to the unit and fuzz tests.
    assert!(
        has(
            c,
            &format!("discard-max:{} zeroes-max:{}", 1u64 << 30, 1u64 << 30)
        ),
        "Linux took the discard / write-zeroes limits:\n{c}"
    );
    assert!(has(c, "discard:ok") && has(c, "discarded:zeros"), "{c}");
    assert!(has(c, "discard2:ok") && has(c, "zeroed:match"), "{c}");
    assert!(d["drive0.discards"].as_u64().unwrap() >= 2, "{d}");
    assert_eq!(d["drive0.bytes_zeroed"], 65536 + 4608, "{d}");
    // The overlay: exactly the guest's block, the zeroed blocks, and block
    // 385 with its first sector zeroed.
    let disk = disk_bytes();
    let mut blocks: Vec<(u64, Vec<u8>)> = vec![(BLOCK, new_block())];
    blocks.extend((256..272).map(|b| (b, vec![0u8; 4096])));
    blocks.push((384, vec![0u8; 4096]));
    let mut b385 = disk[385 * 4096..386 * 4096].to_vec();
    b385[..512].fill(0);
    blocks.push((385, b385));
    assert_eq!(
        d["drive0.overlay_blocks"],
        blocks.len() as u64,
        "exactly the guest's blocks are in the overlay: {d}"
    );
    let expect = fnv1a(
        blocks
            .into_iter()
            .flat_map(|(b, data)| b.to_le_bytes().into_iter().chain(data)),
    );
    assert_eq!(
        d["drive0.overlay_fnv1a"], expect,
        "the overlay holds the guest's bytes: {d}"
    );
    assert_eq!(d["drive0.bytes_written"], 4096, "{d}");
    assert_eq!(d["drive0.bad_queues"], 0, "{d}");
    assert_eq!(d["drive0.needs_reset"], 0, "{d}");
    assert_eq!(d["ro0.overlay_blocks"], 0, "{d}");
    assert_eq!(d["ro0.bytes_written"], 0, "{d}");
    assert!(
        d["drive0.bytes_read"].as_u64().unwrap() >= SECTORS * 512,
        "{d}"
    );
    assert!(d["drive0.get_ids"].as_u64().unwrap() >= 1, "{d}");
}

#[test]
fn debian_reads_writes_and_leaves_the_images_alone() {
    let _ = image("debian");
    let dir = Scratch::new("vblk-debian");
    let a = run("debian", &dir, "a");
    check(&a);
    eprintln!(
        "debian: dropped caches: {}; {}",
        has(&a.console, "dropped-caches"),
        a.disks
    );
    let b = run("debian", &dir, "b");
    assert_eq!(
        a.disks, b.disks,
        "the same run gives the same disk counters"
    );
}

/// Kill -9 the run right after the guest wrote the disk (the guest then
/// spins): the image file is byte-identical.
#[test]
fn debian_killed_run_leaves_the_image_alone() {
    use std::io::{BufRead, BufReader};
    let _ = image("debian");
    let dir = Scratch::new("vblk-kill");
    let wl = dir.path("wl");
    std::fs::create_dir_all(&wl).unwrap();
    std::fs::write(wl.join("block.bin"), new_block()).unwrap();
    std::fs::write(
        wl.join("run.sh"),
        "dd if=/workload/block.bin of=/dev/vda bs=4096 seek=12 count=1 conv=fsync 2>/dev/null && echo \"write:ok\"\nsync\nwhile true; do :; done\n",
    )
    .unwrap();
    let disk = disk_bytes();
    let img = dir.write("disk.img", &disk);
    let drive = format!("file={},format=raw,if=virtio", img.display());
    let mut child = std::process::Command::new(HARTSCOPE)
        .args([
            "boot",
            "--image",
            "debian",
            "-drive",
            &drive,
            "--workload",
            wl.to_str().unwrap(),
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let mut seen = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let Ok(line) = line else { break };
        let done = line.trim_end() == "write:ok";
        seen.push(line);
        if done || started.elapsed() > BOOT_DEADLINE {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        seen.iter().any(|l| l.trim_end() == "write:ok"),
        "the guest never wrote:\n{}",
        seen.join("\n")
    );
    assert_eq!(
        std::fs::read(&img).unwrap(),
        disk,
        "the image file is byte-identical after kill -9"
    );
}

#[test]
fn custom_reads_writes_and_leaves_the_images_alone() {
    let _ = image("custom");
    let dir = Scratch::new("vblk-custom");
    let a = run("custom", &dir, "a");
    check(&a);
    eprintln!(
        "custom: dropped caches: {}; {}",
        has(&a.console, "dropped-caches"),
        a.disks
    );
    let b = run("custom", &dir, "b");
    assert_eq!(
        a.disks, b.disks,
        "the same run gives the same disk counters"
    );
}
