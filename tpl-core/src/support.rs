//! The support function of a pair's candidates, and the two tests built on it that settle
//! most pairs of rows in one vectorised pass ([`docs/model.md`](crate::guide::model) §8, "Pruning
//! pairs").
//!
//! For rows q, d and a slope σ ≥ 0, every candidate (d_S, δ_S) of the pair satisfies
//! δ_S − σ d_S = Σ_{i∈S} (q_i − d_i − σ d_i) ≤ h(σ) = Σ_i (q_i − d_i − σ d_i)⁺, with equality
//! for S = {i : q_i − d_i > σ d_i}: h is the pair's support function, and its candidates all
//! lie under the line δ = h(σ) + σ·d. Unlike the chain itself, h needs no sort and no
//! branch: one multiply, two subtractions, a maximum and an add per state, in independent
//! partial sums that the compiler turns into vector instructions.
//!
//! Rounding. Summed in floating point (in any order), the computed value h̃ satisfies
//! δ_S − σ(1 + 3ε) d_S ≤ (1 + (n + 4)ε) h̃ for every S, ε = 2⁻⁵³ (each term is off by at
//! most 2ε of q_i − d_i plus 2ε of σ d_i, and a sum of n non-negative terms by (n − 1)ε):
//! slopes and support values are inflated by [`inflation`] before they are trusted, and
//! every comparison keeps a relative [`margin`] that dwarfs what is left.

use crate::envelope::{Envelope, Heights};
use crate::structure::Bulk;

/// Partial sums per row in [`support_rows`]: with eight rows, eight SSE2 registers of
/// independent additions.
const ROW_LANES: usize = 2;

/// Partial sums per slope in [`outline`]: independent chains of additions that fill one
/// AVX2 register (or two SSE2 ones) of doubles.
const LANES: usize = 4;

/// Σ_i max(0, (q_i − d_i) − μ d_i) for each of the T rows q against the one row d: h(μ) of
/// the T pairs (q, d). All rows have the length of `d`.
pub(crate) fn support_rows<const T: usize>(q: [&[f64]; T], d: &[f64], mu: f64) -> [f64; T] {
    let n = d.len();
    let split = n - n % ROW_LANES;
    let q: [&[f64]; T] = q.map(|row| &row[..n]);
    let mut acc = [[0.0f64; ROW_LANES]; T];
    for (c, dc) in d[..split].chunks_exact(ROW_LANES).enumerate() {
        let i = c * ROW_LANES;
        let md: [f64; ROW_LANES] = std::array::from_fn(|l| mu * dc[l]);
        for (row, sums) in q.iter().zip(acc.iter_mut()) {
            let qc = &row[i..i + ROW_LANES];
            for l in 0..ROW_LANES {
                sums[l] += positive((qc[l] - dc[l]) - md[l]);
            }
        }
    }
    for i in split..n {
        for (row, sums) in q.iter().zip(acc.iter_mut()) {
            sums[0] += positive((row[i] - d[i]) - mu * d[i]);
        }
    }
    acc.map(|s| s[0] + s[1])
}

/// max(t, 0) in the form that compiles to one `maxpd` (a NaN, which the callers never
/// produce, would give 0).
#[inline(always)]
fn positive(t: f64) -> f64 {
    if t > 0.0 { t } else { 0.0 }
}

/// ε = 2⁻⁵³, the unit roundoff of f64.
const UNIT: f64 = f64::EPSILON / 2.0;

/// The factor 1 + (n + 8)ε by which computed supports, slopes and sums of n terms are
/// inflated to bound the exact ones (see the module documentation).
pub(crate) fn inflation(n: usize) -> f64 {
    1.0 + (n as f64 + 8.0) * UNIT
}

/// The relative margin of every pruning decision: 10⁻⁹, or more for n beyond 10⁵ so that it
/// stays above 64·n·ε, far more than the rounding of a sum of n terms and of the values
/// computed from it.
pub(crate) fn margin(n: usize) -> f64 {
    1e-9f64.max(64.0 * n as f64 * UNIT)
}

/// The ratio of consecutive slopes of [`slope_grid`] (wider when the envelope's edges span
/// more than GRID_RATIO^(SLOPES − 1)).
const GRID_RATIO: f64 = 4.0;

/// Number of slopes at which [`outline`] evaluates a pair's support function, besides 0.
pub(crate) const SLOPES: usize = 8;

/// One pass over a pair (q, d) and its bulk ([`crate::structure`]): (σ_k, h(σ_k)) at each
/// slope of `slopes`, and h(0), the total variation Σ (q_i − d_i)⁺.
pub(crate) fn outline(q: &[f64], d: &[f64], bulk: Bulk, slopes: &[f64; SLOPES]) -> ([Sample; SLOPES], f64) {
    #[cfg(target_arch = "x86_64")]
    let (h, tv) = if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor supports AVX2, checked just above.
        unsafe { outline_avx2(q, d, slopes) }
    } else {
        outline_any(q, d, slopes)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (h, tv) = outline_any(q, d, slopes);
    (std::array::from_fn(|k| (slopes[k], h[k] + bulk.support(slopes[k]))), tv + bulk.support(0.0))
}

