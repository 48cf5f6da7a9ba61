//! The translating engine against the reference engine (every instruction
//! decoded afresh), step by step (`hs_machine::lockstep`), on what a
//! translation could get wrong: code rewritten under a translated block,
//! a timer interrupt landing inside a hot translated loop, chained blocks,
//! a block that loops on itself, calls returning through `jalr`, data
//! through more pages than the model's D-TLB holds with paging on, and a
//! store to a read-only page the load side maps. Every block is translated
//! on its first run. Each program runs on the atomic model (translated code
//! skips the timing hooks) and on the in-order one (translated code calls
//! them, taking the model's shortcuts inline or in the region's shared
//! routines; once more with I-cache hits that cost cycles): every step's
//! cycle count must be the reference's.

use crate::common;

use hs_machine::{lockstep, Machine, StopReason};
use hs_test_support::asm::*;
use hs_timing::{InOrder, InOrderConfig, InOrderFactory, MachineDesc, ModelDesc, TimingModel};

const BASE: u64 = 0x8000_0000;
const FENCE_I: u32 = 0x0000_100f;

fn translating<T: TimingModel>(mut m: Machine<T>) -> Machine<T> {
    for h in m.harts_mut() {
        h.set_translate_after(1);
    }
    m
}

/// The bare-metal machine on the in-order model of `machines/inorder.toml`.
fn inorder(elf: &[u8]) -> Machine<InOrder> {
    inorder_with(elf, |_| {})
}

/// The same with `change` made to the model's description.
fn inorder_with(elf: &[u8], change: impl Fn(&mut InOrderConfig)) -> Machine<InOrder> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../machines/inorder.toml");
    let ModelDesc::InOrder(mut cfg) = MachineDesc::load(&p).unwrap().model else {
        panic!("machines/inorder.toml is not the in-order model");
    };
    change(&mut cfg);
    let f = InOrderFactory::new(&cfg);
    let cfg = common::bare_metal_config(1, elf.to_vec(), 50_000_000);
    Machine::with_timing(cfg, |_| f.build()).unwrap()
}

/// The encoding of `addi t1, t1, imm` (what the code-rewriting programs store).
fn addi_t1(imm: u32) -> u32 {
    (imm << 20) | (T1 << 15) | (T1 << 7) | 0x13
}

/// Exit through HTIF with the code in `reg`.
fn exit_with(a: &mut Asm, reg: u32) {
    a.slli(T2, reg, 1)
        .addi(T2, T2, 1)
        .la(T3, "tohost")
        .sd(T2, T3, 0);
    a.label("hang").j("hang");
}

fn finish(mut a: Asm) -> Vec<u8> {
    a.align(8).label("tohost").data(&[0; 8]);
    a.label("fromhost").data(&[0; 8]);
    let syms = [
        ("tohost", a.addr("tohost")),
        ("fromhost", a.addr("fromhost")),
    ];
    let image = a.finish();
    elf(BASE, &image, &syms)
}

/// Run `elf` translated and on the reference in lockstep, on the atomic
/// and on the in-order model: the stop (the same on both) and the atomic
/// machine after it.
fn check(elf: &[u8]) -> (StopReason, Machine) {
    let (stop, atomic) = check_on(
        translating(common::bare_metal(1, elf.to_vec(), 50_000_000)),
        common::bare_metal(1, elf.to_vec(), 50_000_000),
    );
    let (timed_stop, timed) = check_on(translating(inorder(elf)), inorder(elf));
    assert_eq!(stop, timed_stop, "the in-order run stopped otherwise");
    // and with I-cache hits that cost cycles (none in inorder.toml),
    // which translated code adds in its shared new-line routine
    let slow_hits = |c: &mut InOrderConfig| c.l1i.latency = 2;
    let (slow_stop, _) = check_on(
        translating(inorder_with(elf, slow_hits)),
        inorder_with(elf, slow_hits),
    );
    assert_eq!(
        stop, slow_stop,
        "the run with slower I-cache hits stopped otherwise"
    );
    // (its cycles differ, so a timer lands after fewer instructions)
    assert!(timed.harts()[0].cycle() > timed.harts()[0].instret());
    (stop, atomic)
}

