//! The comparison: every strategy released R times over the same true counts, in parallel,
//! scored on error and on the leakage an adversary with the given correlation really gets
//! (audited with `tpl-core` through `tpl-alloc`). Composition only: the schemes come from
//! `tpl-mechanisms`, the budgets from `tpl-alloc`, the estimates from `tpl-postprocess`.
//!
//! Every leakage is audited from the budget a step really spends against one person's
//! change, `effective_budget` = ε_t·2/Δ for a release calibrated to sensitivity Δ. The
//! allocators' budgets are such per-step leakages: they are executed with the mechanism
//! budget `budget_for_effective` of each, so that they keep α whatever Δ is.
//!
//! Besides the leakage of the runs it drew (realised), every strategy is scored on the
//! leakage it guarantees over every run it could produce ([`docs/model.md`](tpl_core::guide::model)
//! §9): for a scheme, from each step's largest spend and its window constraint; for budgets fixed
//! in advance, the realised leakage itself.

use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use tpl_alloc::{
    Allocator, GuaranteedAudit, Quantified, Spending, UpperBound, WindowAllocator, guaranteed_audit,
};
use tpl_core::Correlation;
use tpl_mechanisms::{
    DEFAULT_SENSITIVITY, DiscreteLaplace, PbaPool, SchemeInputs, SchemeKind, StreamScheme, WEventParams,
    WindowLedger, budget_for_effective, checked_effective_budget, effective_spending,
};
use tpl_postprocess::{Estimator, FilterConfig, PriorPolicy};

use crate::error::{CompareError, Result};
use crate::metrics::{mae, mre, mse};
use crate::report::{Comparison, Row, Scores, Stat};
use crate::{CustomStrategy, Seed, Strategy};

/// The most runs per strategy a comparison accepts (it keeps every run's scores).
pub const MAX_RUNS: usize = 10_000;

/// Runs per strategy of a [`Setup`] unless [`Setup::runs`] says otherwise.
pub const DEFAULT_RUNS: usize = 10;

/// The correlation of [`Setup::new`]: no matrix.
static UNKNOWN: Correlation = Correlation::none();

/// Everything a comparison needs: the true counts, what the adversary knows, the privacy
/// parameters and how many runs. Built with [`Setup::new`] and the builder methods;
/// checked by [`compare`].
#[derive(Debug, Clone)]
pub struct Setup<'a> {
    truth: &'a [Vec<f64>],
    correlation: &'a Correlation,
    epsilon: f64,
    window: usize,
    alpha: Option<f64>,
    sensitivity: f64,
    runs: usize,
    postprocess: Option<Estimator>,
    baseline: bool,
    seed: Option<Seed>,
    observer: Option<Observer<'a>>,
}

/// What a comparison calls once per finished run ([`Setup::observer`]).
#[derive(Clone, Copy)]
struct Observer<'a>(&'a (dyn Fn() + Sync));

impl std::fmt::Debug for Observer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observer")
    }
}

impl<'a> Setup<'a> {
    /// A comparison of releases of `truth` (T steps of n integer counts) under w-event
    /// budget ε per `window` steps; no correlation known, α = ε, Δ =
    /// [`DEFAULT_SENSITIVITY`], [`DEFAULT_RUNS`] runs, no post-processed rows, a seed from
    /// the operating system.
    pub fn new(truth: &'a [Vec<f64>], epsilon: f64, window: usize) -> Self {
        Self {
            truth,
            correlation: &UNKNOWN,
            epsilon,
            window,
            alpha: None,
            sensitivity: DEFAULT_SENSITIVITY,
            runs: DEFAULT_RUNS,
            postprocess: None,
            baseline: true,
            seed: None,
            observer: None,
        }
    }

    /// What the adversary knows, P_B and P_F (its forward matrix is also the public prior of
    /// the post-processing).
    pub fn correlation(mut self, correlation: &'a Correlation) -> Self {
        self.correlation = correlation;
        self
    }

