use super::*;
use crate::structure::{PairClasses, RowStructure};
use crate::test_util::{WeightMix, few_entries, weight_with};
use proptest::prelude::*;

/// A matrix of n in `sizes` with independent rows, or rows that agree to 1e-9.
fn matrix(sizes: std::ops::Range<usize>) -> impl Strategy<Value = TransitionMatrix> {
    sizes
        .prop_flat_map(|n| {
            (
                prop::collection::vec(
                    prop::collection::vec(weight_with(WeightMix { zero: 2, ..WeightMix::default() }), n),
                    n,
                ),
                prop::collection::vec(prop::collection::vec(-1.0f64..1.0, n), n),
                any::<bool>(),
            )
        })
        .prop_filter_map("a zero row", |(rows, eta, close)| {
            let rows = if close {
                eta.iter()
                    .map(|e| rows[0].iter().zip(e).map(|(w, e)| w * (1.0 + 1e-9 * e)).collect())
                    .collect()
            } else {
                rows
            };
            TransitionMatrix::normalized(rows).ok()
        })
}

/// The rows of a dense matrix as the scans read them.
fn dense(m: &TransitionMatrix) -> Rows<'_> {
    Rows::Dense { data: m.dense_entries().expect("the strategies build dense matrices"), n: m.n() }
}

/// Every point that the scan of one pair may contribute: its bin points and its chain.
fn pair_points(q: &[f64], d: &[f64]) -> Vec<Candidate> {
    let mut bins = Bins::new();
    let mut points = pair_chain(q, d, Bulk::NONE, &mut Vec::new());
    if matches!(bins.fill(q, d, Bulk::NONE), Binned::Chain) {
        bins.corners(|c, is_chain_point| {
            if is_chain_point {
                points.push(c);
            }
        });
    }
    points
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The scan over the rows' structure (each pair as its explicit states and a bulk, each
    /// class of repeated pairs once) finds the hull of the dense scan: the same L at every α,
    /// to rounding.
    #[test]
    fn the_structured_scan_finds_the_dense_hull(m in few_entries(2..30), keep_chains in any::<bool>()) {
        let structure = RowStructure::of(&m);
        let classes = PairClasses::new(&structure);
        let scan = |rows| scan_pairs(rows, keep_chains, true, &|_, _| {});
        match (scan(dense(&m)), scan(Rows::Structured(&structure, classes.as_ref()))) {
            (Candidates::Identity, Candidates::Identity) => {}
            (Candidates::Found { envelope: dense, .. }, Candidates::Found { envelope, .. }) => {
                for alpha in [1e-9, 1e-3, 0.1, 1.0, 7.0, 60.0, 750.0, 1e5] {
                    let (want, got) = (dense.eval(alpha), envelope.eval(alpha));
                    prop_assert!((want - got).abs() <= 1e-12 * want + 1e-300, "L({alpha}): dense {want}, structured {got}");
                }
            }
            _ => prop_assert!(false, "one scan found disjoint supports and the other did not"),
        }
    }

    /// The outline test settles a pair only when all the points it could contribute lie
    /// strictly under the hull, against the hull of all pairs and against that hull
    /// lowered by up to 30 % (so that many pairs come close to it).
    #[test]
    fn outline_settles_only_pairs_under_the_hull(m in matrix(2..24), lower in 0.0f64..0.3) {
        let n = m.n();
        let pairs = || (0..n).flat_map(|a| (0..n).map(move |b| (a, b))).filter(|(a, b)| a != b);
        let all: Vec<Candidate> = pairs().flat_map(|(a, b)| pair_points(&m.row(a).to_vec(), &m.row(b).to_vec())).collect();
        let full = Envelope::from_points(all);
        let env = Envelope::from_points(
            full.vertices().iter().map(|v| Candidate { d: v.d, delta: v.delta * (1.0 - lower) }).collect(),
        );
        let (heights, grid) = (Heights::new(&env), Grid::new(&env));
        let tests = OutlineTests::new(dense(&m), n);
        for (a, b) in pairs() {
            let (q, d) = (&m.row(a).to_vec(), &m.row(b).to_vec());
            match tests.outcome(a * n + b, &heights, &grid, &mut PairBuf::default()) {
                Outcome::Open => {}
                Outcome::Empty => prop_assert!(pair_points(q, d).is_empty(), "pair ({a}, {b}) has a chain"),
                Outcome::Settled => {
                    for c in pair_points(q, d) {
                        prop_assert!(
                            c.delta <= env.height_at(c.d) * (1.0 - 1e-10),
                            "pair ({a}, {b}) settled, but {c:?} is not under the hull"
                        );
                    }
                }
            }
        }
    }

    /// Pruning changes nothing: the scan with the outline test gives the hull, the kept
    /// chains and their owners of the scan without it, bit for bit; and the hull is that
    /// of every point of every pair, up to the last bits of near-duplicate points (the bin
    /// and chain sums of one subset), where floating-point hulls depend on the neighbours.
    #[test]
    fn pruning_changes_no_hull(m in matrix(2..40)) {
        let n = m.n();
        let found = |outline| match scan_pairs(dense(&m), true, outline, &|_, _| {}) {
            Candidates::Identity => None,
            Candidates::Found { envelope, chains } => Some((envelope, chains)),
        };
        let (with, without) = (found(true), found(false));
        prop_assert_eq!(with.is_none(), without.is_none());
        let (Some((with, with_chains)), Some((without, without_chains))) = (with, without) else { return Ok(()) };
        prop_assert_eq!(with.vertices(), without.vertices());
        prop_assert_eq!(with.tags(), without.tags());
        prop_assert_eq!(with.breaks(), without.breaks());
        // The chains kept with the test are among those kept without it.
        prop_assert!(with_chains.iter().all(|c| without_chains.contains(c)));
        let all: Vec<Candidate> = (0..n)
            .flat_map(|a| (0..n).map(move |b| (a, b)))
            .filter(|(a, b)| a != b)
            .flat_map(|(a, b)| pair_points(&m.row(a).to_vec(), &m.row(b).to_vec()))
            .collect();
        let reference = Envelope::from_points(all);
        for alpha in [1e-6, 0.01, 0.3, 1.0, 5.0, 40.0, 900.0] {
            let (a, b) = (with.eval(alpha), reference.eval(alpha));
            prop_assert!((a - b).abs() <= 1e-14 * b, "L({alpha}): {a} vs {b}");
        }
    }
}

