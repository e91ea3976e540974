//! The error type of `tpl-postprocess` ([docs/map.md](tpl_core::guide::map) §11, "Errors").

use thiserror::Error;
use tpl_core::CoreError;

/// Everything that can be wrong with the input of a post-processing call.
///
/// Cells and steps are **1-based** in every variant and message (cell 1 is the first entry
/// of a release; step 1 is the first release), like the rows and columns of `tpl-core`'s
/// errors. The per-step functions ([`crate::map_step`], [`crate::map_integer_step`],
/// [`crate::mle_step`]) do not know which step they serve; the stream driver
/// ([`crate::filter`], [`crate::Filter::step`]) wraps their errors in
/// [`PostprocessError::AtStep`], so a message reads "step 3: release value in cell 2 is NaN…".
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum PostprocessError {
    /// A [`crate::FilterState`] resumed with a history that is not the one it was made from:
    /// another number of releases or budgets than its steps, other cells, or another estimator.
    #[error(
        "a filter state of {steps} steps cannot resume on {releases} releases and {budgets} budgets of this filter"
    )]
    BadState {
        /// The state's steps.
        steps: usize,
        /// The releases given.
        releases: usize,
        /// The budgets given.
        budgets: usize,
    },
    /// A release (or a call) with zero cells: n = 0.
    #[error("no cells: a release needs at least one value (n ≥ 1)")]
    NoCells,
    /// A stream with zero releases: T = 0.
    #[error("no releases: at least one step is needed (T ≥ 1)")]
    NoSteps,
    /// A release value that is NaN or infinite.
    #[error("release value in cell {cell} is {}: releases must be finite", tpl_core::Short(*.value))]
    BadRelease {
        /// 1-based cell index.
        cell: usize,
        /// The offending value.
        value: f64,
    },
    /// A release whose length differs from the number of cells of the stream.
    #[error("release has {len} cells, expected {expected}")]
    ReleaseLength {
        /// Cells found.
        len: usize,
        /// Cells of the stream (of its first release, or of the filter).
        expected: usize,
    },
    /// A prior vector whose length differs from the number of cells.
    #[error("prior has {len} entries, expected {expected} (one per cell)")]
    PriorLength {
        /// Entries found.
        len: usize,
        /// Number of cells.
        expected: usize,
    },
    /// A prior entry that is negative, NaN or infinite.
    #[error("prior entry for cell {cell} is {}: entries must be finite and non-negative", tpl_core::Short(*.value))]
    BadPriorEntry {
        /// 1-based cell index.
        cell: usize,
        /// The offending value.
        value: f64,
    },
    /// A prior whose entries do not sum to 1 within 1e-9.
    #[error("prior entries sum to {}, not 1 (tolerance 1e-9)", tpl_core::Short(*.sum))]
    PriorSum {
        /// The sum found.
        sum: f64,
    },
    /// A likelihood weight a = ε_t/Δ that is negative, NaN or infinite.
    #[error("likelihood weight a = {} must be finite and ≥ 0", tpl_core::Short(*.0))]
    BadWeight(f64),
    /// A population N (real-valued, for `map` and `mle`) that is negative, NaN or infinite.
    #[error("population N = {} must be finite and ≥ 0", tpl_core::Short(*.0))]
    BadTotal(f64),
    /// A population N above 2^53, where counts stop being exact in f64.
    #[error("population N = {0} exceeds 2^53 = 9007199254740992, the largest count exact in f64")]
    TotalTooLarge(u64),
    /// A per-step budget ε_t that is negative, NaN or infinite (ε_t = 0 is allowed).
    #[error("budget ε = {} must be finite and ≥ 0", tpl_core::Short(*.0))]
    BadBudget(f64),
    /// A budget sequence whose length differs from the number of releases.
    #[error("{len} budgets for {expected} releases: one budget per step is needed")]
    BudgetCount {
        /// Budgets given.
        len: usize,
        /// Releases (T).
        expected: usize,
    },
    /// A constant budget ε, a sensitivity Δ or a horizon refused by `tpl-core`'s checks
    /// ([`tpl_core::check_epsilon`], [`tpl_core::check_sensitivity`],
    /// [`tpl_core::check_horizon`]); the message names the value.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// A weight ε_t/Δ that overflows (a huge budget over a tiny sensitivity).
    #[error("budget ε = {} over sensitivity Δ = {} gives a weight that is not finite", tpl_core::Short(*.epsilon), tpl_core::Short(*.sensitivity))]
    WeightOverflow {
        /// The budget ε_t.
        epsilon: f64,
        /// The sensitivity Δ.
        sensitivity: f64,
    },
    /// A transition matrix whose size differs from the number of cells.
    #[error("transition matrix is {size}×{size} but the releases have {cells} cells")]
    MatrixSize {
        /// The matrix's n.
        size: usize,
        /// Cells of the releases.
        cells: usize,
    },
    /// A map estimator over more than one step without a forward matrix.
    #[error(
        "estimator {estimator} needs a forward transition matrix to propagate its prior when there is more than one step (T = {horizon})"
    )]
    MissingForward {
        /// The estimator's name.
        estimator: &'static str,
        /// The number of steps.
        horizon: usize,
    },
    /// A vector (estimate) whose length differs from the release it is scored against.
    #[error("estimate has {len} cells, expected {expected}")]
    EstimateLength {
        /// Entries found.
        len: usize,
        /// Number of cells.
        expected: usize,
    },
    /// An estimate entry that is negative, NaN or infinite (objective evaluation).
    #[error("estimate value in cell {cell} is {}: estimates must be finite and non-negative", tpl_core::Short(*.value))]
    BadEstimate {
        /// 1-based cell index.
        cell: usize,
        /// The offending value.
        value: f64,
    },
    /// An estimator name other than `map`, `smooth`, `kalman`, `map-dbsec`, `map-integer` or
    /// `mle`.
    #[error("unknown estimator {0:?}: expected map, smooth, kalman, map-dbsec, map-integer or mle")]
    UnknownEstimator(String),
    /// A bootstrap setting that cannot give an interval (a level outside (0, 1), fewer than
    /// two replicates), or a replicate the release or the estimator refused.
    #[error("bootstrap: {0}")]
    Bootstrap(String),
    /// Standard errors or a level that cannot give an interval ([`crate::model_interval`]):
    /// a level outside (0, 1), a standard error that is missing, negative or not a number.
    #[error("interval: {0}")]
    Interval(String),
    /// Priors of positive strength whose product is 0 in every cell ([`crate::pooled_map_step`]).
    #[error("the priors share no cell: their product is 0 everywhere")]
    NoPooledPrior,
    /// A [`crate::Filter`] (one release at a time) asked for an estimator that needs the
    /// releases after each step too.
    #[error(
        "estimator {estimator} uses every release of a stream, future ones too: it needs the whole recorded stream, not one release at a time"
    )]
    NotAFilter {
        /// The estimator's name.
        estimator: &'static str,
    },
    /// A stream too large for the Kalman smoother, which stores an n×n covariance per step
    /// while the covariance changes ([docs/map.md](tpl_core::guide::map) §14).
    #[error(
        "the kalman smoother would store more than {limit} values for {steps} steps of {cells} cells (n² per step while its covariance changes): use smooth or map for streams this large"
    )]
    TooLarge {
        /// Cells n.
        cells: usize,
        /// Steps T.
        steps: usize,
        /// The most values it stores.
        limit: usize,
    },
    /// A stream wider than a dense state-space estimator serves (O(n³) a step).
    #[error("{estimator} runs on at most {limit} cells (every step is dense, n³); this stream has {cells}")]
    TooManyCells {
        /// The estimator's name.
        estimator: &'static str,
        /// Cells n of the stream.
        cells: usize,
        /// The most it serves.
        limit: usize,
    },
    /// A covariance of the Kalman filter that rounding left without a Cholesky factor (a
    /// model whose noise is many orders of magnitude below the counts).
    #[error(
        "the kalman filter's covariance is not positive definite: the releases' noise is too small against the counts for it"
    )]
    NotPositiveDefinite,
    /// An error at one step of a stream.
    #[error("step {step}: {source}")]
    AtStep {
        /// 1-based step.
        step: usize,
        /// What went wrong there.
        source: Box<PostprocessError>,
    },
}

impl PostprocessError {
    /// Wraps `self` as having happened at 1-based `step`.
    pub(crate) fn at_step(self, step: usize) -> Self {
        Self::AtStep { step, source: Box::new(self) }
    }
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, PostprocessError>;
