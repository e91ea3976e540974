//! Whole-sequence smoothing `smooth` beyond 64 cells ([docs/map.md](tpl_core::guide::map) §9; on
//! fewer cells `smooth` is the state-space smoother of [`crate::kalman_smooth`]'s model), and the
//! pooled MAP step it solves: every step estimated from all the releases of a recorded stream, past
//! and future.
//!
//! A calibrated forward pass (the `map` filter of [docs/map.md](tpl_core::guide::map) §8) predicts
//! step t from the releases before it; a calibrated backward pass, run from the last release to the
//! first through the backward matrix, predicts step t from the releases after it. Step t then
//! solves the MAP problem whose prior is the product of the two predictions, each raised to its
//! strength — together the two calibrated strengths, split in proportion to how recently each
//! prediction saw a release with information — a log-linear pool, which is again a MAP problem of
//! [docs/map.md](tpl_core::guide::map) §2 with one pooled prior, solved exactly by the breakpoint
//! solver.

use crate::calibrate::Pass;
use crate::numeric::{divide, exp_vectorised, ln_vectorised};
use crate::propagate::Mover;
use crate::widest::at_widest;

use crate::config::{FilterConfig, check_matrices, check_step, tempered_weight};
use crate::error::{PostprocessError, Result};
use crate::estimates::Estimates;
use crate::estimator::Estimator;
use crate::prior::{PriorPolicy, Warning};
use crate::renormalise::renormalise_to;
use crate::{MapStep, map, two_sided, validate};

/// One prior of a pooled MAP problem: a probability vector p and the strength w ≥ 0 its
/// multinomial log-density gets (w = 1/φ of [docs/map.md](tpl_core::guide::map) §8; 1 is the DBSec
/// paper's prior).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeightedPrior<'a> {
    /// The probability vector (finite, ≥ 0, summing to 1 within 1e-9).
    pub prior: &'a [f64],
    /// Its strength w ≥ 0 (finite).
    pub strength: f64,
}

/// The MAP estimate of one step under several priors at once ([docs/map.md](tpl_core::guide::map)
/// §9): the minimiser of
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
    let mut step = if strength == 0.0 {
        MapStep { x: crate::mle::solve(r, total), lambda: None }
    } else {
        let pooled = pooled.ok_or(PostprocessError::NoPooledPrior)?;
        map::solve(r, &pooled, total, tempered_weight(a, 1.0 / strength))
    };
    renormalise_to(total, r, &mut step.x);
    Ok(step)
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

/// One direction's predictions for consecutive steps, in the direction's order from step
/// `first`: the prior of every step and its strength (at the pass's first step, its initial
/// prior at the DBSec strength 1), indexed by the step itself.
struct Predictions {
    priors: Rows,
    strengths: Strengths,
}

/// Where step t is stored: slot t − first forwards, first − t backwards.
#[derive(Debug, Clone, Copy)]
struct Slots {
    first: usize,
    way: Way,
}

impl Slots {
    fn of(self, t: usize) -> usize {
        match self.way {
            Way::Forward => t - self.first,
            Way::Backward => self.first - t,
        }
    }
}

/// Priors, one vector per step (each becomes an estimate's vector once it is pooled, so that
/// the estimates take no fresh memory).
struct Rows {
    slots: Slots,
    values: Vec<Vec<f64>>,
}

impl std::ops::Index<usize> for Rows {
    type Output = [f64];

    /// The prior of step t (a stored step).
    fn index(&self, t: usize) -> &[f64] {
        &self.values[self.slots.of(t)]
    }
}

/// Strengths, one per step.
struct Strengths {
    slots: Slots,
    values: Vec<f64>,
}

impl std::ops::Index<usize> for Strengths {
    type Output = f64;

    /// The strength of step t (a stored step).
    fn index(&self, t: usize) -> &f64 {
        &self.values[self.slots.of(t)]
    }
}

impl Predictions {
    /// Room for `steps` predictions from step `first` on, in the order of `way`.
    fn new(first: usize, way: Way, steps: usize) -> Self {
        let slots = Slots { first, way };
        Self {
            priors: Rows { slots, values: Vec::with_capacity(steps) },
            strengths: Strengths { slots, values: Vec::with_capacity(steps) },
        }
    }

