//! Scenario files (`studies/NAME.toml`): parsed with unknown keys refused,
//! then validated completely before anything runs. Every error names the
//! file and the dotted key.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use crate::error::{LabError, Result};
use crate::metric::Metric;

pub const DEFAULT_HARTS: usize = 1;
pub const DEFAULT_MEMORY: u64 = 512 << 20;
pub const DEFAULT_MHZ: u64 = 1000;
/// As on the P87 page: one sample every 1,024 cycles of each hart.
pub const DEFAULT_SAMPLE_PERIOD: u64 = 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    study: RawStudy,
    #[serde(default)]
    machine: RawMachine,
    guest: RawGuest,
    workload: RawWorkload,
    variants: Ordered<RawVariant>,
    #[serde(default)]
    checks: Vec<RawCheck>,
    #[serde(default)]
    tables: Vec<RawTable>,
    #[serde(default)]
    groups: Vec<RawGroup>,
}

/// `[[groups]]`: a named set of symbol prefixes; each profile sample goes
/// to the first group (in file order) that a frame of its stack matches,
/// walking from the leaf outwards — `perf report --parent` in spirit.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    name: String,
    /// Symbol prefixes (`dw_spi_`), or `place:NAME` for any code of a user
    /// binary (`place:ttcp`).
    symbols: Vec<String>,
}

/// A profile group (see `[[groups]]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileGroup {
    pub name: String,
    pub symbols: Vec<String>,
}

impl ProfileGroup {
    /// Whether a frame (its place and symbol) belongs to this group.
    pub fn matches(&self, place: &str, symbol: &str) -> bool {
        self.symbols.iter().any(|p| match p.strip_prefix("place:") {
            Some(pl) => place == pl,
            None => symbol.starts_with(p.as_str()),
        })
    }
}

fn parse_groups(raw: &[RawGroup], err: &ErrFn) -> Result<Vec<ProfileGroup>> {
    let mut out: Vec<ProfileGroup> = Vec::new();
    for (i, g) in raw.iter().enumerate() {
        let key = |k: &str| format!("groups[{i}].{k}");
        let name_ok = !g.name.is_empty()
            && g.name.len() <= 64
            && g.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || " -_./()".contains(c));
        if !name_ok || g.name == "other" {
            return Err(err(&key("name"), format!("{:?} is not a group name (1 to 64 letters, digits, spaces and - _ . / ( ); `other` is taken)", g.name)));
        }
        if out.iter().any(|o| o.name == g.name) {
            return Err(err(&key("name"), format!("`{}` names two groups", g.name)));
        }
        if g.symbols.is_empty()
            || g.symbols
                .iter()
                .any(|p| p.trim().is_empty() || p == "place:")
        {
            return Err(err(
                &key("symbols"),
                "a group needs at least one non-empty symbol prefix or `place:NAME`".into(),
            ));
        }
        out.push(ProfileGroup {
            name: g.name.clone(),
            symbols: g.symbols.clone(),
        });
    }
    Ok(out)
}

/// `[[tables]]`: one metric laid out rows × variants, as a seed's table.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    title: String,
    /// Header of the first column (what a row is).
    row: String,
    rows: Vec<String>,
    /// A metric with `{row}` where the row's name goes.
    metric: String,
    /// `cycles` (default), `us` or `ms` of guest time.
    unit: Option<String>,
}

/// A study's own table: `metric` with `{row}` replaced, per row and variant.
#[derive(Clone, Debug, PartialEq)]
pub struct PivotTable {
    pub title: String,
    pub row_header: String,
    /// The metric as written, with `{row}`.
    pub template: String,
    /// (row name, its metric)
    pub rows: Vec<(String, Metric)>,
    pub unit: TableUnit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableUnit {
    Cycles,
    /// A plain count (samples, bytes, …): shown as is.
    Count,
    Micros,
    Millis,
}

impl TableUnit {
    pub fn name(self) -> &'static str {
        match self {
            TableUnit::Cycles => "cycles",
            TableUnit::Count => "count",
            TableUnit::Micros => "µs",
            TableUnit::Millis => "ms",
        }
    }
}

