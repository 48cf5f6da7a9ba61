//! The hot-functions table: which symbols the samples landed in.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use super::text::{md_cell, percent, thousands};
use crate::sample::{FastHash, Sample};
use crate::symbols::{Callers, Frame, StackId, StackResolver, Symbolizer, UserResolver, UNKNOWN};

/// One row: a symbol and where it lives (`kernel`, `firmware` or a binary).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HotRow {
    pub symbol: String,
    pub place: String,
    pub samples: u64,
}

/// Samples of one task (a `comm` and process id), with its hottest symbols.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRow {
    pub comm: String,
    pub pid: u32,
    pub samples: u64,
    /// Samples per hart it ran on.
    pub harts: BTreeMap<u16, u64>,
    /// `(symbol, place, samples)`, most sampled first.
    pub symbols: Vec<(String, String, u64)>,
}

/// Samples of one hart, with the tasks it ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HartRow {
    pub hart: u16,
    pub samples: u64,
    /// `(comm, pid, samples)`, most sampled first.
    pub tasks: Vec<(String, u32, u64)>,
}

/// A symbol's samples as `perf report --children` counts them: `total`
/// samples with the symbol anywhere on the stack (itself or a callee
/// running), `self_samples` with it as the leaf.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildrenRow {
    pub symbol: String,
    pub place: String,
    pub total: u64,
    pub self_samples: u64,
}

/// Samples per leaf symbol, most sampled first; and per task and per hart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HotFunctions {
    pub total_samples: u64,
    /// Cycles between samples, for the caption.
    pub period: u64,
    /// Every symbol with at least one sample; ties broken by place, then name.
    pub rows: Vec<HotRow>,
    /// Every task with a sample, most sampled first (then by comm, pid).
    pub tasks: Vec<TaskRow>,
    /// Every hart with a sample, in hart order.
    pub harts: Vec<HartRow>,
    /// Every symbol on any sampled stack, most total first.
    pub children: Vec<ChildrenRow>,
}

