//! The stream-scheme interface ([`docs/w-event.md`](tpl_core::guide::w_event) §2): one step in, one
//! release out, with the budget actually spent, the guarantee the scheme keeps and the most any
//! step can spend; and [`Scheme`], the one implementation of it that every built-in scheme shares
//! (each supplies only its decision rule).

use std::collections::VecDeque;

use crate::budget::sum_up;
use crate::error::{MechError, Result};
use crate::ledger::WindowLedger;
use crate::mechanism::{Mechanism, check_privacy_map};
use crate::params::WEventParams;

/// The budget one step spent ([`docs/w-event.md`](tpl_core::guide::w_event) §1.6): everything that
/// read c_t.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct StepBudget {
    /// Spent by the dissimilarity test.
    pub test: f64,
    /// Spent by the publication (0 when the previous release is repeated).
    pub publication: f64,
    /// The part of `publication` taken from earlier steps' unused shares (BA) or from the
    /// correlation pool (PBA).
    pub absorbed: f64,
}

impl StepBudget {
    /// A publication of `publication` without a test, nothing absorbed.
    pub fn fresh(publication: f64) -> Self {
        Self { test: 0.0, publication, absorbed: 0.0 }
    }

    /// ε_t = test + publication, rounded up if the f64 sum is inexact (never below what the
    /// step spent). The stream schemes choose budgets whose sum is exact (see
    /// [`crate::WEventParams::share`]) while w < 2^21.
    pub fn total(&self) -> f64 {
        sum_up(self.test, self.publication)
    }
}

/// What one step released.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct StepOutcome {
    /// r_t: a fresh noisy vector, or a bit-for-bit copy of r_{t−1}.
    pub release: Vec<f64>,
    /// Whether r_t is fresh.
    pub published: bool,
    /// What the step spent.
    pub spent: StepBudget,
}

/// The differential-privacy guarantee a scheme keeps for every stream and every noise
/// outcome, provided its mechanism is calibrated as promised ([`Mechanism::privacy_map`]).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "kind", rename_all = "snake_case"))]
pub enum PrivacyGuarantee {
    /// w-event ε-DP ([`docs/w-event.md`](tpl_core::guide::w_event) §1.4): every window of `window`
    /// consecutive steps spends at most `epsilon`, exactly in f64 (invariant (W), §1.7 and §4).
    WEvent {
        /// ε per window.
        epsilon: f64,
        /// w.
        window: usize,
    },
    /// Event-level ε-DP only: each step spends at most `epsilon` (`laplace`, §3.1).
    EventLevel {
        /// ε per step.
        epsilon: f64,
    },
}

/// A stateful stream scheme: decides at each step whether to publish and with what budget.
/// Every scheme but `laplace` keeps every window of w steps within ε (invariant (W)).
///
/// Besides the step itself it states what holds for *every* run, before any data are seen:
/// its [`StreamScheme::guarantee`] and the most any step can spend
/// ([`StreamScheme::max_spend`]), from which an auditor bounds the leakage of every run the
/// scheme could produce ([`docs/w-event.md`](tpl_core::guide::w_event) §6, guaranteed leakage).
pub trait StreamScheme {
    /// The scheme's name as on the command line.
    fn name(&self) -> &str;

    /// Its parameters.
    fn params(&self) -> &WEventParams;

    /// Steps processed so far.
    fn steps(&self) -> usize;

    /// Processes c_t. Input is checked before any randomness is drawn; on error nothing
    /// changes.
    ///
    /// # Errors
    /// Wrong length, non-finite counts, counts the mechanism refuses, a step past a plan's
    /// horizon, or an error of the mechanism.
    fn step(&mut self, counts: &[f64]) -> Result<StepOutcome>;

    /// The guarantee every run keeps.
    fn guarantee(&self) -> PrivacyGuarantee;

    /// The largest ε_t (test + publication, as [`StepBudget::total`]) that step `t` (1-based)
    /// can spend in any run, on any stream and any noise outcome.
    fn max_spend(&self, t: usize) -> f64;

    /// The largest ε_t any step can spend: the maximum of [`StreamScheme::max_spend`] over t.
    fn max_step_budget(&self) -> f64;

