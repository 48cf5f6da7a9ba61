//! The `hart` target with structured inputs (moved here from hs-core's
//! proptest so one harness drives both): mostly well-formed major opcodes
//! with random fields, page-table entries that point into RAM, and random
//! CSR and register values. Every case must keep the target's invariants.

use proptest::prelude::*;

const BASE: u64 = 0x8000_0000;
const RAM_PAGES: u64 = 16;

fn insn_word() -> impl Strategy<Value = u32> {
    const OPCODES: &[u32] = &[
        0x03, 0x07, 0x0f, 0x13, 0x17, 0x1b, 0x23, 0x27, 0x2f, 0x33, 0x37, 0x3b, 0x43, 0x47, 0x4b,
        0x4f, 0x53, 0x63, 0x67, 0x6f, 0x73,
    ];
    prop_oneof![
        3 => (any::<u32>(), prop::sample::select(OPCODES)).prop_map(|(w, op)| (w & !0x7f) | op),
        1 => any::<u32>(),
        1 => any::<u32>().prop_map(|w| w & !3 | (w >> 30)), // two compressed halves (mostly)
    ]
}

/// A PTE that points inside RAM (valid-ish, sometimes a superpage) or random bits.
fn pte() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => (0..RAM_PAGES, any::<u8>(), any::<bool>()).prop_map(|(page, flags, big)| {
            let ppn = (BASE >> 12) + page + if big { 1 << 9 } else { 0 };
            ppn << 10 | flags as u64
        }),
        1 => any::<u64>(),
    ]
}

/// The target's input layout: 2 + 8 × 30 header bytes, 4 KiB of tables, then code.
fn input() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(any::<u8>(), 2 + 8 * 30),
        prop::collection::vec(pte(), 512),
        prop::collection::vec(insn_word(), 960),
    )
        .prop_map(|(header, ptes, code)| {
            let mut data = header;
            data.extend(ptes.iter().flat_map(|p| p.to_le_bytes()));
            data.extend(code.iter().flat_map(|w| w.to_le_bytes()));
            data
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn random_programs_never_break_the_host(data in input()) {
        hs_fuzzing::hart::run(&data);
    }
}

/// The `hart` target compares the block engine with the reference engine
/// on each input whose code leaves its own code pages alone: most of them,
/// so the comparison is not skipped into meaninglessness.
#[test]
fn most_programs_are_compared_on_both_engines() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let total = 300;
    let compared = (0..total)
        .filter(|_| {
            hs_fuzzing::hart::differential(&input().new_tree(&mut runner).unwrap().current())
        })
        .count();
    eprintln!("{compared} of {total} programs compared on both engines");
    assert!(
        compared * 2 >= total,
        "only {compared} of {total} programs compared"
    );
}
