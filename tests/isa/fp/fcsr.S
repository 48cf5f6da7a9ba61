/* RV64 F and D: fcsr/frm/fflags, reserved rounding modes, mstatus.FS.
 *
 * - fcsr is frm (bits 7:5) and fflags (bits 4:0); bits above 7 read 0.
 * - fflags accumulate (OR) until software clears them.
 * - A dynamic rm with frm = 5..7, or a static rm of 5 or 6, is an illegal
 *   instruction; instructions without an rm field ignore frm.
 * - mstatus.FS = Off makes every F/D instruction and FP CSR access illegal;
 *   changing FP state makes FS Dirty and sets SD.
 * Hand-written; expected values follow the unprivileged and privileged specs. */

#include "fp_test.h"

#define CAUSE_ILLEGAL 2
#define FS_MASK  (3 << 13)
#define FS_CLEAN (2 << 13)
#define FS_DIRTY (3 << 13)

FP_TEST_BEGIN

    /* fcsr = frm << 5 | fflags */
    TEST_START 1, 0
    li t0, 0xff
    csrw fcsr, t0
    frrm a0
    CHECK_X a0, 7
    frflags a0
    CHECK_X a0, 0x1f
    frcsr a0
    CHECK_X a0, 0xff

    /* bits above 7 are not writable */
    TEST_START 2, 0
    li t0, 0xfff
    csrw fcsr, t0
    frcsr a0
    CHECK_X a0, 0xff
    li t0, 0xff
    csrw fflags, t0
    frflags a0
    CHECK_X a0, 0x1f
    li t0, 0xff
    csrw frm, t0
    frrm a0
    CHECK_X a0, 7
    csrwi fcsr, 0

    /* swaps return the old value */
    TEST_START 3, 2
    li t0, 3
    fsrm a0, t0
    CHECK_X a0, 2
    frrm a0
    CHECK_X a0, 3
    csrwi fflags, 5
    fsflagsi a0, 2
    CHECK_X a0, 5
    frflags a0
    CHECK_X a0, 2

    /* flags accumulate across instructions and survive exact ones */
    TEST_START 4, 0
    LOAD_S ft0, 0x3f800000          /* 1.0 */
    LOAD_S ft1, 0x00000000
    fdiv.s ft2, ft0, ft1            /* DZ */
    LOAD_S ft1, 0x33000000          /* 2^-25 */
    fadd.s ft2, ft0, ft1            /* NX */
    fadd.s ft2, ft0, ft0            /* exact */
    CHECK_FLAGS 0x09
    LOAD_D ft0, 0x7ff0000000000001
    feq.d a0, ft0, ft0              /* NV */
    CHECK_FLAGS 0x19

    /* frm selects the mode for dyn, the static field overrides it */
    TEST_START 5, 3                 /* frm = RUP */
    LOAD_S ft0, 0x3f800000
    LOAD_S ft1, 0x33000000
    fadd.s ft2, ft0, ft1
    CHECK_S ft2, 0x3f800001
    fadd.s ft2, ft0, ft1, rtz
    CHECK_S ft2, 0x3f800000

    /* reserved frm values make dynamic-rounding instructions illegal */
    LOAD_S ft0, 0x3f800000
    LOAD_S ft1, 0x33000000
    fsrmi 5
    EXPECT_TRAP 6, CAUSE_ILLEGAL, fadd.s ft2, ft0, ft1
    fsrmi 6
    EXPECT_TRAP 7, CAUSE_ILLEGAL, fmul.d ft2, ft0, ft1
    fsrmi 7
    EXPECT_TRAP 8, CAUSE_ILLEGAL, fcvt.w.s a0, ft0
    EXPECT_TRAP 9, CAUSE_ILLEGAL, fmadd.s ft2, ft0, ft1, ft0
    EXPECT_TRAP 10, CAUSE_ILLEGAL, fsqrt.d ft2, ft0
    /* fcvt.d.s encoded with rm = dyn (the assembler always emits rne) */
    EXPECT_TRAP 11, CAUSE_ILLEGAL, .insn r 0x53, 7, 0x21, ft2, ft0, f0

    /* ... but instructions without an rm field, or with a static one, run */
    li TESTNUM, 12
    fsrmi 7
    csrwi fflags, 0
    LOAD_S ft0, 0x3f800000
    LOAD_S ft1, 0x33000000
    fmin.s ft2, ft0, ft1
    CHECK_S ft2, 0x33000000
    fsgnjn.s ft2, ft0, ft0
    CHECK_S ft2, 0xbf800000
    feq.s a0, ft0, ft0
    CHECK_X a0, 1
    fclass.s a0, ft0
    CHECK_X a0, 0x40
    fadd.s ft2, ft0, ft1, rup
    CHECK_S ft2, 0x3f800001
    fcvt.d.s ft2, ft0               /* encoded with rm = rne */
    CHECK_D ft2, 0x3ff0000000000000
    CHECK_FLAGS 0x01
    frrm a0
    CHECK_X a0, 7
    fsrmi 0

    /* reserved static rm values 5 and 6 (fadd.s with funct3 = rm) */
    EXPECT_TRAP 13, CAUSE_ILLEGAL, .insn r 0x53, 5, 0x00, ft2, ft0, ft1
    EXPECT_TRAP 14, CAUSE_ILLEGAL, .insn r 0x53, 6, 0x00, ft2, ft0, ft1

    /* writing FP state makes FS Dirty and sets SD */
    TEST_START 15, 0
    li t0, FS_MASK
    csrc mstatus, t0
    li t0, FS_CLEAN
    csrs mstatus, t0
    csrr a0, mstatus
    li t0, FS_MASK
    and a0, a0, t0
    CHECK_X a0, FS_CLEAN
    fadd.s ft2, ft0, ft0
    csrr a0, mstatus
    srli a1, a0, 63
    CHECK_X a1, 1                   /* SD */
    and a0, a0, t0
    CHECK_X a0, FS_DIRTY

    TEST_START 16, 0
    li t0, FS_MASK
    csrc mstatus, t0
    li t0, FS_CLEAN
    csrs mstatus, t0
    csrwi fflags, 1
    csrr a0, mstatus
    li t0, FS_MASK
    and a0, a0, t0
    CHECK_X a0, FS_DIRTY

    /* FS = Off: FP instructions and FP CSRs are illegal */
    LOAD_S ft3, 0x40490fdb          /* kept across the Off period */
    li t0, FS_MASK
    csrc mstatus, t0
    EXPECT_TRAP 17, CAUSE_ILLEGAL, fadd.s ft2, ft0, ft1
    EXPECT_TRAP 18, CAUSE_ILLEGAL, csrr a0, fflags
    EXPECT_TRAP 19, CAUSE_ILLEGAL, csrw frm, zero
    EXPECT_TRAP 20, CAUSE_ILLEGAL, fmv.x.w a0, ft0
    EXPECT_TRAP 21, CAUSE_ILLEGAL, fmv.d.x ft0, zero
    la a1, scratch
    EXPECT_TRAP 22, CAUSE_ILLEGAL, fld ft0, 0(a1)
    EXPECT_TRAP 23, CAUSE_ILLEGAL, fsw ft0, 0(a1)
    EXPECT_TRAP 24, CAUSE_ILLEGAL, fsgnj.d ft0, ft1, ft1
    li t0, (1 << 13)                /* back to Initial */
    csrs mstatus, t0
    TEST_START 25, 0
    CHECK_S ft3, 0x40490fdb

FP_TEST_END

    .data
    .balign 8
scratch:
    .dword 0
