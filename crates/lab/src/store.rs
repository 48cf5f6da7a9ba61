//! The results database (SQLite). A run is inserted in one transaction once
//! it has completed, so an interrupted or failed run leaves no row behind.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use crate::error::{LabError, Result};
use crate::record::RunRecord;

/// Bumped whenever the tables change; older files are migrated on open.
pub const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    batch TEXT NOT NULL,
    study TEXT NOT NULL,
    variant TEXT NOT NULL,
    repeat_index INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    hartscope_version TEXT NOT NULL,
    scenario_sha256 TEXT NOT NULL,
    image TEXT NOT NULL,
    image_recipe TEXT NOT NULL,
    bootargs TEXT NOT NULL,
    harts INTEGER NOT NULL,
    console_sha256 TEXT NOT NULL,
    console BLOB NOT NULL,
    exit_status INTEGER,
    stop TEXT NOT NULL,
    cycles INTEGER NOT NULL,
    instret INTEGER NOT NULL,
    headline_metric TEXT,
    headline_value REAL,
    record TEXT NOT NULL
);
CREATE INDEX runs_by_study ON runs (study, id);
CREATE TABLE phases (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    label TEXT NOT NULL,
    start_cycle INTEGER NOT NULL,
    cycles INTEGER NOT NULL,
    instret INTEGER NOT NULL,
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE artefacts (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    path TEXT NOT NULL
);
";

/// `$XDG_DATA_HOME/hartscope/results.db`, by default `~/.local/share/hartscope/results.db`.
pub fn default_path() -> PathBuf {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("."));
            home.join(".local/share")
        });
    data.join("hartscope").join("results.db")
}

/// A completed run ready to be stored.
pub struct NewRun<'a> {
    /// Shared by the runs of one `hartscope study` invocation.
    pub batch: &'a str,
    pub record: &'a RunRecord,
    /// The console output, byte for byte.
    pub console: &'a [u8],
    /// The study's first headline metric and its value in this run.
    pub headline: Option<(String, f64)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct StoredRun {
    pub id: i64,
    pub batch: String,
    pub record: RunRecord,
}

/// One rung of the history ladder.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryRow {
    pub id: i64,
    pub study: String,
    pub variant: String,
    pub repeat: u32,
    pub finished_at: String,
    pub exit_status: Option<i64>,
    pub cycles: u64,
    pub headline_metric: Option<String>,
    pub headline_value: Option<f64>,
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