fn parse_tables(raw: &[RawTable], err: &ErrFn) -> Result<Vec<PivotTable>> {
    let mut out = Vec::new();
    for (i, t) in raw.iter().enumerate() {
        let key = |k: &str| format!("tables[{i}].{k}");
        if !t.metric.contains("{row}") {
            return Err(err(
                &key("metric"),
                format!(
                    "`{}` must contain `{{row}}` where each row's name goes",
                    t.metric
                ),
            ));
        }
        if t.rows.is_empty() {
            return Err(err(&key("rows"), "a table needs at least one row".into()));
        }
        let unit = match t.unit.as_deref() {
            None | Some("cycles") => TableUnit::Cycles,
            Some("us") => TableUnit::Micros,
            Some("ms") => TableUnit::Millis,
            Some("count") => TableUnit::Count,
            Some(u) => {
                return Err(err(
                    &key("unit"),
                    format!("`{u}` is not a unit (cycles, count, us or ms)"),
                ))
            }
        };
        let mut rows = Vec::new();
        for r in &t.rows {
            let m = t
                .metric
                .replace("{row}", r)
                .parse::<Metric>()
                .map_err(|m| err(&key("metric"), m))?;
            if !matches!(unit, TableUnit::Cycles | TableUnit::Count) && !m.is_cycles() {
                return Err(err(
                    &key("unit"),
                    format!(
                        "`{m}` is not a number of cycles, so it cannot be shown in {}",
                        unit.name()
                    ),
                ));
            }
            rows.push((r.clone(), m));
        }
        out.push(PivotTable {
            title: t.title.clone(),
            row_header: t.row.clone(),
            template: t.metric.clone(),
            rows,
            unit,
        });
    }
    Ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStudy {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    headline: Vec<String>,
    /// The variant the others are compared with (default: the first).
    baseline: Option<String>,
    /// Cycles between two profiler samples of one hart (0: no sampling).
    sample_period: Option<i64>,
    /// Keep the timeline (traps, syscalls, interrupts) for the tables and trace.json.
    timeline: Option<bool>,
    /// An instruction trace in every run, as `boot --itrace` takes it.
    itrace: Option<String>,
    /// The profile starts at this phase marker (default: the first marker).
    profile_from: Option<String>,
    /// The profile ends where this phase begins (default: the run's end).
    profile_to: Option<String>,
    /// How runs start: `each` boots from reset (default), `shared` boots
    /// once per guest and machine, `fast-forward` boots once on the atomic model.
    boot: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawMachine {
    harts: Option<i64>,
    memory: Option<MemSize>,
    mhz: Option<i64>,
    /// Longest slice one hart runs before the next gets its turn (cycles).
    quantum: Option<i64>,
    description: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGuest {
    image: String,
    #[serde(default)]
    append: String,
    patches: Option<String>,
    config: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    dir: String,
    #[serde(default)]
    env: BTreeMap<String, String>,
    max_guest_seconds: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    #[serde(default)]
    description: String,
    image: Option<String>,
    append: Option<String>,
    harts: Option<i64>,
    memory: Option<MemSize>,
    mhz: Option<i64>,
    quantum: Option<i64>,
    /// Machine description file overriding `[machine] description`.
    machine_description: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    patches: Option<String>,
    config: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCheck {
    name: String,
    variant: String,
    metric: Option<String>,
    op: Option<String>,
    value: Option<f64>,
    than: Option<String>,
    /// Compare with this metric (in `than`'s variant if given, else the same).
    than_metric: Option<String>,
    /// Multiplies the right-hand side (`value`, or the metric compared with).
    factor: Option<f64>,
    console_contains: Option<String>,
}

/// A memory size: an integer (MiB, as QEMU's `-m`) or a string such as `512M`, `2G`.
struct MemSize(std::result::Result<u64, String>);

impl<'de> Deserialize<'de> for MemSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = MemSize;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a memory size: an integer number of MiB or a string such as \"512M\" or \"2G\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<MemSize, E> {
                Ok(MemSize(if v > 0 {
                    (v as u64)
                        .checked_mul(1 << 20)
                        .ok_or_else(|| format!("{v} MiB is too large"))
                } else {
                    Err(format!("{v} is not a memory size"))
                }))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<MemSize, E> {
                Ok(MemSize(parse_memory(v)))
            }
        }
        d.deserialize_any(V)
    }
}

/// `512`, `512M`, `512MiB`, `2G`, `64K` → bytes (MiB when no unit).
pub fn parse_memory(s: &str) -> std::result::Result<u64, String> {
    let bad = || format!("`{s}` is not a memory size (e.g. 512M or 2G)");
    let v = s.trim().trim_end_matches(['B', 'b']).trim_end_matches('i');
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" | "M" => 20,
        "K" => 10,
        "G" => 30,
        _ => return Err(bad()),
    };
    let n: u64 = num.parse().map_err(|_| bad())?;
    n.checked_shl(shift)
        .filter(|b| b >> shift == n)
        .ok_or_else(|| format!("memory size `{s}` is too large"))
}

