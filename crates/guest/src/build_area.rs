//! The one kernel build tree kept in the cache (`kernels/area/`), so a
//! patched or reconfigured kernel rebuilds only what its change touches, as
//! a kernel developer's tree does: the source unpacked once, the objects of
//! the last build kept (`O=area/out`), and the patch series currently
//! applied recorded in `area/state.json` with a copy of each patch.
//!
//! Moving to another series reverses the applied patches that differ (from
//! the end) and applies the new ones; `patch` gives every file it touches a
//! new mtime, so `make` recompiles exactly those and what includes them.
//! The tree always lives at the same absolute path because the compiler's
//! command line (with its `-ffile-prefix-map` of these paths) is part of
//! what kbuild compares before reusing an object.
//!
//! One build at a time: [`BuildArea::lock`] holds an exclusive `flock` on
//! `kernels/area.lock` for as long as the area is in use. While the tree is
//! being changed the state says `consistent: false`; anything that stops
//! half-way (a patch that does not apply, a killed process) leaves it so,
//! and the next user unpacks the source afresh.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{io_err, Result};
use crate::process::run;
use crate::recipe::hex;

/// Bumped when the area's layout changes: an area of another format is
/// unpacked afresh.
const AREA_FORMAT: &str = "hartscope-kernel-area-1";

/// One patch of a series: its bytes name it (file names differ between an
/// image's own series and a study's copy of it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedPatch {
    pub name: String,
    pub sha256: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct State {
    format: String,
    /// sha256 of the source package the tree was unpacked from.
    source: String,
    /// Patches applied to the pristine source, in order.
    applied: Vec<AppliedPatch>,
    /// False while the tree is being changed.
    consistent: bool,
    /// True while make runs: a process killed then may leave a truncated
    /// object that make would reuse, so such a tree is unpacked afresh.
    #[serde(default)]
    building: bool,
}

/// What preparing the area did, for the build log and the tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prepared {
    /// The source tree was unpacked afresh (no usable earlier build).
    pub unpacked: bool,
    pub reversed: usize,
    pub applied: usize,
}

/// The area, locked for this process.
pub struct BuildArea {
    root: PathBuf,
    _lock: File,
}

