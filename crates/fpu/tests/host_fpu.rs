//! Randomised comparison against the host FPU in round-to-nearest-even:
//! results must match bit for bit, except that any NaN from the host must
//! be the canonical NaN from us. Operands are biased towards subnormals,
//! exponent extremes and cancellation.

use crate::common;

use common::{Fmt, Rng, D, S};
use hs_fpu as fpu;

const CASES: usize = 200_000;

fn pairs(fmt: Fmt, seed: u64) -> impl Iterator<Item = (u64, u64, u64)> {
    let mut rng = Rng::new(seed);
    (0..CASES).map(move |_| {
        let a = fmt.operand(&mut rng);
        let b = fmt.partner(&mut rng, a);
        let base = if rng.next() & 1 == 0 { a } else { b };
        let c = fmt.partner(&mut rng, base);
        (a, b, c)
    })
}

struct Check {
    name: &'static str,
    cases: u64,
    subnormal_inputs: u64,
    bad: Vec<String>,
}

impl Check {
    fn new(name: &'static str) -> Self {
        Check {
            name,
            cases: 0,
            subnormal_inputs: 0,
            bad: Vec::new(),
        }
    }
    fn single(&mut self, inputs: &[u32], ours: u32, host: f32) {
        self.cases += 1;
        self.subnormal_inputs += inputs
            .iter()
            .any(|&x| x & 0x7f80_0000 == 0 && x & 0x007f_ffff != 0)
            as u64;
        let ok = if host.is_nan() {
            ours == fpu::CANONICAL_NAN_S
        } else {
            ours == host.to_bits()
        };
        if !ok && self.bad.len() < 10 {
            self.bad.push(format!(
                "{}({inputs:08x?}) = {ours:#010x}, host {:#010x}",
                self.name,
                host.to_bits()
            ));
        }
    }
    fn double(&mut self, inputs: &[u64], ours: u64, host: f64) {
        self.cases += 1;
        self.subnormal_inputs += inputs
            .iter()
            .any(|&x| x & 0x7ff0_0000_0000_0000 == 0 && x & 0x000f_ffff_ffff_ffff != 0)
            as u64;
        let ok = if host.is_nan() {
            ours == fpu::CANONICAL_NAN_D
        } else {
            ours == host.to_bits()
        };
        if !ok && self.bad.len() < 10 {
            self.bad.push(format!(
                "{}({inputs:016x?}) = {ours:#018x}, host {:#018x}",
                self.name,
                host.to_bits()
            ));
        }
    }
    fn finish(self) {
        assert!(
            self.bad.is_empty(),
            "{} disagrees with the host FPU:\n{}",
            self.name,
            self.bad.join("\n")
        );
        assert!(
            self.subnormal_inputs > 1000,
            "{}: too few subnormal inputs ({})",
            self.name,
            self.subnormal_inputs
        );
        eprintln!(
            "{}: {} cases ({} involving subnormals) match the host",
            self.name, self.cases, self.subnormal_inputs
        );
    }
}

#[test]
fn single_precision_matches_host() {
    let f = f32::from_bits;
    let mut checks: Vec<Check> = ["add_s", "sub_s", "mul_s", "div_s", "sqrt_s", "fmadd_s"]
        .into_iter()
        .map(Check::new)
        .collect();
    for (a, b, c) in pairs(S, 1) {
        let (a, b, c) = (a as u32, b as u32, c as u32);
        checks[0].single(&[a, b], fpu::add_s(a, b, fpu::RNE).0, f(a) + f(b));
        checks[1].single(&[a, b], fpu::sub_s(a, b, fpu::RNE).0, f(a) - f(b));
        checks[2].single(&[a, b], fpu::mul_s(a, b, fpu::RNE).0, f(a) * f(b));
        checks[3].single(&[a, b], fpu::div_s(a, b, fpu::RNE).0, f(a) / f(b));
        checks[4].single(&[a], fpu::sqrt_s(a, fpu::RNE).0, f(a).sqrt());
        checks[5].single(
            &[a, b, c],
            fpu::fmadd_s(a, b, c, fpu::RNE).0,
            f(a).mul_add(f(b), f(c)),
        );
    }
    checks.into_iter().for_each(Check::finish);
}

#[test]
fn double_precision_matches_host() {
    let f = f64::from_bits;
    let mut checks: Vec<Check> = ["add_d", "sub_d", "mul_d", "div_d", "sqrt_d", "fmadd_d"]
        .into_iter()
        .map(Check::new)
        .collect();
    for (a, b, c) in pairs(D, 2) {
        checks[0].double(&[a, b], fpu::add_d(a, b, fpu::RNE).0, f(a) + f(b));
        checks[1].double(&[a, b], fpu::sub_d(a, b, fpu::RNE).0, f(a) - f(b));
        checks[2].double(&[a, b], fpu::mul_d(a, b, fpu::RNE).0, f(a) * f(b));
        checks[3].double(&[a, b], fpu::div_d(a, b, fpu::RNE).0, f(a) / f(b));
        checks[4].double(&[a], fpu::sqrt_d(a, fpu::RNE).0, f(a).sqrt());
        checks[5].double(
            &[a, b, c],
            fpu::fmadd_d(a, b, c, fpu::RNE).0,
            f(a).mul_add(f(b), f(c)),
        );
    }
    checks.into_iter().for_each(Check::finish);
}

