//! Matrix files ([`docs/formats.md`](tpl_core::guide::formats) §2): transition matrices, square,
//! finite, non-negative, every row summing to 1 within [`tpl_core::ROW_SUM_TOLERANCE`]. Dense
//! today, as numeric text (one row per line, §1) or a JSON array of arrays; [`MatrixFormat`] leaves
//! room for a sparse form (`from,to,p`) beside them.

use std::path::Path;

use tpl_core::{CoreError, TransitionMatrix};

use crate::error::{IoError, Result};
use crate::{npy, text};

/// How a matrix file is laid out ([`docs/formats.md`](tpl_core::guide::formats) §2). New layouts
/// (the sparse `from,to,p` form) come as new variants, hence `#[non_exhaustive]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MatrixFormat {
    /// One row per line, values separated by commas and/or whitespace (§1).
    DenseText,
    /// One JSON array of arrays, a row each.
    DenseJson,
    /// A two-dimensional NumPy `.npy` array ([`crate::npy`], §12).
    Npy,
    /// A CSV of the non-zero entries under the header `from,to,p`, one per line, 0-based state
    /// ids, in any order: read as a sparse matrix ([`TransitionMatrix::from_entries`]).
    SparseCsv,
}

/// The header of a sparse matrix file ([`MatrixFormat::SparseCsv`]).
pub const SPARSE_HEADER: &str = "from,to,p";

impl MatrixFormat {
    /// The format a path names: [`MatrixFormat::DenseJson`] for `.json`,
    /// [`MatrixFormat::Npy`] for `.npy` (any case), [`MatrixFormat::DenseText`] otherwise
    /// (standard input included) — which [`read_matrix`] reads as
    /// [`MatrixFormat::SparseCsv`] when its first line is the header `from,to,p` (any case), or,
    /// normalised, `from,to,count`.
    pub fn of_path(path: &Path) -> Self {
        if text::is_json(path) {
            Self::DenseJson
        } else if npy::is_npy(path) {
            Self::Npy
        } else {
            Self::DenseText
        }
    }
}

/// Reads and validates the matrix file `path` in the format its name says
/// ([`MatrixFormat::of_path`]); `normalize` rescales every row to sum to 1 before the
/// checks (`--normalize`, [`docs/formats.md`](tpl_core::guide::formats) §2).
///
/// # Errors
/// As [`read_matrix_as`].
pub fn read_matrix(path: &Path, normalize: bool) -> Result<TransitionMatrix> {
    read_matrix_as(path, MatrixFormat::of_path(path), normalize)
}

/// Reads and validates the matrix file `path` laid out as `format`
/// ([`docs/formats.md`](tpl_core::guide::formats) §2).
///
/// # Errors
/// A file that cannot be read, a token that is not a finite number, no rows, ragged rows,
/// or a matrix [`TransitionMatrix::new`] refuses, naming the file and the line of the
/// offending row (JSON: the line and column of a syntax error).
pub fn read_matrix_as(path: &Path, format: MatrixFormat, normalize: bool) -> Result<TransitionMatrix> {
    let Entries { data, rows } = match format {
        MatrixFormat::DenseJson => {
            let rows: Vec<Vec<f64>> =
                serde_json::from_str(&text::read(path)?).map_err(|e| text::json_error(path, &e))?;
            let shape = rows.iter().map(|r| (0, r.len())).collect();
            Entries { data: rows.concat(), rows: shape }
        }
        MatrixFormat::DenseText => {
            let content = text::read(path)?;
            if sparse_header(path, &content, normalize)?.is_some() {
                return sparse_text(path, &content, normalize);
            }
            dense_text(path, &content)?
        }
        MatrixFormat::SparseCsv => {
            let content = text::read(path)?;
            if sparse_header(path, &content, normalize)?.is_none() {
                let message = format!("no header {SPARSE_HEADER} (a sparse matrix file starts with it)");
                return Err(IoError::parse(path, 0, message));
            }
            return sparse_text(path, &content, normalize);
        }
        MatrixFormat::Npy => {
            let array = npy::read_npy(path)?;
            let &[height, width] = array.shape.as_slice() else {
                let message =
                    format!("a matrix needs a two-dimensional array, this one has shape {:?}", array.shape);
                return Err(IoError::parse(path, 0, message));
            };
            Entries { data: array.to_f64(path)?, rows: vec![(0, width); height] }
        }
    };
    let Some(&(_, width)) = rows.first() else {
        return Err(IoError::parse(path, 0, "no matrix rows (empty file)"));
    };
    if let Some(k) = rows.iter().position(|&(_, len)| len != width) {
        let (line, len) = rows[k];
        let message = format!("row {} has {len} values but row 1 has {width} (ragged rows)", k + 1);
        return Err(IoError::parse(path, line, message));
    }
    let n = rows.len();
    if width != n {
        // As TransitionMatrix::new names it: the first row, whose length is not n.
        let source = CoreError::NotSquare { row: 1, len: width, expected: n };
        return Err(IoError::core(path, rows[0].0, source));
    }
    let built = if normalize {
        TransitionMatrix::normalized_row_major(n, data)
    } else {
        TransitionMatrix::from_row_major(n, data)
    };
    built.map_err(|source| {
        let row = match source {
            CoreError::NotSquare { row, .. }
            | CoreError::BadEntry { row, .. }
            | CoreError::RowSum { row, .. }
            | CoreError::ZeroRow { row } => row,
            _ => 0,
        };
        let line = row.checked_sub(1).and_then(|r| rows.get(r)).map_or(0, |&(line, _)| line);
        IoError::core(path, line, source)
    })
}