/// A TOML table whose entries keep the order they have in the file (the
/// variants' order is the report's column order).
struct Ordered<T>(Vec<(String, T)>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table of named variants")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Ordered<T>, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, T>()? {
                    out.push((k, v));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// The file as named on the command line.
    pub path: PathBuf,
    pub text: String,
    pub sha256: String,
    pub name: String,
    pub description: String,
    pub headline: Vec<Metric>,
    /// Cycles between two samples of one hart; 0: no profile.
    pub sample_period: u64,
    /// Keep timeline events (syscall and interrupt tables, trace.json).
    pub timeline: bool,
    /// Instruction trace of every run (`study.itrace`, `boot --itrace` syntax).
    pub itrace: Option<hs_machine::ItraceSpec>,
    /// Profile window: from this phase label (default: the first marker) ...
    pub profile_from: Option<String>,
    /// ... to the start of this one (default: the end of the run).
    pub profile_to: Option<String>,
    /// In report order; the first is the baseline.
    pub variants: Vec<Variant>,
    pub checks: Vec<Check>,
    pub tables: Vec<PivotTable>,
    /// `[[groups]]`: how the profile is split (`group[NAME]`).
    pub groups: Vec<ProfileGroup>,
    /// `[study] boot`: how runs start (see [`crate::shared_boot`]).
    pub boot: crate::shared_boot::BootMode,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    pub name: String,
    pub description: String,
    pub image: String,
    /// Kernel arguments the study adds to the image's command line (see [`merge_cmdline`]).
    pub append: String,
    pub harts: usize,
    pub memory_bytes: u64,
    pub mhz: u64,
    /// Longest slice one hart runs before the next gets its turn: how late
    /// one hart can see what another did (cycles).
    pub quantum: u64,
    /// Machine description (timing model) file; `None`: the atomic model.
    pub machine_desc: Option<PathBuf>,
    /// What the description calls itself (its `description` line).
    pub machine_desc_text: Option<String>,
    /// Exported to `run.sh`.
    pub env: BTreeMap<String, String>,
    pub workload: PathBuf,
    /// A patch series applied after the image's own (custom kernels only).
    pub patches: Option<PathBuf>,
    /// A kernel config fragment applied after the image's own (custom kernels only).
    pub config: Option<PathBuf>,
    pub max_cycles: Option<u64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub name: String,
    pub variant: String,
    pub kind: CheckKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum CheckKind {
    /// `metric op factor × rhs`.
    Compare {
        metric: Metric,
        op: Op,
        rhs: Rhs,
        factor: f64,
    },
    ConsoleContains(String),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Rhs {
    Value(f64),
    /// The same metric in another variant.
    Variant(String),
    /// Another metric, in the check's own variant (`None`) or another.
    Metric {
        variant: Option<String>,
        metric: Metric,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn parse(s: &str) -> Option<Op> {
        Some(match s {
            "=" | "==" => Op::Eq,
            "!=" => Op::Ne,
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            _ => return None,
        })
    }
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Ne => "≠",
            Op::Lt => "<",
            Op::Le => "≤",
            Op::Gt => ">",
            Op::Ge => "≥",
        }
    }
    pub fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Eq => a == b,
            Op::Ne => a != b,
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
        }
    }
}

/// What validation needs to know about the world outside the file.
#[derive(Clone, Debug)]
pub struct Context {
    /// The guest recipe directory (`guest/`), for image names and kinds.
    pub guest_dir: PathBuf,
}

impl Context {
    pub fn from_env() -> Context {
        Context {
            guest_dir: hs_guest::Builder::from_env().guest_dir,
        }
    }
}

/// Kernel arguments: the base command line with every argument whose key
/// (the text before `=`) appears in `extra` removed, then `extra`. So a
/// study's `console=hvc0` replaces the image's `console=ttyS0` instead of
/// adding a second console.
pub fn merge_cmdline(base: &str, extra: &str) -> String {
    let key = |a: &str| a.split('=').next().unwrap_or(a).to_string();
    let replaced: Vec<String> = extra.split_whitespace().map(key).collect();
    let mut out: Vec<&str> = base
        .split_whitespace()
        .filter(|a| !replaced.contains(&key(a)))
        .collect();
    out.extend(extra.split_whitespace());
    out.join(" ")
}

