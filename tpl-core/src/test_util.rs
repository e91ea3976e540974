//! Proptest strategies shared by the tests of `tpl-core`, `tpl-alloc` and `tpl-postprocess`
//! (feature `test-util`): raw transition weights, random matrices, α and ε drawn across
//! hundreds of orders of magnitude, budget sequences, and the tolerance their comparisons
//! share.
//!
//! Each strategy draws exactly what the copy it replaced drew, from the same random stream,
//! so the seeds kept in the `*.proptest-regressions` files still replay the cases they
//! found. A test that wants another mix of weights says so with a [`WeightMix`] rather than
//! writing its own strategy.

use proptest::prelude::*;
use proptest::strategy::Union;
use proptest::test_runner::TestCaseError;

use crate::{Correlation, TransitionMatrix};

/// The correlation of borrowed, optional matrices, as the tests draw them: each one cloned.
///
/// # Panics
/// For matrices over different numbers of states (a test's own mistake).
pub fn correlation(backward: Option<&TransitionMatrix>, forward: Option<&TransitionMatrix>) -> Correlation {
    Correlation::new(backward.cloned(), forward.cloned())
        .expect("the test's matrices describe the same states")
}

/// The xorshift64 generator (shifts 13, 7, 17) seeded with `state` (non-zero): a fixed stream
/// of 64-bit words for tests that want many cheap draws without proptest.
pub fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// Uniform numbers in [0, 1) from [`xorshift`]`(state)`: the top 53 bits of each word.
pub fn uniforms(state: u64) -> impl FnMut() -> f64 {
    let mut words = xorshift(state);
    move || (words() >> 11) as f64 / (1u64 << 53) as f64
}

/// A correlation with the forward matrix `p` only: the public model of the estimators.
pub fn forward_only(p: &TransitionMatrix) -> Correlation {
    correlation(None, Some(p))
}

/// The correlation of an adversary who knows `p` on both sides (P_B = P_F = `p`), the set-up
/// of many tests.
pub fn both_sides(p: &TransitionMatrix) -> Correlation {
    correlation(Some(p), Some(p))
}

/// Absolute floor of the relative comparisons of leakage values: it only matters for
/// subnormal results (α near 1e-300 makes L(α) itself subnormal, where a relative tolerance
/// of 1e-12 is finer than the spacing of representable numbers); everywhere else a
/// comparison with this floor is purely relative, which is what the evaluators promise even
/// for L ≈ 1e-10.
pub const SUBNORMAL_FLOOR: f64 = 1e-300;

/// How often [`weight_with`] draws each kind of raw (unnormalised) weight: relative
/// frequencies, in the order the fields are listed; a kind with frequency 0 is left out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeightMix {
    /// An exact 0 (sparse rows, disjoint supports).
    pub zero: u32,
    /// A value uniform in [0, 1).
    pub uniform: u32,
    /// Exactly 1.
    pub one: u32,
    /// 10^−u with u uniform in [0, `decades`): entries of wildly different magnitudes, down
    /// to the subnormal range when `decades` exceeds 308.
    pub tiny: u32,
    /// The range of the exponent u of the `tiny` kind.
    pub decades: f64,
}

impl Default for WeightMix {
    /// 3 : 6 : 1 : 1 over (zero, uniform, one, tiny), tiny down to 1e-300: the mix of
    /// [`weight`].
    fn default() -> Self {
        Self { zero: 3, uniform: 6, one: 1, tiny: 1, decades: 300.0 }
    }
}

/// One raw weight in the [`WeightMix::default`] mix: an exact zero, a uniform value,
/// exactly 1, or 10^−u with u up to 300.
pub fn weight() -> impl Strategy<Value = f64> {
    weight_with(WeightMix::default())
}

/// One raw weight drawn in the proportions of `mix`.
///
/// # Panics
/// When every frequency of `mix` is 0.
pub fn weight_with(mix: WeightMix) -> impl Strategy<Value = f64> {
    let decades = mix.decades;
    let arms: [(u32, BoxedStrategy<f64>); 4] = [
        (mix.zero, Just(0.0).boxed()),
        (mix.uniform, (0.0f64..1.0).boxed()),
        (mix.one, Just(1.0).boxed()),
        (mix.tiny, (0.0f64..decades).prop_map(|u| 10f64.powf(-u)).boxed()),
    ];
    Union::new_weighted(arms.into_iter().filter(|(w, _)| *w > 0).collect())
}

