//! The causal filter `map` on up to 64 cells and its strictly causal baseline
//! [`kalman_causal`] ([docs/map.md](tpl_core::guide::map) §8, §14): the matrix is used from the
//! first fit, the guard hands over to the releases when the model predicts them worse, and
//! neither looks at a release after the step it estimates.

use tpl_core::TransitionMatrix;
use tpl_core::test_util::forward_only;
use tpl_postprocess::{Estimator, Filter, FilterConfig, PostprocessError, Source, filter, kalman_causal};

/// Three cells whose people all move one cell on every step.
fn rotation() -> TransitionMatrix {
    TransitionMatrix::new(vec![vec![0.0, 1.0, 0.0], vec![0.0, 0.0, 1.0], vec![1.0, 0.0, 0.0]]).unwrap()
}

/// The counts [2000, 700, 300] rotated t times, released with uniform noise in ±4 (a fixed
/// generator).
fn rotating_releases(horizon: usize) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let base = [2000.0, 700.0, 300.0];
    let truth: Vec<Vec<f64>> =
        (0..horizon).map(|t| (0..3).map(|j| base[(j + 3 - t % 3) % 3]).collect()).collect();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut noise = || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        8.0 * ((state >> 11) as f64 / (1u64 << 53) as f64 - 0.5)
    };
    let releases = truth.iter().map(|c| c.iter().map(|v| v + noise()).collect()).collect();
    (truth, releases)
}

fn squared_error(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    a.iter().zip(b).flat_map(|(x, y)| x.iter().zip(y).map(|(u, v)| (u - v) * (u - v))).sum()
}

#[test]
fn a_matrix_that_explains_the_releases_is_used_from_the_first_fit() {
    // Everyone moves every step, exactly as the matrix says: the first fit (after the second
    // release) already moves people, where `map` used to hold them for its first 16 releases.
    let (truth, r) = rotating_releases(60);
    let config = FilterConfig { correlation: &forward_only(&rotation()), ..FilterConfig::new(3000) };
    let mut f = Filter::new(3, config).unwrap();
    let steps: Vec<_> = r.iter().map(|x| f.step(x, 1.0).unwrap()).collect();
    let fit = steps[1].fit.expect("fitted after two releases");
    assert_eq!(fit.move_weight, 1.0, "{fit:?}");
    // The estimates are far closer to the truth than the releases.
    let estimates: Vec<Vec<f64>> = steps.iter().map(|s| s.estimate.clone()).collect();
    assert!(squared_error(&estimates[10..], &truth[10..]) < 0.5 * squared_error(&r[10..], &truth[10..]));
}

#[test]
fn a_model_that_predicts_worse_than_the_releases_hands_over_to_them() {
    // The matrix says everyone rotates, but nobody moves. Whatever the fit, the estimates
    // `map` hands out never stray far from the releases: the guard hands over once the model's
    // estimates predicted the next release worse than the release did.
    let truth = vec![vec![2000.0, 700.0, 300.0]; 40];
    let noise = [[30.0, -10.0, -20.0], [-25.0, 20.0, 5.0], [10.0, -30.0, 20.0]];
    let r: Vec<Vec<f64>> = (0..40).map(|t| (0..3).map(|j| truth[t][j] + noise[t % 3][j]).collect()).collect();
    let config = FilterConfig { correlation: &forward_only(&rotation()), ..FilterConfig::new(3000) };
    let out = filter(&r, &[0.05; 40], config.clone()).unwrap();
    let mle = filter(&r, &[0.05; 40], FilterConfig { estimator: Estimator::Mle, ..config }).unwrap();
    let (map_error, mle_error) =
        (squared_error(&out.estimates, &truth), squared_error(&mle.estimates, &truth));
    assert!(map_error <= mle_error, "map {map_error} mle {mle_error}");
}

#[test]
fn only_map_reports_what_its_guard_handed_out() {
    // People rotate as the matrix says: `map` hands out the releases until its model has
    // predicted the next ones better, then its model.
    let (_, r) = rotating_releases(30);
    let config = FilterConfig { correlation: &forward_only(&rotation()), ..FilterConfig::new(3000) };
    let mut f = Filter::new(3, config).unwrap();
    let sources: Vec<_> = r.iter().map(|x| f.step(x, 1.0).unwrap().source).collect();
    assert_eq!(sources[0], Some(Source::Release), "nothing is known of the model at step 1: {sources:?}");
    assert!(sources[10..].iter().all(|&s| s == Some(Source::Model)), "{sources:?}");
    let release = [2000.0, 700.0, 300.0];
    for estimator in [Estimator::Mle, Estimator::MapDbsec, Estimator::MapInteger] {
        let config =
            FilterConfig { estimator, correlation: &forward_only(&rotation()), ..FilterConfig::new(3000) };
        assert_eq!(Filter::new(3, config).unwrap().step(&release, 1.0).unwrap().source, None, "{estimator}");
    }
}

#[test]
fn the_causal_kalman_filter_never_looks_ahead() {
    let (_, r) = rotating_releases(12);
    let config = FilterConfig { correlation: &forward_only(&rotation()), ..FilterConfig::new(3000) };
    let whole = kalman_causal(&r, &[1.0; 12], config.clone()).unwrap();
    let mut changed = r.clone();
    changed[8] = vec![0.0, 0.0, 3000.0];
    let other = kalman_causal(&changed, &[1.0; 12], config.clone()).unwrap();
    assert_eq!(whole[..8], other[..8], "steps before the change are the same");
    assert_ne!(whole[8], other[8]);
    for x in &whole {
        assert!((x.iter().sum::<f64>() - 3000.0).abs() < 1e-6 && x.iter().all(|&v| v >= 0.0), "{x:?}");
    }
    // It follows the matrix: from the first fit on, far closer to the truth than the releases.
    let (truth, r) = rotating_releases(60);
    let out = kalman_causal(&r, &[1.0; 60], config).unwrap();
    assert!(squared_error(&out[10..], &truth[10..]) < 0.5 * squared_error(&r[10..], &truth[10..]));
}

#[test]
fn the_causal_kalman_filter_serves_at_most_64_cells() {
    let m = TransitionMatrix::identity(65);
    let config = FilterConfig { correlation: &forward_only(&m), ..FilterConfig::new(65) };
    let err = kalman_causal(&[vec![1.0; 65]], &[1.0], config).unwrap_err();
    assert!(matches!(err, PostprocessError::TooManyCells { cells: 65, limit: 64, .. }), "{err}");
    assert!(err.to_string().contains("65"), "{err}");
}
