//! Every stored table and column of a stream, edited as a forger who knows the format would
//! (digests without a key recomputed): each edit is refused on reading, changes the chain head,
//! or is harmless — the next pushes release, refuse, record and estimate exactly as on an
//! unedited copy ([`docs/model.md`] §10 lists the same). The list covers every column the file
//! has: a new column without an entry here fails the test.

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use sha2::{Digest, Sha256};
use tpl_core::{Correlation, TransitionMatrix};
use tpl_mechanisms::{NoiseSource, SchemeKind};
use tpl_stream::{DurableStream, Estimation, Pushed, StepEstimate, StreamConfig, StreamOptions};

/// What reading and pushing an edited copy gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// `status` refuses the file.
    Refused,
    /// `status` reads it, with another chain head than the unedited file's.
    HeadChanged,
    /// The chain head is the same, and a push refuses to write (the key does not fit).
    PushRefused,
    /// Nothing read differs, and the next pushes do exactly what they do on the unedited copy.
    Harmless,
    /// Nothing read differs, but the next pushes do something else: the failure this test
    /// exists to find.
    Harmful,
}
use Outcome::*;

/// Noise that is always 0, integer-valued: pushes are reproducible.
struct Zero;

impl NoiseSource for Zero {
    fn laplace(&mut self, _: f64) -> tpl_mechanisms::Result<f64> {
        Ok(0.0)
    }
    fn integer_valued(&self) -> bool {
        true
    }
}

fn open(path: &Path) -> tpl_stream::Result<DurableStream> {
    StreamOptions::new().noise(|| Box::new(Zero)).open(path)
}

fn counts(t: usize) -> [f64; 3] {
    let a = (t * 7 % 11) as f64;
    [a, 20.0 - a, 10.0]
}

/// A stream of `bd` (ε = 1, w = 3, α = 2.5) over 3-state matrices with `map` estimates of 30
/// people, pushed 12 steps by four processes (so that the audit and the filter's state are
/// kept), its key beside it.
fn base(dir: &Path) -> PathBuf {
    let path = dir.join("base.db");
    let config = StreamConfig {
        correlation: Correlation::new(
            Some(TransitionMatrix::smoothed_identity(3, 0.3).unwrap()),
            Some(
                TransitionMatrix::new(vec![vec![0.8, 0.1, 0.1], vec![0.2, 0.7, 0.1], vec![0.1, 0.2, 0.7]])
                    .unwrap(),
            ),
        )
        .unwrap(),
        alpha: Some(2.5),
        estimation: Some(Estimation { estimator: tpl_postprocess::Estimator::CausalFilter, total: 30 }),
        ..StreamConfig::new(SchemeKind::Bd, 1.0, 3)
    };
    DurableStream::create(&path, &config).unwrap();
    for batch in 0..4 {
        let mut s = open(&path).unwrap();
        for t in batch * 3 + 1..=batch * 3 + 3 {
            s.push(Some(t as i64), &counts(t)).unwrap();
        }
        s.update_estimates().unwrap();
    }
    path
}

