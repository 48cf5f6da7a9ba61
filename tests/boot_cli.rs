//! `hartscope` end to end on a bare-metal ELF: QEMU-style top-level flags,
//! HTIF console and exit code, and `--stats-json`.

use hs_test_support::asm::*;
use std::process::Command;

fn program(exit_code: u64) -> Vec<u8> {
    let base = 0x8000_0000;
    let mut a = Asm::new(base);
    a.csrr(A0, CSR_MHARTID).bne(A0, ZERO, "park");
    a.la(T0, "msg");
    a.label("loop").lbu(T1, T0, 0).beq(T1, ZERO, "done");
    a.li(T2, 0x0101_0000_0000_0000)
        .or(T2, T2, T1)
        .la(T3, "tohost")
        .sd(T2, T3, 0);
    a.label("wait").ld(T2, T3, 0).bne(T2, ZERO, "wait");
    a.addi(T0, T0, 1).j("loop");
    a.label("done")
        .li(T2, exit_code << 1 | 1)
        .la(T3, "tohost")
        .sd(T2, T3, 0);
    a.label("hang").j("hang");
    a.label("park").wfi().j("park");
    a.label("msg").data(b"bare metal ok\n\0");
    a.align(8)
        .label("tohost")
        .data(&[0; 8])
        .label("fromhost")
        .data(&[0; 8]);
    let syms = [
        ("tohost", a.addr("tohost")),
        ("fromhost", a.addr("fromhost")),
    ];
    let image = a.finish();
    elf(base, &image, &syms)
}

#[test]
fn bios_none_kernel_elf_runs_and_exits_with_its_code() {
    let dir = std::env::temp_dir().join(format!("hs-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let prog = dir.join("prog.elf");
    std::fs::write(&prog, program(5)).unwrap();
    let stats = dir.join("stats.json");
    let out = Command::new(env!("CARGO_BIN_EXE_hartscope"))
        .args(["-bios", "none", "-kernel"])
        .arg(&prog)
        .args(["-smp", "2", "-m", "32M", "-nographic", "--stats-json"])
        .arg(&stats)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(5),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "bare metal ok\n");
    let json = std::fs::read_to_string(&stats).unwrap();
    for key in [
        "\"cycles\"",
        "\"instret\"",
        "\"host_seconds\"",
        "\"mips\"",
        "\"harts\"",
    ] {
        assert!(json.contains(key), "{key} missing from {json}");
    }
    assert_eq!(json.matches("\"hart\":").count(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_files_are_reported_in_one_sentence() {
    let out = Command::new(env!("CARGO_BIN_EXE_hartscope"))
        .args(["-bios", "none", "-kernel", "/nonexistent/prog.elf"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("hartscope: cannot read kernel file /nonexistent/prog.elf: "),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_hartscope"))
        .args([
            "boot",
            "--bios",
            "none",
            "--kernel",
            "/dev/null",
            "--smp",
            "100",
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "hartscope: --smp 100: this machine supports 1 to 64 harts"
    );
}