    /// The leakage target α of the allocators (`None`: ε, so that `window` promises under
    /// correlation what the w-event schemes promise without it).
    pub fn alpha(mut self, alpha: Option<f64>) -> Self {
        self.alpha = alpha;
        self
    }

    /// The L1 sensitivity Δ of one step's counts.
    pub fn sensitivity(mut self, sensitivity: f64) -> Self {
        self.sensitivity = sensitivity;
        self
    }

    /// Releases per strategy (1..=[`MAX_RUNS`]).
    pub fn runs(mut self, runs: usize) -> Self {
        self.runs = runs;
        self
    }

    /// Also score every strategy after post-processing by `estimator` (rows
    /// `<strategy>+<estimator>`, e.g. `bd+map`; [docs/map.md](tpl_core::guide::map)), and the
    /// data-free prior mean. `None` (the default): no post-processed rows.
    pub fn postprocess(mut self, estimator: Option<Estimator>) -> Self {
        self.postprocess = estimator;
        self
    }

    /// Whether post-processed rows come with the classical baseline's: rows
    /// `<strategy>+kalman` beside `<strategy>+<estimator>` ([docs/map.md](tpl_core::guide::map)
    /// §14), unless the estimator is `kalman` itself. Default `true`: every accuracy figure is
    /// shown against the Kalman smoother.
    pub fn baseline(mut self, baseline: bool) -> Self {
        self.baseline = baseline;
        self
    }

    /// The estimators of the post-processed rows, in row order: the one asked for, then the
    /// baseline `kalman` ([`Setup::baseline`]); empty without post-processing.
    pub fn estimators(&self) -> Vec<Estimator> {
        let mut out: Vec<Estimator> = self.postprocess.into_iter().collect();
        if self.baseline && out.first().is_some_and(|&e| e != Estimator::Kalman) {
            out.push(Estimator::Kalman);
        }
        out
    }

    /// The base seed of the runs (default: [`Seed::from_os_rng`]).
    pub fn seed(mut self, seed: Seed) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Calls `observer` once per finished run of [`compare`] (from any thread), e.g. to move a
    /// progress bar of [`Setup::total_runs`] ticks; none by default.
    pub fn observer(mut self, observer: &'a (dyn Fn() + Sync)) -> Self {
        self.observer = Some(Observer(observer));
        self
    }

    /// The number of runs [`compare`] makes for `strategies` at most (one progress tick
    /// each): strategies that cannot run make none.
    pub fn total_runs(&self, strategies: &[Strategy]) -> usize {
        strategies.len().saturating_mul(self.runs)
    }

    /// Checks the parameters and the stream's shape; returns (α, n).
    fn check(&self) -> Result<(f64, usize)> {
        let invalid = |name, value: f64, reason: &str| CompareError::InvalidParameter {
            name,
            value: tpl_core::Short(value).to_string(),
            reason: reason.into(),
        };
        let positive = "must be finite and greater than 0";
        if !(self.epsilon.is_finite() && self.epsilon > 0.0) {
            return Err(invalid("epsilon", self.epsilon, positive));
        }
        let steps = self.truth.len();
        let cells = self.truth.first().map_or(0, Vec::len);
        if steps == 0 || cells == 0 {
            return Err(CompareError::EmptyStream { steps, cells });
        }
        if let Some((t, row)) = self.truth.iter().enumerate().find(|(_, r)| r.len() != cells) {
            return Err(CompareError::RaggedStream { step: t + 1, found: row.len(), expected: cells });
        }
        if self.window == 0 || self.window > steps {
            return Err(CompareError::InvalidParameter {
                name: "window",
                value: self.window.to_string(),
                reason: format!("must be between 1 and the number of steps {steps}"),
            });
        }
        let alpha = self.alpha.unwrap_or(self.epsilon);
        if !(alpha.is_finite() && alpha > 0.0) {
            return Err(invalid("alpha", alpha, positive));
        }
        if !(self.sensitivity.is_finite() && self.sensitivity > 0.0) {
            return Err(invalid("sensitivity", self.sensitivity, positive));
        }
        if self.runs == 0 || self.runs > MAX_RUNS {
            return Err(CompareError::InvalidParameter {
                name: "runs",
                value: self.runs.to_string(),
                reason: format!("must be between 1 and {MAX_RUNS}"),
            });
        }
        for (side, m) in [("backward", self.correlation.backward()), ("forward", self.correlation.forward())]
        {
            if let Some(m) = m.filter(|m| m.n() != cells) {
                return Err(CompareError::MatrixSize { side, n: m.n(), cells });
            }
        }
        Ok((alpha, cells))
    }

