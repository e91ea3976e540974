use super::*;

/// a = ε/Δ whose Laplace noise has variance `v` (2/a² = v).
fn weight(v: f64) -> f64 {
    (2.0 / v).sqrt()
}

/// Steps `m` with the model's own mean as the estimate (no distance term): its P.
fn p_after(m: &mut LocalLevel, release: &[f64], a: f64) -> Vec<f64> {
    let mut probe = m.clone();
    probe.step(release, a, &vec![0.0; release.len()], None);
    let estimate = if probe.mean.is_empty() { vec![0.0; release.len()] } else { probe.mean.clone() };
    m.step(release, a, &estimate, None)
}

#[test]
fn the_first_release_has_the_noise_of_its_budget() {
    let mut m = LocalLevel::new(Gain::Optimal);
    let s = p_after(&mut m, &[3.0, 5.0], weight(8.0));
    assert_eq!(s.len(), 2);
    assert!(s.iter().all(|&s| (s - 8.0).abs() < 1e-12), "{s:?}");
}

#[test]
fn no_error_scale_before_a_release_with_information() {
    let mut m = LocalLevel::new(Gain::Optimal);
    assert!(m.step(&[3.0, 5.0], 0.0, &[4.0, 4.0], None).is_empty());
    assert_eq!(m.step(&[3.0, 5.0], weight(2.0), &[4.0, 4.0], None).len(), 2);
}

#[test]
fn releases_of_a_count_that_does_not_drift_average_their_noise() {
    // Releases equal to each other: no drift is measured (it is clipped at 0), so after k
    // releases of variance v the optimal filter's variance is v/k.
    let mut m = LocalLevel::new(Gain::Optimal);
    let mut last = Vec::new();
    for _ in 0..10 {
        last = p_after(&mut m, &[4.0], weight(2.0));
    }
    assert!((last[0] - 0.2).abs() < 1e-12, "{last:?}");
}

#[test]
fn measured_drift_keeps_the_error_from_vanishing() {
    // The release jumps by 10 every step with noise variance 2: the drift rate measured is
    // 100 − 4 = 96 per step, and the steady variance solves P = (P + 96)·2/(P + 98).
    let mut m = LocalLevel::new(Gain::Optimal);
    for t in 0..200 {
        p_after(&mut m, &[10.0 * t as f64], 1.0);
    }
    let p = m.variance[0];
    let steady = (p + 96.0) * 2.0 / (p + 98.0);
    assert!((p - steady).abs() < 1e-9 && p > 1.9 && p < 2.0, "{p}");
}

#[test]
fn a_repeat_grows_the_error_by_the_drift_rate() {
    let mut m = LocalLevel::new(Gain::Optimal);
    p_after(&mut m, &[0.0], 1.0);
    let after = p_after(&mut m, &[10.0], 1.0)[0];
    // Drift measured: (100 − 2 − 2)/1 = 96 per step, over gaps of one step: each repeat adds it.
    let repeat = p_after(&mut m, &[10.0], 0.0)[0];
    let again = p_after(&mut m, &[10.0], 0.0)[0];
    assert!((repeat - after - 96.0).abs() < 1e-9 && (again - repeat - 96.0).abs() < 1e-9, "{after} {repeat}");
}

#[test]
fn after_a_release_the_drift_of_a_whole_gap_comes_at_once() {
    // Fresh releases every 4 steps, 40 apart: d = (1600 − 4)/4 = 399 per step and ḡ = 4, so
    // the first step after a release adds 4·d and the next three nothing.
    let mut m = LocalLevel::new(Gain::ReleaseOnly);
    for t in 0..8 {
        let a = if t % 4 == 0 { 1.0 } else { 0.0 };
        p_after(&mut m, &[40.0 * (t / 4) as f64], a);
    }
    let p: Vec<f64> = (8..12).map(|t| p_after(&mut m, &[80.0], if t == 8 { 1.0 } else { 0.0 })[0]).collect();
    // Step 8 is fresh: mle's variance is the release's, 2; then 2 + 4·399 three times.
    let d = (1600.0 - 4.0) / 4.0;
    assert!((p[0] - 2.0).abs() < 1e-9, "{p:?}");
    for v in &p[1..] {
        assert!((v - 2.0 - 4.0 * d).abs() < 1e-6, "{p:?}");
    }
}

