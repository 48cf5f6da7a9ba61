//! The `custom` kernel: Linux from a Debian source tarball, patched with a
//! series, configured from a fragment on top of a base config, and
//! cross-built into `Image` + `vmlinux`. Cached under `kernels/<hash>/` so an
//! image whose userland changed does not rebuild its kernel.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::build_area::BuildArea;
use crate::busybox::keep_log;
use crate::error::{io_err, GuestError, Result};
use crate::process::{run, run_logged};
use crate::recipe::hex;
use crate::staging::Staging;

/// Bumped when the kernel build steps change; independent of image recipe
/// changes so a new agent does not rebuild the kernel.
const KERNEL_BUILD_FORMAT: &str = "hartscope-kernel-build-2";

pub struct KernelBuild {
    pub image: PathBuf,
    pub vmlinux: PathBuf,
    pub btf: PathBuf,
    pub config: PathBuf,
    pub release: String,
    pub build_seconds: Option<u64>,
}

pub struct KernelSpec<'a> {
    pub package: &'a str,
    /// The locked `linux-source-*` .deb, fetched and verified.
    pub deb: &'a Path,
    /// Its sha256 (from the lock): the source's identity in the cache key.
    pub deb_sha256: &'a str,
    pub base: &'a str,
    pub fragment: &'a Path,
    pub patch_dir: &'a Path,
}

/// One wanted option of a config fragment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigOption {
    pub name: String,
    /// `y`, `n`, a number or a quoted string, as written in the fragment.
    pub value: String,
}

pub fn parse_fragment(text: &str) -> Vec<ConfigOption> {
    crate::busybox::parse_fragment(text)
        .into_iter()
        .map(|(k, v)| ConfigOption {
            name: k.trim_start_matches("CONFIG_").to_string(),
            value: v,
        })
        .collect()
}

/// What the final .config must hold for an option (`None`: must be absent/not set).
fn expected_line(o: &ConfigOption) -> Option<String> {
    (o.value != "n").then(|| format!("CONFIG_{}={}", o.name, o.value))
}

/// Checks every fragment option against a final .config.
pub fn verify_config(options: &[ConfigOption], config: &str, fragment: &Path) -> Result<()> {
    for o in options {
        let prefix = format!("CONFIG_{}=", o.name);
        let found = config
            .lines()
            .find(|l| l.starts_with(&prefix))
            .map(str::to_string);
        let ok = match expected_line(o) {
            Some(line) => found.as_deref() == Some(line.as_str()),
            None => found.is_none(),
        };
        if !ok {
            return Err(GuestError::KernelOption {
                option: format!("CONFIG_{}", o.name),
                wanted: o.value.clone(),
                found: found.unwrap_or_else(|| "not set".into()),
                fragment: fragment.to_path_buf(),
            });
        }
    }
    Ok(())
}

fn patches(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut p: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "patch"))
            .collect(),
        Err(_) => Vec::new(),
    };
    p.sort();
    Ok(p)
}

pub fn cache_key(spec: &KernelSpec) -> Result<String> {
    let mut h = Sha256::new();
    h.update(KERNEL_BUILD_FORMAT);
    h.update(spec.package);
    h.update(spec.deb_sha256);
    h.update(spec.base);
    h.update(std::fs::read(spec.fragment).map_err(io_err("read", spec.fragment))?);
    for p in patches(spec.patch_dir)? {
        h.update(
            p.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .as_bytes(),
        );
        h.update(std::fs::read(&p).map_err(io_err("read", &p))?);
    }
    Ok(hex(&h.finalize())[..16].to_string())
}

