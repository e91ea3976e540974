//! The one error type of the crate: bad inputs of a comparison, a simulation or a metric,
//! and the failures of the other `tpl` crates with what the comparison was doing when they
//! happened.

use thiserror::Error;
use tpl_alloc::AllocError;
use tpl_mechanisms::MechError;
use tpl_postprocess::PostprocessError;

use crate::Strategy;

/// What can go wrong when running, simulating or scoring.
///
/// A comparison reports the errors of one strategy in its [`Row`](crate::Row) (the other
/// strategies still run); [`compare`](crate::compare) itself fails only on an invalid
/// [`Setup`](crate::Setup).
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum CompareError {
    /// A strategy name that is none of [`Strategy::names`].
    #[error("unknown strategy {name:?}; one of: {}", Strategy::names().join(", "))]
    UnknownStrategy {
        /// The name given.
        name: String,
    },
    /// A suite name that is none of [`Strategy::suite`]'s.
    #[error("unknown suite {name:?}; one of: standard, default")]
    UnknownSuite {
        /// The name given.
        name: String,
    },
    /// A parameter of the comparison outside its domain; `name` is the parameter's name
    /// (`epsilon`, `window`, `alpha`, `sensitivity`, `runs`), `reason` what it must be.
    #[error("{name} {value}: {reason}")]
    InvalidParameter {
        /// The parameter.
        name: &'static str,
        /// Its value, as given.
        value: String,
        /// What it must be.
        reason: String,
    },
    /// A stream (or a release, or a simulation) of zero steps or zero cells.
    #[error("the stream is empty: {steps} steps of {cells} cells")]
    EmptyStream {
        /// Steps T.
        steps: usize,
        /// Cells n of the first step (0 without steps).
        cells: usize,
    },
    /// Steps of a stream with different numbers of cells.
    #[error("step {step} has {found} cells but step 1 has {expected}")]
    RaggedStream {
        /// The 1-based step.
        step: usize,
        /// Its number of cells.
        found: usize,
        /// The number of cells of step 1.
        expected: usize,
    },
    /// A correlation matrix whose size is not the stream's number of cells.
    #[error("the {side} matrix is {n}×{n} but the stream has {cells} cells")]
    MatrixSize {
        /// `backward` or `forward`.
        side: &'static str,
        /// Its number of states.
        n: usize,
        /// The stream's number of cells.
        cells: usize,
    },
    /// A release and the truth it is scored against differ in their number of steps.
    #[error("the release has {releases} steps but the truth has {truth}")]
    StepsMismatch {
        /// Steps of the release.
        releases: usize,
        /// Steps of the truth.
        truth: usize,
    },
    /// A step of a release and of the truth differ in their number of cells.
    #[error("step {step}: the release has {releases} cells but the truth has {truth}")]
    CellsMismatch {
        /// The 1-based step.
        step: usize,
        /// Cells of the release at that step.
        releases: usize,
        /// Cells of the truth at that step.
        truth: usize,
    },
    /// An initial distribution of a simulation that is not a probability vector over the
    /// states.
    #[error("initial distribution: {0}")]
    BadDistribution(DistributionFault),
    /// A simulation of no users or no steps.
    #[error("a population needs at least one user and one step: {users} users over {horizon} steps")]
    EmptyPopulation {
        /// Users asked for.
        users: usize,
        /// Steps asked for.
        horizon: usize,
    },
    /// A state of a user stream outside 0..n.
    #[error("step {step}: state {state} is outside the {states} states")]
    StateOutOfRange {
        /// The 1-based step.
        step: usize,
        /// The state found.
        state: usize,
        /// The number of states n.
        states: usize,
    },
    /// A TPL allocator cannot allocate for this correlation, target and horizon.
    #[error("allocating the budgets: {0}")]
    Allocation(#[source] AllocError),
    /// The leakage audit of the budgets a run spent failed.
    #[error("auditing the leakage: {0}")]
    Audit(#[source] AllocError),
    /// A budget a run spent whose loss 2·ε_t/Δ overflows at the run's sensitivity
    /// ([`tpl_mechanisms::checked_effective_budget`]).
    #[error("auditing the leakage: {0}")]
    AuditLoss(#[source] MechError),
    /// The mechanism or the stream scheme refused a step.
    #[error("releasing: {0}")]
    Release(#[source] MechError),
    /// MAP post-processing of a run's releases failed.
    #[error("MAP post-processing: {0}")]
    Postprocess(#[source] PostprocessError),
    /// PBA without any correlation matrix: its correlation pool depends on them.
    #[error("pba needs a backward and/or a forward matrix: its correlation pool depends on them")]
    PbaNeedsCorrelation,
    /// A range of steps that does not fit the stream, or a training range whose other
    /// steps are not one range to score ([`Holdout`](crate::Holdout)).
    #[error("{0}")]
    Steps(#[source] tpl_core::CoreError),
    /// Training and scored steps that overlap, without the overlap allowed.
    #[error(
        "the matrices' steps {train} and the scored steps {score} share steps {}: matrices estimated from the \
         scored data flatter every estimator that uses them, so an overlap must be allowed explicitly",
        .train.overlap(.score).map_or_else(String::new, |s| s.to_string())
    )]
    InSample {
        /// The steps the matrices are estimated from.
        train: tpl_core::Steps,
        /// The steps scored.
        score: tpl_core::Steps,
    },
    /// Estimating the matrices from the training steps failed (a state out of range, a
    /// ragged stream, a bad smoothing).
    #[error("estimating the matrices: {0}")]
    Estimate(#[source] tpl_core::CoreError),
    /// MAP post-processing without a forward matrix (its prior moves by it).
    #[error("MAP post-processing needs the forward matrix (its prior moves by it)")]
    MapNeedsForward,
    /// MAP post-processing of a stream whose steps do not all count the same population.
    #[error("MAP post-processing needs a fixed population: the count rows do not all have the same sum")]
    MapNeedsFixedPopulation,
}

/// Why an initial distribution is not a probability vector (see
/// [`CompareError::BadDistribution`]).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum DistributionFault {
    /// It has `len` entries for `states` states.
    Length {
        /// Entries given.
        len: usize,
        /// States n.
        states: usize,
    },
    /// Entry `index` (1-based) is negative, NaN or infinite.
    Entry {
        /// The 1-based entry.
        index: usize,
        /// Its value.
        value: f64,
    },
    /// The entries sum to `sum`, not 1 within [`crate::DISTRIBUTION_TOLERANCE`].
    Sum(f64),
}

impl std::fmt::Display for DistributionFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Length { len, states } => write!(f, "{len} entries for {states} states"),
            Self::Entry { index, value } => write!(f, "entry {index} is {value}"),
            Self::Sum(sum) => {
                write!(f, "entries sum to {sum}, not 1 (tolerance {:e})", crate::DISTRIBUTION_TOLERANCE)
            }
        }
    }
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, CompareError>;
