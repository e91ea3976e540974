//! User stream files ([`docs/formats.md`](tpl_core::guide::formats) §6): header
//! `timestamp_bucket,user_id,location_cell`, one row per user per bucket (dense). Values are any
//! whole numbers 0..2⁶⁴−1; nothing is allocated by their size. What a stream must be (every user at
//! every bucket once, buckets evenly spaced) is [`tpl_core::UserStream`]'s to say; this module only
//! reads the file:
//!
//! - [`read_user_stream`] reads the records and hands them to
//!   [`UserStream::from_records`], which checks them and builds the dense stream
//!   (`states[t][u]`, the cell ids ascending);
//! - [`count_user_stream`] counts the moves between consecutive steps as it reads, never
//!   holding the file: memory is a few numbers per user and per bucket plus the
//!   cells × cells counts while the rows come in bucket order (as `tpl simulate` writes
//!   them, or a logger appends them); rows in another order, and standard input or a pipe
//!   (which cannot be read twice), are held at 2 bytes per (bucket, user) pair until the
//!   end. Its checks are those of [`UserStream::from_records`], done as the rows come, with
//!   the same errors (§6.1).
//!
//! Errors name the file and, for a row at fault, its line
//! ([`docs/formats.md`](tpl_core::guide::formats) §1).

use std::path::Path;

use tpl_core::{CoreError, StepRange, TransitionCounts, UserStream};

use crate::error::{IoError, Result};
use crate::text;
use crate::{MAX_CELLS, MAX_SPARSE_CELLS};

mod counting;
mod scan;
#[cfg(test)]
mod tests;

/// The header of a user stream file ([`docs/formats.md`](tpl_core::guide::formats) §6).
pub const HEADER: &str = "timestamp_bucket,user_id,location_cell";

/// The columns of [`HEADER`].
const COLUMNS: [&str; 3] = ["timestamp_bucket", "user_id", "location_cell"];

/// Reads the user stream file `path` ([`docs/formats.md`](tpl_core::guide::formats) §6; `-`:
/// standard input) whole: rows in any order, checked and made dense by
/// [`UserStream::from_records`]. Memory: the records (32 bytes each) and the dense stream;
/// [`count_user_stream`] counts moves without holding them.
///
/// # Errors
/// A file that cannot be read, a header or row that is malformed (naming the line, column
/// and value), a stream [`UserStream::from_records`] refuses (a pair given twice names the
/// line of its second row), or more than [`MAX_CELLS`] distinct cells.
pub fn read_user_stream(path: &Path) -> Result<UserStream> {
    dense(path, &mut *text::open(path)?)
}

/// [`read_user_stream`] on the text of a user stream file
/// ([`docs/formats.md`](tpl_core::guide::formats) §6) held in memory; `path` names it in errors.
///
/// # Errors
/// As [`read_user_stream`].
pub fn parse_user_stream(path: &Path, content: &str) -> Result<UserStream> {
    dense(path, &mut content.as_bytes())
}

/// The dense stream of the user stream file `input`, named `path` in errors.
fn dense(path: &Path, input: &mut dyn std::io::Read) -> Result<UserStream> {
    let mut records: Vec<(u64, u64, u64)> = Vec::new();
    let mut lines: Vec<usize> = Vec::new();
    scan::scan(path, input, |b, u, c, line| {
        records.push((b, u, c));
        lines.push(line);
        Ok(true)
    })?;
    let stream = UserStream::from_records(&records).map_err(|source| {
        let line = match source {
            CoreError::StreamDuplicate { record, .. } => lines.get(record).copied().unwrap_or(0),
            _ => 0,
        };
        IoError::core(path, line, source)
    })?;
    if stream.cells() > MAX_CELLS {
        return Err(IoError::TooManyCells {
            path: path.to_path_buf(),
            cells: stream.cells(),
            limit: MAX_CELLS,
        });
    }
    Ok(stream)
}

