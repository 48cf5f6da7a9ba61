//! Every device's register file, through the board a run gets: the QEMU
//! `virt` devices plus one machine description's devices (picked by the
//! first byte), then MMIO reads and writes of any width at any offset in
//! and just past each window, RAM filled with what DMA engines, virtqueues
//! and descriptor rings will read (pointers into RAM, into device windows,
//! anywhere), and time passing so device events fire.

use std::path::Path;

use hs_bus::{Access, GuestRam, SystemBus};
use hs_machine::hs_devices::Clock;
use hs_machine::layout::DRAM_BASE;
use hs_machine::{Board, MachineConfig};

use crate::Input;

const RAM: u64 = 1 << 20;

/// The machine descriptions with devices (and none: the `virt` devices only).
const MACHINES: &[(&str, &str)] = &[
    ("none", ""),
    (
        "atomic-spi.toml",
        include_str!("../../../machines/atomic-spi.toml"),
    ),
    (
        "atomic-enc28j60.toml",
        include_str!("../../../machines/atomic-enc28j60.toml"),
    ),
    (
        "atomic-ethoc.toml",
        include_str!("../../../machines/atomic-ethoc.toml"),
    ),
    (
        "atomic-virtio-net.toml",
        include_str!("../../../machines/atomic-virtio-net.toml"),
    ),
    (
        "inorder-sd.toml",
        include_str!("../../../machines/inorder-sd.toml"),
    ),
    (
        "inorder-virtio-blk.toml",
        include_str!("../../../machines/inorder-virtio-blk.toml"),
    ),
];

/// Serve every device event due by `t`, in time order (the machine's loop).
pub(crate) fn run_to(b: &mut Board, t: u64) {
    let fired = b.fire_events_through(t, 1_000_000);
    assert!(fired < 1_000_000, "device events never end");
}

pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let machine = input.u8() as usize % MACHINES.len();
    let ram = GuestRam::new(DRAM_BASE, RAM).expect("1 MiB of RAM");
    let mut board = build(machine, &ram);
    let now = drive(&mut board, &ram, &mut input, 4000);
    run_to(&mut board, now + 20_000_000);
    // What a run reports at its end, and the device tree, still work.
    let _ = board.device_stats();
    let ctx = board.fdt_ctx(vec![1, 2]);
    let _ = board.fdt_nodes(&ctx);
}

/// The board of `MACHINES[machine]` for 2 harts on `ram`.
pub(crate) fn build(machine: usize, ram: &GuestRam) -> Board {
    let (name, text) = MACHINES[machine % MACHINES.len()];
    let mut cfg = MachineConfig {
        harts: 2,
        devices: if text.is_empty() {
            Vec::new()
        } else {
            let path = crate::repo_dir().join("machines").join(name);
            hs_machine::config::parse_devices(Path::new(&path), text)
                .unwrap_or_else(|e| panic!("{name} no longer parses: {e}"))
        },
        ..MachineConfig::default()
    };
    let clock = Clock {
        hz: cfg.hz,
        cycles_per_tick: cfg.hz / 10_000_000,
    };
    let (board, _) = hs_machine::machine::build_board(&mut cfg, clock, ram)
        .unwrap_or_else(|e| panic!("{name}: the board does not build: {e}"));
    board
}

/// Up to `max_ops` guest actions from `input` (MMIO, RAM contents, time);
/// returns the time reached.
pub(crate) fn drive(board: &mut Board, ram: &GuestRam, input: &mut Input, max_ops: usize) -> u64 {
    // Device windows, and RAM addresses worth pointing at.
    let windows: Vec<(u64, u64)> = board
        .windows()
        .into_iter()
        .map(|(_, base, end)| (base, end - base))
        .collect();
    let pointer = |input: &mut Input| match input.u8() % 4 {
        0 => DRAM_BASE + u64::from(input.u16()) * 16 % RAM,
        1 => {
            let (base, size) = windows[input.u8() as usize % windows.len()];
            base + u64::from(input.u16()) % size
        }
        2 => DRAM_BASE + RAM - u64::from(input.u8() % 32),
        _ => input.u64(),
    };
    let mut now = 0u64;
    let mut ops = 0;
    while !input.is_empty() && ops < max_ops {
        ops += 1;
        now += u64::from(input.u16()) * 8;
        run_to(board, now);
        let acc = Access {
            hart: (input.u8() & 1) as usize,
            now,
        };
        match input.u8() % 8 {
            // Bytes into RAM: descriptors, rings, frames, buffers.
            0 => {
                let at = DRAM_BASE + u64::from(input.u16()) * 16 % RAM;
                let len = input.u8() as usize;
                let bytes = input.bytes(len);
                let fit = bytes.len().min((DRAM_BASE + RAM - at) as usize);
                assert!(ram.write_bytes(at, &bytes[..fit]));
            }
            // A pointer into RAM, so a ring or chain leads somewhere.
            1 => {
                let at = DRAM_BASE + u64::from(input.u16()) * 8 % RAM;
                let p = pointer(input);
                assert!(ram.write(at, 8, p));
            }
            // A device register written with a pointer (a ring or buffer base).
            2 => {
                let (base, size) = windows[input.u8() as usize % windows.len()];
                let off = (u64::from(input.u16()) % size) & !3;
                let p = pointer(input);
                let _ = board.mmio_write(acc, base + off, 4, p);
            }
            // Any access at any offset in or just past a window.
            _ => {
                let (base, size) = windows[input.u8() as usize % windows.len()];
                let off = u64::from(input.u16()) % (size + 16);
                let width = 1u8 << (input.u8() % 4);
                if input.u8() & 1 == 0 {
                    let _ = board.mmio_read(acc, base + off, width);
                } else {
                    let _ = board.mmio_write(acc, base + off, width, input.u64());
                }
            }
        }
        let _ = board.irq_bits(0, now);
    }
    now
}
