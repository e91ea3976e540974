//! Windows far longer than the stream (w = 2^64 − 1, 2^62, 10^9): every scheme and the ledger
//! keep state for the steps seen so far only. Before, `bd` and `pba` allocated a buffer of
//! w − 1 budgets at construction: a capacity-overflow panic for w = 2^64 − 1 and 2^62, an
//! 8 GB allocation for w = 10^9, and an O(w) sum at every step.
//!
//! This binary counts the bytes the process holds (a counting global allocator) and checks
//! the peak; it has a single test so that nothing else allocates meanwhile.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use tpl_mechanisms::{LaplaceMechanism, PbaPool, SchemeKind, WEventParams, WindowLedger, run};

struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let held = HELD.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
        PEAK.fetch_max(held, Ordering::SeqCst);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Ordering::SeqCst);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Every scheme with w ∈ {2^64 − 1, 2^62, 10^9} runs 300 steps of 3 cells with float and
/// adversarial noise, holding less than 4 MB at its peak; the run satisfies (W) exactly (one
/// window: the whole stream), and bd and pba test at every step.
#[test]
fn huge_windows_run_in_memory_bounded_by_the_stream() {
    let stream = make_stream(StreamKind::Spikes, 300, 3, 11);
    for w in [usize::MAX, 1 << 62, 1_000_000_000] {
        for eps in [1e-6, 1.0, 1e3] {
            let params = WEventParams::new(eps, w, 2.0).unwrap();
            // s = ε/(2w) rounded down, by at most 2^−30 relative.
            let real = eps / 2.0 / w as f64;
            assert!(params.share() <= real && (real - params.share()) / real < 1e-9);
            for kind in SchemeKind::ALL {
                // (The exact sampler refuses test scales 2wΔ/ε this large, with an error.)
                for noise in [Noise::Float(2), Noise::Adversarial { seed: 3, spread: 20.0 }] {
                    let before = HELD.load(Ordering::SeqCst);
                    PEAK.store(before, Ordering::SeqCst);
                    let (mut scheme, h) = build(kind, params, PbaPool::Always, noise);
                    let trace = drive(scheme.as_mut(), &h, &stream, noise).unwrap();
                    drop(scheme);
                    let used = PEAK.load(Ordering::SeqCst) - before;
                    assert!(used < 4 << 20, "{} w = {w}: peak {used} bytes", kind.name());
                    let what = format!("{} ε = {eps} w = {w} {noise:?}", kind.name());
                    assert_eq!(trace.outcomes.len(), stream.len(), "{what}");
                    assert!(trace.outcomes[0].published, "{what}");
                    if kind != SchemeKind::Laplace {
                        trace_exactly_within(w, &trace, eps).unwrap_or_else(|e| panic!("{what}: {e}"));
                    }
                    if matches!(kind, SchemeKind::Bd | SchemeKind::Pba) {
                        // Every step t ≥ 2 still tests with s (no fail-safe skip).
                        assert!(trace.outcomes[1..].iter().all(|o| o.spent.test == params.share()), "{what}");
                    }
                }
                // The runner (and its ledger) too.
                let before = HELD.load(Ordering::SeqCst);
                PEAK.store(before, Ordering::SeqCst);
                let (src, _h) = probe(source_for(Noise::Float(4)));
                let mut scheme =
                    kind.build(params, LaplaceMechanism::new(src), PbaPool::Always).expect("builds");
                let r = run(scheme.as_mut(), &stream).unwrap();
                assert!(PEAK.load(Ordering::SeqCst) - before < 4 << 20, "{} w = {w}: run", kind.name());
                if kind != SchemeKind::Laplace {
                    assert!(r.max_window_budget <= eps, "{} w = {w}: {}", kind.name(), r.max_window_budget);
                }
            }
        }
    }
    let mut ledger = WindowLedger::new(usize::MAX);
    let before = HELD.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    for _ in 0..1000 {
        ledger.push(0.001);
    }
    assert!(PEAK.load(Ordering::SeqCst) - before < 1 << 20);
    assert!(ledger.max_window_budget() >= 1.0 && ledger.max_window_budget() < 1.0 + 1e-12);
}
