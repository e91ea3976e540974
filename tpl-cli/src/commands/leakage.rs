//! `tpl leakage`: BPL, FPL and TPL of a budget sequence (TKDE eqs. 11–15), and the leakage
//! of every window of w steps (Theorem 3). Also the audit of what any scheme spent.
//!
//! Memory is two doubles a step (BPL and FPL; ε once when constant, plus ε_t from a budget
//! file): the JSON and CSV outputs are written number by number and the table builds only
//! the rows it shows.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;
use tpl_core::{Budgets, CompactSeries, CoreError};
use tpl_io::{read_budgets, text::name};
use tpl_mechanisms::checked_effective_budget;
use tpl_report::output::{LeakageOutput, NO_TICK, Tick};

use crate::args::CorrelationArgs;
use crate::error::{CliError, Result};
use crate::limits::{check_horizon, check_window};
use crate::render::{CsvWriter, Report, human, json_of, leakage_table, write_csv_records, write_json_of};

/// Arguments of `tpl leakage`.
#[derive(Debug, Args)]
pub struct LeakageArgs {
    #[command(flatten)]
    pub correlation: CorrelationArgs,
    /// Constant budget ε > 0 at every step (with --horizon).
    #[arg(long, value_name = "E", allow_negative_numbers = true, value_parser = tpl_io::text::finite_f64)]
    pub epsilon: Option<f64>,
    /// Number of steps T, 1 ≤ T ≤ 10⁸ (with --epsilon).
    #[arg(long, value_name = "T")]
    pub horizon: Option<usize>,
    /// Budget file: one ε_t per line, or a .json array (instead of --epsilon and --horizon).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["epsilon", "horizon"])]
    pub budgets: Option<PathBuf>,
    /// The L1 sensitivity Δ the budgets were calibrated to (a release's `sensitivity`):
    /// each ε_t is audited as its loss 2·ε_t/Δ against one person changing cell, so the
    /// budgets of a release with Δ = 1 count double. Default 2: ε_t as given.
    #[arg(long, value_name = "D", default_value_t = 2.0, allow_negative_numbers = true, value_parser = tpl_io::text::finite_f64)]
    pub sensitivity: f64,
    /// Also report the leakage of every window of W consecutive steps (1 ≤ W ≤ T).
    #[arg(long, value_name = "W")]
    pub window: Option<usize>,
    /// Write an SVG chart of ε_t, BPL, FPL and TPL over time.
    #[arg(long, value_name = "FILE.svg")]
    pub chart: Option<PathBuf>,
}

/// The audited series, and the window length and worst window leakage when asked for.
pub struct LeakageReport {
    series: CompactSeries,
    window: Option<(usize, f64)>,
}

/// The budgets of `--epsilon E --horizon T` or `--budgets FILE`, each as the loss 2·ε_t/Δ it
/// stands for against one person changing cell (`sensitivity` Δ; [`checked_effective_budget`]);
/// `--horizon` is checked by [`check_horizon`].
fn budgets_from_flags(
    epsilon: Option<f64>,
    horizon: Option<usize>,
    file: Option<&PathBuf>,
    sensitivity: f64,
) -> Result<Budgets> {
    // A loss that overflows is the sensitivity's fault, not the budget's (which is finite).
    let effective = |e: f64, context: String| {
        checked_effective_budget(e, sensitivity).map_err(|source| CliError::Mech { context, source })
    };
    match (epsilon, horizon, file) {
        (_, _, Some(path)) => {
            let budgets = read_budgets(path)?;
            let context = |t: usize| format!("--sensitivity: {}: step {t}: ", name(path));
            Ok(Budgets::PerStep(
                budgets
                    .into_iter()
                    .enumerate()
                    .map(|(t, e)| effective(e, context(t + 1)))
                    .collect::<Result<_>>()?,
            ))
        }
        (Some(e), Some(t), None) => {
            if !(e.is_finite() && e > 0.0) {
                return Err(CliError::flag("--epsilon", CoreError::BadEpsilon(e)));
            }
            check_horizon(t)?;
            Ok(Budgets::Constant { epsilon: effective(e, "--sensitivity: ".into())?, steps: t })
        }
        (Some(e), None, None) => Err(CliError::Usage(format!(
            "--epsilon {e} needs --horizon T (the number of steps), or give --budgets FILE instead"
        ))),
        (None, Some(t), None) => Err(CliError::Usage(format!(
            "--horizon {t} needs --epsilon E (the budget of every step), or give --budgets FILE instead"
        ))),
        (None, None, None) => {
            Err(CliError::Usage("give --budgets FILE, or --epsilon E with --horizon T".into()))
        }
    }
}

