//! Scenarios, runs, the SQLite results store, reports.
