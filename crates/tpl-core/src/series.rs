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
    bpl_of(backward, budgets.len(), |t| budgets[t])
}

/// [`bpl_series`] for `len` budgets given by `eps(t)`, 0-based.
fn bpl_of(backward: Option<&dyn LossEvaluator>, len: usize, eps: impl Fn(usize) -> f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(len);
    let mut prev = 0.0;
    for t in 0..len {
        let value = match (backward, out.is_empty()) {
            (Some(l), false) => l.loss(prev) + eps(t),
            _ => eps(t),
        };
        out.push(value);
        prev = value;
    }
    out
}

/// FPL_T = ε_T, FPL_t = L_F(FPL_{t+1}) + ε_t (TKDE eq. (15)); with no forward knowledge
/// FPL_t = ε_t. Budgets must have passed [`validate_budgets`].
pub fn fpl_series(forward: Option<&dyn LossEvaluator>, budgets: &[f64]) -> Vec<f64> {
    fpl_of(forward, budgets.len(), |t| budgets[t])
}

/// [`fpl_series`] for `len` budgets given by `eps(t)`, 0-based.
fn fpl_of(forward: Option<&dyn LossEvaluator>, len: usize, eps: impl Fn(usize) -> f64) -> Vec<f64> {
    let mut out: Vec<f64> = (0..len).map(&eps).collect();
    if let Some(l) = forward {
        for t in (0..len.saturating_sub(1)).rev() {
            out[t] = l.loss(out[t + 1]) + eps(t);
        }
    }
    out
}

/// TPL_t = BPL_t + (FPL_t − ε_t) (TKDE eq. (11)). The bracket is FPL's own leakage beyond
/// step t, so no partial sum exceeds the result (BPL + FPL first can overflow where TPL does
/// not).
fn tpl_of(bpl: f64, fpl: f64, eps: f64) -> f64 {
    bpl + (fpl - eps)
}

/// The evaluators [`Loss::new`] picks for `steps` evaluations, after checking that the two
/// matrices describe the same states.
fn losses(
    backward: Option<&TransitionMatrix>,
    forward: Option<&TransitionMatrix>,
    steps: usize,
) -> Result<(Option<Loss>, Option<Loss>)> {
    if let (Some(b), Some(f)) = (backward, forward)
        && b.n() != f.n()
    {
        return Err(CoreError::MatrixSizes { backward: b.n(), forward: f.n() });
    }
    Ok((backward.map(|m| Loss::new(m, steps)), forward.map(|m| Loss::new(m, steps))))
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
    /// As [`validate_budgets`]; [`CoreError::MatrixSizes`] when the backward and forward
    /// matrices have different numbers of states.
    pub fn from_matrices(
        backward: Option<&TransitionMatrix>,
        forward: Option<&TransitionMatrix>,
        budgets: &[f64],
    ) -> Result<Self> {
        validate_budgets(budgets)?;
        let (lb, lf) = losses(backward, forward, budgets.len())?;
        Self::compute(
            lb.as_ref().map(|l| l as &dyn LossEvaluator),
            lf.as_ref().map(|l| l as &dyn LossEvaluator),
            budgets,
        )
    }

    pub(crate) fn assemble(epsilon: Vec<f64>, bpl: Vec<f64>, fpl: Vec<f64>) -> Self {
        let tpl = (0..epsilon.len()).map(|t| tpl_of(bpl[t], fpl[t], epsilon[t])).collect();
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
        window::outward_sum(self.len(), |t| self.epsilon[t])
    }
}

impl window::Steps for LeakageSeries {
    fn len(&self) -> usize {
        self.epsilon.len()
    }
    fn epsilon(&self, t: usize) -> f64 {
        self.epsilon[t]
    }
    fn bpl(&self, t: usize) -> f64 {
        self.bpl[t]
    }
    fn fpl(&self, t: usize) -> f64 {
        self.fpl[t]
    }
    fn tpl(&self, t: usize) -> f64 {
        self.tpl[t]
    }
}

/// The budgets of a release: one ε at every step (stored once), or one ε_t per step.
#[derive(Debug, Clone, PartialEq)]
pub enum Budgets {
    /// ε at each of `steps` steps.
    Constant {
        /// The budget of every step.
        epsilon: f64,
        /// The horizon T.
        steps: usize,
    },
    /// ε_1..ε_T.
    PerStep(Vec<f64>),
}

impl Budgets {
    /// The horizon T.
    pub fn len(&self) -> usize {
        match self {
            Self::Constant { steps, .. } => *steps,
            Self::PerStep(v) => v.len(),
        }
    }

    /// True for a horizon of 0 (which no series accepts).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// ε_{t+1} (0-based `t < len`).
    pub fn get(&self, t: usize) -> f64 {
        match self {
            Self::Constant { epsilon, .. } => *epsilon,
            Self::PerStep(v) => v[t],
        }
    }

    /// Checks as [`validate_budgets`] does.
    fn validate(&self) -> Result<()> {
        match self {
            Self::Constant { epsilon, steps } => {
                if *steps == 0 {
                    Err(CoreError::EmptyHorizon)
                } else if !(epsilon.is_finite() && *epsilon >= 0.0) {
                    Err(CoreError::BadBudget { step: 1, value: *epsilon })
                } else {
                    Ok(())
                }
            }
            Self::PerStep(v) => validate_budgets(v),
        }
    }
}

