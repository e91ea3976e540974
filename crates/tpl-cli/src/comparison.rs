//! The comparison behind `tpl compare` and `tpl demo`: every strategy released R times over
//! the same true counts, scored on error and on the leakage an adversary with the given
//! correlation really gets (audited with `tpl-core`). Composition only: the schemes come
//! from `tpl-mechanisms`, the budgets from `tpl-alloc`, the estimates from
//! `tpl-postprocess`.
//!
//! Every leakage is audited from the budget a step really spends against one person's
//! change, [`effective_budget`] = ε_t·2/Δ for a release calibrated to sensitivity Δ. The
//! allocators' budgets are such per-step leakages: they are executed with the mechanism
//! budget [`budget_for_effective`] of each, so that they keep α whatever Δ is.

use std::fmt;

use rayon::prelude::*;
use tpl_alloc::{Allocator, Correlation, Quantified, UpperBound, WindowAllocator};
use tpl_core::TransitionMatrix;
use tpl_mechanisms::metrics::{mae, mse};
use tpl_mechanisms::{
    DiscreteLaplace, LaplaceMechanism, Mechanism, PbaCorrelation, SchemeKind, WEventParams, WindowLedger,
    budget_for_effective, effective_budget, run,
};
use tpl_postprocess::{Estimator, PriorPolicy, PriorUpdate, filter};

use crate::seed::Seed;

/// A release strategy: a w-event scheme, or a TPL allocator whose budgets drive a Laplace
/// release at every step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// One of the six schemes of `tpl-mechanisms`.
    Scheme(SchemeKind),
    /// TKDE Algorithm 7: TPL_t ≤ α for a stream of any length.
    UpperBound,
    /// TKDE Algorithm 8: TPL_t = α at every step of T.
    Quantified,
    /// Every window of w steps leaks ≤ α (Theorem 3).
    Window,
}

impl Strategy {
    /// Every strategy, in the order of the comparison table.
    pub const ALL: [Strategy; 9] = [
        Self::Scheme(SchemeKind::Laplace),
        Self::Scheme(SchemeKind::Uniform),
        Self::Scheme(SchemeKind::Sample),
        Self::Scheme(SchemeKind::Bd),
        Self::Scheme(SchemeKind::Ba),
        Self::Scheme(SchemeKind::Pba),
        Self::UpperBound,
        Self::Quantified,
        Self::Window,
    ];

    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Scheme(k) => k.name(),
            Self::UpperBound => "upper-bound",
            Self::Quantified => "quantified",
            Self::Window => "window",
        }
    }

    /// The strategy called `name`.
    pub fn parse(name: &str) -> std::result::Result<Self, String> {
        Self::ALL.into_iter().find(|s| s.name() == name).ok_or_else(|| {
            let all: Vec<&str> = Self::ALL.iter().map(|s| s.name()).collect();
            format!("unknown strategy {name:?}; one of: {}", all.join(", "))
        })
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything a comparison needs.
pub struct Setup<'a> {
    /// The true counts c_t (integers), T rows of n cells.
    pub truth: &'a [Vec<f64>],
    /// The adversary's backward correlation, if known to them.
    pub backward: Option<&'a TransitionMatrix>,
    /// The adversary's forward correlation (also MAP's public prior), if known.
    pub forward: Option<&'a TransitionMatrix>,
    /// Budget of every window of `window` steps, for the schemes.
    pub epsilon: f64,
    /// The w of w-event privacy (and of the audited window leakage).
    pub window: usize,
    /// The leakage target of the allocators.
    pub alpha: f64,
    /// L1 sensitivity of one step's counts.
    pub sensitivity: f64,
    /// Releases per strategy.
    pub runs: usize,
    /// Also score each strategy after MAP post-processing.
    pub map: bool,
    /// Base seed.
    pub seed: Seed,
}

/// Mean and sample standard deviation over runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (0 for one run).
    pub std: f64,
}

impl Stat {
    fn of(values: &[f64]) -> Self {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = if values.len() > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Self { mean, std: var.sqrt() }
    }
}

