//! The results database (SQLite). A run is inserted in one transaction once
//! it has completed, so an interrupted run leaves no row behind. A run the
//! guest made fail (a kernel panic, the time limit, a stop without an exit
//! status) is kept in `failed_runs` with its console and the reason; runs and
//! failed runs share one id sequence, so "run 7" names exactly one of them.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use crate::error::{LabError, Result};
use crate::record::RunRecord;

/// Bumped whenever the tables change; older files are migrated on open.
pub const SCHEMA_VERSION: i64 = 2;

/// Schema 2: runs the guest made fail.
const FAILED_RUNS: &str = "
CREATE TABLE failed_runs (
    id INTEGER PRIMARY KEY,
    batch TEXT NOT NULL,
    study TEXT NOT NULL,
    variant TEXT NOT NULL,
    repeat_index INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    hartscope_version TEXT NOT NULL,
    image TEXT NOT NULL,
    bootargs TEXT NOT NULL,
    harts INTEGER NOT NULL,
    stop TEXT NOT NULL,
    reason TEXT NOT NULL,
    cycles INTEGER NOT NULL,
    console BLOB NOT NULL
);
CREATE INDEX failed_runs_by_study ON failed_runs (study, id);
";

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

/// Console lines `history` shows under a failed run.
pub const HISTORY_TAIL_LINES: usize = 4;

/// A run the guest made fail, as stored (and as given to the store).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FailedRun {
    pub study: String,
    pub variant: String,
    pub repeat: u32,
    pub started_at: String,
    pub finished_at: String,
    pub image: String,
    pub bootargs: String,
    pub harts: usize,
    /// How the machine stopped (`guest panic`, `cycle limit`, ...).
    pub stop: String,
    /// One sentence: what went wrong.
    pub reason: String,
    /// Guest cycles when it stopped.
    pub cycles: u64,
    /// The console output, byte for byte.
    pub console: Vec<u8>,
}

