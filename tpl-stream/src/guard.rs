//! Enforcement before noise ([`docs/stream.md`](tpl_core::guide::stream) §3): every draw a scheme
//! asks for passes the stream's own checks first — the window of w steps stays within ε, and with
//! matrices and α the audited TPL of every step so far stays within α — or no noise is drawn at
//! all.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tpl_alloc::StreamAudit;
use tpl_core::Correlation;
use tpl_mechanisms::{
    MechError, Mechanism, StepBudget, WindowLedger, checked_effective_budget, effective_budget,
};

use crate::error::{Result, StreamError};

/// x ≤ bound, false when x is NaN: the one comparison every promise check makes.
pub(crate) fn within(x: f64, bound: f64) -> bool {
    x <= bound
}

/// The spend of the stream so far and of the step under way, shared between the stream and
/// its mechanism.
pub(crate) struct Guard {
    epsilon: f64,
    sensitivity: f64,
    /// Totals ε_t of the recorded steps, windows of the promise's length (1 for the
    /// event-level `laplace`).
    ledger: WindowLedger,
    /// With matrices: the realised leakage of the effective budgets ε_t·2/Δ of the recorded
    /// steps, but for those in `pending`.
    audit: Option<StreamAudit>,
    /// Effective budgets of recorded steps not yet in `audit`: they reach it all at once
    /// ([`StreamAudit::extend`], one pass) when the audit is next read, so that a process
    /// recording a long stream's steps does not walk back over the FPL at each of them.
    pending: Vec<f64>,
    alpha: Option<f64>,
    /// This step's spend so far (sum of the admitted draws, rounded up).
    step: f64,
    /// Why the step's last draw was refused, if it was.
    refused: Option<String>,
}

impl Guard {
    /// A guard for a stream with no recorded step, auditing windows of `window` steps.
    pub fn new(
        epsilon: f64,
        sensitivity: f64,
        corr: Option<Correlation>,
        alpha: Option<f64>,
        window: usize,
    ) -> Result<Self> {
        let audit = corr
            .map(|c| StreamAudit::new(c, window))
            .transpose()
            .map_err(|e| StreamError::Config(crate::ConfigError::Matrices(e)))?;
        Ok(Self {
            epsilon,
            sensitivity,
            ledger: WindowLedger::new(1),
            audit,
            pending: Vec::new(),
            alpha,
            step: 0.0,
            refused: None,
        })
    }

    /// Sets the length of the windows checked (before any step is recorded).
    pub fn set_window(&mut self, window: usize) {
        self.ledger = WindowLedger::new(window);
    }

    /// ε of every window.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// Whether the realised leakage is audited (the stream has matrices), so that every
    /// step's budget must reach the audit.
    pub fn audits(&self) -> bool {
        self.audit.is_some()
    }

    /// Starts a step: nothing spent, nothing refused.
    pub fn begin(&mut self) {
        self.step = 0.0;
        self.refused = None;
    }

    /// This step's spend so far.
    pub fn spent(&self) -> f64 {
        self.step
    }

    /// Why the step was refused, if it was.
    pub fn refused(&self) -> Option<&str> {
        self.refused.as_deref()
    }

    /// Admits a draw of `budget`, or says which promise it would break (then nothing is
    /// drawn and the step's spend is unchanged).
    fn admit(&mut self, budget: f64) -> std::result::Result<(), String> {
        let total = StepBudget { test: self.step, publication: budget, absorbed: 0.0 }.total();
        let window = self.ledger.peek(total);
        if !within(window, self.epsilon) {
            return Err(format!(
                "its budget {total} would take a window to {window}, over epsilon = {}",
                self.epsilon
            ));
        }
        if self.alpha.is_some() {
            self.flush().map_err(|e| e.to_string())?;
        }
        if let (Some(audit), Some(alpha)) = (&self.audit, self.alpha) {
            // A loss 2·ε/Δ that overflows is the sensitivity's, not an infinite budget's.
            let effective = checked_effective_budget(total, self.sensitivity).map_err(|e| e.to_string())?;
            let tpl = audit.max_tpl_with(effective).map_err(|e| e.to_string())?;
            if !within(tpl, alpha) {
                return Err(format!(
                    "its budget {total} would take the temporal leakage to {tpl}, over alpha = {alpha}"
                ));
            }
        }
        self.step = total;
        Ok(())
    }

    /// Records a finished step that spent `total`; returns the sum of the window it ends
    /// (exact, rounded up).
    ///
    /// # Errors
    /// As [`Guard::account`] (nothing is recorded then).
    pub fn record(&mut self, total: f64) -> std::result::Result<f64, AuditError> {
        self.account(total)?;
        Ok(self.ledger.push(total))
    }