fn check_on<T: TimingModel, U: TimingModel>(
    mut translated: Machine<T>,
    mut reference: Machine<U>,
) -> (StopReason, Machine<T>) {
    let stop = lockstep(&mut translated, &mut reference).unwrap_or_else(|d| panic!("{d}"));
    // (the steps compare cycles; counts that cost no cycle, such as an
    // L1 write-back, are compared here)
    assert_eq!(
        translated.harts()[0].timing.model_stats(),
        reference.harts()[0].timing.model_stats(),
        "the model's counts differ at the end"
    );
    let h = &translated.harts()[0];
    assert!(
        h.translation_stats().blocks >= 3,
        "translated {} blocks",
        h.translation_stats().blocks
    );
    (stop, translated)
}

/// A program whose timer interrupt, `ticks` after it is armed, lands in
/// the endless loop `body` writes (T0, T1 zero and A1 huge at its start;
/// the handler exits with 1): checked against the reference, which must
/// agree on where it lands; the machine after it.
fn interrupted_loop(ticks: u64, body: impl FnOnce(&mut Asm)) -> Machine {
    let mut a = Asm::new(BASE);
    a.la(T0, "handler").csrw(CSR_MTVEC, T0);
    common::arm_timer(&mut a, ticks);
    a.li(T0, 0).li(T1, 0).li(A1, 1 << 40);
    body(&mut a);
    a.align(4).label("handler").li(A0, 1);
    exit_with(&mut a, A0);
    let (stop, m) = check(&finish(a));
    assert_eq!(stop, StopReason::HtifExit(1));
    m
}

/// A loop runs a block it stores into every time round (then `fence.i`),
/// the same instruction 50 times, then another: the translated loop runs
/// the old instruction 50 times and the new one 50. (Every round stores,
/// so the store's own translation meets the code page through its inline
/// fast path, not only on its first, TLB-filling run.)
#[test]
fn rewritten_code_is_retranslated() {
    let mut a = Asm::new(BASE);
    a.li(T0, 0).li(T1, 0).li(A1, 100).li(A2, 50);
    a.label("loop").addi(T0, T0, 1).j("patched");
    a.label("patched").addi(T1, T1, 3).j("cont");
    a.label("cont")
        .la(A3, "patched")
        .li(SP, addi_t1(3) as u64)
        .bltu(T0, A2, "store");
    a.li(SP, addi_t1(5) as u64);
    a.label("store").sw(SP, A3, 0);
    a.word(FENCE_I);
    a.bltu(T0, A1, "loop");
    exit_with(&mut a, T1);
    let (stop, m) = check(&finish(a));
    assert_eq!(stop, StopReason::HtifExit(50 * 3 + 50 * 5));
    assert!(m.harts()[0].stats().code_invalidations >= 1);
}

/// A block stores, then jumps to the next block: 99 rounds into a data
/// page, while the jump is chained into the next block's translation,
/// and in round 50 (no `fence.i`) a new instruction into that block's
/// code. That store sets the hart's `checks`, so the jump must not chain
/// there (its link and the first-level entry still hold): the run loop
/// drops the page's blocks first and the jump runs what was stored, as on
/// the reference. (The store's address is read from a table by round.)
#[test]
fn a_jump_after_a_store_into_its_target_runs_the_new_code() {
    let mut a = Asm::new(BASE);
    a.li(T0, 0).li(T1, 0).li(A1, 100);
    a.li(SP, addi_t1(5) as u64).la(A2, "table");
    a.label("loop")
        .addi(T0, T0, 1)
        .slli(A3, T0, 3)
        .add(A3, A3, A2)
        .ld(A3, A3, 0)
        .sw(SP, A3, 0)
        .j("patched");
    a.label("patched").addi(T1, T1, 3).bltu(T0, A1, "loop");
    exit_with(&mut a, T1);
    a.align(4096).label("data").data(&[0; 8]);
    let (data, patched) = (a.addr("data"), a.addr("patched"));
    let table: Vec<u8> = (0..=100u64)
        .flat_map(|round| if round == 50 { patched } else { data }.to_le_bytes())
        .collect();
    a.align(8).label("table").data(&table);
    let (stop, m) = check(&finish(a));
    assert_eq!(stop, StopReason::HtifExit(49 * 3 + 51 * 5));
    assert_eq!(m.harts()[0].stats().code_invalidations, 1);
}

