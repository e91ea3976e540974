//! The durable stream: open, push one step per transaction, read back (`docs/stream.md`).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior, params};
use tpl_alloc::{GuaranteedAudit, Spending, guaranteed_audit};
use tpl_mechanisms::{
    Guarantee, NoiseSource, StepBudget, StepOutcome, StreamScheme, WindowLedger, effective_spending,
};

use crate::config::StreamConfig;
use crate::error::{Result, StreamError};
use crate::guard::{Enforced, Guard, within};
use crate::store::{
    check_header, counts_digest, decode_release, encode_release, initialise, read_config, sqlite_error,
};

/// How long a push waits for another process's step to commit before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// One step of the stream as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    /// t, the 1-based step number.
    pub t: usize,
    /// The step's key (the counts file's `timestamp_bucket`, or the previous key + 1).
    pub key: i64,
    /// Whether r_t is fresh (else it repeats r_{t−1}).
    pub published: bool,
    /// What the step spent.
    pub spent: StepBudget,
    /// r_t.
    pub release: Vec<f64>,
    /// Why the step was not published, when the stream's own check refused a draw (the
    /// window's ε or α); `None` when the scheme decided.
    pub refused: Option<String>,
    /// With matrices: max TPL over steps 1..t of the realised budgets, as audited at t.
    pub max_tpl: Option<f64>,
    /// With matrices: the largest leakage of a window of min(w, t) steps, as audited at t.
    pub max_window_leakage: Option<f64>,
}

/// What a push did with one row of counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Pushed {
    /// The step, as recorded.
    pub record: StepRecord,
    /// True when the key was already stored with the same counts: the stored release is
    /// returned and nothing was spent.
    pub replayed: bool,
}

/// Where the stream stands: the data of `tpl stream status`.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// The parameters.
    pub config: StreamConfig,
    /// ε_t of every step.
    pub budgets: Vec<f64>,
    /// Whether each step published.
    pub published: Vec<bool>,
    /// The steps the stream's checks refused.
    pub refused: Vec<usize>,
    /// The last key, if any step is stored.
    pub last_key: Option<i64>,
    /// The largest exact sum of ε_t over a window of w steps, rounded up.
    pub max_window_spend: f64,
    /// With matrices: (max TPL, largest window leakage) of the realised budgets.
    pub realized: Option<(f64, f64)>,
}

impl Status {
    /// The guaranteed leakage of the stream's scheme over its steps so far, for every run it
    /// could have produced (`docs/model.md` §9): max TPL and the largest leakage of a window
    /// of min(w, T) steps, from the stored parameters alone (nothing is drawn). The same audit
    /// `tpl compare` reports for a scheme. `None` without matrices or before the first step.
    ///
    /// # Errors
    /// [`StreamError::Config`] for stored parameters the scheme refuses;
    /// [`StreamError::Alloc`] when the audit overflows.
    pub fn guaranteed(&self) -> Result<Option<GuaranteedAudit>> {
        let c = &self.config;
        let steps = self.budgets.len();
        let Some(corr) = c.correlation()?.filter(|_| steps > 0) else {
            return Ok(None);
        };
        // The scheme only states its caps here; its mechanism never draws.
        let scheme = c
            .scheme
            .build(c.params()?, tpl_mechanisms::LaplaceMechanism::new(c.sampler.from_os_rng()), c.inputs())
            .map_err(|e| StreamError::Config(e.to_string()))?;
        let s = effective_spending(scheme.as_ref(), steps);
        let spending = Spending::from_caps(&s.caps, s.fixed, s.window_limit);
        Ok(Some(guaranteed_audit(&corr, spending, Some(c.window.min(steps)))?))
    }
}

/// A durable stream: one SQLite file holding the parameters and every step (`docs/stream.md`).
/// Each [`Stream::push`] of a row is one transaction; a release is returned only after its
/// step is committed. Noise is drawn from the operating system at every push: no generator
/// state is stored.
pub struct Stream {
    path: PathBuf,
    conn: Connection,
    config: StreamConfig,
    noise: Box<dyn Fn() -> Box<dyn NoiseSource>>,
    state: State,
}