    /// What every run reads, once [`Setup::check`] has given α: the setup with its base seed
    /// and the post-processing (estimator and N) the runs apply, if any.
    fn checked(&self, alpha: f64, seed: Seed, map_total: Option<(Vec<Estimator>, u64)>) -> Checked<'a> {
        Checked {
            truth: self.truth,
            correlation: self.correlation,
            epsilon: self.epsilon,
            window: self.window,
            alpha,
            sensitivity: self.sensitivity,
            runs: self.runs,
            seed,
            map_total,
        }
    }
}

/// A checked [`Setup`]: what every run reads.
struct Checked<'a> {
    truth: &'a [Vec<f64>],
    correlation: &'a Correlation,
    epsilon: f64,
    window: usize,
    alpha: f64,
    sensitivity: f64,
    runs: usize,
    seed: Seed,
    /// The post-processing estimators (the one asked for, then the baseline) and N, when
    /// asked for and possible.
    map_total: Option<(Vec<Estimator>, u64)>,
}

/// Runs every strategy `runs` times on the setup's stream, in parallel (rayon), and scores
/// them; the [`Setup::observer`], if any, is called once per finished run (from any thread).
///
/// Rows come in the order of `strategies`, each followed by its post-processed rows when
/// post-processing was asked for (`+<estimator>`, then `+kalman`, the classical baseline,
/// unless [`Setup::baseline`] is off), then the data-free `prior-mean` baseline. A strategy that cannot run here
/// (an allocator without a bounded allocation, PBA without any matrix, MAP without a
/// forward matrix or a fixed population…) gets a row with its error; the others still run.
///
/// Run r of strategy s draws its noise from [`Seed::rng`]`(s.name(), r)`: the same seed
/// gives the same rows for a strategy whatever else is compared and in whatever order.
///
/// # Errors
/// [`CompareError::InvalidParameter`] for ε, α or Δ not finite and > 0, a window outside
/// 1..=T, runs outside 1..=[`MAX_RUNS`]; [`CompareError::EmptyStream`],
/// [`CompareError::RaggedStream`] or [`CompareError::MatrixSize`] for a stream and matrices
/// that do not fit.
pub fn compare(setup: &Setup<'_>, strategies: &[Strategy]) -> Result<Comparison> {
    let silent = || {};
    let progress: &(dyn Fn() + Sync) = setup.observer.map_or(&silent, |o| o.0);
    let (alpha, cells) = setup.check()?;
    let seed = setup.seed.unwrap_or_else(Seed::from_os_rng);
    let total = population(setup.truth);
    let map = setup.postprocess.is_some();
    let map_blocker = match (map, setup.correlation.forward(), total) {
        (false, _, _) => None,
        (true, None, _) => Some(CompareError::MapNeedsForward),
        (true, Some(_), None) => Some(CompareError::MapNeedsFixedPopulation),
        (true, Some(_), Some(_)) => None,
    };
    let estimators = setup.estimators();
    let map_total = total.filter(|_| map && map_blocker.is_none()).map(|t| (estimators.clone(), t));
    let run = setup.checked(alpha, seed, map_total);
    let rows = rows(&run, setup.correlation, strategies, map_blocker, &estimators, progress);
    Ok(Comparison {
        rows,
        epsilon: setup.epsilon,
        window: setup.window,
        alpha,
        sensitivity: setup.sensitivity,
        runs: setup.runs,
        seed: seed.value(),
        seeded: seed.is_given(),
        horizon: setup.truth.len(),
        cells,
        postprocess: setup.postprocess,
    })
}

