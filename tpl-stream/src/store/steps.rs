//! The statements on the steps, the key and the kept audit of a stream file: every row
//! read and written (`steps`), the chain links rewritten by an upgrade, the key's identifier
//! and the format version (`meta`, `user_version`) and the leakage audit kept after a step
//! (`audit_state`). The checks of what is read are the stream's; these only read and write.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, Transaction, params};
use tpl_mechanisms::StepBudget;

use crate::error::{Result, StreamError};
use crate::key::StreamKey;
use crate::store::{ChainedRow, Link, chain_next, decode_release, sqlite_error, steps_table};
use crate::stream::StepRecord;

/// One stored step, every column as read (the counts digest by its length only).
pub(crate) struct StoredRow {
    pub(crate) t: i64,
    pub(crate) key: i64,
    pub(crate) spent: StepBudget,
    pub(crate) published: bool,
    pub(crate) refused: Option<String>,
    pub(crate) release: Option<Vec<u8>>,
    pub(crate) leakage: [Option<f64>; 2],
    /// The digest's length in bytes (`None`: erased by a key rotation).
    pub(crate) digest_len: Option<usize>,
    /// The chain link (format 2).
    pub(crate) link: Option<Vec<u8>>,
}

/// The columns [`StoredRow`] reads, for a file of format `version` (1 has no chain).
fn row_columns(version: i64) -> &'static str {
    if version >= 2 {
        "t, key, test, publication, absorbed, published, refused, release, max_tpl, max_window_leakage, \
         length(counts_mac), chain"
    } else {
        "t, key, test, publication, absorbed, published, refused, release, max_tpl, max_window_leakage, \
         length(counts_sha256), NULL"
    }
}

impl StoredRow {
    fn read(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            t: r.get(0)?,
            key: r.get(1)?,
            spent: StepBudget { test: r.get(2)?, publication: r.get(3)?, absorbed: r.get(4)? },
            published: r.get(5)?,
            refused: r.get(6)?,
            release: r.get(7)?,
            leakage: [r.get(8)?, r.get(9)?],
            digest_len: r.get::<_, Option<i64>>(10)?.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            link: r.get(11)?,
        })
    }

    /// The row as its chain link covers it.
    fn chained(&self) -> ChainedRow<'_> {
        ChainedRow {
            t: self.t,
            key: self.key,
            spent: [self.spent.test, self.spent.publication, self.spent.absorbed],
            published: self.published,
            refused: self.refused.as_deref(),
            release: self.release.as_deref(),
            leakage: self.leakage,
        }
    }

    /// The row's chain link computed after `previous`.
    pub(crate) fn link_after(&self, previous: &Link) -> Link {
        chain_next(previous, &self.chained())
    }
}

/// The stored rows with t > `after`, in order.
pub(crate) fn read_rows(
    tx: &Transaction<'_>,
    path: &Path,
    version: i64,
    after: usize,
) -> Result<Vec<StoredRow>> {
    let mut rows = Vec::new();
    each_row(tx, path, version, after, |row| {
        rows.push(row);
        Ok(())
    })?;
    Ok(rows)
}

/// Hands each stored row with t > `after` to `take`, in order, one at a time.
pub(crate) fn each_row(
    tx: &Transaction<'_>,
    path: &Path,
    version: i64,
    after: usize,
    mut take: impl FnMut(StoredRow) -> Result<()>,
) -> Result<()> {
    let sql = |e| sqlite_error(path, e);
    let mut stmt = tx
        .prepare(&format!("SELECT {} FROM steps WHERE t > ?1 ORDER BY t", row_columns(version)))
        .map_err(sql)?;
    let mut rows = stmt.query([after as i64]).map_err(sql)?;
    while let Some(r) = rows.next().map_err(sql)? {
        take(StoredRow::read(r).map_err(sql)?)?;
    }
    Ok(())
}

/// The table of the leakage audit after step t, kept by the first push of a process that
/// opens a stream with matrices past its first w + 1 steps, so that the next one need not
/// record every earlier step into it again: with step t's chain link (which pins the budgets
/// of steps 1..t) and a seal under the stream's key ([`StreamKey::seal`]), so that an edited
/// audit is never taken.
pub(crate) const AUDIT_TABLE: &str = "CREATE TABLE IF NOT EXISTS audit_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    t INTEGER NOT NULL,
    chain BLOB NOT NULL,
    history BLOB NOT NULL,
    seal BLOB NOT NULL
) STRICT;";

