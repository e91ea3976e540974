//! Benchmarks of `tpl-mechanisms`: the two Laplace samplers, a whole release through the
//! Laplace mechanism, and each of the six w-event schemes over a synthetic stream.
//!
//! Targets:
//! - `release/discrete-laplace/b=20/1e6` (10⁶ integer counts released with the exact
//!   sampler, on all cores) ≥ 60 M counts/s, i.e. a median ≤ 16.7 ms. For scale: OpenDP's
//!   Laplace ≈ 0.15 M/s, numpy's (insecure) float sampler ≈ 60 M/s.
//! - `scheme/<name>/T=1e4/d=100` (10⁴ steps × 100 cells, exact sampler, seeded ChaCha12)
//!   ≤ 20 ms for `laplace` and `uniform` (a fresh exact draw for every count), < 50 ms for
//!   the others.
//! - `window/bd/T=1e5/d=4/w=…`: the same time for w = 10 and w = 5·10⁴ (no cost grows with w).
//!
//! Ids carry the parameters; criterion reports throughput in elements (draws, or counts
//! read) per second. Inputs are fixed: the samplers' `seeded` constructors for the noise, `tpl_benches`'
//! splitmix64 for the stream.
//!
//! Run: `cargo bench -p tpl-benches --bench mechanisms -- --noplot [FILTER]` (about two
//! minutes).

use std::hint::black_box;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rayon::ThreadPoolBuilder;
use tpl_benches::{Pace, SplitMix64};
use tpl_mechanisms::{
    DiscreteLaplace, FloatLaplace, LaplaceMechanism, Mechanism, NoiseSource, PbaPool, SchemeKind,
    StreamScheme, WEventParams, run,
};

/// Draws per sampler iteration (and counts per release).
const DRAWS: usize = 1_000_000;
/// Scales measured: the target's b = 20 (Δ = 2, ε = 0.1), small and large ones, two that are
/// not short binary fractions (0.3 = t/2⁵⁴ with a 53-bit t; 20 + one ulp, what a scale Δ/p
/// bumped up by one ulp looks like), drawn at a nearby short scale and thinned, and a large
/// one with a fraction (2000.5, whose draws split U into high and low bits).
const SCALES: [f64; 7] = [0.5, 2.0, 20.0, 1000.0, 0.3, 20.000_000_000_000_004, 2000.5];
/// Seed of the noise generators.
const NOISE_SEED: u64 = 0x6e6f_6973_6521;
/// Stream shape (steps, cells) of the scheme benches.
const SHAPE: (usize, usize) = (10_000, 100);
/// w-event parameters (ε, w, Δ) of the scheme benches: ε = 1 per window of 30 steps, Δ = 2.
const W_EVENT: (f64, usize, f64) = (1.0, 30, 2.0);
/// Stream shape (steps, cells) of the window-length benches.
const LONG_SHAPE: (usize, usize) = (100_000, 4);
/// Settings of the sampler and release groups (10⁶ draws per iteration).
const MILLION_DRAWS: Pace = Pace::flat(20, 500, 4000);

/// `DRAWS` draws of `noise.laplace(b)` per iteration, as `name/b=…/1e6`.
fn bench_sampler(group: &mut BenchmarkGroup<'_, WallTime>, name: &str, mut noise: impl NoiseSource, b: f64) {
    group.bench_function(BenchmarkId::new(name, format!("b={b}/1e6")), |it| {
        it.iter(|| {
            let mut acc = 0.0;
            for _ in 0..DRAWS {
                acc += noise.laplace(black_box(b)).expect("valid scale");
            }
            black_box(acc)
        });
    });
}

/// One `fill_laplace(b)` of `DRAWS` values per iteration on `threads` threads (0: all), as
/// `name/b=…/1e6`.
fn bench_fill(group: &mut BenchmarkGroup<'_, WallTime>, name: &str, b: f64, threads: usize) {
    let pool = ThreadPoolBuilder::new().num_threads(threads).build().expect("a thread pool");
    let mut noise = DiscreteLaplace::seeded(NOISE_SEED);
    let mut out = vec![0.0; DRAWS];
    group.bench_function(BenchmarkId::new(name, format!("b={b}/1e6")), |it| {
        it.iter(|| {
            pool.install(|| noise.fill_laplace(black_box(b), &mut out)).expect("valid scale");
            black_box(out[DRAWS - 1])
        });
    });
}

/// Raw samplers: 10⁶ draws per iteration. The exact sampler as a release draws (one fill of
/// 10⁶ values) on one thread (`discrete-laplace-1t`: the cost of a draw) and on all cores
/// (`discrete-laplace`), and by 10⁶ single calls at one scale (`discrete-laplace-single`:
/// the cost of a call, the values being drawn ahead); the float sampler by single calls.
fn samplers(c: &mut Criterion) {
    let mut group = c.benchmark_group("sampler");
    MILLION_DRAWS.apply(&mut group);
    group.throughput(Throughput::Elements(DRAWS as u64));
    for b in SCALES {
        bench_fill(&mut group, "discrete-laplace-1t", b, 1);
    }
    for b in [2.0, 20.0, 20.000_000_000_000_004] {
        bench_fill(&mut group, "discrete-laplace", b, 0);
    }
    bench_sampler(&mut group, "discrete-laplace-single", DiscreteLaplace::seeded(NOISE_SEED), 20.0);
    for b in [1.0, 20.0] {
        bench_sampler(&mut group, "float-laplace", FloatLaplace::seeded(NOISE_SEED), b);
    }
    group.finish();
}

