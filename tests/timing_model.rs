//! The timing model seen from inside a guest: `guest/workloads/timingprobe.c`
//! built bare metal and run on the in-order model. Every expectation is
//! derived from the machine description the run used, so the tests say
//! "the step is where the configuration puts it", not "the number is 15".
//!
//! Needs `riscv64-unknown-elf-gcc` (Debian package gcc-riscv64-unknown-elf);
//! without it the tests fail, naming the package.

use std::path::{Path, PathBuf};
use std::process::Command;

use hs_machine::{BootFile, BootImages, Machine, MachineConfig, StopReason};
use hs_timing::{InOrderConfig, InOrderFactory, MachineDesc, ModelDesc, ModelStats, TimingModel};

const BARE_CC: &str = "riscv64-unknown-elf-gcc";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A scratch directory removed when dropped.
struct Scratch(PathBuf);
impl Scratch {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("hs-timing-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
}
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Build the bare-metal probe with working sets up to `max_ws` bytes.
fn probe_elf(dir: &Scratch, max_ws: u64) -> PathBuf {
    let w = root().join("guest/workloads");
    let elf = dir.0.join(format!("timingprobe-{max_ws}.elf"));
    let out = Command::new(BARE_CC)
        .args([
            "-DTIMINGPROBE_BARE_METAL",
            &format!("-DMAX_WS={max_ws}u"),
            "-O2",
            "-march=rv64gc",
            "-mabi=lp64d",
        ])
        .args([
            "-mcmodel=medany",
            "-ffreestanding",
            "-fno-builtin",
            "-fno-tree-loop-distribute-patterns",
        ])
        .args([
            "-nostdlib",
            "-nostartfiles",
            "-static",
            "-Wl,--no-warn-rwx-segments",
            "-T",
        ])
        .arg(w.join("cpubound-bare.ld"))
        .arg(w.join("timingprobe.c"))
        .args(["-lgcc", "-o"])
        .arg(&elf)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run {BARE_CC} (install Debian package gcc-riscv64-unknown-elf): {e}")
        });
    assert!(
        out.status.success(),
        "timingprobe.c does not build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    elf
}

fn preset(name: &str) -> String {
    std::fs::read_to_string(root().join("machines").join(name)).unwrap()
}

fn inorder(text: &str) -> InOrderConfig {
    match MachineDesc::parse(Path::new("test.toml"), text)
        .unwrap()
        .model
    {
        ModelDesc::InOrder(c) => c,
        ModelDesc::Atomic => panic!("not an inorder description"),
    }
}

struct Run {
    console: String,
    cycles: u64,
    instret: u64,
    stats: Option<ModelStats>,
}

fn run_on<T: TimingModel>(elf: &Path, model: impl Fn(usize) -> T) -> Run {
    let cfg = MachineConfig {
        images: BootImages {
            firmware: None,
            kernel: Some(BootFile::read("kernel", elf).unwrap()),
            initrd: None,
        },
        max_cycles: Some(2_000_000_000),
        ..MachineConfig::default()
    };
    let mut m = Machine::with_timing(cfg, model).unwrap();
    let stop = m.run();
    let console = String::from_utf8_lossy(m.console_output()).into_owned();
    assert_eq!(
        stop,
        StopReason::HtifExit(0),
        "the probe did not finish:\n{console}"
    );
    assert!(console.contains("timingprobe: done"), "{console}");
    let h = &m.harts()[0];
    Run {
        console,
        cycles: h.cycle(),
        instret: h.instret(),
        stats: h.timing.model_stats(),
    }
}

fn run_inorder(elf: &Path, cfg: &InOrderConfig) -> Run {
    let f = InOrderFactory::new(cfg);
    run_on(elf, |_| f.build())
}

