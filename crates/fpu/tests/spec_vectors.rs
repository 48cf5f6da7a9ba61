//! Hand-picked vectors, each following one rule of the RISC-V F/D chapters
//! or IEEE 754 as RISC-V applies it.

use hs_fpu::*;

const ALL: Flags = 0;

// single-precision encodings
const S_ONE: u32 = 0x3f80_0000;
const S_TWO: u32 = 0x4000_0000;
const S_MAX: u32 = 0x7f7f_ffff;
const S_INF: u32 = 0x7f80_0000;
const S_NINF: u32 = 0xff80_0000;
const S_QNAN_PAYLOAD: u32 = 0x7fc1_2345;
const S_NEG_QNAN: u32 = 0xffc0_0000;
const S_SNAN: u32 = 0x7f80_0001;
const S_NEG_SNAN: u32 = 0xffa0_0000;
const S_PZERO: u32 = 0x0000_0000;
const S_NZERO: u32 = 0x8000_0000;
const S_MIN_NORMAL: u32 = 0x0080_0000;
const S_MIN_SUB: u32 = 0x0000_0001;

// double-precision encodings
const D_ONE: u64 = 0x3ff0_0000_0000_0000;
const D_MAX: u64 = 0x7fef_ffff_ffff_ffff;
const D_INF: u64 = 0x7ff0_0000_0000_0000;
const D_NINF: u64 = 0xfff0_0000_0000_0000;
const D_QNAN_PAYLOAD: u64 = 0x7ff8_0000_dead_beef;
const D_SNAN: u64 = 0x7ff0_0000_0000_0001;
const D_PZERO: u64 = 0;
const D_NZERO: u64 = 0x8000_0000_0000_0000;
const D_MIN_NORMAL: u64 = 0x0010_0000_0000_0000;

const CNAN_S: u32 = CANONICAL_NAN_S;
const CNAN_D: u64 = CANONICAL_NAN_D;

#[test]
fn nan_results_are_canonical_and_only_snan_signals() {
    assert_eq!(add_s(S_QNAN_PAYLOAD, S_ONE, RNE), (CNAN_S, ALL));
    assert_eq!(add_s(S_NEG_QNAN, S_ONE, RNE), (CNAN_S, ALL));
    assert_eq!(add_s(S_ONE, S_SNAN, RNE), (CNAN_S, NV));
    assert_eq!(sub_s(S_NEG_SNAN, S_QNAN_PAYLOAD, RNE), (CNAN_S, NV));
    assert_eq!(mul_s(S_QNAN_PAYLOAD, S_PZERO, RNE), (CNAN_S, ALL));
    assert_eq!(div_s(S_SNAN, S_ONE, RNE), (CNAN_S, NV));
    assert_eq!(sqrt_s(S_QNAN_PAYLOAD, RNE), (CNAN_S, ALL));
    assert_eq!(sqrt_s(S_SNAN, RNE), (CNAN_S, NV));
    assert_eq!(fmadd_s(S_ONE, S_ONE, S_QNAN_PAYLOAD, RNE), (CNAN_S, ALL));
    assert_eq!(add_d(D_QNAN_PAYLOAD, D_ONE, RNE), (CNAN_D, ALL));
    assert_eq!(mul_d(D_SNAN, D_ONE, RNE), (CNAN_D, NV));
    assert_eq!(fnmadd_d(D_ONE, D_QNAN_PAYLOAD, D_ONE, RNE), (CNAN_D, ALL));
    // invalid operations produce the canonical NaN too
    assert_eq!(add_s(S_INF, S_NINF, RNE), (CNAN_S, NV));
    assert_eq!(sub_d(D_INF, D_INF, RNE), (CNAN_D, NV));
    assert_eq!(mul_s(S_INF, S_PZERO, RNE), (CNAN_S, NV));
    assert_eq!(div_d(D_INF, D_NINF, RNE), (CNAN_D, NV));
    // conversions between formats do not keep payloads
    assert_eq!(cvt_s_d(D_QNAN_PAYLOAD, RNE), (CNAN_S, ALL));
    assert_eq!(cvt_s_d(D_SNAN, RNE), (CNAN_S, NV));
    assert_eq!(cvt_d_s(S_QNAN_PAYLOAD, RNE), (CNAN_D, ALL));
    assert_eq!(cvt_d_s(S_SNAN, RNE), (CNAN_D, NV));
}

