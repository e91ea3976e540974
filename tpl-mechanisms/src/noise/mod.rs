//! Noise sources: where the randomness of a Laplace release comes from.
//!
//! Release-grade: [`DiscreteLaplace`], the exact two-sided geometric distribution
//! Pr[k] ∝ exp(−|k|/b) on the integers, sampled with integer arithmetic only (Canonne,
//! Kamath, Steinke 2020, Algorithms 1–2), so no floating-point artefact can leak the data
//! (Mironov 2012 showed that the textbook float sampler does). Added to integer counts with
//! b ≥ Δ/ε it is ε-DP exactly. The scale is rounded *up* to a dyadic rational, so the
//! guarantee never falls below the one asked for.
//!
//! Not release-grade: [`FloatLaplace`] (inverse CDF in f64: fast, for simulations and
//! non-integer data) and the test doubles [`Zero`], [`Scripted`] and [`Recording`].
//!
//! The trait lives here; each sampler has its own file.

#[cfg(any(test, feature = "test-util"))]
mod doubles;
mod exact;
#[cfg(feature = "float-not-release-grade")]
mod float;
mod geometric;
mod interval;

#[cfg(any(test, feature = "test-util"))]
pub use doubles::{Recording, Scripted, Zero};
pub use exact::{DiscreteLaplace, StreamRng};

/// The generator of the samplers' own constructors (`from_os_rng`, `seeded`): ChaCha12. Name
/// it to name their types, e.g. `LaplaceMechanism<DiscreteLaplace<ReleaseRng>>`.
pub type ReleaseRng = rand_chacha::ChaCha12Rng;
#[cfg(feature = "float-not-release-grade")]
pub use float::{FloatLaplace, laplace_inverse_cdf};

use crate::error::{MechError, Result};

/// A source of Laplace noise: one draw per call, with scale b (E|X| = b).
pub trait NoiseSource {
    /// One draw of Laplace noise with scale `scale` (finite, > 0).
    ///
    /// # Errors
    /// [`MechError::BadScale`] for a scale that is not finite and positive;
    /// [`MechError::ScriptExhausted`] for an exhausted scripted test source.
    fn laplace(&mut self, scale: f64) -> Result<f64>;

    /// Fills `out` with independent draws of Laplace noise with scale `scale`, each with the
    /// law of one [`NoiseSource::laplace`] draw: what a release of `out.len()` cells asks for.
    /// The default draws them in order with [`NoiseSource::laplace`]; a source may instead
    /// draw them in batches or on several threads, and then need not give the values that
    /// `out.len()` single draws would (its documentation says how its values are made).
    ///
    /// # Errors
    /// As [`NoiseSource::laplace`]; `out` is then unspecified.
    fn fill_laplace(&mut self, scale: f64, out: &mut [f64]) -> Result<()> {
        for x in out {
            *x = self.laplace(scale)?;
        }
        Ok(())
    }

    /// True when draws are exact integers (the discrete Laplace): queries must then be
    /// integer-valued for the release to be differentially private.
    fn integer_valued(&self) -> bool {
        false
    }
}

impl<N: NoiseSource + ?Sized> NoiseSource for Box<N> {
    fn laplace(&mut self, scale: f64) -> Result<f64> {
        (**self).laplace(scale)
    }

    fn fill_laplace(&mut self, scale: f64, out: &mut [f64]) -> Result<()> {
        (**self).fill_laplace(scale, out)
    }

    fn integer_valued(&self) -> bool {
        (**self).integer_valued()
    }
}

/// Which Laplace sampler a release draws from: the choice a user makes, stored and printed
/// by its [`SamplerKind::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SamplerKind {
    /// The exact discrete Laplace ([`DiscreteLaplace`]): release-grade, integer counts.
    Discrete,
    /// Inverse-CDF float Laplace ([`FloatLaplace`]): any data, not release-grade (feature
    /// `float-not-release-grade`).
    #[cfg(feature = "float-not-release-grade")]
    Float,
}

impl SamplerKind {
    /// Every sampler, in the order they are listed.
    #[cfg(feature = "float-not-release-grade")]
    pub const ALL: &[Self] = &[Self::Discrete, Self::Float];
    /// Every sampler, in the order they are listed.
    #[cfg(not(feature = "float-not-release-grade"))]
    pub const ALL: &[Self] = &[Self::Discrete];

    /// The name stored and printed (`discrete`, `float`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Discrete => "discrete",
            #[cfg(feature = "float-not-release-grade")]
            Self::Float => "float",
        }
    }

    /// The sampler called `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|s| s.name() == name)
    }

    /// A fresh sampler seeded from the operating system.
    pub fn from_os_rng(self) -> Box<dyn NoiseSource + Send> {
        match self {
            Self::Discrete => Box::new(DiscreteLaplace::from_os_rng()),
            #[cfg(feature = "float-not-release-grade")]
            Self::Float => Box::new(FloatLaplace::from_os_rng()),
        }
    }

    /// A sampler from `seed`: reproducible, and so for tests and simulations only.
    pub fn seeded(self, seed: u64) -> Box<dyn NoiseSource + Send> {
        match self {
            Self::Discrete => Box::new(DiscreteLaplace::seeded(seed)),
            #[cfg(feature = "float-not-release-grade")]
            Self::Float => Box::new(FloatLaplace::seeded(seed)),
        }
    }

    /// [`SamplerKind::seeded`] when a seed is asked for, else [`SamplerKind::from_os_rng`]:
    /// the noise of a release whose caller may pass `--seed`.
    pub fn source(self, seed: Option<u64>) -> Box<dyn NoiseSource + Send> {
        seed.map_or_else(|| self.from_os_rng(), |seed| self.seeded(seed))
    }
}

pub(crate) fn check_scale(scale: f64) -> Result<()> {
    if scale.is_finite() && scale > 0.0 { Ok(()) } else { Err(MechError::BadScale(scale)) }
}
