//! Control and status registers: state, access checks and WARL rules.

use hs_isa::csr::*;
use hs_timing::TimingModel;

use crate::trap::Trap;
use crate::{Hart, Priv};

pub const MSTATUS_SIE: u64 = 1 << 1;
pub const MSTATUS_MIE: u64 = 1 << 3;
pub const MSTATUS_SPIE: u64 = 1 << 5;
pub const MSTATUS_UBE: u64 = 1 << 6;
pub const MSTATUS_MPIE: u64 = 1 << 7;
pub const MSTATUS_SPP: u64 = 1 << 8;
pub const MSTATUS_VS: u64 = 3 << 9;
pub const MSTATUS_MPP_SHIFT: u64 = 11;
pub const MSTATUS_MPP: u64 = 3 << MSTATUS_MPP_SHIFT;
pub const MSTATUS_FS_SHIFT: u64 = 13;
pub const MSTATUS_FS: u64 = 3 << MSTATUS_FS_SHIFT;
pub const MSTATUS_XS: u64 = 3 << 15;
pub const MSTATUS_MPRV: u64 = 1 << 17;
pub const MSTATUS_SUM: u64 = 1 << 18;
pub const MSTATUS_MXR: u64 = 1 << 19;
pub const MSTATUS_TVM: u64 = 1 << 20;
pub const MSTATUS_TW: u64 = 1 << 21;
pub const MSTATUS_TSR: u64 = 1 << 22;
pub const MSTATUS_UXL: u64 = 3 << 32;
pub const MSTATUS_SD: u64 = 1 << 63;
/// UXL = SXL = 64-bit, fixed.
pub const MSTATUS_XL64: u64 = (2 << 32) | (2 << 34);

const MSTATUS_WMASK: u64 = MSTATUS_SIE
    | MSTATUS_MIE
    | MSTATUS_SPIE
    | MSTATUS_MPIE
    | MSTATUS_SPP
    | MSTATUS_MPP
    | MSTATUS_FS
    | MSTATUS_MPRV
    | MSTATUS_SUM
    | MSTATUS_MXR
    | MSTATUS_TVM
    | MSTATUS_TW
    | MSTATUS_TSR;
const SSTATUS_RMASK: u64 = MSTATUS_SIE
    | MSTATUS_SPIE
    | MSTATUS_UBE
    | MSTATUS_SPP
    | MSTATUS_VS
    | MSTATUS_FS
    | MSTATUS_XS
    | MSTATUS_SUM
    | MSTATUS_MXR
    | MSTATUS_UXL
    | MSTATUS_SD;
const SSTATUS_WMASK: u64 =
    MSTATUS_SIE | MSTATUS_SPIE | MSTATUS_SPP | MSTATUS_FS | MSTATUS_SUM | MSTATUS_MXR;

pub const MIP_SSIP: u64 = 1 << 1;
pub const MIP_MSIP: u64 = 1 << 3;
pub const MIP_STIP: u64 = 1 << 5;
pub const MIP_MTIP: u64 = 1 << 7;
pub const MIP_SEIP: u64 = 1 << 9;
pub const MIP_MEIP: u64 = 1 << 11;
/// Sscofpmf: local counter-overflow interrupt pending (bit 13).
pub const MIP_LCOFIP: u64 = 1 << 13;
/// Sscofpmf bits of `mhpmeventN`: overflow, and counting inhibited in M, S, U.
pub const MHPMEVENT_OF: u64 = 1 << 63;
pub const MHPMEVENT_MINH: u64 = 1 << 62;
pub const MHPMEVENT_SINH: u64 = 1 << 61;
pub const MHPMEVENT_UINH: u64 = 1 << 60;
/// The event selector proper (bits 55:0; 63:56 are Sscofpmf's).
pub const MHPMEVENT_SELECT: u64 = (1 << 56) - 1;
/// Bits the platform drives (see `Hart::set_platform_irqs`).
pub const MIP_PLATFORM: u64 = MIP_MSIP | MIP_MTIP | MIP_SEIP | MIP_MEIP;
/// mcause/scause are WLRL: this hart holds the interrupt bit and a 4-bit
/// code (every cause it raises is below 16), so a write of any other value
/// reads back as a legal one instead of an arbitrary 64-bit pattern.
const CAUSE_WLRL_MASK: u64 = (1 << 63) | 0xf;
const MIE_MASK: u64 = MIP_SSIP | MIP_MSIP | MIP_STIP | MIP_MTIP | MIP_SEIP | MIP_MEIP | MIP_LCOFIP;
const MIDELEG_MASK: u64 = MIP_SSIP | MIP_STIP | MIP_SEIP | MIP_LCOFIP;
/// Every exception except ecall-from-M (11) and the reserved causes.
const MEDELEG_MASK: u64 = 0xb3ff;

