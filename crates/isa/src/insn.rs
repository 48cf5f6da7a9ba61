//! The decoded instruction type.

/// One decoded instruction. Register fields are 0..=31; immediates are
/// already sign-extended (and, for `lui`/`auipc`, shifted into place).
/// `aqrl` holds the AMO ordering bits (`aq << 1 | rl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Insn {
    /// Reserved or unsupported encoding; carries the raw bits (16-bit
    /// forms zero-extended) for `mtval`.
    Illegal(u32),

    Lui {
        rd: u8,
        imm: i32,
    },
    Auipc {
        rd: u8,
        imm: i32,
    },
    Jal {
        rd: u8,
        imm: i32,
    },
    Jalr {
        rd: u8,
        rs1: u8,
        imm: i32,
    },

    Beq {
        rs1: u8,
        rs2: u8,
        imm: i32,
    },
    Bne {
        rs1: u8,
        rs2: u8,
        imm: i32,
    },
    Blt {
        rs1: u8,
        rs2: u8,
        imm: i32,
    },
    Bge {
        rs1: u8,
        rs2: u8,
        imm: i32,
    },
    Bltu {
        rs1: u8,
        rs2: u8,
        imm: i32,
    },
    Bgeu {
        rs1: u8,
        rs2: u8,
        imm: i32,
    },

    Lb {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Lh {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Lw {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Ld {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Lbu {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Lhu {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Lwu {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Sb {
        rs1: u8,
        rs2: u8,
        imm: i32,
    },
    Sh {
        rs1: u8,
        rs2: u8,
        imm: i32,
    },
    Sw {
        rs1: u8,
        rs2: u8,
        imm: i32,
    },
    Sd {
        rs1: u8,
        rs2: u8,
        imm: i32,
    },

    Addi {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Slti {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Sltiu {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Xori {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Ori {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Andi {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Slli {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Srli {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Srai {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Addiw {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Slliw {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Srliw {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Sraiw {
        rd: u8,
        rs1: u8,
        imm: i32,
    },

    Add {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Sub {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Sll {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Slt {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Sltu {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Xor {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Srl {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Sra {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Or {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    And {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Addw {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Subw {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Sllw {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Srlw {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Sraw {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },

    Mul {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Mulh {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Mulhsu {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Mulhu {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Div {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Divu {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Rem {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Remu {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Mulw {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Divw {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Divuw {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Remw {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },
    Remuw {
        rd: u8,
        rs1: u8,
        rs2: u8,
    },

    /// `fence`; `fm` = 0b1000 with pred = succ = rw is `fence.tso`.
    Fence {
        pred: u8,
        succ: u8,
        fm: u8,
    },
    FenceI,
    Ecall,
    Ebreak,
    Mret,
    Sret,
    Wfi,
    SfenceVma {
        rs1: u8,
        rs2: u8,
    },

    Csrrw {
        rd: u8,
        rs1: u8,
        csr: u16,
    },
    Csrrs {
        rd: u8,
        rs1: u8,
        csr: u16,
    },
    Csrrc {
        rd: u8,
        rs1: u8,
        csr: u16,
    },
    Csrrwi {
        rd: u8,
        uimm: u8,
        csr: u16,
    },
    Csrrsi {
        rd: u8,
        uimm: u8,
        csr: u16,
    },
    Csrrci {
        rd: u8,
        uimm: u8,
        csr: u16,
    },

    /// The hartscope marker HINT; `op` = imm - 0x480 (0..=15).
    Marker {
        op: u16,
    },

    LrW {
        rd: u8,
        rs1: u8,
        aqrl: u8,
    },
    LrD {
        rd: u8,
        rs1: u8,
        aqrl: u8,
    },
    ScW {
        rd: u8,
        rs1: u8,
        rs2: u8,
        aqrl: u8,
    },
    ScD {
        rd: u8,
        rs1: u8,
        rs2: u8,
        aqrl: u8,
    },
    AmoW {
        op: AmoOp,
        rd: u8,
        rs1: u8,
        rs2: u8,
        aqrl: u8,
    },
    AmoD {
        op: AmoOp,
        rd: u8,
        rs1: u8,
        rs2: u8,
        aqrl: u8,
    },

    Flw {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Fld {
        rd: u8,
        rs1: u8,
        imm: i32,
    },
    Fsw {
        rs1: u8,
        rs2: u8,
        imm: i32,
    },
    Fsd {
        rs1: u8,
        rs2: u8,
        imm: i32,
    },
    /// Fused multiply-add family; `rm` is the raw field (7 = dynamic).
    Fma {
        op: FmaOp,
        dbl: bool,
        rd: u8,
        rs1: u8,
        rs2: u8,
        rs3: u8,
        rm: u8,
    },
    /// Every other OP-FP instruction. Which of rd/rs1 are integer registers
    /// depends on `op` (see [`FpOp::rd_is_int`], [`FpOp::rs1_is_int`]);
    /// `rm` is the raw field and meaningful only when [`FpOp::has_rm`].
    Fp {
        op: FpOp,
        rd: u8,
        rs1: u8,
        rs2: u8,
        rm: u8,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmoOp {
    Swap,
    Add,
    Xor,
    And,
    Or,
    Min,
    Max,
    Minu,
    Maxu,
}

impl AmoOp {
    pub fn name(self) -> &'static str {
        match self {
            AmoOp::Swap => "amoswap",
            AmoOp::Add => "amoadd",
            AmoOp::Xor => "amoxor",
            AmoOp::And => "amoand",
            AmoOp::Or => "amoor",
            AmoOp::Min => "amomin",
            AmoOp::Max => "amomax",
            AmoOp::Minu => "amominu",
            AmoOp::Maxu => "amomaxu",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FmaOp {
    /// a*b+c
    Madd,
    /// a*b-c
    Msub,
    /// -(a*b)+c
    Nmsub,
    /// -(a*b)-c
    Nmadd,
}

impl FmaOp {
    pub fn name(self) -> &'static str {
        match self {
            FmaOp::Madd => "fmadd",
            FmaOp::Msub => "fmsub",
            FmaOp::Nmsub => "fnmsub",
            FmaOp::Nmadd => "fnmadd",
        }
    }
}

macro_rules! fp_ops {
    ($( $v:ident = $name:literal, $rd_int:literal, $rs1_int:literal, $nsrc:literal, $rm:literal, $dbl:literal; )*) => {
        /// OP-FP operations. `S` = single, `D` = double; conversions name
        /// destination then source, as the mnemonic does.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum FpOp { $($v,)* }
        impl FpOp {
            /// The mnemonic, e.g. `fcvt.w.d`.
            pub fn name(self) -> &'static str { match self { $(FpOp::$v => $name,)* } }
            /// rd is an integer register.
            pub fn rd_is_int(self) -> bool { match self { $(FpOp::$v => $rd_int,)* } }
            /// rs1 is an integer register.
            pub fn rs1_is_int(self) -> bool { match self { $(FpOp::$v => $rs1_int,)* } }
            /// Number of register sources (1 or 2).
            pub fn sources(self) -> u8 { match self { $(FpOp::$v => $nsrc,)* } }
            /// The instruction has a rounding-mode field.
            pub fn has_rm(self) -> bool { match self { $(FpOp::$v => $rm,)* } }
            /// Operates on (or produces) double precision; used for NaN-boxing and FS.
            pub fn is_double(self) -> bool { match self { $(FpOp::$v => $dbl,)* } }
        }
    };
}

fp_ops! {
    FaddS = "fadd.s", false, false, 2, true, false;
    FsubS = "fsub.s", false, false, 2, true, false;
    FmulS = "fmul.s", false, false, 2, true, false;
    FdivS = "fdiv.s", false, false, 2, true, false;
    FsqrtS = "fsqrt.s", false, false, 1, true, false;
    FsgnjS = "fsgnj.s", false, false, 2, false, false;
    FsgnjnS = "fsgnjn.s", false, false, 2, false, false;
    FsgnjxS = "fsgnjx.s", false, false, 2, false, false;
    FminS = "fmin.s", false, false, 2, false, false;
    FmaxS = "fmax.s", false, false, 2, false, false;
    FcvtWS = "fcvt.w.s", true, false, 1, true, false;
    FcvtWuS = "fcvt.wu.s", true, false, 1, true, false;
    FcvtLS = "fcvt.l.s", true, false, 1, true, false;
    FcvtLuS = "fcvt.lu.s", true, false, 1, true, false;
    FmvXW = "fmv.x.w", true, false, 1, false, false;
    FclassS = "fclass.s", true, false, 1, false, false;
    FeqS = "feq.s", true, false, 2, false, false;
    FltS = "flt.s", true, false, 2, false, false;
    FleS = "fle.s", true, false, 2, false, false;
    FcvtSW = "fcvt.s.w", false, true, 1, true, false;
    FcvtSWu = "fcvt.s.wu", false, true, 1, true, false;
    FcvtSL = "fcvt.s.l", false, true, 1, true, false;
    FcvtSLu = "fcvt.s.lu", false, true, 1, true, false;
    FmvWX = "fmv.w.x", false, true, 1, false, false;
    FaddD = "fadd.d", false, false, 2, true, true;
    FsubD = "fsub.d", false, false, 2, true, true;
    FmulD = "fmul.d", false, false, 2, true, true;
    FdivD = "fdiv.d", false, false, 2, true, true;
    FsqrtD = "fsqrt.d", false, false, 1, true, true;
    FsgnjD = "fsgnj.d", false, false, 2, false, true;
    FsgnjnD = "fsgnjn.d", false, false, 2, false, true;
    FsgnjxD = "fsgnjx.d", false, false, 2, false, true;
    FminD = "fmin.d", false, false, 2, false, true;
    FmaxD = "fmax.d", false, false, 2, false, true;
    FcvtWD = "fcvt.w.d", true, false, 1, true, true;
    FcvtWuD = "fcvt.wu.d", true, false, 1, true, true;
    FcvtLD = "fcvt.l.d", true, false, 1, true, true;
    FcvtLuD = "fcvt.lu.d", true, false, 1, true, true;
    FmvXD = "fmv.x.d", true, false, 1, false, true;
    FclassD = "fclass.d", true, false, 1, false, true;
    FeqD = "feq.d", true, false, 2, false, true;
    FltD = "flt.d", true, false, 2, false, true;
    FleD = "fle.d", true, false, 2, false, true;
    FcvtDW = "fcvt.d.w", false, true, 1, true, true;
    FcvtDWu = "fcvt.d.wu", false, true, 1, true, true;
    FcvtDL = "fcvt.d.l", false, true, 1, true, true;
    FcvtDLu = "fcvt.d.lu", false, true, 1, true, true;
    FmvDX = "fmv.d.x", false, true, 1, false, true;
    FcvtSD = "fcvt.s.d", false, false, 1, true, false;
    FcvtDS = "fcvt.d.s", false, false, 1, true, true;
}

impl Insn {
    /// Does this instruction end a decoded block? (Control flow, anything
    /// that can change privilege, translation, CSRs or the instruction
    /// stream, and the marker, which leaves the run loop.)
    pub fn ends_block(&self) -> bool {
        use Insn::*;
        matches!(
            self,
            Illegal(_)
                | Jal { .. }
                | Jalr { .. }
                | Beq { .. }
                | Bne { .. }
                | Blt { .. }
                | Bge { .. }
                | Bltu { .. }
                | Bgeu { .. }
                | FenceI
                | Ecall
                | Ebreak
                | Mret
                | Sret
                | Wfi
                | SfenceVma { .. }
                | Csrrw { .. }
                | Csrrs { .. }
                | Csrrc { .. }
                | Csrrwi { .. }
                | Csrrsi { .. }
                | Csrrci { .. }
                | Marker { .. }
        )
    }
}
