//! The audit of an open-ended stream, one step at a time ([`docs/model.md`](tpl_core::guide::model)
//! §8): what [`crate::audit`] reports for the budgets so far, without auditing them all again.

use tpl_core::{Budgets, Correlation, LeakageAccountant};

use crate::allocation::audit;
use crate::error::Result;
use crate::sides::DIRECT_HORIZON;

/// The realised leakage of the budgets recorded so far — max TPL and the largest leakage of
/// a window of min(w, T) steps — equal bit for bit to [`crate::audit`] of those budgets
/// (`tpl leakage`), updated in the time of the FPL suffix a new step changes
/// ([`LeakageAccountant`]) rather than of the whole stream.
///
/// ```
/// use tpl_alloc::{StreamAudit, audit};
/// use tpl_core::{Budgets, Correlation, TransitionMatrix};
/// let p = TransitionMatrix::smoothed_identity(4, 0.1)?;
/// let mut online = StreamAudit::new(Correlation::new(Some(p.clone()), Some(p.clone()))?, 3)?;
/// let spent = [0.25, 0.5, 0.125, 0.25];
/// for &e in &spent {
///     online.push(e)?;
/// }
/// let batch = audit(online.correlation(), Budgets::PerStep(spent.to_vec()), Some(3))?;
/// assert_eq!(online.leakage()?, Some((batch.max_tpl, batch.max_window_leakage.unwrap())));
/// # Ok::<(), tpl_alloc::AllocError>(())
/// ```
#[derive(Debug, Clone)]
pub struct StreamAudit {
    corr: Correlation,
    window: usize,
    acc: LeakageAccountant,
}

impl StreamAudit {
    /// An audit of no step yet, against `corr`, with windows of `window` steps.
    ///
    /// # Errors
    /// [`tpl_core::CoreError::BadWindow`] for a window of 0 steps.
    pub fn new(corr: Correlation, window: usize) -> Result<Self> {
        let acc = LeakageAccountant::new(&corr).with_window(window)?;
        Ok(Self { corr, window, acc })
    }

    /// The correlation audited against.
    pub fn correlation(&self) -> &Correlation {
        &self.corr
    }

    /// Steps recorded.
    pub fn len(&self) -> usize {
        self.acc.len()
    }

    /// True before the first step.
    pub fn is_empty(&self) -> bool {
        self.acc.is_empty()
    }

    /// Records a step that spent (effective budget) ε_t.
    ///
    /// # Errors
    /// A budget that is not finite and ≥ 0, a leakage beyond the largest double; nothing is
    /// recorded then.
    pub fn push(&mut self, eps: f64) -> Result<()> {
        self.acc.push(eps)?;
        Ok(())
    }

    /// Records steps that spent (effective budgets) `budgets`, in order: the same audit, bit
    /// for bit, as pushing each, in one pass over them ([`LeakageAccountant::extend`]).
    ///
    /// # Errors
    /// As [`StreamAudit::push`] at the first step that fails; the steps before it are recorded.
    pub fn extend(&mut self, budgets: &[f64]) -> Result<()> {
        self.acc.extend(budgets)?;
        Ok(())
    }

    /// The steps recorded so far, as bytes [`StreamAudit::restored`] reads back
    /// ([`LeakageAccountant::history`]).
    pub fn history(&self) -> Vec<u8> {
        self.acc.history()
    }

    /// This audit (which has recorded no step) with the steps of `history`, written by an
    /// audit of the same correlation and window: it goes on bit for bit as that one would
    /// have. `None` for bytes that are not such a history ([`LeakageAccountant::restored`]).
    pub fn restored(&self, history: &[u8]) -> Option<Self> {
        let acc = self.acc.restored(history)?;
        Some(Self { corr: self.corr.clone(), window: self.window, acc })
    }

    /// The max TPL the steps so far would reach if the next step spent `eps`.
    ///
    /// # Errors
    /// As [`StreamAudit::push`].
    pub fn max_tpl_with(&self, eps: f64) -> Result<f64> {
        if self.acc.len() < DIRECT_HORIZON {
            return Ok(audit(&self.corr, Budgets::PerStep(self.budgets_with(Some(eps))), None)?.max_tpl);
        }
        Ok(self.acc.max_tpl_with(eps)?)
    }

