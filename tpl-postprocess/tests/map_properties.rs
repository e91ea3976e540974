//! Optimality of the continuous MAP solver ([docs/map.md](tpl_core::guide::map) §3 and §12),
//! checked in ways that cannot pass by accident:
//! - the closed-form breakpoint solution equals an independent bisection on λ (written
//!   here from the definition of S(λ)) to 1e-12·N per cell;
//! - the returned point satisfies the optimality conditions: x_i = median(r_i, p_i e^{λ−a},
//!   p_i e^{λ+a}) for the returned λ (or, when λ is absent, x = r with a spread of g_i
//!   below 2a), Σx = N, x ≥ 0, x_i = 0 wherever p_i = 0;
//! - no feasible move of h = 1e-6·N between two cells lowers F (the change of F computed in
//!   a cancellation-free form), and neither N p nor the MLE point is better;
//! - the hand cases of [docs/map.md](tpl_core::guide::map) §3 and its useful facts (a = 0, r = 0,
//!   permutations, the e^{2a} ratio).

// Cell-indexed loops read like the conditions they check (x_i, p_i, r_i side by side).
#![allow(clippy::needless_range_loop)]

use approx::assert_abs_diff_eq;
use proptest::prelude::*;
use tpl_core::test_util::{distribution, log_uniform};
use tpl_postprocess::{MapStep, map_objective, map_step, mle_step};

/// Inverse-CDF Laplace(0, b) from u ∈ (0, 1).
fn laplace(u: f64, b: f64) -> f64 {
    tpl_mechanisms::laplace_inverse_cdf(u, b)
}

fn median(r: f64, lo: f64, hi: f64) -> f64 {
    r.max(lo.min(hi)).min(lo.max(hi))
}

/// x_i(λ) from the definition, in log space (independent of the library's scaling tricks).
fn x_at(r: &[f64], p: &[f64], a: f64, lambda: f64) -> Vec<f64> {
    r.iter()
        .zip(p)
        .map(|(&ri, &pi)| {
            if pi > 0.0 {
                median(ri, (pi.ln() + lambda - a).exp(), (pi.ln() + lambda + a).exp())
            } else {
                0.0
            }
        })
        .collect()
}