/// The scores of one strategy (over all runs).
#[derive(Debug, Clone, PartialEq)]
pub struct Scores {
    /// Mean absolute error per cell and step.
    pub mae: Stat,
    /// Mean squared error per cell and step.
    pub mse: Stat,
    /// Largest budget any w consecutive steps spent, as ε_t of releases calibrated to Δ
    /// (max over runs).
    pub max_window_budget: f64,
    /// Largest TPL_t under the correlation, from the effective budgets ε_t·2/Δ (max over
    /// runs).
    pub max_tpl: f64,
    /// Largest leakage of w consecutive steps under the correlation, from the effective
    /// budgets ε_t·2/Δ (max over runs).
    pub max_window_leakage: f64,
    /// Fraction of steps that published fresh noisy counts (mean over runs).
    pub published_fraction: f64,
}

/// One row of the comparison: a strategy, possibly post-processed, and its scores or the
/// reason it could not run.
#[derive(Debug, Clone)]
pub struct Row {
    /// `bd`, `bd+map`, `prior-mean`, ….
    pub strategy: String,
    /// The base strategy (`None` for the data-free baseline).
    pub base: Option<Strategy>,
    /// Whether the row is MAP post-processed.
    pub map: bool,
    /// Scores, or why the strategy cannot run here.
    pub outcome: std::result::Result<Scores, String>,
}

/// The releases a strategy plans before any noise: budgets fixed in advance (allocators;
/// `budgets` are the mechanism's, for sensitivity Δ) or decided by a scheme step by step.
enum Plan {
    Scheme(SchemeKind),
    Budgets { budgets: Vec<f64>, max_tpl: f64, max_window_leakage: f64, max_window_budget: f64 },
}

/// The leakage audit of budgets a release calibrated to `sensitivity` spent: (max TPL_t,
/// largest window leakage), from the effective budgets ε_t·2/Δ.
fn audit(
    corr: &Correlation,
    budgets: &[f64],
    sensitivity: f64,
    window: usize,
) -> std::result::Result<(f64, f64), String> {
    let effective: Vec<f64> = budgets.iter().map(|&b| effective_budget(b, sensitivity)).collect();
    let (_, max_tpl, leakage) =
        tpl_alloc::audit(corr, &effective, Some(window)).map_err(|e| e.to_string())?;
    Ok((max_tpl, leakage.unwrap_or(max_tpl)))
}

/// What one run of one strategy produced.
struct RunResult {
    raw: (f64, f64),
    map: Option<(f64, f64)>,
    max_window_budget: f64,
    max_tpl: f64,
    max_window_leakage: f64,
    published_fraction: f64,
}

