//! The comparison behind `tpl compare` and `tpl demo`: the flags, the run through
//! `tpl-compare`, and the table, CSV, JSON and chart of its rows.

use serde_json::Value;
use tpl_compare::{Comparison, Seed, Setup, Strategy, compare};
use tpl_core::{Short, TransitionMatrix};
use tpl_postprocess::Estimator;

use crate::chart::{Point, Scatter};
use crate::error::Result;
use crate::html::{self, Cell, Section};
use crate::matrix_source::MatrixSource;
use crate::progress;
use crate::provenance::VERSION;
use crate::render::{Report, Table, csv_text, human};

/// The comparison table: the library's result, and where its matrices came from, rendered
/// and drawn here.
pub struct CompareReport(pub Comparison, pub MatrixSource, pub PostprocessDefault);

/// Whether the estimator of a comparison's post-processed rows was the default (`--postprocess`
/// without a name: the offline default `smooth`) rather than named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostprocessDefault(pub bool);

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
    /// The estimator of the post-processed rows, if any, and whether it was the default.
    pub postprocess: Option<(Estimator, PostprocessDefault)>,
    /// Whether the post-processed rows come with the `+kalman` baseline's.
    pub baseline: bool,
    /// --seed.
    pub seed: Option<u64>,
}

/// Runs the comparison of `tpl-compare`, with a progress bar on a terminal; `matrices` says
/// where `backward` and `forward` came from and which steps `truth` is.
pub fn run_comparison(
    truth: &[Vec<f64>],
    backward: Option<&TransitionMatrix>,
    forward: Option<&TransitionMatrix>,
    matrices: MatrixSource,
    o: &Options,
    strategies: &[Strategy],
) -> Result<CompareReport> {
    let setup = Setup::new(truth, o.epsilon, o.window)
        .backward(backward)
        .forward(forward)
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
    let by_default = o.postprocess.map_or(PostprocessDefault(false), |(_, d)| d);
    Ok(CompareReport(comparison?, matrices, by_default))
}

impl CompareReport {
    /// The error-vs-leakage chart (`tpl compare --chart`, docs/cli.md §2.9) as an SVG document: one labelled point per strategy that
    /// ran at its realised leakage (largest leakage of W consecutive steps, ε units) and mean
    /// squared error (people² per cell and step), and, for a scheme whose guaranteed leakage
    /// is higher, a second point at the guaranteed leakage (same error) in a group of its
    /// own, joined to the first by a thin line of the scheme's colour. `data` names the
    /// counts in the title.
    pub fn chart_svg(&self, data: &str) -> Result<String> {
        let baseline = self
            .0
            .rows
            .iter()
            .find(|r| r.base.is_none())
            .and_then(|r| r.outcome.as_ref().ok())
            .map(|s| s.mse.mean);
        // (row index, point) of every strategy that ran.
        let realised: Vec<(usize, Point)> = (self.0.rows.iter().enumerate())
            .filter_map(|(k, r)| {
                let s = r.outcome.as_ref().ok()?;
                let group = match (r.base.as_ref()?, r.map) {
                    (Strategy::Scheme(_) | Strategy::Custom(_), m) => usize::from(m) * 2,
                    (_, m) => 1 + usize::from(m) * 2,
                };
                Some((k, Point { label: r.strategy.clone(), x: s.max_window_leakage, y: s.mse.mean, group }))
            })
            .collect();
        let mut joins = Vec::new();
        let mut guaranteed = Vec::new();
        // The guaranteed leakage of the schemes that do not always spend their caps (the
        // others' coincides with the realised point), joined to the realised point.
        for (i, (k, _)) in realised.iter().enumerate() {
            let r = &self.0.rows[*k];
            let Some(s) = r.outcome.as_ref().ok().filter(|_| !r.map) else { continue };
            if s.guaranteed_max_window_leakage > s.max_window_leakage * (1.0 + 1e-9) {
                joins.push((i, realised.len() + guaranteed.len()));
                guaranteed.push(Point {
                    label: format!("{} (guaranteed)", r.strategy),
                    x: s.guaranteed_max_window_leakage,
                    y: s.mse.mean,
                    group: 4,
                });
            }
        }
        let points: Vec<Point> = realised.into_iter().map(|(_, p)| p).chain(guaranteed).collect();
        let title = format!(
            "Error vs. leakage: {data} (ε = {}, w = {}, α = {})",
            human(self.0.epsilon),
            self.0.window,
            human(self.0.alpha)
        );
        let x_label = format!(
            "largest leakage of {} consecutive steps under the correlation (ε units, log scale)",
            self.0.window
        );
        Scatter {
            title: &title,
            x_label: &x_label,
            y_label: "mean squared error per cell and step (people², log scale)",
            groups: &[
                "w-event schemes",
                "TPL allocators",
                "schemes, post-processed",
                "allocators, post-processed",
                "schemes: guaranteed over every run",
            ],
            points: &points,
            reference: baseline.map(|y| ("no release: prior mean (leaks 0)", y)),
            joins: &joins,
        }
        .svg()
    }
}

