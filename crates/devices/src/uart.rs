//! NS16550A UART (`ns16550a`), the registers Linux's 8250 driver and
//! OpenSBI's uart8250 use: RBR/THR, IER, IIR/FCR with a 16-byte receive
//! FIFO, LCR with DLAB (DLL/DLM), MCR with loopback, LSR, MSR, SCR.
//!
//! Transmission takes no simulated time: a byte written to THR leaves at
//! once (as in QEMU), so THRE/TEMT are always set outside loopback. Output
//! accumulates in a buffer the machine drains to its console sinks; input is
//! pushed by the machine when [`Uart16550::rx_room`] allows it. The device
//! itself never touches host I/O.

use std::collections::VecDeque;

use crate::fdt::{FdtCtx, FdtNode, Placement};
use crate::{BadAccess, Console, DevCtx, Device, Grant, IrqLine, Stat, WriteEffect};

pub const SIZE: u64 = 0x100;
/// Input clock QEMU's `virt` advertises (1.8432 MHz × 2).
pub const CLOCK_HZ: u32 = 3_686_400;
const FIFO_LEN: usize = 16;

// Register offsets.
const RBR_THR_DLL: u64 = 0;
const IER_DLM: u64 = 1;
const IIR_FCR: u64 = 2;
const LCR: u64 = 3;
const MCR: u64 = 4;
const LSR: u64 = 5;
const MSR: u64 = 6;
const SCR: u64 = 7;

// IER bits.
const IER_RDI: u8 = 0x01;
const IER_THRI: u8 = 0x02;
const IER_RLSI: u8 = 0x04;
const IER_MSI: u8 = 0x08;
// IIR values.
const IIR_NO_INT: u8 = 0x01;
const IIR_THRI: u8 = 0x02;
const IIR_RDI: u8 = 0x04;
const IIR_RLSI: u8 = 0x06;
const IIR_CTI: u8 = 0x0c;
const IIR_MSI: u8 = 0x00;
const IIR_FIFO_ENABLED: u8 = 0xc0;
// FCR bits.
const FCR_ENABLE: u8 = 0x01;
const FCR_CLEAR_RX: u8 = 0x02;
// LCR bits.
const LCR_DLAB: u8 = 0x80;
// MCR bits.
const MCR_DTR: u8 = 0x01;
const MCR_RTS: u8 = 0x02;
const MCR_OUT1: u8 = 0x04;
const MCR_OUT2: u8 = 0x08;
const MCR_LOOP: u8 = 0x10;
// LSR bits.
const LSR_DR: u8 = 0x01;
const LSR_OE: u8 = 0x02;
const LSR_ERRORS: u8 = 0x1e;
const LSR_THRE: u8 = 0x20;
const LSR_TEMT: u8 = 0x40;
// MSR bits.
const MSR_CTS: u8 = 0x10;
const MSR_DSR: u8 = 0x20;
const MSR_RI: u8 = 0x40;
const MSR_DCD: u8 = 0x80;
const MSR_DELTAS: u8 = 0x0f;

#[derive(serde::Serialize, serde::Deserialize)]
pub struct Uart16550 {
    #[serde(skip)]
    irq: Box<dyn IrqLine>,
    irq_level: bool,
    rx: VecDeque<u8>,
    ier: u8,
    fifo_enabled: bool,
    rx_trigger: usize,
    lcr: u8,
    mcr: u8,
    lsr_errors: u8,
    msr_deltas: u8,
    scr: u8,
    dll: u8,
    dlm: u8,
    thr_ipending: bool,
    out: Vec<u8>,
    stat_tx: u64,
    stat_rx: u64,
    stat_overruns: u64,
    stat_irqs: u64,
    stat_loopback: u64,
}

