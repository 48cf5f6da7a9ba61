//! Records in the binary whether it was built with a profile of its own
//! runs (LLVM profile-guided optimisation, `scripts/build-pgo.sh`), so that
//! `hartscope bench` can say which build its figures are for: `cfg(pgo)`.

fn main() {
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    println!("cargo:rustc-check-cfg=cfg(pgo)");
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    // (`-Cprofile-use=F` or `-C profile-use=F`: the path follows `=` either way)
    if flags.split('\x1f').any(|f| f.contains("profile-use=")) {
        println!("cargo:rustc-cfg=pgo");
    }
}
