//! The standard error a [`crate::Filter`] gives with each estimate
//! ([`docs/intervals.md`](tpl_core::guide::intervals) §3), causal and O(n) per step, so that a
//! live stream can store it with every estimate (the bootstrap of
//! [`crate::bootstrap_intervals`] would rerun the estimator B times over the whole stream at
//! every push). Per cell, the error variance is the sum of
//!
//! 1. the variance P of the local-level model's filter — the count a random walk at a drift
//!    rate d per step, seen through each release's Laplace noise (variance 2(Δ/ε_t)²) — with d
//!    measured from the releases so far, at least 0, and raised by one standard error of that
//!    measurement ([`RATE_ALLOWANCE`]), the drift since the last fresh release grown as
//!    d·max(k, ḡ) ([`LocalLevel::lag`]); or the estimator's own variance for
//!    the cell where it has a model of its error and that is larger (the state-space filter of
//!    `map` on up to 64 cells);
//! 2. the square of the distance between the estimate and that filter's mean: an estimator
//!    that leaves the data (a prior that holds it back, a matrix that does not fit) widens its
//!    interval by as much as it leaves them.

use crate::error::{PostprocessError, Result};
use crate::interval::normal_quantile;

/// How many standard errors of the measured drift rate are added to it
/// ([`LocalLevel::rate`]): the rate is a parameter fitted to noisy releases, and an interval
/// given the rate at its point estimate under-covers where the releases cannot tell it
/// (measured on the whole stress grid: [`docs/intervals.md`](tpl_core::guide::intervals) §3).
pub(crate) const RATE_ALLOWANCE: f64 = 1.0;

/// The noise variance of a release at weight a = ε_t/Δ, the Laplace variance 2(Δ/ε_t)² = 2/a²;
/// `None` for a step that carries no information the model can use (a repeat, a = 0, or a
/// weight too small for the variance to be finite).
pub(crate) fn noise(a: f64) -> Option<f64> {
    let v = 2.0 / (a * a);
    (a > 0.0 && v.is_finite()).then_some(v)
}

/// How the filter whose error is modelled combines a release with what it knew before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) enum Gain {
    /// As the local-level model's optimal filter, K = P⁻/(P⁻ + v): the estimators with a
    /// prior, which carry what earlier releases said forward.
    Optimal,
    /// The release alone, K = 1: `mle`, which reads nothing but the step's release.
    ReleaseOnly,
}

/// The per-cell state of the model: the error variance after the last step, the drift
/// measured so far, and the last fresh release.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct LocalLevel {
    gain: Gain,
    /// P per cell after the last step (empty before the first fresh release: no error scale).
    variance: Vec<f64>,
    /// Per cell, Σ ((r_u − r_s)² − v_s − v_u) over consecutive fresh releases s < u.
    drift_sums: Vec<f64>,
    /// Σ (u − s) over the same pairs.
    drift_steps: f64,
    /// Per cell, Σ e² and Σ e·(u − s) of the same terms e = (r_u − r_s)² − v_s − v_u, for
    /// the rate's standard error (a state saved before they were kept reads them empty and
    /// does not [`fit`](Self::fits): the filter runs again from step 1).
    #[cfg_attr(feature = "serde", serde(default))]
    drift_moments: Vec<(f64, f64)>,
    /// Σ (u − s)² over the same pairs.
    #[cfg_attr(feature = "serde", serde(default))]
    gap_squares: f64,
    /// The number of those pairs.
    gaps: f64,
    /// The last fresh release, its noise variance and the steps since it.
    last: Option<(Vec<f64>, f64, usize)>,
    /// Per cell, the drift variance added since the last fresh release.
    drifted: Vec<f64>,
    /// The model's filtered mean per cell after the last step.
    mean: Vec<f64>,
}

