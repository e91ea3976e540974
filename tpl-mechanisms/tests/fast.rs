//! `fast` ([`docs/w-event.md`](tpl_core::guide::w_event) §3.11): the Kalman correction of a
//! sample, the controller's schedule on a steady and on a jumping stream, at most M samples
//! in every window, and its parameters' checks. What every scheme of the benchmark set must
//! keep is in `benchmark_set.rs`.

mod common;

use common::*;
use tpl_mechanisms::schemes::FastRule;
use tpl_mechanisms::{Fast, FastConfig, LaplaceMechanism, Scheme, StreamScheme, WEventParams, Zero};

fn params(eps: f64, w: usize) -> WEventParams {
    WEventParams::new(eps, w, 2.0).unwrap()
}

fn published_steps(scheme: &mut dyn StreamScheme, stream: &[Vec<f64>]) -> Vec<usize> {
    let mut steps = Vec::new();
    for (i, c) in stream.iter().enumerate() {
        if scheme.step(c).unwrap().published {
            steps.push(i + 1);
        }
    }
    steps
}

/// With no noise the draw is the count: step 2's release is x₁ + K·(c₂ − x₁), rounded, with
/// K = (P₀ + Q)/(P₀ + Q + R) = 100 100 / 1 100 100.
#[test]
fn a_sample_is_the_kalman_correction_of_the_draw_rounded() {
    let mut s = Fast::new(params(1.0, 100), LaplaceMechanism::new(Zero));
    assert_eq!(s.step(&[1000.0, 50.0]).unwrap().release, [1000.0, 50.0]);
    let k = 100_100.0 / 1_100_100.0;
    let second = s.step(&[2000.0, 50.0]).unwrap();
    assert!(second.published);
    assert_eq!(second.release, [(1000.0 + k * 1000.0f64).round(), 50.0]);
    assert_eq!(second.release[0], 1091.0);
}

/// A steady stream: after the T_i = 5 samples of the warm-up, every sample's error is 0, so
/// Δ = 0 and the interval grows by ⌊5·(1 − e^{−1})⌋ = 3 at each sample: samples at
/// 1, …, 5, 6, then 6 + 4, 10 + 7, 17 + 10, 27 + 13, …
#[test]
fn a_steady_stream_is_sampled_ever_more_rarely() {
    let stream = vec![vec![500.0, 20.0]; 80];
    let mut s = Fast::new(params(1.0, 1000), LaplaceMechanism::new(Zero));
    assert_eq!(published_steps(&mut s, &stream), [1, 2, 3, 4, 5, 6, 10, 17, 27, 40, 56, 75]);
}

/// A stream that doubles and halves: every correction is large, Δ ≫ ξ, the interval stays 1
/// and each step samples while the window has room.
#[test]
fn a_jumping_stream_is_sampled_at_every_step() {
    let stream: Vec<Vec<f64>> = (0..60).map(|t| vec![if t % 2 == 0 { 1000.0 } else { 100_000.0 }]).collect();
    let mut s = Fast::new(params(1.0, 1000), LaplaceMechanism::new(Zero));
    assert_eq!(published_steps(&mut s, &stream), (1..=60).collect::<Vec<_>>());
}

/// M = ⌊0.15·w⌋ (at least 1): no window of w steps holds more samples, on any stream.
#[test]
fn no_window_holds_more_than_m_samples() {
    for (w, m) in [(1, 1), (5, 1), (10, 1), (20, 3), (40, 6)] {
        assert_eq!(FastConfig::default().samples(w), m);
        for seed in 0..40u64 {
            let stream = make_stream(STREAM_KINDS[seed as usize % 4], 200, 2, seed);
            let mut s = Fast::new(params(1.0, w), Oblivious { seed, draws: 0 });
            let published: Vec<bool> = stream.iter().map(|c| s.step(c).unwrap().published).collect();
            for window in published.windows(w) {
                assert!(window.iter().filter(|p| **p).count() <= m, "w = {w}, seed {seed}");
            }
            assert!(published.iter().filter(|p| **p).count() >= 200 / w * m / 2, "w = {w}: it samples");
        }
    }
}

#[test]
fn out_of_range_parameters_are_refused_by_name() {
    let p = params(1.0, 10);
    let base = FastConfig::default();
    for (config, name) in [
        (FastConfig { sample_ratio: 0.0, ..base }, "sample_ratio"),
        (FastConfig { process_variance: -1.0, ..base }, "process_variance"),
        (FastConfig { measurement_variance: 0.0, ..base }, "measurement_variance"),
        (FastConfig { initial_variance: f64::NAN, ..base }, "initial_variance"),
        (FastConfig { theta: f64::INFINITY, ..base }, "theta"),
        (FastConfig { xi: 0.0, ..base }, "xi"),
        (FastConfig { integral_window: 0, ..base }, "integral_window"),
    ] {
        assert_refused_by_name(FastRule::new(&p, config), name);
    }
    // T_i = 1: the controller acts from the second sample on.
    let rule = FastRule::new(&p, FastConfig { integral_window: 1, sample_ratio: 1.0, ..base }).unwrap();
    let mut s = Scheme::with_rule(p, LaplaceMechanism::new(Zero), rule);
    assert_eq!(published_steps(&mut s, &vec![vec![500.0]; 12]), [1, 2, 6]);
}
