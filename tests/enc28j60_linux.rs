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
//! * the network peer on the wire (crates/peer) answers ping, and a TCP
//!   transfer from its source arrives intact: the FNV-1a the guest's `ttcp`
//!   computes over what it received equals the peer's over what it sent;
//! * two runs give the same console and counters.

use crate::support;

use support::*;

const WORKLOAD: &str = r#"for d in /sys/bus/spi/devices/*; do echo "spi-device:$(basename $d) $(cat $d/modalias)"; done
echo "mac:$(cat /sys/class/net/eth0/address)"
ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0
ping -c 3 -W 1 10.0.2.2 | grep -E 'packets|round-trip' | sed 's/^/ping:/'
ttcp -c 10.0.2.2 -p 5001 -l 8192 -n ${COUNT:-32}
echo "tx_packets:$(cat /sys/class/net/eth0/statistics/tx_packets)"
echo "tx_errors:$(cat /sys/class/net/eth0/statistics/tx_errors)"
echo "carrier:$(cat /sys/class/net/eth0/carrier)"
grep -E 'enc28j60' /proc/interrupts | sed 's/^/irq:/'
exit 0
"#;

fn run(dir: &Scratch, tag: &str) -> (String, serde_json::Value) {
    boot_devices(
        dir,
        "custom",
        "machines/atomic-enc28j60.toml",
        WORKLOAD,
        tag,
        &["spi0.", "gpio0."],
    )
}

fn value<'a>(console: &'a str, key: &str) -> &'a str {
    console
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .map(str::trim_end)
        .unwrap_or_else(|| panic!("no `{key}` line:\n{console}"))
}

#[test]
fn custom_binds_the_chip_pings_the_peer_and_receives_a_tcp_stream_intact() {
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
    assert!(
        console.contains("ping:3 packets transmitted, 3 packets received, 0% packet loss"),
        "ping to the peer:\n{console}"
    );
    // 32 x 8 KiB from the peer's source, intact: the guest's fingerprint of
    // what it read equals the peer's of what it sent.
    let got: u64 = 32 * 8192;
    assert!(
        console.contains(&format!("ttcp-r: {got} bytes in")),
        "ttcp did not receive {got} bytes:\n{console}"
    );
    let guest_fnv = u64::from_str_radix(value(&console, "ttcp-r: fnv1a "), 16).unwrap();
    assert_eq!(dev["spi0.cs0.peer.tcp_source5001.bytes"], got, "{dev}");
    assert_eq!(
        dev["spi0.cs0.peer.tcp_source5001.fnv1a"], guest_fnv,
        "{dev}"
    );
    // Every frame the guest sent is one the peer took, and one interrupt
    // (or a later pass of the same work) completed it.
    let tx: u64 = value(&console, "tx_packets:").parse().unwrap();
    assert!(tx >= 1, "nothing sent:\n{console}");
    assert_eq!(value(&console, "tx_errors:"), "0");
    assert_eq!(
        dev["spi0.cs0.tx_frames"], dev["spi0.cs0.peer.frames_in"],
        "{dev}"
    );
    assert!(dev["spi0.cs0.tx_frames"].as_u64().unwrap() >= tx, "{dev}");
    assert_eq!(dev["spi0.cs0.rx_overruns"], 0, "{dev}");
    assert_eq!(dev["spi0.cs0.tx_errors"], 0, "{dev}");
    assert_eq!(dev["spi0.cs0.bad_commands"], 0, "{dev}");
    let irq_line = console
        .lines()
        .find(|l| l.starts_with("irq:"))
        .unwrap_or_else(|| panic!("no enc28j60 line in /proc/interrupts:\n{console}"));
    assert!(
        irq_line.contains("gpio-dwapb") && irq_line.contains("Edge"),
        "{irq_line}"
    );
    let taken: u64 = irq_line["irq:".len()..]
        .split_whitespace()
        .skip(1)
        .map_while(|f| f.parse::<u64>().ok())
        .sum();
    assert!(taken >= 1, "no interrupt taken: {irq_line}");
    assert_eq!(dev["gpio0.edges"], dev["spi0.cs0.int_asserts"], "{dev}");
    // Same run again: same console, same counters.
    let (console2, dev2) = run(&dir, "b");
    assert_eq!(console, console2);
    assert_eq!(dev, dev2);
}