/// A timer interrupt lands inside a hot loop of translated, chained
/// blocks: on the same instruction, at the same cycle, as the reference.
#[test]
fn an_interrupt_lands_where_the_reference_takes_it() {
    let m = interrupted_loop(2_000, |a| {
        // two blocks chained into each other, with a load and a store
        a.label("loop")
            .addi(T0, T0, 1)
            .add(T1, T1, T0)
            .la(A3, "cell")
            .sd(T1, A3, 0)
            .j("second");
        a.label("second")
            .ld(SP, A3, 0)
            .add(T1, T1, SP)
            .bltu(T0, A1, "loop");
        a.align(8).label("cell").data(&[0; 8]);
    });
    assert!(m.harts()[0].instret() > 10_000, "the loop ran");
}

/// A one-block loop (its taken branch goes back to its own first op, so
/// translated code goes round without leaving) stores a new first
/// instruction every time round: from round 64 on, `addi t1, t1, 1`. The
/// store ends the loop's run at the branch (the page holds code), so each
/// next round runs what was stored, as on the reference: 64 rounds add 1.
#[test]
fn a_loop_on_itself_sees_its_own_code_change() {
    let mut a = Asm::new(BASE);
    a.li(T0, 0).li(T1, 0).li(A1, 128).li(A2, addi_t1(0) as u64);
    a.la(A3, "loop");
    a.label("loop")
        .addi(T1, T1, 0)
        .addi(T0, T0, 1)
        .srli(SP, T0, 6)
        .slli(SP, SP, 20)
        .add(SP, SP, A2)
        .sw(SP, A3, 0)
        .bltu(T0, A1, "loop");
    exit_with(&mut a, T1);
    let (stop, m) = check(&finish(a));
    assert_eq!(stop, StopReason::HtifExit(64));
    assert!(m.harts()[0].stats().code_invalidations >= 64);
}

/// A timer interrupt lands in a hot one-block loop that calls a function
/// (`jal ra`, returning with `jalr zero, 0(ra)`: translated code chains
/// through the return itself), on the same instruction as the reference.
#[test]
fn an_interrupt_lands_in_a_loop_of_calls_and_returns() {
    let m = interrupted_loop(3_000, |a| {
        a.label("loop").jal(RA, "f");
        a.label("back").bltu(T0, A1, "loop");
        a.label("f")
            .addi(T0, T0, 1)
            .add(T1, T1, T0)
            .jalr(ZERO, RA, 0);
    });
    assert!(m.harts()[0].instret() > 3_000, "the loop ran");
}

/// A timer interrupt lands in a hot one-block loop (translated code going
/// round it without leaving, each round testing the cycle budget) on the
/// same instruction, at the same cycle, as the reference.
#[test]
fn an_interrupt_lands_in_a_loop_on_itself() {
    let m = interrupted_loop(2_500, |a| {
        a.label("loop")
            .addi(T0, T0, 1)
            .add(T1, T1, T0)
            .bltu(T0, A1, "loop");
    });
    assert!(m.harts()[0].instret() > 2_500, "the loop ran");
}

/// A loop of `rounds` rounds (its first in the block before it), then an
/// HTIF exit with 0, waiting in `wfi` (not a hot loop) until it is seen.
fn counted_loop(rounds: u64) -> Vec<u8> {
    let mut a = Asm::new(BASE);
    a.li(T0, rounds).li(T1, 0);
    a.label("loop").addi(T1, T1, 1).bne(T1, T0, "loop");
    a.li(T2, 1).la(T3, "tohost").sd(T2, T3, 0);
    a.label("idle").wfi().j("idle");
    finish(a)
}

