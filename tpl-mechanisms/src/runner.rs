//! Runs a stream scheme over a finite stream and collects what `tpl release` prints.

use crate::error::{MechError, Result};
use crate::ledger::WindowLedger;
use crate::mechanism::laplace_scale;
use crate::noise::SamplerKind;
use crate::scheme::{StepBudget, StreamScheme};

/// The outcome of a whole run (the data of `tpl release`'s JSON,
/// [`docs/w-event.md`](tpl_core::guide::w_event) §2.3).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Run {
    /// Whether step t published afresh.
    pub published: Vec<bool>,
    /// What each step spent.
    pub spent: Vec<StepBudget>,
    /// r_t for every step.
    pub releases: Vec<Vec<f64>>,
    /// max over t of the window sums of ε_t ([`WindowLedger`], independent of the scheme).
    pub max_window_budget: f64,
}

impl Run {
    /// ε_t (test + publication) for every step.
    pub fn budgets(&self) -> Vec<f64> {
        self.spent.iter().map(StepBudget::total).collect()
    }

    /// Per-cell `level` intervals [r_t − hi, r_t − lo] of the raw releases, from the noise
    /// each fresh release carries ([`SamplerKind::noise_interval`] at scale Δ/ε_pub,
    /// [`laplace_scale`]):
    /// a fresh release's interval covers its step's true count with probability ≥ `level`.
    /// A repeat carries the interval of the publication it repeats, which covers the count of
    /// that earlier step — not of the repeating step, whose count may have moved since
    /// (post-processing estimates give intervals for every step,
    /// [`docs/map.md`](tpl_core::guide::map)).
    ///
    /// # Errors
    /// [`MechError::BadLevel`]; [`MechError::BadScale`] for a fresh release with no
    /// publication budget; a custom error for a first step that is a repeat.
    pub fn intervals(&self, sensitivity: f64, sampler: SamplerKind, level: f64) -> Result<Intervals> {
        self.intervals_after(sensitivity, sampler, level, None)
    }

    /// [`Run::intervals`] of a run that continues an earlier one (a batch of a durable
    /// stream): `carried`, when given, is the publication budget of the release the run's
    /// first steps repeat, published before the run began.
    ///
    /// # Errors
    /// Those of [`Run::intervals`]; a first step that repeats is refused only without
    /// `carried`.
    pub fn intervals_after(
        &self,
        sensitivity: f64,
        sampler: SamplerKind,
        level: f64,
        carried: Option<f64>,
    ) -> Result<Intervals> {
        let mut out = Intervals { level, lower: Vec::new(), upper: Vec::new() };
        let mut noise =
            carried.map(|eps| sampler.noise_interval(laplace_scale(sensitivity, eps), level)).transpose()?;
        for (t, ((published, spent), release)) in
            self.published.iter().zip(&self.spent).zip(&self.releases).enumerate()
        {
            if *published {
                noise = Some(sampler.noise_interval(laplace_scale(sensitivity, spent.publication), level)?);
            } else if noise.is_none() {
                // Checked before any repeat: a level out of range is named as such.
                sampler.noise_interval(1.0, level)?;
                return Err(MechError::custom(format!(
                    "step {}: a first step that repeats has no interval",
                    t + 1
                )));
            }
            let (lo, hi) = noise.unwrap_or((0.0, 0.0));
            out.lower.push(release.iter().map(|r| r - hi).collect());
            out.upper.push(release.iter().map(|r| r - lo).collect());
        }
        Ok(out)
    }
}

/// Per-cell confidence intervals of a sequence of count vectors (raw releases, or
/// estimates): `lower[t][j] ≤ c_t[j] ≤ upper[t][j]` at confidence `level`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Intervals {
    /// The nominal coverage, in (0, 1).
    pub level: f64,
    /// Lower ends, step by cell.
    pub lower: Vec<Vec<f64>>,
    /// Upper ends, step by cell.
    pub upper: Vec<Vec<f64>>,
}

/// Feeds `stream` to `scheme` step by step. To watch steps as they complete (progress, a
/// sink), call [`StreamScheme::step`] directly.
///
/// # Errors
/// The first step that fails, with its own error (which names the step).
pub fn run<S: StreamScheme + ?Sized>(scheme: &mut S, stream: &[Vec<f64>]) -> Result<Run> {
    let mut ledger = WindowLedger::new(scheme.params().window());
    let mut out =
        Run { published: Vec::new(), spent: Vec::new(), releases: Vec::new(), max_window_budget: 0.0 };
    for counts in stream {
        let step = scheme.step(counts)?;
        ledger.push(step.spent.total());
        out.published.push(step.published);
        out.spent.push(step.spent);
        out.releases.push(step.release);
    }
    out.max_window_budget = ledger.max_window_budget();
    if !out.max_window_budget.is_finite() {
        let params = scheme.params();
        return Err(MechError::WindowSumOverflow { epsilon: params.epsilon(), window: params.window() });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeat_carries_the_interval_of_the_publication_it_repeats() {
        let run = Run {
            published: vec![true, false, true],
            spent: vec![StepBudget::fresh(0.5), StepBudget::default(), StepBudget::fresh(1.0)],
            releases: vec![vec![10.0, 3.0], vec![10.0, 3.0], vec![12.0, 0.0]],
            max_window_budget: 1.0,
        };
        let i = run.intervals(2.0, SamplerKind::Discrete, 0.9).unwrap();
        // b = 4 at steps 1–2 (noise in −9..=9), b = 2 at step 3 (noise in −4..=5).
        assert_eq!(i.lower[0], vec![1.0, -6.0]);
        assert_eq!(i.upper[1], vec![19.0, 12.0]);
        assert_eq!((i.lower[2].clone(), i.upper[2].clone()), (vec![7.0, -5.0], vec![16.0, 4.0]));
        assert!(run.intervals(2.0, SamplerKind::Discrete, 1.5).is_err());
    }
}
