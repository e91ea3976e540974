//! The durable stream: open, push one step per transaction, read back
//! ([`docs/stream.md`](tpl_core::guide::stream)).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};
use tpl_alloc::{GuaranteedAudit, Spending, guaranteed_audit};
use tpl_core::Correlation;
use tpl_mechanisms::{
    Mechanism, MechanismBuilder, NoiseSource, PrivacyGuarantee, SchemeBuilder, StepBudget, StepOutcome,
    StreamScheme, WindowLedger, effective_spending,
};
use tpl_postprocess::{Estimates, Estimator};

use crate::building::Building;
use crate::config::{Sampler, StreamConfig, build_mechanism, build_scheme};
use crate::error::{ConfigError, Result, StreamError};
use crate::guard::{Enforced, Guard, SharedGuard, lock, within};
use crate::key::{StreamKey, rotation_file};
use crate::options::{NoiseMaker, Plugins, StreamOptions};
use crate::store::estimates::{self, StepEstimate};
use crate::store::steps::{
    self, AUDIT_TABLE, StoredRow, each_row, keep_audit, kept_audit, read_rows, read_step,
};
use crate::store::{
    ChainedRow, EstimatesDigest, FORMAT_VERSION, Link, RootExtras, Stamp, Stored, chain_head, chain_next,
    check_header, companion, decode_release, encode_release, hex, immutable_uri, initialise, matrix_texts,
    read_config, read_only, sealed_table, sqlite_error, stamp, write_setup,
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
    /// The step's stored causal estimate, for a replayed step of a stream that stores
    /// estimates ([`crate::StreamConfig::estimation`]); a new step's is made by
    /// [`DurableStream::update_estimates`].
    pub estimate: Option<StepEstimate>,
}

/// Where the stream stands: the data of `tpl stream status`.
#[derive(Debug, Clone)]
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
    /// The file's format version ([`crate::FORMAT_VERSION`], or 1 for a stream not yet
    /// upgraded by [`DurableStream::rekey`]).
    pub format_version: i64,
    /// The last link of the history's hash chain, in hex
    /// ([`docs/stream.md`](tpl_core::guide::stream) §6): recorded outside the file, it pins every
    /// step so far. `None` before the first step or for format 1.
    pub chain_head: Option<String>,
    /// The adversary's correlation as the stream read it (its kept loss functions), for
    /// [`Status::guaranteed`]: a function of `config`.
    correlation: Option<Box<Correlation>>,
}

/// Two statuses are equal when their data are; the correlation they carry follows from
/// their parameters.
impl PartialEq for Status {
    fn eq(&self, other: &Self) -> bool {
        self.config == other.config
            && self.budgets == other.budgets
            && self.published == other.published
            && self.refused == other.refused
            && self.last_key == other.last_key
            && self.max_window_spend == other.max_window_spend
            && self.realized == other.realized
            && self.format_version == other.format_version
            && self.chain_head == other.chain_head
    }
}

impl Status {
    /// The guaranteed leakage of the stream's scheme over its steps so far, for every run it
    /// could have produced ([`docs/model.md`](tpl_core::guide::model) §9): max TPL and the largest
    /// leakage of a window of min(w, T) steps, from the stored parameters alone (nothing is drawn).
    /// The same audit `tpl compare` reports for a scheme. `None` without matrices or before the
    /// first step.
    ///
    /// # Errors
    /// [`StreamError::Config`] for stored parameters the scheme refuses;
    /// [`StreamError::Alloc`] when the audit overflows.
    pub fn guaranteed(&self) -> Result<Option<GuaranteedAudit>> {
        self.guaranteed_with(None)
    }

    /// [`Status::guaranteed`] of a stream of a custom scheme, rebuilt by `scheme`.
    ///
    /// # Errors
    /// As [`Status::guaranteed`]; [`StreamError::NeedsScheme`] for a custom scheme
    /// without its builder.
    pub fn guaranteed_with(&self, scheme: Option<&dyn SchemeBuilder>) -> Result<Option<GuaranteedAudit>> {
        let c = &self.config;
        let steps = self.budgets.len();
        let Some(corr) = self.correlation.as_ref().filter(|_| steps > 0) else {
            return Ok(None);
        };
        // The scheme only states its caps here; its mechanism never draws.
        let scheme = build_scheme(c, tpl_mechanisms::Laplace.build(c.sampler.from_os_rng()), scheme)?;
        let s = effective_spending(scheme.as_ref(), steps);
        let spending = Spending::from_caps(&s.caps, s.fixed, s.window_limit);
        Ok(Some(guaranteed_audit(corr, spending, Some(c.window.min(steps)))?))
    }
}

/// A durable stream: one SQLite file holding the parameters and every step
/// ([`docs/stream.md`](tpl_core::guide::stream)). Each [`DurableStream::push`] of a row is one
/// transaction; a release is returned only after its step is committed. Noise is drawn from the
/// operating system at every push: no generator state is stored.
pub struct DurableStream {
    path: PathBuf,
    /// The read-write connection; `None` when this process cannot write the stream (the
    /// file, or its folder, which must hold the write-ahead log): then every read is a fresh
    /// read-only snapshot ([`snapshot`]) and a push is refused, for the reason `read_only`.
    conn: Option<Connection>,
    read_only: String,
    /// The parameters, the format version, the chain's root and the key's identifier, as stored.
    stored: Stored,
    /// The key file, read at the first push ([`key_for`]).
    key_path: PathBuf,
    key: Option<StreamKey>,
    noise: NoiseMaker,
    /// What rebuilds a custom scheme or mechanism ([`StreamOptions`]).
    plugins: Plugins,
    state: State,
}

