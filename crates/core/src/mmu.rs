//! Address translation (Sv39/Sv48 with hardware A/D updates), PMP
//! enforcement at fill time, and the software TLB that maps guest virtual
//! pages to host pointers.
//!
//! The TLB is direct-mapped, one array per access kind (fetch, load,
//! store) and per translation context (U, S, S with SUM, M). A context
//! switch between them is an index change, not a flush. Flushing all
//! entries is O(1): every tag carries a generation number.

use hs_timing::{MemKind, TimingModel};

use crate::csr::*;
use crate::pmp::{PageCheck, Perm};
use crate::trap::*;
use crate::{Hart, Priv};

/// 1,024 entries per array (kind × context): the debian P87 boot walks
/// 0.50 million times, against 0.85 million with 256.
pub const TLB_BITS: u32 = 10;
pub const TLB_SIZE: usize = 1 << TLB_BITS;
const GEN_SHIFT: u32 = 52;
/// A tag's page number.
const VPN_BITS: u64 = (1 << GEN_SHIFT) - 1;
const GEN_MAX: u64 = (1 << 10) - 1;
/// Tag flag: the page is not RAM (MMIO); `addend` then maps va to pa.
pub const TLB_MMIO: u64 = 1 << 63;
/// Tag flag of a store entry: the RAM page is flagged as code, so a store
/// must tell the block cache. The fast paths' single tag test fails on it
/// (as QEMU's not-dirty bit), yet the entry is there: the slow path finds
/// the page without a walk, so the TLB's hits and misses are the same.
pub const TLB_CODE: u64 = 1 << 62;

pub const KIND_FETCH: usize = 0;
pub const KIND_LOAD: usize = 1;
pub const KIND_STORE: usize = 2;

/// Translation contexts (TLB array index).
pub const CTX_U: usize = 0;
pub const CTX_S: usize = 1;
pub const CTX_S_SUM: usize = 2;
pub const CTX_M: usize = 3;

#[derive(Clone, Copy, Default)]
#[repr(C)]
pub struct TlbEntry {
    /// `vpn | generation << 52`, plus [`TLB_MMIO`] for device pages; 0 = empty.
    pub tag: u64,
    /// RAM: host address = va + addend. MMIO: pa = va + addend.
    pub addend: u64,
}

pub struct Tlb {
    pub e: [[[TlbEntry; TLB_SIZE]; 4]; 3],
    /// Current generation, pre-shifted into tag position.
    pub gen_bits: u64,
    /// The superpages (virtual base | log2 of the size) entries of this
    /// generation may hold 4 KiB pieces of: `sfence.vma` of one address
    /// in one of them must drop them all, so it flushes everything. None:
    /// too many to list (every `sfence.vma` flushes everything).
    superpages: Option<Vec<u64>>,
    /// A fetch entry of this generation was replaced by another page's
    /// since the block cache's first level was last emptied: the first
    /// level may then map pcs of a page no fetch entry maps any more (its
    /// entries are only made through a fetch entry, see `fetch_block`).
    pub(crate) fetch_replaced: bool,
    /// Where store entries of RAM were put in this generation (context ×
    /// [`TLB_SIZE`] + slot; some since replaced or dropped): what
    /// `Hart::flag_code_stores` looks through instead of every entry.
    pub(crate) store_fills: Vec<u16>,
}

/// Most superpages [`Tlb`] lists (Linux maps its own memory with a few).
const SUPERPAGES_MAX: usize = 32;

impl Tlb {
    pub fn new() -> Box<Self> {
        let mut t: Box<Self> = Box::new(Tlb {
            e: [[[TlbEntry::default(); TLB_SIZE]; 4]; 3],
            gen_bits: 0,
            superpages: Some(Vec::new()),
            fetch_replaced: false,
            store_fills: Vec::new(),
        });
        t.gen_bits = 1 << GEN_SHIFT;
        t
    }
    pub fn flush(&mut self) {
        self.superpages = Some(Vec::new());
        // (a new generation: no first-level entry outlives it either)
        self.fetch_replaced = false;
        self.store_fills.clear();
        let gen = (self.gen_bits >> GEN_SHIFT) + 1;
        if gen > GEN_MAX {
            for k in self.e.iter_mut() {
                for c in k.iter_mut() {
                    c.fill(TlbEntry::default());
                }
            }
            self.gen_bits = 1 << GEN_SHIFT;
        } else {
            self.gen_bits = gen << GEN_SHIFT;
        }
    }
}

