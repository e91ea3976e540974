//! `pba`: the correlation-aware scheme of Hemkumar et al. 2021 (`seeds/001_*`, Algorithm 1),
//! as resolved by the w-event spec §3.6.

use tpl_core::TransitionMatrix;

use super::{noisy_dissimilarity, worth_publishing};
use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::{Ring, StepBudget, StepOutcome, Stream, StreamScheme};

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
/// (W): tests ≤ ε/2, base ≤ ε/4, absorbed ≤ base ≤ ε/4 (spec §4).
#[derive(Debug, Clone)]
pub struct Pba<M> {
    params: WEventParams,
    mechanism: M,
    stream: Stream,
    correlation: PbaCorrelation,
    base: Ring,
    absorbed: Ring,
}

impl<M: Mechanism> Pba<M> {
    /// The scheme with `params`, releasing through `mechanism`, with the correlation
    /// predicate `correlation`.
    pub fn new(params: WEventParams, mechanism: M, correlation: PbaCorrelation) -> Self {
        let w = params.window() - 1;
        Self {
            params,
            mechanism,
            stream: Stream::default(),
            correlation,
            base: Ring::new(w),
            absorbed: Ring::new(w),
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
        let quarter = self.params.epsilon() / 4.0;
        if t == 1 {
            let e = quarter / 2.0;
            let release = self.mechanism.release(counts, self.params.sensitivity(), e)?;
            self.base.push(e);
            self.absorbed.push(0.0);
            return Ok(self.stream.publish(release, StepBudget { test: 0.0, publication: e, absorbed: 0.0 }));
        }
        let dis = noisy_dissimilarity(&mut self.mechanism, &self.stream, counts, &self.params)?;
        let test = self.params.share();
        let e = (quarter - self.base.sum()) / 2.0;
        // The cap never binds (absorbed sums ≤ base sums); kept as the spec's guard.
        let a = if self.correlation.at(t) { e.min(quarter - self.absorbed.sum()) } else { 0.0 };
        let p = e + a;
        if worth_publishing(p, dis, &self.params) {
            let release = self.mechanism.release(counts, self.params.sensitivity(), p)?;
            self.base.push(e);
            self.absorbed.push(a);
            Ok(self.stream.publish(release, StepBudget { test, publication: p, absorbed: a }))
        } else {
            self.base.push(0.0);
            self.absorbed.push(0.0);
            Ok(self.stream.repeat(StepBudget { test, publication: 0.0, absorbed: 0.0 }))
        }
    }
}
