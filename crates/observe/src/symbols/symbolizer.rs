//! Turning sampled addresses into names: firmware for M-mode, the kernel for
//! S-mode, and for U-mode whichever binary the caller says is mapped there.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::sample::{FastHash, Privilege, Sample};
use crate::symbols::table::{Symbol, SymbolTable};

/// Fallback name for anything that cannot be resolved.
pub const UNKNOWN: &str = "[unknown]";
/// Binary name used for kernel frames when no kernel table is loaded.
pub const KERNEL_DSO: &str = "[kernel.kallsyms]";
/// Binary name used for firmware frames when no firmware table is loaded.
pub const FIRMWARE_DSO: &str = "[firmware]";

/// Which software an address belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Space {
    Firmware,
    Kernel,
    User,
}

/// Where a user-mode sample was taken: enough for a resolver to pick the
/// process and its mappings (a root page table may be reused later in a run,
/// hence the cycle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressSpace {
    pub hart: u16,
    pub cycle: u64,
    pub satp: u64,
}

/// The process owning an address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Process<'a> {
    pub comm: &'a str,
    pub pid: u32,
}

/// The binary mapped at a user address. `bias` is subtracted from runtime
/// addresses to get the addresses `table` uses (zero for fixed-address
/// executables such as a static BusyBox).
#[derive(Clone, Copy, Debug)]
pub struct UserImage<'a> {
    pub name: &'a str,
    pub table: Option<&'a SymbolTable>,
    pub bias: u64,
}

/// Supplied by the caller: which process and binary a user address belongs to.
pub trait UserResolver {
    fn process(&self, at: AddressSpace) -> Option<Process<'_>>;
    fn image(&self, at: AddressSpace, addr: u64) -> Option<UserImage<'_>>;
}

/// Knows no user space: every user address is `[unknown]`.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoUserSpace;

impl UserResolver for NoUserSpace {
    fn process(&self, _: AddressSpace) -> Option<Process<'_>> {
        None
    }
    fn image(&self, _: AddressSpace, _: u64) -> Option<UserImage<'_>> {
        None
    }
}

/// Index of an image registered with a [`SatpResolver`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageId(usize);

/// A runtime mapping `[start, end)` of an image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub image: ImageId,
    pub bias: u64,
}

#[derive(Clone, Debug)]
struct SpaceEntry {
    from_cycle: u64,
    comm: String,
    pid: u32,
    mappings: Vec<Mapping>,
}

/// A resolver keyed by the root page table of `satp` (its PPN): Linux may
/// renumber ASIDs, but a process keeps its root table. Entries for the same
/// root table are told apart by the cycle from which they hold.
#[derive(Clone, Debug, Default)]
pub struct SatpResolver {
    images: Vec<(String, SymbolTable)>,
    spaces: BTreeMap<u64, Vec<SpaceEntry>>,
}

/// The root page-table PPN field of an RV64 `satp`.
pub fn satp_root(satp: u64) -> u64 {
    satp & ((1 << 44) - 1)
}

impl SatpResolver {
    pub fn new() -> SatpResolver {
        SatpResolver::default()
    }

    /// Register a binary; `name` is how reports show it (`busybox`).
    pub fn add_image(&mut self, name: &str, table: SymbolTable) -> ImageId {
        self.images.push((name.to_string(), table));
        ImageId(self.images.len() - 1)
    }

    pub fn image_table(&self, id: ImageId) -> Option<&SymbolTable> {
        self.images.get(id.0).map(|(_, t)| t)
    }

    /// Declare that from `from_cycle` on, the address space with this
    /// `satp` root belongs to process `pid` (`comm`) with these mappings.
    pub fn add_space(
        &mut self,
        satp: u64,
        from_cycle: u64,
        comm: &str,
        pid: u32,
        mut mappings: Vec<Mapping>,
    ) {
        mappings.sort_by_key(|m| m.start);
        let list = self.spaces.entry(satp_root(satp)).or_default();
        list.push(SpaceEntry {
            from_cycle,
            comm: comm.to_string(),
            pid,
            mappings,
        });
        list.sort_by_key(|e| e.from_cycle);
    }

