//! The classical baseline `kalman` ([docs/map.md](tpl_core::guide::map) §14): a Kalman filter and
//! Rauch–Tung–Striebel smoother on the counts, with its two parameters fitted to the
//! releases by maximum likelihood.
//!
//! State-space model (column vectors, x_t the true counts of step t):
//!
//!   x_t = Mᵀ·x_{t−1} + w_t,   M = (1 − γ)·I + γ·P,   w_t ~ Normal(0, q·(I − 11ᵀ/n)),
//!   r_t = x_t + v_t,          v_t ~ Normal(0, (2/a_t²)·I)   at a step with ε_t > 0,
//!
//! where P is the public forward matrix, γ ∈ [0, 1] the **move weight** (the share of people
//! the matrix moves; the rest stay) and q ≥ 0 the **process noise** per cell and step, which
//! sums to zero over the cells so that Σ x_t = N holds exactly. The release's noise is the
//! Laplace noise's variance 2b² with b = Δ/ε_t; a step with ε_t = 0 repeats an earlier
//! release and carries no information, so it has no observation. The first step's prior is
//! N/n in every cell with a diffuse covariance on the sum-zero subspace; the first release
//! with information is therefore not scored.
//!
//! (γ, q) maximise the innovations log-likelihood of the releases (type-II maximum
//! likelihood over the whole sequence): γ on the grid {0, 2⁻⁸, …, 2⁻¹, 1}, q on a binary
//! logarithmic scale searched per γ. A matrix that is wrong loses likelihood from the first
//! scored release, so the fit hands the estimate over to the releases (γ → 0) instead of
//! following the matrix. The smoothed means are projected onto {x ≥ 0, Σx = N} (the
//! Euclidean projection of [`crate::mle_step`], which only moves an estimate closer to every
//! point of that set, the truth included).
//!
//! Cost: n³ per step with information and per step between them (dense covariances), O(n²)
//! once the covariance has converged (a release every step, or every k steps, at one
//! budget); memory for the smoother O(n²) per distinct covariance
//! ([docs/map.md](tpl_core::guide::map) §14).

use std::rc::Rc;

use crate::dense;
use crate::error::{PostprocessError, Result};
use crate::filter::{Estimates, Estimator, FilterConfig, check_matrices, check_step, stream_shape};
use crate::renormalise::renormalise_to;
use crate::{mle, validate};

/// The move weights γ the fit tries: 0, 2⁻⁸, …, 2⁻¹ and 1.
const MOVE_WEIGHTS: [f64; 10] =
    [0.0, 0.00390625, 0.0078125, 0.015625, 0.03125, 0.0625, 0.125, 0.25, 0.5, 1.0];

/// How many nats of log-likelihood a process-noise shape other than the classical one must
/// gain over it to be chosen ([docs/map.md](tpl_core::guide::map) §14): a shape the releases do not
/// clearly prefer leaves the classical model in place.
const EVIDENCE: f64 = 3.0;

/// The binary logarithms of q relative to the mean noise variance that the fit may reach.
const LOG2_RANGE: (i32, i32) = (-40, 40);

/// Covariances whose largest entry changed by at most this share of the largest entry over
/// one period between releases count as converged (the Riccati recursion converges
/// geometrically; a converged one is reused instead of recomputed).
const CONVERGED: f64 = 1e-12;

/// The most values the smoother stores (2²⁷ doubles, 1 GiB) before it refuses a stream; the
/// fit itself keeps O(n²) per period between releases.
const MAX_STORED: usize = 1 << 27;

/// The most values the fit's table of jumps holds (2²⁴ doubles, 128 MiB).
const MAX_JUMP_VALUES: usize = 1 << 24;