/// Registers with their FIFOs and counters; the interrupt line is the machine's.
impl crate::Persist for Uart16550 {
    fn save(&self) -> Result<Vec<u8>, String> {
        hs_snapshot::state::encode(self)
    }
    fn restore(&mut self, data: &[u8]) -> Result<(), String> {
        let mut fresh: Uart16550 = hs_snapshot::state::decode(data)?;
        if fresh.rx.len() > FIFO_LEN || !matches!(fresh.rx_trigger, 1 | 4 | 8 | 14) {
            return Err(format!(
                "the saved receive FIFO holds {} bytes (at most {FIFO_LEN}) with a trigger level of {}",
                fresh.rx.len(),
                fresh.rx_trigger
            ));
        }
        std::mem::swap(&mut fresh.irq, &mut self.irq);
        *self = fresh;
        Ok(())
    }
}

impl Uart16550 {
    pub fn new(irq: Box<dyn IrqLine>) -> Self {
        let mut u = Self {
            irq,
            irq_level: false,
            rx: VecDeque::with_capacity(FIFO_LEN),
            ier: 0,
            fifo_enabled: false,
            rx_trigger: 1,
            lcr: 0,
            mcr: MCR_OUT2,
            lsr_errors: 0,
            msr_deltas: 0,
            scr: 0,
            dll: 0x0c,
            dlm: 0,
            thr_ipending: false,
            out: Vec::new(),
            stat_tx: 0,
            stat_rx: 0,
            stat_overruns: 0,
            stat_irqs: 0,
            stat_loopback: 0,
        };
        u.update_irq();
        u
    }

    /// How many input bytes the receiver can take now without overrun.
    pub fn rx_room(&self) -> usize {
        if self.mcr & MCR_LOOP != 0 {
            return 0; // receiver is disconnected from the line in loopback
        }
        self.rx_capacity().saturating_sub(self.rx.len())
    }

    /// A byte arrives on the receive line. With no room it is lost and the
    /// overrun flag is set, as on the chip.
    pub fn receive(&mut self, byte: u8) {
        self.push_rx(byte);
        self.update_irq();
    }

    /// Take the bytes transmitted since the last call.
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// Has transmitted bytes not yet taken.
    pub fn has_output(&self) -> bool {
        !self.out.is_empty()
    }

    /// Baud rate the guest programmed, 0 if the divisor is 0.
    pub fn baud(&self) -> u32 {
        let div = u16::from_le_bytes([self.dll, self.dlm]) as u32;
        if div == 0 {
            0
        } else {
            CLOCK_HZ / (16 * div)
        }
    }

    fn rx_capacity(&self) -> usize {
        if self.fifo_enabled {
            FIFO_LEN
        } else {
            1
        }
    }

    fn push_rx(&mut self, byte: u8) {
        if self.rx.len() >= self.rx_capacity() {
            self.lsr_errors |= LSR_OE;
            self.stat_overruns += 1;
            if !self.fifo_enabled {
                // The holding register is overwritten by the new character.
                self.rx.clear();
                self.rx.push_back(byte);
            }
            return;
        }
        self.rx.push_back(byte);
        self.stat_rx += 1;
    }

    /// Modem status inputs: wired to our own outputs in loopback, otherwise
    /// a connected, ready peer (what QEMU shows without a real serial port).
    fn status_lines(&self) -> u8 {
        if self.mcr & MCR_LOOP == 0 {
            return MSR_DCD | MSR_DSR | MSR_CTS;
        }
        let mut s = 0;
        if self.mcr & MCR_RTS != 0 {
            s |= MSR_CTS;
        }
        if self.mcr & MCR_DTR != 0 {
            s |= MSR_DSR;
        }
        if self.mcr & MCR_OUT1 != 0 {
            s |= MSR_RI;
        }
        if self.mcr & MCR_OUT2 != 0 {
            s |= MSR_DCD;
        }
        s
    }

    fn lsr(&self) -> u8 {
        let mut v = self.lsr_errors | LSR_THRE | LSR_TEMT;
        if !self.rx.is_empty() {
            v |= LSR_DR;
        }
        v
    }

