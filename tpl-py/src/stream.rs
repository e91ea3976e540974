//! `Stream`: the durable stream of `tpl stream` ([`docs/stream.md`](tpl_core::guide::stream))
//! through `tpl-stream`: one SQLite file holding the parameters and every step, pushed one row at a
//! time.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tpl_mechanisms::{LaplaceMechanism, SamplerKind};
use tpl_report::output::{StatusOutput, guaranteed_pair};
use tpl_stream::{
    DurableStream, Estimation, Estimator, Parameter, StepEstimate, StepRecord, StreamConfig, StreamError,
    StreamOptions, default_key_path,
};

use crate::convert::{Matrix, MatrixArg, Vector, correlation, error, file_path, table, vector};
use crate::release::{params, row_refusal, sampler, scheme_kind};
use crate::{StreamBusyError, StreamDamagedError, StreamReadOnlyError, TplError};

/// A handle on a durable stream file, usable from any thread: calls take their turn on the
/// handle (a lock), and a push runs with the interpreter detached, so other Python threads
/// run meanwhile.
#[pyclass(module = "temporal_privacy._native", name = "NativeStream")]
pub struct NativeStream {
    inner: Mutex<DurableStream>,
}

impl NativeStream {
    /// The handle, locked (a call that panicked left nothing half-written in it: a step is
    /// one transaction).
    fn inner(&self) -> MutexGuard<'_, DurableStream> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A stream error as this package states it: parameters named as its arguments (`alpha`);
/// a busy, read-only or damaged stream as its own subclass of `TplError`.
fn stream_error(e: StreamError) -> PyErr {
    let message = e.message(Parameter::name);
    match e {
        StreamError::Busy { .. } => StreamBusyError::new_err(message),
        StreamError::ReadOnly { .. } | StreamError::Companions { .. } => {
            StreamReadOnlyError::new_err(message)
        }
        StreamError::Corrupt { .. } | StreamError::Foreign { .. } => StreamDamagedError::new_err(message),
        _ => TplError::new_err(message),
    }
}

/// The fields of one recorded step.
fn record<'py>(py: Python<'py>, r: StepRecord, replayed: bool) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("t", r.t)?;
    d.set_item("key", r.key)?;
    d.set_item("published", r.published)?;
    d.set_item("budget", r.spent.total())?;
    d.set_item("test_budget", r.spent.test)?;
    d.set_item("publication_budget", if r.published { r.spent.publication } else { 0.0 })?;
    d.set_item("release", vector(py, r.release))?;
    d.set_item("replayed", replayed)?;
    d.set_item("refused", r.refused)?;
    d.set_item("max_tpl", r.max_tpl)?;
    d.set_item("max_window_leakage", r.max_window_leakage)?;
    Ok(d)
}

/// The stored estimates (T × n, a failed step's row not a number) and, for each failed step,
/// (t, why).
type StoredEstimates<'py> = (Matrix<'py>, Vec<(usize, String)>);

/// What [`NativeStream::intervals`] returns: lower and upper ends, and the steps without.
type StoredIntervals<'py> = (Matrix<'py>, Matrix<'py>, Vec<(usize, String)>);

