//! The one error type of `tpl-io`: every message names the file (`<stdin>` for `-`), the
//! 1-based line when one is at fault, and the column and value as typed
//! ([`docs/formats.md`](tpl_core::guide::formats) §1).

use std::path::{Path, PathBuf};

use thiserror::Error;
use tpl_core::CoreError;

use crate::text::name;

/// What can go wrong reading or writing a file of [`docs/formats.md`](tpl_core::guide::formats).
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum IoError {
    /// A file that cannot be opened or read.
    #[error("{}: cannot read: {source}", name(path))]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A file that cannot be created or written.
    #[error("{}: cannot write: {source}", name(path))]
    Write {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A file whose content is malformed: the message names the column and the value as
    /// typed.
    #[error("{}{}: {message}", name(path), at_line(*line))]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line, 0 when the whole file is at fault.
        line: usize,
        /// What is wrong, naming the column and value.
        message: String,
    },
    /// A value of the file that `tpl-core` refuses (a matrix row that does not sum to 1, a
    /// user stream with a gap or a user missing), with the line that holds it.
    #[error("{}{}: {source}", name(path), at_line(*line))]
    Core {
        /// The file.
        path: PathBuf,
        /// 1-based line, 0 when the whole file is at fault.
        line: usize,
        /// The library's reason.
        source: CoreError,
    },
    /// A user stream with more distinct cells than a reader takes: [`crate::MAX_CELLS`] for
    /// dense counts and matrices, [`crate::MAX_SPARSE_CELLS`] for sparse ones.
    #[error("{}: {cells} distinct cells: at most {limit} are supported{}", name(path), if *limit == crate::MAX_CELLS { " (dense matrices)" } else { "" })]
    TooManyCells {
        /// The file.
        path: PathBuf,
        /// The number of distinct cells it has.
        cells: usize,
        /// The most the reader takes.
        limit: usize,
    },
}

/// `:LINE` for a line, nothing for 0 (the whole file).
fn at_line(line: usize) -> String {
    if line > 0 { format!(":{line}") } else { String::new() }
}

impl IoError {
    /// A malformed file: `message` (naming the column and value) at 1-based `line` of
    /// `path`, 0 for the whole file.
    pub fn parse(path: &Path, line: usize, message: impl Into<String>) -> Self {
        Self::Parse { path: path.to_path_buf(), line, message: message.into() }
    }

    /// A `tpl-core` error about the value at 1-based `line` of `path` (0: the whole file).
    pub fn core(path: &Path, line: usize, source: CoreError) -> Self {
        Self::Core { path: path.to_path_buf(), line, source }
    }

    /// A file that cannot be read, with the operating system's reason.
    pub fn read(path: &Path, source: std::io::Error) -> Self {
        Self::Read { path: path.to_path_buf(), source }
    }

    /// The file at fault.
    pub fn path(&self) -> &Path {
        match self {
            Self::Read { path, .. }
            | Self::Write { path, .. }
            | Self::Parse { path, .. }
            | Self::Core { path, .. }
            | Self::TooManyCells { path, .. } => path,
        }
    }

    /// The 1-based line at fault; 0 when the whole file is (or it cannot be read).
    pub fn line(&self) -> usize {
        match self {
            Self::Parse { line, .. } | Self::Core { line, .. } => *line,
            Self::Read { .. } | Self::Write { .. } | Self::TooManyCells { .. } => 0,
        }
    }
}

/// Results of `tpl-io`.
pub type Result<T> = std::result::Result<T, IoError>;