pub const MENVCFG_FIOM: u64 = 1;
pub const MENVCFG_STCE: u64 = 1 << 63;

pub const SATP_MODE_BARE: u64 = 0;
pub const SATP_MODE_SV39: u64 = 8;
pub const SATP_MODE_SV48: u64 = 9;
const SATP_ASID_PPN: u64 = (0xffff << 44) | ((1 << 44) - 1);

/// misa: RV64 + A C D F I M S U.
pub const MISA_VALUE: u64 = (2 << 62)
    | (1 << 0)
    | (1 << 2)
    | (1 << 3)
    | (1 << 5)
    | (1 << 8)
    | (1 << 12)
    | (1 << 18)
    | (1 << 20);

const COUNTINHIBIT_CY: u64 = 1;
const COUNTINHIBIT_IR: u64 = 4;

/// CSR values that are plain storage (derived values are computed on read).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Csrs {
    /// mstatus without SD (computed) and with UXL/SXL fixed.
    pub mstatus: u64,
    pub medeleg: u64,
    pub mideleg: u64,
    pub mie: u64,
    /// Software-writable mip bits (SSIP, SEIP, STIP when Sstc is off).
    pub mip_sw: u64,
    /// Platform-driven mip bits.
    pub mip_platform: u64,
    pub mtvec: u64,
    pub stvec: u64,
    pub mepc: u64,
    pub sepc: u64,
    pub mcause: u64,
    pub scause: u64,
    pub mtval: u64,
    pub stval: u64,
    pub mscratch: u64,
    pub sscratch: u64,
    pub mcounteren: u64,
    pub scounteren: u64,
    pub menvcfg: u64,
    pub senvcfg: u64,
    pub mcountinhibit: u64,
    pub satp: u64,
    pub stimecmp: u64,
    pub fflags: u64,
    pub frm: u64,
    /// mcycle = cycle + mcycle_off (or the frozen value while inhibited).
    pub mcycle_off: u64,
    pub minstret_off: u64,
    pub mcycle_frozen: u64,
    pub minstret_frozen: u64,
    /// mhpmeventN (index N; 0..=2 unused), stored as written.
    pub mhpmevent: [u64; 32],
    /// mhpmcounterN = timing model's count + hpm_off[N] (or hpm_frozen[N]
    /// while inhibited).
    pub hpm_off: [u64; 32],
    pub hpm_frozen: [u64; 32],
    /// Each counter's value when overflow was last checked (Sscofpmf).
    pub hpm_last: [u64; 32],
    /// Counters watched for overflow: a selector set and OF clear.
    pub hpm_watch: u32,
    /// Some mhpmevent inhibits counting in some mode (MINH/SINH/UINH).
    pub hpm_mode_filter: bool,
}

impl Csrs {
    pub fn reset() -> Self {
        Csrs {
            mstatus: MSTATUS_XL64,
            stimecmp: u64::MAX,
            ..Default::default()
        }
    }
    pub fn stce(&self) -> bool {
        self.menvcfg & MENVCFG_STCE != 0
    }
    pub fn fs_off(&self) -> bool {
        self.mstatus & MSTATUS_FS == 0
    }
}

fn legal_tvec(v: u64) -> u64 {
    // mode 0 (direct) or 1 (vectored); reserved modes fall back to direct
    if v & 3 >= 2 {
        v & !3
    } else {
        v
    }
}

impl<T: TimingModel> Hart<T> {
    /// mip as software reads it.
    #[inline]
    pub(crate) fn effective_mip(&self) -> u64 {
        let c = &self.csr;
        let mut mip = c.mip_sw | c.mip_platform;
        if c.stce() {
            mip &= !MIP_STIP;
            if self.cycle >= self.stimecmp_cycle {
                mip |= MIP_STIP;
            }
        }
        mip
    }

    pub(crate) fn time(&self) -> u64 {
        self.cycle / self.cfg.cycles_per_tick.max(1)
    }

