//! Confidence intervals of count estimates by a parametric bootstrap (docs/map.md,
//! "Intervals"): the estimate is taken as the truth, released again through the same
//! mechanism with the same budgets, estimated again by the same estimator, and the spread of
//! the replicates' errors around that truth gives each cell's interval.

use crate::error::{PostprocessError, Result};

/// The settings of [`bootstrap_intervals`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bootstrap {
    /// The nominal coverage, in (0, 1).
    pub level: f64,
    /// B, the number of replicate releases (≥ 2; the quantiles of B errors per cell).
    pub replicates: usize,
}

/// A replicate release of one step: the truth it releases and the publication budget
/// ε_pub > 0, answered by the same mechanism as the real release (the caller's randomness).
pub type ReleaseFn<'a> = dyn FnMut(&[f64], f64) -> std::result::Result<Vec<f64>, String> + 'a;

/// The estimator whose error is bootstrapped: releases (T × n) to estimates (T × n).
pub type EstimatorFn<'a> = dyn FnMut(&[Vec<f64>]) -> Result<Vec<Vec<f64>>> + 'a;

/// Per-cell intervals [lower, upper] of the estimates `estimate` (T × n), from a parametric
/// bootstrap of B replicates:
///
/// 1. the truth of the bootstrap world is c*_t = `estimate`[t], rounded to the nearest
///    integers whose sum is the row's rounded sum (largest remainders) so that an integer
///    mechanism accepts it;
/// 2. each replicate releases c*_t afresh with `release(c*_t, ε_t)` at the steps whose
///    publication budget `budgets[t]` is > 0 and repeats its previous release at the others,
///    as the scheme did;
/// 3. `estimator` turns the replicate releases into x*_t, and e*_t = x*_t − c*_t is one draw of
///    the estimator's error;
/// 4. with α = 1 − level, lower = x̂ − q_{1−α/2}(e*) and upper = x̂ − q_{α/2}(e*) per cell (the
///    basic bootstrap: a biased estimator's bias is removed, not doubled), rounded outwards
///    to whole numbers (true counts are whole, so no coverage is lost) and clipped to
///    [0, N_t] with N_t the row's sum, rounded.
///
/// Memory: B·T·n errors (8 bytes each), which the caller bounds.
///
/// ```
/// use tpl_postprocess::{Bootstrap, bootstrap_intervals};
/// // The identity estimator of a release with noise ±1: the interval has width 2.
/// let estimate = vec![vec![5.0, 5.0]];
/// let mut flip = 1.0;
/// let mut release = |c: &[f64], _eps: f64| {
///     flip = -flip;
///     Ok(c.iter().map(|v| v + flip).collect())
/// };
/// let mut identity = |r: &[Vec<f64>]| Ok(r.to_vec());
/// let b = Bootstrap { level: 0.9, replicates: 10 };
/// let (lo, hi) = bootstrap_intervals(&estimate, &[1.0], b, &mut release, &mut identity)?;
/// assert_eq!((lo[0][0], hi[0][0]), (4.0, 6.0));
/// # Ok::<(), tpl_postprocess::PostprocessError>(())
/// ```
///
/// # Errors
/// [`PostprocessError::Bootstrap`] for a level outside (0, 1), fewer than two replicates,
/// budgets of another length than the estimate, a first step without a publication, or a
/// replicate the release or the estimator refused.
pub fn bootstrap_intervals(
    estimate: &[Vec<f64>],
    budgets: &[f64],
    config: Bootstrap,
    release: &mut ReleaseFn<'_>,
    estimator: &mut EstimatorFn<'_>,
) -> Result<(Vec<Vec<f64>>, Vec<Vec<f64>>)> {
    let bad = |m: String| PostprocessError::Bootstrap(m);
    let Bootstrap { level, replicates } = config;
    if !(level > 0.0 && level < 1.0) {
        return Err(bad(format!("level {level} is not strictly between 0 and 1")));
    }
    if replicates < 2 {
        return Err(bad(format!("{replicates} replicates: at least 2 are needed")));
    }
    if budgets.len() != estimate.len() {
        return Err(bad(format!("{} budgets for {} steps", budgets.len(), estimate.len())));
    }
    if budgets.first().is_some_and(|&b| b <= 0.0) {
        return Err(bad("the first step has no publication budget: nothing to repeat".into()));
    }
    let truth: Vec<Vec<f64>> = estimate.iter().map(|row| round_keeping_sum(row)).collect();
    let cells: usize = estimate.iter().map(Vec::len).sum();
    // errors[k·B + b]: replicate b's error at the k-th (step, cell), steps then cells.
    let mut errors = vec![0.0; cells * replicates];
    for b in 0..replicates {
        let mut releases: Vec<Vec<f64>> = Vec::with_capacity(truth.len());
        for (t, (c, &eps)) in truth.iter().zip(budgets).enumerate() {
            let r = match releases.last() {
                Some(last) if eps <= 0.0 => last.clone(),
                _ => release(c, eps).map_err(|e| bad(format!("replicate {}, step {}: {e}", b + 1, t + 1)))?,
            };
            releases.push(r);
        }
        let x = estimator(&releases).map_err(|e| bad(format!("replicate {}: {e}", b + 1)))?;
        let mut k = 0;
        for (xt, ct) in x.iter().zip(&truth) {
            for (v, c) in xt.iter().zip(ct) {
                errors[k * replicates + b] = v - c;
                k += 1;
            }
        }
    }
    let alpha = 1.0 - level;
    let (mut lower, mut upper) = (Vec::with_capacity(estimate.len()), Vec::with_capacity(estimate.len()));
    let mut k = 0;
    for row in estimate {
        let total: f64 = row.iter().sum();
        let (mut lo, mut hi) = (Vec::with_capacity(row.len()), Vec::with_capacity(row.len()));
        for &x in row {
            let e = &mut errors[k * replicates..(k + 1) * replicates];
            e.sort_by(f64::total_cmp);
            // True counts are whole numbers: an end rounded outwards to one loses nothing.
            let cap = total.max(0.0).round();
            lo.push((x - quantile(e, 1.0 - alpha / 2.0)).floor().clamp(0.0, cap));
            hi.push((x - quantile(e, alpha / 2.0)).ceil().clamp(0.0, cap));
            k += 1;
        }
        lower.push(lo);
        upper.push(hi);
    }
    Ok((lower, upper))
}

