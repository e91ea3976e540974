//! The parameters a stream is created with, fixed for its life.

use tpl_core::{Correlation, TransitionMatrix, check_alpha};
use tpl_mechanisms::{
    Mechanism, MechanismBuilder, NoiseSource, PbaPool, SchemeBuilder, SchemeInputs, SchemeKind, StreamScheme,
    WEventParams,
};
use tpl_postprocess::{Estimator, FilterConfig};

use crate::error::{ConfigError, Result, StreamError};

/// Which scheme a stream runs: one of the built-in schemes, or a scheme an application
/// supplies through a [`SchemeBuilder`] under a name of its own (stored in the file; the
/// stream is then opened with that builder: [`crate::StreamOptions::scheme`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemeChoice {
    /// A scheme of `tpl-mechanisms`.
    BuiltIn(SchemeKind),
    /// A scheme built by the application's [`SchemeBuilder`] of that name.
    Custom(String),
}

impl SchemeChoice {
    /// The name stored in the stream file and shown in reports.
    pub fn name(&self) -> &str {
        match self {
            Self::BuiltIn(kind) => kind.name(),
            Self::Custom(name) => name,
        }
    }

    /// The built-in scheme, if it is one.
    pub fn kind(&self) -> Option<SchemeKind> {
        match self {
            Self::BuiltIn(kind) => Some(*kind),
            Self::Custom(_) => None,
        }
    }

    /// The scheme named `name`: a built-in one if the name is one's, else a custom one.
    pub fn from_name(name: &str) -> Self {
        SchemeKind::from_name(name).map_or_else(|| Self::Custom(name.to_owned()), Self::BuiltIn)
    }
}

impl From<SchemeKind> for SchemeChoice {
    fn from(kind: SchemeKind) -> Self {
        Self::BuiltIn(kind)
    }
}

/// The scheme `builder` builds, by its name: a stream config names a user's scheme without
/// spelling the name again (`StreamConfig::new(&*thirds, 1.0, 10)`).
impl<B: SchemeBuilder + ?Sized> From<&B> for SchemeChoice {
    fn from(builder: &B) -> Self {
        Self::from_name(builder.name())
    }
}

/// The scheme `config` names, over `mechanism`: built-in, or from `custom`, the builder
/// the stream was opened with (through the same trait: [`SchemeBuilder`]).
///
/// # Errors
/// [`StreamError::Plan`] for parameters the scheme refuses; [`StreamError::NeedsScheme`]
/// for a custom scheme without its builder.
pub(crate) fn build_scheme(
    config: &StreamConfig,
    mechanism: Box<dyn Mechanism + Send>,
    custom: Option<&dyn SchemeBuilder>,
) -> Result<Box<dyn StreamScheme + Send>> {
    let params = config.params()?;
    let builder: &dyn SchemeBuilder = match (&config.scheme, custom) {
        (SchemeChoice::BuiltIn(kind), _) => kind,
        (SchemeChoice::Custom(name), Some(b)) if b.name() == name => b,
        (SchemeChoice::Custom(name), b) => {
            return Err(StreamError::NeedsScheme {
                name: name.clone(),
                given: b.map(|b| b.name().to_owned()),
            });
        }
    };
    builder.build(params, &config.inputs(), mechanism).map_err(StreamError::Plan)
}

/// The mechanism `config` names over `noise`: the built-in Laplace mechanism, or `custom`'s,
/// the builder the stream was opened with.
///
/// # Errors
/// [`StreamError::NeedsMechanism`] for a custom mechanism without its builder, or with
/// another's.
pub(crate) fn build_mechanism(
    config: &StreamConfig,
    noise: Box<dyn NoiseSource + Send>,
    custom: Option<&dyn MechanismBuilder>,
) -> Result<Box<dyn Mechanism + Send>> {
    match (&config.mechanism, custom) {
        (None, _) => Ok(tpl_mechanisms::Laplace.build(noise)),
        (Some(name), Some(b)) if b.name() == name => Ok(b.build(noise)),
        (Some(name), b) => {
            Err(StreamError::NeedsMechanism { name: name.clone(), given: b.map(|b| b.name().to_owned()) })
        }
    }
}

