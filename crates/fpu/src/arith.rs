//! add/sub, mul, div, sqrt and fused multiply-add, generic over the format.

use crate::format::{sign_bit, unpack, Format, Kind, Unpacked};
use crate::round::{round_pack, shift_right_jam};
use crate::{Flags, DZ, NV, RDN};

fn nan_result<F: Format>(flags: Flags) -> (u64, Flags) {
    (F::CANONICAL_NAN, flags)
}

fn snan_flag(ops: &[Unpacked]) -> Flags {
    if ops.iter().any(Unpacked::is_snan) {
        NV
    } else {
        0
    }
}

fn zero<F: Format>(sign: bool) -> u64 {
    sign_bit::<F>(sign)
}

fn inf<F: Format>(sign: bool) -> u64 {
    sign_bit::<F>(sign) | F::INF
}

/// Sign of an exact zero sum of operands of opposite sign (IEEE 754 §6.3).
fn exact_zero_sign(rm: u8) -> bool {
    rm == RDN
}

/// Leading one moved to bit 125: room for one carry bit, and every input
/// (at most 106 bits wide) keeps at least 20 zero bits below it.
fn normalize125(x: u128, scale: i32) -> (u128, i32) {
    let shift = x.leading_zeros() as i32 - 2;
    (x << shift as u32, scale - shift)
}

/// Rounds `x + y` for nonzero finite terms given as sign, integer
/// significand (at most 106 bits) and scale.
///
/// Both terms are normalised to bit 125 before alignment. A shift of 0 or 1
/// loses nothing, so massive cancellation is exact; with a larger shift the
/// result keeps its leading one at bit 124 or above, far from the sticky bit.
fn add_terms<F: Format>(
    sign_x: bool,
    x: u128,
    scale_x: i32,
    sign_y: bool,
    y: u128,
    scale_y: i32,
    rm: u8,
) -> (u64, Flags) {
    let (x, scale_x) = normalize125(x, scale_x);
    let (y, scale_y) = normalize125(y, scale_y);
    let (big_sign, big, small_sign, small, scale) = if scale_x >= scale_y {
        let d = (scale_x - scale_y) as u32;
        (sign_x, x, sign_y, shift_right_jam(y, d), scale_x)
    } else {
        let d = (scale_y - scale_x) as u32;
        (sign_y, y, sign_x, shift_right_jam(x, d), scale_y)
    };
    if big_sign == small_sign {
        return round_pack::<F>(big_sign, scale, big + small, rm);
    }
    let (sign, mag) = if big >= small {
        (big_sign, big - small)
    } else {
        (small_sign, small - big)
    };
    if mag == 0 {
        return (zero::<F>(exact_zero_sign(rm)), 0);
    }
    round_pack::<F>(sign, scale, mag, rm)
}

pub(crate) fn add<F: Format>(a_bits: u64, b_bits: u64, rm: u8) -> (u64, Flags) {
    let a = unpack::<F>(a_bits);
    let b = unpack::<F>(b_bits);
    if a.is_nan() || b.is_nan() {
        return nan_result::<F>(snan_flag(&[a, b]));
    }
    match (a.kind, b.kind) {
        (Kind::Inf, Kind::Inf) if a.sign != b.sign => nan_result::<F>(NV),
        (Kind::Inf, _) => (inf::<F>(a.sign), 0),
        (_, Kind::Inf) => (inf::<F>(b.sign), 0),
        (Kind::Zero, Kind::Zero) => {
            let sign = if a.sign == b.sign {
                a.sign
            } else {
                exact_zero_sign(rm)
            };
            (zero::<F>(sign), 0)
        }
        // x + 0 is x exactly, even when x is subnormal.
        (Kind::Zero, _) => (b_bits, 0),
        (_, Kind::Zero) => (a_bits, 0),
        _ => add_terms::<F>(
            a.sign,
            a.sig as u128,
            a.scale,
            b.sign,
            b.sig as u128,
            b.scale,
            rm,
        ),
    }
}

pub(crate) fn sub<F: Format>(a_bits: u64, b_bits: u64, rm: u8) -> (u64, Flags) {
    add::<F>(a_bits, b_bits ^ F::SIGN, rm)
}

pub(crate) fn mul<F: Format>(a_bits: u64, b_bits: u64, rm: u8) -> (u64, Flags) {
    let a = unpack::<F>(a_bits);
    let b = unpack::<F>(b_bits);
    if a.is_nan() || b.is_nan() {
        return nan_result::<F>(snan_flag(&[a, b]));
    }
    let sign = a.sign != b.sign;
    match (a.kind, b.kind) {
        (Kind::Inf, Kind::Zero) | (Kind::Zero, Kind::Inf) => nan_result::<F>(NV),
        (Kind::Inf, _) | (_, Kind::Inf) => (inf::<F>(sign), 0),
        (Kind::Zero, _) | (_, Kind::Zero) => (zero::<F>(sign), 0),
        _ => round_pack::<F>(sign, a.scale + b.scale, a.sig as u128 * b.sig as u128, rm),
    }
}

