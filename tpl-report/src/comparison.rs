//! A comparison ([`tpl_compare::Comparison`]) for people and machines: the table of
//! `tpl compare` (text, CSV and HTML), its JSON object, the error-against-leakage chart, and
//! the page of `tpl compare --report` and Python's `Comparison.report`.

use serde::{Serialize, Serializer};
use tpl_compare::{Comparison, Strategy};
use tpl_core::Short;

use crate::chart::{Point, Scatter};
use crate::html::{self, Cell, Page, Section};
use crate::matrices::MatrixSource;
use crate::text::{Table, human};
use crate::{Result, VERSION};

/// A comparison with what its outputs say about it: where its matrices came from, and
/// whether the estimator of its post-processed rows was the default.
#[derive(Debug, Clone)]
pub struct ComparisonReport {
    /// The library's result.
    pub comparison: Comparison,
    /// Where the matrices came from and which steps were scored.
    pub matrices: MatrixSource,
    /// Whether the estimator of the post-processed rows was the default (`--postprocess`
    /// without a name: the offline default `smooth`) rather than named.
    pub postprocess_default: bool,
}

impl ComparisonReport {
    /// The error-vs-leakage chart (`tpl compare --chart`, docs/cli.md §2.9) as an SVG document: one labelled point per strategy that
    /// ran at its realised leakage (largest leakage of W consecutive steps, ε units) and mean
    /// squared error (people² per cell and step), and, for a scheme whose guaranteed leakage
    /// is higher, a second point at the guaranteed leakage (same error) in a group of its
    /// own, joined to the first by a thin line of the scheme's colour. `data` names the
    /// counts in the title.
    pub fn chart_svg(&self, data: &str) -> Result<String> {
        let baseline = self
            .comparison
            .rows
            .iter()
            .find(|r| r.base.is_none())
            .and_then(|r| r.outcome.as_ref().ok())
            .map(|s| s.mse.mean);
        // (row index, point) of every strategy that ran.
        let realised: Vec<(usize, Point)> = (self.comparison.rows.iter().enumerate())
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
            let r = &self.comparison.rows[*k];
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
            human(self.comparison.epsilon),
            self.comparison.window,
            human(self.comparison.alpha)
        );
        let x_label = format!(
            "largest leakage of {} consecutive steps under the correlation (ε units, log scale)",
            self.comparison.window
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
const HEADER: [&str; 10] = [
    "strategy",
    "MAE",
    "MRE",
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
impl ComparisonReport {
    /// The rows of the table, one per strategy, and the reasons of the strategies that
    /// cannot run ("strategy: why", each reason once).
    fn rows(&self) -> (Vec<Vec<Cell>>, Vec<String>) {
        let mut rows = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        for r in &self.comparison.rows {
            match &r.outcome {
                Ok(s) => rows.push(vec![
                    Cell::text(r.strategy.clone()),
                    Cell::number(s.mae.mean),
                    Cell::number(s.mre.mean),
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
                    let mut row =
                        vec![Cell::text(r.strategy.clone()), Cell::numeric("-"), Cell::numeric("-")];
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
        let c = &self.comparison;
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
            ("matrices".into(), self.matrices.sentence()),
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

/// The text outputs of the comparison.
impl ComparisonReport {
    /// The CSV of `tpl compare`: a `#` line of how it was made, one of where the matrices
    /// came from, then one record per strategy (docs/cli.md §2.9).
    pub fn csv(&self) -> String {
        let header = [
            "strategy",
            "mae",
            "mae_std",
            "mse",
            "mse_std",
            "mre",
            "mre_std",
            "max_window_budget",
            "max_tpl",
            "max_window_leakage",
            "guaranteed_max_tpl",
            "guaranteed_max_window_leakage",
            "published_fraction",
            "error",
        ];
        let c = &self.comparison;
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
        out.push_str(&self.matrices.csv_line());
        out.push_str(&tpl_io::csv_text(|w| {
            w.record(header)?;
            for r in &self.comparison.rows {
                w.field(&r.strategy)?;
                match &r.outcome {
                    Ok(s) => {
                        let (mae, mse, mre) = (&s.mae, &s.mse, &s.mre);
                        for v in [
                            mae.mean,
                            mae.std,
                            mse.mean,
                            mse.std,
                            mre.mean,
                            mre.std,
                            s.max_window_budget,
                            s.max_tpl,
                        ] {
                            w.value(v)?;
                        }
                        w.value(s.max_window_leakage)?;
                        w.value(s.guaranteed_max_tpl)?;
                        w.value(s.guaranteed_max_window_leakage)?;
                        w.value(s.published_fraction)?;
                        w.field("")?;
                    }
                    Err(why) => {
                        for _ in 1..header.len() - 1 {
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

    /// The table of `tpl compare` for a terminal: the parameters, how it measures, the rows
    /// and why some strategies cannot run.
    pub fn table(&self) -> String {
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
            self.comparison.rows.len(),
            self.comparison.horizon,
            self.comparison.cells,
            self.comparison.runs,
            self.comparison.seed,
            if self.comparison.seeded { ", given: NOT private" } else { "" },
            human(self.comparison.epsilon),
            self.comparison.window,
            human(self.comparison.alpha),
            human(self.comparison.sensitivity),
            self.matrices.sentence(),
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

/// The JSON object of `tpl compare` and the fields of Python's `Comparison`: the
/// comparison's own fields ([`Comparison`]), `postprocess_default` when rows were
/// post-processed, and the `matrices` object ([`MatrixSource`]).
impl Serialize for ComparisonReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Fields<'a> {
            #[serde(flatten)]
            comparison: &'a Comparison,
            #[serde(skip_serializing_if = "Option::is_none")]
            postprocess_default: Option<bool>,
            matrices: &'a MatrixSource,
        }
        Fields {
            comparison: &self.comparison,
            postprocess_default: self.comparison.postprocess.map(|_| self.postprocess_default),
            matrices: &self.matrices,
        }
        .serialize(serializer)
    }
}

/// The page of `tpl compare --report` and Python's `Comparison.report`.
impl ComparisonReport {
    /// The comparison on one self-contained page titled by `name` (the counts compared):
    /// `made_by` first in its provenance (the command, the version, the input files), then
    /// `notes` on the inputs, the parameters, the table and `chart` (the document of
    /// [`ComparisonReport::chart_svg`]).
    ///
    /// # Errors
    /// A chart that is not an SVG document.
    pub fn page(
        &self,
        name: &str,
        made_by: &[(&str, String)],
        notes: &[String],
        chart: &str,
    ) -> Result<String> {
        let mut page = Page::new(&format!("tpl compare: {name}"));
        page.lead(
            "Every release strategy on one count stream, scored on error and on the leakage the adversary's \
             correlation really gives (realised in the runs drawn, and guaranteed over every run).",
        );
        for (term, value) in made_by {
            page.provenance(term, value.clone());
        }
        let mut section = Section::new("Error and audited leakage");
        for note in notes {
            section.note(&format!("Note: {note}."));
        }
        self.html_into(&mut section);
        section.chart(
            chart,
            "Error against the audited leakage of every strategy (log scales): lower left is better",
        )?;
        page.section(section);
        Ok(page.render())
    }
}
