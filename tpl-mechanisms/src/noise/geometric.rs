//! The exact two-sided geometric (discrete Laplace) draws behind [`super::DiscreteLaplace`]:
//! what a draw at one scale needs, computed once per scale ([`Plan`]), and the draws
//! themselves, made in batches. [`docs/w-event.md`](tpl_core::guide::w_event) §1.3 states the
//! algorithm and why every draw is exact; this file keeps the proof obligations next to the code
//! that meets them.
//!
//! Notation. A scale b is represented exactly as t/2^j (rounded up when it needs more than 64
//! fractional bits, [`dyadic_at_least`]). The magnitude of a draw is Y = ⌊X/2^j⌋ for X
//! geometric with ratio e^{−1/t} (Pr[X ≥ x] = e^{−x/t}), which makes Y geometric with ratio
//! e^{−1/b}; a fair sign is attached and "−0" is rejected (Canonne, Kamath, Steinke 2020, "The
//! Discrete Gaussian for Differential Privacy", Algorithm 2). X = U + t·V with U the value
//! of a uniform draw in [0, t) kept with probability e^{−U/t}, and V geometric with ratio
//! e^{−1}; both use Bernoulli(e^{−γ}) = "the first K with Bernoulli(γ/K) = 0 is odd" (their
//! Algorithm 1). Every random choice below is an integer comparison against uniform integers.

use rand::RngCore;

/// Candidates of U kept per batch: the batch is drawn first, then each of its values is
/// completed into a draw, so that the loops stay short and free of unpredictable branches.
const BATCH: usize = 256;

/// The short path works with t₀ ≤ 2^SHORT_BITS (`Short`).
const SHORT_BITS: u32 = 10;

/// A numerator of more than SHORT_BITS bits is rounded to REDUCED_BITS bits (`Short`).
const REDUCED_BITS: u32 = 7;

/// At most this many trials of the acceptance test are decided by one draw (`Fused`).
const MAX_FUSED: usize = 8;

/// Bernoulli(e^{−1}) digits: uniform in [0, 6!), one per 16-bit field ([`geometric`]).
const DIGIT: u32 = 720;

/// 2^16 mod 720: the 16-bit fields that Lemire's method rejects for a digit.
const DIGIT_REJECT: u32 = (1 << 16) % DIGIT;

/// Everything a draw at one scale needs, computed once per scale.
#[derive(Debug, Clone)]
pub(crate) enum Plan {
    /// Scales with a numerator t₀ ≤ 2^10, or reduced to one ≤ 2^7 ([`Short`]): every b from
    /// 2^−11 to 2^39 (every scale a release of counts uses) and more.
    Short(Short),
    /// The rest (b above about 2^39, or below 2^−11 with 64 fractional bits): the literal
    /// algorithm in 128-bit integers.
    Wide(Wide),
}

impl Plan {
    /// The plan for scale `scale` (finite, > 0); `None` from 2^74 on, as [`dyadic_at_least`].
    pub(crate) fn new(scale: f64) -> Option<Self> {
        let (t, s) = dyadic_at_least(scale)?;
        let shift = s.trailing_zeros();
        if let Ok(t64) = u64::try_from(t)
            && shift < 64
            && let Some(short) = Short::new(t64, shift)
        {
            return Some(Self::Short(short));
        }
        Some(Self::Wide(Wide { t, shift }))
    }

    /// Fills `out` with independent exact draws, drawing from `rng` and from the unused bits
    /// `bits` kept from `rng` (a pool that lives as long as the generator, so that single
    /// draws do not each take a fresh word for their sign).
    pub(crate) fn fill<R: RngCore>(&self, rng: &mut R, bits: &mut Bits, out: &mut [f64]) {
        match self {
            Self::Short(short) => short.fill(rng, bits, out),
            Self::Wide(wide) => wide.fill(rng, bits, out),
        }
    }
}

