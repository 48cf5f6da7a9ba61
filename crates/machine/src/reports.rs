//! Files an observed run writes: the profile directory, the instruction
//! trace with its per-function summary, and the Chrome trace. All are views
//! of one [`Observations`] record.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use hs_observe::export::{
    annotate, chrome_trace, flamegraph_svg, fold_weighted, folded_text, itrace_text,
    FlamegraphOptions, FoldOptions, HotFunctions, PerfScript,
};
use hs_observe::{ItraceLine, Observations, Symbolizer, UserResolver};

use crate::observation::{ItraceSpec, ItraceWindow, ObserveSetupError};
use crate::symbols::GuestSymbols;

/// Rows per place in `hot.md`.
const HOT_ROWS: usize = 25;
/// Functions annotated instruction by instruction in an itrace report.
const ANNOTATED_FUNCTIONS: usize = 20;

fn write_err(path: &Path) -> impl FnOnce(std::io::Error) -> ObserveSetupError + '_ {
    move |source| ObserveSetupError::Write {
        path: path.to_path_buf(),
        source,
    }
}

fn write_file(path: &Path, data: &[u8]) -> Result<PathBuf, ObserveSetupError> {
    std::fs::write(path, data).map_err(write_err(path))?;
    Ok(path.to_path_buf())
}

/// `hot.md`, `perf.script`, `folded.txt` and `flamegraph.svg` in `dir`;
/// without `perf_script`, no `perf.script` (and none left from before).
pub fn write_profile(
    dir: &Path,
    obs: &Observations,
    symbols: &GuestSymbols,
    title: &str,
    perf_script: bool,
) -> Result<Vec<PathBuf>, ObserveSetupError> {
    std::fs::create_dir_all(dir).map_err(write_err(dir))?;
    if !perf_script {
        // (one left by an earlier run would pass for this run's)
        let old = dir.join("perf.script");
        match std::fs::remove_file(&old) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(write_err(&old)(e)),
            _ => {}
        }
    }
    let sym = symbols.symbolizer();
    // perf.script (the largest by far) is written on a second thread while
    // this one writes the rest: they read the same samples and symbols.
    std::thread::scope(|scope| {
        let perf = perf_script.then(|| scope.spawn(|| write_perf_script(dir, obs, sym)));
        let mut written = write_profile_summaries(dir, obs, symbols, title)?;
        if let Some(perf) = perf {
            let perf = perf
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
            written.insert(1, perf);
        }
        Ok(written)
    })
}

/// `perf.script` of every sample (in pieces: for a long run it is large).
fn write_perf_script<R: UserResolver>(
    dir: &Path,
    obs: &Observations,
    sym: &Symbolizer<R>,
) -> Result<PathBuf, ObserveSetupError> {
    let path = dir.join("perf.script");
    let file = std::fs::File::create(&path).map_err(write_err(&path))?;
    let mut out = std::io::BufWriter::new(file);
    let mut script = PerfScript::new(sym, obs.guest_hz, obs.sample_period.max(1))?;
    let mut text = Vec::new();
    for chunk in obs.samples.chunks(4096) {
        text.clear();
        script.write(chunk, &mut text);
        out.write_all(&text).map_err(write_err(&path))?;
    }
    out.flush().map_err(write_err(&path))?;
    Ok(path)
}

