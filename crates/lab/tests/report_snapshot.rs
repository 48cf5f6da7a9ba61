//! Snapshot of the Markdown report built from fabricated stored runs: the
//! runs go through the results store and come back before being reported,
//! exactly as `hartscope compare` does. `UPDATE_SNAPSHOTS=1` rewrites the
//! snapshot files after a deliberate change.

use std::path::{Path, PathBuf};

use hs_lab::doc::{html, markdown};
use hs_lab::fixtures::console_path_pair;
use hs_lab::history::compare;
use hs_lab::report::{build, RepeatOutcome, ReportInput, ReportRun};
use hs_lab::scenario::{Check, CheckKind, Op, Rhs};
use hs_lab::store::{NewRun, Store};
use hs_lab::Metric;

fn snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_SNAPSHOTS=1 writes it)", path.display()));
    if expected != actual {
        let at = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{} differs from the report at line {}:\n  expected: {:?}\n  actual:   {:?}\n(UPDATE_SNAPSHOTS=1 rewrites it after a deliberate change)",
            path.display(),
            at + 1,
            expected.lines().nth(at),
            actual.lines().nth(at)
        );
    }
}

fn store_pair(db: &PathBuf, profile: bool) -> Store {
    let _ = std::fs::remove_file(db);
    let mut store = Store::open(db).unwrap();
    let (a, b) = console_path_pair(profile);
    for r in [&a, &b] {
        store
            .insert(&NewRun {
                batch: "batch-1",
                record: r,
                console: r.console.text.as_bytes(),
                headline: Some(("cycles".into(), r.counters.cycles as f64)),
            })
            .unwrap();
    }
    store
}

fn checks() -> Vec<Check> {
    let cmp = |name: &str, metric: &str, op, rhs| Check {
        name: name.into(),
        variant: "B".into(),
        kind: CheckKind::Compare {
            metric: metric.parse().unwrap(),
            op,
            rhs,
            factor: 1.0,
        },
    };
    vec![
        cmp(
            "hvc_sbi_tty_put samples vanish in B",
            "samples[hvc_sbi_tty_put]",
            Op::Eq,
            Rhs::Value(0.0),
        ),
        cmp(
            "n_tty_write samples drop in B",
            "samples[n_tty_write]",
            Op::Lt,
            Rhs::Variant("A".into()),
        ),
        cmp(
            "shell window shorter in B",
            "window[shell banner..ls /bin /usr/share].cycles",
            Op::Lt,
            Rhs::Variant("A".into()),
        ),
        cmp(
            "memory stalls drop in B",
            "stat[system.cpu0.memStallCycles]",
            Op::Lt,
            Rhs::Variant("A".into()),
        ),
        cmp(
            "a phase that never ran",
            "phase[cat sample].cycles",
            Op::Gt,
            Rhs::Value(0.0),
        ),
        Check {
            name: "B reaches the console".into(),
            variant: "B".into(),
            kind: CheckKind::ConsoleContains("variant B".into()),
        },
        Check {
            name: "C is compared".into(),
            variant: "C".into(),
            kind: CheckKind::ConsoleContains("x".into()),
        },
    ]
}

fn input(store: &Store, repeats: Vec<RepeatOutcome>) -> ReportInput {
    let runs = [1, 2].iter().map(|&id| {
        let s = store.get(id).unwrap();
        ReportRun {
            id: s.id,
            batch: s.batch,
            record: s.record,
        }
    });
    ReportInput {
        title: "Study: console-path".into(),
        description: "Fabricated runs shaped like the P87 page.".into(),
        runs: runs.collect(),
        headline: [
            "cycles",
            "window[shell banner..ls /bin /usr/share].cycles",
            "cpi",
            "samples[n_tty_write]",
            "samples[hvc_sbi_tty_put]",
            "device[uart0.irqs]",
        ]
        .iter()
        .map(|m| m.parse::<Metric>().unwrap())
        .collect(),
        checks: checks(),
        tables: Vec::new(),
        repeats,
        not_run: Vec::new(),
        failed: Vec::new(),
    }
}

#[test]
fn report_with_every_section_filled() {
    let dir = std::env::temp_dir().join(format!("hs-lab-snap-full-{}", std::process::id()));
    let store = store_pair(&dir.join("r.db"), true);
    let repeats = vec![
        RepeatOutcome {
            variant: "A".into(),
            runs: 3,
            differences: vec![],
        },
        RepeatOutcome {
            variant: "B".into(),
            runs: 3,
            differences: vec!["cycles".into()],
        },
    ];
    let blocks = build(&input(&store, repeats));
    snapshot("full.md", &markdown(&blocks));
    let page = html("Study: console-path", &blocks);
    assert!(page.contains("<svg") && page.contains("<td class=\"FAIL\">FAIL</td>"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn report_of_this_build_says_not_run() {
    let dir = std::env::temp_dir().join(format!("hs-lab-snap-bare-{}", std::process::id()));
    let store = store_pair(&dir.join("r.db"), false);
    let md = markdown(&build(&input(&store, vec![])));
    snapshot("not_run.md", &md);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compare_reads_the_stored_scenario() {
    let dir = std::env::temp_dir().join(format!("hs-lab-snap-cmp-{}", std::process::id()));
    let store = store_pair(&dir.join("r.db"), false);
    let input = compare(&store, &[2, 1]).unwrap();
    assert_eq!(
        input.runs[0].record.variant, "B",
        "the first id is the baseline"
    );
    // The fabricated scenario text names no headline: the defaults are shown.
    let md = markdown(&build(&input));
    assert!(md.contains("| metric | B | A | Δ A vs B |"), "{md}");
    assert!(
        md.contains("| `cycles` | 222,825,777 | 223,777,049 | +0.43% |"),
        "{md}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
