//! `loss`, `supremum`, `leakage`, `smooth` and `normalize`: `tpl loss`, `tpl supremum` and
//! `tpl leakage` (TKDE eqs. 11–15, 24, Theorems 3 and 11) through `tpl-core`.

use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use tpl_core::{Budgets, CompactSeries, Loss, LossEvaluator, PiecewiseLoss, TransitionMatrix};

use crate::convert::{
    Matrix, MatrixArg, Vector, check_horizon, correlation, error, matrix, matrix_array, rows, vector,
};

/// L(α) of `p` at every α (TKDE eq. 24), with the evaluator `tpl loss` picks for that many
/// values ([`Loss::new`]), so each value is the CLI's to the last bit.
#[pyfunction]
fn loss<'py>(py: Python<'py>, p: MatrixArg<'py>, alpha: PyReadonlyArray1<'py, f64>) -> PyResult<Vector<'py>> {
    let alphas = alpha.as_array().to_vec();
    if let Some(a) = alphas.iter().find(|a| !(a.is_finite() && **a >= 0.0)) {
        return Err(error(&format!("alpha {a}"), "α must be a finite number ≥ 0"));
    }
    let m = matrix(&p, "P")?;
    let values = py.detach(move || {
        let l = Loss::new(&m, alphas.len());
        alphas.iter().map(|&a| l.loss(a)).collect::<Vec<f64>>()
    });
    Ok(vector(py, values))
}

/// The limit of BPL (or FPL) under the constant budget ε (TKDE Theorem 11, as
/// `tpl supremum`): `None` when unbounded.
#[pyfunction]
fn supremum(py: Python<'_>, p: MatrixArg<'_>, epsilon: f64) -> PyResult<Option<f64>> {
    tpl_core::check_epsilon(epsilon).map_err(|e| error("epsilon", e))?;
    let m = matrix(&p, "P")?;
    let s = py.detach(move || PiecewiseLoss::new(&m).supremum(epsilon));
    Ok(s.map_err(|e| error("epsilon", e))?.value())
}

/// The per-step arrays and scalars of `tpl leakage`.
type LeakageOut<'py> = (Vector<'py>, Vector<'py>, Vector<'py>, Vector<'py>, f64, Option<(Vector<'py>, f64)>);

/// BPL, FPL and TPL of a budget sequence (per step, or `epsilon` at each of `horizon` steps)
/// and with `window` the leakage of every window of that many steps: the series
/// `tpl leakage` computes ([`CompactSeries::new`]).
#[pyfunction]
#[pyo3(signature = (backward, forward, budgets, epsilon, horizon, window))]
fn leakage<'py>(
    py: Python<'py>,
    backward: Option<MatrixArg<'py>>,
    forward: Option<MatrixArg<'py>>,
    budgets: Option<PyReadonlyArray1<'py, f64>>,
    epsilon: Option<f64>,
    horizon: Option<usize>,
    window: Option<usize>,
) -> PyResult<LeakageOut<'py>> {
    let budgets = match (budgets, epsilon, horizon) {
        (Some(b), None, None) => Budgets::PerStep(b.as_array().to_vec()),
        (None, Some(e), Some(t)) => {
            tpl_core::check_epsilon(e).map_err(|err| error("epsilon", err))?;
            check_horizon(t)?;
            Budgets::Constant { epsilon: e, steps: t }
        }
        _ => {
            return Err(crate::TplError::new_err(
                "give budgets=, or epsilon= with horizon= (the budget of every step and the number of steps)",
            ));
        }
    };
    let horizon = budgets.len();
    if let Some(w) = window {
        tpl_core::check_window(w, horizon).map_err(|e| error("window", e))?;
    }
    let known = correlation(backward.as_ref(), forward.as_ref())?;
    let computed = py.detach(move || -> tpl_core::Result<_> {
        let s = CompactSeries::new(&known, budgets)?;
        let eps = s.budgets().to_vec();
        let tpl: Vec<f64> = (0..s.len()).map(|t| s.tpl_at(t)).collect();
        let windows = match window {
            Some(w) => {
                let values = s.window_leakage(w)?.collect::<tpl_core::Result<Vec<f64>>>()?;
                Some((values, s.max_window_leakage(w)?))
            }
            None => None,
        };
        Ok((eps, s.bpl().to_vec(), s.fpl().to_vec(), tpl, s.max_tpl(), windows))
    });
    let (eps, bpl, fpl, tpl, max_tpl, windows) = computed.map_err(|e| error("budgets", e))?;
    Ok((
        vector(py, eps),
        vector(py, bpl),
        vector(py, fpl),
        vector(py, tpl),
        max_tpl,
        windows.map(|(v, m)| (vector(py, v), m)),
    ))
}

/// Laplacian smoothing of TKDE eq. (28), as `--smoothing s` applies it to a matrix file.
#[pyfunction]
fn smooth<'py>(py: Python<'py>, p: PyReadonlyArray2<'py, f64>, s: f64) -> PyResult<Matrix<'py>> {
    TransitionMatrix::check_smoothing(s).map_err(|e| error("s", e))?;
    let m =
        TransitionMatrix::new(rows(&p)).map_err(|e| error("P", e))?.smoothed(s).map_err(|e| error("s", e))?;
    matrix_array(py, &m)
}

/// Every row rescaled to sum to 1, as `--normalize` reads a matrix file.
#[pyfunction]
fn normalize<'py>(py: Python<'py>, p: PyReadonlyArray2<'py, f64>) -> PyResult<Matrix<'py>> {
    let m = TransitionMatrix::normalized(rows(&p)).map_err(|e| error("P", e))?;
    matrix_array(py, &m)
}

/// The loss 2·ε_t/Δ of each budget of a release calibrated to sensitivity Δ, against one
/// person changing cell ([`tpl_mechanisms::checked_effective_budget`], rounded up): what the
/// leakage of a release's budgets is audited on. A loss that overflows is refused naming the
/// sensitivity (and the step, among several budgets), never handed on as an infinite budget.
#[pyfunction]
fn effective_budgets<'py>(
    py: Python<'py>,
    budgets: PyReadonlyArray1<'py, f64>,
    sensitivity: f64,
) -> PyResult<Vector<'py>> {
    tpl_core::check_sensitivity(sensitivity).map_err(|e| error("sensitivity", e))?;
    let b = budgets.as_array();
    if let Some((t, v)) = b.iter().enumerate().find(|(_, v)| !tpl_core::is_budget(**v)) {
        return Err(crate::TplError::new_err(format!(
            "budgets: step {}: budget {} must be a finite number ≥ 0",
            t + 1,
            tpl_core::Short(*v)
        )));
    }
    let several = b.len() > 1;
    let losses = b
        .iter()
        .enumerate()
        .map(|(t, &e)| {
            tpl_mechanisms::checked_effective_budget(e, sensitivity).map_err(|err| {
                let at = if several { format!("sensitivity: step {}", t + 1) } else { "sensitivity".into() };
                error(&at, err)
            })
        })
        .collect::<PyResult<Vec<f64>>>()?;
    Ok(PyArray1::from_vec(py, losses))
}

/// Adds this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(loss, m)?)?;
    m.add_function(wrap_pyfunction!(supremum, m)?)?;
    m.add_function(wrap_pyfunction!(leakage, m)?)?;
    m.add_function(wrap_pyfunction!(effective_budgets, m)?)?;
    m.add_function(wrap_pyfunction!(smooth, m)?)?;
    m.add_function(wrap_pyfunction!(normalize, m)?)?;
    Ok(())
}