    /// Whether every run spends exactly [`StreamScheme::max_spend`] at every step (budgets
    /// fixed in advance, whatever the data and the noise), so that the leakage of any run is
    /// the audit of those caps. Default: false, which is always safe (the caps then only
    /// bound what a run spends).
    fn spends_its_caps(&self) -> bool {
        false
    }

    /// Whether the scheme can be resumed from recorded steps ([`StreamScheme::restore`] and
    /// [`StreamScheme::resume`] accept the records of its own runs). Default: false, with the
    /// default `restore` and `resume` that refuse every record; a scheme that implements them
    /// says true. Every scheme built on [`Scheme`] can.
    fn resumable(&self) -> bool {
        false
    }

    /// How many of the last recorded steps must be restored one by one after
    /// [`StreamScheme::resume`] (the rest are skipped); `None`: every step, from the first
    /// ([`DecisionRule::memory`]). Default: w − 1.
    fn memory(&self) -> Option<usize> {
        Some(self.params().window() - 1)
    }

    /// Takes a step that was decided earlier (a record of [`StreamScheme::step`]'s outcome,
    /// e.g. read back from a durable ledger) as if it had just been stepped, drawing nothing:
    /// the state after restoring outcomes 1..t is the state after stepping them, so the
    /// next [`StreamScheme::step`] decides as an uninterrupted run would.
    ///
    /// # Errors
    /// [`MechError::BadRestore`] for a record the scheme could not have produced at that
    /// step (a first step that did not publish, a release of the wrong length or with
    /// non-finite values, a repeat that differs from the last release, budgets that are not
    /// finite and ≥ 0 or exceed [`StreamScheme::max_spend`], a step past a plan's horizon);
    /// nothing changes then. The default refuses every record: a scheme that cannot be
    /// resumed says so rather than resuming wrongly.
    fn restore(&mut self, outcome: &StepOutcome) -> Result<()> {
        let _ = outcome;
        Err(MechError::BadRestore {
            step: self.steps() + 1,
            reason: format!("scheme {} cannot be resumed from recorded steps", self.name()),
        })
    }

    /// Skips a recorded prefix without reading it all: positions a scheme that has processed
    /// nothing after `steps` steps whose last publication was step `published.0`, with
    /// outcome `published.1`. Restoring the following steps with [`StreamScheme::restore`]
    /// then gives the state of restoring every step from the first, provided at least the
    /// last [`StreamScheme::memory`] steps are restored (a built-in scheme's state beyond its
    /// last release and its last publication is the budgets of the last w − 1 steps): opening
    /// a stream of T steps costs O(min(w, T)) instead of O(T). A scheme whose memory is
    /// `None` refuses.
    ///
    /// # Errors
    /// [`MechError::BadRestore`] for a scheme that already processed steps, a publication
    /// after `steps` or one the scheme could not have produced; nothing changes then. The
    /// default refuses, as [`StreamScheme::restore`]'s does.
    fn resume(&mut self, steps: usize, published: (usize, &StepOutcome)) -> Result<()> {
        let _ = (steps, published);
        Err(MechError::BadRestore {
            step: self.steps() + 1,
            reason: format!("scheme {} cannot be resumed from recorded steps", self.name()),
        })
    }
}

impl<S: StreamScheme + ?Sized> StreamScheme for Box<S> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn params(&self) -> &WEventParams {
        (**self).params()
    }

    fn steps(&self) -> usize {
        (**self).steps()
    }

    fn step(&mut self, counts: &[f64]) -> Result<StepOutcome> {
        (**self).step(counts)
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        (**self).guarantee()
    }

    fn max_spend(&self, t: usize) -> f64 {
        (**self).max_spend(t)
    }

    fn max_step_budget(&self) -> f64 {
        (**self).max_step_budget()
    }

    fn spends_its_caps(&self) -> bool {
        (**self).spends_its_caps()
    }

    fn resumable(&self) -> bool {
        (**self).resumable()
    }

    fn memory(&self) -> Option<usize> {
        (**self).memory()
    }

    fn restore(&mut self, outcome: &StepOutcome) -> Result<()> {
        (**self).restore(outcome)
    }

    fn resume(&mut self, steps: usize, published: (usize, &StepOutcome)) -> Result<()> {
        (**self).resume(steps, published)
    }
}

