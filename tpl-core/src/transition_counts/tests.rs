use super::*;

#[test]
fn backward_is_the_column_normalised_transpose() {
    // User a: 0 → 1 → 1; user b: 0 → 0 → 1.
    let c = TransitionCounts::from_paths(3, &[vec![0, 0], vec![1, 0], vec![1, 1]]).unwrap();
    let b = c.backward().unwrap();
    // State 1 at t was reached from 0 twice and from 1 once.
    assert_eq!(b.matrix.row(1), &[2.0 / 3.0, 1.0 / 3.0, 0.0]);
    assert_eq!(b.matrix.row(0), &[1.0, 0.0, 0.0]);
    assert_eq!(b.empty_rows, vec![2], "state 2 is never entered");
    let f = c.forward().unwrap();
    assert_eq!(f.empty_rows, vec![2]);
    assert_eq!(f.matrix.row(2), &[0.0, 0.0, 1.0]);
}

/// The entry-wise sum of several counts over n states.
fn total(n: usize, parts: &[TransitionCounts]) -> Vec<u64> {
    (0..n * n).map(|k| parts.iter().map(|c| c.count(k / n, k % n)).sum()).collect()
}

fn flat(c: &TransitionCounts) -> Vec<u64> {
    total(c.n(), std::slice::from_ref(c))
}

#[test]
fn a_range_counts_only_the_moves_within_it() {
    // One user: 0 → 1 → 2 → 2 → 0 (steps 1..5).
    let path: Vec<Vec<usize>> = [0, 1, 2, 2, 0].iter().map(|&s| vec![s]).collect();
    let c = TransitionCounts::from_steps(3, &path, Steps::new(2, 4).unwrap()).unwrap();
    // Steps 2..4 hold 1 → 2 and 2 → 2; 0 → 1 (into step 2) and 2 → 0 (out of 4) are not theirs.
    assert_eq!(flat(&c), vec![0, 0, 0, 0, 0, 1, 0, 0, 1]);
    // The range of every step is the whole stream; a one-step range has no move.
    let all = TransitionCounts::from_steps(3, &path, Steps::all(5).unwrap()).unwrap();
    assert_eq!(all, TransitionCounts::from_paths(3, &path).unwrap());
    let one = TransitionCounts::from_steps(3, &path, Steps::new(5, 5).unwrap()).unwrap();
    assert_eq!(flat(&one), vec![0; 9]);
    // Equal to counting a stream that holds only those steps.
    assert_eq!(c, TransitionCounts::from_paths(3, &path[1..4]).unwrap());
}

#[test]
fn a_range_past_the_stream_or_a_bad_step_outside_it_is_refused() {
    let path = vec![vec![0, 1], vec![1, 1], vec![1, 0]];
    assert_eq!(
        TransitionCounts::from_steps(2, &path, Steps::new(2, 4).unwrap()),
        Err(CoreError::StepRangeOutside { range: "2..4".into(), steps: 3 })
    );
    assert_eq!(
        TransitionCounts::from_steps(2, &[], Steps::new(1, 1).unwrap()),
        Err(CoreError::StepRangeOutside { range: "1..1".into(), steps: 0 })
    );
    // A state out of range at step 3 is named with its step in the stream, even outside 1..2.
    let bad = vec![vec![0, 1], vec![1, 1], vec![1, 2]];
    assert_eq!(
        TransitionCounts::from_steps(2, &bad, Steps::new(1, 2).unwrap()),
        Err(CoreError::StateOutOfRange { state: 2, n: 2 })
    );
    let ragged = vec![vec![0, 1], vec![1, 1], vec![1]];
    assert_eq!(
        TransitionCounts::from_steps(2, &ragged, Steps::new(1, 2).unwrap()),
        Err(CoreError::StreamWidth { step: 3, users: 1, expected: 2 })
    );
    assert_eq!(TransitionCounts::from_paths(2, &[]).map(|c| flat(&c)), Ok(vec![0; 4]));
}

use proptest::prelude::*;

