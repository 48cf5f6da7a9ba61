//! Board-level tests that do not need a running hart: device tree,
//! image placement in RAM, boot registers, configuration errors.

use std::process::Command;

use hs_machine::layout::*;
use hs_machine::{BootFile, BootImages, Machine, MachineConfig, MachineError};

const MIB: u64 = 1 << 20;

/// `bytes` as a Linux `Image` (the header's magic at 0x38, its image size
/// the file's), as firmware boots a kernel; shorter files stay as they are.
fn linux_image(mut bytes: Vec<u8>) -> Vec<u8> {
    if bytes.len() >= 0x40 {
        let n = bytes.len() as u64;
        bytes[0x10..0x18].copy_from_slice(&n.to_le_bytes());
        bytes[0x38..0x3c].copy_from_slice(b"RSC\x05");
    }
    bytes
}

fn cfg(harts: usize, kernel: Vec<u8>, initrd: Option<Vec<u8>>) -> MachineConfig {
    let kernel = linux_image(kernel);
    MachineConfig {
        harts,
        ram_bytes: 512 * MIB,
        bootargs: "console=ttyS0 earlycon".into(),
        images: BootImages {
            firmware: Some(BootFile::from_bytes("fw_jump.bin", vec![0x6f; 200_000])),
            kernel: Some(BootFile::from_bytes("Image", kernel)),
            initrd: initrd.map(|d| BootFile::from_bytes("initrd", d)),
        },
        ..MachineConfig::default()
    }
}

