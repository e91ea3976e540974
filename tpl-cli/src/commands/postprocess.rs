//! `tpl postprocess`: MAP (or MLE) estimates of the true counts behind a noisy release
//! stream, using the public forward correlation as prior knowledge
//! ([`docs/map.md`](tpl_core::guide::map)). Post-processing costs no privacy budget.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;
use tpl_compare::{bootstrap_estimates, check_bootstrap_size};
use tpl_core::{Correlation, TransitionMatrix};
use tpl_io::{Counts, read_budgets, read_counts, text};
use tpl_mechanisms::{Intervals, SamplerKind};
use tpl_postprocess::{Bootstrap, Estimates, Estimator, FilterConfig, PostprocessError, PriorPolicy, filter};
use tpl_report::chart::{CellSeries, estimate_chart};
use tpl_report::output::EstimatesOutput;

use crate::args::IntervalArgs;
use crate::error::{CliError, Result};
use crate::matrix_file::{MatrixOptions, fitted, read_matrix};
use crate::provenance::VERSION;
use crate::release_report::Sampler;
use crate::render::{Report, Table, csv_rows_text, csv_text, human, json_of};

/// Arguments of `tpl postprocess`.
#[derive(Debug, Args)]
pub struct PostprocessArgs {
    /// Noisy releases: one row per step (a counts file, e.g. the CSV of `tpl release`).
    #[arg(long, value_name = "FILE")]
    pub releases: PathBuf,
    /// The exact population N ≥ 0 (public): every estimate sums to N.
    #[arg(long, value_name = "N", value_parser = parse_total, allow_negative_numbers = true)]
    pub total: u64,
    /// The per-step budget ε_t > 0 that set every release's noise (pass ε/T for a total ε
    /// split evenly).
    #[arg(long, value_name = "E", conflicts_with = "budgets", allow_negative_numbers = true, value_parser = tpl_io::text::finite_f64)]
    pub epsilon: Option<f64>,
    /// Budget file with ε_1..ε_T (0 = no new information at that step). Default: the
    /// `publication_budget` column of the releases file.
    #[arg(long, value_name = "FILE")]
    pub budgets: Option<PathBuf>,
    /// L1 sensitivity Δ > 0 of one step's counts; the likelihood weight is ε_t/Δ.
    #[arg(long, value_name = "D", default_value_t = 2.0, allow_negative_numbers = true, value_parser = tpl_io::text::finite_f64)]
    pub sensitivity: f64,
    /// Public forward matrix P (row i: next cell of a user now in i); needed by every
    /// estimator but mle when there is more than one step.
    #[arg(long, value_name = "FILE")]
    pub forward: Option<PathBuf>,
    /// Public backward matrix (row j: previous cell of a user now in j), used by smooth to
    /// carry estimates back in time (default: the forward matrix reversed).
    #[arg(long, value_name = "FILE")]
    pub backward: Option<PathBuf>,
    /// Initial prior: frequency (the first release, normalised), uniform, or a file with one
    /// row of n probabilities.
    #[arg(long, value_name = "frequency|uniform|FILE", default_value = "frequency")]
    pub prior: String,
    /// Estimator: smooth (the default: every step from all releases, past and future), map
    /// (the causal filter: each step from the releases up to it, prior strength learned from
    /// them; the default with --causal), map-dbsec (continuous MAP, the DBSec paper's prior at
    /// full strength), map-integer (exact integer MAP, DBSec prior), mle (least squares under
    /// the sum constraint; uses no prior) or kalman (the classical Kalman filter and RTS
    /// smoother, move weight and process noise fitted by maximum likelihood; n³ per step).
    #[arg(long, value_parser = parse_estimator)]
    pub estimator: Option<Estimator>,
    /// Estimate each step from the releases up to it only, as a live stream must (the causal
    /// filter map unless --estimator names another causal one: map-dbsec, map-integer, mle).
    #[arg(long)]
    pub causal: bool,
    #[command(flatten)]
    pub matrices: MatrixOptions,
    #[command(flatten)]
    pub interval: IntervalArgs,
    /// With --interval: how the intervals are made. model (the default): from each estimate's
    /// standard error under the local-level model, at a small part of the estimate's cost;
    /// bootstrap: a parametric bootstrap, B reruns of the estimator (docs/intervals.md).
    #[arg(long, value_enum, value_name = "METHOD", requires = "interval")]
    pub interval_method: Option<IntervalMethod>,
    /// With --interval-method bootstrap: B, the replicate releases of the bootstrap (≥ 2,
    /// default 100; more gives steadier interval ends, at B times the estimator's cost).
    #[arg(long, value_name = "B", value_parser = parse_replicates, requires = "interval")]
    pub replicates: Option<usize>,
    /// With --interval-method bootstrap: the sampler the releases were drawn with, which the
    /// bootstrap's replicates use too (default discrete).
    #[arg(long, value_enum, requires = "interval")]
    pub sampler: Option<Sampler>,
    /// With --interval-method bootstrap: seed of the bootstrap's replicate noise, for reproducible intervals
    /// (default: OS entropy). It touches no release: the releases' privacy is unaffected.
    #[arg(long, value_name = "S", requires = "interval")]
    pub seed: Option<u64>,
    /// Draw an SVG chart of a few cells over time: the raw release, the estimate, its
    /// interval band (with --interval) and the truth (with --truth).
    #[arg(long, value_name = "FILE.svg")]
    pub chart: Option<PathBuf>,
    /// With --chart: the true counts (a counts file of the same steps and cells), drawn as
    /// the reference line.
    #[arg(long, value_name = "FILE", requires = "chart")]
    pub truth: Option<PathBuf>,
}

