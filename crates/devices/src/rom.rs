//! A read-only memory window (QEMU's `virt` boot ROM at 0x1000). The
//! machine places the `fw_dynamic_info` block there for OpenSBI.

use crate::fdt::{FdtCtx, FdtNode, Placement};
use crate::{BadAccess, DevCtx, Device, Stat, WriteEffect};

#[derive(serde::Serialize, serde::Deserialize)]
pub struct Rom {
    name: String,
    data: Vec<u8>,
    size: u64,
    stat_writes: u64,
}

crate::persist_by_serde!(Rom, keep: [name, data, size]);

impl Rom {
    /// A window of `size` bytes whose first bytes are `data` (the rest reads 0).
    pub fn new(name: &str, size: u64, mut data: Vec<u8>) -> Self {
        data.truncate(size as usize);
        Self {
            name: name.into(),
            data,
            size,
            stat_writes: 0,
        }
    }
}

impl Device for Rom {
    crate::persistent!();
    fn name(&self) -> String {
        self.name.clone()
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn read(&mut self, _ctx: &mut DevCtx, offset: u64, size: u8) -> Result<u64, BadAccess> {
        if !crate::size_ok(size) {
            return Err(BadAccess);
        }
        let mut bytes = [0u8; 8];
        for (i, b) in bytes.iter_mut().take(size as usize).enumerate() {
            *b = usize::try_from(offset + i as u64)
                .ok()
                .and_then(|o| self.data.get(o))
                .copied()
                .unwrap_or(0);
        }
        Ok(u64::from_le_bytes(bytes))
    }
    fn write(
        &mut self,
        _ctx: &mut DevCtx,
        _offset: u64,
        size: u8,
        _val: u64,
    ) -> Result<WriteEffect, BadAccess> {
        if !crate::size_ok(size) {
            return Err(BadAccess);
        }
        self.stat_writes += 1;
        Ok(WriteEffect::default())
    }
    fn fdt_nodes(&self, _grant: &crate::Grant, _ctx: &FdtCtx) -> Vec<(Placement, FdtNode)> {
        Vec::new() // QEMU does not describe its boot ROM either
    }
    fn stats(&self) -> Vec<Stat> {
        vec![Stat::new(
            format!("{}.ignored_writes", self.name),
            self.stat_writes,
            "writes to read-only memory",
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NoScheduler;

    #[test]
    fn reads_little_endian_and_ignores_writes() {
        let mut r = Rom::new("mrom", 0x10, vec![1, 2, 3, 4, 5, 6, 7, 8, 9]);
        let mut s = NoScheduler;
        let mut c = DevCtx::new(0, 0, &mut s);
        assert_eq!(r.read(&mut c, 0, 8), Ok(0x0807_0605_0403_0201));
        assert_eq!(r.read(&mut c, 7, 4), Ok(0x0908));
        r.write(&mut c, 0, 4, 0xffff_ffff).unwrap();
        assert_eq!(r.read(&mut c, 0, 1), Ok(1));
        assert_eq!(r.read(&mut c, 0, 3), Err(BadAccess));
    }
}