/// The short path. Write b = t/2^j. When t has at most 10 significant bits, t₀ = t and
/// b₀ = b. Otherwise t is rounded up to t₀·2^k with t₀ ≤ 2^7 (k = bits(t) − 7, so that the
/// acceptance test draws from 32-bit words, [`Fused`]): the scale b₀ = t₀·2^k/2^j ≥ b, less
/// than 2^−6 above b in relative terms, has a short numerator, and a draw Y₀ at scale b₀ is
/// *thinned* back to scale b exactly ([`Thin`]). For b₀ = t₀·2^m/2^{j₀}: j₀ = j − k, m = 0 when k ≤ j;
/// j₀ = 0, m = k − j (an integer scale b₀ = t₀·2^m) otherwise, and then U = A·2^m + B with A
/// uniform in [0, t₀) and B uniform in [0, 2^m), kept with probability
/// e^{−U/b₀} = e^{−A/t₀}·e^{−B/b₀}: two independent tests, the first on A as for m = 0, the
/// second on B ([`Short::low_test`]).
#[derive(Debug, Clone)]
pub(crate) struct Short {
    /// t₀: A is uniform in [0, t₀).
    t0: u64,
    /// m ≤ 32: B is uniform in [0, 2^m).
    low: u32,
    /// j₀: Y₀ = ⌊(U + t₀·2^m·V)/2^{j₀}⌋.
    shift: u32,
    /// How the acceptance test of A is drawn.
    fused: Fused,
    /// From scale b₀ back to b, when b₀ > b.
    thin: Option<Thin>,
}

impl Short {
    /// The short path for b = t/2^shift, or `None` for the scales it leaves to [`Wide`]:
    /// b₀ above 2^39 (m > 32), or a thinning whose exact fraction would not fit 96 bits.
    fn new(t: u64, shift: u32) -> Option<Self> {
        let bits = u64::BITS - t.leading_zeros();
        if bits <= SHORT_BITS {
            return Some(Self { t0: t, low: 0, shift, fused: Fused::new(t), thin: None });
        }
        let k = bits - REDUCED_BITS;
        let t0 = t.div_ceil(1 << k);
        // e = t₀·2^k − t < 2^k; δ = 1/b − 1/b₀ = 2^j·e/(t·t₀·2^k).
        let e = (u128::from(t0) << k) - u128::from(t);
        let (shift, low, unit, den) = if k <= shift {
            (shift - k, 0, e << (shift - k), u128::from(t) * u128::from(t0))
        } else {
            let m = k - shift;
            let den = (u128::from(t) * u128::from(t0)).checked_shl(m)?;
            (0, m, e, den)
        };
        if low > 32 || den >= 1 << 96 {
            return None;
        }
        let thin = (e > 0).then_some(Thin { unit, den });
        Some(Self { t0, low, shift, fused: Fused::new(t0), thin })
    }

    /// `out.len()` independent draws (see the module documentation).
    fn fill<R: RngCore>(&self, rng: &mut R, bits: &mut Bits, out: &mut [f64]) {
        // A small batch for small fills: the batch array is set up on every call.
        if out.len() <= 8 {
            self.fill_batched::<R, 8>(rng, bits, out)
        } else {
            self.fill_batched::<R, BATCH>(rng, bits, out)
        }
    }

    /// [`Short::fill`] with batches of `B` values of U.
    fn fill_batched<R: RngCore, const B: usize>(&self, rng: &mut R, bits: &mut Bits, out: &mut [f64]) {
        let mut us = [0u64; B];
        let (mut have, mut next) = (0, 0);
        // b₀ = t₀·2^m ≤ 2^42.
        let b0 = self.t0 << self.low;
        // A local copy, kept in registers; written back at the end.
        let mut pool = std::mem::take(bits);
        let mut k = 0;
        while k < out.len() {
            if next == have {
                have = (out.len() - k).min(B);
                self.accepted(rng, &mut pool, &mut us[..have]);
                next = 0;
            }
            let u = us[next];
            next += 1;
            let negative = pool.take(rng, 1) == 1;
            let v = geometric(rng);
            // X = U + b₀·V; V ≥ 2^22 (probability e^{−2^22}) would overflow, and saturates
            // Y₀ at 2^64 − 1.
            let (product, over) = b0.overflowing_mul(v);
            let (x, carry) = product.overflowing_add(u);
            let y0 = if over | carry { u64::MAX } else { x >> self.shift };
            let y = match &self.thin {
                Some(thin) if y0 > 0 => thin.apply(rng, &mut pool, y0),
                _ => y0,
            };
            // Exact for y ≤ 2^53, rounded beyond (the mechanism refuses such noise); through
            // i64, whose conversion is one instruction.
            let magnitude = y.min(i64::MAX as u64) as i64 as f64;
            out[k] = f64::from_bits(magnitude.to_bits() | u64::from(negative) << 63);
            // "−0" is rejected: the draw is made again.
            k += usize::from(!(negative & (y == 0)));
        }
        *bits = pool;
    }