/// The bootstrap's replicates B when `--replicates` is not given.
const DEFAULT_REPLICATES: usize = 100;

fn parse_replicates(s: &str) -> std::result::Result<usize, String> {
    match s.parse::<usize>() {
        Ok(b) if b >= 2 => Ok(b),
        _ => Err(format!("{s:?} is not a whole number ≥ 2 (the bootstrap's replicates)")),
    }
}

fn parse_total(s: &str) -> std::result::Result<u64, String> {
    let digits = s.strip_prefix('+').unwrap_or(s);
    match s.parse::<u64>() {
        Ok(n) => Ok(n),
        // Whole and ≥ 0, but beyond any u64: beyond 2^53 too, said as for a smaller one.
        Err(_) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            Err(PostprocessError::TotalTooLarge(u64::MAX).to_string().replace(&u64::MAX.to_string(), s))
        }
        Err(_) => Err(format!("{s:?} is not a whole number ≥ 0 (the population N)")),
    }
}

fn parse_estimator(s: &str) -> std::result::Result<Estimator, String> {
    s.parse::<Estimator>().map_err(|e| e.to_string())
}

/// The estimator `tpl postprocess` runs and whether it is a default: the one given, else the
/// causal filter with `--causal`, else the offline default `smooth` (docs/map.md §8).
fn chosen_estimator(args: &PostprocessArgs) -> Result<(Estimator, bool)> {
    match (args.estimator, args.causal) {
        (Some(e), true) if !e.is_filter() => Err(CliError::Usage(format!(
            "--causal --estimator {e}: {e} estimates each step from later releases too; a causal one is \
             map, map-dbsec, map-integer or mle"
        ))),
        (Some(e), _) => Ok((e, false)),
        (None, true) => Ok((Estimator::ONLINE_DEFAULT, true)),
        (None, false) => Ok((Estimator::OFFLINE_DEFAULT, true)),
    }
}

/// The estimates of a stream, and how they were made.
pub struct PostprocessReport {
    /// The command, for the CSV's provenance line (`postprocess`, `stream export`).
    command: &'static str,
    estimates: Estimates,
    total: u64,
    sensitivity: f64,
    prior: String,
    /// Whether the estimator was the default rather than named (`None`: estimates a stream
    /// made, whose estimator its set-up names).
    by_default: Option<bool>,
    /// Per-cell intervals, with `--interval`, and how they were made.
    intervals: Option<Intervals>,
    interval_method: IntervalMethod,
}

