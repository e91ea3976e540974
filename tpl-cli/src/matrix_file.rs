//! Reading transition matrices: `.json` (an array of arrays) or text (one row per line,
//! see [`crate::text`]). The one matrix parser of the binary.

use std::path::Path;

use clap::Args;
use tpl_core::{CoreError, TransitionMatrix};

use crate::error::{CliError, Result};
use crate::text;

/// How matrix files are turned into matrices; shared by every command that reads one.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct MatrixOptions {
    /// Rescale every matrix row to sum to 1 instead of rejecting rows that do not.
    #[arg(long)]
    pub normalize: bool,
    /// Apply Laplacian smoothing (p + S)/Σ(p + S) to every row (TKDE eq. 28); larger S means
    /// weaker correlation.
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = crate::text::finite_f64)]
    pub smoothing: Option<f64>,
}

/// Reads and validates a matrix, then applies `opts` (normalisation before validation,
/// smoothing after). Errors name the file and the line of the offending row.
pub fn read_matrix(path: &Path, opts: &MatrixOptions) -> Result<TransitionMatrix> {
    let matrix = read_raw(path, opts.normalize)?;
    match opts.smoothing {
        Some(s) => matrix.smoothed(s).map_err(|e| CliError::flag("--smoothing", e)),
        None => Ok(matrix),
    }
}

/// [`read_matrix`] for a stream of `cells` cells read from `counts`: the `side` ("backward"
/// or "forward") matrix must be `cells`×`cells`; otherwise an error names the file and both
/// sizes. The one size check of every command that pairs a matrix with counts.
pub fn read_matrix_for(
    path: &Path,
    opts: &MatrixOptions,
    side: &str,
    cells: usize,
    counts: &Path,
) -> Result<TransitionMatrix> {
    fitted(read_matrix(path, opts)?, path, side, cells, counts)
}

/// The size check of [`read_matrix_for`] on a matrix already read from `path`.
pub fn fitted(
    m: TransitionMatrix,
    path: &Path,
    side: &str,
    cells: usize,
    counts: &Path,
) -> Result<TransitionMatrix> {
    if m.n() != cells {
        return Err(CliError::parse(
            path,
            0,
            format!("the {side} matrix is {0}×{0} but {1} has {cells} cells", m.n(), text::name(counts)),
        ));
    }
    Ok(m)
}

fn read_raw(path: &Path, normalize: bool) -> Result<TransitionMatrix> {
    let content = text::read(path)?;
    let (rows, lines): (Vec<Vec<f64>>, Vec<usize>) = if text::is_json(path) {
        let rows: Vec<Vec<f64>> = serde_json::from_str(&content).map_err(|e| text::json_error(path, &e))?;
        let lines = vec![0; rows.len()];
        (rows, lines)
    } else {
        text::records(path, &content)?.into_iter().map(|r| (r.values, r.line)).unzip()
    };
    if rows.is_empty() {
        return Err(CliError::parse(path, 0, "no matrix rows (empty file)"));
    }
    if let Some(k) = rows.iter().position(|r| r.len() != rows[0].len()) {
        let message = format!(
            "row {} has {} values but row 1 has {} (ragged rows)",
            k + 1,
            rows[k].len(),
            rows[0].len()
        );
        return Err(CliError::parse(path, lines[k], message));
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
        let line = if row > 0 { lines[row - 1] } else { 0 };
        let context =
            if line > 0 { format!("{}:{line}: ", path.display()) } else { format!("{}: ", path.display()) };
        CliError::Core { context, source }
    })
}

/// The matrix file text of `rows` (one row of numbers per line), under `#` comment lines.
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
