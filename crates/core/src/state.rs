//! The hart's architectural state apart from its machinery (issue 17):
//! what a snapshot keeps. Host-side caches — the software TLB, decoded
//! blocks, the fetch stamp — are not state; they are dropped on restore
//! and rebuild themselves as the hart runs.

use serde::{Deserialize, Serialize};

use crate::{csr::Csrs, mmu, pmp::Pmp, Hart, HartStats, Priv, TimingModel};

/// The virtual page number bits of a software-TLB tag (below the generation).
const VPN_MASK: u64 = (1 << 52) - 1;

/// Everything a hart needs to go on exactly where it was.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HartState {
    hart_id: u64,
    cycles_per_tick: u64,
    x: [u64; 32],
    f: [u64; 32],
    pc: u64,
    prv: Priv,
    cycle: u64,
    stall: u64,
    csr: Csrs,
    pmp: Pmp,
    reservation: Option<u64>,
    /// Guest-visible event counts (traps taken) and the slow-path counters,
    /// so totals carry on across the cut.
    stats: HartStats,
    /// The software TLB's live entries, by guest address. A host cache, but
    /// what it holds decides which page walks the hart makes (and reports
    /// to the timing model) and whether a stale translation is still used,
    /// so a restored hart must start with the same entries.
    tlb: Vec<TlbSaved>,
    /// The superpages those entries may hold pieces of (see `mmu::Tlb`);
    /// None when too many, or from a snapshot older than the list.
    #[serde(default)]
    tlb_superpages: Option<Vec<u64>>,
    /// The block cache, for the same reason (see `Hart::save_blocks`).
    blocks: crate::exec::BlocksSaved,
}

/// One live software-TLB entry: which array, the virtual page number, and
/// the physical page it maps (RAM or device).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct TlbSaved {
    kind: u8,
    ctx: u8,
    vpn: u64,
    mmio: bool,
    pa: u64,
}

impl<T: TimingModel> Hart<T> {
    /// This hart's architectural state.
    pub fn save_state(&self) -> HartState {
        let mut x = [0; 32];
        x.copy_from_slice(&self.x[..32]);
        HartState {
            hart_id: self.cfg.hart_id,
            cycles_per_tick: self.cfg.cycles_per_tick,
            x,
            f: self.f,
            pc: self.pc,
            prv: self.prv,
            cycle: self.cycle,
            stall: self.stall,
            csr: self.csr.clone(),
            pmp: self.pmp.clone(),
            reservation: self.reservation,
            stats: self.stats,
            tlb: self.save_tlb(),
            tlb_superpages: self.tlb.superpages(),
            blocks: self.save_blocks(),
        }
    }

    fn save_tlb(&self) -> Vec<TlbSaved> {
        let gen = self.tlb.gen_bits;
        let ram_host = self.ram.host_ptr(self.ram.base()) as u64;
        let mut out = Vec::new();
        for (kind, ctxs) in self.tlb.e.iter().enumerate() {
            for (ctx, entries) in ctxs.iter().enumerate() {
                for e in entries {
                    let tag = e.tag & !(mmu::TLB_MMIO | mmu::TLB_CODE);
                    if e.tag == 0 || tag & !VPN_MASK != gen {
                        continue;
                    }
                    let vpn = tag & VPN_MASK;
                    let va = vpn << 12;
                    let mmio = e.tag & mmu::TLB_MMIO != 0;
                    let pa = if mmio {
                        va.wrapping_add(e.addend)
                    } else {
                        va.wrapping_add(e.addend)
                            .wrapping_sub(ram_host)
                            .wrapping_add(self.ram.base())
                    };
                    out.push(TlbSaved {
                        kind: kind as u8,
                        ctx: ctx as u8,
                        vpn,
                        mmio,
                        pa,
                    });
                }
            }
        }
        out
    }

    /// A saved entry names an array this TLB has, and RAM that is RAM (a
    /// device page that is not): its host address stays inside guest RAM.
    fn tlb_entry_fits(&self, t: &TlbSaved) -> bool {
        (t.kind as usize) < 3
            && (t.ctx as usize) < 4
            && t.vpn <= VPN_MASK
            && t.pa & 0xfff == 0
            && self.ram.contains(t.pa, 4096) != t.mmio
    }

