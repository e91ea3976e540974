//! `tpl compare`: every release strategy on one count stream, scored on error *and* on the
//! leakage the adversary's correlation really gives (TKDE Theorem 3 audit), with an
//! optional chart of error against leakage and an optional self-contained HTML report.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use tpl_compare::{CompareError, Holdout, Strategy, histogram};
use tpl_core::{Correlation, StepRange, Steps, TransitionMatrix};
use tpl_io::{read_counts, read_user_stream};
use tpl_mechanisms::{DiscreteLaplace, LaplaceMechanism};
use tpl_postprocess::Estimator;
use tpl_report::{ComparisonReport, MatrixSource};

use crate::args::{CorrelationArgs, SeedArgs, WEventArgs};
use crate::comparison_report::{Options, run_comparison};
use crate::counts_check::check_counts;
use crate::error::{CliError, Result};
use crate::output_dir::write_file;
use crate::provenance::{command_line, note_seeded, version_line};

/// Post-processing applied to every strategy's releases (in extra rows
/// `<strategy>+<name>`; [`docs/map.md`](tpl_core::guide::map)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Postprocess {
    /// `--postprocess` without a name: the offline default, smooth.
    #[value(hide = true)]
    Default,
    /// The causal filter: MAP with a prior whose strength is learned from the releases up
    /// to each step (the default of a live stream).
    Map,
    /// MAP with the DBSec paper's prior at full strength.
    MapDbsec,
    /// Whole-sequence smoothing: every step from all releases, with --forward and, when
    /// given, --backward (the default of `--postprocess` and `tpl postprocess`).
    Smooth,
    /// The classical baseline: Kalman filter and RTS smoother, move weight and process noise
    /// fitted to the releases by maximum likelihood (n³ per step).
    Kalman,
}

impl Postprocess {
    /// The estimator of `tpl-postprocess` it runs, and whether it is the default.
    fn estimator(self) -> (Estimator, bool) {
        let named = |e| (e, false);
        match self {
            Self::Default => (Estimator::OFFLINE_DEFAULT, true),
            Self::Map => named(Estimator::CausalFilter),
            Self::MapDbsec => named(Estimator::MapDbsec),
            Self::Smooth => named(Estimator::Smooth),
            Self::Kalman => named(Estimator::Kalman),
        }
    }
}

/// Arguments of `tpl compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// True counts: one row per step (header `timestamp_bucket,c0,…` or headerless), integers.
    #[arg(long, value_name = "FILE", required_unless_present = "stream", conflicts_with = "stream")]
    pub counts: Option<PathBuf>,
    /// Instead of --counts, a user stream (`timestamp_bucket,user_id,location_cell`): the true
    /// counts are its histogram (column i: the i-th distinct cell id, as in `tpl estimate`).
    #[arg(long, value_name = "FILE")]
    pub stream: Option<PathBuf>,
    /// Estimate the matrices from steps A..B of --stream (A.. and ..B: to the end), smoothed
    /// with --smoothing if given, instead of reading --backward/--forward; the strategies are
    /// scored on the other steps (or --score-steps). Steps are the stream's buckets in order,
    /// from 1.
    #[arg(
        long,
        value_name = "A..B",
        conflicts_with_all = ["backward", "forward", "normalize"]
    )]
    pub train_steps: Option<StepRange>,
    /// Score the strategies on steps C..D only (default: every step, or with --train-steps
    /// the steps outside it).
    #[arg(long, value_name = "C..D")]
    pub score_steps: Option<StepRange>,
    /// Let --score-steps share steps with --train-steps: an in-sample score, which the output
    /// says (`"in_sample": true`).
    #[arg(long, requires = "train_steps", requires = "score_steps")]
    pub allow_overlap: bool,
    #[command(flatten)]
    pub wevent: WEventArgs,
    #[command(flatten)]
    pub correlation: CorrelationArgs,
    /// Strategies, comma-separated (default: all but dsat and fast): laplace, uniform, sample, bd,
    /// ba, pba (Hemkumar et al. 2021), upper-bound, quantified, window, dsat (Li et al. 2015),
    /// fast (Fan and Xiong 2014).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = Strategy::parse)]
    pub schemes: Option<Vec<Strategy>>,
    /// A named set of strategies instead of --schemes: `standard`, the field's standard
    /// comparison (laplace, uniform, sample, bd, ba, pba, dsat, fast; the benchmark's PeGaSus,
    /// RescueDP and AdaPub are not implemented yet), or `default` (as without --schemes).
    #[arg(long, value_name = "NAME", value_parser = Suite::parse, conflicts_with = "schemes")]
    pub suite: Option<Suite>,
    /// Leakage target α of the allocators (default: ε, so that `window` promises under
    /// correlation what the w-event schemes promise without it).
    #[arg(long, value_name = "A", allow_negative_numbers = true, value_parser = tpl_io::text::finite_f64)]
    pub alpha: Option<f64>,
    /// Releases per strategy (errors are averaged, leakage is the worst run).
    #[arg(long, value_name = "R", default_value_t = 10)]
    pub runs: usize,
    /// Also score every strategy after post-processing (adds `<strategy>+<name>` rows, e.g.
    /// `bd+smooth`, the classical baseline's `<strategy>+kalman` rows and the data-free
    /// `prior-mean` row); --forward is the public prior. Without a NAME: smooth, the offline
    /// default (the whole release is at hand).
    #[arg(long, value_enum, value_name = "NAME", num_args = 0..=1, require_equals = false, default_missing_value = "default")]
    pub postprocess: Option<Postprocess>,
    /// Leave out the `+kalman` baseline rows that --postprocess adds.
    #[arg(long, requires = "postprocess")]
    pub no_baseline: bool,
    #[command(flatten)]
    pub seed: SeedArgs,
    /// Write an SVG chart of error against audited leakage.
    #[arg(long, value_name = "FILE.svg")]
    pub chart: Option<PathBuf>,
    /// Write the comparison as one self-contained HTML page (its parameters, table and
    /// chart inline; nothing loaded from the network). The name must end in `.html` or
    /// `.htm`, in a folder that exists; checked before anything runs.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,
}

