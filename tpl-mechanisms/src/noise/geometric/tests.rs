use std::collections::VecDeque;

use super::*;

#[test]
fn dyadic_representation_is_exact_or_above() {
    assert_eq!(dyadic_at_least(20.0), Some((20, 1)));
    assert_eq!(dyadic_at_least(2.5), Some((5, 2)));
    let (t, s) = dyadic_at_least(0.1).unwrap();
    assert_eq!(t as f64 / s as f64, 0.1);
    let tiny = 1e-30;
    let (t, s) = dyadic_at_least(tiny).unwrap();
    assert!(t as f64 / s as f64 >= tiny);
    let two_74 = 2f64.powi(74);
    assert_eq!(dyadic_at_least(two_74.next_down()), Some(((1u128 << 74) - (1 << 21), 1)));
    assert_eq!(dyadic_at_least(two_74), None);
    assert_eq!(dyadic_at_least(1e30), None);
    assert_eq!(dyadic_at_least(1e40), None);
}

lemire!(below_u8, u8, u16);

/// Lemire's method, exhaustively on 8-bit words (the same code as the 32- and 64-bit
/// instances): for every n, the accepted words map onto 0..n exactly ⌊256/n⌋ times each
/// and exactly 256 mod n words are rejected.
#[test]
fn lemire_is_exact_on_every_8_bit_range() {
    for n in 1..=255u8 {
        let mut hits = vec![0u32; usize::from(n)];
        let mut rejected = 0u32;
        for x in 0..=255u8 {
            let mut calls = 0;
            // 255 is accepted for every n, so a rejected x ends the loop on the second draw.
            let out = below_u8(
                || {
                    calls += 1;
                    if calls == 1 { x } else { 255 }
                },
                n,
            );
            if calls == 1 {
                hits[usize::from(out)] += 1;
            } else {
                rejected += 1;
            }
        }
        assert_eq!(rejected, 256 % u32::from(n), "n = {n}");
        assert!(hits.iter().all(|&h| h == 256 / u32::from(n)), "n = {n}: {hits:?}");
    }
}

/// The fused trials, exhaustively for every Z of small fusions: each A gets D values of
/// W, and exactly T_k(A) = D·(A/t₀)^k/k! of them pass the first k trials (c ≥ k), for
/// 32-bit splits (with the multiply-shift division) and 64-bit ones alike.
#[test]
fn fused_trials_have_exact_probabilities() {
    for t0 in 1..=12u64 {
        for n in 2..=3usize {
            let d = factorial(n as u64) * t0.pow(n as u32);
            let range = t0 * d;
            for narrow in [true, false] {
                let fused = Fused::with(t0, n, d, range, narrow);
                let factor: [u64; 3] = std::array::from_fn(|k| fused.factor[k]);
                // at_least[a][k] = #{w : c ≥ k + 1}
                let mut at_least = vec![[0u64; 3]; t0 as usize];
                let mut per_a = vec![0u64; t0 as usize];
                for z in 0..range {
                    let (a, w) = if narrow {
                        // The word whose product with range has high half z and low half
                        // at the top: Lemire keeps it.
                        let word = (((z + 1) << 32) - 1) / range;
                        let (a, w, kept) = fused.split32(word as u32);
                        assert!(kept && a * d + w == z, "t0 {t0} n {n} z {z}");
                        (a, w)
                    } else {
                        (z / d, z % d)
                    };
                    assert!(a < t0 && w < d);
                    per_a[a as usize] += 1;
                    let c = if n == 2 {
                        fused_count(&[factor[0], factor[1]], a, w)
                    } else {
                        fused_count(&factor, a, w)
                    };
                    for count in at_least[a as usize].iter_mut().take(c) {
                        *count += 1;
                    }
                }
                for a in 0..t0 {
                    assert_eq!(per_a[a as usize], d);
                    for k in 1..=n as u64 {
                        // D·(a/t₀)^k/k! = a^k·t₀^{N−k}·N!/k!
                        let expected = a.pow(k as u32) * t0.pow((n as u64 - k) as u32) * factorial(n as u64)
                            / factorial(k);
                        assert_eq!(
                            at_least[a as usize][k as usize - 1],
                            expected,
                            "t0 {t0} n {n} a {a} k {k}"
                        );
                    }
                }
            }
        }
    }
}

