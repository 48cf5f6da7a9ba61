//! The Zicsr access rules for CSRs whose read value mixes software-written
//! and hardware-driven state (issue 9): what a CSRRS/CSRRC modifies, what
//! CSRRW replaces, and that rs1 = x0 / uimm = 0 means no write at all.

use super::*;

fn csrrc(rd: u32, csr: u16, rs1: u32) -> u32 {
    i(csr as i32, rs1, 3, rd, 0x73)
}

#[test]
fn csrrs_and_csrrc_on_mip_leave_the_plic_seip_out_of_the_software_bit() {
    // OpenSBI's IPI relay: csrs mip, SSIP (then csrc) while the PLIC's
    // S-context line is high; the line must not stick once it drops
    let (mut h, _) = hart_with(&[
        addi(5, 0, MIP_SSIP as i32),
        csrrs(10, MIP, 5),
        csrrc(11, MIP, 5),
        WFI,
    ]);
    h.set_platform_irqs(MIP_SEIP);
    assert_eq!(run_until(&mut h, &mut Dev::default(), 100), Exit::Idle);
    // the values read still OR in the line
    assert_eq!(h.x(10) & (MIP_SEIP | MIP_SSIP), MIP_SEIP);
    assert_eq!(h.x(11) & (MIP_SEIP | MIP_SSIP), MIP_SEIP | MIP_SSIP);
    h.set_platform_irqs(0);
    assert_eq!(
        h.csr(MIP).unwrap() & (MIP_SEIP | MIP_SSIP),
        0,
        "SEIP latched from the PLIC line"
    );
    // and no external interrupt is left to take (the guest's endless claims)
    h.csr_write(MIE, MIP_SEIP);
    h.set_priv(Priv::User);
    assert_eq!(h.interrupt_to_take(), None);
}

fn csrrwi(rd: u32, csr: u16, uimm: u32) -> u32 {
    i(csr as i32, uimm, 5, rd, 0x73)
}
fn csrrsi(rd: u32, csr: u16, uimm: u32) -> u32 {
    i(csr as i32, uimm, 6, rd, 0x73)
}
fn csrrci(rd: u32, csr: u16, uimm: u32) -> u32 {
    i(csr as i32, uimm, 7, rd, 0x73)
}

const HANDLER: u64 = BASE + 0x100;

/// Runs `insn` then ECALL in `prv` on a fresh hart prepared by `setup`,
/// with PMP open and every trap to M: Ok(a0) if the ECALL was reached,
/// else Err(mcause).
fn one(prv: Priv, insn: u32, setup: impl FnOnce(&mut Hart)) -> (Hart, Result<u64, u64>) {
    let (mut h, _) = hart_with(&[insn, ECALL]);
    h.csr_write(PMPADDR0, u64::MAX);
    h.csr_write(PMPCFG0, 0x1f); // NAPOT, RWX
    h.csr_write(MTVEC, HANDLER);
    setup(&mut h);
    h.set_priv(prv);
    assert_eq!(run_until(&mut h, &mut Dev::default(), 100), Exit::Idle);
    assert_eq!(h.pc(), HANDLER + 4, "the handler's WFI");
    let r = match h.csr(MCAUSE).unwrap() {
        CAUSE_USER_ECALL | CAUSE_SUPERVISOR_ECALL | CAUSE_MACHINE_ECALL => {
            assert_eq!(h.csr(MEPC), Some(BASE + 4));
            Ok(h.x(10))
        }
        c => Err(c),
    };
    (h, r)
}

/// csr_op as CSRRS/CSRRC/CSRRW with a nonzero rs1 (a write) in M.
fn set(h: &mut Hart, num: u16, v: u64) -> u64 {
    h.csr_op(num, 1, v, true, 0).unwrap()
}
fn clear(h: &mut Hart, num: u16, v: u64) -> u64 {
    h.csr_op(num, 2, v, true, 0).unwrap()
}
fn write(h: &mut Hart, num: u16, v: u64) -> u64 {
    h.csr_op(num, 0, v, true, 0).unwrap()
}

