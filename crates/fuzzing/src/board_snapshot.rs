//! Snapshot state of every device (issue 17), through the board a run
//! gets: the guest drives the devices into some state (as `board` does),
//! the board is saved, and a fresh board of the same machine restores it
//! (which must succeed and save back to the same bytes); then the sections
//! are corrupted (bytes flipped, cut short, swapped between devices) and
//! restored into another fresh board, which must refuse or accept them
//! without a panic, and run on either way.

use std::collections::BTreeMap;

use hs_bus::GuestRam;
use hs_machine::layout::DRAM_BASE;

use crate::board::{build, drive, run_to};
use crate::Input;

pub fn run(data: &[u8]) {
    let mut input = Input::new(data);
    let machine = input.u8() as usize;
    let ram = GuestRam::new(DRAM_BASE, 1 << 20).expect("1 MiB of RAM");
    let mut board = build(machine, &ram);
    let ops = 1 + input.u8() as usize * 4;
    let now = drive(&mut board, &ram, &mut input, ops);
    let mut saved = BTreeMap::new();
    board
        .save(&mut saved)
        .expect("every device of these machines saves its state");

    // The round trip.
    let ram2 = GuestRam::new(DRAM_BASE, 1 << 20).expect("1 MiB of RAM");
    let mut fresh = build(machine, &ram2);
    fresh
        .restore(&saved)
        .unwrap_or_else(|e| panic!("a board's own snapshot does not restore: {e}"));
    let mut again = BTreeMap::new();
    fresh.save(&mut again).expect("a restored board saves");
    for (name, data) in &saved {
        assert_eq!(
            String::from_utf8_lossy(data),
            String::from_utf8_lossy(&again[name]),
            "section `{name}` changed in a round trip"
        );
    }

    // Corrupted sections.
    let names: Vec<String> = saved.keys().cloned().collect();
    let mut bad = saved.clone();
    for _ in 0..1 + input.u8() % 4 {
        let name = &names[input.u8() as usize % names.len()];
        let what = input.u8();
        let data = bad.get_mut(name).expect("a section");
        match what % 4 {
            0 if !data.is_empty() => {
                let at = input.u16() as usize % data.len();
                data[at] = input.u8();
            }
            1 => {
                let keep = input.u16() as usize % (data.len() + 1);
                data.truncate(keep);
            }
            2 => {
                let other = &names[input.u8() as usize % names.len()];
                *data = saved[other].clone();
            }
            _ => {
                let n = input.u8() as usize;
                *data = input.bytes(n).to_vec();
            }
        }
    }
    let mut victim = build(machine, &ram2);
    let _ = victim.restore(&bad);
    run_to(&mut victim, now + 20_000_000);
    let _ = victim.device_stats();
}
