//! Platform devices: CLINT, PLIC, UART 16550, syscon, RTC, virtio-mmio.