#[test]
fn mip_seip_software_bit_is_written_apart_from_the_line() {
    let (mut h, _) = hart_with(&[]);
    let seip = |h: &Hart| h.csr(MIP).unwrap() & MIP_SEIP;
    // line high: CSRRC clears M's bit only; the line still reads
    set(&mut h, MIP, MIP_SEIP);
    h.set_platform_irqs(MIP_SEIP);
    assert_eq!(clear(&mut h, MIP, MIP_SEIP) & MIP_SEIP, MIP_SEIP);
    assert_eq!(seip(&h), MIP_SEIP);
    h.set_platform_irqs(0);
    assert_eq!(seip(&h), 0, "CSRRC left M's SEIP set");
    // M's bit survives a read-modify-write of other bits while the line is low
    write(&mut h, MIP, MIP_SEIP);
    clear(&mut h, MIP, MIP_SSIP);
    set(&mut h, MIP, MIP_SSIP);
    assert_eq!(seip(&h), MIP_SEIP);
    // CSRRW replaces M's bit; it cannot clear the line
    h.set_platform_irqs(MIP_SEIP);
    write(&mut h, MIP, 0);
    assert_eq!(seip(&h), MIP_SEIP);
    h.set_platform_irqs(0);
    assert_eq!(h.csr(MIP), Some(0));
}

#[test]
fn mip_read_only_bits_ignore_every_write() {
    let (mut h, _) = hart_with(&[]);
    let hw = MIP_MSIP | MIP_MTIP | MIP_MEIP;
    h.set_platform_irqs(hw);
    clear(&mut h, MIP, u64::MAX);
    write(&mut h, MIP, 0);
    assert_eq!(h.csr(MIP), Some(hw));
    h.set_platform_irqs(0);
    set(&mut h, MIP, hw);
    assert_eq!(h.csr(MIP), Some(0));
    // without Sstc, M owns SSIP, STIP and SEIP (and Sscofpmf's LCOFIP)
    write(&mut h, MIP, u64::MAX);
    assert_eq!(
        h.csr(MIP),
        Some(MIP_SSIP | MIP_STIP | MIP_SEIP | MIP_LCOFIP)
    );
}

#[test]
fn mip_stip_under_sstc_follows_stimecmp_and_leaves_m_stip_alone() {
    let (mut h, _) = hart_with(&[]);
    // M's STIP (no Sstc) takes CSRRS/CSRRC
    set(&mut h, MIP, MIP_STIP);
    assert_eq!(h.csr(MIP), Some(MIP_STIP));
    clear(&mut h, MIP, MIP_STIP);
    assert_eq!(h.csr(MIP), Some(0));
    // with STCE, STIP is time >= stimecmp and read-only: no write sets,
    // clears or copies it
    h.csr_write(MENVCFG, MENVCFG_STCE);
    write(&mut h, STIMECMP, 0);
    assert_eq!(clear(&mut h, MIP, MIP_STIP), MIP_STIP);
    assert_eq!(h.csr(MIP), Some(MIP_STIP));
    set(&mut h, MIP, MIP_SSIP);
    write(&mut h, STIMECMP, u64::MAX);
    assert_eq!(
        h.csr(MIP),
        Some(MIP_SSIP),
        "STIP follows a later stimecmp at once"
    );
    set(&mut h, MIP, MIP_STIP);
    assert_eq!(h.csr(MIP), Some(MIP_SSIP));
    // the timer's STIP never became M's: without STCE it reads M's (0)
    write(&mut h, STIMECMP, 0);
    set(&mut h, MIP, MIP_SSIP);
    h.csr_write(MENVCFG, 0);
    assert_eq!(h.csr(MIP), Some(MIP_SSIP));
}

