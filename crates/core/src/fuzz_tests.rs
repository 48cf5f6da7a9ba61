//! Random instruction words, random page tables and random CSR state: the
//! hart must never panic, must keep its invariants, and every wild access
//! must end as a guest trap (or a device error), never a host fault.

use hs_bus::{Access, BusFault, GuestRam, SystemBus, WriteEffect};
use hs_isa::csr::*;
use proptest::prelude::*;

use crate::*;

const BASE: u64 = 0x8000_0000;
const RAM: u64 = 64 << 10;

/// Devices at 0x1000_0000..+0x1000: reads return a hash of the address,
/// some writes report irq_changed or stop; everything else is unmapped.
struct FuzzBus;
impl SystemBus for FuzzBus {
    fn mmio_read(&mut self, _: Access, pa: u64, size: u8) -> Result<u64, BusFault> {
        if (0x1000_0000..0x1000_1000).contains(&pa) {
            Ok(pa.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 7)
        } else {
            Err(BusFault::BadAccess(pa, size))
        }
    }
    fn mmio_write(&mut self, _: Access, pa: u64, _: u8, _: u64) -> Result<WriteEffect, BusFault> {
        if (0x1000_0000..0x1000_1000).contains(&pa) {
            Ok(WriteEffect {
                irq_changed: pa & 0x10 != 0,
                stop: pa & 0x7f0 == 0x7f0,
            })
        } else {
            Err(BusFault::Unmapped(pa))
        }
    }
}

/// Mostly well-formed major opcodes with random fields, some raw noise,
/// some compressed halves.
fn insn_word() -> impl Strategy<Value = u32> {
    const OPCODES: &[u32] = &[
        0x03, 0x07, 0x0f, 0x13, 0x17, 0x1b, 0x23, 0x27, 0x2f, 0x33, 0x37, 0x3b, 0x43, 0x47, 0x4b,
        0x4f, 0x53, 0x63, 0x67, 0x6f, 0x73,
    ];
    prop_oneof![
        3 => (any::<u32>(), prop::sample::select(OPCODES)).prop_map(|(w, op)| (w & !0x7f) | op),
        1 => any::<u32>(),
        1 => any::<u32>().prop_map(|w| w & !3 | (w >> 30)), // two compressed halves (mostly)
    ]
}

/// A PTE that points inside RAM (valid-ish) or random bits.
fn pte() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => (0..(RAM >> 12), any::<u8>(), any::<bool>()).prop_map(|(page, flags, big)| {
            let ppn = (BASE >> 12) + page + if big { 1 << 9 } else { 0 };
            ppn << 10 | flags as u64
        }),
        1 => any::<u64>(),
    ]
}

#[derive(Debug, Clone)]
struct State {
    code: Vec<u32>,
    ptes: Vec<u64>,
    regs: Vec<u64>,
    mstatus: u64,
    satp_mode: u64,
    satp_page: u64,
    medeleg: u64,
    mideleg: u64,
    mie: u64,
    mip: u64,
    menvcfg: u64,
    stimecmp: u64,
    pmpcfg: u64,
    pmpaddr: [u64; 3],
    prv: u8,
    platform: u64,
    vectored: bool,
}

fn state() -> impl Strategy<Value = State> {
    (
        (
            prop::collection::vec(insn_word(), 256),
            prop::collection::vec(pte(), 512),
            prop::collection::vec(any::<u64>(), 31),
        ),
        (
            any::<u64>(),
            prop::sample::select(&[0u64, 8, 9][..]),
            0..(RAM >> 12),
            any::<u64>(),
            any::<u64>(),
        ),
        (
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            0..20_000u64,
            any::<u64>(),
        ),
        (
            prop::array::uniform3(any::<u64>()),
            prop::sample::select(&[0u8, 1, 3][..]),
            any::<u64>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (code, ptes, regs),
                (mstatus, satp_mode, satp_page, medeleg, mideleg),
                (mie, mip, menvcfg, stimecmp, pmpcfg),
                (pmpaddr, prv, platform, vectored),
            )| {
                State {
                    code,
                    ptes,
                    regs,
                    mstatus,
                    satp_mode,
                    satp_page,
                    medeleg,
                    mideleg,
                    mie,
                    mip,
                    menvcfg,
                    stimecmp,
                    pmpcfg,
                    pmpaddr,
                    prv,
                    platform,
                    vectored,
                }
            },
        )
}

