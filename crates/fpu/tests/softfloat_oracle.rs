//! Differential test against Berkeley SoftFloat 3e built with its RISC-V
//! specialisation (canonical NaNs, RISC-V integer saturation values,
//! tininess after rounding): every operation, every rounding mode, result
//! bits and flags compared exactly.
//!
//! `HS_FPU_ORACLE_CASES` scales the number of random cases per operation
//! and rounding mode (default 20000); `HS_FPU_ORACLE_STRIDE` sets the step
//! of the sweep over all single-precision encodings (default 65521; 1 is
//! exhaustive).
#![cfg(all(target_arch = "x86_64", target_os = "linux"))]

use crate::common;

use common::{Fmt, Rng, D, ROUNDING_MODES, S};
use hs_fpu as fpu;
use softfloat_wrapper::{ExceptionFlags, Float, RoundingMode, F32, F64};

fn cases() -> usize {
    std::env::var("HS_FPU_ORACLE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

fn stride() -> usize {
    std::env::var("HS_FPU_ORACLE_STRIDE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&s| s > 0)
        .unwrap_or(65_521)
}

fn mode(rm: u8) -> RoundingMode {
    match rm {
        0 => RoundingMode::TiesToEven,
        1 => RoundingMode::TowardZero,
        2 => RoundingMode::TowardNegative,
        3 => RoundingMode::TowardPositive,
        4 => RoundingMode::TiesToAway,
        _ => unreachable!("test only uses 0..=4"),
    }
}

/// Runs `f` with SoftFloat's (thread-local) flags cleared and returns them.
fn sf<T>(f: impl FnOnce() -> T) -> (T, u8) {
    ExceptionFlags::from_bits(0).set();
    let r = f();
    let mut flags = ExceptionFlags::default();
    flags.get();
    (r, flags.to_bits())
}

fn s(x: u64) -> F32 {
    F32::from_bits(x as u32)
}
fn d(x: u64) -> F64 {
    F64::from_bits(x)
}

#[derive(Default)]
struct Tally {
    checked: u64,
    failures: Vec<String>,
}

impl Tally {
    fn check<T: PartialEq + std::fmt::Debug>(
        &mut self,
        what: &str,
        inputs: &[u64],
        rm: u8,
        ours: (T, u8),
        oracle: (T, u8),
    ) {
        self.checked += 1;
        if ours != oracle && self.failures.len() < 20 {
            let ins: Vec<String> = inputs.iter().map(|x| format!("{x:#x}")).collect();
            self.failures.push(format!(
                "{what}({}) rm={rm}: ours {:#x?} flags {:#04x}, softfloat {:#x?} flags {:#04x}",
                ins.join(", "),
                ours.0,
                ours.1,
                oracle.0,
                oracle.1
            ));
        }
    }
    fn finish(self, what: &str) {
        assert!(self.checked > 0);
        assert!(
            self.failures.is_empty(),
            "{what}: {} mismatches, first ones:\n{}",
            self.failures.len(),
            self.failures.join("\n")
        );
        eprintln!("{what}: {} cases agree with SoftFloat", self.checked);
    }
}

/// Operand tuples: all pairs of specials first, then biased random ones.
fn operands(fmt: Fmt, arity: usize, seed: u64) -> Vec<[u64; 3]> {
    let sp = fmt.specials();
    let mut v = Vec::new();
    match arity {
        1 => v.extend(sp.iter().map(|&a| [a, 0, 0])),
        2 => {
            for &a in &sp {
                v.extend(sp.iter().map(|&b| [a, b, 0]));
            }
        }
        _ => {
            for &a in &sp {
                for &b in &sp {
                    for &c in sp.iter().step_by(3) {
                        v.push([a, b, c]);
                    }
                }
            }
        }
    }
    let mut rng = Rng::new(seed);
    for _ in 0..cases() {
        let a = fmt.operand(&mut rng);
        let b = fmt.partner(&mut rng, a);
        let base = if rng.next() & 1 == 0 { a } else { b };
        let c = fmt.partner(&mut rng, base);
        v.push([a, b, c]);
    }
    v
}

macro_rules! binary {
    ($name:ident, $fmt:expr, $ours:path, $wrap:ident, $method:ident) => {
        #[test]
        fn $name() {
            let mut t = Tally::default();
            for rm in ROUNDING_MODES {
                for [a, b, _] in operands($fmt, 2, 0x1000 + rm as u64) {
                    let ours = $ours(a as _, b as _, rm);
                    let oracle = sf(|| $wrap(a).$method($wrap(b), mode(rm)).to_bits());
                    t.check(
                        stringify!($ours),
                        &[a, b],
                        rm,
                        (ours.0 as u64, ours.1),
                        (oracle.0 as u64, oracle.1),
                    );
                }
            }
            t.finish(stringify!($name));
        }
    };
}

binary!(add_s, S, fpu::add_s, s, add);
binary!(sub_s, S, fpu::sub_s, s, sub);
binary!(mul_s, S, fpu::mul_s, s, mul);
binary!(div_s, S, fpu::div_s, s, div);
binary!(add_d, D, fpu::add_d, d, add);
binary!(sub_d, D, fpu::sub_d, d, sub);
binary!(mul_d, D, fpu::mul_d, d, mul);
binary!(div_d, D, fpu::div_d, d, div);

/// fma operands where c nearly cancels a×b, the hardest case for alignment.
fn cancelling(fmt: Fmt, seed: u64, prod: impl Fn(u64, u64) -> u64) -> Vec<[u64; 3]> {
    let mut rng = Rng::new(seed);
    (0..cases())
        .map(|_| {
            let a = fmt.operand(&mut rng);
            let b = fmt.partner(&mut rng, a);
            let p = prod(a, b) ^ fmt.sign();
            let delta = rng.below(4);
            let c = if rng.next() & 1 == 0 {
                p.wrapping_add(delta)
            } else {
                p.wrapping_sub(delta)
            } & fmt.all_bits();
            [a, b, c]
        })
        .collect()
}

macro_rules! fused {
    ($name:ident, $fmt:expr, $ours:path, $wrap:ident, $neg_a:expr, $neg_c:expr) => {
        #[test]
        fn $name() {
            let fmt: Fmt = $fmt;
            let mut t = Tally::default();
            for rm in ROUNDING_MODES {
                let mut ops = operands(fmt, 3, 0x2000 + rm as u64);
                ops.extend(cancelling(fmt, 0x3000 + rm as u64, |a, b| {
                    $wrap(a).mul($wrap(b), RoundingMode::TowardZero).to_bits() as u64
                }));
                for [a, b, c] in ops {
                    let ours = $ours(a as _, b as _, c as _, rm);
                    let na = if $neg_a { a ^ fmt.sign() } else { a };
                    let nc = if $neg_c { c ^ fmt.sign() } else { c };
                    let oracle = sf(|| {
                        $wrap(na)
                            .fused_mul_add($wrap(b), $wrap(nc), mode(rm))
                            .to_bits()
                    });
                    t.check(
                        stringify!($ours),
                        &[a, b, c],
                        rm,
                        (ours.0 as u64, ours.1),
                        (oracle.0 as u64, oracle.1),
                    );
                }
            }
            t.finish(stringify!($name));
        }
    };
}

fused!(fmadd_s, S, fpu::fmadd_s, s, false, false);
fused!(fmsub_s, S, fpu::fmsub_s, s, false, true);
fused!(fnmsub_s, S, fpu::fnmsub_s, s, true, false);
fused!(fnmadd_s, S, fpu::fnmadd_s, s, true, true);
fused!(fmadd_d, D, fpu::fmadd_d, d, false, false);
fused!(fmsub_d, D, fpu::fmsub_d, d, false, true);
fused!(fnmsub_d, D, fpu::fnmsub_d, d, true, false);
fused!(fnmadd_d, D, fpu::fnmadd_d, d, true, true);

/// Unary operands: specials, random biased values, plus a strided sweep
/// over the whole single-precision encoding space.
fn unary_operands(fmt: Fmt, seed: u64) -> Vec<u64> {
    let mut v: Vec<u64> = operands(fmt, 1, seed).into_iter().map(|x| x[0]).collect();
    if fmt.frac_bits == 23 {
        v.extend((0..=u32::MAX as u64).step_by(stride()));
    }
    v
}

#[test]
fn sqrt_both() {
    let mut t = Tally::default();
    for rm in ROUNDING_MODES {
        for a in unary_operands(S, 0x4000 + rm as u64) {
            let ours = fpu::sqrt_s(a as u32, rm);
            let oracle = sf(|| s(a).sqrt(mode(rm)).to_bits());
            t.check("sqrt_s", &[a], rm, ours, oracle);
        }
        for a in unary_operands(D, 0x4100 + rm as u64) {
            let ours = fpu::sqrt_d(a, rm);
            let oracle = sf(|| d(a).sqrt(mode(rm)).to_bits());
            t.check("sqrt_d", &[a], rm, ours, oracle);
        }
    }
    t.finish("sqrt");
}

/// Float → integer, with the RV64 sign extension of W results applied to
/// SoftFloat's 32-bit answers.
#[test]
fn float_to_int() {
    let mut t = Tally::default();
    let sext = |x: u32| x as i32 as i64 as u64;
    for rm in ROUNDING_MODES {
        let mut ops = unary_operands(S, 0x5000 + rm as u64);
        // values around the integer limits and small values near halves
        let mut rng = Rng::new(0x5100 + rm as u64);
        for _ in 0..cases() {
            let e = S.bias() + rng.below(66);
            ops.push(S.pack(rng.next() & 1 == 1, e, rng.next()));
        }
        for a in ops {
            let m = mode(rm);
            t.check(
                "cvt_w_s",
                &[a],
                rm,
                fpu::cvt_w_s(a as u32, rm),
                sf(|| sext(s(a).to_i32(m, true) as u32)),
            );
            t.check(
                "cvt_wu_s",
                &[a],
                rm,
                fpu::cvt_wu_s(a as u32, rm),
                sf(|| sext(s(a).to_u32(m, true))),
            );
            t.check(
                "cvt_l_s",
                &[a],
                rm,
                fpu::cvt_l_s(a as u32, rm),
                sf(|| s(a).to_i64(m, true) as u64),
            );
            t.check(
                "cvt_lu_s",
                &[a],
                rm,
                fpu::cvt_lu_s(a as u32, rm),
                sf(|| s(a).to_u64(m, true)),
            );
        }
        let mut ops = unary_operands(D, 0x5200 + rm as u64);
        let mut rng = Rng::new(0x5300 + rm as u64);
        for _ in 0..cases() {
            let e = D.bias() + rng.below(66);
            ops.push(D.pack(rng.next() & 1 == 1, e, rng.next()));
        }
        for a in ops {
            let m = mode(rm);
            t.check(
                "cvt_w_d",
                &[a],
                rm,
                fpu::cvt_w_d(a, rm),
                sf(|| sext(d(a).to_i32(m, true) as u32)),
            );
            t.check(
                "cvt_wu_d",
                &[a],
                rm,
                fpu::cvt_wu_d(a, rm),
                sf(|| sext(d(a).to_u32(m, true))),
            );
            t.check(
                "cvt_l_d",
                &[a],
                rm,
                fpu::cvt_l_d(a, rm),
                sf(|| d(a).to_i64(m, true) as u64),
            );
            t.check(
                "cvt_lu_d",
                &[a],
                rm,
                fpu::cvt_lu_d(a, rm),
                sf(|| d(a).to_u64(m, true)),
            );
        }
    }
    t.finish("float_to_int");
}

fn integers(rng: &mut Rng) -> u64 {
    match rng.below(6) {
        0 => rng.next(),
        1 => rng.next() >> rng.below(64),
        2 => (rng.next() >> rng.below(64)).wrapping_neg(),
        3 => 1u64
            .wrapping_shl(rng.below(64) as u32)
            .wrapping_add(rng.below(5))
            .wrapping_sub(2),
        4 => (rng.next() as u32 as u64) | (rng.next() << 32), // garbage upper half for W forms
        _ => [
            0,
            1,
            u64::MAX,
            i64::MAX as u64,
            i64::MIN as u64,
            i32::MAX as u64,
            i32::MIN as i64 as u64,
            u32::MAX as u64,
        ][rng.below(8) as usize],
    }
}

#[test]
fn int_to_float() {
    let mut t = Tally::default();
    for rm in ROUNDING_MODES {
        let mut rng = Rng::new(0x6000 + rm as u64);
        let m = mode(rm);
        for _ in 0..cases() * 4 {
            let x = integers(&mut rng);
            let w = x as u32;
            let widen = |r: (u32, u8)| (r.0 as u64, r.1);
            t.check(
                "cvt_s_w",
                &[x],
                rm,
                widen(fpu::cvt_s_w(x, rm)),
                sf(|| F32::from_i32(w as i32, m).to_bits() as u64),
            );
            t.check(
                "cvt_s_wu",
                &[x],
                rm,
                widen(fpu::cvt_s_wu(x, rm)),
                sf(|| F32::from_u32(w, m).to_bits() as u64),
            );
            t.check(
                "cvt_s_l",
                &[x],
                rm,
                widen(fpu::cvt_s_l(x, rm)),
                sf(|| F32::from_i64(x as i64, m).to_bits() as u64),
            );
            t.check(
                "cvt_s_lu",
                &[x],
                rm,
                widen(fpu::cvt_s_lu(x, rm)),
                sf(|| F32::from_u64(x, m).to_bits() as u64),
            );
            t.check(
                "cvt_d_w",
                &[x],
                rm,
                fpu::cvt_d_w(x, rm),
                sf(|| F64::from_i32(w as i32, m).to_bits()),
            );
            t.check(
                "cvt_d_wu",
                &[x],
                rm,
                fpu::cvt_d_wu(x, rm),
                sf(|| F64::from_u32(w, m).to_bits()),
            );
            t.check(
                "cvt_d_l",
                &[x],
                rm,
                fpu::cvt_d_l(x, rm),
                sf(|| F64::from_i64(x as i64, m).to_bits()),
            );
            t.check(
                "cvt_d_lu",
                &[x],
                rm,
                fpu::cvt_d_lu(x, rm),
                sf(|| F64::from_u64(x, m).to_bits()),
            );
        }
    }
    t.finish("int_to_float");
}

#[test]
fn float_to_float() {
    let mut t = Tally::default();
    for rm in ROUNDING_MODES {
        let m = mode(rm);
        let mut ds = unary_operands(D, 0x7000 + rm as u64);
        // doubles in and around the single-precision range
        let mut rng = Rng::new(0x7100 + rm as u64);
        for _ in 0..cases() {
            let e = D.bias() - 160 + rng.below(300);
            ds.push(D.pack(rng.next() & 1 == 1, e, rng.next()));
        }
        for a in ds {
            let ours = fpu::cvt_s_d(a, rm);
            let oracle = sf(|| d(a).to_f32(m).to_bits());
            t.check(
                "cvt_s_d",
                &[a],
                rm,
                (ours.0 as u64, ours.1),
                (oracle.0 as u64, oracle.1),
            );
        }
        for a in unary_operands(S, 0x7200 + rm as u64) {
            t.check(
                "cvt_d_s",
                &[a],
                rm,
                fpu::cvt_d_s(a as u32, rm),
                sf(|| s(a).to_f64(m).to_bits()),
            );
        }
    }
    t.finish("float_to_float");
}

#[test]
fn compares() {
    let mut t = Tally::default();
    for [a, b, _] in operands(S, 2, 0x8000) {
        let (x, y) = (s(a), s(b));
        t.check(
            "eq_s",
            &[a, b],
            0,
            fpu::eq_s(a as u32, b as u32),
            sf(|| x.eq(y)),
        );
        t.check(
            "lt_s",
            &[a, b],
            0,
            fpu::lt_s(a as u32, b as u32),
            sf(|| x.lt(y)),
        );
        t.check(
            "le_s",
            &[a, b],
            0,
            fpu::le_s(a as u32, b as u32),
            sf(|| x.le(y)),
        );
    }
    for [a, b, _] in operands(D, 2, 0x8100) {
        let (x, y) = (d(a), d(b));
        t.check("eq_d", &[a, b], 0, fpu::eq_d(a, b), sf(|| x.eq(y)));
        t.check("lt_d", &[a, b], 0, fpu::lt_d(a, b), sf(|| x.lt(y)));
        t.check("le_d", &[a, b], 0, fpu::le_d(a, b), sf(|| x.le(y)));
    }
    t.finish("compares");
}
