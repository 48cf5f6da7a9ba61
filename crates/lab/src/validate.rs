//! Timing-model validation against a real board: the published `perf stat`
//! counts of the `riscv-validation` microbenchmarks (darchr/riscv-validation,
//! gem5 workshop at ISCA 2023) on a HiFive Unmatched, gem5's figures for the
//! same benchmarks, and hartscope's counts of each benchmark run as a Linux
//! process (`hsperfstat` lines on the console). This module reads the
//! tables, pairs the figures and writes the report; `hartscope validate`
//! builds and runs the suite.

use std::collections::BTreeMap;
use std::path::Path;

use crate::doc::{Block, Chart, Table};
use crate::report::thousands;

/// One benchmark's counts, as `perf stat` reports them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Counts {
    pub instructions: f64,
    pub cycles: f64,
    pub branches: f64,
    pub branch_misses: f64,
}

impl Counts {
    pub fn ipc(&self) -> f64 {
        self.instructions / self.cycles
    }
    /// Branch misses per branch, in percent.
    pub fn miss_rate(&self) -> f64 {
        100.0 * self.branch_misses / self.branches
    }
}

/// Read one of the suite's CSV tables (`Benchmark,Instructions,Cycles,
/// Seconds,Branches,Branch-misses`): counts by benchmark name.
pub fn read_table(path: &Path) -> Result<BTreeMap<String, Counts>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap_or("")
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .collect();
    let col = |name: &str| {
        header.iter().position(|h| h == name).ok_or_else(|| {
            format!(
                "{}: no `{name}` column in its header (expected Benchmark,Instructions,Cycles,Seconds,Branches,Branch-misses)",
                path.display()
            )
        })
    };
    let (b, i, c, br, bm) = (
        col("benchmark")?,
        col("instructions")?,
        col("cycles")?,
        col("branches")?,
        col("branch-misses")?,
    );
    let mut out = BTreeMap::new();
    for (n, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let num = |k: usize, what: &str| -> Result<f64, String> {
            let v = cells.get(k).copied().unwrap_or("");
            match v.parse::<f64>() {
                Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
                _ => Err(format!(
                    "{} line {}: {what} `{v}` is not a count",
                    path.display(),
                    n + 2
                )),
            }
        };
        let name = cells.get(b).copied().unwrap_or("").to_string();
        if name.is_empty() {
            return Err(format!(
                "{} line {}: no benchmark name",
                path.display(),
                n + 2
            ));
        }
        let counts = Counts {
            instructions: num(i, "instructions")?,
            cycles: num(c, "cycles")?,
            branches: num(br, "branches")?,
            branch_misses: num(bm, "branch-misses")?,
        };
        if counts.cycles == 0.0 {
            return Err(format!("{} line {}: 0 cycles", path.display(), n + 2));
        }
        out.insert(name, counts);
    }
    Ok(out)
}

/// What `hsperfstat` printed for one benchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// `None` for a counter the guest kernel refused or never ran.
    pub instructions: Option<f64>,
    pub cycles: Option<f64>,
    pub branches: Option<f64>,
    pub branch_misses: Option<f64>,
    pub status: i64,
}

impl Measured {
    pub fn counts(&self) -> Option<Counts> {
        Some(Counts {
            instructions: self.instructions?,
            cycles: self.cycles.filter(|&c| c > 0.0)?,
            branches: self.branches?,
            branch_misses: self.branch_misses?,
        })
    }
}

/// The `hsperfstat NAME instructions=N cycles=N branches=N branch-misses=N
/// status=S` lines of a console, by name.
pub fn parse_console(console: &str) -> BTreeMap<String, Measured> {
    let mut out = BTreeMap::new();
    for line in console.lines() {
        let mut words = line.trim_end_matches('\r').split_whitespace();
        if words.next() != Some("hsperfstat") {
            continue;
        }
        let Some(name) = words.next() else { continue };
        let mut kv = BTreeMap::new();
        for w in words {
            if let Some((k, v)) = w.split_once('=') {
                if let Ok(x) = v.parse::<i64>() {
                    kv.insert(k.to_string(), x);
                }
            }
        }
        let get = |k: &str| kv.get(k).copied().filter(|&v| v >= 0).map(|v| v as f64);
        let Some(&status) = kv.get("status") else {
            continue;
        };
        out.insert(
            name.to_string(),
            Measured {
                instructions: get("instructions"),
                cycles: get("cycles"),
                branches: get("branches"),
                branch_misses: get("branch-misses"),
                status,
            },
        );
    }
    out
}