/// The `p`-quantile of sorted values, interpolated linearly between order statistics (the
/// usual "type 7" definition).
fn quantile(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let (i, frac) = (h.floor() as usize, h - h.floor());
    match sorted.get(i + 1) {
        Some(&next) => sorted[i] + frac * (next - sorted[i]),
        None => sorted[i],
    }
}

/// Nearest non-negative integers whose sum is the rounded sum of `row`: floors, then one
/// more to the largest remainders.
fn round_keeping_sum(row: &[f64]) -> Vec<f64> {
    let target = row.iter().map(|v| v.max(0.0)).sum::<f64>().round();
    let mut out: Vec<f64> = row.iter().map(|v| v.max(0.0).floor()).collect();
    let mut missing = (target - out.iter().sum::<f64>()).max(0.0) as usize;
    let mut order: Vec<usize> = (0..row.len()).collect();
    order.sort_by(|&a, &b| (row[b] - out[b]).total_cmp(&(row[a] - out[a])));
    for &j in order.iter().cycle().take(row.len().saturating_mul(2)) {
        if missing == 0 {
            break;
        }
        out[j] += 1.0;
        missing -= 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tpl_mechanisms::{FloatLaplace, NoiseSource};

    #[test]
    fn the_identity_estimator_of_laplace_releases_covers_its_level() {
        // Truth 50 per cell; releases at scale 4; the bootstrap around each release.
        let (steps, cells, level) = (200, 20, 0.9);
        let mut noise = FloatLaplace::seeded(7);
        let truth = vec![50.0; cells];
        let releases: Vec<Vec<f64>> =
            (0..steps).map(|_| truth.iter().map(|c| c + noise.laplace(4.0).unwrap()).collect()).collect();
        let mut boot_noise = FloatLaplace::seeded(8);
        let mut release =
            |c: &[f64], eps: f64| Ok(c.iter().map(|v| v + boot_noise.laplace(2.0 / eps).unwrap()).collect());
        let mut identity = |r: &[Vec<f64>]| Ok(r.to_vec());
        let budgets = vec![0.5; steps];
        let config = Bootstrap { level, replicates: 200 };
        let (lo, hi) = bootstrap_intervals(&releases, &budgets, config, &mut release, &mut identity).unwrap();
        let covered = (0..steps)
            .flat_map(|t| (0..cells).map(move |j| (t, j)))
            .filter(|&(t, j)| lo[t][j] <= 50.0 && 50.0 <= hi[t][j])
            .count();
        let coverage = covered as f64 / (steps * cells) as f64;
        assert!((coverage - level).abs() < 0.03, "coverage {coverage}");
    }

    #[test]
    fn repeats_are_released_again_as_repeats_and_bad_settings_are_refused() {
        let estimate = vec![vec![3.0, 1.0], vec![2.0, 2.0]];
        let calls = std::cell::Cell::new(0);
        let mut release = |c: &[f64], _: f64| {
            calls.set(calls.get() + 1);
            Ok(c.to_vec())
        };
        let mut identity = |r: &[Vec<f64>]| Ok(r.to_vec());
        let config = Bootstrap { level: 0.9, replicates: 3 };
        let (lo, _) =
            bootstrap_intervals(&estimate, &[1.0, 0.0], config, &mut release, &mut identity).unwrap();
        // Step 2 repeats step 1's replicate: its error is (3, 1) − (2, 2).
        assert_eq!(lo[1], vec![1.0, 3.0]);
        assert_eq!(calls.get(), 3);
        for (budgets, level, replicates) in [
            (vec![0.0, 1.0], 0.9, 3),
            (vec![1.0], 0.9, 3),
            (vec![1.0, 1.0], 1.0, 3),
            (vec![1.0, 1.0], 0.9, 1),
        ] {
            let c = Bootstrap { level, replicates };
            assert!(bootstrap_intervals(&estimate, &budgets, c, &mut release, &mut identity).is_err());
        }
    }

    #[test]
    fn rounding_keeps_the_rounded_sum() {
        assert_eq!(round_keeping_sum(&[0.4, 0.4, 0.2]), vec![1.0, 0.0, 0.0]);
        assert_eq!(round_keeping_sum(&[2.6, 1.7, 0.7]), vec![2.0, 2.0, 1.0]);
        assert_eq!(round_keeping_sum(&[1.0, 2.0]), vec![1.0, 2.0]);
    }
}
