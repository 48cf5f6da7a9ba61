//! Image recipes (`guest/images/NAME.toml`) and their hashes. The hash
//! covers every file the image is made from, so a changed recipe rebuilds
//! and an unchanged one is found in the cache.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::{io_err, GuestError, Result};

/// Bumped when the build logic changes in a way that changes images.
pub const RECIPE_FORMAT: &str = "hartscope-guest-recipe-6";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    pub description: String,
    /// Debian suite BusyBox's source package comes from.
    pub source_suite: String,
    /// Kernel command line the image boots with (`nokaslr` is added when needed).
    pub append: String,
    pub firmware: FirmwareRecipe,
    pub kernel: KernelRecipe,
    /// Programs from Debian binary packages, beside BusyBox.
    #[serde(default)]
    pub extras: Option<ExtrasRecipe>,
}

/// `[extras]`: riscv64 binary packages of one suite, and the files of them
/// the image installs (with the loader and libraries those files need,
/// which must come from the same packages).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtrasRecipe {
    pub suite: String,
    pub packages: Vec<String>,
    /// Absolute paths as the packages install them, e.g. `/usr/bin/dd`.
    pub files: Vec<String>,
}

/// OpenSBI, built from the upstream tarball of a Debian source package.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FirmwareRecipe {
    pub package: String,
    pub suite: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "source", rename_all = "kebab-case", deny_unknown_fields)]
pub enum KernelRecipe {
    /// A kernel from a Debian riscv64 binary package of `suite`, with selected modules.
    DebianPackage {
        package: String,
        suite: String,
        modules: Vec<String>,
    },
    /// A kernel cross-built from the source tarball Debian's `linux-source-*`
    /// package (of `suite`) carries.
    LinuxSource {
        package: String,
        suite: String,
        base: String,
        /// Config fragment, relative to the guest directory.
        config: String,
        /// Patch directory, relative to the guest directory.
        patches: String,
    },
}

/// Inputs shared by every image: the agent, hsmark, the C workloads, BusyBox's config.
const COMMON_DIRS: &[&str] = &["agent", "hsmark", "busybox"];

pub struct LoadedRecipe {
    pub name: String,
    pub recipe: Recipe,
    pub hash: String,
    /// The images this recipe starts from (`base = "…"`), nearest first.
    pub bases: Vec<String>,
}

/// How many `base` links a recipe may follow (a loop is refused before this).
const MAX_BASES: usize = 8;

impl Recipe {
    /// What the recipe asks the archive for, one line each (kept in the lock).
    pub fn wants(&self) -> Vec<String> {
        let mut w = vec![
            format!(
                "firmware: upstream tarball of source package {} ({})",
                self.firmware.package, self.firmware.suite
            ),
            format!("busybox: source package busybox ({})", self.source_suite),
        ];
        w.push(match &self.kernel {
            KernelRecipe::DebianPackage { package, suite, .. } => {
                format!("kernel: {package} ({suite}, riscv64)")
            }
            KernelRecipe::LinuxSource { package, suite, .. } => {
                format!("kernel source: {package} ({suite})")
            }
        });
        if let Some(x) = &self.extras {
            w.push(format!(
                "extras: binary packages {} ({}, riscv64)",
                x.packages.join(", "),
                x.suite
            ));
        }
        w
    }
}

impl LoadedRecipe {
    /// Short hash used in directory names.
    pub fn short_hash(&self) -> &str {
        &self.hash[..16]
    }
}

