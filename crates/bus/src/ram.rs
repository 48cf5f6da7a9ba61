//! Guest DRAM: one zero-initialised anonymous host mapping, bounds-checked.
//! The host kernel backs a page only when the guest first touches it, so a
//! `-m 2G` guest that uses 100 MiB costs about 100 MiB of host memory.
//!
//! One machine's harts all run on one host thread, so the block is shared
//! with `Rc` and mutated through raw pointers: no borrow is ever held across
//! a call, and every public accessor checks its range first.

use std::cell::Cell;
use std::rc::Rc;

/// Granule for code-page tracking (matches the smallest RISC-V page).
pub const PAGE_SHIFT: u32 = 12;
/// How many recent code-page writes [`GuestRam::code_write`] remembers.
pub const CODE_WRITE_LOG: usize = 256;

struct Block {
    base: u64,
    size: u64,
    ptr: *mut u8,
    /// One flag per 4 KiB page: some hart holds decoded instructions from it.
    code: Box<[Cell<bool>]>,
    /// Bumped whenever a store (hart or DMA) hits a page flagged as code;
    /// harts compare it to their own copy to know when to drop decoded blocks.
    code_gen: Cell<u64>,
    /// Bumped whenever a page becomes flagged as code: a hart whose copy
    /// differs must stop its store fast path for pages now code (see
    /// [`GuestRam::code_marks`]).
    code_marks: Cell<u64>,
    /// Page base address of the store behind each recent `code_gen` value.
    code_log: Box<[Cell<u64>]>,
    /// Per page, how often a store hit it while flagged as code: a hot-code
    /// hint names the count it was given under, so a write ends it.
    code_writes: Box<[Cell<u32>]>,
    /// Hot-code hints (see [`GuestRam::note_hot_code`]), by a hash of the
    /// block's address: (address + 1, its page's `code_writes`); 0 empty.
    hot: Box<[Cell<(u64, u32)>]>,
}

/// Hot-code hints kept (a power of two; a collision only forgets one).
const HOT_HINTS: usize = 1 << 15;

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: ptr and size are the mapping GuestRam::new made.
        unsafe {
            libc::munmap(self.ptr.cast(), self.size as usize);
        }
    }
}

/// Shared handle on a machine's DRAM. Cloning is cheap (same memory).
#[derive(Clone)]
pub struct GuestRam(Rc<Block>);

/// Error creating guest RAM.
#[derive(Debug, thiserror::Error)]
pub enum RamError {
    #[error("guest RAM size {0} bytes is not a positive multiple of 4 KiB")]
    BadSize(u64),
    #[error("cannot allocate {0} bytes of host memory for guest RAM")]
    NoMemory(u64),
}

/// One detached page at address 0: a stand-in a device holds only while
/// its state is being restored, before the machine's RAM is put back.
impl Default for GuestRam {
    fn default() -> Self {
        GuestRam::new(0, 1 << PAGE_SHIFT).expect("one page of host memory")
    }
}

