//! A byte-reproducible writer (and a reader, for checks) of the `newc` cpio
//! format Linux unpacks as an initramfs. Every entry is owned by root with
//! mtime 0, and entries are written in the order given (callers sort), so
//! the same inputs always give the same bytes.

use crate::error::{GuestError, Result};

const MAGIC: &[u8; 6] = b"070701";
const TRAILER: &str = "TRAILER!!!";

pub const S_IFDIR: u32 = 0o040000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFLNK: u32 = 0o120000;
pub const S_IFCHR: u32 = 0o020000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File(Vec<u8>),
    Symlink(String),
    CharDev { major: u32, minor: u32 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Path inside the archive, without a leading `/`.
    pub name: String,
    /// Permission bits only (e.g. 0o755); the file type comes from `kind`.
    pub perm: u32,
    pub kind: Kind,
}

impl Entry {
    pub fn dir(name: &str, perm: u32) -> Self {
        Entry {
            name: name.to_string(),
            perm,
            kind: Kind::Dir,
        }
    }
    pub fn file(name: &str, perm: u32, data: Vec<u8>) -> Self {
        Entry {
            name: name.to_string(),
            perm,
            kind: Kind::File(data),
        }
    }
    pub fn symlink(name: &str, target: &str) -> Self {
        Entry {
            name: name.to_string(),
            perm: 0o777,
            kind: Kind::Symlink(target.to_string()),
        }
    }
    pub fn chardev(name: &str, perm: u32, major: u32, minor: u32) -> Self {
        Entry {
            name: name.to_string(),
            perm,
            kind: Kind::CharDev { major, minor },
        }
    }

    fn mode(&self) -> u32 {
        let ty = match self.kind {
            Kind::Dir => S_IFDIR,
            Kind::File(_) => S_IFREG,
            Kind::Symlink(_) => S_IFLNK,
            Kind::CharDev { .. } => S_IFCHR,
        };
        ty | (self.perm & 0o7777)
    }

    fn data(&self) -> &[u8] {
        match &self.kind {
            Kind::File(d) => d,
            Kind::Symlink(t) => t.as_bytes(),
            _ => &[],
        }
    }
}

fn pad4(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

fn header(
    out: &mut Vec<u8>,
    ino: u32,
    mode: u32,
    nlink: u32,
    filesize: u32,
    rdev: (u32, u32),
    namesize: u32,
) {
    out.extend_from_slice(MAGIC);
    // ino mode uid gid nlink mtime filesize devmajor devminor rdevmajor rdevminor namesize check
    for v in [
        ino, mode, 0, 0, nlink, 0, filesize, 0, 0, rdev.0, rdev.1, namesize, 0,
    ] {
        out.extend_from_slice(format!("{v:08X}").as_bytes());
    }
}

/// Appends a complete archive (entries then the trailer) to `out`, first
/// padding `out` to a 4-byte boundary as Linux requires for a second archive.
pub fn write_archive(out: &mut Vec<u8>, entries: &[Entry]) -> Result<()> {
    pad4(out);
    for (ino, e) in (1u32..).zip(entries) {
        let name = e.name.trim_start_matches('/');
        if name.is_empty() || name.contains('\0') {
            return Err(GuestError::Cpio {
                name: e.name.clone(),
                message: "the name is empty or holds a NUL byte".into(),
            });
        }
        let data = e.data();
        let size = u32::try_from(data.len()).map_err(|_| GuestError::Cpio {
            name: e.name.clone(),
            message: "the file is larger than 4 GiB".into(),
        })?;
        let nlink = if matches!(e.kind, Kind::Dir) { 2 } else { 1 };
        let rdev = match e.kind {
            Kind::CharDev { major, minor } => (major, minor),
            _ => (0, 0),
        };
        header(out, ino, e.mode(), nlink, size, rdev, name.len() as u32 + 1);
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        pad4(out);
        out.extend_from_slice(data);
        pad4(out);
    }
    header(out, 0, 0, 1, 0, (0, 0), TRAILER.len() as u32 + 1);
    out.extend_from_slice(TRAILER.as_bytes());
    out.push(0);
    pad4(out);
    Ok(())
}

/// One entry as read back: enough to check what an archive holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedEntry {
    pub name: String,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub mtime: u32,
    pub rdev: (u32, u32),
    pub data: Vec<u8>,
}

