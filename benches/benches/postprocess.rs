//! Benchmarks of `tpl-postprocess`: one step of each estimator ([docs/map.md](tpl_core::guide::map)
//! §3, §4, §6) and whole streams through the filter (§5).
//!
//! Inputs are realistic releases: a random prior p (entries in (0, 1), normalised), true
//! counts ≈ N p and r = rint(max(c + Lap(Δ/ε), 0)) with Δ = 2, ε = 1 (a = 0.5), from the
//! fixed-seed splitmix64 of `tpl_benches`. N = 100·n.
//!
//! Targets: `postprocess/map-step/n=3` < 5 µs, `postprocess/map-step/n=1000` < 100 µs,
//! and T = 10⁴ steps at n = 1000: `postprocess/map-steps/n=1000/T=1e4` (the solver over a
//! recorded stream, prior fixed) < 1 s, `postprocess/filter-map-dbsec/n=1000/T=1e4` (the
//! whole driver with the DBSec paper's prior, moved every step through the smoothed identity,
//! whose product costs O(n), [docs/map.md](tpl_core::guide::map) §13) < 1 s, the default estimator
//! `postprocess/filter-map/n=1000/T=1e4` (the calibrated prior of
//! [docs/map.md](tpl_core::guide::map) §8) ≤ 0.3 s, and `postprocess/smooth/n=1000/T=1e4`
//! ([docs/map.md](tpl_core::guide::map) §9, the backward matrix derived from P) ≤ 0.6 s, with its
//! 90 % model intervals (`postprocess/smooth+intervals/n=1000/T=1e4`) ≤ 2 × that. Beside
//! them, `postprocess/filter-map-dbsec/dense/n=1000/T=2000`: the dense product of a dense 1000×1000
//! P, 2000 times (the yardstick of numpy's `p @ P` loop).
//!
//! The state-space estimators ([docs/map.md](tpl_core::guide::map) §14), dense n×n covariances:
//! `postprocess/kalman`, `postprocess/smooth` and `postprocess/filter-map` at n = 16, 32, 64 (64 is
//! the most cells `map` and `smooth` run the model on) and 128 (`kalman` only), T = 1000, a release
//! every step (`every`: the covariance converges, O(n²) per step after) or every 10th step
//! (`tenth`: the gap of `sample`), the forward matrix the smoothed identity.
//!
//! Run: `cargo bench -p tpl-benches --bench postprocess -- --noplot [FILTER]` (a few
//! minutes; the filter at n = 1000 takes a few seconds per iteration).

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use tpl_benches::{Family, Pace, SplitMix64};
use tpl_core::Correlation;
use tpl_postprocess::{Estimator, FilterConfig, filter, map_integer_step, map_step, mle_step};

/// Weight a = ε/Δ of the releases (ε = 1, Δ = 2).
const A: f64 = 0.5;
/// Users per cell.
const USERS_PER_CELL: usize = 100;
/// Seed of the inputs.
const SEED: u64 = 0x6d61_705f_6265_6e63; // "map_benc"

/// Laplace(0, b) by inverse CDF.
fn laplace(rng: &mut SplitMix64, b: f64) -> f64 {
    tpl_mechanisms::laplace_inverse_cdf(rng.next_open01(), b)
}

/// A prior over n cells and `steps` releases around N p.
fn inputs(n: usize, steps: usize) -> (Vec<f64>, Vec<Vec<f64>>, u64) {
    let mut rng = SplitMix64::new(SEED ^ n as u64);
    let w: Vec<f64> = (0..n).map(|_| rng.next_open01()).collect();
    let s: f64 = w.iter().sum();
    let p: Vec<f64> = w.iter().map(|v| v / s).collect();
    let total = (USERS_PER_CELL * n) as u64;
    let releases = (0..steps)
        .map(|_| {
            p.iter().map(|&q| (total as f64 * q + laplace(&mut rng, 1.0 / A)).max(0.0).round()).collect()
        })
        .collect();
    (p, releases, total)
}

