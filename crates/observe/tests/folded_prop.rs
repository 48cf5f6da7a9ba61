//! Properties of the sample exporters over random samples.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use hs_observe::export::{
    flamegraph_svg, fold, fold_weighted, perf_script, FlamegraphOptions, FoldOptions, HotFunctions,
};
use hs_observe::symbols::UNKNOWN;
use hs_observe::{coalesce, Privilege, Sample, Task};
use proptest::prelude::*;

fn any_privilege() -> impl Strategy<Value = Privilege> {
    prop_oneof![
        Just(Privilege::User),
        Just(Privilege::Supervisor),
        Just(Privilege::Machine)
    ]
}

/// Addresses from every region the fixture knows, plus arbitrary ones.
fn any_addr() -> impl Strategy<Value = u64> {
    prop_oneof![
        0x10000u64..0x10600,
        0xffffffff80000f00u64..0xffffffff80001500,
        0x80000000u64..0x80000300,
        any::<u64>(),
    ]
}

fn any_sample() -> impl Strategy<Value = Sample> {
    (
        0u16..4,
        any::<u64>(),
        any_addr(),
        any_privilege(),
        prop_oneof![Just(common::SATP_SH), any::<u64>()],
        proptest::collection::vec(any_addr(), 0..6),
    )
        .prop_map(|(hart, cycle, pc, privilege, satp, stack)| Sample {
            hart,
            cycle,
            pc,
            privilege,
            satp,
            stack: stack.into(),
            task: None,
        })
}

proptest! {
    #[test]
    fn folded_counts_sum_to_the_number_of_samples(
        samples in proptest::collection::vec(any_sample(), 0..60),
        include_comm in any::<bool>(),
        annotate_kernel in any::<bool>(),
    ) {
        let sym = common::symbolizer();
        let folded = fold(&samples, &sym, FoldOptions { include_comm, annotate_kernel });
        prop_assert_eq!(folded.iter().map(|(_, c)| c).sum::<u64>(), samples.len() as u64);
        // Sorted, unique stacks, each on one line.
        prop_assert!(folded.windows(2).all(|w| w[0].0 < w[1].0));
        prop_assert!(folded.iter().all(|(stack, _)| !stack.contains('\n')));
        let hot = HotFunctions::compute(&samples, &sym, 1024);
        prop_assert_eq!(hot.rows.iter().map(|r| r.samples).sum::<u64>(), samples.len() as u64);
        // The flamegraph's root accounts for every sample.
        let svg = flamegraph_svg(&folded, &FlamegraphOptions::default());
        if !samples.is_empty() {
            let n = samples.len();
            let unit = if n == 1 { "sample" } else { "samples" };
            let expected = format!("<title>all ({n} {unit}, 100.00%)</title>");
            prop_assert!(svg.contains(&expected));
        }
    }
}

/// Samples whose stacks come from a small pool, so that many repeat: some
/// as the same allocation (as the sampler keeps them), some as equal
/// copies (as samples read back from a file are).
fn samples_sharing_stacks() -> impl Strategy<Value = Vec<Sample>> {
    (
        proptest::collection::vec(proptest::collection::vec(any_addr(), 0..6), 1..4),
        proptest::collection::vec((any_sample(), 0usize..4, any::<bool>()), 0..40),
    )
        .prop_map(|(pool, picks)| {
            let pool: Vec<Arc<[u64]>> = pool.into_iter().map(Into::into).collect();
            picks
                .into_iter()
                .map(|(s, i, same_allocation)| {
                    let stack = &pool[i % pool.len()];
                    Sample {
                        stack: if same_allocation {
                            stack.clone()
                        } else {
                            stack.to_vec().into()
                        },
                        ..s
                    }
                })
                .collect()
        })
}