    /// Empties them for the steps from `first` on.
    fn restart(&mut self, first: usize) {
        self.priors.slots.first = first;
        self.strengths.slots.first = first;
        self.priors.values.clear();
        self.strengths.values.clear();
    }
}

/// The data both directions read.
struct Stream<'s> {
    rows: &'s [&'s [f64]],
    weights: &'s [f64],
    /// k^f_t and k^b_t of [docs/map.md](tpl_core::guide::map) §9 ([`carried`]).
    forward_steps: &'s [f64],
    backward_steps: &'s [f64],
    total: u64,
}

/// Which way a [`Direction`] runs.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Way {
    Forward,
    Backward,
}

/// One direction of `smooth` ([docs/map.md](tpl_core::guide::map) §9): the calibrated pass over the
/// steps in the direction's order ([docs/map.md](tpl_core::guide::map) §8) — at its first step the
/// `initial` prior at the DBSec strength, then the calibrated predictions. It first stores the
/// predictions of the steps it reaches first (the first half forwards, the second half backwards),
/// for the other direction; then, given the other direction's, it pools each later step right after
/// predicting it.
struct Direction<'m> {
    way: Way,
    mover: &'m Mover<'m>,
    initial: &'m PriorPolicy,
    pass: Pass,
    /// Steps predicted so far.
    done: usize,
    /// The warnings of the initial prior.
    warnings: Vec<Warning>,
}

impl<'m> Direction<'m> {
    fn new(way: Way, mover: &'m Mover<'m>, initial: &'m PriorPolicy) -> Self {
        Self { way, mover, initial, pass: Pass::new(), done: 0, warnings: Vec::new() }
    }

    /// The step `k` of the direction's order, among `horizon`.
    fn step_at(&self, k: usize, horizon: usize) -> usize {
        match self.way {
            Way::Forward => k,
            Way::Backward => horizon - 1 - k,
        }
    }

    /// Predicts the next step t, appends its prior and strength to `out`, and moves the
    /// pass on by its own estimate (not at the last step, where nothing follows). Returns t.
    fn advance(&mut self, stream: &Stream<'_>, out: &mut Predictions) -> usize {
        let (horizon, total) = (stream.rows.len(), stream.total);
        let n_total = total as f64;
        let t = self.step_at(self.done, horizon);
        let (r, weight) = (stream.rows[t], stream.weights[t]);
        let cells = r.len();
        let mut prior = Vec::with_capacity(cells);
        let dispersion = match self.pass.predict_onto(r, weight, n_total, &mut prior) {
            Some(c) => c.dispersion,
            None if self.done == 0 => {
                let (p, w) = self.initial.initial_unchecked(r);
                self.warnings = w;
                prior = p;
                1.0
            }
            // Only with N = 0, where every estimate is 0 and no prior matters.
            None => {
                prior.extend(std::iter::repeat_n(1.0 / cells as f64, cells));
                1.0
            }
        };
        self.done += 1;
        if self.done < horizon {
            let estimate = if total == 0 {
                vec![0.0; cells]
            } else {
                map::solve(r, &prior, n_total, tempered_weight(weight, dispersion)).x
            };
            self.pass.observe(&estimate, Some(self.mover));
        }
        out.priors.values.push(prior);
        out.strengths.values.push(1.0 / dispersion);
        t
    }

    /// The first `steps` predictions of the direction, stored.
    fn store(&mut self, stream: &Stream<'_>, steps: usize) -> Predictions {
        let horizon = stream.rows.len();
        let mut out = Predictions::new(self.step_at(self.done, horizon), self.way, steps);
        for _ in 0..steps {
            self.advance(stream, &mut out);
        }
        out
    }

    /// The remaining steps, each pooled with the other direction's stored prediction as
    /// soon as it is predicted: their estimates in the direction's order, each in the vector
    /// of the stored prior it used.
    fn pool(&mut self, stream: &Stream<'_>, mut other: Predictions) -> Vec<Vec<f64>> {
        let horizon = stream.rows.len();
        let mut current = Predictions::new(0, self.way, 1);
        let mut estimates = Vec::with_capacity(horizon - self.done);
        while self.done < horizon {
            current.restart(self.step_at(self.done, horizon));
            let t = self.advance(stream, &mut current);
            let (fwd, bwd) = match self.way {
                Way::Forward => (&current, &other),
                Way::Backward => (&other, &current),
            };
            let steps = (stream.forward_steps[t], stream.backward_steps[t]);
            let x = combine(stream.rows[t], stream.weights[t], (fwd, bwd), t, steps, stream.total);
            let mut kept = std::mem::take(&mut other.priors.values[other.priors.slots.of(t)]);
            kept.clear();
            kept.extend_from_slice(&x);
            estimates.push(kept);
        }
        estimates
    }
}

