//! `tpl stream init|push|status|export|report`: a durable stream in one SQLite file
//! ([`docs/stream.md`](tpl_core::guide::stream)); the ledger logic is the `tpl-stream` library's.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::Value;
use tpl_compare::bootstrap_estimates;
use tpl_io::{read_budgets, read_counts_prefix};
use tpl_mechanisms::{Intervals, LaplaceMechanism, MechError, Run, SamplerKind, SchemeKind};
use tpl_postprocess::{Bootstrap, Estimates, Estimator};
use tpl_report::output::{StatusOutput, guaranteed_pair};
use tpl_report::{StreamData, stream_page};
use tpl_stream::{
    DurableStream, Estimation, Parameter, Status, StepEstimate, StepRecord, StreamConfig, StreamError,
    StreamOptions, default_key_path,
};

use crate::args::{IntervalArgs, ReleaseSetup};
use crate::commands::postprocess::{IntervalMethod, PostprocessReport};
use crate::counts_check::refused_row;
use crate::error::{CliError, Result};
use crate::output_dir::write_file;
use crate::provenance::{VERSION, command_line, version_line, warn_float_sampler, with_build};
use crate::release_report::{ReleaseReport, Sampler, StreamSteps, parse_scheme};
use crate::render::{Report, Table, count_of, csv_text, human, json_of};

/// Arguments of `tpl stream`.
#[derive(Debug, Args)]
pub struct StreamArgs {
    #[command(subcommand)]
    pub command: StreamCommand,
}

/// The stream subcommands.
#[derive(Debug, Subcommand)]
pub enum StreamCommand {
    /// Create a stream file with its parameters, and its key (refuses existing files).
    ///
    /// The stream file holds the parameters and, for every step, its key (time bucket), its
    /// budgets, its noisy release and an HMAC of its true counts under the stream's key; the
    /// key is written to a separate file (default: the stream's path + `.key`). Both are
    /// created readable by their owner only (mode 0600). Without the key, the file tells
    /// nothing about the counts beyond the releases, which are public by design; with it, a
    /// guess of a step's counts can be checked. Give the key only to what pushes; `status`,
    /// `export` and `report` need the stream file only (docs/stream.md §1–2).
    #[command(verbatim_doc_comment)]
    Init(InitArgs),
    /// Release the new steps of a counts file (one transaction per step).
    Push(PushArgs),
    /// Give the stream a new key and erase every counts digest made with the old one (also
    /// upgrades a stream of format 1, which stored unkeyed digests).
    Rekey(RekeyArgs),
    /// Where the stream stands: spend, publications, realised leakage.
    Status(DbArgs),
    /// Every release so far, as `tpl release` prints them.
    Export(ExportArgs),
    /// One self-contained HTML page of the stream (no scripts, no network): parameters, the
    /// busiest cells' releases and estimates over time, every window's spend against ε, the
    /// realised and guaranteed leakage, the refused steps. Needs the stream file only.
    Report(ReportArgs),
}

/// Arguments of `tpl stream report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The page to write (HTML; written over).
    #[arg(long, value_name = "FILE.html")]
    pub out: PathBuf,
}

/// Arguments of `tpl stream export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub interval: IntervalArgs,
    /// Export the causal estimates the stream stored (x̂_t from r_1..r_t), in the form of
    /// `tpl postprocess`, instead of the releases (whose JSON carries them too).
    #[arg(long, conflicts_with = "smoothed")]
    pub estimates: bool,
    /// Estimate the whole stream again with a smoother (`smooth`, or `kalman`): each step
    /// from every release, before and after it; in the form of `tpl postprocess`.
    #[arg(long, value_name = "ESTIMATOR", num_args = 0..=1, default_missing_value = "smooth", value_parser = parse_estimator)]
    pub smoothed: Option<Estimator>,
    /// The population N for --smoothed on a stream that stores no estimates (default: the
    /// stream's).
    #[arg(long, value_name = "N")]
    pub total: Option<u64>,
    /// With --smoothed --interval: model (the default: from each estimate's standard error)
    /// or bootstrap (100 replicate releases, noise from the operating system); stored
    /// estimates always have the model intervals stored with them.
    #[arg(long, value_enum, value_name = "METHOD")]
    pub interval_method: Option<IntervalMethod>,
}

