//! Algorithm 8 of the TKDE paper: more budget at the first and last steps so that TPL equals
//! the target at every step.

use tpl_core::{Budgets, Correlation};

use crate::allocation::{Allocator, LeakageBound, Plan, Quantity, check_target};
use crate::error::{AllocError, Result};
use crate::search::largest_where;
use crate::sides::Sides;

/// ε_1 = a_B, ε_t = a_B + a_F − α for 1 < t < T, ε_T = a_F, where
/// L_B(a_B) + a_F = α and L_F(a_F) + a_B = α (TKDE eqs. 26–27). Then BPL_t = a_B for t < T,
/// FPL_t = a_F for t > 1, and TPL_t = α at every step: nothing of the target is left unused.
///
/// **Solving.** Eq. 26 gives a_F = α − L_B(a_B); substituted into eq. 27 it leaves one
/// equation g(a) = L_F(α − L_B(a)) + a − α = 0 in a = a_B. Since 0 ≤ L′ ≤ 1,
/// g′(a) = 1 − L_F′·L_B′ ≥ 0, and g(0) = L_F(α) − α ≤ 0 ≤ L_F(α − L_B(α)) = g(α): the
/// bracket [0, α] holds the root and bisection to adjacent doubles finds it (the paper's
/// printed loop updates a^B but evaluates eq. 27 at a stale a^F; this is what its text means).
/// [`Allocator::allocate`] then lowers the three budgets by the same few ulps if rounding
/// lets a printed TPL_t exceed α, so TPL_t ≤ α holds as the f64 values compare and each
/// TPL_t is within 1e-9 relative below α.
///
/// **Short horizons.** T = 1: ε_1 = α (TPL_1 = ε_1). T = 2: the same two equations say
/// TPL_1 = L_F(ε_2) + ε_1 and TPL_2 = L_B(ε_1) + ε_2, so (ε_1, ε_2) = (a_B, a_F).
///
/// **Relation to Algorithm 7.** a_B is the fixed point of a = L_B(a) + ε_mid, i.e.
/// sup_B(ε_mid) = a_B, and likewise sup_F(ε_mid) = a_F; so ε_mid solves
/// sup_B + sup_F − ε = α, the equation of [`crate::UpperBound`]: both allocators spend the same
/// ε in the middle, and quantified spends more only at t = 1 and t = T.
///
/// ```
/// use tpl_alloc::{Allocator, Quantified};
/// use tpl_core::{Correlation, TransitionMatrix};
/// let pb = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.2, 0.8]])?;
/// let pf = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.1, 0.9]])?;
/// let corr = Correlation::new(Some(pb.clone()), Some(pf.clone()))?;
/// let a = Quantified::new(&corr, 1.0).allocate(30)?;
/// assert!((0..30).all(|t| (a.audit.series.tpl_at(t) - 1.0).abs() < 1e-12));
/// # Ok::<(), tpl_alloc::AllocError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Quantified<'c> {
    corr: &'c Correlation,
    alpha: f64,
}

/// The solution of eqs. 26–27.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct QuantifiedBudgets {
    /// a_B = ε_1 (and BPL_t for t < T).
    pub first: f64,
    /// a_B + a_F − α, spent at 1 < t < T.
    pub middle: f64,
    /// a_F = ε_T (and FPL_t for t > 1).
    pub last: f64,
}

impl<'c> Quantified<'c> {
    /// The allocator for target α.
    pub fn new(corr: &'c Correlation, alpha: f64) -> Self {
        Self { corr, alpha }
    }

    /// Solves eqs. 26–27.
    ///
    /// # Errors
    /// Bad α; [`AllocError::Unbounded`] when a side has L(α) = α (then a_B + a_F = α);
    /// [`AllocError::NoMiddleBudget`] when a_B + a_F − α ≤ 0 otherwise (only by rounding, for
    /// a tiny α or a nearly deterministic matrix).
    pub fn solve(&self) -> Result<QuantifiedBudgets> {
        check_target(self.alpha, 1)?;
        self.corr.require_bounded()?;
        let alpha = self.alpha;
        let a_f_of = |a_b: f64| (alpha - self.corr.loss_backward(a_b)).max(0.0);
        // g(a) ≤ 0 ⟺ TPL_1 = L_F(a_F) + a_B ≤ α: the largest such a keeps TPL_1 ≤ α.
        let a_b = largest_where(0.0, alpha, |a| self.corr.loss_forward(a_f_of(a)) + a <= alpha);
        let a_f = a_f_of(a_b);
        // a_B + a_F overflows when both are near the largest double (α ≥ 9e307 with a bounded
        // L): then a_B − (α − a_F), the same number in exact arithmetic, is computed instead,
        // so that the middle budget is not infinite.
        let sum = a_b + a_f;
        let middle = if sum.is_finite() { sum - alpha } else { a_b - (alpha - a_f) };
        if middle <= 0.0 {
            return Err(AllocError::NoMiddleBudget { a_b, a_f, mid: middle, alpha });
        }
        Ok(QuantifiedBudgets { first: a_b, middle, last: a_f })
    }
}

impl Allocator for Quantified<'_> {
    fn name(&self) -> &'static str {
        "quantified"
    }

    fn guarantee(&self) -> LeakageBound {
        LeakageBound { quantity: Quantity::TplEveryStep, bound: self.alpha }
    }

    fn correlation(&self) -> &Correlation {
        self.corr
    }

    fn plan(&self, horizon: usize, _progress: &dyn Fn(usize, usize)) -> Result<Plan> {
        check_target(self.alpha, horizon)?;
        let q = self.solve()?;
        let budgets = match horizon {
            1 => Budgets::Constant { epsilon: self.alpha, steps: 1 },
            _ => Budgets::Ends { first: q.first, middle: q.middle, last: q.last, steps: horizon },
        };
        Ok(Plan { budgets, steady_budget: q.middle, limited_by: None })
    }
}
