//! Machine descriptions: which timing model a run uses and its parameters,
//! read from a TOML file (`--machine FILE.toml`; presets in `machines/`).
//!
//! Validation is strict: an unknown key, a missing key or an impossible
//! value is an error naming the file and the key.
//!
//! ```toml
//! model = "inorder"            # or "atomic" (then nothing else may be given)
//! description = "free text"
//! [core]      writeback = 1
//! [latency]   alu = 1  mul = 4  div = 33 ...   # execute cycles per class, >= 1
//! [l1i] [l1d] [l2]  size = "16KiB"  ways = 4  line = 64  latency = 1  replacement = "lru"
//! [memory]    latency = 80
//! [itlb] [dtlb]  entries = 16
//! [l2tlb]     entries = 512  latency = 6     # optional: a direct-mapped second-level TLB
//! [walker]    pte_latency = 3                # optional: cycles per page-table read that hits
//!             # the L1 D-cache (default: l1d.latency)
//! [l1d]       dirty_victim = "written-first" # optional: a miss writes its dirty victim to
//!             # the L2 before fetching its line (default "buffered": free)
//! [bpred]     kind = "gshare"  entries = 1024  history_bits = 8  btb_entries = 256
//!             ras_depth = 8  mispredict_penalty = 3  taken_penalty = 1
//!             # kind = "tage" (history_bits: the longest history) also takes
//!             # tage_tables = 4  tage_entries = 512  tage_tag_bits = 8  tage_min_history = 4
//! [devices]   mmio = 20  irq_delivery = 10  ipi_delivery = 30
//! [pipeline]  issue_width = 2  late_alu = 2  load_to_use = 3 ...  # optional: a pipelined,
//!             # dual-issue core ([`PipelineConfig`]; machines/u74.toml)
//! [board.NAME] kind = "dw-apb-gpio" ...   # optional devices (any model; see hs_machine::config)
//! [ipi]       mode = "deliver"             # or "delay" (with delay = N cycles) or "drop-until-tick"
//! ```
//!
//! `[ipi]` (any model) says what happens to a software interrupt one hart
//! raises on another through the CLINT (`hs_devices::ipi`): delivered at
//! once (the default), `delay` cycles later, or held until the target's
//! next timer interrupt (`drop-until-tick`, the Fiasco.OC SMP bug of the
//! Genode Pandaboard article).

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A machine description that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DescError {
    /// The file cannot be read.
    #[error("cannot read machine description {}: {source}", file.display())]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    /// The file is not valid TOML or not shaped like a description.
    #[error("machine description {}: {message}", file.display())]
    Syntax { file: PathBuf, message: String },
    /// One key is unknown, missing or has an impossible value.
    #[error("machine description {}: key `{key}`: {message}", file.display())]
    Key {
        file: PathBuf,
        key: String,
        message: String,
    },
}

/// Which model a description selects.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelDesc {
    /// One cycle per instruction.
    Atomic,
    /// The parameterised in-order model.
    InOrder(InOrderConfig),
}

/// A validated machine description.
#[derive(Clone, Debug, PartialEq)]
pub struct MachineDesc {
    /// Where it came from (for reports).
    pub file: PathBuf,
    pub description: String,
    pub model: ModelDesc,
    /// `[ipi]`: what happens to cross-hart software interrupts.
    pub ipi: IpiDesc,
}

/// `[ipi]` of a description: the IPI knob (applied by the CLINT).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IpiDesc {
    /// `mode = "deliver"` (also when `[ipi]` is absent).
    #[default]
    Deliver,
    /// `mode = "delay"`, `delay = N`: seen by the target N cycles after the write.
    Delay(u64),
    /// `mode = "drop-until-tick"`: seen by the target once its timer interrupt is pending.
    DropUntilTick,
}

/// Longest IPI delay accepted, in cycles (10 s at 1 GHz): more is surely a typo.
pub const MAX_IPI_DELAY: u64 = 10_000_000_000;

/// Parameters of the in-order model (all validated).
#[derive(Clone, Debug, PartialEq)]
pub struct InOrderConfig {
    /// Cycles every instruction spends in writeback.
    pub writeback: u64,
    pub latency: Latencies,
    pub l1i: CacheConfig,
    pub l1d: CacheConfig,
    pub l2: CacheConfig,
    /// Main-memory latency in cycles (after an L2 miss).
    pub memory_latency: u64,
    pub itlb_entries: usize,
    pub dtlb_entries: usize,
    /// `[l2tlb]`: (entries, hit latency) of a second-level TLB that first-level
    /// misses look in before walking.
    pub l2tlb: Option<(usize, u64)>,
    /// Cycles a page-table read costs when it hits the L1 D-cache.
    pub walk_pte_latency: u64,
    /// `[l1d] dirty_victim = "written-first"`: a miss that evicts a dirty line
    /// waits for its write to the L2 before its own fill (no write-back buffer).
    pub dirty_victim_first: bool,
    pub bpred: BpredConfig,
    pub devices: DeviceLatencies,
    /// `[pipeline]`: a pipelined core (register dependencies, dual issue);
    /// without it every instruction's stages are charged one after another.
    pub pipeline: Option<PipelineConfig>,
    /// `[pmu] branches = "conditional"`: the `branches` hpm event counts
    /// conditional branches only (default: jumps too).
    pub pmu_branches_conditional: bool,
}