/// The parameters of the `kalman` model chosen by maximum likelihood
/// ([docs/map.md](tpl_core::guide::map) §14).
///
/// ```
/// use tpl_core::TransitionMatrix;
/// use tpl_postprocess::{FilterConfig, kalman_smooth};
/// let p = TransitionMatrix::smoothed_identity(3, 0.1)?;
/// let releases = vec![vec![52.0, 31.0, 17.0], vec![48.0, 35.0, 16.0], vec![50.0, 28.0, 21.0]];
/// let out = kalman_smooth(&releases, &[1.0; 3], FilterConfig { forward: Some(&p), ..FilterConfig::new(100) })?;
/// assert!((0.0..=1.0).contains(&out.fit.move_weight) && out.fit.process_noise >= 0.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct KalmanFit {
    /// γ ∈ [0, 1]: the share of people the forward matrix moves each step.
    pub move_weight: f64,
    /// q ≥ 0: the process noise's variance per cell and step (on average over the cells).
    pub process_noise: f64,
    /// β of the process noise's shape ([docs/map.md](tpl_core::guide::map) §14): 0 spreads it
    /// evenly over the cells (the classical model, always the case for `kalman`), 1 in proportion
    /// to their people.
    pub noise_shape: f64,
    /// The innovations log-likelihood of the scored releases at (γ, q) (0 when fewer than
    /// two releases carry information).
    pub log_likelihood: f64,
}

/// What [`kalman_smooth`] returns: the count estimates, their variances and the fit.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct KalmanSmoothed {
    /// Row t − 1: the smoothed mean of step t projected onto {x ≥ 0, Σx = N}.
    pub estimates: Vec<Vec<f64>>,
    /// Row t − 1: the smoothed variance of each cell of step t under the fitted model.
    pub variances: Vec<Vec<f64>>,
    /// Row t − 1: the *filtered* mean of step t (from the releases up to t, under the
    /// parameters fitted on the whole sequence) projected onto {x ≥ 0, Σx = N}: the causal
    /// baseline a filter is measured against.
    pub filtered: Vec<Vec<f64>>,
    /// The fitted parameters.
    pub fit: KalmanFit,
}

/// The Kalman filter and RTS smoother of [docs/map.md](tpl_core::guide::map) §14 over a recorded
/// stream, its move weight and process noise fitted to the releases by maximum likelihood.
///
/// `config` supplies N, Δ and the forward matrix P (required when T > 1; without it, or
/// for T = 1, the model is P = I); its prior policy, backward matrix, estimator and prior
/// update are not used.
///
/// # Errors
/// [`NoSteps`](PostprocessError::NoSteps), [`NoCells`](PostprocessError::NoCells),
/// [`BudgetCount`](PostprocessError::BudgetCount),
/// [`MissingForward`](PostprocessError::MissingForward), the matrix and population checks
/// of [`crate::Filter::new`], each step's checks (naming the step), and
/// [`TooLarge`](PostprocessError::TooLarge) when the smoother would store more than 2²⁷
/// values (n² per distinct covariance).
///
/// # Runtime
/// O(n³) per step while the covariance changes, O(n²) once it has converged; the fit runs
/// the filter about 10 times per move weight.
///
/// ```
/// use tpl_core::TransitionMatrix;
/// use tpl_postprocess::{FilterConfig, kalman_smooth};
/// let p = TransitionMatrix::smoothed_identity(2, 0.05)?;
/// let releases = vec![vec![61.0, 42.0], vec![57.0, 40.0], vec![63.0, 35.0], vec![58.0, 44.0]];
/// let config = FilterConfig { forward: Some(&p), ..FilterConfig::new(100) };
/// let out = kalman_smooth(&releases, &[0.5; 4], config)?;
/// assert!(out.estimates.iter().all(|x| (x.iter().sum::<f64>() - 100.0).abs() < 1e-9));
/// assert!(out.variances.iter().flatten().all(|&v| v >= 0.0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn kalman_smooth<R: AsRef<[f64]>>(
    releases: &[R],
    budgets: &[f64],
    config: FilterConfig<'_>,
) -> Result<KalmanSmoothed> {
    state_space_smooth(releases, budgets, &config, Estimator::Kalman, CLASSICAL)
}