/// The scheme and the guard as of the recorded steps this handle has read.
struct State {
    scheme: Box<dyn StreamScheme + Send>,
    /// Totals ε_t of the last steps, windows of w (for reports; the guard checks the
    /// promise's).
    spend: WindowLedger,
    /// The largest window sum of `spend` ending at a step this handle recorded.
    pushed_max: f64,
    guard: SharedGuard,
    last_key: Option<i64>,
    last_release: Vec<f64>,
    /// The chain's link of the last step read or recorded (the root before step 1).
    last_link: Link,
}

impl State {
    fn new(stored: &Stored, noise: Box<dyn NoiseSource + Send>, plugins: &Plugins) -> Result<Self> {
        let config = &stored.config;
        let guard = Arc::new(Mutex::new(Guard::new(
            config.epsilon,
            config.sensitivity,
            stored.correlation(),
            config.alpha,
            config.window,
        )?));
        let mechanism = build_mechanism(config, noise, plugins.mechanism())?;
        let scheme =
            build_scheme(config, Box::new(Enforced::new(mechanism, Arc::clone(&guard))), plugins.scheme())?;
        // The windows of the scheme's own promise: w steps, or one for event-level `laplace`.
        lock(&guard).set_window(match scheme.guarantee() {
            PrivacyGuarantee::WEvent { window, .. } => window,
            PrivacyGuarantee::EventLevel { .. } => 1,
        });
        Ok(Self {
            scheme,
            spend: WindowLedger::new(config.window),
            pushed_max: 0.0,
            guard,
            last_key: None,
            last_release: Vec::new(),
            last_link: stored.root,
        })
    }
}

impl DurableStream {
    /// Creates the stream file at `path` with `config`, and its key at
    /// [`default_key_path`](crate::default_key_path) (`<path>.key`); refuses a path or key file that exists: the
    /// shortcut for [`StreamOptions::create`] with no options.
    ///
    /// # Errors
    /// As [`StreamOptions::create`].
    pub fn create(path: &Path, config: &StreamConfig) -> Result<()> {
        StreamOptions::new().create(path, config)
    }

    /// [`StreamOptions::create`].
    pub(crate) fn create_inner(
        path: &Path,
        config: &StreamConfig,
        key: &Path,
        plugins: &Plugins,
    ) -> Result<()> {
        config.check_with(plugins.scheme(), plugins.mechanism())?;
        // The loss functions of the matrices: computed here once, kept in the file.
        let correlation = config.known_correlation();
        // Dry-runs the first steps with the scheme (a custom one without its builder is refused);
        // the loss functions it computes are the correlation's, shared by its clones.
        check_steps(config, plugins)?;
        match std::fs::symlink_metadata(path) {
            Ok(_) => return Err(StreamError::Exists { path: path.to_path_buf() }),
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                return Err(StreamError::BadPath { path: path.to_path_buf(), reason: e.to_string() });
            }
            Err(_) => {}
        }
        let folder = path.parent().filter(|f| !f.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !folder.is_dir() {
            return Err(StreamError::NoFolder { path: path.to_path_buf(), folder: folder.to_path_buf() });
        }
        let secret = StreamKey::generate(key)?;
        let building = Building::new(path)?;
        let made = Connection::open_with_flags(building.path(), OpenFlags::SQLITE_OPEN_READ_WRITE).and_then(
            |mut conn| {
                initialise(&mut conn, config, &secret.id(), correlation.as_ref())?;
                conn.close().map_err(|(_, e)| e)
            },
        );
        made.map_err(|e| sqlite_error(path, e))?;
        secret.write_new(key)?;
        building.publish().inspect_err(|_| {
            let _ = std::fs::remove_file(key);
        })
    }

    /// Opens an existing stream for pushing and reading, its key at [`default_key_path`](crate::default_key_path);
    /// every push draws from a fresh OS-seeded sampler: the shortcut for
    /// [`StreamOptions::open`] with no options. A process that cannot write the stream (the
    /// file, or its folder, where SQLite keeps the write-ahead log) gets a read-only handle:
    /// its reads write nothing beside the file ([`docs/stream.md`](tpl_core::guide::stream) §5)
    /// and its pushes are refused.
    ///
    /// # Errors
    /// As [`StreamOptions::open`].
    pub fn open(path: &Path) -> Result<Self> {
        StreamOptions::new().open(path)
    }

