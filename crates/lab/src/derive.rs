//! Images derived for a study's kernel patch series or config fragment: a
//! guest recipe directory that shares everything with the real one (by
//! symlinks) except a recipe whose patch series is the image's own followed
//! by the study's, and whose config fragment is the image's own followed by
//! the study's. hs-guest then builds it like any image, cached by its recipe hash.

use std::path::{Path, PathBuf};

use hs_guest::{Builder, ImageDir};

use crate::error::{io_err, LabError, Result};

/// Directories of the guest tree a derived recipe shares unchanged.
const SHARED: &[&str] = &["agent", "hsmark", "busybox", "workloads", "kernel"];
const SERIES_DIR: &str = "study-patches";
const CONFIG_FILE: &str = "study.config";

/// The patch files of a series directory, by name.
fn series(dir: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io_err("list", dir))? {
        let e = e.map_err(io_err("list", dir))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".patch") {
            out.push((
                name,
                std::fs::read(e.path()).map_err(io_err("read", &e.path()))?,
            ));
        }
    }
    out.sort();
    Ok(out)
}

/// Make `dir`'s links to the shared parts of the guest tree point at
/// `guest_dir`'s, where they point elsewhere or nowhere (a derived tree is
/// cached by its recipe alone, so another checkout may have made it). A
/// link is replaced by renaming a new one over it, so a process reading
/// the tree meanwhile sees one or the other.
fn link_shared(guest_dir: &Path, dir: &Path) -> Result<()> {
    for d in SHARED {
        let src = guest_dir.join(d);
        if !src.exists() {
            continue;
        }
        let src = src.canonicalize().map_err(io_err("resolve", &src))?;
        let link = dir.join(d);
        if std::fs::read_link(&link).is_ok_and(|to| to == src) {
            continue;
        }
        let fresh = dir.join(format!(".{d}.link{}", std::process::id()));
        let _ = std::fs::remove_file(&fresh);
        std::os::unix::fs::symlink(&src, &fresh).map_err(io_err("create link", &fresh))?;
        std::fs::rename(&fresh, &link).map_err(io_err("replace link", &link))?;
    }
    Ok(())
}