/// hartscope's own counters of one benchmark: its phase (from the marker
/// hsperfstat writes before it to the one after), summed over harts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    pub instructions: u64,
    /// Cycles the timing model accounted for, and their cycle shape.
    pub busy: u64,
    pub fetch: u64,
    pub execute: u64,
    pub mem: u64,
    pub walker: u64,
    pub l1i_misses: u64,
    pub l1d_misses: u64,
    pub l2_misses: u64,
    pub dtlb_misses: u64,
    pub l2tlb_misses: u64,
    pub writebacks: u64,
}

/// Per-benchmark counters from a boot's `--stats-json` (phases named after
/// the benchmarks); a benchmark without a phase is left out.
pub fn observed_from_stats(stats: &serde_json::Value) -> BTreeMap<String, Observed> {
    let mut out = BTreeMap::new();
    let Some(phases) = stats.pointer("/stats/phases").and_then(|p| p.as_array()) else {
        return out;
    };
    for p in phases {
        let Some(label) = p.get("label").and_then(|l| l.as_str()) else {
            continue;
        };
        // "phase N: NAME"
        let name = label.split_once(": ").map_or(label, |(_, n)| n);
        let mut o = Observed::default();
        for st in p
            .get("stats")
            .and_then(|s| s.as_array())
            .into_iter()
            .flatten()
        {
            let (Some(n), Some(v)) = (
                st.get("name").and_then(|n| n.as_str()),
                st.get("value").and_then(|v| v.as_u64()),
            ) else {
                continue;
            };
            // system.cpuN.<what>
            let Some(what) = n
                .strip_prefix("system.cpu")
                .and_then(|r| r.split_once('.'))
                .map(|(_, w)| w)
            else {
                continue;
            };
            let slot = match what {
                "instret" => &mut o.instructions,
                "model.cycles.busy" => &mut o.busy,
                "cycleShape.fetch" => &mut o.fetch,
                "cycleShape.execute" => &mut o.execute,
                "cycleShape.mem" => &mut o.mem,
                "cycleShape.walker" => &mut o.walker,
                "model.icache.misses" => &mut o.l1i_misses,
                "model.dcache.read_misses" | "model.dcache.write_misses" => &mut o.l1d_misses,
                "model.l2.read_misses" | "model.l2.write_misses" => &mut o.l2_misses,
                "model.dtlb.misses" => &mut o.dtlb_misses,
                "model.l2tlb.misses" => &mut o.l2tlb_misses,
                "model.dcache.writebacks" => &mut o.writebacks,
                _ => continue,
            };
            *slot += v;
        }
        if o.instructions > 0 {
            out.insert(name.to_string(), o);
        }
    }
    out
}

/// The set a benchmark belongs to: parameters may be tuned on the
/// control/execution/data-parallel ones only; the memory ones validate.
pub fn is_calibration(name: &str) -> bool {
    matches!(name.chars().next(), Some('C' | 'E' | 'D'))
}

/// |ln(IPC_sim / IPC_board)|: the suite's error measure (symmetric in over-
/// and under-estimates).
pub fn log_error(sim_ipc: f64, board_ipc: f64) -> f64 {
    (sim_ipc / board_ipc).ln().abs()
}

/// Within ±15% of the board's IPC.
pub fn within_15(sim_ipc: f64, board_ipc: f64) -> bool {
    (sim_ipc / board_ipc - 1.0).abs() <= 0.15
}

