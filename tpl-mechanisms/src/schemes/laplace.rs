//! `laplace`: event-level Laplace at every step ([`docs/w-event.md`](tpl_core::guide::w_event)
//! §3.1), the reference that satisfies (W) only for w = 1.

use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::DecisionRule;
use crate::scheme::{PrivacyGuarantee, Scheme, Step, StepBudget, StepOutcome};

/// `laplace`: publishes every step with the whole ε — event-level ε-DP, w-event
/// min(t, w)·ε.
pub type EventLaplace<M> = Scheme<LaplaceRule, M>;

/// The decision rule of [`EventLaplace`]: publish with ε.
#[derive(Debug, Clone, Copy, Default)]
pub struct LaplaceRule;

impl DecisionRule for LaplaceRule {
    fn step<M: Mechanism>(&mut self, cx: Step<'_, M>) -> Result<StepOutcome> {
        let eps = cx.params().epsilon();
        cx.publish(StepBudget::fresh(eps))
    }

    /// Event level only: its windows spend min(t, w)·ε (§4).
    fn guarantee(&self, params: &WEventParams) -> PrivacyGuarantee {
        PrivacyGuarantee::EventLevel { epsilon: params.epsilon() }
    }

    /// Stateless: every step publishes with ε.
    fn restore(&mut self, _: &WEventParams, _: usize, _: &StepOutcome) {}

    /// ε at every step (§6, table of largest spends).
    fn max_spend(&self, params: &WEventParams, _: usize) -> f64 {
        params.epsilon()
    }

    /// Yes: ε at every step, whatever the data.
    fn spends_its_caps(&self) -> bool {
        true
    }

    fn name(&self) -> &str {
        super::SchemeKind::Laplace.name()
    }
}
