//! Programs from Debian riscv64 binary packages (a recipe's `[extras]`),
//! installed in the initramfs with the dynamic loader and every shared
//! library they need. BusyBox stays the base; an extra is for the tools
//! BusyBox lacks or does differently (coreutils' `dd` with `iflag=direct`,
//! Linux's `perf`).
//!
//! The packages are unpacked into one tree; each wanted file's ELF
//! `PT_INTERP` and `DT_NEEDED` entries are followed through that tree, so a
//! library none of the packages holds is named at build time, not found
//! missing in the guest.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{io_err, GuestError, Result};
use crate::process::run;

/// Where libraries go in the image: the first directory of Debian's
/// multiarch search path, which the loader searches without a cache.
pub const LIB_DIR: &str = "usr/lib/riscv64-linux-gnu";

/// Directories of the unpacked tree a `DT_NEEDED` name is looked up in.
const SEARCH: &[&str] = &[
    "usr/lib/riscv64-linux-gnu",
    "lib/riscv64-linux-gnu",
    "usr/lib",
    "lib",
];

/// A file for the initramfs: its path without the leading `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraFile {
    pub path: String,
    pub data: Vec<u8>,
    pub mode: u32,
}

/// What an ELF file asks the loader for.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ElfNeeds {
    pub interp: Option<String>,
    pub needed: Vec<String>,
}

fn le16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn le32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn le64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}
fn c_string(b: &[u8], at: usize) -> Option<String> {
    let tail = b.get(at..)?;
    let end = tail.iter().position(|&c| c == 0)?;
    String::from_utf8(tail[..end].to_vec()).ok()
}

/// The loader and libraries a little-endian ELF64 file names; `Ok(None)`
/// for anything that is not ELF64 LE (a script, data). Every offset is
/// checked against the file, so a damaged file is an error, not a panic.
pub fn elf_needs(b: &[u8]) -> std::result::Result<Option<ElfNeeds>, String> {
    if b.len() < 64 || &b[..4] != b"\x7fELF" || b[4] != 2 || b[5] != 1 {
        return Ok(None);
    }
    let bad = |what: &str| format!("damaged ELF file: {what}");
    let phoff = le64(b, 0x20).ok_or_else(|| bad("header"))? as usize;
    let phentsize = le16(b, 0x36).ok_or_else(|| bad("header"))? as usize;
    let phnum = le16(b, 0x38).ok_or_else(|| bad("header"))? as usize;
    if phentsize < 56 {
        return Err(bad("program header size"));
    }
    struct Ph {
        kind: u32,
        offset: u64,
        vaddr: u64,
        filesz: u64,
    }
    let mut phs = Vec::with_capacity(phnum);
    for i in 0..phnum {
        let at = phoff
            .checked_add(
                i.checked_mul(phentsize)
                    .ok_or_else(|| bad("program headers"))?,
            )
            .ok_or_else(|| bad("program headers"))?;
        phs.push(Ph {
            kind: le32(b, at).ok_or_else(|| bad("program headers"))?,
            offset: le64(b, at + 8).ok_or_else(|| bad("program headers"))?,
            vaddr: le64(b, at + 16).ok_or_else(|| bad("program headers"))?,
            filesz: le64(b, at + 32).ok_or_else(|| bad("program headers"))?,
        });
    }
    let mut needs = ElfNeeds::default();
    if let Some(p) = phs.iter().find(|p| p.kind == 3) {
        needs.interp = Some(c_string(b, p.offset as usize).ok_or_else(|| bad("PT_INTERP"))?);
    }
    let Some(dynamic) = phs.iter().find(|p| p.kind == 2) else {
        return Ok(Some(needs));
    };
    let mut strtab = None;
    let mut names = Vec::new();
    let end = dynamic.offset.saturating_add(dynamic.filesz) as usize;
    let mut at = dynamic.offset as usize;
    while at + 16 <= end {
        let tag = le64(b, at).ok_or_else(|| bad("PT_DYNAMIC"))?;
        let val = le64(b, at + 8).ok_or_else(|| bad("PT_DYNAMIC"))?;
        match tag {
            0 => break,
            1 => names.push(val),
            5 => strtab = Some(val),
            _ => {}
        }
        at += 16;
    }
    if names.is_empty() {
        return Ok(Some(needs));
    }
    let strtab = strtab.ok_or_else(|| bad("DT_NEEDED without DT_STRTAB"))?;
    // DT_STRTAB is an address: the loadable segment holding it gives the file offset.
    let str_off = phs
        .iter()
        .filter(|p| p.kind == 1)
        .find(|p| strtab >= p.vaddr && strtab - p.vaddr < p.filesz)
        .map(|p| p.offset + (strtab - p.vaddr))
        .ok_or_else(|| bad("DT_STRTAB outside every loadable segment"))?;
    for n in names {
        let name =
            c_string(b, str_off.saturating_add(n) as usize).ok_or_else(|| bad("DT_NEEDED name"))?;
        needs.needed.push(name);
    }
    Ok(Some(needs))
}

