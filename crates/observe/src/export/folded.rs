//! Folded stacks (`root;…;leaf count`), the input of flamegraph tools.

use std::collections::HashMap;

use crate::sample::Sample;
use crate::symbols::{Frame, StackResolver, Symbolizer, UserResolver, UNKNOWN};

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
    let push = |out: &mut String, s: &str| {
        if s.contains(';') {
            out.push_str(&s.replace(';', ":"));
        } else {
            out.push_str(s);
        }
    };
    match f.symbol {
        Some(s) => push(out, s),
        None if f.dso == UNKNOWN => out.push_str(UNKNOWN),
        None => {
            out.push('[');
            push(out, f.dso.rsplit('/').next().unwrap_or(f.dso));
            out.push(']');
        }
    }
    if annotate_kernel && kernel_dso(f.dso) {
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
    // Counted by stack text in a hash map (one key allocation per distinct
    // stack, a buffer reused for every sample), then sorted once.
    let mut counts: HashMap<String, u64> = HashMap::new();
    let mut line = String::new();
    let mut resolver = StackResolver::new(symbolizer);
    for s in samples {
        let r = resolver.resolve(s);
        line.clear();
        let mut first = true;
        if opts.include_comm {
            line.push_str(&comm_frame(r.comm));
            first = false;
        }
        for f in r.frames.iter().rev() {
            if !first {
                line.push(';');
            }
            first = false;
            push_frame_name(&mut line, f, opts.annotate_kernel);
        }
        match counts.get_mut(line.as_str()) {
            Some(n) => *n += 1,
            None => {
                counts.insert(line.clone(), 1);
            }
        }
    }
    let mut folded: Vec<(String, u64)> = counts.into_iter().collect();
    folded.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    folded
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
