//! A tiny RV64 assembler and a minimal ELF64 executable writer, so
//! bare-metal test programs need no cross toolchain.

use std::collections::HashMap;

pub const ZERO: u32 = 0;
pub const RA: u32 = 1;
pub const SP: u32 = 2;
pub const T0: u32 = 5;
pub const T1: u32 = 6;
pub const T2: u32 = 7;
pub const A0: u32 = 10;
pub const A1: u32 = 11;
pub const A2: u32 = 12;
pub const A3: u32 = 13;
pub const T3: u32 = 28;

pub const CSR_MSTATUS: u32 = 0x300;
pub const CSR_MIE: u32 = 0x304;
pub const CSR_MTVEC: u32 = 0x305;
pub const CSR_MCAUSE: u32 = 0x342;
pub const CSR_MHARTID: u32 = 0xf14;
pub const CSR_MIP: u32 = 0x344;

enum Fixup {
    Branch {
        at: usize,
        label: String,
    },
    Jal {
        at: usize,
        label: String,
    },
    /// auipc+addi pair loading a label's address.
    La {
        at: usize,
        label: String,
    },
}

/// Assembles at a fixed base address; labels are resolved by `finish`.
pub struct Asm {
    pub base: u64,
    pub bytes: Vec<u8>,
    labels: HashMap<String, u64>,
    fixups: Vec<Fixup>,
}

fn r(op: u32, rd: u32, f3: u32, rs1: u32, rs2: u32, f7: u32) -> u32 {
    op | rd << 7 | f3 << 12 | rs1 << 15 | rs2 << 20 | f7 << 25
}
fn i(op: u32, rd: u32, f3: u32, rs1: u32, imm: i32) -> u32 {
    op | rd << 7 | f3 << 12 | rs1 << 15 | ((imm as u32) & 0xfff) << 20
}
fn s(op: u32, f3: u32, rs1: u32, rs2: u32, imm: i32) -> u32 {
    let imm = imm as u32;
    op | (imm & 0x1f) << 7 | f3 << 12 | rs1 << 15 | rs2 << 20 | ((imm >> 5) & 0x7f) << 25
}
fn b_imm(off: i64) -> u32 {
    let o = off as u32;
    ((o >> 12) & 1) << 31 | ((o >> 5) & 0x3f) << 25 | ((o >> 1) & 0xf) << 8 | ((o >> 11) & 1) << 7
}
fn j_imm(off: i64) -> u32 {
    let o = off as u32;
    ((o >> 20) & 1) << 31
        | ((o >> 1) & 0x3ff) << 21
        | ((o >> 11) & 1) << 20
        | ((o >> 12) & 0xff) << 12
}

