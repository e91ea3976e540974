//! Dense n×n linear algebra on row-major slices for the Kalman baseline
//! ([docs/map.md](tpl_core::guide::map) §14): products, the Cholesky factor of a symmetric positive
//! definite matrix and solves with it. Loops are ordered so that the innermost one runs over
//! contiguous memory and vectorises.

/// c = a·b for row-major n×n matrices (i-k-j order: each row of c is a sum of rows of b).
pub(crate) fn times(a: &[f64], b: &[f64], n: usize, c: &mut [f64]) {
    c.fill(0.0);
    for i in 0..n {
        let ci = &mut c[i * n..(i + 1) * n];
        for (k, &aik) in a[i * n..(i + 1) * n].iter().enumerate() {
            if aik == 0.0 {
                continue;
            }
            for (cij, &bkj) in ci.iter_mut().zip(&b[k * n..(k + 1) * n]) {
                *cij += aik * bkj;
            }
        }
    }
}

/// c = aᵀ·b for row-major n×n matrices (k-i-j order).
pub(crate) fn transpose_times(a: &[f64], b: &[f64], n: usize, c: &mut [f64]) {
    c.fill(0.0);
    for k in 0..n {
        let bk = &b[k * n..(k + 1) * n];
        for (i, &aki) in a[k * n..(k + 1) * n].iter().enumerate() {
            if aki == 0.0 {
                continue;
            }
            for (cij, &bkj) in c[i * n..(i + 1) * n].iter_mut().zip(bk) {
                *cij += aki * bkj;
            }
        }
    }
}

/// Replaces a by (a + aᵀ)/2, removing the asymmetry rounding leaves in a covariance.
pub(crate) fn symmetrize(a: &mut [f64], n: usize) {
    for i in 0..n {
        for j in i + 1..n {
            let v = 0.5 * (a[i * n + j] + a[j * n + i]);
            a[i * n + j] = v;
            a[j * n + i] = v;
        }
    }
}

/// The lower Cholesky factor l (l·lᵀ = a) of a symmetric matrix, written into `l` (its upper
/// triangle set to 0); `false` when a is not numerically positive definite (a pivot ≤ 0 or
/// not finite).
pub(crate) fn cholesky(a: &[f64], n: usize, l: &mut [f64]) -> bool {
    l.fill(0.0);
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = l[i * n..i * n + j].iter().zip(&l[j * n..j * n + j]).map(|(x, y)| x * y).sum();
            let d = a[i * n + j] - s;
            if i == j {
                if !(d > 0.0 && d.is_finite()) {
                    return false;
                }
                l[i * n + i] = d.sqrt();
            } else {
                l[i * n + j] = d / l[j * n + j];
            }
        }
    }
    true
}

/// Solves l·y = b in place (b becomes y) for a lower triangular l.
pub(crate) fn forward_solve(l: &[f64], n: usize, b: &mut [f64]) {
    for i in 0..n {
        let row = &l[i * n..i * n + i];
        let s: f64 = row.iter().zip(&b[..i]).map(|(x, y)| x * y).sum();
        b[i] = (b[i] - s) / l[i * n + i];
    }
}

/// Solves lᵀ·x = y in place (y becomes x) for a lower triangular l.
pub(crate) fn backward_solve(l: &[f64], n: usize, y: &mut [f64]) {
    for i in (0..n).rev() {
        let xi = y[i] / l[i * n + i];
        y[i] = xi;
        for k in 0..i {
            y[k] -= l[i * n + k] * xi;
        }
    }
}

/// Solves (l·lᵀ)·X = B for the n columns of the row-major n×n matrix b, in place: each row
/// of the work is a right-hand side, so this solves for Xᵀ when b holds Bᵀ (for a symmetric
/// B the two agree).
pub(crate) fn solve_rows(l: &[f64], n: usize, b: &mut [f64]) {
    for row in b.chunks_exact_mut(n) {
        forward_solve(l, n, row);
        backward_solve(l, n, row);
    }
}

/// out = x·a for a row vector x and a row-major n×n matrix (a sum of the rows of a).
pub(crate) fn row_times(x: &[f64], a: &[f64], n: usize, out: &mut [f64]) {
    out.fill(0.0);
    for (&xi, row) in x.iter().zip(a.chunks_exact(n)) {
        if xi == 0.0 {
            continue;
        }
        for (o, &v) in out.iter_mut().zip(row) {
            *o += xi * v;
        }
    }
}

/// y = a·x for a row-major n×n matrix.
pub(crate) fn times_vector(a: &[f64], x: &[f64], n: usize, y: &mut [f64]) {
    for (yi, row) in y.iter_mut().zip(a.chunks_exact(n)) {
        *yi = row.iter().zip(x).map(|(p, q)| p * q).sum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spd(n: usize) -> Vec<f64> {
        // a = g·gᵀ + I for a fixed g.
        let g: Vec<f64> = (0..n * n).map(|k| ((k * 7 + 3) % 11) as f64 / 11.0 - 0.4).collect();
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                a[i * n + j] = (0..n).map(|k| g[i * n + k] * g[j * n + k]).sum::<f64>() + f64::from(i == j);
            }
        }
        a
    }

    /// `spd(n)` and its Cholesky factor, which must exist.
    fn factored(n: usize) -> (Vec<f64>, Vec<f64>) {
        let a = spd(n);
        let mut l = vec![0.0; n * n];
        assert!(cholesky(&a, n, &mut l));
        (a, l)
    }

    /// The transpose of the n×n row-major matrix `a`.
    fn transposed(a: &[f64], n: usize) -> Vec<f64> {
        let mut at = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                at[i * n + j] = a[j * n + i];
            }
        }
        at
    }

    #[test]
    fn cholesky_reproduces_the_matrix() {
        let n = 6;
        let (a, l) = factored(n);
        let lt = transposed(&l, n);
        let mut back = vec![0.0; n * n];
        times(&l, &lt, n, &mut back);
        for (x, y) in back.iter().zip(&a) {
            assert!((x - y).abs() < 1e-12, "{x} vs {y}");
        }
    }

    #[test]
    fn cholesky_refuses_an_indefinite_matrix() {
        let a = [1.0, 2.0, 2.0, 1.0];
        let mut l = [0.0; 4];
        assert!(!cholesky(&a, 2, &mut l));
    }

    #[test]
    fn solves_invert_the_product() {
        let n = 5;
        let (a, l) = factored(n);
        let x: Vec<f64> = (0..n).map(|i| i as f64 - 1.5).collect();
        let mut b = vec![0.0; n];
        times_vector(&a, &x, n, &mut b);
        forward_solve(&l, n, &mut b);
        backward_solve(&l, n, &mut b);
        for (u, v) in b.iter().zip(&x) {
            assert!((u - v).abs() < 1e-12);
        }
        let mut m = a.clone();
        solve_rows(&l, n, &mut m);
        for i in 0..n {
            for j in 0..n {
                assert!((m[i * n + j] - f64::from(i == j)).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn transposed_product_matches_the_plain_one() {
        let n = 4;
        let a: Vec<f64> = (0..n * n).map(|k| k as f64 * 0.5 - 3.0).collect();
        let b: Vec<f64> = (0..n * n).map(|k| (k % 5) as f64).collect();
        let at = transposed(&a, n);
        let (mut c1, mut c2) = (vec![0.0; n * n], vec![0.0; n * n]);
        times(&at, &b, n, &mut c1);
        transpose_times(&a, &b, n, &mut c2);
        assert_eq!(c1, c2);
    }
}
