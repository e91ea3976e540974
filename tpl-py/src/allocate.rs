//! `allocate`: budgets per step that keep the temporal leakage under α (`tpl allocate`,
//! TKDE Algorithms 7 and 8 and the window allocator) through `tpl-alloc`.

use pyo3::prelude::*;
use tpl_alloc::{AllocError, AllocatorKind, Side};
use tpl_report::output::{AllocationOutput, NO_TICK};

use crate::TplError;
use crate::convert::{MatrixArg, Vector, check_horizon, correlation, error, vector};

/// The allocation as `tpl allocate` reports it: the JSON text of its fields but the
/// per-step arrays ([`AllocationOutput`]), then `budgets`, `bpl`, `fpl` and `tpl` as float
/// arrays.
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
) -> PyResult<(String, Vector<'py>, Vector<'py>, Vector<'py>, Vector<'py>)> {
    let kind = AllocatorKind::from_name(strategy).ok_or_else(|| {
        let names: Vec<&str> = AllocatorKind::ALL.iter().map(|k| k.name()).collect();
        TplError::new_err(format!("strategy {strategy:?}: not one of {}", names.join(", ")))
    })?;
    tpl_core::check_alpha(alpha).map_err(|e| error("alpha", e))?;
    check_horizon(horizon)?;
    if let Some(w) = window {
        tpl_core::check_window(w, horizon).map_err(|e| error("window", e))?;
    }
    let corr = correlation(backward.as_ref(), forward.as_ref())?;
    let done = py.detach(move || -> Result<_, (&'static str, AllocError)> {
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
    // The fields as `tpl allocate` prints them (one definition, tpl-report's), the per-step
    // arrays apart as float arrays.
    let output = AllocationOutput { alpha, allocation: &a, window: windows, arrays: false, tick: NO_TICK };
    let fields = serde_json::to_string(&output).map_err(|e| error("allocate", e))?;
    let s = &a.audit.series;
    let tpl: Vec<f64> = (0..s.len()).map(|t| s.tpl_at(t)).collect();
    Ok((
        fields,
        vector(py, s.budgets().to_vec()),
        vector(py, s.bpl().to_vec()),
        vector(py, s.fpl().to_vec()),
        vector(py, tpl),
    ))
}

/// Adds this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(allocate, m)?)
}