/// A stream scheme: the shared part (parameters, mechanism, last release, input checks and
/// the enforcement of the rule's promises) around a decision rule `R` that says, step by
/// step, what to spend. The built-in schemes are its instances ([`crate::Bd`] is
/// `Scheme<BdRule, M>`, and so on); a custom scheme is `Scheme<YourRule, M>`.
#[derive(Debug)]
pub struct Scheme<R, M> {
    params: WEventParams,
    mechanism: M,
    stream: StreamState,
    rule: R,
    /// The exact spend of the last steps, against the rule's guarantee.
    ledger: WindowLedger,
    /// The ε every window of the guarantee's length is held to.
    bound: f64,
}

/// The decision rule of a [`Scheme`]: what one scheme decides at each step, and what it
/// promises. The built-in schemes are rules ([`crate::schemes::BdRule`], …); a custom scheme is one
/// more rule plugged into [`Scheme`], which checks the counts before any draw, holds the
/// last release, and enforces what the rule promises at every draw: each step spends at most
/// [`DecisionRule::max_spend`], every window keeps the [`DecisionRule::guarantee`] exactly
/// (a [`crate::WindowLedger`]), and the spend reported is the spend drawn
/// ([`docs/w-event.md`](tpl_core::guide::w_event) §2). A rule sees the counts only through
/// [`Step`]'s noisy statistics; [`crate::BudgetGrid`] and [`RecentSpend`] give it the exact
/// arithmetic the built-in rules use. `tpl-mechanisms/tests/custom_rule.rs` and
/// `examples/custom-scheme/` write one.
pub trait DecisionRule {
    /// The scheme's name (as on the command line; a custom rule may build it at run time).
    fn name(&self) -> &str;

    /// Whether every step spends exactly its [`DecisionRule::max_spend`] when it publishes
    /// (budgets fixed in advance). Default: false, which is always safe.
    fn spends_its_caps(&self) -> bool {
        false
    }

    /// Refuses step `t` before anything is checked or drawn (e.g. a plan's horizon).
    ///
    /// # Errors
    /// The rule's reason (the default admits every step).
    fn admit(&self, t: usize) -> Result<()> {
        let _ = t;
        Ok(())
    }

