//! The error type of `tpl-mechanisms`.

use thiserror::Error;

/// What can go wrong when building or running a mechanism or stream scheme.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum MechError {
    /// A privacy budget that is not finite and positive.
    #[error("epsilon {0} must be finite and greater than 0")]
    BadEpsilon(f64),
    /// A window of 0 steps.
    #[error("window {0} must be at least 1")]
    BadWindow(usize),
    /// A budget so small that one step's share ε/(2w) is below the smallest positive f64.
    #[error("epsilon {epsilon} is too small to give each of the {window} steps of a window a positive share")]
    ShareUnderflow {
        /// ε.
        epsilon: f64,
        /// w.
        window: usize,
    },
    /// A sensitivity that is not finite and positive.
    #[error("sensitivity {0} must be finite and greater than 0")]
    BadSensitivity(f64),
    /// A noise scale that is not finite and positive.
    #[error("noise scale {0} must be finite and greater than 0")]
    BadScale(f64),
    /// A count vector whose length differs from the first step's.
    #[error("step {step} has {got} cells, but the stream started with {expected}")]
    WrongLength {
        /// 1-based step.
        step: usize,
        /// Cells of the first step.
        expected: usize,
        /// Cells at this step.
        got: usize,
    },
    /// A count vector with no cells.
    #[error("step {step} has no cells")]
    NoCells {
        /// 1-based step.
        step: usize,
    },
    /// A count that is NaN or infinite.
    #[error("step {step}, cell {cell}: count {value} is not finite")]
    NonFinite {
        /// 1-based step.
        step: usize,
        /// 0-based cell.
        cell: usize,
        /// The value.
        value: f64,
    },
    /// The release-grade sampler needs integer-valued queries (counts).
    #[error(
        "value {value} is not an integer: the release-grade sampler adds exact integer noise and needs \
         integer counts (use the float sampler for non-integer data; it is not release-grade)"
    )]
    NotInteger {
        /// The value.
        value: f64,
    },
    /// An initial distribution of a simulation that is not a probability vector.
    #[error("initial distribution is not a probability vector: {0}")]
    BadDistribution(String),
    /// A simulation with no users or no steps.
    #[error("a simulation needs at least one user and one step (got {users} users, {horizon} steps)")]
    EmptyPopulation {
        /// Users asked for.
        users: usize,
        /// Steps asked for.
        horizon: usize,
    },
    /// A scripted noise source ran out of values.
    #[error("scripted noise source is exhausted")]
    ScriptExhausted,
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, MechError>;
