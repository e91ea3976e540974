//! The distributions and test statistics of the sampler tests (`samplers.rs`): the exact
//! two-sided geometric law, the Laplace CDF, χ² critical values from the regularized
//! incomplete gamma function, Kolmogorov–Smirnov.

// ---------------------------------------------------------------------------------------
// Distributions and test statistics.
// ---------------------------------------------------------------------------------------

/// The two-sided geometric (discrete Laplace) law with scale b: Pr[k] ∝ p^{|k|}, p = e^{−1/b}.
#[derive(Debug, Clone, Copy)]
pub struct TwoSidedGeometric {
    /// p = e^{−1/b}.
    pub p: f64,
    /// 1 − p, computed without cancellation (b up to 1e6 and beyond).
    pub q: f64,
}

impl TwoSidedGeometric {
    pub fn new(b: f64) -> Self {
        Self { p: (-1.0 / b).exp(), q: -(-1.0 / b).exp_m1() }
    }

    /// Pr[K = k] = (1 − p)/(1 + p)·p^{|k|}.
    pub fn pmf(&self, k: i64) -> f64 {
        self.q / (1.0 + self.p) * self.p.powi(k.unsigned_abs() as i32)
    }

    /// Pr[K > k] = Pr[K < −k] = p^{k+1}/(1 + p), k ≥ 0.
    pub fn tail(&self, k: i64) -> f64 {
        self.p.powi(k as i32 + 1) / (1.0 + self.p)
    }

    /// E|K| = 2p/(1 − p²).
    pub fn mean_abs(&self) -> f64 {
        2.0 * self.p / (self.q * (1.0 + self.p))
    }

    /// E[K²] = 2p/(1 − p)² (the variance, as E K = 0).
    pub fn second_moment(&self) -> f64 {
        2.0 * self.p / (self.q * self.q)
    }

    /// sd(|K|) = sqrt(E K² − (E|K|)²).
    pub fn sd_abs(&self) -> f64 {
        (self.second_moment() - self.mean_abs().powi(2)).sqrt()
    }
}

/// The continuous Laplace CDF with scale b.
pub fn laplace_cdf(x: f64, b: f64) -> f64 {
    if x < 0.0 { 0.5 * (x / b).exp() } else { 1.0 - 0.5 * (-x / b).exp() }
}

/// ln Γ(x), x > 0 (Lanczos, g = 7, 9 terms; relative error ~1e-15).
pub fn ln_gamma(x: f64) -> f64 {
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
pub fn gamma_q(a: f64, x: f64) -> f64 {
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
pub fn chi_square_critical(df: usize, alpha: f64) -> f64 {
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
pub fn chi_square_discrete(samples: &[i64], b: f64) -> (f64, usize) {
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
pub fn ks_statistic(samples: &mut [f64], cdf: impl Fn(f64) -> f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let n = samples.len() as f64;
    samples.iter().enumerate().fold(0.0, |d: f64, (i, &x)| {
        let f = cdf(x);
        d.max((i as f64 + 1.0) / n - f).max(f - i as f64 / n)
    })
}

/// The KS critical value at α = 0.001 (asymptotic: 2·exp(−2·1.95²) = 0.00099), as
/// [`docs/w-event.md`](tpl_core::guide::w_event) §7.
pub fn ks_critical(n: usize) -> f64 {
    1.95 / (n as f64).sqrt()
}

pub fn mean(xs: impl ExactSizeIterator<Item = f64>) -> f64 {
    let n = xs.len() as f64;
    xs.sum::<f64>() / n
}
