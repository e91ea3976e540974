//! Algorithm 7 of the TKDE paper: one constant budget whose *limit* leakage is the target.

use tpl_core::Supremum;

use crate::allocation::{Allocator, Guarantee, Quantity, check_target};
use crate::correlation::Correlation;
use crate::error::Result;
use crate::search::largest_where;

/// The constant ε with sup_B(ε) + sup_F(ε) − ε = α (TKDE Algorithm 7): TPL stays ≤ α at
/// every step of a stream of any length, including one that never ends.
///
/// h(ε) = sup_B(ε) + sup_F(ε) − ε is increasing: each supremum solves s = L(s) + ε with
/// 0 ≤ L′ ≤ 1, so ds/dε = 1/(1 − L′(s)) ≥ 1 (and h = +∞ once a supremum is unbounded).
/// h(ε) ≥ ε, so the answer lies in (0, α]; we return the largest double with h(ε) ≤ α,
/// found by bisection to adjacent doubles — never above the exact root, so the guarantee
/// holds after rounding. The paper's loop compares h with α for exact equality and may not
/// end; ours always does, in ≤ 64 steps of O(m) each.
///
/// ```
/// use tpl_alloc::{Allocator, Correlation, UpperBound};
/// use tpl_core::TransitionMatrix;
/// let pb = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.2, 0.8]])?;
/// let pf = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.1, 0.9]])?;
/// let corr = Correlation::new(Some(&pb), Some(&pf));
/// let a = UpperBound::new(&corr, 1.0).allocate(30)?;
/// assert!(a.max_tpl <= 1.0 && a.guarantee.holds(&a));
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
    /// Bad α; [`crate::AllocError::Unbounded`] when a side has L(α) = α.
    pub fn epsilon(&self) -> Result<f64> {
        check_target(self.alpha, 1)?;
        self.corr.require_bounded()?;
        let within = |eps: f64| -> bool {
            if eps == 0.0 {
                return true;
            }
            match (self.corr.sup_backward(eps), self.corr.sup_forward(eps)) {
                (Ok(Supremum::Bounded(b)), Ok(Supremum::Bounded(f))) => b + f - eps <= self.alpha,
                _ => false,
            }
        };
        Ok(largest_where(0.0, self.alpha, within))
    }
}

impl Allocator for UpperBound<'_> {
    fn name(&self) -> &'static str {
        "upper-bound"
    }

    fn guarantee(&self) -> Guarantee {
        Guarantee { quantity: Quantity::MaxTpl, bound: self.alpha }
    }

    fn correlation(&self) -> &Correlation {
        self.corr
    }

    fn plan(&self, horizon: usize) -> Result<(Vec<f64>, f64)> {
        check_target(self.alpha, horizon)?;
        let eps = self.epsilon()?;
        Ok((vec![eps; horizon], eps))
    }
}
