//! The pooled MAP step (docs/map.md §9): one step's MAP estimate under several weighted
//! priors at once — a log-linear pool, which is again a MAP problem of docs/map.md §2 with
//! one pooled prior, solved exactly by the breakpoint solver.

use crate::numeric::{divide, exp_vectorised, ln_vectorised};
use crate::widest::at_widest;

use crate::error::{PostprocessError, Result};
use crate::filter::tempered_weight;
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
/// cell where every prior is positive; with the branch-free logarithm and exponential of
/// [`crate::numeric`] (within 2 ulps of the library's) at the widest vector width.
pub(crate) fn pool(priors: &[WeightedPrior<'_>], n: usize) -> (Option<Vec<f64>>, f64) {
    let strength: f64 = priors.iter().map(|p| p.strength).sum();
    if strength == 0.0 {
        return (None, 0.0);
    }
    let active: Vec<&WeightedPrior<'_>> = priors.iter().filter(|p| p.strength > 0.0).collect();
    if let [single] = active.as_slice() {
        return (Some(single.prior.to_vec()), strength);
    }
    if let [first, second] = active.as_slice()
        && first.strength == second.strength
    {
        // Two priors of the same strength: p̃ ∝ √(p₁·p₂), taken as √p₁·√p₂ (no
        // logarithm). Unless the products are so small that some would lose precision
        // below the normal range: then in log space.
        let mut means = vec![0.0; n];
        let sum = geometric_means(first.prior, second.prior, &mut means);
        if sum >= SMALLEST_GEOMETRIC_SUM {
            let mut pooled = vec![0.0; n];
            divide(&means, sum, &mut pooled);
            return (Some(pooled), strength);
        }
    }
    let mut logs = vec![0.0; n];
    for p in &active {
        add_logs(p.prior, p.strength / strength, &mut logs);
    }
    // The largest in eight lanes (a maximum is exact in any order).
    let mut lanes = [f64::NEG_INFINITY; 8];
    let mut chunks = logs.chunks_exact(8);
    for chunk in &mut chunks {
        lanes.iter_mut().zip(chunk).for_each(|(m, &v)| *m = m.max(v));
    }
    let top = chunks.remainder().iter().chain(&lanes).copied().fold(f64::NEG_INFINITY, f64::max);
    if top == f64::NEG_INFINITY {
        return (None, strength);
    }
    let sum = exponentials(&mut logs, top);
    let mut pooled = vec![0.0; n];
    divide(&logs, sum, &mut pooled);
    (Some(pooled), strength)
}

/// The smallest sum of the means √p₁·√p₂ that [`pool`] normalises as they are (below it,
/// in log space from the largest): above it a mean below the normal range (2⁻¹⁰²²) is less
/// than 10⁻¹⁰⁷ of the sum, a share the log-space path would form as a subnormal too.
const SMALLEST_GEOMETRIC_SUM: f64 = 1e-200;

at_widest! {
    /// out_i = √a_i·√b_i, and their sum (in [`LANES`] running sums added pairwise); at the
    /// widest vector width ([`crate::widest`]; every width gives the same bits).
    fn geometric_means(a: &[f64], b: &[f64], out: &mut [f64]) -> f64 = geometric_means_portable;
}

/// The loop of [`geometric_means`]: cell i goes to lane i mod [`LANES`].
#[inline(always)]
fn geometric_means_portable(a: &[f64], b: &[f64], out: &mut [f64]) -> f64 {
    let mut acc = [0.0f64; LANES];
    let mut chunks = out.chunks_exact_mut(LANES).zip(a.chunks_exact(LANES).zip(b.chunks_exact(LANES)));
    for (o, (x, y)) in &mut chunks {
        for l in 0..LANES {
            o[l] = x[l].sqrt() * y[l].sqrt();
            acc[l] += o[l];
        }
    }
    let done = out.len() - out.len() % LANES;
    for (l, ((o, &x), &y)) in out[done..].iter_mut().zip(&a[done..]).zip(&b[done..]).enumerate() {
        *o = x.sqrt() * y.sqrt();
        acc[l] += *o;
    }
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
}

at_widest! {
    /// logs_i += c·ln p_i (−∞ where p_i = 0), for c > 0; at the widest vector width
    /// ([`crate::widest`]).
    fn add_logs(p: &[f64], c: f64, logs: &mut [f64]) = add_logs_portable;
}

/// The loop of [`add_logs`].
#[inline(always)]
fn add_logs_portable(p: &[f64], c: f64, logs: &mut [f64]) {
    for (l, &v) in logs.iter_mut().zip(p) {
        *l += c * ln_vectorised(v);
    }
}

at_widest! {
    /// logs_i ← e^{logs_i − top} for logs_i ≤ top, and their sum (in [`LANES`] running sums
    /// added pairwise); at the widest vector width ([`crate::widest`]; every width gives the
    /// same bits).
    fn exponentials(logs: &mut [f64], top: f64) -> f64 = exponentials_portable;
}

/// Running sums of [`exponentials`].
const LANES: usize = 8;

/// The loop of [`exponentials`]: cell i goes to lane i mod [`LANES`].
#[inline(always)]
fn exponentials_portable(logs: &mut [f64], top: f64) -> f64 {
    let mut acc = [0.0f64; LANES];
    let mut chunks = logs.chunks_exact_mut(LANES);
    for chunk in &mut chunks {
        for (a, l) in acc.iter_mut().zip(chunk.iter_mut()) {
            *l = exp_vectorised(*l - top);
            *a += *l;
        }
    }
    for (a, l) in acc.iter_mut().zip(chunks.into_remainder()) {
        *l = exp_vectorised(*l - top);
        *a += *l;
    }
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pooled prior from logarithms and exponentials of the library, as [`pool`] formed
    /// it before: the reference of its faster forms.
    fn reference_pool(priors: &[WeightedPrior<'_>], n: usize) -> Option<Vec<f64>> {
        let strength: f64 = priors.iter().map(|p| p.strength).sum();
        let logs: Vec<f64> = (0..n)
            .map(|i| {
                let mut s = 0.0;
                for p in priors.iter().filter(|p| p.strength > 0.0) {
                    if p.prior[i] <= 0.0 {
                        return f64::NEG_INFINITY;
                    }
                    s += (p.strength / strength) * p.prior[i].ln();
                }
                s
            })
            .collect();
        let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if top == f64::NEG_INFINITY {
            return None;
        }
        let e: Vec<f64> = logs.iter().map(|&l| (l - top).exp()).collect();
        let sum: f64 = e.iter().sum();
        Some(e.iter().map(|v| v / sum).collect())
    }

    /// Two priors of equal strength (the geometric means, and their log-space fallback when
    /// the means are tiny), of unequal strengths and three priors: the pool is the one from
    /// the library's logarithms within 1e-13 relative, zeros where a prior is 0, `None`
    /// where the priors share no cell.
    #[test]
    fn pooled_prior_matches_the_library_logarithms() {
        let mut numbers = Numbers(0x0123_4567_89ab_cdef);
        for n in [1, 2, 7, 8, 9, 100, 1000] {
            for case in 0..6 {
                let mut prior = |zeros: bool, tiny: bool| -> Vec<f64> {
                    let w: Vec<f64> = (0..n)
                        .map(|_| {
                            let v = numbers.next();
                            if zeros && v < 0.2 {
                                0.0
                            } else if tiny {
                                v * 1e-290
                            } else {
                                v
                            }
                        })
                        .collect();
                    let s: f64 = w.iter().sum();
                    if s > 0.0 { w.iter().map(|v| v / s).collect() } else { vec![1.0 / n as f64; n] }
                };
                let (a, b, c) = (prior(case % 2 == 1, false), prior(case == 3, false), prior(false, false));
                // Case 4: two priors that share one cell, where both are 1e-250 (its mean is
                // below 1e-200: the log-space fallback).
                if case == 4 && n > 2 {
                    let (mut x, mut y) = (vec![0.0; n], vec![0.0; n]);
                    (x[0], x[1], y[1], y[2]) = (1.0 - 1e-250, 1e-250, 1e-250, 1.0 - 1e-250);
                    let pair = [
                        WeightedPrior { prior: &x, strength: 3.0 },
                        WeightedPrior { prior: &y, strength: 3.0 },
                    ];
                    check(&pair, n);
                    let (pooled, _) = pool(&pair, n);
                    assert_eq!(pooled.map(|p| p[1]), Some(1.0));
                }
                let strengths: [(f64, f64, f64); 3] = [(64.0, 64.0, 0.0), (2.0, 0.25, 0.0), (1.0, 4.0, 0.5)];
                for (sa, sb, sc) in strengths {
                    let priors = [
                        WeightedPrior { prior: &a, strength: sa },
                        WeightedPrior { prior: &b, strength: sb },
                        WeightedPrior { prior: &c, strength: sc },
                    ];
                    check(&priors, n);
                }
            }
        }
        // Disjoint priors: nothing shared.
        let (a, b) = ([1.0, 0.0], [0.0, 1.0]);
        let pair = [WeightedPrior { prior: &a, strength: 1.0 }, WeightedPrior { prior: &b, strength: 1.0 }];
        assert_eq!(pool(&pair, 2), (None, 2.0));
    }

    fn check(priors: &[WeightedPrior<'_>], n: usize) {
        let (got, strength) = pool(priors, n);
        assert_eq!(strength, priors.iter().map(|p| p.strength).sum::<f64>());
        let want = reference_pool(priors, n);
        match (got, want) {
            (Some(g), Some(w)) => {
                for (i, (x, y)) in g.iter().zip(&w).enumerate() {
                    assert!((x - y).abs() <= 1e-13 * y, "n = {n}, cell {i}: {x} vs {y}");
                }
            }
            (g, w) => assert_eq!(g, w, "n = {n}"),
        }
    }

    /// A fixed pseudo-random stream: uniform numbers in [0, 1).
    struct Numbers(u64);

    impl Numbers {
        fn next(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }
}