/// Follows symbolic links inside `root` (absolute targets are taken from
/// `root`, never from the host) to a regular file.
fn resolve_in(root: &Path, rel: &str) -> Option<PathBuf> {
    let mut rel = PathBuf::from(rel.trim_start_matches('/'));
    for _ in 0..32 {
        let p = root.join(&rel);
        let meta = std::fs::symlink_metadata(&p).ok()?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&p).ok()?;
            rel = if target.is_absolute() {
                target.strip_prefix("/").ok()?.to_path_buf()
            } else {
                rel.parent().unwrap_or(Path::new("")).join(target)
            };
            // Normalise `..` so the path cannot leave the tree.
            let mut clean = PathBuf::new();
            for c in rel.components() {
                match c {
                    std::path::Component::ParentDir => {
                        clean.pop();
                    }
                    std::path::Component::Normal(n) => clean.push(n),
                    _ => {}
                }
            }
            rel = clean;
            continue;
        }
        return meta.is_file().then_some(p);
    }
    None
}

/// The loader at `interp`, in the tree as given or under `usr/` (Debian's
/// merged `/usr`: packages ship `/usr/lib/...`, the image's `/lib` is real).
fn find_interp(root: &Path, interp: &str) -> Option<PathBuf> {
    let rel = interp.trim_start_matches('/');
    resolve_in(root, rel).or_else(|| resolve_in(root, &format!("usr/{rel}")))
}

