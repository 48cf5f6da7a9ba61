//! This crate's integration tests, one module per file, built as one
//! test binary: a binary for each file was linked on its own (with thin
//! LTO under `make test`), and the links were most of the suite's build
//! time. One file's tests: `cargo test -p hs-machine --test integration -- NAME::`.

mod common;

mod baremetal;
mod board;
mod gpio_linux;
mod linux;
mod lockstep;
mod spi_board;
mod translated;
mod virtio_blk_board;
