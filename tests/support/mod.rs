//! Shared helpers of the platform acceptance tests (`tests/*.rs`): run the
//! real `hartscope` binary with a deadline, find guest images, scratch
//! directories, and stats with the host-time fields taken out.
#![allow(dead_code)] // each test file uses a different part

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub const HARTSCOPE: &str = env!("CARGO_BIN_EXE_hartscope");

/// The repository root (this file is `tests/support/mod.rs`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// A built guest image; a missing one fails the test with the command that builds it.
pub fn image(name: &str) -> hs_guest::ImageDir {
    hs_guest::find(name).unwrap_or_else(|e| panic!("{e}"))
}

/// A temporary directory removed when dropped (also when the test fails).
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Self {
        // (every acceptance test runs in one process: the sequence number
        // keeps two tests that chose the same name apart)
        static MADE: AtomicUsize = AtomicUsize::new(0);
        let n = MADE.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "hartscope-accept-{name}-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create scratch directory");
        Scratch(dir)
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
    pub fn write(&self, name: &str, data: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, data).expect("write scratch file");
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a finished `hartscope` process left behind.
pub struct Output {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Output {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).replace('\r', "")
    }
    /// The last lines of stdout and stderr, for assertion messages.
    pub fn tail(&self) -> String {
        let out = self.stdout_text();
        let lines: Vec<&str> = out.lines().collect();
        format!(
            "exit {:?} after {:.1} s\n--- stdout (last 30 lines)\n{}\n--- stderr\n{}",
            self.status.code(),
            self.elapsed.as_secs_f64(),
            lines[lines.len().saturating_sub(30)..].join("\n"),
            self.stderr
        )
    }
}

/// Runs `hartscope ARGS` (stdin empty), killing it after `deadline`: a run
/// that hangs fails the test instead of stalling the suite.
pub fn hartscope(args: &[&str], scratch: &Scratch, deadline: Duration) -> Output {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let tag = format!("run-{}", RUNS.fetch_add(1, Ordering::Relaxed));
    let (out_path, err_path) = (
        scratch.path(&format!("{tag}.stdout")),
        scratch.path(&format!("{tag}.stderr")),
    );
    let started = Instant::now();
    let mut child = Command::new(HARTSCOPE)
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("start the hartscope binary");
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for hartscope") {
            break s;
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let err = std::fs::read_to_string(&err_path).unwrap_or_default();
            panic!(
                "`hartscope {}` did not finish within {} s; stderr:\n{err}",
                args.join(" "),
                deadline.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = Output {
        status,
        stdout: std::fs::read(&out_path).unwrap(),
        stderr: std::fs::read_to_string(&err_path).unwrap(),
        elapsed: started.elapsed(),
    };
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    // A host panic prints "thread '…' panicked at FILE"; the guest's own
    // kernel panic is reported in other words and is not one.
    assert!(
        !out.stderr.contains("panicked at") && !out.stdout_text().contains("panicked at"),
        "`hartscope {}` panicked:\n{}",
        args.join(" "),
        out.tail()
    );
    out
}

/// A Linux boot is ~1 s (`custom`) to ~20 s (`debian`, 4 harts) in release
/// builds; tests run in parallel on a small shared machine.
pub const BOOT_DEADLINE: Duration = Duration::from_secs(600);

/// The agent's status line and Linux's power-off, as every finished workload run shows.
pub fn assert_workload_finished(out: &Output, status: i32) {
    let console = out.stdout_text();
    let line = format!("hartscope-agent: workload exited with status {status}");
    assert!(
        console.lines().any(|l| l.trim_end() == line),
        "`{line}` missing:\n{}",
        out.tail()
    );
    assert!(
        console.contains("reboot: Power down"),
        "Linux did not power down:\n{}",
        out.tail()
    );
    assert_eq!(
        out.code(),
        Some(status),
        "hartscope exits with the workload's status:\n{}",
        out.tail()
    );
}

/// Run statistics without the fields that measure the host (time, MIPS).
pub fn guest_stats(json: &str) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                map.remove("host_seconds");
                map.remove("phase_host_seconds");
                map.remove("mips");
                // what translating took: memory and host time, and what
                // it left to the block interpreter
                map.remove("translated_blocks");
                map.remove("interpreted_instret");
                map.remove("translation_bytes");
                map.remove("translation_seconds");
                map.remove("translation_share");
                map.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v: serde_json::Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("stats are not JSON ({e}):\n{json}"));
    strip(&mut v);
    v
}

