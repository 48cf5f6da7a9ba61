//! Every fuzz target on stable, as part of `cargo test`: the committed seeds
//! (`fuzz/seeds/TARGET/`, each a case libFuzzer found worth keeping or a
//! hand-made well-formed input) and a fixed set of pseudo-random inputs. A
//! target panics only on a bug, so any panic here is one.

use std::path::PathBuf;

fn seeds(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = hs_fuzzing::repo_dir().join("fuzz/seeds").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (every target keeps seeds)", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let data = std::fs::read(&p).unwrap();
            (p, data)
        })
        .collect()
}

/// xorshift64*: the same inputs on every machine.
fn random_inputs(seed: u64, count: usize) -> Vec<Vec<u8>> {
    let mut s = seed | 1;
    let mut next = move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    (0..count)
        .map(|_| {
            let len = (next() % 6000) as usize;
            (0..len).map(|_| next() as u8).collect()
        })
        .collect()
}

#[test]
fn every_target_has_seeds_and_survives_them() {
    for (name, target) in hs_fuzzing::TARGETS {
        let seeds = seeds(name);
        assert!(!seeds.is_empty(), "fuzz/seeds/{name}/ is empty");
        for (path, data) in seeds {
            let r = std::panic::catch_unwind(|| target(&data));
            assert!(
                r.is_ok(),
                "{name}: seed {} makes the target panic",
                path.display()
            );
        }
    }
}

#[test]
fn every_target_survives_random_inputs() {
    for (k, (name, target)) in hs_fuzzing::TARGETS.iter().enumerate() {
        for (i, data) in random_inputs(0x5eed + k as u64, 150).iter().enumerate() {
            let r = std::panic::catch_unwind(|| target(data));
            assert!(
                r.is_ok(),
                "{name}: random input {i} ({} bytes) makes the target panic",
                data.len()
            );
        }
    }
}

/// A program that only spins (`j .`, every CSR value zero: U-mode without
/// PMP access traps to M-mode at the same place) runs the whole budget the
/// target gives it, with every invariant the target checks holding.
#[test]
fn a_spinning_program_runs_its_whole_budget() {
    // The header: satp mode and page (2 bytes), then 30 u64 values.
    let mut data = vec![0u8; 2 + 8 * 30];
    data.extend(std::iter::repeat_n(0, 4096)); // page tables
    data.extend(0x0000_006fu32.to_le_bytes()); // j .
    hs_fuzzing::hart::run(&data);
}
