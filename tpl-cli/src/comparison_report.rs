//! The comparison behind `tpl compare` and `tpl demo`: the flags, the run through
//! `tpl-compare` with a progress bar, and its outputs (`tpl_report::ComparisonReport`).

use serde_json::Value;
use tpl_compare::{Seed, Setup, Strategy, compare};
use tpl_core::Correlation;
use tpl_postprocess::Estimator;
use tpl_report::{ComparisonReport, MatrixSource};

use crate::error::Result;
use crate::progress;
use crate::provenance::with_build;
use crate::render::Report;

/// The flags of a comparison, before validation.
pub struct Options {
    /// ε of the schemes.
    pub epsilon: f64,
    /// w.
    pub window: usize,
    /// α of the allocators (default ε).
    pub alpha: Option<f64>,
    /// Δ.
    pub sensitivity: f64,
    /// R.
    pub runs: usize,
    /// The estimator of the post-processed rows, if any, and whether it was the default
    /// (`--postprocess` without a name).
    pub postprocess: Option<(Estimator, bool)>,
    /// Whether the post-processed rows come with the `+kalman` baseline's.
    pub baseline: bool,
    /// --seed.
    pub seed: Option<u64>,
}

/// Runs the comparison of `tpl-compare`, with a progress bar on a terminal; `matrices` says
/// where the matrices of `correlation` came from and which steps `truth` is.
pub fn run_comparison(
    truth: &[Vec<f64>],
    correlation: &Correlation,
    matrices: MatrixSource,
    o: &Options,
    strategies: &[Strategy],
) -> Result<ComparisonReport> {
    let setup = Setup::new(truth, o.epsilon, o.window)
        .correlation(correlation)
        .alpha(o.alpha)
        .sensitivity(o.sensitivity)
        .runs(o.runs)
        .postprocess(o.postprocess.map(|(e, _)| e))
        .baseline(o.baseline)
        .seed(Seed::new(o.seed));
    let bar = progress::bar(setup.total_runs(strategies) as u64, "comparing", "runs");
    let tick = || bar.inc(1);
    let comparison = compare(&setup.observer(&tick), strategies);
    bar.finish_and_clear();
    let postprocess_default = o.postprocess.is_some_and(|(_, d)| d);
    Ok(ComparisonReport { comparison: comparison?, matrices, postprocess_default })
}

/// The JSON of `tpl compare` is the report's with the `version` and `build` of the binary.
impl Report for ComparisonReport {
    fn json(&self) -> Value {
        with_build(self)
    }

    fn csv(&self) -> String {
        ComparisonReport::csv(self)
    }

    fn table(&self) -> String {
        ComparisonReport::table(self)
    }
}
