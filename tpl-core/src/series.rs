//! Backward, forward and temporal privacy leakage over a horizon (TKDE §3, Eqs. (11)–(15)).

use crate::check::{check_horizon, is_budget, validate_budgets};
use crate::correlation::Correlation;
use crate::error::{CoreError, Result};
use crate::loss::{DIRECT_MAX_EVALUATIONS, DirectLoss, LossEvaluator, PiecewiseLoss};
use crate::matrix::TransitionMatrix;
use crate::window;

/// How many steps a series computation does between two calls of its progress hook.
const PROGRESS_EVERY: usize = 1 << 16;

/// BPL_1 = ε_1, BPL_t = L_B(BPL_{t−1}) + ε_t (TKDE eq. (13)); with no backward knowledge
/// (`None`) BPL_t = ε_t; for `len` budgets given by `eps(t)`, 0-based, that have passed
/// [`validate_budgets`]. Calls `progress(t)` after every [`PROGRESS_EVERY`] steps t.
fn bpl_of(
    backward: Option<&dyn LossEvaluator>,
    len: usize,
    eps: impl Fn(usize) -> f64,
    progress: &dyn Fn(usize),
) -> Vec<f64> {
    let mut out = Vec::with_capacity(len);
    let mut prev = 0.0;
    for t in 0..len {
        let value = match (backward, out.is_empty()) {
            (Some(l), false) => l.loss(prev) + eps(t),
            _ => eps(t),
        };
        out.push(value);
        prev = value;
        if (t + 1).is_multiple_of(PROGRESS_EVERY) {
            progress(t + 1);
        }
    }
    out
}

