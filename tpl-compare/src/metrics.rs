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
    mean_over(releases, truth, |e, _, _| e.abs())
}

/// Mean squared error over all steps and cells: `(1/(T·n)) Σ_t Σ_j (r_t[j] − c_t[j])²`.
///
/// # Errors
/// [`CompareError::StepsMismatch`] or [`CompareError::CellsMismatch`] when the release and
/// the truth differ in shape (never a partial score); [`CompareError::EmptyStream`] when
/// there is no cell to average over.
pub fn mse<R: AsRef<[f64]>, C: AsRef<[f64]>>(releases: &[R], truth: &[C]) -> Result<f64> {
    mean_over(releases, truth, |e, _, _| e * e)
}

/// Mean relative error as the w-event benchmark scores it (Schäler, Hütter and Schäler,
/// PVLDB 16(8), 2023): `(1/(T·n)) Σ_t Σ_j |r_t[j] − c_t[j]| / max(c_t[j], δ_j)` with δ_j one
/// percent of cell j's total `Σ_t c_t[j]`, so that the steps where a busy cell is nearly empty
/// are not divided by almost nothing. A cell whose total is not positive (never occupied) has
/// no such scale: its errors are divided by `max(c_t[j], 1)`, one person.
///
/// # Errors
/// As [`mse`].
///
/// ```
/// // Cell 0 holds 100 people in all, so its floor is 1; cell 1 holds none.
/// let truth = [vec![0.0, 0.0], vec![100.0, 0.0]];
/// let release = [vec![2.0, 3.0], vec![90.0, -1.0]];
/// // (2/max(0, 1) + 3/1 + 10/100 + 1/1) / 4
/// assert_eq!(tpl_compare::mre(&release, &truth)?, (2.0 + 3.0 + 0.1 + 1.0) / 4.0);
/// # Ok::<(), tpl_compare::CompareError>(())
/// ```
pub fn mre<R: AsRef<[f64]>, C: AsRef<[f64]>>(releases: &[R], truth: &[C]) -> Result<f64> {
    let cells = truth.first().map_or(0, |c| c.as_ref().len());
    let mut totals = vec![0.0; cells];
    for c in truth {
        totals.iter_mut().zip(c.as_ref()).for_each(|(total, v)| *total += v);
    }
    let floors: Vec<f64> = totals.iter().map(|total| if *total > 0.0 { 0.01 * total } else { 1.0 }).collect();
    mean_over(releases, truth, |e, c, j| e.abs() / c.max(floors.get(j).copied().unwrap_or(1.0)))
}

/// The mean of f(r − c, c, j) over every cell j of every step, after checking that both streams have the same
/// shape.
fn mean_over<R: AsRef<[f64]>, C: AsRef<[f64]>>(
    releases: &[R],
    truth: &[C],
    f: impl Fn(f64, f64, usize) -> f64,
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
        for (j, (x, y)) in r.iter().zip(c).enumerate() {
            sum += f(x - y, *y, j);
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
        // Floors 0.02 and 0.12 (1 % of the cells' totals): 1/0.02 + 2/4 + 0/2 + 3/8
        assert_eq!(mre(&rel, &truth), Ok((50.0 + 0.5 + 0.0 + 0.375) / 4.0));
    }
}
