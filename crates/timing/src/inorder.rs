//! The parameterised in-order model: a hart that spends each instruction in
//! a sequence of states (fetch, execute or mul/div, mem, walker, writeback),
//! with L1 I/D caches, a shared L2, main memory, I/D TLBs refilled by a page
//! walker whose accesses go through the L1 D-cache, a branch predictor and
//! device latencies. Parameters come from a machine description
//! ([`crate::desc::InOrderConfig`]).
//!
//! Cost of one instruction = 1 (execute) + its class latency - 1 (execute,
//! or mul/div) + `writeback` + fetch cycles (L1I hit latency and misses,
//! only when the instruction starts a new line, plus branch penalties) +
//! mem cycles (each data access: L1D latency, misses, MMIO) + walker cycles
//! (TLB misses) + CSR, trap and interrupt-delivery cycles (execute).
//!
//! Page sizes and walker addresses: the hart reports its own page walks as
//! `Walk` accesses (carrying the address translated) right before the
//! access they serve. The model keeps each as the page's record (with the
//! page size the walk depth implies), charges the A/D write a walk made
//! with the access it serves, and on a TLB miss of its own sends the
//! recorded PTE reads through the caches. When the hart walks again for a
//! page it walked before is up to its software TLB and block cache (host
//! caches), so nothing else depends on it.
//!
//! Not modelled: coherence between harts' L1s (each hart's L1 ignores the
//! others' stores, DMA bypasses the caches), ASIDs (the TLBs flush on every
//! `satp` write and `sfence.vma`, as the hart's do), MPRV translation in
//! M-mode (its accesses pay no walk).

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

use crate::bpred::Predictor;
use crate::cache::{Cache, MruKeys};
use crate::desc::{InOrderConfig, PipelineConfig};
use crate::stats::{event, ModelStats, Stat};
use crate::tlb::{L2Tlb, Tlb};
use crate::{
    InlineBranch, InlineFetch, InlineHooks, InlineJalr, InlineJump, InlineL1, InsnClass, JumpHint,
    MemKind, Operands, TimingModel, TrapInfo,
};

const FETCH: usize = 0;
const EXECUTE: usize = 1;
const MEM: usize = 2;
const WALKER: usize = 3;
const WRITEBACK: usize = 4;
const MULDIV: usize = 5;

const CLASSES: usize = crate::INSN_CLASSES;
const CSR_SATP: u16 = 0x180;
const CAUSE_FETCH_ACCESS: u64 = 1;
const CAUSE_FETCH_PAGE_FAULT: u64 = 12;
const IRQ_S_SOFT: u64 = 1;
const IRQ_M_SOFT: u64 = 3;
/// Flag in `InOrder::cost`: the class flushes something (fence.i, sfence.vma).
const SIDE_EFFECT: u64 = 1 << 63;
/// Flag in `InOrder::cost`, of every class with `[pipeline]`: the cost is
/// the pipeline's to work out. (With the other flag, the one test that
/// keeps the single-issue core's `insn` a table look-up.)
const PIPELINED: u64 = 1 << 62;
/// Walk accesses kept while waiting for the access they serve (two walks
/// for a page-crossing access fit).
const PENDING_MAX: usize = 10;

/// Hashes the walk records' keys (a page's address with its shift in the
/// low bits), four look-ups a TLB miss: one multiply instead of SipHash,
/// which buys resistance to chosen keys that a guest slowing only its own
/// simulation does not need. The rotation brings the product's well-mixed
/// high bits down to the low bits the map indexes its buckets by (the
/// product's low bits depend only on the key's, which are the shift).
#[derive(Default)]
struct PageKeyHasher(u64);

type PageKeys = BuildHasherDefault<PageKeyHasher>;

impl Hasher for PageKeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(8) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }
}

/// The L2 all harts of a machine share (one machine runs on one thread).
pub type SharedL2 = Rc<RefCell<Cache>>;

/// Builds the per-hart models of one machine around one shared L2.
pub struct InOrderFactory {
    cfg: InOrderConfig,
    l2: SharedL2,
}

impl InOrderFactory {
    pub fn new(cfg: &InOrderConfig) -> Self {
        InOrderFactory {
            cfg: cfg.clone(),
            l2: Rc::new(RefCell::new(Cache::new(&cfg.l2))),
        }
    }
    /// A hart's model.
    pub fn build(&self) -> InOrder {
        InOrder::new(&self.cfg, self.l2.clone())
    }
}

/// The PTE accesses of one walk (reads, then the A/D write if any).
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
struct WalkRec {
    ptes: [u64; 5],
    n: u8,
    /// The last access is the A/D write.
    wrote: bool,
    stamp: u64,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Counts {
    l2_read_accesses: u64,
    l2_read_misses: u64,
    l2_write_accesses: u64,
    l2_write_misses: u64,
    memory_writebacks: u64,
    walks: u64,
    walk_accesses: u64,
    walks_unrecorded: u64,
    dtlb_write_accesses: u64,
    dtlb_write_misses: u64,
    mmio_accesses: u64,
    traps: u64,
    interrupts: u64,
    ipis: u64,
    csr_writes_serialising: u64,
    fence_i: u64,
    sfence_vma: u64,
    satp_writes: u64,
    wfi: u64,
}

pub struct InOrder {
    // parameters
    lat_extra: [u64; CLASSES],
    /// What `insn` returns per class: latency - 1 + writeback, with
    /// [`SIDE_EFFECT`] set for the classes that also change model state
    /// and [`PIPELINED`] for every class of the pipelined core.
    cost: [u64; CLASSES],
    lat_state: [u8; CLASSES],
    writeback: u64,
    csr_read_extra: u64,
    csr_write_extra: u64,
    trap_entry: u64,
    l1i_lat: u64,
    l1d_lat: u64,
    l2_lat: u64,
    mem_lat: u64,
    mispredict: u64,
    taken_penalty: u64,
    direct_miss_penalty: Option<u64>,
    /// The `branches` hpm event leaves jumps out.
    branches_conditional: bool,
    mmio: u64,
    irq_delivery: u64,
    ipi_delivery: u64,
    // structures
    l1i: Cache,
    l1d: Cache,
    l2: SharedL2,
    itlb: Tlb,
    dtlb: Tlb,
    /// `[l2tlb]`: where first-level TLB misses look before walking.
    l2tlb: Option<L2Tlb>,
    l2tlb_lat: u64,
    walk_pte_lat: u64,
    dirty_victim_first: bool,
    /// `[pipeline] store_to_load` is not 0.
    store_to_load: bool,
    bp: Predictor,
    walks: HashMap<u64, WalkRec, PageKeys>,
    walk_clock: u64,
    pending: [u64; PENDING_MAX],
    pending_n: usize,
    /// The address the pending walk translates.
    pending_va: u64,
    /// The PTE a finished walk wrote back (A/D update), charged with the
    /// access the walk served (0: none).
    ad_write: u64,
    // fast-path memos
    ishift: u32,
    /// Clears the offset within an L1I line.
    iline_mask: u64,
    dshift: u32,
    /// Address of the line fetched last ([`NO_LINE`]: none), with bit 0
    /// set while a walk is pending: no line address has its low bits set,
    /// so a fetch is from the last line, with no walk to finish first,
    /// exactly when its line equals this word (one test, inline in
    /// translated code).
    last_iline: u64,
    /// Each L1D set's most recent way (kept after every access, for the
    /// fast path of `mem` and translated code's test of it).
    l1d_keys: MruKeys,
    /// The same for the L1I (for translated code's test of a fetch from a
    /// new line).
    l1i_keys: MruKeys,
    // architectural context seen through the hooks
    prv: u8,
    levels: u32,
    translating: bool,
    last_class: InsnClass,
    // accounting: per-instruction costs are derived from the class counts
    // when asked (see `states`); `state` holds everything else
    class_counts: [u64; CLASSES],
    /// Data accesses that took the same-line fast path, by
    /// `translating << 1 | write` (each an L1 hit and, translating, a TLB hit).
    same_line: [u64; 4],
    state: [u64; 6],
    mem_stall: u64,
    c: Counts,
    /// `[pipeline]`: the pipelined core's issue state (None: stages in sequence).
    pipe: Option<Box<Pipe>>,
}

// What an instruction needs from the dual-issue pairing rules (SiFive U74
// Core Complex Manual, "Execution Pipeline": at most one memory access, one
// branch or jump, one FP arithmetic and one multiply/divide per pair; no
// CSR access or other serialising instruction in a pair).
const K_MEM: u8 = 1;
const K_CTRL: u8 = 2;
const K_FP: u8 = 4;
const K_MULDIV: u8 = 8;
const K_SOLO: u8 = 16;

fn pair_kind(class: InsnClass) -> u8 {
    use InsnClass::*;
    match class {
        Alu => 0,
        Load | Store | Amo => K_MEM,
        Branch | Jump => K_CTRL,
        Mul | Div => K_MULDIV,
        FpAdd | FpMul | FpFma | FpDiv | FpSqrt | FpMisc => K_FP,
        Csr | Fence | FenceI | SfenceVma | Ecall | Xret | Wfi | System => K_SOLO,
    }
}

/// The issue state of a pipelined core: when each register's value can be
/// read, and whether the last issue cycle has room for a second instruction.
/// `now` is the model's clock: the cycle the last instruction issued in,
/// moved on by every cycle the model charges.
#[derive(serde::Serialize, serde::Deserialize)]
struct Pipe {
    #[serde(skip, default = "PipelineConfig::placeholder")]
    cfg: PipelineConfig,
    now: u64,
    /// Cycle from which an instruction reading the register at issue may issue.
    #[serde(with = "hs_snapshot::state::array")]
    ready: [u64; 64],
    /// The last issue cycle holds one instruction and a second may join it.
    open: bool,
    open_kind: u8,
    open_dst: u8,
    div_free: u64,
    fdiv_free: u64,
    /// Issue cycle and destination of the last instruction.
    last_t: u64,
    last_dst: u8,
    /// Instructions that issued second in a cycle.
    paired: u64,
    /// Cycles an instruction waited for a register or a busy divider.
    interlock: u64,
    /// The last stores: (virtual address, size, cycle from which a load may
    /// read them), for `store_to_load`.
    stores: [(u64, u64, u64); STORES_KEPT],
    store_next: usize,
    /// Loads that waited for a store's data, and the cycles they waited.
    store_waits: u64,
    store_wait_cycles: u64,
}

/// Stores a load is checked against (more are long gone by the time a load
/// could meet them at any `store_to_load` a core has).
const STORES_KEPT: usize = 4;

impl Pipe {
    /// Charge `c` cycles the model returned outside `insn` (misses,
    /// penalties, traps): the clock moves, and the next instruction starts
    /// a new issue cycle.
    #[inline(always)]
    fn advance(&mut self, c: u64) {
        if c != 0 {
            self.now += c;
            self.open = false;
        }
    }
}

/// `last_iline` when no line was fetched last (its low bits set: no line
/// address has them; bit 0 is left for a pending walk).
const NO_LINE: u64 = !1;

fn class_index(c: InsnClass) -> usize {
    c as usize
}

impl InOrder {
    pub fn new(cfg: &InOrderConfig, l2: SharedL2) -> Self {
        let l = &cfg.latency;
        let mut lat = [1u64; CLASSES];
        let mut st = [EXECUTE as u8; CLASSES];
        use InsnClass::*;
        for (class, cycles) in [
            (Alu, l.alu),
            (Branch, l.branch),
            (Jump, l.jump),
            (Load, l.load),
            (Store, l.store),
            (Amo, l.amo),
            (Mul, l.mul),
            (Div, l.div),
            (FpAdd, l.fp_add),
            (FpMul, l.fp_mul),
            (FpDiv, l.fp_div),
            (FpSqrt, l.fp_sqrt),
            (FpFma, l.fp_fma),
            (FpMisc, l.fp_misc),
            (Csr, 1), // priced by csr()
            (Fence, l.fence),
            (FenceI, l.fence_i),
            (SfenceVma, l.sfence_vma),
            (Ecall, l.ecall),
            (Xret, l.xret),
            (Wfi, l.wfi),
            (System, l.system),
        ] {
            lat[class_index(class)] = cycles;
        }
        st[class_index(Mul)] = MULDIV as u8;
        st[class_index(Div)] = MULDIV as u8;
        let lat_extra = lat.map(|c| c.saturating_sub(1));
        let mut cost = lat_extra.map(|e| e + cfg.writeback);
        cost[class_index(FenceI)] |= SIDE_EFFECT;
        cost[class_index(SfenceVma)] |= SIDE_EFFECT;
        if cfg.pipeline.is_some() {
            cost = cost.map(|c| c | PIPELINED);
        }
        InOrder {
            lat_extra,
            cost,
            lat_state: st,
            writeback: cfg.writeback,
            csr_read_extra: l.csr_read - 1,
            csr_write_extra: l.csr_write - 1 + l.csr_serialize,
            trap_entry: l.trap_entry,
            l1i_lat: cfg.l1i.latency,
            l1d_lat: cfg.l1d.latency,
            l2_lat: cfg.l2.latency,
            mem_lat: cfg.memory_latency,
            mispredict: cfg.bpred.mispredict_penalty,
            taken_penalty: cfg.bpred.taken_penalty,
            direct_miss_penalty: cfg.bpred.direct_miss_penalty,
            branches_conditional: cfg.pmu_branches_conditional,
            mmio: cfg.devices.mmio,
            irq_delivery: cfg.devices.irq_delivery,
            ipi_delivery: cfg.devices.ipi_delivery,
            l1i: Cache::new(&cfg.l1i),
            l1d: Cache::new(&cfg.l1d),
            l2,
            itlb: Tlb::new(cfg.itlb_entries),
            dtlb: Tlb::new(cfg.dtlb_entries),
            l2tlb: cfg.l2tlb.map(|(n, _)| L2Tlb::new(n)),
            l2tlb_lat: cfg.l2tlb.map_or(0, |(_, lat)| lat),
            walk_pte_lat: cfg.walk_pte_latency,
            dirty_victim_first: cfg.dirty_victim_first,
            store_to_load: cfg.pipeline.as_ref().is_some_and(|p| p.store_to_load > 0),
            bp: Predictor::new(&cfg.bpred),
            walks: HashMap::default(),
            walk_clock: 0,
            pending: [0; PENDING_MAX],
            pending_n: 0,
            pending_va: 0,
            ad_write: 0,
            ishift: cfg.l1i.line.trailing_zeros(),
            iline_mask: !(cfg.l1i.line - 1),
            dshift: cfg.l1d.line.trailing_zeros(),
            last_iline: NO_LINE,
            l1d_keys: MruKeys::new(&Cache::new(&cfg.l1d)),
            l1i_keys: MruKeys::new(&Cache::new(&cfg.l1i)),
            prv: 3,
            levels: 0,
            translating: false,
            last_class: InsnClass::Alu,
            class_counts: [0; CLASSES],
            same_line: [0; 4],
            state: [0; 6],
            mem_stall: 0,
            c: Counts::default(),
            pipe: cfg.pipeline.clone().map(|p| {
                Box::new(Pipe {
                    cfg: p,
                    now: 0,
                    ready: [0; 64],
                    open: false,
                    open_kind: 0,
                    open_dst: Operands::NONE,
                    div_free: 0,
                    fdiv_free: 0,
                    last_t: 0,
                    last_dst: Operands::NONE,
                    paired: 0,
                    interlock: 0,
                    stores: [(0, 0, 0); STORES_KEPT],
                    store_next: 0,
                    store_waits: 0,
                    store_wait_cycles: 0,
                })
            }),
        }
    }

