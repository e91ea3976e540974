//! The error type of `tpl-alloc`.

use thiserror::Error;
use tpl_core::CoreError;

/// Which side of the correlation a message is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Side {
    /// P_B, behind BPL.
    Backward,
    /// P_F, behind FPL.
    Forward,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Backward => "backward",
            Self::Forward => "forward",
        })
    }
}

/// Why an allocation cannot be made.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum AllocError {
    /// Invalid input, as `tpl-core` checks it: a target α, horizon or window
    /// ([`CoreError::BadAlpha`], [`CoreError::EmptyHorizon`], [`CoreError::BadWindow`]),
    /// budgets, or matrices over different numbers of states ([`CoreError::MatrixSizes`]).
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The matrix makes the leakage grow without bound for every ε > 0.
    #[error(
        "the {side} matrix has two rows with disjoint supports, so L(α) = α (Theorem 7): the {side} \
         leakage of every constant budget ε > 0 grows without bound and no allocation for an unbounded \
         stream exists; smooth the matrix (e.g. Laplacian smoothing) or use the window strategy for a \
         finite horizon"
    )]
    Unbounded {
        /// The side at fault.
        side: Side,
    },
    /// Algorithm 8's middle budget a_B + a_F − α is not positive.
    #[error(
        "the quantified allocation has no positive middle budget: a_B = {}, a_F = {} give \
         ε_mid = a_B + a_F − α = {} ≤ 0 for α = {}: the budget left for the middle steps \
         rounds to nothing; use the upper-bound strategy (it needs only the steady-state equation) or \
         the window strategy", tpl_core::Short(*.a_b), tpl_core::Short(*.a_f), tpl_core::Short(*.mid), tpl_core::Short(*.alpha)
    )]
    NoMiddleBudget {
        /// The solved a_B.
        a_b: f64,
        /// The solved a_F.
        a_f: f64,
        /// a_B + a_F − α.
        mid: f64,
        /// The target.
        alpha: f64,
    },
    /// The limit leakage of a constant budget could not be computed as a finite number, so
    /// the largest budget for α cannot be located.
    #[error(
        "cannot find the largest budget for alpha {}: the limit of the leakage at ε = {} \
         (Theorem 11) did not come out as a finite number; use a smaller alpha or the window strategy", tpl_core::Short(*.alpha), tpl_core::Short(*.eps)
    )]
    LimitNotComputable {
        /// The target.
        alpha: f64,
        /// The budget at which the supremum failed.
        eps: f64,
    },
    /// α so small that no positive double budget keeps the audited leakage within it.
    #[error(
        "alpha {} is too small: no positive budget keeps the audited leakage ≤ alpha in \
         floating point (every budget rounds to 0)", tpl_core::Short(*.alpha)
    )]
    NoPositiveBudget {
        /// The target.
        alpha: f64,
    },
    /// The window allocator was asked for without a window length.
    #[error("the window strategy needs a window length w (every w consecutive steps leak ≤ α)")]
    WindowRequired,
    /// The audit of the final budgets does not keep the promise (a defect: allocators shrink
    /// their budgets until it does, or fail with another error).
    #[error(
        "the {strategy} allocation does not keep its guarantee in floating point: {}",
        unmet(.shortfall, *.achieved, *.bound)
    )]
    GuaranteeUnmet {
        /// The allocator.
        strategy: &'static str,
        /// The audited value at fault: the max TPL or max window leakage above the bound, or,
        /// for a promise of TPL_t = α at every step, the TPL_t that falls short.
        achieved: f64,
        /// The target.
        bound: f64,
        /// The 1-based step whose TPL_t falls more than 1e-9 relative below the bound, for a
        /// promise of TPL_t = α at every step whose maximum is kept; `None` when the audited
        /// maximum exceeds the bound.
        shortfall: Option<usize>,
    },
}

/// What [`AllocError::GuaranteeUnmet`] found: the maximum above the bound, or the step whose
/// TPL falls short of it.
fn unmet(shortfall: &Option<usize>, achieved: f64, bound: f64) -> String {
    let (achieved, bound) = (tpl_core::Short(achieved), tpl_core::Short(bound));
    match shortfall {
        Some(t) => format!(
            "TPL_{t} = {achieved} falls more than 1e-9 relative below the bound {bound}, which it must equal at \
             every step"
        ),
        None => format!("the audited maximum {achieved} exceeds the bound {bound}"),
    }
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, AllocError>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a TPL_t that fell short of α was reported as the maximum ("audited 1e308
    /// against the bound 1e308"), two equal numbers that explained nothing.
    #[test]
    fn an_unmet_guarantee_names_the_value_at_fault() {
        let short = AllocError::GuaranteeUnmet {
            strategy: "quantified",
            achieved: 5.50576716284421e307,
            bound: 1e308,
            shortfall: Some(1),
        };
        assert_eq!(
            short.to_string(),
            "the quantified allocation does not keep its guarantee in floating point: TPL_1 = \
             5.50576716284421e307 falls more than 1e-9 relative below the bound 1e308, which it must equal at every \
             step"
        );
        let over = AllocError::GuaranteeUnmet {
            strategy: "window",
            achieved: 1.0000000000000002,
            bound: 1.0,
            shortfall: None,
        };
        assert!(
            over.to_string().ends_with("the audited maximum 1.0000000000000002 exceeds the bound 1"),
            "{over}"
        );
    }
}