/// The entries of a matrix file row after row, and each row's line (0 when the format has
/// none) and length.
#[derive(Default)]
struct Entries {
    data: Vec<f64>,
    rows: Vec<(usize, usize)>,
}

/// What the header of a sparse text file says its entries are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SparseEntries {
    /// `from,to,p`: the entries of a transition matrix.
    Probabilities,
    /// `from,to,count`: transition counts, what `tpl estimate --sparse` writes (read as a
    /// matrix only when its rows are normalised).
    Counts,
}

/// The header of a sparse text matrix file: its first line that is neither blank nor a
/// comment, when its first name is `from` (any case, spaces around the names allowed); `None`
/// for a dense file. `from,to,p` heads a matrix and `from,to,count` transition counts, which
/// are read only with `normalize` (their rows rescaled to sum to 1 are the forward matrix).
///
/// # Errors
/// Any other header that starts with `from` (other or extra columns), and a counts header
/// without `normalize`, naming the line and the header.
fn sparse_header(path: &Path, content: &str, normalize: bool) -> Result<Option<SparseEntries>> {
    let Some((k, line)) =
        content.lines().map(str::trim).enumerate().find(|(_, l)| !l.is_empty() && !l.starts_with('#'))
    else {
        return Ok(None);
    };
    let names: Vec<String> = line.split(',').map(|n| n.trim().to_lowercase()).collect();
    if names[0] != "from" {
        return Ok(None);
    }
    let header = |n: &str| n.split(',').eq(names.iter().map(String::as_str));
    let entries = if header(SPARSE_HEADER) {
        SparseEntries::Probabilities
    } else if header(crate::SPARSE_COUNTS_HEADER) {
        SparseEntries::Counts
    } else {
        let message = format!(
            "header `{}`: a sparse matrix file has exactly the columns {SPARSE_HEADER} (one line per \
             non-zero entry)",
            text::clipped(line)
        );
        return Err(IoError::parse(path, k + 1, message));
    };
    if entries == SparseEntries::Counts && !normalize {
        let message = format!(
            "header `{}`: this is a file of transition counts (the transition_counts.csv of `tpl estimate \
             --sparse`), not a matrix: give the transition_forward.csv or transition_backward.csv beside it, \
             or normalise its rows (--normalize) to read them as the forward matrix",
            text::clipped(line)
        );
        return Err(IoError::parse(path, k + 1, message));
    }
    Ok(Some(entries))
}

