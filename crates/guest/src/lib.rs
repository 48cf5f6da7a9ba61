//! Guest image recipes: Debian packages, kernel builds, initramfs, the agent.
//!
//! `build(name)` turns `guest/images/NAME.toml` into an image directory
//! under `$HARTSCOPE_CACHE/images/NAME-<recipe hash>/` (or finds it there);
//! `find(name)` only looks; `workload_initrd` appends a workload to an
//! image's initramfs for one run.

pub mod cpio;
pub mod qemu;

mod archive;
mod build_area;
mod busybox;
mod cross;
mod deb822;
mod debian_kernel;
mod error;
mod extras;
mod firmware;
mod image;
mod kernel;
mod lock;
mod manifest;
mod process;
mod recipe;
mod resolve;
mod rootfs;
mod staging;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

pub use archive::{DEFAULT_KEYRING, DEFAULT_MIRROR, DEFAULT_SECURITY_MIRROR};
pub use error::GuestError;
pub use lock::{Lock, LockedFile};
pub use manifest::{Manifest, PackageEntry};
pub use recipe::{known_images, RECIPE_FORMAT};

/// A built image: everything needed to boot it and to name what runs in it.
#[derive(Debug, Clone)]
pub struct ImageDir {
    pub name: String,
    pub dir: PathBuf,
    /// OpenSBI `fw_jump.bin` (jumps to the kernel at 0x8020_0000).
    pub firmware: PathBuf,
    pub fw_dynamic: PathBuf,
    /// `fw_jump.elf`, with symbols, when the firmware package ships it.
    pub firmware_elf: Option<PathBuf>,
    /// The kernel `Image`.
    pub kernel: PathBuf,
    /// The base initramfs (uncompressed newc cpio).
    pub initrd: PathBuf,
    pub symbols: KernelSymbols,
    /// Unstripped static BusyBox, as installed at /bin/busybox.
    pub busybox: PathBuf,
    /// The kernel's BTF (raw, as /sys/kernel/btf/vmlinux gives it).
    pub btf: Option<PathBuf>,
    /// Kernel command line the image boots with.
    pub default_append: String,
    pub manifest: PathBuf,
}

/// Where kernel symbols come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelSymbols {
    /// An ELF `vmlinux` with its symbol table.
    Vmlinux(PathBuf),
    /// A `/proc/kallsyms` capture (address type name [module]).
    Kallsyms(PathBuf),
}

impl ImageDir {
    /// Unstripped guest programs (hsmark, workloads) by name, as installed in /usr/bin.
    pub fn program(&self, name: &str) -> PathBuf {
        self.dir.join("programs").join(name)
    }
}

/// Where images are built and which recipes, mirrors and keyring are used.
#[derive(Debug, Clone)]
pub struct Builder {
    pub cache: PathBuf,
    pub guest_dir: PathBuf,
    /// Debian's main archive (suites like `trixie`).
    pub mirror: String,
    /// Debian's security archive (suites ending in `-security`).
    pub security_mirror: String,
    /// The keyring `guest lock` checks release signatures against.
    pub keyring: PathBuf,
}

