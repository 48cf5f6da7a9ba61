//! `manifest.json`: what an image is made of (packages and versions, the
//! recipe hash, the sha256 of every file) and how to boot it.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{io_err, GuestError, Result};
use crate::recipe::sha256_hex;
use crate::{ImageDir, KernelSymbols};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PackageEntry {
    pub name: String,
    pub version: String,
    /// sha256 of the .deb, or of the source tarball / .dsc for source packages.
    pub sha256: String,
    /// What the image takes from it: `kernel`, `firmware`, `busybox source`, ….
    pub role: String,
    /// Where the archive keeps it (pool path), from the lock.
    #[serde(default)]
    pub path: String,
    /// Whether a Debian-signed index vouched for its sha256 (None: not recorded).
    #[serde(default)]
    pub signed: Option<bool>,
    /// How its hash was verified, in words.
    #[serde(default)]
    pub verified: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    pub name: String,
    pub recipe_format: String,
    pub recipe_hash: String,
    pub description: String,
    pub kernel_release: String,
    pub default_append: String,
    /// `vmlinux` or `kallsyms`: the file in the image directory that names kernel addresses.
    pub symbols: String,
    pub packages: Vec<PackageEntry>,
    /// Files no signed index vouched for, each with why (empty: all verified).
    #[serde(default)]
    pub unverified: Vec<String>,
    /// Kernel modules in the initramfs, in load order.
    pub modules: Vec<String>,
    /// Requested modules the kernel has built in.
    pub builtin_modules: Vec<String>,
    /// Seconds the kernel build took, when this image built one.
    pub kernel_build_seconds: Option<u64>,
    /// Every file of the image directory (but this one) and its sha256.
    pub files: BTreeMap<String, String>,
}

/// sha256 of every regular file under `dir`, keyed by relative path.
pub fn hash_files(dir: &Path) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(io_err("list", &d))? {
            let p = e.map_err(io_err("list", &d))?.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p
                    .strip_prefix(dir)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .into_owned();
                if rel != "manifest.json" {
                    let data = std::fs::read(&p).map_err(io_err("read", &p))?;
                    out.insert(rel, sha256_hex(&data));
                }
            }
        }
    }
    Ok(out)
}

pub fn write(dir: &Path, m: &Manifest) -> Result<()> {
    let path = dir.join("manifest.json");
    let text = serde_json::to_string_pretty(m).map_err(|e| GuestError::Step {
        step: format!("writing {}", path.display()),
        detail: e.to_string(),
    })?;
    std::fs::write(&path, text + "\n").map_err(io_err("write", &path))
}

pub fn read(dir: &Path) -> Result<Manifest> {
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).map_err(io_err("read", &path))?;
    serde_json::from_str(&text).map_err(|e| GuestError::Recipe {
        path,
        message: e.to_string(),
    })
}

pub fn image_dir(name: &str, dir: &Path) -> Result<ImageDir> {
    let m = read(dir)?;
    let symbols = match m.symbols.as_str() {
        "vmlinux" => KernelSymbols::Vmlinux(dir.join("vmlinux")),
        "kallsyms" => KernelSymbols::Kallsyms(dir.join("kallsyms")),
        other => {
            return Err(GuestError::Recipe {
                path: dir.join("manifest.json"),
                message: format!("unknown symbol source `{other}`"),
            })
        }
    };
    let fw_elf = dir.join("fw_jump.elf");
    let btf = dir.join("btf");
    Ok(ImageDir {
        name: name.to_string(),
        dir: dir.to_path_buf(),
        firmware: dir.join("fw_jump.bin"),
        fw_dynamic: dir.join("fw_dynamic.bin"),
        firmware_elf: fw_elf.is_file().then_some(fw_elf),
        kernel: dir.join("Image"),
        initrd: dir.join("initrd"),
        symbols,
        busybox: dir.join("busybox"),
        btf: btf.is_file().then_some(btf),
        default_append: m.default_append,
        manifest: dir.join("manifest.json"),
    })
}