    /// Cycle at which `time >= stimecmp` first holds (u64::MAX: never).
    pub(crate) fn update_stimecmp_cycle(&mut self) {
        let cpt = self.cfg.cycles_per_tick.max(1);
        self.stimecmp_cycle = self.csr.stimecmp.saturating_mul(cpt);
    }

    fn mcycle(&self) -> u64 {
        if self.csr.mcountinhibit & COUNTINHIBIT_CY != 0 {
            self.csr.mcycle_frozen
        } else {
            self.cycle.wrapping_add(self.csr.mcycle_off)
        }
    }
    /// The timing model's count for counter `i` (3..=31) and its event.
    fn hpm_raw(&self, i: usize) -> u64 {
        self.timing
            .hpm_counter(i as u16, self.csr.mhpmevent[i] & MHPMEVENT_SELECT)
    }
    /// Counter `i` does not count now: `mcountinhibit`, or its event's
    /// inhibit bit for the current mode (Sscofpmf).
    fn hpm_inhibited(&self, i: usize) -> bool {
        let ev = self.csr.mhpmevent[i];
        let mode_bit = match self.prv {
            Priv::Machine => MHPMEVENT_MINH,
            Priv::Supervisor => MHPMEVENT_SINH,
            Priv::User => MHPMEVENT_UINH,
        };
        self.csr.mcountinhibit & (1 << i) != 0 || ev & mode_bit != 0
    }
    fn hpm(&self, i: usize) -> u64 {
        if self.hpm_inhibited(i) {
            self.csr.hpm_frozen[i]
        } else {
            self.hpm_raw(i).wrapping_add(self.csr.hpm_off[i])
        }
    }
    /// Make counter `i` read `v` from now on (counting or not).
    fn hpm_set(&mut self, i: usize, v: u64) {
        if self.hpm_inhibited(i) {
            self.csr.hpm_frozen[i] = v;
        } else {
            self.csr.hpm_off[i] = v.wrapping_sub(self.hpm_raw(i));
        }
    }
    /// Apply `f` (a change of mode, event or inhibit) keeping every hpm
    /// counter's value: a counter that stops counting freezes there, one
    /// that starts counts on from there.
    pub(crate) fn hpm_rebase(&mut self, f: impl FnOnce(&mut Self)) {
        let mut vals = [0u64; 32];
        for (i, v) in vals.iter_mut().enumerate().skip(3) {
            *v = self.hpm(i);
        }
        f(self);
        for (i, v) in vals.iter().enumerate().skip(3) {
            self.hpm_set(i, *v);
        }
    }
    /// Which counters to watch for overflow, and whether modes filter.
    fn hpm_refresh_watch(&mut self) {
        let c = &mut self.csr;
        c.hpm_watch = 0;
        c.hpm_mode_filter = false;
        for i in 3..32 {
            let ev = c.mhpmevent[i];
            if ev & MHPMEVENT_SELECT != 0 && ev & MHPMEVENT_OF == 0 {
                c.hpm_watch |= 1 << i;
            }
            // A counter with no event counts nothing: its mode bits
            // (OpenSBI leaves MINH on idle counters) need no work per trap.
            if ev & MHPMEVENT_SELECT != 0
                && ev & (MHPMEVENT_MINH | MHPMEVENT_SINH | MHPMEVENT_UINH) != 0
            {
                c.hpm_mode_filter = true;
            }
        }
    }
    /// Sscofpmf: a watched counter that wrapped since the last check sets
    /// its event's OF bit and raises the local counter-overflow interrupt.
    pub(crate) fn check_hpm_overflow(&mut self) {
        let mut watch = self.csr.hpm_watch;
        let mut raised = false;
        while watch != 0 {
            let i = watch.trailing_zeros() as usize;
            watch &= watch - 1;
            let v = self.hpm(i);
            if v < self.csr.hpm_last[i] {
                self.csr.mhpmevent[i] |= MHPMEVENT_OF;
                self.csr.hpm_watch &= !(1 << i);
                raised = true;
            }
            self.csr.hpm_last[i] = v;
        }
        if raised {
            self.csr.mip_sw |= MIP_LCOFIP;
            self.checks |= crate::CHECK_IRQ;
        }
    }
    /// `scountovf` as the current mode reads it.
    fn scountovf(&self) -> u64 {
        let of = (3..32)
            .filter(|&i| self.csr.mhpmevent[i] & MHPMEVENT_OF != 0)
            .fold(0u64, |m, i| m | 1 << i);
        if self.prv == Priv::Machine {
            of
        } else {
            of & self.csr.mcounteren
        }
    }
    /// Start every hpm counter at zero (reset).
    pub(crate) fn reset_hpm(&mut self) {
        for i in 3..32 {
            self.csr.hpm_off[i] = 0u64.wrapping_sub(self.hpm_raw(i));
        }
    }
    fn minstret(&self) -> u64 {
        if self.csr.mcountinhibit & COUNTINHIBIT_IR != 0 {
            self.csr.minstret_frozen
        } else {
            self.instret().wrapping_add(self.csr.minstret_off)
        }
    }

