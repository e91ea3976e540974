//! The errors of a durable stream: each names the file, the step or the key at fault.

use std::path::PathBuf;

use thiserror::Error;
use tpl_alloc::AllocError;
use tpl_core::Short;
use tpl_mechanisms::MechError;

/// A parameter of [`crate::StreamConfig`], as a [`ConfigError`] names it: by its field name
/// ([`Parameter::name`], also the Python package's argument) or by the `tpl stream init` flag
/// ([`Parameter::flag`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Parameter {
    /// The scheme.
    Scheme,
    /// ε.
    Epsilon,
    /// w.
    Window,
    /// Δ.
    Sensitivity,
    /// P_B.
    Backward,
    /// P_F.
    Forward,
    /// The leakage bound α.
    Alpha,
    /// The planned scheme's budgets.
    Budgets,
    /// The estimator of the stored estimates.
    Estimator,
    /// The population N the estimates assume.
    Total,
}

impl Parameter {
    /// The field's name: `scheme`, `epsilon`, `window`, `sensitivity`, `backward`, `forward`,
    /// `alpha`, `budgets`.
    ///
    /// ```
    /// use tpl_stream::Parameter;
    /// assert_eq!(Parameter::Alpha.name(), "alpha");
    /// assert_eq!(Parameter::Alpha.flag(), "--alpha");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::Scheme => "scheme",
            Self::Epsilon => "epsilon",
            Self::Window => "window",
            Self::Sensitivity => "sensitivity",
            Self::Backward => "backward",
            Self::Forward => "forward",
            Self::Alpha => "alpha",
            Self::Budgets => "budgets",
            Self::Estimator => "estimator",
            Self::Total => "total",
        }
    }

    /// The flag of `tpl stream init` that sets it: `--scheme`, `--epsilon`, ….
    pub fn flag(self) -> &'static str {
        match self {
            Self::Scheme => "--scheme",
            Self::Epsilon => "--epsilon",
            Self::Window => "--window",
            Self::Sensitivity => "--sensitivity",
            Self::Backward => "--backward",
            Self::Forward => "--forward",
            Self::Alpha => "--alpha",
            Self::Budgets => "--budgets",
            Self::Estimator => "--estimator",
            Self::Total => "--total",
        }
    }
}

/// Why parameters cannot make a stream ([`docs/stream.md`](tpl_core::guide::stream)): each names
/// the parameters at fault, by field name in its `Display` and by any other naming through
/// [`ConfigError::message`] (the CLI names its flags, the Python package its arguments).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ConfigError {
    /// (ε, w, Δ) refused by the w-event parameters' check (the error, kept as the source).
    Params(tpl_mechanisms::MechError),
    /// Matrices that do not make a correlation, or whose leakage audit cannot start (the
    /// error, kept as the source).
    Matrices(tpl_alloc::AllocError),
    /// A custom scheme named like a built-in one (its name).
    CustomNamedBuiltIn(String),
    /// A sampler this build leaves out (its name): `float` without the feature
    /// `float-not-release-grade`.
    SamplerLeftOut(String),
    /// A window beyond 2^63 − 1, the largest a stream file stores.
    WindowTooLarge(usize),
    /// `pba` without a matrix.
    PbaNeedsMatrix,
    /// `planned` without budgets.
    PlannedNeedsBudgets,
    /// Budgets for a scheme other than `planned`.
    BudgetsNotPlanned,
    /// α refused by its check (the error, kept as the source).
    Alpha(tpl_core::CoreError),
    /// α without a matrix.
    AlphaNeedsMatrix,
    /// Estimates that cannot be computed as asked (why): an estimator that is not a filter, a
    /// map estimator without a forward matrix, a population beyond 2⁵³.
    Estimation(String),
    /// α so small that step 1 — which always publishes — could never be released.
    FirstStepAlpha {
        /// α.
        alpha: f64,
        /// Why the audit refuses the first step.
        reason: String,
    },
    /// (ε, w, Δ) (or a plan) under which step `step` could never be released (its reason):
    /// step 1's publication, the test every later step of `bd`, `ba` and `pba` draws, or a
    /// budget of the plan.
    StepEpsilon {
        /// The step that could never be released.
        step: usize,
        /// ε.
        epsilon: f64,
        /// w.
        window: usize,
        /// Δ.
        sensitivity: f64,
        /// Why.
        reason: String,
    },
}

