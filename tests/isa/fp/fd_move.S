/* RV64 F and D: moves, sign injection, loads/stores and NaN-boxing.
 *
 * Transfer instructions (flw/fsw/fld/fsd, fmv.*.x/fmv.x.*) move bits
 * untouched; fmv.x.w and fsw read the low 32 bits whether or not they are
 * boxed. Every other single-precision instruction reads a register whose
 * upper 32 bits are not all ones as the canonical NaN (a quiet NaN: no NV).
 * Sign injection never canonicalises and never raises flags.
 * Hand-written; expected values follow the RISC-V F/D chapters. */

#include "fp_test.h"

#define UNBOXED_ONE   0x000000003f800000   /* 1.0f in a D register, not boxed */
#define HALF_BOXED    0xfffffffe3f800000   /* upper bits not all ones */

FP_TEST_BEGIN

    /* ---- fmv ---------------------------------------------------------- */

    /* fmv.w.x boxes and ignores bits 63:32 of rs1 */
    TEST_START 1, 0
    li a1, 0x123456783f800000
    fmv.w.x ft0, a1
    CHECK_S ft0, 0x3f800000
    CHECK_FLAGS 0

    /* fmv.x.w sign-extends bit 31 */
    TEST_START 2, 0
    LOAD_S ft0, 0xbf800000
    fmv.x.w a0, ft0
    CHECK_X a0, 0xffffffffbf800000

    /* fmv.x.w keeps a signaling NaN's bits, raises nothing */
    TEST_START 3, 0
    LOAD_S ft0, 0x7f800001
    fmv.x.w a0, ft0
    CHECK_X a0, 0x7f800001
    CHECK_FLAGS 0

    /* fmv.d.x / fmv.x.d move 64 bits untouched */
    TEST_START 4, 0
    LOAD_D ft0, 0x7ff0000000000001
    fmv.x.d a0, ft0
    CHECK_X a0, 0x7ff0000000000001
    CHECK_FLAGS 0

    /* fmv.x.w of a non-boxed register: the low 32 bits, sign-extended */
    TEST_START 5, 0
    LOAD_D ft0, 0x123456789abcdef0
    fmv.x.w a0, ft0
    CHECK_X a0, 0xffffffff9abcdef0

    /* ---- sign injection ----------------------------------------------- */

    TEST_S_SS 6, fsgnj.s, , 0, 0x00, 0xbf800000, 0x3f800000, 0x80000000
    TEST_S_SS 7, fsgnjn.s, , 0, 0x00, 0xbf800000, 0x3f800000, 0x00000000
    TEST_S_SS 8, fsgnjx.s, , 0, 0x00, 0x3f800000, 0xbf800000, 0x80000000
    TEST_S_SS 9, fsgnjx.s, , 0, 0x00, 0xbf800000, 0xbf800000, 0x00000000
    /* NaNs keep their payload (even signaling ones), no NV */
    TEST_S_SS 10, fsgnj.s, , 0, 0x00, 0xff800001, 0x7f800001, 0xbf800000
    TEST_S_SS 11, fsgnjn.s, , 0, 0x00, 0x7fc12345, 0xffc12345, 0x80000000
    TEST_S_SS 12, fsgnjx.s, , 0, 0x00, 0x7fc12345, 0xffc12345, 0x80000000
    TEST_D_DD 13, fsgnj.d, , 0, 0x00, 0xbff0000000000000, 0x3ff0000000000000, 0x8000000000000000
    TEST_D_DD 14, fsgnjn.d, , 0, 0x00, 0x3ff0000000000000, 0x3ff0000000000000, 0xbff0000000000000
    TEST_D_DD 15, fsgnjx.d, , 0, 0x00, 0x3ff0000000000000, 0xbff0000000000000, 0x8000000000000000
    TEST_D_DD 16, fsgnj.d, , 0, 0x00, 0xfff0000000000001, 0x7ff0000000000001, 0xbff0000000000000
    TEST_D_DD 17, fsgnjn.d, , 0, 0x00, 0xfff8000000000000, 0x7ff8000000000000, 0x7ff8000000000000

    /* ---- loads and stores --------------------------------------------- */

    /* flw boxes and keeps a signaling NaN's bits */
    TEST_START 20, 0
    la a1, scratch
    li t0, 0x7f800001
    sw t0, 0(a1)
    flw ft0, 0(a1)
    CHECK_S ft0, 0x7f800001
    CHECK_FLAGS 0

    /* fsw stores the low 32 bits of a non-boxed register */
    TEST_START 21, 0
    la a1, scratch
    LOAD_D ft0, 0x123456789abcdef0
    fsw ft0, 8(a1)
    lwu a0, 8(a1)
    CHECK_X a0, 0x9abcdef0
    lwu a0, 12(a1)          /* and only 32 bits */
    CHECK_X a0, 0x55555555

    /* fsd/fld move 64 bits untouched */
    TEST_START 22, 0
    la a1, scratch
    LOAD_D ft0, 0x7ff4000000000123
    fsd ft0, 16(a1)
    fld ft1, 16(a1)
    CHECK_D ft1, 0x7ff4000000000123
    ld a0, 16(a1)
    CHECK_X a0, 0x7ff4000000000123
    CHECK_FLAGS 0

    /* ---- NaN-boxing: non-boxed inputs read as the canonical NaN ------- */

    /* arithmetic: canonical NaN result, no NV (the NaN is quiet) */
    TEST_START 30, 0
    LOAD_D ft0, UNBOXED_ONE
    fadd.s ft2, ft0, ft0
    CHECK_S ft2, 0x7fc00000
    CHECK_FLAGS 0

    TEST_START 31, 0
    LOAD_D ft0, HALF_BOXED
    fmul.s ft2, ft0, ft0
    CHECK_S ft2, 0x7fc00000
    CHECK_FLAGS 0

    /* correctly boxed: the value is used */
    TEST_START 32, 0
    LOAD_D ft0, 0xffffffff3f800000
    fadd.s ft2, ft0, ft0
    CHECK_S ft2, 0x40000000
    CHECK_FLAGS 0

    /* fclass.s: quiet NaN */
    TEST_START 33, 0
    LOAD_D ft0, UNBOXED_ONE
    fclass.s a0, ft0
    CHECK_X a0, 0x200

    /* fsgnj.s: the non-boxed rs1 is the canonical NaN, sign from rs2 */
    TEST_START 34, 0
    LOAD_D ft0, UNBOXED_ONE
    LOAD_S ft1, 0xbf800000
    fsgnj.s ft2, ft0, ft1
    CHECK_S ft2, 0xffc00000
    CHECK_FLAGS 0

    /* fsgnjn.s: the non-boxed rs2 is a positive NaN, so the result is negative */
    TEST_START 35, 0
    LOAD_D ft0, UNBOXED_ONE
    LOAD_S ft1, 0x3f800000
    fsgnjn.s ft2, ft1, ft0
    CHECK_S ft2, 0xbf800000

    /* fsgnj.s with both non-boxed: canonical NaN */
    TEST_START 36, 0
    LOAD_D ft0, UNBOXED_ONE
    fsgnj.s ft2, ft0, ft0
    CHECK_S ft2, 0x7fc00000

    /* fcvt.d.s: canonical double NaN, no flags */
    TEST_START 37, 0
    LOAD_D ft0, UNBOXED_ONE
    fcvt.d.s ft2, ft0
    CHECK_D ft2, 0x7ff8000000000000
    CHECK_FLAGS 0

    /* feq.s is quiet on it, flt.s signals */
    TEST_START 38, 0
    LOAD_D ft0, UNBOXED_ONE
    feq.s a0, ft0, ft0
    CHECK_X a0, 0
    CHECK_FLAGS 0

    TEST_START 39, 0
    LOAD_D ft0, UNBOXED_ONE
    LOAD_S ft1, 0x3f800000
    flt.s a0, ft0, ft1
    CHECK_X a0, 0
    CHECK_FLAGS 0x10

    /* fmin.s: a single NaN operand gives the other operand */
    TEST_START 40, 0
    LOAD_D ft0, UNBOXED_ONE
    LOAD_S ft1, 0x40000000
    fmin.s ft2, ft0, ft1
    CHECK_S ft2, 0x40000000
    CHECK_FLAGS 0

    /* fmadd.s with a non-boxed addend */
    TEST_START 41, 0
    LOAD_D ft0, UNBOXED_ONE
    LOAD_S ft1, 0x3f800000
    fmadd.s ft2, ft1, ft1, ft0
    CHECK_S ft2, 0x7fc00000
    CHECK_FLAGS 0

    /* fcvt.w.s: NaN saturates to the largest integer, NV */
    TEST_START 42, 0
    LOAD_D ft0, UNBOXED_ONE
    fcvt.w.s a0, ft0, rtz
    CHECK_X a0, 0x7fffffff
    CHECK_FLAGS 0x10

    /* fmv.x.w and fsw are transfers: they see the low bits */
    TEST_START 43, 0
    LOAD_D ft0, UNBOXED_ONE
    fmv.x.w a0, ft0
    CHECK_X a0, 0x3f800000

    TEST_START 44, 0
    la a1, scratch
    LOAD_D ft0, UNBOXED_ONE
    fsw ft0, 24(a1)
    lwu a0, 24(a1)
    CHECK_X a0, 0x3f800000

    /* fcvt.s.d and fcvt.s.w results are boxed */
    TEST_START 45, 0
    LOAD_D ft0, 0x3ff0000000000000
    fcvt.s.d ft2, ft0
    CHECK_S ft2, 0x3f800000
    li a1, 3
    fcvt.s.w ft2, a1
    CHECK_S ft2, 0x40400000

FP_TEST_END

    .data
    .balign 8
scratch:
    .dword 0x5555555555555555, 0x5555555555555555, 0x5555555555555555, 0x5555555555555555
