//! `ba`: Budget Absorption (Kellaris et al. 2014; w-event spec §3.5).

use super::{fit, noisy_dissimilarity, room, worth_publishing};
use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::{Recent, StepBudget, StepOutcome, Stream, StreamScheme};

/// Deals the publication half of ε out as one share s = ε/(2w) per step. A publication
/// absorbs the shares of the steps skipped since the end of the previous publication's
/// nullification (at most w shares), then nullifies as many following steps as it absorbed
/// beyond its own share: those steps neither test nor publish.
///
/// The share count m_l of the last publication is kept as an integer (never recovered by
/// dividing floats), and every budget is an integer number of shares on the grid of
/// [`WEventParams::share`], so (W) (spec §4) holds exactly for the f64 budgets. State: the
/// last min(w − 1, t) step totals, O(1) work per step.
#[derive(Debug, Clone)]
pub struct Ba<M> {
    params: WEventParams,
    mechanism: M,
    stream: Stream,
    /// Step of the last publication (0: none yet).
    last: usize,
    /// Shares it used.
    shares: usize,
    /// Step totals of the last w − 1 steps, in grid units.
    recent: Recent<1>,
}

impl<M: Mechanism> Ba<M> {
    /// The scheme with `params`, releasing through `mechanism`.
    pub fn new(params: WEventParams, mechanism: M) -> Self {
        let recent = Recent::new(params.window());
        Self { params, mechanism, stream: Stream::default(), last: 0, shares: 1, recent }
    }
}

impl<M: Mechanism> StreamScheme for Ba<M> {
    fn name(&self) -> &'static str {
        "ba"
    }

    fn params(&self) -> &WEventParams {
        &self.params
    }

    fn steps(&self) -> usize {
        self.stream.t
    }

    fn step(&mut self, counts: &[f64]) -> Result<StepOutcome> {
        self.stream.check(counts)?;
        self.mechanism.validate(counts)?;
        let t = self.stream.t + 1;
        let grid = *self.params.grid();
        let s = self.params.share();
        let nullified = self.shares - 1;
        if self.last >= 1 && t - self.last <= nullified {
            self.recent.push([0]);
            return Ok(self.stream.repeat(StepBudget::default()));
        }
        if t == 1 {
            let release = self.mechanism.release(counts, self.params.sensitivity(), s)?;
            (self.last, self.shares) = (1, 1);
            self.recent.push([grid.units(s)]);
            return Ok(self.stream.publish(release, StepBudget { test: 0.0, publication: s, absorbed: 0.0 }));
        }
        let room = room(&self.params, self.recent.sum(0));
        if s > room {
            // Only reachable after about w steps when totals are rounded up (w ≥ 2^21); a
            // fail-safe for (W).
            self.recent.push([0]);
            return Ok(self.stream.repeat(StepBudget::default()));
        }
        let available = t - (self.last + nullified);
        let share = grid.units(s);
        let m = available.min(self.params.window()) as u128;
        // Whole shares only; `fit` binds only as the fail-safe above does.
        let m = m.min(grid.units(fit(&grid, room, s, grid.value(m * share))) / share);
        let p = grid.value(m * share);
        let dis = noisy_dissimilarity(&mut self.mechanism, &self.stream, counts, &self.params)?;
        if m >= 1 && worth_publishing(p, dis, &self.params) {
            let release = self.mechanism.release(counts, self.params.sensitivity(), p)?;
            (self.last, self.shares) = (t, m as usize);
            let spent = StepBudget { test: s, publication: p, absorbed: grid.value((m - 1) * share) };
            self.recent.push([grid.units(spent.total())]);
            Ok(self.stream.publish(release, spent))
        } else {
            self.recent.push([share]);
            Ok(self.stream.repeat(StepBudget { test: s, publication: 0.0, absorbed: 0.0 }))
        }
    }
}
