//! Exact budget arithmetic for the w-event schemes: every budget a scheme spends is an integer
//! multiple of one power-of-two unit q tied to ε, so window sums, remainders and halvings are
//! integer operations (no rounding at all), and each step's budgets are f64 values that the
//! integers represent exactly. This is what makes invariant (W) of Kellaris et al.,
//! "Differentially private event sequences over infinite streams" (PVLDB 2014), hold for the
//! printed f64 budgets themselves, not only in real arithmetic.
//!
//! **The unit.** For w < 2^21, q = ulp(ε) = 2^(e−52) for ε ∈ [2^e, 2^(e+1)), so ε = K·q with
//! an integer K < 2^53, and every budget ≤ ε, and every sum of budgets ≤ ε, is an exact f64;
//! the test share ⌊K/(2w)⌋·q is then below ε/(2w) by less than 2w·2^−52 ≤ 2^−30 relative.
//! For longer windows q is made finer by bits(w) − 21 bits (at most 43 for a 64-bit w), which
//! keeps that bound of 2^−30; a step total test + publication may then need more than 53 bits
//! and is rounded *up* ([`sum_up`]), and the schemes charge the rounding to their
//! publication pools. q is never below the smallest subnormal 2^−1074.

/// 2^k as an f64, for −1074 ≤ k ≤ 1023 (exact: a power of two in range).
pub(crate) fn pow2(k: i32) -> f64 {
    debug_assert!((-1074..=1023).contains(&k));
    if k >= -1022 { f64::from_bits(((k + 1023) as u64) << 52) } else { f64::from_bits(1u64 << (k + 1074)) }
}

/// The exponent of ulp(x) for finite x > 0 (−1074 for subnormals).
fn ulp_exponent(x: f64) -> i32 {
    let field = ((x.to_bits() >> 52) & 0x7ff) as i32;
    if field == 0 { -1074 } else { field - 1075 }
}

/// The integer grid of one scheme's budgets: ε = K·q for a power of two q
/// ([`docs/w-event.md`](tpl_core::guide::w_event) §4): every budget a rule spends is k·q for an
/// integer k, so window sums, remainders and halvings are integer operations and the f64 budgets
/// keep (W) exactly. A rule reads its scheme's grid with [`crate::WEventParams::grid`].
///
/// ```
/// use tpl_mechanisms::WEventParams;
/// let params = WEventParams::new(1.0, 10, 2.0)?;
/// let grid = params.grid();
/// let half = grid.value(grid.epsilon() / 2);
/// assert_eq!(half, 0.5);
/// // After steps that spent 0.75 of the window, 0.25 is left, exactly.
/// assert_eq!(grid.room(grid.units(0.75)), 0.25);
/// # Ok::<(), tpl_mechanisms::MechError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetGrid {
    unit: f64,
    epsilon: u128,
}

impl BudgetGrid {
    /// The grid for budget `epsilon` (finite, > 0) and a window of `window` ≥ 1 steps.
    pub fn new(epsilon: f64, window: usize) -> Self {
        // 2w < 2^(bits(w) + 1): ⌊K/(2w)⌋ has at least 52 + extra − bits(w) ≥ 31 bits.
        let bits = (usize::BITS - window.leading_zeros()) as i32;
        let extra = (bits - 21).max(0);
        let unit = pow2((ulp_exponent(epsilon) - extra).max(-1074));
        // Exact: a division by a power of two whose quotient (< 2^96) is representable.
        Self { unit, epsilon: (epsilon / unit) as u128 }
    }

    /// K = ε/q.
    pub fn epsilon(&self) -> u128 {
        self.epsilon
    }

    /// ⌊x/q⌋ for finite x ≥ 0 (exact for x on the grid).
    pub fn units(&self, x: f64) -> u128 {
        // x/q is a multiplication by a power of two: exact while it stays below 2^128.
        (x / self.unit).floor() as u128
    }

    /// The largest f64 ≤ k·q that is on the grid: k cut to its 53 leading bits (exact for every
    /// k < 2^53, which covers every budget ≤ ε while w < 2^21).
    pub fn value(&self, k: u128) -> f64 {
        let shift = (128 - k.leading_zeros()).saturating_sub(53);
        // Both conversions are exact: ≤ 53 significant bits, times a power of two ≥ 2^−1074
        // (the product is a multiple of 2^−1074 with ≤ 53 bits, hence representable).
        ((k >> shift << shift) as f64) * self.unit
    }

