//! `uniform`: ε/w at every step (w-event spec §3.2).

use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::{StepBudget, StepOutcome, Stream, StreamScheme};

/// Publishes every step with ε/w rounded down (an integer share of ε on the grid of
/// [`WEventParams::share`]), so every window of w steps spends at most ε exactly, in f64.
#[derive(Debug, Clone)]
pub struct Uniform<M> {
    params: WEventParams,
    mechanism: M,
    stream: Stream,
}

impl<M: Mechanism> Uniform<M> {
    /// The scheme with `params`, releasing through `mechanism`.
    pub fn new(params: WEventParams, mechanism: M) -> Self {
        Self { params, mechanism, stream: Stream::default() }
    }
}

impl<M: Mechanism> StreamScheme for Uniform<M> {
    fn name(&self) -> &'static str {
        "uniform"
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
        let grid = self.params.grid();
        let p = grid.share(grid.epsilon(), self.params.window());
        let release = self.mechanism.release(counts, self.params.sensitivity(), p)?;
        Ok(self.stream.publish(release, StepBudget { test: 0.0, publication: p, absorbed: 0.0 }))
    }
}