    fn mstatus_read(&self) -> u64 {
        let s = self.csr.mstatus;
        if s & MSTATUS_FS == MSTATUS_FS {
            s | MSTATUS_SD
        } else {
            s
        }
    }

    /// Read a CSR's value without privilege checks or side effects;
    /// `None` if this hart does not implement it.
    pub(crate) fn csr_peek(&self, num: u16) -> Option<u64> {
        let c = &self.csr;
        Some(match num {
            FFLAGS => c.fflags,
            FRM => c.frm,
            FCSR => (c.frm << 5) | c.fflags,
            CYCLE | MCYCLE => self.mcycle(),
            TIME => self.time(),
            INSTRET | MINSTRET => self.minstret(),
            n @ 0xc03..=0xc1f => self.hpm((n - 0xc00) as usize),
            n @ 0xb03..=0xb1f => self.hpm((n - 0xb00) as usize),
            n @ 0x323..=0x33f => c.mhpmevent[(n - 0x320) as usize],
            SCOUNTOVF => self.scountovf(),
            SSTATUS => self.mstatus_read() & SSTATUS_RMASK,
            SIE => c.mie & c.mideleg,
            STVEC => c.stvec,
            SCOUNTEREN => c.scounteren,
            SENVCFG => c.senvcfg,
            SSCRATCH => c.sscratch,
            SEPC => c.sepc,
            SCAUSE => c.scause,
            STVAL => c.stval,
            SIP => self.effective_mip() & c.mideleg,
            STIMECMP => c.stimecmp,
            SATP => c.satp,
            MVENDORID | MARCHID | MIMPID | MCONFIGPTR => 0,
            MHARTID => self.cfg.hart_id,
            MSTATUS => self.mstatus_read(),
            MISA => MISA_VALUE,
            MEDELEG => c.medeleg,
            MIDELEG => c.mideleg,
            MIE => c.mie,
            MTVEC => c.mtvec,
            MCOUNTEREN => c.mcounteren,
            MENVCFG => c.menvcfg,
            MCOUNTINHIBIT => c.mcountinhibit,
            MSCRATCH => c.mscratch,
            MEPC => c.mepc,
            MCAUSE => c.mcause,
            MTVAL => c.mtval,
            MIP => self.effective_mip(),
            // 16 entries: pmpcfg0, pmpcfg2 and pmpaddr0..15 exist (as on QEMU)
            PMPCFG0 | 0x3a2 => self.pmp.read_cfg(((num - PMPCFG0) / 2) as usize),
            n @ 0x3b0..=0x3bf => self.pmp.read_addr((n - PMPADDR0) as usize),
            _ => return None,
        })
    }

    /// Privilege and existence check for a CSR access by the current mode.
    fn csr_check(&self, num: u16, write: bool, bits: u32) -> Result<(), Trap> {
        let ill = Trap::illegal(bits);
        if (self.prv as u16) < (num >> 8) & 3 || (write && (num >> 10) & 3 == 3) {
            return Err(ill);
        }
        match num {
            FFLAGS | FRM | FCSR if self.csr.fs_off() => return Err(ill),
            0xc00..=0xc1f if self.prv < Priv::Machine => {
                let bit = 1u64 << (num - 0xc00);
                if self.csr.mcounteren & bit == 0
                    || (self.prv == Priv::User && self.csr.scounteren & bit == 0)
                {
                    return Err(ill);
                }
            }
            STIMECMP if self.prv < Priv::Machine => {
                if !self.csr.stce() || self.csr.mcounteren & 2 == 0 {
                    return Err(ill);
                }
            }
            SATP if self.prv == Priv::Supervisor && self.csr.mstatus & MSTATUS_TVM != 0 => {
                return Err(ill)
            }
            _ => {}
        }
        Ok(())
    }

