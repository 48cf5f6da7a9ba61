//! Binary interchange formats (binary32, binary64) and their decoding.
//!
//! Everything works on raw bit patterns held in a `u64`; a binary32 value
//! uses the low 32 bits only.

pub(crate) trait Format {
    const EXP_BITS: u32;
    const FRAC_BITS: u32;

    const PREC: u32 = Self::FRAC_BITS + 1;
    const BIAS: i32 = (1 << (Self::EXP_BITS - 1)) - 1;
    /// Unbiased exponent of the smallest normal number.
    const EMIN: i32 = 1 - Self::BIAS;
    /// All-ones biased exponent (infinities and NaNs).
    const EXP_MAX: u64 = (1 << Self::EXP_BITS) - 1;
    const SIGN: u64 = 1 << (Self::EXP_BITS + Self::FRAC_BITS);
    const FRAC_MASK: u64 = (1 << Self::FRAC_BITS) - 1;
    const QUIET_BIT: u64 = 1 << (Self::FRAC_BITS - 1);
    const INF: u64 = Self::EXP_MAX << Self::FRAC_BITS;
    const MAX_FINITE: u64 = ((Self::EXP_MAX - 1) << Self::FRAC_BITS) | Self::FRAC_MASK;
    /// The RISC-V canonical NaN: positive, quiet, zero payload.
    const CANONICAL_NAN: u64 = Self::INF | Self::QUIET_BIT;
}

pub(crate) struct Single;
pub(crate) struct Double;

impl Format for Single {
    const EXP_BITS: u32 = 8;
    const FRAC_BITS: u32 = 23;
}

impl Format for Double {
    const EXP_BITS: u32 = 11;
    const FRAC_BITS: u32 = 52;
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Zero,
    /// Nonzero finite: value = sig × 2^scale, sig < 2^PREC (subnormals not normalised).
    Finite,
    Inf,
    QuietNaN,
    SignalingNaN,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Unpacked {
    pub sign: bool,
    pub kind: Kind,
    pub sig: u64,
    pub scale: i32,
}

impl Unpacked {
    pub fn is_nan(&self) -> bool {
        matches!(self.kind, Kind::QuietNaN | Kind::SignalingNaN)
    }
    pub fn is_snan(&self) -> bool {
        self.kind == Kind::SignalingNaN
    }
}

pub(crate) fn unpack<F: Format>(bits: u64) -> Unpacked {
    let sign = bits & F::SIGN != 0;
    let biased = (bits >> F::FRAC_BITS) & F::EXP_MAX;
    let frac = bits & F::FRAC_MASK;
    let (kind, sig, scale) = if biased == F::EXP_MAX {
        let kind = if frac == 0 {
            Kind::Inf
        } else if frac & F::QUIET_BIT != 0 {
            Kind::QuietNaN
        } else {
            Kind::SignalingNaN
        };
        (kind, 0, 0)
    } else if biased == 0 {
        if frac == 0 {
            (Kind::Zero, 0, 0)
        } else {
            (Kind::Finite, frac, F::EMIN - F::FRAC_BITS as i32)
        }
    } else {
        let scale = biased as i32 - F::BIAS - F::FRAC_BITS as i32;
        (Kind::Finite, frac | (1 << F::FRAC_BITS), scale)
    };
    Unpacked {
        sign,
        kind,
        sig,
        scale,
    }
}

pub(crate) fn sign_bit<F: Format>(sign: bool) -> u64 {
    if sign {
        F::SIGN
    } else {
        0
    }
}