/// By default a block is translated after 256 runs on the atomic model
/// and after 1,024 on the in-order one (its translated code, calling the
/// hooks, saves less per run): a loop of 600 rounds is translated on the
/// first only, one of 3,000 on both, with results the reference's.
#[test]
fn the_in_order_model_translates_a_block_later() {
    let translated = |rounds: u64| {
        let elf = counted_loop(rounds);
        let mut atomic = common::bare_metal(1, elf.clone(), 50_000_000);
        let stop = lockstep(
            &mut atomic,
            &mut common::bare_metal(1, elf.clone(), 50_000_000),
        )
        .unwrap_or_else(|d| panic!("{d}"));
        assert_eq!(stop, StopReason::HtifExit(0));
        let mut timed = inorder(&elf);
        let stop = lockstep(&mut timed, &mut inorder(&elf)).unwrap_or_else(|d| panic!("{d}"));
        assert_eq!(stop, StopReason::HtifExit(0));
        (
            atomic.harts()[0].translation_stats().blocks,
            timed.harts()[0].translation_stats().blocks,
        )
    };
    assert_eq!(translated(600), (1, 0));
    assert_eq!(translated(3000), (1, 1));
}

/// A block is translated on exactly its `translate_after`-th run, however
/// its runs are split between entries of the run loop (a 64-cycle quantum
/// sends it back to the machine every few rounds): a loop block that runs
/// 299 times is not translated at a threshold of 300, one that runs 300
/// times is. (The loop's first round is in the block before it.)
#[test]
fn a_block_is_translated_on_exactly_its_hot_run() {
    let translated = |rounds: u64, quantum: Option<u64>| {
        let mut cfg = common::bare_metal_config(1, counted_loop(rounds), 50_000_000);
        if let Some(q) = quantum {
            cfg.quantum = q;
        }
        let mut m = Machine::new(cfg).unwrap();
        m.harts_mut()[0].set_translate_after(300);
        assert_eq!(m.run(), StopReason::HtifExit(0));
        m.harts()[0].translation_stats().blocks
    };
    for quantum in [None, Some(64)] {
        assert_eq!(translated(300, quantum), 0, "quantum {quantum:?}");
        assert_eq!(translated(301, quantum), 1, "quantum {quantum:?}");
    }
}

/// Hart 0 runs a loop 400 times (translated on its 300th run), then lets
/// hart 1 run the same loop 100 times at a threshold it never reaches by
/// its own runs. `own`: hart 1 decodes on a cache of its own; `write_page`:
/// hart 0 stores into the loop's page before it lets hart 1 go. Hart 1's
/// result is checked against the reference engine's in lockstep; returns
/// each hart's translated blocks, and the instructions hart 1 retired
/// other than through the block interpreter.
fn loop_on_two_harts(own: bool, write_page: bool) -> ([u64; 2], u64) {
    let mut a = Asm::new(BASE);
    a.csrr(A0, CSR_MHARTID).bne(A0, ZERO, "second");
    a.li(T0, 400).jal(RA, "work");
    if write_page {
        a.la(T3, "scratch").sd(T0, T3, 0);
    }
    a.la(T3, "flag").li(T2, 1).sd(T2, T3, 0);
    a.label("park").wfi().j("park");
    a.label("second").la(T3, "flag");
    a.label("wait").ld(T2, T3, 0).beq(T2, ZERO, "wait");
    a.li(T0, 100).jal(RA, "work");
    exit_with(&mut a, T1);
    a.label("work").li(T1, 0);
    a.label("work_loop")
        .addi(T1, T1, 1)
        .bne(T1, T0, "work_loop");
    a.jalr(ZERO, RA, 0);
    // (in the code's page; the flag in another, so that setting it
    // leaves the loop's page unwritten)
    a.align(8).label("scratch").data(&[0; 8]);
    a.align(4096).label("flag").data(&[0; 8]);
    let elf = finish(a);
    let mut m = common::bare_metal(2, elf.clone(), 50_000_000);
    if own {
        m.harts_mut()[1].own_code();
    }
    m.harts_mut()[0].set_translate_after(300);
    m.harts_mut()[1].set_translate_after(65_536);
    let stop = lockstep(&mut m, &mut common::bare_metal(2, elf, 50_000_000))
        .unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(stop, StopReason::HtifExit(100));
    let h1 = &m.harts()[1];
    (
        [0, 1].map(|h| m.harts()[h].translation_stats().blocks),
        h1.instret() - h1.translation_stats().interpreted,
    )
}

