//! `allocate`: budgets per step that keep the temporal leakage under α (`tpl allocate`,
//! TKDE Algorithms 7 and 8 and the window allocator) through `tpl-alloc`.

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tpl_alloc::{AllocError, AllocatorKind, Correlation, Side};

use crate::TplError;
use crate::convert::{MatrixArg, check_horizon, error, optional_matrix, vector};

/// The allocation as `tpl allocate` reports it: a dict with the CLI's JSON fields (the
/// per-step values as float arrays) and `steady_budget` and `limited_by`.
#[pyfunction]
#[pyo3(signature = (strategy, backward, forward, alpha, horizon, window))]
#[allow(clippy::too_many_arguments)]
fn allocate<'py>(
    py: Python<'py>,
    strategy: &str,
    backward: Option<MatrixArg<'py>>,
    forward: Option<MatrixArg<'py>>,
    alpha: f64,
    horizon: usize,
    window: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let kind = AllocatorKind::from_name(strategy).ok_or_else(|| {
        let names: Vec<&str> = AllocatorKind::ALL.iter().map(|k| k.name()).collect();
        TplError::new_err(format!("strategy {strategy:?}: not one of {}", names.join(", ")))
    })?;
    tpl_core::check_alpha(alpha).map_err(|e| error("alpha", e))?;
    check_horizon(horizon)?;
    if let Some(w) = window {
        tpl_core::check_window(w, horizon).map_err(|e| error("window", e))?;
    }
    let pb = optional_matrix(backward.as_ref(), "backward")?;
    let pf = optional_matrix(forward.as_ref(), "forward")?;
    let done = py.detach(move || -> Result<_, (&'static str, AllocError)> {
        let corr = Correlation::new(pb.as_ref(), pf.as_ref()).map_err(|e| ("backward and forward", e))?;
        let a = kind.allocate_with_progress(&corr, alpha, horizon, window, &|_, _| {}).map_err(|e| {
            let what = match &e {
                AllocError::Unbounded { side: Side::Backward } => "backward",
                AllocError::Unbounded { side: Side::Forward } => "forward",
                AllocError::WindowRequired => "window",
                _ => "alpha",
            };
            (what, e)
        })?;
        // The window is valid (checked above): what overflows is the leakage of budgets as
        // large as α asks for, as the CLI says.
        let windows = a.window_audit(window).map_err(|e| ("alpha", e))?;
        Ok((a, windows))
    });
    let (a, windows) = done.map_err(|(what, e)| error(what, e))?;
    let s = &a.audit.series;
    let out = PyDict::new(py);
    out.set_item("strategy", a.strategy)?;
    out.set_item("alpha", alpha)?;
    out.set_item("budgets", vector(py, s.budgets().to_vec()))?;
    out.set_item("bpl", vector(py, s.bpl().to_vec()))?;
    out.set_item("fpl", vector(py, s.fpl().to_vec()))?;
    let tpl: Vec<f64> = (0..s.len()).map(|t| s.tpl_at(t)).collect();
    out.set_item("tpl", PyArray1::from_vec(py, tpl))?;
    out.set_item("max_tpl", a.max_tpl())?;
    out.set_item("sup_backward", a.sup_backward.value())?;
    out.set_item("sup_forward", a.sup_forward.value())?;
    if let Some((w, m)) = windows {
        out.set_item("window", w)?;
        out.set_item("max_window_leakage", m)?;
    }
    let guarantee = PyDict::new(py);
    guarantee.set_item("quantity", a.guarantee.quantity.name())?;
    guarantee.set_item("bound", a.guarantee.bound)?;
    guarantee.set_item("holds", a.guarantee.holds(&a.audit))?;
    out.set_item("guarantee", guarantee)?;
    out.set_item("steady_budget", a.steady_budget)?;
    let limited_by = match &a.limited_by {
        Some(cap) => {
            let d = PyDict::new(py);
            d.set_item("side", cap.side.to_string())?;
            d.set_item("q", cap.q)?;
            d.set_item("epsilon", cap.epsilon)?;
            Some(d)
        }
        None => None,
    };
    out.set_item("limited_by", limited_by)?;
    Ok(out)
}

/// Adds this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(allocate, m)?)
}