pub(crate) fn div<F: Format>(a_bits: u64, b_bits: u64, rm: u8) -> (u64, Flags) {
    let a = unpack::<F>(a_bits);
    let b = unpack::<F>(b_bits);
    if a.is_nan() || b.is_nan() {
        return nan_result::<F>(snan_flag(&[a, b]));
    }
    let sign = a.sign != b.sign;
    match (a.kind, b.kind) {
        (Kind::Inf, Kind::Inf) | (Kind::Zero, Kind::Zero) => nan_result::<F>(NV),
        (Kind::Inf, _) => (inf::<F>(sign), 0),
        (_, Kind::Inf) => (zero::<F>(sign), 0),
        (Kind::Zero, _) => (zero::<F>(sign), 0),
        (_, Kind::Zero) => (inf::<F>(sign), DZ),
        _ => {
            let (quotient, scale) = divide_significands(a.sig, a.scale, b.sig, b.scale, F::PREC);
            round_pack::<F>(sign, scale, quotient, rm)
        }
    }
}

/// Quotient of two nonzero significands with at least 32 significant bits
/// (64 for wide formats) and the remainder jammed into bit 0.
fn divide_significands(a: u64, scale_a: i32, b: u64, scale_b: i32, prec: u32) -> (u128, i32) {
    if prec <= 29 {
        // Fits 64-bit division: both normalised to bit 31, quotient in (2^31, 2^33).
        let (la, lb) = ((a as u32).leading_zeros(), (b as u32).leading_zeros());
        let num = (a << la) << 32;
        let den = b << lb;
        let q = num / den;
        let sticky = !num.is_multiple_of(den) as u64;
        let scale = scale_a - scale_b - 32 - la as i32 + lb as i32;
        ((q | sticky) as u128, scale)
    } else {
        let (la, lb) = (a.leading_zeros(), b.leading_zeros());
        let num = ((a << la) as u128) << 64;
        let den = (b << lb) as u128;
        let q = num / den;
        let sticky = !num.is_multiple_of(den) as u128;
        let scale = scale_a - scale_b - 64 - la as i32 + lb as i32;
        (q | sticky, scale)
    }
}

pub(crate) fn sqrt<F: Format>(a_bits: u64, rm: u8) -> (u64, Flags) {
    let a = unpack::<F>(a_bits);
    if a.is_nan() {
        return nan_result::<F>(snan_flag(&[a]));
    }
    match a.kind {
        Kind::Zero => (a_bits, 0),
        _ if a.sign => nan_result::<F>(NV),
        Kind::Inf => (a_bits, 0),
        _ => {
            // Leading one at bit 124 or 125 with an even scale, so the root
            // has 63 bits and the scale halves exactly.
            let sig = a.sig as u128;
            let mut shift = 124 - (127 - sig.leading_zeros() as i32);
            if (a.scale - shift) & 1 != 0 {
                shift += 1;
            }
            let n = sig << shift as u32;
            let scale = a.scale - shift;
            let root = isqrt(n);
            let sticky = (root * root != n) as u128;
            round_pack::<F>(false, scale / 2, root | sticky, rm)
        }
    }
}

/// floor(sqrt(n)) for n in [2^124, 2^126).
///
/// The host's square root (correctly rounded everywhere) only seeds the
/// iteration; the integer Newton loop below makes the result exact whatever
/// the seed.
fn isqrt(n: u128) -> u128 {
    let seed = ((n as f64).sqrt() as u128).max(1);
    // One step from any positive seed lands at or above floor(sqrt(n)) ...
    let mut x = (seed + n / seed) / 2;
    // ... from where the iteration decreases monotonically to it.
    loop {
        let y = (x + n / x) / 2;
        if y >= x {
            return x;
        }
        x = y;
    }
}

/// `a × b + c` with a single rounding. The fmsub/fnmsub/fnmadd variants
/// flip the sign bits of `a` and/or `c` before calling this.
pub(crate) fn fma<F: Format>(a_bits: u64, b_bits: u64, c_bits: u64, rm: u8) -> (u64, Flags) {
    let a = unpack::<F>(a_bits);
    let b = unpack::<F>(b_bits);
    let c = unpack::<F>(c_bits);
    let inf_times_zero = matches!(
        (a.kind, b.kind),
        (Kind::Inf, Kind::Zero) | (Kind::Zero, Kind::Inf)
    );
    if a.is_nan() || b.is_nan() || c.is_nan() {
        // RISC-V: ∞ × 0 raises NV even when the addend is a quiet NaN.
        let flags = snan_flag(&[a, b, c]) | if inf_times_zero { NV } else { 0 };
        return nan_result::<F>(flags);
    }
    if inf_times_zero {
        return nan_result::<F>(NV);
    }
    let prod_sign = a.sign != b.sign;
    let prod_inf = a.kind == Kind::Inf || b.kind == Kind::Inf;
    let prod_zero = a.kind == Kind::Zero || b.kind == Kind::Zero;
    if prod_inf {
        if c.kind == Kind::Inf && c.sign != prod_sign {
            return nan_result::<F>(NV);
        }
        return (inf::<F>(prod_sign), 0);
    }
    if c.kind == Kind::Inf {
        return (inf::<F>(c.sign), 0);
    }
    if prod_zero {
        if c.kind == Kind::Zero {
            let sign = if prod_sign == c.sign {
                c.sign
            } else {
                exact_zero_sign(rm)
            };
            return (zero::<F>(sign), 0);
        }
        return (c_bits, 0);
    }
    let prod = a.sig as u128 * b.sig as u128;
    let prod_scale = a.scale + b.scale;
    if c.kind == Kind::Zero {
        return round_pack::<F>(prod_sign, prod_scale, prod, rm);
    }
    add_terms::<F>(
        prod_sign,
        prod,
        prod_scale,
        c.sign,
        c.sig as u128,
        c.scale,
        rm,
    )
}
