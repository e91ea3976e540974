//! `release`: a w-event scheme over a stream of counts (`tpl release`,
//! [`docs/w-event.md`](tpl_core::guide::w_event)) through `tpl-mechanisms`, with the exact discrete
//! Laplace mechanism by default.

use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tpl_core::{CoreError, Short, TransitionMatrix};
use tpl_mechanisms::{
    Laplace, MechError, Mechanism, MechanismBuilder, PbaPool, SamplerKind, SchemeBuilder, SchemeInputs,
    SchemeKind, WEventParams, run,
};
use tpl_report::output::ReleaseOutput;

use crate::TplError;
use crate::convert::{MatrixArg, correlation, error, rows, table, vector};

/// The sampler called `name` (`secure` is another name of `discrete`, as on the command line).
pub fn sampler(name: &str) -> PyResult<SamplerKind> {
    let name = if name == "secure" { "discrete" } else { name };
    SamplerKind::from_name(name)
        .ok_or_else(|| TplError::new_err(format!("sampler {name:?}: not one of discrete, float")))
}

/// The scheme called `name`, as on the command line.
pub fn scheme_kind(name: &str) -> PyResult<SchemeKind> {
    SchemeKind::from_name(name).ok_or_else(|| {
        let all: Vec<&str> = SchemeKind::BUILT_IN.iter().map(|k| k.name()).collect();
        TplError::new_err(format!("scheme {name:?}: not one of {}", all.join(", ")))
    })
}

/// The checked w-event parameters; an error names the argument at fault.
pub fn params(epsilon: f64, window: usize, sensitivity: f64) -> PyResult<WEventParams> {
    WEventParams::new(epsilon, window, sensitivity).map_err(|e| {
        let what = match e {
            MechError::BadWindow(_) => "window",
            MechError::Core(CoreError::BadSensitivity(_)) => "sensitivity",
            _ => "epsilon",
        };
        error(what, e)
    })
}

/// Checks that a matrix has one row per cell of the counts.
pub fn check_size(m: Option<&TransitionMatrix>, side: &str, cells: usize) -> PyResult<()> {
    match m {
        Some(m) if m.n() != cells => Err(TplError::new_err(format!(
            "{side}: the {side} matrix is {0}×{0} but the counts have {cells} cells",
            m.n()
        ))),
        _ => Ok(()),
    }
}

/// Why the mechanism refuses one step's counts, naming the cell (0-based: `counts[:, cell]`,
/// the column `c{cell}` of a counts file), or `None`: a value that is not finite first
/// (NaN is not "not an integer"), then the mechanism's own validation, as `tpl release`
/// checks a counts file row by row. `hint` follows the reasons the float sampler would not
/// have (an integer sampler's).
pub fn row_refusal<M: Mechanism>(mechanism: &M, row: &[f64], hint: &str) -> Option<String> {
    if let Some(cell) = row.iter().position(|v| !v.is_finite()) {
        return Some(format!("cell {cell}: count {} is not a finite number", Short(row[cell])));
    }
    mechanism.validate(row).err().map(|e| match e {
        MechError::NotInteger { value } => {
            let cell = row.iter().position(|v| v.fract() != 0.0).unwrap_or(0);
            format!(
                "cell {cell}: count {} is not an integer: the exact integer sampler needs integer counts{hint}",
                Short(value)
            )
        }
        MechError::CountTooLarge { .. } => format!("{e}{hint}"),
        other => other.to_string(),
    })
}

/// Checks every row ([`row_refusal`]) before any noise is drawn; errors name the step
/// (1-based) and the cell.
pub fn validate_rows<M: Mechanism>(mechanism: &M, counts: &[Vec<f64>], hint: &str) -> PyResult<()> {
    for (t, row) in counts.iter().enumerate() {
        if let Some(why) = row_refusal(mechanism, row, hint) {
            return Err(TplError::new_err(format!("counts: step {}, {why}", t + 1)));
        }
    }
    Ok(())
}

/// The hint of a refusal the float sampler would not make.
pub const FLOAT_HINT: &str = " (sampler=\"float\" takes any data, but is not release-grade)";

