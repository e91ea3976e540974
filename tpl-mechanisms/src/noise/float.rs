//! The continuous Laplace sampler (inverse CDF in f64): fast, not release-grade.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha12Rng;

use super::{NoiseSource, check_scale};
use crate::error::Result;

/// The Laplace(0, b) quantile function: the x with Pr[X ≤ x] = u, for u in (0, 1) —
/// b·ln(2u) below the median, −b·ln(2(1 − u)) above it. Fed a uniform u it draws continuous
/// Laplace noise of scale b (E|X| = b); u = 0 or 1 gives ∓∞.
///
/// ```
/// use tpl_mechanisms::laplace_inverse_cdf;
/// assert_eq!(laplace_inverse_cdf(0.5, 3.0), 0.0);
/// assert_eq!(laplace_inverse_cdf(0.25, 1.0), 0.5f64.ln());
/// assert_eq!(laplace_inverse_cdf(0.75, 2.0), -laplace_inverse_cdf(0.25, 2.0));
/// ```
pub fn laplace_inverse_cdf(u: f64, scale: f64) -> f64 {
    if u < 0.5 { scale * (2.0 * u).ln() } else { -scale * (2.0 * (1.0 - u)).ln() }
}

/// Continuous Laplace by inverse CDF in f64 ([`laplace_inverse_cdf`] of a uniform in (0, 1)).
/// Fast (tens of millions of draws per second) but **not release-grade**: the low-order bits
/// of a float sample carry information about the true value (Mironov 2012). Use it for
/// simulations, or for data that is not integer.
///
/// Not `Clone`: a copy would repeat the same noise.
#[derive(Debug)]
pub struct FloatLaplace<R> {
    rng: R,
}

impl<R: RngCore> FloatLaplace<R> {
    /// A sampler drawing from `rng`.
    pub fn new(rng: R) -> Self {
        Self { rng }
    }
}

impl FloatLaplace<ChaCha12Rng> {
    /// A sampler seeded from the operating system's randomness.
    pub fn from_os_rng() -> Self {
        Self::new(ChaCha12Rng::from_os_rng())
    }

    /// A **reproducible** sampler: ChaCha12 keyed by `seed` (the same draws for the same
    /// seed, on every platform and version of this crate). For tests and experiments.
    pub fn seeded(seed: u64) -> Self {
        Self::new(ChaCha12Rng::seed_from_u64(seed))
    }
}

impl<R: RngCore> NoiseSource for FloatLaplace<R> {
    fn laplace(&mut self, scale: f64) -> Result<f64> {
        check_scale(scale)?;
        Ok(laplace_inverse_cdf(open01(&mut self.rng), scale))
    }
}

/// Uniform in the open interval (0, 1): 53 random bits, offset by half a step.
fn open01<R: RngCore>(rng: &mut R) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}
