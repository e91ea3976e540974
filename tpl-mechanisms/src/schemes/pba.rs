//! `pba`: the correlation-aware scheme of Hemkumar, Ravichandra and Somayajulu, "Impact of
//! data correlation on privacy budget allocation in continuous publication of location
//! statistics" (2021, Algorithm 1), as resolved by [`docs/w-event.md`](tpl_core::guide::w_event)
//! §3.6.

use tpl_core::Correlation;

use super::worth_publishing;
use crate::budget::BudgetGrid;
use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::{DecisionRule, over_regimes};
use crate::scheme::{RecentSpend, Scheme, Step, StepBudget, StepOutcome};

/// When PBA draws on its correlation pool ([`docs/w-event.md`](tpl_core::guide::w_event) §3.6,
/// "correlation exists").
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PbaPool {
    /// Whether the adversary's correlation is informative, decided once from its matrices
    /// ([`PbaPool::detect`]).
    Detected(bool),
    /// Correlation at every step t ≥ 2.
    Always,
    /// Never (PBA is then BD with a publication pool of ε/4).
    Never,
    /// Step t ↦ entry t − 1, false past its end; fixed before the data are seen (tests).
    Schedule(Vec<bool>),
}

impl PbaPool {
    /// The public predicate from the adversary's matrices: [`Correlation::is_informative`],
    /// which by Theorem 6 of the TKDE paper is exactly "L(α) > 0" on some side.
    ///
    /// ```
    /// use tpl_core::{Correlation, TransitionMatrix};
    /// use tpl_mechanisms::PbaPool;
    /// let sticky = TransitionMatrix::smoothed_identity(3, 0.5)?;
    /// assert_eq!(PbaPool::detect(&Correlation::new(None, Some(sticky))?), PbaPool::Detected(true));
    /// assert_eq!(PbaPool::detect(&Correlation::none()), PbaPool::Detected(false));
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    pub fn detect(correlation: &Correlation) -> Self {
        Self::Detected(correlation.is_informative())
    }

    /// corr(t) of [`docs/w-event.md`](tpl_core::guide::w_event) §3.6: whether step t (from 1)
    /// may absorb budget from the correlation pool. Never at t = 1.
    ///
    /// ```
    /// use tpl_mechanisms::PbaPool;
    /// let c = PbaPool::Schedule(vec![true, false, true]);
    /// assert_eq!([1, 2, 3, 4].map(|t| c.at(t)), [false, false, true, false]);
    /// ```
    pub fn at(&self, t: usize) -> bool {
        t >= 2
            && match self {
                Self::Detected(k) => *k,
                Self::Always => true,
                Self::Never => false,
                Self::Schedule(s) => s.get(t - 1).copied().unwrap_or(false),
            }
    }
}

/// `pba`: tests with s = ε/(2w) per step as BD; publishes from a base pool of ε/4 (halving
/// rule) plus, when correlation exists, an equal amount from a correlation pool of ε/4.
/// (W): tests ≤ ε/2, base ≤ ε/4, absorbed ≤ base ≤ ε/4 (§4), exactly for the f64 budgets: the
/// pools are integers on the grid of [`WEventParams::share`] and the halving rounds down.
/// State: the last min(w − 1, t) steps, O(1) work per step.
pub type Pba<M> = Scheme<PbaRule, M>;

impl<M: Mechanism> Pba<M> {
    /// The scheme with `params`, releasing through `mechanism`, with the correlation
    /// predicate `correlation`.
    pub fn new(params: WEventParams, mechanism: M, correlation: PbaPool) -> Self {
        let rule = PbaRule { correlation, recent: RecentSpend::new(params.window()) };
        Self::with_rule(params, mechanism, rule)
    }
}

/// The decision rule of [`Pba`].
#[derive(Debug, Clone)]
pub struct PbaRule {
    correlation: PbaPool,
    /// [step total, base e_k, absorbed a_k (with any rounding of the total)] of the last
    /// w − 1 steps, in grid units.
    recent: RecentSpend<3>,
}

/// The pools in grid units: tests get ⌊K/2⌋, the base pool ⌊(K − ⌊K/2⌋)/2⌋, the correlation
/// pool the rest (≥ the base pool, which is why its cap never binds).
fn pools(grid: &BudgetGrid) -> (u128, u128) {
    let k = grid.epsilon();
    let base = (k - k / 2) / 2;
    (base, k - k / 2 - base)
}

/// The first step's publication: half the base pool, rounded down.
fn first(grid: &BudgetGrid) -> f64 {
    grid.value(pools(grid).0 / 2)
}

