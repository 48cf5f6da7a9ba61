//! The guest's own C programs (hsmark and the workloads), cross-compiled
//! static with Debian's riscv64 toolchain, unstripped and with debug info so
//! profiles can name their functions.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{io_err, Result};
use crate::process::run;

pub const CC: &str = "riscv64-linux-gnu-gcc";

/// Builds every program and returns (name, binary path), sorted by name.
pub fn build_programs(guest_dir: &Path, out: &Path) -> Result<Vec<(String, PathBuf)>> {
    std::fs::create_dir_all(out).map_err(io_err("create directory", out))?;
    let mut sources = vec![
        guest_dir.join("hsmark/hsmark.c"),
        guest_dir.join("agent/hotplugd.c"),
    ];
    let workloads = guest_dir.join("workloads");
    if let Ok(rd) = std::fs::read_dir(&workloads) {
        let mut c: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "c"))
            .collect();
        c.sort();
        sources.extend(c);
    }
    let include = guest_dir.join("hsmark");
    let mut built = Vec::new();
    for src in sources {
        let name = src
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let bin = out.join(&name);
        let rel = src
            .strip_prefix(guest_dir)
            .unwrap_or(&src)
            .display()
            .to_string();
        run(
            &format!("compiling guest/{rel} ({CC})"),
            Command::new(CC)
                // The compilation directory is recorded in the debug info too: make it the mapped one.
                .current_dir(guest_dir)
                .args(["-static", "-O2", "-g", "-Wall", "-Wextra"])
                // Keeps host paths out of the binaries: the same sources give the same bytes.
                .arg(format!("-ffile-prefix-map={}=guest", guest_dir.display()))
                .arg("-I")
                .arg(&include)
                .arg("-o")
                .arg(&bin)
                .arg(&src),
        )?;
        built.push((name, bin));
    }
    Ok(built)
}