/// How the intervals of a [`PostprocessReport`] were made ([`docs/intervals.md`](tpl_core::guide::intervals)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum IntervalMethod {
    /// From each estimate's standard error under the local-level model (§3): the one a stream
    /// stored with it, or for an estimate made now the one its estimator gives.
    Model,
    /// The parametric bootstrap of §2, made now.
    Bootstrap,
}

impl IntervalMethod {
    /// The JSON value of `interval_method` and the CSV's `intervals=`.
    fn name(self) -> &'static str {
        match self {
            Self::Bootstrap => "bootstrap",
            Self::Model => "model",
        }
    }

    /// In words, for the table.
    fn words(self) -> &'static str {
        match self {
            Self::Bootstrap => "parametric bootstrap",
            Self::Model => "local-level model, from each estimate's standard error",
        }
    }
}

impl PostprocessReport {
    /// The report of estimates made elsewhere (a stream's, [`crate::commands::stream`]) of a
    /// population `total`, with what they were made from: Δ and the prior, as words.
    pub(crate) fn of_estimates(
        estimates: Estimates,
        total: u64,
        sensitivity: f64,
        prior: String,
        (intervals, interval_method): (Option<Intervals>, IntervalMethod),
    ) -> Self {
        Self {
            command: "stream export",
            estimates,
            total,
            sensitivity,
            prior,
            by_default: None,
            intervals,
            interval_method,
        }
    }
}

/// Runs `tpl postprocess`; warnings of the prior ([`docs/map.md`](tpl_core::guide::map) §5) go to
/// stderr.
pub fn run(args: &PostprocessArgs) -> Result<PostprocessReport> {
    tpl_core::check_sensitivity(args.sensitivity).map_err(|e| post("--sensitivity: ", e.into()))?;
    let (counts, read_ahead) = read_inputs(args);
    let counts = counts?;
    let horizon = counts.rows.len();
    let cells = counts.rows[0].len();
    let budgets = budgets(args, &counts)?;
    let (forward, backward) = read_ahead.unwrap_or_else(|| read_matrices(args));
    let fit = |m: Option<Result<TransitionMatrix>>, path: &Option<PathBuf>, side: &str| {
        m.map(|m| fitted(m?, path.as_deref().unwrap_or(Path::new("")), side, cells, &args.releases))
            .transpose()
    };
    let forward = fit(forward, &args.forward, "forward")?;
    let backward = fit(backward, &args.backward, "backward")?;
    let (estimator, by_default) = chosen_estimator(args)?;
    if horizon > 1 && estimator.uses_prior() && forward.is_none() {
        return Err(post(
            "--forward: ",
            PostprocessError::MissingForward { estimator: estimator.name(), horizon },
        ));
    }
    // Both fit the releases' cells: they describe the same states.
    let correlation = Correlation::new(backward, forward)?;
    let config = FilterConfig {
        sensitivity: args.sensitivity,
        prior: prior_policy(&args.prior)?,
        correlation: &correlation,
        estimator,
        ..FilterConfig::new(args.total)
    };
    let truth = args.truth.as_deref().map(|file| read_truth(file, &counts)).transpose()?;
    let method = args.interval.interval.map(|_| args.interval_method.unwrap_or(IntervalMethod::Model));
    let replicates = args.replicates.unwrap_or(DEFAULT_REPLICATES);
    if method == Some(IntervalMethod::Bootstrap) {
        check_bootstrap_size(replicates, horizon.saturating_mul(cells))
            .map_err(|e| CliError::Usage(format!("--replicates {replicates}: {e}")))?;
    } else {
        // A bootstrap setting without the bootstrap would be ignored without a word.
        let given = [
            (args.seed.is_some(), "--seed"),
            (args.replicates.is_some(), "--replicates"),
            (args.sampler.is_some(), "--sampler"),
        ];
        if let Some((_, flag)) = given.iter().find(|(given, _)| *given) {
            return Err(CliError::Usage(format!(
                "{flag}: only the bootstrap draws replicates (add --interval-method bootstrap)"
            )));
        }
    }
    let estimates = filter(&counts.rows, &budgets, config.clone()).map_err(|e| locate(e, args, &counts))?;
    for w in &estimates.warnings {
        eprintln!("tpl: warning: {}: {w}", args.releases.display());
    }
    let intervals = match (args.interval.interval, method) {
        (Some(level), Some(IntervalMethod::Model)) => {
            let (lower, upper) = estimates.intervals(level).map_err(|e| post("--interval: ", e))?;
            Some(Intervals { level, lower, upper })
        }
        (Some(level), _) => Some(
            bootstrap_estimates(
                &counts.rows,
                &estimates.estimates,
                &budgets,
                config,
                Bootstrap { level, replicates },
                args.sampler.map_or(SamplerKind::Discrete, |s| s.0),
                args.seed,
            )
            .map_err(|e| post("--interval: ", e))?,
        ),
        (None, _) => None,
    };
    if let Some(path) = &args.chart {
        chart(args, path, &counts, truth.as_deref(), &estimates, intervals.as_ref())?;
    }
    Ok(PostprocessReport {
        command: "postprocess",
        estimates,
        total: args.total,
        sensitivity: args.sensitivity,
        prior: args.prior.clone(),
        by_default: Some(by_default),
        intervals,
        interval_method: method.unwrap_or(IntervalMethod::Model),
    })
}

