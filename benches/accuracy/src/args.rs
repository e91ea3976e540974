//! The command line of `accuracy-grid` and the grid it resolves to: explicit flags first,
//! then the `--quick` subset, then the full grid's defaults.

use std::path::PathBuf;

use clap::Parser;
use tpl_compare::Strategy;
use tpl_postprocess::Estimator;

use crate::chains::Shape;

/// The accuracy stress grid: every estimator against the raw release, the best centred
/// moving average (an oracle) and the Kalman baseline, over streams × schemes × matrices ×
/// ε, worst cell first.
#[derive(Debug, Parser)]
#[command(name = "accuracy-grid", version)]
pub struct Args {
    /// Streams to run, comma-separated: ais (the AIS week of testdata), flights (the US
    /// flights day of testdata), uniform (synthetic, 20 cells), out (synthetic, 40 cells,
    /// OUT-dominant). Default: all.
    #[arg(long, visible_alias = "filter-streams", value_delimiter = ',')]
    pub streams: Option<Vec<String>>,
    /// Synthetic population sizes N. Default: 100,1000,10000,100000.
    #[arg(long, value_delimiter = ',')]
    pub populations: Option<Vec<usize>>,
    /// Synthetic steps the matrices are estimated from (the first ones).
    #[arg(long, default_value_t = 200)]
    pub train_steps: usize,
    /// Synthetic steps released and scored (the ones after the training steps).
    #[arg(long, default_value_t = 200)]
    pub score_steps: usize,
    /// Matrix variants, comma-separated: estimated, smooth0.001, smooth0.01, smooth0.1,
    /// permuted (a stream runs those it has). Default: all.
    #[arg(long, value_delimiter = ',')]
    pub matrices: Option<Vec<String>>,
    /// Schemes, comma-separated: laplace, uniform, sample, bd, ba, pba, planned (the window
    /// allocator's budgets), dsat, fast. Default: all but dsat and fast.
    #[arg(long, value_delimiter = ',')]
    pub schemes: Option<Vec<String>>,
    /// Budgets ε per window. Default: 0.1,1,10.
    #[arg(long, value_delimiter = ',')]
    pub epsilons: Option<Vec<f64>>,
    /// Estimators, comma-separated (names of `tpl postprocess --estimator`). Default: every
    /// estimator but map-integer.
    #[arg(long, value_delimiter = ',')]
    pub estimators: Option<Vec<String>>,
    /// Also run map-integer (slow at large N).
    #[arg(long)]
    pub map_integer: bool,
    /// The window w of the w-event schemes and of the window allocator.
    #[arg(long, default_value_t = 10)]
    pub window: usize,
    /// Seeds (noise draws) per cell. Default: 5.
    #[arg(long)]
    pub seeds: Option<usize>,
    /// The base seed of the populations, the chains and the noise.
    #[arg(long, default_value_t = 2024)]
    pub seed: u64,
    /// Also measure the coverage of 90 % bootstrap intervals of every estimator.
    #[arg(long)]
    pub intervals: bool,
    /// Bootstrap replicates per interval (with --intervals).
    #[arg(long, default_value_t = 50)]
    pub replicates: usize,
    /// The CSV written, one row per cell.
    #[arg(long, default_value = "target/accuracy-grid.csv")]
    pub out: PathBuf,
    /// A small grid for smoke tests: N = 1000, ε = 1, schemes laplace, sample, bd, 2 seeds
    /// (flags given explicitly still win).
    #[arg(long)]
    pub quick: bool,
    /// Print only the K worst cells in the table (the CSV holds them all).
    #[arg(long)]
    pub top: Option<usize>,
    /// The AIS user stream (timestamp_bucket,user_id,location_cell).
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/ais_nyharbor_week_5min/stream.csv"))]
    pub ais: PathBuf,
    /// The flights user stream (timestamp_bucket,user_id,location_cell).
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/flights_us_day_5min/stream.csv"))]
    pub flights: PathBuf,
}

/// A scheme of the grid: its label and the strategy that releases it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheme {
    /// The label of the scheme column.
    pub label: &'static str,
    /// The strategy of `tpl-compare` run for it.
    pub strategy: Strategy,
}

/// Every scheme: the six w-event schemes, then `planned` (the window allocator's budgets
/// released by the planned scheme), then those of the benchmark set (`dsat`, `fast`).
pub fn all_schemes() -> Vec<Scheme> {
    let kind = |k: tpl_mechanisms::SchemeKind| Scheme { label: k.name(), strategy: Strategy::Scheme(k) };
    let more = tpl_mechanisms::SchemeKind::BUILT_IN
        .into_iter()
        .filter(|k| !tpl_mechanisms::SchemeKind::ALL.contains(k));
    tpl_mechanisms::SchemeKind::ALL
        .into_iter()
        .map(kind)
        .chain([Scheme { label: "planned", strategy: Strategy::Window }])
        .chain(more.filter(|k| *k != tpl_mechanisms::SchemeKind::Planned).map(kind))
        .collect()
}

