//! Symbol tables and the symbolizer.

pub mod btf;
pub mod symbolizer;
pub mod table;
pub mod user;

pub use btf::{Btf, Member, TaskLayout};
pub use symbolizer::{
    satp_root, AddressSpace, Callers, Frame, ImageId, Mapping, NoUserSpace, Process,
    ResolvedSample, SampleParts, SatpResolver, Space, StackId, StackResolver, Symbolizer,
    UserImage, UserResolver, FIRMWARE_DSO, KERNEL_DSO, UNKNOWN,
};
pub use table::{
    parse_proc_maps, parse_proc_modules, LoadSegment, MapsEntry, ModuleLoad, Symbol, SymbolTable,
};
pub use user::{UserBinary, UserIdentifier};
