//! The causal state-space filter behind `map` ([docs/map.md](tpl_core::guide::map) §8): the model of
//! §14 run one release at a time, refitted on the releases so far.

use super::*;

/// From how many releases with information on a refit of [`Online`] searches around the
/// previous fit (γ = 0 and the neighbours of its move weight, q from its own) instead of
/// over the whole grid.
const LOCAL_FROM: usize = 16;

/// The causal state-space filter behind `map` ([docs/map.md](tpl_core::guide::map) §8): the model
/// of [docs/map.md](tpl_core::guide::map) §14 run one release at a time, its parameters refitted by
/// maximum likelihood on every release seen so far whenever the number of releases with information
/// has doubled (after the 2nd, 4th, 8th, 16th, …), so that the fit follows the stream with O(log T)
/// refits, from the 16th on a local search around the previous fit ([`LOCAL_FROM`]). The estimate
/// of step t is the filtered mean projected onto {x ≥ 0, Σx = N}.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Online {
    total: f64,
    cells: usize,
    /// The forward matrix, row-major (rebuilt from the configuration on resume).
    #[cfg_attr(feature = "serde", serde(skip))]
    matrix: Vec<f64>,
    /// The releases and weights so far (rebuilt from the stream on resume).
    #[cfg_attr(feature = "serde", serde(skip))]
    rows: Vec<Vec<f64>>,
    #[cfg_attr(feature = "serde", serde(skip))]
    weights: Vec<f64>,
    /// Whether every release with information so far was integer (discrete noise).
    integer: bool,
    fresh: usize,
    next_fit: usize,
    fit: Option<KalmanFit>,
    shapes: Vec<(f64, Vec<f64>)>,
    /// The filtered mean and covariance after the last step.
    mean: Vec<f64>,
    cov: Vec<f64>,
    /// The covariance after the last step was the one before it (and the noise was this):
    /// the recursion has converged and the covariance need not be recomputed.
    steady: Option<Steady>,
    seen_release: bool,
    /// The classical family ([`CLASSICAL`]) instead of `map`'s guarded one: the strictly
    /// causal baseline of [`kalman_causal`].
    #[cfg_attr(feature = "serde", serde(default))]
    classical: bool,
}

impl Online {
    /// A filter for `cells` cells, population `total` and forward matrix `matrix` (row-major,
    /// checked by the caller).
    pub(crate) fn new(cells: usize, total: f64, matrix: Vec<f64>) -> Self {
        Self {
            total,
            cells,
            matrix,
            rows: Vec::new(),
            weights: Vec::new(),
            integer: true,
            fresh: 0,
            next_fit: 2,
            fit: None,
            shapes: vec![(0.0, centred(cells, 1.0))],
            mean: vec![total / cells as f64; cells],
            cov: Vec::new(),
            steady: None,
            seen_release: false,
            classical: false,
        }
    }

    /// The same filter fitted within the classical family (plain maximum likelihood, one
    /// shape, no null): the strictly causal Kalman filter of [`kalman_causal`].
    pub(crate) fn classical(mut self) -> Self {
        self.classical = true;
        self
    }

    /// The filter resumed from its `state` ([`crate::Filter::state`]): the forward matrix
    /// `matrix` and the history of releases and weights it was fed, which the state leaves out.
    pub(crate) fn resumed(mut state: Self, matrix: Vec<f64>, rows: Vec<Vec<f64>>, weights: Vec<f64>) -> Self {
        state.matrix = matrix;
        state.rows = rows;
        state.weights = weights;
        state
    }

    /// The parameters in use (`None` before two releases with information).
    pub(crate) fn fit(&self) -> Option<KalmanFit> {
        // A first release of real values refits at once (the noise model changed): with
        // nothing to fit, that is no fit yet.
        self.fit.filter(|_| self.fresh >= 2)
    }

    /// x moved one step by the model in use (a share γ of its people by the forward matrix):
    /// the motion of the filter's mean from one step to the next.
    pub(crate) fn motion(&self, x: &[f64]) -> Vec<f64> {
        let g = self.fit.map_or(0.0, |f| f.move_weight);
        if g == 0.0 {
            return x.to_vec();
        }
        let mut out = vec![0.0; self.cells];
        dense::row_times(x, &self.matrix, self.cells, &mut out);
        for (o, &v) in out.iter_mut().zip(x) {
            *o = (1.0 - g) * v + g * *o;
        }
        out
    }

    /// Each cell's variance under the filtered covariance after the last step (`None` before
    /// a release with information).
    pub(crate) fn variances(&self) -> Option<Vec<f64>> {
        let n = self.cells;
        (self.seen_release && self.cov.len() == n * n)
            .then(|| (0..n).map(|j| self.cov[j * n + j].max(0.0)).collect())
    }

