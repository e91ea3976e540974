//! What an adversary knows of how one person's value moves over time: the backward and
//! forward transition matrices P_B and P_F of the TKDE paper (§3.1), either optional, with
//! their loss functions L_B and L_F (Algorithms 2 and 4), built once, when first asked for.

use std::sync::{Arc, OnceLock};

use crate::error::{CoreError, Result};
use crate::loss::PiecewiseLoss;
use crate::matrix::{ROW_SUM_TOLERANCE, TransitionMatrix};
use crate::supremum::Supremum;

/// The adversary's temporal correlation: P_B (row j: the value at t − 1 of a person whose
/// value at t is j) and P_F (row i: the value at t + 1 of a person at i now), each optional.
/// A side that is absent is one the adversary knows nothing of: its loss is L ≡ 0, and
/// that side of the leakage is ε_t alone (TKDE eqs. 12–13).
///
/// This is the one type by which the workspace takes the pair: leakage series, the
/// allocators, the accountant, PBA's correlation pool, a durable stream's parameters and the
/// estimators of `tpl-postprocess` all read it. The two matrices always describe the same
/// states. L_B and L_F are computed on first use and kept, and clones share them (a clone
/// is two reference counts), so that every reader of one correlation shares one set-up, the
/// O(n³) part of the work ([docs/model.md](crate::guide::model)).
///
/// `Correlation` is `Send + Sync`: threads that ask for a loss function at once wait for one
/// computation of it.
///
/// ```
/// use tpl_core::{Correlation, LeakageSeries, TransitionMatrix};
/// let p = TransitionMatrix::smoothed_identity(3, 0.1)?;
/// let both = Correlation::new(Some(p.clone()), Some(p))?;
/// assert_eq!(both.states(), Some(3));
/// let s = LeakageSeries::new(&both, &[0.1; 10])?;
/// assert!(s.max_tpl() > 0.1);
/// // Nobody knows anything: every step leaks its own ε.
/// let s = LeakageSeries::new(&Correlation::none(), &[0.1; 10])?;
/// assert_eq!(s.max_tpl(), 0.1);
/// // Matrices over different states are refused.
/// let (a, b) = (TransitionMatrix::identity(2), TransitionMatrix::identity(3));
/// assert!(Correlation::new(Some(a), Some(b)).is_err());
/// # Ok::<(), tpl_core::CoreError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Correlation {
    backward: Option<Arc<Known>>,
    forward: Option<Arc<Known>>,
}

/// One side the adversary knows: its matrix and, once computed, its loss function.
#[derive(Debug)]
struct Known {
    matrix: TransitionMatrix,
    loss: OnceLock<PiecewiseLoss>,
}

impl Known {
    fn new(matrix: TransitionMatrix) -> Arc<Self> {
        Arc::new(Self { matrix, loss: OnceLock::new() })
    }

    fn loss(&self, progress: &dyn Fn(usize, usize)) -> &PiecewiseLoss {
        self.loss.get_or_init(|| PiecewiseLoss::with_progress(&self.matrix, progress))
    }
}

/// Two correlations are equal when their matrices are: a loss function is a function of its
/// matrix, computed or not.
impl PartialEq for Correlation {
    fn eq(&self, other: &Self) -> bool {
        self.backward() == other.backward() && self.forward() == other.forward()
    }
}

/// The progress hook that reports nothing.
fn no_progress(_done: usize, _total: usize) {}

impl Correlation {
    /// The adversary who knows neither matrix (every step leaks its own ε).
    pub const fn none() -> Self {
        Self { backward: None, forward: None }
    }

    /// The correlation of P_B = `backward` and P_F = `forward` (either may be `None`).
    ///
    /// # Errors
    /// [`CoreError::MatrixSizes`] when both are given over different numbers of states.
    pub fn new(backward: Option<TransitionMatrix>, forward: Option<TransitionMatrix>) -> Result<Self> {
        if let (Some(b), Some(f)) = (&backward, &forward)
            && b.n() != f.n()
        {
            return Err(CoreError::MatrixSizes { backward: b.n(), forward: f.n() });
        }
        Ok(Self { backward: backward.map(Known::new), forward: forward.map(Known::new) })
    }

    /// This correlation with its loss functions given rather than computed: each one
    /// [`PiecewiseLoss::new`] of its side's matrix, or rebuilt with
    /// [`PiecewiseLoss::from_candidates`] from what an earlier run kept (a durable stream
    /// keeps them). The caller answers for each loss being its matrix's.
    ///
    /// # Errors
    /// [`CoreError::LossWithoutMatrix`] for a loss given for a side without a matrix.
    pub fn with_losses(
        self,
        backward: Option<PiecewiseLoss>,
        forward: Option<PiecewiseLoss>,
    ) -> Result<Self> {
        for (side, known, loss) in
            [("backward", &self.backward, backward), ("forward", &self.forward, forward)]
        {
            match (known.as_ref(), loss) {
                // Clones sharing the side get it too. One computed already is kept: the same
                // function, by the caller's word.
                (Some(k), Some(l)) => drop(k.loss.set(l)),
                (None, Some(_)) => return Err(CoreError::LossWithoutMatrix { side }),
                (_, None) => {}
            }
        }
        Ok(self)
    }

    /// P_B, if the adversary knows it.
    pub fn backward(&self) -> Option<&TransitionMatrix> {
        self.backward.as_ref().map(|k| &k.matrix)
    }

