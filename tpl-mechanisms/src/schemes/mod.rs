//! The stream schemes of [`docs/w-event.md`](tpl_core::guide::w_event) §3 and the planned scheme,
//! one decision rule per file, and the pieces the rules share: the window's room and the
//! publish-or-approximate decision. The test statistic is
//! [`crate::scheme::Step::noisy_dissimilarity`].

mod ba;
mod bd;
mod dsat;
mod fast;
mod laplace;
mod pba;
mod planned;
mod sample;
mod uniform;

pub use ba::{Ba, BaRule};
pub use bd::{Bd, BdRule};
pub use dsat::{Dsat, DsatConfig, DsatRule};
pub use fast::{Fast, FastConfig, FastRule};
pub use laplace::{EventLaplace, LaplaceRule};
pub use pba::{Pba, PbaPool, PbaRule};
pub use planned::{Planned, PlannedRule};
pub use sample::{Sample, SampleRule};
pub use uniform::{Uniform, UniformRule};

use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;

/// The publication test of [`docs/w-event.md`](tpl_core::guide::w_event) §3 that `bd`, `ba` and
/// `pba` share: publish with budget p iff p > 0, b = Δ/p is finite and the noisy staleness error
/// ([`crate::Step::noisy_dissimilarity`]) exceeds b, the expected error of a fresh publication.
///
/// ```
/// use tpl_mechanisms::{WEventParams, worth_publishing};
/// let params = WEventParams::new(1.0, 10, 2.0)?;
/// assert!(worth_publishing(0.5, 4.5, &params)); // staleness 4.5 > Δ/p = 4
/// assert!(!worth_publishing(0.0, 1e9, &params)); // nothing to publish with
/// # Ok::<(), tpl_mechanisms::MechError>(())
/// ```
pub fn worth_publishing(p: f64, noisy_dis: f64, params: &WEventParams) -> bool {
    let b = params.sensitivity() / p;
    p > 0.0 && b.is_finite() && noisy_dis > b
}

/// The scheme of `kind` over `mechanism`, boxed as the caller's return type asks
/// ([`SchemeKind::build`], `SchemeKind::build_send`).
macro_rules! build {
    ($kind:expr, $params:expr, $mechanism:expr, $inputs:expr) => {{
        let (params, mechanism, inputs): (WEventParams, _, SchemeInputs) = ($params, $mechanism, $inputs);
        Ok(match $kind {
            Self::Laplace => Box::new(EventLaplace::new(params, mechanism)),
            Self::Uniform => Box::new(Uniform::new(params, mechanism)),
            Self::Sample => Box::new(Sample::new(params, mechanism)),
            Self::Bd => Box::new(Bd::new(params, mechanism)),
            Self::Ba => Box::new(Ba::new(params, mechanism)),
            Self::Pba => Box::new(Pba::new(params, mechanism, inputs.pba_pool)),
            Self::Dsat => Box::new(Dsat::new(params, mechanism)),
            Self::Fast => Box::new(Fast::new(params, mechanism)),
            Self::Planned => Box::new(Planned::new(params, mechanism, inputs.plan)?),
        })
    }};
}

/// The schemes by name, for callers that choose one at run time (the CLI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemeKind {
    /// [`EventLaplace`].
    Laplace,
    /// [`Uniform`].
    Uniform,
    /// [`Sample`].
    Sample,
    /// [`Bd`].
    Bd,
    /// [`Ba`].
    Ba,
    /// [`Pba`]: Hemkumar et al. (2021), not the Personalized Budget Absorption of Du et al. (2025).
    Pba,
    /// [`Planned`] (needs its plan: [`SchemeInputs::plan`]).
    Planned,
    /// [`Dsat`]: Li et al. (CIKM 2015), with the parameters of [`DsatConfig::default`].
    Dsat,
    /// [`Fast`]: Fan and Xiong (CIKM 2012, TKDE 2014) in its w-event form, with the parameters
    /// of [`FastConfig::default`].
    Fast,
}

/// What some schemes need beyond (ε, w, Δ) and the mechanism.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemeInputs {
    /// When PBA draws on its correlation pool (ignored by the others).
    pub pba_pool: PbaPool,
    /// The planned scheme's budgets ε_1, ε_2, … (ignored by the others).
    pub plan: Vec<f64>,
}

impl From<PbaPool> for SchemeInputs {
    fn from(pba_pool: PbaPool) -> Self {
        Self { pba_pool, plan: Vec::new() }
    }
}

impl SchemeKind {
    /// The schemes whose budgets follow from (ε, w, Δ) alone, in the order of
    /// [`docs/w-event.md`](tpl_core::guide::w_event) §3 (what `tpl compare` runs);
    /// [`SchemeKind::Planned`] is not among them.
    pub const ALL: [SchemeKind; 6] =
        [Self::Laplace, Self::Uniform, Self::Sample, Self::Bd, Self::Ba, Self::Pba];

    /// Every built-in scheme: [`SchemeKind::ALL`], `planned`, then the schemes of the field's
    /// benchmark set that `tpl` adds to its own ([`docs/w-event.md`](tpl_core::guide::w_event)
    /// §3.10 on).
    pub const BUILT_IN: [SchemeKind; 9] = [
        Self::Laplace,
        Self::Uniform,
        Self::Sample,
        Self::Bd,
        Self::Ba,
        Self::Pba,
        Self::Planned,
        Self::Dsat,
        Self::Fast,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Laplace => "laplace",
            Self::Uniform => "uniform",
            Self::Sample => "sample",
            Self::Bd => "bd",
            Self::Ba => "ba",
            Self::Pba => "pba",
            Self::Planned => "planned",
            Self::Dsat => "dsat",
            Self::Fast => "fast",
        }
    }

    /// The scheme called `name` (as on the command line), if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::BUILT_IN.into_iter().find(|k| k.name() == name)
    }

    /// Builds the scheme; `inputs` carries PBA's correlation and the planned budgets (a
    /// [`PbaPool`] converts into inputs with an empty plan).
    ///
    /// # Errors
    /// [`MechError::BadPlan`](crate::MechError::BadPlan) for [`SchemeKind::Planned`] with a
    /// plan [`Planned::new`] refuses; the other kinds always build.
    pub fn build<M: Mechanism + 'static>(
        self,
        params: WEventParams,
        mechanism: M,
        inputs: impl Into<SchemeInputs>,
    ) -> Result<Box<dyn crate::StreamScheme>> {
        build!(self, params, mechanism, inputs.into())
    }

    /// [`SchemeKind::build`] for a mechanism that can move between threads: the scheme can
    /// too (e.g. a durable stream held by a thread pool or a Python object). Reached through
    /// [`crate::SchemeBuilder`].
    ///
    /// # Errors
    /// As [`SchemeKind::build`].
    pub(crate) fn build_send<M: Mechanism + Send + 'static>(
        self,
        params: WEventParams,
        mechanism: M,
        inputs: impl Into<SchemeInputs>,
    ) -> Result<Box<dyn crate::StreamScheme + Send>> {
        build!(self, params, mechanism, inputs.into())
    }
}
