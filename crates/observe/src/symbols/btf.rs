//! A reader of BTF, the kernel's own description of its types
//! (`/sys/kernel/btf/vmlinux`, or the `.BTF` section of `vmlinux`), after
//! the format in Linux's `Documentation/bpf/btf.rst`: just enough to find a
//! struct by name and its members' byte offsets and sizes — which is how
//! [`TaskLayout`] learns where `pid`, `tgid` and `comm` sit in
//! `struct task_struct` of the very kernel a guest runs.
//!
//! Layout of a blob: a header (`magic 0xeB9F`, version, flags, `hdr_len`,
//! then offsets and lengths of the type and string sections, relative to
//! the end of the header), the type section (type ids count from 1 in
//! order; each type is a 12-byte `btf_type` — name offset, `info` with
//! `vlen` in bits 0–15, the kind in bits 24–28 and `kind_flag` in bit 31,
//! then `size` or `type` — followed by kind-specific data), and a string
//! section of NUL-terminated names. Both byte orders are read (the magic
//! tells which).

use std::path::Path;

use crate::error::{ObserveError, Result};

const MAGIC: u16 = 0xeb9f;
/// Fields every header version has (magic … str_len).
const HEADER_MIN: usize = 24;
const TYPE_HEADER: usize = 12;

const KIND_INT: u32 = 1;
const KIND_PTR: u32 = 2;
const KIND_ARRAY: u32 = 3;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_FWD: u32 = 7;
const KIND_TYPEDEF: u32 = 8;
const KIND_VOLATILE: u32 = 9;
const KIND_CONST: u32 = 10;
const KIND_RESTRICT: u32 = 11;
const KIND_FUNC: u32 = 12;
const KIND_FUNC_PROTO: u32 = 13;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
const KIND_FLOAT: u32 = 16;
const KIND_DECL_TAG: u32 = 17;
const KIND_TYPE_TAG: u32 = 18;
const KIND_ENUM64: u32 = 19;

/// Most typedef/qualifier links followed, and most anonymous members
/// descended into (a malformed blob may loop).
const MAX_CHAIN: usize = 32;

/// A parsed BTF blob. Types are indexed, not decoded: each lookup reads
/// the bytes it needs.
#[derive(Clone, Debug)]
pub struct Btf {
    name: String,
    data: Vec<u8>,
    big_endian: bool,
    strs: (usize, usize),
    /// Byte position of type id `i + 1` in `data`.
    types: Vec<usize>,
}

/// One member of a struct or union.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    /// Offset from the start of the outer struct, in bits.
    pub bit_offset: u64,
    /// Width of a bitfield (0: not a bitfield).
    pub bitfield_bits: u32,
    /// The member's type id.
    pub type_id: u32,
}

impl Member {
    /// Byte offset (of the byte holding the first bit, for a bitfield).
    pub fn offset(&self) -> u64 {
        self.bit_offset / 8
    }
}

/// The raw fields of one type.
#[derive(Clone, Copy, Debug)]
struct RawType {
    pos: usize,
    name_off: u32,
    kind: u32,
    vlen: usize,
    kind_flag: bool,
    size_or_type: u32,
}

