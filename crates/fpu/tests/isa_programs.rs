//! The bare-metal F/D test programs in `tests/isa/fp/`.
//!
//! Most of them are generated here: operands are chosen by hand (specials)
//! or by a deterministic search for inputs whose result differs between
//! rounding modes, and the expected results come from this crate. Running
//! the programs on QEMU (whose FPU is independent of this crate) then checks
//! both the programs and the crate; on hartscope they check the hart.
//!
//! - `generated_programs_are_current` fails if a generated file differs from
//!   what the generator produces; `HS_FPU_REGEN_ISA=1` rewrites them.
//! - `programs_pass_on_qemu` assembles every `tests/isa/fp/*.S` with
//!   `riscv64-unknown-elf-gcc` and runs it on `qemu-system-riscv64 -M spike`.
//!   It fails if the tools are missing, unless `HS_FPU_SKIP_QEMU=1`.

use crate::common;

use hs_test_support::isa;

use common::Rng;
use hs_fpu as fpu;
use hs_fpu::{Flags, RDN, RMM, RNE, RTZ, RUP};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

// ---- operation table ---------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum K {
    S,
    D,
    X,
}

type Eval = fn(&[u64], u8) -> (u64, Flags);

struct Op {
    mnemonic: &'static str,
    dest: K,
    srcs: &'static [K],
    /// Whether the assembler takes a rounding-mode operand.
    has_rm: bool,
    eval: Eval,
}

fn s1(r: (u32, Flags)) -> (u64, Flags) {
    (r.0 as u64, r.1)
}
fn b1(r: (bool, Flags)) -> (u64, Flags) {
    (r.0 as u64, r.1)
}

macro_rules! op {
    ($m:literal, $dest:ident, [$($src:ident),*], $rm:literal, $eval:expr) => {
        Op { mnemonic: $m, dest: K::$dest, srcs: &[$(K::$src),*], has_rm: $rm, eval: $eval }
    };
}

const RM_NAMES: [&str; 5] = ["rne", "rtz", "rdn", "rup", "rmm"];
const MODES: [u8; 5] = [RNE, RTZ, RDN, RUP, RMM];

// ---- value helpers -----------------------------------------------------

#[derive(Clone, Copy)]
struct Fp {
    k: K,
}

impl Fp {
    fn sign(self) -> u64 {
        if self.k == K::S {
            0x8000_0000
        } else {
            1 << 63
        }
    }
    fn encode(self, x: f64) -> u64 {
        match self.k {
            K::S => {
                let v = x as f32;
                assert_eq!(v as f64, x, "{x} is not exact in single precision");
                v.to_bits() as u64
            }
            _ => x.to_bits(),
        }
    }
    fn neg(self, x: u64) -> u64 {
        x ^ self.sign()
    }
    fn qnan_payload(self) -> u64 {
        if self.k == K::S {
            0x7fc1_2345
        } else {
            0x7ff8_0000_dead_beef
        }
    }
    fn snan(self) -> u64 {
        if self.k == K::S {
            0x7f80_0001
        } else {
            0x7ff0_0000_0000_0001
        }
    }
    fn inf(self) -> u64 {
        if self.k == K::S {
            0x7f80_0000
        } else {
            0x7ff0_0000_0000_0000
        }
    }
    fn max(self) -> u64 {
        if self.k == K::S {
            0x7f7f_ffff
        } else {
            0x7fef_ffff_ffff_ffff
        }
    }
    fn min_normal(self) -> u64 {
        if self.k == K::S {
            0x0080_0000
        } else {
            0x0010_0000_0000_0000
        }
    }
    fn min_sub(self) -> u64 {
        1
    }
    fn one_minus_ulp(self) -> u64 {
        if self.k == K::S {
            0x3f7f_ffff
        } else {
            0x3fef_ffff_ffff_ffff
        }
    }
    fn frac_bits(self) -> u32 {
        if self.k == K::S {
            23
        } else {
            52
        }
    }
    fn bias(self) -> u64 {
        if self.k == K::S {
            127
        } else {
            1023
        }
    }
    /// A random value of moderate size whose significand keeps only its
    /// top few bits, so sums, products and conversions hit exact ties.
    fn moderate(self, rng: &mut Rng, exp_spread: u64) -> u64 {
        let fb = self.frac_bits();
        let keep = [3, 6, fb / 2, fb][rng.below(4) as usize];
        let frac = (rng.next() & ((1 << fb) - 1)) >> (fb - keep) << (fb - keep);
        let exp = self.bias() + rng.below(2 * exp_spread + 1) - exp_spread;
        let sign = if rng.next() & 1 == 1 { self.sign() } else { 0 };
        sign | (exp << fb) | frac
    }
}

const S: Fp = Fp { k: K::S };
const D: Fp = Fp { k: K::D };

