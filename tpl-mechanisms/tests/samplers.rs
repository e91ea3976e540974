//! Statistical correctness of the noise samplers ([`docs/w-event.md`](tpl_core::guide::w_event) §7,
//! the samplers, and the stricter large-sample checks of the release-grade sampler).
//!
//! Every test draws from `ChaCha12Rng` with a fixed seed, so a run is deterministic: a test either
//! always passes or always fails. The *false-failure probability* stated with each check is
//! the chance that a correct sampler fails it for a random seed, i.e. how unlucky the fixed
//! seed would have to be; the checks are sized so that this is small (≤ 1e-3 per check where
//! [`docs/w-event.md`](tpl_core::guide::w_event) fixes the level, ≤ 1e-6 elsewhere) while a wrong
//! scale, a biased sign or a broken tail still fails by many standard errors.
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

mod stats;

use stats::*;

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

/// (c) [`docs/w-event.md`](tpl_core::guide::w_event) §7, continuous sampler: 20 000 seeded draws
/// for b ∈ {0.5, 1, 8}; KS below 1.95/√n (α = 0.001); sample mean within 4 standard errors of 0 (sd
/// √2·b) and mean |x| within 4 standard errors of b (sd b); false failure per scale ≤ 0.001 +
/// 2·6.3e-5.
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

/// (c) [`docs/w-event.md`](tpl_core::guide::w_event) §7, lattice sampler: 20 000 seeded draws for b
/// ∈ {0.5, 1, 8}; binned χ² at α = 0.001 (the level of the KS test above); sample mean within 4
/// standard errors of 0 and mean |k| within 4 standard errors of its exact expectation 2p/(1 − p²)
/// (≈ b − 1/(6b) for large b; the lattice law's E|k| is not b). False failure per scale ≤ 0.001 +
/// 2·6.3e-5.
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
