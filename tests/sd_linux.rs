//! The SD host controller (`snps,dwcmshc-sdhci`) and its card under stock
//! Linux: `sdhci-of-dwcmshc` built into `custom` (6.1) and loaded as a
//! module on `debian` (6.12), in each transfer mode the device tree can
//! leave the driver (ADMA2, SDMA, PIO) and at 1 and 4 data lines.
//!
//! The guest waits for `/dev/mmcblk0`, lists `/proc/partitions`, compares
//! the whole card with a copy of the image shipped in the workload (`cmp`),
//! dumps one sector for the host to compare, writes one 4 KiB block with
//! direct I/O (trixie's coreutils `dd`, `oflag=direct`), and reads it back
//! the same way and through a dropped page cache. The host then checks that
//! the copy-on-write overlay holds exactly the guest's block (its FNV-1a in
//! the run's statistics), that the image file is byte-identical to before,
//! that the driver ran the bus as the machine said (lines, DMA or PIO
//! counters), and that a second run gives the same counters.

use crate::support;

use support::*;

const BLOCKS: u64 = 4096; // 2 MiB
const BLOCK: u64 = 12; // the 4 KiB block the guest writes

fn card_bytes() -> Vec<u8> {
    let mut v = Vec::with_capacity((BLOCKS * 512) as usize);
    for s in 0..BLOCKS {
        let mut sec = format!("hartscope sd sector {s:06}\n").into_bytes();
        sec.extend((sec.len() as u64..512).map(|i| ((i * 29) ^ (s * 5) ^ (s >> 7)) as u8));
        v.extend(sec);
    }
    v
}

fn new_block() -> Vec<u8> {
    (0..4096u64)
        .map(|i| (0x3c ^ (i * 7) ^ (i >> 5)) as u8)
        .collect()
}

fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