/// Unpacks `debs` into `tree` and gathers `files` with what they load.
pub fn collect(
    image: &str,
    debs: &[(String, PathBuf)],
    files: &[String],
    tree: &Path,
) -> Result<Vec<ExtraFile>> {
    std::fs::create_dir_all(tree).map_err(io_err("create directory", tree))?;
    for (package, deb) in debs {
        run(
            &format!("unpacking extra package `{package}` (dpkg-deb -x)"),
            Command::new("dpkg-deb").arg("-x").arg(deb).arg(tree),
        )?;
    }
    let packages: Vec<&str> = debs.iter().map(|(p, _)| p.as_str()).collect();
    let fail = |detail: String| GuestError::Step {
        step: format!("installing the extras of image `{image}`"),
        detail,
    };
    // path in the image -> (file in the tree, mode); BTreeMap: a stable order.
    let mut out: BTreeMap<String, (PathBuf, u32)> = BTreeMap::new();
    let mut queue: VecDeque<(String, String)> = VecDeque::new(); // (image path, who wants it)
    let mut loaders: Vec<String> = Vec::new();
    for f in files {
        if !f.starts_with('/') {
            return Err(fail(format!(
                "extras.files entry `{f}` is not an absolute path"
            )));
        }
        let src = resolve_in(tree, f).ok_or_else(|| {
            fail(format!(
                "`{f}` is in none of the extras packages ({}); add the package that has it to extras.packages",
                packages.join(", ")
            ))
        })?;
        let rel = f.trim_start_matches('/').to_string();
        out.insert(rel.clone(), (src, 0o755));
        queue.push_back((rel, String::new()));
    }
    while let Some((rel, _)) = queue.pop_front() {
        let src = out[&rel].0.clone();
        let bytes = std::fs::read(&src).map_err(io_err("read", &src))?;
        let needs = elf_needs(&bytes).map_err(|e| fail(format!("/{rel}: {e}")))?;
        let Some(needs) = needs else { continue };
        if let Some(interp) = needs.interp {
            let dest = interp.trim_start_matches('/').to_string();
            if !out.contains_key(&dest) {
                let src = find_interp(tree, &interp).ok_or_else(|| {
                    fail(format!(
                        "/{rel} needs the loader `{interp}`, which none of the extras packages ({}) holds; add libc6 to extras.packages",
                        packages.join(", ")
                    ))
                })?;
                out.insert(dest.clone(), (src, 0o755));
                loaders.push(dest.clone());
                queue.push_back((dest, rel.clone()));
            }
        }
        for lib in needs.needed {
            if lib.contains('/') {
                return Err(fail(format!(
                    "/{rel} names the library `{lib}` by path; only plain names are supported"
                )));
            }
            let dest = format!("{LIB_DIR}/{lib}");
            // libc names the loader too; the one at its PT_INTERP path serves.
            let is_loader = loaders
                .iter()
                .any(|l| l.rsplit('/').next() == Some(lib.as_str()));
            if out.contains_key(&dest) || is_loader {
                continue;
            }
            let src = SEARCH
                .iter()
                .find_map(|d| resolve_in(tree, &format!("{d}/{lib}")))
                .ok_or_else(|| {
                    fail(format!(
                        "/{rel} needs `{lib}`, which none of the extras packages ({}) holds; add the package that has it to extras.packages",
                        packages.join(", ")
                    ))
                })?;
            out.insert(dest.clone(), (src, 0o755));
            queue.push_back((dest, rel.clone()));
        }
    }
    let mut result = Vec::with_capacity(out.len());
    for (path, (src, mode)) in out {
        let data = std::fs::read(&src).map_err(io_err("read", &src))?;
        result.push(ExtraFile { path, data, mode });
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 LE file: PT_LOAD over everything, PT_INTERP and a
    /// PT_DYNAMIC with two DT_NEEDED names.
    fn elf(interp: &str, needed: &[&str]) -> Vec<u8> {
        let mut strtab = vec![0u8];
        let mut offs = Vec::new();
        for n in needed {
            offs.push(strtab.len() as u64);
            strtab.extend_from_slice(n.as_bytes());
            strtab.push(0);
        }
        let phoff = 64u64;
        let phnum = 3u64;
        let interp_off = phoff + phnum * 56;
        let mut interp_b = interp.as_bytes().to_vec();
        interp_b.push(0);
        let str_off = interp_off + interp_b.len() as u64;
        let dyn_off = (str_off + strtab.len() as u64).next_multiple_of(8);
        let vbase = 0x10000u64;
        let mut dynamic = Vec::new();
        for o in &offs {
            dynamic.extend_from_slice(&1u64.to_le_bytes());
            dynamic.extend_from_slice(&o.to_le_bytes());
        }
        dynamic.extend_from_slice(&5u64.to_le_bytes());
        dynamic.extend_from_slice(&(vbase + str_off).to_le_bytes());
        dynamic.extend_from_slice(&[0u8; 16]);
        let total = dyn_off + dynamic.len() as u64;
        let mut b = vec![0u8; total as usize];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[0x20..0x28].copy_from_slice(&phoff.to_le_bytes());
        b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        b[0x38..0x3a].copy_from_slice(&(phnum as u16).to_le_bytes());
        let ph = |b: &mut Vec<u8>, i: u64, kind: u32, off: u64, vaddr: u64, size: u64| {
            let at = (phoff + i * 56) as usize;
            b[at..at + 4].copy_from_slice(&kind.to_le_bytes());
            b[at + 8..at + 16].copy_from_slice(&off.to_le_bytes());
            b[at + 16..at + 24].copy_from_slice(&vaddr.to_le_bytes());
            b[at + 32..at + 40].copy_from_slice(&size.to_le_bytes());
        };
        ph(&mut b, 0, 1, 0, vbase, total);
        ph(
            &mut b,
            1,
            3,
            interp_off,
            vbase + interp_off,
            interp_b.len() as u64,
        );
        ph(&mut b, 2, 2, dyn_off, vbase + dyn_off, dynamic.len() as u64);
        b[interp_off as usize..str_off as usize].copy_from_slice(&interp_b);
        b[str_off as usize..str_off as usize + strtab.len()].copy_from_slice(&strtab);
        b[dyn_off as usize..].copy_from_slice(&dynamic);
        b
    }

    #[test]
    fn reads_interp_and_needed() {
        let b = elf(
            "/lib/ld-linux-riscv64-lp64d.so.1",
            &["libacl.so.1", "libc.so.6"],
        );
        assert_eq!(
            elf_needs(&b).unwrap(),
            Some(ElfNeeds {
                interp: Some("/lib/ld-linux-riscv64-lp64d.so.1".into()),
                needed: vec!["libacl.so.1".into(), "libc.so.6".into()],
            })
        );
        assert_eq!(elf_needs(b"#!/bin/sh\necho hi\n").unwrap(), None);
    }

    #[test]
    fn a_damaged_file_is_an_error_never_a_panic() {
        let good = elf("/lib/ld.so", &["libc.so.6"]);
        for cut in 0..good.len() {
            let _ = elf_needs(&good[..cut]);
        }
        let mut b = good.clone();
        b[0x20..0x28].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(elf_needs(&b).is_err());
        // Random bytes after a valid header: errors or answers, never panics.
        let mut x = 0x9e3779b97f4a7c15u64;
        for _ in 0..2000 {
            let mut b = good.clone();
            for _ in 0..8 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let at = (x as usize) % b.len();
                b[at] = (x >> 32) as u8;
            }
            let _ = elf_needs(&b);
        }
    }

    #[test]
    fn collects_the_loader_and_libraries_through_links() {
        let t = std::env::temp_dir().join(format!("hs-extras-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        let lib = t.join("usr/lib/riscv64-linux-gnu");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::create_dir_all(t.join("usr/bin")).unwrap();
        std::fs::write(
            t.join("usr/bin/dd"),
            elf("/lib/ld-linux-riscv64-lp64d.so.1", &["libc.so.6"]),
        )
        .unwrap();
        std::fs::write(lib.join("libc.so.6"), b"not ELF: no further needs").unwrap();
        // The loader, as merged-/usr libc6 ships it: a link in /usr/lib.
        std::fs::write(lib.join("ld-linux-riscv64-lp64d.so.1"), b"loader").unwrap();
        std::os::unix::fs::symlink(
            "riscv64-linux-gnu/ld-linux-riscv64-lp64d.so.1",
            t.join("usr/lib/ld-linux-riscv64-lp64d.so.1"),
        )
        .unwrap();
        let got = collect("test", &[], &["/usr/bin/dd".into()], &t).unwrap();
        let paths: Vec<&str> = got.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "lib/ld-linux-riscv64-lp64d.so.1",
                "usr/bin/dd",
                "usr/lib/riscv64-linux-gnu/libc.so.6"
            ]
        );
        assert_eq!(got[0].data, b"loader");

        // A library no package holds is named, with what to do.
        std::fs::write(
            t.join("usr/bin/ls"),
            elf("/lib/ld-linux-riscv64-lp64d.so.1", &["libselinux.so.1"]),
        )
        .unwrap();
        let e = collect("test", &[], &["/usr/bin/ls".into()], &t)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/usr/bin/ls needs `libselinux.so.1`") && e.contains("extras.packages"),
            "{e}"
        );
        let e = collect("test", &[], &["/usr/bin/nope".into()], &t)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`/usr/bin/nope` is in none of the extras packages"),
            "{e}"
        );
        std::fs::remove_dir_all(&t).unwrap();
    }
}
