//! Differential check of the execution engines: two machines built alike,
//! one running the translating engine (hot blocks as host code, the block
//! interpreter for the rest: what a normal run uses) and one the reference
//! engine (every
//! instruction decoded afresh, no block cache), stepped slice by slice.
//! After each slice every hart's steps (retired instructions, traps,
//! interrupts, each with its pc, bits, written register and counts) are
//! compared in order, then the harts' architectural state, guest time and
//! console output. The first difference ends the run as a [`Divergence`].
//!
//! Both machines see the same inputs (the same images; console input is
//! not given), and both are deterministic, so any difference is the
//! engines'.

use std::fmt;

use hs_core::{CheckKind, CheckRecord, Engine};
use hs_timing::TimingModel;

use crate::{Machine, StopReason};

/// Where two machines' runs first differ.
#[derive(Clone, Debug)]
pub struct Divergence {
    /// The hart (None: the machines as a whole, e.g. console or stop).
    pub hart: Option<usize>,
    /// Steps of that hart both machines agreed on before this one.
    pub step: u64,
    /// The step each machine took there (None: that machine took no more
    /// steps in the slice).
    pub blocks: Option<CheckRecord>,
    pub reference: Option<CheckRecord>,
    /// Architectural state differences at the end of the slice
    /// (`register: checked engine != reference`), or what else differs.
    pub state: Vec<String>,
    /// Guest cycle at the end of the slice in which it was found.
    pub slice_end: u64,
}

fn describe(r: &CheckRecord) -> String {
    let insn = match r.kind {
        CheckKind::Interrupt(c) => return format!("interrupt {c:#x} taken at pc {:#x}", r.pc),
        CheckKind::FetchFault(c) => return format!("fetch fault {c:#x} at pc {:#x}", r.pc),
        _ => hs_isa::disasm(&hs_isa::decode(r.bits).0, r.pc),
    };
    let what = match r.kind {
        CheckKind::Exception(c) => format!("raised exception {c:#x}"),
        _ if r.dst < 32 => format!("wrote {}={:#x}", hs_isa::gpr_name(r.dst), r.value),
        _ if r.dst < 64 => format!("wrote {}={:#x}", hs_isa::fpr_name(r.dst - 32), r.value),
        _ => "retired".to_string(),
    };
    format!(
        "pc {:#x} {:08x} `{insn}`: {what}; cycle {}, instret {}",
        r.pc, r.bits, r.cycle, r.instret
    )
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.hart {
            Some(h) => writeln!(
                f,
                "the engines diverged on hart {h} after {} agreeing steps (slice ending at cycle {}):",
                self.step, self.slice_end
            )?,
            None => writeln!(
                f,
                "the machines diverged (slice ending at cycle {}):",
                self.slice_end
            )?,
        }
        let show = |r: &Option<CheckRecord>| r.as_ref().map_or("no step".to_string(), describe);
        if self.blocks.is_some() || self.reference.is_some() {
            writeln!(f, "  checked:   {}", show(&self.blocks))?;
            writeln!(f, "  reference: {}", show(&self.reference))?;
        }
        for s in &self.state {
            writeln!(f, "  {s}")?;
        }
        Ok(())
    }
}

/// Run `blocks` on its engine (the translating engine unless chosen
/// otherwise) and `reference` on the reference
/// engine, built from the same configuration, in lockstep until either
/// stops; the stop reason, or the first [`Divergence`]. Console output is
/// compared as far as both machines capture it.
pub fn lockstep<T: TimingModel, U: TimingModel>(
    blocks: &mut Machine<T>,
    reference: &mut Machine<U>,
) -> Result<StopReason, Box<Divergence>> {
    let n = blocks.harts().len();
    if reference.harts().len() != n {
        return Err(Box::new(Divergence {
            hart: None,
            step: 0,
            blocks: None,
            reference: None,
            state: vec![format!("harts: {n} != {}", reference.harts().len())],
            slice_end: 0,
        }));
    }
    for h in blocks.harts_mut() {
        if h.engine() == Engine::Reference {
            h.set_engine(Engine::Translated);
        }
        h.set_check_log(true);
    }
    for h in reference.harts_mut() {
        h.set_engine(Engine::Reference);
        h.set_check_log(true);
    }
    let mut steps = vec![0u64; n];
    let machine_diff = |state: Vec<String>, now: u64| {
        Box::new(Divergence {
            hart: None,
            step: 0,
            blocks: None,
            reference: None,
            state,
            slice_end: now,
        })
    };
    loop {
        let sa = blocks.lockstep_slice();
        let sb = reference.lockstep_slice();
        let now = blocks.now();
        for h in 0..n {
            let la = blocks.harts_mut()[h].take_check_log();
            let lb = reference.harts_mut()[h].take_check_log();
            let first = la
                .iter()
                .zip(&lb)
                .position(|(a, b)| a != b)
                .or((la.len() != lb.len()).then(|| la.len().min(lb.len())));
            let state = blocks.harts()[h].arch_diff(&reference.harts()[h]);
            if let Some(i) = first {
                return Err(Box::new(Divergence {
                    hart: Some(h),
                    step: steps[h] + i as u64,
                    blocks: la.get(i).copied(),
                    reference: lb.get(i).copied(),
                    state,
                    slice_end: now,
                }));
            }
            steps[h] += la.len() as u64;
            if !state.is_empty() {
                return Err(Box::new(Divergence {
                    hart: Some(h),
                    step: steps[h],
                    blocks: la.last().copied(),
                    reference: lb.last().copied(),
                    state,
                    slice_end: now,
                }));
            }
        }
        if now != reference.now() {
            return Err(machine_diff(
                vec![format!("guest time: {now} != {}", reference.now())],
                now,
            ));
        }
        let (ca, cb) = (blocks.console_output(), reference.console_output());
        let common = ca.len().min(cb.len());
        if let Some(i) = ca[..common]
            .iter()
            .zip(&cb[..common])
            .position(|(a, b)| a != b)
        {
            return Err(machine_diff(
                vec![format!("console output differs from byte {i} on")],
                now,
            ));
        }
        if sa != sb {
            return Err(machine_diff(vec![format!("stop: {sa:?} != {sb:?}")], now));
        }
        if let Some(stop) = sa {
            if ca.len() != cb.len() {
                return Err(machine_diff(
                    vec![format!(
                        "console output: {} bytes != {}",
                        ca.len(),
                        cb.len()
                    )],
                    now,
                ));
            }
            for h in blocks.harts_mut() {
                h.set_check_log(false);
            }
            for h in reference.harts_mut() {
                h.set_check_log(false);
            }
            return Ok(stop);
        }
    }
}