    fn interrupt_id(&self) -> u8 {
        if self.ier & IER_RLSI != 0 && self.lsr_errors & LSR_ERRORS != 0 {
            IIR_RLSI
        } else if self.ier & IER_RDI != 0 && !self.rx.is_empty() {
            // Below the trigger level a real chip waits 4 character times
            // and reports a timeout; we report the timeout at once.
            if self.fifo_enabled && self.rx.len() < self.rx_trigger {
                IIR_CTI
            } else {
                IIR_RDI
            }
        } else if self.ier & IER_THRI != 0 && self.thr_ipending {
            IIR_THRI
        } else if self.ier & IER_MSI != 0 && self.msr_deltas != 0 {
            IIR_MSI
        } else {
            IIR_NO_INT
        }
    }

    fn update_irq(&mut self) {
        let level = self.interrupt_id() != IIR_NO_INT;
        if level && !self.irq_level {
            self.stat_irqs += 1;
        }
        self.irq_level = level;
        self.irq.set_level(level);
    }

    fn set_mcr(&mut self, v: u8) {
        let before = self.status_lines();
        self.mcr = v & 0x1f;
        let after = self.status_lines();
        let changed = before ^ after;
        if changed & MSR_CTS != 0 {
            self.msr_deltas |= 0x01;
        }
        if changed & MSR_DSR != 0 {
            self.msr_deltas |= 0x02;
        }
        if before & MSR_RI != 0 && after & MSR_RI == 0 {
            self.msr_deltas |= 0x04;
        }
        if changed & MSR_DCD != 0 {
            self.msr_deltas |= 0x08;
        }
    }

    fn transmit(&mut self, byte: u8) {
        self.stat_tx += 1;
        if self.mcr & MCR_LOOP != 0 {
            self.stat_loopback += 1;
            self.push_rx(byte);
        } else {
            self.out.push(byte);
        }
        // The shift register empties at once: THR is free again.
        self.thr_ipending = true;
    }

    fn read_reg(&mut self, reg: u64) -> u8 {
        let dlab = self.lcr & LCR_DLAB != 0;
        match reg {
            RBR_THR_DLL if dlab => self.dll,
            RBR_THR_DLL => self.rx.pop_front().unwrap_or(0),
            IER_DLM if dlab => self.dlm,
            IER_DLM => self.ier,
            IIR_FCR => {
                let id = self.interrupt_id();
                if id == IIR_THRI {
                    self.thr_ipending = false;
                }
                id | if self.fifo_enabled {
                    IIR_FIFO_ENABLED
                } else {
                    0
                }
            }
            LCR => self.lcr,
            MCR => self.mcr,
            LSR => {
                let v = self.lsr();
                self.lsr_errors = 0;
                v
            }
            MSR => {
                let v = self.status_lines() | (self.msr_deltas & MSR_DELTAS);
                self.msr_deltas = 0;
                v
            }
            SCR => self.scr,
            _ => 0, // callers mask the offset to 0..8
        }
    }

    fn write_reg(&mut self, reg: u64, v: u8) {
        let dlab = self.lcr & LCR_DLAB != 0;
        match reg {
            RBR_THR_DLL if dlab => self.dll = v,
            RBR_THR_DLL => self.transmit(v),
            IER_DLM if dlab => self.dlm = v,
            IER_DLM => {
                let old = self.ier;
                self.ier = v & 0x0f;
                if (old ^ self.ier) & IER_THRI != 0 {
                    // Enabling THRI while THR is empty raises it (Linux's
                    // start_tx and its THRE-bug probe rely on this).
                    self.thr_ipending = self.ier & IER_THRI != 0 && self.lsr() & LSR_THRE != 0;
                }
            }
            IIR_FCR => {
                let enable = v & FCR_ENABLE != 0;
                if enable != self.fifo_enabled || v & FCR_CLEAR_RX != 0 {
                    self.rx.clear();
                }
                self.fifo_enabled = enable;
                self.rx_trigger = [1, 4, 8, 14][(v >> 6) as usize];
            }
            LCR => self.lcr = v,
            MCR => self.set_mcr(v),
            LSR | MSR => {} // read-only (factory test writes ignored)
            SCR => self.scr = v,
            _ => {}
        }
    }
}