/// A block one hart translated is translated on another hart's first run
/// of it (the RAM keeps a hint by physical address), not interpreted
/// through the warm-up again; a store into its page since ends the hint.
/// (Harts with caches of their own: harts sharing one run the block's code
/// without translating it again, below.)
#[test]
fn a_block_hot_on_one_hart_is_translated_at_once_on_another() {
    assert_eq!(loop_on_two_harts(true, false).0, [1, 1]);
    assert_eq!(loop_on_two_harts(true, true).0, [1, 0]);
}

/// Harts of a machine share their block cache: the loop hart 0 translated
/// runs as that code on hart 1 (the loop's block after its first pass: 99
/// runs, 198 instructions, not through the interpreter), which translates
/// nothing itself; a store into the loop's page drops the code for both.
#[test]
fn harts_run_the_code_another_hart_translated() {
    let (blocks, translated_on_1) = loop_on_two_harts(false, false);
    assert_eq!(blocks, [1, 0]);
    assert!(translated_on_1 >= 198, "{translated_on_1}");
    let (blocks, translated_on_1) = loop_on_two_harts(false, true);
    assert_eq!(blocks, [1, 0]);
    assert!(translated_on_1 < 198, "{translated_on_1}");
}

/// Translated code runs from memory that is not writable, and is written
/// through a view that is not executable: once blocks are translated and
/// chained, no mapping of this process is both writable and executable.
#[test]
fn no_page_is_writable_and_executable() {
    let mut a = Asm::new(BASE);
    a.li(T0, 0).li(A1, 200);
    a.label("loop").addi(T0, T0, 1).j("next");
    a.label("next").bltu(T0, A1, "loop");
    exit_with(&mut a, T0);
    let (stop, m) = check(&finish(a));
    assert_eq!(stop, StopReason::HtifExit(200));
    assert!(m.harts()[0].translation_stats().blocks >= 2);
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let wx: Vec<&str> = maps
        .lines()
        .filter(|l| {
            let perms = l.split_whitespace().nth(1).unwrap_or("");
            perms.contains('w') && perms.contains('x')
        })
        .collect();
    assert!(wx.is_empty(), "writable and executable: {wx:?}");
    // the code's two views are there: shared memory, one executable and
    // one writable, in what the host's `perf` takes for anonymous memory
    // (`/dev/zero`, as its `is_anon_memory` says), so that it names the
    // code from `/tmp/perf-PID.map` (`--perf-map`) and not from a file
    let views = |perms: &str| {
        maps.lines()
            .filter(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.get(1) == Some(&perms) && f.get(5).is_some_and(|n| n.starts_with("/dev/zero"))
            })
            .count()
    };
    assert!(
        views("r-xs") >= 1 && views("rw-s") >= 1,
        "no executable and writable views of anonymous shared memory:\n{maps}"
    );
    assert!(
        !maps.lines().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.get(1).is_some_and(|p| p.contains('x')) && l.contains("/memfd:")
        }),
        "code in a memfd, which perf does not name from a perf map"
    );
}

