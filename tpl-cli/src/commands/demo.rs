//! `tpl demo`: with no arguments, what a stream of ε-DP releases really leaks on a small
//! example, then simulate → estimate → compare on a synthetic population and on a real
//! vessel stream shipped in the binary; writes charts and a self-contained HTML report
//! (`report.html`) to `tpl-demo/`.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;
use tpl_compare::{Holdout, Seed, Strategy, USERS_STREAM, histogram, simulate_users};
use tpl_core::{Correlation, LeakageSeries, Loss, LossEvaluator, Steps, TransitionMatrix};
use tpl_io::{counts_text, matrix_text, parse_user_stream, stream_text};
use tpl_report::chart::leakage_svg;
use tpl_report::demo::{
    CHARTS, CMP_EPSILON, CMP_WINDOW, Demo, EPSILON, HORIZON, REPORT, SIM_CELLS, SIM_SMOOTHING, SIM_STEPS,
    SIM_USERS, SMOOTHING, STATES, WINDOW,
};
use tpl_report::{ComparisonReport, MatrixSource};

use crate::comparison_report::{Options, run_comparison};
use crate::error::{CliError, Result};
use crate::output_dir::{create_dir, write_file};
use crate::provenance::{version_line, with_build};
use crate::render::Report;

/// Arguments of `tpl demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Folder for the charts (SVG), the report (`report.html`, one self-contained page) and
    /// the demo's data.
    #[arg(long, value_name = "DIR", default_value = "tpl-demo")]
    pub out: PathBuf,
    /// Releases per strategy in the comparisons.
    #[arg(long, value_name = "R", default_value_t = 10)]
    pub runs: usize,
    /// Seed of the simulation and of the releases (the demo is reproducible by default).
    #[arg(long, value_name = "S", default_value_t = 2018)]
    pub seed: u64,
}

/// The real stream compiled into the binary: 295 vessels in New York Harbor over one hour
/// in one-minute buckets (see `tpl-cli/data/README.md` for provenance and licence).
const AIS_HOUR: &str = include_str!("../../data/ais_nyharbor_hour_1min/stream.csv");

/// The most runs per strategy the demo takes: its three comparisons then take about six
/// minutes on 2 cores (`tpl compare --runs` takes up to [`tpl_compare::MAX_RUNS`]).
const MAX_DEMO_RUNS: usize = 1000;

/// Seconds a run per strategy adds to the demo, measured on 2 cores (10 runs: 3.5 s, 20: 6.8 s).
const SECONDS_PER_RUN: f64 = 0.33;