/// The scheme and the guard as of the recorded steps this handle has read.
struct State {
    scheme: Box<dyn StreamScheme>,
    /// Totals ε_t of the last steps, windows of w (for reports; the guard checks the
    /// promise's).
    spend: WindowLedger,
    /// The largest window sum of `spend` ending at a step this handle recorded.
    pushed_max: f64,
    guard: Rc<RefCell<Guard>>,
    last_key: Option<i64>,
    last_release: Vec<f64>,
}

impl State {
    fn new(config: &StreamConfig, noise: Box<dyn NoiseSource>) -> Result<Self> {
        let params = config.params()?;
        let guard = Rc::new(RefCell::new(Guard::new(
            config.epsilon,
            config.sensitivity,
            config.correlation()?,
            config.alpha,
            config.window,
        )?));
        let mechanism = Enforced::new(noise, Rc::clone(&guard));
        let scheme = config
            .scheme
            .build(params, mechanism, config.inputs())
            .map_err(|e| StreamError::Config(e.to_string()))?;
        // The windows of the scheme's own promise: w steps, or one for event-level `laplace`.
        guard.borrow_mut().set_window(match scheme.guarantee() {
            Guarantee::WEvent { window, .. } => window,
            Guarantee::EventLevel { .. } => 1,
        });
        Ok(Self {
            scheme,
            spend: WindowLedger::new(config.window),
            pushed_max: 0.0,
            guard,
            last_key: None,
            last_release: Vec::new(),
        })
    }
}