/// The strictly causal Kalman filter of [docs/map.md](tpl_core::guide::map) §14: the model of
/// [`kalman_smooth`] run one release at a time, its move weight and process noise refitted by
/// plain maximum likelihood on the releases seen so far whenever their number has doubled
/// (after the 2nd, 4th, 8th, … release with information), as `map` refits its own. Row t − 1
/// is the filtered mean of step t from the releases up to t only, projected onto
/// {x ≥ 0, Σx = N}: the causal baseline that `map` is measured against (the filtered means of
/// [`KalmanSmoothed::filtered`] use parameters fitted on the whole sequence, which no filter
/// running live has).
///
/// Only up to 64 cells: every step is dense, O(n³).
///
/// # Errors
/// Those of [`kalman_smooth`] but [`TooLarge`](PostprocessError::TooLarge), and
/// [`TooManyCells`](PostprocessError::TooManyCells) for more than 64 cells.
///
/// ```
/// use tpl_core::TransitionMatrix;
/// use tpl_postprocess::{FilterConfig, kalman_causal};
/// let p = TransitionMatrix::smoothed_identity(2, 0.05)?;
/// let releases = vec![vec![61.0, 42.0], vec![57.0, 40.0], vec![63.0, 35.0], vec![58.0, 44.0]];
/// let config = FilterConfig { forward: Some(&p), ..FilterConfig::new(100) };
/// let out = kalman_causal(&releases, &[0.5; 4], config)?;
/// // Step 1 is the first release moved to sum N; nothing after it changes it.
/// assert_eq!(out[0], vec![59.5, 40.5]);
/// assert!(out.iter().all(|x| (x.iter().sum::<f64>() - 100.0).abs() < 1e-9));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn kalman_causal<R: AsRef<[f64]>>(
    releases: &[R],
    budgets: &[f64],
    config: FilterConfig<'_>,
) -> Result<Vec<Vec<f64>>> {
    let (horizon, cells) = stream_shape(releases, budgets)?;
    if cells == 0 {
        return Err(PostprocessError::NoCells);
    }
    if cells > ONLINE_CELLS {
        return Err(PostprocessError::TooManyCells {
            estimator: "kalman-causal",
            cells,
            limit: ONLINE_CELLS,
        });
    }
    if horizon > 1 && config.forward.is_none() {
        return Err(PostprocessError::MissingForward { estimator: Estimator::Kalman.name(), horizon });
    }
    validate::integer_total(config.total)?;
    tpl_core::check_sensitivity(config.sensitivity)?;
    check_matrices(&config, cells)?;
    let total = config.total as f64;
    let mut online = Online::new(cells, total, dense_matrix(&config, cells)).classical();
    let mut out = Vec::with_capacity(horizon);
    for (t, (r, &e)) in releases.iter().zip(budgets).enumerate() {
        let r = r.as_ref();
        let step = |online: &mut Online| {
            let a = check_step(r, e, cells, config.sensitivity)?;
            online.step(r, a, None)
        };
        let (_, mut x) = step(&mut online).map_err(|err| err.at_step(t + 1))?;
        renormalise_to(total, r, &mut x);
        out.push(x);
    }
    Ok(out)
}

