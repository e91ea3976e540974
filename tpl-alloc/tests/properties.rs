//! Invariants of the allocators (TKDE §5 and the window allocator), over random smoothed
//! matrices, targets α ∈ [0.01, 10] and horizons T ∈ [1, 500]:
//! - quantified (Alg. 8) reaches TPL_t = α at every step, to 1e-9·α;
//! - upper-bound (Alg. 7) and window never exceed α; every budget is positive;
//! - upper-bound's ε equals quantified's ε_mid (both solve sup_B + sup_F − ε = α, because
//!   a_B is the fixed point sup_B(ε_mid)), and quantified spends more only at t = 1 and T.
//!
//! Plus one test per error the allocators can return.

use proptest::prelude::*;
use tpl_alloc::{AllocError, Allocator, Quantified, Side, UpperBound, WindowAllocator};
use tpl_core::test_util::correlation;
use tpl_core::test_util::{smoothed, sparse_rows};
use tpl_core::{CoreError, Correlation, TransitionMatrix};

/// A random n×n matrix with some exact zeros, then Laplacian-smoothed (TKDE eq. 28) with s, so
/// that the suprema exist as the TKDE allocators require.
fn smoothed_matrix_of(n: usize) -> impl Strategy<Value = TransitionMatrix> {
    (0.005f64..2.0).prop_flat_map(move |s| sparse_rows(n).prop_map(move |rows| smoothed(rows, s)))
}

/// Two smoothed matrices over the same 2..7 states.
fn smoothed_pair() -> impl Strategy<Value = (TransitionMatrix, TransitionMatrix)> {
    (2usize..7).prop_flat_map(|n| (smoothed_matrix_of(n), smoothed_matrix_of(n)))
}

/// Backward and forward knowledge over the same states, each side absent one time in five.
fn sides() -> impl Strategy<Value = (Option<TransitionMatrix>, Option<TransitionMatrix>)> {
    (smoothed_pair(), 0u8..25)
        .prop_map(|((pb, pf), k)| (Some(pb).filter(|_| k % 5 != 0), Some(pf).filter(|_| k / 5 != 0)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn quantified_reaches_alpha_exactly((pb, pf) in sides(), alpha in 0.01f64..10.0, t in 1usize..500) {
        let corr = correlation(pb.as_ref(), pf.as_ref());
        let a = Quantified::new(&corr, alpha).allocate(t).unwrap();
        let worst = tpls(&a.audit.series).iter().map(|v| (v - alpha).abs()).fold(0.0, f64::max);
        prop_assert!(worst <= 1e-9 * alpha, "max |TPL - α| = {worst}");
        prop_assert!(a.budgets().iter().all(|e| e > 0.0));
        prop_assert!(a.guarantee.holds(&a.audit));
    }

    #[test]
    fn upper_bound_and_window_stay_under_alpha((pb, pf) in sides(), alpha in 0.01f64..10.0, t in 1usize..500, w in 1usize..20) {
        let corr = correlation(pb.as_ref(), pf.as_ref());
        let ub = UpperBound::new(&corr, alpha).allocate(t).unwrap();
        prop_assert!(ub.max_tpl() <= alpha, "upper-bound max TPL {} > α {alpha}", ub.max_tpl());
        prop_assert!(ub.budgets().iter().all(|e| e > 0.0));
        let w = w.min(t);
        let win = WindowAllocator::new(&corr, alpha, w).allocate(t).unwrap();
        let m = win.audit.max_window_leakage.unwrap();
        prop_assert!(m <= alpha, "window leakage {m} > α {alpha}");
        prop_assert!(win.budgets().iter().all(|e| e > 0.0));
        // Largest: one ulp more budget would break the bound (or hit the α/w cap).
        let eps = win.budgets().to_vec()[0];
        let more: Vec<f64> = tpl_core::CompactSeries::new(&corr, tpl_core::Budgets::Constant { epsilon: eps.next_up(), steps: t })
            .unwrap()
            .window_leakage(w)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        prop_assert!(eps >= alpha / w as f64 * (1.0 - 1e-15) || more.into_iter().fold(0.0, f64::max) > alpha);
    }

    #[test]
    fn upper_bound_epsilon_is_quantified_middle((pb, pf) in smoothed_pair(), alpha in 0.01f64..10.0, t in 3usize..200) {
        let corr = correlation(Some(&pb), Some(&pf));
        let eps = UpperBound::new(&corr, alpha).epsilon().unwrap();
        let q = Quantified::new(&corr, alpha).allocate(t).unwrap();
        let mid = q.budgets().to_vec()[1];
        prop_assert!((eps - mid).abs() <= 1e-9 * eps, "upper-bound ε {eps} vs ε_mid {mid}");
        prop_assert!(q.budgets().to_vec()[1..t - 1].iter().all(|&e| e == mid));
        // With no correlation on a side, a_B (or a_F) equals ε_mid exactly in real numbers;
        // computed as a_B + a_F − α, ε_mid may then exceed it by an ulp.
        let floor = mid * (1.0 - 1e-12);
        prop_assert!(q.budgets().to_vec()[0] >= floor && q.budgets().to_vec()[t - 1] >= floor);
    }
}

fn fig8() -> Correlation {
    let pb = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.2, 0.8]]).unwrap();
    let pf = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.1, 0.9]]).unwrap();
    correlation(Some(&pb), Some(&pf))
}

