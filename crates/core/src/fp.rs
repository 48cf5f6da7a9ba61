//! F and D: loads/stores, moves, sign injection, NaN-boxing, rounding-mode
//! resolution, fflags/FS bookkeeping. Arithmetic is `hs_fpu`'s.

use hs_bus::SystemBus;
use hs_fpu as fpu;
use hs_isa::{FmaOp, FpOp, Insn};
use hs_timing::TimingModel;

use crate::csr::MSTATUS_FS;
use crate::exec::Op;
use crate::trap::Trap;
use crate::Hart;

const BOX: u64 = 0xffff_ffff_0000_0000;

/// A single held in a 64-bit register; improperly boxed values read as the canonical NaN.
#[inline]
pub(crate) fn unbox_s(v: u64) -> u32 {
    if v & BOX == BOX {
        v as u32
    } else {
        fpu::CANONICAL_NAN_S
    }
}

#[inline]
pub(crate) fn box_s(v: u32) -> u64 {
    BOX | v as u64
}

fn sext32(v: u32) -> u64 {
    v as i32 as i64 as u64
}

impl<T: TimingModel> Hart<T> {
    fn wf(&mut self, rd: u8, v: u64) {
        self.f[(rd & 31) as usize] = v;
        self.csr.mstatus |= MSTATUS_FS;
    }
    fn rf(&self, r: u8) -> u64 {
        self.f[(r & 31) as usize]
    }
    fn rfs(&self, r: u8) -> u32 {
        unbox_s(self.rf(r))
    }
    fn fx(&mut self, rd: u8, v: u64) {
        self.x[(rd & 31) as usize] = v;
        self.x[0] = 0;
    }
    fn flags(&mut self, fl: fpu::Flags) {
        if fl != 0 {
            self.csr.fflags |= fl as u64 & 0x1f;
            self.csr.mstatus |= MSTATUS_FS;
        }
    }
    /// Resolve the instruction's rm field: 7 means `frm`; 5, 6 (and a
    /// reserved `frm`) are illegal.
    fn rm(&self, rm: u8, bits: u32) -> Result<u8, Trap> {
        let r = if rm == 7 { self.csr.frm as u8 } else { rm };
        if r >= 5 {
            Err(Trap::illegal(bits))
        } else {
            Ok(r)
        }
    }

    pub(crate) fn exec_fp<B: SystemBus>(&mut self, bus: &mut B, op: &Op) -> Result<(), Trap> {
        if self.csr.fs_off() {
            return Err(Trap::illegal(op.bits));
        }
        match op.insn {
            Insn::Flw { rd, rs1, imm } => {
                let v = self.load::<B, 4>(
                    bus,
                    self.x[(rs1 & 31) as usize].wrapping_add(imm as i64 as u64),
                )?;
                self.wf(rd, box_s(v as u32));
            }
            Insn::Fld { rd, rs1, imm } => {
                let v = self.load::<B, 8>(
                    bus,
                    self.x[(rs1 & 31) as usize].wrapping_add(imm as i64 as u64),
                )?;
                self.wf(rd, v);
            }
            Insn::Fsw { rs1, rs2, imm } => {
                let va = self.x[(rs1 & 31) as usize].wrapping_add(imm as i64 as u64);
                self.store::<B, 4>(bus, va, self.rf(rs2))?;
            }
            Insn::Fsd { rs1, rs2, imm } => {
                let va = self.x[(rs1 & 31) as usize].wrapping_add(imm as i64 as u64);
                self.store::<B, 8>(bus, va, self.rf(rs2))?;
            }
            Insn::Fma {
                op: fop,
                dbl,
                rd,
                rs1,
                rs2,
                rs3,
                rm,
            } => {
                let rm = self.rm(rm, op.bits)?;
                if dbl {
                    let (a, b, c) = (self.rf(rs1), self.rf(rs2), self.rf(rs3));
                    let (r, fl) = match fop {
                        FmaOp::Madd => fpu::fmadd_d(a, b, c, rm),
                        FmaOp::Msub => fpu::fmsub_d(a, b, c, rm),
                        FmaOp::Nmsub => fpu::fnmsub_d(a, b, c, rm),
                        FmaOp::Nmadd => fpu::fnmadd_d(a, b, c, rm),
                    };
                    self.wf(rd, r);
                    self.flags(fl);
                } else {
                    let (a, b, c) = (self.rfs(rs1), self.rfs(rs2), self.rfs(rs3));
                    let (r, fl) = match fop {
                        FmaOp::Madd => fpu::fmadd_s(a, b, c, rm),
                        FmaOp::Msub => fpu::fmsub_s(a, b, c, rm),
                        FmaOp::Nmsub => fpu::fnmsub_s(a, b, c, rm),
                        FmaOp::Nmadd => fpu::fnmadd_s(a, b, c, rm),
                    };
                    self.wf(rd, box_s(r));
                    self.flags(fl);
                }
            }
            Insn::Fp {
                op: fop,
                rd,
                rs1,
                rs2,
                rm,
            } => {
                let rm = if fop.has_rm() {
                    self.rm(rm, op.bits)?
                } else {
                    0
                };
                self.exec_op_fp(fop, rd, rs1, rs2, rm);
            }
            _ => return Err(Trap::illegal(op.bits)),
        }
        Ok(())
    }

