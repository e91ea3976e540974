//! The file format ([`docs/stream.md`](tpl_core::guide::stream) §1): one SQLite database in WAL
//! mode, identified by its application id and a `meta` row, versioned by `PRAGMA user_version`.
//! Every SQL statement of the crate is in this module: the set-up, the chain and the checks of
//! the file here, the steps, the key and the kept audit in [`steps`], the stored estimates in
//! [`estimates`].

pub(crate) mod estimates;
pub(crate) mod steps;

use std::io::Read;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, ErrorCode, OptionalExtension, params};
use sha2::{Digest, Sha256};
use tpl_core::{Candidate, Correlation, PiecewiseLoss, TransitionMatrix};

use crate::config::{Estimation, Sampler, SchemeChoice, StreamConfig};
use crate::error::{Result, StreamError};

/// `PRAGMA application_id` of a tpl stream: "tplS" in ASCII.
pub const APPLICATION_ID: i32 = 0x74_70_6c_53;

/// The format version this crate writes (`PRAGMA user_version`). Version 1 (unkeyed
/// digests of the counts, no chain) is still read; a push to it asks for `rekey`. Version 2
/// (whose chain did not cover the kept loss functions and the estimator) is read and pushed
/// to, its kept loss functions ignored. Version 3 is version 4 without the meta row
/// `mechanism` (an application's mechanism, which version 4's chain covers); it is read and
/// pushed to as it is. `rekey` upgrades all three to version 4
/// ([`docs/stream.md`](tpl_core::guide::stream) §1, §6).
pub const FORMAT_VERSION: i64 = 4;

/// The tables of a new stream but the steps ([`steps_table`]) and the kept loss functions
/// ([`LOSS_SETUP_TABLE`]).
const SCHEMA: &str = "
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE params (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    scheme TEXT NOT NULL,
    epsilon REAL NOT NULL,
    window INTEGER NOT NULL,
    sensitivity REAL NOT NULL,
    sampler TEXT NOT NULL,
    alpha REAL,
    backward TEXT,
    backward_sha256 TEXT,
    forward TEXT,
    forward_sha256 TEXT,
    budgets TEXT NOT NULL,
    budgets_sha256 TEXT NOT NULL
) STRICT;
CREATE TABLE estimates (
    t INTEGER PRIMARY KEY,
    estimate BLOB,
    error TEXT,
    std_error BLOB,
    CHECK ((estimate IS NULL) <> (error IS NULL))
) STRICT;
";

/// The table of the loss functions kept for the matrices ([`write_setup`]).
const LOSS_SETUP_TABLE: &str = "CREATE TABLE IF NOT EXISTS loss_setup (
    side TEXT PRIMARY KEY CHECK (side IN ('backward', 'forward')),
    matrix_sha256 TEXT NOT NULL,
    identity INTEGER NOT NULL CHECK (identity IN (0, 1)),
    candidates TEXT NOT NULL,
    candidates_sha256 TEXT NOT NULL
) STRICT;";

/// The steps table of format version 2 (`name` lets the upgrade build it beside version 1's).
pub fn steps_table(name: &str) -> String {
    format!(
        "CREATE TABLE {name} (
    t INTEGER PRIMARY KEY,
    key INTEGER NOT NULL UNIQUE CHECK (key >= 0),
    counts_mac BLOB CHECK (counts_mac IS NULL OR length(counts_mac) = 32),
    test REAL NOT NULL,
    publication REAL NOT NULL,
    absorbed REAL NOT NULL,
    published INTEGER NOT NULL CHECK (published IN (0, 1)),
    refused TEXT,
    release BLOB,
    max_tpl REAL,
    max_window_leakage REAL,
    chain BLOB NOT NULL CHECK (length(chain) = 32)
) STRICT;"
    )
}

/// A link of the history's hash chain.
pub type Link = [u8; 32];

/// One recorded step as the chain covers it: every column but the counts digest (which a
/// key rotation erases).
pub struct ChainedRow<'a> {
    /// t.
    pub t: i64,
    /// The step's key.
    pub key: i64,
    /// The budget parts: test, publication, absorbed.
    pub spent: [f64; 3],
    /// Whether the step published.
    pub published: bool,
    /// Why the step was refused, if it was.
    pub refused: Option<&'a str>,
    /// The stored release (a publication's), as stored.
    pub release: Option<&'a [u8]>,
    /// The audited leakage stored with the step (max TPL, largest window leakage).
    pub leakage: [Option<f64>; 2],
}

