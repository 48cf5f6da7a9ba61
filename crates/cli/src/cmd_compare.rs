//! `hartscope compare RUN_A RUN_B`: two stored runs side by side.

use std::path::PathBuf;

use clap::Args;

#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Run ids (see `hartscope history`); the first is the baseline.
    #[arg(required = true, num_args = 2..)]
    pub runs: Vec<i64>,
    /// Also write report.md and report.html into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Results database; default ~/.local/share/hartscope/results.db.
    #[arg(long)]
    pub db: Option<PathBuf>,
}

pub fn run(args: CompareArgs) -> Result<i32, String> {
    let db = args.db.unwrap_or_else(hs_lab::store::default_path);
    if db.is_dir() {
        return Err(format!(
            "--db: `{}` is a directory, not a results database (give the .db file)",
            db.display()
        ));
    }
    if !db.is_file() {
        return Err(format!(
            "results database {} does not exist (run `hartscope study` first)",
            db.display()
        ));
    }
    let store = hs_lab::Store::open(&db).map_err(|e| e.to_string())?;
    let input = hs_lab::history::compare(&store, &args.runs).map_err(|e| e.to_string())?;
    print!("{}", hs_lab::doc::markdown(&hs_lab::report::build(&input)));
    if let Some(out) = &args.out {
        let (md, html) = hs_lab::study::write_report(&input, out).map_err(|e| e.to_string())?;
        eprintln!(
            "hartscope compare: wrote {} and {}",
            md.display(),
            html.display()
        );
    }
    Ok(0)
}