#[test]
fn mle_reads_only_its_release_so_its_error_is_that_release_s_noise() {
    let mut m = LocalLevel::new(Gain::ReleaseOnly);
    for _ in 0..5 {
        let s = p_after(&mut m, &[4.0, 4.0], weight(8.0));
        assert!(s.iter().all(|&s| (s - 8.0).abs() < 1e-12));
    }
}

#[test]
fn an_estimate_away_from_the_model_s_mean_widens_by_the_distance() {
    let mut m = LocalLevel::new(Gain::Optimal);
    let s = m.step(&[10.0, 10.0], weight(2.0), &[13.0, 10.0], None);
    assert_eq!(s, vec![2.0 + 9.0, 2.0]);
}

#[test]
fn the_estimator_s_own_variance_is_used_where_it_is_larger() {
    let mut m = LocalLevel::new(Gain::Optimal);
    let s = m.step(&[10.0, 10.0], weight(2.0), &[10.0, 10.0], Some(&[5.0, 1.0]));
    assert_eq!(s, vec![5.0, 2.0]);
}

#[test]
fn the_model_interval_rounds_outwards_and_clips_to_the_population() {
    let (lo, hi) = model_interval(&[10.0, 2.0, 0.0], &[0.0, 1.0, 0.5], 0.5).unwrap();
    // z(0.75) = 0.674: 2 ± 0.674 → [1, 3]; 0 ± 0.34 → [0, 1]; σ = 0 keeps the estimate.
    assert_eq!(lo, vec![10.0, 1.0, 0.0]);
    assert_eq!(hi, vec![10.0, 3.0, 1.0]);
    let (lo, hi) = model_interval(&[11.5, 0.5], &[100.0, 100.0], 0.9).unwrap();
    assert_eq!((lo, hi), (vec![0.0, 0.0], vec![12.0, 12.0]));
}

#[test]
fn the_model_interval_refuses_what_it_cannot_read() {
    for level in [0.0, 1.0, f64::NAN, -0.5] {
        assert!(model_interval(&[1.0], &[1.0], level).is_err(), "{level}");
    }
    assert!(model_interval(&[1.0, 2.0], &[1.0], 0.9).is_err());
    assert!(model_interval(&[1.0], &[f64::NAN], 0.9).is_err());
    assert!(model_interval(&[1.0], &[-1.0], 0.9).is_err());
}

#[test]
fn the_first_gap_between_releases_gets_its_drift() {
    // Fresh releases every 4 steps, 100 apart, noise variance 2: d = (10⁴ − 4)/4 per step
    // and ḡ = 4, measured when the second release closes the first gap; its prediction then
    // holds the whole gap's drift, 4·d, on top of the first release's variance.
    let mut m = LocalLevel::new(Gain::Optimal);
    for t in 0..4 {
        p_after(&mut m, &[0.0], if t == 0 { 1.0 } else { 0.0 });
    }
    let d = (1e4 - 4.0) / 4.0;
    let predicted = 2.0 + 4.0 * d;
    let p = p_after(&mut m, &[100.0], 1.0)[0];
    assert!((p - predicted * 2.0 / (predicted + 2.0)).abs() < 1e-9, "{p}");
}

#[test]
fn a_release_without_noise_is_the_count_and_its_error_is_zero() {
    // ε/Δ so large that the noise variance 2/a² is 0: the release is the count.
    let mut m = LocalLevel::new(Gain::Optimal);
    for _ in 0..3 {
        let s = m.step(&[5.0, 7.0], 1e200, &[5.0, 7.0], None);
        assert_eq!(s, vec![0.0, 0.0]);
    }
    let s = m.step(&[5.0, 7.0], 1.0, &[5.0, 7.0], None);
    assert!(s.iter().all(|v| v.is_finite()), "{s:?}");
}

