//! Synthetic populations of Markov users: the data model of the experiments of the TKDE
//! paper ("Quantifying Differential Privacy in Continuous Data Release under Temporal
//! Correlations", §6) and of the DBSec 2023 MAP paper. Every user moves independently by
//! the same forward matrix; the streams test schemes, allocators and post-processing where
//! the truth is known.

use rand::Rng;
use rand::distr::Distribution;
use rand::distr::weighted::WeightedIndex;
use tpl_core::{Row, TransitionMatrix};

use crate::error::{CompareError, DistributionFault, Result};

/// How far from 1 the entries of an initial distribution may sum.
pub const DISTRIBUTION_TOLERANCE: f64 = 1e-9;

/// Draws the states of `users` Markov users over `horizon` steps.
///
/// Step 1 draws every user's state from `initial` (a probability vector over the n
/// states); step t + 1 draws user u's state from row `states[t][u]` of `forward`. Returns
/// `states[t][u]` for t = 0..horizon, u = 0..users: a dense stream (every user at every
/// step). States of probability 0 are never drawn.
///
/// The result holds `users × horizon` states: callers that take these numbers from a user
/// bound their product first.
///
/// # Errors
/// [`CompareError::BadDistribution`] unless `initial` has n finite non-negative entries
/// summing to 1 within [`DISTRIBUTION_TOLERANCE`]; [`CompareError::EmptyPopulation`] for 0
/// users or 0 steps.
///
/// # Runtime
/// O(n²) to tabulate the cumulative rows, then O(log n) per user-step (`rand`'s
/// `WeightedIndex`). A sparse matrix's rows are tabulated as they are stored, O(k) for k
/// exceptions: a step draws an exception, or the row's base mass as a whole and then a
/// column uniformly among the others.
///
/// ```
/// use tpl_compare::{Seed, simulate_users};
/// use tpl_core::TransitionMatrix;
/// let p = TransitionMatrix::smoothed_identity(3, 0.01)?;
/// let mut rng = Seed::given(1).rng(tpl_compare::USERS_STREAM, 0);
/// let states = simulate_users(&p, &[1.0 / 3.0; 3], 50, 10, &mut rng)?;
/// assert_eq!((states.len(), states[0].len()), (10, 50));
/// assert!(states.iter().flatten().all(|&s| s < 3));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn simulate_users<R: Rng + ?Sized>(
    forward: &TransitionMatrix,
    initial: &[f64],
    users: usize,
    horizon: usize,
    rng: &mut R,
) -> Result<Vec<Vec<usize>>> {
    let n = forward.n();
    check_distribution(initial, n)?;
    if users == 0 || horizon == 0 {
        return Err(CompareError::EmptyPopulation { users, horizon });
    }
    let start = categorical(initial)?;
    let rows = forward.rows().map(RowSampler::new).collect::<Result<Vec<_>>>()?;
    let mut states = Vec::with_capacity(horizon);
    states.push((0..users).map(|_| start.sample(rng)).collect::<Vec<_>>());
    for t in 1..horizon {
        let next = states[t - 1].iter().map(|&s| rows[s].sample(rng)).collect();
        states.push(next);
    }
    Ok(states)
}

/// Draws the next state from one row of a transition matrix.
enum RowSampler<'a> {
    /// Over the n entries of a dense row.
    Dense(WeightedIndex<f64>),
    /// Over a sparse row's exceptions and, as one more outcome, its base mass: `cols` are the
    /// exceptions' columns; the last outcome is a column uniform among the other n − k.
    Sparse { pick: WeightedIndex<f64>, cols: &'a [u32], n: usize },
}

impl<'a> RowSampler<'a> {
    fn new(row: Row<'a>) -> Result<Self> {
        match row.sparse_parts() {
            // With most columns at the base, a uniform column is one of them within a few
            // tries; otherwise the row is tabulated whole.
            Some((base, cols, vals)) if 2 * cols.len() <= row.len() => {
                let rest = (row.len() - cols.len()) as f64 * base;
                let weights: Vec<f64> = vals.iter().copied().chain([rest]).collect();
                Ok(Self::Sparse { pick: categorical(&weights)?, cols, n: row.len() })
            }
            _ => Ok(Self::Dense(categorical(&row.to_vec())?)),
        }
    }

    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> usize {
        match self {
            Self::Dense(pick) => pick.sample(rng),
            Self::Sparse { pick, cols, n } => {
                let k = pick.sample(rng);
                if let Some(&col) = cols.get(k) {
                    return col as usize;
                }
                // Uniform among the columns that are not exceptions (at least half of them).
                loop {
                    let col = rng.random_range(0..*n);
                    if cols.binary_search(&(col as u32)).is_err() {
                        return col;
                    }
                }
            }
        }
    }
}

/// The histogram of a dense stream over n states: `counts[t][i]` = number of users in
/// state i at step t.
///
/// # Errors
/// [`CompareError::StateOutOfRange`] for a state ≥ n.
///
/// ```
/// let c = tpl_compare::histogram(&[vec![0, 2, 2], vec![1, 1, 0]], 3)?;
/// assert_eq!(c, vec![vec![1.0, 0.0, 2.0], vec![1.0, 2.0, 0.0]]);
/// # Ok::<(), tpl_compare::CompareError>(())
/// ```
pub fn histogram(states: &[Vec<usize>], n: usize) -> Result<Vec<Vec<f64>>> {
    states
        .iter()
        .enumerate()
        .map(|(t, step)| {
            let mut row = vec![0.0; n];
            for &s in step {
                let cell = row.get_mut(s).ok_or(CompareError::StateOutOfRange {
                    step: t + 1,
                    state: s,
                    states: n,
                })?;
                *cell += 1.0;
            }
            Ok(row)
        })
        .collect()
}