/// What the next pushes do: six new steps, then the estimates.
fn continuation(path: &Path) -> tpl_stream::Result<(Vec<Pushed>, Vec<StepEstimate>)> {
    let mut s = open(path)?;
    let pushed =
        (13..=18).map(|t| s.push(Some(t as i64), &counts(t))).collect::<tpl_stream::Result<Vec<_>>>()?;
    s.update_estimates()?;
    Ok((pushed, s.estimates()?))
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// An edit of one column (or of the file's header), as SQL run on the copy, then the
/// digests a forger recomputes: a line of `tests/data/tamper_edits.tsv`.
struct Edit {
    table: &'static str,
    column: &'static str,
    sql: &'static str,
    /// Recompute the unkeyed digest of this params/loss_setup text column afterwards: (the
    /// edited table, the edited column, the digest column).
    rehash: Option<(&'static str, &'static str, &'static str)>,
    /// Recompute every step's chain link afterwards ([`tpl_stream::rechain`]).
    rechain: bool,
    expected: Outcome,
}

/// Every edit, and what it must give.
fn edits() -> Vec<Edit> {
    include_str!("data/tamper_edits.tsv")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|line| {
            let fields: Vec<&'static str> = line.split('\t').collect();
            let [table, column, expected, after, sql] = fields[..] else { panic!("not 5 fields: {line}") };
            let expected = match expected {
                "Refused" => Refused,
                "HeadChanged" => HeadChanged,
                "PushRefused" => PushRefused,
                "Harmless" => Harmless,
                other => panic!("unknown outcome {other}: {line}"),
            };
            let rehash = after.strip_prefix("rehash:").map(|digest| (table, column, digest));
            Edit { table, column, sql, rehash, rechain: after == "rechain", expected }
        })
        .collect()
}

/// The tables and columns of a stream file.
fn columns(path: &Path) -> Vec<(String, String)> {
    let conn = Connection::open(path).unwrap();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut out = Vec::new();
    for table in tables {
        let mut stmt = conn.prepare(&format!("SELECT name FROM pragma_table_info('{table}')")).unwrap();
        out.extend(
            stmt.query_map([], |r| r.get::<_, String>(0)).unwrap().map(|c| (table.clone(), c.unwrap())),
        );
    }
    out
}

fn apply(path: &Path, e: &Edit) {
    let conn = Connection::open(path).unwrap();
    // A forger is not held back by the schema's checks.
    conn.execute_batch("PRAGMA ignore_check_constraints = ON").unwrap();
    conn.execute_batch(e.sql).unwrap_or_else(|err| panic!("{}: {err}", e.sql));
    if let Some((table, column, digest)) = e.rehash {
        let rows: Vec<(i64, String)> = conn
            .prepare(&format!("SELECT rowid, {column} FROM {table}"))
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for (rowid, text) in rows {
            conn.execute(
                &format!("UPDATE {table} SET {digest} = ?1 WHERE rowid = ?2"),
                rusqlite::params![sha256_hex(&text), rowid],
            )
            .unwrap();
        }
    }
    drop(conn);
    if e.rechain {
        tpl_stream::rechain(path).unwrap();
    }
}

fn outcome(path: &Path, head: &Option<String>, want: &(Vec<Pushed>, Vec<StepEstimate>)) -> Outcome {
    let status = open(path).and_then(|mut s| s.status());
    match status {
        Err(_) => Refused,
        Ok(s) if &s.chain_head != head => HeadChanged,
        Ok(_) => match continuation(path) {
            Err(_) => PushRefused,
            Ok(got) if &got == want => Harmless,
            Ok(_) => Harmful,
        },
    }
}

#[test]
fn every_edit_of_every_column_is_refused_changes_the_head_or_is_harmless() {
    let dir = tempfile::tempdir().unwrap();
    let path = base(dir.path());
    let head = open(&path).unwrap().status().unwrap().chain_head;
    assert!(head.is_some());
    let key = tpl_stream::default_key_path(&path);
    let copy = |name: &str| {
        let to = dir.path().join(name);
        std::fs::copy(&path, &to).unwrap();
        std::fs::copy(&key, tpl_stream::default_key_path(&to)).unwrap();
        to
    };
    let want = continuation(&copy("unedited.db")).unwrap();
    // Every column the file holds has an edit below (and the kept states exist to be edited).
    let edits = edits();
    let listed: Vec<(&str, &str)> = edits.iter().map(|e| (e.table, e.column)).collect();
    let present = columns(&path);
    for (table, column) in &present {
        assert!(listed.contains(&(table.as_str(), column.as_str())), "no edit of {table}.{column}");
    }
    for table in ["audit_state", "estimate_state", "loss_setup", "estimates"] {
        assert!(present.iter().any(|(t, _)| t == table), "the base stream has no {table}");
    }
    let mut wrong = Vec::new();
    for (i, e) in edits.iter().enumerate() {
        let edited = copy(&format!("edit{i}.db"));
        apply(&edited, e);
        let got = outcome(&edited, &head, &want);
        if got != e.expected {
            wrong.push(format!("{}.{} ({}): {got:?}, expected {:?}", e.table, e.column, e.sql, e.expected));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The key-id edit changes every key id, whatever its first digit: it once replaced the first
/// digit by `f`, which left a key id starting with `f` as it was (one run in 16 failed).
#[test]
fn the_key_id_edit_changes_every_key_id() {
    let e = edits().into_iter().find(|e| e.sql.contains("'key_id'")).unwrap();
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch("CREATE TABLE meta (name TEXT, value TEXT)").unwrap();
    for id in ["f0e1d2", "0f1e2d", "abcdef", "ffffff"] {
        conn.execute("DELETE FROM meta", []).unwrap();
        conn.execute("INSERT INTO meta VALUES ('key_id', ?1)", [id]).unwrap();
        conn.execute_batch(e.sql).unwrap();
        let edited: String = conn.query_row("SELECT value FROM meta", [], |r| r.get(0)).unwrap();
        assert!(edited != id && edited.len() == id.len(), "{id} → {edited}: {}", e.sql);
    }
}

/// A deleted estimate row changes the head until the next push makes the same estimate again
/// (the filter is causal and deterministic): then the head is the unedited file's.
#[test]
fn a_deleted_estimate_is_made_again_by_the_next_update_and_the_head_returns() {
    let dir = tempfile::tempdir().unwrap();
    let path = base(dir.path());
    let (head, before) = {
        let mut s = open(&path).unwrap();
        (s.status().unwrap().chain_head, s.estimates().unwrap())
    };
    Connection::open(&path).unwrap().execute("DELETE FROM estimates WHERE t = 7", []).unwrap();
    let mut s = open(&path).unwrap();
    let read = s.estimates().unwrap();
    assert_eq!(read.len(), 12);
    assert!(read[6].t == 7 && read[6].estimate.as_ref().is_err_and(|why| why.contains("next push")));
    assert_ne!(s.status().unwrap().chain_head, head);
    assert_eq!(s.update_estimates().unwrap().len(), 1);
    assert_eq!(s.estimates().unwrap(), before);
    assert_eq!(s.status().unwrap().chain_head, head);
}