#[test]
fn chain_is_concave_and_ends_at_total_variation() {
    let q = [0.2, 0.3, 0.5, 0.0];
    let d = [0.1, 0.0, 0.4, 0.5];
    let chain = pair_chain(&q, &d, Bulk::NONE, &mut Vec::new());
    // State 1 (ratio ∞) first, then state 0 (ratio 2), then state 2 (1.25).
    assert_eq!(chain.len(), 3);
    assert_eq!(chain[0], Candidate { d: 0.0, delta: 0.3 });
    let end = chain[2];
    assert!((end.d - 0.5).abs() < 1e-15 && (end.delta - 0.5).abs() < 1e-15);
}

#[test]
fn bins_are_ordered_by_slope() {
    assert_eq!(bin_of(1e9), 0);
    assert_eq!(bin_of(SLOPE_TOP), 0);
    assert_eq!(bin_of(1e-9), BINS - 1);
    let mut last = 0;
    for k in 0..200 {
        let s = SLOPE_TOP * 0.9f64.powi(k);
        let b = bin_of(s);
        assert!(b >= last);
        assert!(bin_floor(b) <= s && (b == 0 || s < bin_floor(b - 1)), "slope {s} bin {b}");
        last = b;
    }
}

#[test]
fn bin_triangles_contain_the_chain() {
    let q = [0.3, 0.25, 0.2, 0.15, 0.1, 0.0];
    let d = [0.001, 0.05, 0.1, 0.12, 0.09, 0.639];
    let mut bins = Bins::new();
    assert!(matches!(bins.fill(&q, &d, Bulk::NONE), Binned::Chain));
    let mut corners = Vec::new();
    bins.corners(|c, _| corners.push(c));
    let env = Envelope::from_points(corners);
    for c in pair_chain(&q, &d, Bulk::NONE, &mut Vec::new()) {
        assert!(c.delta <= env.height_at(c.d) * (1.0 + 1e-15), "{c:?} above its bound");
    }
}

#[test]
fn disjoint_rows_are_identity() {
    let mut bins = Bins::new();
    assert!(matches!(bins.fill(&[0.5, 0.5, 0.0], &[0.0, 0.0, 1.0], Bulk::NONE), Binned::Disjoint));
    assert!(matches!(bins.fill(&[0.5, 0.5, 0.0], &[0.0, 0.2, 0.8], Bulk::NONE), Binned::Chain));
    assert!(matches!(bins.fill(&[0.5, 0.5], &[0.5, 0.5], Bulk::NONE), Binned::Empty));
}