#[test]
fn min_max_follow_minimum_number_semantics() {
    // one NaN operand: the other operand, NV only for a signaling NaN
    assert_eq!(min_s(S_QNAN_PAYLOAD, S_ONE), (S_ONE, ALL));
    assert_eq!(max_s(S_ONE, S_QNAN_PAYLOAD), (S_ONE, ALL));
    assert_eq!(min_s(S_SNAN, S_ONE), (S_ONE, NV));
    assert_eq!(max_s(S_TWO, S_NEG_SNAN), (S_TWO, NV));
    assert_eq!(min_d(D_ONE, D_SNAN), (D_ONE, NV));
    assert_eq!(max_d(D_QNAN_PAYLOAD, D_NINF), (D_NINF, ALL));
    // two NaNs: canonical NaN
    assert_eq!(min_s(S_QNAN_PAYLOAD, S_NEG_QNAN), (CNAN_S, ALL));
    assert_eq!(max_s(S_SNAN, S_QNAN_PAYLOAD), (CNAN_S, NV));
    assert_eq!(min_d(D_QNAN_PAYLOAD, D_QNAN_PAYLOAD), (CNAN_D, ALL));
    // -0 is less than +0, in either operand order
    assert_eq!(min_s(S_PZERO, S_NZERO), (S_NZERO, ALL));
    assert_eq!(min_s(S_NZERO, S_PZERO), (S_NZERO, ALL));
    assert_eq!(max_s(S_NZERO, S_PZERO), (S_PZERO, ALL));
    assert_eq!(max_s(S_PZERO, S_NZERO), (S_PZERO, ALL));
    assert_eq!(min_d(D_PZERO, D_NZERO), (D_NZERO, ALL));
    assert_eq!(max_d(D_NZERO, D_PZERO), (D_PZERO, ALL));
    // ordinary ordering, including infinities and negatives
    assert_eq!(min_s(S_NINF, S_MAX), (S_NINF, ALL));
    assert_eq!(max_s(S_INF, S_MAX), (S_INF, ALL));
    assert_eq!(min_s(0xc000_0000, 0xbf80_0000), (0xc000_0000, ALL)); // -2 < -1
    assert_eq!(max_d(0xc000_0000_0000_0000, D_ONE), (D_ONE, ALL));
}

#[test]
fn compare_signaling_rules() {
    // feq is quiet: NV only for signaling NaN
    assert_eq!(eq_s(S_QNAN_PAYLOAD, S_ONE), (false, ALL));
    assert_eq!(eq_s(S_SNAN, S_ONE), (false, NV));
    assert_eq!(eq_s(S_QNAN_PAYLOAD, S_QNAN_PAYLOAD), (false, ALL));
    assert_eq!(eq_d(D_SNAN, D_SNAN), (false, NV));
    // flt/fle signal on any NaN
    assert_eq!(lt_s(S_QNAN_PAYLOAD, S_ONE), (false, NV));
    assert_eq!(le_s(S_ONE, S_QNAN_PAYLOAD), (false, NV));
    assert_eq!(lt_d(D_ONE, D_SNAN), (false, NV));
    assert_eq!(le_d(D_QNAN_PAYLOAD, D_ONE), (false, NV));
    // -0 == +0
    assert_eq!(eq_s(S_NZERO, S_PZERO), (true, ALL));
    assert_eq!(lt_s(S_NZERO, S_PZERO), (false, ALL));
    assert_eq!(le_s(S_PZERO, S_NZERO), (true, ALL));
    assert_eq!(eq_d(D_NZERO, D_PZERO), (true, ALL));
    assert_eq!(lt_d(D_NZERO, D_PZERO), (false, ALL));
    // ordinary
    assert_eq!(lt_s(S_NINF, S_INF), (true, ALL));
    assert_eq!(lt_s(0xbf80_0000, 0xc000_0000), (false, ALL)); // -1 < -2 is false
    assert_eq!(le_d(D_ONE, D_ONE), (true, ALL));
    assert_eq!(lt_d(D_ONE, D_ONE), (false, ALL));
    assert_eq!(eq_s(S_MIN_SUB, S_PZERO), (false, ALL));
}

