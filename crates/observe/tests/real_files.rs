//! The symbolizer against real binaries: a static riscv64 program built here
//! with Debian's cross compiler, and OpenSBI's `fw_jump.elf` when installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use hs_observe::export::perf_script;
use hs_observe::symbols::{Mapping, SatpResolver, SymbolTable, Symbolizer};
use hs_observe::{Privilege, Sample};

const CROSS_GCC: &str = "riscv64-linux-gnu-gcc";
const CROSS_NM: &str = "riscv64-linux-gnu-nm";
const FW_JUMP: &str = "/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.elf";

const PROGRAM: &str = r#"
#include <stdio.h>
__attribute__((noinline)) int hs_probe_function(int x) { return x * 3 + 1; }
int main(int argc, char **argv) { (void)argv; printf("%d\n", hs_probe_function(argc)); return 0; }
/* An assembly entry point: a global label with no type and no size. */
__asm__(".text\n.globl hs_asm_label\nhs_asm_label:\n addi a0,a0,1\n addi a0,a0,1\n ret\n");
"#;

/// Build the test program once per test binary run, in a private directory
/// (tests run in parallel, so the build is behind a `OnceLock`).
fn build_program() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(compile_program).clone()
}

fn compile_program() -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hs-observe-elf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("prog.c");
    let exe = dir.join("prog");
    std::fs::write(&src, PROGRAM).unwrap();
    let status = Command::new(CROSS_GCC)
        .args(["-static", "-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {CROSS_GCC} (install gcc-riscv64-linux-gnu and libc6-dev-riscv64-cross): {e}"));
    assert!(
        status.success(),
        "{CROSS_GCC} failed to build the test program"
    );
    exe
}

/// Address and size of `name` as binutils' nm reports them.
fn nm_symbol(exe: &Path, name: &str) -> (u64, u64) {
    let out = Command::new(CROSS_NM)
        .arg("-S")
        .arg(exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {CROSS_NM}: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 4 && f[3] == name && (f[2] == "T" || f[2] == "t") {
            return (
                u64::from_str_radix(f[0], 16).unwrap(),
                u64::from_str_radix(f[1], 16).unwrap(),
            );
        }
    }
    panic!("{CROSS_NM} does not list {name}");
}

/// Address of an unsized symbol as nm reports it.
fn nm_address(exe: &Path, name: &str) -> u64 {
    let out = Command::new(CROSS_NM)
        .arg(exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {CROSS_NM}: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.len() == 3 && f[2] == name)
        .map(|f| u64::from_str_radix(f[0], 16).unwrap())
        .unwrap_or_else(|| panic!("{CROSS_NM} does not list {name}"))
}

#[test]
fn untyped_assembly_labels_are_kept_and_end_at_the_next_symbol() {
    let exe = build_program();
    let table = SymbolTable::from_elf_file(&exe).unwrap();
    let addr = nm_address(&exe, "hs_asm_label");
    assert_eq!(table.lookup(addr), Some(("hs_asm_label", 0)));
    // Three instructions of at least 2 bytes each (compressed or not).
    assert_eq!(table.lookup(addr + 4), Some(("hs_asm_label", 4)));
    let sym = table.by_name("hs_asm_label").unwrap();
    let next = table
        .symbols()
        .iter()
        .find(|s| s.start > addr)
        .expect("main follows the label");
    assert_eq!(sym.end, next.start);
}

#[test]
fn static_riscv64_program_symbols_match_nm() {
    let exe = build_program();
    let table = SymbolTable::from_elf_file(&exe).unwrap();
    assert_eq!(table.name(), "prog");
    assert!(
        table.len() > 100,
        "a static glibc program has many functions, got {}",
        table.len()
    );
    for name in ["main", "hs_probe_function"] {
        let (addr, size) = nm_symbol(&exe, name);
        assert!(size > 0);
        assert_eq!(table.lookup(addr), Some((name, 0)));
        assert_eq!(table.lookup(addr + size - 1), Some((name, size - 1)));
        assert_ne!(table.lookup(addr + size).map(|(n, _)| n), Some(name));
        let sym = table.by_name(name).unwrap();
        assert_eq!((sym.start, sym.end), (addr, addr + size));
    }
    // Sorted and non-empty ranges: what the binary search relies on.
    assert!(table.symbols().windows(2).all(|w| w[0].start < w[1].start));
    assert!(table.symbols().iter().all(|s| s.end > s.start));
}

