//! Snapshot files (`hs-snapshot`): any bytes decode or are refused with a
//! sentence; what decodes encodes back to the same snapshot, and its RAM
//! restores into a buffer of the size it names.

pub fn run(data: &[u8]) {
    let Ok(s) = hs_snapshot::Snapshot::decode(data) else {
        return;
    };
    let again = hs_snapshot::Snapshot::decode(&s.encode()).expect("an encoded snapshot decodes");
    assert_eq!(again, s, "a snapshot survives encode/decode");
    if s.ram_size <= 1 << 20 {
        let mut ram = vec![0u8; s.ram_size as usize];
        s.restore_ram(&mut ram)
            .expect("RAM of the named size restores");
    }
}

#[cfg(test)]
mod tests {
    /// The committed seed is a real snapshot, so the fuzzer starts inside the format.
    #[test]
    fn the_seed_decodes() {
        let p = crate::repo_dir().join("fuzz/seeds/snapshot/two-sections-one-page.snap");
        let s = hs_snapshot::Snapshot::decode(&std::fs::read(p).unwrap()).unwrap();
        assert_eq!(s.sections.len(), 2);
        assert_eq!((s.ram_size, s.pages.len()), (3 * 4096, 1));
    }
}