    /// mip bits software can write (SSIP, SEIP; STIP unless Sstc drives it).
    fn mip_wmask(&self) -> u64 {
        if self.csr.stce() {
            MIP_SSIP | MIP_SEIP | MIP_LCOFIP
        } else {
            MIP_SSIP | MIP_SEIP | MIP_STIP | MIP_LCOFIP
        }
    }

    /// The value a CSRRS/CSRRC modifies, given the value `read` it returns.
    /// The two differ where a software-writable bit reads as the OR of its
    /// software copy and a hardware line: only the copy takes part, so the
    /// line is never written back into it (privileged spec, mip.SEIP). Every
    /// other CSR reads exactly its software-visible state.
    fn csr_rmw_base(&self, num: u16, read: u64) -> u64 {
        let c = &self.csr;
        let writable = match num {
            MIP => self.mip_wmask(),
            SIP => (MIP_SSIP | MIP_LCOFIP) & c.mideleg,
            _ => return read,
        };
        (read & !writable) | (c.mip_sw & writable)
    }

    /// The Zicsr instructions: check, read the old value, maybe write.
    /// `op`: 0 = write, 1 = set bits, 2 = clear bits.
    pub(crate) fn csr_op(
        &mut self,
        num: u16,
        op: u8,
        src: u64,
        do_write: bool,
        bits: u32,
    ) -> Result<u64, Trap> {
        self.csr_check(num, do_write, bits)?;
        let extra = self.timing.csr(num, do_write);
        self.charge(extra);
        let old = self.csr_peek(num).ok_or(Trap::illegal(bits))?;
        if do_write {
            let new = match op {
                0 => src,
                1 => self.csr_rmw_base(num, old) | src,
                _ => self.csr_rmw_base(num, old) & !src,
            };
            // a satp write with an unsupported mode has no effect at all
            let ignored = num == SATP
                && !matches!(new >> 60, SATP_MODE_BARE | SATP_MODE_SV39 | SATP_MODE_SV48);
            self.csr_write(num, new);
            if !ignored {
                let counter = matches!(num, MCYCLE | MINSTRET | 0xb03..=0xb1f);
                // counters read back one instruction later; report what was written
                let value = if counter {
                    new
                } else {
                    self.csr_peek(num).unwrap_or(new)
                };
                self.tell_clock();
                self.timing.csr_write(num, value);
            }
        }
        Ok(old)
    }

    fn mark_fs_dirty(&mut self) {
        self.csr.mstatus |= MSTATUS_FS;
    }

    fn set_mstatus(&mut self, v: u64) {
        let old = self.csr.mstatus;
        let mut new = (old & !MSTATUS_WMASK) | (v & MSTATUS_WMASK);
        if (new & MSTATUS_MPP) >> MSTATUS_MPP_SHIFT == 2 {
            new = (new & !MSTATUS_MPP) | (old & MSTATUS_MPP); // reserved encoding: keep
        }
        self.csr.mstatus = new | MSTATUS_XL64;
        if (old ^ new) & MSTATUS_MXR != 0 {
            self.tlb_flush();
        }
        self.update_modes();
    }

