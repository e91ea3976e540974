//! Leakage of a window of consecutive releases (Theorem 3 of the TKDE paper): the basis of
//! w-event privacy under temporal correlation.

use crate::error::{CoreError, Result};
use crate::series::LeakageSeries;

/// For every window start t = 1..T−w+1, the leakage of steps t..t+w−1 (Theorem 3):
/// BPL_t + FPL_{t+w−1} + Σ_{k=t+1}^{t+w−2} ε_k for w ≥ 2, and TPL_t for w = 1.
///
/// The inner sums come from compensated prefix sums, so a window's value carries one
/// rounding of its own regardless of T; they are then rounded up by one ulp, so that the
/// reported leakage is never below the exact one.
///
/// # Errors
/// [`CoreError::BadWindow`] unless 1 ≤ w ≤ T; [`CoreError::Overflow`] when a window's
/// leakage exceeds the largest double.
pub fn window_leakage(series: &LeakageSeries, w: usize) -> Result<Vec<f64>> {
    let t_len = series.len();
    if w == 0 || w > t_len {
        return Err(CoreError::BadWindow { window: w, horizon: t_len });
    }
    if w == 1 {
        return Ok(series.tpl.clone());
    }
    let prefix = compensated_prefix(&series.epsilon);
    let values: Vec<f64> = (0..=t_len - w)
        .map(|t| {
            let end = t + w - 1;
            // Σ ε_k for k strictly between t and end (0-based), from the prefix sums.
            let inner = (prefix[end].0 - prefix[t + 1].0) + (prefix[end].1 - prefix[t + 1].1);
            round_up(series.bpl[t] + (series.fpl[end] + inner.max(0.0)))
        })
        .collect();
    match values.iter().position(|v| !v.is_finite()) {
        Some(t) => Err(CoreError::Overflow { step: t + 1 }),
        None => Ok(values),
    }
}

/// Σ values, compensated and rounded up by one ulp (a leakage bound must not round down).
pub(crate) fn outward_sum(values: &[f64]) -> f64 {
    let (s, c) = compensated_prefix(values)[values.len()];
    round_up(s + c)
}

/// One ulp up for a positive sum that carries rounding; an exact 0 stays 0.
fn round_up(x: f64) -> f64 {
    if x > 0.0 { x.next_up() } else { x }
}

/// Neumaier prefix sums: entry k holds (sum, compensation) of the first k values.
fn compensated_prefix(values: &[f64]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(values.len() + 1);
    let (mut sum, mut comp) = (0.0f64, 0.0f64);
    out.push((sum, comp));
    for &v in values {
        let t = sum + v;
        comp += if sum.abs() >= v.abs() { (sum - t) + v } else { (v - t) + sum };
        sum = t;
        out.push((sum, comp));
    }
    out
}