    /// P_F, if the adversary knows it.
    pub fn forward(&self) -> Option<&TransitionMatrix> {
        self.forward.as_ref().map(|k| &k.matrix)
    }

    /// The number of states n of the matrices, or `None` without any.
    pub fn states(&self) -> Option<usize> {
        self.backward().or(self.forward()).map(TransitionMatrix::n)
    }

    /// Whether the adversary knows neither matrix.
    pub fn is_none(&self) -> bool {
        self.backward.is_none() && self.forward.is_none()
    }

    /// L_B, computed on the first call (TKDE Algorithm 4), or `None` without P_B.
    pub fn backward_loss(&self) -> Option<&PiecewiseLoss> {
        self.backward.as_ref().map(|k| k.loss(&no_progress))
    }

    /// L_F, computed on the first call, or `None` without P_F.
    pub fn forward_loss(&self) -> Option<&PiecewiseLoss> {
        self.forward.as_ref().map(|k| k.loss(&no_progress))
    }

    /// (L_B, L_F), computing those not yet computed and calling `progress(done, n)` after
    /// each row of pairs scanned ([`PiecewiseLoss::with_progress`]: minutes at n = 3000).
    pub fn losses_with_progress(
        &self,
        progress: &dyn Fn(usize, usize),
    ) -> (Option<&PiecewiseLoss>, Option<&PiecewiseLoss>) {
        (self.backward.as_ref().map(|k| k.loss(progress)), self.forward.as_ref().map(|k| k.loss(progress)))
    }

    /// Whether some known matrix has two rows that differ by more than
    /// [`ROW_SUM_TOLERANCE`] in some entry: by Theorem 6 of the TKDE paper, exactly when
    /// its L(α) > 0 for α > 0, so that the releases leak more than their ε. Needs no loss
    /// function.
    ///
    /// ```
    /// use tpl_core::{Correlation, TransitionMatrix};
    /// let uniform = TransitionMatrix::new(vec![vec![0.5, 0.5], vec![0.5, 0.5]])?;
    /// assert!(!Correlation::new(Some(uniform), None)?.is_informative());
    /// let sticky = TransitionMatrix::smoothed_identity(2, 1.0)?;
    /// assert!(Correlation::new(None, Some(sticky))?.is_informative());
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    pub fn is_informative(&self) -> bool {
        fn rows_differ(p: &TransitionMatrix) -> bool {
            let first = p.row(0);
            p.rows().any(|r| r.iter().zip(first).any(|(a, b)| (a - b).abs() > ROW_SUM_TOLERANCE))
        }
        self.backward().is_some_and(rows_differ) || self.forward().is_some_and(rows_differ)
    }

    /// The supremum of BPL under a constant ε > 0 (Theorem 11): ε itself without P_B.
    ///
    /// # Errors
    /// [`CoreError::BadEpsilon`] unless ε is finite and > 0.
    pub fn backward_supremum(&self, eps: f64) -> Result<Supremum> {
        supremum_of(self.backward_loss(), eps)
    }

    /// The supremum of FPL under a constant ε > 0: ε itself without P_F.
    ///
    /// # Errors
    /// As [`Correlation::backward_supremum`].
    pub fn forward_supremum(&self, eps: f64) -> Result<Supremum> {
        supremum_of(self.forward_loss(), eps)
    }
}

/// The supremum of one side: Theorem 11 with its loss, ε without (L ≡ 0).
fn supremum_of(loss: Option<&PiecewiseLoss>, eps: f64) -> Result<Supremum> {
    match loss {
        Some(l) => l.supremum(eps),
        None => {
            crate::check::check_epsilon(eps)?;
            Ok(Supremum::Bounded(eps))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn losses_are_computed_once_and_shared_by_clones() {
        let p = TransitionMatrix::smoothed_identity(4, 0.5).unwrap();
        let c = Correlation::new(Some(p.clone()), None).unwrap();
        let before = c.clone();
        let first: *const PiecewiseLoss = c.backward_loss().unwrap();
        let again: *const PiecewiseLoss = c.backward_loss().unwrap();
        assert_eq!(first, again, "the second call reuses the first's set-up");
        let shared: *const PiecewiseLoss = before.backward_loss().unwrap();
        assert_eq!(first, shared, "a clone made before the set-up shares it");
        assert_eq!(c.forward_loss().map(|_| ()), None);
        assert_eq!(before, Correlation::new(Some(p), None).unwrap(), "equality ignores the set-up");
        assert!(std::mem::size_of::<Correlation>() <= 16, "two reference counts");
    }

    #[test]
    fn given_losses_stand_in_for_computed_ones() {
        let p = TransitionMatrix::smoothed_identity(3, 0.2).unwrap();
        let loss = PiecewiseLoss::new(&p);
        let c = Correlation::new(None, Some(p)).unwrap().with_losses(None, Some(loss.clone())).unwrap();
        assert_eq!(c.forward_loss().unwrap().candidates(), loss.candidates());
        let refused = Correlation::none().with_losses(Some(loss), None);
        assert_eq!(refused.unwrap_err(), CoreError::LossWithoutMatrix { side: "backward" });
    }

    #[test]
    fn an_absent_side_is_bounded_by_epsilon_and_checks_it() {
        let c = Correlation::none();
        assert_eq!(c.backward_supremum(0.3).unwrap(), Supremum::Bounded(0.3));
        assert!(c.forward_supremum(-1.0).is_err());
        assert!(c.is_none() && !c.is_informative() && c.states().is_none());
    }
}
