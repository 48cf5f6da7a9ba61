//! SD: the Synopsys DesignWare Mobile Storage Host Controller
//! (`snps,dwcmshc-sdhci`, an SDHCI controller: [`sdhci`]) with an SDHC card
//! in its slot ([`card`]), as a board device (`kind = "dwcmshc-sdhci"`).
//!
//! Why this controller: Linux's stock `sdhci-of-dwcmshc` glue binds to it
//! with nothing but a `core` clock, it is built into the `custom` kernel
//! (6.1) and a module of Debian's 6.12 (`CONFIG_MMC_SDHCI_OF_DWCMSHC=m`),
//! and it is the SDHCI core's own register set — PIO, SDMA and ADMA2 — so
//! the study compares the transfer modes of the most common SD host
//! interface through the driver every SDHCI platform uses.
//!
//! ```toml
//! [board.sd_clk]
//! kind = "fixed-clock"
//! hz = 100_000_000         # the controller's base clock (Linux's max_clk)
//!
//! [board.sd0]
//! kind = "dwcmshc-sdhci"
//! clock = "sd_clk"         # required
//! file = "card.img"        # the card's image, a whole number of 512 KiB (relative
//!                          # to the working directory), or: blank-mib = 64
//! write-through = false    # default: writes go to a copy-on-write overlay
//! read-only = false        # the card's write-protect (CSD TMP_WRITE_PROTECT)
//! bus-width = 4            # 1 or 4: the device tree's bus-width (Linux forces 1-bit for 1)
//! transfer = "adma2"       # "adma2", "sdma" or "pio": which of the controller's
//!                          # capabilities the device tree leaves the driver
//!                          # (`sdhci-caps-mask`); the registers always offer both
//! high-speed = true        # capability: 50 MHz high-speed mode
//! max-frequency = 50_000_000  # optional: the device tree's max-frequency
//! read-latency-ns = 100000    # card access time before a read's first block
//! write-busy-ns = 250000      # card programming time after a write
//! erase-busy-ns = 1000000
//! ```

pub mod card;
pub mod sdhci;
#[cfg(test)]
pub(crate) mod test_image;
#[cfg(test)]
mod tests;

use crate::disk::DiskSpec;
use crate::fdt::{FdtCtx, FdtNode, Placement};
use crate::resources::{Attach, DeviceConfig, Kind, ParamError, Params, Plug, Want};
use crate::{BadAccess, DevCtx, Device, Grant, Stat, WriteEffect};
pub use card::SdCard;
pub use sdhci::{CardTiming, Sdhci, SdhciConfig};

pub const KIND: Kind = Kind {
    name: "dwcmshc-sdhci",
    plug,
};

/// Which DMA engines the device tree leaves the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmaMode {
    Adma2,
    Sdma,
    Pio,
}

impl DmaMode {
    /// `sdhci-caps-mask`: the capability bits the driver must ignore.
    pub fn caps_mask(self) -> u64 {
        match self {
            DmaMode::Adma2 => 0,
            DmaMode::Sdma => sdhci::CAN_DO_ADMA2 as u64,
            DmaMode::Pio => (sdhci::CAN_DO_ADMA2 | sdhci::CAN_DO_SDMA) as u64,
        }
    }
}

/// One controller's configuration, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SdBoardConfig {
    pub clock: String,
    pub disk: DiskSpec,
    pub read_only: bool,
    pub bus_width: u32,
    pub dma: DmaMode,
    pub high_speed: bool,
    pub max_frequency: Option<u32>,
    pub timing: CardTiming,
}

impl SdBoardConfig {
    pub fn parse(cfg: &DeviceConfig) -> Result<Self, ParamError> {
        let mut p = Params::new(cfg);
        let clock = p.string("clock")?.ok_or_else(|| ParamError {
            key: "clock".into(),
            message:
                "is required: the name of a `fixed-clock` device (the controller's base clock)"
                    .into(),
        })?;
        let disk = DiskSpec::parse(&mut p)?;
        let write_through = disk.writes_through();
        let read_only = p.bool("read-only", false)?;
        if write_through && read_only {
            return Err(ParamError {
                key: "write-through".into(),
                message: "cannot be true on a `read-only` card".into(),
            });
        }
        let bus_width = p.int("bus-width", 4, 1, 4)? as u32;
        if bus_width != 1 && bus_width != 4 {
            return Err(ParamError {
                key: "bus-width".into(),
                message: format!("{bus_width} is not a width an SD card has (1 or 4)"),
            });
        }
        let dma = match p.string("transfer")?.as_deref() {
            None | Some("adma2") => DmaMode::Adma2,
            Some("sdma") => DmaMode::Sdma,
            Some("pio") => DmaMode::Pio,
            Some(other) => {
                return Err(ParamError {
                    key: "transfer".into(),
                    message: format!(
                        "`{other}` is not a transfer mode (\"adma2\", \"sdma\" or \"pio\")"
                    ),
                })
            }
        };
        let high_speed = p.bool("high-speed", true)?;
        let max_frequency = match p.int("max-frequency", 0, 0, 208_000_000)? {
            0 => None,
            hz if hz < 400_000 => {
                return Err(ParamError {
                    key: "max-frequency".into(),
                    message: format!("{hz} Hz is below the 400 kHz a card is identified at"),
                })
            }
            hz => Some(hz as u32),
        };
        let d = CardTiming::default();
        let timing = CardTiming {
            read_latency_ns: p.int(
                "read-latency-ns",
                d.read_latency_ns as i64,
                0,
                1_000_000_000,
            )? as u64,
            write_busy_ns: p.int("write-busy-ns", d.write_busy_ns as i64, 0, 1_000_000_000)? as u64,
            erase_busy_ns: p.int("erase-busy-ns", d.erase_busy_ns as i64, 0, 1_000_000_000)? as u64,
        };
        p.finish()?;
        Ok(SdBoardConfig {
            clock,
            disk,
            read_only,
            bus_width,
            dma,
            high_speed,
            max_frequency,
            timing,
        })
    }
}

