//! What an allocator promises, what it returns, and the audit that checks one against the
//! other (OpenDP style: the guarantee is part of the result, and a test can ask it).

use tpl_core::{Budgets, CompactSeries, Correlation, Supremum, check_alpha, check_horizon};

use crate::error::{AllocError, Result, Side};
use crate::search::{smallest_where, ulps_below};

/// The quantity an allocator bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
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

impl Quantity {
    /// The name of the quantity in the JSON of `tpl allocate` (`guarantee.quantity`).
    pub fn name(self) -> &'static str {
        match self {
            Self::MaxTpl => "max_tpl",
            Self::TplEveryStep => "tpl_every_step",
            Self::MaxWindowLeakage { .. } => "max_window_leakage",
        }
    }
}

/// A promise: `quantity` stays within `bound`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct LeakageBound {
    /// What is bounded.
    pub quantity: Quantity,
    /// The bound (the target α).
    pub bound: f64,
}

/// Relative shortfall allowed below the target by [`Quantity::TplEveryStep`]: its budgets
/// come out of a root search ending at adjacent doubles and are then lowered by a few ulps so
/// that no step exceeds α; any larger deviation is a real error.
const EXACT_SLACK: f64 = 1e-9;

impl LeakageBound {
    /// Whether an audited budget sequence keeps the promise, exactly as the f64 values
    /// compare: the audited maximum (TPL, or window leakage) is ≤ the bound with no slack, and
    /// for [`Quantity::TplEveryStep`] every TPL_t is also within 1e-9 relative below it.
    pub fn holds(&self, audit: &Audit) -> bool {
        self.bound_kept(audit)
            && match self.quantity {
                Quantity::TplEveryStep => {
                    let s = &audit.series;
                    (0..s.len()).all(|t| s.tpl_at(t) >= self.bound * (1.0 - EXACT_SLACK))
                }
                _ => true,
            }
    }

    /// Why `audit` does not keep the promise ([`LeakageBound::holds`] is false): the audited
    /// maximum above the bound, or else the first step whose TPL falls short of it.
    fn unmet(&self, strategy: &'static str, audit: &Audit) -> AllocError {
        let bound = self.bound;
        let maximum = match self.quantity {
            Quantity::MaxWindowLeakage { .. } => audit.max_window_leakage.unwrap_or(f64::NAN),
            Quantity::MaxTpl | Quantity::TplEveryStep => audit.max_tpl,
        };
        let s = &audit.series;
        let short = (0..s.len()).find(|&t| s.tpl_at(t) < bound * (1.0 - EXACT_SLACK));
        match short.filter(|_| self.bound_kept(audit)) {
            Some(t) => {
                AllocError::GuaranteeUnmet { strategy, achieved: s.tpl_at(t), bound, shortfall: Some(t + 1) }
            }
            None => AllocError::GuaranteeUnmet { strategy, achieved: maximum, bound, shortfall: None },
        }
    }

    /// The upper half of [`LeakageBound::holds`]: the audited maximum is ≤ the bound.
    fn bound_kept(&self, audit: &Audit) -> bool {
        match self.quantity {
            Quantity::MaxTpl | Quantity::TplEveryStep => audit.max_tpl <= self.bound,
            Quantity::MaxWindowLeakage { .. } => audit.max_window_leakage.is_some_and(|v| v <= self.bound),
        }
    }

    /// The window the promise is about, if any.
    pub fn window(&self) -> Option<usize> {
        match self.quantity {
            Quantity::MaxWindowLeakage { window } => Some(window),
            _ => None,
        }
    }
}

/// Why a budget stops short of the target: above `epsilon` = log(1/q) a constant budget makes
/// the leakage of `side` grow without bound (TKDE Theorem 11: a candidate (q, d = 0) of L
/// has no fixed point once q e^ε ≥ 1), so no larger budget is allowed whatever α is, and the
/// achieved leakage may stay far below α.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Cap {
    /// The side whose leakage diverges above the cap.
    pub side: Side,
    /// q of the diverging candidate (the largest q with d = 0).
    pub q: f64,
    /// log(1/q): the smallest constant budget with unbounded leakage on that side.
    pub epsilon: f64,
}

