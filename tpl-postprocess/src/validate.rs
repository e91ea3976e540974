//! Input checks shared by every estimator ([docs/map.md](tpl_core::guide::map) §11, "Errors").
//! Validation happens once, at the public entry points; the solvers behind them work on plain
//! slices and trust it.

use tpl_core::ROW_SUM_TOLERANCE;

use crate::error::{PostprocessError, Result};

/// Largest population for which every count is exact in f64 ([docs/map.md](tpl_core::guide::map) §3
/// accuracy: N ≤ 2⁵³).
pub(crate) const MAX_EXACT_TOTAL: u64 = 1 << 53;

/// A release: n ≥ 1 finite values (any sign; [docs/map.md](tpl_core::guide::map) §1 "Estimators
/// accept any finite real releases").
pub(crate) fn release(r: &[f64]) -> Result<()> {
    if r.is_empty() {
        return Err(PostprocessError::NoCells);
    }
    match r.iter().position(|v| !v.is_finite()) {
        Some(i) => Err(PostprocessError::BadRelease { cell: i + 1, value: r[i] }),
        None => Ok(()),
    }
}

/// A release, its prior over the release's cells and the likelihood weight, checked in that
/// order (the checks every single-prior MAP entry point starts with).
pub(crate) fn step(r: &[f64], p: &[f64], a: f64) -> Result<()> {
    release(r)?;
    prior(p, r.len())?;
    weight(a)
}

/// A prior probability vector for `n` cells: finite, non-negative, summing to 1 within the
/// project-wide tolerance 1e-9 (the same as a transition matrix row).
pub(crate) fn prior(p: &[f64], n: usize) -> Result<()> {
    if p.len() != n {
        return Err(PostprocessError::PriorLength { len: p.len(), expected: n });
    }
    if let Some(i) = p.iter().position(|v| !(v.is_finite() && *v >= 0.0)) {
        return Err(PostprocessError::BadPriorEntry { cell: i + 1, value: p[i] });
    }
    let sum: f64 = p.iter().sum();
    if (sum - 1.0).abs() > ROW_SUM_TOLERANCE {
        return Err(PostprocessError::PriorSum { sum });
    }
    Ok(())
}

/// The likelihood weight a = ε_t/Δ ≥ 0 (a = 0: the release carries no information).
pub(crate) fn weight(a: f64) -> Result<()> {
    if a.is_finite() && a >= 0.0 { Ok(()) } else { Err(PostprocessError::BadWeight(a)) }
}

/// A real-valued population for the continuous estimators.
pub(crate) fn real_total(total: f64) -> Result<()> {
    if total.is_finite() && total >= 0.0 { Ok(()) } else { Err(PostprocessError::BadTotal(total)) }
}

/// An integer population, exact in f64.
pub(crate) fn integer_total(total: u64) -> Result<()> {
    if total <= MAX_EXACT_TOTAL { Ok(()) } else { Err(PostprocessError::TotalTooLarge(total)) }
}

/// A per-step budget ε_t ≥ 0 ([docs/map.md](tpl_core::guide::map) §5 "Budgets": 0 means no new
/// information).
pub(crate) fn budget(epsilon: f64) -> Result<()> {
    if epsilon.is_finite() && epsilon >= 0.0 { Ok(()) } else { Err(PostprocessError::BadBudget(epsilon)) }
}

/// An estimate to be scored: same length as the release, finite and non-negative.
pub(crate) fn estimate(x: &[f64], n: usize) -> Result<()> {
    if x.len() != n {
        return Err(PostprocessError::EstimateLength { len: x.len(), expected: n });
    }
    match x.iter().position(|v| !(v.is_finite() && *v >= 0.0)) {
        Some(i) => Err(PostprocessError::BadEstimate { cell: i + 1, value: x[i] }),
        None => Ok(()),
    }
}
