//! The stream-scheme interface of `specs/w-event.md` §2: one step in, one release out, with
//! the budget actually spent.

use std::collections::VecDeque;

use crate::budget::sum_up;
use crate::error::{MechError, Result};
use crate::params::WEventParams;

/// The budget one step spent (w-event spec §1): everything that read c_t.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepBudget {
    /// Spent by the dissimilarity test.
    pub test: f64,
    /// Spent by the publication (0 when the previous release is repeated).
    pub publication: f64,
    /// The part of `publication` taken from earlier steps' unused shares (BA) or from the
    /// correlation pool (PBA).
    pub absorbed: f64,
}

impl StepBudget {
    /// ε_t = test + publication, rounded up if the f64 sum is inexact (never below what the
    /// step spent). The stream schemes choose budgets whose sum is exact (see
    /// [`crate::WEventParams::share`]) while w < 2^21.
    pub fn total(&self) -> f64 {
        sum_up(self.test, self.publication)
    }
}

/// What one step released.
#[derive(Debug, Clone, PartialEq)]
pub struct StepOutcome {
    /// r_t: a fresh noisy vector, or a bit-for-bit copy of r_{t−1}.
    pub release: Vec<f64>,
    /// Whether r_t is fresh.
    pub published: bool,
    /// What the step spent.
    pub spent: StepBudget,
}

/// A stateful w-event scheme: decides at each step whether to publish and with what budget.
/// Every scheme but `laplace` keeps every window of w steps within ε (invariant (W)).
pub trait StreamScheme {
    /// The scheme's name as on the command line.
    fn name(&self) -> &'static str;

    /// Its parameters.
    fn params(&self) -> &WEventParams;

    /// Steps processed so far.
    fn steps(&self) -> usize;

    /// Processes c_t. Input is checked before any randomness is drawn; on error nothing
    /// changes.
    ///
    /// # Errors
    /// Wrong length, non-finite counts, or an error of the mechanism.
    fn step(&mut self, counts: &[f64]) -> Result<StepOutcome>;
}

/// The state every scheme shares: step count, cell count and the last release.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stream {
    pub t: usize,
    cells: Option<usize>,
    pub last: Vec<f64>,
}

impl Stream {
    /// Checks c_{t+1} against the stream (w-event spec §2: before any draw).
    pub fn check(&self, counts: &[f64]) -> Result<()> {
        let step = self.t + 1;
        if counts.is_empty() {
            return Err(MechError::NoCells { step });
        }
        if let Some(expected) = self.cells
            && counts.len() != expected
        {
            return Err(MechError::WrongLength { step, expected, got: counts.len() });
        }
        match counts.iter().position(|v| !v.is_finite()) {
            Some(cell) => Err(MechError::NonFinite { step, cell, value: counts[cell] }),
            None => Ok(()),
        }
    }

    /// Records a fresh release.
    pub fn publish(&mut self, release: Vec<f64>, spent: StepBudget) -> StepOutcome {
        self.cells.get_or_insert(release.len());
        self.t += 1;
        self.last = release;
        StepOutcome { release: self.last.clone(), published: true, spent }
    }

    /// Repeats r_{t−1}.
    pub fn repeat(&mut self, spent: StepBudget) -> StepOutcome {
        self.t += 1;
        StepOutcome { release: self.last.clone(), published: false, spent }
    }

    /// Σ_j |c_t[j] − r_{t−1}[j]|: d times the dissimilarity of the spec (an integer when the
    /// counts and releases are, which keeps the release-grade test exact).
    pub fn distance(&self, counts: &[f64]) -> f64 {
        counts.iter().zip(&self.last).map(|(c, r)| (c - r).abs()).sum()
    }
}

/// The budgets of the last w − 1 steps, as integers on the scheme's grid, with their exact
/// running sums: O(1) per step, and memory min(w − 1, steps so far) entries — never sized by
/// w itself. Each entry holds `N` amounts (e.g. the step total and a pool's part).
#[derive(Debug, Clone)]
pub(crate) struct Recent<const N: usize> {
    capacity: usize,
    entries: VecDeque<[u128; N]>,
    sums: [u128; N],
}

impl<const N: usize> Recent<N> {
    /// Keeps the last `window − 1` entries (nothing for w = 1).
    pub fn new(window: usize) -> Self {
        Self { capacity: window.saturating_sub(1), entries: VecDeque::new(), sums: [0; N] }
    }

    /// Σ of amount `i` over the held entries (exact).
    pub fn sum(&self, i: usize) -> u128 {
        self.sums[i]
    }

    /// Pushes the newest entry, dropping the oldest once w − 1 are held.
    pub fn push(&mut self, entry: [u128; N]) {
        if self.capacity == 0 {
            return;
        }
        if self.entries.len() == self.capacity
            && let Some(old) = self.entries.pop_front()
        {
            for (s, o) in self.sums.iter_mut().zip(old) {
                *s -= o;
            }
        }
        for (s, e) in self.sums.iter_mut().zip(entry) {
            *s += e;
        }
        self.entries.push_back(entry);
    }
}
