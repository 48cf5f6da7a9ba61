//! Debian packages through a private apt configuration kept in the cache
//! directory: riscv64 binary packages of one suite and source packages of
//! another. The machine's own apt sources are never read or changed.
//! Downloads are kept in `downloads/<sha256>/<file>` and checked against the
//! signed index, so a rebuild does not fetch them again.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{io_err, GuestError, Result};
use crate::process::run;
use crate::recipe::sha256_hex;

const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

pub struct Apt {
    dir: PathBuf,
    conf: PathBuf,
    downloads: PathBuf,
    mirror: String,
    binary_suite: String,
    source_suite: String,
}

/// A binary package as the index describes it.
#[derive(Debug, Clone)]
pub struct BinaryPackage {
    pub name: String,
    pub version: String,
    pub sha256: String,
    pub depends: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct SourcePackage {
    pub name: String,
    pub version: String,
    /// (file name, sha256)
    pub files: Vec<(String, String)>,
}

impl Apt {
    pub fn new(cache: &Path, mirror: &str, binary_suite: &str, source_suite: &str) -> Result<Self> {
        let dir = cache.join("apt").join(format!("{binary_suite}-riscv64+{source_suite}-src"));
        let downloads = cache.join("downloads");
        for d in [dir.join("lists/partial"), dir.join("cache/archives/partial"), dir.join("state"), downloads.clone()] {
            std::fs::create_dir_all(&d).map_err(io_err("create directory", &d))?;
        }
        let sources = dir.join("sources.list");
        let keyring = format!("signed-by={KEYRING}");
        let text = format!(
            "deb [arch=riscv64 {keyring}] {mirror} {binary_suite} main\ndeb-src [{keyring}] {mirror} {source_suite} main\n"
        );
        std::fs::write(&sources, text).map_err(io_err("write", &sources))?;
        let status = dir.join("state/status");
        if !status.exists() {
            std::fs::write(&status, "").map_err(io_err("write", &status))?;
        }
        let conf = dir.join("apt.conf");
        let d = dir.display();
        let conf_text = format!(
            "Dir::Etc::SourceList \"{d}/sources.list\";\n\
             Dir::Etc::SourceParts \"/dev/null\";\n\
             Dir::Etc::Preferences \"/dev/null\";\n\
             Dir::Etc::PreferencesParts \"/dev/null\";\n\
             Dir::State \"{d}/state\";\n\
             Dir::State::Lists \"{d}/lists\";\n\
             Dir::State::status \"{d}/state/status\";\n\
             Dir::Cache \"{d}/cache\";\n\
             APT::Architecture \"riscv64\";\n\
             APT::Architectures \"riscv64\";\n\
             APT::Sandbox::User \"root\";\n\
             Acquire::Retries \"2\";\n\
             Acquire::http::Timeout \"30\";\n"
        );
        std::fs::write(&conf, conf_text).map_err(io_err("write", &conf))?;
        Ok(Apt {
            dir,
            conf,
            downloads,
            mirror: mirror.to_string(),
            binary_suite: binary_suite.to_string(),
            source_suite: source_suite.to_string(),
        })
    }

    fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.arg("-c").arg(&self.conf).arg("-q");
        c.env("LC_ALL", "C");
        c
    }

    pub fn update(&self) -> Result<()> {
        if !Path::new(KEYRING).is_file() {
            return Err(GuestError::Package {
                package: "debian-archive-keyring".into(),
                detail: format!("{KEYRING} is missing; run scripts/setup-host.sh"),
            });
        }
        let step = format!(
            "updating the package index (`apt-get update` of {} riscv64 and {} sources from {})",
            self.binary_suite, self.source_suite, self.mirror
        );
        let mut c = self.cmd("apt-get");
        c.args(["update", "--error-on=any"]);
        run(&step, &mut c)?;
        Ok(())
    }

