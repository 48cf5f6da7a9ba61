//! The initramfs: the image's base archive (agent, BusyBox, hsmark,
//! workload programs, modules) and the per-run workload archive the host
//! appends to it.

use std::path::{Path, PathBuf};

use crate::cpio::{write_archive, Entry, Kind};
use crate::error::{io_err, GuestError, Result};

pub struct BaseContents<'a> {
    pub agent: &'a Path,
    pub busybox: &'a Path,
    /// (name, binary) installed in /usr/bin.
    pub programs: &'a [(String, PathBuf)],
    /// (module name, .ko bytes) in load order.
    pub modules: &'a [(String, Vec<u8>)],
    /// The kernel's release: modules go to /lib/modules/<release>, where
    /// `modprobe` looks for them.
    pub kernel_release: &'a str,
    /// Text of /etc/hartscope-image (image name, kernel release).
    pub identity: String,
    /// Files from the recipe's extras packages, with their loader and libraries.
    pub extras: &'a [crate::extras::ExtraFile],
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(io_err("read", path))
}

pub fn base_archive(c: &BaseContents) -> Result<Vec<u8>> {
    let mut entries = vec![
        Entry::dir("bin", 0o755),
        Entry::file("bin/busybox", 0o755, read(c.busybox)?),
        // So `#!/bin/sh` works before the agent installs the applets.
        Entry::symlink("bin/sh", "busybox"),
        Entry::dir("dev", 0o755),
        // The kernel opens /dev/console for init before devtmpfs is mounted.
        Entry::chardev("dev/console", 0o600, 5, 1),
        Entry::chardev("dev/null", 0o666, 1, 3),
        Entry::dir("etc", 0o755),
        Entry::file("etc/group", 0o644, b"root:x:0:\n".to_vec()),
        Entry::file(
            "etc/hartscope-image",
            0o644,
            c.identity.clone().into_bytes(),
        ),
        Entry::file(
            "etc/passwd",
            0o644,
            b"root:x:0:0:root:/root:/bin/sh\n".to_vec(),
        ),
        Entry::file("init", 0o755, read(c.agent)?),
        Entry::dir("lib", 0o755),
        Entry::dir("lib/modules", 0o755),
        Entry::dir("mnt", 0o755),
        Entry::dir("proc", 0o555),
        Entry::dir("root", 0o700),
        Entry::dir("run", 0o755),
        Entry::dir("sbin", 0o755),
        Entry::dir("sys", 0o555),
        Entry::dir("tmp", 0o1777),
        Entry::dir("usr", 0o755),
        Entry::dir("usr/bin", 0o755),
        Entry::dir("usr/sbin", 0o755),
    ];
    for (name, bin) in c.programs {
        entries.push(Entry::file(&format!("usr/bin/{name}"), 0o755, read(bin)?));
    }
    if !c.modules.is_empty() {
        // Nothing loads them all: the agent loads what the machine's
        // devices ask for (their modalias) and the kernel asks `modprobe`
        // for the rest (a filesystem, a crypto algorithm), as on a stock
        // system. load.list names every module, for the image build's
        // symbol capture.
        let dir = format!("lib/modules/{}", c.kernel_release);
        entries.push(Entry::dir(&dir, 0o755));
        let mut list = String::new();
        for (name, ko) in c.modules {
            entries.push(Entry::file(&format!("{dir}/{name}.ko"), 0o644, ko.clone()));
            list.push_str(&format!("{name}\n"));
        }
        let (dep, alias) =
            crate::debian_kernel::module_index(c.modules).map_err(|detail| GuestError::Step {
                step: "indexing the image's kernel modules".into(),
                detail,
            })?;
        entries.push(Entry::file(
            &format!("{dir}/modules.dep"),
            0o644,
            dep.into_bytes(),
        ));
        entries.push(Entry::file(
            &format!("{dir}/modules.alias"),
            0o644,
            alias.into_bytes(),
        ));
        entries.push(Entry::file(
            "lib/modules/load.list",
            0o644,
            list.into_bytes(),
        ));
    }
    // Extras last: their directories are made unless the base already has them.
    let mut dirs: std::collections::BTreeSet<String> = entries
        .iter()
        .filter(|e| matches!(e.kind, Kind::Dir))
        .map(|e| e.name.clone())
        .collect();
    for x in c.extras {
        // Every ancestor directory: `a/b/c` for `a/b/c/file`, then `a/b`, `a`.
        let mut parent = x.path.as_str();
        while let Some((p, _)) = parent.rsplit_once('/') {
            if dirs.insert(p.to_string()) {
                entries.push(Entry::dir(p, 0o755));
            }
            parent = p;
        }
        entries.push(Entry::file(&x.path, x.mode, x.data.clone()));
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let mut out = Vec::new();
    write_archive(&mut out, &entries)?;
    Ok(out)
}

/// The base initramfs followed by a second archive holding the workload
/// under /workload: a script becomes /workload/run.sh; a directory is copied
/// whole and must hold run.sh.
pub fn with_workload(base: &[u8], workload: &Path) -> Result<Vec<u8>> {
    append_workload(base.to_vec(), workload)
}

/// [`with_workload`] appending to `base` itself (no copy of a large
/// initramfs).
pub fn append_workload(base: Vec<u8>, workload: &Path) -> Result<Vec<u8>> {
    let bad = |message: String| GuestError::Workload {
        path: workload.to_path_buf(),
        message,
    };
    let meta = std::fs::metadata(workload).map_err(|e| bad(format!("it cannot be read ({e})")))?;
    let mut entries = vec![Entry::dir("workload", 0o755)];
    if meta.is_file() {
        entries.push(Entry::file("workload/run.sh", 0o755, read(workload)?));
    } else if meta.is_dir() {
        if !workload.join("run.sh").is_file() {
            return Err(bad("the directory has no run.sh".into()));
        }
        collect(workload, workload, &mut entries)?;
    } else {
        return Err(bad("it is neither a file nor a directory".into()));
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let mut out = base;
    write_archive(&mut out, &entries)?;
    Ok(out)
}

fn collect(root: &Path, dir: &Path, entries: &mut Vec<Entry>) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for e in std::fs::read_dir(dir).map_err(io_err("list", dir))? {
        let e = e.map_err(io_err("list", dir))?;
        let path = e.path();
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        let name = format!("workload/{rel}");
        let meta = std::fs::symlink_metadata(&path).map_err(io_err("inspect", &path))?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).map_err(io_err("read link", &path))?;
            entries.push(Entry::symlink(&name, &target.to_string_lossy()));
        } else if meta.is_dir() {
            entries.push(Entry::dir(&name, 0o755));
            collect(root, &path, entries)?;
        } else if meta.is_file() {
            // Only the executable bit is kept: modes must not depend on the host's umask.
            let perm = if meta.permissions().mode() & 0o111 != 0 || rel == "run.sh" {
                0o755
            } else {
                0o644
            };
            entries.push(Entry::file(&name, perm, read(&path)?));
        } else {
            return Err(GuestError::Workload {
                path: path.clone(),
                message: "only files, directories and symlinks can go into a workload".into(),
            });
        }
    }
    Ok(())
}
