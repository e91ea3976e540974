//! `compare`: release strategies scored on one count stream, on error and on the leakage
//! the adversary's correlation gives (`tpl compare` with matrices given) through
//! `tpl-compare`.

use std::path::PathBuf;

use numpy::PyReadonlyArray2;
use pyo3::prelude::*;
use tpl_compare::{Seed, Setup, Strategy, compare as run_compare};
use tpl_core::Steps;
use tpl_mechanisms::{DiscreteLaplace, LaplaceMechanism};
use tpl_postprocess::Estimator;
use tpl_report::{ComparisonReport, MatrixSource};

use crate::TplError;
use crate::convert::{MatrixArg, correlation, error, rows};
use crate::release::{check_size, validate_rows};

/// A comparison made here: its JSON and its page, as `tpl compare` writes them
/// ([`ComparisonReport`]).
#[pyclass(module = "temporal_privacy._native", name = "NativeComparison", frozen)]
pub struct NativeComparison {
    report: ComparisonReport,
}

#[pymethods]
impl NativeComparison {
    /// The JSON text of `tpl compare` without the binary's `version` and `build`.
    fn json(&self) -> PyResult<String> {
        serde_json::to_string(&self.report).map_err(|e| error("compare", e))
    }

    /// Itself: the comparison is immutable, so a copy of a `Comparison` shares it.
    fn __copy__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Itself, as [`NativeComparison::__copy__`] (`copy.deepcopy`, `dataclasses.asdict`).
    fn __deepcopy__<'py>(slf: PyRef<'py, Self>, _memo: &Bound<'py, PyAny>) -> PyRef<'py, Self> {
        slf
    }

    /// Writes the page of `tpl compare --report` to `out`: the chart and the table of the
    /// counts named `name`, `made_by` first in its provenance; returns its size in bytes.
    fn report(
        &self,
        py: Python<'_>,
        out: PathBuf,
        name: &str,
        made_by: Vec<(String, String)>,
    ) -> PyResult<usize> {
        py.detach(|| {
            let made_by: Vec<(&str, String)> = made_by.iter().map(|(t, v)| (t.as_str(), v.clone())).collect();
            let chart = self.report.chart_svg(name).map_err(|e| error("report", e))?;
            let page = self.report.page(name, &made_by, &[], &chart).map_err(|e| error("report", e))?;
            tpl_report::write_file(&out, &page).map_err(|e| error("path", e))?;
            Ok(page.len())
        })
    }
}

/// The comparison of `tpl compare` on counts and matrices given (not estimated here);
/// `postprocess_default` says whether the estimator was the default.
#[pyfunction]
#[pyo3(signature = (counts, backward, forward, epsilon, window, sensitivity, schemes, suite, alpha, runs, postprocess, postprocess_default, baseline, seed))]
#[allow(clippy::too_many_arguments)]
fn compare<'py>(
    py: Python<'py>,
    counts: PyReadonlyArray2<'py, f64>,
    backward: Option<MatrixArg<'py>>,
    forward: Option<MatrixArg<'py>>,
    epsilon: f64,
    window: usize,
    sensitivity: f64,
    schemes: Option<Vec<String>>,
    suite: Option<&str>,
    alpha: Option<f64>,
    runs: usize,
    postprocess: Option<&str>,
    postprocess_default: bool,
    baseline: bool,
    seed: Option<u64>,
) -> PyResult<NativeComparison> {
    let strategies = match (schemes, suite) {
        (Some(_), Some(_)) => return Err(TplError::new_err("schemes and suite: give one of them, not both")),
        (Some(names), None) => names
            .iter()
            .map(|n| Strategy::parse(n))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| error("schemes", e))?,
        (None, Some(name)) => Strategy::suite(name).map_err(|e| error("suite", e))?,
        (None, None) => Strategy::ALL.to_vec(),
    };
    let postprocess = postprocess
        .map(|name| match name.parse::<Estimator>() {
            Ok(
                e @ (Estimator::CausalFilter | Estimator::MapDbsec | Estimator::Smooth | Estimator::Kalman),
            ) => Ok(e),
            _ => Err(TplError::new_err(format!(
                "postprocess {name:?}: True (smooth, the default) or one of smooth, map, map-dbsec, kalman"
            ))),
        })
        .transpose()?;
    let truth = rows(&counts);
    let cells = truth.first().map_or(0, Vec::len);
    // The mechanism every run releases with, here only to check the counts (no draw).
    validate_rows(&LaplaceMechanism::new(DiscreteLaplace::seeded(0)), &truth, "")?;
    let known = correlation(backward.as_ref(), forward.as_ref())?;
    check_size(known.backward(), "backward", cells)?;
    check_size(known.forward(), "forward", cells)?;
    let given = !known.is_none();
    let done = py.detach(move || {
        let setup = Setup::new(&truth, epsilon, window)
            .correlation(&known)
            .alpha(alpha)
            .sensitivity(sensitivity)
            .runs(runs)
            .postprocess(postprocess)
            .baseline(baseline)
            .seed(Seed::new(seed));
        run_compare(&setup, &strategies)
    });
    let comparison = done.map_err(|e| error("compare", e))?;
    let score = Steps::all(comparison.horizon).map_err(|e| error("counts", e))?;
    let matrices = MatrixSource::from_caller(given, score);
    Ok(NativeComparison { report: ComparisonReport { comparison, matrices, postprocess_default } })
}

/// Adds this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeComparison>()?;
    m.add_function(wrap_pyfunction!(compare, m)?)
}
