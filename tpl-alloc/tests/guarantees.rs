//! The promises of the allocators as the printed f64 budgets audit them, over targets from
//! α = 1e-12 to 1e4 (log-uniform) and random smoothed matrices: the audit — the series
//! `tpl leakage` computes from the same budgets ([`LeakageSeries::new`]) — is ≤ α
//! with no slack, and the budgets are not needlessly small.
//!
//! Upper-bound's ε is checked against the limit of the series computed here by iterating
//! a ← L(a) + ε to its fixed point (Theorem 11 without the closed form), so the check does
//! not rest on the supremum code it exercises.

use proptest::prelude::*;
use tpl_alloc::{
    AllocError, Allocation, Allocator, Quantified, Side, StreamAudit, UpperBound, WindowAllocator, audit,
};
use tpl_core::test_util::{correlation, log_uniform, smoothed, sparse_rows};
use tpl_core::{Budgets, CompactSeries, LeakageSeries, LossEvaluator, PiecewiseLoss, TransitionMatrix};

/// A random n×n matrix with some exact zeros, smoothed with s ∈ [0.01, 2) (TKDE eq. 28).
fn smoothed_matrix_of(n: usize) -> impl Strategy<Value = TransitionMatrix> {
    (0.01f64..2.0, sparse_rows(n)).prop_map(|(s, rows)| smoothed(rows, s))
}

fn pair() -> impl Strategy<Value = (TransitionMatrix, TransitionMatrix)> {
    (2usize..6).prop_flat_map(|n| (smoothed_matrix_of(n), smoothed_matrix_of(n)))
}

/// The audit `tpl leakage` prints for these budgets: max TPL and, with `w`, the largest
/// window leakage.
fn leakage_command(
    pb: &TransitionMatrix,
    pf: &TransitionMatrix,
    budgets: &[f64],
    w: Option<usize>,
) -> (f64, f64) {
    let s = LeakageSeries::new(&correlation(Some(pb), Some(pf)), budgets).unwrap();
    let win = w.map_or(0.0, |w| s.window_leakage(w).unwrap().into_iter().fold(0.0, f64::max));
    (s.max_tpl(), win)
}

/// lim BPL under constant ε by iterating a ← L(a) + ε from ε until it stops increasing.
fn limit(loss: &PiecewiseLoss, eps: f64) -> f64 {
    let mut a = eps;
    for _ in 0..2_000_000 {
        let next = loss.loss(a) + eps;
        if next <= a {
            return a;
        }
        a = next;
    }
    a
}

/// The limit TPL of a constant ε: lim BPL + lim FPL − ε.
fn limit_tpl(pb: &TransitionMatrix, pf: &TransitionMatrix, eps: f64) -> f64 {
    limit(&PiecewiseLoss::new(pb), eps) + (limit(&PiecewiseLoss::new(pf), eps) - eps)
}

fn check_audit(
    a: &Allocation,
    pb: &TransitionMatrix,
    pf: &TransitionMatrix,
    alpha: f64,
) -> Result<(), TestCaseError> {
    prop_assert!(a.budgets().iter().all(|e| e > 0.0), "budgets must be positive");
    prop_assert!(a.guarantee.holds(&a.audit));
    let (max_tpl, max_window) = leakage_command(pb, pf, &a.budgets().to_vec(), a.audit.window);
    prop_assert_eq!(max_tpl, a.max_tpl(), "the allocator's audit is the leakage command's");
    match a.audit.window {
        Some(_) => {
            prop_assert!(max_window <= alpha, "{}: window leakage {max_window} > α {alpha}", a.strategy)
        }
        None => prop_assert!(max_tpl <= alpha, "{}: max TPL {max_tpl} > α {alpha}", a.strategy),
    }
    Ok(())
}