/// 10^e with e uniform in [`lo`, `hi`): a value log-uniform on [10^lo, 10^hi).
pub fn log_uniform(lo: f64, hi: f64) -> impl Strategy<Value = f64> {
    (lo..hi).prop_map(|e| 10f64.powf(e))
}

/// How the rows drawn by [`weight_rows`] relate to each other.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// Independent rows.
    Plain,
    /// Row i is a copy of row `assign[i]`: duplicate rows.
    Duplicates,
    /// Every row is row 0 (TKDE Theorem 6).
    AllEqual,
    /// Every row is row 0 with each entry scaled by 1 + η, |η| ≤ 10^−k: nearly equal rows,
    /// so L is tiny and any cancellation in its evaluation shows.
    NearDuplicates,
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        5 => Just(Shape::Plain),
        2 => Just(Shape::Duplicates),
        1 => Just(Shape::AllEqual),
        2 => Just(Shape::NearDuplicates),
    ]
}

/// Unnormalised rows of an n×n matrix for n in `sizes`, from [`weight`]s, in one of four
/// shapes: independent rows (half of the cases), duplicate rows, all rows equal, or rows
/// that equal row 0 up to a relative 10^−k, k ∈ [2, 12) (L tiny, so cancellation shows).
/// Normalise them with [`normalize`].
pub fn weight_rows(sizes: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = Vec<Vec<f64>>> {
    sizes.prop_flat_map(|n| {
        (
            prop::collection::vec(prop::collection::vec(weight(), n), n),
            shape(),
            prop::collection::vec(0..n, n),
            prop::collection::vec(prop::collection::vec(-1.0f64..1.0, n), n),
            2i32..12,
        )
            .prop_map(|(rows, shape, assign, eta, k)| match shape {
                Shape::Plain => rows,
                Shape::Duplicates => assign.iter().map(|&a| rows[a].clone()).collect(),
                Shape::AllEqual => vec![rows[0].clone(); rows.len()],
                Shape::NearDuplicates => {
                    let scale = 10f64.powi(-k);
                    eta.iter()
                        .map(|e| rows[0].iter().zip(e).map(|(w, e)| w * (1.0 + e * scale)).collect())
                        .collect()
                }
            })
    })
}

/// Backward and forward [`weight_rows`] (each present with probability 0.8) over the same
/// n ≤ 8 states: the series refuse matrices of different sizes.
#[allow(clippy::type_complexity)]
pub fn matrix_pair() -> impl Strategy<Value = (Option<Vec<Vec<f64>>>, Option<Vec<Vec<f64>>>)> {
    (1usize..=8).prop_flat_map(|n| {
        (prop::option::weighted(0.8, weight_rows(n..=n)), prop::option::weighted(0.8, weight_rows(n..=n)))
    })
}

/// Normalises generated weights with [`TransitionMatrix::normalized`], rejecting the case
/// (what `prop_assume!` does) when a row is all zeros.
///
/// # Errors
/// [`TestCaseError::Reject`] when `rows` do not normalise to a transition matrix.
pub fn normalize(rows: Vec<Vec<f64>>) -> Result<TransitionMatrix, TestCaseError> {
    TransitionMatrix::normalized(rows).map_err(|e| TestCaseError::reject(format!("{e}")))
}

/// α for the loss properties: mostly [0, 50], some [50, 2000], some 0 and some tiny
/// (down to 1e-300, where x = e^α − 1 = α and relative precision is all that is left).
pub fn alpha() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => 0.0f64..50.0,
        2 => 50.0f64..2000.0,
        1 => Just(0.0),
        1 => log_uniform(-300.0, -2.0),
    ]
}

/// A budget sequence of length 1..=`max_len`, with some steps that publish nothing (ε = 0)
/// and some tiny budgets in [1e-6, 1e-2).
pub fn budgets(max_len: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(prop_oneof![1 => Just(0.0), 4 => 0.0f64..2.0, 1 => 1e-6f64..1e-2], 1..=max_len)
}

/// Raw rows of an n×n matrix, each entry an exact 0 or uniform in [0, 1) with equal odds
/// (rows of zeros included); [`smoothed`] turns them into a matrix.
pub fn sparse_rows(n: usize) -> impl Strategy<Value = Vec<Vec<f64>>> {
    prop::collection::vec(prop::collection::vec(prop_oneof![Just(0.0), 0.0f64..1.0], n), n)
}