/// The errors of one run's output against the truth.
#[derive(Clone, Copy)]
struct Errors {
    mae: f64,
    mse: f64,
    mre: f64,
}

impl Errors {
    fn of(output: &[Vec<f64>], truth: &[Vec<f64>]) -> Result<Self> {
        Ok(Self { mae: mae(output, truth)?, mse: mse(output, truth)?, mre: mre(output, truth)? })
    }
}

/// What one run of one strategy produced.
struct RunResult {
    raw: Errors,
    /// The errors after each post-processing estimator, in the order of the rows.
    map: Vec<Errors>,
    max_window_budget: f64,
    max_tpl: f64,
    max_window_leakage: f64,
    published_fraction: f64,
}

/// Plans every strategy, runs the planned ones in parallel and gathers the rows.
fn rows(
    run: &Checked<'_>,
    corr: &Correlation,
    strategies: &[Strategy],
    map_blocker: Option<CompareError>,
    estimators: &[Estimator],
    progress: &(dyn Fn() + Sync),
) -> Vec<Row> {
    let plans: Vec<Result<Plan>> = strategies.iter().map(|s| plan(s.clone(), run, corr)).collect();
    let tasks: Vec<(usize, usize)> = plans
        .iter()
        .enumerate()
        .filter(|(_, p)| p.is_ok())
        .flat_map(|(i, _)| (0..run.runs).map(move |r| (i, r)))
        .collect();
    let results: Vec<((usize, usize), Result<RunResult>)> = tasks
        .par_iter()
        .filter_map(|&(i, r)| {
            let plan = plans[i].as_ref().ok()?;
            let rng = run.seed.rng(strategies[i].name(), r as u64);
            let out = run_once(plan, run, corr, rng);
            progress();
            Some(((i, r), out))
        })
        .collect();

    let mut rows = Vec::new();
    for (i, strategy) in strategies.iter().enumerate() {
        let runs: Result<Vec<&RunResult>> = match &plans[i] {
            Err(why) => Err(why.clone()),
            Ok(_) => results
                .iter()
                .filter(|(k, _)| k.0 == i)
                .map(|(_, r)| r.as_ref().map_err(Clone::clone))
                .collect(),
        };
        let scores = |pick: &dyn Fn(&RunResult) -> Option<Errors>| -> Result<Scores> {
            let runs = runs.as_ref().map_err(Clone::clone)?;
            let guaranteed = plans[i].as_ref().map_err(Clone::clone)?.guaranteed();
            let nan = Errors { mae: f64::NAN, mse: f64::NAN, mre: f64::NAN };
            let errors: Vec<Errors> = runs.iter().map(|r| pick(r).unwrap_or(nan)).collect();
            let stat = |get: fn(&Errors) -> f64| Stat::of(&errors.iter().map(get).collect::<Vec<_>>());
            Ok(Scores {
                mae: stat(|e| e.mae),
                mse: stat(|e| e.mse),
                mre: stat(|e| e.mre),
                max_window_budget: runs.iter().map(|r| r.max_window_budget).fold(0.0, f64::max),
                max_tpl: runs.iter().map(|r| r.max_tpl).fold(0.0, f64::max),
                max_window_leakage: runs.iter().map(|r| r.max_window_leakage).fold(0.0, f64::max),
                guaranteed_max_tpl: guaranteed.max_tpl,
                guaranteed_max_window_leakage: guaranteed.max_window_leakage,
                published_fraction: runs.iter().map(|r| r.published_fraction).sum::<f64>()
                    / runs.len() as f64,
            })
        };
        rows.push(Row {
            strategy: strategy.name().into(),
            base: Some(strategy.clone()),
            map: false,
            outcome: scores(&|r| Some(r.raw)),
        });
        for (k, estimator) in estimators.iter().enumerate() {
            let outcome = match &map_blocker {
                Some(why) => Err(why.clone()),
                None => scores(&|r| r.map.get(k).copied()),
            };
            rows.push(Row {
                strategy: format!("{}+{}", strategy.name(), estimator.name()),
                base: Some(strategy.clone()),
                map: true,
                outcome,
            });
        }
    }
    if !estimators.is_empty() {
        rows.push(prior_mean_row(run, map_blocker));
    }
    rows
}

