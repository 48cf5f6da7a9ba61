//! A small fabricated record shared by the exporter tests.

#![allow(dead_code)]

use hs_observe::symbols::{Mapping, SatpResolver, SymbolTable, Symbolizer};
use hs_observe::{Privilege, Sample};

pub const SATP_SH: u64 = 0x8000_0000_0008_1234;
pub const GUEST_HZ: u64 = 1_000_000_000;
pub const PERIOD: u64 = 1024;

pub const KALLSYMS: &str = "\
ffffffff80001000 T handle_exception
ffffffff80001100 T do_trap_ecall_u
ffffffff80001200 T n_tty_write
ffffffff80001300 t hvc_sbi_tty_put
ffffffff80001400 D data_end
";

pub fn symbolizer() -> Symbolizer<SatpResolver> {
    let mut user = SatpResolver::new();
    let busybox = SymbolTable::from_ranges(
        "busybox",
        [
            (0x10000, 0x10100, "main".to_string()),
            (0x10100, 0x10400, "printf_core".to_string()),
            (0x10400, 0x10500, "__fwritex".to_string()),
        ],
    );
    let bb = user.add_image("busybox", busybox);
    user.add_space(
        SATP_SH,
        0,
        "sh",
        42,
        vec![Mapping {
            start: 0x10000,
            end: 0x20000,
            image: bb,
            bias: 0,
        }],
    );
    let mut s = Symbolizer::with_user(user);
    s.set_kernel(SymbolTable::from_kallsyms("test kallsyms", KALLSYMS).unwrap());
    s.set_firmware(SymbolTable::from_ranges(
        "fw_jump.elf",
        [
            (0x80000000, 0x80000100, "sbi_trap_handler".to_string()),
            (0x80000100, 0x80000200, "sbi_console_putc".to_string()),
        ],
    ));
    s
}

pub fn samples() -> Vec<Sample> {
    let kernel_stack = vec![0xffffffff80001120, 0xffffffff80001010, 0x10420, 0x10050];
    vec![
        Sample {
            hart: 0,
            cycle: 1024,
            pc: 0x10110,
            privilege: Privilege::User,
            satp: SATP_SH,
            stack: vec![0x10050].into(),
            task: None,
        },
        Sample {
            hart: 0,
            cycle: 2048,
            pc: 0xffffffff80001210,
            privilege: Privilege::Supervisor,
            satp: SATP_SH,
            stack: kernel_stack.clone().into(),
            task: None,
        },
        Sample {
            hart: 1,
            cycle: 3072,
            pc: 0x80000110,
            privilege: Privilege::Machine,
            satp: SATP_SH,
            stack: vec![0x80000020].into(),
            task: None,
        },
        Sample {
            hart: 1,
            cycle: 1_000_004_096,
            pc: 0x30000,
            privilege: Privilege::User,
            satp: 0x8000_0000_0009_9999,
            stack: vec![].into(),
            task: None,
        },
        Sample {
            hart: 0,
            cycle: 5120,
            pc: 0xffffffff80001210,
            privilege: Privilege::Supervisor,
            satp: SATP_SH,
            stack: kernel_stack.into(),
            task: None,
        },
    ]
}
