//! GNU objdump (`-M no-aliases`) syntax: `addi a0,a0,1`, ABI register names,
//! branch targets as absolute hex addresses.

use std::fmt;

use crate::csr::csr_name;
use crate::insn::{FpOp, Insn};
use crate::MARKER_IMM_FIRST;

const GPR: [&str; 32] = [
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4",
    "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
    "t5", "t6",
];
const FPR: [&str; 32] = [
    "ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7", "fs0", "fs1", "fa0", "fa1", "fa2",
    "fa3", "fa4", "fa5", "fa6", "fa7", "fs2", "fs3", "fs4", "fs5", "fs6", "fs7", "fs8", "fs9",
    "fs10", "fs11", "ft8", "ft9", "ft10", "ft11",
];
const RM: [&str; 8] = ["rne", "rtz", "rdn", "rup", "rmm", "0x5", "0x6", "dyn"];

/// ABI name of integer register `r` (0..=31).
pub fn gpr_name(r: u8) -> &'static str {
    GPR[(r & 31) as usize]
}
/// ABI name of floating-point register `r` (0..=31).
pub fn fpr_name(r: u8) -> &'static str {
    FPR[(r & 31) as usize]
}

/// Disassemble one instruction located at `pc`.
pub fn disasm(insn: &Insn, pc: u64) -> String {
    Disasm { insn, pc }.to_string()
}

/// `Display` adapter: `format!("{}", Disasm { insn: &i, pc })`.
pub struct Disasm<'a> {
    pub insn: &'a Insn,
    pub pc: u64,
}

struct Csr(u16);
impl fmt::Display for Csr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match csr_name(self.0) {
            Some(n) => f.write_str(n),
            None => write!(f, "{:#x}", self.0),
        }
    }
}

fn fence_set(bits: u8) -> String {
    let mut s = String::new();
    for (b, c) in [(8, 'i'), (4, 'o'), (2, 'r'), (1, 'w')] {
        if bits & b != 0 {
            s.push(c);
        }
    }
    s
}

fn ordering(aqrl: u8) -> &'static str {
    ["", ".rl", ".aq", ".aqrl"][(aqrl & 3) as usize]
}