impl Btf {
    /// Parse `data`; `name` is how errors name it (a path).
    pub fn parse(name: &str, data: Vec<u8>) -> Result<Btf> {
        let bad = |reason: String| ObserveError::Btf {
            name: name.to_string(),
            reason,
        };
        if data.len() < HEADER_MIN {
            return Err(bad(format!(
                "{} bytes is too short for a BTF header",
                data.len()
            )));
        }
        let big_endian = match [data[0], data[1]] {
            m if u16::from_le_bytes(m) == MAGIC => false,
            m if u16::from_be_bytes(m) == MAGIC => true,
            m => return Err(bad(format!("bad magic {:02x}{:02x} (not BTF)", m[0], m[1]))),
        };
        let mut btf = Btf {
            name: name.to_string(),
            data,
            big_endian,
            strs: (0, 0),
            types: Vec::new(),
        };
        if btf.data[2] != 1 {
            return Err(bad(format!(
                "BTF version {} (only version 1 is known)",
                btf.data[2]
            )));
        }
        let hdr_len = btf.u32_at(4).unwrap_or(0) as usize;
        if hdr_len < HEADER_MIN || hdr_len > btf.data.len() {
            return Err(bad(format!("header length {hdr_len} is out of range")));
        }
        let section = |off_at: usize, len_at: usize| -> Option<(usize, usize)> {
            let start = hdr_len.checked_add(btf.u32_at(off_at)? as usize)?;
            let end = start.checked_add(btf.u32_at(len_at)? as usize)?;
            (end <= btf.data.len()).then_some((start, end))
        };
        let types =
            section(8, 12).ok_or_else(|| bad("the type section lies outside the blob".into()))?;
        btf.strs = section(16, 20)
            .ok_or_else(|| bad("the string section lies outside the blob".into()))?;
        let mut pos = types.0;
        while pos < types.1 {
            let t = btf.raw_at(pos).ok_or_else(|| {
                bad(format!(
                    "type {} at byte {pos} is truncated",
                    btf.types.len() + 1
                ))
            })?;
            let extra = match t.kind {
                KIND_PTR | KIND_FWD | KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT
                | KIND_FUNC | KIND_FLOAT | KIND_TYPE_TAG => 0,
                KIND_INT | KIND_VAR | KIND_DECL_TAG => 4,
                KIND_ARRAY => 12,
                KIND_STRUCT | KIND_UNION | KIND_DATASEC | KIND_ENUM64 => 12 * t.vlen,
                KIND_ENUM | KIND_FUNC_PROTO => 8 * t.vlen,
                k => {
                    return Err(bad(format!(
                        "type {} at byte {pos} has unknown kind {k}",
                        btf.types.len() + 1
                    )))
                }
            };
            let next = pos + TYPE_HEADER + extra;
            if next > types.1 {
                return Err(bad(format!(
                    "type {} at byte {pos} runs past the type section",
                    btf.types.len() + 1
                )));
            }
            btf.types.push(pos);
            pos = next;
        }
        Ok(btf)
    }

