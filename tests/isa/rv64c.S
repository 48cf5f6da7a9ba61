/* RV64C: every compressed instruction executed and checked, including
 * jumps/links with 2-byte lengths and 4-byte instructions at 2-byte offsets. */
#include "hs_test.h"
  START
  .option rvc
main:
  TEST(1)
  c.li a0, -32
  CHECK(a0, -32)
  c.li a1, 31
  c.addi a1, -1; CHECK(a1, 30)
  c.addiw a1, 1; CHECK(a1, 31)
  li a2, 0x7fffffff
  c.addiw a2, 1; CHECK(a2, 0xffffffff80000000)
  c.lui a3, 0xfffe1; CHECK(a3, 0xfffffffffffe1000)
  c.lui a3, 1; CHECK(a3, 0x1000)
  TEST(2)
  mv s0, sp
  c.addi16sp sp, -64
  addi t0, s0, -64; CHECK_REG(sp, t0)
  c.addi4spn a4, sp, 16
  addi t0, sp, 16; CHECK_REG(a4, t0)
  c.addi16sp sp, 64
  CHECK_REG(sp, s0)
  TEST(3)
  li a0, 0x80
  c.srli a0, 3; CHECK(a0, 0x10)
  li a0, -64
  c.srai a0, 2; CHECK(a0, -16)
  c.andi a0, 0x17; CHECK(a0, 0x10)
  c.slli a0, 60; CHECK(a0, 0)
  li a0, 3
  c.slli a0, 62; CHECK(a0, 0xc000000000000000)
  TEST(4)
  li s0, 12; li s1, 10
  c.mv a0, s0
  c.sub a0, s1; CHECK(a0, 2)
  c.mv a0, s0; c.xor a0, s1; CHECK(a0, 6)
  c.mv a0, s0; c.or a0, s1; CHECK(a0, 14)
  c.mv a0, s0; c.and a0, s1; CHECK(a0, 8)
  c.mv a0, s0; c.add a0, s1; CHECK(a0, 22)
  li a0, 0x7fffffff; li a1, 1
  c.addw a0, a1; CHECK(a0, 0xffffffff80000000)
  c.subw a0, a1; CHECK(a0, 0x7fffffff)
  TEST(5)
  la s0, buf
  li a0, 0x1122334455667788
  c.sd a0, 8(s0)
  c.ld a1, 8(s0); CHECK_REG(a1, a0)
  c.sw a0, 4(s0)
  c.lw a1, 4(s0); CHECK(a1, 0x55667788)
  li a0, -2
  c.sw a0, 4(s0)
  c.lw a1, 4(s0); CHECK(a1, -2)
  TEST(6)
  addi sp, sp, -32
  li a0, 0xabcdef
  c.sdsp a0, 16(sp)
  c.ldsp a2, 16(sp); CHECK_REG(a2, a0)
  c.swsp a0, 4(sp)
  c.lwsp a3, 4(sp); CHECK(a3, 0xabcdef)
  li t0, 0x3ff0000000000000
  fmv.d.x fa0, t0
  c.fsdsp fa0, 24(sp)
  c.fldsp fa1, 24(sp)
  fmv.x.d a4, fa1; CHECK_REG(a4, t0)
  c.fsd fa0, 16(s0)
  c.fld fa2, 16(s0)
  fmv.x.d a4, fa2; CHECK_REG(a4, t0)
  addi sp, sp, 32
  TEST(7)
  /* c.j / c.jal-free jumps, c.jr, c.jalr (link = pc + 2), branches */
  c.j 1f
  c.j fail_far
1: la a0, 2f
  c.jalr a0
3: c.j 4f
2: la t0, 3b
  CHECK_REG(ra, t0)
  c.jr ra
4: li a0, 0
  c.beqz a0, 5f
  c.j fail_far
5: c.bnez a0, fail_far
  li a1, 1
  c.bnez a1, 6f
  c.j fail_far
6: c.beqz a1, fail_far
  TEST(8)
  /* a 4-byte instruction at a 2-byte aligned address */
  c.nop
  .option norvc
  addi a0, zero, 77
  .option rvc
  CHECK(a0, 77)
  TEST(9)
  /* c.ebreak traps with mepc at the 2-byte instruction */
  SET_HANDLER(on_ebreak)
7: c.ebreak
  TEST(10)
  PASS
fail_far: j fail

on_ebreak:
  csrr t0, mcause
  li t1, 3
  bne t0, t1, fail
  csrr t0, mepc
  la t1, 7b
  bne t0, t1, fail
  addi t0, t0, 2
  csrw mepc, t0
  csrr t0, mscratch
  mret

  .data
  .align 4
buf: .space 32
