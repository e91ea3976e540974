//! Property-based tests of `tpl-core` (proptest), over random row-stochastic matrices with
//! n = 1..=8 states: dense, sparse (many exact zeros), with duplicate rows, with all rows
//! equal, with near-duplicate rows and with entries spanning 300 orders of magnitude.
//!
//! Where each property comes from (theorem numbers of the TKDE paper, as in
//! `docs/model.md` §3–5):
//! 1. `loss_is_between_zero_and_alpha` — 0 ≤ L(α) ≤ α (stated after eq. 24: the optimal
//!    subset S = ∅ gives 0, and q_S ≤ 1, d_S ≥ 0 bound the ratio by 1 + x = e^α).
//! 2. `loss_is_non_decreasing` — L is non-decreasing in α (every candidate
//!    log((1 + x q_S)/(1 + x d_S)) with q_S ≥ d_S is, and L is their maximum).
//! 3. `evaluators_agree` — Algorithm 1 (`DirectLoss`), Algorithms 2–3 (`PairTableLoss`) and
//!    Algorithms 4–5 (`PiecewiseLoss`) compute the same function, eq. (24);
//!    `evaluators_agree_when_pairs_are_pruned` checks the same for n = 24..40, where the
//!    evaluators settle most pairs by their support function (`docs/model.md` §8).
//! 4. `loss_equals_brute_force_over_all_subsets` (α ≤ 30) and
//!    `loss_equals_brute_force_at_large_alpha` (α ≥ 800) — eq. (24) taken literally: the
//!    maximum over ordered pairs of distinct rows and all 2^n subsets S; this checks
//!    Theorem 5, Corollary 2 and Theorem 8 (the optimal S is a prefix of the states sorted by
//!    q_i/d_i), on which all three evaluators rely.
//! 5. `equal_rows_give_zero_loss` (Theorem 6) and `disjoint_rows_give_full_loss` (Theorem 7,
//!    in its literal "a column with a 1 and a 0" form and generalised to two rows with
//!    disjoint supports).
//! 6. `bpl_increases_to_supremum` and `bpl_converges_to_supremum` — under a constant ε,
//!    BPL_t (eq. 13) increases to the supremum of Theorem 11 (Algorithm 6).
//! 7. `tpl_and_window_identities` — TPL_t = BPL_t + FPL_t − ε_t (eq. 11) and Theorem 3:
//!    a window of one step leaks TPL_t, the whole horizon leaks Σ ε_t, and any window leaks
//!    at least the TPL of each of its steps.
//! 8. `accountant_matches_batch_series` — the streaming `LeakageAccountant` (its incremental
//!    maxima of TPL and of the window leakage included, bit for bit) is the batch
//!    `LeakageSeries` computed online (same evaluator, same arithmetic: bit-identical).
//! 9. `loss_is_finite_at_huge_alpha` — for α ∈ [800, 10⁴] (where e^α overflows a double)
//!    L(α) stays finite and ≤ α when no two rows have disjoint supports (`docs/model.md` §3,
//!    "Numerics").
//!
//! At the end, plain `#[test]` regressions: minimised counterexamples these properties found
//! in the evaluators (hull and pair-scan underflow, cancellation above α = 700, Algorithm 1
//! stalling on ties). `tests/properties.proptest-regressions` keeps proptest's seeds of the
//! failures. The file runs in about two seconds with `cargo test --release`.

use approx::relative_eq;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use tpl_core::{
    Budgets, CompactSeries, DirectLoss, LeakageAccountant, LeakageSeries, LossEvaluator, PairTableLoss,
    PiecewiseLoss, Supremum, TransitionMatrix,
};

// ---------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------

/// One raw (unnormalised) weight: an exact zero, a uniform value, exactly 1, or a value
/// 10^−u with u up to 300 (entries of wildly different magnitudes).
fn weight() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => Just(0.0),
        6 => 0.0f64..1.0,
        1 => Just(1.0),
        1 => (0.0f64..300.0).prop_map(|u| 10f64.powf(-u)),
    ]
}

