//! Predecoding: what is decided once per instruction when it is decoded
//! (its [`Op`]: the x0-sink rewrite, timing class and registers) rather
//! than every time it runs. Both engines build their ops here.

use hs_isa::{decode, Insn};
use hs_timing::{InsnClass, Operands};

use super::{Op, SINK};

impl Op {
    /// The op for the instruction word `word` (the high half is ignored
    /// for a compressed instruction) at byte `off` from its block's start.
    #[inline]
    pub(crate) fn decoded(word: u32, off: u16) -> Op {
        let (insn, len) = decode(word);
        Op {
            insn: sink_rd0(insn),
            bits: word,
            len,
            class: class_of(&insn),
            off,
            ops: operands_of(&insn),
        }
    }
}

/// Redirect writes to x0 into the sink register (cached copies only).
fn sink_rd0(insn: Insn) -> Insn {
    use Insn::*;
    macro_rules! sink {
        ($insn:expr; $($v:ident),*) => {
            match $insn {
                $( $v { rd: 0, rs1, imm } => $v { rd: SINK, rs1, imm }, )*
                other => other,
            }
        };
    }
    macro_rules! sink_r {
        ($insn:expr; $($v:ident),*) => {
            match $insn {
                $( $v { rd: 0, rs1, rs2 } => $v { rd: SINK, rs1, rs2 }, )*
                other => other,
            }
        };
    }
    let insn = match insn {
        Lui { rd: 0, imm } => Lui { rd: SINK, imm },
        Auipc { rd: 0, imm } => Auipc { rd: SINK, imm },
        Jal { rd: 0, imm } => Jal { rd: SINK, imm },
        other => other,
    };
    let insn = sink!(insn;
        Jalr, Lb, Lh, Lw, Ld, Lbu, Lhu, Lwu, Addi, Slti, Sltiu, Xori, Ori, Andi, Slli, Srli, Srai, Addiw, Slliw, Srliw,
        Sraiw
    );
    sink_r!(insn;
        Add, Sub, Sll, Slt, Sltu, Xor, Srl, Sra, Or, And, Addw, Subw, Sllw, Srlw, Sraw, Mul, Mulh, Mulhsu, Mulhu, Div,
        Divu, Rem, Remu, Mulw, Divw, Divuw, Remw, Remuw
    )
}

/// Blocks end at jumps and system instructions but run on through
/// conditional branches (a taken branch leaves the block early).
pub(crate) fn ends_block(i: &Insn) -> bool {
    use Insn::*;
    i.ends_block()
        && !matches!(
            i,
            Beq { .. } | Bne { .. } | Blt { .. } | Bge { .. } | Bltu { .. } | Bgeu { .. }
        )
}

pub(crate) fn class_of(i: &Insn) -> InsnClass {
    use Insn::*;
    match i {
        Jal { .. } | Jalr { .. } => InsnClass::Jump,
        Beq { .. } | Bne { .. } | Blt { .. } | Bge { .. } | Bltu { .. } | Bgeu { .. } => {
            InsnClass::Branch
        }
        Lb { .. }
        | Lh { .. }
        | Lw { .. }
        | Ld { .. }
        | Lbu { .. }
        | Lhu { .. }
        | Lwu { .. }
        | Flw { .. }
        | Fld { .. } => InsnClass::Load,
        Sb { .. } | Sh { .. } | Sw { .. } | Sd { .. } | Fsw { .. } | Fsd { .. } => InsnClass::Store,
        LrW { .. } | LrD { .. } | ScW { .. } | ScD { .. } | AmoW { .. } | AmoD { .. } => {
            InsnClass::Amo
        }
        Mul { .. } | Mulh { .. } | Mulhsu { .. } | Mulhu { .. } | Mulw { .. } => InsnClass::Mul,
        Div { .. }
        | Divu { .. }
        | Rem { .. }
        | Remu { .. }
        | Divw { .. }
        | Divuw { .. }
        | Remw { .. }
        | Remuw { .. } => InsnClass::Div,
        Fma { .. } => InsnClass::FpFma,
        Fp { op, .. } => {
            use hs_isa::FpOp::*;
            match op {
                FaddS | FsubS | FaddD | FsubD => InsnClass::FpAdd,
                FmulS | FmulD => InsnClass::FpMul,
                FdivS | FdivD => InsnClass::FpDiv,
                FsqrtS | FsqrtD => InsnClass::FpSqrt,
                _ => InsnClass::FpMisc,
            }
        }
        Csrrw { .. }
        | Csrrs { .. }
        | Csrrc { .. }
        | Csrrwi { .. }
        | Csrrsi { .. }
        | Csrrci { .. } => InsnClass::Csr,
        Fence { .. } => InsnClass::Fence,
        FenceI => InsnClass::FenceI,
        SfenceVma { .. } => InsnClass::SfenceVma,
        Ecall | Ebreak => InsnClass::Ecall,
        Mret | Sret => InsnClass::Xret,
        Wfi => InsnClass::Wfi,
        Illegal(_) | Marker { .. } => InsnClass::System,
        _ => InsnClass::Alu,
    }
}

