//! Confidence intervals of count estimates by a parametric bootstrap
//! ([docs/map.md](tpl_core::guide::map), "Intervals"): the estimate is taken as the truth, released
//! again through the same mechanism with the same budgets, estimated again by the same estimator,
//! and the spread of the replicates' errors around that truth gives each cell's interval.

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

/// The (lower, upper) ends of per-cell intervals, each step by cell.
pub type Ends = (Vec<Vec<f64>>, Vec<Vec<f64>>);

/// The estimator whose error is bootstrapped: releases (T × n) to estimates (T × n).
pub type EstimatorFn<'a> = dyn FnMut(&[Vec<f64>]) -> Result<Vec<Vec<f64>>> + 'a;

/// Per-cell intervals [lower, upper] of the estimates `estimate` (T × n), from a parametric
/// bootstrap of B replicates:
///
/// 1. the truth of the bootstrap world is c*_t = `estimate[t]`, rounded to the nearest
///    integers whose sum is the row's rounded sum (largest remainders) so that an integer
///    mechanism accepts it;
/// 2. each replicate releases c*_t afresh with `release(c*_t, ε_t)` at the steps whose
///    publication budget `budgets[t]` is > 0 and repeats its previous release at the others,
///    as the scheme did;
/// 3. `estimator` turns the replicate releases into x*_t, and e*_t = x*_t − c*_t is one draw of
///    the estimator's error;
/// 4. each cell's replicate errors are spread about their mean by the error the replicates
///    miss (`widen`): the bootstrap's truth is the estimate, smoother than real counts, so
///    the real releases deviate more from their estimates than the replicates do from
///    theirs, and that excess (squared residual at the fresh releases, per cell, averaged
///    with more weight on the precise releases: `weighted_excess`) is added to the errors'
///    variance; so is the drift of the truth that the estimate misses
///    (`drift_variances`): at the per-step rate d of each cell measured from the real fresh
///    releases — the mean of (r_u − r_s)² less the two releases' noise variances (measured
///    on the replicates) per step between consecutive publications s < u — grown since the
///    last publication when `filter` (the estimator sees only the releases up to the step),
///    or as a bridge between the publications around the step for a smoother;
/// 5. with α = 1 − level, lower = x̂ − q_{1−α/2}(e*) and upper = x̂ − q_{α/2}(e*) per cell (the
///    basic bootstrap: a biased estimator's bias is removed, not doubled), widened to hold
///    x̂ itself, rounded outwards to whole numbers (true counts are whole, so no coverage is lost) and clipped to
///    [0, N_t] with N_t the row's sum, rounded.
///
/// `filter` says whether `estimator` estimates step t from the releases up to t only
/// ([`crate::Estimator::is_filter`]). Measured coverage:
/// [`docs/intervals.md`](tpl_core::guide::intervals) §2. Memory: B·T·n errors (8 bytes each), which
/// the caller bounds.
///
/// ```
/// use tpl_postprocess::{Bootstrap, bootstrap_intervals};
/// // The identity estimator of a release with noise ±1: the interval has width 2.
/// let releases = vec![vec![5.0, 5.0]];
/// let estimate = releases.clone();
/// let mut flip = 1.0;
/// let mut release = |c: &[f64], _eps: f64| {
///     flip = -flip;
///     Ok(c.iter().map(|v| v + flip).collect())
/// };
/// let mut identity = |r: &[Vec<f64>]| Ok(r.to_vec());
/// let b = Bootstrap { level: 0.9, replicates: 10 };
/// let (lo, hi) = bootstrap_intervals(&releases, &estimate, &[1.0], b, true, &mut release, &mut identity)?;
/// assert_eq!((lo[0][0], hi[0][0]), (4.0, 6.0));
/// # Ok::<(), tpl_postprocess::PostprocessError>(())
/// ```
///
/// # Errors
/// [`PostprocessError::Bootstrap`] for a level outside (0, 1), fewer than two replicates,
/// budgets or releases of another length than the estimate, a first step without a publication, or a
/// replicate the release or the estimator refused.
pub fn bootstrap_intervals(
    releases: &[Vec<f64>],
    estimate: &[Vec<f64>],
    budgets: &[f64],
    config: Bootstrap,
    filter: bool,
    release: &mut ReleaseFn<'_>,
    estimator: &mut EstimatorFn<'_>,
) -> Result<Ends> {
    let bad = |m: String| PostprocessError::Bootstrap(m);
    let Bootstrap { level, replicates } = config;
    if !(level > 0.0 && level < 1.0) {
        return Err(bad(format!("level {level} is not strictly between 0 and 1")));
    }
    if replicates < 2 {
        return Err(bad(format!("{replicates} replicates: at least 2 are needed")));
    }
    if budgets.len() != estimate.len() || releases.len() != estimate.len() {
        return Err(bad(format!(
            "{} budgets and {} releases for {} steps",
            budgets.len(),
            releases.len(),
            estimate.len()
        )));
    }
    if budgets.first().is_some_and(|&b| b <= 0.0) {
        return Err(bad("the first step has no publication budget: nothing to repeat".into()));
    }
    let truth: Vec<Vec<f64>> = estimate.iter().map(|row| round_keeping_sum(row)).collect();
    let cells: usize = estimate.iter().map(Vec::len).sum();
    // Per fresh step and cell: the squared residual (r − x̂)² of the real release less the
    // replicates' mean (r* − x*)².
    let mut excess: Vec<Vec<f64>> = estimate.iter().map(|row| vec![0.0; row.len()]).collect();
    add_residuals(&mut excess, releases, estimate, budgets, 1.0);
    // The replicates' mean squared noise at each fresh step (over cells and replicates).
    let mut noise = vec![0.0; estimate.len()];
    // errors[k·B + b]: replicate b's error at the k-th (step, cell), steps then cells.
    let mut errors = vec![0.0; cells * replicates];
    for b in 0..replicates {
        let mut releases: Vec<Vec<f64>> = Vec::with_capacity(truth.len());
        for (t, (c, &eps)) in truth.iter().zip(budgets).enumerate() {
            let r = match releases.last() {
                Some(last) if eps <= 0.0 => last.clone(),
                _ => {
                    let r = release(c, eps)
                        .map_err(|e| bad(format!("replicate {}, step {}: {e}", b + 1, t + 1)))?;
                    let squares: f64 = r.iter().zip(c).map(|(v, w)| (v - w).powi(2)).sum();
                    noise[t] += squares / (c.len().max(1) * replicates) as f64;
                    r
                }
            };
            releases.push(r);
        }
        let x = estimator(&releases).map_err(|e| bad(format!("replicate {}: {e}", b + 1)))?;
        add_residuals(&mut excess, &releases, &x, budgets, -1.0 / replicates as f64);
        let mut k = 0;
        for (xt, ct) in x.iter().zip(&truth) {
            for (v, c) in xt.iter().zip(ct) {
                errors[k * replicates + b] = v - c;
                k += 1;
            }
        }
    }
    let misfit = weighted_excess(&excess, budgets, &noise);
    let drift = drift_rates(releases, budgets, &noise);
    let missed: Vec<Vec<f64>> = drift.iter().map(|&d| drift_variances(budgets, &noise, d, filter)).collect();
    let alpha = 1.0 - level;
    let (mut lower, mut upper) = (Vec::with_capacity(estimate.len()), Vec::with_capacity(estimate.len()));
    let mut k = 0;
    for (t, row) in estimate.iter().enumerate() {
        let total: f64 = row.iter().sum();
        let (mut lo, mut hi) = (Vec::with_capacity(row.len()), Vec::with_capacity(row.len()));
        for (j, &x) in row.iter().enumerate() {
            let e = &mut errors[k * replicates..(k + 1) * replicates];
            widen(e, misfit[j] + missed[j][t]);
            e.sort_by(f64::total_cmp);
            // True counts are whole numbers: an end rounded outwards to one loses nothing.
            let cap = total.max(0.0).round();
            // The interval also holds the estimate itself (which a bias correction can move
            // it off): widening only, so no coverage is lost.
            lo.push((x - quantile(e, 1.0 - alpha / 2.0)).min(x).floor().clamp(0.0, cap));
            hi.push((x - quantile(e, alpha / 2.0)).max(x).ceil().clamp(0.0, cap));
            k += 1;
        }
        lower.push(lo);
        upper.push(hi);
    }
    Ok((lower, upper))
}

