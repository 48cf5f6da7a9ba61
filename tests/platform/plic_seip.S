/* mip.SEIP and the PLIC (issue 9), on the whole machine and QEMU virt:
 * the UART's THRE interrupt makes the PLIC hold S-external pending for hart
 * 0; a CSRRS/CSRRC of mip then returns SEIP = 1 but must not copy the
 * line into the software-writable SEIP, so after the claim completes (and
 * the line drops) SEIP reads 0 and the PLIC has nothing more to give.
 * Interrupts stay disabled (mie = 0): everything is polled. */
#include "hs_test.h"
#define MIP_SSIP (1 << 1)
#define MIP_SEIP (1 << 9)
#define UART_IER 0x10000001
#define IER_THRI 2
#define UART_IRQ 10
#define PLIC_PRIO (0x0c000000 + 4 * UART_IRQ)
#define PLIC_ENABLE_S0 0x0c002080   /* context 1: hart 0, S-mode */
#define PLIC_THRESH_S0 0x0c201000
#define PLIC_CLAIM_S0 0x0c201004
#define POLLS 1000

/* wait (bounded) until mip.SEIP == want (0 or 1), else fail */
#define WAIT_SEIP(want) li t2, POLLS; 1: csrr t1, mip; srli t1, t1, 9; andi t1, t1, 1; li t3, want; beq t1, t3, 2f; addi t2, t2, -1; bnez t2, 1b; j fail; 2:
#define UART_THRI(on) li t0, UART_IER; li t1, (on) * IER_THRI; sb t1, 0(t0)

  START
main:
  TEST(1)
  /* the UART (source 10) routed to hart 0's S context only */
  li t0, PLIC_PRIO
  li t1, 1
  sw t1, 0(t0)
  li t0, PLIC_ENABLE_S0
  li t1, 1 << UART_IRQ
  sw t1, 0(t0)
  li t0, PLIC_THRESH_S0
  sw zero, 0(t0)
  UART_THRI(1)
  WAIT_SEIP(1)
  TEST(2)
  /* OpenSBI's IPI relay while the line is high: the value read has SEIP */
  li t0, MIP_SSIP
  csrrs t1, mip, t0
  li t2, MIP_SEIP | MIP_SSIP
  and t1, t1, t2
  CHECK(t1, MIP_SEIP)
  csrrc t1, mip, t0
  and t1, t1, t2
  CHECK(t1, MIP_SEIP | MIP_SSIP)
  TEST(3)
  /* claim, silence the source, complete: SEIP goes to 0 */
  li t0, PLIC_CLAIM_S0
  lw s1, 0(t0)
  CHECK(s1, UART_IRQ)
  UART_THRI(0)
  li t0, PLIC_CLAIM_S0
  sw s1, 0(t0)
  WAIT_SEIP(0)
  TEST(4)
  /* no empty claims left behind */
  li t0, PLIC_CLAIM_S0
  lw t1, 0(t0)
  CHECK(t1, 0)
  TEST(5)
  /* M's own SEIP: set and cleared by CSRRS/CSRRC while the line is low */
  li t0, MIP_SEIP
  csrs mip, t0
  WAIT_SEIP(1)
  csrc mip, t0
  WAIT_SEIP(0)
  TEST(6)
  /* clearing SEIP with CSRRC while the line is high clears only M's bit:
   * SEIP reads 1 until the line drops, then 0 */
  csrs mip, t0
  UART_THRI(1)
  li t0, MIP_SEIP
  csrrc t1, mip, t0
  and t1, t1, t0
  CHECK(t1, MIP_SEIP)
  csrr t1, mip
  and t1, t1, t0
  CHECK(t1, MIP_SEIP)
  li t0, PLIC_CLAIM_S0
  lw s1, 0(t0)
  CHECK(s1, UART_IRQ)
  UART_THRI(0)
  li t0, PLIC_CLAIM_S0
  sw s1, 0(t0)
  WAIT_SEIP(0)
  PASS
