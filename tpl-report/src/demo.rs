//! The report of `tpl demo`: what a stream of ε-DP releases leaks on a small example, then
//! the comparisons on simulated users and on a real vessel stream — as one self-contained
//! page, as text for a terminal, as JSON and as CSV. The command line computes a [`Demo`]
//! (its settings are the constants here) and this module writes it.

use std::path::PathBuf;

use serde::Serialize;
use tpl_core::{LeakageSeries, Supremum, TransitionMatrix};

use crate::html::{self, Cell, Page, Section};
use crate::output::{LossOutput, SupremumOutput};
use crate::text::{Table, human};
use crate::{ComparisonReport, Result};

/// The synthetic population: users, steps, cells and smoothing of the identity.
pub const SIM_USERS: usize = 400;
pub const SIM_STEPS: usize = 240;
pub const SIM_CELLS: usize = 8;
pub const SIM_SMOOTHING: f64 = 0.02;
/// Budget per window and window of the comparisons.
pub const CMP_EPSILON: f64 = 1.0;
pub const CMP_WINDOW: usize = 5;

/// States of the built-in example: four places.
pub const STATES: usize = 4;
/// Laplacian smoothing of the identity: a person stays put with probability 0.875.
pub const SMOOTHING: f64 = 0.05;
/// The per-step budget of the example release.
pub const EPSILON: f64 = 0.1;
/// Steps of the example release.
pub const HORIZON: usize = 24;
/// Window of the w-event figure.
pub const WINDOW: usize = 6;

/// Everything the demo computed.
pub struct Demo {
    /// The example's matrix (backward and forward).
    pub matrix: TransitionMatrix,
    /// Some α …
    pub alphas: Vec<f64>,
    /// … and L(α) at each.
    pub losses: Vec<f64>,
    /// The leakage of ε = [`EPSILON`] at each of [`HORIZON`] steps.
    pub series: LeakageSeries,
    /// Its largest leakage of [`WINDOW`] consecutive steps.
    pub window_max: f64,
    /// The supremum of BPL at a few constant budgets.
    pub suprema: Vec<(f64, Supremum)>,
    /// The comparison on the simulated users.
    pub synthetic: ComparisonReport,
    /// The comparison on the vessel stream.
    pub real: ComparisonReport,
    /// The folder written.
    pub out: PathBuf,
    /// Runs per strategy.
    pub runs: usize,
    /// The seed.
    pub seed: u64,
    /// The documents of [`CHARTS`], in that order: written to their files and inlined in the
    /// report.
    pub charts: [String; 3],
}

/// The report's file name in the demo's folder.
pub const REPORT: &str = "report.html";

/// The charts of the demo: file name in its folder, and what each shows.
pub const CHARTS: [(&str, &str); 3] = [
    ("leakage_example.svg", "BPL, FPL and TPL of the example release over time, with the budget spent"),
    ("compare_synthetic.svg", "Error against audited leakage of every strategy on the synthetic users"),
    ("compare_ais_hour.svg", "Error against audited leakage of every strategy on the New York harbour hour"),
];

/// What the demo's accuracy figures are measured on (the report's opening).
pub const PROTOCOL: &str = "Every error below is measured out of sample: the correlation matrices (the adversary's \
    knowledge and the post-processing prior) are estimated from the first half of each stream, and the strategies \
    are released and scored on the second half, so no matrix has seen the counts it is scored on.";

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("   {l}\n")).collect()
}