    /// Decides step `cx.t()`, whose counts passed every check: ends with
    /// [`Step::publish`] or [`Step::repeat`], after any number of [`Step::noisy_dissimilarity`]
    /// tests.
    ///
    /// # Errors
    /// An error of the mechanism, or [`MechError::Overspent`] when the rule asks for more
    /// than it promised (nothing is drawn then).
    fn step<M: Mechanism>(&mut self, cx: Step<'_, M>) -> Result<StepOutcome>;

    /// Updates the rule's own state with step `t`'s recorded outcome exactly as
    /// [`DecisionRule::step`] does when it decides that outcome (`outcome` has been checked
    /// against the stream and [`DecisionRule::max_spend`]). Required, so that every rule says
    /// how it resumes (a durable stream rebuilds it from its records in every process): a
    /// stateless rule's body is empty.
    fn restore(&mut self, params: &WEventParams, t: usize, outcome: &StepOutcome);

    /// Takes step `t`'s recorded publication as the rule's last one, as
    /// [`DecisionRule::restore`] does for a publication but without its budget entering the
    /// rule's window (the steps after it are restored next). Default: a rule that keeps
    /// nothing of its last publication.
    fn resume(&mut self, params: &WEventParams, t: usize, outcome: &StepOutcome) {
        let _ = (params, t, outcome);
    }

    /// How many of the last steps [`DecisionRule::restore`] needs to rebuild the rule, after
    /// [`DecisionRule::resume`] from the last publication before them: a durable stream opened
    /// again reads only those. `None`: every step from the first (a state that depends on the
    /// whole history, e.g. `dsat`'s threshold). Default: the last w − 1.
    fn memory(&self, params: &WEventParams) -> Option<usize> {
        Some(params.window() - 1)
    }

    /// The guarantee. Default: w-event ε-DP with the parameters' ε and w.
    fn guarantee(&self, params: &WEventParams) -> PrivacyGuarantee {
        PrivacyGuarantee::WEvent { epsilon: params.epsilon(), window: params.window() }
    }

    /// The largest ε_t (test + publication, as [`StepBudget::total`]) of step t in any run.
    fn max_spend(&self, params: &WEventParams, t: usize) -> f64;

    /// The largest ε_t of any step. Default: [`over_regimes`] — right for the rules whose
    /// bound depends on t only through the regimes t = 1, 2 ≤ t ≤ w and t > w, growing
    /// within them; a rule of another shape overrides it.
    fn max_step_budget(&self, params: &WEventParams) -> f64 {
        over_regimes(params, |t| self.max_spend(params, t))
    }
}

/// The maximum of `spend(t)` over t ∈ {1, 2, w, w + 1}: the maximum over all t of a bound
/// constant on t = 1, non-decreasing on 2 ≤ t ≤ w and constant on t > w.
pub fn over_regimes(params: &WEventParams, spend: impl Fn(usize) -> f64) -> f64 {
    let w = params.window();
    [1, 2, w, w.saturating_add(1)].into_iter().map(spend).fold(0.0, f64::max)
}

/// A rule built from the parameters alone ([`Scheme::new`]); every `Default` rule is one.
pub trait FromParams {
    /// The rule's initial state.
    fn from_params(params: &WEventParams) -> Self;
}

/// A stateless rule needs nothing from the parameters.
impl<R: Default> FromParams for R {
    fn from_params(_: &WEventParams) -> Self {
        R::default()
    }
}

impl<R: DecisionRule, M: Mechanism> Scheme<R, M> {
    /// The scheme with `params` and `rule` (in its initial state), releasing through
    /// `mechanism`. Every window is held to the rule's [`DecisionRule::guarantee`].
    pub fn with_rule(params: WEventParams, mechanism: M, rule: R) -> Self {
        let (window, bound) = match rule.guarantee(&params) {
            PrivacyGuarantee::WEvent { epsilon, window } => (window, epsilon),
            PrivacyGuarantee::EventLevel { epsilon } => (1, epsilon),
        };
        let ledger = WindowLedger::new(window);
        Self { params, mechanism, stream: StreamState::default(), rule, ledger, bound }
    }

    /// The mechanism (e.g. to read a test double's record).
    pub fn mechanism(&self) -> &M {
        &self.mechanism
    }

    /// The decision rule.
    pub fn rule(&self) -> &R {
        &self.rule
    }
}

impl<R: DecisionRule + FromParams, M: Mechanism> Scheme<R, M> {
    /// The scheme with `params`, releasing through `mechanism`.
    pub fn new(params: WEventParams, mechanism: M) -> Self {
        let rule = R::from_params(&params);
        Self::with_rule(params, mechanism, rule)
    }
}

impl<R: DecisionRule, M: Mechanism> StreamScheme for Scheme<R, M> {
    fn name(&self) -> &str {
        self.rule.name()
    }

    fn params(&self) -> &WEventParams {
        &self.params
    }

    fn steps(&self) -> usize {
        self.stream.t
    }

    fn step(&mut self, counts: &[f64]) -> Result<StepOutcome> {
        // Every check before any draw (`docs/w-event.md` §2.1): a refused step changes nothing.
        self.rule.admit(self.stream.t + 1)?;
        self.stream.check(counts)?;
        self.mechanism.validate(counts)?;
        let t = self.stream.t + 1;
        let cx = Step {
            params: &self.params,
            mechanism: &mut self.mechanism,
            stream: &mut self.stream,
            counts,
            limits: Limits {
                max: self.rule.max_spend(&self.params, t),
                ledger: &self.ledger,
                bound: self.bound,
            },
            drawn: 0.0,
        };
        let out = self.rule.step(cx).map_err(|e| match e {
            MechError::Overspent { step, what, .. } => {
                MechError::Overspent { step, scheme: self.rule.name().to_owned(), what }
            }
            e => e,
        })?;
        self.ledger.push(out.spent.total());
        Ok(out)
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        self.rule.guarantee(&self.params)
    }