/// The values of a [`LeakageSeries`] in as little memory as they need: BPL and FPL are stored
/// (8 bytes a step each), ε once when it is constant, and TPL is computed when asked for
/// with the same formula, so every value is bit-identical to [`LeakageSeries`]'s. For long
/// horizons (10⁷–10⁸ steps) whose output is streamed.
///
/// ```
/// use tpl_core::{Budgets, CompactSeries, LeakageSeries, TransitionMatrix};
/// let p = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.0, 1.0]])?;
/// let c = CompactSeries::from_matrices(Some(&p), Some(&p), Budgets::Constant { epsilon: 0.1, steps: 10 })?;
/// let s = LeakageSeries::from_matrices(Some(&p), Some(&p), &[0.1; 10])?;
/// assert_eq!((c.tpl(3), c.max_tpl()), (s.tpl[3], s.max_tpl()));
/// # Ok::<(), tpl_core::CoreError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CompactSeries {
    budgets: Budgets,
    bpl: Vec<f64>,
    fpl: Vec<f64>,
}

impl CompactSeries {
    /// The series of `budgets` against an adversary who knows P_B and/or P_F, with the
    /// evaluator [`Loss::new`] picks for T steps.
    ///
    /// # Errors
    /// As [`LeakageSeries::from_matrices`]: [`CoreError::EmptyHorizon`],
    /// [`CoreError::BadBudget`], [`CoreError::MatrixSizes`], [`CoreError::Overflow`].
    pub fn from_matrices(
        backward: Option<&TransitionMatrix>,
        forward: Option<&TransitionMatrix>,
        budgets: Budgets,
    ) -> Result<Self> {
        budgets.validate()?;
        let (lb, lf) = losses(backward, forward, budgets.len())?;
        let eps = |t| budgets.get(t);
        let bpl = bpl_of(lb.as_ref().map(|l| l as &dyn LossEvaluator), budgets.len(), eps);
        let fpl = fpl_of(lf.as_ref().map(|l| l as &dyn LossEvaluator), budgets.len(), eps);
        let series = Self { budgets, bpl, fpl };
        match (0..series.len())
            .find(|&t| !(series.bpl[t].is_finite() && series.fpl[t].is_finite() && series.tpl(t).is_finite()))
        {
            Some(t) => Err(CoreError::Overflow { step: t + 1 }),
            None => Ok(series),
        }
    }

    /// The horizon T.
    pub fn len(&self) -> usize {
        self.budgets.len()
    }

    /// Always false: a series has at least one step.
    pub fn is_empty(&self) -> bool {
        self.budgets.is_empty()
    }

    /// The budgets audited.
    pub fn budgets(&self) -> &Budgets {
        &self.budgets
    }

    /// ε at 0-based step `t`.
    pub fn epsilon(&self, t: usize) -> f64 {
        self.budgets.get(t)
    }

    /// BPL at 0-based step `t`.
    pub fn bpl(&self, t: usize) -> f64 {
        self.bpl[t]
    }

    /// FPL at 0-based step `t`.
    pub fn fpl(&self, t: usize) -> f64 {
        self.fpl[t]
    }

    /// TPL at 0-based step `t`, as [`LeakageSeries`] computes it.
    pub fn tpl(&self, t: usize) -> f64 {
        tpl_of(self.bpl[t], self.fpl[t], self.budgets.get(t))
    }

    /// BPL_1..BPL_T.
    pub fn bpl_values(&self) -> &[f64] {
        &self.bpl
    }

    /// FPL_1..FPL_T.
    pub fn fpl_values(&self) -> &[f64] {
        &self.fpl
    }

    /// max_t TPL_t, as [`LeakageSeries::max_tpl`].
    pub fn max_tpl(&self) -> f64 {
        (0..self.len()).map(|t| self.tpl(t)).fold(0.0, f64::max)
    }

    /// Σ ε_t, as [`LeakageSeries::horizon_leakage`].
    pub fn horizon_leakage(&self) -> f64 {
        window::outward_sum(self.len(), |t| self.budgets.get(t))
    }

    /// The leakage of every window of `w` steps, one at a time, as
    /// [`LeakageSeries::window_leakage`] computes them (bit-identical). Values are not checked
    /// for overflow: call [`CompactSeries::max_window_leakage`] first.
    ///
    /// # Errors
    /// [`CoreError::BadWindow`] unless 1 ≤ w ≤ T.
    pub fn window_leakage(&self, w: usize) -> Result<impl Iterator<Item = f64> + '_> {
        window::windows(self, w)
    }

    /// The largest window leakage of `w` steps.
    ///
    /// # Errors
    /// [`CoreError::BadWindow`] unless 1 ≤ w ≤ T; [`CoreError::Overflow`] when a window's
    /// leakage exceeds the largest double.
    pub fn max_window_leakage(&self, w: usize) -> Result<f64> {
        let mut max = 0.0f64;
        for (t, v) in window::windows(self, w)?.enumerate() {
            if !v.is_finite() {
                return Err(CoreError::Overflow { step: t + 1 });
            }
            max = max.max(v);
        }
        Ok(max)
    }
}

impl window::Steps for CompactSeries {
    fn len(&self) -> usize {
        self.budgets.len()
    }
    fn epsilon(&self, t: usize) -> f64 {
        self.budgets.get(t)
    }
    fn bpl(&self, t: usize) -> f64 {
        self.bpl[t]
    }
    fn fpl(&self, t: usize) -> f64 {
        self.fpl[t]
    }
    fn tpl(&self, t: usize) -> f64 {
        CompactSeries::tpl(self, t)
    }
}
