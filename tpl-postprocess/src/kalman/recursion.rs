//! The Kalman recursions ([docs/map.md](tpl_core::guide::map) §14): the forward pass, the
//! Rauch–Tung–Striebel smoother, and the covariance and mean updates they share.

use super::*;

impl Stream<'_> {
    /// One forward pass (the Kalman filter) under `model`, keeping everything the smoother
    /// needs. Fails when a covariance stops being positive definite or the stored values
    /// would exceed [`MAX_STORED`].
    pub(super) fn forward(&self, model: Model) -> Result<Pass> {
        let n = self.cells;
        let horizon = self.rows.len();
        if horizon.saturating_mul(n) > MAX_STORED {
            return Err(PostprocessError::TooLarge { cells: n, steps: horizon, limit: MAX_STORED });
        }
        let mut stored = 0usize;
        let mut pass = Pass {
            filtered: Vec::new(),
            predicted: Vec::new(),
            posterior: Vec::new(),
            prior: Vec::new(),
            log_likelihood: 0.0,
        };
        let mut work = Work::new(n);
        let mut mean = vec![self.total / n as f64; n];
        let mut prior_mean = mean.clone();
        // The diffuse prior of step 1 on the sum-zero subspace.
        let diffuse = 1e6 * (self.noise_scale() + (self.total / n as f64).powi(2) + 1.0);
        let mut cov: Cov = Rc::new(centred(n, diffuse));
        let mut previous: Option<Period> = None;
        let mut current: Vec<Cov> = Vec::new();
        let mut converged = false;
        let mut seen_release = false;
        for (t, (r, noise)) in self.rows.iter().zip(self.noise).enumerate() {
            // Prediction x⁻_t, Σ⁻_t (step 1: the diffuse prior itself).
            let predicted: Cov = if t == 0 {
                cov.clone()
            } else {
                self.move_mean(model, &mean, &mut prior_mean);
                mean.copy_from_slice(&prior_mean);
                let j = current.len();
                let reuse = previous.as_ref().filter(|_| converged).and_then(|p| p.predicted.get(j));
                let c = match reuse {
                    Some(c) => c.clone(),
                    None => {
                        stored += n * n;
                        Rc::new(self.predict(model, &cov, &mut work))
                    }
                };
                current.push(c.clone());
                c
            };
            cov = predicted.clone();
            if let Some(v) = *noise {
                let same = previous
                    .as_ref()
                    .filter(|p| converged && p.noise == v && p.predicted.len() == current.len());
                let period = match same {
                    Some(p) => Period { predicted: current.clone(), ..p.clone() },
                    None if !seen_release => first_release(v, n, current.clone()),
                    None => {
                        stored += n * n;
                        update_covariance(&predicted, v, n, &mut work, current.clone())?
                    }
                };
                if seen_release {
                    pass.log_likelihood += absorb(&period, r, &predicted, &mut mean, &mut work);
                } else {
                    first_mean(r, self.total, &mut mean);
                }
                converged = seen_release
                    && previous.as_ref().is_some_and(|p| {
                        p.noise == v
                            && p.predicted.len() == period.predicted.len()
                            && close(&p.posterior, &period.posterior)
                    });
                cov = period.posterior.clone();
                previous = Some(period);
                current.clear();
                seen_release = true;
            }
            stored += 2 * n;
            if stored > MAX_STORED {
                return Err(PostprocessError::TooLarge { cells: n, steps: horizon, limit: MAX_STORED });
            }
            pass.filtered.push(mean.clone());
            pass.predicted.push(prior_mean.clone());
            pass.posterior.push(cov.clone());
            pass.prior.push(predicted);
        }
        if !pass.log_likelihood.is_finite() {
            return Err(PostprocessError::NotPositiveDefinite);
        }
        Ok(pass)
    }

    /// x·M = (1 − γ)·x + γ·x·P (as a row vector) into `out`.
    pub(super) fn move_mean(&self, model: Model, x: &[f64], out: &mut [f64]) {
        let g = model.move_weight;
        if g == 0.0 {
            out.copy_from_slice(x);
            return;
        }
        dense::row_times(x, self.matrix, self.cells, out);
        for (o, &v) in out.iter_mut().zip(x) {
            *o = (1.0 - g) * v + g * *o;
        }
    }

    /// Σ⁻ = Mᵀ·Σ·M + q·S.
    pub(super) fn predict(&self, model: Model, cov: &[f64], work: &mut Work) -> Vec<f64> {
        let n = self.cells;
        let g = model.move_weight;
        let mut out = if g == 0.0 {
            cov.to_vec()
        } else {
            // B = Σ·M = (1 − γ)Σ + γ·Σ·P, then Mᵀ·B = (1 − γ)B + γ·Pᵀ·B.
            dense::times(cov, self.matrix, n, &mut work.a);
            for (b, &s) in work.a.iter_mut().zip(cov) {
                *b = (1.0 - g) * s + g * *b;
            }
            let mut out = vec![0.0; n * n];
            dense::transpose_times(self.matrix, &work.a, n, &mut out);
            for (o, &b) in out.iter_mut().zip(&work.a) {
                *o = (1.0 - g) * b + g * *o;
            }
            dense::symmetrize(&mut out, n);
            out
        };
        let q = model.process_noise;
        for (o, &w) in out.iter_mut().zip(&self.shapes[model.shape].1) {
            *o += q * w;
        }
        out
    }

    /// The RTS smoother over a stored pass: the smoothed means and the diagonals of the
    /// smoothed covariances.
    pub(super) fn smooth(&self, model: Model, pass: &Pass) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
        let n = self.cells;
        let horizon = pass.filtered.len();
        let mut means = vec![Vec::new(); horizon];
        let mut variances = vec![Vec::new(); horizon];
        let mut mean = pass.filtered[horizon - 1].clone();
        let mut cov = pass.posterior[horizon - 1].to_vec();
        variances[horizon - 1] = diagonal(&cov, n);
        means[horizon - 1] = mean.clone();
        let mut work = Work::new(n);
        // The gain C_t = Σ_t·M·(Σ⁻_{t+1})⁺, kept while (Σ_t, Σ⁻_{t+1}) stay the same.
        let mut gain: Option<(Cov, Cov, Vec<f64>)> = None;
        let mut next = vec![0.0; n * n];
        for t in (0..horizon - 1).rev() {
            let post = &pass.posterior[t];
            let prior = &pass.prior[t + 1];
            let reuse = gain.as_ref().is_some_and(|(a, b, _)| Rc::ptr_eq(a, post) && Rc::ptr_eq(b, prior));
            if !reuse {
                gain = Some((post.clone(), prior.clone(), self.gain(model, post, prior, &mut work)));
            }
            let Some((_, _, c)) = gain.as_ref() else { break };
            // x_s,t = x_t + C·(x_s,t+1 − x⁻_{t+1})
            let d: Vec<f64> = mean.iter().zip(&pass.predicted[t + 1]).map(|(a, b)| a - b).collect();
            dense::times_vector(c, &d, n, &mut work.product);
            mean = pass.filtered[t].iter().zip(&work.product).map(|(a, b)| a + b).collect();
            // V_s,t = Σ_t + C·(V_s,t+1 − Σ⁻_{t+1})·Cᵀ
            for (v, &p) in cov.iter_mut().zip(prior.iter()) {
                *v -= p;
            }
            dense::times(c, &cov, n, &mut work.a);
            // next = (C·D)·Cᵀ: row i of C·D against row j of C.
            for i in 0..n {
                let row = &work.a[i * n..(i + 1) * n];
                for j in 0..n {
                    next[i * n + j] = row.iter().zip(&c[j * n..(j + 1) * n]).map(|(x, y)| x * y).sum();
                }
            }
            for (v, (&s, &x)) in cov.iter_mut().zip(post.iter().zip(&next)) {
                *v = s + x;
            }
            dense::symmetrize(&mut cov, n);
            variances[t] = diagonal(&cov, n);
            means[t] = mean.clone();
        }
        (means, variances)
    }

    /// C = Σ_t·M·(Σ⁻ + s·11ᵀ/n + δI)⁻¹: on the sum-zero subspace, where every difference of
    /// means lies, this is Σ_t·M times the pseudo-inverse of Σ⁻ (s its mean diagonal, δ a
    /// relative 1e-12 ridge for a prediction that is singular on the subspace).
    pub(super) fn gain(&self, model: Model, post: &[f64], prior: &[f64], work: &mut Work) -> Vec<f64> {
        let n = self.cells;
        let trace: f64 = (0..n).map(|i| prior[i * n + i]).sum();
        let s = (trace / n as f64).max(f64::MIN_POSITIVE);
        let mut h = prior.to_vec();
        let mut ridge = 1e-12 * s;
        let mut factor = vec![0.0; n * n];
        loop {
            for (k, v) in h.iter_mut().enumerate() {
                *v = prior[k] + s / n as f64 + if k % (n + 1) == 0 { ridge } else { 0.0 };
            }
            if dense::cholesky(&h, n, &mut factor) || ridge > s {
                break;
            }
            ridge *= 1e3;
        }
        // Row i of C is H⁻¹ applied to row i of Σ_t·M (H is symmetric).
        let g = model.move_weight;
        dense::times(post, self.matrix, n, &mut work.a);
        let mut c: Vec<f64> = work.a.iter().zip(post).map(|(&sp, &p)| (1.0 - g) * p + g * sp).collect();
        dense::solve_rows(&factor, n, &mut c);
        c
    }
}

