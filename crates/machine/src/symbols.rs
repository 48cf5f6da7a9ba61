//! The symbols of one guest: firmware, kernel (with this run's module load
//! addresses) and user programs, gathered into a [`Symbolizer`] that knows
//! which binary ran in which user address space.

use std::path::PathBuf;
use std::sync::Arc;

use hs_observe::symbols::ImageId;
use hs_observe::{
    parse_proc_modules, AddressSpace, Mapping, ModuleLoad, ObserveError, SatpResolver, SymbolTable,
    Symbolizer, TaskLayout, UserBinary, UserIdentifier,
};

use crate::observing::{privilege, TraceStep};
use crate::sampler::SpaceMark;

/// Where the kernel's symbols come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelSymbolSource {
    /// An ELF `vmlinux` with its symbol table.
    Elf(PathBuf),
    /// A `/proc/kallsyms` capture; `captured_modules` is `/proc/modules` of
    /// the capture boot (module symbols move to this run's addresses).
    Kallsyms {
        path: PathBuf,
        captured_modules: Option<PathBuf>,
    },
}

/// The files that name a guest's code.
#[derive(Clone, Debug, Default)]
pub struct SymbolSources {
    /// OpenSBI's ELF (`fw_jump.elf`).
    pub firmware_elf: Option<PathBuf>,
    /// Where the firmware was loaded (a position-independent ELF is moved there).
    pub firmware_base: u64,
    pub kernel: Option<KernelSymbolSource>,
    /// Physical `[start, end)` of the kernel image: S-mode PCs there (before
    /// the MMU is on) are named at their link address.
    pub kernel_physical: Option<(u64, u64)>,
    /// Unstripped static user programs (BusyBox, workload programs).
    pub user_binaries: Vec<PathBuf>,
    /// The kernel's raw BTF (`/sys/kernel/btf/vmlinux`): where a task's
    /// pid and comm sit, to name the task of each sample.
    pub btf: Option<PathBuf>,
}

/// A guest's symbols, ready to name samples and trace lines.
pub struct GuestSymbols {
    symbolizer: Symbolizer<SatpResolver>,
    ident: Arc<UserIdentifier>,
    image_ids: Vec<ImageId>,
    kernel_as_captured: Option<SymbolTable>,
    captured_modules: Vec<ModuleLoad>,
    task_layout: Option<TaskLayout>,
    /// The kernel ELF, for source lines: its line tables are read on the
    /// first trace line that asks (runs without a trace never pay).
    kernel_elf: Option<PathBuf>,
    source_lines: std::cell::OnceCell<Option<hs_observe::SourceLines>>,
    /// What could not be named and why (for reports).
    pub notes: Vec<String>,
}

/// The kernel's symbols as the image gives them: most of the time loading
/// takes (a `kallsyms` capture is some 17 MB of text to parse and sort),
/// and nothing a run needs before it ends.
struct KernelSymbols {
    table: Option<SymbolTable>,
    /// A `kallsyms` capture as read, and the capture boot's modules.
    as_captured: Option<(SymbolTable, Vec<ModuleLoad>)>,
}

impl KernelSymbols {
    fn read(src: Option<&KernelSymbolSource>) -> Result<KernelSymbols, ObserveError> {
        Ok(match src {
            Some(KernelSymbolSource::Elf(p)) => KernelSymbols {
                table: Some(SymbolTable::from_elf_file(p)?),
                as_captured: None,
            },
            Some(KernelSymbolSource::Kallsyms {
                path,
                captured_modules: mods,
            }) => {
                let t = SymbolTable::from_kallsyms_file(path)?;
                let captured_modules = match mods {
                    Some(m) => {
                        let text =
                            std::fs::read_to_string(m).map_err(|source| ObserveError::Io {
                                path: m.clone(),
                                source,
                            })?;
                        parse_proc_modules(&m.display().to_string(), &text)?
                    }
                    None => Vec::new(),
                };
                KernelSymbols {
                    table: Some(t.clone()),
                    as_captured: Some((t, captured_modules)),
                }
            }
            None => KernelSymbols {
                table: None,
                as_captured: None,
            },
        })
    }