/// The fusion chosen for every t₀ of the short path: a valid N, D = N!·t₀^N, thresholds
/// that stay below D, and a multiply-shift division that agrees with `/` around every
/// multiple of D (where an error would show first) and at random points.
#[test]
fn chosen_fusions_are_consistent() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for t0 in 1..=1u64 << SHORT_BITS {
        let fused = Fused::new(t0);
        let n = fused.n;
        assert!((2..=MAX_FUSED).contains(&n));
        assert_eq!(fused.d, factorial(n as u64) * t0.pow(n as u32));
        assert_eq!(fused.range, t0 * fused.d);
        assert!(fused.factor[..n].iter().enumerate().all(|(k, f)| (t0 - 1).pow(k as u32 + 1) * f < fused.d));
        if t0 <= 163 {
            assert!(fused.narrow && n >= 3, "t0 {t0}");
        }
        if fused.narrow {
            assert!(fused.range <= 1 << 32 && fused.reject == (1u64 << 32) % fused.range);
            let check = |z: u64| {
                let a = ((u128::from(fused.magic) * u128::from(z)) >> 64) as u64;
                assert_eq!(a, z / fused.d, "t0 {t0} z {z}");
            };
            for a in 0..t0 {
                for z in [a * fused.d, (a + 1) * fused.d - 1] {
                    check(z);
                }
            }
            for _ in 0..64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                check(x % fused.range);
            }
        } else {
            assert_eq!(fused.reject, ((1u128 << 64) % u128::from(fused.range)) as u64);
        }
    }
}

/// The Bernoulli(e^{−1}) digits: every digit in [0, 720) comes from exactly 91 of the
/// 2^16 field values and 16 values are rejected; the digits d ≥ 1 end the trials at K
/// with exactly the probability 1/(K − 1)! − 1/K! of K = 2…6 (out of 720), d = 0 leaves
/// K ≥ 7 (1/6!), and the success table marks exactly the odd K.
#[test]
fn digits_decide_bernoulli_exp_minus_one_exactly() {
    let mut per_digit = [0u32; DIGIT as usize];
    let mut rejected = 0;
    for f in 0..1u32 << 16 {
        let m = f * DIGIT;
        if (m & 0xffff) < DIGIT_REJECT {
            rejected += 1;
        } else {
            per_digit[(m >> 16) as usize] += 1;
        }
    }
    assert_eq!(rejected, 16);
    assert!(per_digit.iter().all(|&c| c == 91));
    let mut per_k = [0u32; 8];
    for d in 1..DIGIT {
        let k = digit_count(d) + 1;
        per_k[k as usize] += 1;
        assert_eq!(digit_success(d), k % 2 == 1, "d = {d}");
    }
    let fact = |k: u32| factorial(u64::from(k)) as u32;
    for k in 2..=6 {
        assert_eq!(per_k[k as usize], DIGIT / fact(k - 1) - DIGIT / fact(k), "K = {k}");
    }
    assert_eq!(digit_count(0), 6);
    assert_eq!(DIGIT_SUCCESS.iter().map(|w| w.count_ones()).sum::<u32>(), 240 + 24);
}

/// The lazy comparison: a first word that leaves the question open draws a second one,
/// which then decides on the remaining numerator; a 16-bit first digit works the same way.
#[test]
fn ratio_refines_ambiguous_words() {
    let d = (1u128 << 32) + 1; // 1/d lies inside [0, 1)/2^32: the word 0 is ambiguous
    let mut rng = Words(VecDeque::from([0, 0]));
    assert!(ratio(&mut rng, 1, d)); // F < 2^-64 < 1/d
    assert!(rng.0.is_empty());
    // Word 2^32 − 1 leaves the remaining numerator 1 open again; word 1 then says no.
    let mut rng = Words(VecDeque::from([0, u64::from(u32::MAX), 1]));
    assert!(!ratio(&mut rng, 1, d));
    assert!(rng.0.is_empty());
    let mut rng = Words(VecDeque::from([1]));
    assert!(!ratio(&mut rng, 1, d)); // F ≥ 2^-32 > 1/d: decided by one word
    let mut rng = Words(VecDeque::from([u64::from(u32::MAX) - 1]));
    assert!(ratio(&mut rng, d - 1, d)); // F < 1 − 2^-32 < (d − 1)/d
    // A first digit of 16 bits against x = 7/2^18: digit 2 puts F ≥ 8/2^18 at once;
    // digit 1 puts F in [4, 8)/2^18, and the next word decides (F < 7/2^18 ⇔ word < 3·2^30).
    let den = 1u128 << 18;
    let mut rng = Words(VecDeque::new());
    assert!(!ratio_from(&mut rng, 2, 16, 7, den));
    let mut rng = Words(VecDeque::from([1 << 31]));
    assert!(ratio_from(&mut rng, 1, 16, 7, den));
    let mut rng = Words(VecDeque::from([3 << 30]));
    assert!(!ratio_from(&mut rng, 1, 16, 7, den));
}

/// A source of scripted 32/64-bit words.
struct Words(VecDeque<u64>);

impl RngCore for Words {
    fn next_u32(&mut self) -> u32 {
        self.next_u64() as u32
    }
    fn next_u64(&mut self) -> u64 {
        self.0.pop_front().expect("script long enough")
    }
    fn fill_bytes(&mut self, _: &mut [u8]) {
        unimplemented!("not used by the samplers")
    }
}

