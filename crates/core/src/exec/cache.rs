//! The decoded-block cache: blocks of [`Op`]s keyed by physical address
//! with a first level keyed by virtual pc, how they are found or decoded,
//! invalidated, and saved in a snapshot.

use std::collections::HashMap;

use hs_isa::{insn_len, Insn};
use hs_timing::{InsnClass, Operands, TimingModel};

use super::predecode::ends_block;
use super::Op;
use crate::mmu::*;
use crate::trap::*;
use crate::{Hart, Priv};

#[derive(Clone, Copy, Default)]
struct BlockEntry {
    pa: u64,
    gen: u32,
    start: u32,
    n: u32,
}

/// First-level lookup by virtual pc. `stamp` captures everything the
/// pc → block mapping depends on: the TLB generation (no flush since),
/// the fetch context and the block-cache generation.
#[derive(Clone, Copy, Default)]
pub(crate) struct VEntry {
    pc: u64,
    stamp: u64,
    start: u32,
    n: u32,
    pa: u64,
}

// (translated code reads an entry's fields at one-byte offsets)
const _: () = assert!(std::mem::size_of::<VEntry>() <= 128);

/// Second-level entries (direct-mapped by physical address). A block a
/// conflict evicts is decoded again into fresh arena space, and loses its
/// translation: on the debian P87 boot 2^15 entries decoded 211,000
/// blocks (filling the arena, which empties everything, twice more),
/// 2^17 106,000 and 2^18 91,000, the boot 12% faster (6 MiB a hart, the
/// pages faulted in as used).
const TABLE_BITS: u32 = 18;
const VCACHE_BITS: u32 = 14;
pub(crate) const MAX_BLOCK_INSNS: usize = 64;
/// The arena is reset when it holds this many ops (blocks evicted from the
/// direct-mapped table leave garbage behind), unless
/// [`Hart::set_block_cache_ops`] chose another size.
pub(crate) const ARENA_LIMIT: usize = 1 << 20;
/// The smallest and largest arena [`Hart::set_block_cache_ops`] takes.
pub const BLOCK_CACHE_OPS_MIN: usize = 16 * MAX_BLOCK_INSNS;
pub const BLOCK_CACHE_OPS_MAX: usize = 1 << 24;

/// A block cache's contents as [`Hart::save_blocks`] describes them.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct BlocksSaved {
    /// (slot, physical address) of each live second-level entry.
    table: Vec<(u32, u64)>,
    /// (pc, physical address, fetch context) of each live first-level entry.
    pub(crate) vcache: Vec<(u64, u64, u8)>,
    page_slots: Vec<(u64, Vec<u32>)>,
    /// Ops in the arena.
    arena: usize,
    code_gen_seen: u64,
}

/// A hart's block cache: its own first level (virtual pc to block, under
/// the hart's fetch stamp) over [`Code`], which the harts of a machine
/// share (see [`Hart::share_code_with`]); `Code`'s fields are reached
/// through this (`Deref`).
///
/// Invalidation is per page where possible: `page_slots` lists the table
/// slots holding blocks of each page, and a write to a code page clears
/// just those (plus the whole virtual-pc level, which refills from the
/// table without decoding).
pub(crate) struct Blocks {
    vcache: Box<[VEntry]>,
    /// Generation of `vcache` entries (bumped by any invalidation).
    pub vgen: u32,
    /// The shared code's `epoch` this hart's first level last matched.
    epoch_seen: u32,
    /// Runs of a block before this hart translates it (0: the model's
    /// default; see [`Hart::set_translate_after`]).
    pub hot: u32,
    /// Blocks this hart translated, and the host time it took.
    pub translated: u64,
    pub translate_nanos: u64,
    /// Instructions this hart's block interpreter retired (see
    /// [`super::TranslationStats::interpreted`]).
    pub interpreted: u64,
    code: std::rc::Rc<std::cell::UnsafeCell<Code>>,
    /// Room that keeps the hart's hot fields apart modulo 4 KiB (rustc
    /// places the hart's fields by their sizes, so this moves the ones
    /// after it): see the test `hot_hart_fields_do_not_alias_modulo_4_kib`.
    _layout: [u64; 149],
}

