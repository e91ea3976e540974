//! # tpl-io
//!
//! Every file format `tpl` reads or writes ([`docs/formats.md`](tpl_core::guide::formats)), in one
//! place for the `tpl` command line and the Python package `temporal_privacy`: the parsing of
//! files, with errors that name the file, line, column and value ([`IoError`]). What the values
//! must be (a row-stochastic matrix, a dense user stream, a budget ≥ 0) is `tpl-core`'s to check;
//! this crate reads the text and hands it over. It holds no algorithm.
//!
//! - [`text`] — the conventions of every text input (§1): standard input as `-`, comments,
//!   blank lines, the parser of numbers typed by people ([`text::finite_f64`]);
//! - [`read_matrix`], [`read_matrix_as`], [`MatrixFormat`], [`matrix_text`],
//!   [`sparse_matrix_text`] — matrix files (§2), dense or sparse (`from,to,p`); [`cells_text`],
//!   [`estimate_files`] — the files `tpl estimate` writes (§9);
//! - [`read_budgets`] — budget files (§3);
//! - [`read_prior`], [`read_initial_distribution`] — prior files and initial
//!   distributions (§4);
//! - [`read_counts`], [`read_counts_prefix`], [`Counts`], [`counts_text`] — counts files
//!   (§5) and releases read back as counts (§7–8);
//! - [`release_csv_text`], [`ReleaseRow`] — the release CSV (§7), read back as counts;
//! - [`read_user_stream`], [`count_user_stream`], [`StreamCounts`], [`stream_text`] — user
//!   stream files (§6), the counting reader in bounded memory;
//! - [`CsvWriter`], [`csv_text`], [`write_csv_records`] — the writer of every CSV file and
//!   output (§1, §7, §9–10);
//! - [`npy`] — NumPy's `.npy` arrays in and out (§11), for large runs without text.
//!
//! ```
//! use tpl_core::StepRange;
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("stream.csv");
//! std::fs::write(&path, "timestamp_bucket,user_id,location_cell\n0,7,1\n0,8,2\n1,7,2\n1,8,2\n")?;
//! let stream = tpl_io::read_user_stream(&path)?;
//! assert_eq!((stream.states.clone(), stream.cell_ids.clone()), (vec![vec![0, 1], vec![1, 1]], vec![1, 2]));
//! let counted = tpl_io::count_user_stream(&path, StepRange::ALL)?;
//! assert_eq!((counted.users, counted.steps), (2, 2));
//! assert_eq!(counted.counts(&path)?.count(0, 1), 1); // cell 1 → cell 2 once
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod budgets;
mod counts;
mod csv_write;
mod error;
mod estimate_files;
mod matrix;
pub mod npy;
mod probabilities;
mod release_csv;
pub mod text;
mod user_stream;

pub use budgets::read_budgets;
pub use counts::{Counts, counts_text, read_counts, read_counts_prefix};
pub use csv_write::{CsvWriter, csv_text, write_csv_records};
pub use error::{IoError, Result};
pub use estimate_files::{ESTIMATE_FILES, SPARSE_COUNTS_HEADER, estimate_files};
pub use matrix::{
    MatrixFormat, SPARSE_HEADER, cells_text, matrix_text, read_matrix, read_matrix_as, sparse_matrix_text,
};
pub use probabilities::{read_initial_distribution, read_prior};
pub use release_csv::{ReleaseRow, release_csv_text};
pub use user_stream::{
    HEADER as STREAM_HEADER, StreamCounts, count_user_stream, parse_user_stream, read_user_stream,
    stream_text,
};

/// The largest number of distinct cells a user stream may have
/// ([`docs/formats.md`](tpl_core::guide::formats) §6.1): the matrices estimated from it are three n
/// × n tables of 8-byte numbers, 400 MB at n = 4096.
pub const MAX_CELLS: usize = tpl_core::TransitionCounts::DENSE_STATES;

/// The largest number of distinct cells whose moves [`count_user_stream`] counts, for sparse
/// estimates ([`StreamCounts::sparse_counts`], `tpl estimate --sparse`): only the non-zero counts
/// are kept, and the reader stores a cell in 2 bytes per (bucket, user).
pub const MAX_SPARSE_CELLS: usize = 65_534;

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