/// The occupancy π under which the forward matrix is reversed when no backward matrix is
/// given ([docs/map.md](tpl_core::guide::map) §9): the mean over steps of each release's positive
/// part, normalised; uniform when no release has a positive count.
fn occupancy(releases: &[&[f64]]) -> Vec<f64> {
    /// Rows summed side by side: their sums are independent chains of additions.
    const SIDE_BY_SIDE: usize = 4;
    let n = releases[0].len();
    let mut pi = vec![0.0; n];
    let mut scaled = vec![vec![0.0; n]; SIDE_BY_SIDE];
    // The rows with a positive count, scaled by their largest (a maximum, exact in any
    // order), gathered SIDE_BY_SIDE at a time while they are in the cache.
    let mut gathered = 0;
    let mut rows = releases.iter();
    loop {
        let next = rows.next();
        if let Some(r) = next {
            let mut lanes = [0.0f64; 8];
            let mut chunks = r.chunks_exact(8);
            for chunk in &mut chunks {
                lanes.iter_mut().zip(chunk).for_each(|(m, &v)| *m = m.max(v));
            }
            let largest = chunks.remainder().iter().chain(&lanes).fold(0.0f64, |m, &v| m.max(v));
            if largest > 0.0 {
                scale_row(r, largest, &mut scaled[gathered]);
                gathered += 1;
            }
        }
        if gathered < SIDE_BY_SIDE && next.is_some() {
            continue;
        }
        // Each row's sum in cell order, as a plain sum of that row would add them.
        let mut sums = [0.0f64; SIDE_BY_SIDE];
        if let [a, b, c, d] = scaled.as_slice() {
            let side_by_side = if gathered == SIDE_BY_SIDE { n } else { 0 };
            for (((&a, &b), &c), &d) in a.iter().zip(b).zip(c).zip(d).take(side_by_side) {
                sums[0] += a;
                sums[1] += b;
                sums[2] += c;
                sums[3] += d;
            }
        }
        if gathered < SIDE_BY_SIDE {
            for (sum, row) in sums.iter_mut().zip(&scaled[..gathered]) {
                *sum = row.iter().sum();
            }
        }
        // Added to π row after row, as one row at a time would.
        for (row, &sum) in scaled.iter().zip(&sums).take(gathered) {
            add_shares(row, sum, &mut pi);
        }
        gathered = 0;
        if next.is_none() {
            break;
        }
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
/// first such s > t ([docs/map.md](tpl_core::guide::map) §9). A direction with no such release
/// counts its initial prior as one, one step before its first step.
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

/// The strengths of step t's forward and backward predictions ([docs/map.md](tpl_core::guide::map)
/// §9): together the calibrated strengths of both, W = w^f + w^b, split in proportion to 1/k^f :
/// 1/k^b — a release carried k steps by the model has lost information in proportion to k.
fn split(total: f64, forward_steps: f64, backward_steps: f64) -> (f64, f64) {
    let share = backward_steps / (forward_steps + backward_steps);
    (total * share, total * (1.0 - share))
}

at_widest! {
    /// out_i = max(r_i, 0)/largest; at the widest vector width ([`crate::widest`]; a
    /// division is exact-rounded at any width).
    fn scale_row(r: &[f64], largest: f64, out: &mut [f64]) = scale_row_portable;
}

/// The loop of [`scale_row`].
#[inline(always)]
fn scale_row_portable(r: &[f64], largest: f64, out: &mut [f64]) {
    out.iter_mut().zip(r).for_each(|(s, &v)| *s = v.max(0.0) / largest);
}

at_widest! {
    /// pi_i += row_i/sum; at the widest vector width ([`crate::widest`]; the same bits at any
    /// width).
    fn add_shares(row: &[f64], sum: f64, pi: &mut [f64]) = add_shares_portable;
}

/// The loop of [`add_shares`].
#[inline(always)]
fn add_shares_portable(row: &[f64], sum: f64, pi: &mut [f64]) {
    pi.iter_mut().zip(row).for_each(|(p, v)| *p += v / sum);
}

/// Step t of `smooth`: the MAP estimate under the pooled forward and backward predictions
/// ([docs/map.md](tpl_core::guide::map) §9), the forward one carried `steps.0` steps from its last
/// release with information and the backward one `steps.1`.
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

/// `smooth` over a recorded stream ([docs/map.md](tpl_core::guide::map) §9); called by
/// [`crate::filter`] after its checks of the horizon, budget count and forward matrix.
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
    // While the steps are checked and the forward matrix is split (the split serves both
    // directions), the occupancy is summed on a second thread when the backward matrix is
    // derived from it.
    let (weights, movers) = std::thread::scope(|scope| {
        let summing = (config.correlation.forward().is_some() && config.correlation.backward().is_none())
            .then(|| scope.spawn(|| occupancy(&rows)));
        let mut weights = Vec::with_capacity(rows.len());
        for (t, (r, &e)) in rows.iter().zip(budgets).enumerate() {
            weights.push(check_step(r, e, cells, config.sensitivity).map_err(|err| err.at_step(t + 1))?);
        }
        let forward = config.correlation.forward().map(Mover::new);
        let pi = summing.map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
        let movers = forward.map(|forward| {
            let backward = match (config.correlation.backward(), pi) {
                (Some(b), _) => Mover::new(b),
                (None, pi) => Mover::reversed(forward.clone(), &pi.unwrap_or_default()),
            };
            (forward, backward)
        });
        Ok::<_, PostprocessError>((weights, movers))
    })?;
    let horizon = rows.len();
    let total = config.total;
    let Some((forward, backward)) = movers else {
        // One step and no matrix: the forward prediction is the initial prior alone.
        let (p, warnings) = config.prior.initial_unchecked(rows[0]);
        let mut x = map::solve(rows[0], &p, total as f64, weights[0]).x;
        renormalise_to(total as f64, rows[0], &mut x);
        let estimates = vec![x];
        let std_errors = two_sided::std_errors(&rows, &weights, &estimates, None);
        return Ok(Estimates { estimator: Estimator::Smooth, estimates, warnings, std_errors });
    };
    // The backward pass starts from the last release: the initial policy of step 1 does not
    // apply there, so it uses the frequency prior (uniform if uniform was asked for).
    let backward_initial = match config.prior {
        PriorPolicy::Uniform => PriorPolicy::Uniform,
        _ => PriorPolicy::Frequency,
    };
    // Each direction stores the predictions of the half it reaches first; then each pools
    // its second half with the other's stored ones as it goes: two passes and T pooled
    // solves on two threads, T·n stored values in all.
    let (forward_steps, backward_steps) = carried(&weights);
    let stream = Stream {
        rows: &rows,
        weights: &weights,
        forward_steps: &forward_steps,
        backward_steps: &backward_steps,
        total,
    };
    let mut fwd = Direction::new(Way::Forward, &forward, &config.prior);
    let mut bwd = Direction::new(Way::Backward, &backward, &backward_initial);
    let half = horizon / 2;
    let (fwd_stored, bwd_stored) = std::thread::scope(|scope| {
        let back = scope.spawn(|| bwd.store(&stream, horizon - half));
        let ahead = fwd.store(&stream, half);
        (ahead, back.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    });
    let (later, earlier) = std::thread::scope(|scope| {
        let back = scope.spawn(|| bwd.pool(&stream, fwd_stored));
        let ahead = fwd.pool(&stream, bwd_stored);
        (ahead, back.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    });
    let mut estimates = earlier;
    estimates.reverse();
    estimates.extend(later);
    // After both passes: each direction's predictions come from the solver's estimates.
    estimates.iter_mut().zip(&rows).for_each(|(x, r)| renormalise_to(total as f64, r, x));
    let std_errors = two_sided::std_errors(&rows, &weights, &estimates, None);
    Ok(Estimates { estimator: Estimator::Smooth, estimates, warnings: fwd.warnings, std_errors })
}

#[cfg(test)]
mod tests;