    /// [`StreamOptions::open`].
    pub(crate) fn open_inner(
        path: &Path,
        key_path: &Path,
        noise: Option<NoiseMaker>,
        plugins: Plugins,
    ) -> Result<Self> {
        check_header(path)?;
        let sql = |e| sqlite_error(path, e);
        // Opening the file for writing changes nothing in it; a process that cannot must not
        // let SQLite fall back to a read-only connection that leaves its own companions.
        let writable = std::fs::OpenOptions::new().read(true).write(true).open(path).map(drop);
        let (conn, stored, read_only) = match writable {
            Ok(()) => {
                let conn = Connection::open_with_flags(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .map_err(sql)?;
                conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
                match read_config(&conn, path) {
                    Ok(stored) => {
                        steps::writing(&conn, path)?;
                        (Some(conn), stored, String::new())
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
        let sampler = stored.config.sampler;
        let noise = noise.unwrap_or_else(|| Box::new(move || sampler.from_os_rng()));
        let state = State::new(&stored, noise(), &plugins)?;
        Ok(Self {
            path: path.to_path_buf(),
            conn,
            read_only,
            stored,
            key_path: key_path.to_path_buf(),
            key: None,
            noise,
            plugins,
            state,
        })
    }

    /// A scheme and guard as before any step, for reading the recorded steps into.
    fn fresh_state(&self) -> Result<State> {
        State::new(&self.stored, (self.noise)(), &self.plugins)
    }

    /// Runs `read` in one read transaction: on the read-write connection, or on a fresh
    /// read-only snapshot when this process cannot write the stream.
    fn read<T>(&mut self, read: impl FnMut(&Transaction<'_>) -> Result<T>) -> Result<T> {
        read_with(&mut self.conn, &self.path, read)
    }

    /// The stream's parameters.
    pub fn config(&self) -> &StreamConfig {
        &self.stored.config
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
        if self.conn.is_none() {
            return Err(read_only(&path, self.read_only.clone()));
        }
        if self.stored.version < 2 {
            return Err(StreamError::Unkeyed { path });
        }
        if let Some(key) = key.filter(|&k| k < 0) {
            return Err(StreamError::NegativeKey { key });
        }
        let Some(conn) = &self.conn else {
            return Err(read_only(&path, self.read_only.clone()));
        };
        let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(sql)?;
        // A rotation (or upgrade) committed since this handle read the stream: read it again.
        refreshed(&tx, &path, &mut self.stored, &mut self.state, &self.noise, &self.plugins)?;
        let secret = key_for(&mut self.key, &self.key_path, &path, self.stored.key_id.as_deref())?;
        let digest = secret.digest(counts);
        if let Err(e) = sync(&tx, &path, &self.stored, &mut self.state, secret) {
            self.state = self.fresh_state()?;
            return Err(e);
        }
        let states = self.stored.config.correlation.states();
        if let Some(states) = states.filter(|&n| n != counts.len()) {
            return Err(StreamError::Width {
                step: self.state.scheme.steps() + 1,
                cells: counts.len(),
                states,
            });
        }
        if let (Some(k), Some(last)) = (key, self.state.last_key)
            && k <= last
        {
            return match steps::digest_at_key(&tx, &path, k)? {
                Some((t, None)) => Err(StreamError::Unverifiable { key: k, step: t as usize }),
                Some((t, Some(d))) if d == digest => {
                    let record = read_step(&tx, &path, t as usize)?;
                    let estimate = estimates::read_one(&tx, &path, &self.stored.config, t as usize)?;
                    // What the read kept to save the next process work (the leakage audit) stays.
                    tx.commit().map_err(sql)?;
                    record.map(|record| Pushed { record, replayed: true, estimate }).ok_or_else(|| {
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
                Some(last) => last.checked_add(1).ok_or(StreamError::KeysExhausted { last })?,
                None => 1,
            },
        };
        let t = self.state.scheme.steps() + 1;
        lock(&self.state.guard).begin();
        let stepped = self.state.scheme.step(counts);
        let refused = lock(&self.state.guard).refused().map(str::to_string);
        let drawn = lock(&self.state.guard).spent();
        let (outcome, refused) = match (stepped, refused) {
            (Ok(o), refused) => (o, refused),
            (Err(_), Some(reason)) if t == 1 => {
                self.state = self.fresh_state()?;
                return Err(StreamError::FirstRefused { reason });
            }
            // Nothing was drawn (every check comes before the first draw), or step 1, which
            // has no release to repeat (its one draw fails after the fact only when the
            // noise itself is out of range, independent of the counts): nothing is recorded.
            (Err(e), None) if t == 1 || drawn == 0.0 => {
                self.state = self.fresh_state()?;
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
                    self.state = self.fresh_state()?;
                    return Err(StreamError::Step { step: t, source: e });
                }
                (o, Some(reason))
            }
        };
        let result =
            commit(&mut self.state, &self.stored.config, &path, tx, (t, key, &digest), outcome, refused);
        if result.is_err() {
            // The in-memory state ran ahead of the file: rebuild it at the next push.
            self.state = self.fresh_state()?;
        }
        result
    }

    /// Gives the stream at `path` a new key, written to the file `key` (mode 0600), and
    /// erases every counts digest made with the old one
    /// ([`docs/stream.md`](tpl_core::guide::stream) §2): after a rotation nobody — not even a
    /// holder of the old key — can test a guess of the counts of an earlier step against the file,
    /// and a retry of an earlier key is refused ([`StreamError::Unverifiable`]) instead of
    /// replayed. A stream of an older format is upgraded to the current one on the way
    /// ([`docs/stream.md`](tpl_core::guide::stream) §1): its history is checked, chained and its
    /// digests erased. The erased digests are overwritten in
    /// place, the file is rebuilt (`VACUUM`) and its write-ahead log emptied. The new key is
    /// written to `<key>.new` first and renamed over the old one after the stream took it; an
    /// interruption in between is completed by the next push or rotation (one killed after its
    /// commit but before the rebuild can leave erased digests in free pages or the log until
    /// the next rotation: run it again).
    ///
    /// # Errors
    /// A file that is not a well-formed stream, one this process cannot write,
    /// [`StreamError::Busy`] while another process reads or writes it, or a key file that
    /// cannot be written.
    pub fn rekey(path: &Path, key: &Path) -> Result<Rekeyed> {
        check_header(path)?;
        let sql = |e| sqlite_error(path, e);
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| read_only(path, e.to_string()))?;
        let mut conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE).map_err(sql)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        steps::erasing(&conn, path)?;
        let stored = read_config(&conn, path)?;
        let pending = rotation_file(key);
        if let Ok(taken) = StreamKey::read(&pending) {
            if Some(taken.id()) == stored.key_id {
                // An earlier rotation was interrupted after the stream took its key.
                std::fs::rename(&pending, key)
                    .map_err(|e| StreamError::Key { path: pending.clone(), reason: e.to_string() })?;
            } else {
                let _ = std::fs::remove_file(&pending);
            }
        }
        let secret = StreamKey::generate(key)?;
        secret.write_new(&pending)?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql)?;
        // Read again inside the lock: a push or rotation may have committed since.
        let stored = read_config(&tx, path)?;
        let upgraded = stored.version < FORMAT_VERSION;
        let dropped = if upgraded { upgrade(&tx, path, &stored)? } else { 0 };
        let erased = dropped + steps::rotate_key(&tx, path, &secret.id())?;
        tx.commit().map_err(sql)?;
        steps::compact(&conn, path)?;
        drop(conn);
        match std::fs::rename(&pending, key) {
            Ok(()) => {}
            // A push that saw the new key first completed the rotation.
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && StreamKey::read(key).is_ok_and(|k| k.id() == secret.id()) => {}
            Err(e) => return Err(StreamError::Key { path: pending.clone(), reason: e.to_string() }),
        }
        Ok(Rekeyed { erased, upgraded, from: stored.version })
    }

    /// Makes every committed step durable against power loss: an fsync of the write-ahead
    /// log, where commits go (a checkpoint into the database file is synced by SQLite
    /// itself). Each step's commit already survives the process being killed; call this
    /// before showing releases to anyone, so that nothing shown can be lost with the
    /// machine's power and drawn again ([`docs/stream.md`](tpl_core::guide::stream) §4).
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

    /// Makes and stores the causal estimate of every recorded step that has none yet, in one
    /// pass of the stream's filter over its releases (x̂_t from r_1..r_t only:
    /// [`crate::StreamConfig::estimation`]), and returns them; nothing for a stream that stores
    /// no estimates. Call it after the pushes of a batch: one pass, O(T) steps of the filter,
    /// however many steps the batch added. A step the filter cannot estimate stores why
    /// ([`StepEstimate::estimate`]); its release stands.
    ///
    /// # Errors
    /// SQLite's, a damaged release, or a stream this process cannot write.
    pub fn update_estimates(&mut self) -> Result<Vec<StepEstimate>> {
        let Some(e) = self.stored.config.estimation else { return Ok(Vec::new()) };
        let path = self.path.clone();
        let Some(conn) = &self.conn else {
            return Err(read_only(&path, self.read_only.clone()));
        };
        let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
            .map_err(|e| sqlite_error(&path, e))?;
        refreshed(&tx, &path, &mut self.stored, &mut self.state, &self.noise, &self.plugins)?;
        let secret = key_for(&mut self.key, &self.key_path, &path, self.stored.key_id.as_deref())?;
        let made = estimates::store_missing(&tx, &path, &self.stored.config, &e, secret)?;
        tx.commit().map_err(|e| sqlite_error(&path, e))?;
        Ok(made)
    }

    /// The causal estimate stored with every step, in order (empty when the stream stores
    /// none): x̂_t from the releases r_1..r_t only ([`crate::StreamConfig::estimation`]).
    ///
    /// # Errors
    /// SQLite's, or a damaged estimate.
    pub fn estimates(&mut self) -> Result<Vec<StepEstimate>> {
        self.estimates_with(Some)
    }

    /// [`DurableStream::estimates`], keeping of each step's estimate what `keep` returns: the
    /// rows are read one at a time, so a caller that keeps a few cells (or a sum) of each
    /// needs memory for those only.
    ///
    /// # Errors
    /// As [`DurableStream::estimates`].
    pub fn estimates_with<K>(&mut self, mut keep: impl FnMut(StepEstimate) -> Option<K>) -> Result<Vec<K>> {
        let Self { conn, path, stored, .. } = self;
        read_with(conn, path, |tx| estimates::read_each(tx, path, &stored.config, None, &mut keep, None))
    }

    /// The releases recorded so far estimated again as a whole by `estimator` over a
    /// population `total` ([`docs/stream.md`](tpl_core::guide::stream) §9): with `smooth` or
    /// `kalman`, each step's estimate also uses the releases after it (more accurate than the
    /// stored causal estimates, and different for a past step each time the stream grows).
    /// Post-processing: reads the releases and the public parameters only. The estimates come
    /// with their standard errors, and so with model intervals
    /// ([`tpl_postprocess::Estimates::intervals`]); none for a stream without releases.
    ///
    /// # Errors
    /// [`StreamError::Estimate`] when the estimator refuses the releases or the parameters (a
    /// map estimator without a forward matrix); SQLite's.
    pub fn reestimated(&mut self, estimator: Estimator, total: u64) -> Result<Estimates> {
        let (releases, fresh) = self.recorded_releases()?;
        if releases.is_empty() {
            return Ok(Estimates {
                estimator,
                estimates: Vec::new(),
                warnings: Vec::new(),
                std_errors: Vec::new(),
            });
        }
        estimates::estimate(&self.stored.config, (estimator, total), &releases, &fresh)
            .map_err(|source| StreamError::Estimate { estimator: estimator.name(), source })
    }

    /// The releases r_1..r_T as the estimators take them — a repeat holds the release it
    /// repeats — with the fresh publication budget of each step (0 for a repeat, which
    /// carries no new information).
    ///
    /// # Errors
    /// SQLite's, or a damaged release.
    pub fn recorded_releases(&mut self) -> Result<(Vec<Vec<f64>>, Vec<f64>)> {
        let path = self.path.clone();
        self.read(|tx| estimates::recorded_releases(tx, &path))
    }

    /// The publication budget ε_pub of the last step before step `t` that published afresh
    /// (what a repeat at t repeats), read from the file in one query; `None` when none did.
    ///
    /// # Errors
    /// SQLite's.
    pub fn publication_before(&mut self, t: usize) -> Result<Option<f64>> {
        let path = self.path.clone();
        self.read(|tx| steps::publication_before(tx, &path, t))
    }

    /// Every recorded step, in order, each checked (as [`DurableStream::snapshot`]).
    ///
    /// # Errors
    /// As [`DurableStream::snapshot`].
    pub fn steps(&mut self) -> Result<Vec<StepRecord>> {
        self.snapshot().map(|(_, steps)| steps)
    }

    /// Where the stream stands (as [`DurableStream::snapshot`]): budgets, publications, the largest
    /// window spend and, with matrices, the realised leakage of the budgets spent. Every record is
    /// checked; none is kept beyond its check, so the memory is that of the status, not of the
    /// releases.
    ///
    /// # Errors
    /// As [`DurableStream::snapshot`].
    pub fn status(&mut self) -> Result<Status> {
        self.snapshot_with(|_| None::<StepRecord>).map(|(status, _)| status)
    }

    /// Where the stream stands and every recorded step, from one read transaction (a
    /// consistent snapshot while pushes run), every record checked in O(T) as a push checks
    /// those it reads ([`docs/stream.md`](tpl_core::guide::stream) §6): steps 1..T without a gap,
    /// keys increasing, each step one the scheme could have produced given the ones before (a first
    /// step that publishes, a repeat equal to the last release, budgets finite, ≥ 0 and within
    /// [`tpl_mechanisms::StreamScheme::max_spend`], no step past a plan), every window of the
    /// promise within ε (of w steps; one for the event-level `laplace`), and, with matrices, the
    /// leakage audited again from the stored budgets (the realised leakage reported is that audit,
    /// not a stored number), within α when the stream has one.
    ///
    /// # Errors
    /// [`StreamError::Corrupt`] naming the first record at fault, SQLite's, or an audit that
    /// fails.
    pub fn snapshot(&mut self) -> Result<(Status, Vec<StepRecord>)> {
        self.snapshot_with(Some)
    }

    /// [`DurableStream::snapshot`], keeping of each checked step what `keep` returns: the rows
    /// are read and checked one at a time, so a caller that keeps a few cells of each release
    /// (or nothing, as [`DurableStream::status`]) needs memory for those only. When a read-only
    /// snapshot is read again (a push changed the file meanwhile), `keep` sees the steps again
    /// from step 1.
    ///
    /// # Errors
    /// As [`DurableStream::snapshot`].
    pub fn snapshot_with<K>(
        &mut self,
        mut keep: impl FnMut(StepRecord) -> Option<K>,
    ) -> Result<(Status, Vec<K>)> {
        let Self { conn, path, stored, noise, plugins, .. } = self;
        let (state, summary, kept) = read_with(conn, path, |tx| {
            // A handle opened before a rotation or an upgrade reads the stream as it is now.
            refresh(tx, path, stored)?;
            let mut state = State::new(stored, noise(), plugins)?;
            let (mut summary, mut kept) = (Summary::default(), Vec::new());
            each_row(tx, path, stored.version, 0, |row| {
                let step = take(&mut state, path, stored, row)?;
                summary.add(&step);
                kept.extend(keep(step));
                Ok(())
            })?;
            // The stored estimates are checked too, and the chain head covers them.
            let mut digest = EstimatesDigest::default();
            estimates::read_each(tx, path, &stored.config, None, &mut |_| None::<()>, Some(&mut digest))?;
            summary.estimates = Some(digest.finish());
            Ok((state, summary, kept))
        })?;
        // Every step's budget reaches the audit here, in one pass.
        let realized = lock(&state.guard).leakage().map_err(|e| StreamError::Corrupt {
            path: path.clone(),
            reason: format!("the audit of the leakage of the budgets spent: {e}"),
        })?;
        if let (Some((tpl, _)), Some(alpha)) = (realized, stored.config.alpha)
            && !within(tpl, alpha)
        {
            return Err(StreamError::Corrupt {
                path: path.clone(),
                reason: format!("the budgets spent take the temporal leakage to {tpl}, over alpha = {alpha}"),
            });
        }
        let status = Status {
            config: stored.config.clone(),
            budgets: summary.budgets,
            published: summary.published,
            refused: summary.refused,
            last_key: summary.last_key,
            max_window_spend: state.spend.max_window_budget(),
            realized,
            format_version: stored.version,
            chain_head: match (stored.version, summary.last_key, summary.estimates) {
                (3.., Some(_), Some(estimates)) => Some(hex(&chain_head(&state.last_link, &estimates))),
                (2.., Some(_), _) => Some(hex(&state.last_link)),
                _ => None,
            },
            correlation: stored.correlation().map(Box::new),
        };
        Ok((status, kept))
    }
}

/// The key in `slot` when it is the one whose identifier the stream at `path` stores
/// (`expected`), else the key file `key_path` read and checked against it. A rotation
/// interrupted after the stream took the new key (`<key>.new` beside the key file holds it) is
/// completed here.
///
/// # Errors
/// [`StreamError::Key`]: a missing or unreadable key file, or another stream's key.
fn key_for<'a>(
    slot: &'a mut Option<StreamKey>,
    key_path: &Path,
    path: &Path,
    expected: Option<&str>,
) -> Result<&'a StreamKey> {
    let key = match slot.take() {
        Some(key) if expected == Some(key.id().as_str()) => key,
        _ => {
            let mut key = StreamKey::read(key_path);
            if !key.as_ref().is_ok_and(|k| expected == Some(k.id().as_str())) {
                let pending = rotation_file(key_path);
                if let Some(new) =
                    StreamKey::read(&pending).ok().filter(|k| expected == Some(k.id().as_str()))
                {
                    match std::fs::rename(&pending, key_path) {
                        // `rekey` itself moved it meanwhile: the key file holds it now.
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                            return Err(StreamError::Key { path: pending.clone(), reason: e.to_string() });
                        }
                        _ => key = Ok(new),
                    }
                }
            }
            let key = key?;
            if expected != Some(key.id().as_str()) {
                return Err(StreamError::Key {
                    path: key_path.to_path_buf(),
                    reason: format!(
                        "the key of another stream (its identifier is not the one {} stores)",
                        path.display()
                    ),
                });
            }
            key
        }
    };
    Ok(slot.insert(key))
}

/// Brings `stored` up to the stream as read in `tx` when a rotation or an upgrade (`rekey`,
/// by any process) committed since it was read: the key's identifier and the format version
/// are read again in every transaction that writes or checks, so that no digest is made under
/// a retired key and no step is linked to a chain an upgrade rebuilt
/// ([`docs/stream.md`](tpl_core::guide::stream) §2). Returns whether it changed (the caller
/// then rebuilds what it derived from it).
///
/// # Errors
/// As [`read_config`].
fn refresh(tx: &Transaction<'_>, path: &Path, stored: &mut Stored) -> Result<bool> {
    let (id, version) = steps::key_id_and_version(tx, path)?;
    if id == stored.key_id && version == stored.version {
        return Ok(false);
    }
    *stored = read_config(tx, path)?;
    Ok(true)
}

/// [`refresh`] of a handle's `stored` stream, whose scheme and guard (`state`, drawing from
/// `noise()`, a custom scheme or mechanism rebuilt by `plugins`) are made again when it changed.
fn refreshed(
    tx: &Transaction<'_>,
    path: &Path,
    stored: &mut Stored,
    state: &mut State,
    noise: &NoiseMaker,
    plugins: &Plugins,
) -> Result<()> {
    if refresh(tx, path, stored)? {
        *state = State::new(stored, noise(), plugins)?;
    }
    Ok(())
}

/// [`DurableStream::read`] on the connection `conn` (if any) of the stream at `path`.
fn read_with<T>(
    conn: &mut Option<Connection>,
    path: &Path,
    mut read: impl FnMut(&Transaction<'_>) -> Result<T>,
) -> Result<T> {
    match conn {
        Some(conn) => {
            let tx = conn.transaction().map_err(|e| sqlite_error(path, e))?;
            read(&tx)
        }
        None => snapshot(path, read),
    }
}

/// What [`DurableStream::snapshot_with`] gathers of every step for [`Status`].
#[derive(Default)]
struct Summary {
    budgets: Vec<f64>,
    published: Vec<bool>,
    refused: Vec<usize>,
    last_key: Option<i64>,
    /// The digest of the stored estimate rows ([`EstimatesDigest`]).
    estimates: Option<Link>,
}

impl Summary {
    fn add(&mut self, step: &StepRecord) {
        self.budgets.push(step.spent.total());
        self.published.push(step.published);
        if step.refused.is_some() {
            self.refused.push(step.t);
        }
        self.last_key = Some(step.key);
    }
}

/// Recomputes every link of the history's chain of the stream at `path` from its stored
/// parameters and rows, as a forger who knows the format would after editing the file: the
/// tests use it to show that the checks of every record still catch what such an edit
/// breaks ([`docs/stream.md`](tpl_core::guide::stream) §6). Not for streams in use.
///
/// # Errors
/// SQLite's, or a file that is not a stream of format 2.
#[cfg(feature = "test-util")]
pub fn rechain(path: &Path) -> Result<()> {
    let sql = |e| sqlite_error(path, e);
    let mut conn = Connection::open(path).map_err(sql)?;
    let stored = read_config(&conn, path)?;
    let tx = conn.transaction().map_err(sql)?;
    let mut link = stored.root;
    for row in read_rows(&tx, path, stored.version, 0)? {
        link = row.link_after(&link);
        steps::set_link(&tx, path, row.t, &link)?;
    }
    tx.commit().map_err(sql)
}

/// What [`DurableStream::rekey`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rekeyed {
    /// How many steps' counts digests were erased.
    pub erased: usize,
    /// Whether the file was upgraded from an older format ([`Rekeyed::from`]).
    pub upgraded: bool,
    /// The file's format version before the rotation.
    pub from: i64,
}

/// Rewrites a stream of an older format as the current one inside `tx`: the loss functions of
/// its matrices computed again and kept (an older root did not cover the kept ones), every row
/// checked as a reader checks it (its old chain included), then chained from the new root — a
/// format-1 file's steps copied without their unkeyed digests into a steps table of the
/// current format. Returns how many digests were dropped on the way (format 1's, all of them).
fn upgrade(tx: &Transaction<'_>, path: &Path, stored: &Stored) -> Result<usize> {
    let correlation = stored.config.known_correlation();
    let texts = matrix_texts(tx, path)?;
    let setup = write_setup(tx, [texts.0.as_deref(), texts.1.as_deref()], correlation.as_ref())
        .map_err(|e| sqlite_error(path, e))?;
    let extras = RootExtras { setup, ..stored.extras.clone() };
    let root = stored.root_with(FORMAT_VERSION, &extras);
    let rows = read_rows(tx, path, stored.version, 0)?;
    let copied = rows.len();
    let mut state = State::new(stored, stored.config.sampler.from_os_rng(), &Plugins::default())?;
    let copy = stored.version < 2;
    if copy {
        steps::begin_copy(tx, path)?;
    }
    let mut link = root;
    for row in rows {
        link = row.link_after(&link);
        if copy {
            steps::copy_row(tx, path, &row, &link)?;
        } else {
            steps::set_link(tx, path, row.t, &link)?;
        }
        take(&mut state, path, stored, row)?;
    }
    if !copy {
        // Their digests stay, for the rotation to erase.
        return Ok(0);
    }
    steps::replace_with_copy(tx, path)?;
    Ok(copied)
}

/// How many times a reader without write access reads again when a push changed the file
/// during its read.
const SNAPSHOT_TRIES: usize = 5;

/// Runs `read` on a read-only connection that writes nothing beside the file, for a process
/// that cannot write the stream ([`docs/stream.md`](tpl_core::guide::stream) §5). While a
/// write-ahead log exists (a process has the stream open, or one was killed), SQLite reads through
/// it and its index, which exist: a read-only connection creates nothing. Without one, the file
/// holds every step; it is read as an immutable file (no lock, no companion created), and the read
/// stands only if no log appeared and the file is unchanged afterwards (a push that ran meanwhile
/// changed it: read again).
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
fn check_steps(config: &StreamConfig, plugins: &Plugins) -> Result<()> {
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
    let stored = Stored {
        config: config.clone(),
        version: FORMAT_VERSION,
        root: [0; 32],
        shas: [None, None, None],
        extras: RootExtras::default(),
        key_id: None,
    };
    let mut state = State::new(&stored, Box::new(Dry(integer)), plugins)?;
    for t in 1..=2 {
        lock(&state.guard).begin();
        let spent = match state.scheme.step(&[0.0]) {
            Ok(o) => o.spent.total(),
            Err(e) => {
                let refused = lock(&state.guard).refused().map(str::to_string);
                match (refused, config.alpha) {
                    // A later step the stream's checks refuse is recorded as a repeat.
                    (Some(_), _) if t > 1 => break,
                    (Some(reason), Some(alpha)) => {
                        return Err(StreamError::Config(ConfigError::FirstStepAlpha { alpha, reason }));
                    }
                    _ => return Err(infeasible(t, &e)),
                }
            }
        };
        let drawn = lock(&state.guard).spent();
        if spent != drawn {
            let scheme = config.scheme.name().to_owned();
            return Err(StreamError::SchemeSpend { scheme, step: t, reported: spent, drawn });
        }
        lock(&state.guard).record(spent).map_err(|e| infeasible(t, &e))?;
        // Each step's leakage is audited as a push audits it.
        lock(&state.guard).leakage().map_err(|e| infeasible(t, &e))?;
    }
    let sampler = build_mechanism(config, Box::new(Dry(integer)), plugins.mechanism())?;
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
    let spent_by_draws = lock(&state.guard).spent();
    if total != spent_by_draws {
        return Err(StreamError::SchemeSpend {
            scheme: config.scheme.name().to_owned(),
            step: t,
            reported: total,
            drawn: spent_by_draws,
        });
    }
    let window_sum = lock(&state.guard).record(total).map_err(|e| StreamError::Corrupt {
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
    let leakage = lock(&state.guard).leakage().map_err(|e| StreamError::Corrupt {
        path: path.to_path_buf(),
        reason: format!("step {t}: the audit of the leakage: {e}"),
    })?;
    let s = outcome.spent;
    let release = outcome.published.then(|| encode_release(&outcome.release));
    let row = ChainedRow {
        t: t as i64,
        key,
        spent: [s.test, s.publication, s.absorbed],
        published: outcome.published,
        refused: refused.as_deref(),
        release: release.as_deref(),
        leakage: [leakage.map(|l| l.0), leakage.map(|l| l.1)],
    };
    let link = chain_next(&state.last_link, &row);
    steps::insert_step(&tx, path, &row, &digest[..], &link)?;
    tx.commit().map_err(sql)?;
    state.last_link = link;
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
    Ok(Pushed { record, replayed: false, estimate: None })
}

/// Brings `state` up to the last committed step, drawing nothing: restores every step
/// recorded since (by another process, or before this one opened the file) into the scheme
/// and the guard — on a fresh state only the last w − 1 steps, past the rest
/// ([`skip_prefix`]), so that opening a stream of T steps reads O(min(w, T)) releases.
fn sync(
    tx: &Transaction<'_>,
    path: &Path,
    stored: &Stored,
    state: &mut State,
    key: &StreamKey,
) -> Result<()> {
    let done = state.scheme.steps();
    let last = steps::last_step(tx, path)?;
    let last = usize::try_from(last.unwrap_or(0)).unwrap_or(0);
    if last == done {
        return Ok(());
    }
    // A scheme's state is its last release, its last publication and its last `memory` steps
    // (w − 1 for most rules; `None`, a state that depends on every step, restores them all).
    let from = match state.scheme.memory().and_then(|memory| last.checked_sub(memory)) {
        Some(skip) if done == 0 && skip >= 2 => {
            skip_prefix(tx, path, state, skip, key)?;
            skip
        }
        _ => done,
    };
    each_row(tx, path, stored.version, from, |row| take(state, path, stored, row).map(drop))
}

/// Takes a recorded step into `state` as the scheme would have stepped it, checking that it
/// is one the stream could have produced next ([`docs/stream.md`](tpl_core::guide::stream) §6): the
/// next step number, a key ≥ 0 and greater than the last, a digest of 32 bytes (or none, after a
/// rotation), a release of a publication only (integers within ±2^53 for the exact sampler), its
/// chain link (format 2), a record the scheme accepts ([`StreamScheme::restore`]), and the window
/// it ends within ε. Returns the step as a [`StepRecord`].
fn take(state: &mut State, path: &Path, stored: &Stored, row: StoredRow) -> Result<StepRecord> {
    let t = row.t;
    let corrupt = |reason: String| StreamError::Corrupt {
        path: path.to_path_buf(),
        reason: format!("step {t}: {reason}"),
    };
    let expected = state.scheme.steps() + 1;
    if t != expected as i64 {
        return Err(StreamError::Corrupt {
            path: path.to_path_buf(),
            reason: format!("step {expected} is missing (found step {t})"),
        });
    }
    if row.key < 0 || state.last_key.is_some_and(|k| row.key <= k) {
        return Err(corrupt(format!("key {} is negative or does not increase", row.key)));
    }
    if row.digest_len.is_some_and(|n| n != 32) || (stored.version < 2 && row.digest_len.is_none()) {
        return Err(corrupt("its counts digest is not 32 bytes".into()));
    }
    if stored.version >= 2 {
        let link = row.link_after(&state.last_link);
        if row.link.as_deref() != Some(&link[..]) {
            return Err(corrupt(
                "the history's chain breaks here: this step, or the parameters or a step before it, was edited"
                    .into(),
            ));
        }
        state.last_link = link;
    }
    let release = match (row.published, &row.release) {
        (true, Some(bytes)) => {
            decode_release(bytes).ok_or_else(|| corrupt(format!("release of {} bytes", bytes.len())))?
        }
        (false, None) => state.last_release.clone(),
        _ => return Err(corrupt("release stored for a repeat or missing for a publication".into())),
    };
    if row.published && stored.config.sampler == Sampler::Discrete {
        let exact = |v: &f64| v.fract() == 0.0 && v.abs() <= 2.0 * tpl_mechanisms::MAX_EXACT_COUNT;
        if let Some(v) = release.iter().find(|v| !exact(v)) {
            return Err(corrupt(format!("release value {v} is not an integer of the exact sampler")));
        }
    }
    let outcome = StepOutcome { release, published: row.published, spent: row.spent };
    state.scheme.restore(&outcome).map_err(|e| corrupt(e.to_string()))?;
    let total = outcome.spent.total();
    let window = lock(&state.guard).record(total).map_err(|e| corrupt(e.to_string()))?;
    state.spend.push(total);
    if !within(window, lock(&state.guard).epsilon()) {
        return Err(corrupt(format!("a window spends {window}, over epsilon")));
    }
    state.last_key = Some(row.key);
    if outcome.published {
        state.last_release.clone_from(&outcome.release);
    }
    Ok(StepRecord {
        t: t as usize,
        key: row.key,
        published: outcome.published,
        spent: outcome.spent,
        release: outcome.release,
        refused: row.refused,
        max_tpl: row.leakage[0],
        max_window_leakage: row.leakage[1],
    })
}

/// Positions a fresh `state` after recorded steps 1..`skip` without restoring them one by
/// one: the scheme resumes from the last publication among them
/// ([`StreamScheme::resume`]), the key and release carry over, and — with matrices — their
/// budgets reach the leakage audit (a read of three numbers a step, no release).
fn skip_prefix(
    tx: &rusqlite::Transaction<'_>,
    path: &Path,
    state: &mut State,
    skip: usize,
    key: &StreamKey,
) -> Result<()> {
    let corrupt = |reason: String| StreamError::Corrupt { path: path.to_path_buf(), reason };
    if lock(&state.guard).audits() {
        // From the audit kept at an earlier step when it is that of the steps recorded.
        sealed_table(tx, path, "audit_state", AUDIT_TABLE)?;
        let kept = kept_audit(tx, path, skip, key)?;
        let done = match kept {
            Some((t, history)) if lock(&state.guard).restore_audit(&history) => t,
            _ => 0,
        };
        let mut expected = done as i64 + 1;
        steps::each_budget(tx, path, done, skip, |t, test, publication| {
            if t != expected {
                return Err(corrupt(format!("step {expected} is missing (found step {t})")));
            }
            if !(tpl_core::is_budget(test) && tpl_core::is_budget(publication)) {
                return Err(corrupt(format!("step {t}: budgets {test} and {publication}")));
            }
            let total = StepBudget { test, publication, absorbed: 0.0 }.total();
            lock(&state.guard).account(total).map_err(|e| corrupt(e.to_string()))?;
            expected += 1;
            Ok(())
        })?;
        if expected != skip as i64 + 1 {
            return Err(corrupt(format!("step {expected} is missing")));
        }
        if done < skip {
            let history = lock(&state.guard)
                .audit_history()
                .map_err(|e| corrupt(format!("the audit of the leakage of steps 1..{skip}: {e}")))?;
            keep_audit(tx, path, skip, &history.unwrap_or_default(), key)?;
        }
    }
    let (p, spent, bytes) = steps::last_publication(tx, path, skip)?
        .ok_or_else(|| corrupt(format!("no publication among steps 1..{skip}")))?;
    let release = bytes
        .as_deref()
        .and_then(decode_release)
        .ok_or_else(|| corrupt(format!("step {p}: the release of a publication is missing or damaged")))?;
    let outcome = StepOutcome { release, published: true, spent };
    state.scheme.resume(skip, (p as usize, &outcome)).map_err(|e| corrupt(e.to_string()))?;
    let (key, link) =
        steps::key_and_link(tx, path, skip)?.ok_or_else(|| corrupt(format!("step {skip} is missing")))?;
    state.last_link =
        link.try_into().map_err(|_| corrupt(format!("step {skip}: its chain link is not 32 bytes")))?;
    state.last_key = Some(key);
    state.last_release = outcome.release;
    Ok(())
}