impl fmt::Display for Disasm<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Insn::*;
        let x = gpr_name;
        let fr = fpr_name;
        let target = |imm: i32| self.pc.wrapping_add(imm as i64 as u64);
        macro_rules! r3 {
            ($m:literal, $rd:expr, $rs1:expr, $rs2:expr) => {
                write!(f, "{} {},{},{}", $m, x(*$rd), x(*$rs1), x(*$rs2))
            };
        }
        macro_rules! i3 {
            ($m:literal, $rd:expr, $rs1:expr, $imm:expr) => {
                write!(f, "{} {},{},{}", $m, x(*$rd), x(*$rs1), $imm)
            };
        }
        macro_rules! sh {
            ($m:literal, $rd:expr, $rs1:expr, $imm:expr) => {
                write!(f, "{} {},{},{:#x}", $m, x(*$rd), x(*$rs1), $imm)
            };
        }
        macro_rules! ld {
            ($m:literal, $rd:expr, $rs1:expr, $imm:expr) => {
                write!(f, "{} {},{}({})", $m, x(*$rd), $imm, x(*$rs1))
            };
        }
        macro_rules! st {
            ($m:literal, $rs1:expr, $rs2:expr, $imm:expr) => {
                write!(f, "{} {},{}({})", $m, x(*$rs2), $imm, x(*$rs1))
            };
        }
        macro_rules! br {
            ($m:literal, $rs1:expr, $rs2:expr, $imm:expr) => {
                write!(f, "{} {},{},{:x}", $m, x(*$rs1), x(*$rs2), target(*$imm))
            };
        }
        match self.insn {
            Illegal(raw) => {
                if raw & 3 == 3 {
                    write!(f, ".word 0x{raw:08x}")
                } else {
                    write!(f, ".short 0x{:04x}", raw & 0xffff)
                }
            }
            Lui { rd, imm } => write!(f, "lui {},{:#x}", x(*rd), (*imm as u32) >> 12),
            Auipc { rd, imm } => write!(f, "auipc {},{:#x}", x(*rd), (*imm as u32) >> 12),
            Jal { rd, imm } => write!(f, "jal {},{:x}", x(*rd), target(*imm)),
            Jalr { rd, rs1, imm } => ld!("jalr", rd, rs1, imm),
            Beq { rs1, rs2, imm } => br!("beq", rs1, rs2, imm),
            Bne { rs1, rs2, imm } => br!("bne", rs1, rs2, imm),
            Blt { rs1, rs2, imm } => br!("blt", rs1, rs2, imm),
            Bge { rs1, rs2, imm } => br!("bge", rs1, rs2, imm),
            Bltu { rs1, rs2, imm } => br!("bltu", rs1, rs2, imm),
            Bgeu { rs1, rs2, imm } => br!("bgeu", rs1, rs2, imm),
            Lb { rd, rs1, imm } => ld!("lb", rd, rs1, imm),
            Lh { rd, rs1, imm } => ld!("lh", rd, rs1, imm),
            Lw { rd, rs1, imm } => ld!("lw", rd, rs1, imm),
            Ld { rd, rs1, imm } => ld!("ld", rd, rs1, imm),
            Lbu { rd, rs1, imm } => ld!("lbu", rd, rs1, imm),
            Lhu { rd, rs1, imm } => ld!("lhu", rd, rs1, imm),
            Lwu { rd, rs1, imm } => ld!("lwu", rd, rs1, imm),
            Sb { rs1, rs2, imm } => st!("sb", rs1, rs2, imm),
            Sh { rs1, rs2, imm } => st!("sh", rs1, rs2, imm),
            Sw { rs1, rs2, imm } => st!("sw", rs1, rs2, imm),
            Sd { rs1, rs2, imm } => st!("sd", rs1, rs2, imm),
            Addi { rd, rs1, imm } => i3!("addi", rd, rs1, imm),
            Slti { rd, rs1, imm } => i3!("slti", rd, rs1, imm),
            Sltiu { rd, rs1, imm } => i3!("sltiu", rd, rs1, imm),
            Xori { rd, rs1, imm } => i3!("xori", rd, rs1, imm),
            Ori { rd, rs1, imm } => i3!("ori", rd, rs1, imm),
            Andi { rd, rs1, imm } => i3!("andi", rd, rs1, imm),
            Slli { rd, rs1, imm } => sh!("slli", rd, rs1, imm),
            Srli { rd, rs1, imm } => sh!("srli", rd, rs1, imm),
            Srai { rd, rs1, imm } => sh!("srai", rd, rs1, imm),
            Addiw { rd, rs1, imm } => i3!("addiw", rd, rs1, imm),
            Slliw { rd, rs1, imm } => sh!("slliw", rd, rs1, imm),
            Srliw { rd, rs1, imm } => sh!("srliw", rd, rs1, imm),
            Sraiw { rd, rs1, imm } => sh!("sraiw", rd, rs1, imm),
            Add { rd, rs1, rs2 } => r3!("add", rd, rs1, rs2),
            Sub { rd, rs1, rs2 } => r3!("sub", rd, rs1, rs2),
            Sll { rd, rs1, rs2 } => r3!("sll", rd, rs1, rs2),
            Slt { rd, rs1, rs2 } => r3!("slt", rd, rs1, rs2),
            Sltu { rd, rs1, rs2 } => r3!("sltu", rd, rs1, rs2),
            Xor { rd, rs1, rs2 } => r3!("xor", rd, rs1, rs2),
            Srl { rd, rs1, rs2 } => r3!("srl", rd, rs1, rs2),
            Sra { rd, rs1, rs2 } => r3!("sra", rd, rs1, rs2),
            Or { rd, rs1, rs2 } => r3!("or", rd, rs1, rs2),
            And { rd, rs1, rs2 } => r3!("and", rd, rs1, rs2),
            Addw { rd, rs1, rs2 } => r3!("addw", rd, rs1, rs2),
            Subw { rd, rs1, rs2 } => r3!("subw", rd, rs1, rs2),
            Sllw { rd, rs1, rs2 } => r3!("sllw", rd, rs1, rs2),
            Srlw { rd, rs1, rs2 } => r3!("srlw", rd, rs1, rs2),
            Sraw { rd, rs1, rs2 } => r3!("sraw", rd, rs1, rs2),
            Mul { rd, rs1, rs2 } => r3!("mul", rd, rs1, rs2),
            Mulh { rd, rs1, rs2 } => r3!("mulh", rd, rs1, rs2),
            Mulhsu { rd, rs1, rs2 } => r3!("mulhsu", rd, rs1, rs2),
            Mulhu { rd, rs1, rs2 } => r3!("mulhu", rd, rs1, rs2),
            Div { rd, rs1, rs2 } => r3!("div", rd, rs1, rs2),
            Divu { rd, rs1, rs2 } => r3!("divu", rd, rs1, rs2),
            Rem { rd, rs1, rs2 } => r3!("rem", rd, rs1, rs2),
            Remu { rd, rs1, rs2 } => r3!("remu", rd, rs1, rs2),
            Mulw { rd, rs1, rs2 } => r3!("mulw", rd, rs1, rs2),
            Divw { rd, rs1, rs2 } => r3!("divw", rd, rs1, rs2),
            Divuw { rd, rs1, rs2 } => r3!("divuw", rd, rs1, rs2),
            Remw { rd, rs1, rs2 } => r3!("remw", rd, rs1, rs2),
            Remuw { rd, rs1, rs2 } => r3!("remuw", rd, rs1, rs2),
            Fence { pred, succ, fm } => {
                if *fm == 8 && *pred == 3 && *succ == 3 {
                    f.write_str("fence.tso")
                } else if *pred == 0 || *succ == 0 {
                    // objdump has no syntax for an empty set (e.g. `pause`)
                    let raw = ((*fm as u32) << 28)
                        | ((*pred as u32) << 24)
                        | ((*succ as u32) << 20)
                        | 0x0f;
                    write!(f, ".word 0x{raw:08x}")
                } else {
                    write!(f, "fence {},{}", fence_set(*pred), fence_set(*succ))
                }
            }
            FenceI => f.write_str("fence.i"),
            Ecall => f.write_str("ecall"),
            Ebreak => f.write_str("ebreak"),
            Mret => f.write_str("mret"),
            Sret => f.write_str("sret"),
            Wfi => f.write_str("wfi"),
            SfenceVma { rs1, rs2 } => write!(f, "sfence.vma {},{}", x(*rs1), x(*rs2)),
            Csrrw { rd, rs1, csr } => write!(f, "csrrw {},{},{}", x(*rd), Csr(*csr), x(*rs1)),
            Csrrs { rd, rs1, csr } => write!(f, "csrrs {},{},{}", x(*rd), Csr(*csr), x(*rs1)),
            Csrrc { rd, rs1, csr } => write!(f, "csrrc {},{},{}", x(*rd), Csr(*csr), x(*rs1)),
            Csrrwi { rd, uimm, csr } => write!(f, "csrrwi {},{},{}", x(*rd), Csr(*csr), uimm),
            Csrrsi { rd, uimm, csr } => write!(f, "csrrsi {},{},{}", x(*rd), Csr(*csr), uimm),
            Csrrci { rd, uimm, csr } => write!(f, "csrrci {},{},{}", x(*rd), Csr(*csr), uimm),
            Marker { op } => write!(f, "slti zero,zero,{}", MARKER_IMM_FIRST + op),
            LrW { rd, rs1, aqrl } => write!(f, "lr.w{} {},({})", ordering(*aqrl), x(*rd), x(*rs1)),
            LrD { rd, rs1, aqrl } => write!(f, "lr.d{} {},({})", ordering(*aqrl), x(*rd), x(*rs1)),
            ScW { rd, rs1, rs2, aqrl } => {
                write!(
                    f,
                    "sc.w{} {},{},({})",
                    ordering(*aqrl),
                    x(*rd),
                    x(*rs2),
                    x(*rs1)
                )
            }
            ScD { rd, rs1, rs2, aqrl } => {
                write!(
                    f,
                    "sc.d{} {},{},({})",
                    ordering(*aqrl),
                    x(*rd),
                    x(*rs2),
                    x(*rs1)
                )
            }
            AmoW {
                op,
                rd,
                rs1,
                rs2,
                aqrl,
            } => {
                write!(
                    f,
                    "{}.w{} {},{},({})",
                    op.name(),
                    ordering(*aqrl),
                    x(*rd),
                    x(*rs2),
                    x(*rs1)
                )
            }
            AmoD {
                op,
                rd,
                rs1,
                rs2,
                aqrl,
            } => {
                write!(
                    f,
                    "{}.d{} {},{},({})",
                    op.name(),
                    ordering(*aqrl),
                    x(*rd),
                    x(*rs2),
                    x(*rs1)
                )
            }
            Flw { rd, rs1, imm } => write!(f, "flw {},{}({})", fr(*rd), imm, x(*rs1)),
            Fld { rd, rs1, imm } => write!(f, "fld {},{}({})", fr(*rd), imm, x(*rs1)),
            Fsw { rs1, rs2, imm } => write!(f, "fsw {},{}({})", fr(*rs2), imm, x(*rs1)),
            Fsd { rs1, rs2, imm } => write!(f, "fsd {},{}({})", fr(*rs2), imm, x(*rs1)),
            Fma {
                op,
                dbl,
                rd,
                rs1,
                rs2,
                rs3,
                rm,
            } => {
                let suffix = if *dbl { "d" } else { "s" };
                write!(
                    f,
                    "{}.{} {},{},{},{}",
                    op.name(),
                    suffix,
                    fr(*rd),
                    fr(*rs1),
                    fr(*rs2),
                    fr(*rs3)
                )?;
                if *rm != 7 {
                    write!(f, ",{}", RM[*rm as usize & 7])?;
                }
                Ok(())
            }
            Fp {
                op,
                rd,
                rs1,
                rs2,
                rm,
            } => {
                let d = if op.rd_is_int() { x(*rd) } else { fr(*rd) };
                let s1 = if op.rs1_is_int() { x(*rs1) } else { fr(*rs1) };
                write!(f, "{} {},{}", op.name(), d, s1)?;
                if op.sources() == 2 {
                    write!(f, ",{}", fr(*rs2))?;
                }
                // exact conversions: objdump omits the (irrelevant) rm when it is 0
                let exact = matches!(op, FpOp::FcvtDW | FpOp::FcvtDWu | FpOp::FcvtDS);
                if op.has_rm() && *rm != 7 && !(exact && *rm == 0) {
                    write!(f, ",{}", RM[*rm as usize & 7])?;
                }
                Ok(())
            }
        }
    }
}