/// Each cell's drift rate d ≥ 0 per step, from consecutive fresh releases s < u:
/// Σ ((r_u − r_s)² − v_s − v_u) / Σ (u − s), with v the noise variance of each release
/// (0 with fewer than two fresh releases).
fn drift_rates(releases: &[Vec<f64>], budgets: &[f64], noise: &[f64]) -> Vec<f64> {
    let cells = releases.first().map_or(0, Vec::len);
    let mut sums = vec![0.0; cells];
    let mut steps = 0.0;
    let mut last: Option<usize> = None;
    for (u, &eps) in budgets.iter().enumerate() {
        if eps <= 0.0 {
            continue;
        }
        if let Some(s) = last {
            for (sum, (a, b)) in sums.iter_mut().zip(releases[u].iter().zip(&releases[s])) {
                *sum += (a - b).powi(2) - noise[s] - noise[u];
            }
            steps += (u - s) as f64;
        }
        last = Some(u);
    }
    sums.iter().map(|&v| if steps > 0.0 { (v / steps).max(0.0) } else { 0.0 }).collect()
}

/// The variance, at each step, of the part of an estimate's error that comes from the
/// truth's drift at `rate` per step: for the local-level model (a random walk observed
/// with noise `noise[t]` at the steps with a budget), the error of the optimal filter
/// splits into a drift part D and a noise part N with
/// D⁻ = D + rate, and at a release, with gain K = (D⁻ + N)/(D⁻ + N + v),
/// D = (1 − K)²·D⁻ and N = (1 − K)²·N + K²·v (the first release: K = 1).
/// A precise release resets D to 0, a repeat k steps later has D = k·rate, and a release
/// with little budget (large v) barely lowers it. For a smoother (`filter` false) the
/// forward filter is combined with the backward one run from the last step (its
/// prediction at the step, before that step's release), each weighted by the other's total
/// variance: D = w_f²·D_f + w_b²·D_b — between two precise releases g steps apart,
/// k(g − k)/g·rate, a Brownian bridge.
fn drift_variances(budgets: &[f64], noise: &[f64], rate: f64, filter: bool) -> Vec<f64> {
    let steps = budgets.len();
    // (D, N) after each step of `order`, its release included; (0, ∞) before the first.
    let pass = |order: &mut dyn Iterator<Item = usize>| {
        let mut out = vec![(0.0, f64::INFINITY); steps];
        let mut state: Option<(f64, f64)> = None;
        for t in order {
            if let Some((d, _)) = state.as_mut() {
                *d += rate;
            }
            if budgets[t] > 0.0 {
                let v = noise[t];
                state = Some(match state {
                    Some((d, n)) if d + n + v > 0.0 => {
                        let k = (d + n) / (d + n + v);
                        ((1.0 - k).powi(2) * d, (1.0 - k).powi(2) * n + k * k * v)
                    }
                    _ => (0.0, v),
                });
            }
            out[t] = state.unwrap_or((0.0, f64::INFINITY));
        }
        out
    };
    let forward = pass(&mut (0..steps));
    if filter {
        return forward.iter().map(|&(d, _)| d).collect();
    }
    let backward = pass(&mut (0..steps).rev());
    (0..steps)
        .map(|t| {
            let (df, nf) = forward[t];
            // The backward prediction of step t: its state after step t + 1, moved one step.
            let Some(&(db, nb)) = backward.get(t + 1) else { return df };
            let (db, pf, pb) = (db + rate, df + nf, db + rate + nb);
            if !pb.is_finite() || pf + pb <= 0.0 {
                return df;
            }
            let (wf, wb) = (pb / (pf + pb), pf / (pf + pb));
            wf * wf * df + wb * wb * db
        })
        .collect()
}

