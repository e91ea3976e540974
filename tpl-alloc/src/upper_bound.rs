//! Algorithm 7 of the TKDE paper: one constant budget whose *limit* leakage is the target.

use std::cell::Cell;

use tpl_core::{Budgets, Correlation, Supremum};

use crate::allocation::{Allocator, Cap, LeakageBound, Plan, Quantity, check_target};
use crate::error::{AllocError, Result, Side};
use crate::search::largest_where;
use crate::sides::Sides;

/// The constant ε with sup_B(ε) + sup_F(ε) − ε = α (TKDE Algorithm 7): TPL stays ≤ α at
/// every step of a stream of any length, including one that never ends.
///
/// h(ε) = sup_B(ε) + sup_F(ε) − ε is increasing: each supremum solves s = L(s) + ε with
/// 0 ≤ L′ ≤ 1, so ds/dε = 1/(1 − L′(s)) ≥ 1 (and h = +∞ once a supremum is unbounded).
/// h(ε) ≥ ε, so the answer lies in (0, α]; we return the largest double with h(ε) ≤ α,
/// found by bisection to adjacent doubles, for every α from the smallest positive double to
/// the largest (h is evaluated as sup_B + (sup_F − ε), which overflows only with h itself).
/// If a supremum does not come out as a finite number anywhere on the search path, the
/// search fails with [`AllocError::LimitNotComputable`] rather than answer from a broken
/// predicate. [`Allocator::allocate`] then lowers ε by ulps until the audited series of the
/// horizon is ≤ α as printed. The paper's loop compares h with α for exact equality and may
/// not end; ours always does, in ≤ 64 steps of O(m) each.
///
/// **Capped budgets.** When a side's L has a candidate (q, d = 0), every ε ≥ log(1/q) makes
/// that side's leakage unbounded (Theorem 11), so h jumps to +∞ there. For a large α the
/// answer is then the last double below that cap and max TPL stays below α, however large α
/// is; [`UpperBound::limit`] (and [`crate::Allocation::limited_by`]) say so.
///
/// ```
/// use tpl_alloc::{Allocator, UpperBound};
/// use tpl_core::{Correlation, TransitionMatrix};
/// let pb = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.2, 0.8]])?;
/// let pf = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.1, 0.9]])?;
/// let corr = Correlation::new(Some(pb.clone()), Some(pf.clone()))?;
/// let a = UpperBound::new(&corr, 1.0).allocate(30)?;
/// assert!(a.max_tpl() <= 1.0 && a.guarantee.holds(&a.audit));
/// # Ok::<(), tpl_alloc::AllocError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct UpperBound<'c> {
    corr: &'c Correlation,
    alpha: f64,
}

impl<'c> UpperBound<'c> {
    /// The allocator for target α.
    pub fn new(corr: &'c Correlation, alpha: f64) -> Self {
        Self { corr, alpha }
    }

    /// The constant budget ε (independent of the horizon).
    ///
    /// # Errors
    /// Bad α; [`AllocError::Unbounded`] when a side has L(α) = α;
    /// [`AllocError::LimitNotComputable`] when a supremum on the search path is not a finite
    /// number; [`AllocError::NoPositiveBudget`] when α is so small that no positive double
    /// passes.
    pub fn epsilon(&self) -> Result<f64> {
        Ok(self.limit()?.0)
    }

    /// The constant budget ε of [`UpperBound::epsilon`] and, when it is the last double
    /// below a side's divergence cap (the next double up makes that side's supremum
    /// unbounded) rather than where h reaches α, that [`Cap`].
    ///
    /// # Errors
    /// As [`UpperBound::epsilon`].
    pub fn limit(&self) -> Result<(f64, Option<Cap>)> {
        check_target(self.alpha, 1)?;
        self.corr.require_bounded()?;
        let alpha = self.alpha;
        // The first ε whose suprema are not finite numbers: there h(ε) is unknown, the
        // predicate is not known to be monotone, and the search result cannot be trusted.
        let failed = Cell::new(None);
        let within = |eps: f64| -> bool {
            if eps == 0.0 {
                return true;
            }
            match (self.corr.backward_supremum(eps), self.corr.forward_supremum(eps)) {
                // b + (f − ε): f − ε is FPL's own leakage beyond ε, so nothing overflows
                // before h itself does (b + f can exceed the largest double where h does not).
                (Ok(Supremum::Bounded(b)), Ok(Supremum::Bounded(f))) if b.is_finite() && f.is_finite() => {
                    b + (f - eps) <= alpha
                }
                (Ok(Supremum::Unbounded), _) | (_, Ok(Supremum::Unbounded)) => false,
                _ => {
                    failed.set(failed.get().or(Some(eps)));
                    false
                }
            }
        };
        let eps = largest_where(0.0, alpha, within);
        if let Some(eps) = failed.get() {
            return Err(AllocError::LimitNotComputable { alpha, eps });
        }
        if eps <= 0.0 {
            return Err(AllocError::NoPositiveBudget { alpha });
        }
        let cap = if eps < alpha {
            let above = eps.next_up();
            let unbounded = |s: tpl_core::Result<Supremum>| matches!(s, Ok(Supremum::Unbounded));
            if unbounded(self.corr.backward_supremum(above)) {
                self.corr.cap(Side::Backward)
            } else if unbounded(self.corr.forward_supremum(above)) {
                self.corr.cap(Side::Forward)
            } else {
                None
            }
        } else {
            None
        };
        Ok((eps, cap))
    }
}

impl Allocator for UpperBound<'_> {
    fn name(&self) -> &'static str {
        "upper-bound"
    }

    fn guarantee(&self) -> LeakageBound {
        LeakageBound { quantity: Quantity::MaxTpl, bound: self.alpha }
    }

    fn correlation(&self) -> &Correlation {
        self.corr
    }

    fn plan(&self, horizon: usize, _progress: &dyn Fn(usize, usize)) -> Result<Plan> {
        check_target(self.alpha, horizon)?;
        let (eps, limited_by) = self.limit()?;
        Ok(Plan {
            budgets: Budgets::Constant { epsilon: eps, steps: horizon },
            steady_budget: eps,
            limited_by,
        })
    }
}
