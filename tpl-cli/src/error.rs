//! The error type of the `tpl` binary: every failure becomes one line on stderr and exit
//! code 2 (bad input, usage, or output that cannot be written), following the ripgrep/cargo
//! convention; 1 is left to failures that are not the user's.

use std::path::{Path, PathBuf};

use thiserror::Error;
use tpl_alloc::AllocError;
use tpl_compare::CompareError;
use tpl_core::CoreError;
use tpl_io::IoError;
use tpl_mechanisms::MechError;
use tpl_postprocess::PostprocessError;

/// What can go wrong in a `tpl` command.
#[derive(Debug, Error)]
pub enum CliError {
    /// A file that cannot be read or is malformed, naming the file, line, column and value.
    #[error(transparent)]
    Io(#[from] IoError),
    /// A value rejected by `tpl-core`, with the file (if any) it came from.
    #[error("{context}{source}")]
    Core {
        /// "FILE:LINE: " or the flag name, or empty.
        context: String,
        /// The library's reason.
        source: CoreError,
    },
    /// An allocation that cannot be made, with the file or flag at fault.
    #[error("{context}{source}")]
    Alloc {
        /// "FILE: " or the flag name, or empty.
        context: String,
        /// The allocator's reason.
        source: AllocError,
    },
    /// A mechanism or stream-scheme error, with the file or flag at fault.
    #[error("{context}{source}")]
    Mech {
        /// "FILE: " or the flag name.
        context: String,
        /// The mechanism's reason.
        source: MechError,
    },
    /// A post-processing error, with the file (and line) or flag at fault.
    #[error("{context}{source}")]
    Post {
        /// "FILE:LINE: ", "FILE: " or the flag name.
        context: String,
        /// The estimator's reason.
        source: PostprocessError,
    },
    /// A comparison, simulation or scoring error, with the file or flag at fault.
    #[error("{context}{source}")]
    Compare {
        /// "FILE: " or the flag name, or empty.
        context: String,
        /// The comparison's reason.
        source: CompareError,
    },
    /// A bad command-line value.
    #[error("{0}")]
    Usage(String),
    /// Output that could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// Where.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl From<tpl_report::ReportError> for CliError {
    fn from(e: tpl_report::ReportError) -> Self {
        match e {
            tpl_report::ReportError::Write { path, source } => Self::Write { path, source },
            e => Self::Usage(e.to_string()),
        }
    }
}

impl CliError {
    /// The process exit code: 2 for every error a user can cause and fix (files, values,
    /// usage, a folder or device that cannot be written).
    pub fn exit_code(&self) -> i32 {
        2
    }

    /// A parse error at `line` of `path` (0: the whole file).
    pub fn parse(path: &Path, line: usize, message: impl Into<String>) -> Self {
        Self::Io(IoError::parse(path, line, message))
    }

    /// A core error about a command-line flag.
    pub fn flag(flag: &str, source: CoreError) -> Self {
        Self::Core { context: format!("{flag}: "), source }
    }
}

impl From<CoreError> for CliError {
    fn from(source: CoreError) -> Self {
        Self::Core { context: String::new(), source }
    }
}

impl From<CompareError> for CliError {
    /// A parameter of the comparison is a flag of the same name: a usage error naming it.
    fn from(source: CompareError) -> Self {
        match source {
            CompareError::InvalidParameter { name, value, reason } => {
                Self::Usage(format!("--{name} {value}: {reason}"))
            }
            source => Self::Compare { context: String::new(), source },
        }
    }
}

/// Results of the CLI.
pub type Result<T> = std::result::Result<T, CliError>;
