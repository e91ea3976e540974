use super::*;
use proptest::prelude::*;
use tpl_core::test_util::log_uniform;

/// The product term by term, in row order: the definition.
fn plain(q: &[f64], m: &TransitionMatrix) -> Vec<f64> {
    let n = q.len();
    (0..n).map(|j| (0..n).map(|i| q[i] * m.row(i)[j]).sum()).collect()
}

#[test]
fn propagation_is_a_vector_matrix_product() {
    let m = TransitionMatrix::new(vec![vec![0.9, 0.1], vec![0.2, 0.8]]).unwrap();
    let p = Mover::new(&m).step(&[3.0, 1.0]);
    assert!((p[0] - (0.75 * 0.9 + 0.25 * 0.2)).abs() < 1e-15);
    assert!((p[1] - (0.75 * 0.1 + 0.25 * 0.8)).abs() < 1e-15);
}

#[test]
fn smoothed_sparse_matrices_are_split_and_dense_ones_are_not() {
    let m = TransitionMatrix::smoothed_identity(50, 0.01).unwrap();
    match Mover::new(&m) {
        Mover::Split(s) => assert_eq!((s.rows.values.len(), s.columns.values.len()), (50, 50)),
        other => panic!("not split: {other:?}"),
    }
    let rows: Vec<Vec<f64>> =
        (0..8).map(|i| (0..8).map(|j| 1.0 + ((i * 8 + j) % 7) as f64).collect()).collect();
    let dense = TransitionMatrix::normalized(rows).unwrap();
    assert!(matches!(Mover::new(&dense), Mover::Dense(_)));
}

/// Every width adds in the same order: the dispatched dense product equals the portable
/// one to the bit, whatever the processor.
#[test]
fn dense_product_does_not_depend_on_the_vector_width() {
    for n in [1, 3, 4, 7, 33, 200] {
        let rows: Vec<Vec<f64>> =
            (0..n).map(|i| (0..n).map(|j| 1.0 + ((7 * i + 3 * j) % 11) as f64).collect()).collect();
        let m = TransitionMatrix::normalized(rows).unwrap();
        let q: Vec<f64> = (0..n).map(|i| (1 + i % 5) as f64 / n as f64).collect();
        let (fast, portable) = (dense_times(&q, &m), dense_times_portable(&q, &m));
        assert_eq!(
            fast.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            portable.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "n = {n}"
        );
    }
}

#[test]
fn reversal_of_a_stationary_chain_is_its_time_reversal() {
    // Two-state chain with stationary π = (2/3, 1/3) is reversible: B = P.
    let p = TransitionMatrix::new(vec![vec![0.9, 0.1], vec![0.2, 0.8]]).unwrap();
    let b = Mover::reversed(Mover::new(&p), &[2.0 / 3.0, 1.0 / 3.0]);
    for j in 0..2 {
        let mut unit = [0.0; 2];
        unit[j] = 1.0;
        let row = b.step(&unit);
        for i in 0..2 {
            assert!((row[i] - p.row(j)[i]).abs() < 1e-15, "row {j}: {row:?}");
        }
    }
    // A cell nobody reaches keeps its people: identity row.
    let p = TransitionMatrix::new(vec![vec![1.0, 0.0], vec![1.0, 0.0]]).unwrap();
    let b = Mover::reversed(Mover::new(&p), &[0.5, 0.5]);
    assert_eq!((b.step(&[1.0, 0.0]), b.step(&[0.0, 1.0])), (vec![0.5, 0.5], vec![0.0, 1.0]));
}

