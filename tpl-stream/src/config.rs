//! The parameters a stream is created with, fixed for its life.

use tpl_alloc::Correlation;
use tpl_core::{TransitionMatrix, check_alpha};
use tpl_mechanisms::{
    MechError, Mechanism, PbaCorrelation, SchemeInputs, SchemeKind, StreamScheme, WEventParams,
};
use tpl_postprocess::{Estimator, FilterConfig};

use crate::error::{ConfigError, Result, StreamError};

/// Which scheme a stream runs: one of the built-in schemes, or a scheme an application
/// supplies through a [`SchemeFactory`] under a name of its own (stored in the file; the
/// stream is then opened with that factory: [`crate::DurableStream::open_custom`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemeChoice {
    /// A scheme of `tpl-mechanisms`.
    BuiltIn(SchemeKind),
    /// A scheme built by the application's [`SchemeFactory`] of that name.
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

/// Builds a custom scheme of a durable stream, at every open and after every step read
/// back from the file (the stream restores its recorded steps into a fresh scheme, so the
/// scheme must implement [`StreamScheme::restore`] and [`StreamScheme::resume`]). The
/// mechanism handed over is the stream's own (its sampler, with the α guard of a stream
/// with matrices): the scheme must release through it.
pub trait SchemeFactory: Send + Sync {
    /// The scheme's name, as stored in the file ([`SchemeChoice::Custom`]); not one of the
    /// built-in names.
    fn name(&self) -> &str;

    /// The scheme with the stream's parameters and inputs, releasing through `mechanism`.
    ///
    /// # Errors
    /// Parameters the scheme refuses.
    fn build(
        &self,
        params: WEventParams,
        inputs: &SchemeInputs,
        mechanism: Box<dyn Mechanism + Send>,
    ) -> std::result::Result<Box<dyn StreamScheme + Send>, MechError>;
}

/// The type of a custom scheme's builder as a closure ([`scheme_factory`]).
pub type BuildScheme = dyn Fn(
        WEventParams,
        &SchemeInputs,
        Box<dyn Mechanism + Send>,
    ) -> std::result::Result<Box<dyn StreamScheme + Send>, MechError>
    + Send
    + Sync;

/// A [`SchemeFactory`] made of a name and a closure ([`scheme_factory`]).
pub struct NamedFactory {
    name: String,
    build: Box<BuildScheme>,
}

/// The [`SchemeFactory`] called `name` that builds with `build`.
///
/// ```
/// use tpl_mechanisms::Uniform;
/// use tpl_stream::{SchemeFactory, scheme_factory};
/// let factory = scheme_factory("my-uniform", |params, _, mechanism| Ok(Box::new(Uniform::new(params, mechanism))));
/// assert_eq!(factory.name(), "my-uniform");
/// ```
pub fn scheme_factory(
    name: impl Into<String>,
    build: impl Fn(
        WEventParams,
        &SchemeInputs,
        Box<dyn Mechanism + Send>,
    ) -> std::result::Result<Box<dyn StreamScheme + Send>, MechError>
    + Send
    + Sync
    + 'static,
) -> NamedFactory {
    NamedFactory { name: name.into(), build: Box::new(build) }
}

impl SchemeFactory for NamedFactory {
    fn name(&self) -> &str {
        &self.name
    }

    fn build(
        &self,
        params: WEventParams,
        inputs: &SchemeInputs,
        mechanism: Box<dyn Mechanism + Send>,
    ) -> std::result::Result<Box<dyn StreamScheme + Send>, MechError> {
        (self.build)(params, inputs, mechanism)
    }
}

