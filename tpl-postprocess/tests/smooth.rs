//! The estimators `map` and `smooth` ([docs/map.md](tpl_core::guide::map) §8–9) and the pooled MAP
//! step:
//! - the pooled per-step problem is solved exactly: its optimality conditions
//!   (one multiplier μ with W ln x_i − Σ_k w_k ln p_{k,i} + a·s_i = μ, s_i ∈ ∂|x_i − r_i|)
//!   hold, and no move between two cells lowers its objective H (property tests);
//! - one prior at strength w is the MAP step of [docs/map.md](tpl_core::guide::map) §3 with weight
//!   a/w;
//! - every estimate of `map` and `smooth` is finite, non-negative and sums to N, whatever the
//!   matrices, budgets (zeros included) and releases (property tests);
//! - a matrix that moves nobody where the releases show nobody moving is discounted;
//! - `map` is the DBSec step at step 1 and holds its estimate through steps without
//!   information.

#![allow(clippy::needless_range_loop)]

use approx::abs_diff_eq;
use proptest::prelude::*;
use tpl_core::TransitionMatrix;
use tpl_core::test_util::{correlation, forward_only};
use tpl_core::test_util::{distribution, log_uniform};
use tpl_postprocess::{
    Calibration, Estimator, Filter, FilterConfig, MapStep, PostprocessError, PriorPolicy, WeightedPrior,
    filter, map_step, pooled_map_objective, pooled_map_step,
};

/// f(x + d) − f(x) for f(x) = x ln(x/p) − x, without cancellation: x·ln(1 + d/x) + d·ln((x + d)/p) − d.
fn delta_entropy(x: f64, d: f64, p: f64) -> f64 {
    let y = x + d;
    let first = if x > 0.0 { x * (d / x).ln_1p() } else { 0.0 };
    let second = if y > 0.0 { d * (y / p).ln() } else { 0.0 };
    first + second - d
}

/// A pooled problem: release, priors (with zeros), strengths (zeros too), N, a.
fn pooled_problem() -> impl Strategy<Value = (Vec<f64>, Vec<Vec<f64>>, Vec<f64>, f64, f64)> {
    (1usize..40, 1usize..4).prop_flat_map(|(n, k)| {
        (
            prop::collection::vec(-5.0f64..200.0, n),
            prop::collection::vec(
                prop::collection::vec(prop_oneof![1 => Just(0.0), 8 => 0.001f64..1.0], n),
                k,
            ),
            prop::collection::vec(prop_oneof![1 => Just(0.0), 4 => log_uniform(-2.0, 2.0)], k),
            prop_oneof![1 => Just(0.0), 3 => 1.0f64..1e4, 1 => (0u32..500).prop_map(f64::from)],
            prop_oneof![1 => Just(0.0), 6 => log_uniform(-4.0, 2.0)],
        )
            .prop_map(|(r, raw, strengths, total, a)| {
                let priors: Vec<Vec<f64>> = raw.iter().map(|w| distribution(w)).collect();
                (r, priors, strengths, total, a)
            })
    })
}

fn weighted<'a>(priors: &'a [Vec<f64>], strengths: &[f64]) -> Vec<WeightedPrior<'a>> {
    priors.iter().zip(strengths).map(|(p, &w)| WeightedPrior { prior: p, strength: w }).collect()
}

