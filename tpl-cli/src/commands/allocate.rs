//! `tpl allocate`: budgets per step that keep temporal leakage under α (TKDE Algorithms 7
//! and 8, and the window allocator), with the audit of what they achieve.
//!
//! Memory is the audited series, two doubles a step (the budgets are stored once): the JSON
//! and CSV outputs are written number by number and the table builds only the rows it shows.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde_json::Value;
use tpl_alloc::{AllocError, Allocation, AllocatorKind, Quantity, Side};
use tpl_core::{CoreError, Short, Supremum};
use tpl_report::output::{AllocationOutput, NO_TICK, Tick, cap_note};

use crate::args::CorrelationArgs;
use crate::error::{CliError, Result};
use crate::limits::{check_horizon, check_window};

use crate::render::{CsvWriter, Report, human, json_of, leakage_table, write_csv_records, write_json_of};

/// The allocation strategies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Strategy {
    /// One constant ε whose limit TPL is α (Algorithm 7); any horizon.
    UpperBound,
    /// More ε at the first and last steps so that TPL_t = α exactly (Algorithm 8).
    Quantified,
    /// Largest constant ε with every window of W steps leaking ≤ α (needs --window).
    Window,
}

impl Strategy {
    /// The allocator of `tpl-alloc` it names.
    fn kind(self) -> AllocatorKind {
        match self {
            Self::UpperBound => AllocatorKind::UpperBound,
            Self::Quantified => AllocatorKind::Quantified,
            Self::Window => AllocatorKind::Window,
        }
    }
}

/// Arguments of `tpl allocate`.
#[derive(Debug, Args)]
pub struct AllocateArgs {
    /// Allocation strategy.
    #[arg(long, value_enum)]
    pub strategy: Strategy,
    #[command(flatten)]
    pub correlation: CorrelationArgs,
    /// Target leakage α > 0.
    #[arg(long, value_name = "A", allow_negative_numbers = true, value_parser = tpl_io::text::finite_f64)]
    pub alpha: f64,
    /// Number of steps T ≥ 1.
    #[arg(long, value_name = "T")]
    pub horizon: usize,
    /// Window length W (1 ≤ W ≤ T): required by `window`; for the other strategies the
    /// audit also reports the largest leakage of W consecutive steps.
    #[arg(long, value_name = "W")]
    pub window: Option<usize>,
    /// Write an SVG chart of the budgets ε_t and the audited BPL, FPL, TPL over time.
    #[arg(long, value_name = "FILE.svg")]
    pub chart: Option<PathBuf>,
}

/// The allocation, and the window audit when one was asked for.
pub struct AllocateReport {
    alpha: f64,
    allocation: Allocation,
    window: Option<(usize, f64)>,
}

/// Runs `tpl allocate`.
pub fn run(args: &AllocateArgs) -> Result<AllocateReport> {
    if !(args.alpha.is_finite() && args.alpha > 0.0) {
        return Err(CliError::Alloc {
            context: "--alpha: ".into(),
            source: AllocError::Core(CoreError::BadAlpha(args.alpha)),
        });
    }
    check_horizon(args.horizon)?;
    check_window(args.window, args.horizon)?;
    let corr = args.correlation.read()?;
    let kind = args.strategy.kind();
    if kind == AllocatorKind::Window && args.window.is_none() {
        return Err(CliError::Usage("--strategy window needs --window W (the window length)".into()));
    }
    // Measured for `window` at 10⁷ steps: 20 s, 788 MB of JSON, 162 MB of memory (its
    // search audits many series; the other strategies cost far less).
    let cost = crate::progress::StepCost { seconds: 2e-6, output: 79.0, memory: 16.0 };
    if kind == AllocatorKind::Window {
        crate::progress::announce_steps(args.horizon, "tpl allocate --strategy window", &cost);
    }
    let bar = crate::progress::SeriesBar::new(args.horizon, "allocating");
    let progress = |done, total| bar.update(done, total);
    let allocated = kind.allocate_with_progress(&corr, args.alpha, args.horizon, args.window, &progress);
    bar.finish();
    let allocation = allocated.map_err(|source| {
        let context = match &source {
            AllocError::Unbounded { side: Side::Backward } => {
                file_context(args.correlation.backward.as_ref())
            }
            AllocError::Unbounded { side: Side::Forward } => file_context(args.correlation.forward.as_ref()),
            _ => String::new(),
        };
        CliError::Alloc { context, source }
    })?;
    let window = allocation.window_audit(args.window).map_err(|source| match source {
        // The window is valid (checked above): what overflows is the leakage of budgets as
        // large as α asks for.
        AllocError::Core(CoreError::Overflow { step }) => CliError::Usage(format!(
            "--alpha {}: the leakage of the window of {} steps from step {step} overflows (it exceeds the \
             largest double, about 1.8e308): the budgets this α calls for are too large to audit a window; give \
             a smaller --alpha, or leave out --window",
            Short(args.alpha),
            args.window.unwrap_or(0)
        )),
        source => CliError::Alloc { context: "--window: ".into(), source },
    })?;
    if let Some(path) = &args.chart {
        let title = format!(
            "Strategy {}: budgets and audited leakage (α = {}, T = {})",
            allocation.strategy,
            human(args.alpha),
            args.horizon
        );
        tpl_report::chart::compact_leakage_chart(path, &title, &allocation.audit.series)?;
    }
    Ok(AllocateReport { alpha: args.alpha, allocation, window })
}

fn file_context(path: Option<&PathBuf>) -> String {
    path.map_or(String::new(), |p| format!("{}: ", p.display()))
}

