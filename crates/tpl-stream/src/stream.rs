//! The durable stream: open, push one step per transaction, read back (`docs/stream.md`).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior, params};
use tpl_alloc::{GuaranteedAudit, Spending, guaranteed_audit};
use tpl_core::TransitionMatrix;
use tpl_mechanisms::{
    Guarantee, Mechanism, NoiseSource, StepBudget, StepOutcome, StreamScheme, WindowLedger, effective_spending,
};

use crate::config::StreamConfig;
use crate::error::{ConfigError, Result, StreamError};
use crate::guard::{Enforced, Guard, within};
use crate::store::{
    Stamp, check_header, companion, counts_digest, decode_release, encode_release, immutable_uri, initialise,
    read_config, read_only, sqlite_error, stamp,
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
            .map_err(StreamError::Plan)?;
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
    /// The read-write connection; `None` when this process cannot write the stream (the
    /// file, or its folder, which must hold the write-ahead log): then every read is a fresh
    /// read-only snapshot ([`snapshot`]) and a push is refused, for the reason `read_only`.
    conn: Option<Connection>,
    read_only: String,
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
        let scheme = config.scheme.build(params, mechanism, config.inputs()).map_err(StreamError::Plan)?;
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
    /// [`StreamError::Config`] for parameters that make no stream (nothing is created) —
    /// among them parameters under which a step could never be released (`check_steps`),
    /// [`StreamError::Plan`], [`StreamError::Exists`], [`StreamError::NoFolder`], or a file
    /// that cannot be written.
    pub fn create(path: &Path, config: &StreamConfig) -> Result<()> {
        config.check()?;
        check_steps(config)?;
        match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(StreamError::Exists { path: path.to_path_buf() });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let folder = path.parent().filter(|f| !f.as_os_str().is_empty()).unwrap_or(Path::new("."));
                return Err(StreamError::NoFolder { path: path.to_path_buf(), folder: folder.to_path_buf() });
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
    /// OS-seeded sampler. A process that cannot write the stream (the file, or its folder,
    /// where SQLite keeps the write-ahead log) gets a read-only handle: its reads write
    /// nothing beside the file (`docs/stream.md` §5) and its pushes are refused.
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
        let sql = |e| sqlite_error(path, e);
        // Opening the file for writing changes nothing in it; a process that cannot must not
        // let SQLite fall back to a read-only connection that leaves its own companions.
        let writable = std::fs::OpenOptions::new().read(true).write(true).open(path).map(drop);
        let (conn, config, read_only) = match writable {
            Ok(()) => {
                let conn = Connection::open_with_flags(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .map_err(sql)?;
                conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
                match read_config(&conn, path) {
                    Ok(config) => {
                        // A commit survives the process being killed; `flush` makes it survive
                        // power loss.
                        conn.pragma_update(None, "synchronous", "NORMAL").map_err(sql)?;
                        (Some(conn), config, String::new())
                    }
                    // A folder where the log cannot be created, or companions another user
                    // left: a reader still reads; a push says why it cannot write.
                    Err(StreamError::ReadOnly { reason, .. }) => {
                        drop(conn);
                        (None, snapshot(path, |tx| read_config(tx, path))?, reason)
                    }
                    Err(StreamError::Companions { .. }) => {
                        drop(conn);
                        let why = "companion files of another user".to_string();
                        (None, snapshot(path, |tx| read_config(tx, path))?, why)
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(e) => (None, snapshot(path, |tx| read_config(tx, path))?, e.to_string()),
        };
        let sampler = config.sampler;
        let noise = noise.unwrap_or_else(|| Box::new(move || sampler.from_os_rng()));
        let state = State::new(&config, noise())?;
        Ok(Self { path: path.to_path_buf(), conn, read_only, config, noise, state })
    }

    /// Runs `read` in one read transaction: on the read-write connection, or on a fresh
    /// read-only snapshot when this process cannot write the stream.
    fn read<T>(&mut self, read: impl FnMut(&Transaction<'_>) -> Result<T>) -> Result<T> {
        match &mut self.conn {
            Some(conn) => {
                let tx = conn.transaction().map_err(|e| sqlite_error(&self.path, e))?;
                let mut read = read;
                read(&tx)
            }
            None => snapshot(&self.path, read),
        }
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
    /// [`StreamError::KeyConflict`], [`StreamError::KeyOrder`], [`StreamError::Width`] (not
    /// one count per state of the matrices), [`StreamError::Step`] (counts of another width
    /// than the stream's or refused by the sampler, a step past a plan), [`StreamError::FirstRefused`],
    /// [`StreamError::Busy`], [`StreamError::ReadOnly`] or [`StreamError::Companions`] (a
    /// stream this process cannot write), or a damaged file. Nothing is recorded then.
    pub fn push(&mut self, key: Option<i64>, counts: &[f64]) -> Result<Pushed> {
        let path = self.path.clone();
        let sql = |e| sqlite_error(&path, e);
        let Some(conn) = &self.conn else {
            return Err(read_only(&path, self.read_only.clone()));
        };
        let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(sql)?;
        if let Err(e) = sync(&tx, &path, &mut self.state) {
            self.state = State::new(&self.config, (self.noise)())?;
            return Err(e);
        }
        let states = self.config.backward.as_ref().or(self.config.forward.as_ref()).map(TransitionMatrix::n);
        if let Some(states) = states.filter(|&n| n != counts.len()) {
            return Err(StreamError::Width { step: self.state.scheme.steps() + 1, cells: counts.len(), states });
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
        let drawn = self.state.guard.borrow().spent();
        let (outcome, refused) = match (stepped, refused) {
            (Ok(o), refused) => (o, refused),
            (Err(_), Some(reason)) if t == 1 => {
                self.state = State::new(&self.config, (self.noise)())?;
                return Err(StreamError::FirstRefused { reason });
            }
            // Nothing was drawn (every check comes before the first draw), or step 1, which
            // has no release to repeat (its one draw fails after the fact only when the
            // noise itself is out of range, independent of the counts): nothing is recorded.
            (Err(e), None) if t == 1 || drawn == 0.0 => {
                self.state = State::new(&self.config, (self.noise)())?;
                return Err(StreamError::Step { step: t, source: e });
            }
            // A draw was refused by the stream's checks, or failed after an earlier draw of
            // the step: the step repeats the last release and records what its draws spent
            // and why, so that a retry cannot draw again on the same counts uncounted.
            (Err(e), refused) => {
                let reason = refused.unwrap_or_else(|| format!("a draw failed after {drawn} was spent: {e}"));
                let spent = StepBudget { test: drawn, publication: 0.0, absorbed: 0.0 };
                let o = StepOutcome { release: self.state.last_release.clone(), published: false, spent };
                if let Err(e) = self.state.scheme.restore(&o) {
                    self.state = State::new(&self.config, (self.noise)())?;
                    return Err(StreamError::Step { step: t, source: e });
                }
                (o, Some(reason))
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

    /// Every recorded step, in order, each checked (as [`Stream::snapshot`]).
    ///
    /// # Errors
    /// As [`Stream::snapshot`].
    pub fn steps(&mut self) -> Result<Vec<StepRecord>> {
        self.snapshot().map(|(_, steps)| steps)
    }

    /// Where the stream stands (as [`Stream::snapshot`]): budgets, publications, the largest
    /// window spend and, with matrices, the realised leakage of the budgets spent.
    ///
    /// # Errors
    /// As [`Stream::snapshot`].
    pub fn status(&mut self) -> Result<Status> {
        self.snapshot().map(|(status, _)| status)
    }

    /// Where the stream stands and every recorded step, from one read transaction (a
    /// consistent snapshot while pushes run), every record checked in O(T) as a push checks
    /// those it reads (`docs/stream.md` §6): steps 1..T without a gap, keys increasing, each
    /// step one the scheme could have produced given the ones before (a first step that
    /// publishes, a repeat equal to the last release, budgets finite, ≥ 0 and within
    /// [`tpl_mechanisms::StreamScheme::max_spend`], no step past a plan), every window of the
    /// promise within ε (of w steps; one for the event-level `laplace`), and, with matrices,
    /// the leakage audited again from the stored budgets (the realised leakage reported is
    /// that audit, not a stored number), within α when the stream has one.
    ///
    /// # Errors
    /// [`StreamError::Corrupt`] naming the first record at fault, SQLite's, or an audit that
    /// fails.
    pub fn snapshot(&mut self) -> Result<(Status, Vec<StepRecord>)> {
        let path = self.path.clone();
        let steps = self.read(|tx| read_steps(tx, &path, None))?;
        let mut state = State::new(&self.config, (self.noise)())?;
        for r in &steps {
            let outcome = StepOutcome { release: r.release.clone(), published: r.published, spent: r.spent };
            take(&mut state, &path, r.t as i64, r.key, &outcome)?;
        }
        let realized = state.guard.borrow().leakage()?;
        if let (Some((tpl, _)), Some(alpha)) = (realized, self.config.alpha)
            && !within(tpl, alpha)
        {
            return Err(StreamError::Corrupt {
                path,
                reason: format!("the budgets spent take the temporal leakage to {tpl}, over alpha = {alpha}"),
            });
        }
        let status = Status {
            config: self.config.clone(),
            budgets: steps.iter().map(|s| s.spent.total()).collect(),
            published: steps.iter().map(|s| s.published).collect(),
            refused: steps.iter().filter(|s| s.refused.is_some()).map(|s| s.t).collect(),
            last_key: steps.last().map(|s| s.key),
            max_window_spend: state.spend.max_window_budget(),
            realized,
        };
        Ok((status, steps))
    }
}

/// How many times a reader without write access reads again when a push changed the file
/// during its read.
const SNAPSHOT_TRIES: usize = 5;

/// Runs `read` on a read-only connection that writes nothing beside the file, for a process
/// that cannot write the stream (`docs/stream.md` §5). While a write-ahead log exists (a
/// process has the stream open, or one was killed), SQLite reads through it and its index,
/// which exist: a read-only connection creates nothing. Without one, the file holds every
/// step; it is read as an immutable file (no lock, no companion created), and the read
/// stands only if no log appeared and the file is unchanged afterwards (a push that ran
/// meanwhile changed it: read again).
///
/// # Errors
/// SQLite's or `read`'s; [`StreamError::Busy`] when pushes changed the file during every try.
fn snapshot<T>(path: &Path, mut read: impl FnMut(&Transaction<'_>) -> Result<T>) -> Result<T> {
    let sql = |e| sqlite_error(path, e);
    let log = companion(path, "-wal");
    for _ in 0..SNAPSHOT_TRIES {
        if log.exists() {
            let mut conn = Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(sql)?;
            conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
            let tx = conn.transaction().map_err(sql)?;
            return read(&tx);
        }
        let before: Stamp = stamp(path)?;
        let out = {
            let mut conn = Connection::open_with_flags(
                immutable_uri(path)?,
                OpenFlags::SQLITE_OPEN_READ_ONLY
                    | OpenFlags::SQLITE_OPEN_URI
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(sql)?;
            let tx = conn.transaction().map_err(sql)?;
            read(&tx)
        };
        if !log.exists() && stamp(path)? == before {
            return out;
        }
    }
    Err(StreamError::Busy { path: path.to_path_buf(), seconds: 0 })
}

/// A noise source that draws nothing (always 0), as integer-valued as the stream's sampler:
/// the dry run of step 1 at creation ([`check_steps`]).
struct Dry(bool);

impl NoiseSource for Dry {
    fn laplace(&mut self, _: f64) -> tpl_mechanisms::Result<f64> {
        Ok(0.0)
    }

    fn integer_valued(&self) -> bool {
        self.0
    }
}

/// Refuses parameters under which a step could never be released (`tpl release` refuses
/// them too, before its first draw). Every built-in scheme publishes step 1 with one draw
/// whose budget the parameters fix, whatever the counts, and a first step has nothing to
/// repeat: so a dry run of step 1 (one cell, no noise drawn) meets exactly the checks a push
/// meets — the sampler's largest noise scale Δ/ε_1 and, with α, the leakage of that budget.
/// From step 2 on, the draws a step cannot skip are the dissimilarity test of `bd`, `ba`
/// and `pba` (the same share s = ε/(2w) at every step: the dry run of step 2 draws it) and
/// each budget of a plan (checked one by one); a publication whose scale the sampler cannot
/// reach is skipped by the scheme itself, before its test.
///
/// # Errors
/// [`StreamError::Config`] naming the parameters at fault.
fn check_steps(config: &StreamConfig) -> Result<()> {
    let integer = config.sampler.from_os_rng().integer_valued();
    let infeasible = |t: usize, e: &dyn std::fmt::Display| {
        StreamError::Config(ConfigError::StepEpsilon {
            step: t,
            epsilon: config.epsilon,
            window: config.window,
            sensitivity: config.sensitivity,
            reason: e.to_string(),
        })
    };
    let mut state = State::new(config, Box::new(Dry(integer)))?;
    for t in 1..=2 {
        state.guard.borrow_mut().begin();
        let spent = match state.scheme.step(&[0.0]) {
            Ok(o) => o.spent.total(),
            Err(e) => {
                let refused = state.guard.borrow().refused().map(str::to_string);
                return Err(match (refused, config.alpha) {
                    // A later step the stream's checks refuse is recorded as a repeat.
                    (Some(_), _) if t > 1 => break,
                    (Some(reason), Some(alpha)) => {
                        StreamError::Config(ConfigError::FirstStepAlpha { alpha, reason })
                    }
                    _ => infeasible(t, &e),
                });
            }
        };
        state.guard.borrow_mut().record(spent).map_err(|e| infeasible(t, &e))?;
    }
    let sampler = tpl_mechanisms::LaplaceMechanism::new(Dry(integer));
    for (i, &b) in config.budgets.iter().enumerate().filter(|&(_, &b)| b > 0.0) {
        sampler.check_budget(config.sensitivity, b).map_err(|e| infeasible(i + 1, &e))?;
    }
    Ok(())
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
        take(state, path, t, key, &outcome)?;
    }
    Ok(())
}

/// Takes recorded step `t` (key `key`) into `state` as the scheme would have stepped it,
/// checking that it is one the stream could have produced next: the next step number, a
/// greater key, a record the scheme accepts ([`StreamScheme::restore`]), and the window it
/// ends within ε.
fn take(state: &mut State, path: &Path, t: i64, key: i64, outcome: &StepOutcome) -> Result<()> {
    let corrupt = |reason: String| StreamError::Corrupt { path: path.to_path_buf(), reason };
    let expected = state.scheme.steps() + 1;
    if t != expected as i64 {
        return Err(corrupt(format!("step {expected} is missing (found step {t})")));
    }
    if state.last_key.is_some_and(|k| key <= k) {
        return Err(corrupt(format!("step {t}: key {key} does not increase")));
    }
    state.scheme.restore(outcome).map_err(|e| corrupt(e.to_string()))?;
    let total = outcome.spent.total();
    let window = state.guard.borrow_mut().record(total).map_err(|e| corrupt(format!("step {t}: {e}")))?;
    state.spend.push(total);
    if !within(window, state.guard.borrow().epsilon()) {
        return Err(corrupt(format!("step {t}: a window spends {window}, over epsilon")));
    }
    state.last_key = Some(key);
    if outcome.published {
        state.last_release.clone_from(&outcome.release);
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
