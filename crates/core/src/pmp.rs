//! Physical memory protection: 16 entries, granularity 4 bytes, OFF/TOR/NA4/NAPOT.

use crate::Priv;

pub const PMP_ENTRIES: usize = 16;

const R: u8 = 1;
const W: u8 = 2;
const X: u8 = 4;
const A_SHIFT: u8 = 3;
const L: u8 = 0x80;
const A_OFF: u8 = 0;
const A_TOR: u8 = 1;
const A_NA4: u8 = 2;
#[cfg(test)]
const A_NAPOT: u8 = 3;
/// pmpaddr holds bits 55:2 of an address.
const ADDR_MASK: u64 = (1 << 54) - 1;

/// Permission bits for an access kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Perm {
    Read = 1,
    Write = 2,
    Exec = 4,
}

/// Result of checking one page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageCheck {
    /// Every byte of the page has the same permission: allowed or not.
    Uniform(bool),
    /// Entries split the page: check each access separately.
    Mixed,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(from = "PmpSaved")]
pub struct Pmp {
    cfg: [u8; PMP_ENTRIES],
    addr: [u64; PMP_ENTRIES],
    /// Decoded ranges [lo, hi) per entry; empty when OFF.
    lo: [u64; PMP_ENTRIES],
    hi: [u64; PMP_ENTRIES],
    any_active: bool,
    any_locked: bool,
}

/// A PMP as snapshots hold it: the CSRs and what was decoded from them
/// (decoded again on restore, from the CSRs).
#[derive(serde::Deserialize)]
struct PmpSaved {
    cfg: [u8; PMP_ENTRIES],
    addr: [u64; PMP_ENTRIES],
}

impl From<PmpSaved> for Pmp {
    /// (only what the CSRs can hold: a saved file is not trusted to)
    fn from(s: PmpSaved) -> Pmp {
        let mut p = Pmp {
            cfg: s.cfg.map(legal_cfg),
            addr: s.addr.map(|a| a & ADDR_MASK),
            ..Pmp::default()
        };
        p.recompute();
        p
    }
}

/// A pmpcfg byte as the register holds it: reserved bits read as zero,
/// and W without R (reserved) is dropped.
fn legal_cfg(v: u8) -> u8 {
    let c = v & (R | W | X | (3 << A_SHIFT) | L);
    if c & R == 0 {
        c & !W
    } else {
        c
    }
}

impl Default for Pmp {
    fn default() -> Self {
        Pmp {
            cfg: [0; PMP_ENTRIES],
            addr: [0; PMP_ENTRIES],
            lo: [0; PMP_ENTRIES],
            hi: [0; PMP_ENTRIES],
            any_active: false,
            any_locked: false,
        }
    }
}

impl Pmp {
    /// pmpcfgN (N even) as a 64-bit CSR holding 8 entries; `n` is N/2.
    pub fn read_cfg(&self, n: usize) -> u64 {
        let mut v = 0;
        for i in 0..8 {
            if let Some(&c) = self.cfg.get(n * 8 + i) {
                v |= (c as u64) << (8 * i);
            }
        }
        v
    }

    pub fn read_addr(&self, i: usize) -> u64 {
        self.addr.get(i).copied().unwrap_or(0)
    }

    /// Write pmpcfg; true if anything changed. Locked entries ignore writes.
    pub fn write_cfg(&mut self, n: usize, v: u64) -> bool {
        let mut changed = false;
        for i in 0..8 {
            let e = n * 8 + i;
            if e >= PMP_ENTRIES || self.cfg[e] & L != 0 {
                continue;
            }
            let c = legal_cfg((v >> (8 * i)) as u8);
            if c != self.cfg[e] {
                self.cfg[e] = c;
                changed = true;
            }
        }
        if changed {
            self.recompute();
        }
        changed
    }

