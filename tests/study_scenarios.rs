//! `hartscope study --check`: scenario files are validated completely before
//! anything runs, and every mistake is one sentence naming the file and the
//! dotted key. Also checks the studies shipped in `studies/` are valid.

use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("hs-study-scenarios-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("wl")).unwrap();
    std::fs::write(dir.join("wl/run.sh"), "echo hi\n").unwrap();
    dir
}

const GOOD: &str = r#"
[study]
name = "tiny"
headline = ["cycles", "phase[hello].cycles"]

[machine]
harts = 1
memory = "256M"

[guest]
image = "custom"

[workload]
dir = "wl"

[variants.A]
append = "quiet"

[variants.B]
harts = 2

[[checks]]
name = "B is not slower"
variant = "B"
metric = "cycles"
op = "<="
than = "A"
"#;

/// Run `study --check` on `text`; returns (success, stdout, stderr).
fn check(dir: &Path, text: &str) -> (bool, String, String) {
    let file = dir.join("s.toml");
    std::fs::write(&file, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hartscope"))
        .arg("study")
        .arg("--check")
        .arg(&file)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_scenarios_are_one_sentence_naming_the_key() {
    let dir = scratch("bad");
    let file = dir.join("s.toml");
    let (ok, stdout, stderr) = check(&dir, GOOD);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("valid, 2 variants (A, B)"), "{stdout}");

    let cases: &[(&str, &str, &str)] = &[
        ("harts = 2", "harts = 0", "variants.B.harts: 0 harts is impossible"),
        ("harts = 1", "harts = 1\ncores = 2", "machine.cores: unknown field `cores`, expected one of `harts`"),
        ("[variants.B]\nharts = 2", "[variants.B]\nharts = 2\nappnd = \"x\"", "variants.B.appnd: unknown field `appnd`"),
        ("image = \"custom\"", "image = \"nosuch\"", "guest.image: `nosuch` is not a guest image recipe"),
        ("dir = \"wl\"", "dir = \"missing\"", "workload.dir: `missing` (relative to the scenario file) must be a directory holding run.sh"),
        ("memory = \"256M\"", "memory = \"lots\"", "machine.memory: `lots` is not a memory size"),
        ("memory = \"256M\"", "memory = \"4K\"", "machine.memory: 0 MiB is too little"),
        ("memory = \"256M\"", "memory = 256\nmhz = 15", "machine.mhz: 15 MHz is impossible"),
        ("harts = 1", "harts = 1\ndescription = \"inorder.toml\"", "machine.description: `inorder.toml` (relative to the scenario file) is not a usable machine description"),
        ("[variants.B]\n", "[variants.B]\nmachine_description = \"wl/run.sh\"\n", "variants.B.machine_description: `wl/run.sh` (relative to the scenario file) is not a usable machine description"),
        ("name = \"tiny\"", "name = \"tiny\"\nsample_period = -1", "study.sample_period: -1 is impossible"),
        ("\"phase[hello].cycles\"", "\"phase[hello]\"", "study.headline[1]: `phase[hello]` must end in .cycles"),
        ("than = \"A\"", "than = \"C\"", "checks[0].than: `C` is not one of the variants (A, B)"),
        ("op = \"<=\"", "op = \"=<\"", "checks[0].op: `=<` is not one of"),
        ("than = \"A\"", "than = \"A\"\nvalue = 3", "checks[0]: give exactly one of `value`, `than` and `than_metric`"),
        ("name = \"tiny\"", "name = \"../x\"", "study.name: `../x` must be a non-empty name"),
        ("append = \"quiet\"", "append = \"quiet\"\nenv = { \"1X\" = \"v\" }", "variants.A.env.1X: an environment variable name"),
        ("image = \"custom\"", "image = \"debian\"\npatches = \"wl\"", "guest.patches: `wl` holds no *.patch files"),
        ("harts = 1", "harts = \"one\"", "machine.harts: invalid type: string \"one\", expected i64"),
        ("[variants.A]", "[variants.A", "line 16: "),
    ];
    for (from, to, expected) in cases {
        assert!(GOOD.contains(from), "case {from:?} does not apply");
        let text = GOOD.replacen(from, to, 1);
        let (ok, _, stderr) = check(&dir, &text);
        assert!(!ok, "{to:?} was accepted");
        let line = stderr.trim_end();
        assert_eq!(line.lines().count(), 1, "one sentence: {stderr}");
        let prefix = format!("hartscope: {}: ", file.display());
        assert!(line.starts_with(&prefix), "names the file: {line}");
        assert!(line.contains(expected), "expected {expected:?} in: {line}");
    }

    // A machine description (the timing model) is validated by the timing crate.
    let inorder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../machines/inorder.toml");
    let text = GOOD.replacen(
        "harts = 1",
        &format!(
            "harts = 1\ndescription = {:?}",
            inorder.display().to_string()
        ),
        1,
    );
    let (ok, _, stderr) = check(&dir, &text);
    assert!(
        ok,
        "machines/inorder.toml is a usable description: {stderr}"
    );

    // Variants keep the file's order (it is the report's column order).
    let swapped = GOOD
        .replacen("[variants.A]\nappend = \"quiet\"\n", "", 1)
        .replacen(
            "[[checks]]",
            "[variants.A]\nappend = \"quiet\"\n\n[[checks]]",
            1,
        );
    let (ok, stdout, stderr) = check(&dir, &swapped);
    assert!(
        ok && stdout.contains("valid, 2 variants (B, A)"),
        "{stdout}{stderr}"
    );

    // Patches only for kernels built from source.
    std::fs::create_dir_all(dir.join("p")).unwrap();
    std::fs::write(dir.join("p/0001-x.patch"), "--- a/x\n+++ b/x\n").unwrap();
    let text = GOOD.replacen(
        "image = \"custom\"",
        "image = \"debian\"\npatches = \"p\"",
        1,
    );
    let (ok, _, stderr) = check(&dir, &text);
    assert!(!ok);
    assert!(
        stderr.contains("guest.patches: image `debian` boots a packaged kernel"),
        "{stderr}"
    );
    let text = GOOD.replacen(
        "image = \"custom\"",
        "image = \"custom\"\npatches = \"p\"",
        1,
    );
    assert!(check(&dir, &text).0, "a patch series on `custom` validates");

    // Config fragments likewise, and each line must be a config setting.
    std::fs::write(
        dir.join("extra.config"),
        "CONFIG_PRINTK_TIME=y\n# CONFIG_SWAP is not set\n",
    )
    .unwrap();
    std::fs::write(dir.join("bad.config"), "CONFIG_A=y\nprintk time please\n").unwrap();
    let text = GOOD.replacen(
        "image = \"custom\"",
        "image = \"custom\"\nconfig = \"extra.config\"",
        1,
    );
    assert!(
        check(&dir, &text).0,
        "a config fragment on `custom` validates"
    );
    let text = GOOD.replacen(
        "image = \"custom\"",
        "image = \"custom\"\nconfig = \"bad.config\"",
        1,
    );
    let (ok, _, stderr) = check(&dir, &text);
    assert!(
        !ok && stderr.contains(
            "guest.config: `bad.config` line 2: `printk time please` is not CONFIG_NAME=value"
        ),
        "{stderr}"
    );
    let text = GOOD.replacen(
        "[variants.B]\n",
        "[variants.B]\nconfig = \"extra.config\"\nimage = \"debian\"\n",
        1,
    );
    let (ok, _, stderr) = check(&dir, &text);
    assert!(
        !ok && stderr.contains("variants.B.config: image `debian` boots a packaged kernel"),
        "{stderr}"
    );

    let missing = Command::new(env!("CARGO_BIN_EXE_hartscope"))
        .args(["study", "--check", "/nonexistent/s.toml"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&missing.stderr)
        .starts_with("hartscope: /nonexistent/s.toml: cannot be read"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn shipped_studies_are_valid() {
    let studies = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../studies");
    let mut n = 0;
    for e in std::fs::read_dir(&studies).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let out = Command::new(env!("CARGO_BIN_EXE_hartscope"))
                .arg("study")
                .arg("--check")
                .arg(&p)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}: {}",
                p.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            n += 1;
        }
    }
    assert!(
        n >= 2,
        "studies/ holds the console-path study and the smoke study"
    );
}