/// The common row sum of `truth`, if every row has the same one (a fixed population N).
fn population(truth: &[Vec<f64>]) -> Option<u64> {
    let first: f64 = truth.first()?.iter().sum();
    let same = truth.iter().all(|r| r.iter().sum::<f64>() == first);
    (same && first >= 0.0 && first.fract() == 0.0 && first <= 2f64.powi(53)).then_some(first as u64)
}

/// The releases a strategy plans before any noise: budgets fixed in advance (allocators;
/// `budgets` are the mechanism's, for sensitivity Δ) or decided by a scheme step by step,
/// with the leakage guaranteed over every run.
enum Plan {
    Scheme { source: CustomStrategy, guaranteed: Leakage },
    Budgets { budgets: Vec<f64>, leakage: Leakage, max_window_budget: f64 },
}

impl Plan {
    /// The leakage guaranteed over every run: for fixed budgets, their own.
    fn guaranteed(&self) -> Leakage {
        match self {
            Self::Scheme { guaranteed, .. } => *guaranteed,
            Self::Budgets { leakage, .. } => *leakage,
        }
    }
}

/// The audited leakage of one sequence of budgets.
#[derive(Clone, Copy)]
struct Leakage {
    max_tpl: f64,
    max_window_leakage: f64,
}

/// The leakage audit of budgets a release calibrated to Δ spent, from the effective budgets
/// ε_t·2/Δ (TKDE Theorem 3 for the windows).
fn audit(corr: &Correlation, budgets: &[f64], sensitivity: f64, window: usize) -> Result<Leakage> {
    let effective = budgets
        .iter()
        .map(|&b| checked_effective_budget(b, sensitivity))
        .collect::<std::result::Result<Vec<f64>, _>>()
        .map_err(CompareError::AuditLoss)?;
    let a = tpl_alloc::audit(corr, tpl_core::Budgets::PerStep(effective), Some(window))
        .map_err(CompareError::Audit)?;
    Ok(Leakage { max_tpl: a.max_tpl, max_window_leakage: a.max_window_leakage.unwrap_or(a.max_tpl) })
}

fn plan(strategy: Strategy, run: &Checked<'_>, corr: &Correlation) -> Result<Plan> {
    let horizon = run.truth.len();
    let allocation = match strategy {
        Strategy::Scheme(SchemeKind::Pba) if run.correlation.is_none() => {
            return Err(CompareError::PbaNeedsCorrelation);
        }
        // A built-in scheme comes through the door a user's does.
        Strategy::Scheme(kind) => return scheme_plan(CustomStrategy::new(kind), run, corr),
        Strategy::Custom(custom) => return scheme_plan(custom, run, corr),
        Strategy::UpperBound => UpperBound::new(corr, run.alpha).allocate(horizon),
        Strategy::Quantified => Quantified::new(corr, run.alpha).allocate(horizon),
        Strategy::Window => WindowAllocator::new(corr, run.alpha, run.window).allocate(horizon),
    }
    .map_err(CompareError::Allocation)?;
    // The plan is per-step leakage; the mechanism gets the budget that spends no more.
    let budgets: Vec<f64> =
        allocation.budgets().iter().map(|e| budget_for_effective(e, run.sensitivity)).collect();
    let leakage = audit(corr, &budgets, run.sensitivity, run.window)?;
    Ok(Plan::Budgets { max_window_budget: window_budget(&budgets, run.window), leakage, budgets })
}