/// Everything a report is made of.
pub struct Inputs<'a> {
    pub board: &'a BTreeMap<String, Counts>,
    pub gem5_tuned: &'a BTreeMap<String, Counts>,
    pub gem5_original: &'a BTreeMap<String, Counts>,
    pub measured: &'a BTreeMap<String, Measured>,
    /// hartscope's own counters per benchmark (may be empty).
    pub observed: &'a BTreeMap<String, Observed>,
    /// Benchmarks reported apart (the suite's binary differs from the
    /// board's), with the reason.
    pub apart: &'a BTreeMap<String, String>,
    /// Provenance lines (suite commit, machine, image, compiler).
    pub provenance: &'a [String],
}

/// Summary of one set of benchmarks against the board.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean_log_error: f64,
    pub within_15: usize,
}

fn summarise<'a>(pairs: impl Iterator<Item = (f64, f64)> + 'a) -> Summary {
    let mut s = Summary::default();
    let mut total = 0.0;
    for (sim, board) in pairs {
        s.n += 1;
        total += log_error(sim, board);
        s.within_15 += within_15(sim, board) as usize;
    }
    if s.n > 0 {
        s.mean_log_error = total / s.n as f64;
    }
    s
}

/// One benchmark's row: names and the IPCs that exist.
struct Row {
    name: String,
    board: Counts,
    ours: Option<Counts>,
    tuned: Option<Counts>,
    original: Option<Counts>,
}

fn rows(inp: &Inputs) -> Vec<Row> {
    inp.board
        .iter()
        .map(|(name, b)| Row {
            name: name.clone(),
            board: *b,
            ours: inp.measured.get(name).and_then(|m| m.counts()),
            tuned: inp.gem5_tuned.get(name).copied(),
            original: inp.gem5_original.get(name).copied(),
        })
        .collect()
}

/// The summaries for (all, calibration set, validation set), over the
/// benchmarks hartscope measured and not reported apart:
/// `sim` picks the simulator's counts of a row.
fn summaries(
    rows: &[Row],
    apart: &BTreeMap<String, String>,
    sim: fn(&Row) -> Option<Counts>,
) -> [Summary; 3] {
    let kept = || {
        rows.iter()
            .filter(|r| !apart.contains_key(&r.name) && r.ours.is_some())
            .filter_map(|r| sim(r).map(|s| (r, s.ipc(), r.board.ipc())))
    };
    [
        summarise(kept().map(|(_, s, b)| (s, b))),
        summarise(
            kept()
                .filter(|(r, ..)| is_calibration(&r.name))
                .map(|(_, s, b)| (s, b)),
        ),
        summarise(
            kept()
                .filter(|(r, ..)| !is_calibration(&r.name))
                .map(|(_, s, b)| (s, b)),
        ),
    ]
}

/// Summaries of hartscope, gem5 tuned and gem5 original (all, calibration,
/// validation), over the same benchmarks.
pub fn headline(inp: &Inputs) -> [[Summary; 3]; 3] {
    let r = rows(inp);
    [
        summaries(&r, inp.apart, |r| r.ours),
        summaries(&r, inp.apart, |r| r.tuned),
        summaries(&r, inp.apart, |r| r.original),
    ]
}

fn f3(v: f64) -> String {
    format!("{v:.3}")
}

fn pct(sim: f64, board: f64) -> String {
    format!("{:+.1}%", 100.0 * (sim / board - 1.0))
}

