//! `tpl allocate`: budgets per step that keep temporal leakage under α (TKDE Algorithms 7
//! and 8, and the window allocator), with the audit of what they achieve.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde_json::{Value, json};
use tpl_alloc::{
    AllocError, Allocation, Allocator, Correlation, Quantified, Quantity, Side, UpperBound, WindowAllocator,
    audit,
};
use tpl_core::{CoreError, Supremum};

use crate::args::CorrelationArgs;
use crate::error::{CliError, Result};
use crate::limits::check_horizon;
use crate::render::{Report, Table, csv_text, human};

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

/// Arguments of `tpl allocate`.
#[derive(Debug, Args)]
pub struct AllocateArgs {
    /// Allocation strategy.
    #[arg(long, value_enum)]
    pub strategy: Strategy,
    #[command(flatten)]
    pub correlation: CorrelationArgs,
    /// Target leakage α > 0.
    #[arg(long, value_name = "A", allow_negative_numbers = true, value_parser = crate::text::finite_f64)]
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
    if let Some(w) = args.window
        && (w == 0 || w > args.horizon)
    {
        return Err(CliError::flag("--window", CoreError::BadWindow { window: w, horizon: args.horizon }));
    }
    let (pb, pf) = args.correlation.read()?;
    let corr = Correlation::new(pb.as_ref(), pf.as_ref()).map_err(|source| {
        let context = match (&args.correlation.backward, &args.correlation.forward) {
            (Some(b), Some(f)) => format!("{} and {}: ", b.display(), f.display()),
            _ => String::new(),
        };
        CliError::Alloc { context, source }
    })?;
    let allocated = match args.strategy {
        Strategy::UpperBound => UpperBound::new(&corr, args.alpha).allocate(args.horizon),
        Strategy::Quantified => Quantified::new(&corr, args.alpha).allocate(args.horizon),
        Strategy::Window => {
            let w = args.window.ok_or_else(|| {
                CliError::Usage("--strategy window needs --window W (the window length)".into())
            })?;
            WindowAllocator::new(&corr, args.alpha, w).allocate(args.horizon)
        }
    };
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
    let window = match (allocation.audit.window, allocation.audit.max_window_leakage, args.window) {
        (Some(w), Some(m), _) => Some((w, m)),
        (_, _, Some(w)) => {
            let m = audit(&corr, allocation.budgets(), Some(w))
                .map_err(|source| CliError::Alloc { context: "--window: ".into(), source })?
                .max_window_leakage;
            m.map(|m| (w, m))
        }
        _ => None,
    };
    if let Some(path) = &args.chart {
        let title = format!(
            "Strategy {}: budgets and audited leakage (α = {}, T = {})",
            allocation.strategy,
            human(args.alpha),
            args.horizon
        );
        crate::chart::leakage_chart(path, &title, &allocation.audit.series)?;
    }
    Ok(AllocateReport { alpha: args.alpha, allocation, window })
}

fn file_context(path: Option<&PathBuf>) -> String {
    path.map_or(String::new(), |p| format!("{}: ", p.display()))
}

fn sup_json(s: Supremum) -> Value {
    s.value().map_or(Value::Null, |v| json!(v))
}

fn quantity_name(q: Quantity) -> &'static str {
    match q {
        Quantity::MaxTpl => "max_tpl",
        Quantity::TplEveryStep => "tpl_every_step",
        Quantity::MaxWindowLeakage { .. } => "max_window_leakage",
    }
}

impl Report for AllocateReport {
    fn json(&self) -> Value {
        let a = &self.allocation;
        let mut obj = json!({
            "strategy": a.strategy,
            "alpha": self.alpha,
            "budgets": a.budgets(),
            "bpl": a.audit.series.bpl(),
            "fpl": a.audit.series.fpl(),
            "tpl": a.audit.series.tpl(),
            "max_tpl": a.max_tpl(),
            "sup_backward": sup_json(a.sup_backward),
            "sup_forward": sup_json(a.sup_forward),
        });
        if let Some((w, m)) = self.window {
            obj["window"] = json!(w);
            obj["max_window_leakage"] = json!(m);
        }
        obj["guarantee"] = json!({
            "quantity": quantity_name(a.guarantee.quantity),
            "bound": a.guarantee.bound,
            "holds": a.guarantee.holds(&a.audit),
        });
        obj
    }

    fn csv(&self) -> String {
        let a = &self.allocation;
        csv_text(|w| {
            w.record(["t", "budget", "bpl", "fpl", "tpl"])?;
            for i in 0..a.budgets().len() {
                w.value(i + 1)?;
                for v in [
                    a.budgets()[i],
                    a.audit.series.bpl()[i],
                    a.audit.series.fpl()[i],
                    a.audit.series.tpl()[i],
                ] {
                    w.value(v)?;
                }
                w.end()?;
            }
            Ok(())
        })
    }

    fn table(&self) -> String {
        let a = &self.allocation;
        let mut t = Table::new(&["t", "ε_t", "BPL_t", "FPL_t", "TPL_t"]);
        for i in 0..a.budgets().len() {
            t.row(vec![
                (i + 1).to_string(),
                human(a.budgets()[i]),
                human(a.audit.series.bpl()[i]),
                human(a.audit.series.fpl()[i]),
                human(a.audit.series.tpl()[i]),
            ]);
        }
        t.elide(3);
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
        out
    }
}