fn describe(k: K, bits: u64) -> String {
    match k {
        K::X => format!("{}", bits as i64),
        K::S | K::D => {
            let (x, nan, quiet) = if k == K::S {
                let f = f32::from_bits(bits as u32);
                (f as f64, f.is_nan(), bits & 0x0040_0000 != 0)
            } else {
                let f = f64::from_bits(bits);
                (f, f.is_nan(), bits & 0x0008_0000_0000_0000 != 0)
            };
            if nan {
                let sign_bit = Fp { k }.sign();
                let sign = if bits & sign_bit != 0 { "-" } else { "" };
                format!("{sign}{}", if quiet { "qNaN" } else { "sNaN" })
            } else if k == K::S {
                format!("{:e}", f32::from_bits(bits as u32))
            } else {
                format!("{x:e}")
            }
        }
    }
}

fn flag_names(f: Flags) -> String {
    let names: Vec<&str> = [
        (fpu::NV, "NV"),
        (fpu::DZ, "DZ"),
        (fpu::OF, "OF"),
        (fpu::UF, "UF"),
        (fpu::NX, "NX"),
    ]
    .iter()
    .filter(|(bit, _)| f & bit != 0)
    .map(|&(_, n)| n)
    .collect();
    if names.is_empty() {
        "-".into()
    } else {
        names.join("|")
    }
}

// ---- program builder ---------------------------------------------------

struct Program {
    file: &'static str,
    body: String,
    count: u32,
}

impl Program {
    fn new(file: &'static str, title: &str) -> Self {
        let mut body = String::new();
        writeln!(body, "/* {title}").unwrap();
        writeln!(body, " *").unwrap();
        writeln!(
            body,
            " * GENERATED by crates/fpu/tests/isa_programs.rs (HS_FPU_REGEN_ISA=1) from"
        )
        .unwrap();
        writeln!(
            body,
            " * hs-fpu; do not edit. Verified on qemu-system-riscv64 -M spike."
        )
        .unwrap();
        writeln!(
            body,
            " * Line format: TEST_<dest>_<srcs> num, op, rm, frm, fflags, result, inputs."
        )
        .unwrap();
        writeln!(
            body,
            " * rm \"dyn\" takes frm; a static rm runs with frm set to a mode that would"
        )
        .unwrap();
        writeln!(body, " * give a different result. */").unwrap();
        writeln!(body).unwrap();
        writeln!(body, "#include \"fp_test.h\"").unwrap();
        writeln!(body).unwrap();
        writeln!(body, "FP_TEST_BEGIN").unwrap();
        Program {
            file,
            body,
            count: 0,
        }
    }

    fn section(&mut self, text: &str) {
        writeln!(self.body, "\n    /* {text} */").unwrap();
    }

    /// Emits one test. `rm`: `Some(m)` = static mode m, `None` = dyn (or
    /// no rm operand for ops without one); `frm` is what frm holds.
    fn test(&mut self, op: &Op, rm: Option<u8>, frm: u8, inputs: &[u64]) {
        assert_eq!(inputs.len(), op.srcs.len(), "{}", op.mnemonic);
        self.count += 1;
        assert!(
            self.count <= 250,
            "{}: more than 250 tests; split the program",
            self.file
        );
        let effective = rm.unwrap_or(frm);
        let (want, flags) = (op.eval)(inputs, effective);
        let rm_text = match (op.has_rm, rm) {
            (false, _) => "",
            (true, Some(m)) => RM_NAMES[m as usize],
            (true, None) => "dyn",
        };
        let shape: String = std::iter::once(op.dest)
            .chain(op.srcs.iter().copied())
            .enumerate()
            .fold(String::from("TEST_"), |mut acc, (i, k)| {
                if i == 1 {
                    acc.push('_');
                }
                acc.push_str(match k {
                    K::S => "S",
                    K::D => "D",
                    K::X => "X",
                });
                acc
            });
        let ins: Vec<String> = inputs.iter().map(|x| format!("{x:#x}")).collect();
        let want_text = if op.dest == K::S {
            format!("{:#010x}", want)
        } else {
            format!("{want:#x}")
        };
        let pretty_in: Vec<String> = op
            .srcs
            .iter()
            .zip(inputs)
            .map(|(&k, &x)| describe(k, x))
            .collect();
        writeln!(
            self.body,
            "    {shape} {}, {}, {rm_text}, {frm}, {flags:#04x}, {want_text}, {}\n        /* {}({}) {} = {} {} */",
            self.count,
            op.mnemonic,
            ins.join(", "),
            op.mnemonic,
            pretty_in.join(", "),
            if op.has_rm { RM_NAMES[effective as usize] } else { "" },
            describe(op.dest, want),
            flag_names(flags),
        )
        .unwrap();
    }

