//! Error metrics: hand-computed values, scoring of repeated releases, and the refusals of
//! inputs that have no meaningful score.

use approx::assert_relative_eq;
use proptest::prelude::*;
use tpl_compare::{CompareError, mae, mre, mse};
use tpl_mechanisms::{LaplaceMechanism, Sample, Scripted, WEventParams, run};

/// The hand-computed 2 steps × 2 cells example; a zero count hits the cell's floor.
#[test]
fn metrics_two_by_two() {
    let truth = vec![vec![0.0, 4.0], vec![-2.0, 8.0]];
    let rel = vec![vec![1.0, 2.0], vec![-2.0, 11.0]];
    // errors 1, −2, 0, 3
    assert_relative_eq!(mae(&rel, &truth).unwrap(), 6.0 / 4.0);
    assert_relative_eq!(mse(&rel, &truth).unwrap(), 14.0 / 4.0);
    // Cell 0 totals −2 (no scale: floor 1), cell 1 totals 12 (floor 0.12):
    // 1/max(0, 1) + 2/4 + 0/max(−2, 1) + 3/8
    assert_relative_eq!(mre(&rel, &truth).unwrap(), (1.0 + 0.5 + 0.0 + 0.375) / 4.0);
}

/// Approximated steps are scored with the repeated release (nothing excluded, t = 1 included).
#[test]
fn metrics_score_repeated_releases() {
    let p = WEventParams::new(1.0, 3, 2.0).unwrap();
    let truth = vec![vec![10.0, 0.0], vec![12.0, 1.0], vec![9.0, 3.0]];
    let mut s = Sample::new(p, LaplaceMechanism::new(Scripted::new([1.0, -1.0])));
    let r = run(&mut s, &truth).unwrap();
    assert_eq!(r.releases, vec![vec![11.0, -1.0]; 3]);
    // errors: (1, −1), (−1, −2), (2, −4)
    assert_relative_eq!(mae(&r.releases, &truth).unwrap(), 11.0 / 6.0);
    assert_relative_eq!(mse(&r.releases, &truth).unwrap(), 27.0 / 6.0);
    // Floors 1 % of the cells' totals: 0.31 and 0.04.
    let want_mre = (1.0 / 10.0 + 1.0 / 0.04 + 1.0 / 12.0 + 2.0 / 1.0 + 2.0 / 9.0 + 4.0 / 3.0) / 6.0;
    assert_relative_eq!(mre(&r.releases, &truth).unwrap(), want_mre);
}

/// The benchmark's floor: one percent of the cell's total over the steps, so that a busy
/// cell's nearly empty step is not divided by almost nothing; a cell never occupied is
/// divided by one person.
#[test]
fn mre_divides_by_one_percent_of_the_cell_total() {
    let truth = vec![vec![1.0, 0.0], vec![999.0, 0.0]];
    let rel = vec![vec![6.0, 2.0], vec![999.0, 0.0]];
    // Cell 0: floor 10, so the step with 1 person is divided by 10, not by 1.
    assert_relative_eq!(mre(&rel, &truth).unwrap(), (5.0 / 10.0 + 2.0 / 1.0 + 0.0 + 0.0) / 4.0);
}

/// Regression: the metrics zipped releases with the truth and silently dropped the steps
/// and cells of the longer one, scoring a partial release as if it were whole; a shape
/// mismatch is now an error that names the step.
#[test]
fn metrics_refuse_streams_of_different_shapes() {
    let truth = vec![vec![1.0, 2.0], vec![3.0, 4.0]];
    let short = vec![vec![1.0, 2.0]];
    assert_eq!(mae(&short, &truth), Err(CompareError::StepsMismatch { releases: 1, truth: 2 }));
    let narrow = vec![vec![1.0, 2.0], vec![3.0]];
    assert_eq!(mse(&narrow, &truth), Err(CompareError::CellsMismatch { step: 2, releases: 1, truth: 2 }));
    let wide = vec![vec![1.0, 2.0, 9.0], vec![3.0, 4.0]];
    assert_eq!(mre(&wide, &truth), Err(CompareError::CellsMismatch { step: 1, releases: 3, truth: 2 }));
    let none: Vec<Vec<f64>> = Vec::new();
    assert_eq!(mae(&none, &none), Err(CompareError::EmptyStream { steps: 0, cells: 0 }));
}

fn stream(steps: usize, cells: usize) -> impl Strategy<Value = Vec<Vec<f64>>> {
    prop::collection::vec(prop::collection::vec(-1e6..1e6f64, cells), steps)
}

proptest! {
    /// Any difference in shape, in steps or in the cells of any one step, is refused by
    /// every metric.
    #[test]
    fn every_shape_mismatch_is_refused(
        truth in (1usize..6, 1usize..6).prop_flat_map(|(t, n)| stream(t, n)),
        extra_steps in 0usize..3,
        step in 0usize..6,
        cell_delta in prop_oneof![Just(-1i64), Just(1i64)],
    ) {
        let mut rel = truth.clone();
        if extra_steps > 0 {
            rel.extend(std::iter::repeat_n(truth[0].clone(), extra_steps));
        } else {
            let t = step % truth.len();
            if cell_delta > 0 { rel[t].push(0.0) } else { rel[t].pop(); }
        }
        prop_assert!(mae(&rel, &truth).is_err());
        prop_assert!(mse(&rel, &truth).is_err());
        prop_assert!(mre(&rel, &truth).is_err());
    }

    /// On equal shapes: MAE ≥ 0, MAE² ≤ MSE (Jensen), MRE ≤ MAE over the smallest floor, and
    /// a release equal to the truth scores 0.
    #[test]
    fn scores_are_consistent(
        (truth, rel) in (1usize..6, 1usize..6).prop_flat_map(|(t, n)| (stream(t, n), stream(t, n))),
    ) {
        let (a, s, r) = (mae(&rel, &truth).unwrap(), mse(&rel, &truth).unwrap(), mre(&rel, &truth).unwrap());
        prop_assert!(a >= 0.0 && r >= 0.0);
        prop_assert!(a * a <= s * (1.0 + 1e-12));
        let floor = (0..truth[0].len())
            .map(|j| truth.iter().map(|c| c[j]).sum::<f64>())
            .map(|total| if total > 0.0 { 0.01 * total } else { 1.0 })
            .fold(f64::INFINITY, f64::min);
        prop_assert!(r <= a / floor * (1.0 + 1e-12));
        prop_assert_eq!(mse(&truth, &truth).unwrap(), 0.0);
        prop_assert_eq!(mre(&truth, &truth).unwrap(), 0.0);
    }
}