fn check_distribution(p: &[f64], n: usize) -> Result<()> {
    let bad = |fault| Err(CompareError::BadDistribution(fault));
    if p.len() != n {
        return bad(DistributionFault::Length { len: p.len(), states: n });
    }
    if let Some((i, &v)) = p.iter().enumerate().find(|(_, v)| !(v.is_finite() && **v >= 0.0)) {
        return bad(DistributionFault::Entry { index: i + 1, value: v });
    }
    let sum: f64 = p.iter().sum();
    if (sum - 1.0).abs() > DISTRIBUTION_TOLERANCE {
        return bad(DistributionFault::Sum(sum));
    }
    Ok(())
}

/// The categorical distribution of a checked probability vector (or a row of a checked
/// stochastic matrix, or its exceptions and base mass): finite, non-negative, summing to 1.
fn categorical(p: &[f64]) -> Result<WeightedIndex<f64>> {
    // Unreachable for checked inputs; mapped rather than unwrapped all the same.
    WeightedIndex::new(p).map_err(|_| CompareError::BadDistribution(DistributionFault::Sum(p.iter().sum())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Seed;

    fn rng(seed: u64) -> rand_chacha::ChaCha20Rng {
        Seed::given(seed).rng("test", 0)
    }

    #[test]
    fn a_sparse_row_draws_its_exceptions_and_its_base_columns_as_often_as_they_weigh() {
        // A ring of 40 cells, smoothed: from cell 0, 0.5 stays, 0.25 to each neighbour before
        // smoothing, and every other cell the same small base.
        let n = 40;
        let ring =
            (0..n).flat_map(|i| [(i, i, 0.5), (i, (i + 1) % n, 0.25), (i, (i + n - 1) % n, 0.25)]).collect();
        let p = TransitionMatrix::from_entries(n, ring).unwrap().smoothed(0.02).unwrap();
        let users = 200_000;
        let mut start = vec![0.0; n];
        start[0] = 1.0;
        let states = simulate_users(&p, &start, users, 2, &mut rng(4)).unwrap();
        let mut seen = vec![0usize; n];
        states[1].iter().for_each(|&s| seen[s] += 1);
        for (cell, (&count, &prob)) in seen.iter().zip(p.row(0).iter()).enumerate() {
            let (mean, sd) = (users as f64 * prob, (users as f64 * prob * (1.0 - prob)).sqrt());
            assert!(
                (count as f64 - mean).abs() <= 5.0 * sd,
                "cell {cell}: {count} draws, {mean:.0} expected"
            );
        }
    }

    #[test]
    fn frequencies_follow_the_chain() {
        // A two-state chain with stationary distribution (1/3, 2/3).
        let p = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.1, 0.9]]).unwrap();
        let states = simulate_users(&p, &[1.0 / 3.0, 2.0 / 3.0], 20_000, 5, &mut rng(9)).unwrap();
        let counts = histogram(&states, 2).unwrap();
        for row in &counts {
            // Binomial sd at N = 20000, p = 1/3: about 67; 6 sd ≈ 400 (false alarm ~1e-9).
            assert!((row[0] - 20_000.0 / 3.0).abs() < 400.0, "{row:?}");
        }
        let stayed = states.windows(2).flat_map(|w| w[0].iter().zip(&w[1])).filter(|(a, b)| a == b).count();
        // Pr(stay) = 1/3·0.8 + 2/3·0.9 = 0.8667 over 80000 transitions; sd ≈ 96.
        assert!((stayed as f64 - 0.866_666_7 * 80_000.0).abs() < 600.0, "{stayed}");
    }

    #[test]
    fn zero_mass_states_are_never_drawn() {
        let p = TransitionMatrix::new(vec![vec![0.0, 1.0, 0.0], vec![0.0, 0.0, 1.0], vec![1.0, 0.0, 0.0]])
            .unwrap();
        let states = simulate_users(&p, &[0.0, 1.0, 0.0], 100, 4, &mut rng(2)).unwrap();
        assert!(states[0].iter().all(|&s| s == 1));
        assert!(states[1].iter().all(|&s| s == 2));
        assert!(states[3].iter().all(|&s| s == 1));
    }

    #[test]
    fn bad_inputs() {
        let p = TransitionMatrix::identity(2);
        let mut rng = rng(0);
        let fault = |r: Result<Vec<Vec<usize>>>| match r {
            Err(CompareError::BadDistribution(f)) => f,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            fault(simulate_users(&p, &[1.0], 3, 3, &mut rng)),
            DistributionFault::Length { len: 1, states: 2 }
        );
        assert!(matches!(fault(simulate_users(&p, &[0.5, 0.6], 3, 3, &mut rng)), DistributionFault::Sum(_)));
        assert!(matches!(
            fault(simulate_users(&p, &[f64::NAN, 1.0], 3, 3, &mut rng)),
            DistributionFault::Entry { index: 1, .. }
        ));
        assert_eq!(
            simulate_users(&p, &[0.5, 0.5], 0, 3, &mut rng),
            Err(CompareError::EmptyPopulation { users: 0, horizon: 3 })
        );
    }

    /// Regression: `histogram` indexed `row[s]` and panicked on a state ≥ n.
    #[test]
    fn histogram_names_a_state_out_of_range() {
        assert_eq!(
            histogram(&[vec![0, 1], vec![1, 2]], 2),
            Err(CompareError::StateOutOfRange { step: 2, state: 2, states: 2 })
        );
    }
}
