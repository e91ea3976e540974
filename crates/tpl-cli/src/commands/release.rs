//! `tpl release`: run a w-event stream scheme over a counts file (`specs/w-event.md` §8).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::{Value, json};
use tpl_mechanisms::{
    DiscreteLaplace, FloatLaplace, LaplaceMechanism, NoiseSource, PbaCorrelation, Run, SchemeKind,
    WEventParams, run,
};

use crate::counts_file::read_counts;
use crate::error::{CliError, Result};
use crate::matrix_file::{MatrixOptions, read_matrix};
use crate::render::{Report, Table, csv_line, human};

/// The noise sampler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Sampler {
    /// Exact discrete Laplace on the integers (release-grade; integer counts).
    Secure,
    /// Inverse-CDF float Laplace: fast, any data, NOT release-grade.
    Float,
}

/// Arguments of `tpl release`.
#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// Counts file: one row per step (header `timestamp_bucket,c0,…` or headerless).
    #[arg(long, value_name = "FILE")]
    pub counts: PathBuf,
    /// Stream scheme: laplace (event level), uniform, sample, bd, ba, or pba (needs
    /// --backward/--forward).
    #[arg(long, value_parser = parse_scheme)]
    pub scheme: SchemeKind,
    /// Budget ε > 0 of every window of W steps (of every step for laplace).
    #[arg(long, value_name = "E", allow_negative_numbers = true, value_parser = crate::text::finite_f64)]
    pub epsilon: f64,
    /// Window W ≥ 1 of w-event privacy.
    #[arg(long, value_name = "W")]
    pub window: usize,
    /// L1 sensitivity Δ > 0 of one step's counts (2: one user moves between cells).
    #[arg(long, value_name = "D", default_value_t = tpl_mechanisms::DEFAULT_SENSITIVITY, allow_negative_numbers = true, value_parser = crate::text::finite_f64)]
    pub sensitivity: f64,
    /// Backward correlation P_B (pba uses it to decide whether correlation exists).
    #[arg(long, value_name = "FILE")]
    pub backward: Option<PathBuf>,
    /// Forward correlation P_F (pba uses it to decide whether correlation exists).
    #[arg(long, value_name = "FILE")]
    pub forward: Option<PathBuf>,
    /// Seed for a reproducible run (a seeded release is NOT private); default: OS entropy.
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Noise sampler.
    #[arg(long, value_enum, default_value_t = Sampler::Secure)]
    pub sampler: Sampler,
    #[command(flatten)]
    pub matrices: MatrixOptions,
}

fn parse_scheme(name: &str) -> std::result::Result<SchemeKind, String> {
    SchemeKind::from_name(name).ok_or_else(|| {
        let all: Vec<&str> = SchemeKind::ALL.iter().map(|k| k.name()).collect();
        format!("unknown scheme {name:?}; one of: {}", all.join(", "))
    })
}

/// A finished release.
pub struct ReleaseReport {
    scheme: &'static str,
    epsilon: f64,
    window: usize,
    run: Run,
}

