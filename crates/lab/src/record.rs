//! The run record: everything needed to re-report one run later without
//! the images or the emulator (stored as JSON in the results database).

use std::collections::BTreeMap;

use hs_observe::Observations;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub study: String,
    pub variant: String,
    /// 0 for the first run of a variant, 1.. for `--repeat` reruns.
    pub repeat: u32,
    pub scenario: ScenarioSource,
    pub hartscope_version: String,
    pub image: ImageInfo,
    pub machine: MachineInfo,
    pub workload: WorkloadInfo,
    pub console: ConsoleInfo,
    /// From the workload's EXIT marker.
    pub exit_status: Option<i64>,
    /// Why the machine stopped, as a sentence.
    pub stop: String,
    pub counters: Counters,
    pub observations: Observations,
    /// Hot functions, symbolised when the run was recorded; `None` when the run took no samples.
    pub profile: Option<Profile>,
    /// What the guest measured and sent on the `metrics` channel ([`crate::guest_metrics`]).
    #[serde(default)]
    pub guest_metrics: BTreeMap<String, crate::guest_metrics::GuestValue>,
    pub artefacts: Vec<Artefact>,
    /// The shared boot this run went on from (`[study] boot`); None: it booted itself.
    #[serde(default)]
    pub shared_boot: Option<crate::shared_boot::SharedBootInfo>,
    /// Host wall-clock times (RFC 3339, UTC): provenance only, never guest-visible.
    pub started_at: String,
    pub finished_at: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScenarioSource {
    pub path: String,
    pub sha256: String,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImageInfo {
    pub name: String,
    /// The image's `manifest.json` as it was (packages, versions, hashes).
    pub manifest: serde_json::Value,
}

impl ImageInfo {
    fn field(&self, key: &str) -> &str {
        self.manifest
            .get(key)
            .and_then(|v| v.as_str())
            .unwrap_or("?")
    }
    pub fn recipe_hash(&self) -> &str {
        self.field("recipe_hash")
    }
    pub fn kernel_release(&self) -> &str {
        self.field("kernel_release")
    }
    /// `(name, version, sha256, role)` of each package the image was made from.
    pub fn packages(&self) -> Vec<(String, String, String, String)> {
        let s = |p: &serde_json::Value, k: &str| {
            p.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string()
        };
        self.manifest
            .get("packages")
            .and_then(|p| p.as_array())
            .map(|a| {
                a.iter()
                    .map(|p| (s(p, "name"), s(p, "version"), s(p, "sha256"), s(p, "role")))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The manifest's list of files no signed index vouched for (each with why).
    pub fn unverified(&self) -> Vec<String> {
        self.manifest
            .get("unverified")
            .and_then(|p| p.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineInfo {
    pub harts: usize,
    pub memory_bytes: u64,
    pub mhz: u64,
    pub quantum: u64,
    /// The kernel command line the guest booted with.
    pub bootargs: String,
    /// The timing model the harts ran with.
    pub timing: String,
    /// The study's machine description file, if it named one.
    pub description: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadInfo {
    pub dir: String,
    /// Environment variables exported to `run.sh`.
    pub env: BTreeMap<String, String>,
    pub initrd_sha256: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsoleInfo {
    pub bytes: u64,
    pub sha256: String,
    /// The console output (invalid UTF-8 replaced).
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    pub cycles: u64,
    pub instret: u64,
    pub guest_seconds: f64,
    pub host_seconds: f64,
    pub mips: f64,
    pub harts: Vec<HartCounters>,
    /// Device and bus counters by name.
    pub devices: BTreeMap<String, u64>,
    pub unknown_markers: u64,
    pub bad_markers: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HartCounters {
    pub hart: usize,
    pub cycles: u64,
    pub instret: u64,
}

/// Samples per leaf symbol.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    pub period: u64,
    pub total_samples: u64,
    pub rows: Vec<ProfileRow>,
    /// What could not be named, and why.
    pub notes: Vec<String>,
    /// Samples from this cycle on are counted (the workload; boot is left out).
    #[serde(default)]
    pub from_cycle: u64,
    /// The window in words, for captions.
    #[serde(default)]
    pub window: String,
    /// Samples before this cycle are counted (`study.profile_to`; none: the end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_cycle: Option<u64>,
    /// The hottest symbols of every phase that has samples, in run order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseProfile>,
    /// The window's samples split by the study's `[[groups]]` (then `other`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupCount>,
    /// The window's samples of each guest task, by the mode it ran in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<TaskCount>,
}

/// Samples of one guest task (by `comm`, all its threads and processes):
/// in the kernel (S-mode, interrupts taken while it was current included)
/// and in user mode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskCount {
    pub comm: String,
    pub kernel: u64,
    pub user: u64,
}

/// Samples of one profile group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupCount {
    pub name: String,
    pub samples: u64,
}

/// Hot symbols of one phase (from its marker to the next).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseProfile {
    pub label: String,
    pub samples: u64,
    /// The phase's hottest symbols, most first.
    pub rows: Vec<ProfileRow>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileRow {
    pub symbol: String,
    /// `kernel`, `firmware` or a user binary.
    pub place: String,
    pub samples: u64,
}

impl Profile {
    pub fn samples_of(&self, symbol: &str) -> u64 {
        self.rows
            .iter()
            .filter(|r| r.symbol == symbol)
            .map(|r| r.samples)
            .sum()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artefact {
    pub kind: String,
    pub path: String,
}

/// What must match between repeats of one variant for the run to count as
/// deterministic: the console bytes and every count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprint {
    pub console_sha256: String,
    pub exit_status: Option<i64>,
    pub cycles: u64,
    pub instret: u64,
    pub phases: Vec<(String, u64, u64)>,
    pub samples: u64,
}

impl RunRecord {
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint {
            console_sha256: self.console.sha256.clone(),
            exit_status: self.exit_status,
            cycles: self.counters.cycles,
            instret: self.counters.instret,
            phases: self
                .observations
                .phases
                .iter()
                .map(|p| (p.label.clone(), p.cycles(), p.instret()))
                .collect(),
            samples: self.observations.samples.len() as u64,
        }
    }

    /// How this run differs from `other` in what must be deterministic; empty when identical.
    pub fn differences(&self, other: &RunRecord) -> Vec<String> {
        let (a, b) = (self.fingerprint(), other.fingerprint());
        let mut out = Vec::new();
        if a.console_sha256 != b.console_sha256 {
            out.push("console bytes".to_string());
        }
        if a.exit_status != b.exit_status {
            out.push("exit status".to_string());
        }
        if a.cycles != b.cycles {
            out.push("cycles".to_string());
        }
        if a.instret != b.instret {
            out.push("instret".to_string());
        }
        if a.phases != b.phases {
            out.push("phase counts".to_string());
        }
        if a.samples != b.samples {
            out.push("samples".to_string());
        }
        out
    }
}
