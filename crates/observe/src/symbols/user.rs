//! Static user programs: their symbols and code bytes, so the binary that
//! runs in a sampled address space can be recognised from the instruction
//! bytes at a user PC (every program of a guest image is a static non-PIE
//! ELF linked at the same address, so the address alone cannot tell them
//! apart).

use std::path::Path;

use object::{Object, ObjectSegment, SegmentFlags};

use crate::error::{ObserveError, Result};
use crate::symbols::table::SymbolTable;

/// ELF `PF_X`: the segment is executable.
const PF_X: u32 = 1;

/// One unstripped user program.
#[derive(Clone, Debug)]
pub struct UserBinary {
    table: SymbolTable,
    /// Executable segments: link address and file bytes.
    code: Vec<(u64, Vec<u8>)>,
}

impl UserBinary {
    /// Read an ELF file's symbols and executable segments; the binary is
    /// named after the file (`busybox`, `nullsys`).
    pub fn from_elf_file(path: &Path) -> Result<UserBinary> {
        let bytes = std::fs::read(path).map_err(|source| ObserveError::Io {
            path: path.into(),
            source,
        })?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Self::from_elf_bytes(&name, &bytes).map_err(|e| match e {
            ObserveError::Elf { reason, .. } => ObserveError::Elf {
                name: path.display().to_string(),
                reason,
            },
            other => other,
        })
    }

    pub fn from_elf_bytes(name: &str, bytes: &[u8]) -> Result<UserBinary> {
        let table = SymbolTable::from_elf_bytes(name, bytes)?;
        let file = object::File::parse(bytes).map_err(|e| ObserveError::Elf {
            name: name.into(),
            reason: e.to_string(),
        })?;
        let mut code = Vec::new();
        for seg in file.segments() {
            let exec = matches!(seg.flags(), SegmentFlags::Elf { p_flags } if p_flags & PF_X != 0);
            if !exec {
                continue;
            }
            let data = seg.data().map_err(|e| ObserveError::Elf {
                name: name.into(),
                reason: e.to_string(),
            })?;
            if !data.is_empty() {
                code.push((seg.address(), data.to_vec()));
            }
        }
        if code.is_empty() {
            return Err(ObserveError::Elf {
                name: name.into(),
                reason: "no executable segment".into(),
            });
        }
        Ok(UserBinary { table, code })
    }

    /// A binary from a table and code ranges (tests, synthetic programs).
    pub fn from_parts(table: SymbolTable, code: Vec<(u64, Vec<u8>)>) -> UserBinary {
        UserBinary { table, code }
    }

    pub fn name(&self) -> &str {
        self.table.name()
    }

    pub fn table(&self) -> &SymbolTable {
        &self.table
    }

    /// `[start, end)` covering every executable segment.
    pub fn code_span(&self) -> (u64, u64) {
        let start = self.code.iter().map(|(a, _)| *a).min().unwrap_or(0);
        let end = self
            .code
            .iter()
            .map(|(a, d)| a + d.len() as u64)
            .max()
            .unwrap_or(0);
        (start, end)
    }

    /// The file's code bytes at `[addr, addr + len)`, if one executable
    /// segment holds all of them.
    pub fn code_at(&self, addr: u64, len: usize) -> Option<&[u8]> {
        self.code.iter().find_map(|(start, data)| {
            let off = addr.checked_sub(*start)? as usize;
            data.get(off..off.checked_add(len)?)
        })
    }

    /// Do the guest bytes `seen`, read at `addr`, equal this binary's code there?
    pub fn matches(&self, addr: u64, seen: &[u8]) -> bool {
        !seen.is_empty() && self.code_at(addr, seen.len()) == Some(seen)
    }

