//! `hartscope guest lock`: resolves what a recipe asks for through the
//! archive's signed indexes and pins the result in the image's lock file.

use std::collections::BTreeMap;
use std::path::Path;

use crate::archive::{Archives, Index, Release};
use crate::deb822::{field, newest};
use crate::error::{io_err, GuestError, Result};
use crate::lock::{role, Lock, LockedFile, LOCK_FORMAT};
use crate::recipe::{KernelRecipe, LoadedRecipe};

const ARCH_ALL: &str = "main/binary-all/Packages.xz";
const ARCH_ALL_FALLBACK: &str = "main/binary-amd64/Packages.xz";

/// Reads indexes once per run and remembers how each was verified.
struct Resolver<'a> {
    archives: &'a Archives,
    work: &'a Path,
    allow_unverified: bool,
    releases: BTreeMap<String, Release>,
    indexes: BTreeMap<(String, String), Index>,
}

impl Resolver<'_> {
    fn index(&mut self, suite: &str, path: &str, progress: &mut dyn FnMut(&str)) -> Result<&Index> {
        let key = (suite.to_string(), path.to_string());
        if !self.indexes.contains_key(&key) {
            if !self.releases.contains_key(suite) {
                progress(&format!(
                    "lock: reading the signed release file of {suite} from {}",
                    self.archives.base(suite)
                ));
                let r = self.archives.release(suite, self.work)?;
                self.releases.insert(suite.to_string(), r);
            }
            let release = &self.releases[suite];
            progress(&format!("lock: reading {suite} {path}"));
            let mut idx = self
                .archives
                .index(release, path, self.work, self.allow_unverified);
            // Arch-all packages are listed in every architecture's index too
            // (`No-Support-for-Architecture-all: Packages`): the host's is a second source.
            let unverified = match &idx {
                Err(_) => true,
                Ok(i) => !i.signed,
            };
            if path == ARCH_ALL && unverified && release.sha256.contains_key(ARCH_ALL_FALLBACK) {
                progress(&format!(
                    "lock: {suite} {path} unusable; reading {ARCH_ALL_FALLBACK}"
                ));
                if let Ok(i) = self
                    .archives
                    .index(release, ARCH_ALL_FALLBACK, self.work, false)
                {
                    idx = Ok(i);
                }
            }
            self.indexes.insert(key.clone(), idx?);
        }
        Ok(&self.indexes[&key])
    }

    /// A binary package's .deb as the index lists it.
    fn binary(
        &mut self,
        suite: &str,
        index_path: &str,
        package: &str,
        file_role: &str,
        progress: &mut dyn FnMut(&str),
    ) -> Result<LockedFile> {
        let idx = self.index(suite, index_path, progress)?;
        let stanza = newest(&idx.text, package).ok_or_else(|| GuestError::Package {
            package: package.into(),
            detail: format!("not in {suite} {index_path}"),
        })?;
        let get = |name: &str| {
            field(stanza, name).ok_or_else(|| GuestError::Package {
                package: package.into(),
                detail: format!("the {suite} index has no {name} field for it"),
            })
        };
        Ok(LockedFile {
            role: file_role.into(),
            package: package.into(),
            version: get("Version")?,
            suite: suite.into(),
            path: get("Filename")?,
            size: get("Size")?.parse().map_err(|_| GuestError::Package {
                package: package.into(),
                detail: "bad Size field".into(),
            })?,
            sha256: get("SHA256")?,
            signed: idx.signed,
            verified: idx.verified.clone(),
        })
    }

    /// A source package's files (those `keep` accepts) as the Sources index lists them.
    fn source(
        &mut self,
        suite: &str,
        package: &str,
        file_role: &str,
        keep: &dyn Fn(&str) -> bool,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Vec<LockedFile>> {
        let idx = self.index(suite, "main/source/Sources.xz", progress)?;
        let stanza = newest(&idx.text, package).ok_or_else(|| GuestError::Package {
            package: package.into(),
            detail: format!("no source package in {suite}"),
        })?;
        let missing = |name: &str| GuestError::Package {
            package: package.into(),
            detail: format!("the {suite} Sources index has no {name} field for it"),
        };
        let version = field(stanza, "Version").ok_or_else(|| missing("Version"))?;
        let dir = field(stanza, "Directory").ok_or_else(|| missing("Directory"))?;
        let sums = field(stanza, "Checksums-Sha256").ok_or_else(|| missing("Checksums-Sha256"))?;
        let mut files = Vec::new();
        for line in sums.lines() {
            let parts: Vec<&str> = line.split_whitespace().collect();
            if let [sum, size, name] = parts[..] {
                if keep(name) {
                    files.push(LockedFile {
                        role: file_role.into(),
                        package: package.into(),
                        version: version.clone(),
                        suite: suite.into(),
                        path: format!("{dir}/{name}"),
                        size: size.parse().map_err(|_| missing("Checksums-Sha256 size"))?,
                        sha256: sum.into(),
                        signed: idx.signed,
                        verified: idx.verified.clone(),
                    });
                }
            }
        }
        if files.is_empty() {
            return Err(GuestError::Package {
                package: package.into(),
                detail: format!("no wanted file in its {suite} source package"),
            });
        }
        Ok(files)
    }
}