    /// The same inputs in every rounding mode, once through the static rm
    /// field (with frm set to a decoy mode) and once through frm.
    fn all_modes(&mut self, op: &Op, inputs: &[u64]) {
        let results: Vec<(u64, Flags)> = MODES.iter().map(|&m| (op.eval)(inputs, m)).collect();
        for (i, &m) in MODES.iter().enumerate() {
            let decoy = (1..5)
                .map(|d| (i + d) % 5)
                .find(|&j| results[j] != results[i])
                .unwrap_or((i + 1) % 5) as u8;
            self.test(op, Some(m), decoy, inputs);
            self.test(op, None, m, inputs);
        }
    }

    /// Up to `max` input tuples from `candidates` chosen greedily so that
    /// together their results tell apart as many pairs of rounding modes as
    /// possible; then every mode is tested on each.
    fn rounding_sweep(&mut self, op: &Op, candidates: &[Vec<u64>], max: usize) {
        let mut covered = [[false; 5]; 5];
        let mut chosen: Vec<&Vec<u64>> = Vec::new();
        while chosen.len() < max {
            let gain = |c: &Vec<u64>| {
                let r: Vec<(u64, Flags)> = MODES.iter().map(|&m| (op.eval)(c, m)).collect();
                let mut n = 0;
                for i in 0..5 {
                    for j in i + 1..5 {
                        n += (!covered[i][j] && r[i] != r[j]) as usize;
                    }
                }
                (n, r)
            };
            let Some((best, r)) = candidates
                .iter()
                .map(|c| (c, gain(c)))
                .max_by_key(|(_, (n, _))| *n)
                .filter(|(_, (n, _))| *n > 0)
                .map(|(c, (_, r))| (c, r))
            else {
                break;
            };
            for i in 0..5 {
                for j in i + 1..5 {
                    covered[i][j] |= r[i] != r[j];
                }
            }
            chosen.push(best);
        }
        let pairs: usize = (0..5)
            .map(|i| (i + 1..5).filter(|&j| covered[i][j]).count())
            .sum();
        self.section(&format!(
            "{}: every rounding mode, static and dynamic; these inputs tell apart {pairs} of the 10 mode pairs",
            op.mnemonic
        ));
        assert!(
            !chosen.is_empty(),
            "{}: no rounding-sensitive inputs found",
            op.mnemonic
        );
        for c in chosen {
            self.all_modes(op, c);
        }
    }

    fn finish(mut self) -> (&'static str, String) {
        writeln!(self.body, "\nFP_TEST_END").unwrap();
        (self.file, self.body)
    }
}

fn candidates(srcs: &[K], seed: u64, exp_spread: u64) -> Vec<Vec<u64>> {
    let mut rng = Rng::new(seed);
    (0..3000)
        .map(|_| {
            srcs.iter()
                .map(|&k| match k {
                    K::S => S.moderate(&mut rng, exp_spread),
                    K::D => D.moderate(&mut rng, exp_spread),
                    K::X => {
                        let x = rng.next() >> rng.below(40);
                        if rng.next() & 1 == 1 {
                            x.wrapping_neg()
                        } else {
                            x
                        }
                    }
                })
                .collect()
        })
        .collect()
}

// ---- the programs ------------------------------------------------------