fn parse_estimator(s: &str) -> std::result::Result<Estimator, String> {
    s.parse().map_err(|e: tpl_postprocess::PostprocessError| e.to_string())
}

/// Arguments of `tpl stream rekey`.
#[derive(Debug, Args)]
pub struct RekeyArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The stream's key file, replaced by the new key (default: the stream's path + `.key`).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
}

/// `--db`.
#[derive(Debug, Args)]
pub struct DbArgs {
    /// The stream file (SQLite).
    #[arg(long, value_name = "FILE")]
    pub db: PathBuf,
}

/// Arguments of `tpl stream init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub setup: ReleaseSetup,
    /// With --backward/--forward: the largest temporal privacy leakage any step may reach;
    /// a step that would exceed it is not published.
    #[arg(long, value_name = "A", allow_negative_numbers = true, value_parser = tpl_io::text::finite_f64)]
    pub alpha: Option<f64>,
    /// The planned scheme's budgets ε_t (a budgets file); steps past the plan are refused.
    #[arg(long, value_name = "FILE")]
    pub budgets: Option<PathBuf>,
    /// Noise sampler of every release.
    #[arg(long, value_enum, default_value_t = Sampler(SamplerKind::Discrete))]
    pub sampler: Sampler,
    /// Where to write the stream's key (default: the stream's path + `.key`); keep it as
    /// private as the counts.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Also store, at every push, the causal estimate of the step's true counts (a filter of
    /// the releases so far: map, map-dbsec, map-integer or mle; `none`: releases only). Needs
    /// --total; default map when --total is given. Costs no privacy.
    #[arg(long, value_name = "ESTIMATOR|none")]
    pub estimator: Option<String>,
    /// The population N the estimates assume (public; every step's estimate sums to it).
    #[arg(long, value_name = "N")]
    pub total: Option<u64>,
}

impl InitArgs {
    /// The estimates asked for: `--estimator` (default map) with `--total N`.
    fn estimation(&self) -> Result<Option<Estimation>> {
        let estimator = match self.estimator.as_deref() {
            Some("none") => return Ok(None),
            Some(name) => {
                Some(parse_estimator(name).map_err(|e| CliError::Usage(format!("--estimator: {e}")))?)
            }
            None => None,
        };
        match (estimator, self.total) {
            (estimator, Some(total)) => {
                Ok(Some(Estimation { estimator: estimator.unwrap_or(Estimator::ONLINE_DEFAULT), total }))
            }
            (Some(e), None) => Err(CliError::Usage(format!(
                "--estimator {}: needs --total N, the population the estimates assume",
                e.name()
            ))),
            (None, None) => Ok(None),
        }
    }
}

/// Arguments of `tpl stream push`.
#[derive(Debug, Args)]
pub struct PushArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Counts file: one row per step; with a `timestamp_bucket` header that column (an
    /// integer) is each step's key, which makes a re-push safe (stored keys are returned,
    /// not released again).
    #[arg(long, value_name = "FILE")]
    pub counts: PathBuf,
    /// Push a counts file without a `timestamp_bucket` column: its rows become new steps
    /// after the last key. Pushing the same file again then releases every row again and
    /// spends for it: only for files that hold new rows only.
    #[arg(long)]
    pub append: bool,
    /// The stream's key file (default: the stream's path + `.key`).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Refuse unless the stream's scheme is this one (a guard against the wrong file).
    #[arg(long, value_parser = parse_scheme)]
    pub scheme: Option<SchemeKind>,
    /// Refuse unless the stream's ε is this one.
    #[arg(long, value_name = "E", allow_negative_numbers = true, value_parser = tpl_io::text::finite_f64)]
    pub epsilon: Option<f64>,
    /// Refuse unless the stream's window is this one.
    #[arg(long, value_name = "W")]
    pub window: Option<usize>,
    /// Refuse unless the stream's sensitivity is this one.
    #[arg(long, value_name = "D", allow_negative_numbers = true, value_parser = tpl_io::text::finite_f64)]
    pub sensitivity: Option<f64>,
    /// Refuse unless the stream's sampler is this one.
    #[arg(long, value_enum)]
    pub sampler: Option<Sampler>,
    #[command(flatten)]
    pub interval: IntervalArgs,
}