impl Stream {
    /// Creates the stream file at `path` with `config`; refuses a path that exists.
    ///
    /// # Errors
    /// [`StreamError::Config`] for parameters that make no stream (nothing is created),
    /// [`StreamError::Exists`], or a file that cannot be written.
    pub fn create(path: &Path, config: &StreamConfig) -> Result<()> {
        config.check()?;
        match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(StreamError::Exists { path: path.to_path_buf() });
            }
            Err(e) => return Err(StreamError::ReadOnly { path: path.to_path_buf(), reason: e.to_string() }),
        }
        let made = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
            .and_then(|mut conn| initialise(&mut conn, config));
        if let Err(e) = made {
            let _ = std::fs::remove_file(path);
            return Err(sqlite_error(path, e));
        }
        Ok(())
    }

    /// Opens an existing stream for pushing and reading; every push draws from a fresh
    /// OS-seeded sampler.
    ///
    /// # Errors
    /// [`StreamError::Missing`], [`StreamError::Foreign`], [`StreamError::NewerFormat`],
    /// [`StreamError::Corrupt`] (truncated, inconsistent), or SQLite's.
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_inner(path, None)
    }

    /// Opens a stream whose pushes draw from `noise()` instead of the OS (tests: scripted
    /// noise). Not for releases.
    ///
    /// # Errors
    /// As [`Stream::open`].
    #[cfg(feature = "test-util")]
    pub fn open_with_noise(path: &Path, noise: impl Fn() -> Box<dyn NoiseSource> + 'static) -> Result<Self> {
        Self::open_inner(path, Some(Box::new(noise)))
    }

    fn open_inner(path: &Path, noise: Option<Box<dyn Fn() -> Box<dyn NoiseSource>>>) -> Result<Self> {
        check_header(path)?;
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .or_else(|_| Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY))
        .map_err(|e| sqlite_error(path, e))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| sqlite_error(path, e))?;
        let config = read_config(&conn, path)?;
        // A commit survives the process being killed; `flush` makes it survive power loss.
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(|e| sqlite_error(path, e))?;
        let sampler = config.sampler;
        let noise = noise.unwrap_or_else(|| Box::new(move || sampler.from_os_rng()));
        let state = State::new(&config, noise())?;
        Ok(Self { path: path.to_path_buf(), conn, config, noise, state })
    }

    /// The stream's parameters.
    pub fn config(&self) -> &StreamConfig {
        &self.config
    }

    /// The stream's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Releases one step: `key` (`None`: the last key + 1, or 1 for the first step) with
    /// `counts`, in one transaction. A key already stored with the same counts returns the
    /// stored step and spends nothing; with other counts it is refused; a new key must be
    /// greater than the last. The step's draws are admitted first by the stream's checks
    /// (window within ε; with α, every step's TPL within α): a refused step repeats the
    /// last release and records why.
    ///
    /// # Errors
    /// [`StreamError::KeyConflict`], [`StreamError::KeyOrder`], [`StreamError::Step`] (counts
    /// of the wrong width or refused by the sampler, a step past a plan), [`StreamError::FirstRefused`],
    /// [`StreamError::Busy`], [`StreamError::ReadOnly`], or a damaged file. Nothing is
    /// recorded then.
    pub fn push(&mut self, key: Option<i64>, counts: &[f64]) -> Result<Pushed> {
        let path = self.path.clone();
        let sql = |e| sqlite_error(&path, e);
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate).map_err(sql)?;
        if let Err(e) = sync(&tx, &path, &mut self.state) {
            self.state = State::new(&self.config, (self.noise)())?;
            return Err(e);
        }
        let digest = counts_digest(counts);
        if let (Some(k), Some(last)) = (key, self.state.last_key)
            && k <= last
        {
            let stored: Option<(i64, Vec<u8>)> = tx
                .query_row("SELECT t, counts_sha256 FROM steps WHERE key = ?1", [k], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
                .map_err(sql)?;
            return match stored {
                Some((t, d)) if d == digest => {
                    let record = read_steps(&tx, &path, Some(t as usize))?.pop();
                    record.map(|record| Pushed { record, replayed: true }).ok_or_else(|| {
                        StreamError::Corrupt { path: path.clone(), reason: format!("step {t} vanished") }
                    })
                }
                Some((t, _)) => Err(StreamError::KeyConflict { key: k, step: t as usize }),
                None => Err(StreamError::KeyOrder { key: k, last }),
            };
        }
        let key = match key {
            Some(k) => k,
            None => match self.state.last_key {
                Some(last) => last.checked_add(1).ok_or_else(|| StreamError::KeyOrder { key: last, last })?,
                None => 1,
            },
        };
        let t = self.state.scheme.steps() + 1;
        self.state.guard.borrow_mut().begin();
        let stepped = self.state.scheme.step(counts);
        let refused = self.state.guard.borrow().refused().map(str::to_string);
        let outcome = match (stepped, refused.as_ref()) {
            (Ok(o), _) => o,
            (Err(_), Some(reason)) => {
                if t == 1 {
                    self.state = State::new(&self.config, (self.noise)())?;
                    return Err(StreamError::FirstRefused { reason: reason.clone() });
                }
                let spent =
                    StepBudget { test: self.state.guard.borrow().spent(), publication: 0.0, absorbed: 0.0 };
                let o = StepOutcome { release: self.state.last_release.clone(), published: false, spent };
                if let Err(e) = self.state.scheme.restore(&o) {
                    self.state = State::new(&self.config, (self.noise)())?;
                    return Err(StreamError::Step { step: t, source: e });
                }
                o
            }
            (Err(e), None) => {
                // The scheme may have drawn (a test) before failing: rebuild it from the file.
                self.state = State::new(&self.config, (self.noise)())?;
                return Err(StreamError::Step { step: t, source: e });
            }
        };
        let result = commit(&mut self.state, &self.config, &path, tx, (t, key, &digest), outcome, refused);
        if result.is_err() {
            // The in-memory state ran ahead of the file: rebuild it at the next push.
            self.state = State::new(&self.config, (self.noise)())?;
        }
        result
    }

    /// Makes every committed step durable against power loss: an fsync of the write-ahead
    /// log, where commits go (a checkpoint into the database file is synced by SQLite
    /// itself). Each step's commit already survives the process being killed; call this
    /// before showing releases to anyone, so that nothing shown can be lost with the
    /// machine's power and drawn again (`docs/stream.md` §4).
    ///
    /// # Errors
    /// The log cannot be synced.
    pub fn flush(&self) -> Result<()> {
        let mut wal = self.path.clone().into_os_string();
        wal.push("-wal");
        let wal = PathBuf::from(wal);
        match std::fs::File::open(&wal).and_then(|f| f.sync_all()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(StreamError::ReadOnly { path: wal, reason: e.to_string() })
            }
            _ => Ok(()),
        }
    }

    /// The largest exact sum of ε_t over a window of w steps ending at a step this handle
    /// recorded (0 before it records one), rounded up: what its pushes spent, windows reaching
    /// back into earlier steps included. [`Status::max_window_spend`] is the stream's.
    pub fn max_window_spend(&self) -> f64 {
        self.state.pushed_max
    }

    /// Every recorded step, in order (a read transaction: a consistent snapshot).
    ///
    /// # Errors
    /// A damaged file, or SQLite's.
    pub fn steps(&mut self) -> Result<Vec<StepRecord>> {
        let tx = self.conn.transaction().map_err(|e| sqlite_error(&self.path, e))?;
        read_steps(&tx, &self.path, None)
    }

    /// Where the stream stands: budgets, publications, the largest window spend and, with
    /// matrices, the realised leakage of the budgets spent.
    ///
    /// # Errors
    /// As [`Stream::steps`]; an audit that fails.
    pub fn status(&mut self) -> Result<Status> {
        let steps = self.steps()?;
        let mut ledger = WindowLedger::new(self.config.window);
        let budgets: Vec<f64> = steps.iter().map(|s| s.spent.total()).collect();
        for &b in &budgets {
            ledger.push(b);
        }
        // Each step stored the realised leakage of the stream up to it: the last one's is the
        // stream's (the audit is not run again).
        let realized = steps.last().and_then(|s| s.max_tpl.zip(s.max_window_leakage));
        Ok(Status {
            config: self.config.clone(),
            published: steps.iter().map(|s| s.published).collect(),
            refused: steps.iter().filter(|s| s.refused.is_some()).map(|s| s.t).collect(),
            last_key: steps.last().map(|s| s.key),
            budgets,
            max_window_spend: ledger.max_window_budget(),
            realized,
        })
    }
}

