//! Transition matrices estimated from observed movements: the adversary's (and the
//! post-processor's) public knowledge, built the way the TKDE paper §6 builds it from
//! real trajectories — count the transitions, normalise, optionally smooth (eq. 28).

use std::collections::HashMap;

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
///
/// Up to [`TransitionCounts::DENSE_STATES`] states the counts are an n × n table; beyond, only
/// the non-zero counts are kept (a city grid of 10⁴ cells has a few moves per cell, not 10⁸
/// counts), and the matrices estimated from them are sparse ([`TransitionMatrix::is_sparse`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransitionCounts {
    n: usize,
    cells: Cells,
}

/// Where the counts are kept (decided by n alone, so that equal counts compare equal).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cells {
    /// Row-major, `n * n`.
    Dense(Vec<u64>),
    /// The non-zero counts, by (from, to).
    Sparse(HashMap<(usize, usize), u64>),
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
        let cells = if n <= Self::DENSE_STATES {
            Cells::Dense(vec![0; n * n])
        } else {
            Cells::Sparse(HashMap::new())
        };
        Ok(Self { n, cells })
    }

    /// The most states whose counts are kept as an n × n table (4096: 128 MiB of counts);
    /// beyond, only the non-zero counts are kept.
    pub const DENSE_STATES: usize = 4096;

    /// Whether only the non-zero counts are kept (n > [`TransitionCounts::DENSE_STATES`]).
    pub fn is_sparse(&self) -> bool {
        matches!(self.cells, Cells::Sparse(_))
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
                c.bump(from, to, 1);
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
        self.bump(from, to, moves);
        Ok(())
    }

    /// C\[from\]\[to\] += moves, saturating; both below n.
    #[inline]
    fn bump(&mut self, from: usize, to: usize, moves: u64) {
        let c = match &mut self.cells {
            Cells::Dense(counts) => &mut counts[from * self.n + to],
            Cells::Sparse(counts) => counts.entry((from, to)).or_insert(0),
        };
        *c = c.saturating_add(moves);
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
        let target =
            |s: usize| map.get(s).copied().ok_or(CoreError::StateOutOfRange { state: s, n: map.len() });
        for (from, to, moves) in self.entries() {
            out.add(target(from)?, target(to)?, moves)?;
        }
        Ok(out)
    }

    /// Number of states n.
    pub fn n(&self) -> usize {
        self.n
    }

    /// C\[from\]\[to\] (0-based; panics on an index ≥ n like slice indexing).
    pub fn count(&self, from: usize, to: usize) -> u64 {
        assert!(from < self.n && to < self.n, "state ({from}, {to}) of {} states", self.n);
        match &self.cells {
            Cells::Dense(counts) => counts[from * self.n + to],
            Cells::Sparse(counts) => counts.get(&(from, to)).copied().unwrap_or(0),
        }
    }

    /// The non-zero counts (from, to, C\[from\]\[to\]), row by row and by column within a row.
    ///
    /// ```
    /// use tpl_core::TransitionCounts;
    /// let c = TransitionCounts::from_paths(3, &[vec![2, 0], vec![1, 0]])?; // 2 → 1, 0 → 0
    /// assert_eq!(c.entries(), vec![(0, 0, 1), (2, 1, 1)]);
    /// # Ok::<(), tpl_core::CoreError>(())
    /// ```
    pub fn entries(&self) -> Vec<(usize, usize, u64)> {
        match &self.cells {
            Cells::Dense(counts) => counts
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(k, &c)| (k / self.n, k % self.n, c))
                .collect(),
            Cells::Sparse(counts) => {
                let mut e: Vec<_> =
                    counts.iter().filter(|(_, c)| **c > 0).map(|(&(i, j), &c)| (i, j, c)).collect();
                e.sort_unstable();
                e
            }
        }
    }

    /// Σ of all counts: the number of moves counted (u128: counts saturate at 2⁶⁴ − 1 each).
    pub fn total(&self) -> u128 {
        self.entries().iter().map(|&(_, _, c)| u128::from(c)).sum()
    }

    /// The forward matrix P_F\[i\]\[j\] = C\[i\]\[j\] / Σ_j C\[i\]\[j\] = Pr(state j at t+1 | state
    /// i at t); a row with no data becomes an identity row and is listed.
    ///
    /// # Errors
    /// None in practice (the rows are exact probability vectors); the matrix is still
    /// validated by [`TransitionMatrix::new`].
    pub fn forward(&self) -> Result<EstimatedMatrix> {
        self.normalise(false)
    }

    /// The backward matrix in the TKDE orientation: row j is the value at t, so
    /// P_B\[j\]\[i\] = C\[i\]\[j\] / Σ_i C\[i\]\[j\] = Pr(state i at t−1 | state j at t); a state
    /// never entered gets an identity row and is listed.
    ///
    /// # Errors
    /// As [`TransitionCounts::forward`].
    pub fn backward(&self) -> Result<EstimatedMatrix> {
        self.normalise(true)
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

    /// Each row of C (of Cᵀ when `transposed`) divided by its sum, one division per entry as
    /// a reader of the counts file would do it; a row without counts becomes an identity row
    /// and is listed. Dense counts give a dense matrix, sparse counts a sparse one.
    fn normalise(&self, transposed: bool) -> Result<EstimatedMatrix> {
        let n = self.n;
        let oriented = |(i, j, c): (usize, usize, u64)| if transposed { (j, i, c) } else { (i, j, c) };
        let mut entries: Vec<(usize, usize, u64)> = self.entries().into_iter().map(oriented).collect();
        entries.sort_unstable();
        // Counts up to 2⁶⁴ − 1 each: their sum may pass u64.
        let mut totals = vec![0u128; n];
        for &(r, _, c) in &entries {
            totals[r] += u128::from(c);
        }
        let empty_rows: Vec<usize> = (0..n).filter(|&r| totals[r] == 0).collect();
        let probability = |(r, c, k): (usize, usize, u64)| (r, c, k as f64 / totals[r] as f64);
        let identity = empty_rows.iter().map(|&r| (r, r, 1.0));
        let matrix = match self.cells {
            Cells::Dense(_) => {
                let mut rows = vec![vec![0.0; n]; n];
                for (r, c, p) in entries.into_iter().map(probability).chain(identity) {
                    rows[r][c] = p;
                }
                TransitionMatrix::new(rows)?
            }
            Cells::Sparse(_) => TransitionMatrix::from_entries(
                n,
                entries.into_iter().map(probability).chain(identity).collect(),
            )?,
        };
        Ok(EstimatedMatrix { matrix, empty_rows })
    }
}

#[cfg(test)]
mod tests;