    /// The candidate version of a riscv64 binary package.
    pub fn show(&self, package: &str) -> Result<BinaryPackage> {
        let mut c = self.cmd("apt-cache");
        c.args(["show", "--no-all-versions", package]);
        let text = run(&format!("looking up package `{package}` (apt-cache show)"), &mut c).map_err(|e| {
            GuestError::Package { package: package.into(), detail: format!("not found in {} riscv64: {e}", self.binary_suite) }
        })?;
        let field = |name: &str| stanza_field(&text, name);
        let version = field("Version").ok_or_else(|| missing_field(package, "Version"))?;
        let sha256 = field("SHA256").ok_or_else(|| missing_field(package, "SHA256"))?;
        let depends = field("Depends")
            .map(|d| d.split(',').map(|p| p.split_whitespace().next().unwrap_or("").to_string()).collect())
            .unwrap_or_default();
        Ok(BinaryPackage { name: package.to_string(), version, sha256, depends })
    }

    /// Downloads a binary package (or finds it in the download cache) and returns the .deb path.
    pub fn download(&self, pkg: &BinaryPackage) -> Result<PathBuf> {
        let dir = self.downloads.join(&pkg.sha256);
        if let Some(found) = first_file(&dir, ".deb") {
            return Ok(found);
        }
        let tmp = self.fresh_tmp(&pkg.sha256)?;
        let step = format!("downloading package `{}` {} (apt-get download)", pkg.name, pkg.version);
        let mut c = self.cmd("apt-get");
        c.current_dir(&tmp).arg("download").arg(format!("{}={}", pkg.name, pkg.version));
        let result = run(&step, &mut c).and_then(|_| {
            let deb = first_file(&tmp, ".deb").ok_or_else(|| GuestError::Package {
                package: pkg.name.clone(),
                detail: "apt-get download reported success but left no .deb".into(),
            })?;
            verify(&deb, &pkg.sha256, &pkg.name)?;
            Ok(deb)
        });
        self.keep_or_discard(&tmp, &dir, result)?;
        first_file(&dir, ".deb").ok_or_else(|| GuestError::Package { package: pkg.name.clone(), detail: "download vanished".into() })
    }

    pub fn show_source(&self, package: &str) -> Result<SourcePackage> {
        let mut c = self.cmd("apt-cache");
        c.args(["showsrc", "--only-source", package]);
        let text = run(&format!("looking up source package `{package}` (apt-cache showsrc)"), &mut c)?;
        // Several stanzas can appear; use the first (the only suite listed).
        let first = text.split("\n\n").find(|s| s.contains("Version:")).ok_or_else(|| GuestError::Package {
            package: package.into(),
            detail: format!("no source package in {} (is the deb-src entry reachable?)", self.source_suite),
        })?;
        let version = stanza_field(first, "Version").ok_or_else(|| missing_field(package, "Version"))?;
        let files = stanza_field(first, "Checksums-Sha256")
            .ok_or_else(|| missing_field(package, "Checksums-Sha256"))?
            .lines()
            .filter_map(|l| {
                let mut parts = l.split_whitespace();
                let sum = parts.next()?;
                let _size = parts.next()?;
                Some((parts.next()?.to_string(), sum.to_string()))
            })
            .collect::<Vec<_>>();
        if files.is_empty() {
            return Err(missing_field(package, "Checksums-Sha256"));
        }
        Ok(SourcePackage { name: package.to_string(), version, files })
    }

