/* RV64I: arithmetic, logic, shifts, word forms, compares, branches, jumps,
 * loads and stores of every width, lui/auipc, x0 stays zero. */
#include "hs_test.h"
  START
  .option norvc
main:
  TEST(1)
  li a0, 5; li a1, -7
  add a2, a0, a1;  CHECK(a2, -2)
  sub a2, a0, a1;  CHECK(a2, 12)
  addi a2, a1, 2047; CHECK(a2, 2040)
  addi a2, a1, -2048; CHECK(a2, -2055)
  TEST(2)
  li a0, 0x7fffffff
  addiw a2, a0, 1; CHECK(a2, -0x80000000)
  addw a2, a0, a0; CHECK(a2, -2)
  li a0, 0x100000000
  subw a2, zero, a0; CHECK(a2, 0)
  li a0, 0xffffffff80000000
  subw a2, a0, zero
  CHECK(a2, 0xffffffff80000000)
  TEST(3)
  li a0, 0xf0f0; li a1, 0x0ff0
  and a2, a0, a1; CHECK(a2, 0x00f0)
  or a2, a0, a1;  CHECK(a2, 0xfff0)
  xor a2, a0, a1; CHECK(a2, 0xff00)
  andi a2, a0, -16; CHECK(a2, 0xf0f0)
  ori a2, a0, 0x0f; CHECK(a2, 0xf0ff)
  xori a2, a0, -1; CHECK(a2, ~0xf0f0)
  TEST(4)
  li a0, 1
  slli a2, a0, 63; CHECK(a2, 0x8000000000000000)
  srli a3, a2, 63; CHECK(a3, 1)
  srai a3, a2, 63; CHECK(a3, -1)
  li a1, 65
  sll a3, a0, a1; CHECK(a3, 2)
  srl a3, a2, a1; CHECK(a3, 0x4000000000000000)
  sra a3, a2, a1; CHECK(a3, 0xc000000000000000)
  TEST(5)
  li a0, 0x00000000ffffffff
  slliw a2, a0, 31; CHECK(a2, 0xffffffff80000000)
  srliw a2, a0, 1;  CHECK(a2, 0x7fffffff)
  sraiw a2, a0, 4;  CHECK(a2, -1)
  li a1, 33
  sllw a2, a0, a1;  CHECK(a2, -2)
  srlw a2, a0, a1;  CHECK(a2, 0x7fffffff)
  li a0, 0x80000000
  sraw a2, a0, a1;  CHECK(a2, 0xffffffffc0000000)
  TEST(6)
  li a0, -1; li a1, 1
  slt a2, a0, a1;  CHECK(a2, 1)
  sltu a2, a0, a1; CHECK(a2, 0)
  slti a2, a0, 0;  CHECK(a2, 1)
  sltiu a2, a1, -1; CHECK(a2, 1)
  sltiu a2, zero, 1; CHECK(a2, 1)
  TEST(7)
  lui a0, 0x80000; CHECK(a0, 0xffffffff80000000)
  lui a0, 0x7ffff; CHECK(a0, 0x7ffff000)
1: auipc a0, 0
  la a1, 1b
  CHECK_REG(a0, a1)
2: auipc a0, 0xfffff
  la a1, 2b
  li t0, -0x1000
  add a1, a1, t0
  CHECK_REG(a0, a1)
  TEST(8)
  /* x0 is hardwired */
  addi zero, zero, 5
  li a0, 0
  CHECK_REG(zero, a0)
  lui zero, 0x12345
  CHECK_REG(zero, a0)
  TEST(9)
  /* branches taken and not taken */
  li a0, -1; li a1, 1
  beq a0, a1, fail
  bne a0, a0, fail
  blt a1, a0, fail
  bge a0, a1, fail
  bltu a0, a1, fail
  bgeu a1, a0, fail
  beq a0, a0, 1f
  j fail
1: bne a0, a1, 1f
  j fail
1: blt a0, a1, 1f
  j fail
1: bge a1, a0, 1f
  j fail
1: bge a1, a1, 1f
  j fail
1: bltu a1, a0, 1f
  j fail
1: bgeu a0, a1, 1f
  j fail
1:
  TEST(10)
  /* jal/jalr link values, jalr clears bit 0 */
  jal ra, 2f
1: j fail
2: la a0, 1b
  CHECK_REG(ra, a0)
  la a0, 3f
  addi a0, a0, 1
  jalr t1, 0(a0)
4: j fail
3: la a1, 4b
  CHECK_REG(t1, a1)
  la a0, 5f
  jalr zero, -4(a0)
  j fail
  j 6f
5: j fail
6:
  TEST(11)
  la a0, buf
  li a1, 0x8877665544332211
  sd a1, 0(a0)
  lb a2, 7(a0);  CHECK(a2, 0xffffffffffffff88)
  lbu a2, 7(a0); CHECK(a2, 0x88)
  lh a2, 6(a0);  CHECK(a2, 0xffffffffffff8877)
  lhu a2, 6(a0); CHECK(a2, 0x8877)
  lw a2, 4(a0);  CHECK(a2, 0xffffffff88776655)
  lwu a2, 4(a0); CHECK(a2, 0x88776655)
  ld a2, 0(a0);  CHECK_REG(a2, a1)
  lb a2, 0(a0);  CHECK(a2, 0x11)
  TEST(12)
  li a1, 0x1234
  sb a1, 8(a0)
  sh a1, 10(a0)
  sw a1, 12(a0)
  ld a2, 8(a0); CHECK(a2, 0x0000123412340034)
  addi a3, a0, 2047
  sd a1, -2047(a3)
  ld a2, 0(a0); CHECK(a2, 0x1234)
  TEST(13)
  /* load into x0 is discarded; fence and fence.i execute */
  lw zero, 0(a0)
  CHECK(zero, 0)
  fence
  fence rw, rw
  fence.i
  PASS

  .data
  .align 4
buf: .space 64
