//! `bd`: Budget Distribution (Kellaris et al. 2014; w-event spec §3.4).

use super::{noisy_dissimilarity, worth_publishing};
use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::{Ring, StepBudget, StepOutcome, Stream, StreamScheme};

/// Tests every step with s = ε/(2w); publishes with half of what is left of ε/2 in the
/// active window when the noisy staleness error exceeds the fresh noise error. Back-to-back
/// publications get ε/4, ε/8, …; budget returns as spent steps leave the window.
///
/// (W): tests ≤ w·s = ε/2; publications ≤ ε/2 by induction (spec §4).
#[derive(Debug, Clone)]
pub struct Bd<M> {
    params: WEventParams,
    mechanism: M,
    stream: Stream,
    spent: Ring,
}

impl<M: Mechanism> Bd<M> {
    /// The scheme with `params`, releasing through `mechanism`.
    pub fn new(params: WEventParams, mechanism: M) -> Self {
        Self { params, mechanism, stream: Stream::default(), spent: Ring::new(params.window() - 1) }
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
        let half = self.params.epsilon() / 2.0;
        if self.stream.t == 0 {
            let p = half / 2.0;
            let release = self.mechanism.release(counts, self.params.sensitivity(), p)?;
            self.spent.push(p);
            return Ok(self.stream.publish(release, StepBudget { test: 0.0, publication: p, absorbed: 0.0 }));
        }
        let dis = noisy_dissimilarity(&mut self.mechanism, &self.stream, counts, &self.params)?;
        let test = self.params.share();
        let p = (half - self.spent.sum()) / 2.0;
        if worth_publishing(p, dis, &self.params) {
            let release = self.mechanism.release(counts, self.params.sensitivity(), p)?;
            self.spent.push(p);
            Ok(self.stream.publish(release, StepBudget { test, publication: p, absorbed: 0.0 }))
        } else {
            self.spent.push(0.0);
            Ok(self.stream.repeat(StepBudget { test, publication: 0.0, absorbed: 0.0 }))
        }
    }
}