fn arith_program(fp: Fp) -> (&'static str, String) {
    let (file, p) = if fp.k == K::S {
        ("f_arith.S", "s")
    } else {
        ("d_arith.S", "d")
    };
    let mut prog = Program::new(
        file,
        &format!(
            "RV64 {}: add, sub, mul, div, sqrt in every rounding mode, with fflags",
            if fp.k == K::S { "F" } else { "D" }
        ),
    );
    let ops: [Op; 5] = if fp.k == K::S {
        [
            op!("fadd.s", S, [S, S], true, |v, rm| s1(fpu::add_s(
                v[0] as u32,
                v[1] as u32,
                rm
            ))),
            op!("fsub.s", S, [S, S], true, |v, rm| s1(fpu::sub_s(
                v[0] as u32,
                v[1] as u32,
                rm
            ))),
            op!("fmul.s", S, [S, S], true, |v, rm| s1(fpu::mul_s(
                v[0] as u32,
                v[1] as u32,
                rm
            ))),
            op!("fdiv.s", S, [S, S], true, |v, rm| s1(fpu::div_s(
                v[0] as u32,
                v[1] as u32,
                rm
            ))),
            op!("fsqrt.s", S, [S], true, |v, rm| s1(fpu::sqrt_s(
                v[0] as u32,
                rm
            ))),
        ]
    } else {
        [
            op!("fadd.d", D, [D, D], true, |v, rm| fpu::add_d(
                v[0], v[1], rm
            )),
            op!("fsub.d", D, [D, D], true, |v, rm| fpu::sub_d(
                v[0], v[1], rm
            )),
            op!("fmul.d", D, [D, D], true, |v, rm| fpu::mul_d(
                v[0], v[1], rm
            )),
            op!("fdiv.d", D, [D, D], true, |v, rm| fpu::div_d(
                v[0], v[1], rm
            )),
            op!("fsqrt.d", D, [D], true, |v, rm| fpu::sqrt_d(v[0], rm)),
        ]
    };
    let one = fp.encode(1.0);
    let two = fp.encode(2.0);
    let zero = 0;
    let nzero = fp.neg(0);
    let (add, sub, mul, div, sqrt) = (&ops[0], &ops[1], &ops[2], &ops[3], &ops[4]);
    let seed = if fp.k == K::S { 100 } else { 200 };
    let mut cands = candidates(&[fp.k, fp.k], seed, 2);
    // exponent gaps around the precision make ties in add/sub
    let mut rng = Rng::new(seed + 1);
    for _ in 0..2000 {
        let a = fp.moderate(&mut rng, 1);
        let gap = (fp.frac_bits() as u64 + 1 + rng.below(3)) << fp.frac_bits();
        let b = fp.moderate(&mut rng, 1).wrapping_sub(gap);
        cands.push(vec![a, b]);
    }
    for o in [add, sub, mul, div] {
        prog.rounding_sweep(o, &cands, 3);
    }
    prog.rounding_sweep(sqrt, &candidates(&[fp.k], seed + 2, 8), 3);

    prog.section(&format!(
        "fadd.{p}/fsub.{p}: NaNs, infinities, signed zeros, overflow, subnormals"
    ));
    for (a, b, rm) in [
        (fp.qnan_payload(), one, RNE),
        (one, fp.snan(), RNE),
        (fp.inf(), fp.neg(fp.inf()), RNE),
        (zero, nzero, RNE),
        (zero, nzero, RDN),
        (nzero, nzero, RNE),
        (fp.max(), fp.max(), RNE),
        (fp.max(), fp.max(), RTZ),
        (fp.min_sub(), fp.min_sub(), RNE),
        (fp.min_normal(), fp.neg(fp.min_sub()), RNE),
    ] {
        prog.test(add, None, rm, &[a, b]);
    }
    for (a, b, rm) in [
        (fp.inf(), fp.inf(), RNE),
        (one, one, RNE),
        (one, one, RDN),
        (fp.neg(fp.qnan_payload()), fp.snan(), RUP),
    ] {
        prog.test(sub, None, rm, &[a, b]);
    }
    prog.section(&format!(
        "fmul.{p}: invalid, overflow by direction, underflow after rounding"
    ));
    for (a, b, rm) in [
        (fp.inf(), zero, RNE),
        (nzero, fp.neg(fp.inf()), RNE),
        (fp.max(), two, RUP),
        (fp.max(), two, RTZ),
        (fp.neg(fp.max()), two, RDN),
        (fp.neg(fp.max()), two, RUP),
        (fp.one_minus_ulp(), fp.min_normal(), RNE),
        (fp.min_sub(), fp.encode(0.5), RNE),
        (fp.min_sub(), fp.encode(0.5), RUP),
        (nzero, one, RNE),
        (fp.snan(), zero, RNE),
    ] {
        prog.test(mul, None, rm, &[a, b]);
    }
    prog.section(&format!(
        "fdiv.{p}: division by zero, invalid, exact, overflow, underflow"
    ));
    for (a, b, rm) in [
        (one, zero, RNE),
        (one, nzero, RNE),
        (fp.neg(one), zero, RTZ),
        (zero, zero, RNE),
        (fp.inf(), fp.inf(), RNE),
        (fp.inf(), zero, RNE),
        (zero, one, RNE),
        (one, fp.inf(), RNE),
        (fp.max(), fp.encode(0.5), RNE),
        (fp.min_normal(), fp.encode(3.0), RNE),
        (fp.encode(6.0), fp.encode(3.0), RNE),
    ] {
        prog.test(div, None, rm, &[a, b]);
    }
    prog.section(&format!(
        "fsqrt.{p}: negative operands, -0, infinities, NaNs, subnormals"
    ));
    for (a, rm) in [
        (fp.neg(one), RNE),
        (nzero, RNE),
        (fp.inf(), RNE),
        (fp.neg(fp.inf()), RNE),
        (fp.neg(fp.min_sub()), RNE),
        (fp.encode(4.0), RNE),
        (fp.snan(), RNE),
        (fp.qnan_payload(), RNE),
        (fp.min_sub(), RNE),
        (fp.max(), RTZ),
    ] {
        prog.test(sqrt, None, rm, &[a]);
    }
    prog.finish()
}