/// `hot.md`, `folded.txt` and `flamegraph.svg` in `dir`.
fn write_profile_summaries(
    dir: &Path,
    obs: &Observations,
    symbols: &GuestSymbols,
    title: &str,
) -> Result<Vec<PathBuf>, ObserveSetupError> {
    let sym = symbols.symbolizer();
    let mut written = Vec::new();

    // The two passes over the samples, side by side (the second core is
    // otherwise idle when perf.script is left out), each naming a kernel
    // sample once for all the samples named alike.
    let alike = hs_observe::coalesce(&obs.samples);
    let (hot, folded) = std::thread::scope(|scope| {
        let folded = scope.spawn(|| {
            fold_weighted(
                alike.iter().copied(),
                sym,
                FoldOptions {
                    include_comm: true,
                    annotate_kernel: true,
                },
            )
        });
        let hot = HotFunctions::compute_weighted(alike.iter().copied(), sym, obs.sample_period);
        let folded = folded
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (hot, folded)
    });
    let mut md = format!("# Hot functions — {title}\n\n");
    md.push_str(&hot.to_markdown_by_place(title, HOT_ROWS));
    md.push('\n');
    md.push_str(&hot.to_markdown_by_task_and_hart(HOT_ROWS));
    md.push('\n');
    md.push_str(&hot.to_markdown_children(HOT_ROWS));
    let skipped = obs
        .total
        .get("system.samplesIdleSkipped")
        .map(|s| s.value.as_f64() as u64)
        .unwrap_or(0);
    let dropped = obs
        .total
        .get("system.samplesDropped")
        .map(|s| s.value.as_f64() as u64)
        .unwrap_or(0);
    md.push_str("\n## Notes\n\n");
    let _ = writeln!(md, "- Sampled every {} cycles of each hart; {skipped} sample deadlines fell into `wfi` idle time and were not sampled (the clock is stopped there).", obs.sample_period);
    if dropped > 0 {
        let _ = writeln!(
            md,
            "- {dropped} samples beyond the sample limit were not kept."
        );
    }
    md.push_str("- Firmware: OpenSBI's ELF files in Debian keep only their exported symbols, so most M-mode samples are `[unknown]` inside `fw_jump.elf`.\n");
    md.push_str("- User programs are recognised by their code bytes at the sampled PC; BusyBox has no frame pointers, so user stacks are mostly one or two frames deep.\n");
    for n in &symbols.notes {
        let _ = writeln!(md, "- {n}");
    }
    written.push(write_file(&dir.join("hot.md"), md.as_bytes())?);

    written.push(write_file(
        &dir.join("folded.txt"),
        folded_text(&folded).as_bytes(),
    )?);
    let opts = FlamegraphOptions {
        title: format!("{title} — {} samples", obs.samples.len()),
        ..FlamegraphOptions::default()
    };
    written.push(write_file(
        &dir.join("flamegraph.svg"),
        flamegraph_svg(&folded, &opts).as_bytes(),
    )?);
    Ok(written)
}

/// One traced window: its lines and their cycle sum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceWindow {
    pub hart: u16,
    pub first_cycle: u64,
    /// Cycle after the last line.
    pub end_cycle: u64,
    pub lines: usize,
    /// Sum of the lines' cycles.
    pub cycles: u64,
}

/// Split a trace into windows: a new window starts where a hart's lines
/// stop being back to back in time.
pub fn trace_windows(lines: &[ItraceLine]) -> Vec<TraceWindow> {
    let mut open: BTreeMap<u16, usize> = BTreeMap::new();
    let mut out: Vec<TraceWindow> = Vec::new();
    for l in lines {
        match open.get(&l.hart).copied() {
            Some(i) if out[i].end_cycle == l.cycle => {
                out[i].end_cycle = l.cycle + l.cycles;
                out[i].lines += 1;
                out[i].cycles += l.cycles;
            }
            _ => {
                open.insert(l.hart, out.len());
                out.push(TraceWindow {
                    hart: l.hart,
                    first_cycle: l.cycle,
                    end_cycle: l.cycle + l.cycles,
                    lines: 1,
                    cycles: l.cycles,
                });
            }
        }
    }
    out
}

