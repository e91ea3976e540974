//! The conformance check of a stream scheme (feature `test-util`): what the built-in schemes'
//! own tests check of every trace ([`docs/w-event.md`](tpl_core::guide::w_event) §7), in a form a
//! scheme author runs on theirs. [`check_scheme`] drives a scheme over a stream with a mechanism
//! that logs every draw ([`Audited`]) and checks, independently of the scheme's internal state:
//!
//! - every step's report is well formed (budgets finite and ≥ 0, absorbed ≤ publication, a
//!   fresh release of the stream's width with a positive publication budget, a repeat that
//!   is bit for bit the last release, step 1 a publication);
//! - the report covers every draw: the budgets the mechanism was asked to draw at a step
//!   sum, exactly, to at most what the step reports, and a repeat drew no publication;
//! - each step spends at most [`StreamScheme::max_spend`] ≤ [`StreamScheme::max_step_budget`],
//!   exactly its cap when it publishes if it [`StreamScheme::spends_its_caps`];
//! - every window keeps the [`PrivacyGuarantee`] in exact real arithmetic ([`Expansion`],
//!   independent of the library's [`crate::WindowLedger`]);
//! - a fresh scheme accepts the recorded steps back ([`StreamScheme::restore`]) and
//!   [`StreamScheme::resume`] from the last publication before its last
//!   [`StreamScheme::memory`] steps (when its memory is bounded), and refuses a record that spends
//!   more than its cap — unless it says it cannot be resumed at all
//!   ([`StreamScheme::resumable`] false; it must then refuse every record).
//!
//! ```
//! use tpl_mechanisms::test_util::check_scheme;
//! use tpl_mechanisms::{Bd, WEventParams};
//! let params = WEventParams::new(1.0, 5, 2.0)?;
//! let stream: Vec<Vec<f64>> = (0..60).map(|t| vec![(t % 7) as f64 * 40.0, 3.0]).collect();
//! let report = check_scheme(|m| Bd::new(params, m), &stream, 7).map_err(|e| e.to_string());
//! assert!(report.expect("bd conforms").published >= 1);
//! # Ok::<(), tpl_mechanisms::MechError>(())
//! ```

use std::cell::RefCell;
use std::cmp::Ordering;
use std::rc::Rc;

use crate::error::Result;
use crate::mechanism::{LaplaceMechanism, Mechanism};
use crate::noise::{DiscreteLaplace, ReleaseRng};
use crate::scheme::{PrivacyGuarantee, StepBudget, StepOutcome, StreamScheme};

/// One draw a mechanism was asked for: the sensitivity, the budget and the answer's length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Draw {
    /// Δ of the release.
    pub sensitivity: f64,
    /// Its budget.
    pub budget: f64,
    /// How many values were released.
    pub cells: usize,
}

/// A mechanism that logs every draw ([`Mechanism::sample`]) of the mechanism it wraps, for
/// a test to read while the scheme owns the mechanism.
#[derive(Debug)]
pub struct Audited<M> {
    inner: M,
    log: Rc<RefCell<Vec<Draw>>>,
}

impl<M> Audited<M> {
    /// Wraps `inner`; the log is shared with the handle returned.
    pub fn new(inner: M) -> (Self, Rc<RefCell<Vec<Draw>>>) {
        let log = Rc::new(RefCell::new(Vec::new()));
        (Self { inner, log: Rc::clone(&log) }, log)
    }
}

impl<M: Mechanism> Mechanism for Audited<M> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn validate(&self, answer: &[f64]) -> Result<()> {
        self.inner.validate(answer)
    }

    fn privacy_map(&self, d_in: f64, sensitivity: f64, budget: f64) -> Result<f64> {
        self.inner.privacy_map(d_in, sensitivity, budget)
    }

    fn check_budget(&self, sensitivity: f64, budget: f64) -> Result<()> {
        self.inner.check_budget(sensitivity, budget)
    }

    fn sample(&mut self, answer: &[f64], sensitivity: f64, budget: f64) -> Result<Vec<f64>> {
        self.log.borrow_mut().push(Draw { sensitivity, budget, cells: answer.len() });
        self.inner.sample(answer, sensitivity, budget)
    }
}

/// The mechanism [`check_scheme`] hands to the scheme it builds: the exact Laplace
/// mechanism, seeded, with every draw logged.
pub type CheckedMechanism = Audited<LaplaceMechanism<DiscreteLaplace<ReleaseRng>>>;

/// What [`check_scheme`] saw of a conforming run.
#[derive(Debug, Clone, PartialEq)]
pub struct Conformance {
    /// Steps run.
    pub steps: usize,
    /// Steps that published.
    pub published: usize,
    /// Draws made.
    pub draws: usize,
    /// Whether the scheme can be resumed from its records (its restore was checked).
    pub resumable: bool,
}