/// The sparse matrix of the text `content` of a `from,to,p` file (or, normalised, of a
/// `from,to,count` one; its header checked by [`sparse_header`]): every entry checked as it is
/// read (the line of a bad one named), n = 1 + the largest state id, and every state 0..n−1 with
/// at least one entry of its own — found before anything of size n is allocated.
fn sparse_text(path: &Path, content: &str, normalize: bool) -> Result<TransitionMatrix> {
    let mut entries: Vec<(usize, usize, f64)> = Vec::new();
    // The position and line of each entry, to name the line of one the matrix refuses.
    let mut lines: Vec<(usize, usize, usize)> = Vec::new();
    let mut header = false;
    text::for_each_csv_fields(path, content, |line, fields| {
        if !header {
            header = true;
            return Ok(());
        }
        let [from, to, p] = fields else {
            let message = format!("{} fields, expected 3 (from,to,p)", fields.len());
            return Err(IoError::parse(path, line, message));
        };
        let id = |name: &str, token: &str| {
            token.parse::<u32>().map(|v| v as usize).map_err(|_| {
                let why =
                    format!("{name} `{token}` is not a state id (a whole number from 0 to {})", u32::MAX - 1);
                IoError::parse(path, line, why)
            })
        };
        let value = text::finite_f64(p).map_err(|why| IoError::parse(path, line, format!("p: {why}")))?;
        let (from, to) = (id("from", from)?, id("to", to)?);
        entries.push((from, to, value));
        lines.push((from, to, line));
        Ok(())
    })?;
    let Some(n) = entries.iter().map(|&(from, to, _)| from.max(to) + 1).max() else {
        return Err(IoError::parse(path, 0, "no matrix entries under the header from,to,p"));
    };
    // Every state needs a row: n ≤ the number of distinct `from`, checked without a table of n.
    let mut rows: Vec<usize> = entries.iter().map(|e| e.0).collect();
    rows.sort_unstable();
    rows.dedup();
    if let Some(missing) = (0..n).zip(rows.iter().copied().chain([n])).find(|(k, id)| k != id).map(|(k, _)| k)
    {
        let message = format!(
            "state {missing} has no entry of its own (ids run from 0 to {}; every state needs a row)",
            n - 1
        );
        return Err(IoError::parse(path, 0, message));
    }
    let built = if normalize {
        TransitionMatrix::normalized_entries(n, entries)
    } else {
        TransitionMatrix::from_entries(n, entries)
    };
    built.map_err(|source| {
        // The lines that give a position: a bad value's, the second of a repeated one's.
        let at = |from: usize, to: usize| lines.iter().filter(move |e| (e.0, e.1) == (from, to)).map(|e| e.2);
        let line = match source {
            CoreError::BadEntry { row, col, .. } => at(row - 1, col - 1).next(),
            CoreError::RepeatedEntry { from, to } => at(from, to).nth(1),
            _ => None,
        };
        IoError::core(path, line.unwrap_or(0), source)
    })
}

/// The sparse text form ([`docs/formats.md`](tpl_core::guide::formats) §2) of `matrix`: the
/// header `from,to,p` and one line per non-zero entry, rows in order, under `#` comment lines
/// of `comment`. For a dense matrix, its non-zero entries.
pub fn sparse_matrix_text(comment: &str, matrix: &TransitionMatrix) -> String {
    let entries = matrix.rows().enumerate().flat_map(|(from, row)| {
        let entries: Vec<(usize, usize, f64)> = match row.sparse_parts() {
            Some((0.0, cols, vals)) => {
                cols.iter().zip(vals).map(|(&to, &p)| (from, to as usize, p)).collect()
            }
            _ => row.iter().enumerate().filter(|(_, p)| **p != 0.0).map(|(to, &p)| (from, to, p)).collect(),
        };
        entries
    });
    sparse_entries_text(comment, SPARSE_HEADER, entries)
}

/// `comment` as `#` lines, then `header` and one line `from,to,value` per entry: the sparse
/// text form of a matrix or of counts.
pub(crate) fn sparse_entries_text<V: std::fmt::Display>(
    comment: &str,
    header: &str,
    entries: impl Iterator<Item = (usize, usize, V)>,
) -> String {
    use std::fmt::Write as _;
    let mut out = comment_lines(comment);
    out.push_str(header);
    out.push('\n');
    for (from, to, v) in entries {
        let _ = writeln!(out, "{from},{to},{v}");
    }
    out
}

