/* Interrupts (runs on QEMU_VIRT: it needs the time CSR and Sstc):
 * software-set pending bits taken in M (vectored mtvec) and, delegated, in
 * S; global enables and privilege rules; priority; Sstc stimecmp firing an
 * S timer interrupt out of WFI; STIP read-only under STCE, writable by M
 * without it; WFI completes when an interrupt is pending but masked. */
#include "hs_test.h"
#define MIP_SSIP (1 << 1)
#define MIP_STIP (1 << 5)
#define IRQ (1 << 63)
#define ENTER(mode, label) li t0, MSTATUS_MPP; csrc mstatus, t0; li t0, (mode << 11); csrs mstatus, t0; la t0, label; csrw mepc, t0; mret
  START
main:
  TEST(1)
  /* vectored mtvec: SSIP (not delegated) lands at base + 4*1 in M */
  la t0, mvec
  ori t0, t0, 1
  csrw mtvec, t0
  li s6, 0                  /* interrupt count */
  li t0, MIP_SSIP
  csrw mie, t0
  csrs mip, t0
  nop                       /* MIE=0: nothing happens */
  bnez s6, fail
  csrsi mstatus, MSTATUS_MIE
  nop
  nop
  csrci mstatus, MSTATUS_MIE
  li t0, 1
  bne s6, t0, fail
  li t0, IRQ | 1
  bne s7, t0, fail
  TEST(2)
  /* WFI with a pending, enabled (in mie) but globally masked interrupt completes */
  li t0, MIP_SSIP
  csrs mip, t0
  wfi
  csrc mip, t0
  li t0, 1
  bne s6, t0, fail
  TEST(3)
  /* delegated SSIP to S: taken in U regardless of SIE, in S only with SIE */
  la t0, trap_entry
  csrw mtvec, t0
  li t0, MIP_SSIP | MIP_STIP
  csrw mideleg, t0
  la t0, stvec_handler
  csrw stvec, t0
  li s6, 0
  li t0, MIP_SSIP
  csrs mip, t0
  SET_HANDLER(back_to_m)
  la s2, 2f
  ENTER(1, s_no_sie)        /* S with SIE=0: runs to its ecall */
2: bnez s6, fail
  la s2, 2f
  ENTER(0, u_spin)          /* U: the interrupt is taken at once */
2: li t0, 1
  bne s6, t0, fail
  li t0, IRQ | 1
  bne s7, t0, fail
  TEST(4)
  /* priority: SSIP before STIP when both are pending (STIP set by M, no STCE) */
  li s6, 0
  li t0, MIP_SSIP | MIP_STIP
  csrw mie, t0
  csrs mip, t0
  csrr t1, mip
  and t1, t1, t0
  bne t1, t0, fail
  la s2, 2f
  ENTER(0, u_spin)
2: li t0, IRQ | 1
  bne s7, t0, fail          /* the first interrupt taken was SSI (stvec clears SSIP, STIP remains) */
  li t0, MIP_STIP
  csrc mip, t0
  TEST(5)
  /* Sstc: STIP follows time >= stimecmp and is not writable */
  li t0, 1 << 63
  csrs menvcfg, t0
  csrsi mcounteren, 2
  li t0, -1
  csrw stimecmp, t0
  li t0, MIP_STIP
  csrs mip, t0
  csrr t1, mip
  and t1, t1, t0
  bnez t1, fail
  csrw stimecmp, zero
  csrr t1, mip
  and t1, t1, t0
  beqz t1, fail
  li t0, -1
  csrw stimecmp, t0
  TEST(6)
  /* S arms stimecmp a little ahead and waits in WFI; the timer interrupt arrives */
  la t0, stvec_timer
  csrw stvec, t0
  li s6, 0
  li t0, MIP_STIP
  csrw mie, t0
  la s2, 2f
  ENTER(1, s_timer)
2: li t0, 1
  bne s6, t0, fail
  li t0, IRQ | 5
  bne s7, t0, fail
  /* time moved forward while waiting */
  csrr t0, time
  bltu t0, s8, fail
  TEST(7)
  /* S may not read time when mcounteren.TM is clear (stimecmp neither) */
  csrci mcounteren, 2
  SET_HANDLER(expect_illegal)
  la s2, 2f
  ENTER(1, s_rdtime)
2: csrsi mcounteren, 2
  PASS

/* ---- M vector table ---- */
  .balign 64
mvec:
  j trap_entry              /* exceptions */
  j m_ssi                   /* 1: SSI */
  j fail
  j fail
  j fail
  j fail
m_ssi:
  addi s6, s6, 1
  csrr s7, mcause
  li t0, MIP_SSIP
  csrc mip, t0
  mret

/* ---- S code ---- */
s_no_sie:
  nop
  nop
  ecall
u_spin:
  nop
  j u_spin
s_timer:
  csrr s8, time
  addi t0, s8, 20
  csrw stimecmp, t0
  csrsi sstatus, MSTATUS_SIE
1: wfi
  beqz s6, 1b
  ecall
s_rdtime:
  csrr a0, time
  j fail

  .balign 4
stvec_handler:
  addi s6, s6, 1
  csrr s7, scause
  li t0, MIP_SSIP
  csrc sip, t0
  csrr t0, sstatus
  andi t0, t0, MSTATUS_SPP
  bnez t0, 1f
  ecall                     /* from U: report to M */
1: sret

stvec_timer:
  addi s6, s6, 1
  csrr s7, scause
  li t0, -1
  csrw stimecmp, t0
  sret

/* ecall from S/U: continue at s2 in M */
back_to_m:
  csrr t0, mcause
  li t1, 8
  beq t0, t1, 1f
  li t1, 9
  beq t0, t1, 1f
  j fail
1: csrw mepc, s2
  li t0, MSTATUS_MPP
  csrs mstatus, t0
  csrci mstatus, MSTATUS_MIE
  csrr t0, mscratch
  mret
expect_illegal:
  csrr t0, mcause
  li t1, 2
  bne t0, t1, fail
  csrw mepc, s2
  li t0, MSTATUS_MPP
  csrs mstatus, t0
  csrr t0, mscratch
  mret
