//! Folded stacks (`root;…;leaf count`), the input of flamegraph tools.

use std::collections::BTreeMap;

use crate::sample::Sample;
use crate::symbols::{Frame, Symbolizer, UserResolver, UNKNOWN};

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
pub(crate) fn frame_name(f: &Frame<'_>, annotate_kernel: bool) -> String {
    let mut name = match f.symbol {
        Some(s) => s.to_string(),
        None if f.dso == UNKNOWN => UNKNOWN.to_string(),
        None => format!("[{}]", f.dso.rsplit('/').next().unwrap_or(f.dso)),
    };
    name = name.replace(';', ":");
    if annotate_kernel && kernel_dso(f.dso) {
        name.push_str("_[k]");
    }
    name
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
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for s in samples {
        let r = symbolizer.resolve_sample(s);
        let mut parts: Vec<String> = Vec::with_capacity(r.frames.len() + 1);
        if opts.include_comm {
            parts.push(comm_frame(r.comm));
        }
        parts.extend(
            r.frames
                .iter()
                .rev()
                .map(|f| frame_name(f, opts.annotate_kernel)),
        );
        *counts.entry(parts.join(";")).or_default() += 1;
    }
    counts.into_iter().collect()
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
