//! `tpl demo`: with no arguments, what a stream of ε-DP releases really leaks on a small
//! example, then simulate → estimate → compare on a synthetic population and on a real
//! vessel stream shipped in the binary; writes charts and a self-contained HTML report
//! (`report.html`) to `tpl-demo/`.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;
use tpl_compare::{Holdout, Seed, Strategy, USERS_STREAM, histogram, simulate_users};
use tpl_core::{LeakageSeries, Loss, LossEvaluator, PiecewiseLoss, Steps, Supremum, TransitionMatrix};
use tpl_io::{counts_text, matrix_text, parse_user_stream, stream_text};
use tpl_report::chart::leakage_svg;
use tpl_report::html::{self, Cell, Page, Section};
use tpl_report::output::{LossOutput, SupremumOutput};
use tpl_report::{ComparisonReport, MatrixSource};

use crate::comparison_report::{Options, run_comparison};
use crate::error::{CliError, Result};
use crate::output_dir::{create_dir, write_file};
use crate::render::{Report, Table, csv_text, human, json_of};

/// Arguments of `tpl demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Folder for the charts (SVG), the report (`report.html`, one self-contained page) and
    /// the demo's data.
    #[arg(long, value_name = "DIR", default_value = "tpl-demo")]
    pub out: PathBuf,
    /// Releases per strategy in the comparisons.
    #[arg(long, value_name = "R", default_value_t = 10)]
    pub runs: usize,
    /// Seed of the simulation and of the releases (the demo is reproducible by default).
    #[arg(long, value_name = "S", default_value_t = 2018)]
    pub seed: u64,
}

/// The real stream compiled into the binary: 295 vessels in New York Harbor over one hour
/// in one-minute buckets (see `tpl-cli/data/README.md` for provenance and licence).
const AIS_HOUR: &str = include_str!("../../data/ais_nyharbor_hour_1min/stream.csv");

/// The synthetic population: users, steps, cells and smoothing of the identity.
const SIM_USERS: usize = 400;
const SIM_STEPS: usize = 240;
const SIM_CELLS: usize = 8;
const SIM_SMOOTHING: f64 = 0.02;
/// Budget per window and window of the comparisons.
const CMP_EPSILON: f64 = 1.0;
const CMP_WINDOW: usize = 5;

/// States of the built-in example: four places.
const STATES: usize = 4;
/// Laplacian smoothing of the identity: a person stays put with probability 0.875.
const SMOOTHING: f64 = 0.05;
/// The per-step budget of the example release.
const EPSILON: f64 = 0.1;
/// Steps of the example release.
const HORIZON: usize = 24;
/// Window of the w-event figure.
const WINDOW: usize = 6;

/// Everything the demo computed.
pub struct DemoReport {
    matrix: TransitionMatrix,
    alphas: Vec<f64>,
    losses: Vec<f64>,
    series: LeakageSeries,
    window_max: f64,
    suprema: Vec<(f64, Supremum)>,
    synthetic: ComparisonReport,
    real: ComparisonReport,
    out: PathBuf,
    runs: usize,
    seed: u64,
    /// The documents of [`CHARTS`], in that order: written to their files and inlined in the
    /// report.
    charts: [String; 3],
}

/// The most runs per strategy the demo takes: its three comparisons then take about six
/// minutes on 2 cores (`tpl compare --runs` takes up to [`tpl_compare::MAX_RUNS`]).
const MAX_DEMO_RUNS: usize = 1000;

/// Seconds a run per strategy adds to the demo, measured on 2 cores (10 runs: 3.5 s, 20: 6.8 s).
const SECONDS_PER_RUN: f64 = 0.33;