/// Runs every strategy `setup.runs` times, in parallel; `tick` is called once per finished
/// run (a progress bar). Rows come in the order of `strategies`, each followed by its MAP
/// row when asked for, then the data-free baseline when MAP is on.
pub fn compare(setup: &Setup<'_>, strategies: &[Strategy], tick: &(dyn Fn() + Sync)) -> Vec<Row> {
    let corr = match Correlation::new(setup.backward, setup.forward) {
        Ok(corr) => corr,
        Err(e) => {
            let why = e.to_string();
            let row = |&s: &Strategy| Row {
                strategy: s.name().into(),
                base: Some(s),
                map: false,
                outcome: Err(why.clone()),
            };
            return strategies.iter().map(row).collect();
        }
    };
    let horizon = setup.truth.len();
    let total = population(setup.truth);
    let map_blocker: Option<String> = if !setup.map {
        None
    } else if setup.forward.is_none() {
        Some("MAP post-processing needs --forward (its prior moves by the forward matrix)".into())
    } else if total.is_none() {
        Some(
            "MAP post-processing needs a fixed population: the count rows do not all have the same sum"
                .into(),
        )
    } else {
        None
    };
    let plans: Vec<std::result::Result<Plan, String>> =
        strategies.iter().map(|&s| plan(s, setup, &corr, horizon)).collect();
    let tasks: Vec<(usize, usize)> = plans
        .iter()
        .enumerate()
        .filter(|(_, p)| p.is_ok())
        .flat_map(|(i, _)| (0..setup.runs).map(move |r| (i, r)))
        .collect();
    let results: Vec<((usize, usize), std::result::Result<RunResult, String>)> = tasks
        .par_iter()
        .map(|&(i, r)| {
            let Ok(plan) = &plans[i] else { unreachable!("only planned strategies become tasks") };
            let task = (i * setup.runs.max(1) + r) as u64;
            let map_total = if map_blocker.is_none() { total.filter(|_| setup.map) } else { None };
            let out = run_once(plan, setup, &corr, task, map_total);
            tick();
            ((i, r), out)
        })
        .collect();

    let mut rows = Vec::new();
    for (i, &strategy) in strategies.iter().enumerate() {
        let runs: std::result::Result<Vec<&RunResult>, String> = match &plans[i] {
            Err(why) => Err(why.clone()),
            Ok(_) => results
                .iter()
                .filter(|(k, _)| k.0 == i)
                .map(|(_, r)| r.as_ref().map_err(Clone::clone))
                .collect(),
        };
        let scores = |pick: &dyn Fn(&RunResult) -> (f64, f64)| -> std::result::Result<Scores, String> {
            let runs = runs.as_ref().map_err(Clone::clone)?;
            let errors: Vec<(f64, f64)> = runs.iter().map(|r| pick(r)).collect();
            Ok(Scores {
                mae: Stat::of(&errors.iter().map(|e| e.0).collect::<Vec<_>>()),
                mse: Stat::of(&errors.iter().map(|e| e.1).collect::<Vec<_>>()),
                max_window_budget: runs.iter().map(|r| r.max_window_budget).fold(0.0, f64::max),
                max_tpl: runs.iter().map(|r| r.max_tpl).fold(0.0, f64::max),
                max_window_leakage: runs.iter().map(|r| r.max_window_leakage).fold(0.0, f64::max),
                published_fraction: runs.iter().map(|r| r.published_fraction).sum::<f64>()
                    / runs.len() as f64,
            })
        };
        rows.push(Row {
            strategy: strategy.name().into(),
            base: Some(strategy),
            map: false,
            outcome: scores(&|r| r.raw),
        });
        if setup.map {
            let outcome = match &map_blocker {
                Some(why) => Err(why.clone()),
                None => scores(&|r| r.map.unwrap_or((f64::NAN, f64::NAN))),
            };
            rows.push(Row {
                strategy: format!("{}+map", strategy.name()),
                base: Some(strategy),
                map: true,
                outcome,
            });
        }
    }
    if setup.map {
        rows.push(prior_mean_row(setup, total, map_blocker));
    }
    rows
}

/// The common row sum of `truth`, if every row has the same one.
fn population(truth: &[Vec<f64>]) -> Option<u64> {
    let first: f64 = truth.first()?.iter().sum();
    let same = truth.iter().all(|r| r.iter().sum::<f64>() == first);
    (same && first >= 0.0 && first.fract() == 0.0 && first <= 2f64.powi(53)).then_some(first as u64)
}

fn plan(
    strategy: Strategy,
    setup: &Setup<'_>,
    corr: &Correlation,
    horizon: usize,
) -> std::result::Result<Plan, String> {
    let allocation = match strategy {
        Strategy::Scheme(SchemeKind::Pba) if setup.backward.is_none() && setup.forward.is_none() => {
            return Err("pba needs --backward and/or --forward: its correlation pool depends on them".into());
        }
        Strategy::Scheme(kind) => return Ok(Plan::Scheme(kind)),
        Strategy::UpperBound => UpperBound::new(corr, setup.alpha).allocate(horizon),
        Strategy::Quantified => Quantified::new(corr, setup.alpha).allocate(horizon),
        Strategy::Window => WindowAllocator::new(corr, setup.alpha, setup.window).allocate(horizon),
    }
    .map_err(|e| e.to_string())?;
    // The plan is per-step leakage; the mechanism gets the budget that spends no more.
    let budgets: Vec<f64> =
        allocation.budgets.iter().map(|&e| budget_for_effective(e, setup.sensitivity)).collect();
    let (max_tpl, max_window_leakage) = audit(corr, &budgets, setup.sensitivity, setup.window)?;
    Ok(Plan::Budgets {
        max_window_budget: window_budget(&budgets, setup.window),
        max_tpl,
        max_window_leakage,
        budgets,
    })
}