/// The registers `i` reads and writes (before `sink_rd0`: x0 is no
/// register), for timing models that track dependencies.
pub(crate) fn operands_of(i: &Insn) -> Operands {
    use Insn::*;
    let x = Operands::x;
    let f = Operands::f;
    let n = Operands::NONE;
    let op = |dst: u8, a: u8, b: u8, c: u8, wide: bool| Operands {
        dst,
        src: [a, b, c],
        flags: if wide { Operands::WIDE } else { 0 },
    };
    match *i {
        Lui { rd, .. } | Auipc { rd, .. } | Jal { rd, .. } => op(x(rd), n, n, n, false),
        Jalr { rd, rs1, .. }
        | Lb { rd, rs1, .. }
        | Lh { rd, rs1, .. }
        | Lw { rd, rs1, .. }
        | Ld { rd, rs1, .. }
        | Lbu { rd, rs1, .. }
        | Lhu { rd, rs1, .. }
        | Lwu { rd, rs1, .. }
        | Addi { rd, rs1, .. }
        | Slti { rd, rs1, .. }
        | Sltiu { rd, rs1, .. }
        | Xori { rd, rs1, .. }
        | Ori { rd, rs1, .. }
        | Andi { rd, rs1, .. }
        | Slli { rd, rs1, .. }
        | Srli { rd, rs1, .. }
        | Srai { rd, rs1, .. }
        | Addiw { rd, rs1, .. }
        | Slliw { rd, rs1, .. }
        | Srliw { rd, rs1, .. }
        | Sraiw { rd, rs1, .. }
        | LrW { rd, rs1, .. }
        | LrD { rd, rs1, .. }
        | Csrrw { rd, rs1, .. }
        | Csrrs { rd, rs1, .. }
        | Csrrc { rd, rs1, .. } => op(x(rd), x(rs1), n, n, false),
        Csrrwi { rd, .. } | Csrrsi { rd, .. } | Csrrci { rd, .. } => op(x(rd), n, n, n, false),
        Beq { rs1, rs2, .. }
        | Bne { rs1, rs2, .. }
        | Blt { rs1, rs2, .. }
        | Bge { rs1, rs2, .. }
        | Bltu { rs1, rs2, .. }
        | Bgeu { rs1, rs2, .. }
        | Sb { rs1, rs2, .. }
        | Sh { rs1, rs2, .. }
        | Sw { rs1, rs2, .. }
        | Sd { rs1, rs2, .. }
        | SfenceVma { rs1, rs2 } => op(n, x(rs1), x(rs2), n, false),
        Fsw { rs1, rs2, .. } | Fsd { rs1, rs2, .. } => op(n, x(rs1), f(rs2), n, false),
        Flw { rd, rs1, .. } | Fld { rd, rs1, .. } => op(f(rd), x(rs1), n, n, false),
        Div { rd, rs1, rs2 }
        | Divu { rd, rs1, rs2 }
        | Rem { rd, rs1, rs2 }
        | Remu { rd, rs1, rs2 } => op(x(rd), x(rs1), x(rs2), n, true),
        Add { rd, rs1, rs2 }
        | Sub { rd, rs1, rs2 }
        | Sll { rd, rs1, rs2 }
        | Slt { rd, rs1, rs2 }
        | Sltu { rd, rs1, rs2 }
        | Xor { rd, rs1, rs2 }
        | Srl { rd, rs1, rs2 }
        | Sra { rd, rs1, rs2 }
        | Or { rd, rs1, rs2 }
        | And { rd, rs1, rs2 }
        | Addw { rd, rs1, rs2 }
        | Subw { rd, rs1, rs2 }
        | Sllw { rd, rs1, rs2 }
        | Srlw { rd, rs1, rs2 }
        | Sraw { rd, rs1, rs2 }
        | Mul { rd, rs1, rs2 }
        | Mulh { rd, rs1, rs2 }
        | Mulhsu { rd, rs1, rs2 }
        | Mulhu { rd, rs1, rs2 }
        | Mulw { rd, rs1, rs2 }
        | Divw { rd, rs1, rs2 }
        | Divuw { rd, rs1, rs2 }
        | Remw { rd, rs1, rs2 }
        | Remuw { rd, rs1, rs2 }
        | ScW { rd, rs1, rs2, .. }
        | ScD { rd, rs1, rs2, .. }
        | AmoW { rd, rs1, rs2, .. }
        | AmoD { rd, rs1, rs2, .. } => op(x(rd), x(rs1), x(rs2), n, false),
        Fma {
            dbl,
            rd,
            rs1,
            rs2,
            rs3,
            ..
        } => op(f(rd), f(rs1), f(rs2), f(rs3), dbl),
        Fp {
            op: o,
            rd,
            rs1,
            rs2,
            ..
        } => {
            let d = if o.rd_is_int() { x(rd) } else { f(rd) };
            let a = if o.rs1_is_int() { x(rs1) } else { f(rs1) };
            let b = if o.sources() > 1 { f(rs2) } else { n };
            op(d, a, b, n, o.is_double())
        }
        _ => Operands::EMPTY,
    }
}
