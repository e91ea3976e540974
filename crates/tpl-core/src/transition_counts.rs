//! Transition matrices estimated from observed movements: the adversary's (and the
//! post-processor's) public knowledge, built the way the TKDE paper §6 builds it from
//! real trajectories — count the transitions, normalise, optionally smooth (eq. 28).

use crate::error::{CoreError, Result};
use crate::matrix::TransitionMatrix;

/// Transition counts C\[i\]\[j\]: how many times some user was in state i at one step and in
/// state j at the next.
///
/// ```
/// use tpl_core::TransitionCounts;
/// // Two users over three steps: 0 → 0 → 1 and 1 → 1 → 1.
/// let c = TransitionCounts::from_paths(2, &[vec![0, 1], vec![0, 1], vec![1, 1]])?;
/// assert_eq!(c.count(0, 0), 1);
/// assert_eq!(c.count(0, 1), 1);
/// assert_eq!(c.count(1, 1), 2);
/// let f = c.forward()?;
/// assert_eq!(f.matrix.row(0), &[0.5, 0.5]);
/// assert!(f.empty_rows.is_empty());
/// # Ok::<(), tpl_core::CoreError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransitionCounts {
    n: usize,
    /// Row-major, `n * n`.
    counts: Vec<u64>,
}

/// An estimated matrix and the rows that had no data (set to identity rows: with nothing
/// observed, "stays put" is the one choice that adds no invented movement).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct EstimatedMatrix {
    /// The row-stochastic estimate.
    pub matrix: TransitionMatrix,
    /// 0-based states whose row had no observations, ascending.
    pub empty_rows: Vec<usize>,
}

impl TransitionCounts {
    /// No transitions yet among `n ≥ 1` states.
    ///
    /// # Errors
    /// [`CoreError::EmptyMatrix`] for `n = 0`.
    pub fn new(n: usize) -> Result<Self> {
        if n == 0 {
            return Err(CoreError::EmptyMatrix);
        }
        Ok(Self { n, counts: vec![0; n * n] })
    }

    /// Counts the transitions of a dense stream: `states[t][u]` is user u's state at step
    /// t (every step lists every user, in the same order), so each user contributes
    /// T − 1 transitions.
    ///
    /// # Errors
    /// [`CoreError::EmptyMatrix`] for `n = 0`; [`CoreError::StateOutOfRange`] for a state
    /// ≥ n; [`CoreError::StreamWidth`] for a step with another number of users than step 1.
    pub fn from_paths(n: usize, states: &[Vec<usize>]) -> Result<Self> {
        let mut c = Self::new(n)?;
        let users = states.first().map_or(0, Vec::len);
        for (t, step) in states.iter().enumerate() {
            if step.len() != users {
                return Err(CoreError::StreamWidth { step: t + 1, users: step.len(), expected: users });
            }
            if let Some(&s) = step.iter().find(|&&s| s >= n) {
                return Err(CoreError::StateOutOfRange { state: s, n });
            }
        }
        for pair in states.windows(2) {
            for (&from, &to) in pair[0].iter().zip(&pair[1]) {
                c.counts[from * n + to] += 1;
            }
        }
        Ok(c)
    }

    /// Number of states n.
    pub fn n(&self) -> usize {
        self.n
    }

    /// C\[from\]\[to\] (0-based; panics on an index ≥ n like slice indexing).
    pub fn count(&self, from: usize, to: usize) -> u64 {
        self.counts[from * self.n + to]
    }

    /// Row `from` of C.
    pub fn row(&self, from: usize) -> &[u64] {
        &self.counts[from * self.n..(from + 1) * self.n]
    }

    /// The forward matrix P_F\[i\]\[j\] = C\[i\]\[j\] / Σ_j C\[i\]\[j\] = Pr(state j at t+1 | state
    /// i at t); a row with no data becomes an identity row and is listed.
    ///
    /// # Errors
    /// None in practice (the rows are exact probability vectors); the matrix is still
    /// validated by [`TransitionMatrix::new`].
    pub fn forward(&self) -> Result<EstimatedMatrix> {
        self.normalise(|i, j| self.count(i, j))
    }

    /// The backward matrix in the TKDE orientation: row j is the value at t, so
    /// P_B\[j\]\[i\] = C\[i\]\[j\] / Σ_i C\[i\]\[j\] = Pr(state i at t−1 | state j at t); a state
    /// never entered gets an identity row and is listed.
    ///
    /// # Errors
    /// As [`TransitionCounts::forward`].
    pub fn backward(&self) -> Result<EstimatedMatrix> {
        self.normalise(|j, i| self.count(i, j))
    }

    fn normalise(&self, entry: impl Fn(usize, usize) -> u64) -> Result<EstimatedMatrix> {
        let n = self.n;
        let mut empty_rows = Vec::new();
        let mut rows = Vec::with_capacity(n);
        for r in 0..n {
            let total: u64 = (0..n).map(|c| entry(r, c)).sum();
            if total == 0 {
                empty_rows.push(r);
                rows.push((0..n).map(|c| if c == r { 1.0 } else { 0.0 }).collect());
            } else {
                // One division per entry, as a reader of the counts file would do it.
                rows.push((0..n).map(|c| entry(r, c) as f64 / total as f64).collect());
            }
        }
        Ok(EstimatedMatrix { matrix: TransitionMatrix::new(rows)?, empty_rows })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backward_is_the_column_normalised_transpose() {
        // User a: 0 → 1 → 1; user b: 0 → 0 → 1.
        let c = TransitionCounts::from_paths(3, &[vec![0, 0], vec![1, 0], vec![1, 1]]).unwrap();
        let b = c.backward().unwrap();
        // State 1 at t was reached from 0 twice and from 1 once.
        assert_eq!(b.matrix.row(1), &[2.0 / 3.0, 1.0 / 3.0, 0.0]);
        assert_eq!(b.matrix.row(0), &[1.0, 0.0, 0.0]);
        assert_eq!(b.empty_rows, vec![2], "state 2 is never entered");
        let f = c.forward().unwrap();
        assert_eq!(f.empty_rows, vec![2]);
        assert_eq!(f.matrix.row(2), &[0.0, 0.0, 1.0]);
    }

    #[test]
    fn bad_streams_are_rejected() {
        assert_eq!(TransitionCounts::new(0), Err(CoreError::EmptyMatrix));
        assert_eq!(
            TransitionCounts::from_paths(2, &[vec![0, 1], vec![0]]),
            Err(CoreError::StreamWidth { step: 2, users: 1, expected: 2 })
        );
        assert_eq!(
            TransitionCounts::from_paths(2, &[vec![0, 2]]),
            Err(CoreError::StateOutOfRange { state: 2, n: 2 })
        );
    }
}
