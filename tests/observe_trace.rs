//! `--trace` (Chrome trace-event JSON) and `--stats-txt` / `--stats-json`
//! through the binary, on two harts so IPIs and idle spans appear. The
//! trace is checked against the trace-event format's rules (what Perfetto's
//! importer needs): Python's JSON parser accepts it, every event has the
//! fields its phase requires, complete events on one thread nest, flow
//! events pair up, and there is one named thread per hart.

use crate::observe_support;
use crate::support;

use std::collections::BTreeMap;

use serde_json::Value;

fn check_trace_event_rules(trace: &Value, harts: usize) {
    let events = trace["traceEvents"].as_array().expect("traceEvents array");
    assert!(trace["displayTimeUnit"].is_string());
    let mut slices: BTreeMap<(u64, u64), Vec<(f64, f64, String)>> = BTreeMap::new();
    let mut flows: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    let mut threads: Vec<String> = Vec::new();
    for e in events {
        let ph = e["ph"].as_str().unwrap_or_else(|| panic!("no ph: {e}"));
        assert!(e["name"].is_string(), "{e}");
        let (pid, tid) = (
            e["pid"].as_u64().expect("pid"),
            e["tid"].as_u64().expect("tid"),
        );
        let ts = e["ts"].as_f64().unwrap_or_else(|| panic!("ts: {e}"));
        assert!(ts >= 0.0 && ts.is_finite(), "{e}");
        match ph {
            "M" => {
                if e["name"] == "thread_name" && pid == 1 {
                    threads.push(e["args"]["name"].as_str().unwrap().to_string());
                }
            }
            "X" => {
                let dur = e["dur"]
                    .as_f64()
                    .unwrap_or_else(|| panic!("X without dur: {e}"));
                assert!(dur >= 0.0, "{e}");
                slices.entry((pid, tid)).or_default().push((
                    ts,
                    ts + dur,
                    e["name"].as_str().unwrap().to_string(),
                ));
            }
            "i" => assert!(
                matches!(e["s"].as_str(), Some("t" | "p" | "g")),
                "instant scope: {e}"
            ),
            "s" | "f" => {
                let id = e["id"]
                    .as_u64()
                    .unwrap_or_else(|| panic!("flow without id: {e}"));
                let f = flows.entry(id).or_default();
                if ph == "s" {
                    f.0 += 1
                } else {
                    assert_eq!(e["bp"], "e", "{e}");
                    f.1 += 1
                }
            }
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    for h in 0..harts {
        assert!(
            threads.contains(&format!("hart {h}")),
            "no track for hart {h}: {threads:?}"
        );
    }
    // Slices on one thread nest: sorted by start (longer first on ties),
    // each starts after the enclosing one ends or ends within it.
    const EPS: f64 = 1e-6;
    for ((pid, tid), mut v) in slices {
        v.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut stack: Vec<(f64, f64, String)> = Vec::new();
        for s in v {
            while stack.last().is_some_and(|t| s.0 >= t.1 - EPS) {
                stack.pop();
            }
            if let Some(t) = stack.last() {
                assert!(
                    s.1 <= t.1 + EPS,
                    "slices overlap on pid {pid} tid {tid}: {t:?} and {s:?}"
                );
            }
            stack.push(s);
        }
    }
    for (id, (s, f)) in flows {
        assert_eq!((s, f), (1, 1), "flow {id} has {s} starts and {f} ends");
    }
}

/// `[start, end)` cycles of the phase labelled `label` in a --stats-json file.
fn j_phase(path: &std::path::Path, label: &str) -> (u64, u64) {
    let j: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let blocks = j["stats"]["phases"].as_array().unwrap();
    let b = blocks
        .iter()
        .find(|b| {
            b["label"]
                .as_str()
                .is_some_and(|l| l.ends_with(&format!(": {label}")))
        })
        .expect("phase block");
    let get = |n: &str| {
        b["stats"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == n)
            .unwrap()["value"]
            .as_u64()
            .unwrap()
    };
    (get("phase.startCycle"), get("phase.endCycle"))
}

#[test]
fn chrome_trace_and_stats_of_p87_on_two_harts() {
    let _ = observe_support::image("custom");
    let dir = support::Scratch::new("observe-trace");
    let (trace, txt, json) = (
        dir.path("trace.json"),
        dir.path("stats.txt"),
        dir.path("stats.json"),
    );
    let itrace = dir.path("echo.itrace");
    let work = observe_support::workload("p87-shell");
    let out = support::hartscope(
        &[
            "boot",
            "--image",
            "custom",
            "--smp",
            "2",
            "--workload",
            work.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
            "--stats-txt",
            txt.to_str().unwrap(),
            "--stats-json",
            json.to_str().unwrap(),
            "--itrace",
            "phase=echo,limit=1000000",
            "--itrace-out",
            itrace.to_str().unwrap(),
        ],
        &dir,
        support::BOOT_DEADLINE,
    );
    support::assert_workload_finished(&out, 0);

    // Python's parser (what `python3 -m json.tool` runs) accepts the file.
    let py = std::process::Command::new("python3")
        .args(["-m", "json.tool", trace.to_str().unwrap()])
        .output();
    let py = py.expect("python3 is needed to check the trace (Debian package python3)");
    assert!(
        py.status.success(),
        "python3 -m json.tool rejects the trace: {}",
        String::from_utf8_lossy(&py.stderr)
    );

    let t: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    check_trace_event_rules(&t, 2);
    let events = t["traceEvents"].as_array().unwrap();
    let count = |cat: &str| events.iter().filter(|e| e["cat"] == cat).count();
    assert!(count("syscall") > 500, "syscall slices");
    assert!(count("trap") > 100, "exceptions");
    assert!(count("sched") > 10, "context switches");
    assert!(count("idle") > 0, "wfi idle spans");
    assert!(count("ipi") > 0, "IPIs");
    assert!(count("phase") >= 9 && count("marker") >= 9, "phases");
    let uart = events
        .iter()
        .filter(|e| e["cat"] == "irq" && e["args"]["plic_source"] == 10)
        .count();
    assert!(uart > 0, "no interrupt names the UART's PLIC source 10");
    assert!(
        events.iter().any(|e| e["ph"] == "s") && events.iter().any(|e| e["ph"] == "f"),
        "IPI flow arrows"
    );

    // gem5-shaped stats: one block per phase plus the total, every line
    // `name value # description (Unit)`.
    let st = std::fs::read_to_string(&txt).unwrap();
    let blocks: Vec<&str> = st
        .split("---------- Begin Simulation Statistics ----------")
        .skip(1)
        .collect();
    let phases = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| #"))
        .count();
    assert_eq!(blocks.len(), phases + 1, "{st}");
    for b in &blocks {
        for l in b
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with("----------"))
        {
            let (left, desc) = l
                .split_once(" # ")
                .unwrap_or_else(|| panic!("stat line {l:?}"));
            let f: Vec<&str> = left.split_whitespace().collect();
            assert_eq!(f.len(), 2, "{l}");
            assert!(f[1] == "nan" || f[1].parse::<f64>().is_ok(), "{l}");
            assert!(desc.ends_with(')') && desc.contains(" ("), "{l}");
        }
    }
    let total = blocks.last().unwrap();
    let value = |name: &str| -> u64 {
        let l = total
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing"));
        l.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    assert!(value("system.ipis") > 0);
    assert!(
        value("system.cpu0.ipis.received") + value("system.cpu1.ipis.received")
            == value("system.ipis")
    );
    assert!(value("system.interrupts.plic.source10") > 0);
    assert!(value("system.syscalls") > 500);
    assert!(value("system.contextSwitches") > 10);
    assert!(value("system.cpu1.idleCycles") > 0);

    // Merged idle slices keep the meaning: per hart, the idle time the
    // trace holds (a merged slice's `idle_us`, else its length) is the
    // hart's idle cycles in the statistics, to the cycle (1 GHz: 1 us is
    // 1000 cycles; each slice rounds to a picosecond).
    let mut merged = 0;
    for h in 0..2u64 {
        let slices: Vec<&Value> = events
            .iter()
            .filter(|e| e["cat"] == "idle" && e["tid"] == h + 1)
            .collect();
        merged += slices
            .iter()
            .filter(|e| e["args"]["wakes"].is_u64())
            .count();
        let idle_us: f64 = slices
            .iter()
            .map(|e| {
                e["args"]["idle_us"]
                    .as_f64()
                    .unwrap_or_else(|| e["dur"].as_f64().unwrap())
            })
            .sum();
        let cycles = value(&format!("system.cpu{h}.idleCycles")) as f64;
        assert!(
            (idle_us * 1000.0 - cycles).abs() <= 1.0 + slices.len() as f64 * 0.01,
            "hart {h}: {idle_us} us idle in the trace, {cycles} idle cycles in the stats"
        );
    }
    assert!(merged > 0, "no idle spans were merged on P87's two harts");

    // --itrace phase=echo: every instruction of both harts from the `echo`
    // marker to the next marker, inside the phase's cycles.
    let it = std::fs::read_to_string(&itrace).unwrap();
    assert!(
        it.starts_with("# hartscope instruction trace: phase=echo,limit=1000000"),
        "{}",
        &it[..200.min(it.len())]
    );
    assert!(
        !it.contains("# truncated"),
        "the echo phase is shorter than 1,000,000 instructions"
    );
    let (start, end) = {
        let p = j_phase(&json, "echo");
        (p.0, p.1)
    };
    let header = it
        .lines()
        .position(|l| l.trim_start().starts_with("hart") && l.contains("instruction"))
        .unwrap();
    let lines: Vec<Vec<&str>> = it
        .lines()
        .skip(header + 1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(lines.len() > 1000, "{} lines", lines.len());
    let harts: std::collections::BTreeSet<&str> = lines.iter().map(|f| f[0]).collect();
    assert_eq!(
        harts.into_iter().collect::<Vec<_>>(),
        vec!["0", "1"],
        "both harts are traced"
    );
    for f in &lines {
        let cycle: u64 = f[1].parse().unwrap();
        assert!(
            cycle >= start && cycle < end,
            "line at {cycle} outside the phase [{start}, {end})"
        );
    }
    assert!(it.contains("## Annotated functions"));

    // --stats-json keeps the run summary and adds the same blocks.
    let j: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(j["cycles"].as_u64().unwrap() > 0 && j["harts"].as_array().unwrap().len() == 2);
    let stats = j["stats"]["total"]["stats"]
        .as_array()
        .expect("stats.total.stats");
    let ipis = stats
        .iter()
        .find(|s| s["name"] == "system.ipis")
        .expect("system.ipis in JSON");
    assert_eq!(ipis["value"].as_u64(), Some(value("system.ipis")));
    assert_eq!(j["stats"]["phases"].as_array().unwrap().len(), phases);
}
