//! Property-based tests of the loss function L(α) (proptest), over random row-stochastic
//! matrices with n = 1..=8 states: dense, sparse (many exact zeros), with duplicate rows, with
//! all rows equal, with near-duplicate rows and with entries spanning 300 orders of magnitude
//! (`tpl_core::test_util::weight_rows`).
//!
//! Where each property comes from (theorem numbers of the TKDE paper, as in
//! [`docs/model.md`](tpl_core::guide::model) §3–5):
//!    subset S = ∅ gives 0, and q_S ≤ 1, d_S ≥ 0 bound the ratio by 1 + x = e^α).
//! 2. `loss_is_non_decreasing` — L is non-decreasing in α (every candidate
//!    log((1 + x q_S)/(1 + x d_S)) with q_S ≥ d_S is, and L is their maximum).
//! 3. `evaluators_agree` — Algorithm 1 (`DirectLoss`), Algorithms 2–3 (`PairTableLoss`) and
//!    Algorithms 4–5 (`PiecewiseLoss`) compute the same function, eq. (24);
//!    `evaluators_agree_when_pairs_are_pruned` checks the same for n = 24..40, where the
//!    evaluators settle most pairs by their support function
//!    ([`docs/model.md`](tpl_core::guide::model) §8).
//! 4. `loss_equals_brute_force_over_all_subsets` (α ≤ 30) and
//!    `loss_equals_brute_force_at_large_alpha` (α ≥ 800) — eq. (24) taken literally: the
//!    maximum over ordered pairs of distinct rows and all 2^n subsets S; this checks
//!    Theorem 5, Corollary 2 and Theorem 8 (the optimal S is a prefix of the states sorted by
//!    q_i/d_i), on which all three evaluators rely.
//! 5. `equal_rows_give_zero_loss` (Theorem 6) and `disjoint_rows_give_full_loss` (Theorem 7,
//!    in its literal "a column with a 1 and a 0" form and generalised to two rows with
//!    disjoint supports).
//! 9. `loss_is_finite_at_huge_alpha` — for α ∈ [800, 10⁴] (where e^α overflows a double)
//!    L(α) stays finite and ≤ α when no two rows have disjoint supports
//!    ([`docs/model.md`](tpl_core::guide::model) §3, "Numerics").
//!
//! The series, supremum, window and accountant properties (6–8) are in
//! `series_properties.rs`; the minimised counterexamples these properties found, as plain
//! tests, in `loss_regressions.rs`. `tests/loss_properties.proptest-regressions` keeps
//! proptest's seeds of the failures.

mod brute_force;

use approx::relative_eq;
use brute_force::{brute_force_large, brute_force_moderate, evaluators};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use tpl_core::test_util::both_sides;
use tpl_core::test_util::{SUBNORMAL_FLOOR, alpha, log_uniform, normalize, weight, weight_rows};
use tpl_core::{LeakageSeries, PiecewiseLoss, Supremum, TransitionMatrix};

/// α ≤ 30, for the brute force in the e^α form.
fn moderate_alpha() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => 0.0f64..30.0,
        1 => Just(0.0),
        1 => log_uniform(-300.0, -2.0),
    ]
}

/// Two rows with disjoint supports (Theorem 7 applies).
fn has_disjoint_rows(m: &TransitionMatrix) -> bool {
    (0..m.n()).any(|a| {
        (0..m.n()).any(|b| a != b && m.row(a).iter().zip(m.row(b)).all(|(&q, &d)| q == 0.0 || d == 0.0))
    })
}

/// Property 4's check: every evaluator's L(α) equals `brute_force` at each α of `alphas`.
fn matches_brute_force(
    m: TransitionMatrix,
    alphas: &[f64],
    brute_force: fn(&TransitionMatrix, f64) -> f64,
) -> Result<(), TestCaseError> {
    for &a in alphas {
        let expected = brute_force(&m, a);
        for (name, l) in evaluators(&m) {
            let v = l.loss(a);
            prop_assert!(
                relative_eq!(v, expected, epsilon = SUBNORMAL_FLOOR, max_relative = 1e-12),
                "{name}: L({a}) = {v}, brute force {expected}"
            );
        }
    }
    Ok(())
}

