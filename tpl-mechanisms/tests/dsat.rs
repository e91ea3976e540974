//! `dsat` ([`docs/w-event.md`](tpl_core::guide::w_event) §3.10): its budgets, its decisions
//! against an independent reading of Algorithm 3, its parameters' checks, and that it is
//! restored from its first step. What every scheme of the benchmark set must keep is in
//! `benchmark_set.rs`.

mod common;

use common::*;
use tpl_mechanisms::test_util::exact_windows_within;
use tpl_mechanisms::{Dsat, DsatConfig, Mechanism, StreamScheme, WEventParams, schemes::DsatRule};

fn params(eps: f64, w: usize) -> WEventParams {
    WEventParams::new(eps, w, 2.0).unwrap()
}

/// The budgets of §3.10 for the default parameters: C = ⌈0.15·w⌉, each test (1 − C/w)·ε/w,
/// each publication ε/w, and a window's C publications and w tests within ε.
#[test]
fn the_default_budgets_are_those_of_the_paper_on_the_grid() {
    for (w, cap) in [(1, 1), (5, 1), (10, 2), (40, 6), (100, 15)] {
        let p = params(1.0, w);
        let config = DsatConfig::default();
        assert_eq!(config.cap(w), cap);
        let s = Dsat::new(p, Oblivious { seed: 0, draws: 0 });
        let (test, publication) = (s.max_spend(2 + config.skip) - s.max_spend(1), s.max_spend(1));
        let (want_test, want_pub) = ((1.0 - cap as f64 / w as f64) / w as f64, 1.0 / w as f64);
        assert!((publication - want_pub).abs() < 1e-15, "w = {w}: {publication}");
        assert!((test - want_test).abs() < 1e-15, "w = {w}: test {test} vs {want_test}");
        let window: Vec<Vec<f64>> =
            (0..w).map(|i| if i < cap { vec![test, publication] } else { vec![test] }).collect();
        exact_windows_within(w, &window, 1.0, None).unwrap();
    }
}

/// Algorithm 3 read independently: which steps publish, given the answers of the tests.
/// `answers[t]` is the noisy Σ|c − r| the test of step t draws (the mechanism's value).
fn reference(w: usize, config: &DsatConfig, releases: &[Vec<f64>], answers: &[f64]) -> Vec<bool> {
    let cap = config.cap(w);
    let mut published: Vec<bool> = Vec::new();
    let mut threshold = config.threshold;
    for t in 1..=answers.len() {
        if t == 1 {
            published.push(true);
            continue;
        }
        let recent = &published[published.len().saturating_sub(w - 1)..];
        let count = recent.iter().filter(|p| **p).count();
        if t <= 1 + config.skip || count >= cap {
            published.push(false);
            continue;
        }
        let rate = count as f64 / t.min(w) as f64;
        let error = rate - cap as f64 / w as f64;
        let u = config.gain * (error.abs() - config.tolerance).abs() / config.tolerance;
        threshold = if error <= 0.0 { (threshold - u).max(0.0) } else { (threshold + u).min(2.0) };
        let last = &releases[published.iter().rposition(|p| *p).unwrap()];
        let mass: f64 = last.iter().sum();
        published.push(answers[t - 1] / mass.max(1.0) >= threshold);
    }
    published
}

#[test]
fn dsat_publishes_where_algorithm_3_says() {
    let mut decided = [0; 2];
    for (w, seed) in [(5, 1u64), (10, 2), (20, 3), (40, 4)] {
        let p = params(1.0, w);
        let stream = make_stream(StreamKind::Random, 200, 3, seed);
        let mut scheme = Dsat::new(p, Oblivious { seed, draws: 0 });
        let outcomes: Vec<_> = stream.iter().map(|c| scheme.step(c).unwrap()).collect();
        // Replay the draws: the first value of each draw of a testing step is its answer.
        let mut replay = Oblivious { seed, draws: 0 };
        let mut answers = Vec::new();
        for o in &outcomes {
            let tested = o.spent.test > 0.0;
            let answer = if tested { replay.sample(&[0.0], 2.0, 1.0).unwrap()[0] } else { f64::NAN };
            if o.published {
                replay.sample(&[0.0; 3], 2.0, 1.0).unwrap();
            }
            answers.push(answer);
        }
        let releases: Vec<Vec<f64>> = outcomes.iter().map(|o| o.release.clone()).collect();
        let want = reference(w, &DsatConfig::default(), &releases, &answers);
        let got: Vec<bool> = outcomes.iter().map(|o| o.published).collect();
        assert_eq!(got, want, "w = {w}");
        let tested =
            |published: bool| outcomes.iter().filter(move |o| o.spent.test > 0.0 && o.published == published);
        decided[0] += tested(false).count();
        decided[1] += tested(true).count();
    }
    assert!(decided[0] > 20 && decided[1] > 20, "tests that repeated and that published: {decided:?}");
}

#[test]
fn out_of_range_parameters_are_refused_by_name() {
    let p = params(1.0, 10);
    let base = DsatConfig::default();
    for (config, name) in [
        (DsatConfig { threshold: 2.5, ..base }, "threshold"),
        (DsatConfig { threshold: f64::NAN, ..base }, "threshold"),
        (DsatConfig { tolerance: 0.0, ..base }, "tolerance"),
        (DsatConfig { gain: -1.0, ..base }, "gain"),
        (DsatConfig { cap_ratio: 0.0, ..base }, "cap_ratio"),
        (DsatConfig { cap_ratio: 1.5, ..base }, "cap_ratio"),
        (DsatConfig { test_share: Some(1.0), ..base }, "test_share"),
    ] {
        assert_refused_by_name(DsatRule::new(&p, config), name);
    }
    // k = 0 spends nothing on tests: each step of a window publishes until C have.
    let rule = DsatRule::new(&p, DsatConfig { test_share: Some(0.0), skip: 0, ..base }).unwrap();
    let mut s = tpl_mechanisms::Scheme::with_rule(p, Oblivious { seed: 3, draws: 0 }, rule);
    let pattern: Vec<bool> = (0..20).map(|_| s.step(&[5.0]).unwrap().published).collect();
    assert_eq!(pattern.iter().filter(|p| **p).count(), 4, "{pattern:?}");
}
