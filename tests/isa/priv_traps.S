/* Privileged architecture: ecall from each mode, mret/sret transitions and
 * the mstatus stack, exception delegation to S, illegal privileged
 * instructions and CSR accesses (with mtval), TSR/TW/TVM, ebreak. */
#include "hs_test.h"

/* s1 = expected mepc, s2 = where to resume in M, s3 = expected mcause, s4 = expected mtval (-1: any) */
#define EXPECT(cause, at, resume, tval) li s3, cause; la s1, at; la s2, resume; li s4, tval
/* enter `mode` (0 = U, 1 = S) at `label` */
#define ENTER(mode, label) li t0, MSTATUS_MPP; csrc mstatus, t0; li t0, (mode << 11); csrs mstatus, t0; la t0, label; csrw mepc, t0; mret

  START
main:
  SET_HANDLER(check_trap)
  TEST(1)
  /* ecall from M: cause 11, MPP = M, MIE stacked into MPIE */
  csrsi mstatus, MSTATUS_MIE
  EXPECT(11, 1f, 2f, 0)
1: ecall
  j fail
2: csrr a0, mstatus
  andi a1, a0, MSTATUS_MIE
  beqz a1, fail            /* mret restored MIE from MPIE */
  andi a1, a0, MSTATUS_MPIE
  beqz a1, fail            /* and set MPIE */
  TEST(2)
  csrci mstatus, MSTATUS_MIE
  /* ecall from S */
  EXPECT(9, s_ecall, 2f, 0)
  ENTER(1, s_ecall)
2: TEST(3)
  /* ecall from U */
  EXPECT(8, u_ecall, 2f, 0)
  ENTER(0, u_ecall)
2: TEST(4)
  /* U: privileged instructions and CSRs are illegal */
  la s5, u_mret
  EXPECT(2, u_mret, 2f, 0)
  lwu s4, 0(s5)
  ENTER(0, u_mret)
2: TEST(5)
  la s5, u_sret
  lwu s4, 0(s5)
  li s3, 2
  mv s1, s5
  la s2, 2f
  ENTER(0, u_sret)
2: TEST(6)
  la s5, u_wfi
  lwu s4, 0(s5)
  li s3, 2
  mv s1, s5
  la s2, 2f
  ENTER(0, u_wfi)
2: TEST(7)
  la s5, u_csr
  lwu s4, 0(s5)
  li s3, 2
  mv s1, s5
  la s2, 2f
  ENTER(0, u_csr)
2: TEST(8)
  /* S: mret and M CSRs are illegal */
  la s5, s_mret
  lwu s4, 0(s5)
  li s3, 2
  mv s1, s5
  la s2, 2f
  ENTER(1, s_mret)
2: TEST(9)
  la s5, s_csr
  lwu s4, 0(s5)
  li s3, 2
  mv s1, s5
  la s2, 2f
  ENTER(1, s_csr)
2: TEST(10)
  /* TSR: sret in S traps */
  li t0, MSTATUS_TSR
  csrs mstatus, t0
  la s5, s_sret
  lwu s4, 0(s5)
  li s3, 2
  mv s1, s5
  la s2, 2f
  ENTER(1, s_sret)
2: li t0, MSTATUS_TSR
  csrc mstatus, t0
  TEST(11)
  /* TVM: satp and sfence.vma in S trap */
  li t0, MSTATUS_TVM
  csrs mstatus, t0
  la s5, s_satp
  lwu s4, 0(s5)
  li s3, 2
  mv s1, s5
  la s2, 2f
  ENTER(1, s_satp)
2: la s5, s_sfence
  lwu s4, 0(s5)
  li s3, 2
  mv s1, s5
  la s2, 2f
  ENTER(1, s_sfence)
