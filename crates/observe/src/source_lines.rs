//! Source lines of kernel addresses, from the DWARF line tables of an
//! unstripped `vmlinux` (the `custom` image's kernel is built with them):
//! what `perf annotate` and `addr2line` show beside an instruction.

use std::path::Path;

/// A `vmlinux`'s line tables, read lazily (the file is mapped, and each
/// compilation unit parsed on first use).
pub struct SourceLines {
    loader: addr2line::Loader,
    /// Directory prefixes stripped from file names, so reports name
    /// `arch/riscv/kernel/entry.S` rather than the build machine's path.
    strip: Vec<String>,
}

impl SourceLines {
    /// `None` when the file cannot be read as an ELF with DWARF line tables
    /// (a stripped kernel, a kallsyms-only image): lines are then unnamed,
    /// which is not an error.
    pub fn from_elf_file(path: &Path) -> Option<SourceLines> {
        let data = std::fs::read(path).ok()?;
        let has_lines = {
            use object::{Object, ObjectSection};
            let file = object::File::parse(&*data).ok()?;
            file.section_by_name(".debug_line")
                .is_some_and(|s| s.size() > 0)
        };
        drop(data);
        if !has_lines {
            return None;
        }
        let loader = addr2line::Loader::new(path).ok()?;
        Some(SourceLines {
            loader,
            strip: Vec::new(),
        })
    }

    /// Also strip `prefix` (e.g. the kernel source directory) from names.
    pub fn strip_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.strip.push(prefix.into());
        self
    }

    /// `file:line` of the instruction at `addr`, its file relative to the
    /// source tree when the tables name the tree.
    pub fn locate(&self, addr: u64) -> Option<String> {
        let loc = self.loader.find_location(addr).ok()??;
        let (file, line) = (loc.file?, loc.line?);
        Some(format!("{}:{line}", self.relative(file)))
    }

    fn relative<'a>(&self, file: &'a str) -> &'a str {
        let mut f = file;
        for p in &self.strip {
            if let Some(rest) = f.strip_prefix(p.as_str()) {
                f = rest.trim_start_matches('/');
                break;
            }
        }
        // Build trees name sources `<tree>/src/...`, `./././kernel/pid.c` or
        // `linux-source-6.1/arch/...`: cut at the kernel's top-level directory.
        while let Some(rest) = f.strip_prefix("./") {
            f = rest;
        }
        let mut at = 0;
        for part in f.split('/') {
            if KERNEL_TOP_DIRS.contains(&part) {
                return &f[at..];
            }
            at += part.len() + 1;
        }
        f
    }
}

/// The top-level directories of a Linux source tree.
const KERNEL_TOP_DIRS: &[&str] = &[
    "arch", "block", "certs", "crypto", "drivers", "fs", "include", "init", "io_uring", "ipc",
    "kernel", "lib", "mm", "net", "samples", "scripts", "security", "sound", "usr", "virt",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_line_tables_gives_none() {
        let dir = std::env::temp_dir().join(format!("hs-srclines-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("not-elf");
        std::fs::write(&p, b"not an ELF").unwrap();
        assert!(SourceLines::from_elf_file(&p).is_none());
        assert!(SourceLines::from_elf_file(&dir.join("missing")).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn kernel_file_names_are_cut_at_the_tree() {
        let names = [
            ("././kernel/pid.c", "kernel/pid.c"),
            (
                "linux-source-6.1/arch/riscv/kernel/entry.S",
                "arch/riscv/kernel/entry.S",
            ),
            (
                "/root/.cache/hartscope/kernels/area/src/linux-source-6.1/include/linux/pid.h",
                "include/linux/pid.h",
            ),
            ("src/main.rs", "src/main.rs"),
        ];
        let exe = std::env::current_exe().unwrap();
        let lines = SourceLines::from_elf_file(&exe).expect("line tables");
        for (raw, want) in names {
            assert_eq!(lines.relative(raw), want);
        }
    }

    #[inline(never)]
    #[no_mangle]
    pub extern "C" fn hs_source_lines_probe(x: u32) -> u32 {
        (x ^ 0x5a) | 1
    }

    #[test]
    fn this_test_binary_names_its_own_source() {
        use object::{Object, ObjectSymbol};
        // The test executable carries line tables (the release profile keeps
        // debug = 1); the probe's link address comes from its symbol table.
        assert_eq!(hs_source_lines_probe(std::hint::black_box(4)), 0x5f);
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(&exe).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let addr = file
            .symbols()
            .find(|s| s.name() == Ok("hs_source_lines_probe"))
            .expect("the probe symbol")
            .address();
        let Some(lines) = SourceLines::from_elf_file(&exe) else {
            panic!("{} has no line tables", exe.display());
        };
        let loc = lines.locate(addr).expect("a line for the probe");
        assert!(loc.contains("source_lines.rs:"), "{loc}");
    }
}