    /// Is `ra` a plausible return address: inside the code, right after a
    /// call (`jal`/`jalr` writing `ra`, or `c.jalr`)? Frame-pointer chains
    /// through code built without frame pointers yield garbage; this keeps
    /// only links a call could have made.
    pub fn follows_call(&self, ra: u64) -> bool {
        if let Some(b) = ra.checked_sub(4).and_then(|a| self.code_at(a, 4)) {
            let w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            let rd = (w >> 7) & 31;
            let opcode = w & 0x7f;
            // The 4-byte form must not be the tail of a compressed pair:
            // its low bits say whether it is a 32-bit instruction.
            if w & 3 == 3 && rd == 1 && (opcode == 0x6f || (opcode == 0x67 && (w >> 12) & 7 == 0)) {
                return true;
            }
        }
        if let Some(b) = ra.checked_sub(2).and_then(|a| self.code_at(a, 2)) {
            let h = u16::from_le_bytes([b[0], b[1]]);
            // c.jalr: funct4 = 1001, rs1 != 0, rs2 = 0, op = 10.
            if h & 0xf07f == 0x9002 && (h >> 7) & 31 != 0 {
                return true;
            }
        }
        false
    }
}

/// Recognises which of a set of binaries a code window belongs to.
#[derive(Clone, Debug, Default)]
pub struct UserIdentifier {
    binaries: Vec<UserBinary>,
}

impl UserIdentifier {
    pub fn new(binaries: Vec<UserBinary>) -> UserIdentifier {
        UserIdentifier { binaries }
    }

    pub fn binaries(&self) -> &[UserBinary] {
        &self.binaries
    }

    pub fn is_empty(&self) -> bool {
        self.binaries.is_empty()
    }

    /// The only binary whose code at `addr` equals `seen`; `None` when no
    /// binary or more than one matches (then the address space stays unknown
    /// rather than being guessed).
    pub fn identify(&self, addr: u64, seen: &[u8]) -> Option<usize> {
        let mut found = None;
        for (i, b) in self.binaries.iter().enumerate() {
            if b.matches(addr, seen) {
                if found.is_some() {
                    return None;
                }
                found = Some(i);
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(name: &str, code: &[u8]) -> UserBinary {
        let table = SymbolTable::from_ranges(
            name,
            [(0x10000, 0x10000 + code.len() as u64, "main".to_string())],
        );
        UserBinary::from_parts(table, vec![(0x10000, code.to_vec())])
    }

    #[test]
    fn identifies_by_code_bytes() {
        let a = bin("a", &[1, 2, 3, 4, 5, 6, 7, 8]);
        let b = bin("b", &[1, 2, 3, 4, 9, 9, 9, 9]);
        assert_eq!(a.code_span(), (0x10000, 0x10008));
        let id = UserIdentifier::new(vec![a, b]);
        assert_eq!(id.identify(0x10004, &[5, 6]), Some(0));
        assert_eq!(id.identify(0x10004, &[9, 9, 9, 9]), Some(1));
        assert_eq!(id.identify(0x10000, &[1, 2]), None, "ambiguous");
        assert_eq!(id.identify(0x10006, &[7, 8, 0]), None, "runs past the code");
        assert_eq!(id.identify(0x20000, &[1]), None);
        assert_eq!(id.identify(0x10000, &[]), None);
    }

    #[test]
    fn return_addresses_must_follow_a_call() {
        // jal ra, +8 (0x008000ef); c.jalr a5 (0x9782); addi a0,a0,1 (0x00150513); c.nop
        let mut code = Vec::new();
        code.extend(0x008000efu32.to_le_bytes());
        code.extend(0x9782u16.to_le_bytes());
        code.extend(0x00150513u32.to_le_bytes());
        code.extend(0x0001u16.to_le_bytes());
        let b = bin("x", &code);
        assert!(b.follows_call(0x10004), "after jal ra");
        assert!(b.follows_call(0x10006), "after c.jalr");
        assert!(!b.follows_call(0x1000a), "after addi");
        assert!(!b.follows_call(0x10000));
        assert!(!b.follows_call(0x30000));
        // jalr zero (a plain jump) is not a call: 0x00078067 = jalr x0, 0(a5)
        let j = bin("j", &0x00078067u32.to_le_bytes());
        assert!(!j.follows_call(0x10004));
    }
}
