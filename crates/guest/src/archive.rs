//! Debian archives over plain HTTP, without apt and without the machine's
//! own apt configuration:
//!
//! * [`Archives::fetch`] gets one locked pool file and checks its size and
//!   sha256 (the only thing `guest build` does with the network);
//! * [`Archives::index`] reads a suite's package or source index, trusting it
//!   only when its sha256 matches the suite's `InRelease` as verified by
//!   `gpgv` against Debian's archive keyring (what `guest lock` uses).
//!
//! Verified downloads are kept in `downloads/<sha256>/<file>`, so a rebuild
//! fetches nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{io_err, GuestError, Result};
use crate::lock::LockedFile;
use crate::recipe::sha256_hex;

pub const DEFAULT_MIRROR: &str = "http://deb.debian.org/debian";
pub const DEFAULT_SECURITY_MIRROR: &str = "http://deb.debian.org/debian-security";
pub const DEFAULT_KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

#[derive(Debug, Clone)]
pub struct Archives {
    /// Root of the main archive (suites like `trixie`, `bookworm`).
    pub mirror: String,
    /// Root of the security archive (suites ending in `-security`).
    pub security_mirror: String,
    pub keyring: PathBuf,
    pub downloads: PathBuf,
}

/// A suite's signed release file, reduced to what is used.
#[derive(Debug, Clone)]
pub struct Release {
    pub suite: String,
    pub date: String,
    /// index path (e.g. `main/binary-riscv64/Packages.xz`) → (sha256, size)
    pub sha256: BTreeMap<String, (String, u64)>,
}

/// An index's text and how far it can be trusted.
pub struct Index {
    pub text: String,
    pub signed: bool,
    pub verified: String,
}

impl Archives {
    pub fn base(&self, suite: &str) -> &str {
        if suite.ends_with("-security") {
            &self.security_mirror
        } else {
            &self.mirror
        }
    }

    /// Fetches `url` into `dest`; Ok(false) when the server says 404/410.
    fn get(&self, url: &str, dest: &Path) -> Result<bool> {
        let out = Command::new("curl")
            .args([
                "--silent",
                "--show-error",
                "--location",
                "--retry",
                "2",
                "--connect-timeout",
                "30",
            ])
            .args(["--write-out", "%{http_code}", "--output"])
            .arg(dest)
            .arg(url)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| GuestError::ToolMissing {
                step: format!("fetching {url}"),
                program: "curl".into(),
                package: "curl".into(),
                source: e,
            })?;
        let code = String::from_utf8_lossy(&out.stdout).trim().to_string();
        match code.as_str() {
            "200" if out.status.success() => Ok(true),
            "404" | "410" => {
                let _ = std::fs::remove_file(dest);
                Ok(false)
            }
            _ => {
                let _ = std::fs::remove_file(dest);
                let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
                Err(GuestError::Step {
                    step: format!("fetching {url}"),
                    detail: if why.is_empty() {
                        format!("HTTP status {code}")
                    } else {
                        format!("{why} (HTTP status {code})")
                    },
                })
            }
        }
    }

    /// The verified local copy of a locked file, fetched if not cached.
    /// `image` names the lock in the error that a vanished file gives.
    pub fn fetch(&self, f: &LockedFile, image: &str) -> Result<PathBuf> {
        let dir = self.downloads.join(&f.sha256);
        let dest = dir.join(f.file_name());
        if dest.is_file() {
            return Ok(dest);
        }
        std::fs::create_dir_all(&self.downloads)
            .map_err(io_err("create directory", &self.downloads))?;
        let tmp = self
            .downloads
            .join(format!(".tmp-{}-{}", f.sha256, std::process::id()));
        let url = format!("{}/{}", self.base(&f.suite), f.path);
        if !self.get(&url, &tmp)? {
            return Err(GuestError::LockedFileGone {
                path: f.path.clone(),
                package: f.package.clone(),
                version: f.version.clone(),
                mirror: self.base(&f.suite).to_string(),
                image: image.to_string(),
            });
        }
        let checked = check_file(&tmp, f.size, &f.sha256).map_err(|detail| GuestError::Package {
            package: f.package.clone(),
            detail: format!("{url} does not match the lock: {detail}"),
        });
        if let Err(e) = checked {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        std::fs::create_dir_all(&dir).map_err(io_err("create directory", &dir))?;
        std::fs::rename(&tmp, &dest).map_err(io_err("move", &tmp))?;
        Ok(dest)
    }

    /// The suite's `InRelease`, its signature checked with gpgv; only the
    /// signed text is parsed.
    pub fn release(&self, suite: &str, work: &Path) -> Result<Release> {
        if !self.keyring.is_file() {
            return Err(GuestError::Package {
                package: "debian-archive-keyring".into(),
                detail: format!(
                    "{} is missing; run scripts/setup-host.sh",
                    self.keyring.display()
                ),
            });
        }
        let url = format!("{}/dists/{suite}/InRelease", self.base(suite));
        let raw = work.join(format!("{suite}.InRelease"));
        if !self.get(&url, &raw)? {
            return Err(GuestError::Step {
                step: format!("fetching {url}"),
                detail: "the mirror has no such suite (HTTP 404)".into(),
            });
        }
        let signed = work.join(format!("{suite}.Release"));
        let out = Command::new("gpgv")
            .arg("--keyring")
            .arg(&self.keyring)
            .arg("--output")
            .arg(&signed)
            .arg(&raw)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| GuestError::ToolMissing {
                step: format!("checking the signature of {url}"),
                program: "gpgv".into(),
                package: "gpgv".into(),
                source: e,
            })?;
        if !out.status.success() {
            return Err(GuestError::Step {
                step: format!(
                    "checking the signature of {url} against {}",
                    self.keyring.display()
                ),
                detail: crate::process::error_summary(&String::from_utf8_lossy(&out.stderr), ""),
            });
        }
        let text = std::fs::read_to_string(&signed).map_err(io_err("read", &signed))?;
        parse_release(suite, &text).map_err(|detail| GuestError::Step {
            step: format!("reading {url}"),
            detail,
        })
    }

    /// The decompressed index at `rel_path` (an `.xz` path listed in the
    /// release), fetched by hash where the suite offers that, else by name.
    /// One whose sha256 does not match the signed release is an error,
    /// unless `allow_unverified`, when it is returned marked unsigned.
    pub fn index(
        &self,
        release: &Release,
        rel_path: &str,
        work: &Path,
        allow_unverified: bool,
    ) -> Result<Index> {
        let suite = &release.suite;
        let dists = format!("{}/dists/{suite}", self.base(suite));
        let url = format!("{dists}/{rel_path}");
        let (want_sha, want_size) =
            release
                .sha256
                .get(rel_path)
                .cloned()
                .ok_or_else(|| GuestError::Step {
                    step: format!("reading the {suite} release file"),
                    detail: format!("it lists no {rel_path}"),
                })?;
        let dir = rel_path.rsplit_once('/').map_or("", |(d, _)| d);
        let by_hash = format!("{dists}/{dir}/by-hash/SHA256/{want_sha}");
        let file = work.join(format!("{suite}-{}", rel_path.replace('/', "_")));
        let mut mismatch = String::new();
        for candidate in [&by_hash, &url] {
            if !self.get(candidate, &file)? {
                mismatch = format!("{candidate} is not served (HTTP 404)");
                continue;
            }
            match check_file(&file, want_size, &want_sha) {
                Ok(()) => {
                    let verified =
                        format!("{suite} {rel_path} matches the InRelease signed by Debian's archive key (Date: {})", release.date);
                    return Ok(Index {
                        text: decompress(&file, candidate)?,
                        signed: true,
                        verified,
                    });
                }
                Err(detail) => mismatch = detail,
            }
        }
        if !allow_unverified || !file.is_file() {
            return Err(GuestError::UnverifiedIndex {
                url,
                detail: mismatch,
                suite: suite.clone(),
            });
        }
        let verified = format!(
            "NOT VERIFIED: {suite} {rel_path} as served did not match its signed InRelease (Date: {}): {mismatch}; locked with --allow-unverified on {}",
            release.date,
            today()
        );
        Ok(Index {
            text: decompress(&file, &url)?,
            signed: false,
            verified,
        })
    }
}