fn steps(c: &mut Criterion) {
    let mut group = c.benchmark_group("postprocess");
    Pace::auto(50, 500, 2000).apply(&mut group);
    for n in [3, 10, 100, 1000] {
        let (p, releases, total) = inputs(n, 1);
        let r = &releases[0];
        let param = format!("n={n}");
        group.bench_function(BenchmarkId::new("map-step", &param), |b| {
            b.iter(|| map_step(black_box(r), black_box(&p), total as f64, A).expect("valid input"))
        });
        group.bench_function(BenchmarkId::new("map-integer-step", &param), |b| {
            b.iter(|| map_integer_step(black_box(r), black_box(&p), total, A).expect("valid input"))
        });
        group.bench_function(BenchmarkId::new("mle-step", &param), |b| {
            b.iter(|| mle_step(black_box(r), total as f64).expect("valid input"))
        });
    }
    // The integer estimator's large-N path (threshold bisection instead of the heap).
    let (p, releases, _) = inputs(10, 1);
    let scaled: Vec<f64> = releases[0].iter().map(|v| v * 1e5).collect();
    group.bench_function(BenchmarkId::new("map-integer-step", "n=10/N=1e8"), |b| {
        b.iter(|| map_integer_step(black_box(&scaled), black_box(&p), 100_000_000, A).expect("valid input"))
    });
    group.finish();
}

fn streams(c: &mut Criterion) {
    let mut group = c.benchmark_group("postprocess");
    // Seconds per iteration: ten samples of one iteration each (criterion warns).
    Pace::flat(10, 1, 1).apply(&mut group);
    let horizon = 10_000;
    let n = 1000;
    let (p, releases, total) = inputs(n, horizon);
    let param = format!("n={n}/T=1e4");
    group.bench_function(BenchmarkId::new("map-steps", &param), |b| {
        b.iter(|| {
            for r in &releases {
                black_box(map_step(black_box(r), &p, total as f64, A).expect("valid input"));
            }
        })
    });
    let forward = Correlation::new(None, Some(Family::SmoothedIdentity.matrix(n))).expect("one matrix");
    let budgets = vec![2.0 * A; horizon];
    let dense = Correlation::new(None, Some(Family::Dense.matrix(n))).expect("one matrix");
    let short = 2000;
    group.bench_function(BenchmarkId::new("filter-map-dbsec/dense", format!("n={n}/T={short}")), |b| {
        b.iter(|| {
            let config = FilterConfig {
                correlation: &dense,
                estimator: Estimator::MapDbsec,
                ..FilterConfig::new(total)
            };
            filter(black_box(&releases[..short]), &budgets[..short], config).expect("valid input")
        })
    });
    for estimator in [Estimator::MapDbsec, Estimator::CausalFilter, Estimator::Smooth] {
        let name = if estimator.is_filter() { format!("filter-{estimator}") } else { estimator.to_string() };
        group.bench_function(BenchmarkId::new(name, &param), |b| {
            b.iter(|| {
                let config = FilterConfig { correlation: &forward, estimator, ..FilterConfig::new(total) };
                filter(black_box(&releases), &budgets, config).expect("valid input")
            })
        });
    }
    // The default estimator with its 90 % model intervals (docs/intervals.md §3): the estimate,
    // its standard errors and their ends.
    group.bench_function(BenchmarkId::new("smooth+intervals", &param), |b| {
        b.iter(|| {
            let config = FilterConfig {
                correlation: &forward,
                estimator: Estimator::Smooth,
                ..FilterConfig::new(total)
            };
            filter(black_box(&releases), &budgets, config)
                .and_then(|e| e.intervals(0.9))
                .expect("valid input")
        })
    });
    group.finish();
}

fn state_space(c: &mut Criterion) {
    let mut group = c.benchmark_group("postprocess");
    Pace::flat(10, 1, 1).apply(&mut group);
    let horizon = 1000;
    for n in [16, 32, 64, 128] {
        let (_, releases, total) = inputs(n, horizon);
        let forward = Correlation::new(None, Some(Family::SmoothedIdentity.matrix(n))).expect("one matrix");
        for (gaps, every) in [("every", 1), ("tenth", 10)] {
            let budgets: Vec<f64> =
                (0..horizon).map(|t| if t % every == 0 { 2.0 * A } else { 0.0 }).collect();
            let param = format!("n={n}/T=1e3/{gaps}");
            let estimators: &[Estimator] = if n <= 64 {
                &[Estimator::Kalman, Estimator::Smooth, Estimator::CausalFilter]
            } else {
                &[Estimator::Kalman]
            };
            for &estimator in estimators {
                let name =
                    if estimator.is_filter() { format!("filter-{estimator}") } else { estimator.to_string() };
                group.bench_function(BenchmarkId::new(name, &param), |b| {
                    b.iter(|| {
                        let config =
                            FilterConfig { correlation: &forward, estimator, ..FilterConfig::new(total) };
                        filter(black_box(&releases), &budgets, config).expect("valid input")
                    })
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, steps, streams, state_space);
criterion_main!(benches);
