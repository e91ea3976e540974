//! # tpl-compare
//!
//! Release strategies run side by side on one count stream and scored on both sides of the
//! trade-off: the error of their releases and the leakage an adversary who knows how people
//! move (a Markov chain) really gets — audited with the TKDE paper's series ("Quantifying
//! Differential Privacy in Continuous Data Release under Temporal Correlations", Cao,
//! Yoshikawa, Xiao, Xiong) from the budget every step really spent.
//!
//! - [`Strategy`] — the w-event schemes of `tpl-mechanisms` (laplace, uniform, sample, bd,
//!   ba, pba) and the TPL allocators of `tpl-alloc` (upper-bound, quantified, window).
//! - [`Setup`] and [`compare`] — R runs of every strategy in parallel (rayon), each with its
//!   own generator derived from the base [`Seed`], the strategy's name and the run, so a
//!   strategy's rows do not depend on what else is compared; optionally every strategy
//!   again after MAP post-processing (`tpl-postprocess`) and the data-free prior mean.
//! - [`Releaser`] and [`RunRelease`] — one strategy's runs drawn one at a time, the very
//!   releases [`compare`] scores, for callers that score them their own way (the accuracy
//!   grid of `benches/accuracy`).
//! - [`Comparison`], [`Row`], [`Scores`] — the results; with the `serde` feature they
//!   implement `serde::Serialize` (the JSON rows of `tpl compare`).
//! - [`simulate_users`] and [`histogram`] — synthetic populations of Markov users, the
//!   data model of the TKDE and DBSec experiments, where the truth is known.
//! - [`mae`], [`mse`], [`mre`] — error metrics of a release against the truth.
//! - [`bootstrap_estimates`] — per-cell intervals of post-processed estimates (the
//!   parametric bootstrap with Laplace replicates,
//!   [`docs/intervals.md`](tpl_core::guide::intervals) §2).
//! - [`Holdout`] — honest evaluation: the matrices estimated from one period of a user
//!   stream, the strategies scored on another ([`HeldOut`]).
//!
//! Two strategies on a small synthetic stream:
//!
//! ```
//! use tpl_compare::{Seed, Setup, Strategy, compare, histogram, simulate_users, USERS_STREAM};
//! use tpl_core::{Correlation, TransitionMatrix};
//!
//! // 200 people moving among 4 places for 50 steps; the adversary knows the chain.
//! let chain = TransitionMatrix::smoothed_identity(4, 0.05)?;
//! let seed = Seed::given(2018); // reproducible, hence not private: for experiments
//! let states = simulate_users(&chain, &[0.25; 4], 200, 50, &mut seed.rng(USERS_STREAM, 0))?;
//! let counts = histogram(&states, 4)?;
//!
//! let known = Correlation::new(Some(chain.clone()), Some(chain))?; // P_B and P_F
//! let setup = Setup::new(&counts, 1.0, 10)
//!     .correlation(&known)
//!     .runs(3)
//!     .seed(seed);
//! let strategies = [Strategy::parse("bd")?, Strategy::Window];
//! let result = compare(&setup, &strategies)?;
//!
//! let bd = result.rows[0].outcome.as_ref().expect("bd runs");
//! assert!(bd.max_window_budget <= 1.0); // w-event privacy: every window spends ≤ ε …
//! assert!(bd.max_window_leakage > 1.0); // … but correlation makes a window leak more.
//! let window = result.rows[1].outcome.as_ref().expect("the window allocator runs");
//! assert!(window.max_window_leakage <= 1.0 + 1e-9); // the allocator keeps α = ε under it
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod engine;
mod error;
mod holdout;
mod intervals;
mod metrics;
mod population;
mod report;
mod seed;
mod strategy;

pub use engine::{DEFAULT_RUNS, MAX_RUNS, Releaser, RunRelease, Setup, compare, guaranteed_leakage};
pub use error::{CompareError, DistributionFault, Result};
pub use holdout::{HeldOut, Holdout};
pub use intervals::{MAX_BOOTSTRAP_VALUES, bootstrap_estimates, check_bootstrap_size};
pub use metrics::{mae, mre, mse};
pub use population::{DISTRIBUTION_TOLERANCE, histogram, simulate_users};
pub use report::{Column, Comparison, Row, Scores, Stat};
pub use seed::{Seed, USERS_STREAM};
pub use strategy::{CompareRng, CustomStrategy, Strategy};

/// The cargo features this build of the crate was compiled with (of `serde`), for a
/// binary that reports how it was built (`tpl --version`, the `build` object of its JSON).
pub const FEATURES: &[&str] = &[
    #[cfg(feature = "serde")]
    "serde",
];