/// The scheme `config` names, over `mechanism`: built-in, or from `factory`.
///
/// # Errors
/// [`StreamError::Plan`] for parameters the scheme refuses; [`StreamError::NeedsFactory`]
/// for a custom scheme without its factory.
pub(crate) fn build_scheme(
    config: &StreamConfig,
    mechanism: impl Mechanism + Send + 'static,
    factory: Option<&dyn SchemeFactory>,
) -> Result<Box<dyn StreamScheme + Send>> {
    let params = config.params()?;
    match (&config.scheme, factory) {
        (SchemeChoice::BuiltIn(kind), _) => kind.build_send(params, mechanism, config.inputs()),
        (SchemeChoice::Custom(name), Some(f)) if f.name() == name => {
            f.build(params, &config.inputs(), Box::new(mechanism))
        }
        (SchemeChoice::Custom(name), f) => {
            return Err(StreamError::NeedsFactory {
                name: name.clone(),
                given: f.map(|f| f.name().to_owned()),
            });
        }
    }
    .map_err(StreamError::Plan)
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
    /// P_B known to the adversary, if any (audits leakage; decides PBA's correlation pool).
    pub backward: Option<TransitionMatrix>,
    /// P_F known to the adversary, if any.
    pub forward: Option<TransitionMatrix>,
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
            backward: None,
            forward: None,
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
    ///
    /// # Errors
    /// [`StreamError::Config`] for matrices over different numbers of states.
    pub fn correlation(&self) -> Result<Option<Correlation>> {
        if self.backward.is_none() && self.forward.is_none() {
            return Ok(None);
        }
        Correlation::new(self.backward.as_ref(), self.forward.as_ref())
            .map(Some)
            .map_err(|e| StreamError::Config(ConfigError::Matrices(e)))
    }

    /// The stream's public parameters as the estimators of `tpl-postprocess` take them: Δ, the
    /// forward and backward matrices, for `estimator` over a population `total`
    /// ([`docs/stream.md`](tpl_core::guide::stream) §9).
    pub fn filter_config(&self, estimator: Estimator, total: u64) -> FilterConfig<'_> {
        FilterConfig {
            sensitivity: self.sensitivity,
            forward: self.forward.as_ref(),
            backward: self.backward.as_ref(),
            estimator,
            ..FilterConfig::new(total)
        }
    }

    /// What the scheme needs beyond (ε, w, Δ).
    pub fn inputs(&self) -> SchemeInputs {
        SchemeInputs {
            correlation: PbaCorrelation::from_matrices(self.backward.as_ref(), self.forward.as_ref()),
            plan: self.budgets.clone(),
        }
    }

    /// Checks that the parameters make a stream: valid (ε, w, Δ), w within what the file
    /// stores (2^63 − 1); `pba` with a matrix; budgets for `planned` only, and a plan it
    /// accepts; α > 0 only with a matrix.
    ///
    /// # Errors
    /// [`StreamError::Config`] naming the parameters at fault; [`StreamError::Plan`] for a plan
    /// the planned scheme refuses.
    pub fn check(&self) -> Result<()> {
        self.check_with(None)
    }

    /// [`StreamConfig::check`], building a custom scheme with `factory`; without one, a
    /// custom scheme's own checks are left to the factory at create and open.
    ///
    /// # Errors
    /// As [`StreamConfig::check`].
    pub(crate) fn check_with(&self, factory: Option<&dyn SchemeFactory>) -> Result<()> {
        if i64::try_from(self.window).is_err() {
            return Err(StreamError::Config(ConfigError::WindowTooLarge(self.window)));
        }
        self.params()?;
        let has_matrix = self.backward.is_some() || self.forward.is_some();
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
            e.check(self.forward.as_ref()).map_err(StreamError::Config)?;
        }
        // Sizes only: the loss functions are computed once, when the stream is created.
        Correlation::check_sizes(self.backward.as_ref(), self.forward.as_ref())
            .map_err(|e| StreamError::Config(ConfigError::Matrices(e)))?;
        // The scheme builds (a plan it refuses is named here, before any file exists).
        if let (SchemeChoice::Custom(_), None) = (&self.scheme, factory) {
            return Ok(());
        }
        build_scheme(self, tpl_mechanisms::LaplaceMechanism::new(self.sampler.from_os_rng()), factory)?;
        Ok(())
    }
}