fn fma_program(fp: Fp) -> (&'static str, String) {
    let (file, p) = if fp.k == K::S {
        ("f_fma.S", "s")
    } else {
        ("d_fma.S", "d")
    };
    let mut prog = Program::new(
        file,
        &format!(
            "RV64 {}: fmadd, fmsub, fnmsub, fnmadd in every rounding mode, with fflags",
            if fp.k == K::S { "F" } else { "D" }
        ),
    );
    let ops: [Op; 4] = if fp.k == K::S {
        [
            op!("fmadd.s", S, [S, S, S], true, |v, rm| s1(fpu::fmadd_s(
                v[0] as u32,
                v[1] as u32,
                v[2] as u32,
                rm
            ))),
            op!("fmsub.s", S, [S, S, S], true, |v, rm| s1(fpu::fmsub_s(
                v[0] as u32,
                v[1] as u32,
                v[2] as u32,
                rm
            ))),
            op!("fnmsub.s", S, [S, S, S], true, |v, rm| s1(fpu::fnmsub_s(
                v[0] as u32,
                v[1] as u32,
                v[2] as u32,
                rm
            ))),
            op!("fnmadd.s", S, [S, S, S], true, |v, rm| s1(fpu::fnmadd_s(
                v[0] as u32,
                v[1] as u32,
                v[2] as u32,
                rm
            ))),
        ]
    } else {
        [
            op!("fmadd.d", D, [D, D, D], true, |v, rm| fpu::fmadd_d(
                v[0], v[1], v[2], rm
            )),
            op!("fmsub.d", D, [D, D, D], true, |v, rm| fpu::fmsub_d(
                v[0], v[1], v[2], rm
            )),
            op!("fnmsub.d", D, [D, D, D], true, |v, rm| fpu::fnmsub_d(
                v[0], v[1], v[2], rm
            )),
            op!("fnmadd.d", D, [D, D, D], true, |v, rm| fpu::fnmadd_d(
                v[0], v[1], v[2], rm
            )),
        ]
    };
    let seed = if fp.k == K::S { 300 } else { 400 };
    let cands = candidates(&[fp.k, fp.k, fp.k], seed, 2);
    for o in &ops {
        prog.rounding_sweep(o, &cands, 3);
    }
    let one = fp.encode(1.0);
    let zero = 0;
    let nzero = fp.neg(0);
    let three = fp.encode(3.0);
    let third = if fp.k == K::S {
        fpu::div_s(one as u32, three as u32, RNE).0 as u64
    } else {
        fpu::div_d(one, three, RNE).0
    };
    prog.section(&format!(
        "fmadd.{p} family: inf*0 with a quiet NaN addend is invalid (RISC-V), NaNs, signed zeros"
    ));
    let [fmadd, fmsub, fnmsub, fnmadd] = &ops;
    for (a, b, c, rm) in [
        (fp.inf(), zero, fp.qnan_payload(), RNE),
        (zero, fp.neg(fp.inf()), fp.qnan_payload(), RNE),
        (fp.qnan_payload(), zero, one, RNE),
        (one, one, fp.snan(), RNE),
        (fp.inf(), one, fp.neg(fp.inf()), RNE),
        (fp.inf(), one, fp.inf(), RNE),
        (zero, one, nzero, RNE),
        (zero, one, nzero, RDN),
        (third, three, fp.neg(one), RNE),
        (fp.min_sub(), fp.min_sub(), one, RUP),
        (fp.max(), fp.max(), fp.neg(fp.inf()), RNE),
        (fp.max(), fp.encode(2.0), fp.neg(fp.max()), RNE),
    ] {
        prog.test(fmadd, None, rm, &[a, b, c]);
    }
    for (a, b, c, rm) in [
        (fp.inf(), zero, fp.qnan_payload(), RNE),
        (one, one, one, RNE),
        (one, one, one, RDN),
        (fp.inf(), one, fp.inf(), RNE),
    ] {
        prog.test(fmsub, None, rm, &[a, b, c]);
    }
    for (a, b, c, rm) in [
        (zero, fp.inf(), fp.qnan_payload(), RNE),
        (one, one, one, RDN),
        (zero, one, zero, RNE),
        (zero, one, nzero, RNE),
    ] {
        prog.test(fnmsub, None, rm, &[a, b, c]);
    }
    for (a, b, c, rm) in [
        (fp.inf(), nzero, fp.qnan_payload(), RNE),
        (zero, one, zero, RNE),
        (zero, one, zero, RDN),
        (fp.inf(), one, fp.neg(fp.inf()), RNE),
    ] {
        prog.test(fnmadd, None, rm, &[a, b, c]);
    }
    prog.finish()
}