/// How the rows of a generated matrix relate to each other.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// Independent rows.
    Plain,
    /// Row i is a copy of row `assign[i]`: duplicate rows.
    Duplicates,
    /// Every row is row 0 (Theorem 6).
    AllEqual,
    /// Every row is row 0 with each entry scaled by 1 + η, |η| ≤ 10^−k: nearly equal rows,
    /// so L is tiny and any cancellation in its evaluation shows.
    NearDuplicates,
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        5 => Just(Shape::Plain),
        2 => Just(Shape::Duplicates),
        1 => Just(Shape::AllEqual),
        2 => Just(Shape::NearDuplicates),
    ]
}

/// Unnormalised rows of an n×n matrix for n in `sizes`, in one of the [`Shape`]s.
fn weight_rows(sizes: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Vec<Vec<f64>>> {
    sizes.prop_flat_map(|n| {
        (
            prop::collection::vec(prop::collection::vec(weight(), n), n),
            shape(),
            prop::collection::vec(0..n, n),
            prop::collection::vec(prop::collection::vec(-1.0f64..1.0, n), n),
            2i32..12,
        )
            .prop_map(|(rows, shape, assign, eta, k)| match shape {
                Shape::Plain => rows,
                Shape::Duplicates => assign.iter().map(|&a| rows[a].clone()).collect(),
                Shape::AllEqual => vec![rows[0].clone(); rows.len()],
                Shape::NearDuplicates => {
                    let scale = 10f64.powi(-k);
                    eta.iter()
                        .map(|e| rows[0].iter().zip(e).map(|(w, e)| w * (1.0 + e * scale)).collect())
                        .collect()
                }
            })
    })
}

/// Backward and forward weights (each present with probability 0.8) over the same n ≤ 8
/// states: the series refuse matrices of different sizes.
#[allow(clippy::type_complexity)]
fn matrix_pair() -> impl Strategy<Value = (Option<Vec<Vec<f64>>>, Option<Vec<Vec<f64>>>)> {
    (1usize..=8).prop_flat_map(|n| {
        (prop::option::weighted(0.8, weight_rows(n..=n)), prop::option::weighted(0.8, weight_rows(n..=n)))
    })
}

/// Normalises generated weights with [`TransitionMatrix::normalized`], rejecting the case
/// (what `prop_assume!` does) when a row is all zeros.
fn normalize(rows: Vec<Vec<f64>>) -> Result<TransitionMatrix, TestCaseError> {
    TransitionMatrix::normalized(rows).map_err(|e| TestCaseError::reject(format!("{e}")))
}

/// α for the loss properties: mostly [0, 50], some [50, 2000], some 0 and some tiny
/// (down to 1e-300, where x = e^α − 1 = α and relative precision is all that is left).
fn alpha() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => 0.0f64..50.0,
        2 => 50.0f64..2000.0,
        1 => Just(0.0),
        1 => (-300.0f64..-2.0).prop_map(|e| 10f64.powf(e)),
    ]
}

/// α ≤ 30, for the brute force in the e^α form.
fn moderate_alpha() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => 0.0f64..30.0,
        1 => Just(0.0),
        1 => (-300.0f64..-2.0).prop_map(|e| 10f64.powf(e)),
    ]
}

/// A budget sequence of length 1..=`max_len`, with some steps that publish nothing (ε = 0).
fn budgets(max_len: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(prop_oneof![1 => Just(0.0), 4 => 0.0f64..2.0, 1 => 1e-6f64..1e-2], 1..=max_len)
}

// ---------------------------------------------------------------------------------------
// Reference computations, independent of the crate's candidate/envelope machinery
// ---------------------------------------------------------------------------------------

/// Two rows with disjoint supports (Theorem 7 applies).
fn has_disjoint_rows(m: &TransitionMatrix) -> bool {
    (0..m.n()).any(|a| {
        (0..m.n()).any(|b| a != b && m.row(a).iter().zip(m.row(b)).all(|(&q, &d)| q == 0.0 || d == 0.0))
    })
}

