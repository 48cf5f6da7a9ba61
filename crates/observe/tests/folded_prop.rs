//! Properties of the sample exporters over random samples.

mod common;

use hs_observe::export::{flamegraph_svg, fold, FlamegraphOptions, FoldOptions, HotFunctions};
use hs_observe::{Privilege, Sample};
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
