//! The adversary's knowledge an allocator plans against: L_B and L_F as piecewise functions.

use tpl_core::{CoreError, LeakageSeries, LossEvaluator, PiecewiseLoss, Supremum, TransitionMatrix};

use crate::error::{AllocError, Result, Side};

/// Horizons up to which [`LeakageSeries::from_matrices`] (what `tpl leakage` audits with)
/// evaluates L by Algorithm 1 rather than by the piecewise function; [`Correlation::series`]
/// does the same so that an allocator's audit is bit for bit the one `tpl leakage` prints
/// (the test `audit_is_the_leakage_series_for_every_horizon` keeps the two in step).
const DIRECT_HORIZON: usize = 2;

/// Backward and forward correlation, each optional (absent: the adversary knows nothing on
/// that side, L ≡ 0 and that side leaks only ε_t).
#[derive(Debug, Clone)]
pub struct Correlation {
    backward: Option<PiecewiseLoss>,
    forward: Option<PiecewiseLoss>,
    matrices: (Option<TransitionMatrix>, Option<TransitionMatrix>),
}

impl Correlation {
    /// Precomputes L_B and L_F (TKDE Algorithms 2 and 4) for the given matrices.
    ///
    /// # Errors
    /// [`tpl_core::CoreError::MatrixSizes`] when both are given over different numbers of
    /// states.
    pub fn new(backward: Option<&TransitionMatrix>, forward: Option<&TransitionMatrix>) -> Result<Self> {
        if let (Some(b), Some(f)) = (backward, forward)
            && b.n() != f.n()
        {
            return Err(CoreError::MatrixSizes { backward: b.n(), forward: f.n() }.into());
        }
        Ok(Self {
            backward: backward.map(PiecewiseLoss::new),
            forward: forward.map(PiecewiseLoss::new),
            matrices: (backward.cloned(), forward.cloned()),
        })
    }

    /// L_B(a) (0 without backward knowledge).
    pub fn loss_backward(&self, a: f64) -> f64 {
        self.backward.as_ref().map_or(0.0, |l| l.loss(a))
    }

    /// L_F(a) (0 without forward knowledge).
    pub fn loss_forward(&self, a: f64) -> f64 {
        self.forward.as_ref().map_or(0.0, |l| l.loss(a))
    }

    /// Supremum of BPL under constant ε > 0 (ε itself without backward knowledge).
    pub fn sup_backward(&self, eps: f64) -> Result<Supremum> {
        Self::sup(self.backward.as_ref(), eps)
    }

    /// Supremum of FPL under constant ε > 0 (ε itself without forward knowledge).
    pub fn sup_forward(&self, eps: f64) -> Result<Supremum> {
        Self::sup(self.forward.as_ref(), eps)
    }

    fn sup(loss: Option<&PiecewiseLoss>, eps: f64) -> Result<Supremum> {
        match loss {
            Some(l) => Ok(l.supremum(eps)?),
            None => Ok(Supremum::Bounded(eps)),
        }
    }

    /// The leakage series of a budget sequence (the audit of TKDE eqs. 11–15), identical to
    /// [`LeakageSeries::from_matrices`] on the same matrices, as `tpl leakage` computes it.
    ///
    /// # Errors
    /// As [`tpl_core::validate_budgets`]; [`tpl_core::CoreError::Overflow`] for budgets near
    /// the largest double.
    pub fn series(&self, budgets: &[f64]) -> Result<LeakageSeries> {
        if budgets.len() <= DIRECT_HORIZON {
            let (pb, pf) = &self.matrices;
            return Ok(LeakageSeries::from_matrices(pb.as_ref(), pf.as_ref(), budgets)?);
        }
        fn as_dyn(l: &PiecewiseLoss) -> &dyn LossEvaluator {
            l
        }
        Ok(LeakageSeries::compute(
            self.backward.as_ref().map(as_dyn),
            self.forward.as_ref().map(as_dyn),
            budgets,
        )?)
    }

    /// Fails when a side has L(α) = α (Theorem 7): then no constant ε > 0 keeps that side's
    /// leakage bounded over an unbounded stream.
    pub(crate) fn require_bounded(&self) -> Result<()> {
        for (side, loss) in [(Side::Backward, &self.backward), (Side::Forward, &self.forward)] {
            if loss.as_ref().is_some_and(PiecewiseLoss::is_identity) {
                return Err(AllocError::Unbounded { side });
            }
        }
        Ok(())
    }
}