/// Sort `(key, count)` pairs most first, ties by key.
fn most_first<K: Ord>(m: BTreeMap<K, u64>) -> Vec<(K, u64)> {
    let mut v: Vec<(K, u64)> = m.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

impl HotFunctions {
    pub fn compute<R: UserResolver>(
        samples: &[Sample],
        symbolizer: &Symbolizer<R>,
        period: u64,
    ) -> HotFunctions {
        Self::compute_weighted(samples.iter().map(|s| (s, 1)), symbolizer, period)
    }

    /// [`Self::compute`] of samples each standing for `n` alike (as
    /// [`crate::sample::coalesce`] gives them): the same table.
    pub fn compute_weighted<'a, R: UserResolver>(
        samples: impl IntoIterator<Item = (&'a Sample, u64)>,
        symbolizer: &Symbolizer<R>,
        period: u64,
    ) -> HotFunctions {
        // Accumulated under borrowed names (no allocation per sample), then
        // turned into owned, ordered maps: the same output as counting in them.
        type Key<'k> = (&'k str, &'k str);
        // (names the run chose: no need for SipHash)
        let mut counts: HashMap<Key, u64, FastHash> = HashMap::default();
        type TaskAcc<'k> = (BTreeMap<u16, u64>, HashMap<Key<'k>, u64, FastHash>);
        let mut tasks: HashMap<(&str, u32), TaskAcc, FastHash> = HashMap::default();
        let mut harts: BTreeMap<u16, HashMap<(&str, u32), u64, FastHash>> = BTreeMap::new();
        // (place, symbol) -> (total, self)
        let mut inclusive: HashMap<Key, (u64, u64), FastHash> = HashMap::default();
        let mut on_stack: Vec<Key> = Vec::new();
        // Each sample is counted once, by (task, hart, leaf, stack) — the
        // stack when it is shared — and the counts per symbol, task and hart
        // made from those at the end, walking each shared stack once per key.
        type SampleKey<'k> = ((&'k str, u32), u16, Key<'k>, Option<StackId>);
        let mut by_key: HashMap<SampleKey, u64, FastHash> = HashMap::default();
        let mut resolver = StackResolver::new(symbolizer);
        let mut total_samples = 0;
        for (s, n) in samples {
            total_samples += n;
            let p = resolver.parts(s);
            let key = (p.leaf.where_name(), p.leaf.symbol.unwrap_or(UNKNOWN));
            let stack = match &p.callers {
                Callers::Shared(id) => Some(*id),
                Callers::Own(callers) => {
                    count_inclusive(&mut inclusive, &mut on_stack, key, callers, n);
                    None
                }
            };
            *by_key
                .entry(((p.comm, p.pid), s.hart, key, stack))
                .or_default() += n;
        }
        for ((task, hart, key, stack), n) in by_key {
            if let Some(id) = stack {
                count_inclusive(&mut inclusive, &mut on_stack, key, resolver.stack(id), n);
            }
            let t = tasks.entry(task).or_default();
            *t.0.entry(hart).or_default() += n;
            *t.1.entry((key.1, key.0)).or_default() += n;
            *harts.entry(hart).or_default().entry(task).or_default() += n;
            *counts.entry(key).or_default() += n;
        }
        fn owned<V>(m: HashMap<(&str, &str), V, FastHash>) -> BTreeMap<(String, String), V> {
            m.into_iter()
                .map(|((a, b), v)| ((a.to_string(), b.to_string()), v))
                .collect()
        }
        let counts = owned(counts);
        let inclusive = owned(inclusive);
        type OwnedTaskAcc = (BTreeMap<u16, u64>, BTreeMap<(String, String), u64>);
        let tasks: BTreeMap<(String, u32), OwnedTaskAcc> = tasks
            .into_iter()
            .map(|((comm, pid), (h, syms))| ((comm.to_string(), pid), (h, owned(syms))))
            .collect();
        let harts: BTreeMap<u16, BTreeMap<(String, u32), u64>> = harts
            .into_iter()
            .map(|(hart, t)| {
                let t = t
                    .into_iter()
                    .map(|((c, p), n)| ((c.to_string(), p), n))
                    .collect();
                (hart, t)
            })
            .collect();
        let mut tasks: Vec<TaskRow> = tasks
            .into_iter()
            .map(|((comm, pid), (harts, syms))| TaskRow {
                comm,
                pid,
                samples: harts.values().sum(),
                harts,
                symbols: most_first(syms)
                    .into_iter()
                    .map(|((sym, place), n)| (sym, place, n))
                    .collect(),
            })
            .collect();
        tasks.sort_by(|a, b| {
            b.samples
                .cmp(&a.samples)
                .then_with(|| (&a.comm, a.pid).cmp(&(&b.comm, b.pid)))
        });
        let harts = harts
            .into_iter()
            .map(|(hart, t)| HartRow {
                hart,
                samples: t.values().sum(),
                tasks: most_first(t)
                    .into_iter()
                    .map(|((comm, pid), n)| (comm, pid, n))
                    .collect(),
            })
            .collect();
        let mut rows: Vec<HotRow> = counts
            .into_iter()
            .map(|((place, symbol), samples)| HotRow {
                symbol,
                place,
                samples,
            })
            .collect();
        rows.sort_by(|a, b| {
            b.samples
                .cmp(&a.samples)
                .then_with(|| a.place.cmp(&b.place))
                .then_with(|| a.symbol.cmp(&b.symbol))
        });
        let mut children: Vec<ChildrenRow> = inclusive
            .into_iter()
            .map(|((place, symbol), (total, self_samples))| ChildrenRow {
                symbol,
                place,
                total,
                self_samples,
            })
            .collect();
        children.sort_by(|a, b| {
            b.total
                .cmp(&a.total)
                .then_with(|| b.self_samples.cmp(&a.self_samples))
                .then_with(|| a.place.cmp(&b.place))
                .then_with(|| a.symbol.cmp(&b.symbol))
        });
        HotFunctions {
            total_samples,
            period,
            rows,
            tasks,
            harts,
            children,
        }
    }

    /// Samples of `symbol` (in any place), e.g. to compare `n_tty_write`
    /// across variants even when it is not in the top rows.
    pub fn samples_of(&self, symbol: &str) -> u64 {
        self.rows
            .iter()
            .filter(|r| r.symbol == symbol)
            .map(|r| r.samples)
            .sum()
    }

    /// Samples of `symbol` in one place (`kernel`, `busybox`, ...).
    pub fn samples_in(&self, symbol: &str, place: &str) -> u64 {
        self.rows
            .iter()
            .filter(|r| r.symbol == symbol && r.place == place)
            .map(|r| r.samples)
            .sum()
    }

    /// Samples per place (`kernel`, `firmware`, each user binary), most first.
    pub fn places(&self) -> Vec<(String, u64)> {
        let mut by: BTreeMap<&str, u64> = BTreeMap::new();
        for r in &self.rows {
            *by.entry(&r.place).or_default() += r.samples;
        }
        let mut v: Vec<(String, u64)> = by.into_iter().map(|(p, n)| (p.to_string(), n)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v
    }

    /// Markdown: a summary of samples per place, then one table per place
    /// (its `top` rows, shares of all samples and of the place's samples).
    pub fn to_markdown_by_place(&self, title: &str, top: usize) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "**{}** — {} samples, one every {} cycles\n",
            md_cell(title),
            thousands(self.total_samples),
            thousands(self.period)
        );
        let places = self.places();
        out.push_str(
            "`where` is the code the sampled instruction belongs to: kernel code run for a \
             program counts as `kernel`. (The flame graph's roots are the task that was running, \
             so a program's task there includes the kernel time it caused.)\n\n",
        );
        out.push_str("| where | samples | share |\n|:--|--:|--:|\n");
        for (place, n) in &places {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                md_cell(place),
                thousands(*n),
                percent(*n, self.total_samples)
            );
        }
        for (place, n) in &places {
            let _ = writeln!(
                out,
                "\n### {} — {} samples\n",
                md_cell(place),
                thousands(*n)
            );
            out.push_str(
                "| # | symbol | samples | share | share of place |\n|--:|:--|--:|--:|--:|\n",
            );
            let rows: Vec<&HotRow> = self.rows.iter().filter(|r| &r.place == place).collect();
            for (i, r) in rows.iter().take(top).enumerate() {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} |",
                    i + 1,
                    md_cell(&r.symbol),
                    thousands(r.samples),
                    percent(r.samples, self.total_samples),
                    percent(r.samples, *n)
                );
            }
            if rows.len() > top {
                let rest: u64 = rows[top..].iter().map(|r| r.samples).sum();
                let _ = writeln!(
                    out,
                    "| {} | ({} more symbols) | {} | {} | {} |",
                    top + 1,
                    rows.len() - top,
                    thousands(rest),
                    percent(rest, self.total_samples),
                    percent(rest, *n)
                );
            }
        }
        out
    }

    /// Markdown: `perf report --children` — each symbol's share of samples
    /// with it anywhere on the stack (children) and as the leaf (self).
    pub fn to_markdown_children(&self, top: usize) -> String {
        let mut out = String::from(
            "### Caller and callee (as `perf report --children`)\n\n\
             Children: samples with the symbol anywhere on the sampled stack (it or a \
             function it called was running); self: samples in the symbol itself. \
             Stacks come from frame pointers, so a function that keeps none is seen \
             only as a leaf.\n\n\
             | # | symbol | where | children | self |\n|--:|:--|:--|--:|--:|\n",
        );
        for (i, r) in self.children.iter().take(top).enumerate() {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                i + 1,
                md_cell(&r.symbol),
                md_cell(&r.place),
                percent(r.total, self.total_samples),
                percent(r.self_samples, self.total_samples)
            );
        }
        if self.children.len() > top {
            let _ = writeln!(
                out,
                "| | ({} more symbols) | | | |",
                self.children.len() - top
            );
        }
        out
    }

    /// Samples of the task with this `comm` (all its pids).
    pub fn samples_of_comm(&self, comm: &str) -> u64 {
        self.tasks
            .iter()
            .filter(|t| t.comm == comm)
            .map(|t| t.samples)
            .sum()
    }

    /// Markdown: samples per task (its `top` tasks, each with the harts it
    /// ran on and its hottest symbols), then per hart (with its tasks).
    pub fn to_markdown_by_task_and_hart(&self, top: usize) -> String {
        const SYMBOLS: usize = 3;
        let mut out = String::from("### By task\n\n| # | task | pid | samples | share | harts | hottest symbols |\n|--:|:--|--:|--:|--:|:--|:--|\n");
        for (i, t) in self.tasks.iter().take(top).enumerate() {
            let harts: Vec<String> = t
                .harts
                .iter()
                .map(|(h, n)| format!("{h}: {}", thousands(*n)))
                .collect();
            let syms: Vec<String> = t
                .symbols
                .iter()
                .take(SYMBOLS)
                .map(|(sym, place, n)| format!("{} ({place}) {}", sym, percent(*n, t.samples)))
                .collect();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                i + 1,
                md_cell(&t.comm),
                t.pid,
                thousands(t.samples),
                percent(t.samples, self.total_samples),
                md_cell(&harts.join(", ")),
                md_cell(&syms.join(", "))
            );
        }
        if self.tasks.len() > top {
            let rest: u64 = self.tasks[top..].iter().map(|t| t.samples).sum();
            let _ = writeln!(
                out,
                "| {} | ({} more tasks) | | {} | {} | | |",
                top + 1,
                self.tasks.len() - top,
                thousands(rest),
                percent(rest, self.total_samples)
            );
        }
        out.push_str("\n### By hart\n\n| hart | samples | share | tasks |\n|--:|--:|--:|:--|\n");
        for h in &self.harts {
            let tasks: Vec<String> = h
                .tasks
                .iter()
                .take(SYMBOLS + 2)
                .map(|(comm, pid, n)| format!("{comm}-{pid} {}", percent(*n, h.samples)))
                .collect();
            let more = if h.tasks.len() > SYMBOLS + 2 {
                format!(", {} more", h.tasks.len() - SYMBOLS - 2)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {}{more} |",
                h.hart,
                thousands(h.samples),
                percent(h.samples, self.total_samples),
                md_cell(&tasks.join(", "))
            );
        }
        out
    }

    /// Markdown: the `top` rows, then `(remaining)` for all the others.
    pub fn to_markdown(&self, title: &str, top: usize) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "**{}** — {} samples, one every {} cycles\n",
            md_cell(title),
            thousands(self.total_samples),
            thousands(self.period)
        );
        out.push_str("| # | symbol | where | samples | share |\n|--:|:--|:--|--:|--:|\n");
        for (i, r) in self.rows.iter().take(top).enumerate() {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                i + 1,
                md_cell(&r.symbol),
                md_cell(&r.place),
                thousands(r.samples),
                percent(r.samples, self.total_samples)
            );
        }
        if self.rows.len() > top {
            let rest: u64 = self.rows[top..].iter().map(|r| r.samples).sum();
            let _ = writeln!(
                out,
                "| {} | (remaining) | remaining | {} | {} |",
                top + 1,
                thousands(rest),
                percent(rest, self.total_samples)
            );
        }
        out
    }
}

