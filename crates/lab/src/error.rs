//! Host-side errors of the lab, each printed as one sentence naming the file,
//! key, variant or run at fault.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A scenario value is wrong; `key` is the dotted path in the file.
    #[error("{}: {key}: {message}", file.display())]
    Scenario {
        file: PathBuf,
        key: String,
        message: String,
    },
    /// The scenario file as a whole cannot be used (unreadable, not TOML).
    #[error("{}: {message}", file.display())]
    ScenarioFile { file: PathBuf, message: String },
    #[error("guest image `{image}`: {message}")]
    Image { image: String, message: String },
    /// A variant could not run to completion; nothing of it was stored.
    #[error("variant {variant}: {message}")]
    Run { variant: String, message: String },
    #[error("results database {}: {message}", path.display())]
    Store { path: PathBuf, message: String },
    #[error("run {id} is not in the results database {}", path.display())]
    NoSuchRun { id: i64, path: PathBuf },
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// The user interrupted the run (Ctrl-C) before it finished.
    #[error(
        "variant {variant}: interrupted (Ctrl-C) before it finished; nothing of it was stored"
    )]
    Interrupted { variant: String },
    /// A stored record cannot be read back or written.
    #[error("run record {what}: {message}")]
    Record { what: String, message: String },
}

pub type Result<T, E = LabError> = std::result::Result<T, E>;

pub(crate) fn io_err<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> LabError + 'a {
    move |source| LabError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}
