//! The grid itself: every cell (stream × matrices × scheme × ε) planned once, its seeds
//! released and scored in parallel (rayon over cells × seeds), then every estimator's rows
//! gathered over the seeds.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use rand::RngCore;
use rayon::prelude::*;
use tpl_compare::{Releaser, RunRelease, Seed, Setup, bootstrap_estimates, mse};
use tpl_mechanisms::{DEFAULT_SENSITIVITY, SamplerKind};
use tpl_postprocess::{Bootstrap, Estimator, FilterConfig, filter, kalman_causal, kalman_smooth};

use crate::args::{Config, Scheme};
use crate::oracle::{average_errors, best_window};
use crate::streams::{Matrices, Stream};

/// The nominal coverage of the intervals measured.
pub const LEVEL: f64 = 0.9;

/// The name of the baseline estimator of the `ratio_kalman` column.
pub const KALMAN: &str = "kalman";

/// One cell of the grid before its estimators: a stream, the matrices given, a scheme and ε.
#[derive(Debug, Clone, Copy)]
pub struct Cell<'a> {
    /// The stream released.
    pub stream: &'a Stream,
    /// The matrices of the estimators, PBA and the window allocator.
    pub matrices: &'a Matrices,
    /// The scheme.
    pub scheme: &'a Scheme,
    /// The budget ε per window.
    pub epsilon: f64,
}

impl Cell<'_> {
    /// A label naming the cell in messages and seeds.
    pub fn label(&self) -> String {
        format!(
            "{}/{}/N={}/{}/{}/eps={}",
            self.stream.stream,
            self.stream.shape,
            self.stream.population,
            self.matrices.name,
            self.scheme.label,
            self.epsilon
        )
    }
}

/// One row of the results (one estimator in one cell): the CSV's columns, named and ordered
/// as the fields are (an absent value is an empty field).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    /// `markov` or the real stream's name.
    pub stream: &'static str,
    /// N.
    pub population: u64,
    /// `uniform-ish`, `out-dominant` or `real`.
    pub shape: &'static str,
    /// The matrix variant.
    pub matrices: String,
    /// The scheme.
    pub scheme: &'static str,
    /// ε per window.
    pub epsilon: f64,
    /// The estimator's name.
    pub estimator: &'static str,
    /// Seeds the row averages over.
    pub seeds: usize,
    /// The estimator's MSE per cell-step, mean over seeds (NaN when it failed).
    pub mse: f64,
    /// The raw release's MSE per cell-step, mean over seeds.
    pub raw_mse: f64,
    /// `mse / raw_mse`.
    pub ratio_raw: f64,
    /// The best centred moving average's MSE (window chosen against the truth).
    pub best_ma_mse: f64,
    /// That window.
    pub best_ma_window: usize,
    /// `mse / best_ma_mse`.
    pub ratio_ma: f64,
    /// The `kalman` estimator's MSE in the same cell, when that estimator exists.
    pub kalman_mse: Option<f64>,
    /// `mse / kalman_mse`.
    pub ratio_kalman: Option<f64>,
    /// The MSE of the Kalman *filter* in the same cell (the causal baseline: the filtered
    /// means of `kalman`, parameters fitted on the whole sequence).
    pub kalman_filter_mse: Option<f64>,
    /// `mse / kalman_filter_mse`.
    pub ratio_kalman_filter: Option<f64>,
    /// The MSE of the strictly causal Kalman filter in the same cell
    /// (`tpl_postprocess::kalman_causal`: step t from the releases up to t, parameters
    /// refitted on them), on streams of at most 64 cells.
    pub kalman_causal_mse: Option<f64>,
    /// `mse / kalman_causal_mse`.
    pub ratio_kalman_causal: Option<f64>,
    /// The `mle` estimator's MSE in the same cell (the release projected, no matrix).
    pub mle_mse: f64,
    /// `mse / mle_mse`.
    pub ratio_mle: f64,
    /// Share of all cell-steps inside their 90 % interval (with intervals).
    pub coverage_all: Option<f64>,
    /// Share of the cell-steps with a true count > 0 inside their interval.
    pub coverage_nonempty: Option<f64>,
    /// Share of the steps of the dominant cell (the most people over the scored steps)
    /// inside their interval.
    pub coverage_dominant: Option<f64>,
    /// The mean width (upper − lower) of the bootstrap intervals, in people.
    pub width: Option<f64>,
    /// The share of all cell-steps inside the 90 % model interval of the estimate's standard
    /// error (`tpl_postprocess::Estimates::intervals`; for a filter, the interval a stream stores
    /// with each estimate).
    pub model_coverage_all: Option<f64>,
    /// The same over the cell-steps whose true count is > 0.
    pub model_coverage_nonempty: Option<f64>,
    /// The same over the steps of the dominant cell.
    pub model_coverage_dominant: Option<f64>,
    /// The mean width (upper − lower) of those intervals, in people.
    pub model_width: Option<f64>,
}

