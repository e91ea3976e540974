//! Benchmarks of `tpl-alloc`: each allocator's `allocate(T)` — the plan *and* its audit
//! through `tpl-core` (leakage series, max TPL, window leakage, suprema) — on a random dense
//! n = 200 matrix (the weak-correlation family of `tpl_benches`) and on the smoothed identity
//! (strong correlation), for T = 10⁴ steps.
//!
//! Target: each `alloc/<allocator>/dense/n=200/T=1e4` < 0.5 s. The correlation setup (both
//! loss functions of a `Correlation`, TKDE Algorithms 2 and 4, built when first asked for) is
//! shared by all allocators of a run and measured on its own (`alloc/correlation-setup/...`);
//! add it once to get the cold end-to-end time.
//!
//! Run: `cargo bench -p tpl-benches --bench alloc -- --noplot [FILTER]` (about a minute).

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use tpl_alloc::{Allocator, Quantified, UpperBound, WindowAllocator};
use tpl_benches::{Family, Pace};
use tpl_core::Correlation;

/// Matrix size n.
const N: usize = 200;
/// Horizon T.
const HORIZON: usize = 10_000;
/// Target α of every allocator.
const ALPHA: f64 = 1.0;
/// Window of the window allocator.
const WINDOW: usize = 10;

fn allocators(c: &mut Criterion) {
    let mut group = c.benchmark_group("alloc");
    Pace::flat(10, 300, 5000).apply(&mut group);
    for family in Family::ALL {
        let p = family.matrix(N);
        let param = format!("{}/n={N}", family.name());
        group.bench_with_input(BenchmarkId::new("correlation-setup", &param), &p, |b, p| {
            b.iter(|| {
                let c = Correlation::new(Some(black_box(p).clone()), Some(p.clone())).expect("one size");
                black_box((c.backward_loss().is_some(), c.forward_loss().is_some()))
            });
        });
        let corr = Correlation::new(Some(p.clone()), Some(p.clone())).expect("one size");
        // The set-up once, outside the allocators' timings.
        let _ = (corr.backward_loss(), corr.forward_loss());
        let param = format!("{param}/T=1e4");
        let upper = UpperBound::new(&corr, ALPHA);
        let quantified = Quantified::new(&corr, ALPHA);
        let window = WindowAllocator::new(&corr, ALPHA, WINDOW);
        let cases: [(String, &dyn Allocator); 3] = [
            ("upper-bound".into(), &upper),
            ("quantified".into(), &quantified),
            (format!("window/w={WINDOW}"), &window),
        ];
        for (name, allocator) in cases {
            // Fail loudly before measuring if the allocation is not valid.
            let a = allocator.allocate(HORIZON).expect("the allocator has a solution");
            assert!(a.guarantee.holds(&a.audit), "{name} on {param} breaks its guarantee");
            group.bench_function(BenchmarkId::new(name, &param), |b| {
                b.iter(|| black_box(allocator.allocate(black_box(HORIZON)).expect("checked above")));
            });
        }
    }
    group.finish();
}

criterion_group!(benches, allocators);
criterion_main!(benches);