/// Add `n` samples with leaf `leaf` and these callers to the inclusive
/// counts `(total, self)`: a symbol counts once per sample however often
/// it is on the stack (recursion), as perf counts it.
fn count_inclusive<'k>(
    inclusive: &mut HashMap<(&'k str, &'k str), (u64, u64), FastHash>,
    on_stack: &mut Vec<(&'k str, &'k str)>,
    leaf: (&'k str, &'k str),
    callers: &[Frame<'k>],
    n: u64,
) {
    on_stack.clear();
    on_stack.push(leaf);
    // (a key whose bit is not in `seen` cannot be on the stack yet: most
    // frames skip the string compares)
    let mut seen = key_bit(&leaf);
    for f in callers {
        let k = (f.where_name(), f.symbol.unwrap_or(UNKNOWN));
        let bit = key_bit(&k);
        if seen & bit == 0 || !on_stack.contains(&k) {
            on_stack.push(k);
            seen |= bit;
        }
    }
    for (i, k) in on_stack.iter().enumerate() {
        let e = inclusive.entry(*k).or_default();
        e.0 += n;
        if i == 0 {
            e.1 += n;
        }
    }
}

/// One of 64 bits from a key's text (equal keys, equal bits).
fn key_bit((place, symbol): &(&str, &str)) -> u64 {
    let b = symbol.as_bytes();
    let h = b.len()
        ^ place.len() << 3
        ^ (*b.first().unwrap_or(&0) as usize) << 1
        ^ (*b.last().unwrap_or(&0) as usize) << 2
        ^ (*b.get(b.len() / 2).unwrap_or(&0) as usize);
    1 << (h.wrapping_mul(0x9e37_79b9) >> 7 & 63)
}
