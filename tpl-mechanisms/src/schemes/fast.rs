//! `fast`: filtering and adaptive sampling (Fan and Xiong, CIKM 2012 / TKDE 2014), in the
//! w-event form of the benchmark set ([`docs/w-event.md`](tpl_core::guide::w_event) §3.11).

use std::collections::VecDeque;

use crate::error::{MechError, Result};
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::{DecisionRule, FromParams, RecentSpend, Scheme, Step, StepBudget, StepOutcome};

/// `fast`: at most M samples per window, each with ε/M; a sample is the noisy counts
/// corrected by a Kalman filter whose prediction is the last release, and a PID controller
/// on the filter's relative correction sets the interval to the next sample. Between samples
/// the prediction (the last release) is repeated.
///
/// (W): at most M steps of any window publish, each with ⌊ε/M⌋ on the grid, and no step
/// spends anything else. The schedule, the gain and the controller read releases only.
/// State: the filter's variance, the controller's last errors and the schedule, which depend
/// on every step: a resumed stream replays them all ([`DecisionRule::memory`] is `None`).
pub type Fast<M> = Scheme<FastRule, M>;

/// The parameters of [`Fast`], with the defaults of
/// [`docs/w-event.md`](tpl_core::guide::w_event) §3.11.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FastConfig {
    /// M/w: a window holds at most M = ⌊ratio·w⌋ samples (at least 1). Default 0.15.
    pub sample_ratio: f64,
    /// Q, the process noise variance of the filter's random walk. Default 10⁵.
    pub process_variance: f64,
    /// R, the measurement noise variance. Default 10⁶.
    pub measurement_variance: f64,
    /// P₀, the variance before the first sample. Default 100.
    pub initial_variance: f64,
    /// C_p, the proportional gain. Default 0.9.
    pub proportional: f64,
    /// C_i, the integral gain. Default 0.1.
    pub integral: f64,
    /// C_d, the derivative gain. Default 0.
    pub derivative: f64,
    /// T_i, the samples the integral term averages over (and that are taken before the
    /// controller acts). Default 5.
    pub integral_window: usize,
    /// θ, the largest step by which the interval grows. Default 5.
    pub theta: f64,
    /// ξ, the controller's set point. Default 0.1.
    pub xi: f64,
}

impl Default for FastConfig {
    fn default() -> Self {
        Self {
            sample_ratio: 0.15,
            process_variance: 1e5,
            measurement_variance: 1e6,
            initial_variance: 100.0,
            proportional: 0.9,
            integral: 0.1,
            derivative: 0.0,
            integral_window: 5,
            theta: 5.0,
            xi: 0.1,
        }
    }
}

impl FastConfig {
    /// Checks every parameter: ratio ∈ (0, 1]; Q, P₀ ≥ 0 and R > 0; gains and θ ≥ 0; ξ > 0
    /// (all finite); T_i ≥ 1.
    ///
    /// # Errors
    /// [`MechError::BadSchemeParameter`] naming the first parameter out of range.
    pub fn check(&self) -> Result<()> {
        let bad = |name: &'static str, value: f64, range: &'static str| {
            Err(MechError::BadSchemeParameter { scheme: "fast", name, value, range })
        };
        if !(self.sample_ratio > 0.0 && self.sample_ratio <= 1.0) {
            return bad("sample_ratio", self.sample_ratio, "in (0, 1]");
        }
        let at_least_0 = [
            ("process_variance", self.process_variance),
            ("initial_variance", self.initial_variance),
            ("proportional", self.proportional),
            ("integral", self.integral),
            ("derivative", self.derivative),
            ("theta", self.theta),
        ];
        if let Some((name, v)) = at_least_0.into_iter().find(|(_, v)| !(v.is_finite() && *v >= 0.0)) {
            return bad(name, v, "finite and ≥ 0");
        }
        for (name, v) in [("measurement_variance", self.measurement_variance), ("xi", self.xi)] {
            if !(v.is_finite() && v > 0.0) {
                return bad(name, v, "finite and > 0");
            }
        }
        if self.integral_window == 0 {
            return bad("integral_window", 0.0, "at least 1");
        }
        Ok(())
    }

    /// M = ⌊ratio·w⌋, between 1 and w.
    pub fn samples(&self, window: usize) -> usize {
        ((self.sample_ratio * window as f64) as usize).clamp(1, window)
    }
}

/// The decision rule of [`Fast`].
#[derive(Debug, Clone)]
pub struct FastRule {
    config: FastConfig,
    /// M.
    samples: usize,
    /// ε/M on the grid.
    budget: f64,
    /// 1 for each of the last w − 1 steps that sampled.
    recent: RecentSpend<1>,
    /// Samples so far.
    taken: usize,
    /// P, the filter's variance after the last step.
    variance: f64,
    /// The interval between scheduled samples.
    interval: usize,
    /// The step of the next scheduled sample.
    next: usize,
    /// (step, feedback error) of the last T_i samples.
    errors: VecDeque<(usize, f64)>,
    /// The last release (the prediction of the next step).
    last: Vec<f64>,
}

impl FastRule {
    /// The rule with `config` for `params`.
    ///
    /// # Errors
    /// As [`FastConfig::check`].
    pub fn new(params: &WEventParams, config: FastConfig) -> Result<Self> {
        config.check()?;
        Ok(Self::build(params, config))
    }

    /// The rule for parameters that passed [`FastConfig::check`].
    fn build(params: &WEventParams, config: FastConfig) -> Self {
        let grid = params.grid();
        let samples = config.samples(params.window());
        Self {
            config,
            samples,
            budget: grid.share(grid.epsilon(), samples),
            recent: RecentSpend::new(params.window()),
            taken: 0,
            variance: config.initial_variance,
            interval: 1,
            next: 1,
            errors: VecDeque::new(),
            last: Vec::new(),
        }
    }

