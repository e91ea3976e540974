//! The standard errors of estimates made from a whole recorded stream, past and future
//! (`smooth`, `kalman`; [`docs/intervals.md`](tpl_core::guide::intervals) §3): the local-level
//! model of [`crate::local_level`] run forwards and backwards and the two passes combined, as a
//! two-filter smoother combines them. O(n) per step and pass, so that a model interval costs a
//! small part of the estimate. Per cell, the error variance is
//!
//! 1. the smoothed variance P_s of the local-level model — the count a random walk at the drift
//!    rate d measured on the whole stream (and raised by one standard error of that measurement,
//!    [`crate::local_level::LocalLevel::rate`]), seen through each fresh release's Laplace noise,
//!    its drift over the k steps between releases grown as d·max(k, ḡ) on each side — or the
//!    estimator's own variance where it has a model of its error and that is larger (the RTS
//!    variances of the state-space smoother on up to 64 cells);
//! 2. the square of the distance between the estimate and that smoother's mean: an estimate that
//!    leaves the releases widens its interval by as much as it leaves them.

use crate::local_level::{LocalLevel, error_variance, noise};

/// One pass's view of one step and cell: the local-level mean and variance from the releases on
/// its side up to and including the step (variance ∞ before that side's first fresh release).
#[derive(Debug, Clone, Copy)]
struct Side {
    mean: f64,
    variance: f64,
}

const NOTHING: Side = Side { mean: 0.0, variance: f64::INFINITY };

/// The local-level filter run one step at a time in either direction, at the fixed per-cell
/// drift rates `rates` and the lag rule of `measured`.
struct Walker<'a> {
    rates: &'a [f64],
    measured: &'a LocalLevel,
    /// The filtered view after the last step.
    here: Vec<Side>,
    /// The filtered state at the last fresh release walked over, and the steps since it.
    last: Option<(Vec<Side>, usize)>,
}

impl<'a> Walker<'a> {
    fn new(rates: &'a [f64], measured: &'a LocalLevel) -> Self {
        Self { rates, measured, here: vec![NOTHING; rates.len()], last: None }
    }

    /// Walks over one release `row` of weight a; returns each cell's filtered [`Side`] after it.
    fn step(&mut self, row: &[f64], a: f64) -> &[Side] {
        if let Some((state, since)) = self.last.as_mut() {
            *since += 1;
            let lag = self.measured.lag(*since);
            for ((h, s), d) in self.here.iter_mut().zip(state.iter()).zip(self.rates) {
                *h = Side { mean: s.mean, variance: s.variance + d * lag };
            }
        }
        if let Some(v) = noise(a) {
            for (p, &r) in self.here.iter_mut().zip(row) {
                *p = if v == 0.0 || !p.variance.is_finite() {
                    Side { mean: r, variance: v }
                } else {
                    let variance = 1.0 / (1.0 / p.variance + 1.0 / v);
                    Side { mean: p.mean + variance / v * (r - p.mean), variance }
                };
            }
            match self.last.as_mut() {
                Some((state, since)) => {
                    state.copy_from_slice(&self.here);
                    *since = 0;
                }
                None => self.last = Some((self.here.clone(), 0)),
            }
        }
        &self.here
    }
}