/// The smoother of [docs/map.md](tpl_core::guide::map) §14 fitted within `family`: [`CLASSICAL`]
/// for the baseline, [`GUARDED`] for `smooth` ([docs/map.md](tpl_core::guide::map) §9). `estimator`
/// names the caller in errors.
pub(crate) fn state_space_smooth<R: AsRef<[f64]>>(
    releases: &[R],
    budgets: &[f64],
    config: &FilterConfig<'_>,
    estimator: Estimator,
    family: Family,
) -> Result<KalmanSmoothed> {
    let (horizon, cells) = stream_shape(releases, budgets)?;
    if cells == 0 {
        return Err(PostprocessError::NoCells);
    }
    if horizon > 1 && config.forward.is_none() {
        return Err(PostprocessError::MissingForward { estimator: estimator.name(), horizon });
    }
    validate::integer_total(config.total)?;
    tpl_core::check_sensitivity(config.sensitivity)?;
    check_matrices(config, cells)?;
    let rows: Vec<&[f64]> = releases.iter().map(AsRef::as_ref).collect();
    let mut weights = Vec::with_capacity(horizon);
    for (t, (r, &e)) in rows.iter().zip(budgets).enumerate() {
        weights.push(check_step(r, e, cells, config.sensitivity).map_err(|err| err.at_step(t + 1))?);
    }
    let noise = release_noise(&rows, &weights);
    let matrix = dense_matrix(config, cells);
    let total = config.total as f64;
    let shapes = noise_shapes(&rows, &noise, total, family.exponents);
    let stream =
        Stream { rows: &rows, noise: &noise, total, cells, matrix: &matrix, shapes: &shapes, family };
    let fit = stream.fit();
    let model = stream.model(&fit);
    let pass = match stream.forward(model) {
        Err(PostprocessError::NotPositiveDefinite) => {
            // Numbers that break the covariance recursion (values near the largest double):
            // each release projected alone, with its own noise as the variance.
            let scale = stream.noise_scale();
            let estimates: Vec<Vec<f64>> = rows.iter().map(|r| projected(r, r, total)).collect();
            let variances = noise.iter().map(|v| vec![v.unwrap_or(scale); cells]).collect();
            return Ok(KalmanSmoothed { filtered: estimates.clone(), estimates, variances, fit });
        }
        other => other?,
    };
    let (mut means, mut variances) = stream.smooth(model, &pass);
    // A smoothed mean that rounding has blown up (a gain of an ill-conditioned prediction)
    // falls back to the filtered one: never a value outside what the data allow.
    let bound = 1e6 * (stream.total + stream.noise_scale().sqrt() + 1.0);
    for t in 0..means.len() {
        let wild = |v: &f64, limit: f64| !v.is_finite() || v.abs() > limit;
        if means[t].iter().any(|v| wild(v, bound)) || variances[t].iter().any(|v| wild(v, bound * bound)) {
            means[t].clone_from(&pass.filtered[t]);
            variances[t] = diagonal(&pass.posterior[t], cells);
        }
    }
    let estimates = means.iter().zip(&rows).map(|(m, r)| projected(m, r, stream.total)).collect();
    let filtered = pass.filtered.iter().zip(&rows).map(|(m, r)| projected(m, r, stream.total)).collect();
    Ok(KalmanSmoothed { estimates, variances, filtered, fit })
}

/// A mean projected onto {x ≥ 0, Σx = N} as the estimate of the step of `release`: the
/// projection subtracts a threshold computed at the mean's magnitude (±3·10⁸ after a release of
/// 10⁹), so its sum is renormalised.
fn projected(mean: &[f64], release: &[f64], total: f64) -> Vec<f64> {
    let mut x = mle::solve(mean, total);
    renormalise_to(total, release, &mut x);
    x
}

/// The variance of each step's release noise ([docs/map.md](tpl_core::guide::map) §14): `None` at a
/// step without information (a = ε_t/Δ = 0). Integer releases (every value of every release with
/// information a whole number) carry discrete Laplace noise, Pr[k] ∝ e^{−a|k|}, of variance
/// 2e^{−a}/(1 − e^{−a})² — at a = 5 about a sixth of the continuous 2/a², which would make the
/// model distrust precise releases; real releases carry the continuous one.
pub(crate) fn release_noise(rows: &[&[f64]], weights: &[f64]) -> Vec<Option<f64>> {
    let integer =
        rows.iter().zip(weights).filter(|(_, a)| **a > 0.0).all(|(r, _)| r.iter().all(|v| v.fract() == 0.0));
    weights.iter().map(|&a| noise_variance(a, integer)).collect()
}

/// The variance of the noise of `release`, published at weight a, in each cell: discrete
/// Laplace when its values are all whole numbers, continuous otherwise (see
/// [`release_noise`]); `None` when a = 0.
pub(crate) fn release_variance(release: &[f64], a: f64) -> Option<f64> {
    noise_variance(a, release.iter().all(|v| v.fract() == 0.0))
}

/// The variance of one release's noise at weight a (see [`release_noise`]); `None` when
/// a = 0 (or the variance is not a positive finite number).
fn noise_variance(a: f64, integer: bool) -> Option<f64> {
    let v = if integer {
        let m = (-a).exp_m1();
        2.0 * (-a).exp() / (m * m)
    } else {
        2.0 / (a * a)
    };
    (a > 0.0 && v.is_finite() && v > 0.0).then_some(v)
}