impl Asm {
    pub fn new(base: u64) -> Self {
        Self {
            base,
            bytes: Vec::new(),
            labels: HashMap::new(),
            fixups: Vec::new(),
        }
    }
    pub fn pc(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }
    pub fn word(&mut self, w: u32) -> &mut Self {
        self.bytes.extend_from_slice(&w.to_le_bytes());
        self
    }
    pub fn label(&mut self, name: &str) -> &mut Self {
        self.labels.insert(name.into(), self.pc());
        self
    }
    pub fn addr(&self, name: &str) -> u64 {
        self.labels[name]
    }
    pub fn align(&mut self, n: usize) -> &mut Self {
        while !self.bytes.len().is_multiple_of(n) {
            self.bytes.push(0);
        }
        self
    }
    pub fn data(&mut self, d: &[u8]) -> &mut Self {
        self.bytes.extend_from_slice(d);
        self
    }
    pub fn addi(&mut self, rd: u32, rs1: u32, imm: i32) -> &mut Self {
        self.word(i(0x13, rd, 0, rs1, imm))
    }
    pub fn slli(&mut self, rd: u32, rs1: u32, sh: u32) -> &mut Self {
        self.word(i(0x13, rd, 1, rs1, sh as i32))
    }
    pub fn srli(&mut self, rd: u32, rs1: u32, sh: u32) -> &mut Self {
        self.word(i(0x13, rd, 5, rs1, sh as i32))
    }
    pub fn or(&mut self, rd: u32, rs1: u32, rs2: u32) -> &mut Self {
        self.word(r(0x33, rd, 6, rs1, rs2, 0))
    }
    pub fn add(&mut self, rd: u32, rs1: u32, rs2: u32) -> &mut Self {
        self.word(r(0x33, rd, 0, rs1, rs2, 0))
    }
    pub fn lui(&mut self, rd: u32, imm20: u32) -> &mut Self {
        self.word(0x37 | rd << 7 | (imm20 & 0xfffff) << 12)
    }
    /// Load any 64-bit constant (lui/addi pieces and shifts).
    pub fn li(&mut self, rd: u32, v: u64) -> &mut Self {
        let sv = v as i64;
        if (-2048..2048).contains(&sv) {
            return self.addi(rd, ZERO, sv as i32);
        }
        if sv >= i32::MIN as i64 && sv <= i32::MAX as i64 {
            let lo = ((sv << 52) >> 52) as i32;
            let hi = ((sv - lo as i64) >> 12) as u32;
            self.lui(rd, hi);
            // addiw keeps the 32-bit sign extension right
            return self.word(i(0x1b, rd, 0, rd, lo));
        }
        // Build from the top 12 bits down, 12 bits at a time.
        let lo = (sv << 52) >> 52;
        let rest = (sv - lo) >> 12;
        self.li(rd, rest as u64);
        self.slli(rd, rd, 12);
        if lo != 0 {
            self.addi(rd, rd, lo as i32);
        }
        self
    }
    pub fn ld(&mut self, rd: u32, rs1: u32, off: i32) -> &mut Self {
        self.word(i(0x03, rd, 3, rs1, off))
    }
    pub fn lw(&mut self, rd: u32, rs1: u32, off: i32) -> &mut Self {
        self.word(i(0x03, rd, 2, rs1, off))
    }
    pub fn lbu(&mut self, rd: u32, rs1: u32, off: i32) -> &mut Self {
        self.word(i(0x03, rd, 4, rs1, off))
    }
    pub fn sd(&mut self, rs2: u32, rs1: u32, off: i32) -> &mut Self {
        self.word(s(0x23, 3, rs1, rs2, off))
    }
    pub fn sw(&mut self, rs2: u32, rs1: u32, off: i32) -> &mut Self {
        self.word(s(0x23, 2, rs1, rs2, off))
    }
    pub fn sb(&mut self, rs2: u32, rs1: u32, off: i32) -> &mut Self {
        self.word(s(0x23, 0, rs1, rs2, off))
    }
    fn branch(&mut self, f3: u32, rs1: u32, rs2: u32, label: &str) -> &mut Self {
        self.fixups.push(Fixup::Branch {
            at: self.bytes.len(),
            label: label.into(),
        });
        self.word(r(0x63, 0, f3, rs1, rs2, 0))
    }
    pub fn beq(&mut self, rs1: u32, rs2: u32, l: &str) -> &mut Self {
        self.branch(0, rs1, rs2, l)
    }
    pub fn bne(&mut self, rs1: u32, rs2: u32, l: &str) -> &mut Self {
        self.branch(1, rs1, rs2, l)
    }
    pub fn bltu(&mut self, rs1: u32, rs2: u32, l: &str) -> &mut Self {
        self.branch(6, rs1, rs2, l)
    }
    pub fn j(&mut self, l: &str) -> &mut Self {
        self.jal(ZERO, l)
    }
    /// `jal rd, l` (a call with rd = ra).
    pub fn jal(&mut self, rd: u32, l: &str) -> &mut Self {
        self.fixups.push(Fixup::Jal {
            at: self.bytes.len(),
            label: l.into(),
        });
        self.word(0x6f | rd << 7)
    }
    /// `jalr rd, off(rs1)` (`ret` is `jalr zero, 0(ra)`).
    pub fn jalr(&mut self, rd: u32, rs1: u32, off: i32) -> &mut Self {
        self.word(i(0x67, rd, 0, rs1, off))
    }
    pub fn la(&mut self, rd: u32, l: &str) -> &mut Self {
        self.fixups.push(Fixup::La {
            at: self.bytes.len(),
            label: l.into(),
        });
        self.word(0x17 | rd << 7);
        self.word(i(0x13, rd, 0, rd, 0))
    }
    pub fn csrw(&mut self, csr: u32, rs1: u32) -> &mut Self {
        self.word(0x73 | 1 << 12 | rs1 << 15 | csr << 20)
    }
    pub fn csrr(&mut self, rd: u32, csr: u32) -> &mut Self {
        self.word(0x73 | rd << 7 | 2 << 12 | csr << 20)
    }
    pub fn csrs(&mut self, csr: u32, rs1: u32) -> &mut Self {
        self.word(0x73 | 2 << 12 | rs1 << 15 | csr << 20)
    }
    pub fn wfi(&mut self) -> &mut Self {
        self.word(0x1050_0073)
    }
    pub fn mret(&mut self) -> &mut Self {
        self.word(0x3020_0073)
    }
    /// `slti zero, zero, imm`: the hartscope marker HINT.
    pub fn marker(&mut self, imm: u32) -> &mut Self {
        self.word(i(0x13, 0, 2, 0, imm as i32))
    }
    pub fn finish(&mut self) -> Vec<u8> {
        for f in std::mem::take(&mut self.fixups) {
            match f {
                Fixup::Branch { at, label } => {
                    let off = self.labels[&label] as i64 - (self.base + at as u64) as i64;
                    let w =
                        u32::from_le_bytes(self.bytes[at..at + 4].try_into().unwrap()) | b_imm(off);
                    self.bytes[at..at + 4].copy_from_slice(&w.to_le_bytes());
                }
                Fixup::Jal { at, label } => {
                    let off = self.labels[&label] as i64 - (self.base + at as u64) as i64;
                    let w =
                        u32::from_le_bytes(self.bytes[at..at + 4].try_into().unwrap()) | j_imm(off);
                    self.bytes[at..at + 4].copy_from_slice(&w.to_le_bytes());
                }
                Fixup::La { at, label } => {
                    let off = self.labels[&label] as i64 - (self.base + at as u64) as i64;
                    let lo = ((off << 52) >> 52) as i32;
                    let hi = ((off - lo as i64) >> 12) as u32;
                    let w1 = u32::from_le_bytes(self.bytes[at..at + 4].try_into().unwrap())
                        | (hi & 0xfffff) << 12;
                    let w2 = u32::from_le_bytes(self.bytes[at + 4..at + 8].try_into().unwrap())
                        | ((lo as u32) & 0xfff) << 20;
                    self.bytes[at..at + 4].copy_from_slice(&w1.to_le_bytes());
                    self.bytes[at + 4..at + 8].copy_from_slice(&w2.to_le_bytes());
                }
            }
        }
        self.bytes.clone()
    }
}

