//! Image extras (`[extras]` in `guest/images/*.toml`): coreutils' `dd` from
//! trixie's riscv64 package, with the loader and libc it needs, beside
//! BusyBox — on both images, doing direct I/O (`iflag=direct`,
//! `oflag=direct`) against a virtio disk, the way the SD-card study uses it.
//! BusyBox's ash runs its own applets before `$PATH`, so the study calls
//! `/usr/bin/dd` by path; this test checks that name is coreutils'.

use crate::support;

use support::*;

const RUN: &str = r#"/usr/bin/dd --version | head -n 1
/usr/bin/dd if=/workload/pattern.bin of=/dev/vda bs=4096 count=16 oflag=direct conv=notrunc 2>&1 | tail -n 1 | sed 's/^/write:/'
/usr/bin/dd if=/dev/vda of=/tmp/back.bin bs=4096 count=16 iflag=direct 2>&1 | tail -n 1 | sed 's/^/read:/'
cmp /tmp/back.bin /workload/pattern.bin && echo "direct:match"
"#;

fn check(image_name: &str) {
    image(image_name);
    let s = Scratch::new(&format!("extras-{image_name}"));
    std::fs::create_dir_all(s.path("wl")).unwrap();
    s.write("wl/run.sh", RUN);
    let pattern: Vec<u8> = (0..65536u32).map(|i| (i * 7 + (i >> 9)) as u8).collect();
    s.write("wl/pattern.bin", &pattern);
    let disk = s.write("disk.img", vec![0u8; 1 << 20]);
    let drive = format!("file={},format=raw,if=virtio", disk.display());
    let wl = s.path("wl");
    let out = hartscope(
        &[
            "boot",
            "--image",
            image_name,
            "--workload",
            wl.to_str().unwrap(),
            "-drive",
            &drive,
        ],
        &s,
        BOOT_DEADLINE,
    );
    assert_workload_finished(&out, 0);
    let console = out.stdout_text();
    assert!(console.contains("dd (coreutils) 9."), "{}", out.tail());
    assert!(
        console.contains("write:65536 bytes (66 kB, 64 KiB) copied")
            && console.contains("read:65536 bytes (66 kB, 64 KiB) copied"),
        "coreutils' summary lines:\n{}",
        out.tail()
    );
    assert!(console.contains("direct:match"), "{}", out.tail());
    // Copy-on-write: the host's disk file is untouched.
    assert_eq!(std::fs::read(&disk).unwrap(), vec![0u8; 1 << 20]);
}

#[test]
fn coreutils_dd_does_direct_io_on_custom() {
    check("custom");
}

#[test]
fn coreutils_dd_does_direct_io_on_debian() {
    check("debian");
}
