//! The causal estimates a stream stores beside its releases
//! ([`docs/stream.md`](tpl_core::guide::stream) §9): after a push, one pass of the stream's
//! filter over its releases gives x̂_t for every new step t, from r_1..r_t only, so a stored
//! estimate depends on nothing a later push adds.

use std::path::Path;

use rusqlite::{OptionalExtension, Transaction, params};
use tpl_postprocess::{Estimator, Filter, FilterState};

use crate::config::{Estimation, StreamConfig};
use crate::error::{Result, StreamError};
use crate::key::StreamKey;
use crate::store::{EstimatesDigest, decode_release, encode_release, sealed_table, sqlite_error};

/// The stored estimate of one step.
#[derive(Debug, Clone, PartialEq)]
pub struct StepEstimate {
    /// t, the 1-based step number.
    pub t: usize,
    /// x̂_t, n values summing to the stream's population; `Err` with the filter's reason when
    /// it could not estimate the step (the release stands: an estimate never holds back a step).
    pub estimate: std::result::Result<Vec<f64>, String>,
    /// σ_t, each cell's standard error of the estimate ([`tpl_postprocess::FilterStep::std_error`],
    /// [`docs/intervals.md`](tpl_core::guide::intervals) §3), from which
    /// [`StepEstimate::interval`] makes the step's interval at any level; `None` for a step
    /// without an estimate or before any release with information, and for one stored by a
    /// version that kept none (the next update stores them, where the filter still makes that
    /// estimate bit for bit).
    pub std_error: Option<Vec<f64>>,
}

impl StepEstimate {
    /// The interval [lower, upper] of each cell at the nominal `level`
    /// ([`tpl_postprocess::model_interval`]): causal, like the estimate, and fixed once stored.
    /// `None` without an estimate or a standard error.
    ///
    /// # Errors
    /// That of [`tpl_postprocess::model_interval`] for a level outside (0, 1).
    pub fn interval(&self, level: f64) -> tpl_postprocess::Result<Option<(Vec<f64>, Vec<f64>)>> {
        match (&self.estimate, &self.std_error) {
            (Ok(x), Some(s)) => tpl_postprocess::model_interval(x, s, level).map(Some),
            _ => Ok(None),
        }
    }

    /// [`StepEstimate::interval`] of the cells `cells` only, in that order: the same ends,
    /// without making the other cells'. `None` also when a cell is not one of the step's.
    ///
    /// # Errors
    /// As [`StepEstimate::interval`] (only the standard errors of `cells` are checked).
    pub fn interval_of(
        &self,
        cells: &[usize],
        level: f64,
    ) -> tpl_postprocess::Result<Option<(Vec<f64>, Vec<f64>)>> {
        let (Ok(x), Some(s)) = (&self.estimate, &self.std_error) else { return Ok(None) };
        let cut: Option<(Vec<f64>, Vec<f64>)> =
            cells.iter().map(|&c| Some((*x.get(c)?, *s.get(c)?))).collect();
        let Some((x_cut, s_cut)) = cut else { return Ok(None) };
        tpl_postprocess::model_interval_of(&x_cut, &s_cut, level, x.iter().sum()).map(Some)
    }
}

/// The releases r_1..r_T recorded so far (a repeat holds the release it repeats) and the
/// fresh publication budget of each step (0 for a repeat: it carries no new information).
pub(crate) fn recorded_releases(tx: &Transaction<'_>, path: &Path) -> Result<(Vec<Vec<f64>>, Vec<f64>)> {
    let sql = |e| sqlite_error(path, e);
    let corrupt =
        |t: i64| StreamError::Corrupt { path: path.to_path_buf(), reason: format!("step {t}: its release") };
    let mut stmt =
        tx.prepare("SELECT t, publication, published, release FROM steps ORDER BY t").map_err(sql)?;
    let mut rows = stmt.query([]).map_err(sql)?;
    let (mut releases, mut fresh): (Vec<Vec<f64>>, Vec<f64>) = (Vec::new(), Vec::new());
    while let Some(r) = rows.next().map_err(sql)? {
        let t: i64 = r.get(0).map_err(sql)?;
        let published: bool = r.get(2).map_err(sql)?;
        if published {
            let bytes: Option<Vec<u8>> = r.get(3).map_err(sql)?;
            releases.push(bytes.as_deref().and_then(decode_release).ok_or_else(|| corrupt(t))?);
            fresh.push(r.get(1).map_err(sql)?);
        } else {
            let last = releases.last().cloned().ok_or_else(|| corrupt(t))?;
            releases.push(last);
            fresh.push(0.0);
        }
    }
    Ok((releases, fresh))
}