proptest! {
    /// Splitting a stream at the range A..B: the counts before it, of it and after it,
    /// plus the moves across its two boundaries (A − 1 → A and B → B + 1), are the
    /// counts of the whole stream.
    #[test]
    fn a_range_and_its_complements_add_up_to_the_whole_stream(
        (n, paths, a, b) in (1usize..5, 1usize..4, 1usize..12).prop_flat_map(|(n, users, steps)| {
            let paths = prop::collection::vec(prop::collection::vec(0..n, users), steps);
            (Just(n), paths, 1..=steps, 1..=steps)
        })
    ) {
        let (a, b) = (a.min(b), a.max(b));
        let steps = paths.len();
        let range = |first: usize, last: usize| {
            TransitionCounts::from_steps(n, &paths, Steps::new(first, last).unwrap()).unwrap()
        };
        let mut parts = vec![range(a, b)];
        if a > 1 {
            parts.push(range(1, a - 1));
            parts.push(range(a - 1, a)); // the moves into step a
        }
        if b < steps {
            parts.push(range(b + 1, steps));
            parts.push(range(b, b + 1)); // the moves out of step b
        }
        let whole = TransitionCounts::from_paths(n, &paths).unwrap();
        prop_assert_eq!(total(n, &parts), flat(&whole));
        // Each range is the count of a stream holding only its steps.
        prop_assert_eq!(&parts[0], &TransitionCounts::from_paths(n, &paths[a - 1..b]).unwrap());
        let moves: u64 = flat(&parts[0]).iter().sum();
        prop_assert_eq!(moves, ((b - a) * paths[0].len()) as u64);
    }
}

#[test]
fn smoothing_an_estimate_keeps_its_empty_rows() {
    let c = TransitionCounts::from_paths(2, &[vec![0], vec![0]]).unwrap();
    let f = c.forward().unwrap();
    assert_eq!(f.empty_rows, vec![1]);
    let s = f.clone().smoothed(Some(1.0)).unwrap();
    assert_eq!(
        (s.matrix.row(0).to_vec(), s.matrix.row(1).to_vec()),
        (vec![2.0 / 3.0, 1.0 / 3.0], vec![1.0 / 3.0, 2.0 / 3.0])
    );
    assert_eq!(s.empty_rows, vec![1]);
    assert_eq!(f.clone().smoothed(None).unwrap(), f);
    assert_eq!(f.smoothed(Some(-1.0)), Err(CoreError::BadSmoothing(-1.0)));
}

#[test]
fn counts_fed_move_by_move_and_renumbered_are_the_counts_of_the_renumbered_stream() {
    // Two users: 0 → 2 → 2 and 1 → 1 → 0, fed one move at a time.
    let mut c = TransitionCounts::new(3).unwrap();
    for (from, to) in [(0, 2), (1, 1), (2, 2), (1, 0)] {
        c.add(from, to, 1).unwrap();
    }
    assert_eq!(c, TransitionCounts::from_paths(3, &[vec![0, 1], vec![2, 1], vec![2, 0]]).unwrap());
    // Renumbered 0 → 1, 1 → 2, 2 → 0 among 4 states.
    let r = c.relabeled(&[1, 2, 0], 4).unwrap();
    assert_eq!(r, TransitionCounts::from_paths(4, &[vec![1, 2], vec![0, 2], vec![0, 1]]).unwrap());
    // Two states renamed alike add up; a count stays at 2⁶⁴ − 1.
    assert_eq!(c.relabeled(&[0, 0, 0], 1).unwrap().count(0, 0), 4);
    c.add(0, 0, u64::MAX).unwrap();
    c.add(0, 0, 1).unwrap();
    assert_eq!(c.count(0, 0), u64::MAX);
}