/// What harts running the same model share: decoded blocks keyed by
/// physical address (the second level), the arena of their ops and their
/// translations. `ops[0]` is a scratch slot for instructions that cannot
/// be cached (page-crossing, PMP-split pages), used at once.
pub(crate) struct Code {
    table: Box<[BlockEntry]>,
    ops: Vec<Op>,
    /// Generation of `table` entries (bumped by a full flush).
    pub gen: u32,
    /// Bumped whenever blocks are dropped (a flush, a page): every hart's
    /// first level then empties before its next look-up.
    epoch: u32,
    /// The RAM's code generation whose writes have been dropped (by
    /// whichever hart looked first: see `Hart::drop_written_code`).
    pub code_gen_seen: u64,
    page_slots: HashMap<u64, Vec<u32>>,
    /// Ops by instruction word, so a re-decoded block (after a flush, an
    /// eviction or a code write) mostly copies instead of decoding: an op
    /// is a pure function of its word (and its offset, set on use).
    memo: Box<[Op]>,
    /// Ops the arena holds before it is reset.
    limit: usize,
    /// Hot blocks translated to host code (keyed by arena index).
    pub jit: super::jit::Jit,
}

impl Code {
    fn new() -> std::rc::Rc<std::cell::UnsafeCell<Code>> {
        let scratch = Op {
            insn: Insn::Illegal(0),
            bits: 0,
            len: 2,
            class: InsnClass::System,
            off: 0,
            ops: Operands::EMPTY,
        };
        std::rc::Rc::new(std::cell::UnsafeCell::new(Code {
            table: zeroed_table(1 << TABLE_BITS),
            ops: vec![scratch],
            gen: 1,
            epoch: 0,
            code_gen_seen: 0,
            page_slots: HashMap::new(),
            // every entry holds word 0 decoded, so a hit is always right
            memo: vec![Op::decoded(0, 0); 1 << MEMO_BITS].into_boxed_slice(),
            limit: ARENA_LIMIT,
            jit: super::jit::Jit::new(),
        }))
    }
}

impl std::ops::Deref for Blocks {
    type Target = Code;
    #[inline(always)]
    fn deref(&self) -> &Code {
        // SAFETY: harts run one at a time on one thread (`Rc`), and a hart
        // reaches the shared code only through its own `Blocks`.
        unsafe { &*self.code.get() }
    }
}
impl std::ops::DerefMut for Blocks {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Code {
        // SAFETY: as `deref`
        unsafe { &mut *self.code.get() }
    }
}

/// `n` empty second-level entries, zeroed by the allocator (fresh pages
/// from the OS for a table this large), so a hart that decodes little
/// touches little of it.
fn zeroed_table(n: usize) -> Box<[BlockEntry]> {
    let layout = std::alloc::Layout::array::<BlockEntry>(n).expect("table size");
    // SAFETY: a non-zero-sized layout; all-zero bytes are a valid
    // `BlockEntry` (integers only: the empty entry, generation 0, which no
    // live generation equals); the allocation has the slice's layout, so
    // the box frees it with the same.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout).cast::<BlockEntry>();
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n))
    }
}

/// Entries of `Blocks::memo` (a power of two).
const MEMO_BITS: u32 = 12;

impl Blocks {
    pub fn new() -> Self {
        Blocks {
            vcache: vec![VEntry::default(); 1 << VCACHE_BITS].into_boxed_slice(),
            vgen: 1,
            epoch_seen: 0,
            hot: 0,
            translated: 0,
            translate_nanos: 0,
            interpreted: 0,
            code: Code::new(),
            _layout: [0; 149],
        }
    }

    /// Run from a cache of this hart's own from now on (emptied).
    pub fn unshare(&mut self) {
        let limit = self.limit;
        self.code = Code::new();
        self.limit = limit;
        self.epoch_seen = self.epoch.wrapping_sub(1);
    }

    /// Share `other`'s code (second level, arena, translations) from now on.
    pub fn share(&mut self, other: &Blocks) {
        self.code = other.code.clone();
        self.epoch_seen = self.epoch.wrapping_sub(1);
    }

    /// Whether another hart runs from this cache too.
    pub fn shared(&self) -> bool {
        std::rc::Rc::strong_count(&self.code) > 1
    }

    /// Which cache this is (equal for harts that share one).
    pub fn code_id(&self) -> usize {
        std::rc::Rc::as_ptr(&self.code) as usize
    }

