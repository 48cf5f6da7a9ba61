//! SiFive test device (`sifive,test0`) used as a syscon: a write of 0x5555
//! powers off, 0x7777 resets, 0x3333 | code << 16 powers off with a
//! failure code. QEMU's `virt` wires `syscon-poweroff`/`syscon-reboot` to
//! it. Linux's regmap writes 32 bits, OpenSBI's driver 16 bits: both count.

use crate::fdt::{FdtCtx, FdtNode, Placement};
use crate::Grant;
use crate::{BadAccess, DevCtx, Device, Stat, WriteEffect};

pub const SIZE: u64 = 0x1000;
pub const POWEROFF: u32 = 0x5555;
pub const RESET: u32 = 0x7777;
pub const FAIL: u32 = 0x3333;

/// What the guest asked the machine to do.
pub use crate::StopRequest as SysconRequest;

#[derive(Default, serde::Serialize, serde::Deserialize)]
pub struct Syscon {
    request: Option<SysconRequest>,
    stat_ignored: u64,
}

crate::persist_by_serde!(Syscon);

impl Syscon {
    pub fn new() -> Self {
        Self::default()
    }
    /// The first stop request the guest made, if any.
    pub fn request(&self) -> Option<SysconRequest> {
        self.request
    }
}

impl Device for Syscon {
    crate::persistent!();
    fn name(&self) -> String {
        "syscon".into()
    }
    fn size(&self) -> u64 {
        SIZE
    }
    fn read(&mut self, _ctx: &mut DevCtx, _offset: u64, size: u8) -> Result<u64, BadAccess> {
        if !crate::size_ok(size) {
            return Err(BadAccess);
        }
        Ok(0)
    }
    fn write(
        &mut self,
        _ctx: &mut DevCtx,
        offset: u64,
        size: u8,
        val: u64,
    ) -> Result<WriteEffect, BadAccess> {
        if !crate::size_ok(size) {
            return Err(BadAccess);
        }
        let req = if offset == 0 && size >= 2 {
            match (val & 0xffff) as u32 {
                POWEROFF => Some(SysconRequest::PowerOff),
                RESET => Some(SysconRequest::Reset),
                FAIL => Some(SysconRequest::Fail((val >> 16) as u16)),
                _ => None,
            }
        } else {
            None
        };
        match req {
            Some(r) => {
                self.request.get_or_insert(r);
                Ok(WriteEffect {
                    irq_changed: false,
                    stop: true,
                })
            }
            None => {
                self.stat_ignored += 1;
                Ok(WriteEffect::default())
            }
        }
    }
    fn fdt_nodes(&self, g: &Grant, _ctx: &FdtCtx) -> Vec<(Placement, FdtNode)> {
        let dev = FdtNode::new(g.node_name("test"))
            .u32("phandle", g.phandle())
            .reg(g.base, g.size)
            .strs("compatible", &["sifive,test1", "sifive,test0", "syscon"]);
        let poweroff = FdtNode::new("poweroff")
            .u32("value", POWEROFF)
            .u32("offset", 0)
            .u32("regmap", g.phandle())
            .str("compatible", "syscon-poweroff");
        let reboot = FdtNode::new("reboot")
            .u32("value", RESET)
            .u32("offset", 0)
            .u32("regmap", g.phandle())
            .str("compatible", "syscon-reboot");
        vec![
            (Placement::Soc, dev),
            (Placement::Root, poweroff),
            (Placement::Root, reboot),
        ]
    }
    fn stop_request(&self) -> Option<crate::StopRequest> {
        self.request
    }
    fn stats(&self) -> Vec<Stat> {
        vec![Stat::new(
            "syscon.ignored_writes",
            self.stat_ignored,
            "writes that requested nothing",
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoScheduler;

    fn wr(s: &mut Syscon, off: u64, size: u8, v: u64) -> WriteEffect {
        s.write(&mut DevCtx::new(0, 0, &mut NoScheduler), off, size, v)
            .unwrap()
    }

    #[test]
    fn poweroff_reset_fail() {
        let mut s = Syscon::new();
        assert!(!wr(&mut s, 0, 4, 0x1234).stop);
        assert!(!wr(&mut s, 4, 4, 0x5555).stop, "only offset 0");
        assert!(
            !wr(&mut s, 0, 1, 0x55).stop,
            "a byte cannot hold the command"
        );
        assert_eq!(s.request(), None);
        assert!(wr(&mut s, 0, 4, 0x5555).stop);
        assert_eq!(s.request(), Some(SysconRequest::PowerOff));
        assert!(wr(&mut s, 0, 4, 0x7777).stop);
        assert_eq!(
            s.request(),
            Some(SysconRequest::PowerOff),
            "first request wins"
        );
        let mut s = Syscon::new();
        wr(&mut s, 0, 4, (3 << 16) | 0x3333);
        assert_eq!(s.request(), Some(SysconRequest::Fail(3)));
        let mut s = Syscon::new();
        wr(&mut s, 0, 8, 0x7777);
        assert_eq!(s.request(), Some(SysconRequest::Reset));
        let mut s = Syscon::new();
        assert!(
            wr(&mut s, 0, 2, 0x5555).stop,
            "OpenSBI's sifive_test driver uses writew"
        );
    }
}