#[pymethods]
impl NativeStream {
    /// Creates the stream file at `path` and its key file `key_file` (default beside it),
    /// refusing existing files, and opens it, as `tpl stream init`; `wevent` is (ε, w, Δ).
    #[staticmethod]
    #[pyo3(signature = (path, scheme, wevent, backward, forward, alpha, budgets, sampler_name, key_file, estimator, total))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        path: PathBuf,
        scheme: &str,
        wevent: (f64, usize, f64),
        backward: Option<MatrixArg<'_>>,
        forward: Option<MatrixArg<'_>>,
        alpha: Option<f64>,
        budgets: Option<PyReadonlyArray1<'_, f64>>,
        sampler_name: &str,
        key_file: Option<PathBuf>,
        estimator: Option<&str>,
        total: Option<u64>,
    ) -> PyResult<Self> {
        let (epsilon, window, sensitivity) = wevent;
        stream_paths(&path, key_file.as_deref())?;
        params(epsilon, window, sensitivity)?;
        let estimation = match (estimator, total) {
            (Some("none"), _) | (None, None) => None,
            (name, Some(total)) => {
                let estimator = match name {
                    Some(name) => name.parse().map_err(|e| crate::convert::error("estimator", e))?,
                    None => Estimator::ONLINE_DEFAULT,
                };
                Some(Estimation { estimator, total })
            }
            (Some(name), None) => {
                return Err(crate::TplError::new_err(format!(
                    "estimator {name:?}: needs total, the population the estimates assume"
                )));
            }
        };
        let config = StreamConfig {
            scheme: scheme_kind(scheme)?.into(),
            epsilon,
            window,
            sensitivity,
            sampler: sampler(sampler_name)?,
            mechanism: None,
            correlation: correlation(backward.as_ref(), forward.as_ref())?,
            alpha,
            budgets: budgets.map(|b| b.as_array().to_vec()).unwrap_or_default(),
            estimation,
        };
        let key_file = key_file.unwrap_or_else(|| default_key_path(&path));
        StreamOptions::new().key(&key_file).create(&path, &config).map_err(stream_error)?;
        Self::open(path, Some(key_file))
    }

    /// Opens an existing stream file, its key in `key_file` (default beside it; read at the
    /// first push).
    #[staticmethod]
    #[pyo3(signature = (path, key_file))]
    fn open(path: PathBuf, key_file: Option<PathBuf>) -> PyResult<Self> {
        stream_paths(&path, key_file.as_deref())?;
        let key_file = key_file.unwrap_or_else(|| default_key_path(&path));
        Ok(Self { inner: Mutex::new(StreamOptions::new().key(&key_file).open(&path).map_err(stream_error)?) })
    }

    /// Gives the stream a new key (written to `key_file`, default beside it) and erases the
    /// counts digests made with the old one, as `tpl stream rekey`; returns (digests erased,
    /// whether the file was upgraded from format 1).
    #[staticmethod]
    #[pyo3(signature = (path, key_file))]
    fn rekey(path: PathBuf, key_file: Option<PathBuf>) -> PyResult<(usize, bool)> {
        stream_paths(&path, key_file.as_deref())?;
        let key_file = key_file.unwrap_or_else(|| default_key_path(&path));
        let done = DurableStream::rekey(&path, &key_file).map_err(stream_error)?;
        Ok((done.erased, done.upgraded))
    }

    /// Releases one step (as `tpl stream push` with one row), durable before it returns.
    #[pyo3(signature = (counts, key))]
    fn push<'py>(
        &self,
        py: Python<'py>,
        counts: PyReadonlyArray1<'py, f64>,
        key: Option<i64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let row = counts.as_array().to_vec();
        // The counts checked as `tpl stream push` checks a row, before the stream is touched:
        // an error names the counts and the cell, as `release` does.
        let kind = self.inner().config().sampler;
        let hint = match kind {
            SamplerKind::Discrete => {
                " (a stream created with sampler=\"float\" takes any data, but its releases are not release-grade)"
            }
            _ => "",
        };
        if let Some(why) = row_refusal(&LaplaceMechanism::new(kind.source(Some(0))), &row, hint) {
            return Err(TplError::new_err(format!("counts: {why}")));
        }
        let pushed = py
            .detach(|| {
                let mut inner = self.inner();
                let pushed = inner.push(key, &row)?;
                if !pushed.replayed {
                    inner.flush()?;
                }
                Ok(pushed)
            })
            .map_err(|e| match e {
                // The step's counts are at fault (their width, a scheme's refusal of them).
                StreamError::Step { .. } | StreamError::Width { .. } => {
                    TplError::new_err(format!("counts: {}", e.message(Parameter::name)))
                }
                other => stream_error(other),
            })?;
        record(py, pushed.record, pushed.replayed)
    }

    /// Where the stream stands, as `tpl stream status`: the JSON text of its fields but the
    /// per-step `budgets` and `published` ([`StatusOutput`]), then those two as arrays.
    fn status<'py>(&self, py: Python<'py>) -> PyResult<(String, Vector<'py>, Bound<'py, PyArray1<bool>>)> {
        let s = py.detach(|| self.inner().status()).map_err(stream_error)?;
        let guaranteed = guaranteed_pair(&s).map_err(stream_error)?;
        // The fields as `tpl stream status` prints them (one definition, tpl-report's), the
        // per-step arrays apart as numpy arrays.
        let output = StatusOutput { status: &s, guaranteed, arrays: false };
        let fields = serde_json::to_string(&output).map_err(|e| error("status", e))?;
        Ok((fields, vector(py, s.budgets.clone()), PyArray1::from_vec(py, s.published.clone())))
    }

    /// Makes and stores the causal estimates of the steps that have none (one pass of the
    /// stream's filter); returns how many were made.
    fn update_estimates(&self, py: Python<'_>) -> PyResult<usize> {
        py.detach(|| self.inner().update_estimates()).map(|made| made.len()).map_err(stream_error)
    }

    /// The stored causal estimates, one row per step (T × n), and the reason of each step
    /// the filter could not estimate (t → why); `None` for a stream that stores none.
    fn estimates<'py>(&self, py: Python<'py>) -> PyResult<Option<StoredEstimates<'py>>> {
        let Some((stored, cells)) = self.stored_estimates(py)? else { return Ok(None) };
        let mut failed = Vec::new();
        let rows: Vec<Vec<f64>> = stored
            .into_iter()
            .map(|s| match s.estimate {
                Ok(x) => x,
                Err(why) => {
                    failed.push((s.t, why));
                    vec![f64::NAN; cells]
                }
            })
            .collect();
        Ok(Some((table(py, &rows)?, failed)))
    }

    /// The intervals at `level` of the stored estimates, from the standard errors stored with
    /// them ([`tpl_stream::StepEstimate::interval`]): (lower, upper), each T × n, and the steps
    /// without one (t → why); `None` for a stream that stores no estimates.
    fn intervals<'py>(&self, py: Python<'py>, level: f64) -> PyResult<Option<StoredIntervals<'py>>> {
        let Some((stored, cells)) = self.stored_estimates(py)? else { return Ok(None) };
        let (mut lower, mut upper, mut missing) = (Vec::new(), Vec::new(), Vec::new());
        for s in &stored {
            match s.interval(level).map_err(|e| crate::convert::error("level", e))? {
                Some((lo, hi)) => {
                    lower.push(lo);
                    upper.push(hi);
                }
                None => {
                    let why = match &s.estimate {
                        Err(why) => why.clone(),
                        Ok(_) => "no standard error stored (none before a release with information, or stored by an \
                                  earlier version: the next update adds it)"
                            .into(),
                    };
                    missing.push((s.t, why));
                    lower.push(vec![f64::NAN; cells]);
                    upper.push(vec![f64::NAN; cells]);
                }
            }
        }
        Ok(Some((table(py, &lower)?, table(py, &upper)?, missing)))
    }

    /// The releases so far estimated again as a whole by `estimator` over a population
    /// `total` (`smooth` and `kalman` use the releases after each step too).
    fn reestimated<'py>(&self, py: Python<'py>, estimator: &str, total: u64) -> PyResult<Matrix<'py>> {
        let estimator: Estimator = estimator.parse().map_err(|e| crate::convert::error("estimator", e))?;
        let out = py.detach(|| self.inner().reestimated(estimator, total)).map_err(stream_error)?;
        table(py, &out.estimates)
    }

    /// Every recorded step, in order (as `tpl stream export`).
    fn steps<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let steps = py.detach(|| self.inner().steps()).map_err(stream_error)?;
        steps.into_iter().map(|r| record(py, r, false)).collect()
    }

    /// The file.
    fn path(&self) -> PathBuf {
        self.inner().path().to_path_buf()
    }

    /// Writes the page of `tpl stream report` to `out` (one self-contained HTML file,
    /// [`tpl_report::stream_page`]), `made_by` first in its provenance; returns its size in
    /// bytes and the number of steps it shows.
    fn report(
        &self,
        py: Python<'_>,
        out: PathBuf,
        made_by: Vec<(String, String)>,
    ) -> PyResult<(usize, usize)> {
        py.detach(|| {
            let mut inner = self.inner();
            let path = inner.path().display().to_string();
            let data = tpl_report::StreamData::read(&mut inner, path).map_err(stream_error)?;
            let made_by: Vec<(&str, String)> = made_by.iter().map(|(t, v)| (t.as_str(), v.clone())).collect();
            let page = tpl_report::stream_page(&data, &made_by).map_err(|e| error("report", e))?;
            tpl_report::write_file(&out, &page).map_err(|e| error("out", e))?;
            Ok((page.len(), data.steps.len()))
        })
    }

    /// The sampler the stream draws with (`discrete` or `float`).
    fn sampler(&self) -> &'static str {
        self.inner().config().sampler.name()
    }
}

impl NativeStream {
    /// The stored estimates and their number of cells; `None` for a stream that stores none.
    fn stored_estimates(&self, py: Python<'_>) -> PyResult<Option<(Vec<StepEstimate>, usize)>> {
        let (stored, on) = py
            .detach(|| {
                let mut inner = self.inner();
                Ok::<_, tpl_stream::StreamError>((inner.estimates()?, inner.config().estimation.is_some()))
            })
            .map_err(stream_error)?;
        let cells = stored.iter().find_map(|s| s.estimate.as_ref().ok().map(Vec::len)).unwrap_or(0);
        Ok(on.then_some((stored, cells)))
    }
}

/// The stream file and its key file as given, neither of them `-` ([`file_path`]): a stream is
/// a file that lasts between runs, never standard input nor a file named `-` in the working
/// folder (`tpl stream init --db -` is refused too).
fn stream_paths(path: &std::path::Path, key_file: Option<&std::path::Path>) -> PyResult<()> {
    file_path(path, "path")?;
    key_file.map(|k| file_path(k, "key_file")).transpose()?;
    Ok(())
}

/// Adds this module's class.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeStream>()
}