/// The matrices as read from `--forward` and `--backward` (each `None` when not given).
type ReadMatrices = (Option<Result<TransitionMatrix>>, Option<Result<TransitionMatrix>>);

/// The releases, and the matrix files read at the same time on another thread — unless one
/// of the files is standard input, which only one reader may take, in the order of the
/// flags (`None`: the caller reads the matrices after the budgets). Errors are
/// reported by the caller in that order either way: releases, budgets, forward, backward.
fn read_inputs(args: &PostprocessArgs) -> (Result<Counts>, Option<ReadMatrices>) {
    let files = [Some(&args.releases), args.budgets.as_ref(), args.forward.as_ref(), args.backward.as_ref()];
    if files.into_iter().flatten().any(|p| text::is_stdin(p)) {
        return (read_counts(&args.releases, true).map_err(CliError::from), None);
    }
    std::thread::scope(|scope| {
        let matrices = scope.spawn(|| read_matrices(args));
        let counts = read_counts(&args.releases, true).map_err(CliError::from);
        let matrices = matrices.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (counts, Some(matrices))
    })
}

/// `--forward` and `--backward`, each as read (`None` when not given).
fn read_matrices(args: &PostprocessArgs) -> ReadMatrices {
    let read = |path: &Option<PathBuf>| path.as_ref().map(|p| read_matrix(p, &args.matrices));
    (read(&args.forward), read(&args.backward))
}

/// Cells drawn by `--chart`: the three with the largest mean estimate.
const CHART_CELLS: usize = 3;

/// `--truth`: the true counts, of the releases' shape.
fn read_truth(file: &Path, releases: &Counts) -> Result<Vec<Vec<f64>>> {
    let t = read_counts(file, false)?;
    let (steps, cells) = (releases.rows.len(), releases.rows[0].len());
    if t.rows.len() != steps || t.rows[0].len() != cells {
        return Err(CliError::parse(
            file,
            0,
            format!(
                "{} steps × {} cells, but the releases have {steps} × {cells}",
                t.rows.len(),
                t.rows[0].len()
            ),
        ));
    }
    Ok(t.rows)
}