fn compare_program() -> (&'static str, String) {
    let mut prog = Program::new(
        "fd_compare.S",
        "RV64 F and D: fmin, fmax, feq, flt, fle, fclass, with fflags",
    );
    for fp in [S, D] {
        let p = if fp.k == K::S { "s" } else { "d" };
        let ops: [Op; 6] = if fp.k == K::S {
            [
                op!("fmin.s", S, [S, S], false, |v, _| s1(fpu::min_s(
                    v[0] as u32,
                    v[1] as u32
                ))),
                op!("fmax.s", S, [S, S], false, |v, _| s1(fpu::max_s(
                    v[0] as u32,
                    v[1] as u32
                ))),
                op!("feq.s", X, [S, S], false, |v, _| b1(fpu::eq_s(
                    v[0] as u32,
                    v[1] as u32
                ))),
                op!("flt.s", X, [S, S], false, |v, _| b1(fpu::lt_s(
                    v[0] as u32,
                    v[1] as u32
                ))),
                op!("fle.s", X, [S, S], false, |v, _| b1(fpu::le_s(
                    v[0] as u32,
                    v[1] as u32
                ))),
                op!("fclass.s", X, [S], false, |v, _| (
                    fpu::classify_s(v[0] as u32),
                    0
                )),
            ]
        } else {
            [
                op!("fmin.d", D, [D, D], false, |v, _| fpu::min_d(v[0], v[1])),
                op!("fmax.d", D, [D, D], false, |v, _| fpu::max_d(v[0], v[1])),
                op!("feq.d", X, [D, D], false, |v, _| b1(fpu::eq_d(v[0], v[1]))),
                op!("flt.d", X, [D, D], false, |v, _| b1(fpu::lt_d(v[0], v[1]))),
                op!("fle.d", X, [D, D], false, |v, _| b1(fpu::le_d(v[0], v[1]))),
                op!("fclass.d", X, [D], false, |v, _| (fpu::classify_d(v[0]), 0)),
            ]
        };
        let one = fp.encode(1.0);
        let m1 = fp.encode(-1.0);
        let m2 = fp.encode(-2.0);
        let (zero, nzero) = (0, fp.neg(0));
        let (q, sn) = (fp.qnan_payload(), fp.snan());
        prog.section(&format!("fmin.{p}/fmax.{p}: one NaN gives the other operand, two NaNs the canonical NaN, NV only for sNaN, -0 < +0"));
        for o in &ops[0..2] {
            for (a, b) in [
                (q, one),
                (one, q),
                (sn, one),
                (one, fp.neg(sn)),
                (q, fp.neg(q)),
                (sn, q),
                (zero, nzero),
                (nzero, zero),
                (fp.neg(fp.inf()), fp.max()),
                (m2, m1),
                (fp.min_sub(), zero),
            ] {
                prog.test(o, None, RNE, &[a, b]);
            }
        }
        prog.section(&format!(
            "feq.{p} is quiet; flt.{p}/fle.{p} signal on any NaN"
        ));
        for o in &ops[2..5] {
            for (a, b) in [
                (q, one),
                (one, sn),
                (q, q),
                (nzero, zero),
                (one, one),
                (m1, one),
                (one, m1),
                (fp.min_sub(), zero),
                (fp.inf(), fp.inf()),
            ] {
                prog.test(o, None, RNE, &[a, b]);
            }
        }
        prog.section(&format!("fclass.{p}: each of the ten classes"));
        for a in [
            fp.neg(fp.inf()),
            m1,
            fp.neg(fp.min_sub()),
            nzero,
            zero,
            fp.min_sub(),
            one,
            fp.inf(),
            sn,
            q,
            fp.neg(q),
        ] {
            prog.test(&ops[5], None, RNE, &[a]);
        }
    }
    prog.finish()
}

