//! The platform acceptance tests, one module per subject (`tests/*.rs`),
//! built as one test binary: each binary of its own was linked with thin
//! LTO over the whole workspace, and linking those 36 was most of the test
//! suite's build time. Run one subject with
//! `cargo test --profile ci -p hartscope --test acceptance -- engine_check::`.

mod observe_support;
mod support;

mod bad_input;
mod bench_cli;
mod boot_cli;
mod boot_matrix;
mod determinism;
mod dma_irq_study;
mod enc28j60_linux;
mod engine_check;
mod ethoc_linux;
mod gpio_dwapb;
mod guest_extras;
mod guest_lock;
mod guest_perf;
mod guest_qemu;
mod ipi_latency;
mod irq_affinity;
mod irq_stress;
mod isa_machine;
mod nic_boundary_study;
mod observe_determinism;
mod observe_nullsys;
mod observe_profile;
mod observe_tasks;
mod observe_trace;
mod sd_block_study;
mod sd_linux;
mod snapshot;
mod spi_linux;
mod spi_net_irq_study;
mod study_e2e;
mod study_scenarios;
mod study_shared_boot;
mod timing_model;
mod validate_cli;
mod virtio_blk_linux;
mod virtio_net_linux;
