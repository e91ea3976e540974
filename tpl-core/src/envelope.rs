//! The upper envelope of a set of candidates as a function of α (TKDE Theorems 8–10,
//! Algorithm 4), computed as a convex hull instead of the paper's recursive bisection.
//!
//! In the (d, δ) plane of [`crate::candidate`], a candidate's value at α is
//! log(1 + slope from (−1/x, 0) to (d, δ)), x = e^α − 1. The steepest slope from a point
//! on the negative d-axis to a finite point set is attained at a vertex of the set's upper
//! convex hull (with the origin added, which stands for S = ∅ and value 0), and as α grows
//! the viewpoint −1/x moves from −∞ towards 0, so the optimal vertex walks monotonically
//! from the vertex of largest δ (α → 0: L ≈ x·max δ, the total-variation term) to the vertex
//! of largest δ/d (α → ∞). Hull vertices outside that walk can never be optimal and are
//! dropped, as are all points under the hull. The hand-over between consecutive vertices
//! a, b happens where the line through them crosses the d-axis, at 1/x = (δ_a d_b − δ_b d_a)
//! /(δ_b − δ_a): the paper's transition point of Theorem 9, found in closed form.

use crate::candidate::Candidate;

/// A concave chain of candidates with the α at which each hands over to the next.
#[derive(Debug, Clone, Default)]
pub struct Envelope {
    /// Vertices in the order in which they are optimal as α grows: `verts[0]` has the
    /// largest δ (and d), the last one the largest δ/d. Their d strictly decreases.
    verts: Vec<Candidate>,
    /// A caller's tag for each vertex (the pair of rows it came from).
    tags: Vec<u32>,
    /// `breaks[k]`: the α at which `verts[k]` hands over to `verts[k + 1]`; non-decreasing.
    breaks: Vec<f64>,
}

impl Envelope {
    /// The relevant upper hull of `points` (each with δ > 0). O(m log m) for m points.
    pub fn from_points(points: Vec<Candidate>) -> Self {
        Self::from_tagged(points.into_iter().map(|c| (c, 0)).collect())
    }

    /// As [`Envelope::from_points`], keeping a tag with every candidate.
    pub fn from_tagged(mut points: Vec<(Candidate, u32)>) -> Self {
        points.retain(|(c, _)| c.delta > 0.0);
        if points.is_empty() {
            return Self::default();
        }
        // d ascending; for equal d the largest δ first, so that later ones are skipped.
        points.sort_unstable_by(|(a, _), (b, _)| a.d.total_cmp(&b.d).then(b.delta.total_cmp(&a.delta)));
        let origin = (Candidate { d: 0.0, delta: 0.0 }, u32::MAX);
        let mut hull: Vec<(Candidate, u32)> = Vec::new();
        let anchored = points[0].0.d > 0.0;
        if anchored {
            hull.push(origin);
        }
        let mut last_d = f64::NAN;
        for p in points {
            if p.0.d == last_d {
                continue;
            }
            last_d = p.0.d;
            while hull.len() >= 2 && cross(hull[hull.len() - 2].0, hull[hull.len() - 1].0, p.0) >= 0.0 {
                hull.pop();
            }
            hull.push(p);
        }
        if anchored {
            hull.remove(0);
        }
        // Past the vertex of largest δ the hull descends: those vertices are never optimal.
        // Among equal δ the smaller d dominates, so keep the first maximum.
        let mut top = 0;
        for (i, v) in hull.iter().enumerate() {
            if v.0.delta > hull[top].0.delta {
                top = i;
            }
        }
        hull.truncate(top + 1);
        hull.reverse();
        let (verts, tags): (Vec<Candidate>, Vec<u32>) = hull.into_iter().unzip();
        let mut breaks: Vec<f64> = verts.windows(2).map(|w| handover(w[1], w[0])).collect();
        // Rounding can leave a break a few ulps below its predecessor; evaluation checks the
        // neighbouring vertices anyway, but the search needs a sorted array.
        for k in 1..breaks.len() {
            breaks[k] = breaks[k].max(breaks[k - 1]);
        }
        Self { verts, tags, breaks }
    }

    /// The envelope's value max over candidates of log((1 + x q)/(1 + x d)) at α ≥ 0, in
    /// O(log m): a binary search for the segment, then the segment's vertex and its two
    /// neighbours (which absorbs any rounding in the computed break points).
    pub fn eval(&self, alpha: f64) -> f64 {
        if self.verts.is_empty() {
            return 0.0;
        }
        let k = self.breaks.partition_point(|&b| b < alpha);
        let lo = k.saturating_sub(1);
        let hi = (k + 1).min(self.verts.len() - 1);
        self.verts[lo..=hi].iter().map(|c| c.log_ratio(alpha)).fold(0.0, f64::max)
    }

