//! Window leakage after enormous budgets: once the running sum of ε passes the largest
//! double, the windows that follow keep their exact values (the steps inside a window are
//! then summed directly), in the batch series, the compact series and the accountant alike,
//! and a window that itself exceeds the largest double is an overflow, never a smaller number.

use tpl_core::test_util::both_sides;
use tpl_core::{CoreError, Correlation, LeakageAccountant, LeakageSeries, TransitionMatrix};

/// Two budgets of 10³⁰⁸ three steps apart, then three of 1: the prefix sum of ε is +∞ from
/// step 4 on, while no window of 3 steps exceeds 10³⁰⁸.
const BUDGETS: [f64; 9] = [1e308, 0.0, 0.0, 1e308, 0.0, 0.0, 1.0, 1.0, 1.0];

#[test]
fn windows_after_an_overflowed_prefix_keep_their_exact_values() {
    // Without correlation BPL = FPL = ε: a window's leakage is the sum of its budgets.
    let series = LeakageSeries::new(&Correlation::none(), &BUDGETS).unwrap();
    let windows = series.window_leakage(3).unwrap();
    let up = |x: f64| f64::next_up(x);
    // Regression: the last three were 1.0…, 2.0… and 2.0… (∞ − ∞ taken for 0 inside).
    assert_eq!(&windows[4..], &[up(1.0), up(2.0), up(3.0)]);
    assert!(windows[..4].iter().all(|&v| v == up(1e308)), "{windows:?}");
    assert_eq!(series.horizon_leakage(), f64::INFINITY, "Σε past the largest double is +∞, not NaN");
}

#[test]
fn the_accountant_agrees_with_the_batch_series_after_the_overflow() {
    let p = TransitionMatrix::smoothed_identity(3, 0.5).unwrap();
    let batch = LeakageSeries::new(&both_sides(&p), &BUDGETS).unwrap();
    let max = batch.max_window_leakage(3).unwrap();
    let mut acc = LeakageAccountant::new(&both_sides(&p)).with_window(3).unwrap();
    for &e in &BUDGETS {
        acc.push(e).unwrap();
    }
    assert_eq!(acc.max_window_leakage().unwrap(), Some(max));
    let mut at_once = LeakageAccountant::new(&both_sides(&p)).with_window(3).unwrap();
    at_once.extend(&BUDGETS).unwrap();
    assert_eq!(at_once.history(), acc.history());
}

#[test]
fn a_window_past_the_largest_double_is_an_overflow() {
    // Regression: the window of steps 1..3 (2·10³⁰⁸ + 1) was reported as 1.0000000000000002e308.
    let series = LeakageSeries::new(&Correlation::none(), &[1e308, 1e308, 1.0, 1.0, 1.0]).unwrap();
    assert!(matches!(series.max_window_leakage(3), Err(CoreError::Overflow { step: 1 })));
    // The accountant refuses the step that makes a window overflow, even with fewer steps
    // than the window.
    let mut acc = LeakageAccountant::new(&Correlation::none()).with_window(5).unwrap();
    acc.push(1e308).unwrap();
    assert!(matches!(acc.push(1e308), Err(CoreError::Overflow { step: 1 })));
}