/// What the chain's root covers besides the parameters in format 3: the estimates the stream
/// stores (estimator and population) and the loss functions kept for each matrix (whether
/// L(α) = α, and the SHA-256 of its candidates, which is checked against them on open).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RootExtras {
    /// The estimator's name and the population N, when the stream stores estimates.
    pub estimation: Option<(String, u64)>,
    /// Per side (backward, forward): the kept loss function's `identity` and
    /// `candidates_sha256`, when one is kept.
    pub setup: SetupDigests,
}

/// What the root covers of the kept loss functions, per side (backward, forward).
pub type SetupDigests = [Option<(bool, String)>; 2];

/// The chain's first link, from the stored parameters: every column of `params`, the
/// matrices and the plan through the digests the file keeps of their text (`shas`: backward,
/// forward, budgets), and from format 3 on what `extras` holds — so that an edit of anything
/// a release or a refusal depends on changes it, and with it every link after. `version` is
/// the file's format (1 and 2: the root of format 2, which had no extras).
pub fn chain_root(config: &StreamConfig, shas: [Option<&str>; 3], version: i64, extras: &RootExtras) -> Link {
    let mut h = Sha256::new();
    h.update(if version >= 3 { &b"tpl-stream/3 params\0"[..] } else { &b"tpl-stream/2 params\0"[..] });
    h.update(config.scheme.name().as_bytes());
    h.update([0]);
    h.update(config.epsilon.to_bits().to_le_bytes());
    h.update((config.window as u64).to_le_bytes());
    h.update(config.sensitivity.to_bits().to_le_bytes());
    h.update(config.sampler.name().as_bytes());
    h.update([0]);
    optional_f64(&mut h, config.alpha);
    for sha in shas {
        optional_bytes(&mut h, sha.map(str::as_bytes));
    }
    if version >= 3 {
        match &extras.estimation {
            Some((name, total)) => {
                h.update([1]);
                optional_bytes(&mut h, Some(name.as_bytes()));
                h.update(total.to_le_bytes());
            }
            None => h.update([0]),
        }
        for side in &extras.setup {
            match side {
                Some((identity, sha)) => {
                    h.update([1, u8::from(*identity)]);
                    optional_bytes(&mut h, Some(sha.as_bytes()));
                }
                None => h.update([0]),
            }
        }
        // Format 4: the application's mechanism, when there is one (a stream of the built-in
        // mechanism has the root of format 3, so that the upgrade keeps its chain).
        if let Some(mechanism) = config.mechanism.as_ref().filter(|_| version >= 4) {
            h.update(b"mechanism\0");
            optional_bytes(&mut h, Some(mechanism.as_bytes()));
        }
    }
    h.finalize().into()
}

/// The chain head `status` reports for a file of format 3: SHA-256 over the last step's link
/// and the digest of every stored estimate row ([`EstimatesDigest`]), so that an edit of an
/// estimate changes it as an edit of a step does.
pub fn chain_head(last: &Link, estimates: &Link) -> Link {
    let mut h = Sha256::new();
    h.update(b"tpl-stream/3 head\0");
    h.update(last);
    h.update(estimates);
    h.finalize().into()
}

/// A running SHA-256 over the stored estimate rows, in order of t: each row's t, estimate,
/// error and standard errors as stored, length-prefixed.
pub struct EstimatesDigest(Sha256);

impl Default for EstimatesDigest {
    fn default() -> Self {
        let mut h = Sha256::new();
        h.update(b"tpl-stream/3 estimates\0");
        Self(h)
    }
}

impl EstimatesDigest {
    /// Takes one stored row.
    pub fn add(&mut self, t: i64, estimate: Option<&[u8]>, error: Option<&str>, std_error: Option<&[u8]>) {
        self.0.update(t.to_le_bytes());
        optional_bytes(&mut self.0, estimate);
        optional_bytes(&mut self.0, error.map(str::as_bytes));
        optional_bytes(&mut self.0, std_error);
    }

    /// The digest of the rows taken.
    pub fn finish(self) -> Link {
        self.0.finalize().into()
    }
}

/// The link of `row` after `previous`: SHA-256 over the previous link and the row's columns,
/// each length-prefixed or flagged, so that no two rows encode alike.
pub fn chain_next(previous: &Link, row: &ChainedRow<'_>) -> Link {
    let mut h = Sha256::new();
    h.update(previous);
    h.update(row.t.to_le_bytes());
    h.update(row.key.to_le_bytes());
    for b in row.spent {
        h.update(b.to_bits().to_le_bytes());
    }
    h.update([u8::from(row.published)]);
    optional_bytes(&mut h, row.refused.map(str::as_bytes));
    optional_bytes(&mut h, row.release);
    for l in row.leakage {
        optional_f64(&mut h, l);
    }
    h.finalize().into()
}

