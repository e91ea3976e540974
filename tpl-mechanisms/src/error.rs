//! The error type of `tpl-mechanisms`.

use std::fmt;
use std::sync::Arc;

use thiserror::Error;
use tpl_core::{CoreError, Short};

/// What can go wrong when building or running a mechanism or stream scheme.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum MechError {
    /// A budget ε or sensitivity Δ refused by `tpl-core`'s checks ([`tpl_core::check_epsilon`],
    /// [`tpl_core::check_sensitivity`]); the message names the value.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// A window of 0 steps.
    #[error("window {0} must be at least 1")]
    BadWindow(usize),
    /// A budget so small that one step's share ε/(2w) is below the smallest positive f64.
    #[error("epsilon {} is too small to give each of the {window} steps of a window a positive share", Short(*.epsilon))]
    ShareUnderflow {
        /// ε.
        epsilon: f64,
        /// w.
        window: usize,
    },
    /// The budgets of one window add up beyond the largest double (only the event-level
    /// `laplace` scheme, whose window spends min(T, w)·ε, can get there).
    #[error(
        "the budgets of a window of {window} steps add up beyond the largest double (1.8e308): epsilon {epsilon:e} \
         is too large to report what a window spends"
    )]
    WindowSumOverflow {
        /// ε.
        epsilon: f64,
        /// w.
        window: usize,
    },
    /// An input distance of a privacy map that is not finite and ≥ 0.
    #[error("input distance {} must be finite and at least 0", Short(*.0))]
    BadDistance(f64),
    /// A noise scale that is not finite and positive.
    #[error("noise scale {} must be finite and greater than 0", Short(*.0))]
    BadScale(f64),
    /// A budget whose loss 2·ε_t/Δ against one person changing cell
    /// ([`crate::checked_effective_budget`]) is beyond the largest double: a sensitivity so
    /// small that the audit would start from an infinite loss.
    #[error(
        "the loss 2·ε/Δ of budget {} at sensitivity {} overflows a double: the sensitivity is too small for the \
         budget", Short(*.budget), Short(*.sensitivity)
    )]
    LossOverflow {
        /// The budget ε_t.
        budget: f64,
        /// The sensitivity Δ.
        sensitivity: f64,
    },
    /// A confidence level outside (0, 1).
    #[error("interval level {} must be between 0 and 1 (exclusive), e.g. 0.9", Short(*.0))]
    BadLevel(f64),
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
    #[error("step {step}, cell {cell}: count {} is not finite", Short(*.value))]
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
        "value {} is not an integer: the release-grade sampler adds exact integer noise and needs \
         integer counts (use the float sampler for non-integer data; it is not release-grade)", Short(*.value)
    )]
    NotInteger {
        /// The value.
        value: f64,
    },
    /// A value beyond ±2^52 where an exact integer release cannot add noise without rounding
    /// (see [`crate::MAX_EXACT_COUNT`]).
    #[error(
        "cell {cell}: value {} is beyond ±2^52 = 4503599627370496, the largest the exact integer release \
         supports: larger values, or integers that are not exact doubles, cannot take noise without rounding",
        Short(*.value)
    )]
    CountTooLarge {
        /// 0-based cell.
        cell: usize,
        /// The value.
        value: f64,
    },
    /// The dissimilarity sum of a step's publish-or-repeat test (bd, ba, pba) beyond ±2^52:
    /// counts within the bound, but so far from the last release that the sum the test
    /// releases with exact integer noise is not (see [`crate::MAX_EXACT_COUNT`]).
    #[error(
        "step {step}: the dissimilarity sum Σ_j |c_t[j] − r_{{t−1}}[j]| = {} that bd, ba and pba test is beyond \
         ±2^52 = 4503599627370496, the largest the exact integer release supports: the counts of step {step} are \
         too far from the last release for the test to take noise without rounding", Short(*.value)
    )]
    DissimilarityTooLarge {
        /// 1-based step.
        step: usize,
        /// The sum Σ_j |c_t\[j\] − r_{t−1}\[j\]|.
        value: f64,
    },
    /// A noise scale Δ/ε_t above what the sampler supports (an exact integer release:
    /// [`crate::MAX_EXACT_SCALE`]; the float sampler: the largest finite double), or a
    /// quotient that overflows.
    #[error("{}", scale_too_large(*sensitivity, *budget, *scale, *max))]
    ScaleTooLarge {
        /// The sensitivity Δ.
        sensitivity: f64,
        /// The budget ε_t.
        budget: f64,
        /// The scale asked for (infinite when Δ/ε_t overflows).
        scale: f64,
        /// The largest supported.
        max: f64,
    },
    /// An integer noise draw beyond ±2^52 (probability below e^−64 at the supported scales):
    /// the release is refused rather than rounded.
    #[error(
        "a noise draw exceeded ±2^52 (an event of probability below 1e-27 at the supported scales): the release \
         is refused because count + noise could not be represented exactly"
    )]
    NoiseOutOfRange,
    /// A mechanism whose privacy map, at the sensitivity it was calibrated to, exceeds the
    /// budget it was given (as OpenDP checks a measurement): refused before any draw.
    #[error(
        "mechanism {mechanism}: its privacy map gives a loss of {} for a release with budget {} at sensitivity {}: \
         a release must lose at most its budget, so nothing was drawn", Short(*.loss), Short(*.budget), Short(*.sensitivity)
    )]
    PrivacyMap {
        /// The mechanism's name.
        mechanism: String,
        /// The sensitivity Δ.
        sensitivity: f64,
        /// The budget ε_t.
        budget: f64,
        /// privacy_map(Δ, Δ, ε_t).
        loss: f64,
    },
    /// A decision rule asking to spend more than it promised: beyond its largest spend at
    /// the step, or beyond what the window ending at the step has left, or a step that
    /// reports less than it drew. Refused before the draw that would exceed it.
    #[error("step {step}: scheme {scheme} {what}; nothing more was drawn")]
    Overspent {
        /// 1-based step.
        step: usize,
        /// The scheme's name.
        scheme: String,
        /// What was exceeded, with the numbers.
        what: String,
    },
    /// A scripted noise source ran out of values.
    #[error("scripted noise source is exhausted")]
    ScriptExhausted,
    /// A step past the last one a [`crate::Planned`] scheme has a budget for.
    #[error(
        "step {step} is past the plan's horizon of {horizon} steps: the planned scheme has no budget for it"
    )]
    PastHorizon {
        /// 1-based step.
        step: usize,
        /// Steps in the plan.
        horizon: usize,
    },
    /// A budget plan a [`crate::Planned`] scheme cannot spend.
    #[error("budget plan, step {step}: {reason}")]
    BadPlan {
        /// 1-based step of the offending budget.
        step: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A recorded step that [`crate::StreamScheme::restore`] cannot take: not one the scheme
    /// could have produced at that point (a damaged or foreign record).
    #[error("stored step {step}: {reason}")]
    BadRestore {
        /// 1-based step of the record.
        step: usize,
        /// Why it cannot be the scheme's.
        reason: String,
    },
    /// A scheme's post-processing of its draw ([`crate::Step::publish_filtered`]) returned
    /// something that is not one finite value per cell.
    #[error("step {step}: the filtered release has {reason}")]
    BadFilter {
        /// 1-based step.
        step: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A built-in scheme's parameter out of its range (e.g. [`crate::schemes::DsatConfig::check`]).
    #[error("{scheme}: parameter {name} = {} must be {range}", Short(*.value))]
    BadSchemeParameter {
        /// The scheme.
        scheme: &'static str,
        /// The parameter.
        name: &'static str,
        /// Its value.
        value: f64,
        /// What it must be.
        range: &'static str,
    },
    /// A failure of a user's own [`crate::Mechanism`] (see [`MechError::custom`]).
    #[error(transparent)]
    Custom(CustomError),
}

/// The message of [`MechError::ScaleTooLarge`]: the quotient as typed (shortest digits), and
/// "overflows" rather than an infinite scale.
fn scale_too_large(sensitivity: f64, budget: f64, scale: f64, max: f64) -> String {
    let quotient = format!("the noise scale sensitivity/budget = {}/{}", Short(sensitivity), Short(budget));
    if scale.is_finite() {
        format!(
            "{quotient} = {scale:e} exceeds {max:e}, the largest this sampler supports: the budget is too small for \
             the sensitivity"
        )
    } else {
        format!(
            "{quotient} overflows a double: the budget is too small for the sensitivity (this sampler takes scales \
             up to {max:e})"
        )
    }
}

impl MechError {
    /// The step (1-based) the message names itself, if it does: a caller that adds the step
    /// as context leaves it out for these, so that no message reads "step 2: step 2 …".
    pub fn step(&self) -> Option<usize> {
        match self {
            Self::NonFinite { step, .. }
            | Self::WrongLength { step, .. }
            | Self::NoCells { step }
            | Self::PastHorizon { step, .. }
            | Self::Overspent { step, .. } => Some(*step),
            _ => None,
        }
    }

    /// Wraps an error of a user's mechanism (any error type, or a message).
    ///
    /// ```
    /// use tpl_mechanisms::MechError;
    /// let e = MechError::custom("the device is offline");
    /// assert_eq!(e.to_string(), "the device is offline");
    /// ```
    pub fn custom(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Custom(CustomError(Arc::from(error.into())))
    }
}

/// The error of a user's mechanism, shared so that [`MechError`] stays `Clone`; two are
/// equal when they are the same error value.
#[derive(Debug, Clone)]
pub struct CustomError(Arc<dyn std::error::Error + Send + Sync>);

impl CustomError {
    /// The wrapped error.
    pub fn get(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl PartialEq for CustomError {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Display for CustomError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for CustomError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, MechError>;
