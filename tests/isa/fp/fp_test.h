/* Shared by the self-checking F/D test programs in tests/isa/fp/.
 *
 * Exit protocol (Spike HTIF): the program stores (code << 1) | 1, 64 bits
 * wide, to the symbol `tohost` (8 bytes, size 8 in the ELF symbol table:
 * QEMU insists); code 0 = pass, otherwise the number
 * of the failing test (1..=250). QEMU -M spike exits with that code.
 * Code 254 means a failure before the first test.
 *
 * Register use: t3 = current test number, s10/s11 = expected-trap handshake,
 * t0-t2, t4-t6, a0, a1 and ft0-ft3 are scratch.
 *
 * Each test line checks the full 64-bit destination register (single
 * results must be NaN-boxed) and then fflags, which it expects the
 * instruction alone to have set.
 */

#define TESTNUM t3

.option norvc

/* ---- program frame ---------------------------------------------------- */

.macro FP_TEST_BEGIN
    .section .text.init, "ax", @progbits
    .globl _start
_start:
    li TESTNUM, 254
    li s11, 0
    la t0, trap_vector
    csrw mtvec, t0
    li t0, (1 << 13)            /* mstatus.FS = Initial */
    csrs mstatus, t0
    csrwi fcsr, 0
    j tests
    .text
tests:
.endm

.macro FP_TEST_END
    li a0, 1
    j htif_exit
fail:
    slli a0, TESTNUM, 1
    ori a0, a0, 1
htif_exit:
    la t0, tohost
    sd a0, 0(t0)
1:  j 1b

/* A trap is a failure unless a test announced it (s11 = expected mcause);
 * then the faulting (4-byte) instruction is skipped and s10 set to 1. */
    .balign 4
trap_vector:
    beqz s11, fail
    csrr t5, mcause
    bne t5, s11, fail
    csrr t5, mepc
    addi t5, t5, 4
    csrw mepc, t5
    li s11, 0
    li s10, 1
    mret

    .section .tohost, "aw", @progbits
    .balign 8
    .globl tohost
    .type tohost, @object
    .size tohost, 8
tohost: .dword 0
    .balign 8
    .globl fromhost
    .type fromhost, @object
    .size fromhost, 8
fromhost: .dword 0
.endm

/* ---- building blocks -------------------------------------------------- */

/* Starts test \num with frm = \frm and fflags cleared. */
.macro TEST_START num, frm
    .if (\num < 1) || (\num > 250)
    .error "test numbers must be 1..=250 (QEMU exit codes are 8 bits)"
    .endif
    li TESTNUM, \num
    fsrmi \frm
    csrwi fflags, 0
.endm

.macro LOAD_S freg, bits
    li t0, \bits
    fmv.w.x \freg, t0
.endm

.macro LOAD_D freg, bits
    li t0, \bits
    fmv.d.x \freg, t0
.endm

.macro LOAD_X xreg, bits
    li \xreg, \bits
.endm

/* single result: the whole register must be 0xffffffff_<want> */
.macro CHECK_S freg, want
    fmv.x.d t1, \freg
    li t2, 0xffffffff00000000 | (\want)
    bne t1, t2, fail
.endm

.macro CHECK_D freg, want
    fmv.x.d t1, \freg
    li t2, \want
    bne t1, t2, fail
.endm

.macro CHECK_X xreg, want
    li t2, \want
    bne \xreg, t2, fail
.endm

.macro CHECK_FLAGS want
    csrr t1, fflags
    li t2, \want
    bne t1, t2, fail
.endm

/* Emits "\op rd, srcs" or "\op rd, srcs, \rm" when \rm is given. */
.macro OP_RM op, rm, operands:vararg
    .ifb \rm
    \op \operands
    .else
    \op \operands, \rm
    .endif
.endm

/* ---- test shapes: TEST_<dest>_<sources> -------------------------------
 * num, op, rm (blank = none / encoder default), frm, flags, want, inputs…
 * S = single in an f register, D = double, X = integer register. */

.macro TEST_S_S num, op, rm, frm, flags, want, a
    TEST_START \num, \frm
    LOAD_S ft0, \a
    OP_RM \op, \rm, ft2, ft0
    CHECK_S ft2, \want
    CHECK_FLAGS \flags
