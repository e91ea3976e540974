//! # tpl-postprocess
//!
//! More accurate counts back out of a differentially private count stream, using the public
//! temporal correlation as prior knowledge: the MAP post-processing of X. Cao, Y. Cao,
//! Yoshikawa, Nakamura, *Differentially private streaming data release under temporal
//! correlations via post-processing* (DBSec 2023, "the DBSec paper"), made exact, plus the
//! MLE baseline it is compared with. Normative: the project's spec
//! `map-postprocessing.md` ("spec §n" below); choices it makes where the sources are silent
//! are marked \[D\] there and here.
//!
//! Model (spec §1): N users move independently by a public row-stochastic matrix P; each
//! step publishes r_t = c_t + Laplace(Δ/ε_t) noise per cell. Post-processing reads only public
//! data, so it costs no privacy budget.
//!
//! ```
//! use tpl_core::TransitionMatrix;
//! use tpl_postprocess::{Estimator, PriorPolicy, PriorUpdate, filter, map_step};
//! // One step: release r, prior p, N = 10 users, weight a = ε/Δ.
//! let s = map_step(&[10.0, 0.0], &[0.5, 0.5], 10.0, 2f64.ln())?;
//! assert!((s.x[0] - 8.0).abs() < 1e-12);
//! // A stream: the prior follows the estimates through P.
//! let p = TransitionMatrix::smoothed_identity(2, 0.01)?;
//! let out = filter(&[vec![7.0, 2.0], vec![9.0, -1.0]], &[1.0, 1.0], 2.0, 10,
//!                  &PriorPolicy::Frequency, Some(&p), Estimator::Map, PriorUpdate::ClosedLoop)?;
//! assert!((out.estimates[1].iter().sum::<f64>() - 10.0).abs() < 1e-9);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Map of the crate:
//! - [`map_step`] / [`MapStep`] — continuous MAP, exact O(n log n) breakpoint solver (§2–3);
//!   [`map_objective`] its objective F;
//! - [`map_integer_step`] — integer MAP, the N cheapest marginal units with the spec's tie
//!   rule (§4); [`map_integer_objective`] its objective G;
//! - [`mle_step`] — least-squares MLE baseline, a Euclidean projection (§6);
//! - [`PriorPolicy`], [`PriorUpdate`], [`Warning`] — the prior p_1 and its propagation (§5);
//! - [`Filter`] (stepper) and [`filter`] (whole stream), [`Estimator`], [`Estimates`] (§5, §9);
//! - [`PostprocessError`] — every input error, naming the step, cell and value.
//!
//! No randomness, no I/O, no printing: warnings are returned as values.

#![warn(missing_docs)]

mod error;
mod filter;
mod map;
mod map_integer;
mod mle;
mod numeric;
mod prior;
mod validate;

pub use error::{PostprocessError, Result};
pub use filter::{Estimates, Estimator, Filter, FilterConfig, FilterStep, constant_budgets, filter};
pub use map::{MapStep, map_objective, map_step};
pub use map_integer::{map_integer_objective, map_integer_step};
pub use mle::mle_step;
pub use prior::{PriorPolicy, PriorUpdate, Warning};