/// A static ELF64 RISC-V executable: one PT_LOAD of `image` at `base`
/// (entry = base) and a symbol table holding `symbols`.
pub fn elf(base: u64, image: &[u8], symbols: &[(&str, u64)]) -> Vec<u8> {
    const EHDR: usize = 64;
    const PHDR: usize = 56;
    const TEXT_OFF: usize = 0x1000;
    let mut out = vec![0u8; TEXT_OFF];
    out.extend_from_slice(image);
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
    // .strtab
    let strtab_off = out.len();
    let mut strtab = vec![0u8];
    let mut name_offs = Vec::new();
    for (n, _) in symbols {
        name_offs.push(strtab.len() as u32);
        strtab.extend_from_slice(n.as_bytes());
        strtab.push(0);
    }
    out.extend_from_slice(&strtab);
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
    // .symtab: null + one global object per symbol, in section 1 (.text)
    let symtab_off = out.len();
    out.extend_from_slice(&[0u8; 24]);
    for ((_, addr), name) in symbols.iter().zip(&name_offs) {
        let mut sym = Vec::new();
        sym.extend_from_slice(&name.to_le_bytes());
        sym.push(0x11); // STB_GLOBAL, STT_OBJECT
        sym.push(0);
        sym.extend_from_slice(&1u16.to_le_bytes());
        sym.extend_from_slice(&addr.to_le_bytes());
        sym.extend_from_slice(&8u64.to_le_bytes());
        out.extend_from_slice(&sym);
    }
    let symtab_size = out.len() - symtab_off;
    // .shstrtab
    let shstr_off = out.len();
    let shstr = b"\0.text\0.symtab\0.strtab\0.shstrtab\0";
    out.extend_from_slice(shstr);
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
    let shoff = out.len();
    let sh = |name: u32,
              ty: u32,
              flags: u64,
              addr: u64,
              off: usize,
              size: usize,
              link: u32,
              info: u32,
              align: u64,
              entsize: u64| {
        let mut v = Vec::new();
        v.extend_from_slice(&name.to_le_bytes());
        v.extend_from_slice(&ty.to_le_bytes());
        v.extend_from_slice(&flags.to_le_bytes());
        v.extend_from_slice(&addr.to_le_bytes());
        v.extend_from_slice(&(off as u64).to_le_bytes());
        v.extend_from_slice(&(size as u64).to_le_bytes());
        v.extend_from_slice(&link.to_le_bytes());
        v.extend_from_slice(&info.to_le_bytes());
        v.extend_from_slice(&align.to_le_bytes());
        v.extend_from_slice(&entsize.to_le_bytes());
        v
    };
    out.extend(sh(0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
    out.extend(sh(1, 1, 0x7, base, TEXT_OFF, image.len(), 0, 0, 4, 0)); // .text PROGBITS AWX
    out.extend(sh(7, 2, 0, 0, symtab_off, symtab_size, 3, 1, 8, 24)); // .symtab
    out.extend(sh(15, 3, 0, 0, strtab_off, strtab.len(), 0, 0, 1, 0)); // .strtab
    out.extend(sh(23, 3, 0, 0, shstr_off, shstr.len(), 0, 0, 1, 0)); // .shstrtab

    let mut h = Vec::new();
    h.extend_from_slice(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0");
    h.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    h.extend_from_slice(&243u16.to_le_bytes()); // EM_RISCV
    h.extend_from_slice(&1u32.to_le_bytes());
    h.extend_from_slice(&base.to_le_bytes()); // entry
    h.extend_from_slice(&(EHDR as u64).to_le_bytes()); // phoff
    h.extend_from_slice(&(shoff as u64).to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes()); // flags
    h.extend_from_slice(&(EHDR as u16).to_le_bytes());
    h.extend_from_slice(&(PHDR as u16).to_le_bytes());
    h.extend_from_slice(&1u16.to_le_bytes()); // phnum
    h.extend_from_slice(&64u16.to_le_bytes()); // shentsize
    h.extend_from_slice(&5u16.to_le_bytes()); // shnum
    h.extend_from_slice(&4u16.to_le_bytes()); // shstrndx
    let mut p = Vec::new();
    p.extend_from_slice(&1u32.to_le_bytes()); // PT_LOAD
    p.extend_from_slice(&7u32.to_le_bytes()); // RWX
    p.extend_from_slice(&(TEXT_OFF as u64).to_le_bytes());
    p.extend_from_slice(&base.to_le_bytes()); // vaddr
    p.extend_from_slice(&base.to_le_bytes()); // paddr
    p.extend_from_slice(&(image.len() as u64).to_le_bytes());
    p.extend_from_slice(&(image.len() as u64).to_le_bytes());
    p.extend_from_slice(&0x1000u64.to_le_bytes());
    out[..EHDR].copy_from_slice(&h);
    out[EHDR..EHDR + PHDR].copy_from_slice(&p);
    out
}