#[test]
fn classify_every_class() {
    let s = [
        (S_NINF, 1 << 0),
        (0xbf80_0000, 1 << 1),
        (0x8000_0001, 1 << 2),
        (S_NZERO, 1 << 3),
        (S_PZERO, 1 << 4),
        (S_MIN_SUB, 1 << 5),
        (S_MIN_NORMAL, 1 << 6),
        (S_INF, 1 << 7),
        (S_SNAN, 1 << 8),
        (S_NEG_SNAN, 1 << 8),
        (S_QNAN_PAYLOAD, 1 << 9),
        (S_NEG_QNAN, 1 << 9),
    ];
    for (x, mask) in s {
        assert_eq!(classify_s(x), mask, "fclass.s {x:#x}");
    }
    let d = [
        (D_NINF, 1 << 0),
        (0xbff0_0000_0000_0000, 1 << 1),
        (0x800f_ffff_ffff_ffff, 1 << 2),
        (D_NZERO, 1 << 3),
        (D_PZERO, 1 << 4),
        (0x0000_0000_0000_0001, 1 << 5),
        (D_MAX, 1 << 6),
        (D_INF, 1 << 7),
        (D_SNAN, 1 << 8),
        (D_QNAN_PAYLOAD, 1 << 9),
    ];
    for (x, mask) in d {
        assert_eq!(classify_d(x), mask, "fclass.d {x:#x}");
    }
}