    pub fn write_addr(&mut self, i: usize, v: u64) -> bool {
        if i >= PMP_ENTRIES || self.cfg[i] & L != 0 {
            return false;
        }
        // a locked TOR entry also locks the address below it
        if i + 1 < PMP_ENTRIES
            && self.cfg[i + 1] & L != 0
            && (self.cfg[i + 1] >> A_SHIFT) & 3 == A_TOR
        {
            return false;
        }
        let v = v & ADDR_MASK;
        if v == self.addr[i] {
            return false;
        }
        self.addr[i] = v;
        self.recompute();
        true
    }

    fn recompute(&mut self) {
        self.any_active = false;
        self.any_locked = false;
        for i in 0..PMP_ENTRIES {
            let a = self.addr[i];
            let (lo, hi) = match (self.cfg[i] >> A_SHIFT) & 3 {
                A_OFF => (0, 0),
                A_TOR => {
                    let prev = if i == 0 { 0 } else { self.addr[i - 1] };
                    (prev << 2, a << 2)
                }
                A_NA4 => (a << 2, (a << 2) + 4),
                _ /* A_NAPOT */ => {
                    let t = a.trailing_ones() as u64; // <= 54
                    let size = 8u64 << t;
                    let base = (a << 2) & !(size - 1);
                    (base, base.saturating_add(size))
                }
            };
            // An empty range matches no address (the privileged spec: also
            // a TOR entry whose address is not above the one before it),
            // which (0, 0) never does in `first_match`'s test.
            let (lo, hi) = if lo < hi { (lo, hi) } else { (0, 0) };
            self.lo[i] = lo;
            self.hi[i] = hi;
            if lo < hi {
                self.any_active = true;
                if self.cfg[i] & L != 0 {
                    self.any_locked = true;
                }
            }
        }
    }

    /// Does the access `[pa, pa+len)` by privilege `prv` with `perm` pass?
    pub fn check(&self, pa: u64, len: u64, prv: Priv, perm: Perm) -> bool {
        match self.first_match(pa, len) {
            Some((i, true)) => self.allows(i, prv, perm),
            Some((_, false)) => false, // partially matching entry
            None => prv == Priv::Machine,
        }
    }

    /// Check a whole 4 KiB page so the TLB may cache it.
    pub fn check_page(&self, page: u64, prv: Priv, perm: Perm) -> PageCheck {
        if prv == Priv::Machine && !self.any_locked {
            return PageCheck::Uniform(true);
        }
        match self.first_match(page, 4096) {
            Some((i, true)) => PageCheck::Uniform(self.allows(i, prv, perm)),
            Some((_, false)) => PageCheck::Mixed,
            None => PageCheck::Uniform(prv == Priv::Machine),
        }
    }

    fn allows(&self, i: usize, prv: Priv, perm: Perm) -> bool {
        let c = self.cfg[i];
        (prv == Priv::Machine && c & L == 0) || c & perm as u8 != 0
    }