impl Work {
    pub(super) fn new(n: usize) -> Self {
        Self { a: vec![0.0; n * n], vector: vec![0.0; n], product: vec![0.0; n] }
    }
}

/// The update at a release with noise variance v: S = Σ⁻ + v·I, its factor, ln det S and
/// the posterior Σ = Σ⁻ − Σ⁻·S⁻¹·Σ⁻ = Σ⁻ − Gᵀ·G with G = L⁻¹·Σ⁻.
pub(super) fn update_covariance(
    predicted: &[f64],
    v: f64,
    n: usize,
    work: &mut Work,
    steps: Vec<Cov>,
) -> Result<Period> {
    let mut s = predicted.to_vec();
    for i in 0..n {
        s[i * n + i] += v;
    }
    let mut factor = vec![0.0; n * n];
    if !dense::cholesky(&s, n, &mut factor) {
        return Err(PostprocessError::NotPositiveDefinite);
    }
    let log_det = 2.0 * (0..n).map(|i| factor[i * n + i].ln()).sum::<f64>();
    // Rows of Gᵀ = Σ⁻·L⁻ᵀ: row i solves L·g = (row i of Σ⁻) (Σ⁻ symmetric).
    work.a.copy_from_slice(predicted);
    for row in work.a.chunks_exact_mut(n) {
        dense::forward_solve(&factor, n, row);
    }
    let mut posterior = predicted.to_vec();
    for i in 0..n {
        let gi = &work.a[i * n..(i + 1) * n];
        for j in i..n {
            let gj = &work.a[j * n..(j + 1) * n];
            let d: f64 = gi.iter().zip(gj).map(|(x, y)| x * y).sum();
            posterior[i * n + j] -= d;
            if j != i {
                posterior[j * n + i] = posterior[i * n + j];
            }
        }
    }
    Ok(Period { predicted: steps, noise: v, posterior: Rc::new(posterior), factor: Rc::new(factor), log_det })
}

