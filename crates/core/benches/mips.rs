//! CPU-bound loop programs on one hart; prints MIPS (host instructions per
//! second of guest instructions retired). `cargo bench -p hs-core`.
//!
//! The programs are hand-encoded so the bench needs no cross toolchain.

use std::time::Instant;

use hs_bus::{Access, BusFault, GuestRam, SystemBus, WriteEffect};
use hs_core::{Exit, Hart, HartConfig};

struct NoDevices;
impl SystemBus for NoDevices {
    fn mmio_read(&mut self, _: Access, pa: u64, _: u8) -> Result<u64, BusFault> {
        Err(BusFault::Unmapped(pa))
    }
    fn mmio_write(&mut self, _: Access, pa: u64, _: u8, _: u64) -> Result<WriteEffect, BusFault> {
        Err(BusFault::Unmapped(pa))
    }
}

// minimal RV64 encoders
fn r(f7: u32, rs2: u32, rs1: u32, f3: u32, rd: u32, op: u32) -> u32 {
    (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op
}
fn i(imm: i32, rs1: u32, f3: u32, rd: u32, op: u32) -> u32 {
    (((imm as u32) & 0xfff) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op
}
fn s(imm: i32, rs2: u32, rs1: u32, f3: u32) -> u32 {
    let imm = imm as u32;
    (((imm >> 5) & 0x7f) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | ((imm & 31) << 7) | 0x23
}
fn b(imm: i32, rs2: u32, rs1: u32, f3: u32) -> u32 {
    let imm = imm as u32;
    (((imm >> 12) & 1) << 31)
        | (((imm >> 5) & 0x3f) << 25)
        | (rs2 << 20)
        | (rs1 << 15)
        | (f3 << 12)
        | (((imm >> 1) & 0xf) << 8)
        | (((imm >> 11) & 1) << 7)
        | 0x63
}
fn jal(rd: u32, imm: i32) -> u32 {
    let imm = imm as u32;
    (((imm >> 20) & 1) << 31)
        | (((imm >> 1) & 0x3ff) << 21)
        | (((imm >> 11) & 1) << 20)
        | (((imm >> 12) & 0xff) << 12)
        | (rd << 7)
        | 0x6f
}
fn addi(rd: u32, rs1: u32, imm: i32) -> u32 {
    i(imm, rs1, 0, rd, 0x13)
}
fn lui(rd: u32, imm20: u32) -> u32 {
    (imm20 << 12) | (rd << 7) | 0x37
}
const WFI: u32 = 0x1050_0073;
const A0: u32 = 10;
const A1: u32 = 11;
const A2: u32 = 12;
const A3: u32 = 13;
const A4: u32 = 14;
const T0: u32 = 5;
const T1: u32 = 6;
const RA: u32 = 1;

/// Integer loop: arithmetic, a multiply, a data-dependent branch.
fn alu_loop() -> Vec<u32> {
    vec![
        lui(T0, 0x10000), // t0 = 0x10000000 iterations (stopped by budget)
        addi(A0, 0, 1),
        addi(A1, 0, 3),
        // loop:
        r(0, A1, A0, 0, A2, 0x33), // add a2, a0, a1
        r(0, A0, A2, 4, A3, 0x33), // xor a3, a2, a0
        i(3, A3, 1, A3, 0x13),     // slli a3, a3, 3
        r(1, A1, A3, 0, A4, 0x33), // mul a4, a3, a1
        i(7, A4, 7, A1, 0x13),     // andi a1, a4, 7
        b(8, 0, A1, 0),            // beq a1, zero, +8
        addi(A0, A0, 1),           // addi a0, a0, 1
        addi(T0, T0, -1),
        b(-32, 0, T0, 1), // bne t0, zero, loop
        WFI,
    ]
}

/// The integer loop body four times per iteration (fewer block boundaries).
fn alu_loop_unrolled() -> Vec<u32> {
    let body = [
        r(0, A1, A0, 0, A2, 0x33),
        r(0, A0, A2, 4, A3, 0x33),
        i(3, A3, 1, A3, 0x13),
        r(1, A1, A3, 0, A4, 0x33),
        i(7, A4, 7, A1, 0x13),
        addi(A0, A0, 1),
    ];
    let mut v = vec![lui(T0, 0x10000), addi(A0, 0, 1), addi(A1, 0, 3)];
    for _ in 0..4 {
        v.extend_from_slice(&body);
    }
    v.push(addi(T0, T0, -1));
    v.push(b(-(4 * 25), 0, T0, 1));
    v.push(WFI);
    v
}

/// Every instruction a jump to the next: one block per instruction, so
/// this measures the per-block cost.
fn jump_chain() -> Vec<u32> {
    let mut v: Vec<u32> = (0..64).map(|_| jal(0, 4)).collect();
    v.push(jal(0, -(4 * 64)));
    v
}

/// Memory loop: loads and stores over a 64 KiB buffer with a call per iteration.
fn mem_loop(buf: u32) -> Vec<u32> {
    vec![
        lui(T0, 0x10000),
        lui(A0, buf >> 12),     // a0 = buf (lui sign-extends: clear the top)
        i(32, A0, 1, A0, 0x13), // slli a0, a0, 32
        i(32, A0, 5, A0, 0x13), // srli a0, a0, 32
        lui(T1, 0x10),          // t1 = 64 KiB
        addi(A2, 0, 0),         // a2 = offset
        // loop (index 6):
        r(0, A2, A0, 0, A3, 0x33), // add a3, a0, a2
        i(0, A3, 3, A4, 0x03),     // ld a4, 0(a3)
        addi(A4, A4, 1),
        s(0, A4, A3, 3),       // sd a4, 0(a3)
        i(8, A3, 2, A1, 0x03), // lw a1, 8(a3)
        jal(RA, 28),           // call f (index 19)
        s(12, A1, A3, 2),      // sw a1, 12(a3)
        addi(A2, A2, 64),
        r(0, T1, A2, 7, 0, 0x33), // and zero.. (placeholder: keep decode busy)
        b(8, T1, A2, 6),          // bltu a2, t1, +8
        addi(A2, 0, 0),
        addi(T0, T0, -1),
        b(-48, 0, T0, 1), // bne t0, zero, loop
        // f:
        i(1, A1, 0, A1, 0x13), // addi a1, a1, 1
        i(0, RA, 0, 0, 0x67),  // ret
        WFI,
    ]
}

/// CPU time of this thread in seconds (the bench machine may be shared, so
/// wall time alone understates the interpreter's speed).
fn thread_cpu_secs() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    Some(s.split_whitespace().next()?.parse::<f64>().ok()? / 1e9)
}

fn run(name: &str, prog: &[u32], budget: u64) {
    if std::env::var("HS_BENCH_ONLY").is_ok_and(|o| !name.contains(&o)) {
        return;
    }
    let ram = GuestRam::new(0x8000_0000, 16 << 20).unwrap();
    for (k, w) in prog.iter().enumerate() {
        ram.write(0x8000_0000 + 4 * k as u64, 4, *w as u64);
    }
    let mut hart = Hart::new(
        HartConfig {
            hart_id: 0,
            cycles_per_tick: 100,
        },
        ram,
        hs_core::Atomic,
    );
    hart.reset(0x8000_0000);
    let mut bus = NoDevices;
    // warm up (decode, TLB)
    hart.run(&mut bus, 100_000);
    let start_instret = hart.instret();
    let t = Instant::now();
    let cpu0 = thread_cpu_secs();
    let mut exit = Exit::Budget;
    while hart.cycle() < budget {
        exit = hart.run(&mut bus, budget);
        if exit != Exit::Budget {
            break;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let cpu = cpu0.zip(thread_cpu_secs()).map(|(a, b)| b - a);
    let n = hart.instret() - start_instret;
    let cpu_text = cpu.map_or(String::new(), |c| {
        format!(", {:.1} MIPS per CPU-second", n as f64 / c / 1e6)
    });
    println!(
        "{name:>10}: {n:>11} instructions in {secs:.2} s wall = {:.1} MIPS{cpu_text} ({exit:?})",
        n as f64 / secs / 1e6
    );
}

fn main() {
    let budget = std::env::var("HS_BENCH_INSNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300_000_000u64);
    run("alu-loop", &alu_loop(), budget);
    run("alu-unroll", &alu_loop_unrolled(), budget);
    run("mem-loop", &mem_loop(0x8010_0000), budget);
    run("jump-chain", &jump_chain(), budget);
}
