//! Shared boots in a study (issue 17): `hartscope study --boot shared` boots
//! each distinct guest and machine once, snapshots it at the first phase
//! marker, keeps the snapshot in the cache and runs every variant and
//! repeat from it; the counts from the cut on are those of runs that booted
//! themselves, and a second study run takes the boot from the cache.

use crate::support;

use hs_lab::store::Store;
use support::*;

/// Run the smoke study with `--boot MODE`; its stored runs by (variant, repeat).
fn study(dir: &Scratch, mode: &str, tag: &str) -> (String, Vec<hs_lab::record::RunRecord>) {
    let db = dir.path(&format!("{tag}.db"));
    let toml = root().join("studies/smoke.toml");
    let out = hartscope(
        &[
            "study",
            toml.to_str().unwrap(),
            "--boot",
            mode,
            "--repeat",
            "2",
            "--jobs",
            "2",
            "--db",
            db.to_str().unwrap(),
            "--out",
            dir.path(tag).to_str().unwrap(),
        ],
        dir,
        BOOT_DEADLINE,
    );
    assert!(out.status.success(), "{}", out.tail());
    let store = Store::open(&db).unwrap();
    let mut runs: Vec<_> = store
        .history(Some("smoke"))
        .unwrap()
        .iter()
        .map(|h| store.get(h.id).unwrap().record)
        .collect();
    runs.sort_by(|a, b| (&a.variant, a.repeat).cmp(&(&b.variant, b.repeat)));
    (out.stderr, runs)
}

#[test]
fn shared_boots_give_the_counts_of_runs_that_booted_and_are_cached() {
    let _ = image("custom");
    let dir = Scratch::new("study-shared-boot");
    let (_, each) = study(&dir, "each", "each");
    let (first, shared) = study(&dir, "shared", "shared");
    let (second, again) = study(&dir, "shared", "again");
    assert_eq!(each.len(), 4, "two variants, two repeats");
    assert_eq!(shared.len(), 4);

    // One boot per distinct machine (one hart, two harts), then the cache.
    let boots = first.matches("shared boot: booting").count();
    let cached = first.matches("shared boot: from the cache").count();
    assert_eq!(boots + cached, 2, "{first}");
    assert_eq!(
        second.matches("shared boot: from the cache").count(),
        2,
        "{second}"
    );
    assert_eq!(
        second.matches("shared boot: booting").count(),
        0,
        "{second}"
    );

    for ((e, s), a) in each.iter().zip(&shared).zip(&again) {
        assert_eq!((&e.variant, e.repeat), (&s.variant, s.repeat));
        assert!(e.shared_boot.is_none(), "a run that booted itself says so");
        let info = s
            .shared_boot
            .as_ref()
            .expect("the run names its shared boot");
        assert_eq!(info.timing, "warm", "the same model goes on warm");
        assert!(a.shared_boot.as_ref().unwrap().cached);
        assert_eq!(info.key, a.shared_boot.as_ref().unwrap().key);
        // The whole run's counts are those of the run that booted itself.
        assert_eq!(e.counters.cycles, s.counters.cycles, "{}", e.variant);
        assert_eq!(e.counters.instret, s.counters.instret, "{}", e.variant);
        assert_eq!(s.counters.cycles, a.counters.cycles);
        assert_eq!(e.console.sha256, s.console.sha256, "{}: console", e.variant);
        let phases = |r: &hs_lab::record::RunRecord| -> Vec<(String, u64)> {
            r.observations
                .phases
                .iter()
                .map(|p| (p.label.clone(), p.cycles()))
                .collect()
        };
        assert_eq!(phases(e), phases(s), "{}: phase lengths", e.variant);
        assert!(phases(e).len() >= 3);
    }
}
