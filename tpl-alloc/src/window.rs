//! A window-aware allocator: the largest constant budget whose Theorem 3 leakage of every
//! window of w steps within a finite horizon stays under the target.

use tpl_core::{Budgets, CompactSeries, Correlation, Supremum, check_window};

use crate::allocation::{Allocator, LeakageBound, Plan, Quantity, check_target};
use crate::error::{AllocError, Result};
use crate::search::{largest_at_most, largest_where};

/// The largest constant ε such that, over a horizon of T steps, every window of `w`
/// consecutive steps leaks at most α under Theorem 3 of the TKDE paper (w = 1: TPL per step,
/// i.e. α-DP_T on a finite horizon). Not in the papers: it is the allocator for w-event
/// privacy under temporal correlation, and it exists even where the suprema do not.
///
/// **Derivation.** With ε_t = ε for all t, the leakage of window [t, t+w−1] is
/// W_t(ε) = BPL_t(ε) + FPL_{t+w−1}(ε) + (w − 2)ε (w ≥ 2) or TPL_t(ε) (w = 1). Each BPL_t is
/// a composition of the non-decreasing maps a ↦ L_B(a) + ε, so it is continuous and
/// increasing in ε (strictly, through its own + ε term); likewise FPL. Hence
/// M(ε) = max_t W_t(ε) is continuous and strictly increasing, with M(ε) → 0 as ε → 0 and
/// M(ε) ≥ w ε (every step in the window leaks at least its ε). The answer is therefore the
/// unique ε* in (0, α/w] with M(ε*) = α. The search returns the largest double ε with
/// M(ε) ≤ α, evaluating M on the exact series (O(T log m) per evaluation, the budget stored
/// once): it starts from the ε whose limits keep every window ≤ α (sup BPL + sup FPL +
/// (w − 2)ε ≤ α, Theorem 11, when the suprema exist: BPL_t and FPL_t never exceed them, so
/// that ε passes on any horizon, and is checked on the series like every other point), and
/// narrows [that ε, α/w] by regula falsi safeguarded by bisection down to adjacent doubles,
/// typically in about ten evaluations rather than sixty.
///
/// On a finite horizon this works even when L(α) = α (rows with disjoint supports, as in the
/// raw AIS matrices): the leakage then grows linearly but stays finite.
///
/// ```
/// use tpl_alloc::{Allocator, WindowAllocator};
/// use tpl_core::{Correlation, TransitionMatrix};
/// let id = TransitionMatrix::identity(3); // L(α) = α: no bounded strategy exists
/// let corr = Correlation::new(Some(id.clone()), Some(id.clone()))?;
/// let a = WindowAllocator::new(&corr, 1.0, 5).allocate(100)?;
/// assert!(a.audit.max_window_leakage.unwrap() <= 1.0 && a.budgets().get(0) > 0.0);
/// # Ok::<(), tpl_alloc::AllocError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct WindowAllocator<'c> {
    corr: &'c Correlation,
    alpha: f64,
    window: usize,
}

impl<'c> WindowAllocator<'c> {
    /// The allocator for target α on windows of `window` steps.
    pub fn new(corr: &'c Correlation, alpha: f64, window: usize) -> Self {
        Self { corr, alpha, window }
    }

    /// The largest window leakage of a constant ε over T steps (+∞ if it overflows).
    fn max_window(&self, eps: f64, horizon: usize, progress: &dyn Fn(usize, usize)) -> f64 {
        if eps == 0.0 {
            return 0.0;
        }
        CompactSeries::new_with_progress(
            self.corr,
            Budgets::Constant { epsilon: eps, steps: horizon },
            progress,
        )
        .and_then(|s| s.max_window_leakage(self.window))
        .unwrap_or(f64::INFINITY)
    }

    /// The largest ε ≤ `top` whose limit window leakage sup BPL + sup FPL + (w − 2)ε (or
    /// sup BPL + sup FPL − ε for w = 1) is ≤ α, by bisection in O(m) a step; 0 when the
    /// suprema are unbounded.
    fn limit_start(&self, top: f64) -> f64 {
        let extra = self.window as f64 - 2.0;
        largest_where(0.0, top, |e| {
            if e == 0.0 {
                return true;
            }
            match (self.corr.backward_supremum(e), self.corr.forward_supremum(e)) {
                (Ok(Supremum::Bounded(b)), Ok(Supremum::Bounded(f))) => b + f + extra * e <= self.alpha,
                _ => false,
            }
        })
    }
}

impl Allocator for WindowAllocator<'_> {
    fn name(&self) -> &'static str {
        "window"
    }

    fn guarantee(&self) -> LeakageBound {
        LeakageBound { quantity: Quantity::MaxWindowLeakage { window: self.window }, bound: self.alpha }
    }

    fn correlation(&self) -> &Correlation {
        self.corr
    }

    fn plan(&self, horizon: usize, progress: &dyn Fn(usize, usize)) -> Result<Plan> {
        check_target(self.alpha, horizon)?;
        check_window(self.window, horizon)?;
        let top = self.alpha / self.window as f64;
        let m = |e: f64| self.max_window(e, horizon, progress);
        let start = self.limit_start(top);
        let (lo, m_lo) = match m(start) {
            v if v <= self.alpha => (start, v),
            _ => (0.0, 0.0),
        };
        let eps = largest_at_most(lo, m_lo, top, self.alpha, m);
        if eps <= 0.0 {
            return Err(AllocError::NoPositiveBudget { alpha: self.alpha });
        }
        Ok(Plan {
            budgets: Budgets::Constant { epsilon: eps, steps: horizon },
            steady_budget: eps,
            limited_by: None,
        })
    }
}
