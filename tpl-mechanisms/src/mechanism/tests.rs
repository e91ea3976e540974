use proptest::prelude::*;
use rand_chacha::ChaCha12Rng;

use super::*;
use crate::noise::{DiscreteLaplace, FloatLaplace};

/// Integer noise that returns a fixed value (tests: a draw beyond the exact range).
struct Fixed(f64);

impl NoiseSource for Fixed {
    fn laplace(&mut self, _: f64) -> Result<f64> {
        Ok(self.0)
    }
    fn integer_valued(&self) -> bool {
        true
    }
}

fn discrete(seed: u64) -> LaplaceMechanism<DiscreteLaplace<ChaCha12Rng>> {
    LaplaceMechanism::new(DiscreteLaplace::seeded(seed))
}

#[test]
fn effective_budget_doubles_at_sensitivity_one_and_is_the_budget_at_two() {
    assert_eq!(effective_budget(0.1, 2.0), 0.1);
    assert_eq!(effective_budget(0.1, 1.0), 0.2);
    assert_eq!(effective_budget(0.1, 4.0), 0.05);
    assert_eq!(effective_budget(f64::MAX, 1.0), f64::INFINITY);
    assert_eq!(budget_for_effective(0.2, 1.0), 0.1);
    assert_eq!(budget_for_effective(f64::INFINITY, 3.0), f64::MAX);
}

#[test]
fn a_loss_that_overflows_is_refused_naming_budget_and_sensitivity() {
    assert_eq!(checked_effective_budget(0.1, 1.0), Ok(0.2));
    assert_eq!(checked_effective_budget(0.0, 1e-320), Ok(0.0));
    let e = checked_effective_budget(1.0, 1e-320).unwrap_err();
    assert_eq!(e, MechError::LossOverflow { budget: 1.0, sensitivity: 1e-320 });
    assert_eq!(
        e.to_string(),
        "the loss 2·ε/Δ of budget 1 at sensitivity 1e-320 overflows a double: the sensitivity is too small for the \
         budget"
    );
    assert!(checked_effective_budget(f64::MAX, 1.0).is_err());
}

proptest! {
    /// ε_t·2/Δ is never understated and at most one ulp above: e/2 ≥ ε_t/Δ exactly, and
    /// the next double down is below it (signs of exact fma residuals).
    #[test]
    fn effective_budget_is_the_exact_value_rounded_up(
        log_b in -250.0f64..250.0, log_d in -40.0f64..40.0, same in any::<bool>()
    ) {
        let budget = 10f64.powf(log_b);
        let delta = if same { 2.0 } else { 10f64.powf(log_d) };
        let e = effective_budget(budget, delta);
        if same {
            prop_assert_eq!(e, budget);
        }
        let half = e / 2.0;
        prop_assert!(half.mul_add(delta, -budget) >= 0.0, "{e} understates {budget}·2/{delta}");
        prop_assert!(half.next_down().mul_add(delta, -budget) < 0.0, "{e} is more than one ulp above");
    }

    /// The budget for an effective budget spends no more than it, and loses at most a few ulps.
    #[test]
    fn budget_for_effective_keeps_the_effective_budget(
        log_e in -250.0f64..250.0, log_d in -40.0f64..40.0
    ) {
        let effective = 10f64.powf(log_e);
        let delta = 10f64.powf(log_d);
        let b = budget_for_effective(effective, delta);
        prop_assert!(effective_budget(b, delta) <= effective);
        let ideal = effective * delta / 2.0;
        prop_assert!((b - ideal).abs() <= 1e-15 * ideal, "{b} vs {ideal}");
    }
}

/// Regression: a count of 10^20 was released as exactly 10^20 (the noise vanished in the
/// f64 sum), and 9007199254740993 was read as …992 and released. Both are refused now,
/// as is every count beyond ±2^52, before any draw.
#[test]
fn counts_beyond_two_to_52_are_refused_before_any_draw() {
    let mut m = discrete(1);
    for (answer, cell) in [
        (vec![1e20], 0),
        (vec![3.0, 9_007_199_254_740_993u64 as f64], 1),
        (vec![0.0, 1.0, MAX_EXACT_COUNT + 1.0], 2),
        (vec![-MAX_EXACT_COUNT - 1.0], 0),
    ] {
        let value = answer[cell];
        let want = MechError::CountTooLarge { cell, value };
        assert_eq!(m.validate(&answer), Err(want.clone()), "{answer:?}");
        assert_eq!(m.release(&answer, 2.0, 1.0), Err(want), "{answer:?}");
    }
    // The edge itself is released, exactly: c + noise is an integer near c.
    let r = m.release(&[MAX_EXACT_COUNT, -MAX_EXACT_COUNT], 2.0, 1.0).unwrap();
    assert!(r.iter().all(|v| v.fract() == 0.0));
    assert!((r[0] - MAX_EXACT_COUNT).abs() < 200.0 && (r[1] + MAX_EXACT_COUNT).abs() < 200.0, "{r:?}");
    // The float sampler (not release-grade) has no such bound.
    let mut f = LaplaceMechanism::new(FloatLaplace::seeded(1));
    assert!(f.release(&[1e20], 2.0, 1.0).is_ok());
}

