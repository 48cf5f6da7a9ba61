//! `hartscope boot`: boot a guest image (or QEMU-style explicit files) on
//! the simulated board, with an interactive console or a scripted workload.
//!
//! QEMU's own flags work too, also without the subcommand:
//! `hartscope -bios none -kernel prog.elf`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use hs_machine::{BootFile, BootImages, ConsoleInput, InputEvent, Machine, MachineConfig, StopReason};

/// Firmware QEMU itself boots when no `-bios` is given.
const QEMU_DEFAULT_BIOS: &str = "/usr/share/qemu/opensbi-riscv64-generic-fw_dynamic.bin";
const DEFAULT_IMAGE: &str = "debian";
const DEFAULT_RAM_MIB: u64 = 512;
/// Ctrl-A, QEMU's console escape.
const ESCAPE: u8 = 0x01;

#[derive(Args, Debug, Clone, PartialEq)]
pub struct BootArgs {
    /// Guest image to boot (see `hartscope guest build`); default `debian` unless -kernel is given.
    #[arg(long)]
    pub image: Option<String>,
    /// Firmware file, or `none` to run the kernel bare metal (QEMU: -bios).
    #[arg(long)]
    pub bios: Option<String>,
    /// Kernel Image or ELF file (QEMU: -kernel).
    #[arg(long)]
    pub kernel: Option<PathBuf>,
    /// Initial ramdisk (QEMU: -initrd).
    #[arg(long)]
    pub initrd: Option<PathBuf>,
    /// Kernel command line; with --image it is added to the image's own.
    #[arg(long, allow_hyphen_values = true)]
    pub append: Option<String>,
    /// Number of harts (QEMU: -smp N or -smp cpus=N).
    #[arg(long, value_parser = parse_smp, default_value = "1")]
    pub smp: usize,
    /// RAM size: 512, 512M, 2G (MiB when no unit, as QEMU); default 512M.
    #[arg(short = 'm', long = "memory", value_parser = parse_mem)]
    pub mem: Option<u64>,
    /// Accepted for QEMU compatibility: the console is always the terminal.
    #[arg(long)]
    pub nographic: bool,
    /// Run this script (or directory with run.sh) through the guest agent and exit with its status.
    #[arg(long)]
    pub workload: Option<PathBuf>,
    /// Stop once guest time reaches this many cycles.
    #[arg(long)]
    pub max_cycles: Option<u64>,
    /// Write run statistics (cycles, instret, host seconds, MIPS, per hart) to this JSON file.
    #[arg(long)]
    pub stats_json: Option<PathBuf>,
    /// Write the guest's SEND marker channels as files under this directory.
    #[arg(long)]
    pub channels_dir: Option<PathBuf>,
    /// Simulated core clock in MHz (a multiple of 10).
    #[arg(long, default_value_t = 1000)]
    pub mhz: u64,
    /// Longest slice one hart runs before the next gets a turn, in cycles.
    #[arg(long, default_value_t = 10_000)]
    pub quantum: u64,
}

/// QEMU flags that take a value and their `boot` spelling.
const QEMU_VALUE_FLAGS: &[&str] = &["-bios", "-kernel", "-initrd", "-append", "-smp"];
const QEMU_FLAGS: &[&str] = &["-nographic"];

/// Turn QEMU-style single-dash flags into `boot` options, inserting the
/// `boot` subcommand when the command line starts with a QEMU flag.
pub fn qemu_style_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut it = args.into_iter();
    let mut out: Vec<OsString> = it.next().into_iter().collect();
    let rest: Vec<OsString> = it.collect();
    let first = rest.first().and_then(|a| a.to_str()).unwrap_or("");
    let starts_qemu = QEMU_VALUE_FLAGS.contains(&first) || QEMU_FLAGS.contains(&first) || first == "-m";
    if !(starts_qemu || first == "boot") {
        out.extend(rest);
        return out;
    }
    if starts_qemu {
        out.push("boot".into());
    }
    let mut i = 0;
    while i < rest.len() {
        let a = rest[i].to_str().unwrap_or("");
        if QEMU_VALUE_FLAGS.contains(&a) {
            out.push(format!("-{a}").into());
            if let Some(v) = rest.get(i + 1) {
                out.push(v.clone());
            }
            i += 2;
            continue;
        }
        if QEMU_FLAGS.contains(&a) {
            out.push(format!("-{a}").into());
        } else {
            out.push(rest[i].clone());
        }
        i += 1;
    }
    out
}