.endm

.macro TEST_S_SS num, op, rm, frm, flags, want, a, b
    TEST_START \num, \frm
    LOAD_S ft0, \a
    LOAD_S ft1, \b
    OP_RM \op, \rm, ft2, ft0, ft1
    CHECK_S ft2, \want
    CHECK_FLAGS \flags
.endm

.macro TEST_S_SSS num, op, rm, frm, flags, want, a, b, c
    TEST_START \num, \frm
    LOAD_S ft0, \a
    LOAD_S ft1, \b
    LOAD_S ft3, \c
    OP_RM \op, \rm, ft2, ft0, ft1, ft3
    CHECK_S ft2, \want
    CHECK_FLAGS \flags
.endm

.macro TEST_S_D num, op, rm, frm, flags, want, a
    TEST_START \num, \frm
    LOAD_D ft0, \a
    OP_RM \op, \rm, ft2, ft0
    CHECK_S ft2, \want
    CHECK_FLAGS \flags
.endm

.macro TEST_S_X num, op, rm, frm, flags, want, a
    TEST_START \num, \frm
    LOAD_X a1, \a
    OP_RM \op, \rm, ft2, a1
    CHECK_S ft2, \want
    CHECK_FLAGS \flags
.endm

.macro TEST_D_D num, op, rm, frm, flags, want, a
    TEST_START \num, \frm
    LOAD_D ft0, \a
    OP_RM \op, \rm, ft2, ft0
    CHECK_D ft2, \want
    CHECK_FLAGS \flags
.endm

.macro TEST_D_DD num, op, rm, frm, flags, want, a, b
    TEST_START \num, \frm
    LOAD_D ft0, \a
    LOAD_D ft1, \b
    OP_RM \op, \rm, ft2, ft0, ft1
    CHECK_D ft2, \want
    CHECK_FLAGS \flags
.endm

.macro TEST_D_DDD num, op, rm, frm, flags, want, a, b, c
    TEST_START \num, \frm
    LOAD_D ft0, \a
    LOAD_D ft1, \b
    LOAD_D ft3, \c
    OP_RM \op, \rm, ft2, ft0, ft1, ft3
    CHECK_D ft2, \want
    CHECK_FLAGS \flags
.endm

.macro TEST_D_S num, op, rm, frm, flags, want, a
    TEST_START \num, \frm
    LOAD_S ft0, \a
    OP_RM \op, \rm, ft2, ft0
    CHECK_D ft2, \want
    CHECK_FLAGS \flags
.endm

.macro TEST_D_X num, op, rm, frm, flags, want, a
    TEST_START \num, \frm
    LOAD_X a1, \a
    OP_RM \op, \rm, ft2, a1
    CHECK_D ft2, \want
    CHECK_FLAGS \flags
.endm

.macro TEST_X_S num, op, rm, frm, flags, want, a
    TEST_START \num, \frm
    LOAD_S ft0, \a
    OP_RM \op, \rm, a0, ft0
    CHECK_X a0, \want
    CHECK_FLAGS \flags
.endm

.macro TEST_X_SS num, op, rm, frm, flags, want, a, b
    TEST_START \num, \frm
    LOAD_S ft0, \a
    LOAD_S ft1, \b
    OP_RM \op, \rm, a0, ft0, ft1
    CHECK_X a0, \want
    CHECK_FLAGS \flags
.endm

.macro TEST_X_D num, op, rm, frm, flags, want, a
    TEST_START \num, \frm
    LOAD_D ft0, \a
    OP_RM \op, \rm, a0, ft0
    CHECK_X a0, \want
    CHECK_FLAGS \flags
.endm

.macro TEST_X_DD num, op, rm, frm, flags, want, a, b
    TEST_START \num, \frm
    LOAD_D ft0, \a
    LOAD_D ft1, \b
    OP_RM \op, \rm, a0, ft0, ft1
    CHECK_X a0, \want
    CHECK_FLAGS \flags
.endm

/* Runs \insn expecting a synchronous trap with mcause \cause; fails if
 * it does not trap (a trap with another cause fails in the handler). */
.macro EXPECT_TRAP num, cause, insn:vararg
    li TESTNUM, \num
    li s10, 0
    li s11, \cause
    \insn
    beqz s10, fail
.endm
