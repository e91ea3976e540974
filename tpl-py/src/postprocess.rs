//! `postprocess`: estimates of the true counts behind noisy releases (`tpl postprocess`,
//! [`docs/map.md`](tpl_core::guide::map)) through `tpl-postprocess`, with model or bootstrap
//! intervals ([`docs/intervals.md`](tpl_core::guide::intervals)).

use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tpl_postprocess::{Bootstrap, Estimator, FilterConfig, PostprocessError, PriorPolicy, filter};
use tpl_report::output::EstimatesOutput;

use crate::TplError;
use crate::convert::{MatrixArg, correlation, error, rows, table};
use crate::release::{check_size, sampler};

/// The estimates `tpl postprocess` makes: the JSON text of their fields but the arrays
/// ([`EstimatesOutput`]: `estimator`, `estimator_default` (`by_default`), `causal`, and with
/// `interval` the level and `interval_method`, `model` from the estimates' standard errors or
/// `bootstrap` from B replicate releases), and a dict of `estimates` (T × n; an integer array
/// for `map-integer`), `warnings` (the estimator's, as text) and the intervals' `lower` and
/// `upper`.
#[pyfunction]
#[pyo3(signature = (releases, total, budgets, epsilon, sensitivity, forward, backward, prior, prior_values, estimator, by_default, interval, method, replicates, sampler_name, seed))]
#[allow(clippy::too_many_arguments)]
fn postprocess<'py>(
    py: Python<'py>,
    releases: PyReadonlyArray2<'py, f64>,
    total: u64,
    budgets: Option<PyReadonlyArray1<'py, f64>>,
    epsilon: Option<f64>,
    sensitivity: f64,
    forward: Option<MatrixArg<'py>>,
    backward: Option<MatrixArg<'py>>,
    prior: &str,
    prior_values: Option<PyReadonlyArray1<'py, f64>>,
    estimator: &str,
    by_default: bool,
    interval: Option<f64>,
    method: &str,
    replicates: usize,
    sampler_name: &str,
    seed: Option<u64>,
) -> PyResult<(String, Bound<'py, PyDict>)> {
    tpl_core::check_sensitivity(sensitivity).map_err(|e| error("sensitivity", e))?;
    let estimator: Estimator = estimator.parse().map_err(|e| error("estimator", e))?;
    let releases = rows(&releases);
    let (horizon, cells) = (releases.len(), releases.first().map_or(0, Vec::len));
    let budgets = match (budgets, epsilon) {
        (Some(b), None) => {
            let b = b.as_array().to_vec();
            if b.len() != horizon {
                return Err(TplError::new_err(format!(
                    "budgets: {} budgets, but there are {horizon} releases (one ε_t per step)",
                    b.len()
                )));
            }
            b
        }
        (None, Some(e)) => tpl_postprocess::constant_budgets(e, horizon).map_err(|e| error("epsilon", e))?,
        _ => {
            return Err(TplError::new_err(
                "give budgets= (ε_t of every release, 0 for a repeat) or epsilon= (the same ε_t at every step), \
                 not both",
            ));
        }
    };
    let known = correlation(backward.as_ref(), forward.as_ref())?;
    check_size(known.forward(), "forward", cells)?;
    check_size(known.backward(), "backward", cells)?;
    if horizon > 1 && estimator.uses_prior() && known.forward().is_none() {
        return Err(error(
            "forward",
            PostprocessError::MissingForward { estimator: estimator.name(), horizon },
        ));
    }
    let prior = match (prior, prior_values) {
        (_, Some(v)) => PriorPolicy::Explicit(v.as_array().to_vec()),
        ("frequency", None) => PriorPolicy::Frequency,
        ("uniform", None) => PriorPolicy::Uniform,
        (other, None) => {
            return Err(TplError::new_err(format!(
                "prior {other:?}: frequency, uniform, or an array of n probabilities"
            )));
        }
    };
    let sampler = sampler(sampler_name)?;
    let bootstrap = match method {
        "model" => false,
        "bootstrap" => true,
        other => return Err(TplError::new_err(format!("interval_method {other:?}: model or bootstrap"))),
    };
    if interval.is_some() && bootstrap {
        tpl_compare::check_bootstrap_size(replicates, horizon.saturating_mul(cells))
            .map_err(|e| error(&format!("replicates {replicates}"), e))?;
    }
    let done = py.detach(move || -> Result<_, (&'static str, PostprocessError)> {
        let config =
            FilterConfig { sensitivity, prior, correlation: &known, estimator, ..FilterConfig::new(total) };
        let estimates = filter(&releases, &budgets, config.clone()).map_err(|e| (where_(&e), e))?;
        let intervals = match interval {
            Some(level) if !bootstrap => {
                let (lower, upper) = estimates.intervals(level).map_err(|e| ("interval", e))?;
                Some(tpl_mechanisms::Intervals { level, lower, upper })
            }
            Some(level) => Some(
                tpl_compare::bootstrap_estimates(
                    &releases,
                    &estimates.estimates,
                    &budgets,
                    config,
                    Bootstrap { level, replicates },
                    sampler,
                    seed,
                )
                .map_err(|e| ("interval", e))?,
            ),
            None => None,
        };
        Ok((estimates, intervals))
    });
    let (estimates, intervals) = done.map_err(|(what, e)| error(what, e))?;
    let output = EstimatesOutput {
        estimates: &estimates,
        t: None,
        by_default: Some(by_default),
        intervals: intervals.as_ref().map(|i| (i, method)),
        arrays: false,
    };
    let fields = serde_json::to_string(&output).map_err(|e| error("postprocess", e))?;
    let d = PyDict::new(py);
    match estimates.integers() {
        Some(ints) => {
            let n = ints.first().map_or(0, Vec::len);
            let flat: Vec<i64> = ints.iter().flatten().map(|&v| v as i64).collect();
            d.set_item("estimates", PyArray1::from_vec(py, flat).reshape([ints.len(), n])?)?;
        }
        None => d.set_item("estimates", table(py, &estimates.estimates)?)?,
    }
    let warnings: Vec<String> = estimates.warnings.iter().map(ToString::to_string).collect();
    d.set_item("warnings", warnings)?;
    if let Some(i) = &intervals {
        d.set_item("lower", table(py, &i.lower)?)?;
        d.set_item("upper", table(py, &i.upper)?)?;
    }
    Ok((fields, d))
}

/// The argument a stream error is about.
fn where_(e: &PostprocessError) -> &'static str {
    let inner = match e {
        PostprocessError::AtStep { source, .. } => source.as_ref(),
        other => other,
    };
    match inner {
        PostprocessError::BadBudget(_) => "budgets",
        PostprocessError::WeightOverflow { .. } => "sensitivity",
        PostprocessError::TotalTooLarge(_) => "total",
        PostprocessError::PriorLength { .. }
        | PostprocessError::BadPriorEntry { .. }
        | PostprocessError::PriorSum { .. } => "prior",
        _ => "releases",
    }
}

/// Adds this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The defaults of the library (docs/map.md §8), so that the package never restates them.
    m.add("OFFLINE_ESTIMATOR", Estimator::OFFLINE_DEFAULT.name())?;
    m.add("ONLINE_ESTIMATOR", Estimator::ONLINE_DEFAULT.name())?;
    let causal: Vec<&str> = Estimator::ALL.iter().filter(|e| e.is_filter()).map(|e| e.name()).collect();
    m.add("CAUSAL_ESTIMATORS", causal)?;
    m.add_function(wrap_pyfunction!(postprocess, m)?)
}