/// The cross-check of [docs/map.md](tpl_core::guide::map) §12: bisection on λ over [min(ln N, min
/// g) − a, max(ln N, max g) + a], halving until the midpoint equals an end point.
fn bisect(r: &[f64], p: &[f64], total: f64, a: f64) -> Vec<f64> {
    let g: Vec<f64> = r
        .iter()
        .zip(p)
        .filter(|(ri, pi)| **ri > 0.0 && **pi > 0.0)
        .map(|(ri, pi)| ri.ln() - pi.ln())
        .collect();
    let ln_n = total.ln();
    let mut lo = g.iter().fold(ln_n, |m, &v| m.min(v)) - a;
    let mut hi = g.iter().fold(ln_n, |m, &v| m.max(v)) + a;
    loop {
        let mid = 0.5 * (lo + hi);
        if mid == lo || mid == hi {
            break;
        }
        if x_at(r, p, a, mid).iter().sum::<f64>() < total {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    x_at(r, p, a, hi)
}

/// f_i(x + h) − f_i(x) for f_i(x) = a|x − r| + x ln(x/p) − x, without cancellation
/// (h may be negative; x + h ≥ 0; p > 0). Returns the change and the step actually taken
/// (y − x, exact for |h| ≤ x).
fn delta_f(x: f64, h: f64, r: f64, p: f64, a: f64) -> (f64, f64) {
    let y = x + h;
    let h = y - x;
    let entropy = if x > 0.0 && y > 0.0 {
        // y ln(y/p) − x ln(x/p) − h = x ln(y/x) + h ln(y/p) − h
        x * (h / x).ln_1p() + h * (y.ln() - p.ln()) - h
    } else if y > 0.0 {
        y * (y.ln() - p.ln()) - y
    } else {
        -(x * (x.ln() - p.ln()) - x)
    };
    // |y − r| − |x − r| without forming y − r when both sit on the same side of r.
    let absolute = if x > r && y >= r {
        h
    } else if x < r && y <= r {
        -h
    } else {
        (y - r).abs() - (x - r).abs()
    };
    (a * absolute + entropy, h)
}

/// One step's problem: release r, prior p, population N and weight a.
#[derive(Clone, Copy)]
struct Problem<'a> {
    r: &'a [f64],
    p: &'a [f64],
    total: f64,
    a: f64,
}

/// Asserts every optimality property of `s` for the problem (r, p, N, a).
fn check_optimal(r: &[f64], p: &[f64], total: f64, a: f64, s: &MapStep) -> Result<(), TestCaseError> {
    check_feasible(p, total, s)?;
    if total == 0.0 {
        prop_assert_eq!(s.lambda, None);
        return Ok(());
    }
    let problem = Problem { r, p, total, a };
    check_matches_bisection(problem, s)?;
    check_conditions(problem, s)?;
    check_no_improving_move(problem, s)?;
    check_beats_baselines(problem, s)
}

/// x is finite, non-negative, zero where p_i = 0, and sums to N.
fn check_feasible(p: &[f64], total: f64, s: &MapStep) -> Result<(), TestCaseError> {
    let n = p.len();
    prop_assert_eq!(s.x.len(), n);
    prop_assert!(s.x.iter().all(|v| v.is_finite() && *v >= 0.0), "x = {:?}", s.x);
    for i in 0..n {
        if p[i] == 0.0 {
            prop_assert_eq!(s.x[i], 0.0, "cell {} has p = 0", i);
        }
    }
    let sum: f64 = s.x.iter().sum();
    prop_assert!((sum - total).abs() <= 1e-12 * total.max(1.0), "Σx = {sum}, N = {total}");
    Ok(())
}

/// The closed form equals the independent bisection on λ to 1e-12·N per cell.
fn check_matches_bisection(problem: Problem<'_>, s: &MapStep) -> Result<(), TestCaseError> {
    let Problem { r, p, total, a } = problem;
    let n = r.len();
    let reference = bisect(r, p, total, a);
    for i in 0..n {
        prop_assert!(
            (s.x[i] - reference[i]).abs() <= 1e-12 * total,
            "cell {}: {} vs bisection {} (diff {:e})",
            i,
            s.x[i],
            reference[i],
            (s.x[i] - reference[i]).abs()
        );
    }
    Ok(())
}

/// The optimality conditions: every x_i is the median formula at the returned λ, or, when
/// λ is absent, every cell of positive prior sits at its release with a spread of g_i ≤ 2a.
fn check_conditions(problem: Problem<'_>, s: &MapStep) -> Result<(), TestCaseError> {
    let Problem { r, p, total, a } = problem;
    let n = r.len();
    match s.lambda {
        Some(lambda) => {
            let m = x_at(r, p, a, lambda);
            for i in 0..n {
                // Renormalisation to Σx = N moves cells by a few ulps of N
                // ([docs/map.md](tpl_core::guide::map) §11): a stored case moved a cell of
                // 1.3e-4 by one ulp of N = 5.87, 6.8e-12 of itself.
                let settled = 4.0 * (total - total.next_down());
                let scale = m[i].abs().max(s.x[i].abs()).max(1e-300);
                prop_assert!(
                    (s.x[i] - m[i]).abs() <= 1e-12 * scale + settled,
                    "cell {}: x = {} but median = {}",
                    i,
                    s.x[i],
                    m[i]
                );
            }
        }
        None => {
            let g: Vec<f64> = (0..n).filter(|&i| p[i] > 0.0).map(|i| r[i].ln() - p[i].ln()).collect();
            prop_assert!(g.iter().all(|v| v.is_finite()), "λ absent but some cell of A has r ≤ 0");
            let spread = g.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
                - g.iter().cloned().fold(f64::INFINITY, f64::min);
            prop_assert!(spread <= 2.0 * a, "λ absent but spread {spread} > 2a = {}", 2.0 * a);
            for i in 0..n {
                if p[i] > 0.0 {
                    prop_assert_eq!(s.x[i], r[i]);
                }
            }
        }
    }
    Ok(())
}

/// No move between two cells lowers F: h = 1e-6·N ([docs/map.md](tpl_core::guide::map) §12), and a
/// sharp h = 1e-9·x_i, whose second-order gain (≈ h/(2x) per unit moved) is small enough that a
/// multiplier off by 1e-9 shows as a first-order loss.
fn check_no_improving_move(problem: Problem<'_>, s: &MapStep) -> Result<(), TestCaseError> {
    let Problem { r, p, total, a } = problem;
    let n = r.len();
    for i in 0..n {
        if p[i] == 0.0 || s.x[i] == 0.0 {
            continue;
        }
        for j in 0..n {
            if j == i || p[j] == 0.0 {
                continue;
            }
            // Powers of two, so that x_i − h is exact; pairs where x_j + h rounds are
            // skipped (the move would not conserve Σx exactly, a first-order error).
            for (h, tol) in [(1e-6 * total, 1e-10), (1e-9 * s.x[i], 1e-12)] {
                let h = 2f64.powi(h.log2().floor() as i32);
                if s.x[i] < h || h == 0.0 {
                    continue;
                }
                let (out_i, taken) = delta_f(s.x[i], -h, r[i], p[i], a);
                let (in_j, added) = delta_f(s.x[j], h, r[j], p[j], a);
                if -taken != h || added != h {
                    continue;
                }
                let d = out_i + in_j;
                prop_assert!(d >= -tol * h, "moving {h} from cell {i} to {j} lowers F by {:e}·h", -d / h);
            }
        }
    }
    Ok(())
}

/// The sum of the magnitudes of F's terms at x: the scale of F's rounding error, which can be
/// far above |F| when the terms cancel.
fn objective_scale(r: &[f64], p: &[f64], a: f64, x: &[f64]) -> f64 {
    let term = |i: usize| {
        let entropy = if x[i] > 0.0 { (x[i] * (x[i] / p[i]).ln()).abs() } else { 0.0 };
        a * (x[i] - r[i]).abs() + entropy + x[i]
    };
    (0..x.len()).map(term).sum::<f64>().max(1.0)
}

/// Neither the prior mean N p nor the MLE point (both feasible) has a lower F, up to the
/// rounding of F at either point.
fn check_beats_baselines(problem: Problem<'_>, s: &MapStep) -> Result<(), TestCaseError> {
    let Problem { r, p, total, a } = problem;
    let f = map_objective(r, p, a, &s.x).unwrap();
    let mle = mle_step(r, total).unwrap();
    let tol = 1e-12 * objective_scale(r, p, a, &s.x).max(objective_scale(r, p, a, &mle));
    let prior_mean: Vec<f64> = p.iter().map(|v| total * v).collect();
    prop_assert!(f <= map_objective(r, p, a, &prior_mean).unwrap() + tol);
    let f_mle = map_objective(r, p, a, &mle).unwrap();
    prop_assert!(f <= f_mle + tol, "F(x) = {f} > F(mle) = {f_mle}");
    Ok(())
}

/// A random problem as [docs/map.md](tpl_core::guide::map) §12 asks: n ∈ 1..60, N ∈ 0..10⁶, a ∈ {0}
/// ∪ [1e-6, 1e3] log-uniform, r from Laplace noise on counts that sum to N, as raw (negative,
/// non-integer), clipped, or clipped and rounded releases, p with zero entries.
fn problem() -> impl Strategy<Value = (Vec<f64>, Vec<f64>, f64, f64)> {
    (1usize..60).prop_flat_map(|n| {
        (
            prop::collection::vec(prop_oneof![1 => Just(0.0), 4 => 0.0f64..1.0], n),
            prop::collection::vec(0.0f64..1.0, n),
            prop::collection::vec(0.000_001f64..0.999_999, n),
            prop_oneof![1 => Just(0.0), 1 => 0.0f64..100.0, 1 => 0.0f64..1e6, 1 => (0u32..1000).prop_map(f64::from)],
            prop_oneof![1 => Just(0.0), 6 => log_uniform(-6.0, 3.0)],
            0u8..3,
        )
            .prop_map(|(w, shares, noise, total, a, form)| {
                let p = distribution(&w);
                let sum_s: f64 = shares.iter().sum::<f64>().max(1e-12);
                let scale = if a > 0.0 { (1.0 / a).min(1e6) } else { 10.0 };
                let r: Vec<f64> = shares
                    .iter()
                    .zip(&noise)
                    .map(|(s, u)| {
                        let raw = total * s / sum_s + laplace(*u, scale);
                        match form {
                            0 => raw,
                            1 => raw.max(0.0),
                            _ => raw.max(0.0).round(),
                        }
                    })
                    .collect();
                (r, p, total, a)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn closed_form_is_optimal((r, p, total, a) in problem()) {
        let s = map_step(&r, &p, total, a).unwrap();
        check_optimal(&r, &p, total, a, &s)?;
    }

    /// Releases near the prior mean with a large weight: many cells at their release,
    /// including the everything-at case.
    #[test]
    fn cells_at_their_release((r, p, total, _a) in problem(), a in 0.5f64..50.0, jitter in 0u8..3) {
        let rounded: Vec<f64> = p.iter().map(|v| (total * v).round() + f64::from(jitter)).collect();
        let total = rounded.iter().sum::<f64>() + if jitter == 2 { 0.0 } else { f64::from(jitter) };
        let _ = r;
        let s = map_step(&rounded, &p, total, a).unwrap();
        check_optimal(&rounded, &p, total, a, &s)?;
    }

    #[test]
    fn equivariant_under_permutation((r, p, total, a) in problem(), seed in any::<u64>()) {
        let n = r.len();
        // A permutation from the seed (Fisher–Yates with an LCG).
        let mut perm: Vec<usize> = (0..n).collect();
        let mut state = seed;
        for i in (1..n).rev() {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            perm.swap(i, (state >> 33) as usize % (i + 1));
        }
        let rp: Vec<f64> = perm.iter().map(|&i| r[i]).collect();
        let pp: Vec<f64> = perm.iter().map(|&i| p[i]).collect();
        let x = map_step(&r, &p, total, a).unwrap().x;
        let xp = map_step(&rp, &pp, total, a).unwrap().x;
        for (k, &i) in perm.iter().enumerate() {
            prop_assert!((xp[k] - x[i]).abs() <= 1e-12 * total.max(1.0));
        }
    }

    /// x_i/p_i of two cells that are not at their release differ by at most e^{2a}.
    #[test]
    fn ratio_bound((r, p, total, a) in problem()) {
        let x = map_step(&r, &p, total, a).unwrap().x;
        let free: Vec<f64> = (0..r.len())
            .filter(|&i| p[i] > 0.0 && (x[i] - r[i]).abs() > 1e-9 * total.max(1.0) && x[i] > 1e-9 * total)
            .map(|i| x[i].ln() - p[i].ln())
            .collect();
        if free.len() >= 2 {
            let spread = free.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
                - free.iter().cloned().fold(f64::INFINITY, f64::min);
            prop_assert!(spread <= 2.0 * a + 1e-6, "spread {spread} > 2a = {}", 2.0 * a);
        }
    }
}

#[test]
fn hand_cases() {
    // p = (½, ½), r = (10, 0), N = 10, a = ln 2 → x = (8, 2), λ = ln 8, F = 40 ln 2 − 10.
    let s = map_step(&[10.0, 0.0], &[0.5, 0.5], 10.0, 2f64.ln()).unwrap();
    assert_abs_diff_eq!(s.x[..], [8.0, 2.0][..], epsilon = 1e-12 * 10.0);
    assert!((s.lambda.unwrap() - 8f64.ln()).abs() < 1e-12);
    let f = map_objective(&[10.0, 0.0], &[0.5, 0.5], 2f64.ln(), &s.x).unwrap();
    assert!((f - (40.0 * 2f64.ln() - 10.0)).abs() < 1e-12);
    // p = (½, ½), r = (6, 4), N = 10, a = 1 → x = r, λ absent.
    let s = map_step(&[6.0, 4.0], &[0.5, 0.5], 10.0, 1.0).unwrap();
    assert_eq!((s.x, s.lambda), (vec![6.0, 4.0], None));
    // r = 0 → N p, for every a; a = 0 → N p.
    let p = [0.1, 0.2, 0.3, 0.4];
    for a in [0.0, 1e-6, 0.3, 7.0, 1e3] {
        assert_abs_diff_eq!(
            map_step(&[0.0; 4], &p, 50.0, a).unwrap().x[..],
            [5.0, 10.0, 15.0, 20.0][..],
            epsilon = 1e-12 * 50.0
        );
    }
    assert_abs_diff_eq!(
        map_step(&[9.0, -2.0, 0.5, 40.0], &p, 50.0, 0.0).unwrap().x[..],
        [5.0, 10.0, 15.0, 20.0][..],
        epsilon = 1e-12 * 50.0
    );
    // n = 1 → (N); N = 0 → 0.
    assert_eq!(map_step(&[17.5], &[1.0], 12.0, 0.4).unwrap().x, vec![12.0]);
    assert_eq!(map_step(&[17.5, 3.0], &[0.5, 0.5], 0.0, 0.4).unwrap().x, vec![0.0, 0.0]);
    // a = 1000, p = (0.2, 0.3, 0.5), r = (3, 1, 0), N = 4 → (3, 1, 0), no overflow or NaN.
    let s = map_step(&[3.0, 1.0, 0.0], &[0.2, 0.3, 0.5], 4.0, 1000.0).unwrap();
    assert_abs_diff_eq!(s.x[..], [3.0, 1.0, 0.0][..], epsilon = 1e-12 * 4.0);
    assert!(s.lambda.is_none_or(f64::is_finite));
}

#[test]
fn billion_users() {
    let total = 1e9;
    let r = [2.9e8 + 1234.0, 4.1e8 - 77.0, 1e8 + 5.5, 2e8 + 31_000.0];
    let p = [0.3, 0.4, 0.1, 0.2];
    for a in [1e-3, 0.05, 1.0, 30.0] {
        let s = map_step(&r, &p, total, a).unwrap();
        check_optimal(&r, &p, total, a, &s).unwrap();
    }
}

#[test]
fn extreme_inputs_stay_finite() {
    // docs/map.md §3: any finite input with a ≤ 10⁶, p_i ≥ 1e-300, N ≤ 2⁵³: no NaN or infinity and
    // Σx = N within 1e-9 relative.
    let p = [1e-300, 1e-200, 0.5 - 1e-200, 0.5];
    let releases: [[f64; 4]; 4] =
        [[1e15, 0.0, -1e300, 3.0], [0.0; 4], [1e300, 1e-300, 5.0, 1e-10], [9e15, 9e15, 9e15, 9e15]];
    for r in releases {
        for a in [0.0, 1e-6, 1.0, 1e3, 1e6] {
            for total in [1.0, 1e3, 9007199254740992.0] {
                let s = map_step(&r, &p, total, a).unwrap();
                assert!(s.x.iter().all(|v| v.is_finite() && *v >= 0.0), "r={r:?} a={a} N={total}: {:?}", s.x);
                let sum: f64 = s.x.iter().sum();
                assert!((sum - total).abs() <= 1e-9 * total, "r={r:?} a={a} N={total}: Σx = {sum}");
                assert!(s.lambda.is_none_or(f64::is_finite));
            }
        }
    }
}
