//! Host-side errors of image building: each prints as one sentence naming
//! the package, file or step at fault.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum GuestError {
    #[error("unknown image `{name}`: the known images are {known}")]
    UnknownImage { name: String, known: String },

    #[error("image `{name}` is not built for the current recipe; run `hartscope guest build --image {name}`")]
    NotBuilt { name: String },

    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("recipe {path} is invalid: {message}")]
    Recipe { path: PathBuf, message: String },

    #[error("{step}: cannot run `{program}` ({source}); run scripts/setup-host.sh to install Debian package {package}")]
    ToolMissing {
        step: String,
        program: String,
        package: String,
        source: std::io::Error,
    },

    #[error("{step} failed: {detail}")]
    Step { step: String, detail: String },

    #[error("package `{package}`: {detail}")]
    Package { package: String, detail: String },

    #[error("kernel option {option} did not end up as `{wanted}` in the final .config (found `{found}`); check its dependencies in {fragment}")]
    KernelOption {
        option: String,
        wanted: String,
        found: String,
        fragment: PathBuf,
    },

    #[error("lock file {path} cannot be used: {message}")]
    Lock { path: PathBuf, message: String },

    #[error("locked file {path} (package `{package}` {version}) is no longer on {mirror} (HTTP 404); run `hartscope guest lock --image {image} --update` to re-lock")]
    LockedFileGone {
        path: String,
        package: String,
        version: String,
        mirror: String,
        image: String,
    },

    #[error("the {suite} index {url} does not match its signed InRelease ({detail}); the mirror may be mid-sync: try later, another mirror (HARTSCOPE_DEBIAN_MIRROR), or `--allow-unverified` to lock it marked unverified; the lock is unchanged")]
    UnverifiedIndex {
        suite: String,
        url: String,
        detail: String,
    },

    #[error("workload {path} cannot be used: {message}")]
    Workload { path: PathBuf, message: String },

    #[error("initramfs entry `{name}` cannot be written: {message}")]
    Cpio { name: String, message: String },
}

pub type Result<T> = std::result::Result<T, GuestError>;

/// Wraps an io::Error with what was being done and to which path.
pub(crate) fn io_err(
    action: &'static str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(std::io::Error) -> GuestError {
    let path = path.into();
    move |source| GuestError::Io {
        action,
        path,
        source,
    }
}
