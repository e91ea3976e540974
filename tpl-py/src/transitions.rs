//! `matrices_from_transitions`: the forward and backward matrices of an n × n table of
//! transition counts, built by [`TransitionCounts::matrices`] as `tpl estimate` builds them
//! (TKDE §6 and eq. 28). Counts aggregated elsewhere (across the partitions of a Spark job,
//! say: they add) become matrices bit-identical to the CLI's from the same moves
//! ([`docs/formats.md`](tpl_core::guide::formats) §6.1).

use numpy::PyReadonlyArray2;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tpl_core::{StepRange, TransitionCounts, TransitionMatrix};

use crate::TplError;
use crate::convert::{error, matrix_array};
use crate::estimate::MAX_CELLS;

/// The matrices of the transition counts `counts` (C\[i\]\[j\]: moves from cell i at one
/// step to cell j at the next) as a dict: `forward`, `backward`, and the rows without data
/// of each (`forward_identity_rows`, `backward_identity_rows`), smoothed by `smoothing`
/// unless `None`.
#[pyfunction]
#[pyo3(signature = (counts, smoothing))]
fn matrices_from_transitions<'py>(
    py: Python<'py>,
    counts: PyReadonlyArray2<'py, u64>,
    smoothing: Option<f64>,
) -> PyResult<Bound<'py, PyDict>> {
    if let Some(s) = smoothing {
        TransitionMatrix::check_smoothing(s).map_err(|e| error("smoothing", e))?;
    }
    let view = counts.as_array();
    let (n, columns) = view.dim();
    if n != columns {
        return Err(TplError::new_err(format!(
            "counts: a square n × n table is needed, got {n} × {columns}"
        )));
    }
    if n > MAX_CELLS {
        return Err(TplError::new_err(format!("counts: {n} cells: at most {MAX_CELLS} are supported")));
    }
    let mut table = TransitionCounts::new(n).map_err(|e| error("counts", e))?;
    for ((from, to), &moves) in view.indexed_iter() {
        table.add(from, to, moves).map_err(|e| error("counts", e))?;
    }
    let (forward, backward) =
        py.detach(move || table.matrices(smoothing)).map_err(|e| error("smoothing", e))?;
    let d = PyDict::new(py);
    d.set_item("forward", matrix_array(py, &forward.matrix)?)?;
    d.set_item("backward", matrix_array(py, &backward.matrix)?)?;
    d.set_item("forward_identity_rows", forward.empty_rows)?;
    d.set_item("backward_identity_rows", backward.empty_rows)?;
    Ok(d)
}

/// The first and last step (from 1) that the step range `range` (`"A..B"`, `"A.."`, `"..B"`,
/// `".."`, as `--steps`) selects in a stream of `steps` steps ([`StepRange::resolve`]).
#[pyfunction]
fn resolve_steps(range: &str, steps: usize) -> PyResult<(usize, usize)> {
    let parsed: StepRange = range.parse().map_err(|e| error(&format!("steps {range:?}"), e))?;
    let resolved = parsed.resolve(steps).map_err(|e| error("steps", e))?;
    Ok((resolved.first(), resolved.last()))
}

/// Adds this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(matrices_from_transitions, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_steps, m)?)
}