impl Builder {
    /// `$HARTSCOPE_CACHE` (default `~/.cache/hartscope`), `$HARTSCOPE_GUEST_DIR`
    /// (default: this source tree's `guest/`), `$HARTSCOPE_DEBIAN_MIRROR`,
    /// `$HARTSCOPE_DEBIAN_SECURITY_MIRROR`, `$HARTSCOPE_DEBIAN_KEYRING`.
    pub fn from_env() -> Self {
        let cache = std::env::var_os("HARTSCOPE_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                let home = std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| PathBuf::from("."));
                home.join(".cache/hartscope")
            });
        let guest_dir = std::env::var_os("HARTSCOPE_GUEST_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                let built_in = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../guest");
                if built_in.is_dir() {
                    built_in.canonicalize().unwrap_or(built_in)
                } else {
                    PathBuf::from("guest")
                }
            });
        let var =
            |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.to_string());
        Builder {
            cache,
            guest_dir,
            mirror: var("HARTSCOPE_DEBIAN_MIRROR", DEFAULT_MIRROR),
            security_mirror: var("HARTSCOPE_DEBIAN_SECURITY_MIRROR", DEFAULT_SECURITY_MIRROR),
            keyring: PathBuf::from(var("HARTSCOPE_DEBIAN_KEYRING", DEFAULT_KEYRING)),
        }
    }

    fn archives(&self) -> archive::Archives {
        archive::Archives {
            mirror: self.mirror.trim_end_matches('/').to_string(),
            security_mirror: self.security_mirror.trim_end_matches('/').to_string(),
            keyring: self.keyring.clone(),
            downloads: self.cache.join("downloads"),
        }
    }

    /// Resolves the recipe through the archive's signed indexes and writes
    /// `guest/images/NAME.lock`. An existing lock that still fits the recipe
    /// is kept unless `update`. Returns the lock and whether it was written.
    pub fn lock(
        &self,
        name: &str,
        update: bool,
        allow_unverified: bool,
        progress: &mut dyn FnMut(&str),
    ) -> Result<(Lock, bool), GuestError> {
        let r = recipe::load(&self.guest_dir, name)?;
        if !update {
            if let Ok(existing) = lock::read(&self.guest_dir, name, &r.recipe.wants()) {
                return Ok((existing, false));
            }
        }
        let work = self
            .cache
            .join("lock-work")
            .join(format!("{name}-{}", std::process::id()));
        // Without --update, the files of wants the old lock already answers
        // stay pinned; an image with no lock yet starts from its base's, so
        // it gets the very kernel, firmware and BusyBox its base is built from.
        let previous = if update {
            None
        } else {
            lock::read_any(&self.guest_dir, name).ok().or_else(|| {
                r.bases
                    .iter()
                    .find_map(|b| lock::read_any(&self.guest_dir, b).ok())
            })
        };
        let result = resolve::resolve(
            &self.archives(),
            &r,
            &work,
            allow_unverified,
            previous.as_ref(),
            progress,
        );
        let _ = std::fs::remove_dir_all(&work);
        let new = result?;
        lock::write(&self.guest_dir, &new)?;
        Ok((new, true))
    }

    fn image_path(&self, r: &recipe::LoadedRecipe) -> PathBuf {
        self.cache
            .join("images")
            .join(format!("{}-{}", r.name, r.short_hash()))
    }

    /// The hash of the image's current recipe (the suffix of its directory name).
    pub fn recipe_hash(&self, name: &str) -> Result<String, GuestError> {
        Ok(recipe::load(&self.guest_dir, name)?.hash)
    }

    /// The image built from the current recipe, without building anything.
    pub fn find(&self, name: &str) -> Result<ImageDir, GuestError> {
        let r = recipe::load(&self.guest_dir, name)?;
        let dir = self.image_path(&r);
        if !dir.join("manifest.json").is_file() {
            return Err(GuestError::NotBuilt {
                name: name.to_string(),
            });
        }
        manifest::image_dir(name, &dir)
    }

    /// Builds the image (a cache hit returns at once).
    pub fn build(
        &self,
        name: &str,
        progress: &mut dyn FnMut(&str),
    ) -> Result<ImageDir, GuestError> {
        let r = recipe::load(&self.guest_dir, name)?;
        let dest = self.image_path(&r);
        if dest.join("manifest.json").is_file() {
            progress(&format!(
                "image `{name}`: up to date (recipe {})",
                r.short_hash()
            ));
            return manifest::image_dir(name, &dest);
        }
        progress(&format!(
            "image `{name}`: building recipe {} ({})",
            r.short_hash(),
            r.recipe.description
        ));
        image::build_image(self, &r, &dest, progress)?;
        manifest::image_dir(name, &dest)
    }
}

/// Builds (or finds in the cache) the image `name`; see [`Builder::from_env`].
pub fn build(name: &str, progress: &mut dyn FnMut(&str)) -> Result<ImageDir, GuestError> {
    Builder::from_env().build(name, progress)
}

/// The image `name` if it is built for the current recipe; the error says
/// which command builds it.
pub fn find(name: &str) -> Result<ImageDir, GuestError> {
    Builder::from_env().find(name)
}

/// The image's initramfs with the workload appended as a second archive:
/// a script file becomes /workload/run.sh, a directory (holding run.sh) is
/// copied to /workload. Byte-identical for the same inputs.
pub fn workload_initrd(image: &ImageDir, workload: &Path) -> Result<Vec<u8>, GuestError> {
    let base = std::fs::read(&image.initrd).map_err(error::io_err("read", &image.initrd))?;
    rootfs::append_workload(base, workload)
}

impl ImageDir {
    /// The image's manifest.json, parsed.
    pub fn read_manifest(&self) -> Result<Manifest, GuestError> {
        manifest::read(&self.dir)
    }
}
