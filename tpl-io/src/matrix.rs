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
    /// A two-dimensional NumPy `.npy` array ([`crate::npy`], §11).
    Npy,
}

impl MatrixFormat {
    /// The format a path names: [`MatrixFormat::DenseJson`] for `.json`,
    /// [`MatrixFormat::Npy`] for `.npy` (any case), [`MatrixFormat::DenseText`] otherwise
    /// (standard input included).
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
        MatrixFormat::DenseText => dense_text(path, &text::read(path)?)?,
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
    let mut out = String::new();
    for line in comment.lines() {
        out.push_str("# ");
        out.push_str(line);
        out.push('\n');
    }
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
