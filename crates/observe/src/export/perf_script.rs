//! Linux `perf script` text for samples, as
//! `perf script -F comm,pid,tid,cpu,time,period,event,ip,sym,symoff,dso`
//! prints a callchain profile, so `stackcollapse-perf.pl`, Perfetto and
//! speedscope read it.

use std::fmt::Write;

use crate::error::{ObserveError, Result};
use crate::sample::Sample;
use crate::symbols::{Callers, Frame, Space, StackResolver, Symbolizer, UserResolver, UNKNOWN};

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
    let mut out = String::new();
    if samples.is_empty() && guest_hz != 0 {
        return Ok(out);
    }
    PerfScript::new(symbolizer, guest_hz, period)?.write(samples, &mut out);
    Ok(out)
}

/// [`perf_script`] a piece at a time (a long run's text is large), each
/// distinct stack's frame lines made once for all pieces.
pub struct PerfScript<'s, R> {
    resolver: StackResolver<'s, R>,
    /// The frame lines of each shared stack, by [`StackId`] (empty until made).
    stack_text: Vec<String>,
    guest_hz: u64,
    period: u64,
}

impl<'s, R: UserResolver> PerfScript<'s, R> {
    pub fn new(symbolizer: &'s Symbolizer<R>, guest_hz: u64, period: u64) -> Result<Self> {
        if guest_hz == 0 {
            return Err(ObserveError::ZeroFrequency);
        }
        if period == 0 {
            return Err(ObserveError::ZeroSamplePeriod);
        }
        Ok(PerfScript {
            resolver: StackResolver::new(symbolizer),
            stack_text: Vec::new(),
            guest_hz,
            period,
        })
    }

    /// Append the blocks of `samples` to `out`.
    pub fn write(&mut self, samples: &[Sample], out: &mut String) {
        for s in samples {
            let p = self.resolver.parts(s);
            let ns = s.cycle as u128 * 1_000_000_000 / self.guest_hz as u128;
            let time = format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1_000);
            // perf's own field widths (builtin-script.c): comm unpadded when a
            // callchain follows, `%5d/%-5d`, `[%03d]`, `%12s:`, `%10u`.
            let _ = writeln!(
                out,
                "{} {:>5}/{:<5} [{:03}] {:>12}: {:>10} {}: ",
                p.comm, p.pid, p.tid, s.hart, time, self.period, EVENT
            );
            push_frame(out, &p.leaf);
            match &p.callers {
                Callers::Own(callers) => callers.iter().for_each(|f| push_frame(out, f)),
                Callers::Shared(id) => {
                    let i = id.index();
                    if self.stack_text.len() <= i {
                        self.stack_text.resize(i + 1, String::new());
                    }
                    if self.stack_text[i].is_empty() {
                        let text = &mut self.stack_text[i];
                        self.resolver
                            .stack(*id)
                            .iter()
                            .for_each(|f| push_frame(text, f));
                    }
                    out.push_str(&self.stack_text[i]);
                }
            }
            out.push('\n');
        }
    }
}

/// One frame line: `\taddr sym+0xoff (dso)`.
fn push_frame(out: &mut String, f: &Frame<'_>) {
    // perf prints user addresses relative to the file, kernel ones as is.
    let addr = if f.space == Space::User {
        f.file_addr
    } else {
        f.addr
    };
    // (by hand: the formatting machinery was most of the time
    // this takes on a long run's millions of frames)
    out.push('\t');
    push_hex(out, addr, 16);
    out.push(' ');
    match f.symbol {
        Some(name) => {
            out.push_str(name);
            out.push_str("+0x");
            push_hex(out, f.offset, 0);
        }
        None => out.push_str(UNKNOWN),
    }
    out.push_str(" (");
    out.push_str(f.dso);
    out.push_str(")\n");
}

/// `v` in lower-case hex, right-aligned in `width` columns (as `{:>width$x}`).
fn push_hex(out: &mut String, v: u64, width: usize) {
    let mut digits = [0u8; 16];
    let mut n = 0;
    let mut v = v;
    loop {
        digits[15 - n] = b"0123456789abcdef"[(v & 15) as usize];
        n += 1;
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    for _ in n..width {
        out.push(' ');
    }
    // ASCII hex digits only
    out.push_str(std::str::from_utf8(&digits[16 - n..]).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::push_hex;

    #[test]
    fn hex_is_what_the_formatter_writes() {
        for v in [
            0u64,
            1,
            0xf,
            0x10,
            0xdead_beef,
            u64::MAX,
            0xffff_ffff_8000_1234,
        ] {
            for w in [0, 1, 16, 20] {
                let mut s = String::new();
                push_hex(&mut s, v, w);
                assert_eq!(s, format!("{v:>w$x}"));
            }
        }
    }
}
