//! `tpl release`: run a w-event stream scheme over a counts file (`docs/w-event.md`).

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde_json::{Value, json};
use tpl_core::{Short, TransitionMatrix};
use tpl_mechanisms::{
    DiscreteLaplace, FloatLaplace, LaplaceMechanism, MechError, NoiseSource, PbaCorrelation, Run,
    SchemeInputs, SchemeKind, run,
};

use crate::args::{CorrelationArgs, SeedArgs, WEventArgs};
use crate::budget_file::read_budgets;
use crate::counts_file::{Counts, check_counts, read_counts};
use crate::error::{CliError, Result};
use crate::provenance::{VERSION, note_seeded};
use crate::render::{Report, Table, csv_text, human};
use crate::text;

/// The noise sampler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Sampler {
    /// Exact discrete Laplace on the integers (release-grade; integer counts within ±2^52).
    #[value(alias = "secure")]
    Discrete,
    /// Inverse-CDF float Laplace: fast, any data, NOT release-grade.
    Float,
}

impl Sampler {
    /// The name in outputs (`"discrete"` or `"float"`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Discrete => "discrete",
            Self::Float => "float",
        }
    }
}

/// Arguments of `tpl release`.
#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// Counts file: one row per step (header `timestamp_bucket,c0,…` or headerless).
    #[arg(long, value_name = "FILE")]
    pub counts: PathBuf,
    /// Stream scheme: laplace (event level), uniform, sample, bd, ba, pba (needs --backward
    /// and/or --forward: they decide whether its correlation pool is used), or planned (needs
    /// --budgets).
    #[arg(long, value_parser = parse_scheme)]
    pub scheme: SchemeKind,
    #[command(flatten)]
    pub wevent: WEventArgs,
    #[command(flatten)]
    pub correlation: CorrelationArgs,
    /// The planned scheme's budgets ε_t, one per step (a budgets file, as for `tpl leakage`);
    /// every window of W steps must sum to at most ε.
    #[arg(long, value_name = "FILE")]
    pub budgets: Option<PathBuf>,
    #[command(flatten)]
    pub seed: SeedArgs,
    /// Noise sampler (`secure` is accepted for `discrete`).
    #[arg(long, value_enum, default_value_t = Sampler::Discrete)]
    pub sampler: Sampler,
}

/// The scheme named on the command line.
pub fn parse_scheme(name: &str) -> std::result::Result<SchemeKind, String> {
    SchemeKind::from_name(name).ok_or_else(|| {
        let all: Vec<&str> = SchemeKind::ALL.iter().chain(&[SchemeKind::Planned]).map(|k| k.name()).collect();
        format!("unknown scheme {name:?}; one of: {}", all.join(", "))
    })
}

/// A finished release, with how it was made (also the output of `tpl stream push` and
/// `export`, whose steps carry their stream step numbers and keys).
pub struct ReleaseReport {
    /// The command, for the provenance line (`release`, `stream push`, `stream export`).
    pub command: &'static str,
    scheme: &'static str,
    epsilon: f64,
    window: usize,
    sensitivity: f64,
    sampler: Sampler,
    seeded: bool,
    /// The input's `timestamp_bucket` of each step, when it has that column.
    buckets: Option<Vec<u64>>,
    matrices: MatricesUsed,
    run: Run,
    /// Stream steps: t, key, whether the stored release was returned, and why a step was
    /// refused; `None` for `tpl release` (t = 1..T, key = t).
    stream: Option<StreamSteps>,
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
}

