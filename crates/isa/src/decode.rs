//! Bits → [`Insn`]. Every input decodes (reserved encodings to `Illegal`); no panics.

use crate::insn::{AmoOp, FmaOp, FpOp, Insn};
use crate::{MARKER_IMM_FIRST, MARKER_IMM_LAST};

/// Length in bytes of the instruction whose first halfword is `low`:
/// 2 for compressed, otherwise 4 (longer encodings are not supported and
/// decode as illegal 4-byte instructions).
#[inline(always)]
pub fn insn_len(low: u16) -> u8 {
    if low & 3 == 3 {
        4
    } else {
        2
    }
}

/// Decode the instruction starting in the low bits of `word` (little-endian
/// fetch of up to 4 bytes). Returns the instruction and its length (2 or 4).
#[inline]
pub fn decode(word: u32) -> (Insn, u8) {
    if word & 3 == 3 {
        (decode32(word), 4)
    } else {
        (decode16(word as u16), 2)
    }
}

#[inline(always)]
fn rd(w: u32) -> u8 {
    ((w >> 7) & 31) as u8
}
#[inline(always)]
fn rs1(w: u32) -> u8 {
    ((w >> 15) & 31) as u8
}
#[inline(always)]
fn rs2(w: u32) -> u8 {
    ((w >> 20) & 31) as u8
}
#[inline(always)]
fn rs3(w: u32) -> u8 {
    (w >> 27) as u8
}
#[inline(always)]
fn imm_i(w: u32) -> i32 {
    (w as i32) >> 20
}
#[inline(always)]
fn imm_s(w: u32) -> i32 {
    (((w as i32) >> 25) << 5) | ((w >> 7) & 31) as i32
}
#[inline(always)]
fn imm_b(w: u32) -> i32 {
    (((w as i32) >> 31) << 12)
        | (((w >> 7) & 1) << 11) as i32
        | (((w >> 25) & 0x3f) << 5) as i32
        | (((w >> 8) & 0xf) << 1) as i32
}
#[inline(always)]
fn imm_j(w: u32) -> i32 {
    (((w as i32) >> 31) << 20)
        | (w & 0xff000) as i32
        | (((w >> 20) & 1) << 11) as i32
        | (((w >> 21) & 0x3ff) << 1) as i32
}