/// `rows` normalised (a row of zeros made uniform) and Laplacian-smoothed with `s` (TKDE
/// eq. 28), so that the suprema exist as the TKDE allocators require.
///
/// # Panics
/// When `s` is negative or not finite, or a row is not finite and non-negative.
pub fn smoothed(rows: Vec<Vec<f64>>, s: f64) -> TransitionMatrix {
    let rows =
        rows.into_iter().map(|r| if r.iter().sum::<f64>() > 0.0 { r } else { vec![1.0; r.len()] }).collect();
    TransitionMatrix::normalized(rows)
        .and_then(|m| m.smoothed(s))
        .expect("finite non-negative rows with a positive sum and s ≥ 0 make a matrix")
}

/// An n×n matrix, n in `sizes`, whose rows have a few entries of any size and the rest 0
/// (about three in four): normalised as they are (disjoint supports included), or smoothed
/// (s from 10⁻⁸ to 3) so that the rest of each row shares one small value — the rows of a
/// city grid, which the loss algorithms handle by their structure.
pub fn few_entries(sizes: std::ops::Range<usize>) -> impl Strategy<Value = TransitionMatrix> {
    let mix = WeightMix { zero: 9, uniform: 2, one: 0, tiny: 1, decades: 300.0 };
    (
        sizes.prop_flat_map(move |n| prop::collection::vec(prop::collection::vec(weight_with(mix), n), n)),
        prop_oneof![Just(0.0), log_uniform(-8.0, 0.5)],
    )
        .prop_map(|(rows, s)| smoothed(rows, s))
}

/// `weights` divided by their sum, or the uniform distribution when they are all zero: a
/// prior from raw weights.
pub fn distribution(weights: &[f64]) -> Vec<f64> {
    let n = weights.len();
    let s: f64 = weights.iter().sum();
    if s > 0.0 { weights.iter().map(|v| v / s).collect() } else { vec![1.0 / n as f64; n] }
}

/// One matrix in both forms, (dense, sparse), over n states drawn by `sizes`: raw rows, each
/// a unit row (a 1 and zeros), a row of one to four entries of any size, or n weights of
/// which about half are 0, normalised by [`TransitionMatrix::normalized`] and by
/// [`TransitionMatrix::normalized_entries`] (the non-zero weights), then smoothed with the
/// s drawn by `smoothing` in each form (TKDE eq. 28; s = 0 included). One matrix in three
/// has only unit rows and rows of a few entries, so that from 64 states on the loss
/// algorithms read it by its structure; the others, past one entry in 16, read it densely.
pub fn twins(
    sizes: impl Strategy<Value = usize>,
    smoothing: impl Strategy<Value = f64>,
) -> impl Strategy<Value = (TransitionMatrix, TransitionMatrix)> {
    let mix = WeightMix { zero: 5, uniform: 3, one: 1, tiny: 1, decades: 300.0 };
    let entry = WeightMix { zero: 0, ..mix };
    let row = move |n: usize, few_only: bool| {
        let unit =
            (0..n).prop_map(move |c| (0..n).map(|i| f64::from(u8::from(i == c))).collect::<Vec<f64>>());
        let few = prop::collection::vec((0..n, weight_with(entry)), 1..=4).prop_map(move |cells| {
            let mut r = vec![0.0; n];
            cells.into_iter().for_each(|(c, w)| r[c] = w);
            r
        });
        let full = prop::collection::vec(weight_with(mix), n);
        if few_only {
            prop_oneof![1 => unit, 3 => few].boxed()
        } else {
            prop_oneof![1 => unit, 2 => few, 2 => full].boxed()
        }
    };
    (sizes, 0u8..3, smoothing)
        .prop_flat_map(move |(n, kind, s)| (prop::collection::vec(row(n, kind == 0), n), Just(s)))
        .prop_map(|(rows, s)| {
            // A row of zeros (a few entries that came out 0) gets a 1 in the first column.
            let rows: Vec<Vec<f64>> = rows
                .into_iter()
                .map(|mut r| {
                    if r.iter().all(|&w| w == 0.0) {
                        r[0] = 1.0;
                    }
                    r
                })
                .collect();
            let n = rows.len();
            let entries = rows
                .iter()
                .enumerate()
                .flat_map(|(j, r)| {
                    r.iter().enumerate().filter(|(_, w)| **w != 0.0).map(move |(i, &w)| (j, i, w))
                })
                .collect();
            let dense = TransitionMatrix::normalized(rows).and_then(|m| m.smoothed(s));
            let sparse = TransitionMatrix::normalized_entries(n, entries).and_then(|m| m.smoothed(s));
            (dense.expect("rows with a positive entry"), sparse.expect("rows with a positive entry"))
        })
}
