//! The stream schemes of `specs/w-event.md` §3, one file each, and the pieces they share:
//! the dissimilarity test and the publish-or-approximate decision.
//!
//! **Test statistic [D].** The spec states the test on the mean dis = (1/d)·Σ_j |c_j − r_j|
//! with noise Lap((Δ/d)/s). We run the same mechanism on the sum d·dis with sensitivity Δ and
//! noise Lap(Δ/s) and divide the noisy sum by d: identical in distribution for continuous
//! noise, and the sum is an integer when counts and releases are, so the release-grade
//! discrete Laplace stays exact (a mean on a 1/d lattice would not). The requested test scale
//! is therefore Δ/s = 2wΔ/ε.

mod ba;
mod bd;
mod laplace;
mod pba;
mod sample;
mod uniform;

pub use ba::Ba;
pub use bd::Bd;
pub use laplace::EventLaplace;
pub use pba::{Pba, PbaCorrelation};
pub use sample::Sample;
pub use uniform::Uniform;

use crate::budget::Grid;
use crate::error::Result;
use crate::mechanism::Mechanism;
use crate::params::WEventParams;
use crate::scheme::Stream;

/// What the window ending at this step may still spend: the largest f64 on the grid r with
/// (Σ of the last w − 1 step totals) + r ≤ ε exactly, `recent` being that sum in grid units.
pub(crate) fn room(params: &WEventParams, recent: u128) -> f64 {
    let grid = params.grid();
    grid.value(grid.epsilon().saturating_sub(recent))
}

/// The largest publication budget ≤ `p` whose step total `test` + publication (rounded up,
/// [`crate::StepBudget::total`]) stays within `room`, given `test` ≤ `room`. While w < 2^21
/// totals are exact and the schemes' integer rules never need it; for longer windows it keeps
/// a total's rounding inside the pool it is charged to.
pub(crate) fn fit(grid: &Grid, room: f64, test: f64, p: f64) -> f64 {
    p.min(grid.value(grid.units(room) - grid.units(test)))
}

/// The noisy dissimilarity dis~_t (spends s = ε/(2w)); one draw.
pub(crate) fn noisy_dissimilarity<M: Mechanism>(
    mechanism: &mut M,
    stream: &Stream,
    counts: &[f64],
    params: &WEventParams,
) -> Result<f64> {
    let sum = stream.distance(counts);
    let noisy = mechanism.release(&[sum], params.sensitivity(), params.share())?;
    Ok(noisy[0] / counts.len() as f64)
}

/// The decision rule of the spec §3: publish with budget p iff p > 0, b = Δ/p is finite and
/// the noisy staleness error exceeds b (the expected error of a fresh publication).
pub(crate) fn worth_publishing(p: f64, noisy_dis: f64, params: &WEventParams) -> bool {
    let b = params.sensitivity() / p;
    p > 0.0 && b.is_finite() && noisy_dis > b
}

/// The schemes by name, for callers that choose one at run time (the CLI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// [`Pba`].
    Pba,
}

impl SchemeKind {
    /// Every scheme, in the order of the spec.
    pub const ALL: [SchemeKind; 6] =
        [Self::Laplace, Self::Uniform, Self::Sample, Self::Bd, Self::Ba, Self::Pba];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Laplace => "laplace",
            Self::Uniform => "uniform",
            Self::Sample => "sample",
            Self::Bd => "bd",
            Self::Ba => "ba",
            Self::Pba => "pba",
        }
    }

    /// The scheme called `name` (as on the command line), if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Builds the scheme; `correlation` is used by PBA only.
    pub fn build<M: Mechanism + 'static>(
        self,
        params: WEventParams,
        mechanism: M,
        correlation: PbaCorrelation,
    ) -> Box<dyn crate::StreamScheme> {
        match self {
            Self::Laplace => Box::new(EventLaplace::new(params, mechanism)),
            Self::Uniform => Box::new(Uniform::new(params, mechanism)),
            Self::Sample => Box::new(Sample::new(params, mechanism)),
            Self::Bd => Box::new(Bd::new(params, mechanism)),
            Self::Ba => Box::new(Ba::new(params, mechanism)),
            Self::Pba => Box::new(Pba::new(params, mechanism, correlation)),
        }
    }
}