2: li t0, MSTATUS_TVM
  csrc mstatus, t0
  TEST(12)
  /* TW: wfi in S traps */
  li t0, MSTATUS_TW
  csrs mstatus, t0
  la s5, s_wfi
  lwu s4, 0(s5)
  li s3, 2
  mv s1, s5
  la s2, 2f
  ENTER(1, s_wfi)
2: li t0, MSTATUS_TW
  csrc mstatus, t0
  TEST(13)
  /* without TSR/TVM, S may sret, read satp and sfence (ends in an ecall) */
  EXPECT(9, s_ok_ecall, 2f, 0)
  ENTER(1, s_ok)
2: TEST(14)
  EXPECT(3, m_ebreak, 2f, -1)
m_ebreak: ebreak
  j fail
2: TEST(15)
  /* delegation: U ecall and U illegal go to S; S sees scause/sepc/stval/SPP */
  li t0, (1 << 8) | (1 << 2)
  csrw medeleg, t0
  la t0, s_handler
  csrw stvec, t0
  EXPECT(9, s_back, 2f, 0)     /* the S handler ends with an ecall to M */
  li s6, 8
  la s7, u_ecall2
  li s8, 0
  ENTER(0, u_ecall2)
2: TEST(16)
  la s7, u_ill
  lwu s8, 0(s7)
  li s6, 2
  EXPECT(9, s_back, 2f, 0)
  ENTER(0, u_ill)
2: TEST(17)
  /* traps from M never go to S, even if medeleg has the bit */
  EXPECT(11, 1f, 2f, 0)
  li t0, (1 << 11) | (1 << 3)
  csrs medeleg, t0
  EXPECT(3, 3f, 4f, -1)
3: ebreak
  j fail
4: EXPECT(11, 1f, 2f, 0)
1: ecall
  j fail
2: csrw medeleg, zero
  TEST(18)
  /* sret from S to U through SPP; U then ecalls to M */
  EXPECT(8, u_after_sret, 2f, 0)
  ENTER(1, s_to_u)
2: PASS

/* ---- code run in lower modes ---- */
s_ecall: ecall
  j fail
u_ecall: ecall
  j fail
u_mret: mret
u_sret: sret
u_wfi: wfi
u_csr: csrr a0, mstatus
s_mret: mret
s_csr: csrr a0, mscratch
s_sret: sret
s_satp: csrr a0, satp
s_sfence: sfence.vma
s_wfi: wfi
s_ok:
  csrr a0, satp
  sfence.vma
  la t0, s_ok_ecall
  csrw sepc, t0
  li t0, MSTATUS_SPP
  csrs sstatus, t0
  sret
s_ok_ecall: ecall
u_ecall2: ecall
u_ill: csrr a0, sstatus
s_to_u:
  li t0, MSTATUS_SPP
  csrc sstatus, t0
  la t0, u_after_sret
  csrw sepc, t0
  sret
u_after_sret: ecall

/* S handler: expects scause s6, sepc s7, stval s8 (0 for ecall), SPP = U; then ecalls to M */
  .align 2
s_handler:
  csrr t0, scause
  bne t0, s6, fail_s
  csrr t0, sepc
  bne t0, s7, fail_s
  csrr t0, stval
  bne t0, s8, fail_s
  csrr t0, sstatus
  andi t0, t0, MSTATUS_SPP
  bnez t0, fail_s
s_back: ecall
fail_s: ecall   /* mepc mismatch makes check_trap fail */

/* M handler: check mcause/mepc/mtval, resume at s2 in M-mode */
check_trap:
  csrr t0, mstatus
  andi t0, t0, MSTATUS_MIE
  bnez t0, fail            /* trap entry clears MIE */
  csrr t0, mcause
  bne t0, s3, fail
  csrr t0, mepc
  bne t0, s1, fail
  li t0, -1
  beq s4, t0, 1f
  csrr t0, mtval
  bne t0, s4, fail
1: csrw mepc, s2
  li t0, MSTATUS_MPP
  csrs mstatus, t0
  csrr t0, mscratch
  mret
