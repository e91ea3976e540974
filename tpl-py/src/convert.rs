//! numpy arrays in, library types out, and library errors as `TplError`.

use std::path::{Path, PathBuf};

use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray2};
use pyo3::prelude::*;
use tpl_core::{Correlation, TransitionMatrix};

use crate::TplError;

/// A NumPy vector of f64 handed to Python.
pub type Vector<'py> = Bound<'py, PyArray1<f64>>;

/// A NumPy matrix of f64 handed to Python.
pub type Matrix<'py> = Bound<'py, PyArray2<f64>>;

/// The longest horizon a call accepts (as the command line's `--horizon`): at 10⁸ steps a
/// leakage series alone is 1.6 GB.
pub const MAX_HORIZON: usize = 100_000_000;

/// A `TplError` saying `what: error`.
pub fn error(what: &str, e: impl std::fmt::Display) -> PyErr {
    TplError::new_err(format!("{what}: {e}"))
}

/// The rows of a 2-D array.
pub fn rows(a: &PyReadonlyArray2<'_, f64>) -> Vec<Vec<f64>> {
    a.as_array().rows().into_iter().map(|r| r.to_vec()).collect()
}

/// A transition matrix as a Python caller gives it.
#[derive(FromPyObject)]
pub enum MatrixArg<'py> {
    /// The path (str or os.PathLike) of a matrix file in any form tpl reads (dense text,
    /// JSON, `.npy`, or the sparse `from,to,p` CSV, docs/formats.md §2), read by `tpl-io` as
    /// the command line reads it: a sparse file stays sparse.
    Path(PathBuf),
    /// The rows, as a 2-D float array.
    Array(PyReadonlyArray2<'py, f64>),
    /// A `temporal_privacy.MatrixFile`, handed over as (path, smoothing, normalize): the file
    /// read as `--matrix FILE [--normalize] [--smoothing s]` reads it, a sparse file's
    /// smoothing kept symbolic.
    File((PathBuf, Option<f64>, bool)),
}

/// `path`, a file a call reads or writes, unless it is `-`: on the command line `-` names
/// standard input, which a library call must never read (it would wait for a terminal, and a
/// process may read it only once, so every later call would fail) nor take as the name of a
/// file written in the working folder. `what` names the argument.
pub fn file_path<'a>(path: &'a Path, what: &str) -> PyResult<&'a Path> {
    if tpl_io::text::is_stdin(path) {
        return Err(TplError::new_err(format!(
            "{what}: \"-\" names standard input on the command line, which the Python package never reads: \
             give the path of a file (\"./-\" for a file named -)"
        )));
    }
    Ok(path)
}

/// A validated transition matrix from a 2-D float array or a matrix file; errors name
/// `what`.
pub fn matrix(a: &MatrixArg<'_>, what: &str) -> PyResult<TransitionMatrix> {
    match a {
        MatrixArg::Array(a) => TransitionMatrix::new(rows(a)).map_err(|e| error(what, e)),
        MatrixArg::Path(path) => {
            tpl_io::read_matrix(file_path(path, what)?, false).map_err(|e| error(what, e))
        }
        MatrixArg::File((path, smoothing, normalize)) => {
            file_path(path, what)?;
            if let Some(s) = *smoothing {
                TransitionMatrix::check_smoothing(s).map_err(|e| error(&format!("{what} smoothing"), e))?;
            }
            let m = tpl_io::read_matrix(path, *normalize).map_err(|e| error(what, e))?;
            match smoothing {
                Some(s) => m.smoothed(*s).map_err(|e| error(&format!("{what} smoothing"), e)),
                None => Ok(m),
            }
        }
    }
}

impl MatrixArg<'_> {
    /// How the matrix `m` read from this argument is described in an output: a file's name
    /// and how it was read, nothing more for an array.
    pub fn used(&self, m: &TransitionMatrix) -> tpl_report::output::MatrixUsed {
        let (file, normalize, smoothing) = match self {
            Self::Array(_) => (None, false, None),
            Self::Path(path) => (Some(tpl_io::text::name(path)), false, None),
            Self::File((path, smoothing, normalize)) => {
                (Some(tpl_io::text::name(path)), *normalize, *smoothing)
            }
        };
        tpl_report::output::MatrixUsed { file, n: m.n(), normalize, smoothing }
    }
}

/// An optional matrix.
pub fn optional_matrix(a: Option<&MatrixArg<'_>>, what: &str) -> PyResult<Option<TransitionMatrix>> {
    a.map(|a| matrix(a, what)).transpose()
}

/// The adversary's correlation from the `backward` and `forward` arguments (either may be
/// absent); matrices over different numbers of states are refused naming both.
pub fn correlation(
    backward: Option<&MatrixArg<'_>>,
    forward: Option<&MatrixArg<'_>>,
) -> PyResult<Correlation> {
    let (pb, pf) = (optional_matrix(backward, "backward")?, optional_matrix(forward, "forward")?);
    Correlation::new(pb, pf).map_err(|e| error("backward and forward", e))
}

/// Checks a horizon T: 1 ≤ T ≤ [`MAX_HORIZON`].
pub fn check_horizon(horizon: usize) -> PyResult<()> {
    tpl_core::check_horizon(horizon).map_err(|e| error("horizon", e))?;
    if horizon > MAX_HORIZON {
        return Err(TplError::new_err(format!(
            "horizon {horizon}: at most {MAX_HORIZON} steps are supported"
        )));
    }
    Ok(())
}

/// A 1-D float array.
pub fn vector<'py>(py: Python<'py>, v: Vec<f64>) -> Vector<'py> {
    PyArray1::from_vec(py, v)
}

/// A T × n float array from T rows of n values.
pub fn table<'py>(py: Python<'py>, rows: &[Vec<f64>]) -> PyResult<Matrix<'py>> {
    let n = rows.first().map_or(0, Vec::len);
    let flat: Vec<f64> = rows.iter().flatten().copied().collect();
    PyArray1::from_vec(py, flat).reshape([rows.len(), n])
}

/// The rows of a matrix as a 2-D array.
pub fn matrix_array<'py>(py: Python<'py>, m: &TransitionMatrix) -> PyResult<Matrix<'py>> {
    table(py, &m.to_rows())
}