    fn max_spend(&self, t: usize) -> f64 {
        self.rule.max_spend(&self.params, t)
    }

    fn max_step_budget(&self) -> f64 {
        self.rule.max_step_budget(&self.params)
    }

    fn spends_its_caps(&self) -> bool {
        self.rule.spends_its_caps()
    }

    /// Always: the rule's state is rebuilt from the records by [`DecisionRule::restore`] and
    /// [`DecisionRule::resume`].
    fn resumable(&self) -> bool {
        true
    }

    fn memory(&self) -> Option<usize> {
        self.rule.memory(&self.params)
    }

    fn restore(&mut self, outcome: &StepOutcome) -> Result<()> {
        let t = self.stream.t + 1;
        let bad = |reason: String| MechError::BadRestore { step: t, reason };
        self.check_record(t, outcome)?;
        let spent = outcome.spent;
        // A publication is checked by `check_record`; a repeat needs something to repeat.
        if !outcome.published && t == 1 {
            return Err(bad("the first step must publish: there is nothing to repeat".into()));
        }
        if !outcome.published && (spent.publication != 0.0 || outcome.release != self.stream.last) {
            return Err(bad("a repeat must spend no publication budget and repeat the last release".into()));
        }
        let window = self.ledger.peek(spent.total());
        if window > self.bound {
            return Err(bad(format!(
                "its window would spend {window}, more than the {} the scheme keeps every window within",
                self.bound
            )));
        }
        self.rule.restore(&self.params, t, outcome);
        self.ledger.push(spent.total());
        if outcome.published {
            self.stream.publish(outcome.release.clone(), spent);
        } else {
            self.stream.repeat(spent);
        }
        Ok(())
    }

    fn resume(&mut self, steps: usize, (p, outcome): (usize, &StepOutcome)) -> Result<()> {
        let bad = |reason: String| MechError::BadRestore { step: p, reason };
        if self.stream.t != 0 {
            return Err(bad(format!("the scheme already processed {} steps", self.stream.t)));
        }
        if self.rule.memory(&self.params).is_none() {
            return Err(bad(format!(
                "scheme {} is restored from its first step, not resumed",
                self.rule.name()
            )));
        }
        if p == 0 || p > steps || !outcome.published {
            return Err(bad(format!("step {p} is not a publication among the {steps} steps skipped")));
        }
        self.check_record(p, outcome)?;
        self.rule.resume(&self.params, p, outcome);
        self.stream.publish(outcome.release.clone(), outcome.spent);
        self.stream.t = steps;
        Ok(())
    }
}

impl<R: DecisionRule, M: Mechanism> Scheme<R, M> {
    /// The checks every recorded step `t` passes before it is restored: the rule admits the
    /// step, the budgets are finite, ≥ 0 and within [`DecisionRule::max_spend`], and a publication
    /// spends publication budget on a release that fits the stream.
    fn check_record(&self, t: usize, outcome: &StepOutcome) -> Result<()> {
        let bad = |reason: String| MechError::BadRestore { step: t, reason };
        self.rule.admit(t).map_err(|e| bad(e.to_string()))?;
        let spent = outcome.spent;
        let parts = [spent.test, spent.publication, spent.absorbed];
        if !parts.iter().all(|&b| tpl_core::is_budget(b)) || spent.absorbed > spent.publication {
            return Err(bad(format!("budgets {parts:?} are not finite, ≥ 0 and absorbed ≤ publication")));
        }
        let max = self.rule.max_spend(&self.params, t);
        if spent.total() > max {
            return Err(bad(format!(
                "spent {} but the scheme spends at most {max} at this step",
                spent.total()
            )));
        }
        // A scheme of fixed budgets publishes with exactly its cap; a step it repeats spent
        // nothing, or (its one draw failed after the fact) the cap as a draw.
        let drawn_and_failed = StepBudget { test: max, publication: 0.0, absorbed: 0.0 };
        let fixed = match outcome.published {
            true => spent == StepBudget::fresh(max),
            false => spent.total() == 0.0 || spent == drawn_and_failed,
        };
        if self.rule.spends_its_caps() && !fixed {
            return Err(bad(format!(
                "{} spends exactly {max} at this step when it publishes and nothing otherwise, but the record \
                 spent {parts:?}",
                self.rule.name()
            )));
        }
        if outcome.published {
            if spent.publication <= 0.0 {
                return Err(bad("a fresh release with no publication budget".into()));
            }
            self.stream.check(&outcome.release).map_err(|e| bad(e.to_string()))?;
        }
        Ok(())
    }
}

/// One step as a decision rule sees it: the checked counts c_t, reachable only through
/// noisy releases, and the shared state. Every draw is checked first against what the rule
/// promised (its largest spend at this step, the window's room under its guarantee) and
/// against the mechanism's privacy map; a draw that would break either is refused with
/// [`MechError::Overspent`] or [`MechError::PrivacyMap`], and nothing is drawn.
pub struct Step<'a, M> {
    params: &'a WEventParams,
    mechanism: &'a mut M,
    stream: &'a mut StreamState,
    counts: &'a [f64],
    limits: Limits<'a>,
    /// Σ of the budgets drawn so far at this step, rounded up.
    drawn: f64,
}