pub fn ensure(
    cache: &Path,
    spec: &KernelSpec,
    progress: &mut dyn FnMut(&str),
) -> Result<KernelBuild> {
    let key = cache_key(spec)?;
    let root = cache.join("kernels");
    let dest = root.join(&key);
    let done = |dir: &Path, secs: Option<u64>| -> Result<KernelBuild> {
        let release_path = dir.join("release");
        Ok(KernelBuild {
            image: dir.join("Image"),
            vmlinux: dir.join("vmlinux"),
            btf: dir.join("btf"),
            config: dir.join("config"),
            release: std::fs::read_to_string(&release_path)
                .map_err(io_err("read", &release_path))?
                .trim()
                .to_string(),
            build_seconds: secs,
        })
    };
    if ["Image", "vmlinux", "btf"]
        .iter()
        .all(|f| dest.join(f).is_file())
    {
        progress("kernel: cached build");
        return done(&dest, None);
    }
    // One kernel build at a time, in the kept tree; another process may
    // have built this kernel while we waited for it.
    let area = BuildArea::lock(&root)?;
    if cache_key(spec)? != key {
        return Err(GuestError::Step {
            step: "building the kernel".into(),
            detail: format!("the patch series in {} or the config fragment changed while this build waited for the build tree; run it again", spec.patch_dir.display()),
        });
    }
    if ["Image", "vmlinux", "btf"]
        .iter()
        .all(|f| dest.join(f).is_file())
    {
        progress("kernel: cached build (made while waiting for the build tree)");
        return done(&dest, None);
    }
    let staging = Staging::new(&root, &key)?;
    let work = staging.path();
    let mut unpack = |src_parent: &Path| -> Result<()> {
        let deb_tree = work.join("deb");
        run(
            &format!("unpacking package `{}` (dpkg-deb -x)", spec.package),
            Command::new("dpkg-deb")
                .arg("-x")
                .arg(spec.deb)
                .arg(&deb_tree),
        )?;
        let tarball =
            source_tarball(&deb_tree.join("usr/src")).ok_or_else(|| GuestError::Package {
                package: spec.package.into(),
                detail: "has no usr/src/linux-source-*.tar.* source tarball".into(),
            })?;
        run(
            &format!("unpacking {} (package {})", tarball.display(), spec.package),
            Command::new("tar")
                .arg("-xf")
                .arg(&tarball)
                .arg("-C")
                .arg(src_parent),
        )?;
        std::fs::remove_dir_all(&deb_tree).map_err(io_err("remove", &deb_tree))?;
        single_subdir(src_parent).map(|_| ())
    };
    let prepared = area.prepare(
        spec.deb_sha256,
        &patches(spec.patch_dir)?,
        &mut unpack,
        progress,
    )?;
    let tree = area.tree()?;

    let out = area.out();
    let make = |args: &[&str]| {
        let mut c = Command::new("make");
        c.current_dir(&tree)
            .arg("ARCH=riscv")
            .arg("CROSS_COMPILE=riscv64-linux-gnu-")
            .arg(format!("O={}", out.display()))
            .args(args)
            // Fixed build identity: `uname -v` is guest-visible.
            .env("KBUILD_BUILD_TIMESTAMP", "Thu Jan  1 00:00:00 UTC 1970")
            .env("KBUILD_BUILD_USER", "hartscope")
            .env("KBUILD_BUILD_HOST", "hartscope")
            .env("KBUILD_BUILD_VERSION", "1")
            // Debug info names files as in the source tree wherever the cache is.
            .env(
                "KCFLAGS",
                format!(
                    "-ffile-prefix-map={}=. -ffile-prefix-map={}=.",
                    tree.display(),
                    out.display()
                ),
            )
            .env("LC_ALL", "C");
        c
    };
    progress(&format!(
        "kernel: configuring ({} + {})",
        spec.base,
        spec.fragment.display()
    ));
    run(
        &format!("kernel `make {}`", spec.base),
        &mut make(&[spec.base]),
    )?;
    let fragment_text =
        std::fs::read_to_string(spec.fragment).map_err(io_err("read", spec.fragment))?;
    let options = parse_fragment(&fragment_text);
    let dot_config = out.join(".config");
    for o in &options {
        let mut c = Command::new(tree.join("scripts/config"));
        c.arg("--file").arg(&dot_config);
        match o.value.as_str() {
            "y" => c.arg("-e").arg(&o.name),
            "n" => c.arg("-d").arg(&o.name),
            "m" => c.arg("-m").arg(&o.name),
            v if v.starts_with('"') => c.arg("--set-str").arg(&o.name).arg(v.trim_matches('"')),
            v => c.arg("--set-val").arg(&o.name).arg(v),
        };
        run(
            &format!("kernel scripts/config for CONFIG_{}", o.name),
            &mut c,
        )?;
    }
    run("kernel `make olddefconfig`", &mut make(&["olddefconfig"]))?;
    let config = std::fs::read_to_string(&dot_config).map_err(io_err("read", &dot_config))?;
    verify_config(&options, &config, spec.fragment)?;

    let jobs = format!(
        "-j{}",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
    );
    let kind = if prepared.unpacked {
        "from scratch, several minutes"
    } else {
        "incrementally: only what changed since the kept build"
    };
    progress(&format!(
        "kernel: building Image and vmlinux with make {jobs} ({kind})"
    ));
    let started = Instant::now();
    let log = work.join("kernel-build.log");
    let mut objects = 0usize;
    area.set_building(true)?;
    let built = run_logged(
        "building the kernel (make Image vmlinux)",
        &mut make(&[&jobs, "Image", "vmlinux"]),
        &log,
        &mut |line| {
            let t = line.trim_start();
            if t.starts_with("CC ") || t.starts_with("AS ") {
                objects += 1;
                if objects.is_multiple_of(250) {
                    progress(&format!(
                        "kernel: {objects} objects compiled, {} s",
                        started.elapsed().as_secs()
                    ));
                }
            } else if t.starts_with("LD      vmlinux")
                || t.starts_with("OBJCOPY")
                || t.starts_with("KSYMS")
            {
                progress(&format!("kernel: {t}"));
            }
        },
    );
    // make has stopped (a compile error leaves no half-written object).
    area.set_building(false)?;
    built.map_err(|e| keep_log(cache, "kernel", &log, e))?;
    let secs = started.elapsed().as_secs();
    progress(&format!(
        "kernel: built in {} min {} s ({objects} objects compiled)",
        secs / 60,
        secs % 60
    ));

    // BTF from the DWARF: task_struct field offsets for the profiler, the
    // same blob /sys/kernel/btf/vmlinux would give.
    progress("kernel: encoding BTF from vmlinux's DWARF (pahole)");
    let btf = work.join("btf");
    run(
        "encoding the kernel's BTF (pahole --btf_encode_detached)",
        Command::new("pahole")
            .arg(format!("--btf_encode_detached={}", btf.display()))
            .arg(out.join("vmlinux")),
    )?;
    let release_path = out.join("include/config/kernel.release");
    let release = std::fs::read_to_string(&release_path).map_err(io_err("read", &release_path))?;
    for (from, to) in [
        ("arch/riscv/boot/Image", "Image"),
        ("vmlinux", "vmlinux"),
        (".config", "config"),
    ] {
        let f = out.join(from);
        std::fs::copy(&f, work.join(to)).map_err(io_err("copy", &f))?;
    }
    std::fs::write(work.join("release"), release.trim()).map_err(io_err("write", work))?;
    std::fs::write(work.join("build-seconds"), secs.to_string()).map_err(io_err("write", work))?;
    // The tree and its objects stay in the area for the next (patched) build.
    let _ = std::fs::remove_file(work.join("kernel-build.log"));
    let _ = std::fs::remove_file(work.join("kernel-build.stderr"));
    staging.commit(&dest)?;
    done(&dest, Some(secs))
}

