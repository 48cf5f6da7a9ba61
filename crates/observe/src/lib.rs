//! Counters, samples, phases, traces and their exporters.
//!
//! This crate is the data side of observability: the types a run record
//! stores ([`Observations`]), a [`Symbolizer`] that names sampled addresses,
//! and exporters that render one record as gem5 `stats.txt`, `perf script`
//! text, folded stacks, a flamegraph SVG, a hot-functions table, a Chrome
//! trace, an instruction trace and Markdown tables. Every exporter is
//! deterministic byte for byte.

pub mod error;
pub mod event;
pub mod export;
pub mod itrace;
pub mod phase;
pub mod record;
pub mod sample;
pub mod source_lines;
pub mod stats;
pub mod symbols;

pub use error::{ObserveError, Result};
pub use event::{cause_name, syscall_name, syscall_number, Event, EventKind};
pub use itrace::{ItraceLine, LineAccess, LineTouch, StallCause, SymbolOffset};
pub use phase::{HartCounts, Phase, PhaseRecorder};
pub use record::Observations;
pub use sample::{coalesce, FastHash, FastHasher, Privilege, Sample, Task};
pub use source_lines::SourceLines;
pub use stats::{Stat, StatBlock, StatValue, Unit};
pub use symbols::{
    parse_proc_maps, parse_proc_modules, satp_root, AddressSpace, Btf, Callers, Frame, ImageId,
    Mapping, ModuleLoad, NoUserSpace, Process, ResolvedSample, SampleParts, SatpResolver, Space,
    StackId, StackResolver, SymbolTable, Symbolizer, TaskLayout, UserBinary, UserIdentifier,
    UserImage, UserResolver,
};