/// `key=value` fields of the console lines starting with `prefix`.
fn lines(console: &str, prefix: &str) -> Vec<Vec<(String, String)>> {
    console
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn field(l: &[(String, String)], k: &str) -> u64 {
    let v = &l
        .iter()
        .find(|(key, _)| key == k)
        .unwrap_or_else(|| panic!("no {k} in {l:?}"))
        .1;
    v.parse()
        .unwrap_or_else(|_| panic!("{k}={v} is not a number"))
}

/// Working set → (cycles per load, L1D misses per load).
fn chase(console: &str) -> Vec<(u64, f64, f64)> {
    lines(console, "chase ")
        .iter()
        .map(|l| {
            let steps = field(l, "steps") as f64;
            (
                field(l, "ws"),
                field(l, "cycles") as f64 / steps,
                field(l, "l1d_misses") as f64 / steps,
            )
        })
        .collect()
}

fn assert_near(what: &str, got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= tol,
        "{what}: {got:.3} cycles, expected {want:.3} ± {tol}"
    );
}

/// The latency steps sit at the configured L1D and L2 sizes and have the
/// configured heights: + L2 latency past the L1, + memory latency past the L2.
fn check_steps(cfg: &InOrderConfig, sweep: &[(u64, f64, f64)]) {
    let at = |ws: u64| {
        *sweep
            .iter()
            .find(|s| s.0 == ws)
            .unwrap_or_else(|| panic!("no working set {ws}: {sweep:?}"))
    };
    let (l1, l2) = (cfg.l1d.size, cfg.l2.size);
    let base = at(1024).1;
    for &(ws, lat, miss) in sweep {
        let want = if ws <= l1 {
            base
        } else if ws <= l2 / 2 {
            base + cfg.l2.latency as f64
        } else if ws >= 2 * l2 {
            base + (cfg.l2.latency + cfg.memory_latency) as f64
        } else {
            continue; // around the L2 size, code and stack lines share the L2
        };
        assert_near(
            &format!("working set {ws} (L1D {l1}, L2 {l2})"),
            lat,
            want,
            0.02 * want,
        );
        let want_miss = if ws <= l1 { 0.0 } else { 1.0 };
        assert_near(
            &format!("L1D misses per load at {ws}"),
            miss,
            want_miss,
            0.01,
        );
    }
    assert!(
        at(l2).1 < base + cfg.l2.latency as f64 + 0.25 * cfg.memory_latency as f64,
        "{sweep:?}"
    );
}

#[test]
fn pointer_chase_steps_where_the_configuration_puts_the_caches() {
    let dir = Scratch::new("chase");
    let text = preset("inorder.toml");
    let cfg = inorder(&text);
    let elf = probe_elf(&dir, 4 * cfg.l2.size);
    let sweep = chase(&run_inorder(&elf, &cfg).console);
    check_steps(&cfg, &sweep);

    // halve the L1D and the L2, change their latencies: the steps follow
    let text2 = text
        .replace(
            "size = \"16KiB\"\nways = 4\nline = 64\nlatency = 1",
            "size = \"8KiB\"\nways = 2\nline = 64\nlatency = 2",
        )
        .replace(
            "size = \"256KiB\"\nways = 8\nline = 64\nlatency = 12",
            "size = \"128KiB\"\nways = 8\nline = 64\nlatency = 20",
        )
        .replace("[memory]\nlatency = 60", "[memory]\nlatency = 100");
    let cfg2 = inorder(&text2);
    assert_eq!(
        (
            cfg2.l1d.size,
            cfg2.l2.size,
            cfg2.l2.latency,
            cfg2.memory_latency
        ),
        (8192, 131072, 20, 100)
    );
    let sweep2 = chase(&run_inorder(&elf, &cfg2).console);
    check_steps(&cfg2, &sweep2);
    // the L1D hit latency is in the base: one more cycle per load
    assert_near(
        "base latency with a 2-cycle L1D",
        sweep2[0].1,
        sweep[0].1 + 1.0,
        0.01,
    );

    // the atomic model has no memory hierarchy: flat
    let flat = chase(&run_on(&elf, |_| hs_timing::Atomic).console);
    assert!(
        flat.iter().all(|s| (s.1 - flat[0].1).abs() < 0.01),
        "{flat:?}"
    );
}

