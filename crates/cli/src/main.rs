//! The `hartscope` command line. Each subcommand lives in its own module;
//! this file only dispatches and turns errors into one sentence and an exit code.

use clap::{Parser, Subcommand};

mod boot_snapshot;
mod cmd_bench;
mod cmd_boot;
mod cmd_compare;
mod cmd_guest;
mod cmd_history;
mod cmd_study;
mod cmd_validate;
mod sigint;

#[derive(Parser)]
#[command(
    name = "hartscope",
    version,
    about = "Full-system RISC-V virtual platform for OS performance studies"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build guest images (or find them in the cache).
    #[command(subcommand)]
    Guest(cmd_guest::GuestCmd),
    /// Boot a guest image or QEMU-style files (also: `hartscope -bios ... -kernel ...`).
    Boot(cmd_boot::BootArgs),
    /// Time a Linux boot and a CPU-bound program on hartscope and on QEMU, side by side.
    Bench(cmd_bench::BenchArgs),
    /// Run a study (scenario file): every variant, stored in the results database, with a report.
    Study(cmd_study::StudyArgs),
    /// Report two or more stored runs side by side.
    Compare(cmd_compare::CompareArgs),
    /// List stored runs, newest first, with the headline metric and its change.
    History(cmd_history::HistoryArgs),
    /// Hold a machine description against a real board: build and run the
    /// riscv-validation microbenchmarks and report IPC and branch misses
    /// beside the board's and gem5's.
    Validate(cmd_validate::ValidateArgs),
}

fn main() {
    let args = match cmd_boot::qemu_style_args(std::env::args_os()) {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("hartscope: {msg}");
            std::process::exit(2);
        }
    };
    let cli = Cli::parse_from(args);
    let result: Result<i32, String> = match cli.command {
        Command::Guest(cmd) => cmd_guest::run(cmd),
        Command::Boot(args) => cmd_boot::run(args),
        Command::Bench(args) => cmd_bench::run(args),
        Command::Study(args) => cmd_study::run(args),
        Command::Compare(args) => cmd_compare::run(args),
        Command::History(args) => cmd_history::run(args),
        Command::Validate(args) => cmd_validate::run(args),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(msg) => {
            eprintln!("hartscope: {msg}");
            std::process::exit(1);
        }
    }
}
