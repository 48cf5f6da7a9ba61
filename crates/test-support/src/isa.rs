//! The bare-metal ISA programs (`tests/isa/**/*.S`): finding them and
//! building each with `riscv64-unknown-elf-gcc`, its `link.ld` and
//! `hs_test.h`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The bare-metal cross compiler of the ISA programs.
pub const RISCV_GCC: &str = "riscv64-unknown-elf-gcc";

/// The programs (`*.S`) below `dir`, sorted.
pub fn programs(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    collect(dir, &mut out);
    out
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|e| e == "S") {
            out.push(p);
        }
    }
}

/// Build `src` with `link.ld` and the headers of `dir` into `out` (an ELF).
pub fn build(src: &Path, dir: &Path, out: &Path) -> Result<PathBuf, String> {
    let ld = dir.join("link.ld");
    if !ld.exists() {
        return Err(format!("{} has no link.ld", dir.display()));
    }
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    let res = Command::new(RISCV_GCC)
        .args([
            "-nostdlib",
            "-nostartfiles",
            "-static",
            "-march=rv64gc",
            "-mabi=lp64d",
            "-mcmodel=medany",
            "-Wl,--no-warn-rwx-segments",
        ])
        .arg("-T")
        .arg(&ld)
        .arg("-I")
        .arg(dir)
        .arg(src)
        .arg("-o")
        .arg(out)
        .output()
        .map_err(|e| {
            format!("cannot run {RISCV_GCC} (install Debian package gcc-riscv64-unknown-elf): {e}")
        })?;
    if !res.status.success() {
        return Err(format!(
            "{} does not build:\n{}",
            src.display(),
            String::from_utf8_lossy(&res.stderr)
        ));
    }
    Ok(out.to_path_buf())
}

/// Whether `name --version` runs.
pub fn tool_available(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