/// Upper-bound over α ∈ [lo, hi]: the audit keeps α, ε is within 1e-9 of the largest
/// budget whose limit TPL is ≤ α, and that limit is ≤ α (to rounding).
fn upper_bound_is_right(
    pb: &TransitionMatrix,
    pf: &TransitionMatrix,
    alpha: f64,
    t: usize,
) -> Result<(), TestCaseError> {
    let corr = correlation(Some(pb), Some(pf));
    let a = UpperBound::new(&corr, alpha).allocate(t).unwrap();
    check_audit(&a, pb, pf, alpha)?;
    let eps = a.budgets().to_vec()[0];
    let at = limit_tpl(pb, pf, eps);
    prop_assert!(at <= alpha * (1.0 + 1e-10), "limit TPL {at} of ε {eps} exceeds α {alpha}");
    let more = limit_tpl(pb, pf, eps * (1.0 + 1e-9));
    prop_assert!(
        more > alpha,
        "ε {eps} is needlessly small: ε(1 + 1e-9) still has limit TPL {more} ≤ α {alpha}"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Quantified and window over the whole range; the printed budgets audit to ≤ α, quantified
    /// reaches α to 1e-9 at every step, window's ε is the largest (one ulp more breaks α).
    #[test]
    fn quantified_and_window_keep_alpha_as_printed((pb, pf) in pair(), alpha in log_uniform(-12.0, 4.0), t in 1usize..300, w in 1usize..12) {
        let corr = correlation(Some(&pb), Some(&pf));
        let q = Quantified::new(&corr, alpha).allocate(t).unwrap();
        check_audit(&q, &pb, &pf, alpha)?;
        prop_assert!(tpls(&q.audit.series).iter().all(|&v| v >= alpha * (1.0 - 1e-9)));
        let w = w.min(t);
        let win = WindowAllocator::new(&corr, alpha, w).allocate(t).unwrap();
        check_audit(&win, &pb, &pf, alpha)?;
        let eps = win.budgets().to_vec()[0];
        let (_, more) = leakage_command(&pb, &pf, &vec![eps.next_up(); t], Some(w));
        prop_assert!(eps >= alpha / w as f64 * (1.0 - 1e-15) || more > alpha);
    }

    /// Upper-bound over the whole range: the printed budgets always audit to ≤ α, and no
    /// target in [1e-12, 1e4] is refused.
    #[test]
    fn upper_bound_never_answers_wrongly((pb, pf) in pair(), alpha in log_uniform(-12.0, 4.0), t in 1usize..300) {
        let corr = correlation(Some(&pb), Some(&pf));
        match UpperBound::new(&corr, alpha).allocate(t) {
            Ok(a) => check_audit(&a, &pb, &pf, alpha)?,
            Err(e) => prop_assert!(false, "α {alpha} refused: {e}"),
        }
    }

    /// Upper-bound over the whole range, exact everywhere (tpl-core's supremum is right for
    /// every ε > 0).
    #[test]
    fn upper_bound_is_largest_over_the_whole_range((pb, pf) in pair(), alpha in log_uniform(-12.0, 4.0), t in 1usize..300) {
        upper_bound_is_right(&pb, &pf, alpha, t)?;
    }
}

fn fig8() -> (TransitionMatrix, TransitionMatrix) {
    (
        TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.2, 0.8]]).unwrap(),
        TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.1, 0.9]]).unwrap(),
    )
}

#[test]
fn upper_bound_on_fig8_keeps_tiny_alpha_as_printed() {
    let (pb, pf) = fig8();
    let corr = correlation(Some(&pb), Some(&pf));
    for alpha in [1e-9, 1e-12, 1e-16, 1e-17, 1e-300] {
        let a = UpperBound::new(&corr, alpha).allocate(3000).unwrap();
        let (max_tpl, _) = leakage_command(&pb, &pf, &a.budgets().to_vec(), None);
        assert!(max_tpl <= alpha, "α {alpha}: audited max TPL {max_tpl}");
        assert!(a.guarantee.holds(&a.audit));
    }
}

#[test]
fn upper_bound_on_fig8_large_alpha_is_largest() {
    let (pb, pf) = fig8();
    let corr = correlation(Some(&pb), Some(&pf));
    for alpha in [360.0, 400.0, 1000.0, 1e4, 1e5, 1e300] {
        let a = UpperBound::new(&corr, alpha).allocate(100).unwrap();
        let eps = a.budgets().to_vec()[0];
        assert!(a.max_tpl() <= alpha);
        assert!(limit_tpl(&pb, &pf, eps) <= alpha * (1.0 + 1e-12));
        assert!(limit_tpl(&pb, &pf, eps * (1.0 + 1e-12)) > alpha, "α {alpha}: ε {eps} is not the largest");
    }
}

/// Regression: at α ≥ 9e307 the middle budget a_B + a_F − α overflowed to infinity, the
/// budgets were lowered until TPL_1 fell far below α, and the error said "audited 1e308
/// against the bound 1e308". TPL_t = α now holds at every step up to the largest double.
#[test]
fn quantified_keeps_tpl_at_alpha_up_to_the_largest_double() {
    let (pb, pf) = fig8();
    let corr = correlation(Some(&pb), Some(&pf));
    for alpha in [1e300, 1e308, 1.7e308, f64::MAX] {
        let a = Quantified::new(&corr, alpha).allocate(5).unwrap_or_else(|e| panic!("α {alpha:e}: {e}"));
        assert!(a.guarantee.holds(&a.audit), "α {alpha:e}");
        for tpl in tpls(&a.audit.series) {
            assert!(tpl <= alpha && tpl >= alpha * (1.0 - 1e-9), "α {alpha:e}: TPL {tpl:e}");
        }
    }
}

#[test]
fn too_small_alpha_is_refused_not_violated() {
    let (pb, pf) = fig8();
    let corr = correlation(Some(&pb), Some(&pf));
    let tiny = f64::from_bits(1);
    let ub = UpperBound::new(&corr, tiny).allocate(10);
    assert_eq!(ub.unwrap_err(), AllocError::NoPositiveBudget { alpha: tiny });
    for r in [Quantified::new(&corr, tiny).allocate(10), WindowAllocator::new(&corr, tiny, 3).allocate(10)] {
        match r {
            Ok(a) => assert!(a.guarantee.holds(&a.audit) && a.max_tpl() <= tiny),
            Err(e) => assert!(
                matches!(e, AllocError::NoPositiveBudget { .. } | AllocError::NoMiddleBudget { .. }),
                "{e}"
            ),
        }
    }
}

