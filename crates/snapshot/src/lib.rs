//! The snapshot file (issue 17): a versioned container of named state
//! sections (one per hart, device or model, each serialised by its owner)
//! and guest RAM stored sparsely — pages that are all zero cost nothing —
//! closed by a SHA-256 of everything before it. Written through a temporary
//! file and renamed, so a reader never sees half of one; read back with
//! every length checked against what remains, so a corrupt, truncated or
//! foreign file is one sentence naming it, never a panic.
//!
//! Layout (little endian):
//!
//! ```text
//! "HSSNAP\r\n"  version u32  section count u32
//! per section:  name length u8, name (UTF-8), data length u64, data
//! RAM:          base u64, size u64, page count u64, per page: index u64, 4096 bytes
//! SHA-256 of all the above (32 bytes)
//! ```
//!
//! This crate knows nothing of what a section means; the machine decides
//! which sections a snapshot needs and refuses one it cannot restore.

pub mod state;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

const MAGIC: &[u8; 8] = b"HSSNAP\r\n";
/// The format this build writes and reads.
pub const VERSION: u32 = 1;
pub const PAGE: usize = 4096;
const HASH: usize = 32;

/// A snapshot file that cannot be used, in one sentence.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshot {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("snapshot {}: {message}", path.display())]
    Format { path: PathBuf, message: String },
}

/// State to save: named sections and guest RAM.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub sections: BTreeMap<String, Vec<u8>>,
    /// Guest physical address of the first RAM byte.
    pub ram_base: u64,
    pub ram_size: u64,
    /// Non-zero pages by index (page = ram_base + index * 4096).
    pub pages: BTreeMap<u64, Box<[u8; PAGE]>>,
}

impl Snapshot {
    /// Keep the pages of `ram` (starting at guest address `base`) that are
    /// not all zero.
    pub fn set_ram(&mut self, base: u64, ram: &[u8]) {
        self.ram_base = base;
        self.ram_size = ram.len() as u64;
        self.pages.clear();
        for (i, chunk) in ram.chunks(PAGE).enumerate() {
            if chunk.iter().any(|&b| b != 0) {
                let mut page = Box::new([0u8; PAGE]);
                page[..chunk.len()].copy_from_slice(chunk);
                self.pages.insert(i as u64, page);
            }
        }
    }

    /// Write the saved RAM into `ram` (which must be `ram_size` bytes);
    /// pages not stored are zeroed.
    pub fn restore_ram(&self, ram: &mut [u8]) -> Result<(), String> {
        self.restore_ram_where(ram, |_| true)
    }