/// The plan of a scheme strategy: its guaranteed leakage over the horizon, from the caps the
/// scheme states (building it draws nothing).
fn scheme_plan(source: CustomStrategy, run: &Checked<'_>, corr: &Correlation) -> Result<Plan> {
    let scheme = scheme_of(&source, run, run.seed.rng(source.name(), 0))?;
    let g = guaranteed_leakage(scheme.as_ref(), corr, run.truth.len(), run.window)?;
    let guaranteed =
        Leakage { max_tpl: g.max_tpl, max_window_leakage: g.max_window_leakage.unwrap_or(g.max_tpl) };
    Ok(Plan::Scheme { source, guaranteed })
}

/// The scheme of one run of `source` drawing from `rng`, over the exact discrete Laplace noise
/// of the run's generator.
fn scheme_of(source: &CustomStrategy, run: &Checked<'_>, rng: ChaCha20Rng) -> Result<Box<dyn StreamScheme>> {
    let (params, inputs) = scheme_params(run)?;
    let built = source.build(params, &inputs, Box::new(DiscreteLaplace::new(rng)));
    built.map(|scheme| scheme as Box<dyn StreamScheme>).map_err(CompareError::Release)
}

/// The parameters and inputs of a w-event scheme in this comparison.
fn scheme_params(run: &Checked<'_>) -> Result<(WEventParams, SchemeInputs)> {
    let params =
        WEventParams::new(run.epsilon, run.window, run.sensitivity).map_err(CompareError::Release)?;
    Ok((params, SchemeInputs::from(PbaPool::detect(run.correlation))))
}

/// The guaranteed audit of `scheme` (its parameters, from step 1) over `horizon` steps and of
/// every window of `window` steps against `corr` ([`docs/model.md`](tpl_core::guide::model) §9):
/// the caps [`effective_spending`] states, with the scheme's window constraint; for a scheme whose
/// every run spends its caps (`laplace`, `uniform`, `sample`, `planned`), the realised audit of
/// those budgets, exactly.
///
/// # Errors
/// [`CompareError::Audit`] when the audit refuses the horizon or window, or overflows;
/// [`CompareError::AuditLoss`] when a cap's loss 2·ε/Δ overflows at the scheme's sensitivity.
pub fn guaranteed_leakage(
    scheme: &dyn StreamScheme,
    corr: &Correlation,
    horizon: usize,
    window: usize,
) -> Result<GuaranteedAudit> {
    let s = effective_spending(scheme, horizon);
    // An infinite cap of a finite budget is the sensitivity's fault: say so, not "inf".
    let delta = scheme.params().sensitivity();
    if let Some(t) = s.caps.iter().position(|c| c.is_infinite()) {
        checked_effective_budget(scheme.max_spend(t + 1), delta).map_err(CompareError::AuditLoss)?;
    }
    if s.window_limit.is_some_and(|(_, e)| e.is_infinite()) {
        checked_effective_budget(scheme.params().epsilon(), delta).map_err(CompareError::AuditLoss)?;
    }
    guaranteed_audit(corr, Spending::from_caps(&s.caps, s.fixed, s.window_limit), Some(window))
        .map_err(CompareError::Audit)
}

/// The largest sum of `window` consecutive budgets.
fn window_budget(budgets: &[f64], window: usize) -> f64 {
    let mut ledger = WindowLedger::new(window);
    for &b in budgets {
        ledger.push(b);
    }
    ledger.max_window_budget()
}

/// What a run released: r_t, the fresh publication budget of each step (0 where it
/// repeated), which steps published, and its budget and leakage.
struct Released {
    releases: Vec<Vec<f64>>,
    fresh: Vec<f64>,
    published: Vec<bool>,
    max_window_budget: f64,
    leakage: Leakage,
}