    fn exec_op_fp(&mut self, op: FpOp, rd: u8, rs1: u8, rs2: u8, rm: u8) {
        use FpOp::*;
        let (s1, s2) = (self.rfs(rs1), self.rfs(rs2));
        let (d1, d2) = (self.rf(rs1), self.rf(rs2));
        let xs1 = self.x[(rs1 & 31) as usize];
        const SS: u32 = 1 << 31;
        const SD: u64 = 1 << 63;
        // results: Some(f) → f register, else x register
        enum R {
            S(u32, fpu::Flags),
            D(u64, fpu::Flags),
            X(u64, fpu::Flags),
        }
        let r = match op {
            FaddS => {
                let (v, f) = fpu::add_s(s1, s2, rm);
                R::S(v, f)
            }
            FsubS => {
                let (v, f) = fpu::sub_s(s1, s2, rm);
                R::S(v, f)
            }
            FmulS => {
                let (v, f) = fpu::mul_s(s1, s2, rm);
                R::S(v, f)
            }
            FdivS => {
                let (v, f) = fpu::div_s(s1, s2, rm);
                R::S(v, f)
            }
            FsqrtS => {
                let (v, f) = fpu::sqrt_s(s1, rm);
                R::S(v, f)
            }
            FsgnjS => R::S((s1 & !SS) | (s2 & SS), 0),
            FsgnjnS => R::S((s1 & !SS) | (!s2 & SS), 0),
            FsgnjxS => R::S(s1 ^ (s2 & SS), 0),
            FminS => {
                let (v, f) = fpu::min_s(s1, s2);
                R::S(v, f)
            }
            FmaxS => {
                let (v, f) = fpu::max_s(s1, s2);
                R::S(v, f)
            }
            FcvtWS => {
                let (v, f) = fpu::cvt_w_s(s1, rm);
                R::X(v, f)
            }
            FcvtWuS => {
                let (v, f) = fpu::cvt_wu_s(s1, rm);
                R::X(v, f)
            }
            FcvtLS => {
                let (v, f) = fpu::cvt_l_s(s1, rm);
                R::X(v, f)
            }
            FcvtLuS => {
                let (v, f) = fpu::cvt_lu_s(s1, rm);
                R::X(v, f)
            }
            FmvXW => R::X(sext32(d1 as u32), 0),
            FclassS => R::X(fpu::classify_s(s1), 0),
            FeqS => {
                let (v, f) = fpu::eq_s(s1, s2);
                R::X(v as u64, f)
            }
            FltS => {
                let (v, f) = fpu::lt_s(s1, s2);
                R::X(v as u64, f)
            }
            FleS => {
                let (v, f) = fpu::le_s(s1, s2);
                R::X(v as u64, f)
            }
            FcvtSW => {
                let (v, f) = fpu::cvt_s_w(xs1, rm);
                R::S(v, f)
            }
            FcvtSWu => {
                let (v, f) = fpu::cvt_s_wu(xs1, rm);
                R::S(v, f)
            }
            FcvtSL => {
                let (v, f) = fpu::cvt_s_l(xs1, rm);
                R::S(v, f)
            }
            FcvtSLu => {
                let (v, f) = fpu::cvt_s_lu(xs1, rm);
                R::S(v, f)
            }
            FmvWX => R::S(xs1 as u32, 0),
            FaddD => {
                let (v, f) = fpu::add_d(d1, d2, rm);
                R::D(v, f)
            }
            FsubD => {
                let (v, f) = fpu::sub_d(d1, d2, rm);
                R::D(v, f)
            }
            FmulD => {
                let (v, f) = fpu::mul_d(d1, d2, rm);
                R::D(v, f)
            }
            FdivD => {
                let (v, f) = fpu::div_d(d1, d2, rm);
                R::D(v, f)
            }
            FsqrtD => {
                let (v, f) = fpu::sqrt_d(d1, rm);
                R::D(v, f)
            }
            FsgnjD => R::D((d1 & !SD) | (d2 & SD), 0),
            FsgnjnD => R::D((d1 & !SD) | (!d2 & SD), 0),
            FsgnjxD => R::D(d1 ^ (d2 & SD), 0),
            FminD => {
                let (v, f) = fpu::min_d(d1, d2);
                R::D(v, f)
            }
            FmaxD => {
                let (v, f) = fpu::max_d(d1, d2);
                R::D(v, f)
            }
            FcvtWD => {
                let (v, f) = fpu::cvt_w_d(d1, rm);
                R::X(v, f)
            }
            FcvtWuD => {
                let (v, f) = fpu::cvt_wu_d(d1, rm);
                R::X(v, f)
            }
            FcvtLD => {
                let (v, f) = fpu::cvt_l_d(d1, rm);
                R::X(v, f)
            }
            FcvtLuD => {
                let (v, f) = fpu::cvt_lu_d(d1, rm);
                R::X(v, f)
            }
            FmvXD => R::X(d1, 0),
            FclassD => R::X(fpu::classify_d(d1), 0),
            FeqD => {
                let (v, f) = fpu::eq_d(d1, d2);
                R::X(v as u64, f)
            }
            FltD => {
                let (v, f) = fpu::lt_d(d1, d2);
                R::X(v as u64, f)
            }
            FleD => {
                let (v, f) = fpu::le_d(d1, d2);
                R::X(v as u64, f)
            }
            FcvtDW => {
                let (v, f) = fpu::cvt_d_w(xs1, rm);
                R::D(v, f)
            }
            FcvtDWu => {
                let (v, f) = fpu::cvt_d_wu(xs1, rm);
                R::D(v, f)
            }
            FcvtDL => {
                let (v, f) = fpu::cvt_d_l(xs1, rm);
                R::D(v, f)
            }
            FcvtDLu => {
                let (v, f) = fpu::cvt_d_lu(xs1, rm);
                R::D(v, f)
            }
            FmvDX => R::D(xs1, 0),
            FcvtSD => {
                let (v, f) = fpu::cvt_s_d(d1, rm);
                R::S(v, f)
            }
            FcvtDS => {
                let (v, f) = fpu::cvt_d_s(s1, rm);
                R::D(v, f)
            }
        };
        match r {
            R::S(v, f) => {
                self.wf(rd, box_s(v));
                self.flags(f);
            }
            R::D(v, f) => {
                self.wf(rd, v);
                self.flags(f);
            }
            R::X(v, f) => {
                self.fx(rd, v);
                self.flags(f);
            }
        }
    }
}