/// Runs `tpl leakage`.
pub fn run(args: &LeakageArgs) -> Result<LeakageReport> {
    tpl_core::check_sensitivity(args.sensitivity).map_err(|e| CliError::flag("--sensitivity", e))?;
    let budgets = budgets_from_flags(args.epsilon, args.horizon, args.budgets.as_ref(), args.sensitivity)?;
    let horizon = budgets.len();
    check_window(args.window, horizon)?;
    let correlation = args.correlation.read()?;
    // Measured at 10⁶ steps: 0.30 s, 65 MB of JSON, 21 MB of memory.
    let cost = crate::progress::StepCost { seconds: 3e-7, output: 65.0, memory: 21.0 };
    crate::progress::announce_steps(horizon, "tpl leakage", &cost);
    // Budget-size problems (overflow) are reported against where the budgets came from.
    let origin = |source| {
        let context =
            args.budgets.as_deref().map_or("--epsilon: ".to_string(), |p: &Path| format!("{}: ", name(p)));
        CliError::Core { context, source }
    };
    let bar = crate::progress::SeriesBar::new(horizon, "computing leakage");
    let series =
        CompactSeries::new_with_progress(&correlation, budgets, &|done, total| bar.update(done, total));
    bar.finish();
    let series = series.map_err(origin)?;
    let window = match args.window {
        Some(w) => Some((w, series.max_window_leakage(w).map_err(origin)?)),
        None => None,
    };
    if let Some(path) = &args.chart {
        let title = format!(
            "Temporal privacy leakage of {} releases (Σε = {})",
            series.len(),
            human(series.horizon_leakage())
        );
        tpl_report::chart::compact_leakage_chart(path, &title, &series)?;
    }
    Ok(LeakageReport { series, window })
}

impl LeakageReport {
    /// The CSV records, one step at a time (nothing the size of the horizon is built).
    fn csv_records<W: Write>(&self, w: &mut CsvWriter<W>) -> std::io::Result<()> {
        let s = &self.series;
        w.record(["t", "epsilon", "bpl", "fpl", "tpl"].iter().chain(self.window.map(|_| &"window_leakage")))?;
        let mut windows = match self.window {
            Some((window, _)) => Some(s.window_leakage(window).map_err(std::io::Error::other)?),
            None => None,
        };
        let bar = crate::progress::writing_bar(s.len(), s.len());
        for i in 0..s.len() {
            crate::progress::tick(&bar, i);
            w.value(i + 1)?;
            for v in [s.budgets().get(i), s.bpl()[i], s.fpl()[i], s.tpl_at(i)] {
                w.value(v)?;
            }
            if let Some(values) = &mut windows {
                match values.next() {
                    Some(v) => w.value(v.map_err(std::io::Error::other)?)?,
                    None => w.field("")?,
                }
            }
            w.end()?;
        }
        bar.finish_and_clear();
        Ok(())
    }
}

impl LeakageReport {
    /// The output type of the JSON, ticking `bar` (4·T or 5·T values).
    fn output<'a>(&'a self, tick: Tick<'a>) -> LeakageOutput<'a> {
        LeakageOutput { series: &self.series, window: self.window, tick }
    }
}

impl Report for LeakageReport {
    fn json(&self) -> Value {
        json_of(&self.output(NO_TICK))
    }

    /// Same bytes as `json()`, written number by number.
    fn write_json(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let n = self.series.len();
        let bar = crate::progress::writing_bar(4 * n + self.window.map_or(0, |_| n), n);
        let tick = |done: usize| crate::progress::tick(&bar, done);
        write_json_of(w, &self.output(&tick))?;
        bar.finish_and_clear();
        Ok(())
    }

