//! What an allocator promises, what it returns, and the audit that checks one against the
//! other (OpenDP style: the guarantee is part of the result, and a test can ask it).

use tpl_core::{LeakageSeries, Supremum};

use crate::correlation::Correlation;
use crate::error::{AllocError, Result};
use crate::search::{smallest_where, ulps_below};

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

/// Relative shortfall allowed below the target by [`Quantity::TplEveryStep`]: its budgets
/// come out of a root search ending at adjacent doubles and are then lowered by a few ulps so
/// that no step exceeds α; any larger deviation is a real error.
const EXACT_SLACK: f64 = 1e-9;

impl Guarantee {
    /// Whether the audited allocation keeps the promise, exactly as the f64 values compare:
    /// the audited maximum (TPL, or window leakage) is ≤ the bound with no slack, and for
    /// [`Quantity::TplEveryStep`] every TPL_t is also within 1e-9 relative below it.
    pub fn holds(&self, a: &Allocation) -> bool {
        self.bound_kept(a.max_tpl, a.max_window_leakage)
            && match self.quantity {
                Quantity::TplEveryStep => a.series.tpl.iter().all(|&v| v >= self.bound * (1.0 - EXACT_SLACK)),
                _ => true,
            }
    }

    /// The upper half of [`Guarantee::holds`]: the audited maximum is ≤ the bound.
    fn bound_kept(&self, max_tpl: f64, max_window: Option<f64>) -> bool {
        match self.quantity {
            Quantity::MaxTpl | Quantity::TplEveryStep => max_tpl <= self.bound,
            Quantity::MaxWindowLeakage { .. } => max_window.is_some_and(|v| v <= self.bound),
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
/// sequence a scheme spent. The values are those `tpl leakage` prints for the same budgets
/// ([`Correlation::series`]).
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
    /// The plan is exact up to rounding; the promise must hold for the f64 budgets as
    /// printed. So the planned budgets are audited ([`audit`], the series `tpl leakage`
    /// computes) and, if the audited maximum exceeds the bound by rounding, every budget is
    /// lowered by the same smallest number of ulps that makes it pass (a gallop and a
    /// bisection on that number). The result always keeps [`Guarantee::holds`].
    ///
    /// # Errors
    /// As [`Allocator::plan`]; [`AllocError::NoPositiveBudget`] when only zero budgets pass
    /// the audit; [`AllocError::GuaranteeUnmet`] if the audit still fails (a defect).
    fn allocate(&self, horizon: usize) -> Result<Allocation> {
        let guarantee = self.guarantee();
        let (planned, planned_steady) = self.plan(horizon)?;
        let window = match guarantee.quantity {
            Quantity::MaxWindowLeakage { window } => Some(window),
            _ => None,
        };
        let corr = self.correlation();
        let lowered = |k: u64| planned.iter().map(|&b| ulps_below(b, k)).collect::<Vec<f64>>();
        let passes = |budgets: &[f64]| {
            audit(corr, budgets, window).is_ok_and(|(_, max_tpl, max_w)| guarantee.bound_kept(max_tpl, max_w))
        };
        let max_k = planned.iter().map(|b| b.to_bits()).max().unwrap_or(0);
        let k = smallest_where(max_k, |k| passes(&lowered(k)))
            .ok_or(AllocError::NoPositiveBudget { alpha: guarantee.bound })?;
        let budgets = lowered(k);
        if budgets.iter().any(|&b| b <= 0.0) {
            return Err(AllocError::NoPositiveBudget { alpha: guarantee.bound });
        }
        let steady_budget = ulps_below(planned_steady, k);
        let (series, max_tpl, max_window_leakage) = audit(corr, &budgets, window)?;
        let allocation = Allocation {
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
        };
        if !guarantee.holds(&allocation) {
            return Err(AllocError::GuaranteeUnmet {
                strategy: allocation.strategy,
                achieved: allocation.max_window_leakage.unwrap_or(allocation.max_tpl),
                bound: guarantee.bound,
            });
        }
        Ok(allocation)
    }
}
