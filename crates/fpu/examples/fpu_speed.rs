//! Rough host cost per call of the main operations, with SoftFloat 3e for
//! comparison where it builds (x86_64 Linux). Host time is only measured
//! here; nothing the guest sees depends on it.
//!
//! `cargo run --release -p hs-fpu --example fpu_speed`

use hs_fpu as fpu;
use std::hint::black_box;
use std::time::Instant;

const N: usize = 4096;

fn operands() -> (Vec<u32>, Vec<u64>) {
    // SplitMix64-spread finite operands of moderate size
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let s = (0..N)
        .map(|_| (next() as u32 & 0x807f_ffff) | ((100 + (next() % 50) as u32) << 23))
        .collect();
    let d = (0..N)
        .map(|_| (next() & 0x800f_ffff_ffff_ffff) | ((1000 + next() % 50) << 52))
        .collect();
    (s, d)
}

fn time(name: &str, mut f: impl FnMut(usize) -> u64) {
    let rounds = 400;
    let mut sink = 0u64;
    let start = Instant::now();
    for _ in 0..rounds {
        for i in 0..N {
            sink = sink.wrapping_add(f(i));
        }
    }
    let ns = start.elapsed().as_nanos() as f64 / (rounds * N) as f64;
    black_box(sink);
    println!("{name:<28} {ns:6.1} ns/op");
}

fn main() {
    let (s, d) = operands();
    let j = |i: usize| (i * 7 + 3) % N;
    let k = |i: usize| (i * 13 + 5) % N;
    time("hs-fpu add_s", |i| fpu::add_s(s[i], s[j(i)], 0).0 as u64);
    time("hs-fpu mul_s", |i| fpu::mul_s(s[i], s[j(i)], 0).0 as u64);
    time("hs-fpu div_s", |i| fpu::div_s(s[i], s[j(i)], 0).0 as u64);
    time("hs-fpu sqrt_s", |i| {
        fpu::sqrt_s(s[i] & 0x7fff_ffff, 0).0 as u64
    });
    time("hs-fpu fmadd_s", |i| {
        fpu::fmadd_s(s[i], s[j(i)], s[k(i)], 0).0 as u64
    });
    time("hs-fpu add_d", |i| fpu::add_d(d[i], d[j(i)], 0).0);
    time("hs-fpu mul_d", |i| fpu::mul_d(d[i], d[j(i)], 0).0);
    time("hs-fpu div_d", |i| fpu::div_d(d[i], d[j(i)], 0).0);
    time("hs-fpu sqrt_d", |i| fpu::sqrt_d(d[i] & !(1 << 63), 0).0);
    time("hs-fpu fmadd_d", |i| {
        fpu::fmadd_d(d[i], d[j(i)], d[k(i)], 0).0
    });
    time("hs-fpu cvt_l_d", |i| fpu::cvt_l_d(d[i], 1).0);
    time("hs-fpu cvt_d_l", |i| fpu::cvt_d_l(d[i], 0).0);
    time("hs-fpu lt_d", |i| fpu::lt_d(d[i], d[j(i)]).0 as u64);
    softfloat::compare(&s, &d);
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod softfloat {
    use super::{time, N};
    use softfloat_wrapper::{ExceptionFlags, Float, RoundingMode, F32, F64};

    /// Same work as a hart would do per instruction: set rm, clear flags,
    /// operate, read flags.
    fn op<T>(f: impl FnOnce() -> T) -> (T, u8) {
        ExceptionFlags::from_bits(0).set();
        let r = f();
        let mut fl = ExceptionFlags::default();
        fl.get();
        (r, fl.to_bits())
    }

    pub fn compare(s: &[u32], d: &[u64]) {
        let rne = RoundingMode::TiesToEven;
        let j = |i: usize| (i * 7 + 3) % N;
        let k = |i: usize| (i * 13 + 5) % N;
        time("softfloat add_s", |i| {
            op(|| F32::from_bits(s[i]).add(F32::from_bits(s[j(i)]), rne))
                .0
                .to_bits() as u64
        });
        time("softfloat div_s", |i| {
            op(|| F32::from_bits(s[i]).div(F32::from_bits(s[j(i)]), rne))
                .0
                .to_bits() as u64
        });
        time("softfloat add_d", |i| {
            op(|| F64::from_bits(d[i]).add(F64::from_bits(d[j(i)]), rne))
                .0
                .to_bits()
        });
        time("softfloat div_d", |i| {
            op(|| F64::from_bits(d[i]).div(F64::from_bits(d[j(i)]), rne))
                .0
                .to_bits()
        });
        time("softfloat sqrt_d", |i| {
            op(|| F64::from_bits(d[i] & !(1 << 63)).sqrt(rne))
                .0
                .to_bits()
        });
        time("softfloat fmadd_d", |i| {
            op(|| {
                F64::from_bits(d[i]).fused_mul_add(
                    F64::from_bits(d[j(i)]),
                    F64::from_bits(d[k(i)]),
                    rne,
                )
            })
            .0
            .to_bits()
        });
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
mod softfloat {
    pub fn compare(_: &[u32], _: &[u64]) {
        println!("(SoftFloat comparison only on x86_64 Linux)");
    }
}
