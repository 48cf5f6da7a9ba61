//! BusyBox from Debian's source package, built static with Debian's own
//! `static` configuration plus guest/busybox/config.fragment, cross-compiled
//! and kept unstripped. Cached under `busybox/<hash>/` apart from images,
//! since its inputs change rarely.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::archive::Archives;
use crate::error::{io_err, GuestError, Result};
use crate::lock::LockedFile;
use crate::process::{run, run_logged};
use crate::recipe::hex;
use crate::staging::Staging;

/// Bumped when the BusyBox build steps change; independent of image recipes.
const BUSYBOX_BUILD_FORMAT: &str = "hartscope-busybox-build-2";

pub struct BusyboxBuild {
    pub binary: PathBuf,
}

pub fn fragment_path(guest_dir: &Path) -> PathBuf {
    guest_dir.join("busybox/config.fragment")
}

/// Parses `CONFIG_X=value` lines (comments and blanks skipped).
pub fn parse_fragment(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            l.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

pub fn ensure(
    cache: &Path,
    guest_dir: &Path,
    archives: &Archives,
    image: &str,
    sources: &[&LockedFile],
    progress: &mut dyn FnMut(&str),
) -> Result<BusyboxBuild> {
    let frag_path = fragment_path(guest_dir);
    let fragment = std::fs::read_to_string(&frag_path).map_err(io_err("read", &frag_path))?;
    let mut h = Sha256::new();
    h.update(BUSYBOX_BUILD_FORMAT);
    for f in sources {
        h.update(&f.sha256);
    }
    h.update(&fragment);
    let key = hex(&h.finalize())[..16].to_string();
    let root = cache.join("busybox");
    let dest = root.join(&key);
    if dest.join("busybox").is_file() {
        let version = std::fs::read_to_string(dest.join("version"))
            .unwrap_or_default()
            .trim()
            .to_string();
        progress(&format!("busybox {version}: cached"));
        return Ok(BusyboxBuild {
            binary: dest.join("busybox"),
        });
    }

    let staging = Staging::new(&root, &key)?;
    let version = sources
        .first()
        .map(|f| f.version.clone())
        .unwrap_or_default();
    progress(&format!("busybox: fetching source package {version}"));
    let dl = staging.path().join("dl");
    std::fs::create_dir_all(&dl).map_err(io_err("create directory", &dl))?;
    for f in sources {
        let local = archives.fetch(f, image)?;
        std::fs::copy(&local, dl.join(f.file_name())).map_err(io_err("copy", &local))?;
    }
    let dsc = sources
        .iter()
        .find(|f| f.path.ends_with(".dsc"))
        .map(|f| dl.join(f.file_name()))
        .ok_or_else(|| GuestError::Package {
            package: "busybox".into(),
            detail: "the lock has no .dsc for it".into(),
        })?;
    let tree = staging.path().join("busybox-src");
    run(
        "unpacking source package `busybox` (dpkg-source -x)",
        Command::new("dpkg-source")
            .arg("-x")
            .arg(&dsc)
            .arg(&tree)
            .env("LC_ALL", "C"),
    )?;

    let base = tree.join("debian/config/pkg/static");
    let mut config = std::fs::read_to_string(&base)
        .map_err(io_err("read Debian's static BusyBox config", &base))?;
    let wanted = parse_fragment(&fragment);
    for (k, v) in &wanted {
        config = config
            .lines()
            .filter(|l| !(l.starts_with(&format!("{k}=")) || *l == format!("# {k} is not set")))
            .collect::<Vec<_>>()
            .join("\n");
        config.push_str(&format!("\n{k}={v}\n"));
    }
    let dot_config = tree.join(".config");
    std::fs::write(&dot_config, &config).map_err(io_err("write", &dot_config))?;
    // No timestamp in the banner: the same recipe gives the same binary.
    let envs = [
        ("KCONFIG_NOTIMESTAMP", "1"),
        ("SOURCE_DATE_EPOCH", "0"),
        ("LC_ALL", "C"),
    ];
    run(
        "configuring BusyBox (make oldconfig)",
        Command::new("sh")
            .arg("-c")
            .arg("yes '' | make oldconfig")
            .current_dir(&tree)
            .envs(envs),
    )?;
    let final_config = std::fs::read_to_string(&dot_config).map_err(io_err("read", &dot_config))?;
    for (k, v) in &wanted {
        if !final_config.lines().any(|l| l == format!("{k}={v}")) {
            return Err(GuestError::Step {
                step: "configuring BusyBox".into(),
                detail: format!(
                    "{k}={v} from {} did not survive `make oldconfig`",
                    frag_path.display()
                ),
            });
        }
    }
    progress(&format!("busybox {version}: building (static, unstripped)"));
    let jobs = format!(
        "-j{}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    );
    let log = staging.path().join("build.log");
    let mut lines = 0usize;
    run_logged(
        "building BusyBox (make busybox)",
        Command::new("make")
            .arg(&jobs)
            .arg("busybox")
            .current_dir(&tree)
            .envs(envs),
        &log,
        &mut |_line| {
            lines += 1;
            if lines.is_multiple_of(200) {
                progress(&format!("busybox: {lines} build steps"));
            }
        },
    )
    .map_err(|e| keep_log(cache, "busybox", &log, e))?;
    let unstripped = tree.join("busybox_unstripped");
    let out = staging.path().join("busybox");
    std::fs::copy(&unstripped, &out).map_err(io_err("copy", &unstripped))?;
    std::fs::write(staging.path().join("version"), &version)
        .map_err(io_err("write", staging.path()))?;
    std::fs::write(staging.path().join("config"), &final_config)
        .map_err(io_err("write", staging.path()))?;
    for d in [tree, dl] {
        std::fs::remove_dir_all(&d).map_err(io_err("remove", &d))?;
    }
    staging.commit(&dest)?;
    Ok(BusyboxBuild {
        binary: dest.join("busybox"),
    })
}

/// Copies a failed build's log to `$cache/logs/` (the staging directory is
/// about to be removed) and says where it is.
pub fn keep_log(cache: &Path, what: &str, log: &Path, err: GuestError) -> GuestError {
    let logs = cache.join("logs");
    let _ = std::fs::create_dir_all(&logs);
    let kept = logs.join(format!("{what}.log"));
    let _ = std::fs::copy(log, &kept);
    let _ = std::fs::copy(log.with_extension("stderr"), kept.with_extension("stderr"));
    match err {
        GuestError::Step { step, detail } => GuestError::Step {
            step,
            detail: detail.replace(&log.display().to_string(), &kept.display().to_string()),
        },
        other => other,
    }
}
