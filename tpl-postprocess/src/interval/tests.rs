use super::*;
use tpl_mechanisms::{FloatLaplace, NoiseSource};

/// The share of cell-steps whose truth lies in the intervals of the held releases as
/// their own estimate (replicates drawn with Laplace noise of scale 2/ε, seeded 5).
fn identity_coverage(
    releases: &[Vec<f64>],
    budgets: &[f64],
    replicates: usize,
    truth: &dyn Fn(usize, usize) -> f64,
) -> f64 {
    let mut boot_noise = FloatLaplace::seeded(5);
    let mut release =
        |c: &[f64], eps: f64| Ok(c.iter().map(|v| v + boot_noise.laplace(2.0 / eps).unwrap()).collect());
    let mut identity = |r: &[Vec<f64>]| Ok(r.to_vec());
    let config = Bootstrap { level: 0.9, replicates };
    let (lo, hi) =
        bootstrap_intervals(releases, releases, budgets, config, true, &mut release, &mut identity).unwrap();
    let cells = releases[0].len();
    let covered = (0..releases.len())
        .flat_map(|t| (0..cells).map(move |j| (t, j)))
        .filter(|&(t, j)| lo[t][j] <= truth(t, j) && truth(t, j) <= hi[t][j])
        .count();
    covered as f64 / (releases.len() * cells) as f64
}

#[test]
fn the_identity_estimator_of_laplace_releases_covers_its_level() {
    // Truth 50 per cell; releases at scale 4; the bootstrap around each release.
    let (steps, cells, level) = (200, 20, 0.9);
    let mut noise = FloatLaplace::seeded(7);
    let truth = vec![50.0; cells];
    let releases: Vec<Vec<f64>> =
        (0..steps).map(|_| truth.iter().map(|c| c + noise.laplace(4.0).unwrap()).collect()).collect();
    let coverage = identity_coverage(&releases, &vec![0.5; steps], 200, &|_, _| 50.0);
    assert!((coverage - level).abs() < 0.03, "coverage {coverage}");
}

#[test]
fn a_truth_that_drifts_between_publications_is_covered_at_the_repeats() {
    // The truth is a random walk (variance 4.5 a step); it is published every 5th step
    // (noise variance 8) and held in between, and the estimate is the held release: 4
    // steps after a publication the real error has variance 8 + 18, which the replicates
    // (whose truth is the estimate, held still) never see. Before the drift was added,
    // the intervals covered 79 % of the cell-steps.
    let (steps, cells) = (400, 20);
    let mut walk = FloatLaplace::seeded(3);
    let mut noise = FloatLaplace::seeded(4);
    let mut truth = vec![vec![500.0; cells]];
    for _ in 1..steps {
        let last = truth.last().unwrap();
        let next = last.iter().map(|c| c + walk.laplace(1.5).unwrap()).collect();
        truth.push(next);
    }
    let budgets: Vec<f64> = (0..steps).map(|t| if t % 5 == 0 { 1.0 } else { 0.0 }).collect();
    let mut releases: Vec<Vec<f64>> = Vec::new();
    for (t, c) in truth.iter().enumerate() {
        let r = match releases.last() {
            Some(last) if budgets[t] == 0.0 => last.clone(),
            _ => c.iter().map(|v| v + noise.laplace(2.0).unwrap()).collect(),
        };
        releases.push(r);
    }
    let coverage = identity_coverage(&releases, &budgets, 100, &|t, j| truth[t][j]);
    assert!((0.86..=0.96).contains(&coverage), "coverage {coverage}");
}

#[test]
fn the_drift_grows_with_the_steps_since_a_publication_or_as_a_bridge_between_two() {
    let budgets = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0];
    // Precise releases (no noise): k·rate after one for a filter, the bridge for a smoother.
    let exact = [0.0; 6];
    assert_eq!(drift_variances(&budgets, &exact, 2.0, true), vec![0.0, 2.0, 4.0, 6.0, 0.0, 2.0]);
    assert_eq!(drift_variances(&budgets, &exact, 2.0, false), vec![0.0, 1.5, 2.0, 1.5, 0.0, 2.0]);
    // A release with a huge noise barely resets the drift.
    let noisy = [0.0, 0.0, 0.0, 0.0, 1e12, 0.0];
    let d = drift_variances(&budgets, &noisy, 1.0, true);
    assert!((d[4] - 4.0).abs() < 1e-6 && (d[5] - 5.0).abs() < 1e-6, "{d:?}");
    // Releases 0 and 4 differ by 10 in cell 0 and not at all in cell 1; with noise
    // variance 1 at each, the rate is (100 − 2)/4 per step, and 0 (not negative).
    let releases = vec![vec![0.0, 5.0], vec![0.0, 5.0], vec![0.0, 5.0], vec![0.0, 5.0], vec![10.0, 5.0]];
    let noise = [1.0, 0.0, 0.0, 0.0, 1.0];
    assert_eq!(drift_rates(&releases, &budgets[..5], &noise), vec![24.5, 0.0]);
}

