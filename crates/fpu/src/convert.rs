//! Conversions: float ↔ integer and between the two float formats.

use crate::format::{sign_bit, unpack, Format, Kind};
use crate::round::{round_pack, round_up, split, Rest};
use crate::{Flags, NV, NX};

/// Integer destination of fcvt.{w,wu,l,lu}.*.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum IntKind {
    W,
    Wu,
    L,
    Lu,
}

impl IntKind {
    /// Largest magnitudes representable for a positive and a negative result.
    fn limits(self) -> (u128, u128) {
        match self {
            IntKind::W => (i32::MAX as u128, 1 << 31),
            IntKind::Wu => (u32::MAX as u128, 0),
            IntKind::L => (i64::MAX as u128, 1 << 63),
            IntKind::Lu => (u64::MAX as u128, 0),
        }
    }

    /// The value written to the 64-bit rd: W forms sign-extend from 32 bits,
    /// including fcvt.wu (RV64 writes 32-bit results sign-extended).
    fn write(self, negative: bool, mag: u128) -> u64 {
        let value = if negative {
            (mag as u64).wrapping_neg()
        } else {
            mag as u64
        };
        match self {
            IntKind::W | IntKind::Wu => value as u32 as i32 as i64 as u64,
            IntKind::L | IntKind::Lu => value,
        }
    }

    /// RISC-V results for invalid conversions: NaN and positive overflow give
    /// the largest value, negative overflow the smallest.
    fn saturate(self, negative: bool) -> u64 {
        let (pos, neg) = self.limits();
        self.write(negative, if negative { neg } else { pos })
    }
}

pub(crate) fn float_to_int<F: Format>(bits: u64, rm: u8, kind: IntKind) -> (u64, Flags) {
    let u = unpack::<F>(bits);
    match u.kind {
        Kind::QuietNaN | Kind::SignalingNaN => return (kind.saturate(false), NV),
        Kind::Inf => return (kind.saturate(u.sign), NV),
        Kind::Zero => return (0, 0),
        Kind::Finite => {}
    }
    let sig = u.sig as u128;
    let (mag, rest) = if u.scale >= 0 {
        if u.scale >= 64 {
            return (kind.saturate(u.sign), NV);
        }
        (sig << u.scale as u32, Rest::Exact)
    } else {
        let (kept, rest) = split(sig, (-u.scale) as u32);
        (
            kept + round_up(rm, u.sign, kept & 1 == 1, rest) as u128,
            rest,
        )
    };
    let (pos_limit, neg_limit) = kind.limits();
    if mag > if u.sign { neg_limit } else { pos_limit } {
        return (kind.saturate(u.sign), NV);
    }
    let flags = if rest == Rest::Exact { 0 } else { NX };
    (kind.write(u.sign, mag), flags)
}

pub(crate) fn int_to_float<F: Format>(negative: bool, mag: u64, rm: u8) -> (u64, Flags) {
    if mag == 0 {
        return (0, 0);
    }
    round_pack::<F>(negative, 0, mag as u128, rm)
}

/// Converts between formats; NaNs become the destination's canonical NaN.
pub(crate) fn float_to_float<From: Format, To: Format>(bits: u64, rm: u8) -> (u64, Flags) {
    let u = unpack::<From>(bits);
    match u.kind {
        Kind::QuietNaN => (To::CANONICAL_NAN, 0),
        Kind::SignalingNaN => (To::CANONICAL_NAN, NV),
        Kind::Inf => (sign_bit::<To>(u.sign) | To::INF, 0),
        Kind::Zero => (sign_bit::<To>(u.sign), 0),
        Kind::Finite => round_pack::<To>(u.sign, u.scale, u.sig as u128, rm),
    }
}
