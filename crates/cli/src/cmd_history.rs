//! `hartscope history [--study NAME]`: stored runs as a ladder, newest first.

use std::path::PathBuf;

use clap::Args;

#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// Only runs of this study.
    #[arg(long)]
    pub study: Option<String>,
    /// Results database; default ~/.local/share/hartscope/results.db.
    #[arg(long)]
    pub db: Option<PathBuf>,
}

pub fn run(args: HistoryArgs) -> Result<i32, String> {
    let db = args.db.unwrap_or_else(hs_lab::store::default_path);
    if db.is_dir() {
        return Err(format!(
            "--db: `{}` is a directory, not a results database (give the .db file)",
            db.display()
        ));
    }
    if !db.is_file() {
        println!("no runs stored ({} does not exist yet)", db.display());
        return Ok(0);
    }
    let store = hs_lab::Store::open(&db).map_err(|e| e.to_string())?;
    let rows = store
        .history(args.study.as_deref())
        .map_err(|e| e.to_string())?;
    print!("{}", hs_lab::history::ladder(&rows));
    Ok(0)
}