    /// One instruction through the pipelined core: the cycle it issues in
    /// (with the previous instruction when the pairing rules allow, else
    /// the next cycle, later while a register it reads is not ready or its
    /// divider is busy), and when its result is ready. Returns the cycles
    /// charged minus one (wrapping: -1 for the second of a pair).
    #[inline]
    fn pipelined_insn(&mut self, class: InsnClass, ops: Operands) -> u64 {
        use InsnClass::*;
        let i = class_index(class);
        let lat = self.lat_extra[i] + 1;
        let p = self.pipe.as_mut().expect("pipelined_insn needs [pipeline]");
        let kind = pair_kind(class);
        let depends = |r: u8| r != Operands::NONE && r == p.open_dst;
        let pairs = p.open
            && kind & K_SOLO == 0
            && kind & p.open_kind == 0
            && !ops.src.iter().any(|&r| depends(r))
            && !depends(ops.dst);
        let base = if pairs { p.now } else { p.now + 1 };
        // operands: read at issue, or (ALU, branch, store data) up to
        // `late_alu` stages later
        let late = p.cfg.late_alu;
        let ready = |r: u8| {
            if r == Operands::NONE {
                0
            } else {
                p.ready[r as usize]
            }
        };
        let (early, late_src): (&[u8], &[u8]) = match class {
            Alu | Branch => (&[], &ops.src[..]),
            // FP store data comes from the FPU, not the late integer ALU
            Store if ops.src[1] >= 32 && ops.src[1] != Operands::NONE => (&ops.src[..2], &[]),
            Store | Amo => (&ops.src[..1], &ops.src[1..2]),
            _ => (&ops.src[..], &[]),
        };
        let need_early = early.iter().map(|&r| ready(r)).max().unwrap_or(0);
        let need_late = late_src.iter().map(|&r| ready(r)).max().unwrap_or(0);
        let mut t = base.max(need_early).max(need_late.saturating_sub(late));
        let wide = ops.flags & Operands::WIDE != 0;
        match class {
            Div => t = t.max(p.div_free),
            FpDiv | FpSqrt => t = t.max(p.fdiv_free),
            _ => {}
        }
        let paired = pairs && t == p.now;
        p.interlock += t - base;
        let result = match class {
            Alu => {
                if need_late <= t {
                    t + lat
                } else {
                    t + late + 1
                }
            }
            Load | Amo => {
                if ops.dst >= 32 {
                    t + p.cfg.fp_load_to_use
                } else {
                    t + p.cfg.load_to_use
                }
            }
            Div => {
                let r = t + if wide { p.cfg.div_double } else { lat };
                p.div_free = r - 1;
                r
            }
            FpDiv | FpSqrt => {
                let r = t + if wide { p.cfg.fp_div_double } else { lat };
                p.fdiv_free = r - 1;
                r
            }
            FpAdd | FpMul | FpFma => t + lat + if wide { p.cfg.fp_double_extra } else { 0 },
            Mul | FpMisc => t + lat,
            _ => t + 1,
        };
        if ops.dst != Operands::NONE {
            p.ready[ops.dst as usize] = result;
        }
        p.last_t = t;
        p.last_dst = ops.dst;
        // serialising instructions hold issue for their whole latency
        let end = if kind & K_SOLO != 0 { t + lat - 1 } else { t };
        let cost = end - p.now;
        p.now = end;
        if paired {
            p.paired += 1;
            p.open = false;
        } else {
            p.open = p.cfg.issue_width > 1 && kind & K_SOLO == 0;
            p.open_kind = kind;
            p.open_dst = ops.dst;
        }
        self.state[EXECUTE] += cost;
        cost.wrapping_sub(1)
    }

    /// Advance the pipelined core's clock by cycles a hook other than
    /// `insn` charged; returns them.
    #[inline(always)]
    fn charged(&mut self, c: u64) -> u64 {
        if let Some(p) = self.pipe.as_mut() {
            p.advance(c);
        }
        c
    }

    /// Pipelined with `store_to_load`: remember a store, or make a load that
    /// reads bytes of a recent store wait until that store's data can reach
    /// it. Cycles the load waits (the pipeline stalls, and its result is
    /// later by as much).
    #[inline(never)]
    fn store_load_order(&mut self, va: u64, size: u8, write: bool) -> u64 {
        let Some(p) = self.pipe.as_mut() else {
            return 0;
        };
        let size = size as u64;
        if write {
            p.stores[p.store_next] = (va, size, p.last_t + p.cfg.store_to_load);
            p.store_next = (p.store_next + 1) % STORES_KEPT;
            return 0;
        }
        let mut until = 0;
        for &(a, n, t) in &p.stores {
            if n != 0 && va < a.wrapping_add(n) && a < va.wrapping_add(size) {
                until = until.max(t);
            }
        }
        if until <= p.last_t {
            return 0;
        }
        let wait = until - p.last_t;
        if p.last_dst != Operands::NONE {
            p.ready[p.last_dst as usize] += wait;
        }
        p.store_waits += 1;
        p.store_wait_cycles += wait;
        self.state[MEM] += wait;
        wait
    }

    /// Instructions fetched (each reaches `insn`, retired or not).
    fn fetches(&self) -> u64 {
        self.class_counts.iter().sum()
    }

    /// The six states: what the hooks recorded plus, per instruction, one
    /// execute cycle, its class latency and its writeback.
    fn states(&self) -> [u64; 6] {
        let mut s = self.state;
        s[MEM] += self.same_line.iter().sum::<u64>() * self.l1d_lat;
        if self.pipe.is_some() {
            return s; // `pipelined_insn` charges execute itself
        }
        for (i, &n) in self.class_counts.iter().enumerate() {
            s[EXECUTE] += n;
            s[self.lat_state[i] as usize] += n * self.lat_extra[i];
            s[WRITEBACK] += n * self.writeback;
        }
        s
    }

    /// Cycles the model accounted for (the sum of the cycle-shape states).
    pub fn busy_cycles(&self) -> u64 {
        self.states().iter().sum()
    }

    /// No line fetched last: the next fetch looks at the I-TLB and L1I.
    fn forget_iline(&mut self) {
        self.last_iline = NO_LINE | (self.pending_n > 0) as u64;
    }

    /// `pa`'s line was fetched last (no walk is pending: a fetch
    /// completes the one made for it first).
    #[inline(always)]
    fn fetched_iline(&mut self, pa: u64) {
        debug_assert_eq!(self.pending_n, 0);
        self.last_iline = pa & self.iline_mask;
    }

    fn set_context(&mut self) {
        self.translating = self.prv != 3 && self.levels != 0;
        // the next fetch looks at the I-TLB again
        self.forget_iline();
    }

    fn flush_tlbs(&mut self) {
        self.itlb.flush();
        self.dtlb.flush();
        if let Some(t) = self.l2tlb.as_mut() {
            t.flush();
        }
        self.forget_iline();
    }

    /// L1D counts including the same-line fast path.
    fn l1d_counts(&self) -> crate::cache::CacheCounts {
        let mut c = self.l1d.counts;
        c.read_accesses += self.same_line[0] + self.same_line[2];
        c.write_accesses += self.same_line[1] + self.same_line[3];
        c
    }
    /// (D-TLB accesses, of which writes), including the fast path.
    fn dtlb_accesses(&self) -> (u64, u64) {
        (
            self.dtlb.accesses + self.same_line[2] + self.same_line[3],
            self.c.dtlb_write_accesses + self.same_line[3],
        )
    }

    /// An L1 miss (or write-back) reaching the L2: cycles of the fill.
    fn l2_access(&mut self, pa: u64, write: bool) -> u64 {
        let o = self.l2.borrow_mut().access(pa, write);
        if write {
            self.c.l2_write_accesses += 1;
            self.c.l2_write_misses += !o.hit as u64;
        } else {
            self.c.l2_read_accesses += 1;
            self.c.l2_read_misses += !o.hit as u64;
        }
        self.c.memory_writebacks += o.writeback.is_some() as u64;
        self.l2_lat + if o.hit { 0 } else { self.mem_lat }
    }

    /// One L1 D-cache access: (cycles, of which stall beyond the L1 latency).
    #[inline]
    fn data_access(&mut self, pa: u64, write: bool) -> (u64, u64) {
        let line = pa >> self.dshift;
        if self.l1d_keys.holds(line, write) {
            if write {
                self.l1d.counts.write_accesses += 1;
            } else {
                self.l1d.counts.read_accesses += 1;
            }
            return (self.l1d_lat, 0);
        }
        self.data_access_slow(pa, write)
    }

    #[inline(never)]
    fn data_access_slow(&mut self, pa: u64, write: bool) -> (u64, u64) {
        let o = self.l1d.access(pa, write);
        self.data_filled(pa, o)
    }

    /// `data_access` of a line `l1d_hit` just found absent, nothing having
    /// touched the L1D since (no walk in between).
    fn data_access_absent(&mut self, pa: u64, write: bool) -> (u64, u64) {
        let o = self.l1d.access_absent(pa, write);
        self.data_filled(pa, o)
    }

    /// After the L1D access `o`: its copy of the most recent way, and the
    /// L2's part of a miss and of a write-back.
    #[inline(always)]
    fn data_filled(&mut self, pa: u64, o: crate::cache::Outcome) -> (u64, u64) {
        self.l1d_keys.refresh(&self.l1d, pa >> self.dshift);
        let mut stall = 0;
        match o.writeback {
            Some(victim) if self.dirty_victim_first => {
                // no write-back buffer: the victim goes to the L2 before the
                // line is requested, and the hart waits for both
                stall = self.l2_access(victim, true);
                stall += self.l2_access(pa, false);
            }
            victim => {
                if !o.hit {
                    stall = self.l2_access(pa, false);
                }
                if let Some(victim) = victim {
                    // buffered: updates the L2, costs the hart nothing
                    self.l2_access(victim, true);
                }
            }
        }
        (self.l1d_lat + stall, stall)
    }

    /// A miss in this model's TLB for virtual address `va`: look in the
    /// second-level TLB, else walk through the caches with the PTE
    /// addresses of the hart's last walk of the page. Walker cycles.
    #[inline(never)]
    fn tlb_miss(&mut self, itlb: bool, va: u64, write: bool) -> u64 {
        if !itlb && write && self.translating {
            self.c.dtlb_write_misses += 1;
        }
        if let Some(shift) = self.l2tlb.as_mut().and_then(|t| t.lookup(va)) {
            if itlb {
                self.itlb.fill(va, shift);
            } else {
                self.dtlb.fill(va, shift);
            }
            self.state[WALKER] += self.l2tlb_lat;
            return self.l2tlb_lat;
        }
        self.c.walks += 1;
        let (shift, cycles) = match self.recorded_walk(va) {
            Some((shift, r)) => (shift, self.replay_walk(&r) + self.charge_ad_write()),
            None => {
                // no walk of this page seen (e.g. MPRV): a walk that misses everywhere
                self.c.walks_unrecorded += 1;
                let per = self.walk_pte_lat + self.l2_lat + self.mem_lat;
                let levels = self.levels.max(3) as u64;
                self.mem_stall += levels * (per - self.walk_pte_lat);
                self.state[WALKER] += levels * per;
                (12, levels * per)
            }
        };
        if itlb {
            self.itlb.fill(va, shift);
        } else {
            self.dtlb.fill(va, shift);
        }
        if let Some(t) = self.l2tlb.as_mut() {
            t.fill(va, shift);
        }
        cycles
    }

    /// Turn the pending walk accesses into a record: (page shift, accesses).
    fn take_pending(&mut self) -> (u32, WalkRec) {
        let n = self.pending_n.min(5);
        self.pending_n = 0;
        self.last_iline &= !1;
        let mut r = WalkRec::default();
        r.ptes[..n].copy_from_slice(&self.pending[..n]);
        r.n = n as u8;
        r.wrote = n >= 2 && r.ptes[n - 1] == r.ptes[n - 2];
        let reads = n as u32 - r.wrote as u32;
        let levels = self.levels.max(3);
        let shift = if reads >= 1 && reads <= levels {
            12 + 9 * (levels - reads)
        } else {
            12
        };
        (shift, r)
    }

    /// Keep a walk of the page holding `va` for later TLB misses.
    fn remember_walk(&mut self, va: u64, shift: u32, mut r: WalkRec) {
        self.walk_clock += 1;
        r.stamp = self.walk_clock;
        // a walk writes A/D once; later walks of the page only read
        if r.wrote {
            r.n -= 1;
            r.wrote = false;
        }
        self.walks.insert((va >> shift << shift) | shift as u64, r);
    }

    /// The hart finished a page walk (its accesses are pending): keep it
    /// as the page's record for this model's own TLB misses, and note the
    /// A/D write it made, if any, to be charged with the access the walk
    /// serves (the walker writes the PTE back whatever the TLBs here hold).
    /// Nothing else depends on when the hart walks: its software TLB and
    /// block cache are host caches, and what they hold must not show in
    /// cycles or counts. Walker cycles (of an earlier walk's write).
    fn finish_walk(&mut self) -> u64 {
        let va = self.pending_va;
        let (shift, r) = self.take_pending();
        let earlier = self.charge_ad_write();
        if r.wrote {
            self.ad_write = r.ptes[r.n as usize - 1];
        }
        self.remember_walk(va, shift, r);
        earlier
    }

    /// Charge the A/D write of the last walk, if not yet: walker cycles.
    fn charge_ad_write(&mut self) -> u64 {
        if self.ad_write == 0 {
            return 0;
        }
        let (c, stall) = self.data_access(self.ad_write, true);
        self.ad_write = 0;
        let cycles = c - self.l1d_lat + self.walk_pte_lat;
        self.mem_stall += stall;
        self.state[WALKER] += cycles;
        self.c.walk_accesses += 1;
        cycles
    }

    /// The freshest recorded walk of a page holding `va`.
    fn recorded_walk(&self, va: u64) -> Option<(u32, WalkRec)> {
        let mut best: Option<(u32, WalkRec)> = None;
        for shift in [12u32, 21, 30, 39] {
            if let Some(r) = self.walks.get(&((va >> shift << shift) | shift as u64)) {
                if best.is_none_or(|(_, b)| r.stamp > b.stamp) {
                    best = Some((shift, *r));
                }
            }
        }
        best
    }

    /// Send a walk's PTE accesses through the D-cache; walker cycles.
    fn replay_walk(&mut self, r: &WalkRec) -> u64 {
        let mut cycles = 0;
        for i in 0..r.n as usize {
            let write = r.wrote && i + 1 == r.n as usize;
            let (c, stall) = self.data_access(r.ptes[i], write);
            // each read waits for the one before: a hit costs the walker's
            // own latency, not the pipeline's (which hides the L1's)
            cycles += c - self.l1d_lat + self.walk_pte_lat;
            self.mem_stall += stall;
        }
        self.c.walk_accesses += r.n as u64;
        self.state[WALKER] += cycles;
        cycles
    }

    #[inline(always)]
    fn fetch_plain(&mut self, pc: u64, pa: u64) -> u64 {
        if pa & self.iline_mask == self.last_iline {
            return 0;
        }
        let line = pa >> self.ishift;
        // a new line: the usual case is an I-TLB entry found without a
        // search and the MRU way of the line's set
        let tlb_hit = self.translating && self.itlb.quick_hit(pc);
        // (then the L1I is searched for the line, absent if not hit, and
        // `fetch_new_line` has no walk to make)
        let looked = tlb_hit || !self.translating;
        if looked && self.l1i_hit(line) {
            self.fetched_iline(pa);
            self.state[FETCH] += self.l1i_lat;
            return self.charged(self.l1i_lat);
        }
        let c = self.fetch_new_line(pc, pa, tlb_hit, looked);
        self.charged(c)
    }

    /// An L1I hit in any way, counted, with its replacement update and
    /// the most recent way's copy kept.
    #[inline(always)]
    fn l1i_hit(&mut self, line: u64) -> bool {
        if !self.l1i.hit_uncounted(line, false) {
            return false;
        }
        self.l1i.counts.read_accesses += 1;
        self.l1i_keys.refresh(&self.l1i, line);
        true
    }