/// Runs `tpl demo`.
pub fn run(args: &DemoArgs) -> Result<Demo> {
    if args.runs == 0 || args.runs > MAX_DEMO_RUNS {
        return Err(CliError::Usage(format!(
            "--runs {}: the demo takes 1 to {MAX_DEMO_RUNS} runs per strategy (tpl compare takes up to {} on your \
             own data)",
            args.runs,
            tpl_compare::MAX_RUNS
        )));
    }
    if args.runs > 50 {
        crate::progress::announce(&format!(
            "tpl demo --runs {}: expect about {} on 2 cores (progress is drawn when standard error is a terminal)",
            args.runs,
            crate::progress::duration(args.runs as f64 * SECONDS_PER_RUN)
        ));
    }
    let matrix = TransitionMatrix::smoothed_identity(STATES, SMOOTHING)?;
    let loss = Loss::new(&matrix, 8);
    let alphas = vec![0.1, 0.5, 1.0, 2.0, 5.0, 10.0];
    let losses = alphas.iter().map(|&a| loss.loss(a)).collect();
    let known = Correlation::new(Some(matrix.clone()), Some(matrix.clone()))?;
    let series = LeakageSeries::new(&known, &[EPSILON; HORIZON])?;
    let window_max = series.window_leakage(WINDOW)?.into_iter().fold(0.0, f64::max);
    let suprema = [0.01, 0.1, 0.5, 1.0]
        .iter()
        .map(|&e| known.backward_supremum(e).map(|s| (e, s)))
        .collect::<tpl_core::Result<Vec<_>>>()?;
    let dir = &args.out;
    create_dir(dir)?;
    let rows = matrix.rows().map(|r| r.iter().map(f64::to_string).collect());
    write_file(
        &dir.join("matrix.csv"),
        &matrix_text(&format!("tpl demo: smoothed identity, n = {STATES}, s = {SMOOTHING}"), rows),
    )?;
    let leakage = leakage_svg(
        &format!("Leakage of {HORIZON} releases at ε = {EPSILON} under a known Markov chain"),
        &series,
    )?;
    let options = Options {
        epsilon: CMP_EPSILON,
        window: CMP_WINDOW,
        alpha: None,
        sensitivity: tpl_mechanisms::DEFAULT_SENSITIVITY,
        runs: args.runs,
        postprocess: Some((tpl_postprocess::Estimator::OFFLINE_DEFAULT, true)),
        baseline: true,
        seed: Some(args.seed),
    };

    // Synthetic: simulate Markov users, estimate the matrices back from their stream, compare.
    let truth_matrix = TransitionMatrix::smoothed_identity(SIM_CELLS, SIM_SMOOTHING)?;
    let mut rng = Seed::given(args.seed).rng(USERS_STREAM, 0);
    let states =
        simulate_users(&truth_matrix, &[1.0 / SIM_CELLS as f64; SIM_CELLS], SIM_USERS, SIM_STEPS, &mut rng)
            .map_err(|source| CliError::Compare { context: "demo simulation: ".into(), source })?;
    let sim_dir = dir.join("synthetic");
    create_dir(&sim_dir)?;
    write_file(&sim_dir.join("stream.csv"), &stream_text(&states))?;
    write_file(&sim_dir.join("counts.csv"), &counts_text(&histogram(&states, SIM_CELLS)?))?;
    let synthetic = first_half_then_second(&states, SIM_CELLS, &options)?;
    let synthetic_chart = synthetic.chart_svg("synthetic Markov users, second half")?;

    // Real: the vessel stream shipped in the binary, with its raw estimated matrices.
    let stream = parse_user_stream(Path::new("built-in ais_nyharbor_hour_1min/stream.csv"), AIS_HOUR)?;
    let real = first_half_then_second(&stream.states, stream.cells(), &options)?;
    let real_chart = real.chart_svg("New York harbour, 1 hour, second half")?;
    let charts = [leakage, synthetic_chart, real_chart];
    for ((file, _), svg) in CHARTS.iter().zip(&charts) {
        write_file(&dir.join(file), svg)?;
    }

    let report = Demo {
        matrix,
        alphas,
        losses,
        series,
        window_max,
        suprema,
        synthetic,
        real,
        out: dir.clone(),
        runs: args.runs,
        seed: args.seed,
        charts,
    };
    write_file(&dir.join(REPORT), &report.page(&version_line())?)?;
    Ok(report)
}

/// The honest protocol of every accuracy figure of the demo: the raw matrices estimated from
/// the first half of the steps of `states` (public knowledge from an earlier period), every
/// strategy scored on the second half.
fn first_half_then_second(
    states: &[Vec<usize>],
    cells: usize,
    options: &Options,
) -> Result<ComparisonReport> {
    let steps = states.len();
    let holdout = Holdout::new(steps, Steps::new(1, steps / 2)?, None, false)
        .map_err(|source| CliError::Compare { context: "demo: ".into(), source })?;
    let held = holdout
        .split(states, cells, None)
        .map_err(|source| CliError::Compare { context: "demo: ".into(), source })?;
    let known = Correlation::new(Some(held.backward.matrix), Some(held.forward.matrix))?;
    run_comparison(&held.truth, &known, MatrixSource::estimated(holdout), options, &Strategy::ALL)
}

/// The JSON of `tpl demo` is the report's with the `version` and `build` of the binary.
impl Report for Demo {
    fn json(&self) -> Value {
        with_build(self)
    }

    fn csv(&self) -> String {
        Demo::csv(self)
    }

    fn table(&self) -> String {
        Demo::table(self)
    }
}
