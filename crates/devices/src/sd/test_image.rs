//! Scratch disk images for the SD tests, removed when dropped.

use std::path::{Path, PathBuf};

pub struct Img(PathBuf);

impl Img {
    /// A file of `len` zero bytes named after the test and the process.
    pub fn zeros(tag: &str, len: u64) -> Img {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("hs-sd-{}-{tag}-{n}.img", std::process::id()));
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(len).unwrap();
        Img(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.0).unwrap()
    }
}

impl Drop for Img {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
