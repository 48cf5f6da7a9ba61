//! Exact output of each exporter for a small fabricated record.

use crate::common;

use common::*;
use hs_observe::export::{
    annotate, chrome_trace, flamegraph_svg, fold, folded_text, itrace_text, perf_script,
    phase_table, CycleShape, FlamegraphOptions, FoldOptions, HotFunctions,
};
use hs_observe::{
    Event, EventKind, HartCounts, ItraceLine, LineAccess, LineTouch, Phase, Privilege, StallCause,
    StatBlock, SymbolOffset, Unit,
};
use serde_json::{json, Value};

#[test]
fn perf_script_matches_perfs_callchain_layout() {
    let out = perf_script(&samples(), &symbolizer(), GUEST_HZ, PERIOD).unwrap();
    let expected = "\
sh    42/42    [000]     0.000001:       1024 cycles: 
\t           10110 printf_core+0x10 (busybox)
\t           10050 main+0x50 (busybox)

sh    42/42    [000]     0.000002:       1024 cycles: 
\tffffffff80001210 n_tty_write+0x10 ([kernel.kallsyms])
\tffffffff80001120 do_trap_ecall_u+0x20 ([kernel.kallsyms])
\tffffffff80001010 handle_exception+0x10 ([kernel.kallsyms])
\t           10420 __fwritex+0x20 (busybox)
\t           10050 main+0x50 (busybox)

sh    42/42    [001]     0.000003:       1024 cycles: 
\t        80000110 sbi_console_putc+0x10 (fw_jump.elf)
\t        80000020 sbi_trap_handler+0x20 (fw_jump.elf)

[unknown]     0/0     [001]     1.000004:       1024 cycles: 
\t           30000 [unknown] ([unknown])

sh    42/42    [000]     0.000005:       1024 cycles: 
\tffffffff80001210 n_tty_write+0x10 ([kernel.kallsyms])
\tffffffff80001120 do_trap_ecall_u+0x20 ([kernel.kallsyms])
\tffffffff80001010 handle_exception+0x10 ([kernel.kallsyms])
\t           10420 __fwritex+0x20 (busybox)
\t           10050 main+0x50 (busybox)

";
    assert_eq!(out, expected);
}

#[test]
fn perf_script_lines_parse_like_stackcollapse_perf() {
    // The header and frame patterns stackcollapse-perf.pl matches on.
    let out = perf_script(&samples(), &symbolizer(), GUEST_HZ, PERIOD).unwrap();
    for block in out.split("\n\n").filter(|b| !b.is_empty()) {
        let mut lines = block.lines();
        let header = lines.next().unwrap();
        let fields: Vec<&str> = header.split_whitespace().collect();
        assert_eq!(fields.len(), 6, "{header}");
        assert!(
            fields[1].split('/').all(|n| n.parse::<u32>().is_ok()),
            "{header}"
        );
        assert!(
            fields[2].starts_with('[') && fields[2].ends_with(']'),
            "{header}"
        );
        assert!(fields[3].ends_with(':') && fields[3].trim_end_matches(':').parse::<f64>().is_ok());
        assert_eq!(fields[4], "1024");
        assert_eq!(fields[5], "cycles:");
        for frame in lines {
            let rest = frame.strip_prefix('\t').expect("frames start with a tab");
            let (addr, tail) = rest.trim_start().split_once(' ').unwrap();
            assert!(u64::from_str_radix(addr, 16).is_ok(), "{frame}");
            assert!(tail.ends_with(')') && tail.contains(" ("), "{frame}");
        }
    }
}

#[test]
fn perf_script_refuses_zero_frequency() {
    assert!(perf_script(&samples(), &symbolizer(), 0, PERIOD).is_err());
    assert!(perf_script(&samples(), &symbolizer(), GUEST_HZ, 0).is_err());
}

#[test]
fn folded_stacks_outermost_first() {
    let folded = fold(&samples(), &symbolizer(), FoldOptions::default());
    assert_eq!(
        folded_text(&folded),
        "\
[unknown] 1
main;__fwritex;handle_exception;do_trap_ecall_u;n_tty_write 2
main;printf_core 1
sbi_trap_handler;sbi_console_putc 1
"
    );
    let folded = fold(
        &samples(),
        &symbolizer(),
        FoldOptions {
            include_comm: true,
            annotate_kernel: true,
        },
    );
    assert_eq!(
        folded_text(&folded),
        "\
[unknown];[unknown] 1
sh;main;__fwritex;handle_exception_[k];do_trap_ecall_u_[k];n_tty_write_[k] 2
sh;main;printf_core 1
sh;sbi_trap_handler;sbi_console_putc 1
"
    );
}

#[test]
fn hot_functions_table() {
    let hot = HotFunctions::compute(&samples(), &symbolizer(), PERIOD);
    assert_eq!(hot.samples_of("n_tty_write"), 2);
    assert_eq!(hot.samples_in("printf_core", "busybox"), 1);
    assert_eq!(hot.samples_of("hvc_sbi_tty_put"), 0);
    assert_eq!(
        hot.to_markdown("P87 shell", 2),
        "\
**P87 shell** — 5 samples, one every 1,024 cycles

| # | symbol | where | samples | share |
|--:|:--|:--|--:|--:|
| 1 | n_tty_write | kernel | 2 | 40.0% |
| 2 | [unknown] | [unknown] | 1 | 20.0% |
| 3 | (remaining) | remaining | 2 | 40.0% |
"
    );
    // With room for every row there is no "(remaining)".
    let all = hot.to_markdown("x", 10);
    assert!(!all.contains("(remaining)"));
    assert!(all.contains("| 4 | sbi_console_putc | firmware | 1 | 20.0% |"));
}