/// `--chart`: the cells with the most people, each its own panel.
fn chart(
    args: &PostprocessArgs,
    path: &Path,
    releases: &Counts,
    truth: Option<&[Vec<f64>]>,
    estimates: &Estimates,
    intervals: Option<&Intervals>,
) -> Result<()> {
    let x = &estimates.estimates;
    let n = x.first().map_or(0, Vec::len);
    let mut order: Vec<usize> = (0..n).collect();
    let mean = |j: usize| x.iter().map(|row| row[j]).sum::<f64>();
    order.sort_by(|&a, &b| mean(b).total_cmp(&mean(a)));
    let column = |rows: &[Vec<f64>], j: usize| rows.iter().map(|r| r[j]).collect::<Vec<f64>>();
    let cells: Vec<CellSeries<'_>> = order
        .into_iter()
        .take(CHART_CELLS)
        .map(|j| CellSeries {
            name: format!("cell c{j}"),
            releases: column(&releases.rows, j),
            estimates: column(x, j),
            truth: truth.map(|t| column(t, j)),
            band: intervals.map(|i| (column(&i.lower, j), column(&i.upper, j), i.level)),
            estimator: estimates.estimator.name(),
        })
        .collect();
    let mut title = format!("{}: estimates of the {} busiest cells", text::name(&args.releases), cells.len());
    if truth.is_some() {
        // The chart then holds the true counts: it is as private as they are.
        title.push_str(" — CONFIDENTIAL: shows the true counts, do not publish");
    }
    Ok(estimate_chart(path, &title, &cells)?)
}

/// ε_1..ε_T from `--epsilon`, `--budgets`, or the releases file's `publication_budget`.
fn budgets(args: &PostprocessArgs, counts: &Counts) -> Result<Vec<f64>> {
    let horizon = counts.rows.len();
    if let Some(e) = args.epsilon {
        return tpl_postprocess::constant_budgets(e, horizon).map_err(|e| post("--epsilon: ", e));
    }
    if let Some(path) = &args.budgets {
        let b = read_budgets(path)?;
        if b.len() != horizon {
            return Err(CliError::parse(
                path,
                0,
                format!(
                    "{} budgets, but {} has {horizon} releases (one ε_t per step)",
                    b.len(),
                    args.releases.display()
                ),
            ));
        }
        return Ok(b);
    }
    counts.publication_budget.clone().ok_or_else(|| {
        CliError::Usage(format!(
            "{}: no publication_budget column, so the budgets are unknown: give --epsilon E_t (the per-step budget) or --budgets FILE",
            args.releases.display()
        ))
    })
}

/// `frequency`, `uniform`, or a file holding one row of n probabilities (matrix-file
/// syntax, or a `.json` array).
fn prior_policy(value: &str) -> Result<PriorPolicy> {
    match value {
        "frequency" => return Ok(PriorPolicy::Frequency),
        "uniform" => return Ok(PriorPolicy::Uniform),
        _ => {}
    }
    Ok(PriorPolicy::Explicit(tpl_io::read_prior(Path::new(value))?))
}

/// Names the file and line (or flag) of a stream error.
fn locate(e: PostprocessError, args: &PostprocessArgs, counts: &Counts) -> CliError {
    let step = match &e {
        PostprocessError::AtStep { step, .. } => Some(*step),
        _ => None,
    };
    let inner = match &e {
        PostprocessError::AtStep { source, .. } => source.as_ref(),
        other => other,
    };
    let context = match (inner, step) {
        (PostprocessError::BadBudget(_), Some(t)) => match &args.budgets {
            Some(path) => format!("{}: step {t}: ", path.display()),
            None => format!("{}:{}: ", args.releases.display(), counts.lines[t - 1]),
        },
        (PostprocessError::WeightOverflow { .. }, _) => "--sensitivity: ".to_string(),
        (PostprocessError::TotalTooLarge(_), _) => "--total: ".to_string(),
        (
            PostprocessError::PriorLength { .. }
            | PostprocessError::BadPriorEntry { .. }
            | PostprocessError::PriorSum { .. },
            _,
        ) => format!("{}: ", args.prior),
        (_, Some(t)) => format!("{}:{}: ", args.releases.display(), counts.lines[t - 1]),
        _ => format!("{}: ", args.releases.display()),
    };
    post(&context, e)
}