/// The strategies of a suite named on the command line ([`Strategy::suite`]); one value,
/// where a bare `Vec` would be taken for a list of values.
#[derive(Debug, Clone)]
pub struct Suite(Vec<Strategy>);

impl Suite {
    fn parse(name: &str) -> tpl_compare::Result<Self> {
        Strategy::suite(name).map(Self)
    }
}

/// Runs `tpl compare`.
pub fn run(args: &CompareArgs) -> Result<ComparisonReport> {
    if let Some(path) = &args.report {
        check_report_path(path)?;
    }
    let inputs = read_inputs(args)?;
    let suite = args.suite.as_ref().map(|s| s.0.clone());
    let strategies = args.schemes.clone().or(suite).unwrap_or_else(|| Strategy::ALL.to_vec());
    let report = run_comparison(
        &inputs.truth,
        &inputs.correlation,
        inputs.source,
        &Options {
            epsilon: args.wevent.epsilon,
            window: args.wevent.window,
            alpha: args.alpha,
            sensitivity: args.wevent.sensitivity,
            runs: args.runs,
            postprocess: args.postprocess.map(Postprocess::estimator),
            baseline: !args.no_baseline,
            seed: args.seed.seed,
        },
        &strategies,
    )?;
    let name = inputs
        .path
        .file_name()
        .map_or(inputs.path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let name = if inputs.source.score == Steps::all(inputs.steps)? {
        name
    } else {
        format!("{name}, steps {}", inputs.source.score)
    };
    // Drawn once, for the chart file and the report alike.
    let chart =
        (args.chart.is_some() || args.report.is_some()).then(|| report.chart_svg(&name)).transpose()?;
    if let (Some(path), Some(svg)) = (&args.chart, &chart) {
        write_file(path, svg)?;
    }
    if let (Some(path), Some(svg)) = (&args.report, &chart) {
        write_file(path, &html_report(&report, args, &inputs, &name, svg)?)?;
    }
    for note in &inputs.notes {
        eprintln!("tpl: note: {note}");
    }
    note_seeded(args.seed.seed, "these releases");
    Ok(report)
}

/// Refuses a `--report` path whose name does not end in `.html` or `.htm` (any case; a
/// mistyped `--report counts.csv` must not overwrite data) or whose folder does not exist
/// (said before the comparison runs, not after).
fn check_report_path(path: &Path) -> Result<()> {
    let html = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
    if !html {
        return Err(CliError::Usage(format!(
            "--report {}: the report is an HTML page: give a file name ending in .html",
            path.display()
        )));
    }
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !folder.is_dir() {
        return Err(CliError::Usage(format!(
            "--report {}: the folder {} does not exist (only `--out DIR` folders are created)",
            path.display(),
            folder.display()
        )));
    }
    Ok(())
}

/// The page of `--report`: how the comparison was made (the command, the version, the
/// input files), then the report's page ([`ComparisonReport::page`]) with the notes on the
/// inputs and `chart`.
fn html_report(
    report: &ComparisonReport,
    args: &CompareArgs,
    inputs: &Inputs,
    name: &str,
    chart: &str,
) -> Result<String> {
    let kind = if args.stream.is_some() { "user stream" } else { "counts" };
    let mut made_by =
        vec![("command", command_line()), ("tpl", version_line()), (kind, inputs.path.display().to_string())];
    for (side, file) in
        [("backward matrix", &args.correlation.backward), ("forward matrix", &args.correlation.forward)]
    {
        if let Some(file) = file {
            made_by.push((side, file.display().to_string()));
        }
    }
    Ok(report.page(name, &made_by, &inputs.notes, chart)?)
}

/// What a comparison scores and the matrices it uses.
struct Inputs {
    /// The true counts of the scored steps.
    truth: Vec<Vec<f64>>,
    /// The adversary's correlation (and the post-processing's public prior).
    correlation: Correlation,
    /// Where the matrices came from, and the steps scored.
    source: MatrixSource,
    /// The counts or stream file.
    path: PathBuf,
    /// Its number of steps.
    steps: usize,
    /// Notes for standard error, said once the comparison is made (an error stays one line).
    notes: Vec<String>,
}

/// Reads the counts (or the stream and its histogram) and the matrices (files, or estimated
/// from the training steps of the stream), and selects the scored steps.
fn read_inputs(args: &CompareArgs) -> Result<Inputs> {
    let flag = |name: &'static str| move |e| CliError::flag(name, e);
    let Some(path) = &args.stream else {
        let path =
            args.counts.clone().ok_or_else(|| CliError::Usage("--counts or --stream is required".into()))?;
        if let Some(train) = args.train_steps {
            return Err(CliError::Usage(format!(
                "--train-steps {train}: the matrices are estimated from a user stream: give --stream instead of --counts"
            )));
        }
        let counts = read_counts(&path, false)?;
        // The mechanism every run releases with, here only to check the counts (no draw).
        let validator = LaplaceMechanism::new(DiscreteLaplace::seeded(0));
        check_counts(&validator, &path, &counts, "")?;
        let steps = counts.rows.len();
        let score =
            args.score_steps.unwrap_or(StepRange::ALL).resolve(steps).map_err(flag("--score-steps"))?;
        let cells = counts.rows[0].len();
        let correlation = args.correlation.read_for(cells, &path)?;
        let source = MatrixSource::given(!correlation.is_none(), score);
        let truth = counts.rows[score.indices()].to_vec();
        return Ok(Inputs { truth, correlation, source, path, steps, notes: Vec::new() });
    };
    let stream = read_user_stream(path)?;
    let cells = stream.cells();
    let steps = stream.states.len();
    let score = args.score_steps.map(|r| r.resolve(steps).map_err(flag("--score-steps"))).transpose()?;
    let Some(train) = args.train_steps else {
        let score = score.unwrap_or(Steps::all(steps)?);
        let correlation = args.correlation.read_for(cells, path)?;
        let source = MatrixSource::given(!correlation.is_none(), score);
        let truth = histogram(&stream.states[score.indices()], cells)?;
        return Ok(Inputs { truth, correlation, source, path: path.clone(), steps, notes: Vec::new() });
    };
    let train = train.resolve(steps).map_err(flag("--train-steps"))?;
    let holdout = Holdout::new(steps, train, score, args.allow_overlap).map_err(|e| match (e, score) {
        (e @ CompareError::InSample { .. }, Some(score)) => CliError::Usage(format!(
            "--train-steps {train} --score-steps {score}: {e} (--allow-overlap; the output then says in_sample)"
        )),
        (e, _) => {
            CliError::Usage(format!("--train-steps {train}: {e}; name the steps to score with --score-steps"))
        }
    })?;
    let smoothing = args.correlation.matrices.smoothing;
    if let Some(s) = smoothing {
        TransitionMatrix::check_smoothing(s).map_err(flag("--smoothing"))?;
    }
    let held = holdout
        .split(&stream.states, cells, smoothing)
        .map_err(|source| CliError::Compare { context: format!("{}: ", path.display()), source })?;
    let mut notes = Vec::new();
    for (side, m) in [("forward", &held.forward), ("backward", &held.backward)] {
        if !m.empty_rows.is_empty() {
            let ids: Vec<String> = m.empty_rows.iter().map(|&i| stream.cell_ids[i].to_string()).collect();
            notes.push(format!(
                "{side} rows without data in steps {train} became identity rows: cell ids {}",
                ids.join(", ")
            ));
        }
    }
    Ok(Inputs {
        truth: held.truth,
        correlation: Correlation::new(Some(held.backward.matrix), Some(held.forward.matrix))
            .map_err(|source| CliError::Core { context: format!("{}: ", path.display()), source })?,
        source: MatrixSource::estimated(holdout),
        path: path.clone(),
        steps,
        notes,
    })
}
