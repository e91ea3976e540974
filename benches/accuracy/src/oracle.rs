//! The moving-average oracle: centred moving averages of the raw releases, whose best window
//! is chosen against the truth. No curator can choose so (the truth is private); it is the
//! bar any estimator of a stream should clear, since it uses no movement model at all.

/// The windows tried: 1, 3, 5, …, 21 steps (1 is the raw release itself).
pub const WINDOWS: [usize; 11] = [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21];

/// The centred moving average of `releases` (T rows of n values) over `window` steps (odd):
/// step t averages steps t − h..=t + h with h = (window − 1)/2, cut to the steps there are
/// at the ends of the stream.
pub fn centred_average(releases: &[Vec<f64>], window: usize) -> Vec<Vec<f64>> {
    let steps = releases.len();
    let cells = releases.first().map_or(0, Vec::len);
    let half = window / 2;
    // prefix[t][j] = Σ_{s < t} r_s[j]
    let mut prefix = vec![vec![0.0; cells]; steps + 1];
    for (t, row) in releases.iter().enumerate() {
        for j in 0..cells {
            prefix[t + 1][j] = prefix[t][j] + row[j];
        }
    }
    (0..steps)
        .map(|t| {
            let (lo, hi) = (t.saturating_sub(half), (t + half + 1).min(steps));
            let width = (hi - lo) as f64;
            (0..cells).map(|j| (prefix[hi][j] - prefix[lo][j]) / width).collect()
        })
        .collect()
}

/// The MSE per cell-step against `truth` of the centred moving average of every window of
/// [`WINDOWS`], in that order.
pub fn average_errors(releases: &[Vec<f64>], truth: &[Vec<f64>]) -> Vec<f64> {
    WINDOWS
        .iter()
        .map(|&w| tpl_compare::mse(&centred_average(releases, w), truth).unwrap_or(f64::NAN))
        .collect()
}

/// The window of [`WINDOWS`] whose mean error over runs is smallest, and that error:
/// `errors[r][k]` is run r's MSE for window `WINDOWS[k]`. `None` for no runs.
pub fn best_window(errors: &[Vec<f64>]) -> Option<(usize, f64)> {
    if errors.is_empty() {
        return None;
    }
    let runs = errors.len() as f64;
    WINDOWS
        .iter()
        .enumerate()
        .map(|(k, &w)| (w, errors.iter().map(|e| e[k]).sum::<f64>() / runs))
        .filter(|(_, e)| !e.is_nan())
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn averages_are_centred_and_cut_at_the_ends() {
        let r: Vec<Vec<f64>> = [1.0, 2.0, 3.0, 4.0, 10.0].iter().map(|&v| vec![v, 2.0 * v]).collect();
        assert_eq!(centred_average(&r, 1), r);
        let a = centred_average(&r, 3);
        assert_eq!(a[0], vec![1.5, 3.0]);
        assert_eq!(a[2], vec![3.0, 6.0]);
        assert_eq!(a[4], vec![7.0, 14.0]);
        let wide = centred_average(&r, 21);
        assert!(wide.iter().all(|row| row == &vec![4.0, 8.0]));
    }

    #[test]
    fn the_oracle_picks_the_window_closest_to_the_truth() {
        // A constant truth under alternating noise: the widest window wins; the raw release
        // (window 1) is never better than the best window.
        let truth = vec![vec![5.0]; 40];
        let releases: Vec<Vec<f64>> = (0..40).map(|t| vec![if t % 2 == 0 { 7.0 } else { 3.0 }]).collect();
        let errors = average_errors(&releases, &truth);
        assert_eq!(errors[0], 4.0);
        let (w, e) = best_window(&[errors.clone(), errors]).unwrap();
        assert!(e < 0.1 && w > 1, "{w} {e}");
        // A truth that moves as fast as the releases: window 1 wins.
        let (w, e) = best_window(&[average_errors(&releases, &releases)]).unwrap();
        assert_eq!((w, e), (1, 0.0));
        assert_eq!(best_window(&[]), None);
    }
}