/// Whether every prior of positive strength is positive in cell i.
fn allowed(priors: &[WeightedPrior<'_>], i: usize) -> bool {
    priors.iter().all(|p| p.strength == 0.0 || p.prior[i] > 0.0)
}

/// The optimality conditions of H at x, and the absence of an improving move.
fn check_pooled_optimal(
    r: &[f64],
    priors: &[WeightedPrior<'_>],
    total: f64,
    a: f64,
    s: &MapStep,
) -> Result<(), TestCaseError> {
    let n = r.len();
    let x = &s.x;
    prop_assert!(x.iter().all(|v| v.is_finite() && *v >= 0.0), "{x:?}");
    prop_assert!(
        (x.iter().sum::<f64>() - total).abs() <= 1e-12 * total.max(1.0),
        "Σx = {}",
        x.iter().sum::<f64>()
    );
    let strength: f64 = priors.iter().map(|p| p.strength).sum();
    if strength == 0.0 || total == 0.0 {
        return Ok(());
    }
    for i in 0..n {
        if !allowed(priors, i) {
            prop_assert_eq!(x[i], 0.0, "cell {} is impossible under a prior", i);
        }
    }
    // Multipliers implied by the cells off their releases (cells large enough that ln x_i
    // is accurate to 1e-9); cells at their release must sit inside the band around μ.
    let g = |i: usize| {
        priors.iter().filter(|p| p.strength > 0.0).map(|p| p.strength * (x[i] / p.prior[i]).ln()).sum::<f64>()
    };
    let tol = 1e-8 * (strength + a) * (1.0 + total.ln().abs());
    let mut implied = Vec::new();
    for i in 0..n {
        if !allowed(priors, i) || x[i] < 1e-6 * total {
            continue;
        }
        let gap = x[i] - r[i];
        if gap.abs() <= 1e-9 * total.max(1.0) {
            continue;
        }
        implied.push(if gap > 0.0 { g(i) + a } else { g(i) - a });
    }
    if let (Some(lo), Some(hi)) =
        (implied.iter().copied().reduce(f64::min), implied.iter().copied().reduce(f64::max))
    {
        prop_assert!(hi - lo <= tol, "multipliers spread over {} (tol {tol})", hi - lo);
        let mu = 0.5 * (lo + hi);
        for i in 0..n {
            if allowed(priors, i) && x[i] >= 1e-6 * total && (x[i] - r[i]).abs() <= 1e-9 * total.max(1.0) {
                let gi = g(i);
                prop_assert!(
                    gi >= mu - a - tol && gi <= mu + a + tol,
                    "cell {i} at its release: {gi} vs μ = {mu} ± {a}"
                );
            }
        }
    }
    // No move of h (a power of two) from a cell to another lowers H.
    let h = 2f64.powi((1e-6 * total).log2().floor() as i32);
    for i in 0..n {
        if x[i] < h {
            continue;
        }
        for j in 0..n {
            if j == i || !allowed(priors, j) || x[j] + h - x[j] != h {
                continue;
            }
            let mut d = a
                * ((x[i] - h - r[i]).abs() - (x[i] - r[i]).abs() + (x[j] + h - r[j]).abs()
                    - (x[j] - r[j]).abs());
            for p in priors.iter().filter(|p| p.strength > 0.0) {
                d += p.strength * (delta_entropy(x[i], -h, p.prior[i]) + delta_entropy(x[j], h, p.prior[j]));
            }
            prop_assert!(
                d >= -1e-9 * (strength + a) * h,
                "moving {h} from {i} to {j} lowers H by {:e}·h",
                -d / h
            );
        }
    }
    // And neither the MLE point nor any prior mean has a lower H.
    let h_x = pooled_map_objective(r, priors, a, x).unwrap();
    let scale = 1e-10 * (h_x.abs() + (strength + a) * total + 1.0);
    let mle = tpl_postprocess::mle_step(r, total).unwrap();
    prop_assert!(h_x <= pooled_map_objective(r, priors, a, &mle).unwrap() + scale);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn pooled_step_is_optimal((r, priors, strengths, total, a) in pooled_problem()) {
        let w = weighted(&priors, &strengths);
        match pooled_map_step(&r, &w, total, a) {
            Ok(s) => check_pooled_optimal(&r, &w, total, a, &s)?,
            Err(e) => {
                prop_assert_eq!(e, PostprocessError::NoPooledPrior);
                prop_assert!((0..r.len()).all(|i| !allowed(&w, i)));
            }
        }
    }

    /// One prior at strength w is the MAP step with weight a/w.
    #[test]
    fn one_prior_is_the_map_step((r, priors, strengths, total, a) in pooled_problem()) {
        let w = strengths[0].max(0.01);
        let one = [WeightedPrior { prior: &priors[0], strength: w }];
        let s = pooled_map_step(&r, &one, total, a).unwrap();
        let m = map_step(&r, &priors[0], total, a / w).unwrap();
        prop_assert!(abs_diff_eq!(s.x[..], m.x[..], epsilon = 1e-12 * total.max(1.0)), "{:?} vs {:?}", s.x, m.x);
    }
}

/// A random row-stochastic matrix (rows with zeros), from uniform draws.
fn matrix(n: usize) -> impl Strategy<Value = TransitionMatrix> {
    prop::collection::vec(prop::collection::vec(prop_oneof![1 => Just(0.0), 3 => 0.0f64..1.0], n), n)
        .prop_map(move |rows| {
            let rows = rows
                .into_iter()
                .enumerate()
                .map(|(i, mut row)| {
                    row[i] += 0.05;
                    let s: f64 = row.iter().sum();
                    row.iter().map(|v| v / s).collect()
                })
                .collect();
            TransitionMatrix::new(rows).unwrap()
        })
}

/// A random stream: n cells, T steps, N, releases around a random walk of counts, budgets
/// with zeros.
fn stream() -> impl Strategy<Value = (TransitionMatrix, TransitionMatrix, Vec<Vec<f64>>, Vec<f64>, u64)> {
    (1usize..8, 1usize..25).prop_flat_map(|(n, t)| {
        (
            matrix(n),
            matrix(n),
            prop::collection::vec(prop::collection::vec(-20.0f64..120.0, n), t),
            prop::collection::vec(prop_oneof![1 => Just(0.0), 3 => 0.05f64..4.0], t),
            prop_oneof![1 => Just(0u64), 4 => 1u64..2000],
        )
            .prop_map(|(f, b, releases, budgets, total)| {
                let releases =
                    releases.into_iter().map(|r| r.into_iter().map(f64::round).collect()).collect();
                (f, b, releases, budgets, total)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Every estimate of `map` and `smooth` is a point of the feasible set, with and without a
    /// backward matrix, from every initial prior.
    #[test]
    fn estimates_are_feasible((f, b, releases, budgets, total) in stream(), policy in 0u8..2, with_backward in any::<bool>()) {
        let prior = if policy == 0 { PriorPolicy::Frequency } else { PriorPolicy::Uniform };
        for estimator in [Estimator::CausalFilter, Estimator::Smooth] {
            let config = FilterConfig {
                correlation: &correlation(with_backward.then_some(&b), Some(&f)),
                prior: prior.clone(),
                estimator,
                ..FilterConfig::new(total)
            };
            let out = filter(&releases, &budgets, config).unwrap();
            prop_assert_eq!(out.estimates.len(), releases.len());
            for (t, x) in out.estimates.iter().enumerate() {
                prop_assert!(x.iter().all(|v| v.is_finite() && *v >= 0.0), "{estimator} t={}: {x:?}", t + 1);
                let sum: f64 = x.iter().sum();
                prop_assert!((sum - total as f64).abs() <= 1e-9 * (total as f64).max(1.0), "{estimator} t={}: Σx = {sum}", t + 1);
            }
        }
    }
}

fn chain() -> TransitionMatrix {
    TransitionMatrix::new(vec![vec![0.8, 0.1, 0.1], vec![0.2, 0.7, 0.1], vec![0.25, 0.25, 0.5]]).unwrap()
}

#[test]
fn map_is_the_dbsec_step_at_step_one_and_holds_without_information() {
    // Step 1 of `map` is the DBSec step (the MAP step with the initial prior), and steps
    // with ε = 0 hold that estimate where map-dbsec moves its prior by P.
    let m = chain();
    let p1 = vec![0.5, 0.3, 0.2];
    let r = vec![30.0, 12.0, 1.0];
    let config = FilterConfig {
        prior: PriorPolicy::Explicit(p1.clone()),
        correlation: &forward_only(&m),
        ..FilterConfig::new(50)
    };
    let mut f = Filter::new(3, config.clone()).unwrap();
    let s = f.step(&r, 0.6).unwrap();
    assert_eq!(s.estimate, map_step(&r, &p1, 50.0, 0.3).unwrap().x);
    assert_eq!((s.calibration, s.fit), (Some(Calibration::DBSEC), None));
    let rs = vec![r.clone(), vec![9.0, 9.0, 9.0], vec![1.0, 2.0, 3.0]];
    let out = filter(&rs, &[0.6, 0.0, 0.0], config.clone()).unwrap();
    for x in &out.estimates[1..] {
        assert!(abs_diff_eq!(x[..], out.estimates[0][..], epsilon = 1e-9), "{x:?}");
    }
    let dbsec =
        filter(&rs, &[0.6, 0.0, 0.0], FilterConfig { estimator: Estimator::MapDbsec, ..config }).unwrap();
    assert!(!abs_diff_eq!(dbsec.estimates[2][..], dbsec.estimates[0][..], epsilon = 1e-6));
}

#[test]
fn a_wrong_matrix_is_discounted() {
    // Everyone stays in cell 1, but the matrix spreads people evenly every step.
    let swap = TransitionMatrix::new(vec![vec![0.5, 0.5], vec![0.5, 0.5]]).unwrap();
    let releases: Vec<Vec<f64>> =
        (0..60).map(|t| vec![100.0 + if t % 2 == 0 { 2.0 } else { -2.0 }, 0.0]).collect();
    let budgets = vec![1.0; 60];
    let run = |estimator| {
        let config = FilterConfig { correlation: &forward_only(&swap), estimator, ..FilterConfig::new(100) };
        filter(&releases, &budgets, config).unwrap().estimates
    };
    let err = |est: &[Vec<f64>]| est.iter().map(|x| (x[0] - 100.0).powi(2)).sum::<f64>() / est.len() as f64;
    let (dbsec, map, smooth) =
        (run(Estimator::MapDbsec), run(Estimator::CausalFilter), run(Estimator::Smooth));
    let raw = releases.iter().map(|x| (x[0] - 100.0).powi(2)).sum::<f64>() / 60.0;
    assert!(err(&dbsec) > 100.0 * raw, "the DBSec filter follows the matrix: {} vs raw {raw}", err(&dbsec));
    assert!(err(&map) < raw, "map discounts it: {} vs raw {raw}", err(&map));
    assert!(err(&smooth) < raw, "smooth too: {} vs raw {raw}", err(&smooth));
    let public = forward_only(&swap);
    let mut f = Filter::new(2, FilterConfig { correlation: &public, ..FilterConfig::new(100) }).unwrap();
    let mut last = None;
    for r in &releases {
        last = f.step(r, 1.0).unwrap().fit;
    }
    assert_eq!(last.map(|c| c.move_weight), Some(0.0), "nobody moves: {last:?}");
}

#[test]
fn smooth_needs_the_whole_stream() {
    let m = chain();
    let config = FilterConfig {
        correlation: &forward_only(&m),
        estimator: Estimator::Smooth,
        ..FilterConfig::new(10)
    };
    let e = Filter::new(3, config.clone()).unwrap_err();
    assert_eq!(e, PostprocessError::NotAFilter { estimator: "smooth" });
    // One step: the initial prior of both directions, pooled.
    let out = filter(&[vec![6.0, 3.0, 1.0]], &[1.0], config.clone()).unwrap();
    assert!((out.estimates[0].iter().sum::<f64>() - 10.0).abs() < 1e-12);
    // Errors name the step, whichever pass would meet it first.
    let e =
        filter(&[vec![6.0, 3.0, 1.0], vec![1.0, f64::NAN, 1.0]], &[1.0, 1.0], config.clone()).unwrap_err();
    assert_eq!(e.to_string(), "step 2: release value in cell 2 is NaN: releases must be finite");
    let e = filter(&vec![vec![6.0, 3.0, 1.0]; 2], &[1.0, -1.0], config).unwrap_err();
    assert!(matches!(e, PostprocessError::AtStep { step: 2, .. }), "{e}");
}

#[test]
fn extreme_releases_and_budgets_stay_finite() {
    let m = chain();
    let releases = vec![
        vec![1e300, -1e300, 0.0],
        vec![f64::MAX, 0.0, -f64::MAX],
        vec![3.0, 4.0, 5.0],
        vec![1e-300, 2.0, 7.0],
        vec![0.0, 0.0, 0.0],
    ];
    for budgets in [[1e-300, 1e300, 1.0, 0.0, 1e-10], [1.0; 5], [0.0; 5]] {
        for total in [0u64, 1, 12, 1 << 53] {
            for estimator in [Estimator::CausalFilter, Estimator::Smooth, Estimator::MapDbsec] {
                let config =
                    FilterConfig { correlation: &forward_only(&m), estimator, ..FilterConfig::new(total) };
                let out = filter(&releases, &budgets, config).unwrap();
                for x in &out.estimates {
                    assert!(x.iter().all(|v| v.is_finite() && *v >= 0.0), "{estimator} N = {total}: {x:?}");
                    let sum: f64 = x.iter().sum();
                    assert!(
                        (sum - total as f64).abs() <= 1e-9 * (total as f64).max(1.0),
                        "{estimator}: {sum}"
                    );
                }
            }
        }
    }
}