fn parse_smp(s: &str) -> Result<usize, String> {
    let first = s.split(',').next().unwrap_or("");
    let n = first.strip_prefix("cpus=").unwrap_or(first);
    n.parse().map_err(|_| format!("`{s}` is not a number of harts (e.g. 4 or cpus=4)"))
}

fn parse_mem(s: &str) -> Result<u64, String> {
    let v = s.strip_prefix("size=").unwrap_or(s);
    let v = v.trim_end_matches(['B', 'b']).trim_end_matches('i');
    let (num, unit) = match v.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => v.split_at(i),
        None => (v, "M"),
    };
    let shift = match unit.to_ascii_uppercase().as_str() {
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("`{s}` is not a memory size (e.g. 512, 512M, 2G)")),
    };
    let n: u64 = num.parse().map_err(|_| format!("`{s}` is not a memory size (e.g. 512, 512M, 2G)"))?;
    n.checked_shl(shift).filter(|b| b >> shift == n).ok_or_else(|| format!("memory size `{s}` is too large"))
}

/// What to load, resolved from an image and/or explicit files.
struct Resolved {
    images: BootImages,
    bootargs: String,
}

fn resolve(args: &BootArgs) -> Result<Resolved, String> {
    let image_name = args.image.clone().or_else(|| args.kernel.is_none().then(|| DEFAULT_IMAGE.to_string()));
    let image = image_name.as_deref().map(hs_guest::find).transpose().map_err(|e| e.to_string())?;
    if args.workload.is_some() && image.is_none() {
        return Err("--workload needs a guest image (--image NAME): the image's agent runs it".into());
    }
    let read = |what, p: &Path| BootFile::read(what, p).map_err(|e| e.to_string());

    let firmware = match args.bios.as_deref() {
        Some("none") => None,
        Some(path) => Some(read("firmware", Path::new(path))?),
        None => match &image {
            Some(img) => Some(read("firmware", &img.firmware)?),
            None if Path::new(QEMU_DEFAULT_BIOS).is_file() => Some(read("firmware", Path::new(QEMU_DEFAULT_BIOS))?),
            None => return Err(format!("no firmware: {QEMU_DEFAULT_BIOS} is not installed; give -bios FILE or -bios none")),
        },
    };
    let kernel = match (&args.kernel, &image) {
        (Some(k), _) => Some(read("kernel", k)?),
        (None, Some(img)) => Some(read("kernel", &img.kernel)?),
        (None, None) => None,
    };
    let initrd = match (&args.initrd, &image, &args.workload) {
        (Some(_), _, Some(_)) => return Err("give either -initrd or --workload, not both".into()),
        (Some(p), _, None) => Some(read("initrd", p)?),
        (None, Some(img), Some(w)) => {
            let data = hs_guest::workload_initrd(img, w).map_err(|e| e.to_string())?;
            Some(BootFile::from_bytes(format!("{} + workload {}", img.initrd.display(), w.display()), data))
        }
        (None, Some(img), None) => Some(read("initrd", &img.initrd)?),
        (None, None, _) => None,
    };
    let mut bootargs = image.as_ref().map(|i| i.default_append.clone()).unwrap_or_default();
    if let Some(extra) = &args.append {
        if !bootargs.is_empty() {
            bootargs.push(' ');
        }
        bootargs.push_str(extra);
    }
    Ok(Resolved { images: BootImages { firmware, kernel, initrd }, bootargs })
}