    /// Put saved entries into the (flushed) software TLB; refuses an entry
    /// that is not where its page number puts it or whose page is not RAM
    /// when it claims to be (and the reverse).
    fn restore_tlb(&mut self, saved: &[TlbSaved]) -> Result<(), String> {
        for t in saved {
            let slot = (t.vpn as usize) & (mmu::TLB_SIZE - 1);
            if !self.tlb_entry_fits(t) {
                return Err(format!(
                    "a software-TLB entry (page {:#x} → {:#x}) does not fit this machine",
                    t.vpn << 12,
                    t.pa
                ));
            }
            if t.mmio {
                self.tlb.e[t.kind as usize][t.ctx as usize][slot] = mmu::TlbEntry {
                    tag: t.vpn | self.tlb.gen_bits | mmu::TLB_MMIO,
                    addend: t.pa.wrapping_sub(t.vpn << 12),
                };
            } else {
                // (flagged and listed as a walk's fill would be)
                self.put_ram_entry(t.kind as usize, t.ctx as usize, t.vpn, t.pa);
            }
        }
        self.code_marks_seen = self.ram.code_marks();
        Ok(())
    }

    /// Go on from `s`: registers, CSRs, PMP and local time replaced, host
    /// caches rebuilt as they were. Refused before anything changes if `s`
    /// is another hart's, was taken at another timer rate or names a
    /// software-TLB entry this machine cannot hold. A block cache other
    /// harts share is left alone here: once every hart is restored, the
    /// caller rebuilds it with [`Hart::restore_shared_code`], as
    /// `Machine`'s snapshot restore does.
    pub fn restore_state(&mut self, s: &HartState) -> Result<(), String> {
        if s.hart_id != self.cfg.hart_id || s.cycles_per_tick != self.cfg.cycles_per_tick {
            return Err(format!(
                "the state is hart {}'s at {} cycles per timer tick; this is hart {} at {}",
                s.hart_id, s.cycles_per_tick, self.cfg.hart_id, self.cfg.cycles_per_tick
            ));
        }
        if s.x[0] != 0 {
            return Err("register x0 holds a value other than 0".into());
        }
        if let Some(t) = s.tlb.iter().find(|t| !self.tlb_entry_fits(t)) {
            return Err(format!(
                "a software-TLB entry (page {:#x} → {:#x}) does not fit this machine",
                t.vpn << 12,
                t.pa
            ));
        }
        self.x = [0; 256];
        self.x[..32].copy_from_slice(&s.x);
        self.f = s.f;
        self.pc = s.pc;
        self.prv = s.prv;
        self.cycle = s.cycle;
        self.stall = s.stall;
        self.csr = s.csr.clone();
        self.pmp = s.pmp.clone();
        self.reservation = s.reservation;
        self.stats = s.stats;
        self.exit = None;
        self.tlb.flush();
        if let Err(e) = self.restore_tlb(&s.tlb) {
            self.tlb.flush();
            return Err(e);
        }
        self.tlb.set_superpages(s.tlb_superpages.clone());
        // (a cache other harts share too is rebuilt for all of them at
        // once: `Hart::restore_shared_code`)
        if !self.blocks.shared() {
            self.flush_blocks();
            self.restore_blocks(&s.blocks);
        }
        // (the restored first level may have outlived fetch entries the
        // saved TLB no longer held)
        self.tlb.fetch_replaced = true;
        self.stats.block_flushes = s.stats.block_flushes;
        self.stats.blocks_decoded = s.stats.blocks_decoded;
        self.update_stimecmp_cycle();
        self.update_modes();
        self.checks |= crate::CHECK_IRQ | crate::CHECK_CODE;
        Ok(())
    }

    /// After [`Hart::restore_state`] of each of `harts` from `states`:
    /// rebuild the block caches harts share (each once, for all of its
    /// harts), as restoring a hart of its own rebuilt its cache.
    pub fn restore_shared_code(harts: &mut [Hart<T>], states: &[HartState]) {
        let mut done = vec![false; harts.len()];
        for first in 0..harts.len().min(states.len()) {
            if done[first] || !harts[first].blocks.shared() {
                continue;
            }
            let code = harts[first].blocks.code_id();
            let members: Vec<usize> = (first..harts.len().min(states.len()))
                .filter(|&i| harts[i].blocks.code_id() == code)
                .collect();
            let saved: Vec<&crate::exec::BlocksSaved> =
                members.iter().map(|&i| &states[i].blocks).collect();
            // (counted as the harts counted them when saved)
            let counts: Vec<(u64, u64)> = members
                .iter()
                .map(|&i| {
                    (
                        states[i].stats.block_flushes,
                        states[i].stats.blocks_decoded,
                    )
                })
                .collect();
            let mut group: Vec<&mut Hart<T>> = harts
                .iter_mut()
                .enumerate()
                .filter(|(i, _)| members.contains(i))
                .map(|(_, h)| h)
                .collect();
            for &i in &members {
                done[i] = true;
            }
            group[0].flush_blocks();
            Self::restore_blocks_of(&mut group, &saved);
            for (h, (flushes, decoded)) in group.iter_mut().zip(counts) {
                h.stats.block_flushes = flushes;
                h.stats.blocks_decoded = decoded;
                h.refresh_stamp();
            }
        }
    }
}