impl LocalLevel {
    /// The model before any release.
    pub(crate) fn new(gain: Gain) -> Self {
        Self {
            gain,
            variance: Vec::new(),
            drift_sums: Vec::new(),
            drift_steps: 0.0,
            drift_moments: Vec::new(),
            gap_squares: 0.0,
            gaps: 0.0,
            last: None,
            drifted: Vec::new(),
            mean: Vec::new(),
        }
    }

    /// Each cell's drift rate per step: the rate measured so far, d̂ = Σe/Σg over the
    /// consecutive fresh releases s < u (e = (r_u − r_s)² − v_s − v_u, g = u − s), taken at
    /// least 0 and raised by [`RATE_ALLOWANCE`] of its standard error (0 with fewer than two
    /// fresh releases). The standard error is that of a ratio estimator,
    /// √(m/(m − 1)·Σ(e − d̂g)²)/Σg over the m pairs (0 with one pair, or where it overflows):
    /// where the releases are too noisy to tell the drift, the rate's uncertainty is what the
    /// interval is given — also where d̂ < 0, which says the noise hid the drift, not that
    /// there is none.
    pub(crate) fn rate(&self, cell: usize) -> f64 {
        let Some(sum) = self.drift_sums.get(cell).filter(|_| self.drift_steps > 0.0) else {
            return 0.0;
        };
        let d = sum / self.drift_steps;
        let spread = match self.drift_moments.get(cell) {
            Some(&(squares, cross)) if self.gaps > 1.0 => {
                let scatter = (squares - 2.0 * d * cross + d * d * self.gap_squares).max(0.0);
                let spread = (scatter * self.gaps / (self.gaps - 1.0)).sqrt() / self.drift_steps;
                // Squares beyond the largest double (releases of 10⁷⁷ and more): the rate
                // as measured, as before the allowance.
                if spread.is_finite() { spread } else { 0.0 }
            }
            _ => 0.0,
        };
        d.max(0.0) + RATE_ALLOWANCE * spread
    }

    /// The lag, in steps, whose drift the k-th step after the last fresh release is given:
    /// max(k, ḡ), ḡ the mean gap between consecutive fresh releases so far (1 before two). A
    /// count that reverts to its mean (people who come and go) drifts less than k times its
    /// one-step rate over k steps, so the rate measured over gaps of ḡ steps, spread evenly,
    /// would understate the first steps after a release; a drift that grows with the lag is
    /// never more, over k ≤ ḡ steps, than over ḡ.
    pub(crate) fn lag(&self, k: usize) -> f64 {
        let gap = if self.gaps > 0.0 { self.drift_steps / self.gaps } else { 1.0 };
        (k as f64).max(gap)
    }

    /// Whether this can be the model of `fresh` (a new one of the same gain) after steps over
    /// `cells` cells: what [`crate::Filter::resume`] checks of a saved state.
    pub(crate) fn fits(&self, cells: usize, fresh: &LocalLevel) -> bool {
        let sized = |v: &Vec<f64>| v.is_empty() || v.len() == cells;
        self.gain == fresh.gain
            && [&self.variance, &self.drift_sums, &self.drifted, &self.mean].into_iter().all(sized)
            && self.last.as_ref().is_none_or(|l| l.0.len() == cells)
            && self.variance.len() == self.mean.len()
            && self.drift_moments.len() == self.drift_sums.len()
    }

    /// Adds the step's release to the drift measured so far when it is fresh (`noise`: its
    /// noise variance, [`noise`]), and counts the step since the last fresh release.
    fn measure(&mut self, release: &[f64], noise: Option<f64>) {
        if let Some((last, v_last, since)) = self.last.as_mut() {
            *since += 1;
            if let Some(v) = noise {
                if self.drift_sums.is_empty() {
                    self.drift_sums = vec![0.0; release.len()];
                    self.drift_moments = vec![(0.0, 0.0); release.len()];
                }
                let g = *since as f64;
                let cells = self.drift_sums.iter_mut().zip(&mut self.drift_moments);
                for ((sum, (squares, cross)), (r, s)) in cells.zip(release.iter().zip(last.iter())) {
                    let e = (r - s).powi(2) - v - *v_last;
                    *sum += e;
                    *squares += e * e;
                    *cross += e * g;
                }
                self.gap_squares += g * g;
                self.drift_steps += g;
                self.gaps += 1.0;
            }
        }
    }