/// Reads every archive in `bytes` (concatenated archives, zero padding
/// between them allowed, as Linux accepts) and returns all entries in order.
pub fn read_archives(bytes: &[u8]) -> std::result::Result<Vec<ParsedEntry>, String> {
    let mut pos = 0usize;
    let mut entries = Vec::new();
    while pos < bytes.len() {
        if bytes[pos] == 0 {
            pos += 1;
            continue;
        }
        if !pos.is_multiple_of(4) {
            return Err(format!("archive at offset {pos} is not 4-byte aligned"));
        }
        let hdr = bytes
            .get(pos..pos + 110)
            .ok_or_else(|| format!("truncated header at offset {pos}"))?;
        if &hdr[..6] != MAGIC {
            return Err(format!("bad magic at offset {pos}"));
        }
        let field = |i: usize| -> std::result::Result<u32, String> {
            let s = std::str::from_utf8(&hdr[6 + i * 8..6 + i * 8 + 8])
                .map_err(|_| format!("bad header at {pos}"))?;
            u32::from_str_radix(s, 16).map_err(|_| format!("bad hex field `{s}` at offset {pos}"))
        };
        let (mode, uid, gid, mtime, filesize) = (
            field(1)?,
            field(2)?,
            field(3)?,
            field(5)?,
            field(6)? as usize,
        );
        let rdev = (field(9)?, field(10)?);
        let namesize = field(11)? as usize;
        let name_start = pos + 110;
        let name_bytes = bytes
            .get(name_start..name_start + namesize)
            .ok_or("truncated name")?;
        let name = String::from_utf8_lossy(&name_bytes[..namesize.saturating_sub(1)]).into_owned();
        let data_start = (name_start + namesize + 3) & !3;
        let data = bytes
            .get(data_start..data_start + filesize)
            .ok_or("truncated data")?
            .to_vec();
        pos = (data_start + filesize + 3) & !3;
        if name == TRAILER {
            continue;
        }
        entries.push(ParsedEntry {
            name,
            mode,
            uid,
            gid,
            mtime,
            rdev,
            data,
        });
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_archive_reads_back() {
        let entries = vec![
            Entry::dir("bin", 0o755),
            Entry::file("bin/hello", 0o755, b"#!/bin/sh\necho hi\n".to_vec()),
            Entry::symlink("bin/sh", "busybox"),
            Entry::chardev("dev/console", 0o600, 5, 1),
            Entry::file("empty", 0o644, Vec::new()),
        ];
        let mut out = Vec::new();
        write_archive(&mut out, &entries).unwrap();
        assert_eq!(out.len() % 4, 0);
        let parsed = read_archives(&out).unwrap();
        let names: Vec<_> = parsed.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            ["bin", "bin/hello", "bin/sh", "dev/console", "empty"]
        );
        assert_eq!(parsed[0].mode, S_IFDIR | 0o755);
        assert_eq!(parsed[1].data, b"#!/bin/sh\necho hi\n");
        assert_eq!(parsed[1].mode, S_IFREG | 0o755);
        assert_eq!(parsed[2].mode, S_IFLNK | 0o777);
        assert_eq!(parsed[2].data, b"busybox");
        assert_eq!(parsed[3].rdev, (5, 1));
        assert!(parsed
            .iter()
            .all(|e| e.uid == 0 && e.gid == 0 && e.mtime == 0));
    }

    #[test]
    fn same_entries_give_same_bytes_and_second_archive_is_aligned() {
        let a = vec![Entry::file("x", 0o644, vec![1, 2, 3])];
        let mut one = Vec::new();
        write_archive(&mut one, &a).unwrap();
        let mut two = Vec::new();
        write_archive(&mut two, &a).unwrap();
        assert_eq!(one, two);

        // A second archive after a prefix of odd length starts 4-byte aligned.
        let mut joined = one.clone();
        joined.extend_from_slice(&[0, 0, 0]);
        write_archive(&mut joined, &[Entry::file("y", 0o644, b"abcde".to_vec())]).unwrap();
        assert_eq!(&joined[one.len() + 4..one.len() + 10], MAGIC);
        let parsed = read_archives(&joined).unwrap();
        assert_eq!(
            parsed.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
            ["x", "y"]
        );
        assert_eq!(parsed[1].data, b"abcde");
    }

    #[test]
    fn bad_names_are_refused() {
        let mut out = Vec::new();
        let err = write_archive(&mut out, &[Entry::file("/", 0o644, vec![])]).unwrap_err();
        assert!(err.to_string().contains("empty"), "{err}");
    }
}