#[test]
fn user_sample_in_static_program_resolves_through_the_symbolizer() {
    let exe = build_program();
    let (main_addr, _) = nm_symbol(&exe, "main");
    let (probe_addr, _) = nm_symbol(&exe, "hs_probe_function");
    let table = SymbolTable::from_elf_file(&exe).unwrap();
    // A fixed-address executable: any mapping has bias zero.
    assert_eq!(table.bias_for_mapping(0x10000, 0), 0);
    let mut user = SatpResolver::new();
    let id = user.add_image("prog", table);
    user.add_space(
        0x8000_0000_0000_0777,
        0,
        "prog",
        7,
        vec![Mapping {
            start: 0,
            end: 1 << 38,
            image: id,
            bias: 0,
        }],
    );
    let symbolizer = Symbolizer::with_user(user);
    let sample = Sample {
        hart: 0,
        cycle: 2_000,
        pc: probe_addr + 2,
        privilege: Privilege::User,
        satp: 0x8000_0000_0000_0777,
        stack: vec![main_addr + 8].into(),
        task: None,
    };
    let r = symbolizer.resolve_sample(&sample);
    assert_eq!(r.frames[0].symbol, Some("hs_probe_function"));
    assert_eq!(r.frames[1].symbol, Some("main"));
    let text = perf_script(&[sample], &symbolizer, 1_000_000_000, 1024).unwrap();
    assert!(
        text.contains(&format!(
            "{:x} hs_probe_function+0x2 (prog)",
            probe_addr + 2
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("{:x} main+0x8 (prog)", main_addr + 8)),
        "{text}"
    );
}

#[test]
fn non_elf_input_is_a_clear_error() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hs-observe-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("not-elf.bin");
    std::fs::write(&bad, b"this is not an ELF file").unwrap();
    let err = SymbolTable::from_elf_file(&bad).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("{} is not a readable ELF file", bad.display())),
        "{err}"
    );
    let err = SymbolTable::from_elf_file(&dir.join("missing"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("cannot read ") && err.contains("missing"),
        "{err}"
    );
}

#[test]
fn opensbi_fw_jump_resolves_a_known_function() {
    let path = Path::new(FW_JUMP);
    assert!(
        path.exists(),
        "{FW_JUMP} is missing: install Debian's `opensbi` (bash scripts/setup-host.sh does)"
    );
    let table = SymbolTable::from_elf_file(path).unwrap();
    // Debian's build is stripped down to .dynsym; these functions are
    // exported by every OpenSBI release since 0.9.
    let known = ["sbi_tlb_local_sfence_vma", "sbi_tlb_local_fence_i"];
    let found: Vec<_> = known.iter().filter_map(|n| table.by_name(n)).collect();
    assert!(!found.is_empty(), "none of {known:?} in {FW_JUMP}");
    let mut symbolizer = Symbolizer::new();
    symbolizer.set_firmware(table.clone());
    for sym in found {
        let at = hs_observe::AddressSpace {
            hart: 0,
            cycle: 0,
            satp: 0,
        };
        let f = symbolizer.resolve(Privilege::Machine, at, sym.start + 2, false);
        assert_eq!(
            (f.symbol, f.offset, f.dso, f.where_name()),
            (Some(sym.name.as_str()), 2, "fw_jump.elf", "firmware")
        );
    }
    // Debian's stripped build exports this assembly label without a size:
    // it must not swallow the unexported code after it.
    if let Some(label) = table.by_name("__sbi_expected_trap_hext") {
        assert_eq!(
            table.lookup(label.start).map(|(n, _)| n),
            Some("__sbi_expected_trap_hext")
        );
        assert_eq!(table.lookup(label.start + 0x100), None);
    }
}
