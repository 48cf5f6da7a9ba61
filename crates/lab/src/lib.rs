//! Studies end to end: scenario files, runs of their variants, the SQLite
//! results store, reports (Markdown and self-contained HTML), `compare` and
//! `history`.
//!
//! Flow: [`Scenario::load`] validates a file completely; [`study::run_study`]
//! builds the images, runs every variant (in parallel threads, each with its
//! own machine), stores each completed run in one transaction and writes the
//! report from the stored runs; [`report::build`] turns stored runs into a
//! document that [`doc`] renders as Markdown or HTML.

pub mod derive;
pub mod doc;
pub mod error;
pub mod fixtures;
pub mod guest_metrics;
pub mod history;
pub mod ipis;
pub mod metric;
pub mod paths;
pub mod record;
pub mod report;
pub mod report_guest;
pub mod report_itrace;
pub mod run;
pub mod scenario;
pub mod shared_boot;
pub mod store;
pub mod study;
pub mod timestamp;
pub mod validate;

pub use error::{LabError, Result};
pub use metric::Metric;
pub use record::RunRecord;
pub use scenario::{Context, Scenario};
pub use store::Store;

/// The hartscope version recorded with every run.
pub const VERSION: &str = concat!("hartscope ", env!("CARGO_PKG_VERSION"));

pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
pub(crate) use fixtures as testdata;
