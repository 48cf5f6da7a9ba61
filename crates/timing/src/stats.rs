//! What a timing model counts: named, unit-tagged, described values (the
//! observation side prefixes them with `system.cpuN.`), and the hpm event
//! encoding the guest selects through `mhpmeventN`.

/// One counter of a model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    /// Dotted name relative to the hart, e.g. `cycles.fetch`, `dcache.read_misses`.
    pub name: &'static str,
    pub value: u64,
    /// `cycles`, `count`, ...
    pub unit: &'static str,
    pub desc: &'static str,
}

/// A model's counters at one moment (all monotonic since the model was built,
/// so a phase's value is the difference of two snapshots).
///
/// The cycle shape: every cycle the model accounts for is in exactly one of
/// [`CYCLE_STATES`] (`cycles.fetch` ... `cycles.muldiv`); their sum is
/// `cycles.busy`. A hart's `cycle()` minus `cycles.busy` is time the model
/// never saw: WFI idle fast-forward. `cycles.mem_stall` is not a state: it
/// counts the cycles, inside `fetch`, `mem` and `walker`, spent waiting for
/// L2 and memory after an L1 miss.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelStats {
    pub stats: Vec<Stat>,
}

/// The cycle-shape states, in report order (names of their stats).
pub const CYCLE_STATES: [&str; 6] = [
    "cycles.fetch",
    "cycles.execute",
    "cycles.mem",
    "cycles.walker",
    "cycles.writeback",
    "cycles.muldiv",
];

impl ModelStats {
    pub fn get(&self, name: &str) -> Option<u64> {
        self.stats.iter().find(|s| s.name == name).map(|s| s.value)
    }
    /// The six cycle-shape states and their cycles.
    pub fn cycle_shape(&self) -> [(&'static str, u64); 6] {
        CYCLE_STATES.map(|n| (n, self.get(n).unwrap_or(0)))
    }
}

/// hpm event selectors: the SBI PMU event index (what OpenSBI writes to
/// `mhpmeventN` when the device tree gives no other selector). Hardware
/// general events are type 0; cache events are type 1 with
/// `code = cache_id << 3 | op << 1 | result`.
pub mod event {
    pub const CPU_CYCLES: u64 = 0x1;
    pub const INSTRUCTIONS: u64 = 0x2;
    /// L2 (last-level cache) accesses.
    pub const CACHE_REFERENCES: u64 = 0x3;
    /// L2 misses.
    pub const CACHE_MISSES: u64 = 0x4;
    pub const BRANCH_INSTRUCTIONS: u64 = 0x5;
    pub const BRANCH_MISSES: u64 = 0x6;
    /// Cycles in the fetch state.
    pub const STALLED_CYCLES_FRONTEND: u64 = 0x8;
    /// Memory stall cycles.
    pub const STALLED_CYCLES_BACKEND: u64 = 0x9;

    pub const L1D: u64 = 0;
    pub const L1I: u64 = 1;
    pub const LL: u64 = 2;
    pub const DTLB: u64 = 3;
    pub const ITLB: u64 = 4;
    pub const BPU: u64 = 5;
    pub const READ: u64 = 0;
    pub const WRITE: u64 = 1;
    pub const ACCESS: u64 = 0;
    pub const MISS: u64 = 1;

    /// A cache event's selector.
    pub const fn cache(id: u64, op: u64, result: u64) -> u64 {
        0x10000 | id << 3 | op << 1 | result
    }

    /// Every selector the in-order model counts, for the device tree's
    /// `riscv,event-to-mhpmcounters` (each on counters 3..31).
    pub const SUPPORTED: [u64; 26] = [
        CPU_CYCLES,
        INSTRUCTIONS,
        CACHE_REFERENCES,
        CACHE_MISSES,
        BRANCH_INSTRUCTIONS,
        BRANCH_MISSES,
        STALLED_CYCLES_FRONTEND,
        STALLED_CYCLES_BACKEND,
        cache(L1D, READ, ACCESS),
        cache(L1D, READ, MISS),
        cache(L1D, WRITE, ACCESS),
        cache(L1D, WRITE, MISS),
        cache(L1I, READ, ACCESS),
        cache(L1I, READ, MISS),
        cache(LL, READ, ACCESS),
        cache(LL, READ, MISS),
        cache(LL, WRITE, ACCESS),
        cache(LL, WRITE, MISS),
        cache(DTLB, READ, ACCESS),
        cache(DTLB, READ, MISS),
        cache(DTLB, WRITE, ACCESS),
        cache(DTLB, WRITE, MISS),
        cache(ITLB, READ, ACCESS),
        cache(ITLB, READ, MISS),
        cache(BPU, READ, ACCESS),
        cache(BPU, READ, MISS),
    ];
}