    /// Makes `release` (noise variance `v`) the last fresh release, 0 steps ago.
    fn remember(&mut self, release: &[f64], v: f64) {
        match self.last.as_mut() {
            Some((last, v_last, since)) if last.len() == release.len() => {
                last.copy_from_slice(release);
                (*v_last, *since) = (v, 0);
            }
            _ => self.last = Some((release.to_vec(), v, 0)),
        }
    }

    /// The drift rates of [`Self::rate`] measured over a whole stream of `releases` with
    /// weights a_t = ε_t/Δ, and the model after them for its [`lag`](Self::lag) rule; the
    /// filter itself is not run.
    pub(crate) fn measured<R: AsRef<[f64]>>(releases: &[R], weights: &[f64]) -> (Vec<f64>, Self) {
        let mut m = Self::new(Gain::Optimal);
        for (r, &a) in releases.iter().zip(weights) {
            let v = noise(a);
            m.measure(r.as_ref(), v);
            if let Some(v) = v {
                m.remember(r.as_ref(), v);
            }
        }
        let cells = releases.first().map_or(0, |r| r.as_ref().len());
        ((0..cells).map(|j| m.rate(j)).collect(), m)
    }

    /// Steps the model over one release with weight a = ε_t/Δ (a = 0: a repeat, no
    /// information) and the estimator's estimate x̂_t of it, and returns each cell's error
    /// variance after it: the model's P, or `floor` where that is larger (the estimator's own
    /// model of its error, when it has one), plus (x̂_t − m_t)², m_t the model's mean. Empty
    /// while no release with information has been seen.
    pub(crate) fn step(
        &mut self,
        release: &[f64],
        a: f64,
        estimate: &[f64],
        floor: Option<&[f64]>,
    ) -> Vec<f64> {
        let fresh = noise(a);
        self.measure(release, fresh);
        if !self.variance.is_empty() {
            // Predict: the drift since the last fresh release is d·lag(k) for each cell; add
            // what the earlier steps since it have not (d is measured anew at each release).
            let lag = self.lag(self.last.as_ref().map_or(1, |l| l.2));
            if self.drifted.len() != self.variance.len() {
                self.drifted = vec![0.0; self.variance.len()];
            }
            for j in 0..self.variance.len() {
                let more = (self.rate(j) * lag - self.drifted[j]).max(0.0);
                if more > 0.0 {
                    self.variance[j] += more;
                    self.drifted[j] += more;
                }
            }
        }
        if let Some(v) = fresh {
            if self.variance.is_empty() || self.gain == Gain::ReleaseOnly {
                self.variance = vec![v; release.len()];
                self.mean = release.to_vec();
            } else {
                for ((p, m), &r) in self.variance.iter_mut().zip(&mut self.mean).zip(release) {
                    if v == 0.0 || !p.is_finite() || !m.is_finite() {
                        // A release without noise, or nothing known before it: it is the count.
                        (*p, *m) = (v, r);
                    } else {
                        // P = 1/(1/P⁻ + 1/v) (no overflow for large P⁻ and v; P⁻ = 0 keeps
                        // the mean), and the gain K = P/v.
                        let updated = 1.0 / (1.0 / *p + 1.0 / v);
                        *m += updated / v * (r - *m);
                        *p = updated;
                    }
                }
            }
            self.drifted.iter_mut().for_each(|d| *d = 0.0);
            self.remember(release, v);
        }
        // x̂ far from the model's mean is a sign the estimator misses something (a matrix
        // that does not fit, a prior that holds it back): its square is added, so that an
        // interval of z ≥ 1 standard errors reaches the model's mean.
        self.variance
            .iter()
            .zip(&self.mean)
            .zip(estimate)
            .enumerate()
            .map(|(j, ((&p, &m), &x))| error_variance(p, floor.and_then(|f| f.get(j)).copied(), x, m))
            .collect()
    }
}

