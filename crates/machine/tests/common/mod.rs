//! The machine the bare-metal tests of this crate boot.
#![allow(dead_code)] // each test file uses its part

use hs_machine::{BootFile, BootImages, Machine, MachineConfig};
use hs_test_support::asm::*;

/// `harts` harts and 64 MiB of RAM booting `elf_bytes` with no firmware
/// (`-bios none`), stopped at `max_cycles`.
pub fn bare_metal(harts: usize, elf_bytes: Vec<u8>, max_cycles: u64) -> Machine {
    Machine::new(bare_metal_config(harts, elf_bytes, max_cycles)).unwrap()
}

/// What `bare_metal` builds its machine from (for other timing models).
pub fn bare_metal_config(harts: usize, elf_bytes: Vec<u8>, max_cycles: u64) -> MachineConfig {
    MachineConfig {
        harts,
        ram_bytes: 64 << 20,
        images: BootImages {
            firmware: None,
            kernel: Some(BootFile::from_bytes("prog.elf", elf_bytes)),
            initrd: None,
        },
        max_cycles: Some(max_cycles),
        ..MachineConfig::default()
    }
}

/// Emit: hart 0's CLINT timer armed (`arm_timer`) and a `wfi` loop at
/// label `idle` to wait in.
pub fn timer_then_idle(a: &mut Asm, ticks: u64) {
    arm_timer(a, ticks);
    a.label("idle").wfi().j("idle");
}

/// Emit: hart 0's CLINT timer (mtimecmp) set `ticks` ahead of mtime and
/// the machine timer interrupt enabled (MTIE, then MIE); uses t0–t2.
pub fn arm_timer(a: &mut Asm, ticks: u64) {
    a.li(T0, 0x0200_bff8)
        .ld(T1, T0, 0)
        .li(T2, ticks)
        .add(T1, T1, T2);
    a.li(T0, 0x0200_4000).sd(T1, T0, 0);
    a.li(T0, 0x80)
        .csrs(CSR_MIE, T0)
        .li(T0, 0x8)
        .csrs(CSR_MSTATUS, T0);
}
