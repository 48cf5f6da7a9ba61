//! Bad host input through the binary: every case gives exactly one line on
//! stderr naming the file or option at fault, a non-zero exit, no panic, no
//! console output and no stats file left behind, and it does so promptly.

use crate::support;

use std::time::Duration;

use support::*;

/// Far more than any of these needs; a hang fails the case instead of stalling the suite.
const DEADLINE: Duration = Duration::from_secs(120);
const MIB: usize = 1 << 20;

/// Deterministic bytes that look random (xorshift).
fn noise(len: usize) -> Vec<u8> {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u8
        })
        .collect()
}

/// Runs `hartscope ARGS --stats-json FILE` and checks the refusal.
fn refused(dir: &Scratch, args: &[&str], names: &str) {
    let stats = dir.path("stats.json");
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--stats-json", stats.to_str().unwrap()]);
    let out = hartscope(&all, dir, DEADLINE);
    let shown = format!("`hartscope {}`:\n{}", args.join(" "), out.tail());
    assert!(
        out.code().is_some_and(|c| c != 0),
        "non-zero exit expected from {shown}"
    );
    assert_eq!(
        out.stderr.lines().count(),
        1,
        "exactly one line on stderr from {shown}"
    );
    assert!(
        out.stderr.starts_with("hartscope: ") && out.stderr.ends_with('\n'),
        "{shown}"
    );
    assert!(
        out.stderr.contains(names),
        "the message names `{names}`: {shown}"
    );
    assert!(out.stdout.is_empty(), "no console output from {shown}");
    assert!(!stats.exists(), "no stats file after {shown}");
    let leftovers: Vec<String> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("stats"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "temporary stats files left: {leftovers:?} after {shown}"
    );
}

#[test]
fn missing_files_are_named() {
    let img = image("custom");
    let dir = Scratch::new("bad-missing");
    let fw = dir.path("missing-fw_jump.bin");
    let kernel = dir.path("missing-Image");
    let initrd = dir.path("missing-initrd");
    let (fw, kernel, initrd) = (
        fw.to_str().unwrap(),
        kernel.to_str().unwrap(),
        initrd.to_str().unwrap(),
    );
    let real_kernel = img.kernel.to_str().unwrap();
    refused(
        &dir,
        &["boot", "--image", "custom", "--bios", fw],
        &format!("cannot read firmware file {fw}"),
    );
    refused(
        &dir,
        &["boot", "--image", "custom", "--kernel", kernel],
        &format!("cannot read kernel file {kernel}"),
    );
    refused(
        &dir,
        &["boot", "--image", "custom", "--initrd", initrd],
        &format!("cannot read initrd file {initrd}"),
    );
    refused(&dir, &["-bios", "none", "-kernel", kernel], kernel);
    refused(&dir, &["-bios", fw, "-kernel", real_kernel], fw);
    let workload = dir.path("missing-run.sh");
    refused(
        &dir,
        &[
            "boot",
            "--image",
            "custom",
            "--workload",
            workload.to_str().unwrap(),
        ],
        workload.to_str().unwrap(),
    );
    let empty_dir = dir.path("workload-without-run.sh");
    std::fs::create_dir_all(&empty_dir).unwrap();
    refused(
        &dir,
        &[
            "boot",
            "--image",
            "custom",
            "--workload",
            empty_dir.to_str().unwrap(),
        ],
        "run.sh",
    );
    refused(
        &dir,
        &[
            "boot",
            "--bios",
            "none",
            "--kernel",
            dir.0.to_str().unwrap(),
        ],
        dir.0.to_str().unwrap(),
    );
    // Disks: a missing image, and one that is not whole sectors, named before the run.
    let disk = dir.path("missing-disk.img");
    let drive = format!("file={},format=raw,if=virtio", disk.display());
    refused(
        &dir,
        &["-bios", "none", "-kernel", real_kernel, "-drive", &drive],
        &format!(
            "key `file`: cannot open the disk image `{}`",
            disk.display()
        ),
    );
    let odd = dir.write("odd-disk.img", [0u8; 1000]);
    let drive = format!("file={},format=raw,if=virtio", odd.display());
    refused(
        &dir,
        &["boot", "--image", "custom", "-drive", &drive],
        "is 1000 bytes, not a positive whole number of 512-byte sectors",
    );
}