/// What an allocator plans before the audit: ε_1..ε_T and the budget it spends at steady
/// state.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Plan {
    /// ε_t for t = 1..T, exact up to rounding (constant, or constant but at both ends:
    /// stored once, whatever T).
    pub budgets: Budgets,
    /// The budget spent at steady state (every step for upper-bound and window, the middle
    /// steps for quantified).
    pub steady_budget: f64,
    /// Set when the steady budget is the largest below a [`Cap`] rather than the one the
    /// target α calls for.
    pub limited_by: Option<Cap>,
}

/// The audit of a budget sequence through `tpl-core` ([`docs/model.md`](tpl_core::guide::model)
/// §4): what it leaks.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Audit {
    /// ε_t, BPL_t, FPL_t and TPL_t under the budgets (TKDE eqs. 11–15), in the compact
    /// form (16 bytes a step; `LeakageSeries::from` materialises it).
    pub series: CompactSeries,
    /// max_t TPL_t: the α of α-DP_T achieved.
    pub max_tpl: f64,
    /// The window checked, if one was asked for.
    pub window: Option<usize>,
    /// The largest leakage of a window of that many steps (TKDE Theorem 3), if asked for.
    pub max_window_leakage: Option<f64>,
}

/// Budgets per step with their audit through `tpl-core`: what was promised, what was spent,
/// what it leaks.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Allocation {
    /// The allocator's name (`upper-bound`, `quantified`, `window`).
    pub strategy: &'static str,
    /// What it promised.
    pub guarantee: LeakageBound,
    /// The audit of the budgets (they are `audit.series.budgets()`, see
    /// [`Allocation::budgets`]); it keeps [`LeakageBound::holds`].
    pub audit: Audit,
    /// The budget spent at steady state, lowered with the others.
    pub steady_budget: f64,
    /// sup BPL at the steady budget (Theorem 11).
    pub sup_backward: Supremum,
    /// sup FPL at the steady budget.
    pub sup_forward: Supremum,
    /// Set when the budget is capped below what α calls for because a larger one makes a
    /// side's leakage unbounded ([`Plan::limited_by`]).
    pub limited_by: Option<Cap>,
}

impl Allocation {
    /// ε_t for t = 1..T, as audited.
    pub fn budgets(&self) -> &Budgets {
        self.audit.series.budgets()
    }

    /// max_t TPL_t of the budgets.
    pub fn max_tpl(&self) -> f64 {
        self.audit.max_tpl
    }
}

/// Runs `budgets` through `tpl-core` (series, max TPL and, with `window`, the largest
/// window leakage): the audit every allocator applies to itself, usable on any budget
/// sequence a scheme spent. The values are those `tpl leakage` prints for the same budgets
/// ([`CompactSeries::new`]).
///
/// # Errors
/// Invalid budgets or window.
pub fn audit(corr: &Correlation, budgets: Budgets, window: Option<usize>) -> Result<Audit> {
    audit_with_progress(corr, budgets, window, &|_, _| {})
}

/// [`audit`], reporting the progress of the series as
/// [`tpl_core::CompactSeries::compute_with_progress`] does.
fn audit_with_progress(
    corr: &Correlation,
    budgets: Budgets,
    window: Option<usize>,
    progress: &dyn Fn(usize, usize),
) -> Result<Audit> {
    let series = CompactSeries::new_with_progress(corr, budgets, progress)?;
    let max_tpl = series.max_tpl();
    let max_window_leakage = match window {
        Some(w) => Some(series.max_window_leakage(w)?),
        None => None,
    };
    Ok(Audit { series, max_tpl, window, max_window_leakage })
}

/// Checks α and T, the common preconditions of every allocator.
pub(crate) fn check_target(alpha: f64, horizon: usize) -> Result<()> {
    check_alpha(alpha)?;
    check_horizon(horizon)?;
    Ok(())
}

/// A budget allocation strategy for a horizon of T steps.
pub trait Allocator {
    /// Short name, as on the command line.
    fn name(&self) -> &'static str;

    /// What the allocation promises.
    fn guarantee(&self) -> LeakageBound;

    /// The correlation it plans against.
    fn correlation(&self) -> &Correlation;