/// [`outline`] compiled for AVX2: the same operations in the same order, on wider registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn outline_avx2(q: &[f64], d: &[f64], slopes: &[f64; SLOPES]) -> ([f64; SLOPES], f64) {
    outline_any(q, d, slopes)
}

#[inline(always)]
fn outline_any(q: &[f64], d: &[f64], slopes: &[f64; SLOPES]) -> ([f64; SLOPES], f64) {
    let n = d.len();
    let q = &q[..n];
    let split = n - n % LANES;
    let mut acc = [[0.0f64; LANES]; SLOPES];
    let mut tv = [0.0f64; LANES];
    for (qc, dc) in q[..split].chunks_exact(LANES).zip(d[..split].chunks_exact(LANES)) {
        let g: [f64; LANES] = std::array::from_fn(|l| qc[l] - dc[l]);
        for l in 0..LANES {
            tv[l] += positive(g[l]);
        }
        for (sums, &s) in acc.iter_mut().zip(slopes) {
            for l in 0..LANES {
                sums[l] += positive(g[l] - s * dc[l]);
            }
        }
    }
    for i in split..n {
        let g = q[i] - d[i];
        tv[0] += positive(g);
        for (sums, &s) in acc.iter_mut().zip(slopes) {
            sums[0] += positive(g - s * d[i]);
        }
    }
    (acc.map(lane_sum), lane_sum(tv))
}

/// The sum of the partial sums, in a fixed order.
#[inline(always)]
fn lane_sum(s: [f64; LANES]) -> f64 {
    (s[0] + s[1]) + (s[2] + s[3])
}

/// The slopes at which [`outline`] samples the pairs scanned against one envelope, and what
/// the envelope itself gives there.
pub(crate) struct Grid {
    /// A geometric grid over the slopes of the envelope's edges (where a pair's chain has to
    /// stay under it), steepest first, of ratio 4 or wider when the edges span more than 4⁷.
    pub(crate) slopes: [f64; SLOPES],
    /// The slopes halfway (in ratio) between those of `slopes` and above them: a second grid
    /// for the pairs that the first does not settle.
    pub(crate) finer: [f64; SLOPES],
    /// The envelope's own support max_v (δ_v − σ d_v)⁺ at each of `slopes`.
    hull: [f64; SLOPES],
}

/// A pair whose support reaches this fraction of the envelope's at some slope of the grid is
/// not worth a second outline: it lies on or close to the hull (the smoothed identity, whose
/// pairs are all alike, has every pair there).
const NEAR: f64 = 1.0 - 1e-3;

impl Grid {
    pub(crate) fn new(envelope: &Envelope) -> Self {
        let v = envelope.vertices();
        let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
        for w in v.windows(2) {
            let s = (w[0].delta - w[1].delta) / (w[0].d - w[1].d);
            if s.is_finite() && s > 0.0 {
                lo = lo.min(s);
                hi = hi.max(s);
            }
        }
        if lo > hi {
            // Fewer than two vertices: a grid that suits matrices of moderate correlation.
            (lo, hi) = (1.0 / 16.0, 1024.0);
        }
        let steps = (SLOPES - 1) as f64;
        // Nearly flat edges (slopes far below the others) are left to the line of slope 0.
        let lo = lo.max(hi * GRID_RATIO.powf(-steps));
        let ratio = (hi / lo).powf(1.0 / steps).max(GRID_RATIO);
        let slopes: [f64; SLOPES] = std::array::from_fn(|k| lo * ratio.powf(steps - k as f64));
        let half = ratio.sqrt();
        let hull = slopes.map(|s| v.iter().map(|c| c.delta - s * c.d).fold(0.0, f64::max));
        Self { slopes, finer: slopes.map(|s| s * half), hull }
    }

    /// Whether a pair's first outline comes within [`NEAR`] of the envelope's support at one
    /// of the slopes (or above it): a heuristic that only decides whether to try a finer
    /// outline, never whether to drop the pair.
    pub(crate) fn near_hull(&self, samples: &[Sample; SLOPES]) -> bool {
        samples.iter().zip(&self.hull).any(|(&(_, h), &hull)| h > 0.0 && h >= NEAR * hull)
    }
}