/// The transitions of a user stream file, counted as it was read ([`count_user_stream`]).
#[derive(Debug, Clone)]
pub struct StreamCounts {
    /// The distinct cell ids of the file, ascending.
    pub cell_ids: Vec<u64>,
    /// The moves between cells (row i: `cell_ids[i]`); `None` past [`MAX_SPARSE_CELLS`] cells.
    counts: Option<TransitionCounts>,
    /// Number of users.
    pub users: usize,
    /// Number of steps (distinct buckets).
    pub steps: usize,
    /// The first bucket and the spacing of the buckets (1 when there is one bucket).
    pub buckets: (u64, u64),
}

impl StreamCounts {
    /// True when the cell ids are exactly 0..k−1 (each id is its own index), as
    /// [`UserStream::ids_are_indices`].
    pub fn ids_are_indices(&self) -> bool {
        self.cell_ids.last().is_some_and(|&m| m as usize == self.cell_ids.len() - 1)
    }

    /// The counts of the moves within the step range asked for, indexed as `cell_ids`
    /// ([`docs/formats.md`](tpl_core::guide::formats) §6.1).
    ///
    /// # Errors
    /// More than [`MAX_CELLS`] distinct cells (the limit of dense matrices), naming the file
    /// `path`.
    pub fn counts(self, path: &Path) -> Result<TransitionCounts> {
        self.counts_within(path, MAX_CELLS)
    }

    /// The counts as [`StreamCounts::counts`], for up to [`MAX_SPARSE_CELLS`] distinct cells:
    /// past [`TransitionCounts::DENSE_STATES`] only the non-zero counts are kept and the
    /// matrices estimated from them are sparse.
    ///
    /// # Errors
    /// More than [`MAX_SPARSE_CELLS`] distinct cells, naming the file `path`.
    pub fn sparse_counts(self, path: &Path) -> Result<TransitionCounts> {
        self.counts_within(path, MAX_SPARSE_CELLS)
    }

    fn counts_within(self, path: &Path, limit: usize) -> Result<TransitionCounts> {
        let cells = self.cell_ids.len();
        match self.counts {
            Some(counts) if cells <= limit => Ok(counts),
            _ => Err(IoError::TooManyCells { path: path.to_path_buf(), cells, limit }),
        }
    }
}

/// Reads the user stream file `path` ([`docs/formats.md`](tpl_core::guide::formats) §6; `-`:
/// standard input) and counts the moves between consecutive steps that both lie in `range`
/// (numbered from 1; as [`TransitionCounts::from_steps`]; whether the range lies within the stream
/// is for the caller to check against [`StreamCounts::steps`]), in bounded memory (see the module).
///
/// # Errors
/// The errors of [`read_user_stream`], except that more than [`MAX_CELLS`] cells are
/// reported by [`StreamCounts::counts`].
pub fn count_user_stream(path: &Path, range: StepRange) -> Result<StreamCounts> {
    // Only a regular file can be read a second time (not standard input, nor a pipe such as
    // `--stream <(zcat s.csv.gz)`).
    let again = !text::is_stdin(path) && std::fs::metadata(path).is_ok_and(|m| m.is_file());
    if again {
        let mut sorted = counting::InOrder::new(path, range);
        if scan::scan(path, &mut *text::open(path)?, |b, u, c, line| sorted.row(b, u, c, line))? {
            return sorted.finish();
        }
    }
    // A row before an earlier bucket's: read again, holding every row.
    let mut held = counting::Held::default();
    scan::scan(path, &mut *text::open(path)?, |b, u, c, line| {
        held.row(b, u, c, line);
        Ok(true)
    })?;
    held.into_counts(path, range)
}

/// The user stream file text ([`docs/formats.md`](tpl_core::guide::formats) §6) of `states`
/// (`states[t][u]`: the cell of user u at bucket t, ids as written): what `tpl simulate` writes
/// (§10).
pub fn stream_text(states: &[Vec<usize>]) -> String {
    use std::fmt::Write as _;
    let mut out = format!("{HEADER}\n");
    for (t, step) in states.iter().enumerate() {
        for (u, c) in step.iter().enumerate() {
            let _ = writeln!(out, "{t},{u},{c}");
        }
    }
    out
}
