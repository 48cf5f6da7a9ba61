//! The OpenCores Ethernet MAC (`machines/atomic-ethoc.toml`) under Linux 6.1
//! (`custom`: Debian's 6.12 does not build the ethoc driver), with the
//! deterministic network peer on its 100 Mbit/s wire — driven two ways:
//!
//! * by the stock `ethoc` driver: it takes the MAC from the registers, finds
//!   the PHY on MDIO with the link up at 100 Mbit/s full duplex, ping works,
//!   16 MiB from the peer's TCP source arrive intact (the FNV-1a the guest's
//!   ttcp computes equals the peer's over what it sent), 512 KiB to the
//!   peer's sink arrive intact, 256 KiB of UDP each way with no datagram
//!   lost and the same fingerprints, the NIC's frame counts equal the
//!   peer's, and two runs give the same console and counters;
//! * by `nicd`, the user-space driver, through UIO (`driver = "uio"` and
//!   `uio_pdrv_genirq.of_id=generic-uio`), with the kernel's stack on tap0
//!   behind its packet stream: the same ping and transfers, intact.

use crate::support;

use support::*;

const MIB16: u64 = 16 << 20;
const TX_LEN: u64 = 8192;
const TX_COUNT: u64 = 64;

fn value<'a>(console: &'a str, key: &str) -> &'a str {
    console
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .map(str::trim_end)
        .unwrap_or_else(|| panic!("no `{key}` line:\n{console}"))
}

const TRANSFERS: &str = r#"ping -c 3 -W 1 10.0.2.2 | grep -E 'packets' | sed 's/^/ping:/'
ttcp -c 10.0.2.2 -p 5001 -l 8192 -n 2048
ttcp -t 10.0.2.2 -p 5002 -l 8192 -n 64
ttcp -u -c 10.0.2.2 -p 5003 -l 1024 -n 256 | sed 's/^ttcp-r/udp-r/'
ttcp -u -t 10.0.2.2 -p 5004 -l 1024 -n 256
sleep 0.1 # the NIC's last frames cross the wire
"#;