#[test]
fn sip_is_mip_through_mideleg_with_only_ssip_writable() {
    let (mut h, _) = hart_with(&[]);
    h.csr_write(MIDELEG, MIP_SSIP | MIP_STIP | MIP_SEIP);
    h.csr_write(MIP, MIP_STIP);
    h.set_platform_irqs(MIP_SEIP | MIP_MEIP);
    h.set_priv(Priv::Supervisor);
    assert_eq!(set(&mut h, SIP, MIP_SSIP), MIP_STIP | MIP_SEIP);
    assert_eq!(h.csr(SIP), Some(MIP_SSIP | MIP_STIP | MIP_SEIP));
    assert_eq!(clear(&mut h, SIP, u64::MAX), MIP_SSIP | MIP_STIP | MIP_SEIP);
    assert_eq!(
        h.csr(SIP),
        Some(MIP_STIP | MIP_SEIP),
        "sip.STIP and sip.SEIP are read-only"
    );
    h.set_platform_irqs(0);
    assert_eq!(
        h.csr(MIP),
        Some(MIP_STIP),
        "sip wrote into M's SEIP or STIP"
    );
    // not delegated: invisible and not writable
    h.set_priv(Priv::Machine);
    h.csr_write(MIDELEG, MIP_STIP);
    h.set_priv(Priv::Supervisor);
    set(&mut h, SIP, MIP_SSIP);
    assert_eq!(h.csr(SIP), Some(MIP_STIP));
    assert_eq!(h.csr(MIP), Some(MIP_STIP));
}

#[test]
fn sstatus_read_modify_write_touches_only_its_view_of_mstatus() {
    let (mut h, _) = hart_with(&[]);
    let m_only = MSTATUS_MIE
        | MSTATUS_MPIE
        | MSTATUS_MPP
        | MSTATUS_MPRV
        | MSTATUS_TVM
        | MSTATUS_TW
        | MSTATUS_TSR;
    h.csr_write(MSTATUS, m_only | MSTATUS_FS);
    let before = h.csr(MSTATUS).unwrap();
    // SD and UXL read in sstatus but are not state sstatus writes
    clear(&mut h, SSTATUS, MSTATUS_SD | MSTATUS_UXL);
    assert_eq!(h.csr(MSTATUS), Some(before));
    assert_eq!(
        clear(&mut h, SSTATUS, u64::MAX) & (MSTATUS_SD | MSTATUS_UXL),
        MSTATUS_SD | (2 << 32)
    );
    assert_eq!(
        h.csr(MSTATUS),
        Some(m_only | MSTATUS_XL64),
        "CSRRC of sstatus cleared M-only bits"
    );
    set(&mut h, SSTATUS, u64::MAX);
    let s_bits = MSTATUS_SIE | MSTATUS_SPIE | MSTATUS_SPP | MSTATUS_FS | MSTATUS_SUM | MSTATUS_MXR;
    assert_eq!(
        h.csr(MSTATUS),
        Some(m_only | s_bits | MSTATUS_XL64 | MSTATUS_SD)
    );
    assert_eq!(h.csr(SSTATUS), Some(s_bits | (2 << 32) | MSTATUS_SD));
}

#[test]
fn mstatus_sd_and_xl_are_derived_not_stored() {
    let (mut h, _) = hart_with(&[]);
    h.csr_write(MSTATUS, MSTATUS_FS);
    clear(&mut h, MSTATUS, MSTATUS_SD | (0xf << 32));
    assert_eq!(h.csr(MSTATUS), Some(MSTATUS_SD | MSTATUS_FS | MSTATUS_XL64));
    write(&mut h, MSTATUS, 1 << MSTATUS_FS_SHIFT);
    assert_eq!(
        h.csr(MSTATUS),
        Some((1 << MSTATUS_FS_SHIFT) | MSTATUS_XL64),
        "SD follows FS"
    );
}

#[test]
fn fcsr_is_frm_and_fflags_and_each_write_dirties_fs() {
    let (mut h, _) = hart_with(&[]);
    // FS off: all three trap, reads too
    for n in [FFLAGS, FRM, FCSR] {
        assert_eq!(h.csr_op(n, 1, 0, false, 9), Err(Trap::illegal(9)));
    }
    let fs = |h: &Hart| (h.csr(MSTATUS).unwrap() & MSTATUS_FS) >> MSTATUS_FS_SHIFT;
    h.csr_write(MSTATUS, 1 << MSTATUS_FS_SHIFT);
    write(&mut h, FRM, 0b101);
    assert_eq!(fs(&h), 3);
    set(&mut h, FFLAGS, 0xff);
    assert_eq!(
        (h.csr(FFLAGS), h.csr(FRM), h.csr(FCSR)),
        (Some(0x1f), Some(0b101), Some(0xbf))
    );
    clear(&mut h, FCSR, 0x1f);
    assert_eq!((h.csr(FFLAGS), h.csr(FRM)), (Some(0), Some(0b101)));
    set(&mut h, FCSR, u64::MAX);
    assert_eq!(
        h.csr(FCSR),
        Some(0xff),
        "fcsr bits above 7 are read-only zero"
    );
    clear(&mut h, FRM, 0b010);
    assert_eq!(h.csr(FCSR), Some(0xbf));
}

