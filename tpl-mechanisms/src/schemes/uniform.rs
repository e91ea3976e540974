//! `uniform`: ε/w at every step ([`docs/w-event.md`](tpl_core::guide::w_event) §3.2).

use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::DecisionRule;
use crate::scheme::{Scheme, Step, StepBudget, StepOutcome};

/// `uniform`: publishes every step with ε/w rounded down (an integer share of ε on the grid
/// of [`WEventParams::share`]), so every window of w steps spends at most ε exactly, in f64.
pub type Uniform<M> = Scheme<UniformRule, M>;

/// The decision rule of [`Uniform`].
#[derive(Debug, Clone, Copy, Default)]
pub struct UniformRule;

impl UniformRule {
    /// ⌊K/w⌋ grid units: the largest p with w·p ≤ ε exactly.
    fn budget(params: &WEventParams) -> f64 {
        let grid = params.grid();
        grid.share(grid.epsilon(), params.window())
    }
}

impl DecisionRule for UniformRule {
    fn step<M: Mechanism>(&mut self, cx: Step<'_, M>) -> Result<StepOutcome> {
        let p = Self::budget(cx.params());
        cx.publish(StepBudget::fresh(p))
    }

    /// Stateless: every step publishes with ε/w.
    fn restore(&mut self, _: &WEventParams, _: usize, _: &StepOutcome) {}

    /// Every step spends exactly its share (§6).
    fn max_spend(&self, params: &WEventParams, _: usize) -> f64 {
        Self::budget(params)
    }

    /// Yes: its share of ε at every step.
    fn spends_its_caps(&self) -> bool {
        true
    }

    fn name(&self) -> &str {
        super::SchemeKind::Uniform.name()
    }
}