/// Records the decided step and commits; the step is returned only once committed.
fn commit(
    state: &mut State,
    config: &StreamConfig,
    path: &Path,
    tx: Transaction<'_>,
    (t, key, digest): (usize, i64, &[u8; 32]),
    outcome: StepOutcome,
    refused: Option<String>,
) -> Result<Pushed> {
    let sql = |e| sqlite_error(path, e);
    let total = outcome.spent.total();
    let spent_by_draws = state.guard.borrow().spent();
    if total != spent_by_draws {
        return Err(StreamError::Corrupt {
            path: path.to_path_buf(),
            reason: format!("step {t}: the scheme reports {total} spent, its draws spent {spent_by_draws}"),
        });
    }
    let window_sum = state.guard.borrow_mut().record(total).map_err(|e| StreamError::Corrupt {
        path: path.to_path_buf(),
        reason: format!("step {t}: the audit of the leakage: {e}"),
    })?;
    state.pushed_max = state.pushed_max.max(state.spend.push(total));
    if !within(window_sum, config.epsilon) {
        return Err(StreamError::Corrupt {
            path: path.to_path_buf(),
            reason: format!("step {t}: a window would spend {window_sum}, over epsilon"),
        });
    }
    let leakage = state.guard.borrow().leakage()?;
    let s = outcome.spent;
    tx.execute(
        "INSERT INTO steps (t, key, counts_sha256, test, publication, absorbed, published, refused, release, \
         max_tpl, max_window_leakage) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            t as i64,
            key,
            &digest[..],
            s.test,
            s.publication,
            s.absorbed,
            outcome.published,
            refused,
            outcome.published.then(|| encode_release(&outcome.release)),
            leakage.map(|l| l.0),
            leakage.map(|l| l.1),
        ],
    )
    .map_err(sql)?;
    tx.commit().map_err(sql)?;
    state.last_key = Some(key);
    if outcome.published {
        state.last_release.clone_from(&outcome.release);
    }
    let record = StepRecord {
        t,
        key,
        published: outcome.published,
        spent: s,
        release: outcome.release,
        refused,
        max_tpl: leakage.map(|l| l.0),
        max_window_leakage: leakage.map(|l| l.1),
    };
    Ok(Pushed { record, replayed: false })
}

