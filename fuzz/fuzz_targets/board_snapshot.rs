#![no_main]
// Coverage-guided: see crates/fuzzing/src for what the target drives.
libfuzzer_sys::fuzz_target!(|data: &[u8]| hs_fuzzing::board_snapshot::run(data));
