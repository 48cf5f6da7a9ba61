//! Symbol tables of one binary (ELF) or one kernel (`/proc/kallsyms`), with
//! address lookups by binary search.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use object::{
    Object, ObjectKind, ObjectSection, ObjectSegment, ObjectSymbol, SectionKind, SymbolKind,
};
use serde::{Deserialize, Serialize};

use crate::error::{ObserveError, Result};

/// Assumed size of a kallsyms symbol that no later symbol bounds: kallsyms
/// carries no sizes, and a page is a generous bound for the last function.
const LAST_KALLSYMS_SYMBOL_SPAN: u64 = 4096;
/// Starts per step of a table's coarse index.
const COARSE: usize = 32;

/// A function (or code label) covering `[start, end)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Symbol {
    pub start: u64,
    pub end: u64,
    pub name: String,
    /// Kernel module the symbol belongs to (kallsyms `[mod]` suffix;
    /// one shared name per module).
    pub module: Option<Arc<str>>,
}

/// A loadable segment of an ELF file, for turning a runtime mapping into a
/// load bias.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadSegment {
    pub vaddr: u64,
    pub file_offset: u64,
    pub file_size: u64,
}

/// The symbols of one binary, sorted by start address. Not serialisable on
/// purpose: the lookup indexes must stay consistent with the symbols, so a
/// table is always rebuilt from its source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolTable {
    name: String,
    symbols: Vec<Symbol>,
    /// `symbols[i].start`, apart so the binary search touches 8 bytes a step.
    starts: Vec<u64>,
    /// `max_end[i]` = largest `end` among `symbols[..=i]`: lets a lookup stop
    /// early and still find a symbol that encloses a nested one.
    max_end: Vec<u64>,
    /// Every [`COARSE`]-th start: a first search in a few cache lines,
    /// then one within `COARSE` starts (a kernel with its modules has
    /// some 400,000 symbols).
    coarse: Vec<u64>,
    segments: Vec<LoadSegment>,
    /// Position-independent (ET_DYN): runtime addresses carry a load bias.
    position_independent: bool,
}

/// How strongly a symbol claims an address it shares with others; the
/// highest-ranked alias names the address.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Binding {
    Local,
    Weak,
    Global,
}

struct Candidate {
    start: u64,
    /// `None`: no size known; bounded by the next symbol.
    size: Option<u64>,
    /// Upper bound for an unsized symbol (end of its section).
    limit: u64,
    name: String,
    module: Option<Arc<str>>,
    typed_function: bool,
    binding: Binding,
}