/// The column titles of the comparison table, text and HTML.
const HEADER: [&str; 9] = [
    "strategy",
    "MAE",
    "MSE (± sd)",
    "max w-budget",
    "max TPL",
    "max w-leakage",
    "guar. max TPL",
    "guar. max w-leakage",
    "published",
];

/// What the table says of how errors and leakage are measured.
const MEASURES: &str = "Error is per cell and step; leakage is audited under the given correlation, each step \
    spending ε_t·2/Δ against one person's change: max = the worst of the runs drawn (realised), guar. = a bound \
    over every run the strategy could produce (guaranteed; equal for budgets fixed in advance).";

/// The comparison on a page (`tpl compare --report`, `tpl demo`'s report).
impl CompareReport {
    /// The rows of the table, one per strategy, and the reasons of the strategies that
    /// cannot run ("strategy: why", each reason once).
    fn rows(&self) -> (Vec<Vec<Cell>>, Vec<String>) {
        let mut rows = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        for r in &self.0.rows {
            match &r.outcome {
                Ok(s) => rows.push(vec![
                    Cell::text(r.strategy.clone()),
                    Cell::number(s.mae.mean),
                    Cell::numeric(format!("{} ± {}", human(s.mse.mean), human(s.mse.std))),
                    Cell::number(s.max_window_budget),
                    Cell::number(s.max_tpl),
                    Cell::number(s.max_window_leakage),
                    Cell::number(s.guaranteed_max_tpl),
                    Cell::number(s.guaranteed_max_window_leakage),
                    Cell::numeric(format!("{:.1} %", 100.0 * s.published_fraction)),
                ]),
                Err(why) => {
                    let why = why.to_string();
                    if !notes.iter().any(|n| n.ends_with(why.as_str())) {
                        notes.push(format!("{}: {why}", r.strategy));
                    }
                    let mut row = vec![Cell::text(r.strategy.clone()), Cell::numeric("-")];
                    row.push(Cell::numeric("cannot run (see below)"));
                    row.extend((0..6).map(|_| Cell::numeric("-")));
                    rows.push(row);
                }
            }
        }
        (rows, notes)
    }

    /// The parameters of the comparison, as (term, value) for a page.
    pub fn html_parameters(&self) -> Vec<(String, String)> {
        let c = &self.0;
        let seed = if c.seeded {
            format!("{} (given: the releases are reproducible, hence NOT private)", c.seed)
        } else {
            format!("{} (drawn from the operating system)", c.seed)
        };
        vec![
            ("strategies".into(), c.rows.len().to_string()),
            ("steps × cells".into(), format!("{} × {}", c.horizon, c.cells)),
            ("runs per strategy".into(), c.runs.to_string()),
            ("seed".into(), seed),
            ("schemes".into(), format!("ε = {} per window of {} steps", human(c.epsilon), c.window)),
            ("allocators".into(), format!("α = {}", human(c.alpha))),
            ("sensitivity Δ".into(), human(c.sensitivity)),
            ("post-processing".into(), c.postprocess.map_or("none".into(), |e| e.to_string())),
            ("matrices".into(), self.1.sentence()),
        ]
    }

