//! What observation costs: the same Linux boot (the `debian` image, cut
//! off after a fixed number of guest cycles) run plain, with the sampling
//! profiler, and under the `Observing` wrapper (counts; counts + timeline;
//! counts + sampling). Variants are interleaved, repetition by repetition,
//! so the noise of a shared machine hits them alike; each figure is the
//! CPU time of the thread running the machine. `cargo bench -p hs-machine
//! --bench observe_overhead [-- CYCLES REPEATS]`. It prints figures; it
//! never judges them.

use std::sync::Arc;
use std::time::Duration;

use hs_machine::hs_timing::Atomic;
use hs_machine::{
    BootFile, BootImages, Machine, MachineConfig, ObserveOptions, Observing, SamplerConfig,
};
use hs_observe::UserIdentifier;

fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: one valid timespec for the calling thread's CPU clock.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn config(img: &hs_guest::ImageDir, cycles: u64) -> MachineConfig {
    let read =
        |what, p: &std::path::Path| BootFile::read(what, p).unwrap_or_else(|e| panic!("{e}"));
    MachineConfig {
        images: BootImages {
            firmware: Some(read("firmware", &img.firmware)),
            kernel: Some(read("kernel", &img.kernel)),
            initrd: Some(read("initrd", &img.initrd)),
        },
        bootargs: img.default_append.clone(),
        max_cycles: Some(cycles),
        echo_console: false,
        capture_console: false,
        ..MachineConfig::default()
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Variant {
    Plain,
    Sampling,
    SamplingNoStacks,
    Counts,
    CountsTimeline,
    CountsSampling,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Plain => "atomic (no observation)",
            Variant::Sampling => "atomic + sampling every 1024 cycles",
            Variant::SamplingNoStacks => "atomic + sampling, PC only (no stacks)",
            Variant::Counts => "Observing<atomic>: counts",
            Variant::CountsTimeline => "Observing<atomic>: counts + timeline events",
            Variant::CountsSampling => "Observing<atomic>: counts + sampling",
        }
    }
}

/// CPU seconds of one run and the instructions it retired.
fn run(v: Variant, img: &hs_guest::ImageDir, cycles: u64) -> (f64, u64, usize) {
    let cfg = config(img, cycles);
    let sampling = SamplerConfig::default();
    let ident = Arc::new(UserIdentifier::default());
    let (secs, instret, samples);
    match v {
        Variant::Plain | Variant::Sampling | Variant::SamplingNoStacks => {
            let mut m = Machine::with_timing(cfg, |_| Atomic).unwrap_or_else(|e| panic!("{e}"));
            if v == Variant::Sampling {
                m.enable_sampling(sampling, ident);
            } else if v == Variant::SamplingNoStacks {
                m.enable_sampling(
                    SamplerConfig {
                        max_depth: 0,
                        ..sampling
                    },
                    ident,
                );
            }
            let t0 = thread_cpu();
            m.run();
            secs = (thread_cpu() - t0).as_secs_f64();
            instret = m.summary().instret;
            samples = m.sampler().map_or(0, |s| s.kept());
        }
        _ => {
            let opts = ObserveOptions {
                events: v == Variant::CountsTimeline,
                ..ObserveOptions::default()
            };
            let mut m = Machine::<Observing<Atomic>>::with_observing(cfg, &opts, |_| Atomic)
                .unwrap_or_else(|e| panic!("{e}"));
            if v == Variant::CountsSampling {
                m.enable_sampling(sampling, ident);
            }
            let t0 = thread_cpu();
            m.run();
            secs = (thread_cpu() - t0).as_secs_f64();
            instret = m.summary().instret;
            samples = m.sampler().map_or(0, |s| s.kept());
        }
    }
    (secs, instret, samples)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let cycles: u64 = args
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(400_000_000);
    let repeats: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3).max(1);
    let img = match hs_guest::find("debian") {
        Ok(i) => i,
        Err(e) => {
            eprintln!("observe_overhead: {e}");
            std::process::exit(1);
        }
    };
    let all = [
        Variant::Plain,
        Variant::Sampling,
        Variant::SamplingNoStacks,
        Variant::Counts,
        Variant::CountsTimeline,
        Variant::CountsSampling,
    ];
    // A third argument picks variants by index (e.g. `01` for the first two), to profile one.
    let pick = args.get(2).cloned().unwrap_or_else(|| "012345".into());
    let variants: Vec<Variant> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| pick.contains(&i.to_string()))
        .map(|(_, v)| *v)
        .collect();
    if variants.is_empty() {
        eprintln!(
            "observe_overhead: no variant selected by {pick:?} (indexes 0 to {})",
            all.len() - 1
        );
        std::process::exit(1);
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    let mut info = vec![(0u64, 0usize); variants.len()];
    println!("debian boot, first {cycles} guest cycles, {repeats} interleaved repetitions (thread CPU time)");
    for r in 0..repeats {
        for (i, v) in variants.iter().enumerate() {
            let (s, instret, samples) = run(*v, &img, cycles);
            println!(
                "  rep {} {:<45} {:>8.3} s  {:>6.1} MIPS",
                r + 1,
                v.name(),
                s,
                instret as f64 / s / 1e6
            );
            times[i].push(s);
            info[i] = (instret, samples);
        }
    }
    let base = median(&mut times[0].clone());
    println!(
        "\n{:<45} {:>10} {:>10} {:>8} {:>14} {:>9}",
        "variant", "median s", "min s", "ratio", "instret", "samples"
    );
    for (i, v) in variants.iter().enumerate() {
        let mut t = times[i].clone();
        let med = median(&mut t);
        let min = t.iter().copied().fold(f64::INFINITY, f64::min);
        println!(
            "{:<45} {:>10.3} {:>10.3} {:>8.3} {:>14} {:>9}",
            v.name(),
            med,
            min,
            med / base,
            info[i].0,
            info[i].1
        );
    }
}
