//! What a comparison returns: per strategy, its error over the runs, the leakage it really
//! gave and the leakage it guarantees over every run, or why it could not run.

use crate::Strategy;
use crate::error::CompareError;

/// Mean and sample standard deviation over runs.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Stat {
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (0 for one run).
    pub std: f64,
}

impl Stat {
    /// The mean and sample standard deviation of `values` (NaN for no values).
    pub fn of(values: &[f64]) -> Self {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = if values.len() > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Self { mean, std: var.sqrt() }
    }

    /// A single value: its own mean, deviation 0.
    pub fn exact(value: f64) -> Self {
        Self { mean: value, std: 0.0 }
    }
}

/// The scores of one strategy over all its runs.
///
/// Every leakage is audited from the budget a step really spends against one person's
/// change, ε_t·2/Δ for a release calibrated to sensitivity Δ
/// (`tpl_mechanisms::effective_budget`), under the adversary's correlation (TKDE
/// Theorem 3 for windows).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Scores {
    /// Mean absolute error per cell and step.
    pub mae: Stat,
    /// Mean squared error per cell and step.
    pub mse: Stat,
    /// Mean relative error per cell and step, each divided by the larger of its count and 1 %
    /// of its cell's total ([`crate::mre`], the benchmark's MRE).
    pub mre: Stat,
    /// Largest budget any w consecutive steps spent, as ε_t of releases calibrated to Δ
    /// (max over runs).
    pub max_window_budget: f64,
    /// Largest TPL_t under the correlation, from the effective budgets (max over runs).
    pub max_tpl: f64,
    /// Largest leakage of w consecutive steps under the correlation, from the effective
    /// budgets (max over runs).
    pub max_window_leakage: f64,
    /// An upper bound of TPL_t over every run the strategy could produce
    /// ([`docs/model.md`](tpl_core::guide::model) §9): from each step's largest spend and the
    /// window constraint; for budgets fixed in advance, `max_tpl` itself.
    pub guaranteed_max_tpl: f64,
    /// An upper bound of the leakage of w consecutive steps over every run the strategy
    /// could produce; for budgets fixed in advance, `max_window_leakage` itself.
    pub guaranteed_max_window_leakage: f64,
    /// Fraction of steps that published fresh noisy counts (mean over runs).
    pub published_fraction: f64,
}

/// A column of a row: its name and how to read it from the scores.
pub type Column = (&'static str, fn(&Scores) -> f64);

impl Scores {
    /// The columns of a row, in the order of its serialised form (the `tpl compare --format
    /// json` contract): every score a row reports is listed here once.
    pub const COLUMNS: [Column; 12] = [
        ("mae", |s| s.mae.mean),
        ("mse", |s| s.mse.mean),
        ("mre", |s| s.mre.mean),
        ("max_window_budget", |s| s.max_window_budget),
        ("max_tpl", |s| s.max_tpl),
        ("max_window_leakage", |s| s.max_window_leakage),
        ("guaranteed_max_tpl", |s| s.guaranteed_max_tpl),
        ("guaranteed_max_window_leakage", |s| s.guaranteed_max_window_leakage),
        ("published_fraction", |s| s.published_fraction),
        ("mae_std", |s| s.mae.std),
        ("mse_std", |s| s.mse.std),
        ("mre_std", |s| s.mre.std),
    ];
}

/// One row of a comparison: a strategy, possibly MAP post-processed, and its scores or the
/// reason it could not run.
///
/// Serialised (feature `serde`) flat, as `{"strategy", `[`Scores::COLUMNS`]`…, "error"}`
/// with every score null when the strategy could not run and `error` null when it did.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Row {
    /// `bd`, `bd+map`, `bd+smooth`, `prior-mean`, ….
    pub strategy: String,
    /// The base strategy (`None` for the data-free `prior-mean` baseline).
    pub base: Option<Strategy>,
    /// Whether the row is post-processed (or the data-free `prior-mean`).
    pub map: bool,
    /// Scores, or why the strategy cannot run here.
    pub outcome: Result<Scores, CompareError>,
}

#[cfg(feature = "serde")]
impl serde::Serialize for Row {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let scores = self.outcome.as_ref().ok();
        let mut row = serializer.serialize_struct("Row", Scores::COLUMNS.len() + 2)?;
        row.serialize_field("strategy", &self.strategy)?;
        for (name, get) in Scores::COLUMNS {
            row.serialize_field(name, &scores.map(get))?;
        }
        row.serialize_field("error", &self.outcome.as_ref().err().map(ToString::to_string))?;
        row.end()
    }
}

/// The result of [`compare`](crate::compare): the rows and the parameters they were made
/// with (serialised in this field order).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[non_exhaustive]
pub struct Comparison {
    /// The rows: every strategy in the order asked, each followed by its `+map` row when
    /// MAP was asked for, then the `prior-mean` baseline.
    pub rows: Vec<Row>,
    /// ε of every window of the w-event schemes.
    pub epsilon: f64,
    /// w.
    pub window: usize,
    /// α of the allocators.
    pub alpha: f64,
    /// Δ the releases were calibrated to.
    pub sensitivity: f64,
    /// Runs per strategy.
    pub runs: usize,
    /// The base seed the runs' generators were derived from.
    pub seed: u64,
    /// Whether the seed was asked for: reproducible, hence not private.
    pub seeded: bool,
    /// Steps T.
    pub horizon: usize,
    /// Cells n.
    pub cells: usize,
    /// The estimator of the post-processed rows (`<strategy>+<name>`), if any.
    pub postprocess: Option<tpl_postprocess::Estimator>,
}