/// Each step's and cell's standard error of `estimates` (T rows of n), estimates made from all
/// of `rows` (the releases) with weights a_t = ε_t/Δ: √(max(P_s, floor) + (x̂ − m_s)²) with
/// (m_s, P_s) the two-sided local-level model's smoothed mean and variance (module doc); ∞
/// where no release carries information. `floor` (T rows of n), when given, is the estimator's
/// own variance. Memory: the forward pass's T·n means and variances beside the result.
pub(crate) fn std_errors(
    rows: &[&[f64]],
    weights: &[f64],
    estimates: &[Vec<f64>],
    floor: Option<&[Vec<f64>]>,
) -> Vec<Vec<f64>> {
    let cells = rows.first().map_or(0, |r| r.len());
    // The drift measured on the whole stream.
    let (rates, measured) = LocalLevel::measured(rows, weights);
    let mut forward = Walker::new(&rates, &measured);
    let ahead: Vec<Vec<Side>> = rows.iter().zip(weights).map(|(r, &a)| forward.step(r, a).to_vec()).collect();
    // Backwards, each step's view combined with the forward one as the walk reaches it.
    let mut backward = Walker::new(&rates, &measured);
    let mut out = Vec::with_capacity(rows.len());
    for (t, (r, &a)) in rows.iter().zip(weights).enumerate().rev() {
        let behind = backward.step(r, a);
        let release = noise(a);
        let row = (0..cells)
            .map(|j| {
                let smoothed = combine(ahead[t][j], behind[j], release.map(|v| (r[j], v)));
                let own = floor.and_then(|f| f.get(t)).and_then(|f| f.get(j)).copied();
                let x = estimates.get(t).and_then(|e| e.get(j)).copied().unwrap_or(f64::NAN);
                let variance = error_variance(smoothed.variance, own, x, smoothed.mean);
                // A variance that is not a number is unknown: infinite, never 0.
                if variance.is_nan() { f64::INFINITY } else { variance.sqrt() }
            })
            .collect();
        out.push(row);
    }
    out.reverse();
    out
}

/// [`std_errors`] of a recorded stream whose steps have been checked: the releases and their
/// budgets ε_t, at sensitivity Δ.
pub(crate) fn of_stream<R: AsRef<[f64]>>(
    releases: &[R],
    budgets: &[f64],
    sensitivity: f64,
    estimates: &[Vec<f64>],
    floor: Option<&[Vec<f64>]>,
) -> Vec<Vec<f64>> {
    let rows: Vec<&[f64]> = releases.iter().map(AsRef::as_ref).collect();
    let weights: Vec<f64> = budgets.iter().map(|e| e / sensitivity).collect();
    std_errors(&rows, &weights, estimates, floor)
}

/// The two filtered views of one step combined: precisions added, the step's own release
/// (`release`: its value and noise variance, when fresh) counted once though both passes hold it.
fn combine(f: Side, b: Side, release: Option<(f64, f64)>) -> Side {
    match release {
        // A release without noise is the count.
        Some((r, 0.0)) => Side { mean: r, variance: 0.0 },
        Some((r, v)) => {
            // Each filtered variance is ≤ v, so the precision is ≥ 1/v; the max keeps it so in
            // floating point. Means are taken relative to r, which both passes hold.
            let precision = (1.0 / f.variance + 1.0 / b.variance - 1.0 / v).max(1.0 / v);
            let pull = relative(f, r) + relative(b, r);
            Side { mean: r + pull / precision, variance: 1.0 / precision }
        }
        None => {
            let precision = 1.0 / f.variance + 1.0 / b.variance;
            if precision == 0.0 {
                return NOTHING;
            }
            let pull = relative(f, 0.0) + relative(b, 0.0);
            Side { mean: pull / precision, variance: 1.0 / precision }
        }
    }
}

