//! Building one image directory from its recipe, in a staging directory
//! that is renamed into place only when complete.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::apt::{Apt, BinaryPackage};
use crate::error::{io_err, GuestError, Result};
use crate::manifest::{self, Manifest, PackageEntry};
use crate::process::run;
use crate::qemu::{between, kallsyms_workload, parse_kallsyms, QemuBoot, MODULES_BEGIN, MODULES_END};
use crate::recipe::{sha256_hex, KernelRecipe, LoadedRecipe, RECIPE_FORMAT};
use crate::rootfs::{base_archive, with_workload, BaseContents};
use crate::staging::Staging;
use crate::{busybox, cross, debian_kernel, kernel, Builder};

const FIRMWARE_DIR: &str = "usr/lib/riscv64-linux-gnu/opensbi/generic";
const FIRMWARE_FILES: &[&str] = &["fw_jump.bin", "fw_dynamic.bin", "fw_jump.elf", "fw_dynamic.elf"];
const KALLSYMS_TIMEOUT: Duration = Duration::from_secs(600);

fn copy(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to).map(|_| ()).map_err(io_err("copy", from))
}

fn entry(p: &BinaryPackage, role: &str) -> PackageEntry {
    PackageEntry { name: p.name.clone(), version: p.version.clone(), sha256: p.sha256.clone(), role: role.into() }
}