    fn entry(&self, at: AddressSpace) -> Option<&SpaceEntry> {
        let list = self.spaces.get(&satp_root(at.satp))?;
        let i = list.partition_point(|e| e.from_cycle <= at.cycle);
        i.checked_sub(1).map(|i| &list[i])
    }
}

impl UserResolver for SatpResolver {
    fn process(&self, at: AddressSpace) -> Option<Process<'_>> {
        self.entry(at).map(|e| Process {
            comm: &e.comm,
            pid: e.pid,
        })
    }

    fn image(&self, at: AddressSpace, addr: u64) -> Option<UserImage<'_>> {
        let e = self.entry(at)?;
        let i = e
            .mappings
            .partition_point(|m| m.start <= addr)
            .checked_sub(1)?;
        let m = e.mappings[i];
        if addr >= m.end {
            return None;
        }
        let (name, table) = self.images.get(m.image.0)?;
        Some(UserImage {
            name,
            table: Some(table),
            bias: m.bias,
        })
    }
}

/// One resolved address of a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The address as observed (PC or return address).
    pub addr: u64,
    /// The address inside the binary's file image (`addr - bias`).
    pub file_addr: u64,
    pub space: Space,
    /// Binary name: `[kernel.kallsyms]`, `[nvme]`, `fw_jump.elf`, `busybox`, `[unknown]`.
    pub dso: &'a str,
    pub symbol: Option<&'a str>,
    /// Offset of `file_addr` inside `symbol` (0 when unknown).
    pub offset: u64,
}

impl<'a> Frame<'a> {
    /// `kernel`, `firmware`, or the user binary's name.
    pub fn where_name(&self) -> &'a str {
        match self.space {
            Space::Firmware => "firmware",
            Space::Kernel => "kernel",
            Space::User => self.dso,
        }
    }
}

/// A sample with its task and frames, leaf (the PC) first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedSample<'a> {
    pub comm: &'a str,
    /// Process id (thread group), as perf's `pid`.
    pub pid: u32,
    /// Thread id, as perf's `tid`.
    pub tid: u32,
    pub frames: Vec<Frame<'a>>,
}

/// Symbol tables of the firmware and the kernel plus a user-space resolver.
#[derive(Clone, Debug, Default)]
pub struct Symbolizer<R = NoUserSpace> {
    firmware: Option<SymbolTable>,
    kernel: Option<SymbolTable>,
    /// Where the kernel image sits in physical memory: `(pa_start, pa_end,
    /// va_start)`, to name S-mode PCs taken before the MMU is on.
    kernel_physical: Option<(u64, u64, u64)>,
    user: R,
}

impl Symbolizer<NoUserSpace> {
    pub fn new() -> Self {
        Symbolizer {
            firmware: None,
            kernel: None,
            kernel_physical: None,
            user: NoUserSpace,
        }
    }
}

impl<R: UserResolver> Symbolizer<R> {
    pub fn with_user(user: R) -> Self {
        Symbolizer {
            firmware: None,
            kernel: None,
            kernel_physical: None,
            user,
        }
    }

    pub fn set_firmware(&mut self, table: SymbolTable) -> &mut Self {
        self.firmware = Some(table);
        self
    }

    pub fn set_kernel(&mut self, table: SymbolTable) -> &mut Self {
        self.kernel = Some(table);
        self
    }

    /// The kernel's symbol table, if one was given.
    pub fn kernel(&self) -> Option<&SymbolTable> {
        self.kernel.as_ref()
    }

    /// `(pa_start, pa_end, va_start)` of the kernel image, if known.
    pub fn kernel_physical(&self) -> Option<(u64, u64, u64)> {
        self.kernel_physical
    }

    /// The kernel image occupies physical `[pa_start, pa_end)` and is linked
    /// at `va_start`: S-mode addresses in that range (before `satp` turns
    /// translation on) are looked up at their link address.
    pub fn set_kernel_physical(&mut self, pa_start: u64, pa_end: u64, va_start: u64) -> &mut Self {
        self.kernel_physical = Some((pa_start, pa_end, va_start));
        self
    }

    pub fn user(&self) -> &R {
        &self.user
    }

    pub fn user_mut(&mut self) -> &mut R {
        &mut self.user
    }