fn optional_f64(h: &mut Sha256, v: Option<f64>) {
    match v {
        Some(v) => {
            h.update([1]);
            h.update(v.to_bits().to_le_bytes());
        }
        None => h.update([0]),
    }
}

fn optional_bytes(h: &mut Sha256, v: Option<&[u8]>) {
    match v {
        Some(v) => {
            h.update([1]);
            h.update((v.len() as u64).to_le_bytes());
            h.update(v);
        }
        None => h.update([0]),
    }
}

/// Makes the table of a kept state (`create`, named `name`) with its `seal` column: one kept
/// by a version that sealed nothing is dropped first (its state is made again).
pub fn sealed_table(tx: &rusqlite::Transaction<'_>, path: &Path, name: &str, create: &str) -> Result<()> {
    let sql = |e| sqlite_error(path, e);
    let columns: i64 = tx
        .query_row("SELECT count(*) FROM pragma_table_info(?1) WHERE name = 'seal'", [name], |r| r.get(0))
        .map_err(sql)?;
    if columns == 0 {
        tx.execute_batch(&format!("DROP TABLE IF EXISTS {name};")).map_err(sql)?;
    }
    tx.execute_batch(create).map_err(sql)
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Lowercase hex of a SHA-256 of `text`.
fn sha256_hex(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

/// A release vector as stored: each value's f64 bits, little-endian (exact).
pub fn encode_release(release: &[f64]) -> Vec<u8> {
    release.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The inverse of [`encode_release`]; `None` for a length that is not a multiple of 8.
pub fn decode_release(bytes: &[u8]) -> Option<Vec<f64>> {
    if !bytes.len().is_multiple_of(8) {
        return None;
    }
    Some(bytes.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect())
}

/// Maps a SQLite error on `path` to the stream's error.
pub fn sqlite_error(path: &Path, e: rusqlite::Error) -> StreamError {
    let code = e.sqlite_error_code();
    match code {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            StreamError::Busy { path: path.to_path_buf(), seconds: crate::stream::BUSY_TIMEOUT.as_secs() }
        }
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
            read_only(path, e.to_string())
        }
        Some(ErrorCode::NotADatabase) => {
            StreamError::Foreign { path: path.to_path_buf(), reason: "not an SQLite database".into() }
        }
        Some(ErrorCode::DatabaseCorrupt) => {
            StreamError::Corrupt { path: path.to_path_buf(), reason: e.to_string() }
        }
        _ => StreamError::Sqlite { path: path.to_path_buf(), source: e },
    }
}

/// The error of a stream this process cannot write, for SQLite's (or the system's) `reason`:
/// [`StreamError::Companions`] when a `-wal` or `-shm` beside it exists and cannot be opened
/// for writing (another user's process left it), else [`StreamError::ReadOnly`].
pub fn read_only(path: &Path, reason: String) -> StreamError {
    let files: Vec<PathBuf> = ["-wal", "-shm"]
        .into_iter()
        .map(|suffix| companion(path, suffix))
        .filter(|f| {
            f.exists()
                && std::fs::OpenOptions::new()
                    .write(true)
                    .open(f)
                    .is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
        })
        .collect();
    if files.is_empty() {
        return StreamError::ReadOnly { path: path.to_path_buf(), reason };
    }
    let log_bytes = std::fs::metadata(companion(path, "-wal")).ok().map(|m| m.len());
    StreamError::Companions { path: path.to_path_buf(), files, log_bytes }
}

/// The companion file `<path><suffix>` SQLite keeps beside the stream (`-wal`, `-shm`).
pub fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// What changes when a process writes the file: its identity, length and times (a
/// checkpoint from the write-ahead log writes into it).
#[derive(Debug, PartialEq)]
pub struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    #[cfg(unix)]
    inode: (u64, u64, i64, i64),
}

/// The [`Stamp`] of the file at `path`.
///
/// # Errors
/// The file cannot be read (named as [`StreamError::ReadOnly`]).
pub fn stamp(path: &Path) -> Result<Stamp> {
    let m = std::fs::metadata(path)
        .map_err(|e| StreamError::ReadOnly { path: path.to_path_buf(), reason: e.to_string() })?;
    #[cfg(unix)]
    let inode = {
        use std::os::unix::fs::MetadataExt;
        (m.dev(), m.ino(), m.ctime(), m.ctime_nsec())
    };
    Ok(Stamp {
        len: m.len(),
        modified: m.modified().ok(),
        #[cfg(unix)]
        inode,
    })
}

