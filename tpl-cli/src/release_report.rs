//! The output of a release — `tpl release`, and the steps of `tpl stream push` and `export`:
//! the releases with how they were made, in the three formats.

use std::path::PathBuf;

use clap::ValueEnum;
use clap::builder::PossibleValue;
use serde::Serialize;
use serde_json::Value;
use tpl_core::{Correlation, Short, TransitionMatrix};
use tpl_io::{ReleaseRow, release_csv_text, text};
use tpl_mechanisms::{Intervals, Run, SamplerKind, SchemeKind};
use tpl_report::output::{MatrixUsed, ReleaseOutput};

use crate::args::CorrelationArgs;
use crate::error::{CliError, Result};
use crate::provenance::{VERSION, build};
use crate::render::{Report, Table, count_of, human, json_of};

/// The noise sampler as a command-line value: [`SamplerKind`] with its help and the alias
/// `secure` for `discrete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampler(pub SamplerKind);

impl ValueEnum for Sampler {
    fn value_variants<'a>() -> &'a [Self] {
        &[Sampler(SamplerKind::Discrete), Sampler(SamplerKind::Float)]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let value = PossibleValue::new(self.0.name());
        Some(match self.0 {
            SamplerKind::Discrete => value
                .help("Exact discrete Laplace on the integers (release-grade; integer counts within ±2^52)")
                .alias("secure"),
            SamplerKind::Float => value.help("Inverse-CDF float Laplace: fast, any data, NOT release-grade"),
            _ => value,
        })
    }
}

/// The `--interval level` intervals of a run's raw releases ([`Run::intervals`]), or `None`
/// without the flag.
///
/// # Errors
/// A release whose noise has no interval (a fresh step without publication budget).
pub fn raw_intervals(
    run: &Run,
    sensitivity: f64,
    sampler: SamplerKind,
    level: Option<f64>,
) -> Result<Option<Intervals>> {
    level
        .map(|level| run.intervals(sensitivity, sampler, level))
        .transpose()
        .map_err(|e| CliError::Usage(format!("--interval: {e}")))
}

/// The scheme named on the command line.
pub fn parse_scheme(name: &str) -> std::result::Result<SchemeKind, String> {
    SchemeKind::from_name(name).ok_or_else(|| {
        let schemes = tpl_mechanisms::SchemeRegistry::built_in();
        format!("unknown scheme {name:?}; one of: {}", schemes.names().join(", "))
    })
}

/// A finished release, with how it was made (also the output of `tpl stream push` and
/// `export`, whose steps carry their stream step numbers and keys).
pub struct ReleaseReport {
    /// The command, for the provenance line (`release`, `stream push`, `stream export`).
    pub command: &'static str,
    pub(crate) scheme: String,
    pub(crate) epsilon: f64,
    pub(crate) window: usize,
    pub(crate) sensitivity: f64,
    pub(crate) sampler: SamplerKind,
    pub(crate) seeded: bool,
    /// The input's `timestamp_bucket` of each step, when it has that column.
    pub(crate) buckets: Option<Vec<u64>>,
    pub(crate) matrices: MatricesUsed,
    pub(crate) run: Run,
    /// Per-cell intervals of the releases, with `--interval`.
    pub(crate) intervals: Option<Intervals>,
    /// Stream steps: t, key, whether the stored release was returned, and why a step was
    /// refused; `None` for `tpl release` (t = 1..T, key = t).
    pub(crate) stream: Option<StreamSteps>,
}

/// The JSON of a release: the library's fields, and a stream's.
#[derive(Serialize)]
struct Fields<'a> {
    #[serde(flatten)]
    release: ReleaseOutput<'a>,
    #[serde(flatten)]
    stream: Option<StreamFields<'a>>,
}

/// The JSON fields of a stream's steps beside the release's: `key`, `replayed`, `refused`
/// and, when the stream stores estimates, `estimator` and `estimates` (null for a step the
/// filter could not estimate; its reason on `stream export --estimates`) and, with
/// `--interval`, `estimates_lower` and `estimates_upper` at the same level.
#[derive(Serialize)]
struct StreamFields<'a> {
    key: &'a [i64],
    replayed: &'a [bool],
    refused: &'a [Option<String>],
    #[serde(skip_serializing_if = "Option::is_none")]
    estimator: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    estimates: Option<Vec<Option<&'a Vec<f64>>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    estimates_lower: Option<Vec<Option<Vec<f64>>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    estimates_upper: Option<Vec<Option<Vec<f64>>>>,
}

/// The per-step extras of a stream's releases.
pub struct StreamSteps {
    /// t of each step.
    pub t: Vec<usize>,
    /// Its key.
    pub key: Vec<i64>,
    /// True when the push returned the stored release (nothing spent).
    pub replayed: Vec<bool>,
    /// Why the stream's checks refused the step, if they did.
    pub refused: Vec<Option<String>>,
    /// The causal estimate stored with each step (`Err`: why the filter could not make it),
    /// and the estimator, when the stream stores estimates.
    pub estimates: Option<(String, Vec<tpl_stream::StepEstimate>)>,
    /// The publication budget of the release the first steps repeat, when it was published
    /// before them (a push that starts with a repeat), for their intervals.
    pub carried: Option<f64>,
}