/// `[pipeline]` of an in-order description. With it, `[latency]` values are
/// result latencies (cycles from an instruction's issue until one that
/// reads its result may issue), instructions wait only for the registers
/// they read, and with `issue_width = 2` two may issue in one cycle (the
/// pairing rules in `crates/timing/src/inorder.rs`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    /// Instructions issued per cycle: 1 or 2.
    pub issue_width: u64,
    /// Stages after issue in which an integer ALU instruction or branch may
    /// still execute when its operands were not ready at issue (a "late"
    /// ALU); 0 = none. Such a result is ready `late_alu + 1` cycles after issue.
    #[serde(default)]
    pub late_alu: u64,
    /// Cycles from a load's issue until an instruction may issue that uses
    /// its value for an address or at issue (ALU users may also take it late).
    pub load_to_use: u64,
    /// The same for floating-point loads.
    pub fp_load_to_use: u64,
    /// Extra result latency of double-precision FP add, multiply and FMA.
    #[serde(default)]
    pub fp_double_extra: u64,
    /// Result latency of double-precision divide and square root.
    pub fp_div_double: u64,
    /// Result latency of 64-bit integer divide and remainder (`[latency].div`
    /// is the 32-bit `divw`/`remw` form). Dividers take one operation at a time.
    pub div_double: u64,
    /// An early-out divider: a divide takes this many cycles plus one per
    /// quotient bit (bits of the dividend beyond the divisor's), at most the
    /// latencies above; 0 = always the full latency.
    #[serde(default)]
    pub div_early_out: u64,
    /// Cycles from a store's issue until a load that reads any of its bytes
    /// may issue (a load of data still on its way to the cache waits for
    /// it); 0 = the store's data is forwarded at once.
    #[serde(default)]
    pub store_to_load: u64,
}

impl PipelineConfig {
    /// A stand-in a pipeline holds only while its state is being restored
    /// (the machine's own configuration is put back).
    pub(crate) fn placeholder() -> Self {
        PipelineConfig {
            issue_width: 1,
            late_alu: 0,
            load_to_use: 1,
            fp_load_to_use: 1,
            fp_double_extra: 0,
            fp_div_double: 1,
            div_double: 1,
            div_early_out: 0,
            store_to_load: 0,
        }
    }
}

/// Execute cycles of each instruction class (each >= 1; the first cycle is
/// the one every instruction costs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Latencies {
    pub alu: u64,
    pub branch: u64,
    pub jump: u64,
    pub mul: u64,
    pub div: u64,
    pub fp_add: u64,
    pub fp_mul: u64,
    pub fp_fma: u64,
    pub fp_div: u64,
    pub fp_sqrt: u64,
    pub fp_misc: u64,
    /// Address generation of a load (its cache access comes on top, in `mem`).
    pub load: u64,
    pub store: u64,
    pub amo: u64,
    pub csr_read: u64,
    pub csr_write: u64,
    /// Extra cycles of a CSR write: it drains the pipeline.
    pub csr_serialize: u64,
    pub fence: u64,
    pub fence_i: u64,
    pub sfence_vma: u64,
    pub ecall: u64,
    pub xret: u64,
    pub wfi: u64,
    /// Marker hints and illegal instructions.
    pub system: u64,
    /// Extra cycles of entering a trap handler.
    pub trap_entry: u64,
}

/// Replacement policy of a cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Replacement {
    Lru,
    Fifo,
    /// Pseudo-random from a fixed seed (the same every run).
    Random,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    pub size: u64,
    pub ways: u64,
    pub line: u64,
    /// Cycles of a hit at this level (an access that misses pays every level's latency it passed).
    pub latency: u64,
    pub replacement: Replacement,
}

impl CacheConfig {
    pub fn sets(&self) -> u64 {
        self.size / (self.ways * self.line)
    }
}

/// Direction predictor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PredictorKind {
    /// Two-bit counters indexed by pc.
    Bimodal,
    /// Two-bit counters indexed by pc xor global history.
    Gshare,
    /// A bimodal base table and tagged tables indexed by pc hashed with
    /// global histories of geometric lengths (TAGE: Seznec and Michaud,
    /// "A case for (partially) TAgged GEometric history length branch
    /// prediction", JILP 2006).
    Tage,
}

/// The tagged tables of `kind = "tage"` (`[bpred] tage_*` keys). The base
/// table is `entries` two-bit counters; `history_bits` is the longest
/// history, used by the last table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TageConfig {
    /// Tagged tables (1 to 8).
    pub tables: usize,
    /// Entries of each tagged table (a power of two).
    pub entries: usize,
    /// Tag width in bits.
    pub tag_bits: u32,
    /// History length of the first tagged table; the others grow
    /// geometrically up to `history_bits`.
    pub min_history: u32,
}

impl TageConfig {
    /// Bits of a tagged entry: a 3-bit counter, the tag and a 2-bit
    /// usefulness counter.
    pub const fn entry_bits(&self) -> u64 {
        3 + self.tag_bits as u64 + 2
    }

