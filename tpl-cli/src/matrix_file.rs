//! The matrix options shared by every command that reads a matrix file (`--normalize`,
//! `--smoothing`), over `tpl-io`'s reader ([`docs/formats.md`](tpl_core::guide::formats) §2).

use std::path::Path;

use clap::Args;
use tpl_core::TransitionMatrix;
use tpl_io::text;

use crate::error::{CliError, Result};

/// How matrix files are turned into matrices; shared by every command that reads one.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct MatrixOptions {
    /// Rescale every matrix row to sum to 1 instead of rejecting rows that do not.
    #[arg(long)]
    pub normalize: bool,
    /// Apply Laplacian smoothing (p + S)/Σ(p + S) to every row (TKDE eq. 28); larger S means
    /// weaker correlation.
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = tpl_io::text::finite_f64)]
    pub smoothing: Option<f64>,
}

/// Reads and validates a matrix, then applies `opts` (normalisation before validation,
/// smoothing after). Errors name the file and the line of the offending row.
pub fn read_matrix(path: &Path, opts: &MatrixOptions) -> Result<TransitionMatrix> {
    let matrix = tpl_io::read_matrix(path, opts.normalize)?;
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