impl StreamSteps {
    /// The JSON fields of these steps, the estimates' intervals at `level` when given.
    fn fields(&self, level: Option<f64>) -> StreamFields<'_> {
        let estimates = self.estimates.as_ref();
        let ends = level.zip(estimates).map(|(level, (_, estimates))| {
            estimates
                .iter()
                .map(|e| e.interval(level).ok().flatten().map_or((None, None), |(l, h)| (Some(l), Some(h))))
                .unzip()
        });
        let (estimates_lower, estimates_upper) = ends.map_or((None, None), |(l, h)| (Some(l), Some(h)));
        StreamFields {
            key: &self.key,
            replayed: &self.replayed,
            refused: &self.refused,
            estimator: estimates.map(|(name, _)| name.as_str()),
            estimates: estimates.map(|(_, e)| e.iter().map(|e| e.estimate.as_ref().ok()).collect()),
            estimates_lower,
            estimates_upper,
        }
    }
}

impl ReleaseReport {
    /// The releases of stream steps (`tpl stream push`, `tpl stream export`).
    pub fn of_stream(
        command: &'static str,
        config: &tpl_stream::StreamConfig,
        run: Run,
        steps: StreamSteps,
        interval: Option<f64>,
    ) -> Result<Self> {
        let intervals = interval
            .map(|level| run.intervals_after(config.sensitivity, config.sampler, level, steps.carried))
            .transpose()
            .map_err(|e| CliError::Usage(format!("--interval: {e}")))?;
        Ok(Self {
            command,
            scheme: config.scheme.name().to_owned(),
            epsilon: config.epsilon,
            window: config.window,
            sensitivity: config.sensitivity,
            sampler: config.sampler,
            seeded: false,
            buckets: None,
            matrices: MatricesUsed::stored(config),
            run,
            intervals,
            stream: Some(steps),
        })
    }

    /// t of row i.
    fn t(&self, i: usize) -> usize {
        self.stream.as_ref().map_or(i + 1, |s| s.t[i])
    }

    /// The key of row i (the CSV's `timestamp_bucket`).
    fn key(&self, i: usize) -> i64 {
        self.stream.as_ref().map_or(i as i64 + 1, |s| s.key[i])
    }
}

/// The correlation matrices a release was given (the pba scheme's pool depends on them).
pub(crate) struct MatricesUsed {
    pub(crate) backward: Option<MatrixUsed>,
    pub(crate) forward: Option<MatrixUsed>,
}

impl MatricesUsed {
    pub(crate) fn new(corr: &CorrelationArgs, correlation: &Correlation) -> Self {
        let used = |path: &Option<PathBuf>, m: Option<&TransitionMatrix>| {
            path.as_deref().zip(m).map(|(p, m)| MatrixUsed {
                file: Some(text::name(p)),
                n: m.n(),
                normalize: corr.matrices.normalize,
                smoothing: corr.matrices.smoothing,
            })
        };
        Self {
            backward: used(&corr.backward, correlation.backward()),
            forward: used(&corr.forward, correlation.forward()),
        }
    }

    /// The matrices a stream stored at `init` (their contents live in the stream file).
    fn stored(config: &tpl_stream::StreamConfig) -> Self {
        let one = |m: Option<&TransitionMatrix>| {
            m.map(|m| MatrixUsed {
                file: Some("(stored in the stream)".to_string()),
                n: m.n(),
                normalize: false,
                smoothing: None,
            })
        };
        Self { backward: one(config.correlation.backward()), forward: one(config.correlation.forward()) }
    }

    /// ` backward=FILE(n=N)` for each matrix given, and how they were read; empty without.
    fn provenance(&self) -> String {
        let mut out = String::new();
        for (side, m) in [("backward", &self.backward), ("forward", &self.forward)] {
            if let Some(m) = m {
                out.push_str(&format!(" {side}={}(n={})", m.file.as_deref().unwrap_or("array"), m.n));
            }
        }
        if let Some(m) = self.backward.as_ref().or(self.forward.as_ref()) {
            if m.normalize {
                out.push_str(" normalize=true");
            }
            if let Some(s) = m.smoothing {
                out.push_str(&format!(" smoothing={}", Short(s)));
            }
        }
        out
    }
}

impl ReleaseReport {
    /// How the release was made, in one line (the CSV's leading `#` comment).
    fn provenance(&self) -> String {
        format!(
            "tpl {VERSION} {}: scheme={} epsilon={} window={} sensitivity={} sampler={} seeded={}{}",
            self.command,
            self.scheme,
            Short(self.epsilon),
            self.window,
            Short(self.sensitivity),
            self.sampler.name(),
            self.seeded,
            self.matrices.provenance()
        )
    }
}

impl Report for ReleaseReport {
    fn array(&self) -> Option<(Vec<usize>, Vec<f64>)> {
        Some(crate::render::rows_array(&self.run.releases))
    }