    /// Appends the comparison to `section`: its parameters, how it measures, the table and
    /// why some strategies cannot run.
    pub fn html_into(&self, section: &mut Section) {
        let (rows, notes) = self.rows();
        let mut table = html::Table::new(&HEADER);
        for row in rows {
            table.row(row);
        }
        section.definitions(&self.html_parameters()).paragraph(MEASURES).table(&table);
        if !notes.is_empty() {
            section.paragraph("Why some strategies cannot run:").list(&notes);
        }
    }
}

impl Report for CompareReport {
    fn json(&self) -> Value {
        let mut out = serde_json::to_value(&self.0).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut out {
            map.insert("version".into(), VERSION.into());
            map.insert("build".into(), crate::provenance::build_json());
            if self.0.postprocess.is_some() {
                map.insert("postprocess_default".into(), self.2.0.into());
            }
            map.insert("matrices".into(), self.1.json());
        }
        out
    }

    fn csv(&self) -> String {
        let header = [
            "strategy",
            "mae",
            "mae_std",
            "mse",
            "mse_std",
            "max_window_budget",
            "max_tpl",
            "max_window_leakage",
            "guaranteed_max_tpl",
            "guaranteed_max_window_leakage",
            "published_fraction",
            "error",
        ];
        let c = &self.0;
        // A `#` line first, as in the CSV of `tpl release`: how the comparison was made.
        let seed = if c.seeded { format!(" seed={}", c.seed) } else { String::new() };
        let post = c.postprocess.map_or(String::new(), |e| format!(" postprocess={e}"));
        let mut out = format!(
            "# tpl {VERSION} compare: epsilon={} window={} alpha={} sensitivity={} runs={} seeded={}{seed} \
             steps={} cells={}{post}\n",
            Short(c.epsilon),
            c.window,
            Short(c.alpha),
            Short(c.sensitivity),
            c.runs,
            c.seeded,
            c.horizon,
            c.cells
        );
        out.push_str(&self.1.csv_line());
        out.push_str(&csv_text(|w| {
            w.record(header)?;
            for r in &self.0.rows {
                w.field(&r.strategy)?;
                match &r.outcome {
                    Ok(s) => {
                        let (mae, mse) = (&s.mae, &s.mse);
                        for v in [mae.mean, mae.std, mse.mean, mse.std, s.max_window_budget, s.max_tpl] {
                            w.value(v)?;
                        }
                        w.value(s.max_window_leakage)?;
                        w.value(s.guaranteed_max_tpl)?;
                        w.value(s.guaranteed_max_window_leakage)?;
                        w.value(s.published_fraction)?;
                        w.field("")?;
                    }
                    Err(why) => {
                        for _ in 0..10 {
                            w.field("")?;
                        }
                        w.field(&why.to_string())?;
                    }
                }
                w.end()?;
            }
            Ok(())
        }));
        out
    }

    fn table(&self) -> String {
        let mut t = Table::new(&HEADER);
        let (rows, notes) = self.rows();
        for row in rows {
            t.row(
                row.into_iter()
                    .map(|c| match c {
                        Cell::Text(s) | Cell::Number(s) => s,
                    })
                    .collect(),
            );
        }
        let mut out = format!(
            "{} strategies on {} steps × {} cells, {} run(s) each (seed {}{}); schemes: ε = {} per {} steps, allocators: α = {}; \
             sensitivity Δ = {}.\n{MEASURES}\n{}\n\n{}",
            self.0.rows.len(),
            self.0.horizon,
            self.0.cells,
            self.0.runs,
            self.0.seed,
            if self.0.seeded { ", given: NOT private" } else { "" },
            human(self.0.epsilon),
            self.0.window,
            human(self.0.alpha),
            human(self.0.sensitivity),
            self.1.sentence(),
            t.render()
        );
        if !notes.is_empty() {
            out.push_str("\nWhy some strategies cannot run:\n");
            for note in notes {
                out.push_str(&format!("  {note}\n"));
            }
        }
        out
    }
}
