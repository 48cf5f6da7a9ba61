//! Named, unit-tagged, described counters, grouped in ordered blocks (one
//! per phase and one for the whole run), in the manner of gem5's `ADD_STAT`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{ObserveError, Result};

/// What a stat counts. The names are gem5's unit names, so `stats.txt`
/// readers that know gem5 recognise them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Cycle,
    Count,
    Ratio,
    Second,
    Byte,
    Tick,
    /// Cycles per instruction and the like: `(Cycle/Count)`.
    CyclePerCount,
    /// Instructions per cycle and the like: `(Count/Cycle)`.
    CountPerCycle,
    /// Bytes per second: `(Byte/Second)`.
    BytePerSecond,
    /// Anything else, spelt as given.
    Other(String),
}

impl Unit {
    /// The unit as gem5 prints it.
    pub fn as_str(&self) -> &str {
        match self {
            Unit::Cycle => "Cycle",
            Unit::Count => "Count",
            Unit::Ratio => "Ratio",
            Unit::Second => "Second",
            Unit::Byte => "Byte",
            Unit::Tick => "Tick",
            Unit::CyclePerCount => "(Cycle/Count)",
            Unit::CountPerCycle => "(Count/Cycle)",
            Unit::BytePerSecond => "(Byte/Second)",
            Unit::Other(s) => s,
        }
    }
}

/// A stat's value: an exact count or a derived real number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StatValue {
    U64(u64),
    F64(f64),
}

impl StatValue {
    pub fn as_f64(self) -> f64 {
        match self {
            StatValue::U64(v) => v as f64,
            StatValue::F64(v) => v,
        }
    }

    /// gem5's spelling: integers bare, reals with six decimals, `nan`.
    pub fn to_gem5_string(self) -> String {
        match self {
            StatValue::U64(v) => v.to_string(),
            StatValue::F64(v) if v.is_nan() => "nan".to_string(),
            StatValue::F64(v) if v.is_infinite() => {
                if v > 0.0 { "inf" } else { "-inf" }.to_string()
            }
            StatValue::F64(v) => format!("{v:.6}"),
        }
    }
}

// JSON has no NaN or infinity, and a ratio over an empty phase is NaN, so
// non-finite reals travel as the strings gem5 prints for them.
impl Serialize for StatValue {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match *self {
            StatValue::U64(v) => s.serialize_u64(v),
            StatValue::F64(v) if v.is_finite() => s.serialize_f64(v),
            v => s.serialize_str(&v.to_gem5_string()),
        }
    }
}

impl<'de> Deserialize<'de> for StatValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            U(u64),
            F(f64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::U(v) => Ok(StatValue::U64(v)),
            Raw::F(v) => Ok(StatValue::F64(v)),
            Raw::S(s) => match s.as_str() {
                "nan" => Ok(StatValue::F64(f64::NAN)),
                "inf" => Ok(StatValue::F64(f64::INFINITY)),
                "-inf" => Ok(StatValue::F64(f64::NEG_INFINITY)),
                other => Err(serde::de::Error::custom(format!(
                    "stat value {other:?} is neither a number nor nan/inf/-inf"
                ))),
            },
        }
    }
}

/// One named counter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    /// Dotted path such as `system.cpu0.cycles`.
    pub name: String,
    pub value: StatValue,
    pub unit: Unit,
    /// One-line description, as gem5 prints after `#`.
    pub desc: String,
}

impl Stat {
    /// A stat with a checked name and a non-empty description.
    pub fn new(name: &str, value: StatValue, unit: Unit, desc: &str) -> Result<Stat> {
        check_stat_name(name)?;
        let desc = one_line(desc);
        if desc.trim().is_empty() {
            return Err(ObserveError::StatDescription {
                name: name.to_string(),
            });
        }
        Ok(Stat {
            name: name.to_string(),
            value,
            unit,
            desc,
        })
    }
}