/// Runs a scheme built by `build` over `stream` (integer counts: the mechanism is the exact
/// discrete Laplace, seeded by `seed`) and checks every promise listed in the module
/// documentation. `build` is called again for the restore checks.
///
/// # Errors
/// The first broken promise, naming the step.
pub fn check_scheme<S: StreamScheme>(
    mut build: impl FnMut(CheckedMechanism) -> S,
    stream: &[Vec<f64>],
    seed: u64,
) -> std::result::Result<Conformance, String> {
    let (mechanism, log) = Audited::new(LaplaceMechanism::new(DiscreteLaplace::seeded(seed)));
    let mut scheme = build(mechanism);
    let (bound, window) = match scheme.guarantee() {
        PrivacyGuarantee::WEvent { epsilon, window } => (epsilon, window),
        PrivacyGuarantee::EventLevel { epsilon } => (epsilon, 1),
    };
    let mut outcomes: Vec<StepOutcome> = Vec::with_capacity(stream.len());
    let mut totals: Vec<Vec<f64>> = Vec::with_capacity(stream.len());
    let mut draws = 0;
    for (i, counts) in stream.iter().enumerate() {
        let t = i + 1;
        let before = log.borrow().len();
        let o = scheme.step(counts).map_err(|e| format!("t = {t}: the step failed: {e}"))?;
        let drawn: Vec<Draw> = log.borrow()[before..].to_vec();
        draws += drawn.len();
        check_step(&scheme, t, counts.len(), outcomes.last(), &o, &drawn)?;
        totals.push(vec![o.spent.total()]);
        outcomes.push(o);
    }
    exact_windows_within(window, &totals, bound, None)
        .map_err(|e| format!("guarantee {bound} per {window} steps: {e}"))?;
    if scheme.steps() != stream.len() {
        return Err(format!("the scheme counts {} steps after {}", scheme.steps(), stream.len()));
    }
    let resumable = check_restore(&mut build, &outcomes)?;
    Ok(Conformance {
        steps: stream.len(),
        published: outcomes.iter().filter(|o| o.published).count(),
        draws,
        resumable,
    })
}

/// The checks of one step's report against what was drawn.
fn check_step(
    scheme: &dyn StreamScheme,
    t: usize,
    cells: usize,
    last: Option<&StepOutcome>,
    o: &StepOutcome,
    drawn: &[Draw],
) -> std::result::Result<(), String> {
    let fail = |what: String| Err(format!("t = {t}: {what}"));
    let s = o.spent;
    let parts = [s.test, s.publication, s.absorbed];
    if !parts.iter().all(|b| b.is_finite() && *b >= 0.0) || s.absorbed > s.publication {
        return fail(format!("budgets {parts:?} are not finite, ≥ 0 with absorbed ≤ publication"));
    }
    match (o.published, last) {
        (false, None) => return fail("step 1 must publish: there is nothing to repeat".into()),
        (false, Some(prev)) if o.release != prev.release || s.publication != 0.0 => {
            return fail("a repeat must be the last release, bit for bit, with no publication budget".into());
        }
        (true, _) if o.release.len() != cells || s.publication <= 0.0 => {
            return fail(format!("a fresh release of {} values for {cells} cells", o.release.len()));
        }
        _ => {}
    }
    let mut sum = Expansion::default();
    drawn.iter().for_each(|d| sum.add(d.budget));
    let reported = [s.test, s.publication];
    let mut covered = Expansion::default();
    reported.iter().for_each(|&b| covered.add(b));
    sum.add_expansion_negated(&covered);
    if sum.sign() == Ordering::Greater {
        return fail(format!("the draws {drawn:?} spent more than the report {parts:?}"));
    }
    let (cap, max) = (scheme.max_spend(t), scheme.max_step_budget());
    if s.total() > cap || cap > max {
        return fail(format!("spent {} with max_spend {cap} and max_step_budget {max}", s.total()));
    }
    if scheme.spends_its_caps() && o.published && s.total() != cap {
        return fail(format!("a scheme that spends its caps published with {} instead of {cap}", s.total()));
    }
    Ok(())
}