/// `comment` as `#` lines, one per line of it.
fn comment_lines(comment: &str) -> String {
    comment.lines().map(|line| format!("# {line}\n")).collect()
}

/// Bytes of text per part of a dense matrix file parsed on its own thread.
const PART: usize = 1 << 22;

/// The numbers of a dense text matrix `content`, row after row, and each row's line and
/// length: its lines are split into parts of about [`PART`] bytes, parsed in parallel, and
/// the first error in file order is the one reported.
fn dense_text(path: &Path, content: &str) -> Result<Entries> {
    // Part boundaries just after a newline, and the first line of each part.
    let mut parts = vec![(0usize, 1usize)];
    let bytes = content.as_bytes();
    while let Some(&(start, line)) = parts.last() {
        let Some(cut) = bytes.get(start + PART..).and_then(|rest| rest.iter().position(|&b| b == b'\n'))
        else {
            break;
        };
        let end = start + PART + cut + 1;
        let lines = bytes[start..end].iter().filter(|&&b| b == b'\n').count();
        parts.push((end, line + lines));
    }
    let ends: Vec<usize> = parts.iter().skip(1).map(|&(start, _)| start).chain([content.len()]).collect();
    let parsed: Vec<Result<Entries>> = {
        use rayon::prelude::*;
        parts
            .par_iter()
            .zip(ends.par_iter())
            .map(|(&(start, first_line), &end)| {
                let mut part = Entries::default();
                text::for_each_record_from(path, &content[start..end], first_line, |r| {
                    part.rows.push((r.line, r.values.len()));
                    part.data.extend(r.values);
                    Ok(())
                })?;
                Ok(part)
            })
            .collect()
    };
    let mut all = Entries::default();
    for part in parsed {
        let part = part?;
        all.data.extend(part.data);
        all.rows.extend(part.rows);
    }
    Ok(all)
}

/// The dense text form ([`docs/formats.md`](tpl_core::guide::formats) §2) of `rows` (each row's
/// numbers already formatted), one row per line under `#` comment lines of `comment`: what `tpl
/// estimate` and `tpl simulate` write (§9–10).
pub fn matrix_text(comment: &str, rows: impl Iterator<Item = Vec<String>>) -> String {
    let mut out = comment_lines(comment);
    for row in rows {
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

/// The `cells.csv` text ([`docs/formats.md`](tpl_core::guide::formats) §9): `index,cell_id`, the
/// cell id of each row and column of the matrices estimated from a user stream.
pub fn cells_text(cell_ids: &[u64]) -> String {
    use std::fmt::Write as _;
    let mut out = String::from("index,cell_id\n");
    for (i, id) in cell_ids.iter().enumerate() {
        let _ = writeln!(out, "{i},{id}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(name: &str, text: &str) -> std::result::Result<TransitionMatrix, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        read_matrix(&path, false).map_err(|e| e.to_string().replace(&path.display().to_string(), "P"))
    }

    #[test]
    fn text_and_json_give_the_same_matrix_and_errors_name_the_line() {
        let text = read("p.csv", "# c\n0.5, 0.5\n\n0 1\n").unwrap();
        assert_eq!(text, read("p.json", "[[0.5,0.5],[0,1]]").unwrap());
        assert_eq!(
            read("p.csv", "1,0\n0.5\n").unwrap_err(),
            "P:2: row 2 has 1 values but row 1 has 2 (ragged rows)"
        );
        assert!(read("p.csv", "1,0\n0.5,0.4\n").unwrap_err().starts_with("P:2: "));
        assert_eq!(read("p.csv", "# nothing\n").unwrap_err(), "P: no matrix rows (empty file)");
        assert!(read("p.json", "[[1,0],\n[0,").unwrap_err().starts_with("P:2: "));
        assert_eq!(matrix_text("a\nb", [vec!["1".to_string(), "0".into()]].into_iter()), "# a\n# b\n1,0\n");
        assert_eq!(cells_text(&[3, 9]), "index,cell_id\n0,3\n1,9\n");
    }
}
