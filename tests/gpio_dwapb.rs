//! The DesignWare APB GPIO named by a machine description
//! (`machines/atomic-gpio.toml`): Debian's 6.12 kernel loads `gpio-dwapb`,
//! the driver binds (a gpiochip in /sys/class/gpio with the configured line
//! count), a line exported through sysfs toggles as written, and the host
//! sees exactly those output changes, the same on two runs; an input line
//! set to interrupt on both edges appears in /proc/interrupts.

use crate::support;

use support::*;

const WORKLOAD: &str = r#"grep '^gpio_dwapb ' /proc/modules > /dev/null && echo "module:gpio_dwapb"
for c in /sys/class/gpio/gpiochip*; do
    echo "gpiochip:$(cat $c/label) ngpio=$(cat $c/ngpio)"
done
base=$(cat /sys/class/gpio/gpiochip*/base | head -n 1)
n=$((base + 3))
echo $n > /sys/class/gpio/export
echo out > /sys/class/gpio/gpio$n/direction
for v in 1 0 1; do echo $v > /sys/class/gpio/gpio$n/value; done
echo "gpio-value:$(cat /sys/class/gpio/gpio$n/value)"
m=$((base + 5))
echo $m > /sys/class/gpio/export
echo in > /sys/class/gpio/gpio$m/direction
echo both > /sys/class/gpio/gpio$m/edge
grep gpio-dwapb /proc/interrupts | sed 's/^/irq:/'
exit 0
"#;

/// Console and the GPIO's counters of one boot.
fn run(dir: &Scratch, tag: &str) -> (String, serde_json::Value) {
    boot_devices(
        dir,
        "debian",
        "machines/atomic-gpio.toml",
        WORKLOAD,
        tag,
        &["gpio0."],
    )
}

#[test]
fn debian_binds_gpio_dwapb_and_the_line_toggles() {
    let _ = image("debian");
    let dir = Scratch::new("gpio-dwapb");
    let (console, gpio) = run(&dir, "a");
    assert!(
        console.lines().any(|l| l.trim_end() == "module:gpio_dwapb"),
        "gpio_dwapb not loaded:\n{console}"
    );
    assert!(
        console
            .lines()
            .any(|l| l.starts_with("gpiochip:4000000.gpio") && l.trim_end().ends_with("ngpio=32")),
        "no gpiochip of the DesignWare GPIO in /sys/class/gpio:\n{console}"
    );
    assert!(
        console.lines().any(|l| l.trim_end() == "gpio-value:1"),
        "{console}"
    );
    // An edge interrupt on line 5 goes through the driver's irqchip (type, enable, unmask).
    let irq = console
        .lines()
        .find(|l| l.starts_with("irq:"))
        .unwrap_or_else(|| panic!("no gpio-dwapb interrupt:\n{console}"));
    assert!(
        irq.split_whitespace()
            .collect::<Vec<_>>()
            .windows(3)
            .any(|w| w == ["gpio-dwapb", "5", "Edge"]),
        "{irq}"
    );
    assert_eq!(
        gpio["gpio0.output_changes"], 3,
        "the host saw 0→1, 1→0, 0→1 on the line: {gpio}"
    );
    let (_, again) = run(&dir, "b");
    assert_eq!(gpio, again, "the same run gives the same GPIO record");
}