fn db_err(path: &Path) -> impl Fn(rusqlite::Error) -> LabError + '_ {
    move |e| LabError::Store {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

fn to_i64(path: &Path, what: &str, v: u64) -> Result<i64> {
    i64::try_from(v).map_err(|_| LabError::Store {
        path: path.to_path_buf(),
        message: format!("{what} {v} does not fit a database integer"),
    })
}

impl Store {
    /// Open (creating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Store> {
        if path.is_dir() {
            return Err(crate::LabError::Store {
                path: path.to_path_buf(),
                message: "is a directory, not a results database (give the .db file)".into(),
            });
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(crate::error::io_err("create directory", dir))?;
        }
        let e = db_err(path);
        let mut conn = Connection::open(path).map_err(&e)?;
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(&e)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(&e)?;
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(&e)?;
        let has_meta: bool = tx
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map_err(&e)?
            > 0;
        if has_meta {
            let version: Option<String> = tx
                .query_row(
                    "SELECT value FROM meta WHERE key = 'schema_version'",
                    [],
                    |r| r.get(0),
                )
                .optional()
                .map_err(&e)?;
            let version: i64 = version.and_then(|v| v.parse().ok()).ok_or_else(|| LabError::Store {
                path: path.to_path_buf(),
                message: "has a meta table without a schema version: not a hartscope results database".into(),
            })?;
            if version > SCHEMA_VERSION {
                return Err(LabError::Store {
                    path: path.to_path_buf(),
                    message: format!("was written by a newer hartscope (schema {version}; this one reads up to {SCHEMA_VERSION})"),
                });
            }
        } else {
            let tables: i64 = tx
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                    [],
                    |r| r.get(0),
                )
                .map_err(&e)?;
            if tables > 0 {
                return Err(LabError::Store { path: path.to_path_buf(), message: "is an SQLite database of something else (it has tables but no hartscope schema)".into() });
            }
            tx.execute_batch(SCHEMA).map_err(&e)?;
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)",
                [SCHEMA_VERSION.to_string()],
            )
            .map_err(&e)?;
        }
        tx.commit().map_err(&e)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Store a completed run; returns its id.
    pub fn insert(&mut self, run: &NewRun) -> Result<i64> {
        self.insert_checked(run, |_| Ok(()))
    }

    /// `insert`, with `before_commit` called inside the transaction (after
    /// every row is written): an error there rolls everything back.
    fn insert_checked(
        &mut self,
        run: &NewRun,
        before_commit: impl FnOnce(&Transaction) -> Result<()>,
    ) -> Result<i64> {
        let path = self.path.clone();
        let e = db_err(&path);
        let r = run.record;
        let json = serde_json::to_string(r).map_err(|err| LabError::Record {
            what: format!("{}/{}", r.study, r.variant),
            message: err.to_string(),
        })?;
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(&e)?;
        tx.execute(
            "INSERT INTO runs (batch, study, variant, repeat_index, started_at, finished_at, hartscope_version,
                scenario_sha256, image, image_recipe, bootargs, harts, console_sha256, console, exit_status, stop,
                cycles, instret, headline_metric, headline_value, record)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
            params![
                run.batch,
                r.study,
                r.variant,
                r.repeat,
                r.started_at,
                r.finished_at,
                r.hartscope_version,
                r.scenario.sha256,
                r.image.name,
                r.image.recipe_hash(),
                r.machine.bootargs,
                r.machine.harts as i64,
                r.console.sha256,
                run.console,
                r.exit_status,
                r.stop,
                to_i64(&path, "cycles", r.counters.cycles)?,
                to_i64(&path, "instret", r.counters.instret)?,
                run.headline.as_ref().map(|h| h.0.clone()),
                run.headline.as_ref().map(|h| h.1),
                json,
            ],
        )
        .map_err(&e)?;
        let id = tx.last_insert_rowid();
        for p in &r.observations.phases {
            tx.execute(
                "INSERT INTO phases (run_id, idx, label, start_cycle, cycles, instret) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    id,
                    p.index,
                    p.label,
                    to_i64(&path, "cycle", p.start_cycle)?,
                    to_i64(&path, "cycles", p.cycles())?,
                    to_i64(&path, "instret", p.instret())?
                ],
            )
            .map_err(&e)?;
        }
        for a in &r.artefacts {
            tx.execute(
                "INSERT INTO artefacts (run_id, kind, path) VALUES (?1, ?2, ?3)",
                params![id, a.kind, a.path],
            )
            .map_err(&e)?;
        }
        before_commit(&tx)?;
        tx.commit().map_err(&e)?;
        Ok(id)
    }

    pub fn get(&self, id: i64) -> Result<StoredRun> {
        let e = db_err(&self.path);
        let row: Option<(String, String)> = self
            .conn
            .query_row("SELECT batch, record FROM runs WHERE id = ?1", [id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(&e)?;
        let (batch, json) = row.ok_or_else(|| LabError::NoSuchRun {
            id,
            path: self.path.clone(),
        })?;
        let record = serde_json::from_str(&json).map_err(|err| LabError::Record {
            what: format!("{id} in {}", self.path.display()),
            message: err.to_string(),
        })?;
        Ok(StoredRun { id, batch, record })
    }

    /// The console bytes of run `id`.
    pub fn console(&self, id: i64) -> Result<Vec<u8>> {
        self.conn
            .query_row("SELECT console FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(db_err(&self.path))?
            .ok_or_else(|| LabError::NoSuchRun {
                id,
                path: self.path.clone(),
            })
    }

    /// The runs of one batch, in insertion order.
    pub fn batch(&self, batch: &str) -> Result<Vec<StoredRun>> {
        let ids: Vec<i64> = {
            let mut st = self
                .conn
                .prepare("SELECT id FROM runs WHERE batch = ?1 ORDER BY id")
                .map_err(db_err(&self.path))?;
            let rows = st
                .query_map([batch], |r| r.get(0))
                .map_err(db_err(&self.path))?;
            rows.collect::<std::result::Result<_, _>>()
                .map_err(db_err(&self.path))?
        };
        ids.into_iter().map(|id| self.get(id)).collect()
    }

    /// Runs newest first, optionally of one study only.
    pub fn history(&self, study: Option<&str>) -> Result<Vec<HistoryRow>> {
        let e = db_err(&self.path);
        let mut st = self
            .conn
            .prepare(
                "SELECT id, study, variant, repeat_index, finished_at, exit_status, cycles, headline_metric, headline_value
                 FROM runs WHERE ?1 IS NULL OR study = ?1 ORDER BY id DESC",
            )
            .map_err(&e)?;
        let rows = st
            .query_map([study], |r| {
                Ok(HistoryRow {
                    id: r.get(0)?,
                    study: r.get(1)?,
                    variant: r.get(2)?,
                    repeat: r.get(3)?,
                    finished_at: r.get(4)?,
                    exit_status: r.get(5)?,
                    cycles: r.get::<_, i64>(6)?.max(0) as u64,
                    headline_metric: r.get(7)?,
                    headline_value: r.get(8)?,
                })
            })
            .map_err(&e)?;
        rows.collect::<std::result::Result<_, _>>().map_err(&e)
    }

    pub fn count_runs(&self) -> Result<i64> {
        self.conn
            .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
            .map_err(db_err(&self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("hs-lab-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join("sub/results.db")
    }

    #[test]
    fn insert_and_read_back() {
        let path = scratch("roundtrip");
        let mut s = Store::open(&path).unwrap();
        let rec = testdata::run("A", 1_000_000, &[("echo", 600), ("ls", 300)], true);
        let id = s
            .insert(&NewRun {
                batch: "b1",
                record: &rec,
                console: b"hello\n",
                headline: Some(("cycles".into(), 1e6)),
            })
            .unwrap();
        let back = s.get(id).unwrap();
        assert_eq!(back.record, rec);
        assert_eq!(s.console(id).unwrap(), b"hello\n");
        assert_eq!(s.batch("b1").unwrap().len(), 1);
        let phases: i64 = s
            .conn
            .query_row("SELECT count(*) FROM phases WHERE run_id = ?1", [id], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(phases as usize, rec.observations.phases.len());
        drop(s);
        // Reopening keeps the data and the schema.
        let s = Store::open(&path).unwrap();
        assert_eq!(s.history(None).unwrap()[0].headline_value, Some(1e6));
        assert!(matches!(s.get(id + 1), Err(LabError::NoSuchRun { .. })));
        std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[test]
    fn a_failure_before_commit_leaves_nothing() {
        let path = scratch("rollback");
        let mut s = Store::open(&path).unwrap();
        let rec = testdata::run("A", 1_000_000, &[("echo", 600)], true);
        let run = NewRun {
            batch: "b1",
            record: &rec,
            console: b"x",
            headline: None,
        };
        let err = s
            .insert_checked(&run, |tx| {
                // Every row is in place inside the transaction...
                let n: i64 = tx
                    .query_row("SELECT count(*) FROM phases", [], |r| r.get(0))
                    .unwrap();
                assert!(n > 0);
                Err(LabError::Run {
                    variant: "A".into(),
                    message: "injected failure".into(),
                })
            })
            .unwrap_err();
        assert!(err.to_string().contains("injected failure"));
        // ...and none of them after the failure.
        assert_eq!(s.count_runs().unwrap(), 0);
        for table in ["phases", "artefacts"] {
            let n: i64 = s
                .conn
                .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
                .unwrap();
            assert_eq!(n, 0, "{table}");
        }
        s.insert(&run).unwrap();
        assert_eq!(s.count_runs().unwrap(), 1);
        std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[test]
    fn refuses_newer_and_foreign_databases() {
        let path = scratch("versions");
        drop(Store::open(&path).unwrap());
        let c = Connection::open(&path).unwrap();
        c.execute(
            "UPDATE meta SET value = '99' WHERE key = 'schema_version'",
            [],
        )
        .unwrap();
        drop(c);
        let msg = Store::open(&path).err().unwrap().to_string();
        assert!(msg.contains("newer hartscope (schema 99"), "{msg}");

        let other = path.with_file_name("other.db");
        let c = Connection::open(&other).unwrap();
        c.execute("CREATE TABLE t (x)", []).unwrap();
        drop(c);
        let msg = Store::open(&other).err().unwrap().to_string();
        assert!(
            msg.starts_with(&format!("results database {}: ", other.display())),
            "{msg}"
        );
        std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }
}
