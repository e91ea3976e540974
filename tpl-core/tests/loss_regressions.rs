//! Regressions of L(α) as plain tests: minimised counterexamples the properties of
//! `loss_properties.rs` found in the evaluators (hull and pair-scan underflow, cancellation
//! above α = 700, Algorithm 1 stalling on ties), each checked against the brute force of
//! eq. (24).

mod brute_force;

use approx::relative_eq;
use brute_force::{brute_force_large, brute_force_moderate, evaluators};
use tpl_core::TransitionMatrix;
use tpl_core::test_util::SUBNORMAL_FLOOR;

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