    /// Empty the first level if another hart dropped blocks since.
    #[inline(always)]
    pub fn sync(&mut self) {
        if self.epoch_seen != self.epoch {
            self.epoch_seen = self.epoch;
            self.bump_vgen();
        }
    }

    /// Host memory the cache's contents take: the ops in the arena, both
    /// lookup levels, the decode memo and the per-page lists (what is in
    /// use, not what the allocator reserved, so a restored hart reports
    /// what the hart it was saved from did).
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        self.ops.len() * size_of::<Op>()
            + self.vcache.len() * size_of::<VEntry>()
            + self.table.len() * size_of::<BlockEntry>()
            + self.memo.len() * size_of::<Op>()
            + self
                .page_slots
                .values()
                .map(|v| v.len() * 4 + 16)
                .sum::<usize>()
    }

    /// `Op::decoded(word, off)`, from the memo when it holds `word`.
    #[inline]
    fn decode_word(&mut self, word: u32, off: u16) -> Op {
        let i = (word.wrapping_mul(0x9e37_79b1) >> (32 - MEMO_BITS)) as usize;
        let m = &mut self.memo[i];
        if m.bits != word {
            *m = Op::decoded(word, 0);
        }
        Op { off, ..*m }
    }
    pub fn flush(&mut self) {
        self.ops.truncate(1);
        self.jit.reset();
        self.page_slots.clear();
        self.gen = self.gen.wrapping_add(1);
        if self.gen == 0 {
            self.table.fill(BlockEntry::default());
            self.gen = 1;
        }
        self.epoch = self.epoch.wrapping_add(1);
        self.sync();
    }
    /// Empty the first level (virtual pc to block): the mapping of some
    /// virtual page may have changed.
    pub(crate) fn forget_virtual(&mut self) {
        self.bump_vgen();
    }
    fn bump_vgen(&mut self) {
        self.vgen = self.vgen.wrapping_add(1);
        if self.vgen == 0 {
            self.vcache.fill(VEntry::default());
            self.vgen = 1;
        }
    }
    /// Drop the blocks decoded from the page at `page` (its ops stay in the
    /// arena as garbage until the next full flush).
    pub fn invalidate_page(&mut self, page: u64) {
        if let Some(slots) = self.page_slots.remove(&page) {
            for s in slots {
                let e = &mut self.table[s as usize];
                if e.pa & !0xfff == page {
                    *e = BlockEntry::default();
                }
            }
            self.epoch = self.epoch.wrapping_add(1);
            self.sync();
        }
    }
    /// The block at virtual `pc` if the first level holds it under the
    /// current `stamp` (the chaining test of a taken branch or jump):
    /// (first op index, op count, physical address).
    #[inline(always)]
    pub(crate) fn lookup(&self, pc: u64, stamp: u64) -> Option<(usize, usize, u64)> {
        let v = &self.vcache[Self::vslot(pc)];
        (v.pc == pc && v.stamp == stamp).then_some((v.start as usize, v.n as usize, v.pa))
    }
    /// Where in a first level the entry that holds `pc` is, when any does
    /// (a translated exit's link cell keeps it: see `jit::emit`).
    pub(crate) fn ventry_offset(pc: u64) -> u64 {
        (Self::vslot(pc) * std::mem::size_of::<VEntry>()) as u64
    }
    /// The first level's entries (stable: allocated once; translated code
    /// finds the running hart's through its frame).
    pub(crate) fn vcache_addr(&self) -> u64 {
        self.vcache.as_ptr() as u64
    }
    /// How translated code finds an entry in a first level: the slot mask,
    /// the entry size and its field offsets (pc, stamp, start, pa).
    pub(crate) fn vcache_layout() -> (u32, u32, [i32; 4]) {
        use std::mem::{offset_of, size_of};
        (
            (1 << VCACHE_BITS) - 1,
            size_of::<VEntry>() as u32,
            [
                offset_of!(VEntry, pc) as i32,
                offset_of!(VEntry, stamp) as i32,
                offset_of!(VEntry, start) as i32,
                offset_of!(VEntry, pa) as i32,
            ],
        )
    }
    /// The arena's first op. Valid while no block is decoded: the run loop
    /// reads blocks through it (see `exec_block`).
    #[inline(always)]
    pub(crate) fn ops_ptr(&self) -> *const Op {
        self.ops.as_ptr()
    }
    /// Ops in the arena (the bound every entry lies within).
    #[inline(always)]
    pub(crate) fn arena_len(&self) -> usize {
        self.ops.len()
    }
    #[inline(always)]
    fn vslot(pc: u64) -> usize {
        ((pc >> 1) as usize) & ((1 << VCACHE_BITS) - 1)
    }
    #[inline(always)]
    fn slot(pa: u64) -> usize {
        (((pa >> 1) ^ (pa >> (TABLE_BITS + 1))) as usize) & ((1 << TABLE_BITS) - 1)
    }
}

