//! `tpl simulate`: a synthetic population of Markov users (the data model of the TKDE and
//! DBSec experiments), written as `stream.csv` and `counts.csv`
//! ([`docs/formats.md`](tpl_core::guide::formats) §10).

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;
use tpl_compare::{Seed, USERS_STREAM, histogram, simulate_users};
use tpl_core::TransitionMatrix;
use tpl_io::{counts_text, matrix_text, sparse_matrix_text, stream_text};

use crate::args::SeedArgs;
use crate::error::{CliError, Result};
use crate::limits::{check_cells, check_horizon};
use crate::matrix_file::{MatrixOptions, read_matrix};
use crate::output_dir::{create_dir, write_file};
use crate::render::{Report, Table, csv_text, human, json_of};

/// Arguments of `tpl simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// Forward matrix the users move by (row i: next cell of a user now in i).
    #[arg(long, value_name = "FILE", conflicts_with = "cells", required_unless_present = "cells")]
    pub forward: Option<PathBuf>,
    /// Instead of --forward: n cells and the smoothed identity (TKDE eq. 28) with --smoothing.
    #[arg(long, value_name = "n", requires = "smoothing")]
    pub cells: Option<usize>,
    /// Laplacian smoothing (p + s)/Σ(p + s) of every row (TKDE eq. 28) of the --forward
    /// matrix, or of the identity with --cells (small s = users mostly stay put).
    #[arg(long, value_name = "s", allow_negative_numbers = true, value_parser = tpl_io::text::finite_f64)]
    pub smoothing: Option<f64>,
    /// Rescale every row of the --forward matrix to sum to 1 instead of rejecting rows that
    /// do not.
    #[arg(long, conflicts_with = "cells")]
    pub normalize: bool,
    /// Number of users N ≥ 1.
    #[arg(long, value_name = "N")]
    pub users: usize,
    /// Number of steps T ≥ 1.
    #[arg(long, value_name = "T")]
    pub horizon: usize,
    /// Initial distribution: uniform, or a file with one row of n probabilities.
    #[arg(long, value_name = "uniform|FILE", default_value = "uniform")]
    pub initial: String,
    #[command(flatten)]
    pub seed: SeedArgs,
    /// Folder to write stream.csv, counts.csv and transition_forward.csv to.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// What was simulated and written.
pub struct SimulateReport {
    users: usize,
    horizon: usize,
    cells: usize,
    seed: u64,
    out: PathBuf,
    /// Users per cell at the first and last step.
    first: Vec<f64>,
    last: Vec<f64>,
}

/// Largest number of user-steps written (a stream file of 10⁸ rows is about 1.5 GB).
const MAX_USER_STEPS: usize = 100_000_000;

/// Runs `tpl simulate`.
pub fn run(args: &SimulateArgs) -> Result<SimulateReport> {
    let forward = match (&args.forward, args.cells, args.smoothing) {
        (Some(path), _, smoothing) => {
            read_matrix(path, &MatrixOptions { normalize: args.normalize, smoothing })?
        }
        (None, Some(n), Some(s)) => {
            if n == 0 {
                return Err(CliError::Usage("--cells 0: at least one cell is needed".into()));
            }
            check_cells(n)?;
            TransitionMatrix::smoothed_identity(n, s).map_err(|e| CliError::flag("--smoothing", e))?
        }
        _ => return Err(CliError::Usage("give --forward FILE, or --cells n --smoothing s".into())),
    };
    if args.users == 0 {
        return Err(CliError::Usage("--users 0: at least one user is needed".into()));
    }
    check_horizon(args.horizon)?;
    if args.users.saturating_mul(args.horizon) > MAX_USER_STEPS {
        return Err(CliError::Usage(format!(
            "--users {} × --horizon {} is more than {MAX_USER_STEPS} user-steps",
            args.users, args.horizon
        )));
    }
    let n = forward.n();
    let initial = initial_distribution(&args.initial, n)?;
    let seed = Seed::new(args.seed.seed);
    let mut rng = seed.rng(USERS_STREAM, 0);
    let states = simulate_users(&forward, &initial, args.users, args.horizon, &mut rng)
        .map_err(|source| CliError::Compare { context: format!("--initial {}: ", args.initial), source })?;
    let counts = histogram(&states, n)?;
    write_outputs(&args.out, &forward, &states, &counts, seed.value())?;
    Ok(SimulateReport {
        users: args.users,
        horizon: args.horizon,
        cells: n,
        seed: seed.value(),
        out: args.out.clone(),
        first: counts[0].clone(),
        last: counts[counts.len() - 1].clone(),
    })
}

/// `uniform`, or a file with one row of n probabilities.
fn initial_distribution(value: &str, n: usize) -> Result<Vec<f64>> {
    if value == "uniform" {
        return Ok(vec![1.0 / n as f64; n]);
    }
    Ok(tpl_io::read_initial_distribution(Path::new(value), n)?)
}

fn write_outputs(
    dir: &Path,
    forward: &TransitionMatrix,
    states: &[Vec<usize>],
    counts: &[Vec<f64>],
    seed: u64,
) -> Result<()> {
    create_dir(dir)?;
    write_file(&dir.join("stream.csv"), &stream_text(states))?;
    write_file(&dir.join("counts.csv"), &counts_text(counts))?;
    let comment = format!("tpl simulate (seed {seed}): the forward matrix the users moved by");
    // A sparse matrix is written sparse when that form holds it: its rows' bases are 0.
    let sparse = forward.is_sparse() && forward.rows().all(|r| r.sparse_parts().is_some_and(|p| p.0 == 0.0));
    let text = if sparse {
        sparse_matrix_text(&comment, forward)
    } else {
        matrix_text(&comment, forward.rows().map(|r| r.iter().map(f64::to_string).collect()))
    };
    write_file(&dir.join("transition_forward.csv"), &text)
}

impl Report for SimulateReport {
    fn json(&self) -> Value {
        #[derive(serde::Serialize)]
        struct Fields {
            users: usize,
            horizon: usize,
            cells: usize,
            seed: u64,
            out: String,
            files: [&'static str; 3],
        }
        json_of(&Fields {
            users: self.users,
            horizon: self.horizon,
            cells: self.cells,
            seed: self.seed,
            out: self.out.display().to_string(),
            files: ["stream.csv", "counts.csv", "transition_forward.csv"],
        })
    }

    fn csv(&self) -> String {
        csv_text(|w| {
            w.record(["cell", "first", "last"])?;
            for i in 0..self.cells {
                w.value(i)?;
                w.value(self.first[i])?;
                w.value(self.last[i])?;
                w.end()?;
            }
            Ok(())
        })
    }

    fn table(&self) -> String {
        let mut t = Table::new(&["cell", "users at t = 1", "users at t = T"]);
        for i in 0..self.cells.min(12) {
            t.row(vec![i.to_string(), human(self.first[i]), human(self.last[i])]);
        }
        format!(
            "Simulated {} Markov users over {} steps in {} cells (seed {}); wrote stream.csv, counts.csv and \
             transition_forward.csv to {}.\n\n{}",
            self.users,
            self.horizon,
            self.cells,
            self.seed,
            self.out.display(),
            t.render()
        )
    }
}
