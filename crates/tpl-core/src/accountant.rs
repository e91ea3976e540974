//! A streaming leakage accountant for open-ended releases: feed ε_t as each step is
//! published and read the leakage so far.

use crate::check::is_budget;
use crate::error::{CoreError, Result};
use crate::loss::{LossEvaluator, PiecewiseLoss};
use crate::matrix::TransitionMatrix;
use crate::series::{LeakageSeries, fpl_of};

/// Tracks BPL online (O(log m) per step) and gives FPL/TPL of all steps so far on demand,
/// treating the latest step as the last one (its FPL is then its own ε). FPL of earlier
/// steps can only grow as later steps arrive, so a value read now is a lower bound of the
/// final one; BPL values are final.
///
/// ```
/// use tpl_core::{LeakageAccountant, TransitionMatrix};
/// let p = TransitionMatrix::smoothed_identity(4, 0.1)?;
/// let mut acc = LeakageAccountant::new(Some(&p), Some(&p));
/// let b1 = acc.push(0.5)?;
/// let b2 = acc.push(0.5)?;
/// assert_eq!(b1, 0.5);
/// assert!(b2 > 0.5);
/// assert_eq!(acc.series().unwrap().tpl().len(), 2);
/// # Ok::<(), tpl_core::CoreError>(())
/// ```
#[derive(Debug, Clone)]
pub struct LeakageAccountant {
    backward: Option<PiecewiseLoss>,
    forward: Option<PiecewiseLoss>,
    epsilon: Vec<f64>,
    bpl: Vec<f64>,
}

impl LeakageAccountant {
    /// An accountant for an adversary knowing P_B and/or P_F (`None`: no knowledge).
    pub fn new(backward: Option<&TransitionMatrix>, forward: Option<&TransitionMatrix>) -> Self {
        Self {
            backward: backward.map(PiecewiseLoss::new),
            forward: forward.map(PiecewiseLoss::new),
            epsilon: Vec::new(),
            bpl: Vec::new(),
        }
    }

    /// Records a step that spent ε_t and returns its BPL_t.
    ///
    /// # Errors
    /// [`CoreError::BadBudget`] for a negative or non-finite ε_t (nothing is recorded).
    pub fn push(&mut self, eps: f64) -> Result<f64> {
        if !is_budget(eps) {
            return Err(CoreError::BadBudget { step: self.epsilon.len() + 1, value: eps });
        }
        let value = match (&self.backward, self.bpl.last()) {
            (Some(l), Some(&prev)) => l.loss(prev) + eps,
            _ => eps,
        };
        self.epsilon.push(eps);
        self.bpl.push(value);
        Ok(value)
    }

    /// Steps recorded so far.
    pub fn len(&self) -> usize {
        self.epsilon.len()
    }

    /// True before the first step.
    pub fn is_empty(&self) -> bool {
        self.epsilon.is_empty()
    }

    /// BPL_t of every step so far (final values).
    pub fn bpl(&self) -> &[f64] {
        &self.bpl
    }

    /// The full series as if the latest step were the last, or `None` before any step.
    /// O(t log m): FPL is recomputed backwards from the latest step.
    pub fn series(&self) -> Option<LeakageSeries> {
        if self.epsilon.is_empty() {
            return None;
        }
        let eps = |t| self.epsilon[t];
        let fpl =
            fpl_of(self.forward.as_ref().map(|l| l as &dyn LossEvaluator), self.epsilon.len(), eps, &|_| {});
        Some(LeakageSeries::assemble(self.epsilon.clone(), self.bpl.clone(), fpl))
    }
}