/// Decode a 32-bit instruction (the low two bits must be `11`, else `Illegal`).
pub fn decode32(w: u32) -> Insn {
    use Insn::*;
    let ill = Illegal(w);
    if w & 3 != 3 || (w & 0x1c) == 0x1c {
        return ill; // compressed or a longer-than-32-bit encoding
    }
    let (rd, rs1, rs2, f3, f7) = (rd(w), rs1(w), rs2(w), (w >> 12) & 7, w >> 25);
    match w & 0x7f {
        0x37 => Lui {
            rd,
            imm: (w & 0xffff_f000) as i32,
        },
        0x17 => Auipc {
            rd,
            imm: (w & 0xffff_f000) as i32,
        },
        0x6f => Jal { rd, imm: imm_j(w) },
        0x67 if f3 == 0 => Jalr {
            rd,
            rs1,
            imm: imm_i(w),
        },
        0x63 => {
            let imm = imm_b(w);
            match f3 {
                0 => Beq { rs1, rs2, imm },
                1 => Bne { rs1, rs2, imm },
                4 => Blt { rs1, rs2, imm },
                5 => Bge { rs1, rs2, imm },
                6 => Bltu { rs1, rs2, imm },
                7 => Bgeu { rs1, rs2, imm },
                _ => ill,
            }
        }
        0x03 => {
            let imm = imm_i(w);
            match f3 {
                0 => Lb { rd, rs1, imm },
                1 => Lh { rd, rs1, imm },
                2 => Lw { rd, rs1, imm },
                3 => Ld { rd, rs1, imm },
                4 => Lbu { rd, rs1, imm },
                5 => Lhu { rd, rs1, imm },
                6 => Lwu { rd, rs1, imm },
                _ => ill,
            }
        }
        0x23 => {
            let imm = imm_s(w);
            match f3 {
                0 => Sb { rs1, rs2, imm },
                1 => Sh { rs1, rs2, imm },
                2 => Sw { rs1, rs2, imm },
                3 => Sd { rs1, rs2, imm },
                _ => ill,
            }
        }
        0x13 => {
            let imm = imm_i(w);
            let shamt = ((w >> 20) & 0x3f) as i32;
            match f3 {
                0 => Addi { rd, rs1, imm },
                2 => {
                    let uimm = (w >> 20) as u16;
                    if rd == 0 && rs1 == 0 && (MARKER_IMM_FIRST..=MARKER_IMM_LAST).contains(&uimm) {
                        Marker {
                            op: uimm - MARKER_IMM_FIRST,
                        }
                    } else {
                        Slti { rd, rs1, imm }
                    }
                }
                3 => Sltiu { rd, rs1, imm },
                4 => Xori { rd, rs1, imm },
                6 => Ori { rd, rs1, imm },
                7 => Andi { rd, rs1, imm },
                1 if w >> 26 == 0 => Slli {
                    rd,
                    rs1,
                    imm: shamt,
                },
                5 if w >> 26 == 0 => Srli {
                    rd,
                    rs1,
                    imm: shamt,
                },
                5 if w >> 26 == 0x10 => Srai {
                    rd,
                    rs1,
                    imm: shamt,
                },
                _ => ill,
            }
        }
        0x1b => {
            let shamt = ((w >> 20) & 0x1f) as i32;
            match (f3, f7) {
                (0, _) => Addiw {
                    rd,
                    rs1,
                    imm: imm_i(w),
                },
                (1, 0) => Slliw {
                    rd,
                    rs1,
                    imm: shamt,
                },
                (5, 0) => Srliw {
                    rd,
                    rs1,
                    imm: shamt,
                },
                (5, 0x20) => Sraiw {
                    rd,
                    rs1,
                    imm: shamt,
                },
                _ => ill,
            }
        }
        0x33 => match (f7, f3) {
            (0, 0) => Add { rd, rs1, rs2 },
            (0x20, 0) => Sub { rd, rs1, rs2 },
            (0, 1) => Sll { rd, rs1, rs2 },
            (0, 2) => Slt { rd, rs1, rs2 },
            (0, 3) => Sltu { rd, rs1, rs2 },
            (0, 4) => Xor { rd, rs1, rs2 },
            (0, 5) => Srl { rd, rs1, rs2 },
            (0x20, 5) => Sra { rd, rs1, rs2 },
            (0, 6) => Or { rd, rs1, rs2 },
            (0, 7) => And { rd, rs1, rs2 },
            (1, 0) => Mul { rd, rs1, rs2 },
            (1, 1) => Mulh { rd, rs1, rs2 },
            (1, 2) => Mulhsu { rd, rs1, rs2 },
            (1, 3) => Mulhu { rd, rs1, rs2 },
            (1, 4) => Div { rd, rs1, rs2 },
            (1, 5) => Divu { rd, rs1, rs2 },
            (1, 6) => Rem { rd, rs1, rs2 },
            (1, 7) => Remu { rd, rs1, rs2 },
            _ => ill,
        },
        0x3b => match (f7, f3) {
            (0, 0) => Addw { rd, rs1, rs2 },
            (0x20, 0) => Subw { rd, rs1, rs2 },
            (0, 1) => Sllw { rd, rs1, rs2 },
            (0, 5) => Srlw { rd, rs1, rs2 },
            (0x20, 5) => Sraw { rd, rs1, rs2 },
            (1, 0) => Mulw { rd, rs1, rs2 },
            (1, 4) => Divw { rd, rs1, rs2 },
            (1, 5) => Divuw { rd, rs1, rs2 },
            (1, 6) => Remw { rd, rs1, rs2 },
            (1, 7) => Remuw { rd, rs1, rs2 },
            _ => ill,
        },
        0x0f => match f3 {
            0 => Fence {
                pred: ((w >> 24) & 0xf) as u8,
                succ: ((w >> 20) & 0xf) as u8,
                fm: (w >> 28) as u8,
            },
            1 => FenceI,
            _ => ill,
        },
        0x73 => decode_system(w, rd, rs1, rs2, f3, f7),
        0x2f => decode_amo(w, rd, rs1, rs2, f3),
        0x07 => match f3 {
            2 => Flw {
                rd,
                rs1,
                imm: imm_i(w),
            },
            3 => Fld {
                rd,
                rs1,
                imm: imm_i(w),
            },
            _ => ill,
        },
        0x27 => match f3 {
            2 => Fsw {
                rs1,
                rs2,
                imm: imm_s(w),
            },
            3 => Fsd {
                rs1,
                rs2,
                imm: imm_s(w),
            },
            _ => ill,
        },
        0x43 | 0x47 | 0x4b | 0x4f => {
            let op = match w & 0x7f {
                0x43 => FmaOp::Madd,
                0x47 => FmaOp::Msub,
                0x4b => FmaOp::Nmsub,
                _ => FmaOp::Nmadd,
            };
            let fmt = (w >> 25) & 3;
            if fmt > 1 || f3 == 5 || f3 == 6 {
                return ill;
            }
            Fma {
                op,
                dbl: fmt == 1,
                rd,
                rs1,
                rs2,
                rs3: rs3(w),
                rm: f3 as u8,
            }
        }
        0x53 => decode_op_fp(w, rd, rs1, rs2, f3, f7),
        _ => ill,
    }
}

