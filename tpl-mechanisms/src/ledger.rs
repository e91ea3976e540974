//! An independent checker of invariant (W) of Kellaris et al., "Differentially private event
//! sequences over infinite streams" (PVLDB 2014): every window of w consecutive steps spends
//! at most ε.

use std::collections::VecDeque;

use crate::budget::pow2;

/// Fed with the budgets ε_t a run spent, it keeps the **exact** sum of the window of the last
/// w steps (the real sum of the f64 values, with no rounding at all) as steps come and go, and
/// the largest such sum, reported rounded *up* to an f64 so that it never under-reports.
/// O(1) work per step and memory for min(w, steps so far) budgets: never sized by w itself.
///
/// ```
/// use tpl_mechanisms::WindowLedger;
/// let mut l = WindowLedger::new(2);
/// for e in [0.5, 0.25, 0.5] { l.push(e); }
/// assert_eq!(l.max_window_budget(), 0.75);
/// // 0.1 + 0.2 + 0.4 is above 0.7 in real arithmetic (though 0.7 in f64 arithmetic).
/// let mut l = WindowLedger::new(3);
/// for e in [0.1, 0.2, 0.4] { l.push(e); }
/// assert!(l.max_window_budget() > 0.7 && !l.within(0.7));
/// ```
#[derive(Debug, Clone)]
pub struct WindowLedger {
    window: usize,
    budgets: VecDeque<f64>,
    sum: ExactSum,
    max: f64,
    /// Set once a non-finite budget is pushed: then every later maximum is NaN or +∞.
    non_finite: Option<f64>,
}

impl WindowLedger {
    /// A ledger for windows of `window` ≥ 1 steps (0 is taken as 1).
    pub fn new(window: usize) -> Self {
        Self {
            window: window.max(1),
            budgets: VecDeque::new(),
            sum: ExactSum::default(),
            max: 0.0,
            non_finite: None,
        }
    }

    /// Records ε_t and returns the exact sum of the window ending at t, rounded up to an f64
    /// (+∞ past f64::MAX; NaN or +∞ for ever after a non-finite ε_t).
    pub fn push(&mut self, eps: f64) -> f64 {
        if !eps.is_finite() {
            let v = if eps.is_nan() { eps } else { f64::INFINITY };
            self.non_finite.get_or_insert(v);
        }
        if let Some(v) = self.non_finite {
            self.max = v;
            return v;
        }
        if self.budgets.len() == self.window
            && let Some(old) = self.budgets.pop_front()
        {
            self.sum.add(-old);
        }
        self.budgets.push_back(eps);
        self.sum.add(eps);
        let sum = self.sum.round_up();
        self.max = self.max.max(sum);
        sum
    }

    /// The exact sum, rounded up, of the window that would end with a next step spending
    /// `eps` (finite, ≥ 0), without recording it: what [`WindowLedger::push`] would return.
    /// O(1); a check before a budget is spent ([`docs/stream.md`](tpl_core::guide::stream)).
    ///
    /// ```
    /// use tpl_mechanisms::WindowLedger;
    /// let mut l = WindowLedger::new(2);
    /// l.push(0.5);
    /// assert_eq!(l.peek(0.5), 1.0);
    /// assert!(l.peek(0.5000000000000001) > 1.0);
    /// assert_eq!(l.max_window_budget(), 0.5); // nothing recorded
    /// ```
    pub fn peek(&self, eps: f64) -> f64 {
        if let Some(v) = self.non_finite {
            return v;
        }
        if !eps.is_finite() {
            return if eps.is_nan() { eps } else { f64::INFINITY };
        }
        let mut sum = self.sum.clone();
        if self.budgets.len() == self.window
            && let Some(&old) = self.budgets.front()
        {
            sum.add(-old);
        }
        sum.add(eps);
        sum.round_up()
    }

    /// max over t of Σ_{k = max(1, t−w+1)}^{t} ε_k, the exact maximum rounded up to an f64.
    pub fn max_window_budget(&self) -> f64 {
        self.max
    }

    /// Whether every window's exact sum is ≤ `epsilon` (no slack: the schemes' promise holds
    /// for the f64 budgets themselves).
    pub fn within(&self, epsilon: f64) -> bool {
        self.max <= epsilon
    }
}

/// Words of [`ExactSum`]: 2^−1074 … 2^1024 needs 2098 bits, plus 64 bits of headroom for
/// 2^64 terms and a sign bit: 2163 bits, in 34 words of 64.
const WORDS: usize = 34;

/// An exact accumulator of f64 values (a long fixed-point integer in units of 2^−1074, in
/// two's complement): adding or removing a term is exact and touches O(1) words plus a carry.
#[derive(Debug, Clone)]
struct ExactSum {
    words: [u64; WORDS],
}

impl Default for ExactSum {
    fn default() -> Self {
        Self { words: [0; WORDS] }
    }
}

impl ExactSum {
    /// Adds a finite x (subtracts for x < 0).
    fn add(&mut self, x: f64) {
        let bits = x.to_bits();
        let field = ((bits >> 52) & 0x7ff) as usize;
        let fraction = bits & ((1 << 52) - 1);
        // x = ±m·2^(offset − 1074).
        let (m, offset) = if field == 0 { (fraction, 0) } else { (fraction | 1 << 52, field - 1) };
        if m == 0 {
            return;
        }
        let (word, shift) = (offset / 64, offset % 64);
        let wide = u128::from(m) << shift;
        let parts = [wide as u64, (wide >> 64) as u64];
        let negative = bits >> 63 == 1;
        let mut carry = false;
        for (i, w) in self.words[word..].iter_mut().enumerate() {
            let part = parts.get(i).copied().unwrap_or(0);
            if i >= 2 && !carry {
                break;
            }
            (*w, carry) = if negative {
                let (v, b1) = w.overflowing_sub(part);
                let (v, b2) = v.overflowing_sub(u64::from(carry));
                (v, b1 || b2)
            } else {
                let (v, c1) = w.overflowing_add(part);
                let (v, c2) = v.overflowing_add(u64::from(carry));
                (v, c1 || c2)
            };
        }
    }