    /// Fills `dest` with values of U that passed the acceptance test.
    fn accepted<R: RngCore>(&self, rng: &mut R, bits: &mut Bits, dest: &mut [u64]) {
        if self.t0 == 1 && self.low == 0 {
            dest.fill(0); // U = 0 is always kept (e^0 = 1)
            return;
        }
        if self.fused.narrow {
            self.accepted_width::<R, true>(rng, bits, dest)
        } else {
            self.accepted_width::<R, false>(rng, bits, dest)
        }
    }

    /// [`Short::accepted`] from 32-bit words when `NARROW`: dispatches the run-time number of
    /// fused trials to its instance of [`Short::accepted_n`] (two fused trials only from
    /// 64-bit words).
    fn accepted_width<R: RngCore, const NARROW: bool>(&self, rng: &mut R, bits: &mut Bits, dest: &mut [u64]) {
        match self.fused.n {
            2 if !NARROW => self.accepted_n::<R, 2, NARROW>(rng, bits, dest),
            3 => self.accepted_n::<R, 3, NARROW>(rng, bits, dest),
            4 => self.accepted_n::<R, 4, NARROW>(rng, bits, dest),
            5 => self.accepted_n::<R, 5, NARROW>(rng, bits, dest),
            6 => self.accepted_n::<R, 6, NARROW>(rng, bits, dest),
            7 => self.accepted_n::<R, 7, NARROW>(rng, bits, dest),
            _ => self.accepted_n::<R, MAX_FUSED, NARROW>(rng, bits, dest),
        }
    }

    /// [`Short::accepted`] with N = `N` trials fused ([`Fused`]), from 32-bit words when
    /// `NARROW`. A word Lemire's method rejects voids its attempt (whether a word is rejected
    /// does not depend on the A and W it would give, so the attempts kept are exactly
    /// uniform); K > N goes on with fresh trials. Neither happens often, so the loop runs
    /// without mispredictions.
    fn accepted_n<R: RngCore, const N: usize, const NARROW: bool>(
        &self,
        rng: &mut R,
        bits: &mut Bits,
        dest: &mut [u64],
    ) {
        let fused = &self.fused;
        let factor: [u64; N] = std::array::from_fn(|k| fused.factor[k]);
        let (t0, low) = (self.t0, self.low);
        let mut n = 0;
        while n < dest.len() {
            let (a, w, valid) =
                if NARROW { fused.split32(rng.next_u32()) } else { fused.split64(rng.next_u64()) };
            let c = fused_count(&factor, a, w);
            let mut keep =
                if c == N { valid && more_trials(rng, a, t0, N as u64 + 1) } else { valid & (c % 2 == 0) };
            let mut u = a;
            if low > 0 {
                let (b, low_keep) = self.low_test(rng, bits, keep);
                u = a << low | b;
                keep &= low_keep;
            }
            dest[n] = u;
            n += usize::from(keep);
        }
    }

    /// B uniform in [0, 2^m) and its test Bernoulli(e^{−B/b₀}), b₀ = t₀·2^m. B/b₀ < 1/t₀ <
    /// 2^−6, so trial 1 (Bernoulli(B/b₀)) nearly always fails, which keeps B, and the first 16
    /// bits of its uniform nearly always show it. When A was already refused (`needed`
    /// false) the attempt is void whatever B's test says, and the test is not finished.
    #[inline(always)]
    fn low_test<R: RngCore>(&self, rng: &mut R, bits: &mut Bits, needed: bool) -> (u64, bool) {
        let b = bits.take(rng, self.low);
        let f = bits.take(rng, 16) as u32;
        let b0 = u128::from(self.t0) << self.low;
        if u128::from(f) * b0 >= u128::from(b) << 16 || !needed {
            return (b, true);
        }
        (b, low_test_rest(rng, f, u128::from(b), b0))
    }
}

