//! Benchmarks of the hot paths of `tpl-core`: L(α) cold (setup included) and warm, the
//! setups of the two precomputing evaluators, BPL series, the supremum, and the online
//! accountant recording a long stream (step by step and in one pass).
//!
//! Ids carry the parameters (`loss/cold-direct/n=200`, `series/bpl/T=1000/n=200`) so that
//! criterion's output reads as a table. Inputs come from `tpl_benches` with fixed seeds.
//!
//! Run: `cargo bench -p tpl-benches --bench core -- --noplot [FILTER]` (the grid and large-α
//! cases: `-- --noplot 'grid|alpha'`).
//!
//! The n = 1000 cases cost 0.3–7 s per iteration and criterion needs at least 11 of them
//! (one warm-up, ten samples), so by default n = 1000 runs only the two cold paths and the
//! piecewise setup of the smoothed identity: most of the suite's time. With
//! `TPL_BENCH_LARGE=1` the other n = 1000 cases run too (the remaining setups and the warm
//! evaluations), and the cold direct L(α) at n = 3000 (about 9 s per iteration): several more
//! minutes, and the pair-table setup of the smoothed identity holds about 2.7 GB. Peak memory
//! is measured by the `memory` binary of this package.

use std::hint::black_box;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, criterion_group, criterion_main};
use tpl_benches::{ALPHA, EPSILON, Family, GRID_SMOOTHING, GRID_STAY, Pace, SIZES, grid_walk};
use tpl_core::{
    Correlation, LeakageAccountant, LeakageSeries, Loss, LossEvaluator, PairTableLoss, PiecewiseLoss,
    TransitionMatrix,
};

/// Sizes at which one setup takes long enough for the cheap settings of [`pace`].
const LARGE_N: usize = 1000;

/// The largest cold direct evaluation measured (with `TPL_BENCH_LARGE=1`).
const HUGE_N: usize = 3000;

/// Whether the optional n = 1000 cases run (`TPL_BENCH_LARGE=1`).
fn large() -> bool {
    std::env::var("TPL_BENCH_LARGE").is_ok_and(|v| v == "1")
}

/// How long one iteration of a benchmark takes, roughly: picks the sampling settings.
#[derive(Clone, Copy)]
enum Cost {
    /// Nanoseconds to a tenth of a millisecond: criterion's defaults, shorter.
    Small,
    /// Milliseconds to a few hundred of them.
    Medium,
    /// Seconds: the minimum criterion allows (ten samples of one iteration each).
    Large,
}

fn cost_of_setup(n: usize) -> Cost {
    match n {
        n if n >= LARGE_N => Cost::Large,
        n if n >= 50 => Cost::Medium,
        _ => Cost::Small,
    }
}

/// Applies the settings for `cost` to the benchmarks added to `group` next.
fn pace(group: &mut BenchmarkGroup<'_, WallTime>, cost: Cost) {
    let pace = match cost {
        Cost::Small => Pace::auto(50, 500, 1000),
        Cost::Medium => Pace::flat(20, 500, 2000),
        // Too short on purpose: criterion warns and runs one iteration per sample.
        Cost::Large => Pace::flat(10, 1, 1),
    };
    pace.apply(group);
}

/// Cold L(α) on the dense family: all setup inside the measured closure.
fn loss_cold(c: &mut Criterion) {
    let mut group = c.benchmark_group("loss");
    for n in SIZES {
        let m = Family::Dense.matrix(n);
        pace(&mut group, cost_of_setup(n));
        // What a caller who wants one value gets: Loss::new picks Algorithm 1.
        group.bench_with_input(BenchmarkId::new("cold-direct", format!("n={n}")), &m, |b, m| {
            b.iter(|| Loss::new(black_box(m), 1).loss(black_box(ALPHA)))
        });
        group.bench_with_input(BenchmarkId::new("cold-piecewise", format!("n={n}")), &m, |b, m| {
            b.iter(|| PiecewiseLoss::new(black_box(m)).loss(black_box(ALPHA)))
        });
    }
    if large() {
        let m = Family::Dense.matrix(HUGE_N);
        pace(&mut group, Cost::Large);
        group.bench_with_input(BenchmarkId::new("cold-direct", format!("n={HUGE_N}")), &m, |b, m| {
            b.iter(|| Loss::new(black_box(m), 1).loss(black_box(ALPHA)))
        });
    }
    group.finish();
}

/// Rows with few distinct entries (`docs/model.md` §3): a walk on a 64 × 64 grid (n = 4096,
/// stay 0.6, smoothing 10⁻⁴), cold L(α) and the piecewise set-up; and the direct evaluator on
/// the dense n = 1000 matrix where e^α overflows (α = 709, 1000, 10⁶) beside α = 700.
fn structured_and_large_alpha(c: &mut Criterion) {
    let mut group = c.benchmark_group("loss");
    pace(&mut group, Cost::Large);
    let grid = grid_walk(64, GRID_STAY, GRID_SMOOTHING);
    group.bench_with_input(BenchmarkId::new("cold-direct", "grid-64x64"), &grid, |b, m| {
        b.iter(|| Loss::new(black_box(m), 1).loss(black_box(ALPHA)))
    });
    group.bench_with_input(BenchmarkId::new("cold-piecewise", "grid-64x64"), &grid, |b, m| {
        b.iter(|| PiecewiseLoss::new(black_box(m)).loss(black_box(ALPHA)))
    });
    let dense = Family::Dense.matrix(LARGE_N);
    for alpha in [700.0, 709.0, 1000.0, 1e6] {
        group.bench_with_input(
            BenchmarkId::new("cold-direct", format!("n={LARGE_N}/alpha={alpha}")),
            &dense,
            |b, m| b.iter(|| Loss::new(black_box(m), 1).loss(black_box(alpha))),
        );
    }
    group.finish();
}

