//! Host-side errors: each prints as one sentence naming the file or
//! setting at fault. Nothing the guest does produces one of these.

use std::path::PathBuf;

use crate::layout::MAX_HARTS;

#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    #[error("cannot read {what} file {path}: {source}")]
    Read {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{what} file {name} is empty")]
    Empty { what: &'static str, name: String },
    #[error("{what} file {name} is not a usable RISC-V image: {reason}")]
    BadImage {
        what: &'static str,
        name: String,
        reason: String,
    },
    #[error("{what} {name} needs memory at {start:#x}..{end:#x}, outside RAM [{ram_start:#x}..{ram_end:#x})")]
    OutsideRam {
        what: &'static str,
        name: String,
        start: u64,
        end: u64,
        ram_start: u64,
        ram_end: u64,
    },
    #[error("{a} [{a_start:#x}..{a_end:#x}) and {b} [{b_start:#x}..{b_end:#x}) overlap in memory")]
    ImagesOverlap {
        a: String,
        a_start: u64,
        a_end: u64,
        b: String,
        b_start: u64,
        b_end: u64,
    },
    #[error("-m {} is too small for {what}: at least {need_mib} MiB of RAM is needed", ram_size(*have_bytes))]
    RamTooSmall {
        have_bytes: u64,
        need_mib: u64,
        what: String,
    },
    #[error("-m {}: RAM size must be a multiple of 4 KiB between 4 KiB and {max} GiB", ram_size(*.0), max = crate::layout::MAX_RAM >> 30)]
    BadRamSize(u64),
    #[error("--smp {0}: this machine supports 1 to {MAX_HARTS} harts")]
    BadSmp(usize),
    #[error("CPU frequency {0} Hz must be a positive multiple of the 10 MHz timebase")]
    BadFrequency(u64),
    #[error("quantum of {0} cycles: must be at least 1")]
    BadQuantum(u64),
    #[error("-initrd needs -kernel: the initrd is placed relative to the kernel")]
    InitrdWithoutKernel,
    #[error("nothing to run: give -bios FILE and/or -kernel FILE")]
    NothingToRun,
    /// A caller's mistake, not the user's: the machine was built with
    /// `Observing<M, false>` and asked for an instruction trace.
    #[error(
        "an instruction trace was asked of a machine built without tracing (Observing<M, true>)"
    )]
    TraceNotBuilt,
    #[error("snapshot: {0}")]
    Snapshot(String),
    #[error("device map: {0}")]
    DeviceMap(#[from] hs_devices::MapError),
    #[error("board wiring: {0}")]
    Wiring(String),
    #[error("guest RAM: {0}")]
    Ram(#[from] hs_bus::ram::RamError),
    #[error("device tree generation failed: {0}")]
    Fdt(String),
    #[error("cannot write channel output {path}: {source}")]
    WriteOutput {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("channel name `{0}` cannot be used as a file name")]
    BadChannelName(String),
}

/// A RAM size as the user would have typed it (`-m` takes MiB by default).
fn ram_size(bytes: u64) -> String {
    match bytes {
        0 => "0".into(),
        b if b % (1 << 30) == 0 => format!("{}G", b >> 30),
        b if b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => format!("{b} bytes"),
    }
}

impl From<vm_fdt::Error> for MachineError {
    fn from(e: vm_fdt::Error) -> Self {
        MachineError::Fdt(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::MachineError;

    #[test]
    fn ram_sizes_print_as_typed() {
        assert_eq!(
            MachineError::BadRamSize(99999 << 30).to_string(),
            "-m 99999G: RAM size must be a multiple of 4 KiB between 4 KiB and 64 GiB"
        );
        assert!(MachineError::BadRamSize(0)
            .to_string()
            .starts_with("-m 0: "));
        assert!(MachineError::BadRamSize(6 << 10)
            .to_string()
            .starts_with("-m 6K: "));
        assert!(MachineError::BadRamSize(4097)
            .to_string()
            .starts_with("-m 4097 bytes: "));
        let small = MachineError::RamTooSmall {
            have_bytes: 4 << 10,
            need_mib: 17,
            what: "the kernel".into(),
        };
        assert_eq!(
            small.to_string(),
            "-m 4K is too small for the kernel: at least 17 MiB of RAM is needed"
        );
    }
}
