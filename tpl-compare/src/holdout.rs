//! Honest evaluation: the correlation matrices estimated from one period of a user stream,
//! the strategies scored on another ([`docs/cli.md`](tpl_core::guide::cli), `tpl compare
//! --train-steps`).
//!
//! Matrices estimated from the very steps a release is scored on are a prior that neither
//! the curator nor an adversary has in advance — they are the private data itself — and
//! they flatter every estimator that uses them (MAP post-processing first). Public knowledge
//! comes from an earlier (or otherwise separate) period: [`Holdout`] names the two periods
//! and refuses to let them share a step unless asked to, and [`Holdout::split`] makes the
//! matrices from the one and the true counts from the other.

use tpl_core::{EstimatedMatrix, Steps, TransitionCounts};

use crate::error::{CompareError, Result};
use crate::population::histogram;

/// The steps of a stream the matrices are estimated from (`train`) and the steps the
/// strategies are scored on (`score`), numbered from 1.
///
/// ```
/// use tpl_compare::Holdout;
/// use tpl_core::Steps;
/// // Matrices from the first half of 1944 steps; the second half is scored.
/// let h = Holdout::new(1944, Steps::new(1, 972)?, None, false)?;
/// assert_eq!(h.score(), Steps::new(973, 1944)?);
/// assert!(!h.in_sample());
/// // Scoring steps the matrices saw must be asked for.
/// assert!(Holdout::new(1944, Steps::new(1, 972)?, Some(Steps::new(900, 1944)?), false).is_err());
/// assert!(Holdout::new(1944, Steps::new(1, 972)?, Some(Steps::new(900, 1944)?), true)?.in_sample());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holdout {
    train: Steps,
    score: Steps,
}

/// What [`Holdout::split`] makes of a user stream.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HeldOut {
    /// The true counts of the scored steps, one row per step ([`histogram`]).
    pub truth: Vec<Vec<f64>>,
    /// The backward matrix estimated from the training steps (TKDE orientation).
    pub backward: EstimatedMatrix,
    /// The forward matrix estimated from the training steps.
    pub forward: EstimatedMatrix,
}

impl Holdout {
    /// Matrices from steps `train`, scores on steps `score` of a stream of `steps` steps;
    /// without `score`, the steps outside `train` ([`Steps::complement`]: `train` must start
    /// at the first step or end at the last one). Ranges that share a step are refused
    /// unless `allow_overlap` (then [`Holdout::in_sample`] says so).
    ///
    /// # Errors
    /// [`CompareError::Steps`] for a range past the stream or, without `score`, a `train`
    /// range that leaves no step or two separate ranges; [`CompareError::InSample`] for
    /// ranges that share a step without `allow_overlap`.
    pub fn new(steps: usize, train: Steps, score: Option<Steps>, allow_overlap: bool) -> Result<Self> {
        train.check_within(steps).map_err(CompareError::Steps)?;
        let score = match score {
            Some(s) => {
                s.check_within(steps).map_err(CompareError::Steps)?;
                s
            }
            None => train.complement(steps).map_err(CompareError::Steps)?,
        };
        let holdout = Self { train, score };
        if holdout.in_sample() && !allow_overlap {
            return Err(CompareError::InSample { train, score });
        }
        Ok(holdout)
    }

    /// The steps the matrices are estimated from.
    pub fn train(&self) -> Steps {
        self.train
    }

    /// The steps the strategies are scored on.
    pub fn score(&self) -> Steps {
        self.score
    }

    /// Whether some scored step is also a training step: the matrices then came (in part)
    /// from the scored data.
    pub fn in_sample(&self) -> bool {
        self.train.overlap(&self.score).is_some()
    }