/// What a step may spend: the rule's largest spend at the step and the window's room. (The
/// scheme's name in a [`MechError::Overspent`] is filled in by [`Scheme`], which lends the
/// rule out mutably while the step runs.)
struct Limits<'a> {
    max: f64,
    ledger: &'a WindowLedger,
    bound: f64,
}

impl Limits<'_> {
    /// Checks that step `t` may spend `total` in all (test and publication).
    fn admit(&self, t: usize, total: f64) -> Result<()> {
        let over = |what: String| MechError::Overspent { step: t, scheme: String::new(), what };
        if total.is_nan() || total > self.max {
            return Err(over(format!(
                "would spend {total}, more than its largest spend {} at this step",
                self.max
            )));
        }
        let window = self.ledger.peek(total);
        if window.is_nan() || window > self.bound {
            return Err(over(format!(
                "would spend {total}, bringing its window to {window}, more than the {} it keeps every window within",
                self.bound
            )));
        }
        Ok(())
    }
}

impl<'a, M: Mechanism> Step<'a, M> {
    /// The scheme's parameters (ε, w, Δ and the budget grid).
    pub fn params(&self) -> &'a WEventParams {
        self.params
    }

    /// t, the 1-based number of this step.
    pub fn t(&self) -> usize {
        self.stream.t + 1
    }

    /// r_{t−1}, the last release (empty at step 1): public, as every release is.
    pub fn last_release(&self) -> &[f64] {
        &self.stream.last
    }

    /// Checks that a report `spent` covers what was drawn at this step and fits.
    fn check_report(&self, spent: StepBudget) -> Result<()> {
        if spent.test.is_nan() || spent.test < self.drawn {
            return Err(MechError::Overspent {
                step: self.t(),
                scheme: String::new(),
                what: format!("reports a test budget of {}, but its tests drew {}", spent.test, self.drawn),
            });
        }
        self.limits.admit(self.t(), spent.total())
    }

    /// Publishes c_t with budget `spent.publication` and reports `spent` (its test part
    /// covering every test drawn at this step).
    ///
    /// # Errors
    /// [`MechError::Overspent`] or [`MechError::PrivacyMap`] before any draw, or an error
    /// of the mechanism.
    pub fn publish(self, spent: StepBudget) -> Result<StepOutcome> {
        self.check_report(spent)?;
        let (delta, p) = (self.params.sensitivity(), spent.publication);
        check_privacy_map(&*self.mechanism, delta, p)?;
        let release = self.mechanism.release(self.counts, delta, p)?;
        Ok(self.stream.publish(release, spent))
    }

    /// Draws c_t with budget `spent.publication` as [`Step::publish`] does, and publishes
    /// `filter(draw)` in its place: a post-processing of the draw and of earlier releases
    /// (e.g. `fast`'s Kalman correction), which spends nothing more. The filtered vector must
    /// have one finite value per cell.
    ///
    /// # Errors
    /// As [`Step::publish`], and [`MechError::BadFilter`] for a filtered vector of the wrong
    /// length or with a value that is not finite (nothing is released then: the step fails).
    pub fn publish_filtered(
        self,
        spent: StepBudget,
        filter: impl FnOnce(&[f64]) -> Vec<f64>,
    ) -> Result<StepOutcome> {
        self.check_report(spent)?;
        let (delta, p) = (self.params.sensitivity(), spent.publication);
        check_privacy_map(&*self.mechanism, delta, p)?;
        let draw = self.mechanism.release(self.counts, delta, p)?;
        let release = filter(&draw);
        let step = self.t();
        if release.len() != draw.len() {
            return Err(MechError::BadFilter {
                step,
                reason: format!("{} values for {} cells", release.len(), draw.len()),
            });
        }
        if let Some(v) = release.iter().find(|v| !v.is_finite()) {
            return Err(MechError::BadFilter { step, reason: format!("a value {v} that is not finite") });
        }
        Ok(self.stream.publish(release, spent))
    }

    /// Repeats r_{t−1} and reports `spent` (what the tests cost, if any; no publication).
    ///
    /// # Errors
    /// [`MechError::Overspent`] for a report with a publication budget, or one that does not
    /// cover the tests drawn or exceeds what the step may spend.
    pub fn repeat(self, spent: StepBudget) -> Result<StepOutcome> {
        if spent.publication != 0.0 || spent.absorbed != 0.0 || self.stream.t == 0 {
            return Err(MechError::Overspent {
                step: self.t(),
                scheme: String::new(),
                what: "repeats with a publication budget, or at step 1 with nothing to repeat".into(),
            });
        }
        self.check_report(spent)?;
        Ok(self.stream.repeat(spent))
    }

    /// Whether a publication with budget `budget` could be drawn by the scheme's mechanism
    /// ([`Mechanism::check_budget`]), asked before the step's first draw: a scheme does not
    /// draw a test for a publication that could not follow
    /// ([`docs/w-event.md`](tpl_core::guide::w_event) §2.1).
    pub fn can_publish(&self, budget: f64) -> bool {
        self.mechanism.check_budget(self.params.sensitivity(), budget).is_ok()
    }

    /// The noisy dissimilarity dis~_t (spends s = ε/(2w)); one draw
    /// ([`docs/w-event.md`](tpl_core::guide::w_event) §3, test statistic). The mechanism releases
    /// the integer sum Σ_j |c_t\[j\] − r_{t−1}\[j\]| with sensitivity Δ, and the noisy sum is
    /// divided by d: for continuous noise the same distribution as noise of scale (Δ/d)/s on the
    /// mean, and exact for the discrete sampler (a mean lies on a 1/d lattice, the sum on the
    /// integers).
    ///
    /// # Errors
    /// [`MechError::Overspent`] when the test would exceed what the step may spend, or
    /// [`MechError::PrivacyMap`] (nothing drawn then); [`MechError::DissimilarityTooLarge`]
    /// when the exact integer release cannot take the sum; an error of the mechanism.
    pub fn noisy_dissimilarity(&mut self) -> Result<f64> {
        self.noisy_dissimilarity_at(self.params.share())
    }

    /// [`Step::noisy_dissimilarity`] with test budget `s` in place of ε/(2w) (e.g. `dsat`'s
    /// ε₁/w): the same draw, and the same checks before it.
    ///
    /// # Errors
    /// As [`Step::noisy_dissimilarity`].
    pub fn noisy_dissimilarity_at(&mut self, s: f64) -> Result<f64> {
        let delta = self.params.sensitivity();
        let drawn = sum_up(self.drawn, s);
        self.limits.admit(self.t(), drawn)?;
        check_privacy_map(&*self.mechanism, delta, s)?;
        let (sum, step) = (self.stream.distance(self.counts), self.t());
        let noisy = self.mechanism.release(&[sum], delta, s).map_err(|e| match e {
            // The one value released is the sum, not a count of a cell.
            MechError::CountTooLarge { value, .. } => MechError::DissimilarityTooLarge { step, value },
            other => other,
        })?;
        self.drawn = drawn;
        Ok(noisy[0] / self.counts.len() as f64)
    }
}