/// The forward matrix of `config` row-major (the identity without one).
pub(crate) fn dense_matrix(config: &FilterConfig<'_>, cells: usize) -> Vec<f64> {
    match config.forward {
        Some(p) => p.rows().flatten().copied().collect(),
        None => (0..cells * cells).map(|k| f64::from(k % (cells + 1) == 0)).collect(),
    }
}

/// The shapes of `exponents` ([`noise_shape`]) around the mean of the releases with
/// information (N/n in every cell when none has any), moved onto the counts summing to N.
fn noise_shapes(
    rows: &[&[f64]],
    noise: &[Option<f64>],
    total: f64,
    exponents: &[f64],
) -> Vec<(f64, Vec<f64>)> {
    let cells = rows.first().map_or(0, |r| r.len());
    let mut mean = vec![0.0; cells];
    let mut count = 0.0;
    for (r, _) in rows.iter().zip(noise).filter(|(_, v)| v.is_some()) {
        for (m, x) in mean.iter_mut().zip(r.iter()) {
            *m += x;
        }
        count += 1.0;
    }
    let mean = if count > 0.0 {
        mle::solve(&mean.iter().map(|m| m / count).collect::<Vec<_>>(), total)
    } else {
        vec![total / cells.max(1) as f64; cells]
    };
    exponents.iter().map(|&b| (b, noise_shape(&mean, b))).collect()
}

/// The process-noise shape S = D_w − w·wᵀ/Σw with w_i = (x̄_i + 1)^β
/// ([docs/map.md](tpl_core::guide::map) §14): every row sums to 0 (the total stays N) and β = 0
/// gives I − 11ᵀ/n, the classical model's; β = 1 makes a cell's noise grow with its people (x̄ the
/// releases' mean moved onto the counts summing to N), as when each person moves on their own. w is
/// scaled to mean 1 so that q keeps its meaning of a variance per cell and step.
pub(crate) fn noise_shape(mean: &[f64], exponent: f64) -> Vec<f64> {
    let n = mean.len();
    let raw: Vec<f64> = mean.iter().map(|&m| (m.max(0.0) + 1.0).powf(exponent)).collect();
    let scale = raw.iter().sum::<f64>() / n as f64;
    let w: Vec<f64> = raw.iter().map(|v| v / scale).collect();
    let sum: f64 = w.iter().sum();
    let mut s = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            s[i * n + j] = f64::from(i == j) * w[i] - w[i] * w[j] / sum;
        }
    }
    s
}

/// `kalman` as an [`Estimator`] of [`crate::filter`]: the projected smoothed means.
pub(crate) fn kalman<R: AsRef<[f64]>>(
    releases: &[R],
    budgets: &[f64],
    config: FilterConfig<'_>,
) -> Result<Estimates> {
    let sensitivity = config.sensitivity;
    let out = kalman_smooth(releases, budgets, config)?;
    let std_errors =
        crate::two_sided::of_stream(releases, budgets, sensitivity, &out.estimates, Some(&out.variances));
    Ok(Estimates { estimator: Estimator::Kalman, estimates: out.estimates, warnings: Vec::new(), std_errors })
}

/// The models a fit chooses among ([docs/map.md](tpl_core::guide::map) §14): process-noise shapes
/// (exponents β of [`noise_shape`], the classical β = 0 first) and the evidence in nats that a move
/// weight γ > 0 must gain over γ = 0, and a shape over the first, to be chosen.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Family {
    exponents: &'static [f64],
    evidence: f64,
}

/// The classical baseline `kalman`: one shape, plain maximum likelihood.
pub(crate) const CLASSICAL: Family = Family { exponents: &[0.0], evidence: 0.0 };

/// `smooth` and `map`: the classical shape, and nobody moving as the null that a move weight must
/// beat by [`EVIDENCE`] nats. (With the shape that follows the counts beside it, the
/// likelihood chose that shape in cells of the stress grid where it cost up to 57× the
/// classical smoother's error: N = 10³, OUT-shaped, matrices smoothed 0.1, ba at ε = 0.1.)
pub(crate) const GUARDED: Family = Family { exponents: &[0.0], evidence: EVIDENCE };