    /// The files [`Self::read`] will read, opened now: one that is missing
    /// or unreadable is an error before a run rather than after it.
    fn check_readable(src: Option<&KernelSymbolSource>) -> Result<(), ObserveError> {
        let files = match src {
            Some(KernelSymbolSource::Elf(p)) => vec![p],
            Some(KernelSymbolSource::Kallsyms {
                path,
                captured_modules,
            }) => std::iter::once(path).chain(captured_modules).collect(),
            None => Vec::new(),
        };
        for path in files {
            std::fs::File::open(path).map_err(|source| ObserveError::Io {
                path: path.clone(),
                source,
            })?;
        }
        Ok(())
    }
}

/// Guest symbols whose kernel part is still being read on another thread
/// ([`GuestSymbols::load_pending`]); what a run needs before it starts is here.
pub struct PendingSymbols {
    symbols: GuestSymbols,
    kernel: KernelRead,
    kernel_physical: Option<(u64, u64)>,
}

/// The kernel's symbols, being read on a thread or (where none could be
/// started) already read.
enum KernelRead {
    Reading(std::thread::JoinHandle<Result<KernelSymbols, ObserveError>>),
    Read(KernelSymbols),
}

impl PendingSymbols {
    /// As [`GuestSymbols::identifier`].
    pub fn identifier(&self) -> Arc<UserIdentifier> {
        self.symbols.identifier()
    }

    /// As [`GuestSymbols::task_layout`].
    pub fn task_layout(&self) -> Option<TaskLayout> {
        self.symbols.task_layout()
    }

    /// The whole symbols, once the kernel's are read (an error in those,
    /// such as a malformed `kallsyms`, is reported here).
    pub fn finish(self) -> Result<GuestSymbols, ObserveError> {
        let kernel = match self.kernel {
            KernelRead::Reading(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?,
            KernelRead::Read(k) => k,
        };
        let mut symbols = self.symbols;
        symbols.add_kernel(kernel, self.kernel_physical);
        Ok(symbols)
    }
}

impl GuestSymbols {
    pub fn load(src: &SymbolSources) -> Result<GuestSymbols, ObserveError> {
        let mut symbols = GuestSymbols::load_without_kernel(src)?;
        symbols.add_kernel(
            KernelSymbols::read(src.kernel.as_ref())?,
            src.kernel_physical,
        );
        Ok(symbols)
    }

    /// [`Self::load`], with the kernel's symbols read on another thread
    /// while the caller runs the machine: a run needs only the user
    /// binaries and the task layout before it starts, and reading the
    /// kernel's took most of a profiled boot's start (0.12 of 0.18 s).
    pub fn load_pending(src: &SymbolSources) -> Result<PendingSymbols, ObserveError> {
        KernelSymbols::check_readable(src.kernel.as_ref())?;
        let symbols = GuestSymbols::load_without_kernel(src)?;
        let source = src.kernel.clone();
        let kernel = match std::thread::Builder::new()
            .name("hs-symbols".into())
            .spawn(move || KernelSymbols::read(source.as_ref()))
        {
            Ok(thread) => KernelRead::Reading(thread),
            Err(_) => KernelRead::Read(KernelSymbols::read(src.kernel.as_ref())?),
        };
        Ok(PendingSymbols {
            symbols,
            kernel,
            kernel_physical: src.kernel_physical,
        })
    }