impl Scenario {
    pub fn load(path: &Path, ctx: &Context) -> Result<Scenario> {
        let text = std::fs::read_to_string(path).map_err(|e| LabError::ScenarioFile {
            file: path.to_path_buf(),
            message: format!("cannot be read ({e})"),
        })?;
        Scenario::parse(path, &text, ctx)
    }

    /// Parse and validate `text` as the scenario file `path` (relative paths
    /// in it are relative to `path`'s directory).
    pub fn parse(path: &Path, text: &str, ctx: &Context) -> Result<Scenario> {
        let err = |key: &str, message: String| LabError::Scenario {
            file: path.to_path_buf(),
            key: key.to_string(),
            message,
        };
        let raw: RawScenario = match serde_path_to_error::deserialize(toml::Deserializer::new(text))
        {
            Ok(r) => r,
            Err(e) => {
                let key = e.path().to_string();
                let inner = e.into_inner();
                // toml spreads some messages over lines; the error is one sentence.
                let message = inner
                    .message()
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect::<Vec<_>>()
                    .join("; ");
                if key.is_empty() || key == "." {
                    let line = inner.span().map(|s| {
                        text.as_bytes()[..s.start.min(text.len())]
                            .iter()
                            .filter(|&&b| b == b'\n')
                            .count()
                            + 1
                    });
                    return Err(LabError::ScenarioFile {
                        file: path.to_path_buf(),
                        message: match line {
                            Some(l) => format!("line {l}: {message}"),
                            None => message,
                        },
                    });
                }
                return Err(err(&key, message));
            }
        };
        let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();

        // [study]
        let name = raw.study.name.trim().to_string();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            || name.starts_with('.')
        {
            return Err(err("study.name", format!("`{name}` must be a non-empty name of letters, digits, `-`, `_` and `.` (it names the results directory)")));
        }
        let mut headline = Vec::new();
        for (i, h) in raw.study.headline.iter().enumerate() {
            headline.push(
                h.parse::<Metric>()
                    .map_err(|m| err(&format!("study.headline[{i}]"), m))?,
            );
        }

        // [machine]
        let m = &raw.machine;
        let study_desc = match &m.description {
            Some(d) => Some(check_desc(&base_dir, d, "machine.description", &err)?),
            None => None,
        };
        let sample_period = match raw.study.sample_period {
            None => DEFAULT_SAMPLE_PERIOD,
            Some(n) if (0..=1 << 40).contains(&n) => n as u64,
            Some(n) => {
                return Err(err(
                    "study.sample_period",
                    format!("{n} is impossible (cycles between samples, 0 for none)"),
                ))
            }
        };
        let harts = check_harts(m.harts, "machine.harts", &err)?.unwrap_or(DEFAULT_HARTS);
        let memory = check_memory(&m.memory, "machine.memory", &err)?.unwrap_or(DEFAULT_MEMORY);
        let mhz = check_mhz(m.mhz, "machine.mhz", &err)?.unwrap_or(DEFAULT_MHZ);
        let quantum =
            check_quantum(m.quantum, "machine.quantum", &err)?.unwrap_or(crate::run::QUANTUM);

        // [guest]
        let images = hs_guest::known_images(&ctx.guest_dir);
        check_image(&raw.guest.image, "guest.image", &images, &err)?;
        check_append(&raw.guest.append, "guest.append", &err)?;
        let study_patches = match &raw.guest.patches {
            Some(p) => Some(check_patches(&base_dir, p, "guest.patches", &err)?),
            None => None,
        };
        let study_config = match &raw.guest.config {
            Some(c) => Some(check_config(&base_dir, c, "guest.config", &err)?),
            None => None,
        };

        // [workload]
        let workload = base_dir.join(&raw.workload.dir);
        if !workload.join("run.sh").is_file() {
            return Err(err(
                "workload.dir",
                format!(
                    "`{}` (relative to the scenario file) must be a directory holding run.sh",
                    raw.workload.dir
                ),
            ));
        }
        check_env(&raw.workload.env, "workload.env", &err)?;
        let max_cycles = match raw.workload.max_guest_seconds {
            Some(s) if !(s.is_finite() && s > 0.0 && s < 1e6) => {
                return Err(err(
                    "workload.max_guest_seconds",
                    format!("{s} must be a positive number of seconds below 1000000"),
                ))
            }
            Some(s) => Some(s),
            None => None,
        };

        // [variants.*]
        if raw.variants.0.is_empty() {
            return Err(err(
                "variants",
                "a study needs at least one variant ([variants.A])".into(),
            ));
        }
        let mut variants = Vec::new();
        for (vname, v) in &raw.variants.0 {
            let key = |k: &str| format!("variants.{vname}.{k}");
            if vname.is_empty()
                || !vname
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
            {
                return Err(err(
                    &format!("variants.{vname}"),
                    "a variant name is letters, digits, `-` and `_`".into(),
                ));
            }
            let image = match &v.image {
                Some(i) => {
                    check_image(i, &key("image"), &images, &err)?;
                    i.clone()
                }
                None => raw.guest.image.clone(),
            };
            let append = match &v.append {
                Some(a) => {
                    check_append(a, &key("append"), &err)?;
                    merge_cmdline(&raw.guest.append, a)
                }
                None => merge_cmdline("", &raw.guest.append),
            };
            let harts = check_harts(v.harts, &key("harts"), &err)?.unwrap_or(harts);
            let memory_bytes = check_memory(&v.memory, &key("memory"), &err)?.unwrap_or(memory);
            let mhz = check_mhz(v.mhz, &key("mhz"), &err)?.unwrap_or(mhz);
            let quantum = check_quantum(v.quantum, &key("quantum"), &err)?.unwrap_or(quantum);
            let desc = match v.machine_description.as_deref() {
                Some("") => None,
                Some(d) => Some(check_desc(&base_dir, d, &key("machine_description"), &err)?),
                None => study_desc.clone(),
            };
            check_env(&v.env, &key("env"), &err)?;
            let mut env = raw.workload.env.clone();
            env.extend(v.env.iter().map(|(k, val)| (k.clone(), val.clone())));
            let patches = match v.patches.as_deref() {
                Some("") => None,
                Some(p) => Some(check_patches(&base_dir, p, &key("patches"), &err)?),
                None => study_patches.clone(),
            };
            let config = match v.config.as_deref() {
                Some("") => None,
                Some(c) => Some(check_config(&base_dir, c, &key("config"), &err)?),
                None => study_config.clone(),
            };
            if patches.is_some() && !is_source_kernel(&ctx.guest_dir, &image) {
                let k = if v.patches.is_some() {
                    key("patches")
                } else {
                    "guest.patches".to_string()
                };
                return Err(err(
                    &k,
                    format!("image `{image}` boots a packaged kernel; patch series apply only to images built from kernel source (such as `custom`)"),
                ));
            }
            if config.is_some() && !is_source_kernel(&ctx.guest_dir, &image) {
                let k = if v.config.is_some() {
                    key("config")
                } else {
                    "guest.config".to_string()
                };
                return Err(err(
                    &k,
                    format!("image `{image}` boots a packaged kernel; config fragments apply only to images built from kernel source (such as `custom`)"),
                ));
            }
            variants.push(Variant {
                name: vname.clone(),
                description: v.description.clone(),
                image,
                append,
                harts,
                memory_bytes,
                mhz,
                quantum,
                machine_desc: desc.as_ref().map(|d| d.0.clone()),
                machine_desc_text: desc.map(|d| d.1),
                env,
                workload: workload.clone(),
                patches,
                config,
                max_cycles: max_cycles.map(|s| (s * mhz as f64 * 1e6) as u64),
            });
        }
        if let Some(b) = &raw.study.baseline {
            let at = variants.iter().position(|v| &v.name == b).ok_or_else(|| {
                err(
                    "study.baseline",
                    format!(
                        "`{b}` is not one of the variants ({})",
                        list(&variants.iter().map(|v| v.name.clone()).collect::<Vec<_>>())
                    ),
                )
            })?;
            let base = variants.remove(at);
            variants.insert(0, base);
        }

        // [[checks]]
        let variant_names: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
        let checks = parse_checks(&raw.checks, &variant_names, &err)?;
        let tables = parse_tables(&raw.tables, &err)?;
        let groups = parse_groups(&raw.groups, &err)?;
        let itrace = match &raw.study.itrace {
            Some(t) => Some(
                hs_machine::ItraceSpec::parse(t).map_err(|e| err("study.itrace", e.to_string()))?,
            ),
            None => None,
        };
        let label = |key: &str, v: &Option<String>| -> Result<Option<String>> {
            match v {
                Some(l) if l.trim().is_empty() || l.len() > 256 => Err(err(
                    key,
                    format!("{l:?} is not a phase label (1 to 256 bytes, as `hsmark phase` takes)"),
                )),
                Some(l) => Ok(Some(l.clone())),
                None => Ok(None),
            }
        };
        let profile_from = label("study.profile_from", &raw.study.profile_from)?;
        let profile_to = label("study.profile_to", &raw.study.profile_to)?;
        if profile_from.is_some() && profile_from == profile_to {
            return Err(err(
                "study.profile_to",
                "is the same phase as study.profile_from, so the window would be empty".into(),
            ));
        }

        let boot = match raw.study.boot.as_deref() {
            None => Default::default(),
            Some(b) => crate::shared_boot::BootMode::parse(b).ok_or_else(|| {
                err(
                    "study.boot",
                    format!("{b:?} is not `each`, `shared` or `fast-forward`"),
                )
            })?,
        };
        Ok(Scenario {
            boot,
            path: path.to_path_buf(),
            text: text.to_string(),
            sha256: crate::sha256_hex(text.as_bytes()),
            name,
            description: raw.study.description.trim().to_string(),
            headline,
            sample_period,
            timeline: raw.study.timeline.unwrap_or(true),
            itrace,
            profile_from,
            profile_to,
            variants,
            checks,
            tables,
            groups,
        })
    }