/// gem5 stat names: dot-separated identifiers (letters, digits, `_`, `:`,
/// `-`), no empty component. Anything else would break `stats.txt` parsing.
pub fn check_stat_name(name: &str) -> Result<()> {
    let bad = |reason| {
        Err(ObserveError::StatName {
            name: name.to_string(),
            reason,
        })
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.split('.').any(str::is_empty) {
        return bad("it has an empty component between dots");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
    {
        return bad("only ASCII letters, digits, '.', '_', ':' and '-' are allowed");
    }
    Ok(())
}

/// Guest-supplied text (phase labels) must not break line-oriented formats.
pub(crate) fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// An ordered set of stats with unique names, for one phase or a whole run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StatBlock {
    /// What the block covers, e.g. `total` or `phase 4: uname -a`.
    pub label: String,
    stats: Vec<Stat>,
}

impl StatBlock {
    pub fn new(label: &str) -> StatBlock {
        StatBlock {
            label: one_line(label),
            stats: Vec::new(),
        }
    }

    /// A block for one phase, opened with the phase's own bounds so a
    /// `stats.txt` reader can tell the blocks apart.
    pub fn for_phase(phase: &crate::phase::Phase) -> StatBlock {
        let mut b = StatBlock::new(&format!("phase {}: {}", phase.index, phase.label));
        let label = one_line(&phase.label);
        let rows: [(&str, u64, Unit, String); 4] = [
            (
                "phase.index",
                phase.index as u64,
                Unit::Count,
                format!("Index of phase \"{label}\""),
            ),
            (
                "phase.startCycle",
                phase.start_cycle,
                Unit::Cycle,
                "Cycle at which the phase starts".into(),
            ),
            (
                "phase.endCycle",
                phase.end_cycle,
                Unit::Cycle,
                "Cycle at which the phase ends".into(),
            ),
            (
                "phase.cycles",
                phase.cycles(),
                Unit::Cycle,
                "Length of the phase".into(),
            ),
        ];
        for (name, v, unit, desc) in rows {
            // Fixed names and non-empty descriptions: these cannot fail.
            b.stats.push(Stat {
                name: name.into(),
                value: StatValue::U64(v),
                unit,
                desc,
            });
        }
        b
    }

    /// Append a stat; its name must be new to this block.
    pub fn push(&mut self, stat: Stat) -> Result<&mut Self> {
        if self.get(&stat.name).is_some() {
            return Err(ObserveError::DuplicateStat {
                name: stat.name,
                block: self.label.clone(),
            });
        }
        self.stats.push(stat);
        Ok(self)
    }

    /// Append an integer stat.
    pub fn add_u64(&mut self, name: &str, value: u64, unit: Unit, desc: &str) -> Result<&mut Self> {
        self.push(Stat::new(name, StatValue::U64(value), unit, desc)?)
    }

    /// Append a real-valued stat.
    pub fn add_f64(&mut self, name: &str, value: f64, unit: Unit, desc: &str) -> Result<&mut Self> {
        self.push(Stat::new(name, StatValue::F64(value), unit, desc)?)
    }

    /// Append `num / den` (NaN when `den` is zero, as gem5 prints it).
    pub fn add_ratio(
        &mut self,
        name: &str,
        num: u64,
        den: u64,
        unit: Unit,
        desc: &str,
    ) -> Result<&mut Self> {
        let v = if den == 0 {
            f64::NAN
        } else {
            num as f64 / den as f64
        };
        self.add_f64(name, v, unit, desc)
    }

    pub fn get(&self, name: &str) -> Option<&Stat> {
        self.stats.iter().find(|s| s.name == name)
    }

    pub fn stats(&self) -> &[Stat] {
        &self.stats
    }

    /// Stats whose name starts with `prefix`, with the prefix removed.
    pub fn with_prefix<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a Stat)> + 'a {
        self.stats
            .iter()
            .filter_map(move |s| s.name.strip_prefix(prefix).map(|rest| (rest, s)))
    }

    pub fn len(&self) -> usize {
        self.stats.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stats.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(check_stat_name("system.cpu0.cycleShape.mem").is_ok());
        assert!(check_stat_name("").is_err());
        assert!(check_stat_name("system..cpu").is_err());
        assert!(check_stat_name("system.cpu cycles").is_err());
        assert!(check_stat_name(".x").is_err());
    }

    #[test]
    fn description_is_required_and_duplicates_refused() {
        let mut b = StatBlock::new("total");
        assert!(matches!(
            b.add_u64("system.cpu0.cycles", 1, Unit::Cycle, "  "),
            Err(ObserveError::StatDescription { .. })
        ));
        b.add_u64("system.cpu0.cycles", 1, Unit::Cycle, "Cycles")
            .unwrap();
        let err = b
            .add_u64("system.cpu0.cycles", 2, Unit::Cycle, "Cycles")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "stat system.cpu0.cycles appears twice in stat block \"total\""
        );
        assert_eq!(b.len(), 1);
    }

    #[test]
    fn values_round_trip_through_json_including_nan() {
        let mut b = StatBlock::new("total");
        b.add_u64("a", u64::MAX, Unit::Count, "big").unwrap();
        b.add_ratio("b", 1, 0, Unit::CyclePerCount, "empty ratio")
            .unwrap();
        b.add_f64("c", 2.5, Unit::Ratio, "real").unwrap();
        let json = serde_json::to_string(&b).unwrap();
        assert!(json.contains("\"value\":\"nan\""), "{json}");
        let back: StatBlock = serde_json::from_str(&json).unwrap();
        assert_eq!(back.get("a").unwrap().value, StatValue::U64(u64::MAX));
        assert!(back.get("b").unwrap().value.as_f64().is_nan());
        assert_eq!(back.get("c").unwrap().value, StatValue::F64(2.5));
    }

    #[test]
    fn gem5_value_spelling() {
        assert_eq!(StatValue::U64(42).to_gem5_string(), "42");
        assert_eq!(StatValue::F64(2.5615).to_gem5_string(), "2.561500");
        assert_eq!(StatValue::F64(f64::NAN).to_gem5_string(), "nan");
    }
}
