//! `ba`: Budget Absorption (Kellaris et al. 2014; w-event spec §3.5).

use super::{noisy_dissimilarity, worth_publishing};
use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::{StepBudget, StepOutcome, Stream, StreamScheme};

/// Deals the publication half of ε out as one share s = ε/(2w) per step. A publication
/// absorbs the shares of the steps skipped since the end of the previous publication's
/// nullification (at most w shares), then nullifies as many following steps as it absorbed
/// beyond its own share: those steps neither test nor publish.
///
/// The share count m_l of the last publication is kept as an integer (never recovered by
/// dividing floats). (W): spec §4.
#[derive(Debug, Clone)]
pub struct Ba<M> {
    params: WEventParams,
    mechanism: M,
    stream: Stream,
    /// Step of the last publication (0: none yet).
    last: usize,
    /// Shares it used.
    shares: usize,
}

impl<M: Mechanism> Ba<M> {
    /// The scheme with `params`, releasing through `mechanism`.
    pub fn new(params: WEventParams, mechanism: M) -> Self {
        Self { params, mechanism, stream: Stream::default(), last: 0, shares: 1 }
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
        let s = self.params.share();
        let nullified = self.shares - 1;
        if self.last >= 1 && t - self.last <= nullified {
            return Ok(self.stream.repeat(StepBudget::default()));
        }
        if t == 1 {
            let release = self.mechanism.release(counts, self.params.sensitivity(), s)?;
            (self.last, self.shares) = (1, 1);
            return Ok(self.stream.publish(release, StepBudget { test: 0.0, publication: s, absorbed: 0.0 }));
        }
        let available = t - (self.last + nullified);
        let m = available.min(self.params.window());
        let p = m as f64 * s;
        let dis = noisy_dissimilarity(&mut self.mechanism, &self.stream, counts, &self.params)?;
        if worth_publishing(p, dis, &self.params) {
            let release = self.mechanism.release(counts, self.params.sensitivity(), p)?;
            (self.last, self.shares) = (t, m);
            let absorbed = (m - 1) as f64 * s;
            Ok(self.stream.publish(release, StepBudget { test: s, publication: p, absorbed }))
        } else {
            Ok(self.stream.repeat(StepBudget { test: s, publication: 0.0, absorbed: 0.0 }))
        }
    }
}
