//! The hot-functions table: which symbols the samples landed in.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::text::{md_cell, percent, thousands};
use crate::sample::Sample;
use crate::symbols::{Symbolizer, UserResolver, UNKNOWN};

/// One row: a symbol and where it lives (`kernel`, `firmware` or a binary).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HotRow {
    pub symbol: String,
    pub place: String,
    pub samples: u64,
}

/// Samples per leaf symbol, most sampled first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HotFunctions {
    pub total_samples: u64,
    /// Cycles between samples, for the caption.
    pub period: u64,
    /// Every symbol with at least one sample; ties broken by place, then name.
    pub rows: Vec<HotRow>,
}

impl HotFunctions {
    pub fn compute<R: UserResolver>(samples: &[Sample], symbolizer: &Symbolizer<R>, period: u64) -> HotFunctions {
        let mut counts: BTreeMap<(String, String), u64> = BTreeMap::new();
        for s in samples {
            let r = symbolizer.resolve_sample(s);
            let leaf = &r.frames[0];
            let key = (leaf.where_name().to_string(), leaf.symbol.unwrap_or(UNKNOWN).to_string());
            *counts.entry(key).or_default() += 1;
        }
        let mut rows: Vec<HotRow> =
            counts.into_iter().map(|((place, symbol), samples)| HotRow { symbol, place, samples }).collect();
        rows.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.place.cmp(&b.place)).then_with(|| a.symbol.cmp(&b.symbol)));
        HotFunctions { total_samples: samples.len() as u64, period, rows }
    }

    /// Samples of `symbol` (in any place), e.g. to compare `n_tty_write`
    /// across variants even when it is not in the top rows.
    pub fn samples_of(&self, symbol: &str) -> u64 {
        self.rows.iter().filter(|r| r.symbol == symbol).map(|r| r.samples).sum()
    }

    /// Samples of `symbol` in one place (`kernel`, `busybox`, ...).
    pub fn samples_in(&self, symbol: &str, place: &str) -> u64 {
        self.rows.iter().filter(|r| r.symbol == symbol && r.place == place).map(|r| r.samples).sum()
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
        out.push_str("| where | samples | share |\n|:--|--:|--:|\n");
        for (place, n) in &places {
            let _ = writeln!(out, "| {} | {} | {} |", md_cell(place), thousands(*n), percent(*n, self.total_samples));
        }
        for (place, n) in &places {
            let _ = writeln!(out, "\n### {} — {} samples\n", md_cell(place), thousands(*n));
            out.push_str("| # | symbol | samples | share | share of place |\n|--:|:--|--:|--:|--:|\n");
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
