//! `tpl leakage`: BPL, FPL and TPL of a budget sequence (TKDE eqs. 11–15), and the leakage
//! of every window of w steps (Theorem 3). Also the audit of what any scheme spent.

use std::path::PathBuf;

use clap::Args;
use serde_json::{Value, json};
use tpl_core::{CoreError, LeakageSeries};

use crate::budget_file::read_budgets;
use crate::error::{CliError, Result};
use crate::matrix_file::{MatrixOptions, read_matrix};
use crate::render::{Report, Table, csv_line, human};

/// Arguments of `tpl leakage`.
#[derive(Debug, Args)]
pub struct LeakageArgs {
    /// Backward correlation P_B (row j: Pr(value at t−1 | value at t = j)); omit if unknown
    /// to the adversary.
    #[arg(long, value_name = "FILE")]
    pub backward: Option<PathBuf>,
    /// Forward correlation P_F (row j: Pr(value at t | value at t−1 = j)); omit if unknown.
    #[arg(long, value_name = "FILE")]
    pub forward: Option<PathBuf>,
    /// Constant budget ε > 0 at every step (with --horizon).
    #[arg(long, value_name = "E", requires = "horizon", allow_negative_numbers = true)]
    pub epsilon: Option<f64>,
    /// Number of steps T ≥ 1 (with --epsilon).
    #[arg(long, value_name = "T", requires = "epsilon")]
    pub horizon: Option<usize>,
    /// Budget file: one ε_t per line, or a .json array.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["epsilon", "horizon"], required_unless_present = "epsilon")]
    pub budgets: Option<PathBuf>,
    /// Also report the leakage of every window of W consecutive steps (1 ≤ W ≤ T).
    #[arg(long, value_name = "W")]
    pub window: Option<usize>,
    /// Write an SVG chart of ε_t, BPL, FPL and TPL over time.
    #[arg(long, value_name = "FILE.svg")]
    pub chart: Option<PathBuf>,
    #[command(flatten)]
    pub matrices: MatrixOptions,
}

/// The audited series, and the window leakage when asked for.
pub struct LeakageReport {
    series: LeakageSeries,
    window: Option<(usize, Vec<f64>)>,
}

/// The budgets of `--epsilon E --horizon T` or `--budgets FILE`.
pub fn budgets_from_flags(
    epsilon: Option<f64>,
    horizon: Option<usize>,
    file: Option<&PathBuf>,
) -> Result<Vec<f64>> {
    match (epsilon, horizon, file) {
        (_, _, Some(path)) => read_budgets(path),
        (Some(e), Some(t), None) => {
            if !(e.is_finite() && e > 0.0) {
                return Err(CliError::flag("--epsilon", CoreError::BadEpsilon(e)));
            }
            check_horizon(t)?;
            Ok(vec![e; t])
        }
        _ => Err(CliError::Usage("give --epsilon E --horizon T, or --budgets FILE".into())),
    }
}

/// The longest horizon a command accepts: 10⁸ steps already take gigabytes of series.
pub const MAX_HORIZON: usize = 100_000_000;

/// Checks `--horizon T`: 1 ≤ T ≤ [`MAX_HORIZON`].
pub fn check_horizon(t: usize) -> Result<()> {
    if t == 0 {
        return Err(CliError::flag("--horizon", CoreError::EmptyHorizon));
    }
    if t > MAX_HORIZON {
        return Err(CliError::Usage(format!("--horizon {t}: at most {MAX_HORIZON} steps are supported")));
    }
    Ok(())
}

/// Runs `tpl leakage`.
pub fn run(args: &LeakageArgs) -> Result<LeakageReport> {
    let budgets = budgets_from_flags(args.epsilon, args.horizon, args.budgets.as_ref())?;
    if let Some(w) = args.window
        && (w == 0 || w > budgets.len())
    {
        return Err(CliError::flag("--window", CoreError::BadWindow { window: w, horizon: budgets.len() }));
    }
    let pb = args.backward.as_ref().map(|p| read_matrix(p, &args.matrices)).transpose()?;
    let pf = args.forward.as_ref().map(|p| read_matrix(p, &args.matrices)).transpose()?;
    // Budget-size problems (overflow) are reported against where the budgets came from.
    let origin = |source| CliError::Core {
        context: args.budgets.as_ref().map_or("--epsilon: ".to_string(), |p| format!("{}: ", p.display())),
        source,
    };
    let series = LeakageSeries::from_matrices(pb.as_ref(), pf.as_ref(), &budgets).map_err(origin)?;
    let window = match args.window {
        Some(w) => Some((w, series.window_leakage(w).map_err(origin)?)),
        None => None,
    };
    if let Some(path) = &args.chart {
        let title = format!(
            "Temporal privacy leakage of {} releases (Σε = {})",
            series.len(),
            human(series.horizon_leakage())
        );
        crate::chart::leakage_chart(path, &title, &series)?;
    }
    Ok(LeakageReport { series, window })
}

fn max(values: &[f64]) -> f64 {
    values.iter().copied().fold(0.0, f64::max)
}

impl Report for LeakageReport {
    fn json(&self) -> Value {
        let s = &self.series;
        let t: Vec<usize> = (1..=s.len()).collect();
        let mut obj = json!({
            "t": t, "epsilon": s.epsilon, "bpl": s.bpl, "fpl": s.fpl, "tpl": s.tpl,
            "max_tpl": s.max_tpl(),
        });
        if let Some((w, values)) = &self.window {
            obj["window"] = json!(w);
            obj["window_leakage"] = json!(values);
            obj["max_window_leakage"] = json!(max(values));
        }
        obj
    }

    fn csv(&self) -> String {
        let s = &self.series;
        let mut header = vec!["t".to_string(), "epsilon".into(), "bpl".into(), "fpl".into(), "tpl".into()];
        if self.window.is_some() {
            header.push("window_leakage".into());
        }
        let mut out = csv_line(&header);
        for i in 0..s.len() {
            let mut row = vec![
                (i + 1).to_string(),
                s.epsilon[i].to_string(),
                s.bpl[i].to_string(),
                s.fpl[i].to_string(),
                s.tpl[i].to_string(),
            ];
            if let Some((_, values)) = &self.window {
                row.push(values.get(i).map_or(String::new(), f64::to_string));
            }
            out.push_str(&csv_line(&row));
        }
        out
    }

    fn table(&self) -> String {
        let s = &self.series;
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
        t.elide(8);
        let mut out = format!(
            "Temporal privacy leakage of {} releases (Σε = {}).\n\n{}\n  max TPL = {}: the release is {}-DP_T against this adversary.\n",
            s.len(),
            human(s.horizon_leakage()),
            t.render(),
            human(s.max_tpl()),
            human(s.max_tpl()),
        );
        if let Some((w, values)) = &self.window {
            out.push_str(&format!(
                "  worst window of {w} consecutive steps leaks {} (Theorem 3).\n",
                human(max(values))
            ));
        }
        out
    }
}