    /// Everything but the kernel's symbols.
    fn load_without_kernel(src: &SymbolSources) -> Result<GuestSymbols, ObserveError> {
        let mut notes = Vec::new();
        let mut binaries = Vec::new();
        for p in &src.user_binaries {
            binaries.push(UserBinary::from_elf_file(p)?);
        }
        let mut resolver = SatpResolver::new();
        let image_ids = binaries
            .iter()
            .map(|b| resolver.add_image(b.name(), b.table().clone()))
            .collect();
        let mut symbolizer = Symbolizer::with_user(resolver);
        if let Some(fw) = &src.firmware_elf {
            let t = SymbolTable::from_elf_file(fw)?;
            let t = if t.is_position_independent() {
                t.shifted(src.firmware_base)
            } else {
                t
            };
            if t.len() < 100 {
                notes.push(format!(
                    "{} exports only {} symbols: most M-mode (firmware) samples show as [unknown] in it",
                    fw.display(),
                    t.len()
                ));
            }
            symbolizer.set_firmware(t);
        }
        let task_layout = match &src.btf {
            Some(p) => Some(TaskLayout::from_btf_file(p)?),
            None => {
                notes.push("the image has no kernel BTF: samples name no task (comm and pid come from the address space only)".into());
                None
            }
        };
        let kernel_elf = match &src.kernel {
            Some(KernelSymbolSource::Elf(p)) => Some(p.clone()),
            _ => None,
        };
        Ok(GuestSymbols {
            task_layout,
            kernel_elf,
            source_lines: std::cell::OnceCell::new(),
            symbolizer,
            ident: Arc::new(UserIdentifier::new(binaries)),
            image_ids,
            kernel_as_captured: None,
            captured_modules: Vec::new(),
            notes,
        })
    }

    /// The kernel's symbols into the symbolizer; `physical`: where the
    /// image lies in physical memory (S-mode PCs before paging).
    fn add_kernel(&mut self, kernel: KernelSymbols, physical: Option<(u64, u64)>) {
        if let Some((t, modules)) = kernel.as_captured {
            self.kernel_as_captured = Some(t);
            self.captured_modules = modules;
        }
        if let Some(k) = kernel.table {
            if let (Some((lo, hi)), Some(start)) = (physical, k.by_name("_start")) {
                self.symbolizer.set_kernel_physical(lo, hi, start.start);
            }
            self.symbolizer.set_kernel(k);
        }
    }

    /// `file:line` of a kernel address from the kernel ELF's line tables;
    /// `None` without an ELF kernel with DWARF, or outside its code.
    pub fn kernel_source_line(&self, pc: u64) -> Option<String> {
        self.source_lines
            .get_or_init(|| {
                self.kernel_elf
                    .as_deref()
                    .and_then(hs_observe::SourceLines::from_elf_file)
            })
            .as_ref()?
            .locate(pc)
    }

    /// Where `struct task_struct` keeps pid, tgid and comm in this guest's
    /// kernel (from its BTF), for [`Machine::enable_task_identity`](crate::Machine::enable_task_identity).
    pub fn task_layout(&self) -> Option<TaskLayout> {
        self.task_layout
    }

    /// The user binaries, for the sampler to recognise address spaces.
    pub fn identifier(&self) -> Arc<UserIdentifier> {
        self.ident.clone()
    }

    pub fn symbolizer(&self) -> &Symbolizer<SatpResolver> {
        &self.symbolizer
    }

    /// Move kernel-module symbols to where this run loaded the modules
    /// (`/proc/modules` as the guest sent it on the `modules` channel).
    pub fn apply_run_modules(&mut self, run_modules: Option<&[u8]>) -> Result<(), ObserveError> {
        let Some(table) = &self.kernel_as_captured else {
            return Ok(());
        };
        if !table.symbols().iter().any(|s| s.module.is_some()) {
            return Ok(());
        }
        let Some(text) = run_modules else {
            self.notes.push("the run sent no `modules` channel: module symbols stay at the capture boot's addresses".into());
            return Ok(());
        };
        let now = parse_proc_modules("modules channel", &String::from_utf8_lossy(text))?;
        let (moved, unplaced) = table.with_module_bases(&self.captured_modules, &now);
        if !unplaced.is_empty() {
            self.notes.push(format!(
                "module(s) {} not loaded in this run: their symbols are left out",
                unplaced.join(", ")
            ));
        }
        self.symbolizer.set_kernel(moved);
        Ok(())
    }

    /// Tell the resolver which binary ran in which address space and when.
    pub fn add_space_marks(&mut self, marks: &[SpaceMark]) {
        for m in marks {
            let (name, mappings) = match m
                .binary
                .and_then(|i| Some((self.ident.binaries().get(i)?, *self.image_ids.get(i)?)))
            {
                Some((b, id)) => {
                    let (start, end) = b.code_span();
                    (
                        b.name().to_string(),
                        vec![Mapping {
                            start,
                            end,
                            image: id,
                            bias: 0,
                        }],
                    )
                }
                None => ("[unknown]".to_string(), Vec::new()),
            };
            self.symbolizer
                .user_mut()
                .add_space(m.satp, m.cycle, &name, 0, mappings);
        }
    }

