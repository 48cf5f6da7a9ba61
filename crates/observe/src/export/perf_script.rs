//! Linux `perf script` text for samples, as
//! `perf script -F comm,pid,tid,cpu,time,period,event,ip,sym,symoff,dso`
//! prints a callchain profile, so `stackcollapse-perf.pl`, Perfetto and
//! speedscope read it.

use std::fmt::Write;

use crate::error::{ObserveError, Result};
use crate::sample::Sample;
use crate::symbols::{Space, Symbolizer, UserResolver, UNKNOWN};

/// The event name on every sample line.
const EVENT: &str = "cycles";

/// One block per sample: a header line, one line per frame (leaf first),
/// then a blank line. The header names the task (`comm pid/tid`, from the
/// guest kernel when the sample carries it); time is the sample's cycle at
/// `guest_hz`; `period` is the sampling period in cycles; the hart is the CPU.
pub fn perf_script<R: UserResolver>(
    samples: &[Sample],
    symbolizer: &Symbolizer<R>,
    guest_hz: u64,
    period: u64,
) -> Result<String> {
    if guest_hz == 0 {
        return Err(ObserveError::ZeroFrequency);
    }
    if period == 0 && !samples.is_empty() {
        return Err(ObserveError::ZeroSamplePeriod);
    }
    let mut out = String::new();
    for s in samples {
        let r = symbolizer.resolve_sample(s);
        let ns = s.cycle as u128 * 1_000_000_000 / guest_hz as u128;
        let time = format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1_000);
        // perf's own field widths (builtin-script.c): comm unpadded when a
        // callchain follows, `%5d/%-5d`, `[%03d]`, `%12s:`, `%10u`.
        let _ = writeln!(
            out,
            "{} {:>5}/{:<5} [{:03}] {:>12}: {:>10} {}: ",
            r.comm, r.pid, r.tid, s.hart, time, period, EVENT
        );
        for f in &r.frames {
            // perf prints user addresses relative to the file, kernel ones as is.
            let addr = if f.space == Space::User {
                f.file_addr
            } else {
                f.addr
            };
            let _ = match f.symbol {
                Some(name) => writeln!(out, "\t{addr:>16x} {name}+{:#x} ({})", f.offset, f.dso),
                None => writeln!(out, "\t{addr:>16x} {UNKNOWN} ({})", f.dso),
            };
        }
        out.push('\n');
    }
    Ok(out)
}