    /// Command-line changes for one invocation: environment variables set in
    /// every variant, a subset of the variants, a longer guest-time limit.
    /// The stored scenario text stays the file's; the variants' recorded
    /// environment shows what ran.
    pub fn override_run(
        &mut self,
        env: &[(String, String)],
        only: &[String],
        max_guest_seconds: Option<f64>,
    ) -> Result<()> {
        let err = |key: &str, message: String| LabError::Scenario {
            file: self.path.clone(),
            key: key.into(),
            message,
        };
        if let Some(unknown) = only.iter().find(|n| self.variant(n).is_none()) {
            let names: Vec<&str> = self.variants.iter().map(|v| v.name.as_str()).collect();
            return Err(err(
                "variants",
                format!(
                    "--only names `{unknown}`, which is not a variant ({})",
                    names.join(", ")
                ),
            ));
        }
        if !only.is_empty() {
            self.variants.retain(|v| only.contains(&v.name));
        }
        if let Some(s) = max_guest_seconds {
            if !(s.is_finite() && s > 0.0 && s < 1e6) {
                return Err(err("workload.max_guest_seconds", format!("--max-guest-seconds {s} must be a positive number of seconds below 1000000")));
            }
        }
        for v in &mut self.variants {
            for (k, val) in env {
                v.env.insert(k.clone(), val.clone());
            }
            if let Some(s) = max_guest_seconds {
                v.max_cycles = Some((s * v.mhz as f64 * 1e6) as u64);
            }
        }
        Ok(())
    }