/// The report: the summary table, the per-benchmark table, the chart and
/// the branch-miss comparison.
pub fn report(inp: &Inputs) -> Vec<Block> {
    let rows = rows(inp);
    let h = headline(inp);
    let mut out = vec![Block::Heading(
        1,
        "U74 validation: hartscope against a HiFive Unmatched".into(),
    )];
    out.push(Block::Para(
        "Each benchmark of the suite's `microbench-vertical` set, built by the suite's own Makefile, runs as a Linux process; `hsperfstat` counts it as `perf stat -e cycles,instructions,branches,branch-misses` did on the board (the whole process, user and kernel). Board and gem5 figures are the suite's own tables (named below). Error = |ln(IPC_sim / IPC_board)|; \"±15%\" counts benchmarks whose IPC is within 15% of the board's.".into(),
    ));
    let mut s = Table::new(
        &[
            "simulator",
            "set",
            "benchmarks",
            "mean |ln IPC ratio|",
            "within ±15%",
        ],
        &[false, false, true, true, true],
    );
    let sets = [
        "all",
        "calibration (C*, E*, D*)",
        "validation (M*, ML2*, ST*)",
    ];
    for (sim, name) in h.iter().zip(["hartscope", "gem5 tuned", "gem5 original"]) {
        for (sum, set) in sim.iter().zip(sets) {
            s.row(vec![
                name.into(),
                set.into(),
                sum.n.to_string(),
                f3(sum.mean_log_error),
                format!("{} of {}", sum.within_15, sum.n),
            ]);
        }
    }
    out.push(Block::Heading(2, "Summary".into()));
    out.push(Block::Table(s));
    let missing: Vec<&str> = rows
        .iter()
        .filter(|r| r.ours.is_none())
        .map(|r| r.name.as_str())
        .collect();
    if !missing.is_empty() {
        out.push(Block::Para(format!(
            "NOT RUN or not counted (left out of every summary): {}.",
            missing.join(", ")
        )));
    }

    let mut t = Table::new(
        &[
            "benchmark",
            "set",
            "board IPC",
            "hartscope IPC",
            "error",
            "gem5 tuned IPC",
            "error",
            "gem5 original IPC",
            "instructions vs board",
        ],
        &[false, false, true, true, true, true, true, true, true],
    );
    let mut chart = Chart {
        title: "IPC by benchmark".into(),
        unit: "IPC".into(),
        series: vec!["board".into(), "hartscope".into(), "gem5 tuned".into()],
        categories: Vec::new(),
        stacked: false,
    };
    for r in &rows {
        let b = r.board.ipc();
        let set = if inp.apart.contains_key(&r.name) {
            "apart"
        } else if is_calibration(&r.name) {
            "calibration"
        } else {
            "validation"
        };
        let cell = |c: Option<Counts>| c.map(|c| f3(c.ipc())).unwrap_or_else(|| "—".into());
        let err = |c: Option<Counts>| c.map(|c| pct(c.ipc(), b)).unwrap_or_else(|| "—".into());
        t.row(vec![
            r.name.clone(),
            set.into(),
            f3(b),
            cell(r.ours),
            err(r.ours),
            cell(r.tuned),
            err(r.tuned),
            cell(r.original),
            r.ours
                .map(|c| format!("{:.3}×", c.instructions / r.board.instructions))
                .unwrap_or_else(|| "—".into()),
        ]);
        chart.categories.push((
            r.name.clone(),
            vec![
                b,
                r.ours.map(|c| c.ipc()).unwrap_or(0.0),
                r.tuned.map(|c| c.ipc()).unwrap_or(0.0),
            ],
        ));
    }
    out.push(Block::Heading(2, "IPC by benchmark".into()));
    out.push(Block::Table(t));
    out.push(Block::Chart(chart));
    if !inp.apart.is_empty() {
        let list: Vec<String> = inp
            .apart
            .iter()
            .map(|(n, why)| format!("{n}: {why}"))
            .collect();
        out.push(Block::Para(format!(
            "Reported apart (in no summary): {}.",
            list.join("; ")
        )));
    }

    let mut m = Table::new(
        &[
            "benchmark",
            "board branches",
            "hartscope branches",
            "board miss rate",
            "hartscope miss rate",
            "difference (points)",
            "gem5 tuned miss rate",
        ],
        &[false, true, true, true, true, true, true],
    );
    for r in &rows {
        let Some(o) = r.ours else { continue };
        m.row(vec![
            r.name.clone(),
            thousands(r.board.branches as i64),
            thousands(o.branches as i64),
            format!("{:.2}%", r.board.miss_rate()),
            format!("{:.2}%", o.miss_rate()),
            format!("{:+.2}", o.miss_rate() - r.board.miss_rate()),
            r.tuned
                .map(|c| format!("{:.2}%", c.miss_rate()))
                .unwrap_or_else(|| "—".into()),
        ]);
    }
    out.push(Block::Heading(2, "Branches and branch misses".into()));
    out.push(Block::Table(m));
    if !inp.observed.is_empty() {
        out.push(Block::Heading(2, "Where hartscope's cycles go".into()));
        out.push(Block::Para(
            "hartscope's own counters for each benchmark's phase (the window hsperfstat marks around it, so a little more than the process): the cycle shape as shares of the cycles the timing model accounted for (fetch: I-cache and branch redirects; execute: issue, dependencies and latencies; mem: D-cache latency and misses; walker: TLB misses), and misses per thousand instructions. The board has no such counters in the suite's tables; this is what the model says the time is.".into(),
        ));
        let mut w = Table::new(
            &[
                "benchmark",
                "CPI",
                "fetch",
                "execute",
                "mem",
                "walker",
                "L1I MPKI",
                "L1D MPKI",
                "L2 MPKI",
                "D-TLB MPKI",
                "L2 TLB MPKI",
                "write-backs PKI",
            ],
            &[
                false, true, true, true, true, true, true, true, true, true, true, true,
            ],
        );
        for (name, o) in inp.observed {
            if !inp.measured.contains_key(name) {
                continue;
            }
            let share = |v: u64| format!("{:.0}%", 100.0 * v as f64 / o.busy.max(1) as f64);
            let pki = |v: u64| format!("{:.2}", 1000.0 * v as f64 / o.instructions as f64);
            w.row(vec![
                name.clone(),
                format!("{:.2}", o.busy as f64 / o.instructions as f64),
                share(o.fetch),
                share(o.execute),
                share(o.mem),
                share(o.walker),
                pki(o.l1i_misses),
                pki(o.l1d_misses),
                pki(o.l2_misses),
                pki(o.dtlb_misses),
                pki(o.l2tlb_misses),
                pki(o.writebacks),
            ]);
        }
        out.push(Block::Table(w));
    }
    out.push(Block::Heading(2, "Provenance".into()));
    out.push(Block::Para(inp.provenance.join("\n\n")));
    out
}