fn source_tarball(dir: &Path) -> Option<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|f| f.to_str())
                .is_some_and(|f| f.starts_with("linux-source-") && f.contains(".tar"))
        })
        .collect();
    v.sort();
    v.pop()
}

pub(crate) fn single_subdir(dir: &Path) -> Result<PathBuf> {
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io_err("list", dir))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    match subdirs.len() {
        1 => Ok(subdirs.remove(0)),
        n => Err(GuestError::Step {
            step: "unpacking the kernel source".into(),
            detail: format!(
                "expected one top-level directory in {}, found {n}",
                dir.display()
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragment_options_are_verified_against_the_final_config() {
        let opts = parse_fragment(
            "# c\nCONFIG_SMP=y\nCONFIG_NR_CPUS=8\nCONFIG_MODULES=n\nCONFIG_LOCALVERSION=\"-x\"\n",
        );
        assert_eq!(opts.len(), 4);
        let frag = Path::new("virt.config");
        let good = "CONFIG_SMP=y\nCONFIG_NR_CPUS=8\n# CONFIG_MODULES is not set\nCONFIG_LOCALVERSION=\"-x\"\n";
        verify_config(&opts, good, frag).unwrap();
        let dropped = "CONFIG_NR_CPUS=8\nCONFIG_LOCALVERSION=\"-x\"\n";
        let err = verify_config(&opts, dropped, frag).unwrap_err().to_string();
        assert!(
            err.contains("CONFIG_SMP") && err.contains("not set"),
            "{err}"
        );
        let unwanted =
            "CONFIG_SMP=y\nCONFIG_NR_CPUS=8\nCONFIG_MODULES=y\nCONFIG_LOCALVERSION=\"-x\"\n";
        let err = verify_config(&opts, unwanted, frag)
            .unwrap_err()
            .to_string();
        assert!(err.contains("CONFIG_MODULES"), "{err}");
    }
}