/// Data through many virtual pages in S-mode with Sv39 on: a hit in the
/// in-order model's second most recent D-TLB entry (which translated code
/// handles inline), then enough pages that a miss must replace the older
/// of those two (which decides whether the next access to it misses).
/// Every step's cycles must be the reference's.
/// A program that turns Sv39 paging on (the root page table at label
/// `root`, which the caller writes) and goes on in S-mode at `s_mode`;
/// traps go to `handler`.
fn paged_program() -> Asm {
    const SATP: u32 = 0x180;
    const MEPC: u32 = 0x341;
    const PMPCFG0: u32 = 0x3a0;
    const PMPADDR0: u32 = 0x3b0;
    const SFENCE_VMA: u32 = 0x1200_0073;
    let mut a = Asm::new(BASE);
    a.la(T0, "handler").csrw(CSR_MTVEC, T0);
    // S-mode may reach all memory; paging on; into S-mode
    a.li(T0, u64::MAX >> 10).csrw(PMPADDR0, T0);
    a.li(T0, 0x1f).csrw(PMPCFG0, T0);
    a.la(T0, "root")
        .srli(T0, T0, 12)
        .li(T1, 8 << 60)
        .or(T0, T0, T1);
    a.csrw(SATP, T0).word(SFENCE_VMA);
    a.li(T0, 1 << 11).csrw(CSR_MSTATUS, T0);
    a.la(T0, "s_mode").csrw(MEPC, T0).mret();
    a
}

/// A root page table of gigapages: RAM at index 2 (where the program
/// runs) with `flags`, and at `aliases` with `alias_flags`.
fn gigapage_root(a: &mut Asm, aliases: std::ops::Range<usize>, alias_flags: u64) {
    let pte = |pa: u64, flags: u64| ((pa >> 12) << 10) | flags;
    let mut root = [0u64; 512];
    // valid, RWX, accessed and dirty
    root[2] = pte(BASE, 0xcf);
    for i in aliases {
        root[i] = pte(BASE, alias_flags);
    }
    let bytes: Vec<u8> = root.iter().flat_map(|e| e.to_le_bytes()).collect();
    a.align(4096).label("root").data(&bytes);
}

#[test]
fn data_through_many_pages_agrees_with_the_reference() {
    // the data: RAM past the program, seen through gigapage aliases of
    // RAM at root indices 4..21 (and RAM itself at index 2)
    const DATA: u64 = 0x1_0000;
    // (each a different 4 KiB page within its gigapage, so that the hart's
    // own direct-mapped TLB holds them all and translated code's inline
    // path, not the interpreter, makes the accesses)
    let alias = |i: u64| (i << 30) + DATA + (i << 12);
    let mut a = paged_program();
    a.label("s_mode").li(A2, 0).li(A3, 300);
    a.label("round");
    // p, q, p (a hit in the second most recent entry), a third page,
    // thirteen more (the sixteen entries now full), a new page (its miss
    // replaces the older of p and q: q), then q again
    let pages = [4, 5, 4, 6].into_iter().chain(7..20).chain([20, 5]);
    for (k, page) in pages.enumerate() {
        // (p's two accesses in one line, the others each in an L1 set of
        // its own: p's second passes the model's line test too, so no hook
        // call is left to put the TLB's order right)
        let off = if page == 4 { 0 } else { 64 * k as i32 };
        a.li(T1, alias(page))
            .ld(T2, T1, off)
            .addi(T2, T2, 1)
            .sd(T2, T1, off);
    }
    a.addi(A2, A2, 1).bne(A2, A3, "round");
    a.li(A0, 0);
    exit_with(&mut a, A0);
    a.align(4).label("handler").li(A0, 1);
    exit_with(&mut a, A0);
    gigapage_root(&mut a, 4..21, 0xcf);
    let (stop, m) = check(&finish(a));
    assert_eq!(stop, StopReason::HtifExit(0), "a trap on the way");
    assert!(m.harts()[0].instret() > 300 * 19 * 4);
}

/// A page mapped readable but not writable, loaded from in a hot loop
/// (so the load side of the hart's TLB maps it), then stored to from
/// translated code: the store must take its page fault (cause 15), not
/// pass through the load side's entry.
#[test]
fn a_store_to_a_read_only_page_faults_after_loads_from_it() {
    let data = (4u64 << 30) + 0x1_0000;
    let mut a = paged_program();
    a.label("s_mode").li(A2, 0).li(A3, 50).li(T1, data);
    a.label("round")
        .ld(T2, T1, 8)
        .addi(A2, A2, 1)
        .bne(A2, A3, "round");
    a.sd(T2, T1, 8).li(A0, 0);
    exit_with(&mut a, A0);
    a.align(4).label("handler").csrr(A0, CSR_MCAUSE);
    exit_with(&mut a, A0);
    // valid, readable, accessed and dirty: not writable
    gigapage_root(&mut a, 4..5, 0xc3);
    let (stop, _) = check(&finish(a));
    assert_eq!(stop, StopReason::HtifExit(15), "no store page fault");
}

