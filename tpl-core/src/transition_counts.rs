//! Transition matrices estimated from observed movements: the adversary's (and the
//! post-processor's) public knowledge, built the way the TKDE paper §6 builds it from
//! real trajectories — count the transitions, normalise, optionally smooth (eq. 28).

use crate::error::{CoreError, Result};
use crate::matrix::TransitionMatrix;
use crate::steps::Steps;

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

impl EstimatedMatrix {
    /// The estimate with Laplacian smoothing `s` applied to every row, identity rows
    /// included ([`TransitionMatrix::smoothed`], TKDE eq. 28), or unchanged for `None`;
    /// the rows without data are still listed.
    ///
    /// # Errors
    /// [`CoreError::BadSmoothing`] for `s` negative or not finite.
    pub fn smoothed(self, s: Option<f64>) -> Result<Self> {
        match s {
            Some(s) => Ok(Self { matrix: self.matrix.smoothed(s)?, empty_rows: self.empty_rows }),
            None => Ok(self),
        }
    }
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
        match Steps::all(states.len()) {
            Ok(all) => Self::from_steps(n, states, all),
            // No step, no transition.
            Err(_) => Self::new(n),
        }
    }

    /// Counts the transitions of the dense stream `states` (as [`TransitionCounts::from_paths`])
    /// between consecutive steps that both lie in `steps`, numbered from 1 (`states[t − 1]`
    /// is step t): the moves an observer of those steps alone sees. A move into the first
    /// step of the range or out of its last step is not counted, so the counts of adjacent
    /// ranges plus the moves across their boundary are the counts of the whole stream.
    ///
    /// ```
    /// use tpl_core::{Steps, TransitionCounts};
    /// // One user: 0 → 1 → 1 → 0.
    /// let path = [vec![0], vec![1], vec![1], vec![0]];
    /// let c = TransitionCounts::from_steps(2, &path, Steps::new(2, 3)?)?;
    /// assert_eq!((c.count(1, 1), c.count(0, 1), c.count(1, 0)), (1, 0, 0));
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    ///
    /// # Errors
    /// As [`TransitionCounts::from_paths`], for any step of `states` (not only those in the
    /// range; steps are numbered in `states`); [`CoreError::StepRangeOutside`] when `steps`
    /// goes past the last step of `states`.
    pub fn from_steps(n: usize, states: &[Vec<usize>], steps: Steps) -> Result<Self> {
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
        steps.check_within(states.len())?;
        for pair in states[steps.indices()].windows(2) {
            for (&from, &to) in pair[0].iter().zip(&pair[1]) {
                c.counts[from * n + to] += 1;
            }
        }
        Ok(c)
    }

    /// Adds `moves` transitions from state `from` to state `to`: the counts of a stream fed
    /// as it is read, one pair of consecutive steps at a time. A count that would pass
    /// 2⁶⁴ − 1 stays there.
    ///
    /// ```
    /// use tpl_core::TransitionCounts;
    /// let mut c = TransitionCounts::new(2)?;
    /// c.add(0, 1, 3)?;
    /// assert_eq!(c, TransitionCounts::from_paths(2, &[vec![0, 0, 0], vec![1, 1, 1]])?);
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    ///
    /// # Errors
    /// [`CoreError::StateOutOfRange`] for `from` or `to` ≥ n.
    #[inline]
    pub fn add(&mut self, from: usize, to: usize, moves: u64) -> Result<()> {
        let n = self.n;
        if let Some(state) = [from, to].into_iter().find(|&s| s >= n) {
            return Err(CoreError::StateOutOfRange { state, n });
        }
        let c = &mut self.counts[from * n + to];
        *c = c.saturating_add(moves);
        Ok(())
    }

    /// The same moves among `n` states, state i renamed `map[i]`: states numbered as they
    /// first appeared in a stream put in another order, or the counts grown to more states
    /// (`map` = 0, 1, …). States renamed alike have their counts added; states from
    /// `map.len()` on must have no moves.
    ///
    /// ```
    /// use tpl_core::TransitionCounts;
    /// let c = TransitionCounts::from_paths(2, &[vec![0], vec![1]])?; // 0 → 1
    /// let r = c.relabeled(&[2, 0], 3)?;
    /// assert_eq!((r.n(), r.count(2, 0), r.count(0, 1)), (3, 1, 0));
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    ///
    /// # Errors
    /// [`CoreError::EmptyMatrix`] for `n = 0`; [`CoreError::StateOutOfRange`] for a target ≥
    /// n, or for a state with moves that `map` does not rename (`n` is then `map.len()`).
    pub fn relabeled(&self, map: &[usize], n: usize) -> Result<Self> {
        let mut out = Self::new(n)?;
        for from in 0..self.n {
            for (to, &moves) in self.row(from).iter().enumerate().filter(|(_, m)| **m > 0) {
                let target = |s: usize| {
                    map.get(s).copied().ok_or(CoreError::StateOutOfRange { state: s, n: map.len() })
                };
                out.add(target(from)?, target(to)?, moves)?;
            }
        }
        Ok(out)
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

    /// The forward and backward matrices, both smoothed by `s` (TKDE eq. 28) unless `None`:
    /// the estimate `tpl estimate` writes and every other estimator of the project (the
    /// Python package, its Spark module) builds from the same counts
    /// ([`docs/formats.md`](crate::guide::formats) §6.1).
    ///
    /// ```
    /// use tpl_core::TransitionCounts;
    /// let c = TransitionCounts::from_paths(2, &[vec![0], vec![1], vec![1]])?; // 0 → 1 → 1
    /// let (forward, backward) = c.matrices(Some(1.0))?;
    /// assert_eq!(forward.matrix.row(0), &[1.0 / 3.0, 2.0 / 3.0]);
    /// assert_eq!((forward.empty_rows, backward.empty_rows), (vec![], vec![0]));
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    ///
    /// # Errors
    /// [`CoreError::BadSmoothing`] for `s` negative or not finite.
    pub fn matrices(&self, s: Option<f64>) -> Result<(EstimatedMatrix, EstimatedMatrix)> {
        Ok((self.forward()?.smoothed(s)?, self.backward()?.smoothed(s)?))
    }

    fn normalise(&self, entry: impl Fn(usize, usize) -> u64) -> Result<EstimatedMatrix> {
        let n = self.n;
        let mut empty_rows = Vec::new();
        let mut rows = Vec::with_capacity(n);
        for r in 0..n {
            // Counts up to 2⁶⁴ − 1 each: their sum may pass u64.
            let total: u128 = (0..n).map(|c| u128::from(entry(r, c))).sum();
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
mod tests;