    /// A fetch right after the hart walked (for it): the walk is recorded
    /// first, its A/D write charged after the fetch's own TLB lookup.
    #[inline(never)]
    fn fetch_after_walk(&mut self, pc: u64, pa: u64) -> u64 {
        let earlier = self.finish_walk();
        let c = self.fetch_plain(pc, pa);
        let w = self.charge_ad_write();
        c + self.charged(earlier + w)
    }

    /// A data access right after the hart walked (for it), as
    /// [`InOrder::fetch_after_walk`].
    #[inline(never)]
    fn mem_after_walk(&mut self, va: u64, pa: u64, size: u8, write: bool, mmio: bool) -> u64 {
        let earlier = self.finish_walk();
        let c = self.mem_plain(va, pa, size, write, mmio);
        let w = self.charge_ad_write();
        c + self.charged(earlier + w)
    }

    /// A fetch from a line other than the last, not an L1I hit found
    /// without a walk; `absent`: the L1I was searched for the line (no
    /// walk is needed) and does not hold it.
    #[inline(never)]
    fn fetch_new_line(&mut self, pc: u64, pa: u64, tlb_hit: bool, absent: bool) -> u64 {
        let mut cycles = 0;
        if self.translating && !(tlb_hit || self.itlb.lookup(pc)) {
            cycles += self.tlb_miss(true, pc, false);
        }
        self.fetched_iline(pa);
        let o = if absent {
            self.l1i.access_absent(pa, false)
        } else {
            self.l1i.access(pa, false)
        };
        self.l1i_keys.refresh(&self.l1i, pa >> self.ishift);
        let mut c = self.l1i_lat;
        if !o.hit {
            let stall = self.l2_access(pa, false);
            self.mem_stall += stall;
            c += stall;
        }
        self.state[FETCH] += c;
        cycles + c
    }

    /// `insn` of a class whose cost is flagged: its side effects, then
    /// the pipeline's cost or the table's.
    #[inline]
    fn insn_flagged(&mut self, class: InsnClass, ops: Operands, cost: u64) -> u64 {
        if cost & SIDE_EFFECT != 0 {
            self.class_side_effects(class);
        }
        if cost & PIPELINED != 0 {
            return self.pipelined_insn(class, ops);
        }
        cost & !SIDE_EFFECT
    }

    #[inline(never)]
    fn class_side_effects(&mut self, class: InsnClass) {
        match class {
            InsnClass::FenceI => {
                self.c.fence_i += 1;
                self.l1i.invalidate_all();
                self.l1i_keys.rebuild(&self.l1i);
                self.forget_iline();
            }
            InsnClass::SfenceVma => {
                self.c.sfence_vma += 1;
                self.flush_tlbs();
            }
            _ => {}
        }
    }

    fn all_stats(&self) -> ModelStats {
        let mut m = self.base_stats();
        if let Some(p) = &self.pipe {
            m.stats.push(Stat {
                name: "pipeline.dual_issued",
                value: p.paired,
                unit: "count",
                desc: "instructions that issued in the same cycle as the one before (dual issue)",
            });
            m.stats.push(Stat {
                name: "pipeline.interlock_cycles",
                value: p.interlock,
                unit: "cycles",
                desc: "cycles an instruction waited for a register it reads or a busy divider (in execute)",
            });
            m.stats.push(Stat {
                name: "pipeline.store_to_load_waits",
                value: p.store_waits,
                unit: "count",
                desc: "loads that read bytes of a recent store and waited for its data",
            });
            m.stats.push(Stat {
                name: "pipeline.store_to_load_cycles",
                value: p.store_wait_cycles,
                unit: "cycles",
                desc: "cycles those loads waited (in mem)",
            });
        }
        m
    }

    fn base_stats(&self) -> ModelStats {
        let st = self.states();
        let fetches = self.fetches();
        let l1i = self.l1i.counts;
        let l1d = self.l1d_counts();
        let b = self.bp.counts;
        let c = &self.c;
        let s = |name, value, unit, desc| Stat {
            name,
            value,
            unit,
            desc,
        };
        ModelStats {
            stats: vec![
                s(
                    "cycles.busy",
                    self.busy_cycles(),
                    "cycles",
                    "cycles the timing model accounted for (sum of the six states)",
                ),
                s(
                    "cycles.fetch",
                    st[FETCH],
                    "cycles",
                    "fetch: L1I latency and misses, branch penalties",
                ),
                s(
                    "cycles.execute",
                    st[EXECUTE],
                    "cycles",
                    "execute: one per instruction plus class latency, CSR and trap costs",
                ),
                s(
                    "cycles.mem",
                    st[MEM],
                    "cycles",
                    "mem: L1D latency and misses of loads and stores, MMIO",
                ),
                s(
                    "cycles.walker",
                    st[WALKER],
                    "cycles",
                    "walker: page walks after TLB misses",
                ),
                s(
                    "cycles.writeback",
                    st[WRITEBACK],
                    "cycles",
                    "writeback: register write per instruction",
                ),
                s(
                    "cycles.muldiv",
                    st[MULDIV],
                    "cycles",
                    "mul/div: integer multiply and divide beyond the first cycle",
                ),
                s(
                    "cycles.mem_stall",
                    self.mem_stall,
                    "cycles",
                    "cycles waiting for L2 or memory after an L1 miss (inside fetch, mem, walker)",
                ),
                s(
                    "insts.fetched",
                    fetches,
                    "count",
                    "instructions fetched (retired plus faulting)",
                ),
                s(
                    "icache.accesses",
                    fetches,
                    "count",
                    "L1 I-cache accesses (one per instruction)",
                ),
                s(
                    "icache.misses",
                    l1i.read_misses,
                    "count",
                    "L1 I-cache misses",
                ),
                s(
                    "dcache.read_accesses",
                    l1d.read_accesses,
                    "count",
                    "L1 D-cache reads (loads and walker reads)",
                ),
                s(
                    "dcache.read_misses",
                    l1d.read_misses,
                    "count",
                    "L1 D-cache read misses",
                ),
                s(
                    "dcache.write_accesses",
                    l1d.write_accesses,
                    "count",
                    "L1 D-cache writes (stores and walker A/D updates)",
                ),
                s(
                    "dcache.write_misses",
                    l1d.write_misses,
                    "count",
                    "L1 D-cache write misses (write-allocate)",
                ),
                s(
                    "dcache.writebacks",
                    l1d.writebacks,
                    "count",
                    "dirty L1 D-cache lines written back to the L2",
                ),
                s(
                    "l2.read_accesses",
                    c.l2_read_accesses,
                    "count",
                    "L2 reads by this hart (L1 fills)",
                ),
                s(
                    "l2.read_misses",
                    c.l2_read_misses,
                    "count",
                    "L2 read misses by this hart",
                ),
                s(
                    "l2.write_accesses",
                    c.l2_write_accesses,
                    "count",
                    "L2 writes by this hart (L1 write-backs)",
                ),
                s(
                    "l2.write_misses",
                    c.l2_write_misses,
                    "count",
                    "L2 write misses by this hart",
                ),
                s(
                    "l2.writebacks",
                    c.memory_writebacks,
                    "count",
                    "dirty L2 lines this hart's accesses evicted to memory",
                ),
                s(
                    "itlb.accesses",
                    self.itlb.accesses,
                    "count",
                    "I-TLB lookups (one per new fetch line while translating)",
                ),
                s("itlb.misses", self.itlb.misses, "count", "I-TLB misses"),
                s(
                    "dtlb.accesses",
                    self.dtlb_accesses().0,
                    "count",
                    "D-TLB lookups while translating",
                ),
                s("dtlb.misses", self.dtlb.misses, "count", "D-TLB misses"),
                s(
                    "l2tlb.accesses",
                    self.l2tlb.as_ref().map_or(0, |t| t.accesses),
                    "count",
                    "second-level TLB lookups (after an I- or D-TLB miss; 0 without [l2tlb])",
                ),
                s(
                    "l2tlb.misses",
                    self.l2tlb.as_ref().map_or(0, |t| t.misses),
                    "count",
                    "second-level TLB misses (each a page walk)",
                ),
                s(
                    "walker.walks",
                    c.walks,
                    "count",
                    "page walks after a TLB miss",
                ),
                s(
                    "walker.accesses",
                    c.walk_accesses,
                    "count",
                    "PTE reads and A/D writes of those walks",
                ),
                s(
                    "walker.unrecorded",
                    c.walks_unrecorded,
                    "count",
                    "walks priced without knowing the PTE addresses",
                ),
                s(
                    "bpred.cond_branches",
                    b.cond_branches,
                    "count",
                    "conditional branches",
                ),
                s(
                    "bpred.cond_mispredicts",
                    b.cond_mispredicts,
                    "count",
                    "conditional branches mispredicted",
                ),
                s(
                    "bpred.jumps",
                    b.jumps,
                    "count",
                    "jumps (direct, indirect, calls, returns)",
                ),
                s(
                    "bpred.jump_mispredicts",
                    b.jump_mispredicts,
                    "count",
                    "jumps whose target the BTB or RAS did not predict",
                ),
                s(
                    "bpred.calls",
                    b.calls,
                    "count",
                    "jumps hinted as calls (rd = x1 or x5): they push the return-address stack",
                ),
                s(
                    "bpred.returns",
                    b.returns,
                    "count",
                    "jumps hinted as returns (rs1 = x1 or x5, rd not): they pop it",
                ),
                s(
                    "bpred.return_mispredicts",
                    b.return_mispredicts,
                    "count",
                    "returns whose target was not predicted",
                ),
                s(
                    "bpred.ras_underflows",
                    b.ras_underflows,
                    "count",
                    "returns that found the return-address stack empty (the BTB predicted them)",
                ),
                s(
                    "bpred.decode_redirects",
                    b.decode_redirects,
                    "count",
                    "direct jumps the BTB missed, sent to their target by decode (not mispredictions)",
                ),
                s(
                    "bpred.mispredict_cycles",
                    (b.cond_mispredicts + b.jump_mispredicts) * self.mispredict,
                    "cycles",
                    "cycles lost to mispredictions (in fetch)",
                ),
                s(
                    "mmio.accesses",
                    c.mmio_accesses,
                    "count",
                    "device (MMIO) accesses",
                ),
                s(
                    "traps.taken",
                    c.traps,
                    "count",
                    "traps taken (exceptions and interrupts)",
                ),
                s(
                    "traps.interrupts",
                    c.interrupts,
                    "count",
                    "interrupts taken",
                ),
                s(
                    "traps.ipis",
                    c.ipis,
                    "count",
                    "software interrupts (IPIs) taken",
                ),
                s(
                    "csr.serialising_writes",
                    c.csr_writes_serialising,
                    "count",
                    "CSR writes (each drains the pipeline)",
                ),
                s(
                    "fence_i",
                    c.fence_i,
                    "count",
                    "fence.i executed (flushes the L1 I-cache)",
                ),
                s(
                    "sfence_vma",
                    c.sfence_vma,
                    "count",
                    "sfence.vma executed (flushes the TLBs)",
                ),
                s(
                    "satp_writes",
                    c.satp_writes,
                    "count",
                    "satp writes (flush the TLBs)",
                ),
                s("wfi", c.wfi, "count", "WFI executed"),
            ],
        }
    }
}

/// An L1's hit in any way as [`InlineL1`] describes it, where the cache
/// is one it describes and its keys are kept (the update writes the
/// set's); the cache at `at` in the model.
fn any_way(c: &Cache, keys: &MruKeys, at: usize) -> Option<InlineL1> {
    c.inline_any_way()
        .filter(|_| keys.layout().1 + 1 == c.sets() as u64)
        .map(|clock| InlineL1 { clock }.moved(at))
}

impl TimingModel for InOrder {
    // The single-issue core: its `insn` is a table lookup and its same-
    // line fetches and data accesses are the fast paths `inline_hooks`
    // describes. (The pipelined core's issue state is not described.)
    #[inline(always)]
    fn hooks_inlinable(&self) -> bool {
        self.pipe.is_none() && !self.store_to_load
    }

    fn inline_hooks(&self) -> Option<InlineHooks> {
        if !self.hooks_inlinable() {
            return None;
        }
        use std::mem::offset_of;
        Some(InlineHooks {
            fetch_line_mask: self.iline_mask,
            fetch_last_line: offset_of!(InOrder, last_iline),
            walk_pending: offset_of!(InOrder, pending_n),
            insn_cost: std::array::from_fn(|i| {
                (self.cost[i] & (SIDE_EFFECT | PIPELINED) == 0).then_some(self.cost[i])
            }),
            insn_counts: offset_of!(InOrder, class_counts),
            last_class: offset_of!(InOrder, last_class),
            mem_shift: self.dshift as u8,
            mem_tlb: self.dtlb.inline(offset_of!(InOrder, dtlb)),
            mem_keys: offset_of!(InOrder, l1d_keys) + self.l1d_keys.layout().0,
            mem_key_mask: self.l1d_keys.layout().1,
            mem_translating: offset_of!(InOrder, translating),
            mem_counts: offset_of!(InOrder, same_line),
            mem_cost: self.l1d_lat,
            // (the keys must be kept: the update writes the set's)
            mem_any_way: any_way(&self.l1d, &self.l1d_keys, offset_of!(InOrder, l1d)),
            fetch_new_line: Some(InlineFetch {
                shift: self.ishift as u8,
                tlb: self.itlb.inline(offset_of!(InOrder, itlb)),
                keys: offset_of!(InOrder, l1i_keys) + self.l1i_keys.layout().0,
                key_mask: self.l1i_keys.layout().1,
                reads: offset_of!(InOrder, l1i) + Cache::read_accesses_offset(),
                tlb_accesses: offset_of!(InOrder, itlb) + Tlb::accesses_offset(),
                cycles: offset_of!(InOrder, state) + 8 * FETCH,
                cost: self.l1i_lat,
                any_way: any_way(&self.l1i, &self.l1i_keys, offset_of!(InOrder, l1i)),
            }),
            branch: self.bp.inline_branch().map(|b| {
                let bp = offset_of!(InOrder, bp);
                InlineBranch {
                    history: bp + b.history,
                    branches: bp + b.branches,
                    mispredicts: bp + b.mispredicts,
                    fetch_cycles: offset_of!(InOrder, state) + 8 * FETCH,
                    mispredict: self.mispredict,
                    taken_penalty: self.taken_penalty,
                    ..b
                }
            }),
            // (a hit costs the taken bubble with or without a decode
            // redirect's penalty for misses)
            direct_jump: Some({
                let j = self.bp.inline_jump();
                InlineJump {
                    jumps: offset_of!(InOrder, bp) + j.jumps,
                    cycles: offset_of!(InOrder, state) + 8 * FETCH,
                    cost: self.taken_penalty,
                    ..j
                }
            }),
            // (a predicted jump costs the taken bubble)
            jalr: self.bp.inline_jalr().map(|r| InlineJalr {
                cycles: offset_of!(InOrder, state) + 8 * FETCH,
                cost: self.taken_penalty,
                mispredict: self.mispredict,
                ..r.moved(offset_of!(InOrder, bp))
            }),
            // (only the pipelined core's divider, not described here,
            // takes its time from the operands)
            divide_inert: true,
        })
    }

    #[inline(always)]
    fn inline_branch_table(&mut self) -> u64 {
        self.bp.counter_table()
    }

    #[inline(always)]
    fn inline_jump_table(&mut self) -> u64 {
        self.bp.btb_table()
    }

    #[inline(always)]
    fn inline_return_stack(&mut self) -> u64 {
        self.bp.ras_stack()
    }

    #[inline(always)]
    fn inline_tlb_entries(&mut self) -> [u64; 2] {
        [self.itlb.entries_addr(), self.dtlb.entries_addr()]
    }

    #[inline(always)]
    fn inline_l1_sets(&mut self) -> [[u64; 2]; 2] {
        [self.l1i.sets_addr(), self.l1d.sets_addr()]
    }

