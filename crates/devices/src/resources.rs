//! What a device asks the board for ([`Want`]), what the board gave it
//! ([`Grant`]), and the handles it is built with ([`Attach`]).
//!
//! A device never hard-codes where it sits or which interrupt it raises: it
//! states how big its register window is, how many interrupt lines it needs
//! and whether other nodes refer to it (a phandle); the board allocates them
//! (checked half-open windows, PLIC sources, phandles) and builds the device
//! from the result. The device then writes its own device-tree node from its
//! [`Grant`]. Devices signal one another only through wires the board hands
//! out by name ([`Attach::signal`]), never by naming each other's types.
//!
//! ```text
//! // a device with a 0x100-byte window anywhere in the platform window, one
//! // interrupt line and a phandle:
//! board.add(Want::new("gpio0").mmio(0x100).irqs(1).phandle(), |a| {
//!     Box::new(DwApbGpio::new(cfg, a.irq(0), a))
//! })?;
//! // QEMU virt's UART, at its fixed address and PLIC source:
//! board.add(Want::new("uart0").mmio_at(0x1000_0000, 0x100).irq_at(10), |a| Box::new(Uart16550::new(a.irq(0))))?;
//! ```

use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;

use hs_bus::{GuestRam, IrqLine, Signal};

use crate::Clock;

/// Where a register window goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// At this address (the QEMU `virt` devices, whose addresses stock
    /// kernels and firmware expect).
    At { base: u64, size: u64 },
    /// Anywhere in the board's platform window, aligned to its size rounded
    /// up to a power of two (at least 4 KiB).
    Anywhere { size: u64 },
}

/// One interrupt line a device asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqWant {
    /// This PLIC source.
    At(u32),
    /// The next free source of the platform range.
    Any,
}

/// What a device asks the board for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Want {
    /// Unique name: the map, statistics and `[board.NAME]` keys use it.
    pub name: String,
    pub window: Option<Window>,
    pub irqs: Vec<IrqWant>,
    /// Other nodes refer to this one (`interrupt-parent`, `regmap`, `clocks`, `dmas`).
    pub phandle: bool,
    /// Call [`crate::Device::inputs_changed`] when a board signal changes.
    pub listens: bool,
    /// Devices this one's node refers to by phandle (`clocks`, `dmas`):
    /// the board refuses a machine where one of them is missing.
    pub refers_to: Vec<String>,
    /// The device moves data as a bus master (a DMA controller): the board
    /// hands it [`crate::DevCtx::master`], guest RAM and the other devices'
    /// windows, whenever it calls the device.
    pub master: bool,
}

impl Want {
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            window: None,
            irqs: Vec::new(),
            phandle: false,
            listens: false,
            refers_to: Vec::new(),
            master: false,
        }
    }
    /// Reach memory and other devices as a bus master ([`crate::DevCtx::master`]).
    pub fn bus_master(mut self) -> Self {
        self.master = true;
        self
    }
    /// A register window of `size` bytes anywhere in the platform window.
    pub fn mmio(mut self, size: u64) -> Self {
        self.window = Some(Window::Anywhere { size });
        self
    }
    /// A register window of `size` bytes at `base`.
    pub fn mmio_at(mut self, base: u64, size: u64) -> Self {
        self.window = Some(Window::At { base, size });
        self
    }
    /// `n` interrupt lines from the platform range.
    pub fn irqs(mut self, n: usize) -> Self {
        self.irqs.extend(std::iter::repeat_n(IrqWant::Any, n));
        self
    }
    /// One interrupt line on PLIC source `source`.
    pub fn irq_at(mut self, source: u32) -> Self {
        self.irqs.push(IrqWant::At(source));
        self
    }
    pub fn phandle(mut self) -> Self {
        self.phandle = true;
        self
    }
    pub fn listens(mut self) -> Self {
        self.listens = true;
        self
    }
    /// This device's node refers to the device called `name` (which must
    /// ask for a phandle); resolve it with [`crate::FdtCtx::phandle`].
    pub fn refers_to(mut self, name: impl Into<String>) -> Self {
        self.refers_to.push(name.into());
        self
    }
}