    /// Downloads a source package's files (or finds them cached) and returns
    /// the directory holding all of them, with the .dsc among them.
    pub fn download_source(&self, src: &SourcePackage, into: &Path) -> Result<PathBuf> {
        let all_cached = src.files.iter().all(|(f, sum)| self.downloads.join(sum).join(f).is_file());
        if !all_cached {
            let tmp = self.fresh_tmp(&format!("src-{}", src.name))?;
            let step = format!("downloading source package `{}` {} (apt-get source)", src.name, src.version);
            let mut c = self.cmd("apt-get");
            c.current_dir(&tmp).args(["source", "--download-only"]).arg(format!("{}={}", src.name, src.version));
            let result = run(&step, &mut c).and_then(|_| {
                for (f, sum) in &src.files {
                    let p = tmp.join(f);
                    verify(&p, sum, &src.name)?;
                    let dest = self.downloads.join(sum);
                    if !dest.join(f).is_file() {
                        let stage = self.downloads.join(format!(".tmp-{sum}-{}", std::process::id()));
                        std::fs::create_dir_all(&stage).map_err(io_err("create directory", &stage))?;
                        std::fs::rename(&p, stage.join(f)).map_err(io_err("move", &p))?;
                        if std::fs::rename(&stage, &dest).is_err() {
                            let _ = std::fs::remove_dir_all(&stage);
                        }
                    }
                }
                Ok(())
            });
            let _ = std::fs::remove_dir_all(&tmp);
            result?;
        }
        std::fs::create_dir_all(into).map_err(io_err("create directory", into))?;
        for (f, sum) in &src.files {
            let from = self.downloads.join(sum).join(f);
            std::fs::copy(&from, into.join(f)).map_err(io_err("copy", &from))?;
        }
        Ok(into.to_path_buf())
    }

    fn fresh_tmp(&self, tag: &str) -> Result<PathBuf> {
        let tmp = self.dir.join(format!("tmp-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).map_err(io_err("create directory", &tmp))?;
        Ok(tmp)
    }

    /// Moves a verified download into its final cache directory, or removes it.
    fn keep_or_discard(&self, tmp: &Path, dest: &Path, result: Result<PathBuf>) -> Result<()> {
        match result {
            Ok(file) => {
                let stage = tmp.join("keep");
                std::fs::create_dir_all(&stage).map_err(io_err("create directory", &stage))?;
                let name = file.file_name().unwrap_or_default().to_owned();
                std::fs::rename(&file, stage.join(name)).map_err(io_err("move", &file))?;
                // Another process may have stored the same file meanwhile: either copy is good.
                let _ = std::fs::rename(&stage, dest);
                let _ = std::fs::remove_dir_all(tmp);
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(tmp);
                Err(e)
            }
        }
    }
}

fn missing_field(package: &str, field: &str) -> GuestError {
    GuestError::Package { package: package.into(), detail: format!("the package index has no {field} field for it") }
}

fn verify(path: &Path, sha256: &str, package: &str) -> Result<()> {
    let data = std::fs::read(path).map_err(io_err("read", path))?;
    let got = sha256_hex(&data);
    if got != sha256 {
        return Err(GuestError::Package {
            package: package.into(),
            detail: format!("{} has sha256 {got}, the index says {sha256}", path.display()),
        });
    }
    Ok(())
}

fn first_file(dir: &Path, suffix: &str) -> Option<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files.into_iter().next()
}

/// A field of a deb822 stanza; continuation lines are joined with newlines.
pub fn stanza_field(text: &str, name: &str) -> Option<String> {
    let mut lines = text.lines();
    let prefix = format!("{name}:");
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix(&prefix) {
            let mut value = rest.trim().to_string();
            for cont in lines.by_ref() {
                if cont.starts_with(' ') || cont.starts_with('\t') {
                    if !value.is_empty() {
                        value.push('\n');
                    }
                    value.push_str(cont.trim());
                } else {
                    break;
                }
            }
            return Some(value);
        }
        if line.is_empty() {
            break;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::stanza_field;

    #[test]
    fn stanza_fields_with_continuations() {
        let s = "Package: busybox\nVersion: 1:1.35.0-4\nChecksums-Sha256:\n abc 10 a.dsc\n def 20 b.tar.xz\nFormat: 3.0\n";
        assert_eq!(stanza_field(s, "Version").unwrap(), "1:1.35.0-4");
        assert_eq!(stanza_field(s, "Checksums-Sha256").unwrap(), "abc 10 a.dsc\ndef 20 b.tar.xz");
        assert!(stanza_field(s, "Depends").is_none());
    }
}
