//! The supremum of BPL (or FPL) over an unbounded horizon under a constant budget
//! (Theorem 11 and Algorithm 6 of the TKDE paper).

use crate::check::check_epsilon;
use crate::error::Result;
use crate::loss::PiecewiseLoss;
use crate::matrix::TransitionMatrix;

/// lim_{t→∞} BPL_t under ε_t = ε for every t.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum Supremum {
    /// The leakage converges to this value.
    Bounded(f64),
    /// The leakage grows without bound.
    Unbounded,
}

impl Supremum {
    /// The value, or `None` when unbounded.
    pub fn value(self) -> Option<f64> {
        match self {
            Self::Bounded(v) => Some(v),
            Self::Unbounded => None,
        }
    }
}

impl PiecewiseLoss {
    /// Theorem 11 / Algorithm 6: the supremum of BPL_t (or FPL_t) when every step spends ε.
    ///
    /// g(a) = L(a) + ε − a is a maximum of strictly decreasing functions, one per candidate
    /// (q, d), so BPL_t increases to the unique root of g, which is the largest of the
    /// candidates' own roots; each has a closed form
    /// ([`crate::Candidate::fixed_point`]). The leakage is unbounded exactly when some
    /// candidate has d = 0 and q e^ε ≥ 1 (including q = 1, Theorem 7). At q e^ε = 1 the
    /// paper's case list says "bounded" but the fixed point is at infinity; we report
    /// unbounded. O(m) for the m pieces of L.
    ///
    /// ```
    /// use tpl_core::{PiecewiseLoss, Supremum, TransitionMatrix};
    /// let p = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.0, 1.0]])?;
    /// let l = PiecewiseLoss::new(&p);
    /// assert!(matches!(l.supremum(0.1)?, Supremum::Bounded(v) if (v - 0.645906616057681).abs() < 1e-12));
    /// assert_eq!(l.supremum(0.3)?, Supremum::Unbounded); // 0.3 ≥ log(1/0.8)
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    ///
    /// # Errors
    /// [`crate::CoreError::BadEpsilon`] unless ε is finite and > 0 (as [`check_epsilon`]).
    pub fn supremum(&self, eps: f64) -> Result<Supremum> {
        check_epsilon(eps)?;
        if self.is_identity() {
            return Ok(Supremum::Unbounded);
        }
        let mut best = eps; // L ≡ 0: BPL_t = ε
        for c in self.candidates() {
            match c.fixed_point(eps) {
                Some(a) => best = best.max(a),
                None => return Ok(Supremum::Unbounded),
            }
        }
        Ok(Supremum::Bounded(best))
    }
}

/// The supremum of BPL under constant ε for `matrix` (see [`PiecewiseLoss::supremum`]).
///
/// # Errors
/// [`crate::CoreError::BadEpsilon`] unless ε is finite and > 0 (as [`check_epsilon`]).
pub fn supremum(matrix: &TransitionMatrix, eps: f64) -> Result<Supremum> {
    PiecewiseLoss::new(matrix).supremum(eps)
}