#[test]
fn a_noisy_release_counts_little_in_the_residual_excess() {
    // Noise variances 1 and 10: weights 1 and 1/100. The repeat (budget 0) is skipped,
    // and a negative excess is 0.
    let excess = vec![vec![2.0, -5.0], vec![7.0, 7.0], vec![100.0, -5.0]];
    let got = weighted_excess(&excess, &[1.0, 0.0, 1.0], &[1.0, 0.0, 10.0]);
    assert!((got[0] - 3.0 / 1.01).abs() < 1e-12 && got[1] == 0.0, "{got:?}");
}

#[test]
fn repeats_are_released_again_as_repeats_and_bad_settings_are_refused() {
    let estimate = vec![vec![3.0, 1.0], vec![2.0, 2.0]];
    let calls = std::cell::Cell::new(0);
    let mut release = |c: &[f64], _: f64| {
        calls.set(calls.get() + 1);
        Ok(c.to_vec())
    };
    let mut identity = |r: &[Vec<f64>]| Ok(r.to_vec());
    let config = Bootstrap { level: 0.9, replicates: 3 };
    let (lo, _) =
        bootstrap_intervals(&estimate, &estimate, &[1.0, 0.0], config, true, &mut release, &mut identity)
            .unwrap();
    // Step 2 repeats step 1's replicate: its error is (3, 1) − (2, 2), which puts the
    // lower ends at (1, 3); the interval holds the estimate, so cell 1's end is 2.
    assert_eq!(lo[1], vec![1.0, 2.0]);
    assert_eq!(calls.get(), 3);
    for (budgets, level, replicates) in
        [(vec![0.0, 1.0], 0.9, 3), (vec![1.0], 0.9, 3), (vec![1.0, 1.0], 1.0, 3), (vec![1.0, 1.0], 0.9, 1)]
    {
        let c = Bootstrap { level, replicates };
        assert!(
            bootstrap_intervals(&estimate, &estimate, &budgets, c, true, &mut release, &mut identity)
                .is_err()
        );
    }
}

#[test]
fn widening_adds_exactly_the_missing_variance_about_the_mean() {
    let variance = |e: &[f64]| {
        let m = e.iter().sum::<f64>() / e.len() as f64;
        (m, e.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (e.len() - 1) as f64)
    };
    let mut e = vec![-1.0, 0.0, 0.5, 2.5];
    let (m0, v0) = variance(&e);
    widen(&mut e, 3.0);
    let (m1, v1) = variance(&e);
    assert!((m1 - m0).abs() < 1e-12 && (v1 - v0 - 3.0).abs() < 1e-12);
    // No spread at all: normal quantiles of the ranks, scaled by √extra.
    let mut flat = vec![1.0; 5];
    widen(&mut flat, 4.0);
    assert!((flat[2] - 1.0).abs() < 1e-12 && (flat[4] - 1.0 - 2.0 * normal_quantile(0.9)).abs() < 1e-12);
    assert!((normal_quantile(0.95) - 1.644_853_626_951_472_2).abs() < 1e-8);
    assert!((normal_quantile(0.01) + 2.326_347_874_040_841).abs() < 1e-8);
}

/// Releases that move more than their estimates (a truth the estimate smooths over) get
/// wider intervals than releases that match their estimates.
#[test]
fn releases_far_from_their_estimates_widen_the_intervals() {
    let estimate = vec![vec![10.0, 10.0]; 50];
    let jumpy: Vec<Vec<f64>> =
        (0..50).map(|t| if t % 2 == 0 { vec![16.0, 4.0] } else { vec![4.0, 16.0] }).collect();
    let width = |releases: &[Vec<f64>]| {
        let mut flip = 1.0;
        let mut release = |c: &[f64], _: f64| {
            flip = -flip;
            Ok(c.iter().map(|v| v + flip).collect())
        };
        let mut identity = |r: &[Vec<f64>]| Ok(r.to_vec());
        let config = Bootstrap { level: 0.9, replicates: 10 };
        let (lo, hi) =
            bootstrap_intervals(releases, &estimate, &[1.0; 50], config, true, &mut release, &mut identity)
                .unwrap();
        hi[10][0] - lo[10][0]
    };
    assert!(width(&jumpy) > width(&estimate) + 4.0, "{} vs {}", width(&jumpy), width(&estimate));
}

#[test]
fn rounding_keeps_the_rounded_sum() {
    assert_eq!(round_keeping_sum(&[0.4, 0.4, 0.2]), vec![1.0, 0.0, 0.0]);
    assert_eq!(round_keeping_sum(&[2.6, 1.7, 0.7]), vec![2.0, 2.0, 1.0]);
    assert_eq!(round_keeping_sum(&[1.0, 2.0]), vec![1.0, 2.0]);
}
