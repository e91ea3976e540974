//! `ba`: Budget Absorption (Kellaris et al. 2014; [`docs/w-event.md`](tpl_core::guide::w_event)
//! §3.5).

use super::worth_publishing;
use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::{DecisionRule, FromParams};
use crate::scheme::{RecentSpend, Scheme, Step, StepBudget, StepOutcome};

/// `ba`: deals the publication half of ε out as one share s = ε/(2w) per step. A publication
/// absorbs the shares of the steps skipped since the end of the previous publication's
/// nullification (at most w shares), then nullifies as many following steps as it absorbed
/// beyond its own share: those steps neither test nor publish.
///
/// The share count m_l of the last publication is kept as an integer (never recovered by
/// dividing floats), and every budget is an integer number of shares on the grid of
/// [`WEventParams::share`], so (W) (§4) holds exactly for the f64 budgets. State: the last
/// min(w − 1, t) step totals, O(1) work per step.
pub type Ba<M> = Scheme<BaRule, M>;

/// The decision rule of [`Ba`].
#[derive(Debug, Clone)]
pub struct BaRule {
    /// Step of the last publication (0: none yet).
    last: usize,
    /// Shares it used.
    shares: usize,
    /// Step totals of the last w − 1 steps, in grid units.
    recent: RecentSpend<1>,
}

impl FromParams for BaRule {
    fn from_params(params: &WEventParams) -> Self {
        Self { last: 0, shares: 1, recent: RecentSpend::new(params.window()) }
    }
}

impl DecisionRule for BaRule {
    fn step<M: Mechanism>(&mut self, mut cx: Step<'_, M>) -> Result<StepOutcome> {
        let t = cx.t();
        let grid = *cx.params().grid();
        let s = cx.params().share();
        let nullified = self.shares - 1;
        if self.last >= 1 && t - self.last <= nullified {
            self.recent.push([0]);
            return cx.repeat(StepBudget::default());
        }
        if t == 1 {
            let out = cx.publish(StepBudget::fresh(s))?;
            (self.last, self.shares) = (1, 1);
            self.recent.push([grid.units(s)]);
            return Ok(out);
        }
        let room = grid.room(self.recent.sum(0));
        if s > room {
            // Only reachable after about w steps when totals are rounded up (w ≥ 2^21); a
            // fail-safe for (W).
            self.recent.push([0]);
            return cx.repeat(StepBudget::default());
        }
        let available = t - (self.last + nullified);
        let share = grid.units(s);
        let m = available.min(cx.params().window()) as u128;
        // Whole shares only; `fit` binds only as the fail-safe above does.
        let m = m.min(grid.units(grid.fit(room, s, grid.value(m * share))) / share);
        let p = grid.value(m * share);
        if p > 0.0 && !cx.can_publish(p) {
            // No test for a publication the sampler could not draw (scale beyond its limit).
            self.recent.push([0]);
            return cx.repeat(StepBudget::default());
        }
        let dis = cx.noisy_dissimilarity()?;
        if m >= 1 && worth_publishing(p, dis, cx.params()) {
            let spent = StepBudget { test: s, publication: p, absorbed: grid.value((m - 1) * share) };
            let out = cx.publish(spent)?;
            (self.last, self.shares) = (t, m as usize);
            self.recent.push([grid.units(spent.total())]);
            Ok(out)
        } else {
            self.recent.push([share]);
            cx.repeat(StepBudget { test: s, publication: 0.0, absorbed: 0.0 })
        }
    }

    /// The step's total in grid units; a publication of p = m shares becomes the last one
    /// with m shares (m = 1 at t = 1), as [`DecisionRule::step`] records them.
    fn restore(&mut self, params: &WEventParams, t: usize, outcome: &StepOutcome) {
        if outcome.published {
            self.resume(params, t, outcome);
        }
        self.recent.push([params.grid().units(outcome.spent.total())]);
    }

    /// The publication of p = m shares at step t becomes the last one, with m shares.
    fn resume(&mut self, params: &WEventParams, t: usize, outcome: &StepOutcome) {
        let grid = params.grid();
        let share = grid.units(params.share());
        let m = (grid.units(outcome.spent.publication) / share).clamp(1, params.window() as u128);
        (self.last, self.shares) = (t, m as usize);
    }

    /// t = 1: one share. t ≥ 2: the test share plus m shares, m ≤ min(t − 1, w): step 1
    /// published, so at most t − 1 shares exist to be absorbed (§6).
    fn max_spend(&self, params: &WEventParams, t: usize) -> f64 {
        let s = params.share();
        if t <= 1 {
            return s;
        }
        let grid = params.grid();
        let m = (t - 1).min(params.window()) as u128;
        StepBudget { test: s, publication: grid.value(m * grid.units(s)), absorbed: 0.0 }.total()
    }

    fn name(&self) -> &str {
        super::SchemeKind::Ba.name()
    }
}
