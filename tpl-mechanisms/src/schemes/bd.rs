//! `bd`: Budget Distribution (Kellaris et al. 2014; [`docs/w-event.md`](tpl_core::guide::w_event)
//! §3.4).

use super::worth_publishing;
use crate::budget::BudgetGrid;
use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::{DecisionRule, FromParams};
use crate::scheme::{RecentSpend, Scheme, Step, StepBudget, StepOutcome};

/// `bd`: tests every step with s = ε/(2w); publishes with half of what is left of ε/2 in the
/// active window when the noisy staleness error exceeds the fresh noise error. Back-to-back
/// publications get ε/4, ε/8, …; budget returns as spent steps leave the window.
///
/// (W): tests ≤ w·s ≤ ε/2; publications ≤ ε/2 by induction (§4). Budgets are integers on the
/// grid of [`WEventParams::share`], so the induction holds exactly for the f64 values (the
/// halving rounds down). State: the last min(w − 1, t) steps, O(1) work per step.
pub type Bd<M> = Scheme<BdRule, M>;

/// The decision rule of [`Bd`].
#[derive(Debug, Clone)]
pub struct BdRule {
    /// [step total, its publication part (total − test)] of the last w − 1 steps, in grid
    /// units.
    recent: RecentSpend<2>,
}

/// The publication half of ε: K − ⌊K/2⌋ units (the tests' half is ⌊K/2⌋ ≥ w·s).
fn pool(grid: &BudgetGrid) -> u128 {
    grid.epsilon() - grid.epsilon() / 2
}

/// The first step's publication: half the pool, rounded down.
fn first(grid: &BudgetGrid) -> f64 {
    grid.value(pool(grid) / 2)
}

impl FromParams for BdRule {
    fn from_params(params: &WEventParams) -> Self {
        Self { recent: RecentSpend::new(params.window()) }
    }
}

impl DecisionRule for BdRule {
    fn step<M: Mechanism>(&mut self, mut cx: Step<'_, M>) -> Result<StepOutcome> {
        let grid = *cx.params().grid();
        if cx.t() == 1 {
            let p = first(&grid);
            let out = cx.publish(StepBudget::fresh(p))?;
            self.recent.push([grid.units(p), grid.units(p)]);
            return Ok(out);
        }
        let test = cx.params().share();
        let room = grid.room(self.recent.sum(0));
        if test > room {
            // Unreachable (the tests' half keeps w·s free); a fail-safe for (W).
            self.recent.push([0, 0]);
            return cx.repeat(StepBudget::default());
        }
        // Half of what is left of the publication half in the active window, rounded down; a
        // total rounded up (w ≥ 2^21) is charged to the publication half, so it must fit.
        let left = pool(&grid).saturating_sub(self.recent.sum(1));
        let limit = room.min(grid.value(grid.units(test) + left));
        let p = grid.fit(limit, test, grid.value(left / 2));
        if p > 0.0 && !cx.can_publish(p) {
            // No test for a publication the sampler could not draw (scale beyond its limit).
            self.recent.push([0, 0]);
            return cx.repeat(StepBudget::default());
        }
        let dis = cx.noisy_dissimilarity()?;
        if worth_publishing(p, dis, cx.params()) {
            let spent = StepBudget { test, publication: p, absorbed: 0.0 };
            let out = cx.publish(spent)?;
            let total = grid.units(spent.total());
            self.recent.push([total, total - grid.units(test)]);
            Ok(out)
        } else {
            self.recent.push([grid.units(test), 0]);
            cx.repeat(StepBudget { test, publication: 0.0, absorbed: 0.0 })
        }
    }

    /// [step total, total − test] in grid units, as [`DecisionRule::step`] records every branch.
    fn restore(&mut self, params: &WEventParams, _: usize, outcome: &StepOutcome) {
        let grid = params.grid();
        let total = grid.units(outcome.spent.total());
        self.recent.push([total, total.saturating_sub(grid.units(outcome.spent.test))]);
    }

    /// t = 1: the first publication. t ≥ 2: the test share s plus half of what the window
    /// can have left of the pool: all of it for t > w (the previous w − 1 steps may have
    /// published nothing), the pool less step 1's publication for t ≤ w (step 1 is still in
    /// the window) — ε/4 and ε/8 in the table of §6, here in the grid's exact units.
    fn max_spend(&self, params: &WEventParams, t: usize) -> f64 {
        let grid = params.grid();
        if t <= 1 {
            return first(grid);
        }
        let left = if t <= params.window() { pool(grid) - grid.units(first(grid)) } else { pool(grid) };
        StepBudget { test: params.share(), publication: grid.value(left / 2), absorbed: 0.0 }.total()
    }

    fn name(&self) -> &str {
        super::SchemeKind::Bd.name()
    }
}