/// Conversions the host does in RNE too: f64 → f32 rounding, f32 → f64,
/// and integer → float.
#[test]
fn conversions_match_host() {
    let mut narrow = Check::new("cvt_s_d");
    for (a, _, _) in pairs(D, 3) {
        // pull many doubles into and just below the single range
        let a = if a & 1 == 0 {
            a
        } else {
            (a & 0x800f_ffff_ffff_ffff) | ((0x360 + (a >> 20) % 0x120) << 52)
        };
        narrow.single(&[], fpu::cvt_s_d(a, fpu::RNE).0, f64::from_bits(a) as f32);
        // the inputs are doubles: count subnormal single results instead
        narrow.subnormal_inputs += (f64::from_bits(a) as f32).is_subnormal() as u64;
    }
    narrow.finish();

    let mut rng = Rng::new(4);
    let mut widen = 0u64;
    for _ in 0..CASES {
        let a = S.operand(&mut rng) as u32;
        let host = f32::from_bits(a) as f64;
        let ours = fpu::cvt_d_s(a, fpu::RNE).0;
        assert!(
            if host.is_nan() {
                ours == fpu::CANONICAL_NAN_D
            } else {
                ours == host.to_bits()
            },
            "cvt_d_s({a:#x})"
        );
        let x = rng.next() >> rng.below(64);
        assert_eq!(
            fpu::cvt_s_l(x, fpu::RNE).0,
            (x as i64 as f32).to_bits(),
            "cvt_s_l({x:#x})"
        );
        assert_eq!(
            fpu::cvt_s_lu(x, fpu::RNE).0,
            (x as f32).to_bits(),
            "cvt_s_lu({x:#x})"
        );
        assert_eq!(
            fpu::cvt_d_l(x, fpu::RNE).0,
            (x as i64 as f64).to_bits(),
            "cvt_d_l({x:#x})"
        );
        assert_eq!(
            fpu::cvt_d_lu(x, fpu::RNE).0,
            (x as f64).to_bits(),
            "cvt_d_lu({x:#x})"
        );
        widen += 1;
    }
    eprintln!("cvt_d_s and integer conversions: {widen} cases match the host");
}

/// fmin/fmax/fclass against a reference built from the host's comparisons
/// and `f64::classify`, over the biased random operands.
#[test]
fn min_max_classify_match_host_reference() {
    use std::num::FpCategory;
    fn reference_min_max(
        a: f64,
        b: f64,
        a_snan: bool,
        b_snan: bool,
        max: bool,
    ) -> (Option<f64>, u8) {
        let flags = if a_snan || b_snan { fpu::NV } else { 0 };
        let r = match (a.is_nan(), b.is_nan()) {
            (true, true) => None,
            (true, false) => Some(b),
            (false, true) => Some(a),
            _ if a == b => Some(
                if (a.is_sign_negative() && !max) || (!a.is_sign_negative() && max) {
                    a
                } else {
                    b
                },
            ),
            _ => Some(if (a < b) != max { a } else { b }),
        };
        (r, flags)
    }
    fn reference_class(category: FpCategory, neg: bool, snan: bool) -> u64 {
        1 << match category {
            FpCategory::Nan => {
                if snan {
                    8
                } else {
                    9
                }
            }
            FpCategory::Infinite => {
                if neg {
                    0
                } else {
                    7
                }
            }
            FpCategory::Normal => {
                if neg {
                    1
                } else {
                    6
                }
            }
            FpCategory::Subnormal => {
                if neg {
                    2
                } else {
                    5
                }
            }
            FpCategory::Zero => {
                if neg {
                    3
                } else {
                    4
                }
            }
        }
    }
    let mut n = 0;
    for (a, b, _) in pairs(S, 5) {
        let (a, b) = (a as u32, b as u32);
        let snan = |x: u32| x & 0x7fc0_0000 == 0x7f80_0000 && x & 0x003f_ffff != 0;
        let (fa, fb) = (f32::from_bits(a) as f64, f32::from_bits(b) as f64);
        for max in [false, true] {
            let ours = if max {
                fpu::max_s(a, b)
            } else {
                fpu::min_s(a, b)
            };
            let (want, flags) = reference_min_max(fa, fb, snan(a), snan(b), max);
            let want = want.map_or(fpu::CANONICAL_NAN_S, |x| (x as f32).to_bits());
            assert_eq!(
                ours,
                (want, flags),
                "f{}.s({a:#x}, {b:#x})",
                if max { "max" } else { "min" }
            );
        }
        let fs = f32::from_bits(a);
        assert_eq!(
            fpu::classify_s(a),
            reference_class(fs.classify(), fs.is_sign_negative(), snan(a)),
            "fclass.s({a:#x})"
        );
        n += 1;
    }
    for (a, b, _) in pairs(D, 6) {
        let snan = |x: u64| {
            x & 0x7ff8_0000_0000_0000 == 0x7ff0_0000_0000_0000 && x & 0x0007_ffff_ffff_ffff != 0
        };
        let (fa, fb) = (f64::from_bits(a), f64::from_bits(b));
        for max in [false, true] {
            let ours = if max {
                fpu::max_d(a, b)
            } else {
                fpu::min_d(a, b)
            };
            let (want, flags) = reference_min_max(fa, fb, snan(a), snan(b), max);
            let want = want.map_or(fpu::CANONICAL_NAN_D, f64::to_bits);
            assert_eq!(
                ours,
                (want, flags),
                "f{}.d({a:#x}, {b:#x})",
                if max { "max" } else { "min" }
            );
        }
        assert_eq!(
            fpu::classify_d(a),
            reference_class(fa.classify(), fa.is_sign_negative(), snan(a)),
            "fclass.d({a:#x})"
        );
        n += 1;
    }
    eprintln!("fmin/fmax/fclass: {n} operand pairs match the host reference");
}