/// The instruction trace as text: a header, one line per instruction, the
/// windows with their cycle sums, cycles per function, and a `perf
/// annotate`-style view of the costliest functions.
pub fn itrace_report(obs: &Observations, spec: &ItraceSpec) -> String {
    let lines = &obs.itrace;
    let mut out = String::new();
    let _ = writeln!(out, "# hartscope instruction trace: {}", spec.describe());
    if lines.is_empty() {
        let why = match &spec.window {
            ItraceWindow::Syscall { .. } => "the system call was never made from U-mode",
            ItraceWindow::Phase { .. } => "no phase marker with that label was seen",
        };
        let _ = writeln!(out, "# nothing traced: {why}");
        return out;
    }
    out.push_str("# cycles = 1 + the cycles the timing model's hooks charged (page walks for a fetch are booked to the instruction before)\n");
    out.push_str("# stall = the cause that cost the most beyond what every instruction pays for it; lines = I(fetch)/L/S/W(walk):line:hit|miss,\n");
    out.push_str("#   hit = no dearer than the cheapest access of that kind in this trace\n");
    out.push_str(&itrace_text(lines));
    if obs.total.get("system.itraceTruncated").is_some() {
        let _ = writeln!(
            out,
            "# truncated: the trace reached its limit of {} lines",
            spec.limit
        );
    }
    out.push_str("\n## Windows\n\n| # | hart | first cycle | end cycle | instructions | sum of cycles |\n|--:|--:|--:|--:|--:|--:|\n");
    for (i, w) in trace_windows(lines).iter().enumerate() {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            i + 1,
            w.hart,
            w.first_cycle,
            w.end_cycle,
            w.lines,
            w.cycles
        );
    }

    // Cycles per function, costliest first.
    let mut per: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for l in lines {
        let name = l
            .symbol
            .as_ref()
            .map_or("[unknown]".to_string(), |s| s.name.clone());
        let e = per.entry(name).or_default();
        e.0 += l.cycles;
        e.1 += 1;
    }
    let total: u64 = lines.iter().map(|l| l.cycles).sum();
    let mut rows: Vec<(String, u64, u64)> = per.into_iter().map(|(n, (c, i))| (n, c, i)).collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out.push_str("\n## Cycles by function\n\n| function | cycles | share | instructions |\n|:--|--:|--:|--:|\n");
    for (n, c, i) in &rows {
        let share = if total == 0 {
            0.0
        } else {
            *c as f64 * 100.0 / total as f64
        };
        let _ = writeln!(out, "| {n} | {c} | {share:.1}% | {i} |");
    }
    let _ = writeln!(out, "| total | {total} | 100.0% | {} |", lines.len());
    out.push_str("\n## Annotated functions\n");
    for (n, _, _) in rows
        .iter()
        .filter(|r| r.0 != "[unknown]")
        .take(ANNOTATED_FUNCTIONS)
    {
        if let Some(a) = annotate(lines, n) {
            let _ = writeln!(out, "\n{a}");
        }
    }
    out
}

/// Check that `name` is a kernel function this run can annotate (before
/// the run: a typo must not cost the run).
pub fn check_annotatable(symbols: &GuestSymbols, name: &str) -> Result<(), String> {
    let sym = symbols.symbolizer();
    let Some(table) = sym.kernel() else {
        return Err(format!(
            "--annotate {name}: the run has no kernel symbol table"
        ));
    };
    if table.by_name(name).is_none() {
        return Err(format!(
            "--annotate {name}: no kernel function of that name in the kernel's symbols"
        ));
    }
    if sym.kernel_physical().is_none() {
        return Err(format!("--annotate {name}: where the kernel sits in guest memory is unknown (no `_start` symbol)"));
    }
    Ok(())
}

