//! Argument groups shared by several commands, defined once and flattened into each
//! (`#[command(flatten)]`), so that a flag means the same thing and reads the same help
//! everywhere. The output format is the global `--format`.

use std::path::{Path, PathBuf};

use clap::Args;
use tpl_core::Correlation;
use tpl_io::text::name;
use tpl_mechanisms::{MechError, SchemeKind, WEventParams};

use crate::error::{CliError, Result};
use crate::matrix_file::{MatrixOptions, read_matrix, read_matrix_for};

/// The adversary's temporal correlations: `--backward`, `--forward` and how matrix files are
/// read (`--normalize`, `--smoothing`).
#[derive(Debug, Args)]
pub struct CorrelationArgs {
    /// Backward correlation P_B known to the adversary (row j: Pr(value at t−1 | value at
    /// t = j)); omit if unknown to them. `-` reads standard input.
    #[arg(long, value_name = "FILE")]
    pub backward: Option<PathBuf>,
    /// Forward correlation P_F known to the adversary (row j: Pr(value at t | value at
    /// t−1 = j)); omit if unknown to them.
    #[arg(long, value_name = "FILE")]
    pub forward: Option<PathBuf>,
    #[command(flatten)]
    pub matrices: MatrixOptions,
}

impl CorrelationArgs {
    /// Reads the matrices given as the adversary's correlation; errors name the file and
    /// line, or both files when their sizes differ.
    pub fn read(&self) -> Result<Correlation> {
        let read = |path: &Option<PathBuf>| path.as_ref().map(|p| read_matrix(p, &self.matrices)).transpose();
        Correlation::new(read(&self.backward)?, read(&self.forward)?).map_err(|source| {
            let context = match (&self.backward, &self.forward) {
                (Some(b), Some(f)) => format!("--backward {}, --forward {}: ", name(b), name(f)),
                _ => String::new(),
            };
            CliError::Core { context, source }
        })
    }

    /// As [`CorrelationArgs::read`], for a stream of `cells` cells read from `counts`: each
    /// matrix must be `cells`×`cells` ([`read_matrix_for`]).
    pub fn read_for(&self, cells: usize, counts: &Path) -> Result<Correlation> {
        let read = |path: &Option<PathBuf>, side| {
            path.as_ref().map(|p| read_matrix_for(p, &self.matrices, side, cells, counts)).transpose()
        };
        let (backward, forward) = (read(&self.backward, "backward")?, read(&self.forward, "forward")?);
        // Both are cells × cells: they describe the same states.
        Ok(Correlation::new(backward, forward)?)
    }
}

/// What a release is made with, shared by `tpl release` and `tpl stream init`: the scheme,
/// its w-event parameters and the adversary's correlations.
#[derive(Debug, Args)]
pub struct ReleaseSetup {
    /// Stream scheme: laplace (event level), uniform, sample, bd, ba, pba (the correlation-aware
    /// absorption of Hemkumar et al. 2021, not the personalized one of Du et al. 2025; needs
    /// --backward and/or --forward), dsat (Li et al. 2015: sampling with an adaptive
    /// threshold), fast (Fan and Xiong 2014: Kalman filtering and PID-controlled sampling), or
    /// planned (needs --budgets).
    #[arg(long, value_parser = crate::release_report::parse_scheme)]
    pub scheme: SchemeKind,
    #[command(flatten)]
    pub wevent: WEventArgs,
    #[command(flatten)]
    pub correlation: CorrelationArgs,
}

/// `--seed`: reproducible randomness on request, OS entropy otherwise.
#[derive(Debug, Clone, Copy, Args)]
pub struct SeedArgs {
    /// Seed S for a reproducible run; default: OS entropy. Anyone with the seed can redraw
    /// the noise: a seeded release is NOT private.
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
}

/// `--interval`: per-cell confidence intervals at a level in (0, 1).
#[derive(Debug, Clone, Copy, Args)]
pub struct IntervalArgs {
    /// Add per-cell LEVEL confidence intervals (e.g. 0.9): `lower`/`upper` in the JSON,
    /// `lo_c…`/`hi_c…` columns in the CSV. Raw releases: the exact quantiles of each fresh
    /// release's noise (a repeat carries its publication's); estimates made now: a parametric
    /// bootstrap; a stream's stored estimates: from the standard error stored with each
    /// (`estimates_lower`/`estimates_upper` beside the releases); docs/intervals.md.
    #[arg(long, value_name = "LEVEL", allow_negative_numbers = true, value_parser = parse_level)]
    pub interval: Option<f64>,
}

/// A confidence level: a number strictly between 0 and 1.
fn parse_level(token: &str) -> std::result::Result<f64, String> {
    let level = tpl_io::text::finite_f64(token)?;
    if level > 0.0 && level < 1.0 {
        Ok(level)
    } else {
        Err(format!("{token} is not a level strictly between 0 and 1 (e.g. 0.9)"))
    }
}

/// The parameters of w-event privacy shared by the commands that release.
#[derive(Debug, Clone, Copy, Args)]
pub struct WEventArgs {
    /// Budget ε > 0 of every window of W steps (of every step for the event-level laplace
    /// scheme).
    #[arg(long, value_name = "E", allow_negative_numbers = true, value_parser = tpl_io::text::finite_f64)]
    pub epsilon: f64,
    /// Window W ≥ 1 of w-event privacy (and of the audited window leakage, where reported).
    #[arg(long, value_name = "W")]
    pub window: usize,
    /// L1 sensitivity Δ > 0 of one step's counts (2: one user moves between cells).
    #[arg(long, value_name = "D", default_value_t = tpl_mechanisms::DEFAULT_SENSITIVITY, allow_negative_numbers = true, value_parser = tpl_io::text::finite_f64)]
    pub sensitivity: f64,
}

impl WEventArgs {
    /// The checked parameters; an error names the flag at fault.
    pub fn params(&self) -> Result<WEventParams> {
        WEventParams::new(self.epsilon, self.window, self.sensitivity).map_err(|e| {
            let flag = match e {
                MechError::BadWindow(_) => "--window",
                MechError::Core(tpl_core::CoreError::BadSensitivity(_)) => "--sensitivity",
                _ => "--epsilon",
            };
            CliError::Mech { context: format!("{flag}: "), source: e }
        })
    }
}