impl DecisionRule for PbaRule {
    fn step<M: Mechanism>(&mut self, mut cx: Step<'_, M>) -> Result<StepOutcome> {
        let t = cx.t();
        let grid = *cx.params().grid();
        let (base_pool, corr_pool) = pools(&grid);
        if t == 1 {
            let e = first(&grid);
            let out = cx.publish(StepBudget::fresh(e))?;
            self.recent.push([grid.units(e), grid.units(e), 0]);
            return Ok(out);
        }
        let test = cx.params().share();
        let room = grid.room(self.recent.sum(0));
        if test > room {
            // Unreachable (the tests' half keeps w·s free); a fail-safe for (W).
            self.recent.push([0, 0, 0]);
            return cx.repeat(StepBudget::default());
        }
        let e = base_pool.saturating_sub(self.recent.sum(1)) / 2;
        let a_room = corr_pool.saturating_sub(self.recent.sum(2));
        // The cap never binds (absorbed sums ≤ base sums); kept as the guard of §3.6.
        let a = if self.correlation.at(t) { e.min(a_room) } else { 0 };
        // A total rounded up (w ≥ 2^21) is charged to the correlation pool, so it must fit.
        let limit = room.min(grid.value(grid.units(test) + e + a_room));
        let p = grid.fit(limit, test, grid.value(e + a));
        // What `fit` or the 53-bit cut took off comes out of the absorbed part first.
        let (e, a) = (e.min(grid.units(p)), grid.units(p) - e.min(grid.units(p)));
        if p > 0.0 && !cx.can_publish(p) {
            // No test for a publication the sampler could not draw (scale beyond its limit).
            self.recent.push([0, 0, 0]);
            return cx.repeat(StepBudget::default());
        }
        let dis = cx.noisy_dissimilarity()?;
        if worth_publishing(p, dis, cx.params()) {
            let spent = StepBudget { test, publication: p, absorbed: grid.value(a) };
            let out = cx.publish(spent)?;
            let total = grid.units(spent.total());
            self.recent.push([total, e, total - grid.units(test) - e]);
            Ok(out)
        } else {
            self.recent.push([grid.units(test), 0, 0]);
            cx.repeat(StepBudget { test, publication: 0.0, absorbed: 0.0 })
        }
    }

    /// [step total, base e, total − test − e] in grid units, e = publication − absorbed, as
    /// [`DecisionRule::step`] records every branch.
    fn restore(&mut self, params: &WEventParams, _: usize, outcome: &StepOutcome) {
        let grid = params.grid();
        let spent = outcome.spent;
        let total = grid.units(spent.total());
        let e = grid.units(spent.publication).saturating_sub(grid.units(spent.absorbed));
        self.recent.push([total, e, total.saturating_sub(grid.units(spent.test)).saturating_sub(e)]);
    }

    /// t = 1: the first base publication. t ≥ 2: the test share plus a base part of half what
    /// the window can have left of the base pool (all of it for t > w, less step 1's part for
    /// t ≤ w, as for BD), doubled when corr(t) (the absorbed part is at most the base part):
    /// the pba rows of the table of §6 (ε/16 and ε/8 base), in the grid's exact units.
    fn max_spend(&self, params: &WEventParams, t: usize) -> f64 {
        let grid = params.grid();
        if t <= 1 {
            return first(grid);
        }
        let (base_pool, corr_pool) = pools(grid);
        let left = if t <= params.window() { base_pool - grid.units(first(grid)) } else { base_pool };
        let e = left / 2;
        let a = if self.correlation.at(t) { e.min(corr_pool) } else { 0 };
        StepBudget { test: params.share(), publication: grid.value(e + a), absorbed: 0.0 }.total()
    }

    /// The regimes of [`DecisionRule::max_spend`] (corr is constant for t ≥ 2 but for a schedule),
    /// and every step a schedule marks as correlated.
    fn max_step_budget(&self, params: &WEventParams) -> f64 {
        let regimes = over_regimes(params, |t| self.max_spend(params, t));
        let scheduled = match &self.correlation {
            PbaPool::Schedule(s) => s
                .iter()
                .enumerate()
                .filter(|&(_, &c)| c)
                .map(|(i, _)| self.max_spend(params, i + 1))
                .fold(0.0, f64::max),
            _ => 0.0,
        };
        regimes.max(scheduled)
    }

    fn name(&self) -> &str {
        super::SchemeKind::Pba.name()
    }
}