fn branches(console: &str) -> [(u64, u64, u64); 2] {
    let b = lines(console, "branch ");
    assert_eq!(b.len(), 2, "{console}");
    let get =
        |l: &Vec<(String, String)>| (field(l, "cycles"), field(l, "misses"), field(l, "branches"));
    [get(&b[0]), get(&b[1])]
}

#[test]
fn mispredicted_branches_cost_the_configured_penalty() {
    let dir = Scratch::new("branch");
    let elf = probe_elf(&dir, 64 << 10);
    let text = preset("inorder.toml");
    let n = 8192u64;
    for (kind, penalty) in [("gshare", 3u64), ("gshare", 11), ("bimodal", 7)] {
        // without the taken-branch bubble the difference is mispredictions x penalty exactly
        let mut t = text
            .replace(
                "mispredict_penalty = 3",
                &format!("mispredict_penalty = {penalty}"),
            )
            .replace("taken_penalty = 1", "taken_penalty = 0");
        if kind == "bimodal" {
            t = t
                .replace("kind = \"gshare\"", "kind = \"bimodal\"")
                .replace("history_bits = 6\n", "");
        }
        let cfg = inorder(&t);
        assert_eq!(
            (cfg.bpred.mispredict_penalty, cfg.bpred.taken_penalty),
            (penalty, 0)
        );
        let [(c_rand, m_rand, b_rand), (c_sort, m_sort, b_sort)] =
            branches(&run_inorder(&elf, &cfg).console);
        assert_eq!((b_rand, b_sort), (2 * n, 2 * n), "two branches per byte");
        assert!(
            m_rand > n * 2 / 5 && m_rand < n * 3 / 5,
            "{kind}: random bits mispredicted {m_rand} of {n}"
        );
        assert!(
            m_sort < 40,
            "{kind}: sorted bits mispredicted {m_sort} times"
        );
        assert_eq!(
            c_rand - c_sort,
            (m_rand - m_sort) * penalty,
            "{kind}, penalty {penalty}"
        );
    }
    // with the preset's taken bubble: between (pen - bubble) and pen per extra miss
    let cfg = inorder(&text);
    let [(c_rand, m_rand, _), (c_sort, m_sort, _)] = branches(&run_inorder(&elf, &cfg).console);
    let (pen, bubble) = (cfg.bpred.mispredict_penalty, cfg.bpred.taken_penalty);
    let extra = m_rand - m_sort;
    assert!(
        c_rand - c_sort >= extra * (pen - bubble) && c_rand - c_sort <= extra * pen,
        "{c_rand} {c_sort} {extra}"
    );
}

#[test]
fn the_same_run_twice_gives_identical_counts() {
    let dir = Scratch::new("twice");
    let elf = probe_elf(&dir, 512 << 10);
    let cfg = inorder(&preset("inorder.toml"));
    let (a, b) = (run_inorder(&elf, &cfg), run_inorder(&elf, &cfg));
    assert_eq!(a.console, b.console);
    assert_eq!((a.cycles, a.instret), (b.cycles, b.instret));
    let (sa, sb) = (a.stats.unwrap(), b.stats.unwrap());
    assert_eq!(sa, sb);
    // bare metal never idles: the cycle shape covers every cycle but the
    // final spin after the exit request
    assert!(sa.get("cycles.busy").unwrap() <= a.cycles);
    assert!(
        sa.get("cycles.busy").unwrap() + 100_000 > a.cycles,
        "{} vs {}",
        sa.get("cycles.busy").unwrap(),
        a.cycles
    );
}

