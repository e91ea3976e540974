//! `tpl supremum`: the limit of BPL (or FPL) under a constant budget (TKDE Theorem 11).

use std::path::PathBuf;

use clap::Args;
use serde_json::Value;
use tpl_core::{PiecewiseLoss, Supremum};
use tpl_report::output::SupremumOutput;

use crate::error::{CliError, Result};
use crate::matrix_file::{MatrixOptions, read_matrix};
use crate::progress;
use crate::render::{Report, csv_text, human, json_of};

/// Arguments of `tpl supremum`.
#[derive(Debug, Args)]
pub struct SupremumArgs {
    /// Transition matrix file (P_B for BPL, P_F for FPL).
    #[arg(long, value_name = "FILE")]
    pub matrix: PathBuf,
    /// The budget ε > 0 spent at every step.
    #[arg(long, value_name = "E", allow_negative_numbers = true, value_parser = tpl_io::text::finite_f64)]
    pub epsilon: f64,
    #[command(flatten)]
    pub matrices: MatrixOptions,
}

/// The supremum and the budget it was computed for.
pub struct SupremumReport {
    epsilon: f64,
    supremum: Supremum,
}

/// Runs `tpl supremum`.
pub fn run(args: &SupremumArgs) -> Result<SupremumReport> {
    tpl_core::check_epsilon(args.epsilon).map_err(|e| CliError::flag("--epsilon", e))?;
    let matrix = read_matrix(&args.matrix, &args.matrices)?;
    let bar = progress::scan_bar(matrix.n(), matrix.n(), "building L");
    let loss = PiecewiseLoss::with_progress(&matrix, &|done, _| bar.set_position(done as u64));
    bar.finish_and_clear();
    let supremum = loss.supremum(args.epsilon).map_err(|e| CliError::flag("--epsilon", e))?;
    Ok(SupremumReport { epsilon: args.epsilon, supremum })
}

impl Report for SupremumReport {
    fn json(&self) -> Value {
        json_of(&SupremumOutput { epsilon: self.epsilon, supremum: self.supremum })
    }

    fn csv(&self) -> String {
        let sup = self.supremum.value().map_or(String::new(), |v| v.to_string());
        csv_text(|w| {
            w.record(["epsilon", "bounded", "supremum"])?;
            w.value(self.epsilon)?;
            w.value(self.supremum.value().is_some())?;
            w.field(&sup)?;
            w.end()
        })
    }

    fn table(&self) -> String {
        match self.supremum {
            Supremum::Bounded(v) => format!(
                "With ε = {} at every step, the leakage converges to {} ({}× ε).\n",
                human(self.epsilon),
                human(v),
                human(v / self.epsilon)
            ),
            Supremum::Unbounded => format!(
                "With ε = {} at every step, the leakage grows without bound: no constant budget this \
                 large keeps it finite for this correlation.\n",
                human(self.epsilon)
            ),
        }
    }
}