/// Restores every recorded step into a fresh scheme, resumes one from the last publication,
/// and checks that a record above the cap is refused. `Ok(false)`: the scheme says it cannot
/// be resumed ([`StreamScheme::resumable`]) and refuses records, as it then must.
fn check_restore<S: StreamScheme>(
    build: &mut impl FnMut(CheckedMechanism) -> S,
    outcomes: &[StepOutcome],
) -> std::result::Result<bool, String> {
    let fresh = |build: &mut dyn FnMut(CheckedMechanism) -> S| {
        build(Audited::new(LaplaceMechanism::new(DiscreteLaplace::seeded(0))).0)
    };
    let Some(first) = outcomes.first() else { return Ok(true) };
    let mut probe = fresh(build);
    if !probe.resumable() {
        return match probe.restore(first) {
            Err(_) => Ok(false),
            Ok(()) => Err("the scheme says it cannot be resumed, yet restored a recorded step".into()),
        };
    }
    let mut restored = fresh(build);
    for (i, o) in outcomes.iter().enumerate() {
        restored.restore(o).map_err(|e| format!("t = {}: the recorded step was refused: {e}", i + 1))?;
    }
    // Skip to the last `memory` steps (resuming from the last publication before them), then
    // restore those; a scheme whose memory is unbounded is only ever restored from its first
    // step.
    let n = outcomes.len();
    let start = probe.memory().map_or(0, |memory| n.saturating_sub(memory));
    if let Some(p) = outcomes[..start].iter().rposition(|o| o.published) {
        let mut resumed = fresh(build);
        resumed.resume(start, (p + 1, &outcomes[p])).map_err(|e| format!("resume at step {}: {e}", p + 1))?;
        for (i, o) in outcomes.iter().enumerate().skip(start) {
            resumed.restore(o).map_err(|e| format!("t = {} after resuming: {e}", i + 1))?;
        }
    }
    // A first step that spends more than the cap is refused.
    let mut greedy = fresh(build);
    let cap = greedy.max_spend(1);
    let over = StepOutcome {
        release: first.release.clone(),
        published: true,
        spent: StepBudget::fresh(if cap > 0.0 { cap * 2.0 } else { 1.0 }),
    };
    if greedy.restore(&over).is_ok() {
        return Err(format!("a first step spending {} above the cap {cap} was restored", over.spent.total()));
    }
    Ok(true)
}

/// An exact real number as a sum of f64 components (Shewchuk's non-overlapping expansion,
/// "Adaptive precision floating-point arithmetic and fast robust geometric predicates",
/// 1997), independent of the library's own exact accumulator: adding any finite f64 is
/// exact.
///
/// ```
/// use tpl_mechanisms::test_util::Expansion;
/// let mut e = Expansion::default();
/// for x in [0.1, 0.2, 0.4] { e.add(x); }
/// assert_eq!(e.cmp_to(0.7), std::cmp::Ordering::Greater); // though 0.1 + 0.2 + 0.4 == 0.7 in f64
/// ```
#[derive(Debug, Clone, Default)]
pub struct Expansion(Vec<f64>);

/// Knuth's two-sum: (a + b rounded, its exact error).
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

impl Expansion {
    /// Adds x exactly (Grow-Expansion with zero elimination).
    pub fn add(&mut self, x: f64) {
        let mut q = x;
        let mut out = Vec::with_capacity(self.0.len() + 1);
        for &e in &self.0 {
            let (s, h) = two_sum(q, e);
            if h != 0.0 {
                out.push(h);
            }
            q = s;
        }
        if q != 0.0 {
            out.push(q);
        }
        self.0 = out;
    }

    /// Subtracts `other` exactly.
    fn add_expansion_negated(&mut self, other: &Expansion) {
        other.0.iter().for_each(|&x| self.add(-x));
    }

    /// The sign of the exact value (its largest component decides).
    fn sign(&self) -> Ordering {
        self.0.last().map_or(Ordering::Equal, |v| v.total_cmp(&0.0))
    }

    /// The sign of the exact value minus `c`.
    pub fn cmp_to(&self, c: f64) -> Ordering {
        let mut d = self.clone();
        d.add(-c);
        d.sign()
    }

    /// The exact value rounded (approximately: the components' f64 sum), for messages.
    pub fn approx(&self) -> f64 {
        self.0.iter().sum()
    }
}

/// Checks with exact real arithmetic that every window of `w` steps sums to ≤ `eps`, where
/// step t contributes the f64 terms `steps[t]` (its printed total, or its test and
/// publication budgets), and that `reported` (a maximum window budget) is ≥ every window.
///
/// # Errors
/// The first window above `eps` (or above `reported`), naming its last step.
pub fn exact_windows_within(
    w: usize,
    steps: &[Vec<f64>],
    eps: f64,
    reported: Option<f64>,
) -> std::result::Result<(), String> {
    let mut sum = Expansion::default();
    for (t, terms) in steps.iter().enumerate() {
        terms.iter().for_each(|&x| sum.add(x));
        if t >= w {
            steps[t - w].iter().for_each(|&x| sum.add(-x));
        }
        if sum.cmp_to(eps) == Ordering::Greater {
            return Err(format!(
                "window ending at t = {} sums to {:e} > ε = {eps:e} exactly",
                t + 1,
                sum.approx()
            ));
        }
        if let Some(r) = reported
            && sum.cmp_to(r) == Ordering::Greater
        {
            return Err(format!("reported maximum {r:e} is below the window ending at t = {}", t + 1));
        }
    }
    Ok(())
}