/// Property 3 for one matrix: Algorithms 1, 2–3 and 4–5 agree to 1e-12 relative at `alphas`.
fn evaluators_agree_at(m: &TransitionMatrix, alphas: &[f64]) -> Result<(), TestCaseError> {
    let [(_, direct), (_, pair), (_, piece)] = evaluators(m);
    for &a in alphas {
        let (d, p, w) = (direct.loss(a), pair.loss(a), piece.loss(a));
        prop_assert!(
            relative_eq!(d, p, epsilon = SUBNORMAL_FLOOR, max_relative = 1e-12),
            "L({a}): direct {d} vs pair-table {p}"
        );
        prop_assert!(
            relative_eq!(d, w, epsilon = SUBNORMAL_FLOOR, max_relative = 1e-12),
            "L({a}): direct {d} vs piecewise {w}"
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Properties of L(α)
// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Property 1: 0 ≤ L(α) ≤ α.
    #[test]
    fn loss_is_between_zero_and_alpha(rows in weight_rows(1..=8), alphas in prop::collection::vec(alpha(), 1..8)) {
        let m = normalize(rows)?;
        for (name, l) in evaluators(&m) {
            for &a in &alphas {
                let v = l.loss(a);
                prop_assert!((0.0..=a).contains(&v), "{name}: L({a}) = {v}");
            }
        }
    }

    /// Property 2: L is non-decreasing. The α are sorted, with neighbours one ulp apart and
    /// a few just around α = 700, where the candidates switch formulas.
    #[test]
    fn loss_is_non_decreasing(rows in weight_rows(1..=8), alphas in prop::collection::vec(alpha(), 1..12)) {
        let m = normalize(rows)?;
        let mut grid: Vec<f64> = alphas.iter().flat_map(|&a| [a, a.next_up()]).collect();
        grid.extend([700.0 - 1e-9, 700.0f64.next_down(), 700.0, 700.0f64.next_up(), 700.0 + 1e-9]);
        grid.sort_by(f64::total_cmp);
        for (name, l) in evaluators(&m) {
            let values: Vec<f64> = grid.iter().map(|&a| l.loss(a)).collect();
            for k in 1..grid.len() {
                // In exact arithmetic L(α_k) ≥ L(α_{k−1}); each value carries a few ulps of
                // rounding, so a decrease within 8 ulps is rounding, not a violation.
                let slack = 8.0 * f64::EPSILON * values[k];
                prop_assert!(
                    values[k] + slack >= values[k - 1],
                    "{name}: L({}) = {} < L({}) = {}", grid[k], values[k], grid[k - 1], values[k - 1]
                );
            }
        }
    }

    /// Property 3: Algorithms 1, 2–3 and 4–5 agree to 1e-12 relative, for α from 0 up to 10⁴.
    #[test]
    fn evaluators_agree(
        rows in weight_rows(1..=8),
        alphas in prop::collection::vec(prop_oneof![4 => alpha(), 1 => 800.0f64..10_000.0], 1..8),
    ) {
        evaluators_agree_at(&normalize(rows)?, &alphas)?;
    }

    /// Property 4: eq. (24) by brute force over all 2^n subsets, n ≤ 6, α ≤ 30.
    #[test]
    fn loss_equals_brute_force_over_all_subsets(
        rows in weight_rows(1..=6),
        alphas in prop::collection::vec(moderate_alpha(), 1..6),
    ) {
        matches_brute_force(normalize(rows)?, &alphas, brute_force_moderate)?;
    }

    /// Property 4, continued: the same brute force at α ∈ [800, 10⁴], in log form.
    #[test]
    fn loss_equals_brute_force_at_large_alpha(
        rows in weight_rows(1..=6),
        alphas in prop::collection::vec(800.0f64..10_000.0, 1..6),
    ) {
        matches_brute_force(normalize(rows)?, &alphas, brute_force_large)?;
    }

    /// Property 9: with no two disjoint-support rows, L(α) is finite and ≤ α even where e^α
    /// overflows a double.
    #[test]
    fn loss_is_finite_at_huge_alpha(
        rows in weight_rows(1..=8),
        alphas in prop::collection::vec(800.0f64..10_000.0, 1..8),
    ) {
        let m = normalize(rows)?;
        prop_assume!(!has_disjoint_rows(&m));
        for (name, l) in evaluators(&m) {
            for &a in &alphas {
                let v = l.loss(a);
                prop_assert!(v.is_finite() && (0.0..=a).contains(&v), "{name}: L({a}) = {v}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Theorems 6 and 7
// ---------------------------------------------------------------------------------------

/// Rows where rows `a` ≠ `b` have disjoint supports. `literal`: Theorem 7 as stated, row a
/// is the unit vector e_k and row b has a 0 in column k. Otherwise row a lives on the
/// columns of `mask` (which contains k) and row b on the others (which contain j ≠ k).
fn disjoint_rows() -> impl Strategy<Value = Vec<Vec<f64>>> {
    (2usize..=8).prop_flat_map(|n| {
        (
            prop::collection::vec(prop::collection::vec(weight(), n), n),
            (0..n, 1..n),
            (0..n, 1..n),
            prop::collection::vec(any::<bool>(), n),
            any::<bool>(),
        )
            .prop_map(move |(mut rows, (a, db), (k, dj), mut mask, literal)| {
                let (b, j) = ((a + db) % n, (k + dj) % n);
                mask[k] = true;
                mask[j] = false;
                if literal {
                    rows[a] = vec![0.0; n];
                    rows[a][k] = 1.0;
                    rows[b][k] = 0.0;
                } else {
                    (0..n).filter(|&c| !mask[c]).for_each(|c| rows[a][c] = 0.0);
                    (0..n).filter(|&c| mask[c]).for_each(|c| rows[b][c] = 0.0);
                    rows[a][k] += 0.5;
                }
                rows[b][j] += 0.5;
                rows
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Property 3, at sizes where the evaluators prune pairs against the best value or the
    /// hull found so far (the set-ups from n = 24 on: more than one block of 512 pairs):
    /// pruning changes nothing.
    #[test]
    fn evaluators_agree_when_pairs_are_pruned(
        rows in weight_rows(24..=40),
        alphas in prop::collection::vec(prop_oneof![4 => alpha(), 1 => 800.0f64..10_000.0], 1..5),
    ) {
        evaluators_agree_at(&normalize(rows)?, &alphas)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Theorem 6: all rows equal ⇒ L ≡ 0 (exactly), the supremum is ε itself and BPL_t = ε.
    #[test]
    fn equal_rows_give_zero_loss(
        row in (1usize..=8).prop_flat_map(|n| prop::collection::vec(weight(), n)),
        alphas in prop::collection::vec(prop_oneof![alpha(), 800.0f64..10_000.0], 1..8),
        eps in 0.001f64..5.0,
    ) {
        let m = normalize(vec![row.clone(); row.len()])?;
        for (name, l) in evaluators(&m) {
            for &a in &alphas {
                prop_assert_eq!(l.loss(a), 0.0, "{} at α = {}", name, a);
            }
        }
        let piece = PiecewiseLoss::new(&m);
        prop_assert!(piece.is_zero());
        prop_assert_eq!(piece.supremum(eps).unwrap(), Supremum::Bounded(eps));
        let s = LeakageSeries::new(&both_sides(&m), &[eps; 5]).unwrap();
        prop_assert_eq!(&s.bpl(), &vec![eps; 5]);
        prop_assert_eq!(&s.tpl(), &vec![eps; 5]);
    }

    /// Theorem 7: two rows with disjoint supports ⇒ L(α) = α (exactly), and the leakage is
    /// unbounded under any constant ε.
    #[test]
    fn disjoint_rows_give_full_loss(
        rows in disjoint_rows(),
        alphas in prop::collection::vec(prop_oneof![alpha(), 800.0f64..10_000.0], 1..8),
        eps in 0.001f64..5.0,
    ) {
        let m = normalize(rows)?;
        for (name, l) in evaluators(&m) {
            for &a in &alphas {
                prop_assert_eq!(l.loss(a), a, "{} at α = {}", name, a);
            }
        }
        let piece = PiecewiseLoss::new(&m);
        prop_assert!(piece.is_identity());
        prop_assert_eq!(piece.supremum(eps).unwrap(), Supremum::Unbounded);
    }
}
