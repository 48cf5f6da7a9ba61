//! Every bare-metal ISA program of `tests/isa` through the whole machine:
//! `hartscope -bios none -kernel prog.elf` must exit 0 (HTIF `tohost` or the
//! test finisher). Programs are built as `crates/core/tests/isa_programs.rs`
//! builds them for the hart alone (same compiler, flags and link.ld).
//!
//! The programs of `tests/platform` need the board's devices (PLIC, UART),
//! so they run here only: on the whole machine and on QEMU `virt`, which
//! must both pass.

#[path = "support/mod.rs"]
mod support;

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