/// The noise at the largest count is really there: 2^52 released 400 times gives
/// integers spread like Lap(2) around it (mean |noise| ≈ 2, many distinct values).
#[test]
fn the_largest_count_takes_its_noise() {
    let mut m = discrete(7);
    let noise: Vec<f64> =
        (0..400).map(|_| m.release(&[MAX_EXACT_COUNT], 2.0, 1.0).unwrap()[0] - MAX_EXACT_COUNT).collect();
    assert!(noise.iter().all(|x| x.fract() == 0.0));
    let mut distinct = noise.clone();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    assert!(distinct.len() >= 8, "{distinct:?}");
    let mean_abs = noise.iter().map(|x| x.abs()).sum::<f64>() / 400.0;
    // E|Y| ≈ 1.92 for the discrete Laplace with b = 2; sd of the mean ≈ 0.1.
    assert!((1.4..2.5).contains(&mean_abs), "mean |noise| = {mean_abs}");
}

/// Scales above 2^46 are refused before any draw (a budget too small for Δ), naming the
/// scale; 2^46 itself is accepted. The float sampler refuses only an infinite scale.
#[test]
fn scales_beyond_the_exact_bound_are_refused() {
    let mut m = discrete(3);
    assert!(m.release(&[5.0], 1.0, 1.0 / MAX_EXACT_SCALE).is_ok());
    let budget = (1.0 / MAX_EXACT_SCALE).next_down();
    match m.release(&[5.0], 1.0, budget) {
        Err(MechError::ScaleTooLarge { scale, max, .. }) => {
            assert!(scale > MAX_EXACT_SCALE && max == MAX_EXACT_SCALE, "{scale} {max}");
        }
        other => panic!("expected ScaleTooLarge, got {other:?}"),
    }
    assert!(matches!(m.release(&[5.0], 2.0, 1e-300), Err(MechError::ScaleTooLarge { .. })));
    let mut f = LaplaceMechanism::new(FloatLaplace::seeded(1));
    assert!(f.release(&[5.0], 2.0, 1e-300).is_ok());
    let overflow = f.release(&[5.0], 2.0, 1e-310);
    assert_eq!(
        overflow,
        Err(MechError::ScaleTooLarge {
            sensitivity: 2.0,
            budget: 1e-310,
            scale: f64::INFINITY,
            max: f64::MAX
        })
    );
    let message = overflow.unwrap_err().to_string();
    assert!(message.contains("2/1e-310 overflows") && !message.contains("inf"), "{message}");
    assert!(matches!(
        m.release(&[5.0], f64::NAN, 1.0),
        Err(MechError::Core(tpl_core::CoreError::BadSensitivity(_)))
    ));
}

proptest! {
    /// The count test of `validate` says what `fract() == 0 && |v| ≤ 2^52` says, on every
    /// bit pattern and on every double near the integers and the bound.
    #[test]
    fn is_exact_count_agrees_with_fract(bits in any::<u64>(), k in -(1i64 << 53)..(1i64 << 53), ulps in -2i64..=2) {
        let reference = |v: f64| v.fract() == 0.0 && v.abs() <= MAX_EXACT_COUNT;
        let v = f64::from_bits(bits);
        prop_assert_eq!(is_exact_count(v), reference(v));
        let mut w = k as f64;
        for _ in 0..ulps.unsigned_abs() {
            w = if ulps > 0 { w.next_up() } else { w.next_down() };
        }
        prop_assert_eq!(is_exact_count(w), reference(w), "{}", w);
    }
}

#[test]
fn is_exact_count_at_the_edges() {
    let two_52 = MAX_EXACT_COUNT;
    for v in [0.0, -0.0, 1.0, -7.0, two_52 - 1.0, two_52, -two_52] {
        assert!(is_exact_count(v), "{v}");
    }
    let refused = [0.5, -1.5, two_52 - 0.5, two_52 + 2.0, 1e300, 1e-300, f64::INFINITY, f64::NAN];
    for v in refused {
        assert!(!is_exact_count(v), "{v}");
    }
}

/// A draw beyond ±2^52 fails the release instead of rounding c + noise; at ±2^52 the
/// sum is exact (2^52 + 2^52 = 2^53).
#[test]
fn noise_beyond_two_to_52_fails_the_release() {
    let mut m = LaplaceMechanism::new(Fixed(MAX_EXACT_COUNT + 1.0));
    assert_eq!(m.release(&[0.0], 2.0, 1.0), Err(MechError::NoiseOutOfRange));
    let mut m = LaplaceMechanism::new(Fixed(-MAX_EXACT_COUNT));
    assert_eq!(m.release(&[-MAX_EXACT_COUNT], 2.0, 1.0), Ok(vec![-2.0 * MAX_EXACT_COUNT]));
}