#[test]
fn corrupt_files_are_named() {
    let img = image("custom");
    let dir = Scratch::new("bad-corrupt");
    let fw_elf = img
        .firmware_elf
        .clone()
        .unwrap_or_else(|| panic!("image `custom` has no fw_jump.elf"));
    let elf = std::fs::read(&fw_elf).unwrap();
    let trunc = dir.write("truncated.elf", &elf[..100]);
    let trunc = trunc.to_str().unwrap();
    refused(
        &dir,
        &["-bios", "none", "-kernel", trunc],
        &format!("kernel file {trunc} is not a usable RISC-V image"),
    );
    refused(
        &dir,
        &["boot", "--image", "custom", "--bios", trunc],
        &format!("firmware file {trunc} is not a usable RISC-V image"),
    );
    let mut fake = b"\x7fELF".to_vec();
    fake.extend(noise(64 << 10));
    let fake = dir.write("noise.elf", fake);
    refused(
        &dir,
        &["-bios", "none", "-kernel", fake.to_str().unwrap()],
        fake.to_str().unwrap(),
    );
    let host_elf = HARTSCOPE;
    refused(
        &dir,
        &["-bios", "none", "-kernel", host_elf],
        "is not RISC-V",
    );
    let empty = dir.write("empty-initrd", b"");
    refused(
        &dir,
        &[
            "boot",
            "--image",
            "custom",
            "--initrd",
            empty.to_str().unwrap(),
        ],
        "is empty",
    );

    // Random bytes as an initrd larger than RAM.
    let big = dir.write("noise-initrd", noise(80 * MIB));
    refused(
        &dir,
        &[
            "boot",
            "--image",
            "custom",
            "--initrd",
            big.to_str().unwrap(),
            "-m",
            "64M",
        ],
        "-m 64M is too small",
    );
}

#[test]
fn an_overlap_more_ram_cannot_fix_is_reported_at_once() {
    // A kernel whose Image header claims 200 MiB: the initrd, placed 128 MiB
    // after the kernel's start, always lands inside it. This hung the host
    // for many minutes while the loader searched for a RAM size that fits.
    let img = image("custom");
    let dir = Scratch::new("bad-overlap");
    let mut kernel = vec![0u8; 32 * MIB];
    kernel[0x10..0x18].copy_from_slice(&(200u64 << 20).to_le_bytes());
    kernel[0x38..0x3c].copy_from_slice(b"RSC\x05");
    let kernel = dir.write("huge-Image", kernel);
    let args = [
        "-bios",
        img.firmware.to_str().unwrap(),
        "-kernel",
        kernel.to_str().unwrap(),
        "-initrd",
        img.initrd.to_str().unwrap(),
    ];
    let started = std::time::Instant::now();
    refused(&dir, &args, "overlap in memory");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn bad_options_are_named() {
    let _ = image("custom");
    let dir = Scratch::new("bad-options");
    refused(
        &dir,
        &["boot", "--image", "custom", "-m", "8M"],
        "-m 8M is too small",
    );
    refused(
        &dir,
        &["boot", "--image", "custom", "-m", "4K"],
        "-m 4K is too small",
    );
    refused(
        &dir,
        &["boot", "--image", "custom", "-m", "99999G"],
        "-m 99999G",
    );
    refused(
        &dir,
        &["boot", "--image", "custom", "--smp", "0"],
        "--smp 0",
    );
    refused(
        &dir,
        &["boot", "--image", "custom", "--smp", "100000"],
        "--smp 100000",
    );
    refused(&dir, &["boot", "--image", "no-such-image"], "no-such-image");
    refused(
        &dir,
        &[
            "boot",
            "--bios",
            "none",
            "--kernel",
            HARTSCOPE,
            "--workload",
            "run.sh",
        ],
        "--workload",
    );
    refused(
        &dir,
        &["boot", "--image", "custom", "--mhz", "15"],
        "15000000 Hz",
    );
    refused(
        &dir,
        &["boot", "--image", "custom", "--quantum", "0"],
        "quantum",
    );
    // QEMU habits (issue 10): another board, an option hartscope does not
    // take, and hartscope's own options with one dash are named.
    refused(
        &dir,
        &["-M", "sifive_u", "-kernel", HARTSCOPE],
        "-M sifive_u",
    );
    refused(
        &dir,
        &["-kernel", HARTSCOPE, "-device", "e1000"],
        "`-device` is a QEMU option",
    );
    refused(
        &dir,
        &["boot", "--image", "custom", "-max-cycles", "5"],
        "`--max-cycles`",
    );
}

#[test]
fn bench_refuses_bad_options() {
    let dir = Scratch::new("bad-bench");
    let out = hartscope(&["bench", "--repeat", "0"], &dir, DEADLINE);
    assert_eq!(out.code(), Some(1), "{}", out.tail());
    assert_eq!(
        out.stderr,
        "hartscope: --repeat 0: give at least one repetition\n"
    );
    let out = hartscope(&["bench", "--smp", "65"], &dir, DEADLINE);
    assert_eq!(
        out.stderr,
        "hartscope: --smp 65: this machine supports 1 to 64 harts\n"
    );
    let out = hartscope(&["bench", "--image", "no-such-image"], &dir, DEADLINE);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.tail());
    assert!(out.stderr.contains("no-such-image"), "{}", out.tail());
}

