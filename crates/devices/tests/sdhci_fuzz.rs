//! Random register streams, ADMA2 descriptor tables and SDMA addresses
//! against the SD host controller and its card: it never panics and never
//! touches memory outside what the bus offers, its interrupt line always
//! equals "an enabled status bit is set", and the same inputs give the same
//! registers, memory and counters every time.

use hs_devices::disk::Disk;
use hs_devices::dma::{DmaMemory, VecMemory};
use hs_devices::sd::sdhci::*;
use hs_devices::sd::{CardTiming, SdCard};
use hs_devices::{Clock, DevCtx, Scheduler, Signal};
use proptest::prelude::*;

const RAM: u64 = 0x8000_0000;
const RAM_SIZE: usize = 64 * 1024;

#[derive(Default)]
struct Rec(Option<u64>);
impl Scheduler for Rec {
    fn schedule(&mut self, cycle: u64, _token: u64) {
        self.0 = Some(cycle);
    }
}

#[derive(Debug, Clone)]
enum Op {
    Write {
        off: u64,
        size: u8,
        val: u64,
    },
    Read {
        off: u64,
        size: u8,
    },
    /// A command with the given index, argument and command-register flags.
    Cmd {
        index: u8,
        arg: u32,
        flags: u8,
    },
    /// Let time pass to the controller's next event(s).
    Run(u8),
    /// The identification sequence up to a selected card, so that data
    /// commands after it reach the data paths.
    Identify,
}

fn reg() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => prop::sample::select(vec![
            SDMA_ADDRESS, BLOCK_SIZE, BLOCK_COUNT, ARGUMENT, TRANSFER_MODE, COMMAND,
            BUFFER, PRESENT_STATE, HOST_CONTROL, POWER_CONTROL, CLOCK_CONTROL,
            TIMEOUT_CONTROL, SOFTWARE_RESET, INT_STATUS, ERR_STATUS, INT_ENABLE,
            ERR_ENABLE, INT_SIGNAL, ERR_SIGNAL, HOST_CONTROL2, ADMA_ERROR, ADMA_ADDRESS,
            ADMA_ADDRESS + 4, VENDOR_AREA1 + 8,
        ]),
        1 => 0..SIZE + 8,
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let size = prop::sample::select(vec![1u8, 2, 4, 8, 3]);
    let addr_val = prop_oneof![
        2 => any::<u64>(),
        3 => (0..RAM_SIZE as u64).prop_map(|o| RAM + o),
        1 => prop::sample::select(vec![0x0f07u64, 0x0a05, 0x7fff_0200, 0x3e, 0x13]),
    ];
    prop_oneof![
        5 => (reg(), size.clone(), addr_val).prop_map(|(off, size, val)| Op::Write { off, size, val }),
        3 => (reg(), size).prop_map(|(off, size)| Op::Read { off, size }),
        4 => (
            prop_oneof![3 => prop::sample::select(vec![0u8, 2, 3, 6, 7, 8, 9, 12, 13, 17, 18, 24, 25, 32, 33, 38, 41, 51, 55]), 1 => 0..64u8],
            prop_oneof![2 => 0..4096u32, 1 => any::<u32>(), 1 => Just(0x4853_0000u32), 1 => Just(0x40ff_8000u32)],
            any::<u8>(),
        )
            .prop_map(|(index, arg, flags)| Op::Cmd { index, arg, flags }),
        2 => (1..40u8).prop_map(Op::Run),
        1 => Just(Op::Identify),
    ]
}

/// Memory seeded with descriptors: some valid, some not, some links.
fn memory() -> impl Strategy<Value = Vec<(u32, [u8; 8])>> {
    prop::collection::vec(
        (
            0..(RAM_SIZE as u32 / 8),
            prop_oneof![
                2 => (any::<u16>(), 0..(RAM_SIZE as u32)).prop_map(|(len, off)| {
                    let mut d = [0u8; 8];
                    d[0..2].copy_from_slice(&(ADMA_VALID | ADMA_ACT_TRAN).to_le_bytes());
                    d[2..4].copy_from_slice(&len.to_le_bytes());
                    d[4..8].copy_from_slice(&((RAM as u32).wrapping_add(off)).to_le_bytes());
                    d
                }),
                1 => any::<[u8; 8]>(),
            ],
        ),
        0..64,
    )
}

struct Rig {
    c: Sdhci,
    mem: VecMemory,
    ev: Rec,
    irq: Signal,
    now: u64,
}

impl Rig {
    fn new(seed: &[(u32, [u8; 8])]) -> Rig {
        let irq = Signal::new();
        let card = SdCard::new(Disk::blank(1 << 20).unwrap(), false, 9).unwrap();
        let c = Sdhci::new(
            "sd0",
            SdhciConfig {
                base_hz: 100_000_000,
                high_speed: true,
                timing: CardTiming {
                    read_latency_ns: 2_000,
                    write_busy_ns: 3_000,
                    erase_busy_ns: 4_000,
                },
            },
            Clock {
                hz: 1_000_000_000,
                cycles_per_tick: 100,
            },
            Box::new(irq.clone()),
            Some(card),
        );
        let mut mem = VecMemory::new(RAM, RAM_SIZE);
        for (slot, d) in seed {
            mem.put(RAM + *slot as u64 * 8, d);
        }
        Rig {
            c,
            mem,
            ev: Rec::default(),
            irq,
            now: 0,
        }
    }

    fn ctx_do<R>(&mut self, f: impl FnOnce(&mut Sdhci, &mut DevCtx) -> R) -> R {
        let mut ctx = DevCtx::new(0, self.now, &mut self.ev);
        ctx.master = Some(&mut self.mem as &mut dyn DmaMemory);
        f(&mut self.c, &mut ctx)
    }

