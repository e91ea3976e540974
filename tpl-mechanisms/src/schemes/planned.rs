//! `planned`: a budget sequence fixed in advance (e.g. by a `tpl-alloc` allocator), spent
//! step by step through the same path as every other scheme.

use crate::error::{MechError, Result};
use crate::ledger::WindowLedger;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::DecisionRule;
use crate::scheme::{Scheme, Step, StepBudget, StepOutcome};
use tpl_core::Short;

/// `planned`: step t publishes with the planned budget ε_t, or repeats r_{t−1} when ε_t = 0;
/// a step past the plan is refused ([`MechError::PastHorizon`]) before anything is drawn.
/// The plan is checked when the scheme is built: every ε_t finite and ≥ 0, ε_1 > 0 (step 1
/// has nothing to repeat), and every window of w steps summing to at most ε exactly
/// ([`WindowLedger`]), so its guarantee is w-event ε-DP like the adaptive schemes', and its
/// largest step is the plan's largest ε_t.
///
/// ```
/// use tpl_mechanisms::{LaplaceMechanism, Planned, StreamScheme, WEventParams, Zero, run};
/// let params = WEventParams::new(1.0, 2, 2.0)?;
/// let mut s = Planned::new(params, LaplaceMechanism::new(Zero), vec![0.5, 0.0, 0.25])?;
/// let r = run(&mut s, &[vec![3.0], vec![4.0], vec![5.0]])?;
/// assert_eq!(r.published, [true, false, true]);
/// assert_eq!(r.budgets(), [0.5, 0.0, 0.25]);
/// assert_eq!(s.max_step_budget(), 0.5);
/// assert!(s.step(&[6.0]).is_err()); // past the horizon
/// # Ok::<(), tpl_mechanisms::MechError>(())
/// ```
pub type Planned<M> = Scheme<PlannedRule, M>;

impl<M: Mechanism> Planned<M> {
    /// The scheme spending `budgets` (ε_t for t = 1, 2, …) under `params`, releasing through
    /// `mechanism`.
    ///
    /// # Errors
    /// [`MechError::BadPlan`] for a budget that is not finite and ≥ 0, a plan that starts
    /// with 0, or a window of w steps whose budgets sum to more than ε (naming the step that
    /// ends it).
    pub fn new(params: WEventParams, mechanism: M, budgets: Vec<f64>) -> Result<Self> {
        let mut ledger = WindowLedger::new(params.window());
        for (i, &b) in budgets.iter().enumerate() {
            let step = i + 1;
            if !tpl_core::is_budget(b) {
                return Err(MechError::BadPlan {
                    step,
                    reason: format!("budget {} must be finite and at least 0", Short(b)),
                });
            }
            if step == 1 && b == 0.0 {
                return Err(MechError::BadPlan {
                    step,
                    reason: "the first budget must be greater than 0: step 1 has no release to repeat".into(),
                });
            }
            let sum = ledger.push(b);
            if sum > params.epsilon() {
                return Err(MechError::BadPlan {
                    step,
                    reason: format!(
                        "the window of {} steps ending here spends {}, more than epsilon = {}",
                        params.window(),
                        Short(sum),
                        Short(params.epsilon())
                    ),
                });
            }
        }
        Ok(Self::with_rule(params, mechanism, PlannedRule { budgets }))
    }

    /// The plan.
    pub fn budgets(&self) -> &[f64] {
        &self.rule().budgets
    }
}

/// The decision rule of [`Planned`]: the plan.
#[derive(Debug, Clone)]
pub struct PlannedRule {
    budgets: Vec<f64>,
}

impl DecisionRule for PlannedRule {
    fn admit(&self, t: usize) -> Result<()> {
        if t > self.budgets.len() {
            return Err(MechError::PastHorizon { step: t, horizon: self.budgets.len() });
        }
        Ok(())
    }

    fn step<M: Mechanism>(&mut self, cx: Step<'_, M>) -> Result<StepOutcome> {
        // `admit` ran: t ≤ the horizon.
        let budget = self.budgets.get(cx.t() - 1).copied().unwrap_or(0.0);
        if budget == 0.0 {
            return cx.repeat(StepBudget::default());
        }
        cx.publish(StepBudget::fresh(budget))
    }

    /// Stateless: step t spends the plan's ε_t, whatever came before.
    fn restore(&mut self, _: &WEventParams, _: usize, _: &StepOutcome) {}

    /// ε_t; 0 past the horizon (such a step is refused).
    fn max_spend(&self, _: &WEventParams, t: usize) -> f64 {
        t.checked_sub(1).and_then(|i| self.budgets.get(i)).copied().unwrap_or(0.0)
    }

    fn max_step_budget(&self, _: &WEventParams) -> f64 {
        self.budgets.iter().copied().fold(0.0, f64::max)
    }

    /// Yes: the plan's ε_t at step t.
    fn spends_its_caps(&self) -> bool {
        true
    }

    fn name(&self) -> &str {
        super::SchemeKind::Planned.name()
    }
}
