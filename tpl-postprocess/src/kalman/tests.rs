use super::fit::climb;
use super::*;
use tpl_core::TransitionMatrix;
use tpl_core::test_util::{forward_only, uniforms};

/// A deterministic stream of n cells around a fixed histogram with ±noise.
fn releases(base: &[f64], horizon: usize, amplitude: f64) -> Vec<Vec<f64>> {
    let mut next = uniforms(0x2545_f491_4f6c_dd1d);
    (0..horizon).map(|_| base.iter().map(|&b| b + amplitude * (next() - 0.5)).collect()).collect()
}

#[test]
fn estimates_keep_the_population_and_are_non_negative() {
    let p = TransitionMatrix::smoothed_identity(4, 0.2).unwrap();
    let r = releases(&[40.0, 30.0, 20.0, 10.0], 30, 8.0);
    let config = FilterConfig { correlation: &forward_only(&p), ..FilterConfig::new(100) };
    let out = kalman_smooth(&r, &[1.0; 30], config).unwrap();
    for x in &out.estimates {
        assert!((x.iter().sum::<f64>() - 100.0).abs() < 1e-9);
        assert!(x.iter().all(|&v| v >= 0.0));
    }
}

#[test]
fn a_constant_truth_is_fitted_without_process_noise_and_averaged() {
    // The truth never changes and the releases scatter around it: the fit chooses a
    // process noise far below the release noise, and the smoothed estimate is close to
    // the truth (much closer than a single release).
    let truth = [50.0, 30.0, 20.0];
    let r = releases(&truth, 200, 6.0);
    let p = TransitionMatrix::smoothed_identity(3, 0.3).unwrap();
    let config = FilterConfig { correlation: &forward_only(&p), ..FilterConfig::new(100) };
    let out = kalman_smooth(&r, &[1.0; 200], config).unwrap();
    assert!(out.fit.process_noise < 0.01 * 8.0, "{:?}", out.fit);
    let mid = &out.estimates[100];
    for (x, t) in mid.iter().zip(&truth) {
        assert!((x - t).abs() < 1.0, "{mid:?}");
    }
}

#[test]
fn a_wrong_matrix_is_discarded() {
    // Nobody moves, but the matrix claims that everyone swaps cells every step: the fit
    // must not follow the matrix (γ = 0 keeps the people where the releases put them).
    let swap = TransitionMatrix::new(vec![vec![0.0, 1.0], vec![1.0, 0.0]]).unwrap();
    let r = releases(&[80.0, 20.0], 100, 4.0);
    let config = FilterConfig { correlation: &forward_only(&swap), ..FilterConfig::new(100) };
    let out = kalman_smooth(&r, &[1.0; 100], config).unwrap();
    assert!(out.fit.move_weight < 0.01, "{:?}", out.fit);
    assert!((out.estimates[50][0] - 80.0).abs() < 2.0, "{:?}", out.estimates[50]);
}

#[test]
fn steps_without_information_are_interpolated() {
    // Releases at steps 1, 5, 9, … only (the others repeat them with ε = 0).
    let p = TransitionMatrix::smoothed_identity(2, 0.1).unwrap();
    let mut r = Vec::new();
    let mut budgets = Vec::new();
    for t in 0..41 {
        let level = 20.0 + t as f64; // people drift steadily into cell 1
        if t % 4 == 0 {
            r.push(vec![level, 100.0 - level]);
            budgets.push(5.0);
        } else {
            let last: Vec<f64> = r[r.len() - 1].clone();
            r.push(last);
            budgets.push(0.0);
        }
    }
    let config = FilterConfig { correlation: &forward_only(&p), ..FilterConfig::new(100) };
    let out = kalman_smooth(&r, &budgets, config).unwrap();
    // Between releases the smoothed estimate moves towards the next release.
    assert!(out.estimates[18][0] > out.estimates[16][0] + 0.5, "{:?}", &out.estimates[15..21]);
    assert!(out.estimates[18][0] < out.estimates[20][0]);
}

#[test]
fn converged_covariances_give_the_same_estimates_as_recomputed_ones() {
    // The reuse of converged covariances is exact up to the convergence tolerance: the
    // estimates of a long stream match a pass that recomputes (a fresh stream of the same
    // length where each step's noise differs by a relative 1e-15, which defeats reuse).
    let p = TransitionMatrix::smoothed_identity(3, 0.2).unwrap();
    let r = releases(&[40.0, 35.0, 25.0], 120, 10.0);
    let config = FilterConfig { correlation: &forward_only(&p), ..FilterConfig::new(100) };
    let reused = kalman_smooth(&r, &[1.0; 120], config.clone()).unwrap();
    let budgets: Vec<f64> = (0..120).map(|t| 1.0 + 1e-15 * (t % 2) as f64).collect();
    let recomputed = kalman_smooth(&r, &budgets, config).unwrap();
    assert_eq!(reused.fit.move_weight, recomputed.fit.move_weight);
    for (a, b) in reused.estimates.iter().zip(&recomputed.estimates) {
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-6, "{x} vs {y}");
        }
    }
}

