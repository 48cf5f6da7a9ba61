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
    /// A virtio-net NIC on QEMU's user networking (slirp: 10.0.2.2 is the
    /// host's loopback).
    pub user_net: bool,
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
        if self.user_net {
            c.args([
                "-netdev",
                "user,id=n0",
                "-device",
                "virtio-net-device,netdev=n0",
            ]);
        }
        c
    }

    pub fn run(&self) -> Result<QemuResult> {
        let step = format!("booting {} under {QEMU}", self.kernel.display());
        let status = run_with_timeout(&step, &mut self.command(), &self.console_log, self.timeout)?;
        let bytes = std::fs::read(&self.console_log).map_err(io_err("read", &self.console_log))?;
        Ok(QemuResult {
            console: String::from_utf8_lossy(&bytes).replace('\r', ""),
            exited: status.is_some(),
        })
    }
}

pub const SIZES_BEGIN: &str = "@@hartscope-capture-sizes-begin@@";
pub const SIZES_END: &str = "@@hartscope-capture-sizes-end@@";

/// Where the capture workload puts each file on its virtio disk (MiB offsets).
pub const CAPTURE_LAYOUT: [(&str, u64); 3] = [("kallsyms", 0), ("modules", 32), ("btf", 40)];
/// The capture disk's size: the last file may take up to 24 MiB.
pub const CAPTURE_DISK_BYTES: u64 = 64 << 20;

/// The workload that loads every module of the image (QEMU's board lacks
/// most of the devices that would load them) and copies /proc/kallsyms,
/// /proc/modules and the kernel's BTF to the virtio disk (`/dev/vda`) at [`CAPTURE_LAYOUT`] and prints
/// their sizes between delimiters. The data itself never crosses the
/// console, which is slow when the host is busy.
pub fn kallsyms_workload() -> String {
    format!(
        "echo 0 > /proc/sys/kernel/kptr_restrict\n\
         [ -f /lib/modules/load.list ] && modprobe -qa $(cat /lib/modules/load.list)\n\
         cat /proc/kallsyms > /tmp/kallsyms\n\
         cat /proc/modules > /tmp/modules\n\
         cat /sys/kernel/btf/vmlinux > /tmp/btf\n\
         for f in kallsyms:0 modules:32 btf:40; do\n\
         dd if=/tmp/${{f%:*}} of=/dev/vda bs=1048576 seek=${{f#*:}} conv=notrunc 2>/dev/null || exit 1\n\
         done\n\
         sync\n\
         echo {SIZES_BEGIN}\n\
         echo $(wc -c < /tmp/kallsyms) $(wc -c < /tmp/modules) $(wc -c < /tmp/btf)\n\
         echo {SIZES_END}\n"
    )
}

/// The text between two delimiter lines of a console log.
pub fn between<'a>(
    console: &'a str,
    begin: &str,
    end: &str,
) -> std::result::Result<&'a str, String> {
    let start = console
        .find(&format!("{begin}\n"))
        .ok_or(format!("`{begin}` never appeared"))?;
    let body = &console[start + begin.len() + 1..];
    let stop = body
        .find(&format!("{end}\n"))
        .ok_or(format!("`{end}` never appeared"))?;
    Ok(&body[..stop])
}

/// The captured files (kallsyms, modules, btf) cut out of the disk image
/// by the sizes the guest printed.
pub fn capture_files(console: &str, disk: &[u8]) -> std::result::Result<[Vec<u8>; 3], String> {
    let sizes: Vec<u64> = between(console, SIZES_BEGIN, SIZES_END)?
        .split_whitespace()
        .map(|w| {
            w.parse::<u64>()
                .map_err(|_| format!("bad size `{w}` in the guest's report"))
        })
        .collect::<std::result::Result<_, _>>()?;
    if sizes.len() != 3 {
        return Err(format!("the guest reported {} sizes, not 3", sizes.len()));
    }
    let mut out: [Vec<u8>; 3] = Default::default();
    for (i, ((name, mib), size)) in CAPTURE_LAYOUT.iter().zip(&sizes).enumerate() {
        let start = mib << 20;
        let limit = CAPTURE_LAYOUT
            .get(i + 1)
            .map_or(CAPTURE_DISK_BYTES, |(_, next)| next << 20);
        let end = start + size;
        if end > limit || end > disk.len() as u64 {
            return Err(format!(
                "{name} ({size} bytes) does not fit its place on the capture disk"
            ));
        }
        out[i] = disk[start as usize..end as usize].to_vec();
    }
    Ok(out)
}

