//! `dsat`: distance-based sampling with an adaptive threshold (Li, Xiong, Jiang, Liu, CIKM
//! 2015, Algorithms 2 and 3; [`docs/w-event.md`](tpl_core::guide::w_event) §3.10).

use crate::error::{MechError, Result};
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::{DecisionRule, FromParams, RecentSpend, Scheme, Step, StepBudget, StepOutcome};

/// `dsat`: at most C fresh releases per window, each with ε₂/C; a step that may still publish
/// tests the noisy distance between c_t and the last release (both as shares of the last
/// release's total) against a threshold that a feedback controller moves with the window's
/// sampling rate, and publishes when the distance reaches it.
///
/// (W): every step tests with at most ε₁/w and at most C steps of a window publish with ε₂/C,
/// so a window spends ≤ w·ε₁/w + C·ε₂/C ≤ ε, in the integers of the budget grid. The threshold
/// moves with the number of publications only, so it is public. State: the last w − 1 steps
/// and the threshold, which depends on every step: a resumed stream replays them all
/// ([`DecisionRule::memory`] is `None`).
pub type Dsat<M> = Scheme<DsatRule, M>;

/// The parameters of [`Dsat`], with the defaults of [`docs/w-event.md`](tpl_core::guide::w_event)
/// §3.10.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DsatConfig {
    /// T, the threshold's starting value, on the scale of an L1 distance between two
    /// distributions (0 to 2). Default 0.025.
    pub threshold: f64,
    /// δ, the tolerance of the sampling rate's error. Default 0.05.
    pub tolerance: f64,
    /// θ, the proportional gain of the threshold's controller. Default 0.5.
    pub gain: f64,
    /// C/w: the publications a window may hold are C = ⌈ratio·w⌉ (at least 1, at most w).
    /// Default 0.15.
    pub cap_ratio: f64,
    /// M, the steps after the first that neither test nor publish. Default 2.
    pub skip: usize,
    /// k, the share of ε the tests of a window spend (ε₁ = k·ε, ε₂ = (1 − k)·ε); `None`: the
    /// cap of Theorem 5.4, 1 − C/w.
    pub test_share: Option<f64>,
}

impl Default for DsatConfig {
    fn default() -> Self {
        Self { threshold: 0.025, tolerance: 0.05, gain: 0.5, cap_ratio: 0.15, skip: 2, test_share: None }
    }
}

impl DsatConfig {
    /// Checks every parameter: T ∈ [0, 2], δ > 0, θ ≥ 0 (all finite), ratio ∈ (0, 1], k ∈ [0, 1).
    ///
    /// # Errors
    /// [`MechError::BadSchemeParameter`] naming the first parameter out of range.
    pub fn check(&self) -> Result<()> {
        let bad = |name: &'static str, value: f64, range: &'static str| {
            Err(MechError::BadSchemeParameter { scheme: "dsat", name, value, range })
        };
        if !(0.0..=2.0).contains(&self.threshold) {
            return bad("threshold", self.threshold, "between 0 and 2");
        }
        if !(self.tolerance.is_finite() && self.tolerance > 0.0) {
            return bad("tolerance", self.tolerance, "finite and > 0");
        }
        if !(self.gain.is_finite() && self.gain >= 0.0) {
            return bad("gain", self.gain, "finite and ≥ 0");
        }
        if !(self.cap_ratio > 0.0 && self.cap_ratio <= 1.0) {
            return bad("cap_ratio", self.cap_ratio, "in (0, 1]");
        }
        if let Some(k) = self.test_share
            && !(0.0..1.0).contains(&k)
        {
            return bad("test_share", k, "in [0, 1)");
        }
        Ok(())
    }

    /// C = ⌈ratio·w⌉, between 1 and w.
    pub fn cap(&self, window: usize) -> usize {
        let c = (self.cap_ratio * window as f64).ceil();
        // A saturating conversion: c ≤ ratio·w ≤ w for ratio ≤ 1.
        (c as usize).clamp(1, window)
    }

    /// k: the configured share, or 1 − C/w.
    pub fn k(&self, window: usize) -> f64 {
        self.test_share.unwrap_or(1.0 - self.cap(window) as f64 / window as f64)
    }
}

/// The decision rule of [`Dsat`].
#[derive(Debug, Clone)]
pub struct DsatRule {
    config: DsatConfig,
    /// C.
    cap: usize,
    /// The test budget of a step, ε₁/w rounded down to the grid.
    test: f64,
    /// The publication budget, ε₂/C rounded down to the grid (w·test + C·publication ≤ ε).
    publication: f64,
    /// 1 for each of the last w − 1 steps that published.
    recent: RecentSpend<1>,
    /// T̃, the threshold.
    threshold: f64,
}

impl DsatRule {
    /// The rule with `config` for `params`.
    ///
    /// # Errors
    /// As [`DsatConfig::check`].
    pub fn new(params: &WEventParams, config: DsatConfig) -> Result<Self> {
        config.check()?;
        Ok(Self::build(params, config))
    }

