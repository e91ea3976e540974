//! # tpl-mechanisms
//!
//! Differentially private mechanisms and the w-event stream schemes that decide, step by
//! step, whether to publish fresh noisy counts or repeat the last release, and with which
//! budget: `laplace` (event level), `uniform`, `sample`, `bd`, `ba` (Kellaris et al. 2014)
//! and `pba` (Hemkumar et al. 2021), exactly as [`docs/w-event.md`](tpl_core::guide::w_event)
//! states them, and `planned` (a budget sequence fixed in advance). Every scheme reports the budget
//! it actually spent, split into its parts, so that `tpl-core` can audit the release's true leakage
//! under temporal correlation; and it states what holds for every run — its [`PrivacyGuarantee`]
//! and the most any step can spend — so that an auditor can bound the leakage of every possible
//! run.
//!
//! - [`Mechanism`] — the plugin point (one release of an answer under a budget, with its
//!   privacy map); [`LaplaceMechanism`] is the built-in one.
//! - [`effective_budget`] — what a release calibrated to sensitivity Δ spends against one
//!   person's change (ε_t·2/Δ): the per-step budget every leakage audit starts from;
//!   [`checked_effective_budget`] refuses one that overflows.
//! - [`MAX_EXACT_COUNT`] (2^52) and [`MAX_EXACT_SCALE`] (2^46) — the limits within which an
//!   integer release is exact; beyond them it is refused, never rounded.
//! - [`NoiseSource`] — where noise comes from: [`DiscreteLaplace`] (exact, release-grade),
//!   `FloatLaplace` (fast, not release-grade: feature `float-not-release-grade`), and test
//!   doubles (feature `test-util`).
//!   Neither sampler is `Clone` (a copy would repeat the noise); `from_os_rng()` is the
//!   release constructor, `seeded(u64)` the reproducible one (ChaCha12, for experiments).
//! - [`StreamScheme`] — one step in, one release out; [`Scheme`] implements it once around a
//!   [`DecisionRule`] per scheme (the built-in rules are in [`schemes`]), and enforces what
//!   the rule promises before every draw; [`run`] drives a whole stream and [`WindowLedger`]
//!   checks invariant (W) independently.
//! - A scheme of your own is one more [`DecisionRule`], written with [`Step`], [`BudgetGrid`],
//!   [`RecentSpend`] and [`worth_publishing`], and checked with `test_util::check_scheme`
//!   (feature `test-util`), the conformance check the built-in schemes pass
//!   ([`docs/w-event.md`](tpl_core::guide::w_event) §2.6).
//!
//! ```
//! use tpl_mechanisms::{Bd, DiscreteLaplace, PrivacyGuarantee, LaplaceMechanism, StreamScheme, WEventParams, run};
//! let params = WEventParams::new(1.0, 10, 2.0)?;
//! let mut bd = Bd::new(params, LaplaceMechanism::new(DiscreteLaplace::from_os_rng()));
//! assert_eq!(bd.guarantee(), PrivacyGuarantee::WEvent { epsilon: 1.0, window: 10 });
//! let stream: Vec<Vec<f64>> = (0..100).map(|t| vec![100.0 + t as f64, 50.0]).collect();
//! let r = run(&mut bd, &stream)?;
//! assert!(r.max_window_budget <= 1.0); // every window, exactly
//! assert!(r.published[0]);
//! assert!(r.budgets().iter().all(|&e| e <= bd.max_step_budget()));
//! # Ok::<(), tpl_mechanisms::MechError>(())
//! ```

#![warn(missing_docs)]

mod budget;
mod error;
mod ledger;
mod mechanism;
mod noise;
mod params;
mod plugin;
mod runner;
mod scheme;
pub mod schemes;
mod spending;
#[cfg(any(test, feature = "test-util"))]
pub mod test_util;

pub use budget::BudgetGrid;
pub use error::{CustomError, MechError, Result};
pub use ledger::WindowLedger;
pub use mechanism::{
    LaplaceMechanism, MAX_EXACT_COUNT, MAX_EXACT_SCALE, Mechanism, budget_for_effective, check_privacy_map,
    checked_effective_budget, effective_budget, laplace_scale,
};
pub use noise::{DiscreteLaplace, NoiseSource, ReleaseRng, SamplerKind, StreamRng};
#[cfg(feature = "float-not-release-grade")]
pub use noise::{FloatLaplace, laplace_inverse_cdf};
#[cfg(any(test, feature = "test-util"))]
pub use noise::{Recording, Scripted, Zero};
pub use params::{DEFAULT_SENSITIVITY, Epsilon, WEventParams};
pub use plugin::{
    BuildMechanism, BuildScheme, Laplace, MechanismBuilder, Named, NamedMechanism, NamedScheme,
    SchemeBuilder, SchemeRegistry, mechanism_builder, scheme_builder,
};
/// The `rand` this crate is built with: its `RngCore` is what [`StreamRng`] and the samplers'
/// generators implement, so a mechanism of your own names it from here, at the right version.
pub use rand;
pub use runner::{Intervals, Run, run};
pub use scheme::{
    DecisionRule, FromParams, PrivacyGuarantee, RecentSpend, Scheme, Step, StepBudget, StepOutcome,
    StreamScheme, over_regimes,
};
/// The built-in schemes; their decision rules (`BdRule`, …) are in [`schemes`].
pub use schemes::{
    Ba, Bd, Dsat, DsatConfig, EventLaplace, Fast, FastConfig, Pba, PbaPool, Planned, Sample, SchemeInputs,
    SchemeKind, Uniform, worth_publishing,
};
pub use spending::{EffectiveSpending, effective_spending};
/// The error of `tpl-core` inside [`MechError::Core`], for matching on it.
pub use tpl_core::CoreError;

/// The cargo features this build of the crate was compiled with (of `parallel`, `float-not-release-grade`, `serde`, `test-util`), for a
/// binary that reports how it was built (`tpl --version`, the `build` object of its JSON).
pub const FEATURES: &[&str] = &[
    #[cfg(feature = "parallel")]
    "parallel",
    #[cfg(feature = "float-not-release-grade")]
    "float-not-release-grade",
    #[cfg(feature = "serde")]
    "serde",
    #[cfg(feature = "test-util")]
    "test-util",
];