fn window_budget(budgets: &[f64], window: usize) -> f64 {
    let mut ledger = WindowLedger::new(window);
    for &b in budgets {
        ledger.push(b);
    }
    ledger.max_window_budget()
}

fn run_once(
    plan: &Plan,
    setup: &Setup<'_>,
    corr: &Correlation,
    task: u64,
    map_total: Option<u64>,
) -> std::result::Result<RunResult, String> {
    let noise = DiscreteLaplace::new(setup.seed.rng(task));
    let mut mechanism = LaplaceMechanism::new(noise);
    let (releases, fresh, published, max_window_budget, max_tpl, max_window_leakage) = match plan {
        Plan::Scheme(kind) => {
            let params = WEventParams::new(setup.epsilon, setup.window, setup.sensitivity)
                .map_err(|e| e.to_string())?;
            let pool = PbaCorrelation::from_matrices(setup.backward, setup.forward);
            let mut scheme = kind.build(params, mechanism, pool).map_err(|e| e.to_string())?;
            let out = run(scheme.as_mut(), setup.truth).map_err(|e| e.to_string())?;
            let (max_tpl, max_window_leakage) = audit(corr, &out.budgets(), setup.sensitivity, setup.window)?;
            let fresh: Vec<f64> = out
                .spent
                .iter()
                .zip(&out.published)
                .map(|(s, &p)| if p { s.publication } else { 0.0 })
                .collect();
            let published = out.published.iter().filter(|&&p| p).count();
            (out.releases, fresh, published, out.max_window_budget, max_tpl, max_window_leakage)
        }
        Plan::Budgets { budgets, max_tpl, max_window_leakage, max_window_budget } => {
            let releases = setup
                .truth
                .iter()
                .zip(budgets)
                .map(|(c, &b)| mechanism.release(c, setup.sensitivity, b))
                .collect::<tpl_mechanisms::Result<Vec<_>>>()
                .map_err(|e| e.to_string())?;
            (releases, budgets.clone(), budgets.len(), *max_window_budget, *max_tpl, *max_window_leakage)
        }
    };
    let raw = (mae(&releases, setup.truth), mse(&releases, setup.truth));
    let map = match map_total {
        Some(total) => {
            let est = filter(
                &releases,
                &fresh,
                setup.sensitivity,
                total,
                &PriorPolicy::Frequency,
                setup.forward,
                Estimator::Map,
                PriorUpdate::ClosedLoop,
            )
            .map_err(|e| e.to_string())?;
            Some((mae(&est.estimates, setup.truth), mse(&est.estimates, setup.truth)))
        }
        None => None,
    };
    Ok(RunResult {
        raw,
        map,
        max_window_budget,
        max_tpl,
        max_window_leakage,
        published_fraction: published as f64 / setup.truth.len() as f64,
    })
}

/// The data-free baseline of `map-postprocessing.md` §7: the prior mean N·p_t with a
/// uniform p_1 moved by the forward matrix and no release at all (zero leakage).
fn prior_mean_row(setup: &Setup<'_>, total: Option<u64>, blocker: Option<String>) -> Row {
    let outcome = match (blocker, total) {
        (Some(why), _) => Err(why),
        (None, None) => Err("needs a fixed population".into()),
        (None, Some(total)) => {
            let zero = vec![vec![0.0; setup.truth[0].len()]; setup.truth.len()];
            filter(
                &zero,
                &vec![0.0; setup.truth.len()],
                setup.sensitivity,
                total,
                &PriorPolicy::Uniform,
                setup.forward,
                Estimator::Map,
                PriorUpdate::ClosedLoop,
            )
            .map_err(|e| e.to_string())
            .map(|est| {
                let stat = |v| Stat { mean: v, std: 0.0 };
                Scores {
                    mae: stat(mae(&est.estimates, setup.truth)),
                    mse: stat(mse(&est.estimates, setup.truth)),
                    max_window_budget: 0.0,
                    max_tpl: 0.0,
                    max_window_leakage: 0.0,
                    published_fraction: 0.0,
                }
            })
        }
    };
    Row { strategy: "prior-mean".into(), base: None, map: true, outcome }
}
