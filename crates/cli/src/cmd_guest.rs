//! `hartscope guest …`: guest image builds. Owned by the guest-images work.

use clap::Subcommand;

#[derive(Subcommand)]
pub enum GuestCmd {
    /// Build an image (or find it in the cache) and print its directory.
    Build {
        /// Image name: `debian` (default) or `custom`.
        #[arg(long, default_value = "debian")]
        image: String,
    },
}

pub fn run(cmd: GuestCmd) -> Result<i32, String> {
    match cmd {
        GuestCmd::Build { image } => Err(format!("guest image `{image}`: image building is not implemented yet")),
    }
}
