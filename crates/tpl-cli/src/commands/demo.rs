//! `tpl demo`: a readable leakage report on a built-in example, with no arguments.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{Value, json};
use tpl_core::{LeakageSeries, Loss, LossEvaluator, PiecewiseLoss, Supremum, TransitionMatrix};

use crate::error::{CliError, Result};
use crate::render::{Report, Table, human};

/// Arguments of `tpl demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Also write the report (`report.md`) and the example matrix (`matrix.csv`) to DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

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
}

/// Runs `tpl demo`.
pub fn run(args: &DemoArgs) -> Result<DemoReport> {
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
    let report = DemoReport { matrix, alphas, losses, series, window_max, suprema };
    if let Some(dir) = &args.out {
        write_files(dir, &report)?;
    }
    Ok(report)
}

fn write_files(dir: &Path, report: &DemoReport) -> Result<()> {
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|source| CliError::Write { path, source })
    };
    std::fs::create_dir_all(dir).map_err(|source| CliError::Write { path: dir.to_path_buf(), source })?;
    let rows: Vec<String> =
        report.matrix.rows().map(|r| r.iter().map(f64::to_string).collect::<Vec<_>>().join(",")).collect();
    write(
        "matrix.csv",
        format!("# tpl demo: smoothed identity, n = {STATES}, s = {SMOOTHING}\n{}\n", rows.join("\n")),
    )?;
    write("report.md", format!("# tpl demo\n\n```text\n{}```\n", report.table()))
}

impl Report for DemoReport {
    fn json(&self) -> Value {
        let sup: Vec<Value> = self
            .suprema
            .iter()
            .map(|(e, s)| json!({ "epsilon": e, "bounded": s.value().is_some(), "supremum": s.value() }))
            .collect();
        json!({
            "matrix": self.matrix.to_rows(),
            "loss": { "alpha": self.alphas, "loss": self.losses },
            "leakage": {
                "epsilon": self.series.epsilon, "bpl": self.series.bpl, "fpl": self.series.fpl,
                "tpl": self.series.tpl, "max_tpl": self.series.max_tpl(),
                "window": WINDOW, "max_window_leakage": self.window_max,
            },
            "supremum": sup,
        })
    }

    fn csv(&self) -> String {
        let mut s = String::from("t,epsilon,bpl,fpl,tpl\n");
        for i in 0..self.series.len() {
            let sr = &self.series;
            s.push_str(&format!("{},{},{},{},{}\n", i + 1, sr.epsilon[i], sr.bpl[i], sr.fpl[i], sr.tpl[i]));
        }
        s
    }

    fn table(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "tpl demo — what a stream of ε-DP releases really leaks when people's moves are predictable\n\n",
        );
        out.push_str(&format!(
            "An adversary knows how each person moves between {STATES} places from one step to the next\n\
             (the same Markov matrix backward and forward; a person stays put with probability {}):\n\n",
            human(self.matrix.row(0)[0])
        ));
        let mut m = Table::new(&["from \\ to", "1", "2", "3", "4"]);
        for (j, row) in self.matrix.rows().enumerate() {
            let mut cells = vec![format!("{}", j + 1)];
            cells.extend(row.iter().map(|&v| human(v)));
            m.row(cells);
        }
        out.push_str(&m.render());

        out.push_str(
            "\n1. One step of correlation turns a leakage of α into L(α) more at the next step:\n\n",
        );
        let mut l = Table::new(&["α", "L(α)"]);
        for (&a, &v) in self.alphas.iter().zip(&self.losses) {
            l.row(vec![human(a), human(v)]);
        }
        out.push_str(&l.render());

        let s = &self.series;
        out.push_str(&format!(
            "\n2. Publishing with ε = {EPSILON} at each of {HORIZON} steps (event-level {EPSILON}-DP):\n\n"
        ));
        let mut t = Table::new(&["t", "ε_t", "BPL_t", "FPL_t", "TPL_t"]);
        for i in 0..s.len() {
            t.row(vec![
                (i + 1).to_string(),
                human(s.epsilon[i]),
                human(s.bpl[i]),
                human(s.fpl[i]),
                human(s.tpl[i]),
            ]);
        }
        t.elide(4);
        out.push_str(&t.render());
        out.push_str(&format!(
            "\n   The worst step leaks {} = {}× the promised ε; any {WINDOW} consecutive steps leak up to {}\n   (Theorem 3), the whole release {} (user level).\n",
            human(s.max_tpl()),
            human(s.max_tpl() / EPSILON),
            human(self.window_max),
            human(s.horizon_leakage()),
        ));

        out.push_str("\n3. If the releases never stop, backward leakage converges to (Theorem 11):\n\n");
        let mut sup = Table::new(&["ε per step", "sup BPL", "× ε"]);
        for (e, v) in &self.suprema {
            match v {
                Supremum::Bounded(x) => sup.row(vec![human(*e), human(*x), human(x / e)]),
                Supremum::Unbounded => sup.row(vec![human(*e), "unbounded".into(), "-".into()]),
            }
        }
        out.push_str(&sup.render());
        out.push_str(
            "\nTry it on your own matrices:\n\
             \x20 tpl loss     --matrix P.csv --alpha 0.5 --alpha 1\n\
             \x20 tpl leakage  --backward PB.csv --forward PF.csv --epsilon 0.1 --horizon 100 --window 10\n\
             \x20 tpl supremum --matrix PB.csv --epsilon 0.1\n\
             (add --format json for the machine-readable output; `tpl demo --out DIR` saves this report)\n",
        );
        out
    }
}
