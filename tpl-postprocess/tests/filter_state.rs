//! A filter resumed from its saved state ([`Filter::state`], [`Filter::resume`]) — through
//! JSON, as a stream file keeps it — goes on bit for bit as the filter that was never
//! stopped, for every filtering estimator, on few cells (the state-space filter of `map`) and
//! many (its calibrated prior), with steps that carry no information.
#![cfg(feature = "serde")]

use tpl_core::TransitionMatrix;
use tpl_core::test_util::{correlation, uniforms};
use tpl_postprocess::{Estimator, Filter, FilterConfig, FilterState, PostprocessError};

/// A stream of `steps` noisy releases of `n` cells around a population of 40 per cell, and
/// its budgets (every fifth step repeats, with budget 0), from a fixed generator.
fn stream(n: usize, steps: usize) -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut next = uniforms(0x2545_f491_4f6c_dd1d_u64);
    let releases = (0..steps)
        .map(|t| (0..n).map(|c| 40.0 + 10.0 * ((t + c) as f64 / 9.0).sin() + (next() - 0.5) * 30.0).collect())
        .collect();
    let budgets = (0..steps).map(|t| if t % 5 == 4 { 0.0 } else { 0.5 }).collect();
    (releases, budgets)
}

/// Each step's estimate and standard errors.
fn run(filter: &mut Filter<'_>, releases: &[Vec<f64>], budgets: &[f64]) -> Vec<(Vec<f64>, Vec<f64>)> {
    releases
        .iter()
        .zip(budgets)
        .map(|(r, &e)| filter.step(r, e).map(|s| (s.estimate, s.std_error)).unwrap())
        .collect()
}

#[test]
fn a_resumed_filter_goes_on_as_the_one_never_stopped_standard_errors_included() {
    for (n, estimator) in [
        (3, Estimator::CausalFilter),
        (70, Estimator::CausalFilter),
        (3, Estimator::MapDbsec),
        (4, Estimator::MapInteger),
        (3, Estimator::Mle),
    ] {
        let public = correlation(None, Some(&TransitionMatrix::smoothed_identity(n, 0.2).unwrap()));
        let config = || FilterConfig { correlation: &public, estimator, ..FilterConfig::new(40 * n as u64) };
        let (releases, budgets) = stream(n, 70);
        let whole = run(&mut Filter::new(n, config()).unwrap(), &releases, &budgets);
        for cut in [1, 2, 9, 33, 69] {
            let mut first = Filter::new(n, config()).unwrap();
            run(&mut first, &releases[..cut], &budgets[..cut]);
            let json = serde_json::to_string(&first.state()).unwrap();
            let state: FilterState = serde_json::from_str(&json).unwrap();
            assert_eq!(state.steps(), cut);
            let mut resumed = Filter::resume(n, config(), state, &releases[..cut], &budgets[..cut]).unwrap();
            let rest = run(&mut resumed, &releases[cut..], &budgets[cut..]);
            assert_eq!(rest, whole[cut..], "{} on {n} cells, cut after {cut}", estimator.name());
        }
    }
}

#[test]
fn a_state_resumes_only_on_the_history_it_was_made_from() {
    let public = correlation(None, Some(&TransitionMatrix::smoothed_identity(3, 0.2).unwrap()));
    let config = || FilterConfig { correlation: &public, ..FilterConfig::new(120) };
    let (releases, budgets) = stream(3, 10);
    let mut f = Filter::new(3, config()).unwrap();
    run(&mut f, &releases[..6], &budgets[..6]);
    let short = Filter::resume(3, config(), f.state(), &releases[..5], &budgets[..5]);
    assert!(matches!(short, Err(PostprocessError::BadState { steps: 6, releases: 5, budgets: 5 })));
    let other_cells = Filter::resume(4, FilterConfig::new(120), f.state(), &releases[..6], &budgets[..6]);
    assert!(matches!(other_cells, Err(PostprocessError::BadState { .. })));
    // The state of `map` on few cells holds its state-space filter; mle has none.
    let mle = FilterConfig { estimator: Estimator::Mle, ..config() };
    assert!(matches!(
        Filter::resume(3, mle, f.state(), &releases[..6], &budgets[..6]),
        Err(PostprocessError::BadState { .. })
    ));
}
