//! How an owner (a hart, a device, a timing model) turns its state into a
//! snapshot section and back: serde, written as JSON. A section is small
//! next to RAM, JSON keeps it readable when a restore is refused, and a
//! field missing or of the wrong type is named by its path in the error.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Save and restore of one owner's state. `restore` is given what `save`
/// of the same kind of owner wrote; it replaces the owner's state, keeping
/// what ties it to the machine it lives in (interrupt lines, RAM, clocks).
pub trait Persist {
    fn save(&self) -> Result<Vec<u8>, String>;
    fn restore(&mut self, data: &[u8]) -> Result<(), String>;
}

/// `value` as a section's bytes.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, String> {
    serde_json::to_vec(value).map_err(|e| format!("cannot be saved: {e}"))
}

/// A section's bytes back as a `T`; the error names the field at fault.
pub fn decode<T: DeserializeOwned>(data: &[u8]) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_slice(data);
    let v = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            format!("{}", e.inner())
        } else {
            format!("at `{path}`: {}", e.inner())
        }
    })?;
    de.end().map_err(|e| format!("trailing data: {e}"))?;
    Ok(v)
}

/// Implements [`Persist`] for a type that is `Serialize + Deserialize`:
/// `restore` decodes a whole new value, moves the listed fields (the ties
/// to this machine, skipped by serde) over from the old one, and replaces it.
#[macro_export]
macro_rules! persist_by_serde {
    ($ty:ty $(, keep: [$($keep:ident),* $(,)?])?) => {
        impl $crate::state::Persist for $ty {
            fn save(&self) -> Result<Vec<u8>, String> {
                $crate::state::encode(self)
            }
            fn restore(&mut self, data: &[u8]) -> Result<(), String> {
                #[allow(unused_mut)]
                let mut fresh: $ty = $crate::state::decode(data)?;
                $($(std::mem::swap(&mut fresh.$keep, &mut self.$keep);)*)?
                *self = fresh;
                Ok(())
            }
        }
    };
}

/// serde for arrays of any length (serde's own stop at 32):
/// `#[serde(with = "hs_snapshot::state::array")]`.
pub mod array {
    use serde::de::{Deserialize, Deserializer, Error};
    use serde::ser::{Serialize, Serializer};

    pub fn serialize<S: Serializer, T: Serialize, const N: usize>(
        a: &[T; N],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(a.iter())
    }

    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>, const N: usize>(
        d: D,
    ) -> Result<[T; N], D::Error> {
        let v = Vec::<T>::deserialize(d)?;
        let n = v.len();
        v.try_into()
            .map_err(|_| D::Error::custom(format!("{n} elements where {N} belong")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Dev {
        level: u8,
        #[serde(with = "array")]
        big: [u64; 40],
        #[serde(skip)]
        tie: Option<&'static str>,
    }
    persist_by_serde!(Dev, keep: [tie]);

    #[test]
    fn restore_replaces_state_and_keeps_the_ties() {
        let mut a = Dev {
            level: 3,
            big: [7; 40],
            tie: Some("line 10"),
        };
        let saved = a.save().unwrap();
        a.level = 9;
        a.big[39] = 1;
        a.restore(&saved).unwrap();
        assert_eq!(a.level, 3);
        assert_eq!(a.big, [7; 40]);
        assert_eq!(a.tie, Some("line 10"), "the machine's wiring is kept");
    }

    #[test]
    fn bad_state_names_the_field() {
        let mut a = Dev {
            level: 0,
            big: [0; 40],
            tie: None,
        };
        let e = a.restore(br#"{"level":300,"big":[]}"#).unwrap_err();
        assert!(e.contains("`level`"), "{e}");
        let e = a.restore(br#"{"level":1,"big":[1,2]}"#).unwrap_err();
        assert!(
            e.contains("`big`") && e.contains("2 elements where 40"),
            "{e}"
        );
        let e = a.restore(b"{").unwrap_err();
        assert!(!e.is_empty());
        assert_eq!(a.level, 0, "a refused restore changes nothing");
    }
}