/// Adds `factor`·(r − x)² per step and cell at the fresh releases (budget > 0) to `sums`.
fn add_residuals(sums: &mut [Vec<f64>], releases: &[Vec<f64>], x: &[Vec<f64>], budgets: &[f64], factor: f64) {
    for (((s, r), xt), &eps) in sums.iter_mut().zip(releases).zip(x).zip(budgets) {
        if eps > 0.0 {
            for (s, (rv, xv)) in s.iter_mut().zip(r.iter().zip(xt)) {
                *s += factor * (rv - xv).powi(2);
            }
        }
    }
}

/// Each cell's excess of squared residuals over the fresh releases, averaged with weights
/// (v_min/v_t)² (v_t the release's noise variance, v_min the smallest positive one; 1 for
/// a release without noise): a squared residual scatters with the square of the noise, so
/// a release of a small budget, whose residual is mostly noise, counts for little. At
/// least 0.
fn weighted_excess(excess: &[Vec<f64>], budgets: &[f64], noise: &[f64]) -> Vec<f64> {
    let cells = excess.first().map_or(0, Vec::len);
    let fresh = || (0..budgets.len()).filter(|&t| budgets[t] > 0.0);
    let smallest = fresh().map(|t| noise[t]).filter(|&v| v > 0.0).fold(f64::INFINITY, f64::min);
    let (mut sums, mut total) = (vec![0.0; cells], 0.0);
    for t in fresh() {
        let w = if noise[t] > smallest { (smallest / noise[t]).powi(2) } else { 1.0 };
        for (s, e) in sums.iter_mut().zip(&excess[t]) {
            *s += w * e;
        }
        total += w;
    }
    sums.iter().map(|&s| if total > 0.0 { (s / total).max(0.0) } else { 0.0 }).collect()
}