impl<T: TimingModel> Hart<T> {
    /// Size the block cache's arena: `ops` decoded instructions (clamped to
    /// [`BLOCK_CACHE_OPS_MIN`]..=[`BLOCK_CACHE_OPS_MAX`]) before it is
    /// emptied and refilled, as QEMU's `tb-size`. A host cache: what the
    /// guest sees and every count the timing model keeps are the same
    /// whatever its size (`tests/engine_check.rs` holds a Linux boot to
    /// that); only host time and memory change. Empties the cache.
    pub fn set_block_cache_ops(&mut self, ops: usize) {
        self.blocks.limit = ops.clamp(BLOCK_CACHE_OPS_MIN, BLOCK_CACHE_OPS_MAX);
        self.flush_blocks();
    }

    /// Run the blocks (and their translations) `other` decodes, and
    /// decode for it those this hart runs first: one copy of the code
    /// both run, in the host's caches as in its memory. Only between
    /// harts whose models translate alike (the same shortcuts), else
    /// false and nothing changes. Empties this hart's cache.
    pub fn share_code_with(&mut self, other: &Hart<T>) -> bool {
        if self.timing.hooks_skippable() != other.timing.hooks_skippable()
            || self.timing.hooks_inlinable() != other.timing.hooks_inlinable()
            || self.timing.inline_hooks() != other.timing.inline_hooks()
        {
            return false;
        }
        self.blocks.share(&other.blocks);
        self.jit_prepare_frame(self.timing.inline_hooks().as_ref());
        self.refresh_stamp();
        true
    }

    /// Decode and translate on a cache of this hart's own from now on
    /// (undoes [`Hart::share_code_with`]). Empties this hart's cache.
    pub fn own_code(&mut self) {
        self.blocks.unshare();
        self.refresh_stamp();
    }

    /// Host memory the block cache holds, in bytes.
    pub fn block_cache_bytes(&self) -> usize {
        self.blocks.bytes()
    }

    /// What the block cache holds, for a snapshot. A host cache, but its
    /// contents show through: a virtual-pc hit skips translation (so what
    /// it holds decides which page walks the hart makes and reports to the
    /// timing model), a code write drops blocks only of pages that have
    /// some, and a full arena flushes everything. A restored hart decodes
    /// the same blocks again and starts with the same cache.
    pub(crate) fn save_blocks(&self) -> BlocksSaved {
        let b = &self.blocks;
        // (a hart that has not looked since another hart sharing its cache
        // dropped blocks has an empty first level: it empties at its next look)
        let live = if b.epoch_seen == b.epoch {
            self.tlb.gen_bits | b.vgen as u64
        } else {
            u64::MAX
        };
        let mut page_slots: Vec<(u64, Vec<u32>)> =
            b.page_slots.iter().map(|(p, v)| (*p, v.clone())).collect();
        page_slots.sort();
        BlocksSaved {
            table: b
                .table
                .iter()
                .enumerate()
                .filter(|(_, e)| e.gen == b.gen && e.start != 0)
                .map(|(i, e)| (i as u32, e.pa))
                .collect(),
            vcache: b
                .vcache
                .iter()
                .filter(|v| v.stamp & !(3 << 40) == live && v.start != 0)
                .map(|v| (v.pc, v.pa, ((v.stamp >> 40) & 3) as u8))
                .collect(),
            page_slots,
            arena: b.ops.len(),
            code_gen_seen: b.code_gen_seen,
        }
    }

    /// Rebuild what [`Hart::save_blocks`] described, on a flushed cache.
    /// An entry that no longer decodes (or names a slot it cannot be in) is
    /// left out: the cache is then less full than it was, never wrong.
    pub(crate) fn restore_blocks(&mut self, saved: &BlocksSaved) {
        Self::restore_blocks_of(&mut [self], &[saved]);
    }