impl GuestRam {
    /// Map `size` bytes of zeroed DRAM at physical address `base`. Not
    /// through the allocator: Rust's zeroed allocation at page alignment is
    /// an allocation plus a memset that touches every page (a `-m 2G` boot
    /// was 2.16 GB resident before the guest ran).
    pub fn new(base: u64, size: u64) -> Result<Self, RamError> {
        if size == 0 || size & ((1 << PAGE_SHIFT) - 1) != 0 || base.checked_add(size).is_none() {
            return Err(RamError::BadSize(size));
        }
        let len = usize::try_from(size).map_err(|_| RamError::BadSize(size))?;
        // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(RamError::NoMemory(size));
        }
        let ptr = ptr.cast::<u8>();
        let pages = (size >> PAGE_SHIFT) as usize;
        let code = (0..pages).map(|_| Cell::new(false)).collect();
        let code_log = (0..CODE_WRITE_LOG).map(|_| Cell::new(0)).collect();
        let code_writes = (0..pages).map(|_| Cell::new(0)).collect();
        let hot = (0..HOT_HINTS).map(|_| Cell::new((0, 0))).collect();
        Ok(Self(Rc::new(Block {
            base,
            size,
            ptr,
            code,
            code_gen: Cell::new(0),
            code_marks: Cell::new(0),
            code_log,
            code_writes,
            hot,
        })))
    }

    pub fn base(&self) -> u64 {
        self.0.base
    }
    pub fn size(&self) -> u64 {
        self.0.size
    }
    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.0.base + self.0.size
    }

    /// Is `[pa, pa+len)` entirely inside RAM?
    #[inline(always)]
    pub fn contains(&self, pa: u64, len: u64) -> bool {
        let off = pa.wrapping_sub(self.0.base);
        off < self.0.size && len <= self.0.size - off
    }

    /// Host pointer to the byte at `pa`. Only valid while this `GuestRam`
    /// (or a clone) is alive; the caller must have checked [`Self::contains`]
    /// for the whole range it will touch.
    #[inline(always)]
    pub fn host_ptr(&self, pa: u64) -> *mut u8 {
        debug_assert!(self.contains(pa, 1));
        // SAFETY: in bounds by the caller's contract.
        unsafe { self.0.ptr.add((pa - self.0.base) as usize) }
    }

    /// Read a little-endian value of `size` (1, 2, 4, 8) bytes; `None` if out of RAM.
    #[inline(always)]
    pub fn read(&self, pa: u64, size: u8) -> Option<u64> {
        if !self.contains(pa, size as u64) {
            return None;
        }
        let p = self.host_ptr(pa);
        // SAFETY: range checked above; unaligned reads are allowed.
        unsafe {
            Some(match size {
                1 => *p as u64,
                2 => u16::from_le(std::ptr::read_unaligned(p as *const u16)) as u64,
                4 => u32::from_le(std::ptr::read_unaligned(p as *const u32)) as u64,
                8 => u64::from_le(std::ptr::read_unaligned(p as *const u64)),
                _ => return None,
            })
        }
    }

    /// Write the low `size` bytes of `val`; `false` if out of RAM.
    /// Marks code pages dirty (see [`Self::code_generation`]).
    #[inline(always)]
    pub fn write(&self, pa: u64, size: u8, val: u64) -> bool {
        if !self.contains(pa, size as u64) {
            return false;
        }
        let p = self.host_ptr(pa);
        // SAFETY: range checked above.
        unsafe {
            match size {
                1 => *p = val as u8,
                2 => std::ptr::write_unaligned(p as *mut u16, (val as u16).to_le()),
                4 => std::ptr::write_unaligned(p as *mut u32, (val as u32).to_le()),
                8 => std::ptr::write_unaligned(p as *mut u64, val.to_le()),
                _ => return false,
            }
        }
        self.note_store(pa, size as u64);
        true
    }

    /// Copy guest memory into `buf`; `false` (and nothing copied) if out of RAM.
    pub fn read_bytes(&self, pa: u64, buf: &mut [u8]) -> bool {
        if !self.contains(pa, buf.len() as u64) {
            return false;
        }
        // SAFETY: range checked; buf is a distinct host allocation.
        unsafe { std::ptr::copy_nonoverlapping(self.host_ptr(pa), buf.as_mut_ptr(), buf.len()) };
        true
    }

    /// Copy `data` into guest memory; `false` (and nothing written) if out of RAM.
    pub fn write_bytes(&self, pa: u64, data: &[u8]) -> bool {
        if !self.contains(pa, data.len() as u64) {
            return false;
        }
        // SAFETY: range checked; data is a distinct host allocation.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.host_ptr(pa), data.len()) };
        self.note_store(pa, data.len() as u64);
        true
    }

    /// Record that decoded instructions now exist for the page holding `pa`.
    #[inline]
    pub fn mark_code(&self, pa: u64) {
        if self.contains(pa, 1) {
            let flag = &self.0.code[self.page_index(pa)];
            if !flag.get() {
                flag.set(true);
                self.0.code_marks.set(self.0.code_marks.get() + 1);
            }
        }
    }

    /// Changes whenever a page becomes flagged as code. Harts keep stores
    /// to code pages off their fast path (whose only test is the TLB's):
    /// one whose copy differs must look for store entries of pages now
    /// code before its next store.
    #[inline(always)]
    pub fn code_marks(&self) -> u64 {
        self.0.code_marks.get()
    }

    /// Is the page holding `pa` flagged as code?
    #[inline(always)]
    pub fn is_code(&self, pa: u64) -> bool {
        self.contains(pa, 1) && self.0.code[self.page_index(pa)].get()
    }

    /// Changes whenever a store hits a code page. A hart whose copy differs
    /// must drop its decoded blocks (and may re-mark pages as it re-decodes).
    #[inline(always)]
    pub fn code_generation(&self) -> u64 {
        self.0.code_gen.get()
    }

    /// The page (its base address) whose store raised the code generation
    /// to `gen`, if that is among the last [`CODE_WRITE_LOG`] such stores.
    /// Lets a hart drop only the decoded blocks of pages that changed.
    pub fn code_write(&self, gen: u64) -> Option<u64> {
        let now = self.0.code_gen.get();
        (gen != 0 && gen <= now && now - gen < CODE_WRITE_LOG as u64)
            .then(|| self.0.code_log[(gen % CODE_WRITE_LOG as u64) as usize].get())
    }

    /// Remember that the block of code at `pa` ran often enough to be
    /// translated, until a store hits its page: a hart that decodes a block
    /// there (another hart running the same code, or this one after its
    /// blocks were dropped) may translate it at once instead of
    /// interpreting it warm again. A hint only: it changes which engine
    /// runs a block, never what the block does.
    pub fn note_hot_code(&self, pa: u64) {
        if self.contains(pa, 1) {
            let writes = self.0.code_writes[self.page_index(pa)].get();
            self.0.hot[hot_slot(pa)].set((pa + 1, writes));
        }
    }

    /// Whether [`Self::note_hot_code`] named `pa` and its page has not been
    /// written as code since.
    pub fn is_hot_code(&self, pa: u64) -> bool {
        self.contains(pa, 1)
            && self.0.hot[hot_slot(pa)].get()
                == (pa + 1, self.0.code_writes[self.page_index(pa)].get())
    }

    #[inline(always)]
    fn page_index(&self, pa: u64) -> usize {
        ((pa - self.0.base) >> PAGE_SHIFT) as usize
    }

    /// The code-page tracking, for a snapshot: the pages flagged as code
    /// (by index), the code generation and the recent-write log.
    pub fn code_state(&self) -> (Vec<u64>, u64, Vec<u64>) {
        let b = &self.0;
        let pages = (b.code.iter().enumerate())
            .filter(|(_, c)| c.get())
            .map(|(i, _)| i as u64)
            .collect();
        let log = b.code_log.iter().map(Cell::get).collect();
        (pages, b.code_gen.get(), log)
    }

    /// Put back what [`Self::code_state`] gave; refuses a page beyond this
    /// RAM or a log of another length.
    pub fn restore_code_state(&self, pages: &[u64], gen: u64, log: &[u64]) -> Result<(), String> {
        let b = &self.0;
        if log.len() != b.code_log.len() {
            return Err(format!(
                "a code-write log of {} entries, not {}",
                log.len(),
                b.code_log.len()
            ));
        }
        if let Some(p) = pages.iter().find(|&&p| p >= b.code.len() as u64) {
            return Err(format!("code page {p} lies beyond this RAM"));
        }
        b.code.iter().for_each(|c| c.set(false));
        for &p in pages {
            b.code[p as usize].set(true);
        }
        // (pages may be code now that were not: every hart looks again)
        b.code_marks.set(b.code_marks.get() + 1);
        b.code_gen.set(gen);
        for (c, &v) in b.code_log.iter().zip(log) {
            c.set(v);
        }
        Ok(())
    }

    /// Called by every store path that bypasses [`Self::write`] (e.g. a
    /// hart's fast path through a host pointer, or DMA).
    #[inline(always)]
    pub fn note_store(&self, pa: u64, len: u64) {
        let b = &self.0;
        let first = (pa - b.base) >> PAGE_SHIFT;
        let last = (pa - b.base + len.max(1) - 1) >> PAGE_SHIFT;
        for page in first..=last {
            let flag = &b.code[page as usize];
            if flag.get() {
                flag.set(false);
                let writes = &b.code_writes[page as usize];
                writes.set(writes.get().wrapping_add(1));
                let gen = b.code_gen.get() + 1;
                b.code_gen.set(gen);
                b.code_log[(gen % CODE_WRITE_LOG as u64) as usize]
                    .set(b.base + (page << PAGE_SHIFT));
            }
        }
    }
}