    /// The parameters the rule runs with.
    pub fn config(&self) -> &FastConfig {
        &self.config
    }

    /// Whether step `t` samples: within its window's M, and either still warming up (fewer
    /// than T_i samples so far, when the controller has nothing to act on) or at or past the
    /// scheduled step (a scheduled sample the window has no room for waits for it).
    fn samples_at(&self, t: usize) -> bool {
        self.recent.sum(0) < self.samples as u128
            && (self.taken < self.config.integral_window || t >= self.next)
    }

    /// The Kalman gain K = P⁻/(P⁻ + R) of a sample, P⁻ = P + Q the prediction's variance.
    fn gain(&self) -> f64 {
        let prior = self.variance + self.config.process_variance;
        prior / (prior + self.config.measurement_variance)
    }

    /// The relative correction of a sample: Σ|x − x⁻| / max(Σ|x|, 1) of the release x and the
    /// prediction x⁻ (the feedback error of the paper, over all cells).
    fn feedback(release: &[f64], prediction: &[f64]) -> f64 {
        let change: f64 = release.iter().zip(prediction).map(|(x, p)| (x - p).abs()).sum();
        let mass: f64 = release.iter().map(|x| x.abs()).sum();
        change / mass.max(1.0)
    }

    /// Takes step `t` into the state: the filter's variance, and for a sample the
    /// controller's error and the next scheduled step (the same whether decided or restored).
    fn record(&mut self, t: usize, outcome: &StepOutcome) {
        let prior = self.variance + self.config.process_variance;
        self.recent.push([u128::from(outcome.published)]);
        if !outcome.published {
            self.variance = prior;
            return;
        }
        if t == 1 {
            self.variance = self.config.initial_variance;
        } else {
            self.variance = prior * (1.0 - self.gain());
            let e = Self::feedback(&outcome.release, &self.last);
            self.errors.push_back((t, e));
            if self.errors.len() > self.config.integral_window {
                self.errors.pop_front();
            }
        }
        self.taken += 1;
        // The controller acts at the samples after the T_i of the warm-up.
        if self.taken > self.config.integral_window {
            self.interval = self.next_interval();
        }
        self.next = t.saturating_add(self.interval);
        self.last.clone_from(&outcome.release);
    }

    /// The PID step: Δ = C_p·e_n + C_i·mean(e over the last T_i samples) + C_d·(e_n −
    /// e_{n−1})/(t_n − t_{n−1}); the interval grows by ⌊θ·(1 − e^{(Δ − ξ)/ξ})⌋ (negative when
    /// the error exceeds ξ), never below 1.
    fn next_interval(&self) -> usize {
        let c = &self.config;
        let Some(&(t_n, e_n)) = self.errors.back() else { return self.interval };
        let mean = self.errors.iter().map(|(_, e)| e).sum::<f64>() / self.errors.len() as f64;
        let slope = match self.errors.len().checked_sub(2).and_then(|i| self.errors.get(i)) {
            Some(&(t_p, e_p)) if t_n > t_p => (e_n - e_p) / (t_n - t_p) as f64,
            _ => 0.0,
        };
        let delta = c.proportional * e_n + c.integral * mean + c.derivative * slope;
        let change = (c.theta * (1.0 - ((delta - c.xi) / c.xi).exp())).trunc();
        // change ≤ θ; a very negative (or −∞) change brings the interval to 1.
        let grown = self.interval as f64 + change;
        if grown.is_nan() || grown < 1.0 { 1 } else { grown.min(usize::MAX as f64) as usize }
    }
}

impl FromParams for FastRule {
    /// The rule with the defaults of [`FastConfig`], which always pass its check.
    fn from_params(params: &WEventParams) -> Self {
        Self::build(params, FastConfig::default())
    }
}

/// The Kalman correction of the draw z against the prediction x⁻: x⁻ + K·(z − x⁻), rounded to
/// an integer when the draw is one (the exact sampler's releases stay integers).
fn corrected(draw: &[f64], prediction: &[f64], gain: f64) -> Vec<f64> {
    let integers = draw.iter().all(|z| z.fract() == 0.0);
    draw.iter()
        .zip(prediction)
        .map(|(z, p)| {
            let x = p + gain * (z - p);
            if integers { x.round() } else { x }
        })
        .collect()
}

impl DecisionRule for FastRule {
    fn step<M: Mechanism>(&mut self, cx: Step<'_, M>) -> Result<StepOutcome> {
        let t = cx.t();
        let out = if t == 1 {
            cx.publish(StepBudget::fresh(self.budget))?
        } else if self.samples_at(t) && cx.can_publish(self.budget) {
            let (prediction, gain) = (&self.last, self.gain());
            cx.publish_filtered(StepBudget::fresh(self.budget), |z| corrected(z, prediction, gain))?
        } else {
            cx.repeat(StepBudget::default())?
        };
        self.record(t, &out);
        Ok(out)
    }

    fn restore(&mut self, _: &WEventParams, t: usize, outcome: &StepOutcome) {
        self.record(t, outcome);
    }

    /// The filter, the controller and the schedule depend on every step since the first.
    fn memory(&self, _: &WEventParams) -> Option<usize> {
        None
    }

    /// ε/M at every step: any step may be a sample.
    fn max_spend(&self, _: &WEventParams, _: usize) -> f64 {
        self.budget
    }

    fn name(&self) -> &str {
        super::SchemeKind::Fast.name()
    }
}