/// The error variance of an estimate x̂ of one cell given the model's mean m and variance P:
/// P, or the estimator's own variance `own` where that is larger, plus (x̂ − m)² (module doc).
/// A P that is not a number is unknown: infinite, never 0.
pub(crate) fn error_variance(p: f64, own: Option<f64>, x: f64, m: f64) -> f64 {
    let p = if p.is_nan() { f64::INFINITY } else { p };
    p.max(own.unwrap_or(0.0)) + (x - m).powi(2)
}

/// The interval [lower, upper] of each cell of `estimate` at the nominal `level` from its
/// standard errors ([`crate::FilterStep::std_error`]): x̂ ± z·σ with z the normal quantile of
/// (1 + level)/2, rounded outwards to whole numbers (true counts are whole, so no coverage is
/// lost) and clipped to [0, N], N the estimate's sum rounded. Measured coverage:
/// [`docs/intervals.md`](tpl_core::guide::intervals) §3.
///
/// ```
/// let (lo, hi) = tpl_postprocess::model_interval(&[10.0, 2.0], &[2.0, 2.0], 0.9)?;
/// // z = 1.645: 10 ± 3.29 and 2 ± 3.29, clipped to [0, N] with N = 12.
/// assert_eq!((lo, hi), (vec![6.0, 0.0], vec![12.0, 6.0]));
/// # Ok::<(), tpl_postprocess::PostprocessError>(())
/// ```
///
/// # Errors
/// [`PostprocessError::Interval`] for a level outside (0, 1) or a standard error per cell
/// that is missing, negative or not a number.
pub fn model_interval(estimate: &[f64], std_error: &[f64], level: f64) -> Result<(Vec<f64>, Vec<f64>)> {
    model_interval_of(estimate, std_error, level, estimate.iter().sum())
}

/// [`model_interval`] of some cells of an estimate whose cells sum to `total` (the ends are
/// clipped to [0, N] with N = `total` rounded): the same ends for those cells as the interval
/// of the whole estimate, without computing the others'.
///
/// ```
/// use tpl_postprocess::{model_interval, model_interval_of};
/// let (x, s) = ([10.0, 2.0, 7.5], [2.0, 2.0, 0.5]);
/// let (lo, hi) = model_interval(&x, &s, 0.9)?;
/// let total = x.iter().sum();
/// assert_eq!(model_interval_of(&x[1..], &s[1..], 0.9, total)?, (lo[1..].to_vec(), hi[1..].to_vec()));
/// # Ok::<(), tpl_postprocess::PostprocessError>(())
/// ```
///
/// # Errors
/// As [`model_interval`].
pub fn model_interval_of(
    estimate: &[f64],
    std_error: &[f64],
    level: f64,
    total: f64,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let bad = |m: String| PostprocessError::Interval(m);
    if !(level > 0.0 && level < 1.0) {
        return Err(bad(format!("level {level} is not strictly between 0 and 1")));
    }
    if std_error.len() != estimate.len() {
        return Err(bad(format!("{} standard errors for {} cells", std_error.len(), estimate.len())));
    }
    if let Some(s) = std_error.iter().find(|s| s.is_nan() || **s < 0.0) {
        return Err(bad(format!("a standard error of {s}: it must be ≥ 0")));
    }
    let z = normal_quantile((1.0 + level) / 2.0);
    let cap = total.max(0.0).round();
    let ends = |sign: f64| -> Vec<f64> {
        estimate
            .iter()
            .zip(std_error)
            .map(|(&x, &s)| {
                let end = x + sign * z * s;
                let end = if sign < 0.0 { end.floor() } else { end.ceil() };
                // The interval holds the estimate, even one a rounding above N.
                end.clamp(0.0, cap.max(x.ceil()))
            })
            .collect()
    };
    Ok((ends(-1.0), ends(1.0)))
}

#[cfg(test)]
mod tests;
