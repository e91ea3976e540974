//! # tpl-mechanisms
//!
//! Differentially private mechanisms and the w-event stream schemes that decide, step by
//! step, whether to publish fresh noisy counts or repeat the last release, and with which
//! budget: `laplace` (event level), `uniform`, `sample`, `bd`, `ba` (Kellaris et al. 2014)
//! and `pba` (Hemkumar et al. 2021), exactly as `specs/w-event.md` states them. Every scheme
//! reports the budget it actually spent, split into its parts, so that `tpl-core` can audit
//! the release's true leakage under temporal correlation.
//!
//! - [`Mechanism`] — the plugin point (one release of an answer under a budget);
//!   [`LaplaceMechanism`] is the built-in one.
//! - [`effective_budget`] — what a release calibrated to sensitivity Δ spends against one
//!   person's change (ε_t·2/Δ): the per-step budget every leakage audit starts from.
//! - [`MAX_EXACT_COUNT`] (2^52) and [`MAX_EXACT_SCALE`] (2^46) — the limits within which an
//!   integer release is exact; beyond them it is refused, never rounded.
//! - [`NoiseSource`] — where noise comes from: [`DiscreteLaplace`] (exact, release-grade),
//!   [`FloatLaplace`] (fast, not release-grade), and test doubles.
//! - [`StreamScheme`] — one step in, one release out; [`run`] drives a whole stream and
//!   [`WindowLedger`] checks invariant (W) independently.
//!
//! ```
//! use rand::SeedableRng;
//! use tpl_mechanisms::{Bd, DiscreteLaplace, LaplaceMechanism, WEventParams, run};
//! let params = WEventParams::new(1.0, 10, 2.0)?;
//! let noise = DiscreteLaplace::new(rand::rngs::StdRng::seed_from_u64(1));
//! let mut bd = Bd::new(params, LaplaceMechanism::new(noise));
//! let stream: Vec<Vec<f64>> = (0..100).map(|t| vec![100.0 + t as f64, 50.0]).collect();
//! let r = run(&mut bd, &stream, |_| {})?;
//! assert!(r.max_window_budget <= 1.0); // every window, exactly
//! assert!(r.published[0]);
//! # Ok::<(), tpl_mechanisms::MechError>(())
//! ```

#![warn(missing_docs)]

mod budget;
mod error;
mod ledger;
mod mechanism;
mod noise;
mod params;
mod runner;
mod scheme;
mod schemes;

pub use error::{MechError, Result};
pub use ledger::WindowLedger;
pub use mechanism::{
    LaplaceMechanism, MAX_EXACT_COUNT, MAX_EXACT_SCALE, Mechanism, budget_for_effective, effective_budget,
};
pub use noise::{DiscreteLaplace, FloatLaplace, NoiseSource, Recording, Scripted, Zero};
pub use params::{DEFAULT_SENSITIVITY, Epsilon, WEventParams};
pub use runner::{Run, run};
pub use scheme::{StepBudget, StepOutcome, StreamScheme};
pub use schemes::{Ba, Bd, EventLaplace, Pba, PbaCorrelation, Sample, SchemeKind, Uniform};