    /// Read and parse a BTF file.
    pub fn from_file(path: &Path) -> Result<Btf> {
        let data = std::fs::read(path).map_err(|source| ObserveError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Btf::parse(&path.display().to_string(), data)
    }

    /// Number of types (ids run from 1 to this).
    pub fn len(&self) -> usize {
        self.types.len()
    }

    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    fn u32_at(&self, pos: usize) -> Option<u32> {
        let b: [u8; 4] = self.data.get(pos..pos.checked_add(4)?)?.try_into().ok()?;
        Some(if self.big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    }

    fn raw_at(&self, pos: usize) -> Option<RawType> {
        let info = self.u32_at(pos + 4)?;
        Some(RawType {
            pos,
            name_off: self.u32_at(pos)?,
            kind: (info >> 24) & 0x1f,
            vlen: (info & 0xffff) as usize,
            kind_flag: info >> 31 == 1,
            size_or_type: self.u32_at(pos + 8)?,
        })
    }

    fn raw(&self, id: u32) -> Option<RawType> {
        let pos = *self.types.get((id as usize).checked_sub(1)?)?;
        self.raw_at(pos)
    }

    /// The NUL-terminated string at `off` in the string section.
    fn string(&self, off: u32) -> Option<&str> {
        let start = self.strs.0.checked_add(off as usize)?;
        let rest = self.data.get(start..self.strs.1)?;
        let end = rest.iter().position(|&b| b == 0)?;
        std::str::from_utf8(&rest[..end]).ok()
    }

    /// The id of the struct named `name` that has members (a kernel's BTF
    /// may also hold forward declarations of it).
    pub fn struct_id(&self, name: &str) -> Option<u32> {
        (1..=self.types.len() as u32).find(|&id| {
            self.raw(id).is_some_and(|t| {
                t.kind == KIND_STRUCT && t.vlen > 0 && self.string(t.name_off) == Some(name)
            })
        })
    }

    /// The members of struct or union `id`, in order.
    pub fn members(&self, id: u32) -> Vec<Member> {
        let Some(t) = self
            .raw(id)
            .filter(|t| matches!(t.kind, KIND_STRUCT | KIND_UNION))
        else {
            return Vec::new();
        };
        (0..t.vlen)
            .filter_map(|i| {
                let p = t.pos + TYPE_HEADER + 12 * i;
                let (name_off, type_id, off) =
                    (self.u32_at(p)?, self.u32_at(p + 4)?, self.u32_at(p + 8)?);
                let (bit_offset, bitfield_bits) = if t.kind_flag {
                    (off & 0x00ff_ffff, off >> 24)
                } else {
                    (off, 0)
                };
                Some(Member {
                    name: self.string(name_off).unwrap_or("").to_string(),
                    bit_offset: bit_offset as u64,
                    bitfield_bits,
                    type_id,
                })
            })
            .collect()
    }

    /// Member `name` of struct or union `id`, looked for also inside
    /// anonymous struct and union members (its offset is then from the
    /// start of `id`).
    pub fn member(&self, id: u32, name: &str) -> Option<Member> {
        self.member_in(id, name, 0, &mut std::collections::BTreeSet::new())
    }

    /// `searched`: structs already searched without finding `name`. Each is
    /// searched once, so a BTF whose anonymous members lead back to their
    /// own struct (or fan out to the same ones) costs no more than its size.
    fn member_in(
        &self,
        id: u32,
        name: &str,
        depth: usize,
        searched: &mut std::collections::BTreeSet<u32>,
    ) -> Option<Member> {
        if depth > MAX_CHAIN || !searched.insert(id) {
            return None;
        }
        let members = self.members(id);
        if let Some(m) = members.iter().find(|m| m.name == name) {
            return Some(m.clone());
        }
        members.iter().filter(|m| m.name.is_empty()).find_map(|m| {
            let inner = self.resolve(m.type_id)?;
            let mut found = self.member_in(inner, name, depth + 1, searched)?;
            found.bit_offset += m.bit_offset;
            Some(found)
        })
    }

    /// Follow typedefs and qualifiers to the type they name.
    pub fn resolve(&self, mut id: u32) -> Option<u32> {
        for _ in 0..MAX_CHAIN {
            let t = self.raw(id)?;
            match t.kind {
                KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_TYPE_TAG => {
                    id = t.size_or_type
                }
                _ => return Some(id),
            }
        }
        None
    }

    /// Size in bytes of type `id` (pointers are 8 bytes: the kernels read
    /// here are 64-bit).
    pub fn size_of(&self, id: u32) -> Option<u64> {
        self.size_in(id, 0)
    }

    /// `depth` bounds arrays of arrays (an array of itself has no size).
    fn size_in(&self, id: u32, depth: usize) -> Option<u64> {
        if depth > MAX_CHAIN {
            return None;
        }
        let t = self.raw(self.resolve(id)?)?;
        match t.kind {
            KIND_INT | KIND_STRUCT | KIND_UNION | KIND_ENUM | KIND_ENUM64 | KIND_FLOAT
            | KIND_DATASEC => Some(t.size_or_type as u64),
            KIND_PTR => Some(8),
            KIND_ARRAY => {
                let elem = self.u32_at(t.pos + TYPE_HEADER)?;
                let n = self.u32_at(t.pos + TYPE_HEADER + 8)? as u64;
                self.size_in(elem, depth + 1)?.checked_mul(n)
            }
            _ => None,
        }
    }

    fn error(&self, reason: String) -> ObserveError {
        ObserveError::Btf {
            name: self.name.clone(),
            reason,
        }
    }
}

/// Where a Linux task's identity sits in its `struct task_struct` (byte
/// offsets), as the kernel's BTF says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskLayout {
    /// `pid_t pid`: the thread id (perf's `tid`).
    pub pid: u32,
    /// `pid_t tgid`: the process id (perf's `pid`).
    pub tgid: u32,
    /// `char comm[TASK_COMM_LEN]`.
    pub comm: u32,
    pub comm_len: u32,
    /// Size of the whole struct.
    pub size: u32,
}

impl TaskLayout {
    /// Most bytes of `comm` read (Linux's TASK_COMM_LEN is 16).
    pub const MAX_COMM: u32 = 64;

