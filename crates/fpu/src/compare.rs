//! fmin/fmax, feq/flt/fle and fclass.

use crate::format::{unpack, Format, Kind};
use crate::{Flags, NV};

/// Orders non-NaN values as signed integers; -0 and +0 share the key 0.
fn order_key<F: Format>(bits: u64) -> i64 {
    let mag = (bits & !F::SIGN) as i64;
    if bits & F::SIGN != 0 {
        -mag
    } else {
        mag
    }
}

/// RISC-V fmin/fmax (IEEE 754-2019 minimumNumber/maximumNumber, -0 < +0):
/// a single NaN operand yields the other operand, two NaNs the canonical
/// NaN, and only a signaling NaN raises NV.
pub(crate) fn min_max<F: Format>(a: u64, b: u64, want_max: bool) -> (u64, Flags) {
    let ua = unpack::<F>(a);
    let ub = unpack::<F>(b);
    let flags = if ua.is_snan() || ub.is_snan() { NV } else { 0 };
    let result = match (ua.is_nan(), ub.is_nan()) {
        (true, true) => F::CANONICAL_NAN,
        (true, false) => b,
        (false, true) => a,
        (false, false) => {
            let (ka, kb) = (order_key::<F>(a), order_key::<F>(b));
            let a_negative = a & F::SIGN != 0;
            let pick_a = if want_max {
                ka > kb || (ka == kb && !a_negative)
            } else {
                ka < kb || (ka == kb && a_negative)
            };
            if pick_a {
                a
            } else {
                b
            }
        }
    };
    (result, flags)
}

/// feq: quiet comparison, NV only for a signaling NaN.
pub(crate) fn eq<F: Format>(a: u64, b: u64) -> (bool, Flags) {
    let ua = unpack::<F>(a);
    let ub = unpack::<F>(b);
    if ua.is_nan() || ub.is_nan() {
        let flags = if ua.is_snan() || ub.is_snan() { NV } else { 0 };
        return (false, flags);
    }
    (order_key::<F>(a) == order_key::<F>(b), 0)
}

/// flt (`or_equal` false) and fle (`or_equal` true): signaling, NV for any NaN.
pub(crate) fn less<F: Format>(a: u64, b: u64, or_equal: bool) -> (bool, Flags) {
    let ua = unpack::<F>(a);
    let ub = unpack::<F>(b);
    if ua.is_nan() || ub.is_nan() {
        return (false, NV);
    }
    let (ka, kb) = (order_key::<F>(a), order_key::<F>(b));
    (if or_equal { ka <= kb } else { ka < kb }, 0)
}

/// The fclass bit mask: exactly one of bits 0..=9 is set.
pub(crate) fn classify<F: Format>(a: u64) -> u64 {
    let u = unpack::<F>(a);
    let subnormal = (a >> F::FRAC_BITS) & F::EXP_MAX == 0;
    let bit = match (u.kind, u.sign) {
        (Kind::Inf, true) => 0,
        (Kind::Finite, true) if !subnormal => 1,
        (Kind::Finite, true) => 2,
        (Kind::Zero, true) => 3,
        (Kind::Zero, false) => 4,
        (Kind::Finite, false) if subnormal => 5,
        (Kind::Finite, false) => 6,
        (Kind::Inf, false) => 7,
        (Kind::SignalingNaN, _) => 8,
        (Kind::QuietNaN, _) => 9,
    };
    1 << bit
}