pub fn known_images(guest_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(guest_dir.join("images"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_suffix(".toml"))
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

pub fn load(guest_dir: &Path, name: &str) -> Result<LoadedRecipe> {
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let path = guest_dir.join("images").join(format!("{name}.toml"));
    if !valid || !path.is_file() {
        let known = known_images(guest_dir);
        let known = if known.is_empty() {
            format!(
                "none (no recipes under {})",
                guest_dir.join("images").display()
            )
        } else {
            known
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(GuestError::UnknownImage {
            name: name.to_string(),
            known,
        });
    }
    let (table, bases) = merged_table(guest_dir, name, &path)?;
    let recipe: Recipe = toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| GuestError::Recipe {
            path: path.clone(),
            message: e.message().to_string(),
        })?;
    let hash = hash_inputs(guest_dir, name, &bases, &recipe)?;
    Ok(LoadedRecipe {
        name: name.to_string(),
        recipe,
        hash,
        bases,
    })
}

/// The recipe file of `name` as a TOML table, with `base = "OTHER"`
/// resolved: OTHER's recipe (itself possibly based on another) is taken and
/// this file's keys replace its keys, tables merged key by key (so
/// `[extras]` in a derived recipe replaces only the extras keys it names;
/// an array replaces the base's array whole). Returns the table (without
/// `base`) and the chain of base images, nearest first.
fn merged_table(guest_dir: &Path, name: &str, path: &Path) -> Result<(toml::Table, Vec<String>)> {
    let parse = |p: &Path| -> Result<toml::Table> {
        let text = std::fs::read_to_string(p).map_err(io_err("read", p))?;
        text.parse::<toml::Table>().map_err(|e| GuestError::Recipe {
            path: p.to_path_buf(),
            message: e.message().to_string(),
        })
    };
    // Walk up the chain: the named recipe first, then its base, ...
    let mut layers = vec![parse(path)?];
    let mut chain: Vec<String> = Vec::new();
    let mut from = path.to_path_buf();
    loop {
        let top = layers.last_mut().expect("one layer at least");
        let Some(base) = top.remove("base") else {
            break;
        };
        let bad = |message: String| GuestError::Recipe {
            path: from.clone(),
            message,
        };
        let base = match base {
            toml::Value::String(s) => s,
            other => {
                return Err(bad(format!(
                    "key `base`: expected the name of another image's recipe as a string, not {}",
                    other.type_str()
                )))
            }
        };
        if base == name || chain.contains(&base) {
            return Err(bad(format!(
                "key `base`: `{base}` leads back to `{}` (recipes based on each other in a loop)",
                from.file_stem().unwrap_or_default().to_string_lossy()
            )));
        }
        if chain.len() >= MAX_BASES {
            return Err(bad(format!(
                "key `base`: more than {MAX_BASES} recipes based on one another"
            )));
        }
        let valid = !base.is_empty()
            && base
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        let base_path = guest_dir.join("images").join(format!("{base}.toml"));
        if !valid || !base_path.is_file() {
            let known = known_images(guest_dir)
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(bad(format!(
                "key `base`: no image recipe `{base}` (known: {known})"
            )));
        }
        layers.push(parse(&base_path)?);
        chain.push(base);
        from = base_path;
    }
    // Apply from the furthest base down to the named recipe.
    let mut merged = layers.pop().expect("one layer at least");
    while let Some(over) = layers.pop() {
        merge_into(&mut merged, over);
    }
    Ok((merged, chain))
}

/// `over`'s keys replace `base`'s; two tables under one key merge the same way.
fn merge_into(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge_into(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Every file (relative path → contents) the image is made from.
pub fn input_files(
    guest_dir: &Path,
    name: &str,
    bases: &[String],
    recipe: &Recipe,
) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut files = BTreeMap::new();
    // The recipe and the recipes it starts from (not their locks: this
    // image's own lock pins every file it is made from).
    for n in std::iter::once(name).chain(bases.iter().map(String::as_str)) {
        let rel = format!("images/{n}.toml");
        files.insert(rel.clone(), read(&guest_dir.join(&rel))?);
    }
    // The lock pins what the recipe resolves to: a new kernel version is a new image.
    let lock = format!("images/{name}.lock");
    if guest_dir.join(&lock).is_file() {
        files.insert(lock.clone(), read(&guest_dir.join(&lock))?);
    }
    for dir in COMMON_DIRS {
        collect_dir(guest_dir, dir, &mut files, &|_| true)?;
    }
    // Only the C programs of guest/workloads go into images; its scripts are
    // workloads the host supplies at run time.
    collect_dir(guest_dir, "workloads", &mut files, &|p| {
        !p.contains('/') && (p.ends_with(".c") || p.ends_with(".h"))
    })?;
    if let KernelRecipe::LinuxSource {
        config, patches, ..
    } = &recipe.kernel
    {
        files.insert(config.clone(), read(&guest_dir.join(config))?);
        collect_dir(guest_dir, patches, &mut files, &|p| p.ends_with(".patch"))?;
    }
    Ok(files)
}

fn hash_inputs(guest_dir: &Path, name: &str, bases: &[String], recipe: &Recipe) -> Result<String> {
    let mut h = Sha256::new();
    h.update(RECIPE_FORMAT.as_bytes());
    h.update([0]);
    h.update(name.as_bytes());
    h.update([0]);
    for (path, data) in input_files(guest_dir, name, bases, recipe)? {
        h.update(path.as_bytes());
        h.update([0]);
        h.update((data.len() as u64).to_le_bytes());
        h.update(&data);
    }
    Ok(hex(&h.finalize()))
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(io_err("read recipe file", path))
}

/// Adds the files under `guest_dir/dir` whose path relative to `dir` passes
/// `keep`, keyed by their path relative to `guest_dir`. A missing directory adds nothing.
fn collect_dir(
    guest_dir: &Path,
    dir: &str,
    files: &mut BTreeMap<String, Vec<u8>>,
    keep: &dyn Fn(&str) -> bool,
) -> Result<()> {
    let root = guest_dir.join(dir);
    if !root.is_dir() {
        return Ok(());
    }
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).map_err(io_err("list", &d))? {
            let entry = entry.map_err(io_err("list", &d))?;
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let inner = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            if keep(&inner) {
                files.insert(format!("{dir}/{inner}").replace("//", "/"), read(&path)?);
            }
        }
    }
    Ok(())
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}