/// Runs the strategy's stream scheme over the truth: a w-event scheme as it decides, or an
/// allocator's budgets through the `planned` scheme (one release path for every strategy,
/// with the same input checks and exact window ledger).
fn release(plan: &Plan, run: &Checked<'_>, corr: &Correlation, rng: ChaCha20Rng) -> Result<Released> {
    let mut scheme = match plan {
        Plan::Scheme { source, .. } => scheme_of(source, run, rng)?,
        Plan::Budgets { budgets, max_window_budget, .. } => {
            // The plan's own largest window spend is the ε its windows are held to.
            let params = WEventParams::new(*max_window_budget, run.window, run.sensitivity)
                .map_err(CompareError::Release)?;
            let inputs = SchemeInputs { pba_pool: PbaPool::Never, plan: budgets.clone() };
            let planned = CustomStrategy::new(SchemeKind::Planned);
            planned
                .build(params, &inputs, Box::new(DiscreteLaplace::new(rng)))
                .map_err(CompareError::Release)?
        }
    };
    let out = tpl_mechanisms::run(scheme.as_mut(), run.truth).map_err(CompareError::Release)?;
    let leakage = match plan {
        Plan::Budgets { leakage, .. } => *leakage,
        Plan::Scheme { .. } => audit(corr, &out.budgets(), run.sensitivity, run.window)?,
    };
    let fresh = out.spent.iter().zip(&out.published).map(|(s, &p)| if p { s.publication } else { 0.0 });
    Ok(Released {
        fresh: fresh.collect(),
        published: out.published,
        max_window_budget: out.max_window_budget,
        releases: out.releases,
        leakage,
    })
}

/// What one run of a strategy published, step by step: the releases as a reader sees them
/// (a repeat holds the values it repeats) and the fresh publication budget of each step.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunRelease {
    /// r_t for every step (T rows of n values).
    pub releases: Vec<Vec<f64>>,
    /// The publication budget of step t where it published afresh, 0 where it repeated: the
    /// budgets post-processing weighs the releases by ([`tpl_postprocess::filter`]).
    pub fresh: Vec<f64>,
    /// Whether step t published afresh.
    pub published: Vec<bool>,
}

/// One strategy planned once on a [`Setup`], whose runs can then be drawn one at a time (in
/// any order, from any thread): run r is the release run r of [`compare`] draws for this
/// strategy with the same setup and seed, so that callers scoring the releases in their own
/// way (other estimators, other baselines) score the very releases `compare` scores.
///
/// ```
/// use tpl_compare::{Releaser, Seed, Setup, Strategy};
/// let truth = vec![vec![3.0, 7.0]; 20];
/// let setup = Setup::new(&truth, 1.0, 5).seed(Seed::given(1));
/// let bd = Releaser::new(&setup, Strategy::parse("bd")?)?;
/// let run = bd.run(0)?;
/// assert_eq!((run.releases.len(), run.fresh.len()), (20, 20));
/// assert_eq!(run, bd.run(0)?);
/// # Ok::<(), tpl_compare::CompareError>(())
/// ```
pub struct Releaser<'a> {
    run: Checked<'a>,
    plan: Plan,
    strategy: Strategy,
}

impl<'a> Releaser<'a> {
    /// Checks the setup and plans `strategy` on it (an allocator's budgets are computed here,
    /// once). The setup's runs and post-processing are not used: [`Releaser::run`] draws the
    /// runs asked for, and releases only.
    ///
    /// # Errors
    /// Those of [`compare`] for the setup, and the error the strategy's row of [`compare`]
    /// would carry when it cannot run here ([`CompareError::PbaNeedsCorrelation`], [`CompareError::Allocation`], …).
    pub fn new(setup: &Setup<'a>, strategy: Strategy) -> Result<Self> {
        let (alpha, _) = setup.check()?;
        let run = setup.checked(alpha, setup.seed.unwrap_or_else(Seed::from_os_rng), None);
        let plan = plan(strategy.clone(), &run, run.correlation)?;
        Ok(Self { run, plan, strategy })
    }