/// Regression: the word 0 is the one 32-bit word that `below(3)` must reject
/// (2^32 mod 3 = 1). rand 0.9's default `random_range` returns 0 for it instead, a bias.
#[test]
fn below_rejects_the_biased_word() {
    let mut rng = Words(VecDeque::from([0, u64::from(u32::MAX)]));
    assert_eq!(below(&mut rng, 3), 2);
    assert!(rng.0.is_empty(), "the biased word was not rejected");
    // 64-bit range: 2^64 mod (2^33 + 1) = 3·2^31 + 1, so the word 0 is rejected again.
    let mut rng = Words(VecDeque::from([0, u64::MAX]));
    assert_eq!(below(&mut rng, (1 << 33) + 1), 1 << 33);
    assert!(rng.0.is_empty());
    // n = 1 needs no randomness.
    let mut rng = Words(VecDeque::new());
    assert_eq!(below(&mut rng, 1), 0);
    // Above 2^64: masked rejection, two words per try.
    let n = (1u128 << 64) + 5;
    let mut rng = Words(VecDeque::from([u64::MAX, u64::MAX, 1, 4]));
    assert_eq!(below(&mut rng, n), (1 << 64) + 4);
}

/// Pearson's χ² of one-sided geometric samples against ratio q, bins 0..`bins − 1` and a
/// tail bin (df = `bins`).
fn chi_square_one_sided(samples: &[u64], q: f64, bins: usize) -> f64 {
    let n = samples.len() as f64;
    let mut counts = vec![0u64; bins + 1];
    for &y in samples {
        counts[(y as usize).min(bins)] += 1;
    }
    counts
        .iter()
        .enumerate()
        .map(|(k, &o)| {
            let p = if k < bins { (1.0 - q) * q.powi(k as i32) } else { q.powi(bins as i32) };
            (o as f64 - n * p).powi(2) / (n * p)
        })
        .sum()
}

/// The geometric V and the thinning, statistically, where their slow paths run often:
/// V against ratio e^{−1} (every Bernoulli(e^{−1}) digit path), and Y₀ = V thinned by
/// δ = 1/2 against ratio e^{−3/2} (δ·y₀ ≥ 1 for y₀ ≥ 2, so the whole-unit steps, the
/// 16-bit first digit and the truncated draw all run). 2·10⁵ draws each, χ² at α = 10⁻⁶
/// (critical values 47.9 for df 10 and 38.3 for df 6).
#[test]
fn geometric_and_thinning_follow_their_laws() {
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha12Rng::seed_from_u64(0x7468_696e);
    let vs: Vec<u64> = (0..200_000).map(|_| geometric(&mut rng)).collect();
    let stat = chi_square_one_sided(&vs, (-1f64).exp(), 10);
    println!("V: χ² = {stat:.1}");
    assert!(stat < 47.9, "V: χ² = {stat}");
    let thin = Thin { unit: 1, den: 2 };
    let mut bits = Bits::default();
    let ys: Vec<u64> =
        vs.iter().map(|&y0| if y0 == 0 { 0 } else { thin.apply(&mut rng, &mut bits, y0) }).collect();
    let stat = chi_square_one_sided(&ys, (-1.5f64).exp(), 6);
    println!("thinned: χ² = {stat:.1}");
    assert!(stat < 38.3, "thinned: χ² = {stat}");
}

/// Which path each kind of scale takes, and that a thinning's δ = unit/den is exactly
/// 1/b − 1/b₀ ≥ 0 with b₀ ≥ b the scale drawn before thinning.
#[test]
fn scales_take_the_short_path_with_exact_thinning() {
    let short = |b: f64| match Plan::new(b) {
        Some(Plan::Short(s)) => s,
        other => panic!("b = {b}: {other:?}"),
    };
    let p = short(20.0);
    assert!(p.t0 == 20 && p.low == 0 && p.shift == 0 && p.thin.is_none());
    let p = short(2.5);
    assert!(p.t0 == 5 && p.shift == 1 && p.thin.is_none());
    for b in [60f64.next_up(), 0.3, 123.456, 2000.0, 2000.5, 1e6 + 0.25, 3.3e9, 1e11, 2f64.powi(-11)] {
        let p = short(b);
        let (t, s) = dyadic_at_least(b).unwrap();
        let shift = s.trailing_zeros();
        assert!(p.t0 <= 1 << SHORT_BITS && p.low <= 32, "b = {b}");
        // b₀ = t₀·2^m/2^j₀ ≥ b = t/2^shift, compared exactly.
        let b0_num = u128::from(p.t0) << p.low; // over 2^j₀
        assert!(b0_num << shift >= t << p.shift, "b = {b}");
        if let Some(thin) = &p.thin {
            // δ = 1/b − 1/b₀ = (2^shift·b0_num − 2^j₀·t)/(t·b0_num): unit/den must equal it.
            let num = (b0_num << shift) - (t << p.shift);
            let den = t * b0_num;
            assert_eq!(thin.unit * den, num * thin.den, "b = {b}");
        } else {
            assert_eq!(b0_num << shift, t << p.shift, "b = {b}");
        }
    }
    assert!(short(2000.0).low > 0 && short(1e11).low > 0);
    for b in [2f64.powi(40) + 1.0, 1e20, 5e-324] {
        assert!(matches!(Plan::new(b), Some(Plan::Wide(_))), "b = {b}");
    }
}