    #[inline(always)]
    fn fetch(&mut self, pc: u64, pa: u64, _len: u8) -> u64 {
        // (testing the line first, as translated code does, made the
        // block interpreter's loop longer elsewhere)
        if self.pending_n > 0 {
            return self.fetch_after_walk(pc, pa);
        }
        self.fetch_plain(pc, pa)
    }

    #[inline(always)]
    fn insn(&mut self, _pc: u64, class: InsnClass, ops: Operands) -> u64 {
        self.last_class = class;
        let i = class_index(class);
        self.class_counts[i] += 1;
        let cost = self.cost[i];
        if cost & (SIDE_EFFECT | PIPELINED) != 0 {
            return self.insn_flagged(class, ops, cost);
        }
        cost
    }

    #[inline(always)]
    fn mem(&mut self, va: u64, pa: u64, size: u8, kind: MemKind, mmio: bool) -> u64 {
        let write = match kind {
            MemKind::Load | MemKind::Fetch => false,
            MemKind::Store => true,
            MemKind::Walk => {
                // a walk of another page: the one pending is complete
                let walked = if self.pending_n > 0 && (va ^ self.pending_va) >> 12 != 0 {
                    self.finish_walk()
                } else {
                    0
                };
                if self.pending_n < PENDING_MAX {
                    self.pending[self.pending_n] = pa;
                    self.pending_n += 1;
                }
                self.last_iline |= 1;
                self.pending_va = va;
                return self.charged(walked);
            }
        };
        if self.pending_n > 0 {
            return self.mem_after_walk(va, pa, size, write, mmio);
        }
        self.mem_plain(va, pa, size, write, mmio)
    }

    fn fetch_absent(&mut self, pc: u64, pa: u64, _len: u8) -> u64 {
        debug_assert!(self.pending_n == 0 && !self.l1i.contains(pa));
        debug_assert!(pa & self.iline_mask != self.last_iline);
        // (`fetch`'s I-TLB test is a hit on the most recent entry, which
        // translated code's made it: only its count is left)
        self.itlb.accesses += self.translating as u64;
        let c = self.fetch_new_line(pc, pa, self.translating, true);
        self.charged(c)
    }

    fn mem_absent(&mut self, va: u64, pa: u64, _size: u8, kind: MemKind) -> u64 {
        debug_assert!(self.pending_n == 0 && !self.l1d.contains(pa));
        let tlb_hit = self.translating;
        let c = self.mem_slow(va, pa, kind == MemKind::Store, false, tlb_hit, true);
        self.charged(c)
    }

    #[inline(always)]
    fn branch(&mut self, pc: u64, taken: bool, target: u64) -> u64 {
        let c = self.branch_inner(pc, taken, target);
        self.redirected(taken, c)
    }

    #[inline(always)]
    fn jump(&mut self, pc: u64, target: u64, hint: JumpHint, link: u64) -> u64 {
        let ok = self.bp.jump(pc, target, hint, link);
        let c = self.charge_redirect(true, ok);
        self.redirected(true, c)
    }

    #[inline(always)]
    fn direct_jump(&mut self, pc: u64, target: u64, hint: JumpHint, link: u64) -> u64 {
        let Some(penalty) = self.direct_miss_penalty else {
            return self.jump(pc, target, hint, link);
        };
        let c = if self.bp.direct_jump(pc, target, hint, link) {
            self.taken_penalty
        } else {
            penalty
        };
        self.state[FETCH] += c;
        self.redirected(true, c)
    }

    fn divide(&mut self, dividend: u64, divisor: u64, word: bool) {
        if let Some(p) = self.pipe.as_mut() {
            if p.cfg.div_early_out > 0 {
                let full = if word {
                    self.lat_extra[class_index(InsnClass::Div)] + 1
                } else {
                    p.cfg.div_double
                };
                let bits = |v: u64| 64 - v.leading_zeros() as u64;
                let quotient_bits = (bits(dividend) + 1).saturating_sub(bits(divisor));
                let latency = (p.cfg.div_early_out + quotient_bits).min(full);
                let r = p.last_t + latency;
                if p.last_dst != Operands::NONE {
                    p.ready[p.last_dst as usize] = r;
                }
                p.div_free = r - 1;
            }
        }
    }

    fn trap(&mut self, cause: u64, interrupt: bool) -> u64 {
        let c = self.trap_inner(cause, interrupt);
        if let Some(p) = self.pipe.as_mut() {
            p.advance(c);
            p.open = false;
        }
        c
    }

    fn trap_info(&mut self, t: &TrapInfo) {
        self.trap_info_inner(t)
    }

    fn xret(&mut self, _new_pc: u64, _from: u8, to: u8) -> u64 {
        self.prv = to;
        self.set_context();
        0
    }

    #[inline]
    fn csr(&mut self, _csr: u16, write: bool) -> u64 {
        let c = self.csr_inner(write);
        self.charged(c)
    }

    fn csr_write(&mut self, csr: u16, value: u64) {
        self.csr_write_inner(csr, value)
    }

    fn wfi(&mut self, _pc: u64) {
        self.c.wfi += 1;
    }

    fn hpm_counter(&self, _index: u16, sel: u64) -> u64 {
        self.hpm(sel)
    }
    fn hpm_events(&self) -> &'static [u64] {
        &event::SUPPORTED
    }

    fn model_stats(&self) -> Option<ModelStats> {
        Some(self.all_stats())
    }
    fn save_state(&self, shared: bool) -> Option<Result<Vec<u8>, String>> {
        let l2 = self.l2.borrow();
        let mut walks: Vec<(u64, WalkRec)> = self.walks.iter().map(|(k, v)| (*k, *v)).collect();
        walks.sort_by_key(|w| w.0); // the same state, the same bytes
        let learnt = Learnt {
            l1i: &self.l1i,
            l1d: &self.l1d,
            l2: shared.then_some(&*l2),
            itlb: &self.itlb,
            dtlb: &self.dtlb,
            l2tlb: self.l2tlb.as_ref(),
            bp: &self.bp,
            pipe: self.pipe.as_deref(),
            walks,
            walk_clock: self.walk_clock,
            pending: self.pending,
            pending_n: self.pending_n,
            pending_va: self.pending_va,
            ad_write: self.ad_write,
            // (saved as before the pending walk's bit was kept there: the
            // line, or u64::MAX for none)
            last_iline: if self.last_iline | 1 == u64::MAX {
                u64::MAX
            } else {
                self.last_iline & !1
            },
            prv: self.prv,
            levels: self.levels,
            translating: self.translating,
            last_class: self.last_class,
            class_counts: self.class_counts,
            same_line: self.same_line,
            state: self.state,
            mem_stall: self.mem_stall,
            c: self.c,
        };
        Some(hs_snapshot::state::encode(&learnt))
    }
    fn restore_state(&mut self, data: &[u8], shared: bool) -> Result<(), String> {
        let l: Learnt<Cache, Tlb, L2Tlb, Predictor, Pipe> = hs_snapshot::state::decode(data)?;
        let shape_ok = l.l1i.same_shape(&self.l1i)
            && l.l1d.same_shape(&self.l1d)
            && l.l2
                .as_ref()
                .is_none_or(|c| c.same_shape(&self.l2.borrow()))
            && l.l2.is_some() == shared
            && l.itlb.same_shape(&self.itlb)
            && l.dtlb.same_shape(&self.dtlb)
            && l.l2tlb.is_some() == self.l2tlb.is_some()
            && l.l2tlb
                .as_ref()
                .zip(self.l2tlb.as_ref())
                .is_none_or(|(saved, mine)| mine.same_shape(saved))
            && l.bp.same_shape(&self.bp)
            && l.pipe.is_some() == self.pipe.is_some()
            && l.pipe.as_ref().is_none_or(|p| {
                let reg = |r: u8| r == Operands::NONE || (r as usize) < p.ready.len();
                reg(p.last_dst) && reg(p.open_dst)
            })
            && l.walks
                .iter()
                .all(|(_, w)| w.n as usize <= w.ptes.len() && (w.n > 0 || !w.wrote))
            && l.pending_n <= PENDING_MAX;
        if !shape_ok {
            return Err(
                "the saved caches, TLBs, predictor or pipeline are not this machine description's"
                    .into(),
            );
        }
        self.l1i = l.l1i;
        self.l1d = l.l1d;
        if let Some(l2) = l.l2 {
            *self.l2.borrow_mut() = l2;
        }
        self.itlb = l.itlb;
        self.dtlb = l.dtlb;
        self.l2tlb = l.l2tlb;
        self.bp = l.bp;
        if let (Some(mine), Some(mut saved)) = (self.pipe.as_mut(), l.pipe) {
            std::mem::swap(&mut saved.cfg, &mut mine.cfg);
            **mine = saved;
        }
        self.walks = l.walks.into_iter().collect();
        self.walk_clock = l.walk_clock;
        self.pending = l.pending;
        self.pending_n = l.pending_n;
        self.pending_va = l.pending_va;
        self.ad_write = l.ad_write;
        self.last_iline = l.last_iline & !1 | (l.pending_n > 0) as u64;
        // what is derived from the caches and TLBs
        self.itlb.refresh_recent();
        self.dtlb.refresh_recent();
        self.l1d_keys.rebuild(&self.l1d);
        self.l1i_keys.rebuild(&self.l1i);
        self.prv = l.prv;
        self.levels = l.levels;
        self.translating = l.translating;
        self.last_class = l.last_class;
        self.class_counts = l.class_counts;
        self.same_line = l.same_line;
        self.state = l.state;
        self.mem_stall = l.mem_stall;
        self.c = l.c;
        Ok(())
    }
}

/// What an in-order model has learnt and counted: everything in it but its
/// parameters (which come from the machine description). Borrowed to save,
/// owned to restore.
#[derive(serde::Serialize, serde::Deserialize)]
struct Learnt<C, T, U, P, Q> {
    l1i: C,
    l1d: C,
    l2: Option<C>,
    itlb: T,
    dtlb: T,
    l2tlb: Option<U>,
    bp: P,
    pipe: Option<Q>,
    walks: Vec<(u64, WalkRec)>,
    walk_clock: u64,
    pending: [u64; PENDING_MAX],
    pending_n: usize,
    pending_va: u64,
    ad_write: u64,
    last_iline: u64,
    prv: u8,
    levels: u32,
    translating: bool,
    last_class: InsnClass,
    class_counts: [u64; CLASSES],
    same_line: [u64; 4],
    state: [u64; 6],
    mem_stall: u64,
    c: Counts,
}

impl InOrder {
    /// A load or store with no walk pending.
    #[inline(always)]
    fn mem_plain(&mut self, va: u64, pa: u64, size: u8, write: bool, mmio: bool) -> u64 {
        let wait = if self.store_to_load && !mmio {
            self.store_load_order(va, size, write)
        } else {
            0
        };
        // nothing pending, a TLB hit found without a search (its LRU
        // update made) and an L1 hit: only counted, here (`same_line`),
        // whichever way hit. Translated code tests the most recent way
        // inline, where the hit changes nothing.
        let line = pa >> self.dshift;
        let tlb_hit = self.translating && self.dtlb.recent_or_indexed(va);
        // (`looked`: the L1D was searched for the line, which is absent
        // when the test fails)
        let looked = !mmio && (tlb_hit || !self.translating);
        if looked && (self.l1d_keys.holds(line, write) || self.l1d_hit(line, write)) {
            self.same_line[(self.translating as usize) << 1 | write as usize] += 1;
            return self.charged(self.l1d_lat + wait);
        }
        // else a TLB or L1 miss (or MMIO)
        let c = self.mem_slow(va, pa, write, mmio, tlb_hit, looked);
        self.charged(c + wait)
    }

    /// An L1D hit in any way, uncounted (see `mem_plain`), with its
    /// replacement update and the most recent way's copy kept.
    #[inline(always)]
    fn l1d_hit(&mut self, line: u64, write: bool) -> bool {
        if !self.l1d.hit_uncounted(line, write) {
            return false;
        }
        self.l1d_keys.refresh(&self.l1d, line);
        true
    }

    /// A data access the fast path in `mem` did not cover.
    ///
    /// `tlb_hit`: a D-TLB hit found without a search, counted here (the
    /// same-line fold counts the fast path's); `absent`: the L1D was
    /// searched for the line and does not hold it.
    #[inline(never)]
    fn mem_slow(
        &mut self,
        va: u64,
        pa: u64,
        write: bool,
        mmio: bool,
        tlb_hit: bool,
        absent: bool,
    ) -> u64 {
        self.dtlb.accesses += tlb_hit as u64;
        let mut cycles = 0;
        let mut walked = false;
        if self.translating {
            let hit = tlb_hit || self.dtlb.lookup(va);
            self.c.dtlb_write_accesses += write as u64;
            if !hit {
                // (the walk goes through the L1D)
                walked = true;
                cycles += self.tlb_miss(false, va, write);
            }
        }
        if mmio {
            self.c.mmio_accesses += 1;
            self.state[MEM] += self.mmio;
            return cycles + self.mmio;
        }
        let (c, stall) = if absent && !walked {
            self.data_access_absent(pa, write)
        } else {
            self.data_access(pa, write)
        };
        self.state[MEM] += c;
        self.mem_stall += stall;
        cycles + c
    }

    #[inline(always)]
    fn branch_inner(&mut self, pc: u64, taken: bool, target: u64) -> u64 {
        let ok = if self.last_class == InsnClass::Branch {
            self.bp.branch(pc, taken)
        } else {
            // a caller that reports a jump as a branch gives no hint
            self.bp
                .jump(pc, target, JumpHint::Plain, pc.wrapping_add(4))
        };
        self.charge_redirect(taken, ok)
    }

    /// A taken branch or jump ends its issue cycle (its target is fetched
    /// anew); the redirect's cycles move the pipelined clock.
    #[inline(always)]
    fn redirected(&mut self, taken: bool, c: u64) -> u64 {
        if let Some(p) = self.pipe.as_mut() {
            p.advance(c);
            if taken {
                p.open = false;
            }
        }
        c
    }

    /// Fetch cycles of a resolved branch or jump: the taken bubble, or the
    /// mispredict penalty.
    #[inline(always)]
    fn charge_redirect(&mut self, taken: bool, ok: bool) -> u64 {
        let bubble = if taken { self.taken_penalty } else { 0 };
        let cycles = if ok { bubble } else { self.mispredict };
        self.state[FETCH] += cycles;
        cycles
    }

    fn trap_inner(&mut self, cause: u64, interrupt: bool) -> u64 {
        self.c.traps += 1;
        let mut cycles = self.trap_entry;
        if interrupt {
            self.c.interrupts += 1;
            if cause == IRQ_S_SOFT || cause == IRQ_M_SOFT {
                self.c.ipis += 1;
                cycles += self.ipi_delivery;
            } else {
                cycles += self.irq_delivery;
            }
        }
        self.state[EXECUTE] += cycles;
        if self.pending_n > 0 {
            // a walk that ended in a fault still made its accesses
            let (_, r) = self.take_pending();
            self.c.walks += 1;
            cycles += self.replay_walk(&r);
        }
        cycles
    }

    fn trap_info_inner(&mut self, t: &TrapInfo) {
        // the hart charged one cycle for a trap no instruction fetch preceded
        if t.interrupt || t.cause == CAUSE_FETCH_ACCESS || t.cause == CAUSE_FETCH_PAGE_FAULT {
            self.state[EXECUTE] += 1;
            self.charged(1);
        }
        self.prv = t.to;
        self.set_context();
    }

    fn csr_inner(&mut self, write: bool) -> u64 {
        let cycles = if write {
            self.c.csr_writes_serialising += 1;
            self.csr_write_extra
        } else {
            self.csr_read_extra
        };
        self.state[EXECUTE] += cycles;
        cycles
    }

    fn csr_write_inner(&mut self, csr: u16, value: u64) {
        if csr == CSR_SATP {
            self.c.satp_writes += 1;
            self.levels = match value >> 60 {
                8 => 3,
                9 => 4,
                _ => 0,
            };
            self.flush_tlbs();
            self.set_context();
        }
    }

