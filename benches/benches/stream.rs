//! Benchmarks of `tpl-stream`: a durable stream at the end of 10⁵ recorded steps × 100 cells
//! (bd, ε = 1, w = 10), one step at a time.
//!
//! Targets (issue "continual release a curator can run every five minutes"):
//! - `stream/open+push+flush/T=1e5/d=100`: what one `tpl stream push` of one step does —
//!   open the file, restore the scheme, draw, commit, fsync the log — in ≤ 20 ms (≥ 50
//!   processes a second), independent of T;
//! - `stream/push/T=1e5/d=100`: one step through an open handle, ≤ 1 ms (≥ 1000 steps/s).
//!
//! The stream is built once per run in a temporary directory (about 10 s); each iteration
//! appends one step with a new key, so the stream grows by the iterations measured.
//!
//! Run: `cargo bench -p tpl-benches --bench stream -- --noplot` (about a minute).

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use tpl_benches::{Pace, SplitMix64};
use tpl_mechanisms::SchemeKind;
use tpl_stream::{DurableStream, StreamConfig};

/// DurableStream shape (recorded steps, cells).
const SHAPE: (usize, usize) = (100_000, 100);
/// Settings: iterations of a few milliseconds.
const PACE: Pace = Pace::flat(30, 500, 3000);

/// Counts of one step: `cells` values in 0..50.
fn counts(rng: &mut SplitMix64, cells: usize) -> Vec<f64> {
    (0..cells).map(|_| (rng.next_u64() % 50) as f64).collect()
}

/// A bd stream of `SHAPE.0` steps at `path`.
fn build(path: &Path, rng: &mut SplitMix64) {
    let config = StreamConfig::new(SchemeKind::Bd, 1.0, 10);
    DurableStream::create(path, &config).expect("a new stream");
    let mut s = DurableStream::open(path).expect("the stream opens");
    for _ in 0..SHAPE.0 {
        s.push(None, &counts(rng, SHAPE.1)).expect("a step");
    }
}

fn stream(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("s.db");
    let mut rng = SplitMix64::new(0x5354_5245_414d);
    build(&path, &mut rng);
    let id = format!("T=1e5/d={}", SHAPE.1);
    let mut group = c.benchmark_group("stream");
    PACE.apply(&mut group);
    group.bench_function(format!("open+push+flush/{id}"), |it| {
        it.iter(|| {
            let mut s = DurableStream::open(&path).expect("the stream opens");
            s.push(None, &counts(&mut rng, SHAPE.1)).expect("a step");
            s.flush().expect("the log syncs");
        });
    });
    let mut open = DurableStream::open(&path).expect("the stream opens");
    group.bench_function(format!("push/{id}"), |it| {
        it.iter(|| open.push(None, &counts(&mut rng, SHAPE.1)).expect("a step"));
    });
    group.finish();
}

criterion_group!(benches, stream);
criterion_main!(benches);