impl SymbolTable {
    /// The binary's name as reports show it (`busybox`, `[kernel.kallsyms]`).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn symbols(&self) -> &[Symbol] {
        &self.symbols
    }

    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    /// The symbol covering `addr` and the offset of `addr` inside it.
    pub fn lookup(&self, addr: u64) -> Option<(&str, u64)> {
        self.lookup_symbol(addr)
            .map(|s| (s.name.as_str(), addr - s.start))
    }

    /// The innermost symbol covering `addr`.
    pub fn lookup_symbol(&self, addr: u64) -> Option<&Symbol> {
        // the first start above `addr` is in the coarse step it falls in
        let c = self.coarse.partition_point(|&s| s <= addr);
        let lo = c.saturating_sub(1) * COARSE;
        let hi = (c * COARSE).min(self.starts.len());
        let mut i = lo + self.starts[lo..hi].partition_point(|&s| s <= addr);
        while i > 0 {
            i -= 1;
            if self.max_end[i] <= addr {
                return None;
            }
            if addr < self.symbols[i].end {
                return Some(&self.symbols[i]);
            }
        }
        None
    }

    /// The first symbol with this name (in address order).
    pub fn by_name(&self, name: &str) -> Option<&Symbol> {
        self.symbols.iter().find(|s| s.name == name)
    }

    /// Load bias of a runtime mapping of this file: what to subtract from a
    /// runtime address to get the address the symbols use. `map_start` and
    /// `map_offset` are a `/proc/<pid>/maps` entry's start and file offset.
    pub fn bias_for_mapping(&self, map_start: u64, map_offset: u64) -> u64 {
        if !self.position_independent {
            return 0;
        }
        const PAGE: u64 = 4096;
        let seg = self.segments.iter().find(|s| {
            (s.file_offset & !(PAGE - 1)) <= map_offset
                && map_offset < s.file_offset + s.file_size.max(1)
        });
        let file_vaddr = match seg {
            Some(s) => s.vaddr.wrapping_sub(s.file_offset).wrapping_add(map_offset),
            None => map_offset,
        };
        map_start.wrapping_sub(file_vaddr)
    }

    /// Read an ELF file's function symbols (`.symtab`, or `.dynsym` when the
    /// file is stripped). The table is named after the file's base name.
    pub fn from_elf_file(path: &Path) -> Result<SymbolTable> {
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

    /// Read function symbols from ELF bytes; `name` names the binary.
    pub fn from_elf_bytes(name: &str, bytes: &[u8]) -> Result<SymbolTable> {
        let elf_err = |reason: String| ObserveError::Elf {
            name: name.to_string(),
            reason,
        };
        let file = object::File::parse(bytes).map_err(|e| elf_err(e.to_string()))?;
        if file.format() != object::BinaryFormat::Elf {
            return Err(elf_err(format!("it is {:?}, not ELF", file.format())));
        }
        let mut candidates = Vec::new();
        let mut from_symtab = true;
        collect_elf_symbols(&file, file.symbols(), false, &mut candidates);
        if candidates.is_empty() {
            from_symtab = false;
            collect_elf_symbols(&file, file.dynamic_symbols(), true, &mut candidates);
        }
        if candidates.is_empty() {
            let which = if from_symtab {
                "no code symbols in .symtab or .dynsym"
            } else {
                "no code symbols"
            };
            return Err(elf_err(which.to_string()));
        }
        let segments = file
            .segments()
            .map(|s| {
                let (file_offset, file_size) = s.file_range();
                LoadSegment {
                    vaddr: s.address(),
                    file_offset,
                    file_size,
                }
            })
            .collect();
        let mut table = build(name, candidates);
        table.segments = segments;
        table.position_independent = file.kind() == ObjectKind::Dynamic;
        Ok(table)
    }

    /// Read a `/proc/kallsyms` file.
    pub fn from_kallsyms_file(path: &Path) -> Result<SymbolTable> {
        let bytes = std::fs::read(path).map_err(|source| ObserveError::Io {
            path: path.into(),
            source,
        })?;
        Self::from_kallsyms(
            &path.display().to_string(),
            &String::from_utf8_lossy(&bytes),
        )
    }

    /// Parse `/proc/kallsyms` text (`ADDRESS TYPE NAME [\t[module]]` lines).
    /// Text symbols (t, T, w, W) are kept; kallsyms has no sizes, so a
    /// symbol ends where the next symbol of the same kernel or module starts.
    /// `source` names the text in errors. The table is `[kernel.kallsyms]`.
    pub fn from_kallsyms(source: &str, text: &str) -> Result<SymbolTable> {
        struct Line<'t> {
            addr: u64,
            kind: char,
            name: &'t str,
            module: Option<&'t str>,
        }
        let mut lines = Vec::new();
        for (n, raw) in text.lines().enumerate() {
            if raw.trim().is_empty() {
                continue;
            }
            let bad = || ObserveError::KallsymsLine {
                name: source.to_string(),
                line: n + 1,
                text: raw.to_string(),
            };
            let mut parts = raw.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(bad());
            };
            let addr = u64::from_str_radix(addr, 16).map_err(|_| bad())?;
            let mut kind_chars = kind.chars();
            let (Some(kind), None) = (kind_chars.next(), kind_chars.next()) else {
                return Err(bad());
            };
            let module = match parts.next() {
                None => None,
                Some(m) => Some(
                    m.strip_prefix('[')
                        .and_then(|m| m.strip_suffix(']'))
                        .ok_or_else(bad)?,
                ),
            };
            if parts.next().is_some() {
                return Err(bad());
            }
            lines.push(Line {
                addr,
                kind,
                name,
                module,
            });
        }
        if !lines.is_empty() && lines.iter().all(|l| l.addr == 0) {
            return Err(ObserveError::KallsymsZeroed {
                name: source.to_string(),
            });
        }

        // Bounds come from every located symbol of the same kernel/module,
        // so a function before a data object ends at the object. (Modules
        // are numbered, 0 the kernel, so bounds compare as integers.)
        let mut module_ids: HashMap<Option<&str>, u32> = HashMap::new();
        let mut modules: Vec<Option<Arc<str>>> = Vec::new();
        let ids: Vec<u32> = lines
            .iter()
            .map(|l| {
                *module_ids.entry(l.module).or_insert_with(|| {
                    modules.push(l.module.map(Arc::from));
                    modules.len() as u32 - 1
                })
            })
            .collect();
        let mut bounds: Vec<(u32, u64)> = lines
            .iter()
            .zip(&ids)
            .filter(|(l, _)| !matches!(l.kind, 'a' | 'A' | 'U' | 'u'))
            .map(|(l, &m)| (m, l.addr))
            .collect();
        bounds.sort_unstable();
        bounds.dedup();

        let candidates = lines
            .iter()
            .zip(&ids)
            .filter(|(l, _)| matches!(l.kind, 't' | 'T' | 'w' | 'W'))
            .map(|(l, &id)| {
                let first_above = bounds.partition_point(|&b| b <= (id, l.addr));
                let limit = match bounds.get(first_above) {
                    Some(&(m, a)) if m == id => a,
                    _ => l.addr.saturating_add(LAST_KALLSYMS_SYMBOL_SPAN),
                };
                Candidate {
                    start: l.addr,
                    size: None,
                    limit,
                    name: clean_name(l.name.as_bytes()),
                    module: modules[id as usize].clone(),
                    typed_function: true,
                    binding: match l.kind {
                        'T' => Binding::Global,
                        'w' | 'W' => Binding::Weak,
                        _ => Binding::Local,
                    },
                }
            })
            .collect();
        Ok(build("[kernel.kallsyms]", candidates))
    }

    /// A table from explicit `(start, end, name)` triples (tests, synthetic
    /// images, symbols learned some other way).
    pub fn from_ranges(
        name: &str,
        ranges: impl IntoIterator<Item = (u64, u64, String)>,
    ) -> SymbolTable {
        let candidates = ranges
            .into_iter()
            .map(|(start, end, name)| Candidate {
                start,
                size: Some(end.saturating_sub(start)),
                limit: end,
                name: clean_name(name.as_bytes()),
                module: None,
                typed_function: true,
                binding: Binding::Global,
            })
            .collect();
        build(name, candidates)
    }
}

