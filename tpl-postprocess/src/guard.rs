//! The hand-over guard of the causal filter `map` ([docs/map.md](tpl_core::guide::map) §8, "The
//! guard"): at every step it hands out either the movement model's estimate or what the releases
//! alone say — the step's release projected onto the counts (the `mle` estimate) at a step with
//! information, the last estimate held at a step without — whichever has predicted the releases
//! better so far.
//!
//! Both candidates of a step a with information are moved on by the model to the next release
//! with information, r_s, and scored on it. For any prediction x̂ of step s made before r_s,
//! E‖r_s − x̂‖² = E‖c_s − x̂‖² + E‖v_s‖², the noise v_s of r_s being independent of everything
//! before it; so the difference of two predictions' squared distances to r_s is an unbiased
//! estimate of the difference of their squared errors against the counts c_s, whatever the
//! noise's distribution. Moved by the same motion A, the two predictions differ by A times the
//! difference of the candidates, so the score compares the candidates themselves (exactly when
//! A preserves distances, as when nobody moves); holding both instead would score them on
//! how far people moved between a and s. Two running sums of those differences decide, one for
//! steps with information and one for the steps of a gap (the model's prediction through the
//! gap against the estimate held), each in favour of the model until the sum exceeds the root of
//! the sum of its terms' squares ([`EVIDENCE`] times it).

use crate::mle;

/// What a step of `map` handed out ([docs/map.md](tpl_core::guide::map) §8, "The guard").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum Source {
    /// The movement model's estimate (the state-space filter on up to 64 cells, the calibrated
    /// MAP filter beyond).
    Model,
    /// The step's release projected onto {x ≥ 0, Σx = N} (the `mle` estimate): the model's
    /// estimates at steps with information have predicted the next release worse.
    Release,
    /// The estimate of the last step with information, held: the model's predictions inside
    /// the gaps of a scheme that repeats releases have predicted the next release worse.
    Held,
}

impl Source {
    /// The name used in JSON output: `model`, `release`, `held`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::Release => "release",
            Self::Held => "held",
        }
    }
}

/// The last step with information: the two candidates, each moved on by the model to the
/// current step, what was handed out, and the steps since.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Fresh {
    model: Vec<f64>,
    release: Vec<f64>,
    output: Vec<f64>,
    since: usize,
}

/// The guard's state: the two running scores and what they are scored on next.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Guard {
    /// Σ ‖r_s − A·model_a‖² − ‖r_s − A·release_a‖² over the releases with information s
    /// after the first, a the last step with information before s and A the model's motion
    /// from a to s.
    fresh_score: f64,
    /// Σ ‖r_s − A·model_a‖² − ‖r_s − output_a‖² over the releases s that end a gap
    /// (s − a ≥ 2): the model's prediction through the gap against the estimate held through it.
    gap_score: f64,
    /// The sums of the squares of the two scores' terms.
    fresh_squares: f64,
    gap_squares: f64,
    last: Option<Fresh>,
}

/// How many of its terms' root sum of squares a score must exceed to hand over: about a
/// one-sided test at 16 % that the model's estimates are no worse. Measured on the stress grid
/// (`benches/accuracy`, 42 cells of its quick subset): a hand-over on any positive score
/// (0) gave up to 1.26× the strictly causal Kalman filter in cells where the model was right;
/// 2 left the model in place where it was 1.33× `mle`; 1 kept both within 1.07× and 1.03×.
const EVIDENCE: f64 = 1.0;

/// Whether a score with these terms says the model predicted worse.
fn worse(score: f64, squares: f64) -> bool {
    score > EVIDENCE * squares.sqrt()
}

/// ‖r − x‖².
fn distance2(r: &[f64], x: &[f64]) -> f64 {
    r.iter().zip(x).map(|(a, b)| (a - b) * (a - b)).sum()
}

impl Guard {
    /// Moves both candidates of the last step with information one step on by `motion`, the
    /// model's prediction from the previous step to this one (called before the model takes
    /// this step's release).
    pub(crate) fn advance(&mut self, motion: &dyn Fn(&[f64]) -> Vec<f64>) {
        if let Some(last) = self.last.as_mut() {
            last.model = motion(&last.model);
            last.release = motion(&last.release);
            last.since += 1;
        }
    }

