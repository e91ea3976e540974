//! What the allocators read of the adversary's [`Correlation`]: L_B and L_F as numbers (0 on
//! a side the adversary does not know), the cap Theorem 11 puts on constant budgets, and
//! the check that a side's leakage can be bounded at all.

use tpl_core::{Correlation, LossEvaluator, PiecewiseLoss};

use crate::allocation::Cap;
use crate::error::{AllocError, Result, Side};

/// Horizons up to which [`tpl_core::CompactSeries::new`] (what `tpl leakage` audits with)
/// evaluates L by Algorithm 1 rather than by the piecewise function: [`crate::StreamAudit`]
/// audits its first steps in full so that its numbers are bit for bit the same (the test
/// `audit_is_the_leakage_series_for_every_horizon` keeps the two in step).
pub(crate) const DIRECT_HORIZON: usize = 2;

/// The allocators' reading of a [`Correlation`].
pub(crate) trait Sides {
    /// L_B(a) (0 without backward knowledge).
    fn loss_backward(&self, a: f64) -> f64;
    /// L_F(a) (0 without forward knowledge).
    fn loss_forward(&self, a: f64) -> f64;
    /// The cap on constant budgets of `side` (Theorem 11): the candidate (q, d = 0) of its L
    /// with the largest q < 1 makes the leakage unbounded from ε = log(1/q) on; `None` when
    /// that side is bounded for every ε (or absent, or L(α) = α, which diverges for all ε).
    fn cap(&self, side: Side) -> Option<Cap>;
    /// Fails when a side has L(α) = α (Theorem 7): then no constant ε > 0 keeps that side's
    /// leakage bounded over an unbounded stream.
    fn require_bounded(&self) -> Result<()>;
}

impl Sides for Correlation {
    fn loss_backward(&self, a: f64) -> f64 {
        self.backward_loss().map_or(0.0, |l| l.loss(a))
    }

    fn loss_forward(&self, a: f64) -> f64 {
        self.forward_loss().map_or(0.0, |l| l.loss(a))
    }

    fn cap(&self, side: Side) -> Option<Cap> {
        let loss = match side {
            Side::Backward => self.backward_loss(),
            Side::Forward => self.forward_loss(),
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

    fn require_bounded(&self) -> Result<()> {
        for (side, loss) in [(Side::Backward, self.backward_loss()), (Side::Forward, self.forward_loss())] {
            if loss.is_some_and(PiecewiseLoss::is_identity) {
                return Err(AllocError::Unbounded { side });
            }
        }
        Ok(())
    }
}
