//! `tpl compare`: every release strategy on one count stream, scored on error *and* on the
//! leakage the adversary's correlation really gives (TKDE Theorem 3 audit), with an
//! optional chart of error against leakage.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use tpl_compare::Strategy;
use tpl_mechanisms::{DiscreteLaplace, LaplaceMechanism};
use tpl_postprocess::Estimator;

use crate::args::{CorrelationArgs, SeedArgs, WEventArgs};
use crate::comparison_report::{CompareReport, Options, run_comparison};
use crate::counts_file::{check_counts, read_counts};
use crate::error::Result;
use crate::provenance::note_seeded;

/// Post-processing applied to every strategy's releases (in extra rows
/// `<strategy>+<name>`; `docs/map.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Postprocess {
    /// MAP with a prior whose strength is learned from the releases (the default of
    /// `tpl postprocess`).
    Map,
    /// MAP with the DBSec paper's prior at full strength.
    MapDbsec,
    /// Whole-sequence smoothing: every step from all releases, with --forward and, when
    /// given, --backward.
    Smooth,
}

impl Postprocess {
    /// The estimator of `tpl-postprocess` it runs.
    fn estimator(self) -> Estimator {
        match self {
            Self::Map => Estimator::Map,
            Self::MapDbsec => Estimator::MapDbsec,
            Self::Smooth => Estimator::Smooth,
        }
    }
}

/// Arguments of `tpl compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// True counts: one row per step (header `timestamp_bucket,c0,…` or headerless), integers.
    #[arg(long, value_name = "FILE")]
    pub counts: PathBuf,
    #[command(flatten)]
    pub wevent: WEventArgs,
    #[command(flatten)]
    pub correlation: CorrelationArgs,
    /// Strategies, comma-separated (default: all): laplace, uniform, sample, bd, ba, pba,
    /// upper-bound, quantified, window.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = Strategy::parse)]
    pub schemes: Option<Vec<Strategy>>,
    /// Leakage target α of the allocators (default: ε, so that `window` promises under
    /// correlation what the w-event schemes promise without it).
    #[arg(long, value_name = "A", allow_negative_numbers = true, value_parser = crate::text::finite_f64)]
    pub alpha: Option<f64>,
    /// Releases per strategy (errors are averaged, leakage is the worst run).
    #[arg(long, value_name = "R", default_value_t = 10)]
    pub runs: usize,
    /// Also score every strategy after post-processing (adds `<strategy>+<name>` rows, e.g.
    /// `bd+map`, and the data-free `prior-mean` row); --forward is the public prior.
    #[arg(long, value_enum, value_name = "NAME")]
    pub postprocess: Option<Postprocess>,
    #[command(flatten)]
    pub seed: SeedArgs,
    /// Write an SVG chart of error against audited leakage.
    #[arg(long, value_name = "FILE.svg")]
    pub chart: Option<PathBuf>,
}

/// Runs `tpl compare`.
pub fn run(args: &CompareArgs) -> Result<CompareReport> {
    let counts = read_counts(&args.counts, false)?;
    // The mechanism every run releases with, here only to check the counts (no draw).
    let validator = LaplaceMechanism::new(DiscreteLaplace::seeded(0));
    check_counts(&validator, &args.counts, &counts, "")?;
    let cells = counts.rows[0].len();
    let (backward, forward) = args.correlation.read_for(cells, &args.counts)?;
    let strategies = args.schemes.clone().unwrap_or_else(|| Strategy::ALL.to_vec());
    let report = run_comparison(
        &counts.rows,
        backward.as_ref(),
        forward.as_ref(),
        &Options {
            epsilon: args.wevent.epsilon,
            window: args.wevent.window,
            alpha: args.alpha,
            sensitivity: args.wevent.sensitivity,
            runs: args.runs,
            postprocess: args.postprocess.map(Postprocess::estimator),
            seed: args.seed.seed,
        },
        &strategies,
    )?;
    if let Some(path) = &args.chart {
        let name = args
            .counts
            .file_name()
            .map_or(args.counts.display().to_string(), |n| n.to_string_lossy().into_owned());
        report.chart(path, &name)?;
    }
    note_seeded(args.seed.seed, "these releases");
    Ok(report)
}