#[test]
fn moves_out_of_range_are_refused() {
    let mut c = TransitionCounts::new(2).unwrap();
    assert_eq!(c.add(0, 2, 1), Err(CoreError::StateOutOfRange { state: 2, n: 2 }));
    assert_eq!(c.add(5, 0, 1), Err(CoreError::StateOutOfRange { state: 5, n: 2 }));
    c.add(1, 0, 1).unwrap();
    // State 1 has a move but no new name; a new name past n.
    assert_eq!(c.relabeled(&[0], 2), Err(CoreError::StateOutOfRange { state: 1, n: 1 }));
    assert_eq!(c.relabeled(&[0, 3], 3), Err(CoreError::StateOutOfRange { state: 3, n: 3 }));
    assert_eq!(c.relabeled(&[0, 1], 0), Err(CoreError::EmptyMatrix));
    // A state without moves needs no name.
    assert_eq!(c.relabeled(&[7, 0], 8).map(|r| r.count(0, 7)), Ok(1));
}

#[test]
fn rows_whose_counts_add_past_u64_are_normalised() {
    let mut c = TransitionCounts::new(2).unwrap();
    c.add(0, 0, u64::MAX).unwrap();
    c.add(0, 1, u64::MAX).unwrap();
    c.add(1, 1, 1).unwrap();
    let f = c.forward().unwrap();
    assert_eq!((f.matrix.row(0).to_vec(), f.empty_rows), (vec![0.5, 0.5], vec![]));
    let b = c.backward().unwrap();
    // Column 1 holds 2⁶⁴ − 1 and 1: 2⁶⁴ moves into cell 1.
    assert_eq!(b.matrix.row(1), &[1.0, 1.0 / 2f64.powi(64)][..]);
}

#[test]
fn bad_streams_are_rejected() {
    assert_eq!(TransitionCounts::new(0), Err(CoreError::EmptyMatrix));
    assert_eq!(
        TransitionCounts::from_paths(2, &[vec![0, 1], vec![0]]),
        Err(CoreError::StreamWidth { step: 2, users: 1, expected: 2 })
    );
    assert_eq!(
        TransitionCounts::from_paths(2, &[vec![0, 2]]),
        Err(CoreError::StateOutOfRange { state: 2, n: 2 })
    );
}

#[test]
fn counts_past_the_dense_limit_are_sparse_and_estimate_the_same_rows() {
    // Three users over three steps among 3 states, renamed into n > DENSE_STATES states.
    let paths = vec![vec![0, 1, 2], vec![1, 1, 0], vec![2, 1, 0]];
    let small = TransitionCounts::from_paths(3, &paths).unwrap();
    let n = TransitionCounts::DENSE_STATES + 7;
    let map = [n - 1, 5, TransitionCounts::DENSE_STATES];
    let big = small.relabeled(&map, n).unwrap();
    assert!(big.is_sparse() && !small.is_sparse());
    assert_eq!((big.total(), big.entries().len()), (small.total(), small.entries().len()));
    for (i, j, c) in small.entries() {
        assert_eq!(big.count(map[i], map[j]), c);
    }
    let (sf, sb) = small.matrices(None).unwrap();
    let (bf, bb) = big.matrices(None).unwrap();
    assert!(bf.matrix.is_sparse() && bb.matrix.is_sparse());
    for (s, b) in [(&sf, &bf), (&sb, &bb)] {
        for i in 0..3 {
            for j in 0..3 {
                assert_eq!(b.matrix.row(map[i])[map[j]], s.matrix.row(i)[j], "({i}, {j})");
            }
        }
        // Every state without moves is an identity row, and listed.
        assert_eq!(b.empty_rows.len(), n - 3 + s.empty_rows.len());
        assert_eq!((b.matrix.row(7)[7], b.matrix.row(7)[8]), (1.0, 0.0));
    }
    // Counted as a stream is read, one move at a time: the same counts.
    let mut added = TransitionCounts::new(n).unwrap();
    for (i, j, c) in small.entries() {
        added.add(map[i], map[j], c).unwrap();
    }
    assert_eq!(added, big);
    assert_eq!(added.add(n, 0, 1), Err(CoreError::StateOutOfRange { state: n, n }));
    // Smoothing keeps the estimate sparse.
    assert!(big.matrices(Some(0.01)).unwrap().0.matrix.is_sparse());
}