/// The seal of the audit kept after step `t` whose chain link is `chain`.
fn audit_seal(key: &StreamKey, t: i64, chain: &[u8], history: &[u8]) -> [u8; 32] {
    key.seal("audit_state", &[&t.to_le_bytes(), chain, history])
}

/// The kept audit's step t ≤ `skip` and its history, when its seal is the key's and step t's
/// chain link is the one it was kept with (else none: the steps are recorded into the audit
/// from step 1).
pub(crate) fn kept_audit(
    tx: &rusqlite::Transaction<'_>,
    path: &Path,
    skip: usize,
    key: &StreamKey,
) -> Result<Option<(usize, Vec<u8>)>> {
    let sql = |e| sqlite_error(path, e);
    type Kept = (i64, Vec<u8>, Vec<u8>, Vec<u8>);
    let kept: Option<Kept> = tx
        .query_row(
            "SELECT a.t, a.history, a.seal, s.chain FROM audit_state a JOIN steps s ON s.t = a.t \
             WHERE a.id = 1 AND a.t <= ?1 AND s.chain = a.chain",
            [skip as i64],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .optional()
        .map_err(sql)?;
    Ok(kept
        .filter(|(t, history, seal, chain)| audit_seal(key, *t, chain, history)[..] == seal[..])
        .and_then(|(t, history, _, _)| Some((usize::try_from(t).ok()?, history))))
}

/// Keeps `history`, the audit after step `t`, with step t's chain link and its seal.
pub(crate) fn keep_audit(
    tx: &rusqlite::Transaction<'_>,
    path: &Path,
    t: usize,
    history: &[u8],
    key: &StreamKey,
) -> Result<()> {
    let sql = |e| sqlite_error(path, e);
    let chain: Vec<u8> =
        tx.query_row("SELECT chain FROM steps WHERE t = ?1", [t as i64], |r| r.get(0)).map_err(sql)?;
    let seal = audit_seal(key, t as i64, &chain, history);
    tx.execute(
        "INSERT OR REPLACE INTO audit_state (id, t, chain, history, seal) VALUES (1, ?1, ?2, ?3, ?4)",
        params![t as i64, chain, history, &seal[..]],
    )
    .map(drop)
    .map_err(sql)
}

/// Recorded step `only`, a repeat's release filled in from the publication before it.
pub(crate) fn read_step(
    tx: &rusqlite::Transaction<'_>,
    path: &Path,
    only: usize,
) -> Result<Option<StepRecord>> {
    let corrupt = |reason: String| StreamError::Corrupt { path: path.to_path_buf(), reason };
    let sql = |e| sqlite_error(path, e);
    // A repeat's release is the last publication at or before it.
    let from: i64 = tx
        .query_row("SELECT MAX(t) FROM steps WHERE published = 1 AND t <= ?1", [only as i64], |r| {
            r.get::<_, Option<i64>>(0)
        })
        .map_err(sql)?
        .unwrap_or(1);
    let to = only as i64;
    let mut stmt = tx
        .prepare(
            "SELECT t, key, test, publication, absorbed, published, refused, release, max_tpl, max_window_leakage \
             FROM steps WHERE t >= ?1 AND t <= ?2 ORDER BY t",
        )
        .map_err(sql)?;
    let mut rows = stmt.query([from, to]).map_err(sql)?;
    let mut out: Vec<StepRecord> = Vec::new();
    let mut last: Vec<f64> = Vec::new();
    while let Some(r) = rows.next().map_err(sql)? {
        let t: i64 = r.get(0).map_err(sql)?;
        let published: bool = r.get(5).map_err(sql)?;
        let bytes: Option<Vec<u8>> = r.get(7).map_err(sql)?;
        let release = match (published, bytes) {
            (true, Some(b)) => decode_release(&b)
                .ok_or_else(|| corrupt(format!("step {t}: release of {} bytes", b.len())))?,
            (false, None) if !last.is_empty() => last.clone(),
            _ => {
                return Err(corrupt(format!(
                    "step {t}: release stored for a repeat or missing for a publication"
                )));
            }
        };
        last.clone_from(&release);
        out.push(StepRecord {
            t: t as usize,
            key: r.get(1).map_err(sql)?,
            published,
            spent: StepBudget {
                test: r.get(2).map_err(sql)?,
                publication: r.get(3).map_err(sql)?,
                absorbed: r.get(4).map_err(sql)?,
            },
            release,
            refused: r.get(6).map_err(sql)?,
            max_tpl: r.get(8).map_err(sql)?,
            max_window_leakage: r.get(9).map_err(sql)?,
        });
    }
    Ok(out.pop().filter(|s| s.t == only))
}

/// The step recorded under `key` and its counts digest (`None` once a rotation erased it).
pub(crate) fn digest_at_key(
    tx: &Transaction<'_>,
    path: &Path,
    key: i64,
) -> Result<Option<(i64, Option<Vec<u8>>)>> {
    tx.query_row("SELECT t, counts_mac FROM steps WHERE key = ?1", [key], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .map_err(|e| sqlite_error(path, e))
}

/// Records step `row` with its counts digest and chain link.
pub(crate) fn insert_step(
    tx: &Transaction<'_>,
    path: &Path,
    row: &ChainedRow<'_>,
    digest: &[u8],
    link: &Link,
) -> Result<()> {
    insert_into(tx, path, "steps", row, Some(digest), link)
}

/// Inserts `row` into the steps table `table` (`steps`, or an upgrade's copy).
fn insert_into(
    tx: &Transaction<'_>,
    path: &Path,
    table: &str,
    row: &ChainedRow<'_>,
    digest: Option<&[u8]>,
    link: &Link,
) -> Result<()> {
    tx.execute(
        &format!(
            "INSERT INTO {table} (t, key, counts_mac, test, publication, absorbed, published, refused, release, \
             max_tpl, max_window_leakage, chain) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
        ),
        params![
            row.t,
            row.key,
            digest,
            row.spent[0],
            row.spent[1],
            row.spent[2],
            row.published,
            row.refused,
            row.release,
            row.leakage[0],
            row.leakage[1],
            &link[..],
        ],
    )
    .map(drop)
    .map_err(|e| sqlite_error(path, e))
}

/// The last recorded step number (`None`: no step yet).
pub(crate) fn last_step(tx: &Transaction<'_>, path: &Path) -> Result<Option<i64>> {
    tx.query_row("SELECT MAX(t) FROM steps", [], |r| r.get(0)).map_err(|e| sqlite_error(path, e))
}

/// The publication budget of the last step before step `t` that published afresh.
pub(crate) fn publication_before(tx: &Transaction<'_>, path: &Path, t: usize) -> Result<Option<f64>> {
    tx.query_row(
        "SELECT publication FROM steps WHERE published = 1 AND t < ?1 ORDER BY t DESC LIMIT 1",
        [i64::try_from(t).unwrap_or(i64::MAX)],
        |r| r.get(0),
    )
    .optional()
    .map_err(|e| sqlite_error(path, e))
}

/// Hands (t, test, publication) of every step with `after` < t ≤ `upto` to `take`, in order.
pub(crate) fn each_budget(
    tx: &Transaction<'_>,
    path: &Path,
    after: usize,
    upto: usize,
    mut take: impl FnMut(i64, f64, f64) -> Result<()>,
) -> Result<()> {
    let sql = |e| sqlite_error(path, e);
    let mut stmt = tx
        .prepare("SELECT t, test, publication FROM steps WHERE t > ?1 AND t <= ?2 ORDER BY t")
        .map_err(sql)?;
    let mut rows = stmt.query([after as i64, upto as i64]).map_err(sql)?;
    while let Some(r) = rows.next().map_err(sql)? {
        take(r.get(0).map_err(sql)?, r.get(1).map_err(sql)?, r.get(2).map_err(sql)?)?;
    }
    Ok(())
}

/// The last publication at or before step `t`: its step, budgets (test, publication,
/// absorbed) and release as stored.
pub(crate) type Publication = (i64, StepBudget, Option<Vec<u8>>);

/// [`Publication`] at or before step `t`, if any.
pub(crate) fn last_publication(tx: &Transaction<'_>, path: &Path, t: usize) -> Result<Option<Publication>> {
    tx.query_row(
        "SELECT t, test, publication, absorbed, release FROM steps WHERE t <= ?1 AND published = 1 \
         ORDER BY t DESC LIMIT 1",
        [t as i64],
        |r| {
            Ok((
                r.get(0)?,
                StepBudget { test: r.get(1)?, publication: r.get(2)?, absorbed: r.get(3)? },
                r.get(4)?,
            ))
        },
    )
    .optional()
    .map_err(|e| sqlite_error(path, e))
}

/// The key and chain link of step `t`, if recorded.
pub(crate) fn key_and_link(tx: &Transaction<'_>, path: &Path, t: usize) -> Result<Option<(i64, Vec<u8>)>> {
    tx.query_row("SELECT key, chain FROM steps WHERE t = ?1", [t as i64], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .map_err(|e| sqlite_error(path, e))
}

/// Sets the chain link of step `t` (an upgrade, or a forger's rechaining in the tests).
pub(crate) fn set_link(tx: &Transaction<'_>, path: &Path, t: i64, link: &Link) -> Result<()> {
    tx.execute("UPDATE steps SET chain = ?1 WHERE t = ?2", params![&link[..], t])
        .map(drop)
        .map_err(|e| sqlite_error(path, e))
}

/// Creates the steps table of the current format beside a format-1 one, for an upgrade to
/// copy its rows into ([`copy_row`], then [`replace_with_copy`]).
pub(crate) fn begin_copy(tx: &Transaction<'_>, path: &Path) -> Result<()> {
    tx.execute_batch(&steps_table("steps_v2")).map_err(|e| sqlite_error(path, e))
}

/// Copies `row` into the new steps table with the chain link `link` and no counts digest.
pub(crate) fn copy_row(tx: &Transaction<'_>, path: &Path, row: &StoredRow, link: &Link) -> Result<()> {
    insert_into(tx, path, "steps_v2", &row.chained(), None, link)
}

/// Replaces the old steps table by the copy.
pub(crate) fn replace_with_copy(tx: &Transaction<'_>, path: &Path) -> Result<()> {
    tx.execute_batch("DROP TABLE steps; ALTER TABLE steps_v2 RENAME TO steps;")
        .map_err(|e| sqlite_error(path, e))
}

/// The identifier of the stream's key (`None` before format 2) and the file's format version,
/// as committed.
pub(crate) fn key_id_and_version(tx: &Transaction<'_>, path: &Path) -> Result<(Option<String>, i64)> {
    let sql = |e| sqlite_error(path, e);
    let id = tx
        .query_row("SELECT value FROM meta WHERE name = 'key_id'", [], |r| r.get(0))
        .optional()
        .map_err(sql)?;
    let version = tx.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(sql)?;
    Ok((id, version))
}

/// Makes `key_id` the stream's key: erases every counts digest made with the old one (returns
/// how many), drops the states sealed with it and marks the file as of the current format.
pub(crate) fn rotate_key(tx: &Transaction<'_>, path: &Path, key_id: &str) -> Result<usize> {
    let sql = |e| sqlite_error(path, e);
    let erased =
        tx.execute("UPDATE steps SET counts_mac = NULL WHERE counts_mac IS NOT NULL", []).map_err(sql)?;
    tx.execute("INSERT OR REPLACE INTO meta (name, value) VALUES ('key_id', ?1)", [key_id]).map_err(sql)?;
    // The kept states are sealed with the old key: the next push makes them again.
    tx.execute_batch("DROP TABLE IF EXISTS audit_state; DROP TABLE IF EXISTS estimate_state;")
        .map_err(sql)?;
    tx.pragma_update(None, "user_version", crate::store::FORMAT_VERSION).map_err(sql)?;
    Ok(erased)
}

/// Sets a connection that writes the stream: a commit survives the process being killed
/// (`synchronous = NORMAL`; [`crate::DurableStream::flush`] makes it survive power loss).
pub(crate) fn writing(conn: &Connection, path: &Path) -> Result<()> {
    conn.pragma_update(None, "synchronous", "NORMAL").map_err(|e| sqlite_error(path, e))
}

/// Sets a connection that rotates the key: erased digests are overwritten with zeros.
pub(crate) fn erasing(conn: &Connection, path: &Path) -> Result<()> {
    conn.pragma_update(None, "secure_delete", "ON").map_err(|e| sqlite_error(path, e))
}

/// Rewrites the file without the free pages that held erased digests, and empties the log.
pub(crate) fn compact(conn: &Connection, path: &Path) -> Result<()> {
    conn.execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);").map_err(|e| sqlite_error(path, e))
}