/// What the grid produced.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Per cell, one row per estimator asked for (in the order asked), worst cell first.
    pub cells: Vec<Vec<Row>>,
    /// Cells (or seeds, or estimators) that could not run, with why.
    pub failures: Vec<String>,
}

/// Covered and total counts of cell-steps.
#[derive(Debug, Clone, Copy, Default)]
struct Coverage {
    covered: u64,
    total: u64,
    covered_nonempty: u64,
    nonempty: u64,
    covered_dominant: u64,
    dominant: u64,
    /// Σ (upper − lower).
    width: f64,
}

impl Coverage {
    fn add(&mut self, other: Coverage) {
        self.covered += other.covered;
        self.total += other.total;
        self.covered_nonempty += other.covered_nonempty;
        self.nonempty += other.nonempty;
        self.covered_dominant += other.covered_dominant;
        self.dominant += other.dominant;
        self.width += other.width;
    }

    /// The mean width of the intervals counted.
    fn mean_width(self) -> Option<f64> {
        (self.total > 0).then(|| self.width / self.total as f64)
    }
}

/// One estimator's score on one run.
#[derive(Debug, Clone)]
struct EstimatorScore {
    mse: f64,
    /// For `kalman`: the MSE of its filtered means.
    filtered_mse: Option<f64>,
    coverage: Option<Coverage>,
    model_coverage: Option<Coverage>,
    error: Option<String>,
}

/// One run's scores.
#[derive(Debug, Clone)]
struct RunScores {
    raw: f64,
    /// `mle`'s MSE and the strictly causal Kalman filter's (at most 64 cells).
    mle: f64,
    kalman_causal: Option<f64>,
    averages: Vec<f64>,
    estimators: Vec<EstimatorScore>,
}

/// The estimators run in every cell: those asked for, then `kalman` when it exists and was
/// not asked for (it is the baseline of a column); and the index of `kalman` among them.
pub fn estimators_run(asked: &[Estimator]) -> (Vec<Estimator>, Option<usize>) {
    let mut run = asked.to_vec();
    let kalman = Estimator::ALL.into_iter().find(|e| e.name() == KALMAN);
    if let Some(k) = kalman.filter(|k| !run.contains(k)) {
        run.push(k);
    }
    let index = kalman.and_then(|k| run.iter().position(|e| *e == k));
    (run, index)
}

/// Every cell of `streams` under `config`, in a fixed order.
pub fn cells<'a>(config: &'a Config, streams: &'a [Stream]) -> Vec<Cell<'a>> {
    let mut out = Vec::new();
    for stream in streams {
        let asked = |m: &&Matrices| config.matrices.as_ref().is_none_or(|names| names.contains(&m.name));
        for matrices in stream.matrices.iter().filter(asked) {
            for scheme in &config.schemes {
                for &epsilon in &config.epsilons {
                    out.push(Cell { stream, matrices, scheme, epsilon });
                }
            }
        }
    }
    out
}