    fn table(&self) -> String {
        let s = &self.series;
        let t = leakage_table(s, 8);
        let max_tpl = s.max_tpl();
        let mut out = format!(
            "Temporal privacy leakage of {} releases (Σε = {}).\n\n{}\n  max TPL = {}: the release is {}-DP_T against this adversary.\n",
            s.len(),
            human(s.horizon_leakage()),
            t.render(),
            human(max_tpl),
            human(max_tpl),
        );
        if let Some((w, max)) = self.window {
            out.push_str(&format!(
                "  worst window of {w} consecutive steps leaks {} (Theorem 3).\n",
                human(max)
            ));
        }
        out
    }

    fn write_csv(&self, w: &mut dyn Write) -> std::io::Result<()> {
        write_csv_records(w, |w| self.csv_records(w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tpl_core::TransitionMatrix;
    use tpl_core::test_util::correlation;

    fn report(budgets: Budgets, window: Option<usize>) -> LeakageReport {
        let pb = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.0, 1.0]]).unwrap();
        let pf = TransitionMatrix::new(vec![vec![0.9, 0.1], vec![0.3, 0.7]]).unwrap();
        let series = CompactSeries::new(&correlation(Some(&pb), Some(&pf)), budgets).unwrap();
        let window = window.map(|w| (w, series.max_window_leakage(w).unwrap()));
        LeakageReport { series, window }
    }

    #[test]
    fn streamed_json_and_csv_are_the_bytes_of_the_serde_rendering() {
        let cases = [
            (Budgets::Constant { epsilon: 1.0, steps: 7 }, None),
            (Budgets::Constant { epsilon: 0.1, steps: 30 }, Some(4)),
            (Budgets::PerStep(vec![0.0, 1.0, 2.5, 1e-300, 3.0, 1e20, 0.1]), Some(1)),
            (Budgets::PerStep(vec![0.5]), Some(1)),
            (Budgets::PerStep(vec![0.25, 0.5, 1.0]), Some(3)),
        ];
        for (budgets, window) in cases {
            let r = report(budgets, window);
            let mut streamed = Vec::new();
            r.write_json(&mut streamed).unwrap();
            let expected = format!("{}\n", r.json());
            assert_eq!(String::from_utf8(streamed).unwrap(), expected);
            let mut csv = Vec::new();
            r.write_csv(&mut csv).unwrap();
            let csv = String::from_utf8(csv).unwrap();
            // The CSV as the pre-streaming code built it: Display'ed fields joined by commas.
            let v = r.json();
            let line = |fields: &[String]| format!("{}\n", fields.join(","));
            let mut old = line(
                &["t", "epsilon", "bpl", "fpl", "tpl"]
                    .iter()
                    .map(|s| s.to_string())
                    .chain(window.map(|_| "window_leakage".to_string()))
                    .collect::<Vec<_>>(),
            );
            for i in 0..r.series.len() {
                let mut row = vec![(i + 1).to_string()];
                for key in ["epsilon", "bpl", "fpl", "tpl"] {
                    row.push(v[key][i].as_f64().unwrap().to_string());
                }
                if window.is_some() {
                    row.push(
                        v["window_leakage"].get(i).map_or(String::new(), |x| x.as_f64().unwrap().to_string()),
                    );
                }
                old.push_str(&line(&row));
            }
            assert_eq!(csv, old);
        }
        // serde_json prints integral doubles as `1.0`: the streamed output does too.
        let mut one = Vec::new();
        report(Budgets::Constant { epsilon: 1.0, steps: 1 }, None).write_json(&mut one).unwrap();
        assert!(String::from_utf8(one).unwrap().contains("\"epsilon\":[1.0]"));
    }

    #[test]
    fn the_table_builds_only_the_rows_it_shows() {
        let r = report(Budgets::Constant { epsilon: 0.1, steps: 1000 }, None);
        let text = r.table();
        assert!(text.contains(" 1000 ") && text.contains('…'), "{text}");
        assert_eq!(
            text.lines().filter(|l| l.trim_start().starts_with(char::is_numeric)).count(),
            16,
            "{text}"
        );
    }
}
