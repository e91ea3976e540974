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
    let (rows, lines): (Vec<Vec<f64>>, Vec<usize>) = match format {
        MatrixFormat::DenseJson => {
            let rows: Vec<Vec<f64>> =
                serde_json::from_str(&text::read(path)?).map_err(|e| text::json_error(path, &e))?;
            let lines = vec![0; rows.len()];
            (rows, lines)
        }
        MatrixFormat::DenseText => {
            text::records(path, &text::read(path)?)?.into_iter().map(|r| (r.values, r.line)).unzip()
        }
        MatrixFormat::Npy => {
            let array = npy::read_npy(path)?;
            if array.shape.len() != 2 {
                let message =
                    format!("a matrix needs a two-dimensional array, this one has shape {:?}", array.shape);
                return Err(IoError::parse(path, 0, message));
            }
            let rows = array.to_rows(path)?;
            let lines = vec![0; rows.len()];
            (rows, lines)
        }
    };
    if rows.is_empty() {
        return Err(IoError::parse(path, 0, "no matrix rows (empty file)"));
    }
    if let Some(k) = rows.iter().position(|r| r.len() != rows[0].len()) {
        let message = format!(
            "row {} has {} values but row 1 has {} (ragged rows)",
            k + 1,
            rows[k].len(),
            rows[0].len()
        );
        return Err(IoError::parse(path, lines[k], message));
    }
    let built = if normalize { TransitionMatrix::normalized(rows) } else { TransitionMatrix::new(rows) };
    built.map_err(|source| {
        let row = match source {
            CoreError::NotSquare { row, .. }
            | CoreError::BadEntry { row, .. }
            | CoreError::RowSum { row, .. }
            | CoreError::ZeroRow { row } => row,
            _ => 0,
        };
        let line = row.checked_sub(1).and_then(|r| lines.get(r)).copied().unwrap_or(0);
        IoError::core(path, line, source)
    })
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