/// (Σ_{i∈S} d_i, Σ_{i∈S} (q_i − d_i), Σ_{i∉S} q_i) for the subset S given as a bit mask. The
/// gap is summed from the differences q_i − d_i and 1 − q_S from the entries outside S, so
/// neither is formed by subtracting two nearly equal sums.
fn subset_sums(q: &[f64], d: &[f64], mask: u32) -> (f64, f64, f64) {
    let (mut d_s, mut gap, mut q_out) = (0.0, 0.0, 0.0);
    for i in 0..q.len() {
        if mask & (1 << i) != 0 {
            d_s += d[i];
            gap += q[i] - d[i];
        } else {
            q_out += q[i];
        }
    }
    (d_s, gap, q_out)
}

/// The maximum of `value(q, d, mask)` over ordered pairs of distinct rows and all 2^n
/// subsets, and 0 (S = ∅).
fn brute_force(m: &TransitionMatrix, value: impl Fn(&[f64], &[f64], u32) -> f64) -> f64 {
    let n = m.n();
    let mut best = 0.0f64;
    for a in 0..n {
        for b in 0..n {
            if a == b {
                continue;
            }
            for mask in 1..(1u32 << n) {
                best = best.max(value(m.row(a), m.row(b), mask));
            }
        }
    }
    best
}

/// Eq. (24) by enumeration with x = e^α − 1 formed explicitly, so for α ≤ 700 (x finite; the
/// properties use it for α ≤ 30): log((1 + x q_S)/(1 + x d_S)) = log1p(x (q_S − d_S)/(1 + x d_S)),
/// which keeps full relative precision when q_S and d_S nearly cancel and when α is tiny.
fn brute_force_moderate(m: &TransitionMatrix, alpha: f64) -> f64 {
    let x = alpha.exp_m1();
    brute_force(m, |q, d, mask| {
        let (d_s, gap, _) = subset_sums(q, d, mask);
        if gap <= 0.0 { 0.0 } else { (x * gap / (1.0 + x * d_s)).ln_1p() }
    })
}

/// Eq. (24) by enumeration, for α ≥ 800 where e^α overflows. With 1 + x p = (1 − p) + p e^α
/// and r(p) = (1 − p) e^{−α}/p = (1 − p)·exp(−α − ln p):
/// - d_S > 0: log((1 + x q_S)/(1 + x d_S)) = log1p(δ/d_S) + log1p(r(q_S)) − log1p(r(d_S)),
///   δ = q_S − d_S, so that log(q_S/d_S) does not cancel for nearly equal sums;
/// - d_S = 0: log(1 + x q_S) = α + ln q_S + log1p(r(q_S)).
fn brute_force_large(m: &TransitionMatrix, alpha: f64) -> f64 {
    let r = |p: f64, one_minus_p: f64| one_minus_p * (-alpha - p.ln()).exp();
    brute_force(m, |q, d, mask| {
        let (d_s, gap, q_out) = subset_sums(q, d, mask);
        if gap <= 0.0 {
            return 0.0;
        }
        let q_s = d_s + gap;
        if d_s == 0.0 {
            alpha + q_s.ln() + r(q_s, q_out).ln_1p()
        } else {
            let d_out: f64 = (0..q.len()).filter(|i| mask & (1 << i) == 0).map(|i| d[i]).sum();
            (gap / d_s).ln_1p() + r(q_s, q_out).ln_1p() - r(d_s, d_out).ln_1p()
        }
    })
}

/// Absolute floor of the relative comparisons: it only matters for subnormal results (α
/// near 1e-300 makes L(α) itself subnormal, where a relative tolerance of 1e-12 is finer
/// than the spacing of representable numbers); everywhere else the comparison is purely
/// relative, which is what the evaluators promise even for L ≈ 1e-10.
const SUBNORMAL_FLOOR: f64 = 1e-300;

/// The three evaluators of one matrix.
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