fn decode_system(w: u32, rd: u8, rs1: u8, rs2: u8, f3: u32, f7: u32) -> Insn {
    use Insn::*;
    let csr = (w >> 20) as u16;
    match f3 {
        0 => match w {
            0x0000_0073 => Ecall,
            0x0010_0073 => Ebreak,
            0x3020_0073 => Mret,
            0x1020_0073 => Sret,
            0x1050_0073 => Wfi,
            _ if f7 == 0x09 && rd == 0 => SfenceVma { rs1, rs2 },
            _ => Illegal(w),
        },
        1 => Csrrw { rd, rs1, csr },
        2 => Csrrs { rd, rs1, csr },
        3 => Csrrc { rd, rs1, csr },
        5 => Csrrwi { rd, uimm: rs1, csr },
        6 => Csrrsi { rd, uimm: rs1, csr },
        7 => Csrrci { rd, uimm: rs1, csr },
        _ => Illegal(w),
    }
}

fn decode_amo(w: u32, rd: u8, rs1: u8, rs2: u8, f3: u32) -> Insn {
    use Insn::*;
    let aqrl = ((w >> 25) & 3) as u8;
    let dbl = match f3 {
        2 => false,
        3 => true,
        _ => return Illegal(w),
    };
    let op = match w >> 27 {
        0b00010 if rs2 == 0 => {
            return if dbl {
                LrD { rd, rs1, aqrl }
            } else {
                LrW { rd, rs1, aqrl }
            }
        }
        0b00011 => {
            return if dbl {
                ScD { rd, rs1, rs2, aqrl }
            } else {
                ScW { rd, rs1, rs2, aqrl }
            }
        }
        0b00001 => AmoOp::Swap,
        0b00000 => AmoOp::Add,
        0b00100 => AmoOp::Xor,
        0b01100 => AmoOp::And,
        0b01000 => AmoOp::Or,
        0b10000 => AmoOp::Min,
        0b10100 => AmoOp::Max,
        0b11000 => AmoOp::Minu,
        0b11100 => AmoOp::Maxu,
        _ => return Illegal(w),
    };
    if dbl {
        AmoD {
            op,
            rd,
            rs1,
            rs2,
            aqrl,
        }
    } else {
        AmoW {
            op,
            rd,
            rs1,
            rs2,
            aqrl,
        }
    }
}