impl Device for Uart16550 {
    crate::persistent!();
    fn name(&self) -> String {
        "uart0".into()
    }
    fn size(&self) -> u64 {
        SIZE
    }

    fn read(&mut self, _ctx: &mut DevCtx, offset: u64, size: u8) -> Result<u64, BadAccess> {
        if !crate::size_ok(size) {
            return Err(BadAccess);
        }
        // Registers are one byte wide (reg-shift 0) and repeat over the window.
        let v = self.read_reg(offset & 7);
        self.update_irq();
        Ok(v as u64)
    }

    fn write(
        &mut self,
        _ctx: &mut DevCtx,
        offset: u64,
        size: u8,
        val: u64,
    ) -> Result<WriteEffect, BadAccess> {
        if !crate::size_ok(size) {
            return Err(BadAccess);
        }
        let before = self.irq_level;
        self.write_reg(offset & 7, val as u8);
        self.update_irq();
        Ok(WriteEffect {
            irq_changed: before != self.irq_level,
            stop: false,
        })
    }

    fn fdt_nodes(&self, g: &Grant, ctx: &FdtCtx) -> Vec<(Placement, FdtNode)> {
        let node = FdtNode::new(g.node_name("serial"))
            .u32s("interrupts", g.irqs.clone())
            .u32("interrupt-parent", ctx.interrupt_parent)
            .u32("clock-frequency", CLOCK_HZ)
            .reg(g.base, g.size)
            .str("compatible", "ns16550a");
        vec![(Placement::Soc, node)]
    }

    fn console(&mut self) -> Option<&mut dyn Console> {
        Some(self)
    }

    fn stats(&self) -> Vec<Stat> {
        vec![
            Stat::new("uart0.tx_bytes", self.stat_tx, "bytes written to THR"),
            Stat::new(
                "uart0.rx_bytes",
                self.stat_rx,
                "bytes received into RBR/FIFO",
            ),
            Stat::new(
                "uart0.rx_overruns",
                self.stat_overruns,
                "received bytes lost to overrun",
            ),
            Stat::new(
                "uart0.loopback_bytes",
                self.stat_loopback,
                "bytes looped back by MCR.LOOP",
            ),
            Stat::new(
                "uart0.irqs",
                self.stat_irqs,
                "rising edges of the interrupt line",
            ),
        ]
    }
}

