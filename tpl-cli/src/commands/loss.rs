//! `tpl loss`: L(α) of a matrix at the given α (TKDE eq. 24).

use std::path::PathBuf;

use clap::Args;
use serde_json::Value;
use tpl_core::Loss;
use tpl_report::output::LossOutput;

use crate::error::{CliError, Result};
use crate::matrix_file::{MatrixOptions, read_matrix};
use crate::progress;
use crate::render::{Report, Table, csv_text, human, json_of};

/// Arguments of `tpl loss`.
#[derive(Debug, Args)]
pub struct LossArgs {
    /// Transition matrix file (.csv/.txt rows, or .json array of arrays).
    #[arg(long, value_name = "FILE")]
    pub matrix: PathBuf,
    /// α ≥ 0 at which to evaluate L; repeat for several values (echoed in order).
    #[arg(long = "alpha", value_name = "A", required = true, allow_negative_numbers = true, value_parser = tpl_io::text::finite_f64)]
    pub alpha: Vec<f64>,
    #[command(flatten)]
    pub matrices: MatrixOptions,
}

/// L at each requested α.
pub struct LossReport {
    alpha: Vec<f64>,
    loss: Vec<f64>,
}

/// Runs `tpl loss`.
pub fn run(args: &LossArgs) -> Result<LossReport> {
    for &a in &args.alpha {
        if !(a.is_finite() && a >= 0.0) {
            return Err(CliError::Usage(format!("--alpha {a}: α must be a finite number ≥ 0")));
        }
    }
    let matrix = read_matrix(&args.matrix, &args.matrices)?;
    // Rows scanned: once to build the piecewise L, or once per α evaluated directly.
    let (n, k) = (matrix.n(), args.alpha.len());
    let bar = progress::scan_bar(n, n, "computing L(α)");
    let loss = Loss::with_progress(&matrix, k, &|done, _| bar.set_position(done as u64));
    if matches!(loss, Loss::Direct(_)) {
        bar.set_length((k * n) as u64);
    }
    let values = (args.alpha.iter().enumerate())
        .map(|(i, &a)| loss.loss_with_progress(a, &|done, _| bar.set_position((i * n + done) as u64)))
        .collect();
    bar.finish_and_clear();
    Ok(LossReport { alpha: args.alpha.clone(), loss: values })
}

impl Report for LossReport {
    fn json(&self) -> Value {
        json_of(&LossOutput { alpha: &self.alpha, loss: &self.loss })
    }

    fn csv(&self) -> String {
        csv_text(|w| {
            w.record(["alpha", "loss"])?;
            for (a, l) in self.alpha.iter().zip(&self.loss) {
                w.value(a)?;
                w.value(l)?;
                w.end()?;
            }
            Ok(())
        })
    }

    fn table(&self) -> String {
        let mut t = Table::new(&["α", "L(α)", "L(α)/α"]);
        for (&a, &l) in self.alpha.iter().zip(&self.loss) {
            let ratio = if a > 0.0 { human(l / a) } else { "-".into() };
            t.row(vec![human(a), human(l), ratio]);
        }
        format!(
            "Temporal privacy loss L(α): how much leakage α at one step adds at the next\n\
             (0 = no correlation, α = strongest correlation).\n\n{}",
            t.render()
        )
    }
}