    /// ⌊k/n⌋ on the grid, as an f64: the largest budget b with n·b ≤ k·q exactly (n ≥ 1).
    pub fn share(&self, k: u128, n: usize) -> f64 {
        self.value(k / n.max(1) as u128)
    }

    /// What the window ending at this step may still spend: the largest f64 on the grid r
    /// with (Σ of the last w − 1 step totals) + r ≤ ε exactly, `recent` being that sum in
    /// grid units ([`crate::RecentSpend::sum`]).
    pub fn room(&self, recent: u128) -> f64 {
        self.value(self.epsilon.saturating_sub(recent))
    }

    /// The largest publication budget ≤ `p` whose step total `test` + publication (rounded
    /// up, [`crate::StepBudget::total`]) stays within `room`, given `test` ≤ `room`. While
    /// w < 2^21 totals are exact and it returns `p` whenever `test` + `p` ≤ `room`; for
    /// longer windows it keeps a total's rounding inside the room it is charged to.
    pub fn fit(&self, room: f64, test: f64, p: f64) -> f64 {
        p.min(self.value(self.units(room).saturating_sub(self.units(test))))
    }
}

/// a + b rounded up to an f64 (a, b ≥ 0 finite): never below the real sum. Knuth's two-sum
/// gives the rounding error of a + b exactly; a positive error means the sum was rounded down.
pub(crate) fn sum_up(a: f64, b: f64) -> f64 {
    let s = a + b;
    let bb = s - a;
    let err = (a - (s - bb)) + (b - bb);
    if err > 0.0 { s.next_up() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_is_ulp_of_epsilon_for_ordinary_windows() {
        let g = BudgetGrid::new(1.0, 10);
        assert_eq!(g.epsilon(), 1 << 52);
        assert_eq!(g.value(g.epsilon()), 1.0);
        // Ten shares of 1/10 never exceed 1 (the f64 nearest to 0.1 is above 0.1).
        let s = g.share(g.epsilon(), 10);
        assert!(s < 0.1 && g.units(s) * 10 <= g.epsilon());
        let g = BudgetGrid::new(0.7, 50);
        assert_eq!(g.value(g.epsilon()), 0.7);
    }

    #[test]
    fn long_windows_get_a_finer_unit_and_a_precise_share() {
        for w in [(1usize << 21) - 1, 1 << 21, 1_000_000_000, 1 << 51, 1 << 52, 1 << 62, usize::MAX] {
            for eps in [1e-6, 1.0, 1e3, f64::MAX] {
                let g = BudgetGrid::new(eps, w);
                let s = g.share(g.epsilon() / 2, w);
                assert!(s > 0.0, "ε = {eps}, w = {w}");
                assert!(g.units(s) * w as u128 <= g.epsilon() / 2);
                let real = eps / 2.0 / w as f64;
                assert!((real - s) / real < 2f64.powi(-30) + 1e-15, "ε = {eps}, w = {w}: {s} vs {real}");
                assert_eq!(g.value(g.epsilon()), eps);
            }
        }
    }

    #[test]
    fn subnormal_epsilon_keeps_the_smallest_unit() {
        let g = BudgetGrid::new(5e-324, 3);
        assert_eq!(g.epsilon(), 1);
        assert_eq!(g.share(g.epsilon(), 3), 0.0);
        let g = BudgetGrid::new(f64::MIN_POSITIVE, 1);
        assert_eq!(g.value(g.epsilon()), f64::MIN_POSITIVE);
    }

    #[test]
    fn sum_up_never_rounds_down() {
        assert_eq!(sum_up(0.1, 0.2), 0.1 + 0.2); // rounded up already
        assert_eq!(sum_up(0.25, 0.5), 0.75);
        let (a, b) = (1.0, 2f64.powi(-60));
        assert_eq!(sum_up(a, b), 1.0f64.next_up());
        assert_eq!(sum_up(0.05, 0.25), 0.3f64.next_up()); // 0.05 + 0.25 is just above 0.3
    }
}
