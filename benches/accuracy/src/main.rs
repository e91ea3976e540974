//! `accuracy-grid`: the accuracy stress grid of the project (`benches/accuracy/README.md`).
//! Every estimator of `tpl-postprocess` is scored against the raw release, the best centred
//! moving average of the releases (an oracle) and the `kalman` baseline, in every cell of
//! streams × matrices × schemes × ε, over several seeds; the table is printed worst cell
//! first and written as CSV.

mod args;
mod chains;
mod grid;
mod oracle;
mod report;
mod streams;

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use rayon::prelude::*;
use tpl_compare::Seed;

use crate::args::{Args, Config};
use crate::streams::Stream;

/// Builds every stream the configuration asks for (the synthetic populations in parallel).
fn build_streams(config: &Config) -> Result<Vec<Stream>, streams::Error> {
    let mut out = Vec::new();
    for (name, path) in &config.real {
        out.push(streams::real(name, path)?);
    }
    let jobs: Vec<_> =
        config.shapes.iter().flat_map(|&s| config.populations.iter().map(move |&n| (s, n))).collect();
    let synthetic: Vec<Result<Stream, streams::Error>> = jobs
        .par_iter()
        .map(|&(shape, users)| {
            streams::synthetic(shape, users, config.train_steps, config.score_steps, Seed::given(config.seed))
        })
        .collect();
    for s in synthetic {
        out.push(s?);
    }
    Ok(out)
}

fn main() -> ExitCode {
    let config = match Args::parse().resolve() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("accuracy-grid: {e}");
            return ExitCode::from(2);
        }
    };
    let start = Instant::now();
    let streams = match build_streams(&config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("accuracy-grid: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!("accuracy-grid: {} streams built in {:.1} s", streams.len(), start.elapsed().as_secs_f64());
    let cells = grid::cells(&config, &streams);
    eprintln!(
        "accuracy-grid: {} cells × {} seeds, estimators {}",
        cells.len(),
        config.seeds,
        config.estimators.iter().map(|e| e.name()).collect::<Vec<_>>().join(",")
    );
    let outcome = grid::run(&config, &cells);
    print!("{}", report::table(&outcome.cells, config.top));
    println!("summary over {} cells (ratios of mean MSE over seeds):", outcome.cells.len());
    print!("{}", report::summary(&outcome.cells));
    if !outcome.failures.is_empty() {
        println!("\n{} cells, seeds or estimators that could not run:", outcome.failures.len());
        for f in &outcome.failures {
            println!("  {f}");
        }
    }
    if let Err(e) = report::write_csv(&config.out, &outcome.cells) {
        eprintln!("accuracy-grid: {}: {e}", config.out.display());
        return ExitCode::FAILURE;
    }
    eprintln!("accuracy-grid: wrote {} in {:.1} s", config.out.display(), start.elapsed().as_secs_f64());
    ExitCode::SUCCESS
}