/// The estimates of `estimator` over a population `total` for `releases` weighted by their
/// fresh budgets, under the public parameters of `config`.
pub(crate) fn estimate(
    config: &StreamConfig,
    (estimator, total): (Estimator, u64),
    releases: &[Vec<f64>],
    fresh: &[f64],
) -> std::result::Result<tpl_postprocess::Estimates, tpl_postprocess::PostprocessError> {
    tpl_postprocess::filter(releases, fresh, config.filter_config(estimator, total))
}

/// Stores the estimate of every step of `tx` without one — after the last stored, or a row
/// missing in between (deleted, or never made by a push killed between its releases and its
/// estimates) — by the stream's filter in one pass over the releases (the filter is causal:
/// the estimates already stored are those it makes again), and returns them. The pass starts
/// from the filter's state kept by the last update (sealed under the stream's `key`) when the
/// estimates stored are exactly those of steps 1..t it was kept after, else from step 1.
///
/// # Errors
/// [`StreamError::Corrupt`] for an estimate row of a step that is not recorded; SQLite's.
pub(crate) fn store_missing(
    tx: &Transaction<'_>,
    path: &Path,
    config: &StreamConfig,
    e: &Estimation,
    key: &StreamKey,
) -> Result<Vec<StepEstimate>> {
    let sql = |e| sqlite_error(path, e);
    let (releases, fresh) = recorded_releases(tx, path)?;
    let steps = releases.len();
    // A stream whose estimates were stored without their standard errors gets them now.
    if !has_std_errors(tx, path)? {
        tx.execute_batch("ALTER TABLE estimates ADD COLUMN std_error BLOB").map_err(sql)?;
    }
    let mut present = vec![false; steps];
    {
        let mut stmt = tx.prepare("SELECT t FROM estimates ORDER BY t").map_err(sql)?;
        let mut rows = stmt.query([]).map_err(sql)?;
        while let Some(r) = rows.next().map_err(sql)? {
            let t: i64 = r.get(0).map_err(sql)?;
            let slot =
                usize::try_from(t).ok().and_then(|t| t.checked_sub(1)).and_then(|i| present.get_mut(i));
            *slot.ok_or_else(|| not_recorded(path, t))? = true;
        }
    }
    let stored = present.iter().filter(|&&p| p).count();
    let prefix = present.iter().take_while(|&&p| p).count();
    let lacking: i64 = tx
        .query_row(
            "SELECT count(*) FROM estimates WHERE estimate IS NOT NULL AND std_error IS NULL",
            [],
            |r| r.get(0),
        )
        .map_err(sql)?;
    if steps == 0 || (stored == steps && lacking == 0) {
        return Ok(Vec::new());
    }
    sealed_table(tx, path, "estimate_state", STATE_TABLE)?;
    // Stepped, so that a step the filter refuses leaves the estimates before it; from the
    // state the last update kept when it is that of the estimates stored, else from step 1.
    let cells = releases[0].len();
    let filter_config = || config.filter_config(e.estimator, e.total);
    let resumable = lacking == 0 && stored == prefix;
    let resumed = saved_state(tx, path, prefix, key)?.filter(|_| resumable).and_then(|state| {
        Filter::resume(cells, filter_config(), state, &releases[..prefix], &fresh[..prefix]).ok()
    });
    let from = if resumed.is_some() { prefix } else { 0 };
    let mut stepper = match resumed {
        Some(f) => Ok(f),
        None => Filter::new(cells, filter_config()).map_err(|e| e.to_string()),
    };
    let mut made = Vec::with_capacity(steps - stored);
    for (i, (release, &epsilon)) in releases.iter().zip(&fresh).enumerate().skip(from) {
        let t = i + 1;
        let step = match &mut stepper {
            Ok(f) => f.step(release, epsilon).map_err(|e| e.to_string()),
            Err(why) => Err(why.clone()),
        };
        let (estimate, std_error) = match step {
            Ok(s) => (Ok(s.estimate), Some(s.std_error).filter(|s| !s.is_empty())),
            Err(why) => {
                // Every later step depends on this one.
                stepper = Err(why.clone());
                (Err(why), None)
            }
        };
        // An estimate without standard errors (none before a release with information) keeps
        // an empty blob, so that it is not taken for one stored without them.
        let spread =
            estimate.as_ref().ok().map(|_| std_error.as_deref().map_or_else(Vec::new, encode_release));
        if present[i] {
            if lacking > 0 {
                fill_std_errors(tx, path, t, &estimate, spread)?;
            }
            continue;
        }
        let (blob, error) = match &estimate {
            Ok(x) => (Some(encode_release(x)), None),
            Err(why) => (None, Some(why.as_str())),
        };
        tx.execute(
            "INSERT INTO estimates (t, estimate, error, std_error) VALUES (?1, ?2, ?3, ?4)",
            params![t as i64, blob, error, spread],
        )
        .map_err(sql)?;
        made.push(StepEstimate { t, estimate, std_error });
    }
    // The state for the next update, sealed (one JSON cannot hold — a number not finite is
    // written null — does not read back, and the next update then runs from step 1).
    let state = stepper.ok().and_then(|f| serde_json::to_string(&f.state()).ok());
    tx.execute("DELETE FROM estimate_state", []).map_err(sql)?;
    if let Some(state) = state {
        let t = steps as i64;
        tx.execute(
            "INSERT INTO estimate_state (id, t, state, seal) VALUES (1, ?1, ?2, ?3)",
            params![t, state, &state_seal(key, t, &state)[..]],
        )
        .map_err(sql)?;
    }
    Ok(made)
}