/// `text` wrapped at 100 columns for a terminal, its lines after the first indented by
/// `indent` (the first keeps its own leading spaces), each ending in a newline.
fn wrap(text: &str, indent: &str) -> String {
    const WIDTH: usize = 100;
    let lead = text.len() - text.trim_start().len();
    let mut out = String::new();
    let mut line = text[..lead].to_string();
    for word in text.split_whitespace() {
        let fresh = line.trim().is_empty();
        if !fresh && line.chars().count() + 1 + word.chars().count() > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = indent.to_string();
        } else if !fresh {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

impl Demo {
    /// The sentence introducing the adversary's matrix (without its final punctuation, as the
    /// other sentences of the report).
    fn matrix_sentence(&self) -> String {
        format!(
            "An adversary knows how each person moves between {STATES} places from one step to the next \
             (the same Markov matrix backward and forward; a person stays put with probability {})",
            human(self.matrix.row(0)[0])
        )
    }

    /// The sentence under the leakage table: the worst step, windows and the whole release.
    fn leakage_sentence(&self) -> String {
        let s = &self.series;
        format!(
            "The worst step leaks {} = {}× the promised ε; any {WINDOW} consecutive steps leak up to {} \
             (Theorem 3), the whole release {} (user level)",
            human(s.max_tpl()),
            human(s.max_tpl() / EPSILON),
            human(self.window_max),
            human(s.horizon_leakage()),
        )
    }

    /// The sentence introducing the synthetic comparison.
    fn synthetic_sentence(&self) -> String {
        format!(
            "simulated users moving among {SIM_CELLS} places for {SIM_STEPS} steps; the matrices are \
             estimated from the first {} steps (an earlier period: what a curator can know in advance), and every \
             strategy is released {} times on the last {} and scored there, so no matrix has seen the counts it is \
             scored on",
            SIM_STEPS - self.synthetic.comparison.horizon,
            self.synthetic.comparison.runs,
            self.synthetic.comparison.horizon
        )
    }

    /// The sentence introducing the comparison on the vessel stream.
    fn real_sentence(&self) -> String {
        format!(
            "295 vessels in New York harbour, one hour in 1-minute steps, the raw matrices estimated from the first \
             half and the last {} steps scored (some rows are deterministic, so L(α) = α and only finite-horizon \
             strategies have a bounded leakage)",
            self.real.comparison.horizon
        )
    }

    /// Commands to try next.
    const TRY: &'static str = "tpl leakage  --backward PB.csv --forward PF.csv --epsilon 0.1 --horizon 100 --window 10\n\
        tpl estimate --stream stream.csv --steps ..1000 --out matrices\n\
        tpl compare  --stream stream.csv --train-steps ..1000 --epsilon 1 --window 10 --postprocess --report c.html\n\
        (matrices from steps 1 to 1000, strategies scored on the steps after them)";

    /// The report as one self-contained HTML page: every table, the three charts inline,
    /// and how it was made (`tpl`: the version, and commit, of what wrote it).
    ///
    /// # Errors
    /// A chart that is not an SVG document.
    pub fn page(&self, tpl: &str) -> Result<String> {
        let chart = |section: &mut Section, k: usize| -> Result<()> {
            section.chart(&self.charts[k], CHARTS[k].1)?;
            Ok(())
        };
        let mut page = Page::new("tpl demo — what a stream of ε-DP releases really leaks");
        page.lead(&format!(
            "What a stream of ε-differentially private releases leaks when people's moves are predictable, and \
             which release strategy to use. {PROTOCOL}"
        ))
        .provenance("command", format!("tpl demo --out {} --runs {} --seed {}", self.out.display(), self.runs, self.seed))
        .provenance("tpl", tpl)
        .provenance(
            "seed",
            format!("{} (the demo is reproducible, hence its releases are NOT private)", self.seed),
        )
        .provenance(
            "data",
            format!(
                "built in: a {STATES}-place example; {SIM_USERS} simulated Markov users ({SIM_CELLS} places, \
                 {SIM_STEPS} steps, smoothing {SIM_SMOOTHING}); 295 vessels in New York harbour over one hour (AIS, \
                 1-minute steps)"
            ),
        )
        .provenance(
            "comparisons",
            format!(
                "ε = {CMP_EPSILON} per window of {CMP_WINDOW} steps, {} runs per strategy, post-processing by \
                 smoothing (the offline default) with the Kalman baseline",
                self.runs
            ),
        );

        let mut s = Section::new("The adversary's knowledge");
        s.paragraph(&format!("{}.", self.matrix_sentence()));
        let mut m = html::Table::new(&["from \\ to", "1", "2", "3", "4"])
            .with_caption("Pr(place at t + 1 = column | place at t = row)");
        for (j, row) in self.matrix.rows().enumerate() {
            let mut cells = vec![Cell::text(format!("{}", j + 1))];
            cells.extend(row.iter().map(|&v| Cell::number(v)));
            m.row(cells);
        }
        s.table(&m);
        page.section(s);

        let mut s = Section::new("1. One step of correlation");
        s.paragraph("One step of correlation turns a leakage of α into L(α) more at the next step:");
        let mut l = html::Table::new(&["α", "L(α)"]);
        for (&a, &v) in self.alphas.iter().zip(&self.losses) {
            l.row(vec![a.into(), v.into()]);
        }
        s.table(&l);
        page.section(s);

        let mut s = Section::new(&format!("2. ε = {EPSILON} at each of {HORIZON} steps"));
        s.paragraph(&format!(
            "What publishing with ε = {EPSILON} at each of {HORIZON} steps (event-level {EPSILON}-DP) leaks against this adversary, step by step:"
        ));
        let series = &self.series;
        let mut t = html::Table::new(&["t", "ε_t", "BPL_t", "FPL_t", "TPL_t"]);
        for i in 0..series.len() {
            t.row(vec![
                (i + 1).into(),
                series.epsilon()[i].into(),
                series.bpl()[i].into(),
                series.fpl()[i].into(),
                series.tpl()[i].into(),
            ]);
        }
        chart(&mut s, 0)?;
        s.note(&format!("{}.", self.leakage_sentence())).table(&t);
        page.section(s);

        let mut s = Section::new("3. If the releases never stop");
        s.paragraph("If the releases never stop, backward leakage converges to (Theorem 11):");
        let mut sup = html::Table::new(&["ε per step", "sup BPL", "× ε"]);
        for (e, v) in &self.suprema {
            match v {
                Supremum::Bounded(x) => sup.row(vec![(*e).into(), (*x).into(), (x / e).into()]),
                Supremum::Unbounded => {
                    sup.row(vec![(*e).into(), Cell::numeric("unbounded"), Cell::numeric("-")])
                }
            }
        }
        s.table(&sup);
        page.section(s);

        let mut s = Section::new("4. Which release strategy? Synthetic users");
        s.paragraph(&format!("{SIM_USERS} {}.", self.synthetic_sentence()));
        self.synthetic.html_into(&mut s);
        chart(&mut s, 1)?;
        page.section(s);

        let mut s = Section::new("5. The same on a real stream");
        s.paragraph(&format!("{}.", self.real_sentence()));
        self.real.html_into(&mut s);
        chart(&mut s, 2)?;
        page.section(s);

        let mut s = Section::new("Files and next steps");
        let dir = self.out.display();
        let mut files =
            vec![format!("{dir}/{REPORT}: this page"), format!("{dir}/matrix.csv: the example's matrix")];
        files.extend(CHARTS.iter().map(|(file, label)| format!("{dir}/{file}: {label}")));
        files
            .push(format!("{dir}/synthetic/stream.csv and counts.csv: the simulated users and their counts"));
        s.paragraph("The demo wrote:").list(&files).paragraph("Try it on your own data:").code(Self::TRY);
        page.section(s);
        Ok(page.render())
    }

    /// The adversary's matrix.
    fn intro(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "tpl demo — what a stream of ε-DP releases really leaks when people's moves are predictable\n\n",
        );
        out.push_str(&wrap(&format!("{}:", self.matrix_sentence()), ""));
        out.push('\n');
        let mut m = Table::new(&["from \\ to", "1", "2", "3", "4"]);
        for (j, row) in self.matrix.rows().enumerate() {
            let mut cells = vec![format!("{}", j + 1)];
            cells.extend(row.iter().map(|&v| human(v)));
            m.row(cells);
        }
        out.push_str(&m.render());

        out
    }

    /// Part 1: L(α) at a few α.
    fn loss_section(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "\n1. One step of correlation turns a leakage of α into L(α) more at the next step:\n\n",
        );
        let mut l = Table::new(&["α", "L(α)"]);
        for (&a, &v) in self.alphas.iter().zip(&self.losses) {
            l.row(vec![human(a), human(v)]);
        }
        out.push_str(&l.render());

        out
    }

    /// Part 2: BPL, FPL and TPL of the example release.
    fn leakage_section(&self) -> String {
        let mut out = String::new();
        let s = &self.series;
        out.push_str(&format!(
            "\n2. Publishing with ε = {EPSILON} at each of {HORIZON} steps (event-level {EPSILON}-DP):\n\n"
        ));
        let mut t = Table::new(&["t", "ε_t", "BPL_t", "FPL_t", "TPL_t"]);
        for i in 0..s.len() {
            t.row(vec![
                (i + 1).to_string(),
                human(s.epsilon()[i]),
                human(s.bpl()[i]),
                human(s.fpl()[i]),
                human(s.tpl()[i]),
            ]);
        }
        t.elide(4);
        out.push_str(&t.render());
        out.push('\n');
        out.push_str(&wrap(&format!("   {}.", self.leakage_sentence()), "   "));

        out
    }

    /// Part 3: where the leakage ends under a constant budget.
    fn supremum_section(&self) -> String {
        let mut out = String::new();
        out.push_str("\n3. If the releases never stop, backward leakage converges to (Theorem 11):\n\n");
        let mut sup = Table::new(&["ε per step", "sup BPL", "× ε"]);
        for (e, v) in &self.suprema {
            match v {
                Supremum::Bounded(x) => sup.row(vec![human(*e), human(*x), human(x / e)]),
                Supremum::Unbounded => sup.row(vec![human(*e), "unbounded".into(), "-".into()]),
            }
        }
        out.push_str(&sup.render());
        out
    }

    /// Parts 4 and 5: the comparisons on synthetic and real data.
    fn comparison_sections(&self) -> String {
        let mut out = String::new();
        let sentence = format!("4. Which release strategy? {SIM_USERS} {}:", self.synthetic_sentence());
        out.push('\n');
        out.push_str(&wrap(&sentence, "   "));
        out.push('\n');
        out.push_str(&indent(&self.synthetic.table()));
        out.push('\n');
        out.push_str(&wrap(&format!("5. The same on a real stream: {}:", self.real_sentence()), "   "));
        out.push('\n');
        out.push_str(&indent(&self.real.table()));
        out
    }

    /// What was written, and commands to try next.
    fn closing(&self) -> String {
        let mut out = String::new();
        out.push('\n');
        out.push_str(&wrap(
            &format!(
                "Wrote the report {0}/{REPORT} (one page, the charts inline: open it in a browser), the example \
                 matrix {0}/matrix.csv, the charts {0}/leakage_example.svg, {0}/compare_synthetic.svg and \
                 {0}/compare_ais_hour.svg, and the synthetic stream in {0}/synthetic/.",
                self.out.display()
            ),
            "",
        ));
        out.push_str("\nTry it on your own data:\n");
        out.extend(Self::TRY.lines().map(|l| format!("  {l}\n")));
        out
    }
}