    /// The concave majorant of the chain at abscissa d (with the origin on the left and a
    /// flat continuation on the right): every candidate (d, δ) with δ below it is never
    /// larger than the envelope at any α.
    pub fn height_at(&self, d: f64) -> f64 {
        let Some(first) = self.verts.first() else { return 0.0 };
        if d >= first.d {
            return first.delta;
        }
        self.height_between(self.verts.partition_point(|v| v.d > d), d)
    }

    /// The majorant at d on the edge that ends at vertex i − 1, where i ≥ 1 is the number of
    /// vertices with a larger d than d (and d < the first vertex's d).
    fn height_between(&self, i: usize, d: f64) -> f64 {
        let right = self.verts[i - 1];
        let left = if i < self.verts.len() { self.verts[i] } else { Candidate { d: 0.0, delta: 0.0 } };
        if right.d == left.d {
            return right.delta.max(left.delta);
        }
        left.delta + (right.delta - left.delta) * ((d - left.d) / (right.d - left.d))
    }

    /// The vertices, in the order in which they are optimal as α grows.
    pub fn vertices(&self) -> &[Candidate] {
        &self.verts
    }

    /// The tags of [`Envelope::vertices`], in the same order.
    pub fn tags(&self) -> &[u32] {
        &self.tags
    }

    /// True when `c` lies on or above the hull within a relative margin of a few ulps, i.e.
    /// it may matter; false when it is strictly under it and can never be the maximum.
    pub fn may_matter(&self, c: Candidate) -> bool {
        c.delta > self.height_at(c.d) * (1.0 - 4.0 * f64::EPSILON)
    }

    /// The hand-over points: `breaks()[k]` is where `vertices()[k]` hands over to the next.
    pub fn breaks(&self) -> &[f64] {
        &self.breaks
    }

    /// True when no candidate has δ > 0 (all rows equal: L ≡ 0, Theorem 6).
    pub fn is_empty(&self) -> bool {
        self.verts.is_empty()
    }
}

/// [`Envelope::height_at`] at the cost of a table look-up, for the many evaluations of the
/// pruning in `support`: for each abscissa 2^(e + j/16) (16 per octave, over
/// [`HEIGHT_CELLS`] of them below the first vertex) the table holds where the binary search
/// of `height_at` would land, and a query walks from there over the few vertices of its
/// cell. The values are those of `height_at`, bit for bit.
#[derive(Debug, Clone)]
pub(crate) struct Heights<'e> {
    envelope: &'e Envelope,
    /// Key (see [`height_key`]) of the first tabulated abscissa.
    key_lo: u64,
    /// Per tabulated abscissa x: the number of vertices with d > x.
    start: Vec<u32>,
}

/// Tabulated abscissae of [`Heights`]: 64 octaves.
const HEIGHT_CELLS: u64 = 16 * 64;

/// Orders positive doubles by exponent and four leading mantissa bits.
fn height_key(d: f64) -> u64 {
    d.to_bits() >> 48
}

impl<'e> Heights<'e> {
    /// The table of `envelope`.
    pub(crate) fn new(envelope: &'e Envelope) -> Self {
        let verts = &envelope.verts;
        let Some(first) = verts.first() else { return Self { envelope, key_lo: 0, start: Vec::new() } };
        let key_hi = height_key(first.d) + 1;
        let key_lo = key_hi.saturating_sub(HEIGHT_CELLS);
        let start = (key_lo..key_hi)
            .map(|k| {
                let x = f64::from_bits(k << 48);
                verts.partition_point(|v| v.d > x) as u32
            })
            .collect();
        Self { envelope, key_lo, start }
    }

    /// [`Envelope::height_at`]`(d)` for d ≥ 0.
    pub(crate) fn at(&self, d: f64) -> f64 {
        let verts = &self.envelope.verts;
        let (Some(first), Some(last)) = (verts.first(), verts.last()) else { return 0.0 };
        if d >= first.d {
            return first.delta;
        }
        if d < last.d {
            // The edge from the origin.
            return self.envelope.height_between(verts.len(), d);
        }
        let cell = height_key(d).checked_sub(self.key_lo).and_then(|k| self.start.get(k as usize));
        let Some(&from) = cell else { return self.envelope.height_at(d) };
        // d lies at or above the cell's abscissa: at most `from` vertices have a larger d.
        let mut i = from as usize;
        while i > 0 && verts[i - 1].d <= d {
            i -= 1;
        }
        self.envelope.height_between(i, d)
    }
}

