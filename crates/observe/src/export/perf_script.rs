//! Linux `perf script` text for samples, as
//! `perf script -F comm,pid,tid,cpu,time,period,event,ip,sym,symoff,dso`
//! prints a callchain profile, so `stackcollapse-perf.pl`, Perfetto and
//! speedscope read it.

use crate::error::{ObserveError, Result};
use crate::sample::Sample;
use crate::symbols::{
    Callers, Frame, SampleParts, Space, StackResolver, Symbolizer, UserResolver, UNKNOWN,
};

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
    let mut out = Vec::new();
    if samples.is_empty() && guest_hz != 0 {
        return Ok(String::new());
    }
    PerfScript::new(symbolizer, guest_hz, period)?.write(samples, &mut out);
    // (every piece is a `str` or ASCII: valid UTF-8 whole)
    Ok(String::from_utf8(out)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// [`perf_script`] a piece at a time (a long run's text is large), each
/// distinct stack's frame lines made once for all pieces.
pub struct PerfScript<'s, R> {
    resolver: StackResolver<'s, R>,
    /// The frame lines of each shared stack, by [`StackId`] (empty until made).
    stack_text: Vec<Vec<u8>>,
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

    /// Append the blocks of `samples` to `out` (UTF-8 text: bytes, so
    /// that numbers go in without a check or a `char` at a time).
    pub fn write(&mut self, samples: &[Sample], out: &mut Vec<u8>) {
        for s in samples {
            let p = self.resolver.parts(s);
            push_header(out, &p, s, self.guest_hz, self.period);
            push_frame(out, &p.leaf);
            match &p.callers {
                Callers::Own(callers) => callers.iter().for_each(|f| push_frame(out, f)),
                Callers::Shared(id) => {
                    let i = id.index();
                    if self.stack_text.len() <= i {
                        self.stack_text.resize(i + 1, Vec::new());
                    }
                    if self.stack_text[i].is_empty() {
                        let text = &mut self.stack_text[i];
                        self.resolver
                            .stack(*id)
                            .iter()
                            .for_each(|f| push_frame(text, f));
                    }
                    out.extend_from_slice(&self.stack_text[i]);
                }
            }
            out.push(b'\n');
        }
    }
}

/// A sample's header line. perf's own field widths (builtin-script.c):
/// comm unpadded when a callchain follows, `%5d/%-5d`, `[%03d]`, `%12s:`,
/// `%10u`; the time is the cycle at `guest_hz` in seconds, to the
/// microsecond. (By hand, as the frames: `format!` was most of the time.)
fn push_header(out: &mut Vec<u8>, p: &SampleParts<'_>, s: &Sample, guest_hz: u64, period: u64) {
    // The time to the microsecond, floored: the whole seconds and the
    // microseconds of the rest, each floored, are those of the cycle's
    // nanoseconds (floor(floor(x / a) / b) = floor(x / ab)), with no
    // 128-bit division, the slowest part of this line when it had one.
    let (secs, rem) = (s.cycle / guest_hz, s.cycle % guest_hz);
    let micros = match rem.checked_mul(1_000_000) {
        Some(r) => r / guest_hz,
        None => (rem as u128 * 1_000_000 / guest_hz as u128) as u64,
    };
    out.extend_from_slice(p.comm.as_bytes());
    out.push(b' ');
    push_dec(out, p.pid as u64, 5, Pad::Left);
    out.push(b'/');
    push_dec(out, p.tid as u64, 5, Pad::Right);
    out.extend_from_slice(b" [");
    push_dec(out, s.hart as u64, 3, Pad::Zero);
    out.extend_from_slice(b"] ");
    // the time, right-aligned in 12 columns
    let digits = |v: u64| if v == 0 { 1 } else { v.ilog10() as usize + 1 };
    out.resize(out.len() + 12usize.saturating_sub(digits(secs) + 7), b' ');
    push_dec(out, secs, 0, Pad::Left);
    out.push(b'.');
    push_dec(out, micros, 6, Pad::Zero);
    out.extend_from_slice(b": ");
    push_dec(out, period, 10, Pad::Left);
    out.push(b' ');
    out.extend_from_slice(EVENT.as_bytes());
    out.extend_from_slice(b": \n");
}