pub fn run(args: BootArgs) -> Result<i32, String> {
    let r = resolve(&args)?;
    let cfg = MachineConfig {
        harts: args.smp,
        ram_bytes: args.mem.unwrap_or(DEFAULT_RAM_MIB << 20),
        hz: args.mhz.saturating_mul(1_000_000),
        quantum: args.quantum,
        images: r.images,
        bootargs: r.bootargs,
        max_cycles: args.max_cycles,
        echo_console: true,
        capture_console: false,
        ..MachineConfig::default()
    };
    let mut machine = Machine::new(cfg).map_err(|e| e.to_string())?;

    let stop = if args.workload.is_some() {
        machine.run()
    } else {
        let _terminal = RawTerminal::enter();
        machine.set_console_input(Box::new(StdinInput::new()));
        machine.run()
    };

    let summary = machine.summary();
    if let Some(path) = &args.stats_json {
        write_atomically(path, summary.to_json().as_bytes())?;
    }
    if let Some(dir) = &args.channels_dir {
        machine.write_channels(dir).map_err(|e| e.to_string())?;
    }
    eprintln!(
        "\nhartscope: {stop} after {} cycles ({:.6} s guest), {} instructions in {:.2} s host ({:.1} MIPS)",
        summary.cycles, summary.guest_seconds, summary.instret, summary.host_seconds, summary.mips
    );

    if !machine.markers().phases.is_empty() {
        eprintln!("\n{}", phase_table(&machine));
    }

    if args.workload.is_some() {
        return match machine.markers().exit_status {
            Some(status) => Ok((status & 0xff) as i32),
            None => Err(format!("the guest stopped ({stop}) without reporting the workload's exit status")),
        };
    }
    match stop {
        StopReason::PowerOff | StopReason::UserQuit => Ok(0),
        StopReason::HtifExit(code) => Ok((code & 0xff) as i32),
        StopReason::Fail(code) => Err(format!("the guest reported failure code {code}")),
        StopReason::CycleLimit => Ok(124),
        other => Err(format!("the machine stopped: {other}")),
    }
}

/// The guest's phase markers as a table: the time before the first marker
/// is the "boot" phase, the last phase ends when the run ended.
fn phase_table(machine: &Machine) -> String {
    use hs_observe::{HartCounts, PhaseRecorder};
    let counts = |cycles: &[u64], instret: &[u64]| -> Vec<HartCounts> {
        cycles.iter().zip(instret).enumerate().map(|(h, (&c, &i))| HartCounts { hart: h as u16, cycles: c, instret: i }).collect()
    };
    let harts = machine.harts();
    let zero = vec![0; harts.len()];
    let mut rec = PhaseRecorder::new();
    rec.mark(0, "boot to first marker", &counts(&zero, &zero));
    for p in &machine.markers().phases {
        rec.mark(p.cycle, &p.label, &counts(&p.cycles, &p.instret));
    }
    let end: Vec<u64> = harts.iter().map(|h| h.cycle()).collect();
    let end_instret: Vec<u64> = harts.iter().map(|h| h.instret()).collect();
    let now = machine.now();
    let phases = rec.finish(now, &counts(&end, &end_instret));
    hs_observe::export::phase_table(&phases, now)
}

/// Write `path` through a temporary file and a rename, so readers never see half a file.
fn write_atomically(path: &Path, data: &[u8]) -> Result<(), String> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "stats".into());
    let tmp = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    std::fs::write(&tmp, data)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write {}: {e}", path.display())
        })
}

/// Puts the controlling terminal in raw input mode (no line editing, no
/// echo, no signals: Ctrl-C goes to the guest) and restores it on drop.
/// Output processing is kept so the guest's `\n` still starts a new line.
struct RawTerminal {
    saved: Option<libc::termios>,
}

impl RawTerminal {
    fn enter() -> Self {
        // SAFETY: plain termios calls on fd 0 with a zeroed struct.
        unsafe {
            if libc::isatty(0) != 1 {
                return Self { saved: None };
            }
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut t) != 0 {
                return Self { saved: None };
            }
            let saved = t;
            t.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG | libc::IEXTEN);
            t.c_iflag &= !(libc::IXON | libc::ICRNL | libc::BRKINT | libc::INPCK | libc::ISTRIP);
            t.c_cc[libc::VMIN] = 1;
            t.c_cc[libc::VTIME] = 0;
            libc::tcsetattr(0, libc::TCSANOW, &t);
            Self { saved: Some(saved) }
        }
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        if let Some(t) = self.saved {
            // SAFETY: restores the attributes read in enter().
            unsafe { libc::tcsetattr(0, libc::TCSANOW, &t) };
        }
    }
}