    /// Records an earlier step that spent `total` in the audit only: a step before the last
    /// w − 1, which no window checked from now on contains. Its leakage is computed when the
    /// audit is next read.
    ///
    /// # Errors
    /// A budget that is not finite and ≥ 0 (it is not recorded), or the error of the steps
    /// recorded before it, which reach the audit first ([`Guard::leakage`]).
    pub fn account(&mut self, total: f64) -> std::result::Result<(), AuditError> {
        if self.audit.is_none() {
            return Ok(());
        }
        let effective = effective_budget(total, self.sensitivity);
        if tpl_core::is_budget(effective) {
            self.pending.push(effective);
            return Ok(());
        }
        self.flush()?;
        match &mut self.audit {
            Some(audit) => {
                let step = audit.len() + 1;
                if let Err(e) = checked_effective_budget(total, self.sensitivity) {
                    return Err(AuditError { step, reason: e.to_string() });
                }
                audit.push(effective).map_err(|source| AuditError { step, reason: source.to_string() })
            }
            None => Ok(()),
        }
    }

    /// Brings the steps recorded since the audit was last read into it.
    ///
    /// # Errors
    /// A leakage beyond the largest double, at the first step where it is: the steps before
    /// it are in the audit, and it and the ones after stay pending, so that every later read
    /// fails the same way (a guard never goes on from an audit that misses a step).
    fn flush(&mut self) -> std::result::Result<(), AuditError> {
        let Some(audit) = &mut self.audit else { return Ok(()) };
        if self.pending.is_empty() {
            return Ok(());
        }
        let before = audit.len();
        let result = audit.extend(&self.pending);
        self.pending.drain(..audit.len() - before);
        result.map_err(|source| AuditError { step: audit.len() + 1, reason: source.to_string() })
    }

    /// The audit's steps as bytes ([`StreamAudit::history`]); `None` without matrices.
    ///
    /// # Errors
    /// As [`Guard::leakage`].
    pub fn audit_history(&mut self) -> std::result::Result<Option<Vec<u8>>, AuditError> {
        self.flush()?;
        Ok(self.audit.as_ref().map(StreamAudit::history))
    }

    /// Puts the steps of `history` into the audit, which has none yet
    /// ([`StreamAudit::restored`]); false (and nothing changed) for a history it does not
    /// take, or while recorded steps wait for the audit.
    pub fn restore_audit(&mut self, history: &[u8]) -> bool {
        if !self.pending.is_empty() {
            return false;
        }
        match self.audit.as_ref().and_then(|a| a.restored(history)) {
            Some(restored) => {
                self.audit = Some(restored);
                true
            }
            None => false,
        }
    }

    /// The audited (realised) leakage of the recorded steps: max TPL and the largest
    /// leakage of a window of min(w, T) steps; `None` without matrices or steps.
    ///
    /// # Errors
    /// A leakage beyond the largest double (of a step recorded since the audit was last read,
    /// or of the windows).
    pub fn leakage(&mut self) -> std::result::Result<Option<(f64, f64)>, AuditError> {
        self.flush()?;
        match &self.audit {
            Some(audit) => {
                audit.leakage().map_err(|source| AuditError { step: audit.len(), reason: source.to_string() })
            }
            None => Ok(None),
        }
    }
}

/// Why the leakage audit failed: the step it failed at (1-based: the one being recorded, or
/// the last when the leakage of the steps recorded is read) and the reason: the audit's
/// error, which names where the leakage overflows (a window may start earlier), or a budget
/// whose loss 2·ε/Δ overflows at the stream's sensitivity.
#[derive(Debug)]
pub(crate) struct AuditError {
    step: usize,
    reason: String,
}

impl std::fmt::Display for AuditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "at step {}: {}", self.step, self.reason)
    }
}

/// The guard, shared by a stream's state and its mechanism (which the scheme owns); a handle
/// may move between threads.
pub(crate) type SharedGuard = Arc<Mutex<Guard>>;

/// The guard, locked. A thread that panicked while holding it left nothing half-written that
/// a later step relies on (every update is a single assignment after its checks), so a
/// poisoned lock is taken over.
pub(crate) fn lock(guard: &SharedGuard) -> MutexGuard<'_, Guard> {
    guard.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The stream's mechanism: the built-in Laplace mechanism or the application's, over the
/// stream's sampler, every draw admitted by the [`Guard`] first — so that what the guard
/// records is what the mechanism drew, whoever wrote it.
pub(crate) struct Enforced {
    inner: Box<dyn Mechanism + Send>,
    guard: SharedGuard,
}

impl Enforced {
    pub fn new(inner: Box<dyn Mechanism + Send>, guard: SharedGuard) -> Self {
        Self { inner, guard }
    }
}

