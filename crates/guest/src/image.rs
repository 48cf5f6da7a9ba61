//! Building one image directory from its recipe, in a staging directory
//! that is renamed into place only when complete.

use std::path::Path;
use std::time::Duration;

use crate::error::{io_err, GuestError, Result};
use crate::lock::{self, role, LockedFile};
use crate::manifest::{self, Manifest, PackageEntry};
use crate::qemu::{
    canonical_module_addresses, capture_files, kallsyms_workload, parse_kallsyms, QemuBoot,
    CAPTURE_DISK_BYTES,
};
use crate::recipe::{KernelRecipe, LoadedRecipe, RECIPE_FORMAT};
use crate::rootfs::{base_archive, with_workload, BaseContents};
use crate::staging::Staging;
use crate::{busybox, cross, debian_kernel, firmware, kernel, Builder};

const KALLSYMS_TIMEOUT: Duration = Duration::from_secs(600);

fn copy(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(io_err("copy", from))
}

fn entry(f: &LockedFile, what: &str) -> PackageEntry {
    PackageEntry {
        name: f.package.clone(),
        version: f.version.clone(),
        sha256: f.sha256.clone(),
        role: what.into(),
        path: f.path.clone(),
        signed: Some(f.signed),
        verified: f.verified.clone(),
    }
}