    pub fn from_btf(btf: &Btf) -> Result<TaskLayout> {
        let id = btf
            .struct_id("task_struct")
            .ok_or_else(|| btf.error("no `struct task_struct` with members".into()))?;
        let field = |name: &str, want: Option<u64>| -> Result<(u32, u32)> {
            let m = btf
                .member(id, name)
                .ok_or_else(|| btf.error(format!("`struct task_struct` has no member `{name}`")))?;
            let size = btf
                .size_of(m.type_id)
                .ok_or_else(|| btf.error(format!("the size of task_struct.{name} is unknown")))?;
            if m.bitfield_bits != 0 || m.bit_offset % 8 != 0 || want.is_some_and(|w| w != size) {
                return Err(btf.error(format!(
                    "task_struct.{name} is {size} bytes at bit {} (not a plain field)",
                    m.bit_offset
                )));
            }
            Ok((m.offset() as u32, size as u32))
        };
        let (pid, _) = field("pid", Some(4))?;
        let (tgid, _) = field("tgid", Some(4))?;
        let (comm, comm_len) = field("comm", None)?;
        if comm_len == 0 || comm_len > Self::MAX_COMM {
            return Err(btf.error(format!(
                "task_struct.comm is {comm_len} bytes (expected 1..={})",
                Self::MAX_COMM
            )));
        }
        let size = btf.size_of(id).unwrap_or(0) as u32;
        Ok(TaskLayout {
            pid,
            tgid,
            comm,
            comm_len,
            size,
        })
    }

    pub fn from_btf_file(path: &Path) -> Result<TaskLayout> {
        TaskLayout::from_btf(&Btf::from_file(path)?)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a BTF blob type by type (little- or big-endian).
    pub(crate) struct BlobBuilder {
        big: bool,
        types: Vec<u8>,
        strs: Vec<u8>,
        next_id: u32,
    }

    impl BlobBuilder {
        pub(crate) fn new(big: bool) -> Self {
            BlobBuilder {
                big,
                types: Vec::new(),
                strs: vec![0],
                next_id: 1,
            }
        }
        fn w(&mut self, v: u32) {
            let b = if self.big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            };
            self.types.extend(b);
        }
        fn s(&mut self, name: &str) -> u32 {
            if name.is_empty() {
                return 0;
            }
            let off = self.strs.len() as u32;
            self.strs.extend(name.as_bytes());
            self.strs.push(0);
            off
        }
        fn head(
            &mut self,
            name: &str,
            kind: u32,
            vlen: usize,
            kind_flag: bool,
            size_or_type: u32,
        ) -> u32 {
            let n = self.s(name);
            self.w(n);
            self.w((kind << 24) | vlen as u32 | ((kind_flag as u32) << 31));
            self.w(size_or_type);
            self.next_id += 1;
            self.next_id - 1
        }
        pub(crate) fn int(&mut self, name: &str, size: u32) -> u32 {
            let id = self.head(name, KIND_INT, 0, false, size);
            self.w(size * 8);
            id
        }
        pub(crate) fn ptr(&mut self, to: u32) -> u32 {
            self.head("", KIND_PTR, 0, false, to)
        }
        pub(crate) fn typedef(&mut self, name: &str, to: u32) -> u32 {
            self.head(name, KIND_TYPEDEF, 0, false, to)
        }
        pub(crate) fn array(&mut self, elem: u32, index: u32, n: u32) -> u32 {
            let id = self.head("", KIND_ARRAY, 0, false, 0);
            self.w(elem);
            self.w(index);
            self.w(n);
            id
        }
        pub(crate) fn enumeration(&mut self, name: &str, values: &[(&str, i32)]) -> u32 {
            let id = self.head(name, KIND_ENUM, values.len(), false, 4);
            for &(n, v) in values {
                let o = self.s(n);
                self.w(o);
                self.w(v as u32);
            }
            id
        }
        /// `members`: (name, type, bit offset, bitfield bits).
        pub(crate) fn compound(
            &mut self,
            union: bool,
            name: &str,
            size: u32,
            members: &[(&str, u32, u32, u32)],
        ) -> u32 {
            let kind_flag = members.iter().any(|m| m.3 != 0);
            let kind = if union { KIND_UNION } else { KIND_STRUCT };
            let id = self.head(name, kind, members.len(), kind_flag, size);
            for &(n, t, off, bits) in members {
                let o = self.s(n);
                self.w(o);
                self.w(t);
                self.w(if kind_flag { (bits << 24) | off } else { off });
            }
            id
        }
        pub(crate) fn fwd(&mut self, name: &str) -> u32 {
            self.head(name, KIND_FWD, 0, false, 0)
        }
        pub(crate) fn finish(&self) -> Vec<u8> {
            let w = |v: u32| {
                if self.big {
                    v.to_be_bytes()
                } else {
                    v.to_le_bytes()
                }
            };
            let mut out = Vec::new();
            out.extend(if self.big {
                MAGIC.to_be_bytes()
            } else {
                MAGIC.to_le_bytes()
            });
            out.extend([1, 0]);
            out.extend(w(24));
            out.extend(w(0));
            out.extend(w(self.types.len() as u32));
            out.extend(w(self.types.len() as u32));
            out.extend(w(self.strs.len() as u32));
            out.extend(&self.types);
            out.extend(&self.strs);
            out
        }
    }

