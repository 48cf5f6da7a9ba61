//! This crate's integration tests, one module per file, built as one
//! test binary: a binary for each file was linked on its own (with thin
//! LTO under `make test`), and the links were most of the suite's build
//! time. One file's tests: `cargo test -p hs-devices --test integration -- NAME::`.

mod wire;

mod enc28j60_fuzz;
mod ethoc_fuzz;
mod fuzz;
mod fuzz_spi_dma;
mod gpio_fuzz;
mod nic_snapshot;
mod sdhci_fuzz;
mod spi_dma;
mod virtio_net_fuzz;