impl SymbolTable {
    /// Whether the file was position independent (ET_DYN): its runtime
    /// addresses are its link addresses plus a load bias.
    pub fn is_position_independent(&self) -> bool {
        self.position_independent
    }

    /// The file's segments (link addresses, file ranges).
    pub fn segments(&self) -> &[LoadSegment] {
        &self.segments
    }

    /// The same table with every symbol moved up by `delta` (wrapping): a
    /// position-independent binary loaded at `delta`, such as OpenSBI's
    /// `fw_jump.elf` (linked at 0) at 0x8000_0000.
    pub fn shifted(&self, delta: u64) -> SymbolTable {
        let symbols = self
            .symbols
            .iter()
            .map(|s| Symbol {
                start: s.start.wrapping_add(delta),
                end: s.end.wrapping_add(delta),
                ..s.clone()
            })
            .collect();
        let segments = self
            .segments
            .iter()
            .map(|g| LoadSegment {
                vaddr: g.vaddr.wrapping_add(delta),
                ..*g
            })
            .collect();
        from_symbols(&self.name, symbols, segments, false)
    }

    /// Kernel-module symbols moved from where the capture boot loaded each
    /// module (`captured`) to where this run loaded it (`now`), both as
    /// `/proc/modules` lists. Returns the table and the modules that could
    /// not be placed (absent from either list, or with a hidden address);
    /// their symbols are dropped rather than left at a wrong address.
    pub fn with_module_bases(
        &self,
        captured: &[ModuleLoad],
        now: &[ModuleLoad],
    ) -> (SymbolTable, Vec<String>) {
        let base_of = |list: &[ModuleLoad], name: &str| {
            list.iter()
                .find(|m| m.name == name && m.base != 0)
                .map(|m| m.base)
        };
        let mut unplaced: Vec<String> = Vec::new();
        let mut symbols = Vec::with_capacity(self.symbols.len());
        for s in &self.symbols {
            let Some(module) = s.module.as_deref() else {
                symbols.push(s.clone());
                continue;
            };
            match (base_of(captured, module), base_of(now, module)) {
                (Some(a), Some(b)) => {
                    let delta = b.wrapping_sub(a);
                    symbols.push(Symbol {
                        start: s.start.wrapping_add(delta),
                        end: s.end.wrapping_add(delta),
                        ..s.clone()
                    });
                }
                _ => {
                    if !unplaced.iter().any(|m| m == module) {
                        unplaced.push(module.to_string());
                    }
                }
            }
        }
        unplaced.sort();
        (
            from_symbols(
                &self.name,
                symbols,
                self.segments.clone(),
                self.position_independent,
            ),
            unplaced,
        )
    }
}

