//! Bare-metal programs end to end: `-bios none -kernel prog.elf`, HTIF
//! exit and console, UART, CLINT timer with idle skip, IPIs, PLIC routing
//! of a UART interrupt, syscon power-off, markers, determinism.

use crate::common;

use hs_machine::{BootFile, BootImages, Machine, MachineConfig, StopReason};
use hs_test_support::asm::*;

const BASE: u64 = 0x8000_0000;

fn machine(harts: usize, elf_bytes: Vec<u8>) -> Machine {
    common::bare_metal(harts, elf_bytes, 2_000_000_000)
}

/// Data section shared by all programs: HTIF mailbox.
fn htif_tail(a: &mut Asm) -> Vec<(&'static str, u64)> {
    a.align(8)
        .label("tohost")
        .data(&[0; 8])
        .label("fromhost")
        .data(&[0; 8]);
    vec![
        ("tohost", a.addr("tohost")),
        ("fromhost", a.addr("fromhost")),
    ]
}

/// Exit through HTIF with the code in register `reg`.
fn htif_exit_reg(a: &mut Asm, reg: u32) {
    a.slli(T2, reg, 1)
        .addi(T2, T2, 1)
        .la(T3, "tohost")
        .sd(T2, T3, 0)
        .label("hang")
        .j("hang");
}

fn build(a: &mut Asm) -> Vec<u8> {
    let syms = htif_tail(a);
    let image = a.finish();
    elf(BASE, &image, &syms)
}

#[test]
fn htif_console_uart_and_exit_code() {
    let mut a = Asm::new(BASE);
    a.csrr(A0, CSR_MHARTID).bne(A0, ZERO, "park");
    a.li(T0, 0x1000_0000)
        .li(T1, b'U' as u64)
        .sb(T1, T0, 0)
        .li(T1, b'\n' as u64)
        .sb(T1, T0, 0);
    a.la(T0, "msg");
    a.label("loop").lbu(T1, T0, 0).beq(T1, ZERO, "done");
    a.li(T2, 0x0101_0000_0000_0000)
        .or(T2, T2, T1)
        .la(T3, "tohost")
        .sd(T2, T3, 0);
    a.label("wait").ld(T2, T3, 0).bne(T2, ZERO, "wait");
    a.addi(T0, T0, 1).j("loop");
    a.label("done").li(A0, 42);
    htif_exit_reg(&mut a, A0);
    a.label("park").wfi().j("park");
    a.label("msg").data(b"hi from htif\n\0");
    let mut m = machine(2, build(&mut a));
    assert_eq!(m.plan().entry, BASE);
    assert_eq!(m.run(), StopReason::HtifExit(42));
    assert_eq!(
        String::from_utf8_lossy(m.console_output()),
        "U\nhi from htif\n"
    );
}

#[test]
fn timer_interrupt_after_idle_skip() {
    let mut a = Asm::new(BASE);
    a.la(T0, "handler").csrw(CSR_MTVEC, T0);
    common::timer_then_idle(&mut a, 1_000_000);
    a.align(4)
        .label("handler")
        .csrr(A0, CSR_MCAUSE)
        .li(T1, 0x8000_0000_0000_0007)
        .bne(A0, T1, "bad");
    a.li(A0, 7);
    htif_exit_reg(&mut a, A0);
    a.label("bad")
        .li(A0, 1)
        .slli(T2, A0, 1)
        .addi(T2, T2, 1)
        .la(T3, "tohost")
        .sd(T2, T3, 0)
        .label("h2")
        .j("h2");
    let mut m = machine(1, build(&mut a));
    assert_eq!(m.run(), StopReason::HtifExit(7));
    let s = m.summary();
    // 1,000,000 ticks of 10 MHz = 0.1 s = 100,000,000 cycles at 1 GHz.
    assert!(
        s.cycles >= 100_000_000 && s.cycles < 100_100_000,
        "cycles {}",
        s.cycles
    );
    // Idle time retires nothing; the exit spin until the next HTIF poll
    // (at most one 10,000-cycle quantum) is all that runs.
    assert!(
        s.instret < 10_000 + 200,
        "idle time must not retire instructions: {}",
        s.instret
    );
}