/// Runs `tpl release`.
pub fn run_release(args: &ReleaseArgs) -> Result<ReleaseReport> {
    let params = WEventParams::new(args.epsilon, args.window, args.sensitivity).map_err(|e| {
        let flag = match e {
            tpl_mechanisms::MechError::BadWindow(_) => "--window",
            tpl_mechanisms::MechError::BadSensitivity(_) => "--sensitivity",
            _ => "--epsilon",
        };
        CliError::Mech { context: format!("{flag}: "), source: e }
    })?;
    let pb = args.backward.as_ref().map(|p| read_matrix(p, &args.matrices)).transpose()?;
    let pf = args.forward.as_ref().map(|p| read_matrix(p, &args.matrices)).transpose()?;
    if args.scheme == SchemeKind::Pba && pb.is_none() && pf.is_none() {
        return Err(CliError::Usage(
            "--scheme pba needs --backward and/or --forward: its correlation pool depends on them".into(),
        ));
    }
    let counts = read_counts(&args.counts, false)?;
    if args.sampler == Sampler::Secure
        && let Some((t, k)) = first_non_integer(&counts.rows)
    {
        return Err(CliError::parse(
            &args.counts,
            counts.lines[t],
            format!(
                "cell {k}: count {} is not an integer; the secure sampler needs integer counts (use --sampler float, \
                 which is not release-grade)",
                counts.rows[t][k]
            ),
        ));
    }
    let rng = match args.seed {
        Some(seed) => {
            eprintln!("tpl: note: --seed {seed} makes this release reproducible, hence NOT private");
            StdRng::seed_from_u64(seed)
        }
        None => StdRng::from_os_rng(),
    };
    let noise: Box<dyn NoiseSource> = match args.sampler {
        Sampler::Secure => Box::new(DiscreteLaplace::new(rng)),
        Sampler::Float => Box::new(FloatLaplace::new(rng)),
    };
    let correlation = PbaCorrelation::from_matrices(pb.as_ref(), pf.as_ref());
    let kind = args.scheme;
    let mut scheme = kind.build(params, LaplaceMechanism::new(noise), correlation);
    let run = run(scheme.as_mut(), &counts.rows, |_| {})
        .map_err(|source| CliError::Mech { context: format!("{}: ", args.counts.display()), source })?;
    Ok(ReleaseReport { scheme: kind.name(), epsilon: args.epsilon, window: args.window, run })
}

/// The first (step, cell) whose count is not an integer, 0-based.
pub fn first_non_integer(rows: &[Vec<f64>]) -> Option<(usize, usize)> {
    rows.iter().enumerate().find_map(|(t, r)| r.iter().position(|v| v.fract() != 0.0).map(|k| (t, k)))
}

impl Report for ReleaseReport {
    fn json(&self) -> Value {
        let r = &self.run;
        let t: Vec<usize> = (1..=r.published.len()).collect();
        json!({
            "scheme": self.scheme,
            "epsilon": self.epsilon,
            "window": self.window,
            "t": t,
            "published": r.published,
            "budget": r.budgets(),
            "releases": r.releases,
            "max_window_budget": r.max_window_budget,
        })
    }

    fn csv(&self) -> String {
        let r = &self.run;
        let d = r.releases.first().map_or(0, Vec::len);
        let mut header = vec![
            "timestamp_bucket".to_string(),
            "published".into(),
            "budget".into(),
            "publication_budget".into(),
        ];
        header.extend((0..d).map(|j| format!("c{j}")));
        let mut out = csv_line(&header);
        for t in 0..r.published.len() {
            let spent = r.spent[t];
            let fresh = if r.published[t] { spent.publication } else { 0.0 };
            let mut row = vec![
                (t + 1).to_string(),
                u8::from(r.published[t]).to_string(),
                spent.total().to_string(),
                fresh.to_string(),
            ];
            row.extend(r.releases[t].iter().map(f64::to_string));
            out.push_str(&csv_line(&row));
        }
        out
    }

    fn table(&self) -> String {
        let r = &self.run;
        let published = r.published.iter().filter(|&&p| p).count();
        let mut t = Table::new(&["t", "published", "ε_t", "release (first cells)"]);
        for i in 0..r.published.len() {
            let cells: Vec<String> = r.releases[i].iter().take(4).map(|&v| human(v)).collect();
            let more = if r.releases[i].len() > 4 { ", …" } else { "" };
            t.row(vec![
                (i + 1).to_string(),
                if r.published[i] { "yes" } else { "-" }.into(),
                human(r.spent[i].total()),
                format!("{}{more}", cells.join(", ")),
            ]);
        }
        t.elide(5);
        format!(
            "Scheme {}: {} steps, {} fresh publications ({:.1} %); every window of {} steps spends at most {} (ε = {}).\n\n{}",
            self.scheme,
            r.published.len(),
            published,
            100.0 * published as f64 / r.published.len() as f64,
            self.window,
            human(r.max_window_budget),
            human(self.epsilon),
            t.render()
        )
    }
}