impl AllocateReport {
    /// The output type of the JSON, its per-step arrays ticking `tick` (4·T values).
    fn output<'a>(&'a self, tick: Tick<'a>) -> AllocationOutput<'a> {
        AllocationOutput {
            alpha: self.alpha,
            allocation: &self.allocation,
            window: self.window,
            arrays: true,
            tick,
        }
    }

    /// The CSV records, one step at a time.
    fn csv_records<W: Write>(&self, w: &mut CsvWriter<W>) -> std::io::Result<()> {
        w.record(["t", "budget", "bpl", "fpl", "tpl"])?;
        let s = &self.allocation.audit.series;
        let n = self.allocation.audit.series.len();
        let bar = crate::progress::writing_bar(n, n);
        for i in 0..n {
            crate::progress::tick(&bar, i);
            w.value(i + 1)?;
            for v in [s.budgets().get(i), s.bpl()[i], s.fpl()[i], s.tpl_at(i)] {
                w.value(v)?;
            }
            w.end()?;
        }
        bar.finish_and_clear();
        Ok(())
    }
}

impl Report for AllocateReport {
    fn json(&self) -> Value {
        json_of(&self.output(NO_TICK))
    }

    /// Same bytes as `json()`, the arrays written number by number.
    fn write_json(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let n = self.allocation.audit.series.len();
        let bar = crate::progress::writing_bar(4 * n, n);
        let tick = |done: usize| crate::progress::tick(&bar, done);
        write_json_of(w, &self.output(&tick))?;
        bar.finish_and_clear();
        Ok(())
    }

    fn table(&self) -> String {
        let a = &self.allocation;
        let s = &a.audit.series;
        let t = leakage_table(s, 3);
        let sup = |s: Supremum| s.value().map_or("unbounded".to_string(), human);
        let promise = match a.guarantee.quantity {
            Quantity::MaxTpl => format!("TPL_t ≤ {} at every step, for any horizon", human(self.alpha)),
            Quantity::TplEveryStep => format!("TPL_t = {} at every step", human(self.alpha)),
            Quantity::MaxWindowLeakage { window } => {
                format!("every {window} consecutive steps leak ≤ {} (Theorem 3)", human(self.alpha))
            }
        };
        let mut out = format!(
            "Strategy {}: {promise}.\n\n{}\n  steady budget ε = {} (sup BPL {}, sup FPL {})\n  achieved max TPL = {}; \
             guarantee {}\n",
            a.strategy,
            t.render(),
            human(a.steady_budget),
            sup(a.sup_backward),
            sup(a.sup_forward),
            human(a.max_tpl()),
            if a.guarantee.holds(&a.audit) { "holds" } else { "VIOLATED" },
        );
        if let Some((w, m)) = self.window {
            out.push_str(&format!("  largest leakage of {w} consecutive steps = {}\n", human(m)));
        }
        if let Some(cap) = &a.limited_by {
            out.push_str(&format!("  note: {}\n", cap_note(cap, self.alpha, a.max_tpl())));
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

    fn report(
        pb: &TransitionMatrix,
        strategy: Strategy,
        alpha: f64,
        horizon: usize,
        window: Option<usize>,
    ) -> AllocateReport {
        let pf = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.1, 0.9]]).unwrap();
        let corr = correlation(Some(pb), Some(&pf));
        let allocation = strategy
            .kind()
            .allocate_with_progress(&corr, alpha, horizon, Some(window.unwrap_or(1)), &|_, _| {})
            .unwrap();
        let window = window.map(|w| (w, allocation.audit.series.max_window_leakage(w).unwrap()));
        AllocateReport { alpha, allocation, window }
    }

    #[test]
    fn streamed_json_and_csv_are_the_bytes_of_the_object_rendering() {
        let fig8 = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.2, 0.8]]).unwrap();
        let absorbing = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.0, 1.0]]).unwrap();
        let cases = [
            (&fig8, Strategy::UpperBound, 1.0, 1, None),
            (&fig8, Strategy::UpperBound, 1.0, 12, Some(3)),
            (&fig8, Strategy::Quantified, 1.0, 2, None),
            (&fig8, Strategy::Quantified, 0.5, 9, Some(9)),
            (&fig8, Strategy::Window, 1.0, 10, Some(4)),
            (&absorbing, Strategy::UpperBound, 1e300, 5, None),
        ];
        for (pb, strategy, alpha, horizon, window) in cases {
            let r = report(pb, strategy, alpha, horizon, window);
            let mut streamed = Vec::new();
            r.write_json(&mut streamed).unwrap();
            assert_eq!(String::from_utf8(streamed).unwrap(), format!("{}\n", r.json()), "{strategy:?}");
            let mut csv = Vec::new();
            r.write_csv(&mut csv).unwrap();
            assert_eq!(String::from_utf8(csv).unwrap(), r.csv());
            // The CSV as the object's numbers print (Display, shortest round trip).
            let v = r.json();
            let mut lines = r.csv().lines().map(str::to_string).collect::<Vec<_>>().into_iter();
            assert_eq!(lines.next().unwrap(), "t,budget,bpl,fpl,tpl");
            for (i, line) in lines.enumerate() {
                let fields: Vec<String> = ["budgets", "bpl", "fpl", "tpl"]
                    .iter()
                    .map(|k| v[k][i].as_f64().unwrap().to_string())
                    .collect();
                assert_eq!(line, format!("{},{}", i + 1, fields.join(",")));
            }
        }
    }

    #[test]
    fn the_table_builds_only_the_rows_it_shows() {
        let fig8 = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.2, 0.8]]).unwrap();
        let text = report(&fig8, Strategy::UpperBound, 1.0, 1000, None).table();
        assert!(text.contains(" 1000 ") && text.contains('…'), "{text}");
        let rows = text.lines().filter(|l| l.trim_start().starts_with(char::is_numeric)).count();
        assert_eq!(rows, 6, "{text}");
    }
}