/// What the board gave a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub name: String,
    /// Register window `[base, base + size)`; size 0 when it has none.
    pub base: u64,
    pub size: u64,
    /// PLIC source of each requested interrupt line, in request order.
    pub irqs: Vec<u32>,
    pub phandle: Option<u32>,
}

impl Grant {
    /// Node name with unit address, `kind@base` (as QEMU names them).
    pub fn node_name(&self, kind: &str) -> String {
        format!("{kind}@{:x}", self.base)
    }
    /// Phandle of this device (0 if it did not ask for one; the board
    /// always gives one to a device that asked).
    pub fn phandle(&self) -> u32 {
        self.phandle.unwrap_or(0)
    }
}

/// Wires of one board, by name. Two devices asking for the same name get
/// the same wire; this is how a peripheral reaches a DMA controller's
/// handshake interface (`dma0.hs2`) or a chip's interrupt pin reaches a GPIO
/// input (`gpio0.in5`) without either naming the other.
#[derive(Default, Debug)]
pub struct Signals {
    by_name: BTreeMap<String, Signal>,
    generation: Rc<Cell<u64>>,
}

impl Signals {
    pub fn new() -> Self {
        Self::default()
    }
    /// The wire called `name`, created low on first use.
    pub fn get(&mut self, name: &str) -> Signal {
        let gen = &self.generation;
        self.by_name
            .entry(name.to_string())
            .or_insert_with(|| Signal::with_generation(gen.clone()))
            .clone()
    }
    /// The wire called `name` if some device or the host asked for it.
    pub fn find(&self, name: &str) -> Option<Signal> {
        self.by_name.get(name).cloned()
    }
    /// Bumped by every change of any wire of this board.
    pub fn generation(&self) -> u64 {
        self.generation.get()
    }
    /// Names of every wire, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.by_name.keys().map(String::as_str)
    }
    /// Every wire's state ([`Signal::save`]) and the change counter, for a snapshot.
    pub fn save(&self) -> (u64, BTreeMap<String, [u64; 6]>) {
        let wires = self
            .by_name
            .iter()
            .map(|(n, s)| (n.clone(), s.save()))
            .collect();
        (self.generation.get(), wires)
    }
    /// Put back what [`Signals::save`] gave; a wire this board lacks is
    /// refused by name (the snapshot is of another board).
    pub fn restore(
        &mut self,
        generation: u64,
        wires: &BTreeMap<String, [u64; 6]>,
    ) -> Result<(), String> {
        if let Some(n) = wires.keys().find(|n| !self.by_name.contains_key(*n)) {
            return Err(format!("the snapshot has a wire `{n}` this board does not"));
        }
        for (name, sig) in &self.by_name {
            sig.restore(wires.get(name).copied().unwrap_or_default());
        }
        self.generation.set(generation);
        Ok(())
    }
}

/// What a device is built with: its grant, its interrupt lines, guest RAM
/// (for DMA), the clock, and the board's named wires.
pub struct Attach<'a> {
    pub grant: &'a Grant,
    irq_lines: Vec<Option<Box<dyn IrqLine>>>,
    pub ram: &'a GuestRam,
    pub clock: Clock,
    pub signals: &'a mut Signals,
    /// Rates of the clock devices already on the board ([`crate::Device::clock_rate`]).
    pub rates: BTreeMap<String, u64>,
}