/// Sparse counts (a few cells per row, some rows empty) normalised and smoothed by s
/// (TKDE eq. 28), as `tpl estimate --smoothing s` builds them; weights with zeros.
fn smoothed_sparse() -> impl Strategy<Value = (TransitionMatrix, Vec<f64>)> {
    (1usize..120).prop_flat_map(|n| {
        (
            prop::collection::vec(prop::collection::vec((0..n, 1u32..1000), 0..6), n),
            prop_oneof![Just(0.0), log_uniform(-6.0, 3.0)],
            prop::collection::vec(prop_oneof![1 => Just(0.0), 4 => 0.0f64..1e4], n),
        )
            .prop_map(move |(cells, s, mut w)| {
                let rows: Vec<Vec<f64>> = cells
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let mut row = vec![0.0; n];
                        row[i] = if c.is_empty() { 1.0 } else { 0.0 };
                        for &(j, k) in c {
                            row[j] += f64::from(k);
                        }
                        row
                    })
                    .collect();
                let m = TransitionMatrix::normalized(rows).unwrap().smoothed(s).unwrap();
                if w.iter().all(|&v| v == 0.0) {
                    w[0] = 1.0;
                }
                (m, w)
            })
    })
}

proptest! {
    /// The split product equals the dense one within the bound of
    /// [docs/map.md](tpl_core::guide::map) §13, (2n + k_j + 3)·u relative (here 4(n + 2)·2⁻⁵² ≥
    /// it).
    #[test]
    fn split_propagation_is_the_dense_product((m, w) in smoothed_sparse()) {
        let n = m.n();
        let split = Mover::new(&m);
        // At most 7 excesses a row: split from n = 28 on.
        prop_assert!(n < 28 || matches!(split, Mover::Split(_)));
        let dense = Mover::Dense(&m);
        let (got, want) = (split.step(&w), dense.step(&w));
        let sum: f64 = w.iter().sum();
        let q: Vec<f64> = w.iter().map(|v| v / sum).collect();
        let exact = plain(&q, &m);
        let tolerance = 4.0 * (n + 2) as f64 * f64::EPSILON;
        for j in 0..n {
            prop_assert!((got[j] - want[j]).abs() <= tolerance * want[j], "column {}: {} vs {}", j, got[j], want[j]);
            prop_assert!((got[j] - exact[j]).abs() <= tolerance * exact[j], "column {}: {} vs {}", j, got[j], exact[j]);
        }
    }

    /// The reversal applied without forming B equals the product with B built entry by
    /// entry (π_i·P_ij/(π·P)_j, rows normalised, identity rows where π·P is 0), for
    /// split and dense forward matrices.
    #[test]
    fn reversal_is_the_product_with_the_formed_backward_matrix(
        (m, w) in smoothed_sparse(),
        occupancy in prop::collection::vec(prop_oneof![1 => Just(0.0), 3 => 0.0f64..1.0], 120),
    ) {
        let n = m.n();
        let mut pi = occupancy[..n].to_vec();
        if pi.iter().all(|&v| v == 0.0) {
            pi[n - 1] = 1.0;
        }
        let sum: f64 = pi.iter().sum();
        let pi: Vec<f64> = pi.iter().map(|v| v / sum).collect();
        let moved = plain(&pi, &m);
        let b: Vec<Vec<f64>> = (0..n)
            .map(|j| {
                let mut row: Vec<f64> = (0..n).map(|i| if moved[j] > 0.0 { pi[i] * m.row(i)[j] / moved[j] } else { 0.0 }).collect();
                let s: f64 = row.iter().sum();
                if s > 0.0 { row.iter_mut().for_each(|v| *v /= s) } else { row[j] = 1.0 }
                row
            })
            .collect();
        let b = TransitionMatrix::new(b).unwrap();
        let sum: f64 = w.iter().sum();
        let q: Vec<f64> = w.iter().map(|v| v / sum).collect();
        let want = plain(&q, &b);
        for mover in [Mover::reversed(Mover::new(&m), &pi), Mover::Reversed(Box::new(Reversal {
            forward: Mover::Dense(&m),
            occupancy: pi.clone(),
            moved: dense_times(&pi, &m),
        }))] {
            let got = mover.step(&w);
            for j in 0..n {
                prop_assert!((got[j] - want[j]).abs() <= 1e-12 * want[j].max(1e-300), "cell {}: {} vs {}", j, got[j], want[j]);
            }
        }
    }
}
