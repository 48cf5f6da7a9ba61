//! Values the guest measured itself and sent to the host on the marker
//! channel `metrics` (`hsmark send FILE metrics`, or the SEND marker from a
//! program): one value per line,
//!
//! ```text
//! NAME VALUE [UNIT]        # e.g.  rtt_us.p50 41.250 us
//! ```
//!
//! NAME is letters, digits and `_ . - /`; VALUE a finite number; UNIT a word
//! (`ns`, `us`, `ms`, `s` are time: the metric `guest[NAME].cycles` converts
//! them to core cycles at the run's clock). Blank lines and lines starting
//! with `#` are skipped. A later line with the same NAME replaces an earlier
//! one. The values go into the run record, so reports and checks read them
//! like any other metric (`guest[NAME]`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The channel the guest sends its metrics on.
pub const CHANNEL: &str = "metrics";

/// One value the guest reported.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GuestValue {
    pub value: f64,
    /// Empty when the guest gave none.
    #[serde(default)]
    pub unit: String,
}

impl GuestValue {
    /// Nanoseconds per unit, when the unit is one of time.
    pub fn ns_per_unit(&self) -> Option<f64> {
        time_unit_ns(&self.unit)
    }
}

pub fn time_unit_ns(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    })
}

/// Parse the channel's bytes; an error names the line and what is wrong with it.
pub fn parse(data: &[u8]) -> Result<BTreeMap<String, GuestValue>, String> {
    let text = std::str::from_utf8(data)
        .map_err(|_| format!("the guest's `{CHANNEL}` channel is not UTF-8 text"))?;
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| {
            format!("the guest's `{CHANNEL}` channel, line {}: {why} (`{line}`; lines are `NAME VALUE [UNIT]`)", i + 1)
        };
        let mut words = line.split_whitespace();
        let (name, value, unit) = (words.next().unwrap_or(""), words.next(), words.next());
        if words.next().is_some() {
            return Err(bad("more than three words"));
        }
        let name_ok = name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/'));
        if !name_ok || name.len() > 128 {
            return Err(bad("a name is up to 128 letters, digits and `_ . - /`"));
        }
        let value: f64 = value
            .ok_or_else(|| bad("no value"))?
            .parse()
            .map_err(|_| bad("the value is not a number"))?;
        if !value.is_finite() {
            return Err(bad("the value is not finite"));
        }
        let unit = unit.unwrap_or("").to_string();
        if !unit
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '/' | '%' | '_'))
            || unit.len() > 16
        {
            return Err(bad("a unit is one short word"));
        }
        out.insert(name.to_string(), GuestValue { value, unit });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_become_named_values_with_units() {
        let m = parse(b"# ipiping\nrounds 200 count\nrtt_us.p50 41.250 us\n\nrtt_us.max 8012.5 us\nplain 3\nplain 4\n").unwrap();
        assert_eq!(
            m["rounds"],
            GuestValue {
                value: 200.0,
                unit: "count".into()
            }
        );
        assert_eq!(m["rtt_us.p50"].value, 41.25);
        assert_eq!(m["rtt_us.max"].ns_per_unit(), Some(1e3));
        assert_eq!(
            m["plain"],
            GuestValue {
                value: 4.0,
                unit: String::new()
            },
            "the later line wins"
        );
        assert_eq!(m.len(), 4);
    }

    #[test]
    fn a_bad_line_is_named() {
        let e = parse(b"a 1\nb x us\n").unwrap_err();
        assert!(e.contains("line 2: the value is not a number"), "{e}");
        assert!(parse(b"a b c d\n")
            .unwrap_err()
            .contains("more than three words"));
        assert!(parse(b"na me\n")
            .unwrap_err()
            .contains("the value is not a number"));
        assert!(parse(b"x\n").unwrap_err().contains("no value"));
        assert!(parse(b"x inf\n").unwrap_err().contains("not finite"));
        assert!(parse(b"a$ 1\n").unwrap_err().contains("a name is"));
        assert!(parse(&[0xff, b' ', b'1'])
            .unwrap_err()
            .contains("not UTF-8"));
    }
}