    fn apply(&mut self, op: &Op, log: &mut Vec<u64>) {
        self.now += 7;
        match *op {
            Op::Write { off, size, val } => {
                let r = self.ctx_do(|c, ctx| c.mmio_write(ctx, off, size, val));
                log.push(r.is_ok() as u64);
            }
            Op::Read { off, size } => {
                let r = self.ctx_do(|c, ctx| c.mmio_read(ctx, off, size));
                log.push(r.unwrap_or(u64::MAX));
            }
            Op::Cmd { index, arg, flags } => {
                self.ctx_do(|c, ctx| {
                    let _ = c.mmio_write(ctx, ARGUMENT, 4, arg as u64);
                    let _ = c.mmio_write(ctx, COMMAND, 2, ((index as u64) << 8) | flags as u64);
                });
            }
            Op::Identify => {
                let seq: [(u8, u32, u8); 10] = [
                    (0, 0, 0),
                    (8, 0x1aa, 0x1a),
                    (55, 0, 0x1a),
                    (41, 0x40ff_8000, 2),
                    (55, 0, 0x1a),
                    (41, 0x40ff_8000, 2),
                    (55, 0, 0x1a),
                    (41, 0x40ff_8000, 2),
                    (2, 0, 9),
                    (3, 0, 0x1a),
                ];
                for (index, arg, flags) in seq {
                    self.apply(&Op::Cmd { index, arg, flags }, log);
                    self.apply(&Op::Run(8), log);
                }
                let rca =
                    self.ctx_do(|c, ctx| c.mmio_read(ctx, RESPONSE, 4).unwrap()) & 0xffff_0000;
                self.apply(
                    &Op::Cmd {
                        index: 7,
                        arg: rca as u32,
                        flags: 0x1b,
                    },
                    log,
                );
                self.apply(&Op::Run(8), log);
            }
            Op::Run(n) => {
                for _ in 0..n {
                    let Some(at) = self.ev.0.take() else { break };
                    self.now = self.now.max(at);
                    self.ctx_do(|c, ctx| c.on_event(ctx));
                }
            }
        }
        // The line is exactly "an enabled status bit is set".
        let (nis, eis, nsig, esig) = self.ctx_do(|c, ctx| {
            (
                c.mmio_read(ctx, INT_STATUS, 2).unwrap(),
                c.mmio_read(ctx, ERR_STATUS, 2).unwrap(),
                c.mmio_read(ctx, INT_SIGNAL, 2).unwrap(),
                c.mmio_read(ctx, ERR_SIGNAL, 2).unwrap(),
            )
        });
        assert_eq!(
            self.irq.is_high(),
            nis & nsig != 0 || eis & esig != 0,
            "line vs status after {op:?}"
        );
        assert_eq!(
            nis & 0x8000 != 0,
            eis != 0,
            "the error summary bit follows the error status"
        );
    }
}

fn session(seed: &[(u32, [u8; 8])], ops: &[Op]) -> (Vec<u64>, Vec<(String, u64)>, Vec<u8>) {
    let mut r = Rig::new(seed);
    // Power and a clock, so commands reach the card.
    r.ctx_do(|c, ctx| {
        c.mmio_write(ctx, INT_ENABLE, 4, 0xffff_ffff).unwrap();
        c.mmio_write(ctx, INT_SIGNAL, 4, 0xffff_ffff).unwrap();
        c.mmio_write(ctx, POWER_CONTROL, 1, 0x0f).unwrap();
        c.mmio_write(ctx, CLOCK_CONTROL, 2, 0x0105).unwrap();
    });
    let mut log = Vec::new();
    for op in ops {
        r.apply(op, &mut log);
    }
    let stats = r.c.stats().into_iter().map(|s| (s.name, s.value)).collect();
    (log, stats, r.mem.data.clone())
}

/// The generator reaches the data paths: a fixed session built from the
/// same operations moves blocks by DMA.
#[test]
fn the_operations_reach_the_data_paths() {
    let mut d = [0u8; 8];
    d[0..2].copy_from_slice(&(ADMA_VALID | ADMA_ACT_TRAN | ADMA_END).to_le_bytes());
    d[2..4].copy_from_slice(&1024u16.to_le_bytes());
    d[4..8].copy_from_slice(&((RAM + 0x8000) as u32).to_le_bytes());
    let ops = vec![
        Op::Identify,
        Op::Write {
            off: HOST_CONTROL,
            size: 1,
            val: 0x10,
        },
        Op::Write {
            off: ADMA_ADDRESS,
            size: 4,
            val: RAM + 0x100,
        },
        Op::Write {
            off: BLOCK_SIZE,
            size: 4,
            val: 512 | (2 << 16),
        },
        Op::Write {
            off: TRANSFER_MODE,
            size: 2,
            val: 0x33,
        },
        Op::Cmd {
            index: 18,
            arg: 0,
            flags: 0x3a,
        },
        Op::Run(40),
    ];
    let (_, stats, _) = session(&[(0x100 / 8, d)], &ops);
    let get = |n: &str| stats.iter().find(|s| s.0 == n).unwrap().1;
    assert_eq!(get("sd0.dma_bytes"), 1024, "{stats:?}");
    assert_eq!(get("sd0.adma_descriptors"), 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_driver_never_faults_and_repeats_exactly(seed in memory(), ops in prop::collection::vec(op(), 1..200)) {
        let a = session(&seed, &ops);
        let b = session(&seed, &ops);
        prop_assert_eq!(a, b);
    }
}
