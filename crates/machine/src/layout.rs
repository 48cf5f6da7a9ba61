//! The physical memory map, QEMU `virt`-compatible so stock OpenSBI and
//! Linux find everything where they expect it.
//!
//! ```text
//!   0x0000_0000 ┌───────────────────────────┐
//!               │ (unmapped)                │
//!   0x0000_1000 ├───────────────────────────┤ MROM: fw_dynamic_info (0x1028)
//!   0x0001_0000 ├───────────────────────────┤
//!               │ (unmapped)                │
//!   0x0010_0000 ├───────────────────────────┤ syscon / sifive,test (poweroff 0x5555, reboot 0x7777)
//!   0x0010_1000 ├───────────────────────────┤ goldfish RTC            IRQ 11
//!   0x0010_2000 ├───────────────────────────┤
//!   0x0200_0000 ├───────────────────────────┤ CLINT (msip, mtimecmp, mtime)
//!   0x0201_0000 ├───────────────────────────┤
//!   0x0400_0000 ├───────────────────────────┤ platform window: optional devices get
//!               │                           │ their windows here (size-aligned), and
//!               │                           │ PLIC sources 64..95 (QEMU's platform bus)
//!   0x0600_0000 ├───────────────────────────┤
//!   0x0c00_0000 ├───────────────────────────┤ PLIC (96 sources, 2 contexts per hart)
//!   0x0c60_0000 ├───────────────────────────┤
//!   0x1000_0000 ├───────────────────────────┤ UART0 16550A            IRQ 10
//!   0x1000_0100 ├───────────────────────────┤
//!   0x1000_1000 ├───────────────────────────┤ virtio-mmio slot 0..7   IRQ 1..8
//!   0x1000_9000 ├───────────────────────────┤ (0x1000 bytes each)
//!               │ (unmapped)                │
//!   0x8000_0000 ├───────────────────────────┤ DRAM: firmware
//!   0x8020_0000 │   kernel (2 MiB above the firmware's end)
//!               │   initrd at kernel + min(RAM/2, 128 MiB)
//!               │   DTB: 2 MiB-aligned, below min(RAM end, 3 GiB)
//!   base + RAM  └───────────────────────────┘
//! ```

pub const MROM_BASE: u64 = 0x0000_1000;
pub const MROM_SIZE: u64 = 0xf000;
/// QEMU's reset vector is 10 instructions; `fw_dynamic_info` follows it.
pub const FW_DYNAMIC_INFO_ADDR: u64 = MROM_BASE + 10 * 4;

pub const SYSCON_BASE: u64 = 0x0010_0000;
pub const RTC_BASE: u64 = 0x0010_1000;
pub const RTC_IRQ: u32 = 11;
pub const CLINT_BASE: u64 = 0x0200_0000;
pub const PLIC_BASE: u64 = 0x0c00_0000;
pub const UART0_BASE: u64 = 0x1000_0000;
pub const UART0_IRQ: u32 = 10;
pub const VIRTIO_BASE: u64 = 0x1000_1000;
pub const VIRTIO_STRIDE: u64 = 0x1000;
pub const VIRTIO_COUNT: usize = 8;
/// Slot `i` raises PLIC source `VIRTIO_IRQ_BASE + i`.
pub const VIRTIO_IRQ_BASE: u32 = 1;

/// Optional devices ([`crate::board::Board::add`] with no fixed address)
/// are placed in this window, as QEMU `virt` places dynamic sysbus devices.
pub const PLATFORM_BASE: u64 = 0x0400_0000;
pub const PLATFORM_SIZE: u64 = 0x0200_0000;
/// PLIC sources handed to optional devices (QEMU `virt`'s platform-bus range).
pub const PLATFORM_IRQ_FIRST: u32 = 64;
pub const PLATFORM_IRQ_LAST: u32 = 95;

pub const DRAM_BASE: u64 = 0x8000_0000;
/// Largest RAM we accept (the DRAM window up to the 64-bit hole is far
/// larger; this keeps host allocation requests sane).
pub const MAX_RAM: u64 = 64 << 30;

pub const KERNEL_ALIGN: u64 = 2 << 20;
pub const FDT_ALIGN: u64 = 2 << 20;
/// The DTB stays below this so 32-bit-addressable firmware can reach it.
pub const FDT_LIMIT: u64 = 3 << 30;
/// Initrd distance above the kernel is min(RAM / 2, this).
pub const INITRD_MAX_OFFSET: u64 = 128 << 20;

/// `timebase-frequency`: `mtime` and the `time` CSR tick at 10 MHz, as on QEMU.
pub const TIMEBASE_HZ: u64 = 10_000_000;
/// Default simulated core clock.
pub const DEFAULT_HZ: u64 = 1_000_000_000;
/// Most harts a machine may have.
pub const MAX_HARTS: usize = 64;
