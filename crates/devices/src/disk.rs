//! A raw disk image as block devices see it ([`Disk`]): the file, opened
//! read-only with a sparse copy-on-write overlay in host memory (so a run
//! never changes the user's image and a killed run loses nothing), or
//! written through when the configuration asks. virtio-blk and the SD card
//! both keep their data here.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Bytes of a sector: the unit of a disk image's size.
pub const SECTOR: u64 = 512;
/// Granule of the copy-on-write overlay.
pub const BLOCK: u64 = 4096;
/// Host-side granule when zeroing a written-through range.
const CHUNK: usize = 64 * 1024;

/// A raw disk image: the file, and the overlay that takes the writes
/// unless the disk writes through.
pub struct Disk {
    path: PathBuf,
    /// None: a blank disk, all zeros until written (nothing on the host).
    file: Option<File>,
    len: u64,
    /// Copy-on-write blocks (index → its 4 KiB, or `None` for a block of
    /// zeros written by DISCARD / WRITE_ZEROES); `None` when writing through.
    overlay: Option<BTreeMap<u64, Option<Box<[u8]>>>>,
}

/// No disk at all: a stand-in a device holds only while its state is
/// being restored, before its own disk is put back.
impl Default for Disk {
    fn default() -> Self {
        Disk {
            path: PathBuf::new(),
            file: None,
            len: 0,
            overlay: Some(BTreeMap::new()),
        }
    }
}

/// What a snapshot keeps of a disk: its size and the overlay. A disk
/// written through has no overlay to keep (its writes are already in the
/// file), so a snapshot of it is refused.
#[derive(serde::Serialize, serde::Deserialize)]
struct SavedDisk {
    len: u64,
    overlay: BTreeMap<u64, Option<Box<[u8]>>>,
}

impl Disk {
    /// The overlay for a snapshot; Err if the disk writes through.
    pub fn save(&self) -> Result<Vec<u8>, String> {
        let Some(overlay) = &self.overlay else {
            return Err(format!(
                "the disk `{}` writes through to its file, which a snapshot cannot hold (use the default copy-on-write overlay)",
                self.path.display()
            ));
        };
        let saved = SavedDisk {
            len: self.len,
            overlay: overlay.clone(),
        };
        hs_snapshot::state::encode(&saved)
    }
    /// Put back an overlay [`Disk::save`] gave, on the same image.
    pub fn restore(&mut self, data: &[u8]) -> Result<(), String> {
        let saved: SavedDisk = hs_snapshot::state::decode(data)?;
        if saved.len != self.len || self.overlay.is_none() {
            return Err(format!(
                "the snapshot's disk was {} bytes with an overlay; `{}` is {} bytes{}",
                saved.len,
                self.path.display(),
                self.len,
                if self.overlay.is_none() {
                    ", written through"
                } else {
                    ""
                }
            ));
        }
        if saved
            .overlay
            .values()
            .flatten()
            .any(|b| b.len() != BLOCK as usize)
        {
            return Err("an overlay block of the snapshot's disk is not 4096 bytes".into());
        }
        self.overlay = Some(saved.overlay);
        Ok(())
    }
}

/// What a zero block of the overlay reads as.
static ZERO_BLOCK: [u8; BLOCK as usize] = [0; BLOCK as usize];

impl Disk {
    /// Open `path`: read-only with a copy-on-write overlay, or read-write
    /// when `write_through`. Errors are one sentence naming the file.
    pub fn open(path: &Path, write_through: bool) -> Result<Disk, String> {
        let shown = path.display();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(write_through)
            .open(path)
            .map_err(|e| {
                format!(
                    "cannot open the disk image `{shown}`{}: {e}",
                    if write_through { " for writing" } else { "" }
                )
            })?;
        let meta = file
            .metadata()
            .map_err(|e| format!("cannot read the size of the disk image `{shown}`: {e}"))?;
        if !meta.is_file() {
            return Err(format!("the disk image `{shown}` is not a regular file"));
        }
        let len = meta.len();
        if len == 0 || len % SECTOR != 0 {
            return Err(format!("the disk image `{shown}` is {len} bytes, not a positive whole number of 512-byte sectors"));
        }
        Ok(Disk {
            path: path.to_path_buf(),
            file: Some(file),
            len,
            overlay: (!write_through).then(BTreeMap::new),
        })
    }

