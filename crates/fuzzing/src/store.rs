//! The results store: any file given as `--db` opens as a hartscope
//! database or is refused with one sentence; what opens can be listed and
//! read without a panic, whatever its rows hold.

use std::io::Write;

pub fn run(data: &[u8]) {
    let path = std::env::temp_dir().join(format!("hs-fuzz-store-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&path);
    {
        let mut f = std::fs::File::create(&path).expect("a scratch file in the temp directory");
        f.write_all(data).expect("write the scratch database");
    }
    if let Ok(store) = hs_lab::Store::open(&path) {
        if let Ok(rows) = store.history(None) {
            let _ = hs_lab::history::ladder(&rows);
            for r in rows.iter().take(4) {
                let _ = store.get(r.id);
                let _ = store.console(r.id);
                let _ = store.failed(r.id);
            }
        }
        let _ = store.count_runs();
        let _ = store.batch("b");
        let _ = hs_lab::history::compare(&store, &[1, 2]);
    }
    let _ = std::fs::remove_file(&path);
    // SQLite's side files, if it made any.
    for ext in ["db-journal", "db-wal", "db-shm"] {
        let _ = std::fs::remove_file(path.with_extension(ext));
    }
}