/// What `tpl stream …` prints.
pub enum StreamReport {
    /// `init` and `status`.
    Status(StatusReport),
    /// `push` and `export`.
    Releases(ReleaseReport),
    /// `export --estimates` and `export --smoothed`.
    Estimates(PostprocessReport),
    /// `report`: the page written.
    Page(PageReport),
}

/// What `tpl stream report` wrote: `{"out", "bytes", "steps"}` in the JSON.
#[derive(serde::Serialize)]
pub struct PageReport {
    /// The page's path, as given.
    out: String,
    bytes: usize,
    steps: usize,
}

impl Report for PageReport {
    fn json(&self) -> Value {
        json_of(self)
    }

    fn csv(&self) -> String {
        csv_text(|w| {
            w.record(["out", "bytes", "steps"])?;
            w.record([self.out.clone(), self.bytes.to_string(), self.steps.to_string()])
        })
    }

    fn table(&self) -> String {
        format!(
            "Wrote {} ({} KB): the stream's {} steps, summarised.\n",
            self.out,
            self.bytes.div_ceil(1024),
            self.steps
        )
    }
}

/// Writes the page of `tpl stream report`.
fn report(a: &ReportArgs) -> Result<PageReport> {
    let mut s = open(&a.db)?;
    let data = StreamData::read(&mut s, a.db.db.display().to_string()).map_err(stream_error)?;
    let page = stream_page(&data, &[("command", command_line()), ("tpl", version_line())])?;
    write_file(&a.out, &page)?;
    Ok(PageReport { out: a.out.display().to_string(), bytes: page.len(), steps: data.steps.len() })
}

impl StreamCommand {
    /// The subcommand as typed after `tpl stream`, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Init(_) => "init",
            Self::Push(_) => "push",
            Self::Rekey(_) => "rekey",
            Self::Status(_) => "status",
            Self::Export(_) => "export",
            Self::Report(_) => "report",
        }
    }

    /// Whether its report has a main array for `--format npy` ([`Report::array`]): the
    /// releases of `push` and the releases or estimates of `export`.
    pub fn writes_npy(&self) -> bool {
        matches!(self, Self::Push(_) | Self::Export(_))
    }
}

/// Runs `tpl stream …`.
pub fn run(args: &StreamArgs) -> Result<StreamReport> {
    match &args.command {
        StreamCommand::Init(a) => init(a).map(StreamReport::Status),
        StreamCommand::Push(a) => push(a).map(StreamReport::Releases),
        StreamCommand::Rekey(a) => rekey(a).map(StreamReport::Status),
        StreamCommand::Status(a) => {
            let mut s = open(a)?;
            Ok(StreamReport::Status(StatusReport::new(s.status().map_err(stream_error)?)?))
        }
        StreamCommand::Export(a) => export(a),
        StreamCommand::Report(a) => report(a).map(StreamReport::Page),
    }
}

/// Every stream error is the user's to fix (a file, a key, a flag): one line, exit 2.
/// A stream error as the CLI states it: parameters named by their flags (`--alpha`).
fn stream_error(e: StreamError) -> CliError {
    CliError::Usage(e.message(Parameter::flag))
}

fn open(db: &DbArgs) -> Result<DurableStream> {
    DurableStream::open(db.checked()?).map_err(stream_error)
}

impl DbArgs {
    /// The stream file; `-` is refused (a stream is a file, never standard input).
    fn checked(&self) -> Result<&std::path::Path> {
        if tpl_io::text::is_stdin(&self.db) {
            return Err(CliError::Usage(
                "--db -: a stream is a file that lasts between runs; standard input cannot be one".into(),
            ));
        }
        Ok(&self.db)
    }
}

/// The key file of `db`: `key`, or the default beside the stream.
fn key_path(db: &DbArgs, key: Option<&PathBuf>) -> PathBuf {
    key.cloned().unwrap_or_else(|| default_key_path(&db.db))
}

