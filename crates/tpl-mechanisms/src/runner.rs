//! Runs a stream scheme over a finite stream and collects what `tpl release` prints.

use crate::error::{MechError, Result};
use crate::ledger::WindowLedger;
use crate::scheme::{StepBudget, StreamScheme};

/// The outcome of a whole run (the data of `tpl release`'s JSON, `docs/w-event.md` §2.3).
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