/// Write (or find) the derived guest directory for `base` with a study's
/// `patches` and/or `config` fragment; returns it and the derived image's name.
pub fn derive_guest_dir(
    b: &Builder,
    base: &str,
    patches: Option<&Path>,
    config: Option<&Path>,
) -> Result<(PathBuf, String)> {
    let img_err = |message: String| LabError::Image {
        image: base.to_string(),
        message,
    };
    let recipe_path = b.guest_dir.join("images").join(format!("{base}.toml"));
    let text = std::fs::read_to_string(&recipe_path).map_err(io_err("read", &recipe_path))?;
    let mut recipe: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        img_err(format!("{}: {}", recipe_path.display(), e.message()))
    })?;
    let kernel = recipe
        .get_mut("kernel")
        .and_then(|k| k.as_table_mut())
        .ok_or_else(|| img_err("the recipe has no [kernel] table".into()))?;
    if kernel.get("source").and_then(|s| s.as_str()) != Some("linux-source") {
        return Err(img_err("its kernel is not built from source, so a patch series or config fragment cannot apply".into()));
    }
    let mut key = format!("{base}\0");
    // The base image's lock pins the same sources for the derived image.
    let lock_path = b.guest_dir.join("images").join(format!("{base}.lock"));
    let lock_text = std::fs::read_to_string(&lock_path).ok();
    if let Some(l) = &lock_text {
        key.push_str(&format!("lock {}\0", crate::sha256_hex(l.as_bytes())));
    }

    let mut series_files: Option<Vec<(String, Vec<u8>)>> = None;
    if let Some(patches) = patches {
        let own_dir = kernel
            .get("patches")
            .and_then(|p| p.as_str())
            .map(|p| b.guest_dir.join(p));
        let own = match &own_dir {
            Some(d) if d.is_dir() => series(d)?,
            _ => Vec::new(),
        };
        let study = series(patches)?;
        if study.is_empty() {
            return Err(img_err(format!(
                "{} holds no *.patch files",
                patches.display()
            )));
        }
        let mut all: Vec<(String, Vec<u8>)> = own
            .into_iter()
            .map(|(n, d)| (format!("0-image-{n}"), d))
            .collect();
        all.extend(study.into_iter().map(|(n, d)| (format!("1-study-{n}"), d)));
        for (n, d) in &all {
            key.push_str(&format!("patch {n} {}\0", crate::sha256_hex(d)));
        }
        kernel.insert("patches".into(), toml::Value::String(SERIES_DIR.into()));
        series_files = Some(all);
    }

    let mut fragment: Option<String> = None;
    if let Some(config) = config {
        let own_rel = kernel
            .get("config")
            .and_then(|c| c.as_str())
            .ok_or_else(|| img_err("the recipe's kernel has no config fragment".into()))?;
        let own_path = b.guest_dir.join(own_rel);
        let own = std::fs::read_to_string(&own_path).map_err(io_err("read", &own_path))?;
        let study = std::fs::read_to_string(config).map_err(io_err("read", config))?;
        let text = format!(
            "{own}\n# --- the study's fragment ({}) ---\n{study}",
            config.display()
        );
        key.push_str(&format!("config {}\0", crate::sha256_hex(text.as_bytes())));
        kernel.insert("config".into(), toml::Value::String(CONFIG_FILE.into()));
        fragment = Some(text);
    }

    let name = format!("{base}-study-{}", &crate::sha256_hex(key.as_bytes())[..12]);
    if let Some(toml::Value::String(d)) = recipe.get_mut("description") {
        if let Some(p) = patches {
            d.push_str(&format!(" + study patch series {}", p.display()));
        }
        if let Some(c) = config {
            d.push_str(&format!(" + study config fragment {}", c.display()));
        }
    }

    let dir = b.cache.join("lab").join("guest").join(&name);
    if dir.join("images").join(format!("{name}.toml")).is_file() {
        // (made from another checkout, perhaps one since gone: the shared
        // parts are this one's)
        link_shared(&b.guest_dir, &dir)?;
        return Ok((dir, name));
    }
    // Written beside its final place and renamed, so a half-written tree is never used.
    let tmp = dir.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let write = || -> Result<()> {
        std::fs::create_dir_all(tmp.join("images")).map_err(io_err("create directory", &tmp))?;
        link_shared(&b.guest_dir, &tmp)?;
        if let Some(all) = &series_files {
            let sdir = tmp.join(SERIES_DIR);
            std::fs::create_dir_all(&sdir).map_err(io_err("create directory", &sdir))?;
            for (n, d) in all {
                std::fs::write(sdir.join(n), d).map_err(io_err("write", &sdir.join(n)))?;
            }
        }
        if let Some(l) = &lock_text {
            let p = tmp.join("images").join(format!("{name}.lock"));
            std::fs::write(&p, l).map_err(io_err("write", &p))?;
        }
        if let Some(text) = &fragment {
            std::fs::write(tmp.join(CONFIG_FILE), text)
                .map_err(io_err("write", &tmp.join(CONFIG_FILE)))?;
        }
        let body = toml::to_string(&recipe)
            .map_err(|e| img_err(format!("cannot write the derived recipe ({e})")))?;
        let header = format!("# Derived by hartscope's lab: image `{base}` with a study's kernel changes appended.\n");
        let path = tmp.join("images").join(format!("{name}.toml"));
        std::fs::write(&path, header + &body).map_err(io_err("write", &path))?;
        Ok(())
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    if let Err(e) = std::fs::rename(&tmp, &dir) {
        let _ = std::fs::remove_dir_all(&tmp);
        // Another process may have made the same directory meanwhile.
        if !dir.join("images").join(format!("{name}.toml")).is_file() {
            return Err(io_err("rename into", &dir)(e));
        }
    }
    Ok((dir, name))
}