impl ConfigError {
    /// The message, with every parameter named by `name` (for example [`Parameter::flag`]).
    ///
    /// ```
    /// use tpl_stream::{ConfigError, Parameter};
    /// let e = ConfigError::AlphaNeedsMatrix;
    /// assert!(e.message(Parameter::flag).starts_with("--alpha needs --backward and/or --forward"));
    /// assert!(e.to_string().starts_with("alpha needs backward and/or forward"));
    /// ```
    pub fn message(&self, name: impl Fn(Parameter) -> &'static str) -> String {
        use Parameter::*;
        match self {
            Self::Params(reason) => format!("stream parameters: {reason}"),
            Self::Matrices(reason) => format!("{}/{}: {reason}", name(Backward), name(Forward)),
            Self::CustomNamedBuiltIn(scheme) => {
                format!("a custom scheme cannot be named {scheme:?}, the name of a built-in scheme")
            }
            Self::SamplerLeftOut(sampler) => format!(
                "the stream draws from the {sampler} sampler, which this build leaves out (tpl-stream's feature \
                 float-not-release-grade turns it on; it is not release-grade)"
            ),
            Self::WindowTooLarge(window) => format!(
                "{} {window}: beyond 2^63 − 1 = {}, the largest window a stream file stores",
                name(Window),
                i64::MAX
            ),
            Self::PbaNeedsMatrix => format!(
                "{} pba needs {} and/or {}: its correlation pool depends on them",
                name(Scheme),
                name(Backward),
                name(Forward)
            ),
            Self::PlannedNeedsBudgets => {
                format!("{} planned needs {}: the budget of every step", name(Scheme), name(Budgets))
            }
            Self::BudgetsNotPlanned => format!("{} is for {} planned only", name(Budgets), name(Scheme)),
            Self::Alpha(reason) => format!("{}: {reason}", name(Alpha)),
            Self::AlphaNeedsMatrix => format!(
                "{} needs {} and/or {}: the leakage it bounds depends on them",
                name(Alpha),
                name(Backward),
                name(Forward)
            ),
            Self::Estimation(why) => format!("{}: {why}", name(Estimator)),
            Self::FirstStepAlpha { alpha, reason } => format!(
                "{} {}: step 1 could never be released: {reason} (a first step always publishes, at a budget \
                 the parameters fix)",
                name(Alpha),
                Short(*alpha)
            ),
            Self::StepEpsilon { step, epsilon, window, sensitivity, reason } => format!(
                "{} {} (with {} {window} and {} {}): step {step} could never be released: {reason}",
                name(Epsilon),
                Short(*epsilon),
                name(Window),
                name(Sensitivity),
                Short(*sensitivity)
            ),
        }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message(Parameter::name))
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Params(e) => Some(e),
            Self::Matrices(e) => Some(e),
            Self::Alpha(e) => Some(e),
            _ => None,
        }
    }
}

