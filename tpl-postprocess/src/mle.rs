//! The MLE baseline `mle` ([docs/map.md](tpl_core::guide::map) §6): Lee, Wang, Kifer (KDD 2015)
//! maximum-likelihood post-processing under the sum constraint, with a unique answer.

use crate::error::Result;
use crate::renormalise::renormalise_to;
use crate::validate;

/// One step of the MLE baseline `mle` ([docs/map.md](tpl_core::guide::map) §6): the Euclidean
/// projection of r⁺ = max(r, 0) onto {x ≥ 0, Σx = N}.
///
/// # Proof definition
/// The minimisers of Σ_i |x_i − r_i| over {x ≥ 0, Σx = N} form a whole face; this returns its
/// least-squares point (a choice of this project, [docs/map.md](tpl_core::guide::map) §6), x_i =
/// max(r_i⁺ − τ, 0) with τ such that Σx = N (τ ≥ 0 when Σr⁺ ≥ N, so x ≤ r⁺; τ < 0 otherwise, so x ≥
/// r⁺). Hence Σ|x − r⁺| = |Σr⁺ − N|. It uses neither a budget, a prior nor correlation ("drops
/// temporal correlations", DBSec 2023 §6). N = 0 gives x = 0.
///
/// # Errors
/// [`NoCells`](crate::PostprocessError::NoCells),
/// [`BadRelease`](crate::PostprocessError::BadRelease) (non-finite r_i) or
/// [`BadTotal`](crate::PostprocessError::BadTotal) (N < 0 or non-finite).
///
/// # Runtime
/// O(n log n) (one sort).
///
/// ```
/// use tpl_postprocess::mle_step;
/// assert_eq!(mle_step(&[5.0, 0.0, 3.0], 4.0)?, vec![3.0, 0.0, 1.0]);
/// assert_eq!(mle_step(&[1.0, 1.0, 1.0], 6.0)?, vec![2.0, 2.0, 2.0]);
/// assert_eq!(mle_step(&[-2.0, 0.0, 7.0], 4.0)?, vec![0.0, 0.0, 4.0]);
/// # Ok::<(), tpl_postprocess::PostprocessError>(())
/// ```
pub fn mle_step(r: &[f64], total: f64) -> Result<Vec<f64>> {
    validate::release(r)?;
    validate::real_total(total)?;
    let mut x = solve(r, total);
    renormalise_to(total, r, &mut x);
    Ok(x)
}

/// The projection on validated input.
pub(crate) fn solve(r: &[f64], total: f64) -> Vec<f64> {
    let n = r.len();
    if total == 0.0 {
        return vec![0.0; n];
    }
    let mut u: Vec<f64> = r.iter().map(|&v| v.max(0.0)).collect();
    u.sort_unstable_by(|a, b| b.total_cmp(a));
    // The largest k with u_k > (Σ_{j≤k} u_j − N)/k; the condition holds exactly for a
    // prefix of k = 1, 2, …, and always for k = 1 (u_1 > u_1 − N as N > 0 — in exact
    // arithmetic: for u_1 ≫ N the rounded u_1 − N is u_1, so k = 1 is taken regardless).
    // τ = mean − N/k with mean = Σ_{j≤k} u_j/k, and x_i = (u_i − mean) + N/k, which keeps the
    // sum N where u_i − τ would round N away next to a huge u_i.
    let mut prefix = 0.0;
    let (mut mean, mut share) = (0.0, total);
    for (j, &uj) in u.iter().enumerate() {
        prefix += uj;
        let k = (j + 1) as f64;
        if j == 0 || uj > (prefix - total) / k {
            (mean, share) = (prefix / k, total / k);
        } else {
            break;
        }
    }
    r.iter().map(|&v| ((v.max(0.0) - mean) + share).max(0.0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_cases() {
        assert_eq!(mle_step(&[5.0, 0.0, 3.0], 4.0).unwrap(), vec![3.0, 0.0, 1.0]);
        assert_eq!(mle_step(&[1.0, 1.0, 1.0], 6.0).unwrap(), vec![2.0, 2.0, 2.0]);
        assert_eq!(mle_step(&[-2.0, 0.0, 7.0], 4.0).unwrap(), vec![0.0, 0.0, 4.0]);
        assert_eq!(mle_step(&[-2.0, 0.0, 7.0], 0.0).unwrap(), vec![0.0, 0.0, 0.0]);
        assert_eq!(mle_step(&[0.0, 0.0], 3.0).unwrap(), vec![1.5, 1.5]);
    }

    #[test]
    fn a_huge_release_keeps_the_total() {
        // u_1 − N rounds to u_1: the projection must still put N in the huge cell.
        assert_eq!(mle_step(&[1e300, -1e300, 0.0], 12.0).unwrap(), vec![12.0, 0.0, 0.0]);
        assert_eq!(mle_step(&[f64::MAX, 0.0, -f64::MAX], 1.0).unwrap(), vec![1.0, 0.0, 0.0]);
    }

    #[test]
    fn rejects_bad_input() {
        use crate::PostprocessError as E;
        assert_eq!(mle_step(&[], 1.0), Err(E::NoCells));
        assert!(matches!(mle_step(&[1.0, f64::NEG_INFINITY], 1.0), Err(E::BadRelease { cell: 2, .. })));
        assert_eq!(mle_step(&[1.0], -2.0), Err(E::BadTotal(-2.0)));
    }
}
