/* Shared scaffolding for the self-checking programs in tests/isa.
 *
 * A program defines `main` (M-mode, sp set, FS on, PMP open to S/U, every
 * trap fatal unless the program installs `trap_handler`) and ends with
 * PASS or FAIL. The current test number lives in gp; FAIL reports it as the
 * exit code through Spike's HTIF `tohost` ((code << 1) | 1; 0 = pass), then
 * through a SiFive test finisher at 0x100000 (QEMU `virt`), which programs
 * that need `time`/Sstc run on: mark them with the word QEMU_VIRT. */

#define TESTNUM gp

#define MSTATUS_SIE  (1 << 1)
#define MSTATUS_MIE  (1 << 3)
#define MSTATUS_SPIE (1 << 5)
#define MSTATUS_MPIE (1 << 7)
#define MSTATUS_SPP  (1 << 8)
#define MSTATUS_MPP  (3 << 11)
#define MSTATUS_MPP_S (1 << 11)
#define MSTATUS_FS   (3 << 13)
#define MSTATUS_MPRV (1 << 17)
#define MSTATUS_SUM  (1 << 18)
#define MSTATUS_MXR  (1 << 19)
#define MSTATUS_TVM  (1 << 20)
#define MSTATUS_TW   (1 << 21)
#define MSTATUS_TSR  (1 << 22)

#define TEST(n) li TESTNUM, n
/* fail unless register == value (t6 is scratch) */
#define CHECK(reg, val) li t6, val; bne reg, t6, fail
#define CHECK_REG(reg, other) bne reg, other, fail

#define PASS j pass
#define FAIL j fail

/* Print the low byte of reg on the HTIF console (clobbers t4, t5, t6). */
#define PUTC(reg) mv t4, reg; jal t5, htif_putc

.macro START
  .section .text.init
  .globl _start
_start:
  la t0, trap_entry
  csrw mtvec, t0
  /* PMP entry 0: NAPOT over everything, RWX, so S and U can run */
  li t0, -1
  csrw pmpaddr0, t0
  li t0, 0x1f
  csrw pmpcfg0, t0
  li t0, MSTATUS_FS
  csrs mstatus, t0
  csrwi fcsr, 0
  la sp, stack_top
  li TESTNUM, 0
  j main

  .align 2
trap_entry:
  /* a program-installed handler, if any, gets the trap (ra is the handler's return address scratch) */
  csrw mscratch, t0
  la t0, trap_handler_ptr
  ld t0, 0(t0)
  beqz t0, 1f
  jr t0
1:
  csrr t0, mcause
  li TESTNUM, 1000
  add TESTNUM, TESTNUM, t0
  j fail

  .globl pass
pass:
  li t0, 1
  la t1, tohost
  sd t0, 0(t1)
  li t0, 0x5555
  li t1, 0x100000
  sw t0, 0(t1)
2: j 2b

  .globl fail
fail:
  slli t0, TESTNUM, 1
  ori t0, t0, 1
  la t1, tohost
  sd t0, 0(t1)
  slli t0, TESTNUM, 16
  li t1, 0x3333
  or t0, t0, t1
  li t1, 0x100000
  sw t0, 0(t1)
3: j 3b

/* console: t4 = byte, returns through t5 */
htif_putc:
  li t6, 0x0101000000000000
  andi t4, t4, 0xff
  or t6, t6, t4
  la t4, tohost
  sd t6, 0(t4)
4:
  la t4, fromhost
  ld t6, 0(t4)
  beqz t6, 4b
  sd zero, 0(t4)
  jr t5

  .section .tohost, "aw", @progbits
  .align 6
  .globl tohost
tohost: .dword 0
  .size tohost, 8
  .align 6
  .globl fromhost
fromhost: .dword 0
  .size fromhost, 8

  .data
  .align 3
  .globl trap_handler_ptr
trap_handler_ptr: .dword 0

  .bss
  .align 4
stack_bottom: .space 8192
stack_top:

  .text
.endm

/* Install `label` as the M-mode trap handler; it runs with t0 saved in mscratch. */
#define SET_HANDLER(label) la t0, label; la t1, trap_handler_ptr; sd t0, 0(t1)
