//! Fabricated run records with fixed values, for report tests and examples
//! that must not depend on the emulator or on host time.

use std::collections::BTreeMap;

use hs_observe::{Event, EventKind, HartCounts, Observations, Phase, StatBlock, Unit};

use crate::record::*;
use crate::run::BOOT_PHASE;

/// A one-hart run of `cycles` cycles whose workload phases have the given
/// lengths (the boot phase takes the rest). CPI is 1.25 throughout; with
/// `profile`, the samples name the console path of variant `variant`
/// (`A` writes through the SBI console, anything else through the 8250).
pub fn run(variant: &str, cycles: u64, phases: &[(&str, u64)], profile: bool) -> RunRecord {
    let workload: u64 = phases.iter().map(|p| p.1).sum();
    let boot = cycles.saturating_sub(workload);
    let mut all = vec![(BOOT_PHASE, boot)];
    all.extend(phases.iter().copied());
    let mut start = 0;
    let phases: Vec<Phase> = all
        .iter()
        .enumerate()
        .map(|(i, (label, len))| {
            let p = Phase {
                index: i as u32 + 1,
                label: label.to_string(),
                start_cycle: start,
                end_cycle: start + len,
                harts: vec![HartCounts {
                    hart: 0,
                    cycles: *len,
                    instret: len * 4 / 5,
                }],
            };
            start += len;
            p
        })
        .collect();
    let instret = cycles * 4 / 5;
    let mut total = StatBlock::new("total");
    let _ = total.add_u64("system.cycles", cycles, Unit::Cycle, "Machine cycles");
    let _ = total.add_u64(
        "system.instret",
        instret,
        Unit::Count,
        "Instructions retired",
    );
    let _ = total.add_u64(
        "system.cpu0.exceptions",
        if variant == "A" { 9_000 } else { 4_000 },
        Unit::Count,
        "Traps",
    );
    let sbi = variant == "A";
    let prof = profile.then(|| {
        let mut rows = vec![
            ProfileRow {
                symbol: "printf_core".into(),
                place: "busybox".into(),
                samples: 3_593,
            },
            ProfileRow {
                symbol: "memset".into(),
                place: "kernel".into(),
                samples: 3_286,
            },
            ProfileRow {
                symbol: "n_tty_write".into(),
                place: "kernel".into(),
                samples: if sbi { 1_613 } else { 847 },
            },
        ];
        if sbi {
            rows.push(ProfileRow {
                symbol: "hvc_sbi_tty_put".into(),
                place: "kernel".into(),
                samples: 264,
            });
            rows.push(ProfileRow {
                symbol: "sbi_console_putchar".into(),
                place: "kernel".into(),
                samples: 173,
            });
        } else {
            rows.push(ProfileRow {
                symbol: "serial8250_tx_chars".into(),
                place: "kernel".into(),
                samples: 120,
            });
        }
        Profile {
            period: 1024,
            total_samples: rows.iter().map(|r| r.samples).sum(),
            rows,
            notes: vec![],
            from_cycle: 0,
            window: "from phase `shell banner` to the end; boot left out".into(),
            to_cycle: None,
            phases: vec![PhaseProfile {
                label: "shell banner".into(),
                samples: 40,
                rows: vec![ProfileRow {
                    symbol: "n_tty_write".into(),
                    place: "kernel".into(),
                    samples: 30,
                }],
            }],
            groups: vec![],
            tasks: vec![TaskCount {
                comm: "sh".into(),
                kernel: 150,
                user: 50,
            }],
        }
    });
    let events = if profile {
        vec![
            Event {
                hart: 0,
                cycle: 10,
                kind: EventKind::Syscall { number: 64 },
            },
            Event {
                hart: 0,
                cycle: 20,
                kind: EventKind::Syscall { number: 64 },
            },
            Event {
                hart: 0,
                cycle: 30,
                kind: EventKind::Interrupt {
                    cause: 9,
                    plic_source: Some(10),
                },
            },
        ]
    } else {
        vec![]
    };
    let console = format!("hartscope p87 shell workload\nvariant {variant}\nhartscope-agent: workload exited with status 0\n");
    RunRecord {
        study: "console-path".into(),
        variant: variant.into(),
        repeat: 0,
        scenario: ScenarioSource {
            path: "studies/console-path.toml".into(),
            sha256: "5c3e".repeat(16),
            text: "[study]\nname = \"console-path\"\n".into(),
        },
        hartscope_version: "0.1.0".into(),
        image: ImageInfo {
            name: "custom".into(),
            manifest: serde_json::json!({
                "name": "custom",
                "recipe_hash": "b40a7d9ea408757a".repeat(4),
                "kernel_release": "6.1.192-hartscope",
                "packages": [
                    {"name": "opensbi", "version": "1.6-1", "sha256": "ab".repeat(32), "role": "firmware"},
                    {"name": "linux-source-6.1", "version": "6.1.192-1", "sha256": "", "role": "kernel source"}
                ]
            }),
        },
        machine: MachineInfo {
            harts: 1,
            memory_bytes: 512 << 20,
            mhz: 1000,
            quantum: 10_000,
            bootargs: if sbi {
                "console=hvc0".into()
            } else {
                "console=ttyS0".into()
            },
            timing: "atomic".into(),
            description: None,
        },
        workload: WorkloadInfo {
            dir: "guest/workloads/p87-shell".into(),
            env: BTreeMap::new(),
            initrd_sha256: "11".repeat(32),
        },
        console: ConsoleInfo {
            bytes: console.len() as u64,
            sha256: crate::sha256_hex(console.as_bytes()),
            text: console,
        },
        exit_status: Some(0),
        stop: "the guest powered off".into(),
        counters: Counters {
            cycles,
            instret,
            guest_seconds: cycles as f64 / 1e9,
            host_seconds: 1.5,
            mips: 60.0,
            harts: vec![HartCounters {
                hart: 0,
                cycles,
                instret,
            }],
            devices: BTreeMap::from([
                ("uart0.irqs".to_string(), if sbi { 0 } else { 229 }),
                ("uart0.tx_bytes".to_string(), 9_287),
            ]),
            unknown_markers: 0,
            bad_markers: 0,
        },
        observations: Observations {
            guest_hz: 1_000_000_000,
            sample_period: if profile { 1024 } else { 0 },
            total,
            phase_stats: phases.iter().map(StatBlock::for_phase).collect(),
            phases,
            samples: vec![],
            events,
            itrace: vec![],
        },
        profile: prof,
        guest_metrics: BTreeMap::new(),
        artefacts: vec![Artefact {
            kind: "console".into(),
            path: format!("studies/results/console-path/{variant}/console.txt"),
        }],
        shared_boot: None,
        started_at: "2026-01-02T03:04:05Z".into(),
        finished_at: "2026-01-02T03:04:07Z".into(),
    }
}

/// The P87-shaped pair: A through the SBI console, B through the 8250.
pub fn console_path_pair(profile: bool) -> (RunRecord, RunRecord) {
    let a = run(
        "A",
        223_777_049,
        &[
            ("shell banner", 36_090_719),
            ("echo", 20_376),
            ("uname -a", 2_512_591),
            ("ls /bin /usr/share", 34_108_367),
        ],
        profile,
    );
    let b = run(
        "B",
        222_825_777,
        &[
            ("shell banner", 36_231_026),
            ("echo", 1_598),
            ("uname -a", 2_544_990),
            ("ls /bin /usr/share", 31_752_029),
        ],
        profile,
    );
    (a, b)
}
