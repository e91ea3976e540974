//! Backward, forward and temporal privacy leakage over a horizon (TKDE §3, Eqs. (11)–(15)).

use crate::error::{CoreError, Result};
use crate::loss::{Loss, LossEvaluator};
use crate::matrix::TransitionMatrix;
use crate::window;

/// Checks a budget sequence: non-empty, every ε_t finite and ≥ 0 (ε_t = 0 is a step that
/// publishes nothing).
///
/// # Errors
/// [`CoreError::EmptyHorizon`] or [`CoreError::BadBudget`] naming the 1-based step.
pub fn validate_budgets(budgets: &[f64]) -> Result<()> {
    if budgets.is_empty() {
        return Err(CoreError::EmptyHorizon);
    }
    match budgets.iter().position(|e| !(e.is_finite() && *e >= 0.0)) {
        Some(i) => Err(CoreError::BadBudget { step: i + 1, value: budgets[i] }),
        None => Ok(()),
    }
}

/// BPL_1 = ε_1, BPL_t = L_B(BPL_{t−1}) + ε_t (TKDE eq. (13)); with no backward knowledge
/// (`None`) BPL_t = ε_t. Budgets must have passed [`validate_budgets`].
pub fn bpl_series(backward: Option<&dyn LossEvaluator>, budgets: &[f64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(budgets.len());
    let mut prev = 0.0;
    for &eps in budgets {
        let value = match (backward, out.is_empty()) {
            (Some(l), false) => l.loss(prev) + eps,
            _ => eps,
        };
        out.push(value);
        prev = value;
    }
    out
}

/// FPL_T = ε_T, FPL_t = L_F(FPL_{t+1}) + ε_t (TKDE eq. (15)); with no forward knowledge
/// FPL_t = ε_t. Budgets must have passed [`validate_budgets`].
pub fn fpl_series(forward: Option<&dyn LossEvaluator>, budgets: &[f64]) -> Vec<f64> {
    let mut out = budgets.to_vec();
    if let Some(l) = forward {
        for t in (0..budgets.len().saturating_sub(1)).rev() {
            out[t] = l.loss(out[t + 1]) + budgets[t];
        }
    }
    out
}

/// The leakage of a release with budgets ε_1..ε_T against an adversary who knows P_B
/// and/or P_F: BPL, FPL and TPL_t = BPL_t + FPL_t − ε_t (TKDE eq. (11)).
///
/// ```
/// use tpl_core::{LeakageSeries, TransitionMatrix};
/// let p = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.0, 1.0]])?;
/// let s = LeakageSeries::from_matrices(Some(&p), Some(&p), &[0.1; 10])?;
/// assert_eq!(s.bpl[0], 0.1);
/// assert_eq!(s.fpl[9], 0.1);
/// assert!(s.max_tpl() > 0.1 && s.max_tpl() < 1.0);
/// # Ok::<(), tpl_core::CoreError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct LeakageSeries {
    /// The budgets ε_t audited.
    pub epsilon: Vec<f64>,
    /// Backward privacy leakage BPL_t.
    pub bpl: Vec<f64>,
    /// Forward privacy leakage FPL_t.
    pub fpl: Vec<f64>,
    /// Temporal privacy leakage TPL_t.
    pub tpl: Vec<f64>,
}

impl LeakageSeries {
    /// The series for any evaluators of L_B and L_F (`None`: no knowledge on that side).
    ///
    /// # Errors
    /// As [`validate_budgets`]; [`CoreError::Overflow`] when a value exceeds the largest
    /// double (only for budgets near 1e308).
    pub fn compute(
        backward: Option<&dyn LossEvaluator>,
        forward: Option<&dyn LossEvaluator>,
        budgets: &[f64],
    ) -> Result<Self> {
        validate_budgets(budgets)?;
        let series =
            Self::assemble(budgets.to_vec(), bpl_series(backward, budgets), fpl_series(forward, budgets));
        match (0..series.len())
            .find(|&t| !(series.bpl[t].is_finite() && series.fpl[t].is_finite() && series.tpl[t].is_finite()))
        {
            Some(t) => Err(CoreError::Overflow { step: t + 1 }),
            None => Ok(series),
        }
    }

    /// The series straight from matrices, with the evaluator [`Loss::new`] picks for T steps.
    ///
    /// # Errors
    /// As [`validate_budgets`].
    pub fn from_matrices(
        backward: Option<&TransitionMatrix>,
        forward: Option<&TransitionMatrix>,
        budgets: &[f64],
    ) -> Result<Self> {
        validate_budgets(budgets)?;
        let steps = budgets.len();
        let lb = backward.map(|m| Loss::new(m, steps));
        let lf = forward.map(|m| Loss::new(m, steps));
        Self::compute(
            lb.as_ref().map(|l| l as &dyn LossEvaluator),
            lf.as_ref().map(|l| l as &dyn LossEvaluator),
            budgets,
        )
    }

    pub(crate) fn assemble(epsilon: Vec<f64>, bpl: Vec<f64>, fpl: Vec<f64>) -> Self {
        // BPL + (FPL − ε): the bracket is FPL's own leakage beyond step t, so no partial sum
        // exceeds the result (BPL + FPL first can overflow where TPL does not).
        let tpl = (0..epsilon.len()).map(|t| bpl[t] + (fpl[t] - epsilon[t])).collect();
        Self { epsilon, bpl, fpl, tpl }
    }

    /// The horizon T.
    pub fn len(&self) -> usize {
        self.epsilon.len()
    }

    /// Always false: a series has at least one step.
    pub fn is_empty(&self) -> bool {
        self.epsilon.is_empty()
    }

    /// max_t TPL_t: the α of α-DP_T the release achieves (TKDE Definition 5).
    pub fn max_tpl(&self) -> f64 {
        self.tpl.iter().copied().fold(0.0, f64::max)
    }

    /// Leakage of every window of `w` consecutive steps (Theorem 3); see
    /// [`window::window_leakage`].
    ///
    /// # Errors
    /// [`CoreError::BadWindow`] unless 1 ≤ w ≤ T.
    pub fn window_leakage(&self, w: usize) -> Result<Vec<f64>> {
        window::window_leakage(self, w)
    }

    /// Leakage of the whole horizon, Σ ε_t: user-level privacy is unaffected by temporal
    /// correlation (Theorem 3 with the window covering every step).
    pub fn horizon_leakage(&self) -> f64 {
        window::outward_sum(&self.epsilon)
    }
}
