//! The audit of a run's spent budgets under temporal correlation
//! ([`docs/w-event.md`](tpl_core::guide::w_event) §6, §7), with `tpl-core`.

mod common;

use common::*;
use tpl_core::{Correlation, LeakageSeries, TransitionMatrix};
use tpl_mechanisms::{LaplaceMechanism, PbaPool, SchemeKind, Uniform, WEventParams, Zero, run};

use tpl_core::test_util::{both_sides, correlation, forward_only};

fn all_rows_equal() -> TransitionMatrix {
    TransitionMatrix::new(vec![vec![0.2, 0.3, 0.5]; 3]).unwrap()
}

/// Uniform with identity P_B = P_F (L(α) = α): BPL_t = t·ε/w, TPL_t = T·ε/w, and every
/// window's leakage is T·ε/w too — unbounded in T although every window sums to ε.
#[test]
fn uniform_under_identity_matrices() {
    let id = TransitionMatrix::identity(3);
    for (eps, w, t_len) in [(1.0, 5, 20), (0.3, 1, 7), (2.0, 10, 100)] {
        let p = WEventParams::new(eps, w, 2.0).unwrap();
        let stream = make_stream(StreamKind::Random, t_len, 3, 1);
        let r = run(&mut Uniform::new(p, LaplaceMechanism::new(Zero)), &stream).unwrap();
        assert_close(r.max_window_budget, eps, "uniform (W) is tight");
        let s = LeakageSeries::new(&both_sides(&id), &r.budgets()).unwrap();
        let unit = eps / w as f64;
        for t in 1..=t_len {
            assert_close(s.bpl()[t - 1], t as f64 * unit, &format!("BPL_{t}"));
            assert_close(s.fpl()[t - 1], (t_len - t + 1) as f64 * unit, &format!("FPL_{t}"));
            assert_close(s.tpl()[t - 1], t_len as f64 * unit, &format!("TPL_{t}"));
        }
        for v in s.window_leakage(w).unwrap() {
            assert_close(v, t_len as f64 * unit, "window leakage");
        }
    }
}

/// With all-rows-equal matrices (no correlation, L ≡ 0) the window leakage equals the window
/// budget sum, hence ≤ ε by (W) — for every scheme's realised budgets.
#[test]
fn no_correlation_window_leakage_is_the_window_sum() {
    let m = all_rows_equal();
    assert_eq!(PbaPool::detect(&both_sides(&m)), PbaPool::Detected(false));
    for kind in SchemeKind::ALL {
        for (eps, w) in [(1.0, 4), (0.5, 12)] {
            let p = WEventParams::new(eps, w, 2.0).unwrap();
            let stream = make_stream(StreamKind::RandomWalk, 120, 3, 2);
            let noise = Noise::Float(3);
            let (mut s, h) = build(kind, p, PbaPool::detect(&correlation(Some(&m), None)), noise);
            let budgets = drive(s.as_mut(), &h, &stream, noise).unwrap().budgets();
            let series = LeakageSeries::new(&both_sides(&m), &budgets).unwrap();
            for (t, v) in series.window_leakage(w).unwrap().iter().enumerate() {
                let sum: f64 = budgets[t..t + w].iter().sum();
                assert_close(*v, sum, &format!("{} window at {}", kind.name(), t + 1));
                if kind != SchemeKind::Laplace {
                    assert!(*v <= eps * (1.0 + 1e-12));
                }
            }
            for (tpl, eps_t) in series.tpl().iter().zip(&budgets) {
                assert_close(*tpl, *eps_t, "TPL_t = ε_t without correlation");
            }
        }
    }
}

/// laplace with w = 1 (event level): every window sum is ε, and so is the audit's w = 1
/// window leakage (TPL_t) without correlation.
#[test]
fn laplace_event_level_window_is_epsilon() {
    let eps = 0.8;
    let p = WEventParams::new(eps, 1, 2.0).unwrap();
    let stream = make_stream(StreamKind::Spikes, 30, 2, 3);
    let noise = Noise::Discrete(4);
    let (mut s, h) = build(SchemeKind::Laplace, p, PbaPool::Never, noise);
    let trace = drive(s.as_mut(), &h, &stream, noise).unwrap();
    check_trace(SchemeKind::Laplace, &p, &PbaPool::Never, &stream, &trace).unwrap();
    let budgets = trace.budgets();
    assert_eq!(ledger_max(1, &budgets), eps);
    let m = all_rows_equal();
    for (pb, pf) in [(None, None), (Some(&m), Some(&m))] {
        let series = LeakageSeries::new(&correlation(pb, pf), &budgets).unwrap();
        for v in series.window_leakage(1).unwrap() {
            assert_close(v, eps, "w = 1 window leakage");
        }
    }
}

/// κ: identity rows differ (correlation exists); a missing matrix contributes false.
#[test]
fn correlation_predicate_from_matrices() {
    let id = TransitionMatrix::identity(3);
    let flat = all_rows_equal();
    assert_eq!(PbaPool::detect(&correlation(Some(&id), None)), PbaPool::Detected(true));
    assert_eq!(PbaPool::detect(&forward_only(&id)), PbaPool::Detected(true));
    assert_eq!(PbaPool::detect(&correlation(Some(&flat), Some(&id))), PbaPool::Detected(true));
    assert_eq!(PbaPool::detect(&Correlation::none()), PbaPool::Detected(false));
    assert_eq!(PbaPool::detect(&correlation(Some(&flat), None)), PbaPool::Detected(false));
}
