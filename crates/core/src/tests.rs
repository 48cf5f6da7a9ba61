//! Unit tests of the hart: CSR WARL rules, trap delegation and interrupt
//! selection, page walks on hand-built tables with A/D updates, LR/SC, the
//! run-loop exits, code modification, observation helpers.

use hs_bus::{Access, BusFault, GuestRam, SystemBus, WriteEffect};
use hs_isa::csr::*;

use crate::csr::*;
use crate::mmu::*;
use crate::trap::*;
use crate::*;

mod csr_rules;

const BASE: u64 = 0x8000_0000;
const DEV: u64 = 0x1000_0000;

/// A device at DEV: reads return 0x5a, writes are logged; a write of 1 to
/// DEV+8 reports irq_changed, of 1 to DEV+16 reports stop.
#[derive(Default)]
struct Dev {
    writes: Vec<(u64, u64, u64)>,
}
impl SystemBus for Dev {
    fn mmio_read(&mut self, _: Access, pa: u64, _: u8) -> Result<u64, BusFault> {
        if (DEV..DEV + 0x100).contains(&pa) {
            Ok(0x5a)
        } else {
            Err(BusFault::Unmapped(pa))
        }
    }
    fn mmio_write(&mut self, acc: Access, pa: u64, _: u8, v: u64) -> Result<WriteEffect, BusFault> {
        if !(DEV..DEV + 0x100).contains(&pa) {
            return Err(BusFault::Unmapped(pa));
        }
        self.writes.push((pa, v, acc.now));
        Ok(WriteEffect {
            irq_changed: pa == DEV + 8,
            stop: pa == DEV + 16,
        })
    }
}