    /// Takes step t's release, whether it carries information (a = ε_t/Δ > 0) and the model's
    /// estimate of it; returns what to hand out and where it came from.
    pub(crate) fn step(
        &mut self,
        release: &[f64],
        informative: bool,
        model: &[f64],
        total: f64,
    ) -> (Vec<f64>, Source) {
        if !informative {
            return match &self.last {
                Some(last) if worse(self.gap_score, self.gap_squares) => (last.output.clone(), Source::Held),
                _ => (model.to_vec(), Source::Model),
            };
        }
        if let Some(last) = &self.last {
            let moved = distance2(release, &last.model);
            let term = moved - distance2(release, &last.release);
            self.fresh_score += term;
            self.fresh_squares += term * term;
            if last.since >= 2 {
                let term = moved - distance2(release, &last.output);
                self.gap_score += term;
                self.gap_squares += term * term;
            }
        }
        let projected = mle::solve(release, total);
        let (output, source) = if worse(self.fresh_score, self.fresh_squares) {
            (projected.clone(), Source::Release)
        } else {
            (model.to_vec(), Source::Model)
        };
        self.last =
            Some(Fresh { model: model.to_vec(), release: projected, output: output.clone(), since: 0 });
        (output, source)
    }

    /// Whether this state can be a guard's over `cells` cells (what a resumed state is checked for).
    pub(crate) fn fits(&self, cells: usize) -> bool {
        let sized = |v: &Vec<f64>| v.len() == cells;
        self.last.as_ref().is_none_or(|l| sized(&l.model) && sized(&l.release) && sized(&l.output))
            && [self.fresh_score, self.gap_score, self.fresh_squares, self.gap_squares]
                .iter()
                .all(|v| v.is_finite())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_that_predicts_worse_hands_over_to_the_releases() {
        // The truth stays at [6, 4]; the releases scatter around it; the model says [9, 1].
        let mut g = Guard::default();
        let (x, s) = g.step(&[6.0, 4.0], true, &[9.0, 1.0], 10.0);
        assert_eq!((x, s), (vec![9.0, 1.0], Source::Model), "nothing scored yet");
        g.advance(&|x: &[f64]| x.to_vec());
        // One score is no evidence: its size is its own spread.
        let (_, s) = g.step(&[7.0, 3.0], true, &[9.0, 1.0], 10.0);
        assert_eq!(s, Source::Model);
        g.advance(&|x: &[f64]| x.to_vec());
        let (x, s) = g.step(&[5.0, 5.0], true, &[9.0, 1.0], 10.0);
        assert_eq!((x, s), (vec![5.0, 5.0], Source::Release));
    }

    #[test]
    fn a_model_that_predicts_better_keeps_its_estimates() {
        let mut g = Guard::default();
        // Releases alternate around a truth of [5, 5]; the model sits on it.
        for (t, r) in [[7.0, 3.0], [3.0, 7.0], [7.0, 3.0], [3.0, 7.0]].iter().enumerate() {
            g.advance(&|x: &[f64]| x.to_vec());
            let (x, s) = g.step(r, true, &[5.0, 5.0], 10.0);
            assert_eq!((x, s), (vec![5.0, 5.0], Source::Model), "step {t}");
        }
    }

    #[test]
    fn gap_predictions_that_drift_are_replaced_by_the_held_estimate() {
        let mut g = Guard::default();
        // The truth stays at [6, 4]; the model moves everyone to the first cell at each step.
        let drift = |x: &[f64]| vec![x[0] + x[1], 0.0];
        let mut sources = Vec::new();
        for _ in 0..3 {
            g.advance(&drift);
            sources.push(g.step(&[6.0, 4.0], true, &[6.0, 4.0], 10.0).1);
            g.advance(&drift);
            sources.push(g.step(&[6.0, 4.0], false, &[10.0, 0.0], 10.0).1);
        }
        assert_eq!(sources[1], Source::Model, "nothing scored yet");
        g.advance(&drift);
        let (x, s) = g.step(&[6.0, 4.0], false, &[10.0, 0.0], 10.0);
        assert_eq!((x, s), (vec![6.0, 4.0], Source::Held));
        assert!(g.fits(2) && !g.fits(3));
    }

    #[test]
    fn people_who_move_as_the_model_says_are_scored_where_they_went() {
        // Everyone swaps cells at every step and the model knows it. Held, any estimate would
        // be scored on the swap; moved by the model, the better one wins.
        let swap = |x: &[f64]| vec![x[1], x[0]];
        let mut g = Guard::default();
        let truth = [[8.0, 2.0], [2.0, 8.0]];
        let releases = [[9.0, 1.0], [3.0, 7.0], [9.0, 1.0], [3.0, 7.0]];
        for (t, r) in releases.iter().enumerate() {
            g.advance(&swap);
            let (_, s) = g.step(r, true, &truth[t % 2], 10.0);
            assert_eq!(s, Source::Model, "step {t}");
        }
    }
}