    /// Name a traced instruction: `(symbol, offset)`.
    pub(crate) fn name_step(&self, hart: u16, s: &TraceStep) -> Option<(String, u64)> {
        if s.prv == 0 {
            let code = s.code.as_deref()?;
            let i = self.ident.identify(s.pc & !63, code)?;
            let (name, off) = self.ident.binaries()[i].table().lookup(s.pc)?;
            return Some((name.to_string(), off));
        }
        let at = AddressSpace {
            hart,
            cycle: s.cycle,
            satp: 0,
        };
        let f = self.symbolizer.resolve(privilege(s.prv), at, s.pc, false);
        f.symbol.map(|n| (n.to_string(), f.offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hs_observe::{AddressSpace, Privilege};

    /// A scratch directory of this process, removed when dropped.
    struct Dir(PathBuf);
    impl Dir {
        fn new(tag: &str) -> Dir {
            let d = std::env::temp_dir().join(format!("hs-symbols-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Dir(d)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn kallsyms_sources(path: PathBuf) -> SymbolSources {
        SymbolSources {
            kernel: Some(KernelSymbolSource::Kallsyms {
                path,
                captured_modules: None,
            }),
            kernel_physical: Some((0x8020_0000, 0x8040_0000)),
            ..SymbolSources::default()
        }
    }

    /// What `s` names `pc` in the kernel as.
    fn kernel_name(s: &GuestSymbols, pc: u64) -> Option<String> {
        let at = AddressSpace {
            hart: 0,
            cycle: 0,
            satp: 0,
        };
        let f = s.symbolizer().resolve(Privilege::Supervisor, at, pc, false);
        f.symbol.map(|n| format!("{n}+{:#x}", f.offset))
    }

    #[test]
    fn symbols_read_during_a_run_are_those_read_before_it() {
        let dir = Dir::new("pending");
        let path = dir.0.join("kallsyms");
        std::fs::write(
            &path,
            "ffffffff80000000 T _start\nffffffff80001000 T do_work\nffffffff80002000 t helper\n",
        )
        .unwrap();
        let now = GuestSymbols::load(&kallsyms_sources(path.clone())).unwrap();
        let later = GuestSymbols::load_pending(&kallsyms_sources(path))
            .unwrap()
            .finish()
            .unwrap();
        assert_eq!(later.symbolizer().kernel(), now.symbolizer().kernel());
        assert!(later.symbolizer().kernel().is_some());
        assert_eq!(later.kernel_as_captured, now.kernel_as_captured);
        for pc in [0xffff_ffff_8000_1004, 0xffff_ffff_8000_2010, 0x8020_1008] {
            assert_eq!(kernel_name(&later, pc), kernel_name(&now, pc), "{pc:#x}");
        }
        // (the physical image is named at its link address, as loaded at once)
        assert_eq!(
            kernel_name(&later, 0x8020_1008).as_deref(),
            Some("do_work+0x8")
        );
    }

    #[test]
    fn a_missing_kernel_symbol_file_is_an_error_before_the_run() {
        let dir = Dir::new("missing");
        let path = dir.0.join("no-such-kallsyms");
        match GuestSymbols::load_pending(&kallsyms_sources(path.clone())) {
            Err(ObserveError::Io { path: p, .. }) => assert_eq!(p, path),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a missing kallsyms was accepted"),
        }
    }

    #[test]
    fn a_malformed_kernel_symbol_file_is_an_error_when_the_symbols_are_finished() {
        let dir = Dir::new("malformed");
        let path = dir.0.join("kallsyms");
        std::fs::write(&path, "ffffffff80000000 T _start\nnot an address line\n").unwrap();
        let pending = GuestSymbols::load_pending(&kallsyms_sources(path)).unwrap();
        let e = pending
            .finish()
            .err()
            .expect("a malformed kallsyms was accepted");
        assert!(e.to_string().contains("line 2"), "{e}");
    }
}