#[test]
fn ipi_wakes_the_other_hart_and_runs_repeat_exactly() {
    let mut a = Asm::new(BASE);
    a.la(T0, "handler").csrw(CSR_MTVEC, T0);
    a.csrr(A0, CSR_MHARTID).bne(A0, ZERO, "waiter");
    // hart 0: spin a while, then IPI hart 1 and park with interrupts off
    a.li(T0, 50_000)
        .label("spin")
        .addi(T0, T0, -1)
        .bne(T0, ZERO, "spin");
    a.li(T0, 0x0200_0004).li(T1, 1).sw(T1, T0, 0);
    a.label("park").wfi().j("park");
    a.label("waiter")
        .li(T0, 0x8)
        .csrs(CSR_MIE, T0)
        .csrs(CSR_MSTATUS, T0);
    a.label("idle").wfi().j("idle");
    a.align(4)
        .label("handler")
        .csrr(A0, CSR_MCAUSE)
        .li(T1, 0x8000_0000_0000_0003)
        .bne(A0, T1, "bad");
    a.csrr(A0, CSR_MHARTID);
    htif_exit_reg(&mut a, A0);
    a.label("bad")
        .li(A0, 99)
        .slli(T2, A0, 1)
        .addi(T2, T2, 1)
        .la(T3, "tohost")
        .sd(T2, T3, 0)
        .label("h2")
        .j("h2");
    let elf_bytes = build(&mut a);
    let mut m1 = machine(2, elf_bytes.clone());
    assert_eq!(
        m1.run(),
        StopReason::HtifExit(1),
        "hart 1 took the software interrupt"
    );
    let mut m2 = machine(2, elf_bytes);
    m2.run();
    let (s1, s2) = (m1.summary(), m2.summary());
    assert_eq!((s1.cycles, s1.instret), (s2.cycles, s2.instret));
    for (a, b) in s1.harts.iter().zip(&s2.harts) {
        assert_eq!((a.cycles, a.instret), (b.cycles, b.instret));
    }
    assert_eq!(s1.devices, s2.devices);
}

#[test]
fn uart_receive_interrupt_through_the_plic() {
    let mut a = Asm::new(BASE);
    a.la(T0, "handler").csrw(CSR_MTVEC, T0);
    a.li(T0, 0x0c00_0000 + 4 * 10).li(T1, 1).sw(T1, T0, 0); // priority 1
    a.li(T0, 0x0c00_2000).li(T1, 1 << 10).sw(T1, T0, 0); // enable for hart 0 M-mode
    a.li(T0, 0x1000_0001).li(T1, 1).sb(T1, T0, 0); // IER: receive data
    a.li(T0, 0x800)
        .csrs(CSR_MIE, T0)
        .li(T0, 0x8)
        .csrs(CSR_MSTATUS, T0);
    a.label("idle").wfi().j("idle");
    a.align(4).label("handler");
    a.li(T0, 0x0c20_0004)
        .lw(T1, T0, 0)
        .li(T2, 10)
        .bne(T1, T2, "bad"); // claim
    a.li(A2, 0x1000_0000)
        .lbu(A0, A2, 0)
        .addi(A1, A0, 1)
        .sb(A1, A2, 0); // echo byte + 1
    a.sw(T1, T0, 0); // complete
    htif_exit_reg(&mut a, A0);
    a.label("bad")
        .li(A0, 99)
        .slli(T2, A0, 1)
        .addi(T2, T2, 1)
        .la(T3, "tohost")
        .sd(T2, T3, 0)
        .label("h2")
        .j("h2");
    let mut m = machine(1, build(&mut a));
    m.push_console_input(b"A");
    assert_eq!(m.run(), StopReason::HtifExit(b'A' as u64));
    assert_eq!(m.console_output(), b"B");
    assert!(m
        .device_stats()
        .iter()
        .any(|s| s.name == "plic.hart0.m.claims" && s.value == 1));
}

#[test]
fn markers_and_syscon_poweroff() {
    let mut a = Asm::new(BASE);
    a.la(A0, "label").li(A1, 5).marker(0x480); // PHASE "start"
    a.la(A0, "data")
        .li(A1, 3)
        .la(A2, "chan")
        .li(A3, 4)
        .marker(0x482); // SEND "abc" to "logs"
    a.li(A0, 3).marker(0x481); // EXIT 3
    a.marker(0x48f); // reserved: counted, ignored
    a.li(T0, 0x0010_0000).li(T1, 0x5555).sw(T1, T0, 0);
    a.label("hang").j("hang");
    a.label("label")
        .data(b"start")
        .label("data")
        .data(b"abc")
        .label("chan")
        .data(b"logs");
    let image = a.finish();
    let mut m = machine(1, elf(BASE, &image, &[]));
    assert_eq!(m.run(), StopReason::PowerOff);
    let mk = m.markers();
    assert_eq!(mk.phases.len(), 1);
    assert_eq!(mk.phases[0].label, "start");
    assert!(mk.phases[0].instret[0] > 0);
    assert_eq!(mk.exit_status, Some(3));
    assert_eq!(mk.channels["logs"].data, b"abc");
    assert_eq!(mk.unknown, 1);
}

#[test]
fn all_idle_with_nothing_pending_stops_cleanly() {
    let mut a = Asm::new(BASE);
    a.label("idle").wfi().j("idle");
    let mut m = machine(2, build(&mut a));
    assert_eq!(m.run(), StopReason::AllIdle);
}

