//! Replays one input through a fuzz target with a plain backtrace:
//! `cargo run --release -p hs-fuzzing --example replay -- hart fuzz/artifacts/hart/crash-…`

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [name, path] = args.as_slice() else {
        eprintln!("usage: replay TARGET FILE (targets: {})", names());
        std::process::exit(2);
    };
    let Some((_, target)) = hs_fuzzing::TARGETS.iter().find(|(n, _)| n == name) else {
        eprintln!("replay: no target `{name}` (targets: {})", names());
        std::process::exit(2);
    };
    let data = std::fs::read(path).unwrap_or_else(|e| {
        eprintln!("replay: cannot read {path}: {e}");
        std::process::exit(2);
    });
    target(&data);
    println!(
        "replay: {name} ran {path} ({} bytes) without a finding",
        data.len()
    );
}

fn names() -> String {
    hs_fuzzing::TARGETS
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}