/// The batch audit and the online one read L by Algorithm 1 for the first steps and by the
/// piecewise function beyond, as `tpl leakage` does: their numbers are its numbers, bit for
/// bit, at every horizon, the switch included.
#[test]
fn audits_are_the_leakage_series_for_every_horizon() {
    let (pb, pf) = fig8();
    let corr = correlation(Some(&pb), Some(&pf));
    let mut online = StreamAudit::new(corr.clone(), 3).unwrap();
    for t in 1..=6 {
        let budgets: Vec<f64> = (0..t).map(|i| 0.37 + 0.11 * i as f64).collect();
        online.push(budgets[t - 1]).unwrap();
        let fresh = LeakageSeries::new(&correlation(Some(&pb), Some(&pf)), &budgets).unwrap();
        let batch = audit(&corr, Budgets::PerStep(budgets.clone()), Some(3.min(t))).unwrap();
        let window = fresh.max_window_leakage(3.min(t)).unwrap();
        assert_eq!((batch.max_tpl, batch.max_window_leakage), (fresh.max_tpl(), Some(window)), "T = {t}");
        assert_eq!(online.leakage().unwrap(), Some((fresh.max_tpl(), window)), "T = {t}");
    }
}

/// TPL_1..TPL_T of a compact series.
fn tpls(s: &tpl_core::CompactSeries) -> Vec<f64> {
    (0..s.len()).map(|t| s.tpl_at(t)).collect()
}

#[test]
fn upper_bound_names_the_cap_that_keeps_it_below_alpha() {
    let absorbing = TransitionMatrix::new(vec![vec![0.8, 0.2], vec![0.0, 1.0]]).unwrap();
    let (pb, pf) = fig8();
    let cap = (1.25f64).ln();
    for (b, f, side) in [(&absorbing, &pf, Side::Backward), (&pb, &absorbing, Side::Forward)] {
        let corr = correlation(Some(b), Some(f));
        let a = UpperBound::new(&corr, 1e300).allocate(50).unwrap();
        let limit = a.limited_by.expect("capped");
        assert_eq!(limit.side, side);
        assert_eq!(limit.q, 0.8);
        assert!((limit.epsilon - cap).abs() < 1e-15, "{limit:?}");
        let eps = a.budgets().get(0);
        assert!(eps < cap && eps > cap * (1.0 - 1e-14), "ε {eps}");
        assert!(a.max_tpl() < 1e3 && a.guarantee.holds(&a.audit));
    }
    // Below the cap α decides: no limit reported, even with the absorbing matrix.
    let corr = correlation(Some(&absorbing), Some(&pf));
    assert_eq!(UpperBound::new(&corr, 0.5).allocate(50).unwrap().limited_by, None);
    let corr = correlation(Some(&pb), Some(&pf));
    assert_eq!(UpperBound::new(&corr, 1e300).allocate(50).unwrap().limited_by, None);
}

#[test]
fn budgets_are_stored_once_whatever_the_horizon() {
    let (pb, pf) = fig8();
    let corr = correlation(Some(&pb), Some(&pf));
    let t = 200_000;
    let ub = UpperBound::new(&corr, 1.0).allocate(t).unwrap();
    assert!(matches!(ub.budgets(), Budgets::Constant { steps, .. } if *steps == t));
    let win = WindowAllocator::new(&corr, 1.0, 10).allocate(t).unwrap();
    assert!(matches!(win.budgets(), Budgets::Constant { steps, .. } if *steps == t));
    let q = Quantified::new(&corr, 1.0).allocate(t).unwrap();
    assert!(matches!(q.budgets(), Budgets::Ends { steps, .. } if *steps == t));
}

/// Counts the series an allocation computes (each ends with done = total).
fn series_computed(run: impl FnOnce(&dyn Fn(usize, usize))) -> usize {
    let count = std::cell::Cell::new(0);
    run(&|done, total| {
        if done == total {
            count.set(count.get() + 1)
        }
    });
    count.get()
}

#[test]
fn window_search_computes_few_series_and_still_ends_at_the_largest_double() {
    let (pb, pf) = fig8();
    let corr = correlation(Some(&pb), Some(&pf));
    for (alpha, w, t) in [(1.0, 10, 5000), (0.1, 1, 3000), (50.0, 7, 4000)] {
        let mut result = None;
        let n = series_computed(|p| {
            result = Some(WindowAllocator::new(&corr, alpha, w).allocate_with_progress(t, p))
        });
        let a = result.unwrap().unwrap();
        // Bisection over the bit patterns took about 60; the plan, its audit and the check
        // of the supremum start are three of these.
        assert!(n <= 25, "α {alpha}, w {w}: {n} series");
        let eps = a.budgets().get(0);
        let above =
            CompactSeries::new(&corr, Budgets::Constant { epsilon: eps.next_up(), steps: t }).unwrap();
        assert!(above.max_window_leakage(w).unwrap() > alpha, "α {alpha}: ε {eps} is not the largest");
        assert!(a.audit.max_window_leakage.unwrap() <= alpha);
    }
}