/// The first N trials of the acceptance test of A, decided together with A by one uniform
/// integer Z in [0, t₀·D), D = N!·t₀^N: A = ⌊Z/D⌋ and W = Z mod D are independent and
/// uniform, and with γ = A/t₀ the first k trials all succeed, which has probability γ^k/k!,
/// exactly when W < T_k(A) = A^k·t₀^{N−k}·N!/k! (these thresholds decrease with k). So
/// c = #{k ≤ N : W < T_k} is K − 1 when K ≤ N, and c = N leaves K > N to further trials.
#[derive(Debug, Clone)]
struct Fused {
    /// N.
    n: usize,
    /// D = N!·t₀^N.
    d: u64,
    /// t₀·D: Z is uniform below it.
    range: u64,
    /// Whether Z comes from one 32-bit word (range ≤ 2^32) rather than a 64-bit one.
    narrow: bool,
    /// 2^W mod range (W = 32 or 64): Lemire's method rejects a word whose low half is below it.
    reject: u64,
    /// ⌈2^64/D⌉ (narrow only): ⌊Z/D⌋ = ⌊magic·Z/2^64⌋ for every Z < 2^32 (Lemire, Kaser,
    /// Kurz, "Faster remainder by direct computation", 2019, Theorem 1 with N = 32, F = 64).
    magic: u64,
    /// t₀^{N−k}·N!/k! for k = 1..=N (zero beyond N).
    factor: [u64; MAX_FUSED],
}

impl Fused {
    /// The fusion for t₀ ≤ 2^10: from one 32-bit word when some N ≥ 3 fits (the N that
    /// minimises the chance of needing more than N trials, 1/(N + 1)! on average, plus the
    /// chance of a rejected word), else from a 64-bit word with the largest N that fits.
    fn new(t0: u64) -> Self {
        let mut narrow: Option<(f64, Self)> = None;
        let mut wide: Option<Self> = None;
        let mut d: u64 = 1;
        for n in 1..=MAX_FUSED {
            let Some(next) = d.checked_mul(n as u64).and_then(|x| x.checked_mul(t0)) else { break };
            d = next;
            let Some(range) = d.checked_mul(t0) else { break };
            if n < 2 {
                continue;
            }
            if n >= 3 && range <= 1 << 32 {
                let fused = Self::with(t0, n, d, range, true);
                let cost = 1.0 / factorial(n as u64 + 1) as f64 + fused.reject as f64 / 2f64.powi(32);
                if narrow.as_ref().is_none_or(|(c, _)| cost < *c) {
                    narrow = Some((cost, fused));
                }
            }
            wide = Some(Self::with(t0, n, d, range, false));
        }
        match (narrow, wide) {
            (Some((_, fused)), _) | (None, Some(fused)) => fused,
            // t₀ ≤ 2^10 always admits N = 2 in 64 bits (2·2^30 < 2^64).
            (None, None) => unreachable!("t0 = {t0} admits N = 2"),
        }
    }

    /// (A, W, whether Lemire's method keeps the word) from a 32-bit word (narrow fusions).
    #[inline(always)]
    fn split32(&self, word: u32) -> (u64, u64, bool) {
        let m = u64::from(word) * self.range;
        let z = m >> 32;
        let a = ((u128::from(self.magic) * u128::from(z)) >> 64) as u64;
        (a, z - a * self.d, (m & 0xffff_ffff) >= self.reject)
    }

    /// (A, W, whether Lemire's method keeps the word) from a 64-bit word (wide fusions).
    #[inline(always)]
    fn split64(&self, word: u64) -> (u64, u64, bool) {
        let m = u128::from(word) * u128::from(self.range);
        let z = (m >> 64) as u64;
        (z / self.d, z % self.d, m as u64 >= self.reject)
    }

    /// The fusion of N = `n` trials with D = `d` and range = t₀·D, from a 32-bit word
    /// (`narrow`, range ≤ 2^32) or a 64-bit one.
    fn with(t0: u64, n: usize, d: u64, range: u64, narrow: bool) -> Self {
        let (reject, magic) = if narrow {
            (((1u64 << 32) - range) % range, (1u128 << 64).div_ceil(u128::from(d)) as u64)
        } else {
            (range.wrapping_neg() % range, 0)
        };
        let mut factor = [0; MAX_FUSED];
        for (k, slot) in factor.iter_mut().enumerate().take(n) {
            let k = k as u64 + 1;
            // t₀^{N−k}·N!/k! ≤ D < 2^64.
            *slot = t0.pow((n as u64 - k) as u32) * (k + 1..=n as u64).product::<u64>();
        }
        Self { n, d, range, narrow, reject, magic, factor }
    }
}

