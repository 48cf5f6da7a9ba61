//! The ENC28J60 on SPI (`machines/atomic-enc28j60.toml`) under the stock
//! `enc28j60` driver of the `custom` kernel (Linux 6.1; Debian's 6.12 config
//! does not build the driver at all, so `debian` cannot bind it):
//!
//! * the driver finds the chip (its RevID, PHY and MII), registers `eth0`,
//!   reads link up from PHSTAT2 and sets the station address from the
//!   device tree's `local-mac-address`;
//! * frames the stack sends (ARP requests for the peer) go out through the
//!   packet buffer over SPI and leave on the wire, and each transmit-done
//!   interrupt comes through the chip's INT pin, the GPIO's falling edge
//!   and the PLIC (counted in `/proc/interrupts` and by both devices);
//! * two runs give the same console and counters.

#[path = "support/mod.rs"]
mod support;

use support::*;

const WORKLOAD: &str = r#"for d in /sys/bus/spi/devices/*; do echo "spi-device:$(basename $d) $(cat $d/modalias)"; done
echo "mac:$(cat /sys/class/net/eth0/address)"
ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0
ping -c 3 -W 1 10.0.2.2 >/dev/null
echo "tx_packets:$(cat /sys/class/net/eth0/statistics/tx_packets)"
echo "tx_errors:$(cat /sys/class/net/eth0/statistics/tx_errors)"
echo "carrier:$(cat /sys/class/net/eth0/carrier)"
grep -E 'enc28j60' /proc/interrupts | sed 's/^/irq:/'
exit 0
"#;

fn run(dir: &Scratch, tag: &str) -> (String, serde_json::Value) {
    let script = dir.write("run.sh", WORKLOAD);
    let desc = root().join("machines/atomic-enc28j60.toml");
    let stats = dir.path(&format!("{tag}.json"));
    let out = hartscope(
        &[
            "boot",
            "--image",
            "custom",
            "--machine",
            desc.to_str().unwrap(),
            "--workload",
            script.to_str().unwrap(),
            "--stats-json",
            stats.to_str().unwrap(),
        ],
        dir,
        BOOT_DEADLINE,
    );
    assert_workload_finished(&out, 0);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let devs: serde_json::Map<String, serde_json::Value> = json["devices"]
        .as_object()
        .expect("devices in the stats")
        .iter()
        .filter(|(k, _)| k.starts_with("spi0.") || k.starts_with("gpio0."))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (out.stdout_text(), serde_json::Value::Object(devs))
}

fn value<'a>(console: &'a str, key: &str) -> &'a str {
    console
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .map(str::trim_end)
        .unwrap_or_else(|| panic!("no `{key}` line:\n{console}"))
}

#[test]
fn custom_binds_the_chip_and_sends_frames_with_gpio_interrupts() {
    let _ = image("custom");
    let dir = Scratch::new("enc28j60-custom");
    let (console, dev) = run(&dir, "a");
    assert!(
        console
            .lines()
            .any(|l| l.starts_with("spi-device:spi0.0 ") && l.contains("enc28j60")),
        "the chip is not on the SPI bus:\n{console}"
    );
    assert!(
        console.contains("enc28j60 spi0.0 eth0: link up - Half duplex"),
        "no link-up message (PHSTAT2.LSTAT):\n{console}"
    );
    assert_eq!(value(&console, "mac:"), "02:00:00:00:00:10");
    assert_eq!(value(&console, "carrier:"), "1");
    // Nobody answers on the wire: ARP requests only. Each one is a frame on
    // the wire and a transmit-done interrupt.
    let tx: u64 = value(&console, "tx_packets:").parse().unwrap();
    assert!(tx >= 1, "nothing sent:\n{console}");
    assert_eq!(value(&console, "tx_errors:"), "0");
    assert_eq!(dev["spi0.cs0.tx_frames"], tx, "{dev}");
    assert_eq!(dev["spi0.cs0.tx_bytes"], tx * 42, "ARP requests are 42 bytes: {dev}");
    assert_eq!(dev["spi0.cs0.tx_errors"], 0, "{dev}");
    assert_eq!(dev["spi0.cs0.bad_commands"], 0, "{dev}");
    let irq_line = console
        .lines()
        .find(|l| l.starts_with("irq:"))
        .unwrap_or_else(|| panic!("no enc28j60 line in /proc/interrupts:\n{console}"));
    assert!(irq_line.contains("gpio-dwapb") && irq_line.contains("Edge"), "{irq_line}");
    let taken: u64 = irq_line["irq:".len()..]
        .split_whitespace()
        .skip(1)
        .map_while(|f| f.parse::<u64>().ok())
        .sum();
    assert!(taken >= tx, "{tx} frames sent but {taken} interrupts taken: {irq_line}");
    assert_eq!(dev["gpio0.edges"], dev["spi0.cs0.int_asserts"], "{dev}");
    // Same run again: same console, same counters.
    let (console2, dev2) = run(&dir, "b");
    assert_eq!(console, console2);
    assert_eq!(dev, dev2);
}