fn rekey(a: &RekeyArgs) -> Result<StatusReport> {
    let key = key_path(&a.db, a.key.as_ref());
    let done = DurableStream::rekey(a.db.checked()?, &key).map_err(stream_error)?;
    let mut report = StatusReport::new(open(&a.db)?.status().map_err(stream_error)?)?;
    report.note = format!(
        "{}New key in {}; {} made with the old key {} erased (a retry of those steps is now refused).\n",
        match (done.upgraded, done.from) {
            (true, 1) =>
                format!("Upgraded from format 1 (unkeyed digests) to {}. ", tpl_stream::FORMAT_VERSION),
            (true, from) => format!(
                "Upgraded from format {from} to {} (its chain head changed: record the new one). ",
                tpl_stream::FORMAT_VERSION
            ),
            _ => String::new(),
        },
        key.display(),
        count_of(done.erased, "counts digest"),
        if done.erased == 1 { "was" } else { "were" },
    );
    Ok(report)
}

fn init(a: &InitArgs) -> Result<StatusReport> {
    let correlation = a.setup.correlation.read()?;
    let budgets = match &a.budgets {
        Some(path) => read_budgets(path)?,
        None => Vec::new(),
    };
    let config = StreamConfig {
        scheme: a.setup.scheme.into(),
        epsilon: a.setup.wevent.epsilon,
        window: a.setup.wevent.window,
        sensitivity: a.setup.wevent.sensitivity,
        sampler: a.sampler.0,
        mechanism: None,
        correlation,
        alpha: a.alpha,
        budgets,
        estimation: a.estimation()?,
    };
    a.setup.wevent.params()?;
    let key = key_path(&a.db, a.key.as_ref());
    StreamOptions::new().key(&key).create(a.db.checked()?, &config).map_err(|e| match (e, &a.budgets) {
        // A plan the scheme refuses is named by its file, as `tpl release` names it.
        (StreamError::Plan(source), Some(path)) => {
            CliError::Mech { context: format!("{}: ", path.display()), source }
        }
        (e, _) => stream_error(e),
    })?;
    let mut s = open(&a.db)?;
    let mut report = StatusReport::new(s.status().map_err(stream_error)?)?;
    report.note = format!(
        "Files: {} holds the parameters and, per step, its budgets, its noisy release and an HMAC of its \
         counts; {} holds the key of those HMACs. Both are readable by their owner only (mode 0600): \
         keep the key as private as the counts and give it only to what pushes.\n",
        a.db.db.display(),
        key.display()
    );
    report.created = Some((a.db.db.clone(), key));
    Ok(report)
}