    /// A blank disk of `len` bytes (a whole number of sectors): reads as
    /// zeros, writes go to the overlay; nothing on the host backs it.
    pub fn blank(len: u64) -> Result<Disk, String> {
        if len == 0 || !len.is_multiple_of(SECTOR) {
            return Err(format!(
                "a blank disk of {len} bytes is not a positive whole number of 512-byte sectors"
            ));
        }
        Ok(Disk {
            path: PathBuf::from("(blank)"),
            file: None,
            len,
            overlay: Some(BTreeMap::new()),
        })
    }

    /// Bytes of the backing file at `off`; zeros for a blank disk.
    fn file_read(&self, buf: &mut [u8], off: u64) -> std::io::Result<()> {
        match &self.file {
            Some(f) => f.read_exact_at(buf, off),
            None => {
                buf.fill(0);
                Ok(())
            }
        }
    }

    fn file_mut(&mut self) -> std::io::Result<&mut File> {
        self.file
            .as_mut()
            .ok_or_else(|| std::io::Error::other("a blank disk has no file to write through"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn writes_through(&self) -> bool {
        self.overlay.is_none()
    }
    /// Blocks held by the overlay.
    pub fn overlay_blocks(&self) -> u64 {
        self.overlay.as_ref().map_or(0, |o| o.len() as u64)
    }
    /// The overlay's blocks in order: (block index, its 4 KiB).
    pub fn overlay(&self) -> impl Iterator<Item = (u64, &[u8])> + '_ {
        self.overlay.iter().flat_map(|o| {
            o.iter()
                .map(|(k, v)| (*k, v.as_deref().unwrap_or(&ZERO_BLOCK[..])))
        })
    }

    fn in_range(&self, off: u64, len: usize) -> bool {
        off.checked_add(len as u64)
            .is_some_and(|end| end <= self.len)
    }

    fn out_of_range(&self) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "past the end of the disk")
    }

    /// Read `buf.len()` bytes at byte offset `off` (the disk as the guest sees it).
    pub fn read(&self, off: u64, buf: &mut [u8]) -> std::io::Result<()> {
        if !self.in_range(off, buf.len()) {
            return Err(self.out_of_range());
        }
        let Some(overlay) = &self.overlay else {
            return self.file_read(buf, off);
        };
        // Walk block by block; consecutive blocks the overlay lacks are read
        // from the file in one call.
        let mut done = 0usize;
        let mut miss_from: Option<usize> = None;
        while done < buf.len() {
            let pos = off + done as u64;
            let (blk, within) = (pos / BLOCK, (pos % BLOCK) as usize);
            let n = (BLOCK as usize - within).min(buf.len() - done);
            if let Some(b) = overlay.get(&blk) {
                if let Some(from) = miss_from.take() {
                    self.file_read(&mut buf[from..done], off + from as u64)?;
                }
                let b = b.as_deref().unwrap_or(&ZERO_BLOCK[..]);
                buf[done..done + n].copy_from_slice(&b[within..within + n]);
            } else if miss_from.is_none() {
                miss_from = Some(done);
            }
            done += n;
        }
        if let Some(from) = miss_from {
            self.file_read(&mut buf[from..], off + from as u64)?;
        }
        Ok(())
    }

