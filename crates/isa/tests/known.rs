//! Tables of known encodings. The expected texts and expansions were produced
//! by GNU as/objdump 2.40 (`-M no-aliases`), not by this crate.

use hs_isa::{decode, decode16, decode32, disasm, Insn};

/// (pc, word, objdump text)
const KNOWN32: &[(u64, u32, &str)] = &[
    (0x0, 0x12345537, "lui a0,0x12345"),
    (0x4, 0xffffffb7, "lui t6,0xfffff"),
    (0x8, 0x00000517, "auipc a0,0x0"),
    (0xc, 0x80000497, "auipc s1,0x80000"),
    (0x10, 0xff1ff0ef, "jal ra,0"),
    (0x14, 0x7ffff06f, "jal zero,100012"),
    (0x18, 0x000500e7, "jalr ra,0(a0)"),
    (0x1c, 0x80008067, "jalr zero,-2048(ra)"),
    (0x20, 0xfeb500e3, "beq a0,a1,0"),
    (0x24, 0x7e941fe3, "bne s0,s1,1022"),
    (0x28, 0x8062c063, "blt t0,t1,fffffffffffff028"),
    (0x2c, 0x00055463, "bge a0,zero,34"),
    (0x30, 0x00d66863, "bltu a2,a3,40"),
    (0x34, 0xfef778e3, "bgeu a4,a5,24"),
    (0x38, 0x80010503, "lb a0,-2048(sp)"),
    (0x3c, 0x7ff51583, "lh a1,2047(a0)"),
    (0x40, 0xff812503, "lw a0,-8(sp)"),
    (0x44, 0x00033283, "ld t0,0(t1)"),
    (0x48, 0x0019c903, "lbu s2,1(s3)"),
    (0x4c, 0x002ada03, "lhu s4,2(s5)"),
    (0x50, 0x004beb03, "lwu s6,4(s7)"),
    (0x54, 0xfea58fa3, "sb a0,-1(a1)"),
    (0x58, 0x00c69123, "sh a2,2(a3)"),
    (0x5c, 0x00e7a223, "sw a4,4(a5)"),
    (0x60, 0x00a13423, "sd a0,8(sp)"),
    (0x64, 0xfff50513, "addi a0,a0,-1"),
    (0x68, 0x80062593, "slti a1,a2,-2048"),
    (0x6c, 0x7ff73693, "sltiu a3,a4,2047"),
    (0x70, 0xfff84793, "xori a5,a6,-1"),
    (0x74, 0x0ff96893, "ori a7,s2,255"),
    (0x78, 0x00fa7993, "andi s3,s4,15"),
    (0x7c, 0x00351513, "slli a0,a0,0x3"),
    (0x80, 0x03f55513, "srli a0,a0,0x3f"),
    (0x84, 0x43f55513, "srai a0,a0,0x3f"),
    (0x88, 0xffb5851b, "addiw a0,a1,-5"),
    (0x8c, 0x01f5151b, "slliw a0,a0,0x1f"),
    (0x90, 0x0016559b, "srliw a1,a2,0x1"),
    (0x94, 0x4117569b, "sraiw a3,a4,0x11"),
    (0x98, 0x00c58533, "add a0,a1,a2"),
    (0x9c, 0x41ee8e33, "sub t3,t4,t5"),
    (0xa0, 0x00c59533, "sll a0,a1,a2"),
    (0xa4, 0x00c5a533, "slt a0,a1,a2"),
    (0xa8, 0x00c5b533, "sltu a0,a1,a2"),
    (0xac, 0x00c5c533, "xor a0,a1,a2"),
    (0xb0, 0x00c5d533, "srl a0,a1,a2"),
    (0xb4, 0x40c5d533, "sra a0,a1,a2"),
    (0xb8, 0x00c5e533, "or a0,a1,a2"),
    (0xbc, 0x00c5f533, "and a0,a1,a2"),
    (0xc0, 0x00c5853b, "addw a0,a1,a2"),
    (0xc4, 0x40c5853b, "subw a0,a1,a2"),
    (0xc8, 0x00c5953b, "sllw a0,a1,a2"),
    (0xcc, 0x00c5d53b, "srlw a0,a1,a2"),
    (0xd0, 0x40c5d53b, "sraw a0,a1,a2"),
    (0xd4, 0x02c58533, "mul a0,a1,a2"),
    (0xd8, 0x02c59533, "mulh a0,a1,a2"),
    (0xdc, 0x02c5a533, "mulhsu a0,a1,a2"),
    (0xe0, 0x02c5b533, "mulhu a0,a1,a2"),
    (0xe4, 0x02c5c533, "div a0,a1,a2"),
    (0xe8, 0x02c5d533, "divu a0,a1,a2"),
    (0xec, 0x02c5e533, "rem a0,a1,a2"),
    (0xf0, 0x02c5f533, "remu a0,a1,a2"),
    (0xf4, 0x02c5853b, "mulw a0,a1,a2"),
    (0xf8, 0x02c5c53b, "divw a0,a1,a2"),
    (0xfc, 0x02c5d53b, "divuw a0,a1,a2"),
    (0x100, 0x02c5e53b, "remw a0,a1,a2"),
    (0x104, 0x02c5f53b, "remuw a0,a1,a2"),
    (0x108, 0x0ff0000f, "fence iorw,iorw"),
    (0x10c, 0x0210000f, "fence r,w"),
    (0x110, 0x0c30000f, "fence io,rw"),
    (0x114, 0x8330000f, "fence.tso"),
    (0x118, 0x0000100f, "fence.i"),
    (0x11c, 0x00000073, "ecall"),
    (0x120, 0x00100073, "ebreak"),
    (0x124, 0x30200073, "mret"),
    (0x128, 0x10200073, "sret"),
    (0x12c, 0x10500073, "wfi"),
    (0x130, 0x12000073, "sfence.vma zero,zero"),
    (0x134, 0x12050073, "sfence.vma a0,zero"),
    (0x138, 0x12b50073, "sfence.vma a0,a1"),
    (0x13c, 0x30002573, "csrrs a0,mstatus,zero"),
    (0x140, 0x7c051073, "csrrw zero,0x7c0,a0"),
    (0x144, 0x304332f3, "csrrc t0,mie,t1"),
    (0x148, 0x30045073, "csrrwi zero,mstatus,8"),
    (0x14c, 0x144fe573, "csrrsi a0,sip,31"),
    (0x150, 0x10017573, "csrrci a0,sstatus,2"),
    (0x154, 0xc0002573, "csrrs a0,cycle,zero"),
    (0x158, 0xc0102573, "csrrs a0,time,zero"),
    (0x15c, 0xc0202573, "csrrs a0,instret,zero"),
    (0x160, 0xc0302573, "csrrs a0,hpmcounter3,zero"),
    (0x164, 0xc1f02573, "csrrs a0,hpmcounter31,zero"),
    (0x168, 0x3bf02573, "csrrs a0,pmpaddr15,zero"),
    (0x16c, 0x3a002573, "csrrs a0,pmpcfg0,zero"),
    (0x170, 0x3a202573, "csrrs a0,pmpcfg2,zero"),
    (0x174, 0x14d02573, "csrrs a0,stimecmp,zero"),
    (0x178, 0x18002573, "csrrs a0,satp,zero"),
    (0x17c, 0x30202573, "csrrs a0,medeleg,zero"),
    (0x180, 0x30302573, "csrrs a0,mideleg,zero"),
    (0x184, 0x30502573, "csrrs a0,mtvec,zero"),
    (0x188, 0x10502573, "csrrs a0,stvec,zero"),
    (0x18c, 0x34102573, "csrrs a0,mepc,zero"),
    (0x190, 0x34202573, "csrrs a0,mcause,zero"),
    (0x194, 0x34302573, "csrrs a0,mtval,zero"),
    (0x198, 0x34402573, "csrrs a0,mip,zero"),
    (0x19c, 0xf1402573, "csrrs a0,mhartid,zero"),
    (0x1a0, 0x30102573, "csrrs a0,misa,zero"),
    (0x1a4, 0x30602573, "csrrs a0,mcounteren,zero"),
    (0x1a8, 0x10602573, "csrrs a0,scounteren,zero"),
    (0x1ac, 0x34002573, "csrrs a0,mscratch,zero"),
    (0x1b0, 0x14002573, "csrrs a0,sscratch,zero"),
    (0x1b4, 0x14102573, "csrrs a0,sepc,zero"),
    (0x1b8, 0x14202573, "csrrs a0,scause,zero"),
    (0x1bc, 0x14302573, "csrrs a0,stval,zero"),
    (0x1c0, 0xb0002573, "csrrs a0,mcycle,zero"),
    (0x1c4, 0xb0202573, "csrrs a0,minstret,zero"),
    (0x1c8, 0xb0302573, "csrrs a0,mhpmcounter3,zero"),
    (0x1cc, 0x33f02573, "csrrs a0,mhpmevent31,zero"),
    (0x1d0, 0x32002573, "csrrs a0,mcountinhibit,zero"),
    (0x1d4, 0x00102573, "csrrs a0,fflags,zero"),
    (0x1d8, 0x00202573, "csrrs a0,frm,zero"),
    (0x1dc, 0x00302573, "csrrs a0,fcsr,zero"),
    (0x1e0, 0xf1102573, "csrrs a0,mvendorid,zero"),
    (0x1e4, 0xf1202573, "csrrs a0,marchid,zero"),
    (0x1e8, 0xf1302573, "csrrs a0,mimpid,zero"),
    (0x1ec, 0x7a002573, "csrrs a0,tselect,zero"),
    (0x1f0, 0x06b6252f, "amoadd.w.aqrl a0,a1,(a2)"),
    (0x1f4, 0x0cb6352f, "amoswap.d.aq a0,a1,(a2)"),
    (0x1f8, 0x20b6252f, "amoxor.w a0,a1,(a2)"),
    (0x1fc, 0x62b6352f, "amoand.d.rl a0,a1,(a2)"),
    (0x200, 0x40b6252f, "amoor.w a0,a1,(a2)"),
    (0x204, 0x80b6352f, "amomin.d a0,a1,(a2)"),
    (0x208, 0xa0b6252f, "amomax.w a0,a1,(a2)"),
    (0x20c, 0xc0b6352f, "amominu.d a0,a1,(a2)"),
    (0x210, 0xe0b6252f, "amomaxu.w a0,a1,(a2)"),
    (0x214, 0x1005a52f, "lr.w a0,(a1)"),
    (0x218, 0x1605b52f, "lr.d.aqrl a0,(a1)"),
    (0x21c, 0x18b6252f, "sc.w a0,a1,(a2)"),
    (0x220, 0x1ab6352f, "sc.d.rl a0,a1,(a2)"),
    (0x224, 0xffc12507, "flw fa0,-4(sp)"),
    (0x228, 0x7f853f87, "fld ft11,2040(a0)"),
    (0x22c, 0xfea12e27, "fsw fa0,-4(sp)"),
    (0x230, 0x01b13427, "fsd fs11,8(sp)"),
    (0x234, 0x68c5f543, "fmadd.s fa0,fa1,fa2,fa3"),
    (0x238, 0x6ac59547, "fmsub.d fa0,fa1,fa2,fa3,rtz"),
    (0x23c, 0x68c5a54b, "fnmsub.s fa0,fa1,fa2,fa3,rdn"),
    (0x240, 0x6ac5c54f, "fnmadd.d fa0,fa1,fa2,fa3,rmm"),
    (0x244, 0x00c5f553, "fadd.s fa0,fa1,fa2"),
    (0x248, 0x0ac5b553, "fsub.d fa0,fa1,fa2,rup"),
    (0x24c, 0x10c58553, "fmul.s fa0,fa1,fa2,rne"),
    (0x250, 0x1ac5f553, "fdiv.d fa0,fa1,fa2"),
    (0x254, 0x5805f553, "fsqrt.s fa0,fa1"),
    (0x258, 0x5a059553, "fsqrt.d fa0,fa1,rtz"),
    (0x25c, 0x20208053, "fsgnj.s ft0,ft1,ft2"),
    (0x260, 0x22209053, "fsgnjn.d ft0,ft1,ft2"),
    (0x264, 0x2020a053, "fsgnjx.s ft0,ft1,ft2"),
    (0x268, 0x28c58553, "fmin.s fa0,fa1,fa2"),
    (0x26c, 0x2ac59553, "fmax.d fa0,fa1,fa2"),
    (0x270, 0xc0057553, "fcvt.w.s a0,fa0"),
    (0x274, 0xc0151553, "fcvt.wu.s a0,fa0,rtz"),
    (0x278, 0xc0257553, "fcvt.l.s a0,fa0"),
    (0x27c, 0xc0357553, "fcvt.lu.s a0,fa0"),
    (0x280, 0xc2051553, "fcvt.w.d a0,fa0,rtz"),
    (0x284, 0xc2157553, "fcvt.wu.d a0,fa0"),
    (0x288, 0xc2254553, "fcvt.l.d a0,fa0,rmm"),
    (0x28c, 0xc2357553, "fcvt.lu.d a0,fa0"),
    (0x290, 0xe0050553, "fmv.x.w a0,fa0"),
    (0x294, 0xe2050553, "fmv.x.d a0,fa0"),
    (0x298, 0xe0051553, "fclass.s a0,fa0"),
    (0x29c, 0xe2051553, "fclass.d a0,fa0"),
    (0x2a0, 0xa0b52553, "feq.s a0,fa0,fa1"),
    (0x2a4, 0xa0b51553, "flt.s a0,fa0,fa1"),
    (0x2a8, 0xa2b50553, "fle.d a0,fa0,fa1"),
    (0x2ac, 0xd0057553, "fcvt.s.w fa0,a0"),
    (0x2b0, 0xd0151553, "fcvt.s.wu fa0,a0,rtz"),
    (0x2b4, 0xd0257553, "fcvt.s.l fa0,a0"),
    (0x2b8, 0xd0357553, "fcvt.s.lu fa0,a0"),
    (0x2bc, 0xd2050553, "fcvt.d.w fa0,a0"),
    (0x2c0, 0xd2150553, "fcvt.d.wu fa0,a0"),
    (0x2c4, 0xd2251553, "fcvt.d.l fa0,a0,rtz"),
    (0x2c8, 0xd2357553, "fcvt.d.lu fa0,a0"),
    (0x2cc, 0xf0050553, "fmv.w.x fa0,a0"),
    (0x2d0, 0xf2050553, "fmv.d.x fa0,a0"),
    (0x2d4, 0x4015f553, "fcvt.s.d fa0,fa1"),
    (0x2d8, 0x40159553, "fcvt.s.d fa0,fa1,rtz"),
    (0x2dc, 0x42058553, "fcvt.d.s fa0,fa1"),
    (0x2e0, 0x48002013, "slti zero,zero,1152"),
    (0x2e4, 0x48f02013, "slti zero,zero,1167"),
    (0x2e8, 0x49002013, "slti zero,zero,1168"),
    (0x2ec, 0x48052013, "slti zero,a0,1152"),
    (0x2f0, 0x47f02013, "slti zero,zero,1151"),
    (0x2f4, 0xffffffff, ".word 0xffffffff"),
    (0x2fc, 0x0000007f, ".word 0x0000007f"),
    (0x300, 0x0100000f, ".word 0x0100000f"),
];

