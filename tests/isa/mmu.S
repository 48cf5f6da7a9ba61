/* Sv39/Sv48 translation on hand-built page tables: hardware A/D updates,
 * R/W/X/U permission faults with stval, SUM, MXR, invalid and reserved
 * PTEs, misaligned superpages, non-canonical addresses, MPRV, U-mode code
 * on a U page, S fetch from a U page. */
#include "hs_test.h"

#define PTE_V 1
#define PTE_R 2
#define PTE_W 4
#define PTE_X 8
#define PTE_U 16
#define PTE_A 64
#define PTE_D 128
#define VA 0x40000000
/* table[idx] = pte(phys of label, flags) */
#define MAP(table, idx, label, flags) la t0, label; srli t0, t0, 12; slli t0, t0, 10; ori t0, t0, flags; la t1, table; sd t0, (idx * 8)(t1)
#define EXPECT(cause, at, resume, tval) li s3, cause; la s1, at; la s2, resume; li s4, tval
#define ENTER(mode, label) li t0, MSTATUS_MPP; csrc mstatus, t0; li t0, (mode << 11); csrs mstatus, t0; la t0, label; csrw mepc, t0; mret
#define PTE_AT(reg, table, idx) la t0, table; ld reg, (idx * 8)(t0)

  START
main:
  SET_HANDLER(check_trap)
  /* root[2]: 1 GiB identity for 0x80000000 (code, data, stack), supervisor RWX */
  li t0, (0x80000000 >> 12) << 10 | PTE_V | PTE_R | PTE_W | PTE_X | PTE_A | PTE_D
  la t1, pt_root
  sd t0, 16(t1)
  MAP(pt_root, 1, pt_l1, PTE_V)
  MAP(pt_l1, 0, pt_l0, PTE_V)
  MAP(pt_l0, 0, page_rw, PTE_V | PTE_R | PTE_W)
  MAP(pt_l0, 1, page_r, PTE_V | PTE_R | PTE_A)
  MAP(pt_l0, 2, page_x, PTE_V | PTE_X | PTE_A)
  MAP(pt_l0, 3, page_u, PTE_V | PTE_R | PTE_W | PTE_U | PTE_A | PTE_D)
  MAP(pt_l0, 4, page_r, PTE_R | PTE_A)            /* not valid */
  MAP(pt_l0, 5, page_r, PTE_V | PTE_W | PTE_A)    /* W without R: reserved */
  MAP(pt_l0, 6, u_code, PTE_V | PTE_R | PTE_X | PTE_U | PTE_A)
  /* pt_l1[1]: 2 MiB leaf whose PPN is not 2 MiB aligned */
  MAP(pt_l1, 1, page_r, PTE_V | PTE_R | PTE_A)
  la t0, pt_root
  srli t0, t0, 12
  li t1, 8 << 60
  or t0, t0, t1
  csrw satp, t0
  sfence.vma
  li a0, 0x1111
  la t0, page_rw
  sd a0, 0(t0)

  TEST(1)
  /* S load: A set, D still clear */
  EXPECT(9, s_load_end, 2f, 0)
  li a1, VA
  ENTER(1, s_load)
2: CHECK(a0, 0x1111)
  PTE_AT(a2, pt_l0, 0)
  andi a3, a2, PTE_A
  beqz a3, fail
  andi a3, a2, PTE_D
  bnez a3, fail
  TEST(2)
  /* S store: D set, memory written */
  EXPECT(9, s_store_end, 2f, 0)
  li a1, VA + 8
  li a0, 0x2222
  ENTER(1, s_store)
2: PTE_AT(a2, pt_l0, 0)
  andi a3, a2, PTE_D
  beqz a3, fail
  la t0, page_rw
  ld a3, 8(t0)
  CHECK(a3, 0x2222)
  TEST(3)
  /* store to a read-only page */
  EXPECT(15, s_store, 2f, VA + 0x1010)
  li a1, VA + 0x1010
  ENTER(1, s_store)
2: TEST(4)
  /* load from an execute-only page faults, unless MXR */
  EXPECT(13, s_load, 2f, VA + 0x2000)
  li a1, VA + 0x2000
  ENTER(1, s_load)
2: li t0, MSTATUS_MXR
  csrs mstatus, t0
  EXPECT(9, s_load_end, 2f, 0)
  ENTER(1, s_load)
2: li t0, MSTATUS_MXR
  csrc mstatus, t0
  CHECK(a0, 0x5a5a)
  TEST(5)
  /* S load from a U page faults without SUM, works with it */
  EXPECT(13, s_load, 2f, VA + 0x3000)
  li a1, VA + 0x3000
  ENTER(1, s_load)
2: li t0, MSTATUS_SUM
  csrs mstatus, t0
  EXPECT(9, s_load_end, 2f, 0)
  ENTER(1, s_load)
