//! `estimate`: the forward and backward transition matrices of a user stream
//! (`tpl estimate`, TKDE §6 and eq. 28) through `tpl-core`, and its counts per bucket.

use std::path::PathBuf;

use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tpl_core::{
    CoreError, EstimatedMatrix, StepRange, Steps, TransitionCounts, TransitionMatrix, UserStream,
};
use tpl_report::output::EstimationOutput;

use crate::TplError;
use crate::convert::{error, file_path, matrix_array};

/// The largest number of cells (matrix rows) estimated from a stream, as `tpl estimate`
/// allows (`tpl-io`'s limit for stream files).
pub use tpl_io::MAX_CELLS;

/// A T × n integer array from rows of whole numbers.
fn integers<'py>(py: Python<'py>, rows: &[Vec<i64>], n: usize) -> PyResult<Bound<'py, numpy::PyArray2<i64>>> {
    let flat: Vec<i64> = rows.iter().flatten().copied().collect();
    PyArray1::from_vec(py, flat).reshape([rows.len(), n])
}

/// The options shared by [`estimate`] and [`estimate_file`], checked before any counting:
/// the number of cells, the step range (parsed) and the smoothing.
fn check_options(smoothing: Option<f64>, steps: Option<&str>, cells: Option<usize>) -> PyResult<StepRange> {
    if let Some(n) = cells.filter(|&n| n == 0 || n > MAX_CELLS) {
        return Err(TplError::new_err(format!("cells {n}: 1 to {MAX_CELLS} cells are supported")));
    }
    let range: StepRange = match steps {
        Some(text) => text.parse().map_err(|e| error(&format!("steps {text:?}"), e))?,
        None => StepRange::ALL,
    };
    if let Some(s) = smoothing {
        TransitionMatrix::check_smoothing(s).map_err(|e| error("smoothing", e))?;
    }
    Ok(range)
}

/// With `cells = n`: the new index of each of the stream's cells (`cell_ids`, ascending),
/// position i in the id list becoming id i; an id ≥ n is refused.
fn index_by_id(cell_ids: &[u64], n: usize) -> Result<Vec<usize>, (&'static str, String)> {
    let largest = cell_ids.last().copied().unwrap_or(0);
    if largest >= n as u64 {
        return Err((
            "cells",
            format!("the stream has cell {largest}, but cells={n} indexes ids 0..{}", n - 1),
        ));
    }
    Ok(cell_ids.iter().map(|&id| id as usize).collect())
}

