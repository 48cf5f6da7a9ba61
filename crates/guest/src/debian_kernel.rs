//! A kernel from a Debian binary package: the `Image` OpenSBI jumps to, its
//! config, and the modules the platform's devices need with everything they
//! depend on, decompressed and in load order.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{io_err, GuestError, Result};
use crate::process::run;

pub struct DebianKernel {
    pub release: String,
    pub image: PathBuf,
    pub config: PathBuf,
    /// (module name, decompressed .ko bytes) in load order: dependencies first.
    pub modules: Vec<(String, Vec<u8>)>,
    /// Requested modules Debian builds into the kernel.
    pub builtin: Vec<String>,
}

/// Modules are named with `_`; file names may use `-`.
pub fn canonical(name: &str) -> String {
    name.replace('-', "_")
}

fn module_stem(file: &str) -> Option<&str> {
    [".ko.xz", ".ko.zst", ".ko.gz", ".ko"]
        .iter()
        .find_map(|s| file.strip_suffix(s))
}

pub fn extract(deb: &Path, package: &str, into: &Path, wanted: &[String]) -> Result<DebianKernel> {
    run(
        &format!("unpacking package `{package}` (dpkg-deb -x)"),
        Command::new("dpkg-deb").arg("-x").arg(deb).arg(into),
    )?;
    let boot = into.join("boot");
    let image = find_prefixed(&boot, "vmlinux-")
        .or_else(|| find_prefixed(&boot, "vmlinuz-"))
        .ok_or_else(|| GuestError::Package {
            package: package.into(),
            detail: "has no boot/vmlinux-* kernel image".into(),
        })?;
    let fname = image
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let release = fname
        .split_once('-')
        .map(|(_, r)| r.to_string())
        .unwrap_or_default();
    let config = boot.join(format!("config-{release}"));
    let moddir = ["usr/lib/modules", "lib/modules"]
        .iter()
        .map(|d| into.join(d).join(&release))
        .find(|p| p.is_dir())
        .ok_or_else(|| GuestError::Package {
            package: package.into(),
            detail: format!("has no modules directory for kernel {release}"),
        })?;

    let mut files = BTreeMap::new();
    index_modules(&moddir, &mut files)?;
    let builtin_text = std::fs::read_to_string(moddir.join("modules.builtin")).unwrap_or_default();
    let builtin_all: BTreeSet<String> = builtin_text
        .lines()
        .filter_map(|l| l.rsplit('/').next().and_then(module_stem).map(canonical))
        .collect();

    let mut order = Vec::new();
    let mut seen = BTreeSet::new();
    let mut builtin = Vec::new();
    for w in wanted {
        let name = canonical(w);
        if !files.contains_key(&name) {
            if builtin_all.contains(&name) {
                builtin.push(name);
                continue;
            }
            return Err(GuestError::Package {
                package: package.into(),
                detail: format!("module `{w}` is neither shipped nor built in (kernel {release}); fix the image recipe"),
            });
        }
        visit(
            &name,
            &files,
            &builtin_all,
            package,
            &mut seen,
            &mut order,
            0,
        )?;
    }
    Ok(DebianKernel {
        release,
        image,
        config,
        modules: order,
        builtin,
    })
}

/// Depth-first: a module's dependencies are pushed before the module.
fn visit(
    name: &str,
    files: &BTreeMap<String, PathBuf>,
    builtin: &BTreeSet<String>,
    package: &str,
    seen: &mut BTreeSet<String>,
    order: &mut Vec<(String, Vec<u8>)>,
    depth: usize,
) -> Result<()> {
    if seen.contains(name) || builtin.contains(name) {
        return Ok(());
    }
    if depth > 32 {
        return Err(GuestError::Package {
            package: package.into(),
            detail: format!("module `{name}` has a dependency cycle"),
        });
    }
    seen.insert(name.to_string());
    let path = files.get(name).ok_or_else(|| GuestError::Package {
        package: package.into(),
        detail: format!("a needed module `{name}` is not in the package"),
    })?;
    let bytes = decompress(path, package)?;
    for dep in module_depends(&bytes).map_err(|m| GuestError::Package {
        package: package.into(),
        detail: format!("cannot read {}: {m}", path.display()),
    })? {
        visit(
            &canonical(&dep),
            files,
            builtin,
            package,
            seen,
            order,
            depth + 1,
        )?;
    }
    order.push((name.to_string(), bytes));
    Ok(())
}