    /// [`Hart::restore_blocks`] for harts that share one cache (see
    /// [`Hart::share_code_with`]), `saved[i]` what `harts[i]` saved: the
    /// shared levels and arena as the first described them (every sharer
    /// saved the same), each hart's first level as it described its own.
    /// Every block any of them names is decoded before the arena is filled
    /// to the length it had, so it fills (and is flushed) when it did.
    pub(crate) fn restore_blocks_of(harts: &mut [&mut Self], saved: &[&BlocksSaved]) {
        let Some(shared) = saved.first() else {
            return;
        };
        let mut by_pa: HashMap<u64, (u32, u32)> = HashMap::new();
        let mut decode = |h: &mut Self, pc: u64, pa: u64| -> Option<(u32, u32)> {
            if let Some(&d) = by_pa.get(&pa) {
                return Some(d);
            }
            // Never let the arena fill (its flush would leave the entries
            // made so far pointing past its end), and never take the
            // uncached single-instruction path (it translates and times).
            if h.blocks.ops.len() + MAX_BLOCK_INSNS > h.blocks.limit {
                return None;
            }
            let len = insn_len(h.ram.read(pa, 2)? as u16) as u64;
            if (pa & 0xfff) + len > 0x1000 {
                return None;
            }
            match h.decode_block(pc, pa) {
                Ok((start, n, _)) if start != 0 => {
                    by_pa.insert(pa, (start as u32, n as u32));
                    Some((start as u32, n as u32))
                }
                _ => None,
            }
        };
        for &(slot, pa) in &shared.table {
            if slot as usize == Blocks::slot(pa) {
                decode(harts[0], pa, pa);
            }
        }
        for (i, saved) in saved.iter().enumerate().take(harts.len()) {
            // (the first level as of the shared cache's last drop)
            harts[i].blocks.sync();
            for &(pc, pa, ctx) in &saved.vcache {
                if ctx > 3 {
                    continue;
                }
                let Some((start, n)) = decode(harts[0], pc, pa) else {
                    continue;
                };
                let h = &mut *harts[i];
                let stamp = h.tlb.gen_bits | ((ctx as u64) << 40) | h.blocks.vgen as u64;
                h.blocks.vcache[Blocks::vslot(pc)] = VEntry {
                    pc,
                    stamp,
                    start,
                    n,
                    pa,
                };
            }
        }
        // The table as it was: decoding for the first levels may have put
        // blocks in slots that held others (or nothing).
        let b = &mut harts[0].blocks;
        let gen = b.gen;
        b.table.fill(BlockEntry::default());
        for &(slot, pa) in &shared.table {
            if let (true, Some(&(start, n))) = (slot as usize == Blocks::slot(pa), by_pa.get(&pa)) {
                b.table[slot as usize] = BlockEntry { pa, gen, start, n };
            }
        }
        let slots = b.table.len() as u32;
        b.page_slots = shared
            .page_slots
            .iter()
            .map(|(p, v)| (*p, v.iter().copied().filter(|&s| s < slots).collect()))
            .collect();
        // Every entry lies inside the arena (checked, not assumed: the run
        // loop follows them without bounds checks).
        let ops = b.ops.len() as u64;
        let inside = |start: u32, n: u32| start != 0 && start as u64 + n as u64 <= ops;
        for e in b.table.iter_mut() {
            if !inside(e.start, e.n) {
                *e = BlockEntry::default();
            }
        }
        // The arena as full as it was, so it fills (and is flushed) when it did.
        let scratch = b.ops[0];
        let want = shared.arena.min(b.limit + MAX_BLOCK_INSNS);
        while b.ops.len() < want {
            b.ops.push(scratch);
        }
        b.code_gen_seen = shared.code_gen_seen;
        for h in harts.iter_mut() {
            for v in h.blocks.vcache.iter_mut() {
                if !inside(v.start, v.n) {
                    *v = VEntry::default();
                }
            }
        }
    }