/// The noise sampler of every release of the stream (the mechanisms' sampler choice).
pub use tpl_mechanisms::SamplerKind as Sampler;

/// Everything fixed when a stream is created ([`docs/stream.md`](tpl_core::guide::stream), table
/// `params`).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamConfig {
    /// The w-event scheme (or `planned`, or a custom one).
    pub scheme: SchemeChoice,
    /// ε of every window of `window` steps (of every step for the event-level `laplace`).
    pub epsilon: f64,
    /// w.
    pub window: usize,
    /// Δ, the L1 sensitivity of one step's counts.
    pub sensitivity: f64,
    /// The noise sampler.
    pub sampler: Sampler,
    /// The name of the application's mechanism the scheme releases through
    /// ([`crate::StreamOptions::mechanism`]), or `None` for the built-in Laplace mechanism. Set
    /// by the options a stream is created with; read back from the file.
    pub mechanism: Option<String>,
    /// What the adversary knows, P_B and P_F, either optional: audits the leakage, decides
    /// PBA's correlation pool, and its forward matrix moves the stored estimates' prior.
    pub correlation: Correlation,
    /// With matrices: the largest temporal privacy leakage (TPL of the TKDE paper) any step
    /// may reach; a step that would exceed it is not published.
    pub alpha: Option<f64>,
    /// The planned scheme's budgets ε_1, ε_2, … (empty for the other schemes).
    pub budgets: Vec<f64>,
    /// The causal estimates each push also stores, if any ([`Estimation`]).
    pub estimation: Option<Estimation>,
}

/// The estimates a stream stores beside its releases ([`docs/stream.md`](tpl_core::guide::stream)
/// §9): at every push, the estimate x̂_t of step t's true counts by a filter of
/// `tpl-postprocess` that reads the releases r_1..r_t, their fresh budgets and the stream's
/// public parameters only (the forward matrix, the sensitivity) — post-processing, which costs
/// no privacy. The estimates assume a population of `total` people that moves by the forward
/// matrix; they sum to `total` at every step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimation {
    /// The filter: `map`, `map-dbsec`, `map-integer` or `mle` (`smooth` and `kalman` read the
    /// whole stream; they are [`crate::DurableStream::reestimated`]'s).
    pub estimator: Estimator,
    /// The population N (public), 1 ≤ N ≤ 2⁵³.
    pub total: u64,
}

impl Estimation {
    /// Checks that the estimates can be made under `forward`: a filter, with the forward
    /// matrix the map estimators need from step 2 on, over 1 ≤ N ≤ 2⁵³ people.
    ///
    /// # Errors
    /// [`ConfigError::Estimation`] saying why.
    pub fn check(&self, forward: Option<&TransitionMatrix>) -> std::result::Result<(), ConfigError> {
        let name = self.estimator.name();
        if !self.estimator.is_filter() {
            return Err(ConfigError::Estimation(format!(
                "{name} reads the whole stream, not the releases up to each step; store a filter (map, \
                 map-dbsec, map-integer or mle) and smooth on export"
            )));
        }
        if self.estimator.uses_prior() && forward.is_none() {
            return Err(ConfigError::Estimation(format!(
                "{name} moves its prior by the forward matrix: give the stream one (or store mle)"
            )));
        }
        if self.total == 0 || self.total > 1 << 53 {
            return Err(ConfigError::Estimation(format!(
                "a population of {} people: 1 to 2^53 are supported",
                self.total
            )));
        }
        Ok(())
    }
}

impl StreamConfig {
    /// `scheme` with ε per window of `window` steps and the defaults of `tpl stream init`:
    /// Δ = 2, the exact discrete sampler, no matrices, no α, no plan (set those fields with
    /// struct-update syntax). Nothing is checked until [`crate::DurableStream::create`].
    pub fn new(scheme: impl Into<SchemeChoice>, epsilon: f64, window: usize) -> Self {
        Self {
            scheme: scheme.into(),
            epsilon,
            window,
            sensitivity: 2.0,
            sampler: Sampler::Discrete,
            mechanism: None,
            correlation: Correlation::none(),
            alpha: None,
            budgets: Vec::new(),
            estimation: None,
        }
    }

