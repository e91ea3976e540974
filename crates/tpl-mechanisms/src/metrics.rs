//! Error metrics of a release against the truth (w-event spec §5).

/// Mean absolute error over all steps and cells: (1/(T·d)) Σ_t Σ_j |r_t[j] − c_t[j]|.
pub fn mae(releases: &[Vec<f64>], truth: &[Vec<f64>]) -> f64 {
    mean_over(releases, truth, |e, _| e.abs())
}

/// Mean squared error: (1/(T·d)) Σ_t Σ_j (r_t[j] − c_t[j])².
pub fn mse(releases: &[Vec<f64>], truth: &[Vec<f64>]) -> f64 {
    mean_over(releases, truth, |e, _| e * e)
}

/// Mean relative error with floor δ > 0: (1/(T·d)) Σ |r − c| / max(|c|, δ).
pub fn mre(releases: &[Vec<f64>], truth: &[Vec<f64>], floor: f64) -> f64 {
    mean_over(releases, truth, |e, c| e.abs() / c.abs().max(floor))
}

fn mean_over(releases: &[Vec<f64>], truth: &[Vec<f64>], f: impl Fn(f64, f64) -> f64) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for (r, c) in releases.iter().zip(truth) {
        for (x, y) in r.iter().zip(c) {
            sum += f(x - y, *y);
            n += 1;
        }
    }
    if n == 0 { 0.0 } else { sum / n as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_two_by_two() {
        let truth = vec![vec![0.0, 4.0], vec![2.0, 8.0]];
        let rel = vec![vec![1.0, 2.0], vec![2.0, 11.0]];
        // errors 1, −2, 0, 3
        assert_eq!(mae(&rel, &truth), 6.0 / 4.0);
        assert_eq!(mse(&rel, &truth), 14.0 / 4.0);
        // 1/max(0,1) + 2/4 + 0/2 + 3/8
        assert_eq!(mre(&rel, &truth, 1.0), (1.0 + 0.5 + 0.0 + 0.375) / 4.0);
    }
}
