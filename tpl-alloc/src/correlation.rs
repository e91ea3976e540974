//! The adversary's knowledge an allocator plans against: L_B and L_F as piecewise functions.

use tpl_core::{
    Budgets, CompactSeries, CoreError, LeakageAccountant, LossEvaluator, PiecewiseLoss, Supremum,
    TransitionMatrix,
};

use crate::allocation::Cap;

use crate::error::{AllocError, Result, Side};

/// Horizons up to which [`CompactSeries::from_matrices`] (what `tpl leakage` audits with)
/// evaluates L by Algorithm 1 rather than by the piecewise function; [`Correlation::series`]
/// does the same so that an allocator's audit is bit for bit the one `tpl leakage` prints
/// (the test `audit_is_the_leakage_series_for_every_horizon` keeps the two in step).
pub(crate) const DIRECT_HORIZON: usize = 2;

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
        Self::check_sizes(backward, forward)?;
        Ok(Self {
            backward: backward.map(PiecewiseLoss::new),
            forward: forward.map(PiecewiseLoss::new),
            matrices: (backward.cloned(), forward.cloned()),
        })
    }

    /// The correlation of the given matrices with their loss functions computed beforehand
    /// (each [`PiecewiseLoss::new`] of its matrix, or rebuilt by
    /// [`PiecewiseLoss::from_candidates`] from what an earlier run kept): no set-up is done.
    /// The caller answers for each loss being its matrix's.
    ///
    /// # Errors
    /// As [`Correlation::new`].
    pub fn with_losses(
        backward: Option<(&TransitionMatrix, PiecewiseLoss)>,
        forward: Option<(&TransitionMatrix, PiecewiseLoss)>,
    ) -> Result<Self> {
        Self::check_sizes(backward.as_ref().map(|b| b.0), forward.as_ref().map(|f| f.0))?;
        let matrices = (backward.as_ref().map(|b| b.0.clone()), forward.as_ref().map(|f| f.0.clone()));
        Ok(Self { backward: backward.map(|b| b.1), forward: forward.map(|f| f.1), matrices })
    }

    /// Checks that matrices given on both sides have the same number of states, without
    /// computing anything else.
    ///
    /// # Errors
    /// [`tpl_core::CoreError::MatrixSizes`] otherwise.
    pub fn check_sizes(
        backward: Option<&TransitionMatrix>,
        forward: Option<&TransitionMatrix>,
    ) -> Result<()> {
        match (backward, forward) {
            (Some(b), Some(f)) if b.n() != f.n() => {
                Err(CoreError::MatrixSizes { backward: b.n(), forward: f.n() }.into())
            }
            _ => Ok(()),
        }
    }

    /// The loss functions L_B and L_F, where known (what a durable stream keeps).
    pub fn losses(&self) -> (Option<&PiecewiseLoss>, Option<&PiecewiseLoss>) {
        (self.backward.as_ref(), self.forward.as_ref())
    }

    /// An online accountant with these evaluators: from T > 2 steps on, its values are
    /// [`Correlation::series`]'s bit for bit ([`crate::StreamAudit`] covers every T).
    pub fn accountant(&self) -> LeakageAccountant {
        LeakageAccountant::from_losses(self.backward.clone(), self.forward.clone())
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
    /// [`CompactSeries::from_matrices`] (and so to `tpl_core::LeakageSeries::from_matrices`)
    /// on the same matrices, as `tpl leakage` computes it.
    ///
    /// # Errors
    /// As [`tpl_core::validate_budgets`]; [`tpl_core::CoreError::Overflow`] for budgets near
    /// the largest double.
    pub fn series(&self, budgets: Budgets) -> Result<CompactSeries> {
        self.series_with_progress(budgets, &|_, _| {})
    }

    /// As [`Correlation::series`], reporting progress as
    /// [`CompactSeries::compute_with_progress`] does.
    ///
    /// # Errors
    /// As [`Correlation::series`].
    pub fn series_with_progress(
        &self,
        budgets: Budgets,
        progress: &dyn Fn(usize, usize),
    ) -> Result<CompactSeries> {
        if budgets.len() <= DIRECT_HORIZON {
            let (pb, pf) = &self.matrices;
            return Ok(CompactSeries::from_matrices_with_progress(
                pb.as_ref(),
                pf.as_ref(),
                budgets,
                progress,
            )?);
        }
        fn as_dyn(l: &PiecewiseLoss) -> &dyn LossEvaluator {
            l
        }
        Ok(CompactSeries::compute_with_progress(
            self.backward.as_ref().map(as_dyn),
            self.forward.as_ref().map(as_dyn),
            budgets,
            progress,
        )?)
    }

    /// The cap on constant budgets of `side` (Theorem 11): the candidate (q, d = 0) of its L
    /// with the largest q < 1 makes the leakage unbounded from ε = log(1/q) on; `None` when
    /// that side is bounded for every ε (or absent, or L(α) = α, which diverges for all ε).
    pub(crate) fn cap(&self, side: Side) -> Option<Cap> {
        let loss = match side {
            Side::Backward => self.backward.as_ref(),
            Side::Forward => self.forward.as_ref(),
        }?;
        if loss.is_identity() {
            return None;
        }
        let q = loss
            .candidates()
            .iter()
            .filter(|c| c.d == 0.0 && c.q() < 1.0)
            .map(|c| c.q())
            .fold(None, |best: Option<f64>, q| Some(best.map_or(q, |b| b.max(q))))?;
        Some(Cap { side, q, epsilon: -q.ln() })
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