/// Spreads the replicate errors `e` of one estimate about their mean so that their variance
/// grows by `extra` — the error the replicates miss: how much more, per cell, the real
/// releases deviate from their estimates than the replicates from theirs. The bootstrap's
/// truth is the estimate itself, smoother than real counts, which move between steps in ways
/// no estimator follows at once; that part of the error shows only in the real residuals.
/// Errors with no spread get the normal quantiles of their ranks times √extra.
fn widen(e: &mut [f64], extra: f64) {
    if extra <= 0.0 {
        return;
    }
    let len = e.len() as f64;
    let mean = e.iter().sum::<f64>() / len;
    let var = e.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (len - 1.0);
    if var > 0.0 {
        let scale = ((var + extra) / var).sqrt();
        for v in e.iter_mut() {
            *v = mean + (*v - mean) * scale;
        }
    } else {
        let sd = extra.sqrt();
        for (i, v) in e.iter_mut().enumerate() {
            *v = mean + sd * normal_quantile((i as f64 + 0.5) / len);
        }
    }
}

/// The standard normal quantile (Acklam's rational approximation, relative error below
/// 1.2·10⁻⁹).
pub(crate) fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -39.696_830_286_653_76,
        220.946_098_424_520_5,
        -275.928_510_446_968_7,
        138.357_751_867_269,
        -30.664_798_066_147_16,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -54.476_098_798_224_06,
        161.585_836_858_040_9,
        -155.698_979_859_886_6,
        66.801_311_887_719_72,
        -13.280_681_552_885_72,
    ];
    const C: [f64; 6] = [
        -0.007_784_894_002_430_293,
        -0.322_396_458_041_136_5,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] =
        [0.007_784_695_709_041_462, 0.322_467_129_070_039_8, 2.445_134_137_142_996, 3.754_408_661_907_416];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
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
mod tests;