/// c = #{k ≤ N : W < T_k(A)}, T_k(A) = A^k·`factor[k − 1]` ([`Fused`]).
#[inline(always)]
fn fused_count<const N: usize>(factor: &[u64; N], a: u64, w: u64) -> usize {
    let mut c = 0;
    let mut power = 1u64;
    for &f in factor {
        // A < t₀, so A^k·t₀^{N−k}·N!/k! ≤ D < 2^64.
        power = power.wrapping_mul(a);
        c += usize::from(w < power.wrapping_mul(f));
    }
    c
}

/// n! for small n.
fn factorial(n: u64) -> u64 {
    (1..=n).product()
}

/// The thinning from b₀ down to b ≤ b₀ ([`Short`]). With γ = 1/b and γ₀ = 1/b₀,
/// δ = γ − γ₀ = unit/den ≥ 0 exactly. A magnitude Y geometric with ratio e^{−γ} is
/// min(Y₀, Z) for independent Y₀ and Z geometric with ratios e^{−γ₀} and e^{−δ}
/// (Pr[min ≥ y] = e^{−γ₀y}·e^{−δy}). Given Y₀ = y₀: Y = y₀ with probability
/// Pr[Z ≥ y₀] = e^{−δ·y₀}, else Z conditioned on Z < y₀, drawn by rejection (uniform in
/// [0, y₀), kept with probability e^{−δ·z}).
#[derive(Debug, Clone)]
struct Thin {
    /// 2^{j₀}·e (< 2^63) when m = 0, e (< 2^54) otherwise: δ·y = y·unit/den.
    unit: u128,
    /// t·t₀ (< 2^74) when m = 0, t·t₀·2^m (< 2^96) otherwise.
    den: u128,
}

impl Thin {
    /// Y from Y₀ = `y0` ≥ 1. δ·y₀ is small (below (y₀/b)·2^−6, and y₀/b is about 1), so the first trial of Bernoulli(e^{−δ·y₀}) nearly always fails, which
    /// keeps y₀; the first 16 bits of its uniform, from `bits`, nearly always show it.
    #[inline(always)]
    fn apply<R: RngCore>(&self, rng: &mut R, bits: &mut Bits, y0: u64) -> u64 {
        let num = u128::from(y0) * self.unit;
        if num < self.den {
            let f = bits.take(rng, 16) as u32;
            // F ≥ f/2^16 ≥ δ·y₀: trial 1 fails, K = 1 is odd, Y = y₀.
            if u128::from(f) * self.den >= num << 16 {
                return y0;
            }
            return self.slow(rng, Some(f), num, y0);
        }
        self.slow(rng, None, num, y0)
    }

    /// The rest of [`Thin::apply`]: Bernoulli(e^{−num/den}) with trial 1's uniform starting
    /// with the 16 bits `first` (when num < den), then the truncated draw if it fails.
    #[inline(never)]
    fn slow<R: RngCore>(&self, rng: &mut R, first: Option<u32>, num: u128, y0: u64) -> u64 {
        let keep = match first {
            Some(f) => low_test_rest(rng, f, num, self.den),
            None => bernoulli_exp_ratio(rng, num, self.den),
        };
        if keep { y0 } else { self.truncated(rng, y0) }
    }

    /// Z conditioned on Z < y₀ (y₀ ≥ 1): uniform z in [0, y₀) kept with probability e^{−δ·z}.
    fn truncated<R: RngCore>(&self, rng: &mut R, y0: u64) -> u64 {
        loop {
            let z = below64(rng, y0);
            if bernoulli_exp_ratio(rng, u128::from(z) * self.unit, self.den) {
                return z;
            }
        }
    }
}

/// Bernoulli(e^{−num/den}), num < den, when trial 1's uniform starts with the 16 bits `f`
/// (the rest of [`Short::low_test`] and [`Thin::apply`]): trial 1 finished, then trials 2, 3, ….
#[inline(never)]
fn low_test_rest<R: RngCore>(rng: &mut R, f: u32, num: u128, den: u128) -> bool {
    !ratio_from(rng, f, 16, num, den) || trials_from(rng, 2, num, den)
}

