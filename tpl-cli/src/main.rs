//! `tpl`: temporal privacy leakage of differentially private continuous releases.
//!
//! The binary only composes: it parses arguments and files, calls the libraries and prints.
//! Exit codes: 0 success, 2 bad input or usage or output that cannot be written, 1 other
//! failures.

mod args;
mod commands;
mod comparison_report;
mod counts_check;
mod error;
mod limits;
mod matrix_file;
mod output_dir;
mod progress;
mod provenance;
mod release_report;
mod render;

use std::io::Write;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::commands::{
    allocate, compare, completions, demo, estimate, leakage, loss, man, postprocess, release, simulate,
    stream, supremum,
};
use crate::error::CliError;
use crate::render::{Format, Report};

/// Quantify and control the privacy leakage of continuous data releases under temporal
/// correlations (Markov chains known to the adversary).
#[derive(Debug, Parser)]
#[command(
    name = "tpl",
    about,
    after_help = "Examples:\n  tpl demo\n  tpl loss --matrix P.csv --alpha 0.5 --alpha 1\n  \
                  tpl leakage --backward PB.csv --forward PF.csv --epsilon 0.1 --horizon 100 --window 10\n  \
                  tpl supremum --matrix PB.csv --epsilon 0.1 --format json\n  \
                  tpl allocate --strategy quantified --backward PB.csv --forward PF.csv --alpha 1 --horizon 100"
)]
struct Cli {
    /// Output format: table for people, json (the stable machine contract), csv, or npy (the
    /// main array of release/postprocess/stream as a NumPy file on standard output).
    #[arg(long, value_enum, default_value_t = Format::Table, global = true)]
    format: Format,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// L(α): the extra leakage one step of correlation adds to a leakage α (TKDE eq. 24).
    #[command(after_help = "Example:\n  tpl loss --matrix P.csv --alpha 0.5 --alpha 1 --format json")]
    Loss(loss::LossArgs),
    /// BPL/FPL/TPL of a budget sequence, and the leakage of every window of W steps.
    #[command(
        after_help = "Examples:\n  tpl leakage --backward PB.csv --forward PF.csv --epsilon 0.1 --horizon 100 --window 10\n  \
                            tpl leakage --backward PB.csv --budgets spent.txt --format csv"
    )]
    Leakage(leakage::LeakageArgs),
    /// The limit of BPL (or FPL) when every step spends the same ε (TKDE Theorem 11).
    #[command(after_help = "Example:\n  tpl supremum --matrix PB.csv --epsilon 0.1 --format json")]
    Supremum(supremum::SupremumArgs),
    /// Budgets per step that keep temporal leakage under α (TKDE Alg. 7, Alg. 8, windows).
    #[command(
        after_help = "Examples:\n  tpl allocate --strategy quantified --backward PB.csv --forward PF.csv --alpha 1 --horizon 100\n  \
                            tpl allocate --strategy window --backward PB.csv --forward PF.csv --alpha 1 --horizon 288 --window 12"
    )]
    Allocate(allocate::AllocateArgs),
    /// Release a count stream under a w-event scheme (laplace, uniform, sample, bd, ba, pba, dsat, fast).
    #[command(
        after_help = "Examples:\n  tpl release --counts counts.csv --scheme bd --epsilon 1 --window 10 --format json\n  \
                            tpl release --counts counts.csv --scheme pba --epsilon 1 --window 10 --backward PB.csv --forward PF.csv"
    )]
    Release(release::ReleaseArgs),
    /// A durable stream in one file: release step by step (e.g. from cron), every window
    /// within ε enforced before noise is drawn, retries safe, crashes harmless.
    #[command(after_help = "Examples:\n  tpl stream init --db s.db --scheme bd --epsilon 1 --window 12\n  \
                            tpl stream push --db s.db --counts latest.csv --format csv\n  \
                            tpl stream status --db s.db --format json\n  tpl stream export --db s.db --format csv")]
    Stream(stream::StreamArgs),
    /// Estimate the true counts behind a noisy release stream, the public correlation as the
    /// model of how people move (by default the whole release smoothed; --causal: each step
    /// from the releases up to it); costs no privacy budget.
    #[command(
        after_help = "Examples:\n  tpl release --counts counts.csv --scheme bd --epsilon 1 --window 10 --format csv > r.csv\n  \
                            tpl postprocess --releases r.csv --total 500 --forward PF.csv\n  \
                            tpl postprocess --releases r.csv --total 500 --epsilon 0.1 --forward PF.csv --estimator map-integer --format json"
    )]
    Postprocess(postprocess::PostprocessArgs),
    /// Simulate Markov users: writes stream.csv, counts.csv and the forward matrix.
    #[command(
        after_help = "Examples:\n  tpl simulate --cells 5 --smoothing 0.01 --users 200 --horizon 500 --seed 1 --out sim\n  \
                            tpl simulate --forward PF.csv --users 1000 --horizon 100 --out sim"
    )]
    Simulate(simulate::SimulateArgs),
    /// Estimate forward/backward transition matrices from a user stream (optionally smoothed).
    #[command(
        after_help = "Examples:\n  tpl estimate --stream sim/stream.csv --smoothing 0.01 --out sim\n  \
                            tpl estimate --stream stream.csv --steps ..1000 --out first-period"
    )]
    Estimate(estimate::EstimateArgs),
    /// Compare release strategies on error and on real (audited) leakage, optionally with MAP.
    #[command(
        after_help = "Examples:\n  tpl compare --counts counts.csv --backward PB.csv --forward PF.csv --epsilon 1 --window 10\n  \
                            tpl compare --stream stream.csv --train-steps ..1000 --epsilon 1 --window 10 --postprocess map\n  \
                            tpl compare --counts counts.csv --backward PB.csv --forward PF.csv --epsilon 1 --window 10 \\\n      \
                            --schemes bd,pba,window --runs 20 --postprocess map --chart compare.svg"
    )]
    Compare(compare::CompareArgs),
    /// A leakage report on a built-in example; no arguments needed.
    #[command(after_help = "Examples:\n  tpl demo\n  tpl demo --out report-dir")]
    Demo(demo::DemoArgs),
    /// Print the completion script of a shell (bash, zsh, fish, powershell, elvish).
    #[command(
        after_help = "Examples:\n  tpl completions bash > ~/.local/share/bash-completion/completions/tpl\n  \
                            tpl completions zsh > ~/.zfunc/_tpl\n  \
                            tpl completions fish > ~/.config/fish/completions/tpl.fish"
    )]
    Completions(completions::CompletionsArgs),
    /// Print the manual page tpl.1, or write every command's page into a folder.
    #[command(after_help = "Examples:\n  tpl man | man -l -\n  tpl man --out ~/.local/share/man/man1")]
    Man(man::ManArgs),
}

