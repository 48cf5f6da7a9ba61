//! Metrics a study headlines or checks, named by a small text syntax:
//!
//! | metric | value |
//! |--------|-------|
//! | `cycles`, `instret`, `cpi`, `guest_seconds` | the whole run |
//! | `boot_cycles` | before the first guest phase marker |
//! | `workload_cycles` | from the first phase marker to the end |
//! | `console_bytes` | bytes the guest wrote to the console |
//! | `phase[LABEL].cycles` (`.instret`, `.cpi`, `.busy`) | every phase with that label |
//! | `window[FROM..TO].cycles` (`.instret`, `.cpi`, `.busy`) | from the start of phase FROM to the end of phase TO |
//!
//! `.busy` is CPU time: the cycles of all harts that were not waiting in
//! `wfi` (a phase's `.cycles` is wall time of guest time).
//! | `samples[SYMBOL]` | profiler samples whose leaf is SYMBOL |
//! | `place_samples[PLACE]` | samples in `kernel`, `firmware` or a user binary |
//! | `group[NAME]` | samples the study's `[[groups]]` put in NAME (or `other`) |
//! | `task[COMM].kernel_seconds` (`.user_seconds`) | the profile window's samples of guest task COMM in the kernel (S-mode, interrupts it took included) or in user mode, as seconds of hart time (samples × period at the run's clock): what `time` reports as sys and user, from hartscope's samples instead of the guest's tick accounting |
//! | `stat[NAME]` | a counter of the run's total stat block |
//! | `device[NAME]` | a device counter (`uart0.…`, `bus.mmio_writes`, …) |
//! | `syscall[NAME@PHASE].count` (`.mean`, `.median`, `.max`) | system calls NAME begun in phases PHASE (`@PHASE` optional): how many, cycles from the start of the `ecall` to the end of the `sret` back to user mode |
//! | `syscall[NAME@PHASE].per_call` | the phases' cycles divided by the calls in them (a loop's cycles per call) |
//! | `wake[DEVICE:NAME@PHASE].count` (`.mean`, `.median`, `.max`, `.remote`) | those calls during which DEVICE interrupted: cycles from the interrupt to the caller's return; `.remote` the share whose interrupt was taken on another hart |
//! | `guest[NAME]` | a value the guest sent on its `metrics` channel ([`crate::guest_metrics`]) |
//! | `guest[NAME].cycles` | that value, a time, in core cycles at the run's clock |
//! | `ipi_latency[min\|p50\|p90\|p99\|max\|count]` | cross-hart IPIs, send to the target's trap, in cycles ([`crate::ipis`]) |

use std::fmt;

use crate::record::RunRecord;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    Cycles,
    Instret,
    Cpi,
    /// Busy cycles of all harts (not waiting in `wfi`): CPU time.
    Busy,
}

impl Quantity {
    fn name(self) -> &'static str {
        match self {
            Quantity::Cycles => "cycles",
            Quantity::Instret => "instret",
            Quantity::Cpi => "cpi",
            Quantity::Busy => "busy",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Metric {
    Cycles,
    Instret,
    Cpi,
    GuestSeconds,
    BootCycles,
    WorkloadCycles,
    ConsoleBytes,
    Phase {
        label: String,
        what: Quantity,
    },
    Window {
        from: String,
        to: String,
        what: Quantity,
    },
    Samples {
        symbol: String,
    },
    PlaceSamples {
        place: String,
    },
    /// Profile samples the study's `[[groups]]` put in group NAME.
    Group {
        name: String,
    },
    /// Seconds of hart time the profile saw task COMM run, in the kernel
    /// or in user mode.
    Task {
        comm: String,
        user: bool,
    },
    Stat {
        name: String,
    },
    Device {
        name: String,
    },
    Syscall {
        name: String,
        phase: Option<String>,
        agg: Agg,
    },
    Wake {
        device: String,
        syscall: String,
        phase: Option<String>,
        agg: Agg,
    },
    Guest {
        name: String,
        cycles: bool,
    },
    IpiLatency {
        what: String,
    },
}

/// What a `syscall[…]` or `wake[…]` metric makes of its calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agg {
    Count,
    Mean,
    /// The middle value (the lower of the two middle ones): robust against
    /// the few calls a timer interrupt lands in.
    Median,
    Max,
    /// Share of wake-up paths whose interrupt was on another hart.
    Remote,
    /// The phases' cycles divided by the calls (a loop's cycles per call).
    PerCall,
}

impl Agg {
    fn name(self) -> &'static str {
        match self {
            Agg::Count => "count",
            Agg::Mean => "mean",
            Agg::Median => "median",
            Agg::Max => "max",
            Agg::Remote => "remote",
            Agg::PerCall => "per_call",
        }
    }
}