/// The fcvt saturation table of the F chapter, every destination, both precisions.
#[test]
fn convert_saturation_table() {
    const I32_MAX: u64 = 0x7fff_ffff;
    const I32_MIN: u64 = 0xffff_ffff_8000_0000; // sign-extended
    const U32_MAX: u64 = u64::MAX; // 0xffff_ffff sign-extended
    const I64_MAX: u64 = i64::MAX as u64;
    const I64_MIN: u64 = i64::MIN as u64;
    let s_big = 0x5f80_0000; // 2^64
    let s_nbig = 0xdf80_0000; // -2^64
    type Cvt = fn(u32, u8) -> (u64, Flags);
    let single: [(&str, Cvt, [u64; 5]); 4] = [
        // results for: NaN, +inf, -inf, +2^64, -2^64
        ("w", cvt_w_s, [I32_MAX, I32_MAX, I32_MIN, I32_MAX, I32_MIN]),
        ("wu", cvt_wu_s, [U32_MAX, U32_MAX, 0, U32_MAX, 0]),
        ("l", cvt_l_s, [I64_MAX, I64_MAX, I64_MIN, I64_MAX, I64_MIN]),
        ("lu", cvt_lu_s, [u64::MAX, u64::MAX, 0, u64::MAX, 0]),
    ];
    for (name, f, want) in single {
        for (input, w) in [S_QNAN_PAYLOAD, S_INF, S_NINF, s_big, s_nbig]
            .into_iter()
            .zip(want)
        {
            for rm in [RNE, RTZ, RDN, RUP, RMM] {
                assert_eq!(f(input, rm), (w, NV), "fcvt.{name}.s({input:#x}) rm {rm}");
            }
        }
        assert_eq!(f(S_SNAN, RNE), (want[0], NV), "fcvt.{name}.s(sNaN)");
        assert_eq!(
            f(S_NEG_QNAN, RNE),
            (want[0], NV),
            "fcvt.{name}.s(-NaN) saturates positive"
        );
    }
    type CvtD = fn(u64, u8) -> (u64, Flags);
    let d_big = 0x43f0_0000_0000_0000; // 2^64
    let d_nbig = 0xc3f0_0000_0000_0000;
    let double: [(&str, CvtD, [u64; 5]); 4] = [
        ("w", cvt_w_d, [I32_MAX, I32_MAX, I32_MIN, I32_MAX, I32_MIN]),
        ("wu", cvt_wu_d, [U32_MAX, U32_MAX, 0, U32_MAX, 0]),
        ("l", cvt_l_d, [I64_MAX, I64_MAX, I64_MIN, I64_MAX, I64_MIN]),
        ("lu", cvt_lu_d, [u64::MAX, u64::MAX, 0, u64::MAX, 0]),
    ];
    for (name, f, want) in double {
        for (input, w) in [D_QNAN_PAYLOAD, D_INF, D_NINF, d_big, d_nbig]
            .into_iter()
            .zip(want)
        {
            assert_eq!(f(input, RNE), (w, NV), "fcvt.{name}.d({input:#x})");
        }
    }

    // exactly at and just past the edges (doubles hold them exactly)
    let d = |x: f64| x.to_bits();
    assert_eq!(cvt_w_d(d(2147483647.0), RNE), (I32_MAX, ALL));
    assert_eq!(cvt_w_d(d(2147483648.0), RNE), (I32_MAX, NV));
    assert_eq!(cvt_w_d(d(-2147483648.0), RNE), (I32_MIN, ALL));
    assert_eq!(cvt_w_d(d(-2147483649.0), RNE), (I32_MIN, NV));
    assert_eq!(cvt_w_d(d(2147483647.5), RTZ), (I32_MAX, NX)); // rounds into range
    assert_eq!(cvt_w_d(d(2147483647.5), RNE), (I32_MAX, NV)); // rounds out of range
    assert_eq!(cvt_w_d(d(-2147483648.5), RUP), (I32_MIN, NX));
    assert_eq!(cvt_w_d(d(-2147483648.5), RDN), (I32_MIN, NV));
    assert_eq!(cvt_wu_d(d(4294967295.0), RNE), (U32_MAX, ALL));
    assert_eq!(cvt_wu_d(d(4294967296.0), RNE), (U32_MAX, NV));
    assert_eq!(cvt_wu_d(d(3e9), RNE), (0xffff_ffff_b2d0_5e00, ALL)); // sign-extended from bit 31
    assert_eq!(
        cvt_lu_d(d(18446744073709549568.0), RNE),
        (0xffff_ffff_ffff_f800, ALL)
    );
    assert_eq!(cvt_l_d(d(-9223372036854775808.0), RNE), (I64_MIN, ALL));
    assert_eq!(cvt_l_d(d(9223372036854775808.0), RNE), (I64_MAX, NV));
    // negative inputs to unsigned conversions: NV only if the rounded value is nonzero
    assert_eq!(cvt_wu_s(0xbf00_0000, RNE), (0, NX)); // -0.5 rounds to -0
    assert_eq!(cvt_wu_s(0xbf00_0000, RDN), (0, NV)); // -0.5 rounds to -1
    assert_eq!(cvt_lu_d(d(-0.9), RTZ), (0, NX));
    assert_eq!(cvt_lu_d(d(-1.0), RTZ), (0, NV));
    assert_eq!(cvt_wu_s(S_NZERO, RNE), (0, ALL));
    // ordinary values and rounding
    assert_eq!(cvt_w_s(0xc020_0000, RNE), ((-2i64) as u64, NX)); // -2.5 → -2
    assert_eq!(cvt_w_s(0xc020_0000, RMM), ((-3i64) as u64, NX));
    assert_eq!(cvt_w_s(0xc020_0000, RUP), ((-2i64) as u64, NX));
    assert_eq!(cvt_w_s(0xc020_0000, RDN), ((-3i64) as u64, NX));
    assert_eq!(cvt_l_s(0x4040_0000, RTZ), (3, ALL)); // 3.0 exact
    assert_eq!(cvt_w_s(S_MIN_SUB, RUP), (1, NX));
    assert_eq!(cvt_w_s(S_MIN_SUB | 0x8000_0000, RUP), (0, NX));
}