    /// The exact value rounded up (towards +∞) to an f64; +∞ past f64::MAX.
    fn round_up(&self) -> f64 {
        if self.words[WORDS - 1] >> 63 == 1 {
            // Negative: −(|x| rounded down).
            let mut neg = Self::default();
            let mut carry = true;
            for (n, w) in neg.words.iter_mut().zip(&self.words) {
                (*n, carry) = (!w).overflowing_add(u64::from(carry));
            }
            return -neg.magnitude(false);
        }
        self.magnitude(true)
    }

    /// The (non-negative) value rounded up or down to an f64.
    fn magnitude(&self, up: bool) -> f64 {
        let Some(top) = self.words.iter().rposition(|&w| w != 0) else { return 0.0 };
        let high = 64 * top + 63 - self.words[top].leading_zeros() as usize; // highest set bit
        if high < 53 {
            // An integer < 2^53 times 2^−1074: exact.
            return self.words[0] as f64 * f64::from_bits(1);
        }
        // The 53 bits from `high` down, and whether anything below them is set.
        let low = high - 52;
        let (word, shift) = (low / 64, low % 64);
        let mut mantissa = self.words[word] >> shift;
        if shift > 11 {
            // The 53 bits reach into the next word.
            mantissa |= self.words[word + 1] << (64 - shift);
        }
        let mantissa = mantissa & ((1 << 53) - 1);
        let sticky = (0..low / 64).any(|i| self.words[i] != 0)
            || self.words[low / 64] & ((1u64 << (low % 64)) - 1) != 0;
        let mantissa = mantissa + u64::from(up && sticky);
        // mantissa·2^(low − 1074), mantissa ≤ 2^53: build 2^(low − 1074) in two steps to stay
        // in range (both factors exact powers of two; the product is exact or overflows).
        let e = low as i32 - 1074;
        let (a, b) = if e > 1023 { (1023, e - 1023) } else { (e, 0) };
        mantissa as f64 * pow2(a) * pow2(b.min(1023))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_sum_adds_and_removes_without_error() {
        let mut s = ExactSum::default();
        for x in [1e300, 1.0, 1e-300, 5e-324] {
            s.add(x);
        }
        s.add(-1e300);
        assert_eq!(s.round_up(), 1.0f64.next_up());
        s.add(-1e-300);
        s.add(-5e-324);
        assert_eq!(s.round_up(), 1.0);
        s.add(-1.0);
        assert_eq!(s.round_up(), 0.0);
        s.add(-5e-324);
        assert_eq!(s.round_up(), -5e-324);
        s.add(5e-324);
        for _ in 0..4 {
            s.add(f64::MAX);
        }
        assert_eq!(s.round_up(), f64::INFINITY);
    }

    /// The 53 leading bits read word-wise, against reading them one bit at a time.
    #[test]
    fn magnitude_reads_the_leading_bits_of_any_sum() {
        let by_bits = |s: &ExactSum, up: bool| {
            let Some(top) = s.words.iter().rposition(|&w| w != 0) else { return 0.0 };
            let high = 64 * top + 63 - s.words[top].leading_zeros() as usize;
            if high < 53 {
                return s.words[0] as f64 * f64::from_bits(1);
            }
            let low = high - 52;
            let mantissa = (low..=high).rev().fold(0u64, |m, i| m << 1 | (s.words[i / 64] >> (i % 64) & 1));
            let sticky = (0..low).any(|i| s.words[i / 64] >> (i % 64) & 1 == 1);
            let e = low as i32 - 1074;
            let (a, b) = if e > 1023 { (1023, e - 1023) } else { (e, 0) };
            (mantissa + u64::from(up && sticky)) as f64 * pow2(a) * pow2(b.min(1023))
        };
        let mut x = 0x1234_5678_9abc_def1u64;
        for _ in 0..2000 {
            let mut s = ExactSum::default();
            for _ in 0..4 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let v = f64::from_bits(x & !(1 << 63) & !(0x7ff << 52) | ((x >> 20) % 0x7ff) << 52);
                s.add(v);
            }
            for up in [false, true] {
                assert_eq!(s.magnitude(up).to_bits(), by_bits(&s, up).to_bits());
            }
        }
    }

    #[test]
    fn rounds_up_only_when_inexact() {
        let mut s = ExactSum::default();
        s.add(0.1);
        s.add(0.2);
        // 0.1 + 0.2 in reals lies between 0.3 and 0.1 + 0.2 in f64, which is its round-up.
        assert_eq!(s.round_up(), 0.1 + 0.2);
        let mut s = ExactSum::default();
        s.add(0.5);
        s.add(0.25);
        assert_eq!(s.round_up(), 0.75);
        let mut s = ExactSum::default();
        s.add(f64::MIN_POSITIVE);
        s.add(-5e-324);
        assert_eq!(s.round_up(), f64::MIN_POSITIVE.next_down());
    }
}