/// Console input from stdin, with QEMU's Ctrl-A escapes: Ctrl-A x quits,
/// Ctrl-A Ctrl-A sends one Ctrl-A.
struct StdinInput {
    escape: bool,
    eof: bool,
}

impl StdinInput {
    fn new() -> Self {
        Self { escape: false, eof: false }
    }

    fn filter(&mut self, raw: &[u8]) -> InputEvent {
        let mut out = Vec::with_capacity(raw.len());
        for &b in raw {
            if self.escape {
                self.escape = false;
                match b {
                    b'x' | b'X' => return InputEvent::Quit,
                    ESCAPE => out.push(ESCAPE),
                    _ => {}
                }
            } else if b == ESCAPE {
                self.escape = true;
            } else {
                out.push(b);
            }
        }
        if out.is_empty() { InputEvent::Nothing } else { InputEvent::Bytes(out) }
    }
}

impl ConsoleInput for StdinInput {
    fn poll(&mut self, wait: Option<Duration>) -> InputEvent {
        if self.eof {
            if let Some(w) = wait {
                std::thread::sleep(w);
            }
            return InputEvent::Nothing;
        }
        let timeout = wait.map_or(0, |w| w.as_millis().min(i32::MAX as u128) as i32);
        let mut fds = libc::pollfd { fd: 0, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut fds, 1, timeout) };
        if ready <= 0 || fds.revents & (libc::POLLIN | libc::POLLHUP) == 0 {
            return InputEvent::Nothing;
        }
        let mut buf = [0u8; 256];
        // SAFETY: reads into a stack buffer of the given length.
        let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            self.eof = true;
            return InputEvent::Nothing;
        }
        self.filter(&buf[..n as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn qemu_flags_become_boot_options() {
        assert_eq!(
            qemu_style_args(os(&["hartscope", "-bios", "none", "-kernel", "p.elf", "-smp", "2", "-m", "64M", "-nographic"])),
            os(&["hartscope", "boot", "--bios", "none", "--kernel", "p.elf", "--smp", "2", "-m", "64M", "--nographic"])
        );
        assert_eq!(
            qemu_style_args(os(&["hartscope", "boot", "-append", "-kernel", "-initrd", "rd"])),
            os(&["hartscope", "boot", "--append", "-kernel", "--initrd", "rd"]),
            "a flag's value is never rewritten"
        );
        assert_eq!(qemu_style_args(os(&["hartscope", "guest", "build"])), os(&["hartscope", "guest", "build"]));
    }

    #[test]
    fn sizes_and_counts_as_qemu_spells_them() {
        assert_eq!(parse_mem("512"), Ok(512 << 20));
        assert_eq!(parse_mem("512M"), Ok(512 << 20));
        assert_eq!(parse_mem("2G"), Ok(2 << 30));
        assert_eq!(parse_mem("size=1GiB"), Ok(1 << 30));
        assert_eq!(parse_mem("64k"), Ok(64 << 10));
        assert!(parse_mem("lots").is_err());
        assert!(parse_mem("99999999999T").is_err());
        assert_eq!(parse_smp("4"), Ok(4));
        assert_eq!(parse_smp("cpus=2,sockets=1"), Ok(2));
        assert!(parse_smp("many").is_err());
    }

    #[test]
    fn ctrl_a_escapes() {
        let mut i = StdinInput::new();
        assert!(matches!(i.filter(b"ls\r"), InputEvent::Bytes(b) if b == b"ls\r"));
        assert!(matches!(i.filter(&[ESCAPE]), InputEvent::Nothing));
        assert!(matches!(i.filter(&[ESCAPE]), InputEvent::Bytes(b) if b == [ESCAPE]));
        assert!(matches!(i.filter(&[b'a', ESCAPE, b'x']), InputEvent::Quit));
    }

    #[test]
    fn stats_file_is_replaced_whole() {
        let dir = std::env::temp_dir().join(format!("hs-boot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("stats.json");
        write_atomically(&p, b"{\"a\":1}").unwrap();
        write_atomically(&p, b"{\"b\":2}").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{\"b\":2}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary left behind");
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(write_atomically(&dir.join("missing/x.json"), b"").unwrap_err().starts_with("cannot write "));
    }
}