fn decompress(path: &Path, package: &str) -> Result<Vec<u8>> {
    let name = path.to_string_lossy();
    let tool = if name.ends_with(".xz") {
        "xz"
    } else if name.ends_with(".zst") {
        "zstd"
    } else if name.ends_with(".gz") {
        "gzip"
    } else {
        return std::fs::read(path).map_err(io_err("read", path));
    };
    let out = Command::new(tool)
        .arg("-dc")
        .arg(path)
        .output()
        .map_err(|e| GuestError::ToolMissing {
            step: format!("decompressing a module of package `{package}`"),
            program: tool.into(),
            package: if tool == "xz" {
                "xz-utils".into()
            } else {
                tool.into()
            },
            source: e,
        })?;
    if !out.status.success() {
        return Err(GuestError::Package {
            package: package.into(),
            detail: format!(
                "`{tool} -dc {}` failed: {}",
                path.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    Ok(out.stdout)
}

/// The values of one key (`depends`, `alias`, ...) in a module's `.modinfo`.
fn modinfo(ko: &[u8], key: &str) -> std::result::Result<Vec<String>, String> {
    use object::{Object, ObjectSection};
    let file = object::File::parse(ko).map_err(|e| e.to_string())?;
    let section = file
        .section_by_name(".modinfo")
        .ok_or("no .modinfo section")?;
    let data = section.data().map_err(|e| e.to_string())?;
    let prefix = format!("{key}=");
    Ok(data
        .split(|b| *b == 0)
        .filter_map(|kv| std::str::from_utf8(kv).ok())
        .filter_map(|kv| kv.strip_prefix(prefix.as_str()))
        .map(str::to_string)
        .collect())
}

/// The `depends=` list of a module's `.modinfo` section.
pub fn module_depends(ko: &[u8]) -> std::result::Result<Vec<String>, String> {
    Ok(modinfo(ko, "depends")?
        .iter()
        .flat_map(|v| v.split(',').filter(|d| !d.is_empty()).map(str::to_string))
        .collect())
}

/// `modules.dep` and `modules.alias` for modules given in load order
/// (dependencies first), in the format BusyBox `modprobe` reads: a module's
/// line lists every module it needs, the one to load first last; an alias
/// line maps a pattern (a device's `modalias`, `fs-ext4`, `crypto-crc32c`)
/// to the module that serves it.
pub fn module_index(
    modules: &[(String, Vec<u8>)],
) -> std::result::Result<(String, String), String> {
    let mut needs: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let (mut dep, mut alias) = (String::new(), String::new());
    for (i, (name, ko)) in modules.iter().enumerate() {
        let direct: Vec<String> = module_depends(ko)
            .map_err(|e| format!("module {name}: {e}"))?
            .iter()
            .map(|d| canonical(d))
            .collect();
        // Every module this one needs, in load order.
        let mut all: Vec<String> = Vec::new();
        for (other, _) in &modules[..i] {
            let wanted = direct.contains(other)
                || direct
                    .iter()
                    .any(|d| needs.get(d.as_str()).is_some_and(|n| n.contains(other)));
            if wanted && !all.contains(other) {
                all.push(other.clone());
            }
        }
        if let Some(missing) = direct.iter().find(|d| !all.contains(d)) {
            return Err(format!(
                "module {name} needs {missing}, which is not before it in the load order"
            ));
        }
        dep.push_str(&format!("{name}.ko:"));
        for d in all.iter().rev() {
            dep.push_str(&format!(" {d}.ko"));
        }
        dep.push('\n');
        for a in modinfo(ko, "alias").map_err(|e| format!("module {name}: {e}"))? {
            if !a.contains(char::is_whitespace) {
                alias.push_str(&format!("alias {a} {name}\n"));
            }
        }
        needs.insert(name, all);
    }
    Ok((dep, alias))
}

fn index_modules(dir: &Path, files: &mut BTreeMap<String, PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir)
        .map_err(io_err("list", dir))?
        .flatten()
    {
        let p = e.path();
        if p.is_dir() {
            index_modules(&p, files)?;
        } else if let Some(stem) = p.file_name().and_then(|f| f.to_str()).and_then(module_stem) {
            files.entry(canonical(stem)).or_insert(p);
        }
    }
    Ok(())
}

fn find_prefixed(dir: &Path, prefix: &str) -> Option<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| f.starts_with(prefix))
        })
        .collect();
    v.sort();
    v.pop()
}