    /// The forward and backward matrices estimated from the training steps of the dense
    /// stream `states` over `n` states ([`TransitionCounts::from_steps`]; a move across the
    /// range's boundary is not counted; a row without data is an identity row), smoothed
    /// with `smoothing` when given (TKDE eq. 28), and the true counts of the scored steps.
    ///
    /// # Errors
    /// [`CompareError::Steps`] when a range goes past `states`; [`CompareError::Estimate`]
    /// for a state ≥ n, a ragged stream or a smoothing that is not finite and ≥ 0;
    /// [`CompareError::StateOutOfRange`] as [`histogram`].
    pub fn split(&self, states: &[Vec<usize>], n: usize, smoothing: Option<f64>) -> Result<HeldOut> {
        for range in [self.train, self.score] {
            range.check_within(states.len()).map_err(CompareError::Steps)?;
        }
        let counts = TransitionCounts::from_steps(n, states, self.train).map_err(CompareError::Estimate)?;
        let estimate = |m: tpl_core::Result<EstimatedMatrix>| {
            m.and_then(|m| m.smoothed(smoothing)).map_err(CompareError::Estimate)
        };
        let backward = estimate(counts.backward())?;
        let forward = estimate(counts.forward())?;
        let truth = histogram(&states[self.score.indices()], n)?;
        Ok(HeldOut { truth, backward, forward })
    }
}

#[cfg(test)]
mod tests {
    use tpl_core::TransitionMatrix;

    use super::*;

    fn s(a: usize, b: usize) -> Steps {
        Steps::new(a, b).unwrap()
    }

    #[test]
    fn the_default_score_is_the_other_steps() {
        assert_eq!(Holdout::new(10, s(1, 4), None, false).unwrap().score(), s(5, 10));
        assert_eq!(Holdout::new(10, s(7, 10), None, false).unwrap().score(), s(1, 6));
        assert_eq!(
            Holdout::new(10, s(3, 4), None, false),
            Err(CompareError::Steps(tpl_core::CoreError::StepsLeftSplit { first: 3, last: 4, steps: 10 }))
        );
        assert_eq!(
            Holdout::new(10, s(1, 10), None, true),
            Err(CompareError::Steps(tpl_core::CoreError::NoStepsLeft { steps: 10 }))
        );
        // Disjoint ranges in any order, with a gap or not.
        let h = Holdout::new(10, s(6, 8), Some(s(1, 3)), false).unwrap();
        assert_eq!((h.train(), h.score(), h.in_sample()), (s(6, 8), s(1, 3), false));
    }

    #[test]
    fn overlap_is_refused_unless_asked_for_and_then_said() {
        assert_eq!(
            Holdout::new(10, s(1, 5), Some(s(5, 10)), false),
            Err(CompareError::InSample { train: s(1, 5), score: s(5, 10) })
        );
        let message = CompareError::InSample { train: s(1, 5), score: s(5, 10) }.to_string();
        assert!(
            message.contains("5..5") && message.contains("1..5") && message.contains("5..10"),
            "{message}"
        );
        assert!(Holdout::new(10, s(1, 10), Some(s(1, 10)), true).unwrap().in_sample());
        assert!(matches!(Holdout::new(10, s(1, 11), None, false), Err(CompareError::Steps(_))));
        assert!(matches!(Holdout::new(10, s(1, 5), Some(s(6, 11)), false), Err(CompareError::Steps(_))));
    }

    #[test]
    fn split_estimates_from_one_period_and_scores_the_other() {
        // Two users; in steps 1..3 they stay, in steps 4..6 they swap cells every step.
        let states = vec![vec![0, 1], vec![0, 1], vec![0, 1], vec![1, 0], vec![0, 1], vec![1, 0]];
        let h = Holdout::new(6, s(1, 3), None, false).unwrap();
        let out = h.split(&states, 2, None).unwrap();
        assert_eq!(out.forward.matrix, TransitionMatrix::identity(2), "no swap is seen in 1..3");
        assert_eq!(out.backward.matrix, TransitionMatrix::identity(2));
        assert_eq!(out.truth, vec![vec![1.0, 1.0]; 3]);
        let later = Holdout::new(6, s(4, 6), None, false).unwrap().split(&states, 2, Some(0.0)).unwrap();
        assert_eq!(later.forward.matrix.row(0), &[0.0, 1.0]);
        assert_eq!(later.truth.len(), 3);
        let smoothed = h.split(&states, 2, Some(1.0)).unwrap();
        assert_eq!(smoothed.forward.matrix.row(0), &[2.0 / 3.0, 1.0 / 3.0]);
        assert!(matches!(h.split(&states, 2, Some(-1.0)), Err(CompareError::Estimate(_))));
        assert!(matches!(h.split(&states[..4], 2, None), Err(CompareError::Steps(_))));
        assert!(matches!(h.split(&states, 1, None), Err(CompareError::Estimate(_))));
    }
}
