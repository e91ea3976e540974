//! `sample`: the whole ε once per window, at t ≡ 1 (mod w) (w-event spec §3.3).

use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::{StepBudget, StepOutcome, Stream, StreamScheme};

/// Publishes with ε at t = 1, 1 + w, 1 + 2w, …; repeats the last release in between.
#[derive(Debug, Clone)]
pub struct Sample<M> {
    params: WEventParams,
    mechanism: M,
    stream: Stream,
}

impl<M: Mechanism> Sample<M> {
    /// The scheme with `params`, releasing through `mechanism`.
    pub fn new(params: WEventParams, mechanism: M) -> Self {
        Self { params, mechanism, stream: Stream::default() }
    }
}

impl<M: Mechanism> StreamScheme for Sample<M> {
    fn name(&self) -> &'static str {
        "sample"
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
        if !self.stream.t.is_multiple_of(self.params.window()) {
            return Ok(self.stream.repeat(StepBudget::default()));
        }
        let eps = self.params.epsilon();
        let release = self.mechanism.release(counts, self.params.sensitivity(), eps)?;
        Ok(self.stream.publish(release, StepBudget { test: 0.0, publication: eps, absorbed: 0.0 }))
    }
}