fn at_phase(phase: &Option<String>) -> String {
    phase.as_ref().map(|p| format!("@{p}")).unwrap_or_default()
}

/// Why a metric has no value in a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Missing {
    /// The build does not collect this kind of data yet: a check on it is NOT RUN.
    NotCollected(String),
    /// The run should have had it and did not: a check on it FAILs.
    Absent(String),
}

impl Missing {
    pub fn reason(&self) -> &str {
        match self {
            Missing::NotCollected(r) | Missing::Absent(r) => r,
        }
    }
}

pub const NO_PROFILER: &str = "the run took no samples (`study.sample_period = 0`)";
pub const NO_TIMING_MODEL: &str =
    "the run used the atomic timing model, which keeps no cycle shape or memory stalls (set `machine.description`, e.g. machines/inorder.toml)";
pub const NO_TIMELINE: &str = "the run kept no timeline (`study.timeline = false`)";

const KNOWN: &str = "cycles, instret, cpi, guest_seconds, boot_cycles, workload_cycles, console_bytes, \
phase[LABEL].cycles|instret|cpi|busy, window[FROM..TO].cycles|instret|cpi|busy, samples[SYMBOL], place_samples[PLACE], group[NAME], task[COMM].kernel_seconds|user_seconds, stat[NAME], device[NAME], \
syscall[NAME@PHASE].count|mean|median|max|per_call, wake[DEVICE:NAME@PHASE].count|mean|median|max|remote, \
guest[NAME], guest[NAME].cycles, ipi_latency[min|p50|p90|p99|max|count]";

/// What `ipi_latency[…]` can name.
const IPI_LATENCY: &[&str] = &["min", "p50", "p90", "p99", "max", "count"];

impl std::str::FromStr for Metric {
    type Err = String;