impl Tlb {
    /// A store entry of RAM was put at `slot` of context `ctx`.
    pub(crate) fn note_store_fill(&mut self, ctx: usize, slot: usize) {
        if self.store_fills.len() >= 4 * TLB_SIZE {
            // (mostly entries since replaced: keep one mention of each
            // live one)
            let gen = self.gen_bits;
            let live = (self.e[KIND_STORE].as_flattened().iter().enumerate())
                .filter(|(_, e)| e.tag & !(VPN_BITS | TLB_CODE) == gen)
                .map(|(i, _)| i as u16);
            self.store_fills = live.collect();
        }
        self.store_fills.push((ctx * TLB_SIZE + slot) as u16);
    }

    /// An entry for `va` came from a leaf mapping `1 << shift` bytes.
    fn note_leaf(&mut self, va: u64, shift: u32) {
        if !(13..64).contains(&shift) {
            return;
        }
        let key = (va >> shift << shift) | shift as u64;
        if let Some(list) = self.superpages.as_mut() {
            if !list.contains(&key) {
                if list.len() < SUPERPAGES_MAX {
                    list.push(key);
                } else {
                    self.superpages = None;
                }
            }
        }
    }

    /// Whether the first level of the block cache may map pcs of `va`'s
    /// page: a fetch entry (any context) maps it, or one was replaced.
    fn may_map_code_of(&self, va: u64) -> bool {
        let want = (va >> 12) | self.gen_bits;
        let slot = ((va >> 12) as usize) & (TLB_SIZE - 1);
        self.fetch_replaced
            || self.e[KIND_FETCH]
                .iter()
                .any(|ctx| ctx[slot].tag & !TLB_MMIO == want)
    }

    /// Whether an entry may hold a piece of a superpage containing `va`.
    fn in_superpage(&self, va: u64) -> bool {
        self.superpages.as_ref().is_none_or(|list| {
            list.iter().any(|&k| {
                let shift = (k & 0x3f) as u32;
                va >> shift << shift == k & !0x3f
            })
        })
    }

    /// Drop the entries of the 4 KiB page holding `va`, in every array.
    fn drop_page(&mut self, va: u64) {
        let vpn = va >> 12;
        let want = vpn | self.gen_bits;
        let slot = (vpn as usize) & (TLB_SIZE - 1);
        for kind in self.e.iter_mut() {
            for ctx in kind.iter_mut() {
                if ctx[slot].tag & !(TLB_MMIO | TLB_CODE) == want {
                    ctx[slot] = TlbEntry::default();
                }
            }
        }
    }

    /// The superpage list, for a snapshot.
    pub(crate) fn superpages(&self) -> Option<Vec<u64>> {
        self.superpages.clone()
    }

    /// A restored TLB's superpage list (None: unknown, so every
    /// `sfence.vma` flushes everything until the next whole flush).
    pub(crate) fn set_superpages(&mut self, list: Option<Vec<u64>>) {
        self.superpages = list.filter(|l| l.len() <= SUPERPAGES_MAX);
    }
}

/// What a page-table walk found.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Walk {
    pub pa: u64,
    /// log2 of the size of the page the leaf maps (12: 4 KiB; more: a
    /// superpage; 64: no translation).
    pub shift: u32,
}

/// Physical addresses of the PTEs a walk read, then the one it wrote
/// (A/D update), in order (for the timing model).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct WalkTrace {
    pub ptes: [u64; 5],
    pub n: usize,
}

