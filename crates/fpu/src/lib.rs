//! IEEE-754 arithmetic exactly as the RISC-V F and D extensions define it.
//!
//! Values are raw bit patterns (`u32` single, `u64` double). The hart does
//! NaN-boxing, sign injection, moves, `frm`/`fflags` and `mstatus.FS`; this
//! crate does the arithmetic and returns the exception flags it raised, in
//! the `fflags` layout, for the hart to OR into `fflags`.
//!
//! Rounding modes are the resolved `rm` values 0..=4 (the hart turns `dyn`
//! into `frm` and traps on reserved encodings before calling). Any other
//! value is treated as RNE rather than panicking.
//!
//! Every NaN result is the canonical NaN. Tininess is detected after
//! rounding. Integer results are the 64-bit value for `rd`, already
//! sign-extended as RV64 requires (the W forms, including `fcvt.wu`,
//! sign-extend bit 31).
//!
//! The implementation is pure Rust and keeps no state between calls, so
//! any number of harts may use it from any number of threads.

mod arith;
mod compare;
mod convert;
mod format;
mod round;

use convert::IntKind;
use format::{Double, Single};

/// Exception flags in the `fflags` layout (NV DZ OF UF NX from bit 4 down).
pub type Flags = u8;

/// Invalid operation.
pub const NV: Flags = 0x10;
/// Divide by zero.
pub const DZ: Flags = 0x08;
/// Overflow.
pub const OF: Flags = 0x04;
/// Underflow.
pub const UF: Flags = 0x02;
/// Inexact.
pub const NX: Flags = 0x01;

/// Round to nearest, ties to even.
pub const RNE: u8 = 0;
/// Round towards zero.
pub const RTZ: u8 = 1;
/// Round down (towards −∞).
pub const RDN: u8 = 2;
/// Round up (towards +∞).
pub const RUP: u8 = 3;
/// Round to nearest, ties to max magnitude.
pub const RMM: u8 = 4;

/// Canonical quiet NaN, single precision.
pub const CANONICAL_NAN_S: u32 = 0x7fc0_0000;
/// Canonical quiet NaN, double precision.
pub const CANONICAL_NAN_D: u64 = 0x7ff8_0000_0000_0000;

fn s(r: (u64, Flags)) -> (u32, Flags) {
    (r.0 as u32, r.1)
}

// ---- single precision -------------------------------------------------