    /// The checked w-event parameters.
    ///
    /// # Errors
    /// [`StreamError::Config`] naming the parameter at fault.
    pub fn params(&self) -> Result<WEventParams> {
        WEventParams::new(self.epsilon, self.window, self.sensitivity)
            .map_err(|e| StreamError::Config(ConfigError::Params(e)))
    }

    /// The adversary's correlation, when a matrix was given.
    pub fn known_correlation(&self) -> Option<Correlation> {
        (!self.correlation.is_none()).then(|| self.correlation.clone())
    }

    /// The stream's public parameters as the estimators of `tpl-postprocess` take them: Δ, the
    /// forward and backward matrices, for `estimator` over a population `total`
    /// ([`docs/stream.md`](tpl_core::guide::stream) §9).
    pub fn filter_config(&self, estimator: Estimator, total: u64) -> FilterConfig<'_> {
        FilterConfig {
            sensitivity: self.sensitivity,
            correlation: &self.correlation,
            estimator,
            ..FilterConfig::new(total)
        }
    }

    /// What the scheme needs beyond (ε, w, Δ).
    pub fn inputs(&self) -> SchemeInputs {
        SchemeInputs { pba_pool: PbaPool::detect(&self.correlation), plan: self.budgets.clone() }
    }

    /// Checks that the parameters make a stream: valid (ε, w, Δ), w within what the file
    /// stores (2^63 − 1); `pba` with a matrix; budgets for `planned` only, and a plan it
    /// accepts; α > 0 only with a matrix.
    ///
    /// # Errors
    /// [`StreamError::Config`] naming the parameters at fault; [`StreamError::Plan`] for a plan
    /// the planned scheme refuses.
    pub fn check(&self) -> Result<()> {
        self.check_with(None, None)
    }

    /// [`StreamConfig::check`], building a custom scheme with `scheme` and a custom mechanism
    /// with `mechanism`; without them, their own checks are left to the builders at create and
    /// open.
    ///
    /// # Errors
    /// As [`StreamConfig::check`].
    pub(crate) fn check_with(
        &self,
        scheme: Option<&dyn SchemeBuilder>,
        mechanism: Option<&dyn MechanismBuilder>,
    ) -> Result<()> {
        if i64::try_from(self.window).is_err() {
            return Err(StreamError::Config(ConfigError::WindowTooLarge(self.window)));
        }
        self.params()?;
        let has_matrix = !self.correlation.is_none();
        if self.scheme.kind() == Some(SchemeKind::Pba) && !has_matrix {
            return Err(StreamError::Config(ConfigError::PbaNeedsMatrix));
        }
        let planned = self.scheme.kind() == Some(SchemeKind::Planned);
        match (planned, self.budgets.is_empty()) {
            (true, true) => return Err(StreamError::Config(ConfigError::PlannedNeedsBudgets)),
            (true, false) | (false, true) => {}
            (false, false) => return Err(StreamError::Config(ConfigError::BudgetsNotPlanned)),
        }
        if let Some(alpha) = self.alpha {
            check_alpha(alpha).map_err(|e| StreamError::Config(ConfigError::Alpha(e)))?;
            if !has_matrix {
                return Err(StreamError::Config(ConfigError::AlphaNeedsMatrix));
            }
        }
        if let Some(e) = &self.estimation {
            e.check(self.correlation.forward()).map_err(StreamError::Config)?;
        }
        // The scheme builds (a plan it refuses is named here, before any file exists).
        if matches!((&self.scheme, scheme), (SchemeChoice::Custom(_), None))
            || (self.mechanism.is_some() && mechanism.is_none())
        {
            return Ok(());
        }
        build_scheme(self, build_mechanism(self, self.sampler.from_os_rng(), mechanism)?, scheme)?;
        Ok(())
    }
}
