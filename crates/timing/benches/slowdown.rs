//! Slowdown of the in-order model over the atomic one on the same Linux
//! boot (the `debian` image, a workload that only exits, one hart), run
//! side by side. Prints figures; asserts nothing about speed.
//!
//! `cargo bench -p hs-timing`. Environment: `HS_BENCH_IMAGE` (default
//! debian), `HS_BENCH_ROUNDS` (default 2; the best round of each model
//! counts), `HS_BENCH_MAX_CYCLES` (stop each boot early, for quick looks).
//!
//! The ratio compares host CPU time per guest instruction (the in-order
//! model's guest takes more cycles for the same boot, so wall time per
//! guest second would flatter it).

use std::path::{Path, PathBuf};
use std::time::Instant;

use hs_machine::{BootFile, BootImages, Machine, MachineConfig};
use hs_timing::{Atomic, InOrderFactory, MachineDesc, ModelDesc, TimingModel};

fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: one valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

struct Boot {
    firmware: BootFile,
    kernel: BootFile,
    initrd: BootFile,
    append: String,
}

struct Figures {
    instret: u64,
    cycles: u64,
    cpu: f64,
    wall: f64,
    stats: Option<hs_timing::ModelStats>,
}

fn boot<T: TimingModel>(b: &Boot, max_cycles: Option<u64>, model: impl Fn(usize) -> T) -> Figures {
    let cfg = MachineConfig {
        images: BootImages {
            firmware: Some(b.firmware.clone()),
            kernel: Some(b.kernel.clone()),
            initrd: Some(b.initrd.clone()),
        },
        bootargs: b.append.clone(),
        max_cycles,
        ..MachineConfig::default()
    };
    let mut m = Machine::with_timing(cfg, model).expect("machine");
    let (c0, t0) = (cpu_seconds(), Instant::now());
    m.run();
    let (cpu, wall) = (cpu_seconds() - c0, t0.elapsed().as_secs_f64());
    let h = &m.harts()[0];
    Figures {
        instret: h.instret(),
        cycles: h.cycle(),
        cpu,
        wall,
        stats: h.timing.model_stats(),
    }
}

fn main() {
    let image = std::env::var("HS_BENCH_IMAGE").unwrap_or_else(|_| "debian".into());
    let rounds: usize = std::env::var("HS_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let max_cycles: Option<u64> = std::env::var("HS_BENCH_MAX_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok());
    let img = match hs_guest::find(&image) {
        Ok(i) => i,
        Err(e) => {
            println!("slowdown: not measured: {e} (run `hartscope guest build --image {image}`)");
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("hs-slowdown-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let script = dir.join("run.sh");
    std::fs::write(&script, "#!/bin/sh\ntrue\n").expect("workload");
    let initrd = hs_guest::workload_initrd(&img, &script).expect("workload initrd");
    let _ = std::fs::remove_dir_all(&dir);
    let read = |what, p: &PathBuf| BootFile::read(what, p).expect("image file");
    let b = Boot {
        firmware: read("firmware", &img.firmware),
        kernel: read("kernel", &img.kernel),
        initrd: BootFile::from_bytes("initrd", initrd),
        append: img.default_append.clone(),
    };
    let desc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../machines/inorder.toml");
    let ModelDesc::InOrder(cfg) = MachineDesc::load(&desc)
        .expect("machines/inorder.toml")
        .model
    else {
        panic!("machines/inorder.toml is not an inorder description")
    };

    let mut best: [Option<Figures>; 2] = [None, None];
    for round in 1..=rounds {
        // in-order first: with a cycle limit, atomic then runs the same instructions
        let harts = InOrderFactory::new(&cfg);
        let i = boot(&b, max_cycles, |_| harts.build());
        let a = boot(&b, max_cycles.map(|_| i.instret), |_| Atomic);
        for (k, name, f) in [(0, "atomic", a), (1, "inorder", i)] {
            println!(
                "slowdown: round {round} {name:>7}: {} instructions, {} cycles, {:.2} s CPU ({:.2} s wall), {:.1} MIPS",
                f.instret,
                f.cycles,
                f.cpu,
                f.wall,
                f.instret as f64 / f.cpu / 1e6
            );
            let per = |f: &Figures| f.cpu / f.instret as f64;
            if best[k].as_ref().is_none_or(|b| per(&f) < per(b)) {
                best[k] = Some(f);
            }
        }
    }
    let [Some(a), Some(i)] = best else { return };
    if let Some(s) = &i.stats {
        let shape: Vec<String> = s
            .cycle_shape()
            .iter()
            .map(|(n, v)| format!("{} {:.1}%", &n[7..], 100.0 * *v as f64 / i.cycles as f64))
            .collect();
        println!("slowdown: in-order cycle shape: {}", shape.join(", "));
        let names = [
            "icache.misses",
            "dcache.read_accesses",
            "dcache.read_misses",
            "dcache.write_accesses",
            "dcache.write_misses",
            "l2.read_misses",
            "itlb.accesses",
            "itlb.misses",
            "dtlb.accesses",
            "dtlb.misses",
            "bpred.cond_branches",
            "bpred.cond_mispredicts",
            "bpred.jumps",
            "bpred.jump_mispredicts",
            "cycles.mem_stall",
        ];
        let per: Vec<String> = names
            .iter()
            .map(|n| format!("{n} {:.4}", s.get(n).unwrap_or(0) as f64 / i.instret as f64))
            .collect();
        println!("slowdown: in-order per instruction: {}", per.join(", "));
    }
    let (ma, mi) = (
        a.instret as f64 / a.cpu / 1e6,
        i.instret as f64 / i.cpu / 1e6,
    );
    println!(
        "slowdown: {image} boot, best of {rounds}: atomic {ma:.1} MIPS, inorder {mi:.1} MIPS (CPI {:.2}): in-order is {:.2}x atomic",
        i.cycles as f64 / i.instret as f64,
        ma / mi
    );
}
