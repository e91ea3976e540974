//! The integer MAP estimator ([docs/map.md](tpl_core::guide::map) §4 and §12):
//! - equal to brute force over all compositions for n ≤ 3, N ≤ 60 (by x where the optimum is
//!   unique by a margin, by G otherwise);
//! - no single unit move between two cells lowers G, with G's change computed here from
//!   its definition (not from the solver's marginal-cost formula);
//! - Σx = N, x_i = 0 wherever p_i = 0, and the tie case of [docs/map.md](tpl_core::guide::map) §4.
//!
//! (That the large-N threshold selection returns exactly the heap's vector is a property
//! test inside the crate, where both are visible.)

use proptest::prelude::*;
use tpl_core::test_util::{distribution, log_uniform};
use tpl_postprocess::{map_integer_objective, map_integer_step};

/// ln k! by summing logs (independent of the library's Stirling series).
fn ln_fact(k: u64) -> f64 {
    (2..=k).map(|i| (i as f64).ln()).sum()
}

/// f_i(k) = a|k − r| + ln k! − k ln p (0 ln 0 = 0), from the definition.
fn term(k: u64, r: f64, p: f64, a: f64) -> f64 {
    let prior = if k == 0 {
        0.0
    } else if p > 0.0 {
        ln_fact(k) - k as f64 * p.ln()
    } else {
        f64::INFINITY
    };
    a * (k as f64 - r).abs() + prior
}

fn g_of(x: &[u64], r: &[f64], p: &[f64], a: f64) -> f64 {
    x.iter().zip(r).zip(p).map(|((&k, &ri), &pi)| term(k, ri, pi, a)).sum()
}

/// All x ∈ ℕⁿ with Σx = N.
fn compositions(n: usize, total: u64) -> Vec<Vec<u64>> {
    if n == 1 {
        return vec![vec![total]];
    }
    let mut out = Vec::new();
    for first in 0..=total {
        for mut rest in compositions(n - 1, total - first) {
            rest.insert(0, first);
            out.push(rest);
        }
    }
    out
}

/// A prior over n cells with some zero entries (uniform when all are).
fn prior(n: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(prop_oneof![1 => Just(0.0), 5 => 0.001f64..1.0], n).prop_map(|w| distribution(&w))
}

fn release(n: usize, max: f64) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(
        prop_oneof![2 => (0u32..80).prop_map(f64::from), 1 => -5.0f64..max, 1 => Just(0.0)],
        n,
    )
}

/// The prior's weight a: 0, or log-uniform on [1e-4, 10^1.5).
fn prior_weight() -> impl Strategy<Value = f64> {
    prop_oneof![1 => Just(0.0), 5 => log_uniform(-4.0, 1.5)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn equals_brute_force(
        (r, p) in (1usize..=3).prop_flat_map(|n| (release(n, 70.0), prior(n))),
        total in 0u64..=60,
        a in prior_weight(),
    ) {
        let x = map_integer_step(&r, &p, total, a).unwrap();
        let all = compositions(r.len(), total);
        let mut values: Vec<(f64, &Vec<u64>)> = all.iter().map(|y| (g_of(y, &r, &p, a), y)).collect();
        values.sort_by(|u, v| u.0.total_cmp(&v.0));
        let (best, best_x) = values[0];
        let g = g_of(&x, &r, &p, a);
        prop_assert!(g <= best + 1e-12 * best.abs().max(1.0), "G(x) = {g} > brute-force minimum {best} at {best_x:?}");
        let unique = values.len() == 1 || values[1].0 - best > 1e-9 * best.abs().max(1.0);
        if unique {
            prop_assert_eq!(&x, best_x);
        }
        // The library's objective agrees with the definition.
        let lib = map_integer_objective(&r, &p, a, &x).unwrap();
        prop_assert!((lib - g).abs() <= 1e-12 * g.abs().max(1.0) || (lib.is_infinite() && g.is_infinite()));
    }

    #[test]
    fn no_unit_move_lowers_g(
        (r, p) in (1usize..40).prop_flat_map(|n| (release(n, 5000.0), prior(n))),
        total in prop_oneof![0u64..100, 0u64..20_000, 0u64..2_000_000],
        a in prior_weight(),
    ) {
        let n = r.len();
        let x = map_integer_step(&r, &p, total, a).unwrap();
        prop_assert_eq!(x.iter().sum::<u64>(), total);
        for i in 0..n {
            if p[i] == 0.0 {
                prop_assert_eq!(x[i], 0);
            }
        }
        for i in (0..n).filter(|&i| x[i] > 0) {
            for j in (0..n).filter(|&j| j != i && p[j] > 0.0) {
                // ΔG = f_j(x_j + 1) − f_j(x_j) + f_i(x_i − 1) − f_i(x_i), each difference from
                // the definition: ln(k!) − ln((k−1)!) = ln k.
                let gain_j = a * ((x[j] + 1) as f64 - r[j]).abs() - a * (x[j] as f64 - r[j]).abs()
                    + ((x[j] + 1) as f64).ln() - p[j].ln();
                let loss_i = a * ((x[i] - 1) as f64 - r[i]).abs() - a * (x[i] as f64 - r[i]).abs()
                    - (x[i] as f64).ln() + p[i].ln();
                let d = gain_j + loss_i;
                let scale = 1e-12 * (1.0 + a * (1.0 + r[i].abs() + r[j].abs()) + p[i].ln().abs() + p[j].ln().abs()
                    + (x[i] as f64 + x[j] as f64 + 2.0).ln());
                prop_assert!(d >= -scale, "moving a unit from cell {i} to {j} lowers G by {}", -d);
            }
        }
    }
}

#[test]
fn tie_rule_and_hand_cases() {
    // Uniform prior, r = 0, n = 3, N = 4: bitwise-equal marginals, lower cell first.
    assert_eq!(map_integer_step(&[0.0; 3], &[1.0 / 3.0; 3], 4, 0.5).unwrap(), vec![2, 1, 1]);
    assert_eq!(map_integer_step(&[0.0; 3], &[1.0 / 3.0; 3], 5, 0.0).unwrap(), vec![2, 2, 1]);
    // n = 1 and N = 0.
    assert_eq!(map_integer_step(&[3.5], &[1.0], 9, 2.0).unwrap(), vec![9]);
    assert_eq!(map_integer_step(&[3.5, 1.0], &[0.5, 0.5], 0, 2.0).unwrap(), vec![0, 0]);
    // A large weight pins the integer release.
    assert_eq!(map_integer_step(&[3.0, 1.0, 0.0], &[0.2, 0.3, 0.5], 4, 1000.0).unwrap(), vec![3, 1, 0]);
    // p_i = 0 ⇒ x_i = 0 even with a huge release there.
    assert_eq!(map_integer_step(&[1e9, 0.0], &[0.0, 1.0], 7, 5.0).unwrap(), vec![0, 7]);
}
