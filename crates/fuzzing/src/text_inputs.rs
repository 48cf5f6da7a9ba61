//! What the user writes: machine descriptions (timing model and devices)
//! and study scenarios. Any text is either accepted or refused with an
//! error; an accepted machine description's devices build a board.

use std::path::Path;

use hs_bus::GuestRam;
use hs_machine::hs_devices::Clock;
use hs_machine::layout::DRAM_BASE;
use hs_machine::MachineConfig;

pub fn machine_toml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = crate::repo_dir().join("machines/fuzzed.toml");
    if let Ok(desc) = hs_timing::desc::MachineDesc::parse(&path, text) {
        let _ = hs_machine::config::ipi_policy(desc.ipi);
    }
    let Ok(devices) = hs_machine::config::parse_devices(&path, text) else {
        return;
    };
    let ram = GuestRam::new(DRAM_BASE, 1 << 20).expect("1 MiB of RAM");
    let mut cfg = MachineConfig {
        devices,
        ..MachineConfig::default()
    };
    let clock = Clock {
        hz: cfg.hz,
        cycles_per_tick: cfg.hz / 10_000_000,
    };
    // Refusals (a clash, a missing clock) are errors; a board that builds
    // has a device tree.
    if let Ok((board, _)) = hs_machine::machine::build_board(&mut cfg, clock, &ram) {
        let ctx = board.fdt_ctx(vec![1]);
        let _ = board.fdt_nodes(&ctx);
    }
}

pub fn scenario_toml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let repo = crate::repo_dir();
    let ctx = hs_lab::Context {
        guest_dir: repo.join("guest"),
    };
    let path = repo.join("studies/fuzzed.toml");
    if let Ok(s) = hs_lab::Scenario::parse(Path::new(&path), text, &ctx) {
        assert!(!s.variants.is_empty(), "an accepted scenario has a variant");
    }
}