impl Console for Uart16550 {
    fn rx_room(&self) -> usize {
        Uart16550::rx_room(self)
    }
    fn receive(&mut self, byte: u8) {
        Uart16550::receive(self, byte)
    }
    fn has_output(&self) -> bool {
        Uart16550::has_output(self)
    }
    fn take_output(&mut self) -> Vec<u8> {
        Uart16550::take_output(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NoScheduler, WireIrq};

    fn uart() -> (Uart16550, WireIrq) {
        let w = WireIrq::new();
        (Uart16550::new(Box::new(w.clone())), w)
    }
    fn rd(u: &mut Uart16550, reg: u64) -> u8 {
        u.read(&mut DevCtx::new(0, 0, &mut NoScheduler), reg, 1)
            .unwrap() as u8
    }
    fn wr(u: &mut Uart16550, reg: u64, v: u8) {
        u.write(&mut DevCtx::new(0, 0, &mut NoScheduler), reg, 1, v as u64)
            .unwrap();
    }

    #[test]
    fn transmit_and_divisor_latch() {
        let (mut u, irq) = uart();
        wr(&mut u, LCR, 0x83);
        wr(&mut u, 0, 2); // 115200 baud
        wr(&mut u, 1, 0);
        wr(&mut u, LCR, 0x03);
        assert_eq!(u.baud(), 115_200);
        wr(&mut u, 0, b'h');
        wr(&mut u, 0, b'i');
        assert_eq!(u.take_output(), b"hi");
        assert_eq!(rd(&mut u, LSR) & 0x60, 0x60);
        assert!(!irq.is_high(), "no interrupts enabled");
        wr(&mut u, LCR, 0x83);
        assert_eq!(rd(&mut u, 0), 2, "DLL readable under DLAB");
    }

    #[test]
    fn thre_interrupt_as_linux_expects() {
        let (mut u, irq) = uart();
        // Linux's THRE test: enabling THRI with THR empty must interrupt.
        wr(&mut u, IER_DLM, IER_THRI);
        assert!(irq.is_high());
        assert_eq!(rd(&mut u, IIR_FCR), IIR_THRI);
        assert!(!irq.is_high(), "reading IIR cleared THRE");
        assert_eq!(rd(&mut u, IIR_FCR), IIR_NO_INT);
        wr(&mut u, IER_DLM, 0);
        wr(&mut u, IER_DLM, IER_THRI);
        assert_eq!(rd(&mut u, IIR_FCR), IIR_THRI, "re-asserted on re-enable");
        wr(&mut u, 0, b'x');
        assert!(irq.is_high(), "THR empties immediately after a write");
    }

    #[test]
    fn rx_fifo_trigger_and_overrun() {
        let (mut u, irq) = uart();
        wr(&mut u, IIR_FCR, 0x81); // FIFO on, trigger 8
        assert_eq!(rd(&mut u, IIR_FCR) & 0xc0, 0xc0, "16550A FIFO signature");
        wr(&mut u, IER_DLM, IER_RDI | IER_RLSI);
        assert_eq!(u.rx_room(), 16);
        u.receive(b'a');
        assert!(irq.is_high());
        assert_eq!(rd(&mut u, IIR_FCR) & 0x0f, IIR_CTI);
        for b in 1..8 {
            u.receive(b'a' + b);
        }
        assert_eq!(rd(&mut u, IIR_FCR) & 0x0f, IIR_RDI);
        for _ in 0..9 {
            u.receive(b'z');
        }
        assert_eq!(u.rx_room(), 0);
        assert_eq!(
            rd(&mut u, IIR_FCR) & 0x0f,
            IIR_RLSI,
            "overrun has top priority"
        );
        assert_eq!(rd(&mut u, LSR) & (LSR_OE | LSR_DR), LSR_OE | LSR_DR);
        assert_eq!(rd(&mut u, LSR) & LSR_OE, 0, "LSR read clears errors");
        let got: Vec<u8> = (0..16).map(|_| rd(&mut u, 0)).collect();
        assert_eq!(&got[..8], b"abcdefgh");
        assert_eq!(rd(&mut u, LSR) & LSR_DR, 0);
        assert!(!irq.is_high());
        wr(&mut u, IIR_FCR, 0x00);
        assert_eq!(u.rx_room(), 1, "no FIFO: one holding register");
    }

    #[test]
    fn loopback_as_the_8250_probe_checks() {
        let (mut u, _irq) = uart();
        wr(&mut u, MCR, MCR_LOOP | 0x0a);
        assert_eq!(
            rd(&mut u, MSR) & 0xf0,
            0x90,
            "8250 autoconfig loopback signature"
        );
        assert_eq!(u.rx_room(), 0);
        wr(&mut u, 0, 0x55);
        assert!(u.take_output().is_empty());
        assert_eq!(rd(&mut u, LSR) & LSR_DR, LSR_DR);
        assert_eq!(rd(&mut u, 0), 0x55);
        wr(&mut u, MCR, MCR_OUT2);
        assert_eq!(rd(&mut u, MSR) & 0xf0, 0xb0);
        wr(&mut u, SCR, 0xa5);
        assert_eq!(rd(&mut u, SCR), 0xa5);
        assert_eq!(
            rd(&mut u, SCR + 0x80),
            0xa5,
            "registers repeat across the window"
        );
    }
}
