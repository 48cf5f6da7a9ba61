//! virtio-net (`machines/atomic-virtio-net.toml`) under stock Linux —
//! `virtio_net` built into `custom` (6.1), loaded as a module on `debian`
//! (6.12) — with the deterministic network peer on its wire:
//!
//! * the driver takes the device's MAC (config space) and sees the link up;
//! * the peer answers ping;
//! * a 16 MiB TCP stream from the peer's source arrives intact (the FNV-1a the
//!   guest's `ttcp` computes over what it read equals the peer's over what
//!   it sent), and one the guest sends reaches the peer's sink intact (the
//!   peer's FNV-1a equals the host's of the bytes `ttcp -t` writes);
//! * frames counted by the NIC equal those the peer took and sent;
//! * two runs give the same console and counters.

use crate::support;

use support::*;

const LEN: u64 = 8192;
const COUNT: u64 = 64;

const WORKLOAD: &str = r#"echo "mac:$(cat /sys/class/net/eth0/address)"
ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0
echo "carrier:$(cat /sys/class/net/eth0/carrier)"
ping -c 3 -W 1 10.0.2.2 | grep -E 'packets' | sed 's/^/ping:/'
ttcp -c 10.0.2.2 -p 5001 -l 8192 -n 2048
ttcp -t 10.0.2.2 -p 5002 -l 8192 -n 64
ttcp -u -c 10.0.2.2 -p 5003 -l 1024 -n 256 | sed 's/^ttcp-r/udp-r/'
ttcp -u -t 10.0.2.2 -p 5004 -l 1024 -n 256
sleep 0.1 # the NIC's last frames cross the wire
echo "rx_packets:$(cat /sys/class/net/eth0/statistics/rx_packets)"
echo "tx_packets:$(cat /sys/class/net/eth0/statistics/tx_packets)"
exit 0
"#;

fn value<'a>(console: &'a str, key: &str) -> &'a str {
    console
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .map(str::trim_end)
        .unwrap_or_else(|| panic!("no `{key}` line:\n{console}"))
}

/// FNV-1a 64 of what `ttcp -t -l LEN -n COUNT` writes (byte i of each
/// buffer is i mod 256).
fn sent_fnv() -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for _ in 0..COUNT {
        for i in 0..LEN {
            h = (h ^ (i as u8) as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn check(image: &str) {
    let _ = support::image(image);
    let dir = Scratch::new(&format!("virtio-net-{image}"));
    let run = |tag| {
        boot_devices(
            &dir,
            image,
            "machines/atomic-virtio-net.toml",
            WORKLOAD,
            tag,
            &["net0."],
        )
    };
    let (console, dev) = run("a");
    assert_eq!(value(&console, "mac:"), "52:54:00:12:34:56");
    assert_eq!(value(&console, "carrier:"), "1");
    assert!(
        console.contains("ping:3 packets transmitted, 3 packets received, 0% packet loss"),
        "ping to the peer:\n{console}"
    );
    // 16 MiB from the peer's source.
    let got = LEN * 2048;
    assert!(
        console.contains(&format!("ttcp-r: {got} bytes in")),
        "{console}"
    );
    let guest_fnv = u64::from_str_radix(value(&console, "ttcp-r: fnv1a "), 16).unwrap();
    assert_eq!(dev["net0.peer.tcp_source5001.bytes"], got, "{dev}");
    assert_eq!(dev["net0.peer.tcp_source5001.fnv1a"], guest_fnv, "{dev}");
    let sent = LEN * COUNT;
    assert!(
        console.contains(&format!("ttcp-t: {sent} bytes in")),
        "{console}"
    );
    assert_eq!(dev["net0.peer.tcp_sink5002.bytes"], sent, "{dev}");
    assert_eq!(dev["net0.peer.tcp_sink5002.fnv1a"], sent_fnv(), "{dev}");
    // UDP: the peer's source floods at 1 Gbit/s, faster than this guest
    // takes datagrams, so some may be lost in its socket buffer; what the
    // guest counts and what it lost add up to what the peer sent. Sent the
    // other way, every datagram reaches the peer's sink.
    assert_eq!(dev["net0.peer.udp_source5003.datagrams"], 256, "{dev}");
    let udp = value(&console, "udp-r: ");
    let udp = console
        .lines()
        .find_map(|l| {
            l.strip_prefix("udp-r: ")
                .filter(|r| r.contains(" datagrams of 256, "))
        })
        .unwrap_or_else(|| panic!("no UDP count line ({udp}):\n{console}"));
    let nums: Vec<u64> = udp
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(nums[0] + nums[2], 256, "{udp}");
    if nums[2] == 0 {
        let fnv = u64::from_str_radix(value(&console, "udp-r: fnv1a "), 16).unwrap();
        assert_eq!(dev["net0.peer.udp_source5003.fnv1a"], fnv, "{dev}");
    }
    assert_eq!(dev["net0.peer.udp_sink5004.datagrams"], 256, "{dev}");
    assert_eq!(dev["net0.peer.udp_sink5004.bytes"], 256 * 1024, "{dev}");
    assert_eq!(dev["net0.tx_frames"], dev["net0.peer.frames_in"], "{dev}");
    assert_eq!(dev["net0.rx_frames"], dev["net0.peer.frames_out"], "{dev}");
    for k in [
        "net0.bad_queues",
        "net0.needs_reset",
        "net0.tx_dropped",
        "net0.rx_truncated",
    ] {
        assert_eq!(dev[k], 0, "{k}: {dev}");
    }
    let rx: u64 = value(&console, "rx_packets:").parse().unwrap();
    assert!(
        rx >= dev["net0.rx_frames"].as_u64().unwrap() - dev["net0.rx_dropped"].as_u64().unwrap(),
        "{dev}"
    );
    let (console2, dev2) = run("b");
    assert_eq!(console, console2);
    assert_eq!(dev, dev2);
}

#[test]
fn custom_kernel_pings_and_moves_tcp_both_ways_intact() {
    check("custom");
}

#[test]
fn debian_kernel_pings_and_moves_tcp_both_ways_intact() {
    check("debian");
}