/// Resolves the recipe to a lock (not written).
pub fn resolve(
    archives: &Archives,
    r: &LoadedRecipe,
    work: &Path,
    allow_unverified: bool,
    previous: Option<&Lock>,
    progress: &mut dyn FnMut(&str),
) -> Result<Lock> {
    std::fs::create_dir_all(work).map_err(io_err("create directory", work))?;
    let wants = r.recipe.wants();
    // The files (and notes) an earlier lock pinned for a want it shares with
    // the recipe: `want` is the recipe's line, `roles` the files' roles,
    // `note` the prefix of the notes that go with them.
    let kept = |want: &str, roles: &[&str], note: &str| -> Option<(Vec<LockedFile>, Vec<String>)> {
        let p = previous?;
        if !p.wants.iter().any(|w| w == want) {
            return None;
        }
        let files: Vec<LockedFile> = p
            .files
            .iter()
            .filter(|f| roles.contains(&f.role.as_str()))
            .cloned()
            .collect();
        let notes = p
            .notes
            .iter()
            .filter(|n| n.starts_with(note))
            .cloned()
            .collect();
        (!files.is_empty()).then_some((files, notes))
    };
    let mut res = Resolver {
        archives,
        work,
        allow_unverified,
        releases: BTreeMap::new(),
        indexes: BTreeMap::new(),
    };
    let recipe = &r.recipe;
    let mut files = Vec::new();
    let mut notes = Vec::new();

    // OpenSBI: only the upstream tarball is built (see guest/README.md).
    let fw = &recipe.firmware;
    if let Some((f, n)) = kept(&wants[0], &[role::FIRMWARE_SOURCE], "firmware:") {
        progress(&format!(
            "lock: keeping {} {} (firmware)",
            f[0].package, f[0].version
        ));
        files.extend(f);
        notes.extend(n);
    } else {
        let orig = res.source(
            &fw.suite,
            &fw.package,
            role::FIRMWARE_SOURCE,
            &|n| n.contains(".orig.tar."),
            progress,
        )?;
        notes.push(format!(
        "firmware: {} {} is built from its upstream tarball alone with bookworm's riscv64-linux-gnu-gcc; Debian's packaging (.dsc, .debian.tar.xz) is not applied",
        fw.package, orig[0].version
    ));
        files.extend(orig);
    }

    if let Some((f, _)) = kept(&wants[1], &[role::BUSYBOX_SOURCE], "busybox:") {
        progress(&format!(
            "lock: keeping {} {} (busybox)",
            f[0].package, f[0].version
        ));
        files.extend(f);
    } else {
        files.extend(res.source(
            &recipe.source_suite,
            "busybox",
            role::BUSYBOX_SOURCE,
            &|_| true,
            progress,
        )?);
    }

    if let Some((f, n)) = kept(&wants[2], &[role::KERNEL, role::KERNEL_SOURCE], "kernel:") {
        progress(&format!(
            "lock: keeping {} {} (kernel)",
            f[0].package, f[0].version
        ));
        files.extend(f);
        notes.extend(n);
    } else {
        match &recipe.kernel {
            KernelRecipe::DebianPackage { package, suite, .. } => {
                let index = "main/binary-riscv64/Packages.xz";
                // A metapackage depends on the versioned package that holds the kernel.
                let stanza = newest(&res.index(suite, index, progress)?.text, package)
                    .ok_or_else(|| GuestError::Package {
                        package: package.clone(),
                        detail: format!("not in {suite} {index}"),
                    })?
                    .to_string();
                let real = field(&stanza, "Depends")
                    .and_then(|d| {
                        d.split(',')
                            .map(|p| p.split_whitespace().next().unwrap_or("").to_string())
                            .find(|p| p.starts_with("linux-image-"))
                    })
                    .filter(|p| p != package);
                let kernel = match real {
                    Some(real) => {
                        let version = field(&stanza, "Version").unwrap_or_default();
                        notes.push(format!("kernel: {package} {version} resolved to {real}"));
                        res.binary(suite, index, &real, role::KERNEL, progress)?
                    }
                    None => res.binary(suite, index, package, role::KERNEL, progress)?,
                };
                files.push(kernel);
            }
            KernelRecipe::LinuxSource { package, suite, .. } => {
                files.push(res.binary(suite, ARCH_ALL, package, role::KERNEL_SOURCE, progress)?);
            }
        }
    }
    if let Some(x) = &recipe.extras {
        if let Some((f, _)) = kept(&wants[3], &[role::EXTRA], "extras:") {
            progress(&format!("lock: keeping the {} extras packages", f.len()));
            files.extend(f);
        } else {
            let index = "main/binary-riscv64/Packages.xz";
            for p in &x.packages {
                files.push(res.binary(&x.suite, index, p, role::EXTRA, progress)?);
            }
        }
    }
    let lock = Lock {
        format: LOCK_FORMAT.into(),
        image: r.name.clone(),
        wants: recipe.wants(),
        notes,
        files,
    };
    for f in lock.unsigned() {
        progress(&format!(
            "lock: WARNING {} {} is locked unverified: {}",
            f.package, f.version, f.verified
        ));
    }
    Ok(lock)
}
