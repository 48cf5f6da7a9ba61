//! Fuzz targets: each is a function from arbitrary bytes to a run of one
//! part of hartscope that takes input from the guest or the user. A target
//! panics only when it finds a bug (a host panic, or a broken invariant it
//! asserts); every refusal must be an error value or a guest-visible trap.
//!
//! The same functions serve two drivers: `fuzz/` (cargo-fuzz, libFuzzer,
//! coverage-guided; `scripts/fuzz.sh`) and this crate's tests, which replay
//! the committed seeds and a fixed set of pseudo-random inputs on stable.

pub mod board;
pub mod board_snapshot;
pub mod boot_images;
pub mod btf;
pub mod hart;
pub mod snapshot;
pub mod store;
pub mod text_inputs;

/// Every target by name (the names of `fuzz/fuzz_targets/*.rs`).
pub const TARGETS: &[(&str, fn(&[u8]))] = &[
    ("hart", hart::run),
    ("board", board::run),
    ("boot_images", boot_images::run),
    ("machine_toml", text_inputs::machine_toml),
    ("scenario_toml", text_inputs::scenario_toml),
    ("results_store", store::run),
    ("btf", btf::run),
    ("snapshot", snapshot::run),
    ("board_snapshot", board_snapshot::run),
];

/// Reads fuzz input front to back; past the end every read is zero, so
/// every input, however short, is a complete run.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Up to `n` bytes (fewer at the end).
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        head
    }

    pub fn u8(&mut self) -> u8 {
        self.bytes(1).first().copied().unwrap_or(0)
    }

    pub fn u16(&mut self) -> u16 {
        u16::from(self.u8()) | u16::from(self.u8()) << 8
    }

    pub fn u64(&mut self) -> u64 {
        let mut v = [0u8; 8];
        let b = self.bytes(8);
        v[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(v)
    }

    /// One of `choices`, by the next byte.
    pub fn pick<T: Copy>(&mut self, choices: &[T]) -> T {
        choices[self.u8() as usize % choices.len()]
    }
}

/// Where the repository's files are (machine descriptions, guest recipes).
pub fn repo_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