    /// ε_1..ε_T and the steady-state budget, before the audit; `progress` as in
    /// [`Allocator::allocate_with_progress`].
    ///
    /// # Errors
    /// When no valid allocation exists; the error says why.
    fn plan(&self, horizon: usize, progress: &dyn Fn(usize, usize)) -> Result<Plan>;

    /// The budgets with their audit; the audit is part of the result so that a caller sees
    /// what was achieved, not only what was promised.
    ///
    /// The plan is exact up to rounding; the promise must hold for the f64 budgets as
    /// printed. So the planned budgets are audited ([`audit`], the series `tpl leakage`
    /// computes) and, if the audited maximum exceeds the bound by rounding, every budget is
    /// lowered by the same smallest number of ulps that makes it pass (a gallop and a
    /// bisection on that number). The result always keeps [`LeakageBound::holds`].
    ///
    /// Memory: one series of the horizon at a time (16 bytes a step); the budgets of every
    /// allocator are stored in O(1).
    ///
    /// # Errors
    /// As [`Allocator::plan`]; [`AllocError::NoPositiveBudget`] when only zero budgets pass
    /// the audit; [`AllocError::GuaranteeUnmet`] if the audit still fails (a defect).
    fn allocate(&self, horizon: usize) -> Result<Allocation> {
        self.allocate_with_progress(horizon, &|_, _| {})
    }

    /// As [`Allocator::allocate`], calling `progress(done, total)` while each leakage series
    /// of the horizon is computed (every search step and audit computes one; each counts
    /// from 0 to its own total, as [`tpl_core::CompactSeries::compute_with_progress`]).
    ///
    /// # Errors
    /// As [`Allocator::allocate`].
    fn allocate_with_progress(&self, horizon: usize, progress: &dyn Fn(usize, usize)) -> Result<Allocation> {
        let guarantee = self.guarantee();
        let plan = self.plan(horizon, progress)?;
        let corr = self.correlation();
        let window = guarantee.window();
        // The plan as it is usually passes; only if rounding breaks the bound is it lowered,
        // with one series in memory at a time.
        let (k, audited) = match audit_with_progress(corr, plan.budgets.clone(), window, progress) {
            Ok(a) if guarantee.bound_kept(&a) => (0, a),
            failed => {
                drop(failed);
                let k = ulps_to_pass(corr, guarantee, &plan.budgets, progress)?;
                let lowered = plan.budgets.map(|b| ulps_below(b, k));
                (k, audit_with_progress(corr, lowered, window, progress)?)
            }
        };
        if audited.series.budgets().iter().any(|b| b <= 0.0) {
            return Err(AllocError::NoPositiveBudget { alpha: guarantee.bound });
        }
        let steady_budget = ulps_below(plan.steady_budget, k);
        let allocation = Allocation {
            strategy: self.name(),
            guarantee,
            audit: audited,
            steady_budget,
            sup_backward: corr.backward_supremum(steady_budget)?,
            sup_forward: corr.forward_supremum(steady_budget)?,
            limited_by: plan.limited_by,
        };
        if !guarantee.holds(&allocation.audit) {
            return Err(guarantee.unmet(allocation.strategy, &allocation.audit));
        }
        Ok(allocation)
    }
}

/// The smallest number k ≥ 1 of ulps by which lowering every planned budget makes the audit
/// keep the bound of `guarantee`, for a plan that fails as it is.
///
/// # Errors
/// [`AllocError::NoPositiveBudget`] when not even budgets lowered to 0 pass.
fn ulps_to_pass(
    corr: &Correlation,
    guarantee: LeakageBound,
    planned: &Budgets,
    progress: &dyn Fn(usize, usize),
) -> Result<u64> {
    let window = guarantee.window();
    let passes = |k: u64| {
        k > 0
            && audit_with_progress(corr, planned.map(|b| ulps_below(b, k)), window, progress)
                .is_ok_and(|a| guarantee.bound_kept(&a))
    };
    let max_k = planned.iter().map(f64::to_bits).max().unwrap_or(0);
    smallest_where(max_k, passes).ok_or(AllocError::NoPositiveBudget { alpha: guarantee.bound })
}