/// (m − r)/P of one side, 0 for a side that knows nothing.
fn relative(s: Side, r: f64) -> f64 {
    if s.variance.is_finite() { (s.mean - r) / s.variance } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// a = ε/Δ whose Laplace noise has variance `v`.
    fn weight(v: f64) -> f64 {
        (2.0 / v).sqrt()
    }

    #[test]
    fn one_release_alone_has_its_noise_as_variance() {
        let rows: Vec<&[f64]> = vec![&[10.0, 5.0]];
        let se = std_errors(&rows, &[weight(4.0)], &[vec![10.0, 5.0]], None);
        assert!(se[0].iter().all(|s| (s - 2.0).abs() < 1e-12), "{se:?}");
    }

    #[test]
    fn a_step_between_two_releases_is_told_by_both() {
        // A constant count seen at steps 1 and 3, nothing at step 2: with no drift measured
        // (two equal releases, rate raised by nothing), the middle step has the precision of
        // both releases, v/2.
        let rows: Vec<&[f64]> = vec![&[7.0], &[7.0], &[7.0]];
        let a = weight(8.0);
        let se = std_errors(&rows, &[a, 0.0, a], &[vec![7.0], vec![7.0], vec![7.0]], None);
        assert!((se[1][0] - 2.0).abs() < 1e-12, "{se:?}");
        // The fresh steps: each release once, plus the other's through a drift of 0.
        assert!((se[0][0] - 2.0).abs() < 1e-12 && (se[2][0] - 2.0).abs() < 1e-12, "{se:?}");
    }

    #[test]
    fn the_smoothed_variance_is_at_most_either_pass() {
        // Every step fresh, the estimate at the smoother's mean: the error is P_s, which adds
        // the other side's information to each filter's.
        let values = [50.0, 58.0, 41.0, 66.0, 49.0, 55.0, 60.0, 44.0];
        let rows: Vec<Vec<f64>> = values.iter().map(|&v| vec![v]).collect();
        let refs: Vec<&[f64]> = rows.iter().map(Vec::as_slice).collect();
        let a = vec![weight(18.0); rows.len()];
        let (rates, measured) = LocalLevel::measured(&refs, &a);
        assert!(rates[0] > 0.0, "the releases drift: {rates:?}");
        let mut walker = Walker::new(&rates, &measured);
        let forward: Vec<Vec<Side>> = refs.iter().map(|r| walker.step(r, a[0]).to_vec()).collect();
        let mut walker = Walker::new(&rates, &measured);
        let mut backward: Vec<Vec<Side>> = refs.iter().rev().map(|r| walker.step(r, a[0]).to_vec()).collect();
        backward.reverse();
        for t in 0..rows.len() {
            let s = combine(forward[t][0], backward[t][0], Some((values[t], 18.0)));
            let se = std_errors(&refs, &a, &vec![vec![s.mean]; 8], None)[t][0];
            assert!((se * se - s.variance).abs() < 1e-9 * s.variance, "step {t}: {se} vs {s:?}");
            assert!(s.variance <= forward[t][0].variance + 1e-12, "step {t}");
            assert!(s.variance <= backward[t][0].variance + 1e-12, "step {t}");
            assert!(s.variance > 0.0);
        }
        // Inside the stream both sides tell: strictly below either.
        assert!(
            combine(forward[3][0], backward[3][0], Some((values[3], 18.0))).variance < forward[3][0].variance
        );
    }

    #[test]
    fn an_estimate_away_from_the_releases_widens_by_its_distance() {
        let rows: Vec<&[f64]> = vec![&[10.0]];
        let se = std_errors(&rows, &[weight(9.0)], &[vec![14.0]], None);
        assert!((se[0][0] - 5.0).abs() < 1e-12, "√(9 + 4²) = 5: {se:?}");
    }

    #[test]
    fn the_estimators_own_variance_is_a_floor() {
        let rows: Vec<&[f64]> = vec![&[10.0]];
        let se = std_errors(&rows, &[weight(9.0)], &[vec![10.0]], Some(&[vec![25.0]]));
        assert!((se[0][0] - 5.0).abs() < 1e-12, "{se:?}");
    }

    #[test]
    fn without_a_release_that_tells_anything_the_error_is_infinite() {
        let rows: Vec<&[f64]> = vec![&[3.0], &[3.0]];
        let se = std_errors(&rows, &[0.0, 0.0], &[vec![3.0], vec![3.0]], None);
        assert!(se.iter().flatten().all(|s| s.is_infinite()), "{se:?}");
    }

    #[test]
    fn a_noise_free_release_is_the_count() {
        let rows: Vec<&[f64]> = vec![&[4.0], &[6.0]];
        let se = std_errors(&rows, &[f64::MAX, f64::MAX], &[vec![4.0], vec![6.0]], None);
        assert_eq!(se, vec![vec![0.0], vec![0.0]]);
    }
}