pub fn build_image(
    b: &Builder,
    r: &LoadedRecipe,
    dest: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<()> {
    let recipe = &r.recipe;
    // Everything fetched is pinned by the lock; no package index is read.
    let lock = lock::read(&b.guest_dir, &r.name, &recipe.wants())?;
    for f in lock.unsigned() {
        progress(&format!(
            "note: {} {} is locked unverified ({})",
            f.package, f.version, f.verified
        ));
    }
    let archives = b.archives();
    let images = dest.parent().unwrap_or(dest);
    let staging = Staging::new(images, &format!("{}-{}", r.name, r.short_hash()))?;
    let out = staging.path();
    let work = out.join("work");
    std::fs::create_dir_all(&work).map_err(io_err("create directory", &work))?;
    let mut packages = Vec::new();

    // Firmware, built from source so its ELF files have symbols
    let fw_src = lock.one(&b.guest_dir, role::FIRMWARE_SOURCE)?;
    let tarball = archives.fetch(fw_src, &r.name)?;
    let fw = firmware::ensure(&b.cache, fw_src, &tarball, progress)?;
    for f in firmware::FIRMWARE_FILES {
        copy(&fw.dir.join(f), &out.join(f))?;
    }
    packages.push(entry(
        fw_src,
        "firmware source: OpenSBI upstream tarball, built PLATFORM=generic",
    ));

    // Userland
    let bb_files = lock.files_of(role::BUSYBOX_SOURCE);
    let bb = busybox::ensure(
        &b.cache,
        &b.guest_dir,
        &archives,
        &r.name,
        &bb_files,
        progress,
    )?;
    copy(&bb.binary, &out.join("busybox"))?;
    for f in &bb_files {
        packages.push(entry(f, "busybox source, built static and unstripped"));
    }
    progress("guest programs: compiling hsmark and the workloads");
    let programs = cross::build_programs(&b.guest_dir, &out.join("programs"))?;

    // Kernel
    let mut modules = Vec::new();
    let mut builtin = Vec::new();
    let mut build_seconds = None;
    let (release, config, symbols) = match &recipe.kernel {
        KernelRecipe::DebianPackage {
            modules: wanted, ..
        } => {
            let k = lock.one(&b.guest_dir, role::KERNEL)?;
            progress(&format!("kernel: {} {} (fetching)", k.package, k.version));
            let deb = archives.fetch(k, &r.name)?;
            let dk = debian_kernel::extract(&deb, &k.package, &work.join("kernel"), wanted)?;
            copy(&dk.image, &out.join("Image"))?;
            copy(&dk.config, &out.join("config"))?;
            packages.push(entry(k, "kernel"));
            progress(&format!(
                "kernel {}: {} modules to load ({} requested ones are built in)",
                dk.release,
                dk.modules.len(),
                dk.builtin.len()
            ));
            modules = dk.modules;
            builtin = dk.builtin;
            (dk.release, out.join("config"), "kallsyms")
        }
        KernelRecipe::LinuxSource {
            package,
            base,
            config,
            patches,
            ..
        } => {
            let src = lock.one(&b.guest_dir, role::KERNEL_SOURCE)?;
            let deb = archives.fetch(src, &r.name)?;
            let spec = kernel::KernelSpec {
                package,
                deb: &deb,
                deb_sha256: &src.sha256,
                base,
                fragment: &b.guest_dir.join(config),
                patch_dir: &b.guest_dir.join(patches),
            };
            let k = kernel::ensure(&b.cache, &spec, progress)?;
            copy(&k.image, &out.join("Image"))?;
            copy(&k.vmlinux, &out.join("vmlinux"))?;
            copy(&k.btf, &out.join("btf"))?;
            copy(&k.config, &out.join("config"))?;
            build_seconds = k.build_seconds.or_else(|| {
                std::fs::read_to_string(k.image.with_file_name("build-seconds"))
                    .ok()?
                    .trim()
                    .parse()
                    .ok()
            });
            packages.push(entry(
                src,
                "kernel source (its usr/src tarball), patched and built",
            ));
            (k.release, out.join("config"), "vmlinux")
        }
    };
    let config_text = std::fs::read_to_string(&config).map_err(io_err("read", &config))?;
    let mut append = recipe.append.clone();
    if debian_kernel::has_kaslr(&config_text) && !append.split_whitespace().any(|w| w == "nokaslr")
    {
        append.push_str(" nokaslr");
    }

    // Extras: programs from Debian binary packages, with what they load.
    let mut extras = Vec::new();
    if let Some(x) = &recipe.extras {
        let mut debs = Vec::new();
        for f in lock.files_of(role::EXTRA) {
            debs.push((f.package.clone(), archives.fetch(f, &r.name)?));
            packages.push(entry(f, "extra: files installed with their libraries"));
        }
        extras = crate::extras::collect(&r.name, &debs, &x.files, &work.join("extras"))?;
        progress(&format!(
            "extras: {} ({} files with loader and libraries, {} bytes)",
            x.files.join(", "),
            extras.len(),
            extras.iter().map(|f| f.data.len()).sum::<usize>()
        ));
    }

    // Initramfs
    let base = base_archive(&BaseContents {
        agent: &b.guest_dir.join("agent/init"),
        busybox: &out.join("busybox"),
        programs: &programs,
        modules: &modules,
        kernel_release: &release,
        identity: format!("image={}\nrecipe={}\nkernel={release}\n", r.name, r.hash),
        extras: &extras,
    })?;
    std::fs::write(out.join("initrd"), &base).map_err(io_err("write", out.join("initrd")))?;
    progress(&format!("initramfs: {} bytes", base.len()));

    if symbols == "kallsyms" {
        capture_kallsyms(b, r, out, &base, &append, progress)?;
    }

    std::fs::remove_dir_all(&work).map_err(io_err("remove", &work))?;
    let m = Manifest {
        name: r.name.clone(),
        recipe_format: RECIPE_FORMAT.into(),
        recipe_hash: r.hash.clone(),
        description: recipe.description.clone(),
        kernel_release: release,
        default_append: append,
        symbols: symbols.into(),
        packages,
        unverified: lock
            .unsigned()
            .iter()
            .map(|f| format!("{} {}: {}", f.package, f.version, f.verified))
            .collect(),
        modules: modules.iter().map(|(n, _)| n.clone()).collect(),
        builtin_modules: builtin,
        kernel_build_seconds: build_seconds,
        files: manifest::hash_files(out)?,
    };
    manifest::write(out, &m)?;
    staging.commit(dest)?;
    progress(&format!("image `{}`: ready", r.name));
    Ok(())
}

/// Boots the image once under QEMU with a workload that prints
/// /proc/kallsyms, so runs can name kernel addresses without paying for it.
fn capture_kallsyms(
    b: &Builder,
    r: &LoadedRecipe,
    out: &Path,
    base: &[u8],
    append: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<()> {
    let work = out.join("work");
    let script = work.join("kallsyms.sh");
    std::fs::write(&script, kallsyms_workload()).map_err(io_err("write", &script))?;
    let initrd = work.join("kallsyms-initrd");
    std::fs::write(&initrd, with_workload(base, &script)?).map_err(io_err("write", &initrd))?;
    let logs = b.cache.join("logs");
    std::fs::create_dir_all(&logs).map_err(io_err("create directory", &logs))?;
    let console_log = logs.join(format!("{}-kallsyms-console.log", r.name));
    let disk = work.join("capture-disk");
    let f = std::fs::File::create(&disk).map_err(io_err("create", &disk))?;
    f.set_len(CAPTURE_DISK_BYTES)
        .map_err(io_err("size", &disk))?;
    drop(f);
    progress("kallsyms: booting the image under qemu-system-riscv64 to capture /proc/kallsyms and the BTF");
    // Quiet console: kernel messages must not interleave with the sizes line.
    let boot = QemuBoot {
        firmware: &out.join("fw_jump.bin"),
        kernel: &out.join("Image"),
        initrd: &initrd,
        append: &format!("{append} quiet loglevel=0"),
        smp: 2,
        memory_mib: 512,
        timeout: KALLSYMS_TIMEOUT,
        console_log: console_log.clone(),
        disk: Some(&disk),
        user_net: false,
    };
    let result = boot.run()?;
    let fail = |what: &str, why: String| GuestError::Step {
        step: format!(
            "capturing {what} of image `{}` under qemu-system-riscv64",
            r.name
        ),
        detail: format!(
            "{why}{}; console output is in {}",
            if result.exited { "" } else { " (timed out)" },
            console_log.display()
        ),
    };
    let disk_data = std::fs::read(&disk).map_err(io_err("read", &disk))?;
    let [kallsyms, modules, btf] =
        capture_files(&result.console, &disk_data).map_err(|why| fail("/proc/kallsyms", why))?;
    let text = parse_kallsyms(&String::from_utf8_lossy(&kallsyms))
        .map_err(|why| fail("/proc/kallsyms", why))?;
    let modules = String::from_utf8_lossy(&modules).into_owned();
    progress(&format!("kallsyms: {} symbols", text.lines().count()));
    // Module symbols at fixed bases, so every capture gives the same files;
    // kallsyms-modules says where, for relocating to each run's bases.
    let (text, modules) =
        canonical_module_addresses(&text, &modules).map_err(|why| GuestError::Step {
            step: format!("reading /proc/modules of image `{}`", r.name),
            detail: format!("{why}; console output is in {}", console_log.display()),
        })?;
    std::fs::write(out.join("kallsyms"), text).map_err(io_err("write", out.join("kallsyms")))?;
    let path = out.join("kallsyms-modules");
    std::fs::write(&path, modules).map_err(io_err("write", &path))?;
    // The kernel's BTF.
    if btf.len() < 24 || btf[..2] != [0x9f, 0xeb] {
        return Err(fail(
            "/sys/kernel/btf/vmlinux",
            "the copied data does not start with the BTF magic 0xeB9F".into(),
        ));
    }
    let btf_size = btf.len();
    progress(&format!("btf: {btf_size} bytes"));
    std::fs::write(out.join("btf"), &btf).map_err(io_err("write", out.join("btf")))?;
    let _ = std::fs::remove_file(&console_log);
    Ok(())
}
