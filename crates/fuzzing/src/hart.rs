//! The instruction stream and page tables: arbitrary code and page-table
//! data in RAM, arbitrary CSR state set by the guest's own `csrw`s (so the
//! CSRs' write rules apply), then the hart runs. It must never fault the
//! host; every wild access ends as a trap or a device error.
//!
//! Each input runs on the block engine, the translating engine and the
//! reference engine (every instruction decoded afresh), on the atomic
//! model and on the in-order one (`machines/inorder.toml`: translated code
//! then calls its hooks, with its shortcuts inline), and every engine must
//! take the reference's steps, cycle counts included, and end in its
//! state, unless the code stored to its own code pages (then the block
//! engine may run the op it decoded before the store until its block
//! ends, as hardware without `fence.i` may).

use hs_bus::{Access, BusFault, GuestRam, SystemBus, WriteEffect};
use hs_core::{Atomic, CheckRecord, Engine, Exit, Hart, HartConfig};
use hs_isa::csr::*;
use hs_timing::{InOrder, InOrderFactory, MachineDesc, ModelDesc, TimingModel};

use crate::Input;

const BASE: u64 = 0x8000_0000;
const RAM: u64 = 64 << 10;
/// Where the fuzzed code starts (the prologue is before it).
const CODE: u64 = BASE + 0x100;
/// Page-table-like data, 4 KiB.
const TABLES: u64 = BASE + 0x1000;

/// A device window at 0x1000_0000: reads return a hash of the address;
/// some writes ask for an interrupt check or a stop; the rest is unmapped.
struct Devices;