#[test]
fn integer_sources() {
    // W forms read only the low 32 bits of the integer register
    assert_eq!(cvt_s_w(0x1234_5678_0000_0001, RNE), (S_ONE, ALL));
    assert_eq!(cvt_s_w(0x0000_0000_ffff_ffff, RNE), (0xbf80_0000, ALL)); // -1
    assert_eq!(cvt_s_wu(0xffff_ffff_ffff_ffff, RNE), (0x4f80_0000, NX)); // 4294967295 → 2^32
    assert_eq!(cvt_s_wu(0xffff_ffff_ffff_ffff, RTZ), (0x4f7f_ffff, NX));
    assert_eq!(
        cvt_d_w(0xffff_ffff_8000_0000, RNE),
        ((-2147483648.0f64).to_bits(), ALL)
    );
    assert_eq!(
        cvt_d_wu(0xdead_beef_ffff_ffff, RNE),
        (4294967295.0f64.to_bits(), ALL)
    );
    assert_eq!(
        cvt_d_l(i64::MIN as u64, RNE),
        ((-9223372036854775808.0f64).to_bits(), ALL)
    );
    assert_eq!(
        cvt_d_lu(u64::MAX, RNE),
        (18446744073709551616.0f64.to_bits(), NX)
    );
    assert_eq!(
        cvt_d_lu(u64::MAX, RDN),
        (18446744073709549568.0f64.to_bits(), NX)
    );
    assert_eq!(cvt_s_l(0, RDN), (S_PZERO, ALL)); // integer zero is +0 in every mode
                                                 // 2^24 + 1 is a tie between 2^24 and 2^24 + 2 in single precision
    assert_eq!(cvt_s_w(0x0100_0001, RNE), (0x4b80_0000, NX));
    assert_eq!(cvt_s_w(0x0100_0001, RMM), (0x4b80_0001, NX));
    assert_eq!(cvt_s_w(0x0100_0001, RUP), (0x4b80_0001, NX));
    assert_eq!(cvt_s_w((-0x0100_0001i64) as u64, RUP), (0xcb80_0000, NX));
    assert_eq!(cvt_s_w((-0x0100_0001i64) as u64, RDN), (0xcb80_0001, NX));
}

/// 1 + 2^-24 is exactly halfway between 1 and 1 + 2^-23; 1 + 3·2^-24 is
/// halfway with an odd lower neighbour. Negated inputs mirror RDN/RUP.
#[test]
fn every_rounding_mode_on_ties() {
    let half_ulp = 0x3380_0000; // 2^-24
    let one_plus_ulp = 0x3f80_0001;
    let one_plus_2ulp = 0x3f80_0002;
    let cases = [
        (RNE, S_ONE, one_plus_2ulp),
        (RTZ, S_ONE, one_plus_ulp),
        (RDN, S_ONE, one_plus_ulp),
        (RUP, one_plus_ulp, one_plus_2ulp),
        (RMM, one_plus_ulp, one_plus_2ulp),
    ];
    for (rm, even_tie, odd_tie) in cases {
        assert_eq!(
            add_s(S_ONE, half_ulp, rm),
            (even_tie, NX),
            "1 + 2^-24, rm {rm}"
        );
        assert_eq!(
            add_s(one_plus_ulp, half_ulp, rm),
            (odd_tie, NX),
            "1+ulp + 2^-24, rm {rm}"
        );
        // mirrored: RDN and RUP swap roles for negative results
        let mirrored = match rm {
            RDN => RUP,
            RUP => RDN,
            m => m,
        };
        assert_eq!(
            add_s(S_ONE | 0x8000_0000, half_ulp | 0x8000_0000, mirrored),
            (even_tie | 0x8000_0000, NX),
            "-1 - 2^-24, rm {mirrored}"
        );
    }
    // double precision: 1 + 2^-53
    let d_half_ulp = 0x3ca0_0000_0000_0000;
    assert_eq!(add_d(D_ONE, d_half_ulp, RNE), (D_ONE, NX));
    assert_eq!(add_d(D_ONE, d_half_ulp, RMM), (D_ONE + 1, NX));
    assert_eq!(add_d(D_ONE, d_half_ulp, RUP), (D_ONE + 1, NX));
    assert_eq!(add_d(D_ONE, d_half_ulp, RTZ), (D_ONE, NX));
    // (1 + 2^-52) − 2^-53 = 1 + 2^-53: tie between 1 (even) and 1 + 2^-52
    assert_eq!(sub_d(D_ONE + 1, d_half_ulp, RNE), (D_ONE, NX));
    assert_eq!(sub_d(D_ONE + 1, d_half_ulp, RMM), (D_ONE + 1, NX));
}

