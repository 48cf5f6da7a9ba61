//! Folded stacks (`root;…;leaf count`), the input of flamegraph tools.

use std::collections::BTreeMap;

use crate::sample::Sample;
use crate::symbols::{Frame, Space, Symbolizer, UserResolver};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FoldOptions {
    /// Start every stack with the task's name, as `stackcollapse-perf.pl` does.
    pub include_comm: bool,
    /// Suffix kernel frames with `_[k]` and firmware frames with `_[f]`,
    /// so flamegraph colouring can tell them apart.
    pub annotate_space: bool,
}

/// A frame's name in a folded stack: the symbol, or the binary's name in
/// brackets when the symbol is unknown. `;` would split the frame, so it
/// becomes `:`.
pub(crate) fn frame_name(f: &Frame<'_>, annotate_space: bool) -> String {
    let mut name = match f.symbol {
        Some(s) => s.to_string(),
        None => {
            let base = f.dso.rsplit('/').next().unwrap_or(f.dso);
            if base.starts_with('[') { base.to_string() } else { format!("[{base}]") }
        }
    };
    name = name.replace(';', ":");
    if annotate_space {
        match f.space {
            Space::Kernel => name.push_str("_[k]"),
            Space::Firmware => name.push_str("_[f]"),
            Space::User => {}
        }
    }
    name
}

/// Count identical stacks; the result is sorted by stack text.
pub fn fold<R: UserResolver>(samples: &[Sample], symbolizer: &Symbolizer<R>, opts: FoldOptions) -> Vec<(String, u64)> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for s in samples {
        let r = symbolizer.resolve_sample(s);
        let mut parts: Vec<String> = Vec::with_capacity(r.frames.len() + 1);
        if opts.include_comm {
            parts.push(r.comm.replace(';', ":"));
        }
        parts.extend(r.frames.iter().rev().map(|f| frame_name(f, opts.annotate_space)));
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
