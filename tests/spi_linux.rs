//! The DesignWare SSI with an spidev sink and the DesignWare AXI DMA named
//! by a machine description (`machines/atomic-spi.toml`), under stock Linux:
//!
//! * `debian` (6.12; `spi-dw-mmio` and `dw-axi-dmac-platform` loaded by the
//!   agent; Debian has no `SPI_DW_DMA`, so the write is interrupt-driven
//!   PIO): `spi0.0` on the SPI bus, `/dev/spidev0.0`, an 8-byte write whose
//!   exact bytes the host-side sink record holds, and the SSI's interrupt in
//!   `/proc/interrupts`;
//! * `custom` (6.1 with `SPI_DW_DMA`, `DW_AXI_DMAC`, `COMMON_CLK`): the same
//!   write goes through the DMA controller (a completed transfer in its
//!   counters, its interrupt counted in `/proc/interrupts`).
//!
//! The host reads the sink record from the run's device statistics
//! (`--stats-json`: `spi0.cs0.bytes`, `.last8`, `.fnv1a`, …). Each run is
//! done twice and must give the same record.

use crate::support;

use support::*;

const PAYLOAD: &[u8; 8] = b"ABCDEFGH";

const WORKLOAD: &str = r#"for m in spi_dw_mmio dw_axi_dmac_platform; do
    grep -q "^$m " /proc/modules && echo "module:$m"
done
for d in /sys/bus/spi/devices/*; do echo "spi-device:$(basename $d) $(cat $d/modalias)"; done
[ -c /dev/spidev0.0 ] && echo "chardev:/dev/spidev0.0"
printf 'ABCDEFGH' > /dev/spidev0.0 && echo "write:ok"
grep -E 'spi|dma' /proc/interrupts | sed 's/^/irq:/'
exit 0
"#;

/// FNV-1a 64, as the sink's `fnv1a` statistic.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Console and the SPI and DMA counters of one boot.
fn run(image_name: &str, dir: &Scratch, tag: &str) -> (String, serde_json::Value) {
    boot_devices(
        dir,
        image_name,
        "machines/atomic-spi.toml",
        WORKLOAD,
        tag,
        &["spi0.", "dma0."],
    )
}

/// The count columns (one per hart) of the first `/proc/interrupts` line naming `what`.
fn irq_count(console: &str, what: &str) -> Option<u64> {
    let line = console
        .lines()
        .filter(|l| l.starts_with("irq:"))
        .find(|l| l.contains(what))?;
    let fields: Vec<&str> = line["irq:".len()..].split_whitespace().collect();
    Some(
        fields
            .iter()
            .skip(1)
            .map_while(|f| f.parse::<u64>().ok())
            .sum(),
    )
}

fn check_common(console: &str, dev: &serde_json::Value) {
    assert!(
        console
            .lines()
            .any(|l| l.starts_with("spi-device:spi0.0 ") && l.contains("dh2228fv")),
        "spi0.0 (the sink) is not on the SPI bus:\n{console}"
    );
    assert!(
        console
            .lines()
            .any(|l| l.trim_end() == "chardev:/dev/spidev0.0"),
        "no /dev/spidev0.0:\n{console}"
    );
    assert!(
        console.lines().any(|l| l.trim_end() == "write:ok"),
        "the spidev write failed:\n{console}"
    );
    assert_eq!(
        dev["spi0.cs0.bytes"], 8,
        "the sink received exactly the 8 bytes: {dev}"
    );
    assert_eq!(
        dev["spi0.cs0.frames"], 1,
        "in one chip-select frame (the FIFO never ran dry): {dev}"
    );
    assert_eq!(dev["spi0.cs0.last8"], u64::from_be_bytes(*PAYLOAD), "{dev}");
    assert_eq!(dev["spi0.cs0.fnv1a"], fnv1a(PAYLOAD), "{dev}");
    assert_eq!(dev["spi0.tx_overflows"], 0, "{dev}");
}

#[test]
fn debian_spidev_write_reaches_the_sink_by_interrupt_driven_pio() {
    let _ = image("debian");
    let dir = Scratch::new("spi-debian");
    let (console, dev) = run("debian", &dir, "a");
    for m in ["spi_dw_mmio", "dw_axi_dmac_platform"] {
        assert!(
            console
                .lines()
                .any(|l| l.trim_end() == format!("module:{m}")),
            "{m} not loaded:\n{console}"
        );
    }
    check_common(&console, &dev);
    // No SPI_DW_DMA in Debian's kernel: the SSI's own interrupt fed the FIFO.
    let spi_irqs = irq_count(&console, "spi")
        .unwrap_or_else(|| panic!("no SSI interrupt in /proc/interrupts:\n{console}"));
    assert!(
        spi_irqs > 0,
        "the SSI interrupt was never taken:\n{console}"
    );
    assert!(dev["spi0.irqs"].as_u64().unwrap() > 0, "{dev}");
    assert_eq!(
        dev["dma0.transfers"], 0,
        "PIO: the DMA controller moved nothing: {dev}"
    );
    eprintln!("debian: SSI interrupts in /proc/interrupts {spi_irqs}; {dev}");
    let (console2, again) = run("debian", &dir, "b");
    assert_eq!(dev, again, "the same run gives the same SPI and DMA record");
    assert_eq!(irq_count(&console2, "spi"), Some(spi_irqs));
}

#[test]
fn custom_spidev_write_goes_through_the_axi_dma() {
    let _ = image("custom");
    let dir = Scratch::new("spi-custom");
    let (console, dev) = run("custom", &dir, "a");
    check_common(&console, &dev);
    assert!(
        dev["dma0.transfers"].as_u64().unwrap() >= 1,
        "no DMA transfer completed: {dev}"
    );
    assert_eq!(dev["dma0.errors"], 0, "{dev}");
    assert!(dev["dma0.bytes"].as_u64().unwrap() >= 8, "{dev}");
    let dma_irqs = irq_count(&console, "dw_axi_dmac_platform");
    let dma_irqs = dma_irqs
        .unwrap_or_else(|| panic!("no DMA controller interrupt in /proc/interrupts:\n{console}"));
    assert!(
        dma_irqs > 0,
        "the DMA interrupt was never taken:\n{console}"
    );
    eprintln!("custom: DMA interrupts in /proc/interrupts {dma_irqs}; {dev}");
    let (_, again) = run("custom", &dir, "b");
    assert_eq!(dev, again, "the same run gives the same SPI and DMA record");
}
