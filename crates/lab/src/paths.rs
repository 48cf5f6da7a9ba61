//! Paths through the timeline: system calls from their `ecall` to the return
//! to user mode, and the wake-up path of a system call that sleeps until a
//! device interrupts — on which hart the interrupt was taken, and, when that
//! is not the caller's hart, the IPI that woke the caller's hart.
//!
//! Pairing is per hart: a system call ends at the next return to user mode
//! on the same hart. That is the caller's own return whenever no other user
//! task runs on that hart meanwhile (as in a pinned real-time loop whose
//! hart is otherwise idle); a study that shares the hart must not use these.

use hs_observe::{Event, EventKind};

use crate::metric::{Missing, NO_TIMELINE};
use crate::record::RunRecord;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyscallSpan {
    pub hart: u16,
    pub number: u64,
    /// Cycle of the `ecall`.
    pub enter: u64,
    /// Cycle of the return to user mode.
    pub exit: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakePath {
    pub span: SyscallSpan,
    /// Hart and cycle of the device's last interrupt during the call.
    pub irq_hart: u16,
    pub irq: u64,
    /// When the interrupt was taken on another hart: the first IPI that hart
    /// sent the caller's hart after it, and when the caller's hart took it.
    pub ipi_sent: Option<u64>,
    pub ipi_received: Option<u64>,
}

impl WakePath {
    pub fn remote(&self) -> bool {
        self.irq_hart != self.span.hart
    }
    /// Cycles from the device interrupt to the caller's return to user mode.
    pub fn irq_to_return(&self) -> u64 {
        self.span.exit.saturating_sub(self.irq)
    }
}

/// Every system call that returned, in order of return.
pub fn syscall_spans(events: &[Event]) -> Vec<SyscallSpan> {
    let mut open: Vec<Option<(u64, u64)>> = Vec::new();
    let mut out = Vec::new();
    for e in events {
        let h = e.hart as usize;
        if open.len() <= h {
            open.resize(h + 1, None);
        }
        match e.kind {
            EventKind::Syscall { number } => open[h] = Some((number, e.cycle)),
            EventKind::SyscallReturn => {
                if let Some((number, enter)) = open[h].take() {
                    out.push(SyscallSpan {
                        hart: e.hart,
                        number,
                        enter,
                        exit: e.cycle,
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// `(start, end)` cycles of every phase labelled `label` (all phases: `None`).
fn windows(run: &RunRecord, phase: Option<&str>) -> Result<Vec<(u64, u64)>, Missing> {
    let Some(label) = phase else {
        return Ok(vec![(0, u64::MAX)]);
    };
    let w: Vec<(u64, u64)> = run
        .observations
        .phases
        .iter()
        .filter(|p| p.label == label)
        .map(|p| (p.start_cycle, p.end_cycle))
        .collect();
    if w.is_empty() {
        return Err(Missing::Absent(format!(
            "no phase `{label}` in run {}",
            run.variant
        )));
    }
    Ok(w)
}

fn timeline(run: &RunRecord) -> Result<&[Event], Missing> {
    if run.observations.events.is_empty() {
        return Err(Missing::NotCollected(NO_TIMELINE.into()));
    }
    // A timeline cut short would undercount calls and pair them wrongly.
    if let Some(d) = run
        .observations
        .total
        .get("system.eventsDropped")
        .map(|s| s.value.as_f64())
        .filter(|&d| d > 0.0)
    {
        return Err(Missing::Absent(format!(
            "run {} dropped {d} timeline events (the event limit), so its calls cannot be counted",
            run.variant
        )));
    }
    Ok(&run.observations.events)
}

/// The system calls `syscall` that began inside a phase labelled `phase`.
pub fn calls(
    run: &RunRecord,
    syscall: &str,
    phase: Option<&str>,
) -> Result<Vec<SyscallSpan>, Missing> {
    let number = hs_observe::syscall_number(syscall).ok_or_else(|| {
        Missing::Absent(format!(
            "`{syscall}` is not a riscv64 Linux system call name"
        ))
    })?;
    let w = windows(run, phase)?;
    Ok(syscall_spans(timeline(run)?)
        .into_iter()
        .filter(|s| s.number == number && w.iter().any(|&(a, b)| s.enter >= a && s.enter < b))
        .collect())
}

/// The PLIC source the board gave `device` (its `NAME.plic_source` counter).
pub fn plic_source(run: &RunRecord, device: &str) -> Result<u32, Missing> {
    run.counters
        .devices
        .get(&format!("{device}.plic_source"))
        .map(|&s| s as u32)
        .ok_or_else(|| {
            Missing::Absent(format!(
                "the run's board has no device `{device}` with an interrupt line"
            ))
        })
}

/// The wake-up path of every `syscall` in `phase` during which `device`
/// interrupted (calls it did not interrupt are left out).
pub fn wake_paths(
    run: &RunRecord,
    device: &str,
    syscall: &str,
    phase: Option<&str>,
) -> Result<Vec<WakePath>, Missing> {
    let src = plic_source(run, device)?;
    let spans = calls(run, syscall, phase)?;
    let events = timeline(run)?;
    let mut out = Vec::new();
    for span in spans {
        // Events are sorted by cycle: the slice of the call.
        let lo = events.partition_point(|e| e.cycle < span.enter);
        let hi = events.partition_point(|e| e.cycle <= span.exit);
        let during = &events[lo..hi];
        let Some(irq) = during.iter().rev().find(
            |e| matches!(e.kind, EventKind::Interrupt { plic_source: Some(s), .. } if s == src),
        ) else {
            continue;
        };
        let mut path = WakePath {
            span,
            irq_hart: irq.hart,
            irq: irq.cycle,
            ipi_sent: None,
            ipi_received: None,
        };
        if path.remote() {
            path.ipi_sent = during
                .iter()
                .find(|e| {
                    e.cycle >= irq.cycle
                        && e.hart == irq.hart
                        && matches!(e.kind, EventKind::IpiSent { to } if to == span.hart)
                })
                .map(|e| e.cycle);
            if let Some(sent) = path.ipi_sent {
                path.ipi_received = during
                    .iter()
                    .find(|e| {
                        e.cycle >= sent
                            && e.hart == span.hart
                            && matches!(e.kind, EventKind::IpiReceived { .. })
                    })
                    .map(|e| e.cycle);
            }
        }
        out.push(path);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(hart: u16, cycle: u64, kind: EventKind) -> Event {
        Event { hart, cycle, kind }
    }

    #[test]
    fn calls_pair_with_the_next_return_on_the_same_hart() {
        let events = vec![
            ev(1, 10, EventKind::Syscall { number: 64 }),
            ev(0, 12, EventKind::Syscall { number: 124 }),
            ev(0, 15, EventKind::SyscallReturn),
            ev(1, 40, EventKind::SyscallReturn),
            ev(1, 50, EventKind::SyscallReturn),
        ];
        let s = syscall_spans(&events);
        assert_eq!(
            s,
            vec![
                SyscallSpan {
                    hart: 0,
                    number: 124,
                    enter: 12,
                    exit: 15
                },
                SyscallSpan {
                    hart: 1,
                    number: 64,
                    enter: 10,
                    exit: 40
                }
            ]
        );
    }
}