fn float_to_int_program(fp: Fp) -> (&'static str, String) {
    let (file, p) = if fp.k == K::S {
        ("f_cvt_int.S", "s")
    } else {
        ("d_cvt_int.S", "d")
    };
    let mut prog = Program::new(file, &format!("RV64 {}: fcvt.w/wu/l/lu.{p} in every rounding mode; RISC-V saturation; W results sign-extended", if fp.k == K::S { "F" } else { "D" }));
    let ops: [Op; 4] = if fp.k == K::S {
        [
            op!("fcvt.w.s", X, [S], true, |v, rm| fpu::cvt_w_s(
                v[0] as u32,
                rm
            )),
            op!("fcvt.wu.s", X, [S], true, |v, rm| fpu::cvt_wu_s(
                v[0] as u32,
                rm
            )),
            op!("fcvt.l.s", X, [S], true, |v, rm| fpu::cvt_l_s(
                v[0] as u32,
                rm
            )),
            op!("fcvt.lu.s", X, [S], true, |v, rm| fpu::cvt_lu_s(
                v[0] as u32,
                rm
            )),
        ]
    } else {
        [
            op!("fcvt.w.d", X, [D], true, |v, rm| fpu::cvt_w_d(v[0], rm)),
            op!("fcvt.wu.d", X, [D], true, |v, rm| fpu::cvt_wu_d(v[0], rm)),
            op!("fcvt.l.d", X, [D], true, |v, rm| fpu::cvt_l_d(v[0], rm)),
            op!("fcvt.lu.d", X, [D], true, |v, rm| fpu::cvt_lu_d(v[0], rm)),
        ]
    };
    let seed = if fp.k == K::S { 500 } else { 600 };
    let cands = candidates(&[fp.k], seed, 3);
    for o in &ops {
        prog.rounding_sweep(o, &cands, 3);
    }
    let big = fp.encode(18446744073709551616.0); // 2^64
    let two31 = fp.encode(2147483648.0);
    let two32 = fp.encode(4294967296.0);
    let two63 = fp.encode(9223372036854775808.0);
    let three_e9 = fp.encode(3e9);
    let half = fp.encode(0.5);
    let specials = [
        (fp.qnan_payload(), RNE),
        (fp.neg(fp.qnan_payload()), RNE),
        (fp.snan(), RNE),
        (fp.inf(), RNE),
        (fp.neg(fp.inf()), RNE),
        (big, RNE),
        (fp.neg(big), RNE),
        (two31, RNE),
        (fp.neg(two31), RNE),
        (two32, RNE),
        (two63, RNE),
        (fp.neg(two63), RNE),
        (three_e9, RNE),
        (fp.neg(half), RNE),
        (fp.neg(half), RDN),
        (fp.neg(0), RNE),
        (fp.min_sub(), RUP),
    ];
    for o in &ops {
        prog.section(&format!(
            "{}: NaN, infinities, out of range, limits, negative to unsigned",
            o.mnemonic
        ));
        for &(a, rm) in &specials {
            prog.test(o, None, rm, &[a]);
        }
    }
    if fp.k == K::D {
        prog.section("fcvt.w.d: rounding decides whether the result is in range");
        for (x, rm) in [
            (2147483647.5, RTZ),
            (2147483647.5, RNE),
            (-2147483648.5, RUP),
            (-2147483648.5, RDN),
            (-2147483649.0, RNE),
        ] {
            prog.test(&ops[0], None, rm, &[D.encode(x)]);
        }
        prog.test(&ops[1], None, RNE, &[D.encode(4294967295.0)]);
    }
    prog.finish()
}

fn int_to_float_program() -> (&'static str, String) {
    let mut prog = Program::new(
        "fd_cvt_from_int.S",
        "RV64 F and D: fcvt.{s,d}.{w,wu,l,lu} in every rounding mode; W forms read the low 32 bits",
    );
    let ops: [Op; 8] = [
        op!("fcvt.s.w", S, [X], true, |v, rm| s1(fpu::cvt_s_w(v[0], rm))),
        op!("fcvt.s.wu", S, [X], true, |v, rm| s1(fpu::cvt_s_wu(
            v[0], rm
        ))),
        op!("fcvt.s.l", S, [X], true, |v, rm| s1(fpu::cvt_s_l(v[0], rm))),
        op!("fcvt.s.lu", S, [X], true, |v, rm| s1(fpu::cvt_s_lu(
            v[0], rm
        ))),
        // exact: the assembler encodes them with rm = RNE and takes no rm operand
        op!("fcvt.d.w", D, [X], false, |v, rm| fpu::cvt_d_w(v[0], rm)),
        op!("fcvt.d.wu", D, [X], false, |v, rm| fpu::cvt_d_wu(v[0], rm)),
        op!("fcvt.d.l", D, [X], true, |v, rm| fpu::cvt_d_l(v[0], rm)),
        op!("fcvt.d.lu", D, [X], true, |v, rm| fpu::cvt_d_lu(v[0], rm)),
    ];
    let cands = candidates(&[K::X], 700, 0);
    for o in ops.iter().filter(|o| o.has_rm) {
        prog.rounding_sweep(o, &cands, 2);
    }
    let specials: [u64; 9] = [
        0,
        1,
        u64::MAX,              // -1 / all ones
        0x1234_5678_0000_0001, // W forms see 1
        0xdead_beef_8000_0000, // W forms see i32::MIN / 2^31
        i64::MIN as u64,
        i64::MAX as u64,
        0x0100_0001,           // 2^24 + 1: a tie in single precision
        0x0020_0000_0000_0001, // 2^53 + 1: a tie in double precision
    ];
    for o in &ops {
        prog.section(&format!(
            "{}: zero, extremes, garbage in the upper half, ties",
            o.mnemonic
        ));
        for &x in &specials {
            // reading frm only matters for inexact results
            prog.test(o, None, RNE, &[x]);
        }
    }
    prog.finish()
}