    /// Write `data` at byte offset `off`: into the overlay, or the file when
    /// writing through.
    pub fn write(&mut self, off: u64, data: &[u8]) -> std::io::Result<()> {
        if !self.in_range(off, data.len()) {
            return Err(self.out_of_range());
        }
        if self.overlay.is_none() {
            return self.file_mut()?.write_all_at(data, off);
        }
        let mut done = 0usize;
        while done < data.len() {
            let pos = off + done as u64;
            let (blk, within) = (pos / BLOCK, (pos % BLOCK) as usize);
            let n = (BLOCK as usize - within).min(data.len() - done);
            let b = self.block_mut(blk, n == BLOCK as usize)?;
            b[within..within + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
        Ok(())
    }

    /// Overlay block `blk` as bytes to change, made on first use: from the
    /// file (zeros past its end) unless `whole` (the caller overwrites all of
    /// it), from zeros if it is a zero block. Only called with an overlay.
    fn block_mut(&mut self, blk: u64, whole: bool) -> std::io::Result<&mut [u8]> {
        let fill = match self.overlay.as_ref().and_then(|o| o.get(&blk)) {
            Some(Some(_)) => None,
            Some(None) => Some(vec![0u8; BLOCK as usize].into_boxed_slice()),
            None => {
                let mut fresh = vec![0u8; BLOCK as usize].into_boxed_slice();
                if !whole {
                    let start = blk * BLOCK;
                    let valid = self.len.saturating_sub(start).min(BLOCK) as usize;
                    self.file_read(&mut fresh[..valid], start)?;
                }
                Some(fresh)
            }
        };
        let Some(overlay) = self.overlay.as_mut() else {
            return Err(std::io::Error::other("the disk writes through"));
        };
        let entry = overlay.entry(blk).or_insert(None);
        if let Some(f) = fill {
            *entry = Some(f);
        }
        entry
            .as_deref_mut()
            .ok_or_else(|| std::io::Error::other("overlay block missing"))
    }

    /// Make `[off, off + len)` read as zeros: whole overlay blocks become
    /// zero blocks (no 4 KiB each), partial ones are zeroed in place; when
    /// writing through, zeros are written to the file.
    pub fn zero(&mut self, off: u64, len: u64) -> std::io::Result<()> {
        if off.checked_add(len).is_none_or(|end| end > self.len) {
            return Err(self.out_of_range());
        }
        if self.overlay.is_none() {
            let zeros = vec![0u8; CHUNK.min(len as usize)];
            let mut done = 0u64;
            while done < len {
                let n = (len - done).min(CHUNK as u64) as usize;
                self.file_mut()?.write_all_at(&zeros[..n], off + done)?;
                done += n as u64;
            }
            return Ok(());
        }
        let mut done = 0u64;
        while done < len {
            let pos = off + done;
            let (blk, within) = (pos / BLOCK, (pos % BLOCK) as usize);
            let n = (BLOCK - within as u64).min(len - done) as usize;
            if n == BLOCK as usize {
                if let Some(o) = self.overlay.as_mut() {
                    o.insert(blk, None);
                }
            } else {
                self.block_mut(blk, false)?[within..within + n].fill(0);
            }
            done += n as u64;
        }
        Ok(())
    }

    /// Make written data durable: the file's data when writing through;
    /// nothing to do for the overlay (it lives as long as the run).
    pub fn flush(&mut self) -> std::io::Result<()> {
        match self.overlay {
            None => self.file_mut()?.sync_data(),
            Some(_) => Ok(()),
        }
    }

    /// FNV-1a 64 over the overlay (each block's index, little-endian, then
    /// its bytes), 0 when it is empty: what a test compares with what the
    /// guest wrote.
    pub fn overlay_fnv1a(&self) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        let mut any = false;
        for (blk, data) in self.overlay() {
            any = true;
            for &b in blk.to_le_bytes().iter().chain(data) {
                h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
            }
        }
        if any {
            h
        } else {
            0
        }
    }
}

/// Where a block device's data comes from, as a `[board.NAME]` table says
/// it: `file = "PATH"` (relative to the working directory) with
/// `write-through` (default false), or `blank-mib = N` — a blank disk of
/// N MiB that only the run's overlay holds (benchmarks that need no data).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiskSpec {
    File { path: PathBuf, write_through: bool },
    Blank { bytes: u64 },
}