    fn from_str(s: &str) -> Result<Metric, String> {
        let s = s.trim();
        let simple = match s {
            "cycles" => Some(Metric::Cycles),
            "instret" => Some(Metric::Instret),
            "cpi" => Some(Metric::Cpi),
            "guest_seconds" => Some(Metric::GuestSeconds),
            "boot_cycles" => Some(Metric::BootCycles),
            "workload_cycles" => Some(Metric::WorkloadCycles),
            "console_bytes" => Some(Metric::ConsoleBytes),
            _ => None,
        };
        if let Some(m) = simple {
            return Ok(m);
        }
        let unknown = || format!("`{s}` is not a metric (known: {KNOWN})");
        let open = s.find('[').ok_or_else(unknown)?;
        let close = s.rfind(']').ok_or_else(unknown)?;
        if close < open {
            return Err(unknown());
        }
        let (kind, arg, rest) = (&s[..open], &s[open + 1..close], &s[close + 1..]);
        if arg.trim().is_empty() {
            return Err(format!("`{s}` has an empty name between the brackets"));
        }
        let quantity = || match rest {
            ".cycles" => Ok(Quantity::Cycles),
            ".instret" => Ok(Quantity::Instret),
            ".cpi" => Ok(Quantity::Cpi),
            ".busy" => Ok(Quantity::Busy),
            _ => Err(format!(
                "`{s}` must end in .cycles, .instret, .cpi or .busy"
            )),
        };
        let bare = |m: Metric| {
            if rest.is_empty() {
                Ok(m)
            } else {
                Err(format!("`{s}` has `{rest}` after the brackets"))
            }
        };
        match kind {
            "phase" => Ok(Metric::Phase {
                label: arg.to_string(),
                what: quantity()?,
            }),
            "window" => {
                let (from, to) = arg
                    .split_once("..")
                    .filter(|(a, b)| !a.trim().is_empty() && !b.trim().is_empty())
                    .ok_or_else(|| {
                        format!("`{s}`: a window is written window[FROM PHASE..TO PHASE]")
                    })?;
                Ok(Metric::Window {
                    from: from.trim().to_string(),
                    to: to.trim().to_string(),
                    what: quantity()?,
                })
            }
            "samples" => bare(Metric::Samples {
                symbol: arg.to_string(),
            }),
            "place_samples" => bare(Metric::PlaceSamples {
                place: arg.to_string(),
            }),
            "group" => bare(Metric::Group {
                name: arg.to_string(),
            }),
            "task" => match rest {
                ".kernel_seconds" | ".user_seconds" => Ok(Metric::Task {
                    comm: arg.to_string(),
                    user: rest == ".user_seconds",
                }),
                _ => Err(format!(
                    "`{s}`: a task's time is task[COMM].kernel_seconds or task[COMM].user_seconds"
                )),
            },
            "stat" => bare(Metric::Stat {
                name: arg.to_string(),
            }),
            "device" => bare(Metric::Device {
                name: arg.to_string(),
            }),
            "syscall" | "wake" => {
                let (what, phase) = match arg.split_once('@') {
                    Some((w, p)) if !p.trim().is_empty() => (w.trim(), Some(p.trim().to_string())),
                    Some(_) => return Err(format!("`{s}` has an empty phase after `@`")),
                    None => (arg.trim(), None),
                };
                let agg = match rest {
                    ".count" => Agg::Count,
                    ".mean" => Agg::Mean,
                    ".median" => Agg::Median,
                    ".max" => Agg::Max,
                    ".remote" if kind == "wake" => Agg::Remote,
                    ".per_call" if kind == "syscall" && phase.is_some() => Agg::PerCall,
                    ".per_call" if kind == "syscall" => {
                        return Err(format!(
                            "`{s}`: .per_call needs a phase (syscall[NAME@PHASE].per_call)"
                        ))
                    }
                    _ if kind == "wake" => {
                        return Err(format!(
                            "`{s}` must end in .count, .mean, .median, .max or .remote"
                        ))
                    }
                    _ => {
                        return Err(format!(
                            "`{s}` must end in .count, .mean, .median, .max or .per_call"
                        ))
                    }
                };
                if kind == "syscall" {
                    return Ok(Metric::Syscall {
                        name: what.to_string(),
                        phase,
                        agg,
                    });
                }
                let (device, syscall) = what
                    .split_once(':')
                    .filter(|(d, c)| !d.trim().is_empty() && !c.trim().is_empty())
                    .ok_or_else(|| {
                        format!("`{s}`: a wake-up path is written wake[DEVICE:SYSCALL@PHASE]")
                    })?;
                Ok(Metric::Wake {
                    device: device.trim().to_string(),
                    syscall: syscall.trim().to_string(),
                    phase,
                    agg,
                })
            }
            "guest" => match rest {
                "" => Ok(Metric::Guest {
                    name: arg.to_string(),
                    cycles: false,
                }),
                ".cycles" => Ok(Metric::Guest {
                    name: arg.to_string(),
                    cycles: true,
                }),
                _ => Err(format!(
                    "`{s}`: a guest metric is guest[NAME] or guest[NAME].cycles"
                )),
            },
            "ipi_latency" if IPI_LATENCY.contains(&arg) => bare(Metric::IpiLatency {
                what: arg.to_string(),
            }),
            "ipi_latency" => Err(format!(
                "`{s}`: ipi_latency[…] is one of {}",
                IPI_LATENCY.join(", ")
            )),
            _ => Err(unknown()),
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::Cycles => f.write_str("cycles"),
            Metric::Instret => f.write_str("instret"),
            Metric::Cpi => f.write_str("cpi"),
            Metric::GuestSeconds => f.write_str("guest_seconds"),
            Metric::BootCycles => f.write_str("boot_cycles"),
            Metric::WorkloadCycles => f.write_str("workload_cycles"),
            Metric::ConsoleBytes => f.write_str("console_bytes"),
            Metric::Phase { label, what } => write!(f, "phase[{label}].{}", what.name()),
            Metric::Window { from, to, what } => write!(f, "window[{from}..{to}].{}", what.name()),
            Metric::Samples { symbol } => write!(f, "samples[{symbol}]"),
            Metric::PlaceSamples { place } => write!(f, "place_samples[{place}]"),
            Metric::Task { comm, user } => {
                let mode = if *user { "user" } else { "kernel" };
                write!(f, "task[{comm}].{mode}_seconds")
            }
            Metric::Group { name } => write!(f, "group[{name}]"),
            Metric::Stat { name } => write!(f, "stat[{name}]"),
            Metric::Device { name } => write!(f, "device[{name}]"),
            Metric::Syscall { name, phase, agg } => {
                write!(f, "syscall[{name}{}].{}", at_phase(phase), agg.name())
            }
            Metric::Wake {
                device,
                syscall,
                phase,
                agg,
            } => {
                write!(
                    f,
                    "wake[{device}:{syscall}{}].{}",
                    at_phase(phase),
                    agg.name()
                )
            }
            Metric::Guest {
                name,
                cycles: false,
            } => write!(f, "guest[{name}]"),
            Metric::Guest { name, cycles: true } => write!(f, "guest[{name}].cycles"),
            Metric::IpiLatency { what } => write!(f, "ipi_latency[{what}]"),
        }
    }
}

