//! An independent checker of invariant (W) (w-event spec §1–2).

/// Fed with the budgets ε_t a scheme spent, it sums every window of w steps afresh, in
/// step order (never a running add-and-subtract, whose cancellation error could exceed the
/// 1e−12 slack of (W)), and keeps the largest sum.
///
/// ```
/// use tpl_mechanisms::WindowLedger;
/// let mut l = WindowLedger::new(2);
/// for e in [0.5, 0.25, 0.5] { l.push(e); }
/// assert_eq!(l.max_window_budget(), 0.75);
/// ```
#[derive(Debug, Clone)]
pub struct WindowLedger {
    window: usize,
    budgets: Vec<f64>,
    max: f64,
}

impl WindowLedger {
    /// A ledger for windows of `window` ≥ 1 steps.
    pub fn new(window: usize) -> Self {
        Self { window: window.max(1), budgets: Vec::new(), max: 0.0 }
    }

    /// Records ε_t and returns the sum of the window ending at t.
    pub fn push(&mut self, eps: f64) -> f64 {
        self.budgets.push(eps);
        let start = self.budgets.len().saturating_sub(self.window);
        let sum: f64 = self.budgets[start..].iter().sum();
        self.max = self.max.max(sum);
        sum
    }

    /// max over t of Σ_{k = max(1, t−w+1)}^{t} ε_k.
    pub fn max_window_budget(&self) -> f64 {
        self.max
    }

    /// Whether every window stayed within ε (with the 1e−12 relative slack for rounding).
    pub fn within(&self, epsilon: f64) -> bool {
        self.max <= epsilon * (1.0 + 1e-12)
    }
}
