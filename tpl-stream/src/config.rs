//! The parameters a stream is created with, fixed for its life.

use tpl_alloc::Correlation;
use tpl_core::{TransitionMatrix, check_alpha};
use tpl_mechanisms::{PbaCorrelation, SchemeInputs, SchemeKind, WEventParams};

use crate::error::{ConfigError, Result, StreamError};

/// The noise sampler of every release of the stream (the mechanisms' sampler choice).
pub use tpl_mechanisms::SamplerKind as Sampler;

/// Everything fixed when a stream is created (`docs/stream.md`, table `params`).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamConfig {
    /// The w-event scheme (or `planned`).
    pub scheme: SchemeKind,
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
}

impl StreamConfig {
    /// `scheme` with ε per window of `window` steps and the defaults of `tpl stream init`:
    /// Δ = 2, the exact discrete sampler, no matrices, no α, no plan (set those fields with
    /// struct-update syntax). Nothing is checked until [`crate::DurableStream::create`].
    pub fn new(scheme: SchemeKind, epsilon: f64, window: usize) -> Self {
        Self {
            scheme,
            epsilon,
            window,
            sensitivity: 2.0,
            sampler: Sampler::Discrete,
            backward: None,
            forward: None,
            alpha: None,
            budgets: Vec::new(),
        }
    }

    /// The checked w-event parameters.
    ///
    /// # Errors
    /// [`StreamError::Config`] naming the parameter at fault.
    pub fn params(&self) -> Result<WEventParams> {
        WEventParams::new(self.epsilon, self.window, self.sensitivity)
            .map_err(|e| StreamError::Config(ConfigError::Params(e.to_string())))
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
            .map_err(|e| StreamError::Config(ConfigError::Matrices(e.to_string())))
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
        if i64::try_from(self.window).is_err() {
            return Err(StreamError::Config(ConfigError::WindowTooLarge(self.window)));
        }
        let params = self.params()?;
        let has_matrix = self.backward.is_some() || self.forward.is_some();
        if self.scheme == SchemeKind::Pba && !has_matrix {
            return Err(StreamError::Config(ConfigError::PbaNeedsMatrix));
        }
        match (self.scheme, self.budgets.is_empty()) {
            (SchemeKind::Planned, true) => {
                return Err(StreamError::Config(ConfigError::PlannedNeedsBudgets));
            }
            (SchemeKind::Planned, false) | (_, true) => {}
            (_, false) => return Err(StreamError::Config(ConfigError::BudgetsNotPlanned)),
        }
        if let Some(alpha) = self.alpha {
            check_alpha(alpha).map_err(|e| StreamError::Config(ConfigError::Alpha(e.to_string())))?;
            if !has_matrix {
                return Err(StreamError::Config(ConfigError::AlphaNeedsMatrix));
            }
        }
        self.correlation()?;
        // The scheme builds (a plan it refuses is named here, before any file exists).
        self.scheme
            .build(params, tpl_mechanisms::LaplaceMechanism::new(self.sampler.from_os_rng()), self.inputs())
            .map_err(StreamError::Plan)?;
        Ok(())
    }
}
