//! The differential check of the execution engines (`hs_machine::lockstep`):
//! two machines alike, block engine against reference engine, agree on a
//! program that prints, loops, traps and takes a timer interrupt on two
//! harts; and a difference put into one of them is found and named by its
//! pc and instruction.

use crate::common;

use hs_machine::{lockstep, Machine, StopReason};
use hs_test_support::asm::*;

const BASE: u64 = 0x8000_0000;

fn machine(elf_bytes: Vec<u8>) -> Machine {
    common::bare_metal(2, elf_bytes, 200_000_000)
}

/// Hart 0 prints on the UART, sums in a loop (the loop's `addi` is at the
/// returned address), takes an illegal-instruction trap and a timer
/// interrupt, and exits through HTIF with code 7; hart 1 counts in a loop
/// until it sees hart 0's flag.
fn program() -> (Vec<u8>, u64) {
    let mut a = Asm::new(BASE);
    a.la(T0, "handler").csrw(CSR_MTVEC, T0);
    a.csrr(A0, CSR_MHARTID).bne(A0, ZERO, "other");
    a.li(T0, 0x1000_0000).li(T1, b'L' as u64).sb(T1, T0, 0);
    a.li(T0, 0).li(T1, 0).li(T2, 100_000);
    a.label("loop");
    let step = a.pc();
    a.addi(T0, T0, 3).add(T1, T1, T0).bne(T0, T2, "loop_check");
    a.label("loop_check").bltu(T0, T2, "loop");
    a.word(0); // illegal: the handler skips it
               // a timer interrupt 5000 cycles from now, then wait for it
    common::timer_then_idle(&mut a, 500);
    a.label("other").li(T0, 0);
    a.label("spin")
        .addi(T0, T0, 1)
        .la(T1, "flag")
        .ld(T1, T1, 0)
        .beq(T1, ZERO, "spin");
    a.label("park").wfi().j("park");
    a.align(4).label("handler").csrr(T3, CSR_MCAUSE);
    a.li(T2, 0x8000_0000_0000_0007).beq(T3, T2, "timer");
    // an exception: step over the 4-byte instruction
    a.csrr(T2, 0x341).addi(T2, T2, 4).csrw(0x341, T2).mret();
    a.label("timer").la(T1, "flag").li(T2, 1).sd(T2, T1, 0);
    a.li(A0, 7)
        .slli(T2, A0, 1)
        .addi(T2, T2, 1)
        .la(T3, "tohost")
        .sd(T2, T3, 0);
    a.label("hang").j("hang");
    a.align(8).label("flag").data(&[0; 8]);
    a.label("tohost")
        .data(&[0; 8])
        .label("fromhost")
        .data(&[0; 8]);
    let syms = [
        ("tohost", a.addr("tohost")),
        ("fromhost", a.addr("fromhost")),
    ];
    let image = a.finish();
    (elf(BASE, &image, &syms), step)
}

#[test]
fn the_engines_agree_on_a_program() {
    let (elf, _) = program();
    let (mut blocks, mut reference) = (machine(elf.clone()), machine(elf));
    let stop = lockstep(&mut blocks, &mut reference).map_err(|d| d.to_string());
    assert_eq!(stop, Ok(StopReason::HtifExit(7)));
    assert_eq!(blocks.console_output(), b"L");
    // it ran: both harts retired many instructions
    for h in blocks.harts() {
        assert!(h.instret() > 10_000, "hart retired {}", h.instret());
    }
}

#[test]
fn a_divergence_is_found_and_named_by_its_pc() {
    let (elf, step) = program();
    let (mut blocks, mut reference) = (machine(elf.clone()), machine(elf));
    // the reference machine's loop adds 5 instead of 3 (addi t0, t0, 5)
    let word = (5 << 20) | (T0 << 15) | (T0 << 7) | 0x13;
    assert!(reference.ram().write(step, 4, word as u64));
    let d = lockstep(&mut blocks, &mut reference).expect_err("a divergence");
    eprintln!("{d}");
    assert_eq!(d.hart, Some(0));
    let (a, b) = (d.blocks.expect("a step"), d.reference.expect("a step"));
    assert_eq!((a.pc, b.pc), (step, step), "{d}");
    assert_eq!((a.value, b.value), (3, 5), "{d}");
    let report = d.to_string();
    assert!(report.contains(&format!("pc {step:#x}")), "{report}");
    assert!(report.contains("addi"), "{report}");
}