/// The SQLite URI that opens `path` as an immutable file: no lock, no companion file
/// created ([`docs/stream.md`](tpl_core::guide::stream) §5, readers without write access).
///
/// # Errors
/// A path that is not UTF-8 text (SQLite takes file names as text).
pub fn immutable_uri(path: &Path) -> Result<String> {
    let text = path.to_str().ok_or_else(|| StreamError::ReadOnly {
        path: path.to_path_buf(),
        reason: "a read-only reader needs a file name that is UTF-8 text".into(),
    })?;
    // An absolute path after an empty authority, so that a path starting with `//` stays one.
    let mut uri = String::from(if text.starts_with('/') { "file://" } else { "file:" });
    for c in text.chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    Ok(uri)
}

/// Checks the file's first bytes before SQLite sees it: an SQLite header whose recorded
/// size fits the file (a truncated copy is named as such).
pub fn check_header(path: &Path) -> Result<()> {
    let foreign = |reason: &str| StreamError::Foreign { path: path.to_path_buf(), reason: reason.into() };
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(StreamError::Missing { path: path.to_path_buf() });
        }
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
            return Err(StreamError::BadPath { path: path.to_path_buf(), reason: e.to_string() });
        }
        Err(e) => return Err(StreamError::ReadOnly { path: path.to_path_buf(), reason: e.to_string() }),
    };
    let metadata = file.metadata().ok();
    if metadata.as_ref().is_some_and(std::fs::Metadata::is_dir) {
        return Err(foreign("it is a directory"));
    }
    let len = metadata.map_or(0, |m| m.len());
    let mut header = [0u8; 100];
    if len < 100 || file.read_exact(&mut header).is_err() {
        return Err(foreign("too short to be an SQLite database"));
    }
    if &header[..16] != b"SQLite format 3\0" {
        return Err(foreign("not an SQLite database"));
    }
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65536,
        n => u64::from(n),
    };
    let pages = u64::from(u32::from_be_bytes([header[28], header[29], header[30], header[31]]));
    // The size in the header is valid when its change counter matches (offsets 24 and 92).
    let valid = header[24..28] == header[92..96];
    // A writer killed during a checkpoint can leave the header ahead of the file's length;
    // the frames are still in the write-ahead log, from which SQLite completes the file.
    if valid && pages * page_size > len && !has_log(path) {
        return Err(StreamError::Corrupt {
            path: path.to_path_buf(),
            reason: format!("truncated: the header records {} bytes, the file has {len}", pages * page_size),
        });
    }
    Ok(())
}

/// Whether a non-empty write-ahead log (`<file>-wal`) lies beside the stream.
pub fn has_log(path: &Path) -> bool {
    std::fs::metadata(companion(path, "-wal")).is_ok_and(|m| m.len() > 0)
}

/// Sets up a fresh database: WAL, the identification, the tables, the parameters and the
/// identifier of the stream's key (`key_id`, [`crate::StreamKey::id`]).
pub fn initialise(
    conn: &mut Connection,
    config: &StreamConfig,
    key_id: &str,
    correlation: Option<&Correlation>,
) -> rusqlite::Result<()> {
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "application_id", APPLICATION_ID)?;
    let tx = conn.transaction()?;
    tx.execute_batch(SCHEMA)?;
    tx.execute_batch(&steps_table("steps"))?;
    tx.execute("INSERT INTO meta (name, value) VALUES ('format', 'tpl-stream')", [])?;
    tx.execute("INSERT INTO meta (name, value) VALUES ('key_id', ?1)", [key_id])?;
    tx.execute(
        "INSERT INTO meta (name, value) VALUES ('created_by', ?1)",
        [concat!("tpl ", env!("CARGO_PKG_VERSION"))],
    )?;
    if let Some(mechanism) = &config.mechanism {
        tx.execute("INSERT INTO meta (name, value) VALUES ('mechanism', ?1)", [mechanism])?;
    }
    if let Some(e) = &config.estimation {
        tx.execute("INSERT INTO meta (name, value) VALUES ('estimator', ?1)", [e.estimator.name()])?;
        tx.execute("INSERT INTO meta (name, value) VALUES ('estimate_total', ?1)", [e.total.to_string()])?;
    }
    let (pb, pf) =
        (config.correlation.backward().map(matrix_json), config.correlation.forward().map(matrix_json));
    let budgets = serde_json::to_string(&config.budgets).unwrap_or_else(|_| "[]".into());
    tx.execute(
        "INSERT INTO params (id, scheme, epsilon, window, sensitivity, sampler, alpha, backward, backward_sha256, \
         forward, forward_sha256, budgets, budgets_sha256) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        params![
            config.scheme.name(),
            config.epsilon,
            i64::try_from(config.window).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?,
            config.sensitivity,
            config.sampler.name(),
            config.alpha,
            pb,
            pb.as_deref().map(sha256_hex),
            pf,
            pf.as_deref().map(sha256_hex),
            budgets,
            sha256_hex(&budgets),
        ],
    )?;
    // The loss functions of the matrices, so that no later process computes them again.
    write_setup(&tx, [pb.as_deref(), pf.as_deref()], correlation)?;
    tx.pragma_update(None, "user_version", FORMAT_VERSION)?;
    tx.commit()
}