/// How a value prints: integers with thousands separators, ratios with decimals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Count,
    Ratio,
    Seconds,
    /// A count when the value is whole, else a ratio (stats hold both).
    Auto,
}

impl Metric {
    pub fn format(&self) -> Format {
        match self {
            Metric::Cpi
            | Metric::Phase {
                what: Quantity::Cpi,
                ..
            }
            | Metric::Window {
                what: Quantity::Cpi,
                ..
            } => Format::Ratio,
            Metric::GuestSeconds | Metric::Task { .. } => Format::Seconds,
            Metric::Stat { .. } | Metric::Guest { cycles: false, .. } => Format::Auto,
            Metric::Wake {
                agg: Agg::Remote, ..
            } => Format::Ratio,
            Metric::Syscall {
                agg: Agg::PerCall, ..
            } => Format::Ratio,
            _ => Format::Count,
        }
    }

    /// Whether the value is a number of core cycles (so it converts to time).
    pub fn is_cycles(&self) -> bool {
        match self {
            Metric::Cycles | Metric::BootCycles | Metric::WorkloadCycles => true,
            Metric::Phase { what, .. } | Metric::Window { what, .. } => {
                matches!(what, Quantity::Cycles | Quantity::Busy)
            }
            Metric::Syscall { agg, .. } => *agg != Agg::Count,
            Metric::Wake { agg, .. } => !matches!(agg, Agg::Count | Agg::Remote),
            Metric::Guest { cycles, .. } => *cycles,
            Metric::IpiLatency { what } => what != "count",
            _ => false,
        }
    }

