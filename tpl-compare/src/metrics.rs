//! Error metrics of a release against the truth, over every step and cell (the utility
//! measures of Kellaris et al., "Differentially private event sequences over infinite
//! streams", and of the DBSec 2023 MAP experiments).

use crate::error::{CompareError, Result};

/// Mean absolute error over all steps and cells: `(1/(T·n)) Σ_t Σ_j |r_t[j] − c_t[j]|`.
///
/// # Errors
/// As [`mse`].
///
/// ```
/// let truth = [vec![0.0, 4.0], vec![2.0, 8.0]];
/// let release = [vec![1.0, 2.0], vec![2.0, 11.0]];
/// assert_eq!(tpl_compare::mae(&release, &truth)?, 1.5);
/// # Ok::<(), tpl_compare::CompareError>(())
/// ```
pub fn mae<R: AsRef<[f64]>, C: AsRef<[f64]>>(releases: &[R], truth: &[C]) -> Result<f64> {
    mean_over(releases, truth, |e, _| e.abs())
}

/// Mean squared error over all steps and cells: `(1/(T·n)) Σ_t Σ_j (r_t[j] − c_t[j])²`.
///
/// # Errors
/// [`CompareError::StepsMismatch`] or [`CompareError::CellsMismatch`] when the release and
/// the truth differ in shape (never a partial score); [`CompareError::EmptyStream`] when
/// there is no cell to average over.
pub fn mse<R: AsRef<[f64]>, C: AsRef<[f64]>>(releases: &[R], truth: &[C]) -> Result<f64> {
    mean_over(releases, truth, |e, _| e * e)
}

/// Mean relative error with floor δ > 0: `(1/(T·n)) Σ_t Σ_j |r_t[j] − c_t[j]| / max(|c_t[j]|, δ)`;
/// the floor keeps cells of count 0 from dividing by zero.
///
/// # Errors
/// [`CompareError::BadFloor`] unless δ is finite and > 0 (δ ≤ 0 would divide by zero);
/// otherwise as [`mse`].
pub fn mre<R: AsRef<[f64]>, C: AsRef<[f64]>>(releases: &[R], truth: &[C], floor: f64) -> Result<f64> {
    if !(floor.is_finite() && floor > 0.0) {
        return Err(CompareError::BadFloor(floor));
    }
    mean_over(releases, truth, |e, c| e.abs() / c.abs().max(floor))
}

/// The mean of f(r − c, c) over every cell, after checking that both streams have the same
/// shape.
fn mean_over<R: AsRef<[f64]>, C: AsRef<[f64]>>(
    releases: &[R],
    truth: &[C],
    f: impl Fn(f64, f64) -> f64,
) -> Result<f64> {
    if releases.len() != truth.len() {
        return Err(CompareError::StepsMismatch { releases: releases.len(), truth: truth.len() });
    }
    let (mut sum, mut n) = (0.0, 0usize);
    for (t, (r, c)) in releases.iter().zip(truth).enumerate() {
        let (r, c) = (r.as_ref(), c.as_ref());
        if r.len() != c.len() {
            return Err(CompareError::CellsMismatch { step: t + 1, releases: r.len(), truth: c.len() });
        }
        for (x, y) in r.iter().zip(c) {
            sum += f(x - y, *y);
        }
        n += c.len();
    }
    if n == 0 {
        let cells = truth.first().map_or(0, |c| c.as_ref().len());
        return Err(CompareError::EmptyStream { steps: truth.len(), cells });
    }
    Ok(sum / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_two_by_two() {
        let truth = vec![vec![0.0, 4.0], vec![2.0, 8.0]];
        let rel = vec![vec![1.0, 2.0], vec![2.0, 11.0]];
        // errors 1, −2, 0, 3
        assert_eq!(mae(&rel, &truth), Ok(6.0 / 4.0));
        assert_eq!(mse(&rel, &truth), Ok(14.0 / 4.0));
        // 1/max(0,1) + 2/4 + 0/2 + 3/8
        assert_eq!(mre(&rel, &truth, 1.0), Ok((1.0 + 0.5 + 0.0 + 0.375) / 4.0));
    }
}