fn page_fault(kind: usize, va: u64) -> Trap {
    let cause = match kind {
        KIND_FETCH => CAUSE_FETCH_PAGE_FAULT,
        KIND_LOAD => CAUSE_LOAD_PAGE_FAULT,
        _ => CAUSE_STORE_PAGE_FAULT,
    };
    Trap::new(cause, va)
}

pub(crate) fn access_fault(kind: usize, va: u64) -> Trap {
    let cause = match kind {
        KIND_FETCH => CAUSE_FETCH_ACCESS,
        KIND_LOAD => CAUSE_LOAD_ACCESS,
        _ => CAUSE_STORE_ACCESS,
    };
    Trap::new(cause, va)
}

fn perm_of(kind: usize) -> Perm {
    match kind {
        KIND_FETCH => Perm::Exec,
        KIND_LOAD => Perm::Read,
        _ => Perm::Write,
    }
}

fn ctx_priv(ctx: usize) -> Priv {
    match ctx {
        CTX_U => Priv::User,
        CTX_M => Priv::Machine,
        _ => Priv::Supervisor,
    }
}

const PTE_V: u64 = 1;
const PTE_R: u64 = 2;
const PTE_W: u64 = 4;
const PTE_X: u64 = 8;
const PTE_U: u64 = 16;
const PTE_A: u64 = 64;
const PTE_D: u64 = 128;
/// N, PBMT and reserved bits: Svnapot/Svpbmt are not implemented.
const PTE_RESERVED: u64 = 0xffc0_0000_0000_0000;
const PTE_PPN_MASK: u64 = ((1 << 44) - 1) << 10;

impl<T: TimingModel> Hart<T> {
    /// Recompute the translation contexts after a change of privilege or mstatus.
    pub(crate) fn update_modes(&mut self) {
        let ms = self.csr.mstatus;
        let ctx = |p: Priv| match p {
            Priv::User => CTX_U,
            Priv::Supervisor if ms & MSTATUS_SUM != 0 => CTX_S_SUM,
            Priv::Supervisor => CTX_S,
            Priv::Machine => CTX_M,
        };
        self.fetch_ctx = if self.prv == Priv::Supervisor {
            CTX_S
        } else {
            ctx(self.prv)
        };
        self.refresh_stamp();
        let eff = if self.prv == Priv::Machine && ms & MSTATUS_MPRV != 0 {
            Priv::from_bits((ms >> MSTATUS_MPP_SHIFT) & 3)
        } else {
            self.prv
        };
        self.data_ctx = ctx(eff);
    }

    pub(crate) fn tlb_flush(&mut self) {
        self.stats.tlb_flushes += 1;
        self.tlb.flush();
        if self.tlb.gen_bits == 1 << GEN_SHIFT {
            // the generation wrapped: a first-level entry stamped with
            // it long ago must not match again
            self.blocks.forget_virtual();
        }
        self.refresh_stamp();
    }

    /// `sfence.vma` of the address `va`: drop what translates its page —
    /// all of a superpage's pieces if it may be in one (then everything) —
    /// and, if it may hold pcs of that page, the first level of the block
    /// cache, whose virtual pcs were mapped through the fetch entries.
    /// (Most fences are of data pages: emptying the first level at each
    /// sent every block lookup after it to the second level.)
    pub(crate) fn tlb_flush_page(&mut self, va: u64) {
        if self.tlb.in_superpage(va) {
            return self.tlb_flush();
        }
        self.stats.tlb_flushes += 1;
        self.stats.tlb_page_flushes += 1;
        let code = self.tlb.may_map_code_of(va);
        self.tlb.drop_page(va);
        if code {
            self.blocks.forget_virtual();
            // (the first level is empty: nothing outlives a fetch entry)
            self.tlb.fetch_replaced = false;
        }
        self.refresh_stamp();
    }

