//! Whole-sequence smoothing `smooth` (docs/map.md §9): every step estimated from all the
//! releases of a recorded stream, past and future.
//!
//! A calibrated forward pass (the `map` filter of docs/map.md §8) predicts step t from the
//! releases before it; a calibrated backward pass, run from the last release to the first
//! through the backward matrix, predicts step t from the releases after it. Step t then
//! solves the MAP problem whose prior is the product of the two predictions, each raised to
//! its calibrated strength — a log-linear pool, which is again a MAP problem of docs/map.md §2
//! with one pooled prior, solved exactly by the breakpoint solver.

use crate::calibrate::Pass;
use crate::propagate::Mover;

use crate::error::{PostprocessError, Result};
use crate::filter::{Estimates, Estimator, FilterConfig, check_matrices, check_step, tempered_weight};
use crate::prior::{PriorPolicy, Warning};
use crate::{MapStep, map, validate};

/// One prior of a pooled MAP problem: a probability vector p and the strength w ≥ 0 its
/// multinomial log-density gets (w = 1/φ of docs/map.md §8; 1 is the DBSec paper's prior).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeightedPrior<'a> {
    /// The probability vector (finite, ≥ 0, summing to 1 within 1e-9).
    pub prior: &'a [f64],
    /// Its strength w ≥ 0 (finite).
    pub strength: f64,
}