/// A store to a line a load just brought in clean, then four more lines
/// of the same L1D set (16 KiB, 4 ways: 4 KiB apart) to evict it, round
/// after round: the store must leave the line dirty, so that its eviction
/// writes it back and costs what the reference's does.
#[test]
fn a_store_to_a_clean_line_makes_it_dirty() {
    let mut a = Asm::new(BASE);
    a.li(A2, 0).li(A3, 100).la(T1, "data");
    a.label("round").ld(T2, T1, 0).sd(T2, T1, 0);
    same_set_round_ends(a, 1..=4);
}

/// The end of a round of the program `a` (A2 its count, A3 the rounds,
/// T1 the label `data`, which this writes: five pages): loads from the
/// lines 4 KiB times `ways` past T1, in the first one's L1D set (16
/// KiB, 4 ways), then the next round or an exit with 0, which the run
/// on both models, checked against the reference, must reach.
fn same_set_round_ends(mut a: Asm, ways: std::ops::RangeInclusive<u64>) {
    for k in ways {
        a.li(T3, 4096 * k).add(T3, T3, T1).ld(T2, T3, 0);
    }
    a.addi(A2, A2, 1).bne(A2, A3, "round");
    a.li(A0, 0);
    exit_with(&mut a, A0);
    a.align(4096).label("data").data(&[0; 5 * 4096]);
    let (stop, _) = check(&finish(a));
    assert_eq!(stop, StopReason::HtifExit(0));
}

/// Loads and stores to three, then five lines of one L1D set (4 KiB
/// apart), in an order that hits ways other than the most recent (a load
/// from a dirty line, a store to a clean one) before the set overflows:
/// translated code makes those hits' replacement update itself, and any
/// slip in it (the order, the dirty bit) changes which line the fifth
/// evicts and whether that costs a write-back, so the cycles part from
/// the reference's.
#[test]
fn hits_in_other_ways_of_an_l1d_set_keep_its_replacement_order() {
    let mut a = Asm::new(BASE);
    a.li(A2, 0).li(A3, 100).la(T1, "data");
    a.li(A1, 4096).add(A1, A1, T1);
    a.li(T0, 8192).add(T0, T0, T1);
    a.label("round")
        .ld(T2, T1, 0)
        .ld(T2, A1, 0)
        .ld(T2, T0, 0)
        // a clean line, not the most recent: now dirty and the most recent
        .sd(A2, A1, 8)
        .j("mid")
        .label("mid")
        // a line neither the most recent nor the least
        .ld(T2, T1, 8)
        .sd(A2, T0, 16)
        .ld(T2, A1, 24);
    same_set_round_ends(a, 3..=4);
}

/// Code in five pages whose first lines share an L1I set (with the
/// loop's own), run in an order that fetches lines other than the set's
/// most recent way (back and forth between the first two pages) before
/// the set overflows: translated code's new-line routine makes those
/// hits' replacement update itself, and a slip in it changes which of
/// the first two lines the fifth page's evicts, so the fetch from the
/// first page after it hits where the reference's misses.
#[test]
fn fetches_from_other_ways_of_an_l1i_set_keep_its_replacement_order() {
    let mut a = Asm::new(BASE);
    a.li(A2, 0).li(A3, 100);
    a.label("round").j("p1");
    a.label("next").addi(A2, A2, 1).bne(A2, A3, "round");
    a.li(A0, 0);
    exit_with(&mut a, A0);
    a.align(4096).label("p1").j("p2");
    a.label("p1b").j("p2b");
    a.label("p1c").j("next");
    a.align(4096).label("p2").j("p1b");
    a.label("p2b").j("p3");
    a.align(4096).label("p3").j("p4");
    a.align(4096).label("p4").j("p5");
    a.align(4096).label("p5").j("p1c");
    let (stop, _) = check(&finish(a));
    assert_eq!(stop, StopReason::HtifExit(0));
}