#[test]
fn counter_reads_are_gated_per_counter_by_mcounteren_and_scounteren() {
    for (num, bit) in [(CYCLE, 0), (TIME, 1), (INSTRET, 2), (0xc03, 3), (0xc1f, 31)] {
        for (prv, m, s, ok) in [
            (Priv::Machine, 0, 0, true),
            (Priv::Supervisor, 0, u64::MAX, false),
            (Priv::Supervisor, 1u64 << bit, 0, true),
            (Priv::Supervisor, !(1u64 << bit), u64::MAX, false),
            (Priv::User, u64::MAX, 0, false),
            (Priv::User, 1u64 << bit, 1u64 << bit, true),
            (Priv::User, u64::MAX, !(1u64 << bit), false),
            (Priv::User, 0, u64::MAX, false),
        ] {
            let (_, r) = one(prv, csrrs(10, num, 0), |h| {
                h.csr_write(MCOUNTEREN, m);
                h.csr_write(SCOUNTEREN, s);
            });
            let want = if ok { Ok(()) } else { Err(CAUSE_ILLEGAL_INSN) };
            assert_eq!(r.map(|_| ()), want, "{num:#x} in {prv:?} m={m:#x} s={s:#x}");
        }
    }
}

#[test]
fn rs1_x0_and_uimm_0_never_write_but_a_zero_register_does() {
    let ill = Err(CAUSE_ILLEGAL_INSN);
    // a read-only CSR readable in U: only the forms that do not write pass
    let open = |h: &mut Hart| {
        h.csr_write(MCOUNTEREN, 1);
        h.csr_write(SCOUNTEREN, 1);
    };
    for (insn, ok) in [
        (csrrs(10, CYCLE, 0), true),
        (csrrc(10, CYCLE, 0), true),
        (csrrsi(10, CYCLE, 0), true),
        (csrrci(10, CYCLE, 0), true),
        (csrrs(10, CYCLE, 5), false), // x5 = 0: still a write
        (csrrc(10, CYCLE, 5), false),
        (csrrsi(10, CYCLE, 1), false),
        (csrrw(10, CYCLE, 0), false), // CSRRW always writes
        (csrrwi(10, CYCLE, 0), false),
        (csrrw(0, CYCLE, 0), false),
    ] {
        let (_, r) = one(Priv::User, insn, open);
        assert_eq!(r.is_ok(), ok, "{insn:#010x}: {r:?}");
    }
    assert_eq!(one(Priv::Machine, csrrc(10, MHARTID, 0), |_| {}).1, Ok(3));
    assert_eq!(one(Priv::Machine, csrrci(10, MHARTID, 5), |_| {}).1, ill);
    // no write, no write side effect: FS stays clean
    let fs_initial = |h: &mut Hart| h.csr_write(MSTATUS, 1 << MSTATUS_FS_SHIFT);
    for (insn, dirty) in [
        (csrrs(10, FFLAGS, 0), false),
        (csrrc(10, FCSR, 0), false),
        (csrrsi(10, FRM, 0), false),
        (csrrci(10, FFLAGS, 0), false),
        (csrrs(10, FFLAGS, 5), true),
        (csrrci(10, FRM, 1), true),
        (csrrw(0, FCSR, 0), true),
    ] {
        let (h, r) = one(Priv::Machine, insn, fs_initial);
        assert!(r.is_ok(), "{insn:#010x}: {r:?}");
        assert_eq!(
            h.csr(MSTATUS).unwrap() & MSTATUS_FS == MSTATUS_FS,
            dirty,
            "{insn:#010x}"
        );
    }
}