/// Fills in the standard errors of an earlier version's row at step `t` — only where its
/// estimate is the one these standard errors belong to, bit for bit (else the row gets none,
/// for good).
fn fill_std_errors(
    tx: &Transaction<'_>,
    path: &Path,
    t: usize,
    estimate: &std::result::Result<Vec<f64>, String>,
    spread: Option<Vec<u8>>,
) -> Result<()> {
    let sql = |e| sqlite_error(path, e);
    let stored: Option<Vec<u8>> = tx
        .query_row("SELECT estimate FROM estimates WHERE t = ?1 AND std_error IS NULL", [t as i64], |r| {
            r.get(0)
        })
        .optional()
        .map_err(sql)?
        .flatten();
    if let Some(stored) = stored {
        let same = estimate.as_ref().is_ok_and(|x| encode_release(x) == stored);
        let fill = if same { spread.unwrap_or_default() } else { Vec::new() };
        tx.execute("UPDATE estimates SET std_error = ?1 WHERE t = ?2", params![fill, t as i64])
            .map_err(sql)?;
    }
    Ok(())
}

/// The error of an estimate row of a step the stream has not recorded.
fn not_recorded(path: &Path, t: i64) -> StreamError {
    StreamError::Corrupt {
        path: path.to_path_buf(),
        reason: format!("an estimate is stored for step {t}, which is not recorded"),
    }
}

/// The table of the filter's state after the last estimate stored (made by the first update
/// of a stream, old or new), sealed under the stream's key ([`StreamKey::seal`]).
const STATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS estimate_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    t INTEGER NOT NULL,
    state TEXT NOT NULL,
    seal BLOB NOT NULL
) STRICT;";

/// The seal of the filter's state `state` kept after step `t`.
fn state_seal(key: &StreamKey, t: i64, state: &str) -> [u8; 32] {
    key.seal("estimate_state", &[&t.to_le_bytes(), state.as_bytes()])
}