/// (t, key, test, publication, absorbed, published, release) of a stored step.
type StepRow = (i64, i64, f64, f64, f64, bool, Option<Vec<u8>>);

/// Brings `state` up to the last committed step, drawing nothing: restores every step
/// recorded since (by another process, or before this one opened the file) into the scheme
/// and the guard — on a fresh state only the last w − 1 steps, past the rest
/// ([`skip_prefix`]), so that opening a stream of T steps reads O(min(w, T)) releases.
fn sync(tx: &rusqlite::Transaction<'_>, path: &Path, state: &mut State) -> Result<()> {
    let done = state.scheme.steps();
    let last: Option<i64> =
        tx.query_row("SELECT MAX(t) FROM steps", [], |r| r.get(0)).map_err(|e| sqlite_error(path, e))?;
    let last = usize::try_from(last.unwrap_or(0)).unwrap_or(0);
    if last == done {
        return Ok(());
    }
    // A scheme's state is its last release, its last publication and the last w − 1 steps.
    let memory = state.scheme.params().window() - 1;
    let from = match last.checked_sub(memory) {
        Some(skip) if done == 0 && skip >= 2 => {
            skip_prefix(tx, path, state, skip)?;
            skip
        }
        _ => done,
    };
    let corrupt = |reason: String| StreamError::Corrupt { path: path.to_path_buf(), reason };
    let mut stmt = tx
        .prepare(
            "SELECT t, key, test, publication, absorbed, published, release FROM steps WHERE t > ?1 ORDER BY t",
        )
        .map_err(|e| sqlite_error(path, e))?;
    let mut rows = stmt.query([from as i64]).map_err(|e| sqlite_error(path, e))?;
    while let Some(r) = rows.next().map_err(|e| sqlite_error(path, e))? {
        let row = || -> rusqlite::Result<StepRow> {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?))
        };
        let (t, key, test, publication, absorbed, published, release) =
            row().map_err(|e| sqlite_error(path, e))?;
        let expected = state.scheme.steps() + 1;
        if t != expected as i64 {
            return Err(corrupt(format!("step {expected} is missing (found step {t})")));
        }
        if state.last_key.is_some_and(|k| key <= k) {
            return Err(corrupt(format!("step {t}: key {key} does not increase")));
        }
        let release = match (published, release) {
            (true, Some(bytes)) => decode_release(&bytes)
                .ok_or_else(|| corrupt(format!("step {t}: release of {} bytes", bytes.len())))?,
            (false, None) => state.last_release.clone(),
            _ => {
                return Err(corrupt(format!(
                    "step {t}: release stored for a repeat or missing for a publication"
                )));
            }
        };
        let outcome = StepOutcome { release, published, spent: StepBudget { test, publication, absorbed } };
        state.scheme.restore(&outcome).map_err(|e| corrupt(e.to_string()))?;
        let window =
            state.guard.borrow_mut().record(outcome.spent.total()).map_err(|e| corrupt(e.to_string()))?;
        state.spend.push(outcome.spent.total());
        if !within(window, state.guard.borrow().epsilon()) {
            return Err(corrupt(format!("step {t}: a window spends {window}, over epsilon")));
        }
        state.last_key = Some(key);
        if published {
            state.last_release = outcome.release;
        }
    }
    Ok(())
}