/// The estimate of `tpl estimate` from the records (bucket, user, cell) of a stream, as a
/// dict: `forward`, `backward`, `counts` (transition counts), `cell_ids`, `histogram` (the
/// counts per bucket and cell, of every step), `users`, `horizon`, `transitions`,
/// `smoothing`, the rows without data of each matrix and `steps`; with `steps` ("A..B", as
/// `--steps`) the matrices count the moves within those steps only
/// ([`TransitionCounts::from_steps`]), their rows still the cells of the whole stream. With
/// `cells = n` (`--cells n`) row i is cell id i for i in 0..n, cells never seen identity
/// rows and empty columns of the histogram.
#[pyfunction]
#[pyo3(signature = (records, smoothing, steps, cells))]
fn estimate<'py>(
    py: Python<'py>,
    records: PyReadonlyArray2<'py, u64>,
    smoothing: Option<f64>,
    steps: Option<&str>,
    cells: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let range = check_options(smoothing, steps, cells)?;
    let view = records.as_array();
    if view.ncols() != 3 {
        return Err(TplError::new_err(format!(
            "stream: rows of three columns (bucket, user, cell) are needed, got {}",
            view.ncols()
        )));
    }
    let records: Vec<(u64, u64, u64)> = view.rows().into_iter().map(|r| (r[0], r[1], r[2])).collect();
    type Estimated =
        (UserStream, Vec<u64>, Steps, TransitionCounts, EstimatedMatrix, EstimatedMatrix, Vec<Vec<f64>>);
    let done = py.detach(move || -> Result<Estimated, (&'static str, String)> {
        let stream = UserStream::from_records(&records).map_err(|e| ("stream", e.to_string()))?;
        let distinct = stream.cells();
        if distinct > MAX_CELLS {
            return Err(("stream", format!("{distinct} distinct cells: at most {MAX_CELLS} are supported")));
        }
        let fail = |e: CoreError| ("stream", e.to_string());
        let steps = range.resolve(stream.states.len()).map_err(|e| ("steps", e.to_string()))?;
        let mut counts = TransitionCounts::from_steps(distinct, &stream.states, steps).map_err(fail)?;
        let mut histogram =
            tpl_compare::histogram(&stream.states, distinct).map_err(|e| ("stream", e.to_string()))?;
        let mut cell_ids = stream.cell_ids.clone();
        if let Some(n) = cells {
            let by_id = index_by_id(&cell_ids, n)?;
            counts = counts.relabeled(&by_id, n).map_err(fail)?;
            for row in &mut histogram {
                let mut wide = vec![0.0; n];
                for (&id, &v) in by_id.iter().zip(row.iter()) {
                    wide[id] = v;
                }
                *row = wide;
            }
            cell_ids = (0..n as u64).collect();
        }
        // Smoothing was checked above: an error here is the counts'.
        let (forward, backward) = counts.matrices(smoothing).map_err(fail)?;
        Ok((stream, cell_ids, steps, counts, forward, backward, histogram))
    });
    let (stream, cell_ids, steps, counts, forward, backward, histogram) =
        done.map_err(|(what, e)| error(what, e))?;
    let users = stream.states.first().map_or(0, Vec::len);
    let table = Estimate { cell_ids, users, steps, counts, forward, backward, smoothing };
    let d = table.dict(py)?;
    let hist: Vec<Vec<i64>> = histogram.iter().map(|r| r.iter().map(|&v| v as i64).collect()).collect();
    d.set_item("histogram", integers(py, &hist, table.counts.n())?)?;
    Ok(d)
}

/// What an estimate returns but the histogram.
struct Estimate {
    cell_ids: Vec<u64>,
    users: usize,
    steps: Steps,
    counts: TransitionCounts,
    forward: EstimatedMatrix,
    backward: EstimatedMatrix,
    smoothing: Option<f64>,
}

impl Estimate {
    /// The dict of `estimate` without `histogram`: the fields `tpl estimate` prints (one
    /// definition, tpl-report's [`EstimationOutput`]), and the matrices and the transition
    /// counts as arrays.
    fn dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (counts, n) = (&self.counts, self.counts.n());
        let output = EstimationOutput {
            users: self.users,
            steps: self.steps,
            cell_ids: &self.cell_ids,
            counts,
            forward: &self.forward,
            backward: &self.backward,
            smoothing: self.smoothing,
        };
        let fields = serde_json::to_string(&output).map_err(|e| error("estimate", e))?;
        let d = py.import("json")?.call_method1("loads", (fields,))?.cast_into::<PyDict>()?;
        d.set_item("forward", matrix_array(py, &self.forward.matrix)?)?;
        d.set_item("backward", matrix_array(py, &self.backward.matrix)?)?;
        let table: Vec<Vec<i64>> =
            (0..n).map(|i| (0..n).map(|j| counts.count(i, j) as i64).collect()).collect();
        d.set_item("counts", integers(py, &table, n)?)?;
        d.set_item("cell_ids", PyArray1::from_slice(py, &self.cell_ids))?;
        d.set_item("steps", (self.steps.first(), self.steps.last()))?;
        Ok(d)
    }
}