proptest! {
    // The reports name each distinct stack once; what they say must be
    // what naming every sample on its own says.
    #[test]
    fn reports_of_many_samples_are_those_of_each_sample_alone(
        samples in samples_sharing_stacks(),
    ) {
        let sym = common::symbolizer();
        let opts = FoldOptions { include_comm: true, annotate_kernel: true };
        // perf script: the text of each sample alone, in order.
        let alone: String = samples
            .iter()
            .map(|s| perf_script(std::slice::from_ref(s), &sym, 1_000_000_000, 1024).unwrap())
            .collect();
        prop_assert_eq!(perf_script(&samples, &sym, 1_000_000_000, 1024).unwrap(), alone);
        // folded stacks: the sum of each sample's own.
        let mut alone: BTreeMap<String, u64> = BTreeMap::new();
        for s in &samples {
            for (stack, n) in fold(std::slice::from_ref(s), &sym, opts) {
                *alone.entry(stack).or_default() += n;
            }
        }
        let together: BTreeMap<String, u64> = fold(&samples, &sym, opts).into_iter().collect();
        prop_assert_eq!(together, alone);
        // perf report --children: each symbol once per sample it is on.
        let mut children: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
        for s in &samples {
            let r = sym.resolve_sample(s);
            let mut seen = Vec::new();
            for f in &r.frames {
                let k = (f.symbol.unwrap_or(UNKNOWN).to_string(), f.where_name().to_string());
                if !seen.contains(&k) {
                    seen.push(k);
                }
            }
            for (i, k) in seen.into_iter().enumerate() {
                let e = children.entry(k).or_default();
                e.0 += 1;
                e.1 += u64::from(i == 0);
            }
        }
        let hot = HotFunctions::compute(&samples, &sym, 1024);
        let got: BTreeMap<(String, String), (u64, u64)> = hot
            .children
            .iter()
            .map(|c| ((c.symbol.clone(), c.place.clone()), (c.total, c.self_samples)))
            .collect();
        prop_assert_eq!(got, children);
        // ... and per leaf symbol, task (with its harts) and hart.
        let mut rows: BTreeMap<(String, String), u64> = BTreeMap::new();
        let mut tasks: BTreeMap<(String, u32), BTreeMap<u16, u64>> = BTreeMap::new();
        let mut harts: BTreeMap<u16, u64> = BTreeMap::new();
        for s in &samples {
            let r = sym.resolve_sample(s);
            let leaf = &r.frames[0];
            let k = (leaf.symbol.unwrap_or(UNKNOWN).to_string(), leaf.where_name().to_string());
            *rows.entry(k).or_default() += 1;
            *tasks.entry((r.comm.to_string(), r.pid)).or_default().entry(s.hart).or_default() += 1;
            *harts.entry(s.hart).or_default() += 1;
        }
        let got: BTreeMap<(String, String), u64> = hot
            .rows
            .iter()
            .map(|r| ((r.symbol.clone(), r.place.clone()), r.samples))
            .collect();
        prop_assert_eq!(got, rows);
        let got: BTreeMap<(String, u32), BTreeMap<u16, u64>> = hot
            .tasks
            .iter()
            .map(|t| ((t.comm.clone(), t.pid), t.harts.clone()))
            .collect();
        prop_assert_eq!(got, tasks);
        let got: BTreeMap<u16, u64> = hot.harts.iter().map(|h| (h.hart, h.samples)).collect();
        prop_assert_eq!(got, harts);
    }
}

/// Samples drawn from small pools of pcs, stacks and tasks, so that many
/// are alike, with stacks and task names sometimes shared, sometimes equal
/// copies, and some samples with no task.
fn samples_alike() -> impl Strategy<Value = Vec<Sample>> {
    (
        proptest::collection::vec(any_addr(), 1..4),
        proptest::collection::vec(proptest::collection::vec(any_addr(), 0..4), 1..3),
        proptest::collection::vec(
            (
                any_sample(),
                0usize..4,
                0usize..3,
                0usize..4,
                any::<bool>(),
                any::<bool>(),
            ),
            0..60,
        ),
    )
        .prop_map(|(pcs, stacks, picks)| {
            let stacks: Vec<Arc<[u64]>> = stacks.into_iter().map(Into::into).collect();
            let comms: [Arc<str>; 2] = ["sh".into(), "kworker/0:1".into()];
            picks
                .into_iter()
                .map(|(s, pc, stack, task, shared_stack, shared_comm)| {
                    let stack = &stacks[stack % stacks.len()];
                    let comm = &comms[task % 2];
                    Sample {
                        pc: pcs[pc % pcs.len()],
                        stack: if shared_stack {
                            stack.clone()
                        } else {
                            stack.to_vec().into()
                        },
                        // (task 3: none read; 0-2: two names, three ids)
                        task: (task < 3).then(|| Task {
                            pid: task as u32 + 1,
                            tid: task as u32 + 1,
                            comm: if shared_comm {
                                comm.clone()
                            } else {
                                comm.to_string().into()
                            },
                        }),
                        ..s
                    }
                })
                .collect()
        })
}

proptest! {
    // The summaries name each group of alike samples once, with its count:
    // what they say must be what naming every sample says.
    #[test]
    fn reports_of_coalesced_samples_are_those_of_every_sample(samples in samples_alike()) {
        let sym = common::symbolizer();
        let alike = coalesce(&samples);
        prop_assert_eq!(alike.iter().map(|(_, n)| n).sum::<u64>(), samples.len() as u64);
        for opts in [
            FoldOptions { include_comm: true, annotate_kernel: true },
            FoldOptions { include_comm: false, annotate_kernel: false },
        ] {
            prop_assert_eq!(
                fold_weighted(alike.iter().copied(), &sym, opts),
                fold(&samples, &sym, opts)
            );
        }
        prop_assert_eq!(
            HotFunctions::compute_weighted(alike.iter().copied(), &sym, 1024),
            HotFunctions::compute(&samples, &sym, 1024)
        );
    }
}