fn float_to_float_program() -> (&'static str, String) {
    let mut prog = Program::new("fd_cvt_sd.S", "RV64 F and D: fcvt.s.d in every rounding mode and fcvt.d.s; canonical NaNs, overflow, tininess after rounding");
    let narrow = op!("fcvt.s.d", S, [D], true, |v, rm| s1(fpu::cvt_s_d(v[0], rm)));
    let widen = op!("fcvt.d.s", D, [S], false, |v, rm| fpu::cvt_d_s(
        v[0] as u32,
        rm
    ));
    prog.rounding_sweep(&narrow, &candidates(&[K::D], 800, 4), 3);
    prog.section(
        "fcvt.s.d: NaNs, overflow by direction, underflow, tininess detected after rounding",
    );
    let just_below_min_normal = 0x380f_ffff_f000_0000; // 2^-126 × (1 - 2^-25)
    for (a, rm) in [
        (D.qnan_payload(), RNE),
        (D.snan(), RNE),
        (D.neg(D.inf()), RNE),
        (D.neg(0), RNE),
        (D.max(), RNE),
        (D.max(), RTZ),
        (D.neg(D.max()), RUP),
        (D.neg(D.max()), RDN),
        (just_below_min_normal, RNE),
        (just_below_min_normal, RMM),
        (just_below_min_normal, RTZ),
        (just_below_min_normal, RDN),
        (D.min_sub(), RNE),
        (D.min_sub(), RUP),
        (D.encode(1.0e-40), RNE),
    ] {
        prog.test(&narrow, None, rm, &[a]);
    }
    prog.section("fcvt.d.s: exact; NaNs become the canonical double NaN");
    for a in [
        S.qnan_payload(),
        S.neg(S.qnan_payload()),
        S.snan(),
        S.neg(S.inf()),
        S.neg(0),
        S.min_sub(),
        S.max(),
        S.encode(0.1f32 as f64),
    ] {
        prog.test(&widen, None, RNE, &[a]);
    }
    prog.finish()
}

fn generate() -> Vec<(&'static str, String)> {
    vec![
        arith_program(S),
        arith_program(D),
        fma_program(S),
        fma_program(D),
        compare_program(),
        float_to_int_program(S),
        float_to_int_program(D),
        int_to_float_program(),
        float_to_float_program(),
    ]
}

fn isa_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/isa/fp")
}

#[test]
fn generated_programs_are_current() {
    let dir = isa_dir();
    let regen = std::env::var("HS_FPU_REGEN_ISA").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();
    let mut total = 0;
    for (file, text) in generate() {
        total += text.matches("\n    TEST_").count();
        let path = dir.join(file);
        if regen {
            std::fs::write(&path, &text)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(file);
        }
    }
    assert!(
        stale.is_empty(),
        "generated programs out of date: {stale:?}; rerun with HS_FPU_REGEN_ISA=1"
    );
    eprintln!("generated programs hold {total} tests");
}

// ---- running on QEMU ---------------------------------------------------

const QEMU: &str = "qemu-system-riscv64";

/// Exit status of QEMU, or None if it ran past the deadline (then killed).
fn run_with_deadline(mut cmd: Command, deadline: Duration) -> Option<std::process::ExitStatus> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn qemu");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for qemu") {
            return Some(status);
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn programs_pass_on_qemu() {
    if std::env::var("HS_FPU_SKIP_QEMU").is_ok_and(|v| v == "1") {
        eprintln!("HS_FPU_SKIP_QEMU=1: not running the F/D programs on QEMU");
        return;
    }
    for tool in [isa::RISCV_GCC, QEMU] {
        assert!(isa::tool_available(tool), "{tool} not found: install gcc-riscv64-unknown-elf and qemu-system-misc, or set HS_FPU_SKIP_QEMU=1");
    }
    let dir = isa_dir();
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("isa-fp");
    std::fs::create_dir_all(&out).expect("create output directory");
    let programs = isa::programs(&dir);
    assert!(
        programs.len() >= 10,
        "expected the F/D programs in {}",
        dir.display()
    );
    let mut failures = Vec::new();
    for src in &programs {
        let name = src.file_stem().unwrap().to_string_lossy().into_owned();
        let elf = out.join(format!("{name}.elf"));
        if let Err(e) = isa::build(src, &dir, &elf) {
            failures.push(format!("{name}: {e}"));
            continue;
        }
        let mut qemu = Command::new(QEMU);
        qemu.args([
            "-M",
            "spike",
            "-bios",
            "none",
            "-nographic",
            "-monitor",
            "none",
            "-kernel",
        ])
        .arg(&elf);
        match run_with_deadline(qemu, Duration::from_secs(30)) {
            None => failures.push(format!("{name}: no exit within 30 s")),
            Some(st) if st.code() == Some(0) => eprintln!("{name}: pass"),
            Some(st) => failures.push(format!("{name}: failed test {:?}", st.code())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("{} F/D programs pass on QEMU", programs.len());
}
