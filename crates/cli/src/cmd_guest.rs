//! `hartscope guest …`: guest image locks and builds.

use clap::Subcommand;

#[derive(Subcommand)]
pub enum GuestCmd {
    /// Build an image (or find it in the cache) and print its directory.
    /// Fetches exactly the files pinned in guest/images/NAME.lock; reads no package index.
    Build {
        /// Image name: `debian` (default) or `custom` (any recipe in guest/images/).
        #[arg(long, default_value = "debian")]
        image: String,
    },
    /// Resolve an image's recipe through Debian's signed indexes and pin
    /// every file it is made from in guest/images/NAME.lock.
    Lock {
        /// Image name: `debian` (default) or `custom` (any recipe in guest/images/).
        #[arg(long, default_value = "debian")]
        image: String,
        /// Resolve again and rewrite the lock even if it still fits the recipe.
        #[arg(long)]
        update: bool,
        /// Accept an index that does not match its signed release file (a
        /// mirror mid-sync); the lock, manifests and reports say so.
        #[arg(long)]
        allow_unverified: bool,
    },
}

pub fn run(cmd: GuestCmd) -> Result<i32, String> {
    let started = std::time::Instant::now();
    let mut progress = |line: &str| eprintln!("hartscope guest: {line}");
    match cmd {
        GuestCmd::Build { image } => {
            let built = hs_guest::build(&image, &mut progress).map_err(|e| e.to_string())?;
            eprintln!(
                "hartscope guest: done in {:.2} s",
                started.elapsed().as_secs_f64()
            );
            println!("{}", built.dir.display());
            Ok(0)
        }
        GuestCmd::Lock {
            image,
            update,
            allow_unverified,
        } => {
            let builder = hs_guest::Builder::from_env();
            let (lock, written) = builder
                .lock(&image, update, allow_unverified, &mut progress)
                .map_err(|e| e.to_string())?;
            let path = builder
                .guest_dir
                .join("images")
                .join(format!("{image}.lock"));
            for f in &lock.files {
                let mark = if f.signed { "signed" } else { "UNVERIFIED" };
                eprintln!(
                    "hartscope guest:   {} {} {} ({mark})",
                    f.role, f.package, f.version
                );
            }
            if written {
                eprintln!("hartscope guest: wrote {}", path.display());
            } else {
                eprintln!(
                    "hartscope guest: {} still fits the recipe (use --update to resolve again)",
                    path.display()
                );
            }
            println!("{}", path.display());
            Ok(0)
        }
    }
}