/// (a − o) × (b − o): positive when o → a → b turns counter-clockwise. When a product is
/// near the underflow range (a point near the origin, e.g. a state with probability 1e−256,
/// next to one at 1e−120), each axis is first rescaled by a power of two — exact, and it
/// keeps the sign — so the orientation is still decided correctly.
fn cross(o: Candidate, a: Candidate, b: Candidate) -> f64 {
    let (ad, bd) = (a.d - o.d, b.d - o.d);
    let (ae, be) = (a.delta - o.delta, b.delta - o.delta);
    let (p, r) = (ad * be, ae * bd);
    if p.abs() > SAFE && r.abs() > SAFE {
        return p - r;
    }
    let (sd, se) = (ad.abs().max(bd.abs()), ae.abs().max(be.abs()));
    if sd == 0.0 || se == 0.0 {
        return 0.0;
    }
    let (kd, ke) = (-(sd.log2().floor() as i32), -(se.log2().floor() as i32));
    let (ad, bd, ae, be) = (pow2(ad, kd), pow2(bd, kd), pow2(ae, ke), pow2(be, ke));
    ad * be - ae * bd
}

/// Products above this are far from underflow and keep full relative precision.
const SAFE: f64 = 1e-280;

/// x·2^k for |k| up to 2100, in two exact steps (2^k alone may overflow).
pub(crate) fn pow2(x: f64, k: i32) -> f64 {
    let h = k / 2;
    x * 2f64.powi(h) * 2f64.powi(k - h)
}

/// The α at which `left` (smaller d, optimal for larger α) takes over from `right`:
/// 1/x = (δ_l d_r − δ_r d_l)/(δ_r − δ_l) and α = log(1 + x) = log1p(1/x) − log(1/x). The
/// ratios are formed first so that tiny coordinates do not underflow.
fn handover(left: Candidate, right: Candidate) -> f64 {
    let w = right.delta - left.delta;
    let inv_x = (left.delta / w) * right.d - (right.delta / w) * left.d;
    // NaN, ≤ 0 or ∞ (collinear with the origin, or equal δ): the hand-over is at α = 0.
    if !(inv_x.is_finite() && inv_x > 0.0) {
        return 0.0;
    }
    (inv_x.ln_1p() - inv_x.ln()).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(points: &[Candidate], alpha: f64) -> f64 {
        points.iter().map(|c| c.log_ratio(alpha)).fold(0.0, f64::max)
    }

    #[test]
    fn envelope_equals_brute_force_maximum() {
        let pts = vec![
            Candidate { d: 0.0, delta: 0.1 },
            Candidate { d: 0.05, delta: 0.3 },
            Candidate { d: 0.2, delta: 0.5 },
            Candidate { d: 0.3, delta: 0.52 },
            Candidate { d: 0.25, delta: 0.2 },
            Candidate { d: 0.6, delta: 0.4 },
        ];
        let env = Envelope::from_points(pts.clone());
        assert!(env.vertices().len() < pts.len());
        for i in 0..400 {
            let alpha = i as f64 * 0.1;
            let (a, b) = (env.eval(alpha), brute(&pts, alpha));
            assert!((a - b).abs() <= 1e-15 * b.max(1.0), "alpha {alpha}: {a} vs {b}");
        }
        assert_eq!(env.height_at(10.0), 0.52);
        assert_eq!(env.height_at(0.0), 0.1);
    }

    #[test]
    fn tiny_coordinates_keep_their_vertex() {
        // Regression: the orientation products of a point near 1e−256 and one near 1e−120
        // underflowed to 0, which dropped the steeper point from the hull.
        let near = Candidate { d: 1.4645613972364988e-256, delta: 3.94e-258 };
        let far = Candidate { d: 3.867785987832042e-120, delta: 6.565145667913805e-122 };
        let env = Envelope::from_points(vec![near, far]);
        assert_eq!(env.vertices().len(), 2);
        assert!((env.eval(800.0) - near.log_ratio(800.0)).abs() < 1e-15);
    }

    #[test]
    fn height_table_matches_height_at() {
        let env = Envelope::from_points(vec![
            Candidate { d: 1e-300, delta: 1e-298 },
            Candidate { d: 1e-9, delta: 1e-6 },
            Candidate { d: 0.001, delta: 0.1 },
            Candidate { d: 0.00101, delta: 0.1005 },
            Candidate { d: 0.05, delta: 0.3 },
            Candidate { d: 0.3, delta: 0.52 },
        ]);
        let table = Heights::new(&env);
        for k in 0..=40000 {
            let d = 10f64.powf(-310.0 + k as f64 * 0.00776);
            assert_eq!(table.at(d).to_bits(), env.height_at(d).to_bits(), "d {d}");
        }
        for d in [0.0, 0.001, 0.00101, 0.3, 1.0] {
            assert_eq!(table.at(d), env.height_at(d));
        }
        assert_eq!(Heights::new(&Envelope::default()).at(0.5), 0.0);
    }

    #[test]
    fn empty_envelope_is_zero() {
        let env = Envelope::from_points(vec![]);
        assert!(env.is_empty());
        assert_eq!(env.eval(3.0), 0.0);
    }
}