/// fadd.s
pub fn add_s(a: u32, b: u32, rm: u8) -> (u32, Flags) {
    s(arith::add::<Single>(a as u64, b as u64, rm))
}
/// fsub.s
pub fn sub_s(a: u32, b: u32, rm: u8) -> (u32, Flags) {
    s(arith::sub::<Single>(a as u64, b as u64, rm))
}
/// fmul.s
pub fn mul_s(a: u32, b: u32, rm: u8) -> (u32, Flags) {
    s(arith::mul::<Single>(a as u64, b as u64, rm))
}
/// fdiv.s
pub fn div_s(a: u32, b: u32, rm: u8) -> (u32, Flags) {
    s(arith::div::<Single>(a as u64, b as u64, rm))
}
/// fsqrt.s
pub fn sqrt_s(a: u32, rm: u8) -> (u32, Flags) {
    s(arith::sqrt::<Single>(a as u64, rm))
}
/// fmadd.s: a×b+c, one rounding.
pub fn fmadd_s(a: u32, b: u32, c: u32, rm: u8) -> (u32, Flags) {
    s(arith::fma::<Single>(a as u64, b as u64, c as u64, rm))
}
/// fmsub.s: a×b−c.
pub fn fmsub_s(a: u32, b: u32, c: u32, rm: u8) -> (u32, Flags) {
    fmadd_s(a, b, c ^ 0x8000_0000, rm)
}
/// fnmsub.s: −(a×b)+c.
pub fn fnmsub_s(a: u32, b: u32, c: u32, rm: u8) -> (u32, Flags) {
    fmadd_s(a ^ 0x8000_0000, b, c, rm)
}
/// fnmadd.s: −(a×b)−c.
pub fn fnmadd_s(a: u32, b: u32, c: u32, rm: u8) -> (u32, Flags) {
    fmadd_s(a ^ 0x8000_0000, b, c ^ 0x8000_0000, rm)
}
/// fmin.s
pub fn min_s(a: u32, b: u32) -> (u32, Flags) {
    s(compare::min_max::<Single>(a as u64, b as u64, false))
}
/// fmax.s
pub fn max_s(a: u32, b: u32) -> (u32, Flags) {
    s(compare::min_max::<Single>(a as u64, b as u64, true))
}
/// feq.s (quiet)
pub fn eq_s(a: u32, b: u32) -> (bool, Flags) {
    compare::eq::<Single>(a as u64, b as u64)
}
/// flt.s (signaling)
pub fn lt_s(a: u32, b: u32) -> (bool, Flags) {
    compare::less::<Single>(a as u64, b as u64, false)
}
/// fle.s (signaling)
pub fn le_s(a: u32, b: u32) -> (bool, Flags) {
    compare::less::<Single>(a as u64, b as u64, true)
}
/// fclass.s
pub fn classify_s(a: u32) -> u64 {
    compare::classify::<Single>(a as u64)
}
/// fcvt.w.s
pub fn cvt_w_s(a: u32, rm: u8) -> (u64, Flags) {
    convert::float_to_int::<Single>(a as u64, rm, IntKind::W)
}
/// fcvt.wu.s (result sign-extended from bit 31)
pub fn cvt_wu_s(a: u32, rm: u8) -> (u64, Flags) {
    convert::float_to_int::<Single>(a as u64, rm, IntKind::Wu)
}
/// fcvt.l.s
pub fn cvt_l_s(a: u32, rm: u8) -> (u64, Flags) {
    convert::float_to_int::<Single>(a as u64, rm, IntKind::L)
}
/// fcvt.lu.s
pub fn cvt_lu_s(a: u32, rm: u8) -> (u64, Flags) {
    convert::float_to_int::<Single>(a as u64, rm, IntKind::Lu)
}
/// fcvt.s.w (uses the low 32 bits of `x`)
pub fn cvt_s_w(x: u64, rm: u8) -> (u32, Flags) {
    let v = x as u32 as i32;
    s(convert::int_to_float::<Single>(
        v < 0,
        v.unsigned_abs() as u64,
        rm,
    ))
}
/// fcvt.s.wu (uses the low 32 bits of `x`)
pub fn cvt_s_wu(x: u64, rm: u8) -> (u32, Flags) {
    s(convert::int_to_float::<Single>(false, x as u32 as u64, rm))
}
/// fcvt.s.l
pub fn cvt_s_l(x: u64, rm: u8) -> (u32, Flags) {
    let v = x as i64;
    s(convert::int_to_float::<Single>(v < 0, v.unsigned_abs(), rm))
}
/// fcvt.s.lu
pub fn cvt_s_lu(x: u64, rm: u8) -> (u32, Flags) {
    s(convert::int_to_float::<Single>(false, x, rm))
}

// ---- double precision -------------------------------------------------