fn dts(dtb: &[u8]) -> String {
    let dir = std::env::temp_dir().join(format!("hs-dtb-{}-{}", std::process::id(), dtb.len()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("board.dtb");
    std::fs::write(&path, dtb).unwrap();
    let out = Command::new("dtc")
        .args(["-I", "dtb", "-O", "dts"])
        .arg(&path)
        .output()
        .expect("dtc (device-tree-compiler) is installed");
    assert!(
        out.status.success(),
        "dtc rejected the blob: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn device_tree_parses_and_describes_the_board() {
    let m = Machine::new(cfg(4, vec![1; 4096], Some(vec![2; 8192]))).unwrap();
    let text = dts(m.dtb());
    let start = 0x8020_0000u64 + 128 * MIB;
    for needle in [
        "compatible = \"riscv-virtio\";",
        "bootargs = \"console=ttyS0 earlycon\";",
        "stdout-path = \"/soc/serial@10000000\";",
        &format!("linux,initrd-start = <0x00 {start:#x}>;"),
        &format!("linux,initrd-end = <0x00 {:#x}>;", start + 8192),
        "timebase-frequency = <0x989680>;",
        "cpu@3 {",
        &format!("riscv,isa = \"{}\";", hs_core::ISA_STRING),
        "riscv,isa-base = \"rv64i\";",
        "mmu-type = \"riscv,sv48\";",
        "compatible = \"riscv,cpu-intc\";",
        "core3 {",
        "memory@80000000 {",
        "reg = <0x00 0x80000000 0x00 0x20000000>;",
        "serial@10000000 {",
        // 3686400 = bytes 00 38 40 00, which dtc prints as a string (as for QEMU's tree).
        "clock-frequency = \"\\08@\";",
        "compatible = \"ns16550a\";",
        "compatible = \"sifive,plic-1.0.0\\0riscv,plic0\";",
        "riscv,ndev = <0x60>;",
        "compatible = \"sifive,clint0\\0riscv,clint0\";",
        "compatible = \"sifive,test1\\0sifive,test0\\0syscon\";",
        "compatible = \"syscon-poweroff\";",
        "value = <0x7777>;",
        "rtc@101000 {",
        "compatible = \"google,goldfish-rtc\";",
        "virtio_mmio@10008000 {",
    ] {
        assert!(text.contains(needle), "missing `{needle}` in\n{text}");
    }
    assert_eq!(text.matches("compatible = \"virtio,mmio\";").count(), 8);
    // PLIC contexts per hart: M external (11) then S external (9), as QEMU.
    assert!(text.contains("interrupts-extended = <0x02 0x0b 0x02 0x09 0x04 0x0b 0x04 0x09 0x06 0x0b 0x06 0x09 0x08 0x0b 0x08 0x09>;"), "{text}");
    assert!(
        text.contains("interrupts-extended = <0x02 0x03 0x02 0x07 0x04 0x03"),
        "{text}"
    );
}

#[test]
fn images_and_boot_registers_are_where_qemu_puts_them() {
    let kernel = linux_image((0..10_000u32).map(|i| i as u8).collect());
    let m = Machine::new(cfg(2, kernel.clone(), Some(vec![0xab; 100]))).unwrap();
    let ram = m.ram();
    let mut buf = vec![0u8; kernel.len()];
    assert!(ram.read_bytes(0x8020_0000, &mut buf));
    assert_eq!(buf, kernel);
    assert_eq!(ram.read(0x8000_0000, 1), Some(0x6f));
    let (rd_start, rd_end) = m.plan().initrd.unwrap();
    assert_eq!((rd_start, rd_end), (0x8820_0000, 0x8820_0064));
    assert_eq!(ram.read(rd_start, 1), Some(0xab));
    let dtb_addr = m.plan().dtb_addr;
    assert_eq!(dtb_addr, 0x9fe0_0000);
    assert_eq!(
        ram.read(dtb_addr, 4),
        Some(0xedfe0dd0),
        "FDT magic (big-endian d00dfeed)"
    );
    for (h, hart) in m.harts().iter().enumerate() {
        assert_eq!(hart.pc(), 0x8000_0000);
        assert_eq!(hart.x(10), h as u64);
        assert_eq!(hart.x(11), dtb_addr);
        assert_eq!(hart.x(12), FW_DYNAMIC_INFO_ADDR);
    }
}

#[test]
fn configuration_errors_are_one_clear_sentence() {
    let mut c = cfg(0, vec![1; 4096], None);
    assert_eq!(
        Machine::new(c).err().unwrap().to_string(),
        "--smp 0: this machine supports 1 to 64 harts"
    );
    c = cfg(65, vec![1; 4096], None);
    assert!(matches!(Machine::new(c), Err(MachineError::BadSmp(65))));
    c = cfg(1, vec![1; 4096], None);
    c.hz = 15_000_000;
    assert!(matches!(
        Machine::new(c),
        Err(MachineError::BadFrequency(_))
    ));
    c = cfg(1, vec![1; 64 * MIB as usize], Some(vec![1; 16]));
    c.ram_bytes = 64 * MIB;
    let msg = Machine::new(c).err().unwrap().to_string();
    assert!(
        msg.starts_with(
            "-m 64M is too small for the firmware, kernel, initrd and device tree: at least "
        ),
        "{msg}"
    );
    c = cfg(1, vec![], None);
    assert_eq!(
        Machine::new(c).err().unwrap().to_string(),
        "kernel file Image is empty"
    );
}

/// A virtio backend that answers reads of its config space with a constant.
struct ConstBackend;
impl hs_devices::VirtioBackend for ConstBackend {
    fn device_id(&self) -> u32 {
        2
    }
    fn device_features(&self) -> u64 {
        0
    }
    fn num_queues(&self) -> u16 {
        1
    }
    fn queue_max(&self) -> u16 {
        128
    }
    fn config_read(&mut self, _offset: u64, _size: u8) -> u64 {
        0x77
    }
    fn config_write(&mut self, _offset: u64, _size: u8, _val: u64) {}
    fn notify(
        &mut self,
        _ctx: &mut hs_devices::DevCtx,
        _index: u16,
        _q: &hs_devices::virtio_mmio::QueueConfig,
    ) -> Result<u32, hs_devices::virtio_mmio::NeedsReset> {
        Ok(0)
    }
}

#[test]
fn virtio_slots_take_pluggable_backends() {
    use hs_bus::{Access, SystemBus};
    let mut c = cfg(1, vec![1; 4096], None);
    c.virtio_devices.push(hs_machine::VirtioDevice {
        slot: 3,
        make: Box::new(|_ram| Box::new(ConstBackend)),
    });
    let mut m = Machine::new(c).unwrap();
    let acc = Access { hart: 0, now: 0 };
    let bus = m.board_mut();
    let slot = |i: u64| VIRTIO_BASE + VIRTIO_STRIDE * i;
    assert_eq!(bus.mmio_read(acc, slot(3), 4), Ok(0x7472_6976));
    assert_eq!(
        bus.mmio_read(acc, slot(3) + 8, 4),
        Ok(2),
        "device id of the plugged backend"
    );
    assert_eq!(bus.mmio_read(acc, slot(2) + 8, 4), Ok(0), "empty slot");
    assert_eq!(bus.mmio_read(acc, slot(3) + 0x100, 1), Ok(0x77));
    let mut c = cfg(1, vec![1; 4096], None);
    c.virtio_devices.push(hs_machine::VirtioDevice {
        slot: 8,
        make: Box::new(|_ram| Box::new(ConstBackend)),
    });
    assert_eq!(
        Machine::new(c).err().unwrap().to_string(),
        "board wiring: virtio slot 8 does not exist (slots are 0 to 7)"
    );
}

#[test]
fn a_gpio_named_by_the_machine_description_is_placed_described_and_driven() {
    use hs_bus::{Access, SystemBus};
    use hs_devices::gpio::{
        DwApbGpio, GpioChange, EXT_PORTA, INTEN, INTSTATUS, INT_POLARITY, SWPORTA_DDR, SWPORTA_DR,
    };
    let desc =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../machines/atomic-gpio.toml");
    let mut c = cfg(2, vec![1; 4096], None);
    c.devices = hs_machine::load_devices(&desc).unwrap();
    let mut m = Machine::new(c).unwrap();
    let text = dts(m.dtb());
    for needle in [
        "gpio@4000000 {",
        "compatible = \"snps,dw-apb-gpio\";",
        "reg = <0x00 0x4000000 0x00 0x100>;",
        "gpio-port@0 {",
        "compatible = \"snps,dw-apb-gpio-port\";",
        "ngpios = <0x20>;",
        "interrupts = <0x40>;",
        "interrupt-parent = <0x05>;",
        "serial@10000000 {",
    ] {
        assert!(text.contains(needle), "missing `{needle}` in\n{text}");
    }
    let id = m.board().find("gpio0").unwrap();
    assert_eq!(m.board().grant(id).unwrap().irqs, [64]);
    let acc = |now| Access { hart: 1, now };
    let bus = m.board_mut();
    bus.mmio_write(acc(100), 0x400_0000 + SWPORTA_DDR, 4, 0b11)
        .unwrap();
    bus.mmio_write(acc(200), 0x400_0000 + SWPORTA_DR, 4, 0b10)
        .unwrap();
    // An input driven on the board wire reaches EXT_PORTA and, enabled, the PLIC source.
    bus.mmio_write(acc(300), 0x400_0000 + INT_POLARITY, 4, 1 << 5)
        .unwrap();
    bus.mmio_write(acc(300), 0x400_0000 + INTEN, 4, 1 << 5)
        .unwrap();
    hs_bus::GpioLine::set_level(&bus.signal("gpio0.in5"), true);
    bus.sync_inputs(0, 400);
    assert_eq!(
        bus.mmio_read(acc(500), 0x400_0000 + EXT_PORTA, 4),
        Ok(0b10_0010)
    );
    assert_eq!(
        bus.mmio_read(acc(500), 0x400_0000 + INTSTATUS, 4),
        Ok(1 << 5)
    );
    assert_eq!(
        bus.mmio_read(acc(500), PLIC_BASE + 0x1000 + 8, 4),
        Ok(1),
        "PLIC source 64 pending"
    );
    assert!(bus.signal("gpio0.out1").is_high());
    let g = bus.device::<DwApbGpio>(id).unwrap();
    // Lines 0 and 1 became outputs driving 0 (as the pins already were): only line 1 rising is a change.
    assert_eq!(
        g.changes(),
        &[GpioChange {
            cycle: 200,
            line: 1,
            level: true
        }]
    );
    assert!(m
        .device_stats()
        .iter()
        .any(|s| s.name == "gpio0.output_changes" && s.value == 1));
}

#[test]
fn a_bad_device_in_the_machine_description_is_one_sentence_naming_the_key() {
    let dir = std::env::temp_dir().join(format!("hs-desc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("m.toml");
    std::fs::write(
        &p,
        "model = \"atomic\"\n[board.gpio0]\nkind = \"dw-apb-gpio\"\nngpios = 64\n",
    )
    .unwrap();
    let e = hs_machine::load_devices(&p).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "machine description {}: key `board.gpio0.ngpios`: 64 is out of range (1 to 32)",
            p.display()
        )
    );
    // The timing crate accepts the same file (the board table is not its business).
    assert!(hs_machine::hs_timing::MachineDesc::load(&p).is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_fixed_clock_from_the_description_is_a_root_node_others_can_refer_to() {
    let devices = hs_machine::config::parse_devices(
        std::path::Path::new("clk.toml"),
        "model = \"atomic\"\n[board.spi_clk]\nkind = \"fixed-clock\"\nfrequency = 50000000\n[board.gpio0]\nkind = \"dw-apb-gpio\"\n",
    )
    .unwrap();
    let mut c = cfg(1, vec![1; 4096], None);
    c.devices = devices;
    let m = Machine::new(c).unwrap();
    let text = dts(m.dtb());
    // cpu 1, intc 2, PLIC 3, syscon 4, then the configured devices in order.
    for needle in [
        "clock-spi_clk {",
        "compatible = \"fixed-clock\";",
        "clock-frequency = <0x2faf080>;",
        "#clock-cells = <0x00>;",
        "phandle = <0x05>;",
        "gpio@4000000 {",
        "phandle = <0x06>;",
    ] {
        assert!(text.contains(needle), "missing `{needle}` in\n{text}");
    }
    let id = m.board().find("spi_clk").unwrap();
    assert_eq!(
        m.board()
            .device::<hs_devices::clock::FixedClock>(id)
            .unwrap()
            .hz(),
        50_000_000
    );
}