/// Paths (`harts[1].instret`) where two JSON values differ, at most `limit`.
pub fn json_differences(a: &serde_json::Value, b: &serde_json::Value, limit: usize) -> Vec<String> {
    fn walk(
        a: &serde_json::Value,
        b: &serde_json::Value,
        path: String,
        out: &mut Vec<String>,
        limit: usize,
    ) {
        use serde_json::Value::{Array, Object};
        if out.len() >= limit {
            return;
        }
        match (a, b) {
            (Object(x), Object(y)) => {
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort();
                keys.dedup();
                for k in keys {
                    match (x.get(k), y.get(k)) {
                        (Some(p), Some(q)) => walk(p, q, format!("{path}.{k}"), out, limit),
                        _ => out.push(format!("{path}.{k}: present in one run only")),
                    }
                }
            }
            (Array(x), Array(y)) if x.len() == y.len() => {
                for (i, (p, q)) in x.iter().zip(y).enumerate() {
                    walk(p, q, format!("{path}[{i}]"), out, limit);
                }
            }
            _ if a != b => out.push(format!("{path}: {a} vs {b}")),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(a, b, String::new(), &mut out, limit);
    out
}

/// Boot `image` on the machine description `machine` (relative to the
/// repository) with `script` as the workload; the console and the device
/// counters whose names start with one of `prefixes` (from `--stats-json`).
/// The workload must exit 0.
pub fn boot_devices(
    dir: &Scratch,
    image: &str,
    machine: &str,
    script: &str,
    tag: &str,
    prefixes: &[&str],
) -> (String, serde_json::Value) {
    let script = dir.write("run.sh", script);
    boot_with_devices(
        dir,
        image,
        "",
        &root().join(machine),
        &script,
        tag,
        prefixes,
    )
}

/// Boot `image` (with `append` added to its kernel command line) with the
/// machine description at `machine` and the workload (script or directory)
/// at `workload`, require status 0, and return the console and the device
/// counters whose names start with one of `prefixes`.
pub fn boot_with_devices(
    dir: &Scratch,
    image: &str,
    append: &str,
    machine: &Path,
    workload: &Path,
    tag: &str,
    prefixes: &[&str],
) -> (String, serde_json::Value) {
    let stats = dir.path(&format!("{tag}.json"));
    let mut args = vec![
        "boot",
        "--image",
        image,
        "--machine",
        machine.to_str().unwrap(),
        "--workload",
        workload.to_str().unwrap(),
        "--stats-json",
        stats.to_str().unwrap(),
    ];
    if !append.is_empty() {
        args.extend(["--append", append]);
    }
    let out = hartscope(&args, dir, BOOT_DEADLINE);
    assert_workload_finished(&out, 0);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let devs: serde_json::Map<String, serde_json::Value> = json["devices"]
        .as_object()
        .expect("devices in the stats")
        .iter()
        .filter(|(k, _)| prefixes.iter().any(|p| k.starts_with(p)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (out.stdout_text(), serde_json::Value::Object(devs))
}

/// A finished `hartscope study` run: its printed verdicts and its report.
pub struct StudyRun {
    pub stdout: String,
    pub report: String,
    _dir: Scratch,
}

impl StudyRun {
    /// The results database the study stored its runs in.
    pub fn db(&self) -> PathBuf {
        self._dir.path("results.db")
    }
    /// The PASS / FAIL / NOT RUN lines, in order.
    pub fn verdicts(&self) -> Vec<&str> {
        self.stdout
            .lines()
            .filter(|l| l.starts_with("PASS") || l.starts_with("FAIL") || l.starts_with("NOT RUN"))
            .collect()
    }
    /// `count` verdicts, none NOT RUN; those whose name contains one of
    /// `must_pass` are PASS. The verdicts are printed so a FAIL shows.
    pub fn assert_verdicts(&self, count: usize, must_pass: &[&str]) {
        print!("{}", self.stdout);
        let verdicts = self.verdicts();
        assert_eq!(verdicts.len(), count, "{}", self.stdout);
        for v in &verdicts {
            assert!(!v.starts_with("NOT RUN"), "{v}\n{}", self.stdout);
            if must_pass.iter().any(|p| v.contains(p)) {
                assert!(v.starts_with("PASS"), "{v}\n{}", self.stdout);
            }
        }
    }
    /// The report's section under `heading` (up to the next heading).
    pub fn section(&self, heading: &str) -> &str {
        let body = self
            .report
            .split(heading)
            .nth(1)
            .unwrap_or_else(|| panic!("no `{heading}` in the report:\n{}", self.report));
        body.split("\n## ").next().unwrap_or(body)
    }
    /// The repeats table says each of `variants`' runs were identical.
    pub fn assert_repeats_identical(&self, variants: &[&str]) {
        let repeats = self.section("## Repeats");
        for v in variants {
            let line = repeats
                .lines()
                .find(|l| l.starts_with(&format!("| {v} ")))
                .unwrap_or_else(|| panic!("no repeats row for {v}:\n{repeats}"));
            assert!(line.contains("identical"), "{line}");
        }
    }
    /// The data rows of the table under `heading` whose first cell starts
    /// with one of `rows`, as cells; every other cell must be a positive
    /// number.
    pub fn positive_rows(&self, heading: &str, rows: &[&str]) -> Vec<Vec<String>> {
        let body = self.section(heading);
        let mut out = Vec::new();
        for row in rows {
            let line = body
                .lines()
                .find(|l| l.starts_with(&format!("| {row} ")))
                .unwrap_or_else(|| panic!("no row `{row}` under {heading}:\n{body}"));
            let cells: Vec<String> = line
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect();
            for c in &cells[1..] {
                assert!(
                    c.replace(',', "").parse::<f64>().is_ok_and(|v| v > 0.0),
                    "not a positive number in `{line}`"
                );
            }
            out.push(cells);
        }
        out
    }
}

/// Run `hartscope study STUDY --jobs 2 --repeat 2` with `env` (`KEY=VALUE`)
/// into a scratch database and report directory; a failed run fails the test.
pub fn run_study(study: &str, env: &[&str]) -> StudyRun {
    let dir = Scratch::new(&format!("study-{}", study.replace(['/', '.'], "-")));
    let db = dir.path("results.db");
    let out_dir = dir.path("out");
    let toml = root().join(study);
    let mut args: Vec<String> = vec!["study".into(), toml.display().to_string()];
    for e in env {
        args.extend(["--env".into(), e.to_string()]);
    }
    args.extend(
        ["--jobs", "2", "--repeat", "2", "--db"]
            .iter()
            .map(|s| s.to_string()),
    );
    args.push(db.display().to_string());
    args.push("--out".into());
    args.push(out_dir.display().to_string());
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = hartscope(&refs, &dir, Duration::from_secs(3600));
    let stdout = out.stdout_text();
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        out.stderr
    );
    let report = std::fs::read_to_string(out_dir.join("report.md")).expect("report.md");
    StudyRun {
        stdout,
        report,
        _dir: dir,
    }
}

#[allow(unused_imports)] // each test file uses a different part
pub use hs_test_support::isa::programs;

/// Builds `src` with `link.ld` and `hs_test.h` from `dir` into the
/// test's scratch area under `rel` (with extension `.elf`).
pub fn build_isa_program(src: &Path, rel: &Path, dir: &Path) -> Result<PathBuf, String> {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("isa-machine")
        .join(rel)
        .with_extension("elf");
    hs_test_support::isa::build(src, dir, &out)
}
