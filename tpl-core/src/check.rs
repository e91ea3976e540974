//! The checks every crate applies to its privacy parameters, in one place: budgets, a target
//! leakage α, a window within a horizon, a sensitivity. Each returns the value it accepted,
//! and fails with the [`CoreError`] variant that names the value; other crates wrap
//! [`CoreError`] in their own error type.

use crate::error::{CoreError, Result};

/// Checks a budget sequence: non-empty, every ε_t finite and ≥ 0 (ε_t = 0 is a step that
/// publishes nothing).
///
/// # Errors
/// [`CoreError::EmptyHorizon`] or [`CoreError::BadBudget`] naming the 1-based step.
pub fn validate_budgets(budgets: &[f64]) -> Result<()> {
    check_horizon(budgets.len())?;
    match budgets.iter().position(|&e| !is_budget(e)) {
        Some(i) => Err(CoreError::BadBudget { step: i + 1, value: budgets[i] }),
        None => Ok(()),
    }
}

/// Whether ε_t is a valid per-step budget: finite and ≥ 0 (0: a step that spends nothing).
///
/// ```
/// assert!(tpl_core::is_budget(0.0) && !tpl_core::is_budget(-1.0) && !tpl_core::is_budget(f64::NAN));
/// ```
pub fn is_budget(eps: f64) -> bool {
    eps.is_finite() && eps >= 0.0
}

/// Checks a constant budget ε that must be spent: finite and > 0.
///
/// # Errors
/// [`CoreError::BadEpsilon`] otherwise.
pub fn check_epsilon(eps: f64) -> Result<f64> {
    if eps.is_finite() && eps > 0.0 { Ok(eps) } else { Err(CoreError::BadEpsilon(eps)) }
}

/// Checks a target leakage α (the α of α-DP_T an allocator aims at): finite and > 0.
///
/// # Errors
/// [`CoreError::BadAlpha`] otherwise.
pub fn check_alpha(alpha: f64) -> Result<f64> {
    if alpha.is_finite() && alpha > 0.0 { Ok(alpha) } else { Err(CoreError::BadAlpha(alpha)) }
}

/// Checks a sensitivity Δ (the L1 sensitivity of one step's histogram,
/// [`docs/model.md`](crate::guide::model) §1): finite and > 0.
///
/// # Errors
/// [`CoreError::BadSensitivity`] otherwise.
pub fn check_sensitivity(delta: f64) -> Result<f64> {
    if delta.is_finite() && delta > 0.0 { Ok(delta) } else { Err(CoreError::BadSensitivity(delta)) }
}

/// Checks a horizon T ≥ 1.
///
/// # Errors
/// [`CoreError::EmptyHorizon`] for T = 0.
pub fn check_horizon(horizon: usize) -> Result<usize> {
    if horizon == 0 { Err(CoreError::EmptyHorizon) } else { Ok(horizon) }
}

/// Checks a window of `window` consecutive steps within a horizon of `horizon` steps:
/// 1 ≤ w ≤ T (Theorem 3 of the TKDE paper sums over the steps of one window).
///
/// # Errors
/// [`CoreError::BadWindow`] otherwise.
pub fn check_window(window: usize, horizon: usize) -> Result<usize> {
    if window == 0 || window > horizon { Err(CoreError::BadWindow { window, horizon }) } else { Ok(window) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_check_names_the_value_it_refuses() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(check_epsilon(bad), Err(CoreError::BadEpsilon(_))));
            assert!(matches!(check_alpha(bad), Err(CoreError::BadAlpha(_))));
            assert!(matches!(check_sensitivity(bad), Err(CoreError::BadSensitivity(_))));
        }
        assert_eq!(check_epsilon(f64::MIN_POSITIVE), Ok(f64::MIN_POSITIVE));
        assert_eq!(check_alpha(2.5), Ok(2.5));
        assert_eq!(check_sensitivity(1.0), Ok(1.0));
        assert_eq!(check_horizon(0), Err(CoreError::EmptyHorizon));
        assert_eq!(check_window(0, 5), Err(CoreError::BadWindow { window: 0, horizon: 5 }));
        assert_eq!(check_window(6, 5), Err(CoreError::BadWindow { window: 6, horizon: 5 }));
        assert_eq!(check_window(5, 5), Ok(5));
        assert_eq!(validate_budgets(&[]), Err(CoreError::EmptyHorizon));
        assert_eq!(validate_budgets(&[0.0, -0.5]), Err(CoreError::BadBudget { step: 2, value: -0.5 }));
        assert_eq!(validate_budgets(&[0.0, 1.0]), Ok(()));
    }
}
