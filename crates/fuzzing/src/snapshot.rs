//! Snapshot files (`hs-snapshot`): any bytes decode or are refused with a
//! sentence; what decodes encodes back to the same snapshot, and its RAM
//! restores into a buffer of the size it names.
//!
//! A file ends in the SHA-256 of the rest, which refuses nearly every
//! mutated input before its structure is read; so each input is also
//! tried with that hash made right, and the fuzzer reaches the parser of
//! sections, lengths and pages behind it.

use sha2::{Digest, Sha256};

/// Bytes of the content hash at a snapshot's end.
const HASH: usize = 32;

pub fn run(data: &[u8]) {
    check(data);
    if let Some(sealed) = resealed(data) {
        check(&sealed);
    }
}

/// `data` with its last [`HASH`] bytes replaced by the hash of the rest
/// (None when too short, or when they already were).
fn resealed(data: &[u8]) -> Option<Vec<u8>> {
    let body = data.len().checked_sub(HASH)?;
    let mut out = data.to_vec();
    out[body..].copy_from_slice(&Sha256::digest(&data[..body]));
    (out != data).then_some(out)
}

fn check(data: &[u8]) {
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

    /// A change behind the hash is refused for the hash alone until the
    /// input is resealed; then the structure is what decides.
    #[test]
    fn a_resealed_input_is_read_past_the_hash() {
        use hs_snapshot::Snapshot;
        let p = crate::repo_dir().join("fuzz/seeds/snapshot/two-sections-one-page.snap");
        let seed = std::fs::read(p).unwrap();
        assert_eq!(super::resealed(&seed), None, "the seed's hash is right");
        let hash_refusal = "content hash mismatch: the file is corrupt or truncated";
        // a byte of the RAM page (just before the hash) changed: the page differs
        let mut page_byte = seed.clone();
        let at = page_byte.len() - super::HASH - 1;
        page_byte[at] ^= 0xff;
        assert_eq!(Snapshot::decode(&page_byte).unwrap_err(), hash_refusal);
        let sealed = super::resealed(&page_byte).unwrap();
        let (a, b) = (
            Snapshot::decode(&seed).unwrap(),
            Snapshot::decode(&sealed).unwrap(),
        );
        assert_eq!((a.sections, a.ram_size), (b.sections, b.ram_size));
        assert_ne!(a.pages, b.pages);
        // a page count that lies: the structure refuses it, not the hash
        let mut lying = seed.clone();
        let count_at = seed.len() - super::HASH - 4096 - 8 - 8;
        lying[count_at] = 9;
        let err = Snapshot::decode(&super::resealed(&lying).unwrap()).unwrap_err();
        assert_ne!(err, hash_refusal);
        super::run(&lying);
    }
}