fn decode_op_fp(w: u32, rd: u8, rs1: u8, rs2: u8, f3: u32, f7: u32) -> Insn {
    use FpOp::*;
    let rm = f3 as u8;
    let dbl = f7 & 1 == 1;
    let pick = |s: FpOp, d: FpOp| if dbl { d } else { s };
    let op = match f7 >> 1 {
        // funct7 with the format bit (bit 25) removed; fmt 1x (H/Q) is not implemented
        _ if f7 & 2 != 0 => None,
        0b000000 => Some(pick(FaddS, FaddD)),
        0b000010 => Some(pick(FsubS, FsubD)),
        0b000100 => Some(pick(FmulS, FmulD)),
        0b000110 => Some(pick(FdivS, FdivD)),
        0b010110 if rs2 == 0 => Some(pick(FsqrtS, FsqrtD)),
        0b001000 => match f3 {
            0 => Some(pick(FsgnjS, FsgnjD)),
            1 => Some(pick(FsgnjnS, FsgnjnD)),
            2 => Some(pick(FsgnjxS, FsgnjxD)),
            _ => None,
        },
        0b001010 => match f3 {
            0 => Some(pick(FminS, FminD)),
            1 => Some(pick(FmaxS, FmaxD)),
            _ => None,
        },
        0b110000 => match rs2 {
            0 => Some(pick(FcvtWS, FcvtWD)),
            1 => Some(pick(FcvtWuS, FcvtWuD)),
            2 => Some(pick(FcvtLS, FcvtLD)),
            3 => Some(pick(FcvtLuS, FcvtLuD)),
            _ => None,
        },
        0b110100 => match rs2 {
            0 => Some(pick(FcvtSW, FcvtDW)),
            1 => Some(pick(FcvtSWu, FcvtDWu)),
            2 => Some(pick(FcvtSL, FcvtDL)),
            3 => Some(pick(FcvtSLu, FcvtDLu)),
            _ => None,
        },
        0b111000 if rs2 == 0 => match f3 {
            0 => Some(pick(FmvXW, FmvXD)),
            1 => Some(pick(FclassS, FclassD)),
            _ => None,
        },
        0b111100 if rs2 == 0 && f3 == 0 => Some(pick(FmvWX, FmvDX)),
        0b101000 => match f3 {
            2 => Some(pick(FeqS, FeqD)),
            1 => Some(pick(FltS, FltD)),
            0 => Some(pick(FleS, FleD)),
            _ => None,
        },
        // fcvt.s.d: fmt=S, rs2=1 (source D); fcvt.d.s: fmt=D, rs2=0 (source S)
        0b010000 if !dbl && rs2 == 1 => Some(FcvtSD),
        0b010000 if dbl && rs2 == 0 => Some(FcvtDS),
        _ => None,
    };
    match op {
        Some(op) if op.has_rm() && (rm == 5 || rm == 6) => Insn::Illegal(w),
        Some(op) => Insn::Fp {
            op,
            rd,
            rs1,
            rs2: if op.sources() == 2 { rs2 } else { 0 },
            rm,
        },
        None => Insn::Illegal(w),
    }
}

#[inline(always)]
fn sext(v: u32, bits: u32) -> i32 {
    ((v << (32 - bits)) as i32) >> (32 - bits)
}

