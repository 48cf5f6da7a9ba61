//! The DMA-interrupt study (`studies/dma-irq.toml`, the Plan 9 SPI seed) end
//! to end at a small scale (10 periods per hart instead of 100), every
//! variant twice:
//!
//! * the seed's direction is decided by the study's own checks — each is
//!   PASS except the one that asks for the seed's +133% without a load on
//!   hart 0, which this Linux does not reproduce (FAIL, honestly);
//! * the wake-up paths come from the timeline: remote (interrupt on hart 0,
//!   an IPI to the loop's hart) with the default routing, local after
//!   rerouting;
//! * no IPI is taken before it was sent (the machine's slice order must not
//!   leak into guest-visible time);
//! * each variant's two runs are identical (the report's repeats table).
//!
//! The `pio-poll` variants need the `custom` kernel with the study's patch:
//! built incrementally from the kept build tree (a minute), not from scratch.

use std::collections::BTreeMap;

use hs_observe::EventKind;

use crate::support;

#[test]
fn dma_irq_study_reproduces_the_routing_effect_and_keeps_ipis_causal() {
    let _ = support::image("custom");
    let run = support::run_study("studies/dma-irq.toml", &["ITERATIONS=10"]);
    let stdout = &run.stdout;

    // The study's checks: all PASS but the seed's magnitude without load.
    let verdicts = run.verdicts();
    assert_eq!(
        verdicts.len(),
        19,
        "7 workload checks and 12 of the study's:\n{stdout}"
    );
    for v in &verdicts {
        let expected_fail = v.contains("by more than half, as the seed's +133%");
        assert_eq!(
            v.starts_with("FAIL"),
            expected_fail,
            "unexpected verdict: {v}\n{stdout}"
        );
        assert!(!v.starts_with("NOT RUN"), "{v}");
    }

    let md = &run.report;
    for section in [
        "## Loop runtime per hart (the seed's Table 2)",
        "## Interrupt to wake-up paths",
        "One remote `write` on the timeline (dma-rt0",
    ] {
        assert!(md.contains(section), "report.md has {section:?}:\n{md}");
    }
    run.assert_repeats_identical(&[
        "dma",
        "dma-local",
        "pio-poll",
        "pio-poll-rt0",
        "gpio",
        "dma-rt0",
        "dma-rt0-local",
    ]);
    let db = run.db();

    // From the stored records: routing, and IPIs never taken before sent.
    let store = hs_lab::store::Store::open(&db).unwrap();
    let mut runs = BTreeMap::new();
    for id in 1..=14 {
        let r = store.get(id).unwrap().record;
        if r.repeat == 0 {
            runs.insert(r.variant.clone(), r);
        }
    }
    for (variant, rec) in &runs {
        let ev = &rec.observations.events;
        assert!(!ev.is_empty(), "{variant} kept its timeline");
        let mut last_sent: BTreeMap<u16, u64> = BTreeMap::new();
        let mut received = 0;
        for e in ev {
            match e.kind {
                EventKind::IpiSent { to } => {
                    last_sent.insert(to, e.cycle);
                }
                EventKind::IpiReceived { .. } => {
                    received += 1;
                    let sent = last_sent.get(&e.hart).copied();
                    assert!(
                        sent.is_some_and(|s| s <= e.cycle),
                        "{variant}: hart {} took an IPI at cycle {} before any was sent to it",
                        e.hart,
                        e.cycle
                    );
                }
                _ => {}
            }
        }
        assert!(received > 0, "{variant}: a 4-hart Linux run sends IPIs");
        let paths = |phase: &str| hs_lab::paths::wake_paths(rec, "dma0", "write", Some(phase));
        if variant.starts_with("dma") {
            let on3 = paths("rtloop cpu3").unwrap();
            assert_eq!(
                on3.len(),
                10,
                "{variant}: every write on hart 3 waited for the DMA interrupt"
            );
            let remote = on3.iter().filter(|p| p.remote()).count();
            let expect = if variant.ends_with("local") { 0 } else { 10 };
            assert_eq!(
                remote, expect,
                "{variant}: interrupts on another hart than the loop's"
            );
            for p in on3.iter().filter(|p| p.remote()) {
                let (sent, taken) = (p.ipi_sent.unwrap(), p.ipi_received.unwrap());
                assert!(
                    p.irq <= sent && sent <= taken && taken <= p.span.exit,
                    "{variant}: path out of order: {p:?}"
                );
            }
            assert!(
                paths("rtloop cpu0").unwrap().iter().all(|p| !p.remote()),
                "{variant}: on hart 0 the interrupt is local"
            );
        } else {
            assert!(
                paths("rtloop cpu3").unwrap().is_empty(),
                "{variant}: no DMA interrupt"
            );
        }
    }
}
