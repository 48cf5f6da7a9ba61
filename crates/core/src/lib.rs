//! The hart: registers, CSRs, privilege modes, traps, MMU, execution.
//!
//! API skeleton: the execution engine is being written; `run` currently
//! reports `Exit::Stop` immediately so board code can be developed against it.

use hs_bus::{GuestRam, SystemBus};
pub use hs_timing::{Atomic, TimingModel};

/// ISA string the device tree advertises (`riscv,isa`).
pub const ISA_STRING: &str = "rv64imafdc_zicntr_zicsr_zifencei_zihpm_sstc";
/// Extension names for `riscv,isa-extensions`.
pub const ISA_EXTENSIONS: &[&str] =
    &["i", "m", "a", "f", "d", "c", "zicntr", "zicsr", "zifencei", "zihpm", "sstc"];

/// Static configuration of one hart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HartConfig {
    pub hart_id: u64,
    /// `time` CSR = cycle / cycles_per_tick.
    pub cycles_per_tick: u64,
}

/// Privilege mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priv {
    User = 0,
    Supervisor = 1,
    Machine = 3,
}

/// A marker HINT (see docs/markers.md) that retired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkerCall {
    /// imm - 0x480.
    pub op: u16,
    /// a0..a3 at retirement.
    pub args: [u64; 4],
}

/// Why `run` returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Reached `until_cycle`.
    Budget,
    /// Executed WFI and no interrupt is pending; machine may fast-forward.
    Idle,
    /// The marker HINT retired (pc already advanced).
    Marker(MarkerCall),
    /// An MMIO write reported irq_changed; machine re-evaluates interrupts now.
    IrqCheck,
    /// An MMIO write reported stop.
    Stop,
}

/// One RISC-V hart.
pub struct Hart<T: TimingModel = Atomic> {
    pub timing: T,
    cfg: HartConfig,
    #[allow(dead_code)]
    ram: GuestRam,
    x: [u64; 32],
    pc: u64,
    prv: Priv,
    cycle: u64,
    instret: u64,
    platform_irqs: u64,
}

impl<T: TimingModel> Hart<T> {
    pub fn new(cfg: HartConfig, ram: GuestRam, timing: T) -> Self {
        Self { timing, cfg, ram, x: [0; 32], pc: 0, prv: Priv::Machine, cycle: 0, instret: 0, platform_irqs: 0 }
    }
    /// M-mode, registers zero, as after power-on.
    pub fn reset(&mut self, pc: u64) {
        self.x = [0; 32];
        self.pc = pc;
        self.prv = Priv::Machine;
    }
    pub fn x(&self, r: usize) -> u64 {
        self.x[r & 31]
    }
    pub fn set_x(&mut self, r: usize, v: u64) {
        if r & 31 != 0 {
            self.x[r & 31] = v;
        }
    }
    pub fn pc(&self) -> u64 {
        self.pc
    }
    pub fn set_pc(&mut self, pc: u64) {
        self.pc = pc;
    }
    pub fn priv_mode(&self) -> Priv {
        self.prv
    }
    /// Local time in cycles (mcycle).
    pub fn cycle(&self) -> u64 {
        self.cycle
    }
    pub fn instret(&self) -> u64 {
        self.instret
    }
    /// Idle fast-forward: time passes, nothing retires.
    pub fn advance_to(&mut self, cycle: u64) {
        self.cycle = self.cycle.max(cycle);
    }
    /// Platform-driven pending bits in `mip` layout: MSIP(1<<3), MTIP(1<<7), SEIP(1<<9), MEIP(1<<11).
    pub fn set_platform_irqs(&mut self, bits: u64) {
        self.platform_irqs = bits;
    }
    /// Earliest cycle at which this hart's own timer (Sstc stimecmp) fires, if armed.
    pub fn next_timer_cycle(&self) -> Option<u64> {
        None
    }
    /// Run until `cycle() >= until_cycle` or another exit. Interrupts are checked between blocks.
    pub fn run<B: SystemBus>(&mut self, _bus: &mut B, _until_cycle: u64) -> Exit {
        let _ = self.cfg;
        Exit::Stop
    }
    /// Read guest virtual memory through the current translation. Err if any byte is unmapped.
    pub fn read_virt(&self, _va: u64, _buf: &mut [u8]) -> Result<(), ()> {
        Err(())
    }
    /// Observation: read any CSR without side effects.
    pub fn csr(&self, _num: u16) -> Option<u64> {
        None
    }
}