    /// The metric's value in `run`.
    pub fn value(&self, run: &RunRecord) -> Result<f64, Missing> {
        let obs = &run.observations;
        let c = &run.counters;
        // Busy cycles: idle time in wfi is not the harts' work.
        let idle: u64 = c
            .harts
            .iter()
            .filter_map(|h| obs.total.get(&format!("system.cpu{}.idleCycles", h.hart)))
            .map(|s| s.value.as_f64() as u64)
            .sum();
        let busy: u64 = c
            .harts
            .iter()
            .map(|h| h.cycles)
            .sum::<u64>()
            .saturating_sub(idle);
        match self {
            Metric::Cycles => Ok(c.cycles as f64),
            Metric::Instret => Ok(c.instret as f64),
            Metric::Cpi => ratio(busy, c.instret),
            Metric::GuestSeconds => Ok(c.guest_seconds),
            Metric::BootCycles => match obs.phases.first() {
                Some(p) if obs.phases.len() > 1 => Ok(p.cycles() as f64),
                _ => Err(Missing::Absent("the guest marked no phase".into())),
            },
            Metric::WorkloadCycles => match obs.phases.get(1) {
                Some(p) => Ok(c.cycles.saturating_sub(p.start_cycle) as f64),
                None => Err(Missing::Absent("the guest marked no phase".into())),
            },
            Metric::ConsoleBytes => Ok(run.console.bytes as f64),
            Metric::Phase { label, what } => {
                let phases: Vec<_> = obs.phases.iter().filter(|p| &p.label == label).collect();
                if phases.is_empty() {
                    return Err(Missing::Absent(format!(
                        "no phase `{label}` in run {}",
                        run.variant
                    )));
                }
                let cycles: u64 = phases.iter().map(|p| p.cycles()).sum();
                let instret: u64 = phases.iter().map(|p| p.instret()).sum();
                let busy: u64 = phases.iter().map(|p| p.hart_cycles()).sum();
                quantity(*what, cycles, instret, busy)
            }
            Metric::Window { from, to, what } => {
                let a = obs.phases.iter().position(|p| &p.label == from);
                let a = a.ok_or_else(|| {
                    Missing::Absent(format!("no phase `{from}` in run {}", run.variant))
                })?;
                let b = obs.phases[a..]
                    .iter()
                    .position(|p| &p.label == to)
                    .map(|i| a + i);
                let b = b.ok_or_else(|| {
                    Missing::Absent(format!(
                        "no phase `{to}` at or after `{from}` in run {}",
                        run.variant
                    ))
                })?;
                let span = &obs.phases[a..=b];
                let cycles = span[span.len() - 1]
                    .end_cycle
                    .saturating_sub(span[0].start_cycle);
                let instret = span.iter().map(|p| p.instret()).sum();
                let busy = span.iter().map(|p| p.hart_cycles()).sum();
                quantity(*what, cycles, instret, busy)
            }
            Metric::Samples { symbol } => match &run.profile {
                Some(p) => Ok(p.samples_of(symbol) as f64),
                None => Err(Missing::NotCollected(NO_PROFILER.into())),
            },
            Metric::Group { name } => match &run.profile {
                Some(p) => match p.groups.iter().find(|g| &g.name == name) {
                    Some(g) => Ok(g.samples as f64),
                    None => Err(Missing::Absent(format!(
                        "the run's profile has no group `{name}` (the study's [[groups]] name them, and `other`)"
                    ))),
                },
                None => Err(Missing::NotCollected(NO_PROFILER.into())),
            },
            Metric::Task { comm, user } => match &run.profile {
                Some(_) if run.machine.mhz == 0 => Err(Missing::Absent(
                    "the run records no clock rate to turn samples into seconds".into(),
                )),
                Some(p) => match p.tasks.iter().find(|t| &t.comm == comm) {
                    Some(t) => {
                        let samples = if *user { t.user } else { t.kernel };
                        Ok(samples as f64 * p.period as f64 / (run.machine.mhz as f64 * 1e6))
                    }
                    None => Err(Missing::Absent(format!(
                        "no profile sample in the window ({}) ran a task named `{comm}`",
                        p.window
                    ))),
                },
                None => Err(Missing::NotCollected(NO_PROFILER.into())),
            },
            Metric::PlaceSamples { place } => match &run.profile {
                Some(p) => Ok(p
                    .rows
                    .iter()
                    .filter(|r| &r.place == place)
                    .map(|r| r.samples)
                    .sum::<u64>() as f64),
                None => Err(Missing::NotCollected(NO_PROFILER.into())),
            },
            Metric::Stat { name } => match obs.total.get(name) {
                Some(s) => Ok(s.value.as_f64()),
                None if run.machine.description.is_none() => Err(Missing::NotCollected(format!(
                    "the run recorded no stat `{name}`: {NO_TIMING_MODEL}"
                ))),
                None => Err(Missing::Absent(format!(
                    "the run recorded no stat `{name}`"
                ))),
            },
            Metric::Device { name } => match c.devices.get(name) {
                Some(v) => Ok(*v as f64),
                None => Err(Missing::Absent(format!(
                    "the run has no device counter `{name}`"
                ))),
            },
            Metric::Syscall { name, phase, agg } => {
                let d: Vec<u64> = crate::paths::calls(run, name, phase.as_deref())?
                    .iter()
                    .map(|s| s.exit - s.enter)
                    .collect();
                let none = format!("no `{name}` call{} in run {}", at_phase(phase), run.variant);
                if *agg == Agg::PerCall {
                    let label = phase.as_deref().unwrap_or_default();
                    let cycles: u64 = obs
                        .phases
                        .iter()
                        .filter(|p| p.label == label)
                        .map(|p| p.cycles())
                        .sum();
                    return if d.is_empty() {
                        Err(Missing::Absent(none))
                    } else {
                        Ok(cycles as f64 / d.len() as f64)
                    };
                }
                aggregate(&d, *agg, 0, &none)
            }
            Metric::Wake {
                device,
                syscall,
                phase,
                agg,
            } => {
                let p = crate::paths::wake_paths(run, device, syscall, phase.as_deref())?;
                let d: Vec<u64> = p.iter().map(|w| w.irq_to_return()).collect();
                let remote = p.iter().filter(|w| w.remote()).count();
                let why = format!(
                    "no `{syscall}` call{} was interrupted by `{device}` in run {}",
                    at_phase(phase),
                    run.variant
                );
                aggregate(&d, *agg, remote, &why)
            }
            Metric::Guest { name, cycles } => {
                let v = run.guest_metrics.get(name).ok_or_else(|| {
                    Missing::Absent(format!(
                        "the guest sent no metric `{name}` (channel `{}`)",
                        crate::guest_metrics::CHANNEL
                    ))
                })?;
                if !cycles {
                    return Ok(v.value);
                }
                match v.ns_per_unit() {
                    Some(ns) => Ok((v.value * ns * run.machine.mhz as f64 / 1e3).round()),
                    None => Err(Missing::Absent(format!(
                        "guest metric `{name}` is in `{}`, not a time unit (ns, us, ms, s)",
                        v.unit
                    ))),
                }
            }
            Metric::IpiLatency { what } => {
                if obs.events.is_empty() {
                    return Err(Missing::NotCollected(NO_TIMELINE.into()));
                }
                let l = crate::ipis::IpiLatencies::from_events(&obs.events);
                let p = |q: f64| {
                    l.percentile(q)
                        .map(|v| v as f64)
                        .ok_or_else(|| Missing::Absent("no cross-hart IPI was taken".into()))
                };
                match what.as_str() {
                    "count" => Ok(l.latencies.len() as f64),
                    "min" => p(0.0),
                    "p50" => p(50.0),
                    "p90" => p(90.0),
                    "p99" => p(99.0),
                    _ => p(100.0),
                }
            }
        }
    }
}