/// A guest kernel panic ends `boot` at once (issue 10): exit status 3, the
/// panic line and the console's last lines in the message, and the stats
/// still written. Debian's kernel has SysRq (the custom one does not).
#[test]
fn a_guest_kernel_panic_ends_the_run_with_the_panic_line() {
    let _ = image("debian");
    let dir = Scratch::new("guest-panic");
    let script = dir.write("run.sh", "echo c > /proc/sysrq-trigger\nsleep 100\n");
    let stats = dir.path("stats.json");
    let out = hartscope(
        &[
            "boot",
            "--image",
            "debian",
            "--workload",
            script.to_str().unwrap(),
            "--stats-json",
            stats.to_str().unwrap(),
        ],
        &dir,
        BOOT_DEADLINE,
    );
    assert_eq!(out.code(), Some(3), "{}", out.tail());
    let err = out.stderr.clone();
    assert!(
        err.contains(
            "the guest kernel panicked: Kernel panic - not syncing: sysrq triggered crash"
        ),
        "{err}"
    );
    assert!(
        err.contains("---[ end Kernel panic"),
        "the console's last lines: {err}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let secs = json["guest_seconds"]
        .as_f64()
        .expect("guest_seconds in the stats");
    // Without the watch the run would go on until the boot deadline.
    assert!(
        secs < 10.0,
        "the run went on for {secs} s of guest time after the panic"
    );
}

/// Output paths are checked before the first instruction runs (issue 10):
/// a missing directory, a file output that is a directory, a profile
/// directory that is a file — each one sentence naming the option, and
/// no run (nothing booted, so nothing is lost).
#[test]
fn output_paths_are_refused_before_anything_runs() {
    let _ = image("custom");
    let dir = Scratch::new("out-paths");
    let script = dir.write("run.sh", "echo hi\n");
    let afile = dir.write("afile", "x");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--stats-json".into(),
                dir.path("missing/x.json").display().to_string(),
            ],
            "--stats-json: the directory",
        ),
        (
            vec!["--stats-txt".into(), dir.path("").display().to_string()],
            "--stats-txt:",
        ),
        (
            vec!["--profile".into(), afile.display().to_string()],
            "--profile:",
        ),
        (
            vec![
                "--trace".into(),
                dir.path("no/such/t.json").display().to_string(),
            ],
            "--trace: the directory",
        ),
    ];
    for (extra, expect) in cases {
        let mut args: Vec<String> = vec![
            "boot".into(),
            "--image".into(),
            "custom".into(),
            "--workload".into(),
            script.display().to_string(),
        ];
        args.extend(extra);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = hartscope(&argv, &dir, BOOT_DEADLINE);
        assert_eq!(out.code(), Some(1), "{}", out.tail());
        assert!(out.stderr.contains(expect), "{expect}: {}", out.tail());
        assert!(
            !out.stderr.contains("powered off") && out.stdout_text().is_empty(),
            "the guest ran before the path was refused: {}",
            out.tail()
        );
    }
}

/// `--db` at a directory is refused by name, not read as "no runs yet".
#[test]
fn a_results_database_that_is_a_directory_is_refused() {
    let dir = Scratch::new("db-dir");
    let d = dir.path("");
    for cmd in [vec!["history"], vec!["compare", "1", "2"]] {
        let mut args = cmd.clone();
        args.extend(["--db", d.to_str().unwrap()]);
        let out = hartscope(&args, &dir, DEADLINE);
        assert_eq!(out.code(), Some(1), "{}", out.tail());
        assert!(
            out.stderr
                .contains("is a directory, not a results database"),
            "{}",
            out.tail()
        );
    }
}

/// `--profile-from` with a label the run never printed is an error naming
/// the label and the phases seen, not an empty profile passed off as a
/// measurement; the other outputs are still written.
#[test]
fn an_unknown_profile_label_is_an_error_after_the_outputs_are_written() {
    let _ = image("custom");
    let dir = Scratch::new("profile-label");
    let script = dir.write("run.sh", "hsmark phase one\necho hi\n");
    let stats = dir.path("s.json");
    let prof = dir.path("prof");
    let out = hartscope(
        &[
            "boot",
            "--image",
            "custom",
            "--workload",
            script.to_str().unwrap(),
            "--profile",
            prof.to_str().unwrap(),
            "--profile-from",
            "nosuch",
            "--stats-json",
            stats.to_str().unwrap(),
        ],
        &dir,
        BOOT_DEADLINE,
    );
    assert_eq!(out.code(), Some(1), "{}", out.tail());
    assert!(
        out.stderr.contains("--profile-from: the run never reached phase `nosuch` (phases seen: boot to first marker, init, one)"),
        "{}",
        out.tail()
    );
    assert!(stats.is_file(), "the stats were not written");
}