#[test]
fn bad_alpha_is_rejected_by_every_allocator() {
    let corr = fig8();
    for alpha in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            UpperBound::new(&corr, alpha).allocate(5),
            Err(AllocError::Core(CoreError::BadAlpha(_)))
        ));
        assert!(matches!(
            Quantified::new(&corr, alpha).allocate(5),
            Err(AllocError::Core(CoreError::BadAlpha(_)))
        ));
        assert!(matches!(
            WindowAllocator::new(&corr, alpha, 2).allocate(5),
            Err(AllocError::Core(CoreError::BadAlpha(_)))
        ));
    }
}

#[test]
fn matrices_of_different_sizes_are_refused_naming_both() {
    let two = TransitionMatrix::smoothed_identity(2, 0.1).unwrap();
    let three = TransitionMatrix::smoothed_identity(3, 0.1).unwrap();
    let err = Correlation::new(Some(two.clone()), Some(three.clone())).unwrap_err();
    assert_eq!(err, CoreError::MatrixSizes { backward: 2, forward: 3 });
    let text = err.to_string();
    assert!(text.contains("2×2") && text.contains("3×3"), "{text}");
    assert!(
        Correlation::new(Some(three.clone()), None).is_ok()
            && Correlation::new(None, Some(two.clone())).is_ok()
    );
}

#[test]
fn zero_horizon_and_bad_window() {
    let corr = fig8();
    assert_eq!(
        UpperBound::new(&corr, 1.0).allocate(0).unwrap_err(),
        AllocError::Core(CoreError::EmptyHorizon)
    );
    assert_eq!(
        WindowAllocator::new(&corr, 1.0, 6).allocate(5).unwrap_err(),
        AllocError::Core(CoreError::BadWindow { window: 6, horizon: 5 })
    );
    assert!(matches!(
        WindowAllocator::new(&corr, 1.0, 0).allocate(5),
        Err(AllocError::Core(CoreError::BadWindow { .. }))
    ));
}

#[test]
fn theorem_7_matrices_are_refused_by_unbounded_strategies_but_not_by_window() {
    let id = TransitionMatrix::identity(3);
    let smooth = TransitionMatrix::smoothed_identity(3, 0.1).unwrap();
    let corr = correlation(Some(&smooth), Some(&id));
    assert_eq!(
        UpperBound::new(&corr, 1.0).allocate(10).unwrap_err(),
        AllocError::Unbounded { side: Side::Forward }
    );
    assert_eq!(
        Quantified::new(&corr, 1.0).allocate(10).unwrap_err(),
        AllocError::Unbounded { side: Side::Forward }
    );
    let w = WindowAllocator::new(&corr, 1.0, 4).allocate(50).unwrap();
    assert!(w.audit.max_window_leakage.unwrap() <= 1.0 && w.budgets().to_vec()[0] > 0.0);
}

#[test]
fn no_correlation_spends_alpha() {
    let corr = Correlation::none();
    assert_eq!(UpperBound::new(&corr, 0.7).allocate(4).unwrap().budgets().to_vec(), vec![0.7; 4]);
    assert_eq!(Quantified::new(&corr, 0.7).allocate(4).unwrap().budgets().to_vec(), vec![0.7; 4]);
    // A window of 3 steps without correlation leaks the sum of its budgets.
    let w = WindowAllocator::new(&corr, 0.9, 3).allocate(4).unwrap();
    assert!((w.budgets().to_vec()[0] - 0.3).abs() < 1e-15);
}

#[test]
fn short_horizons_of_quantified() {
    let corr = fig8();
    let q = Quantified::new(&corr, 1.0).solve().unwrap();
    assert_eq!(Quantified::new(&corr, 1.0).allocate(1).unwrap().budgets().to_vec(), vec![1.0]);
    let two = Quantified::new(&corr, 1.0).allocate(2).unwrap();
    assert_eq!(two.budgets().to_vec(), vec![q.first, q.last]);
    assert!(tpls(&two.audit.series).iter().all(|v| (v - 1.0).abs() < 1e-12));
}

/// TPL_1..TPL_T of a compact series.
fn tpls(s: &tpl_core::CompactSeries) -> Vec<f64> {
    (0..s.len()).map(|t| s.tpl_at(t)).collect()
}