#[test]
fn cycle_limit_stops_a_spinning_program() {
    let mut a = Asm::new(BASE);
    a.label("spin").j("spin");
    let elf_bytes = build(&mut a);
    let cfg = MachineConfig {
        ram_bytes: 16 << 20,
        images: BootImages {
            firmware: None,
            kernel: Some(BootFile::from_bytes("spin.elf", elf_bytes)),
            initrd: None,
        },
        max_cycles: Some(1_000_000),
        ..MachineConfig::default()
    };
    let mut m = Machine::new(cfg).unwrap();
    assert_eq!(m.run(), StopReason::CycleLimit);
    let c = m.summary().cycles;
    assert!((1_000_000..1_000_010).contains(&c), "{c}");
}

#[test]
fn a_timer_set_centuries_ahead_cannot_overflow_time() {
    let mut a = Asm::new(BASE);
    a.li(T1, u64::MAX - 1).li(T0, 0x0200_4000).sd(T1, T0, 0);
    a.li(T0, 0x80).csrs(CSR_MIE, T0);
    a.label("idle").wfi().j("idle");
    let mut m = machine(1, build(&mut a));
    m.run();
    assert_eq!(m.stop_reason(), Some(StopReason::AllIdle));
}

#[test]
fn rtc_alarm_a_few_cycles_ahead_fires_on_time() {
    // Alarm 2 µs ahead (well inside one 10,000-cycle slice); the handler
    // powers off at once, so the stop cycle shows when the interrupt came.
    let mut a = Asm::new(BASE);
    a.la(T0, "handler").csrw(CSR_MTVEC, T0);
    a.li(T0, 0x0c00_0000 + 4 * 11).li(T1, 1).sw(T1, T0, 0); // RTC source priority
    a.li(T0, 0x0c00_2000).li(T1, 1 << 11).sw(T1, T0, 0); // enable for hart 0 M-mode
    a.li(T0, 0x0010_1000).li(T1, 1).sw(T1, T0, 0x10); // IRQ_ENABLED
    a.lw(T1, T0, 0x00).lw(T2, T0, 0x04); // TIME_LOW, TIME_HIGH (latched)
    a.slli(T2, T2, 32).slli(T1, T1, 32).word(0x0203_5313); // srli t1, t1, 32 (zero-extend low half)
    a.or(T1, T1, T2).li(T2, 2000).add(T1, T1, T2);
    a.word(0x0203_5393); // srli t2, t1, 32
    a.sw(T2, T0, 0x0c).sw(T1, T0, 0x08); // ALARM_HIGH, then ALARM_LOW arms
    a.li(T0, 0x800)
        .csrs(CSR_MIE, T0)
        .li(T0, 0x8)
        .csrs(CSR_MSTATUS, T0);
    a.label("idle").wfi().j("idle");
    a.align(4)
        .label("handler")
        .li(T0, 0x0010_0000)
        .li(T1, 0x5555)
        .sw(T1, T0, 0);
    a.label("hang").j("hang");
    let image = a.finish();
    let mut m = machine(1, elf(BASE, &image, &[]));
    assert_eq!(m.run(), StopReason::PowerOff);
    let c = m.summary().cycles;
    assert!(
        (2_000..2_200).contains(&c),
        "alarm at ~2,000 cycles (+ setup), powered off at {c}"
    );
}

/// Hart 0 spins, then raises hart 1's msip and parks; hart 1 arms its CLINT
/// timer 2,000,000 cycles ahead (MTIE off: the timer only becomes pending),
/// enables MSIE and sleeps. The software interrupt's handler exits with the
/// hart id. Returns the machine after the run.
fn ipi_under(policy: hs_machine::hs_devices::IpiPolicy) -> Machine {
    let mut a = Asm::new(BASE);
    a.la(T0, "handler").csrw(CSR_MTVEC, T0);
    a.csrr(A0, CSR_MHARTID).bne(A0, ZERO, "waiter");
    a.li(T0, 50_000)
        .label("spin")
        .addi(T0, T0, -1)
        .bne(T0, ZERO, "spin");
    a.li(T0, 0x0200_0004).li(T1, 1).sw(T1, T0, 0);
    a.label("park").wfi().j("park");
    // hart 1: mtimecmp[1] = mtime + 20,000 ticks (2,000,000 cycles)
    a.label("waiter")
        .li(T0, 0x0200_bff8)
        .ld(T1, T0, 0)
        .li(T2, 20_000)
        .add(T1, T1, T2);
    a.li(T0, 0x0200_4008).sd(T1, T0, 0);
    a.li(T0, 0x8).csrs(CSR_MIE, T0).csrs(CSR_MSTATUS, T0);
    a.label("idle").wfi().j("idle");
    a.align(4)
        .label("handler")
        .csrr(A0, CSR_MCAUSE)
        .li(T1, 0x8000_0000_0000_0003)
        .bne(A0, T1, "bad");
    a.csrr(A0, CSR_MHARTID);
    htif_exit_reg(&mut a, A0);
    a.label("bad")
        .li(A0, 99)
        .slli(T2, A0, 1)
        .addi(T2, T2, 1)
        .la(T3, "tohost")
        .sd(T2, T3, 0)
        .label("h2")
        .j("h2");
    let cfg = MachineConfig {
        harts: 2,
        ram_bytes: 64 << 20,
        images: BootImages {
            firmware: None,
            kernel: Some(BootFile::from_bytes("prog.elf", build(&mut a))),
            initrd: None,
        },
        max_cycles: Some(2_000_000_000),
        ipi: policy,
        ..MachineConfig::default()
    };
    let mut m = Machine::new(cfg).unwrap();
    assert_eq!(
        m.run(),
        StopReason::HtifExit(1),
        "hart 1 took the software interrupt under {policy:?}"
    );
    m
}

