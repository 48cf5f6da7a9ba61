//! Which optional devices a machine has: the `[board.NAME]` tables of a
//! machine description (`--machine FILE.toml`, or a scenario's
//! `machine_description`). The timing crate reads the rest of the file.
//!
//! ```toml
//! [board.gpio0]
//! kind = "dw-apb-gpio"     # a kind from hs_devices::KINDS
//! ngpios = 8               # the kind's own keys
//! ```
//!
//! A child table (`[board.spi0.cs0]`, the peripheral on a chip select)
//! reaches the device as keys `cs0.KEY`.
//!
//! Every table is validated here, when the description is loaded: an unknown
//! kind, an unknown key or an impossible value is one sentence naming the
//! file and the key (`board.gpio0.ngpios`).

use std::path::Path;

use hs_devices::{DeviceConfig, ParamValue};
use hs_timing::DescError;

/// The devices `path` names, validated.
pub fn load_devices(path: &Path) -> Result<Vec<DeviceConfig>, DescError> {
    parse_devices(path, &hs_timing::desc::read_resolved(path)?)
}

/// The devices of description text `text` (`path` names it in errors).
pub fn parse_devices(path: &Path, text: &str) -> Result<Vec<DeviceConfig>, DescError> {
    let key_err = |key: String, message: String| DescError::Key {
        file: path.to_path_buf(),
        key,
        message,
    };
    let doc: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| DescError::Syntax {
            file: path.to_path_buf(),
            message: e.message().to_string(),
        })?;
    let Some(devices) = doc.get("board") else {
        return Ok(Vec::new());
    };
    let Some(devices) = devices.as_table() else {
        return Err(key_err(
            "board".into(),
            "must be a table of [board.NAME] tables".into(),
        ));
    };
    let mut out = Vec::new();
    for (name, table) in devices {
        let key = |k: &str| format!("board.{name}.{k}");
        let ok_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !ok_name {
            return Err(key_err(
                format!("board.{name}"),
                "a device name is letters, digits, `_` and `-`".into(),
            ));
        }
        let Some(table) = table.as_table() else {
            return Err(key_err(
                format!("board.{name}"),
                "must be a table with `kind` and the device's keys".into(),
            ));
        };
        let kind = match table.get("kind") {
            Some(toml::Value::String(k)) => k.clone(),
            Some(_) => return Err(key_err(key("kind"), "must be a string".into())),
            None => {
                return Err(key_err(
                    key("kind"),
                    "is missing (which kind of device is this?)".into(),
                ))
            }
        };
        let mut cfg = DeviceConfig::new(name.clone(), kind);
        // A child table (`[board.spi0.cs0]`) becomes keys `cs0.KEY`.
        let mut entries: Vec<(String, &toml::Value)> = table
            .iter()
            .filter(|(k, _)| k.as_str() != "kind")
            .map(|(k, v)| (k.clone(), v))
            .collect();
        while let Some((k, v)) = entries.pop() {
            let v = match v {
                toml::Value::Integer(i) => ParamValue::Int(*i),
                toml::Value::Boolean(b) => ParamValue::Bool(*b),
                toml::Value::String(s) => ParamValue::Str(s.clone()),
                toml::Value::Table(t) if !k.contains('.') => {
                    entries.extend(t.iter().map(|(ck, cv)| (format!("{k}.{ck}"), cv)));
                    continue;
                }
                _ => return Err(key_err(
                    key(&k),
                    "must be an integer, a boolean, a string or (one level deep) a table of those"
                        .into(),
                )),
            };
            cfg.params.insert(k, v);
        }
        if let Err(e) = hs_devices::resources::plug(&cfg) {
            return Err(key_err(key(&e.key), e.message));
        }
        out.push(cfg);
    }
    // Keys that name another device of the description must name one of the right kind.
    for cfg in &out {
        for (key, kind) in REFERENCE_KEYS {
            if let Some(ParamValue::Str(target)) = cfg.params.get(*key) {
                if !out.iter().any(|d| &d.name == target && d.kind == *kind) {
                    return Err(key_err(
                        format!("board.{}.{key}", cfg.name),
                        format!("`{target}` is not a `{kind}` device of this description"),
                    ));
                }
            }
        }
    }
    Ok(out)
}