const RUN: &str = r#"i=0
while [ ! -b /dev/mmcblk0 ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done
sed 's/^/part:/' /proc/partitions
cmp /dev/mmcblk0 /workload/card.bin && echo "read:match"
/usr/bin/dd if=/dev/mmcblk0 bs=512 skip=5 count=1 iflag=direct 2>/dev/null | od -An -v -tx1 | tr -d ' \n' | sed 's/^/sector5:/'
echo
/usr/bin/dd if=/workload/block.bin of=/dev/mmcblk0 bs=4096 seek=12 count=1 oflag=direct 2>/dev/null && echo "write:ok"
/usr/bin/dd if=/dev/mmcblk0 bs=4096 skip=12 count=1 iflag=direct 2>/dev/null | cmp - /workload/block.bin && echo "direct-readback:match"
sync
echo 3 > /proc/sys/vm/drop_caches
dd if=/dev/mmcblk0 bs=4096 skip=12 count=1 2>/dev/null | cmp - /workload/block.bin && echo "readback:match"
dd if=/dev/mmcblk0 bs=4096 skip=11 count=1 2>/dev/null | cmp - /workload/before.bin && echo "neighbour:unchanged"
exit 0
"#;

struct Run {
    console: String,
    sd: serde_json::Map<String, serde_json::Value>,
}

fn run(image: &str, dma: &str, width: u32, dir: &Scratch, tag: &str) -> Run {
    let wl = dir.path(&format!("wl-{tag}"));
    std::fs::create_dir_all(&wl).unwrap();
    let card = card_bytes();
    std::fs::write(wl.join("run.sh"), RUN).unwrap();
    std::fs::write(wl.join("card.bin"), &card).unwrap();
    std::fs::write(wl.join("block.bin"), new_block()).unwrap();
    std::fs::write(
        wl.join("before.bin"),
        &card[(BLOCK as usize - 1) * 4096..BLOCK as usize * 4096],
    )
    .unwrap();
    let img = dir.write(&format!("{tag}-card.img"), &card);
    let desc = dir.write(
        &format!("{tag}.toml"),
        format!(
            "model = \"atomic\"\ndescription = \"atomic with an SD card\"\n\n\
             [board.sd_clk]\nkind = \"fixed-clock\"\nfrequency = 100_000_000\n\n\
             [board.sd0]\nkind = \"dwcmshc-sdhci\"\nclock = \"sd_clk\"\nfile = \"{}\"\n\
             transfer = \"{dma}\"\nbus-width = {width}\n",
            img.display()
        ),
    );
    let (console, sd) = boot_with_devices(dir, image, "", &desc, &wl, tag, &["sd0."]);
    assert_eq!(
        std::fs::read(&img).unwrap(),
        card,
        "the card's image file is byte-identical after the run"
    );
    Run {
        console,
        sd: sd.as_object().cloned().unwrap_or_default(),
    }
}

fn has(console: &str, line: &str) -> bool {
    console.lines().any(|l| l.trim_end() == line)
}

fn check(r: &Run, dma: &str) {
    let (c, d) = (&r.console, &r.sd);
    assert!(
        c.lines()
            .filter_map(|l| l.strip_prefix("part:"))
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["179", "0", "2048", "mmcblk0"]),
        "mmcblk0 with 2048 KiB in /proc/partitions:\n{c}"
    );
    assert!(
        has(c, "read:match"),
        "the guest read something else than the image:\n{c}"
    );
    let hex: String = card_bytes()[5 * 512..6 * 512]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(has(c, &format!("sector5:{hex}")), "sector 5 differs:\n{c}");
    for l in [
        "write:ok",
        "direct-readback:match",
        "readback:match",
        "neighbour:unchanged",
    ] {
        assert!(has(c, l), "{l} missing:\n{c}");
    }
    let expect = fnv1a(BLOCK.to_le_bytes().into_iter().chain(new_block()));
    assert_eq!(
        d["sd0.card.overlay_fnv1a"], expect,
        "the overlay holds exactly the guest's block: {d:?}"
    );
    let v = |k: &str| {
        d[k].as_u64()
            .unwrap_or_else(|| panic!("{k} missing: {d:?}"))
    };
    assert_eq!(
        v("sd0.crc_errors") + v("sd0.adma_errors") + v("sd0.dma_errors"),
        0,
        "{d:?}"
    );
    assert!(v("sd0.card.blocks_read") >= BLOCKS, "{d:?}");
    match dma {
        "pio" => {
            assert_eq!(v("sd0.dma_bytes"), 0, "{d:?}");
            assert!(v("sd0.pio_bytes") >= BLOCKS * 512, "{d:?}");
        }
        "sdma" => {
            assert_eq!(
                (v("sd0.pio_bytes"), v("sd0.adma_descriptors")),
                (0, 0),
                "{d:?}"
            );
            assert!(v("sd0.dma_bytes") >= BLOCKS * 512, "{d:?}");
        }
        _ => {
            assert_eq!(v("sd0.pio_bytes"), 0, "{d:?}");
            assert!(v("sd0.adma_descriptors") > 0, "{d:?}");
        }
    }
}

#[test]
fn custom_kernel_reads_and_writes_the_card_in_every_mode() {
    let dir = Scratch::new("sd-linux-custom");
    for (dma, width) in [("adma2", 4), ("sdma", 4), ("pio", 1)] {
        let tag = format!("custom-{dma}-{width}");
        let r = run("custom", dma, width, &dir, &tag);
        check(&r, dma);
        assert!(
            r.console.contains(&format!(
                "using {}",
                match dma {
                    "adma2" => "ADMA",
                    "sdma" => "DMA",
                    _ => "PIO",
                }
            )),
            "the driver's own report of its transfer mode:\n{}",
            r.console
        );
        if dma == "adma2" {
            let again = run("custom", dma, width, &dir, &format!("{tag}-again"));
            assert_eq!(r.sd, again.sd, "a second run gives the same SD counters");
        }
    }
}

#[test]
fn debian_kernel_loads_the_module_and_reads_and_writes_the_card() {
    let dir = Scratch::new("sd-linux-debian");
    let r = run("debian", "adma2", 4, &dir, "debian");
    check(&r, "adma2");
    assert!(
        r.console.contains("new high speed SDHC card"),
        "{}",
        r.console
    );
}

