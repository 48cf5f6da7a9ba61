//! A GPIO input interrupt end to end on Debian's kernel: a test device added
//! by code (a "pulser") drives the board wire `gpio0.in5` when the guest
//! pokes its register with BusyBox `devmem`; the DesignWare GPIO named by
//! configuration latches the rising edge and raises its PLIC line; Linux's
//! gpio-dwapb counts the interrupt in /proc/interrupts. Neither device names
//! the other: they share a wire by name. Needs the `debian` image.

use hs_bus::{GpioLine, Signal};
use hs_machine::hs_devices::{
    BadAccess, DevCtx, Device, FdtCtx, FdtNode, Grant, Placement, Plug, Stat, Want, WriteEffect,
};
use hs_machine::{BootFile, BootImages, Machine, MachineConfig, StopReason};

/// Each write to offset 0 makes one pulse on its wire: high 1000 cycles later, low 1000 after that.
struct Pulser {
    wire: Signal,
}

impl Device for Pulser {
    fn name(&self) -> String {
        "pulser".into()
    }
    fn size(&self) -> u64 {
        0x1000
    }
    fn read(&mut self, _: &mut DevCtx, _: u64, _: u8) -> Result<u64, BadAccess> {
        Ok(self.wire.rises())
    }
    fn write(&mut self, ctx: &mut DevCtx, _: u64, _: u8, _: u64) -> Result<WriteEffect, BadAccess> {
        ctx.events.schedule(ctx.now + 1000, 1);
        Ok(WriteEffect::default())
    }
    fn event(&mut self, ctx: &mut DevCtx, token: u64) {
        self.wire.set_level(token == 1);
        if token == 1 {
            ctx.events.schedule(ctx.now + 1000, 2);
        }
    }
    fn fdt_nodes(&self, _: &Grant, _: &FdtCtx) -> Vec<(Placement, FdtNode)> {
        Vec::new() // the guest pokes it with devmem; no driver
    }
    fn stats(&self) -> Vec<Stat> {
        Vec::new()
    }
}

#[test]
fn a_pulse_on_a_gpio_input_reaches_the_linux_driver_as_an_interrupt() {
    let image = hs_guest::find("debian").unwrap_or_else(|e| panic!("{e}"));
    let dir = std::env::temp_dir().join(format!("hs-gpio-linux-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("run.sh");
    // gpio0 is at 0x4000000 (first in the platform window), the pulser after it at 0x4001000.
    let run = "base=$(cat /sys/class/gpio/gpiochip*/base | head -n 1)\n\
               n=$((base + 5))\n\
               echo $n > /sys/class/gpio/export\n\
               echo in > /sys/class/gpio/gpio$n/direction\n\
               echo rising > /sys/class/gpio/gpio$n/edge\n\
               for i in 1 2 3 4 5; do devmem 0x4001000 32 1; done\n\
               echo \"pulses:$(devmem 0x4001000 32)\"\n\
               grep gpio-dwapb /proc/interrupts | sed 's/^/irq:/'\n\
               exit 0\n";
    std::fs::write(&script, run).unwrap();
    let initrd = hs_guest::workload_initrd(&image, &script).unwrap();
    let desc =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../machines/atomic-gpio.toml");
    let cfg = MachineConfig {
        harts: 2,
        ram_bytes: 512 << 20,
        bootargs: image.default_append.clone(),
        images: BootImages {
            firmware: Some(BootFile::read("firmware", &image.firmware).unwrap()),
            kernel: Some(BootFile::read("kernel", &image.kernel).unwrap()),
            initrd: Some(BootFile::from_bytes("initrd+workload", initrd)),
        },
        max_cycles: Some(30_000_000_000),
        devices: hs_machine::load_devices(&desc).unwrap(),
        plugs: vec![Plug::new(Want::new("pulser").mmio(0x1000), |a| {
            Box::new(Pulser {
                wire: a.signal("gpio0.in5"),
            })
        })],
        ..MachineConfig::default()
    };
    let mut m = Machine::new(cfg).unwrap();
    assert_eq!(
        m.board()
            .grant(m.board().find("pulser").unwrap())
            .unwrap()
            .base,
        0x400_1000
    );
    let stop = m.run();
    let console = String::from_utf8_lossy(m.console_output()).into_owned();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(stop, StopReason::PowerOff, "console:\n{console}");
    assert_eq!(m.markers().exit_status, Some(0), "{console}");
    assert!(
        console.lines().any(|l| l.trim_end() == "pulses:0x00000005"),
        "the pulser made 5 pulses:\n{console}"
    );
    let irq = console
        .lines()
        .find(|l| l.starts_with("irq:"))
        .unwrap_or_else(|| panic!("no gpio-dwapb interrupt:\n{console}"));
    let words: Vec<&str> = irq.split_whitespace().collect();
    assert!(
        words.windows(3).any(|w| w == ["gpio-dwapb", "5", "Edge"]),
        "{irq}"
    );
    // `irq: NN:` then one count per CPU.
    let (_, counts) = irq["irq:".len()..]
        .split_once(':')
        .unwrap_or_else(|| panic!("{irq}"));
    let total: u64 = counts
        .split_whitespace()
        .take(2)
        .map(|w| w.parse::<u64>().unwrap_or_else(|_| panic!("{irq}")))
        .sum();
    assert_eq!(total, 5, "Linux took one interrupt per rising edge: {irq}");
    let stat = |name: &str| {
        m.device_stats()
            .iter()
            .find(|s| s.name == name)
            .map_or(0, |s| s.value)
    };
    assert_eq!(stat("gpio0.edges"), 5);
    assert_eq!(
        stat("plic.source64.claims"),
        5,
        "each edge was claimed once at the PLIC"
    );
}
