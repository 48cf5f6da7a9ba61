//! Every bare-metal ISA program of `tests/isa` through the whole machine:
//! `hartscope -bios none -kernel prog.elf` must exit 0 (HTIF `tohost` or the
//! test finisher). Programs are built as `crates/core/tests/isa_programs.rs`
//! builds them for the hart alone (same compiler, flags and link.ld).
//!
//! The programs of `tests/platform` need the board's devices (PLIC, UART),
//! so they run here only: on the whole machine and on QEMU `virt`, which
//! must both pass.

use crate::support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::*;

#[test]
fn isa_programs_pass_on_the_whole_machine() {
    let isa = root().join("tests/isa");
    let srcs = programs(&isa);
    assert!(
        srcs.len() >= 20,
        "expected the ISA programs under {}, found {}",
        isa.display(),
        srcs.len()
    );
    let dir = Scratch::new("isa-machine");
    let mut failures = Vec::new();
    for src in &srcs {
        let rel = src.strip_prefix(&isa).unwrap();
        let elf = match build_isa_program(src, rel, src.parent().unwrap()) {
            Ok(e) => e,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        let out = hartscope(
            &[
                "-bios",
                "none",
                "-kernel",
                elf.to_str().unwrap(),
                "-m",
                "64M",
            ],
            &dir,
            Duration::from_secs(120),
        );
        let summary = out
            .stderr
            .lines()
            .find(|l| l.starts_with("hartscope: "))
            .unwrap_or("")
            .to_string();
        if out.code() == Some(0) {
            eprintln!("ok   {} ({summary})", rel.display());
        } else {
            failures.push(format!(
                "{}: exit {:?}: {}",
                rel.display(),
                out.code(),
                out.stderr.trim()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} programs failed:\n{}",
        failures.len(),
        srcs.len(),
        failures.join("\n")
    );
}

const QEMU: &str = "qemu-system-riscv64";

/// QEMU `virt` (the board hartscope imitates) with the hart's ISA; the exit
/// status is the test finisher's code.
fn run_qemu_virt(elf: &Path) -> Result<i32, String> {
    let out = Command::new("timeout")
        .arg("60")
        .arg(QEMU)
        .args([
            "-M",
            "virt",
            "-cpu",
            "rv64,h=false,sstc=true,marchid=0,mimpid=0",
            "-icount",
            "shift=0",
        ])
        .args(["-bios", "none", "-nographic", "-monitor", "none", "-kernel"])
        .arg(elf)
        .output()
        .map_err(|e| format!("cannot run {QEMU} (install Debian package qemu-system-misc): {e}"))?;
    match out.status.code() {
        Some(124) => Err("QEMU timed out".into()),
        Some(code) => Ok(code),
        None => Err("QEMU was killed".into()),
    }
}

#[test]
fn platform_programs_pass_on_the_whole_machine_and_qemu_virt() {
    let (isa, platform) = (root().join("tests/isa"), root().join("tests/platform"));
    let srcs = programs(&platform);
    assert!(
        !srcs.is_empty(),
        "expected programs under {}",
        platform.display()
    );
    let dir = Scratch::new("platform-machine");
    let mut failures = Vec::new();
    for src in &srcs {
        let rel = Path::new("platform").join(src.strip_prefix(&platform).unwrap());
        let elf = match build_isa_program(src, &rel, &isa) {
            Ok(e) => e,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        let out = hartscope(
            &[
                "-bios",
                "none",
                "-kernel",
                elf.to_str().unwrap(),
                "-m",
                "64M",
            ],
            &dir,
            Duration::from_secs(120),
        );
        let qemu = run_qemu_virt(&elf);
        if out.code() == Some(0) && qemu == Ok(0) {
            eprintln!("ok   {}", rel.display());
        } else {
            failures.push(format!(
                "{}: hartscope exit {:?}: {}; qemu: {qemu:?}",
                rel.display(),
                out.code(),
                out.stderr.trim()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} programs failed:\n{}",
        failures.len(),
        srcs.len(),
        failures.join("\n")
    );
}

/// `--perf-map` names every translated block in `/tmp/perf-PID.map` by hart
/// and guest pc, in the format `perf report` reads (hex start, hex size,
/// name), and each routine the blocks share once by its name, and the run
/// is otherwise the same.
#[test]
fn perf_map_names_translated_blocks_by_guest_pc() {
    let isa = root().join("tests/isa");
    let src = isa.join("rv64i.S");
    let elf = build_isa_program(&src, Path::new("rv64i.S"), &isa).expect("build rv64i.S");
    let child = Command::new(HARTSCOPE)
        .args(["boot", "--bios", "none", "--kernel"])
        .arg(&elf)
        .args(["--translate-after", "1", "--perf-map"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start hartscope");
    let pid = child.id();
    let out = child.wait_with_output().expect("wait for hartscope");
    let map_path = format!("/tmp/perf-{pid}.map");
    let map = std::fs::read_to_string(&map_path).unwrap_or_default();
    let _ = std::fs::remove_file(&map_path);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = map.lines().collect();
    assert!(
        lines.len() >= 10,
        "a handful of translated blocks, got:\n{map}"
    );
    let mut ends = Vec::new();
    let mut routines = Vec::new();
    for l in &lines {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 3, "three fields in `{l}`");
        let start = u64::from_str_radix(f[0], 16).expect("hex start");
        let size = u64::from_str_radix(f[1], 16).expect("hex size");
        if let Some(routine) = f[2].strip_prefix("hart0@runtime:") {
            assert!(size > 0 && start > 0, "`{l}`");
            routines.push(routine);
            ends.push((start, start + size));
            continue;
        }
        let pc = f[2]
            .strip_prefix("hart0@0x")
            .map(|p| u64::from_str_radix(p, 16).expect("hex pc"))
            .unwrap_or_else(|| panic!("`{}` names hart 0 and a pc", f[2]));
        assert!(size > 0 && start > 0, "`{l}`");
        // (link.ld places the program at the start of RAM)
        assert!(
            (0x8000_0000..0x8010_0000).contains(&pc),
            "`{l}`: a pc in the program"
        );
        ends.push((start, start + size));
    }
    // (the atomic model has no shortcuts: only the exits' routines)
    routines.sort();
    assert_eq!(
        routines,
        ["exit_indirect", "exit_static", "ret", "ret0"],
        "the shared routines each named once:\n{map}"
    );
    ends.sort();
    assert!(
        ends.windows(2).all(|w| w[0].1 <= w[1].0),
        "blocks' code does not overlap:\n{map}"
    );
}