/// The acceptance test of U beyond its fused trials: trials k = `first`, first + 1, … are
/// Bernoulli(u/(t₀·k)); true when the first that fails has an odd k.
#[inline(never)]
fn more_trials<R: RngCore>(rng: &mut R, u: u64, t0: u64, first: u64) -> bool {
    let mut k = first;
    loop {
        // t₀·k < 2^64: t₀ ≤ 2^10 and reaching k has probability below 1/(k − 1)!.
        if below64(rng, t0 * k) >= u {
            return k % 2 == 1;
        }
        k += 1;
    }
}

/// A pool of random bits for fair coins and the tests' first 16 bits: 64 at a time.
#[derive(Debug, Default)]
pub(crate) struct Bits {
    word: u64,
    left: u32,
}

impl Bits {
    /// The next `n` ≤ 32 uniform bits (unused bits left in a word that has fewer than `n`
    /// are skipped).
    #[inline(always)]
    fn take<R: RngCore>(&mut self, rng: &mut R, n: u32) -> u64 {
        if self.left < n {
            self.word = rng.next_u64();
            self.left = 64;
        }
        let out = self.word & ((1 << n) - 1);
        self.word >>= n;
        self.left -= n;
        out
    }
}

/// V geometric with ratio e^{−1}: the number of successes of independent Bernoulli(e^{−1})
/// before the first failure, two digits per 32-bit word (16 bits each, Lemire's method on
/// 2^16 values: a field among the 16 rejected ones sends the word back, which leaves the
/// digits of the words kept exactly uniform in [0, 720)).
#[inline(always)]
fn geometric<R: RngCore>(rng: &mut R) -> u64 {
    let mut v = 0;
    loop {
        let word = rng.next_u32();
        let (m0, m1) = ((word & 0xffff) * DIGIT, (word >> 16) * DIGIT);
        let rejected = ((m0 & 0xffff) < DIGIT_REJECT) | ((m1 & 0xffff) < DIGIT_REJECT);
        let (d0, d1) = (m0 >> 16, m1 >> 16);
        if rejected | (d0 == 0) | (d1 == 0) {
            // Rare (1 word in 1 400): a rejected field sends the word back; a digit 0 needs
            // more trials.
            if rejected {
                continue;
            }
            return v + geometric_rest(rng, [d0, d1]);
        }
        let s0 = digit_success(d0);
        let s1 = s0 & digit_success(d1);
        v += u64::from(s0) + u64::from(s1);
        if !s1 {
            return v;
        }
    }
}

/// [`geometric`] from two digits one of which is 0: each digit decided in turn (a 0 by more
/// trials, [`digit_bernoulli`]), then further Bernoulli(e^{−1}) one digit at a time.
#[inline(never)]
fn geometric_rest<R: RngCore>(rng: &mut R, digits: [u32; 2]) -> u64 {
    let mut v = 0;
    for d in digits {
        if !digit_bernoulli(rng, d) {
            return v;
        }
        v += 1;
    }
    while bernoulli_exp_minus_one(rng) {
        v += 1;
    }
    v
}

/// Which digits d ∈ [1, 720) decide Bernoulli(e^{−1}) = 1 ([`digit_bernoulli`]), as a bitmap.
const DIGIT_SUCCESS: [u64; 16] = {
    let mut map = [0; 16];
    let mut d = 1;
    while d < DIGIT {
        if digit_count(d).is_multiple_of(2) {
            map[(d / 64) as usize] |= 1 << (d % 64);
        }
        d += 1;
    }
    map
};

/// c = #{k ∈ 1..=6 : d < 720/k!}: for d uniform in [0, 720), Pr[c ≥ k] = 1/k! is the chance
/// that Bernoulli(1/1), …, Bernoulli(1/k) all succeed, so c = K − 1 for K the first failing
/// trial when c < 6 (d ≥ 1); d = 0 leaves K > 6 to further trials.
const fn digit_count(d: u32) -> u32 {
    let mut c = 0;
    let mut k = 1;
    let mut fact = 1;
    while k <= 6 {
        fact *= k;
        if d < DIGIT / fact {
            c += 1;
        }
        k += 1;
    }
    c
}

/// Bernoulli(e^{−1}) = [K odd] = [c even] for a digit d ≥ 1 (table lookup).
#[inline(always)]
fn digit_success(d: u32) -> bool {
    (DIGIT_SUCCESS[(d / 64) as usize % 16] >> (d % 64)) & 1 == 1
}

