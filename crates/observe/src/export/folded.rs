//! Folded stacks (`root;…;leaf count`), the input of flamegraph tools.

use std::collections::HashMap;

use crate::sample::{FastHash, Sample};
use crate::symbols::{Callers, Frame, StackResolver, Symbolizer, UserResolver, UNKNOWN};

/// Folded stacks are what `inferno-collapse-perf` (and FlameGraph's
/// `stackcollapse-perf.pl`, whose rules it follows) makes of this crate's
/// `perf script` text, except that counts are samples, not cycles (those
/// tools weigh each sample by its period, which here is the same for all).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FoldOptions {
    /// Start every stack with the task's `comm` (spaces become `_`), as
    /// those tools do by default: one root per command name.
    pub include_comm: bool,
    /// Suffix frames of a bracketed binary (`[kernel.kallsyms]`, a module
    /// such as `[nvme]`, `[firmware]`) or of a `vmlinux` with `_[k]`, as
    /// `inferno-collapse-perf --kernel` does, so flamegraph colouring can
    /// tell the kernel apart.
    pub annotate_kernel: bool,
}

/// Whether `--kernel` marks frames of binary `dso` as kernel frames.
fn kernel_dso(dso: &str) -> bool {
    (dso.starts_with('[') && dso != UNKNOWN) || dso.contains("vmlinux")
}

/// A frame's name in a folded stack: the symbol, or the binary's base name
/// in brackets when the symbol is unknown (`[busybox]`,
/// `[[kernel.kallsyms]]`; an unknown binary stays `[unknown]`). `;` would
/// split the frame, so it becomes `:`.
fn push_frame_name(out: &mut String, f: &Frame<'_>, annotate_kernel: bool) {
    push_name(out, f.symbol, f.dso, annotate_kernel)
}

/// [`push_frame_name`] of a frame with this symbol in binary `dso`.
fn push_name(out: &mut String, symbol: Option<&str>, dso: &str, annotate_kernel: bool) {
    let push = |out: &mut String, s: &str| {
        if s.contains(';') {
            out.push_str(&s.replace(';', ":"));
        } else {
            out.push_str(s);
        }
    };
    match symbol {
        Some(s) => push(out, s),
        None if dso == UNKNOWN => out.push_str(UNKNOWN),
        None => {
            out.push('[');
            push(out, dso.rsplit('/').next().unwrap_or(dso));
            out.push(']');
        }
    }
    if annotate_kernel && kernel_dso(dso) {
        out.push_str("_[k]");
    }
}

/// A task's root frame: its `comm`, spaces and `;` replaced.
pub(crate) fn comm_frame(comm: &str) -> String {
    comm.replace(' ', "_").replace(';', ":")
}

/// Count identical stacks; the result is sorted by stack text.
pub fn fold<R: UserResolver>(
    samples: &[Sample],
    symbolizer: &Symbolizer<R>,
    opts: FoldOptions,
) -> Vec<(String, u64)> {
    fold_weighted(samples.iter().map(|s| (s, 1)), symbolizer, opts)
}

/// [`fold`] of samples each standing for `n` alike (as
/// [`crate::sample::coalesce`] gives them): the same stacks and counts.
pub fn fold_weighted<'a, R: UserResolver>(
    samples: impl IntoIterator<Item = (&'a Sample, u64)>,
    symbolizer: &Symbolizer<R>,
    opts: FoldOptions,
) -> Vec<(String, u64)> {
    // Samples with a shared stack are counted by (task, leaf, stack) and
    // their text made once per such triple; the rest by their text, in a
    // buffer reused for every sample. Sorted once at the end.
    let mut resolver = StackResolver::new(symbolizer);
    let mut shared: HashMap<_, u64, FastHash> = HashMap::default();
    let mut counts: HashMap<String, u64> = HashMap::new();
    let mut line = String::new();
    let mut count = |line: &str, n: u64| match counts.get_mut(line) {
        Some(c) => *c += n,
        None => {
            counts.insert(line.to_string(), n);
        }
    };
    for (s, n) in samples {
        let p = resolver.parts(s);
        match &p.callers {
            Callers::Shared(id) => {
                *shared
                    .entry((p.comm, p.leaf.dso, p.leaf.symbol, *id))
                    .or_default() += n
            }
            Callers::Own(callers) => {
                fold_line(&mut line, p.comm, callers, p.leaf.symbol, p.leaf.dso, opts);
                count(&line, n);
            }
        }
    }
    for ((comm, dso, symbol, id), n) in shared {
        fold_line(&mut line, comm, resolver.stack(id), symbol, dso, opts);
        count(&line, n);
    }
    let mut folded: Vec<(String, u64)> = counts.into_iter().collect();
    folded.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    folded
}

/// One folded stack into `line`: the task, the callers outermost first,
/// then the leaf (`symbol` in `dso`).
fn fold_line(
    line: &mut String,
    comm: &str,
    callers: &[Frame<'_>],
    symbol: Option<&str>,
    dso: &str,
    opts: FoldOptions,
) {
    line.clear();
    if opts.include_comm {
        line.push_str(&comm_frame(comm));
        line.push(';');
    }
    for f in callers.iter().rev() {
        push_frame_name(line, f, opts.annotate_kernel);
        line.push(';');
    }
    push_name(line, symbol, dso, opts.annotate_kernel);
}

/// Folded stacks as text, one `stack count` line each.
pub fn folded_text(folded: &[(String, u64)]) -> String {
    let mut out = String::new();
    for (stack, count) in folded {
        out.push_str(stack);
        out.push(' ');
        out.push_str(&count.to_string());
        out.push('\n');
    }
    out
}
