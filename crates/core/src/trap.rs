//! Exception causes, trap entry, interrupt selection and xRET.

use hs_timing::{TimingModel, TrapInfo};

use crate::csr::*;
use crate::{Hart, Priv};

pub const CAUSE_MISALIGNED_FETCH: u64 = 0;
pub const CAUSE_FETCH_ACCESS: u64 = 1;
pub const CAUSE_ILLEGAL_INSN: u64 = 2;
pub const CAUSE_BREAKPOINT: u64 = 3;
pub const CAUSE_MISALIGNED_LOAD: u64 = 4;
pub const CAUSE_LOAD_ACCESS: u64 = 5;
pub const CAUSE_MISALIGNED_STORE: u64 = 6;
pub const CAUSE_STORE_ACCESS: u64 = 7;
pub const CAUSE_USER_ECALL: u64 = 8;
pub const CAUSE_SUPERVISOR_ECALL: u64 = 9;
pub const CAUSE_MACHINE_ECALL: u64 = 11;
pub const CAUSE_FETCH_PAGE_FAULT: u64 = 12;
pub const CAUSE_LOAD_PAGE_FAULT: u64 = 13;
pub const CAUSE_STORE_PAGE_FAULT: u64 = 15;

/// Interrupt numbers (bit positions in mip/mie).
pub const IRQ_S_SOFT: u64 = 1;
pub const IRQ_M_SOFT: u64 = 3;
pub const IRQ_S_TIMER: u64 = 5;
pub const IRQ_M_TIMER: u64 = 7;
pub const IRQ_S_EXT: u64 = 9;
pub const IRQ_M_EXT: u64 = 11;
/// Sscofpmf's local counter-overflow interrupt.
pub const IRQ_LCOF: u64 = 13;

/// Not a trap: the instruction retired and the run loop must return
/// (`Hart::exit` holds why). Carried through the exception path so the hot
/// path has a single error check.
pub const CAUSE_EXIT: u64 = u64::MAX;

/// A synchronous exception raised by an instruction (or [`CAUSE_EXIT`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trap {
    pub cause: u64,
    pub tval: u64,
}

impl Trap {
    #[inline(always)]
    pub fn new(cause: u64, tval: u64) -> Self {
        Trap { cause, tval }
    }
    #[inline(always)]
    pub fn illegal(bits: u32) -> Self {
        Trap {
            cause: CAUSE_ILLEGAL_INSN,
            tval: bits as u64,
        }
    }
    #[inline(always)]
    pub fn exit() -> Self {
        Trap {
            cause: CAUSE_EXIT,
            tval: 0,
        }
    }
}

/// Priority order of interrupts when several are pending (priv spec 3.1.9).
const IRQ_PRIORITY: [u64; 7] = [
    IRQ_M_EXT,
    IRQ_M_SOFT,
    IRQ_M_TIMER,
    IRQ_S_EXT,
    IRQ_S_SOFT,
    IRQ_S_TIMER,
    IRQ_LCOF,
];

impl<T: TimingModel> Hart<T> {
    /// Pending and individually enabled interrupts (mip & mie), ignoring the
    /// global enables: what wakes a WFI.
    #[inline]
    pub(crate) fn pending_enabled(&self) -> u64 {
        self.effective_mip() & self.csr.mie
    }

    /// The interrupt to take now, if any.
    pub(crate) fn interrupt_to_take(&self) -> Option<u64> {
        let pending = self.pending_enabled();
        if pending == 0 {
            return None;
        }
        let m_enabled = self.prv < Priv::Machine || self.csr.mstatus & MSTATUS_MIE != 0;
        let s_enabled = self.prv < Priv::Supervisor
            || (self.prv == Priv::Supervisor && self.csr.mstatus & MSTATUS_SIE != 0);
        let m_set = if m_enabled {
            pending & !self.csr.mideleg
        } else {
            0
        };
        let s_set = if s_enabled {
            pending & self.csr.mideleg
        } else {
            0
        };
        let set = if m_set != 0 { m_set } else { s_set };
        IRQ_PRIORITY.iter().copied().find(|&i| set & (1 << i) != 0)
    }

    /// Enter the trap handler for `cause` (interrupt number when `irq`).
    pub(crate) fn take_trap(&mut self, cause: u64, irq: bool, tval: u64) {
        if !irq {
            self.stats.exceptions += 1;
        }
        let extra = self.timing.trap(cause, irq);
        self.charge(extra);
        let deleg = if irq {
            self.csr.mideleg
        } else {
            self.csr.medeleg
        };
        let from = self.prv;
        let epc = self.pc;
        let mcause = cause | if irq { 1 << 63 } else { 0 };
        let ms = self.csr.mstatus;
        if from <= Priv::Supervisor && (deleg >> (cause & 63)) & 1 != 0 {
            self.csr.scause = mcause;
            self.csr.sepc = self.pc;
            self.csr.stval = tval;
            let mut s = ms & !(MSTATUS_SPIE | MSTATUS_SIE | MSTATUS_SPP);
            if ms & MSTATUS_SIE != 0 {
                s |= MSTATUS_SPIE;
            }
            if from == Priv::Supervisor {
                s |= MSTATUS_SPP;
            }
            self.csr.mstatus = s;
            self.pc = trap_vector(self.csr.stvec, cause, irq);
            self.set_priv(Priv::Supervisor);
        } else {
            self.csr.mcause = mcause;
            self.csr.mepc = self.pc;
            self.csr.mtval = tval;
            let mut s = ms & !(MSTATUS_MPIE | MSTATUS_MIE | MSTATUS_MPP);
            if ms & MSTATUS_MIE != 0 {
                s |= MSTATUS_MPIE;
            }
            s |= (from as u64) << MSTATUS_MPP_SHIFT;
            self.csr.mstatus = s;
            self.pc = trap_vector(self.csr.mtvec, cause, irq);
            self.set_priv(Priv::Machine);
        }
        self.update_modes();
        let info = TrapInfo {
            cause,
            interrupt: irq,
            epc,
            tval,
            from: from as u8,
            to: self.prv as u8,
            a7: self.x[17],
        };
        self.timing.trap_info(&info);
    }

    pub(crate) fn do_mret(&mut self) {
        let ms = self.csr.mstatus;
        let mpp = Priv::from_bits((ms >> MSTATUS_MPP_SHIFT) & 3);
        let mut s = ms & !(MSTATUS_MIE | MSTATUS_MPP);
        if ms & MSTATUS_MPIE != 0 {
            s |= MSTATUS_MIE;
        }
        s |= MSTATUS_MPIE;
        if mpp != Priv::Machine {
            s &= !MSTATUS_MPRV;
        }
        self.csr.mstatus = s;
        self.pc = self.csr.mepc;
        self.set_priv(mpp);
        self.update_modes();
    }

    pub(crate) fn do_sret(&mut self) {
        let ms = self.csr.mstatus;
        let spp = if ms & MSTATUS_SPP != 0 {
            Priv::Supervisor
        } else {
            Priv::User
        };
        let mut s = ms & !(MSTATUS_SIE | MSTATUS_SPP | MSTATUS_MPRV);
        if ms & MSTATUS_SPIE != 0 {
            s |= MSTATUS_SIE;
        }
        s |= MSTATUS_SPIE;
        self.csr.mstatus = s;
        self.pc = self.csr.sepc;
        self.set_priv(spp);
        self.update_modes();
    }
}

fn trap_vector(tvec: u64, cause: u64, irq: bool) -> u64 {
    let base = tvec & !3;
    if irq && tvec & 3 == 1 {
        base.wrapping_add(4 * cause)
    } else {
        base
    }
}
