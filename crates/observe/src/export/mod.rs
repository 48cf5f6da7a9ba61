//! Views of one record. All output is deterministic byte for byte: no
//! hash-map order, no host time, fixed float formatting.

pub mod chrome;
pub mod flamegraph;
pub mod folded;
pub mod hot;
pub mod itrace_text;
pub mod perf_script;
pub mod stats_txt;
pub mod tables;
mod text;

pub use chrome::chrome_trace;
pub use flamegraph::{flamegraph_svg, FlamegraphOptions};
pub use folded::{fold, fold_weighted, folded_text, FoldOptions};
pub use hot::{ChildrenRow, HotFunctions, HotRow};
pub use itrace_text::{annotate, itrace_text};
pub use perf_script::{perf_script, PerfScript};
pub use stats_txt::{stats_txt, stats_txt_blocks};
pub use tables::{phase_table, CycleShape};
