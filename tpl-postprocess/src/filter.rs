//! The stream driver ([docs/map.md](tpl_core::guide::map) §5 and §11): count estimates step by
//! step, each from the releases up to t only (a filter), with the prior carried forward through the
//! public forward matrix.
//!
//! [`Filter`] is the stepper (one release in, one count estimate out, for an open-ended
//! stream); [`filter`] drives it over a whole recorded stream and returns its [`Estimates`].

use crate::calibrate::{Calibration, Pass};
use crate::config::{FilterConfig, check_matrices, check_step, stream_shape, tempered_weight};
use crate::error::{PostprocessError, Result};
use crate::estimates::Estimates;
use crate::estimator::Estimator;
use crate::guard::{Guard, Model as GuardModel, Source};
use crate::kalman::{self, KalmanFit, release_variance};
use crate::local_level::{Gain, LocalLevel};
use crate::prior::{PriorPolicy, PriorUpdate, Warning};
use crate::propagate::Mover;
use crate::renormalise::renormalise_to;
use crate::{map, map_integer, mle, smooth, two_sided, validate};

/// What one step of a [`Filter`] produced ([docs/map.md](tpl_core::guide::map) §5): the count
/// estimate, prior and warnings of step t.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FilterStep {
    /// The count estimate x̂_t (n values summing to N; integers for `map-integer`; unrounded for
    /// `map` and `mle`).
    pub estimate: Vec<f64>,
    /// The prior p_t the estimate used (`None` for `mle`, which uses none, and for step 1 of `map`
    /// under the frequency prior, which starts from the release projected).
    pub prior: Option<Vec<f64>>,
    /// For `map`: the member of the calibrated family that set p_t and its strength
    /// ([docs/map.md](tpl_core::guide::map) §8) — at step 1 the DBSec prior (under a uniform or
    /// explicit prior; `None` under the frequency prior); after it, on up to 64
    /// cells, `None` (the state-space filter's parameters are in [`FilterStep::fit`]); `None` for
    /// the other estimators.
    pub calibration: Option<Calibration>,
    /// For `map` on at most 64 cells: the state-space model's parameters in use at this
    /// step, refitted to the releases so far ([docs/map.md](tpl_core::guide::map) §8); `None`
    /// before two releases with information and for the other estimators.
    pub fit: Option<KalmanFit>,
    /// Warnings raised at this step (only at step 1, by the frequency prior).
    pub warnings: Vec<Warning>,
    /// Each cell's standard error σ_t of the estimate ([`docs/intervals.md`](tpl_core::guide::intervals)
    /// §3): the variance of a per-cell local-level filter whose drift is measured from the
    /// releases so far (for `mle`, which reads only the step's release, that release's noise
    /// plus the drift since it), or the state-space filter's own where `map` has one and it is
    /// larger, plus the squared distance of the estimate from the local-level filter's mean.
    /// Causal, like the estimate; [`crate::model_interval`] turns it into an interval. Empty
    /// until a release with information.
    pub std_error: Vec<f64>,
    /// For `map`: what the guard handed out at this step ([docs/map.md](tpl_core::guide::map) §8,
    /// "The guard") — the movement model's estimate, the release projected, or the last
    /// estimate held; `None` for the other estimators.
    pub source: Option<Source>,
}