    /// Find or decode the block at `pc`: (first op index, op count).
    #[inline(always)]
    pub(crate) fn fetch_block(&mut self) -> Result<(usize, usize, u64), Trap> {
        let pc = self.pc;
        let v = &self.blocks.vcache[Blocks::vslot(pc)];
        if v.pc == pc && v.stamp == self.fetch_stamp {
            return Ok((v.start as usize, v.n as usize, v.pa));
        }
        let r = self.fetch_block_miss();
        if let Ok((start, n, pa)) = r {
            if start != 0 {
                let stamp = self.fetch_stamp;
                self.blocks.vcache[Blocks::vslot(pc)] = VEntry {
                    pc,
                    stamp,
                    start: start as u32,
                    n: n as u32,
                    pa,
                };
            }
        }
        r
    }

    #[inline(never)]
    fn fetch_block_miss(&mut self) -> Result<(usize, usize, u64), Trap> {
        let pc = self.pc;
        let vpn = pc >> 12;
        let e = self.tlb.e[KIND_FETCH][self.fetch_ctx & 3][(vpn as usize) & (TLB_SIZE - 1)];
        if e.tag != vpn | self.tlb.gen_bits {
            return self.fetch_block_slow();
        }
        let pa = self.host_to_pa(pc.wrapping_add(e.addend));
        self.cached_or_decoded(pc, pa)
    }

    /// The block at physical `pa` (virtual `pc`) from the table, or decoded.
    #[inline(always)]
    fn cached_or_decoded(&mut self, pc: u64, pa: u64) -> Result<(usize, usize, u64), Trap> {
        let b = self.blocks.table[Blocks::slot(pa)];
        if b.pa == pa && b.gen == self.blocks.gen {
            return Ok((b.start as usize, b.n as usize, pa));
        }
        self.decode_block(pc, pa)
    }

    #[inline(never)]
    fn fetch_block_slow(&mut self) -> Result<(usize, usize, u64), Trap> {
        let pc = self.pc;
        let pa = self.translate(pc, 2, KIND_FETCH)?;
        if !self.ram.contains(pa, 2) {
            // executing from devices is not supported
            return Err(Trap::new(CAUSE_FETCH_ACCESS, pc));
        }
        if self.fetch_tlb_holds(pc) {
            // The walk refilled the TLB (after an `sfence.vma`, a satp
            // write or an eviction): the block may well still be cached,
            // and decoding it afresh would also lose its translation.
            return self.cached_or_decoded(pc, pa);
        }
        // PMP splits this page: one checked instruction at a time
        self.single_op(pc, pa)
    }

    /// Whether the fetch TLB maps `pc`'s page to RAM: after a translation
    /// succeeded, it does unless PMP splits the page.
    pub(crate) fn fetch_tlb_holds(&self, pc: u64) -> bool {
        let vpn = pc >> 12;
        let e = self.tlb.e[KIND_FETCH][self.fetch_ctx & 3][(vpn as usize) & (TLB_SIZE - 1)];
        e.tag == vpn | self.tlb.gen_bits
    }

    /// Decode one instruction into the scratch slot (not cached).
    fn single_op(&mut self, pc: u64, pa: u64) -> Result<(usize, usize, u64), Trap> {
        self.blocks.ops[0] = self.fetch_single(pc, pa)?;
        Ok((0, 1, pa))
    }

    /// Fetch the one instruction at `pc` (physical `pa`) checking PMP for
    /// each half: for a page PMP splits, or an instruction that crosses
    /// into the next page (translated here).
    pub(crate) fn fetch_single(&mut self, pc: u64, pa: u64) -> Result<Op, Trap> {
        let prv = if self.fetch_ctx == CTX_U {
            Priv::User
        } else if self.fetch_ctx == CTX_M {
            Priv::Machine
        } else {
            Priv::Supervisor
        };
        if !self.pmp.check(pa, 2, prv, crate::pmp::Perm::Exec) {
            return Err(Trap::new(CAUSE_FETCH_ACCESS, pc));
        }
        let lo = self
            .ram
            .read(pa, 2)
            .ok_or(Trap::new(CAUSE_FETCH_ACCESS, pc))?;
        let mut word = lo as u32;
        if insn_len(lo as u16) == 4 {
            let pc2 = pc.wrapping_add(2);
            let pa2 = if pc2 & 0xfff == 0 {
                self.translate(pc2, 2, KIND_FETCH)?
            } else {
                pa + 2
            };
            if !self.pmp.check(pa2, 2, prv, crate::pmp::Perm::Exec) {
                return Err(Trap::new(CAUSE_FETCH_ACCESS, pc2));
            }
            let hi = self
                .ram
                .read(pa2, 2)
                .ok_or(Trap::new(CAUSE_FETCH_ACCESS, pc2))?;
            word |= (hi as u32) << 16;
        }
        Ok(Op::decoded(word, 0))
    }