    /// The history length of tagged table `i` (of `tables`): geometric from
    /// `min_history` to `max`, rounded to the nearest whole number.
    pub fn history_length(&self, i: usize, max: u32) -> u32 {
        if self.tables == 1 {
            return max;
        }
        let ratio = max as f64 / self.min_history as f64;
        let l = self.min_history as f64 * ratio.powf(i as f64 / (self.tables - 1) as f64);
        (l.round() as u32).clamp(1, max)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BpredConfig {
    pub kind: PredictorKind,
    pub entries: usize,
    pub history_bits: u32,
    pub btb_entries: usize,
    pub ras_depth: usize,
    pub mispredict_penalty: u64,
    /// Bubble of a correctly predicted taken branch or jump.
    pub taken_penalty: u64,
    /// Cycles of a `jal` the BTB missed when decode redirects fetch to its
    /// target (not a misprediction); `None`: such a jump is mispredicted.
    pub direct_miss_penalty: Option<u64>,
    /// The return-address stack is a ring without valid bits: popping it
    /// empty returns the stale entry below (default: the BTB predicts).
    pub ras_circular: bool,
    /// `kind = "tage"`: its tagged tables.
    pub tage: Option<TageConfig>,
}

impl BpredConfig {
    /// Bits of direction-predictor state (counters, tags, usefulness; not
    /// the BTB or the return-address stack): what a core's "branch history
    /// table" size is compared with.
    pub fn direction_bits(&self) -> u64 {
        let base = 2 * self.entries as u64;
        match self.tage {
            Some(t) => base + (t.tables * t.entries) as u64 * t.entry_bits(),
            None => base,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceLatencies {
    /// Cycles of one device (MMIO) access.
    pub mmio: u64,
    /// Extra cycles of taking an external or timer interrupt.
    pub irq_delivery: u64,
    /// Extra cycles of taking a software interrupt (an IPI).
    pub ipi_delivery: u64,
}

// ---- the file's shape (before value checks)

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDesc {
    model: String,
    #[serde(default)]
    description: String,
    core: Option<RawCore>,
    latency: Option<Latencies>,
    l1i: Option<RawCache>,
    l1d: Option<RawCache>,
    l2: Option<RawCache>,
    memory: Option<RawMemory>,
    itlb: Option<RawTlb>,
    dtlb: Option<RawTlb>,
    l2tlb: Option<RawL2Tlb>,
    walker: Option<RawWalker>,
    bpred: Option<RawBpred>,
    devices: Option<DeviceLatencies>,
    pipeline: Option<PipelineConfig>,
    pmu: Option<RawPmu>,
    ipi: Option<RawIpi>,
    /// `[board.NAME]`: optional board devices, validated by the machine
    /// crate (`hs_machine::config`), which knows the device kinds.
    #[serde(default, rename = "board")]
    _board: Option<toml::Table>,
}

/// `[pmu]`: what the hpm events count where cores differ.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPmu {
    /// The `branches` event: "all" (conditional branches and jumps) or
    /// "conditional" (as the U74's "conditional branch retired").
    branches: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIpi {
    mode: String,
    delay: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCore {
    writeback: u64,
}

/// A size in bytes: an integer or a string such as "32KiB", "1MiB", "64".
enum Size {
    Bytes(u64),
    Text(String),
}

/// By hand rather than `untagged`, whose error ("data did not match any
/// variant of untagged enum Size") says nothing a user can act on.
impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Size;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a size: a whole number of bytes or a string such as \"32KiB\" or \"2MiB\"",
                )
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Size, E> {
                Ok(Size::Bytes(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Size, E> {
                u64::try_from(v)
                    .map(Size::Bytes)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Size, E> {
                Ok(Size::Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCache {
    size: Size,
    ways: u64,
    line: u64,
    latency: u64,
    replacement: Replacement,
    /// Only in `[l1d]`: "buffered" (default) or "written-first".
    dirty_victim: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMemory {
    latency: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTlb {
    entries: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawL2Tlb {
    entries: u64,
    latency: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWalker {
    pte_latency: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBpred {
    kind: PredictorKind,
    entries: u64,
    #[serde(default)]
    history_bits: u32,
    btb_entries: u64,
    ras_depth: u64,
    mispredict_penalty: u64,
    taken_penalty: u64,
    direct_miss_penalty: Option<u64>,
    #[serde(default)]
    ras_circular: bool,
    tage_tables: Option<u64>,
    tage_entries: Option<u64>,
    tage_tag_bits: Option<u64>,
    tage_min_history: Option<u64>,
}

/// Longest global history of `kind = "tage"` (bits the predictor keeps).
pub const MAX_TAGE_HISTORY: u32 = 256;
/// Most tagged tables of `kind = "tage"`.
pub const MAX_TAGE_TABLES: usize = 8;

/// Largest latency or penalty accepted: more is surely a typo.
const MAX_CYCLES: u64 = 1_000_000;

fn parse_size(s: &Size) -> Result<u64, String> {
    let text = match s {
        Size::Bytes(b) => return Ok(*b),
        Size::Text(t) => t.trim(),
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (num, unit) = text.split_at(split);
    let shift = match unit.trim() {
        "" | "B" => 0,
        "K" | "KB" | "KiB" => 10,
        "M" | "MB" | "MiB" => 20,
        "G" | "GB" | "GiB" => 30,
        _ => {
            return Err(format!(
                "`{text}` is not a size (e.g. 32768, \"32KiB\", \"1MiB\")"
            ))
        }
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a size (e.g. 32768, \"32KiB\", \"1MiB\")"))?;
    n.checked_shl(shift)
        .filter(|v| v >> shift == n)
        .ok_or_else(|| format!("`{text}` is too large"))
}

/// Longest chain of `extends`: deeper is taken for a cycle.
const MAX_EXTENDS: usize = 8;

/// A description file's text with `extends = "OTHER.toml"` resolved: the
/// other file (relative to this one, itself possibly extending another) with
/// this file's tables merged over it key by key, so a variant of a machine
/// states only what differs. A file without `extends` is returned as it is.
pub fn read_resolved(path: &Path) -> Result<String, DescError> {
    let text = std::fs::read_to_string(path).map_err(|source| DescError::Read {
        file: path.to_path_buf(),
        source,
    })?;
    match text.parse::<toml::Table>() {
        Ok(t) if t.contains_key("extends") => {
            let merged = resolve(path, t, 0)?;
            Ok(toml::to_string(&merged).expect("a TOML table serialises"))
        }
        // No extends, or a syntax error the description parser reports with its line.
        _ => Ok(text),
    }
}

fn resolve(path: &Path, mut table: toml::Table, depth: usize) -> Result<toml::Table, DescError> {
    let key_err = |message: String| DescError::Key {
        file: path.to_path_buf(),
        key: "extends".into(),
        message,
    };
    let Some(base) = table.remove("extends") else {
        return Ok(table);
    };
    let base = base
        .as_str()
        .ok_or_else(|| key_err("must be the name of another description file".into()))?;
    if depth >= MAX_EXTENDS {
        return Err(key_err(format!(
            "more than {MAX_EXTENDS} files extend one another (a cycle?)"
        )));
    }
    let base_path = path.parent().unwrap_or(Path::new(".")).join(base);
    let base_text = std::fs::read_to_string(&base_path).map_err(|source| DescError::Read {
        file: base_path.clone(),
        source,
    })?;
    let base_table: toml::Table =
        base_text
            .parse()
            .map_err(|e: toml::de::Error| DescError::Syntax {
                file: base_path.clone(),
                message: e.message().to_string(),
            })?;
    let mut merged = resolve(&base_path, base_table, depth + 1)?;
    merge(&mut merged, table);
    Ok(merged)
}

fn merge(into: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (into.get_mut(&k), v) {
            (Some(toml::Value::Table(a)), toml::Value::Table(b)) => merge(a, b),
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

impl MachineDesc {
    /// Read and validate a description file (`extends` resolved).
    pub fn load(path: &Path) -> Result<Self, DescError> {
        Self::parse(path, &read_resolved(path)?)
    }

    /// Validate description text; `path` names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Self, DescError> {
        let file = path.to_path_buf();
        let key_err = |key: &str, message: String| DescError::Key {
            file: file.clone(),
            key: key.to_string(),
            message,
        };
        let raw: RawDesc = match serde_path_to_error::deserialize(toml::Deserializer::new(text)) {
            Ok(r) => r,
            Err(e) => {
                let key = e.path().to_string();
                let inner = e.into_inner();
                let message = inner.message().to_string();
                if key.is_empty() || key == "." {
                    let line = inner.span().map(|s| {
                        text.as_bytes()[..s.start.min(text.len())]
                            .iter()
                            .filter(|&&b| b == b'\n')
                            .count()
                            + 1
                    });
                    let message = match line {
                        Some(l) => format!("line {l}: {message}"),
                        None => message,
                    };
                    return Err(DescError::Syntax { file, message });
                }
                return Err(key_err(&key, message));
            }
        };
        let description = raw.description.clone();
        let ipi = match &raw.ipi {
            None => IpiDesc::Deliver,
            Some(i) => ipi(i, &key_err)?,
        };
        let model = match raw.model.as_str() {
            "atomic" => {
                let given = [
                    ("core", raw.core.is_some()),
                    ("latency", raw.latency.is_some()),
                    ("l1i", raw.l1i.is_some()),
                    ("l1d", raw.l1d.is_some()),
                    ("l2", raw.l2.is_some()),
                    ("memory", raw.memory.is_some()),
                    ("itlb", raw.itlb.is_some()),
                    ("dtlb", raw.dtlb.is_some()),
                    ("l2tlb", raw.l2tlb.is_some()),
                    ("walker", raw.walker.is_some()),
                    ("bpred", raw.bpred.is_some()),
                    ("devices", raw.devices.is_some()),
                    ("pipeline", raw.pipeline.is_some()),
                    ("pmu", raw.pmu.is_some()),
                ];
                if let Some((k, _)) = given.iter().find(|(_, g)| *g) {
                    return Err(key_err(
                        k,
                        "has no effect with model = \"atomic\" (remove it)".into(),
                    ));
                }
                ModelDesc::Atomic
            }
            "inorder" => ModelDesc::InOrder(inorder(raw, &key_err)?),
            other => {
                let other = other.to_string();
                return Err(key_err(
                    "model",
                    format!("`{other}` is not a model (\"atomic\" or \"inorder\")"),
                ));
            }
        };
        Ok(MachineDesc {
            file,
            description,
            model,
            ipi,
        })
    }
}

fn ipi(raw: &RawIpi, key_err: &dyn Fn(&str, String) -> DescError) -> Result<IpiDesc, DescError> {
    match (raw.mode.as_str(), raw.delay) {
        ("delay", None) => Err(key_err(
            "ipi.delay",
            "is missing (mode = \"delay\" needs a number of cycles)".into(),
        )),
        ("delay", Some(n)) if n > MAX_IPI_DELAY => Err(key_err(
            "ipi.delay",
            format!("{n} is out of range (0 to {MAX_IPI_DELAY} cycles)"),
        )),
        ("delay", Some(n)) => Ok(IpiDesc::Delay(n)),
        ("deliver" | "drop-until-tick", Some(_)) => Err(key_err(
            "ipi.delay",
            format!(
                "has no effect with mode = \"{}\" (remove it, or use mode = \"delay\")",
                raw.mode
            ),
        )),
        ("deliver", None) => Ok(IpiDesc::Deliver),
        ("drop-until-tick", None) => Ok(IpiDesc::DropUntilTick),
        (other, _) => Err(key_err(
            "ipi.mode",
            format!("`{other}` is not an IPI mode (\"deliver\", \"delay\" or \"drop-until-tick\")"),
        )),
    }
}

fn inorder(
    raw: RawDesc,
    key_err: &dyn Fn(&str, String) -> DescError,
) -> Result<InOrderConfig, DescError> {
    let missing = |k: &str| key_err(k, "is missing (the inorder model needs it)".into());
    let core = raw.core.ok_or_else(|| missing("core"))?;
    let latency = raw.latency.ok_or_else(|| missing("latency"))?;
    let memory = raw.memory.ok_or_else(|| missing("memory"))?;
    let itlb = raw.itlb.ok_or_else(|| missing("itlb"))?;
    let dtlb = raw.dtlb.ok_or_else(|| missing("dtlb"))?;
    let bpred = raw.bpred.ok_or_else(|| missing("bpred"))?;
    let devices = raw.devices.ok_or_else(|| missing("devices"))?;
    let raw_l1d = raw.l1d.ok_or_else(|| missing("l1d"))?;
    let dirty_victim_first = match raw_l1d.dirty_victim.as_deref() {
        None | Some("buffered") => false,
        Some("written-first") => true,
        Some(other) => {
            return Err(key_err(
                "l1d.dirty_victim",
                format!("`{other}` is not a write-back policy (\"buffered\" or \"written-first\")"),
            ))
        }
    };
    let l1i = cache("l1i", raw.l1i.ok_or_else(|| missing("l1i"))?, key_err)?;
    let l1d = cache("l1d", raw_l1d, key_err)?;
    let l2 = cache("l2", raw.l2.ok_or_else(|| missing("l2"))?, key_err)?;

    let cycles = |k: &str, v: u64, min: u64| {
        if v < min || v > MAX_CYCLES {
            Err(key_err(
                k,
                format!("{v} is out of range ({min} to {MAX_CYCLES} cycles)"),
            ))
        } else {
            Ok(())
        }
    };
    cycles("core.writeback", core.writeback, 0)?;
    let l = &latency;
    for (k, v) in [
        ("alu", l.alu),
        ("branch", l.branch),
        ("jump", l.jump),
        ("mul", l.mul),
        ("div", l.div),
        ("fp_add", l.fp_add),
        ("fp_mul", l.fp_mul),
        ("fp_fma", l.fp_fma),
        ("fp_div", l.fp_div),
        ("fp_sqrt", l.fp_sqrt),
        ("fp_misc", l.fp_misc),
        ("load", l.load),
        ("store", l.store),
        ("amo", l.amo),
        ("csr_read", l.csr_read),
        ("csr_write", l.csr_write),
        ("fence", l.fence),
        ("fence_i", l.fence_i),
        ("sfence_vma", l.sfence_vma),
        ("ecall", l.ecall),
        ("xret", l.xret),
        ("wfi", l.wfi),
        ("system", l.system),
    ] {
        cycles(&format!("latency.{k}"), v, 1)?;
    }
    cycles("latency.csr_serialize", l.csr_serialize, 0)?;
    cycles("latency.trap_entry", l.trap_entry, 0)?;
    cycles("memory.latency", memory.latency, 0)?;
    if l2.line < l1i.line || l2.line < l1d.line {
        return Err(key_err(
            "l2.line",
            format!(
                "{} is smaller than an L1 line (the L2 holds whole L1 lines)",
                l2.line
            ),
        ));
    }
    let tlb = |k: &str, n: u64| {
        if n == 0 || n > 4096 {
            Err(key_err(
                k,
                format!("{n} is out of range (1 to 4096 entries)"),
            ))
        } else {
            Ok(n as usize)
        }
    };
    let itlb_entries = tlb("itlb.entries", itlb.entries)?;
    let dtlb_entries = tlb("dtlb.entries", dtlb.entries)?;
    let l2tlb = match &raw.l2tlb {
        None => None,
        Some(t) => {
            if t.entries == 0 || t.entries > 1 << 16 || !t.entries.is_power_of_two() {
                return Err(key_err(
                    "l2tlb.entries",
                    format!("{} is not a power of two from 1 to 65536", t.entries),
                ));
            }
            cycles("l2tlb.latency", t.latency, 0)?;
            Some((t.entries as usize, t.latency))
        }
    };
    let walk_pte_latency = match &raw.walker {
        None => l1d.latency,
        Some(w) => {
            cycles("walker.pte_latency", w.pte_latency, 0)?;
            w.pte_latency
        }
    };
    let pow2 = |k: &str, n: u64, max: u64| {
        if !n.is_power_of_two() || n > max {
            Err(key_err(k, format!("{n} is not a power of two up to {max}")))
        } else {
            Ok(n as usize)
        }
    };
    let entries = pow2("bpred.entries", bpred.entries, 1 << 20)?;
    let btb_entries = pow2("bpred.btb_entries", bpred.btb_entries, 1 << 20)?;
    if bpred.ras_depth == 0 || bpred.ras_depth > 1024 {
        return Err(key_err(
            "bpred.ras_depth",
            format!("{} is out of range (1 to 1024)", bpred.ras_depth),
        ));
    }
    let index_bits = entries.trailing_zeros();
    match bpred.kind {
        PredictorKind::Gshare if bpred.history_bits == 0 || bpred.history_bits > 60 => {
            return Err(key_err(
                "bpred.history_bits",
                format!(
                    "{} is out of range for gshare (1 to 60; more than log2(entries) = {index_bits} is folded into the index)",
                    bpred.history_bits
                ),
            ));
        }
        PredictorKind::Tage if bpred.history_bits == 0 || bpred.history_bits > MAX_TAGE_HISTORY => {
            return Err(key_err(
                "bpred.history_bits",
                format!(
                    "{} is out of range for tage (1 to {MAX_TAGE_HISTORY}: the longest history, of the last tagged table)",
                    bpred.history_bits
                ),
            ));
        }
        PredictorKind::Bimodal if bpred.history_bits != 0 => {
            return Err(key_err(
                "bpred.history_bits",
                "has no effect with kind = \"bimodal\" (remove it)".into(),
            ));
        }
        _ => {}
    }
    let tage_keys = [
        ("bpred.tage_tables", bpred.tage_tables),
        ("bpred.tage_entries", bpred.tage_entries),
        ("bpred.tage_tag_bits", bpred.tage_tag_bits),
        ("bpred.tage_min_history", bpred.tage_min_history),
    ];
    let tage = if bpred.kind == PredictorKind::Tage {
        let need = |k: &str, v: Option<u64>| {
            v.ok_or_else(|| key_err(k, "is missing (kind = \"tage\" needs it)".into()))
        };
        let tables = need(tage_keys[0].0, tage_keys[0].1)?;
        if tables == 0 || tables > MAX_TAGE_TABLES as u64 {
            return Err(key_err(
                "bpred.tage_tables",
                format!("{tables} is out of range (1 to {MAX_TAGE_TABLES} tagged tables)"),
            ));
        }
        let t_entries = need(tage_keys[1].0, tage_keys[1].1)?;
        if !t_entries.is_power_of_two() || !(16..=1 << 16).contains(&t_entries) {
            return Err(key_err(
                "bpred.tage_entries",
                format!("{t_entries} is not a power of two from 16 to 65536"),
            ));
        }
        let t_entries = t_entries as usize;
        let tag_bits = need(tage_keys[2].0, tage_keys[2].1)?;
        if !(4..=16).contains(&tag_bits) {
            return Err(key_err(
                "bpred.tage_tag_bits",
                format!("{tag_bits} is out of range (4 to 16 bits)"),
            ));
        }
        let min_history = need(tage_keys[3].0, tage_keys[3].1)?;
        if min_history == 0 || min_history > bpred.history_bits as u64 {
            return Err(key_err(
                "bpred.tage_min_history",
                format!(
                    "{min_history} is out of range (1 to history_bits = {}, the longest history)",
                    bpred.history_bits
                ),
            ));
        }
        Some(TageConfig {
            tables: tables as usize,
            entries: t_entries,
            tag_bits: tag_bits as u32,
            min_history: min_history as u32,
        })
    } else {
        if let Some((k, _)) = tage_keys.iter().find(|(_, v)| v.is_some()) {
            return Err(key_err(
                k,
                format!(
                    "has no effect with kind = \"{}\" (remove it, or use kind = \"tage\")",
                    match bpred.kind {
                        PredictorKind::Bimodal => "bimodal",
                        _ => "gshare",
                    }
                ),
            ));
        }
        None
    };
    cycles("bpred.mispredict_penalty", bpred.mispredict_penalty, 0)?;
    cycles("bpred.taken_penalty", bpred.taken_penalty, 0)?;
    if let Some(p) = bpred.direct_miss_penalty {
        cycles("bpred.direct_miss_penalty", p, 0)?;
    }
    cycles("devices.mmio", devices.mmio, 0)?;
    cycles("devices.irq_delivery", devices.irq_delivery, 0)?;
    cycles("devices.ipi_delivery", devices.ipi_delivery, 0)?;
    if let Some(p) = &raw.pipeline {
        if !(1..=2).contains(&p.issue_width) {
            return Err(key_err(
                "pipeline.issue_width",
                format!(
                    "{} is not an issue width this model has (1 or 2)",
                    p.issue_width
                ),
            ));
        }
        cycles("pipeline.late_alu", p.late_alu, 0)?;
        cycles("pipeline.load_to_use", p.load_to_use, 1)?;
        cycles("pipeline.fp_load_to_use", p.fp_load_to_use, 1)?;
        cycles("pipeline.fp_double_extra", p.fp_double_extra, 0)?;
        cycles("pipeline.fp_div_double", p.fp_div_double, 1)?;
        cycles("pipeline.div_double", p.div_double, 1)?;
        cycles("pipeline.div_early_out", p.div_early_out, 0)?;
        cycles("pipeline.store_to_load", p.store_to_load, 0)?;
    }
    Ok(InOrderConfig {
        pipeline: raw.pipeline,
        writeback: core.writeback,
        latency,
        l1i,
        l1d,
        l2,
        memory_latency: memory.latency,
        itlb_entries,
        dtlb_entries,
        l2tlb,
        walk_pte_latency,
        dirty_victim_first,
        bpred: BpredConfig {
            kind: bpred.kind,
            entries,
            history_bits: bpred.history_bits,
            btb_entries,
            ras_depth: bpred.ras_depth as usize,
            mispredict_penalty: bpred.mispredict_penalty,
            taken_penalty: bpred.taken_penalty,
            direct_miss_penalty: bpred.direct_miss_penalty,
            ras_circular: bpred.ras_circular,
            tage,
        },
        pmu_branches_conditional: match raw.pmu.as_ref().map(|p| p.branches.as_str()) {
            None | Some("all") => false,
            Some("conditional") => true,
            Some(other) => {
                return Err(key_err(
                    "pmu.branches",
                    format!("`{other}` is not a branch event (\"all\" or \"conditional\")"),
                ))
            }
        },
        devices,
    })
}

fn cache(
    name: &str,
    raw: RawCache,
    key_err: &dyn Fn(&str, String) -> DescError,
) -> Result<CacheConfig, DescError> {
    let k = |field: &str| format!("{name}.{field}");
    if name != "l1d" && raw.dirty_victim.is_some() {
        return Err(key_err(
            &k("dirty_victim"),
            "only [l1d] has a write-back policy (the model's L2 writes back to memory for free)"
                .into(),
        ));
    }
    let size = parse_size(&raw.size).map_err(|m| key_err(&k("size"), m))?;
    if size == 0 || !size.is_power_of_two() {
        return Err(key_err(
            &k("size"),
            format!("{size} bytes is not a power of two"),
        ));
    }
    if size > 1 << 30 {
        return Err(key_err(
            &k("size"),
            format!("{size} bytes is larger than 1 GiB"),
        ));
    }
    if raw.line < 8 || raw.line > 4096 || !raw.line.is_power_of_two() {
        return Err(key_err(
            &k("line"),
            format!("{} is not a power of two from 8 to 4096 bytes", raw.line),
        ));
    }
    if raw.ways == 0 {
        return Err(key_err(
            &k("ways"),
            "0 ways: a cache needs at least one".into(),
        ));
    }
    if raw.ways > 64 {
        return Err(key_err(
            &k("ways"),
            format!("{} ways is more than 64", raw.ways),
        ));
    }
    if size % (raw.ways * raw.line) != 0 || !(size / (raw.ways * raw.line)).is_power_of_two() {
        return Err(key_err(
            &k("ways"),
            format!("{size} bytes in {}-byte lines does not divide into {} ways of a power-of-two set count", raw.line, raw.ways),
        ));
    }
    if raw.latency > MAX_CYCLES {
        return Err(key_err(
            &k("latency"),
            format!("{} is out of range (0 to {MAX_CYCLES} cycles)", raw.latency),
        ));
    }
    Ok(CacheConfig {
        size,
        ways: raw.ways,
        line: raw.line,
        latency: raw.latency,
        replacement: raw.replacement,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preset(name: &str) -> String {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../machines")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    fn err(text: &str) -> String {
        MachineDesc::parse(Path::new("m.toml"), text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn extends_merges_over_the_base_and_refuses_cycles() {
        let dir = std::env::temp_dir().join(format!("hs-desc-extends-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("base.toml"), preset("inorder.toml")).unwrap();
        std::fs::write(
            dir.join("fast.toml"),
            "extends = \"base.toml\"\ndescription = \"fast CSRs\"\n[latency]\ncsr_serialize = 1\n",
        )
        .unwrap();
        let base = MachineDesc::load(&dir.join("base.toml")).unwrap();
        let fast = MachineDesc::load(&dir.join("fast.toml")).unwrap();
        assert_eq!(fast.description, "fast CSRs");
        match (&base.model, &fast.model) {
            (ModelDesc::InOrder(b), ModelDesc::InOrder(f)) => {
                assert_ne!(b, f, "the override took effect");
                let mut f2 = f.clone();
                f2.latency.csr_serialize = b.latency.csr_serialize;
                assert_eq!(&f2, b, "everything else comes from the base");
            }
            m => panic!("{m:?}"),
        }
        std::fs::write(dir.join("a.toml"), "extends = \"b.toml\"\n").unwrap();
        std::fs::write(dir.join("b.toml"), "extends = \"a.toml\"\n").unwrap();
        let e = MachineDesc::load(&dir.join("a.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("key `extends`") && e.contains("cycle"), "{e}");
        std::fs::write(dir.join("c.toml"), "extends = \"missing.toml\"\n").unwrap();
        let e = MachineDesc::load(&dir.join("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing.toml"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn presets_parse() {
        let a = MachineDesc::parse(Path::new("atomic.toml"), &preset("atomic.toml")).unwrap();
        assert_eq!(a.model, ModelDesc::Atomic);
        let d = MachineDesc::parse(Path::new("inorder.toml"), &preset("inorder.toml")).unwrap();
        let ModelDesc::InOrder(c) = d.model else {
            panic!("inorder preset is not inorder")
        };
        assert_eq!(
            (c.l1d.size, c.l1d.sets(), c.l2.size),
            (16 << 10, 64, 256 << 10)
        );
        assert_eq!(c.bpred.kind, PredictorKind::Gshare);
    }

    #[test]
    fn second_level_tlb_walker_and_write_back_policy_are_optional_and_checked() {
        let good = preset("inorder.toml");
        let ModelDesc::InOrder(c) = MachineDesc::parse(Path::new("m.toml"), &good)
            .unwrap()
            .model
        else {
            panic!()
        };
        assert_eq!(c.l2tlb, None);
        assert_eq!(c.walk_pte_latency, c.l1d.latency);
        assert!(!c.dirty_victim_first);
        let more =
            format!("{good}\n[l2tlb]\nentries = 512\nlatency = 6\n[walker]\npte_latency = 3\n")
                .replacen(
                    "\n[l1d]\n",
                    "\n[l1d]\ndirty_victim = \"written-first\"\n",
                    1,
                );
        let ModelDesc::InOrder(c) = MachineDesc::parse(Path::new("m.toml"), &more)
            .unwrap()
            .model
        else {
            panic!()
        };
        assert_eq!(
            (c.l2tlb, c.walk_pte_latency, c.dirty_victim_first),
            (Some((512, 6)), 3, true)
        );
        let e = err(&more.replace("entries = 512", "entries = 500"));
        assert!(
            e.contains("key `l2tlb.entries`: 500 is not a power of two"),
            "{e}"
        );
        let e = err(&more.replace("written-first", "eventually"));
        assert!(
            e.contains("key `l1d.dirty_victim`: `eventually` is not a write-back policy"),
            "{e}"
        );
        let e = err(&good.replacen("[l2]", "[l2]\ndirty_victim = \"buffered\"", 1));
        assert!(e.contains("key `l2.dirty_victim`: only [l1d]"), "{e}");
        let e = err("model = \"atomic\"\n[l2tlb]\nentries = 4\nlatency = 1\n");
        assert!(e.contains("l2tlb"), "{e}");
    }

    #[test]
    fn errors_name_the_file_and_the_key() {
        let good = preset("inorder.toml");
        let e = err(&good.replace(
            "ways = 4\nline = 64\nlatency = 1",
            "ways = 4\nline = 64\nlatency = 1\nsizee = 3",
        ));
        assert!(
            e.starts_with("machine description m.toml: key `l1d.sizee`: unknown field"),
            "{e}"
        );
        let e = err(&good.replace(
            "size = \"16KiB\"\nways = 4\nline = 64\nlatency = 1",
            "size = 12288\nways = 4\nline = 64\nlatency = 1",
        ));
        assert_eq!(
            e,
            "machine description m.toml: key `l1d.size`: 12288 bytes is not a power of two"
        );
        // A size of the wrong type says what a size is, not serde's enum name.
        let e = err(&good.replace(
            "size = \"16KiB\"\nways = 4\nline = 64\nlatency = 1",
            "size = 12.5\nways = 4\nline = 64\nlatency = 1",
        ));
        assert!(
            e.starts_with("machine description m.toml: key `l1d.size`: invalid type: floating point `12.5`, expected a size: a whole number of bytes"),
            "{e}"
        );
        let e = err(&good.replacen("ways = 4", "ways = 0", 1));
        assert_eq!(
            e,
            "machine description m.toml: key `l1i.ways`: 0 ways: a cache needs at least one"
        );
        let e = err(&good.replace("entries = 512", "entries = 500"));
        assert_eq!(e, "machine description m.toml: key `bpred.entries`: 500 is not a power of two up to 1048576");
        let e = err(&good.replace("alu = 1", "alu = 0"));
        assert!(e.contains("key `latency.alu`: 0 is out of range"), "{e}");
        let e = err(&good.replace("[memory]\nlatency = 60\n", ""));
        assert_eq!(
            e,
            "machine description m.toml: key `memory`: is missing (the inorder model needs it)"
        );
        let e = err("model = \"atomic\"\n[l2]\nsize = 1\nways = 1\nline = 8\nlatency = 1\nreplacement = \"lru\"\n");
        assert_eq!(e, "machine description m.toml: key `l2`: has no effect with model = \"atomic\" (remove it)");
        let e = err("model = \"ooo\"");
        assert!(e.contains("key `model`: `ooo` is not a model"), "{e}");
        let e = err(&good.replace("replacement = \"lru\"", "replacement = \"plru\""));
        assert!(e.contains("key `l1i.replacement`"), "{e}");
        let e = err(&good.replace("size = \"256KiB\"", "size = \"256 parsecs\""));
        assert!(
            e.contains("key `l2.size`: `256 parsecs` is not a size"),
            "{e}"
        );
        let e = err("model = ");
        assert!(e.starts_with("machine description m.toml: line 1"), "{e}");
        let e = MachineDesc::load(Path::new("/nonexistent/x.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("cannot read machine description /nonexistent/x.toml"),
            "{e}"
        );
    }

    #[test]
    fn the_ipi_knob_is_read_and_checked() {
        let d = |t: &str| MachineDesc::parse(Path::new("m.toml"), t).map(|d| d.ipi);
        assert_eq!(d("model = \"atomic\"\n").unwrap(), IpiDesc::Deliver);
        assert_eq!(
            d("model = \"atomic\"\n[ipi]\nmode = \"deliver\"\n").unwrap(),
            IpiDesc::Deliver
        );
        assert_eq!(
            d("model = \"atomic\"\n[ipi]\nmode = \"delay\"\ndelay = 3000\n").unwrap(),
            IpiDesc::Delay(3000)
        );
        assert_eq!(
            d("model = \"atomic\"\n[ipi]\nmode = \"drop-until-tick\"\n").unwrap(),
            IpiDesc::DropUntilTick
        );
        let inorder = preset("inorder.toml") + "\n[ipi]\nmode = \"drop-until-tick\"\n";
        assert_eq!(d(&inorder).unwrap(), IpiDesc::DropUntilTick);
        let e = err("model = \"atomic\"\n[ipi]\nmode = \"lose\"\n");
        assert_eq!(e, "machine description m.toml: key `ipi.mode`: `lose` is not an IPI mode (\"deliver\", \"delay\" or \"drop-until-tick\")");
        let e = err("model = \"atomic\"\n[ipi]\nmode = \"delay\"\n");
        assert_eq!(e, "machine description m.toml: key `ipi.delay`: is missing (mode = \"delay\" needs a number of cycles)");
        let e = err("model = \"atomic\"\n[ipi]\nmode = \"delay\"\ndelay = -5\n");
        assert!(
            e.starts_with("machine description m.toml: key `ipi.delay`:"),
            "{e}"
        );
        let e = err("model = \"atomic\"\n[ipi]\nmode = \"delay\"\ndelay = \"soon\"\n");
        assert!(
            e.starts_with("machine description m.toml: key `ipi.delay`:"),
            "{e}"
        );
        let e = err("model = \"atomic\"\n[ipi]\nmode = \"delay\"\ndelay = 99999999999\n");
        assert!(
            e.contains("key `ipi.delay`: 99999999999 is out of range"),
            "{e}"
        );
        let e = err("model = \"atomic\"\n[ipi]\nmode = \"drop-until-tick\"\ndelay = 5\n");
        assert!(
            e.contains("key `ipi.delay`: has no effect with mode = \"drop-until-tick\""),
            "{e}"
        );
        let e = err("model = \"atomic\"\n[ipi]\nmode = \"deliver\"\nwhen = 1\n");
        assert!(
            e.starts_with("machine description m.toml: key `ipi.when`: unknown field"),
            "{e}"
        );
        let e = err("model = \"atomic\"\n[ipi]\n");
        assert!(e.starts_with("machine description m.toml: key `ipi"), "{e}");
    }

    #[test]
    fn sizes_accept_units() {
        assert_eq!(parse_size(&Size::Text("32KiB".into())), Ok(32768));
        assert_eq!(parse_size(&Size::Text("1 MiB".into())), Ok(1 << 20));
        assert_eq!(parse_size(&Size::Text("64".into())), Ok(64));
        assert_eq!(parse_size(&Size::Bytes(4096)), Ok(4096));
        assert!(parse_size(&Size::Text("99999999999999G".into())).is_err());
    }

    #[test]
    fn tage_keys_are_read_and_checked() {
        let good = preset("inorder.toml");
        let tage = good.replace(
            "kind = \"gshare\"\nentries = 512\nhistory_bits = 6\n",
            "kind = \"tage\"\nentries = 512\nhistory_bits = 64\ntage_tables = 4\ntage_entries = 256\ntage_tag_bits = 8\ntage_min_history = 4\n",
        );
        assert_ne!(tage, good);
        let ModelDesc::InOrder(c) = MachineDesc::parse(Path::new("m.toml"), &tage)
            .unwrap()
            .model
        else {
            panic!()
        };
        let t = c.bpred.tage.unwrap();
        assert_eq!(c.bpred.kind, PredictorKind::Tage);
        assert_eq!(
            (t.tables, t.entries, t.tag_bits, t.min_history),
            (4, 256, 8, 4)
        );
        let lengths: Vec<u32> = (0..4).map(|i| t.history_length(i, 64)).collect();
        assert_eq!(lengths, [4, 10, 25, 64]);
        // 512 two-bit counters, 4 x 256 entries of 3 + 8 + 2 bits
        assert_eq!(c.bpred.direction_bits(), 1024 + 4 * 256 * 13);
        let e = err(&tage.replace("tage_tables = 4", "tage_tables = 9"));
        assert_eq!(e, "machine description m.toml: key `bpred.tage_tables`: 9 is out of range (1 to 8 tagged tables)");
        let e = err(&tage.replace("tage_entries = 256", "tage_entries = 300"));
        assert_eq!(e, "machine description m.toml: key `bpred.tage_entries`: 300 is not a power of two from 16 to 65536");
        let e = err(&tage.replace("tage_tag_bits = 8", "tage_tag_bits = 20"));
        assert_eq!(e, "machine description m.toml: key `bpred.tage_tag_bits`: 20 is out of range (4 to 16 bits)");
        let e = err(&tage.replace("tage_min_history = 4", "tage_min_history = 65"));
        assert_eq!(e, "machine description m.toml: key `bpred.tage_min_history`: 65 is out of range (1 to history_bits = 64, the longest history)");
        let e = err(&tage.replace("history_bits = 64", "history_bits = 300"));
        assert!(
            e.contains("key `bpred.history_bits`: 300 is out of range for tage (1 to 256"),
            "{e}"
        );
        let e = err(&tage.replace("tage_tag_bits = 8\n", ""));
        assert_eq!(e, "machine description m.toml: key `bpred.tage_tag_bits`: is missing (kind = \"tage\" needs it)");
        let e = err(&good.replace("history_bits = 6\n", "history_bits = 6\ntage_tables = 4\n"));
        assert_eq!(e, "machine description m.toml: key `bpred.tage_tables`: has no effect with kind = \"gshare\" (remove it, or use kind = \"tage\")");
    }

    #[test]
    fn the_u74_predictor_keeps_to_its_documented_budget() {
        // [M] a 3.6 KiB branch history table: the direction predictor's
        // state is within a tenth of it
        let d = MachineDesc::parse(Path::new("u74.toml"), &preset("u74.toml")).unwrap();
        let ModelDesc::InOrder(c) = d.model else {
            panic!()
        };
        let bits = c.bpred.direction_bits() as f64;
        let budget = 3.6 * 1024.0 * 8.0;
        assert!(
            (bits / budget - 1.0).abs() < 0.1,
            "{bits} bits against {budget}"
        );
    }
}