/// The names of every matrix variant a stream may have.
pub fn variant_names() -> Vec<String> {
    let smooth = crate::streams::SYNTHETIC_SMOOTHINGS.iter().map(|s| format!("smooth{s}"));
    ["estimated".to_owned()].into_iter().chain(smooth).chain(["permuted".to_owned()]).collect()
}

/// The grid to run, resolved from [`Args`].
#[derive(Debug, Clone)]
pub struct Config {
    /// The real streams to run: their name and user-stream file.
    pub real: Vec<(&'static str, PathBuf)>,
    /// The synthetic shapes to run.
    pub shapes: Vec<Shape>,
    /// Synthetic population sizes.
    pub populations: Vec<usize>,
    /// Synthetic training steps.
    pub train_steps: usize,
    /// Synthetic scored steps.
    pub score_steps: usize,
    /// Matrix variants run (`None`: all).
    pub matrices: Option<Vec<String>>,
    /// Schemes.
    pub schemes: Vec<Scheme>,
    /// Budgets ε.
    pub epsilons: Vec<f64>,
    /// Estimators with a row each.
    pub estimators: Vec<Estimator>,
    /// The w of the schemes.
    pub window: usize,
    /// Seeds per cell.
    pub seeds: usize,
    /// The base seed.
    pub seed: u64,
    /// Bootstrap replicates, when intervals are measured.
    pub replicates: Option<usize>,
    /// The CSV path.
    pub out: PathBuf,
    /// Table rows shown.
    pub top: Option<usize>,
}

impl Args {
    /// The grid these flags ask for.
    ///
    /// # Errors
    /// An unknown stream, scheme or estimator name, or a number out of range, as a message.
    pub fn resolve(self) -> Result<Config, String> {
        let quick = self.quick;
        let streams =
            self.streams.unwrap_or_else(|| ["ais", "flights", "uniform", "out"].map(String::from).to_vec());
        let mut shapes = Vec::new();
        let mut real = Vec::new();
        for s in &streams {
            match s.as_str() {
                "ais" => real.push(("ais-nyharbor", self.ais.clone())),
                "flights" => real.push(("flights-us", self.flights.clone())),
                name => {
                    shapes.push(Shape::ALL.into_iter().find(|sh| sh.name() == name).ok_or_else(|| {
                        format!("--streams: unknown stream {name:?} (ais, flights, uniform, out)")
                    })?)
                }
            }
        }
        let populations = self
            .populations
            .unwrap_or_else(|| if quick { vec![1000] } else { vec![100, 1000, 10_000, 100_000] });
        if populations.contains(&0) {
            return Err("--populations: a population needs at least one person".into());
        }
        if let Some(bad) = self.matrices.iter().flatten().find(|m| !variant_names().contains(m)) {
            return Err(format!("--matrices: unknown variant {bad:?} ({})", variant_names().join(", ")));
        }
        let scheme_names = self.schemes.unwrap_or_else(|| {
            let names: &[&str] = if quick {
                &["laplace", "sample", "bd"]
            } else {
                &["laplace", "uniform", "sample", "bd", "ba", "pba", "planned"]
            };
            names.iter().map(|s| (*s).to_owned()).collect()
        });
        let schemes = scheme_names
            .iter()
            .map(|name| {
                all_schemes().into_iter().find(|s| s.label == name).ok_or_else(|| {
                    let names: Vec<&str> = all_schemes().iter().map(|s| s.label).collect();
                    format!("--schemes: unknown scheme {name:?} ({})", names.join(", "))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let epsilons = self.epsilons.unwrap_or_else(|| if quick { vec![1.0] } else { vec![0.1, 1.0, 10.0] });
        if let Some(e) = epsilons.iter().find(|e| !(e.is_finite() && **e > 0.0)) {
            return Err(format!("--epsilons: {e} is not finite and > 0"));
        }
        let mut estimators = match self.estimators {
            Some(names) => names
                .iter()
                .map(|n| n.parse::<Estimator>().map_err(|e| format!("--estimators: {e}")))
                .collect::<Result<Vec<_>, _>>()?,
            None => Estimator::ALL.into_iter().filter(|e| *e != Estimator::MapInteger).collect(),
        };
        if self.map_integer && !estimators.contains(&Estimator::MapInteger) {
            estimators.push(Estimator::MapInteger);
        }
        if self.window == 0 {
            return Err("--window: must be at least 1".into());
        }
        if self.train_steps < 2 || self.score_steps < self.window {
            return Err(format!(
                "--train-steps {} --score-steps {}: at least 2 training steps and a window's worth of scored steps",
                self.train_steps, self.score_steps
            ));
        }
        let seeds = self.seeds.unwrap_or(if quick { 2 } else { 5 });
        if seeds == 0 {
            return Err("--seeds: at least one".into());
        }
        if self.intervals && self.replicates < 2 {
            return Err("--replicates: at least 2".into());
        }
        Ok(Config {
            real,
            shapes,
            populations,
            train_steps: self.train_steps,
            score_steps: self.score_steps,
            matrices: self.matrices,
            schemes,
            epsilons,
            estimators,
            window: self.window,
            seeds,
            seed: self.seed,
            replicates: self.intervals.then_some(self.replicates),
            out: self.out,
            top: self.top,
        })
    }
}