/// The filter's state kept by the last update, if it is that after step `done`, its seal is
/// the key's and it reads back (anything else: the filter runs from step 1, as if no state
/// were kept).
fn saved_state(
    tx: &Transaction<'_>,
    path: &Path,
    done: usize,
    key: &StreamKey,
) -> Result<Option<FilterState>> {
    let row: Option<(i64, String, Vec<u8>)> = tx
        .query_row("SELECT t, state, seal FROM estimate_state WHERE id = 1", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()
        .map_err(|e| sqlite_error(path, e))?;
    Ok(row
        .filter(|(t, state, seal)| {
            usize::try_from(*t).is_ok_and(|t| t == done) && state_seal(key, *t, state)[..] == seal[..]
        })
        .and_then(|(_, text, _)| serde_json::from_str(&text).ok()))
}

/// Whether the estimates table has its `std_error` column (streams whose estimates were
/// first stored by an earlier version have not, until their next update).
fn has_std_errors(tx: &Transaction<'_>, path: &Path) -> Result<bool> {
    tx.query_row("SELECT count(*) FROM pragma_table_info('estimates') WHERE name = 'std_error'", [], |r| {
        r.get::<_, i64>(0)
    })
    .map(|n| n > 0)
    .map_err(|e| sqlite_error(path, e))
}

/// The stored estimate of step `t`, checked, if the stream stores estimates.
pub(crate) fn read_one(
    tx: &Transaction<'_>,
    path: &Path,
    config: &StreamConfig,
    t: usize,
) -> Result<Option<StepEstimate>> {
    Ok(read_each(tx, path, config, Some(t), &mut Some, None)?.pop())
}

/// What every stored estimate row is checked against on read: the recorded steps, the cells
/// of a release and the population N.
struct Expected {
    steps: usize,
    cells: Option<usize>,
    total: Option<u64>,
}

impl Expected {
    /// Those of the stream read in `tx`.
    fn of(tx: &Transaction<'_>, path: &Path, config: &StreamConfig) -> Result<Self> {
        let sql = |e| sqlite_error(path, e);
        let steps: Option<i64> = tx.query_row("SELECT MAX(t) FROM steps", [], |r| r.get(0)).map_err(sql)?;
        let width = config.correlation.states();
        let cells = match width {
            Some(n) => Some(n),
            None => tx
                .query_row(
                    "SELECT length(release) FROM steps WHERE release IS NOT NULL ORDER BY t LIMIT 1",
                    [],
                    |r| r.get::<_, i64>(0),
                )
                .optional()
                .map_err(sql)?
                .and_then(|bytes| usize::try_from(bytes / 8).ok()),
        };
        Ok(Self {
            steps: steps.and_then(|t| usize::try_from(t).ok()).unwrap_or(0),
            cells,
            total: config.estimation.map(|e| e.total),
        })
    }

    /// Why the stored estimate `x` and standard errors `s` of step `t` cannot be the filter's,
    /// if they cannot: a step not recorded, another width than the releases', a value not
    /// finite or negative, a sum that is not N within rounding.
    fn fault(&self, t: i64, x: Option<&[f64]>, s: Option<&[f64]>) -> Option<String> {
        if usize::try_from(t).ok().is_none_or(|t| t == 0 || t > self.steps) {
            return Some(format!("an estimate is stored for step {t}, which is not recorded"));
        }
        let wrong_width = |v: &[f64]| self.cells.is_some_and(|n| v.len() != n);
        if let Some(x) = x {
            if let Some(n) = self.cells.filter(|_| wrong_width(x)) {
                return Some(format!(
                    "step {t}: its stored estimate has {} cells, its releases {n}",
                    x.len()
                ));
            }
            if let Some((i, v)) = x.iter().enumerate().find(|(_, v)| !(v.is_finite() && **v >= 0.0)) {
                return Some(format!("step {t}: its stored estimate of cell {i} is {v:?}, not a count"));
            }
            if let Some(total) = self.total {
                let (n, sum) = (total as f64, x.iter().sum::<f64>());
                // The filters renormalise to N to the last digit; estimates stored by earlier
                // versions were within 10⁻⁹ of it.
                let slack = 1e-9 * n.max(1.0);
                if (sum - n).abs() > slack {
                    return Some(format!(
                        "step {t}: its stored estimate sums to {sum:?}, not to the population {total}"
                    ));
                }
            }
        }
        if let Some(s) = s.filter(|s| !s.is_empty()) {
            if x.is_none_or(|x| x.len() != s.len()) {
                return Some(format!("step {t}: its stored standard errors do not fit its estimate"));
            }
            if let Some((i, v)) = s.iter().enumerate().find(|(_, v)| !(v.is_finite() && **v >= 0.0)) {
                return Some(format!("step {t}: its stored standard error of cell {i} is {v:?}"));
            }
        }
        None
    }
}

/// Every stored estimate, in order of t, or only step `only`'s (none for a file without the
/// table), keeping of each what `keep` returns: the rows are read, checked
/// ([`docs/stream.md`](tpl_core::guide::stream) §9: a step that is recorded, the releases'
/// width, finite non-negative values summing to N within rounding, standard errors that fit)
/// and decoded one at a time, each taken by `digest` as stored when one is given. A row
/// missing is no error: its step has no estimate until the next update makes it.
///
/// # Errors
/// [`StreamError::Corrupt`] naming the step of the first row at fault; SQLite's.
pub(crate) fn read_each<K>(
    tx: &Transaction<'_>,
    path: &Path,
    config: &StreamConfig,
    only: Option<usize>,
    keep: &mut dyn FnMut(StepEstimate) -> Option<K>,
    mut digest: Option<&mut EstimatesDigest>,
) -> Result<Vec<K>> {
    let sql = |e| sqlite_error(path, e);
    let exists: Option<i64> = tx
        .query_row("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'estimates'", [], |r| {
            r.get(0)
        })
        .optional()
        .map_err(sql)?;
    if exists.is_none() {
        return Ok(Vec::new());
    }
    let expected = Expected::of(tx, path, config)?;
    let spread = if has_std_errors(tx, path)? { "std_error" } else { "NULL" };
    // One row by its key, or every row in order (a condition on either would scan the table).
    let which = if only.is_some() { "WHERE t = ?1" } else { "WHERE ?1 IS NULL ORDER BY t" };
    let mut stmt =
        tx.prepare(&format!("SELECT t, estimate, error, {spread} FROM estimates {which}")).map_err(sql)?;
    let mut rows = stmt.query([only.map(|t| t as i64)]).map_err(sql)?;
    // An estimate is post-processing: removing its row lets the next push make it again.
    let corrupt = |reason: String| StreamError::Corrupt {
        path: path.to_path_buf(),
        reason: format!("{reason} (delete that row of the table estimates: the next push makes it again)"),
    };
    let mut out = Vec::new();
    // Reading every row: each step from 1 has its entry, a missing one in its place.
    let mut next = only.map_or(1, |_| usize::MAX);
    let gaps = |from: usize, to: usize, keep: &mut dyn FnMut(StepEstimate) -> Option<K>, out: &mut Vec<K>| {
        for t in from..to {
            out.extend(keep(StepEstimate { t, estimate: Err(MISSING.into()), std_error: None }));
        }
    };
    while let Some(r) = rows.next().map_err(sql)? {
        let t: i64 = r.get(0).map_err(sql)?;
        let blob: Option<Vec<u8>> = r.get(1).map_err(sql)?;
        let error: Option<String> = r.get(2).map_err(sql)?;
        let spread: Option<Vec<u8>> = r.get(3).map_err(sql)?;
        if let Some(d) = digest.as_deref_mut() {
            d.add(t, blob.as_deref(), error.as_deref(), spread.as_deref());
        }
        let estimate = match (blob.as_deref().map(decode_release), error) {
            (Some(Some(x)), None) => Ok(x),
            (None, Some(why)) => Err(why),
            _ => return Err(corrupt(format!("step {t}: its stored estimate is damaged"))),
        };
        let std_error = match spread.as_deref().map(decode_release) {
            // NULL: stored by an earlier version; empty: the step has none.
            None => None,
            Some(Some(s)) if s.is_empty() => None,
            Some(Some(s)) => Some(s),
            Some(None) => return Err(corrupt(format!("step {t}: its stored standard errors are damaged"))),
        };
        if let Some(why) = expected.fault(t, estimate.as_deref().ok(), std_error.as_deref()) {
            return Err(corrupt(why));
        }
        // A recorded step (checked above).
        let t = usize::try_from(t).unwrap_or(0);
        gaps(next, t, keep, &mut out);
        next = next.max(t + 1);
        out.extend(keep(StepEstimate { t, estimate, std_error }));
    }
    gaps(next, expected.steps.saturating_add(1), keep, &mut out);
    Ok(out)
}

/// Why a step has no estimate when its row is missing.
pub(crate) const MISSING: &str = "no estimate is stored (a push stopped before its estimates, or the row was removed): the next push makes it";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_of_some_cells_is_that_of_the_whole_step_cut_to_them() {
        let step = StepEstimate {
            t: 1,
            estimate: Ok(vec![10.0, 2.0, 7.5, 0.5]),
            std_error: Some(vec![2.0, 2.0, 0.5, 3.0]),
        };
        let (lo, hi) = step.interval(0.9).unwrap().unwrap();
        let (lo2, hi2) = step.interval_of(&[3, 0], 0.9).unwrap().unwrap();
        assert_eq!((lo2, hi2), (vec![lo[3], lo[0]], vec![hi[3], hi[0]]));
        assert_eq!(step.interval_of(&[3, 9], 0.9).unwrap(), None);
        let none = StepEstimate { std_error: None, ..step };
        assert_eq!(none.interval_of(&[0], 0.9).unwrap(), None);
    }
}