    /// Resolve one address seen in `privilege` mode. `caller` marks a return
    /// address: it is looked up one byte earlier, so a call that ends a
    /// function is charged to the caller, not to the next function.
    pub fn resolve(
        &self,
        privilege: Privilege,
        at: AddressSpace,
        addr: u64,
        caller: bool,
    ) -> Frame<'_> {
        // (the kernel symbol of a return address, when looking for it
        // already found it: the same lookup `from_table` would make)
        let mut kernel_caller = None;
        let space = match privilege {
            Privilege::Machine => Space::Firmware,
            Privilege::User => Space::User,
            Privilege::Supervisor if !caller => Space::Kernel,
            // A kernel call chain may run into the user stack it came from.
            Privilege::Supervisor => {
                kernel_caller = self
                    .kernel
                    .as_ref()
                    .and_then(|k| k.lookup_symbol(addr.wrapping_sub(1)));
                let physical = self
                    .kernel_physical
                    .is_some_and(|(lo, hi, _)| (lo..hi).contains(&addr));
                if kernel_caller.is_some() || physical || addr >> 63 == 1 {
                    Space::Kernel
                } else {
                    Space::User
                }
            }
        };
        let probe = |file_addr: u64| {
            if caller {
                file_addr.wrapping_sub(1)
            } else {
                file_addr
            }
        };
        fn from_table<'t>(
            table: Option<&'t SymbolTable>,
            fallback: &'static str,
            probe: u64,
        ) -> (&'t str, Option<&'t Symbol>) {
            from_symbol(table, fallback, table.and_then(|t| t.lookup_symbol(probe)))
        }
        fn from_symbol<'t>(
            table: Option<&'t SymbolTable>,
            fallback: &'static str,
            sym: Option<&'t Symbol>,
        ) -> (&'t str, Option<&'t Symbol>) {
            let dso = match (sym.and_then(|s| s.module.as_deref()), table) {
                (Some(module), _) => module,
                (None, Some(t)) => t.name(),
                (None, None) => fallback,
            };
            (dso, sym)
        }
        let (dso, file_addr, sym) = match space {
            Space::Firmware => {
                let (dso, sym) = from_table(self.firmware.as_ref(), FIRMWARE_DSO, probe(addr));
                (dso, addr, sym)
            }
            Space::Kernel => {
                let link = match self.kernel_physical {
                    Some((lo, hi, va)) if (lo..hi).contains(&addr) => addr - lo + va,
                    _ => addr,
                };
                let (dso, sym) = match kernel_caller {
                    Some(sym) if link == addr => {
                        from_symbol(self.kernel.as_ref(), KERNEL_DSO, Some(sym))
                    }
                    _ => from_table(self.kernel.as_ref(), KERNEL_DSO, probe(link)),
                };
                (dso, link, sym)
            }
            Space::User => match self.user.image(at, addr) {
                Some(img) => {
                    let file_addr = addr.wrapping_sub(img.bias);
                    let sym = img.table.and_then(|t| t.lookup_symbol(probe(file_addr)));
                    (img.name, file_addr, sym)
                }
                None => (UNKNOWN, addr, None),
            },
        };
        Frame {
            addr,
            file_addr,
            space,
            dso,
            symbol: sym.map(|s| s.name.as_str()),
            offset: sym.map_or(0, |s| file_addr.wrapping_sub(s.start)),
        }
    }

    /// Resolve a sample's PC and call stack, and name its task: the task the
    /// guest kernel said was running, else the process owning `satp` if the
    /// resolver knows it, else by privilege.
    pub fn resolve_sample<'a>(&'a self, s: &'a Sample) -> ResolvedSample<'a> {
        let at = s.address_space();
        let mut frames = Vec::with_capacity(1 + s.stack.len());
        frames.push(self.resolve(s.privilege, at, s.pc, false));
        frames.extend(self.callers(s, at));
        self.named(s, at, frames)
    }

    /// A sample's return addresses, resolved.
    fn callers<'a>(&'a self, s: &'a Sample, at: AddressSpace) -> impl Iterator<Item = Frame<'a>> {
        s.stack
            .iter()
            .map(move |&ra| self.resolve(s.privilege, at, ra, true))
    }

    /// The task of sample `s` (comm, pid, tid): the task the guest kernel
    /// said was running, else the process owning the address space, else
    /// named by privilege (a user sample by `leaf_dso`, its binary).
    fn task_of<'a>(
        &'a self,
        s: &'a Sample,
        at: AddressSpace,
        leaf_dso: &'a str,
    ) -> (&'a str, u32, u32) {
        match &s.task {
            Some(t) => (&*t.comm, t.pid, t.tid),
            None => match (self.user.process(at), s.privilege) {
                (Some(p), _) => (p.comm, p.pid, p.pid),
                (None, Privilege::Machine) => ("[firmware]", 0, 0),
                (None, Privilege::Supervisor) => ("[kernel]", 0, 0),
                (None, Privilege::User) => (leaf_dso, 0, 0),
            },
        }
    }

    /// `frames` (leaf first) with the sample's task.
    fn named<'a>(
        &'a self,
        s: &'a Sample,
        at: AddressSpace,
        frames: Vec<Frame<'a>>,
    ) -> ResolvedSample<'a> {
        let (comm, pid, tid) = self.task_of(s, at, frames[0].dso);
        ResolvedSample {
            comm,
            pid,
            tid,
            frames,
        }
    }
}