    /// As [`Snapshot::restore_ram`], zeroing only the pages not stored for
    /// which `dirty(page index)` holds: a caller that knows the rest is
    /// already zero (fresh RAM) need not write, and so touch, every page.
    pub fn restore_ram_where(
        &self,
        ram: &mut [u8],
        dirty: impl Fn(u64) -> bool,
    ) -> Result<(), String> {
        if ram.len() as u64 != self.ram_size {
            return Err(format!(
                "the snapshot holds {} bytes of RAM; this machine has {}",
                self.ram_size,
                ram.len()
            ));
        }
        for (i, chunk) in ram.chunks_mut(PAGE).enumerate() {
            match self.pages.get(&(i as u64)) {
                Some(p) => chunk.copy_from_slice(&p[..chunk.len()]),
                None if dirty(i as u64) => chunk.fill(0),
                None => {}
            }
        }
        Ok(())
    }

    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.pages.len() * (PAGE + 8));
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(self.sections.len() as u32).to_le_bytes());
        for (name, data) in &self.sections {
            assert!(name.len() <= 255, "section names are short");
            out.push(name.len() as u8);
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&(data.len() as u64).to_le_bytes());
            out.extend_from_slice(data);
        }
        out.extend_from_slice(&self.ram_base.to_le_bytes());
        out.extend_from_slice(&self.ram_size.to_le_bytes());
        out.extend_from_slice(&(self.pages.len() as u64).to_le_bytes());
        for (i, p) in &self.pages {
            out.extend_from_slice(&i.to_le_bytes());
            out.extend_from_slice(&p[..]);
        }
        let hash = Sha256::digest(&out);
        out.extend_from_slice(&hash);
        out
    }

    /// Write to `path` through a temporary file beside it, then rename.
    pub fn write_atomic(&self, path: &Path) -> Result<(), SnapshotError> {
        let io = |source| SnapshotError::Io {
            path: path.to_path_buf(),
            source,
        };
        let tmp = path.with_extension("partial");
        std::fs::write(&tmp, self.encode()).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// Read and check a snapshot file.
    pub fn read(path: &Path) -> Result<Snapshot, SnapshotError> {
        let bytes = std::fs::read(path).map_err(|source| SnapshotError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Snapshot::decode(&bytes).map_err(|message| SnapshotError::Format {
            path: path.to_path_buf(),
            message,
        })
    }

    /// Parse a snapshot's bytes; the error says what is wrong.
    pub fn decode(bytes: &[u8]) -> Result<Snapshot, String> {
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err("not a hartscope snapshot (no HSSNAP header)".into());
        }
        let mut r = Reader {
            b: bytes,
            at: MAGIC.len(),
        };
        let version = r.u32("the version")?;
        if version != VERSION {
            return Err(format!(
                "format version {version}; this hartscope reads version {VERSION} (make the snapshot again)"
            ));
        }
        if bytes.len() < MAGIC.len() + 8 + HASH {
            return Err("truncated (shorter than an empty snapshot)".into());
        }
        let body = &bytes[..bytes.len() - HASH];
        if Sha256::digest(body)[..] != bytes[bytes.len() - HASH..] {
            return Err("content hash mismatch: the file is corrupt or truncated".into());
        }
        let mut r = Reader { b: body, at: r.at };
        let mut s = Snapshot::default();
        let n = r.u32("the section count")?;
        for k in 0..n {
            let len = r.take(1, "a section name length")?[0] as usize;
            let name = std::str::from_utf8(r.take(len, "a section name")?)
                .map_err(|_| format!("section {k}: its name is not UTF-8"))?
                .to_string();
            let dlen = r.u64(&format!("the length of section `{name}`"))?;
            let data = r.take_u64(dlen, &format!("section `{name}`"))?.to_vec();
            if s.sections.insert(name.clone(), data).is_some() {
                return Err(format!("section `{name}` appears twice"));
            }
        }
        s.ram_base = r.u64("the RAM base")?;
        s.ram_size = r.u64("the RAM size")?;
        let pages = r.u64("the page count")?;
        let max_pages = s.ram_size.div_ceil(PAGE as u64);
        if pages > max_pages {
            return Err(format!(
                "{pages} RAM pages stored for {} bytes of RAM",
                s.ram_size
            ));
        }
        for _ in 0..pages {
            let i = r.u64("a page index")?;
            if i >= max_pages {
                return Err(format!(
                    "RAM page {i} lies beyond the RAM's {} bytes",
                    s.ram_size
                ));
            }
            let data = r.take(PAGE, &format!("RAM page {i}"))?;
            let mut page = Box::new([0u8; PAGE]);
            page.copy_from_slice(data);
            if s.pages.insert(i, page).is_some() {
                return Err(format!("RAM page {i} appears twice"));
            }
        }
        if r.at != body.len() {
            return Err(format!("{} bytes after the RAM pages", body.len() - r.at));
        }
        Ok(s)
    }
}