/// The stepper of [docs/map.md](tpl_core::guide::map) §5: feeds one release at a time, keeps the
/// prior state.
///
/// # Proof definition
/// Step t returns the chosen estimator's solution for release r_t, weight a_t = ε_t/Δ and
/// prior p_t, where p_1 comes from the [`PriorPolicy`] and, for t ≥ 2, p_t =
/// normalize(w)·P with w = x̂_{t−1} ([`PriorUpdate::ClosedLoop`]) or w = p_{t−1}
/// ([`PriorUpdate::OpenLoop`]) for `map-dbsec` and `map-integer`; for `map` beyond 64 cells,
/// p_t = (1 − γ)·q + γ·q·P with q = x̂_{t−1}/N and weight a_t·φ, (γ, φ) the [`Calibration`]
/// that scored best on r_2..r_t ([docs/map.md](tpl_core::guide::map) §8). `map` on up to 64 cells
/// returns the projected filtered mean of the state-space model of
/// [docs/map.md](tpl_core::guide::map) §14 fitted to r_1..r_t (refitted when the releases with
/// information have doubled), its prior the prediction's non-negative part normalised. Step 1 of
/// `map` is the release projected (the `mle` estimate) under the frequency prior, which is read
/// off that release, and the DBSec step under a uniform or explicit prior. What `map` hands out is
/// then chosen by its guard ([docs/map.md](tpl_core::guide::map) §8, [`FilterStep::source`]): the
/// model's estimate, or, where that has predicted the next releases worse, the release projected
/// (a step with information) or the last estimate held (a step without). A failed step changes
/// nothing: it can be retried. `smooth` and `kalman` are not filters and are refused
/// ([`Filter::new`]).
///
/// # Runtime
/// Per step, the solver (O(n) passes for the continuous estimators) plus the propagation
/// through P — O(n + nnz) when P is row floors plus nnz sparse excesses (a smoothed sparse
/// matrix), O(n²) when dense ([docs/map.md](tpl_core::guide::map) §13) — plus O(190·min(n, 64)) for
/// the calibration of `map` beyond 64 cells. `map` on up to 64 cells: O(n³) per step while the
/// covariance changes, plus a refit over all releases so far each time they double (about 80 runs
/// of the recursion over the prefix; README, "Performance").
///
/// ```
/// use tpl_core::{Correlation, TransitionMatrix};
/// use tpl_postprocess::{Filter, FilterConfig, PriorPolicy};
/// let p = TransitionMatrix::smoothed_identity(3, 0.1)?;
/// let public = Correlation::new(None, Some(p.clone()))?;
/// let config = FilterConfig { prior: PriorPolicy::Uniform, correlation: &public, ..FilterConfig::new(30) };
/// let mut f = Filter::new(3, config)?;
/// let s1 = f.step(&[12.0, 9.0, 8.0], 1.0)?;
/// let s2 = f.step(&[14.0, 7.0, 10.0], 1.0)?;
/// assert!((s2.estimate.iter().sum::<f64>() - 30.0).abs() < 1e-9);
/// assert_ne!(s1.prior, s2.prior);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Filter<'a> {
    config: FilterConfig<'a>,
    cells: usize,
    steps: usize,
    /// p_{t−1} (map estimators; empty before step 1).
    prior: Vec<f64>,
    /// x̂_{t−1} (empty before step 1).
    estimate: Vec<f64>,
    /// The forward matrix in the form its product is cheapest in
    /// ([docs/map.md](tpl_core::guide::map) §13).
    mover: Option<Mover<'a>>,
    /// The calibrated predictions of `map` beyond 64 cells.
    pass: Pass,
    /// The state-space filter of `map` on at most 64 cells.
    online: Option<kalman::Online>,
    /// The standard errors' model.
    spread: LocalLevel,
    /// `map`'s hand-over between its model and the releases.
    guard: Guard,
}

impl<'a> Filter<'a> {
    /// A filter for releases of `cells` cells.
    ///
    /// # Errors
    /// [`NoCells`](PostprocessError::NoCells) for `cells = 0`;
    /// [`TotalTooLarge`](PostprocessError::TotalTooLarge);
    /// [`Core`](PostprocessError::Core) for a sensitivity Δ that is not finite and > 0
    /// ([`tpl_core::check_sensitivity`]);
    /// [`MatrixSize`](PostprocessError::MatrixSize) for a forward or backward matrix that is
    /// not `cells`×`cells`; [`NotAFilter`](PostprocessError::NotAFilter) for `smooth`; the
    /// prior errors of [`PriorPolicy::initial`] for an explicit prior
    /// (checked for every estimator, although `mle` does not use it).
    pub fn new(cells: usize, config: FilterConfig<'a>) -> Result<Self> {
        if cells == 0 {
            return Err(PostprocessError::NoCells);
        }
        validate::integer_total(config.total)?;
        tpl_core::check_sensitivity(config.sensitivity)?;
        if !config.estimator.is_filter() {
            return Err(PostprocessError::NotAFilter { estimator: config.estimator.name() });
        }
        check_matrices(&config, cells)?;
        config.prior.check(cells)?;
        let mover = config.correlation.forward().map(Mover::new);
        let gain = if config.estimator == Estimator::Mle { Gain::ReleaseOnly } else { Gain::Optimal };
        let online = (config.estimator == Estimator::CausalFilter && cells <= kalman::ONLINE_CELLS)
            .then(|| kalman::Online::new(cells, config.total as f64, kalman::dense_matrix(&config, cells)));
        Ok(Self {
            config,
            cells,
            steps: 0,
            prior: Vec::new(),
            estimate: Vec::new(),
            mover,
            pass: Pass::new(),
            online,
            spread: LocalLevel::new(gain),
            guard: Guard::default(),
        })
    }