    pub fn variant(&self, name: &str) -> Option<&Variant> {
        self.variants.iter().find(|v| v.name == name)
    }
}

/// The `[[checks]]`, against the variant names.
fn parse_checks(raw: &[RawCheck], names: &[String], err: &ErrFn) -> Result<Vec<Check>> {
    let mut checks = Vec::new();
    for (i, c) in raw.iter().enumerate() {
        let key = |k: &str| format!("checks[{i}].{k}");
        if c.name.trim().is_empty() {
            return Err(err(
                &key("name"),
                "a check needs a name saying what it expects".into(),
            ));
        }
        let known = |v: &str, k: &str| -> Result<()> {
            if names.iter().any(|x| x == v) {
                Ok(())
            } else {
                Err(err(
                    &key(k),
                    format!("`{v}` is not one of the variants ({})", list(names)),
                ))
            }
        };
        known(&c.variant, "variant")?;
        let kind = match (&c.metric, &c.console_contains) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(err(
                    &format!("checks[{i}]"),
                    "give either `metric` (with `op` and `value` or `than`) or `console_contains`"
                        .into(),
                ))
            }
            (None, Some(text)) => {
                if c.op.is_some()
                    || c.value.is_some()
                    || c.than.is_some()
                    || c.than_metric.is_some()
                    || c.factor.is_some()
                {
                    return Err(err(
                        &format!("checks[{i}]"),
                        "`console_contains` takes no `op`, `value` or `than`".into(),
                    ));
                }
                if text.is_empty() {
                    return Err(err(&key("console_contains"), "must not be empty".into()));
                }
                CheckKind::ConsoleContains(text.clone())
            }
            (Some(m), None) => {
                let metric: Metric = m.parse().map_err(|e| err(&key("metric"), e))?;
                let op_text = c.op.as_deref().ok_or_else(|| {
                    err(&key("op"), "is missing (one of =, !=, <, <=, >, >=)".into())
                })?;
                let op = Op::parse(op_text.trim()).ok_or_else(|| {
                    err(
                        &key("op"),
                        format!("`{op_text}` is not one of =, !=, <, <=, >, >="),
                    )
                })?;
                let factor = match c.factor {
                    None => 1.0,
                    Some(f) if f.is_finite() && f > 0.0 => f,
                    Some(f) => {
                        return Err(err(
                            &key("factor"),
                            format!("{f} must be a positive number"),
                        ))
                    }
                };
                let other = match &c.than_metric {
                    Some(t) => Some(
                        t.parse::<Metric>()
                            .map_err(|e| err(&key("than_metric"), e))?,
                    ),
                    None => None,
                };
                let rhs = match (c.value, &c.than, other) {
                        (Some(v), None, None) if v.is_finite() => Rhs::Value(v),
                        (Some(v), None, None) => return Err(err(&key("value"), format!("{v} is not a finite number"))),
                        (None, Some(t), None) => {
                            known(t, "than")?;
                            if t == &c.variant {
                                return Err(err(&key("than"), "compares the variant with itself".into()));
                            }
                            Rhs::Variant(t.clone())
                        }
                        (None, t, Some(m)) => {
                            if let Some(t) = t {
                                known(t, "than")?;
                            }
                            Rhs::Metric { variant: t.clone(), metric: m }
                        }
                        _ => {
                            return Err(err(
                                &format!("checks[{i}]"),
                                "give exactly one of `value`, `than` and `than_metric` (`than` with `than_metric` names the other variant)".into(),
                            ))
                        }
                    };
                CheckKind::Compare {
                    metric,
                    op,
                    rhs,
                    factor,
                }
            }
        };
        checks.push(Check {
            name: c.name.trim().to_string(),
            variant: c.variant.clone(),
            kind,
        });
    }

    Ok(checks)
}

