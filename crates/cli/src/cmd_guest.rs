//! `hartscope guest …`: guest image builds. Owned by the guest-images work.

use clap::Subcommand;

#[derive(Subcommand)]
pub enum GuestCmd {
    /// Build an image (or find it in the cache) and print its directory.
    Build {
        /// Image name: `debian` (default) or `custom` (any recipe in guest/images/).
        #[arg(long, default_value = "debian")]
        image: String,
    },
}

pub fn run(cmd: GuestCmd) -> Result<i32, String> {
    match cmd {
        GuestCmd::Build { image } => {
            let started = std::time::Instant::now();
            let mut progress = |line: &str| eprintln!("hartscope guest: {line}");
            let built = hs_guest::build(&image, &mut progress).map_err(|e| e.to_string())?;
            eprintln!("hartscope guest: done in {:.1} s", started.elapsed().as_secs_f64());
            println!("{}", built.dir.display());
            Ok(0)
        }
    }
}
