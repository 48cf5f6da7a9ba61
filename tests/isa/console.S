/* HTIF console signature: both emulators must print exactly these bytes. */
#include "hs_test.h"
  START
main:
  la s0, msg
1: lbu a0, 0(s0)
  beqz a0, 2f
  PUTC(a0)
  addi s0, s0, 1
  j 1b
2: /* fib(40) by iteration, printed in decimal */
  li a0, 0
  li a1, 1
  li a2, 40
3: add a3, a0, a1
  mv a0, a1
  mv a1, a3
  addi a2, a2, -1
  bnez a2, 3b
  la s0, digits + 20
  sb zero, 0(s0)
  li t2, 10
4: remu t3, a0, t2
  divu a0, a0, t2
  addi t3, t3, '0'
  addi s0, s0, -1
  sb t3, 0(s0)
  bnez a0, 4b
5: lbu a0, 0(s0)
  beqz a0, 6f
  PUTC(a0)
  addi s0, s0, 1
  j 5b
6: li a0, '\n'
  PUTC(a0)
  PASS
  .data
msg: .string "hartscope isa console: fib(40) = "
digits: .space 24
