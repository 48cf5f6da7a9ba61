//! Builds every `tests/isa/**/*.S` with the `link.ld` of its own directory,
//! runs it on a `Hart` and on QEMU (`-M spike`), and requires both to pass
//! (HTIF `tohost` = 1) and to print the same HTIF console bytes.

use std::path::{Path, PathBuf};
use std::process::Command;

use hs_bus::{Access, BusFault, GuestRam, SystemBus, WriteEffect};
use hs_core::{Exit, Hart, HartConfig};
use hs_test_support::isa;
use object::{Object, ObjectSegment, ObjectSymbol};

const QEMU: &str = "qemu-system-riscv64";
const RAM_BASE: u64 = 0x8000_0000;
const RAM_SIZE: u64 = 64 << 20;
const MAX_CYCLES: u64 = 200_000_000;
const SLICE: u64 = 2_000;

/// Only a test finisher (as QEMU `virt` has at 0x100000); every other
/// access outside RAM is an access fault.
struct TestBus;
const FINISHER: u64 = 0x10_0000;
impl SystemBus for TestBus {
    fn mmio_read(&mut self, _: Access, pa: u64, _: u8) -> Result<u64, BusFault> {
        Err(BusFault::Unmapped(pa))
    }
    fn mmio_write(
        &mut self,
        _: Access,
        pa: u64,
        size: u8,
        _: u64,
    ) -> Result<WriteEffect, BusFault> {
        if pa == FINISHER && size == 4 {
            return Ok(WriteEffect {
                stop: true,
                irq_changed: false,
            });
        }
        Err(BusFault::Unmapped(pa))
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Build `src` (with the `link.ld` beside it) into this test's scratch area.
fn build(src: &Path) -> Result<PathBuf, String> {
    let rel = src.strip_prefix(root().join("tests/isa")).unwrap();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("isa")
        .join(rel)
        .with_extension("elf");
    isa::build(src, src.parent().unwrap(), &out)
}

#[derive(Debug, PartialEq)]
struct Outcome {
    code: u64,
    console: Vec<u8>,
}

fn run_hart(elf: &Path) -> Result<Outcome, String> {
    let data = std::fs::read(elf).map_err(|e| e.to_string())?;
    let file = object::File::parse(&*data).map_err(|e| e.to_string())?;
    let ram = GuestRam::new(RAM_BASE, RAM_SIZE).unwrap();
    for seg in file.segments() {
        let bytes = seg.data().map_err(|e| e.to_string())?;
        if !bytes.is_empty() && !ram.write_bytes(seg.address(), bytes) {
            return Err(format!("segment at {:#x} outside RAM", seg.address()));
        }
    }
    let sym = |name: &str| {
        file.symbols()
            .find(|s| s.name() == Ok(name))
            .map(|s| s.address())
    };
    let tohost = sym("tohost").ok_or("no tohost symbol")?;
    let fromhost = sym("fromhost").ok_or("no fromhost symbol")?;
    let mut hart = Hart::new(
        HartConfig {
            hart_id: 0,
            cycles_per_tick: 10,
        },
        ram.clone(),
        hs_core::Atomic,
    );
    hart.reset(file.entry());
    let mut bus = TestBus;
    let mut console = Vec::new();
    loop {
        let target = hart.cycle() + SLICE;
        match hart.run(&mut bus, target) {
            Exit::Idle => hart.advance_to(target),
            Exit::Budget | Exit::IrqCheck | Exit::Marker(_) => {}
            Exit::Stop => {} // the finisher: tohost says how it went
        }
        let v = ram.read(tohost, 8).unwrap();
        if v != 0 {
            let (dev, cmd) = (v >> 56, (v >> 48) & 0xff);
            if dev == 0 && cmd == 0 && v & 1 == 1 {
                return Ok(Outcome {
                    code: (v & 0xffff_ffff_ffff) >> 1,
                    console,
                });
            } else if dev == 1 && cmd == 1 {
                console.push(v as u8);
                ram.write(tohost, 8, 0);
                ram.write(fromhost, 8, (v >> 48 << 48) | 0x100 | (v & 0xff));
            } else {
                return Err(format!("unsupported tohost command {v:#x}"));
            }
        }
        if hart.cycle() > MAX_CYCLES {
            return Err(format!(
                "no exit after {MAX_CYCLES} cycles, pc {:#x}",
                hart.pc()
            ));
        }
    }
}

/// QEMU's `spike` has no `time` CSR (hence no Sstc); programs that need
/// them say QEMU_VIRT and run on `virt` instead (no HTIF console there).
fn run_qemu(elf: &Path, virt: bool) -> Result<Outcome, String> {
    // the hart's ISA (no H), ids 0, and exact instruction counting
    let (machine, cpu) = if virt {
        ("virt", "rv64,h=false,sstc=true,marchid=0,mimpid=0")
    } else {
        ("spike", "rv64,h=false,marchid=0,mimpid=0")
    };
    let out = Command::new("timeout")
        .arg("60")
        .arg(QEMU)
        .args([
            "-M",
            machine,
            "-cpu",
            cpu,
            "-icount",
            "shift=0",
            "-bios",
            "none",
            "-nographic",
            "-monitor",
            "none",
        ])
        .arg("-kernel")
        .arg(elf)
        .output()
        .map_err(|e| format!("cannot run {QEMU} (install Debian package qemu-system-misc): {e}"))?;
    match out.status.code() {
        Some(124) => Err("QEMU timed out".into()),
        Some(code) => Ok(Outcome {
            code: code as u64,
            console: out.stdout,
        }),
        None => Err("QEMU was killed".into()),
    }
}

#[test]
fn isa_programs_pass_on_hart_and_qemu() {
    let srcs = isa::programs(&root().join("tests/isa"));
    assert!(!srcs.is_empty(), "no programs in tests/isa");
    let only = std::env::var("HS_ISA_ONLY").ok();
    let mut failures = Vec::new();
    let mut passed = 0;
    for src in &srcs {
        let name = src.strip_prefix(root()).unwrap().display().to_string();
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let elf = match build(src) {
            Ok(e) => e,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        let ours = run_hart(&elf);
        let virt = std::fs::read_to_string(src)
            .unwrap_or_default()
            .contains("QEMU_VIRT");
        let qemu = run_qemu(&elf, virt);
        match (&ours, &qemu) {
            (Ok(a), Ok(b)) if a.code == 0 && b.code == 0 && a.console == b.console => {
                passed += 1;
                eprintln!("ok   {name}");
            }
            _ => {
                let show = |r: &Result<Outcome, String>| match r {
                    Ok(o) => format!(
                        "exit {} console {:?}",
                        o.code,
                        String::from_utf8_lossy(&o.console)
                    ),
                    Err(e) => e.clone(),
                };
                failures.push(format!(
                    "{name}: hart: {}; qemu: {}",
                    show(&ours),
                    show(&qemu)
                ));
            }
        }
    }
    eprintln!("{passed} programs passed on both");
    assert!(
        failures.is_empty(),
        "{} failing:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