/// `perf annotate` of a kernel function from the run's samples: every
/// instruction of the function as it stands in guest memory at the end of
/// the run (so boot-time code patching is what is shown), with the share and
/// count of samples taken at it and, from the kernel's line tables where it
/// has them, the source line above the instructions it became.
pub fn annotate_kernel_function(
    obs: &Observations,
    symbols: &GuestSymbols,
    ram: &hs_bus::GuestRam,
    name: &str,
) -> Result<String, String> {
    check_annotatable(symbols, name)?;
    let sym = symbols.symbolizer();
    let f = sym.kernel().and_then(|t| t.by_name(name)).expect("checked");
    let (pa_lo, pa_hi, va_start) = sym.kernel_physical().expect("checked");
    let (start, end) = (f.start, f.end.max(f.start));
    let len = end - start;
    let pa = pa_lo.wrapping_add(start.wrapping_sub(va_start));
    if start < va_start || pa.checked_add(len).is_none_or(|e| e > pa_hi) || len > 1 << 20 {
        return Err(format!(
            "--annotate {name}: {start:#x}..{end:#x} is not inside the loaded kernel image"
        ));
    }
    let mut code = vec![0u8; len as usize];
    if !ram.read_bytes(pa, &mut code) {
        return Err(format!(
            "--annotate {name}: the kernel image is not in guest RAM at {pa:#x}"
        ));
    }
    let mut hits: BTreeMap<u64, u64> = BTreeMap::new();
    let mut in_fn = 0u64;
    for s in &obs.samples {
        if s.privilege == hs_observe::Privilege::Supervisor && (start..end).contains(&s.pc) {
            *hits.entry(s.pc).or_default() += 1;
            in_fn += 1;
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        " Percent | Samples | Disassembly of {name} ({start:#x}, {len} bytes; {in_fn} of {} samples, one every {} cycles)",
        obs.samples.len(),
        obs.sample_period
    );
    out.push_str("# The sampler takes samples between basic blocks, so a sample is counted at the first\n# instruction of the block it fell in; `--itrace` gives each instruction's own cycles.\n");
    out.push_str(
        "---------+---------+------------------------------------------------------------\n",
    );
    let (mut off, mut last_source) = (0usize, None::<String>);
    while off + 2 <= code.len() {
        let low = u16::from_le_bytes([code[off], code[off + 1]]);
        let n = hs_isa::insn_len(low) as usize;
        let pc = start + off as u64;
        let text = if n == 4 && off + 4 <= code.len() {
            let w = u32::from_le_bytes([code[off], code[off + 1], code[off + 2], code[off + 3]]);
            hs_isa::disasm(&hs_isa::decode(w).0, pc)
        } else if n == 2 {
            hs_isa::disasm(&hs_isa::decode(low as u32).0, pc)
        } else {
            format!(".byte {:#04x}, {:#04x}", code[off], code[off + 1])
        };
        let n = if n == 4 && off + 4 <= code.len() {
            4
        } else {
            2
        };
        if let Some(src) = symbols.kernel_source_line(pc) {
            if last_source.as_deref() != Some(src.as_str()) {
                let _ = writeln!(out, "         :         : {src}");
                last_source = Some(src);
            }
        }
        let c = hits.get(&pc).copied().unwrap_or(0);
        let pct = if in_fn == 0 {
            0.0
        } else {
            c as f64 * 100.0 / in_fn as f64
        };
        let shown = if c == 0 {
            "        ".to_string()
        } else {
            format!("{pct:>8.2}")
        };
        let _ = writeln!(
            out,
            "{shown} | {c:>7} | {pc:16x} <+{off:#x}>: {}",
            text.replace(|ch: char| ch.is_control(), " ")
        );
        off += n;
    }
    Ok(out)
}

/// The Chrome trace-event JSON of the run's events and phases.
pub fn chrome_trace_json(obs: &Observations) -> Result<String, ObserveSetupError> {
    Ok(chrome_trace(&obs.events, &obs.phases, obs.guest_hz)?)
}

/// Write `data` to `path` through a temporary file and a rename.
pub fn write_atomically(path: &Path, data: &[u8]) -> Result<(), ObserveSetupError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    std::fs::write(&tmp, data)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|source| {
            let _ = std::fs::remove_file(&tmp);
            ObserveSetupError::Write {
                path: path.to_path_buf(),
                source,
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hs_observe::{Privilege, StallCause};

    fn line(hart: u16, cycle: u64, cycles: u64) -> ItraceLine {
        ItraceLine {
            hart,
            cycle,
            pc: 0x1000 + cycle,
            privilege: Privilege::Supervisor,
            symbol: None,
            disasm: "nop".into(),
            cycles,
            stall: StallCause::None,
            lines: vec![],
            source: None,
        }
    }

    #[test]
    fn windows_split_where_time_jumps() {
        let lines = vec![
            line(0, 10, 1),
            line(0, 11, 3),
            line(1, 12, 2),
            line(0, 14, 1),
            line(0, 100, 2),
        ];
        assert_eq!(
            trace_windows(&lines),
            vec![
                TraceWindow {
                    hart: 0,
                    first_cycle: 10,
                    end_cycle: 15,
                    lines: 3,
                    cycles: 5
                },
                TraceWindow {
                    hart: 1,
                    first_cycle: 12,
                    end_cycle: 14,
                    lines: 1,
                    cycles: 2
                },
                TraceWindow {
                    hart: 0,
                    first_cycle: 100,
                    end_cycle: 102,
                    lines: 1,
                    cycles: 2
                },
            ]
        );
    }
}
