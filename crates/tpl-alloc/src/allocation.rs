//! What an allocator promises, what it returns, and the audit that checks one against the
//! other (OpenDP style: the guarantee is part of the result, and a test can ask it).

use tpl_core::{LeakageSeries, Supremum};

use crate::correlation::Correlation;
use crate::error::{AllocError, Result};

/// The quantity an allocator bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// max_t TPL_t ≤ bound: α-DP_T (TKDE Definition 5).
    MaxTpl,
    /// TPL_t = bound at every step (TKDE Algorithm 8 spends exactly the target).
    TplEveryStep,
    /// Every window of `window` consecutive steps leaks ≤ bound (TKDE Theorem 3).
    MaxWindowLeakage {
        /// The window length w.
        window: usize,
    },
}

/// A promise: `quantity` stays within `bound`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Guarantee {
    /// What is bounded.
    pub quantity: Quantity,
    /// The bound (the target α).
    pub bound: f64,
}

/// Relative slack when checking a guarantee: the audited series is computed in floating
/// point, a few ulps per step (1e-12 covers horizons up to ~10⁴ steps with room to spare),
/// and the exact-target check of [`Quantity::TplEveryStep`] allows 1e-9 — the root search
/// ends at adjacent doubles, so any larger deviation is a real error.
const UPPER_SLACK: f64 = 1e-12;
const EXACT_SLACK: f64 = 1e-9;

impl Guarantee {
    /// Whether the audited allocation keeps the promise.
    pub fn holds(&self, a: &Allocation) -> bool {
        let top = self.bound * (1.0 + UPPER_SLACK);
        match self.quantity {
            Quantity::MaxTpl => a.max_tpl <= top,
            Quantity::TplEveryStep => {
                a.series.tpl.iter().all(|&v| (v - self.bound).abs() <= EXACT_SLACK * self.bound)
            }
            Quantity::MaxWindowLeakage { .. } => a.max_window_leakage.is_some_and(|v| v <= top),
        }
    }
}

/// Budgets per step with their audit through `tpl-core`.
#[derive(Debug, Clone)]
pub struct Allocation {
    /// The allocator's name (`upper-bound`, `quantified`, `window`).
    pub strategy: &'static str,
    /// What it promised.
    pub guarantee: Guarantee,
    /// ε_t for t = 1..T.
    pub budgets: Vec<f64>,
    /// BPL, FPL, TPL under those budgets.
    pub series: LeakageSeries,
    /// max_t TPL_t.
    pub max_tpl: f64,
    /// The window checked, if the guarantee is about windows.
    pub window: Option<usize>,
    /// The largest window leakage, if the guarantee is about windows.
    pub max_window_leakage: Option<f64>,
    /// The budget spent at steady state (every step for upper-bound and window, the middle
    /// steps for quantified).
    pub steady_budget: f64,
    /// sup BPL at the steady budget (Theorem 11).
    pub sup_backward: Supremum,
    /// sup FPL at the steady budget.
    pub sup_forward: Supremum,
}

/// Runs `budgets` through `tpl-core` (series, max TPL and, with `window`, the largest
/// window leakage): the audit every allocator applies to itself, usable on any budget
/// sequence a scheme spent.
///
/// # Errors
/// Invalid budgets or window.
pub fn audit(
    corr: &Correlation,
    budgets: &[f64],
    window: Option<usize>,
) -> Result<(LeakageSeries, f64, Option<f64>)> {
    let series = corr.series(budgets)?;
    let max_tpl = series.max_tpl();
    let max_window = match window {
        Some(w) => Some(series.window_leakage(w)?.into_iter().fold(0.0, f64::max)),
        None => None,
    };
    Ok((series, max_tpl, max_window))
}

/// Checks α and T, the common preconditions of every allocator.
pub(crate) fn check_target(alpha: f64, horizon: usize) -> Result<()> {
    if !(alpha.is_finite() && alpha > 0.0) {
        return Err(AllocError::BadAlpha(alpha));
    }
    if horizon == 0 {
        return Err(AllocError::EmptyHorizon);
    }
    Ok(())
}

/// A budget allocation strategy for a horizon of T steps.
pub trait Allocator {
    /// Short name, as on the command line.
    fn name(&self) -> &'static str;

    /// What the allocation promises.
    fn guarantee(&self) -> Guarantee;

    /// The correlation it plans against.
    fn correlation(&self) -> &Correlation;

    /// ε_1..ε_T and the steady-state budget.
    ///
    /// # Errors
    /// When no valid allocation exists; the error says why.
    fn plan(&self, horizon: usize) -> Result<(Vec<f64>, f64)>;

    /// The budgets with their audit; the audit is part of the result so that a caller sees
    /// what was achieved, not only what was promised.
    ///
    /// # Errors
    /// As [`Allocator::plan`].
    fn allocate(&self, horizon: usize) -> Result<Allocation> {
        let guarantee = self.guarantee();
        let (budgets, steady_budget) = self.plan(horizon)?;
        let window = match guarantee.quantity {
            Quantity::MaxWindowLeakage { window } => Some(window),
            _ => None,
        };
        let corr = self.correlation();
        let (series, max_tpl, max_window_leakage) = audit(corr, &budgets, window)?;
        Ok(Allocation {
            strategy: self.name(),
            guarantee,
            budgets,
            series,
            max_tpl,
            window,
            max_window_leakage,
            steady_budget,
            sup_backward: corr.sup_backward(steady_budget)?,
            sup_forward: corr.sup_forward(steady_budget)?,
        })
    }
}