/// What can go wrong with a stream file. After any error nothing was recorded that was not
/// already committed, and nothing was released that is not in the file.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StreamError {
    /// The releases could not be estimated again as asked (the estimator's reason).
    #[error("{estimator}: {source}")]
    Estimate {
        /// The estimator.
        estimator: &'static str,
        /// Why.
        #[source]
        source: tpl_postprocess::PostprocessError,
    },
    /// A stream of a custom scheme opened or created without that scheme's builder (or with
    /// another's).
    #[error(
        "the stream runs the custom scheme {name:?}, which only its application can rebuild: open it with that \
         scheme's builder (StreamOptions::scheme){}", .given.as_ref().map(|g| format!(" (the builder given builds {g:?})")).unwrap_or_default()
    )]
    NeedsScheme {
        /// The scheme the stream names.
        name: String,
        /// The builder's scheme, if one was given.
        given: Option<String>,
    },
    /// A stream of a custom mechanism opened or created without that mechanism's builder (or
    /// with another's).
    #[error(
        "the stream releases through the custom mechanism {name:?}, which only its application can rebuild: open \
         it with that mechanism's builder (StreamOptions::mechanism){}", .given.as_ref().map(|g| format!(" (the builder given builds {g:?})")).unwrap_or_default()
    )]
    NeedsMechanism {
        /// The mechanism the stream names.
        name: String,
        /// The builder's mechanism, if one was given.
        given: Option<String>,
    },
    /// A scheme reported a spend at a step that is not what its draws through the stream's
    /// mechanism spent: it released through another mechanism than the one it was built with,
    /// or its accounts are wrong. Nothing was recorded; the file is sound.
    #[error(
        "the scheme {scheme:?} reports {reported} spent at step {step}, but its draws through the stream's \
         mechanism spent {drawn}: a scheme must release through the mechanism it is built with, and report what \
         it drew; nothing was recorded"
    )]
    SchemeSpend {
        /// The scheme's name.
        scheme: String,
        /// The step (1-based).
        step: usize,
        /// What the scheme reported.
        reported: f64,
        /// What its draws spent.
        drawn: f64,
    },
    /// `create` on a path that exists.
    #[error("{}: already exists: a new stream is never written over an existing file", .path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// No file at the path (`open` never creates one).
    #[error("{}: no such stream (create it first)", .path.display())]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// A file that is not a tpl stream: random bytes, another program's SQLite database.
    #[error("{}: not a tpl stream: {reason}", .path.display())]
    Foreign {
        /// The file.
        path: PathBuf,
        /// What gave it away.
        reason: String,
    },
    /// A stream written by a newer tpl, in a format this one does not read.
    #[error("{}: stream format version {found}, but this tpl reads version {supported} only: use a newer tpl", .path.display())]
    NewerFormat {
        /// The file.
        path: PathBuf,
        /// The file's format version.
        found: i64,
        /// The version this crate writes and reads.
        supported: i64,
    },
    /// A tpl stream whose content is damaged: truncated, inconsistent, or with records no
    /// scheme could have produced.
    #[error("{}: damaged stream: {reason}", .path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Another process held the stream for longer than the wait allowed.
    #[error("{}: busy: another process is writing this stream; waited {seconds} s (retry later)", .path.display())]
    Busy {
        /// The file.
        path: PathBuf,
        /// How long this process waited.
        seconds: u64,
    },
    /// The file (or its folder, which holds the write-ahead log) cannot be written.
    #[error("{}: read-only: the stream and its folder must be writable to push ({reason})", .path.display())]
    ReadOnly {
        /// The file.
        path: PathBuf,
        /// SQLite's words.
        reason: String,
    },
    /// The stream's companion files (`-wal`, `-shm`) exist but cannot be written by this
    /// process: another user's process created them (e.g. a reader running as that user),
    /// and SQLite cannot write the stream through them.
    #[error(
        "{}: read-only: {} cannot be written by this user (another user's process created {}); {}",
        .path.display(),
        names(.files),
        if .files.len() == 1 { "it" } else { "them" },
        advice(*.log_bytes)
    )]
    Companions {
        /// The file.
        path: PathBuf,
        /// The companions this process cannot write.
        files: Vec<PathBuf>,
        /// The size of the write-ahead log, if it exists (0: it holds no step).
        log_bytes: Option<u64>,
    },
    /// `create` where the stream cannot be written (a folder this user cannot write).
    #[error("{}: cannot create the stream: {reason}", .path.display())]
    CannotCreate {
        /// The file.
        path: PathBuf,
        /// The system's words.
        reason: String,
    },
    /// A path the system refuses as a file name (e.g. one holding a NUL byte).
    #[error("{}: not a usable file name: {reason}", .path.display())]
    BadPath {
        /// The path.
        path: PathBuf,
        /// The system's words.
        reason: String,
    },
    /// No key follows the last one (2^63 − 1, the largest a stream stores).
    #[error(
        "the last key is {last} = 2^63 − 1, the largest a stream stores: no step can be appended after it"
    )]
    KeysExhausted {
        /// The last stored key.
        last: i64,
    },
    /// `create` in a folder that does not exist.
    #[error("{}: cannot create the stream: the folder {} does not exist", .path.display(), .folder.display())]
    NoFolder {
        /// The file.
        path: PathBuf,
        /// Its folder.
        folder: PathBuf,
    },
    /// Any other failure of the database.
    #[error("{}: {source}", .path.display())]
    Sqlite {
        /// The file.
        path: PathBuf,
        /// SQLite's reason.
        source: rusqlite::Error,
    },
    /// Parameters a stream cannot be created with.
    #[error("{0}")]
    Config(ConfigError),
    /// A budget plan the `planned` scheme refuses (the `budgets` parameter).
    #[error("budgets: {0}")]
    Plan(MechError),
    /// The stream's key file is missing, unreadable, not a key, or the key of another stream.
    #[error("{}: stream key: {reason}", .path.display())]
    Key {
        /// The key file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A key file already exists where a new key would be written (a key is never
    /// overwritten: a stream whose key is lost cannot tell retries from conflicts).
    #[error("{}: a key file already exists; a key is never written over (remove it only if no stream uses it)", .path.display())]
    KeyExists {
        /// The key file.
        path: PathBuf,
    },
    /// A stream of format 1, which stores unkeyed digests of the counts: it is read, but a
    /// push needs it upgraded first.
    #[error(
        "{}: stream format 1 stores unkeyed SHA-256 digests of the counts, from which small counts can be recovered: run `tpl stream rekey --db {}` (or `DurableStream::rekey`) to erase them and keep a key outside the file; nothing was pushed",
        .path.display(), .path.display()
    )]
    Unkeyed {
        /// The file.
        path: PathBuf,
    },
    /// A stored key whose counts digest a key rotation erased: a retry cannot be told from
    /// a conflict any more.
    #[error(
        "key {key} is already stored (step {step}), but its counts digest was erased when the stream's key was rotated: a retry can no longer be told from a conflict; nothing was changed"
    )]
    Unverifiable {
        /// The key.
        key: i64,
        /// The stored step with that key.
        step: usize,
    },
    /// A negative step key (keys are time buckets: integers from 0 to 2^63 − 1).
    #[error("key {key} is negative: keys are integers from 0 to 2^63 − 1; nothing was pushed")]
    NegativeKey {
        /// The key.
        key: i64,
    },
    /// A key already stored with other counts: a retry must push the same counts.
    #[error(
        "key {key} is already stored (step {step}) with different counts; nothing was changed (a stored step is never released twice)"
    )]
    KeyConflict {
        /// The key.
        key: i64,
        /// The stored step with that key.
        step: usize,
    },
    /// A key not after the last stored one and not stored itself.
    #[error("key {key} is not after the last stored key {last}, and is not stored: keys must increase")]
    KeyOrder {
        /// The key.
        key: i64,
        /// The last stored key.
        last: i64,
    },
    /// Counts of the wrong width, or that the mechanism refuses, or a step the scheme
    /// refuses (past a plan's horizon). The message names the step once: a reason that
    /// already names it (a count that is not finite, a row of another width) is not prefixed
    /// again.
    #[error("{}", step_message(*step, source))]
    Step {
        /// 1-based step of the stream.
        step: usize,
        /// The scheme's or mechanism's reason.
        source: MechError,
    },
    /// Counts whose number of cells differs from the states of the stream's matrices: the
    /// leakage would be audited against another model than the data's.
    #[error(
        "step {step}: {cells} cells, but the stream's matrices have {states} states: the leakage is audited on those matrices, so every step must have one count per state; nothing was recorded"
    )]
    Width {
        /// 1-based step of the stream.
        step: usize,
        /// The counts' number of cells.
        cells: usize,
        /// The matrices' number of states.
        states: usize,
    },
    /// The first step cannot publish within the promise, and has no release to repeat.
    #[error("step 1: not released: {reason}; nothing was recorded")]
    FirstRefused {
        /// Which promise it would break.
        reason: String,
    },
    /// An audit of the spent budgets failed.
    #[error("leakage audit: {0}")]
    Alloc(#[from] AllocError),
}