/// Results as CSV (one row per benchmark, hartscope's counts), for plotting.
pub fn results_csv(measured: &BTreeMap<String, Measured>) -> String {
    let mut s = String::from("Benchmark,Instructions,Cycles,Branches,Branch-misses,Status\n");
    let n = |v: Option<f64>| v.map(|v| format!("{v:.0}")).unwrap_or_default();
    for (name, m) in measured {
        s.push_str(&format!(
            "{name},{},{},{},{},{}\n",
            n(m.instructions),
            n(m.cycles),
            n(m.branches),
            n(m.branch_misses),
            m.status
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(i: f64, c: f64) -> Counts {
        Counts {
            instructions: i,
            cycles: c,
            branches: 100.0,
            branch_misses: 5.0,
        }
    }

    #[test]
    fn tables_are_read_by_column_name_and_bad_cells_are_named() {
        let dir = std::env::temp_dir().join(format!("hs-validate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.csv");
        std::fs::write(&p, "Benchmark,Instructions,Cycles,Seconds,Branches,Branch-misses\nCCa,100,80,0.1,10,1\n\nMC,50,100,0.2,5,2\n").unwrap();
        let t = read_table(&p).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t["CCa"].ipc(), 1.25);
        assert_eq!(t["MC"].miss_rate(), 40.0);
        std::fs::write(
            &p,
            "Benchmark,Instructions,Cycles,Seconds,Branches,Branch-misses\nCCa,1x0,80,0.1,10,1\n",
        )
        .unwrap();
        let e = read_table(&p).unwrap_err();
        assert!(
            e.contains("line 2: instructions `1x0` is not a count"),
            "{e}"
        );
        std::fs::write(&p, "Benchmark,Instructions,Cycles\n").unwrap();
        let e = read_table(&p).unwrap_err();
        assert!(e.contains("no `branches` column"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn console_lines_give_counts_and_refused_counters_give_none() {
        let c = "boot noise\nhsperfstat CCa instructions=100 cycles=80 branches=10 branch-misses=1 status=0\r\nhsperfstat MC instructions=50 cycles=-1 branches=5 branch-misses=2 status=3\nhsperfstat broken\n";
        let m = parse_console(c);
        assert_eq!(m.len(), 2);
        assert_eq!(m["CCa"].counts().unwrap().ipc(), 1.25);
        assert_eq!(m["MC"].cycles, None);
        assert_eq!(m["MC"].status, 3);
        assert!(m["MC"].counts().is_none());
    }

    #[test]
    fn summaries_split_the_sets_and_leave_out_what_is_apart_or_missing() {
        let mut board = BTreeMap::new();
        let mut measured = BTreeMap::new();
        let m = |i: f64, c: f64| Measured {
            instructions: Some(i),
            cycles: Some(c),
            branches: Some(100.0),
            branch_misses: Some(5.0),
            status: 0,
        };
        // CCa exact, EI 10% low (within 15%), MC twice as fast (outside), CRd apart, DPT not run
        board.insert("CCa".to_string(), counts(100.0, 100.0));
        measured.insert("CCa".to_string(), m(100.0, 100.0));
        board.insert("EI".to_string(), counts(100.0, 100.0));
        measured.insert("EI".to_string(), m(90.0, 100.0));
        board.insert("MC".to_string(), counts(100.0, 100.0));
        measured.insert("MC".to_string(), m(200.0, 100.0));
        board.insert("CRd".to_string(), counts(100.0, 100.0));
        measured.insert("CRd".to_string(), m(300.0, 100.0));
        board.insert("DPT".to_string(), counts(100.0, 100.0));
        let apart: BTreeMap<String, String> =
            [("CRd".to_string(), "different binary".to_string())].into();
        let empty = BTreeMap::new();
        let inp = Inputs {
            board: &board,
            gem5_tuned: &empty,
            gem5_original: &empty,
            measured: &measured,
            observed: &BTreeMap::new(),
            apart: &apart,
            provenance: &[],
        };
        let [ours, tuned, _] = headline(&inp);
        assert_eq!((ours[0].n, ours[0].within_15), (3, 2));
        let expect = ((0.9f64).ln().abs() + 2f64.ln()) / 3.0;
        assert!((ours[0].mean_log_error - expect).abs() < 1e-12);
        assert_eq!((ours[1].n, ours[2].n), (2, 1));
        assert_eq!(tuned[0].n, 0);
        let md = crate::doc::markdown(&report(&inp));
        assert!(
            md.contains("NOT RUN or not counted (left out of every summary): DPT."),
            "{md}"
        );
        assert!(
            md.contains("| EI | calibration | 1.000 | 0.900 | -10.0% |"),
            "{md}"
        );
        assert!(md.contains("CRd: different binary"), "{md}");
    }

    #[test]
    fn observed_counters_come_from_the_benchmarks_phases_summed_over_harts() {
        let stat = |n: &str, v: u64| serde_json::json!({"name": n, "value": v, "unit": "count", "desc": ""});
        let stats = serde_json::json!({"stats": {"phases": [
            {"label": "phase 1: boot to first marker", "stats": [stat("system.cpu0.instret", 5)]},
            {"label": "phase 2: MC", "stats": [
                stat("phase.cycles", 999),
                stat("system.cpu0.instret", 1000),
                stat("system.cpu1.instret", 10),
                stat("system.cpu0.model.cycles.busy", 1500),
                stat("system.cpu0.cycleShape.mem", 600),
                stat("system.cpu0.model.dcache.read_misses", 7),
                stat("system.cpu0.model.dcache.write_misses", 3),
                stat("system.cpu0.model.l2tlb.misses", 2),
            ]},
            {"label": "phase 3: MC done", "stats": []},
        ]}});
        let o = observed_from_stats(&stats);
        assert_eq!(o.keys().collect::<Vec<_>>(), ["MC", "boot to first marker"]);
        let mc = &o["MC"];
        assert_eq!((mc.instructions, mc.busy, mc.mem), (1010, 1500, 600));
        assert_eq!((mc.l1d_misses, mc.l2tlb_misses, mc.fetch), (10, 2, 0));
        assert!(observed_from_stats(&serde_json::json!({"x": 1})).is_empty());
    }
}