    /// Write a CSR that exists (checked by the caller), applying WARL rules.
    pub(crate) fn csr_write(&mut self, num: u16, v: u64) {
        self.checks |= crate::CHECK_IRQ; // enables, pending bits, delegation or stimecmp may change
        let c = &mut self.csr;
        match num {
            FFLAGS => {
                c.fflags = v & 0x1f;
                self.mark_fs_dirty();
            }
            FRM => {
                c.frm = v & 7;
                self.mark_fs_dirty();
            }
            FCSR => {
                c.fflags = v & 0x1f;
                c.frm = (v >> 5) & 7;
                self.mark_fs_dirty();
            }
            MCYCLE => {
                if c.mcountinhibit & COUNTINHIBIT_CY != 0 {
                    c.mcycle_frozen = v;
                } else {
                    // the next instruction reads `v` (this one's cycle is counted first)
                    c.mcycle_off = v.wrapping_sub(self.cycle).wrapping_sub(1);
                }
            }
            MINSTRET => {
                if c.mcountinhibit & COUNTINHIBIT_IR != 0 {
                    c.minstret_frozen = v;
                } else {
                    // this instruction retires after the write
                    c.minstret_off = v.wrapping_sub(self.cycle - self.stall).wrapping_sub(1);
                }
            }
            MCOUNTINHIBIT => {
                let (cy, ir) = (self.mcycle(), self.minstret());
                let new = v & 0xffff_fffd;
                let hpm_new = new | (self.csr.mcountinhibit & 7);
                self.hpm_rebase(|h| {
                    h.csr.mcountinhibit = (h.csr.mcountinhibit & 7) | (hpm_new & !7)
                });
                let c = &mut self.csr;
                if new & COUNTINHIBIT_CY != 0 {
                    c.mcycle_frozen = cy;
                } else {
                    c.mcycle_off = cy.wrapping_sub(self.cycle);
                }
                if new & COUNTINHIBIT_IR != 0 {
                    c.minstret_frozen = ir;
                } else {
                    c.minstret_off = ir.wrapping_sub(self.cycle - self.stall);
                }
                c.mcountinhibit = new;
            }
            SSTATUS => {
                let m = (self.csr.mstatus & !SSTATUS_WMASK) | (v & SSTATUS_WMASK);
                self.set_mstatus(m);
            }
            MSTATUS => self.set_mstatus(v),
            SIE => c.mie = (c.mie & !c.mideleg) | (v & c.mideleg & MIE_MASK),
            SIP => {
                let m = (MIP_SSIP | MIP_LCOFIP) & c.mideleg;
                c.mip_sw = (c.mip_sw & !m) | (v & m);
            }
            STVEC => c.stvec = legal_tvec(v),
            SCOUNTEREN => c.scounteren = v & 0xffff_ffff,
            SENVCFG => c.senvcfg = v & MENVCFG_FIOM,
            SSCRATCH => c.sscratch = v,
            SEPC => c.sepc = v & !1,
            SCAUSE => c.scause = v & CAUSE_WLRL_MASK,
            STVAL => c.stval = v,
            STIMECMP => {
                c.stimecmp = v;
                self.update_stimecmp_cycle();
            }
            SATP => {
                let mode = v >> 60;
                if matches!(mode, SATP_MODE_BARE | SATP_MODE_SV39 | SATP_MODE_SV48) {
                    c.satp = (mode << 60) | (v & SATP_ASID_PPN);
                    self.tlb_flush();
                }
            }
            MEDELEG => c.medeleg = v & MEDELEG_MASK,
            MIDELEG => c.mideleg = v & MIDELEG_MASK,
            MIE => c.mie = v & MIE_MASK,
            MIP => {
                let m = self.mip_wmask();
                let c = &mut self.csr;
                c.mip_sw = (c.mip_sw & !m) | (v & m);
            }
            MTVEC => c.mtvec = legal_tvec(v),
            MCOUNTEREN => c.mcounteren = v & 0xffff_ffff,
            MENVCFG => c.menvcfg = v & (MENVCFG_STCE | MENVCFG_FIOM),
            MSCRATCH => c.mscratch = v,
            MEPC => c.mepc = v & !1,
            MCAUSE => c.mcause = v & CAUSE_WLRL_MASK,
            MTVAL => c.mtval = v,
            n @ (PMPCFG0 | 0x3a2) => {
                if self.pmp.write_cfg(((n - PMPCFG0) / 2) as usize, v) {
                    self.tlb_flush();
                }
            }
            n @ 0x3b0..=0x3bf => {
                if self.pmp.write_addr((n - PMPADDR0) as usize, v) {
                    self.tlb_flush();
                }
            }
            n @ 0xb03..=0xb1f => {
                let i = (n - 0xb00) as usize;
                self.hpm_set(i, v);
                self.csr.hpm_last[i] = v;
            }
            n @ 0x323..=0x33f => {
                // the counter keeps its value and counts the new event (and
                // modes) from now on; software may set or clear OF
                let i = (n - 0x320) as usize;
                self.hpm_rebase(|h| h.csr.mhpmevent[i] = v);
                self.csr.hpm_last[i] = self.hpm(i);
                self.hpm_refresh_watch();
            }
            // read-only: misa (fixed), ids
            _ => {}
        }
    }
}