/// Warm L(α): one evaluation of an evaluator built beforehand.
fn loss_warm(c: &mut Criterion) {
    let mut group = c.benchmark_group("loss");
    pace(&mut group, Cost::Small);
    for n in SIZES {
        if n >= LARGE_N && !large() {
            continue;
        }
        let m = Family::Dense.matrix(n);
        let piecewise = PiecewiseLoss::new(&m);
        group.bench_function(BenchmarkId::new("warm-piecewise", format!("n={n}")), |b| {
            b.iter(|| piecewise.loss(black_box(ALPHA)))
        });
        let table = PairTableLoss::new(&m);
        group.bench_function(BenchmarkId::new("warm-pairtable", format!("n={n}")), |b| {
            b.iter(|| table.loss(black_box(ALPHA)))
        });
    }
    group.finish();
}

/// The setups alone, for both matrix families (their pruning behaves differently).
fn setup(c: &mut Criterion) {
    let mut group = c.benchmark_group("setup");
    for family in Family::ALL {
        for n in SIZES {
            // loss/cold-piecewise/n=1000 already measures the dense piecewise setup.
            let default_large = family == Family::SmoothedIdentity;
            if n >= LARGE_N && !large() && !default_large {
                continue;
            }
            let m = family.matrix(n);
            let param = format!("{}/n={n}", family.name());
            pace(&mut group, cost_of_setup(n));
            group.bench_with_input(BenchmarkId::new("piecewise", &param), &m, |b, m| {
                b.iter(|| PiecewiseLoss::new(black_box(m)))
            });
            if n >= LARGE_N && !large() {
                continue;
            }
            group.bench_with_input(BenchmarkId::new("pairtable", &param), &m, |b, m| {
                b.iter(|| PairTableLoss::new(black_box(m)))
            });
        }
    }
    group.finish();
}

/// BPL over a horizon at constant ε, setup (the piecewise function) included.
fn series(c: &mut Criterion) {
    let mut group = c.benchmark_group("series");
    let cases = [(1000, 10), (1000, 50), (1000, 200), (1_000_000, 200)];
    for (horizon, n) in cases {
        let m = Family::Dense.matrix(n);
        let budgets = vec![EPSILON; horizon];
        pace(&mut group, if horizon > 1000 { Cost::Medium } else { cost_of_setup(n) });
        group.bench_with_input(BenchmarkId::new("bpl", format!("T={horizon}/n={n}")), &m, |b, m| {
            b.iter(|| {
                Correlation::new(Some(black_box(m).clone()), None)
                    .and_then(|c| LeakageSeries::new(&c, black_box(&budgets)))
            })
        });
    }
    group.finish();
}

/// Theorem 11 supremum at constant ε, setup included.
fn supremum(c: &mut Criterion) {
    let mut group = c.benchmark_group("supremum");
    for n in [10, 50, 200] {
        let m = Family::Dense.matrix(n);
        pace(&mut group, cost_of_setup(n));
        group.bench_with_input(BenchmarkId::new(format!("eps={EPSILON}"), format!("n={n}")), &m, |b, m| {
            b.iter(|| PiecewiseLoss::new(black_box(m)).supremum(black_box(EPSILON)))
        });
    }
    group.finish();
}

/// The online accountant recording T steps of a `bd`-like stream (ε = 0.05 at most steps,
/// 0.3 at every 13th) against a dense forward matrix whose L_F contracts slowly (stay 0.9,
/// else uniform; n = 20): one push per step, each walking back over the FPL it changes
/// (hundreds of steps here), against one `extend` of them all — what a process reading a
/// stream file does.
fn accountant(c: &mut Criterion) {
    let mut group = c.benchmark_group("accountant");
    let n = 20;
    let rows =
        (0..n).map(|i| (0..n).map(|j| if i == j { 0.9 } else { 0.1 / (n - 1) as f64 }).collect()).collect();
    let Ok(m) = TransitionMatrix::new(rows) else { return };
    let Ok(known) = Correlation::new(None, Some(m.clone())) else { return };
    // The set-up once, outside the timings: each accountant clones the loss.
    let _ = known.forward_loss();
    let fresh = || LeakageAccountant::new(&known).with_window(10);
    for horizon in [10_000, 100_000] {
        let budgets: Vec<f64> = (0..horizon).map(|t| if t % 13 == 0 { 0.3 } else { 0.05 }).collect();
        pace(&mut group, Cost::Medium);
        group.bench_function(BenchmarkId::new("extend", format!("T={horizon}/n={n}")), |b| {
            b.iter(|| fresh().and_then(|mut a| a.extend(black_box(&budgets)).map(|()| a.max_tpl())))
        });
        if horizon <= 10_000 {
            pace(&mut group, Cost::Large);
            group.bench_function(BenchmarkId::new("push", format!("T={horizon}/n={n}")), |b| {
                b.iter(|| {
                    fresh().and_then(|mut a| {
                        budgets.iter().try_for_each(|&e| a.push(black_box(e)).map(drop)).map(|()| a.max_tpl())
                    })
                })
            });
        }
    }
    group.finish();
}

criterion_group!(
    benches,
    loss_warm,
    series,
    supremum,
    setup,
    loss_cold,
    structured_and_large_alpha,
    accountant
);
criterion_main!(benches);
