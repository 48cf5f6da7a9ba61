/* RV64A: LR/SC success and failure, every AMO in W and D forms with the
 * old value returned (W forms sign-extended), signed vs unsigned min/max. */
#include "hs_test.h"
  START
main:
  la s0, word
  TEST(1)
  li a0, 0x80000000
  sw a0, 0(s0)
  li a1, 1
  amoadd.w a2, a1, (s0); CHECK(a2, 0xffffffff80000000)
  lw a3, 0(s0); CHECK(a3, 0xffffffff80000001)
  TEST(2)
  li a1, 0x7fffffff
  amoswap.w.aqrl a2, a1, (s0); CHECK(a2, 0xffffffff80000001)
  amoxor.w a2, a1, (s0); CHECK(a2, 0x7fffffff)
  lw a3, 0(s0); CHECK(a3, 0)
  li a1, -5
  amoor.w a2, a1, (s0); CHECK(a2, 0)
  li a1, 0xff
  amoand.w a2, a1, (s0); CHECK(a2, -5)
  lw a3, 0(s0); CHECK(a3, 0xfb)
  TEST(3)
  li a1, -1
  amomin.w a2, a1, (s0); CHECK(a2, 0xfb)
  lw a3, 0(s0); CHECK(a3, -1)
  li a1, 3
  amominu.w a2, a1, (s0); CHECK(a2, -1)
  lw a3, 0(s0); CHECK(a3, 3)
  li a1, -9
  amomax.w a2, a1, (s0); lw a3, 0(s0); CHECK(a3, 3)
  amomaxu.w a2, a1, (s0); lw a3, 0(s0); CHECK(a3, -9)
  TEST(4)
  la s1, dword
  li a0, 0x8000000000000000
  sd a0, 0(s1)
  li a1, -1
  amoadd.d a2, a1, (s1); CHECK(a2, 0x8000000000000000)
  ld a3, 0(s1); CHECK(a3, 0x7fffffffffffffff)
  amomin.d a2, a1, (s1); ld a3, 0(s1); CHECK(a3, -1)
  li a1, 1
  amomaxu.d a2, a1, (s1); ld a3, 0(s1); CHECK(a3, -1)
  amominu.d a2, a1, (s1); ld a3, 0(s1); CHECK(a3, 1)
  li a1, 0x5555
  amoswap.d a2, a1, (s1); CHECK(a2, 1)
  amoxor.d a2, a1, (s1); ld a3, 0(s1); CHECK(a3, 0)
  li a1, 12
  amoor.d a2, a1, (s1); amoand.d a2, zero, (s1); CHECK(a2, 12)
  li a1, -3
  amomax.d a2, a1, (s1); ld a3, 0(s1); CHECK(a3, 0)
  TEST(5)
  /* LR/SC pair succeeds and stores */
  li a0, 41
  sd a0, 0(s1)
  lr.d a2, (s1)
  addi a2, a2, 1
  sc.d a3, a2, (s1); CHECK(a3, 0)
  ld a4, 0(s1); CHECK(a4, 42)
  TEST(6)
  /* SC without a reservation fails and does not store */
  li a2, 7
  sc.d a3, a2, (s1)
  beqz a3, fail
  ld a4, 0(s1); CHECK(a4, 42)
  TEST(7)
  /* SC to a different address than the LR fails */
  lr.w a2, (s0)
  sc.w a3, a2, (s1)
  beqz a3, fail
  TEST(8)
  /* LR.W sign-extends; a retry loop converges */
  li a0, -2
  sw a0, 0(s0)
1: lr.w.aq a2, (s0)
  CHECK(a2, -2)
  addi a2, a2, 10
  sc.w.rl a3, a2, (s0)
  bnez a3, 1b
  lw a4, 0(s0); CHECK(a4, 8)
  PASS

  .data
  .align 3
word: .word 0, 0
dword: .dword 0
