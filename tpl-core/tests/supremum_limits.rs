//! The supremum of BPL under a constant ε (Theorem 11 of the TKDE paper) at the edges of
//! floating point: ε from 1e-300 to 10³, entries down to the subnormal range, rows whose
//! raw sums overflow. The oracle is the series itself: BPL_{t+1} = L(BPL_t) + ε iterated
//! with the piecewise loss until it stops changing, which does not use the closed-form
//! fixed point under test. Where the iteration contracts too slowly to settle (the
//! supremum is near the unbounded boundary), the fixed-point equation a = L(a) + ε is
//! checked instead, again with L evaluated independently of the closed form.

use approx::relative_eq;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use tpl_core::test_util::{WeightMix, log_uniform, weight_with};
use tpl_core::{Loss, LossEvaluator, PiecewiseLoss, Supremum, TransitionMatrix};

/// BPL_t under constant ε, iterated from BPL_1 = ε until it stops increasing, or `None`
/// after `max_steps` steps without settling.
fn converged_series(l: &PiecewiseLoss, eps: f64, max_steps: usize) -> Option<f64> {
    let mut a = eps;
    for _ in 0..max_steps {
        let next = l.loss(a) + eps;
        if next <= a {
            return Some(a.max(next));
        }
        a = next;
    }
    None
}

/// Whether some ordered pair of rows (q, d) has q_S e^ε ≥ 1 for S = {i : d_i = 0}: the
/// recursion then diverges (Theorem 11), computed from the matrix directly. `margin`
/// widens the test to cases within a relative margin of the boundary.
fn unbounded_by_rows(m: &TransitionMatrix, eps: f64, margin: f64) -> bool {
    (0..m.n()).any(|a| {
        (0..m.n()).any(|b| {
            let q_s: f64 = m.row(a).iter().zip(m.row(b)).filter(|&(_, &d)| d == 0.0).map(|(&q, _)| q).sum();
            a != b && q_s > 0.0 && q_s.ln() + eps >= -margin
        })
    })
}

// ---------------------------------------------------------------------------------------
// Regressions with the numbers of the failures
// ---------------------------------------------------------------------------------------

fn two_state(rows: [[f64; 2]; 2]) -> TransitionMatrix {
    TransitionMatrix::new(rows.iter().map(|r| r.to_vec()).collect()).unwrap()
}

fn bounded(l: &PiecewiseLoss, eps: f64) -> f64 {
    match l.supremum(eps).unwrap() {
        Supremum::Bounded(v) => {
            assert!(v.is_finite(), "bounded supremum {v} at ε = {eps}");
            v
        }
        Supremum::Unbounded => panic!("unbounded at ε = {eps}"),
    }
}

#[test]
fn regression_small_epsilon_supremum_keeps_relative_precision() {
    // Rows (0.9, 0.1), (0.2, 0.8): the value was 3.3333333315e-8 at ε = 1e-8, below
    // BPL_5000 = 3.3333333463e-8 (true 3.33333334629629648e-8); ε = 1e-14 was 0.7 % off and
    // ε ≤ 1e-16 returned ε. As ε → 0 the supremum is ε/(1 − TV) = 10ε/3 (1 + O(ε)).
    let l = PiecewiseLoss::new(&two_state([[0.9, 0.1], [0.2, 0.8]]));
    let v = bounded(&l, 1e-8);
    assert!(relative_eq!(v, 3.333_333_346_296_296_5e-8, epsilon = 0.0, max_relative = 1e-13), "{v}");
    assert!(v >= converged_series(&l, 1e-8, 5000).unwrap() * (1.0 - 1e-15));
    for eps in [1e-14, 1e-16, 1e-20, 1e-100, 1e-300] {
        let v = bounded(&l, eps);
        assert!(
            relative_eq!(v / eps, 10.0 / 3.0, epsilon = 0.0, max_relative = 1e-13),
            "ε = {eps}: supremum/ε = {}",
            v / eps
        );
    }
}

#[test]
fn regression_large_epsilon_supremum_is_finite() {
    // Fig. 8's P_B at ε = 500: `bounded` with an infinite value for every ε in [355, 710].
    // The limit is ε + log(0.8/0.2) up to e^{−ε} terms.
    let l = PiecewiseLoss::new(&two_state([[0.8, 0.2], [0.2, 0.8]]));
    assert!(relative_eq!(bounded(&l, 500.0), 501.386_294_361_119_9, epsilon = 0.0, max_relative = 1e-15));
    for eps in [355.0, 400.0, 709.0, 710.0, 800.0, 1e4] {
        let v = bounded(&l, eps);
        assert!(relative_eq!(v, eps + 4f64.ln(), epsilon = 0.0, max_relative = 1e-15), "ε = {eps}: {v}");
    }
}