    /// (max TPL, largest leakage of a window of min(w, T) steps) of the steps so far; `None`
    /// before the first.
    ///
    /// # Errors
    /// A window leakage beyond the largest double.
    pub fn leakage(&self) -> Result<Option<(f64, f64)>> {
        let len = self.acc.len();
        if len == 0 {
            return Ok(None);
        }
        if len <= DIRECT_HORIZON {
            // Few steps: `audit` evaluates L by Algorithm 1; its numbers are the reference.
            let a = audit(&self.corr, Budgets::PerStep(self.budgets_with(None)), Some(self.window.min(len)))?;
            return Ok(Some((a.max_tpl, a.max_window_leakage.unwrap_or(a.max_tpl))));
        }
        let tpl = self.acc.max_tpl().unwrap_or(0.0);
        Ok(Some((tpl, self.acc.max_window_leakage()?.unwrap_or(tpl))))
    }

    /// The recorded budgets, and `next` after them (only used for the first few steps).
    fn budgets_with(&self, next: Option<f64>) -> Vec<f64> {
        let mut out = self.acc.budgets().to_vec();
        out.extend(next);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tpl_core::TransitionMatrix;
    use tpl_core::test_util::{both_sides, correlation};

    #[test]
    fn a_restored_audit_goes_on_as_the_one_that_wrote_its_history() {
        let pf = TransitionMatrix::smoothed_identity(3, 0.2).unwrap();
        let corr = both_sides(&pf);
        let spent: Vec<f64> = (0..30).map(|t| [0.3, 0.0, 0.05, 0.2][t % 4]).collect();
        let mut whole = StreamAudit::new(corr.clone(), 5).unwrap();
        let mut first = StreamAudit::new(corr.clone(), 5).unwrap();
        for (t, &e) in spent.iter().enumerate() {
            whole.push(e).unwrap();
            if t < 12 {
                first.push(e).unwrap();
            }
        }
        let mut resumed = StreamAudit::new(corr.clone(), 5).unwrap().restored(&first.history()).unwrap();
        assert_eq!(resumed.len(), 12);
        spent[12..].iter().for_each(|&e| resumed.push(e).unwrap());
        assert_eq!(resumed.leakage().unwrap(), whole.leakage().unwrap());
        assert_eq!(resumed.history(), whole.history());
        // An audit of another window: refused.
        assert!(StreamAudit::new(corr, 4).unwrap().restored(&first.history()).is_none());
    }

    #[test]
    fn every_prefix_and_every_peek_is_the_batch_audit() {
        let pb = TransitionMatrix::new(vec![vec![0.7, 0.2, 0.1], vec![0.1, 0.8, 0.1], vec![0.3, 0.3, 0.4]])
            .unwrap();
        let pf = TransitionMatrix::smoothed_identity(3, 0.2).unwrap();
        let spent: Vec<f64> = (0..40).map(|t| [0.3, 0.0, 0.05, 0.2][t % 4] + t as f64 * 1e-3).collect();
        for (b, f) in [(Some(&pb), Some(&pf)), (Some(&pb), None), (None, Some(&pf))] {
            let corr = correlation(b, f);
            let mut online = StreamAudit::new(corr.clone(), 5).unwrap();
            assert_eq!(online.leakage().unwrap(), None);
            for t in 0..spent.len() {
                let batch = audit(&corr, Budgets::PerStep(spent[..=t].to_vec()), Some(5.min(t + 1))).unwrap();
                assert_eq!(
                    online.max_tpl_with(spent[t]).unwrap().to_bits(),
                    batch.max_tpl.to_bits(),
                    "t {t}"
                );
                online.push(spent[t]).unwrap();
                let (tpl, window) = online.leakage().unwrap().unwrap();
                assert_eq!(tpl.to_bits(), batch.max_tpl.to_bits(), "t {t}");
                assert_eq!(window.to_bits(), batch.max_window_leakage.unwrap().to_bits(), "t {t}");
            }
        }
    }
}