    /// A `task_struct` shaped like a randomised kernel's: a bitfield
    /// first, `pid` at 0x100, `tgid` inside an anonymous struct inside an
    /// anonymous union, `comm` a `char[16]` behind a typedef'd element.
    pub(crate) fn task_blob(big: bool) -> Vec<u8> {
        let mut b = BlobBuilder::new(big);
        let int = b.int("int", 4);
        let pid_t = b.typedef("pid_t", int);
        let ch = b.int("char", 1);
        let ch_t = b.typedef("my_char", ch);
        let comm = b.array(ch_t, int, 16);
        let u64t = b.int("long long unsigned int", 8);
        b.fwd("task_struct");
        let _state = b.enumeration("state", &[("RUNNING", 0), ("DEAD", -1)]);
        let inner = b.compound(false, "", 8, &[("pad", int, 0, 0), ("tgid", pid_t, 32, 0)]);
        let anon = b.compound(true, "", 8, &[("", inner, 0, 0), ("both", u64t, 0, 0)]);
        let task = b.next_id;
        let ptr = task + 1;
        let id = b.compound(
            false,
            "task_struct",
            0x400,
            &[
                ("flags", int, 0, 3),
                ("parent", ptr, 64, 0),
                ("pid", pid_t, 0x100 * 8, 0),
                ("", anon, 0x180 * 8, 0),
                ("comm", comm, 0x300 * 8, 0),
            ],
        );
        assert_eq!(id, task);
        b.ptr(task);
        b.finish()
    }

    #[test]
    fn finds_task_struct_fields_in_either_byte_order() {
        for big in [false, true] {
            let btf = Btf::parse("synthetic", task_blob(big)).unwrap();
            assert_eq!(btf.len(), 12);
            let layout = TaskLayout::from_btf(&btf).unwrap();
            assert_eq!(
                layout,
                TaskLayout {
                    pid: 0x100,
                    tgid: 0x184,
                    comm: 0x300,
                    comm_len: 16,
                    size: 0x400
                }
            );
            let id = btf.struct_id("task_struct").unwrap();
            let flags = btf.member(id, "flags").unwrap();
            assert_eq!((flags.bit_offset, flags.bitfield_bits), (0, 3));
            assert_eq!(btf.member(id, "both").unwrap().offset(), 0x180);
            assert_eq!(
                btf.size_of(btf.member(id, "parent").unwrap().type_id),
                Some(8)
            );
            assert!(btf.member(id, "nothing").is_none());
        }
    }