/// (compressed halfword, the 32-bit encoding gas gives for its expansion)
const COMPRESSED: &[(u16, u32)] = &[
    (0x0808, 0x01010513), // c.addi4spn a0,sp,16
    (0x1fe4, 0x3fc10493), // c.addi4spn s1,sp,1020
    (0x2588, 0x0085b507), // c.fld fa0,8(a1)
    (0x41c8, 0x0045a503), // c.lw a0,4(a1)
    (0x5c7c, 0x07c42783), // c.lw a5,124(s0)
    (0x6588, 0x0085b503), // c.ld a0,8(a1)
    (0x7ff8, 0x0f87b703), // c.ld a4,248(a5)
    (0xbde8, 0x0ea5bc27), // c.fsd fa0,248(a1)
    (0xdde8, 0x06a5ae23), // c.sw a0,124(a1)
    (0xfde8, 0x0ea5bc23), // c.sd a0,248(a1)
    (0x0001, 0x00000013), // c.nop
    (0x1501, 0xfe050513), // c.addi a0,-32
    (0x0ffd, 0x01ff8f93), // c.addi t6,31
    (0x257d, 0x01f5051b), // c.addiw a0,31
    (0x357d, 0xfff5051b), // c.addiw a0,-1
    (0x57fd, 0xfff00793), // c.li a5,-1
    (0x4dc5, 0x01100d93), // c.li s11,17
    (0x7101, 0xe0010113), // c.addi16sp sp,-512
    (0x617d, 0x1f010113), // c.addi16sp sp,496
    (0x6141, 0x01010113), // c.addi16sp sp,16
    (0x7501, 0xfffe0537), // c.lui a0,0xfffe0
    (0x6505, 0x00001537), // c.lui a0,1
    (0x637d, 0x0001f337), // c.lui t1,0x1f
    (0x917d, 0x03f55513), // c.srli a0,63
    (0x9101, 0x02055513), // c.srli a0,32
    (0x8585, 0x4015d593), // c.srai a1,1
    (0x9a7d, 0xfff67613), // c.andi a2,-1
    (0x8a55, 0x01567613), // c.andi a2,21
    (0x8c05, 0x40940433), // c.sub s0,s1
    (0x8d3d, 0x00f54533), // c.xor a0,a5
    (0x8dd1, 0x00c5e5b3), // c.or a1,a2
    (0x8ef9, 0x00e6f6b3), // c.and a3,a4
    (0x9d0d, 0x40b5053b), // c.subw a0,a1
    (0x9cbd, 0x00f484bb), // c.addw s1,a5
    (0xaffd, 0x7fe0006f), // c.j .+2046
    (0xb001, 0x801ff06f), // c.j .-2048
    (0xa9c9, 0x4d20006f), // c.j .+1234
    (0xd101, 0xf00500e3), // c.beqz a0,.-256
    (0xeffd, 0x0e079f63), // c.bnez a5,.+254
    (0xe40d, 0x02041563), // c.bnez s0,.+42
    (0x157e, 0x03f51513), // c.slli a0,63
    (0x0f06, 0x001f1f13), // c.slli t5,1
    (0x357e, 0x1f813507), // c.fldsp fa0,504(sp)
    (0x557e, 0x0fc12503), // c.lwsp a0,252(sp)
    (0x4092, 0x00412083), // c.lwsp ra,4(sp)
    (0x757e, 0x1f813503), // c.ldsp a0,504(sp)
    (0x6422, 0x00813403), // c.ldsp s0,8(sp)
    (0x8082, 0x00008067), // c.jr ra
    (0x852e, 0x00b00533), // c.mv a0,a1
    (0x9002, 0x00100073), // c.ebreak
    (0x9502, 0x000500e7), // c.jalr a0
    (0x952e, 0x00b50533), // c.add a0,a1
    (0xbfaa, 0x1ea13c27), // c.fsdsp fa0,504(sp)
    (0xdfaa, 0x0ea12e23), // c.swsp a0,252(sp)
    (0xffaa, 0x1ea13c23), // c.sdsp a0,504(sp)
    (0xe406, 0x00113423), // c.sdsp ra,8(sp)
];

