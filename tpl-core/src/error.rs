//! The error type of `tpl-core`.

use thiserror::Error;

/// Everything that can go wrong in `tpl-core`: invalid matrices, budgets and parameters (the
/// parameter checks of [`crate::check_epsilon`] and its siblings, shared by every crate).
///
/// Every variant names the offending row, column, step or value, so that a caller (the CLI)
/// can turn it into a one-line message without adding context of its own.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum CoreError {
    /// A transition matrix with no rows.
    #[error("transition matrix is empty")]
    EmptyMatrix,
    /// Row `row` has `len` entries but the matrix has `expected` rows (it must be square).
    #[error("transition matrix is not square: row {row} has {len} entries, expected {expected}")]
    NotSquare {
        /// 1-based row index.
        row: usize,
        /// Entries found in that row.
        len: usize,
        /// Number of rows of the matrix.
        expected: usize,
    },
    /// An entry that is NaN, infinite or negative.
    #[error(
        "transition matrix entry at row {row}, column {col} is {}: entries must be finite and non-negative", Short(*.value)
    )]
    BadEntry {
        /// 1-based row index.
        row: usize,
        /// 1-based column index.
        col: usize,
        /// The offending value.
        value: f64,
    },
    /// A sparse matrix entry whose row or column is not below the number of states n.
    #[error(
        "transition matrix entry from state {from} to state {to} is outside a matrix of {n} states (ids are 0-based)"
    )]
    EntryOutside {
        /// 0-based row (the state moved from).
        from: usize,
        /// 0-based column (the state moved to).
        to: usize,
        /// Number of states.
        n: usize,
    },
    /// A candidate of a stored piecewise loss that is not finite with d ≥ 0 and δ > 0 (or any
    /// candidate of the identity loss, which has none).
    #[error(
        "stored loss candidate {index} (d = {d}, delta = {delta}) is not a candidate: d must be finite and ≥ 0, delta finite and > 0"
    )]
    BadCandidate {
        /// 1-based position.
        index: usize,
        /// Its d.
        d: f64,
        /// Its δ.
        delta: f64,
    },
    /// A sparse matrix entry given twice.
    #[error("transition matrix entry from state {from} to state {to} is given twice")]
    RepeatedEntry {
        /// 0-based row.
        from: usize,
        /// 0-based column.
        to: usize,
    },
    /// A row whose entries do not sum to 1 within [`crate::ROW_SUM_TOLERANCE`].
    #[error(
        "transition matrix row {row} sums to {}, not 1 (tolerance 1e-9; normalize explicitly to rescale rows)", Short(*.sum)
    )]
    RowSum {
        /// 1-based row index.
        row: usize,
        /// The row's sum.
        sum: f64,
    },
    /// A row that cannot be normalized because it sums to zero.
    #[error("transition matrix row {row} sums to 0 and cannot be normalized")]
    ZeroRow {
        /// 1-based row index.
        row: usize,
    },
    /// A Laplacian smoothing parameter that is negative or not finite.
    #[error("smoothing parameter {} must be finite and non-negative", Short(*.0))]
    BadSmoothing(f64),
    /// A privacy budget ε_t that is negative or not finite (ε_t = 0 is allowed).
    #[error("budget at step {step} is {}: budgets must be finite and non-negative", Short(*.value))]
    BadBudget {
        /// 1-based time step.
        step: usize,
        /// The offending value.
        value: f64,
    },
    /// A constant budget ε that must be strictly positive and finite.
    #[error("epsilon {} must be finite and greater than 0", Short(*.0))]
    BadEpsilon(f64),
    /// An empty budget sequence (horizon 0).
    #[error("the horizon is 0: at least one step is needed")]
    EmptyHorizon,
    /// A target leakage α that is not finite and > 0.
    #[error("alpha {} must be finite and greater than 0", Short(*.0))]
    BadAlpha(f64),
    /// An argument of L(α) that is negative or not finite.
    #[error("the loss function's argument alpha {} must be a finite number ≥ 0", Short(*.0))]
    BadLossArgument(f64),
    /// A sensitivity Δ that is not finite and > 0.
    #[error("sensitivity {} must be finite and greater than 0", Short(*.0))]
    BadSensitivity(f64),
    /// A window length of 0 or longer than the horizon.
    #[error("window {window} must be between 1 and the horizon {horizon}")]
    BadWindow {
        /// The requested window length.
        window: usize,
        /// The horizon T.
        horizon: usize,
    },
    /// A leakage value that exceeds the largest double (budgets near 1e308).
    #[error("the leakage at step {step} exceeds the largest representable number: the budgets are too large")]
    Overflow {
        /// 1-based step (or window start) where it happens.
        step: usize,
    },
    /// A backward and a forward matrix over different numbers of states.
    #[error(
        "the backward matrix is {backward}×{backward} but the forward matrix is {forward}×{forward}: both must describe the same states"
    )]
    MatrixSizes {
        /// States of the backward matrix.
        backward: usize,
        /// States of the forward matrix.
        forward: usize,
    },
    /// A loss function given for a side of a [`crate::Correlation`] without a matrix.
    #[error("a {side} loss function was given without a {side} matrix")]
    LossWithoutMatrix {
        /// `backward` or `forward`.
        side: &'static str,
    },
    /// A state index outside 0..n in an observed stream.
    #[error("state {state} is out of range: there are {n} states (0 to n − 1)")]
    StateOutOfRange {
        /// The state found.
        state: usize,
        /// Number of states.
        n: usize,
    },
    /// A user stream without records.
    #[error("no data rows (empty stream)")]
    EmptyStream,
    /// Buckets of a user stream that are not evenly spaced.
    #[error(
        "buckets have a gap: bucket {missing} never appears (buckets are steps of {spacing} from {first})"
    )]
    StreamGap {
        /// The first bucket missing.
        missing: u64,
        /// The spacing of the buckets (the smallest difference between two).
        spacing: u64,
        /// The first bucket.
        first: u64,
    },
    /// A (bucket, user) pair given by two records of a user stream.
    #[error("user {user} appears twice in bucket {bucket}")]
    StreamDuplicate {
        /// The 0-based record that repeats the pair.
        record: usize,
        /// The user id.
        user: u64,
        /// The bucket.
        bucket: u64,
    },
    /// A (bucket, user) pair without a record: a user stream lists every user at every bucket.
    #[error("user {user} never appears in bucket {bucket}: a stream lists every user at every bucket")]
    StreamMissing {
        /// The user id.
        user: u64,
        /// The bucket.
        bucket: u64,
    },
    /// A step of a dense user stream with another number of users than the first step.
    #[error("step {step} lists {users} users, but step 1 lists {expected}")]
    StreamWidth {
        /// 1-based step.
        step: usize,
        /// Users at that step.
        users: usize,
        /// Users at step 1.
        expected: usize,
    },
    /// A step range that is not `A..B`, `A..`, `..B` or `..` with whole numbers.
    #[error(
        "{0:?} is not a step range: write A..B (steps A to B, both included, numbered from 1), A.. or ..B"
    )]
    StepRangeSyntax(String),
    /// A step range that names step 0.
    #[error("step range {range}: steps are numbered from 1")]
    StepZero {
        /// The range as typed.
        range: String,
    },
    /// A step range whose last step comes before its first.
    #[error("step range {first}..{last} is empty: its last step comes before its first")]
    StepRangeEmpty {
        /// The first step asked for.
        first: usize,
        /// The last step asked for.
        last: usize,
    },
    /// A step range that goes past the last step of the data.
    #[error("steps {range} are outside the data, which has {steps} steps (1..{steps})")]
    StepRangeOutside {
        /// The range as typed.
        range: String,
        /// Steps of the data.
        steps: usize,
    },
    /// The steps outside a range were asked for, but the range holds every step.
    #[error("the range holds all {steps} steps: no other step is left")]
    NoStepsLeft {
        /// Steps of the data.
        steps: usize,
    },
    /// The steps outside a range were asked for, but they lie on both of its sides.
    #[error(
        "the steps outside {first}..{last} are two ranges, 1..{} and {}..{steps}, not one", first - 1, last + 1
    )]
    StepsLeftSplit {
        /// First step of the range.
        first: usize,
        /// Last step of the range.
        last: usize,
        /// Steps of the data.
        steps: usize,
    },
    /// Personalised leakage was asked for with no users.
    #[error("no users: personalised leakage needs at least one user")]
    NoUsers,
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, CoreError>;

/// An f64 as messages print it: an integer below 10^16 in plain digits (`-1`, `10`), any
/// other value in Rust's shortest round-trip form, with an exponent when the magnitude is
/// very large or small (`0.25`, `1e300`, `1e-320`), so that a message never spells a double
/// in hundreds of digits. Used by the error messages of every `tpl` crate.
///
/// ```
/// use tpl_core::Short;
/// assert_eq!(Short(-1.0).to_string(), "-1");
/// assert_eq!(Short(0.25).to_string(), "0.25");
/// assert_eq!(Short(1e300).to_string(), "1e300");
/// assert_eq!(Short(1e-320).to_string(), "1e-320");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Short(pub f64);

impl std::fmt::Display for Short {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let x = self.0;
        if x.fract() == 0.0 && x.abs() < 1e16 { write!(f, "{x}") } else { write!(f, "{x:?}") }
    }
}
