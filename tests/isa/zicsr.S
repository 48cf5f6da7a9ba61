/* Zicsr and machine CSRs: the six CSR instructions (old value, x0/uimm=0
 * forms do not write), read-only CSRs, fixed identity CSRs, misa, illegal
 * accesses report the instruction in mtval, counters count. */
#include "hs_test.h"
  START
main:
  TEST(1)
  li a0, 0x1234
  csrw mscratch, a0
  li a1, 0xff00
  csrrs a2, mscratch, a1; CHECK(a2, 0x1234)
  csrr a2, mscratch; CHECK(a2, 0xff34)
  li a1, 0x0f0f
  csrrc a2, mscratch, a1; CHECK(a2, 0xff34)
  csrr a2, mscratch; CHECK(a2, 0xf030)
  csrrw a2, mscratch, zero; CHECK(a2, 0xf030)
  csrr a2, mscratch; CHECK(a2, 0)
  TEST(2)
  csrrwi a2, mscratch, 31; CHECK(a2, 0)
  csrrsi a2, mscratch, 0x0; CHECK(a2, 31)
  csrrci a2, mscratch, 5; CHECK(a2, 31)
  csrrsi a2, mscratch, 0x10; CHECK(a2, 26)
  csrr a2, mscratch; CHECK(a2, 26)
  TEST(3)
  csrr a0, misa; CHECK(a0, 0x800000000014112d)
  csrr a0, mvendorid; CHECK(a0, 0)
  csrr a0, marchid; CHECK(a0, 0)
  csrr a0, mimpid; CHECK(a0, 0)
  csrr a0, mhartid; CHECK(a0, 0)
  TEST(4)
  /* reading a read-only CSR with csrrs x0 is fine; writing it is illegal */
  csrrs a0, mhartid, zero
  csrrsi a0, mvendorid, 0
  SET_HANDLER(expect_illegal)
  la s1, 1f
  la s2, 2f
  lw s3, 0(s1)
1: csrw mhartid, a0
  j fail
2:
  TEST(5)
  la s1, 1f
  la s2, 2f
  lw s3, 0(s1)
1: csrrsi a0, mimpid, 1
  j fail
2:
  TEST(6)
  /* an unimplemented CSR number is illegal */
  la s1, 1f
  la s2, 2f
  lw s3, 0(s1)
1: csrr a0, 0x7c0
  j fail
2:
  TEST(7)
  /* mcycle and minstret count, and are writable */
  csrr a0, minstret
  nop
  nop
  csrr a1, minstret
  sub a1, a1, a0
  CHECK(a1, 3)
  csrr a0, mcycle
  csrr a1, mcycle
  bgeu a0, a1, fail
  csrr a0, cycle
  csrr a1, instret
  TEST(8)
  li a0, 1000
  csrw minstret, a0
  csrr a1, minstret
  li t0, 1000
  bltu a1, t0, fail
  li t0, 1002
  bgtu a1, t0, fail
  TEST(9)
  /* mstatus: MPP WARL keeps S and M; FS round trip; SD follows FS=dirty */
  li a0, MSTATUS_MPP
  csrc mstatus, a0
  li a0, MSTATUS_MPP_S
  csrs mstatus, a0
  csrr a1, mstatus
  li t0, MSTATUS_MPP
  and a1, a1, t0
  CHECK(a1, MSTATUS_MPP_S)
  li a0, MSTATUS_FS
  csrs mstatus, a0
  csrr a1, mstatus
  bgez a1, fail /* SD is bit 63 */
  li a0, (1 << 14)
  csrc mstatus, a0  /* FS = initial */
  csrr a1, mstatus
  bltz a1, fail
  li a0, MSTATUS_FS
  csrs mstatus, a0
  TEST(10)
  /* sstatus is a view of mstatus */
  li a0, MSTATUS_SUM
  csrs sstatus, a0
  csrr a1, mstatus
  and a1, a1, a0
  beqz a1, fail
  csrc mstatus, a0
  csrr a1, sstatus
  and a1, a1, a0
  bnez a1, fail
  /* MPP is not visible in sstatus */
  csrr a1, sstatus
  li t0, MSTATUS_MPP
  and a1, a1, t0
  bnez a1, fail
  TEST(11)
  /* sie/sip are masked by mideleg */
  li a0, 0x222
  csrw mideleg, a0
  li a0, -1
  csrw mie, a0
  csrr a1, sie
  li t0, 0x222
  and a2, a1, t0
  CHECK_REG(a2, t0)
  li t0, 0x888
  and a2, a1, t0
  bnez a2, fail
  csrw sie, zero
  csrr a1, mie
  li t0, 0x222
  and a2, a1, t0
  bnez a2, fail
  csrw mie, zero
  csrw mideleg, zero
  TEST(12)
  /* (mepc[0] reads as zero on the hart, as the spec says, but QEMU 7.2
     keeps it, so that is a unit test in crates/core.) mtvec vectored mode and base are kept */
  la a0, trap_entry
  ori a1, a0, 1
  csrw mtvec, a1
  csrr a2, mtvec
  CHECK_REG(a2, a1)
  csrw mtvec, a0
  TEST(13)
  /* the Sv39 and Sv48 satp modes are accepted, an unsupported one is ignored */
  li a0, (8 << 60) | 0x80123
  csrw satp, a0
  csrr a1, satp
  CHECK_REG(a1, a0)
  li a0, (9 << 60) | 0x80456
  csrw satp, a0
  csrr a1, satp
  CHECK_REG(a1, a0)
  li a2, (1 << 60) | 0x80789
  csrw satp, a2
  csrr a1, satp
  CHECK_REG(a1, a0)
  csrw satp, zero
  TEST(14)
  /* pmpcfg0/pmpaddr read back */
  li a0, 0x12345
  csrw pmpaddr3, a0
  csrr a1, pmpaddr3
  CHECK_REG(a1, a0)
  csrw pmpaddr3, zero
  PASS

/* expects an illegal-instruction trap at s1 with mtval = instruction s3; resumes at s2 */
expect_illegal:
  csrr t0, mcause
  li t1, 2
  bne t0, t1, fail
  csrr t0, mepc
  bne t0, s1, fail
  csrr t0, mtval
  slli t0, t0, 32
  srli t0, t0, 32
  slli t1, s3, 32
  srli t1, t1, 32
  bne t0, t1, fail
  csrw mepc, s2
  csrr t0, mscratch
  mret
