//! The streams of the grid: the true counts of the scored steps, the population N, and the
//! matrix variants estimated from the training steps (never from the scored ones).

use std::path::Path;

use tpl_compare::{Holdout, Seed, USERS_STREAM, simulate_users};
use tpl_core::{Correlation, EstimatedMatrix, Steps, UserStream};

use crate::chains::{Shape, permute_rows, rows_to_permute, stationary};

/// Any error of building a stream, for the caller to print.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The smoothings of the synthetic variants `smooth<s>`.
pub const SYNTHETIC_SMOOTHINGS: [f64; 3] = [0.001, 0.01, 0.1];

/// The smoothing of the real stream's variant `smooth0.01`.
pub const REAL_SMOOTHING: f64 = 0.01;

/// Rows permuted in the `permuted` variant.
pub const PERMUTED_ROWS: usize = 3;

/// One pair of matrices the estimators (and PBA, and the window allocator) are given.
#[derive(Debug, Clone)]
pub struct Matrices {
    /// The label of the matrices column (`estimated`, `smooth0.01`, `permuted`, …).
    pub name: String,
    /// The backward and forward matrices.
    pub correlation: Correlation,
}

/// A stream of the grid.
#[derive(Debug, Clone)]
pub struct Stream {
    /// The stream column: `markov` (synthetic) or the real stream's name.
    pub stream: &'static str,
    /// The shape column: `uniform-ish`, `out-dominant` or `real`.
    pub shape: &'static str,
    /// The population N (every step's counts sum to it).
    pub population: u64,
    /// The true counts of the scored steps.
    pub truth: Vec<Vec<f64>>,
    /// The matrix variants, each estimated from the training steps.
    pub matrices: Vec<Matrices>,
}

impl Stream {
    /// The dominant cell: the one with the most people over the scored steps (the first of
    /// equals; 0 for an empty stream).
    pub fn dominant(&self) -> usize {
        let cells = self.truth.first().map_or(0, Vec::len);
        let totals = (0..cells).map(|j| self.truth.iter().map(|row| row[j]).sum::<f64>());
        totals
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |best, (j, v)| if v > best.1 { (j, v) } else { best })
            .0
    }
}

/// The matrices of `m` smoothed with `s` (or not).
fn variant(
    name: String,
    held: (&EstimatedMatrix, &EstimatedMatrix),
    s: Option<f64>,
) -> Result<Matrices, Error> {
    Ok(Matrices {
        name,
        correlation: Correlation::new(
            Some(held.0.clone().smoothed(s)?.matrix),
            Some(held.1.clone().smoothed(s)?.matrix),
        )?,
    })
}

/// A synthetic population of `users` Markov users of `shape`, simulated for `train + score`
/// steps from the chain's stationary distribution: the matrices are estimated from the first
/// `train` steps and smoothed (`smooth<s>`) or with [`PERMUTED_ROWS`] rows permuted
/// (`permuted`, the same rows in both matrices); the last `score` steps are the truth. The
/// chain depends on the base seed and the shape only (the same chain for every N); the people
/// on the seed, the shape and N.
///
/// # Errors
/// Those of the simulation and the estimation (none for valid sizes).
pub fn synthetic(
    shape: Shape,
    users: usize,
    train: usize,
    score: usize,
    seed: Seed,
) -> Result<Stream, Error> {
    let chain = shape.chain(&mut seed.rng(&format!("chain:{}", shape.name()), 0))?;
    let start = stationary(&chain);
    let steps = train + score;
    let mut rng = seed.rng(&format!("{USERS_STREAM}:{}", shape.name()), users as u64);
    let states = simulate_users(&chain, &start, users, steps, &mut rng)?;
    let held =
        Holdout::new(steps, Steps::new(1, train)?, None, false)?.split(&states, shape.cells(), None)?;
    drop(states);
    let pair = (&held.backward, &held.forward);
    let mut matrices = vec![variant("estimated".into(), pair, None)?];
    for s in SYNTHETIC_SMOOTHINGS {
        matrices.push(variant(format!("smooth{s}"), pair, Some(s))?);
    }
    let rows = rows_to_permute(
        &mut seed.rng(&format!("permute:{}", shape.name()), users as u64),
        shape.cells(),
        PERMUTED_ROWS,
    );
    matrices.push(Matrices {
        name: "permuted".into(),
        correlation: Correlation::new(
            Some(permute_rows(&held.backward.matrix, &rows)?),
            Some(permute_rows(&held.forward.matrix, &rows)?),
        )?,
    });
    Ok(Stream {
        stream: "markov",
        shape: shape.label(),
        population: users as u64,
        truth: held.truth,
        matrices,
    })
}

/// A real user stream named `name` (`testdata/ais_nyharbor_week_5min/stream.csv`: 140
/// vessels, 1944 five-minute buckets, 23 cells; `testdata/flights_us_day_5min/stream.csv`:
/// 412 aircraft, 288 five-minute buckets, 33 cells): matrices from the first half of the
/// buckets (as `tpl compare --train-steps ..T/2`), `estimated` and `smooth0.01`; the second
/// half is the truth.
///
/// # Errors
/// A file that cannot be read or is not a dense user stream.
pub fn real(name: &'static str, path: &Path) -> Result<Stream, Error> {
    let mut reader = csv::Reader::from_path(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut records = Vec::new();
    for row in reader.records() {
        let row = row.map_err(|e| format!("{}: {e}", path.display()))?;
        let field = |i: usize| -> Result<u64, Error> {
            let text =
                row.get(i).ok_or_else(|| format!("{}: a row with fewer than 3 fields", path.display()))?;
            Ok(text.trim().parse::<u64>().map_err(|e| format!("{}: {text:?}: {e}", path.display()))?)
        };
        records.push((field(0)?, field(1)?, field(2)?));
    }
    let stream = UserStream::from_records(&records)?;
    drop(records);
    let steps = stream.states.len();
    let cells = stream.cell_ids.len();
    let held =
        Holdout::new(steps, Steps::new(1, steps / 2)?, None, false)?.split(&stream.states, cells, None)?;
    let users = stream.states.first().map_or(0, Vec::len) as u64;
    let pair = (&held.backward, &held.forward);
    Ok(Stream {
        stream: name,
        shape: "real",
        population: users,
        truth: held.truth,
        matrices: vec![
            variant("estimated".into(), pair, None)?,
            variant(format!("smooth{REAL_SMOOTHING}"), pair, Some(REAL_SMOOTHING))?,
        ],
    })
}