/// The state every scheme shares: step count, cell count and the last release.
#[derive(Debug, Clone, Default)]
pub(crate) struct StreamState {
    pub t: usize,
    cells: Option<usize>,
    pub last: Vec<f64>,
}

impl StreamState {
    /// Checks c_{t+1} against the stream ([`docs/w-event.md`](tpl_core::guide::w_event) §2.1:
    /// before any draw).
    pub fn check(&self, counts: &[f64]) -> Result<()> {
        let step = self.t + 1;
        if counts.is_empty() {
            return Err(MechError::NoCells { step });
        }
        if let Some(expected) = self.cells
            && counts.len() != expected
        {
            return Err(MechError::WrongLength { step, expected, got: counts.len() });
        }
        // One pass without early exit (it vectorises); the position only for an error.
        if counts.iter().fold(true, |ok, v| ok & v.is_finite()) {
            return Ok(());
        }
        match counts.iter().position(|v| !v.is_finite()) {
            Some(cell) => Err(MechError::NonFinite { step, cell, value: counts[cell] }),
            None => Ok(()),
        }
    }

    /// Records a fresh release.
    pub fn publish(&mut self, release: Vec<f64>, spent: StepBudget) -> StepOutcome {
        self.cells.get_or_insert(release.len());
        self.t += 1;
        // Into the buffer kept from the last step: no allocation.
        self.last.clone_from(&release);
        StepOutcome { release, published: true, spent }
    }