pub fn build_image(b: &Builder, r: &LoadedRecipe, dest: &Path, progress: &mut dyn FnMut(&str)) -> Result<()> {
    let images = dest.parent().unwrap_or(dest);
    let staging = Staging::new(images, &format!("{}-{}", r.name, r.short_hash()))?;
    let out = staging.path();
    let work = out.join("work");
    std::fs::create_dir_all(&work).map_err(io_err("create directory", &work))?;
    let recipe = &r.recipe;
    let mut packages = Vec::new();

    let apt = Apt::new(&b.cache, &b.mirror, &recipe.binary_suite, &recipe.source_suite)?;
    progress(&format!("package index: {} riscv64 and {} sources from {}", recipe.binary_suite, recipe.source_suite, b.mirror));
    apt.update()?;

    // Firmware
    let fw = apt.show(&recipe.firmware_package)?;
    progress(&format!("firmware: {} {}", fw.name, fw.version));
    let fw_deb = apt.download(&fw)?;
    let fw_tree = work.join("firmware");
    run(
        &format!("unpacking package `{}` (dpkg-deb -x)", fw.name),
        Command::new("dpkg-deb").arg("-x").arg(&fw_deb).arg(&fw_tree),
    )?;
    for f in FIRMWARE_FILES {
        let from = fw_tree.join(FIRMWARE_DIR).join(f);
        if !from.is_file() {
            return Err(GuestError::Package { package: fw.name.clone(), detail: format!("has no {FIRMWARE_DIR}/{f}") });
        }
        copy(&from, &out.join(f))?;
    }
    packages.push(entry(&fw, "firmware"));

    // Userland
    let bb = busybox::ensure(&b.cache, &b.guest_dir, &apt, &recipe.source_suite, progress)?;
    copy(&bb.binary, &out.join("busybox"))?;
    packages.push(PackageEntry {
        name: "busybox".into(),
        version: bb.version.clone(),
        sha256: sha256_hex(&std::fs::read(&bb.binary).map_err(io_err("read", &bb.binary))?),
        role: format!("busybox source ({}), built static and unstripped; sha256 is of the binary", recipe.source_suite),
    });
    progress("guest programs: compiling hsmark and the workloads");
    let programs = cross::build_programs(&b.guest_dir, &out.join("programs"))?;

    // Kernel
    let mut modules = Vec::new();
    let mut builtin = Vec::new();
    let mut build_seconds = None;
    let (release, config, symbols) = match &recipe.kernel {
        KernelRecipe::DebianPackage { package, modules: wanted } => {
            let mut pkg = apt.show(package)?;
            // A metapackage (linux-image-riscv64) depends on the versioned package that has the kernel.
            if let Some(real) = pkg.depends.iter().find(|d| d.starts_with("linux-image-")).cloned() {
                pkg = apt.show(&real)?;
            }
            progress(&format!("kernel: {} {} (downloading)", pkg.name, pkg.version));
            let deb = apt.download(&pkg)?;
            let k = debian_kernel::extract(&deb, &pkg.name, &work.join("kernel"), wanted)?;
            copy(&k.image, &out.join("Image"))?;
            copy(&k.config, &out.join("config"))?;
            packages.push(entry(&pkg, "kernel"));
            progress(&format!(
                "kernel {}: {} modules to load ({} requested ones are built in)",
                k.release,
                k.modules.len(),
                k.builtin.len()
            ));
            modules = k.modules;
            builtin = k.builtin;
            (k.release, out.join("config"), "kallsyms")
        }
        KernelRecipe::LinuxSource { package, tarball, base, config, patches } => {
            let spec = kernel::KernelSpec {
                package,
                tarball,
                base,
                fragment: &b.guest_dir.join(config),
                patch_dir: &b.guest_dir.join(patches),
            };
            let k = kernel::ensure(&b.cache, &spec, progress)?;
            copy(&k.image, &out.join("Image"))?;
            copy(&k.vmlinux, &out.join("vmlinux"))?;
            copy(&k.config, &out.join("config"))?;
            build_seconds = k.build_seconds.or_else(|| {
                std::fs::read_to_string(k.image.with_file_name("build-seconds")).ok()?.trim().parse().ok()
            });
            let version = Command::new("dpkg-query")
                .args(["-W", "-f=${Version}", package])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_else(|| "unknown".into());
            packages.push(PackageEntry {
                name: package.clone(),
                version,
                sha256: String::new(),
                role: format!("kernel source ({})", tarball.display()),
            });
            (k.release, out.join("config"), "vmlinux")
        }
    };
    let config_text = std::fs::read_to_string(&config).map_err(io_err("read", &config))?;
    let mut append = recipe.append.clone();
    if debian_kernel::has_kaslr(&config_text) && !append.split_whitespace().any(|w| w == "nokaslr") {
        append.push_str(" nokaslr");
    }

    // Initramfs
    let base = base_archive(&BaseContents {
        agent: &b.guest_dir.join("agent/init"),
        busybox: &out.join("busybox"),
        programs: &programs,
        modules: &modules,
        identity: format!("image={}\nrecipe={}\nkernel={release}\n", r.name, r.hash),
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
    progress("kallsyms: booting the image under qemu-system-riscv64 to capture /proc/kallsyms");
    // Quiet console: kernel messages must not interleave with the symbol lines.
    let boot = QemuBoot {
        firmware: &out.join("fw_jump.bin"),
        kernel: &out.join("Image"),
        initrd: &initrd,
        append: &format!("{append} quiet loglevel=0"),
        smp: 2,
        memory_mib: 512,
        timeout: KALLSYMS_TIMEOUT,
        console_log: console_log.clone(),
    };
    let result = boot.run()?;
    let text = parse_kallsyms(&result.console).map_err(|why| GuestError::Step {
        step: format!("capturing /proc/kallsyms of image `{}` under qemu-system-riscv64", r.name),
        detail: format!(
            "{why}{}; console output is in {}",
            if result.exited { "" } else { " (timed out)" },
            console_log.display()
        ),
    })?;
    let modules = between(&result.console, MODULES_BEGIN, MODULES_END).map_err(|why| GuestError::Step {
        step: format!("capturing /proc/modules of image `{}` under qemu-system-riscv64", r.name),
        detail: format!("{why}; console output is in {}", console_log.display()),
    })?;
    progress(&format!("kallsyms: {} symbols", text.lines().count()));
    std::fs::write(out.join("kallsyms"), text).map_err(io_err("write", out.join("kallsyms")))?;
    // Module load addresses at capture time: module symbols move from boot to boot.
    let path = out.join("kallsyms-modules");
    std::fs::write(&path, modules).map_err(io_err("write", &path))?;
    let _ = std::fs::remove_file(&console_log);
    Ok(())
}