#[test]
fn a_bad_machine_description_is_one_sentence_naming_file_and_key() {
    let dir = Scratch::new("badfile");
    let bad = dir.0.join("bad.toml");
    std::fs::write(&bad, preset("inorder.toml").replace("ways = 8", "ways = 0")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hartscope"))
        .args(["boot", "--machine"])
        .arg(&bad)
        .args(["-bios", "none", "-kernel"])
        .arg(root().join("machines/inorder.toml")) // any readable file: the description fails first
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(
        err.trim(),
        format!(
            "hartscope: machine description {}: key `l2.ways`: 0 ways: a cache needs at least one",
            bad.display()
        )
    );
}

/// Linux sees the model: OpenSBI finds the hpm counters through the
/// device tree's `riscv,pmu` node, the kernel's SBI PMU driver registers,
/// and perf_event_open counters in the guest count the model's events.
#[test]
fn linux_reads_the_model_through_the_sbi_pmu() {
    if let Err(e) = hs_guest::find("debian") {
        panic!("the debian image is missing ({e}): run `hartscope guest build`");
    }
    let cfg = inorder(&preset("inorder.toml"));
    let out = Command::new(env!("CARGO_BIN_EXE_hartscope"))
        .args(["boot", "--image", "debian", "--machine"])
        .arg(root().join("machines/inorder.toml"))
        .arg("--workload")
        .arg(root().join("guest/workloads/timingprobe-run"))
        .output()
        .unwrap();
    let console = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{console}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        console.contains("Boot HART MHPM Info         : 29 (0xfffffff8)"),
        "{console}"
    );
    assert!(
        console.contains("riscv-pmu-sbi: 16 firmware and 31 hardware counters"),
        "{console}"
    );
    for c in ["branch-misses", "branches", "L1-dcache-load-misses"] {
        assert!(
            console.contains(&format!("timingprobe: perf counter {c} open")),
            "{console}"
        );
    }
    let [(_, m_rand, b_rand), (_, m_sort, b_sort)] = branches(&console);
    assert!(
        b_rand >= 16384 && b_sort >= 16384,
        "perf counts at least the probe's branches: {b_rand} {b_sort}"
    );
    assert!(
        m_rand > 3500 && m_sort < m_rand / 4,
        "random {m_rand}, sorted {m_sort} mispredictions"
    );
    // rdtime ticks: 100 cycles each at the default 1000 MHz
    let sweep = chase(&console);
    let ticks = |ws: u64| sweep.iter().find(|s| s.0 == ws).unwrap().1 * 100.0;
    let step = ticks(2 * cfg.l1d.size) - ticks(cfg.l1d.size / 2);
    assert_near(
        "L1 to L2 step inside Linux",
        step,
        cfg.l2.latency as f64,
        0.1 * cfg.l2.latency as f64,
    );
    let l1d_misses = |ws: u64| sweep.iter().find(|s| s.0 == ws).unwrap().2;
    assert!(
        l1d_misses(cfg.l1d.size / 2) < 0.05 && l1d_misses(2 * cfg.l1d.size) > 0.95,
        "{sweep:?}"
    );
    for c in ["branch-misses", "branches", "L1-dcache-load-misses"] {
        assert!(
            console.contains(&format!("timingprobe: perf counter {c} counted ")),
            "{c} counted on the in-order model: {console}"
        );
    }
}