/// The update of the mean at a scored release r ([docs/map.md](tpl_core::guide::map) §14): `mean`
/// holds the prediction x⁻ and becomes x⁻ + Σ⁻·S⁻¹·e with e = r − x⁻; returns the innovation's
/// log-density −½·(ln det S + eᵀ·S⁻¹·e + n·ln 2π), S factored in `period`.
pub(super) fn absorb(
    period: &Period,
    r: &[f64],
    predicted: &[f64],
    mean: &mut [f64],
    work: &mut Work,
) -> f64 {
    let n = mean.len();
    for (e, (x, m)) in work.vector.iter_mut().zip(r.iter().zip(mean.iter())) {
        *e = x - m;
    }
    dense::forward_solve(&period.factor, n, &mut work.vector);
    let quad: f64 = work.vector.iter().map(|z| z * z).sum();
    dense::backward_solve(&period.factor, n, &mut work.vector);
    dense::times_vector(predicted, &work.vector, n, &mut work.product);
    for (m, d) in mean.iter_mut().zip(&work.product) {
        *m += d;
    }
    -0.5 * (period.log_det + quad + n as f64 * (2.0 * std::f64::consts::PI).ln())
}

/// The update at the first release with information, in the diffuse limit: the release
/// decides every direction but the total, which is N, so the posterior is v·(I − 11ᵀ/n)
/// exactly (computing it from a large finite prior would cancel catastrophically). It is not
/// scored, so its factor is empty.
pub(super) fn first_release(v: f64, n: usize, steps: Vec<Cov>) -> Period {
    Period {
        predicted: steps,
        noise: v,
        posterior: Rc::new(centred(n, v)),
        factor: Rc::new(Vec::new()),
        log_det: 0.0,
    }
}

/// The mean after the first release: r moved to sum N along 1, r + (N − Σr)/n.
pub(super) fn first_mean(r: &[f64], total: f64, mean: &mut [f64]) {
    let shift = (total - r.iter().sum::<f64>()) / r.len() as f64;
    for (m, &v) in mean.iter_mut().zip(r) {
        *m = v + shift;
    }
}

/// c·(I − 11ᵀ/n), row-major.
pub(super) fn centred(n: usize, c: f64) -> Vec<f64> {
    let off = c / n as f64;
    (0..n * n).map(|k| if k % (n + 1) == 0 { c - off } else { -off }).collect()
}

/// Whether two covariances agree to [`CONVERGED`] of their largest entry.
pub(super) fn close(a: &[f64], b: &[f64]) -> bool {
    let scale = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    a.iter().zip(b).all(|(x, y)| (x - y).abs() <= CONVERGED * scale)
}

/// The diagonal of a row-major n×n matrix, clamped at 0 (rounding can leave −1e-16).
pub(super) fn diagonal(a: &[f64], n: usize) -> Vec<f64> {
    (0..n).map(|i| a[i * n + i].max(0.0)).collect()
}