fn decompress(file: &Path, url: &str) -> Result<String> {
    let out = Command::new("xz")
        .arg("-dc")
        .arg(file)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| GuestError::ToolMissing {
            step: format!("decompressing {url}"),
            program: "xz".into(),
            package: "xz-utils".into(),
            source: e,
        })?;
    if !out.status.success() {
        return Err(GuestError::Step {
            step: format!("decompressing {url}"),
            detail: String::from_utf8_lossy(&out.stderr).trim().into(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Checks a file's size and sha256; the error says what differs.
pub fn check_file(path: &Path, size: u64, sha256: &str) -> std::result::Result<(), String> {
    let data = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if data.len() as u64 != size {
        return Err(format!("{} bytes where {size} were expected", data.len()));
    }
    let got = sha256_hex(&data);
    if got != sha256 {
        return Err(format!("sha256 {got} where {sha256} was expected"));
    }
    Ok(())
}

/// The signed release text's `Date` and `SHA256` list.
pub fn parse_release(suite: &str, text: &str) -> std::result::Result<Release, String> {
    let date = crate::deb822::field(text, "Date").ok_or("no Date field")?;
    let list = crate::deb822::field(text, "SHA256").ok_or("no SHA256 field")?;
    let mut sha256 = BTreeMap::new();
    for line in list.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if let [sum, size, path] = parts[..] {
            let size = size
                .parse()
                .map_err(|_| format!("bad size in SHA256 line {line:?}"))?;
            sha256.insert(path.to_string(), (sum.to_string(), size));
        }
    }
    if sha256.is_empty() {
        return Err("the SHA256 list is empty".into());
    }
    Ok(Release {
        suite: suite.to_string(),
        date,
        sha256,
    })
}

/// The date in UTC as YYYY-MM-DD (for the record of an unverified lock).
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86_400) as i64;
    // civil-from-days (proleptic Gregorian)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_lists_and_dates() {
        let text = "Origin: Debian\nDate: Sat, 21 Nov 2026 09:15:44 UTC\nMD5Sum:\n 00 1 main/x\nSHA256:\n aa 10 main/binary-riscv64/Packages.xz\n bb 20 main/source/Sources.xz\n";
        let r = parse_release("trixie", text).unwrap();
        assert_eq!(r.date, "Sat, 21 Nov 2026 09:15:44 UTC");
        assert_eq!(r.sha256["main/source/Sources.xz"], ("bb".to_string(), 20));
        assert_eq!(r.sha256.len(), 2);
        assert!(parse_release("x", "Date: now\n").is_err());
    }

    #[test]
    fn file_checks_name_what_differs() {
        let p = std::env::temp_dir().join(format!("hs-archive-check-{}", std::process::id()));
        std::fs::write(&p, b"abc").unwrap();
        let sum = sha256_hex(b"abc");
        assert!(check_file(&p, 3, &sum).is_ok());
        assert!(check_file(&p, 4, &sum)
            .unwrap_err()
            .contains("3 bytes where 4"));
        assert!(check_file(&p, 3, &"0".repeat(64))
            .unwrap_err()
            .contains("sha256"));
        std::fs::remove_file(&p).unwrap();
        assert_eq!(today().len(), 10);
    }
}