    /// Put the entry mapping virtual page `vpn` to the RAM page at `pa`
    /// into array `kind`, context `ctx`, under the current generation (a
    /// walk's fill or a snapshot's): a store entry of a code page carries
    /// [`TLB_CODE`], and every store entry is listed for
    /// [`Hart::flag_code_stores`].
    pub(crate) fn put_ram_entry(&mut self, kind: usize, ctx: usize, vpn: u64, pa: u64) {
        let slot = (vpn as usize) & (TLB_SIZE - 1);
        let code = kind == KIND_STORE && self.ram.is_code(pa);
        self.tlb.e[kind][ctx][slot] = TlbEntry {
            tag: vpn | self.tlb.gen_bits | if code { TLB_CODE } else { 0 },
            addend: (self.ram.host_ptr(pa) as u64).wrapping_sub(vpn << 12),
        };
        if kind == KIND_STORE {
            self.tlb.note_store_fill(ctx, slot);
        }
    }

    /// Keep stores to pages flagged as code since this hart last looked
    /// (by itself or another hart) off the store fast path: flag their
    /// store entries with [`TLB_CODE`]. Harts run one at a time, so looking
    /// when a slice starts and after each block decode is soon enough.
    #[inline(always)]
    pub(crate) fn flag_code_stores(&mut self) {
        if self.ram.code_marks() != self.code_marks_seen {
            self.flag_code_stores_now();
        }
    }

    #[inline(never)]
    fn flag_code_stores_now(&mut self) {
        self.code_marks_seen = self.ram.code_marks();
        let (gen, to_pa) = (self.tlb.gen_bits, self.host_to_pa(0));
        let entries = self.tlb.e[KIND_STORE].as_flattened_mut();
        for &i in &self.tlb.store_fills {
            let e = &mut entries[i as usize];
            // (live RAM entries not yet flagged: exactly the generation)
            if e.tag & !VPN_BITS == gen {
                let host = ((e.tag & VPN_BITS) << 12).wrapping_add(e.addend);
                if self.ram.is_code(host.wrapping_add(to_pa)) {
                    e.tag |= TLB_CODE;
                }
            }
        }
    }

    /// Walk the page tables for `va` in context `ctx`. `set_ad` updates the
    /// A/D bits as hardware does; observation walks pass false.
    pub(crate) fn walk(
        &self,
        va: u64,
        kind: usize,
        ctx: usize,
        set_ad: bool,
        trace: &mut WalkTrace,
    ) -> Result<Walk, Trap> {
        let prv = ctx_priv(ctx);
        let satp = self.csr.satp;
        let mode = satp >> 60;
        if prv == Priv::Machine || mode == SATP_MODE_BARE {
            return Ok(Walk { pa: va, shift: 64 });
        }
        let levels: u32 = if mode == SATP_MODE_SV48 { 4 } else { 3 };
        let va_bits = 12 + 9 * levels;
        // the address must be sign-extended from its top bit
        let top = (va as i64) >> (va_bits - 1);
        if top != 0 && top != -1 {
            return Err(page_fault(kind, va));
        }
        let mut table = (satp & ((1 << 44) - 1)) << 12;
        let mut level = levels;
        loop {
            level -= 1;
            let idx = (va >> (12 + 9 * level)) & 0x1ff;
            let pte_addr = table + idx * 8;
            // implicit accesses are checked as S-mode
            if !self.pmp.check(pte_addr, 8, Priv::Supervisor, Perm::Read) {
                return Err(access_fault(kind, va));
            }
            if trace.n < 4 {
                trace.ptes[trace.n] = pte_addr;
                trace.n += 1;
            }
            let Some(pte) = self.ram.read(pte_addr, 8) else {
                return Err(access_fault(kind, va));
            };
            if pte & PTE_V == 0 || (pte & PTE_R == 0 && pte & PTE_W != 0) || pte & PTE_RESERVED != 0
            {
                return Err(page_fault(kind, va));
            }
            let ppn = (pte & PTE_PPN_MASK) >> 10;
            if pte & (PTE_R | PTE_X) == 0 {
                if level == 0 {
                    return Err(page_fault(kind, va));
                }
                table = ppn << 12;
                continue;
            }
            // leaf: permissions
            let user = pte & PTE_U != 0;
            let ok = match kind {
                KIND_FETCH => pte & PTE_X != 0 && (if prv == Priv::User { user } else { !user }),
                _ => {
                    let readable = pte & PTE_R != 0
                        || (self.csr.mstatus & MSTATUS_MXR != 0 && pte & PTE_X != 0);
                    let rw = if kind == KIND_LOAD {
                        readable
                    } else {
                        pte & PTE_W != 0
                    };
                    let priv_ok = match ctx {
                        CTX_U => user,
                        CTX_S => !user,
                        _ => true, // S with SUM may touch U pages (never execute them)
                    };
                    rw && priv_ok
                }
            };
            if !ok {
                return Err(page_fault(kind, va));
            }
            // superpages must be aligned
            let low_mask = (1u64 << (9 * level)) - 1;
            if ppn & low_mask != 0 {
                return Err(page_fault(kind, va));
            }
            let need = PTE_A | if kind == KIND_STORE { PTE_D } else { 0 };
            if pte & need != need && set_ad {
                if !self.pmp.check(pte_addr, 8, Priv::Supervisor, Perm::Write) {
                    return Err(access_fault(kind, va));
                }
                // single-threaded machine: read-check-write is atomic
                self.ram.write(pte_addr, 8, pte | need);
                if trace.n < trace.ptes.len() {
                    trace.ptes[trace.n] = pte_addr;
                    trace.n += 1;
                }
            }
            let off_mask = (1u64 << (12 + 9 * level)) - 1;
            let pa = ((ppn << 12) & !off_mask) | (va & off_mask);
            return Ok(Walk {
                pa,
                shift: 12 + 9 * level,
            });
        }
    }

