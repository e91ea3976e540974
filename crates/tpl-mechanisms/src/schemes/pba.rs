//! `pba`: the correlation-aware scheme of Hemkumar et al. 2021 (`seeds/001_*`, Algorithm 1),
//! as resolved by the w-event spec §3.6.

use tpl_core::TransitionMatrix;

use super::{fit, noisy_dissimilarity, room, worth_publishing};
use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::{Recent, StepBudget, StepOutcome, Stream, StreamScheme};

/// When PBA adds its correlation pool (spec §3.6, "correlation exists").
#[derive(Debug, Clone, PartialEq)]
pub enum PbaCorrelation {
    /// κ(P_B) ∨ κ(P_F), evaluated once: κ(P) is true iff two rows differ by more than 1e−9
    /// in some entry, which by Theorem 6 of the TKDE paper is exactly "L_P(α) > 0".
    FromMatrices(bool),
    /// Correlation at every step t ≥ 2.
    Always,
    /// Never (PBA is then BD with a publication pool of ε/4).
    Never,
    /// Step t ↦ entry t − 1, false past its end; fixed before the data are seen (tests).
    Schedule(Vec<bool>),
}

impl PbaCorrelation {
    /// The public predicate from the adversary's matrices (either may be absent).
    pub fn from_matrices(backward: Option<&TransitionMatrix>, forward: Option<&TransitionMatrix>) -> Self {
        Self::FromMatrices(backward.is_some_and(kappa) || forward.is_some_and(kappa))
    }

    fn at(&self, t: usize) -> bool {
        t >= 2
            && match self {
                Self::FromMatrices(k) => *k,
                Self::Always => true,
                Self::Never => false,
                Self::Schedule(s) => s.get(t - 1).copied().unwrap_or(false),
            }
    }
}

/// κ(P): some two rows differ by more than the row-sum tolerance in some entry.
fn kappa(p: &TransitionMatrix) -> bool {
    let first = p.row(0);
    p.rows().any(|r| r.iter().zip(first).any(|(a, b)| (a - b).abs() > tpl_core::ROW_SUM_TOLERANCE))
}

/// Tests with s = ε/(2w) per step as BD; publishes from a base pool of ε/4 (halving rule)
/// plus, when correlation exists, an equal amount from a correlation pool of ε/4.
/// (W): tests ≤ ε/2, base ≤ ε/4, absorbed ≤ base ≤ ε/4 (spec §4), exactly for the f64
/// budgets: the pools are integers on the grid of [`WEventParams::share`] and the halving
/// rounds down. State: the last min(w − 1, t) steps, O(1) work per step.
#[derive(Debug, Clone)]
pub struct Pba<M> {
    params: WEventParams,
    mechanism: M,
    stream: Stream,
    correlation: PbaCorrelation,
    /// [step total, base e_k, absorbed a_k (with any rounding of the total)] of the last
    /// w − 1 steps, in grid units.
    recent: Recent<3>,
}

impl<M: Mechanism> Pba<M> {
    /// The scheme with `params`, releasing through `mechanism`, with the correlation
    /// predicate `correlation`.
    pub fn new(params: WEventParams, mechanism: M, correlation: PbaCorrelation) -> Self {
        Self {
            params,
            mechanism,
            stream: Stream::default(),
            correlation,
            recent: Recent::new(params.window()),
        }
    }
}

impl<M: Mechanism> StreamScheme for Pba<M> {
    fn name(&self) -> &'static str {
        "pba"
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
        // Tests get ⌊K/2⌋ units, the base pool ⌊(K − ⌊K/2⌋)/2⌋, the correlation pool the rest
        // (≥ the base pool, which is why its cap never binds).
        let k = grid.epsilon();
        let base_pool = (k - k / 2) / 2;
        let corr_pool = k - k / 2 - base_pool;
        if t == 1 {
            let e = grid.value(base_pool / 2);
            let release = self.mechanism.release(counts, self.params.sensitivity(), e)?;
            self.recent.push([grid.units(e), grid.units(e), 0]);
            return Ok(self.stream.publish(release, StepBudget { test: 0.0, publication: e, absorbed: 0.0 }));
        }
        let test = self.params.share();
        let room = room(&self.params, self.recent.sum(0));
        if test > room {
            // Unreachable (the tests' half keeps w·s free); a fail-safe for (W).
            self.recent.push([0, 0, 0]);
            return Ok(self.stream.repeat(StepBudget::default()));
        }
        let dis = noisy_dissimilarity(&mut self.mechanism, &self.stream, counts, &self.params)?;
        let e = base_pool.saturating_sub(self.recent.sum(1)) / 2;
        let a_room = corr_pool.saturating_sub(self.recent.sum(2));
        // The cap never binds (absorbed sums ≤ base sums); kept as the spec's guard.
        let a = if self.correlation.at(t) { e.min(a_room) } else { 0 };
        // A total rounded up (w ≥ 2^21) is charged to the correlation pool, so it must fit.
        let limit = room.min(grid.value(grid.units(test) + e + a_room));
        let p = fit(&grid, limit, test, grid.value(e + a));
        // What `fit` or the 53-bit cut took off comes out of the absorbed part first.
        let (e, a) = (e.min(grid.units(p)), grid.units(p) - e.min(grid.units(p)));
        if worth_publishing(p, dis, &self.params) {
            let release = self.mechanism.release(counts, self.params.sensitivity(), p)?;
            let spent = StepBudget { test, publication: p, absorbed: grid.value(a) };
            let total = grid.units(spent.total());
            self.recent.push([total, e, total - grid.units(test) - e]);
            Ok(self.stream.publish(release, spent))
        } else {
            self.recent.push([grid.units(test), 0, 0]);
            Ok(self.stream.repeat(StepBudget { test, publication: 0.0, absorbed: 0.0 }))
        }
    }
}