/// One release of 10⁶ integer counts through [`LaplaceMechanism`] (Δ = 2, p = 0.1: b = 20),
/// input check and output vector included.
fn release(c: &mut Criterion) {
    let mut group = c.benchmark_group("release");
    MILLION_DRAWS.apply(&mut group);
    group.throughput(Throughput::Elements(DRAWS as u64));
    let mut rng = SplitMix64::new(0x636f_756e_7473);
    let counts: Vec<f64> = (0..DRAWS).map(|_| (rng.next_u64() % 10_000) as f64).collect();
    let mut exact = LaplaceMechanism::new(DiscreteLaplace::seeded(NOISE_SEED));
    group.bench_function("discrete-laplace/b=20/1e6", |it| {
        it.iter(|| black_box(exact.release(black_box(&counts), 2.0, 0.1).expect("integer counts")));
    });
    let mut float = LaplaceMechanism::new(FloatLaplace::seeded(NOISE_SEED));
    group.bench_function("float-laplace/b=20/1e6", |it| {
        it.iter(|| black_box(float.release(black_box(&counts), 2.0, 0.1).expect("finite counts")));
    });
    group.finish();
}

/// A synthetic integer stream of `steps` × `cells`: each cell starts at a level in
/// [100, 2100), follows a random walk of ±0..3 per step, and every 500 steps a third of the
/// cells jump by up to ±300 (regime changes that make bd/ba/pba publish). Counts stay ≥ 0.
fn stream((steps, cells): (usize, usize)) -> Vec<Vec<f64>> {
    let mut rng = SplitMix64::new(0x7374_7265_616d);
    let mut level: Vec<i64> = (0..cells).map(|_| 100 + (rng.next_u64() % 2000) as i64).collect();
    (0..steps)
        .map(|t| {
            for c in level.iter_mut() {
                let r = rng.next_u64();
                *c += (r % 7) as i64 - 3;
                if t % 500 == 499 && (r >> 32).is_multiple_of(3) {
                    *c += ((r >> 40) % 601) as i64 - 300;
                }
                *c = (*c).max(0);
            }
            level.iter().map(|&c| c as f64).collect()
        })
        .collect()
}

/// Scheme `kind` with parameters (ε, w, Δ) over the Laplace mechanism with `noise`.
fn scheme<N: NoiseSource + 'static>(
    kind: SchemeKind,
    (epsilon, window, sensitivity): (f64, usize, f64),
    noise: N,
) -> Box<dyn StreamScheme> {
    let params = WEventParams::new(epsilon, window, sensitivity).expect("valid parameters");
    kind.build(params, LaplaceMechanism::new(noise), PbaPool::Always).expect("builds")
}

/// Measures a whole run: the scheme built by `build`, run over `data` with the (W) ledger,
/// releases collected.
fn bench_run(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    build: impl Fn() -> Box<dyn StreamScheme>,
    data: &[Vec<f64>],
) {
    group.bench_function(id, |it| {
        it.iter(|| {
            let mut scheme = build();
            black_box(run(scheme.as_mut(), black_box(data)).expect("valid stream"))
        });
    });
}

/// Each scheme over T = 10⁴ steps × d = 100 cells with the exact sampler: scheme built,
/// run with the (W) ledger, releases collected — what `tpl release` does minus parsing and
/// JSON. Prints, once, how often each scheme published (to read the timings against).
fn schemes(c: &mut Criterion) {
    let data = stream(SHAPE);
    let (steps, cells) = SHAPE;
    let mut group = c.benchmark_group("scheme");
    Pace::flat(20, 500, 3000).apply(&mut group);
    group.throughput(Throughput::Elements((steps * cells) as u64));
    for kind in SchemeKind::BUILT_IN.into_iter().filter(|k| *k != SchemeKind::Planned) {
        let build = || scheme(kind, W_EVENT, DiscreteLaplace::seeded(NOISE_SEED));
        let published =
            run(build().as_mut(), &data).expect("valid stream").published.iter().filter(|&&p| p).count();
        eprintln!("scheme {}: {published} of {steps} steps published", kind.name());
        bench_run(&mut group, BenchmarkId::new(kind.name(), format!("T=1e4/d={cells}")), build, &data);
    }
    // The two schemes that publish every step with the fast (not release-grade) sampler:
    // separates the cost of 10⁶ exact draws from the scheme and runner overhead.
    for kind in [SchemeKind::Laplace, SchemeKind::Uniform] {
        let build = || scheme(kind, W_EVENT, FloatLaplace::seeded(NOISE_SEED));
        let id = BenchmarkId::new(format!("{}+float", kind.name()), format!("T=1e4/d={cells}"));
        bench_run(&mut group, id, build, &data);
    }
    group.finish();
}

/// `bd` over T = 10⁵ steps × d = 4 cells with a short window (w = 10) and a long one
/// (w = 5·10⁴): the per-step cost should not depend on w (running window sums, state for
/// min(w − 1, t) steps). Exact sampler, scheme built and run with the (W) ledger.
fn window_length(c: &mut Criterion) {
    let data = stream(LONG_SHAPE);
    let (steps, cells) = LONG_SHAPE;
    let mut group = c.benchmark_group("window");
    Pace::flat(10, 500, 3000).apply(&mut group);
    group.throughput(Throughput::Elements(steps as u64));
    let (epsilon, _, sensitivity) = W_EVENT;
    for window in [10, 50_000] {
        let build =
            || scheme(SchemeKind::Bd, (epsilon, window, sensitivity), DiscreteLaplace::seeded(NOISE_SEED));
        bench_run(&mut group, BenchmarkId::new("bd", format!("T=1e5/d={cells}/w={window}")), build, &data);
    }
    group.finish();
}

criterion_group!(benches, samplers, release, schemes, window_length);
criterion_main!(benches);