#[test]
fn regression_subnormal_entry_gives_finite_supremum() {
    // Rows (4.9e-324, 1), (0.2, 0.8) at ε = 2: `bounded` with an infinite value (the root
    // e^a ≈ 0.48/4.9e-324 overflowed); the series converges to 743.70153235919623.
    let m = two_state([[4.9e-324, 1.0], [0.2, 0.8]]);
    let l = PiecewiseLoss::new(&m);
    let v = bounded(&l, 2.0);
    assert!(relative_eq!(v, 743.701_532_359_196_2, epsilon = 0.0, max_relative = 1e-14), "{v}");
    let series = converged_series(&l, 2.0, 10_000).unwrap();
    assert!(relative_eq!(v, series, epsilon = 0.0, max_relative = 1e-14), "{v} vs series {series}");
    for eps in [1e-300, 1e-9, 0.5, 1.0, 3.0, 300.0, 1e3] {
        let v = bounded(&l, eps);
        let series = converged_series(&l, eps, 100_000).unwrap();
        assert!(
            relative_eq!(v, series, epsilon = 0.0, max_relative = 1e-12),
            "ε = {eps}: {v} vs series {series}"
        );
    }
}

#[test]
fn regression_normalize_does_not_overflow() {
    // Rows (1e308, 1e308), (1, 3): the row sum overflowed, the row became (0, 0) and L(α)
    // was reported as α.
    let m = TransitionMatrix::normalized(vec![vec![1e308, 1e308], vec![1.0, 3.0]]).unwrap();
    assert_eq!(m.row(0), &[0.5, 0.5]);
    assert_eq!(m.row(1), &[0.25, 0.75]);
    let huge =
        TransitionMatrix::normalized(vec![vec![f64::MAX, f64::MAX, f64::MAX], vec![1.0; 3], vec![1e-320; 3]])
            .unwrap();
    for r in huge.rows() {
        assert!(r.iter().all(|&v| relative_eq!(v, 1.0 / 3.0, epsilon = 0.0, max_relative = 1e-15)), "{r:?}");
    }
    let want = two_state([[0.5, 0.5], [0.25, 0.75]]);
    let l = Loss::new(&m, 1).evaluate(1.0).unwrap();
    assert_eq!(l, Loss::new(&want, 1).evaluate(1.0).unwrap());
    assert!(l < 1.0);
    assert!(matches!(PiecewiseLoss::new(&m).supremum(1.0).unwrap(), Supremum::Bounded(_)));
}

#[test]
fn unbounded_decision_is_exact_at_the_extremes() {
    // Disjoint rows (Theorem 7): unbounded for every ε > 0, however small.
    let l = PiecewiseLoss::new(&two_state([[1.0, 0.0], [0.0, 1.0]]));
    for eps in [5e-324, 1e-300, 1e-16, 1.0, 1e3] {
        assert_eq!(l.supremum(eps).unwrap(), Supremum::Unbounded, "ε = {eps}");
    }
    // d_S = 0 with q_S = 1/2: unbounded exactly from ε = ln 2 on.
    let l = PiecewiseLoss::new(&two_state([[1.0, 0.0], [0.5, 0.5]]));
    assert_eq!(l.supremum(2f64.ln()).unwrap(), Supremum::Unbounded);
    assert!(bounded(&l, 2f64.ln() * (1.0 - 1e-12)) > 20.0);
    // d_S = 0 with q_S = 1 − 2^−53: bounded exactly while q e^ε < 1, i.e. for
    // ε < −ln q ≈ 1.11e-16; the limit is then log(1 + e/(1 − q − q e)), e = e^ε − 1 ≈ ε.
    let q = 1.0 - f64::EPSILON / 2.0;
    let l = PiecewiseLoss::new(&two_state([[q, 1.0 - q], [0.0, 1.0]]));
    for eps in [1e-300, 1e-100, 1e-20] {
        let v = bounded(&l, eps);
        let want = (eps / (f64::EPSILON / 2.0 - q * eps)).ln_1p();
        assert!(relative_eq!(v, want, epsilon = 0.0, max_relative = 1e-6), "ε = {eps}: {v} vs {want}");
    }
    let v = bounded(&l, 1e-17);
    assert!(
        relative_eq!(l.loss(v) + 1e-17, v, epsilon = 0.0, max_relative = 1e-12),
        "a = {v} is not a fixed point"
    );
    assert_eq!(l.supremum(1.2e-16).unwrap(), Supremum::Unbounded);
    // d_S = 0 with a subnormal q_S: bounded up to ε = −ln q_S ≈ 744.44.
    let rows = vec![vec![0.5, 0.5, 0.0], vec![0.5, 0.5, 4.9e-324], vec![0.5, 0.5, 0.0]];
    let l = PiecewiseLoss::new(&TransitionMatrix::new(rows).unwrap());
    assert!(l.supremum(744.0).unwrap().value().is_some_and(f64::is_finite));
    assert_eq!(l.supremum(745.0).unwrap(), Supremum::Unbounded);
}