/// A table from finished symbols (sorted here; the first of two symbols at
/// one address wins, as `build` would have chosen it already).
fn from_symbols(
    name: &str,
    mut symbols: Vec<Symbol>,
    segments: Vec<LoadSegment>,
    pi: bool,
) -> SymbolTable {
    symbols.sort_by_key(|s| s.start);
    symbols.dedup_by_key(|s| s.start);
    let starts: Vec<u64> = symbols.iter().map(|s| s.start).collect();
    let coarse = starts.iter().step_by(COARSE).copied().collect();
    let mut max_end = Vec::with_capacity(symbols.len());
    let mut m = 0;
    for s in &symbols {
        m = m.max(s.end);
        max_end.push(m);
    }
    SymbolTable {
        name: name.to_string(),
        symbols,
        starts,
        max_end,
        coarse,
        segments,
        position_independent: pi,
    }
}

/// One line of `/proc/modules`: a loaded module and its base address.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleLoad {
    pub name: String,
    pub size: u64,
    /// Load address (0 when the kernel hid it).
    pub base: u64,
}

/// Parse `/proc/modules` text (`NAME SIZE REFS DEPS STATE ADDRESS ...`);
/// `source` names it in errors.
pub fn parse_proc_modules(source: &str, text: &str) -> Result<Vec<ModuleLoad>> {
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let bad = || ObserveError::ModulesLine {
            name: source.to_string(),
            line: n + 1,
            text: raw.to_string(),
        };
        let fields: Vec<&str> = raw.split_whitespace().collect();
        if fields.len() < 6 {
            return Err(bad());
        }
        let size = fields[1].parse().map_err(|_| bad())?;
        let addr = fields[5].strip_prefix("0x").ok_or_else(bad)?;
        let base = u64::from_str_radix(addr, 16).map_err(|_| bad())?;
        out.push(ModuleLoad {
            name: fields[0].to_string(),
            size,
            base,
        });
    }
    Ok(out)
}

