//! A small owned model of device-tree nodes. Devices describe themselves
//! with it; the machine serialises the whole tree (devices do not depend on
//! an FDT writer, and tests can inspect nodes directly).

/// A property value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prop {
    /// A property with no value (`interrupt-controller;`).
    Empty,
    U32(u32),
    U32s(Vec<u32>),
    U64(u64),
    Str(String),
    Strs(Vec<String>),
    Bytes(Vec<u8>),
}

/// A node: name (with unit address), properties in order, children in order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FdtNode {
    pub name: String,
    pub props: Vec<(String, Prop)>,
    pub children: Vec<FdtNode>,
}

impl FdtNode {
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            props: Vec::new(),
            children: Vec::new(),
        }
    }
    pub fn prop(mut self, name: &str, value: Prop) -> Self {
        self.props.push((name.to_string(), value));
        self
    }
    pub fn str(self, name: &str, value: &str) -> Self {
        self.prop(name, Prop::Str(value.to_string()))
    }
    pub fn strs(self, name: &str, values: &[&str]) -> Self {
        self.prop(
            name,
            Prop::Strs(values.iter().map(|s| s.to_string()).collect()),
        )
    }
    pub fn u32(self, name: &str, value: u32) -> Self {
        self.prop(name, Prop::U32(value))
    }
    pub fn u32s(self, name: &str, values: Vec<u32>) -> Self {
        self.prop(name, Prop::U32s(values))
    }
    pub fn empty(self, name: &str) -> Self {
        self.prop(name, Prop::Empty)
    }
    /// `reg = <base size>` with two address and two size cells (as `/soc`).
    pub fn reg(self, base: u64, size: u64) -> Self {
        self.u32s(
            "reg",
            vec![
                (base >> 32) as u32,
                base as u32,
                (size >> 32) as u32,
                size as u32,
            ],
        )
    }
    pub fn child(mut self, node: FdtNode) -> Self {
        self.children.push(node);
        self
    }
    /// The value of property `name`, if present.
    pub fn get(&self, name: &str) -> Option<&Prop> {
        self.props.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

/// Where a device's node goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Under `/soc` (memory-mapped devices).
    Soc,
    /// Directly under `/` (e.g. `syscon-poweroff`).
    Root,
}

/// Phandles and facts about the rest of the tree a device node refers to.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FdtCtx {
    /// Phandle of each hart's `riscv,cpu-intc` node, by hart index.
    pub cpu_intc: Vec<u32>,
    /// Phandle of the interrupt controller the board's lines go to (the PLIC).
    pub interrupt_parent: u32,
    /// Phandle of every device that asked for one, by device name (for
    /// `clocks`, `dmas`, `regmap` references named in configuration).
    pub phandles: std::collections::BTreeMap<String, u32>,
}

impl FdtCtx {
    /// Phandle of the device called `name`, if it has one.
    pub fn phandle(&self, name: &str) -> Option<u32> {
        self.phandles.get(name).copied()
    }
}
