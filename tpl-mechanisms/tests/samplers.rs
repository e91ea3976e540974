//! Statistical correctness of the noise samplers (`docs/w-event.md` §7, the samplers, and the
//! stricter large-sample checks of the release-grade sampler).
//!
//! Every test draws from `ChaCha12Rng` with a fixed seed, so a run is deterministic: a test either
//! always passes or always fails. The *false-failure probability* stated with each check is
//! the chance that a correct sampler fails it for a random seed, i.e. how unlucky the fixed
//! seed would have to be; the checks are sized so that this is small (≤ 1e-3 per check where
//! `docs/w-event.md` fixes the level, ≤ 1e-6 elsewhere) while a wrong scale, a biased sign or a
//! broken tail still fails by many standard errors.
//!
//! - [`DiscreteLaplace`] against the exact two-sided geometric pmf
//!   Pr[k] = (1 − e^{−1/b})/(1 + e^{−1/b})·e^{−|k|/b}: binned χ² (tails pooled so that every
//!   expected count is ≥ 5), mean |k| against its exact expectation 2p/(1 − p²) with
//!   p = e^{−1/b}, and the sample mean against 0.
//! - [`FloatLaplace`] against the Laplace CDF: Kolmogorov–Smirnov, mean |x| against b.
//!
//! The χ² critical values are computed here from the regularized incomplete gamma function
//! (checked against tabulated values in `chi_square_quantiles_match_tables`), so the bins can
//! follow the scale.

use tpl_mechanisms::{DiscreteLaplace, FloatLaplace, MechError, NoiseSource};

// ---------------------------------------------------------------------------------------
// Distributions and test statistics.
// ---------------------------------------------------------------------------------------

/// The two-sided geometric (discrete Laplace) law with scale b: Pr[k] ∝ p^{|k|}, p = e^{−1/b}.
#[derive(Debug, Clone, Copy)]
struct TwoSidedGeometric {
    /// p = e^{−1/b}.
    p: f64,
    /// 1 − p, computed without cancellation (b up to 1e6 and beyond).
    q: f64,
}

impl TwoSidedGeometric {
    fn new(b: f64) -> Self {
        Self { p: (-1.0 / b).exp(), q: -(-1.0 / b).exp_m1() }
    }

    /// Pr[K = k] = (1 − p)/(1 + p)·p^{|k|}.
    fn pmf(&self, k: i64) -> f64 {
        self.q / (1.0 + self.p) * self.p.powi(k.unsigned_abs() as i32)
    }

    /// Pr[K > k] = Pr[K < −k] = p^{k+1}/(1 + p), k ≥ 0.
    fn tail(&self, k: i64) -> f64 {
        self.p.powi(k as i32 + 1) / (1.0 + self.p)
    }

    /// E|K| = 2p/(1 − p²).
    fn mean_abs(&self) -> f64 {
        2.0 * self.p / (self.q * (1.0 + self.p))
    }

    /// E[K²] = 2p/(1 − p)² (the variance, as E K = 0).
    fn second_moment(&self) -> f64 {
        2.0 * self.p / (self.q * self.q)
    }

    /// sd(|K|) = sqrt(E K² − (E|K|)²).
    fn sd_abs(&self) -> f64 {
        (self.second_moment() - self.mean_abs().powi(2)).sqrt()
    }
}

/// The continuous Laplace CDF with scale b.
fn laplace_cdf(x: f64, b: f64) -> f64 {
    if x < 0.0 { 0.5 * (x / b).exp() } else { 1.0 - 0.5 * (-x / b).exp() }
}

/// ln Γ(x), x > 0 (Lanczos, g = 7, 9 terms; relative error ~1e-15).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1 − x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, &c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The upper regularized incomplete gamma function Q(a, x) = Γ(a, x)/Γ(a), a > 0, x ≥ 0
/// (series below a + 1, Lentz's continued fraction above; Numerical Recipes §6.2).
fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let prefactor = (-x + a * x.ln() - ln_gamma(a)).exp();
    if x < a + 1.0 {
        let (mut term, mut sum, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..10_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-16 {
                break;
            }
        }
        1.0 - sum * prefactor
    } else {
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        prefactor * h
    }
}

