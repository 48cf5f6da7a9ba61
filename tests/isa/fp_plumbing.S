/* F/D plumbing in the hart: FS=Off makes every FP instruction and FP CSR
 * illegal; FS becomes Dirty (and SD set) on FP writes; loads/stores and
 * moves keep raw bits; NaN-boxing on flw/fmv.w.x and canonical NaN for
 * improperly boxed operands; sign injection; dynamic rounding from frm;
 * reserved rm (static and dynamic) is illegal; fflags accrue. */
#include "hs_test.h"
#define EXPECT_ILL(at, resume) la s1, at; la s2, resume; lwu s4, 0(s1)
  START
  .option norvc
main:
  SET_HANDLER(expect_illegal)
  la s0, buf
  TEST(1)
  /* FS = Off */
  li t0, MSTATUS_FS
  csrc mstatus, t0
  EXPECT_ILL(1f, 2f)
1: fadd.d fa0, fa1, fa2
  j fail
2: EXPECT_ILL(1f, 2f)
1: flw fa0, 0(s0)
  j fail
2: EXPECT_ILL(1f, 2f)
1: fsd fa0, 0(s0)
  j fail
2: EXPECT_ILL(1f, 2f)
1: fmv.x.d a0, fa0
  j fail
2: EXPECT_ILL(1f, 2f)
1: csrr a0, fflags
  j fail
2: EXPECT_ILL(1f, 2f)
1: csrwi frm, 1
  j fail
2: TEST(2)
  /* FS = Initial, then an FP write makes it Dirty and sets SD */
  li t0, (1 << 13)
  csrs mstatus, t0
  csrr a0, mstatus
  bltz a0, fail
  li a0, 0x3ff0000000000000
  fmv.d.x fa0, a0
  csrr a0, mstatus
  bgez a0, fail
  li t0, MSTATUS_FS
  and a1, a0, t0
  bne a1, t0, fail
  TEST(3)
  /* flw boxes, fsw stores the low word, fld/fsd raw */
  li a0, 0x40490fdb
  sw a0, 0(s0)
  flw fa1, 0(s0)
  fmv.x.d a1, fa1; CHECK(a1, 0xffffffff40490fdb)
  fsw fa1, 8(s0)
  lwu a1, 8(s0); CHECK(a1, 0x40490fdb)
  li a0, 0x7ff4000000000001   /* a signalling NaN survives loads, stores and moves */
  sd a0, 16(s0)
  fld fa2, 16(s0)
  fsd fa2, 24(s0)
  ld a1, 24(s0); CHECK_REG(a1, a0)
  fmv.x.d a1, fa2; CHECK_REG(a1, a0)
  TEST(4)
  /* fmv.w.x boxes; fmv.x.w sign-extends the low word, unboxed or not */
  li a0, 0x12345678c0000000
  fmv.w.x fa3, a0
  fmv.x.d a1, fa3; CHECK(a1, 0xffffffffc0000000)
  fmv.x.w a1, fa3; CHECK(a1, 0xffffffffc0000000)
  li a0, 0x1234567880000001
  fmv.d.x fa4, a0
  fmv.x.w a1, fa4; CHECK(a1, 0xffffffff80000001)
  TEST(5)
  /* improperly boxed single operands read as the canonical NaN */
  li a0, 0x000000003f800000   /* 1.0f, but not boxed */
  fmv.d.x fa5, a0
  fsgnj.s fa6, fa5, fa5
  fmv.x.d a1, fa6; CHECK(a1, 0xffffffff7fc00000)
  fclass.s a1, fa5; CHECK(a1, 0x200)
  TEST(6)
  /* sign injection, single and double */
  li a0, 0xbf800000            /* -1.0f */
  fmv.w.x fa0, a0
  li a0, 0x40000000            /* 2.0f */
  fmv.w.x fa1, a0
  fsgnj.s fa2, fa1, fa0;  fmv.x.w a1, fa2; CHECK(a1, 0xffffffffc0000000)
  fsgnjn.s fa2, fa1, fa0; fmv.x.w a1, fa2; CHECK(a1, 0x40000000)
  fsgnjx.s fa2, fa0, fa0; fmv.x.w a1, fa2; CHECK(a1, 0x3f800000)
  li a0, 0x8000000000000005
  fmv.d.x fa0, a0
  li a0, 0x4000000000000000
  fmv.d.x fa1, a0
  fsgnjn.d fa2, fa1, fa1; fmv.x.d a1, fa2; CHECK(a1, 0xc000000000000000)
  fsgnjx.d fa2, fa1, fa0; fmv.x.d a1, fa2; CHECK(a1, 0xc000000000000000)
  fsgnj.d fa2, fa0, fa1;  fmv.x.d a1, fa2; CHECK(a1, 5)
  TEST(7)
  /* dynamic rounding: 2.5 converts per frm; a static rm wins */
  li a0, 0x4004000000000000    /* 2.5 */
  fmv.d.x fa0, a0
  csrwi frm, 0                 /* RNE */
  fcvt.l.d a1, fa0, dyn; CHECK(a1, 2)
  csrwi frm, 3                 /* RUP */
  fcvt.l.d a1, fa0, dyn; CHECK(a1, 3)
  csrwi frm, 2                 /* RDN */
  fcvt.l.d a1, fa0, dyn; CHECK(a1, 2)
  csrwi frm, 4                 /* RMM */
  fcvt.l.d a1, fa0, dyn; CHECK(a1, 3)
  fcvt.l.d a1, fa0, rtz; CHECK(a1, 2)
  csrr a1, fcsr
  CHECK(a1, (4 << 5) | 1)      /* NX accrued */
  TEST(8)
  /* reserved rm: frm = 5..7 with dyn is illegal, as are static rm 5 and 6 */
  csrwi frm, 5
  EXPECT_ILL(1f, 2f)