#[test]
fn loss_is_finite_for_subnormal_entries_and_huge_alpha() {
    let m = two_state([[4.9e-324, 1.0], [0.2, 0.8]]);
    for l in [Loss::new(&m, 1), Loss::new(&m, 100)] {
        for alpha in [0.0, 1e-300, 1.0, 700.0, 701.0, 745.0, 1e4, 1e16, 1e300, f64::MAX] {
            let v = l.evaluate(alpha).unwrap();
            assert!(v.is_finite() && (0.0..=alpha).contains(&v), "L({alpha}) = {v}");
            if alpha >= 1e4 {
                // → log(0.2/4.9e-324) once e^α dwarfs 1/d.
                assert!(
                    relative_eq!(v, 0.2f64.ln() - 4.9e-324f64.ln(), epsilon = 0.0, max_relative = 1e-14),
                    "L({alpha}) = {v}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The supremum against the series over ε ∈ [1e-300, 10³]
// ---------------------------------------------------------------------------------------

/// Raw rows of an n×n matrix, n ∈ 2..=5, from weights that are zero, uniform, or 10^−u down
/// to the subnormal range.
fn matrix() -> impl Strategy<Value = Vec<Vec<f64>>> {
    let mix = WeightMix { zero: 2, one: 0, tiny: 2, decades: 320.0, ..WeightMix::default() };
    (2usize..=5).prop_flat_map(move |n| prop::collection::vec(prop::collection::vec(weight_with(mix), n), n))
}

/// ε log-uniform in [1e-300, 10³], and uniform in [1, 10³] (where e^ε overflows and e^−ε
/// turns subnormal) for a quarter of the cases.
fn epsilon() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => log_uniform(-300.0, 3.0),
        1 => 1.0f64..1e3,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The supremum equals the converged series, or where that converges too slowly,
    /// satisfies a = L(a) + ε; it is unbounded exactly when the rows say so; a bounded value
    /// is finite and ≥ ε.
    #[test]
    fn supremum_is_the_limit_of_the_series(rows in matrix(), eps in epsilon()) {
        let m = TransitionMatrix::normalized(rows).map_err(|e| TestCaseError::reject(format!("{e}")))?;
        let l = PiecewiseLoss::new(&m);
        // Too close to the boundary q_S e^ε = 1 for rounding of ln q_S to decide it.
        prop_assume!(unbounded_by_rows(&m, eps, 0.0) == unbounded_by_rows(&m, eps, 1e-9 * eps.max(1.0)));
        let sup = l.supremum(eps).unwrap();
        let expect_unbounded = unbounded_by_rows(&m, eps, 0.0);
        match sup {
            Supremum::Unbounded => prop_assert!(expect_unbounded, "unbounded, but no row pair says so"),
            Supremum::Bounded(v) => {
                prop_assert!(!expect_unbounded, "bounded {v}, but a row pair diverges");
                prop_assert!(v.is_finite() && v >= eps, "supremum {v} at ε = {eps}");
                // Where L'(a) is close to 1 the fixed point is ill-conditioned: the series
                // itself then carries rounding of order 1/(1 − L') ulps, and the residual
                // a − L(a) − ε is the measure of exactness that stays meaningful.
                let residual = l.loss(v) + eps - v;
                let fixed_point = residual.abs() <= 1e-12 * v;
                match converged_series(&l, eps, 200_000) {
                    Some(series) => prop_assert!(
                        fixed_point || relative_eq!(v, series, epsilon = 0.0, max_relative = 1e-12),
                        "supremum {v}, series {series}, residual {residual}"
                    ),
                    None => prop_assert!(fixed_point, "a = {v}: a − L(a) − ε = {residual}"),
                }
            }
        }
    }
}