/// Checks a captured /proc/kallsyms text.
pub fn parse_kallsyms(body: &str) -> std::result::Result<String, String> {
    let mut count = 0usize;
    let mut nonzero = false;
    for (i, line) in body.lines().enumerate() {
        let mut parts = line.split_whitespace();
        let (Some(addr), Some(ty), Some(_name)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format!(
                "line {} is not `address type name`: {line:?}",
                i + 1
            ));
        };
        let a = u64::from_str_radix(addr, 16)
            .map_err(|_| format!("line {} has a bad address: {line:?}", i + 1))?;
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

/// Where [`canonical_module_addresses`] puts the N-th module of a capture.
pub const CANONICAL_MODULE_BASE: u64 = 0xffff_ffff_6000_0000;
const CANONICAL_MODULE_STRIDE: u64 = 0x0100_0000;

/// Module load addresses differ from boot to boot, so a capture's module
/// code symbols are moved to fixed bases (data symbols are dropped: they are
/// not at a fixed offset from the code) (the N-th line of `/proc/modules` at
/// `CANONICAL_MODULE_BASE + N × 16 MiB`), with `/proc/modules` rewritten to
/// match: two captures give the same files, and a run still relocates each
/// module by (its base in the run − its base in the file), as before.
pub fn canonical_module_addresses(
    kallsyms: &str,
    modules: &str,
) -> std::result::Result<(String, String), String> {
    let mut moved = std::collections::BTreeMap::new();
    let mut new_modules = String::new();
    for (i, line) in modules.lines().enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let base = fields
            .iter()
            .rev()
            .find_map(|f| f.strip_prefix("0x"))
            .ok_or(format!("no base address in /proc/modules line {line:?}"))?;
        let base = u64::from_str_radix(base, 16)
            .map_err(|_| format!("bad base address in /proc/modules line {line:?}"))?;
        let canonical = CANONICAL_MODULE_BASE + i as u64 * CANONICAL_MODULE_STRIDE;
        moved.insert(fields[0].to_string(), canonical.wrapping_sub(base));
        new_modules.push_str(&line.replace(&format!("0x{base:x}"), &format!("0x{canonical:x}")));
        new_modules.push('\n');
    }
    let mut out = String::with_capacity(kallsyms.len());
    for line in kallsyms.lines() {
        let module = line.rsplit_once('[').and_then(|(_, m)| m.strip_suffix(']'));
        match module.and_then(|m| moved.get(m)) {
            Some(delta) => {
                let (addr, rest) = line
                    .split_once(' ')
                    .ok_or(format!("bad kallsyms line {line:?}"))?;
                // Only code keeps its offset from the module's base: data and
                // read-only data are separate allocations that land anywhere.
                if !matches!(rest.split_whitespace().next(), Some("t" | "T")) {
                    continue;
                }
                let a = u64::from_str_radix(addr, 16)
                    .map_err(|_| format!("bad kallsyms line {line:?}"))?;
                out.push_str(&format!("{:016x} {rest}\n", a.wrapping_add(*delta)));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    Ok((out, new_modules))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_symbols_move_to_canonical_bases() {
        let kallsyms = "ffffffff80001000 T handle_exception\nffffffff01e8a010 t virtblk_probe\t[virtio_blk]\nffffffff0205e020 t dwapb_irq\t[gpio_dwapb]\nffffffff0210a000 r dwapb_of_match\t[gpio_dwapb]\n";
        let modules = "gpio_dwapb 94208 0 - Live 0xffffffff0205e000\nvirtio_blk 208896 0 - Live 0xffffffff01e8a000 (O)\n";
        let (k, m) = canonical_module_addresses(kallsyms, modules).unwrap();
        assert_eq!(
            k,
            "ffffffff80001000 T handle_exception\nffffffff61000010 t virtblk_probe\t[virtio_blk]\nffffffff60000020 t dwapb_irq\t[gpio_dwapb]\n"
        );
        assert_eq!(m, "gpio_dwapb 94208 0 - Live 0xffffffff60000000\nvirtio_blk 208896 0 - Live 0xffffffff61000000 (O)\n");
        // Another boot's addresses give the same files.
        let other_k = kallsyms
            .replace("ffffffff01e8a010", "ffffffff01ea4010")
            .replace("ffffffff0205e020", "ffffffff02185020");
        let other_m = modules
            .replace("0xffffffff0205e000", "0xffffffff02185000")
            .replace("0xffffffff01e8a000", "0xffffffff01ea4000");
        assert_eq!(
            canonical_module_addresses(&other_k, &other_m).unwrap(),
            (k, m)
        );
        assert!(canonical_module_addresses(kallsyms, "virtio_blk 1 0 - Live\n").is_err());
    }

    #[test]
    fn captured_files_come_from_the_disk_by_the_reported_sizes() {
        let mut kallsyms = String::new();
        for i in 0..1200u64 {
            kallsyms.push_str(&format!(
                "{:016x} T sym_{i}\n",
                0xffffffff80000000u64 + i * 4
            ));
        }
        kallsyms.push_str(&format!(
            "{:016x} t helper\t[virtio_mmio]\n",
            0xffffffff01000000u64
        ));
        let modules = "virtio_mmio 20480 0 - Live 0xffffffff01000000\n";
        let btf = [0x9fu8, 0xeb, 1, 0];
        let mut disk = vec![0u8; CAPTURE_DISK_BYTES as usize];
        disk[..kallsyms.len()].copy_from_slice(kallsyms.as_bytes());
        disk[32 << 20..(32 << 20) + modules.len()].copy_from_slice(modules.as_bytes());
        disk[40 << 20..(40 << 20) + 4].copy_from_slice(&btf);
        let console = format!("noise\n{SIZES_BEGIN}\n{} {} 4\n{SIZES_END}\nhartscope-agent: workload exited with status 0\n", kallsyms.len(), modules.len());
        let [k, m, b] = capture_files(&console, &disk).unwrap();
        assert_eq!(
            parse_kallsyms(std::str::from_utf8(&k).unwrap())
                .unwrap()
                .lines()
                .count(),
            1201
        );
        assert_eq!(m, modules.as_bytes());
        assert_eq!(b, btf);

        let too_big = format!(
            "{SIZES_BEGIN}\n{} 40000000 4\n{SIZES_END}\n",
            kallsyms.len()
        );
        assert!(capture_files(&too_big, &disk)
            .unwrap_err()
            .contains("modules"));
        assert!(capture_files("no sizes", &disk).is_err());
        let zeros: String = kallsyms
            .lines()
            .map(|l| format!("{}{}\n", "0".repeat(16), &l[16..]))
            .collect();
        assert!(parse_kallsyms(&zeros).unwrap_err().contains("zero"));
        assert!(parse_kallsyms("").is_err());
    }
}