impl<'a> Attach<'a> {
    pub fn new(
        grant: &'a Grant,
        irq_lines: Vec<Box<dyn IrqLine>>,
        ram: &'a GuestRam,
        clock: Clock,
        signals: &'a mut Signals,
    ) -> Self {
        Self {
            grant,
            irq_lines: irq_lines.into_iter().map(Some).collect(),
            ram,
            clock,
            signals,
            rates: BTreeMap::new(),
        }
    }
    /// Rate in Hz of the clock device called `name`, if it is on the board
    /// (the board adds devices that refer to others after those that do not).
    pub fn clock_rate(&self, name: &str) -> Option<u64> {
        self.rates.get(name).copied()
    }
    /// Interrupt line `i` (in the order of the [`Want`]). Each line is handed
    /// out once; asking again, or for a line that was not requested, gives a
    /// line connected to nothing (a device bug, never a host fault).
    pub fn irq(&mut self, i: usize) -> Box<dyn IrqLine> {
        self.irq_lines
            .get_mut(i)
            .and_then(Option::take)
            .unwrap_or_else(|| Box::new(Signal::new()))
    }
    /// The board wire called `name`.
    pub fn signal(&mut self, name: &str) -> Signal {
        self.signals.get(name)
    }
}

/// Builds a device from what the board gave it.
pub type MakeDevice = Box<dyn FnOnce(&mut Attach) -> Box<dyn crate::Device>>;

/// A device with its request, ready for `board.add`.
pub struct Plug {
    pub want: Want,
    pub make: MakeDevice,
}

impl Plug {
    pub fn new(
        want: Want,
        make: impl FnOnce(&mut Attach) -> Box<dyn crate::Device> + 'static,
    ) -> Self {
        Self {
            want,
            make: Box::new(make),
        }
    }
}

/// A value of a device's configuration key.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    Int(i64),
    Bool(bool),
    Str(String),
}

impl ParamValue {
    fn kind(&self) -> &'static str {
        match self {
            ParamValue::Int(_) => "an integer",
            ParamValue::Bool(_) => "a boolean",
            ParamValue::Str(_) => "a string",
        }
    }
}

/// A configuration key a device refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("key `{key}`: {message}")]
pub struct ParamError {
    /// The key within the device's table (`ngpios`), or `kind`.
    pub key: String,
    pub message: String,
}

/// The configuration of one optional device: `[board.NAME]` with
/// `kind = "..."` and the device's own keys.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceConfig {
    pub name: String,
    pub kind: String,
    pub params: BTreeMap<String, ParamValue>,
}

impl DeviceConfig {
    pub fn new(name: impl Into<String>, kind: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            kind: kind.into(),
            params: BTreeMap::new(),
        }
    }
    pub fn with(mut self, key: &str, value: ParamValue) -> Self {
        self.params.insert(key.to_string(), value);
        self
    }
}

/// Reads a device's keys; every key must be read ([`Params::finish`] refuses
/// the ones no device knows, so a typo is an error, not a silent default).
pub struct Params<'a> {
    cfg: &'a DeviceConfig,
    used: Vec<&'a str>,
}

impl<'a> Params<'a> {
    pub fn new(cfg: &'a DeviceConfig) -> Self {
        Self {
            cfg,
            used: Vec::new(),
        }
    }
    pub fn name(&self) -> &str {
        &self.cfg.name
    }
    fn take(&mut self, key: &'a str) -> Option<&'a ParamValue> {
        self.used.push(key);
        self.cfg.params.get(key)
    }
    /// Integer `key` in `min..=max`, `default` when absent.
    pub fn int(
        &mut self,
        key: &'a str,
        default: i64,
        min: i64,
        max: i64,
    ) -> Result<i64, ParamError> {
        match self.take(key) {
            None => Ok(default),
            Some(ParamValue::Int(v)) if (min..=max).contains(v) => Ok(*v),
            Some(ParamValue::Int(v)) => Err(ParamError {
                key: key.into(),
                message: format!("{v} is out of range ({min} to {max})"),
            }),
            Some(other) => Err(ParamError {
                key: key.into(),
                message: format!("is {}, not an integer", other.kind()),
            }),
        }
    }
    pub fn bool(&mut self, key: &'a str, default: bool) -> Result<bool, ParamError> {
        match self.take(key) {
            None => Ok(default),
            Some(ParamValue::Bool(v)) => Ok(*v),
            Some(other) => Err(ParamError {
                key: key.into(),
                message: format!("is {}, not a boolean", other.kind()),
            }),
        }
    }
    pub fn string(&mut self, key: &'a str) -> Result<Option<String>, ParamError> {
        match self.take(key) {
            None => Ok(None),
            Some(ParamValue::Str(v)) => Ok(Some(v.clone())),
            Some(other) => Err(ParamError {
                key: key.into(),
                message: format!("is {}, not a string", other.kind()),
            }),
        }
    }
    /// Every key of the table, in order (child tables appear as `child.key`).
    pub fn keys(&self) -> Vec<&'a str> {
        self.cfg.params.keys().map(String::as_str).collect()
    }
    /// Refuse keys nobody read.
    pub fn finish(self) -> Result<(), ParamError> {
        match self
            .cfg
            .params
            .keys()
            .find(|k| !self.used.contains(&k.as_str()))
        {
            Some(k) => Err(ParamError {
                key: k.clone(),
                message: format!("is not a key of a `{}` device", self.cfg.kind),
            }),
            None => Ok(()),
        }
    }
}