#[test]
fn hot_functions_children_count_every_symbol_on_the_stack_once() {
    let hot = HotFunctions::compute(&samples(), &symbolizer(), PERIOD);
    let rows: Vec<(&str, &str, u64, u64)> = hot
        .children
        .iter()
        .map(|r| (r.symbol.as_str(), r.place.as_str(), r.total, r.self_samples))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("main", "busybox", 3, 0),
            ("n_tty_write", "kernel", 2, 2),
            ("__fwritex", "busybox", 2, 0),
            ("do_trap_ecall_u", "kernel", 2, 0),
            ("handle_exception", "kernel", 2, 0),
            ("[unknown]", "[unknown]", 1, 1),
            ("printf_core", "busybox", 1, 1),
            ("sbi_console_putc", "firmware", 1, 1),
            ("sbi_trap_handler", "firmware", 1, 0),
        ]
    );
    // Self sums to all samples; children of the outermost frame can reach 100%.
    assert_eq!(hot.children.iter().map(|r| r.self_samples).sum::<u64>(), 5);
    let md = hot.to_markdown_children(2);
    assert!(md.contains("| 1 | main | busybox | 60.0% | 0.0% |\n| 2 | n_tty_write | kernel | 40.0% | 40.0% |\n| | (7 more symbols) | | | |\n"), "{md}");
}

#[test]
fn hot_functions_split_by_place() {
    let hot = HotFunctions::compute(&samples(), &symbolizer(), PERIOD);
    assert_eq!(
        hot.places(),
        vec![
            ("kernel".to_string(), 2),
            ("[unknown]".to_string(), 1),
            ("busybox".to_string(), 1),
            ("firmware".to_string(), 1)
        ]
    );
    let md = hot.to_markdown_by_place("P87 shell", 1);
    assert!(
        md.starts_with("**P87 shell** — 5 samples, one every 1,024 cycles\n\n`where` is the code")
            && md.contains("kernel time it caused.)\n\n| where | samples | share |\n"),
        "{md}"
    );
    assert!(md.contains("| kernel | 2 | 40.0% |\n"), "{md}");
    assert!(md.contains("\n### kernel — 2 samples\n\n| # | symbol | samples | share | share of place |\n|--:|:--|--:|--:|--:|\n| 1 | n_tty_write | 2 | 40.0% | 100.0% |\n"), "{md}");
    assert!(md.contains("### firmware — 1 samples\n\n| # | symbol | samples | share | share of place |\n|--:|:--|--:|--:|--:|\n| 1 | sbi_console_putc | 1 | 20.0% | 100.0% |\n"), "{md}");
}

