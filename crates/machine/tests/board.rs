//! Board-level tests that do not need a running hart: device tree,
//! image placement in RAM, boot registers, configuration errors.

use std::process::Command;

use hs_machine::layout::*;
use hs_machine::{BootFile, BootImages, Machine, MachineConfig, MachineError};

const MIB: u64 = 1 << 20;

fn cfg(harts: usize, kernel: Vec<u8>, initrd: Option<Vec<u8>>) -> MachineConfig {
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
    let out = Command::new("dtc").args(["-I", "dtb", "-O", "dts"]).arg(&path).output().expect("dtc (device-tree-compiler) is installed");
    assert!(out.status.success(), "dtc rejected the blob: {}", String::from_utf8_lossy(&out.stderr));
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
    assert!(text.contains("interrupts-extended = <0x02 0x03 0x02 0x07 0x04 0x03"), "{text}");
}

#[test]
fn images_and_boot_registers_are_where_qemu_puts_them() {
    let kernel: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
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
    assert_eq!(ram.read(dtb_addr, 4), Some(0xedfe0dd0), "FDT magic (big-endian d00dfeed)");
    for (h, hart) in m.harts().iter().enumerate() {
        assert_eq!(hart.pc(), 0x8000_0000);
        assert_eq!(hart.x(10), h as u64);
        assert_eq!(hart.x(11), dtb_addr);
        assert_eq!(hart.x(12), FW_DYNAMIC_INFO_ADDR);
    }
}

#[test]
fn configuration_errors_are_one_clear_sentence() {
    let mut c = cfg(0, vec![1; 16], None);
    assert_eq!(Machine::new(c).err().unwrap().to_string(), "--smp 0: this machine supports 1 to 64 harts");
    c = cfg(65, vec![1; 16], None);
    assert!(matches!(Machine::new(c), Err(MachineError::BadSmp(65))));
    c = cfg(1, vec![1; 16], None);
    c.hz = 15_000_000;
    assert!(matches!(Machine::new(c), Err(MachineError::BadFrequency(_))));
    c = cfg(1, vec![1; 64 * MIB as usize], Some(vec![1; 16]));
    c.ram_bytes = 64 * MIB;
    let msg = Machine::new(c).err().unwrap().to_string();
    assert!(msg.starts_with("-m 64M is too small for the firmware, kernel, initrd and device tree: at least "), "{msg}");
    c = cfg(1, vec![], None);
    assert_eq!(Machine::new(c).err().unwrap().to_string(), "kernel file Image is empty");
}

/// A virtio backend that answers reads of its config space with a constant.
struct ConstBackend;
impl hs_devices::VirtioBackend for ConstBackend {
    fn device_id(&self) -> u32 { 2 }
    fn device_features(&self) -> u64 { 0 }
    fn num_queues(&self) -> u16 { 1 }
    fn queue_max(&self) -> u16 { 128 }
    fn config_read(&mut self, _offset: u64, _size: u8) -> u64 { 0x77 }
    fn config_write(&mut self, _offset: u64, _size: u8, _val: u64) {}
    fn notify(&mut self, _ctx: &mut hs_devices::DevCtx, _index: u16, _q: &hs_devices::virtio_mmio::QueueConfig) -> Result<u32, hs_devices::virtio_mmio::NeedsReset> { Ok(0) }
}

#[test]
fn virtio_slots_take_pluggable_backends() {
    use hs_bus::{Access, SystemBus};
    let mut c = cfg(1, vec![1; 16], None);
    c.virtio_devices.push(hs_machine::VirtioDevice { slot: 3, make: Box::new(|_ram| Box::new(ConstBackend)) });
    let mut m = Machine::new(c).unwrap();
    let acc = Access { hart: 0, now: 0 };
    let bus = m.board_mut();
    let slot = |i: u64| VIRTIO_BASE + VIRTIO_STRIDE * i;
    assert_eq!(bus.mmio_read(acc, slot(3), 4), Ok(0x7472_6976));
    assert_eq!(bus.mmio_read(acc, slot(3) + 8, 4), Ok(2), "device id of the plugged backend");
    assert_eq!(bus.mmio_read(acc, slot(2) + 8, 4), Ok(0), "empty slot");
    assert_eq!(bus.mmio_read(acc, slot(3) + 0x100, 1), Ok(0x77));
    let mut c = cfg(1, vec![1; 16], None);
    c.virtio_devices.push(hs_machine::VirtioDevice { slot: 8, make: Box::new(|_ram| Box::new(ConstBackend)) });
    assert_eq!(Machine::new(c).err().unwrap().to_string(), "board wiring: virtio slot 8 does not exist (slots are 0 to 7)");
}