    /// The highest-priority entry overlapping the range: (index, covers it entirely).
    fn first_match(&self, pa: u64, len: u64) -> Option<(usize, bool)> {
        if !self.any_active {
            return None;
        }
        let end = pa.saturating_add(len);
        (0..PMP_ENTRIES)
            .find(|&i| self.lo[i] < end && pa < self.hi[i])
            .map(|i| (i, self.lo[i] <= pa && end <= self.hi[i]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn napot(base: u64, size: u64) -> u64 {
        (base >> 2) | ((size >> 3) - 1)
    }

    #[test]
    fn no_entries_denies_s_mode_allows_m() {
        let p = Pmp::default();
        assert!(p.check(0x8000_0000, 8, Priv::Machine, Perm::Write));
        assert!(!p.check(0x8000_0000, 8, Priv::Supervisor, Perm::Read));
        assert_eq!(
            p.check_page(0x8000_0000, Priv::User, Perm::Read),
            PageCheck::Uniform(false)
        );
    }

    #[test]
    fn opensbi_layout_firmware_hidden_rest_open() {
        // entry 0: firmware 0x80000000/512K NAPOT no perms; entry 1: everything RWX
        let mut p = Pmp::default();
        p.write_addr(0, napot(0x8000_0000, 0x8_0000));
        p.write_addr(1, u64::MAX);
        p.write_cfg(
            0,
            ((A_NAPOT << A_SHIFT) as u64) | (((A_NAPOT << A_SHIFT) | R | W | X) as u64) << 8,
        );
        assert_eq!(p.read_addr(1), (1 << 54) - 1);
        assert!(!p.check(0x8000_1000, 4, Priv::Supervisor, Perm::Read));
        assert!(p.check(0x8000_1000, 4, Priv::Machine, Perm::Read));
        assert!(p.check(0x8008_0000, 4, Priv::Supervisor, Perm::Exec));
        assert!(!p.check(0x8007_fffc, 8, Priv::Supervisor, Perm::Read)); // straddles
        assert_eq!(
            p.check_page(0x8007_f000, Priv::Supervisor, Perm::Read),
            PageCheck::Uniform(false)
        );
        assert_eq!(
            p.check_page(0x8008_0000, Priv::User, Perm::Write),
            PageCheck::Uniform(true)
        );
        assert!(p.check(0x1000_0000, 1, Priv::User, Perm::Write));
    }

    #[test]
    fn tor_na4_and_mixed_pages() {
        let mut p = Pmp::default();
        p.write_addr(0, 0x8000_0800 >> 2);
        p.write_addr(1, 0x8000_1000 >> 2);
        p.write_addr(2, 0x8000_2000 >> 2);
        // entry 0: TOR [0, 0x80000800) none; entry 1: TOR [0x80000800, 0x80001000) R; entry 2: NA4 at 0x80002000 RW
        let cfg = ((A_TOR << A_SHIFT) as u64)
            | (((A_TOR << A_SHIFT) | R) as u64) << 8
            | (((A_NA4 << A_SHIFT) | R | W) as u64) << 16;
        assert!(p.write_cfg(0, cfg));
        assert_eq!(
            p.check_page(0x8000_0000, Priv::Supervisor, Perm::Read),
            PageCheck::Mixed
        );
        assert!(p.check(0x8000_0800, 8, Priv::Supervisor, Perm::Read));
        assert!(!p.check(0x8000_0800, 8, Priv::Supervisor, Perm::Write));
        assert!(!p.check(0x8000_07fc, 8, Priv::Supervisor, Perm::Read));
        assert!(p.check(0x8000_2000, 4, Priv::User, Perm::Write));
        assert!(!p.check(0x8000_2000, 8, Priv::User, Perm::Write));
        assert_eq!(
            p.check_page(0x8000_2000, Priv::User, Perm::Write),
            PageCheck::Mixed
        );
    }

    /// `first_match` as the privileged spec states it: every entry in
    /// order; one that is off, or a TOR entry whose address is not above
    /// the one before it, matches no address.
    fn first_match_by_all(p: &Pmp, pa: u64, len: u64) -> Option<(usize, bool)> {
        let end = pa.saturating_add(len);
        (0..PMP_ENTRIES)
            .filter(|&i| p.lo[i] < p.hi[i])
            .find(|&i| p.lo[i] < end && pa < p.hi[i])
            .map(|i| (i, p.lo[i] <= pa && end <= p.hi[i]))
    }

    #[test]
    fn the_first_match_is_the_privileged_specs() {
        // random configurations: a few entries of each mode at random
        // indices, addresses near each other so that ranges overlap
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut matched = 0;
        for _ in 0..500 {
            let mut p = Pmp::default();
            for _ in 0..1 + next() % 6 {
                let i = (next() % PMP_ENTRIES as u64) as usize;
                p.write_addr(
                    i,
                    (0x8000_0000 + next() % 0x1_0000) >> 2 | ((1 << (next() % 12)) - 1),
                );
                let mode = (next() % 4) as u8;
                let cfg = (mode << A_SHIFT) | (next() % 8) as u8;
                p.write_cfg(i / 8, (cfg as u64) << (8 * (i % 8)));
            }
            // a restored copy decodes the same ranges
            let restored: Pmp = serde_json::from_slice(&serde_json::to_vec(&p).unwrap()).unwrap();
            assert_eq!((restored.lo, restored.hi), (p.lo, p.hi));
            assert_eq!((restored.cfg, restored.addr), (p.cfg, p.addr));
            for _ in 0..200 {
                let pa = 0x8000_0000 + next() % 0x1_2000 - 0x1000;
                let len = [1, 2, 4, 8, 4096][(next() % 5) as usize];
                let want = first_match_by_all(&p, pa, len);
                matched += want.is_some() as u32;
                assert_eq!(p.first_match(pa, len), want, "{pa:#x}+{len} in {p:?}");
            }
        }
        // (the configurations do reach the addresses tried)
        assert!(matched > 10_000, "{matched}");
    }

    #[test]
    fn a_restored_pmp_holds_only_what_its_csrs_can() {
        // a saved file's NAPOT address of all ones (more than pmpaddr's
        // 54 bits) and reserved cfg bits, as an edited snapshot may have
        let json = format!(
            r#"{{"cfg":[{},0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"addr":[{},0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}}"#,
            0x79,
            u64::MAX
        );
        let p: Pmp = serde_json::from_str(&json).unwrap();
        assert_eq!(p.read_cfg(0), ((A_NAPOT << A_SHIFT) | R) as u64);
        assert_eq!(p.read_addr(0), ADDR_MASK);
        assert!(p.check(0x8000_0000, 8, Priv::User, Perm::Read));
        assert!(!p.check(0x8000_0000, 8, Priv::User, Perm::Write));
    }

    #[test]
    fn an_empty_tor_entry_matches_no_address() {
        // entry 1: TOR from pmpaddr0 to pmpaddr1, equal (an empty range
        // inside the access); entry 2: everything RWX
        let mut p = Pmp::default();
        p.write_addr(0, 0x8000_1ffc >> 2);
        p.write_addr(1, 0x8000_1ffc >> 2);
        p.write_addr(2, u64::MAX);
        let cfg = (((A_TOR << A_SHIFT) | R) as u64) << 8
            | (((A_NAPOT << A_SHIFT) | R | W | X) as u64) << 16;
        assert!(p.write_cfg(0, cfg));
        // (the privileged spec: TOR with pmpaddr[i-1] >= pmpaddr[i]
        // matches no address, so entry 2 decides, not a partial match)
        assert!(p.check(0x8000_1ff8, 8, Priv::Supervisor, Perm::Write));
        assert_eq!(
            p.check_page(0x8000_1000, Priv::User, Perm::Write),
            PageCheck::Uniform(true)
        );
    }

    #[test]
    fn warl_and_locking() {
        let mut p = Pmp::default();
        // W without R is legalised away; reserved bits 6:5 read as zero
        p.write_cfg(0, 0x62 | ((A_NAPOT << A_SHIFT) as u64));
        assert_eq!(p.read_cfg(0) & 0xff, (A_NAPOT << A_SHIFT) as u64);
        // lock entry 1 as TOR: entry 1 and pmpaddr0 become read-only
        p.write_addr(0, 0x100);
        p.write_addr(1, 0x200);
        p.write_cfg(0, (((A_TOR << A_SHIFT) | R | L) as u64) << 8);
        assert!(!p.write_addr(0, 0x300));
        assert!(!p.write_addr(1, 0x300));
        assert_eq!(p.read_addr(0), 0x100);
        p.write_cfg(0, 0);
        assert_eq!(
            p.read_cfg(0) >> 8 & 0xff,
            ((A_TOR << A_SHIFT) | R | L) as u64
        );
        // locked entries bind M-mode too
        assert!(!p.check(0x400, 4, Priv::Machine, Perm::Write));
        assert!(p.check(0x400, 4, Priv::Machine, Perm::Read));
        // pmpcfg beyond the 16 entries reads zero and ignores writes
        assert!(!p.write_cfg(2, u64::MAX));
        assert_eq!(p.read_cfg(2), 0);
        assert_eq!(p.read_addr(40), 0);
    }
}