/// A file system made on the host (`mke2fs -t ext2 -d`): both kernels mount
/// the card, read the host's files byte for byte, write a new file that
/// reads back the same after a remount and a dropped page cache; the image
/// file stays as the host made it.
#[test]
fn both_kernels_mount_an_ext2_card_made_on_the_host() {
    let dir = Scratch::new("sd-linux-ext2");
    let files = dir.path("fs");
    std::fs::create_dir_all(files.join("sub")).unwrap();
    let hello: Vec<u8> = (0..70_000u32)
        .map(|i| ((i * 13) ^ (i >> 9)) as u8)
        .collect();
    std::fs::write(files.join("hello.bin"), &hello).unwrap();
    std::fs::write(files.join("sub/note.txt"), "made on the host\n").unwrap();
    let img = dir.path("ext2.img");
    let mk = std::process::Command::new("mke2fs")
        .args([
            "-q",
            "-F",
            "-t",
            "ext2",
            "-b",
            "1024",
            "-E",
            "root_owner=0:0",
            "-d",
        ])
        .arg(&files)
        .arg(&img)
        .arg("4M")
        .env("E2FSPROGS_FAKE_TIME", "1767225600")
        .output()
        .expect("mke2fs (Debian's e2fsprogs) runs");
    assert!(
        mk.status.success(),
        "{}",
        String::from_utf8_lossy(&mk.stderr)
    );
    let before = std::fs::read(&img).unwrap();
    let new: Vec<u8> = (0..20_000u32).map(|i| (i * 7 + 3) as u8).collect();
    for image in ["custom", "debian"] {
        let wl = dir.path(&format!("wl-{image}"));
        std::fs::create_dir_all(&wl).unwrap();
        std::fs::write(wl.join("hello.bin"), &hello).unwrap();
        std::fs::write(wl.join("new.bin"), &new).unwrap();
        std::fs::write(
            wl.join("run.sh"),
            r#"i=0
while [ ! -b /dev/mmcblk0 ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done
mkdir -p /mnt/sd
mount -t ext2 /dev/mmcblk0 /mnt/sd && echo "mount:ok"
cmp /mnt/sd/hello.bin /workload/hello.bin && echo "hello:match"
cat /mnt/sd/sub/note.txt
cp /workload/new.bin /mnt/sd/new.bin && sync && echo "write:ok"
umount /mnt/sd && echo "umount:ok"
echo 3 > /proc/sys/vm/drop_caches
mount -t ext2 -o ro /dev/mmcblk0 /mnt/sd && cmp /mnt/sd/new.bin /workload/new.bin && echo "new:match"
umount /mnt/sd
exit 0
"#,
        )
        .unwrap();
        let desc = dir.write(
            &format!("{image}.toml"),
            format!(
                "model = \"atomic\"\ndescription = \"atomic with an SD card\"\n\n\
                 [board.sd_clk]\nkind = \"fixed-clock\"\nfrequency = 100_000_000\n\n\
                 [board.sd0]\nkind = \"dwcmshc-sdhci\"\nclock = \"sd_clk\"\nfile = \"{}\"\n",
                img.display()
            ),
        );
        let out = hartscope(
            &[
                "boot",
                "--image",
                image,
                "--machine",
                desc.to_str().unwrap(),
                "--workload",
                wl.to_str().unwrap(),
            ],
            &dir,
            BOOT_DEADLINE,
        );
        assert_workload_finished(&out, 0);
        let c = out.stdout_text();
        for l in [
            "mount:ok",
            "hello:match",
            "made on the host",
            "write:ok",
            "umount:ok",
            "new:match",
        ] {
            assert!(has(&c, l), "{image}: `{l}` missing:\n{c}");
        }
        assert_eq!(
            std::fs::read(&img).unwrap(),
            before,
            "{image}: the image file is unchanged"
        );
    }
}
