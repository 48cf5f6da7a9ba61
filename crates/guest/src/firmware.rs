//! OpenSBI built from the locked upstream tarball of Debian's `opensbi`
//! source package with bookworm's cross gcc, so `fw_jump.elf` and
//! `fw_dynamic.elf` carry every symbol (Debian's binary package ships them
//! stripped). Cached under `firmware/<hash>/`; the build directory is mapped
//! out of the debug info so two caches give byte-identical files.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::busybox::keep_log;
use crate::error::{io_err, GuestError, Result};
use crate::lock::LockedFile;
use crate::process::{run, run_logged};
use crate::recipe::hex;
use crate::staging::Staging;

/// Bumped when the firmware build steps change.
const FIRMWARE_BUILD_FORMAT: &str = "hartscope-opensbi-build-1";
pub const FIRMWARE_FILES: &[&str] = &[
    "fw_jump.bin",
    "fw_dynamic.bin",
    "fw_jump.elf",
    "fw_dynamic.elf",
];

pub struct FirmwareBuild {
    pub dir: PathBuf,
}

/// Builds (or finds cached) OpenSBI's generic platform firmware from `tarball`.
pub fn ensure(
    cache: &Path,
    source: &LockedFile,
    tarball: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<FirmwareBuild> {
    let mut h = Sha256::new();
    h.update(FIRMWARE_BUILD_FORMAT);
    h.update(&source.sha256);
    let key = hex(&h.finalize())[..16].to_string();
    let root = cache.join("firmware");
    let dest = root.join(&key);
    if FIRMWARE_FILES.iter().all(|f| dest.join(f).is_file()) {
        progress(&format!(
            "firmware: {} {} (cached build)",
            source.package, source.version
        ));
        return Ok(FirmwareBuild { dir: dest });
    }
    let staging = Staging::new(&root, &key)?;
    let src = staging.path().join("src");
    std::fs::create_dir_all(&src).map_err(io_err("create directory", &src))?;
    progress(&format!(
        "firmware: building {} {} (PLATFORM=generic)",
        source.package, source.version
    ));
    run(
        &format!("unpacking {}", tarball.display()),
        Command::new("tar")
            .arg("-xf")
            .arg(tarball)
            .arg("-C")
            .arg(&src),
    )?;
    let tree = crate::kernel::single_subdir(&src)?;
    let top = tree
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let jobs = format!(
        "-j{}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    );
    let log = staging.path().join("build.log");
    run_logged(
        "building OpenSBI (make PLATFORM=generic)",
        Command::new("make")
            .current_dir(&tree)
            .arg(&jobs)
            .arg("PLATFORM=generic")
            .arg("CROSS_COMPILE=riscv64-linux-gnu-")
            // The same file names in the debug info wherever the cache is.
            .arg(format!(
                "CC=riscv64-linux-gnu-gcc -ffile-prefix-map={}={top}",
                tree.display()
            ))
            .env("LC_ALL", "C")
            .env("SOURCE_DATE_EPOCH", "0"),
        &log,
        &mut |_| {},
    )
    .map_err(|e| keep_log(cache, "opensbi", &log, e))?;
    let built = tree.join("build/platform/generic/firmware");
    for f in FIRMWARE_FILES {
        let from = built.join(f);
        if !from.is_file() {
            return Err(GuestError::Step {
                step: "building OpenSBI".into(),
                detail: format!("the build left no {}", from.display()),
            });
        }
        std::fs::copy(&from, staging.path().join(f)).map_err(io_err("copy", &from))?;
    }
    std::fs::remove_dir_all(&src).map_err(io_err("remove", &src))?;
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(log.with_extension("stderr"));
    staging.commit(&dest)?;
    Ok(FirmwareBuild { dir: dest })
}