/// The CLINT's IPI policy for a description's `[ipi]` (validated by hs_timing).
pub fn ipi_policy(d: hs_timing::IpiDesc) -> hs_devices::IpiPolicy {
    match d {
        hs_timing::IpiDesc::Deliver => hs_devices::IpiPolicy::Deliver,
        hs_timing::IpiDesc::Delay(n) => hs_devices::IpiPolicy::Delay(n),
        hs_timing::IpiDesc::DropUntilTick => hs_devices::IpiPolicy::DropUntilTick,
    }
}

/// Keys of any device that name another device, and the kind it must be.
const REFERENCE_KEYS: &[(&str, &str)] = &[("clock", "fixed-clock"), ("dma", "dw-axi-dmac")];

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse_devices(Path::new("m.toml"), text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_description_without_devices_has_none() {
        assert_eq!(
            parse_devices(Path::new("m.toml"), "model = \"atomic\"\n").unwrap(),
            Vec::new()
        );
        let presets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../machines");
        for p in ["atomic.toml", "inorder.toml"] {
            assert_eq!(load_devices(&presets.join(p)).unwrap(), Vec::new(), "{p}");
        }
    }

    #[test]
    fn the_spi_descriptions_name_clocks_dma_ssi_and_a_sink() {
        let presets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../machines");
        for p in ["atomic-spi.toml", "inorder-spi.toml"] {
            let d = load_devices(&presets.join(p)).unwrap();
            let kinds: Vec<(&str, &str)> = d
                .iter()
                .map(|c| (c.name.as_str(), c.kind.as_str()))
                .collect();
            assert_eq!(
                kinds,
                [
                    ("dma0", "dw-axi-dmac"),
                    ("dma_clk", "fixed-clock"),
                    ("gpio0", "dw-apb-gpio"),
                    ("spi0", "dw-apb-ssi"),
                    ("spi_clk", "fixed-clock")
                ],
                "{p}"
            );
            let spi = &d[3];
            assert_eq!(
                spi.params.get("cs0.kind"),
                Some(&ParamValue::Str("spidev-sink".into())),
                "{p}"
            );
            assert_eq!(
                spi.params.get("cs0.max-hz"),
                Some(&ParamValue::Int(10_000_000)),
                "{p}"
            );
        }
        let spi =
            "[board.c]\nkind = \"fixed-clock\"\n[board.s]\nkind = \"dw-apb-ssi\"\nclock = \"c\"\n";
        assert!(parse_devices(Path::new("m.toml"), spi).is_ok());
        assert_eq!(
            err(&spi.replace("clock = \"c\"", "clock = \"s\"")),
            "machine description m.toml: key `board.s.clock`: `s` is not a `fixed-clock` device of this description"
        );
        assert_eq!(
            err(&format!("{spi}dma = \"c\"\n")),
            "machine description m.toml: key `board.s.dma`: `c` is not a `dw-axi-dmac` device of this description"
        );
        assert_eq!(
            err(&format!("{spi}[board.s.cs0]\nkind = \"led\"\n")),
            "machine description m.toml: key `board.s.cs0.kind`: `led` is not an SPI peripheral kind (known: \"spidev-sink\", \"enc28j60\")"
        );
    }

    #[test]
    fn errors_name_the_file_and_the_key() {
        assert_eq!(
            err("board = 3"),
            "machine description m.toml: key `board`: must be a table of [board.NAME] tables"
        );
        assert_eq!(err("[board.x]\nn = 1"), "machine description m.toml: key `board.x.kind`: is missing (which kind of device is this?)");
        assert!(err("[board.x]\nkind = \"flux\"").starts_with(
            "machine description m.toml: key `board.x.kind`: `flux` is not a device kind"
        ));
        assert_eq!(
            err("[board.x]\nkind = 1"),
            "machine description m.toml: key `board.x.kind`: must be a string"
        );
        assert_eq!(err("[board.\"a b\"]\nkind = \"k\""), "machine description m.toml: key `board.a b`: a device name is letters, digits, `_` and `-`");
        assert!(err("[board.x]\nkind = \"k\"\nv = [1]").contains("key `board.x.v`: must be an integer, a boolean, a string or (one level deep) a table of those"));
        assert!(err("[board.x]\nkind = \"k\"\n[board.x.c.d]\ne = 1")
            .contains("key `board.x.c.d`: must be"));
        assert!(err("[board").starts_with("machine description m.toml: "));
    }
}