    /// Translate `[va, va+len)` (within one page) for an access of `kind`,
    /// filling the TLB when the whole page may be cached. Returns the
    /// physical address.
    pub(crate) fn translate(&mut self, va: u64, len: u64, kind: usize) -> Result<u64, Trap> {
        let ctx = if kind == KIND_FETCH {
            self.fetch_ctx
        } else {
            self.data_ctx
        };
        let vpn = va >> 12;
        let slot = (vpn as usize) & (TLB_SIZE - 1);
        let e = self.tlb.e[kind][ctx][slot];
        let want = vpn | self.tlb.gen_bits;
        if e.tag & !TLB_CODE == want {
            let pa = self.host_to_pa(va.wrapping_add(e.addend));
            if e.tag != want && !self.ram.is_code(pa) {
                // (a store wrote the page, which is code no more: stores
                // to it take the fast path again)
                self.tlb.e[kind][ctx][slot].tag = want;
            }
            return Ok(pa);
        }
        if e.tag == want | TLB_MMIO {
            return Ok(va.wrapping_add(e.addend));
        }
        self.stats.page_walks += 1;
        let mut trace = WalkTrace::default();
        let w = self.walk(va, kind, ctx, true, &mut trace);
        self.note_ram_write(); // A/D updates
        for &pte in &trace.ptes[..trace.n] {
            let extra = self.timing.mem(va, pte, 8, MemKind::Walk, false);
            self.charge(extra);
        }
        let w = w?;
        self.tlb.note_leaf(va, w.shift);
        let prv = ctx_priv(ctx);
        let perm = perm_of(kind);
        let page = w.pa & !0xfff;
        match self.pmp.check_page(page, prv, perm) {
            PageCheck::Uniform(false) => return Err(access_fault(kind, va)),
            PageCheck::Uniform(true) => {
                let old = e.tag & !TLB_MMIO;
                if kind == KIND_FETCH
                    && old != 0
                    && old >> GEN_SHIFT == self.tlb.gen_bits >> GEN_SHIFT
                {
                    // (a live entry, of another page: `e` did not match)
                    self.tlb.fetch_replaced = true;
                }
                if self.ram.contains(page, 4096) {
                    self.put_ram_entry(kind, ctx, vpn, page);
                } else {
                    self.tlb.e[kind][ctx][slot] = TlbEntry {
                        tag: want | TLB_MMIO,
                        addend: page.wrapping_sub(va & !0xfff),
                    };
                }
            }
            PageCheck::Mixed => {
                if !self.pmp.check(w.pa, len, prv, perm) {
                    return Err(access_fault(kind, va));
                }
            }
        }
        Ok(w.pa)
    }