/// A workload that never ends stops at the cycle limit with the same exit
/// status as a run without one (124, as `timeout`), and says so (issue 10).
#[test]
fn an_endless_workload_stops_at_the_cycle_limit_with_124() {
    let _ = image("custom");
    let dir = Scratch::new("endless");
    let script = dir.write("run.sh", "while true; do :; done\n");
    let out = hartscope(
        &[
            "boot",
            "--image",
            "custom",
            "--workload",
            script.to_str().unwrap(),
            "--max-cycles",
            "400000000",
        ],
        &dir,
        DEADLINE,
    );
    assert_eq!(out.code(), Some(124), "{}", out.tail());
    assert!(
        out.stderr.contains("reached its cycle limit, 400000000 cycles (0.400 s of guest time) (--max-cycles), before the workload finished"),
        "{}",
        out.tail()
    );
}

/// Ctrl-C during `boot` (issue 10): the run ends at the next slice with
/// exit status 130, a message saying so, and the statistics asked for
/// written up to there; the scratch holds no half-written file.
#[test]
fn ctrl_c_ends_boot_with_130_and_writes_the_outputs() {
    let _ = image("custom");
    let dir = Scratch::new("ctrl-c");
    let script = dir.write("run.sh", "while true; do :; done\n");
    let stats = dir.path("stats.json");
    let child = std::process::Command::new(HARTSCOPE)
        .args(["boot", "--image", "custom", "--workload"])
        .arg(&script)
        .arg("--stats-json")
        .arg(&stats)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(4));
    // SAFETY: a plain kill(2) of our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("hartscope: interrupted (Ctrl-C) after "),
        "{stderr}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(json["stop"], "interrupted by the user (Ctrl-C)");
    assert!(json["cycles"].as_u64().unwrap() > 0);
}

/// Random bytes as a kernel (issue 10): with firmware they are refused
/// before the run (neither ELF nor a Linux Image); with `--bios none` the
/// hart that does nothing but trap at one place is stopped within a
/// millisecond of guest time, and the message says where.
#[test]
fn random_bytes_as_a_kernel_are_refused_or_stopped() {
    let img = image("custom");
    let dir = Scratch::new("random-kernel");
    let k = dir.write("random.bin", noise(64 * 1024));
    let fw = img.firmware.clone();
    refused(
        &dir,
        &[
            "boot",
            "--bios",
            fw.to_str().unwrap(),
            "--kernel",
            k.to_str().unwrap(),
        ],
        "neither an ELF file nor a RISC-V Linux Image",
    );
    let out = hartscope(
        &["boot", "--bios", "none", "--kernel", k.to_str().unwrap()],
        &dir,
        DEADLINE,
    );
    assert_eq!(out.code(), Some(1), "{}", out.tail());
    assert!(
        out.stderr
            .contains("makes no progress: it traps again and again at pc "),
        "{}",
        out.tail()
    );
}

/// A progress line (issue 10): on a terminal, `boot --workload` shows guest
/// time, the current phase and MIPS about once a second and erases the line
/// when the run ends; with stderr going to a pipe it prints none.
#[test]
fn a_progress_line_on_a_terminal_and_none_in_a_pipe() {
    let _ = image("custom");
    let dir = Scratch::new("progress");
    // Several host seconds on the atomic model, in one phase (about 3 s
    // at 650 MIPS: 30,000 rounds took 0.7 s once the TLB kept pages
    // across single-page fences, too short for a once-a-second line).
    let script = dir.write(
        "run.sh",
        "hsmark phase spin\ni=0\nwhile [ \"$i\" -lt 120000 ]; do i=$((i + 1)); done\nhsmark phase done\n",
    );
    let console = dir.path("console.txt");
    let log = dir.path("tty.log");
    // `script` (util-linux, in every Debian) gives the command a pseudo-terminal.
    let cmd = format!(
        "{HARTSCOPE} boot --image custom --workload {} > {}",
        script.display(),
        console.display()
    );
    let st = std::process::Command::new("script")
        .args(["-qec", &cmd])
        .arg(&log)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run `script`");
    assert!(st.success(), "{st}");
    let tty = std::fs::read_to_string(&log).unwrap();
    assert!(
        tty.contains("\r\x1b[Khartscope: ") && tty.contains(" s guest, phase `spin`, "),
        "{tty:?}"
    );
    assert!(tty.contains(" MIPS\r\x1b[K"), "the line is erased: {tty:?}");
    let piped = hartscope(
        &[
            "boot",
            "--image",
            "custom",
            "--workload",
            script.to_str().unwrap(),
        ],
        &dir,
        BOOT_DEADLINE,
    );
    assert!(
        !piped.stderr.contains(" s guest, phase `"),
        "{}",
        piped.stderr
    );
}