/// FNV-1a 64 of `count` buffers of `len` bytes, byte i of each i mod 256
/// (what `ttcp -t` and `ttcp -u -t` write).
fn buffers_fnv(len: u64, count: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for _ in 0..count {
        for i in 0..len {
            h = (h ^ (i as u8) as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The transfers arrived intact at both ends, and every frame the NIC sent
/// or took is one the peer took or sent.
fn check_transfers(console: &str, dev: &serde_json::Value) {
    assert!(
        console.contains("ping:3 packets transmitted, 3 packets received, 0% packet loss"),
        "ping to the peer:\n{console}"
    );
    assert!(
        console.contains(&format!("ttcp-r: {MIB16} bytes in")),
        "{console}"
    );
    let guest_fnv = u64::from_str_radix(value(console, "ttcp-r: fnv1a "), 16).unwrap();
    assert_eq!(dev["eth0.peer.tcp_source5001.bytes"], MIB16, "{dev}");
    assert_eq!(dev["eth0.peer.tcp_source5001.fnv1a"], guest_fnv, "{dev}");
    let sent = TX_LEN * TX_COUNT;
    assert!(
        console.contains(&format!("ttcp-t: {sent} bytes in")),
        "{console}"
    );
    assert_eq!(dev["eth0.peer.tcp_sink5002.bytes"], sent, "{dev}");
    assert_eq!(
        dev["eth0.peer.tcp_sink5002.fnv1a"],
        buffers_fnv(TX_LEN, TX_COUNT),
        "{dev}"
    );
    // UDP at 100 Mbit/s: nothing lost either way, the bytes intact.
    assert!(
        console.contains("udp-r: 256 datagrams of 256, 0 lost"),
        "{console}"
    );
    let udp_fnv = u64::from_str_radix(value(console, "udp-r: fnv1a "), 16).unwrap();
    assert_eq!(dev["eth0.peer.udp_source5003.datagrams"], 256, "{dev}");
    assert_eq!(dev["eth0.peer.udp_source5003.fnv1a"], udp_fnv, "{dev}");
    assert_eq!(dev["eth0.peer.udp_sink5004.datagrams"], 256, "{dev}");
    assert_eq!(
        dev["eth0.peer.udp_sink5004.fnv1a"],
        buffers_fnv(1024, 256),
        "{dev}"
    );
    assert_eq!(dev["eth0.tx_frames"], dev["eth0.peer.frames_in"], "{dev}");
    assert_eq!(dev["eth0.rx_frames"], dev["eth0.peer.frames_out"], "{dev}");
    for k in ["eth0.tx_errors", "eth0.rx_errors", "eth0.rx_busy"] {
        assert_eq!(dev[k], 0, "{k}: {dev}");
    }
}

#[test]
fn the_stock_ethoc_driver_links_pings_and_moves_tcp_intact() {
    let _ = image("custom");
    let dir = Scratch::new("ethoc-kernel");
    let script = format!(
        r#"dmesg | grep -E 'eth0: Link is Up' | sed 's/.*eth0: /phy:/'
echo "mac:$(cat /sys/class/net/eth0/address)"
ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0
i=0; while [ "$(cat /sys/class/net/eth0/carrier)" != 1 ] && [ $i -lt 300 ]; do sleep 0.01; i=$((i+1)); done
echo "carrier:$(cat /sys/class/net/eth0/carrier)"
dmesg | grep -E 'eth0: Link is Up' | sed 's/.*eth0: /phy:/'
{TRANSFERS}exit 0
"#
    );
    let run = |tag| {
        boot_devices(
            &dir,
            "custom",
            "machines/atomic-ethoc.toml",
            &script,
            tag,
            &["eth0."],
        )
    };
    let (console, dev) = run("a");
    assert_eq!(value(&console, "mac:"), "52:54:00:12:34:56");
    assert_eq!(value(&console, "carrier:"), "1");
    assert_eq!(
        value(&console, "phy:"),
        "Link is Up - 100Mbps/Full - flow control off"
    );
    assert!(dev["eth0.mdio"].as_u64().unwrap() > 0, "{dev}");
    check_transfers(&console, &dev);
    let (console2, dev2) = run("b");
    assert_eq!(console, console2);
    assert_eq!(dev, dev2);
}

#[test]
fn a_user_space_driver_through_uio_moves_tcp_intact_through_tap() {
    let _ = image("custom");
    let dir = Scratch::new("ethoc-uio");
    let script = dir.write(
        "run.sh",
        format!(
            r#"echo "uio:$(cat /sys/class/uio/uio0/name) maps:$(ls /sys/class/uio/uio0/maps | tr '\n' ' ')"
[ -e /sys/class/net/eth0 ] && echo "eth0 exists: the kernel driver took the NIC"
nicd -a slot -c word -n batch > /tmp/nicd.log 2>&1 &
i=0; while ! grep -q "nicd: up" /tmp/nicd.log && [ $i -lt 300 ]; do sleep 0.01; i=$((i+1)); done
cat /tmp/nicd.log
ip link set tap0 up && ip addr add 10.0.2.15/24 dev tap0
{TRANSFERS}kill %1; wait
cat /tmp/nicd.log
exit 0
"#
        ),
    );
    let (console, dev) = boot_with_devices(
        &dir,
        "custom",
        "uio_pdrv_genirq.of_id=generic-uio",
        &root().join("machines/atomic-ethoc-uio.toml"),
        &script,
        "a",
        &["eth0."],
    );
    assert_eq!(value(&console, "uio:"), "ethernet maps:map0 map1");
    assert!(!console.contains("eth0 exists"), "{console}");
    assert_eq!(value(&console, "nicd: up "), "tap0 52:54:00:12:34:56");
    check_transfers(&console, &dev);
    // nicd's own counters: every frame the NIC took went up the stream.
    let driver = value(&console, "nicd: driver ");
    let rx: u64 = driver.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert_eq!(rx, dev["eth0.rx_frames"].as_u64().unwrap(), "{driver}");
    assert!(driver.contains("rx_dropped 0"), "{driver}");
}