/// Whether a kernel config enables KASLR (then the image boots with `nokaslr`).
pub fn has_kaslr(config: &str) -> bool {
    config
        .lines()
        .any(|l| l.trim() == "CONFIG_RANDOMIZE_BASE=y")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_kaslr() {
        assert_eq!(canonical("spi-dw-mmio"), "spi_dw_mmio");
        assert_eq!(module_stem("virtio_mmio.ko.xz"), Some("virtio_mmio"));
        assert_eq!(module_stem("README"), None);
        assert!(has_kaslr("CONFIG_X=y\nCONFIG_RANDOMIZE_BASE=y\n"));
        assert!(!has_kaslr("# CONFIG_RANDOMIZE_BASE is not set\n"));
    }

    /// A relocatable RISC-V ELF whose `.modinfo` holds `entries`.
    fn ko(entries: &[&str]) -> Vec<u8> {
        use object::write::Object;
        let mut o = Object::new(
            object::BinaryFormat::Elf,
            object::Architecture::Riscv64,
            object::Endianness::Little,
        );
        let s = o.add_section(
            Vec::new(),
            b".modinfo".to_vec(),
            object::SectionKind::ReadOnlyData,
        );
        let mut data = Vec::new();
        for e in entries {
            data.extend_from_slice(e.as_bytes());
            data.push(0);
        }
        o.append_section_data(s, &data, 1);
        o.write().unwrap()
    }

    #[test]
    fn module_index_lists_every_dependency_load_first_last_and_the_aliases() {
        let modules = vec![
            ("crc16".to_string(), ko(&["depends="])),
            ("mbcache".to_string(), ko(&["depends="])),
            ("jbd2".to_string(), ko(&["depends=mbcache"])),
            (
                "ext4".to_string(),
                ko(&["alias=fs-ext4", "depends=jbd2,crc16", "alias=fs-ext3"]),
            ),
            (
                "sdhci_of_dwcmshc".to_string(),
                ko(&[
                    "alias=of:N*T*Csnps,dwcmshc-sdhci",
                    "alias=of:N*T*Csnps,dwcmshc-sdhciC*",
                ]),
            ),
        ];
        let (dep, alias) = module_index(&modules).unwrap();
        assert_eq!(
            dep,
            "crc16.ko:\nmbcache.ko:\njbd2.ko: mbcache.ko\n\
             ext4.ko: jbd2.ko mbcache.ko crc16.ko\nsdhci_of_dwcmshc.ko:\n"
        );
        assert_eq!(
            alias,
            "alias fs-ext4 ext4\nalias fs-ext3 ext4\n\
             alias of:N*T*Csnps,dwcmshc-sdhci sdhci_of_dwcmshc\n\
             alias of:N*T*Csnps,dwcmshc-sdhciC* sdhci_of_dwcmshc\n"
        );
        // A dependency that comes after its user is a recipe bug, said so.
        let bad = vec![modules[3].clone(), modules[2].clone()];
        let e = module_index(&bad).unwrap_err();
        assert!(e.contains("module ext4 needs jbd2"), "{e}");
    }
}