#[test]
fn the_fit_scores_what_the_filter_scores() {
    // The fit's jumps from release to release give the log-likelihood of the full
    // step-by-step filter, for irregular gaps and every kind of move weight.
    let p = TransitionMatrix::new(vec![
        vec![0.7, 0.2, 0.1, 0.0],
        vec![0.1, 0.6, 0.2, 0.1],
        vec![0.0, 0.3, 0.5, 0.2],
        vec![0.25, 0.25, 0.25, 0.25],
    ])
    .unwrap();
    let r = releases(&[40.0, 30.0, 20.0, 10.0], 60, 12.0);
    let irregular: Vec<f64> =
        (0..60).map(|t| if [0, 1, 4, 5, 13, 14, 15, 30, 59].contains(&t) { 1.0 } else { 0.0 }).collect();
    // Every step, and every 3rd: long runs of equal gaps, where converged updates are reused.
    let every: Vec<f64> = vec![1.0; 60];
    let third: Vec<f64> = (0..60).map(|t| f64::from(t % 3 == 0)).collect();
    for budgets in [irregular, every, third] {
        scores_match(&p, &r, &budgets);
    }
}

/// The fit's likelihood and last filtered mean equal the full filter's.
fn scores_match(p: &TransitionMatrix, r: &[Vec<f64>], budgets: &[f64]) {
    let rows: Vec<&[f64]> = r.iter().map(Vec::as_slice).collect();
    let noise: Vec<Option<f64>> = budgets.iter().map(|&e| (e > 0.0).then_some(8.0)).collect();
    let last_fresh = (0..60).rev().find(|&t| noise[t].is_some()).unwrap();
    let matrix: Vec<f64> = p.rows().flatten().copied().collect();
    let shapes = noise_shapes(&rows, &noise, 100.0, &[0.0, 1.0]);
    let stream = Stream {
        rows: &rows,
        noise: &noise,
        total: 100.0,
        cells: 4,
        matrix: &matrix,
        shapes: &shapes,
        family: CLASSICAL,
    };
    let fresh: Vec<usize> = (0..60).filter(|&t| noise[t].is_some()).collect();
    for (gamma, shape) in [(0.0, 0), (0.25, 1), (1.0, 0), (1.0, 1)] {
        for q in [0.0, 0.5, 30.0] {
            let model = Model { move_weight: gamma, process_noise: q, shape };
            let pass = stream.forward(model).unwrap();
            let full = pass.log_likelihood;
            let (jumped, mean, _) =
                stream.run_fresh(model, &stream.jumps(gamma, shape, &fresh), &fresh).unwrap();
            assert!((full - jumped).abs() <= 1e-6 * full.abs(), "γ {gamma} q {q}: {full} vs {jumped}");
            for (x, y) in mean.iter().zip(&pass.filtered[last_fresh]) {
                assert!((x - y).abs() <= 1e-6 * (1.0 + y.abs()), "γ {gamma} q {q}: {x} vs {y}");
            }
        }
    }
}

#[test]
fn climb_finds_the_peak_of_a_unimodal_score() {
    let (k, s) = climb(0, &|k| -f64::from((k - 13) * (k - 13)));
    assert_eq!((k, s), (13, 0.0));
    let (k, _) = climb(5, &|k| -f64::from((k + 22) * (k + 22)));
    assert_eq!(k, -22);
}

#[test]
fn refuses_bad_input_naming_the_step() {
    let p = TransitionMatrix::smoothed_identity(2, 0.1).unwrap();
    let config = FilterConfig { correlation: &forward_only(&p), ..FilterConfig::new(10) };
    let err = kalman_smooth(&[vec![1.0, 2.0], vec![f64::NAN, 1.0]], &[1.0, 1.0], config.clone()).unwrap_err();
    assert!(err.to_string().starts_with("step 2:"), "{err}");
    let none: &[Vec<f64>] = &[];
    assert_eq!(kalman_smooth(none, &[], config.clone()).unwrap_err(), PostprocessError::NoSteps);
    let no_matrix = FilterConfig::new(10);
    assert!(matches!(
        kalman_smooth(&[vec![1.0], vec![2.0]], &[1.0, 1.0], no_matrix),
        Err(PostprocessError::MissingForward { .. })
    ));
}