fn plug(cfg: &DeviceConfig) -> Result<Plug, ParamError> {
    let c = SdBoardConfig::parse(cfg)?;
    let disk = c.disk.open().map_err(|message| ParamError {
        key: c.disk.key().into(),
        message,
    })?;
    let serial = cfg.name.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ b as u32).wrapping_mul(0x0100_0193)
    });
    let card = SdCard::new(disk, c.read_only, serial).map_err(|message| ParamError {
        key: c.disk.key().into(),
        message,
    })?;
    let name = cfg.name.clone();
    let want = Want::new(name.clone())
        .mmio(sdhci::SIZE)
        .irqs(1)
        .bus_master()
        .refers_to(c.clock.clone());
    Ok(Plug::new(want, move |a: &mut Attach| {
        let base_hz = a.clock_rate(&c.clock).unwrap_or(0);
        let hc = SdhciConfig {
            base_hz,
            high_speed: c.high_speed,
            timing: c.timing,
        };
        let irq = a.irq(0);
        Box::new(SdDevice {
            ctl: Sdhci::new(&name, hc, a.clock, irq, Some(card)),
            cfg: c,
            name,
        })
    }))
}

/// The controller on the board: registers, events, its device-tree node.
pub struct SdDevice {
    name: String,
    cfg: SdBoardConfig,
    ctl: Sdhci,
}

impl SdDevice {
    pub fn controller(&self) -> &Sdhci {
        &self.ctl
    }
}

impl Device for SdDevice {
    /// The controller with its card (a card written through is refused
    /// when saved).
    fn state(&self) -> Option<&dyn crate::Persist> {
        Some(&self.ctl)
    }
    fn state_mut(&mut self) -> Option<&mut dyn crate::Persist> {
        Some(&mut self.ctl)
    }
    fn name(&self) -> String {
        self.name.clone()
    }
    fn size(&self) -> u64 {
        sdhci::SIZE
    }
    fn read(&mut self, ctx: &mut DevCtx, offset: u64, size: u8) -> Result<u64, BadAccess> {
        self.ctl.mmio_read(ctx, offset, size)
    }
    fn write(
        &mut self,
        ctx: &mut DevCtx,
        offset: u64,
        size: u8,
        val: u64,
    ) -> Result<WriteEffect, BadAccess> {
        self.ctl.mmio_write(ctx, offset, size, val)
    }
    fn event(&mut self, ctx: &mut DevCtx, _token: u64) {
        self.ctl.on_event(ctx);
    }
    fn fdt_nodes(&self, g: &Grant, ctx: &FdtCtx) -> Vec<(Placement, FdtNode)> {
        vec![(Placement::Soc, fdt_node(&self.cfg, g, ctx))]
    }
    fn stats(&self) -> Vec<Stat> {
        self.ctl.stats()
    }
}

/// The node Linux's `sdhci-of-dwcmshc` binds to.
pub fn fdt_node(c: &SdBoardConfig, g: &Grant, ctx: &FdtCtx) -> FdtNode {
    let mut n = FdtNode::new(g.node_name("mmc"))
        .str("compatible", "snps,dwcmshc-sdhci")
        .reg(g.base, g.size)
        .u32("interrupt-parent", ctx.interrupt_parent)
        .u32s("interrupts", g.irqs.clone())
        .u32s("clocks", vec![ctx.phandle(&c.clock).unwrap_or(0)])
        .strs("clock-names", &["core"])
        .u32("bus-width", c.bus_width)
        // The card is soldered in as far as the driver knows: no card-detect
        // polling; 3.3 V signalling only.
        .empty("non-removable")
        .empty("no-1-8-v")
        .empty("disable-wp");
    let mask = c.dma.caps_mask();
    if mask != 0 {
        n = n.u32s("sdhci-caps-mask", vec![(mask >> 32) as u32, mask as u32]);
    }
    if let Some(hz) = c.max_frequency {
        n = n.u32("max-frequency", hz);
    }
    n
}
