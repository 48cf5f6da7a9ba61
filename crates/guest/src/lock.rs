//! Lock files (`guest/images/NAME.lock`): every file an image is made from,
//! pinned by pool path, size and sha256, with how each hash was verified.
//! `hartscope guest build` fetches exactly these files and needs no package
//! index; only `hartscope guest lock` reads the archive's signed indexes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{io_err, GuestError, Result};

pub const LOCK_FORMAT: &str = "hartscope-guest-lock-1";

/// What a locked file is used for.
pub mod role {
    /// A kernel binary package (.deb): Image, config, modules.
    pub const KERNEL: &str = "kernel";
    /// A kernel source package's binary (.deb holding the source tarball).
    pub const KERNEL_SOURCE: &str = "kernel-source";
    /// The firmware's upstream source tarball (OpenSBI).
    pub const FIRMWARE_SOURCE: &str = "firmware-source";
    /// The files of BusyBox's source package (.dsc, .orig, .debian).
    pub const BUSYBOX_SOURCE: &str = "busybox-source";
    /// A binary package (.deb) the recipe's `[extras]` installs files of.
    pub const EXTRA: &str = "extra";
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    pub format: String,
    pub image: String,
    /// What the recipe asked for when this lock was made, one line each; a
    /// recipe that asks for something else needs a new lock.
    pub wants: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    #[serde(rename = "file")]
    pub files: Vec<LockedFile>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LockedFile {
    pub role: String,
    pub package: String,
    pub version: String,
    /// Debian suite whose index listed it (`-security` suites live in the security archive).
    pub suite: String,
    /// Path below the archive root, e.g. `pool/main/o/opensbi/opensbi_1.6.orig.tar.gz`.
    pub path: String,
    pub size: u64,
    pub sha256: String,
    /// True when the hash came from an index whose sha256 matched a release
    /// file signed by Debian's archive key.
    pub signed: bool,
    /// How the hash was verified, in words (or why it could not be).
    pub verified: String,
}

impl LockedFile {
    /// The file's name in the pool.
    pub fn file_name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

pub fn path(guest_dir: &Path, image: &str) -> PathBuf {
    guest_dir.join("images").join(format!("{image}.lock"))
}

const HEADER: &str = "# Written by `hartscope guest lock`; `hartscope guest build` fetches exactly these\n\
# files and checks each size and sha256. Re-lock with `hartscope guest lock --image NAME --update`.\n";

/// Reads the lock of `image` and checks it was made for what the recipe wants now.
pub fn read(guest_dir: &Path, image: &str, wants: &[String]) -> Result<Lock> {
    let lock = read_any(guest_dir, image)?;
    if lock.wants != wants {
        return Err(GuestError::Lock {
            path: path(guest_dir, image),
            message: format!(
                "it was made for [{}] but the recipe now asks for [{}]; run `hartscope guest lock --image {image}` (pins what is new, keeps the rest)",
                lock.wants.join("; "),
                wants.join("; ")
            ),
        });
    }
    Ok(lock)
}

/// Reads and checks the lock of `image`, whatever the recipe wants now.
pub fn read_any(guest_dir: &Path, image: &str) -> Result<Lock> {
    let p = path(guest_dir, image);
    if !p.is_file() {
        return Err(GuestError::Lock {
            path: p,
            message: format!("it does not exist; run `hartscope guest lock --image {image}` to resolve and pin the files"),
        });
    }
    let text = std::fs::read_to_string(&p).map_err(io_err("read", &p))?;
    let lock: Lock = toml::from_str(&text).map_err(|e| GuestError::Lock {
        path: p.clone(),
        message: e.message().to_string(),
    })?;
    if lock.format != LOCK_FORMAT {
        return Err(GuestError::Lock {
            path: p,
            message: format!("format `{}` is not `{LOCK_FORMAT}`; run `hartscope guest lock --image {image} --update`", lock.format),
        });
    }
    for f in &lock.files {
        let bad_hash = f.sha256.len() != 64 || !f.sha256.bytes().all(|b| b.is_ascii_hexdigit());
        let bad_path =
            f.path.starts_with('/') || f.path.split('/').any(|c| c == ".." || c.is_empty());
        if bad_hash || bad_path {
            return Err(GuestError::Lock {
                path: p,
                message: format!(
                    "the entry for `{}` has a malformed {}",
                    f.path,
                    if bad_hash { "sha256" } else { "path" }
                ),
            });
        }
    }
    Ok(lock)
}

pub fn write(guest_dir: &Path, lock: &Lock) -> Result<PathBuf> {
    let p = path(guest_dir, &lock.image);
    let body = toml::to_string(lock).map_err(|e| GuestError::Lock {
        path: p.clone(),
        message: e.to_string(),
    })?;
    let tmp = p.with_extension("lock.tmp");
    std::fs::write(&tmp, format!("{HEADER}{body}")).map_err(io_err("write", &tmp))?;
    std::fs::rename(&tmp, &p).map_err(io_err("rename", &tmp))?;
    Ok(p)
}

impl Lock {
    pub fn files_of(&self, role: &str) -> Vec<&LockedFile> {
        self.files.iter().filter(|f| f.role == role).collect()
    }

    /// The one file of `role`; the error names the lock.
    pub fn one(&self, guest_dir: &Path, role: &str) -> Result<&LockedFile> {
        match self.files_of(role).as_slice() {
            [f] => Ok(f),
            other => Err(GuestError::Lock {
                path: path(guest_dir, &self.image),
                message: format!("expected one `{role}` file, found {}", other.len()),
            }),
        }
    }

    /// Files whose hash no signed index vouched for.
    pub fn unsigned(&self) -> Vec<&LockedFile> {
        self.files.iter().filter(|f| !f.signed).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Lock {
        Lock {
            format: LOCK_FORMAT.into(),
            image: "x".into(),
            wants: vec!["kernel: linux-image-riscv64 (trixie, riscv64)".into()],
            notes: vec![],
            files: vec![LockedFile {
                role: role::KERNEL.into(),
                package: "linux-image-6.12.107+deb13-riscv64".into(),
                version: "6.12.107-1".into(),
                suite: "trixie".into(),
                path: "pool/main/l/linux/k.deb".into(),
                size: 3,
                sha256: "a".repeat(64),
                signed: true,
                verified: "signed".into(),
            }],
        }
    }

    #[test]
    fn round_trip_and_stale_or_malformed_locks_are_refused() {
        let dir = std::env::temp_dir().join(format!("hs-lock-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("images")).unwrap();
        let lock = sample();
        write(&dir, &lock).unwrap();
        assert_eq!(read(&dir, "x", &lock.wants).unwrap(), lock);

        let err = read(&dir, "x", &["kernel: other".to_string()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("x.lock") && err.contains("hartscope guest lock --image x"),
            "{err}"
        );

        let mut bad = sample();
        bad.files[0].path = "pool/../../etc/passwd".into();
        write(&dir, &bad).unwrap();
        let err = read(&dir, "x", &bad.wants).unwrap_err().to_string();
        assert!(err.contains("malformed path"), "{err}");

        let err = read(&dir, "missing", &[]).unwrap_err().to_string();
        assert!(
            err.contains("missing.lock") && err.contains("guest lock --image missing"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
