//! The MLE baseline is the Euclidean projection of r⁺ onto {x ≥ 0, Σx = N}
//! ([docs/map.md](tpl_core::guide::map) §6, §12):
//! - it minimises Σ|x − r| over the feasible set: Σ|x − r⁺| = |Σr⁺ − N|;
//! - Σx = N, x ≥ 0;
//! - projection optimality: x_i = r⁺_i − τ wherever x_i > 0 and r⁺_i ≤ τ wherever x_i = 0,
//!   for one τ; and no feasible point of a random sample is closer to r⁺.

use proptest::prelude::*;
use tpl_postprocess::mle_step;

fn release() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(prop_oneof![1 => Just(0.0), 1 => -50.0f64..0.0, 4 => 0.0f64..1000.0], 1..50)
}

fn total() -> impl Strategy<Value = f64> {
    prop_oneof![1 => Just(0.0), 3 => 0.0f64..5000.0, 1 => (0u32..3000).prop_map(f64::from)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn is_an_l1_minimiser_and_the_projection(r in release(), total in total(), w in prop::collection::vec(0.0f64..1.0, 50)) {
        let x = mle_step(&r, total).unwrap();
        let rp: Vec<f64> = r.iter().map(|v| v.max(0.0)).collect();
        let scale = rp.iter().sum::<f64>() + total + 1.0;
        prop_assert!(x.iter().all(|v| v.is_finite() && *v >= 0.0));
        prop_assert!((x.iter().sum::<f64>() - total).abs() <= 1e-12 * scale);
        let l1: f64 = x.iter().zip(&rp).map(|(a, b)| (a - b).abs()).sum();
        let gap = (rp.iter().sum::<f64>() - total).abs();
        prop_assert!((l1 - gap).abs() <= 1e-12 * scale, "Σ|x − r⁺| = {l1}, |Σr⁺ − N| = {gap}");
        // One τ for every cell (the KKT conditions of the projection).
        if total > 0.0 {
            let positive: Vec<usize> = (0..x.len()).filter(|&i| x[i] > 0.0).collect();
            prop_assert!(!positive.is_empty());
            let tau = rp[positive[0]] - x[positive[0]];
            for &i in &positive {
                prop_assert!((rp[i] - x[i] - tau).abs() <= 1e-12 * scale);
            }
            for i in (0..x.len()).filter(|&i| x[i] == 0.0) {
                prop_assert!(rp[i] <= tau + 1e-12 * scale, "cell {i}: r⁺ = {} > τ = {tau} but x = 0", rp[i]);
            }
            // A random feasible point is never closer to r⁺.
            let wsum: f64 = w[..x.len()].iter().sum::<f64>().max(1e-12);
            let y: Vec<f64> = w[..x.len()].iter().map(|v| total * v / wsum).collect();
            let dx: f64 = x.iter().zip(&rp).map(|(a, b)| (a - b).powi(2)).sum();
            let dy: f64 = y.iter().zip(&rp).map(|(a, b)| (a - b).powi(2)).sum();
            prop_assert!(dx <= dy * (1.0 + 1e-12) + 1e-9);
        } else {
            prop_assert!(x.iter().all(|&v| v == 0.0));
        }
    }
}

#[test]
fn documented_cases() {
    assert_eq!(mle_step(&[5.0, 0.0, 3.0], 4.0).unwrap(), vec![3.0, 0.0, 1.0]);
    assert_eq!(mle_step(&[1.0, 1.0, 1.0], 6.0).unwrap(), vec![2.0, 2.0, 2.0]);
    assert_eq!(mle_step(&[-2.0, 0.0, 7.0], 4.0).unwrap(), vec![0.0, 0.0, 4.0]);
}
