//! `sample`: the whole ε once per window, at t ≡ 1 (mod w)
//! ([`docs/w-event.md`](tpl_core::guide::w_event) §3.3).

use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::DecisionRule;
use crate::scheme::{Scheme, Step, StepBudget, StepOutcome};

/// `sample`: publishes with ε at t = 1, 1 + w, 1 + 2w, …; repeats the last release in
/// between.
pub type Sample<M> = Scheme<SampleRule, M>;

/// The decision rule of [`Sample`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SampleRule;

/// Whether step t publishes: (t − 1) mod w = 0.
fn publishes(t: usize, window: usize) -> bool {
    (t - 1).is_multiple_of(window)
}

impl DecisionRule for SampleRule {
    fn step<M: Mechanism>(&mut self, cx: Step<'_, M>) -> Result<StepOutcome> {
        if !publishes(cx.t(), cx.params().window()) {
            return cx.repeat(StepBudget::default());
        }
        let eps = cx.params().epsilon();
        cx.publish(StepBudget::fresh(eps))
    }

    /// Stateless: step t publishes when t − 1 is a multiple of w.
    fn restore(&mut self, _: &WEventParams, _: usize, _: &StepOutcome) {}

    /// ε at the publishing steps, 0 elsewhere (§6).
    fn max_spend(&self, params: &WEventParams, t: usize) -> f64 {
        if t >= 1 && publishes(t, params.window()) { params.epsilon() } else { 0.0 }
    }

    fn max_step_budget(&self, params: &WEventParams) -> f64 {
        params.epsilon()
    }

    /// Yes: ε at the first step of each window, nothing at the others.
    fn spends_its_caps(&self) -> bool {
        true
    }

    fn name(&self) -> &str {
        super::SchemeKind::Sample.name()
    }
}
