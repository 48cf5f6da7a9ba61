//! Build into a temporary directory beside the final one and rename it into
//! place, so nothing half-written ever carries a final name. A staging
//! directory that is dropped without `commit` is removed.

use std::path::{Path, PathBuf};

use crate::error::{io_err, Result};

pub struct Staging {
    path: PathBuf,
    committed: bool,
}

impl Staging {
    /// Creates `<parent>/.tmp-<stem>-<pid>`, first removing leftovers of the
    /// same stem whose process no longer runs.
    pub fn new(parent: &Path, stem: &str) -> Result<Self> {
        std::fs::create_dir_all(parent).map_err(io_err("create directory", parent))?;
        remove_stale(parent, stem);
        let path = parent.join(format!(".tmp-{stem}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).map_err(io_err("create directory", &path))?;
        Ok(Staging {
            path,
            committed: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the staging directory to `dest`. If `dest` appeared meanwhile
    /// (another process built the same recipe), that copy is kept.
    pub fn commit(mut self, dest: &Path) -> Result<()> {
        match std::fs::rename(&self.path, dest) {
            Ok(()) => {
                self.committed = true;
                Ok(())
            }
            Err(_) if dest.is_dir() => Ok(()),
            Err(e) => Err(io_err("rename into place", dest)(e)),
        }
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

fn remove_stale(parent: &Path, stem: &str) {
    let prefix = format!(".tmp-{stem}-");
    let Ok(rd) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in rd.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(&prefix)
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