/// `sparse`: the symbols are a stripped file's exports only. Then an
/// unsized label names its own address and nothing more, since the next
/// exported symbol says nothing about where the label's code ends.
fn collect_elf_symbols<'d, 'f>(
    file: &'f object::File<'d>,
    symbols: impl Iterator<Item = object::Symbol<'d, 'f>>,
    sparse: bool,
    out: &mut Vec<Candidate>,
) {
    for sym in symbols {
        if sym.is_undefined() {
            continue;
        }
        let typed_function = match sym.kind() {
            SymbolKind::Text => true,
            // Assembly entry points (`handle_exception`) are STT_NOTYPE,
            // which `object` reports as Unknown (or Label).
            SymbolKind::Unknown | SymbolKind::Label => false,
            _ => continue,
        };
        let Some(section) = sym
            .section_index()
            .and_then(|i| file.section_by_index(i).ok())
        else {
            continue;
        };
        if section.kind() != SectionKind::Text {
            continue;
        }
        let Ok(raw) = sym.name_bytes() else { continue };
        // Skip compiler-local labels and RISC-V mapping symbols (`$x`, `$d`).
        if raw.is_empty() || raw.starts_with(b".L") || raw.starts_with(b"$") {
            continue;
        }
        let start = sym.address();
        out.push(Candidate {
            start,
            size: match sym.size() {
                0 if sparse => Some(1),
                0 => None,
                n => Some(n),
            },
            limit: section
                .address()
                .saturating_add(section.size())
                .max(start.saturating_add(1)),
            name: clean_name(raw),
            module: None,
            typed_function,
            binding: if sym.is_weak() {
                Binding::Weak
            } else if sym.is_global() {
                Binding::Global
            } else {
                Binding::Local
            },
        });
    }
}

/// Symbol names may come from the guest (kallsyms channel): keep them on one
/// line and valid UTF-8.
fn clean_name(raw: &[u8]) -> String {
    if raw.iter().all(|b| b.is_ascii_graphic()) {
        // (the usual name: nothing to replace)
        return String::from_utf8_lossy(raw).into_owned();
    }
    String::from_utf8_lossy(raw)
        .chars()
        .map(|c| {
            if c.is_control() || c.is_whitespace() {
                '?'
            } else {
                c
            }
        })
        .collect()
}

fn leading_underscores(name: &str) -> usize {
    name.bytes().take_while(|&b| b == b'_').count()
}

fn build(name: &str, mut candidates: Vec<Candidate>) -> SymbolTable {
    // Best alias first within one address: typed function, fewer leading
    // underscores (the kernel's `memset` is a weak alias of `__memset`, and
    // people look for `memset`), stronger binding, sized, larger, then by
    // name — deterministic.
    candidates.sort_by(|a, b| {
        a.start
            .cmp(&b.start)
            .then(b.typed_function.cmp(&a.typed_function))
            .then(leading_underscores(&a.name).cmp(&leading_underscores(&b.name)))
            .then(b.binding.cmp(&a.binding))
            .then(b.size.cmp(&a.size))
            .then(a.name.cmp(&b.name))
    });
    candidates.dedup_by_key(|c| c.start);

    let starts: Vec<u64> = candidates.iter().map(|c| c.start).collect();
    let mut symbols = Vec::with_capacity(candidates.len());
    for (i, c) in candidates.into_iter().enumerate() {
        let end = match c.size {
            Some(size) => c.start.saturating_add(size),
            None => {
                let next = starts.get(i + 1).copied().unwrap_or(u64::MAX);
                next.min(c.limit).max(c.start.saturating_add(1))
            }
        };
        symbols.push(Symbol {
            start: c.start,
            end,
            name: c.name,
            module: c.module,
        });
    }
    from_symbols(name, symbols, Vec::new(), false)
}

/// One line of `/proc/<pid>/maps`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapsEntry {
    pub start: u64,
    pub end: u64,
    pub perms: String,
    pub offset: u64,
    /// The mapped file or pseudo-name (`[stack]`, `[vdso]`); `None` if anonymous.
    pub path: Option<String>,
}

impl MapsEntry {
    pub fn is_executable(&self) -> bool {
        self.perms.as_bytes().get(2) == Some(&b'x')
    }
}