#[test]
fn flamegraph_exact_for_two_stacks() {
    let folded = vec![("a;b".to_string(), 3), ("a;c<x>".to_string(), 1)];
    let opts = FlamegraphOptions {
        title: "t".into(),
        width: 120,
        ..FlamegraphOptions::default()
    };
    let svg = flamegraph_svg(&folded, &opts);
    let expected = r#"<?xml version="1.0" standalone="no"?>
<svg version="1.1" width="120" height="96" viewBox="0 0 120 96" xmlns="http://www.w3.org/2000/svg">
<style>text { font-family: Verdana, sans-serif; font-size: 12px; fill: rgb(0,0,0); } g:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; } g[data-o], .control { cursor: pointer; } .control:hover { text-decoration: underline; }</style>
<rect x="0" y="0" width="120" height="96" fill="rgb(248,248,248)"/>
<text x="60.0" y="24.0" text-anchor="middle" style="font-size: 17px">t</text>
<g data-o="0"><title>all (4 samples, 100.00%)</title><rect x="10.00" y="68.0" width="100.00" height="15" fill="rgb(COLOUR_ALL)" rx="2" ry="2"/><text x="13.00" y="79.5">all</text></g>
<g data-o="0"><title>a (4 samples, 100.00%)</title><rect x="10.00" y="52.0" width="100.00" height="15" fill="rgb(COLOUR_A)" rx="2" ry="2"/><text x="13.00" y="63.5">a</text></g>
<g data-o="0"><title>b (3 samples, 75.00%)</title><rect x="10.00" y="36.0" width="75.00" height="15" fill="rgb(COLOUR_B)" rx="2" ry="2"/><text x="13.00" y="47.5">b</text></g>
<g data-o="3"><title>c&lt;x&gt; (1 sample, 25.00%)</title><rect x="85.00" y="36.0" width="25.00" height="15" fill="rgb(COLOUR_C)" rx="2" ry="2"/></g>
<text id="unzoom" class="control" x="10.0" y="24.0" opacity="0.3" display="none">Reset zoom</text>
<text id="search" class="control" x="110.0" y="24.0" text-anchor="end" display="none">Search</text>
<text id="matched" x="110.0" y="94.0" text-anchor="end" display="none"></text>
<script type="text/ecmascript"><![CDATA[
var FLAME = { width: 120, pad: 10, charWidth: 7.080, frameHeight: 16 };
"#;
    // Colours are a hash of the name: check they are stable and warm, then
    // compare the rest exactly.
    let mut normalised = svg.clone();
    for (name, tag) in [
        ("all", "COLOUR_ALL"),
        ("a", "COLOUR_A"),
        ("b", "COLOUR_B"),
        ("c&lt;x&gt;", "COLOUR_C"),
    ] {
        let title = format!("<title>{name} (");
        let at = normalised.find(&title).unwrap();
        let fill_at = at + normalised[at..].find("fill=\"rgb(").unwrap() + "fill=\"rgb(".len();
        let end = fill_at + normalised[fill_at..].find(')').unwrap();
        let rgb: Vec<u32> = normalised[fill_at..end]
            .split(',')
            .map(|v| v.parse().unwrap())
            .collect();
        assert!(
            rgb[0] >= 205 && rgb[1] <= 230 && rgb[2] <= 55,
            "{name}: {rgb:?}"
        );
        normalised.replace_range(fill_at..end, tag);
    }
    // The static picture exactly; the script after it is checked in
    // flamegraph_is_interactive_and_well_formed.
    let (picture, script) = normalised.split_at(expected.len());
    assert_eq!(picture, expected);
    assert!(
        script.ends_with("})();\n]]></script>\n</svg>\n"),
        "{script}"
    );
    assert_eq!(flamegraph_svg(&folded, &opts), svg, "deterministic");
    // Same name, same colour, in any graph.
    let other = flamegraph_svg(&[("b".to_string(), 1)], &opts);
    let colour_of_b = |s: &str| {
        let at = s.find("<title>b (").unwrap();
        let f = at + s[at..].find("fill=").unwrap();
        s[f..f + 22].to_string()
    };
    assert_eq!(colour_of_b(&svg), colour_of_b(&other));
}

#[test]
fn flamegraph_without_samples_is_still_an_svg() {
    let svg = flamegraph_svg(&[], &FlamegraphOptions::default());
    assert!(svg.contains("no samples") && svg.ends_with("</svg>\n"));
    check_well_formed(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
}

/// Opened in a browser the graph zooms and searches: the script and its
/// controls are there, the controls are hidden until the script shows them
/// (so the picture without JavaScript is the static graph), and the whole
/// file is still well-formed XML, also with frame names that would break a
/// careless CDATA section or attribute.
#[test]
fn flamegraph_is_interactive_and_well_formed() {
    let folded = vec![
        ("sh;main;]]>&<\"'x".to_string(), 5),
        ("sh;main;memcpy".to_string(), 3),
        ("swapper/0;do_idle".to_string(), 2),
    ];
    let opts = FlamegraphOptions {
        title: "debian — from phase `shell banner` to the end — 10 samples".into(),
        ..FlamegraphOptions::default()
    };
    let svg = flamegraph_svg(&folded, &opts);
    check_well_formed(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
    assert_eq!(flamegraph_svg(&folded, &opts), svg, "deterministic");

    assert_eq!(svg.matches("<script").count(), 1);
    let open = "<script type=\"text/ecmascript\"><![CDATA[\n";
    let at = svg.find(open).expect("an inline script") + open.len();
    let end = svg
        .find("]]></script>\n</svg>\n")
        .expect("the script ends the SVG");
    let script = &svg[at..end];
    assert!(
        !script.contains("]]>"),
        "the script would end its CDATA early"
    );
    assert!(
        !svg.contains("href") && !svg.contains("http://www.w3.org/1999/xlink"),
        "no external resources"
    );
    for needle in [
        "var FLAME = { width: 1200, pad: 10, charWidth: 7.080, frameHeight: 16 };",
        "function zoom(z)",
        "function unzoom()",
        "function search(pattern)",
        "new RegExp(pattern)",
        "window.prompt(",
        "\"Matched: \"",
        "addEventListener(\"click\"",
        "document.getElementById(\"unzoom\")",
        "document.getElementById(\"search\")",
        "document.getElementById(\"matched\")",
    ] {
        assert!(
            script.contains(needle),
            "`{needle}` missing from the script"
        );
    }
    // The controls, hidden until the script removes `display`.
    for control in [
        "<text id=\"unzoom\" class=\"control\" x=\"10.0\" y=\"24.0\" opacity=\"0.3\" display=\"none\">Reset zoom</text>\n",
        "<text id=\"search\" class=\"control\" x=\"1190.0\" y=\"24.0\" text-anchor=\"end\" display=\"none\">Search</text>\n",
        "<text id=\"matched\" x=\"1190.0\" y=\"",
    ] {
        assert!(svg.contains(control), "`{control}` missing:\n{svg}");
    }
    // Every frame carries its first sample's offset, for exact zooming.
    for (name, offset) in [
        ("all", 0),
        ("sh", 0),
        ("main", 0),
        ("]]&gt;&amp;&lt;&quot;&apos;x", 0),
        ("memcpy", 5),
        ("swapper/0", 8),
        ("do_idle", 8),
    ] {
        let g = format!("<g data-o=\"{offset}\"><title>{name} (");
        assert!(svg.contains(&g), "`{g}` missing:\n{svg}");
    }
    assert_eq!(svg.matches("<g data-o=").count(), 7);
    // The title, with its window, is the visible heading.
    assert!(svg.contains(">debian — from phase `shell banner` to the end — 10 samples</text>"));
}

/// A small XML well-formedness check: one root element, properly nested
/// and closed tags, quoted and unique attributes, only the predefined or
/// numeric entities, no stray `<` or `&` in text, CDATA sections closed.
fn check_well_formed(doc: &str) -> Result<(), String> {
    fn name_end(s: &str) -> usize {
        s.find(|c: char| c.is_whitespace() || c == '>' || c == '/' || c == '=')
            .unwrap_or(s.len())
    }
    fn check_text(t: &str, at: usize) -> Result<(), String> {
        if t.contains('<') {
            return Err(format!("raw `<` in text or attribute at {at}"));
        }
        let mut rest = t;
        while let Some(i) = rest.find('&') {
            let tail = &rest[i + 1..];
            let semi = tail
                .find(';')
                .ok_or(format!("unterminated entity at {at}"))?;
            let ent = &tail[..semi];
            let ok = matches!(ent, "amp" | "lt" | "gt" | "quot" | "apos")
                || ent
                    .strip_prefix("#x")
                    .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
                || ent
                    .strip_prefix('#')
                    .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
            if !ok {
                return Err(format!("unknown entity `&{ent};` at {at}"));
            }
            rest = &tail[semi + 1..];
        }
        Ok(())
    }
    let mut stack: Vec<&str> = Vec::new();
    let mut roots = 0;
    let mut i = 0;
    if let Some(rest) = doc.strip_prefix("<?xml") {
        i = 5 + rest.find("?>").ok_or("unterminated XML declaration")? + 2;
    }
    while i < doc.len() {
        let rest = &doc[i..];
        let Some(lt) = rest.find('<') else {
            if !rest.trim().is_empty() {
                return Err("text after the root element".into());
            }
            break;
        };
        let text = &rest[..lt];
        if stack.is_empty() && !text.trim().is_empty() {
            return Err(format!("text outside the root element at {i}"));
        }
        check_text(text, i)?;
        i += lt;
        let rest = &doc[i..];
        if let Some(r) = rest.strip_prefix("<![CDATA[") {
            if stack.is_empty() {
                return Err("CDATA outside the root element".into());
            }
            i += 9 + r.find("]]>").ok_or("unterminated CDATA section")? + 3;
        } else if let Some(r) = rest.strip_prefix("<!--") {
            let end = r.find("-->").ok_or("unterminated comment")?;
            if r[..end].contains("--") {
                return Err("`--` inside a comment".into());
            }
            i += 4 + end + 3;
        } else if let Some(r) = rest.strip_prefix("</") {
            let n = name_end(r);
            let name = &r[..n];
            if !r[n..].trim_start().starts_with('>') {
                return Err(format!("malformed end tag `</{name}` at {i}"));
            }
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("`</{name}>` closes {other:?} at {i}")),
            }
            i += 2 + r.find('>').unwrap() + 1;
        } else {
            let r = &rest[1..];
            let n = name_end(r);
            let name = &r[..n];
            if name.is_empty() || !name.starts_with(|c: char| c.is_alphabetic() || c == '_') {
                return Err(format!("bad tag name at {i}"));
            }
            if stack.is_empty() {
                roots += 1;
                if roots > 1 {
                    return Err(format!("a second root element `{name}` at {i}"));
                }
            }
            let mut j = n;
            let mut seen: Vec<&str> = Vec::new();
            loop {
                let before = j;
                j += r[j..].len() - r[j..].trim_start().len();
                if r[j..].starts_with("/>") {
                    j += 2;
                    break;
                }
                if r[j..].starts_with('>') {
                    j += 1;
                    stack.push(name);
                    break;
                }
                if j == before {
                    return Err(format!("no space before an attribute in `<{name}` at {i}"));
                }
                let an = name_end(&r[j..]);
                let attr = &r[j..j + an];
                if attr.is_empty() || seen.contains(&attr) {
                    return Err(format!(
                        "bad or repeated attribute `{attr}` in `<{name}` at {i}"
                    ));
                }
                seen.push(attr);
                j += an;
                let q = r[j..]
                    .strip_prefix('=')
                    .and_then(|v| v.chars().next())
                    .filter(|c| *c == '"' || *c == '\'')
                    .ok_or(format!("attribute `{attr}` without a quoted value at {i}"))?;
                j += 2;
                let close = r[j..]
                    .find(q)
                    .ok_or(format!("unterminated `{attr}` at {i}"))?;
                check_text(&r[j..j + close], i)?;
                j += close + 1;
            }
            i += 1 + j;
        }
    }
    match stack.last() {
        Some(open) => Err(format!("`<{open}>` is never closed")),
        None if roots == 0 => Err("no root element".into()),
        None => Ok(()),
    }
}

#[test]
fn the_well_formedness_check_can_fail() {
    for bad in [
        "<a><b></a></b>",
        "<a>x & y</a>",
        "<a x=\"1\" x=\"2\"/>",
        "<a><![CDATA[ x </a>",
        "<a/><b/>",
        "<a x=1/>",
        "<a>&nbsp;</a>",
        "<a>",
    ] {
        assert!(check_well_formed(bad).is_err(), "{bad} passed");
    }
    check_well_formed(
        "<?xml version=\"1.0\"?>\n<a x='1' y=\"&lt;\"><b/><![CDATA[<&]]>t&#233;&#x41;</a>\n",
    )
    .unwrap();
}

fn trace_events() -> Vec<Event> {
    let e = |hart, cycle, kind| Event { hart, cycle, kind };
    vec![
        e(0, 100, EventKind::Syscall { number: 64 }),
        e(0, 150, EventKind::IpiSent { to: 1 }),
        e(1, 50, EventKind::WfiIdle { end_cycle: 200 }),
        e(1, 200, EventKind::IpiReceived { from: Some(0) }),
        e(
            1,
            210,
            EventKind::Interrupt {
                cause: 9,
                plic_source: Some(10),
            },
        ),
        e(0, 300, EventKind::SyscallReturn),
        e(0, 400, EventKind::Syscall { number: 63 }),
        e(
            0,
            500,
            EventKind::ContextSwitch {
                satp: 0x8000_0000_0000_0042,
            },
        ),
        e(
            0,
            600,
            EventKind::PhaseMarker {
                label: "echo".into(),
            },
        ),
        e(
            0,
            700,
            EventKind::Exception {
                cause: 13,
                tval: 0x1000,
                target: Privilege::Supervisor,
            },
        ),
        e(1, 800, EventKind::Syscall { number: 173 }),
        e(
            0,
            900,
            EventKind::Instant {
                label: "note".into(),
            },
        ),
    ]
}

fn trace_phases() -> Vec<Phase> {
    vec![Phase {
        index: 1,
        label: "echo".into(),
        start_cycle: 600,
        end_cycle: 1000,
        harts: vec![HartCounts {
            hart: 0,
            cycles: 400,
            instret: 200,
        }],
    }]
}

#[test]
fn chrome_trace_exact_events() {
    let text = chrome_trace(&trace_events(), &trace_phases(), GUEST_HZ).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let expected = json!({
      "displayTimeUnit": "ns",
      "traceEvents": [
        {"name":"process_name","ph":"M","ts":0.0,"pid":1,"tid":0,"args":{"name":"hartscope guest"}},
        {"name":"process_sort_index","ph":"M","ts":0.0,"pid":1,"tid":0,"args":{"sort_index":1}},
        {"name":"thread_name","ph":"M","ts":0.0,"pid":1,"tid":1,"args":{"name":"hart 0"}},
        {"name":"thread_sort_index","ph":"M","ts":0.0,"pid":1,"tid":1,"args":{"sort_index":0}},
        {"name":"thread_name","ph":"M","ts":0.0,"pid":1,"tid":2,"args":{"name":"hart 1"}},
        {"name":"thread_sort_index","ph":"M","ts":0.0,"pid":1,"tid":2,"args":{"sort_index":2}},
        {"name":"process_name","ph":"M","ts":0.0,"pid":2,"tid":0,"args":{"name":"phases"}},
        {"name":"process_sort_index","ph":"M","ts":0.0,"pid":2,"tid":0,"args":{"sort_index":0}},
        {"name":"thread_name","ph":"M","ts":0.0,"pid":2,"tid":1,"args":{"name":"phases"}},
        {"name":"1. echo","cat":"phase","ph":"X","ts":0.6,"dur":0.4,"pid":2,"tid":1,"args":{"cycles":400,"instret":200}},
        {"name":"wfi idle","cat":"idle","ph":"X","ts":0.05,"dur":0.15,"pid":1,"tid":2},
        {"name":"IPI to hart 1","cat":"ipi","ph":"X","ts":0.15,"dur":0.001,"pid":1,"tid":1},
        {"name":"IPI","cat":"ipi","ph":"s","ts":0.15,"pid":1,"tid":1,"id":1},
        {"name":"IPI from hart 0","cat":"ipi","ph":"X","ts":0.2,"dur":0.001,"pid":1,"tid":2},
        {"name":"IPI","cat":"ipi","ph":"f","ts":0.2,"pid":1,"tid":2,"id":1,"bp":"e"},
        {"name":"interrupt: supervisor external interrupt","cat":"irq","ph":"i","ts":0.21,"pid":1,"tid":2,"s":"t",
         "args":{"cause":9,"plic_source":10}},
        {"name":"syscall write (64)","cat":"syscall","ph":"X","ts":0.1,"dur":0.2,"pid":1,"tid":1,
         "args":{"ended_by":"return","number":64}},
        {"name":"syscall read (63)","cat":"syscall","ph":"X","ts":0.4,"dur":0.1,"pid":1,"tid":1,
         "args":{"ended_by":"context switch","number":63}},
        {"name":"context switch","cat":"sched","ph":"i","ts":0.5,"pid":1,"tid":1,"s":"t",
         "args":{"satp":"0x8000000000000042"}},
        {"name":"phase: echo","cat":"marker","ph":"i","ts":0.6,"pid":1,"tid":1,"s":"t"},
        {"name":"exception: load page fault","cat":"trap","ph":"i","ts":0.7,"pid":1,"tid":1,"s":"t",
         "args":{"cause":13,"target":"S","tval":"0x1000"}},
        {"name":"note","cat":"mark","ph":"i","ts":0.9,"pid":1,"tid":1,"s":"t"},
        {"name":"syscall getppid (173)","cat":"syscall","ph":"X","ts":0.8,"dur":0.2,"pid":1,"tid":2,
         "args":{"ended_by":"end of trace","number":173}}
      ]
    });
    assert_eq!(v, expected, "{text}");
    assert_eq!(
        chrome_trace(&trace_events(), &trace_phases(), GUEST_HZ).unwrap(),
        text,
        "deterministic"
    );
}

#[test]
fn chrome_trace_follows_the_trace_event_format() {
    let text = chrome_trace(&trace_events(), &trace_phases(), 50_000_000).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let events = v["traceEvents"].as_array().expect("traceEvents array");
    let mut flow_starts = std::collections::BTreeSet::new();
    let mut flow_ends = std::collections::BTreeSet::new();
    let mut named_tracks = std::collections::BTreeSet::new();
    let mut used_tracks = std::collections::BTreeSet::new();
    for e in events {
        let ph = e["ph"].as_str().expect("ph is a string");
        assert!(e["name"].is_string(), "{e}");
        assert!(e["pid"].is_u64() && e["tid"].is_u64(), "{e}");
        assert!(e["ts"].as_f64().is_some_and(|t| t >= 0.0), "{e}");
        let track = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        match ph {
            "M" => {
                assert!(
                    e["args"]["name"].is_string() || e["args"]["sort_index"].is_number(),
                    "{e}"
                );
                if e["name"] == "thread_name" {
                    named_tracks.insert(track);
                }
            }
            "X" => {
                assert!(e["dur"].as_f64().is_some_and(|d| d >= 0.0), "{e}");
                used_tracks.insert(track);
            }
            "i" => {
                assert!(matches!(e["s"].as_str(), Some("t" | "p" | "g")), "{e}");
                used_tracks.insert(track);
            }
            "s" => {
                flow_starts.insert(e["id"].as_u64().unwrap());
            }
            "f" => {
                assert_eq!(e["bp"], "e");
                flow_ends.insert(e["id"].as_u64().unwrap());
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    assert_eq!(flow_starts, flow_ends, "every flow has both ends");
    assert!(used_tracks.is_subset(&named_tracks), "every track is named");
    // 50 MHz: one cycle is 0.02 us.
    let ipi = events
        .iter()
        .find(|e| e["name"] == "IPI to hart 1")
        .unwrap();
    assert_eq!(ipi["ts"].as_f64(), Some(3.0));
    assert_eq!(ipi["dur"].as_f64(), Some(0.02));
    assert!(chrome_trace(&trace_events(), &[], 0).is_err());
}

#[test]
fn unmatched_ipis_have_no_flow_and_from_is_respected() {
    let e = |hart, cycle, kind| Event { hart, cycle, kind };
    let events = vec![
        e(0, 10, EventKind::IpiSent { to: 2 }),
        e(1, 11, EventKind::IpiSent { to: 2 }),
        e(2, 20, EventKind::IpiReceived { from: Some(1) }),
        e(3, 30, EventKind::IpiSent { to: 0 }),
    ];
    let v: Value = serde_json::from_str(&chrome_trace(&events, &[], GUEST_HZ).unwrap()).unwrap();
    let flows: Vec<(String, u64)> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "s" || e["ph"] == "f")
        .map(|e| {
            (
                format!("{}@{}", e["ph"].as_str().unwrap(), e["tid"]),
                e["id"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(flows, vec![("s@2".to_string(), 1), ("f@3".to_string(), 1)]);
}

fn itrace_lines() -> Vec<ItraceLine> {
    let line = |cycle, pc, off, disasm: &str, cycles, stall, lines| ItraceLine {
        hart: 0,
        cycle,
        pc,
        privilege: Privilege::Supervisor,
        symbol: Some(SymbolOffset {
            name: "handle_exception".into(),
            offset: off,
        }),
        disasm: disasm.into(),
        cycles,
        stall,
        lines,
        source: None,
    };
    vec![
        line(
            1000,
            0xffffffff80001000,
            0,
            "csrrw tp,sscratch,tp",
            5,
            StallCause::Serialize,
            vec![LineTouch {
                line: 0x80001000,
                access: LineAccess::Fetch,
                hit: false,
            }],
        ),
        line(
            1005,
            0xffffffff80001004,
            4,
            "sd ra,8(sp)",
            3,
            StallCause::Mem,
            vec![
                LineTouch {
                    line: 0x80001000,
                    access: LineAccess::Fetch,
                    hit: true,
                },
                LineTouch {
                    line: 0x80ff2040,
                    access: LineAccess::Store,
                    hit: false,
                },
            ],
        ),
        line(
            1008,
            0xffffffff80001000,
            0,
            "csrrw tp,sscratch,tp",
            1,
            StallCause::None,
            vec![],
        ),
        ItraceLine {
            hart: 0,
            cycle: 1009,
            pc: 0x10110,
            privilege: Privilege::User,
            symbol: None,
            disasm: "ecall".into(),
            cycles: 1,
            stall: StallCause::None,
            lines: vec![],
            source: None,
        },
    ]
}

#[test]
fn itrace_text_exact() {
    let expected = "\
hart          cycle P               pc symbol                               cycles stall     instruction                      | lines
   0           1000 S ffffffff80001000 handle_exception+0x0                      5 serialize csrrw tp,sscratch,tp             | I:80001000:miss
   0           1005 S ffffffff80001004 handle_exception+0x4                      3 mem       sd ra,8(sp)                      | I:80001000:hit S:80ff2040:miss
   0           1008 S ffffffff80001000 handle_exception+0x0                      1 -         csrrw tp,sscratch,tp             |
   0           1009 U            10110 [unknown]                                 1 -         ecall                            |
";
    assert_eq!(itrace_text(&itrace_lines()), expected);
}

#[test]
fn annotate_exact() {
    let expected = concat!(
        " Percent |   Cycles |  Execs | Stall     | Disassembly of handle_exception (9 cycles, 3 instructions retired)\n",
        "---------+----------+--------+-----------+------------------------------------------------\n",
        "   66.67 |        6 |      2 | serialize | ffffffff80001000 <+0x0>: csrrw tp,sscratch,tp\n",
        "   33.33 |        3 |      1 | mem       | ffffffff80001004 <+0x4>: sd ra,8(sp)\n",
    );
    assert_eq!(
        annotate(&itrace_lines(), "handle_exception").as_deref(),
        Some(expected)
    );
    assert_eq!(annotate(&itrace_lines(), "nothing_here"), None);
}

#[test]
fn phase_table_exact() {
    let phases = vec![
        Phase {
            index: 1,
            label: "kernel banner to /init".into(),
            start_cycle: 0,
            end_cycle: 117_614_359,
            harts: vec![HartCounts {
                hart: 0,
                cycles: 117_614_359,
                instret: 45_000_000,
            }],
        },
        Phase {
            index: 2,
            label: "a|b".into(),
            start_cycle: 117_614_359,
            end_cycle: 117_615_957,
            harts: vec![HartCounts {
                hart: 0,
                cycles: 1_598,
                instret: 0,
            }],
        },
    ];
    assert_eq!(
        phase_table(&phases, 222_825_777),
        "\
| # | phase | cycles | share | instret | CPI |
|--:|:--|--:|--:|--:|--:|
| 1 | kernel banner to /init | 117,614,359 | 52.8% | 45,000,000 | 2.61 |
| 2 | a\\|b | 1,598 | 0.0% | 0 | - |
"
    );
}

#[test]
fn cycle_shape_exact() {
    let mut b = StatBlock::new("total");
    b.add_u64("system.cpu0.cycles", 1000, Unit::Cycle, "Cycles")
        .unwrap();
    b.add_u64(
        "system.cpu0.cycleShape.fetch",
        38,
        Unit::Cycle,
        "Cycles fetching",
    )
    .unwrap();
    b.add_u64(
        "system.cpu0.cycleShape.execute",
        389,
        Unit::Cycle,
        "Cycles executing",
    )
    .unwrap();
    b.add_u64(
        "system.cpu0.cycleShape.mul/div",
        36,
        Unit::Cycle,
        "Cycles in mul/div",
    )
    .unwrap_err();
    b.add_u64(
        "system.cpu0.cycleShape.mulDiv",
        36,
        Unit::Cycle,
        "Cycles in mul/div",
    )
    .unwrap();
    let shape = CycleShape::from_stats("P87 workload", &b, "system.cpu0.cycleShape.", 1000);
    assert_eq!(
        shape.to_markdown(),
        "\
**P87 workload** — 1,000 cycles

| # | state | share | cycles |
|--:|:--|--:|--:|
| 1 | fetch | 3.8% | 38 |
| 2 | execute | 38.9% | 389 |
| 3 | mulDiv | 3.6% | 36 |
"
    );
}

/// Samples whose task the guest kernel named: every view uses it.
fn task_samples() -> Vec<hs_observe::Sample> {
    let task = |pid, tid, comm: &str| {
        Some(hs_observe::Task {
            pid,
            tid,
            comm: comm.into(),
        })
    };
    let mut s = samples();
    s[0].task = task(300, 301, "sh");
    s[1].task = task(300, 301, "sh");
    s[2].task = task(0, 0, "swapper/1");
    s[3].task = task(25, 25, "kworker/1:0");
    s[4].task = task(302, 302, "my prog");
    s
}

#[test]
fn kernel_named_tasks_head_perf_script_roots_folded_and_split_hot() {
    let out = perf_script(&task_samples(), &symbolizer(), GUEST_HZ, PERIOD).unwrap();
    let headers: Vec<&str> = out.split("\n\n").filter_map(|b| b.lines().next()).collect();
    assert_eq!(
        headers,
        vec![
            "sh   300/301   [000]     0.000001:       1024 cycles: ",
            "sh   300/301   [000]     0.000002:       1024 cycles: ",
            "swapper/1     0/0     [001]     0.000003:       1024 cycles: ",
            "kworker/1:0    25/25    [001]     1.000004:       1024 cycles: ",
            "my prog   302/302   [000]     0.000005:       1024 cycles: ",
        ]
    );
    let folded = fold(
        &task_samples(),
        &symbolizer(),
        FoldOptions {
            include_comm: true,
            annotate_kernel: true,
        },
    );
    let roots: Vec<&str> = folded
        .iter()
        .map(|(s, _)| s.split(';').next().unwrap())
        .collect();
    assert_eq!(
        roots,
        vec!["kworker/1:0", "my_prog", "sh", "sh", "swapper/1"]
    );

    let hot = HotFunctions::compute(&task_samples(), &symbolizer(), PERIOD);
    assert_eq!(hot.samples_of_comm("sh"), 2);
    let tasks: Vec<(&str, u32, u64)> = hot
        .tasks
        .iter()
        .map(|t| (t.comm.as_str(), t.pid, t.samples))
        .collect();
    assert_eq!(
        tasks,
        vec![
            ("sh", 300, 2),
            ("kworker/1:0", 25, 1),
            ("my prog", 302, 1),
            ("swapper/1", 0, 1)
        ]
    );
    let md = hot.to_markdown_by_task_and_hart(3);
    assert_eq!(
        md,
        "\
### By task

| # | task | pid | samples | share | harts | hottest symbols |
|--:|:--|--:|--:|--:|:--|:--|
| 1 | sh | 300 | 2 | 40.0% | 0: 2 | n_tty_write (kernel) 50.0%, printf_core (busybox) 50.0% |
| 2 | kworker/1:0 | 25 | 1 | 20.0% | 1: 1 | [unknown] ([unknown]) 100.0% |
| 3 | my prog | 302 | 1 | 20.0% | 0: 1 | n_tty_write (kernel) 100.0% |
| 4 | (1 more tasks) | | 1 | 20.0% | | |

### By hart

| hart | samples | share | tasks |
|--:|--:|--:|:--|
| 0 | 3 | 60.0% | sh-300 66.7%, my prog-302 33.3% |
| 1 | 2 | 40.0% | kworker/1:0-25 50.0%, swapper/1-0 50.0% |
"
    );
}

#[test]
fn chrome_trace_draws_a_task_track_per_hart() {
    let e = |hart, cycle, pid, tid, comm: &str| Event {
        hart,
        cycle,
        kind: EventKind::TaskSwitch {
            pid,
            tid,
            comm: comm.into(),
        },
    };
    let events = vec![
        e(0, 100, 300, 301, "sh"),
        e(1, 150, 0, 0, "swapper/1"),
        e(0, 400, 0, 0, "swapper/0"),
        // Reported again (a reader that lost track): the slice goes on.
        e(0, 450, 0, 0, "swapper/0"),
        e(0, 600, 25, 25, "kworker/0:1"),
        Event {
            hart: 1,
            cycle: 900,
            kind: EventKind::Instant {
                label: "end".into(),
            },
        },
    ];
    let v: Value = serde_json::from_str(&chrome_trace(&events, &[], GUEST_HZ).unwrap()).unwrap();
    let all = v["traceEvents"].as_array().unwrap();
    let names: Vec<(u64, String)> = all
        .iter()
        .filter(|x| x["name"] == "thread_name")
        .map(|x| {
            (
                x["tid"].as_u64().unwrap(),
                x["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        names,
        vec![
            (1, "hart 0".into()),
            (100_000, "hart 0 tasks".into()),
            (2, "hart 1".into()),
            (100_001, "hart 1 tasks".into())
        ]
    );
    let slices: Vec<(u64, &str, f64, f64, u64)> = all
        .iter()
        .filter(|x| x["cat"] == "task")
        .map(|x| {
            (
                x["tid"].as_u64().unwrap(),
                x["name"].as_str().unwrap(),
                x["ts"].as_f64().unwrap(),
                x["dur"].as_f64().unwrap(),
                x["args"]["pid"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        slices,
        vec![
            (100_000, "sh", 0.1, 0.3, 300),
            (100_000, "swapper/0", 0.4, 0.2, 0),
            (100_000, "kworker/0:1", 0.6, 0.3, 25),
            (100_001, "swapper/1", 0.15, 0.75, 0),
        ]
    );
}

/// Idle spans a tick separates merge into one slice that keeps the time
/// actually idle; a gap with a system call, a task switch or an IPI, or a
/// gap longer than the limit, keeps them apart. Busy time per hart (the
/// trace's end minus its idle time) is what the events say, merged or not.
#[test]
fn chrome_trace_merges_idle_spans_keeping_idle_and_busy_time() {
    use hs_observe::export::chrome::IDLE_MERGE_GAP_NS;
    let hz = 1_000_000_000; // one cycle per ns
    let gap = IDLE_MERGE_GAP_NS;
    let e = |hart, cycle, kind| Event { hart, cycle, kind };
    let idle = |hart, from: u64, to: u64| e(hart, from, EventKind::WfiIdle { end_cycle: to });
    let tick = |hart, at| {
        e(
            hart,
            at,
            EventKind::Interrupt {
                cause: 5,
                plic_source: None,
            },
        )
    };
    let task = |hart, at, comm: &str| {
        e(
            hart,
            at,
            EventKind::TaskSwitch {
                pid: 0,
                tid: 7,
                comm: comm.into(),
            },
        )
    };
    let mut events = vec![
        // hart 0: four ticks inside a long sleep (merge), then a system
        // call in a short gap (no merge), then a long gap (no merge)
        task(0, 0, "swapper/0"),
        idle(0, 1_000, 100_000),
        tick(0, 100_000),
        idle(0, 103_000, 200_000),
        tick(0, 200_000),
        idle(0, 201_000, 300_000),
        tick(0, 300_000),
        idle(0, 300_000 + gap, 400_000),
        e(0, 401_000, EventKind::Syscall { number: 64 }),
        e(0, 402_000, EventKind::SyscallReturn),
        idle(0, 403_000, 500_000),
        idle(0, 500_000 + gap + 1, 600_000),
        // hart 1: a task runs in the gap; then an IPI wakes it
        task(1, 0, "swapper/1"),
        idle(1, 0, 50_000),
        task(1, 51_000, "kworker/1:1"),
        task(1, 52_000, "swapper/1"),
        idle(1, 53_000, 90_000),
        e(1, 90_000, EventKind::IpiReceived { from: None }),
        idle(1, 91_000, 95_000),
        e(1, 99_000, EventKind::PhaseMarker { label: "x".into() }),
    ];
    // The recorder's order is not the time order.
    events.reverse();
    let v: Value = serde_json::from_str(&chrome_trace(&events, &[], hz).unwrap()).unwrap();
    let all = v["traceEvents"].as_array().unwrap();
    let idle_slices = |tid: u64| -> Vec<(f64, f64, Option<u64>, f64)> {
        all.iter()
            .filter(|x| x["cat"] == "idle" && x["tid"] == tid)
            .map(|x| {
                let dur = x["dur"].as_f64().unwrap();
                (
                    x["ts"].as_f64().unwrap(),
                    dur,
                    x["args"]["wakes"].as_u64(),
                    x["args"]["idle_us"].as_f64().unwrap_or(dur),
                )
            })
            .collect()
    };
    let h0 = idle_slices(1);
    assert_eq!(
        h0.iter().map(|s| (s.0, s.1, s.2)).collect::<Vec<_>>(),
        vec![
            (1.0, 399.0, Some(3)),
            (403.0, 97.0, None),
            (
                (500_000 + gap + 1) as f64 / 1000.0,
                (100_000 - gap - 1) as f64 / 1000.0,
                None
            ),
        ],
        "{h0:?}"
    );
    assert_eq!(
        h0[0].3,
        (99_000 + 97_000 + 99_000 + 100_000 - gap) as f64 / 1000.0
    );
    let h1 = idle_slices(2);
    assert_eq!(
        h1.len(),
        3,
        "a task switch and an IPI each keep spans apart: {h1:?}"
    );
    // Idle time per hart, from the events and from the trace: the same.
    for (tid, hart) in [(1, 0u16), (2, 1)] {
        let from_events: u64 = events
            .iter()
            .filter(|x| x.hart == hart)
            .map(|x| match x.kind {
                EventKind::WfiIdle { end_cycle } => end_cycle - x.cycle,
                _ => 0,
            })
            .sum();
        let from_trace: f64 = idle_slices(tid).iter().map(|s| s.3).sum();
        assert!(
            (from_trace * 1000.0 - from_events as f64).abs() < 0.5,
            "hart {hart}: {from_trace} us idle in the trace, {from_events} ns in the events"
        );
    }
    // Every tick is still there, inside the merged slice.
    let ticks = all
        .iter()
        .filter(|x| x["cat"] == "irq" && x["tid"] == 1)
        .count();
    assert_eq!(ticks, 3);
}
