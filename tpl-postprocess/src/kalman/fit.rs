//! Fitting the model's parameters to the releases by maximum likelihood
//! ([docs/map.md](tpl_core::guide::map) §14): the innovations log-likelihood, the table of jumps
//! between releases, and the search over the move weight and the process noise.

use super::*;

impl Stream<'_> {
    /// The model of a fit.
    pub(super) fn model(&self, fit: &KalmanFit) -> Model {
        let shape = self.shapes.iter().position(|(b, _)| *b == fit.noise_shape).unwrap_or(0);
        Model { move_weight: fit.move_weight, process_noise: fit.process_noise, shape }
    }

    /// The mean noise variance of the steps with information (1 when none has any).
    pub(super) fn noise_scale(&self) -> f64 {
        let (sum, count) = self.noise.iter().flatten().fold((0.0, 0usize), |(s, c), &v| (s + v, c + 1));
        if count == 0 { 1.0 } else { sum / count as f64 }
    }

    /// A first guess of q: the mean square of the changes between consecutive releases with
    /// information, less their noise, per step between them (at least 2⁻⁴⁰ of the scale).
    pub(super) fn initial_log2(&self, scale: f64) -> i32 {
        let mut last: Option<(usize, &[f64], f64)> = None;
        let (mut sum, mut count) = (0.0, 0.0);
        for (t, (r, v)) in self.rows.iter().zip(self.noise).enumerate() {
            let Some(v) = *v else { continue };
            if let Some((s, prev, pv)) = last {
                let d2 = r.iter().zip(prev).map(|(a, b)| (a - b) * (a - b)).sum::<f64>() / self.cells as f64;
                sum += (d2 - v - pv).max(0.0) / (t - s) as f64;
                count += 1.0;
            }
            last = Some((t, r, v));
        }
        let q = if count > 0.0 { sum / count } else { 0.0 };
        let ratio = (q / scale).max(2f64.powi(LOG2_RANGE.0));
        (ratio.log2().round() as i32).clamp(LOG2_RANGE.0, LOG2_RANGE.1)
    }

    /// (γ, q) of largest innovations likelihood: for each γ of the grid, a search over
    /// q = scale·2^k by steps of 4, then 2, then 1 in k, starting where the previous γ ended.
    pub(super) fn fit(&self) -> KalmanFit {
        self.fit_near(None)
    }

    /// [`Stream::fit`], or with `near` (a fit of fewer releases of the same stream) a local
    /// search around it: γ = 0 and the move weights next to its own, q from its own.
    pub(super) fn fit_near(&self, near: Option<&KalmanFit>) -> KalmanFit {
        let scale = self.noise_scale();
        let nothing = KalmanFit {
            move_weight: 0.0,
            process_noise: 0.0,
            noise_shape: 0.0,
            log_likelihood: f64::NEG_INFINITY,
        };
        let first = match near {
            Some(f) if f.process_noise > 0.0 => {
                ((f.process_noise / scale).log2().round() as i32).clamp(LOG2_RANGE.0, LOG2_RANGE.1)
            }
            _ => self.initial_log2(scale),
        };
        let weights: Vec<f64> = match near {
            Some(f) => {
                let i = MOVE_WEIGHTS.iter().position(|&g| g == f.move_weight).unwrap_or(0);
                let mut w = vec![0.0];
                w.extend(
                    MOVE_WEIGHTS[i.saturating_sub(1)..(i + 2).min(MOVE_WEIGHTS.len())]
                        .iter()
                        .filter(|&&g| g > 0.0),
                );
                w
            }
            None => MOVE_WEIGHTS.to_vec(),
        };
        let fresh: Vec<usize> = (0..self.rows.len()).filter(|&t| self.noise[t].is_some()).collect();
        let mut classical = nothing;
        let mut chosen = nothing;
        for (shape, &(exponent, _)) in self.shapes.iter().enumerate() {
            let (mut hold, mut moving) = (nothing, nothing);
            let mut start = first;
            for &gamma in &weights {
                let jumps = self.jumps(gamma, shape, &fresh);
                let score = |k: i32| {
                    let model = Model { move_weight: gamma, process_noise: scale * 2f64.powi(k), shape };
                    self.likelihood(model, &jumps, &fresh).unwrap_or(f64::NEG_INFINITY)
                };
                let (k, ll) = climb(start, &score);
                start = k;
                let fit = KalmanFit {
                    move_weight: gamma,
                    process_noise: scale * 2f64.powi(k),
                    noise_shape: exponent,
                    log_likelihood: ll,
                };
                if gamma == 0.0 {
                    hold = fit;
                } else if ll > moving.log_likelihood {
                    moving = fit;
                }
            }
            // Nobody moving holds unless a move weight beats it by `evidence` nats.
            let best = if moving.log_likelihood > hold.log_likelihood + self.family.evidence
                || !hold.log_likelihood.is_finite()
            {
                moving
            } else {
                hold
            };
            // The classical shape (the first) holds unless another beats it by `evidence` nats.
            if shape == 0 {
                classical = best;
                chosen = best;
            } else if best.log_likelihood > classical.log_likelihood + self.family.evidence
                && best.log_likelihood > chosen.log_likelihood
                || !chosen.log_likelihood.is_finite()
            {
                chosen = best;
            }
        }
        if !chosen.log_likelihood.is_finite() {
            // Fewer than two releases with information: nothing to fit; the releases alone.
            chosen =
                KalmanFit { move_weight: 0.0, process_noise: scale, noise_shape: 0.0, log_likelihood: 0.0 };
        }
        chosen
    }

    /// M^j and W_j for j = 1..=K under move weight γ, K the longest gap between the steps
    /// `fresh` (capped so that the table holds at most [`MAX_JUMP_VALUES`] values; a longer
    /// gap is crossed in several jumps): j steps after a release, the prediction is
    /// (M^j)ᵀ·Σ·M^j + q·W_j with W_1 = I − 11ᵀ/n and W_j = Mᵀ·W_{j−1}·M + W_1.
    pub(super) fn jumps(&self, gamma: f64, shape: usize, fresh: &[usize]) -> Jumps {
        let n = self.cells;
        let longest = fresh.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(1);
        let cap = (MAX_JUMP_VALUES / (2 * n * n)).max(1);
        let reach = longest.min(cap);
        let mut jumps = Jumps { moves: Vec::new(), spread: Vec::new(), stay: gamma == 0.0 };
        if jumps.stay {
            return jumps;
        }
        let model = Model { move_weight: gamma, process_noise: 1.0, shape };
        let mut m: Vec<f64> = self.matrix.iter().map(|&p| gamma * p).collect();
        for i in 0..n {
            m[i * n + i] += 1.0 - gamma;
        }
        let mut work = Work::new(n);
        let mut power = m.clone();
        let mut spread = self.predict(model, &vec![0.0; n * n], &mut work);
        for j in 1..=reach {
            if j > 1 {
                let mut next = vec![0.0; n * n];
                dense::times(&power, &m, n, &mut next);
                power = next;
                spread = self.predict(model, &spread, &mut work);
            }
            jumps.moves.push(power.clone());
            jumps.spread.push(spread.clone());
        }
        jumps
    }

    /// The innovations log-likelihood of the releases at the steps `fresh` under `model`:
    /// the filter of [`Stream::forward`] evaluated at those steps only, each prediction one
    /// jump from the previous release ([docs/map.md](tpl_core::guide::map) §14). Fails only when a
    /// covariance stops being positive definite.
    pub(super) fn likelihood(&self, model: Model, jumps: &Jumps, fresh: &[usize]) -> Result<f64> {
        self.run_fresh(model, jumps, fresh).map(|(ll, _, _)| ll)
    }

    /// [`Stream::likelihood`] with the filtered mean and covariance at the last step of
    /// `fresh` (the prior's when `fresh` is empty).
    pub(super) fn run_fresh(
        &self,
        model: Model,
        jumps: &Jumps,
        fresh: &[usize],
    ) -> Result<(f64, Vec<f64>, Vec<f64>)> {
        let n = self.cells;
        let Some(&first) = fresh.first() else {
            return Ok((0.0, vec![self.total / n as f64; n], centred(n, 0.0)));
        };
        let mut work = Work::new(n);
        let mut mean = vec![self.total / n as f64; n];
        let mut moved = mean.clone();
        let mut cov = vec![0.0; n * n];
        // The gap, noise, update and prediction of the previous release.
        let mut previous: Option<(usize, f64, Period, Vec<f64>)> = None;
        let mut converged = false;
        let mut last = first;
        let mut total = 0.0;
        for (index, &t) in fresh.iter().enumerate() {
            let gap = t - last;
            let Some(v) = self.noise[t] else { continue };
            if index > 0 {
                jumps.move_mean(self, model, &mut mean, &mut moved, gap);
            }
            let same = previous.as_ref().filter(|(g, w, _, _)| converged && *g == gap && *w == v);
            let (period, predicted) = match same {
                Some((_, _, p, c)) => (p.clone(), c.clone()),
                None if index == 0 => (first_release(v, n, Vec::new()), cov.clone()),
                None => {
                    let c = jumps.predict(self, model, &cov, gap, &mut work);
                    (update_covariance(&c, v, n, &mut work, Vec::new())?, c)
                }
            };
            if index > 0 {
                total += absorb(&period, self.rows[t], &predicted, &mut mean, &mut work);
            } else {
                first_mean(self.rows[t], self.total, &mut mean);
            }
            converged = index > 0
                && previous.as_ref().is_some_and(|(g, w, p, _)| {
                    *g == gap && *w == v && close(&p.posterior, &period.posterior)
                });
            cov.copy_from_slice(&period.posterior);
            previous = Some((gap, v, period, predicted));
            last = t;
        }
        if total.is_finite() { Ok((total, mean, cov)) } else { Err(PostprocessError::NotPositiveDefinite) }
    }
}

