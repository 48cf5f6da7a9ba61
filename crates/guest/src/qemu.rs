//! Booting an image under Debian's `qemu-system-riscv64 -M virt`: used at
//! build time to capture the Debian kernel's /proc/kallsyms, and by the
//! integration test that proves each image independently of our emulator.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::error::{io_err, Result};
use crate::process::run_with_timeout;

pub const QEMU: &str = "qemu-system-riscv64";

pub struct QemuBoot<'a> {
    pub firmware: &'a Path,
    pub kernel: &'a Path,
    pub initrd: &'a Path,
    pub append: &'a str,
    pub smp: u32,
    pub memory_mib: u32,
    pub timeout: Duration,
    /// Where the console output is written.
    pub console_log: PathBuf,
    /// A raw disk image attached as virtio-blk (`/dev/vda` in the guest).
    pub disk: Option<&'a Path>,
}

/// The console output of a boot, and whether QEMU exited by itself in time.
pub struct QemuResult {
    pub console: String,
    pub exited: bool,
}

impl QemuBoot<'_> {
    pub fn command(&self) -> Command {
        let mut c = Command::new(QEMU);
        c.args(["-M", "virt", "-nographic", "-no-reboot"])
            .arg("-smp")
            .arg(self.smp.to_string())
            .arg("-m")
            .arg(format!("{}M", self.memory_mib))
            .arg("-bios")
            .arg(self.firmware)
            .arg("-kernel")
            .arg(self.kernel)
            .arg("-initrd")
            .arg(self.initrd)
            .arg("-append")
            .arg(self.append);
        if let Some(disk) = self.disk {
            c.arg("-drive")
                .arg(format!("file={},format=raw,if=none,id=hd0", disk.display()))
                .args(["-device", "virtio-blk-device,drive=hd0"]);
        }
        c
    }

    pub fn run(&self) -> Result<QemuResult> {
        let step = format!("booting {} under {QEMU}", self.kernel.display());
        let status = run_with_timeout(&step, &mut self.command(), &self.console_log, self.timeout)?;
        let bytes = std::fs::read(&self.console_log).map_err(io_err("read", &self.console_log))?;
        Ok(QemuResult { console: String::from_utf8_lossy(&bytes).replace('\r', ""), exited: status.is_some() })
    }
}

pub const KALLSYMS_BEGIN: &str = "@@hartscope-kallsyms-begin@@";
pub const KALLSYMS_END: &str = "@@hartscope-kallsyms-end@@";
pub const MODULES_BEGIN: &str = "@@hartscope-modules-begin@@";
pub const MODULES_END: &str = "@@hartscope-modules-end@@";
pub const BTF_BEGIN: &str = "@@hartscope-btf-size-begin@@";
pub const BTF_END: &str = "@@hartscope-btf-size-end@@";

/// The workload that prints /proc/kallsyms and /proc/modules between
/// delimiters, and copies the kernel's BTF to the virtio disk (binary data
/// cannot cross the console), printing its size.
pub fn kallsyms_workload() -> String {
    format!(
        "echo 0 > /proc/sys/kernel/kptr_restrict\n\
         echo {KALLSYMS_BEGIN}\n\
         cat /proc/kallsyms\n\
         echo {KALLSYMS_END}\n\
         echo {MODULES_BEGIN}\n\
         cat /proc/modules\n\
         echo {MODULES_END}\n\
         if [ -e /sys/kernel/btf/vmlinux ] && [ -b /dev/vda ]; then\n\
         cat /sys/kernel/btf/vmlinux > /dev/vda && sync\n\
         echo {BTF_BEGIN}\n\
         wc -c < /sys/kernel/btf/vmlinux\n\
         echo {BTF_END}\n\
         fi\n"
    )
}

/// The text between two delimiter lines of a console log.
pub fn between<'a>(console: &'a str, begin: &str, end: &str) -> std::result::Result<&'a str, String> {
    let start = console.find(&format!("{begin}\n")).ok_or(format!("`{begin}` never appeared"))?;
    let body = &console[start + begin.len() + 1..];
    let stop = body.find(&format!("{end}\n")).ok_or(format!("`{end}` never appeared"))?;
    Ok(&body[..stop])
}

/// Extracts and checks the kallsyms text between the delimiters.
pub fn parse_kallsyms(console: &str) -> std::result::Result<String, String> {
    let body = between(console, KALLSYMS_BEGIN, KALLSYMS_END)?;
    let mut count = 0usize;
    let mut nonzero = false;
    for (i, line) in body.lines().enumerate() {
        let mut parts = line.split_whitespace();
        let (Some(addr), Some(ty), Some(_name)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!("line {} is not `address type name`: {line:?}", i + 1));
        };
        let a = u64::from_str_radix(addr, 16).map_err(|_| format!("line {} has a bad address: {line:?}", i + 1))?;
        if ty.len() != 1 {
            return Err(format!("line {} has a bad symbol type: {line:?}", i + 1));
        }
        nonzero |= a != 0;
        count += 1;
    }
    if count < 1000 {
        return Err(format!("only {count} symbols"));
    }
    if !nonzero {
        return Err("every address is zero (kptr_restrict)".into());
    }
    Ok(body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_between_delimiters() {
        let mut console = String::from("boot noise\n");
        console.push_str(KALLSYMS_BEGIN);
        console.push('\n');
        for i in 0..1200u64 {
            console.push_str(&format!("{:016x} T sym_{i}\n", 0xffffffff80000000u64 + i * 4));
        }
        console.push_str(&format!("{:016x} t helper\t[virtio_mmio]\n", 0xffffffff01000000u64));
        console.push_str(KALLSYMS_END);
        console.push_str(&format!("\n{MODULES_BEGIN}\nvirtio_mmio 20480 0 - Live 0xffffffff01000000\n{MODULES_END}"));
        console.push_str("\nhartscope-agent: workload exited with status 0\n");
        let text = parse_kallsyms(&console).unwrap();
        assert_eq!(text.lines().count(), 1201);
        assert!(text.ends_with("[virtio_mmio]\n"));
        assert_eq!(between(&console, MODULES_BEGIN, MODULES_END).unwrap(), "virtio_mmio 20480 0 - Live 0xffffffff01000000\n");

        let zeros: String = console
            .lines()
            .map(|l| match l.split_once(' ') {
                Some((addr, rest)) if addr.len() == 16 => format!("{} {rest}\n", "0".repeat(16)),
                _ => format!("{l}\n"),
            })
            .collect();
        assert!(parse_kallsyms(&zeros).unwrap_err().contains("zero"));
        assert!(parse_kallsyms("no delimiters").is_err());
    }
}
