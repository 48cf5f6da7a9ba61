//! Running host tools: a missing tool names the Debian package that provides
//! it, a failing one names the step and quotes its last error lines.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{io_err, GuestError, Result};

/// The Debian package that provides each host program we run.
pub fn package_of(program: &str) -> &'static str {
    match program {
        "curl" => "curl",
        "gpgv" => "gpgv",
        "pahole" => "dwarves",
        "dpkg-deb" => "dpkg",
        "dpkg-source" => "dpkg-dev",
        "xz" => "xz-utils",
        "tar" => "tar",
        "patch" => "patch",
        "make" => "make",
        "riscv64-linux-gnu-gcc" => "gcc-riscv64-linux-gnu",
        "qemu-system-riscv64" => "qemu-system-misc",
        _ => "build-essential",
    }
}

fn spawn_error(step: &str, cmd: &Command, source: std::io::Error) -> GuestError {
    let program = cmd.get_program().to_string_lossy().into_owned();
    if source.kind() == std::io::ErrorKind::NotFound {
        GuestError::ToolMissing {
            step: step.to_string(),
            package: package_of(&program).to_string(),
            program,
            source,
        }
    } else {
        GuestError::Step {
            step: step.to_string(),
            detail: format!("cannot start `{program}`: {source}"),
        }
    }
}

/// The lines of a tool's output most likely to explain a failure, joined into one line.
pub fn error_summary(stderr: &str, stdout: &str) -> String {
    let pick = |text: &str| -> Vec<String> {
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let flagged: Vec<String> = lines
            .iter()
            .filter(|l| {
                l.starts_with("E:")
                    || l.starts_with("Err:")
                    || l.contains("error")
                    || l.contains("Error")
                    || l.contains("failed")
            })
            .map(|l| l.to_string())
            .collect();
        if flagged.is_empty() {
            lines
                .iter()
                .rev()
                .take(3)
                .rev()
                .map(|l| l.to_string())
                .collect()
        } else {
            // The first error usually names the cause, the last the outcome.
            let mut v = vec![flagged[0].clone()];
            if flagged.len() > 1 {
                v.push(flagged[flagged.len() - 1].clone());
            }
            v
        }
    };
    let mut lines = pick(stderr);
    if lines.is_empty() {
        lines = pick(stdout);
    }
    if lines.is_empty() {
        "it printed nothing".to_string()
    } else {
        lines.join(" | ")
    }
}

/// Runs a command to completion and returns its stdout; a non-zero exit is a `Step` error.
pub fn run(step: &str, cmd: &mut Command) -> Result<String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| spawn_error(step, cmd, e))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(GuestError::Step {
            step: step.to_string(),
            detail: format!("{} ({})", error_summary(&stderr, &stdout), out.status),
        });
    }
    Ok(stdout)
}

/// Runs a long build, writing all output to `log` and calling `on_line` with
/// each stdout line (for progress). stderr goes to the log only.
pub fn run_logged(
    step: &str,
    cmd: &mut Command,
    log: &Path,
    on_line: &mut dyn FnMut(&str),
) -> Result<()> {
    let err_log = log.with_extension("stderr");
    let err_file = std::fs::File::create(&err_log).map_err(io_err("create", &err_log))?;
    let mut out_file = std::fs::File::create(log).map_err(io_err("create", log))?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(err_file))
        .spawn()
        .map_err(|e| spawn_error(step, cmd, e))?;
    if let Some(stdout) = child.stdout.take() {
        use std::io::Write;
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            let _ = writeln!(out_file, "{line}");
            on_line(&line);
        }
    }
    let status = child.wait().map_err(|e| spawn_error(step, cmd, e))?;
    if !status.success() {
        let stderr = std::fs::read_to_string(&err_log).unwrap_or_default();
        return Err(GuestError::Step {
            step: step.to_string(),
            detail: format!(
                "{} ({status}; full output in {})",
                error_summary(&stderr, ""),
                log.display()
            ),
        });
    }
    Ok(())
}

/// Runs a command with its stdout and stderr sent to `log`, killing it after
/// `timeout`. Returns whether it finished in time (and its exit status).
pub fn run_with_timeout(
    step: &str,
    cmd: &mut Command,
    log: &Path,
    timeout: Duration,
) -> Result<Option<std::process::ExitStatus>> {
    let file = std::fs::File::create(log).map_err(io_err("create", log))?;
    let file2 = file.try_clone().map_err(io_err("open", log))?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::from(file))
        .stderr(Stdio::from(file2))
        .spawn()
        .map_err(|e| spawn_error(step, cmd, e))?;
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| spawn_error(step, cmd, e))? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