impl ReleaseReport {
    /// The releases of stream steps (`tpl stream push`, `tpl stream export`).
    pub fn of_stream(
        command: &'static str,
        config: &tpl_stream::StreamConfig,
        run: Run,
        steps: StreamSteps,
    ) -> Self {
        let sampler = match config.sampler {
            tpl_stream::Sampler::Discrete => Sampler::Discrete,
            tpl_stream::Sampler::Float => Sampler::Float,
        };
        Self {
            command,
            scheme: config.scheme.name(),
            epsilon: config.epsilon,
            window: config.window,
            sensitivity: config.sensitivity,
            sampler,
            seeded: false,
            buckets: None,
            matrices: MatricesUsed::stored(config),
            run,
            stream: Some(steps),
        }
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

/// The correlation matrices a release was given (the pba scheme's pool depends on them):
/// file name and size of each, and how the files were read.
struct MatricesUsed {
    backward: Option<(String, usize)>,
    forward: Option<(String, usize)>,
    normalize: bool,
    smoothing: Option<f64>,
}

impl MatricesUsed {
    fn new(corr: &CorrelationArgs, pb: Option<&TransitionMatrix>, pf: Option<&TransitionMatrix>) -> Self {
        let used = |path: &Option<PathBuf>, m: Option<&TransitionMatrix>| {
            path.as_deref().zip(m).map(|(p, m)| (text::name(p), m.n()))
        };
        Self {
            backward: used(&corr.backward, pb),
            forward: used(&corr.forward, pf),
            normalize: corr.matrices.normalize,
            smoothing: corr.matrices.smoothing,
        }
    }

    /// The matrices a stream stored at `init` (their contents live in the stream file).
    fn stored(config: &tpl_stream::StreamConfig) -> Self {
        let one =
            |m: &Option<TransitionMatrix>| m.as_ref().map(|m| ("(stored in the stream)".to_string(), m.n()));
        Self {
            backward: one(&config.backward),
            forward: one(&config.forward),
            normalize: false,
            smoothing: None,
        }
    }

    fn json(&self) -> Value {
        let one = |m: &Option<(String, usize)>| {
            m.as_ref().map(|(file, n)| {
                json!({ "file": file, "n": n, "normalize": self.normalize, "smoothing": self.smoothing })
            })
        };
        json!({ "backward": one(&self.backward), "forward": one(&self.forward) })
    }

    /// ` backward=FILE(n=N)` for each matrix given, and how they were read; empty without.
    fn provenance(&self) -> String {
        let mut out = String::new();
        for (side, m) in [("backward", &self.backward), ("forward", &self.forward)] {
            if let Some((file, n)) = m {
                out.push_str(&format!(" {side}={file}(n={n})"));
            }
        }
        if !out.is_empty() {
            if self.normalize {
                out.push_str(" normalize=true");
            }
            if let Some(s) = self.smoothing {
                out.push_str(&format!(" smoothing={}", Short(s)));
            }
        }
        out
    }
}

/// Runs `tpl release`.
pub fn run_release(args: &ReleaseArgs) -> Result<ReleaseReport> {
    let params = args.wevent.params()?;
    let corr = &args.correlation;
    if args.scheme == SchemeKind::Pba && corr.backward.is_none() && corr.forward.is_none() {
        return Err(CliError::Usage(
            "--scheme pba needs --backward and/or --forward: its correlation pool depends on them".into(),
        ));
    }
    let plan = match (&args.budgets, args.scheme) {
        (Some(path), SchemeKind::Planned) => read_budgets(path)?,
        (None, SchemeKind::Planned) => {
            return Err(CliError::Usage("--scheme planned needs --budgets: the budget of every step".into()));
        }
        (Some(_), _) => return Err(CliError::Usage("--budgets is for --scheme planned only".into())),
        (None, _) => Vec::new(),
    };
    let counts = read_counts(&args.counts, false)?;
    let (pb, pf) = corr.read_for(counts.rows[0].len(), &args.counts)?;
    let matrices = MatricesUsed::new(corr, pb.as_ref(), pf.as_ref());
    let noise: Box<dyn NoiseSource> = match (args.sampler, args.seed.seed) {
        (Sampler::Discrete, Some(seed)) => Box::new(DiscreteLaplace::seeded(seed)),
        (Sampler::Discrete, None) => Box::new(DiscreteLaplace::from_os_rng()),
        (Sampler::Float, Some(seed)) => Box::new(FloatLaplace::seeded(seed)),
        (Sampler::Float, None) => Box::new(FloatLaplace::from_os_rng()),
    };
    let mechanism = LaplaceMechanism::new(noise);
    let hint = match args.sampler {
        Sampler::Discrete => " (--sampler float takes any data, but is not release-grade)",
        Sampler::Float => "",
    };
    check_counts(&mechanism, &args.counts, &counts, hint)?;
    let correlation = PbaCorrelation::from_matrices(pb.as_ref(), pf.as_ref());
    let kind = args.scheme;
    let inputs = SchemeInputs { correlation, plan };
    let mut scheme = kind.build(params, mechanism, inputs).map_err(|e| CliError::Mech {
        context: format!("{}: ", args.budgets.as_deref().unwrap_or(Path::new("--budgets")).display()),
        source: e,
    })?;
    let run =
        run(scheme.as_mut(), &counts.rows).map_err(|e| run_error(args, &counts, scheme.steps() + 1, e))?;
    // Said once the release exists (an error stays one line).
    note_seeded(args.seed.seed, "this release");
    if args.sampler == Sampler::Float {
        eprintln!(
            "tpl: warning: --sampler float is NOT release-grade: the low-order bits of float Laplace noise can \
             reveal the counts; release with the default discrete sampler"
        );
    }
    Ok(ReleaseReport {
        command: "release",
        scheme: kind.name(),
        epsilon: args.wevent.epsilon,
        window: args.wevent.window,
        sensitivity: args.wevent.sensitivity,
        sampler: args.sampler,
        seeded: args.seed.seed.is_some(),
        buckets: counts.buckets,
        matrices,
        run,
        stream: None,
    })
}

/// A failed step, blamed on what caused it: the budget (a noise scale the sampler cannot
/// take names `--epsilon`) or the counts file's line.
fn run_error(args: &ReleaseArgs, counts: &Counts, step: usize, e: MechError) -> CliError {
    match e {
        MechError::ScaleTooLarge { .. }
        | MechError::Core(tpl_core::CoreError::BadEpsilon(_))
        | MechError::BadScale(_) => CliError::Mech {
            context: format!(
                "--epsilon {} (with --window {} and --sensitivity {}): step {step}: ",
                Short(args.wevent.epsilon),
                args.wevent.window,
                Short(args.wevent.sensitivity)
            ),
            source: e,
        },
        MechError::NoiseOutOfRange => CliError::Mech { context: format!("step {step}: "), source: e },
        MechError::WindowSumOverflow { .. } => CliError::Mech {
            context: format!(
                "--epsilon {} (with --window {}): ",
                Short(args.wevent.epsilon),
                args.wevent.window
            ),
            source: e,
        },
        MechError::CountTooLarge { value, .. } => CliError::parse(
            &args.counts,
            counts.lines.get(step - 1).copied().unwrap_or(0),
            format!(
                "step {step}: the scheme's dissimilarity sum {value} is beyond ±2^52 = 4503599627370496, the \
                 largest value the exact integer release supports"
            ),
        ),
        other => {
            CliError::parse(&args.counts, counts.lines.get(step - 1).copied().unwrap_or(0), other.to_string())
        }
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
    fn json(&self) -> Value {
        let r = &self.run;
        let t: Vec<usize> = (0..r.published.len()).map(|i| self.t(i)).collect();
        let matrices = self.matrices.json();
        let mut out = json!({
            "scheme": self.scheme,
            "epsilon": self.epsilon,
            "window": self.window,
            "sensitivity": self.sensitivity,
            "sampler": self.sampler.name(),
            "seeded": self.seeded,
            "version": VERSION,
            "t": t,
            "published": r.published,
            "budget": r.budgets(),
            "releases": r.releases,
            "max_window_budget": r.max_window_budget,
            "backward": matrices["backward"],
            "forward": matrices["forward"],
        });
        if let (Some(s), Some(map)) = (&self.stream, out.as_object_mut()) {
            map.insert("key".into(), json!(s.key));
            map.insert("replayed".into(), json!(s.replayed));
            map.insert("refused".into(), json!(s.refused));
        }
        out
    }

    fn csv(&self) -> String {
        let r = &self.run;
        let d = r.releases.first().map_or(0, Vec::len);
        // A `#` line first: counts files skip it, so the CSV still reads back.
        let mut out = format!("# {}\n", self.provenance());
        out.push_str(&csv_text(|w| {
            for name in ["timestamp_bucket", "published", "budget", "publication_budget"] {
                w.field(name)?;
            }
            for j in 0..d {
                w.value(format_args!("c{j}"))?;
            }
            w.end()?;
            for t in 0..r.published.len() {
                let spent = r.spent[t];
                let fresh = if r.published[t] { spent.publication } else { 0.0 };
                match (&self.stream, &self.buckets) {
                    (Some(_), _) => w.value(self.key(t))?,
                    (None, Some(buckets)) => w.value(buckets[t])?,
                    (None, None) => w.value(t + 1)?,
                }
                w.value(u8::from(r.published[t]))?;
                w.value(spent.total())?;
                w.value(fresh)?;
                for v in &r.releases[t] {
                    w.value(v)?;
                }
                w.end()?;
            }
            Ok(())
        }));
        out
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
        let stream_line = match &self.stream {
            Some(s) => format!(
                "{} of these steps new, {} returned as stored (nothing spent), {} refused by the stream's checks \
                 (the last release repeated at ε_t = 0).\n",
                s.replayed.iter().filter(|&&r| !r).count(),
                s.replayed.iter().filter(|&&r| r).count(),
                s.refused.iter().filter(|r| r.is_some()).count()
            ),
            None => String::new(),
        };
        format!(
            "{stream_line}Scheme {}: {} steps, {} fresh publications ({:.1} %); every window of {} steps spends at most {} (ε = {}).\n\
             Sensitivity Δ = {}, {} sampler{}, {}{}.\n\n{}",
            self.scheme,
            r.published.len(),
            published,
            100.0 * published as f64 / r.published.len().max(1) as f64,
            self.window,
            human(r.max_window_budget),
            human(self.epsilon),
            human(self.sensitivity),
            self.sampler.name(),
            if self.sampler == Sampler::Float { " (NOT release-grade)" } else { "" },
            if self.seeded { "seeded (reproducible, NOT private)" } else { "OS randomness" },
            format_args!("; tpl {VERSION}"),
            t.render()
        )
    }
}
