/* PMP as S-mode sees it: NA4 inside a page (the rest of the page stays
 * usable), TOR read-only, NAPOT execute-only, priority order, page-table
 * walks checked too, M-mode unaffected unless an entry is locked; locked
 * entries ignore writes (including the TOR base below them). */
#include "hs_test.h"
#define EXPECT(cause, at, resume, tval) li s3, cause; la s1, at; la s2, resume; la s4, tval
#define ENTER(mode, label) li t0, MSTATUS_MPP; csrc mstatus, t0; li t0, (mode << 11); csrs mstatus, t0; la t0, label; csrw mepc, t0; mret
#define NA4 (2 << 3)
#define TOR (1 << 3)
#define NAPOT (3 << 3)
  START
  .option norvc
main:
  SET_HANDLER(check_trap)
  /* 0: NA4 at na4_word, no access
     1: (off) base of 2
     2: TOR [secret, secret+4K) R
     3: NAPOT secret_x (4K) X
     4: NAPOT pt_root (4K) none
     5: NAPOT everything RWX */
  la t0, na4_word
  srli t0, t0, 2
  csrw pmpaddr0, t0
  la t0, secret
  srli t0, t0, 2
  csrw pmpaddr1, t0
  la t0, secret + 4096
  srli t0, t0, 2
  csrw pmpaddr2, t0
  la t0, secret_x
  srli t0, t0, 2
  ori t0, t0, 0x1ff
  csrw pmpaddr3, t0
  la t0, pt_root
  srli t0, t0, 2
  ori t0, t0, 0x1ff
  csrw pmpaddr4, t0
  li t0, -1
  csrw pmpaddr5, t0
  li t0, (NA4) | (0 << 8) | ((TOR | 1) << 16) | ((NAPOT | 4) << 24) | ((NAPOT) << 32) | ((NAPOT | 7) << 40)
  csrw pmpcfg0, t0
  TEST(1)
  EXPECT(5, s_load, 2f, na4_word)
  la a1, na4_word
  ENTER(1, s_load)
2: EXPECT(9, s_load_end, 2f, 0)
  li s4, 0
  la a1, na4_word + 4
  ENTER(1, s_load)
2: CHECK(a0, 0x4444)
  TEST(2)
  EXPECT(9, s_load_end, 2f, 0)
  li s4, 0
  la a1, secret
  ENTER(1, s_load)
2: CHECK(a0, 0x5e)
  EXPECT(7, s_store, 2f, secret + 8)
  la a1, secret + 8
  ENTER(1, s_store)
2: TEST(3)
  /* no X on the read-only region */
  EXPECT(1, secret_code, 2f, secret_code)
  ENTER(1, secret_code)
2: TEST(4)
  /* execute-only region: loads fault, code runs */
  EXPECT(5, s_load, 2f, secret_x)
  la a1, secret_x
  ENTER(1, s_load)
2: EXPECT(9, secret_x, 2f, 0)
  li s4, 0
  ENTER(1, secret_x)
2: TEST(5)
  /* M-mode is not restricted by unlocked entries */
  la a1, na4_word
  lw a0, 0(a1)
  sw a0, 0(a1)
  la a1, secret
  sd a0, 8(a1)
  TEST(6)
  /* the page-table walk reads a PMP-protected root: access fault, not page fault */
  la t0, pt_root
  srli t0, t0, 12
  li t1, 8 << 60
  or t0, t0, t1
  csrw satp, t0
  sfence.vma
  EXPECT(1, s_load, 2f, s_load)
  ENTER(1, s_load)
2: csrw satp, zero
  sfence.vma
  TEST(7)
  /* lock entry 2: M loses write access there; entry 2 and pmpaddr1 freeze */
  li t0, (0x80 << 16)
  csrs pmpcfg0, t0
  la a1, secret
  ld a0, 0(a1)
  EXPECT(7, 1f, 2f, secret)
1: sd a0, 0(a1)
  j fail
2: csrr a2, pmpaddr1
  csrw pmpaddr1, zero
  csrr a3, pmpaddr1
  CHECK_REG(a2, a3)
  csrr a2, pmpaddr2
  csrw pmpaddr2, zero
  csrr a3, pmpaddr2
  CHECK_REG(a2, a3)
  li t0, (0xff << 16)
  csrc pmpcfg0, t0
  csrr a2, pmpcfg0
  srli a2, a2, 16
  andi a2, a2, 0xff
  CHECK(a2, 0x80 | TOR | 1)
  PASS

s_load: ld a0, 0(a1)
s_load_end: ecall
s_store: sd a0, 0(a1)
  ecall

check_trap:
  csrr t0, mcause
  bne t0, s3, fail
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
  .balign 4096
na4_word: .word 0x1234
  .word 0x4444
  .balign 4096
secret: .dword 0x5e
  .dword 0
secret_code: ecall
  .balign 4096
secret_x: ecall
  .balign 4096
pt_root: .space 4096