/// fadd.d
pub fn add_d(a: u64, b: u64, rm: u8) -> (u64, Flags) {
    arith::add::<Double>(a, b, rm)
}
/// fsub.d
pub fn sub_d(a: u64, b: u64, rm: u8) -> (u64, Flags) {
    arith::sub::<Double>(a, b, rm)
}
/// fmul.d
pub fn mul_d(a: u64, b: u64, rm: u8) -> (u64, Flags) {
    arith::mul::<Double>(a, b, rm)
}
/// fdiv.d
pub fn div_d(a: u64, b: u64, rm: u8) -> (u64, Flags) {
    arith::div::<Double>(a, b, rm)
}
/// fsqrt.d
pub fn sqrt_d(a: u64, rm: u8) -> (u64, Flags) {
    arith::sqrt::<Double>(a, rm)
}
/// fmadd.d: a×b+c, one rounding.
pub fn fmadd_d(a: u64, b: u64, c: u64, rm: u8) -> (u64, Flags) {
    arith::fma::<Double>(a, b, c, rm)
}
/// fmsub.d: a×b−c.
pub fn fmsub_d(a: u64, b: u64, c: u64, rm: u8) -> (u64, Flags) {
    fmadd_d(a, b, c ^ (1 << 63), rm)
}
/// fnmsub.d: −(a×b)+c.
pub fn fnmsub_d(a: u64, b: u64, c: u64, rm: u8) -> (u64, Flags) {
    fmadd_d(a ^ (1 << 63), b, c, rm)
}
/// fnmadd.d: −(a×b)−c.
pub fn fnmadd_d(a: u64, b: u64, c: u64, rm: u8) -> (u64, Flags) {
    fmadd_d(a ^ (1 << 63), b, c ^ (1 << 63), rm)
}
/// fmin.d
pub fn min_d(a: u64, b: u64) -> (u64, Flags) {
    compare::min_max::<Double>(a, b, false)
}
/// fmax.d
pub fn max_d(a: u64, b: u64) -> (u64, Flags) {
    compare::min_max::<Double>(a, b, true)
}
/// feq.d (quiet)
pub fn eq_d(a: u64, b: u64) -> (bool, Flags) {
    compare::eq::<Double>(a, b)
}
/// flt.d (signaling)
pub fn lt_d(a: u64, b: u64) -> (bool, Flags) {
    compare::less::<Double>(a, b, false)
}
/// fle.d (signaling)
pub fn le_d(a: u64, b: u64) -> (bool, Flags) {
    compare::less::<Double>(a, b, true)
}
/// fclass.d
pub fn classify_d(a: u64) -> u64 {
    compare::classify::<Double>(a)
}
/// fcvt.w.d
pub fn cvt_w_d(a: u64, rm: u8) -> (u64, Flags) {
    convert::float_to_int::<Double>(a, rm, IntKind::W)
}
/// fcvt.wu.d (result sign-extended from bit 31)
pub fn cvt_wu_d(a: u64, rm: u8) -> (u64, Flags) {
    convert::float_to_int::<Double>(a, rm, IntKind::Wu)
}
/// fcvt.l.d
pub fn cvt_l_d(a: u64, rm: u8) -> (u64, Flags) {
    convert::float_to_int::<Double>(a, rm, IntKind::L)
}
/// fcvt.lu.d
pub fn cvt_lu_d(a: u64, rm: u8) -> (u64, Flags) {
    convert::float_to_int::<Double>(a, rm, IntKind::Lu)
}
/// fcvt.d.w (uses the low 32 bits of `x`; always exact)
pub fn cvt_d_w(x: u64, rm: u8) -> (u64, Flags) {
    let v = x as u32 as i32;
    convert::int_to_float::<Double>(v < 0, v.unsigned_abs() as u64, rm)
}
/// fcvt.d.wu (uses the low 32 bits of `x`; always exact)
pub fn cvt_d_wu(x: u64, rm: u8) -> (u64, Flags) {
    convert::int_to_float::<Double>(false, x as u32 as u64, rm)
}
/// fcvt.d.l
pub fn cvt_d_l(x: u64, rm: u8) -> (u64, Flags) {
    let v = x as i64;
    convert::int_to_float::<Double>(v < 0, v.unsigned_abs(), rm)
}
/// fcvt.d.lu
pub fn cvt_d_lu(x: u64, rm: u8) -> (u64, Flags) {
    convert::int_to_float::<Double>(false, x, rm)
}

// ---- between formats --------------------------------------------------

/// fcvt.s.d
pub fn cvt_s_d(a: u64, rm: u8) -> (u32, Flags) {
    s(convert::float_to_float::<Double, Single>(a, rm))
}
/// fcvt.d.s (always exact; `rm` is accepted for uniformity)
pub fn cvt_d_s(a: u32, rm: u8) -> (u64, Flags) {
    convert::float_to_float::<Single, Double>(a as u64, rm)
}
