//! `tpl estimate`: the forward and backward transition matrices of a user stream (what an
//! adversary, or the post-processor, learns from public trajectories; TKDE §6), with
//! optional Laplacian smoothing (TKDE eq. 28).

use std::path::PathBuf;

use clap::Args;
use serde_json::{Value, json};
use tpl_core::{EstimatedMatrix, TransitionCounts, TransitionMatrix};

use crate::commands::simulate::{create_dir, write_file};
use crate::error::{CliError, Result};
use crate::render::{Report, csv_line};
use crate::stream_file::{matrix_text, read_stream};

/// Arguments of `tpl estimate`.
#[derive(Debug, Args)]
pub struct EstimateArgs {
    /// User stream: `timestamp_bucket,user_id,location_cell`, one row per user per bucket.
    #[arg(long, value_name = "FILE")]
    pub stream: PathBuf,
    /// Laplacian smoothing s ≥ 0 of both matrices, (p + s)/Σ(p + s) per row (TKDE eq. 28).
    #[arg(long, value_name = "s", allow_negative_numbers = true)]
    pub smoothing: Option<f64>,
    /// Number of cells n (default: 1 + the largest cell in the stream).
    #[arg(long, value_name = "n")]
    pub cells: Option<usize>,
    /// Folder for transition_forward.csv, transition_backward.csv, transition_counts.csv.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// The estimated matrices.
pub struct EstimateReport {
    users: usize,
    horizon: usize,
    counts: TransitionCounts,
    forward: EstimatedMatrix,
    backward: EstimatedMatrix,
    smoothing: Option<f64>,
    out: PathBuf,
}

/// Runs `tpl estimate`.
pub fn run(args: &EstimateArgs) -> Result<EstimateReport> {
    let stream = read_stream(&args.stream)?;
    let cells = match args.cells {
        Some(n) if n < stream.cells => {
            return Err(CliError::Usage(format!(
                "--cells {n}: {} has cell {} (cells are 0..n−1)",
                args.stream.display(),
                stream.cells - 1
            )));
        }
        Some(n) => n,
        None => stream.cells,
    };
    let counts = TransitionCounts::from_paths(cells, &stream.states)
        .map_err(|e| CliError::Core { context: format!("{}: ", args.stream.display()), source: e })?;
    let smooth = |m: EstimatedMatrix| -> Result<EstimatedMatrix> {
        match args.smoothing {
            Some(s) => Ok(EstimatedMatrix {
                matrix: m.matrix.smoothed(s).map_err(|e| CliError::flag("--smoothing", e))?,
                empty_rows: m.empty_rows,
            }),
            None => Ok(m),
        }
    };
    let forward = smooth(counts.forward()?)?;
    let backward = smooth(counts.backward()?)?;
    let report = EstimateReport {
        users: stream.states[0].len(),
        horizon: stream.states.len(),
        counts,
        forward,
        backward,
        smoothing: args.smoothing,
        out: args.out.clone(),
    };
    report.write()?;
    for (side, m) in [("forward", &report.forward), ("backward", &report.backward)] {
        if !m.empty_rows.is_empty() {
            eprintln!(
                "tpl: note: {side} rows without data became identity rows: cells {}",
                list(&m.empty_rows)
            );
        }
    }
    Ok(report)
}

fn list(cells: &[usize]) -> String {
    cells.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

impl EstimateReport {
    fn write(&self) -> Result<()> {
        create_dir(&self.out)?;
        let source = self.out_comment();
        let matrix = |m: &TransitionMatrix| {
            m.rows().map(|r| r.iter().map(f64::to_string).collect::<Vec<_>>()).collect::<Vec<_>>()
        };
        write_file(
            &self.out.join("transition_forward.csv"),
            &matrix_text(
                &format!(
                    "{source}\nP_F[i][j] = Pr(cell j at t+1 | cell i at t); identity rows: [{}]",
                    list(&self.forward.empty_rows)
                ),
                matrix(&self.forward.matrix).into_iter(),
            ),
        )?;
        write_file(
            &self.out.join("transition_backward.csv"),
            &matrix_text(
                &format!(
                    "{source}\nP_B[j][i] = Pr(cell i at t-1 | cell j at t); identity rows: [{}]",
                    list(&self.backward.empty_rows)
                ),
                matrix(&self.backward.matrix).into_iter(),
            ),
        )?;
        let n = self.counts.n();
        write_file(
            &self.out.join("transition_counts.csv"),
            &matrix_text(
                &format!("{source}\nC[i][j] = number of (user, t) with cell i at t and cell j at t+1"),
                (0..n).map(|i| self.counts.row(i).iter().map(u64::to_string).collect()),
            ),
        )
    }

    fn out_comment(&self) -> String {
        let smoothing = self.smoothing.map_or("none".to_string(), |s| format!("s = {s}"));
        format!(
            "tpl estimate: {} users, {} steps, {} cells; Laplacian smoothing {smoothing}",
            self.users,
            self.horizon,
            self.counts.n()
        )
    }

    fn transitions(&self) -> u64 {
        (0..self.counts.n()).map(|i| self.counts.row(i).iter().sum::<u64>()).sum()
    }

    fn staying(&self) -> u64 {
        (0..self.counts.n()).map(|i| self.counts.count(i, i)).sum()
    }
}

impl Report for EstimateReport {
    fn json(&self) -> Value {
        json!({
            "users": self.users,
            "horizon": self.horizon,
            "cells": self.counts.n(),
            "transitions": self.transitions(),
            "smoothing": self.smoothing,
            "forward_identity_rows": self.forward.empty_rows,
            "backward_identity_rows": self.backward.empty_rows,
            "out": self.out.display().to_string(),
            "files": ["transition_forward.csv", "transition_backward.csv", "transition_counts.csv"],
        })
    }

    fn csv(&self) -> String {
        let mut out = csv_line(&["file".into()]);
        for f in ["transition_forward.csv", "transition_backward.csv", "transition_counts.csv"] {
            out.push_str(&csv_line(&[self.out.join(f).display().to_string()]));
        }
        out
    }

    fn table(&self) -> String {
        let total = self.transitions();
        let stay = if total > 0 { 100.0 * self.staying() as f64 / total as f64 } else { 0.0 };
        let empty = |m: &EstimatedMatrix| {
            if m.empty_rows.is_empty() { "none".to_string() } else { list(&m.empty_rows) }
        };
        format!(
            "{}.\n{total} transitions, {stay:.1} % of them stay in the same cell.\n\
             Rows without data (set to identity): forward {}, backward {}.\n\
             Wrote transition_forward.csv, transition_backward.csv and transition_counts.csv to {}.\n",
            self.out_comment(),
            empty(&self.forward),
            empty(&self.backward),
            self.out.display()
        )
    }
}