impl DiskSpec {
    /// Read `file` / `blank-mib` / `write-through` and open the disk once,
    /// so a missing or mis-sized image is found when the description loads.
    pub fn parse(p: &mut crate::resources::Params) -> Result<DiskSpec, crate::ParamError> {
        use crate::ParamError;
        let file = p.string("file")?;
        let blank = p.int("blank-mib", 0, 0, 1 << 20)?;
        let write_through = p.bool("write-through", false)?;
        let spec = match (file, blank) {
            (Some(_), b) if b > 0 => {
                return Err(ParamError {
                    key: "blank-mib".into(),
                    message: "cannot be given with `file` (a disk is one or the other)".into(),
                })
            }
            (Some(f), _) => DiskSpec::File {
                path: PathBuf::from(f),
                write_through,
            },
            (None, 0) => {
                return Err(ParamError {
                    key: "file".into(),
                    message: "is missing (the raw disk image this device reads; or `blank-mib = N` for a blank disk)".into(),
                })
            }
            (None, mib) => {
                if write_through {
                    return Err(ParamError {
                        key: "write-through".into(),
                        message: "cannot be true on a blank disk (`blank-mib`): there is no file to write".into(),
                    });
                }
                DiskSpec::Blank {
                    bytes: mib as u64 * 1024 * 1024,
                }
            }
        };
        spec.open().map_err(|message| ParamError {
            key: match spec {
                DiskSpec::File { .. } => "file".into(),
                DiskSpec::Blank { .. } => "blank-mib".into(),
            },
            message,
        })?;
        Ok(spec)
    }

    pub fn writes_through(&self) -> bool {
        matches!(
            self,
            DiskSpec::File {
                write_through: true,
                ..
            }
        )
    }

    pub fn open(&self) -> Result<Disk, String> {
        match self {
            DiskSpec::File {
                path,
                write_through,
            } => Disk::open(path, *write_through),
            DiskSpec::Blank { bytes } => Disk::blank(*bytes),
        }
    }

    /// The configuration key an error about the disk names.
    pub fn key(&self) -> &'static str {
        match self {
            DiskSpec::File { .. } => "file",
            DiskSpec::Blank { .. } => "blank-mib",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Params;
    use crate::{DeviceConfig, ParamValue};

    #[test]
    fn blank_disks_read_zeros_and_keep_writes_in_the_overlay() {
        let mut d = Disk::blank(1 << 20).unwrap();
        let mut b = [1u8; 700];
        d.read(4000, &mut b).unwrap();
        assert!(b.iter().all(|&x| x == 0));
        d.write(5000, &[7u8; 100]).unwrap();
        d.read(4990, &mut b[..20]).unwrap();
        assert_eq!(
            &b[..20],
            &[0u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7]
        );
        assert!(d.flush().is_ok());
        assert!(Disk::blank(1000).is_err());
    }

    #[test]
    fn disk_spec_refuses_both_or_neither_and_blank_write_through() {
        let parse = |cfg: DeviceConfig| {
            let mut p = Params::new(&cfg);
            DiskSpec::parse(&mut p).map_err(|e| e.to_string())
        };
        let c = DeviceConfig::new("d", "virtio-blk");
        assert!(parse(c.clone())
            .unwrap_err()
            .starts_with("key `file`: is missing"));
        let both = c
            .clone()
            .with("file", ParamValue::Str("/x".into()))
            .with("blank-mib", ParamValue::Int(4));
        assert_eq!(
            parse(both).unwrap_err(),
            "key `blank-mib`: cannot be given with `file` (a disk is one or the other)"
        );
        let wt = c
            .clone()
            .with("blank-mib", ParamValue::Int(4))
            .with("write-through", ParamValue::Bool(true));
        assert!(parse(wt)
            .unwrap_err()
            .starts_with("key `write-through`: cannot be true on a blank disk"));
        let ok = c.with("blank-mib", ParamValue::Int(4));
        assert_eq!(parse(ok).unwrap(), DiskSpec::Blank { bytes: 4 << 20 });
    }
}
