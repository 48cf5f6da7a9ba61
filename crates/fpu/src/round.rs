//! The one place where an exact (or sticky-jammed) value becomes a
//! representable result: rounding, overflow, subnormals and the flags
//! that come with them.

use crate::format::{sign_bit, Format};
use crate::{Flags, NX, OF, RDN, RMM, RTZ, RUP, UF};

/// What was discarded below the kept bits, relative to half an ulp.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Rest {
    Exact,
    Below,
    Half,
    Above,
}

/// Splits `sig` into `sig >> shift` and the class of the discarded bits.
/// `shift` must be > 0 and `sig` nonzero.
pub(crate) fn split(sig: u128, shift: u32) -> (u128, Rest) {
    debug_assert!(shift > 0 && sig != 0);
    if shift > 128 {
        // sig < 2^128 <= half an ulp
        return (0, Rest::Below);
    }
    let half = 1u128 << (shift - 1);
    let (kept, rest) = if shift == 128 {
        (0, sig)
    } else {
        (sig >> shift, sig & ((1u128 << shift) - 1))
    };
    let class = if rest == 0 {
        Rest::Exact
    } else if rest < half {
        Rest::Below
    } else if rest == half {
        Rest::Half
    } else {
        Rest::Above
    };
    (kept, class)
}

/// Whether the kept magnitude must be incremented. Rounding modes other
/// than 0..=4 never reach here from a correct hart; they behave as RNE.
pub(crate) fn round_up(rm: u8, sign: bool, odd: bool, rest: Rest) -> bool {
    if rest == Rest::Exact {
        return false;
    }
    match rm {
        RTZ => false,
        RDN => sign,
        RUP => !sign,
        RMM => rest != Rest::Below,
        _ => rest == Rest::Above || (rest == Rest::Half && odd),
    }
}

/// Overflow result: ±inf or ±max-finite depending on the direction of rounding.
pub(crate) fn overflow<F: Format>(sign: bool, rm: u8) -> (u64, Flags) {
    let to_inf = match rm {
        RTZ => false,
        RDN => sign,
        RUP => !sign,
        _ => true,
    };
    let mag = if to_inf { F::INF } else { F::MAX_FINITE };
    (sign_bit::<F>(sign) | mag, OF | NX)
}

/// Rounds `(-1)^sign × sig × 2^scale` to format `F`.
///
/// `sig` must be nonzero. If its bit 0 is a sticky bit (ORed-in remnant of
/// discarded bits), its leading one must sit at least `PREC + 2` bits above
/// bit 0, so the sticky bit stays below the rounding bit.
/// Tininess is detected after rounding, as RISC-V requires.
pub(crate) fn round_pack<F: Format>(sign: bool, scale: i32, sig: u128, rm: u8) -> (u64, Flags) {
    debug_assert!(sig != 0);
    let prec = F::PREC as i32;
    let msb = 127 - sig.leading_zeros() as i32;
    let exp = msb + scale;
    // Weight (as a power of two) of the result's last kept bit.
    let mut lsb_weight = exp.max(F::EMIN) - (prec - 1);
    let shift = lsb_weight - scale;
    let (mut kept, rest) = if shift <= 0 {
        (sig << (-shift) as u32, Rest::Exact)
    } else {
        split(sig, shift as u32)
    };
    if round_up(rm, sign, kept & 1 == 1, rest) {
        kept += 1;
        if kept == 1u128 << prec {
            kept >>= 1;
            lsb_weight += 1;
        }
    }
    let mut flags = if rest == Rest::Exact { 0 } else { NX };
    let kept = kept as u64;
    let bits = if kept >> (prec - 1) != 0 {
        let biased = lsb_weight + (prec - 1) + F::BIAS;
        if biased >= F::EXP_MAX as i32 {
            return overflow::<F>(sign, rm);
        }
        sign_bit::<F>(sign) | ((biased as u64) << F::FRAC_BITS) | (kept & F::FRAC_MASK)
    } else {
        // Subnormal or zero: the biased exponent field is 0.
        sign_bit::<F>(sign) | kept
    };
    if rest != Rest::Exact
        && exp < F::EMIN
        && is_tiny_after_rounding(sign, exp, scale, sig, rm, prec, F::EMIN)
    {
        flags |= UF;
    }
    (bits, flags)
}

/// Tiny means: rounded to full precision with an unbounded exponent, the
/// magnitude is still below 2^EMIN. Only a value just below 2^EMIN can
/// round up out of the tiny range.
fn is_tiny_after_rounding(
    sign: bool,
    exp: i32,
    scale: i32,
    sig: u128,
    rm: u8,
    prec: i32,
    emin: i32,
) -> bool {
    if exp < emin - 1 {
        return true;
    }
    let shift = exp - (prec - 1) - scale;
    let (kept, rest) = if shift <= 0 {
        (sig << (-shift) as u32, Rest::Exact)
    } else {
        split(sig, shift as u32)
    };
    let all_ones = (1u128 << prec) - 1;
    !(kept == all_ones && round_up(rm, sign, true, rest))
}

/// `x >> shift`, ORing every discarded bit into bit 0.
pub(crate) fn shift_right_jam(x: u128, shift: u32) -> u128 {
    if shift == 0 {
        x
    } else if shift >= 128 {
        (x != 0) as u128
    } else {
        (x >> shift) | ((x & ((1u128 << shift) - 1) != 0) as u128)
    }
}