/// Runs `tpl demo`.
pub fn run(args: &DemoArgs) -> Result<DemoReport> {
    if args.runs == 0 || args.runs > MAX_DEMO_RUNS {
        return Err(CliError::Usage(format!(
            "--runs {}: the demo takes 1 to {MAX_DEMO_RUNS} runs per strategy (tpl compare takes up to {} on your \
             own data)",
            args.runs,
            tpl_compare::MAX_RUNS
        )));
    }
    if args.runs > 50 {
        crate::progress::announce(&format!(
            "tpl demo --runs {}: expect about {} on 2 cores (progress is drawn when standard error is a terminal)",
            args.runs,
            crate::progress::duration(args.runs as f64 * SECONDS_PER_RUN)
        ));
    }
    let matrix = TransitionMatrix::smoothed_identity(STATES, SMOOTHING)?;
    let loss = Loss::new(&matrix, 8);
    let alphas = vec![0.1, 0.5, 1.0, 2.0, 5.0, 10.0];
    let losses = alphas.iter().map(|&a| loss.loss(a)).collect();
    let series = LeakageSeries::from_matrices(Some(&matrix), Some(&matrix), &[EPSILON; HORIZON])?;
    let window_max = series.window_leakage(WINDOW)?.into_iter().fold(0.0, f64::max);
    let piecewise = PiecewiseLoss::new(&matrix);
    let suprema = [0.01, 0.1, 0.5, 1.0]
        .iter()
        .map(|&e| piecewise.supremum(e).map(|s| (e, s)))
        .collect::<tpl_core::Result<Vec<_>>>()?;
    let dir = &args.out;
    create_dir(dir)?;
    let rows = matrix.rows().map(|r| r.iter().map(f64::to_string).collect());
    write_file(
        &dir.join("matrix.csv"),
        &matrix_text(&format!("tpl demo: smoothed identity, n = {STATES}, s = {SMOOTHING}"), rows),
    )?;
    let leakage = leakage_svg(
        &format!("Leakage of {HORIZON} releases at ε = {EPSILON} under a known Markov chain"),
        &series,
    )?;
    let options = Options {
        epsilon: CMP_EPSILON,
        window: CMP_WINDOW,
        alpha: None,
        sensitivity: tpl_mechanisms::DEFAULT_SENSITIVITY,
        runs: args.runs,
        postprocess: Some((tpl_postprocess::Estimator::OFFLINE_DEFAULT, true)),
        baseline: true,
        seed: Some(args.seed),
    };

    // Synthetic: simulate Markov users, estimate the matrices back from their stream, compare.
    let truth_matrix = TransitionMatrix::smoothed_identity(SIM_CELLS, SIM_SMOOTHING)?;
    let mut rng = Seed::given(args.seed).rng(USERS_STREAM, 0);
    let states =
        simulate_users(&truth_matrix, &[1.0 / SIM_CELLS as f64; SIM_CELLS], SIM_USERS, SIM_STEPS, &mut rng)
            .map_err(|source| CliError::Compare { context: "demo simulation: ".into(), source })?;
    let sim_dir = dir.join("synthetic");
    create_dir(&sim_dir)?;
    write_file(&sim_dir.join("stream.csv"), &stream_text(&states))?;
    write_file(&sim_dir.join("counts.csv"), &counts_text(&histogram(&states, SIM_CELLS)?))?;
    let synthetic = first_half_then_second(&states, SIM_CELLS, &options)?;
    let synthetic_chart = synthetic.chart_svg("synthetic Markov users, second half")?;

    // Real: the vessel stream shipped in the binary, with its raw estimated matrices.
    let stream = parse_user_stream(Path::new("built-in ais_nyharbor_hour_1min/stream.csv"), AIS_HOUR)?;
    let real = first_half_then_second(&stream.states, stream.cells(), &options)?;
    let real_chart = real.chart_svg("New York harbour, 1 hour, second half")?;
    let charts = [leakage, synthetic_chart, real_chart];
    for ((file, _), svg) in CHARTS.iter().zip(&charts) {
        write_file(&dir.join(file), svg)?;
    }

    let report = DemoReport {
        matrix,
        alphas,
        losses,
        series,
        window_max,
        suprema,
        synthetic,
        real,
        out: dir.clone(),
        runs: args.runs,
        seed: args.seed,
        charts,
    };
    write_file(&dir.join(REPORT), &report.html()?)?;
    Ok(report)
}

/// The report's file name in the demo's folder.
const REPORT: &str = "report.html";

/// The charts of the demo: file name in its folder, and what each shows.
const CHARTS: [(&str, &str); 3] = [
    ("leakage_example.svg", "BPL, FPL and TPL of the example release over time, with the budget spent"),
    ("compare_synthetic.svg", "Error against audited leakage of every strategy on the synthetic users"),
    ("compare_ais_hour.svg", "Error against audited leakage of every strategy on the New York harbour hour"),
];

/// What the demo's accuracy figures are measured on (the report's opening).
const PROTOCOL: &str = "Every error below is measured out of sample: the correlation matrices (the adversary's \
    knowledge and the post-processing prior) are estimated from the first half of each stream, and the strategies \
    are released and scored on the second half, so no matrix has seen the counts it is scored on.";

/// The honest protocol of every accuracy figure of the demo: the raw matrices estimated from
/// the first half of the steps of `states` (public knowledge from an earlier period), every
/// strategy scored on the second half.
fn first_half_then_second(
    states: &[Vec<usize>],
    cells: usize,
    options: &Options,
) -> Result<ComparisonReport> {
    let steps = states.len();
    let holdout = Holdout::new(steps, Steps::new(1, steps / 2)?, None, false)
        .map_err(|source| CliError::Compare { context: "demo: ".into(), source })?;
    let held = holdout
        .split(states, cells, None)
        .map_err(|source| CliError::Compare { context: "demo: ".into(), source })?;
    run_comparison(
        &held.truth,
        Some(&held.backward.matrix),
        Some(&held.forward.matrix),
        MatrixSource::estimated(holdout),
        options,
        &Strategy::ALL,
    )
}

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

impl DemoReport {
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
    /// and how it was made.
    fn html(&self) -> Result<String> {
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
        .provenance("tpl", crate::provenance::version_line())
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

impl Report for DemoReport {
    fn json(&self) -> Value {
        #[derive(serde::Serialize)]
        struct Leakage<'a> {
            epsilon: &'a [f64],
            bpl: &'a [f64],
            fpl: &'a [f64],
            tpl: &'a [f64],
            max_tpl: f64,
            window: usize,
            max_window_leakage: f64,
        }
        #[derive(serde::Serialize)]
        struct Fields<'a> {
            matrix: Vec<Vec<f64>>,
            loss: LossOutput<'a>,
            leakage: Leakage<'a>,
            supremum: Vec<SupremumOutput>,
            synthetic: Value,
            ais_hour: Value,
            out: String,
        }
        let s = &self.series;
        json_of(&Fields {
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
            synthetic: self.synthetic.json(),
            ais_hour: self.real.json(),
            out: self.out.display().to_string(),
        })
    }

    fn csv(&self) -> String {
        let s = &self.series;
        csv_text(|w| {
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

    fn table(&self) -> String {
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
}