/// Runs the grid over `cells` and gathers the rows, worst cell first (by the `ratio_raw` of
/// `map`, or of the first estimator when `map` is not asked for; a cell where it failed
/// first of all). Progress goes to standard error.
pub fn run(config: &Config, cells: &[Cell<'_>]) -> Outcome {
    let (estimators, kalman) = estimators_run(&config.estimators);
    let releasers: Vec<Result<Releaser<'_>, String>> = cells
        .par_iter()
        .map(|c| {
            let setup = Setup::new(&c.stream.truth, c.epsilon, config.window)
                .correlation(&c.matrices.correlation)
                .sensitivity(DEFAULT_SENSITIVITY)
                .seed(Seed::given(config.seed));
            Releaser::new(&setup, c.scheme.strategy.clone()).map_err(|e| e.to_string())
        })
        .collect();
    // (cell, seed) for every cell whose releaser could be built.
    let live = (0..releasers.len()).filter(|&i| releasers[i].is_ok());
    let tasks: Vec<(usize, usize)> = live.flat_map(|i| (0..config.seeds).map(move |s| (i, s))).collect();
    let done = AtomicUsize::new(0);
    let start = Instant::now();
    let tick = (tasks.len() / 20).max(1);
    let results: Vec<((usize, usize), Result<RunScores, String>)> = tasks
        .par_iter()
        .map(|&(i, s)| {
            let out = match &releasers[i] {
                Ok(releaser) => score_run(config, &cells[i], releaser, s, &estimators),
                Err(e) => Err(e.clone()),
            };
            let k = done.fetch_add(1, Ordering::Relaxed) + 1;
            if k.is_multiple_of(tick) || k == tasks.len() {
                eprintln!("accuracy-grid: {k}/{} runs, {:.1} s", tasks.len(), start.elapsed().as_secs_f64());
            }
            ((i, s), out)
        })
        .collect();

    let mut outcome = Outcome::default();
    let asked = config.estimators.len();
    let mut by_cell: Vec<Vec<RunScores>> = vec![Vec::new(); cells.len()];
    for ((i, s), r) in results {
        match r {
            Ok(scores) => by_cell[i].push(scores),
            Err(e) => outcome.failures.push(format!("{} seed {s}: {e}", cells[i].label())),
        }
    }
    for (i, cell) in cells.iter().enumerate() {
        if let Err(e) = &releasers[i] {
            outcome.failures.push(format!("{}: {e}", cell.label()));
            continue;
        }
        let runs = &by_cell[i];
        if runs.is_empty() {
            continue;
        }
        for (k, e) in estimators.iter().enumerate().take(asked) {
            if let Some(why) = runs.iter().find_map(|r| r.estimators[k].error.clone()) {
                outcome.failures.push(format!("{} {}: {why}", cell.label(), e.name()));
            }
        }
        outcome.cells.push(gather(cell, runs, &estimators[..asked], kalman));
    }
    let key = |rows: &Vec<Row>| {
        let row = rows.iter().find(|r| r.estimator == Estimator::CausalFilter.name()).or(rows.first());
        row.map_or(f64::INFINITY, |r| if r.ratio_raw.is_nan() { f64::INFINITY } else { r.ratio_raw })
    };
    outcome.cells.sort_by(|a, b| key(b).total_cmp(&key(a)));
    outcome
}

/// Releases run `seed` of a cell and scores the raw release, the moving averages and every
/// estimator.
fn score_run(
    config: &Config,
    cell: &Cell<'_>,
    releaser: &Releaser<'_>,
    seed: usize,
    estimators: &[Estimator],
) -> Result<RunScores, String> {
    let run = releaser.run(seed).map_err(|e| e.to_string())?;
    let truth = &cell.stream.truth;
    let raw = mse(&run.releases, truth).map_err(|e| e.to_string())?;
    let averages = average_errors(&run.releases, truth);
    let config_of = |estimator| FilterConfig {
        sensitivity: DEFAULT_SENSITIVITY,
        correlation: &cell.matrices.correlation,
        estimator,
        ..FilterConfig::new(cell.stream.population)
    };
    let mle_estimates =
        filter(&run.releases, &run.fresh, config_of(Estimator::Mle)).map_err(|e| e.to_string())?;
    let mle = mse(&mle_estimates.estimates, truth).map_err(|e| e.to_string())?;
    let cells = truth.first().map_or(0, Vec::len);
    let kalman_causal = (cells <= tpl_postprocess::STATE_SPACE_CELLS)
        .then(|| {
            let k = kalman_causal(&run.releases, &run.fresh, config_of(Estimator::Kalman))
                .map_err(|e| e.to_string())?;
            mse(&k, truth).map_err(|e| e.to_string())
        })
        .transpose()?;
    let estimators = estimators
        .iter()
        .map(|&estimator| {
            let intervals = config.replicates.filter(|_| config.estimators.contains(&estimator));
            score_estimator(config, cell, &run, seed, estimator, intervals)
        })
        .collect();
    Ok(RunScores { raw, mle, kalman_causal, averages, estimators })
}

/// One estimator on one run: its MSE and, with `replicates`, the coverage of its bootstrap
/// intervals.
fn score_estimator(
    config: &Config,
    cell: &Cell<'_>,
    run: &RunRelease,
    seed: usize,
    estimator: Estimator,
    replicates: Option<usize>,
) -> EstimatorScore {
    let failed = |e: String| EstimatorScore {
        mse: f64::NAN,
        filtered_mse: None,
        coverage: None,
        model_coverage: None,
        error: Some(e),
    };
    let truth = &cell.stream.truth;
    let filter_config = FilterConfig {
        sensitivity: DEFAULT_SENSITIVITY,
        correlation: &cell.matrices.correlation,
        estimator,
        ..FilterConfig::new(cell.stream.population)
    };
    // `kalman` gives its filtered means beside the smoothed ones: the causal baseline. The
    // others give the standard errors behind their model intervals (a filter's are those a
    // stream stores beside each estimate).
    let mut model_coverage = None;
    let outcome = if estimator == Estimator::Kalman {
        kalman_smooth(&run.releases, &run.fresh, filter_config.clone())
            .map(|k| (k.estimates, Some(k.filtered)))
    } else {
        filter(&run.releases, &run.fresh, filter_config.clone()).and_then(|e| {
            let (lower, upper) = e.intervals(LEVEL)?;
            model_coverage = Some(Intervals { lower, upper }.of(truth, cell.stream.dominant()));
            Ok((e.estimates, None))
        })
    };
    let (estimates, filtered) = match outcome {
        Ok(e) => e,
        Err(e) => return failed(e.to_string()),
    };
    let error = match mse(&estimates, truth) {
        Ok(v) => v,
        Err(e) => return failed(e.to_string()),
    };
    let filtered_mse = match filtered.map(|f| mse(&f, truth)).transpose() {
        Ok(v) => v,
        Err(e) => return failed(e.to_string()),
    };
    let Some(replicates) = replicates else {
        return EstimatorScore { mse: error, filtered_mse, coverage: None, model_coverage, error: None };
    };
    let stream = format!("bootstrap:{}:{}", cell.label(), estimator.name());
    let noise_seed = Seed::given(config.seed).rng(&stream, seed as u64).next_u64();
    let settings = Bootstrap { level: LEVEL, replicates };
    match bootstrap_estimates(
        &run.releases,
        &estimates,
        &run.fresh,
        filter_config,
        settings,
        SamplerKind::Discrete,
        Some(noise_seed),
    ) {
        Ok(iv) => {
            let c = Intervals { lower: iv.lower, upper: iv.upper }.of(truth, cell.stream.dominant());
            EstimatorScore { mse: error, filtered_mse, coverage: Some(c), model_coverage, error: None }
        }
        Err(e) => EstimatorScore {
            mse: error,
            filtered_mse,
            coverage: None,
            model_coverage,
            error: Some(format!("intervals: {e}")),
        },
    }
}

/// Per-cell intervals of a run, step by cell.
struct Intervals {
    lower: Vec<Vec<f64>>,
    upper: Vec<Vec<f64>>,
}

impl Intervals {
    /// How many of the true counts `truth` the intervals hold: all, those > 0, and those of
    /// cell `dominant`.
    fn of(&self, truth: &[Vec<f64>], dominant: usize) -> Coverage {
        let mut c = Coverage::default();
        for ((lo, hi), row) in self.lower.iter().zip(&self.upper).zip(truth) {
            for (j, ((l, h), &x)) in lo.iter().zip(hi).zip(row).enumerate() {
                let inside = u64::from(*l <= x && x <= *h);
                c.width += h - l;
                c.covered += inside;
                c.total += 1;
                if x > 0.0 {
                    c.covered_nonempty += inside;
                    c.nonempty += 1;
                }
                if j == dominant {
                    c.covered_dominant += inside;
                    c.dominant += 1;
                }
            }
        }
        c
    }
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    sum / n as f64
}

/// The rows of one cell from its runs: means over the seeds, coverage pooled.
fn gather(cell: &Cell<'_>, runs: &[RunScores], asked: &[Estimator], kalman: Option<usize>) -> Vec<Row> {
    let raw_mse = mean(runs.iter().map(|r| r.raw));
    let averages: Vec<Vec<f64>> = runs.iter().map(|r| r.averages.clone()).collect();
    let (best_ma_window, best_ma_mse) = best_window(&averages).unwrap_or((0, f64::NAN));
    let estimator_mse = |k: usize| mean(runs.iter().map(|r| r.estimators[k].mse));
    let kalman_mse = kalman.map(estimator_mse);
    let kalman_filter_mse = kalman
        .and_then(|k| runs.iter().map(|r| r.estimators[k].filtered_mse).sum::<Option<f64>>())
        .map(|s| s / runs.len() as f64);
    let kalman_causal_mse =
        runs.iter().map(|r| r.kalman_causal).sum::<Option<f64>>().map(|s| s / runs.len() as f64);
    let mle_mse = mean(runs.iter().map(|r| r.mle));
    asked
        .iter()
        .enumerate()
        .map(|(k, e)| {
            let error = estimator_mse(k);
            let pooled = |get: &dyn Fn(&EstimatorScore) -> Option<Coverage>| {
                runs.iter().try_fold(Coverage::default(), |mut acc, r| {
                    acc.add(get(&r.estimators[k])?);
                    Some(acc)
                })
            };
            let coverage = pooled(&|e| e.coverage);
            let model = pooled(&|e| e.model_coverage);
            let share = |covered: u64, total: u64| (total > 0).then(|| covered as f64 / total as f64);
            Row {
                stream: cell.stream.stream,
                population: cell.stream.population,
                shape: cell.stream.shape,
                matrices: cell.matrices.name.clone(),
                scheme: cell.scheme.label,
                epsilon: cell.epsilon,
                estimator: e.name(),
                seeds: runs.len(),
                mse: error,
                raw_mse,
                ratio_raw: error / raw_mse,
                best_ma_mse,
                best_ma_window,
                ratio_ma: error / best_ma_mse,
                kalman_mse,
                ratio_kalman: kalman_mse.map(|m| error / m),
                kalman_filter_mse,
                ratio_kalman_filter: kalman_filter_mse.map(|m| error / m),
                kalman_causal_mse,
                ratio_kalman_causal: kalman_causal_mse.map(|m| error / m),
                mle_mse,
                ratio_mle: error / mle_mse,
                coverage_all: coverage.and_then(|c| share(c.covered, c.total)),
                coverage_nonempty: coverage.and_then(|c| share(c.covered_nonempty, c.nonempty)),
                coverage_dominant: coverage.and_then(|c| share(c.covered_dominant, c.dominant)),
                model_coverage_all: model.and_then(|c| share(c.covered, c.total)),
                model_coverage_nonempty: model.and_then(|c| share(c.covered_nonempty, c.nonempty)),
                model_coverage_dominant: model.and_then(|c| share(c.covered_dominant, c.dominant)),
                width: coverage.and_then(Coverage::mean_width),
                model_width: model.and_then(Coverage::mean_width),
            }
        })
        .collect()
}