/// Bernoulli(e^{−1}) from a digit d uniform in [0, 720): by [`digit_success`] when d ≥ 1,
/// else by trials 7, 8, … (Bernoulli(1/k), fresh draws).
fn digit_bernoulli<R: RngCore>(rng: &mut R, d: u32) -> bool {
    if d != 0 {
        return digit_success(d);
    }
    let mut k: u32 = 7;
    // Reaching k has probability 1/(k − 1)!: k stays tiny.
    while below_u32(|| rng.next_u32(), k) == 0 {
        k += 1;
    }
    k % 2 == 1
}

/// Bernoulli(e^{−1}), one digit at a time.
fn bernoulli_exp_minus_one<R: RngCore>(rng: &mut R) -> bool {
    let d = below_u32(|| rng.next_u32(), DIGIT);
    digit_bernoulli(rng, d)
}

/// Bernoulli(num/den), 0 ≤ num < den < 2^96, as "F < num/den" for a uniform F in [0, 1)
/// whose leading `bits` (≤ 32) bits are `first`, the rest drawn 32 at a time only as far as
/// needed: with the bits so far, F lies in [w, w + 1)/2^bits, which decides unless
/// num·2^bits falls strictly inside (w·den, (w + 1)·den), leaving the same question about the
/// remaining bits with numerator num·2^bits − w·den < den. Exact.
#[inline]
fn ratio_from<R: RngCore>(rng: &mut R, first: u32, bits: u32, num: u128, den: u128) -> bool {
    let mut lhs = u128::from(first) * den;
    let mut rhs = num << bits;
    loop {
        if lhs + den <= rhs {
            return true;
        }
        if lhs >= rhs {
            return false;
        }
        let r = rhs - lhs;
        lhs = u128::from(rng.next_u32()) * den;
        rhs = r << 32;
    }
}

/// Bernoulli(num/den) for num < den < 2^96 ([`ratio_from`] with a fresh first word).
fn ratio<R: RngCore>(rng: &mut R, num: u128, den: u128) -> bool {
    let first = rng.next_u32();
    ratio_from(rng, first, 32, num, den)
}

/// The trials of Bernoulli(e^{−γ}), γ = num/den < 1 (CKS20 Algorithm 1), from trial `first`
/// on: trial k is Bernoulli(γ/k) = Bernoulli(γ) ∧ Bernoulli(1/k) (independent draws, which
/// avoids the product den·k); true when the first that fails has an odd k.
fn trials_from<R: RngCore>(rng: &mut R, first: u64, num: u128, den: u128) -> bool {
    let mut k = first;
    loop {
        let hit = ratio(rng, num, den) && (k == 1 || below64(rng, k) == 0);
        if !hit {
            return k % 2 == 1;
        }
        k += 1;
    }
}

/// Bernoulli(e^{−num/den}) for den < 2^96, exactly (CKS20 Algorithm 1): e^{−γ} =
/// (e^{−1})^{⌊γ⌋}·e^{−(γ − ⌊γ⌋)}, one Bernoulli(e^{−1}) per whole unit (stopping at the first
/// failure), then the trials for the fraction.
fn bernoulli_exp_ratio<R: RngCore>(rng: &mut R, mut num: u128, den: u128) -> bool {
    while num >= den {
        if !bernoulli_exp_minus_one(rng) {
            return false;
        }
        num -= den;
    }
    num == 0 || trials_from(rng, 1, num, den)
}

/// The literal algorithm for the scales the short path does not take (t up to 2^74, j up to
/// 64): U uniform in [0, t) by [`below`], kept by [`bernoulli_exp_ratio`], V by [`geometric`].
#[derive(Debug, Clone)]
pub(crate) struct Wide {
    /// t.
    t: u128,
    /// j.
    shift: u32,
}

impl Wide {
    /// `out.len()` independent draws.
    fn fill<R: RngCore>(&self, rng: &mut R, bits: &mut Bits, out: &mut [f64]) {
        for slot in out {
            *slot = loop {
                let u = below(rng, self.t);
                if !bernoulli_exp_ratio(rng, u, self.t) {
                    continue;
                }
                let v = geometric(rng);
                // t < 2^74, so t·V overflows only for V ≥ 2^54 (probability e^{−2^54});
                // saturation keeps even that defined.
                let y = u.saturating_add(self.t.saturating_mul(u128::from(v))) >> self.shift;
                let negative = bits.take(rng, 1) == 1;
                if negative && y == 0 {
                    continue;
                }
                // Rounded to nearest beyond 2^53 (the mechanism refuses such noise).
                let y = y as f64;
                break if negative { -y } else { y };
            };
        }
    }
}

