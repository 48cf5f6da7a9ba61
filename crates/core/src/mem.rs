//! Data memory access: the inlined TLB fast path, the slow path (walk,
//! MMIO, page-crossing misaligned accesses) and physical access.

use hs_bus::{Access, SystemBus};
use hs_timing::{MemKind, TimingModel};

use crate::mmu::*;
use crate::trap::*;
use crate::Hart;

impl<T: TimingModel> Hart<T> {
    /// Load `N` bytes (1, 2, 4, 8) zero-extended.
    #[inline(always)]
    pub(crate) fn load<B: SystemBus, const N: u64>(
        &mut self,
        bus: &mut B,
        va: u64,
    ) -> Result<u64, Trap> {
        let mut cyc = self.cycle;
        let r = self.load_c::<B, N>(bus, va, &mut cyc);
        self.cycle = cyc;
        r
    }

    /// Store the low `N` bytes of `v`.
    #[inline(always)]
    pub(crate) fn store<B: SystemBus, const N: u64>(
        &mut self,
        bus: &mut B,
        va: u64,
        v: u64,
    ) -> Result<(), Trap> {
        let mut cyc = self.cycle;
        let r = self.store_c::<B, N>(bus, va, v, &mut cyc);
        self.cycle = cyc;
        r
    }

    /// `load` for the block loop, which keeps the cycle count in `cyc`
    /// (a register) and syncs `self.cycle` only around the slow path.
    #[inline(always)]
    pub(crate) fn load_c<B: SystemBus, const N: u64>(
        &mut self,
        bus: &mut B,
        va: u64,
        cyc: &mut u64,
    ) -> Result<u64, Trap> {
        let vpn = va >> 12;
        let e = &self.tlb.e[KIND_LOAD][self.data_ctx & 3][(vpn as usize) & (TLB_SIZE - 1)];
        if e.tag == vpn | self.tlb.gen_bits && (va & 0xfff) <= 4096 - N {
            let host = va.wrapping_add(e.addend);
            let extra = self
                .timing
                .mem(va, self.host_to_pa(host), N as u8, MemKind::Load, false);
            *cyc += extra;
            self.stall = self.stall.wrapping_add(extra);
            // SAFETY: the entry maps this whole page to RAM (checked at fill)
            // and the access stays inside the page.
            return Ok(unsafe { read_host::<N>(host as *const u8) });
        }
        self.cycle = *cyc;
        let r = self.load_slow(bus, va, N);
        *cyc = self.cycle;
        r
    }

    #[inline(always)]
    pub(crate) fn store_c<B: SystemBus, const N: u64>(
        &mut self,
        bus: &mut B,
        va: u64,
        v: u64,
        cyc: &mut u64,
    ) -> Result<(), Trap> {
        let vpn = va >> 12;
        let e = &self.tlb.e[KIND_STORE][self.data_ctx & 3][(vpn as usize) & (TLB_SIZE - 1)];
        if e.tag == vpn | self.tlb.gen_bits && (va & 0xfff) <= 4096 - N {
            let host = va.wrapping_add(e.addend);
            let pa = self.host_to_pa(host);
            let extra = self.timing.mem(va, pa, N as u8, MemKind::Store, false);
            *cyc += extra;
            self.stall = self.stall.wrapping_add(extra);
            // (an entry of a page flagged as code carries `TLB_CODE`, which
            // fails the test above: such a store takes the slow path,
            // which tells the block cache)
            debug_assert!(
                !self.ram.is_code(pa),
                "a store fast path into code at {pa:#x}"
            );
            // SAFETY: as in `load_c`.
            unsafe { write_host::<N>(host as *mut u8, v) };
            return Ok(());
        }
        self.cycle = *cyc;
        let r = self.store_slow(bus, va, N, v);
        *cyc = self.cycle;
        r
    }

    #[inline(never)]
    fn load_slow<B: SystemBus>(&mut self, bus: &mut B, va: u64, n: u64) -> Result<u64, Trap> {
        let first = 4096 - (va & 0xfff);
        if n > first {
            // crosses a page: both halves must translate before anything is read
            let pa0 = self.translate(va, first, KIND_LOAD)?;
            let va1 = va.wrapping_add(first);
            let pa1 = self.translate(va1, n - first, KIND_LOAD)?;
            let mut v = 0u64;
            for i in 0..n {
                let pa = if i < first {
                    pa0 + i
                } else {
                    pa1 + (i - first)
                };
                let b = self
                    .phys_read(
                        bus,
                        if i < first {
                            va.wrapping_add(i)
                        } else {
                            va1.wrapping_add(i - first)
                        },
                        pa,
                        1,
                    )
                    .map_err(|_| access_fault(KIND_LOAD, if i < first { va } else { va1 }))?;
                v |= b << (8 * i);
            }
            return Ok(v);
        }
        let pa = self.translate(va, n, KIND_LOAD)?;
        self.phys_read(bus, va, pa, n)
            .map_err(|_| access_fault(KIND_LOAD, va))
    }