/// The MAP estimate of one step under several priors at once (docs/map.md §9): the minimiser
/// of
///
///   H(x) = a Σ_i |x_i − r_i| + Σ_k w_k Σ_i (x_i ln(x_i/p_{k,i}) − x_i)
///
/// over real x ≥ 0 with Σx = N. With W = Σ_k w_k > 0 it equals the [`crate::map_step`]
/// solution for the pooled prior p̃_i ∝ Π_k p_{k,i}^{w_k/W} and the weight a/W (H/W differs
/// from that problem's objective by a constant on the feasible set); with W = 0 (no prior
/// at all) the least-squares point of the L1 minimisers, [`crate::mle_step`]. The returned
/// `lambda` is the multiplier of that single-prior problem.
///
/// # Errors
/// As [`crate::map_step`] for `r`, `total`, `a` and every prior;
/// [`BadWeight`](PostprocessError::BadWeight) for a strength that is negative or not finite;
/// [`NoPooledPrior`](PostprocessError::NoPooledPrior) when the priors with positive strength
/// share no cell (their product is 0 everywhere).
///
/// ```
/// use tpl_postprocess::{WeightedPrior, map_step, pooled_map_step};
/// // One prior at strength 1 is the DBSec step.
/// let one = [WeightedPrior { prior: &[0.5, 0.5], strength: 1.0 }];
/// let s = pooled_map_step(&[10.0, 0.0], &one, 10.0, 2f64.ln())?;
/// assert_eq!(s, map_step(&[10.0, 0.0], &[0.5, 0.5], 10.0, 2f64.ln())?);
/// // Two priors that disagree meet in between.
/// let two = [
///     WeightedPrior { prior: &[0.8, 0.2], strength: 1.0 },
///     WeightedPrior { prior: &[0.2, 0.8], strength: 1.0 },
/// ];
/// let s = pooled_map_step(&[0.0, 0.0], &two, 10.0, 1.0)?;
/// assert!((s.x[0] - 5.0).abs() < 1e-12);
/// # Ok::<(), tpl_postprocess::PostprocessError>(())
/// ```
pub fn pooled_map_step(r: &[f64], priors: &[WeightedPrior<'_>], total: f64, a: f64) -> Result<MapStep> {
    validate::release(r)?;
    validate::real_total(total)?;
    validate::weight(a)?;
    for p in priors {
        validate::prior(p.prior, r.len())?;
        validate::weight(p.strength)?;
    }
    let (pooled, strength) = pool(priors, r.len());
    if strength == 0.0 {
        return Ok(MapStep { x: crate::mle::solve(r, total), lambda: None });
    }
    let pooled = pooled.ok_or(PostprocessError::NoPooledPrior)?;
    Ok(map::solve(r, &pooled, total, tempered_weight(a, 1.0 / strength)))
}

/// The objective H of [`pooled_map_step`] at x (natural logarithms, no constant dropped,
/// 0 ln 0 = 0, +∞ where x_i > 0 and some prior of positive strength has p_{k,i} = 0). The
/// sum constraint is not checked.
///
/// # Errors
/// As [`pooled_map_step`] for the inputs; [`EstimateLength`](PostprocessError::EstimateLength)
/// or [`BadEstimate`](PostprocessError::BadEstimate) for x.
pub fn pooled_map_objective(r: &[f64], priors: &[WeightedPrior<'_>], a: f64, x: &[f64]) -> Result<f64> {
    validate::release(r)?;
    validate::weight(a)?;
    validate::estimate(x, r.len())?;
    let mut h: f64 = r.iter().zip(x).map(|(&ri, &xi)| a * (xi - ri).abs()).sum();
    for p in priors {
        validate::prior(p.prior, r.len())?;
        validate::weight(p.strength)?;
        if p.strength == 0.0 {
            continue;
        }
        for (&xi, &pi) in x.iter().zip(p.prior) {
            h += p.strength
                * match (xi > 0.0, pi > 0.0) {
                    (false, _) => 0.0,
                    (true, true) => xi * (xi.ln() - pi.ln()) - xi,
                    (true, false) => f64::INFINITY,
                };
        }
    }
    Ok(h)
}

/// The pooled prior p̃ ∝ Π_k p_k^{w_k/W} (`None` when it is 0 everywhere) and W = Σ_k w_k, on
/// validated input. Computed in log space from the largest log, so no underflow to 0 of a
/// cell where every prior is positive.
pub(crate) fn pool(priors: &[WeightedPrior<'_>], n: usize) -> (Option<Vec<f64>>, f64) {
    let strength: f64 = priors.iter().map(|p| p.strength).sum();
    if strength == 0.0 {
        return (None, 0.0);
    }
    let active: Vec<&WeightedPrior<'_>> = priors.iter().filter(|p| p.strength > 0.0).collect();
    if let [single] = active.as_slice() {
        return (Some(single.prior.to_vec()), strength);
    }
    let logs: Vec<f64> = (0..n)
        .map(|i| {
            let mut s = 0.0;
            for p in &active {
                let v = p.prior[i];
                if v <= 0.0 {
                    return f64::NEG_INFINITY;
                }
                s += (p.strength / strength) * v.ln();
            }
            s
        })
        .collect();
    let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if top == f64::NEG_INFINITY {
        return (None, strength);
    }
    let mut pooled: Vec<f64> = logs.iter().map(|&l| (l - top).exp()).collect();
    let sum: f64 = pooled.iter().sum();
    pooled.iter_mut().for_each(|v| *v /= sum);
    (Some(pooled), strength)
}

/// One direction's predictions: the prior of every step and its strength (at the pass's
/// first step, its initial prior at the DBSec strength 1).
struct Predictions {
    priors: Vec<Vec<f64>>,
    strengths: Vec<f64>,
    warnings: Vec<Warning>,
}

/// A calibrated pass over the steps in `order` (docs/map.md §8): at the first step the
/// `initial` prior at the DBSec strength, then the calibrated predictions.
fn pass(
    releases: &[&[f64]],
    weights: &[f64],
    order: impl Iterator<Item = usize>,
    mover: &Mover<'_>,
    initial: &PriorPolicy,
    total: u64,
) -> Predictions {
    let horizon = releases.len();
    let n_total = total as f64;
    let mut out = Predictions {
        priors: vec![Vec::new(); horizon],
        strengths: vec![0.0; horizon],
        warnings: Vec::new(),
    };
    let mut pass = Pass::new();
    for (k, t) in order.enumerate() {
        let r = releases[t];
        let (prior, dispersion) = match pass.predict(r, weights[t], n_total) {
            Some(p) => (p.prior, p.calibration.dispersion),
            None if k == 0 => {
                let (p, w) = initial.initial_unchecked(r);
                out.warnings = w;
                (p, 1.0)
            }
            // Only with N = 0, where every estimate is 0 and no prior matters.
            None => (vec![1.0 / r.len() as f64; r.len()], 1.0),
        };
        let estimate = if total == 0 {
            vec![0.0; r.len()]
        } else {
            map::solve(r, &prior, n_total, tempered_weight(weights[t], dispersion)).x
        };
        pass.observe(&estimate, Some(mover));
        out.priors[t] = prior;
        out.strengths[t] = 1.0 / dispersion;
    }
    out
}

/// The occupancy π under which the forward matrix is reversed when no backward matrix is
/// given (docs/map.md §9): the mean over steps of each release's positive part, normalised;
/// uniform when no release has a positive count.
fn occupancy(releases: &[&[f64]]) -> Vec<f64> {
    let n = releases[0].len();
    let mut pi = vec![0.0; n];
    for r in releases {
        let largest = r.iter().fold(0.0f64, |m, &v| m.max(v));
        if largest <= 0.0 {
            continue;
        }
        let scaled: Vec<f64> = r.iter().map(|&v| v.max(0.0) / largest).collect();
        let sum: f64 = scaled.iter().sum();
        pi.iter_mut().zip(&scaled).for_each(|(p, v)| *p += v / sum);
    }
    let sum: f64 = pi.iter().sum();
    if sum > 0.0 {
        pi.iter_mut().for_each(|p| *p /= sum);
        pi
    } else {
        vec![1.0 / n as f64; n]
    }
}

/// How many steps each direction's prediction of step t carried its last release that had
/// information (weight a > 0): k^f_t = t − s for the last such s < t, k^b_t = s − t for the
/// first such s > t (docs/map.md §9). A direction with no such release counts its initial
/// prior as one, one step before its first step.
fn carried(weights: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let horizon = weights.len();
    let (mut forward, mut backward) = (vec![0.0; horizon], vec![0.0; horizon]);
    let mut since = 0.0;
    for (k, &a) in forward.iter_mut().zip(weights) {
        since += 1.0;
        *k = since;
        if a > 0.0 {
            since = 0.0;
        }
    }
    since = 0.0;
    for (k, &a) in backward.iter_mut().zip(weights).rev() {
        since += 1.0;
        *k = since;
        if a > 0.0 {
            since = 0.0;
        }
    }
    (forward, backward)
}

/// The strengths of step t's forward and backward predictions (docs/map.md §9): together the
/// calibrated strengths of both, W = w^f + w^b, split in proportion to 1/k^f : 1/k^b — a
/// release carried k steps by the model has lost information in proportion to k.
fn split(total: f64, forward_steps: f64, backward_steps: f64) -> (f64, f64) {
    let share = backward_steps / (forward_steps + backward_steps);
    (total * share, total * (1.0 - share))
}

/// Step t of `smooth`: the MAP estimate under the pooled forward and backward predictions
/// (docs/map.md §9), the forward one carried `steps.0` steps from its last release with
/// information and the backward one `steps.1`.
fn combine(
    r: &[f64],
    weight: f64,
    (fwd, bwd): (&Predictions, &Predictions),
    t: usize,
    steps: (f64, f64),
    total: u64,
) -> Vec<f64> {
    let cells = r.len();
    if total == 0 {
        return vec![0.0; cells];
    }
    let (forward, backward) = split(fwd.strengths[t] + bwd.strengths[t], steps.0, steps.1);
    let priors = [
        WeightedPrior { prior: &fwd.priors[t], strength: forward },
        WeightedPrior { prior: &bwd.priors[t], strength: backward },
    ];
    let (pooled, strength) = pool(&priors, cells);
    // Predictions that share no cell (possible only with zeros in both): their average
    // weighted by strength, which keeps the two directions symmetric.
    let pooled = pooled.unwrap_or_else(|| {
        (0..cells)
            .map(|i| {
                (priors[0].strength * priors[0].prior[i] + priors[1].strength * priors[1].prior[i]) / strength
            })
            .collect()
    });
    map::solve(r, &pooled, total as f64, tempered_weight(weight, 1.0 / strength)).x
}

/// `smooth` over a recorded stream (docs/map.md §9); called by [`crate::filter`] after its
/// checks of the horizon, budget count and forward matrix.
pub(crate) fn smooth<R: AsRef<[f64]>>(
    releases: &[R],
    budgets: &[f64],
    config: FilterConfig<'_>,
) -> Result<Estimates> {
    let rows: Vec<&[f64]> = releases.iter().map(AsRef::as_ref).collect();
    let cells = rows[0].len();
    if cells == 0 {
        return Err(PostprocessError::NoCells);
    }
    validate::integer_total(config.total)?;
    tpl_core::check_sensitivity(config.sensitivity)?;
    check_matrices(&config, cells)?;
    config.prior.check(cells)?;
    let mut weights = Vec::with_capacity(rows.len());
    for (t, (r, &e)) in rows.iter().zip(budgets).enumerate() {
        weights.push(check_step(r, e, cells, config.sensitivity).map_err(|err| err.at_step(t + 1))?);
    }
    let horizon = rows.len();
    let total = config.total;
    let Some(forward) = config.forward else {
        // One step and no matrix: the forward prediction is the initial prior alone.
        let (p, warnings) = config.prior.initial_unchecked(rows[0]);
        let x = map::solve(rows[0], &p, total as f64, weights[0]).x;
        return Ok(Estimates { estimator: Estimator::Smooth, estimates: vec![x], warnings });
    };
    let backward = match config.backward {
        Some(b) => Mover::new(b),
        None => Mover::reversed(forward, &occupancy(&rows)),
    };
    let forward = Mover::new(forward);
    // The backward pass starts from the last release: the initial policy of step 1 does not
    // apply there, so it uses the frequency prior (uniform if uniform was asked for).
    let backward_initial = match config.prior {
        PriorPolicy::Uniform => PriorPolicy::Uniform,
        _ => PriorPolicy::Frequency,
    };
    let (fwd, bwd) = std::thread::scope(|scope| {
        let back =
            scope.spawn(|| pass(&rows, &weights, (0..horizon).rev(), &backward, &backward_initial, total));
        let fwd = pass(&rows, &weights, 0..horizon, &forward, &config.prior, total);
        let bwd = back.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (fwd, bwd)
    });
    // The pooled steps are independent: half of them on a second thread.
    let (forward_steps, backward_steps) = carried(&weights);
    let step = |t: usize| {
        combine(rows[t], weights[t], (&fwd, &bwd), t, (forward_steps[t], backward_steps[t]), total)
    };
    let half = horizon / 2;
    let estimates = std::thread::scope(|scope| {
        let first = scope.spawn(|| (0..half).map(step).collect::<Vec<_>>());
        let second: Vec<Vec<f64>> = (half..horizon).map(step).collect();
        let mut all = first.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        all.extend(second);
        all
    });
    Ok(Estimates { estimator: Estimator::Smooth, estimates, warnings: fwd.warnings })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carried_counts_the_steps_since_the_last_release_with_information() {
        let (forward, backward) = carried(&[1.0, 0.0, 0.0, 0.5, 0.0]);
        assert_eq!(forward, [1.0, 1.0, 2.0, 3.0, 1.0]);
        assert_eq!(backward, [3.0, 2.0, 1.0, 2.0, 1.0]);
        // No release with information: each direction counts from its initial prior.
        let (forward, backward) = carried(&[0.0; 3]);
        assert_eq!(forward, [1.0, 2.0, 3.0]);
        assert_eq!(backward, [3.0, 2.0, 1.0]);
    }

    #[test]
    fn the_split_keeps_the_total_and_favours_the_nearer_release() {
        assert_eq!(split(3.0, 1.0, 1.0), (1.5, 1.5));
        let (f, b) = split(2.0, 1.0, 3.0);
        assert_eq!((f, b), (1.5, 0.5));
        assert_eq!(f + b, 2.0);
    }
}