/// [`estimate`] of the user stream file `path` ([`docs/formats.md`](tpl_core::guide::formats) §6),
/// read as `tpl estimate --stream` reads it: [`tpl_io::count_user_stream`] counts the moves as the
/// file is read, in bounded memory (a few numbers per user and per bucket plus the cells × cells
/// counts), with the interpreter detached. The dict has no `histogram` (it would hold every step;
/// [`read_stream`] gives the states).
#[pyfunction]
#[pyo3(signature = (path, smoothing, steps, cells))]
fn estimate_file<'py>(
    py: Python<'py>,
    path: PathBuf,
    smoothing: Option<f64>,
    steps: Option<&str>,
    cells: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    file_path(&path, "stream")?;
    let range = check_options(smoothing, steps, cells)?;
    let done = py.detach(move || -> Result<Estimate, (&'static str, String)> {
        let counted = tpl_io::count_user_stream(&path, range).map_err(|e| ("stream", e.to_string()))?;
        let (users, total) = (counted.users, counted.steps);
        let mut cell_ids = counted.cell_ids.clone();
        let fail = |e: CoreError| ("stream", e.to_string());
        let mut counts = counted.counts(&path).map_err(|e| ("stream", e.to_string()))?;
        if let Some(n) = cells {
            let by_id = index_by_id(&cell_ids, n)?;
            counts = counts.relabeled(&by_id, n).map_err(fail)?;
            cell_ids = (0..n as u64).collect();
        }
        // The moves were counted within the range as typed; it must also lie within the stream.
        let steps = range.resolve(total).map_err(|e| ("steps", e.to_string()))?;
        let (forward, backward) = counts.matrices(smoothing).map_err(fail)?;
        Ok(Estimate { cell_ids, users, steps, counts, forward, backward, smoothing })
    });
    done.map_err(|(what, e)| error(what, e))?.dict(py)
}

/// The user stream file `path` ([`docs/formats.md`](tpl_core::guide::formats) §6) read whole by
/// [`tpl_io::read_user_stream`] (checked and made dense by [`UserStream::from_records`]),
/// with the interpreter detached, as a dict: `states` (T × N, the index in `cell_ids` of
/// each user's cell at each bucket, users in ascending id order), `cell_ids`, `users`,
/// `horizon`, `first_bucket` and `bucket_spacing`.
#[pyfunction]
fn read_stream(py: Python<'_>, path: PathBuf) -> PyResult<Bound<'_, PyDict>> {
    file_path(&path, "stream")?;
    let stream = py.detach(move || tpl_io::read_user_stream(&path)).map_err(|e| error("stream", e))?;
    let users = stream.states.first().map_or(0, Vec::len);
    let flat: Vec<i64> = stream.states.iter().flatten().map(|&c| c as i64).collect();
    let d = PyDict::new(py);
    d.set_item("states", PyArray1::from_vec(py, flat).reshape([stream.states.len(), users])?)?;
    d.set_item("cell_ids", PyArray1::from_slice(py, &stream.cell_ids))?;
    d.set_item("users", users)?;
    d.set_item("horizon", stream.states.len())?;
    d.set_item("first_bucket", stream.buckets.0)?;
    d.set_item("bucket_spacing", stream.buckets.1)?;
    Ok(d)
}

/// Checks that the distinct buckets `buckets` (ascending) of a stream are evenly spaced, as
/// [`UserStream::from_records`] checks them ([`docs/formats.md`](tpl_core::guide::formats) §6): the
/// local check of `temporal_privacy.spark`, whose buckets are already collected on the driver.
#[pyfunction]
fn check_buckets(py: Python<'_>, buckets: PyReadonlyArray1<'_, u64>) -> PyResult<()> {
    let records: Vec<(u64, u64, u64)> = buckets.as_array().iter().map(|&b| (b, 0, 0)).collect();
    py.detach(move || UserStream::from_records(&records).map(|_| ())).map_err(|e| error("stream", e))
}

/// Adds this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(estimate, m)?)?;
    m.add_function(wrap_pyfunction!(estimate_file, m)?)?;
    m.add_function(wrap_pyfunction!(read_stream, m)?)?;
    m.add_function(wrap_pyfunction!(check_buckets, m)?)
}