fn evaluators(m: &TransitionMatrix) -> [(&'static str, Box<dyn LossEvaluator>); 3] {
    [
        ("direct", Box::new(DirectLoss::new(m))),
        ("pair-table", Box::new(PairTableLoss::new(m))),
        ("piecewise", Box::new(PiecewiseLoss::new(m))),
    ]
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
        let s = LeakageSeries::from_matrices(Some(&m), Some(&m), &[eps; 5]).unwrap();
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

// ---------------------------------------------------------------------------------------
// Series, supremum, windows, accountant
// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Property 6: under constant ε, BPL_t is non-decreasing and bounded by the Theorem 11
    /// supremum whenever that is finite (any matrix, sparse ones included).
    #[test]
    fn bpl_increases_to_supremum(rows in weight_rows(1..=8), eps in 0.001f64..3.0, t in 1usize..2000) {
        let m = normalize(rows)?;
        let s = LeakageSeries::from_matrices(Some(&m), None, &vec![eps; t]).unwrap();
        for k in 1..t {
            // Exactly non-decreasing in real numbers (L is, and BPL_2 = L(ε) + ε ≥ ε); once
            // the fixed point is reached in floating point, successive values may differ by
            // the rounding of one evaluation of L.
            prop_assert!(
                s.bpl()[k] + 8.0 * f64::EPSILON * s.bpl()[k] >= s.bpl()[k - 1],
                "BPL_{} = {} < BPL_{} = {}", k + 1, s.bpl()[k], k, s.bpl()[k - 1]
            );
        }
        if let Supremum::Bounded(sup) = PiecewiseLoss::new(&m).supremum(eps).unwrap() {
            let top = s.bpl()[t - 1];
            prop_assert!(top <= sup * (1.0 + 1e-12), "BPL_{t} = {top} > supremum {sup}");
        }
    }

    /// Property 6, continued: for Laplacian-smoothed matrices (s ≥ 0.05, eq. 28; every entry
    /// is then ≥ 0.05/1.4, L′ stays below ~0.93 and the recursion contracts fast) the supremum
    /// is bounded and BPL_T at T = 20000 has reached it.
    #[test]
    fn bpl_converges_to_supremum(rows in weight_rows(1..=8), s in 0.05f64..5.0, eps in 0.01f64..3.0) {
        let m = normalize(rows)?.smoothed(s).unwrap();
        let t = 20_000;
        let series = LeakageSeries::from_matrices(Some(&m), None, &vec![eps; t]).unwrap();
        let sup = PiecewiseLoss::new(&m).supremum(eps).unwrap();
        let Supremum::Bounded(sup) = sup else {
            return Err(TestCaseError::fail(format!("smoothed matrix has unbounded supremum: {m:?}")));
        };
        let last = series.bpl()[t - 1];
        prop_assert!(relative_eq!(last, sup, epsilon = SUBNORMAL_FLOOR, max_relative = 1e-9), "BPL_{t} = {last}, supremum {sup}");
    }

    /// Laplacian smoothing (eq. 28) gives a row-stochastic matrix for every finite s ≥ 0,
    /// from 1e-300 to the largest double: no row sum overflows (s = 1e308 once gave rows of
    /// zeros), each row equals (p + s)/Σ(p + s) (computed naively where that cannot
    /// overflow), and a huge s gives the uniform matrix.
    #[test]
    fn smoothing_is_stochastic_for_every_s(rows in weight_rows(1..=8), log_s in -300.0f64..308.25) {
        let m = normalize(rows)?;
        let s = 10f64.powf(log_s).min(f64::MAX);
        let smoothed = m.smoothed(s).unwrap();
        let n = m.n();
        prop_assert!(TransitionMatrix::new(smoothed.to_rows()).is_ok(), "s = {s:e}: {smoothed:?}");
        for (row, out) in m.rows().zip(smoothed.rows()) {
            if s < 1e300 {
                let total: f64 = row.iter().map(|p| p + s).sum();
                for (p, q) in row.iter().zip(out) {
                    prop_assert!(relative_eq!(*q, (p + s) / total, max_relative = 1e-12), "s = {s:e}: {q} vs {}", (p + s) / total);
                }
            }
            if s > 1e20 {
                prop_assert!(out.iter().all(|q| relative_eq!(*q, 1.0 / n as f64, max_relative = 1e-12)), "s = {s:e}: {out:?}");
            }
        }
    }

    /// Property 7: TPL_t = BPL_t + FPL_t − ε_t (eq. 11) and Theorem 3's windows, for random
    /// budget sequences with zeros and random (or no) backward / forward knowledge.
    #[test]
    fn tpl_and_window_identities(
        (pb, pf) in matrix_pair(),
        eps in budgets(200),
        w_pick in any::<prop::sample::Index>(),
    ) {
        let pb = pb.map(normalize).transpose()?;
        let pf = pf.map(normalize).transpose()?;
        let s = LeakageSeries::from_matrices(pb.as_ref(), pf.as_ref(), &eps).unwrap();
        let t_len = eps.len();
        for t in 0..t_len {
            // Equal up to the order of the two floating-point operations (the crate may add
            // BPL to FPL − ε, or BPL + FPL then subtract ε): two roundings, each at most half
            // an ulp of a value no larger than BPL + FPL.
            let (b, f, e) = (s.bpl()[t], s.fpl()[t], s.epsilon()[t]);
            prop_assert!(
                (s.tpl()[t] - (b + f - e)).abs() <= 2.0 * f64::EPSILON * (b + f),
                "TPL_{} = {} but BPL + FPL − ε = {}", t + 1, s.tpl()[t], b + f - e
            );
            prop_assert!(s.tpl()[t] >= 0.0 && s.tpl()[t] >= s.bpl()[t].max(s.fpl()[t]) * (1.0 - 2.0 * f64::EPSILON));
        }
        prop_assert_eq!(&s.window_leakage(1).unwrap(), &s.tpl());

        // A bound computed by the recursion BPL_t = L(BPL_{t−1}) + ε_t carries one rounding
        // per step, whereas window sums are compensated: allow T ulps of relative slack.
        let slack = |v: f64| v * (t_len as f64 + 4.0) * f64::EPSILON;
        let total: f64 = eps.iter().sum();
        let whole = s.window_leakage(t_len).unwrap();
        prop_assert_eq!(whole.len(), 1);
        prop_assert!(whole[0] + slack(total) >= total, "horizon leakage {} < Σε = {total}", whole[0]);
        // Window leakage is rounded outward by one ulp (window.rs), so even an all-zero
        // window reports the smallest subnormal rather than 0.
        prop_assert!(
            whole[0] <= (total + slack(total)).next_up(),
            "horizon leakage {} > Σε = {total}", whole[0]
        );

        // Every window leaks at least the TPL of each of its steps.
        for w in [t_len, w_pick.index(t_len) + 1] {
            let windows = s.window_leakage(w).unwrap();
            prop_assert_eq!(windows.len(), t_len - w + 1);
            for (start, &v) in windows.iter().enumerate() {
                for k in start..start + w {
                    prop_assert!(
                        v + slack(v) >= s.tpl()[k],
                        "window {w} at {}: {v} < TPL_{} = {}", start + 1, k + 1, s.tpl()[k]
                    );
                }
            }
        }
    }

    /// Property 8: the streaming accountant reproduces the batch series bit for bit when both
    /// use the piecewise evaluator, at every prefix of the stream.
    #[test]
    fn accountant_matches_batch_series(
        (pb, pf) in matrix_pair(),
        eps in budgets(300),
    ) {
        let pb = pb.map(normalize).transpose()?;
        let pf = pf.map(normalize).transpose()?;
        let lb = pb.as_ref().map(PiecewiseLoss::new);
        let lf = pf.as_ref().map(PiecewiseLoss::new);
        let batch = |budgets: &[f64]| {
            CompactSeries::compute(
                lb.as_ref().map(|l| l as &dyn LossEvaluator),
                lf.as_ref().map(|l| l as &dyn LossEvaluator),
                Budgets::PerStep(budgets.to_vec()),
            )
            .map(LeakageSeries::from)
            .unwrap()
        };
        let full = batch(&eps);
        let w = 1 + eps.len() % 13;
        let mut acc = LeakageAccountant::new(pb.as_ref(), pf.as_ref()).with_window(w).unwrap();
        prop_assert!(acc.series().is_none());
        for (t, &e) in eps.iter().enumerate() {
            let would = acc.max_tpl_with(e).unwrap();
            prop_assert_eq!(acc.push(e).unwrap(), full.bpl()[t]);
            // The incremental maxima are the batch audit's, bit for bit, at every step.
            let prefix = batch(&eps[..=t]);
            prop_assert_eq!(would.to_bits(), prefix.max_tpl().to_bits());
            prop_assert_eq!(acc.max_tpl().unwrap().to_bits(), prefix.max_tpl().to_bits());
            let window = prefix.max_window_leakage(w.min(t + 1)).unwrap();
            prop_assert_eq!(acc.max_window_leakage().unwrap().unwrap().to_bits(), window.to_bits());
            if t % 37 == 0 {
                prop_assert_eq!(acc.series().unwrap(), prefix);
            }
        }
        prop_assert_eq!(acc.bpl(), full.bpl());
        prop_assert_eq!(acc.series().unwrap(), full.clone());
        // The evaluator `from_matrices` picks agrees to rounding (it may be Algorithm 1).
        let picked = LeakageSeries::from_matrices(pb.as_ref(), pf.as_ref(), &eps).unwrap();
        for t in 0..eps.len() {
            prop_assert!(relative_eq!(picked.tpl()[t], full.tpl()[t], epsilon = SUBNORMAL_FLOOR, max_relative = 1e-12), "TPL_{}: {} vs {}", t + 1, picked.tpl()[t], full.tpl()[t]);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Regressions: minimised counterexamples the properties above found in tpl-core
// ---------------------------------------------------------------------------------------

/// Asserts that all three evaluators give `expected` at α to 1e-12 relative.
fn assert_all_evaluators(m: &TransitionMatrix, alpha: f64, expected: f64) {
    for (name, l) in evaluators(m) {
        let v = l.loss(alpha);
        assert!(
            relative_eq!(v, expected, epsilon = SUBNORMAL_FLOOR, max_relative = 1e-12),
            "{name}: L({alpha}) = {v}, expected {expected}"
        );
    }
}

/// Found by `evaluators_agree` / `loss_equals_brute_force_over_all_subsets`: with entries
/// near 1e-170 the hull's orientation products (≈ 1e-340) underflowed to 0, every point
/// looked collinear and the hull kept the wrong vertex: L(500) came out as log(5/3) instead
/// of log 5 (envelope.rs).
#[test]
fn regression_tiny_entries_keep_their_hull_vertex() {
    let rows = [1.0, 2.0, 3.0, 5.0, 1.5].iter().map(|c| vec![c * 1e-170, 1.0, 0.0, 0.0, 0.0]).collect();
    let m = TransitionMatrix::normalized(rows).unwrap();
    for alpha in [500.0, 1000.0] {
        assert_all_evaluators(&m, alpha, 5f64.ln());
    }
    assert_all_evaluators(&m, 300.0, brute_force_moderate(&m, 300.0));
}

/// Found by `loss_equals_brute_force_at_large_alpha` (pair-table): the per-pair scan picked
/// its steepest state by comparing products of 1e-134 and 1e-240 entries, which underflowed,
/// so the steeper state was never a candidate (chains.rs, rewritten since).
#[test]
fn regression_tiny_entries_of_different_scales() {
    let m = TransitionMatrix::normalized(vec![
        vec![2.3677469511815004e-134, 0.5593640992975498, 2.430930409300775e-240],
        vec![2.3677469511815004e-134, 0.555147961742162, 2.430930409300775e-240],
        vec![2.3677469511815004e-134, 0.5593640992975498, 2.417210177600213e-240],
    ])
    .unwrap();
    assert_all_evaluators(&m, 800.0, brute_force_large(&m, 800.0));
}

/// Found by `loss_is_non_decreasing`: above α = 700 a candidate's value was
/// log(q + 1/x) − log(d + 1/x), which cancels when q_S ≈ d_S (here both ≈ 2.6e-293, so each
/// logarithm is ≈ −673): L dropped by 1.7e-10 relative from α = 700 to the next double
/// (candidate.rs).
#[test]
fn regression_no_cancellation_above_alpha_700() {
    let m = TransitionMatrix::normalized(vec![
        vec![1.1031587294726078e-293, 0.4179594777810424],
        vec![1.1031587294726078e-293, 0.4177180477997969],
    ])
    .unwrap();
    for (name, l) in evaluators(&m) {
        let (below, above) = (l.loss(700.0), l.loss(700.0f64.next_up()));
        assert!(above + 8.0 * f64::EPSILON * above >= below, "{name}: {above} < {below}");
    }
    assert_all_evaluators(&m, 800.0, brute_force_large(&m, 800.0));
}

/// Found by `loss_is_non_decreasing` (direct): Algorithm 1's iteration kept state 0 in
/// S = {0, 2} because q_0/d_0 ties with λ = (1 + x q_S)/(1 + x d_S) to 69 digits (q_2 ≈ 2e-69,
/// d_2 = 0), and stopped at L = 0.48 instead of log(1 + x q_2) ≈ 541.8 at α = 700
/// (direct.rs).
#[test]
fn regression_direct_does_not_stall_on_a_tie() {
    let r = vec![0.46938132440794167, 0.7726192175049555, 0.0, 0.0];
    let m = TransitionMatrix::normalized(vec![
        r.clone(),
        r.clone(),
        r,
        vec![0.4643109209998917, 0.29591109822842315, 1.5319352910950664e-69, 0.0],
    ])
    .unwrap();
    for alpha in [700.0f64.next_down(), 700.0, 800.0] {
        let expected =
            if alpha <= 700.0 { brute_force_moderate(&m, alpha) } else { brute_force_large(&m, alpha) };
        assert!(expected > 500.0);
        assert_all_evaluators(&m, alpha, expected);
    }
}

/// Found by `loss_equals_brute_force_over_all_subsets` (direct): for two nearly equal rows
/// L ≈ 5.9e-10, and Algorithm 1 compared q_i with e^λ*·d_i, where e^λ* rounded next to 1
/// cannot resolve levels closer than 1e-16; it missed the better pair by 2e-7 relative
/// (direct.rs).
#[test]
fn regression_direct_resolves_small_losses() {
    let m = TransitionMatrix::normalized(vec![
        vec![1.000000000972899, 1.0000000007890009],
        vec![0.9999999990095257, 1.0],
    ])
    .unwrap();
    for alpha in [1.0, 27.550547567025575] {
        assert_all_evaluators(&m, alpha, brute_force_moderate(&m, alpha));
    }
    assert_all_evaluators(&m, 800.0, brute_force_large(&m, 800.0));
}

/// Found by `evaluators_agree` and `loss_equals_brute_force_at_large_alpha` (direct), after
/// the fix above: the test for a state tied with λ = e^level used a fixed relative width,
/// but λ inherits the absolute rounding of level, a relative error that grows with level
/// (≈ 3e-14 at level 300). At S = {1, 2} (d_2 = 0, q_2 ≈ 1e-87) state 1's ratio ties with λ
/// to 86 digits and was not recognised as tied: L(800) came out ≈ 299.6 instead of
/// 800 + log q_2 ≈ 600.8 (direct.rs).
#[test]
fn regression_direct_tie_width_grows_with_level() {
    for rows in [
        vec![
            vec![0.6686467239712084, 1.53480416012329e-131, 0.0],
            vec![0.9365889131358334, 0.396292905852057, 4.127237963582331e-87],
            vec![0.6686467239712084, 1.53480416012329e-131, 0.0],
        ],
        vec![
            vec![5.222122410810903e-223, 0.9163767141495704, 0.0],
            vec![0.8349226518134402, 0.9580905711450219, 1.26033153759214e-264],
            vec![0.8349226518134402, 0.9580905711450219, 1.26033153759214e-264],
        ],
    ] {
        let m = TransitionMatrix::normalized(rows).unwrap();
        for alpha in [800.0, 1879.442357384686] {
            assert_all_evaluators(&m, alpha, brute_force_large(&m, alpha));
        }
    }
}