impl StreamError {
    /// The message, with the parameters of a [`ConfigError`] or a refused plan named by
    /// `name` (the CLI passes [`Parameter::flag`]); every other error as `Display` gives it.
    pub fn message(&self, name: impl Fn(Parameter) -> &'static str) -> String {
        match self {
            Self::Config(e) => e.message(name),
            Self::Plan(e) => format!("{}: {e}", name(Parameter::Budgets)),
            other => other.to_string(),
        }
    }
}

/// "step N: reason", unless the reason names its step itself.
fn step_message(step: usize, source: &MechError) -> String {
    match source.step() {
        Some(_) => source.to_string(),
        None => format!("step {step}: {source}"),
    }
}

/// The files, named for a message: "A", "A and B".
fn names(files: &[PathBuf]) -> String {
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    names.join(" and ")
}

/// What to do about companions another user left, given the size of the write-ahead log.
fn advice(log_bytes: Option<u64>) -> String {
    match log_bytes {
        Some(n) if n > 0 => format!(
            "the log holds {n} bytes of committed steps: do not remove it; have its owner (or root) make both \
             files writable by you, or push as their owner"
        ),
        _ => "they hold no step (the log is empty): once no process has the stream open, remove them (as their \
              owner or root) and push again"
            .into(),
    }
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, StreamError>;
