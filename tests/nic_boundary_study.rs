//! The NIC-boundary study (`studies/nic-boundary.toml`, the Genode/Pandaboard
//! seed's NIC ladder) end to end at a small scale (128 KiB per transfer
//! instead of 1 MiB), every variant twice:
//!
//! * every variant's workload runs to its end — the native driver and the
//!   UIO driver with its TAP process at every rung — and reports a rate and
//!   a CPU time for each direction and packet size, TCP and UDP (no gaps in
//!   the tables), and the UDP datagrams lost;
//! * the study's checks decide the seed's directions: each comes out PASS or
//!   FAIL, none NOT RUN, and the verdicts are printed so a FAIL shows;
//! * the profile's groups show the boundary's own costs (nicd's copies, the
//!   notifications) in the boundary variants and none of them natively;
//! * each variant's two runs are identical (the report's repeats table).

use crate::support;

const VARIANTS: [&str; 6] = [
    "native",
    "boundary",
    "slot-alloc",
    "word-copy",
    "batched",
    "tcp-buffers",
];

#[test]
fn nic_boundary_study_climbs_the_ladder_and_repeats_exactly() {
    let _ = support::image("custom");
    let run = support::run_study("studies/nic-boundary.toml", &["SIZE_KIB=128"]);
    // 6 workload checks and the study's 14 directions.
    run.assert_verdicts(20, &["runs to its end"]);
    let rates = run.positive_rows(
        "## Throughput up the ladder",
        &[
            "rx_mibps.1024",
            "tx_mibps.1024",
            "rx_mibps.1450",
            "tx_mibps.1450",
        ],
    );
    for cells in &rates {
        assert_eq!(cells.len(), 1 + VARIANTS.len(), "{cells:?}");
        // No rate beyond the 100 Mbit/s wire (11.9 MiB/s of payload at most).
        for c in &cells[1..] {
            let v: f64 = c.parse().unwrap();
            assert!(v < 12.0, "faster than the wire: {cells:?}");
        }
    }
    run.positive_rows(
        "## UDP up the ladder",
        &[
            "udp_rx_mibps.1024",
            "udp_rx_mibps.1450",
            "udp_tx_mibps.1024",
            "udp_tx_mibps.1450",
        ],
    );
    let lost = run.section("## UDP datagrams lost on receive");
    for size in ["1024", "1450"] {
        assert!(
            lost.lines()
                .any(|l| l.starts_with(&format!("| udp_rx_lost.{size} | 0 |"))),
            "native UDP receive lost nothing at {size}:\n{lost}"
        );
    }
    run.positive_rows(
        "## CPU time per 1 MiB transfer",
        &[
            "rx 1024",
            "rx 1450",
            "tx 1024",
            "tx 1450",
            "udp rx 1024",
            "udp rx 1450",
            "udp tx 1024",
            "udp tx 1450",
        ],
    );
    let groups = run.section("## Where the transfers' busy cycles went");
    let row = |name: &str| -> Vec<u64> {
        let line = groups
            .lines()
            .find(|l| l.starts_with(&format!("| {name} |")))
            .unwrap_or_else(|| panic!("no group row {name}:\n{groups}"));
        line.trim_matches('|')
            .split('|')
            .skip(1)
            .map(|c| c.trim().replace(',', "").parse().unwrap())
            .collect()
    };
    for g in ["nicd copies", "notifications (eventfd poll UIO)"] {
        let samples = row(g);
        assert_eq!(samples[0], 0, "{g}: no nicd natively: {samples:?}");
        assert!(
            samples[1..].iter().all(|&s| s > 0),
            "{g}: sampled at every rung: {samples:?}"
        );
    }
    assert!(row("ethoc driver (kernel)")[0] > 0, "{groups}");
    run.assert_repeats_identical(&VARIANTS);
}