/// Where [`push_dec`] pads to its width: spaces on the left (`{:>w}`), on
/// the right (`{:<w}`), or zeros on the left (`{:0w}`).
#[derive(Clone, Copy, PartialEq)]
enum Pad {
    Left,
    Right,
    Zero,
}

/// `v` in decimal, padded to `width` columns.
fn push_dec(out: &mut Vec<u8>, v: u64, width: usize, pad: Pad) {
    let mut digits = [0u8; 20];
    let mut n = 0;
    let mut v = v;
    loop {
        digits[19 - n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let fill = if pad == Pad::Zero { b'0' } else { b' ' };
    if pad != Pad::Right {
        out.resize(out.len() + width.saturating_sub(n), fill);
    }
    out.extend_from_slice(&digits[20 - n..]);
    if pad == Pad::Right {
        out.resize(out.len() + width.saturating_sub(n), b' ');
    }
}

/// One frame line: `\taddr sym+0xoff (dso)`.
fn push_frame(out: &mut Vec<u8>, f: &Frame<'_>) {
    // perf prints user addresses relative to the file, kernel ones as is.
    let addr = if f.space == Space::User {
        f.file_addr
    } else {
        f.addr
    };
    // (by hand: the formatting machinery was most of the time
    // this takes on a long run's millions of frames)
    out.push(b'\t');
    push_hex(out, addr, 16);
    out.push(b' ');
    match f.symbol {
        Some(name) => {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"+0x");
            push_hex(out, f.offset, 0);
        }
        None => out.extend_from_slice(UNKNOWN.as_bytes()),
    }
    out.extend_from_slice(b" (");
    out.extend_from_slice(f.dso.as_bytes());
    out.extend_from_slice(b")\n");
}

/// `v` in lower-case hex, right-aligned in `width` columns (as `{:>width$x}`).
fn push_hex(out: &mut Vec<u8>, v: u64, width: usize) {
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
    out.resize(out.len() + width.saturating_sub(n), b' ');
    out.extend_from_slice(&digits[16 - n..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_headers_are_what_the_formatter_writes() {
        let values = [
            0u64,
            1,
            9,
            10,
            99,
            100,
            12_345,
            99_999,
            100_000,
            4_294_967_295,
            u64::MAX,
        ];
        for v in values {
            for w in [0, 3, 5, 6, 10] {
                let mut s = Vec::new();
                push_dec(&mut s, v, w, Pad::Left);
                push_dec(&mut s, v, w, Pad::Right);
                push_dec(&mut s, v, w, Pad::Zero);
                assert_eq!(s, format!("{v:>w$}{v:<w$}{v:0w$}").into_bytes());
            }
        }
        let sym = crate::symbols::Symbolizer::new();
        for (cycle, hz, pid, tid, hart) in [
            (0u64, 1_000_000_000u64, 0u32, 0u32, 0u16),
            (1_234_567, 1_000_000_000, 42, 7, 3),
            (u64::MAX, 1_000_000, 4_194_304, 123_456, 511),
            (999_999_999_999, 10_000_000, 1, 100_000, 12),
            (u64::MAX - 1, 3, 9, 9, 0),
            // (the remainder times 10^6 past 64 bits: the wide path)
            (u64::MAX, 50_000_000_000_000, 9, 9, 0),
            (987_654_321_987, 999_999_937, 9, 9, 1),
        ] {
            let sample = Sample {
                hart,
                cycle,
                pc: 0,
                privilege: crate::sample::Privilege::Machine,
                satp: 0,
                stack: Vec::new().into(),
                task: Some(crate::sample::Task {
                    pid,
                    tid,
                    comm: "kworker/0:1".into(),
                }),
            };
            let p = crate::symbols::StackResolver::new(&sym).parts(&sample);
            let mut got = Vec::new();
            push_header(&mut got, &p, &sample, hz, 1024);
            let ns = cycle as u128 * 1_000_000_000 / hz as u128;
            let time = format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1_000);
            let want = format!(
                "kworker/0:1 {pid:>5}/{tid:<5} [{hart:03}] {time:>12}: {:>10} cycles: \n",
                1024
            );
            assert_eq!(String::from_utf8(got).unwrap(), want);
        }
    }

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
                let mut s = Vec::new();
                push_hex(&mut s, v, w);
                assert_eq!(s, format!("{v:>w$x}").into_bytes());
            }
        }
    }
}