/// A kind of optional device the configuration can name.
pub struct Kind {
    /// `kind = "..."` in the configuration.
    pub name: &'static str,
    /// Validate the configuration and make the device's plug.
    pub plug: fn(&DeviceConfig) -> Result<Plug, ParamError>,
}

/// The plug for `cfg`, from the kinds in [`crate::KINDS`].
pub fn plug(cfg: &DeviceConfig) -> Result<Plug, ParamError> {
    match crate::KINDS.iter().find(|k| k.name == cfg.kind) {
        Some(k) => (k.plug)(cfg),
        None => {
            let known: Vec<String> = crate::KINDS
                .iter()
                .map(|k| format!("\"{}\"", k.name))
                .collect();
            Err(ParamError {
                key: "kind".into(),
                message: format!(
                    "`{}` is not a device kind (known: {})",
                    cfg.kind,
                    known.join(", ")
                ),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_check_range_type_and_unknown_keys() {
        let cfg = DeviceConfig::new("x", "k")
            .with("n", ParamValue::Int(40))
            .with("b", ParamValue::Str("no".into()));
        let mut p = Params::new(&cfg);
        assert_eq!(
            p.int("n", 1, 1, 32).unwrap_err().to_string(),
            "key `n`: 40 is out of range (1 to 32)"
        );
        assert_eq!(
            p.bool("b", false).unwrap_err().to_string(),
            "key `b`: is a string, not a boolean"
        );
        let cfg = DeviceConfig::new("x", "k").with("typo", ParamValue::Int(1));
        let mut p = Params::new(&cfg);
        assert_eq!(p.int("n", 7, 1, 32), Ok(7));
        assert_eq!(
            p.finish().unwrap_err().to_string(),
            "key `typo`: is not a key of a `k` device"
        );
        let e = plug(&DeviceConfig::new("x", "nope")).err().unwrap();
        assert_eq!(e.key, "kind");
        assert!(e.message.starts_with("`nope` is not a device kind"), "{e}");
    }

    #[test]
    fn attach_hands_each_line_out_once() {
        let g = Grant {
            name: "d".into(),
            base: 0,
            size: 0,
            irqs: vec![5],
            phandle: None,
        };
        let ram = GuestRam::new(0x8000_0000, 4096).unwrap();
        let mut sig = Signals::new();
        let wire = Signal::new();
        let mut a = Attach::new(
            &g,
            vec![Box::new(wire.clone())],
            &ram,
            Clock {
                hz: 1,
                cycles_per_tick: 1,
            },
            &mut sig,
        );
        a.irq(0).set_level(true);
        assert!(wire.is_high());
        a.irq(0).set_level(false); // a spare, unconnected line
        a.irq(9).set_level(false);
        assert!(wire.is_high());
        let s1 = a.signal("dma0.hs0");
        let s2 = sig.get("dma0.hs0");
        hs_bus::GpioLine::set_level(&s1, true);
        assert!(s2.is_high());
        assert_eq!(sig.generation(), 1);
    }
}