impl BuildArea {
    /// Waits for, then takes, the exclusive lock of `kernels/area`.
    pub fn lock(kernels: &Path) -> Result<Self> {
        std::fs::create_dir_all(kernels).map_err(io_err("create directory", kernels))?;
        let lock_path = kernels.join("area.lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_err("open", &lock_path))?;
        lock.lock().map_err(io_err("lock", &lock_path))?;
        Ok(BuildArea {
            root: kernels.join("area"),
            _lock: lock,
        })
    }

    /// The source tree (`area/src/<linux-source-X>`); valid after [`Self::prepare`].
    pub fn tree(&self) -> Result<PathBuf> {
        crate::kernel::single_subdir(&self.root.join("src"))
    }

    /// The object directory (`O=`), kept between builds.
    pub fn out(&self) -> PathBuf {
        self.root.join("out")
    }

    fn state_path(&self) -> PathBuf {
        self.root.join("state.json")
    }

    fn read_state(&self) -> Option<State> {
        let s: State = serde_json::from_slice(&std::fs::read(self.state_path()).ok()?).ok()?;
        (s.format == AREA_FORMAT
            && s.consistent
            && !s.building
            && self.tree().is_ok()
            && self.out().is_dir())
        .then_some(s)
    }

    fn write_state(&self, s: &State) -> Result<()> {
        let path = self.state_path();
        let tmp = self.root.join("state.json.tmp");
        let text = serde_json::to_vec_pretty(s).expect("state serialises");
        std::fs::write(&tmp, text).map_err(io_err("write", &tmp))?;
        std::fs::rename(&tmp, &path).map_err(io_err("rename into place", &path))
    }

    fn applied_copy(&self, index: usize, p: &AppliedPatch) -> PathBuf {
        self.root
            .join("applied")
            .join(format!("{index:04}-{}", p.sha256))
    }

    /// Make the tree the source of `source_sha256` with exactly `series`
    /// applied, reusing the kept tree and objects when the source matches.
    /// `unpack` fills an empty directory with the pristine source tree.
    pub fn prepare(
        &self,
        source_sha256: &str,
        series: &[PathBuf],
        unpack: &mut dyn FnMut(&Path) -> Result<()>,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Prepared> {
        // Each patch is read once: what is hashed is what is applied.
        let wanted = series
            .iter()
            .map(|p| {
                let bytes = std::fs::read(p).map_err(io_err("read", p))?;
                Ok((
                    AppliedPatch {
                        name: file_name(p),
                        sha256: hex(&Sha256::digest(&bytes)),
                    },
                    p.clone(),
                    bytes,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let old = self.read_state().filter(|s| s.source == source_sha256);
        let mut state = State {
            format: AREA_FORMAT.into(),
            source: source_sha256.into(),
            applied: Vec::new(),
            consistent: false,
            building: false,
        };
        let mut done = Prepared {
            unpacked: old.is_none(),
            reversed: 0,
            applied: 0,
        };
        let keep = match &old {
            Some(s) => s
                .applied
                .iter()
                .zip(&wanted)
                .take_while(|(a, (w, _, _))| a.sha256 == w.sha256)
                .count(),
            None => 0,
        };
        let mut keep = keep;
        let reused = match old {
            Some(s) if keep == s.applied.len() && keep == wanted.len() => {
                progress("kernel: reusing the kept build tree (same source and patches)");
                return Ok(done);
            }
            Some(s) => {
                state.applied = s.applied.clone();
                self.write_state(&state)?;
                progress(&format!(
                    "kernel: reusing the kept build tree; reversing {} patch(es), applying {}",
                    s.applied.len() - keep,
                    wanted.len() - keep
                ));
                let mut ok = true;
                for i in (keep..s.applied.len()).rev() {
                    let copy = self.applied_copy(i, &s.applied[i]);
                    if patch(&self.tree()?, &copy, true, &s.applied[i].name).is_err() {
                        // A lost or damaged copy: start from the source again.
                        progress(&format!(
                            "kernel: cannot reverse {}; unpacking the source afresh",
                            s.applied[i].name
                        ));
                        ok = false;
                        break;
                    }
                    let _ = std::fs::remove_file(&copy);
                    state.applied.pop();
                    done.reversed += 1;
                }
                ok
            }
            None => false,
        };
        if !reused {
            {
                progress(
                    "kernel: unpacking the source into the build tree (no earlier build to reuse)",
                );
                if self.root.exists() {
                    std::fs::remove_dir_all(&self.root).map_err(io_err("remove", &self.root))?;
                }
                for d in [self.root.join("src"), self.out(), self.root.join("applied")] {
                    std::fs::create_dir_all(&d).map_err(io_err("create directory", &d))?;
                }
                state.applied.clear();
                self.write_state(&state)?;
                unpack(&self.root.join("src"))?;
                keep = 0;
                done = Prepared {
                    unpacked: true,
                    reversed: 0,
                    applied: 0,
                };
            }
        }
        let tree = self.tree()?;
        for (i, (p, path, bytes)) in wanted.iter().enumerate().skip(keep) {
            progress(&format!("kernel: applying {}", path.display()));
            let copy = self.applied_copy(i, p);
            std::fs::write(&copy, bytes).map_err(io_err("write", &copy))?;
            patch(&tree, &copy, false, &p.name)?;
            state.applied.push(p.clone());
            done.applied += 1;
        }
        state.consistent = true;
        self.write_state(&state)?;
        Ok(done)
    }
}

impl BuildArea {
    /// Mark make as running (or done, whatever its outcome) in the state.
    pub fn set_building(&self, building: bool) -> Result<()> {
        let Some(mut s) =
            serde_json::from_slice::<State>(&std::fs::read(self.state_path()).unwrap_or_default())
                .ok()
        else {
            return Ok(());
        };
        s.building = building;
        self.write_state(&s)
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

fn patch(tree: &Path, file: &Path, reverse: bool, name: &str) -> Result<()> {
    let mut c = Command::new("patch");
    c.args([
        "-p1",
        "--batch",
        "--forward",
        "--no-backup-if-mismatch",
        "-i",
    ])
    .arg(file)
    .current_dir(tree);
    if reverse {
        c.arg("-R");
    }
    let what = if reverse { "reversing" } else { "applying" };
    run(&format!("{what} kernel patch {name}"), &mut c).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("hs-area-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    const PATCH_A: &str = "--- a/f.c\n+++ b/f.c\n@@ -1 +1 @@\n-one\n+uno\n";
    const PATCH_B: &str = "--- a/g.c\n+++ b/g.c\n@@ -1 +1 @@\n-two\n+dos\n";
    const PATCH_C: &str = "--- a/g.c\n+++ b/g.c\n@@ -1 +1 @@\n-two\n+deux\n";

    fn unpack_into(dir: &Path) -> Result<()> {
        let t = dir.join("linux-x");
        std::fs::create_dir_all(&t).unwrap();
        std::fs::write(t.join("f.c"), "one\n").unwrap();
        std::fs::write(t.join("g.c"), "two\n").unwrap();
        Ok(())
    }

    #[test]
    fn moves_between_series_by_reversing_only_what_differs() {
        let d = tmp("series");
        let p = |n: &str, text: &str| {
            let f = d.join(n);
            std::fs::write(&f, text).unwrap();
            f
        };
        let (a, b, c) = (
            p("a.patch", PATCH_A),
            p("b.patch", PATCH_B),
            p("c.patch", PATCH_C),
        );
        let kernels = d.join("kernels");
        let unpacks = std::cell::Cell::new(0);
        let prepare = |series: &[PathBuf], source: &str| {
            let area = BuildArea::lock(&kernels).unwrap();
            let r = area
                .prepare(
                    source,
                    series,
                    &mut |dir| {
                        unpacks.set(unpacks.get() + 1);
                        unpack_into(dir)
                    },
                    &mut |_| {},
                )
                .unwrap();
            let t = area.tree().unwrap();
            (
                r,
                std::fs::read_to_string(t.join("f.c")).unwrap(),
                std::fs::read_to_string(t.join("g.c")).unwrap(),
            )
        };
        let (r, f, g) = prepare(&[a.clone(), b.clone()], "s1");
        assert_eq!(
            (r.unpacked, r.reversed, r.applied, f.as_str(), g.as_str()),
            (true, 0, 2, "uno\n", "dos\n")
        );
        // Same first patch, another second: only the second is reversed.
        let (r, f, g) = prepare(&[a.clone(), c.clone()], "s1");
        assert_eq!(
            (r.unpacked, r.reversed, r.applied, f.as_str(), g.as_str()),
            (false, 1, 1, "uno\n", "deux\n")
        );
        let (r, ..) = prepare(&[a.clone(), c.clone()], "s1");
        assert_eq!(
            (r.reversed, r.applied),
            (0, 0),
            "nothing to do for the same series"
        );
        let (r, f, g) = prepare(&[], "s1");
        assert_eq!((r.reversed, f.as_str(), g.as_str()), (2, "one\n", "two\n"));
        assert_eq!(unpacks.get(), 1);
        // Another source package: unpacked afresh.
        let (r, ..) = prepare(&[a.clone()], "s2");
        assert!(r.unpacked);
        assert_eq!(unpacks.get(), 2);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_killed_build_or_a_lost_patch_copy_means_a_fresh_tree() {
        let d = tmp("killed");
        let a = d.join("a.patch");
        std::fs::write(&a, PATCH_A).unwrap();
        let kernels = d.join("kernels");
        let area = BuildArea::lock(&kernels).unwrap();
        assert!(
            area.prepare("s", &[a.clone()], &mut unpack_into, &mut |_| {})
                .unwrap()
                .unpacked
        );
        area.set_building(true).unwrap();
        assert!(
            area.prepare("s", &[a.clone()], &mut unpack_into, &mut |_| {})
                .unwrap()
                .unpacked,
            "make was killed: not reused"
        );
        area.set_building(false).unwrap();
        assert!(
            !area
                .prepare("s", &[a.clone()], &mut unpack_into, &mut |_| {})
                .unwrap()
                .unpacked
        );
        std::fs::remove_dir_all(kernels.join("area/applied")).unwrap();
        std::fs::create_dir_all(kernels.join("area/applied")).unwrap();
        let r = area
            .prepare("s", &[], &mut unpack_into, &mut |_| {})
            .unwrap();
        assert!(r.unpacked, "the copy to reverse is gone: unpacked afresh");
        assert_eq!(
            std::fs::read_to_string(area.tree().unwrap().join("f.c")).unwrap(),
            "one\n"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_patch_that_does_not_apply_leaves_the_area_to_be_unpacked_again() {
        let d = tmp("broken");
        let bad = d.join("bad.patch");
        std::fs::write(
            &bad,
            "--- a/f.c\n+++ b/f.c\n@@ -1 +1 @@\n-nothing like this\n+x\n",
        )
        .unwrap();
        let kernels = d.join("kernels");
        let area = BuildArea::lock(&kernels).unwrap();
        let err = area
            .prepare("s", &[bad.clone()], &mut unpack_into, &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(err.contains("applying kernel patch bad.patch"), "{err}");
        let r = area
            .prepare("s", &[], &mut unpack_into, &mut |_| {})
            .unwrap();
        assert!(r.unpacked, "an area left half-changed is not reused");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