    /// Repeats r_{t−1}.
    pub fn repeat(&mut self, spent: StepBudget) -> StepOutcome {
        self.t += 1;
        StepOutcome { release: self.last.clone(), published: false, spent }
    }

    /// Σ_j |c_t[j] − r_{t−1}[j]|: d times the dissimilarity of
    /// [`docs/w-event.md`](tpl_core::guide::w_event) §3 (an integer when the counts and releases
    /// are, which keeps the release-grade test exact).
    pub fn distance(&self, counts: &[f64]) -> f64 {
        counts.iter().zip(&self.last).map(|(c, r)| (c - r).abs()).sum()
    }
}

/// The budgets of the last w − 1 steps, as integers on the scheme's grid
/// ([`crate::BudgetGrid::units`]), with their exact running sums: O(1) per step, and memory
/// min(w − 1, steps so far) entries — never sized by w itself. Each entry holds `N` amounts
/// (e.g. the step total and a pool's part). What a rule keeps to know its window's room
/// ([`crate::BudgetGrid::room`] of `sum(0)`).
///
/// ```
/// use tpl_mechanisms::RecentSpend;
/// let mut recent = RecentSpend::<1>::new(3); // w = 3: the last 2 steps
/// for units in [5, 7, 11] { recent.push([units]); }
/// assert_eq!(recent.sum(0), 18);
/// ```
#[derive(Debug, Clone)]
pub struct RecentSpend<const N: usize> {
    capacity: usize,
    entries: VecDeque<[u128; N]>,
    sums: [u128; N],
}

impl<const N: usize> RecentSpend<N> {
    /// Keeps the last `window − 1` entries (nothing for w = 1).
    pub fn new(window: usize) -> Self {
        Self { capacity: window.saturating_sub(1), entries: VecDeque::new(), sums: [0; N] }
    }

    /// Σ of amount `i` (< N) over the held entries (exact).
    pub fn sum(&self, i: usize) -> u128 {
        self.sums.get(i).copied().unwrap_or(0)
    }

    /// Pushes the newest entry, dropping the oldest once w − 1 are held.
    pub fn push(&mut self, entry: [u128; N]) {
        if self.capacity == 0 {
            return;
        }
        if self.entries.len() == self.capacity
            && let Some(old) = self.entries.pop_front()
        {
            for (s, o) in self.sums.iter_mut().zip(old) {
                *s -= o;
            }
        }
        for (s, e) in self.sums.iter_mut().zip(entry) {
            *s += e;
        }
        self.entries.push_back(entry);
    }
}