/// What a report of stored runs needs from their scenario text: the
/// headline metrics and the checks (no file-system checks, so a scenario
/// whose workload moved since still reports).
pub fn report_view(
    text: &str,
) -> std::result::Result<(Vec<Metric>, Vec<Check>, Vec<PivotTable>), String> {
    let raw: RawScenario = toml::from_str(text).map_err(|e| e.message().to_string())?;
    let err = |key: &str, message: String| LabError::Scenario {
        file: PathBuf::from("(stored scenario)"),
        key: key.to_string(),
        message,
    };
    let mut headline = Vec::new();
    for h in &raw.study.headline {
        headline.push(h.parse::<Metric>()?);
    }
    let names: Vec<String> = raw.variants.0.iter().map(|(n, _)| n.clone()).collect();
    let checks = parse_checks(&raw.checks, &names, &err).map_err(|e| e.to_string())?;
    let tables = parse_tables(&raw.tables, &err).map_err(|e| e.to_string())?;
    Ok((headline, checks, tables))
}

fn list<T: AsRef<str>>(vs: &[T]) -> String {
    vs.iter().map(|v| v.as_ref()).collect::<Vec<_>>().join(", ")
}

type ErrFn<'a> = dyn Fn(&str, String) -> LabError + 'a;

fn check_quantum(v: Option<i64>, key: &str, err: &ErrFn) -> Result<Option<u64>> {
    match v {
        Some(n) if !(100..=1_000_000).contains(&n) => Err(err(
            key,
            format!("{n} cycles is out of range (100 to 1000000)"),
        )),
        other => Ok(other.map(|n| n as u64)),
    }
}

fn check_harts(v: Option<i64>, key: &str, err: &ErrFn) -> Result<Option<usize>> {
    match v {
        Some(n) if !(1..=hs_machine::layout::MAX_HARTS as i64).contains(&n) => Err(err(
            key,
            format!(
                "{n} harts is impossible (1 to {})",
                hs_machine::layout::MAX_HARTS
            ),
        )),
        other => Ok(other.map(|n| n as usize)),
    }
}