fn push(a: &PushArgs) -> Result<ReleaseReport> {
    let mut stream = StreamOptions::new()
        .key(key_path(&a.db, a.key.as_ref()))
        .open(a.db.checked()?)
        .map_err(stream_error)?;
    check_flags(a, stream.config())?;
    // The valid rows before a bad one are pushed (and stand); the bad row is then named.
    let (counts, bad_row) = read_counts_prefix(&a.counts, false)?;
    if counts.buckets.is_none() && !a.append {
        return Err(CliError::parse(
            &a.counts,
            0,
            "no timestamp_bucket column: its rows would become new steps after the last key, so pushing \
             this file again would release (and spend for) every row again; add a timestamp_bucket column \
             (an integer per row) for safe retries, or pass --append to append the rows as new steps; \
             nothing was pushed",
        ));
    }
    let keys = match &counts.buckets {
        Some(buckets) => buckets
            .iter()
            .zip(&counts.lines)
            .map(|(&k, &line)| {
                i64::try_from(k).map(Some).map_err(|_| {
                    CliError::parse(
                        &a.counts,
                        line,
                        format!("timestamp_bucket {k} is beyond 2^63 − 1, the largest key a stream stores"),
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?,
        None => vec![None; counts.rows.len()],
    };
    // The stream's sampler checks each row before it is pushed, naming the value as typed.
    let sampler = LaplaceMechanism::new(stream.config().sampler.from_os_rng());
    let hint = match stream.config().sampler {
        SamplerKind::Discrete => {
            " (a stream created with --sampler float takes any data, but its releases are not release-grade)"
        }
        _ => "",
    };
    let mut pushed = Vec::with_capacity(counts.rows.len());
    let recorded = " (the steps before this row are recorded)";
    for (i, ((row, key), &line)) in counts.rows.iter().zip(keys).zip(&counts.lines).enumerate() {
        if let Some(why) = refused_row(&sampler, &counts, i, hint) {
            return Err(CliError::parse(&a.counts, line, format!("{why}{recorded}")));
        }
        let p = stream.push(key, row).map_err(|e| match e {
            StreamError::FirstRefused { .. } => CliError::parse(&a.counts, line, e.to_string()),
            // Its message names the step already.
            StreamError::Step { source: source @ MechError::DissimilarityTooLarge { .. }, .. } => {
                CliError::parse(&a.counts, line, format!("{source}{recorded}"))
            }
            StreamError::Step { .. }
            | StreamError::Width { .. }
            | StreamError::KeyConflict { .. }
            | StreamError::KeyOrder { .. }
            | StreamError::Unverifiable { .. } => CliError::parse(&a.counts, line, format!("{e}{recorded}")),
            // A failure of the file itself (a full disk): say what stands.
            other => CliError::Usage(format!(
                "{}{}",
                other.message(Parameter::flag),
                match pushed.iter().filter(|(_, replayed)| !replayed).count() {
                    0 => " (no step of this push was recorded)".to_string(),
                    n => format!(" ({} of this push recorded before it)", count_of(n, "new step")),
                }
            )),
        })?;
        pushed.push((p.record, p.replayed));
    }
    // Nothing is shown before every step shown is on disk.
    if pushed.iter().any(|(_, replayed)| !replayed) {
        stream.flush().map_err(stream_error)?;
    }
    if let Some(bad_row) = bad_row {
        return Err(CliError::Usage(format!(
            "{bad_row} (the {} valid steps before this row are recorded; push the file again once the row is fixed)",
            pushed.len()
        )));
    }
    let spend = stream.max_window_spend();
    // The causal estimates of the new steps, in one pass of the filter (post-processing:
    // the releases above stand whatever happens here).
    let estimates = match stream.config().estimation {
        Some(e) => {
            stream.update_estimates().map_err(|e| {
                CliError::Usage(format!(
                    "the releases are recorded, their estimates are not: {}; push the same file again \
                     (its stored steps are returned, not released again) to make them",
                    e.message(Parameter::flag)
                ))
            })?;
            // Only the pushed steps' estimates are kept of the rows read.
            let mut wanted: Vec<usize> = pushed.iter().map(|(r, _)| r.t).collect();
            wanted.sort_unstable();
            let stored = stream
                .estimates_with(|s| wanted.binary_search(&s.t).is_ok().then_some(s))
                .map_err(stream_error)?;
            Some((e.estimator, stored))
        }
        None => None,
    };
    // A push that starts with a repeat: its intervals are those of the earlier publication.
    let carried = match pushed.first() {
        Some((first, _)) if a.interval.interval.is_some() && !first.published => {
            stream.publication_before(first.t).map_err(stream_error)?
        }
        _ => None,
    };
    let report = releases(
        "stream push",
        stream.config(),
        (spend, carried),
        pushed.into_iter(),
        estimates,
        a.interval.interval,
    )?;
    warn_float_sampler(stream.config().sampler);
    Ok(report)
}

/// Refuses flags that contradict the stored parameters.
fn check_flags(a: &PushArgs, c: &StreamConfig) -> Result<()> {
    let stored_sampler = c.sampler.name();
    let contradictions = [
        a.scheme
            .filter(|&s| c.scheme.kind() != Some(s))
            .map(|s| format!("--scheme {} (stored: {})", s.name(), c.scheme.name())),
        a.epsilon.filter(|&e| e != c.epsilon).map(|e| format!("--epsilon {e} (stored: {})", c.epsilon)),
        a.window.filter(|&w| w != c.window).map(|w| format!("--window {w} (stored: {})", c.window)),
        a.sensitivity
            .filter(|&d| d != c.sensitivity)
            .map(|d| format!("--sensitivity {d} (stored: {})", c.sensitivity)),
        a.sampler
            .filter(|s| s.0.name() != stored_sampler)
            .map(|s| format!("--sampler {} (stored: {stored_sampler})", s.0.name())),
    ];
    match contradictions.into_iter().flatten().next() {
        Some(what) => Err(CliError::Usage(format!(
            "{}: {what} contradicts the stream's parameters; nothing was pushed",
            a.db.db.display()
        ))),
        None => Ok(()),
    }
}

/// The releases of `steps` in `tpl release`'s formats; the window spend is the stream's.
fn export(a: &ExportArgs) -> Result<StreamReport> {
    let mut s = open(&a.db)?;
    let (status, steps) = s.snapshot().map_err(stream_error)?;
    let config = &status.config;
    let stored = s.estimates().map_err(stream_error)?;
    let described =
        |estimator: Estimator, how: &str| format!("{how} of the stream's releases by {}", estimator.name());
    if a.interval_method.is_some() && (a.smoothed.is_none() || a.interval.interval.is_none()) {
        return Err(CliError::Usage(
            "--interval-method: only for the intervals of estimates made now (--smoothed --interval LEVEL); \
             stored estimates have the model intervals stored with them"
                .into(),
        ));
    }
    if let Some(estimator) = a.smoothed {
        let total = a.total.or(config.estimation.map(|e| e.total)).ok_or_else(|| {
            CliError::Usage(
                "--smoothed: the stream stores no estimates; give --total N, its population".into(),
            )
        })?;
        let estimates =
            s.reestimated(estimator, total).map_err(|e| CliError::Usage(format!("--smoothed {e}")))?;
        let how = described(estimator, "whole-stream estimates");
        let method = a.interval_method.unwrap_or(IntervalMethod::Model);
        let interval = a.interval.interval.map(|level| (level, method));
        return estimates_report(&mut s, config, (estimator, total), estimates, how, interval);
    }
    if a.estimates {
        let Some(e) = config.estimation else {
            // Smoothing moves its estimates by the forward matrix: suggested only with one.
            let now = if config.correlation.forward().is_some() {
                "; --smoothed --total N estimates its releases now"
            } else {
                " (and it has no forward matrix, which every estimator but mle needs)"
            };
            return Err(CliError::Usage(format!(
                "--estimates: this stream stores no estimates (init --total N [--estimator E]){now}"
            )));
        };
        if let Some((t, Err(why))) = stored.iter().map(|s| (s.t, &s.estimate)).find(|(_, e)| e.is_err()) {
            return Err(CliError::Usage(format!("step {t}: no estimate: {why}")));
        }
        let intervals = a.interval.interval.map(|level| stored_intervals(&stored, level)).transpose()?;
        // Every estimate is one (checked above): moved, not copied; a step stored without a
        // standard error has none known (∞).
        let (estimates, std_errors): (Vec<Vec<f64>>, Vec<Vec<f64>>) = stored
            .into_iter()
            .filter_map(|s| {
                let x = s.estimate.ok()?;
                let se = s.std_error.unwrap_or_else(|| vec![f64::INFINITY; x.len()]);
                Some((x, se))
            })
            .unzip();
        let how = described(e.estimator, "causal estimates (each step from the releases up to it)");
        let estimates = Estimates { estimator: e.estimator, estimates, warnings: Vec::new(), std_errors };
        let intervals = (intervals, IntervalMethod::Model);
        let report = PostprocessReport::of_estimates(estimates, e.total, config.sensitivity, how, intervals);
        return Ok(StreamReport::Estimates(report));
    }
    let steps = steps.into_iter().map(|r| (r, false));
    let estimates = config.estimation.map(|e| (e.estimator, stored));
    Ok(StreamReport::Releases(releases(
        "stream export",
        config,
        (status.max_window_spend, None),
        steps,
        estimates,
        a.interval.interval,
    )?))
}

/// The intervals at `level` of the stored estimates, from the standard errors stored with them
/// ([`docs/intervals.md`](tpl_core::guide::intervals) §3).
fn stored_intervals(stored: &[StepEstimate], level: f64) -> Result<Intervals> {
    let (mut lower, mut upper) = (Vec::with_capacity(stored.len()), Vec::with_capacity(stored.len()));
    for s in stored {
        let (lo, hi) = s.interval(level).map_err(|e| CliError::Usage(format!("--interval: {e}")))?.ok_or_else(|| {
            CliError::Usage(format!(
                "--interval: step {} has no stored interval (none before a release with information; or its \
                 estimate was stored by an earlier version, and the next push stores its standard errors if the \
                 filter still makes that estimate)",
                s.t
            ))
        })?;
        lower.push(lo);
        upper.push(hi);
    }
    Ok(Intervals { level, lower, upper })
}

/// The report of a stream's whole-stream estimates; with `interval` (a level and a method),
/// their intervals: the model's, from the estimates' standard errors, or those of the
/// parametric bootstrap of `tpl postprocess --interval-method bootstrap` (100 replicate
/// releases drawn with the stream's sampler, noise from the operating system).
fn estimates_report(
    s: &mut DurableStream,
    config: &StreamConfig,
    (estimator, total): (Estimator, u64),
    estimates: Estimates,
    how: String,
    interval: Option<(f64, IntervalMethod)>,
) -> Result<StreamReport> {
    let usage = |e: tpl_postprocess::PostprocessError| CliError::Usage(format!("--interval: {e}"));
    let intervals = match interval {
        Some((level, IntervalMethod::Model)) => {
            let (lower, upper) = estimates.intervals(level).map_err(usage)?;
            Some(Intervals { level, lower, upper })
        }
        Some((level, IntervalMethod::Bootstrap)) => {
            let (releases, fresh) = s.recorded_releases().map_err(stream_error)?;
            let settings = Bootstrap { level, replicates: 100 };
            let filter = config.filter_config(estimator, total);
            let x = &estimates.estimates;
            Some(
                bootstrap_estimates(&releases, x, &fresh, filter, settings, config.sampler, None)
                    .map_err(usage)?,
            )
        }
        None => None,
    };
    let method = interval.map_or(IntervalMethod::Model, |(_, m)| m);
    let report =
        PostprocessReport::of_estimates(estimates, total, config.sensitivity, how, (intervals, method));
    Ok(StreamReport::Estimates(report))
}

fn releases(
    command: &'static str,
    config: &StreamConfig,
    (max_window_spend, carried): (f64, Option<f64>),
    steps: impl Iterator<Item = (StepRecord, bool)>,
    estimates: Option<(Estimator, Vec<StepEstimate>)>,
    interval: Option<f64>,
) -> Result<ReleaseReport> {
    let mut run =
        Run { published: vec![], spent: vec![], releases: vec![], max_window_budget: max_window_spend };
    let mut extra =
        StreamSteps { t: vec![], key: vec![], replayed: vec![], refused: vec![], estimates: None, carried };
    for (r, replayed) in steps {
        run.published.push(r.published);
        run.spent.push(r.spent);
        run.releases.push(r.release);
        extra.t.push(r.t);
        extra.key.push(r.key);
        extra.replayed.push(replayed);
        extra.refused.push(r.refused);
    }
    extra.estimates = estimates.map(|(e, stored)| (e.name().to_string(), stored));
    ReleaseReport::of_stream(command, config, run, extra, interval)
}

/// `tpl stream status` (and what `init` prints).
pub struct StatusReport {
    status: Status,
    /// A paragraph the table ends with (what `init` created, what `rekey` did).
    note: String,
    /// The stream file and key file `init` created, withdrawn when its report cannot be
    /// written.
    created: Option<(PathBuf, PathBuf)>,
    /// The guaranteed leakage over every run the scheme could have produced so far (max TPL,
    /// max window leakage; [`docs/model.md`](tpl_core::guide::model) §9), when the stream has
    /// matrices and steps.
    guaranteed: Option<(f64, f64)>,
}

impl StatusReport {
    fn new(status: Status) -> Result<Self> {
        let guaranteed = guaranteed_pair(&status).map_err(stream_error)?;
        Ok(Self { status, guaranteed, note: String::new(), created: None })
    }
}

impl Report for StatusReport {
    fn json(&self) -> Value {
        with_build(&StatusOutput { status: &self.status, guaranteed: self.guaranteed, arrays: true })
    }

    fn csv(&self) -> String {
        let s = &self.status;
        csv_text(|w| {
            w.record(["t", "budget", "published", "refused"])?;
            for (i, (&b, &p)) in s.budgets.iter().zip(&s.published).enumerate() {
                w.value(i + 1)?;
                w.value(b)?;
                w.value(u8::from(p))?;
                w.value(u8::from(s.refused.binary_search(&(i + 1)).is_ok()))?;
                w.end()?;
            }
            Ok(())
        })
    }

    fn table(&self) -> String {
        let s = &self.status;
        let c = &s.config;
        let steps = s.budgets.len();
        let published = s.published.iter().filter(|&&p| p).count();
        let leakage = match s.realized {
            Some((tpl, w)) => format!(
                "Realised leakage of the budgets spent: max TPL {}, largest window leakage {}{}.\n",
                human(tpl),
                human(w),
                c.alpha.map_or(String::new(), |a| format!(" (α = {})", human(a)))
            ),
            None if !c.correlation.is_none() => "No step yet: nothing leaked.\n".into(),
            None => "No matrices: leakage under temporal correlation is not audited.\n".into(),
        };
        let guaranteed = self.guaranteed.map_or(String::new(), |(tpl, w)| {
            // The bound is the scheme's own; the α check before every draw is not in it.
            let alpha = c.alpha.map_or(String::new(), |a| {
                format!(
                    " α = {} is enforced before every draw, so no run of this stream exceeds it; the bound \
                     above is the scheme's without that check.",
                    human(a)
                )
            });
            format!(
                "Guaranteed over every run the scheme could have produced in {}: max TPL {}, largest window \
                 leakage {}.{alpha}\n",
                count_of(steps, "step"),
                human(tpl),
                human(w)
            )
        });
        let mut t = Table::new(&["t", "ε_t", "published"]);
        let first = steps.saturating_sub(10);
        for i in first..steps {
            let note = if s.refused.binary_search(&(i + 1)).is_ok() { "refused" } else { "-" };
            t.row(vec![
                (i + 1).to_string(),
                human(s.budgets[i]),
                if s.published[i] { "yes".into() } else { note.into() },
            ]);
        }
        // The event-level `laplace` promises ε per step; the others ε per window of w steps.
        let (promise, spend) = if c.scheme.kind() == Some(SchemeKind::Laplace) {
            let most = s.budgets.iter().copied().fold(0.0, f64::max);
            ("per step (event level)".to_string(), format!("the largest step spends {}", human(most)))
        } else {
            (
                format!("per window of {}", count_of(c.window, "step")),
                format!("the largest window spends {}", human(s.max_window_spend)),
            )
        };
        format!(
            "Stream: scheme {}, ε = {} {promise}, Δ = {}, {} sampler; tpl {VERSION}.\n\
             {} ({published} fresh publications, {} refused by the stream's checks), last key {}; {spend}.\n\
             {leakage}{guaranteed}{}{}{}",
            c.scheme.name(),
            human(c.epsilon),
            human(c.sensitivity),
            c.sampler.name(),
            count_of(steps, "step"),
            s.refused.len(),
            s.last_key.map_or("-".into(), |k| k.to_string()),
            s.chain_head.as_ref().map_or(String::new(), |h| format!(
                "History chain head {h}: recorded elsewhere, it pins every step so far.\n"
            )),
            if steps > 0 { format!("\nLast steps:\n{}", t.render()) } else { String::new() },
            self.note,
        )
    }

    /// `init` whose report could not be written reports failure, so the stream it created is
    /// removed again (with its key) while it holds no step.
    fn withdraw(&self) -> Option<String> {
        let (db, key) = self.created.as_ref()?;
        let empty = DurableStream::open(db).and_then(|mut s| s.status()).is_ok_and(|s| s.budgets.is_empty());
        if !empty {
            return None;
        }
        for file in [db, key] {
            let _ = std::fs::remove_file(file);
        }
        Some(format!("{} was not created", db.display()))
    }
}

impl Report for StreamReport {
    fn array(&self) -> Option<(Vec<usize>, Vec<f64>)> {
        match self {
            Self::Status(_) | Self::Page(_) => None,
            Self::Releases(r) => r.array(),
            Self::Estimates(r) => r.array(),
        }
    }

    fn json(&self) -> Value {
        match self {
            Self::Status(r) => r.json(),
            Self::Releases(r) => r.json(),
            Self::Estimates(r) => r.json(),
            Self::Page(r) => r.json(),
        }
    }

    fn csv(&self) -> String {
        match self {
            Self::Status(r) => r.csv(),
            Self::Releases(r) => r.csv(),
            Self::Estimates(r) => r.csv(),
            Self::Page(r) => r.csv(),
        }
    }

    fn table(&self) -> String {
        match self {
            Self::Status(r) => r.table(),
            Self::Releases(r) => r.table(),
            Self::Estimates(r) => r.table(),
            Self::Page(r) => r.table(),
        }
    }

    fn withdraw(&self) -> Option<String> {
        match self {
            Self::Status(r) => r.withdraw(),
            Self::Releases(_) | Self::Estimates(_) | Self::Page(_) => None,
        }
    }
}