/// A block address's hot-code hint slot (a multiplicative hash: blocks lie
/// 2 bytes apart at least, and kernel code is dense in few pages).
#[inline(always)]
fn hot_slot(pa: u64) -> usize {
    ((pa >> 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - HOT_HINTS.trailing_zeros())) as usize
}

impl std::fmt::Debug for GuestRam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GuestRam[{:#x}..{:#x})", self.base(), self.end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This process's resident bytes (Linux `/proc/self/statm`).
    fn resident() -> u64 {
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
        let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
        pages * 4096
    }

    #[test]
    fn host_memory_follows_what_the_guest_touches() {
        let before = resident();
        let ram = GuestRam::new(0x8000_0000, 2 << 30).unwrap();
        // One byte in every MiB: 2048 pages, 8 MiB.
        for mib in 0..2048u64 {
            assert!(ram.write(0x8000_0000 + (mib << 20), 1, 0xa5));
        }
        assert_eq!(ram.read(0x8000_0000 + (7 << 20), 1), Some(0xa5));
        assert_eq!(ram.read(0x8000_0000 + (7 << 20) + 1, 1), Some(0), "zeroed");
        let grew = resident().saturating_sub(before);
        // Other tests run in this process too: a generous bound, far below
        // the 2 GiB an eager allocation costs.
        assert!(
            grew < 512 << 20,
            "2 GiB of guest RAM made the host {grew} bytes bigger"
        );
    }

    #[test]
    fn bounds_are_half_open() {
        let ram = GuestRam::new(0x8000_0000, 0x1000).unwrap();
        assert!(ram.contains(0x8000_0ff8, 8));
        assert!(!ram.contains(0x8000_0ff9, 8));
        assert!(!ram.contains(0x7fff_ffff, 1));
        assert!(!ram.contains(0x8000_1000, 1));
        assert_eq!(ram.read(0x8000_1000, 1), None);
        assert!(!ram.write(0x8000_0ffc, 8, 0));
    }

    #[test]
    fn little_endian_round_trip() {
        let ram = GuestRam::new(0x1000, 0x1000).unwrap();
        assert!(ram.write(0x1003, 8, 0x1122_3344_5566_7788));
        assert_eq!(ram.read(0x1003, 1), Some(0x88));
        assert_eq!(ram.read(0x1003, 4), Some(0x5566_7788));
        assert_eq!(ram.read(0x1003, 8), Some(0x1122_3344_5566_7788));
    }

    #[test]
    fn store_to_code_page_bumps_generation_once() {
        let ram = GuestRam::new(0, 0x3000).unwrap();
        ram.mark_code(0x1000);
        let g = ram.code_generation();
        ram.write(0x0ffc, 8, 1); // straddles pages 0 and 1
        assert_eq!(ram.code_generation(), g + 1);
        assert!(!ram.is_code(0x1000));
        ram.write(0x1000, 4, 1);
        assert_eq!(ram.code_generation(), g + 1);
    }

    #[test]
    fn code_write_log_names_the_page() {
        let ram = GuestRam::new(0x8000_0000, 0x4000).unwrap();
        let g = ram.code_generation();
        assert_eq!(ram.code_write(g), None);
        ram.mark_code(0x8000_2000);
        ram.write(0x8000_2ffc, 4, 1);
        assert_eq!(ram.code_write(g + 1), Some(0x8000_2000));
        assert_eq!(ram.code_write(g + 2), None);
        for _ in 0..CODE_WRITE_LOG {
            ram.mark_code(0x8000_1000);
            ram.write(0x8000_1000, 1, 0);
        }
        assert_eq!(ram.code_write(g + 1), None); // fell out of the log
        assert_eq!(ram.code_write(ram.code_generation()), Some(0x8000_1000));
    }

    #[test]
    fn a_hot_code_hint_lasts_until_its_page_is_written_as_code() {
        let ram = GuestRam::new(0x8000_0000, 0x3000).unwrap();
        let pa = 0x8000_1010;
        ram.mark_code(pa);
        assert!(!ram.is_hot_code(pa));
        ram.note_hot_code(pa);
        assert!(ram.is_hot_code(pa));
        assert!(!ram.is_hot_code(pa + 2), "only the block's own address");
        // a store to another page leaves the hint; one to its own page
        // (flagged as code) ends it
        ram.write(0x8000_2000, 8, 1);
        assert!(ram.is_hot_code(pa));
        ram.write(pa + 0x100, 4, 1);
        assert!(!ram.is_hot_code(pa), "the page changed");
        // hinted again once decoded and translated again, and ended again
        // by the next store (a second store finds the page no longer
        // flagged as code and changes nothing)
        ram.mark_code(pa);
        ram.note_hot_code(pa);
        ram.write(0x8000_1000, 1, 0);
        ram.write(0x8000_1000, 1, 0);
        assert!(!ram.is_hot_code(pa));
        // outside RAM: no hint, no panic
        ram.note_hot_code(0x1000);
        assert!(!ram.is_hot_code(0x1000));
        assert!(!ram.is_hot_code(u64::MAX));
    }

    #[test]
    fn rejects_bad_sizes() {
        assert!(GuestRam::new(0, 0).is_err());
        assert!(GuestRam::new(0, 100).is_err());
        assert!(GuestRam::new(u64::MAX - 0xfff, 0x2000).is_err());
    }
}
