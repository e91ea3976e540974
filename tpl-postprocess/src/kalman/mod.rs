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

use crate::config::{FilterConfig, check_matrices, check_step, stream_shape};
use crate::dense;
use crate::error::{PostprocessError, Result};
use crate::estimates::Estimates;
use crate::estimator::Estimator;
use crate::renormalise::renormalise_to;
use crate::{mle, validate};

mod fit;
mod online;
mod recursion;

pub(crate) use online::Online;
use recursion::{absorb, centred, close, diagonal, first_mean, first_release, update_covariance};

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
/// use tpl_core::{Correlation, TransitionMatrix};
/// use tpl_postprocess::{FilterConfig, kalman_smooth};
/// let p = TransitionMatrix::smoothed_identity(3, 0.1)?;
/// let releases = vec![vec![52.0, 31.0, 17.0], vec![48.0, 35.0, 16.0], vec![50.0, 28.0, 21.0]];
/// let public = Correlation::new(None, Some(p.clone()))?;
/// let out = kalman_smooth(&releases, &[1.0; 3], FilterConfig { correlation: &public, ..FilterConfig::new(100) })?;
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
/// use tpl_core::{Correlation, TransitionMatrix};
/// use tpl_postprocess::{FilterConfig, kalman_smooth};
/// let p = TransitionMatrix::smoothed_identity(2, 0.05)?;
/// let releases = vec![vec![61.0, 42.0], vec![57.0, 40.0], vec![63.0, 35.0], vec![58.0, 44.0]];
/// let public = Correlation::new(None, Some(p.clone()))?;
/// let config = FilterConfig { correlation: &public, ..FilterConfig::new(100) };
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
/// use tpl_core::{Correlation, TransitionMatrix};
/// use tpl_postprocess::{FilterConfig, kalman_causal};
/// let p = TransitionMatrix::smoothed_identity(2, 0.05)?;
/// let releases = vec![vec![61.0, 42.0], vec![57.0, 40.0], vec![63.0, 35.0], vec![58.0, 44.0]];
/// let public = Correlation::new(None, Some(p.clone()))?;
/// let config = FilterConfig { correlation: &public, ..FilterConfig::new(100) };
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
    if horizon > 1 && config.correlation.forward().is_none() {
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
    if horizon > 1 && config.correlation.forward().is_none() {
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
    match config.correlation.forward() {
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

/// The table of [`Stream::jumps`]: M^j and W_j for j = 1..=K (empty when γ = 0, M = I).
struct Jumps {
    moves: Vec<Vec<f64>>,
    spread: Vec<Vec<f64>>,
    /// γ = 0: nobody moves, the prediction k steps on is Σ + k·q·(I − 11ᵀ/n).
    stay: bool,
}

/// Scratch space of one pass.
struct Work {
    a: Vec<f64>,
    vector: Vec<f64>,
    product: Vec<f64>,
}

#[cfg(test)]
mod tests;
