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
    /// The run is stored, but as a failed run: it has no counts.
    #[error("run {id} ({variant}) failed and has no counts to report: {reason}")]
    FailedRun {
        id: i64,
        variant: String,
        reason: String,
    },
    /// The guest made the run fail (kernel panic, time limit, no exit
    /// status): the run is kept as a failed run, console and all.
    #[error("variant {}: {}{}", .0.variant, .0.reason, last_line(&.0.console))]
    GuestFailed(Box<crate::store::FailedRun>),
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

/// "; the console's last line: ..." — the first clue to a failed run.
pub(crate) fn last_line(console: &[u8]) -> String {
    let text = String::from_utf8_lossy(console);
    match text.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(l) => format!("; the console's last line: {:?}", l.trim()),
        None => "; the console stayed empty".to_string(),
    }
}

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