/// Integers (t, s), s = 2^k with k ≤ 64, such that t/s ≥ x with equality when x has at most
/// 64 fractional bits, and t < 2^74; `None` when x ≥ 2^74 (such a scale would let t·V and the
/// output overflow the sampler's 128-bit integers).
pub(crate) fn dyadic_at_least(x: f64) -> Option<(u128, u128)> {
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let (mant, e) = if exp == 0 {
        (bits & ((1 << 52) - 1), -1074)
    } else {
        ((bits & ((1 << 52) - 1)) | (1 << 52), exp - 1075)
    };
    // x = mant·2^e with 2^52 ≤ mant < 2^53 (x normal): x < 2^74 ⇔ e ≤ 21.
    let (t, s): (u128, u128) = if e >= 0 {
        if e > 21 {
            return None;
        }
        ((mant as u128) << e, 1)
    } else if e >= -64 {
        (mant as u128, 1u128 << (-e))
    } else {
        // Too many fractional bits: round up to a multiple of 2^−64.
        let shift = (-e - 64) as u32;
        let t = if shift >= 64 { 1 } else { (mant as u128).div_ceil(1u128 << shift) };
        (t.max(1), 1u128 << 64)
    };
    // Reduce t/s: strip the common factors of two (s is a power of two, t ≥ 1).
    let common = t.trailing_zeros().min(s.trailing_zeros());
    Some((t >> common, s >> common))
}

/// Uniform in {0, …, n − 1} by Lemire's multiply-and-reject method ("Fast random integer
/// generation in an interval", ACM TOMACS 2019): the high word of x·n for a uniform W-bit
/// word x, rejecting the 2^W mod n values of x whose low word falls below 2^W mod n, so that
/// every output keeps exactly ⌊2^W/n⌋ preimages. Exact, unlike rand 0.9's `random_range`,
/// which without rand's `unbiased` feature uses a method with a small bias. `n ≥ 1`.
macro_rules! lemire {
    ($name:ident, $word:ty, $wide:ty) => {
        fn $name(mut next: impl FnMut() -> $word, n: $word) -> $word {
            let mut m = <$wide>::from(next()) * <$wide>::from(n);
            if (m as $word) < n {
                // 2^W mod n, computed in W bits as (2^W − n) mod n.
                let threshold = n.wrapping_neg() % n;
                while (m as $word) < threshold {
                    m = <$wide>::from(next()) * <$wide>::from(n);
                }
            }
            (m >> <$word>::BITS) as $word
        }
    };
}

lemire!(below_u32, u32, u64);
lemire!(below_u64, u64, u128);

/// Uniform in {0, …, n − 1}, n ≥ 1, exactly: the narrowest word that holds n (a 32-bit draw
/// costs half a 64-bit one), no draw at all for n = 1, and plain rejection below the next
/// power of two for n > 2^64.
#[inline(always)]
fn below<R: RngCore>(rng: &mut R, n: u128) -> u128 {
    if n <= u128::from(u32::MAX) {
        if n <= 1 { 0 } else { u128::from(below_u32(|| rng.next_u32(), n as u32)) }
    } else {
        below_wide(rng, n)
    }
}

/// [`below`] for n < 2^64, with the same draws.
#[inline(always)]
fn below64<R: RngCore>(rng: &mut R, n: u64) -> u64 {
    if n <= u64::from(u32::MAX) {
        if n <= 1 { 0 } else { u64::from(below_u32(|| rng.next_u32(), n as u32)) }
    } else {
        below_u64(|| rng.next_u64(), n)
    }
}

/// [`below`] for n > 2^32.
#[inline(never)]
fn below_wide<R: RngCore>(rng: &mut R, n: u128) -> u128 {
    if n <= u128::from(u64::MAX) {
        u128::from(below_u64(|| rng.next_u64(), n as u64))
    } else {
        let mask = u128::MAX >> (n - 1).leading_zeros();
        loop {
            let x = ((u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64())) & mask;
            if x < n {
                return x;
            }
        }
    }
}

#[cfg(test)]
mod tests;