/// Whether every candidate of a pair lies strictly under an envelope by the relative
/// [`margin`] (the envelope whose majorant `heights` evaluates), given its support at up to
/// 2·[`SLOPES`] slopes (`samples`, from [`outline`]), its total variation `tv` and an upper
/// bound `steepest` on the slope q_i/d_i − 1 of its states with d_i > 0 (not necessarily
/// finite). Such a pair can neither be a vertex of the hull of all candidates nor change any
/// value of L ([`docs/model.md`](crate::guide::model) §8).
///
/// The pair's candidates lie under each line δ = h(σ) + σ d, and under δ = h(σ) + s d for
/// any σ and any s ≥ `steepest` (the states with d_i = 0 add at most h(σ), the others at
/// most s·d_S). The minimum of these lines is a concave polygon; the
/// envelope's majorant is concave too, so the polygon lies under it once each of its
/// vertices does, and past the last vertex the polygon is flat while the majorant never
/// decreases.
pub(crate) fn outline_is_under(
    heights: &Heights,
    samples: &[Sample],
    tv: f64,
    steepest: f64,
    n: usize,
) -> bool {
    let c = inflation(n);
    // Lines (a, b) of δ ≤ a + b·d, inflated, sorted by decreasing slope b.
    let mut lines = [(0.0f64, 0.0f64); MAX_LINES];
    let mut m = 0;
    let mut push = |line: (f64, f64)| {
        let mut k = m;
        while k > 0 && lines[k - 1].1 < line.1 {
            lines[k] = lines[k - 1];
            k -= 1;
        }
        lines[k] = line;
        m += 1;
    };
    let mut lowest = f64::INFINITY;
    for &(slope, h) in samples {
        push((h * c, slope * c));
        lowest = lowest.min(h);
    }
    if steepest.is_finite() && lowest.is_finite() {
        push((lowest * c, steepest * c));
    }
    push((tv * c, 0.0));
    // The lower envelope of the lines on d ≥ 0, as (a, b, d where the line takes over).
    let mut stack = [(0.0f64, 0.0f64, 0.0f64); MAX_LINES];
    let mut len = 0;
    'lines: for &(a, b) in &lines[..m] {
        let mut start = 0.0;
        while len > 0 {
            let (ta, tb, ts) = stack[len - 1];
            if b >= tb {
                // Equal slopes: the lower line wins everywhere.
                if a >= ta {
                    continue 'lines;
                }
                len -= 1;
                continue;
            }
            // Where the flatter new line drops below the top one (≤ 0: everywhere).
            let x = (a - ta) / (tb - b);
            if x <= ts {
                len -= 1;
                continue;
            }
            start = x;
            break;
        }
        stack[len] = (a, b, start);
        len += 1;
    }
    let keep = 1.0 - margin(n);
    stack[..len].iter().all(|&(a, b, start)| a + b * start <= keep * heights.at(start))
}

/// A slope σ and a pair's support h(σ) there.
pub(crate) type Sample = (f64, f64);

/// The most lines [`outline_is_under`] takes: two grids, the steepest line and slope 0.
const MAX_LINES: usize = 2 * SLOPES + 2;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidate::Candidate;

    fn naive(q: &[f64], d: &[f64], s: f64) -> f64 {
        q.iter().zip(d).map(|(&qi, &di)| (qi - di - s * di).max(0.0)).sum()
    }

    #[test]
    fn support_matches_the_definition() {
        let q = [0.1, 0.25, 0.05, 0.3, 0.2, 0.1, 0.0];
        let d = [0.2, 0.05, 0.05, 0.1, 0.3, 0.0, 0.3];
        for mu in [0.0, 0.5, 2.0, 1e6] {
            let [a, b] = support_rows([&q, &d], &d, mu);
            assert!((a - naive(&q, &d, mu)).abs() < 1e-16);
            assert_eq!(b, 0.0);
        }
        let slopes = [64.0, 32.0, 16.0, 8.0, 4.0, 2.0, 1.0, 0.5];
        let (samples, tv) = outline(&q, &d, Bulk::NONE, &slopes);
        assert!((tv - naive(&q, &d, 0.0)).abs() < 1e-16);
        for ((s, h), want) in samples.iter().zip(slopes) {
            assert_eq!(*s, want);
            assert!((h - naive(&q, &d, want)).abs() < 1e-16);
        }
    }

    #[test]
    fn grid_is_descending_and_spans_the_edges() {
        let env = Envelope::from_points(vec![
            Candidate { d: 0.001, delta: 0.1 },
            Candidate { d: 0.1, delta: 0.5 },
            Candidate { d: 0.5, delta: 0.6 },
        ]);
        let g = Grid::new(&env).slopes;
        assert!(g.windows(2).all(|w| w[0] > w[1]));
        assert!((g[SLOPES - 1] - 0.25).abs() < 1e-12, "{g:?}");
        assert!(g[0] >= 0.4 / 0.099);
    }

    #[test]
    fn a_pair_on_the_hull_is_never_under_it() {
        // The envelope of the pair's own chain: its outline touches it.
        let q = [0.5, 0.3, 0.2];
        let d = [0.1, 0.3, 0.6];
        let env = Envelope::from_points(vec![Candidate { d: 0.1, delta: 0.4 }]);
        let grid = Grid::new(&env);
        let (samples, tv) = outline(&q, &d, Bulk::NONE, &grid.slopes);
        assert!(grid.near_hull(&samples));
        assert!(!outline_is_under(&Heights::new(&env), &samples, tv, 4.0, 3));
        // A pair strictly inside a larger hull is.
        let env =
            Envelope::from_points(vec![Candidate { d: 0.05, delta: 0.6 }, Candidate { d: 0.3, delta: 0.8 }]);
        let grid = Grid::new(&env);
        let (samples, tv) = outline(&q, &d, Bulk::NONE, &grid.slopes);
        assert!(!grid.near_hull(&samples));
        assert!(outline_is_under(&Heights::new(&env), &samples, tv, 4.0, 3));
    }
}