#[test]
fn huge_releases_and_tiny_budgets_never_give_a_zero_or_nan_variance() {
    let mut m = LocalLevel::new(Gain::Optimal);
    let mut seen = Vec::new();
    for (r, a) in [(1e200, 1.0), (-1e200, 1.0), (0.0, 0.0), (0.0, 1e-154), (3.0, 1e-154), (3.0, 0.0)] {
        seen.extend(m.step(&[r], a, &[0.0], None));
    }
    assert!(seen.iter().all(|v| !v.is_nan() && *v > 0.0), "{seen:?}");
}

#[test]
fn a_saved_model_fits_only_a_filter_of_its_gain_and_cells() {
    let mut m = LocalLevel::new(Gain::Optimal);
    m.step(&[1.0, 2.0], 1.0, &[1.0, 2.0], None);
    assert!(m.fits(2, &LocalLevel::new(Gain::Optimal)));
    assert!(!m.fits(3, &LocalLevel::new(Gain::Optimal)));
    assert!(!m.fits(2, &LocalLevel::new(Gain::ReleaseOnly)));
}

#[test]
fn the_model_interval_holds_an_estimate_a_rounding_above_the_population() {
    let x = [10.000000000000002, 0.0];
    let (lo, hi) = model_interval(&x, &[0.0, 0.0], 0.9).unwrap();
    assert!(lo[0] <= x[0] && x[0] <= hi[0], "{lo:?} {hi:?}");
}

#[test]
fn the_rate_is_raised_by_one_standard_error_of_its_measurement() {
    // Releases of noise variance 2 that move by 10 and 0 in turn: e = 96 and −4, so d̂ = 46
    // and the m pairs scatter by 50 about it, a standard error of 50/√(m − 1).
    let mut m = LocalLevel::new(Gain::ReleaseOnly);
    let pairs = 20;
    for t in 0..=pairs {
        p_after(&mut m, &[10.0 * (t / 2 + t % 2) as f64], 1.0);
    }
    let expected = 46.0 + RATE_ALLOWANCE * 50.0 / ((pairs - 1) as f64).sqrt();
    assert!((m.rate(0) - expected).abs() < 1e-9, "{} against {expected}", m.rate(0));
}

#[test]
fn a_state_saved_before_the_moments_were_kept_does_not_fit() {
    let mut m = LocalLevel::new(Gain::ReleaseOnly);
    for t in 0..3 {
        p_after(&mut m, &[10.0 * (t % 2) as f64], 1.0);
    }
    assert!(m.fits(1, &LocalLevel::new(Gain::ReleaseOnly)));
    // As a state saved by an earlier version reads: no moments beside its drift sums.
    m.drift_moments.clear();
    m.gap_squares = 0.0;
    assert!(!m.fits(1, &LocalLevel::new(Gain::ReleaseOnly)));
}

#[test]
fn releases_too_large_to_square_twice_keep_the_rate_as_measured() {
    // e ≈ 10¹⁸⁰ overflows e², not e: the allowance is dropped, never an infinite rate.
    let mut m = LocalLevel::new(Gain::ReleaseOnly);
    for t in 0..4 {
        p_after(&mut m, &[1e90 * (t % 2) as f64], 1.0);
    }
    assert!(m.rate(0).is_finite() && m.rate(0) > 1e179, "{}", m.rate(0));
}

#[test]
fn a_rate_measured_below_zero_is_given_its_standard_error() {
    // Releases of noise variance 2 that move by 2 and 0 in turn: e = 0 and −4, so d̂ = −2
    // (the noise looks larger than the moves) and the pairs scatter by 2 about it. The drift
    // is not known to be 0: the rate is the standard error 2/√(m − 1), not max(d̂ + it, 0),
    // which would claim no drift at all.
    let mut m = LocalLevel::new(Gain::ReleaseOnly);
    let pairs = 20;
    for t in 0..=pairs {
        p_after(&mut m, &[2.0 * (t / 2 + t % 2) as f64], 1.0);
    }
    let expected = RATE_ALLOWANCE * 2.0 / ((pairs - 1) as f64).sqrt();
    assert!((m.rate(0) - expected).abs() < 1e-9, "{} against {expected}", m.rate(0));
}
