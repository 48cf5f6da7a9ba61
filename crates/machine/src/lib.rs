//! The board: memory map, device tree, boot loading, hart scheduling, virtual time.
//!
//! [`Machine`] builds a QEMU-`virt`-compatible board ([`layout`]), loads
//! firmware, kernel and initrd the way QEMU does ([`loader`]), generates the
//! device tree from the devices present ([`dtb`]) and runs the harts in a
//! fixed interleaving of bounded slices on simulated time only.

pub mod board;
pub mod config;
pub mod dtb;
pub mod error;
pub mod events;
pub mod layout;
pub mod loader;
pub mod lockstep;
pub mod machine;
pub mod markers;
pub mod observation;
pub mod observing;
pub mod reports;
mod sample_store;
pub mod sampler;
pub mod snapshot;
pub mod symbols;
pub mod task;

pub use board::{Board, DevId};
pub use config::{ipi_policy, load_devices};
pub use error::MachineError;
pub use hs_core;
pub use hs_devices;
pub use hs_timing;
pub use loader::{BootFile, BootImages};
pub use lockstep::{lockstep, Divergence};
pub use machine::{
    ConsoleInput, InputEvent, Machine, MachineConfig, Progress, RunSummary, StopReason,
    VirtioDevice,
};
pub use markers::{MarkerLog, Phase};
pub use observation::{ItraceSpec, ItraceWindow, ObserveOptions, ObserveSetupError, BOOT_PHASE};
pub use observing::{HartTally, Observing};
pub use sampler::{SamplerConfig, SpaceMark};
pub use snapshot::TimingRestore;
pub use symbols::{GuestSymbols, KernelSymbolSource, PendingSymbols, SymbolSources};
pub use task::TaskReader;
