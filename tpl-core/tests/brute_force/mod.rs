//! Reference computations of L(α) shared by the loss tests, independent of the crate's
//! candidate/envelope machinery: eq. (24) of the TKDE paper taken literally, the maximum over
//! ordered pairs of distinct rows and all 2^n subsets S, and the three evaluators side by side.

use tpl_core::{DirectLoss, LossEvaluator, PairTableLoss, PiecewiseLoss, TransitionMatrix};

/// (Σ_{i∈S} d_i, Σ_{i∈S} (q_i − d_i), Σ_{i∉S} q_i) for the subset S given as a bit mask. The
/// gap is summed from the differences q_i − d_i and 1 − q_S from the entries outside S, so
/// neither is formed by subtracting two nearly equal sums.
fn subset_sums(q: &[f64], d: &[f64], mask: u32) -> (f64, f64, f64) {
    let (mut d_s, mut gap, mut q_out) = (0.0, 0.0, 0.0);
    for i in 0..q.len() {
        if mask & (1 << i) != 0 {
            d_s += d[i];
            gap += q[i] - d[i];
        } else {
            q_out += q[i];
        }
    }
    (d_s, gap, q_out)
}

/// The maximum of `value(q, d, mask)` over ordered pairs of distinct rows and all 2^n
/// subsets, and 0 (S = ∅).
fn brute_force(m: &TransitionMatrix, value: impl Fn(&[f64], &[f64], u32) -> f64) -> f64 {
    let n = m.n();
    let mut best = 0.0f64;
    for a in 0..n {
        for b in 0..n {
            if a == b {
                continue;
            }
            for mask in 1..(1u32 << n) {
                best = best.max(value(&m.row(a).to_vec(), &m.row(b).to_vec(), mask));
            }
        }
    }
    best
}

/// Eq. (24) by enumeration with x = e^α − 1 formed explicitly, so for α ≤ 700 (x finite; the
/// properties use it for α ≤ 30): log((1 + x q_S)/(1 + x d_S)) = log1p(x (q_S − d_S)/(1 + x d_S)),
/// which keeps full relative precision when q_S and d_S nearly cancel and when α is tiny.
pub fn brute_force_moderate(m: &TransitionMatrix, alpha: f64) -> f64 {
    let x = alpha.exp_m1();
    brute_force(m, |q, d, mask| {
        let (d_s, gap, _) = subset_sums(q, d, mask);
        if gap <= 0.0 { 0.0 } else { (x * gap / (1.0 + x * d_s)).ln_1p() }
    })
}

/// Eq. (24) by enumeration, for α ≥ 800 where e^α overflows. With 1 + x p = (1 − p) + p e^α
/// and r(p) = (1 − p) e^{−α}/p = (1 − p)·exp(−α − ln p):
/// - d_S > 0: log((1 + x q_S)/(1 + x d_S)) = log1p(δ/d_S) + log1p(r(q_S)) − log1p(r(d_S)),
///   δ = q_S − d_S, so that log(q_S/d_S) does not cancel for nearly equal sums;
/// - d_S = 0: log(1 + x q_S) = α + ln q_S + log1p(r(q_S)).
pub fn brute_force_large(m: &TransitionMatrix, alpha: f64) -> f64 {
    let r = |p: f64, one_minus_p: f64| one_minus_p * (-alpha - p.ln()).exp();
    brute_force(m, |q, d, mask| {
        let (d_s, gap, q_out) = subset_sums(q, d, mask);
        if gap <= 0.0 {
            return 0.0;
        }
        let q_s = d_s + gap;
        if d_s == 0.0 {
            alpha + q_s.ln() + r(q_s, q_out).ln_1p()
        } else {
            let d_out: f64 = (0..q.len()).filter(|i| mask & (1 << i) == 0).map(|i| d[i]).sum();
            (gap / d_s).ln_1p() + r(q_s, q_out).ln_1p() - r(d_s, d_out).ln_1p()
        }
    })
}

/// The three evaluators of one matrix.
pub fn evaluators(m: &TransitionMatrix) -> [(&'static str, Box<dyn LossEvaluator>); 3] {
    [
        ("direct", Box::new(DirectLoss::new(m))),
        ("pair-table", Box::new(PairTableLoss::new(m))),
        ("piecewise", Box::new(PiecewiseLoss::new(m))),
    ]
}