// ---- a tiny assembler
fn r(f7: u32, rs2: u32, rs1: u32, f3: u32, rd: u32, op: u32) -> u32 {
    (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op
}
fn i(imm: i32, rs1: u32, f3: u32, rd: u32, op: u32) -> u32 {
    (((imm as u32) & 0xfff) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op
}
fn s(imm: i32, rs2: u32, rs1: u32, f3: u32) -> u32 {
    let imm = imm as u32;
    (((imm >> 5) & 0x7f) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | ((imm & 31) << 7) | 0x23
}
fn b(imm: i32, rs2: u32, rs1: u32, f3: u32) -> u32 {
    let imm = imm as u32;
    (((imm >> 12) & 1) << 31)
        | (((imm >> 5) & 0x3f) << 25)
        | (rs2 << 20)
        | (rs1 << 15)
        | (f3 << 12)
        | (((imm >> 1) & 0xf) << 8)
        | (((imm >> 11) & 1) << 7)
        | 0x63
}
fn addi(rd: u32, rs1: u32, imm: i32) -> u32 {
    i(imm, rs1, 0, rd, 0x13)
}
fn ld(rd: u32, rs1: u32, imm: i32) -> u32 {
    i(imm, rs1, 3, rd, 0x03)
}
fn sd(rs2: u32, rs1: u32, imm: i32) -> u32 {
    s(imm, rs2, rs1, 3)
}
fn sw(rs2: u32, rs1: u32, imm: i32) -> u32 {
    s(imm, rs2, rs1, 2)
}
fn jal(rd: u32, imm: i32) -> u32 {
    let imm = imm as u32;
    (((imm >> 20) & 1) << 31)
        | (((imm >> 1) & 0x3ff) << 21)
        | (((imm >> 11) & 1) << 20)
        | (((imm >> 12) & 0xff) << 12)
        | (rd << 7)
        | 0x6f
}
fn lr_d(rd: u32, rs1: u32) -> u32 {
    r(0b0001000, 0, rs1, 3, rd, 0x2f)
}
fn sc_d(rd: u32, rs2: u32, rs1: u32) -> u32 {
    r(0b0001100, rs2, rs1, 3, rd, 0x2f)
}
fn lr_w(rd: u32, rs1: u32) -> u32 {
    r(0b0001000, 0, rs1, 2, rd, 0x2f)
}
fn csrrw(rd: u32, csr: u16, rs1: u32) -> u32 {
    i(csr as i32, rs1, 1, rd, 0x73)
}
fn csrrs(rd: u32, csr: u16, rs1: u32) -> u32 {
    i(csr as i32, rs1, 2, rd, 0x73)
}
const WFI: u32 = 0x1050_0073;
const ECALL: u32 = 0x0000_0073;
const FENCE_I: u32 = 0x0000_100f;
const EBREAK: u32 = 0x0010_0073;
const MARKER_EXIT: u32 = 0x4810_2013; // slti x0, x0, 0x481

fn hart_with(prog: &[u32]) -> (Hart, GuestRam) {
    let ram = GuestRam::new(BASE, 1 << 20).unwrap();
    for (k, w) in prog.iter().enumerate() {
        ram.write(BASE + 4 * k as u64, 4, *w as u64);
    }
    // trap handlers used by the tests just stop (WFI with nothing pending)
    for handler in [BASE + 0x100, BASE + 0x400] {
        ram.write(handler, 4, WFI as u64);
    }
    let mut h = Hart::new(
        HartConfig {
            hart_id: 3,
            cycles_per_tick: 4,
        },
        ram.clone(),
        Atomic,
    );
    h.reset(BASE);
    (h, ram)
}

/// Run until an exit other than Budget, or the budget.
fn run_until(h: &mut Hart, bus: &mut Dev, budget: u64) -> Exit {
    h.run(bus, budget)
}

#[test]
fn counts_one_cycle_per_instruction_and_stops_at_budget() {
    let (mut h, _) = hart_with(&[addi(10, 10, 1), jal(0, -4)]);
    let e = run_until(&mut h, &mut Dev::default(), 1000);
    assert_eq!(e, Exit::Budget);
    assert!(h.cycle() >= 1000 && h.cycle() < 1000 + 64);
    assert_eq!(h.instret(), h.cycle());
    assert_eq!(h.x(10), h.cycle().div_ceil(2));
    assert_eq!(h.csr(MCYCLE), Some(h.cycle()));
    assert_eq!(h.csr(MINSTRET), Some(h.instret()));
}

#[test]
fn marker_exit_carries_args_and_advances_pc() {
    let (mut h, _) = hart_with(&[addi(10, 0, 7), addi(11, 0, -1), MARKER_EXIT, WFI]);
    let e = run_until(&mut h, &mut Dev::default(), 1000);
    assert_eq!(
        e,
        Exit::Marker(MarkerCall {
            op: 1,
            args: [7, u64::MAX, 0, 0]
        })
    );
    assert_eq!(h.pc(), BASE + 12);
    assert_eq!(h.instret(), 3);
}

#[test]
fn wfi_idles_only_without_pending_interrupts() {
    let (mut h, _) = hart_with(&[WFI, WFI, addi(10, 0, 1), jal(0, 0)]);
    assert_eq!(run_until(&mut h, &mut Dev::default(), 1000), Exit::Idle);
    assert_eq!(h.pc(), BASE + 4);
    h.advance_to(500);
    assert_eq!(h.cycle(), 500);
    assert_eq!(h.instret(), 1); // idle cycles retire nothing
                                // MTIP pending and enabled in mie (but MIE=0): WFI completes, no trap
    h.csr_write(MIE, MIP_MTIP);
    h.set_platform_irqs(MIP_MTIP);
    assert_eq!(run_until(&mut h, &mut Dev::default(), 600), Exit::Budget);
    assert_eq!(h.x(10), 1);
}

#[test]
fn mmio_writes_report_irq_changes_and_stops() {
    // a0 = DEV; sw to DEV (plain), DEV+8 (irq), DEV+16 (stop)
    let prog = [
        0x1000_0537, // lui a0, 0x10000
        addi(11, 0, 1),
        sw(11, 10, 0),
        sw(11, 10, 8),
        sw(11, 10, 16),
        jal(0, 0),
    ];
    let (mut h, _) = hart_with(&prog);
    let mut dev = Dev::default();
    assert_eq!(run_until(&mut h, &mut dev, 1000), Exit::IrqCheck);
    assert_eq!(h.pc(), BASE + 16); // after the store that reported
    assert_eq!(run_until(&mut h, &mut dev, 1000), Exit::Stop);
    assert_eq!(
        dev.writes.iter().map(|w| w.0).collect::<Vec<_>>(),
        vec![DEV, DEV + 8, DEV + 16]
    );
    // the device saw the exact cycle of each store: instructions 2, 3, 4
    assert_eq!(
        dev.writes.iter().map(|w| w.2).collect::<Vec<_>>(),
        vec![2, 3, 4]
    );
}

#[test]
fn access_to_nothing_is_an_access_fault_with_tval() {
    let prog = [
        0x2000_0537, /* lui a0, 0x20000 */
        ld(11, 10, 8),
        jal(0, 0),
    ];
    let (mut h, _) = hart_with(&prog);
    h.csr_write(MTVEC, BASE + 0x100);
    run_until(&mut h, &mut Dev::default(), 10);
    assert_eq!(h.csr(MCAUSE), Some(CAUSE_LOAD_ACCESS));
    assert_eq!(h.csr(MTVAL), Some(0x2000_0008));
    assert_eq!(h.csr(MEPC), Some(BASE + 4));
}

#[test]
fn csr_warl_rules() {
    let (mut h, _) = hart_with(&[]);
    // MPP: the reserved value 2 keeps the old one; UXL/SXL stay 64-bit
    h.csr_write(MSTATUS, 1 << MSTATUS_MPP_SHIFT);
    h.csr_write(MSTATUS, 2 << MSTATUS_MPP_SHIFT);
    let ms = h.csr(MSTATUS).unwrap();
    assert_eq!((ms >> MSTATUS_MPP_SHIFT) & 3, 1);
    assert_eq!(ms & (0xf << 32), MSTATUS_XL64);
    // SD mirrors FS = dirty
    h.csr_write(MSTATUS, MSTATUS_FS);
    assert!(h.csr(MSTATUS).unwrap() >> 63 == 1);
    assert!(h.csr(SSTATUS).unwrap() >> 63 == 1);
    // sstatus writes only its own bits
    h.csr_write(SSTATUS, u64::MAX);
    let ms = h.csr(MSTATUS).unwrap();
    assert_eq!(ms & MSTATUS_MIE, 0);
    assert_ne!(ms & MSTATUS_SUM, 0);
    // delegation masks
    h.csr_write(MEDELEG, u64::MAX);
    assert_eq!(h.csr(MEDELEG), Some(0xb3ff));
    h.csr_write(MIDELEG, u64::MAX);
    assert_eq!(h.csr(MIDELEG), Some(0x2222)); // with Sscofpmf's LCOFI (bit 13)
    h.csr_write(MIE, u64::MAX);
    assert_eq!(h.csr(MIE), Some(0x2aaa));
    assert_eq!(h.csr(SIE), Some(0x2222));
    // tvec: reserved modes become direct
    h.csr_write(MTVEC, BASE | 3);
    assert_eq!(h.csr(MTVEC), Some(BASE));
    h.csr_write(STVEC, BASE | 1);
    assert_eq!(h.csr(STVEC), Some(BASE | 1));
    // mepc/sepc: bit 0 is always zero (IALIGN=16)
    h.csr_write(MEPC, BASE | 1);
    assert_eq!(h.csr(MEPC), Some(BASE));
    h.csr_write(SEPC, u64::MAX);
    assert_eq!(h.csr(SEPC), Some(u64::MAX - 1));
    // counters enables are 32 bits; menvcfg keeps STCE and FIOM only
    h.csr_write(MCOUNTEREN, u64::MAX);
    assert_eq!(h.csr(MCOUNTEREN), Some(0xffff_ffff));
    h.csr_write(MENVCFG, u64::MAX);
    assert_eq!(h.csr(MENVCFG), Some(MENVCFG_STCE | MENVCFG_FIOM));
    // hpm counters and events hold what is written (Atomic counts no events)
    h.csr_write(MHPMCOUNTER3, 5);
    h.csr_write(MHPMEVENT3, 6);
    assert_eq!((h.csr(MHPMCOUNTER3), h.csr(MHPMEVENT3)), (Some(5), Some(6)));
    assert_eq!(h.csr(MHPMEVENT3 + 28), Some(0));
    // ids and misa
    assert_eq!(h.csr(MHARTID), Some(3));
    assert_eq!(h.csr(MISA), Some(0x8000_0000_0014_112d));
    for id in [MVENDORID, MARCHID, MIMPID] {
        assert_eq!(h.csr(id), Some(0));
    }
    // 16 PMP entries: pmpcfg0/2 and pmpaddr0..15 exist, the rest do not
    assert!(h.csr(PMPCFG0 + 2).is_some());
    assert!(h.csr(PMPCFG0 + 1).is_none());
    assert!(h.csr(PMPCFG0 + 4).is_none());
    assert!(h.csr(PMPADDR0 + 15).is_some());
    assert!(h.csr(PMPADDR0 + 16).is_none());
    // satp: unsupported modes are ignored
    h.csr_write(SATP, (9 << 60) | 0x1234);
    h.csr_write(SATP, (10 << 60) | 0x5678);
    assert_eq!(h.csr(SATP), Some((9 << 60) | 0x1234));
    // mcountinhibit freezes mcycle
    h.csr_write(MCOUNTINHIBIT, 1);
    let c = h.csr(MCYCLE).unwrap();
    h.advance_to(h.cycle() + 100);
    assert_eq!(h.csr(MCYCLE), Some(c));
    assert_eq!(h.csr(MCOUNTINHIBIT), Some(1));
    h.csr_write(MCOUNTINHIBIT, 2); // TM bit is read-only zero
    assert_eq!(h.csr(MCOUNTINHIBIT), Some(0));
}

#[test]
fn counter_access_is_gated_by_counteren() {
    let (mut h, _) = hart_with(&[]);
    let rdtime = csrrs(10, TIME, 0);
    for (prv, m, s, ok) in [
        (Priv::Supervisor, 0, 0, false),
        (Priv::Supervisor, 2, 0, true),
        (Priv::User, 2, 0, false),
        (Priv::User, 2, 2, true),
        (Priv::User, 0, 2, false),
        (Priv::Machine, 0, 0, true),
    ] {
        h.csr_write(MCOUNTEREN, m);
        h.csr_write(SCOUNTEREN, s);
        h.set_priv(prv);
        assert_eq!(
            h.csr_op(TIME, 1, 0, false, rdtime).is_ok(),
            ok,
            "{prv:?} m={m} s={s}"
        );
        h.set_priv(Priv::Machine);
    }
    // stimecmp from S needs STCE and TM
    h.csr_write(MCOUNTEREN, 2);
    h.set_priv(Priv::Supervisor);
    assert!(h.csr_op(STIMECMP, 0, 5, true, 0).is_err());
    h.set_priv(Priv::Machine);
    h.csr_write(MENVCFG, MENVCFG_STCE);
    h.set_priv(Priv::Supervisor);
    assert!(h.csr_op(STIMECMP, 0, 5, true, 0).is_ok());
    // M CSRs from S, writes to read-only CSRs: illegal with the bits in tval
    assert_eq!(
        h.csr_op(MSTATUS, 1, 0, false, 0x1234),
        Err(Trap::illegal(0x1234))
    );
    h.set_priv(Priv::Machine);
    assert!(h.csr_op(MHARTID, 0, 1, true, 7).is_err());
    assert!(h.csr_op(MHARTID, 1, 0, false, 7).is_ok());
}

#[test]
fn traps_delegate_from_s_and_u_only() {
    let (mut h, _) = hart_with(&[]);
    h.csr_write(MTVEC, BASE + 0x100);
    h.csr_write(STVEC, BASE + 0x200 + 1); // vectored
    h.csr_write(MEDELEG, 1 << CAUSE_USER_ECALL | 1 << CAUSE_BREAKPOINT);
    // from U: delegated to S
    h.set_priv(Priv::User);
    h.pc = BASE + 0x40;
    h.take_trap(CAUSE_USER_ECALL, false, 0);
    assert_eq!(h.priv_mode(), Priv::Supervisor);
    assert_eq!(h.pc(), BASE + 0x200); // exceptions ignore vectoring
    assert_eq!(h.csr(SEPC), Some(BASE + 0x40));
    assert_eq!(h.csr(SCAUSE), Some(CAUSE_USER_ECALL));
    assert_eq!(h.csr(SSTATUS).unwrap() & MSTATUS_SPP, 0);
    // from M: never delegated
    h.set_priv(Priv::Machine);
    h.take_trap(CAUSE_BREAKPOINT, false, 5);
    assert_eq!(h.priv_mode(), Priv::Machine);
    assert_eq!(h.pc(), BASE + 0x100);
    assert_eq!(h.csr(MTVAL), Some(5));
    assert_eq!((h.csr(MSTATUS).unwrap() >> MSTATUS_MPP_SHIFT) & 3, 3);
    // a delegated interrupt in S uses the vector
    h.csr_write(MIDELEG, MIP_STIP);
    h.set_priv(Priv::User);
    h.take_trap(IRQ_S_TIMER, true, 0);
    assert_eq!(h.pc(), BASE + 0x200 + 4 * 5);
    assert_eq!(h.csr(SCAUSE), Some(1 << 63 | 5));
    // sret returns to U and re-enables as SPIE says
    h.csr_write(SEPC, BASE + 0x80);
    h.do_sret();
    assert_eq!((h.priv_mode(), h.pc()), (Priv::User, BASE + 0x80));
}

#[test]
fn interrupt_selection_follows_priority_and_enables() {
    let (mut h, _) = hart_with(&[]);
    h.csr_write(MIE, 0xaaa);
    h.csr_write(MIDELEG, 0x222);
    h.set_platform_irqs(MIP_MTIP | MIP_SEIP);
    h.csr_write(MIP, MIP_SSIP);
    // M with MIE=0: nothing; M interrupts are not maskable from S/U though
    assert_eq!(h.interrupt_to_take(), None);
    h.set_priv(Priv::Supervisor);
    assert_eq!(h.interrupt_to_take(), Some(IRQ_M_TIMER));
    h.set_platform_irqs(MIP_SEIP);
    // S with SIE=0: delegated ones wait; in U they are taken, SEI before SSI
    assert_eq!(h.interrupt_to_take(), None);
    h.set_priv(Priv::User);
    assert_eq!(h.interrupt_to_take(), Some(IRQ_S_EXT));
    h.set_platform_irqs(0);
    assert_eq!(h.interrupt_to_take(), Some(IRQ_S_SOFT));
    // MEI beats everything
    h.set_platform_irqs(MIP_MEIP | MIP_MSIP);
    assert_eq!(h.interrupt_to_take(), Some(IRQ_M_EXT));
}

#[test]
fn sstc_timer_fires_from_stimecmp() {
    let (mut h, _) = hart_with(&[jal(0, 0)]);
    h.csr_write(MENVCFG, MENVCFG_STCE);
    assert_eq!(h.next_timer_cycle(), None);
    h.csr_write(STIMECMP, 100); // 4 cycles per tick
    assert_eq!(h.next_timer_cycle(), Some(400));
    assert_eq!(h.csr(MIP).unwrap() & MIP_STIP, 0);
    h.advance_to(400);
    assert_ne!(h.csr(MIP).unwrap() & MIP_STIP, 0);
    assert_eq!(h.csr(TIME), Some(100));
    // taken in S with SIE once enabled
    h.csr_write(MIE, MIP_STIP);
    h.csr_write(MIDELEG, MIP_STIP);
    h.csr_write(STVEC, BASE + 0x300);
    h.csr_write(MSTATUS, MSTATUS_SIE);
    h.set_priv(Priv::Supervisor);
    run_until(&mut h, &mut Dev::default(), 410);
    assert_eq!(h.csr(SCAUSE), Some(1 << 63 | IRQ_S_TIMER));
}

/// Sv39 tables: root at BASE+0x10000, l1 at +0x11000, l0 at +0x12000.
/// An Sv39 page-table entry for `pa` with `flags`.
fn pte(pa: u64, flags: u64) -> u64 {
    (pa >> 12) << 10 | flags
}

/// Run the `sfence.vma a0, ...` at `at` in M-mode (fetch is physical) with
/// a0 = `va`, then return to S-mode.
fn fence_from_m(h: &mut Hart, at: u64, va: u64) {
    h.set_priv(Priv::Machine);
    h.update_modes();
    h.set_x(10, va);
    h.set_pc(at);
    let until = h.cycle() + 8;
    run_until(h, &mut Dev::default(), until);
    h.set_priv(Priv::Supervisor);
    h.update_modes();
}

fn sv39<T: TimingModel>(h: &mut Hart<T>, ram: &GuestRam) {
    let (root, l1, l0) = (BASE + 0x10000, BASE + 0x11000, BASE + 0x12000);
    ram.write(root + 8, 8, pte(l1, 1)); // VA 0x4000_0000
    ram.write(l1, 8, pte(l0, 1));
    ram.write(l0, 8, pte(BASE + 0x20000, 0x07)); // V R W, no A/D
    ram.write(l0 + 8, 8, pte(BASE + 0x21000, 0x17 | 0xc0)); // U page, A D
    ram.write(l0 + 16, 8, pte(BASE + 0x22000, 0x09 | 0x40)); // X only
    ram.write(l1 + 8, 8, pte(BASE + 0x200000, 0x0b | 0xc0)); // 2 MiB R X at VA 0x4020_0000
    ram.write(l1 + 16, 8, pte(BASE + 0x201000, 0x03 | 0x40)); // misaligned 2 MiB
    ram.write(root + 16, 8, pte(BASE, 0xcf)); // 1 GiB identity at 0x8000_0000
    h.csr_write(SATP, (8 << 60) | (root >> 12));
    // open PMP for S/U
    h.csr_write(PMPADDR0, u64::MAX);
    h.csr_write(PMPCFG0, 0x1f);
}

#[test]
fn page_walk_sets_accessed_and_dirty() {
    let (mut h, ram) = hart_with(&[]);
    sv39(&mut h, &ram);
    h.set_priv(Priv::Supervisor);
    h.update_modes();
    let pte_addr = BASE + 0x12000;
    assert_eq!(h.translate(0x4000_0123, 1, KIND_LOAD), Ok(BASE + 0x20123));
    assert_eq!(ram.read(pte_addr, 8).unwrap() & 0xc0, 0x40); // A only
    assert_eq!(h.translate(0x4000_0123, 1, KIND_STORE), Ok(BASE + 0x20123));
    assert_eq!(ram.read(pte_addr, 8).unwrap() & 0xc0, 0xc0); // and D
                                                             // observation walks change nothing
    ram.write(pte_addr, 8, ram.read(pte_addr, 8).unwrap() & !0xc0);
    assert_eq!(
        h.translate_peek(0x4000_0008, KIND_LOAD),
        Some(BASE + 0x20008)
    );
    assert_eq!(ram.read(pte_addr, 8).unwrap() & 0xc0, 0);
}

#[test]
fn page_walk_permissions_and_faults() {
    let (mut h, ram) = hart_with(&[]);
    sv39(&mut h, &ram);
    h.set_priv(Priv::Supervisor);
    h.update_modes();
    let pf = |c| Err(Trap::new(c, 0));
    let t =
        |h: &mut Hart, va: u64, k: usize| h.translate(va, 1, k).map_err(|e| Trap::new(e.cause, 0));
    // U page from S: only with SUM, never executable
    assert_eq!(t(&mut h, 0x4000_1000, KIND_LOAD), pf(CAUSE_LOAD_PAGE_FAULT));
    h.csr_write(SSTATUS, MSTATUS_SUM);
    assert_eq!(t(&mut h, 0x4000_1000, KIND_LOAD), Ok(BASE + 0x21000));
    assert_eq!(
        t(&mut h, 0x4000_1000, KIND_FETCH),
        pf(CAUSE_FETCH_PAGE_FAULT)
    );
    // X-only: load only with MXR
    assert_eq!(t(&mut h, 0x4000_2000, KIND_LOAD), pf(CAUSE_LOAD_PAGE_FAULT));
    h.csr_write(MSTATUS, h.csr(MSTATUS).unwrap() | MSTATUS_MXR);
    assert_eq!(t(&mut h, 0x4000_2000, KIND_LOAD), Ok(BASE + 0x22000));
    // megapage: offset bits come from the VA; misaligned PPN faults
    assert_eq!(t(&mut h, 0x4023_4567, KIND_FETCH), Ok(BASE + 0x234567));
    assert_eq!(t(&mut h, 0x4040_0000, KIND_LOAD), pf(CAUSE_LOAD_PAGE_FAULT));
    // store to a read-only page, unmapped, non-canonical
    assert_eq!(
        t(&mut h, 0x4020_0000, KIND_STORE),
        pf(CAUSE_STORE_PAGE_FAULT)
    );
    assert_eq!(t(&mut h, 0x4000_3000, KIND_LOAD), pf(CAUSE_LOAD_PAGE_FAULT));
    assert_eq!(
        t(&mut h, 0x0000_0040_0000_0000, KIND_LOAD),
        pf(CAUSE_LOAD_PAGE_FAULT)
    );
    // U cannot touch supervisor pages
    h.set_priv(Priv::User);
    h.update_modes();
    assert_eq!(t(&mut h, 0x4000_0000, KIND_LOAD), pf(CAUSE_LOAD_PAGE_FAULT));
    assert_eq!(t(&mut h, 0x4000_1000, KIND_STORE), Ok(BASE + 0x21000));
    // a PTE outside RAM is an access fault
    ram.write(BASE + 0x11000 + 24, 8, 1); // l1[3] -> table at physical 0
    h.set_priv(Priv::Supervisor);
    h.update_modes();
    assert_eq!(t(&mut h, 0x4060_0000, KIND_LOAD), pf(CAUSE_LOAD_ACCESS));
}

#[test]
fn read_virt_follows_translation() {
    let (mut h, ram) = hart_with(&[]);
    sv39(&mut h, &ram);
    ram.write_bytes(BASE + 0x20ffe, b"hi");
    ram.write_bytes(BASE + 0x21000, b"there");
    h.set_priv(Priv::Supervisor);
    h.update_modes();
    let mut buf = [0u8; 6];
    // crosses from the S page into the U page: needs SUM
    assert!(h.read_virt(0x4000_0ffe, &mut buf).is_err());
    h.csr_write(SSTATUS, MSTATUS_SUM);
    h.read_virt(0x4000_0ffe, &mut buf).unwrap();
    assert_eq!(&buf[..], &b"hithere"[..6]);
    assert!(h.read_virt(0x4000_3000, &mut buf).is_err());
}

/// Observation reads a page the TLB holds through the TLB entry: what the
/// hart's own load would read (a remap without `sfence.vma` is not seen by
/// the guest, nor by observation, until the fence).
#[test]
fn observation_reads_a_page_the_tlb_holds_as_the_harts_loads_do() {
    let (mut h, ram) = hart_with(&[]);
    sv39(&mut h, &ram);
    h.set_priv(Priv::Supervisor);
    h.update_modes();
    ram.write_bytes(BASE + 0x20010, b"old!");
    ram.write_bytes(BASE + 0x23010, b"new!");
    assert_eq!(h.translate(0x4000_0010, 4, KIND_LOAD), Ok(BASE + 0x20010));
    // the page table now maps the page elsewhere, no fence yet
    ram.write(BASE + 0x12000, 8, ((BASE + 0x23000) >> 12) << 10 | 0xc7);
    let mut buf = [0u8; 4];
    h.read_kernel_virt(0x4000_0010, &mut buf).unwrap();
    assert_eq!(&buf, b"old!");
    h.read_virt(0x4000_0010, &mut buf).unwrap();
    assert_eq!(&buf, b"old!");
    assert_eq!(h.translate(0x4000_0010, 4, KIND_LOAD), Ok(BASE + 0x20010));
    h.tlb_flush();
    h.read_kernel_virt(0x4000_0010, &mut buf).unwrap();
    assert_eq!(&buf, b"new!");
    h.read_virt(0x4000_0010, &mut buf).unwrap();
    assert_eq!(&buf, b"new!");
}

/// `sfence.vma` with an address drops the translations of its page and
/// keeps the others; one inside a superpage the TLB holds pieces of drops
/// everything (pieces at other addresses came from the same leaf PTE).
/// With `x0` it drops everything.
#[test]
fn sfence_vma_of_an_address_drops_its_page_or_all_of_a_superpage() {
    let sfence_a0 = r(0x09, 0, 10, 0, 0, 0x73); // sfence.vma a0, zero
    let sfence_all = r(0x09, 0, 0, 0, 0, 0x73); // sfence.vma zero, zero
    let (mut h, ram) = hart_with(&[sfence_a0, jal(0, 0), sfence_all, jal(0, 0)]);
    sv39(&mut h, &ram);
    // The fence runs in M-mode (fetch is physical), the loads in S-mode;
    // the walks of the loads after it are counted.
    let fence = |h: &mut Hart, at: u64, va: u64| {
        fence_from_m(h, at, va);
        h.stats().page_walks
    };
    let load = |h: &mut Hart, va: u64| h.translate(va, 1, KIND_LOAD).unwrap();
    let walks = |h: &Hart| h.stats().page_walks;
    h.csr_write(SSTATUS, MSTATUS_SUM); // the second page is a user page
    h.set_priv(Priv::Supervisor);
    h.update_modes();
    // two 4 KiB pages and two pieces of the 2 MiB page at 0x4020_0000
    // (in distinct TLB slots)
    assert_eq!(load(&mut h, 0x4000_0010), BASE + 0x20010);
    assert_eq!(load(&mut h, 0x4000_1010), BASE + 0x21010);
    assert_eq!(load(&mut h, 0x4020_5000), BASE + 0x205000);
    assert_eq!(load(&mut h, 0x4020_7000), BASE + 0x207000);
    assert_eq!(walks(&h), 4);
    // remap the first 4 KiB page and the 2 MiB page
    ram.write(BASE + 0x12000, 8, pte(BASE + 0x23000, 0xc7));
    ram.write(BASE + 0x11008, 8, pte(BASE + 0x400000, 0xcb));
    // a fence of the first page: it is walked again, the others are not
    let w = fence(&mut h, BASE, 0x4000_0fff);
    assert_eq!(load(&mut h, 0x4000_0010), BASE + 0x23010);
    assert_eq!(load(&mut h, 0x4000_1010), BASE + 0x21010);
    assert_eq!(load(&mut h, 0x4020_5000), BASE + 0x205000); // stale, unfenced
    assert_eq!(walks(&h), w + 1);
    assert_eq!(h.stats().tlb_page_flushes, 1);
    // a fence of one address in the superpage drops its other pieces too
    let w = fence(&mut h, BASE, 0x4020_7000);
    assert_eq!(load(&mut h, 0x4020_5000), BASE + 0x405000);
    assert_eq!(load(&mut h, 0x4000_1010), BASE + 0x21010);
    assert_eq!(walks(&h), w + 2);
    // with x0, everything
    ram.write(BASE + 0x12008, 8, pte(BASE + 0x24000, 0xd7));
    let w = fence(&mut h, BASE + 8, 0);
    assert_eq!(load(&mut h, 0x4000_1010), BASE + 0x24010);
    assert_eq!(walks(&h), w + 1);
    assert_eq!(h.stats().tlb_page_flushes, 1);
}

/// S-mode code at VA 0x4000_3000 (physical page `BASE + 0x30000`, to be
/// remapped) and at VA 0x4080_3100 (`BASE + 0x31100`), whose page takes
/// the same software-TLB slot (but whose pc not the same first-level
/// slot); each page's code sets x11 and loops.
fn code_pages(h: &mut Hart, ram: &GuestRam) {
    sv39(h, ram);
    let (l1, l0, l0b) = (BASE + 0x11000, BASE + 0x12000, BASE + 0x13000);
    ram.write(l0 + 24, 8, pte(BASE + 0x30000, 0x4b)); // V R X A
    ram.write(l1 + 32, 8, pte(l0b, 1)); // VA 0x4080_0000
    ram.write(l0b + 24, 8, pte(BASE + 0x31000, 0x4b));
    for (page, value) in [(0x30000, 1), (0x31100, 2), (0x32000, 3)] {
        ram.write(BASE + page, 4, addi(11, 0, value) as u64);
        ram.write(BASE + page + 4, 4, jal(0, 0) as u64);
    }
}

/// Run S-mode code at `pc` for a few cycles; x11 as it left it.
fn run_code_at(h: &mut Hart, pc: u64) -> u64 {
    run_code_for(h, pc, 16)
}

/// Run S-mode code at `pc` for `cycles` cycles; x11 as it left it.
fn run_code_for(h: &mut Hart, pc: u64, cycles: u64) -> u64 {
    h.set_priv(Priv::Supervisor);
    h.update_modes();
    h.set_x(11, 0);
    h.set_pc(pc);
    let until = h.cycle() + cycles;
    run_until(h, &mut Dev::default(), until);
    h.x(11)
}

/// A fence of a page no code ran from keeps the block cache's first level
/// (virtual pc to block); one of a code page empties it, also when that
/// page's fetch entry was replaced by another page's (a first-level entry
/// outlives the fetch entry it was made through), so code remapped and
/// fenced runs anew.
#[test]
fn sfence_vma_of_a_code_page_forgets_its_blocks_even_after_a_tlb_eviction() {
    let sfence_a0 = r(0x09, 0, 10, 0, 0, 0x73); // sfence.vma a0, zero
    let (mut h, ram) = hart_with(&[sfence_a0, jal(0, 0)]);
    code_pages(&mut h, &ram);
    let fence = |h: &mut Hart, va: u64| fence_from_m(h, BASE, va);
    assert_eq!(run_code_at(&mut h, 0x4000_3000), 1);
    // a data page's fence: the first level stays
    let vgen = h.blocks.vgen;
    fence(&mut h, 0x4000_1000);
    assert_eq!(
        h.blocks.vgen, vgen,
        "a data page's fence emptied the first level"
    );
    assert_eq!(h.stats().tlb_page_flushes, 1);
    // the other code page takes the first one's fetch entry
    assert_eq!(run_code_at(&mut h, 0x4080_3100), 2);
    // remap the first code page and fence it
    ram.write(BASE + 0x12000 + 24, 8, pte(BASE + 0x32000, 0x4b));
    fence(&mut h, 0x4000_3000);
    assert_eq!(run_code_at(&mut h, 0x4000_3000), 3, "ran the unmapped code");
}

/// Two translated blocks on two code pages jump to each other, chained
/// through their exits' link cells; the first page is then remapped to
/// other code and fenced: the second block's exit must not follow its
/// link into the old code (fails when the link test leaves out the first
/// level's stamp).
#[test]
fn a_linked_exit_into_a_remapped_and_fenced_page_runs_the_new_code() {
    let sfence_a0 = r(0x09, 0, 10, 0, 0, 0x73); // sfence.vma a0, zero
    let (mut h, ram) = hart_with(&[sfence_a0, jal(0, 0)]);
    code_pages(&mut h, &ram);
    // VA 0x4000_4000 (BASE + 0x33000) jumps back to VA 0x4000_3000, whose
    // page's code (either) sets a1 and jumps on to VA 0x4000_4000
    let l0 = BASE + 0x12000;
    ram.write(l0 + 32, 8, pte(BASE + 0x33000, 0x4b));
    ram.write(BASE + 0x33000, 4, jal(0, -0x1000) as u64);
    for (page, value) in [(0x30000, 1), (0x32000, 3)] {
        ram.write(BASE + page, 4, addi(11, 0, value) as u64);
        ram.write(BASE + page + 4, 4, jal(0, 0x1000 - 4) as u64);
    }
    h.set_engine(Engine::Translated);
    h.set_translate_after(1);
    // (long enough for both exits to be linked and followed)
    let run = |h: &mut Hart| run_code_for(h, 0x4000_4000, 400);
    assert_eq!(run(&mut h), 1);
    if cfg!(target_arch = "x86_64") {
        assert!(h.translation_stats().blocks >= 2);
    }
    ram.write(l0 + 24, 8, pte(BASE + 0x32000, 0x4b));
    fence_from_m(&mut h, BASE, 0x4000_3000);
    assert_eq!(run(&mut h), 3, "a linked exit ran the unmapped code");
}

/// One `jalr` calls two functions in turn (a1 += 1 at BASE + 0x200, a2 +=
/// 1 at BASE + 0x8200, whose pcs take the same first-level slot), every
/// block translated: the exit chains into the block the first level holds
/// for the pc only when it holds that pc (fails when translated code's
/// look-up leaves out the pc: calls go where the slot's last one went).
#[test]
fn a_jalr_exit_chains_only_into_the_block_of_its_own_pc() {
    let prog = [
        0x8000_0537,               // lui a0, 0x80000
        i(32, 10, 1, 10, 0x13),    // slli a0, a0, 32
        i(32, 10, 5, 10, 0x13),    // srli a0, a0, 32 -> a0 = BASE
        addi(10, 10, 0x200),       // a0 = BASE + 0x200
        addi(16, 0, 1000),         // a6 = rounds
        i(1, 16, 7, 14, 0x13),     // loop: andi a4, a6, 1
        i(15, 14, 1, 14, 0x13),    // slli a4, a4, 15
        r(0, 14, 10, 0, 15, 0x33), // add a5, a0, a4
        i(0, 15, 0, 1, 0x67),      // jalr ra, 0(a5)
        addi(16, 16, -1),          // a6 -= 1
        b(-20, 0, 16, 1),          // bne a6, zero, loop
        ECALL,
    ];
    let (mut h, ram) = hart_with(&prog);
    for (at, rd) in [(0x200, 11), (0x8200, 12)] {
        ram.write(BASE + at, 4, addi(rd, rd, 1) as u64);
        ram.write(BASE + at + 4, 4, i(0, 1, 0, 0, 0x67) as u64); // ret
    }
    h.set_engine(Engine::Translated);
    h.set_translate_after(1);
    h.csr_write(MTVEC, BASE + 0x100);
    assert_eq!(
        run_until(&mut h, &mut Dev::default(), 10_000_000),
        Exit::Idle
    );
    assert_eq!(h.csr(MCAUSE), Some(CAUSE_MACHINE_ECALL));
    assert_eq!((h.x(11), h.x(12)), (500, 500));
    if cfg!(target_arch = "x86_64") {
        assert!(h.translation_stats().blocks >= 4);
    }
}

/// The TLB's generation wraps after 2,047 whole flushes: a first-level
/// entry stamped with a generation long ago must not match again.
#[test]
fn a_wrapped_tlb_generation_forgets_the_blocks_it_mapped() {
    let (mut h, ram) = hart_with(&[WFI]);
    code_pages(&mut h, &ram);
    assert_eq!(run_code_at(&mut h, 0x4000_3000), 1);
    let stamped = h.tlb.gen_bits;
    // remap without a fence, then flush until the generation comes round
    ram.write(BASE + 0x12000 + 24, 8, pte(BASE + 0x32000, 0x4b));
    let mut flushes = 0;
    loop {
        h.tlb_flush();
        flushes += 1;
        if h.tlb.gen_bits == stamped {
            break;
        }
    }
    assert!(
        flushes > 1000,
        "the generation came round after {flushes} flushes"
    );
    assert_eq!(run_code_at(&mut h, 0x4000_3000), 3, "ran the unmapped code");
}

/// A restored hart knows which superpages its restored TLB entries came
/// from: a fence of one address in one still drops the other pieces.
#[test]
fn a_restored_tlb_still_fences_whole_superpages() {
    let sfence_a0 = r(0x09, 0, 10, 0, 0, 0x73); // sfence.vma a0, zero
    let (mut h, ram) = hart_with(&[sfence_a0, jal(0, 0)]);
    sv39(&mut h, &ram);
    h.set_priv(Priv::Supervisor);
    h.update_modes();
    assert_eq!(h.translate(0x4020_5000, 1, KIND_LOAD), Ok(BASE + 0x205000));
    let state = h.save_state();
    let cfg = HartConfig {
        hart_id: 3,
        cycles_per_tick: 4,
    };
    let mut g = Hart::new(cfg, ram.clone(), Atomic);
    g.restore_state(&state).unwrap();
    // remap the 2 MiB page, fence another address in it (from M-mode)
    ram.write(BASE + 0x11008, 8, pte(BASE + 0x400000, 0xcb));
    fence_from_m(&mut g, BASE, 0x4020_7000);
    assert_eq!(g.translate(0x4020_5000, 1, KIND_LOAD), Ok(BASE + 0x405000));
}

/// A page reader (one translation per page) reads exactly what
/// `read_virt` / `read_kernel_virt` read, in every mode, across pages,
/// through a TLB entry a remap without a fence left stale, and fails where
/// they fail — reusing one reader across pages or not; `bytes` of a
/// fixed length as well.
#[test]
fn page_reader_reads_what_read_virt_reads() {
    let (mut h, ram) = hart_with(&[]);
    sv39(&mut h, &ram);
    ram.write_bytes(BASE + 0x20ff8, b"0123456789abcdef");
    ram.write_bytes(BASE + 0x20010, b"task");
    let probes: [(u64, usize); 9] = [
        (0x4000_0010, 4),
        (0x4000_0ff8, 8),
        (0x4000_0ffc, 8), // across into the U page
        (0x4000_1000, 8),
        (0x4000_3000, 8), // unmapped
        (0x4000_0010, 16),
        (0x4000_0ff8, 16), // a word each side of the S/U page boundary
        (0x4000_2ffc, 8),  // last S page into nothing
        (0x4000_2ff8, 16), // a word in the last S page, one in nothing
    ];
    let check = |h: &Hart| {
        for view in [View::Current, View::Kernel] {
            let mut shared = h.page_reader(view);
            for &(va, len) in &probes {
                let mut want = vec![0u8; len];
                let ok = match view {
                    View::Current => h.read_virt(va, &mut want),
                    View::Kernel => h.read_kernel_virt(va, &mut want),
                }
                .is_ok();
                for reader in [&mut h.page_reader(view), &mut shared] {
                    let mut got = vec![0u8; len];
                    let r = reader.read(va, &mut got);
                    assert_eq!(
                        r.is_some(),
                        ok,
                        "{view:?} {va:#x}+{len} in {:?}",
                        h.priv_mode()
                    );
                    if ok {
                        assert_eq!(got, want, "{view:?} {va:#x}+{len}");
                    }
                    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap());
                    if len == 8 {
                        assert_eq!(
                            reader.u64(va),
                            ok.then(|| word(&want)),
                            "u64 {view:?} {va:#x}"
                        );
                    }
                    if len == 16 {
                        let pair = ok.then(|| (word(&want[..8]), word(&want[8..])));
                        assert_eq!(reader.u64_pair(va), pair, "u64_pair {view:?} {va:#x}");
                    }
                    let fixed = match len {
                        4 => reader.bytes::<4>(va).map(|b| b.to_vec()),
                        8 => reader.bytes::<8>(va).map(|b| b.to_vec()),
                        _ => reader.bytes::<16>(va).map(|b| b.to_vec()),
                    };
                    assert_eq!(
                        fixed,
                        ok.then(|| want.clone()),
                        "bytes {view:?} {va:#x}+{len}"
                    );
                }
            }
        }
    };
    for p in [Priv::Machine, Priv::Supervisor, Priv::User] {
        h.set_priv(p);
        h.update_modes();
        check(&h);
        h.csr_write(SSTATUS, MSTATUS_SUM);
        check(&h);
        h.csr_write(SSTATUS, 0);
    }
    // a stale TLB entry is read as the hart's loads read it
    h.set_priv(Priv::Supervisor);
    h.update_modes();
    assert_eq!(h.translate(0x4000_0010, 4, KIND_LOAD), Ok(BASE + 0x20010));
    ram.write(BASE + 0x12000, 8, ((BASE + 0x23000) >> 12) << 10 | 0xc7);
    check(&h);
    let mut b = [0u8; 4];
    h.page_reader(View::Current)
        .read(0x4000_0010, &mut b)
        .unwrap();
    assert_eq!(&b, b"task");
}

#[test]
fn read_kernel_virt_sees_supervisor_pages_from_any_mode() {
    let (mut h, ram) = hart_with(&[]);
    ram.write_bytes(BASE + 0x20010, b"task");
    let mut buf = [0u8; 4];
    // Translation off: a virtual address means nothing yet.
    assert!(h.read_kernel_virt(0x4000_0010, &mut buf).is_err());
    sv39(&mut h, &ram);
    for p in [Priv::Machine, Priv::User, Priv::Supervisor] {
        h.set_priv(p);
        h.update_modes();
        buf = [0; 4];
        h.read_kernel_virt(0x4000_0010, &mut buf).unwrap();
        assert_eq!(&buf, b"task", "{p:?}");
        // A user page is not the kernel's (no SUM for this view); unmapped fails.
        assert!(h.read_kernel_virt(0x4000_1000, &mut buf).is_err());
        assert!(h.read_kernel_virt(0x4000_3000, &mut buf).is_err());
    }
    // The current privilege's own view differs: U cannot read the S page.
    h.set_priv(Priv::User);
    h.update_modes();
    assert!(h.read_virt(0x4000_0010, &mut buf).is_err());
}

#[test]
fn lr_sc_reservation_and_slices() {
    // a0 = BASE+0x800; lr.d; sc.d (succeeds); lr.d; <slice ends>; sc.d fails
    let prog = [
        0x8000_0537, // lui a0, 0x80000 (sign-extends)
        i(32, 10, 1, 10, 0x13),
        i(32, 10, 5, 10, 0x13),
        addi(10, 10, 0x700),
        addi(10, 10, 0x100),
        lr_d(11, 10),
        addi(11, 11, 1),
        sc_d(12, 11, 10),
        lr_d(13, 10),
        WFI,
        sc_d(14, 11, 10),
        lr_w(15, 11), // misaligned LR (a1 = 1): load-misaligned
        jal(0, 0),
    ];
    let (mut h, ram) = hart_with(&prog);
    h.csr_write(MTVEC, BASE + 0x400);
    assert_eq!(run_until(&mut h, &mut Dev::default(), 1000), Exit::Idle);
    assert_eq!(h.x(12), 0);
    assert_eq!(ram.read(BASE + 0x800, 8), Some(1));
    run_until(&mut h, &mut Dev::default(), 1000);
    assert_eq!(
        h.x(14),
        1,
        "reservation must not survive the end of a slice"
    );
    assert_eq!(ram.read(BASE + 0x800, 8), Some(1));
    assert_eq!(h.csr(MCAUSE), Some(CAUSE_MISALIGNED_LOAD));
    assert_eq!(h.csr(MTVAL), Some(1));
}

#[test]
fn misaligned_sc_and_amo_raise_store_misaligned() {
    let amoadd_w = r(0, 11, 10, 2, 12, 0x2f);
    for insn in [sc_d(12, 0, 10), amoadd_w] {
        // a0 = BASE + 0x802 (lui sign-extends; clear the top)
        let prog = [
            0x8000_0537,
            i(32, 10, 1, 10, 0x13),
            i(32, 10, 5, 10, 0x13),
            addi(10, 10, 0x7ff),
            addi(10, 10, 3),
            insn,
        ];
        let (mut h, ram) = hart_with(&prog);
        ram.write(BASE + 0x800, 8, 0x1111);
        h.csr_write(MTVEC, BASE + 0x400);
        run_until(&mut h, &mut Dev::default(), 100);
        assert_eq!(h.csr(MCAUSE), Some(CAUSE_MISALIGNED_STORE), "{insn:08x}");
        assert_eq!(
            (h.csr(MEPC), h.csr(MTVAL)),
            (Some(BASE + 20), Some(BASE + 0x802))
        );
        assert_eq!(ram.read(BASE + 0x800, 8), Some(0x1111));
    }
}

#[test]
fn code_written_by_others_runs_after_fence_i() {
    // loop: addi a0, a0, 1; fence.i; j loop -- then the addi is rewritten
    // the way another hart or a DMA engine would (GuestRam logs the write)
    let (mut a, ram) = hart_with(&[addi(10, 10, 1), FENCE_I, jal(0, -8)]);
    run_until(&mut a, &mut Dev::default(), 30);
    let before = a.x(10);
    assert!(before >= 9);
    ram.write(BASE, 4, addi(10, 10, 100) as u64);
    run_until(&mut a, &mut Dev::default(), 60);
    let gained = a.x(10) - before;
    assert!(gained >= 100 * 9, "patched code did not run: +{gained}");
    assert!(a.stats().code_invalidations >= 1);
}

#[test]
fn own_store_to_code_then_fence_i() {
    let prog = [
        0x8000_0637,               // 0: lui a2, 0x80000
        i(32, 12, 1, 12, 0x13),    // 1: slli a2, a2, 32
        i(32, 12, 5, 12, 0x13),    // 2: srli a2, a2, 32
        i(0x400, 12, 2, 11, 0x03), // 3: lw a1, 0x400(a2)
        addi(10, 10, 1),           // 4: patched to addi a0, a0, 5
        b(20, 0, 13, 1),           // 5: bne a3, zero, 10
        addi(13, 0, 1),            // 6: a3 = 1
        sw(11, 12, 16),            // 7: store the patch over 4
        FENCE_I,                   // 8
        jal(0, -20),               // 9: back to 4
        jal(0, 0),                 // 10
    ];
    let (mut h, ram) = hart_with(&prog);
    ram.write(BASE + 0x400, 4, addi(10, 10, 5) as u64);
    run_until(&mut h, &mut Dev::default(), 40);
    assert_eq!(h.x(10), 6);
}

/// The page stored to in the two tests below (its word at +0x400).
const STORED: u64 = BASE + 0x3000;
/// a2 = STORED, a1 = 7 (the word stored)
fn set_stored() -> Vec<u32> {
    vec![
        0x8000_3637,            // lui a2, 0x80003
        i(32, 12, 1, 12, 0x13), // slli a2, a2, 32
        i(32, 12, 5, 12, 0x13), // srli a2, a2, 32
        addi(11, 0, 7),         // a1 = 7
    ]
}

/// A hart's store entry for a page, filled while the page held no code,
/// must not let its stores skip the block cache once another hart has
/// decoded code from that page: the writer's next store marks the page
/// written (so the decoding hart drops its blocks), under every engine.
#[test]
fn a_store_to_a_page_another_hart_made_code_is_noticed() {
    for engine in [Engine::Reference, Engine::Blocks, Engine::Translated] {
        // the writer, at BASE: store to STORED + 0x400 forever
        let mut prog = set_stored();
        prog.extend([sw(11, 12, 0x400), jal(0, -4)]);
        let (mut writer, ram) = hart_with(&prog);
        // the runner's code, on the stored page: a loop
        ram.write(STORED, 4, addi(10, 10, 1) as u64);
        ram.write(STORED + 4, 4, jal(0, -4) as u64);
        let mut runner = Hart::new(
            HartConfig {
                hart_id: 4,
                cycles_per_tick: 4,
            },
            ram.clone(),
            Atomic,
        );
        runner.reset(STORED);
        for h in [&mut writer, &mut runner] {
            h.set_engine(engine);
            h.set_translate_after(1);
        }
        // the writer's store entry is filled: the page is no code yet
        run_until(&mut writer, &mut Dev::default(), 2_000);
        assert!(!ram.is_code(STORED), "{engine:?}");
        run_until(&mut runner, &mut Dev::default(), 2_000);
        assert!(ram.is_code(STORED), "{engine:?}");
        let gen = ram.code_generation();
        // the writer's next slice: its first store must be seen
        run_until(&mut writer, &mut Dev::default(), 4_000);
        assert!(
            !ram.is_code(STORED),
            "{engine:?}: a store skipped the code check"
        );
        assert!(ram.code_generation() > gen, "{engine:?}");
    }
}

/// The same within one slice of one hart: it stores to a page (filling
/// its store entry), jumps to code on that page (decoding it) and stores
/// again from there, which must be seen.
#[test]
fn a_store_to_a_page_the_hart_just_made_code_is_noticed() {
    for engine in [Engine::Reference, Engine::Blocks, Engine::Translated] {
        let mut prog = set_stored();
        prog.extend([sw(11, 12, 0x400), i(0, 12, 0, 0, 0x67)]); // jr a2
        let (mut h, ram) = hart_with(&prog);
        ram.write(STORED, 4, sw(11, 12, 0x400) as u64);
        ram.write(STORED + 4, 4, jal(0, 0) as u64);
        h.set_engine(engine);
        h.set_translate_after(1);
        run_until(&mut h, &mut Dev::default(), 2_000);
        assert_eq!(h.pc, STORED + 4, "{engine:?}");
        assert!(
            ram.code_generation() > 0,
            "{engine:?}: a store skipped the code check"
        );
    }
}

/// A failed `sc` fills the store entry of a code page without writing
/// it: the page stays code, so the entry must keep the next store (a
/// plain one) off the fast path.
#[test]
fn a_store_after_a_failed_sc_to_a_code_page_is_noticed() {
    for engine in [Engine::Reference, Engine::Blocks, Engine::Translated] {
        let mut prog = set_stored();
        prog.push(i(0, 12, 0, 0, 0x67)); // jr a2
        let (mut h, ram) = hart_with(&prog);
        ram.write(STORED, 4, sc_d(13, 11, 12) as u64); // no reservation: fails
        ram.write(STORED + 4, 4, sw(11, 12, 0x400) as u64);
        ram.write(STORED + 8, 4, jal(0, 0) as u64);
        h.set_engine(engine);
        h.set_translate_after(1);
        run_until(&mut h, &mut Dev::default(), 2_000);
        assert_eq!((h.pc, h.x(13)), (STORED + 8, 1), "{engine:?}");
        assert!(
            ram.code_generation() > 0,
            "{engine:?}: a store skipped the code check"
        );
    }
}

/// The list of store entries `flag_code_stores` looks through, emptied of
/// replaced entries when it grows long, keeps every live one (flagged or
/// not): one it lost would let stores to a page made code skip the check.
#[test]
fn the_store_fill_list_keeps_every_live_store_entry() {
    let mut t = Tlb::new();
    let gen = t.gen_bits;
    let live = [(0, 5, 0), (1, 7, TLB_CODE), (3, TLB_SIZE - 1, 0)];
    for &(ctx, slot, flag) in &live {
        t.e[KIND_STORE][ctx][slot] = TlbEntry {
            tag: slot as u64 | gen | flag,
            addend: 0,
        };
        t.note_store_fill(ctx, slot);
    }
    // (an entry of an old generation, and one of a device, are not live)
    t.e[KIND_STORE][2][9].tag = 9 | (gen + (1 << 52));
    t.e[KIND_STORE][2][10].tag = 10 | gen | TLB_MMIO;
    for _ in 0..5 * TLB_SIZE {
        t.note_store_fill(2, 9);
    }
    assert!(t.store_fills.len() <= 4 * TLB_SIZE);
    for &(ctx, slot, _) in &live {
        assert!(t.store_fills.contains(&((ctx * TLB_SIZE + slot) as u16)));
    }
    let dropped = (2 * TLB_SIZE + 10) as u16;
    assert!(!t.store_fills.contains(&dropped));
}

/// Guest code patched and run again 2,000 times, every block translated
/// on its first run, with the smallest block cache: each round decodes
/// the page's blocks afresh, and every ~90 rounds the full cache empties
/// every translation. What runs is what the guest wrote last (the test
/// fails when emptying the block cache leaves translations behind).
#[test]
fn patched_code_runs_as_written_across_translation_resets() {
    let prog = [
        0x8000_0637,               // 0: lui a2, 0x80000
        i(32, 12, 1, 12, 0x13),    // 1: slli a2, a2, 32
        i(32, 12, 5, 12, 0x13),    // 2: srli a2, a2, 32 -> a2 = BASE
        addi(13, 0, 0),            // 3: a3 = 0 (the immediate)
        addi(16, 0, 2000),         // 4: a6 = rounds
        addi(13, 13, 1),           // 5: loop: a3 += 1
        i(0x600, 12, 2, 11, 0x03), // 6: lw a1, 0x600(a2) (addi a0, a0, 0)
        i(20, 13, 1, 14, 0x13),    // 7: slli a4, a3, 20
        r(0, 14, 11, 6, 11, 0x33), // 8: or a1, a1, a4
        sw(11, 12, 0x200),         // 9: patch BASE + 0x200
        FENCE_I,                   // 10
        jal(1, 0x200 - 44),        // 11: call BASE + 0x200
        addi(16, 16, -1),          // 12
        b(-32, 0, 16, 1),          // 13: bne a6, zero, loop
        ECALL,                     // 14
    ];
    let (mut h, ram) = hart_with(&prog);
    ram.write(BASE + 0x200, 4, addi(10, 10, 0) as u64);
    ram.write(BASE + 0x204, 4, i(0, 1, 0, 0, 0x67) as u64); // ret
    ram.write(BASE + 0x600, 4, addi(10, 10, 0) as u64);
    h.set_engine(Engine::Translated);
    h.set_translate_after(1);
    h.set_block_cache_ops(0); // (clamped to the smallest)
    h.csr_write(MTVEC, BASE + 0x100);
    assert_eq!(
        run_until(&mut h, &mut Dev::default(), 10_000_000),
        Exit::Idle
    );
    assert_eq!(h.csr(MCAUSE), Some(CAUSE_MACHINE_ECALL));
    assert_eq!(h.x(10), 2000 * 2001 / 2);
    if cfg!(target_arch = "x86_64") {
        // (each round translates the page's blocks anew, and the smallest
        // block cache empties every translation about every 90 rounds)
        let t = h.translation_stats();
        assert!(t.blocks >= 8000 && t.flushes >= 20, "{t:?}");
    }
}

/// The block interpreter counts the instructions it retires, across
/// chained blocks and up to an op that traps: every one of them with the
/// block engine; with the translating engine only the runs before the loop
/// turns hot (fails when a chain, a block's end or a trap is not counted,
/// or the op that trapped is).
#[test]
fn the_interpreter_counts_what_it_retires() {
    let prog = [
        addi(10, 0, 0),    // 0: a0 = 0
        addi(11, 0, 1000), // 1: a1 = 1000
        addi(10, 10, 1),   // 2: loop: a0 += 1
        addi(11, 11, -1),  // 3
        b(-8, 0, 11, 1),   // 4: bne a1, zero, loop
        addi(12, 0, 7),    // 5: a2 = 7 (a not-taken branch ends no block)
        ECALL,             // 6: traps (to a wfi that idles)
    ];
    for (engine, after) in [(Engine::Blocks, 1024), (Engine::Translated, 16)] {
        let (mut h, _) = hart_with(&prog);
        h.set_engine(engine);
        h.set_translate_after(after);
        h.csr_write(MTVEC, BASE + 0x100);
        assert_eq!(
            run_until(&mut h, &mut Dev::default(), 1_000_000),
            Exit::Idle
        );
        assert_eq!((h.x(10), h.x(12)), (1000, 7));
        let interpreted = h.translation_stats().interpreted;
        if engine == Engine::Blocks || !cfg!(target_arch = "x86_64") {
            assert_eq!(interpreted, h.instret(), "{engine:?}");
        } else {
            // the first block up to its taken branch (the two ops before
            // the loop and its first round), the loop block's next 15 runs
            // (the 16th is translated first, and runs on through the
            // ecall) and the wfi's block
            assert_eq!(interpreted, 5 + 15 * 3 + 1, "of {}", h.instret());
        }
    }
}

#[test]
fn ebreak_and_ecall_causes() {
    let (mut h, _) = hart_with(&[EBREAK]);
    h.csr_write(MTVEC, BASE + 0x400);
    run_until(&mut h, &mut Dev::default(), 2);
    assert_eq!(
        (h.csr(MCAUSE), h.csr(MTVAL)),
        (Some(CAUSE_BREAKPOINT), Some(BASE))
    );
    let (mut h, _) = hart_with(&[ECALL]);
    h.csr_write(MTVEC, BASE + 0x400);
    run_until(&mut h, &mut Dev::default(), 2);
    assert_eq!(h.csr(MCAUSE), Some(CAUSE_MACHINE_ECALL));
}

#[test]
fn csr_instructions_in_guest_code() {
    // csrrw a0, mscratch, a1 with a1 = 9; csrrs a2, mscratch, x0
    let (mut h, _) = hart_with(&[
        addi(11, 0, 9),
        csrrw(10, MSCRATCH, 11),
        csrrs(12, MSCRATCH, 0),
        WFI,
    ]);
    h.csr_write(MSCRATCH, 4);
    assert_eq!(run_until(&mut h, &mut Dev::default(), 100), Exit::Idle);
    assert_eq!((h.x(10), h.x(12)), (4, 9));
}

/// Counts every hook and charges 2 extra cycles per data load.
#[derive(Default)]
struct Counting {
    insns: u64,
    fetches: u64,
    loads: u64,
    stores: u64,
    branches: u64,
    taken: u64,
    traps: u64,
    csrs: u64,
}
impl TimingModel for Counting {
    fn fetch(&mut self, pc: u64, pa: u64, len: u8) -> u64 {
        assert_eq!((pc, len), (pa, 4)); // bare translation, no compressed code
        self.fetches += 1;
        0
    }
    fn insn(&mut self, _pc: u64, _class: hs_timing::InsnClass, _ops: hs_timing::Operands) -> u64 {
        self.insns += 1;
        0
    }
    fn mem(&mut self, _va: u64, _pa: u64, _size: u8, kind: hs_timing::MemKind, _mmio: bool) -> u64 {
        match kind {
            hs_timing::MemKind::Fetch => panic!("the hart reports fetches through fetch()"),
            hs_timing::MemKind::Load => {
                self.loads += 1;
                return 2;
            }
            hs_timing::MemKind::Store => self.stores += 1,
            hs_timing::MemKind::Walk => {}
        }
        0
    }
    fn branch(&mut self, _pc: u64, taken: bool, _target: u64) -> u64 {
        self.branches += 1;
        self.taken += taken as u64;
        0
    }
    fn trap(&mut self, _cause: u64, _irq: bool) -> u64 {
        self.traps += 1;
        0
    }
    fn csr(&mut self, _csr: u16, _write: bool) -> u64 {
        self.csrs += 1;
        0
    }
}

#[test]
fn timing_hooks_see_every_event_and_charge_cycles() {
    // 10 iterations of: ld; sd; addi; bne  then csrr; ecall -> handler WFI
    let prog = [
        0x8000_0537,            // lui a0, 0x80000
        i(32, 10, 1, 10, 0x13), // slli
        i(32, 10, 5, 10, 0x13), // srli  -> a0 = BASE
        addi(12, 0, 10),        // a2 = 10
        ld(11, 10, 0x200),      // loop:
        sd(11, 10, 0x208),
        addi(12, 12, -1),
        b(-12, 0, 12, 1), // bne a2, zero, loop
        csrrs(13, MSCRATCH, 0),
        ECALL,
    ];
    let ram = GuestRam::new(BASE, 1 << 20).unwrap();
    for (k, w) in prog.iter().enumerate() {
        ram.write(BASE + 4 * k as u64, 4, *w as u64);
    }
    ram.write(BASE + 0x100, 4, WFI as u64);
    let mut h = Hart::new(
        HartConfig {
            hart_id: 0,
            cycles_per_tick: 1,
        },
        ram,
        Counting::default(),
    );
    h.reset(BASE);
    h.csr_write(MTVEC, BASE + 0x100);
    assert_eq!(h.run(&mut Dev::default(), 10_000), Exit::Idle);
    let t = &h.timing;
    // 4 + 40 + csrr retired, ecall trapped, WFI retired
    assert_eq!(h.instret(), 4 + 40 + 1 + 1);
    assert_eq!(t.insns, 4 + 40 + 1 + 1 + 1);
    assert_eq!(t.fetches, t.insns);
    assert_eq!((t.loads, t.stores), (10, 10));
    assert_eq!((t.branches, t.taken), (10, 9));
    assert_eq!((t.traps, t.csrs), (1, 1));
    // one cycle per instruction (the trapping one too) plus 2 per load
    assert_eq!(h.cycle(), t.insns + 2 * 10);
}

/// Records the hooks added for observation, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    Trap(TrapInfo),
    Xret(u64, u8, u8),
    CsrWrite(u16, u64),
    Wfi(u64),
    Walk(u64),
}
#[derive(Default)]
struct Recording {
    evs: Vec<Ev>,
    /// What `hpm_counter` reports for event 7 (0 for any other event).
    count7: u64,
}
impl TimingModel for Recording {
    fn mem(&mut self, _va: u64, pa: u64, _size: u8, kind: hs_timing::MemKind, _mmio: bool) -> u64 {
        if kind == hs_timing::MemKind::Walk {
            self.evs.push(Ev::Walk(pa));
        }
        0
    }
    fn trap_info(&mut self, t: &TrapInfo) {
        self.evs.push(Ev::Trap(*t));
    }
    fn xret(&mut self, new_pc: u64, from: u8, to: u8) -> u64 {
        self.evs.push(Ev::Xret(new_pc, from, to));
        5
    }
    fn csr_write(&mut self, csr: u16, value: u64) {
        self.evs.push(Ev::CsrWrite(csr, value));
    }
    fn wfi(&mut self, pc: u64) {
        self.evs.push(Ev::Wfi(pc));
    }
    fn hpm_counter(&self, _index: u16, event: u64) -> u64 {
        if event == 7 {
            self.count7
        } else {
            0
        }
    }
}

fn recording_hart(prog: &[u32]) -> (Hart<Recording>, GuestRam) {
    model_hart(prog, Recording::default())
}

/// As [`hart_with`], timed by `model`, one cycle a tick.
fn model_hart<T: TimingModel>(prog: &[u32], model: T) -> (Hart<T>, GuestRam) {
    let (_, ram) = hart_with(prog);
    let mut h = Hart::new(
        HartConfig {
            hart_id: 0,
            cycles_per_tick: 1,
        },
        ram.clone(),
        model,
    );
    h.reset(BASE);
    (h, ram)
}

/// User code at `BASE + 0x40`: M-mode code that puts its address in
/// `mepc` (and `a0`), for an `mret` to go there.
const USER: u64 = BASE + 0x40;
fn mepc_to_user() -> Vec<u32> {
    vec![
        0x8000_0537,            // lui a0, 0x80000
        i(32, 10, 1, 10, 0x13), // slli
        i(32, 10, 5, 10, 0x13), // srli  -> a0 = BASE
        addi(10, 10, 0x40),     // a0 = user
        csrrw(0, MEPC, 10),
    ]
}

/// Traps to the handler at `BASE + 0x100`; U-mode may touch all memory.
fn trap_to_handler_and_open_pmp<T: TimingModel>(h: &mut Hart<T>) {
    h.csr_write(MTVEC, BASE + 0x100);
    h.csr_write(PMPADDR0, u64::MAX);
    h.csr_write(PMPCFG0, 0x1f);
}

#[test]
fn hooks_report_xret_trap_details_csr_writes_and_wfi() {
    // M: mepc = user code; mret (MPP = U) -> U: a7 = 172; ecall -> M handler WFI
    let user = USER;
    let mut prog = mepc_to_user();
    prog.extend([
        addi(11, 0, 1),
        i(63, 11, 1, 11, 0x13), // slli a1, a1, 63
        i(1, 11, 5, 11, 0x13),  // srli a1, a1, 1: bit 62 -> mode 4 (unsupported)
        csrrw(0, SATP, 11),     // ignored, not reported
        0x3020_0073,            // mret
    ]);
    prog.resize(0x10, 0);
    prog.push(addi(17, 0, 172)); // at BASE + 0x40
    prog.push(ECALL);
    let (mut h, _) = recording_hart(&prog);
    trap_to_handler_and_open_pmp(&mut h);
    assert_eq!(h.run(&mut Dev::default(), 1000), Exit::Idle);
    let trap = TrapInfo {
        cause: CAUSE_USER_ECALL,
        interrupt: false,
        epc: user + 4,
        tval: 0,
        from: 0,
        to: 3,
        a7: 172,
    };
    assert_eq!(
        h.timing.evs,
        vec![
            Ev::CsrWrite(MEPC, user),
            Ev::Xret(user, 3, 0),
            Ev::Trap(trap),
            Ev::Wfi(BASE + 0x100)
        ]
    );
    assert_eq!(h.csr(SATP), Some(0));
    // 10 + 1 instructions retired, ecall trapped, WFI retired; mret charged 5
    assert_eq!(h.instret(), 12);
    assert_eq!(h.cycle(), 13 + 5);
}

/// Charges on every hook and keeps the cursor an observer used to keep
/// per instruction (1 + every hook's cost); each `clock` the hart gives
/// before a trap, an `xret` or a `csr_write` must say the same.
#[derive(Default)]
struct Clocked {
    start: u64,
    cursor: u64,
    told: Option<(u64, u64)>,
    /// Hooks checked against a clock, and what disagreed.
    checked: u64,
    wrong: Vec<String>,
}
impl Clocked {
    fn check(&mut self, what: &str, want: (u64, u64)) {
        self.checked += 1;
        let told = self.told.take();
        if told != Some(want) {
            self.wrong
                .push(format!("{what}: told {told:?}, cursor says {want:?}"));
        }
    }
}
impl TimingModel for Clocked {
    fn fetch(&mut self, _pc: u64, _pa: u64, _len: u8) -> u64 {
        self.start = self.cursor;
        self.cursor += 1 + 1;
        1
    }
    fn insn(&mut self, _pc: u64, _class: hs_timing::InsnClass, _ops: hs_timing::Operands) -> u64 {
        self.cursor += 2;
        2
    }
    fn mem(
        &mut self,
        _va: u64,
        _pa: u64,
        _size: u8,
        _kind: hs_timing::MemKind,
        _mmio: bool,
    ) -> u64 {
        self.cursor += 3;
        3
    }
    fn branch(&mut self, _pc: u64, _taken: bool, _target: u64) -> u64 {
        self.cursor += 1;
        1
    }
    fn csr(&mut self, _csr: u16, _write: bool) -> u64 {
        self.cursor += 4;
        4
    }
    fn clock(&mut self, start: u64, now: u64) {
        self.told = Some((start, now));
    }
    fn trap(&mut self, cause: u64, interrupt: bool) -> u64 {
        // interrupts and fetch faults come between instructions
        if interrupt || cause == CAUSE_FETCH_ACCESS {
            self.check("trap between instructions", (self.cursor, self.cursor));
            self.start = self.cursor;
            self.cursor += 1;
        } else {
            self.check("exception", (self.start, self.cursor));
        }
        self.cursor += 6;
        6
    }
    fn xret(&mut self, _new_pc: u64, _from: u8, _to: u8) -> u64 {
        self.check("xret", (self.start, self.cursor));
        self.cursor += 5;
        5
    }
    fn csr_write(&mut self, _csr: u16, _value: u64) {
        self.check("csr_write", (self.start, self.cursor));
    }
}

#[test]
fn the_clock_a_hart_gives_its_model_is_where_the_hooks_costs_add_up_to() {
    // M: mepc = user code; mret -> U: load, branch, ecall -> M handler:
    // mscratch write, then an illegal instruction (trapping to itself
    // until the budget ends)
    let mut prog = mepc_to_user();
    prog.push(0x3020_0073); // mret
    prog.resize(0x10, 0);
    prog.push(ld(12, 10, 0x100)); // at BASE + 0x40
    prog.push(b(8, 0, 12, 1)); // bne a2, zero, +8 (taken: the handler's word is not 0)
    prog.push(0);
    prog.push(addi(17, 0, 172));
    prog.push(ECALL);
    prog.resize(0x40, 0);
    prog.push(csrrw(0, MSCRATCH, 10)); // at BASE + 0x100: the handler
    for engine in [Engine::Blocks, Engine::Reference] {
        let (mut h, _) = model_hart(&prog, Clocked::default());
        h.set_engine(engine);
        trap_to_handler_and_open_pmp(&mut h);
        h.run(&mut Dev::default(), 300);
        // an interrupt, taken between instructions
        h.csr_write(MIE, 1 << IRQ_M_SOFT);
        h.csr_write(MSTATUS, h.csr(MSTATUS).unwrap() | MSTATUS_MIE);
        h.set_platform_irqs(1 << IRQ_M_SOFT);
        let until = h.cycle() + 100;
        h.run(&mut Dev::default(), until);
        h.set_platform_irqs(0);
        // a fetch fault: nothing is there to fetch
        h.set_pc(0x1000);
        let until = h.cycle() + 100;
        h.run(&mut Dev::default(), until);
        let t = &h.timing;
        assert_eq!(t.wrong, Vec::<String>::new(), "{engine:?}");
        // xret, csr_write (mepc and mscratch), ecall, illegal traps, the
        // interrupt, the fetch fault
        assert!(t.checked >= 8, "{engine:?}: {} hooks checked", t.checked);
        assert_eq!(h.cycle(), t.cursor, "{engine:?}");
    }
}

#[test]
fn page_walks_report_pte_reads_then_the_accessed_dirty_write() {
    let (mut h, ram) = recording_hart(&[]);
    sv39(&mut h, &ram);
    h.set_priv(Priv::Supervisor);
    h.update_modes();
    h.timing.evs.clear();
    let (root, l1, l0) = (BASE + 0x10000, BASE + 0x11000, BASE + 0x12000);
    assert_eq!(h.translate(0x4000_0123, 8, KIND_STORE), Ok(BASE + 0x20123));
    assert_eq!(
        h.timing.evs,
        vec![Ev::Walk(root + 8), Ev::Walk(l1), Ev::Walk(l0), Ev::Walk(l0)]
    );
    // A and D already set: no write
    h.timing.evs.clear();
    h.tlb_flush();
    assert_eq!(h.translate(0x4000_0456, 8, KIND_STORE), Ok(BASE + 0x20456));
    assert_eq!(
        h.timing.evs,
        vec![Ev::Walk(root + 8), Ev::Walk(l1), Ev::Walk(l0)]
    );
}

#[test]
fn hpm_counters_follow_the_model_with_writes_events_and_inhibit() {
    let (mut h, _) = recording_hart(&[]);
    h.timing.count7 = 100;
    let read = |h: &Hart<Recording>| (h.csr(MHPMCOUNTER3), h.csr(0xc03));
    assert_eq!(read(&h), (Some(0), Some(0)));
    h.csr_write(MHPMEVENT3, 7);
    assert_eq!(h.csr(MHPMEVENT3), Some(7));
    assert_eq!(read(&h), (Some(0), Some(0))); // keeps its value across the event change
    h.timing.count7 = 150;
    assert_eq!(read(&h), (Some(50), Some(50)));
    h.csr_write(MHPMCOUNTER3, 1000);
    h.timing.count7 = 160;
    assert_eq!(read(&h), (Some(1010), Some(1010)));
    // counter 4 on another event does not move
    h.csr_write(MHPMEVENT3 + 1, 3);
    assert_eq!(h.csr(MHPMCOUNTER3 + 1), Some(0));
    // inhibited: frozen, and writable while frozen
    h.csr_write(MCOUNTINHIBIT, 1 << 3);
    h.timing.count7 = 200;
    assert_eq!(read(&h), (Some(1010), Some(1010)));
    h.csr_write(MHPMCOUNTER3, 2000);
    h.timing.count7 = 300;
    h.csr_write(MCOUNTINHIBIT, 0);
    h.timing.count7 = 310;
    assert_eq!(read(&h), (Some(2010), Some(2010)));
    // OpenSBI's probe: write 1, read back 1 (event 0 counts nothing)
    h.csr_write(MHPMCOUNTER3 + 2, 1);
    assert_eq!(h.csr(MHPMCOUNTER3 + 2), Some(1));
}

#[test]
fn sscofpmf_overflow_sets_of_raises_lcofi_and_modes_filter_counting() {
    let (mut h, _) = recording_hart(&[]);
    // Counter 3 counts event 7, not in M-mode; 10 events from overflow.
    h.csr_write(MHPMEVENT3, 7 | MHPMEVENT_MINH);
    h.csr_write(MHPMCOUNTER3, u64::MAX - 9);
    h.set_priv(Priv::Supervisor);
    h.timing.count7 = 5;
    h.check_hpm_overflow();
    assert_eq!(h.csr(MHPMCOUNTER3), Some(u64::MAX - 4));
    assert_eq!(h.csr(SCOUNTOVF), Some(0));
    assert_eq!(h.csr(MIP).unwrap() & MIP_LCOFIP, 0);
    // In M-mode (MINH) it stops counting.
    h.set_priv(Priv::Machine);
    h.timing.count7 = 8;
    assert_eq!(h.csr(MHPMCOUNTER3), Some(u64::MAX - 4));
    h.set_priv(Priv::Supervisor);
    h.timing.count7 = 14; // 6 more: wrapped to 1
    h.check_hpm_overflow();
    assert_eq!(h.csr(MHPMCOUNTER3), Some(1));
    assert_ne!(h.csr(MHPMEVENT3).unwrap() & MHPMEVENT_OF, 0, "OF set");
    assert_ne!(h.csr(MIP).unwrap() & MIP_LCOFIP, 0, "LCOFIP raised");
    // scountovf shows OF to M, and to S only where mcounteren allows.
    h.set_priv(Priv::Machine);
    assert_eq!(h.csr(SCOUNTOVF), Some(1 << 3));
    h.set_priv(Priv::Supervisor);
    assert_eq!(h.csr(SCOUNTOVF), Some(0));
    h.set_priv(Priv::Machine);
    h.csr_write(MCOUNTEREN, 1 << 3);
    h.set_priv(Priv::Supervisor);
    assert_eq!(h.csr(SCOUNTOVF), Some(1 << 3));
    // Delegated, S clears LCOFIP through sip; a second wrap with OF still
    // set raises nothing.
    h.set_priv(Priv::Machine);
    h.csr_write(MIDELEG, MIP_LCOFIP);
    h.csr_write(SIP, 0);
    assert_eq!(h.csr(MIP).unwrap() & MIP_LCOFIP, 0);
    h.csr_write(MHPMCOUNTER3, u64::MAX);
    h.set_priv(Priv::Supervisor);
    h.timing.count7 = 20;
    h.check_hpm_overflow();
    assert_eq!(h.csr(MIP).unwrap() & MIP_LCOFIP, 0);
    // Clearing OF (as the SBI does on counter start) re-arms it.
    h.set_priv(Priv::Machine);
    h.csr_write(MHPMEVENT3, 7 | MHPMEVENT_MINH);
    h.csr_write(MHPMCOUNTER3, u64::MAX);
    h.set_priv(Priv::Supervisor);
    h.timing.count7 = 22;
    h.check_hpm_overflow();
    assert_ne!(h.csr(MIP).unwrap() & MIP_LCOFIP, 0);
    // U-mode cannot read scountovf.
    h.set_priv(Priv::User);
    assert!(h.csr_op(SCOUNTOVF, 1, 0, false, 0).is_err());
}

fn inorder_hart(prog: &[u32]) -> Hart<hs_timing::InOrder> {
    let (_, ram) = hart_with(prog);
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../machines/inorder.toml");
    let hs_timing::ModelDesc::InOrder(cfg) = hs_timing::MachineDesc::load(&p).unwrap().model else {
        panic!("inorder preset is not inorder")
    };
    let mut h = Hart::new(
        HartConfig {
            hart_id: 0,
            cycles_per_tick: 1,
        },
        ram,
        hs_timing::InOrderFactory::new(&cfg).build(),
    );
    h.reset(BASE);
    h
}

/// Translated code finds the model's branch counter table through the
/// hart, asked each time it is entered: a model restored mid-run (a new
/// table) goes on exactly as one that was not, every block translated.
#[test]
fn a_restored_inorder_model_goes_on_as_one_that_was_not() {
    // 3,000 rounds of a branch taken one round in four, then ecall
    let prog = [
        addi(12, 0, 1500),
        i(1, 12, 1, 12, 0x13), // slli a2, a2, 1
        addi(13, 0, 0),
        addi(13, 13, 1),       // loop: a3 += 1
        i(3, 13, 7, 14, 0x13), // andi a4, a3, 3
        b(8, 0, 14, 0),        // beq a4, zero, +8
        addi(15, 15, 1),       // a5 += 1
        addi(12, 12, -1),      // a2 -= 1
        b(-20, 0, 12, 1),      // bne a2, zero, loop
        ECALL,
    ];
    let run = |restore_at: Option<u64>| {
        let mut h = inorder_hart(&prog);
        h.set_translate_after(1);
        h.csr_write(MTVEC, BASE + 0x100);
        let mut dev = Dev::default();
        if let Some(at) = restore_at {
            assert_eq!(h.run(&mut dev, at), Exit::Budget);
            let saved = h.timing.save_state(true).unwrap().unwrap();
            h.timing.restore_state(&saved, true).unwrap();
        }
        assert_eq!(h.run(&mut dev, 10_000_000), Exit::Idle);
        assert!(h.translation_stats().blocks >= 2);
        // (the saved state holds the counter table itself)
        let state = h.timing.save_state(true).unwrap().unwrap();
        (h.cycle(), h.x(15), h.timing.model_stats(), state)
    };
    let straight = run(None);
    assert_eq!(straight.1, 2250);
    for at in [200, 500, 7_000] {
        assert!(run(Some(at)) == straight, "restored at cycle {at}");
    }
}

#[test]
fn inorder_model_accounts_for_every_cycle_and_feeds_hpm_counters() {
    // mhpmevent3 = L1D read misses; loop 200x: ld (stride 64 over 32 KiB) ; addi ; bne; then csrr a5, mhpmcounter3; ecall
    let l1d_read_miss = hs_timing::event::cache(
        hs_timing::event::L1D,
        hs_timing::event::READ,
        hs_timing::event::MISS,
    );
    let prog = [
        0x8000_0537,                               // lui a0, 0x80000
        i(32, 10, 1, 10, 0x13),                    // slli
        i(32, 10, 5, 10, 0x13),                    // srli  -> a0 = BASE
        0x0001_0737,                               // lui a4, 0x10   (a4 = 64 KiB)
        r(0, 14, 10, 0, 10, 0x33),                 // add a0, a0, a4 -> data at BASE + 64 KiB
        addi(12, 0, 200),                          // a2 = 200
        addi(13, 0, l1d_read_miss as i32 & 0x7ff), // low bits of the selector
        0x0001_07b7,                               // lui a5, 0x10 -> 0x10000
        r(0, 15, 13, 6, 13, 0x33),                 // or a3, a3, a5
        csrrw(0, MHPMEVENT3, 13),
        ld(11, 10, 0),          // loop:
        i(64, 10, 0, 10, 0x13), // addi a0, a0, 64
        addi(12, 12, -1),
        b(-12, 0, 12, 1), // bne a2, zero, loop
        csrrs(15, MHPMCOUNTER3, 0),
        ECALL,
    ];
    let mut h = inorder_hart(&prog);
    h.csr_write(MTVEC, BASE + 0x100);
    assert_eq!(h.run(&mut Dev::default(), 1_000_000), Exit::Idle);
    let s = h.timing.model_stats().unwrap();
    assert_eq!(
        s.get("cycles.busy"),
        Some(h.cycle()),
        "every cycle is in the cycle shape"
    );
    assert_eq!(
        h.x(15),
        200,
        "one L1D miss per loop iteration, read through mhpmcounter3"
    );
    assert_eq!(s.get("dcache.read_misses"), Some(200));
    assert!(
        h.cycle() > 200 * 60,
        "the misses went to memory: {}",
        h.cycle()
    );
    // the same program twice gives the same counts
    let mut h2 = inorder_hart(&prog);
    h2.csr_write(MTVEC, BASE + 0x100);
    h2.run(&mut Dev::default(), 1_000_000);
    assert_eq!((h2.cycle(), h2.timing.model_stats()), (h.cycle(), Some(s)));
}

#[test]
fn operands_name_the_registers_each_instruction_reads_and_writes() {
    use crate::exec::operands_of;
    use hs_timing::Operands;
    let n = Operands::NONE;
    let ops = |w: u32| operands_of(&hs_isa::decode(w).0);
    // add x3, x1, x2
    assert_eq!(
        ops(0x0020_81b3),
        Operands {
            dst: 3,
            src: [1, 2, n],
            flags: 0
        }
    );
    // ld x5, 8(x10): the base first
    assert_eq!(
        ops(0x0085_3283),
        Operands {
            dst: 5,
            src: [10, n, n],
            flags: 0
        }
    );
    // sd x6, 16(x11): base, then data
    assert_eq!(
        ops(0x0065_b823),
        Operands {
            dst: n,
            src: [11, 6, n],
            flags: 0
        }
    );
    // fadd.d f1, f2, f3: FP registers are 32..63, double is wide
    assert_eq!(
        ops(0x0231_00d3),
        Operands {
            dst: 33,
            src: [34, 35, n],
            flags: Operands::WIDE
        }
    );
    // div x7, x8, x9 (64-bit: wide) and divw (not)
    assert_eq!(
        ops(0x0294_43b3),
        Operands {
            dst: 7,
            src: [8, 9, n],
            flags: Operands::WIDE
        }
    );
    assert_eq!(ops(0x0294_43bb).flags, 0);
    // addi x0, x0, 0 (nop) touches no register
    assert_eq!(ops(0x0000_0013), Operands::EMPTY);
}

/// Harts sharing a block cache: when one drops blocks (here a code write
/// it notices), the other's first level empties at its next look, so a
/// snapshot taken before that look describes it empty (a restored hart
/// must miss where the saved one would), and after the look it refills
/// from the shared blocks without decoding them again.
#[test]
fn a_hart_sharing_a_cache_forgets_blocks_another_hart_dropped() {
    // loop: addi a0, a0, 1; j loop
    let (mut a, ram) = hart_with(&[addi(10, 10, 1), jal(0, -4)]);
    let mut b = Hart::new(
        HartConfig {
            hart_id: 4,
            cycles_per_tick: 4,
        },
        ram.clone(),
        Atomic,
    );
    b.reset(BASE);
    assert!(b.share_code_with(&a));
    run_until(&mut a, &mut Dev::default(), 30);
    run_until(&mut b, &mut Dev::default(), 30);
    assert!(a.x(10) >= 9 && b.x(10) >= 9);
    assert_eq!(b.stats().blocks_decoded, 0, "hart b decoded shared blocks");
    assert!(!b.save_blocks().vcache.is_empty());
    // another writer patches the loop; hart a notices first
    ram.write(BASE, 4, addi(10, 10, 100) as u64);
    let before = (a.x(10), b.x(10));
    run_until(&mut a, &mut Dev::default(), 60);
    assert!(a.x(10) - before.0 >= 100 * 9, "hart a ran the old code");
    assert!(
        b.save_blocks().vcache.is_empty(),
        "hart b's first level outlived the blocks hart a dropped"
    );
    run_until(&mut b, &mut Dev::default(), 60);
    assert!(b.x(10) - before.1 >= 100 * 9, "hart b ran the old code");
    assert_eq!(b.stats().blocks_decoded, 0, "hart b decoded shared blocks");
}

/// No two of the hart's hot fields sit a multiple of 4 KiB apart (see
/// [`crate::hot_fields_alias`]) in the harts of the plain models; the
/// machine checks the wrapped ones it builds.
#[test]
fn hot_hart_fields_do_not_alias_modulo_4_kib() {
    assert_eq!(crate::hot_fields_alias::<Atomic>(), None);
    assert_eq!(crate::hot_fields_alias::<hs_timing::InOrder>(), None);
}

/// Records what it saw at each pause, every `period` cycles.
struct PauseLog {
    period: u64,
    seen: Vec<(u64, u64, u64, u64)>,
}

impl<T: hs_timing::TimingModel> Pause<T> for PauseLog {
    fn first(&mut self, h: &Hart<T>) -> u64 {
        h.cycle() + self.period
    }
    fn pause(&mut self, h: &Hart<T>) -> u64 {
        self.seen.push((h.cycle(), h.pc(), h.x(10), h.x(12)));
        h.cycle() + self.period
    }
}

/// Translated code leaves where a block ends at the pause cycle, after a
/// static exit (a `jal`) and after an indirect one (a `ret`), rather than
/// chain past it: the pauses, and the hart at each, are exactly those of
/// the block engine; no pause is made twice, none is missed.
#[test]
fn pauses_are_the_same_under_both_engines() {
    let ret = i(0, 1, 0, 0, 0x67); // jalr x0, 0(ra)
    let prog = [
        addi(10, 10, 1),
        jal(1, 12), // call BASE+16
        addi(11, 11, 1),
        jal(0, -12), // to BASE
        addi(12, 12, 3),
        ret,
    ];
    let run = |engine: Engine| {
        let (mut h, _) = hart_with(&prog);
        h.set_engine(engine);
        h.set_translate_after(1);
        let mut log = PauseLog {
            period: 7,
            seen: Vec::new(),
        };
        let mut bus = Dev::default();
        // (slices, as the machine runs them: a pause may fall at one's end)
        for until in (1..=20).map(|k| k * 1_000) {
            assert_eq!(h.run_pausing(&mut bus, until, &mut log), Exit::Budget);
        }
        (log.seen, h.cycle(), h.x(10), h.x(12))
    };
    let blocks = run(Engine::Blocks);
    let translated = run(Engine::Translated);
    assert!(blocks.0.len() > 2_000, "{} pauses", blocks.0.len());
    // both kinds of exit paused (the hart at BASE after the `jal` back,
    // at BASE + 8 after the `ret`)
    for pc in [BASE, BASE + 8] {
        assert!(blocks.0.iter().any(|p| p.1 == pc), "no pause at {pc:#x}");
    }
    assert_eq!(blocks.0.len(), translated.0.len(), "pause counts differ");
    if let Some(k) = (0..blocks.0.len()).find(|&k| blocks.0[k] != translated.0[k]) {
        panic!(
            "pause {k}: blocks {:?}, translated {:?}",
            blocks.0[k], translated.0[k]
        );
    }
    assert_eq!(
        (blocks.1, blocks.2, blocks.3),
        (translated.1, translated.2, translated.3)
    );
}