/// The correlation of `config`'s matrices from the loss functions the file kept
/// ([`initialise`]), each checked against the SHA-256 of its candidates and bound to its
/// matrix by the matrix's SHA-256 (`shas`: backward, forward), with what the chain's root
/// covers of each ([`RootExtras::setup`]). `None` without matrices, or for a file made before
/// the table existed (the caller then computes them).
///
/// # Errors
/// [`StreamError::Corrupt`] for a kept function that does not match its digest or its matrix,
/// or that is not a loss function.
fn read_setup(
    conn: &Connection,
    path: &Path,
    config: &StreamConfig,
    shas: [Option<&str>; 2],
) -> Result<(Option<Correlation>, SetupDigests)> {
    let corrupt = |reason: String| StreamError::Corrupt { path: path.to_path_buf(), reason };
    let kept: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'loss_setup'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(|e| sqlite_error(path, e))?
        > 0;
    if !kept || config.correlation.is_none() {
        return Ok((None, [None, None]));
    }
    let side = |name: &str, sha: Option<&str>| -> Result<(PiecewiseLoss, (bool, String))> {
        type Kept = (String, bool, String, String);
        let row: Option<Kept> = conn
            .query_row(
                "SELECT matrix_sha256, identity, candidates, candidates_sha256 FROM loss_setup WHERE side = ?1",
                [name],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()
            .map_err(|e| sqlite_error(path, e))?;
        let Some((matrix_sha, identity, text, text_sha)) = row else {
            return Err(corrupt(format!("the kept loss function of the {name} matrix is missing")));
        };
        if Some(matrix_sha.as_str()) != sha || sha256_hex(&text) != text_sha {
            return Err(corrupt(format!(
                "the kept loss function of the {name} matrix does not match its SHA-256 or its matrix"
            )));
        }
        let pairs: Vec<[f64; 2]> = serde_json::from_str(&text)
            .map_err(|e| corrupt(format!("the kept loss function of the {name} matrix: {e}")))?;
        let candidates = pairs.into_iter().map(|[d, delta]| Candidate { d, delta }).collect();
        let loss = PiecewiseLoss::from_candidates(identity, candidates)
            .map_err(|e| corrupt(format!("the kept loss function of the {name} matrix: {e}")))?;
        Ok((loss, (identity, text_sha)))
    };
    let mut digests = [None, None];
    let mut losses = [None, None];
    let sides = [("backward", config.correlation.backward()), ("forward", config.correlation.forward())];
    for (((name, matrix), sha), (loss, digest)) in
        sides.into_iter().zip(shas).zip(losses.iter_mut().zip(&mut digests))
    {
        if matrix.is_some() {
            let (kept, kept_digest) = side(name, sha)?;
            *loss = Some(kept);
            *digest = Some(kept_digest);
        }
    }
    let [lb, lf] = losses;
    let correlation = config
        .correlation
        .clone()
        .with_losses(lb, lf)
        .map_err(|e| corrupt(format!("the kept loss functions: {e}")))?;
    Ok((Some(correlation), digests))
}

/// The matrices' texts as the file stores them (`params.backward`, `params.forward`).
pub fn matrix_texts(tx: &rusqlite::Transaction<'_>, path: &Path) -> Result<(Option<String>, Option<String>)> {
    tx.query_row("SELECT backward, forward FROM params WHERE id = 1", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(|e| sqlite_error(path, e))
}

/// Writes the loss functions of `correlation` into `loss_setup` (a fresh table, or one
/// emptied first), one row per matrix (`texts`: the backward and forward matrices as stored),
/// and returns what the chain's root covers of them ([`RootExtras::setup`]).
pub fn write_setup(
    tx: &rusqlite::Transaction<'_>,
    texts: [Option<&str>; 2],
    correlation: Option<&Correlation>,
) -> rusqlite::Result<SetupDigests> {
    tx.execute_batch(LOSS_SETUP_TABLE)?;
    tx.execute("DELETE FROM loss_setup", [])?;
    let (lb, lf) = correlation.map_or((None, None), |c| (c.backward_loss(), c.forward_loss()));
    let mut digests = [None, None];
    for ((side, text, loss), digest) in
        [("backward", texts[0], lb), ("forward", texts[1], lf)].into_iter().zip(&mut digests)
    {
        if let (Some(text), Some(loss)) = (text, loss) {
            let candidates: Vec<[f64; 2]> = loss.candidates().iter().map(|c| [c.d, c.delta]).collect();
            let candidates = serde_json::to_string(&candidates).unwrap_or_else(|_| "[]".into());
            let sha = sha256_hex(&candidates);
            tx.execute(
                "INSERT INTO loss_setup (side, matrix_sha256, identity, candidates, candidates_sha256) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![side, sha256_hex(text), loss.is_identity(), candidates, sha],
            )?;
            *digest = Some((loss.is_identity(), sha));
        }
    }
    Ok(digests)
}

/// A matrix as JSON (full-precision numbers): a dense one as its rows, a sparse one as
/// `{"n": n, "rows": [[base, [[column, entry], …]], …]}` (each row's base and the entries
/// that differ from it), never n² numbers.
fn matrix_json(m: &TransitionMatrix) -> String {
    let sparse: Option<Vec<SparseRow>> = m
        .rows()
        .map(|r| {
            r.sparse_parts().map(|(b, cols, vals)| {
                (b, cols.iter().map(|&c| c as usize).zip(vals.iter().copied()).collect())
            })
        })
        .collect();
    let text = match sparse {
        Some(rows) => serde_json::to_string(&serde_json::json!({ "n": m.n(), "rows": rows })),
        None => serde_json::to_string(&m.to_rows()),
    };
    text.unwrap_or_else(|_| "[]".into())
}

/// One row of a sparse matrix as stored: its base and its (column, entry) pairs.
type SparseRow = (f64, Vec<(usize, f64)>);

/// The matrix of [`matrix_json`]'s text.
fn matrix_from_json(text: &str) -> std::result::Result<TransitionMatrix, String> {
    if text.trim_start().starts_with('{') {
        let mut stored: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let n = stored["n"].as_u64().and_then(|n| usize::try_from(n).ok()).ok_or("no size n")?;
        let rows: Vec<SparseRow> =
            serde_json::from_value(stored["rows"].take()).map_err(|e| e.to_string())?;
        return TransitionMatrix::from_sparse_rows(n, rows).map_err(|e| e.to_string());
    }
    let rows: Vec<Vec<f64>> = serde_json::from_str(text).map_err(|e| e.to_string())?;
    TransitionMatrix::new(rows).map_err(|e| e.to_string())
}

/// What [`read_config`] reads: the parameters, and what the file keeps to check its history
/// and its key.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The parameters.
    pub config: StreamConfig,
    /// The format version (1, 2 or 3).
    pub version: i64,
    /// The chain's first link, from the parameters ([`chain_root`] at `version`).
    pub root: Link,
    /// The digests of the parameters' text (backward, forward, budgets), from which the root
    /// is made.
    pub shas: [Option<String>; 3],
    /// What a root of format 3 covers besides the parameters, as stored (for a file of an
    /// older format: what an upgrade would cover, but for the kept loss functions, which an
    /// upgrade computes again).
    pub extras: RootExtras,
    /// The identifier of the stream's key (format 2).
    pub key_id: Option<String>,
}

impl Stored {
    /// The chain's root for the file's steps at format `version`, with `extras`.
    pub fn root_with(&self, version: i64, extras: &RootExtras) -> Link {
        let [b, f, p] = &self.shas;
        chain_root(&self.config, [b.as_deref(), f.as_deref(), p.as_deref()], version, extras)
    }
}

impl Stored {
    /// The adversary's correlation, when the stream has matrices: with the loss functions
    /// the file kept, or computed from the matrices when first needed (a file that kept none,
    /// or one of a format whose chain does not cover them).
    pub fn correlation(&self) -> Option<Correlation> {
        self.config.known_correlation()
    }
}

/// Checks that the open database is a tpl stream of a version this crate reads, and reads
/// its parameters.
pub fn read_config(conn: &Connection, path: &Path) -> Result<Stored> {
    let sql = |e| sqlite_error(path, e);
    let foreign = |reason: &str| StreamError::Foreign { path: path.to_path_buf(), reason: reason.into() };
    let corrupt = |reason: String| StreamError::Corrupt { path: path.to_path_buf(), reason };
    let app: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0)).map_err(sql)?;
    if app != APPLICATION_ID {
        return Err(foreign("an SQLite database of another program (application id differs)"));
    }
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(sql)?;
    if version > FORMAT_VERSION {
        return Err(StreamError::NewerFormat {
            path: path.to_path_buf(),
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    if version < 1 {
        return Err(corrupt("no format version: the stream was never fully created".into()));
    }
    check_steps_columns(conn, path, version)?;
    let meta = |name: &str| -> Result<Option<String>> {
        conn.query_row("SELECT value FROM meta WHERE name = ?1", [name], |r| r.get(0)).optional().map_err(sql)
    };
    if meta("format")?.as_deref() != Some("tpl-stream") {
        return Err(foreign("its meta table does not say tpl-stream"));
    }
    let key_id = meta("key_id")?;
    if version >= 2 && key_id.as_ref().is_none_or(|k| k.len() != 64) {
        return Err(corrupt("the meta row key_id is missing or damaged".into()));
    }
    type Row = (String, f64, i64, f64, String, Option<f64>, Option<String>, Option<String>);
    type Row2 = (Option<String>, Option<String>, String, String);
    let (row, row2): (Row, Row2) = conn
        .query_row(
            "SELECT scheme, epsilon, window, sensitivity, sampler, alpha, backward, backward_sha256, forward, \
             forward_sha256, budgets, budgets_sha256 FROM params WHERE id = 1",
            [],
            |r| {
                Ok((
                    (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?),
                    (r.get(8)?, r.get(9)?, r.get(10)?, r.get(11)?),
                ))
            },
        )
        .optional()
        .map_err(sql)?
        .ok_or_else(|| corrupt("no parameters row".into()))?;
    let (scheme, epsilon, window, sensitivity, sampler, alpha, pb, pb_sha) = row;
    let (pf, pf_sha, budgets, budgets_sha) = row2;
    let checked = |what: &str, text: &str, sha: Option<&str>| -> Result<()> {
        if sha != Some(sha256_hex(text).as_str()) {
            return Err(corrupt(format!("the stored {what} does not match its SHA-256")));
        }
        Ok(())
    };
    let matrix =
        |what: &str, text: Option<String>, sha: Option<String>| -> Result<Option<TransitionMatrix>> {
            let Some(text) = text else { return Ok(None) };
            checked(what, &text, sha.as_deref())?;
            matrix_from_json(&text).map(Some).map_err(|e| corrupt(format!("the stored {what}: {e}")))
        };
    checked("budget plan", &budgets, Some(&budgets_sha))?;
    let shas = [pb_sha.clone(), pf_sha.clone(), Some(budgets_sha.clone())];
    let mut config = StreamConfig {
        scheme: SchemeChoice::from_name(&scheme),
        epsilon,
        window: usize::try_from(window).map_err(|_| corrupt(format!("window {window}")))?,
        sensitivity,
        sampler: Sampler::from_name(&sampler).ok_or_else(|| match sampler.as_str() {
            "float" => StreamError::Config(crate::ConfigError::SamplerLeftOut(sampler.clone())),
            _ => corrupt(format!("unknown sampler {sampler:?}")),
        })?,
        mechanism: if version >= 4 { meta("mechanism")? } else { None },
        correlation: Correlation::new(
            matrix("backward matrix", pb, pb_sha)?,
            matrix("forward matrix", pf, pf_sha)?,
        )
        .map_err(|e| corrupt(format!("the stored matrices: {e}")))?,
        alpha,
        budgets: serde_json::from_str(&budgets)
            .map_err(|e| corrupt(format!("the stored budget plan: {e}")))?,
        estimation: match (meta("estimator")?, meta("estimate_total")?) {
            (None, None) => None,
            (Some(name), Some(total)) => Some(Estimation {
                estimator: name.parse().map_err(|e| corrupt(format!("the meta row estimator: {e}")))?,
                total: total
                    .parse()
                    .map_err(|_| corrupt(format!("the meta row estimate_total {total:?}")))?,
            }),
            _ => return Err(corrupt("one of the meta rows estimator and estimate_total is missing".into())),
        },
    };
    config.check().map_err(|e| corrupt(format!("stored parameters: {e}")))?;
    // Only a root that covers them makes the kept loss functions trustworthy: those of an
    // older format are computed again from the matrices (which its root covers).
    let (kept, digests) = if version >= 3 {
        read_setup(conn, path, &config, [shas[0].as_deref(), shas[1].as_deref()])?
    } else {
        (None, [None, None])
    };
    if let Some(kept) = kept {
        config.correlation = kept;
    }
    let extras = RootExtras {
        estimation: config.estimation.map(|e| (e.estimator.name().to_owned(), e.total)),
        setup: digests,
    };
    let root =
        chain_root(&config, [shas[0].as_deref(), shas[1].as_deref(), shas[2].as_deref()], version, &extras);
    Ok(Stored { config, version, root, shas, extras, key_id })
}

/// The columns of the steps table that format `version` has and the other formats read here
/// do not (what the stream's reads of the steps name beyond the common ones).
fn steps_columns_of(version: i64) -> &'static [&'static str] {
    if version >= 2 { &["counts_mac", "chain"] } else { &["counts_sha256"] }
}

/// Checks that the steps table has the columns of the format `version` that `PRAGMA
/// user_version` claims: a version set by hand, or a file mended from parts of two, would
/// otherwise fail at the first read of a step with an SQL error about a missing column.
///
/// # Errors
/// [`StreamError::Corrupt`] naming the claimed version, the columns it lacks and, when the
/// table is that of another version, that version.
fn check_steps_columns(conn: &Connection, path: &Path, version: i64) -> Result<()> {
    let sql = |e| sqlite_error(path, e);
    let mut stmt = conn.prepare("SELECT name FROM pragma_table_info('steps')").map_err(sql)?;
    let columns: Vec<String> =
        stmt.query_map([], |r| r.get(0)).map_err(sql)?.collect::<rusqlite::Result<_>>().map_err(sql)?;
    let has = |v: i64| steps_columns_of(v).iter().all(|c| columns.iter().any(|name| name == c));
    if has(version) {
        return Ok(());
    }
    let reason = if columns.is_empty() {
        "there is no steps table".to_string()
    } else {
        let missing: Vec<&str> = steps_columns_of(version)
            .iter()
            .copied()
            .filter(|c| !columns.iter().any(|name| name == c))
            .collect();
        let other = (1..=FORMAT_VERSION).filter(|&v| v != version).find(|&v| has(v));
        format!(
            "the format version does not match the tables: PRAGMA user_version says format {version}, but the steps \
             table has no column {}{}",
            missing.join(" or "),
            other.map_or(String::new(), |v| format!(" (it has the columns of format {v})"))
        )
    };
    Err(StreamError::Corrupt { path: path.to_path_buf(), reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a stream of format 2 whose `user_version` was set to 1 failed at its
    /// first read with "no such column: counts_sha256".
    #[test]
    fn a_format_version_that_does_not_match_the_steps_table_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let config = StreamConfig::new(tpl_mechanisms::SchemeKind::Bd, 1.0, 3);
        crate::DurableStream::create(&path, &config).unwrap();
        let conn = Connection::open(&path).unwrap();
        let reason = |conn: &Connection| match read_config(conn, &path) {
            Err(StreamError::Corrupt { reason, .. }) => reason,
            other => panic!("{:?}", other.map(|s| s.version)),
        };
        assert!(read_config(&conn, &path).is_ok());
        conn.pragma_update(None, "user_version", 1).unwrap();
        assert_eq!(
            reason(&conn),
            "the format version does not match the tables: PRAGMA user_version says format 1, but the steps \
             table has no column counts_sha256 (it has the columns of format 2)"
        );
        conn.execute_batch(
            "ALTER TABLE steps RENAME COLUMN counts_mac TO counts_sha256; ALTER TABLE steps DROP COLUMN chain;
             PRAGMA user_version = 2;",
        )
        .unwrap();
        assert!(reason(&conn).ends_with("says format 2, but the steps table has no column counts_mac or chain (it has the columns of format 1)"));
    }

    /// A header that records more pages than the file holds: corrupt without a log beside
    /// it, but sound while a non-empty write-ahead log can complete it (a writer killed
    /// during a checkpoint leaves exactly that).
    #[test]
    fn a_header_ahead_of_the_file_is_corrupt_only_without_a_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let mut header = [0u8; 100];
        header[..16].copy_from_slice(b"SQLite format 3\0");
        header[16..18].copy_from_slice(&4096u16.to_be_bytes());
        header[24..28].copy_from_slice(&7u32.to_be_bytes());
        header[92..96].copy_from_slice(&7u32.to_be_bytes());
        header[28..32].copy_from_slice(&3u32.to_be_bytes()); // 3 pages recorded
        let mut file = header.to_vec();
        file.resize(2 * 4096, 0); // 2 pages present
        std::fs::write(&path, &file).unwrap();
        assert!(matches!(check_header(&path), Err(StreamError::Corrupt { .. })));
        std::fs::write(dir.path().join("s.db-wal"), [1u8; 32]).unwrap();
        assert!(check_header(&path).is_ok());
    }
}