impl Command {
    /// The command as typed after `tpl`, for messages.
    fn name(&self) -> String {
        match self {
            Self::Loss(_) => "loss".into(),
            Self::Leakage(_) => "leakage".into(),
            Self::Supremum(_) => "supremum".into(),
            Self::Allocate(_) => "allocate".into(),
            Self::Release(_) => "release".into(),
            Self::Stream(a) => format!("stream {}", a.command.name()),
            Self::Postprocess(_) => "postprocess".into(),
            Self::Simulate(_) => "simulate".into(),
            Self::Estimate(_) => "estimate".into(),
            Self::Compare(_) => "compare".into(),
            Self::Demo(_) => "demo".into(),
            Self::Completions(_) => "completions".into(),
            Self::Man(_) => "man".into(),
        }
    }

    /// Whether its report has a main array for `--format npy` ([`Report::array`]).
    fn writes_npy(&self) -> bool {
        match self {
            Self::Release(_) | Self::Postprocess(_) => true,
            Self::Stream(a) => a.command.writes_npy(),
            _ => false,
        }
    }
}

fn run(cli: &Cli) -> Result<Box<dyn Report>, CliError> {
    // Refused before any work: a command without an array would otherwise run to the end (a
    // demo writes its whole folder, `stream init` creates a stream) and only then fail.
    if cli.format == Format::Npy && !cli.command.writes_npy() {
        return Err(CliError::Usage(format!(
            "--format npy: `tpl {}` has no array output ({})",
            cli.command.name(),
            render::NPY_COMMANDS
        )));
    }
    if cli.format == Format::Npy && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return Err(CliError::Usage(render::NPY_ON_TERMINAL.into()));
    }
    Ok(match &cli.command {
        Command::Loss(a) => Box::new(loss::run(a)?),
        Command::Leakage(a) => Box::new(leakage::run(a)?),
        Command::Supremum(a) => Box::new(supremum::run(a)?),
        Command::Allocate(a) => Box::new(allocate::run(a)?),
        Command::Release(a) => Box::new(release::run_release(a)?),
        Command::Stream(a) => Box::new(stream::run(a)?),
        Command::Postprocess(a) => Box::new(postprocess::run(a)?),
        Command::Simulate(a) => Box::new(simulate::run(a)?),
        Command::Estimate(a) => Box::new(estimate::run(a)?),
        Command::Compare(a) => Box::new(compare::run(a)?),
        Command::Demo(a) => Box::new(demo::run(a)?),
        Command::Completions(_) | Command::Man(_) => {
            return Err(CliError::Usage(format!("`tpl {}` prints text of its own", cli.command.name())));
        }
    })
}