/// Positions a fresh `state` after recorded steps 1..`skip` without restoring them one by
/// one: the scheme resumes from the last publication among them
/// ([`StreamScheme::resume`]), the key and release carry over, and — with matrices — their
/// budgets reach the leakage audit (a read of three numbers a step, no release).
fn skip_prefix(tx: &rusqlite::Transaction<'_>, path: &Path, state: &mut State, skip: usize) -> Result<()> {
    let corrupt = |reason: String| StreamError::Corrupt { path: path.to_path_buf(), reason };
    let sql = |e| sqlite_error(path, e);
    if state.guard.borrow().audits() {
        let mut stmt =
            tx.prepare("SELECT t, test, publication FROM steps WHERE t <= ?1 ORDER BY t").map_err(sql)?;
        let mut rows = stmt.query([skip as i64]).map_err(sql)?;
        let mut expected = 1;
        while let Some(r) = rows.next().map_err(sql)? {
            let (t, test, publication): (i64, f64, f64) =
                (r.get(0).map_err(sql)?, r.get(1).map_err(sql)?, r.get(2).map_err(sql)?);
            if t != expected {
                return Err(corrupt(format!("step {expected} is missing (found step {t})")));
            }
            if !(tpl_core::is_budget(test) && tpl_core::is_budget(publication)) {
                return Err(corrupt(format!("step {t}: budgets {test} and {publication}")));
            }
            let total = StepBudget { test, publication, absorbed: 0.0 }.total();
            state.guard.borrow_mut().account(total).map_err(|e| corrupt(format!("step {t}: {e}")))?;
            expected += 1;
        }
        if expected != skip as i64 + 1 {
            return Err(corrupt(format!("step {expected} is missing")));
        }
    }
    type Publication = (i64, f64, f64, f64, Option<Vec<u8>>);
    let (p, test, publication, absorbed, bytes): Publication = tx
        .query_row(
            "SELECT t, test, publication, absorbed, release FROM steps WHERE t <= ?1 AND published = 1 \
             ORDER BY t DESC LIMIT 1",
            [skip as i64],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .optional()
        .map_err(sql)?
        .ok_or_else(|| corrupt(format!("no publication among steps 1..{skip}")))?;
    let release = bytes
        .as_deref()
        .and_then(decode_release)
        .ok_or_else(|| corrupt(format!("step {p}: the release of a publication is missing or damaged")))?;
    let outcome = StepOutcome { release, published: true, spent: StepBudget { test, publication, absorbed } };
    state.scheme.resume(skip, (p as usize, &outcome)).map_err(|e| corrupt(e.to_string()))?;
    let key: i64 = tx
        .query_row("SELECT key FROM steps WHERE t = ?1", [skip as i64], |r| r.get(0))
        .optional()
        .map_err(sql)?
        .ok_or_else(|| corrupt(format!("step {skip} is missing")))?;
    state.last_key = Some(key);
    state.last_release = outcome.release;
    Ok(())
}

/// The recorded steps (all, or step `only`), releases of repeats filled in.
fn read_steps(tx: &rusqlite::Transaction<'_>, path: &Path, only: Option<usize>) -> Result<Vec<StepRecord>> {
    let corrupt = |reason: String| StreamError::Corrupt { path: path.to_path_buf(), reason };
    let sql = |e| sqlite_error(path, e);
    // A repeat's release is the last publication at or before it.
    let from: i64 = match only {
        Some(t) => tx
            .query_row("SELECT MAX(t) FROM steps WHERE published = 1 AND t <= ?1", [t as i64], |r| {
                r.get::<_, Option<i64>>(0)
            })
            .map_err(sql)?
            .unwrap_or(1),
        None => 1,
    };
    let to = only.map_or(i64::MAX, |t| t as i64);
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
    if let Some(t) = only {
        out.retain(|s| s.t == t);
    }
    Ok(out)
}