    /// Number of steps done so far.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// Estimates the counts of the next step from its release and the budget ε_t ≥ 0 that set its noise
    /// (ε_t = 0: no new information, x̂_t = N p_t for `map`).
    ///
    /// # Errors
    /// All wrapped in [`AtStep`](PostprocessError::AtStep) with this step's number:
    /// [`ReleaseLength`](PostprocessError::ReleaseLength),
    /// [`BadRelease`](PostprocessError::BadRelease), [`BadBudget`](PostprocessError::BadBudget),
    /// [`WeightOverflow`](PostprocessError::WeightOverflow), and
    /// [`MissingForward`](PostprocessError::MissingForward) at step 2 or later of a map
    /// estimator without a forward matrix.
    pub fn step(&mut self, release: &[f64], epsilon: f64) -> Result<FilterStep> {
        let t = self.steps + 1;
        let mut step = self.step_inner(release, epsilon, t).map_err(|e| e.at_step(t))?;
        // Only the estimate handed out: the filter's own state keeps the solver's, so that
        // renormalising changes no later step.
        renormalise_to(self.config.total as f64, release, &mut step.estimate);
        Ok(step)
    }

    fn step_inner(&mut self, release: &[f64], epsilon: f64, t: usize) -> Result<FilterStep> {
        let a = check_step(release, epsilon, self.cells, self.config.sensitivity)?;
        let estimator = self.config.estimator;
        let total = self.config.total;
        if let Some(online) = self.online.as_mut() {
            if t > 1 && self.mover.is_none() {
                return Err(PostprocessError::MissingForward { estimator: estimator.name(), horizon: t });
            }
            let n_total = total as f64;
            // Step 1 with an explicit prior is the DBSec paper's MAP step; with the frequency
            // prior (a prior read off the step's own release) the filter's own start, the
            // release projected (docs/map.md §8).
            let first = (t == 1 && self.config.prior.is_informative()).then(|| {
                let (p, w) = self.config.prior.initial_unchecked(release);
                let x = map::solve(release, &p, n_total, a).x;
                (p, x, w)
            });
            // The guard's candidates move as the model predicts, before it refits on this release.
            let motion = |x: &[f64]| online.motion(x);
            let mut guard = self.guard.clone();
            guard.advance(&motion);
            let fitted = online.fit();
            let (predicted, estimate) =
                online.step(release, a, first.as_ref().map(|(_, x, _)| x.as_slice()))?;
            match (fitted, online.fit()) {
                (None, Some(fit)) => {
                    let motion = |x: &[f64]| online.motion(x);
                    guard.first_fit(release, &motion, fit.move_weight == 0.0);
                }
                (old, new) if old != new => guard.refitted(),
                _ => {}
            }
            self.guard = guard;
            self.steps = t;
            let calibration = first.is_some().then_some(Calibration::DBSEC);
            let (prior, estimate, warnings) = match first {
                Some((p, x, w)) => (Some(p), x, w),
                // The frequency prior is not used: nothing to report.
                None if t == 1 => (None, estimate, Vec::new()),
                None => {
                    // The prediction's non-negative part, normalised (uniform when it is 0).
                    let clipped: Vec<f64> = predicted.iter().map(|v| v.max(0.0)).collect();
                    let sum: f64 = clipped.iter().sum();
                    let prior = if sum > 0.0 {
                        clipped.iter().map(|v| v / sum).collect()
                    } else {
                        vec![1.0 / self.cells as f64; self.cells]
                    };
                    (Some(prior), estimate, Vec::new())
                }
            };
            let kind = match (&calibration, online.fit()) {
                (Some(_), _) => GuardModel::GivenPrior,
                (None, Some(_)) => GuardModel::Fitted,
                (None, None) => GuardModel::Unfitted,
            };
            let (estimate, source) =
                self.guard.step(release, release_variance(release, a), &estimate, kind, n_total);
            let floor = match source {
                Source::Model => online.variances(),
                Source::Release => noise_floor(release, a),
                Source::Held => None,
            };
            let std_error = standard_errors(self.spread.step(release, a, &estimate, floor.as_deref()));
            return Ok(FilterStep {
                estimate,
                prior,
                calibration,
                fit: online.fit(),
                warnings,
                std_error,
                source: Some(source),
            });
        }
        let mut calibration = None;
        let (prior, warnings) = if !estimator.uses_prior() {
            (None, Vec::new())
        } else if t == 1 && estimator == Estimator::CausalFilter && !self.config.prior.is_informative() {
            // `map` starts from the release projected; the frequency prior is kept only as the
            // propagation's starting weights (docs/map.md §8).
            self.prior = self.config.prior.initial_unchecked(release).0;
            (None, Vec::new())
        } else if t == 1 {
            let (p, w) = self.config.prior.initial_unchecked(release);
            calibration = (estimator == Estimator::CausalFilter).then_some(Calibration::DBSEC);
            (Some(p), w)
        } else {
            let forward = self
                .mover
                .as_ref()
                .ok_or(PostprocessError::MissingForward { estimator: estimator.name(), horizon: t })?;
            let calibrated = estimator == Estimator::CausalFilter && total > 0;
            match self.pass.predict(release, a, total as f64).filter(|_| calibrated) {
                Some(prediction) => {
                    calibration = Some(prediction.calibration);
                    (Some(prediction.prior), Vec::new())
                }
                None => {
                    let closed = self.config.update == PriorUpdate::ClosedLoop && total > 0;
                    let weights = if closed { &self.estimate } else { &self.prior };
                    calibration = (estimator == Estimator::CausalFilter).then_some(Calibration::DBSEC);
                    (Some(forward.step(weights)), Vec::new())
                }
            }
        };
        let n_total = total as f64;
        if estimator == Estimator::CausalFilter {
            // The guard's candidates move as this step's prior does: a share γ by P.
            let g = calibration.map_or(1.0, |c| c.move_weight);
            let mover = self.mover.as_ref();
            self.guard.advance(&|x: &[f64]| motion(x, g, mover));
        }
        let estimate = match (estimator, &prior) {
            (Estimator::CausalFilter, Some(p)) => {
                let strength = calibration.map_or(1.0, |c| c.dispersion);
                map::solve(release, p, n_total, tempered_weight(a, strength)).x
            }
            (Estimator::MapDbsec, Some(p)) => map::solve(release, p, n_total, a).x,
            (Estimator::MapInteger, Some(p)) => {
                map_integer::solve(release, p, total, a).into_iter().map(|v| v as f64).collect()
            }
            _ => mle::solve(release, n_total),
        };
        if estimator == Estimator::CausalFilter {
            self.pass.observe(&estimate, self.mover.as_ref());
        }
        self.steps = t;
        if let Some(p) = &prior {
            self.prior.clone_from(p);
        }
        self.estimate.clone_from(&estimate);
        let (estimate, source, floor) = if estimator == Estimator::CausalFilter {
            let kind = match (t, calibration) {
                (1, Some(_)) => GuardModel::GivenPrior,
                (1, None) => GuardModel::Unfitted,
                _ => GuardModel::Fitted,
            };
            let (x, source) =
                self.guard.step(release, release_variance(release, a), &estimate, kind, n_total);
            let floor = (source == Source::Release).then(|| noise_floor(release, a)).flatten();
            (x, Some(source), floor)
        } else {
            (estimate, None, None)
        };
        let std_error = standard_errors(self.spread.step(release, a, &estimate, floor.as_deref()));
        Ok(FilterStep { estimate, prior, calibration, fit: None, warnings, std_error, source })
    }
}

