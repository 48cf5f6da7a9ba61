//! The `hartscope` command line.
fn main() {
    eprintln!("hartscope: no commands yet");
    std::process::exit(2);
}