impl FailedRun {
    /// The console's last `n` non-empty lines (what explains most failures).
    pub fn console_tail(&self, n: usize) -> Vec<String> {
        let text = String::from_utf8_lossy(&self.console);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(n)..]
            .iter()
            .map(|l| l.trim_end().to_string())
            .collect()
    }
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
    /// Set for a failed run: why it failed (it has no headline value).
    pub failure: Option<String>,
    /// A failed run's last console lines (empty for a run that finished).
    pub console_tail: Vec<String>,
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
            if version < 2 {
                tx.execute_batch(FAILED_RUNS).map_err(&e)?;
                tx.execute(
                    "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
                    [SCHEMA_VERSION.to_string()],
                )
                .map_err(&e)?;
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
            tx.execute_batch(FAILED_RUNS).map_err(&e)?;
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
        let id = next_id(&tx).map_err(&e)?;
        tx.execute(
            "INSERT INTO runs (batch, study, variant, repeat_index, started_at, finished_at, hartscope_version,
                scenario_sha256, image, image_recipe, bootargs, harts, console_sha256, console, exit_status, stop,
                cycles, instret, headline_metric, headline_value, record, id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
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
                id,
            ],
        )
        .map_err(&e)?;
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

    /// Store a run the guest made fail; returns its id (from the runs' sequence).
    pub fn insert_failed(&mut self, batch: &str, f: &FailedRun) -> Result<i64> {
        let path = self.path.clone();
        let e = db_err(&path);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(&e)?;
        let id = next_id(&tx).map_err(&e)?;
        tx.execute(
            "INSERT INTO failed_runs (id, batch, study, variant, repeat_index, started_at, finished_at,
                hartscope_version, image, bootargs, harts, stop, reason, cycles, console)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            params![
                id,
                batch,
                f.study,
                f.variant,
                f.repeat,
                f.started_at,
                f.finished_at,
                crate::VERSION,
                f.image,
                f.bootargs,
                f.harts as i64,
                f.stop,
                f.reason,
                to_i64(&path, "cycles", f.cycles)?,
                f.console,
            ],
        )
        .map_err(&e)?;
        tx.commit().map_err(&e)?;
        Ok(id)
    }

    /// The failed run `id`, if `id` names one.
    pub fn failed(&self, id: i64) -> Result<Option<FailedRun>> {
        self.conn
            .query_row(
                "SELECT study, variant, repeat_index, started_at, finished_at, image, bootargs, harts,
                    stop, reason, cycles, console FROM failed_runs WHERE id = ?1",
                [id],
                |r| {
                    Ok(FailedRun {
                        study: r.get(0)?,
                        variant: r.get(1)?,
                        repeat: r.get(2)?,
                        started_at: r.get(3)?,
                        finished_at: r.get(4)?,
                        image: r.get(5)?,
                        bootargs: r.get(6)?,
                        harts: r.get::<_, i64>(7)?.max(0) as usize,
                        stop: r.get(8)?,
                        reason: r.get(9)?,
                        cycles: r.get::<_, i64>(10)?.max(0) as u64,
                        console: r.get(11)?,
                    })
                },
            )
            .optional()
            .map_err(db_err(&self.path))
    }

    pub fn get(&self, id: i64) -> Result<StoredRun> {
        if let Some(f) = self.failed(id)? {
            return Err(LabError::FailedRun {
                id,
                variant: f.variant,
                reason: f.reason,
            });
        }
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

    /// Runs, failed ones included, newest first, optionally of one study only.
    pub fn history(&self, study: Option<&str>) -> Result<Vec<HistoryRow>> {
        let e = db_err(&self.path);
        let mut st = self
            .conn
            .prepare(
                "SELECT id, study, variant, repeat_index, finished_at, exit_status, cycles, headline_metric,
                        headline_value, NULL, NULL FROM runs WHERE ?1 IS NULL OR study = ?1
                 UNION ALL
                 SELECT id, study, variant, repeat_index, finished_at, NULL, cycles, NULL, NULL, reason, console
                   FROM failed_runs WHERE ?1 IS NULL OR study = ?1
                 ORDER BY 1 DESC",
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
                    failure: r.get(9)?,
                    console_tail: match r.get::<_, Option<Vec<u8>>>(10)? {
                        Some(console) => FailedRun {
                            console,
                            ..FailedRun::default()
                        }
                        .console_tail(HISTORY_TAIL_LINES),
                        None => Vec::new(),
                    },
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

/// The next id for a run or a failed run: one sequence over both tables
/// (inside the writer's transaction, so two writers cannot take the same).
fn next_id(tx: &Transaction) -> rusqlite::Result<i64> {
    let (runs, failed): (i64, i64) = tx.query_row(
        "SELECT (SELECT coalesce(max(id), 0) FROM runs), (SELECT coalesce(max(id), 0) FROM failed_runs)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    // AUTOINCREMENT never reuses an id of a deleted run; neither do we.
    let seq: i64 = tx
        .query_row(
            "SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'runs'",
            [],
            |r| r.get(0),
        )
        .optional()?
        .unwrap_or(0);
    Ok(runs.max(failed).max(seq) + 1)
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

    fn failed(variant: &str) -> FailedRun {
        FailedRun {
            study: "s".into(),
            variant: variant.into(),
            repeat: 1,
            started_at: "2026-11-25T00:00:00Z".into(),
            finished_at: "2026-11-25T00:00:01Z".into(),
            image: "debian".into(),
            bootargs: "console=ttyS0".into(),
            harts: 2,
            stop: "guest panic".into(),
            reason: "the guest kernel panicked (Kernel panic - not syncing: x)".into(),
            cycles: 1234,
            console:
                b"boot\n\n[ 1.0] Kernel panic - not syncing: x\n[ 1.0] ---[ end Kernel panic\n"
                    .to_vec(),
        }
    }

    #[test]
    fn failed_runs_share_the_id_sequence_and_show_in_history() {
        let path = scratch("failed");
        let mut s = Store::open(&path).unwrap();
        let rec = testdata::run("A", 1_000_000, &[("echo", 600)], true);
        let run = NewRun {
            batch: "b1",
            record: &rec,
            console: b"x",
            headline: None,
        };
        let a = s.insert(&run).unwrap();
        let f = s.insert_failed("b1", &failed("B")).unwrap();
        let b = s.insert(&run).unwrap();
        assert_eq!((a + 1, a + 2), (f, b), "one sequence over both tables");
        assert_eq!(s.failed(f).unwrap(), Some(failed("B")));
        assert_eq!(s.failed(a).unwrap(), None);
        let msg = s.get(f).unwrap_err().to_string();
        assert!(
            msg.starts_with(&format!("run {f} (B) failed and has no counts")),
            "{msg}"
        );
        let h = s.history(None).unwrap();
        assert_eq!(h.iter().map(|r| r.id).collect::<Vec<_>>(), vec![b, f, a]);
        assert_eq!(h[1].failure.as_deref(), Some(failed("B").reason.as_str()));
        assert_eq!(h[1].cycles, 1234);
        assert_eq!(
            h[1].console_tail,
            vec![
                "boot",
                "[ 1.0] Kernel panic - not syncing: x",
                "[ 1.0] ---[ end Kernel panic"
            ]
        );
        assert!(h[0].failure.is_none() && h[0].console_tail.is_empty());
        std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[test]
    fn a_schema_1_database_gains_the_failed_runs_table_and_keeps_its_runs() {
        let path = scratch("migrate");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let c = Connection::open(&path).unwrap();
        c.execute_batch(SCHEMA).unwrap();
        c.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', '1')",
            [],
        )
        .unwrap();
        drop(c);
        let mut s = Store::open(&path).unwrap();
        let rec = testdata::run("A", 1_000_000, &[("echo", 600)], true);
        let id = s
            .insert(&NewRun {
                batch: "b1",
                record: &rec,
                console: b"x",
                headline: None,
            })
            .unwrap();
        s.insert_failed("b1", &failed("B")).unwrap();
        drop(s);
        let s = Store::open(&path).unwrap();
        assert_eq!(s.get(id).unwrap().record, rec);
        assert_eq!(s.history(None).unwrap().len(), 2);
        let v: String = s
            .conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION.to_string());
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