/// A release as `tpl release` makes it: the JSON text of its fields but the per-step arrays
/// ([`ReleaseOutput`]), and a dict of those arrays as numpy arrays; `wevent` is (ε, w, Δ).
#[pyfunction]
#[pyo3(signature = (counts, scheme, wevent, backward, forward, budgets, seed, sampler_name, interval))]
#[allow(clippy::too_many_arguments)]
fn release<'py>(
    py: Python<'py>,
    counts: PyReadonlyArray2<'py, f64>,
    scheme: &str,
    wevent: (f64, usize, f64),
    backward: Option<MatrixArg<'py>>,
    forward: Option<MatrixArg<'py>>,
    budgets: Option<PyReadonlyArray1<'py, f64>>,
    seed: Option<u64>,
    sampler_name: &str,
    interval: Option<f64>,
) -> PyResult<(String, Bound<'py, PyDict>)> {
    let (epsilon, window, sensitivity) = wevent;
    let params = params(epsilon, window, sensitivity)?;
    let kind = scheme_kind(scheme)?;
    if kind == SchemeKind::Pba && backward.is_none() && forward.is_none() {
        return Err(TplError::new_err(
            "scheme pba needs backward= and/or forward=: its correlation pool depends on them",
        ));
    }
    let plan = match (budgets, kind) {
        (Some(b), SchemeKind::Planned) => b.as_array().to_vec(),
        (None, SchemeKind::Planned) => {
            return Err(TplError::new_err("scheme planned needs budgets=: the budget of every step"));
        }
        (Some(_), _) => return Err(TplError::new_err("budgets= is for scheme planned only")),
        (None, _) => Vec::new(),
    };
    let kind_sampler = sampler(sampler_name)?;
    let counts = rows(&counts);
    let cells = counts.first().map_or(0, Vec::len);
    let known = correlation(backward.as_ref(), forward.as_ref())?;
    check_size(known.backward(), "backward", cells)?;
    check_size(known.forward(), "forward", cells)?;
    let used = (
        backward.as_ref().zip(known.backward()).map(|(a, m)| a.used(m)),
        forward.as_ref().zip(known.forward()).map(|(a, m)| a.used(m)),
    );
    let out = py.detach(move || -> PyResult<_> {
        let mechanism = Laplace.build(kind_sampler.source(seed));
        let hint = match kind_sampler {
            SamplerKind::Discrete => FLOAT_HINT,
            _ => "",
        };
        validate_rows(&mechanism, &counts, hint)?;
        let inputs = SchemeInputs { pba_pool: PbaPool::detect(&known), plan };
        let mut scheme =
            SchemeBuilder::build(&kind, params, &inputs, mechanism).map_err(|e| error("budgets", e))?;
        let done = run(scheme.as_mut(), &counts).map_err(|e| {
            // A budget the parameters make too small or too large is theirs together, as
            // the command line names them: `--epsilon E (with --window W and --sensitivity D)`.
            let what = match e {
                MechError::ScaleTooLarge { .. }
                | MechError::Core(CoreError::BadEpsilon(_))
                | MechError::BadScale(_)
                | MechError::WindowSumOverflow { .. } => {
                    format!(
                        "epsilon {} (with window {window} and sensitivity {})",
                        Short(epsilon),
                        Short(sensitivity)
                    )
                }
                _ => "counts".into(),
            };
            // A reason that names its step, or is the whole run's (what a window spends), is
            // not given a step.
            match (e.step(), &e) {
                (Some(_), _) | (None, MechError::WindowSumOverflow { .. }) => error(&what, e),
                (None, _) => error(&format!("{what}: step {}", scheme.steps() + 1), e),
            }
        })?;
        let intervals = interval
            .map(|level| done.intervals(sensitivity, kind_sampler, level))
            .transpose()
            .map_err(|e| error("interval", e))?;
        Ok((done, intervals))
    });
    let (done, intervals) = out?;
    // The fields as `tpl release` prints them (one definition, tpl-report's), the per-step
    // arrays apart as numpy arrays.
    let output = ReleaseOutput {
        scheme: kind.name(),
        epsilon,
        window,
        sensitivity,
        sampler: kind_sampler,
        seeded: seed.is_some(),
        build: None,
        t: None,
        run: &done,
        backward: used.0.as_ref(),
        forward: used.1.as_ref(),
        intervals: intervals.as_ref(),
        arrays: false,
    };
    let fields = serde_json::to_string(&output).map_err(|e| error("release", e))?;
    let spent = &done.spent;
    let publication = spent.iter().zip(&done.published).map(|(s, &p)| if p { s.publication } else { 0.0 });
    let arrays = PyDict::new(py);
    arrays.set_item("published", PyArray1::from_vec(py, done.published.clone()))?;
    arrays.set_item("budget", vector(py, done.budgets()))?;
    arrays.set_item("test_budget", vector(py, spent.iter().map(|s| s.test).collect()))?;
    arrays.set_item("publication_budget", vector(py, publication.collect()))?;
    arrays.set_item("releases", table(py, &done.releases)?)?;
    if let Some(i) = intervals {
        arrays.set_item("lower", table(py, &i.lower)?)?;
        arrays.set_item("upper", table(py, &i.upper)?)?;
    }
    Ok((fields, arrays))
}

/// Adds this module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(release, m)?)
}
