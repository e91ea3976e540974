//! # tpl-postprocess
//!
//! More accurate counts back out of a differentially private count stream, using the public
//! temporal correlation as prior knowledge: the MAP post-processing of X. Cao, Y. Cao,
//! Yoshikawa, Nakamura, *Differentially private streaming data release under temporal
//! correlations via post-processing* (DBSec 2023, "the DBSec paper"), made exact; the default
//! filter, a state-space (Kalman) filter with its parameters refitted to the releases seen so
//! far (beyond 64 cells the MAP filter with a prior whose strength is learned from the
//! releases); smoothing of a whole recorded stream; the classical Kalman baseline; and the
//! MLE baseline. The method, every choice the project makes where the
//! paper is silent, and the tests that certify the solvers are described in the
//! repository's [`docs/map.md`](tpl_core::guide::map) ("[docs/map.md](tpl_core::guide::map) §n"
//! below).
//!
//! "Estimate" here always means a **count estimate** x̂_t: an estimate of the true histogram
//! c_t of step t (n counts summing to N), never of the transition matrix.
//!
//! Model ([docs/map.md](tpl_core::guide::map) §1): N users move independently by a public
//! row-stochastic matrix P; each step publishes r_t = c_t + Laplace(Δ/ε_t) noise per cell.
//! Post-processing reads only public data, so it costs no privacy budget.
//!
//! ```
//! use tpl_core::{Correlation, TransitionMatrix};
//! use tpl_postprocess::{FilterConfig, filter, map_step};
//! // One step: release r, prior p, N = 10 users, weight a = ε/Δ.
//! let s = map_step(&[10.0, 0.0], &[0.5, 0.5], 10.0, 2f64.ln())?;
//! assert!((s.x[0] - 8.0).abs() < 1e-12);
//! // A stream: the prior follows the count estimates through P.
//! let p = TransitionMatrix::smoothed_identity(2, 0.01)?;
//! let public = Correlation::new(None, Some(p.clone()))?;
//! let config = FilterConfig { correlation: &public, ..FilterConfig::new(10) };
//! let out = filter(&[vec![7.0, 2.0], vec![9.0, -1.0]], &[1.0, 1.0], config)?;
//! assert!((out.estimates[1].iter().sum::<f64>() - 10.0).abs() < 1e-9);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Map of the crate (sections of [docs/map.md](tpl_core::guide::map) in brackets):
//! - [`map_step`] / [`MapStep`] — continuous MAP, exact breakpoint solver (§2–3);
//!   [`map_objective`] its objective F;
//! - [`map_integer_step`] — integer MAP, the N cheapest marginal units, ties to the lower
//!   cell (§4); [`map_integer_objective`] its objective G;
//! - [`mle_step`] — least-squares MLE baseline, a Euclidean projection (§6);
//! - [`PriorPolicy`], [`PriorUpdate`], [`Warning`] — the prior p_1 and its propagation (§5);
//! - [`Calibration`] — the prior of the default estimator `map` beyond 64 cells, learned
//!   from the releases (§8);
//! - [`pooled_map_step`] / [`WeightedPrior`] — the MAP step under several weighted priors,
//!   each step of whole-sequence smoothing `smooth` beyond 64 cells (§9);
//!   [`pooled_map_objective`] its objective H;
//! - [`Filter`] (stepper) and [`filter`] (whole stream), configured by one [`FilterConfig`];
//!   [`Estimator`], [`Estimates`] (§5, §11);
//! - [`kalman_smooth`] / [`KalmanFit`] — the classical baseline `kalman`: Kalman filter and
//!   RTS smoother, its move weight and process noise fitted by maximum likelihood (§14); the
//!   same model in its guarded family is `smooth` (§9) and, causally, `map` (§8), on up to
//!   64 cells;
//! - [`bootstrap_intervals`] — per-cell intervals of any estimator's output by a
//!   parametric bootstrap through the caller's mechanism; [`model_interval`] — the causal
//!   interval of a [`Filter`]'s estimate from its [`FilterStep::std_error`];
//! - [`PostprocessError`] — every input error, naming the step, cell and value.
//!
//! Feature `serde`: the result types ([`Estimates`], [`FilterStep`], [`MapStep`],
//! [`Warning`], [`Calibration`]) and the names they carry ([`Estimator`], [`PriorPolicy`], [`PriorUpdate`])
//! implement `serde::Serialize`.
//!
//! No randomness, no I/O, no printing: warnings are returned as values.

#![warn(missing_docs)]

mod calibrate;
mod config;
mod dense;
mod error;
mod estimates;
mod estimator;
mod filter;
mod guard;
mod interval;
mod kalman;
mod local_level;
mod map;
mod map_integer;
mod mle;
mod numeric;
mod prior;
mod propagate;
mod renormalise;
mod smooth;
mod two_sided;
mod validate;
mod widest;

pub use calibrate::Calibration;
pub use config::{FilterConfig, constant_budgets};
pub use error::{PostprocessError, Result};
pub use estimates::Estimates;
pub use estimator::Estimator;
pub use filter::{Filter, FilterState, FilterStep, filter};
pub use guard::Source;
pub use interval::{Bootstrap, Ends, EstimatorFn, ReleaseFn, bootstrap_intervals};
pub use kalman::{KalmanFit, KalmanSmoothed, kalman_causal, kalman_smooth};
pub use local_level::{model_interval, model_interval_of};
pub use map::{MapStep, map_objective, map_step};
pub use map_integer::{map_integer_objective, map_integer_step};
pub use mle::mle_step;
pub use prior::{PriorPolicy, PriorUpdate, Warning};
pub use smooth::{WeightedPrior, pooled_map_objective, pooled_map_step};

/// The most cells on which `map`, `smooth` and [`kalman_causal`] run the dense state-space model
/// of [docs/map.md](tpl_core::guide::map) §14 (n³ a step); wider streams use the calibrated MAP
/// filter of §8 and the pooled smoother of §9.
pub const STATE_SPACE_CELLS: usize = kalman::ONLINE_CELLS;

/// The cargo features this build of the crate was compiled with (of `serde`), for a
/// binary that reports how it was built (`tpl --version`, the `build` object of its JSON).
pub const FEATURES: &[&str] = &[
    #[cfg(feature = "serde")]
    "serde",
];
