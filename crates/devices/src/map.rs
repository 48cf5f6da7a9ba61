//! Physical address → (device, offset), with half-open ranges checked for
//! overlap when the map is built.

/// Error building a device map.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    #[error("device `{name}` has an empty or wrapping range at {base:#x} (size {size:#x})")]
    BadRange { name: String, base: u64, size: u64 },
    #[error(
        "device `{a}` [{a_base:#x}..{a_end:#x}) overlaps device `{b}` [{b_base:#x}..{b_end:#x})"
    )]
    Overlap {
        a: String,
        a_base: u64,
        a_end: u64,
        b: String,
        b_base: u64,
        b_end: u64,
    },
}

#[derive(Clone, Debug)]
struct Entry<T> {
    base: u64,
    /// One past the last byte.
    end: u64,
    name: String,
    value: T,
}

/// Sorted, non-overlapping half-open ranges `[base, base+size)`, each
/// carrying a value (the machine stores a slot id there).
#[derive(Clone, Debug)]
pub struct DeviceMap<T> {
    entries: Vec<Entry<T>>,
}

impl<T> Default for DeviceMap<T> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
        }
    }
}

impl<T: Copy> DeviceMap<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add `[base, base+size)`; refuses empty, wrapping and overlapping ranges.
    pub fn insert(&mut self, name: &str, base: u64, size: u64, value: T) -> Result<(), MapError> {
        let end = match base.checked_add(size) {
            Some(end) if size > 0 => end,
            _ => {
                return Err(MapError::BadRange {
                    name: name.into(),
                    base,
                    size,
                })
            }
        };
        let idx = self.entries.partition_point(|e| e.base < base);
        for neighbour in [idx.checked_sub(1), Some(idx)].into_iter().flatten() {
            if let Some(e) = self.entries.get(neighbour) {
                if e.base < end && base < e.end {
                    return Err(MapError::Overlap {
                        a: name.into(),
                        a_base: base,
                        a_end: end,
                        b: e.name.clone(),
                        b_base: e.base,
                        b_end: e.end,
                    });
                }
            }
        }
        self.entries.insert(
            idx,
            Entry {
                base,
                end,
                name: name.into(),
                value,
            },
        );
        Ok(())
    }

    /// The device holding `pa`, and the offset of `pa` in its window.
    /// An access of `len` bytes must fit entirely in one window.
    #[inline]
    pub fn lookup(&self, pa: u64, len: u64) -> Option<(T, u64)> {
        let idx = self.entries.partition_point(|e| e.base <= pa);
        let e = self.entries.get(idx.checked_sub(1)?)?;
        let off = pa - e.base;
        (pa < e.end && len <= e.end - pa).then_some((e.value, off))
    }

    /// `(name, base, end)` of every range, in address order.
    pub fn ranges(&self) -> impl Iterator<Item = (&str, u64, u64, T)> + '_ {
        self.entries
            .iter()
            .map(|e| (e.name.as_str(), e.base, e.end, e.value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_overlaps_but_allows_touching_ranges() {
        let mut m = DeviceMap::new();
        m.insert("a", 0x1000, 0x1000, 1).unwrap();
        m.insert("b", 0x2000, 0x1000, 2).unwrap(); // touches a's end: fine (half-open)
        m.insert("c", 0x0, 0x1000, 3).unwrap(); // touches a's start
        let err = m.insert("d", 0x2fff, 2, 4).unwrap_err();
        assert!(
            matches!(err, MapError::Overlap { ref b, .. } if b == "b"),
            "{err}"
        );
        let err = m.insert("e", 0x800, 0x2000, 5).unwrap_err();
        assert!(matches!(err, MapError::Overlap { .. }));
        assert!(m.insert("f", 0x10, 0, 6).is_err());
        assert!(m.insert("g", u64::MAX, 2, 7).is_err());
        assert_eq!(
            err.to_string(),
            "device `e` [0x800..0x2800) overlaps device `c` [0x0..0x1000)"
        );
    }

    #[test]
    fn lookup_is_half_open_and_access_must_fit() {
        let mut m = DeviceMap::new();
        m.insert("a", 0x1000, 0x100, 'a').unwrap();
        m.insert("b", 0x1100, 0x100, 'b').unwrap();
        assert_eq!(m.lookup(0x1000, 4), Some(('a', 0)));
        assert_eq!(m.lookup(0x10ff, 1), Some(('a', 0xff)));
        assert_eq!(m.lookup(0x1100, 1), Some(('b', 0)));
        assert_eq!(m.lookup(0x10fc, 8), None, "straddles two devices");
        assert_eq!(m.lookup(0x1200, 1), None);
        assert_eq!(m.lookup(0xfff, 1), None);
        assert_eq!(m.lookup(u64::MAX, 8), None);
    }
}
