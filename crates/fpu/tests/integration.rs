//! This crate's integration tests, one module per file, built as one
//! test binary: a binary for each file was linked on its own (with thin
//! LTO under `make test`), and the links were most of the suite's build
//! time. One file's tests: `cargo test -p hs-fpu --test integration -- NAME::`.

mod common;

mod host_fpu;
mod isa_programs;
mod softfloat_oracle;
mod spec_vectors;
mod threads;