fn aggregate(d: &[u64], agg: Agg, remote: usize, none: &str) -> Result<f64, Missing> {
    if d.is_empty() && agg != Agg::Count {
        return Err(Missing::Absent(none.to_string()));
    }
    Ok(match agg {
        Agg::Count => d.len() as f64,
        Agg::Mean => (d.iter().sum::<u64>() as f64 / d.len() as f64).round(),
        Agg::Median => {
            let mut v = d.to_vec();
            v.sort_unstable();
            v[(v.len() - 1) / 2] as f64
        }
        Agg::Max => *d.iter().max().unwrap_or(&0) as f64,
        Agg::Remote => remote as f64 / d.len() as f64,
        Agg::PerCall => unreachable!("per_call is computed from the phases"),
    })
}

fn ratio(num: u64, den: u64) -> Result<f64, Missing> {
    if den == 0 {
        Err(Missing::Absent("no instructions retired".into()))
    } else {
        Ok(num as f64 / den as f64)
    }
}

fn quantity(what: Quantity, cycles: u64, instret: u64, busy: u64) -> Result<f64, Missing> {
    match what {
        Quantity::Cycles => Ok(cycles as f64),
        Quantity::Instret => Ok(instret as f64),
        Quantity::Cpi => ratio(busy, instret),
        Quantity::Busy => Ok(busy as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_back() {
        for text in [
            "cycles",
            "cpi",
            "phase[ls /bin /usr/share].cycles",
            "window[shell banner..final marker].instret",
            "phase[rx 1450].busy",
            "samples[n_tty_write]",
            "place_samples[firmware]",
            "task[ttcp].kernel_seconds",
            "task[kworker/0:1].user_seconds",
            "stat[system.cpu0.memStallCycles]",
            "device[uart0.thr_writes]",
            "syscall[write].mean",
            "syscall[write@rtloop cpu1].count",
            "wake[dma0:write@rtloop cpu1].remote",
            "wake[dma0:write].max",
            "syscall[getppid@loop].per_call",
            "syscall[getppid@loop].median",
            "guest[rtt_us.p50]",
            "guest[rtt_us.p99].cycles",
            "ipi_latency[p50]",
        ] {
            let m: Metric = text.parse().unwrap();
            assert_eq!(m.to_string(), text);
        }
        assert_eq!(
            "window[ a .. b ].cpi".parse::<Metric>().unwrap(),
            Metric::Window {
                from: "a".into(),
                to: "b".into(),
                what: Quantity::Cpi
            }
        );
    }

    #[test]
    fn bad_metrics_say_why() {
        assert!("cylces"
            .parse::<Metric>()
            .unwrap_err()
            .contains("is not a metric"));
        assert!("phase[x]"
            .parse::<Metric>()
            .unwrap_err()
            .contains("must end in .cycles"));
        assert!("phase[].cycles"
            .parse::<Metric>()
            .unwrap_err()
            .contains("empty name"));
        assert!("window[a].cycles"
            .parse::<Metric>()
            .unwrap_err()
            .contains("FROM PHASE..TO PHASE"));
        assert!("samples[x].cycles"
            .parse::<Metric>()
            .unwrap_err()
            .contains("after the brackets"));
        for bad in ["task[ttcp]", "task[ttcp].sys"] {
            assert!(
                bad.parse::<Metric>()
                    .unwrap_err()
                    .contains("task[COMM].kernel_seconds or task[COMM].user_seconds"),
                "{bad}"
            );
        }
        assert!("nope[x]"
            .parse::<Metric>()
            .unwrap_err()
            .contains("is not a metric"));
        assert!("syscall[write].remote"
            .parse::<Metric>()
            .unwrap_err()
            .contains(".count, .mean, .median, .max or .per_call"));
        assert!("wake[write].mean"
            .parse::<Metric>()
            .unwrap_err()
            .contains("wake[DEVICE:SYSCALL@PHASE]"));
        assert!("syscall[write@].mean"
            .parse::<Metric>()
            .unwrap_err()
            .contains("empty phase"));
        assert!("syscall[getppid].per_call"
            .parse::<Metric>()
            .unwrap_err()
            .contains("needs a phase"));
        assert!("guest[x].instret"
            .parse::<Metric>()
            .unwrap_err()
            .contains("guest[NAME].cycles"));
        assert!("ipi_latency[p42]"
            .parse::<Metric>()
            .unwrap_err()
            .contains("one of min, p50"));
    }

    #[test]
    fn a_tasks_time_is_its_window_samples_at_the_run_clock() {
        // the fixture's profile: `sh` 150 samples in the kernel, 50 in
        // user mode, one every 1,024 cycles
        let mut r = crate::testdata::run("A", 1_000_000, &[("x", 10)], true);
        r.machine.mhz = 512;
        let v = |r: &RunRecord, m: &str| m.parse::<Metric>().unwrap().value(r);
        assert_eq!(v(&r, "task[sh].kernel_seconds"), Ok(150.0 * 1024.0 / 512e6));
        assert_eq!(v(&r, "task[sh].user_seconds"), Ok(50.0 * 1024.0 / 512e6));
        assert!(
            matches!(v(&r, "task[ttcp].kernel_seconds"), Err(Missing::Absent(m)) if m.contains("`ttcp`"))
        );
        r.machine.mhz = 0;
        assert!(matches!(
            v(&r, "task[sh].kernel_seconds"),
            Err(Missing::Absent(m)) if m.contains("clock rate")
        ));
        r.profile = None;
        assert!(matches!(
            v(&r, "task[sh].kernel_seconds"),
            Err(Missing::NotCollected(_))
        ));
    }

    #[test]
    fn guest_values_and_ipi_latencies_come_from_the_record() {
        use crate::guest_metrics::GuestValue;
        use hs_observe::{Event, EventKind};
        let mut r = crate::testdata::run("A", 1_000_000, &[("x", 10)], true);
        r.machine.mhz = 500;
        r.guest_metrics.insert(
            "rtt_us.p50".into(),
            GuestValue {
                value: 41.25,
                unit: "us".into(),
            },
        );
        r.guest_metrics.insert(
            "rounds".into(),
            GuestValue {
                value: 200.0,
                unit: "count".into(),
            },
        );
        let v = |m: &str| m.parse::<Metric>().unwrap().value(&r);
        assert_eq!(v("guest[rtt_us.p50]"), Ok(41.25));
        assert_eq!(
            v("guest[rtt_us.p50].cycles"),
            Ok(20_625.0),
            "41.25 µs at 500 MHz"
        );
        assert!(
            matches!(v("guest[rounds].cycles"), Err(Missing::Absent(m)) if m.contains("not a time unit"))
        );
        assert!(matches!(v("guest[nope]"), Err(Missing::Absent(_))));
        // The fixture's timeline has no IPI: absent, not zero.
        assert!(matches!(v("ipi_latency[p50]"), Err(Missing::Absent(_))));
        r.observations.events.push(Event {
            hart: 0,
            cycle: 1_000,
            kind: EventKind::IpiSent { to: 1 },
        });
        r.observations.events.push(Event {
            hart: 1,
            cycle: 5_000_000,
            kind: EventKind::IpiReceived { from: None },
        });
        let v = |m: &str| m.parse::<Metric>().unwrap().value(&r);
        assert_eq!(v("ipi_latency[max]"), Ok(4_999_000.0));
        assert_eq!(v("ipi_latency[count]"), Ok(1.0));
        r.observations.events.clear();
        assert!(matches!(
            r.observations
                .events
                .is_empty()
                .then(|| "ipi_latency[p50]".parse::<Metric>().unwrap().value(&r)),
            Some(Err(Missing::NotCollected(_)))
        ));
    }
}
