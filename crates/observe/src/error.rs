//! Host-side errors of the observation crate: bad input files and misuse of
//! the builders. Each prints as one sentence naming the file or key at fault.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file is not an ELF image the symbolizer understands.
    #[error("{name} is not a readable ELF file: {reason}")]
    Elf { name: String, reason: String },
    /// A kallsyms line does not have the `ADDRESS TYPE NAME [module]` shape.
    #[error("{name} line {line}: expected `ADDRESS TYPE NAME [module]`, found {text:?}")]
    KallsymsLine {
        name: String,
        line: usize,
        text: String,
    },
    /// Every kallsyms address is zero: the file was read without privilege.
    #[error(
        "{name} has only zero addresses (it was read with kptr_restrict in force; read it as root)"
    )]
    KallsymsZeroed { name: String },
    /// A `/proc/<pid>/maps` line is malformed.
    #[error(
        "{name} line {line}: expected `START-END PERMS OFFSET DEV INODE [PATH]`, found {text:?}"
    )]
    MapsLine {
        name: String,
        line: usize,
        text: String,
    },
    /// A `/proc/modules` line is malformed.
    #[error("{name} line {line}: expected `NAME SIZE REFS DEPS STATE 0xADDRESS`, found {text:?}")]
    ModulesLine {
        name: String,
        line: usize,
        text: String,
    },
    /// A stat name is not a dotted identifier.
    #[error("stat name {name:?} is invalid: {reason}")]
    StatName { name: String, reason: &'static str },
    /// A stat was given without a description.
    #[error("stat {name} has no description")]
    StatDescription { name: String },
    /// Two stats of one block share a name.
    #[error("stat {name} appears twice in stat block {block:?}")]
    DuplicateStat { name: String, block: String },
    /// A guest frequency of zero cannot convert cycles to time.
    #[error("guest frequency (guest_hz) must be greater than zero")]
    ZeroFrequency,
    /// A value could not be encoded as JSON.
    #[error("cannot encode {what} as JSON: {reason}")]
    Json { what: &'static str, reason: String },
    /// A BTF blob is malformed or lacks what is looked up in it.
    #[error("{name}: {reason}")]
    Btf { name: String, reason: String },
    /// A sample period of zero is meaningless for a sampled profile.
    #[error("sample period (sample_period) must be greater than zero")]
    ZeroSamplePeriod,
}

pub type Result<T, E = ObserveError> = std::result::Result<T, E>;
