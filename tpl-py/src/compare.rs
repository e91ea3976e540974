//! `compare`: release strategies scored on one count stream, on error and on the leakage
//! the adversary's correlation gives (`tpl compare` with matrices given) through
//! `tpl-compare`.

use numpy::PyReadonlyArray2;
use pyo3::prelude::*;
use tpl_compare::{Seed, Setup, Strategy, compare as run_compare};
use tpl_mechanisms::{DiscreteLaplace, LaplaceMechanism};
use tpl_postprocess::Estimator;

use crate::TplError;
use crate::convert::{MatrixArg, error, optional_matrix, rows};
use crate::release::{check_size, validate_rows};

/// The comparison as the JSON text of `tpl compare` (its rows and parameters, without the
/// `version` and `matrices` fields the command adds).
#[pyfunction]
#[pyo3(signature = (counts, backward, forward, epsilon, window, sensitivity, schemes, alpha, runs, postprocess, baseline, seed))]
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
    alpha: Option<f64>,
    runs: usize,
    postprocess: Option<&str>,
    baseline: bool,
    seed: Option<u64>,
) -> PyResult<String> {
    let strategies = match schemes {
        Some(names) => names.iter().map(|n| Strategy::parse(n)).collect::<Result<Vec<_>, _>>(),
        None => Ok(Strategy::ALL.to_vec()),
    }
    .map_err(|e| error("schemes", e))?;
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
    let pb = optional_matrix(backward.as_ref(), "backward")?;
    let pf = optional_matrix(forward.as_ref(), "forward")?;
    check_size(pb.as_ref(), "backward", cells)?;
    check_size(pf.as_ref(), "forward", cells)?;
    let done = py.detach(move || {
        let setup = Setup::new(&truth, epsilon, window)
            .backward(pb.as_ref())
            .forward(pf.as_ref())
            .alpha(alpha)
            .sensitivity(sensitivity)
            .runs(runs)
            .postprocess(postprocess)
            .baseline(baseline)
            .seed(Seed::new(seed));
        run_compare(&setup, &strategies)
    });
    let comparison = done.map_err(|e| error("compare", e))?;
    serde_json::to_string(&comparison).map_err(|e| error("compare", e))
}

/// Adds this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compare, m)?)
}