impl Mechanism for Enforced {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn validate(&self, answer: &[f64]) -> tpl_mechanisms::Result<()> {
        self.inner.validate(answer)
    }

    fn privacy_map(&self, d_in: f64, sensitivity: f64, budget: f64) -> tpl_mechanisms::Result<f64> {
        self.inner.privacy_map(d_in, sensitivity, budget)
    }

    fn check_budget(&self, sensitivity: f64, budget: f64) -> tpl_mechanisms::Result<()> {
        self.inner.check_budget(sensitivity, budget)
    }

    /// Checks that the sampler can draw at this budget, admits the draw, then draws; a
    /// refused draw draws nothing and fails the step.
    fn sample(&mut self, answer: &[f64], sensitivity: f64, budget: f64) -> tpl_mechanisms::Result<Vec<f64>> {
        self.inner.check_budget(sensitivity, budget)?;
        let mut guard = lock(&self.guard);
        if let Err(reason) = guard.admit(budget) {
            guard.refused = Some(reason.clone());
            return Err(MechError::custom(reason));
        }
        drop(guard);
        self.inner.sample(answer, sensitivity, budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tpl_core::test_util::both_sides;

    #[test]
    fn a_draw_that_would_take_a_window_over_epsilon_is_refused() {
        let mut g = Guard::new(1.0, 2.0, None, None, 2).unwrap();
        g.set_window(2);
        g.begin();
        g.admit(0.75).unwrap();
        assert_eq!(g.record(g.spent()).unwrap(), 0.75);
        g.begin();
        // 0.75 + 0.25 = 1 exactly: admitted; then nothing more fits in this window.
        g.admit(0.125).unwrap();
        g.admit(0.125).unwrap();
        assert!(g.admit(f64::MIN_POSITIVE).is_err());
        assert_eq!(g.spent(), 0.25);
        assert_eq!(g.record(g.spent()).unwrap(), 1.0);
        // The next window holds 0.25 + what comes: 0.75 fits, 0.75 + one ulp does not.
        g.begin();
        assert!(g.admit(0.75f64.next_up()).unwrap_err().contains("over epsilon"));
        g.admit(0.75).unwrap();
    }

    #[test]
    fn steps_recorded_unread_reach_the_audit_as_if_each_were_pushed() {
        let p = tpl_core::TransitionMatrix::smoothed_identity(5, 0.05).unwrap();
        let corr = || Some(both_sides(&p));
        let spent: Vec<f64> = (0..400).map(|t| [0.05, 0.3, 0.0, 0.1][t % 4]).collect();
        let mut eager = StreamAudit::new(corr().unwrap(), 3).unwrap();
        let mut g = Guard::new(1.0, 2.0, corr(), Some(100.0), 3).unwrap();
        g.set_window(3);
        for (t, &e) in spent.iter().enumerate() {
            eager.push(effective_budget(e, 2.0)).unwrap();
            if t < 300 {
                g.account(e).unwrap();
            } else {
                g.record(e).unwrap();
            }
            if t == 299 {
                // Nothing read yet: every step waits; a restore is refused meanwhile.
                assert_eq!(g.pending.len(), 300);
                assert!(!g.restore_audit(&eager.history()));
                assert_eq!(g.audit_history().unwrap().unwrap(), eager.history());
                assert!(g.pending.is_empty());
            }
            if t == 350 {
                g.begin();
                g.admit(0.0).unwrap();
                assert!(g.pending.is_empty());
            }
        }
        assert_eq!(g.leakage().unwrap(), eager.leakage().unwrap());
        assert_eq!(g.audit_history().unwrap().unwrap(), eager.history());
        // A budget the audit refuses is refused at once, after the steps before it.
        assert!(g.account(f64::NAN).is_err());
        assert_eq!(g.audit_history().unwrap().unwrap(), eager.history());
    }

    #[test]
    fn a_step_whose_leakage_overflows_stays_pending_and_every_read_fails() {
        let p = tpl_core::TransitionMatrix::smoothed_identity(3, 0.05).unwrap();
        let corr = Some(both_sides(&p));
        let mut g = Guard::new(f64::MAX, 2.0, corr, None, 2).unwrap();
        for e in [0.5, 1.5e308, 1.5e308, 0.5] {
            g.account(e).unwrap();
        }
        assert_eq!(g.leakage().unwrap_err().to_string().split(':').next(), Some("at step 3"));
        // The two steps before the overflow are in the audit; the rest wait, and fail again.
        assert_eq!(g.audit.as_ref().unwrap().len(), 2);
        assert_eq!(g.pending.len(), 2);
        assert!(g.leakage().is_err());
        assert!(g.audit_history().is_err());
        assert!(g.record(0.5).is_ok_and(|_| g.leakage().is_err()));
    }
}
