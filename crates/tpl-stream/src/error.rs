//! The errors of a durable stream: each names the file, the step or the key at fault.

use std::path::PathBuf;

use thiserror::Error;
use tpl_alloc::AllocError;
use tpl_mechanisms::MechError;

/// What can go wrong with a stream file. After any error nothing was recorded that was not
/// already committed, and nothing was released that is not in the file.
#[derive(Debug, Error)]
pub enum StreamError {
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
    Config(String),
    /// A budget plan the `planned` scheme refuses (`--budgets`).
    #[error("--budgets: {0}")]
    Plan(MechError),
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
    /// refuses (past a plan's horizon).
    #[error("step {step}: {source}")]
    Step {
        /// 1-based step of the stream.
        step: usize,
        /// The scheme's or mechanism's reason.
        source: MechError,
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