/// The most cells for which `map` and `smooth` run the state-space model (dense n×n
/// covariances, n³ per step); wider streams use the calibrated MAP filter of
/// [docs/map.md](tpl_core::guide::map) §8 and the pooled smoother of §9.
pub(crate) const ONLINE_CELLS: usize = 64;

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

/// A converged step of [`Online`]: its noise, prediction and update.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Steady {
    noise: Option<f64>,
    predicted: Vec<f64>,
    period: Option<Period>,
}

/// One member of the model family.
#[derive(Debug, Clone, Copy)]
struct Model {
    move_weight: f64,
    process_noise: f64,
    /// Index into [`Stream::shapes`]: the process noise is q·S.
    shape: usize,
}

/// The checked stream the filter runs over.
struct Stream<'s> {
    rows: &'s [&'s [f64]],
    /// The release noise's variance 2/a_t² of each step; `None` for a step without
    /// information (ε_t = 0).
    noise: &'s [Option<f64>],
    total: f64,
    cells: usize,
    /// P, row-major n×n.
    matrix: &'s [f64],
    /// The shapes S of the process noise q·S the fit may choose from (row-major n×n, each
    /// row summing to 0), with the exponent β each was built with ([`noise_shapes`]); the
    /// first is the classical β = 0.
    shapes: &'s [(f64, Vec<f64>)],
    /// The evidence and release count a move weight or a second shape needs
    /// ([`CLASSICAL`] for `kalman` and [`kalman_causal`], [`GUARDED`] for `smooth` and `map`).
    family: Family,
}

/// A covariance shared between the steps where it is the same (after convergence).
type Cov = Rc<Vec<f64>>;

/// The covariances of one period: the predictions of the steps after a release up to and
/// including the next one, and the posterior of that next one.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Period {
    /// Σ⁻ of the 1st, 2nd, … step after the release that opened the period.
    predicted: Vec<Cov>,
    /// The noise variance of the release that closed it.
    noise: f64,
    /// Its posterior covariance.
    posterior: Cov,
    /// The Cholesky factor of S = Σ⁻ + noise·I at that release, and ln det S.
    factor: Rc<Vec<f64>>,
    log_det: f64,
}

/// What a forward pass keeps for the smoother.
struct Pass {
    /// x_t (filtered means) and x⁻_t (predicted means).
    filtered: Vec<Vec<f64>>,
    predicted: Vec<Vec<f64>>,
    /// Σ_t and Σ⁻_t.
    posterior: Vec<Cov>,
    prior: Vec<Cov>,
    log_likelihood: f64,
}

