//! Shared helpers for the integration tests: a deterministic PRNG and
//! operand generators biased towards the values where IEEE arithmetic is
//! hard (specials, subnormals, exponent extremes, ties, cancellation).
#![allow(dead_code)]

/// SplitMix64: tiny, deterministic, good enough to spread test inputs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Layout of a binary format for the generators.
#[derive(Clone, Copy)]
pub struct Fmt {
    pub exp_bits: u32,
    pub frac_bits: u32,
}

pub const S: Fmt = Fmt {
    exp_bits: 8,
    frac_bits: 23,
};
pub const D: Fmt = Fmt {
    exp_bits: 11,
    frac_bits: 52,
};

impl Fmt {
    pub fn sign(self) -> u64 {
        1 << (self.exp_bits + self.frac_bits)
    }
    pub fn exp_max(self) -> u64 {
        (1 << self.exp_bits) - 1
    }
    pub fn frac_mask(self) -> u64 {
        (1 << self.frac_bits) - 1
    }
    pub fn bias(self) -> u64 {
        (1 << (self.exp_bits - 1)) - 1
    }
    pub fn pack(self, sign: bool, exp: u64, frac: u64) -> u64 {
        (if sign { self.sign() } else { 0 }) | (exp << self.frac_bits) | (frac & self.frac_mask())
    }
    pub fn exp_of(self, bits: u64) -> u64 {
        (bits >> self.frac_bits) & self.exp_max()
    }
    pub fn is_nan(self, bits: u64) -> bool {
        self.exp_of(bits) == self.exp_max() && bits & self.frac_mask() != 0
    }
    pub fn all_bits(self) -> u64 {
        if self.exp_bits + self.frac_bits == 63 {
            u64::MAX
        } else {
            (1u64 << (self.exp_bits + self.frac_bits + 1)) - 1
        }
    }

    /// Values every operation must be tried on.
    pub fn specials(self) -> Vec<u64> {
        let fm = self.frac_mask();
        let em = self.exp_max();
        let mut v = Vec::new();
        for sign in [false, true] {
            for (e, f) in [
                (0, 0), // zero
                (0, 1), // min subnormal
                (0, 2),
                (0, fm),                        // max subnormal
                (0, 1 << (self.frac_bits - 1)), // half of min normal
                (1, 0),                         // min normal
                (1, 1),
                (1, fm),
                (2, 0),
                (em - 1, fm), // max finite
                (em - 1, 0),
                (em - 2, fm),
                (self.bias(), 0), // 1.0
                (self.bias(), 1),
                (self.bias(), fm),
                (self.bias() - 1, fm),
                (self.bias() + 1, 0),                     // 2.0
                (self.bias(), 1 << (self.frac_bits - 1)), // 1.5
                (em, 0),                                  // infinity
                (em, 1 << (self.frac_bits - 1)),          // canonical quiet NaN
                (em, fm),                                 // quiet NaN, full payload
                (em, 1),                                  // signaling NaN
                (em, fm >> 1),                            // signaling NaN, full payload
            ] {
                v.push(self.pack(sign, e, f));
            }
        }
        v
    }

    fn significand(self, rng: &mut Rng) -> u64 {
        let fm = self.frac_mask();
        match rng.below(8) {
            0 => 0,
            1 => fm,
            2 => fm >> rng.below(self.frac_bits as u64), // low ones
            3 => (fm << rng.below(self.frac_bits as u64)) & fm, // high ones
            4 => 1 << rng.below(self.frac_bits as u64),  // one bit
            5 => rng.next() & rng.next() & fm,           // sparse
            6 => (rng.next() | rng.next()) & fm,         // dense
            _ => rng.next() & fm,
        }
    }

    /// A random operand, biased towards hard regions.
    pub fn operand(self, rng: &mut Rng) -> u64 {
        let sign = rng.next() & 1 == 1;
        let em = self.exp_max();
        let p = self.frac_bits as u64 + 1;
        match rng.below(16) {
            0 | 1 => {
                let sp = self.specials();
                sp[rng.below(sp.len() as u64) as usize]
            }
            2 | 3 => rng.next() & self.all_bits(),
            4 | 5 => self.pack(sign, 0, self.significand(rng)),
            6 => self.pack(sign, 1 + rng.below(p + 4), self.significand(rng)),
            7 => self.pack(sign, em - 1 - rng.below(p + 4), self.significand(rng)),
            8..=11 => {
                let e = self.bias() - 40 + rng.below(81);
                self.pack(sign, e, self.significand(rng))
            }
            _ => self.pack(sign, 1 + rng.below(em - 1), self.significand(rng)),
        }
    }

    /// A second operand, often close to the first (cancellation, ties,
    /// exponent differences around the precision).
    pub fn partner(self, rng: &mut Rng, a: u64) -> u64 {
        if self.is_nan(a) || rng.below(3) == 0 {
            return self.operand(rng);
        }
        let p = self.frac_bits as u64 + 1;
        let sign = rng.next() & 1 == 1;
        let e = self.exp_of(a);
        match rng.below(4) {
            // a few ulps away, same or flipped sign
            0 => {
                let d = rng.below(5);
                let m = if rng.next() & 1 == 1 {
                    a.wrapping_add(d)
                } else {
                    a.wrapping_sub(d)
                };
                (m & !self.sign() & self.all_bits()) | if sign { self.sign() } else { 0 }
            }
            // exponent differing by about the precision
            1 => {
                let shift = rng.below(p + 4);
                let ne = if rng.next() & 1 == 1 {
                    e.saturating_sub(shift)
                } else {
                    (e + shift).min(self.exp_max() - 1)
                };
                self.pack(sign, ne, self.significand(rng))
            }
            // same exponent
            2 => self.pack(sign, e, self.significand(rng)),
            _ => self.operand(rng),
        }
    }
}

pub const ROUNDING_MODES: [u8; 5] = [0, 1, 2, 3, 4];