impl SystemBus for Devices {
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

/// CSRs the prologue writes, each from the register of the same index + 1.
const PROLOGUE_CSRS: [u16; 17] = [
    MSTATUS,
    SATP,
    MEDELEG,
    MIDELEG,
    MIE,
    MIP,
    MENVCFG,
    STIMECMP,
    PMPCFG0,
    PMPADDR0,
    PMPADDR0 + 1,
    PMPADDR0 + 2,
    MTVEC,
    STVEC,
    MEPC,
    MCOUNTEREN,
    SCOUNTEREN,
];

fn csrw(csr: u16, rs1: u32) -> u32 {
    (u32::from(csr) << 20) | (rs1 << 15) | (1 << 12) | 0x73
}
const MRET: u32 = 0x3020_0073;

pub fn run(data: &[u8]) {
    differential(data);
}

/// Run `data` on the block engine, the translating engine (translating
/// every block on its first run) and the reference, and compare each with
/// the reference (panics where they differ); false when the code wrote to
/// its own code pages, so nothing was compared.
pub fn differential(data: &[u8]) -> bool {
    differential_on(data, || Atomic) && differential_on(data, inorder)
}

/// The in-order model of `machines/inorder.toml` (its own L2).
fn inorder() -> InOrder {
    static FACTORY_CFG: std::sync::OnceLock<hs_timing::InOrderConfig> = std::sync::OnceLock::new();
    let cfg = FACTORY_CFG.get_or_init(|| {
        let path = std::path::Path::new("machines/inorder.toml");
        let text = include_str!("../../../machines/inorder.toml");
        let desc = MachineDesc::parse(path, text).expect("machines/inorder.toml parses");
        let ModelDesc::InOrder(cfg) = desc.model else {
            panic!("machines/inorder.toml is not the in-order model")
        };
        cfg
    });
    InOrderFactory::new(cfg).build()
}

fn differential_on<T: TimingModel>(data: &[u8], model: impl Fn() -> T) -> bool {
    let (reference, reference_log) = run_on(data, Engine::Reference, true, model());
    for engine in [Engine::Blocks, Engine::Translated] {
        if !compare(data, engine, &reference, &reference_log, &model) {
            return false;
        }
    }
    true
}

fn compare<T: TimingModel>(
    data: &[u8],
    engine: Engine,
    reference: &Hart<T>,
    reference_log: &[CheckRecord],
    model: &impl Fn() -> T,
) -> bool {
    let (blocks, blocks_log) = run_on(data, engine, true, model());
    if engine == Engine::Translated {
        // every block it fetched was translated (on its first run)
        assert!(
            blocks.translation_stats().blocks > 0 || blocks.stats().blocks_decoded == 0,
            "the translating engine translated nothing"
        );
    }
    let wrote_code = |h: &Hart<T>| h.stats().code_invalidations > 0;
    if wrote_code(&blocks) || wrote_code(reference) {
        return false;
    }
    if let Some(i) = (0..blocks_log.len().max(reference_log.len()))
        .find(|&i| blocks_log.get(i) != reference_log.get(i))
    {
        panic!(
            "the engines diverge at step {i}: {engine:?} {:x?}, reference {:x?}",
            blocks_log.get(i),
            reference_log.get(i)
        );
    }
    let diff = blocks.arch_diff(reference);
    assert!(
        diff.is_empty(),
        "{engine:?} and the reference end apart: {diff:?}"
    );
    if engine == Engine::Translated {
        // Translated code built without a check log is other code: it
        // writes cached registers back only where it must (with a log,
        // after every instruction), so it is compared by its end state.
        let (plain, _) = run_on(data, engine, false, model());
        let diff = plain.arch_diff(reference);
        assert!(
            diff.is_empty(),
            "the translating engine without a check log and the reference end apart: {diff:?}"
        );
    }
    true
}

/// Run `data` on `engine`; the hart afterwards and its check log (kept
/// when `logged`).
fn run_on<T: TimingModel>(
    data: &[u8],
    engine: Engine,
    logged: bool,
    model: T,
) -> (Hart<T>, Vec<CheckRecord>) {
    let mut input = Input::new(data);
    let ram = GuestRam::new(BASE, RAM).expect("64 KiB of RAM");
    let mut hart = Hart::new(
        HartConfig {
            hart_id: 0,
            cycles_per_tick: 3,
        },
        ram.clone(),
        model,
    );
    hart.reset(BASE);
    hart.set_engine(engine);
    hart.set_translate_after(1);
    hart.set_check_log(logged);
    let mut log = Vec::new();
    // Register values: CSR values for the prologue, then pointers into (or
    // just past) RAM or raw values for the fuzzed code.
    let satp_mode = input.pick(&[0u64, 8, 9]);
    let satp = (satp_mode << 60) | ((TABLES >> 12) + u64::from(input.u8() % 16));
    let mut values = vec![input.u64(), satp];
    values.extend((0..12).map(|_| input.u64()));
    values[12] = BASE + 0x100 + (values[12] % 0x800) * 4 + (values[12] >> 63); // mtvec
    values[13] = BASE + 0x100 + (values[13] % 0x800) * 4 + (values[13] >> 63); // stvec
    values.push(CODE); // mepc
    values.extend((0..2).map(|_| input.u64()));
    for (k, v) in values.iter().enumerate() {
        hart.set_x(k + 1, *v);
    }
    for r in values.len() + 1..32 {
        let v = input.u64();
        hart.set_x(
            r,
            if v & 1 == 0 {
                BASE + (v >> 1) % (RAM + 0x2000)
            } else {
                v
            },
        );
    }
    hart.set_platform_irqs(input.u64());
    let mut prologue: Vec<u32> = PROLOGUE_CSRS
        .iter()
        .enumerate()
        .map(|(k, &c)| csrw(c, k as u32 + 1))
        .collect();
    prologue.push(MRET);
    let mut at = BASE;
    for w in prologue {
        ram.write(at, 4, u64::from(w));
        at += 4;
    }
    assert!(at <= CODE, "the prologue fits before the code");
    let tables = input.bytes(4096).to_vec();
    let code = input.bytes((TABLES - CODE) as usize);
    assert!(ram.write_bytes(CODE, code));
    assert!(ram.write_bytes(TABLES, &tables));
    // The rest of the input fills the RAM after the tables.
    let rest = input.bytes((RAM - 0x2000) as usize);
    assert!(ram.write_bytes(TABLES + 0x1000, rest));

    let mut bus = Devices;
    let mut until = 0;
    let mut stops = 0;
    for _ in 0..8 {
        until += 400;
        // As the machine does: a marker or an interrupt check returns
        // early, and the hart is run again up to the same deadline.
        let mut calls = 0;
        while hart.cycle() < until && stops == 0 {
            calls += 1;
            assert!(calls < 100_000, "the hart keeps returning without progress");
            let exit = hart.run(&mut bus, until);
            log.append(&mut hart.take_check_log());
            match exit {
                Exit::Idle => hart.advance_to(until),
                Exit::Stop => stops += 1,
                Exit::Budget => {
                    assert!(hart.cycle() >= until, "Budget returned before the deadline")
                }
                Exit::Marker(_) | Exit::IrqCheck => {}
            }
        }
        assert_eq!(hart.x(0), 0, "x0 stays zero");
        assert_eq!(hart.pc() & 1, 0, "pc stays 2-byte aligned");
        assert!(hart.instret() <= hart.cycle(), "instret <= cycle");
        for c in [hart.csr(MCAUSE), hart.csr(SCAUSE)].into_iter().flatten() {
            assert!(
                c & !(1 << 63) < 16,
                "cause {c:#x} is not one RISC-V defines"
            );
        }
        // The observation paths never fault either.
        let mut buf = [0u8; 16];
        let _ = hart.read_virt(hart.x(5), &mut buf);
        let _ = hart.read_kernel_virt(hart.x(6), &mut buf);
    }
    assert!(
        hart.cycle() >= until || stops > 0,
        "the hart ran its budget"
    );
    assert!(ram.read(BASE + RAM - 8, 8).is_some(), "RAM is intact");
    (hart, log)
}