impl Stream<'_> {
    /// The model of a fit.
    fn model(&self, fit: &KalmanFit) -> Model {
        let shape = self.shapes.iter().position(|(b, _)| *b == fit.noise_shape).unwrap_or(0);
        Model { move_weight: fit.move_weight, process_noise: fit.process_noise, shape }
    }

    /// The mean noise variance of the steps with information (1 when none has any).
    fn noise_scale(&self) -> f64 {
        let (sum, count) = self.noise.iter().flatten().fold((0.0, 0usize), |(s, c), &v| (s + v, c + 1));
        if count == 0 { 1.0 } else { sum / count as f64 }
    }

    /// A first guess of q: the mean square of the changes between consecutive releases with
    /// information, less their noise, per step between them (at least 2⁻⁴⁰ of the scale).
    fn initial_log2(&self, scale: f64) -> i32 {
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
    fn fit(&self) -> KalmanFit {
        self.fit_near(None)
    }

    /// [`Stream::fit`], or with `near` (a fit of fewer releases of the same stream) a local
    /// search around it: γ = 0 and the move weights next to its own, q from its own.
    fn fit_near(&self, near: Option<&KalmanFit>) -> KalmanFit {
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
    fn jumps(&self, gamma: f64, shape: usize, fresh: &[usize]) -> Jumps {
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
    fn likelihood(&self, model: Model, jumps: &Jumps, fresh: &[usize]) -> Result<f64> {
        self.run_fresh(model, jumps, fresh).map(|(ll, _, _)| ll)
    }

    /// [`Stream::likelihood`] with the filtered mean and covariance at the last step of
    /// `fresh` (the prior's when `fresh` is empty).
    fn run_fresh(&self, model: Model, jumps: &Jumps, fresh: &[usize]) -> Result<(f64, Vec<f64>, Vec<f64>)> {
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

    /// One forward pass (the Kalman filter) under `model`, keeping everything the smoother
    /// needs. Fails when a covariance stops being positive definite or the stored values
    /// would exceed [`MAX_STORED`].
    fn forward(&self, model: Model) -> Result<Pass> {
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
    fn move_mean(&self, model: Model, x: &[f64], out: &mut [f64]) {
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
    fn predict(&self, model: Model, cov: &[f64], work: &mut Work) -> Vec<f64> {
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
    fn smooth(&self, model: Model, pass: &Pass) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
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
    fn gain(&self, model: Model, post: &[f64], prior: &[f64], work: &mut Work) -> Vec<f64> {
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

/// The table of [`Stream::jumps`]: M^j and W_j for j = 1..=K (empty when γ = 0, M = I).
struct Jumps {
    moves: Vec<Vec<f64>>,
    spread: Vec<Vec<f64>>,
    /// γ = 0: nobody moves, the prediction k steps on is Σ + k·q·(I − 11ᵀ/n).
    stay: bool,
}

impl Jumps {
    /// The mean `gap` steps on: x·M^gap (row vector), in jumps of at most K steps.
    fn move_mean(&self, stream: &Stream<'_>, model: Model, mean: &mut [f64], out: &mut [f64], gap: usize) {
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
    fn predict(
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

/// Scratch space of one pass.
struct Work {
    a: Vec<f64>,
    vector: Vec<f64>,
    product: Vec<f64>,
}

impl Work {
    fn new(n: usize) -> Self {
        Self { a: vec![0.0; n * n], vector: vec![0.0; n], product: vec![0.0; n] }
    }
}

/// The update at a release with noise variance v: S = Σ⁻ + v·I, its factor, ln det S and
/// the posterior Σ = Σ⁻ − Σ⁻·S⁻¹·Σ⁻ = Σ⁻ − Gᵀ·G with G = L⁻¹·Σ⁻.
fn update_covariance(
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
fn absorb(period: &Period, r: &[f64], predicted: &[f64], mean: &mut [f64], work: &mut Work) -> f64 {
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
fn first_release(v: f64, n: usize, steps: Vec<Cov>) -> Period {
    Period {
        predicted: steps,
        noise: v,
        posterior: Rc::new(centred(n, v)),
        factor: Rc::new(Vec::new()),
        log_det: 0.0,
    }
}

/// The mean after the first release: r moved to sum N along 1, r + (N − Σr)/n.
fn first_mean(r: &[f64], total: f64, mean: &mut [f64]) {
    let shift = (total - r.iter().sum::<f64>()) / r.len() as f64;
    for (m, &v) in mean.iter_mut().zip(r) {
        *m = v + shift;
    }
}

/// c·(I − 11ᵀ/n), row-major.
fn centred(n: usize, c: f64) -> Vec<f64> {
    let off = c / n as f64;
    (0..n * n).map(|k| if k % (n + 1) == 0 { c - off } else { -off }).collect()
}

/// Whether two covariances agree to [`CONVERGED`] of their largest entry.
fn close(a: &[f64], b: &[f64]) -> bool {
    let scale = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    a.iter().zip(b).all(|(x, y)| (x - y).abs() <= CONVERGED * scale)
}

/// The diagonal of a row-major n×n matrix, clamped at 0 (rounding can leave −1e-16).
fn diagonal(a: &[f64], n: usize) -> Vec<f64> {
    (0..n).map(|i| a[i * n + i].max(0.0)).collect()
}

/// Maximises `score` over integers k in [`LOG2_RANGE`] from `start`: moves by 4 while that
/// improves, then tries ±2 and ±1 around the best; returns (k, score). A unimodal score
/// is maximised exactly; otherwise a local maximum.
fn climb(start: i32, score: &dyn Fn(i32) -> f64) -> (i32, f64) {
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

#[cfg(test)]
mod tests;
