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
//! gap against the estimate held). Given what came before r_s, a difference's only randomness is
//! r_s's noise, of known variance, so each sum has a known variance V: a sum starts on the
//! releases' side, goes over to the model when it falls below −[`TO_MODEL`]·√V and back when it
//! rises above +[`TO_RELEASES`]·√V. The first fit and each refit set the evidence going again
//! ([`Guard::first_fit`], [`Guard::refitted`]).

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
    /// estimates at steps with information have not (yet) been shown to predict the next
    /// releases better.
    Release,
    /// The estimate of the last step with information, held: the model's predictions inside
    /// the gaps of a scheme that repeats releases have not (yet) been shown to predict the
    /// next release better.
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
/// current step, what was handed out, the steps since, and whether the model had been fitted
/// (before two releases with information its estimate is the release itself: nothing to score).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
struct Fresh {
    model: Vec<f64>,
    release: Vec<f64>,
    output: Vec<f64>,
    since: usize,
    #[cfg_attr(feature = "serde", serde(default))]
    fitted: bool,
}

/// What the model's estimate of a step is, for the guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Model {
    /// Before two releases with information: the release itself, nothing to score.
    Unfitted,
    /// Step 1 under a prior the user gave (uniform or explicit): the DBSec MAP step, handed
    /// out as asked; nothing to score it by.
    GivenPrior,
    /// The model's parameters are fitted to the releases so far: scored and handed out on
    /// the evidence.
    Fitted,
}

/// A running comparison of the model's predictions with another candidate's: the sum of the
/// differences of their squared distances to the releases, the sum of those differences' noise
/// variances, and the side the evidence stands on.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(default))]
struct Score {
    sum: f64,
    variance: f64,
    /// Whether the model is handed out: the score starts on the releases' side, goes over
    /// when the sum falls below −[`TO_MODEL`] of its standard deviations, and back when it
    /// rises above [`TO_RELEASES`] of them.
    model: bool,
}

impl Score {
    /// Adds one release's term ‖r − p‖² − ‖r − q‖² for the model's prediction p and the other
    /// candidate's q, the noise of r having variance `noise` in each cell: given everything
    /// before r, the term's noise is 2·(q − p)·v, of variance 4·noise·‖q − p‖².
    fn add(&mut self, release: &[f64], p: &[f64], q: &[f64], noise: f64) {
        self.sum += distance2(release, p) - distance2(release, q);
        self.variance += 4.0 * noise * distance2(p, q);
        let deviation = self.variance.sqrt();
        if self.sum < -TO_MODEL * deviation {
            self.model = true;
        } else if self.sum > TO_RELEASES * deviation {
            self.model = false;
        }
    }

    /// Starts the evidence again, keeping the side it stands on.
    fn restart(&mut self) {
        self.sum = 0.0;
        self.variance = 0.0;
    }
}

/// The guard's state: the two running scores and what they are scored on next.
#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(default))]
pub(crate) struct Guard {
    /// The model's estimates at steps with information, moved on to the next release with
    /// information, against the releases projected, moved the same way.
    fresh: Score,
    /// The model's predictions through a gap (a release that ends one: s − a ≥ 2) against
    /// the estimate held through it.
    gap: Score,
    last: Option<Fresh>,
    /// The model was refitted at this step: once this release has scored the candidates of
    /// the old parameters, the evidence starts again for the new ones.
    refitted: bool,
}

/// How many standard deviations of its noise a score must fall below zero to hand the model
/// out: about a one-sided test at 31 %. The noise of each release being known (its ε_t and
/// mechanism), one release can be enough. Measured on the stress grid (`benches/accuracy`):
/// see docs/map.md §8, "The guard".
const TO_MODEL: f64 = 0.5;

