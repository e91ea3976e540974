//! `tpl estimate`: the forward and backward transition matrices of a user stream (what an
//! adversary, or the post-processor, learns from public trajectories; TKDE §6), with
//! optional Laplacian smoothing (TKDE eq. 28).
//!
//! Row and column i of the matrices is the i-th cell id of the stream in ascending order
//! (written to `cells.csv` and the JSON `cell_ids`); when the ids are 0..k−1, or with
//! `--cells n`, row i is cell id i.

use std::path::PathBuf;

use clap::Args;
use serde_json::Value;
use tpl_core::{EstimatedMatrix, Short, StepRange, Steps, TransitionCounts, TransitionMatrix};
use tpl_io::{ESTIMATE_FILES, MAX_CELLS, MAX_SPARSE_CELLS, count_user_stream, estimate_files};
use tpl_report::output::EstimationOutput;

use crate::error::{CliError, Result};
use crate::limits::check_cells_up_to;
use crate::output_dir::{create_dir, write_file};
use crate::render::{Report, csv_text, json_of};

/// Arguments of `tpl estimate`.
#[derive(Debug, Args)]
pub struct EstimateArgs {
    /// User stream: `timestamp_bucket,user_id,location_cell`, one row per user per bucket.
    #[arg(long, value_name = "FILE")]
    pub stream: PathBuf,
    /// Laplacian smoothing s ≥ 0 of both matrices, (p + s)/Σ(p + s) per row (TKDE eq. 28).
    #[arg(long, value_name = "s", allow_negative_numbers = true, value_parser = tpl_io::text::finite_f64)]
    pub smoothing: Option<f64>,
    /// Index the matrices by cell id: rows 0..n−1 are cell ids 0..n−1, cells never seen
    /// get identity rows (default: one row per distinct cell id, ascending).
    #[arg(long, value_name = "n")]
    pub cells: Option<usize>,
    /// Estimate from steps A..B of the stream only (both included; A.. and ..B run to its
    /// end): step t is the t-th time bucket in ascending order, from 1. A move into step A or
    /// out of step B is not counted; the rows are still the cells of the whole stream.
    #[arg(long, value_name = "A..B")]
    pub steps: Option<StepRange>,
    /// Write the matrices and counts sparse — `from,to,p` and `from,to,count`, non-zero entries
    /// only — for streams of up to 65,534 cells (dense files stop at 4096); the commands that
    /// read them keep them sparse. Not with --smoothing, which leaves no entry zero: give
    /// --smoothing s to the commands that read the matrices instead.
    #[arg(long)]
    pub sparse: bool,
    /// Folder for transition_forward.csv, transition_backward.csv, transition_counts.csv
    /// and cells.csv (the cell id of each row/column).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// The estimated matrices.
pub struct EstimateReport {
    /// The original cell id of each matrix row/column.
    cell_ids: Vec<u64>,
    /// First bucket and bucket spacing of the steps estimated from.
    buckets: (u64, u64),
    users: usize,
    /// The steps estimated from, and the number of steps of the stream.
    steps: (Steps, usize),
    horizon: usize,
    counts: TransitionCounts,
    forward: EstimatedMatrix,
    backward: EstimatedMatrix,
    smoothing: Option<f64>,
    sparse: bool,
    out: PathBuf,
}

/// Runs `tpl estimate`.
pub fn run(args: &EstimateArgs) -> Result<EstimateReport> {
    // Notes are said once the matrices exist (an error stays one line).
    let mut notes = Vec::new();
    if let Some(s) = args.smoothing {
        TransitionMatrix::check_smoothing(s).map_err(|e| CliError::flag("--smoothing", e))?;
        if args.sparse {
            return Err(CliError::Usage(format!(
                "--smoothing {} with --sparse: a smoothed matrix has no zero entry to leave out; \
                 write the sparse estimate and give --smoothing {} to the commands that read it",
                Short(s),
                Short(s)
            )));
        }
    }
    let limit = if args.sparse { MAX_SPARSE_CELLS } else { MAX_CELLS };
    if let Some(n) = args.cells {
        check_cells_up_to(n, limit)?;
    }
    let counted = count_user_stream(&args.stream, args.steps.unwrap_or(StepRange::ALL))?;
    if !args.sparse && counted.cell_ids.len() > MAX_CELLS {
        return Err(CliError::Usage(format!(
            "{}: {} distinct cells: dense matrices stop at {MAX_CELLS}; --sparse writes them as from,to,p",
            args.stream.display(),
            counted.cell_ids.len()
        )));
    }
    let (first, spacing) = counted.buckets;
    let (users, total) = (counted.users, counted.steps);
    let (cell_ids, counts) = match args.cells {
        Some(n) => {
            let largest = counted.cell_ids.last().copied().unwrap_or(0);
            if largest >= n as u64 {
                return Err(CliError::Usage(format!(
                    "--cells {n}: {} has cell {largest} (cells are 0..n−1)",
                    args.stream.display()
                )));
            }
            // Index by id: position i in the stream's id list becomes id i.
            let by_id: Vec<usize> = counted.cell_ids.iter().map(|&id| id as usize).collect();
            let counts = counted.sparse_counts(&args.stream)?.relabeled(&by_id, n)?;
            ((0..n as u64).collect(), counts)
        }
        None => {
            let cell_ids = counted.cell_ids.clone();
            let indices = counted.ids_are_indices();
            let counts = counted.sparse_counts(&args.stream)?;
            if !indices {
                notes.push(format!(
                    "cell ids are not 0..{}: row and column i of the matrices is the i-th distinct cell id, \
                     ascending (see cells.csv; --cells n indexes by id instead)",
                    cell_ids.len() - 1
                ));
            }
            (cell_ids, counts)
        }
    };
    // The moves were counted within the range as typed; it must also lie within the stream.
    let steps =
        args.steps.unwrap_or(StepRange::ALL).resolve(total).map_err(|e| CliError::flag("--steps", e))?;
    // The first bucket of the range: an existing bucket, so no overflow.
    let first = first.saturating_add(spacing.saturating_mul(steps.indices().start as u64));
    // The one construction of the matrices from the counts (docs/formats.md §6.1).
    let (forward, backward) =
        counts.matrices(args.smoothing).map_err(|e| CliError::flag("--smoothing", e))?;
    let report = EstimateReport {
        cell_ids,
        buckets: (first, spacing),
        users,
        steps: (steps, total),
        horizon: steps.len(),
        counts,
        forward,
        backward,
        smoothing: args.smoothing,
        sparse: args.sparse,
        out: args.out.clone(),
    };
    report.write()?;
    for (side, m) in [("forward", &report.forward), ("backward", &report.backward)] {
        if !m.empty_rows.is_empty() {
            notes.push(format!(
                "{side} rows without data{} became identity rows: cell ids {}",
                if steps.len() == total { String::new() } else { format!(" in steps {steps}") },
                report.ids(&m.empty_rows)
            ));
        }
    }
    for note in notes {
        eprintln!("tpl: note: {note}");
    }
    Ok(report)
}

impl EstimateReport {
    /// The cell ids of matrix rows `rows`, comma-separated: the first 20 and how many more
    /// (the files list them all).
    fn ids(&self, rows: &[usize]) -> String {
        const SHOWN: usize = 20;
        let list =
            rows.iter().take(SHOWN).map(|&i| self.cell_ids[i].to_string()).collect::<Vec<_>>().join(", ");
        match rows.len().checked_sub(SHOWN) {
            Some(more) if more > 0 => format!("{list} and {more} more"),
            _ => list,
        }
    }

