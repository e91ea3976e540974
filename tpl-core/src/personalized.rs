//! Leakage for a population whose members have different correlations (personalised
//! adversary knowledge; TKDE §3 defines leakage per user i with its own P_i^B, P_i^F, and the
//! release's guarantee is the worst user's).

use crate::check::validate_budgets;
use crate::correlation::Correlation;
use crate::error::{CoreError, Result};
use crate::series::LeakageSeries;

/// Per-user leakage series and the worst case over users at every step.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PersonalizedLeakage {
    /// One series per user, in input order.
    pub users: Vec<LeakageSeries>,
    /// max over users of BPL_t.
    pub bpl: Vec<f64>,
    /// max over users of FPL_t.
    pub fpl: Vec<f64>,
    /// max over users of TPL_t (not BPL + FPL − ε of the maxima: the worst users of the two
    /// sides may differ).
    pub tpl: Vec<f64>,
}

impl PersonalizedLeakage {
    /// Computes every user's series under the same budgets and their maxima.
    ///
    /// ```
    /// use tpl_core::{Correlation, PersonalizedLeakage, TransitionMatrix};
    /// let strong = TransitionMatrix::smoothed_identity(3, 0.01)?;
    /// let weak = TransitionMatrix::smoothed_identity(3, 10.0)?;
    /// let users = [Correlation::new(Some(weak), None)?, Correlation::new(Some(strong), None)?];
    /// let p = PersonalizedLeakage::compute(&users, &[0.1; 20])?;
    /// assert_eq!(p.tpl, p.users[1].tpl()); // the strongly correlated user is the worst
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    ///
    /// # Errors
    /// [`CoreError::NoUsers`], or as [`validate_budgets`].
    pub fn compute(users: &[Correlation], budgets: &[f64]) -> Result<Self> {
        if users.is_empty() {
            return Err(CoreError::NoUsers);
        }
        validate_budgets(budgets)?;
        let steps = budgets.len();
        let series = users.iter().map(|u| LeakageSeries::new(u, budgets)).collect::<Result<Vec<_>>>()?;
        let worst = |pick: fn(&LeakageSeries) -> &[f64]| -> Vec<f64> {
            (0..steps).map(|t| series.iter().map(|s| pick(s)[t]).fold(0.0, f64::max)).collect()
        };
        let (bpl, fpl, tpl) =
            (worst(LeakageSeries::bpl), worst(LeakageSeries::fpl), worst(LeakageSeries::tpl));
        Ok(Self { users: series, bpl, fpl, tpl })
    }

    /// max over users and steps of TPL_t.
    pub fn max_tpl(&self) -> f64 {
        self.tpl.iter().copied().fold(0.0, f64::max)
    }

    /// For every window start, the largest window leakage over users (Theorem 3 per user).
    ///
    /// # Errors
    /// [`CoreError::BadWindow`] unless 1 ≤ w ≤ T.
    pub fn window_leakage(&self, w: usize) -> Result<Vec<f64>> {
        let mut worst: Vec<f64> = Vec::new();
        for s in &self.users {
            let wl = s.window_leakage(w)?;
            if worst.is_empty() {
                worst = wl;
            } else {
                worst.iter_mut().zip(wl).for_each(|(a, b)| *a = a.max(b));
            }
        }
        Ok(worst)
    }
}