/// What a [`Filter`] carries from one step to the next, without the releases it was fed
/// ([`Filter::state`]): saved after a step, it lets [`Filter::resume`] go on in another
/// process as the filter would have gone on, bit for bit, without running it again over
/// the whole stream. Opaque; with the `serde` feature it serialises (JSON included: every
/// number it holds is finite, or it is not saved by a careful caller).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FilterState {
    cells: usize,
    steps: usize,
    prior: Vec<f64>,
    estimate: Vec<f64>,
    pass: Pass,
    online: Option<kalman::Online>,
    spread: LocalLevel,
    #[cfg_attr(feature = "serde", serde(default))]
    guard: Guard,
}

impl FilterState {
    /// The number of steps the filter had taken.
    pub fn steps(&self) -> usize {
        self.steps
    }
}

impl<'a> Filter<'a> {
    /// The state after the steps so far ([`FilterState`]).
    pub fn state(&self) -> FilterState {
        FilterState {
            cells: self.cells,
            steps: self.steps,
            prior: self.prior.clone(),
            estimate: self.estimate.clone(),
            pass: self.pass.clone(),
            online: self.online.clone(),
            spread: self.spread.clone(),
            guard: self.guard.clone(),
        }
    }

    /// The filter of `config` resumed from `state`, whose steps were fed `releases` with the
    /// budgets `budgets` (the same, in order: the state-space filter of `map` refits on them).
    /// Stepping it on goes on as the filter that made `state` would have.
    ///
    /// # Errors
    /// As [`Filter::new`]; [`PostprocessError::BadState`] when `releases`, `budgets` and the
    /// state disagree in length or cells; the errors of [`Filter::step`] for a release or
    /// budget it refuses.
    pub fn resume<R: AsRef<[f64]>>(
        cells: usize,
        config: FilterConfig<'a>,
        state: FilterState,
        releases: &[R],
        budgets: &[f64],
    ) -> Result<Self> {
        if state.cells != cells || releases.len() != state.steps || budgets.len() != state.steps {
            return Err(PostprocessError::BadState {
                steps: state.steps,
                releases: releases.len(),
                budgets: budgets.len(),
            });
        }
        let mut filter = Self::new(cells, config)?;
        let sensitivity = filter.config.sensitivity;
        let weights = releases
            .iter()
            .zip(budgets)
            .enumerate()
            .map(|(t, (r, &e))| check_step(r.as_ref(), e, cells, sensitivity).map_err(|e| e.at_step(t + 1)))
            .collect::<Result<Vec<f64>>>()?;
        filter.steps = state.steps;
        filter.prior = state.prior;
        filter.estimate = state.estimate;
        filter.pass = state.pass;
        if !state.spread.fits(cells, &filter.spread) || !state.guard.fits(cells) {
            return Err(PostprocessError::BadState {
                steps: state.steps,
                releases: releases.len(),
                budgets: budgets.len(),
            });
        }
        filter.spread = state.spread;
        filter.guard = state.guard;
        filter.online = match (state.online, filter.online.take()) {
            (Some(saved), Some(_)) => {
                let rows = releases.iter().map(|r| r.as_ref().to_vec()).collect();
                Some(kalman::Online::resumed(
                    saved,
                    kalman::dense_matrix(&filter.config, cells),
                    rows,
                    weights,
                ))
            }
            (None, None) => None,
            _ => {
                return Err(PostprocessError::BadState {
                    steps: state.steps,
                    releases: releases.len(),
                    budgets: budgets.len(),
                });
            }
        };
        Ok(filter)
    }
}