    fn json(&self) -> Value {
        let t: Vec<usize> = (0..self.run.published.len()).map(|i| self.t(i)).collect();
        let release = ReleaseOutput {
            scheme: &self.scheme,
            epsilon: self.epsilon,
            window: self.window,
            sensitivity: self.sensitivity,
            sampler: self.sampler,
            seeded: self.seeded,
            build: Some(&build()),
            t: Some(&t),
            run: &self.run,
            backward: self.matrices.backward.as_ref(),
            forward: self.matrices.forward.as_ref(),
            intervals: self.intervals.as_ref(),
            arrays: true,
        };
        let level = self.intervals.as_ref().map(|i| i.level);
        json_of(&Fields { release, stream: self.stream.as_ref().map(|s| s.fields(level)) })
    }

    fn csv(&self) -> String {
        let r = &self.run;
        let rows = (0..r.published.len()).map(|t| ReleaseRow {
            key: match (&self.stream, &self.buckets) {
                (Some(_), _) => self.key(t).into(),
                (None, Some(buckets)) => buckets[t].into(),
                (None, None) => t as i128 + 1,
            },
            published: r.published[t],
            budget: r.spent[t].total(),
            publication_budget: if r.published[t] { r.spent[t].publication } else { 0.0 },
            release: &r.releases[t],
            interval: self.intervals.as_ref().map(|i| (&i.lower[t][..], &i.upper[t][..])),
        });
        let cells = r.releases.first().map_or(0, Vec::len);
        release_csv_text(&self.provenance(), cells, self.intervals.is_some(), rows)
    }

    fn table(&self) -> String {
        let r = &self.run;
        let published = r.published.iter().filter(|&&p| p).count();
        let mut t = Table::new(&["t", "published", "ε_t", "release (first cells)"]);
        for i in 0..r.published.len() {
            let cells: Vec<String> = r.releases[i].iter().take(4).map(|&v| human(v)).collect();
            let more = if r.releases[i].len() > 4 { ", …" } else { "" };
            let note = match &self.stream {
                Some(s) if s.refused[i].is_some() => " (refused)",
                Some(s) if s.replayed[i] => " (stored)",
                _ => "",
            };
            t.row(vec![
                self.t(i).to_string(),
                format!("{}{note}", if r.published[i] { "yes" } else { "-" }),
                human(r.spent[i].total()),
                format!("{}{more}", cells.join(", ")),
            ]);
        }
        t.elide(5);
        let interval_line = match &self.intervals {
            Some(i) => format!(
                "{} % intervals of the raw releases in the JSON and CSV (`lower`/`upper`, `lo_c…`/`hi_c…`): \
                 a fresh release ± its noise quantile; a repeat carries its publication's.\n",
                human(100.0 * i.level)
            ),
            None => String::new(),
        };
        let replayed = |i: usize| self.stream.as_ref().is_some_and(|s| s.replayed[i]);
        let stream_line = match &self.stream {
            Some(s) if self.command == "stream export" => format!(
                "Every step of the stream, {} refused by the stream's checks (the last release repeated).\n",
                s.refused.iter().filter(|r| r.is_some()).count()
            ),
            Some(s) => format!(
                "{} new, {} returned as stored (nothing spent), {} refused by the stream's checks (the last \
                 release repeated).\n",
                count_of(s.replayed.iter().filter(|&&r| !r).count(), "step"),
                s.replayed.iter().filter(|&&r| r).count(),
                s.refused.iter().filter(|r| r.is_some()).count()
            ),
            None => String::new(),
        };
        let steps = r.published.len();
        let spend = if (0..steps).all(replayed) {
            "every step was stored already: nothing spent (the stream's windows: tpl stream status)"
                .to_string()
        } else if self.scheme == SchemeKind::Laplace.name() {
            // Event level: ε bounds each step, not windows.
            let most = (0..steps).filter(|&i| !replayed(i)).map(|i| r.spent[i].total()).fold(0.0, f64::max);
            format!(
                "each step spends at most {} (ε = {} per step, event level)",
                human(most),
                human(self.epsilon)
            )
        } else {
            format!(
                "every window of {} spends at most {} (ε = {})",
                count_of(self.window, "step"),
                human(r.max_window_budget),
                human(self.epsilon)
            )
        };
        format!(
            "{stream_line}Scheme {}: {}, {} ({:.1} %); {spend}.\n\
             Sensitivity Δ = {}, {} sampler{}, {}{}.\n{interval_line}\n{}",
            self.scheme,
            count_of(steps, "step"),
            count_of(published, "fresh publication"),
            100.0 * published as f64 / steps.max(1) as f64,
            human(self.sensitivity),
            self.sampler.name(),
            if self.sampler == SamplerKind::Float { " (NOT release-grade)" } else { "" },
            if self.seeded { "seeded (reproducible, NOT private)" } else { "OS randomness" },
            format_args!("; tpl {VERSION}"),
            t.render()
        )
    }
}