/// The text outputs of the demo.
impl Demo {
    /// The report for a terminal: the example, its leakage, the suprema, the two comparisons
    /// and what was written.
    pub fn table(&self) -> String {
        [
            self.intro(),
            self.loss_section(),
            self.leakage_section(),
            self.supremum_section(),
            self.comparison_sections(),
            self.closing(),
        ]
        .concat()
    }

    /// The CSV: `t,epsilon,bpl,fpl,tpl`, the example's leakage series.
    pub fn csv(&self) -> String {
        let s = &self.series;
        tpl_io::csv_text(|w| {
            w.record(["t", "epsilon", "bpl", "fpl", "tpl"])?;
            for i in 0..s.len() {
                w.value(i + 1)?;
                for v in [s.epsilon()[i], s.bpl()[i], s.fpl()[i], s.tpl()[i]] {
                    w.value(v)?;
                }
                w.end()?;
            }
            Ok(())
        })
    }
}

/// The JSON of `tpl demo` (docs/cli.md §2.10): `matrix`, `loss` (as `tpl loss`), `leakage`
/// (`epsilon`, `bpl`, `fpl`, `tpl`, `max_tpl`, `window`, `max_window_leakage`), `supremum`
/// (a list, as `tpl supremum`), the comparisons `synthetic` and `ais_hour` (as `tpl
/// compare`), and `out`.
impl Serialize for Demo {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Leakage<'a> {
            epsilon: &'a [f64],
            bpl: &'a [f64],
            fpl: &'a [f64],
            tpl: &'a [f64],
            max_tpl: f64,
            window: usize,
            max_window_leakage: f64,
        }
        #[derive(Serialize)]
        struct Fields<'a> {
            matrix: Vec<Vec<f64>>,
            loss: LossOutput<'a>,
            leakage: Leakage<'a>,
            supremum: Vec<SupremumOutput>,
            synthetic: &'a ComparisonReport,
            ais_hour: &'a ComparisonReport,
            out: String,
        }
        let s = &self.series;
        Fields {
            matrix: self.matrix.to_rows(),
            loss: LossOutput { alpha: &self.alphas, loss: &self.losses },
            leakage: Leakage {
                epsilon: s.epsilon(),
                bpl: s.bpl(),
                fpl: s.fpl(),
                tpl: s.tpl(),
                max_tpl: s.max_tpl(),
                window: WINDOW,
                max_window_leakage: self.window_max,
            },
            supremum: self
                .suprema
                .iter()
                .map(|&(epsilon, supremum)| SupremumOutput { epsilon, supremum })
                .collect(),
            synthetic: &self.synthetic,
            ais_hour: &self.real,
            out: self.out.display().to_string(),
        }
        .serialize(serializer)
    }
}