/// Bounds-checked little-endian reads.
struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let left = self.b.len() - self.at;
        if n > left {
            return Err(format!("truncated: {what} needs {n} bytes, {left} remain"));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn take_u64(&mut self, n: u64, what: &str) -> Result<&'a [u8], String> {
        let n = usize::try_from(n).map_err(|_| format!("truncated: {what} claims {n} bytes"))?;
        self.take(n, what)
    }
    fn u32(&mut self, what: &str) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().unwrap()))
    }
    fn u64(&mut self, what: &str) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().unwrap()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Snapshot {
        let mut s = Snapshot::default();
        s.sections.insert("hart0".into(), (0..200u8).collect());
        s.sections.insert("uart".into(), b"fifo".to_vec());
        s.sections.insert("empty".into(), Vec::new());
        let mut ram = vec![0u8; 64 * PAGE + 100];
        ram[5] = 1;
        ram[10 * PAGE + 7] = 0xaa;
        ram[64 * PAGE + 99] = 0x55; // the short last page
        s.set_ram(0x8000_0000, &ram);
        s
    }

    #[test]
    fn a_snapshot_round_trips_and_untouched_pages_cost_nothing() {
        let s = sample();
        assert_eq!(s.pages.len(), 3, "only the pages holding data");
        let bytes = s.encode();
        assert!(bytes.len() < 4 * (PAGE + 8) + 512, "{} bytes", bytes.len());
        let back = Snapshot::decode(&bytes).unwrap();
        assert_eq!(back, s);
        let mut ram = vec![0xffu8; 64 * PAGE + 100];
        back.restore_ram(&mut ram).unwrap();
        let mut want = vec![0u8; 64 * PAGE + 100];
        want[5] = 1;
        want[10 * PAGE + 7] = 0xaa;
        want[64 * PAGE + 99] = 0x55;
        assert_eq!(ram, want, "stored pages back, the rest zeroed");
        let e = back.restore_ram(&mut [0u8; 16]).unwrap_err();
        assert!(
            e.contains("holds 262244 bytes of RAM; this machine has 16"),
            "{e}"
        );
    }

    #[test]
    fn files_are_written_whole_and_bad_ones_are_named() {
        let dir = std::env::temp_dir().join(format!("hs-snapshot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("boot.snap");
        sample().write_atomic(&p).unwrap();
        assert!(!p.with_extension("partial").exists());
        assert_eq!(Snapshot::read(&p).unwrap(), sample());
        std::fs::write(&p, b"ELF...").unwrap();
        let e = Snapshot::read(&p).unwrap_err().to_string();
        assert!(e.contains("boot.snap: not a hartscope snapshot"), "{e}");
        let e = Snapshot::read(&dir.join("missing.snap"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing.snap"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn another_version_is_refused_by_number() {
        let mut b = sample().encode();
        b[8..12].copy_from_slice(&2u32.to_le_bytes());
        let e = Snapshot::decode(&b).unwrap_err();
        assert!(
            e.contains("format version 2; this hartscope reads version 1"),
            "{e}"
        );
    }

    #[test]
    fn every_truncation_and_every_flipped_byte_is_an_error_not_a_panic() {
        let b = sample().encode();
        for cut in 0..b.len() {
            assert!(Snapshot::decode(&b[..cut]).is_err(), "cut at {cut}");
        }
        // flip one bit in each of many positions across the file
        for at in (0..b.len()).step_by(7) {
            let mut c = b.clone();
            c[at] ^= 0x10;
            assert!(Snapshot::decode(&c).is_err(), "flip at {at}");
        }
    }

    #[test]
    fn a_well_hashed_file_with_lying_lengths_is_still_refused() {
        // build bodies by hand, hash them properly: only the structure is wrong
        let seal = |mut body: Vec<u8>| {
            let h = Sha256::digest(&body);
            body.extend_from_slice(&h);
            body
        };
        let head = |sections: u32| {
            let mut v = MAGIC.to_vec();
            v.extend_from_slice(&VERSION.to_le_bytes());
            v.extend_from_slice(&sections.to_le_bytes());
            v
        };
        // a section claiming 2^63 bytes
        let mut b = head(1);
        b.push(1);
        b.push(b'x');
        b.extend_from_slice(&(1u64 << 63).to_le_bytes());
        let e = Snapshot::decode(&seal(b)).unwrap_err();
        assert!(e.contains("section `x`"), "{e}");
        // more pages than the RAM holds
        let mut b = head(0);
        for v in [0x8000_0000u64, 4096, 2] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let e = Snapshot::decode(&seal(b)).unwrap_err();
        assert!(e.contains("2 RAM pages stored for 4096 bytes"), "{e}");
        // a page beyond the RAM
        let mut b = head(0);
        for v in [0x8000_0000u64, 4096, 1, 5] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&[0u8; PAGE]);
        let e = Snapshot::decode(&seal(b)).unwrap_err();
        assert!(e.contains("RAM page 5 lies beyond"), "{e}");
    }
}
