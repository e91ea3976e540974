//! # tpl-core
//!
//! Exact, fast quantification of **temporal privacy leakage** (TPL): how much a sequence of
//! ε-differentially private releases really leaks about one person when an adversary knows
//! how that person's value moves over time as a Markov chain. Implements §3–5 and the
//! appendices of Cao, Yoshikawa, Xiao, Xiong, *Quantifying Differential Privacy in
//! Continuous Data Release under Temporal Correlations* (TKDE 2018), "the TKDE paper" below.
//!
//! No randomness, no I/O: a crate that only quantifies leakage depends on this one alone.
//!
//! ```
//! use tpl_core::{Correlation, LeakageSeries, Supremum, TransitionMatrix};
//! let p = TransitionMatrix::smoothed_identity(5, 0.1)?; // fairly strong correlation
//! let known = Correlation::new(Some(p.clone()), Some(p))?; // P_B and P_F
//! // Leakage of 10 releases at ε = 0.2 each.
//! let s = LeakageSeries::new(&known, &[0.2; 10])?;
//! assert!(s.max_tpl() > 0.2);
//! // Where it goes if releases never stop.
//! let sup = known.backward_supremum(0.2)?;
//! assert!(matches!(sup, Supremum::Bounded(v) if v > s.bpl()[9]));
//! # Ok::<(), tpl_core::CoreError>(())
//! ```
//!
//! Map of the crate:
//! - [`TransitionMatrix`] — validated row-stochastic matrices, Laplacian smoothing (eq. 28);
//! - [`Correlation`] — what the adversary knows: P_B and P_F, either optional, with their
//!   loss functions computed once (the one way every crate takes the pair);
//! - [`TransitionCounts`] — counts of observed moves between states, and the forward and
//!   backward matrices estimated from them ([`EstimatedMatrix`];
//!   [`docs/model.md`](crate::guide::model) §2), from a whole stream or from a range of its steps
//!   ([`StepRange`], [`Steps`]);
//! - [`LossEvaluator`] and its three implementations of L(α) (eq. 24): [`DirectLoss`]
//!   (Alg. 1), [`PairTableLoss`] (Alg. 2–3), [`PiecewiseLoss`] (Alg. 4–5), and [`Loss`], which
//!   picks one for a workload;
//! - [`LeakageSeries`] — BPL, FPL, TPL over a horizon (eqs. 11–15) and window leakage
//!   (Theorem 3); [`CompactSeries`] — the same values in half the memory, for long streamed
//!   horizons;
//! - [`check_epsilon`], [`check_alpha`], [`check_window`], [`check_sensitivity`],
//!   [`validate_budgets`] — the parameter checks every crate of the workspace shares;
//! - [`Supremum`] — the limit under constant ε (Theorem 11, Alg. 6);
//! - [`LeakageAccountant`] — the same, online, for an open-ended stream;
//! - [`PersonalizedLeakage`] — the worst case over users with different correlations;
//! - [`guide`] — the project's documents (the model, MAP, w-event schemes, streams, file
//!   formats, intervals, the CLI), which the docs of every `tpl-*` crate cite;
//! - `test_util` (feature `test-util`) — the proptest strategies the workspace's tests share.

#![warn(missing_docs)]

mod accountant;
mod candidate;
mod chains;
mod check;
mod correlation;
mod direct;
mod envelope;
mod error;
pub mod guide;
mod loss;
mod matrix;
mod par;
mod personalized;
mod row;
mod series;
mod steps;
mod structure;
mod support;
mod supremum;
#[cfg(any(test, feature = "test-util"))]
pub mod test_util;
mod transition_counts;
mod user_stream;
mod window;

pub use accountant::LeakageAccountant;
pub use candidate::Candidate;
pub use correlation::Correlation;
pub use error::{CoreError, Result};

// Helpers the workspace's crates share (parameter checks, short number formatting, a
// log-space sum): reachable, but not part of the documented API, and free to change.
#[doc(hidden)]
pub use candidate::log_add_exp;
#[doc(hidden)]
pub use check::{
    check_alpha, check_epsilon, check_horizon, check_sensitivity, check_window, is_budget, validate_budgets,
};
#[doc(hidden)]
pub use error::Short;
pub use loss::{DirectLoss, Loss, LossEvaluator, PairTableLoss, PiecewiseLoss, Segment};
pub use matrix::{ROW_SUM_TOLERANCE, TransitionMatrix};
pub use personalized::PersonalizedLeakage;
pub use row::{Row, RowIter};
pub use series::{Budgets, CompactSeries, LeakageSeries};
pub use steps::{StepRange, Steps};
pub use supremum::{Supremum, supremum};
pub use transition_counts::{EstimatedMatrix, TransitionCounts};
pub use user_stream::UserStream;

/// The cargo features this build of the crate was compiled with (of `parallel`, `serde`, `test-util`), for a
/// binary that reports how it was built (`tpl --version`, the `build` object of its JSON).
pub const FEATURES: &[&str] = &[
    #[cfg(feature = "parallel")]
    "parallel",
    #[cfg(feature = "serde")]
    "serde",
    #[cfg(feature = "test-util")]
    "test-util",
];