    #[inline(always)]
    pub(crate) fn host_to_pa(&self, host: u64) -> u64 {
        host.wrapping_sub(self.ram_host as u64)
            .wrapping_add(self.ram_base)
    }

    /// Observation: copy `buf.len()` bytes at `va` (all in `va`'s page)
    /// through the data TLB's load entry for `ctx`, if it holds the page
    /// as RAM: the very translation the hart's own load would use (entries
    /// are exact to a walk under the current `satp`, PMP and MXR: changing
    /// any of them flushes the TLB). False if it does not hold it.
    pub(crate) fn tlb_peek(&self, va: u64, ctx: usize, buf: &mut [u8]) -> bool {
        let vpn = va >> 12;
        let e = &self.tlb.e[KIND_LOAD][ctx & 3][(vpn as usize) & (TLB_SIZE - 1)];
        if e.tag != vpn | self.tlb.gen_bits || (va & 0xfff) as usize + buf.len() > 4096 {
            return false;
        }
        let host = va.wrapping_add(e.addend) as *const u8;
        // SAFETY: the entry maps this whole page to RAM (checked at fill:
        // an MMIO entry's tag carries TLB_MMIO and never matches here) and
        // the bytes stay inside the page.
        unsafe { std::ptr::copy_nonoverlapping(host, buf.as_mut_ptr(), buf.len()) };
        true
    }

    /// Observation: the physical address of `va`'s page as a load at the
    /// current privilege reaches it, as [`Hart::read_virt`] does (TLB
    /// entry, else a side-effect-free walk, PMP checked at `va`); None
    /// unless that page is RAM (see `PageReader`).
    pub(crate) fn peek_ram_page(&self, va: u64) -> Option<u64> {
        self.peek_page_in(va, self.data_ctx)
    }

    /// As [`Self::peek_ram_page`] for the supervisor's view through the
    /// current `satp`, whatever the privilege now, as
    /// [`Hart::read_kernel_virt`] reads (None while translation is off).
    pub(crate) fn peek_kernel_ram_page(&self, va: u64) -> Option<u64> {
        if self.csr.satp >> 60 == 0 {
            return None;
        }
        self.peek_page_in(va, CTX_S)
    }

    fn peek_page_in(&self, va: u64, ctx: usize) -> Option<u64> {
        let vpn = va >> 12;
        let e = &self.tlb.e[KIND_LOAD][ctx & 3][(vpn as usize) & (TLB_SIZE - 1)];
        let pa = if e.tag == vpn | self.tlb.gen_bits {
            // (an MMIO entry's tag carries TLB_MMIO and never matches here)
            self.host_to_pa(va.wrapping_add(e.addend))
        } else {
            let w = self
                .walk(va, KIND_LOAD, ctx, false, &mut WalkTrace::default())
                .ok()?;
            self.pmp
                .check(w.pa, 1, ctx_priv(ctx), Perm::Read)
                .then_some(w.pa)?
        };
        let page = pa & !0xfff;
        self.ram.contains(page, 4096).then_some(page)
    }

    /// Observation-only translation: no A/D update, no TLB fill, no trap.
    pub(crate) fn translate_peek(&self, va: u64, kind: usize) -> Option<u64> {
        let ctx = if kind == KIND_FETCH {
            self.fetch_ctx
        } else {
            self.data_ctx
        };
        let w = self
            .walk(va, kind, ctx, false, &mut WalkTrace::default())
            .ok()?;
        self.pmp
            .check(w.pa, 1, ctx_priv(ctx), perm_of(kind))
            .then_some(w.pa)
    }
}