#[test]
fn overflow_depends_on_rounding_direction() {
    // max × 2 overflows; the result is ∞ or max-finite by direction and sign
    let neg = |x: u32| x | 0x8000_0000;
    let table = [
        (RNE, S_INF, neg(S_INF)),
        (RTZ, S_MAX, neg(S_MAX)),
        (RDN, S_MAX, neg(S_INF)),
        (RUP, S_INF, neg(S_MAX)),
        (RMM, S_INF, neg(S_INF)),
    ];
    for (rm, pos, negative) in table {
        assert_eq!(mul_s(S_MAX, S_TWO, rm), (pos, OF | NX), "max*2 rm {rm}");
        assert_eq!(
            mul_s(neg(S_MAX), S_TWO, rm),
            (negative, OF | NX),
            "-max*2 rm {rm}"
        );
    }
    let d_neg = |x: u64| x | 0x8000_0000_0000_0000;
    let d_two = 0x4000_0000_0000_0000;
    assert_eq!(add_d(D_MAX, D_MAX, RNE), (D_INF, OF | NX));
    assert_eq!(add_d(D_MAX, D_MAX, RTZ), (D_MAX, OF | NX));
    assert_eq!(mul_d(d_neg(D_MAX), d_two, RUP), (d_neg(D_MAX), OF | NX));
    assert_eq!(mul_d(d_neg(D_MAX), d_two, RDN), (D_NINF, OF | NX));
    assert_eq!(cvt_s_d(D_MAX, RTZ), (S_MAX, OF | NX));
    assert_eq!(cvt_s_d(D_MAX, RNE), (S_INF, OF | NX));
    // max + half an ulp: RNE ties to even (∞), no overflow under RTZ
    assert_eq!(add_s(S_MAX, 0x7300_0000, RNE), (S_INF, OF | NX));
    assert_eq!(add_s(S_MAX, 0x7300_0000, RTZ), (S_MAX, NX));
    // infinity itself is exact: no flags
    assert_eq!(mul_s(S_INF, S_TWO, RNE), (S_INF, ALL));
}

/// RISC-V detects tininess after rounding.
#[test]
fn underflow_tininess_after_rounding() {
    // 2^-126 × (1 - 2^-25): rounds (RNE) to 2^-126 even with an unbounded
    // exponent, so it is not tiny: NX without UF.
    let just_below_min_normal = 0x380f_ffff_f000_0000;
    assert_eq!(
        f64::from_bits(just_below_min_normal),
        f64::powi(2.0, -126) * (1.0 - f64::powi(2.0, -25))
    );
    assert_eq!(cvt_s_d(just_below_min_normal, RNE), (S_MIN_NORMAL, NX));
    assert_eq!(cvt_s_d(just_below_min_normal, RUP), (S_MIN_NORMAL, NX));
    assert_eq!(cvt_s_d(just_below_min_normal, RMM), (S_MIN_NORMAL, NX));
    assert_eq!(cvt_s_d(just_below_min_normal, RTZ), (0x007f_ffff, UF | NX));
    assert_eq!(cvt_s_d(just_below_min_normal, RDN), (0x007f_ffff, UF | NX));
    // (1 - 2^-24) × 2^-126 is tiny after rounding (its 24-bit rounding is
    // itself), yet the subnormal result rounds up to 2^-126: UF and NX.
    assert_eq!(
        mul_s(0x3f7f_ffff, S_MIN_NORMAL, RNE),
        (S_MIN_NORMAL, UF | NX)
    );
    assert_eq!(
        mul_d(0x3fef_ffff_ffff_ffff, D_MIN_NORMAL, RNE),
        (D_MIN_NORMAL, UF | NX)
    );
    // exact subnormal results raise nothing
    assert_eq!(mul_s(S_MIN_NORMAL, 0x3f00_0000, RNE), (0x0040_0000, ALL));
    assert_eq!(sub_s(0x0080_0001, S_MIN_NORMAL, RNE), (S_MIN_SUB, ALL));
    // below the smallest subnormal
    assert_eq!(mul_s(S_MIN_SUB, 0x3f00_0000, RNE), (S_PZERO, UF | NX)); // tie to even 0
    assert_eq!(mul_s(S_MIN_SUB, 0x3f00_0000, RUP), (S_MIN_SUB, UF | NX));
    assert_eq!(mul_s(S_MIN_SUB, 0x3f40_0000, RNE), (S_MIN_SUB, UF | NX)); // 0.75 ulp
    assert_eq!(mul_d(1, 0x3fe0_0000_0000_0000, RMM), (1, UF | NX));
    assert_eq!(div_d(1, 0x4000_0000_0000_0000, RTZ), (D_PZERO, UF | NX));
}