    #[inline(never)]
    fn decode_block(&mut self, pc: u64, pa: u64) -> Result<(usize, usize, u64), Trap> {
        if self.blocks.ops.len() > self.blocks.limit {
            self.flush_blocks();
        }
        let page_end = (pa | 0xfff) + 1;
        let start = self.blocks.ops.len();
        let mut a = pa;
        loop {
            let Some(lo) = self.ram.read(a, 2) else { break };
            let len = insn_len(lo as u16) as u64;
            if a + len > page_end {
                if a == pa {
                    return self.single_op(pc, pa); // first instruction crosses the page
                }
                break;
            }
            let word = if len == 4 {
                self.ram.read(a, 4).unwrap_or(0) as u32
            } else {
                lo as u32
            };
            let op = self.blocks.decode_word(word, (a - pa) as u16);
            self.blocks.ops.push(op);
            a += len;
            if ends_block(&op.insn)
                || self.blocks.ops.len() - start >= MAX_BLOCK_INSNS
                || a >= page_end
            {
                break;
            }
        }
        let n = self.blocks.ops.len() - start;
        self.stats.blocks_decoded += 1;
        if n == 0 {
            return Err(Trap::new(CAUSE_FETCH_ACCESS, pc));
        }
        self.ram.mark_code(pa);
        self.flag_code_stores();
        let slot = Blocks::slot(pa);
        self.blocks.table[slot] = BlockEntry {
            pa,
            gen: self.blocks.gen,
            start: start as u32,
            n: n as u32,
        };
        self.blocks
            .page_slots
            .entry(pa & !0xfff)
            .or_default()
            .push(slot as u32);
        Ok((start, n, pa))
    }
}

#[cfg(test)]
mod restore_tests {
    use super::*;
    use hs_bus::GuestRam;

    /// A snapshot naming more blocks than the arena holds (and naming some
    /// twice) restores what fits: no live entry points past the arena's end,
    /// which the run loop would follow without a bounds check.
    #[test]
    fn restored_blocks_never_point_past_the_arena() {
        const BASE: u64 = 0x8000_0000;
        const SIZE: u64 = 8 << 20;
        let ram = GuestRam::new(BASE, SIZE).unwrap();
        for a in (0..SIZE).step_by(4) {
            ram.write(BASE + a, 4, 0x13); // nop: blocks of 64 instructions
        }
        let cfg = crate::HartConfig {
            hart_id: 0,
            cycles_per_tick: 100,
        };
        let mut h = Hart::new(cfg, ram, hs_timing::Atomic);
        let blocks: Vec<(u64, u64, u8)> = (0..SIZE / 256)
            .map(|i| (BASE + i * 256, BASE + i * 256, 1))
            .collect();
        let mut vcache = blocks.clone();
        vcache.extend(blocks.iter().map(|&(pc, pa, _)| (pc, pa, 3)));
        let saved = BlocksSaved {
            table: blocks
                .iter()
                .map(|&(_, pa, _)| (Blocks::slot(pa) as u32, pa))
                .collect(),
            vcache,
            page_slots: Vec::new(),
            arena: 0,
            code_gen_seen: 0,
        };
        h.flush_blocks();
        h.restore_blocks(&saved);
        let ops = h.blocks.ops.len() as u64;
        assert!(ops <= (ARENA_LIMIT + MAX_BLOCK_INSNS) as u64, "{ops} ops");
        let live = h.tlb.gen_bits | h.blocks.vgen as u64;
        let mut n = 0;
        for v in h.blocks.vcache.iter() {
            if v.stamp & !(3 << 40) == live && v.start != 0 {
                n += 1;
                assert!(
                    v.start as u64 + v.n as u64 <= ops,
                    "an entry points past the arena"
                );
            }
        }
        for e in h.blocks.table.iter() {
            if e.gen == h.blocks.gen && e.start != 0 {
                assert!(
                    e.start as u64 + e.n as u64 <= ops,
                    "a table entry points past the arena"
                );
            }
        }
        assert!(n >= 64, "some blocks were restored ({n})");
    }
}
