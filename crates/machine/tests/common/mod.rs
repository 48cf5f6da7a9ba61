//! The machine the bare-metal tests of this crate boot.

use hs_machine::{BootFile, BootImages, Machine, MachineConfig};

/// `harts` harts and 64 MiB of RAM booting `elf_bytes` with no firmware
/// (`-bios none`), stopped at `max_cycles`.
pub fn bare_metal(harts: usize, elf_bytes: Vec<u8>, max_cycles: u64) -> Machine {
    let cfg = MachineConfig {
        harts,
        ram_bytes: 64 << 20,
        images: BootImages {
            firmware: None,
            kernel: Some(BootFile::from_bytes("prog.elf", elf_bytes)),
            initrd: None,
        },
        max_cycles: Some(max_cycles),
        ..MachineConfig::default()
    };
    Machine::new(cfg).unwrap()
}