/// How many standard deviations of its noise a score must rise above zero to hand the releases
/// out again: leaving the model takes more evidence than going back to it. Where the releases
/// are noisy, the releases projected are far worse than a model that is right (up to 150× the
/// strictly causal Kalman filter's error on the stress grid), and a 1σ bar is crossed by
/// chance again and again over a long stream; a model that misses by δ in a cell is refuted
/// fast all the same, its term growing as δ² and the term's deviation as δ.
const TO_RELEASES: f64 = 3.0;

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

    /// Takes the model's first fit, made at this step from the releases so far, and its
    /// `motion` (a step of the new model). A fit where nobody moves (`still`: a filter that
    /// weighs the releases by their noise) is handed out from the start. A fit that moves
    /// people is handed out too unless its motion, from the last release projected, predicts
    /// this release worse than holding that projection: those are the releases the fit was
    /// made from, but not a criterion it maximised — with two noisy releases of an
    /// OUT-shaped population and a smoothed matrix, the likelihood prefers a motion that
    /// spreads the full cell (it shrinks the first release's noise), and the squared distance
    /// to the second release does not. Both scores start again after this step
    /// ([`Guard::refitted`]).
    pub(crate) fn first_fit(&mut self, release: &[f64], motion: &dyn Fn(&[f64]) -> Vec<f64>, still: bool) {
        self.refitted = true;
        if still {
            self.fresh.model = true;
            self.gap.model = true;
            return;
        }
        let Some(last) = self.last.as_ref() else { return };
        let mut moved = last.release.clone();
        for _ in 0..last.since {
            moved = motion(&moved);
        }
        let term = distance2(release, &moved) - distance2(release, &last.release);
        self.fresh.model = term <= 0.0;
        self.gap.model = term <= 0.0;
    }

    /// Says that the model's parameters changed at this step: what was measured of the old
    /// ones says nothing of the new, so both scores start again after this step's release
    /// has scored the old ones' candidates; the sides they stand on are kept.
    pub(crate) fn refitted(&mut self) {
        self.refitted = true;
    }

    /// Takes step t's release, the variance of its noise in each cell (`None` for a step
    /// without information, ε_t = 0), the model's estimate of it and what that estimate is
    /// ([`Model`]); returns what to hand out and where it came from.
    pub(crate) fn step(
        &mut self,
        release: &[f64],
        noise: Option<f64>,
        model: &[f64],
        kind: Model,
        total: f64,
    ) -> (Vec<f64>, Source) {
        let fitted = kind == Model::Fitted;
        let Some(noise) = noise else {
            return match &self.last {
                Some(last) if !self.gap.model => (last.output.clone(), Source::Held),
                _ => (model.to_vec(), Source::Model),
            };
        };
        if let Some(last) = self.last.as_ref().filter(|l| l.fitted) {
            self.fresh.add(release, &last.model, &last.release, noise);
            if last.since >= 2 {
                self.gap.add(release, &last.model, &last.output, noise);
            }
        }
        if std::mem::take(&mut self.refitted) {
            self.fresh.restart();
            self.gap.restart();
        }
        let projected = mle::solve(release, total);
        let (output, source) = if self.fresh.model || kind == Model::GivenPrior {
            (model.to_vec(), Source::Model)
        } else {
            (projected.clone(), Source::Release)
        };
        self.last = Some(Fresh {
            model: model.to_vec(),
            release: projected,
            output: output.clone(),
            since: 0,
            fitted,
        });
        (output, source)
    }

    /// Whether this state can be a guard's over `cells` cells (what a resumed state is checked for).
    pub(crate) fn fits(&self, cells: usize) -> bool {
        let sized = |v: &Vec<f64>| v.len() == cells;
        self.last.as_ref().is_none_or(|l| sized(&l.model) && sized(&l.release) && sized(&l.output))
            && [self.fresh.sum, self.gap.sum, self.fresh.variance, self.gap.variance]
                .iter()
                .all(|v| v.is_finite())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STILL: fn(&[f64]) -> Vec<f64> = <[f64]>::to_vec;

    #[test]
    fn the_releases_are_handed_out_until_the_model_has_predicted_better() {
        // The truth stays at [5, 5]; releases scatter by ±1 (noise variance 1); the model sits on it.
        let mut g = Guard::default();
        let mut sources = Vec::new();
        for r in [[6.0, 4.0], [4.0, 6.0], [6.0, 4.0], [4.0, 6.0]] {
            g.advance(&STILL);
            sources.push(g.step(&r, Some(1.0), &[5.0, 5.0], Model::Fitted, 10.0));
        }
        assert_eq!(sources[0], (vec![6.0, 4.0], Source::Release), "nothing scored yet");
        // Step 2 scores step 1: the release [6, 4] is 8 from [4, 6], the model 2; the term −6
        // against a noise deviation 2·√(1·2) ≈ 2.8.
        assert_eq!(sources[1], (vec![5.0, 5.0], Source::Model));
        assert!(sources[2..].iter().all(|s| s.1 == Source::Model));
    }

    #[test]
    fn a_model_that_predicts_worse_goes_back_to_the_releases() {
        let mut g = Guard::default();
        let mut step = |r: [f64; 2], model: [f64; 2]| {
            g.advance(&STILL);
            g.step(&r, Some(1.0), &model, Model::Fitted, 10.0).1
        };
        assert_eq!(step([6.0, 4.0], [5.0, 5.0]), Source::Release);
        assert_eq!(step([4.0, 6.0], [5.0, 5.0]), Source::Model);
        // The people move to [9, 1]; the model stays where it was. Against [4, 6] it still
        // predicted better (32 against 50), then it misses by 32 where the release hit: within
        // three deviations of the evidence once (sum 8, deviation 12) and twice (40 against
        // 3·16.5), not three times (72 against 3·20).
        assert_eq!(step([9.0, 1.0], [5.0, 5.0]), Source::Model);
        assert_eq!(step([9.0, 1.0], [5.0, 5.0]), Source::Model, "one miss is within the evidence so far");
        assert_eq!(step([9.0, 1.0], [5.0, 5.0]), Source::Model, "two are");
        assert_eq!(step([9.0, 1.0], [5.0, 5.0]), Source::Release);
    }

    #[test]
    fn leaving_the_model_takes_more_evidence_than_going_to_it() {
        // One cell, the model predicting 0 and the other candidate 1, release noise variance 1:
        // each term is 2r − 1, of deviation 2.
        let mut to_model = Score::default();
        to_model.add(&[-0.25], &[0.0], &[1.0], 1.0);
        assert!(to_model.model, "−1.5 is below −0.5·2");
        let mut on_model = Score { model: true, ..Score::default() };
        // Two deviations above zero (4 against 2), then 8 against 2.83, then 12 against 3.46:
        // only the third passes three deviations.
        for (k, stays) in [true, true, false].into_iter().enumerate() {
            on_model.add(&[2.5], &[0.0], &[1.0], 1.0);
            assert_eq!(on_model.model, stays, "term {}: sum {}", k + 1, on_model.sum);
        }
    }

    #[test]
    fn an_estimate_before_the_fit_is_not_scored() {
        // Before two releases with information the model's estimate is the release itself (up
        // to rounding): a difference of 10⁻¹² would otherwise be evidence at any noise.
        let mut g = Guard::default();
        g.advance(&STILL);
        g.step(&[6.0, 4.0], Some(1.0), &[6.0 + 1e-12, 4.0 - 1e-12], Model::Unfitted, 10.0);
        g.advance(&STILL);
        let (x, s) = g.step(&[7.0, 3.0], Some(1.0), &[9.0, 1.0], Model::Fitted, 10.0);
        assert_eq!((x, s), (vec![7.0, 3.0], Source::Release));
        assert_eq!((g.fresh.sum, g.fresh.variance), (0.0, 0.0));
    }

    #[test]
    fn a_refit_starts_the_evidence_again_and_keeps_the_side() {
        let mut g = Guard::default();
        for r in [[6.0, 4.0], [4.0, 6.0]] {
            g.advance(&STILL);
            g.step(&r, Some(1.0), &[5.0, 5.0], Model::Fitted, 10.0);
        }
        assert!(g.fresh.model && g.fresh.sum < 0.0);
        g.advance(&STILL);
        g.refitted();
        let (_, s) = g.step(&[6.0, 4.0], Some(1.0), &[5.0, 5.0], Model::Fitted, 10.0);
        assert_eq!(s, Source::Model, "the side is kept");
        assert_eq!((g.fresh.sum, g.fresh.variance), (0.0, 0.0), "after this release scored the old fit");
    }

    #[test]
    fn a_first_fit_is_handed_out_unless_its_motion_missed_its_own_release() {
        // Two releases of a full first cell; the first fit comes with the second.
        let first = |still: bool, motion: &dyn Fn(&[f64]) -> Vec<f64>| {
            let mut g = Guard::default();
            g.step(&[10.0, 0.0], Some(1.0), &[10.0, 0.0], Model::Unfitted, 10.0);
            g.advance(&STILL);
            g.first_fit(&[10.0, 0.0], motion, still);
            let fresh = g.step(&[10.0, 0.0], Some(1.0), &[9.0, 1.0], Model::Fitted, 10.0).1;
            g.advance(motion);
            (fresh, g.step(&[10.0, 0.0], None, &[8.0, 2.0], Model::Fitted, 10.0).1)
        };
        assert_eq!(first(true, &STILL), (Source::Model, Source::Model));
        // A motion that spreads the full cell half over the other predicts [5, 5]: 50 from the
        // release against 0 for holding.
        let spread = |x: &[f64]| vec![0.5 * x[0] + x[1], 0.5 * x[0]];
        assert_eq!(first(false, &spread), (Source::Release, Source::Held));
        // One that moves nobody out of it predicts the release as well as holding does.
        let keep = |x: &[f64]| vec![x[0] + x[1], 0.0];
        assert_eq!(first(false, &keep), (Source::Model, Source::Model));
    }

    #[test]
    fn gap_predictions_that_drift_are_replaced_by_the_held_estimate() {
        let mut g = Guard::default();
        // The truth stays at [6, 4]; the model moves everyone to the first cell at each step.
        let drift = |x: &[f64]| vec![x[0] + x[1], 0.0];
        let mut sources = Vec::new();
        for _ in 0..3 {
            g.advance(&drift);
            sources.push(g.step(&[6.0, 4.0], Some(1.0), &[6.0, 4.0], Model::Fitted, 10.0).1);
            g.advance(&drift);
            sources.push(g.step(&[6.0, 4.0], None, &[10.0, 0.0], Model::Fitted, 10.0).1);
        }
        assert!(sources.iter().skip(1).step_by(2).all(|&s| s == Source::Held), "{sources:?}");
        assert!(!g.gap.model && g.gap.sum > 0.0);
        assert!(g.fits(2) && !g.fits(3));
    }

    #[test]
    fn gap_predictions_that_follow_the_people_are_handed_out() {
        // Everyone swaps cells at every step and the model knows it: held, any estimate is
        // wrong at every other step; moved by the model, it is right.
        let swap = |x: &[f64]| vec![x[1], x[0]];
        let mut g = Guard::default();
        let truth = [[8.0, 2.0], [2.0, 8.0]];
        let mut sources = Vec::new();
        for t in 0..8 {
            g.advance(&swap);
            let (r, noise) = if t % 3 == 0 { (truth[t % 2], Some(1.0)) } else { (truth[(t + 1) % 2], None) };
            sources.push(g.step(&r, noise, &truth[t % 2], Model::Fitted, 10.0).1);
        }
        assert_eq!(sources[1], Source::Held, "nothing scored yet");
        assert_eq!(sources[7], Source::Model, "{sources:?}");
    }
}