1: fadd.d fa1, fa0, fa0, dyn
  j fail
2: csrwi frm, 7
  EXPECT_ILL(1f, 2f)
1: fcvt.w.d a0, fa0, dyn
  j fail
2: csrwi frm, 0
  EXPECT_ILL(1f, 2f)
1: .word 0x02a5d553   /* fadd.d fa0,fa1,fa0 with rm=5 */
  j fail
2: EXPECT_ILL(1f, 2f)
1: .word 0x02a5e553   /* rm=6 */
  j fail
2: /* sign injection has no rm: frm reserved does not matter */
  csrwi frm, 6
  fsgnj.d fa1, fa0, fa0
  csrwi frm, 0
  TEST(9)
  /* fflags accrue, fcsr packs frm and fflags */
  csrw fcsr, zero
  li a0, 0x3ff0000000000000
  fmv.d.x fa0, a0
  fmv.d.x fa1, zero
  fdiv.d fa2, fa0, fa1
  csrr a1, fflags; CHECK(a1, 0x08)
  fsqrt.d fa2, fa2             /* sqrt(+inf) = +inf, no flags */
  li a0, 0xbff0000000000000
  fmv.d.x fa3, a0
  fsqrt.d fa2, fa3             /* NV */
  csrr a1, fflags; CHECK(a1, 0x18)
  csrwi frm, 3
  csrr a1, fcsr; CHECK(a1, (3 << 5) | 0x18)
  csrw fcsr, zero
  li a0, 0xff
  csrw fcsr, a0
  csrr a1, frm; CHECK(a1, 7)
  csrr a1, fflags; CHECK(a1, 0x1f)
  csrw fcsr, zero
  PASS

expect_illegal:
  csrr t0, mcause
  li t1, 2
  bne t0, t1, fail
  csrr t0, mepc
  bne t0, s1, fail
  csrr t0, mtval
  bne t0, s4, fail
  csrw mepc, s2
  csrr t0, mscratch
  mret

  .data
  .balign 8
buf: .space 64