/// Build (or find in the cache) `base` with a study's patch series and/or config fragment.
pub fn build_derived(
    base: &str,
    patches: Option<&Path>,
    config: Option<&Path>,
    progress: &mut dyn FnMut(&str),
) -> Result<ImageDir> {
    let b = Builder::from_env();
    let (guest_dir, name) = derive_guest_dir(&b, base, patches, config)?;
    let derived = Builder { guest_dir, ..b };
    derived.build(&name, progress).map_err(|e| LabError::Image {
        image: name.clone(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_recipe_appends_the_study_series() {
        let real = Builder::from_env();
        let scratch = std::env::temp_dir().join(format!("hs-lab-derive-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&scratch);
        let b = Builder {
            cache: scratch.join("cache"),
            ..real.clone()
        };
        let patches = scratch.join("patches");
        std::fs::create_dir_all(&patches).unwrap();
        std::fs::write(patches.join("0001-quiet.patch"), "--- a/x\n+++ b/x\n").unwrap();
        std::fs::write(patches.join("notes.txt"), "not a patch").unwrap();

        let (dir, name) = derive_guest_dir(&b, "custom", Some(&patches), None).unwrap();
        assert!(name.starts_with("custom-study-"), "{name}");
        let files: Vec<String> = std::fs::read_dir(dir.join(SERIES_DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(files, vec!["1-study-0001-quiet.patch".to_string()]);
        // hs-guest accepts the derived recipe, and it is a different image from `custom`.
        let derived = Builder {
            guest_dir: dir.clone(),
            ..b.clone()
        };
        let h = derived.recipe_hash(&name).unwrap();
        assert_ne!(h, real.recipe_hash("custom").unwrap());
        // Made from a checkout since gone (its links dangle), the tree is
        // found again with links to this checkout's parts.
        let kernel = dir.join("kernel");
        std::fs::remove_file(&kernel).unwrap();
        std::os::unix::fs::symlink(scratch.join("gone/guest/kernel"), &kernel).unwrap();
        assert!(!dir.join("kernel/virt.config").exists());
        let (again, _) = derive_guest_dir(&b, "custom", Some(&patches), None).unwrap();
        assert_eq!(again, dir);
        assert_eq!(
            std::fs::read_link(&kernel).unwrap(),
            real.guest_dir.join("kernel").canonicalize().unwrap()
        );
        assert_eq!(derived.recipe_hash(&name).unwrap(), h);
        // The same series derives the same directory; a changed one a new image.
        assert_eq!(
            derive_guest_dir(&b, "custom", Some(&patches), None)
                .unwrap()
                .1,
            name
        );
        std::fs::write(patches.join("0001-quiet.patch"), "--- a/y\n+++ b/y\n").unwrap();
        assert_ne!(
            derive_guest_dir(&b, "custom", Some(&patches), None)
                .unwrap()
                .1,
            name
        );

        let err = derive_guest_dir(&b, "debian", Some(&patches), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not built from source"), "{err}");

        // A config fragment lands after the image's own.
        let frag = scratch.join("extra.config");
        std::fs::write(&frag, "CONFIG_PRINTK_TIME=y\n").unwrap();
        let (cdir, cname) = derive_guest_dir(&b, "custom", None, Some(&frag)).unwrap();
        assert_ne!(cname, name);
        let text = std::fs::read_to_string(cdir.join(CONFIG_FILE)).unwrap();
        let own = std::fs::read_to_string(real.guest_dir.join("kernel/virt.config")).unwrap();
        assert!(
            text.starts_with(&own) && text.ends_with("CONFIG_PRINTK_TIME=y\n"),
            "{text}"
        );
        assert!(
            !cdir.join(SERIES_DIR).exists(),
            "no patch series given, the image's own stays"
        );
        let derived = Builder {
            guest_dir: cdir,
            ..b.clone()
        };
        derived.recipe_hash(&cname).unwrap();
        std::fs::remove_dir_all(&scratch).unwrap();
    }
}