/// Expand a 16-bit compressed instruction to its base-ISA equivalent.
pub fn decode16(h: u16) -> Insn {
    use Insn::*;
    let w = h as u32;
    let ill = Illegal(w);
    let rdp = (((w >> 2) & 7) + 8) as u8; // rd' / rs2' in bits 4:2
    let rs1p = (((w >> 7) & 7) + 8) as u8; // rs1' / rd' in bits 9:7
    let rfull = ((w >> 7) & 31) as u8;
    let rs2full = ((w >> 2) & 31) as u8;
    let ci = sext(((w >> 7) & 0x20) | ((w >> 2) & 0x1f), 6);
    let f3 = w >> 13;
    match w & 3 {
        0 => {
            let ld_off = (((w >> 7) & 0x38) | ((w << 1) & 0xc0)) as i32;
            let lw_off = (((w >> 7) & 0x38) | ((w >> 4) & 4) | ((w << 1) & 0x40)) as i32;
            match f3 {
                0 => {
                    let imm =
                        ((w >> 7) & 0x30) | ((w >> 1) & 0x3c0) | ((w >> 4) & 4) | ((w >> 2) & 8);
                    if imm == 0 {
                        ill
                    } else {
                        Addi {
                            rd: rdp,
                            rs1: 2,
                            imm: imm as i32,
                        }
                    }
                }
                1 => Fld {
                    rd: rdp,
                    rs1: rs1p,
                    imm: ld_off,
                },
                2 => Lw {
                    rd: rdp,
                    rs1: rs1p,
                    imm: lw_off,
                },
                3 => Ld {
                    rd: rdp,
                    rs1: rs1p,
                    imm: ld_off,
                },
                5 => Fsd {
                    rs1: rs1p,
                    rs2: rdp,
                    imm: ld_off,
                },
                6 => Sw {
                    rs1: rs1p,
                    rs2: rdp,
                    imm: lw_off,
                },
                7 => Sd {
                    rs1: rs1p,
                    rs2: rdp,
                    imm: ld_off,
                },
                _ => ill,
            }
        }
        1 => match f3 {
            0 => Addi {
                rd: rfull,
                rs1: rfull,
                imm: ci,
            },
            1 if rfull != 0 => Addiw {
                rd: rfull,
                rs1: rfull,
                imm: ci,
            },
            2 => Addi {
                rd: rfull,
                rs1: 0,
                imm: ci,
            },
            3 if rfull == 2 => {
                let v = ((w >> 3) & 0x200)
                    | ((w >> 2) & 0x10)
                    | ((w << 1) & 0x40)
                    | ((w << 4) & 0x180)
                    | ((w << 3) & 0x20);
                if v == 0 {
                    ill
                } else {
                    Addi {
                        rd: 2,
                        rs1: 2,
                        imm: sext(v, 10),
                    }
                }
            }
            3 => {
                if ci == 0 {
                    ill
                } else {
                    Lui {
                        rd: rfull,
                        imm: ci << 12,
                    }
                }
            }
            4 => {
                let shamt = (((w >> 7) & 0x20) | ((w >> 2) & 0x1f)) as i32;
                match (w >> 10) & 3 {
                    0 => Srli {
                        rd: rs1p,
                        rs1: rs1p,
                        imm: shamt,
                    },
                    1 => Srai {
                        rd: rs1p,
                        rs1: rs1p,
                        imm: shamt,
                    },
                    2 => Andi {
                        rd: rs1p,
                        rs1: rs1p,
                        imm: ci,
                    },
                    _ => {
                        let (rd, rs1, rs2) = (rs1p, rs1p, rdp);
                        match ((w >> 12) & 1, (w >> 5) & 3) {
                            (0, 0) => Sub { rd, rs1, rs2 },
                            (0, 1) => Xor { rd, rs1, rs2 },
                            (0, 2) => Or { rd, rs1, rs2 },
                            (0, 3) => And { rd, rs1, rs2 },
                            (1, 0) => Subw { rd, rs1, rs2 },
                            (1, 1) => Addw { rd, rs1, rs2 },
                            _ => ill,
                        }
                    }
                }
            }
            5 => {
                let v = ((w >> 1) & 0x800)
                    | ((w >> 7) & 0x10)
                    | ((w >> 1) & 0x300)
                    | ((w << 2) & 0x400)
                    | ((w >> 1) & 0x40)
                    | ((w << 1) & 0x80)
                    | ((w >> 2) & 0xe)
                    | ((w << 3) & 0x20);
                Jal {
                    rd: 0,
                    imm: sext(v, 12),
                }
            }
            6 | 7 => {
                let v = ((w >> 4) & 0x100)
                    | ((w >> 7) & 0x18)
                    | ((w << 1) & 0xc0)
                    | ((w >> 2) & 6)
                    | ((w << 3) & 0x20);
                let imm = sext(v, 9);
                if f3 == 6 {
                    Beq {
                        rs1: rs1p,
                        rs2: 0,
                        imm,
                    }
                } else {
                    Bne {
                        rs1: rs1p,
                        rs2: 0,
                        imm,
                    }
                }
            }
            _ => ill,
        },
        2 => {
            let ldsp = (((w >> 7) & 0x20) | ((w >> 2) & 0x18) | ((w << 4) & 0x1c0)) as i32;
            let lwsp = (((w >> 7) & 0x20) | ((w >> 2) & 0x1c) | ((w << 4) & 0xc0)) as i32;
            let sdsp = (((w >> 7) & 0x38) | ((w >> 1) & 0x1c0)) as i32;
            let swsp = (((w >> 7) & 0x3c) | ((w >> 1) & 0xc0)) as i32;
            match f3 {
                0 => {
                    let shamt = (((w >> 7) & 0x20) | ((w >> 2) & 0x1f)) as i32;
                    Slli {
                        rd: rfull,
                        rs1: rfull,
                        imm: shamt,
                    }
                }
                1 => Fld {
                    rd: rfull,
                    rs1: 2,
                    imm: ldsp,
                },
                2 if rfull != 0 => Lw {
                    rd: rfull,
                    rs1: 2,
                    imm: lwsp,
                },
                3 if rfull != 0 => Ld {
                    rd: rfull,
                    rs1: 2,
                    imm: ldsp,
                },
                4 => match ((w >> 12) & 1, rfull, rs2full) {
                    (0, 0, 0) => ill,
                    (0, rs1, 0) => Jalr { rd: 0, rs1, imm: 0 },
                    (0, rd, rs2) => Add { rd, rs1: 0, rs2 },
                    (_, 0, 0) => Ebreak,
                    (_, rs1, 0) => Jalr { rd: 1, rs1, imm: 0 },
                    (_, rd, rs2) => Add { rd, rs1: rd, rs2 },
                },
                5 => Fsd {
                    rs1: 2,
                    rs2: rs2full,
                    imm: sdsp,
                },
                6 => Sw {
                    rs1: 2,
                    rs2: rs2full,
                    imm: swsp,
                },
                7 => Sd {
                    rs1: 2,
                    rs2: rs2full,
                    imm: sdsp,
                },
                _ => ill,
            }
        }
        _ => ill, // low bits 11: a 32-bit instruction, not a compressed one
    }
}
