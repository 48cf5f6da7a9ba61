//! Tests of the builder that need no network and no cross toolchain.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::cpio::read_archives;
use crate::lock::role;
use crate::manifest::{self, Manifest};
use crate::{Builder, GuestError, KernelSymbols};

/// A temporary directory removed when the test ends, passing or failing.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

fn scratch(tag: &str) -> Scratch {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "hs-guest-test-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A copy of the real recipe tree (guest/), so tests can change files.
fn guest_copy() -> Scratch {
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../guest");
    let dir = scratch("guest");
    copy_tree(&real, &dir);
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

fn builder(guest_dir: &Path, cache: &Path, mirror: &str) -> Builder {
    Builder {
        cache: cache.to_path_buf(),
        guest_dir: guest_dir.to_path_buf(),
        mirror: mirror.into(),
        security_mirror: mirror.into(),
        keyring: crate::DEFAULT_KEYRING.into(),
    }
}

#[test]
fn recipe_hash_follows_the_files_the_image_is_made_of() {
    let g = guest_copy();
    let b = builder(&g, &scratch("cache"), crate::DEFAULT_MIRROR);
    let debian = b.recipe_hash("debian").unwrap();
    let custom = b.recipe_hash("custom").unwrap();
    assert_ne!(debian, custom);
    assert_eq!(
        debian,
        b.recipe_hash("debian").unwrap(),
        "hashing is repeatable"
    );

    // A host-supplied workload script is not part of any image.
    write(&g.join("workloads/p87-shell/run.sh"), "echo changed\n");
    assert_eq!(b.recipe_hash("debian").unwrap(), debian);

    // The agent is part of every image.
    let agent = std::fs::read_to_string(g.join("agent/init")).unwrap();
    write(&g.join("agent/init"), &format!("{agent}\n# changed\n"));
    let debian2 = b.recipe_hash("debian").unwrap();
    assert_ne!(debian2, debian);
    assert_ne!(b.recipe_hash("custom").unwrap(), custom);

    // A workload program, the kernel config and a new patch change the hash.
    write(
        &g.join("workloads/extra.c"),
        "int main(void) { return 0; }\n",
    );
    let debian3 = b.recipe_hash("debian").unwrap();
    assert_ne!(debian3, debian2);
    let custom3 = b.recipe_hash("custom").unwrap();
    let cfg = std::fs::read_to_string(g.join("kernel/virt.config")).unwrap();
    write(
        &g.join("kernel/virt.config"),
        &format!("{cfg}CONFIG_EXT2_FS=y\n"),
    );
    let custom4 = b.recipe_hash("custom").unwrap();
    assert_ne!(custom4, custom3);
    assert_eq!(
        b.recipe_hash("debian").unwrap(),
        debian3,
        "the kernel config is not an input of `debian`"
    );
    write(&g.join("kernel/patches/0001-x.patch"), "--- a/x\n+++ b/x\n");
    assert_ne!(b.recipe_hash("custom").unwrap(), custom4);

    // The recipe file itself.
    let toml = std::fs::read_to_string(g.join("images/debian.toml")).unwrap();
    write(
        &g.join("images/debian.toml"),
        &toml.replace("console=ttyS0", "console=hvc0"),
    );
    let debian4 = b.recipe_hash("debian").unwrap();
    assert_ne!(debian4, debian3);

    // The lock: another locked version is another image.
    let lock = std::fs::read_to_string(g.join("images/debian.lock")).unwrap();
    assert!(
        lock.contains("version = \"6.12.117-1\""),
        "the test expects the committed lock"
    );
    write(
        &g.join("images/debian.lock"),
        &lock.replace("version = \"6.12.117-1\"", "version = \"6.12.118-1\""),
    );
    assert_ne!(b.recipe_hash("debian").unwrap(), debian4);
}

#[test]
fn a_build_needs_a_lock_that_fits_the_recipe() {
    let g = guest_copy();
    let cache = scratch("cache");
    let b = builder(&g, &cache, "http://127.0.0.1:9/debian");
    // A recipe asking for another kernel package than the lock pins.
    let toml = std::fs::read_to_string(g.join("images/debian.toml")).unwrap();
    write(
        &g.join("images/debian.toml"),
        &toml.replace("\"linux-image-riscv64\"", "\"linux-image-rt-riscv64\""),
    );
    let msg = b.build("debian", &mut |_| {}).unwrap_err().to_string();
    assert!(
        msg.contains("debian.lock")
            && msg.contains("linux-image-rt-riscv64")
            && msg.contains("hartscope guest lock --image debian"),
        "{msg}"
    );
    std::fs::remove_file(g.join("images/debian.lock")).unwrap();
    let msg = b.build("debian", &mut |_| {}).unwrap_err().to_string();
    assert!(
        msg.contains("does not exist") && msg.contains("hartscope guest lock --image debian"),
        "{msg}"
    );
    assert!(
        !cache.join("images").exists()
            || std::fs::read_dir(cache.join("images"))
                .unwrap()
                .next()
                .is_none()
    );
}

#[test]
fn relocking_keeps_the_pins_of_unchanged_wants() {
    let g = guest_copy();
    let cache = scratch("cache");
    // An unreachable mirror: whatever is resolved anew fails, so success
    // means every kept file came from the old lock.
    let b = builder(&g, &cache, "http://127.0.0.1:9/debian");
    let old = crate::lock::read_any(&g, "debian").unwrap();
    assert!(old.files.iter().any(|f| f.role == role::EXTRA));
    let toml = std::fs::read_to_string(g.join("images/debian.toml")).unwrap();
    let without = &toml[..toml.find("[extras]").expect("the debian recipe has extras")];
    write(&g.join("images/debian.toml"), without);
    let (new, changed) = b.lock("debian", false, false, &mut |_| {}).unwrap();
    assert!(changed);
    let others: Vec<_> = old
        .files
        .iter()
        .filter(|f| f.role != role::EXTRA)
        .cloned()
        .collect();
    assert_eq!(new.files, others);
    assert_eq!(new.wants.len(), old.wants.len() - 1);
    // --update resolves everything again, so it needs the mirror.
    assert!(b.lock("debian", true, false, &mut |_| {}).is_err());
}

#[test]
fn unknown_and_unbuilt_images_are_one_clear_sentence() {
    let g = guest_copy();
    let b = builder(&g, &scratch("cache"), crate::DEFAULT_MIRROR);
    let err = b.find("nope").unwrap_err();
    assert!(matches!(err, GuestError::UnknownImage { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("`nope`") && msg.contains("`custom`") && msg.contains("`debian`"),
        "{msg}"
    );
    assert!(
        b.build("../debian", &mut |_| {}).is_err(),
        "names cannot escape guest/images"
    );

    let msg = b.find("custom").unwrap_err().to_string();
    assert!(
        msg.contains("hartscope guest build --image custom"),
        "{msg}"
    );

    write(&g.join("images/broken.toml"), "description = 3\n");
    let msg = b.find("broken").unwrap_err().to_string();
    assert!(
        msg.contains("broken.toml") && msg.contains("invalid"),
        "{msg}"
    );
}

/// `base = "debian"`: a recipe that starts from another takes its kernel,
/// firmware and command line, replaces what it names, and is rebuilt when
/// the base recipe changes; the base's own hash does not depend on it.
#[test]
fn a_recipe_based_on_another_merges_it_and_follows_its_changes() {
    let g = guest_copy();
    let b = builder(&g, &scratch("cache"), crate::DEFAULT_MIRROR);
    let debian = b.recipe_hash("debian").unwrap();
    let perf = crate::recipe::load(&g, "debian-perf").unwrap();
    let plain = crate::recipe::load(&g, "debian").unwrap();
    assert_eq!(perf.bases, vec!["debian".to_string()]);
    assert_eq!(perf.recipe.append, plain.recipe.append);
    assert_eq!(perf.recipe.source_suite, plain.recipe.source_suite);
    assert_eq!(
        perf.recipe.wants()[..3],
        plain.recipe.wants()[..3],
        "the same kernel, firmware and BusyBox wants"
    );
    let extras = perf.recipe.extras.as_ref().unwrap();
    assert!(extras.files.contains(&"/usr/bin/perf".to_string()));
    assert_ne!(perf.hash, debian);

    // Changing the derived recipe leaves the base's image alone ...
    let text = std::fs::read_to_string(g.join("images/debian-perf.toml")).unwrap();
    write(
        &g.join("images/debian-perf.toml"),
        &format!("{text}\n# changed\n"),
    );
    assert_eq!(b.recipe_hash("debian").unwrap(), debian);
    let perf2 = b.recipe_hash("debian-perf").unwrap();
    assert_ne!(perf2, perf.hash);
    // ... and changing the base rebuilds the derived image too.
    let base = std::fs::read_to_string(g.join("images/debian.toml")).unwrap();
    write(
        &g.join("images/debian.toml"),
        &base.replace("cryptomgr.notests=1", "cryptomgr.notests=1 quiet"),
    );
    assert_ne!(b.recipe_hash("debian-perf").unwrap(), perf2);
    let merged = crate::recipe::load(&g, "debian-perf").unwrap();
    assert!(
        merged.recipe.append.ends_with(" quiet"),
        "{}",
        merged.recipe.append
    );

    // A key of the derived recipe replaces the base's; tables merge by key.
    write(
        &g.join("images/x1.toml"),
        "base = \"debian\"\nappend = \"console=hvc0\"\n[kernel]\nmodules = []\n",
    );
    let x1 = crate::recipe::load(&g, "x1").unwrap();
    assert_eq!(x1.recipe.append, "console=hvc0");
    match &x1.recipe.kernel {
        crate::recipe::KernelRecipe::DebianPackage {
            package, modules, ..
        } => {
            assert_eq!(package, "linux-image-riscv64");
            assert!(modules.is_empty());
        }
        other => panic!("{other:?}"),
    }

    // Bad bases are one sentence naming the file and the key.
    write(&g.join("images/x2.toml"), "base = \"nope\"\n");
    let msg = b.recipe_hash("x2").unwrap_err().to_string();
    assert!(
        msg.contains("x2.toml") && msg.contains("key `base`: no image recipe `nope`"),
        "{msg}"
    );
    write(&g.join("images/x3.toml"), "base = \"x4\"\n");
    write(&g.join("images/x4.toml"), "base = \"x3\"\n");
    let msg = b.recipe_hash("x3").unwrap_err().to_string();
    assert!(
        msg.contains("x4.toml") && msg.contains("in a loop"),
        "{msg}"
    );
    write(&g.join("images/x5.toml"), "base = 3\n");
    let msg = b.recipe_hash("x5").unwrap_err().to_string();
    assert!(
        msg.contains("key `base`") && msg.contains("integer"),
        "{msg}"
    );
}

#[test]
fn unreachable_mirror_fails_clearly_and_leaves_nothing_behind() {
    let g = guest_copy();
    let cache = scratch("cache");
    // Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    let b = builder(&g, &cache, "http://127.0.0.1:9/debian");
    let mut lines = Vec::new();
    let err = b
        .build("debian", &mut |l| lines.push(l.to_string()))
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("fetching http://127.0.0.1:9/debian/pool/"),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "one line: {msg}");
    let images = cache.join("images");
    let left: Vec<_> = std::fs::read_dir(&images)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(matches!(b.find("debian"), Err(GuestError::NotBuilt { .. })));
}

#[test]
fn manifest_round_trips_and_find_uses_it() {
    let g = guest_copy();
    let cache = scratch("cache");
    let b = builder(&g, &cache, crate::DEFAULT_MIRROR);
    let hash = b.recipe_hash("debian").unwrap();
    let dir = cache.join("images").join(format!("debian-{}", &hash[..16]));
    for f in [
        "fw_jump.bin",
        "fw_dynamic.bin",
        "Image",
        "initrd",
        "busybox",
        "kallsyms",
    ] {
        write(&dir.join(f), f);
    }
    write(&dir.join("programs/hsmark"), "elf");
    let m = Manifest {
        name: "debian".into(),
        recipe_format: crate::RECIPE_FORMAT.into(),
        recipe_hash: hash.clone(),
        description: "test".into(),
        kernel_release: "6.12.0-test".into(),
        default_append: "console=ttyS0".into(),
        symbols: "kallsyms".into(),
        packages: vec![],
        unverified: vec![],
        modules: vec!["virtio_mmio".into()],
        builtin_modules: vec![],
        kernel_build_seconds: None,
        files: manifest::hash_files(&dir).unwrap(),
    };
    assert_eq!(m.files.len(), 7);
    assert_eq!(m.files["Image"], crate::recipe::sha256_hex(b"Image"));
    assert!(m.files.contains_key("programs/hsmark"));
    manifest::write(&dir, &m).unwrap();
    assert_eq!(manifest::read(&dir).unwrap(), m);

    let image = b.find("debian").unwrap();
    assert_eq!(image.dir, dir);
    assert_eq!(image.default_append, "console=ttyS0");
    assert_eq!(image.symbols, KernelSymbols::Kallsyms(dir.join("kallsyms")));
    assert_eq!(image.firmware, dir.join("fw_jump.bin"));
    assert_eq!(image.firmware_elf, None);
    assert_eq!(image.read_manifest().unwrap().kernel_release, "6.12.0-test");
    // A cache hit builds nothing and reports it.
    let mut lines = Vec::new();
    let again = b
        .build("debian", &mut |l| lines.push(l.to_string()))
        .unwrap();
    assert_eq!(again.dir, dir);
    assert!(lines.iter().any(|l| l.contains("up to date")), "{lines:?}");
}

#[test]
fn workload_archives_are_appended_and_reproducible() {
    let dir = scratch("workload");
    let base_entries = vec![crate::cpio::Entry::file(
        "init",
        0o755,
        b"#!/bin/sh\n".to_vec(),
    )];
    let mut base = Vec::new();
    crate::cpio::write_archive(&mut base, &base_entries).unwrap();

    let script = dir.join("one.sh");
    write(&script, "echo hi\nexit 3\n");
    let a = crate::rootfs::with_workload(&base, &script).unwrap();
    let b = crate::rootfs::with_workload(&base, &script).unwrap();
    assert_eq!(a, b);
    assert!(a.starts_with(&base));
    let names: Vec<_> = read_archives(&a)
        .unwrap()
        .into_iter()
        .map(|e| (e.name, e.mode, e.data))
        .collect();
    assert_eq!(
        names[1..],
        [
            ("workload".to_string(), 0o040755, vec![]),
            (
                "workload/run.sh".to_string(),
                0o100755,
                b"echo hi\nexit 3\n".to_vec()
            ),
        ]
    );

    let wdir = dir.join("tree");
    write(&wdir.join("run.sh"), "cat data/x.txt\n");
    write(&wdir.join("data/x.txt"), "payload\n");
    let t = crate::rootfs::with_workload(&base, &wdir).unwrap();
    let parsed = read_archives(&t).unwrap();
    let names: Vec<_> = parsed.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "init",
            "workload",
            "workload/data",
            "workload/data/x.txt",
            "workload/run.sh"
        ]
    );
    assert_eq!(parsed[3].mode, 0o100644);
    assert_eq!(parsed[4].mode, 0o100755);

    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let msg = crate::rootfs::with_workload(&base, &empty)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("run.sh") && msg.contains("empty"), "{msg}");
    let msg = crate::rootfs::with_workload(&base, &dir.join("missing"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("missing"), "{msg}");
}
