//! The count estimates of a whole stream ([`Estimates`]) and their model intervals.

use crate::error::Result;
use crate::estimator::Estimator;
use crate::prior::Warning;

/// The count estimates x̂_1..x̂_T of a whole stream, as [`filter`](crate::filter) returns them
/// ([docs/map.md](tpl_core::guide::map) §11): estimates of the true counts c_t, not of the movement
/// matrix.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Estimates {
    /// The estimator that produced them.
    pub estimator: Estimator,
    /// Row t − 1 is the count estimate x̂_t: T rows of n values summing to N.
    pub estimates: Vec<Vec<f64>>,
    /// Warnings raised along the way ([docs/map.md](tpl_core::guide::map) §5), for the caller to
    /// show.
    pub warnings: Vec<Warning>,
    /// Row t − 1: each cell's standard error of x̂_t under the local-level model of
    /// [docs/intervals.md](tpl_core::guide::intervals) §3 — the filter's own, from the releases up
    /// to t ([`FilterStep::std_error`](crate::FilterStep::std_error)), or for `smooth` and `kalman` the same model run over
    /// the whole stream in both directions; ∞ where no release has told anything yet (`null`
    /// when serialised to JSON). The ends of [`Estimates::intervals`].
    pub std_errors: Vec<Vec<f64>>,
}

impl Estimates {
    /// The model intervals at `level` of every step ([`crate::model_interval`] of its
    /// [`std_errors`](Self::std_errors)): (lower, upper), T rows of n, rounded outwards to whole
    /// numbers and clipped to [0, N]. They cost O(nT), a small part of the estimate; the
    /// bootstrap ([`crate::bootstrap_intervals`]) checks them at B times the estimator's cost.
    ///
    /// ```
    /// use tpl_core::{Correlation, TransitionMatrix};
    /// use tpl_postprocess::{Estimator, FilterConfig, filter};
    /// let p = TransitionMatrix::smoothed_identity(2, 0.05)?;
    /// let releases = vec![vec![61.0, 42.0], vec![57.0, 40.0], vec![63.0, 35.0], vec![58.0, 44.0]];
    /// let public = Correlation::new(None, Some(p.clone()))?;
    /// let config = FilterConfig { correlation: &public, estimator: Estimator::Smooth, ..FilterConfig::new(100) };
    /// let out = filter(&releases, &[0.5; 4], config)?;
    /// let (lower, upper) = out.intervals(0.9)?;
    /// for ((lo, hi), x) in lower.iter().zip(&upper).zip(&out.estimates) {
    ///     assert!((0..2).all(|j| lo[j] <= x[j] && x[j] <= hi[j] && hi[j] <= 100.0));
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`PostprocessError::Interval`](crate::PostprocessError::Interval) for a level outside (0, 1).
    pub fn intervals(&self, level: f64) -> Result<crate::Ends> {
        let mut ends = (Vec::with_capacity(self.estimates.len()), Vec::with_capacity(self.estimates.len()));
        for (x, s) in self.estimates.iter().zip(&self.std_errors) {
            let (lo, hi) = crate::model_interval(x, s, level)?;
            ends.0.push(lo);
            ends.1.push(hi);
        }
        Ok(ends)
    }

    /// The count estimates as integers, for `map-integer` (exact: N ≤ 2⁵³); `None` for the other
    /// estimators, whose estimates are real.
    pub fn integers(&self) -> Option<Vec<Vec<u64>>> {
        (self.estimator == Estimator::MapInteger)
            .then(|| self.estimates.iter().map(|row| row.iter().map(|&v| v as u64).collect()).collect())
    }
}
