//! A small study end to end on the emulator (`studies/smoke.toml`, the
//! `custom` image): runs, repeats, the store, both reports, `history` and
//! `compare`; and a study killed mid-run leaves nothing in the store.
//! An image that is not built fails the test with the command that builds it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn hartscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hartscope"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hs-study-e2e-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn studies() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../studies")
}

fn require_custom_image() {
    if let Err(e) = hs_guest::find("custom") {
        panic!("{e}");
    }
}

fn text(out: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn smoke_study_runs_stores_reports_and_lists() {
    require_custom_image();
    let dir = scratch("smoke");
    let db = dir.join("results.db");
    let out_dir = dir.join("out");
    let out = hartscope()
        .arg("study")
        .arg(studies().join("smoke.toml"))
        .arg("--db")
        .arg(&db)
        .arg("--out")
        .arg(&out_dir)
        .args(["--jobs", "2", "--repeat", "2"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stderr.contains("one: booting `custom` on 1 hart(s)"),
        "progress per variant: {stderr}"
    );
    assert!(stderr.contains("two (repeat 2): done ("), "{stderr}");
    // Runs done of all: the last line to finish says so.
    assert!(stderr.contains("(4 of 4), run "), "{stderr}");
    assert!(stdout.contains("stored runs "), "{stdout}");
    for line in stdout
        .lines()
        .filter(|l| l.starts_with("PASS") || l.starts_with("FAIL") || l.starts_with("NOT RUN"))
    {
        assert!(line.starts_with("PASS"), "every smoke check passes: {line}");
    }
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("PASS")).count(),
        6,
        "2 workload checks + 4 scenario checks: {stdout}"
    );

    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    for section in [
        "# Study: smoke",
        "## Result",
        "## Phases",
        "### Phase by phase",
        "## Cycle shape",
        "## Hot functions",
        "## System calls and interrupts",
        "## Counters",
        "## Repeats",
        "## Honest status",
        "## Console",
        "## Provenance",
    ] {
        assert!(md.contains(section), "report.md has {section:?}");
    }
    assert!(
        md.contains("| one | 2 | identical in every run |"),
        "determinism across repeats:\n{md}"
    );
    assert!(md.contains("| two | 2 | identical in every run |"), "{md}");
    assert!(
        md.contains("NOT RUN: the run used the atomic timing model"),
        "the smoke study has no machine description:\n{md}"
    );
    assert!(
        md.contains("### one: ")
            && md.contains(
                "samples, one every 1,024 cycles (from phase `init` to the end; boot left out)"
            ),
        "a profile per variant:\n{md}"
    );
    assert!(
        md.contains("| busybox |") || md.contains("| busybox "),
        "user samples are named by binary:\n{md}"
    );
    assert!(
        md.contains("| system call | one |"),
        "syscall table from the timeline:\n{md}"
    );
    assert!(md.contains("| `phase[count].cycles` |"), "{md}");
    assert!(md.contains("word is alpha"), "console tail of one:\n{md}");
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(
        html.starts_with("<!DOCTYPE html>")
            && html.contains("<svg")
            && html.trim_end().ends_with("</html>")
    );
    assert!(
        !html.contains(" src=") && !html.contains(" href=") && !html.contains("<script"),
        "self-contained"
    );
    for v in ["one", "two", "one-r1", "two-r1"] {
        assert!(
            out_dir.join(v).join("console.txt").is_file(),
            "artefacts of {v}"
        );
        for f in ["hot.md", "folded.txt", "flamegraph.svg", "trace.json"] {
            assert!(out_dir.join(v).join(f).is_file(), "{v}/{f}");
        }
        assert!(std::fs::read_to_string(out_dir.join(v).join("stats.txt"))
            .unwrap()
            .contains("system.cpu0.instret"));
    }

    let history = hartscope()
        .args(["history", "--study", "smoke", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let (h, herr) = text(&history);
    assert!(history.status.success(), "{herr}");
    let rungs: Vec<&str> = h.lines().skip(2).collect();
    assert_eq!(rungs.len(), 4, "four stored runs:\n{h}");
    assert!(
        rungs[0].trim_start().starts_with('4') && rungs[3].trim_start().starts_with('1'),
        "newest first:\n{h}"
    );
    assert!(
        rungs[0].contains("cycles") && rungs[0].contains("(vs run 3)"),
        "delta to the previous rung:\n{h}"
    );
    assert!(
        rungs[3].trim_end().ends_with('-'),
        "the oldest rung has no delta:\n{h}"
    );

    let compare = hartscope()
        .args(["compare", "1", "2", "--db"])
        .arg(&db)
        .arg("--out")
        .arg(dir.join("cmp"))
        .output()
        .unwrap();
    let (c, cerr) = text(&compare);
    assert!(compare.status.success(), "{cerr}");
    assert!(c.starts_with("# Compare: run 1 vs run 2"), "{c}");
    assert!(
        c.contains("| `cycles` |"),
        "the stored scenario's headline: {c}"
    );
    assert!(dir.join("cmp/report.html").is_file());
    let missing = hartscope()
        .args(["compare", "1", "99", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(
        text(&missing).1.trim_end(),
        format!(
            "hartscope: run 99 is not in the results database {}",
            db.display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Ctrl-C during a study (issue 10): the run under way stops at its next
/// slice and is not stored, no further run starts, and the report of the
/// finished runs is written, naming the ones that did not run; exit 130.
#[test]
fn ctrl_c_during_a_study_reports_the_finished_runs_and_names_the_rest() {
    require_custom_image();
    let dir = scratch("ctrl-c");
    std::fs::create_dir_all(dir.join("wl")).unwrap();
    std::fs::write(
        dir.join("wl/run.sh"),
        "hsmark phase work\n[ \"$ENDLESS\" = 1 ] && while true; do :; done\nexit 0\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("s.toml"),
        "[study]\nname = \"ctrl-c\"\n[guest]\nimage = \"custom\"\n[workload]\ndir = \"wl\"\n\
         [variants.quick]\n[variants.endless]\nenv = { ENDLESS = \"1\" }\n[variants.later]\n\
         [[checks]]\nname = \"later ran\"\nvariant = \"later\"\nmetric = \"cycles\"\nop = \">\"\nvalue = 0\n",
    )
    .unwrap();
    let db = dir.join("results.db");
    let out_dir = dir.join("out");
    let mut child = hartscope()
        .arg("study")
        .arg(dir.join("s.toml"))
        .arg("--db")
        .arg(&db)
        .arg("--out")
        .arg(&out_dir)
        .args(["--jobs", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let started = Instant::now();
    loop {
        let line = lines
            .next()
            .expect("the study ended before `endless` booted")
            .unwrap();
        if line.contains("endless: booting `custom`") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(300), "never booted");
    }
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: a plain kill(2) of our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let rest: Vec<String> = lines.map_while(|l| l.ok()).collect();
    let rest = rest.join("\n");
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(130), "{stdout}\n{rest}");
    assert!(
        rest.contains("not run or not finished: endless, later"),
        "{rest}"
    );
    assert!(
        stdout.contains("NOT RUN  later ran [later]"),
        "the check on a variant without a run:\n{stdout}"
    );
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(
        md.contains("**Interrupted (Ctrl-C)**")
            && md.contains("Not run or not finished: endless, later."),
        "{md}"
    );
    assert!(md.contains("| quick | 1 |"), "{md}");
    let history = hartscope()
        .args(["history", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let (h, _) = text(&history);
    assert!(h.contains("quick") && !h.contains("endless"), "{h}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_study_killed_mid_run_stores_nothing() {
    require_custom_image();
    let dir = scratch("kill");
    std::fs::create_dir_all(dir.join("wl")).unwrap();
    // Long enough in host time that the kill lands while the guest runs.
    std::fs::write(
        dir.join("wl/run.sh"),
        "hsmark phase spin\ni=0\nwhile [ \"$i\" -lt 3000000 ]; do i=$((i + 1)); done\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("s.toml"),
        "[study]\nname = \"killed\"\n[guest]\nimage = \"custom\"\n[workload]\ndir = \"wl\"\n[variants.A]\n[variants.B]\nharts = 2\n",
    )
    .unwrap();
    let db = dir.join("results.db");
    let mut child = hartscope()
        .arg("study")
        .arg(dir.join("s.toml"))
        .arg("--db")
        .arg(&db)
        .arg("--out")
        .arg(dir.join("out"))
        .args(["--jobs", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let started = Instant::now();
    let mut booted = 0;
    while booted < 2 {
        let line = lines
            .next()
            .expect("the study ended before both variants booted")
            .unwrap();
        assert!(
            !line.contains(": done ("),
            "a run finished before the kill; make the workload longer: {line}"
        );
        if line.contains(": booting `custom`") {
            booted += 1;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the variants never started"
        );
    }
    // Both machines are past boot-file loading; let them run a little, then kill.
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success());
    let history = hartscope()
        .args(["history", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let (h, herr) = text(&history);
    assert!(history.status.success(), "{herr}");
    assert!(
        h.starts_with("no runs stored"),
        "the killed study left a run behind:\n{h}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_study_profiles_the_window_its_labels_name_and_refuses_an_unknown_label() {
    require_custom_image();
    let dir = scratch("window");
    let workload = studies().join("workloads/smoke");
    let study = |name: &str, window: &str| {
        let path = dir.join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "[study]\nname = \"{name}\"\n{window}\n[guest]\nimage = \"custom\"\n\
                 [workload]\ndir = {:?}\nenv = {{ WORD = \"w\" }}\n[variants.A]\n",
                workload.display().to_string()
            ),
        )
        .unwrap();
        path
    };
    let run = |toml: &PathBuf| {
        hartscope()
            .arg("study")
            .arg(toml)
            .arg("--db")
            .arg(dir.join("results.db"))
            .arg("--out")
            .arg(dir.join("out"))
            .output()
            .unwrap()
    };

    let out = run(&study(
        "window",
        "profile_from = \"hello\"\nprofile_to = \"count\"",
    ));
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let md = std::fs::read_to_string(dir.join("out/report.md")).unwrap();
    assert!(
        md.contains("(from phase `hello` to phase `count`)"),
        "the profile caption names the window:\n{md}"
    );
    assert!(
        md.contains("hot symbols per phase") && md.contains("| count |"),
        "per-phase hot symbols, the phases outside the window too:\n{md}"
    );
    let hot = std::fs::read_to_string(dir.join("out/A/hot.md")).unwrap();
    assert!(
        hot.contains("(from phase `hello` to phase `count`)")
            && hot.contains("as `perf report --children`"),
        "{hot}"
    );

    // A label the workload never reaches: the run fails naming the key and
    // the phases it saw, and nothing is stored.
    let out = run(&study("typo", "profile_from = \"hellp\""));
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "stdout:\n{stdout}");
    assert!(
        stderr.contains("study.profile_from: the run never reached phase `hellp`")
            && stderr.contains("phases seen: ")
            && stderr.contains("hello, count"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A run the guest makes fail (here a kernel panic) is stored as a failed
/// run with its console (issue 10): the study still writes the report of the
/// other runs, the report and `history` name the failure with the panic
/// line, `compare` refuses it in one sentence, and the study exits 1.
/// Debian's kernel has SysRq (the custom one does not).
#[test]
fn a_guest_panic_in_a_study_is_a_stored_failed_run_named_in_report_and_history() {
    if let Err(e) = hs_guest::find("debian") {
        panic!("{e}");
    }
    let dir = scratch("panic");
    std::fs::create_dir_all(dir.join("wl")).unwrap();
    std::fs::write(
        dir.join("wl/run.sh"),
        "hsmark phase work\n[ \"$PANIC\" = 1 ] && echo c > /proc/sysrq-trigger\nexit 0\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("s.toml"),
        "[study]\nname = \"panics\"\n[guest]\nimage = \"debian\"\n[workload]\ndir = \"wl\"\n\
         [variants.fine]\n[variants.crash]\nenv = { PANIC = \"1\" }\n\
         [[checks]]\nname = \"crash ran\"\nvariant = \"crash\"\nmetric = \"cycles\"\nop = \">\"\nvalue = 0\n",
    )
    .unwrap();
    let db = dir.join("results.db");
    let out_dir = dir.join("out");
    let out = hartscope()
        .arg("study")
        .arg(dir.join("s.toml"))
        .arg("--db")
        .arg(&db)
        .arg("--out")
        .arg(&out_dir)
        .args(["--jobs", "1"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stderr.contains("crash failed (stored as failed run 2): the guest kernel panicked (Kernel panic - not syncing: sysrq triggered crash)"),
        "{stderr}"
    );
    assert!(stderr.contains("1 of 2 run(s) failed"), "{stderr}");
    assert!(
        stdout.contains("FAIL     workload runs to its end [crash]: run 2 failed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("NOT RUN  crash ran [crash]: run 2 of crash failed"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(md.contains("## Failed runs"), "{md}");
    assert!(
        md.contains("| 2 | crash |") && md.contains("sysrq triggered crash"),
        "{md}"
    );
    assert!(
        md.contains("---[ end Kernel panic"),
        "the console's tail: {md}"
    );
    assert!(
        md.contains("| fine | 1 |"),
        "the finished run is reported: {md}"
    );

    let history = hartscope()
        .args(["history", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let (h, herr) = text(&history);
    assert!(history.status.success(), "{herr}");
    let rung = h
        .lines()
        .find(|l| l.trim_start().starts_with("2 "))
        .unwrap_or_default();
    assert!(rung.contains("crash") && rung.contains("FAILED"), "{h}");
    assert!(
        h.contains("run 2 (panics/crash) FAILED after ")
            && h.contains("| [")
            && h.contains("end Kernel panic - not syncing: sysrq triggered crash"),
        "{h}"
    );
    let compare = hartscope()
        .args(["compare", "1", "2", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let (_, cerr) = text(&compare);
    assert_eq!(compare.status.code(), Some(1), "{cerr}");
    assert!(
        cerr.contains(
            "run 2 (crash) failed and has no counts to report: the guest kernel panicked"
        ),
        "{cerr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
