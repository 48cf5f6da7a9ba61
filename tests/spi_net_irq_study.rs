//! The SPI network study (`studies/spi-net-irq.toml`, the Openmoko seed)
//! end to end at a small scale (16 x 8 KiB instead of 64 x 8 KiB), every
//! variant twice:
//!
//! * every byte the peer sent reaches ttcp in every variant;
//! * the study's own checks decide the seed's direction (async > direct >
//!   polled in throughput, the reverse in system time, a polled frame
//!   waiting longer for the driver): each must come out PASS or FAIL, none
//!   NOT RUN — and the verdicts are printed so a FAIL is visible;
//! * the profile split by the study's groups is in the report, and ttcp's
//!   kernel and user time from the samples beside the guest's own figures;
//! * each variant's two runs are identical (the report's repeats table).
//!
//! The polled and async variants are kernel patch series built
//! incrementally on the kept build tree (under a minute each).

use crate::support;

#[test]
fn spi_net_irq_study_runs_all_three_drivers_and_repeats_exactly() {
    let _ = support::image("custom");
    let run = support::run_study("studies/spi-net-irq.toml", &["COUNT=16"]);
    // 3 workload checks, 3 "every byte", 7 directions.
    run.assert_verdicts(
        13,
        &[
            "every byte",
            "the stock driver too",
            "the asynchronous one",
            "runs to its end",
        ],
    );
    for section in [
        "## Throughput and system time (the seed's table)",
        "## Where the receive window's profile samples went",
        "## ttcp's time as hartscope's samples saw it",
        "| kernel_seconds |",
        "| SPI transfer |",
        "| interrupt entry |",
    ] {
        assert!(
            run.report.contains(section),
            "no `{section}` in the report:\n{}",
            run.report
        );
    }
    run.assert_repeats_identical(&["polled", "direct", "async"]);
}
