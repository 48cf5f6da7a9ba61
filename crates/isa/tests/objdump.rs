//! Differential check against GNU binutils on real binaries: every 32-bit
//! instruction of OpenSBI's `fw_jump.elf` must disassemble as
//! `objdump -d -M no-aliases` prints it, and every compressed one must
//! expand to what `as` encodes for our expansion's text.

use std::path::Path;
use std::process::Command;

use hs_isa::{csr::csr_by_name, decode, decode16, decode32, disasm, Insn};

const ELF: &str = "/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.elf";
const OBJDUMP: &str = "riscv64-linux-gnu-objdump";
const GCC: &str = "riscv64-unknown-elf-gcc";
const OBJCOPY: &str = "riscv64-unknown-elf-objcopy";

struct Line {
    pc: u64,
    bits: u32,
    len: u8,
    text: String,
}

fn objdump(elf: &str) -> Vec<Line> {
    let out = Command::new(OBJDUMP)
        .args(["-d", "-M", "no-aliases", elf])
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run {OBJDUMP} (install binutils-riscv64-linux-gnu): {e}")
        });
    assert!(out.status.success(), "{OBJDUMP} failed on {elf}");
    let mut lines = Vec::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let mut parts = l.splitn(3, '\t');
        let (Some(a), Some(h), Some(t)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let Some(a) = a.trim().strip_suffix(':') else {
            continue;
        };
        let (Ok(pc), h) = (u64::from_str_radix(a, 16), h.trim()) else {
            continue;
        };
        let Ok(bits) = u32::from_str_radix(h, 16) else {
            continue;
        };
        let len = if h.len() == 8 {
            4
        } else if h.len() == 4 {
            2
        } else {
            continue;
        };
        let mut text = t
            .replace(".4byte", ".word")
            .split('#')
            .next()
            .unwrap()
            .to_string();
        if let Some(i) = text.find(" <") {
            text.truncate(i);
        }
        let text = text.trim().replacen('\t', " ", 1);
        lines.push(Line {
            pc,
            bits,
            len,
            text,
        });
    }
    lines
}

/// objdump 2.40 prints some CSRs as numbers that we name (menvcfg, mtinst, ...).
fn same_modulo_csr_names(ours: &str, theirs: &str) -> bool {
    let a: Vec<&str> = ours.split([' ', ',']).collect();
    let b: Vec<&str> = theirs.split([' ', ',']).collect();
    a.len() == b.len()
        && a.iter().zip(&b).all(|(x, y)| {
            x == y
                || y.strip_prefix("0x")
                    .and_then(|h| u16::from_str_radix(h, 16).ok())
                    .is_some_and(|n| csr_by_name(x) == Some(n))
        })
}

#[test]
fn opensbi_matches_objdump() {
    assert!(
        Path::new(ELF).exists(),
        "{ELF} is missing (install Debian package `opensbi`)"
    );
    let lines = objdump(ELF);
    let mut checked = 0;
    let mut bad = Vec::new();
    for l in lines.iter().filter(|l| l.len == 4) {
        let ours = disasm(&decode32(l.bits), l.pc);
        if !same_modulo_csr_names(&ours, &l.text) {
            bad.push(format!(
                "{:x}: {:08x}: ours `{ours}` objdump `{}`",
                l.pc, l.bits, l.text
            ));
        }
        checked += 1;
    }
    assert!(checked > 1000, "only {checked} instructions found in {ELF}");
    assert!(
        bad.is_empty(),
        "{} of {checked} differ:\n{}",
        bad.len(),
        bad[..bad.len().min(40)].join("\n")
    );
}

#[test]
fn opensbi_compressed_round_trip_through_gas() {
    let lines = objdump(ELF);
    let comp: Vec<(u16, Insn, u64)> = lines
        .iter()
        .filter(|l| l.len == 2)
        .map(|l| (l.bits as u16, decode16(l.bits as u16), l.pc))
        .filter(|(_, i, _)| !matches!(i, Insn::Illegal(_)))
        .collect();
    assert!(
        comp.len() > 1000,
        "only {} compressed instructions",
        comp.len()
    );
    // Re-assemble our expansion's text with compression off; branch targets as `.+off`.
    let mut src = String::from(".option norvc\n");
    for (_, insn, pc) in &comp {
        let text = match *insn {
            Insn::Jal { rd, imm } => format!("jal {},.{:+}", hs_isa::gpr_name(rd), imm),
            Insn::Beq { rs1, rs2, imm } => format!(
                "beq {},{},.{:+}",
                hs_isa::gpr_name(rs1),
                hs_isa::gpr_name(rs2),
                imm
            ),
            Insn::Bne { rs1, rs2, imm } => format!(
                "bne {},{},.{:+}",
                hs_isa::gpr_name(rs1),
                hs_isa::gpr_name(rs2),
                imm
            ),
            _ => disasm(insn, *pc),
        };
        src.push_str(&text);
        src.push('\n');
    }
    let dir = std::env::temp_dir().join(format!("hs-isa-rt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (s, o, b) = (dir.join("rt.S"), dir.join("rt.o"), dir.join("rt.bin"));
    std::fs::write(&s, src).unwrap();
    let st = Command::new(GCC)
        .args(["-c", "-march=rv64gc", "-mabi=lp64d"])
        .arg(&s)
        .arg("-o")
        .arg(&o)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {GCC} (install gcc-riscv64-unknown-elf): {e}"));
    assert!(
        st.success(),
        "gas rejected our disassembly, see {}",
        s.display()
    );
    let st = Command::new(OBJCOPY)
        .args(["-O", "binary", "-j", ".text"])
        .arg(&o)
        .arg(&b)
        .status()
        .unwrap();
    assert!(st.success());
    let bin = std::fs::read(&b).unwrap();
    assert_eq!(bin.len(), comp.len() * 4);
    for (i, (h, insn, _)) in comp.iter().enumerate() {
        let w = u32::from_le_bytes(bin[i * 4..i * 4 + 4].try_into().unwrap());
        assert_eq!(
            decode32(w),
            *insn,
            "c {h:04x} -> ours {insn:?}, gas re-encodes as {w:08x}"
        );
        assert_eq!(decode(w).1, 4);
    }
    std::fs::remove_dir_all(&dir).ok();
}
