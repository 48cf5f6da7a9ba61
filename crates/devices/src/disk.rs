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
    file: File,
    len: u64,
    /// Copy-on-write blocks (index → its 4 KiB, or `None` for a block of
    /// zeros written by DISCARD / WRITE_ZEROES); `None` when writing through.
    overlay: Option<BTreeMap<u64, Option<Box<[u8]>>>>,
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
            file,
            len,
            overlay: (!write_through).then(BTreeMap::new),
        })
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
            return self.file.read_exact_at(buf, off);
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
                    self.file
                        .read_exact_at(&mut buf[from..done], off + from as u64)?;
                }
                let b = b.as_deref().unwrap_or(&ZERO_BLOCK[..]);
                buf[done..done + n].copy_from_slice(&b[within..within + n]);
            } else if miss_from.is_none() {
                miss_from = Some(done);
            }
            done += n;
        }
        if let Some(from) = miss_from {
            self.file
                .read_exact_at(&mut buf[from..], off + from as u64)?;
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
            return self.file.write_all_at(data, off);
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
                    self.file.read_exact_at(&mut fresh[..valid], start)?;
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
                self.file.write_all_at(&zeros[..n], off + done)?;
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
            None => self.file.sync_data(),
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