    /// The rule for parameters that passed [`DsatConfig::check`]: the tests of a window take
    /// ⌊k·ε⌋ grid units, w equal shares of them, and the publications what is left, C equal
    /// shares, each made smaller until a publishing step's total (test + publication, rounded
    /// up for windows of 2^21 steps or more) keeps C·total + (w − C)·test ≤ ε in grid units.
    fn build(params: &WEventParams, config: DsatConfig) -> Self {
        let (grid, w) = (params.grid(), params.window());
        let cap = config.cap(w);
        let (k, c) = (grid.epsilon(), cap as u128);
        let tests = grid.units(params.epsilon() * config.k(w)).min(k);
        let test_units = tests / w as u128;
        let test = grid.value(test_units);
        let others = (w - cap) as u128 * test_units;
        let mut units = (k - test_units * w as u128) / c;
        let mut publication = grid.value(units);
        loop {
            let total = grid.units(StepBudget { test, publication, absorbed: 0.0 }.total());
            let spent = total.saturating_mul(c).saturating_add(others);
            if spent <= k || units == 0 {
                break;
            }
            units = units.saturating_sub((spent - k).div_ceil(c).max(1));
            publication = grid.value(units);
        }
        Self { config, cap, test, publication, recent: RecentSpend::new(w), threshold: config.threshold }
    }

    /// The parameters the rule runs with.
    pub fn config(&self) -> &DsatConfig {
        &self.config
    }

    /// The threshold step `t` tests against, the same whether the step is decided or restored:
    /// `None` when the step may not test (the first step, the M skipped ones, a window that
    /// holds C publications); otherwise T̃ after the controller's move, which compares the
    /// window's sampling rate (publications over min(t, w) steps) with the target C/w.
    fn threshold_at(&self, params: &WEventParams, t: usize) -> Option<f64> {
        let count = self.recent.sum(0);
        if t <= 1 + self.config.skip || count >= self.cap as u128 {
            return None;
        }
        let w = params.window();
        let error = count as f64 / t.min(w) as f64 - self.cap as f64 / w as f64;
        let delta = self.config.tolerance;
        let u = self.config.gain * ((error.abs() - delta).abs() / delta);
        Some(if error <= 0.0 { (self.threshold - u).max(0.0) } else { (self.threshold + u).min(2.0) })
    }

    /// Takes a step into the window's count of publications, and its threshold when it tested.
    fn record(&mut self, threshold: Option<f64>, published: bool) {
        if let Some(th) = threshold {
            self.threshold = th;
        }
        self.recent.push([u128::from(published)]);
    }
}

impl FromParams for DsatRule {
    /// The rule with the defaults of [`DsatConfig`], which always pass its check.
    fn from_params(params: &WEventParams) -> Self {
        Self::build(params, DsatConfig::default())
    }
}

impl DecisionRule for DsatRule {
    fn step<M: Mechanism>(&mut self, mut cx: Step<'_, M>) -> Result<StepOutcome> {
        let (t, params, p) = (cx.t(), cx.params(), self.publication);
        if t == 1 {
            let spent = StepBudget::fresh(p);
            let out = cx.publish(spent)?;
            self.record(None, true);
            return Ok(out);
        }
        let threshold = self.threshold_at(params, t);
        let Some(th) = threshold.filter(|_| cx.can_publish(p)) else {
            let out = cx.repeat(StepBudget::default())?;
            self.record(threshold, false);
            return Ok(out);
        };
        let reach = if self.test > 0.0 {
            // Σ_j |c_j − r_j| over the last release's total: the distance of the two as
            // distributions (the total is a release's, hence public).
            let mass: f64 = cx.last_release().iter().sum();
            let cells = cx.last_release().len() as f64;
            cx.noisy_dissimilarity_at(self.test)? * cells / mass.max(1.0) >= th
        } else {
            true
        };
        let spent = StepBudget { test: self.test, publication: if reach { p } else { 0.0 }, absorbed: 0.0 };
        let out = if reach { cx.publish(spent)? } else { cx.repeat(spent)? };
        self.record(threshold, reach);
        Ok(out)
    }

    /// Replays the controller's move of [`DecisionRule::step`] and records whether the step
    /// published.
    fn restore(&mut self, params: &WEventParams, t: usize, outcome: &StepOutcome) {
        let threshold = self.threshold_at(params, t);
        self.record(threshold, outcome.published);
    }

    /// The threshold depends on every step since the first.
    fn memory(&self, _: &WEventParams) -> Option<usize> {
        None
    }

    /// t = 1: the publication; t ≤ 1 + M: nothing; later: a test and a publication.
    fn max_spend(&self, _: &WEventParams, t: usize) -> f64 {
        match t {
            1 => self.publication,
            t if t <= 1 + self.config.skip => 0.0,
            _ => StepBudget { test: self.test, publication: self.publication, absorbed: 0.0 }.total(),
        }
    }

    /// The publication alone, or a test and a publication when steps after the skipped ones exist.
    fn max_step_budget(&self, params: &WEventParams) -> f64 {
        self.max_spend(params, 1).max(self.max_spend(params, self.config.skip.saturating_add(2)))
    }

    fn name(&self) -> &str {
        super::SchemeKind::Dsat.name()
    }
}