2: li t0, MSTATUS_SUM
  csrc mstatus, t0
  CHECK(a0, 0x7777)
  TEST(6)
  /* U (running from its own page) may not load a supervisor page */
  li s3, 13
  li s1, VA + 0x6000
  la s2, 2f
  li s4, VA
  li a1, VA
  li t0, MSTATUS_MPP
  csrc mstatus, t0
  li t0, VA + 0x6000
  csrw mepc, t0
  mret
2: TEST(7)
  /* invalid PTE: load and store faults */
  EXPECT(13, s_load, 2f, VA + 0x4000)
  li a1, VA + 0x4000
  ENTER(1, s_load)
2: EXPECT(15, s_store, 2f, VA + 0x4008)
  li a1, VA + 0x4008
  ENTER(1, s_store)
2: TEST(8)
  /* W-only PTE is reserved */
  EXPECT(13, s_load, 2f, VA + 0x5000)
  li a1, VA + 0x5000
  ENTER(1, s_load)
2: TEST(9)
  /* U runs code from a U page (and loads through it) */
  li s3, 8
  li s1, VA + 0x6000 + 8  /* u_ecall: two 4-byte instructions in */
  la s2, 2f
  li s4, 0
  li a1, VA + 0x3000
  li t0, MSTATUS_MPP
  csrc mstatus, t0
  li t0, VA + 0x6000
  csrw mepc, t0
  mret
2: CHECK(a0, 0x7778)
  TEST(10)
  /* S may not execute from a U page (even with SUM) */
  li t0, MSTATUS_SUM
  csrs mstatus, t0
  EXPECT(12, VA + 0x6000, 2f, VA + 0x6000)
  li t0, MSTATUS_MPP
  csrc mstatus, t0
  li t0, MSTATUS_MPP_S
  csrs mstatus, t0
  li t0, VA + 0x6000
  csrw mepc, t0
  mret
2: li t0, MSTATUS_SUM
  csrc mstatus, t0
  TEST(11)
  /* misaligned megapage */
  EXPECT(13, s_load, 2f, VA + 0x200000)
  li a1, VA + 0x200000
  ENTER(1, s_load)
2: TEST(12)
  /* non-canonical address (bit 38 set, upper bits clear) */
  EXPECT(13, s_load, 2f, 0x0000004000000000)
  li a1, 0x0000004000000000
  ENTER(1, s_load)
2: TEST(13)
  /* MPRV: M loads through S translation; with MPP=U a supervisor page faults */
  li t0, MSTATUS_MPP
  csrc mstatus, t0
  li t0, MSTATUS_MPP_S | MSTATUS_MPRV
  csrs mstatus, t0
  li a1, VA
  ld a0, 0(a1)
  li t0, MSTATUS_MPRV
  csrc mstatus, t0
  CHECK(a0, 0x1111)
  li t0, MSTATUS_MPP
  csrc mstatus, t0
  li t0, MSTATUS_MPRV
  csrs mstatus, t0
  EXPECT(13, 1f, 2f, VA)
1: ld a0, 0(a1)
  j fail
2: li t0, MSTATUS_MPRV
  csrc mstatus, t0
  TEST(14)
  /* Sv48: a new top level whose entry 0 is the Sv39 root */
  MAP(pt_root48, 0, pt_root, PTE_V)
  la t0, pt_root48
  srli t0, t0, 12
  li t1, 9 << 60
  or t0, t0, t1
  csrw satp, t0
  sfence.vma
  EXPECT(9, s_load_end, 2f, 0)
  li a1, VA + 8
  ENTER(1, s_load)
2: CHECK(a0, 0x2222)
  EXPECT(13, s_load, 2f, 0x0000800000000000)
  li a1, 0x0000800000000000
  ENTER(1, s_load)
2: /* bit 38 set is canonical under Sv48 but unmapped here */
  EXPECT(13, s_load, 2f, 0x0000004000000000)
  li a1, 0x0000004000000000
  ENTER(1, s_load)
2: csrw satp, zero
  sfence.vma
  PASS

/* S/U helpers: load/store at a1, then ecall */
s_load: ld a0, 0(a1)
s_load_end: ecall
s_store: sd a0, 0(a1)
s_store_end: ecall

check_trap:
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

  .balign 4096
u_code:
  .option push
  .option norvc
  ld a0, 0(a1)
  addi a0, a0, 1
  .option pop
  ecall
  .balign 4096

  .data
  .balign 4096
pt_root: .space 4096
pt_l1: .space 4096
pt_l0: .space 4096
pt_root48: .space 4096
page_rw: .space 4096
page_r: .dword 0x3333
  .balign 4096
page_x: .dword 0x5a5a
  .balign 4096
page_u: .dword 0x7777
  .balign 4096
