//! Two machines on two threads must not see each other's rounding mode or
//! flags. Two threads hammer inexact operations at the same time, one in
//! RUP and one in RDN (where every inexact result differs), and check every
//! result and flag set against answers computed beforehand on one thread.

use crate::common;

use common::{Rng, D, S};
use hs_fpu as fpu;
use std::sync::{Arc, Barrier};

type Answer = (u64, u8);

fn workload(rm: u8) -> Vec<Answer> {
    let mut rng = Rng::new(0xfeed);
    let mut out = Vec::new();
    for _ in 0..20_000 {
        let (a, b, c) = (
            S.operand(&mut rng) as u32,
            S.operand(&mut rng) as u32,
            S.operand(&mut rng) as u32,
        );
        let (x, y) = (D.operand(&mut rng), D.operand(&mut rng));
        let w = |r: (u32, u8)| (r.0 as u64, r.1);
        out.push(w(fpu::add_s(a, b, rm)));
        out.push(w(fpu::div_s(a, b, rm)));
        out.push(w(fpu::fmadd_s(a, b, c, rm)));
        out.push(w(fpu::sqrt_s(a, rm)));
        out.push(fpu::mul_d(x, y, rm));
        out.push(fpu::div_d(x, y, rm));
        out.push(fpu::cvt_l_d(x, rm));
        out.push(w(fpu::cvt_s_d(x, rm)));
    }
    out
}

#[test]
fn two_threads_different_rounding_modes() {
    let expected_up = Arc::new(workload(fpu::RUP));
    let expected_down = Arc::new(workload(fpu::RDN));
    let differing = expected_up
        .iter()
        .zip(expected_down.iter())
        .filter(|(u, d)| u != d)
        .count();
    assert!(
        differing > 50_000,
        "workload must be sensitive to the rounding mode ({differing} differ)"
    );

    let barrier = Arc::new(Barrier::new(2));
    let spawn = |rm: u8, expected: Arc<Vec<Answer>>| {
        let barrier = barrier.clone();
        std::thread::spawn(move || {
            barrier.wait();
            let mut mismatches = 0usize;
            for _round in 0..10 {
                let got = workload(rm);
                mismatches += got
                    .iter()
                    .zip(expected.iter())
                    .filter(|(g, e)| g != e)
                    .count();
            }
            mismatches
        })
    };
    let up = spawn(fpu::RUP, expected_up.clone());
    let down = spawn(fpu::RDN, expected_down.clone());
    assert_eq!(
        up.join().expect("RUP thread"),
        0,
        "RUP thread saw foreign state"
    );
    assert_eq!(
        down.join().expect("RDN thread"),
        0,
        "RDN thread saw foreign state"
    );
}