#[test]
fn division_by_zero_and_sqrt_domain() {
    assert_eq!(div_s(S_ONE, S_PZERO, RNE), (S_INF, DZ));
    assert_eq!(div_s(S_ONE, S_NZERO, RNE), (S_NINF, DZ));
    assert_eq!(div_s(0xbf80_0000, S_PZERO, RTZ), (S_NINF, DZ));
    assert_eq!(div_d(S_MIN_SUB as u64, D_NZERO, RNE), (D_NINF, DZ)); // subnormal / -0
    assert_eq!(div_s(S_PZERO, S_PZERO, RNE), (CNAN_S, NV));
    assert_eq!(div_d(D_INF, D_PZERO, RNE), (D_INF, ALL)); // ∞/0 is exact, not DZ
    assert_eq!(div_s(S_PZERO, S_ONE, RNE), (S_PZERO, ALL));
    assert_eq!(div_s(S_ONE, S_INF, RNE), (S_PZERO, ALL));
    assert_eq!(div_s(S_ONE, 0x4040_0000, RNE), (0x3eaa_aaab, NX)); // 1/3
    assert_eq!(div_s(S_ONE, 0x4040_0000, RTZ), (0x3eaa_aaaa, NX));

    assert_eq!(sqrt_s(0xbf80_0000, RNE), (CNAN_S, NV));
    assert_eq!(sqrt_s(0x8000_0001, RNE), (CNAN_S, NV)); // negative subnormal
    assert_eq!(sqrt_s(S_NINF, RNE), (CNAN_S, NV));
    assert_eq!(sqrt_s(S_NZERO, RNE), (S_NZERO, ALL)); // sqrt(-0) = -0
    assert_eq!(sqrt_s(S_INF, RNE), (S_INF, ALL));
    assert_eq!(sqrt_s(0x4080_0000, RNE), (S_TWO, ALL)); // sqrt(4) exact
    assert_eq!(sqrt_s(S_TWO, RNE), (0x3fb5_04f3, NX));
    assert_eq!(sqrt_s(S_TWO, RTZ), (0x3fb5_04f3, NX));
    assert_eq!(sqrt_s(S_TWO, RUP), (0x3fb5_04f4, NX));
    assert_eq!(sqrt_d(0xbff0_0000_0000_0000, RNE), (CNAN_D, NV));
    assert_eq!(sqrt_d(D_NZERO, RNE), (D_NZERO, ALL));
    assert_eq!(sqrt_d(1, RNE), (0x1e60_0000_0000_0000, ALL)); // sqrt(2^-1074) = 2^-537
}