/// Parse `/proc/<pid>/maps` text; `source` names it in errors.
pub fn parse_proc_maps(source: &str, text: &str) -> Result<Vec<MapsEntry>> {
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let bad = || ObserveError::MapsLine {
            name: source.to_string(),
            line: n + 1,
            text: raw.to_string(),
        };
        let mut parts = raw.split_whitespace();
        let (Some(range), Some(perms), Some(offset), Some(_dev), Some(_inode)) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(bad());
        };
        let (start, end) = range.split_once('-').ok_or_else(bad)?;
        let hex = |s: &str| u64::from_str_radix(s, 16).map_err(|_| bad());
        let rest: Vec<&str> = parts.collect();
        out.push(MapsEntry {
            start: hex(start)?,
            end: hex(end)?,
            perms: perms.to_string(),
            offset: hex(offset)?,
            path: (!rest.is_empty()).then(|| rest.join(" ")),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KALLSYMS: &str = "\
ffffffff80000000 T _start
ffffffff80000000 T _stext
ffffffff80001000 t handle_exception
ffffffff80001100 T ret_from_exception
ffffffff80001180 W arch_cpu_idle
ffffffff80001200 D some_data
ffffffff80002000 r a_rodata
ffffffff80003000 T n_tty_write
0000000000000400 A abs_sym
ffffffff01000000 t nvme_irq\t[nvme]
ffffffff01000040 T nvme_probe\t[nvme]
";

    #[test]
    fn kallsyms_text_symbols_end_at_the_next_symbol() {
        let t = SymbolTable::from_kallsyms("test", KALLSYMS).unwrap();
        assert_eq!(t.name(), "[kernel.kallsyms]");
        assert_eq!(t.lookup(0xffffffff80001004), Some(("handle_exception", 4)));
        assert_eq!(
            t.lookup(0xffffffff800010ff),
            Some(("handle_exception", 0xff))
        );
        assert_eq!(
            t.lookup(0xffffffff80001100),
            Some(("ret_from_exception", 0))
        );
        assert_eq!(t.lookup(0xffffffff80001190), Some(("arch_cpu_idle", 0x10)));
        // Data symbols are not kept but bound the code before them.
        assert_eq!(t.lookup(0xffffffff80001200), None);
        assert_eq!(t.lookup(0xffffffff80002500), None);
        // The last kernel symbol is bounded by a page.
        assert_eq!(t.lookup(0xffffffff80003fff), Some(("n_tty_write", 0xfff)));
        assert_eq!(t.lookup(0xffffffff80004000), None);
        // Aliases: the global, fewer-underscore name wins, deterministically.
        assert_eq!(t.lookup(0xffffffff80000010), Some(("_start", 0x10)));
        // Fewer underscores win over a stronger binding (memset is a weak alias).
        let m = SymbolTable::from_kallsyms(
            "m",
            "ffffffff80000000 T __memset\nffffffff80000000 W memset\nffffffff80000100 T x\n",
        )
        .unwrap();
        assert_eq!(m.lookup(0xffffffff80000004), Some(("memset", 4)));
        // Module symbols keep their module and end within it.
        let s = t.lookup_symbol(0xffffffff01000010).unwrap();
        assert_eq!(
            (s.name.as_str(), s.module.as_deref()),
            ("nvme_irq", Some("nvme"))
        );
        assert_eq!(s.end, 0xffffffff01000040);
        assert_eq!(
            t.lookup(0xffffffff01000040 + 4095),
            Some(("nvme_probe", 4095))
        );
        assert_eq!(t.lookup(0x400), None);
        assert_eq!(t.lookup(0), None);
    }

    #[test]
    fn kallsyms_errors_name_the_line() {
        let e = SymbolTable::from_kallsyms("ks", "ffffffff80000000 T ok\nzz T bad\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "ks line 2: expected `ADDRESS TYPE NAME [module]`, found \"zz T bad\""
        );
        let e = SymbolTable::from_kallsyms("ks", "0000000000000000 T a\n0000000000000000 t b\n")
            .unwrap_err();
        assert!(matches!(e, ObserveError::KallsymsZeroed { .. }));
        assert!(SymbolTable::from_kallsyms("ks", "ffff T x [mod] extra\n").is_err());
        assert!(SymbolTable::from_kallsyms("ks", "ffff TT x\n").is_err());
    }

    #[test]
    fn nested_symbols_resolve_to_the_innermost_then_the_outer() {
        let t = SymbolTable::from_ranges(
            "x",
            [
                (0x100, 0x200, "outer".to_string()),
                (0x120, 0x130, "inner".into()),
                (0x300, 0x310, "far".into()),
            ],
        );
        assert_eq!(t.lookup(0x125), Some(("inner", 5)));
        assert_eq!(t.lookup(0x140), Some(("outer", 0x40)));
        assert_eq!(t.lookup(0x250), None);
        assert_eq!(t.lookup(0x30f), Some(("far", 0xf)));
        assert_eq!(t.lookup(0x310), None);
        assert_eq!(t.lookup(0xff), None);
    }

    #[test]
    fn guest_supplied_names_are_kept_on_one_line() {
        let t = SymbolTable::from_ranges("x", [(0, 4, "a\nb".to_string())]);
        assert_eq!(t.lookup(1), Some(("a?b", 1)));
    }

    #[test]
    fn shifting_and_module_relocation() {
        let t = SymbolTable::from_kallsyms("test", KALLSYMS).unwrap();
        let captured = parse_proc_modules(
            "kallsyms-modules",
            "nvme 94208 0 - Live 0xffffffff01000000\nother 100 0 - Live 0xffffffff09000000\n",
        )
        .unwrap();
        assert_eq!(
            captured[0],
            ModuleLoad {
                name: "nvme".into(),
                size: 94208,
                base: 0xffffffff01000000
            }
        );
        let now =
            parse_proc_modules("modules", "nvme 94208 0 - Live 0xffffffff02000000 (O)\n").unwrap();
        let (moved, unplaced) = t.with_module_bases(&captured, &now);
        assert!(unplaced.is_empty());
        assert_eq!(moved.lookup(0xffffffff02000010), Some(("nvme_irq", 0x10)));
        assert_eq!(moved.lookup(0xffffffff01000010), None);
        assert_eq!(
            moved.lookup(0xffffffff80001004),
            Some(("handle_exception", 4)),
            "kernel symbols stay"
        );
        // A module this run did not load loses its symbols.
        let (gone, unplaced) = t.with_module_bases(&captured, &[]);
        assert_eq!(unplaced, vec!["nvme".to_string()]);
        assert_eq!(gone.lookup(0xffffffff01000010), None);

        let s = SymbolTable::from_ranges("fw", [(0x10, 0x20, "sbi_trap_handler".to_string())])
            .shifted(0x8000_0000);
        assert_eq!(s.lookup(0x8000_0018), Some(("sbi_trap_handler", 8)));
        assert_eq!(s.lookup(0x18), None);

        let e = parse_proc_modules("modules", "nvme 12 0 - Live ffff\n").unwrap_err();
        assert_eq!(e.to_string(), "modules line 1: expected `NAME SIZE REFS DEPS STATE 0xADDRESS`, found \"nvme 12 0 - Live ffff\"");
        assert!(parse_proc_modules("modules", "short line\n").is_err());
    }

    #[test]
    fn proc_maps_parse() {
        let text = "\
00010000-000f0000 r-xp 00000000 fe:00 123  /bin/busybox
3ff7f00000-3ff7f21000 rw-p 00000000 00:00 0 \n\
3fffd0f000-3fffd30000 rw-p 00000000 00:00 0  [stack]
";
        let m = parse_proc_maps("maps/7", text).unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].path.as_deref(), Some("/bin/busybox"));
        assert!(m[0].is_executable());
        assert_eq!(m[1].path, None);
        assert!(!m[1].is_executable());
        assert_eq!(m[2].path.as_deref(), Some("[stack]"));
        let e = parse_proc_maps("maps/7", "garbage\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "maps/7 line 1: expected `START-END PERMS OFFSET DEV INODE [PATH]`, found \"garbage\""
        );
    }
}