fn post(context: &str, source: PostprocessError) -> CliError {
    CliError::Post { context: context.to_string(), source }
}

impl Report for PostprocessReport {
    fn array(&self) -> Option<(Vec<usize>, Vec<f64>)> {
        Some(crate::render::rows_array(&self.estimates.estimates))
    }

    fn json(&self) -> Value {
        let t: Vec<usize> = (1..=self.estimates.estimates.len()).collect();
        json_of(&EstimatesOutput {
            estimates: &self.estimates,
            t: Some(&t),
            by_default: self.by_default,
            intervals: self.intervals.as_ref().map(|i| (i, self.interval_method.name())),
            arrays: true,
        })
    }

    fn csv(&self) -> String {
        let rows = &self.estimates.estimates;
        let n = rows.first().map_or(0, Vec::len);
        // A `#` line first, as in the CSV of `tpl release`: how the estimates were made.
        let intervals = match &self.intervals {
            Some(_) => format!(" intervals={}", self.interval_method.name()),
            None => String::new(),
        };
        let mut out = format!(
            "# tpl {VERSION} {}: estimator={}{} total={} sensitivity={} prior={}{intervals}\n",
            self.command,
            self.estimates.estimator,
            self.by_default.map_or(String::new(), |d| format!(" estimator_default={d}")),
            self.total,
            tpl_core::Short(self.sensitivity),
            self.prior
        );
        out.push_str(&csv_text(|w| {
            w.field("t")?;
            for i in 0..n {
                w.value(format_args!("x{i}"))?;
            }
            if self.intervals.is_some() {
                for side in ["lo", "hi"] {
                    for i in 0..n {
                        w.value(format_args!("{side}_c{i}"))?;
                    }
                }
            }
            w.end()
        }));
        out.push_str(&csv_rows_text(rows.len(), |w, t| {
            w.value(t + 1)?;
            for v in &rows[t] {
                w.value(v)?;
            }
            if let Some(i) = &self.intervals {
                for v in i.lower[t].iter().chain(&i.upper[t]) {
                    w.value(v)?;
                }
            }
            w.end()
        }));
        out
    }

    fn table(&self) -> String {
        let rows = &self.estimates.estimates;
        let n = rows.first().map_or(0, Vec::len);
        let shown = n.min(6);
        let mut titles = vec!["t".to_string()];
        titles.extend((0..shown).map(|i| format!("x{i}")));
        if n > shown {
            titles.push("…".into());
        }
        let title_refs: Vec<&str> = titles.iter().map(String::as_str).collect();
        let mut table = Table::new(&title_refs);
        for (t, row) in rows.iter().enumerate() {
            let mut cells = vec![(t + 1).to_string()];
            cells.extend(row.iter().take(shown).map(|&v| human(v)));
            if n > shown {
                cells.push("…".into());
            }
            table.row(cells);
        }
        table.elide(5);
        let intervals = match &self.intervals {
            Some(i) => format!(
                "{} % intervals ({}) in the JSON and CSV (`lower`/`upper`, `lo_c…`/`hi_c…`).\n",
                human(100.0 * i.level),
                self.interval_method.words()
            ),
            None => String::new(),
        };
        format!(
            "Estimator {}{}: estimates of the counts of N = {} users in {n} cells over {} steps (each row sums to N).\n{intervals}\n{}",
            self.estimates.estimator,
            match (self.by_default, self.estimates.estimator.is_filter()) {
                (Some(true), false) => " (the default: every step from all releases, past and future)",
                (Some(true), true) => " (the causal default: each step from the releases up to it)",
                _ => "",
            },
            self.total,
            rows.len(),
            table.render()
        )
    }
}