/// Post-processes a whole recorded stream ([docs/map.md](tpl_core::guide::map) §5, §8, §9 and §11):
/// the [`Filter`] built from `config` run over `releases` (T rows of n values), step t with budget
/// ε_t = `budgets[t − 1]`.
///
/// The releases and their budgets are the stream, one entry per step; `config` is everything
/// else (N, Δ, prior policy, forward matrix, estimator, prior update), the same value that
/// drives a [`Filter`] one step at a time. The forward matrix is required when T > 1 for the
/// map estimators and validated against n whenever given.
///
/// # Errors
/// Checked before any step runs: [`NoSteps`](PostprocessError::NoSteps),
/// [`NoCells`](PostprocessError::NoCells),
/// [`BudgetCount`](PostprocessError::BudgetCount),
/// [`MissingForward`](PostprocessError::MissingForward), and those of [`Filter::new`]; then
/// those of [`Filter::step`], which name the step.
///
/// # Citations
/// [docs/map.md](tpl_core::guide::map) §5 (closed-loop propagation follows the authors' code; X.
/// Cao, Y. Cao, Yoshikawa, Nakamura, DBSec 2023, eq. (7)).
///
/// ```
/// use tpl_core::{Correlation, TransitionMatrix};
/// use tpl_postprocess::{FilterConfig, filter};
/// let p = TransitionMatrix::smoothed_identity(3, 0.05)?;
/// let releases = vec![vec![52.0, 31.0, 14.0], vec![40.0, 37.0, 30.0], vec![49.0, 30.0, 26.0]];
/// let public = Correlation::new(None, Some(p.clone()))?;
/// let config = FilterConfig { correlation: &public, ..FilterConfig::new(100) };
/// let out = filter(&releases, &[0.5; 3], config)?;
/// assert_eq!(out.estimates.len(), 3);
/// assert!(out.estimates.iter().all(|x| (x.iter().sum::<f64>() - 100.0).abs() < 1e-9));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn filter<R: AsRef<[f64]>>(
    releases: &[R],
    budgets: &[f64],
    config: FilterConfig<'_>,
) -> Result<Estimates> {
    let (horizon, cells) = stream_shape(releases, budgets)?;
    let estimator = config.estimator;
    if horizon > 1 && estimator.uses_prior() && config.correlation.forward().is_none() {
        return Err(PostprocessError::MissingForward { estimator: estimator.name(), horizon });
    }
    // A malformed prior is refused whichever estimator runs; one given but not used is said.
    config.prior.check(cells)?;
    let state_space =
        matches!(estimator, Estimator::Smooth | Estimator::Kalman) && cells <= kalman::ONLINE_CELLS;
    let ignores_prior = state_space || matches!(estimator, Estimator::Kalman | Estimator::Mle);
    let unused = (config.prior != PriorPolicy::Frequency && ignores_prior)
        .then(|| Warning::PriorUnused { estimator: estimator.name().to_string() });
    match estimator {
        Estimator::Smooth if state_space => {
            let out = kalman::state_space_smooth(releases, budgets, &config, estimator, kalman::GUARDED)?;
            let std_errors = two_sided::of_stream(
                releases,
                budgets,
                config.sensitivity,
                &out.estimates,
                Some(&out.variances),
            );
            return Ok(Estimates {
                estimator,
                estimates: out.estimates,
                warnings: unused.into_iter().collect(),
                std_errors,
            });
        }
        Estimator::Smooth => return smooth::smooth(releases, budgets, config),
        Estimator::Kalman => {
            let mut out = kalman::kalman(releases, budgets, config)?;
            out.warnings.extend(unused);
            return Ok(out);
        }
        _ => {}
    }
    let mut stepper = Filter::new(cells, config)?;
    let mut estimates = Vec::with_capacity(horizon);
    let mut std_errors = Vec::with_capacity(horizon);
    let mut warnings: Vec<Warning> = unused.into_iter().collect();
    for (release, &epsilon) in releases.iter().zip(budgets) {
        let step = stepper.step(release.as_ref(), epsilon)?;
        std_errors.push(if step.std_error.is_empty() { vec![f64::INFINITY; cells] } else { step.std_error });
        estimates.push(step.estimate);
        warnings.extend(step.warnings);
    }
    Ok(Estimates { estimator, estimates, warnings, std_errors })
}

/// x moved one step by a share g of its people following `mover`: (1 − g)·x + g·Σx·(x/Σx)·P
/// (x itself without a matrix, or when Σx = 0).
fn motion(x: &[f64], g: f64, mover: Option<&Mover<'_>>) -> Vec<f64> {
    let sum: f64 = x.iter().sum();
    match mover {
        Some(m) if g > 0.0 && sum > 0.0 => {
            m.step(x).iter().zip(x).map(|(moved, &v)| (1.0 - g) * v + g * sum * moved).collect()
        }
        _ => x.to_vec(),
    }
}

/// Each cell's variance of the release-only estimate: the noise variance of `release` at
/// weight a ([`release_variance`]; `None` when a = 0).
fn noise_floor(release: &[f64], a: f64) -> Option<Vec<f64>> {
    release_variance(release, a).map(|v| vec![v; release.len()])
}

/// √ of each variance.
fn standard_errors(variances: Vec<f64>) -> Vec<f64> {
    variances.into_iter().map(f64::sqrt).collect()
}