    fn write(&self) -> Result<()> {
        create_dir(&self.out)?;
        let (f, b) = (&self.forward, &self.backward);
        let files = estimate_files(&self.out_comment(), &self.cell_ids, &self.counts, (f, b), self.sparse);
        for (name, text) in files {
            write_file(&self.out.join(name), &text)?;
        }
        Ok(())
    }

    fn out_comment(&self) -> String {
        let smoothing = self.smoothing.map_or("none".to_string(), |s| format!("s = {}", Short(s)));
        let (steps, total) = self.steps;
        let part = if steps.len() == total { String::new() } else { format!(" {steps} of {total}") };
        format!(
            "tpl estimate: {} users, {} steps{part} (buckets {} to {} every {}), {} cells; Laplacian smoothing {smoothing}",
            self.users,
            self.horizon,
            self.buckets.0,
            self.buckets.0 as u128 + (self.horizon as u128 - 1) * self.buckets.1 as u128,
            self.buckets.1,
            self.counts.n()
        )
    }

    fn transitions(&self) -> u128 {
        self.counts.total()
    }

    fn staying(&self) -> u128 {
        (0..self.counts.n()).map(|i| u128::from(self.counts.count(i, i))).sum()
    }
}

impl Report for EstimateReport {
    fn json(&self) -> Value {
        #[derive(serde::Serialize)]
        struct Fields<'a> {
            #[serde(flatten)]
            estimation: EstimationOutput<'a>,
            sparse: bool,
            out: String,
            files: [&'static str; 4],
        }
        json_of(&Fields {
            estimation: EstimationOutput {
                users: self.users,
                steps: self.steps.0,
                cell_ids: &self.cell_ids,
                counts: &self.counts,
                forward: &self.forward,
                backward: &self.backward,
                smoothing: self.smoothing,
            },
            sparse: self.sparse,
            out: self.out.display().to_string(),
            files: ESTIMATE_FILES,
        })
    }

    fn csv(&self) -> String {
        csv_text(|w| {
            w.record(["file"])?;
            for f in ESTIMATE_FILES {
                w.record([self.out.join(f).display().to_string()])?;
            }
            Ok(())
        })
    }

    fn table(&self) -> String {
        let total = self.transitions();
        let stay = if total > 0 { 100.0 * self.staying() as f64 / total as f64 } else { 0.0 };
        let empty = |m: &EstimatedMatrix| {
            if m.empty_rows.is_empty() {
                "none".to_string()
            } else {
                format!("cell ids {}", self.ids(&m.empty_rows))
            }
        };
        format!(
            "{}.\n{total} transitions, {stay:.1} % of them stay in the same cell.\n\
             Rows without data (set to identity): forward {}, backward {}.\n\
             Wrote transition_forward.csv, transition_backward.csv, transition_counts.csv and cells.csv \
             (the cell id of each row) to {}.\n",
            self.out_comment(),
            empty(&self.forward),
            empty(&self.backward),
            self.out.display()
        )
    }
}