    /// Takes the release of the next step, with weight a = ε_t/Δ (checked by the caller);
    /// returns the prior mean of the step (the prediction from the releases before it) and
    /// the estimate. `first`, when given, is the estimate the caller reports for this step
    /// if it is the first with information: the filter starts from it (with the release's
    /// covariance) instead of from the release itself.
    pub(crate) fn step(
        &mut self,
        release: &[f64],
        a: f64,
        first: Option<&[f64]>,
    ) -> Result<(Vec<f64>, Vec<f64>)> {
        let saved = (self.integer, self.next_fit, self.fresh);
        let before = self.mean.clone();
        let out = self.advance(release, a, first);
        let broken = matches!(out, Err(PostprocessError::NotPositiveDefinite))
            || (out.is_ok() && self.mean.iter().chain(&self.cov).any(|v| !v.is_finite()));
        match out {
            _ if broken => {
                // Numbers that break the covariance recursion (values near the largest
                // double): the filter starts again from this release, as from a first one.
                let noise = (a > 0.0).then(|| noise_variance(a, self.integer)).flatten();
                if let Some(v) = noise {
                    first_mean(release, self.total, &mut self.mean);
                    self.cov = centred(self.cells, v);
                    self.seen_release = true;
                }
                self.steady = None;
                Ok((before, mle::solve(&self.mean, self.total)))
            }
            Err(e) => {
                // A failed step changes nothing.
                (self.integer, self.next_fit, self.fresh) = saved;
                self.rows.pop();
                self.weights.pop();
                Err(e)
            }
            ok => ok,
        }
    }

    fn advance(&mut self, release: &[f64], a: f64, first: Option<&[f64]>) -> Result<(Vec<f64>, Vec<f64>)> {
        let n = self.cells;
        let informative = a > 0.0;
        if informative && self.integer && release.iter().any(|v| v.fract() != 0.0) {
            // Real releases after integer ones: the noise model changes; refit now.
            self.integer = false;
            self.next_fit = self.fresh + 1;
        }
        self.rows.push(release.to_vec());
        self.weights.push(a);
        self.fresh += usize::from(informative);
        let noise = informative.then(|| noise_variance(a, self.integer)).flatten();
        let stream = Stream {
            rows: &[],
            noise: &[],
            total: self.total,
            cells: n,
            matrix: &self.matrix,
            shapes: &self.shapes,
            family: CLASSICAL,
        };
        let still = Model { move_weight: 0.0, process_noise: 0.0, shape: 0 };
        let model = self.fit.map_or(still, |f| stream.model(&f));
        let mut prior = self.mean.clone();
        if self.rows.len() > 1 {
            stream.move_mean(model, &self.mean, &mut prior);
        }
        if informative && self.fresh >= self.next_fit {
            self.refit()?;
            self.next_fit = 2 * self.fresh;
        } else if self.seen_release {
            let mut work = Work::new(n);
            let (predicted, period) = match self.steady.as_ref().filter(|s| s.noise == noise) {
                Some(s) => (s.predicted.clone(), s.period.clone()),
                None => {
                    let predicted = stream.predict(model, &self.cov, &mut work);
                    let period = noise
                        .map(|v| update_covariance(&predicted, v, n, &mut work, Vec::new()))
                        .transpose()?;
                    (predicted, period)
                }
            };
            let mut mean = prior.clone();
            if let Some(p) = &period {
                absorb(p, release, &predicted, &mut mean, &mut work);
            }
            let posterior = period.as_ref().map_or_else(|| predicted.clone(), |p| p.posterior.to_vec());
            let converged = close(&posterior, &self.cov);
            self.steady = converged.then_some(Steady { noise, predicted, period });
            self.cov = posterior;
            self.mean = mean;
        } else if let Some(v) = noise {
            match first {
                Some(estimate) => self.mean.copy_from_slice(estimate),
                None => first_mean(release, self.total, &mut self.mean),
            }
            self.cov = centred(n, v);
            self.seen_release = true;
        } else if let Some(estimate) = first {
            // No information yet: the caller's estimate is the one to hold.
            self.mean.copy_from_slice(estimate);
        }
        Ok((prior, mle::solve(&self.mean, self.total)))
    }

    /// Refits (γ, q, shape) on every release so far and reruns the filter to the last one
    /// (the current step, which carries information), keeping O(n²) values.
    fn refit(&mut self) -> Result<()> {
        let rows: Vec<&[f64]> = self.rows.iter().map(Vec::as_slice).collect();
        let noise = release_noise(&rows, &self.weights);
        let family = if self.classical { CLASSICAL } else { GUARDED };
        self.shapes = noise_shapes(&rows, &noise, self.total, family.exponents);
        let stream = Stream {
            rows: &rows,
            noise: &noise,
            total: self.total,
            cells: self.cells,
            matrix: &self.matrix,
            shapes: &self.shapes,
            family,
        };
        // A full search while few releases are in; from 16 on, a search around the last fit.
        let near = self.fit.filter(|_| self.fresh >= LOCAL_FROM);
        let fit = stream.fit_near(near.as_ref());
        let model = stream.model(&fit);
        let fresh: Vec<usize> = (0..rows.len()).filter(|&t| noise[t].is_some()).collect();
        let jumps = stream.jumps(model.move_weight, model.shape, &fresh);
        let (_, mean, cov) = stream.run_fresh(model, &jumps, &fresh)?;
        self.mean = mean;
        self.cov = cov;
        self.fit = Some(fit);
        self.steady = None;
        self.seen_release = true;
        Ok(())
    }
}