impl Jumps {
    /// The mean `gap` steps on: x·M^gap (row vector), in jumps of at most K steps.
    pub(super) fn move_mean(
        &self,
        stream: &Stream<'_>,
        model: Model,
        mean: &mut [f64],
        out: &mut [f64],
        gap: usize,
    ) {
        if self.stay {
            return;
        }
        let n = stream.cells;
        let mut left = gap;
        while left > 0 {
            let j = left.min(self.moves.len());
            if j == 0 {
                stream.move_mean(model, mean, out);
                mean.copy_from_slice(out);
                left -= 1;
                continue;
            }
            dense::row_times(mean, &self.moves[j - 1], n, out);
            mean.copy_from_slice(out);
            left -= j;
        }
    }

    /// The prediction `gap` steps after a posterior Σ: (M^j)ᵀ·Σ·M^j + q·W_j, in jumps.
    pub(super) fn predict(
        &self,
        stream: &Stream<'_>,
        model: Model,
        cov: &[f64],
        gap: usize,
        work: &mut Work,
    ) -> Vec<f64> {
        let n = stream.cells;
        let q = model.process_noise;
        if self.stay {
            let shape = &stream.shapes[model.shape].1;
            return cov.iter().zip(shape).map(|(&c, &w)| c + gap as f64 * q * w).collect();
        }
        let mut out = cov.to_vec();
        let mut left = gap;
        while left > 0 {
            let j = left.min(self.moves.len());
            let power = &self.moves[j - 1];
            dense::times(&out, power, n, &mut work.a);
            dense::transpose_times(power, &work.a, n, &mut out);
            for (o, &w) in out.iter_mut().zip(&self.spread[j - 1]) {
                *o += q * w;
            }
            dense::symmetrize(&mut out, n);
            left -= j;
        }
        out
    }
}

/// Maximises `score` over integers k in [`LOG2_RANGE`] from `start`: moves by 4 while that
/// improves, then tries ±2 and ±1 around the best; returns (k, score). A unimodal score
/// is maximised exactly; otherwise a local maximum.
pub(super) fn climb(start: i32, score: &dyn Fn(i32) -> f64) -> (i32, f64) {
    let (lo, hi) = LOG2_RANGE;
    let mut k = start.clamp(lo, hi);
    let mut best = score(k);
    for step in [4, 2, 1] {
        loop {
            let mut moved = false;
            for candidate in [k - step, k + step] {
                if !(lo..=hi).contains(&candidate) {
                    continue;
                }
                let s = score(candidate);
                if s > best {
                    best = s;
                    k = candidate;
                    moved = true;
                    break;
                }
            }
            if !moved || step < 4 {
                break;
            }
        }
    }
    (k, best)
}