#[test]
fn csr_reads_have_no_side_effects() {
    // so CSRRW with rd = x0 (which must not read) and a read differ only in rd
    let (mut h, _) = hart_with(&[]);
    h.csr_write(MSTATUS, 1 << MSTATUS_FS_SHIFT);
    h.csr_write(MENVCFG, MENVCFG_STCE);
    h.csr_write(STIMECMP, 3);
    h.csr_write(MIP, MIP_SSIP | MIP_SEIP);
    h.set_platform_irqs(MIP_SEIP | MIP_MTIP);
    h.advance_to(100);
    let all = |h: &Hart| (0..4096u16).map(|n| h.csr(n)).collect::<Vec<_>>();
    let before = all(&h);
    let mut read = 0;
    for num in 0..4096u16 {
        for op in 0..3 {
            if let Ok(v) = h.csr_op(num, op, u64::MAX, false, 0) {
                assert_eq!(Some(v), before[num as usize], "{num:#x}");
                read += 1;
            }
        }
    }
    assert!(read > 3 * 100, "only {read} reads");
    assert_eq!(all(&h), before);
}

#[test]
fn a_counter_write_replaces_that_instructions_increment() {
    // minstret := 1000; read; csrrs minstret |= 0x10 (reads 1001); read
    let (mut h, _) = hart_with(&[
        addi(5, 0, 1000),
        addi(6, 0, 0x10),
        csrrw(0, MINSTRET, 5),
        csrrs(10, MINSTRET, 0),
        csrrs(11, MINSTRET, 6),
        csrrs(12, MINSTRET, 0),
        csrrw(0, MCYCLE, 5),
        csrrs(13, MCYCLE, 0),
        csrrc(14, MCYCLE, 6),
        csrrs(15, MCYCLE, 0),
        WFI,
    ]);
    assert_eq!(run_until(&mut h, &mut Dev::default(), 100), Exit::Idle);
    assert_eq!((h.x(10), h.x(11), h.x(12)), (1000, 1001, 1001 | 0x10));
    // one cycle per instruction with the atomic model
    assert_eq!((h.x(13), h.x(14), h.x(15)), (1000, 1001, 1001 & !0x10));
}

#[test]
fn stimecmp_below_m_needs_stce_and_tm() {
    for (prv, menvcfg, m, ok) in [
        (Priv::Machine, 0, 0, true),
        (Priv::Supervisor, 0, 2, false),
        (Priv::Supervisor, MENVCFG_STCE, 0, false),
        (Priv::Supervisor, MENVCFG_STCE, !2, false),
        (Priv::Supervisor, MENVCFG_STCE, 2, true),
        (Priv::User, MENVCFG_STCE, u64::MAX, false),
    ] {
        let (h, r) = one(prv, csrrs(10, STIMECMP, 5), |h| {
            h.csr_write(MENVCFG, menvcfg);
            h.csr_write(MCOUNTEREN, m);
            h.csr_write(SCOUNTEREN, u64::MAX);
            h.csr_write(STIMECMP, 0x100);
            h.set_x(5, 0x21);
        });
        let want = if ok {
            Ok(0x100)
        } else {
            Err(CAUSE_ILLEGAL_INSN)
        };
        assert_eq!(r, want, "{prv:?} menvcfg={menvcfg:#x} mcounteren={m:#x}");
        assert_eq!(h.csr(STIMECMP), Some(if ok { 0x121 } else { 0x100 }));
    }
}

#[test]
fn cause_registers_keep_only_a_legal_cause() {
    // WLRL: the proptest found `csrrw x0, mcause, x4` leaving a 64-bit
    // pattern no trap could produce; the interrupt bit and a 4-bit code stay
    let (mut h, _) = hart_with(&[WFI]);
    for csr in [MCAUSE, SCAUSE] {
        h.csr_write(csr, 0xed6c_0841_74f3_5959);
        assert_eq!(h.csr(csr).unwrap(), (1 << 63) | 9);
        h.csr_write(csr, 13);
        assert_eq!(h.csr(csr).unwrap(), 13);
    }
}