/// FPL_T = ε_T, FPL_t = L_F(FPL_{t+1}) + ε_t (TKDE eq. (15)); with no forward knowledge
/// FPL_t = ε_t; for `len` budgets given by `eps(t)`, 0-based, that have passed
/// [`validate_budgets`]. Calls `progress(done)` after every [`PROGRESS_EVERY`] steps done.
pub(crate) fn fpl_of(
    forward: Option<&dyn LossEvaluator>,
    len: usize,
    eps: impl Fn(usize) -> f64,
    progress: &dyn Fn(usize),
) -> Vec<f64> {
    let mut out: Vec<f64> = (0..len).map(&eps).collect();
    if let Some(l) = forward {
        for t in (0..len.saturating_sub(1)).rev() {
            out[t] = l.loss(out[t + 1]) + eps(t);
            let done = len - t;
            if done.is_multiple_of(PROGRESS_EVERY) {
                progress(done);
            }
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

/// How one side of `correlation` is evaluated for a series of `steps` steps: Algorithm 1
/// for one or two ([`Loss::new`]'s choice), the correlation's own piecewise function
/// beyond, computed once and shared with every other reader of the correlation.
enum Side<'a> {
    Direct(DirectLoss),
    Piecewise(&'a PiecewiseLoss),
}

impl<'a> Side<'a> {
    fn pair(correlation: &'a Correlation, steps: usize) -> (Option<Self>, Option<Self>) {
        if steps <= DIRECT_MAX_EVALUATIONS {
            let direct = |m: &TransitionMatrix| Side::Direct(DirectLoss::new(m));
            (correlation.backward().map(direct), correlation.forward().map(direct))
        } else {
            (
                correlation.backward_loss().map(Side::Piecewise),
                correlation.forward_loss().map(Side::Piecewise),
            )
        }
    }

    fn evaluator(&self) -> &dyn LossEvaluator {
        match self {
            Side::Direct(l) => l,
            Side::Piecewise(l) => *l,
        }
    }
}

/// The leakage of a release with budgets ε_1..ε_T against an adversary who knows P_B
/// and/or P_F: BPL, FPL and TPL_t = BPL_t + FPL_t − ε_t (TKDE eq. (11)), every step
/// materialised.
///
/// This is the series to index, chart, serialise or audit. For horizons of 10⁷ steps and more
/// whose output is streamed, [`CompactSeries`] holds the same values in half the memory;
/// [`LeakageSeries::from`] turns one into the other. The fields are private so that the four
/// sequences always have the same length T ≥ 1 and satisfy eqs. (11)–(15).
///
/// ```
/// use tpl_core::{Correlation, LeakageSeries, TransitionMatrix};
/// let p = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.0, 1.0]])?;
/// let s = LeakageSeries::new(&Correlation::new(Some(p.clone()), Some(p))?, &[0.1; 10])?;
/// assert_eq!(s.bpl()[0], 0.1);
/// assert_eq!(s.fpl()[9], 0.1);
/// assert!(s.max_tpl() > 0.1 && s.max_tpl() < 1.0);
/// # Ok::<(), tpl_core::CoreError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct LeakageSeries {
    epsilon: Vec<f64>,
    bpl: Vec<f64>,
    fpl: Vec<f64>,
    tpl: Vec<f64>,
}

impl LeakageSeries {
    /// The series of `budgets` against an adversary who knows `correlation`, as
    /// [`CompactSeries::new`] computes it.
    ///
    /// # Errors
    /// As [`validate_budgets`]; [`CoreError::Overflow`] as [`CompactSeries::compute`].
    pub fn new(correlation: &Correlation, budgets: &[f64]) -> Result<Self> {
        Ok(CompactSeries::new(correlation, Budgets::PerStep(budgets.to_vec()))?.into())
    }

    /// The series of budgets, BPL and FPL of the same length T ≥ 1 (TPL computed here).
    pub(crate) fn assemble(epsilon: Vec<f64>, bpl: Vec<f64>, fpl: Vec<f64>) -> Self {
        debug_assert!(!epsilon.is_empty() && bpl.len() == epsilon.len() && fpl.len() == epsilon.len());
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

    /// The budgets ε_1..ε_T audited.
    pub fn epsilon(&self) -> &[f64] {
        &self.epsilon
    }

    /// Backward privacy leakage BPL_1..BPL_T (TKDE eq. (13)).
    pub fn bpl(&self) -> &[f64] {
        &self.bpl
    }

    /// Forward privacy leakage FPL_1..FPL_T (TKDE eq. (15)).
    pub fn fpl(&self) -> &[f64] {
        &self.fpl
    }

    /// Temporal privacy leakage TPL_1..TPL_T (TKDE eq. (11)).
    pub fn tpl(&self) -> &[f64] {
        &self.tpl
    }

    /// max_t TPL_t: the α of α-DP_T the release achieves (TKDE Definition 5).
    pub fn max_tpl(&self) -> f64 {
        self.tpl.iter().copied().fold(0.0, f64::max)
    }

    /// Leakage of every window of `w` consecutive steps (Theorem 3,
    /// [`docs/model.md`](crate::guide::model) §4), one value per window start.
    ///
    /// # Errors
    /// [`CoreError::BadWindow`] unless 1 ≤ w ≤ T; [`CoreError::Overflow`] when a window's
    /// leakage exceeds the largest double.
    pub fn window_leakage(&self, w: usize) -> Result<Vec<f64>> {
        window::checked_windows(self, w)?.collect()
    }

    /// The largest window leakage of `w` steps.
    ///
    /// # Errors
    /// As [`LeakageSeries::window_leakage`].
    pub fn max_window_leakage(&self, w: usize) -> Result<f64> {
        window::max_window(self, w)
    }

    /// Leakage of the whole horizon, Σ ε_t: user-level privacy is unaffected by temporal
    /// correlation (Theorem 3 with the window covering every step).
    pub fn horizon_leakage(&self) -> f64 {
        window::outward_sum(self.len(), |t| self.epsilon[t])
    }
}

impl From<CompactSeries> for LeakageSeries {
    /// Materialises ε_t and TPL_t; every value is bit-identical to the compact series'.
    fn from(c: CompactSeries) -> Self {
        let epsilon = match c.budgets {
            Budgets::PerStep(v) => v,
            other => other.to_vec(),
        };
        Self::assemble(epsilon, c.bpl, c.fpl)
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

/// The budgets of a release: one ε at every step (stored once), one ε at every step but
/// the first and the last (TKDE Algorithm 8's shape), or one ε_t per step.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum Budgets {
    /// ε at each of `steps` steps.
    Constant {
        /// The budget of every step.
        epsilon: f64,
        /// The horizon T.
        steps: usize,
    },
    /// ε_1 = `first`, ε_T = `last` and `middle` in between (T = 1: `first` alone).
    Ends {
        /// ε_1.
        first: f64,
        /// ε_t for 1 < t < T.
        middle: f64,
        /// ε_T (T ≥ 2).
        last: f64,
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
            Self::Constant { steps, .. } | Self::Ends { steps, .. } => *steps,
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
            Self::Ends { first, .. } if t == 0 => *first,
            Self::Ends { last, steps, .. } if t + 1 == *steps => *last,
            Self::Ends { middle, .. } => *middle,
            Self::PerStep(v) => v[t],
        }
    }

    /// ε_1..ε_T in order, without materialising them.
    pub fn iter(&self) -> impl Iterator<Item = f64> + '_ {
        (0..self.len()).map(|t| self.get(t))
    }

    /// ε_1..ε_T as a vector (T doubles: for short horizons and per-step consumers).
    pub fn to_vec(&self) -> Vec<f64> {
        self.iter().collect()
    }

    /// The same shape with every stored value v replaced by `f(v)` (a constant stays one
    /// value, so this costs O(1) unless the budgets are per step).
    pub fn map(&self, f: impl Fn(f64) -> f64) -> Self {
        match self {
            Self::Constant { epsilon, steps } => Self::Constant { epsilon: f(*epsilon), steps: *steps },
            Self::Ends { first, middle, last, steps } => {
                Self::Ends { first: f(*first), middle: f(*middle), last: f(*last), steps: *steps }
            }
            Self::PerStep(v) => Self::PerStep(v.iter().map(|&b| f(b)).collect()),
        }
    }

    /// Checks as [`validate_budgets`] does.
    fn validate(&self) -> Result<()> {
        let one = |step: usize, value: f64| {
            if is_budget(value) { Ok(()) } else { Err(CoreError::BadBudget { step, value }) }
        };
        match self {
            Self::Constant { epsilon, steps } => {
                check_horizon(*steps)?;
                one(1, *epsilon)
            }
            Self::Ends { first, middle, last, steps } => {
                check_horizon(*steps)?;
                one(1, *first)?;
                if *steps > 2 {
                    one(2, *middle)?;
                }
                if *steps > 1 { one(*steps, *last) } else { Ok(()) }
            }
            Self::PerStep(v) => validate_budgets(v),
        }
    }
}

/// The values of a [`LeakageSeries`] in as little memory as they need: BPL and FPL are stored
/// (8 bytes a step each), ε once when it is constant, and TPL is computed when asked for
/// with the same formula, so every value is bit-identical to [`LeakageSeries`]'s. For long
/// horizons (10⁷–10⁸ steps) whose output is streamed; both types compute through this one.
///
/// ```
/// use tpl_core::{Budgets, CompactSeries, Correlation, LeakageSeries, TransitionMatrix};
/// let p = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.0, 1.0]])?;
/// let both = Correlation::new(Some(p.clone()), Some(p))?;
/// let c = CompactSeries::new(&both, Budgets::Constant { epsilon: 0.1, steps: 10 })?;
/// let s = LeakageSeries::new(&both, &[0.1; 10])?;
/// assert_eq!((c.tpl_at(3), c.max_tpl()), (s.tpl()[3], s.max_tpl()));
/// assert_eq!(LeakageSeries::from(c), s);
/// # Ok::<(), tpl_core::CoreError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct CompactSeries {
    budgets: Budgets,
    bpl: Vec<f64>,
    fpl: Vec<f64>,
}

impl CompactSeries {
    /// The series of `budgets` for any evaluators of L_B and L_F (`None`: no knowledge on that
    /// side): BPL by TKDE eq. (13), FPL by eq. (15).
    ///
    /// # Errors
    /// [`CoreError::EmptyHorizon`] or [`CoreError::BadBudget`] as [`validate_budgets`];
    /// [`CoreError::Overflow`] when a value exceeds the largest double (only for budgets near
    /// 1e308).
    pub fn compute(
        backward: Option<&dyn LossEvaluator>,
        forward: Option<&dyn LossEvaluator>,
        budgets: Budgets,
    ) -> Result<Self> {
        Self::compute_with_progress(backward, forward, budgets, &no_progress)
    }

    /// As [`CompactSeries::compute`], calling `progress(done, 2T)` every 65 536 steps of
    /// its two passes (BPL forward, then FPL backward) and once at the end with done = 2T:
    /// the hook a caller uses to show progress on long horizons.
    ///
    /// # Errors
    /// As [`CompactSeries::compute`].
    pub fn compute_with_progress(
        backward: Option<&dyn LossEvaluator>,
        forward: Option<&dyn LossEvaluator>,
        budgets: Budgets,
        progress: &dyn Fn(usize, usize),
    ) -> Result<Self> {
        budgets.validate()?;
        let len = budgets.len();
        let eps = |t| budgets.get(t);
        let bpl = bpl_of(backward, len, eps, &|done| progress(done, 2 * len));
        let fpl = fpl_of(forward, len, eps, &|done| progress(len + done, 2 * len));
        progress(2 * len, 2 * len);
        let series = Self { budgets, bpl, fpl };
        match (0..series.len()).find(|&t| {
            !(series.bpl[t].is_finite() && series.fpl[t].is_finite() && series.tpl_at(t).is_finite())
        }) {
            Some(t) => Err(CoreError::Overflow { step: t + 1 }),
            None => Ok(series),
        }
    }

    /// The series of `budgets` against an adversary who knows `correlation`: each side
    /// evaluated by Algorithm 1 for T ≤ 2 steps, by the correlation's piecewise function
    /// (computed on first use and kept) beyond.
    ///
    /// # Errors
    /// As [`CompactSeries::compute`].
    pub fn new(correlation: &Correlation, budgets: Budgets) -> Result<Self> {
        Self::new_with_progress(correlation, budgets, &no_progress)
    }

    /// As [`CompactSeries::new`], reporting progress as
    /// [`CompactSeries::compute_with_progress`] does.
    ///
    /// # Errors
    /// As [`CompactSeries::new`].
    pub fn new_with_progress(
        correlation: &Correlation,
        budgets: Budgets,
        progress: &dyn Fn(usize, usize),
    ) -> Result<Self> {
        budgets.validate()?;
        let (lb, lf) = Side::pair(correlation, budgets.len());
        Self::compute_with_progress(
            lb.as_ref().map(Side::evaluator),
            lf.as_ref().map(Side::evaluator),
            budgets,
            progress,
        )
    }

    /// The horizon T.
    pub fn len(&self) -> usize {
        self.budgets.len()
    }

    /// Always false: a series has at least one step.
    pub fn is_empty(&self) -> bool {
        self.budgets.is_empty()
    }

    /// The budgets audited (ε at 0-based step t: `budgets().get(t)`).
    pub fn budgets(&self) -> &Budgets {
        &self.budgets
    }

    /// BPL_1..BPL_T, as [`LeakageSeries::bpl`].
    pub fn bpl(&self) -> &[f64] {
        &self.bpl
    }

    /// FPL_1..FPL_T, as [`LeakageSeries::fpl`].
    pub fn fpl(&self) -> &[f64] {
        &self.fpl
    }

    /// TPL at 0-based step `t`, as [`LeakageSeries::tpl`] stores it.
    pub fn tpl_at(&self, t: usize) -> f64 {
        tpl_of(self.bpl[t], self.fpl[t], self.budgets.get(t))
    }

    /// max_t TPL_t, as [`LeakageSeries::max_tpl`].
    pub fn max_tpl(&self) -> f64 {
        (0..self.len()).map(|t| self.tpl_at(t)).fold(0.0, f64::max)
    }

    /// Σ ε_t, as [`LeakageSeries::horizon_leakage`].
    pub fn horizon_leakage(&self) -> f64 {
        window::outward_sum(self.len(), |t| self.budgets.get(t))
    }

    /// The leakage of every window of `w` steps, one at a time in O(1) memory, as
    /// [`LeakageSeries::window_leakage`] computes them (bit-identical, overflow included).
    ///
    /// # Errors
    /// [`CoreError::BadWindow`] unless 1 ≤ w ≤ T; each item is [`CoreError::Overflow`] when
    /// that window's leakage exceeds the largest double.
    pub fn window_leakage(&self, w: usize) -> Result<impl Iterator<Item = Result<f64>> + '_> {
        window::checked_windows(self, w)
    }

    /// The largest window leakage of `w` steps, as [`LeakageSeries::max_window_leakage`].
    ///
    /// # Errors
    /// [`CoreError::BadWindow`] unless 1 ≤ w ≤ T; [`CoreError::Overflow`] when a window's
    /// leakage exceeds the largest double.
    pub fn max_window_leakage(&self, w: usize) -> Result<f64> {
        window::max_window(self, w)
    }
}

/// The progress hook that reports nothing.
fn no_progress(_done: usize, _total: usize) {}

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
        self.tpl_at(t)
    }
}
