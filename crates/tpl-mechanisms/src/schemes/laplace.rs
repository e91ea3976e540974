//! `laplace`: event-level Laplace at every step (w-event spec §3.1), the reference that
//! satisfies (W) only for w = 1.

use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::{StepBudget, StepOutcome, Stream, StreamScheme};

/// Publishes every step with the whole ε: event-level ε-DP, w-event min(t, w)·ε.
#[derive(Debug, Clone)]
pub struct EventLaplace<M> {
    params: WEventParams,
    mechanism: M,
    stream: Stream,
}

impl<M: Mechanism> EventLaplace<M> {
    /// The scheme with `params`, releasing through `mechanism`.
    pub fn new(params: WEventParams, mechanism: M) -> Self {
        Self { params, mechanism, stream: Stream::default() }
    }
}

impl<M: Mechanism> StreamScheme for EventLaplace<M> {
    fn name(&self) -> &'static str {
        "laplace"
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
        let eps = self.params.epsilon();
        let release = self.mechanism.release(counts, self.params.sensitivity(), eps)?;
        Ok(self.stream.publish(release, StepBudget { test: 0.0, publication: eps, absorbed: 0.0 }))
    }
}