#[test]
fn the_ipi_knob_delivers_delays_or_holds_until_the_targets_tick() {
    use hs_machine::hs_devices::IpiPolicy;
    let dev = |m: &Machine, k: &str| m.summary().devices[k];
    // Delivered: hart 1 wakes within a quantum of the write (~100,000 cycles of spinning).
    let d = ipi_under(IpiPolicy::Deliver);
    let delivered = d.summary().cycles;
    assert!(delivered < 200_000, "delivered at {delivered}");
    assert_eq!(
        (
            dev(&d, "clint.ipis_cross"),
            dev(&d, "clint.ipis_held_for_tick"),
            dev(&d, "clint.ipis_delayed")
        ),
        (1, 0, 0)
    );
    // Delayed by 300,000 cycles: the slice ends at the deadline, so it is on time.
    let l = ipi_under(IpiPolicy::Delay(300_000));
    let delayed = l.summary().cycles;
    assert!(
        delayed >= delivered + 300_000 - 10_000 && delayed < delivered + 300_000 + 20_000,
        "delivered {delivered}, delayed {delayed}"
    );
    assert_eq!(
        (
            dev(&l, "clint.ipis_delayed"),
            dev(&l, "clint.ipi_held_max_cycles")
        ),
        (1, 300_000)
    );
    // Held until hart 1's timer is pending at 2,000,000 cycles, not before.
    let t = ipi_under(IpiPolicy::DropUntilTick);
    let ticked = t.summary().cycles;
    assert!(
        (2_000_000..2_030_000).contains(&ticked),
        "held until the tick: {ticked}"
    );
    assert_eq!(
        (
            dev(&t, "clint.ipis_held_for_tick"),
            dev(&t, "clint.ipis_released_at_tick")
        ),
        (1, 1)
    );
    assert!(dev(&t, "clint.ipi_held_max_cycles") > 1_800_000);
    // The same run twice: the same counts, to the cycle.
    let again = ipi_under(IpiPolicy::DropUntilTick).summary();
    let once = t.summary();
    assert_eq!(
        (once.cycles, once.instret, &once.devices),
        (again.cycles, again.instret, &again.devices)
    );
    for (a, b) in once.harts.iter().zip(&again.harts) {
        assert_eq!((a.cycles, a.instret), (b.cycles, b.instret));
    }
}

/// Sampling only looks: a sampled run of a program that exits through
/// HTIF stops at the cycle an unsampled run stops at (the machine reads
/// `tohost` where a run ends, and a sample must not end one).
#[test]
fn sampling_does_not_move_an_htif_exit() {
    let mut a = Asm::new(BASE);
    a.csrr(A0, CSR_MHARTID).bne(A0, ZERO, "park");
    a.li(T0, 200_000)
        .label("count")
        .addi(T0, T0, -1)
        .bne(T0, ZERO, "count");
    a.li(A0, 7);
    htif_exit_reg(&mut a, A0);
    a.label("park").wfi().j("park");
    let elf = build(&mut a);
    let run = |period: Option<u64>| {
        let mut m = machine(2, elf.clone());
        if let Some(period) = period {
            let cfg = hs_machine::SamplerConfig {
                period,
                ..Default::default()
            };
            m.enable_sampling(cfg, Default::default());
        }
        assert_eq!(m.run(), StopReason::HtifExit(7));
        let s = m.summary();
        (s.cycles, s.instret, m.sampler().map_or(0, |s| s.kept()))
    };
    let plain = run(None);
    let sampled = run(Some(97));
    assert_eq!((plain.0, plain.1), (sampled.0, sampled.1));
    // hart 0 counted down for about 400,000 cycles: about 4,000 samples
    assert!(sampled.2 > 4_000, "{} samples", sampled.2);
}