fn check_memory(v: &Option<MemSize>, key: &str, err: &ErrFn) -> Result<Option<u64>> {
    let Some(MemSize(m)) = v else { return Ok(None) };
    let bytes = m.clone().map_err(|e| err(key, e))?;
    let max = hs_machine::layout::MAX_RAM;
    if bytes == 0 || bytes % 4096 != 0 || bytes > max {
        return Err(err(
            key,
            format!(
                "{bytes} bytes is impossible (a multiple of 4 KiB, at most {} GiB)",
                max >> 30
            ),
        ));
    }
    if bytes < 64 << 20 {
        return Err(err(
            key,
            format!(
                "{} MiB is too little for Linux and the initramfs (at least 64 MiB)",
                bytes >> 20
            ),
        ));
    }
    Ok(Some(bytes))
}

fn check_mhz(v: Option<i64>, key: &str, err: &ErrFn) -> Result<Option<u64>> {
    match v {
        Some(n) if n <= 0 || n % 10 != 0 || n > 100_000 => Err(err(
            key,
            format!(
                "{n} MHz is impossible (a positive multiple of 10, the timebase, up to 100000)"
            ),
        )),
        other => Ok(other.map(|n| n as u64)),
    }
}

fn check_image(name: &str, key: &str, known: &[String], err: &ErrFn) -> Result<()> {
    if known.iter().any(|k| k == name) {
        return Ok(());
    }
    let list = if known.is_empty() {
        "none found".to_string()
    } else {
        known.join(", ")
    };
    Err(err(
        key,
        format!("`{name}` is not a guest image recipe (known: {list})"),
    ))
}

fn check_append(a: &str, key: &str, err: &ErrFn) -> Result<()> {
    if a.chars().any(|c| c.is_control() && c != '\t') {
        return Err(err(
            key,
            "kernel arguments must not contain control characters or line breaks".into(),
        ));
    }
    Ok(())
}

fn check_env(env: &BTreeMap<String, String>, key: &str, err: &ErrFn) -> Result<()> {
    for (k, v) in env {
        let ident = k
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident {
            return Err(err(&format!("{key}.{k}"), "an environment variable name is letters, digits and `_`, not starting with a digit".into()));
        }
        if v.contains('\0') {
            return Err(err(
                &format!("{key}.{k}"),
                "the value must not contain NUL".into(),
            ));
        }
    }
    Ok(())
}

/// A machine description file, loaded and validated by the timing crate:
/// its path and its own description line.
fn check_desc(base: &Path, d: &str, key: &str, err: &ErrFn) -> Result<(PathBuf, String)> {
    let path = base.join(d);
    match hs_machine::hs_timing::MachineDesc::load(&path)
        .and_then(|d| hs_machine::load_devices(&path).map(|_| d))
    {
        Ok(desc) => Ok((path, desc.description)),
        Err(e) => Err(err(
            key,
            format!(
                "`{d}` (relative to the scenario file) is not a usable machine description: {e}"
            ),
        )),
    }
}

fn check_config(base: &Path, c: &str, key: &str, err: &ErrFn) -> Result<PathBuf> {
    let path = base.join(c);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        err(
            key,
            format!("`{c}` (relative to the scenario file) is not a readable file ({e})"),
        )
    })?;
    for (n, line) in text.lines().enumerate() {
        let l = line.trim();
        let ok = l.is_empty()
            || (l.starts_with("# CONFIG_") && l.ends_with(" is not set"))
            || l.starts_with('#')
            || (l.starts_with("CONFIG_") && l.contains('='));
        if !ok {
            return Err(err(
                key,
                format!(
                    "`{c}` line {}: `{l}` is not CONFIG_NAME=value or `# CONFIG_NAME is not set`",
                    n + 1
                ),
            ));
        }
    }
    Ok(path)
}

fn check_patches(base: &Path, p: &str, key: &str, err: &ErrFn) -> Result<PathBuf> {
    let dir = base.join(p);
    let count = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".patch"))
                .count()
        })
        .map_err(|e| {
            err(
                key,
                format!("`{p}` (relative to the scenario file) is not a readable directory ({e})"),
            )
        })?;
    if count == 0 {
        return Err(err(key, format!("`{p}` holds no *.patch files")));
    }
    Ok(dir)
}

/// True when the image's recipe builds its kernel from source (patchable).
pub fn is_source_kernel(guest_dir: &Path, image: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(guest_dir.join("images").join(format!("{image}.toml")))
    else {
        return false;
    };
    let Ok(v) = text.parse::<toml::Table>() else {
        return false;
    };
    v.get("kernel")
        .and_then(|k| k.get("source"))
        .and_then(|s| s.as_str())
        == Some("linux-source")
}