    /// The releases of run `run` (numbered from 0, as in [`compare`]).
    ///
    /// # Errors
    /// [`CompareError::Release`] when the scheme refuses a step, [`CompareError::Audit`] when
    /// the audit of its spend does.
    pub fn run(&self, run: usize) -> Result<RunRelease> {
        let rng = self.run.seed.rng(self.strategy.name(), run as u64);
        let out = release(&self.plan, &self.run, self.run.correlation, rng)?;
        Ok(RunRelease { published: out.published, releases: out.releases, fresh: out.fresh })
    }
}

fn run_once(plan: &Plan, run: &Checked<'_>, corr: &Correlation, rng: ChaCha20Rng) -> Result<RunResult> {
    let out = release(plan, run, corr, rng)?;
    let raw = Errors::of(&out.releases, run.truth)?;
    let mut map = Vec::new();
    if let Some((estimators, total)) = &run.map_total {
        for &estimator in estimators {
            let est =
                map_estimates(run, &out.releases, &out.fresh, *total, &PriorPolicy::Frequency, estimator)?;
            map.push(Errors::of(&est, run.truth)?);
        }
    }
    Ok(RunResult {
        raw,
        map,
        max_window_budget: out.max_window_budget,
        max_tpl: out.leakage.max_tpl,
        max_window_leakage: out.leakage.max_window_leakage,
        published_fraction: out.published.iter().filter(|&&p| p).count() as f64 / run.truth.len() as f64,
    })
}

/// Estimates of the counts behind `releases` by `estimator` ([docs/map.md](tpl_core::guide::map)),
/// with the forward matrix (and the backward one, for `smooth`) as public prior, each step weighted
/// by its fresh budget.
fn map_estimates(
    run: &Checked<'_>,
    releases: &[Vec<f64>],
    fresh: &[f64],
    total: u64,
    prior: &PriorPolicy,
    estimator: Estimator,
) -> Result<Vec<Vec<f64>>> {
    let config = FilterConfig {
        sensitivity: run.sensitivity,
        prior: prior.clone(),
        correlation: run.correlation,
        estimator,
        ..FilterConfig::new(total)
    };
    let est = tpl_postprocess::filter(releases, fresh, config).map_err(CompareError::Postprocess)?;
    Ok(est.estimates)
}

/// The data-free baseline (DBSec 2023): the prior mean N·p_t with a uniform p_1 moved by
/// the forward matrix and no release at all (zero leakage), whatever the estimator.
fn prior_mean_row(run: &Checked<'_>, blocker: Option<CompareError>) -> Row {
    let outcome = match (blocker, &run.map_total) {
        (Some(why), _) => Err(why),
        (None, None) => Err(CompareError::MapNeedsFixedPopulation),
        (None, Some((_, total))) => {
            let total = *total;
            let horizon = run.truth.len();
            let zero = vec![vec![0.0; run.truth[0].len()]; horizon];
            let budgets = vec![0.0; horizon];
            map_estimates(run, &zero, &budgets, total, &PriorPolicy::Uniform, Estimator::MapDbsec).and_then(
                |est| {
                    Ok(Scores {
                        mae: Stat::exact(mae(&est, run.truth)?),
                        mse: Stat::exact(mse(&est, run.truth)?),
                        mre: Stat::exact(mre(&est, run.truth)?),
                        max_window_budget: 0.0,
                        max_tpl: 0.0,
                        max_window_leakage: 0.0,
                        guaranteed_max_tpl: 0.0,
                        guaranteed_max_window_leakage: 0.0,
                        published_fraction: 0.0,
                    })
                },
            )
        }
    };
    Row { strategy: "prior-mean".into(), base: None, map: true, outcome }
}
