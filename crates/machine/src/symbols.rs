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

impl GuestSymbols {
    pub fn load(src: &SymbolSources) -> Result<GuestSymbols, ObserveError> {
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
        let mut kernel_as_captured = None;
        let mut captured_modules = Vec::new();
        let kernel = match &src.kernel {
            Some(KernelSymbolSource::Elf(p)) => Some(SymbolTable::from_elf_file(p)?),
            Some(KernelSymbolSource::Kallsyms {
                path,
                captured_modules: mods,
            }) => {
                let t = SymbolTable::from_kallsyms_file(path)?;
                if let Some(m) = mods {
                    let text = std::fs::read_to_string(m).map_err(|source| ObserveError::Io {
                        path: m.clone(),
                        source,
                    })?;
                    captured_modules = parse_proc_modules(&m.display().to_string(), &text)?;
                }
                kernel_as_captured = Some(t.clone());
                Some(t)
            }
            None => None,
        };
        if let Some(k) = kernel {
            if let (Some((lo, hi)), Some(start)) = (src.kernel_physical, k.by_name("_start")) {
                symbolizer.set_kernel_physical(lo, hi, start.start);
            }
            symbolizer.set_kernel(k);
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
            kernel_as_captured,
            captured_modules,
            notes,
        })
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
