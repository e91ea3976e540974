//! `tpl release`: run a w-event stream scheme over a counts file
//! ([`docs/w-event.md`](tpl_core::guide::w_event)).

use std::path::{Path, PathBuf};

use clap::Args;
use tpl_core::Short;
use tpl_io::{Counts, read_budgets, read_counts};
use tpl_mechanisms::{
    Laplace, MechError, MechanismBuilder, PbaPool, SamplerKind, SchemeBuilder, SchemeInputs, SchemeKind, run,
};

use crate::args::{IntervalArgs, ReleaseSetup, SeedArgs};
use crate::counts_check::check_counts;
use crate::error::{CliError, Result};
use crate::provenance::{note_seeded, warn_float_sampler};
use crate::release_report::{MatricesUsed, ReleaseReport, Sampler, raw_intervals};

/// The help of `--scheme` for `tpl release`, which adds to [`ReleaseSetup`]'s how the matrices
/// decide PBA's correlation pool.
const SCHEME_HELP: &str = "Stream scheme: laplace (event level), uniform, sample, bd, ba, pba (the correlation-aware \
                           absorption of Hemkumar et al. 2021, not the personalized one of Du et al. 2025; needs \
                           --backward and/or --forward: they decide whether its correlation pool is used), dsat \
                           (Li et al. 2015: sampling with an adaptive threshold), fast (Fan and Xiong 2014: Kalman \
                           filtering and PID-controlled sampling), or planned (needs --budgets)";

/// Arguments of `tpl release`.
#[derive(Debug, Args)]
#[command(mut_args(|a| if a.get_id() == "scheme" { a.help(SCHEME_HELP) } else { a }))]
pub struct ReleaseArgs {
    /// Counts file: one row per step (header `timestamp_bucket,c0,…` or headerless).
    #[arg(long, value_name = "FILE")]
    pub counts: PathBuf,
    #[command(flatten)]
    pub setup: ReleaseSetup,
    /// The planned scheme's budgets ε_t, one per step (a budgets file, as for `tpl leakage`);
    /// every window of W steps must sum to at most ε.
    #[arg(long, value_name = "FILE")]
    pub budgets: Option<PathBuf>,
    #[command(flatten)]
    pub seed: SeedArgs,
    #[command(flatten)]
    pub interval: IntervalArgs,
    /// Noise sampler (`secure` is accepted for `discrete`).
    #[arg(long, value_enum, default_value_t = Sampler(SamplerKind::Discrete))]
    pub sampler: Sampler,
}

/// Runs `tpl release`.
pub fn run_release(args: &ReleaseArgs) -> Result<ReleaseReport> {
    let params = args.setup.wevent.params()?;
    let corr = &args.setup.correlation;
    if args.setup.scheme == SchemeKind::Pba && corr.backward.is_none() && corr.forward.is_none() {
        return Err(CliError::Usage(
            "--scheme pba needs --backward and/or --forward: its correlation pool depends on them".into(),
        ));
    }
    let plan = match (&args.budgets, args.setup.scheme) {
        (Some(path), SchemeKind::Planned) => read_budgets(path)?,
        (None, SchemeKind::Planned) => {
            return Err(CliError::Usage("--scheme planned needs --budgets: the budget of every step".into()));
        }
        (Some(_), _) => return Err(CliError::Usage("--budgets is for --scheme planned only".into())),
        (None, _) => Vec::new(),
    };
    let counts = read_counts(&args.counts, false)?;
    let correlation = corr.read_for(counts.rows[0].len(), &args.counts)?;
    let matrices = MatricesUsed::new(corr, &correlation);
    let sampler = args.sampler.0;
    let mechanism = Laplace.build(sampler.source(args.seed.seed));
    let hint = match sampler {
        SamplerKind::Discrete => " (--sampler float takes any data, but is not release-grade)",
        _ => "",
    };
    check_counts(&mechanism, &args.counts, &counts, hint)?;
    let kind = args.setup.scheme;
    let inputs = SchemeInputs { pba_pool: PbaPool::detect(&correlation), plan };
    // The built-in schemes are built through the door a user's scheme comes through.
    let mut scheme = SchemeBuilder::build(&kind, params, &inputs, mechanism).map_err(|e| CliError::Mech {
        context: format!("{}: ", args.budgets.as_deref().unwrap_or(Path::new("--budgets")).display()),
        source: e,
    })?;
    let run =
        run(scheme.as_mut(), &counts.rows).map_err(|e| run_error(args, &counts, scheme.steps() + 1, e))?;
    let intervals = raw_intervals(&run, args.setup.wevent.sensitivity, sampler, args.interval.interval)?;
    // Said once the release exists (an error stays one line).
    note_seeded(args.seed.seed, "this release");
    warn_float_sampler(sampler);
    Ok(ReleaseReport {
        command: "release",
        scheme: kind.name().to_owned(),
        epsilon: args.setup.wevent.epsilon,
        window: args.setup.wevent.window,
        sensitivity: args.setup.wevent.sensitivity,
        sampler,
        seeded: args.seed.seed.is_some(),
        buckets: counts.buckets,
        matrices,
        run,
        intervals,
        stream: None,
    })
}

/// A failed step, blamed on what caused it: the budget (a noise scale the sampler cannot
/// take names `--epsilon`) or the counts file's line.
fn run_error(args: &ReleaseArgs, counts: &Counts, step: usize, e: MechError) -> CliError {
    match e {
        MechError::ScaleTooLarge { .. }
        | MechError::Core(tpl_core::CoreError::BadEpsilon(_))
        | MechError::BadScale(_) => CliError::Mech {
            context: format!(
                "--epsilon {} (with --window {} and --sensitivity {}): step {step}: ",
                Short(args.setup.wevent.epsilon),
                args.setup.wevent.window,
                Short(args.setup.wevent.sensitivity)
            ),
            source: e,
        },
        MechError::NoiseOutOfRange => CliError::Mech { context: format!("step {step}: "), source: e },
        MechError::WindowSumOverflow { .. } => CliError::Mech {
            context: format!(
                "--epsilon {} (with --window {}): ",
                Short(args.setup.wevent.epsilon),
                args.setup.wevent.window
            ),
            source: e,
        },
        other => {
            CliError::parse(&args.counts, counts.lines.get(step - 1).copied().unwrap_or(0), other.to_string())
        }
    }
}
