//! The SD-card study (`studies/sd-block.toml`, the Genode/Pandaboard seed)
//! end to end at a small scale (64 KiB per transfer instead of 1 MiB),
//! every variant twice:
//!
//! * every variant's workload runs to its end and reports a rate for every
//!   block size, read and write (the report's two tables have no gaps);
//! * the study's checks decide the seed's directions: each comes out PASS
//!   or FAIL, none NOT RUN, and the verdicts are printed so a FAIL shows;
//! * every transfer took at least one device request per `dd` block, and
//!   a 512-byte direct read on virtio-blk exactly one (the request tables
//!   count what the disk's `/sys/block/*/stat` says it completed);
//! * each variant's two runs are identical (the report's repeats table).

use crate::support;

#[test]
fn sd_block_study_runs_every_mode_and_repeats_exactly() {
    let _ = support::image("custom");
    let run = support::run_study("studies/sd-block.toml", &["SIZE_KIB=64"]);
    // 6 workload checks and the study's 9 directions.
    run.assert_verdicts(15, &["runs to its end"]);
    let sizes = ["512", "1024", "4096", "16384", "65536", "262144", "1048576"];
    for table in [
        "## Read throughput by block size",
        "## Write throughput by block size",
    ] {
        // block size and six variants, every cell a number
        for cells in run.positive_rows(table, &sizes) {
            assert_eq!(cells.len(), 7, "{cells:?}");
        }
    }
    // 64 KiB per transfer: dd moves max(1, 65536 / bs) blocks of bs bytes,
    // each at least one request
    for table in [
        "## Device requests per read transfer",
        "## Device requests per write transfer",
    ] {
        for cells in run.positive_rows(table, &sizes) {
            let bs: u64 = cells[0].parse().unwrap();
            let blocks = (65536 / bs).max(1);
            for c in &cells[1..] {
                let reqs: u64 = c.replace(',', "").parse().unwrap();
                assert!(
                    reqs >= blocks,
                    "{table}: {reqs} requests for {blocks} blocks of {bs} B: {cells:?}"
                );
            }
            if table.contains("read") && bs == 512 {
                // virtio-blk, the last column: one request per read
                assert_eq!(cells[6], "128", "{cells:?}");
            }
        }
    }
    run.assert_repeats_identical(&["adma", "sdma", "pio", "adma-1bit", "pio-1bit", "virtio-blk"]);
}