    #[test]
    fn malformed_blobs_are_errors_that_name_the_blob() {
        let good = task_blob(false);
        let msg = |data: Vec<u8>| Btf::parse("x.btf", data).unwrap_err().to_string();
        assert!(msg(good[..10].to_vec()).starts_with("x.btf: 10 bytes is too short"));
        let mut bad = good.clone();
        bad[0] = 0;
        assert!(msg(bad).contains("bad magic"));
        let mut bad = good.clone();
        bad[2] = 2;
        assert!(msg(bad).contains("version 2"));
        // A type section longer than the blob.
        let mut bad = good.clone();
        bad[12..16].copy_from_slice(&(good.len() as u32).to_le_bytes());
        assert!(msg(bad).contains("type section lies outside"));
        // An unknown kind stops the walk (its size cannot be known).
        let mut bad = good.clone();
        bad[24 + 7] = 31;
        assert_eq!(msg(bad), "x.btf: type 1 at byte 24 has unknown kind 31");
        // A struct whose members run past the section.
        let mut b = BlobBuilder::new(false);
        b.head("s", KIND_STRUCT, 3, false, 4);
        assert!(msg(b.finish()).contains("runs past the type section"));
        // Parsed, but no task_struct.
        let mut b = BlobBuilder::new(false);
        b.int("int", 4);
        let e = TaskLayout::from_btf(&Btf::parse("y", b.finish()).unwrap())
            .unwrap_err()
            .to_string();
        assert_eq!(e, "y: no `struct task_struct` with members");
    }

    #[test]
    fn a_pid_of_the_wrong_size_is_refused() {
        let mut b = BlobBuilder::new(false);
        let long = b.int("long", 8);
        let ch = b.int("char", 1);
        let comm = b.array(ch, long, 16);
        b.compound(
            false,
            "task_struct",
            64,
            &[
                ("pid", long, 0, 0),
                ("tgid", long, 64, 0),
                ("comm", comm, 128, 0),
            ],
        );
        let e = TaskLayout::from_btf(&Btf::parse("z", b.finish()).unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("task_struct.pid is 8 bytes"), "{e}");
    }

    /// Found by the `btf` fuzz target: a struct whose many anonymous
    /// members are the struct itself made the member search exponential
    /// (a hang), and an array of itself recursed without end (a stack
    /// overflow). Both now end at once with "not found" / "no size".
    #[test]
    fn self_referring_types_end_the_search_at_once() {
        let mut b = BlobBuilder::new(false);
        let int = b.int("int", 4);
        let me = b.next_id;
        let anon: Vec<(&str, u32, u32, u32)> = (0..200).map(|_| ("", me, 0, 0)).collect();
        assert_eq!(b.compound(false, "task_struct", 64, &anon), me);
        let arr = b.next_id;
        assert_eq!(b.array(arr, int, 4), arr);
        let btf = Btf::parse("loops", b.finish()).unwrap();
        let t0 = std::time::Instant::now();
        assert!(btf.member(me, "pid").is_none());
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(btf.size_of(arr), None);
        let e = TaskLayout::from_btf(&btf).unwrap_err().to_string();
        assert!(e.contains("has no member `pid`"), "{e}");
    }

    /// The host kernel's own BTF, when it exposes one: a real, large blob
    /// (every kind a compiler emits) with a `task_struct` in it.
    #[test]
    fn host_kernel_btf_has_a_plausible_task_struct() {
        let path = Path::new("/sys/kernel/btf/vmlinux");
        let Ok(data) = std::fs::read(path) else {
            eprintln!(
                "no {} on this host: only the synthetic blobs were checked",
                path.display()
            );
            return;
        };
        let btf = Btf::parse("host vmlinux", data).unwrap();
        assert!(btf.len() > 10_000, "{} types", btf.len());
        let t = TaskLayout::from_btf(&btf).unwrap();
        assert_eq!(t.comm_len, 16, "TASK_COMM_LEN");
        assert_eq!(
            t.tgid,
            t.pid + 4,
            "pid_t pid; pid_t tgid; are adjacent in task_struct"
        );
        assert!(t.comm > t.tgid && t.comm + t.comm_len <= t.size, "{t:?}");
        assert!(t.size > 1024, "{t:?}");
    }
}