#[test]
fn fused_multiply_add_special_cases() {
    // ∞ × 0 + qNaN raises NV (RISC-V), with any of the four variants
    assert_eq!(fmadd_s(S_INF, S_PZERO, S_QNAN_PAYLOAD, RNE), (CNAN_S, NV));
    assert_eq!(fmadd_s(S_PZERO, S_NINF, S_QNAN_PAYLOAD, RNE), (CNAN_S, NV));
    assert_eq!(fnmadd_s(S_INF, S_NZERO, S_QNAN_PAYLOAD, RNE), (CNAN_S, NV));
    assert_eq!(fmsub_d(D_INF, D_PZERO, D_QNAN_PAYLOAD, RNE), (CNAN_D, NV));
    assert_eq!(fnmsub_d(D_PZERO, D_INF, D_QNAN_PAYLOAD, RNE), (CNAN_D, NV));
    // qNaN × 0 + 1 is just a quiet NaN
    assert_eq!(fmadd_s(S_QNAN_PAYLOAD, S_PZERO, S_ONE, RNE), (CNAN_S, ALL));
    assert_eq!(fmadd_s(S_ONE, S_ONE, S_SNAN, RNE), (CNAN_S, NV));
    // ∞ × 1 − ∞ is invalid; ∞ × 1 + ∞ is ∞
    assert_eq!(fmsub_s(S_INF, S_ONE, S_INF, RNE), (CNAN_S, NV));
    assert_eq!(fmadd_s(S_INF, S_ONE, S_INF, RNE), (S_INF, ALL));
    assert_eq!(fnmadd_s(S_INF, S_ONE, S_INF, RNE), (S_NINF, ALL));
    // single rounding: 1.5 × (1 + 2^-23) − 1.5 keeps the product's low bits
    let r = fmsub_s(0x3fc0_0000, 0x3f80_0001, 0x3fc0_0000, RNE);
    assert_eq!(r, (0x3440_0000, ALL)); // 1.5 × 2^-23
                                       // x × y − x×y (rounded) gives the rounding error exactly
    let third = 0x3eaa_aaab;
    let three = 0x4040_0000;
    assert_eq!(fmsub_s(third, three, S_ONE, RNE), (0x3300_0000, ALL)); // 2^-25
                                                                       // zero signs: (+0 × 1) + (-0) = +0; under RDN = -0; -(+0×1) - (+0) = -0
    assert_eq!(fmadd_s(S_PZERO, S_ONE, S_NZERO, RNE), (S_PZERO, ALL));
    assert_eq!(fmadd_s(S_PZERO, S_ONE, S_NZERO, RDN), (S_NZERO, ALL));
    assert_eq!(fnmadd_s(S_PZERO, S_ONE, S_PZERO, RNE), (S_NZERO, ALL));
    // exact cancellation: +0, or -0 under RDN
    assert_eq!(fmsub_d(D_ONE, D_ONE, D_ONE, RNE), (D_PZERO, ALL));
    assert_eq!(fmsub_d(D_ONE, D_ONE, D_ONE, RDN), (D_NZERO, ALL));
    // tiny product plus nonzero addend: addend returned, inexact
    assert_eq!(fmadd_s(S_MIN_SUB, S_MIN_SUB, S_ONE, RNE), (S_ONE, NX));
    assert_eq!(fmadd_s(S_MIN_SUB, S_MIN_SUB, S_ONE, RUP), (0x3f80_0001, NX));
}

#[test]
fn zero_sign_rules_for_add() {
    assert_eq!(add_s(S_PZERO, S_NZERO, RNE), (S_PZERO, ALL));
    assert_eq!(add_s(S_PZERO, S_NZERO, RDN), (S_NZERO, ALL));
    assert_eq!(add_s(S_NZERO, S_NZERO, RNE), (S_NZERO, ALL));
    assert_eq!(sub_s(S_ONE, S_ONE, RNE), (S_PZERO, ALL));
    assert_eq!(sub_s(S_ONE, S_ONE, RDN), (S_NZERO, ALL));
    assert_eq!(sub_d(D_PZERO, D_PZERO, RUP), (D_PZERO, ALL));
    assert_eq!(sub_d(D_PZERO, D_PZERO, RDN), (D_NZERO, ALL));
    assert_eq!(add_s(S_MIN_SUB, S_NZERO, RNE), (S_MIN_SUB, ALL)); // x + -0 = x
}

#[test]
fn reserved_rounding_modes_behave_as_rne() {
    // The hart must trap on rm 5..=7; if one slips through, no panic.
    let half_ulp = 0x3380_0000;
    for rm in 5..=255u8 {
        assert_eq!(add_s(S_ONE, half_ulp, rm), add_s(S_ONE, half_ulp, RNE));
        assert_eq!(mul_s(S_MAX, S_TWO, rm), (S_INF, OF | NX));
        assert_eq!(cvt_w_s(0x3fc0_0000, rm), (2, NX)); // 1.5 → 2
    }
}