    fn hpm(&self, sel: u64) -> u64 {
        use event::*;
        let l1d = &self.l1d_counts();
        let b = &self.bp.counts;
        let c = &self.c;
        match sel {
            CPU_CYCLES => self.busy_cycles(),
            INSTRUCTIONS => self.fetches(),
            CACHE_REFERENCES => c.l2_read_accesses + c.l2_write_accesses,
            CACHE_MISSES => c.l2_read_misses + c.l2_write_misses,
            BRANCH_INSTRUCTIONS if self.branches_conditional => b.cond_branches,
            BRANCH_INSTRUCTIONS => b.cond_branches + b.jumps,
            BRANCH_MISSES => b.cond_mispredicts + b.jump_mispredicts,
            STALLED_CYCLES_FRONTEND => self.state[FETCH], // fetch holds no per-instruction part
            STALLED_CYCLES_BACKEND => self.mem_stall,
            s if s == cache(L1D, READ, ACCESS) => l1d.read_accesses,
            s if s == cache(L1D, READ, MISS) => l1d.read_misses,
            s if s == cache(L1D, WRITE, ACCESS) => l1d.write_accesses,
            s if s == cache(L1D, WRITE, MISS) => l1d.write_misses,
            s if s == cache(L1I, READ, ACCESS) => self.fetches(),
            s if s == cache(L1I, READ, MISS) => self.l1i.counts.read_misses,
            s if s == cache(LL, READ, ACCESS) => c.l2_read_accesses,
            s if s == cache(LL, READ, MISS) => c.l2_read_misses,
            s if s == cache(LL, WRITE, ACCESS) => c.l2_write_accesses,
            s if s == cache(LL, WRITE, MISS) => c.l2_write_misses,
            s if s == cache(DTLB, READ, ACCESS) => self.dtlb_accesses().0 - self.dtlb_accesses().1,
            s if s == cache(DTLB, READ, MISS) => {
                self.dtlb.misses.saturating_sub(c.dtlb_write_misses)
            }
            s if s == cache(DTLB, WRITE, ACCESS) => self.dtlb_accesses().1,
            s if s == cache(DTLB, WRITE, MISS) => c.dtlb_write_misses,
            s if s == cache(ITLB, READ, ACCESS) => self.itlb.accesses,
            s if s == cache(ITLB, READ, MISS) => self.itlb.misses,
            s if s == cache(BPU, READ, ACCESS) => b.cond_branches + b.jumps,
            s if s == cache(BPU, READ, MISS) => b.cond_mispredicts + b.jump_mispredicts,
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desc::{MachineDesc, ModelDesc};

    fn cfg() -> InOrderConfig {
        let p =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../machines/inorder.toml");
        match MachineDesc::load(&p).unwrap().model {
            ModelDesc::InOrder(c) => c,
            ModelDesc::Atomic => panic!("inorder preset is atomic"),
        }
    }

    fn model() -> (InOrder, InOrderConfig) {
        let c = cfg();
        (InOrderFactory::new(&c).build(), c)
    }

    const RAM: u64 = 0x8000_0000;

    #[test]
    fn walk_record_keys_spread_over_the_maps_buckets() {
        use std::hash::BuildHasher;
        // consecutive 4 KiB pages and 2 MiB pages, shift in the low bits:
        // the low 12 bits of their hashes (a map's bucket index up to 4,096
        // buckets) must nearly all differ
        for (shift, n) in [(12u32, 4096u64), (21, 4096)] {
            let buckets: std::collections::HashSet<u64> = (0..n)
                .map(|i| PageKeys::default().hash_one((RAM + (i << shift)) | shift as u64) & 0xfff)
                .collect();
            assert!(
                buckets.len() as u64 > n / 2,
                "pages of 2^{shift} bytes fall into {} of {n} buckets",
                buckets.len()
            );
        }
    }

    #[test]
    fn loads_pay_each_level_they_reach() {
        let (mut m, c) = model();
        let (l1, l2, mem) = (c.l1d.latency, c.l2.latency, c.memory_latency);
        assert_eq!(m.mem(RAM, RAM, 8, MemKind::Load, false), l1 + l2 + mem);
        assert_eq!(m.mem(RAM + 8, RAM + 8, 8, MemKind::Load, false), l1);
        // ways + 1 lines in one L1 set: the first leaves the L1, stays in the L2
        let stride = c.l1d.sets() * c.l1d.line;
        for k in 1..=c.l1d.ways {
            m.mem(RAM + k * stride, RAM + k * stride, 8, MemKind::Store, false);
        }
        assert_eq!(m.mem(RAM, RAM, 8, MemKind::Load, false), l1 + l2);
        assert_eq!(
            m.mem(0x1000_0000, 0x1000_0000, 1, MemKind::Store, true),
            c.devices.mmio
        );
        let s = m.model_stats().unwrap();
        assert_eq!(s.get("dcache.read_misses"), Some(2));
        assert_eq!(s.get("dcache.write_misses"), Some(c.l1d.ways));
        assert_eq!(s.get("l2.read_misses"), Some(1 + c.l1d.ways));
        assert_eq!(s.get("mmio.accesses"), Some(1));
        assert_eq!(
            s.get("cycles.mem_stall"),
            Some(2 * l2 + mem + c.l1d.ways * (l2 + mem))
        );
        assert_eq!(
            m.hpm_counter(3, event::cache(event::L1D, event::READ, event::MISS)),
            2
        );
        assert_eq!(m.hpm_counter(3, event::CACHE_MISSES), 1 + c.l1d.ways);
        assert_eq!(m.hpm_counter(3, 0), 0);
    }

    #[test]
    fn fetches_pay_the_icache_once_per_line() {
        let (mut m, c) = model();
        let wb = c.writeback;
        let miss = c.l1i.latency + c.l2.latency + c.memory_latency;
        // the hart calls insn() after every fetch(); writeback comes with insn()
        let mut step = |pc: u64, len: u8| {
            let f = m.fetch(pc, pc, len);
            assert_eq!(
                m.insn(pc, InsnClass::Alu, Operands::EMPTY),
                c.latency.alu - 1 + wb
            );
            f
        };
        assert_eq!(step(RAM, 4), miss);
        assert_eq!(step(RAM + 4, 4), 0);
        assert_eq!(step(RAM + c.l1i.line, 2), miss);
        assert_eq!(step(RAM, 4), c.l1i.latency);
        // fence.i empties the I-cache
        assert_eq!(
            m.insn(RAM, InsnClass::FenceI, Operands::EMPTY),
            c.latency.fence_i - 1 + wb
        );
        assert_eq!(m.fetch(RAM, RAM, 4), c.l1i.latency + c.l2.latency);
        m.insn(RAM, InsnClass::Alu, Operands::EMPTY);
        let s = m.model_stats().unwrap();
        assert_eq!(
            (s.get("icache.misses"), s.get("insts.fetched")),
            (Some(3), Some(6))
        );
    }

    /// Enter S-mode with Sv39 on.
    /// The u64 `off` bytes into the model (an offset it gave for itself).
    fn u64_at(m: &InOrder, off: usize) -> u64 {
        // SAFETY: offsets of u64 fields, from `inline_hooks`
        unsafe {
            (m as *const InOrder as *const u8)
                .add(off)
                .cast::<u64>()
                .read_unaligned()
        }
    }

    /// Store `v` as the u64 `off` bytes into the model.
    fn set_u64(m: &mut InOrder, off: usize, v: u64) {
        // SAFETY: as `u64_at`
        unsafe {
            (m as *mut InOrder as *mut u8)
                .add(off)
                .cast::<u64>()
                .write_unaligned(v)
        }
    }

    /// Add `v` to the u64 `off` bytes into the model.
    fn add_u64(m: &mut InOrder, off: usize, v: u64) {
        set_u64(m, off, u64_at(m, off) + v);
    }

    fn translating(m: &mut InOrder) {
        m.csr_write(CSR_SATP, 8 << 60);
        m.xret(0, 3, 1);
    }

    const INSN_CLASSES_ALL: [InsnClass; CLASSES] = {
        use InsnClass::*;
        [
            Alu, Branch, Jump, Load, Store, Amo, Mul, Div, FpAdd, FpMul, FpDiv, FpSqrt, FpFma,
            FpMisc, Csr, Fence, FenceI, SfenceVma, Ecall, Xret, Wfi, System,
        ]
    };

    /// What translated code does for an L1 `l1` describes (its sets and
    /// most recent ways at `sets`, its keys at `keys` under `mask`) where
    /// a key test failed, through raw memory: true, having made the hit's
    /// update, when a way holds `line` (and it is not a read from the
    /// most recent way, which the key test would have passed).
    fn inline_l1_step(
        m: &mut InOrder,
        l1: &crate::InlineL1,
        (keys, mask): (usize, u64),
        sets: [u64; 2],
        line: u64,
        store: bool,
    ) -> bool {
        let base = m as *mut InOrder as *mut u8;
        let set = line & mask;
        // SAFETY: offsets and addresses the model gave for itself
        unsafe {
            let ways = (sets[0] as *mut u64).add(8 * set as usize);
            let Some(w) = (0..4).find(|&w| *ways.add(w) == line) else {
                return false;
            };
            let stamp = ways.add(4 + w);
            let mru = (sets[1] as *mut u8).add(set as usize);
            if *mru as usize == w {
                assert!(store, "a load from the most recent way passes the key test");
                *stamp |= 1;
            } else {
                let clock = base.add(l1.clock).cast::<u64>();
                clock.write_unaligned(clock.read_unaligned() + 1);
                *stamp = clock.read_unaligned() << 1 | *stamp & 1 | store as u64;
                *mru = w as u8;
            }
            let key = base.add(keys + 8 * set as usize).cast::<u64>();
            key.write_unaligned(2 * line + (*stamp & 1));
            true
        }
    }

    /// `mem_absent` is `mem` (its cost and every change it makes) where
    /// translated code calls it: no walk pending, the D-TLB's test held
    /// (its update made, as translated code makes it) or not translating,
    /// and the line in no way of its L1D set; over loads and stores to
    /// eight lines of each of four sets (misses, write-backs), not
    /// translating and translating through three virtual pages.
    #[test]
    fn mem_absent_is_mem_where_the_line_is_in_no_way_of_its_set() {
        let (mut m, _) = model();
        let (mut copy, _) = model();
        let ih = m.inline_hooks().expect("shortcuts");
        let mut rnd = crate::test_rng(0x2545_f491_4f6c_dd1d);
        let mut absent = [0u32; 2];
        for step in 0..20_000 {
            if step == 5_000 {
                translating(&mut m);
            }
            let off = (rnd(8) << 12) + rnd(4) * 64 + rnd(8) * 8;
            let (pa, va) = (RAM + off, 0x4000_0000 * (1 + rnd(3)) + off);
            let kind = if rnd(2) == 0 {
                MemKind::Load
            } else {
                MemKind::Store
            };
            let translating = m.translating;
            let tlb = !translating || {
                let entries = m.inline_tlb_entries()[1];
                inline_tlb_step(&mut m, &ih.mem_tlb, entries, va).0
            };
            if !tlb || m.pending_n != 0 || m.l1d.contains(pa) {
                m.mem(va, pa, 8, kind, false);
                continue;
            }
            let saved = m.save_state(true).unwrap().unwrap();
            copy.restore_state(&saved, true).unwrap();
            let c = m.mem(va, pa, 8, kind, false);
            assert_eq!(copy.mem_absent(va, pa, 8, kind), c, "step {step}");
            assert_eq!(
                copy.save_state(true).unwrap().unwrap(),
                m.save_state(true).unwrap().unwrap(),
                "step {step}"
            );
            absent[translating as usize] += 1;
        }
        assert!(absent.iter().all(|&n| n > 1_000), "{absent:?} absent");
        assert!(m.l1d.counts.writebacks > 1_000);
    }

    /// Where the shortcuts say `divide` is inert it changes nothing, on
    /// the single-issue core they are described for; the pipelined core
    /// with an early-out divider, whose `divide` does change its state,
    /// offers none.
    #[test]
    fn divide_is_inert_where_the_shortcuts_say_so() {
        let (mut m, _) = model();
        assert!(m.inline_hooks().expect("shortcuts").divide_inert);
        let before = m.save_state(true).unwrap().unwrap();
        for (a, b) in [(7, 0), (u64::MAX, 3), (1 << 40, 1 << 3)] {
            m.divide(a, b, false);
            m.divide(a, b, true);
        }
        assert_eq!(m.save_state(true).unwrap().unwrap(), before);
        let (mut u, _) = u74();
        assert!(u.inline_hooks().is_none());
        warm(&mut u);
        issue(&mut u, InsnClass::Div, x(5, 6, 7));
        let before = u.save_state(true).unwrap().unwrap();
        u.divide(1 << 40, 3, false);
        assert_ne!(u.save_state(true).unwrap().unwrap(), before);
    }

    /// `fetch_absent` is `fetch` (its cost and every change it makes)
    /// where translated code calls it: no walk pending, a line other than
    /// the last, the I-TLB's test held (its update made, as translated
    /// code makes it) or not translating, and the line in no way of its
    /// L1I set; over fetches from eight lines of each of four sets, not
    /// translating and translating through three virtual pages.
    #[test]
    fn fetch_absent_is_fetch_where_the_line_is_in_no_way_of_its_set() {
        let (mut m, _) = model();
        let (mut copy, _) = model();
        let ih = m.inline_hooks().expect("shortcuts");
        let f = ih.fetch_new_line.expect("a new-line shortcut");
        let mut rnd = crate::test_rng(0x9e37_79b9_7f4a_7c15);
        let mut absent = [0u32; 2];
        for step in 0..20_000 {
            if step == 5_000 {
                translating(&mut m);
            }
            let off = (rnd(8) << 12) + rnd(4) * 64 + rnd(16) * 4;
            let (pa, pc) = (RAM + off, 0x4000_0000 * (1 + rnd(3)) + off);
            let translating = m.translating;
            let new_line = pa & m.iline_mask != m.last_iline;
            let tlb = !new_line || !translating || {
                let entries = m.inline_tlb_entries()[0];
                inline_tlb_step(&mut m, &f.tlb, entries, pc).0
            };
            if !new_line || !tlb || m.pending_n != 0 || m.l1i.contains(pa) {
                m.fetch(pc, pa, 4);
                continue;
            }
            let saved = m.save_state(true).unwrap().unwrap();
            copy.restore_state(&saved, true).unwrap();
            let c = m.fetch(pc, pa, 4);
            assert_eq!(copy.fetch_absent(pc, pa, 4), c, "step {step}");
            assert_eq!(
                copy.save_state(true).unwrap().unwrap(),
                m.save_state(true).unwrap().unwrap(),
                "step {step}"
            );
            assert_eq!(copy.all_stats(), m.all_stats(), "step {step}");
            absent[translating as usize] += 1;
        }
        assert!(absent.iter().all(|&n| n > 1_000), "{absent:?} absent");
    }

    /// What translated code does for a TLB `tlb` describes (its entries at
    /// `entries`) before a shortcut's test, through raw memory: true when
    /// the most recent entry then holds `va` (an entry that held it
    /// otherwise has been made the most recent as `InlineTlb` says); the
    /// second bool, whether it did so through the index.
    fn inline_tlb_step(
        m: &mut InOrder,
        tlb: &crate::InlineTlb,
        entries: u64,
        va: u64,
    ) -> (bool, bool) {
        let base = m as *mut InOrder as *mut u8;
        // SAFETY: offsets and addresses the model gave for itself
        unsafe {
            let at = |off: usize| base.add(off).cast::<u64>();
            let holds = |r: usize| va | at(r).read_unaligned() == at(r + 8).read_unaligned();
            let (first, second) = (tlb.recent, tlb.recent + 24);
            if holds(first) {
                return (true, false);
            }
            if holds(second) {
                std::ptr::swap_nonoverlapping(base.add(first), base.add(second), 24);
                return (true, false);
            }
            let slot = ((va >> 12) % 256) as usize;
            let i = base
                .add(tlb.index + 2 * slot)
                .cast::<u16>()
                .read_unaligned() as usize;
            assert!(i < tlb.entries, "a hint names entry {i} of {}", tlb.entries);
            let e = (entries as *mut u64).add(3 * i);
            if (va & !*e.add(1)) | 1 != *e {
                return (false, false);
            }
            let stamp =
                |r: usize| (entries as *mut u64).add(3 * at(r + 16).read_unaligned() as usize + 2);
            let clock = at(tlb.clock);
            if at(first + 16).read_unaligned() != at(second + 16).read_unaligned() {
                *stamp(second) = clock.read_unaligned() + 1;
                *stamp(first) = clock.read_unaligned() + 2;
                clock.write_unaligned(clock.read_unaligned() + 2);
            }
            clock.write_unaligned(clock.read_unaligned() + 1);
            *e.add(2) = clock.read_unaligned();
            std::ptr::copy_nonoverlapping(base.add(first), base.add(second), 24);
            at(first).write_unaligned(*e.add(1));
            at(first + 8).write_unaligned((*e & !1) | *e.add(1));
            at(first + 16).write_unaligned(i as u64);
            (true, true)
        }
    }

    /// What translated code takes from `InlineHooks` to test a later
    /// access's line alone: `branch`, `jump` and `direct_jump` (and
    /// `insn` of a branch) leave everything the data shortcut tests as it
    /// was — the D-TLB's two recent records, the L1D's keys, the
    /// translating byte and the pending walk — over a mixed run of loads,
    /// stores (with TLB misses) and jumps of every hint.
    #[test]
    fn branches_and_jumps_leave_what_the_data_shortcut_tests_alone() {
        let (mut m, _) = model();
        let ih = m
            .inline_hooks()
            .expect("the single-issue core has shortcuts");
        translating(&mut m);
        let tested = |m: &InOrder| -> Vec<u8> {
            let base = m as *const InOrder as *const u8;
            // SAFETY: offsets and sizes the model gave for itself
            let bytes = |off: usize, n: usize| unsafe {
                std::slice::from_raw_parts(base.add(off), n).to_vec()
            };
            let sets = ih.mem_key_mask as usize + 1;
            [
                bytes(ih.mem_tlb.recent, 48),
                bytes(ih.mem_keys, 8 * sets),
                bytes(ih.mem_translating, 1),
                bytes(ih.walk_pending, 8),
            ]
            .concat()
        };
        let mut rnd = crate::test_rng(0x51ed_270b_2e8f_3a4d);
        let hints = [
            JumpHint::Plain,
            JumpHint::Call,
            JumpHint::Return,
            JumpHint::ReturnCall,
        ];
        let (mut accesses, mut control) = (0, 0);
        for step in 0..20_000 {
            let (page, line) = (rnd(80) << 12, rnd(64) * 64);
            if rnd(2) == 0 {
                let kind = if rnd(3) == 0 {
                    MemKind::Store
                } else {
                    MemKind::Load
                };
                m.mem(0x4000_0000 + page + line, RAM + page + line, 8, kind, false);
                accesses += 1;
                continue;
            }
            let before = tested(&m);
            let pc = 0x8000_0000 + 2 * rnd(500);
            let target = pc + 0x40 * rnd(8);
            match rnd(3) {
                0 => {
                    m.insn(pc, InsnClass::Branch, Operands::EMPTY);
                    m.branch(pc, rnd(2) == 0, target);
                }
                1 => {
                    m.jump(pc, target, hints[rnd(4) as usize], pc + 4);
                }
                _ => {
                    m.direct_jump(pc, target, hints[rnd(2) as usize], pc + 4);
                }
            }
            control += 1;
            assert_eq!(tested(&m), before, "step {step}");
        }
        assert!(accesses > 5_000 && control > 5_000);
    }

    /// `InlineJalr` is the `jump` hook's own: over a run of calls (direct
    /// and indirect), returns (to the address their call pushed, now and
    /// then elsewhere) and plain jumps (mostly to one target a site, more
    /// sites than BTB entries), with the stack overflowing and
    /// underflowing, an indirect call or plain jump (always) and a return
    /// (where its condition holds as read through its offsets) returns
    /// the cost the shortcut gives and leaves the model exactly (by its
    /// saved state) as the shortcut's own change leaves a copy; a return
    /// to another address than the stack's top counts a mispredict.
    #[test]
    fn the_inline_jalr_is_exactly_what_the_jump_hook_does() {
        let (mut m, _) = model();
        let ih = m
            .inline_hooks()
            .expect("the single-issue core has shortcuts");
        let r = ih
            .jalr
            .expect("a predictor with a return-address stack has the inline jalr");
        let j = ih.direct_jump.expect("and the BTB's");
        let (mut copy, _) = model();
        // the stack's slot `top`, read and written through its address
        let slot = |m: &mut InOrder, top: u64| {
            assert!(top < r.depth, "top {top}");
            (m.inline_return_stack() + 8 * top) as *mut u64
        };
        let mut rnd = crate::test_rng(0x2545_f491_4f6c_dd1d);
        let mut links = Vec::new();
        // returns predicted, not, from the bottom slot; jumps hit, missed
        let mut held = [0u32; 5];
        for step in 0..5_000 {
            let pc = RAM + 4 * rnd(100);
            let target = if rnd(6) == 0 {
                RAM + 4 * rnd(1_000)
            } else {
                pc + 0x100
            };
            let saved = m.save_state(true).unwrap().unwrap();
            let (n, top) = (u64_at(&m, r.ras_len), u64_at(&m, r.ras_top));
            copy.restore_state(&saved, true).unwrap();
            match rnd(6) {
                0 => {
                    m.direct_jump(pc, target, JumpHint::Call, pc + 4);
                    links.push(pc + 4);
                }
                hint @ (1..=3) => {
                    let call = hint < 3;
                    let hint = if call {
                        JumpHint::Call
                    } else {
                        JumpHint::Plain
                    };
                    let entry =
                        (m.inline_jump_table() + 16 * ((pc >> 1) & j.index_mask)) as *mut u64;
                    // SAFETY: the BTB's entry for the pc, as `InlineJump` says
                    let hit = unsafe { *entry == pc | 1 && *entry.add(1) == target };
                    let c = m.jump(pc, target, hint, pc + 4);
                    let entry =
                        (copy.inline_jump_table() + 16 * ((pc >> 1) & j.index_mask)) as *mut u64;
                    unsafe { (*entry, *entry.add(1)) = (pc | 1, target) };
                    add_u64(&mut copy, r.jumps, 1);
                    if call {
                        links.push(pc + 4);
                        let t = if top + 1 == r.depth { 0 } else { top + 1 };
                        set_u64(&mut copy, r.ras_top, t);
                        unsafe { *slot(&mut copy, t) = pc + 4 };
                        set_u64(&mut copy, r.ras_len, (n + 1).min(r.depth));
                        add_u64(&mut copy, r.calls, 1);
                    }
                    let cost = if hit {
                        r.cost
                    } else {
                        add_u64(&mut copy, r.mispredicts, 1);
                        r.mispredict
                    };
                    add_u64(&mut copy, r.cycles, cost);
                    held[3 + !hit as usize] += 1;
                    assert_eq!(c, cost, "step {step}: {hint:?}, hit {hit}");
                    let got = m.save_state(true).unwrap().unwrap();
                    assert_eq!(got, copy.save_state(true).unwrap().unwrap(), "step {step}");
                }
                _ => {
                    let to = match links.pop() {
                        Some(link) if rnd(8) != 0 => link,
                        _ => target,
                    };
                    let predicted = n != 0 && unsafe { *slot(&mut m, top) == to };
                    let mispredicts = m.bp.counts.return_mispredicts;
                    let c = m.jump(pc, to, JumpHint::Return, pc + 4);
                    if !predicted {
                        // (an empty stack: the BTB's guess, whatever it is)
                        held[1] += 1;
                        assert!(
                            n == 0 || m.bp.counts.return_mispredicts == mispredicts + 1,
                            "step {step}: a return the stack did not predict"
                        );
                        continue;
                    }
                    held[0] += 1;
                    held[2] += (top == 0) as u32;
                    assert_eq!(c, r.cost, "step {step}: a predicted return");
                    set_u64(&mut copy, r.ras_len, n - 1);
                    let below = top.checked_sub(1).unwrap_or(r.depth - 1);
                    set_u64(&mut copy, r.ras_top, below);
                    add_u64(&mut copy, r.jumps, 1);
                    add_u64(&mut copy, r.returns, 1);
                    add_u64(&mut copy, r.cycles, r.cost);
                    let got = m.save_state(true).unwrap().unwrap();
                    assert_eq!(got, copy.save_state(true).unwrap().unwrap(), "step {step}");
                }
            }
        }
        assert!(
            held[0] > 500 && held[1..].iter().all(|&n| n > 100),
            "returns predicted, not, from the bottom slot; jumps hit, missed: {held:?}"
        );
    }

    /// What `inline_hooks` describes is the hooks' own fast paths: over a
    /// mixed run (fetches, instructions of every class, loads and stores
    /// over a few lines and pages, translating and not, page walks),
    /// wherever a shortcut's condition holds as read through its offsets,
    /// the hook returns the shortcut's cost and leaves the model exactly
    /// (by its saved state) as the shortcut's own change leaves a copy.
    #[test]
    fn the_inline_shortcuts_are_exactly_what_the_hooks_do() {
        let (mut m, _) = model();
        let ih = m
            .inline_hooks()
            .expect("the single-issue core has shortcuts");
        let (mut copy, _) = model();
        let u8_at =
            |m: &InOrder, off: usize| unsafe { *(m as *const InOrder as *const u8).add(off) };
        let bump = |m: &mut InOrder, off: usize| add_u64(m, off, 1);
        let mut rnd = crate::test_rng(0x9e37_79b9_7f4a_7c15u64);
        let mut held = [0u32; 11];
        let mut at = (0, 0, 0);
        let b = ih.branch.expect("a gshare predictor has the counter step");
        let f = ih
            .fetch_new_line
            .expect("the single-issue core has the new-line fetch");
        let j = ih
            .direct_jump
            .expect("the single-issue core has the plain jump's BTB hit");
        let (mut new_lines, mut jumps) = (0, 0);
        for step in 0..30_000 {
            if step == 10_000 {
                translating(&mut m);
            }
            // a few pages, each seen through three virtual pages; half the
            // time the line of the step before, now and then through
            // another virtual page (three TLB entries in turn: the two
            // most recent and one found through the index)
            if rnd(2) == 0 {
                if rnd(3) == 0 {
                    at.2 = (at.2 + 1 + rnd(2)) % 3;
                } else {
                    at = (rnd(3), rnd(4), rnd(3));
                }
            }
            let (page, line) = (at.0 << 12, at.1 * 64);
            let off = line + rnd(16) * 4;
            let pa = RAM + page + off;
            // (a gigabyte apart: whatever page size the walks give, three
            // TLB entries)
            let va = 0x4000_0000 + at.2 * 0x4000_0000 + page + off;
            // the copies the shortcuts test are the L1s' own state
            for set in 0..m.l1d.sets() {
                assert_eq!(
                    m.l1d_keys.keys[set],
                    m.l1d.mru_key(set),
                    "step {step}: set {set}"
                );
            }
            for set in 0..m.l1i.sets() {
                assert_eq!(
                    m.l1i_keys.keys[set],
                    m.l1i.mru_key(set),
                    "step {step}: L1I set {set}"
                );
            }
            let saved = m.save_state(true).unwrap().unwrap();
            match rnd(6) {
                5 => {
                    // a plain direct jump: more sites than BTB entries, each
                    // mostly to one target
                    let pc = 0x8000_0000 + 2 * rnd(200);
                    let target = pc + 0x100 + 0x40 * (rnd(8) == 0) as u64;
                    let entry = m.inline_jump_table() + 16 * ((pc >> 1) & j.index_mask);
                    let (tag, to) =
                        unsafe { (*(entry as *const u64), *((entry + 8) as *const u64)) };
                    let c = m.direct_jump(pc, target, JumpHint::Plain, pc + 4);
                    jumps += 1;
                    if tag == pc | 1 && to == target {
                        held[6] += 1;
                        assert_eq!(c, j.cost, "step {step}: a jump the BTB predicted");
                        copy.restore_state(&saved, true).unwrap();
                        bump(&mut copy, j.jumps);
                        unsafe {
                            let base = &mut copy as *mut InOrder as *mut u8;
                            let cy = base.add(j.cycles).cast::<u64>();
                            cy.write_unaligned(cy.read_unaligned() + j.cost);
                        }
                        let got = m.save_state(true).unwrap().unwrap();
                        assert_eq!(got, copy.save_state(true).unwrap().unwrap(), "step {step}");
                    }
                }
                4 => {
                    // a conditional branch (its `insn` first); a few
                    // branches, each mostly one way
                    let pc = 0x8000_0000 + 2 * rnd(40);
                    let taken = (pc % 3 == 0) != (rnd(6) == 0);
                    m.insn(pc, InsnClass::Branch, Operands::EMPTY);
                    let saved = m.save_state(true).unwrap().unwrap();
                    let i = ((pc >> 1) ^ u64_at(&m, b.history)) & b.index_mask;
                    let c = unsafe { *((m.inline_branch_table() + i) as *const u8) };
                    let got = m.branch(pc, taken, pc + 64);
                    held[4] += 1;
                    copy.restore_state(&saved, true).unwrap();
                    let k = 2 * c as usize + taken as usize;
                    let missed = (c >= 2) != taken;
                    let want = if missed {
                        b.mispredict
                    } else if taken {
                        b.taken_penalty
                    } else {
                        0
                    };
                    assert_eq!(got, want, "step {step}: branch at {pc:#x}");
                    unsafe {
                        *((copy.inline_branch_table() + i) as *mut u8) = crate::BRANCH_NEXT[k];
                        let base = &mut copy as *mut InOrder as *mut u8;
                        let h = base.add(b.history).cast::<u64>();
                        h.write_unaligned((2 * h.read_unaligned() + taken as u64) & b.history_mask);
                        let f = base.add(b.fetch_cycles).cast::<u64>();
                        f.write_unaligned(f.read_unaligned() + want);
                    }
                    bump(&mut copy, b.branches);
                    if missed {
                        bump(&mut copy, b.mispredicts);
                    }
                    let now = m.save_state(true).unwrap().unwrap();
                    assert_eq!(now, copy.save_state(true).unwrap().unwrap(), "step {step}");
                }
                0 => {
                    if rnd(50) == 0 {
                        // a walk before the fetch (its PTEs in RAM): no
                        // fetch passes the test until it is complete
                        m.mem(va, RAM + 0x10_000 + rnd(4) * 8, 8, MemKind::Walk, false);
                        assert_ne!(u64_at(&m, ih.walk_pending), 0, "step {step}");
                        let last = u64_at(&m, ih.fetch_last_line);
                        assert_ne!(last & ih.fetch_line_mask, last, "step {step}");
                        continue;
                    }
                    let same = pa & ih.fetch_line_mask == u64_at(&m, ih.fetch_last_line);
                    let no_walk = u64_at(&m, ih.walk_pending) == 0;
                    // (one test covers both)
                    assert!(
                        no_walk || !same,
                        "step {step}: a pending walk's line passes"
                    );
                    // a new line: the I-TLB's most recent entry (or
                    // another, made the most recent) and the L1I set's
                    // most recent way, as translated code tests them
                    let translating = u8_at(&m, ih.mem_translating);
                    let line = pa >> f.shift;
                    copy.restore_state(&saved, true).unwrap();
                    let hooked = copy.fetch(va, pa, 4);
                    let after_hook = copy.save_state(true).unwrap().unwrap();
                    let (tlb, by_index) = if !same && no_walk && translating == 1 {
                        let entries = m.inline_tlb_entries()[0];
                        inline_tlb_step(&mut m, &f.tlb, entries, va)
                    } else {
                        (false, false)
                    };
                    held[7] += by_index as u32;
                    let key_at = f.keys + 8 * (line & f.key_mask) as usize;
                    let tlb_holds = !same && no_walk && (translating == 0 || tlb);
                    // where the key does not hold, the line in another
                    // way: translated code makes the hit's update first
                    if tlb_holds && u64_at(&m, key_at) | 1 != 2 * line + 1 {
                        let l1 = f.any_way.expect("a 4-way LRU L1I");
                        let sets = m.inline_l1_sets()[0];
                        let keys = (f.keys, f.key_mask);
                        held[10] += inline_l1_step(&mut m, &l1, keys, sets, line, false) as u32;
                    }
                    let moved = m.save_state(true).unwrap().unwrap();
                    let new_line = tlb_holds && u64_at(&m, key_at) | 1 == 2 * line + 1;
                    new_lines += !same as u32;
                    let c = m.fetch(va, pa, 4);
                    // the TLB's update is what the hook does first
                    assert_eq!(c, hooked, "step {step}");
                    assert_eq!(
                        m.save_state(true).unwrap().unwrap(),
                        after_hook,
                        "step {step}"
                    );
                    if same && no_walk {
                        held[0] += 1;
                        assert_eq!(c, 0, "step {step}: a shortcut fetch costs nothing");
                        assert_eq!(m.save_state(true).unwrap().unwrap(), saved, "step {step}");
                    }
                    if new_line {
                        held[5] += 1;
                        assert_eq!(c, f.cost, "step {step}: a new line's shortcut");
                        copy.restore_state(&moved, true).unwrap();
                        unsafe {
                            let base = &mut copy as *mut InOrder as *mut u8;
                            let last = base.add(ih.fetch_last_line).cast::<u64>();
                            last.write_unaligned(pa & ih.fetch_line_mask);
                            let cy = base.add(f.cycles).cast::<u64>();
                            cy.write_unaligned(cy.read_unaligned() + f.cost);
                        }
                        bump(&mut copy, f.reads);
                        if translating == 1 {
                            bump(&mut copy, f.tlb_accesses);
                        }
                        let got = m.save_state(true).unwrap().unwrap();
                        assert_eq!(got, copy.save_state(true).unwrap().unwrap(), "step {step}");
                    }
                }
                1 => {
                    let class = INSN_CLASSES_ALL[rnd(CLASSES as u64) as usize];
                    let c = m.insn(va, class, Operands::EMPTY);
                    if let Some(cost) = ih.insn_cost[class as usize] {
                        held[1] += 1;
                        assert_eq!(c, cost, "step {step}: {class:?}");
                        copy.restore_state(&saved, true).unwrap();
                        bump(&mut copy, ih.insn_counts + 8 * class as usize);
                        unsafe {
                            *(&mut copy as *mut InOrder as *mut u8).add(ih.last_class) =
                                class as u8;
                        }
                        let got = m.save_state(true).unwrap().unwrap();
                        assert_eq!(got, copy.save_state(true).unwrap().unwrap(), "step {step}");
                    }
                }
                _ => {
                    let store = rnd(2) == 1;
                    let line = pa >> ih.mem_shift;
                    let key_at = ih.mem_keys + 8 * (line & ih.mem_key_mask) as usize;
                    let kind = if store { MemKind::Store } else { MemKind::Load };
                    let translating = u8_at(&m, ih.mem_translating) as usize;
                    // (the line as a fetch's test sees it once no walk is pending)
                    let fetched = u64_at(&m, ih.fetch_last_line) & !1;
                    // the hook alone, on a copy of the model as it was
                    copy.restore_state(&saved, true).unwrap();
                    let hooked = copy.mem(va, pa, 8, kind, false);
                    let after_hook = copy.save_state(true).unwrap().unwrap();
                    // the D-TLB's most recent entry, as translated code
                    // tests it; where another holds the address and
                    // translated code finds it, it becomes the most
                    // recent first
                    let rec = ih.mem_tlb.recent;
                    let holds_at = |m: &InOrder, r: usize| va | u64_at(m, r) == u64_at(m, r + 8);
                    let no_walk = u64_at(&m, ih.walk_pending) == 0;
                    let second = translating == 1 && no_walk && !holds_at(&m, rec);
                    if second {
                        let entries = m.inline_tlb_entries()[1];
                        held[8] += inline_tlb_step(&mut m, &ih.mem_tlb, entries, va).1 as u32;
                    }
                    let tlb_holds =
                        (translating == 0 || holds_at(&m, rec)) && u64_at(&m, ih.walk_pending) == 0;
                    let key_holds = |m: &InOrder| {
                        let key = u64_at(m, key_at);
                        (if store { key } else { key | 1 }) == 2 * line + 1
                    };
                    // where the key does not hold, the line in another
                    // way (or clean in the most recent, for a store):
                    // translated code makes the hit's update first
                    if tlb_holds && !key_holds(&m) {
                        let l1 = ih.mem_any_way.expect("a 4-way LRU L1D");
                        let sets = m.inline_l1_sets()[1];
                        let keys = (ih.mem_keys, ih.mem_key_mask);
                        held[9] += inline_l1_step(&mut m, &l1, keys, sets, line, store) as u32;
                    }
                    let moved = m.save_state(true).unwrap().unwrap();
                    let holds = tlb_holds && key_holds(&m);
                    let c = m.mem(va, pa, 8, kind, false);
                    // the TLB update is what the hook does first
                    assert_eq!(c, hooked, "step {step}");
                    assert_eq!(
                        m.save_state(true).unwrap().unwrap(),
                        after_hook,
                        "step {step}"
                    );
                    // a walk pending before it is complete; the line fetched stays
                    assert_eq!(u64_at(&m, ih.walk_pending), 0, "step {step}");
                    assert_eq!(u64_at(&m, ih.fetch_last_line), fetched, "step {step}");
                    if holds {
                        held[2 + second as usize] += 1;
                        assert_eq!(c, ih.mem_cost, "step {step}");
                        copy.restore_state(&moved, true).unwrap();
                        bump(
                            &mut copy,
                            ih.mem_counts + 16 * translating + 8 * store as usize,
                        );
                        let got = m.save_state(true).unwrap().unwrap();
                        assert_eq!(got, copy.save_state(true).unwrap().unwrap(), "step {step}");
                    }
                }
            }
        }
        // each shortcut was met often, translating and not (the branches
        // both predicted and not)
        assert!(m.bp.counts.cond_mispredicts > 100);
        assert!(m.bp.counts.cond_branches > 2 * m.bp.counts.cond_mispredicts);
        assert!(
            held[..5].iter().all(|&n| n > 500)
                && held[5] > 300
                && held[6] > 1_000
                && held[7..].iter().all(|&n| n > 100),
            "shortcuts held {held:?} times"
        );
        // and the BTB's often did not (a conflict, a new target)
        assert!(
            jumps > held[6] + 300,
            "{jumps} jumps, {} predicted",
            held[6]
        );
        // and the new-line one often did not (a miss, the other I-TLB entry)
        assert!(
            new_lines > held[5] + 300,
            "{new_lines} new lines, {} by the shortcut",
            held[5]
        );
        assert_eq!(u8_at(&m, ih.mem_translating), 1);
    }

    #[test]
    fn tlb_misses_walk_through_the_caches_with_the_harts_pte_addresses() {
        let (mut m, c) = model();
        translating(&mut m);
        let (l1, l2, mem) = (c.l1d.latency, c.l2.latency, c.memory_latency);
        let ptes = [RAM + 0x10_000, RAM + 0x11_000, RAM + 0x12_008];
        let page = RAM + 0x40_000;
        // walk accesses carry the address they translate
        for p in ptes {
            m.mem(page, p, 8, MemKind::Walk, false);
        }
        m.mem(page, ptes[2], 8, MemKind::Walk, false); // A/D update of the leaf
                                                       // 3 cold PTE reads + the A/D write (an L1 hit now) + the load
        let walk = 3 * (l1 + l2 + mem) + l1;
        assert_eq!(
            m.mem(page, page, 8, MemKind::Load, false),
            walk + l1 + l2 + mem
        );
        assert_eq!(
            m.mem(page + 0xff8, page + 0xff8, 8, MemKind::Load, false),
            l1 + l2 + mem
        ); // TLB hit
           // the hart's TLB still holds the page, ours was flushed: replay the walk (PTEs now in L1)
        m.insn(0, InsnClass::SfenceVma, Operands::EMPTY);
        assert_eq!(
            m.mem(page + 8, page + 8, 8, MemKind::Load, false),
            3 * l1 + l1
        );
        // a 4 KiB page: the next page is not covered
        assert!(m.mem(page + 0x1000, page + 0x1000, 8, MemKind::Load, false) > l1 + l2 + mem);
        let s = m.model_stats().unwrap();
        assert_eq!(s.get("walker.walks"), Some(3));
        assert_eq!(s.get("walker.unrecorded"), Some(1));
        assert_eq!(s.get("dtlb.misses"), Some(3));
        assert_eq!(
            s.get("cycles.walker"),
            Some(walk + 3 * l1 + 3 * (l1 + l2 + mem))
        );
    }

    #[test]
    fn virtual_pages_sharing_a_frame_each_miss_the_tlb_and_the_second_level_catches_them() {
        // The kernel maps untouched memory to its one zero page: many
        // virtual pages, one frame. TLBs are tagged by virtual page.
        let mut c = cfg();
        c.dtlb_entries = 2;
        c.l2tlb = Some((512, 6));
        c.walk_pte_latency = 5;
        let mut m = InOrderFactory::new(&c).build();
        translating(&mut m);
        let (l1, l2, mem, pte) = (c.l1d.latency, c.l2.latency, c.memory_latency, 5);
        let zero = RAM + 0x70_000; // the shared frame
        let ptes = |leaf: u64| [RAM + 0x10_000, RAM + 0x11_000, leaf];
        let walk_and_load = |m: &mut InOrder, va: u64, leaf: u64| {
            for p in ptes(leaf) {
                m.mem(va, p, 8, MemKind::Walk, false);
            }
            m.mem(va, zero, 8, MemKind::Load, false)
        };
        let a = 0x10_0000;
        assert_eq!(
            walk_and_load(&mut m, a, RAM + 0x12_000),
            3 * (pte + l2 + mem) + l1 + l2 + mem
        );
        // another virtual page on the same frame: a TLB miss and a walk
        // (its PTEs hit the L1 now), though the data line is the same
        assert_eq!(
            walk_and_load(&mut m, a + 0x1000, RAM + 0x12_008),
            3 * pte + l1
        );
        assert_eq!(
            walk_and_load(&mut m, a + 0x2000, RAM + 0x12_010),
            3 * pte + l1
        );
        // `a` left the 2-entry D-TLB; the second level still has it
        assert_eq!(m.mem(a + 8, zero + 8, 8, MemKind::Load, false), 6 + l1);
        // the same virtual line again: no lookup at all
        assert_eq!(m.mem(a + 16, zero + 16, 8, MemKind::Load, false), l1);
        let s = m.model_stats().unwrap();
        assert_eq!(s.get("dtlb.misses"), Some(4));
        assert_eq!(
            (s.get("l2tlb.accesses"), s.get("l2tlb.misses")),
            (Some(4), Some(3))
        );
        assert_eq!(s.get("walker.walks"), Some(3));
    }

    #[test]
    fn a_dirty_victim_written_first_costs_one_more_l2_access() {
        let mut c = cfg();
        let (l1, l2, mem) = (c.l1d.latency, c.l2.latency, c.memory_latency);
        let ways = c.l1d.ways;
        let stride = c.l1d.sets() * c.l1d.line; // same set every time
        for first in [false, true] {
            c.dirty_victim_first = first;
            let mut m = InOrderFactory::new(&c).build();
            for k in 0..ways {
                let pa = RAM + k * stride;
                assert_eq!(m.mem(pa, pa, 8, MemKind::Store, false), l1 + l2 + mem);
            }
            // the set is full of dirty lines: the next miss evicts one
            let pa = RAM + ways * stride;
            let cost = m.mem(pa, pa, 8, MemKind::Store, false);
            let victim_write = if first { l2 } else { 0 }; // the victim is in the L2: a hit
            assert_eq!(cost, l1 + victim_write + l2 + mem, "written first: {first}");
            assert_eq!(m.model_stats().unwrap().get("dcache.writebacks"), Some(1));
        }
    }

    /// The hart's software TLB is a host cache: whether it walks again for
    /// a page it walked before (its entry evicted, its block cache
    /// re-translating) must not change the model's cycles or counts.
    #[test]
    fn a_repeated_hart_walk_changes_nothing() {
        let run = |rewalk: bool| {
            let (mut m, _) = model();
            translating(&mut m);
            let page = RAM + 0x40_000;
            let code = RAM + 0x80_000;
            let ptes = [RAM + 0x10_000, RAM + 0x11_000, RAM + 0x12_008];
            let mut total = 0u64;
            for round in 0..4u64 {
                for va in [code, page] {
                    if round == 0 || rewalk {
                        for p in ptes {
                            total += m.mem(va, p + (va >> 9 & 8), 8, MemKind::Walk, false);
                        }
                    }
                }
                total += m.fetch(code + round * 2, code + round * 2, 2);
                total = total.wrapping_add(m.insn(code, InsnClass::Load, Operands::EMPTY));
                total += m.mem(page + round * 8, page + round * 8, 8, MemKind::Load, false);
            }
            let s = m.model_stats().unwrap();
            let keep = |n: &str| !n.starts_with("walker.") || n == "walker.walks";
            let counts: Vec<(String, u64)> = s
                .stats
                .iter()
                .filter(|st| keep(st.name))
                .map(|st| (st.name.to_string(), st.value))
                .collect();
            (total, counts)
        };
        let (once, again) = (run(false), run(true));
        assert_eq!(once.0, again.0, "cycles");
        assert_eq!(once.1, again.1);
    }

    #[test]
    fn walk_depth_gives_the_page_size() {
        let (mut m, c) = model();
        translating(&mut m);
        let page = RAM + 0x20_0000;
        m.mem(page, RAM + 0x10_000, 8, MemKind::Walk, false);
        m.mem(page, RAM + 0x11_000, 8, MemKind::Walk, false); // two levels: a 2 MiB leaf
        m.mem(page, page, 8, MemKind::Load, false);
        let l1 = c.l1d.latency;
        let far = page + 0x1f_f000;
        let cost = m.mem(far, far, 8, MemKind::Load, false);
        assert_eq!(
            cost,
            l1 + c.l2.latency + c.memory_latency,
            "TLB hit, cache miss"
        );
        // no translation in M-mode
        m.trap(8, false);
        m.trap_info(&TrapInfo {
            cause: 8,
            interrupt: false,
            epc: 0,
            tval: 0,
            from: 1,
            to: 3,
            a7: 0,
        });
        let before = m.model_stats().unwrap().get("dtlb.accesses");
        m.mem(
            RAM + 0x4000_0000,
            RAM + 0x4000_0000,
            8,
            MemKind::Load,
            false,
        );
        assert_eq!(m.model_stats().unwrap().get("dtlb.accesses"), before);
    }

    #[test]
    fn mispredicts_cost_the_configured_penalty() {
        let (mut m, c) = model();
        let (pen, taken) = (c.bpred.mispredict_penalty, c.bpred.taken_penalty);
        let run = |m: &mut InOrder, n: u64, dir: &dyn Fn(u64) -> bool| {
            (0..n)
                .map(|i| {
                    m.insn(0x1000, InsnClass::Branch, Operands::EMPTY);
                    m.branch(0x1000, dir(i), 0x900)
                })
                .sum::<u64>()
        };
        // an always-taken branch: learned once the history is all ones
        let warm = run(&mut m, 100, &|_| true);
        let misses = m
            .model_stats()
            .unwrap()
            .get("bpred.cond_mispredicts")
            .unwrap();
        assert!(
            misses >= 1 && misses <= c.bpred.history_bits as u64 + 1,
            "{misses}"
        );
        assert_eq!(warm, misses * pen + (100 - misses) * taken);
        assert_eq!(run(&mut m, 100, &|_| true), 100 * taken);
        // a pattern-free branch (xorshift bits) misses about half the time
        let mut x = 88172645463325252u64;
        let bits: Vec<bool> = (0..4000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x & 1 == 1
            })
            .collect();
        let before = m
            .model_stats()
            .unwrap()
            .get("bpred.cond_mispredicts")
            .unwrap();
        let cost = run(&mut m, 4000, &|i| bits[i as usize]);
        let s = m.model_stats().unwrap();
        let missed = s.get("bpred.cond_mispredicts").unwrap() - before;
        let taken_count = bits.iter().filter(|&&b| b).count() as u64;
        assert!(missed > 1500 && missed < 2500, "{missed}");
        // each miss costs the penalty; each correctly predicted taken one the bubble
        assert!(
            cost >= missed * pen && cost <= missed * pen + taken_count * taken,
            "{cost}"
        );
        assert_eq!(
            s.get("bpred.mispredict_cycles"),
            Some((misses + missed) * pen)
        );
        assert_eq!(m.hpm_counter(5, event::BRANCH_MISSES), misses + missed);
    }

    #[test]
    fn every_accounted_cycle_is_in_one_state() {
        let (mut m, c) = model();
        let mut charged = 0;
        // what the hart does per instruction: 1 + fetch + insn + the rest
        for i in 0..1000u64 {
            let pc = RAM + 4 * (i % 300);
            charged += 1 + m.fetch(pc, pc, 4);
            let class = [
                InsnClass::Alu,
                InsnClass::Load,
                InsnClass::Mul,
                InsnClass::Csr,
                InsnClass::Div,
            ][i as usize % 5];
            charged += m.insn(pc, class, Operands::EMPTY);
            match class {
                InsnClass::Load => {
                    charged += m.mem(
                        RAM + 0x10_0000 + 64 * (i * 7 % 900),
                        RAM + 0x10_0000 + 64 * (i * 7 % 900),
                        8,
                        MemKind::Load,
                        false,
                    )
                }
                InsnClass::Csr => charged += m.csr(0x140, i % 2 == 0),
                _ => {}
            }
        }
        charged += 1 + m.trap(7, true); // an interrupt: the hart's cycle plus the model's
        m.trap_info(&TrapInfo {
            cause: 7,
            interrupt: true,
            epc: 0,
            tval: 0,
            from: 3,
            to: 3,
            a7: 0,
        });
        let s = m.model_stats().unwrap();
        let states: u64 = s.cycle_shape().iter().map(|(_, v)| v).sum();
        assert_eq!(states, charged);
        assert_eq!(s.get("cycles.busy"), Some(charged));
        assert_eq!(
            s.get("cycles.muldiv"),
            Some(200 * (c.latency.mul - 1) + 200 * (c.latency.div - 1))
        );
        assert_eq!(s.get("cycles.writeback"), Some(1000 * c.writeback));
        assert!(s.get("cycles.mem_stall").unwrap() > 0);
    }

    #[test]
    fn harts_share_the_l2() {
        let c = cfg();
        let f = InOrderFactory::new(&c);
        let (mut a, mut b) = (f.build(), f.build());
        a.mem(RAM, RAM, 8, MemKind::Load, false);
        assert_eq!(
            b.mem(RAM, RAM, 8, MemKind::Load, false),
            c.l1d.latency + c.l2.latency
        );
    }

    // ---- the pipelined, dual-issue core (machines/u74.toml) ----

    fn u74() -> (InOrder, InOrderConfig) {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../machines/u74.toml");
        match MachineDesc::load(&p).unwrap().model {
            ModelDesc::InOrder(c) => (InOrderFactory::new(&c).build(), c),
            ModelDesc::Atomic => panic!("u74 preset is atomic"),
        }
    }

    fn x(d: u8, a: u8, b: u8) -> Operands {
        Operands {
            dst: Operands::x(d),
            src: [Operands::x(a), Operands::x(b), Operands::NONE],
            flags: 0,
        }
    }

    /// Cycles the hart charges for one instruction: 1 + what `insn` returned
    /// (wrapping), with no cache misses (every fetch and access in one line).
    fn issue(m: &mut InOrder, class: InsnClass, ops: Operands) -> u64 {
        m.fetch(RAM, RAM, 4);
        1u64.wrapping_add(m.insn(RAM, class, ops))
    }

    fn warm(m: &mut InOrder) {
        // the first fetch and data access miss; keep them out of the sums
        m.fetch(RAM, RAM, 4);
        m.mem(RAM + 0x1000, RAM + 0x1000, 8, MemKind::Load, false);
    }

    #[test]
    fn independent_alu_instructions_issue_two_a_cycle() {
        let (mut m, _) = u74();
        warm(&mut m);
        let costs: Vec<u64> = (0..4)
            .map(|k| issue(&mut m, InsnClass::Alu, x(10 + k, 1, 2)))
            .collect();
        assert_eq!(costs, [1, 0, 1, 0]); // two pairs: 2 cycles for 4 instructions
        assert_eq!(m.insn(RAM, InsnClass::Alu, x(5, 1, 2)), 0);
        assert_eq!(
            m.insn(RAM, InsnClass::Alu, x(6, 1, 2)),
            crate::ISSUED_WITH_PREVIOUS
        );
        let s = m.model_stats().unwrap();
        assert_eq!(s.get("pipeline.dual_issued"), Some(3));
        assert_eq!(
            s.get("cycles.busy"),
            s.get("cycles.execute")
                .map(|e| e + s.get("cycles.mem").unwrap() + s.get("cycles.fetch").unwrap())
        );
    }

    #[test]
    fn a_dependent_pair_or_two_of_a_kind_issue_apart() {
        let (mut m, _) = u74();
        warm(&mut m);
        // x10 = ...; x11 = x10 + ...: a read-after-write within the pair
        assert_eq!(issue(&mut m, InsnClass::Alu, x(10, 1, 2)), 1);
        assert_eq!(issue(&mut m, InsnClass::Alu, x(11, 10, 2)), 1);
        // a CSR access issues alone (csr_read 1, the CSR hook charges its own cycles)
        assert_eq!(issue(&mut m, InsnClass::Csr, x(19, 0, 0)), 1);
        // two loads (one memory access a pair), two multiplies, two branches:
        // each second one waits, each first one joins the one before
        let seq = [
            (InsnClass::Load, 20),
            (InsnClass::Load, 21),
            (InsnClass::Mul, 22),
            (InsnClass::Mul, 23),
            (InsnClass::Branch, 0),
            (InsnClass::Branch, 0),
        ];
        let costs: Vec<u64> = seq
            .iter()
            .map(|&(c, d)| issue(&mut m, c, x(d, 1, 2)))
            .collect();
        assert_eq!(costs, [1, 1, 0, 1, 0, 1]);
        // an ALU op joins the branch; nothing pairs with a CSR access
        assert_eq!(issue(&mut m, InsnClass::Alu, x(25, 1, 2)), 0);
        assert_eq!(issue(&mut m, InsnClass::Csr, x(26, 0, 0)), 1);
        assert_eq!(issue(&mut m, InsnClass::Alu, x(27, 1, 2)), 1);
    }

    #[test]
    fn loads_feed_alu_ops_late_but_addresses_wait() {
        let (mut m, c) = u74();
        let p = c.pipeline.clone().unwrap();
        warm(&mut m);
        // ld x5; add x6, x5, x1 (late ALU: no stall); ld x7, 0(x6) waits for
        // the late result: issue at t+2 with x6 ready at (t+1) + late_alu + 1
        assert_eq!(issue(&mut m, InsnClass::Load, x(5, 1, 0)), 1); // t
        assert_eq!(issue(&mut m, InsnClass::Alu, x(6, 5, 1)), 1); // t+1
        assert_eq!(p.late_alu, 2);
        let late_ready = 1 + p.late_alu + 1; // relative to t
        assert_eq!(issue(&mut m, InsnClass::Load, x(7, 6, 0)), late_ready - 1);
        // a pointer chase: each load's address is the last load's value
        assert_eq!(issue(&mut m, InsnClass::Load, x(8, 7, 0)), p.load_to_use);
        assert_eq!(issue(&mut m, InsnClass::Load, x(9, 8, 0)), p.load_to_use);
        let s = m.model_stats().unwrap();
        assert_eq!(
            s.get("pipeline.interlock_cycles"),
            Some(2 * (p.load_to_use - 1) + late_ready - 2)
        );
    }

    #[test]
    fn a_load_of_a_recent_stores_bytes_waits_for_its_data() {
        let (_, mut c) = u74();
        c.pipeline.as_mut().unwrap().store_to_load = 5;
        let mut m = InOrderFactory::new(&c).build();
        warm(&mut m);
        let a = RAM + 0x1000; // a line warm() brought in
        let store = Operands {
            dst: Operands::NONE,
            src: [Operands::x(1), Operands::x(2), Operands::NONE],
            flags: 0,
        };
        issue(&mut m, InsnClass::Store, store); // t
        assert_eq!(m.mem(a, a, 4, MemKind::Store, false), 0);
        // other bytes of the same doubleword: no wait
        assert_eq!(issue(&mut m, InsnClass::Load, x(5, 1, 0)), 1); // t+1
        assert_eq!(m.mem(a + 4, a + 4, 4, MemKind::Load, false), 0);
        // the stored bytes: wait until t+5
        assert_eq!(issue(&mut m, InsnClass::Load, x(6, 1, 0)), 1); // t+2
        assert_eq!(m.mem(a + 2, a + 2, 2, MemKind::Load, false), 3);
        // its value is as late: an address use issues at (t+5) + load_to_use
        let ltu = c.pipeline.as_ref().unwrap().load_to_use;
        assert_eq!(issue(&mut m, InsnClass::Load, x(8, 6, 0)), ltu);
        let s = m.model_stats().unwrap();
        assert_eq!(s.get("pipeline.store_to_load_waits"), Some(1));
        assert_eq!(s.get("pipeline.store_to_load_cycles"), Some(3));
        // without store_to_load nothing waits
        c.pipeline.as_mut().unwrap().store_to_load = 0;
        let mut m = InOrderFactory::new(&c).build();
        warm(&mut m);
        issue(&mut m, InsnClass::Store, store);
        m.mem(a, a, 4, MemKind::Store, false);
        issue(&mut m, InsnClass::Load, x(6, 1, 0));
        assert_eq!(m.mem(a, a, 4, MemKind::Load, false), 0);
    }

    #[test]
    fn the_divider_takes_one_operation_at_a_time() {
        let (mut m, c) = u74();
        let p = c.pipeline.clone().unwrap();
        warm(&mut m);
        let wide = |d: u8| Operands {
            flags: Operands::WIDE,
            ..x(d, 1, 2)
        };
        assert_eq!(issue(&mut m, InsnClass::Div, wide(10)), 1);
        // independent, but the divider is busy until one cycle before the result
        assert_eq!(issue(&mut m, InsnClass::Div, wide(11)), p.div_double - 1);
        // a 32-bit divide after it, then a use of its result
        assert_eq!(issue(&mut m, InsnClass::Div, x(12, 1, 2)), p.div_double - 1);
        assert_eq!(
            issue(&mut m, InsnClass::Alu, x(13, 12, 0)),
            c.latency.div - 2
        );
    }

    #[test]
    fn an_early_out_divider_takes_its_base_plus_a_cycle_per_quotient_bit() {
        let (mut m, c) = u74();
        let p = c.pipeline.clone().unwrap();
        assert!(p.div_early_out > 0);
        warm(&mut m);
        let wide = |d: u8| Operands {
            flags: Operands::WIDE,
            ..x(d, 1, 2)
        };
        // 1000 / 3: 10 - 2 + 1 = 9 quotient bits
        assert_eq!(issue(&mut m, InsnClass::Div, wide(10)), 1);
        m.divide(1000, 3, false);
        let latency = p.div_early_out + 9;
        assert_eq!(issue(&mut m, InsnClass::Alu, x(11, 10, 0)), latency - 2); // the ALU takes it late
                                                                              // a huge quotient is capped at the full latency
        assert_eq!(issue(&mut m, InsnClass::Div, wide(12)), 1);
        m.divide(u64::MAX, 1, false);
        assert_eq!(issue(&mut m, InsnClass::Div, wide(13)), p.div_double - 1);
    }

    #[test]
    fn the_branches_event_leaves_jumps_out_where_the_pmu_says_so() {
        let count = |mut m: InOrder| {
            m.insn(RAM, InsnClass::Branch, Operands::EMPTY);
            m.branch(RAM, true, RAM + 64);
            m.jump(RAM + 64, RAM, JumpHint::Plain, RAM + 68);
            m.direct_jump(RAM + 68, RAM, JumpHint::Plain, RAM + 72);
            m.hpm_counter(3, event::BRANCH_INSTRUCTIONS)
        };
        assert_eq!(count(u74().0), 1, "u74: [pmu] branches = \"conditional\"");
        assert_eq!(count(model().0), 3, "inorder: every branch and jump");
    }

    #[test]
    fn misses_and_taken_branches_end_the_issue_cycle() {
        let (mut m, c) = u74();
        warm(&mut m);
        assert_eq!(issue(&mut m, InsnClass::Alu, x(10, 1, 2)), 1);
        // a branch pairs, is taken: its target starts a new cycle
        assert_eq!(issue(&mut m, InsnClass::Branch, x(0, 1, 2)), 0);
        m.branch(RAM, true, RAM);
        assert_eq!(issue(&mut m, InsnClass::Alu, x(11, 1, 2)), 1);
        // a load that misses the L1 (and the L2) stalls; nothing pairs across it
        let miss = m.mem(RAM + 0x40_0000, RAM + 0x40_0000, 8, MemKind::Load, false);
        assert_eq!(miss, c.l2.latency + c.memory_latency);
        assert_eq!(issue(&mut m, InsnClass::Alu, x(12, 1, 2)), 1);
        assert_eq!(issue(&mut m, InsnClass::Alu, x(13, 1, 2)), 0);
    }

    #[test]
    fn the_cycle_shape_adds_up_to_what_the_hart_charged() {
        let (mut m, _) = u74();
        let mut charged = 0u64;
        let mut n = 0u64;
        let mut pc = RAM;
        for k in 0..2000u64 {
            let class = [
                InsnClass::Alu,
                InsnClass::Load,
                InsnClass::Mul,
                InsnClass::Alu,
                InsnClass::Branch,
            ][k as usize % 5];
            let ops = x((k % 7 + 5) as u8, (k % 5 + 5) as u8, 1);
            charged = charged
                .wrapping_add(1)
                .wrapping_add(m.fetch(pc, pc, 4))
                .wrapping_add(m.insn(pc, class, ops));
            match class {
                InsnClass::Load => {
                    charged += m.mem(
                        RAM + 0x10_0000 + (k * 72) % 0x8000,
                        RAM + 0x10_0000 + (k * 72) % 0x8000,
                        8,
                        MemKind::Load,
                        false,
                    )
                }
                InsnClass::Branch => charged += m.branch(pc, k % 3 == 0, RAM),
                _ => {}
            }
            pc = if class == InsnClass::Branch && k % 3 == 0 {
                RAM
            } else {
                pc + 4
            };
            n += 1;
        }
        let s = m.model_stats().unwrap();
        assert_eq!(s.get("cycles.busy"), Some(charged));
        assert_eq!(m.hpm_counter(3, event::CPU_CYCLES), charged);
        assert_eq!(s.get("insts.fetched"), Some(n));
        assert!(s.get("pipeline.dual_issued").unwrap() > n / 10, "{s:?}");
    }
}