/// The atomic model counts no hardware events; its device tree maps none,
/// so an event the model does not count never runs (what `perf stat` shows
/// as `<not counted>` / `<not supported>`) instead of counting a 0 that
/// looks measured.
#[test]
fn the_atomic_model_advertises_no_events_it_does_not_count() {
    if let Err(e) = hs_guest::find("custom") {
        panic!("the custom image is missing ({e})");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_hartscope"))
        .args(["boot", "--image", "custom", "--workload"])
        .arg(root().join("guest/workloads/timingprobe-run"))
        .output()
        .unwrap();
    let console = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{console}");
    for c in ["branch-misses", "branches", "L1-dcache-load-misses"] {
        assert!(
            console.contains(&format!(
                "timingprobe: perf counter {c} <not counted> (time running 0)"
            )),
            "{c} on the atomic model: {console}"
        );
    }
}

/// Sscofpmf end to end (issue 11): on the in-order model both kernels
/// sample — `perfsample` (guest/workloads/perfsample.c) opens sampling
/// events as `perf record` does and counts the PERF_RECORD_SAMPLE records:
/// one per PERIOD events (the overflow interrupt is taken within 256 cycles
/// of the wrap), `exclude_kernel` filters by mode (SINH), and the overflow
/// interrupt is counted as `riscv-pmu` in /proc/interrupts. On the atomic
/// model, which counts no hpm events, cycles stay on the fixed counter and
/// nothing samples.
#[test]
fn linux_samples_on_counter_overflow_interrupts_with_sscofpmf() {
    let script = "perfsample cycles 100000 2000000\nperfsample instructions 100000 2000000 user\ngrep riscv-pmu /proc/interrupts\n";
    let dir = std::env::temp_dir().join(format!("hs-perfsample-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run_sh = dir.join("run.sh");
    std::fs::write(&run_sh, script).unwrap();
    let boot = |image: &str, machine: Option<&str>| -> String {
        let mut c = Command::new(env!("CARGO_BIN_EXE_hartscope"));
        c.args(["boot", "--image", image, "--workload"])
            .arg(&run_sh);
        if let Some(m) = machine {
            c.arg("--machine").arg(root().join(m));
        }
        let out = c.output().unwrap();
        let console = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{console}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        console
    };
    let result = |console: &str, ev: &str| -> (u64, u64, u64) {
        let l = console
            .lines()
            .find(|l| l.starts_with(&format!("perfsample: {ev} period 100000:")))
            .unwrap_or_else(|| panic!("no {ev} line:\n{console}"));
        let n = |w: &str| -> u64 {
            let words: Vec<&str> = l.split_whitespace().collect();
            let at = words
                .iter()
                .position(|x| x.trim_end_matches([',', ';']) == w)
                .unwrap();
            words[at - 1].parse().unwrap()
        };
        let count: u64 = l.rsplit("count ").next().unwrap().trim().parse().unwrap();
        (n("samples"), n("in"), count)
    };
    for image in ["custom", "debian"] {
        if let Err(e) = hs_guest::find(image) {
            panic!("the {image} image is missing ({e})");
        }
        let console = boot(image, Some("machines/inorder.toml"));
        let (samples, user, count) = result(&console, "cycles");
        assert!(
            count > 20_000_000,
            "{image}: {count} cycles for 2M loop iterations"
        );
        assert!(
            samples.abs_diff(count / 100_000) <= 2,
            "{image}: {samples} samples for {count} cycles at period 100000"
        );
        assert!(
            user + 8 >= samples,
            "{image}: the loop runs in user mode: {user} of {samples}"
        );
        // exclude_kernel: exactly the loop's 4 instructions x 2M, 80 samples
        let (samples, _, count) = result(&console, "instructions");
        assert!(
            (8_000_000..8_000_100).contains(&count),
            "{image}: user-only count {count}"
        );
        assert_eq!(samples, 80, "{image}");
        let irq = console
            .lines()
            .find(|l| l.contains("INTC") && l.trim_end().ends_with("riscv-pmu"))
            .unwrap_or_else(|| panic!("{image}: no riscv-pmu interrupt line:\n{console}"));
        let taken: u64 = irq.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(taken >= 320, "{image}: {taken} overflow interrupts: {irq}");
    }
    let console = boot("custom", None);
    let (samples, _, count) = result(&console, "cycles");
    assert!(count > 0, "the fixed cycle counter still counts on atomic");
    assert_eq!(samples, 0, "atomic cannot sample: {console}");
    let _ = std::fs::remove_dir_all(&dir);
}