    #[inline(never)]
    fn store_slow<B: SystemBus>(
        &mut self,
        bus: &mut B,
        va: u64,
        n: u64,
        v: u64,
    ) -> Result<(), Trap> {
        let first = 4096 - (va & 0xfff);
        if n > first {
            let pa0 = self.translate(va, first, KIND_STORE)?;
            let va1 = va.wrapping_add(first);
            let pa1 = self.translate(va1, n - first, KIND_STORE)?;
            // both pages must be RAM for a split store (no partial device writes)
            if !self.ram.contains(pa0, first) {
                return Err(access_fault(KIND_STORE, va));
            }
            if !self.ram.contains(pa1, n - first) {
                return Err(access_fault(KIND_STORE, va1));
            }
            for i in 0..n {
                let pa = if i < first {
                    pa0 + i
                } else {
                    pa1 + (i - first)
                };
                self.ram.write(pa, 1, v >> (8 * i));
            }
            self.note_ram_write();
            return Ok(());
        }
        let pa = self.translate(va, n, KIND_STORE)?;
        self.phys_write(bus, va, pa, n, v)
            .map_err(|_| access_fault(KIND_STORE, va))?;
        if self.exit.is_some() {
            return Err(Trap::exit()); // the device wants the machine's attention now
        }
        Ok(())
    }

    /// Read physical memory: RAM directly, anything else through the bus.
    /// Device accesses must be naturally aligned.
    pub(crate) fn phys_read<B: SystemBus>(
        &mut self,
        bus: &mut B,
        va: u64,
        pa: u64,
        n: u64,
    ) -> Result<u64, ()> {
        if let Some(v) = self.ram.read(pa, n as u8) {
            let extra = self.timing.mem(va, pa, n as u8, MemKind::Load, false);
            self.charge(extra);
            return Ok(v);
        }
        if pa & (n - 1) != 0 {
            return Err(());
        }
        let extra = self.timing.mem(va, pa, n as u8, MemKind::Load, true);
        self.charge(extra);
        let acc = Access {
            hart: self.cfg.hart_id as usize,
            now: self.cycle,
        };
        bus.mmio_read(acc, pa, n as u8).map_err(|_| ())
    }

    pub(crate) fn phys_write<B: SystemBus>(
        &mut self,
        bus: &mut B,
        va: u64,
        pa: u64,
        n: u64,
        v: u64,
    ) -> Result<(), ()> {
        if self.ram.write(pa, n as u8, v) {
            self.note_ram_write();
            let extra = self.timing.mem(va, pa, n as u8, MemKind::Store, false);
            self.charge(extra);
            return Ok(());
        }
        if pa & (n - 1) != 0 {
            return Err(());
        }
        let extra = self.timing.mem(va, pa, n as u8, MemKind::Store, true);
        self.charge(extra);
        let acc = Access {
            hart: self.cfg.hart_id as usize,
            now: self.cycle,
        };
        let eff = bus.mmio_write(acc, pa, n as u8, v).map_err(|_| ())?;
        if eff.stop {
            self.exit = Some(crate::Exit::Stop);
        } else if eff.irq_changed && self.exit.is_none() {
            self.exit = Some(crate::Exit::IrqCheck);
        }
        Ok(())
    }
}

/// # Safety
/// `p..p+N` must be readable.
#[inline(always)]
unsafe fn read_host<const N: u64>(p: *const u8) -> u64 {
    match N {
        1 => *p as u64,
        2 => u16::from_le(std::ptr::read_unaligned(p as *const u16)) as u64,
        4 => u32::from_le(std::ptr::read_unaligned(p as *const u32)) as u64,
        _ => u64::from_le(std::ptr::read_unaligned(p as *const u64)),
    }
}

/// # Safety
/// `p..p+N` must be writable.
#[inline(always)]
unsafe fn write_host<const N: u64>(p: *mut u8, v: u64) {
    match N {
        1 => *p = v as u8,
        2 => std::ptr::write_unaligned(p as *mut u16, (v as u16).to_le()),
        4 => std::ptr::write_unaligned(p as *mut u32, (v as u32).to_le()),
        _ => std::ptr::write_unaligned(p as *mut u64, v.to_le()),
    }
}