/// The χ² critical value x with Pr[χ²_df > x] = alpha (bisection on Q(df/2, x/2)).
fn chi_square_critical(df: usize, alpha: f64) -> f64 {
    let survival = |x: f64| gamma_q(df as f64 / 2.0, x / 2.0);
    let (mut lo, mut hi) = (0.0, df as f64 + 10.0);
    while survival(hi) > alpha {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if survival(mid) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// Binned Pearson χ² of integer samples against the two-sided geometric law with scale b:
/// one bin per k in −K..=K and one per tail (k < −K, k > K), with K the largest value for
/// which every bin expects at least 5 samples. Returns (statistic, degrees of freedom).
fn chi_square_discrete(samples: &[i64], b: f64) -> (f64, usize) {
    let law = TwoSidedGeometric::new(b);
    let n = samples.len() as f64;
    assert!(n * law.pmf(0) >= 5.0 && n * law.tail(0) >= 5.0, "too few samples to bin b = {b}");
    let mut k_max = 0i64;
    while n * law.pmf(k_max + 1) >= 5.0 && n * law.tail(k_max + 1) >= 5.0 {
        k_max += 1;
    }
    // counts[0] = lower tail, counts[1..] = −K..=K, counts[last] = upper tail.
    let bins = 2 * k_max as usize + 3;
    let mut counts = vec![0u64; bins];
    for &k in samples {
        let i = if k < -k_max {
            0
        } else if k > k_max {
            bins - 1
        } else {
            (k + k_max + 1) as usize
        };
        counts[i] += 1;
    }
    let expected = |i: usize| {
        if i == 0 || i == bins - 1 { law.tail(k_max) } else { law.pmf(i as i64 - k_max - 1) }
    };
    let total: f64 = (0..bins).map(expected).sum();
    assert!((total - 1.0).abs() < 1e-9, "bin probabilities sum to {total}");
    let stat = counts
        .iter()
        .enumerate()
        .map(|(i, &o)| {
            let e = n * expected(i);
            (o as f64 - e).powi(2) / e
        })
        .sum();
    (stat, bins - 1)
}

/// Kolmogorov–Smirnov statistic D_n = sup |F_n − F| of `samples` against `cdf`.
fn ks_statistic(samples: &mut [f64], cdf: impl Fn(f64) -> f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let n = samples.len() as f64;
    samples.iter().enumerate().fold(0.0, |d: f64, (i, &x)| {
        let f = cdf(x);
        d.max((i as f64 + 1.0) / n - f).max(f - i as f64 / n)
    })
}

/// The KS critical value at α = 0.001 (asymptotic: 2·exp(−2·1.95²) = 0.00099), as `docs/w-event.md` §7.
fn ks_critical(n: usize) -> f64 {
    1.95 / (n as f64).sqrt()
}

fn mean(xs: impl ExactSizeIterator<Item = f64>) -> f64 {
    let n = xs.len() as f64;
    xs.sum::<f64>() / n
}

// ---------------------------------------------------------------------------------------
// Drawing.
// ---------------------------------------------------------------------------------------

/// n draws of the discrete Laplace with scale b, checked to be exact integers.
fn discrete_draws(seed: u64, b: f64, n: usize) -> Vec<i64> {
    let mut noise = DiscreteLaplace::seeded(seed);
    (0..n)
        .map(|_| {
            let x = noise.laplace(b).expect("finite positive scale");
            assert!(x.is_finite() && x == x.trunc(), "b = {b}: non-integer draw {x}");
            x as i64
        })
        .collect()
}

/// n draws of the discrete Laplace with scale b made by fills of `chunk` values each (one
/// fill of n when chunk ≥ n), checked to be exact integers.
fn discrete_fills(seed: u64, b: f64, n: usize, chunk: usize) -> Vec<i64> {
    let mut noise = DiscreteLaplace::seeded(seed);
    let mut out = vec![0.0; n];
    for part in out.chunks_mut(chunk) {
        noise.fill_laplace(b, part).expect("finite positive scale");
    }
    out.iter()
        .map(|&x| {
            assert!(x.is_finite() && x == x.trunc(), "b = {b}: non-integer draw {x}");
            x as i64
        })
        .collect()
}

fn float_draws(seed: u64, b: f64, n: usize) -> Vec<f64> {
    let mut noise = FloatLaplace::seeded(seed);
    (0..n).map(|_| noise.laplace(b).expect("finite positive scale")).collect()
}

/// Moment checks of discrete draws: |mean |K| − E|K|| ≤ `abs_tol` and |mean K| ≤ `z`
/// standard errors of the mean.
fn check_discrete_moments(samples: &[i64], b: f64, abs_tol: f64, z: f64) {
    let law = TwoSidedGeometric::new(b);
    let n = samples.len() as f64;
    let mean_abs = mean(samples.iter().map(|&k| k.unsigned_abs() as f64));
    let mean_signed = mean(samples.iter().map(|&k| k as f64));
    let se_mean = law.second_moment().sqrt() / n.sqrt();
    assert!(
        (mean_abs - law.mean_abs()).abs() <= abs_tol,
        "b = {b}: mean |k| = {mean_abs}, exact {} (tolerance {abs_tol})",
        law.mean_abs()
    );
    assert!(
        mean_signed.abs() <= z * se_mean,
        "b = {b}: mean k = {mean_signed}, more than {z} standard errors ({se_mean}) from 0"
    );
}

// ---------------------------------------------------------------------------------------
// The tests.
// ---------------------------------------------------------------------------------------

#[test]
fn chi_square_quantiles_match_tables() {
    // Tabulated upper quantiles (Abramowitz & Stegun Table 26.8; df = 1 from z² quantiles).
    for (df, alpha, table) in [
        (1, 0.05, 3.841_459),
        (1, 1e-6, 23.928_127),
        (10, 0.001, 29.588_298),
        (100, 0.001, 149.449_252),
        (100, 0.05, 124.342_113),
    ] {
        let x = chi_square_critical(df, alpha);
        assert!((x - table).abs() < 1e-4 * table, "df {df}, α {alpha}: {x} vs {table}");
    }
}

/// (a) 10⁶ draws per scale against the exact pmf. χ² at α = 1e-6: the critical values for
/// the bins used (printed with `--nocapture`) are 50.8 (b = 0.5, 13 bins, df 12), 68.9
/// (b = 1, df 22), 249.7 (b = 8, df 152) and 481.0 (b = 20, df 342). mean |k| is
/// checked to within 1 % of 2p/(1 − p²), which is ≥ 5 standard errors at every b here
/// (5.2 at b = 0.5, ~10 at b = 20): false failure < 3e-7. The sample mean is checked to
/// within 4 standard errors of 0: false failure 6.3e-5. Total per scale < 1e-4.
/// `n` seeded draws of the discrete sampler at scale b whose binned χ² must stay below the
/// critical value at α = 1e-6; returns them with the law they should follow.
fn discrete_fits_at_1e_6(seed: u64, b: f64, n: usize) -> (Vec<i64>, TwoSidedGeometric) {
    let samples = discrete_draws(seed, b, n);
    let (stat, df) = chi_square_discrete(&samples, b);
    let critical = chi_square_critical(df, 1e-6);
    println!("discrete b = {b}: χ² = {stat:.1}, df = {df}, critical (α = 1e-6) = {critical:.1}");
    assert!(stat < critical, "b = {b}: χ² = {stat} ≥ {critical} (df {df})");
    (samples, TwoSidedGeometric::new(b))
}

#[test]
fn discrete_laplace_matches_exact_pmf_at_1e6_draws() {
    const N: usize = 1_000_000;
    for (i, b) in [0.5, 1.0, 8.0, 20.0].into_iter().enumerate() {
        let (samples, law) = discrete_fits_at_1e_6(0xd15c_0000 + i as u64, b, N);
        assert!(0.01 * law.mean_abs() >= 5.0 * law.sd_abs() / (N as f64).sqrt(), "tolerance too tight");
        check_discrete_moments(&samples, b, 0.01 * law.mean_abs(), 4.0);
    }
}

/// (a′) The same at 10⁶ draws for scales with long binary expansions, which run through the
/// sampler's 64-bit words and lazy comparisons rather than the short-integer path: 0.3
/// (t/s = 5404319552844595/2⁵⁴), 60 + 1 ulp (the publication scale of `uniform` with w = 30,
/// ε = 1, Δ = 2: ε/w rounds down, so the mechanism bumps Δ/(ε/w) up one ulp) and 123.456.
/// Same checks and false-failure bounds as (a); critical values about 38 (b = 0.3, df 6),
/// 1 107 (b = 60 + ulp, df 892) and 1 942 (b = 123.456, df 1654).
#[test]
fn discrete_laplace_non_dyadic_at_1e6_draws() {
    const N: usize = 1_000_000;
    for (i, b) in [0.3, 60f64.next_up(), 123.456].into_iter().enumerate() {
        let (samples, law) = discrete_fits_at_1e_6(0xd15c_1000 + i as u64, b, N);
        check_discrete_moments(&samples, b, 0.01 * law.mean_abs(), 4.0);
    }
}

/// (a″) The batched path, as releases use it: 10⁶ draws per scale from one fill of 10⁶ values
/// (245 blocks, each from its own stream of the key, drawn on all cores) and from 10⁴ fills
/// of 100 values at one scale (a stream scheme's publications: the first drawn directly, the
/// rest drawn ahead in blocks), against the exact pmf with the checks and false-failure bounds
/// of (a). The scales cover every branch of the short path: nothing thinned (0.5, 2, 20),
/// thinned (60 + ulp, 0.3, 123.456) and an integer scale with low bits (2000.5: t = 4001 has
/// 12 significant bits, so U = A·2 + B).
#[test]
fn discrete_laplace_batched_fills_match_exact_pmf() {
    const N: usize = 1_000_000;
    for (i, b) in [0.5, 2.0, 20.0, 60f64.next_up(), 0.3, 123.456, 2000.5].into_iter().enumerate() {
        for (j, chunk) in [N, 100].into_iter().enumerate() {
            let samples = discrete_fills(0xba7c_0000 + 16 * i as u64 + j as u64, b, N, chunk);
            let (stat, df) = chi_square_discrete(&samples, b);
            let critical = chi_square_critical(df, 1e-6);
            println!("fills of {chunk}, b = {b}: χ² = {stat:.1}, df = {df}, critical {critical:.1}");
            assert!(stat < critical, "fills of {chunk}, b = {b}: χ² = {stat} ≥ {critical} (df {df})");
            let law = TwoSidedGeometric::new(b);
            check_discrete_moments(&samples, b, 0.01 * law.mean_abs(), 4.0);
        }
    }
}

/// (b) 10⁶ draws per scale against the Laplace CDF: KS below 1.95/√n (α = 0.001) and mean
/// |x| within 1 % of b (10 standard errors, as sd|x| = b: false failure ~1e-23). Three scales
/// so that a scale-dependent slip shows.
#[test]
fn float_laplace_matches_cdf_at_1e6_draws() {
    const N: usize = 1_000_000;
    for (i, b) in [0.5, 1.0, 20.0].into_iter().enumerate() {
        let mut samples = float_draws(0xf10a_0000 + i as u64, b, N);
        let mean_abs = mean(samples.iter().map(|x| x.abs()));
        let mean_signed = mean(samples.iter().copied());
        assert!((mean_abs - b).abs() <= 0.01 * b, "b = {b}: mean |x| = {mean_abs}");
        // sd(X) = √2·b; 4 standard errors: false failure 6.3e-5.
        assert!(
            mean_signed.abs() <= 4.0 * 2f64.sqrt() * b / (N as f64).sqrt(),
            "b = {b}: mean {mean_signed}"
        );
        let d = ks_statistic(&mut samples, |x| laplace_cdf(x, b));
        println!("float b = {b}: KS D = {d:.2e}, critical {:.2e}", ks_critical(N));
        assert!(d < ks_critical(N), "b = {b}: KS D = {d} ≥ {}", ks_critical(N));
    }
}

/// (c) `docs/w-event.md` §7, continuous sampler: 20 000 seeded draws for b ∈ {0.5, 1, 8}; KS below
/// 1.95/√n (α = 0.001); sample mean within 4 standard errors of 0 (sd √2·b) and mean |x|
/// within 4 standard errors of b (sd b); false failure per scale ≤ 0.001 + 2·6.3e-5.
#[test]
fn float_laplace_20000_draws_fit_the_law() {
    const N: usize = 20_000;
    for (i, b) in [0.5, 1.0, 8.0].into_iter().enumerate() {
        let mut samples = float_draws(0x5ec7_f000 + i as u64, b, N);
        let se = b / (N as f64).sqrt();
        let mean_abs = mean(samples.iter().map(|x| x.abs()));
        let mean_signed = mean(samples.iter().copied());
        assert!((mean_abs - b).abs() <= 4.0 * se, "b = {b}: mean |x| = {mean_abs}");
        assert!(mean_signed.abs() <= 4.0 * 2f64.sqrt() * se, "b = {b}: mean x = {mean_signed}");
        let d = ks_statistic(&mut samples, |x| laplace_cdf(x, b));
        assert!(d < ks_critical(N), "b = {b}: KS D = {d} ≥ {}", ks_critical(N));
    }
}

/// (c) `docs/w-event.md` §7, lattice sampler: 20 000 seeded draws for b ∈ {0.5, 1, 8}; binned χ²
/// at α = 0.001 (the level of the KS test above); sample mean within 4 standard errors of 0
/// and mean |k| within 4 standard errors of its exact expectation 2p/(1 − p²) (≈ b − 1/(6b)
/// for large b; the lattice law's E|k| is not b). False failure per scale ≤ 0.001 + 2·6.3e-5.
#[test]
fn discrete_laplace_20000_draws_fit_the_law() {
    const N: usize = 20_000;
    for (i, b) in [0.5, 1.0, 8.0].into_iter().enumerate() {
        let samples = discrete_draws(0x5ec7_d000 + i as u64, b, N);
        let (stat, df) = chi_square_discrete(&samples, b);
        let critical = chi_square_critical(df, 0.001);
        assert!(stat < critical, "b = {b}: χ² = {stat} ≥ {critical} (df {df})");
        let law = TwoSidedGeometric::new(b);
        check_discrete_moments(&samples, b, 4.0 * law.sd_abs() / (N as f64).sqrt(), 4.0);
    }
}

/// (d) Scales that are not dyadic rationals (b = 0.1·k): 0.1 is not a binary fraction, so the
/// sampler works with the exact value of the double (up to 64 fractional bits, t/s with
/// s = 2⁵⁶ for 0.1), through its wide-integer path. 50 scales × 40 000 draws: integer
/// outputs; χ² at α = 1e-6 against the pmf of that scale (b ≥ 0.2: at b = 0.1 no bin but
/// k = 0 expects 5 draws); mean |k| within 5 standard errors
/// of the exact expectation and mean k within 5 standard errors of 0 (false failure 5.7e-7
/// each). Total over the 50 scales < 1e-4.
#[test]
fn non_dyadic_scales() {
    const N: usize = 40_000;
    for k in 1..=50u32 {
        let b = 0.1 * f64::from(k);
        let samples = discrete_draws(0x0d1a_0000 + u64::from(k), b, N);
        let law = TwoSidedGeometric::new(b);
        // b = 0.1 expects only 3.6 nonzero draws in all: too few for any bin; the moments
        // below still check it.
        if N as f64 * law.tail(0) >= 5.0 {
            let (stat, df) = chi_square_discrete(&samples, b);
            let critical = chi_square_critical(df, 1e-6);
            assert!(stat < critical, "b = {b}: χ² = {stat} ≥ {critical} (df {df})");
        }
        check_discrete_moments(&samples, b, 5.0 * law.sd_abs() / (N as f64).sqrt(), 5.0);
    }
}

/// (d) Tiny scales: Pr[k ≠ 0] = 2p/(1 + p) with p = e^{−1/b} is below 1e-434 000 at
/// b = 1e-6, so every draw is exactly 0 (no false failure). The smallest normal and
/// subnormal doubles are rounded *up* to 2⁻⁶⁴ (more noise, never less) and are still 0.
#[test]
fn tiny_scales_give_exact_zero() {
    for (i, b) in [1e-6, 1e-12, 1e-300, f64::MIN_POSITIVE, 5e-324].into_iter().enumerate() {
        let samples = discrete_draws(0x7147_0000 + i as u64, b, 20_000);
        assert!(samples.iter().all(|&k| k == 0), "b = {b:e}: a nonzero draw");
    }
}

/// (d) A huge scale, b = 1e6: integer outputs; mean |k| within 1 % of its exact expectation
/// (E|k| = 1/sinh(1/b) ≈ b; 400 000 draws make 1 % = 6.3 standard errors: false failure
/// 3e-10) and mean k within 4 standard errors of 0 (6.3e-5). At this scale the lattice law is
/// within max_k Pr[k] = 5e-7 of the continuous Laplace CDF in sup norm, so KS against the
/// continuous CDF at 1.95/√n + 5e-7 also applies (α = 0.001).
#[test]
fn huge_scale_1e6() {
    const N: usize = 400_000;
    let b = 1e6;
    let samples = discrete_draws(0x1e6_0000, b, N);
    let law = TwoSidedGeometric::new(b);
    assert!((law.mean_abs() - b).abs() < 1e-6 * b);
    check_discrete_moments(&samples, b, 0.01 * law.mean_abs(), 4.0);
    let mut xs: Vec<f64> = samples.iter().map(|&k| k as f64).collect();
    let d = ks_statistic(&mut xs, |x| laplace_cdf(x, b));
    assert!(d < ks_critical(N) + law.pmf(0), "KS D = {d}");
}

/// (d) Larger scales still give exact integers of the right size (mean |k| within 5 %: with
/// 20 000 draws that is 7 standard errors), up to just below 2⁷⁴, the largest scale the
/// sampler represents exactly; scales from 2⁷⁴ on are refused, never approximated.
#[test]
fn very_large_scales_are_integers_or_refused() {
    const N: usize = 20_000;
    for (i, b) in [1e9, 1e12, 1e15, 1e18, 1.5e22].into_iter().enumerate() {
        let samples: Vec<f64> = {
            let mut noise = DiscreteLaplace::seeded(0xb16_0000 + i as u64);
            (0..N).map(|_| noise.laplace(b).expect("scale below 2^74")).collect()
        };
        assert!(samples.iter().all(|x| x.is_finite() && *x == x.trunc()), "b = {b:e}");
        let mean_abs = mean(samples.iter().map(|x| x.abs()));
        assert!((mean_abs - b).abs() <= 0.05 * b, "b = {b:e}: mean |k| = {mean_abs:e}");
        let negative = samples.iter().filter(|x| **x < 0.0).count() as f64 / N as f64;
        // Fair sign: 4 standard errors (0.5/√n) around 1/2, false failure 6.3e-5.
        assert!((negative - 0.5).abs() <= 4.0 * 0.5 / (N as f64).sqrt(), "b = {b:e}: {negative}");
    }
    let two_74 = 2f64.powi(74);
    let mut noise = DiscreteLaplace::seeded(1);
    for b in [two_74, 1e30, 1e38, f64::MAX] {
        assert_eq!(noise.laplace(b), Err(MechError::BadScale(b)), "b = {b:e}");
    }
    assert!(noise.laplace(two_74.next_down()).is_ok());
}

/// Scales that are not finite and positive are refused by both samplers.
#[test]
fn bad_scales_are_refused() {
    let mut d = DiscreteLaplace::seeded(2);
    let mut f = FloatLaplace::seeded(2);
    for b in [0.0, -1.0, f64::INFINITY, f64::NAN] {
        assert!(matches!(d.laplace(b), Err(MechError::BadScale(_))), "discrete b = {b}");
        assert!(matches!(f.laplace(b), Err(MechError::BadScale(_))), "float b = {b}");
    }
}
