//! Synthetic populations of Markov users: the data model of the TKDE paper §6 and of the
//! DBSec paper's experiments (`map-postprocessing.md` §1). Every user moves independently by
//! the same forward matrix; the streams test schemes, allocators and post-processing where
//! the truth is known.

use rand::Rng;
use tpl_core::TransitionMatrix;

use crate::error::{MechError, Result};

/// Draws the states of `users` Markov users over `horizon` steps.
///
/// Step 1 draws every user's state from `initial` (a probability vector over the n
/// states); step t + 1 draws user u's state from row `states[t][u]` of `forward`. Returns
/// `states[t][u]` for t = 0..horizon, u = 0..users: a dense stream, as in the project's
/// `stream.csv` files.
///
/// # Errors
/// [`MechError::BadDistribution`] unless `initial` has n finite non-negative entries summing
/// to 1 within 1e-9; [`MechError::EmptyPopulation`] for 0 users or 0 steps.
///
/// # Runtime
/// O(n²) to tabulate cumulative rows, then O(log n) per user-step.
///
/// ```
/// use rand::SeedableRng;
/// use tpl_core::TransitionMatrix;
/// use tpl_mechanisms::simulate_users;
/// let p = TransitionMatrix::smoothed_identity(3, 0.01)?;
/// let mut rng = rand::rngs::StdRng::seed_from_u64(1);
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
        return Err(MechError::EmptyPopulation { users, horizon });
    }
    let start = cumulative(initial);
    let rows: Vec<Vec<f64>> = forward.rows().map(cumulative).collect();
    let mut states = Vec::with_capacity(horizon);
    states.push((0..users).map(|_| draw(&start, rng)).collect::<Vec<_>>());
    for t in 1..horizon {
        let next = states[t - 1].iter().map(|&s| draw(&rows[s], rng)).collect();
        states.push(next);
    }
    Ok(states)
}

/// The histogram of a dense stream: `counts[t][i]` = number of users in state i at step t.
///
/// ```
/// let c = tpl_mechanisms::histogram(&[vec![0, 2, 2], vec![1, 1, 0]], 3);
/// assert_eq!(c, vec![vec![1.0, 0.0, 2.0], vec![1.0, 2.0, 0.0]]);
/// ```
pub fn histogram(states: &[Vec<usize>], n: usize) -> Vec<Vec<f64>> {
    states
        .iter()
        .map(|step| {
            let mut row = vec![0.0; n];
            for &s in step {
                row[s] += 1.0;
            }
            row
        })
        .collect()
}

fn check_distribution(p: &[f64], n: usize) -> Result<()> {
    let bad = |reason: String| Err(MechError::BadDistribution(reason));
    if p.len() != n {
        return bad(format!("{} entries for {n} states", p.len()));
    }
    if let Some((i, v)) = p.iter().enumerate().find(|(_, v)| !(v.is_finite() && **v >= 0.0)) {
        return bad(format!("entry {} is {v}", i + 1));
    }
    let sum: f64 = p.iter().sum();
    if (sum - 1.0).abs() > 1e-9 {
        return bad(format!("entries sum to {sum}, not 1 (tolerance 1e-9)"));
    }
    Ok(())
}

/// Cumulative sums with the last entry pinned to exactly 1, so a uniform draw in [0, 1)
/// always lands in some state.
fn cumulative(p: &[f64]) -> Vec<f64> {
    let mut acc = 0.0;
    let mut c: Vec<f64> = p
        .iter()
        .map(|&v| {
            acc += v;
            acc
        })
        .collect();
    // The last state with positive mass takes the rounding residue.
    if let Some(last) = p.iter().rposition(|&v| v > 0.0) {
        for v in &mut c[last..] {
            *v = 1.0;
        }
    }
    c
}

fn draw<R: Rng + ?Sized>(cumulative: &[f64], rng: &mut R) -> usize {
    let u: f64 = rng.random();
    // First state whose cumulative mass exceeds u; states of zero mass are never chosen
    // because their cumulative value equals their predecessor's.
    cumulative.partition_point(|&c| c <= u).min(cumulative.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn frequencies_follow_the_chain() {
        // A two-state chain with stationary distribution (1/3, 2/3).
        let p = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.1, 0.9]]).unwrap();
        let mut rng = StdRng::seed_from_u64(9);
        let states = simulate_users(&p, &[1.0 / 3.0, 2.0 / 3.0], 20_000, 5, &mut rng).unwrap();
        let counts = histogram(&states, 2);
        for row in &counts {
            // Binomial sd at N = 20000, p = 1/3: about 67; 6 sd ≈ 400 (false alarm ~1e-9).
            assert!((row[0] - 20_000.0 / 3.0).abs() < 400.0, "{row:?}");
        }
        let moved = states.windows(2).flat_map(|w| w[0].iter().zip(&w[1])).filter(|(a, b)| a == b).count();
        // Pr(stay) = 1/3·0.8 + 2/3·0.9 = 0.8667 over 80000 transitions; sd ≈ 96.
        assert!((moved as f64 - 0.866_666_7 * 80_000.0).abs() < 600.0, "{moved}");
    }

    #[test]
    fn zero_mass_states_are_never_drawn() {
        let p = TransitionMatrix::new(vec![vec![0.0, 1.0, 0.0], vec![0.0, 0.0, 1.0], vec![1.0, 0.0, 0.0]])
            .unwrap();
        let mut rng = StdRng::seed_from_u64(2);
        let states = simulate_users(&p, &[0.0, 1.0, 0.0], 100, 4, &mut rng).unwrap();
        assert!(states[0].iter().all(|&s| s == 1));
        assert!(states[1].iter().all(|&s| s == 2));
        assert!(states[3].iter().all(|&s| s == 1));
    }

    #[test]
    fn bad_inputs() {
        let p = TransitionMatrix::identity(2);
        let mut rng = StdRng::seed_from_u64(0);
        assert!(matches!(simulate_users(&p, &[1.0], 3, 3, &mut rng), Err(MechError::BadDistribution(_))));
        assert!(matches!(
            simulate_users(&p, &[0.5, 0.6], 3, 3, &mut rng),
            Err(MechError::BadDistribution(_))
        ));
        assert!(matches!(
            simulate_users(&p, &[f64::NAN, 1.0], 3, 3, &mut rng),
            Err(MechError::BadDistribution(_))
        ));
        assert!(matches!(
            simulate_users(&p, &[0.5, 0.5], 0, 3, &mut rng),
            Err(MechError::EmptyPopulation { users: 0, horizon: 3 })
        ));
    }
}