/// A store to a line that is the most recent way of its L1D set, then an
/// AMO (run by the interpreter's definition) on another line of the set,
/// then a load from the store's line: the load
/// must take the model's hook (its line is no longer the set's most
/// recent way), not pass as on the store's line (translated code tests
/// such a load against the line the store kept, as long as no hook or
/// interpreter call ran between). Three more lines of the set then evict
/// whichever is least recent, so a replacement update missed at the load
/// evicts the store's line and the next round's store misses where the
/// reference's hits.
#[test]
fn a_load_after_an_amo_in_its_set_updates_the_replacement_order() {
    // amoadd.d zero, a2, (a1)
    let amoadd = (A2 << 20) | (A1 << 15) | (3 << 12) | 0x2f;
    let mut a = Asm::new(BASE);
    a.li(A2, 0).li(A3, 100).la(T1, "data");
    a.li(A1, 4096).add(A1, A1, T1);
    // (the load first makes the line the most recent way, so that the
    // store passes the model's shortcut from the second round on)
    a.label("round")
        .ld(T2, T1, 16)
        .sd(A2, T1, 0)
        .word(amoadd)
        .ld(T2, T1, 8)
        .j("evict")
        .label("evict");
    same_set_round_ends(a, 2..=4);
}

/// The high halves of products (`mulh`, `mulhu`) and divisions (every
/// form, one by x0), which translated code makes with x86's one-operand
/// multiplies and divides, whose results land in a register it may be
/// caching a guest register in, and `fence` (which retires and does
/// nothing else) in a loop whose values feed each other, one of them to
/// x0: every step's registers and cycles the reference's.
#[test]
fn high_products_divisions_and_fences_agree_with_the_reference() {
    let r_type = |f3: u32, rd: u32, rs1: u32, rs2: u32| {
        (1 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | 0x33
    };
    // (the word forms: opcode 0x3b)
    let w_type = |f3, rd, rs1, rs2| r_type(f3, rd, rs1, rs2) | 0x08;
    let (mulh, mulhu) = (
        |rd, a, b| r_type(1, rd, a, b),
        |rd, a, b| r_type(3, rd, a, b),
    );
    // fence rw, rw
    let fence = 0x0330_000f;
    let mut a = Asm::new(BASE);
    a.li(A2, 0).li(A3, 200).li(A0, 0);
    a.li(A1, 0x9e37_79b9_7f4a_7c15).li(T0, (-3i64) as u64);
    a.label("round")
        .word(mulhu(T2, T0, A1))
        .word(mulh(T3, T0, A1))
        .word(fence)
        .word(mulh(0, A1, T0))
        .word(mulhu(T1, A1, A1))
        .add(A0, A0, T2)
        .add(A0, A0, T3)
        .add(A0, A0, T1)
        // div, divu, rem, remu, then the word forms; by x0 once
        .word(r_type(4, T2, A1, T0))
        .word(r_type(5, T3, A0, A1))
        .word(r_type(6, T1, A1, T0))
        .word(r_type(7, T2, A0, T3))
        .word(r_type(4, 0, A1, 0))
        .add(A0, A0, T2)
        .add(A0, A0, T1)
        .word(w_type(4, T2, A1, T0))
        .word(w_type(5, T3, A0, A1))
        .word(w_type(6, T1, A1, T0))
        .word(w_type(7, T2, A0, T3))
        .add(A0, A0, T2)
        .add(A0, A0, T1)
        .add(A1, A1, A0)
        .addi(T0, T0, -7)
        .addi(A2, A2, 1)
        .bne(A2, A3, "round");
    a.li(A0, 0);
    exit_with(&mut a, A0);
    let (stop, _) = check(&finish(a));
    assert_eq!(stop, StopReason::HtifExit(0));
}