#[test]
fn disassembles_like_objdump() {
    let mut bad = Vec::new();
    for &(pc, w, want) in KNOWN32 {
        let got = disasm(&decode32(w), pc);
        if got != want {
            bad.push(format!("{w:08x}: got `{got}`, objdump `{want}`"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} mismatches:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn compressed_expands_to_base_encoding() {
    for &(c, w) in COMPRESSED {
        let (insn, len) = decode(c as u32);
        assert_eq!(len, 2);
        assert_eq!(
            insn,
            decode32(w),
            "c={c:04x} expands differently from {w:08x}"
        );
        assert!(!matches!(insn, Insn::Illegal(_)), "c={c:04x}");
    }
}

#[test]
fn reserved_compressed_are_illegal() {
    for c in [
        0x0000u16,       // all zero
        0x0004,          // c.addi4spn nzuimm=0
        0x8000,          // quadrant 0, funct3 100
        0x2001,          // c.addiw rd=0
        0x6101,          // c.addi16sp imm=0
        0x6501,          // c.lui a0,0
        0x4002,          // c.lwsp rd=0
        0x6002,          // c.ldsp rd=0
        0x8002,          // c.jr rs1=0
        0x9c41 | 0x0040, // c.subw-group funct2=10 (reserved)
    ] {
        assert!(
            matches!(decode16(c), Insn::Illegal(_)),
            "{c:04x} should be illegal: {:?}",
            decode16(c)
        );
    }
}

#[test]
fn marker_hint() {
    assert_eq!(decode32(0x4800_2013), Insn::Marker { op: 0 });
    assert_eq!(decode32(0x48f0_2013), Insn::Marker { op: 15 });
    // other slti x0 forms stay ordinary (no-op) slti
    assert!(matches!(decode32(0x4900_2013), Insn::Slti { rd: 0, .. }));
    assert!(matches!(
        decode32(0x4805_2013),
        Insn::Slti { rd: 0, rs1: 10, .. }
    ));
    assert!(matches!(decode32(0x4800_2093), Insn::Slti { rd: 1, .. }));
}

#[test]
fn every_halfword_decodes_and_prints() {
    for h in 0..=u16::MAX {
        let (insn, len) = decode(h as u32);
        if h & 3 == 3 {
            assert_eq!(len, 4);
        } else {
            assert_eq!(len, 2);
            assert!(!disasm(&insn, 0x8000_0000).is_empty());
        }
    }
}

#[test]
fn sampled_words_decode_and_print() {
    // every major opcode and funct3 with pseudo-random other bits
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..2_000_000 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let w = (s >> 16) as u32 | 3;
        let insn = decode32(w);
        let text = disasm(&insn, 0x8000_0000);
        assert!(!text.is_empty());
    }
}