/// A distinct firmware or kernel call stack, named once by a [`StackResolver`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StackId(u32);

impl StackId {
    /// Ids count from 0 in the order stacks were first seen.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A sample's return addresses, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Callers<'a> {
    /// A stack the resolver keeps: every sample with it has the same callers.
    Shared(StackId),
    /// Resolved for this sample alone (it holds user code).
    Own(Vec<Frame<'a>>),
}

/// A sample named in parts, so that a report can work per distinct stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleParts<'a> {
    pub comm: &'a str,
    pub pid: u32,
    pub tid: u32,
    /// The sampled PC.
    pub leaf: Frame<'a>,
    pub callers: Callers<'a>,
}

/// Resolves the samples of a run, naming each distinct call stack once.
///
/// A boot's 770,000 samples share about 30,000 stacks, and naming a frame
/// is a search among a kernel's 100,000 symbols: every report that names
/// every sample (perf script, folded stacks, hot functions) spent most of
/// its time repeating the same searches. A firmware or kernel frame's name
/// depends on its address alone, so a stack of those is named once per
/// privilege and given a [`StackId`]; a stack holding a user frame depends
/// on the address space and time of its sample, and is named every time.
/// Either way the result is exactly [`Symbolizer::resolve_sample`]'s.
pub struct StackResolver<'s, R> {
    symbolizer: &'s Symbolizer<R>,
    /// For M- and S-mode samples: each stack seen, with its id (`None`
    /// when one of its frames is user code).
    known: [HashMap<Arc<[u64]>, Option<StackId>, FastHash>; 2],
    /// The named stacks, by id.
    stacks: Vec<Box<[Frame<'s>]>>,
    /// For M- and S-mode samples: the last shared stack, by identity.
    last: [Option<(Arc<[u64]>, StackId)>; 2],
    /// For M- and S-mode samples: each PC's frame.
    leaves: [HashMap<u64, Frame<'s>, FastHash>; 2],
}

impl<'s, R: UserResolver> StackResolver<'s, R> {
    pub fn new(symbolizer: &'s Symbolizer<R>) -> Self {
        StackResolver {
            symbolizer,
            known: Default::default(),
            stacks: Vec::new(),
            last: Default::default(),
            leaves: Default::default(),
        }
    }

    /// What [`Symbolizer::resolve_sample`] gives for `s`.
    pub fn resolve<'a>(&mut self, s: &'a Sample) -> ResolvedSample<'a>
    where
        's: 'a,
    {
        let p = self.parts(s);
        let callers = self.callers(&p.callers);
        let mut frames = Vec::with_capacity(1 + callers.len());
        frames.push(p.leaf);
        frames.extend_from_slice(callers);
        ResolvedSample {
            comm: p.comm,
            pid: p.pid,
            tid: p.tid,
            frames,
        }
    }

    /// Sample `s` named: its task, leaf and callers.
    pub fn parts<'a>(&mut self, s: &'a Sample) -> SampleParts<'a>
    where
        's: 'a,
    {
        let sym = self.symbolizer;
        let at = s.address_space();
        let slot = match s.privilege {
            Privilege::Machine => Some(0),
            Privilege::Supervisor => Some(1),
            Privilege::User => None,
        };
        // (an M- or S-mode PC is firmware or kernel code: named by address)
        let leaf = match slot {
            Some(i) => *self.leaves[i]
                .entry(s.pc)
                .or_insert_with(|| sym.resolve(s.privilege, at, s.pc, false)),
            None => sym.resolve(s.privilege, at, s.pc, false),
        };
        // (consecutive samples often share a stack, as one allocation)
        let last = slot.and_then(|i| self.last_is(i, &s.stack));
        let callers = match (slot, last) {
            (None, _) => Callers::Own(sym.callers(s, at).collect()),
            (Some(_), Some(id)) => Callers::Shared(id),
            (Some(i), None) => match self.known[i].get(&*s.stack) {
                Some(Some(id)) => Callers::Shared(*id),
                Some(None) => Callers::Own(sym.callers(s, at).collect()),
                None => {
                    // (named here, not through `callers`, so that the
                    // frames borrow only the symbolizer and can be kept)
                    let callers: Vec<Frame<'s>> = s
                        .stack
                        .iter()
                        .map(|&ra| sym.resolve(s.privilege, at, ra, true))
                        .collect();
                    if callers.iter().all(|f| f.space != Space::User) {
                        let id = StackId(self.stacks.len() as u32);
                        self.stacks.push(callers.into());
                        self.known[i].insert(s.stack.clone(), Some(id));
                        Callers::Shared(id)
                    } else {
                        self.known[i].insert(s.stack.clone(), None);
                        Callers::Own(callers)
                    }
                }
            },
        };
        if let (Some(i), Callers::Shared(id)) = (slot, &callers) {
            self.last[i] = Some((s.stack.clone(), *id));
        }
        let (comm, pid, tid) = sym.task_of(s, at, leaf.dso);
        SampleParts {
            comm,
            pid,
            tid,
            leaf,
            callers,
        }
    }

    /// The id of `stack` if it is the last shared stack of slot `i`.
    fn last_is(&self, i: usize, stack: &Arc<[u64]>) -> Option<StackId> {
        self.last[i]
            .as_ref()
            .filter(|l| Arc::ptr_eq(&l.0, stack))
            .map(|l| l.1)
    }

    /// The frames `callers` stands for (innermost first).
    pub fn callers<'c, 'a>(&'c self, callers: &'c Callers<'a>) -> &'c [Frame<'a>]
    where
        's: 'a,
    {
        match callers {
            Callers::Shared(id) => self.stack(*id),
            Callers::Own(frames) => frames,
        }
    }

    /// The frames of a shared stack (innermost first).
    pub fn stack(&self, id: StackId) -> &[Frame<'s>] {
        &self.stacks[id.0 as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(name: &str, syms: &[(u64, u64, &str)]) -> SymbolTable {
        SymbolTable::from_ranges(name, syms.iter().map(|&(s, e, n)| (s, e, n.to_string())))
    }

    fn symbolizer() -> Symbolizer<SatpResolver> {
        let mut user = SatpResolver::new();
        let bb = user.add_image(
            "busybox",
            table(
                "busybox",
                &[
                    (0x10000, 0x10100, "main"),
                    (0x10100, 0x10200, "printf_core"),
                ],
            ),
        );
        let lib = user.add_image("libc.so", table("libc.so", &[(0x1000, 0x1100, "memcpy")]));
        user.add_space(
            0x8000_0000_0008_1234,
            0,
            "sh",
            42,
            vec![
                Mapping {
                    start: 0x10000,
                    end: 0x20000,
                    image: bb,
                    bias: 0,
                },
                Mapping {
                    start: 0x3f_0000_0000,
                    end: 0x3f_0001_0000,
                    image: lib,
                    bias: 0x3f_0000_0000,
                },
            ],
        );
        let mut s = Symbolizer::with_user(user);
        s.set_kernel(table(
            "[kernel.kallsyms]",
            &[(0xffffffff80001000, 0xffffffff80001100, "handle_exception")],
        ));
        s.set_firmware(table(
            "fw_jump.elf",
            &[(0x80000000, 0x80000100, "sbi_trap_handler")],
        ));
        s
    }

    #[test]
    fn each_privilege_uses_its_table() {
        let s = symbolizer();
        let at = AddressSpace {
            hart: 0,
            cycle: 5,
            satp: 0x8000_0000_0008_1234,
        };
        let f = s.resolve(Privilege::Machine, at, 0x80000010, false);
        assert_eq!(
            (f.symbol, f.offset, f.dso, f.where_name()),
            (Some("sbi_trap_handler"), 0x10, "fw_jump.elf", "firmware")
        );
        let f = s.resolve(Privilege::Supervisor, at, 0xffffffff80001008, false);
        assert_eq!(
            (f.symbol, f.offset, f.where_name()),
            (Some("handle_exception"), 8, "kernel")
        );
        let f = s.resolve(Privilege::User, at, 0x10104, false);
        assert_eq!(
            (f.symbol, f.offset, f.where_name()),
            (Some("printf_core"), 4, "busybox")
        );
        let f = s.resolve(Privilege::User, at, 0x3f_0000_1010, false);
        assert_eq!(
            (f.symbol, f.offset, f.file_addr, f.dso),
            (Some("memcpy"), 0x10, 0x1010, "libc.so")
        );
        // Inside a mapped binary but outside its symbols: unknown in that binary.
        let f = s.resolve(Privilege::User, at, 0x18000, false);
        assert_eq!((f.symbol, f.dso), (None, "busybox"));
        // Unmapped user address, or an unknown address space.
        let f = s.resolve(Privilege::User, at, 0x999999, false);
        assert_eq!((f.symbol, f.dso), (None, UNKNOWN));
        let other = AddressSpace {
            satp: 0x8000_0000_0000_0001,
            ..at
        };
        assert_eq!(
            s.resolve(Privilege::User, other, 0x10104, false).symbol,
            None
        );
    }

    #[test]
    fn physical_kernel_addresses_resolve_at_their_link_address() {
        let mut s = symbolizer();
        let at = AddressSpace {
            hart: 0,
            cycle: 5,
            satp: 0,
        };
        assert_eq!(
            s.resolve(Privilege::Supervisor, at, 0x8020_1008, false)
                .symbol,
            None
        );
        s.set_kernel_physical(0x8020_0000, 0x8120_0000, 0xffffffff80000000);
        let f = s.resolve(Privilege::Supervisor, at, 0x8020_1008, false);
        assert_eq!(
            (f.symbol, f.offset, f.addr, f.file_addr),
            (Some("handle_exception"), 8, 0x8020_1008, 0xffffffff80001008)
        );
        let f = s.resolve(Privilege::Supervisor, at, 0x8020_1010, true);
        assert_eq!(
            (f.symbol, f.space),
            (Some("handle_exception"), Space::Kernel)
        );
    }

    #[test]
    fn return_addresses_are_charged_to_the_call_site() {
        let s = symbolizer();
        let at = AddressSpace {
            hart: 0,
            cycle: 5,
            satp: 0x8000_0000_0008_1234,
        };
        // A call as the last instruction of main returns to printf_core's start.
        let f = s.resolve(Privilege::User, at, 0x10100, true);
        assert_eq!((f.symbol, f.offset), (Some("main"), 0x100));
    }

    #[test]
    fn sample_task_and_mixed_stack() {
        let s = symbolizer();
        let sample = Sample {
            hart: 1,
            cycle: 9,
            pc: 0xffffffff80001004,
            privilege: Privilege::Supervisor,
            satp: 0x8000_0000_0008_1234,
            stack: vec![0xffffffff80001080, 0x10050].into(),
            task: None,
        };
        let r = s.resolve_sample(&sample);
        assert_eq!((r.comm, r.pid, r.tid), ("sh", 42, 42));
        // The kernel's own word on the task wins over the address space's owner.
        let named = Sample {
            task: Some(crate::sample::Task {
                pid: 7,
                tid: 9,
                comm: "worker".into(),
            }),
            ..sample.clone()
        };
        let r = s.resolve_sample(&named);
        assert_eq!((r.comm, r.pid, r.tid), ("worker", 7, 9));
        let names: Vec<_> = r.frames.iter().map(|f| (f.symbol, f.space)).collect();
        assert_eq!(
            names,
            vec![
                (Some("handle_exception"), Space::Kernel),
                (Some("handle_exception"), Space::Kernel),
                (Some("main"), Space::User)
            ]
        );
        let boot = Sample {
            satp: 0,
            privilege: Privilege::Machine,
            pc: 0x80000000,
            stack: vec![].into(),
            ..sample
        };
        let r = s.resolve_sample(&boot);
        assert_eq!(
            (r.comm, r.frames[0].symbol),
            ("[firmware]", Some("sbi_trap_handler"))
        );
    }

    #[test]
    fn a_stack_resolver_names_every_sample_as_resolve_sample_does() {
        let mut s = symbolizer();
        // A second process maps libc where the first maps busybox.
        let lib = ImageId(1);
        s.user_mut().add_space(
            0x8000_0000_0009_0000,
            0,
            "other",
            43,
            vec![Mapping {
                start: 0x10000,
                end: 0x20000,
                image: lib,
                bias: 0xf000,
            }],
        );
        let kernel_stack: Arc<[u64]> = vec![0xffffffff80001080, 0xffffffff80001010].into();
        let into_user: Arc<[u64]> = vec![0xffffffff80001080, 0x10050].into();
        let sample = |privilege, pc, satp, stack: &Arc<[u64]>| Sample {
            hart: 0,
            cycle: 9,
            pc,
            privilege,
            satp,
            stack: stack.clone(),
            task: None,
        };
        let (a, b) = (0x8000_0000_0008_1234, 0x8000_0000_0009_0000);
        let samples = [
            sample(Privilege::Supervisor, 0xffffffff80001004, a, &kernel_stack),
            sample(Privilege::Supervisor, 0xffffffff80001008, b, &kernel_stack),
            sample(Privilege::Supervisor, 0xffffffff80001004, a, &into_user),
            sample(Privilege::Supervisor, 0xffffffff80001004, b, &into_user),
            sample(Privilege::Machine, 0x80000010, 0, &kernel_stack),
            sample(Privilege::Machine, 0x80000020, 0, &kernel_stack),
            sample(Privilege::User, 0x10104, a, &into_user),
            sample(Privilege::User, 0x10104, b, &into_user),
            sample(Privilege::Supervisor, 0xffffffff80001004, b, &into_user),
        ];
        let mut resolver = StackResolver::new(&s);
        for (i, x) in samples.iter().enumerate() {
            assert_eq!(resolver.resolve(x), s.resolve_sample(x), "sample {i}");
        }
        // (the case a stack cache could get wrong: one stack, two processes)
        assert_eq!(s.resolve_sample(&samples[2]).frames[2].symbol, Some("main"));
        assert_eq!(
            s.resolve_sample(&samples[3]).frames[2].symbol,
            Some("memcpy")
        );
    }

    #[test]
    fn later_entries_for_a_reused_root_table_win_from_their_cycle() {
        let mut user = SatpResolver::new();
        let a = user.add_image("a", table("a", &[(0x1000, 0x2000, "fa")]));
        let b = user.add_image("b", table("b", &[(0x1000, 0x2000, "fb")]));
        user.add_space(
            0x77,
            0,
            "first",
            1,
            vec![Mapping {
                start: 0x1000,
                end: 0x2000,
                image: a,
                bias: 0,
            }],
        );
        user.add_space(
            0x77,
            100,
            "second",
            2,
            vec![Mapping {
                start: 0x1000,
                end: 0x2000,
                image: b,
                bias: 0,
            }],
        );
        let s = Symbolizer::with_user(user);
        let at = |cycle| AddressSpace {
            hart: 0,
            cycle,
            satp: 0x77,
        };
        assert_eq!(
            s.resolve(Privilege::User, at(99), 0x1000, false).symbol,
            Some("fa")
        );
        assert_eq!(
            s.resolve(Privilege::User, at(100), 0x1000, false).symbol,
            Some("fb")
        );
        assert_eq!(s.user().process(at(100)).unwrap().comm, "second");
    }
}
