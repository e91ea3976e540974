//! `bd`: Budget Distribution (Kellaris et al. 2014; w-event spec §3.4).

use super::{fit, noisy_dissimilarity, room, worth_publishing};
use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::{Recent, StepBudget, StepOutcome, Stream, StreamScheme};

/// Tests every step with s = ε/(2w); publishes with half of what is left of ε/2 in the
/// active window when the noisy staleness error exceeds the fresh noise error. Back-to-back
/// publications get ε/4, ε/8, …; budget returns as spent steps leave the window.
///
/// (W): tests ≤ w·s ≤ ε/2; publications ≤ ε/2 by induction (spec §4). Budgets are integers
/// on the grid of [`WEventParams::share`], so the induction holds exactly for the f64 values
/// (the halving rounds down). State: the last min(w − 1, t) steps, O(1) work per step.
#[derive(Debug, Clone)]
pub struct Bd<M> {
    params: WEventParams,
    mechanism: M,
    stream: Stream,
    /// [step total, its publication part (total − test)] of the last w − 1 steps, in grid
    /// units.
    recent: Recent<2>,
}

impl<M: Mechanism> Bd<M> {
    /// The scheme with `params`, releasing through `mechanism`.
    pub fn new(params: WEventParams, mechanism: M) -> Self {
        Self { params, mechanism, stream: Stream::default(), recent: Recent::new(params.window()) }
    }
}

impl<M: Mechanism> StreamScheme for Bd<M> {
    fn name(&self) -> &'static str {
        "bd"
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
        let grid = *self.params.grid();
        // The publication half of ε: K − ⌊K/2⌋ units (the tests' half is ⌊K/2⌋ ≥ w·s).
        let pool = grid.epsilon() - grid.epsilon() / 2;
        if self.stream.t == 0 {
            let p = grid.value(pool / 2);
            let release = self.mechanism.release(counts, self.params.sensitivity(), p)?;
            self.recent.push([grid.units(p), grid.units(p)]);
            return Ok(self.stream.publish(release, StepBudget { test: 0.0, publication: p, absorbed: 0.0 }));
        }
        let test = self.params.share();
        let room = room(&self.params, self.recent.sum(0));
        if test > room {
            // Unreachable (the tests' half keeps w·s free); a fail-safe for (W).
            self.recent.push([0, 0]);
            return Ok(self.stream.repeat(StepBudget::default()));
        }
        let dis = noisy_dissimilarity(&mut self.mechanism, &self.stream, counts, &self.params)?;
        // Half of what is left of the publication half in the active window, rounded down; a
        // total rounded up (w ≥ 2^21) is charged to the publication half, so it must fit.
        let left = pool.saturating_sub(self.recent.sum(1));
        let limit = room.min(grid.value(grid.units(test) + left));
        let p = fit(&grid, limit, test, grid.value(left / 2));
        if worth_publishing(p, dis, &self.params) {
            let release = self.mechanism.release(counts, self.params.sensitivity(), p)?;
            let spent = StepBudget { test, publication: p, absorbed: 0.0 };
            let total = grid.units(spent.total());
            self.recent.push([total, total - grid.units(test)]);
            Ok(self.stream.publish(release, spent))
        } else {
            self.recent.push([grid.units(test), 0]);
            Ok(self.stream.repeat(StepBudget { test, publication: 0.0, absorbed: 0.0 }))
        }
    }
}