fn build(st: &State) -> (Hart, GuestRam) {
    let ram = GuestRam::new(BASE, RAM).unwrap();
    for (k, w) in st.code.iter().enumerate() {
        ram.write(BASE + 4 * k as u64, 4, *w as u64);
    }
    // page-table-like data after the code, up to the end of RAM
    for (k, p) in st.ptes.iter().enumerate() {
        ram.write(BASE + 0x1000 + 8 * k as u64, 8, *p);
    }
    let mut h = Hart::new(
        HartConfig {
            hart_id: 0,
            cycles_per_tick: 3,
        },
        ram.clone(),
        Atomic,
    );
    h.reset(BASE);
    for (r, v) in st.regs.iter().enumerate() {
        // half the registers point into (or just past) RAM, so accesses land
        h.set_x(
            r + 1,
            if v & 1 == 0 {
                BASE + (v >> 1) % (RAM + 0x2000)
            } else {
                *v
            },
        );
    }
    h.csr_write(MSTATUS, st.mstatus);
    h.csr_write(SATP, (st.satp_mode << 60) | ((BASE >> 12) + st.satp_page));
    h.csr_write(MEDELEG, st.medeleg);
    h.csr_write(MIDELEG, st.mideleg);
    h.csr_write(MIE, st.mie);
    h.csr_write(MIP, st.mip);
    h.csr_write(MENVCFG, st.menvcfg);
    h.csr_write(STIMECMP, st.stimecmp);
    h.csr_write(MCOUNTEREN, st.mip);
    h.csr_write(SCOUNTEREN, st.mie);
    h.csr_write(PMPCFG0, st.pmpcfg);
    for (k, a) in st.pmpaddr.iter().enumerate() {
        h.csr_write(PMPADDR0 + k as u16, *a);
    }
    let tvec = BASE + (st.mie % 256) * 4 + st.vectored as u64;
    h.csr_write(MTVEC, tvec);
    h.csr_write(STVEC, tvec ^ 0x40);
    h.set_platform_irqs(st.platform);
    h.set_priv(Priv::from_bits(st.prv as u64));
    h.update_modes();
    (h, ram)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn random_programs_never_break_the_host(st in state()) {
        let (mut h, ram) = build(&st);
        let mut bus = FuzzBus;
        let mut until = 0;
        let mut stops = 0;
        for _ in 0..8 {
            until += 400;
            let exit = h.run(&mut bus, until);
            match exit {
                Exit::Idle => h.advance_to(until),
                Exit::Stop => stops += 1,
                _ => {}
            }
            prop_assert_eq!(h.x(0), 0);
            prop_assert_eq!(h.pc() & 1, 0);
            prop_assert!(h.instret() <= h.cycle());
            let mcause = h.csr(MCAUSE).unwrap();
            let scause = h.csr(SCAUSE).unwrap();
            for c in [mcause, scause] {
                let code = c & !(1 << 63);
                prop_assert!(code < 16, "bad cause {:#x}", c);
            }
            // the observation paths never fault either
            let mut buf = [0u8; 16];
            let _ = h.read_virt(h.x(5), &mut buf);
            let _ = h.csr(SATP);
        }
        prop_assert!(h.cycle() >= until || stops > 0);
        // RAM is intact in size and readable end to end
        prop_assert!(ram.read(BASE + RAM - 8, 8).is_some());
    }
}