/// The definitions of the command line, with the version texts of this build
/// (`tpl -V`: version and commit; `tpl --version`: also features, compiler and build).
fn definitions() -> clap::Command {
    Cli::command().version(provenance::version_line()).long_version(provenance::long_version())
}

/// The output of `tpl completions` and `tpl man`, which is text of its own (a script, roff)
/// rather than a report in a `--format`; `None` for every other command.
fn generated(cli: &Cli) -> Option<Result<Vec<u8>, CliError>> {
    if !matches!(cli.command, Command::Completions(_) | Command::Man(_)) {
        return None;
    }
    // Refused before anything is written (`tpl man --out DIR` writes pages).
    if cli.format != Format::Table {
        return Some(Err(CliError::Usage(format!(
            "--format {}: `tpl {}` prints a script or a page, in no other format",
            clap::ValueEnum::to_possible_value(&cli.format)
                .map_or_else(String::new, |v| v.get_name().to_string()),
            cli.command.name()
        ))));
    }
    match &cli.command {
        Command::Man(a) => Some(man::run(a, &definitions())),
        Command::Completions(a) => Some(Ok(completions::script(a, &mut definitions()))),
        _ => None,
    }
}

fn main() {
    let cli = definitions().try_get_matches().and_then(|m| Cli::from_arg_matches(&m)).unwrap_or_else(|e| {
        // A flag value the shared parsers refused is bad input like any other: one line.
        if e.kind() == clap::error::ErrorKind::ValueValidation {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            eprintln!("tpl: {first}");
            std::process::exit(2);
        }
        e.exit()
    });
    if let Some(text) = generated(&cli) {
        let code = match text.map(|bytes| std::io::stdout().lock().write_all(&bytes)) {
            Ok(Ok(())) => 0,
            Ok(Err(e)) => {
                eprintln!("tpl: error: cannot write output: {e}");
                2
            }
            Err(e) => {
                eprintln!("tpl: error: {e}");
                e.exit_code()
            }
        };
        std::process::exit(code);
    }
    let code = match run(&cli) {
        Ok(report) => match render::print(report.as_ref(), cli.format) {
            Ok(()) => 0,
            Err(e) => {
                let undone = report.withdraw().map_or(String::new(), |what| format!(" ({what})"));
                eprintln!("tpl: error: cannot write output: {e}{undone}");
                2
            }
        },
        Err(e) => {
            eprintln!("tpl: error: {e}");
            e.exit_code()
        }
    };
    std::process::exit(code);
}
