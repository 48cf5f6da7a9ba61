//! Writes every export of a small synthetic record into a directory, to look
//! at them with real tools (a browser, Perfetto, speedscope).
//! Usage: cargo run -p hs-observe --example demo_report -- OUT_DIR

use hs_observe::export::*;
use hs_observe::symbols::{Mapping, SatpResolver, SymbolTable, Symbolizer};
use hs_observe::{Event, EventKind, HartCounts, Phase, Privilege, Sample, StatBlock, Unit};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: demo_report OUT_DIR")?,
    );
    std::fs::create_dir_all(&out)?;
    let kallsyms = "\
ffffffff80001000 T handle_exception
ffffffff80001100 T do_trap_ecall_u
ffffffff80001200 T ksys_write
ffffffff80001300 T n_tty_write
ffffffff80001400 T uart_write
ffffffff80001500 T serial8250_tx_chars
ffffffff80001600 D data_end
";
    let mut user = SatpResolver::new();
    let bb = user.add_image(
        "busybox",
        SymbolTable::from_ranges(
            "busybox",
            [
                (0x10000, 0x10100, "main".to_string()),
                (0x10100, 0x10400, "printf_core".to_string()),
                (0x10400, 0x10500, "__fwritex".to_string()),
                (0x10500, 0x10600, "write".to_string()),
            ],
        ),
    );
    let satp = 0x8000_0000_0008_1234;
    user.add_space(
        satp,
        0,
        "sh",
        42,
        vec![Mapping {
            start: 0x10000,
            end: 0x20000,
            image: bb,
            bias: 0,
        }],
    );
    let mut sym = Symbolizer::with_user(user);
    sym.set_kernel(SymbolTable::from_kallsyms("demo kallsyms", kallsyms)?);

    // A deterministic pseudo-random mix of stacks.
    let stacks: [(u64, Privilege, &[u64]); 5] = [
        (0x10110, Privilege::User, &[0x10050]),
        (0x10420, Privilege::User, &[0x10150, 0x10050]),
        (
            0xffffffff80001310,
            Privilege::Supervisor,
            &[
                0xffffffff80001220,
                0xffffffff80001120,
                0xffffffff80001010,
                0x10520,
                0x10420,
                0x10050,
            ],
        ),
        (
            0xffffffff80001510,
            Privilege::Supervisor,
            &[
                0xffffffff80001420,
                0xffffffff80001320,
                0xffffffff80001220,
                0xffffffff80001120,
                0xffffffff80001010,
                0x10520,
            ],
        ),
        (0xffffffff80001008, Privilege::Supervisor, &[]),
    ];
    let mut x: u64 = 12345;
    let samples: Vec<Sample> = (0..500u64)
        .map(|i| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let (pc, privilege, stack) = stacks[((x >> 33) % 5) as usize];
            Sample {
                hart: (i % 2) as u16,
                cycle: i * 1024,
                pc,
                privilege,
                satp,
                stack: stack.into(),
                task: None,
            }
        })
        .collect();
    let hz = 50_000_000;
    let folded = fold(
        &samples,
        &sym,
        FoldOptions {
            include_comm: true,
            annotate_kernel: false,
        },
    );
    std::fs::write(
        out.join("perf-script.txt"),
        perf_script(&samples, &sym, hz, 1024)?,
    )?;
    std::fs::write(out.join("folded.txt"), folded_text(&folded))?;
    let opts = FlamegraphOptions {
        title: "demo: sh writing to the console".into(),
        ..Default::default()
    };
    std::fs::write(out.join("flamegraph.svg"), flamegraph_svg(&folded, &opts))?;
    std::fs::write(
        out.join("hot.md"),
        HotFunctions::compute(&samples, &sym, 1024).to_markdown("demo", 5),
    )?;

    let e = |hart, cycle, kind| Event { hart, cycle, kind };
    let events = vec![
        e(0, 1_000, EventKind::Syscall { number: 64 }),
        e(0, 2_000, EventKind::IpiSent { to: 1 }),
        e(1, 0, EventKind::WfiIdle { end_cycle: 2_100 }),
        e(1, 2_100, EventKind::IpiReceived { from: Some(0) }),
        e(
            1,
            2_200,
            EventKind::Interrupt {
                cause: 9,
                plic_source: Some(10),
            },
        ),
        e(0, 9_000, EventKind::SyscallReturn),
        e(
            0,
            12_000,
            EventKind::PhaseMarker {
                label: "uname -a".into(),
            },
        ),
    ];
    let phases = vec![
        Phase {
            index: 1,
            label: "shell banner".into(),
            start_cycle: 0,
            end_cycle: 12_000,
            harts: vec![HartCounts {
                hart: 0,
                cycles: 11_000,
                instret: 4_000,
            }],
        },
        Phase {
            index: 2,
            label: "uname -a".into(),
            start_cycle: 12_000,
            end_cycle: 20_000,
            harts: vec![HartCounts {
                hart: 0,
                cycles: 8_000,
                instret: 3_100,
            }],
        },
    ];
    std::fs::write(out.join("trace.json"), chrome_trace(&events, &phases, hz)?)?;
    std::fs::write(out.join("phases.md"), phase_table(&phases, 20_000))?;
    let mut total = StatBlock::new("total");
    total.add_u64(
        "system.cpu0.cycles",
        19_000,
        Unit::Cycle,
        "Cycles the hart was busy",
    )?;
    total.add_u64(
        "system.cpu0.instret",
        7_100,
        Unit::Count,
        "Instructions retired",
    )?;
    total.add_ratio(
        "system.cpu0.cpi",
        19_000,
        7_100,
        Unit::CyclePerCount,
        "Cycles per instruction",
    )?;
    let blocks: Vec<StatBlock> = phases.iter().map(StatBlock::for_phase).collect();
    std::fs::write(out.join("stats.txt"), stats_txt(&blocks, &total))?;
    println!("wrote {}", out.display());
    Ok(())
}
