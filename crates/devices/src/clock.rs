//! A fixed-rate clock (`fixed-clock`): no registers, only a device-tree node
//! other devices refer to with `clocks = <&NAME>` (the DesignWare SPI
//! driver, for one, will not probe without a clock).
//!
//! Configuration: `[board.NAME] kind = "fixed-clock"`, `frequency` in Hz.
//! A consumer names it in its own configuration; the board checks that the
//! name exists ([`crate::Want::refers_to`]) and the consumer writes
//! `ctx.phandle(name)` into its node.

use crate::fdt::{FdtCtx, FdtNode, Placement};
use crate::resources::{DeviceConfig, Kind, ParamError, Params, Plug, Want};
use crate::{BadAccess, DevCtx, Device, Grant, Stat, WriteEffect};

pub const KIND: Kind = Kind {
    name: "fixed-clock",
    plug,
};

#[derive(serde::Serialize, serde::Deserialize)]
pub struct FixedClock {
    name: String,
    hz: u32,
}

crate::persist_by_serde!(FixedClock, keep: [name, hz]);

fn plug(cfg: &DeviceConfig) -> Result<Plug, ParamError> {
    let mut p = Params::new(cfg);
    let hz = p.int("frequency", 100_000_000, 1, u32::MAX as i64)? as u32;
    p.finish()?;
    let name = cfg.name.clone();
    Ok(Plug::new(Want::new(name.clone()).phandle(), move |_| {
        Box::new(FixedClock::new(&name, hz))
    }))
}

impl FixedClock {
    pub fn new(name: &str, hz: u32) -> Self {
        Self {
            name: name.to_string(),
            hz,
        }
    }
    pub fn hz(&self) -> u32 {
        self.hz
    }
}

impl Device for FixedClock {
    crate::persistent!();
    fn name(&self) -> String {
        self.name.clone()
    }
    fn size(&self) -> u64 {
        0
    }
    fn read(&mut self, _: &mut DevCtx, _: u64, _: u8) -> Result<u64, BadAccess> {
        Err(BadAccess)
    }
    fn write(&mut self, _: &mut DevCtx, _: u64, _: u8, _: u64) -> Result<WriteEffect, BadAccess> {
        Err(BadAccess)
    }
    fn fdt_nodes(&self, g: &Grant, _ctx: &FdtCtx) -> Vec<(Placement, FdtNode)> {
        let node = FdtNode::new(format!("clock-{}", g.name))
            .str("compatible", "fixed-clock")
            .u32("#clock-cells", 0)
            .u32("clock-frequency", self.hz)
            .str("clock-output-names", &g.name)
            .u32("phandle", g.phandle());
        vec![(Placement::Root, node)]
    }
    fn stats(&self) -> Vec<Stat> {
        Vec::new()
    }
    fn clock_rate(&self) -> Option<u64> {
        Some(self.hz as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ParamValue;

    #[test]
    fn node_and_configuration() {
        let cfg = DeviceConfig::new("spi_clk", "fixed-clock")
            .with("frequency", ParamValue::Int(50_000_000));
        let p = crate::resources::plug(&cfg).ok().unwrap();
        assert!(p.want.phandle && p.want.window.is_none() && p.want.irqs.is_empty());
        let g = Grant {
            name: "spi_clk".into(),
            base: 0,
            size: 0,
            irqs: vec![],
            phandle: Some(12),
        };
        let nodes = FixedClock::new("spi_clk", 50_000_000).fdt_nodes(&g, &FdtCtx::default());
        let (place, n) = &nodes[0];
        assert_eq!(
            (*place, n.name.as_str()),
            (Placement::Root, "clock-spi_clk")
        );
        assert_eq!(
            n.get("clock-frequency"),
            Some(&crate::Prop::U32(50_000_000))
        );
        assert_eq!(n.get("phandle"), Some(&crate::Prop::U32(12)));
        let bad = DeviceConfig::new("c", "fixed-clock").with("frequency", ParamValue::Int(0));
        assert_eq!(
            crate::resources::plug(&bad).err().unwrap().to_string(),
            "key `frequency`: 0 is out of range (1 to 4294967295)"
        );
    }
}
